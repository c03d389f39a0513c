"""Tensor-op parity with torch found by differential fuzzing (values, dtypes, gradients and
errors at special values); each test pins one finding."""
import itertools
import math

import numpy as np
import pytest

import minitorch as mt

torch = pytest.importorskip("torch")

NAN, INF = float("nan"), float("inf")


def _np(t):
    return t.detach().cpu().numpy() if isinstance(t, mt.Tensor) else t.detach().numpy()


def _same(ours, theirs, signed_zero=False):
    a, b = _np(ours), _np(theirs)
    assert a.shape == b.shape and str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-12, equal_nan=True)
    if signed_zero:
        zero = a == 0
        np.testing.assert_array_equal(np.signbit(a[zero]), np.signbit(b[zero]))


def _grads(fn, *values, device="cpu", dtype="float64"):
    """fn's outputs and the inputs' gradients (of a fixed weighting) in both libraries."""
    out = []
    for lib in (mt, torch):
        kw = {"device": device} if lib is mt else {}
        xs = [lib.tensor(v, dtype=getattr(lib, dtype), requires_grad=True, **kw)
              for v in values]
        y = fn(lib, *xs)
        w = lib.tensor(np.linspace(-1.0, 2.0, int(np.prod(y.shape))).reshape(tuple(y.shape)),
                       dtype=y.dtype, **kw)
        (y * w).sum().backward()
        out.append((y, [x.grad for x in xs]))
    return out


def _check_grads(fn, *values, device="cpu"):
    (y, grads), (ty, tgrads) = _grads(fn, *values, device=device)
    _same(y, ty)
    for g, tg in zip(grads, tgrads):
        if tg is None:
            assert g is None or not np.any(_np(g))
        else:
            _same(g, tg)


# ---- maximum / minimum / fmax / fmin ----------------------------------------------------------
@pytest.mark.parametrize("name", ["maximum", "minimum", "fmax", "fmin"])
def test_max_min_gradients_at_nan_and_ties(device, name):
    # torch: maximum sends g to both sides at a NaN and halves it at ties; fmax gives it all
    # to one side (input on ties and where other is NaN).
    a = [NAN, 2.0, 1.0, 3.0, NAN, -1.0]
    b = [1.0, NAN, 1.0, -2.0, NAN, 5.0]
    _check_grads(lambda L, x, y: getattr(L, name)(x, y), a, b, device=device)


@pytest.mark.parametrize("name", ["maximum", "minimum", "fmax", "fmin"])
def test_max_min_ties_keep_the_first_operand(device, name):
    x, y = [-0.0, 0.0], [0.0, -0.0]
    ours = getattr(mt, name)(mt.tensor(x, device=device), mt.tensor(y, device=device))
    _same(ours, getattr(torch, name)(torch.tensor(x), torch.tensor(y)), signed_zero=True)


def test_relu_passes_the_gradient_at_nan(device):
    _check_grads(lambda L, x: L.relu(x), [NAN, -1.0, 0.0, 2.0], device=device)


# ---- clamp ------------------------------------------------------------------------------------
def test_clamp_nan_input_gets_no_gradient(device):
    _check_grads(lambda L, x: L.clamp(x, 0.0, 1.0), [NAN, 2.0, 0.5, -1.0, 0.0, 1.0],
                 device=device)


@pytest.mark.torch_exact
def test_clamp_nan_bounds_propagate(device):
    x = [1.0, NAN, -3.0]
    for kw in ({"min": NAN}, {"max": NAN}):
        _same(mt.clamp(mt.tensor(x, device=device), **kw), torch.clamp(torch.tensor(x), **kw))
    low = [NAN, 0.0, 0.0]
    _same(mt.clamp(mt.tensor(x, device=device), min=mt.tensor(low, device=device)),
          torch.clamp(torch.tensor(x), min=torch.tensor(low)))


