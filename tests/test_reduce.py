"""Reductions, softmax family, norms, cumulative and logical reductions: forward against numpy
over contiguous / permuted / stepped / 0-d / empty inputs, gradients against finite
differences (float64), torch's dtype rules, errors and numerically delicate cases."""
import math
import pickle
import warnings

import numpy as np
import pytest

import minitorch as mt
from minitorch.autograd import gradcheck, gradgradcheck

# Each layout is a view applied to a (3, 4, 5) base, the same way to numpy and to minitorch.
LAYOUTS = {
    "contiguous": lambda a: a,
    "permuted": lambda a: a.permute(2, 0, 1) if isinstance(a, mt.Tensor) else a.transpose(2, 0, 1),
    "stepped": lambda a: a[:, ::2],
}
DIMS = [None, 0, -1, (0, 2), (-1, 1)]


def _base(rng, shape=(3, 4, 5)):
    return rng.standard_normal(shape)


def _leaf(array, device, requires_grad=False):
    return mt.tensor(array, dtype=mt.float64, device=device, requires_grad=requires_grad)


def _np_axis(dim):
    return tuple(dim) if isinstance(dim, tuple) else dim


def _check(result, expected, rtol=1e-10, atol=1e-12):
    expected = np.asarray(expected)
    assert tuple(result.shape) == expected.shape
    np.testing.assert_allclose(result.detach().cpu().numpy(), expected, rtol=rtol, atol=atol)


def _strided_leaf(array, layout, device):
    """A leaf that requires grad and is itself a (non-contiguous) view: gradcheck then checks
    the op on that layout without depending on the view op's own backward."""
    return LAYOUTS[layout](_leaf(array, device)).requires_grad_()


def _grad(fn, array, device, seed=None):
    """d(sum(fn(x) * seed))/dx as numpy (seed defaults to ones)."""
    x = _leaf(array, device, requires_grad=True)
    out = fn(x)
    out.backward(mt.ones_like(out) if seed is None else seed)
    return x.grad.cpu().numpy()


# ---- sum / mean -------------------------------------------------------------------------------
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dim", DIMS)
def test_sum_mean_match_numpy(device, rng, layout, dim):
    base = _base(rng)
    view = LAYOUTS[layout]
    x, a = view(_leaf(base, device)), view(base)
    for keepdim in (False, True):
        _check(mt.sum(x, dim, keepdim), np.sum(a, axis=_np_axis(dim), keepdims=keepdim))
        _check(x.mean(dim, keepdim), np.mean(a, axis=_np_axis(dim), keepdims=keepdim))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_sum_mean_gradients(device, rng, layout):
    x = _strided_leaf(_base(rng, (2, 3, 4)), layout, device)
    assert gradcheck(lambda t: t.sum((0, 2)), (x,))
    assert gradcheck(lambda t: t.mean(-1, keepdim=True), (x,))
    assert gradcheck(lambda t: t.mean(), (x,))


def test_sum_dtypes_and_empty(device):
    flags = mt.tensor([True, False, True], device=device)
    assert flags.sum().dtype is mt.int64 and flags.sum().item() == 2
    ints = mt.tensor([[1, 2], [3, 4]], device=device)
    assert ints.sum(0).dtype is mt.int64 and ints.sum(0).tolist() == [4, 6]
    assert ints.sum(dtype=mt.float64).dtype is mt.float64
    empty = mt.zeros(0, 3, device=device)
    assert empty.sum().item() == 0 and empty.sum(0).tolist() == [0, 0, 0]
    assert empty.sum(1).shape == (0,)
    x = mt.tensor(np.arange(6.0).reshape(2, 3), device=device)
    assert x.sum([]).item() == 15 and x.sum(None, True).shape == (1, 1)
    assert mt.tensor(2.5, device=device).sum(0).item() == 2.5


def test_sum_dim_errors(device):
    x = mt.zeros(2, 3, device=device)
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of "
                                         r"\[-2, 1\], but got 2\)"):
        x.sum(2)
    with pytest.raises(RuntimeError, match="dim 0 appears multiple times in the list of dims"):
        x.sum((0, -2))


def test_mean_dtype_rules(device):
    ints = mt.tensor([1, 2, 4], device=device)
    with pytest.raises(RuntimeError, match="mean\\(\\): could not infer output dtype. Input dtype "
                                           "must be either a floating point or complex dtype. "
                                           "Got: Long"):
        ints.mean()
    with pytest.raises(RuntimeError, match="Got: Bool"):
        mt.tensor([True], device=device).mean()
    with pytest.raises(RuntimeError, match="Optional dtype must be either a floating point"):
        mt.zeros(2, device=device).mean(dtype=mt.int64)
    result = ints.mean(dtype=mt.float64)
    assert result.dtype is mt.float64 and result.item() == pytest.approx(7 / 3)
    assert math.isnan(mt.zeros(0, device=device).mean().item())
    assert np.isnan(mt.zeros(0, 3, device=device).mean(0).cpu().numpy()).all()


# ---- prod -------------------------------------------------------------------------------------
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dim", [None, 0, -1])
def test_prod_matches_numpy(device, rng, layout, dim):
    base = _base(rng)
    view = LAYOUTS[layout]
    x, a = view(_leaf(base, device)), view(base)
    _check(x.prod(dim) if dim is not None else x.prod(), np.prod(a, axis=dim))
    _check(mt.prod(x, 1, keepdim=True), np.prod(a, axis=1, keepdims=True))


def test_prod_dtypes_and_errors(device):
    assert mt.tensor([2, 3], device=device).prod().dtype is mt.int64
    assert mt.tensor([True, True], device=device).prod().item() == 1
    assert mt.zeros(0, 2, device=device).prod().item() == 1.0
    assert mt.tensor([2, 3], device=device).prod(dtype=mt.float64).dtype is mt.float64
    with pytest.raises(TypeError, match="prod\\(\\): argument 'dim' must be int"):
        mt.zeros(2, 2, device=device).prod((0, 1))


@pytest.mark.parametrize("values", [
    [[1.5, -2.0, 0.5], [0.7, 1.2, -0.9]],              # no zeros
    [[1.5, 0.0, 0.5], [0.7, 1.2, -0.9]],               # one zero
    [[0.0, 2.0, 0.0], [0.0, 0.0, 0.0]],                # two and three zeros
])
def test_prod_gradients_with_zeros(device, values):
    x = _leaf(values, device, requires_grad=True)
    for fn in (lambda t: t.prod(), lambda t: t.prod(1), lambda t: t.prod(0, keepdim=True)):
        assert gradcheck(fn, (x,))
        assert gradgradcheck(fn, (x,))


def test_prod_gradient_values_like_torch(device):
    grad = _grad(lambda t: t.prod(), [2.0, 0.0, 3.0, 5.0], device)
    np.testing.assert_array_equal(grad, [0.0, 30.0, 0.0, 0.0])
    grad = _grad(lambda t: t.prod(), [2.0, 0.0, 3.0, 0.0], device)
    np.testing.assert_array_equal(grad, [0.0, 0.0, 0.0, 0.0])


# ---- max / min / amax / amin / argmax / argmin ------------------------------------------------
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dim", [0, -1, 1])
@pytest.mark.parametrize("keepdim", [False, True])
def test_max_min_with_dim(device, rng, layout, dim, keepdim):
    base = _base(rng)
    view = LAYOUTS[layout]
    x, a = view(_leaf(base, device)), view(base)
    for fn, np_val, np_arg in ((mt.max, np.max, np.argmax), (mt.min, np.min, np.argmin)):
        result = fn(x, dim, keepdim)
        values, indices = result
        assert result.values is values and result.indices is indices
        _check(values, np_val(a, axis=dim, keepdims=keepdim))
        assert indices.dtype is mt.int64
        np.testing.assert_array_equal(indices.cpu().numpy(), np_arg(a, axis=dim, keepdims=keepdim))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_max_min_full_and_arg(device, rng, layout):
    base = _base(rng)
    view = LAYOUTS[layout]
    x, a = view(_leaf(base, device)), view(base)
    assert x.max().shape == () and x.max().item() == a.max()
    assert x.min().item() == a.min()
    assert x.argmax().item() == np.argmax(a) and x.argmin().item() == np.argmin(a)
    assert x.argmax(keepdim=True).shape == (1, 1, 1)
    np.testing.assert_array_equal(x.argmin(1, keepdim=True).cpu().numpy(),
                                  np.argmin(a, axis=1, keepdims=True))


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dim", [None, 0, (0, 2), (-1, -2)])
def test_amax_amin_match_numpy(device, rng, layout, dim):
    base = _base(rng)
    view = LAYOUTS[layout]
    x, a = view(_leaf(base, device)), view(base)
    kwargs = {} if dim is None else {"dim": dim}
    for keepdim in (False, True):
        _check(x.amax(**kwargs, keepdim=keepdim),
               np.max(a, axis=_np_axis(dim), keepdims=keepdim))
        _check(mt.amin(x, **kwargs, keepdim=keepdim),
               np.min(a, axis=_np_axis(dim), keepdims=keepdim))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_max_family_gradients(device, rng, layout):
    x = _strided_leaf(_base(rng, (2, 4, 3)), layout, device)
    assert gradcheck(lambda t: t.max(), (x,))
    assert gradcheck(lambda t: t.min(1)[0], (x,))
    assert gradcheck(lambda t: t.max(-1, keepdim=True).values, (x,))
    assert gradcheck(lambda t: t.amax((0, 2)), (x,))
    assert gradcheck(lambda t: t.amin(1, keepdim=True), (x,))
    assert gradgradcheck(lambda t: t.max(0).values * t.amin(0), (x,))