def test_clamp_tensor_bounds_gradients(device):
    # min > max gives max; min == max gives no gradient to anyone (torch's formulas)
    x = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    low = [1.0, 1.0, 3.0, 3.0, NAN, 2.0]
    high = [2.0, 1.0, 1.0, 3.0, 5.0, 2.0]
    _check_grads(lambda L, a, lo, hi: L.clamp(a, lo, hi), x, low, high, device=device)
    _check_grads(lambda L, a, lo: L.clamp(a, min=lo), x, low, device=device)
    _check_grads(lambda L, a, hi: L.clamp(a, max=hi), x, high, device=device)


def test_clamp_bool_has_no_kernel(device):
    b = mt.tensor([True, False], device=device)
    with pytest.raises(NotImplementedError, match="clamp_min_scalar_.* for 'Bool'"):
        mt.clamp(b, min=True)
    with pytest.raises(NotImplementedError, match="\"clamp_.*\" not implemented for 'Bool'"):
        mt.clamp(b, min=mt.tensor(False, device=device), max=mt.tensor(True, device=device))
    # one tensor bound is maximum / minimum in torch, which bool has
    assert mt.clamp(b, min=mt.tensor(True, device=device)).tolist() == [True, True]


# ---- division, remainder, fmod ------------------------------------------------------------------
def test_trunc_division_has_zero_gradients(device):
    _check_grads(lambda L, a, b: L.div(a, b, rounding_mode="trunc"), [NAN, 2.0, -1.5],
                 [1.0, 0.0, 0.5], device=device)


def test_remainder_and_fmod_zero_signs(device):
    x = [-0.0, 0.0, -1.0, 1.0, -3.0]
    for divisor in (0.5, -0.5):
        for name in ("remainder", "fmod"):
            ours = getattr(mt, name)(mt.tensor(x, device=device), divisor)
            _same(ours, getattr(torch, name)(torch.tensor(x), divisor), signed_zero=True)


# ---- addcmul / addcdiv / lerp -----------------------------------------------------------------
def test_addcmul_addcdiv_result_dtype_is_joint(device):
    # a 0-d float64 operand does not widen a float32 tensor, even when it is multiplied first
    cases = [((2,), "float32", (), "float64", (2,), "int64"),
             ((2,), "float64", (1,), "float32", (), "float64"),
             ((2,), "int64", (2,), "float32", (), "float64")]
    for s0, d0, s1, d1, s2, d2 in cases:
        arrays = [np.arange(1, int(np.prod(s)) + 1, dtype=np.float64).reshape(s) * 0.7 + 0.3
                  for s in (s0, s1, s2)]
        for name in ("addcmul", "addcdiv"):
            ours = getattr(mt, name)(*(mt.tensor(a, dtype=getattr(mt, d), device=device)
                                       for a, d in zip(arrays, (d0, d1, d2))), value=2)
            theirs = getattr(torch, name)(*(torch.tensor(a, dtype=getattr(torch, d))
                                            for a, d in zip(arrays, (d0, d1, d2))), value=2)
            _same(ours, theirs)


def test_addcmul_integer_value_truncates_and_addcdiv_refuses_integers(device):
    i = mt.tensor([1, 2], device=device)
    assert mt.addcmul(i, i, i, value=0.5).tolist() == [1, 2]
    assert mt.addcmul(i, i, i, value=-1.5).tolist() == [0, -2]
    with pytest.raises(RuntimeError, match="Integer division with addcdiv"):
        mt.addcdiv(mt.tensor([1.5, 2.0], device=device), i, i)


def test_lerp_branch_and_gradients_at_infinities(device):
    a, e = [1.0, -1.59, 0.0, 5.0], [2.0, -INF, 1.0, INF]
    _check_grads(lambda L, x, y, w: L.lerp(x, y, w), a, e, [0.3, -1.0, 0.7, 0.2],
                 device=device)
    for w in (-1.0, -0.3, 0.5, 2.0):
        _check_grads(lambda L, x, y, w=w: L.lerp(x, y, w), a, e, device=device)