def test_max_ties_backward(device):
    ties = [1.0, 2.0, 2.0, 0.0]
    np.testing.assert_array_equal(_grad(lambda t: t.max(), ties, device), [0, 0.5, 0.5, 0])
    np.testing.assert_array_equal(_grad(lambda t: t.amax(0), ties, device), [0, 0.5, 0.5, 0])
    # max(dim) sends the whole gradient to the returned (first) index
    np.testing.assert_array_equal(_grad(lambda t: t.max(0).values, ties, device), [0, 1, 0, 0])
    low = [[3.0, 1.0, 1.0], [1.0, 1.0, 5.0]]
    np.testing.assert_array_equal(_grad(lambda t: t.amin(), low, device),
                                  [[0, 0.25, 0.25], [0.25, 0.25, 0]])


def test_max_nan_propagates_and_wins_argmax(device):
    x = mt.tensor([1.0, math.nan, 3.0, math.nan], device=device)
    assert math.isnan(x.max().item()) and math.isnan(x.min().item())
    assert math.isnan(x.amax().item())
    values, indices = x.max(0)
    assert math.isnan(values.item()) and indices.item() == 1
    assert x.argmax().item() == 1 and x.argmin().item() == 1
    rows = mt.tensor([[0.0, math.nan], [2.0, 1.0]], device=device)
    assert rows.argmax(1).tolist() == [1, 0]
    # NaN positions share max()'s gradient when the result is NaN (torch's evenly_distribute)
    grad = _grad(lambda t: t.max(), [1.0, math.nan, 2.0, math.nan], device)
    np.testing.assert_array_equal(grad, [0, 0.5, 0, 0.5])


def test_max_ties_pick_first_index(device):
    x = mt.tensor([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]], device=device)
    assert x.max(1).indices.tolist() == [1, 0] and x.argmax(1).tolist() == [1, 0]
    assert x.min(1).indices.tolist() == [0, 0] and x.argmin().item() == 0


def test_max_with_other_is_maximum(device):
    a = mt.tensor([1.0, 5.0, 3.0], device=device)
    b = mt.tensor([4.0, 2.0, 3.0], device=device)
    assert mt.max(a, b).tolist() == [4.0, 5.0, 3.0] and a.min(b).tolist() == [1.0, 2.0, 3.0]
    assert mt.max(a, other=b).tolist() == [4.0, 5.0, 3.0]
    assert mt.max(mt.tensor([1, 2], device=device), mt.tensor([1.5, 0.0], device=device)
                  ).tolist() == [1.5, 2.0]


def test_max_dtypes_and_0d(device):
    ints = mt.tensor([[1, 7, 3], [9, 2, 2]], device=device)
    assert ints.max().dtype is mt.int64 and ints.max().item() == 9
    assert ints.min(1).values.tolist() == [1, 2] and ints.amax(0).tolist() == [9, 7, 3]
    flags = mt.tensor([False, True, True], device=device)
    assert flags.max().item() is True and flags.amin().item() is False
    assert flags.max(0).indices.item() == 1 and flags.max(0).values.dtype is mt.bool
    with pytest.raises(RuntimeError, match="argmax\\(\\): does not support bool input"):
        flags.argmax()
    scalar = mt.tensor(3.0, device=device)
    values, indices = scalar.max(0)
    assert values.shape == () and values.item() == 3.0 and indices.item() == 0
    assert scalar.argmax().item() == 0 and scalar.argmin(-1).item() == 0
    assert scalar.max(0, keepdim=True).values.shape == ()


def test_max_family_empty_errors(device):
    empty = mt.zeros(0, 3, device=device)
    for name in ("max", "min", "amax", "amin"):
        with pytest.raises(RuntimeError, match=f"{name}\\(\\): Expected reduction dim to be "
                                               "specified for input.numel\\(\\) == 0. Specify "
                                               "the reduction dim with the 'dim' argument."):
            getattr(empty, name)()
    for name in ("max", "min", "amax", "amin", "argmax", "argmin"):
        with pytest.raises(IndexError, match=f"^{name}\\(\\): Expected reduction dim 0 to have "
                                             "non-zero size.$"):
            getattr(empty, name)(0)
    with pytest.raises(IndexError, match="amax\\(\\): Expected reduction dim -2 to have"):
        empty.amax((1, -2))                    # amax names the dim as given, like torch
    with pytest.raises(IndexError, match="argmax\\(\\): Expected reduction dim to be specified "
                                         "for input.numel\\(\\) == 0."):
        empty.argmax()
    values, indices = empty.max(1)
    assert values.shape == (0,) and indices.shape == (0,) and indices.dtype is mt.int64
    assert empty.amax(1).shape == (0,) and empty.argmin(1).shape == (0,)
    with pytest.raises(TypeError, match="max\\(\\): argument 'dim' must be int"):
        mt.zeros(2, 2, device=device).max((0, 1))


def test_max_result_type(device):
    result = mt.tensor([[1.0, 2.0]], device=device).max(1)
    assert isinstance(result, tuple) and result._fields == ("values", "indices")
    assert repr(result).startswith("minitorch.return_types.max(\nvalues=tensor(")
    restored = pickle.loads(pickle.dumps(result))
    assert restored.values.tolist() == [2.0] and restored.indices.tolist() == [1]


# ---- var / std --------------------------------------------------------------------------------
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dim", [None, 1, (0, -1)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_var_std_match_numpy(device, rng, layout, dim, keepdim):
    base = _base(rng, (3, 6, 5))
    view = LAYOUTS[layout]
    x, a = view(_leaf(base, device)), view(base)
    axis = _np_axis(dim)
    _check(x.var(dim, keepdim=keepdim), np.var(a, axis=axis, ddof=1, keepdims=keepdim))
    _check(x.std(dim, False, keepdim), np.std(a, axis=axis, ddof=0, keepdims=keepdim))
    _check(mt.var(x, dim, correction=2, keepdim=keepdim),
           np.var(a, axis=axis, ddof=2, keepdims=keepdim))
    var, mean = mt.var_mean(x, dim, keepdim=keepdim, correction=0)
    _check(var, np.var(a, axis=axis, keepdims=keepdim))
    _check(mean, np.mean(a, axis=axis, keepdims=keepdim))
    std, mean = mt.std_mean(x, dim, True, keepdim)
    _check(std, np.std(a, axis=axis, ddof=1, keepdims=keepdim))


def test_var_argument_forms(device):
    x = mt.tensor(np.arange(6.0).reshape(2, 3), device=device)
    assert x.var().item() == pytest.approx(3.5)
    assert x.var(False).item() == pytest.approx(17.5 / 6)         # var(unbiased)
    assert x.var(unbiased=False).item() == pytest.approx(17.5 / 6)
    assert x.var(1, True, True).shape == (2, 1)
    assert x.std(dim=1, correction=0).tolist() == pytest.approx([math.sqrt(2 / 3)] * 2)
    assert x.var([]).item() == pytest.approx(3.5)
    with pytest.raises(TypeError):
        x.var(1, unbiased=True, correction=1)
    with pytest.raises(RuntimeError, match="std and var only support floating point and "
                                           "complex dtypes"):
        mt.tensor([1, 2], device=device).var()


def test_var_degrees_of_freedom(device):
    with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
        single = mt.tensor([1.0], device=device).var()
    assert math.isnan(single.item())
    with pytest.warns(UserWarning):
        assert math.isnan(mt.zeros(0, device=device).std().item())
    with pytest.warns(UserWarning):
        assert math.isnan(mt.tensor(2.0, device=device).var().item())


@pytest.mark.parametrize("layout", LAYOUTS)
def test_var_std_gradients(device, rng, layout):
    x = _strided_leaf(_base(rng, (2, 4, 3)), layout, device)
    assert gradcheck(lambda t: t.var(1), (x,))
    assert gradcheck(lambda t: t.std((0, 2), correction=0, keepdim=True), (x,))
    assert gradcheck(lambda t: mt.var_mean(t, -1), (x,))
    assert gradcheck(lambda t: mt.std_mean(t), (x,))
    assert gradgradcheck(lambda t: t.var(1), (x,))
    assert gradgradcheck(lambda t: mt.std(t, 0), (x,))