# ---- reductions -------------------------------------------------------------------------------
def test_prod_backward_special_cases(device):
    _check_grads(lambda L, x: L.prod(x), -INF, device=device)
    _check_grads(lambda L, x: L.prod(x), [[-0.0, 0.8], [-0.0, 0.98], [-INF, -1.0]],
                 device=device)
    _check_grads(lambda L, x: L.prod(x), [[-0.0, 0.8], [2.0, 0.98], [3.0, -1.0]],
                 device=device)


# ---- indexing -----------------------------------------------------------------------------------
def _setitem_outcome(lib, key_fn, value_fn, device):
    kw = {"device": device} if lib is mt else {}
    a = lib.zeros(3, 2, **kw)
    try:
        a[key_fn(lib, kw)] = value_fn(lib, kw)
    except RuntimeError as error:
        return "Index put requires the source and destination dtypes match" in str(error)
    return a.tolist()


@pytest.mark.parametrize("key_fn", [
    lambda L, kw: [0, 1],
    lambda L, kw: (Ellipsis, [0, 1]),
    lambda L, kw: L.tensor([True, False, True], **kw),
    lambda L, kw: (L.tensor([True, False, True], **kw), 0),
    lambda L, kw: (L.tensor([True, False, True], **kw), [0]),
    lambda L, kw: (slice(None), L.tensor([True, False], **kw)),
    lambda L, kw: (Ellipsis, True),
    lambda L, kw: L.tensor(True, **kw),
    lambda L, kw: True,
    lambda L, kw: slice(0, 2),
])
@pytest.mark.parametrize("value_fn", [
    lambda L, kw: L.tensor(1, **kw),
    lambda L, kw: L.tensor([2], **kw),
    lambda L, kw: L.tensor([1.0, 2.0], dtype=L.float64, **kw),
    lambda L, kw: 7,
])
def test_setitem_with_index_tensors_wants_the_dtype(key_fn, value_fn):
    # index tensors make setitem index_put_, which refuses another dtype, except where torch
    # turns it into masked_fill_ (one bool mask, a one-element value)
    theirs = _setitem_outcome(torch, key_fn, value_fn, "cpu")
    try:
        ours = _setitem_outcome(mt, key_fn, value_fn, "cpu")
    except Exception as error:      # noqa: BLE001 - compare the kind of failure
        ours = type(error)
    if theirs is not True and not isinstance(theirs, list):
        return
    assert ours == theirs


def test_index_put_bool_mask_with_scalar_of_other_dtype(device):
    a = mt.zeros(3, device=device)
    a.index_put_((mt.tensor([True, False, True], device=device),), mt.tensor(2))
    assert a.tolist() == [2.0, 0.0, 2.0]
    with pytest.raises(RuntimeError, match="dtypes match"):
        a.index_put_((mt.tensor([True, False, True], device=device),), mt.tensor(2),
                     accumulate=True)
    with pytest.raises(IndexError):         # before the dtype check, as in torch
        scalar = mt.tensor(1, device=device)
        scalar.index_put_((mt.tensor(0, device=device),), mt.tensor(1.0, device=device))


def test_index_add_converts_alpha_to_the_integer_dtype(device):
    for alpha in (0.5, 1.7, -1.7):
        ours = mt.zeros(3, dtype=mt.int64, device=device).index_add(
            0, mt.tensor([0, 1], device=device), mt.tensor([3, 4], device=device), alpha=alpha)
        theirs = torch.zeros(3, dtype=torch.int64).index_add(
            0, torch.tensor([0, 1]), torch.tensor([3, 4]), alpha=alpha)
        assert ours.tolist() == theirs.tolist()