def test_std_of_constant_has_zero_gradient(device):
    np.testing.assert_array_equal(_grad(lambda t: t.std(), [1.0, 1.0], device), [0.0, 0.0])
    x = _leaf([[1.0, 2.0], [3.0, 4.0]], device, requires_grad=True)
    var, mean = mt.var_mean(x, 1)
    mean.sum().backward()          # only one output used: the other gets no gradient
    np.testing.assert_allclose(x.grad.cpu().numpy(), np.full((2, 2), 0.5))


# ---- logsumexp / softmax / log_softmax --------------------------------------------------------
def _np_logsumexp(a, axis, keepdims=False):
    peak = np.max(a, axis=axis, keepdims=True)
    out = np.log(np.sum(np.exp(a - peak), axis=axis, keepdims=True)) + peak
    return out if keepdims else np.squeeze(out, axis=axis)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dim", [0, -1, (0, 2)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_logsumexp_matches_numpy(device, rng, layout, dim, keepdim):
    base = _base(rng) * 30
    view = LAYOUTS[layout]
    x, a = view(_leaf(base, device)), view(base)
    _check(mt.logsumexp(x, dim, keepdim), _np_logsumexp(a, _np_axis(dim), keepdim))


def test_logsumexp_stability_and_edges(device):
    x = mt.tensor([-math.inf, -math.inf], device=device)
    assert mt.logsumexp(x, 0).item() == -math.inf
    assert mt.logsumexp(mt.tensor([math.inf, 1.0], device=device), 0).item() == math.inf
    big = mt.tensor([1e4, 1e4], device=device)
    assert mt.logsumexp(big, 0).item() == pytest.approx(1e4 + math.log(2))
    assert mt.logsumexp(mt.tensor([-1e4, -1e4], device=device), 0).item() == \
        pytest.approx(-1e4 + math.log(2))
    rows = mt.tensor([[0.0, -math.inf], [-math.inf, -math.inf]], device=device)
    assert mt.logsumexp(rows, 1).tolist() == [0.0, -math.inf]
    assert mt.logsumexp(mt.zeros(0, 3, device=device), 0).tolist() == [-math.inf] * 3
    assert mt.logsumexp(mt.zeros(0, 3, device=device), 1).shape == (0,)
    ints = mt.logsumexp(mt.tensor([0, 0], device=device), 0)
    assert ints.dtype is mt.float32 and ints.item() == pytest.approx(math.log(2))
    with pytest.raises(TypeError):
        mt.logsumexp(x)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_logsumexp_gradients(device, rng, layout):
    x = _strided_leaf(_base(rng, (2, 4, 3)), layout, device)
    assert gradcheck(lambda t: mt.logsumexp(t, 1), (x,))
    assert gradcheck(lambda t: t.logsumexp((0, 2), keepdim=True), (x,))
    assert gradgradcheck(lambda t: mt.logsumexp(t, -1), (x,))


def _np_softmax(a, axis):
    e = np.exp(a - np.max(a, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_log_softmax_match_numpy(device, rng, layout, dim):
    base = _base(rng) * 10
    view = LAYOUTS[layout]
    x, a = view(_leaf(base, device)), view(base)
    _check(mt.softmax(x, dim), _np_softmax(a, dim))
    _check(x.log_softmax(dim), np.log(_np_softmax(a, dim)), rtol=1e-9)
    _check(x.softmax(dim).sum(dim), np.ones(np.delete(a.shape, dim % 3)))


def test_softmax_stability_and_edges(device):
    out = mt.log_softmax(mt.tensor([1e4, 0.0, -1e4], device=device), 0)
    assert out.tolist() == [0.0, -1e4, -2e4]
    out32 = mt.log_softmax(mt.tensor([1e4, 0.0, -1e4], dtype=mt.float32, device=device), 0)
    assert out32.tolist() == [0.0, -1e4, -2e4]
    assert mt.softmax(mt.tensor([1e4, 0.0], device=device), 0).tolist() == [1.0, 0.0]
    assert mt.softmax(mt.tensor([-1e4, -1e4], device=device), 0).tolist() == [0.5, 0.5]
    assert mt.softmax(mt.tensor(2.0, device=device), 0).item() == 1.0
    assert mt.log_softmax(mt.tensor(2.0, device=device), -1).item() == 0.0
    assert mt.softmax(mt.zeros(0, 3, device=device), 1).shape == (0, 3)
    assert mt.softmax(mt.zeros(0, 3, device=device), 0).shape == (0, 3)
    ints = mt.tensor([[0, 1], [2, 3]], device=device)
    assert mt.softmax(ints, 1, dtype=mt.float64).dtype is mt.float64
    with pytest.raises(NotImplementedError, match="\"softmax_kernel_impl\" not implemented for "
                                                  "'Long'"):
        ints.softmax(0)
    with pytest.raises(NotImplementedError, match="log_softmax"):
        mt.log_softmax(ints, 0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        mt.softmax(mt.zeros(2, 3, device=device), 2)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_softmax_gradients(device, rng, layout):
    x = _strided_leaf(_base(rng, (2, 4, 3)), layout, device)
    for fn in (mt.softmax, mt.log_softmax):
        assert gradcheck(lambda t: fn(t, 1), (x,))
        assert gradgradcheck(lambda t: fn(t, -1), (x,))
    seed = _leaf(_base(np.random.default_rng(1), tuple(x.shape)), device,
                 requires_grad=True)
    # third order: the fused backward Functions' own backward is differentiable too
    for fn in (mt.softmax, mt.log_softmax):
        def first(t, s, fn=fn):
            return mt.autograd.grad(fn(t, 1), t, s, create_graph=True)[0]
        assert gradgradcheck(first, (x, seed))


def test_softmax_matches_torch_values_and_grads(rng):
    torch = pytest.importorskip("torch")
    base = _base(rng, (3, 5))
    seed = rng.standard_normal((3, 5))
    for name in ("softmax", "log_softmax"):
        x = _leaf(base, "cpu", requires_grad=True)
        tx = torch.tensor(base, requires_grad=True)
        out, tout = getattr(mt, name)(x, 1), getattr(torch, name)(tx, 1)
        np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-12)
        out.backward(mt.tensor(seed))
        tout.backward(torch.tensor(seed))
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-14)


# ---- norm -------------------------------------------------------------------------------------
def _np_norm(a, p, axis, keepdims=False):
    mag = np.abs(a)
    with np.errstate(divide="ignore"):         # 0 ** negative p is inf, as intended
        return _np_norm_of(mag, p, axis, keepdims).astype(a.dtype)


def _np_norm_of(mag, p, axis, keepdims):
    if p == math.inf:
        return np.max(mag, axis=axis, keepdims=keepdims)
    if p == -math.inf:
        return np.min(mag, axis=axis, keepdims=keepdims)
    if p == 0:
        return np.sum(mag != 0, axis=axis, keepdims=keepdims)
    return np.sum(mag ** p, axis=axis, keepdims=keepdims) ** (1 / p)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("p", [2, "fro", 1, math.inf, -math.inf, 0, 3, 0.5, -1.5])
def test_norm_matches_numpy(device, rng, layout, p):
    base = _base(rng)
    base[0, 0, 0] = 0.0
    view = LAYOUTS[layout]
    x, a = view(_leaf(base, device)), view(base)
    order = 2 if p == "fro" else p
    for dim in (None, 1, (0, 2)):
        _check(x.norm(p, dim), _np_norm(a, order, _np_axis(dim)), rtol=1e-9)
        _check(mt.norm(x, p=p, dim=dim, keepdim=True),
               _np_norm(a, order, _np_axis(dim), keepdims=True), rtol=1e-9)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("p", [2, 1, math.inf, -math.inf, 3, 1.5, 0.5])
def test_norm_gradients(device, rng, layout, p):
    x = _strided_leaf(_base(rng, (2, 4, 3)) + 0.1, layout, device)
    assert gradcheck(lambda t: t.norm(p, dim=1), (x,))
    assert gradcheck(lambda t: mt.norm(t, p), (x,))
    if p in (2, 3):
        assert gradgradcheck(lambda t: t.norm(p, dim=(0, 2)), (x,))


def test_norm_edges(device):
    assert _grad(lambda t: t.norm(), [0.0, 0.0], device).tolist() == [0.0, 0.0]
    np.testing.assert_array_equal(_grad(lambda t: t.norm(p=math.inf), [0.0, 2.0, -2.0], device),
                                  [0.0, 0.5, -0.5])
    np.testing.assert_array_equal(_grad(lambda t: t.norm(p=1), [0.0, 1.0, -2.0], device),
                                  [0.0, 1.0, -1.0])
    x = _leaf([0.0, 1.0, -2.0], device, requires_grad=True)
    x.norm(p=0).backward()
    assert x.grad is None                              # as torch: no gradient for p=0
    assert mt.zeros(0, 3, device=device).norm().item() == 0.0
    with pytest.raises(RuntimeError, match="linalg.vector_norm cannot compute the inf norm on "
                                           "an empty tensor"):
        mt.zeros(0, 3, device=device).norm(p=math.inf)
    with pytest.raises(RuntimeError, match="cannot compute the -1 norm on the dimension -1because "
                                           "this dimension is empty"):
        mt.zeros(3, 0, device=device).norm(p=-1, dim=-1)
    assert mt.zeros(3, 0, device=device).norm(p=-1, dim=0).shape == (0,)
    with pytest.raises(RuntimeError, match="linalg.vector_norm: Expected a floating point or "
                                           "complex tensor as input. Got Long"):
        mt.tensor([1, 2], device=device).norm()
    with pytest.raises(RuntimeError, match="dtype should be floating point or complex, but got "
                                           "Long"):
        mt.zeros(2, device=device).norm(dtype=mt.int64)
    with pytest.raises(RuntimeError, match="linalg.matrix_norm: Order abc not supported."):
        mt.zeros(2, 2, device=device).norm(p="abc")
    assert mt.ones(2, 2, device=device).norm(dtype=mt.float64).dtype is mt.float64
    assert mt.ones(2, 2, device=device).norm(dim=()).item() == 2.0


def test_norm_matches_torch_gradients(rng):
    torch = pytest.importorskip("torch")
    base = rng.standard_normal((3, 4))
    base[1, 2] = 0.0
    base[0, 1] = -base[0, 3]                  # a tie in |x| for the inf-norms
    for p in (2, 1, math.inf, -math.inf, 3, 1.5, 0.5, -1.0):
        x = _leaf(base, "cpu", requires_grad=True)
        tx = torch.tensor(base, requires_grad=True)
        x.norm(p, dim=1).sum().backward()
        tx.norm(p, dim=1).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-14)