@pytest.mark.parametrize("value", [NAN, INF, -INF, 1e30, 2 ** 63])
def test_int64_fills_refuse_values_that_overflow(device, value):
    a = mt.zeros(2, dtype=mt.int64, device=device)
    mask = mt.tensor([True, False], device=device)
    calls = [lambda: a.masked_fill(mask, value), lambda: a.clone().fill_(value),
             lambda: mt.full((2,), value, dtype=mt.int64, device=device),
             lambda: a.index_fill(0, mt.tensor([0], device=device), value),
             lambda: a.scatter(0, mt.tensor([0], device=device), value),
             lambda: a.clone().__setitem__(0, value)]
    for call in calls:
        with pytest.raises(RuntimeError, match="value cannot be converted to type int64_t "
                                               "without overflow"):
            call()
    assert a.masked_fill(mask, 2.7).tolist() == [2, 0]
    assert mt.full((1,), -2 ** 63, dtype=mt.int64, device=device).item() == -2 ** 63


# ---- cdist --------------------------------------------------------------------------------------
@pytest.mark.parametrize("p", [0.0, 0.5, 1.0, 2.0, 3.0, INF])
def test_cdist_gradients_at_ties_and_zero_distances(device, p):
    # inf-norm ties: every tied coordinate gets the whole gradient (vector_norm shares it)
    _check_grads(lambda L, a, b: L.cdist(a, b, p=p), [[1.0, 2.0], [3.0, 4.0]],
                 [[1.0, 2.0], [3.0, 5.0]], device=device)


def test_cdist_edge_cases(device):
    for p in (0.0, 2.0, INF):
        _check_grads(lambda L, a, b, p=p: L.cdist(a, b, p=p), np.zeros((2, 0)),
                     np.zeros((3, 0)), device=device)
    ints = mt.tensor([[1, 2]], device=device)
    with pytest.raises(RuntimeError, match="cdist only supports floating-point dtypes, X1 got: "
                                           "Long"):
        mt.cdist(ints, ints.float())
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        mt.cdist(ints.float(), ints.double())
    a = mt.randn(3, 2, dtype=mt.float64, device=device, requires_grad=True)
    b = mt.randn(2, 4, 2, dtype=mt.float64, device=device, requires_grad=True)
    for p in (1.0, 2.0, 3.0, INF):
        assert mt.autograd.gradcheck(lambda a, b, p=p: mt.cdist(a, b, p=p), (a, b))


# ---- a small randomized sweep of type promotion ----------------------------------------------
DTYPES = ["float32", "float64", "int64", "bool"]


@pytest.mark.parametrize("name", ["add", "mul", "maximum", "fmax", "atan2", "remainder",
                                  "logaddexp", "where", "lerp", "addcmul"])
def test_binary_promotion_matches_torch(device, name):
    rng = np.random.default_rng(0)
    shapes = [(3,), (), (2, 1)]
    for d1, d2, s1, s2 in itertools.product(DTYPES, DTYPES, shapes, shapes):
        arrays = [rng.standard_normal(s) * 3 for s in (s1, s2)]
        results = []
        for lib, kw in ((mt, {"device": device}), (torch, {})):
            x = lib.tensor(arrays[0], **kw).to(getattr(lib, d1) if d1 != "bool" else lib.bool)
            y = lib.tensor(arrays[1], **kw).to(getattr(lib, d2) if d2 != "bool" else lib.bool)
            try:
                if name == "where":
                    r = lib.where(x > 0 if d1 != "bool" else x, x, y)
                elif name == "lerp":
                    r = lib.lerp(x, y, 0.7)
                elif name == "addcmul":
                    r = lib.addcmul(x, y, x, value=2)
                else:
                    r = getattr(lib, name)(x, y)
            except (RuntimeError, TypeError, NotImplementedError) as error:
                r = type(error)
            results.append(r)
        ours, theirs = results
        if isinstance(theirs, type):
            assert isinstance(ours, type), (name, d1, d2, s1, s2)
            continue
        assert not isinstance(ours, type), (name, d1, d2, s1, s2, ours)
        _same(ours, theirs)


def test_max_pairs_nan_free_sanity():
    assert math.isnan(mt.maximum(mt.tensor([NAN]), mt.tensor([1.0])).item())
    assert math.isnan(mt.minimum(mt.tensor([1.0]), mt.tensor([NAN])).item())