# ---- cumsum / cumprod -------------------------------------------------------------------------
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cumsum_cumprod_match_numpy(device, rng, layout, dim):
    base = _base(rng)
    view = LAYOUTS[layout]
    x, a = view(_leaf(base, device)), view(base)
    _check(x.cumsum(dim), np.cumsum(a, axis=dim))
    _check(mt.cumprod(x, dim), np.cumprod(a, axis=dim))


def test_cumulative_dtypes_and_edges(device):
    ints = mt.tensor([[1, 2, 3], [4, 5, 6]], device=device)
    assert ints.cumsum(1).dtype is mt.int64 and ints.cumsum(1).tolist() == [[1, 3, 6], [4, 9, 15]]
    flags = mt.tensor([True, False, True], device=device)
    assert flags.cumsum(0).tolist() == [1, 1, 2] and flags.cumprod(0).tolist() == [1, 0, 0]
    assert ints.cumsum(0, dtype=mt.float32).dtype is mt.float32
    assert mt.tensor(2.0, device=device).cumsum(0).item() == 2.0
    assert mt.tensor(2.0, device=device).cumprod(-1).item() == 2.0
    assert mt.zeros(0, 3, device=device).cumsum(0).shape == (0, 3)
    with pytest.raises(IndexError, match="Dimension out of range"):
        ints.cumsum(2)
    with pytest.raises(TypeError):
        mt.cumsum(ints)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_cumulative_gradients(device, rng, layout):
    x = _strided_leaf(_base(rng, (2, 4, 3)), layout, device)
    assert gradcheck(lambda t: t.cumsum(1), (x,))
    assert gradcheck(lambda t: t.cumprod(-1), (x,))
    assert gradgradcheck(lambda t: t.cumprod(1), (x,))


@pytest.mark.parametrize("values", [
    [2.0, 0.0, 3.0, 0.0, 5.0],
    [0.0, 1.5, -2.0, 0.5, 1.2],
    [1.5, -2.0, 0.5, 0.7, 0.0],
    [0.0, 0.0, 2.0, 0.0, 3.0],
])
def test_cumprod_gradients_with_zeros(device, values):
    x = _leaf([values, values[::-1]], device, requires_grad=True)
    assert gradcheck(lambda t: t.cumprod(1), (x,))
    assert gradgradcheck(lambda t: t.cumprod(1), (x,))
    assert gradcheck(lambda t: t.cumprod(0), (x,))


def test_cumprod_zero_gradient_like_torch(device):
    grad = _grad(lambda t: t.cumprod(0), [2.0, 0.0, 3.0, 0.0, 5.0], device)
    np.testing.assert_array_equal(grad, [1.0, 8.0, 0.0, 0.0, 0.0])


# ---- all / any / count_nonzero ----------------------------------------------------------------
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dim", [None, 0, -1, (0, 2)])
def test_all_any_count_nonzero(device, rng, layout, dim):
    base = np.where(rng.random((3, 4, 5)) < 0.3, 0.0, 1.5)
    view = LAYOUTS[layout]
    x, a = view(_leaf(base, device)), view(base)
    axis = _np_axis(dim)
    for (fn, np_fn), keepdim in zip(((mt.all, np.all), (mt.any, np.any)) * 2, (0, 0, 1, 1)):
        result = fn(x, dim, bool(keepdim)) if dim is not None else fn(x, keepdim=bool(keepdim))
        assert result.dtype is mt.bool
        np.testing.assert_array_equal(result.cpu().numpy(), np_fn(a, axis=axis, keepdims=keepdim))
    counts = mt.count_nonzero(x, dim)
    assert counts.dtype is mt.int64
    np.testing.assert_array_equal(counts.cpu().numpy(), np.count_nonzero(a, axis=axis))
    flags = view(mt.tensor(base != 0, device=device))
    np.testing.assert_array_equal(flags.all(dim).cpu().numpy() if dim is not None else
                                  flags.all().cpu().numpy(), np.all(a != 0, axis=axis))


def test_all_any_edges(device):
    empty = mt.zeros(0, 3, device=device)
    assert empty.all().item() is True and empty.any().item() is False
    assert empty.all(0).tolist() == [True] * 3 and empty.any(0, keepdim=True).shape == (1, 3)
    assert empty.all(1).shape == (0,)
    ints = mt.tensor([[1, 0], [2, 3]], device=device)
    assert ints.all(1).tolist() == [False, True] and ints.any().item() is True
    assert ints.all(dim=()).tolist() == [[True, False], [True, True]]
    assert mt.count_nonzero(ints).item() == 3 and mt.count_nonzero(ints, ()).item() == 3
    nan = mt.tensor([math.nan], device=device)
    assert nan.all().item() is True and mt.count_nonzero(nan).item() == 1


# ---- cross-checks with torch ------------------------------------------------------------------
def test_gradients_match_torch(rng):
    torch = pytest.importorskip("torch")
    base = rng.standard_normal((3, 4))
    base[1, 1] = 0.0
    base[2, 0] = base[2, 3] = 0.0
    base[0, 2] = base[0, 0] = 5.0
    cases = [
        lambda m: m.prod(1), lambda m: m.prod(), lambda m: m.cumprod(1),
        lambda m: m.cumprod(0), lambda m: m.amax(1), lambda m: m.max(),
        lambda m: m.max(1)[0], lambda m: m.var(0), lambda m: m.std(1, keepdim=True),
        lambda m: m.logsumexp(1), lambda m: m.mean((0, 1)),
    ]
    for fn in cases:
        x = _leaf(base, "cpu", requires_grad=True)
        tx = torch.tensor(base, requires_grad=True)
        out, tout = fn(x), fn(tx)
        np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-12)
        grad_seed = rng.standard_normal(tuple(tout.shape))
        tout.backward(torch.tensor(grad_seed))
        out.backward(mt.tensor(grad_seed, dtype=mt.float64))
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-14)


def test_grad_fn_names(device):
    x = _leaf(np.ones((2, 3)), device, requires_grad=True)
    names = {
        "MaxBackward1": x.max(), "MaxBackward0": x.max(0).values, "MinBackward1": x.min(),
        "AmaxBackward0": x.amax(1), "MeanBackward0": x.mean(), "ProdBackward0": x.prod(1),
        "VarBackward0": x.var(), "StdBackward0": x.std(), "LogsumexpBackward0": x.logsumexp(1),
        "SoftmaxBackward0": x.softmax(1), "LogSoftmaxBackward0": x.log_softmax(1),
        "LinalgVectorNormBackward0": x.norm(), "CumsumBackward0": x.cumsum(1),
        "CumprodBackward0": x.cumprod(1), "VarMeanBackward0": mt.var_mean(x)[0],
    }
    for name, result in names.items():
        assert result.grad_fn.name() == name
    assert x.max(0).indices.requires_grad is False and x.argmax().requires_grad is False
    assert x.all().requires_grad is False


def test_reductions_do_not_warn(device):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mt.ones(3, 4, device=device).var(1)
        mt.softmax(mt.ones(3, device=device), 0)
