"""The further elementwise math of torch (hyperbolic and inverse trigonometric functions, log2,
exp2, erfc, lgamma, digamma, frac, hypot, logaddexp, copysign, heaviside, xlogy and the
compositions sgn, signbit, deg2rad, nan_to_num, …): values against torch on both devices, special
values included, gradients by finite differences, output dtypes, errors and in-place forms."""
import math

import numpy as np
import pytest

import minitorch as mt
from minitorch.autograd import gradcheck, gradgradcheck

torch = pytest.importorskip("torch")

NAN, INF = math.nan, math.inf
SPECIALS = [NAN, INF, -INF, 0.0, -0.0]
LAYOUTS = {
    "contiguous": lambda x: x,
    "transposed": lambda x: x.reshape(2, 3).transpose(1, 0),
    "stepped": lambda x: x[::2],
    "0-d": lambda x: x[0],
    "empty": lambda x: x[:0],
}

# name: (inside the domain, for gradients; a few more values for the forward)
UNARY = {
    "sinh": ("any", [-3.0, 20.0, 100.0]),
    "cosh": ("any", [-3.0, 20.0, 100.0]),
    "tan": ("any", [1.5707, -4.0, 10.0]),
    "asin": ("unit", [1.0, -1.0, 1.5]),
    "acos": ("unit", [1.0, -1.0, -1.5]),
    "atan": ("any", [1e10, -7.0]),
    "asinh": ("any", [1e10, -7.0]),
    "acosh": ("above_one", [1.0, 0.5, 1e10]),
    "atanh": ("unit", [1.0, -1.0, 1.5]),
    "log2": ("positive", [8.0, -1.0, 1e-30]),
    "log10": ("positive", [1000.0, -1.0, 1e-30]),
    "exp2": ("any", [10.0, -200.0, 2000.0]),
    "erfc": ("any", [5.0, -5.0, 30.0]),
    "lgamma": ("positive", [-1.0, -2.5, -0.5, 1.0, 2.0, 1e5]),
    "digamma": ("positive", [-1.0, -2.5, -0.5, 10.0, 1e-3, 1e20, -7.25]),
    "frac": ("offgrid", [-2.5, 2.5, 1e20]),
}
ALIASES = {"arcsin": "asin", "arccos": "acos", "arctan": "atan", "arcsinh": "asinh",
           "arccosh": "acosh", "arctanh": "atanh"}


def _values(domain, n, rng):
    """n values inside a function's domain, away from its poles and kinks."""
    if domain == "any":
        return rng.uniform(-2.0, 2.0, n)
    if domain == "unit":
        return rng.uniform(-0.8, 0.8, n)
    if domain == "above_one":
        return rng.uniform(1.3, 3.0, n)
    if domain == "positive":
        return rng.uniform(0.3, 3.0, n)
    if domain == "offgrid":
        return rng.integers(-3, 3, n) + rng.uniform(0.1, 0.9, n)
    raise ValueError(domain)


def _assert_like_torch(result, expected, dtype):
    """Same dtype and shape, values within a few float32 ulps (NaN where torch has NaN)."""
    assert result.dtype is dtype
    got = result.detach().cpu().numpy()
    want = expected.numpy()
    assert got.shape == want.shape
    tol = dict(rtol=4e-6, atol=1e-6) if dtype is mt.float32 else dict(rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), equal_nan=True,
                               **tol)


# ---- unary ------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(UNARY))
def test_unary_matches_torch(name, device, rng):
    domain, extra = UNARY[name]
    values = np.concatenate([_values(domain, 12, rng), extra, SPECIALS])
    for dtype, torch_dtype in ((mt.float32, torch.float32), (mt.float64, torch.float64)):
        t = mt.tensor(values, dtype=dtype, device=device)
        expected = getattr(torch, name)(torch.tensor(values, dtype=torch_dtype))
        _assert_like_torch(getattr(mt, name)(t), expected, dtype)
        _assert_like_torch(getattr(t, name)(), expected, dtype)       # the Tensor method


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("name", list(UNARY))
def test_unary_layouts_and_gradients(name, layout, device, rng):
    view = LAYOUTS[layout]
    values = _values(UNARY[name][0], 6, rng)
    t = mt.tensor(values, dtype=mt.float64, device=device, requires_grad=True)
    expected = getattr(torch, name)(view(torch.tensor(values)))
    _assert_like_torch(getattr(mt, name)(view(t)), expected, mt.float64)
    if device == "cpu" or layout == "transposed":      # the emulated GPU is slow: one layout
        assert gradcheck(lambda a: getattr(mt, name)(view(a)), (t,))


@pytest.mark.parametrize("name", ["tan", "atanh", "acosh", "lgamma", "erfc", "exp2", "log10"])
def test_unary_second_derivatives(name, rng):
    t = mt.tensor(_values(UNARY[name][0], 4, rng), dtype=mt.float64, requires_grad=True)
    assert gradgradcheck(getattr(mt, name), (t,))


def test_digamma_third_derivative_is_polygamma_two():
    x = mt.tensor([1.5], dtype=mt.float64, requires_grad=True)
    (d1,) = mt.autograd.grad(mt.digamma(x), x, create_graph=True)
    d1.backward()
    expected = torch.polygamma(2, torch.tensor([1.5], dtype=torch.float64))
    np.testing.assert_allclose(x.grad.numpy(), expected.numpy(), rtol=1e-12)


@pytest.mark.parametrize("name", [n for n in UNARY if n != "frac"])
def test_integer_and_bool_inputs_promote_to_the_default_float(name, device):
    for values, dtype in (([0, 1, 3], mt.int64), ([True, False, True], mt.bool),
                          ([0, 1, 3], mt.uint8)):
        t = mt.tensor(values, dtype=dtype, device=device)
        torch_dtype = getattr(torch, str(dtype).split(".")[-1])
        expected = getattr(torch, name)(torch.tensor(values, dtype=torch_dtype))
        _assert_like_torch(getattr(mt, name)(t), expected, mt.float32)
    mt.set_default_dtype(mt.float64)
    try:
        assert getattr(mt, name)(mt.tensor([1, 2], device=device)).dtype is mt.float64
    finally:
        mt.set_default_dtype(mt.float32)


def test_aliases_are_the_same_functions():
    for alias, name in ALIASES.items():
        assert getattr(mt, alias) is getattr(mt, name)
        x = mt.tensor([0.25, 0.5])
        np.testing.assert_array_equal(getattr(x, alias)().numpy(), getattr(mt, name)(x).numpy())


def test_frac_has_no_integer_kernel():
    for dtype, torch_dtype in ((mt.int64, torch.int64), (mt.bool, torch.bool)):
        with pytest.raises(NotImplementedError) as ours:
            mt.frac(mt.tensor([1, 0], dtype=dtype))
        with pytest.raises(NotImplementedError) as theirs:
            torch.frac(torch.tensor([1, 0], dtype=torch_dtype))
        assert str(ours.value) == str(theirs.value)


def test_unary_rejects_non_tensors():
    with pytest.raises(TypeError, match=r"sinh\(\): argument 'input' \(position 1\) must be "
                                        r"Tensor, not list"):
        mt.sinh([1.0])


# ---- binary -----------------------------------------------------------------------------------
A_SPECIALS = [0.0, 0.0, -0.0, NAN, 1.0, INF, -INF, INF, 2.0, 0.0, 1.5, -3.0]
B_SPECIALS = [0.0, NAN, -1.0, 1.0, NAN, INF, -INF, -INF, -0.0, -2.0, 0.0, INF]
BINARY = {
    "hypot": ("any", "any"),
    "logaddexp": ("any", "any"),
    "logaddexp2": ("any", "any"),
    "copysign": ("nonzero", "nonzero"),
    "xlogy": ("any", "positive"),
}
PAIRS = {   # (a shape, b shape): broadcasting on either or both sides, 0-d and empty
    "same": ((2, 3), (2, 3)),
    "broadcast_left": ((3,), (2, 3)),
    "broadcast_both": ((2, 1), (1, 3)),
    "0-d": ((), (2, 3)),
    "empty": ((0, 3), (3,)),
}


def _binary_values(domain, shape, rng):
    if domain == "nonzero":
        return rng.uniform(0.3, 2.0, shape) * np.where(rng.random(shape) < 0.5, -1.0, 1.0)
    return _values(domain, int(np.prod(shape, dtype=np.int64)), rng).reshape(shape)


@pytest.mark.parametrize("name", list(BINARY) + ["heaviside"])
def test_binary_special_values_match_torch(name, device):
    for dtype, torch_dtype in ((mt.float32, torch.float32), (mt.float64, torch.float64)):
        a = mt.tensor(A_SPECIALS, dtype=dtype, device=device)
        b = mt.tensor(B_SPECIALS, dtype=dtype, device=device)
        expected = getattr(torch, name)(torch.tensor(A_SPECIALS, dtype=torch_dtype),
                                        torch.tensor(B_SPECIALS, dtype=torch_dtype))
        _assert_like_torch(getattr(mt, name)(a, b), expected, dtype)
        _assert_like_torch(getattr(a, name)(b), expected, dtype)


@pytest.mark.parametrize("pair", list(PAIRS))
@pytest.mark.parametrize("name", list(BINARY))
def test_binary_broadcasting_and_gradients(name, pair, device, rng):
    (a_shape, b_shape), (a_domain, b_domain) = PAIRS[pair], BINARY[name]
    x, y = _binary_values(a_domain, a_shape, rng), _binary_values(b_domain, b_shape, rng)
    a = mt.tensor(x, device=device, dtype=mt.float64, requires_grad=True)
    b = mt.tensor(y, device=device, dtype=mt.float64, requires_grad=True)
    expected = getattr(torch, name)(torch.tensor(x), torch.tensor(y))
    _assert_like_torch(getattr(mt, name)(a, b), expected, mt.float64)
    if device == "cpu" or pair == "broadcast_both":
        assert gradcheck(getattr(mt, name), (a, b))


def test_binary_gradients_of_transposed_inputs(rng):
    a = mt.tensor(rng.uniform(0.5, 2.0, (3, 2)), dtype=mt.float64, requires_grad=True)
    b = mt.tensor(rng.uniform(0.5, 2.0, (2, 6)), dtype=mt.float64, requires_grad=True)
    for name in BINARY:
        assert gradcheck(lambda p, q: getattr(mt, name)(p.t(), q[:, ::2]), (a, b))


@pytest.mark.parametrize("name", list(BINARY))
def test_binary_second_derivatives(name, rng):
    a = mt.tensor(_binary_values(BINARY[name][0], (2, 3), rng), dtype=mt.float64,
                  requires_grad=True)
    b = mt.tensor(_binary_values(BINARY[name][1], (3,), rng), dtype=mt.float64,
                  requires_grad=True)
    assert gradgradcheck(getattr(mt, name), (a, b))


def test_xlogy_and_copysign_gradients_at_zero():
    """torch's rules: no gradient for x where x == 0 and y <= 0; copysign's is 0 at a == 0 and
    never flows to the sign operand."""
    x = torch.tensor([0.0, 0.0, 2.0], dtype=torch.float64, requires_grad=True)
    y = torch.tensor([0.0, 3.0, -1.0], dtype=torch.float64, requires_grad=True)
    a = mt.tensor([0.0, 0.0, 2.0], dtype=mt.float64, requires_grad=True)
    b = mt.tensor([0.0, 3.0, -1.0], dtype=mt.float64, requires_grad=True)
    for name in ("xlogy", "copysign"):
        getattr(torch, name)(x, y).sum().backward()
        getattr(mt, name)(a, b).sum().backward()
        for ours, theirs in ((a, x), (b, y)):
            np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), equal_nan=True)
            ours.grad, theirs.grad = None, None


def test_binary_dtypes_and_scalars(device):
    i = mt.tensor([1, 2], device=device)
    f = mt.tensor([0.5, -1.0], device=device)
    assert mt.hypot(i, f).dtype is mt.float32
    assert mt.logaddexp(f, mt.tensor(1.0, dtype=mt.float64, device=device)).dtype is mt.float32
    assert mt.copysign(i, -1).dtype is mt.float32
    np.testing.assert_array_equal(mt.copysign(i, -1).cpu().numpy(), [-1.0, -2.0])
    assert mt.xlogy(i, i).dtype is mt.float32
    np.testing.assert_allclose(mt.xlogy(2, f).cpu().numpy(),
                               torch.xlogy(2, torch.tensor([0.5, -1.0])).numpy(), equal_nan=True)
    np.testing.assert_allclose(mt.xlogy(f, 3.0).cpu().numpy(),
                               torch.xlogy(torch.tensor([0.5, -1.0]), 3.0).numpy())


@pytest.mark.parametrize("dtype", ["int64", "bool", "uint8"])
def test_heaviside_integer_and_bool(dtype, device):
    x, v = [-2, 0, 3, 0, 1], [7, 5, 0, 1, 0]
    if dtype == "bool":
        x, v = [True, False, False, True], [False, True, False, True]
    expected = torch.heaviside(torch.tensor(x, dtype=getattr(torch, dtype)),
                               torch.tensor(v, dtype=getattr(torch, dtype)))
    result = mt.heaviside(mt.tensor(x, dtype=getattr(mt, dtype), device=device),
                          mt.tensor(v, dtype=getattr(mt, dtype), device=device))
    assert result.dtype is getattr(mt, dtype)
    np.testing.assert_array_equal(result.cpu().numpy(), expected.numpy())


def _same_error(ours, theirs, error):
    with pytest.raises(error) as got:
        ours()
    with pytest.raises(error) as want:
        theirs()
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("name", ["hypot", "logaddexp", "logaddexp2"])
def test_float_only_binary_errors(name):
    for x, y in (([1, 2], [3, 4]), ([True], [False]), ([1], [True])):
        _same_error(lambda: getattr(mt, name)(mt.tensor(x), mt.tensor(y)),
                    lambda: getattr(torch, name)(torch.tensor(x), torch.tensor(y)),
                    NotImplementedError)
    _same_error(lambda: getattr(mt, name)(mt.tensor([1.0]), 2.0),
                lambda: getattr(torch, name)(torch.tensor([1.0]), 2.0), TypeError)
    _same_error(lambda: getattr(mt, name)(2.0, mt.tensor([1.0])),
                lambda: getattr(torch, name)(2.0, torch.tensor([1.0])), TypeError)


def test_heaviside_errors():
    _same_error(lambda: mt.heaviside(mt.tensor([1.0]), mt.tensor([1])),
                lambda: torch.heaviside(torch.tensor([1.0]), torch.tensor([1])), RuntimeError)
    _same_error(lambda: mt.heaviside(mt.tensor([1.0]), 0.5),
                lambda: torch.heaviside(torch.tensor([1.0]), 0.5), TypeError)
    x = mt.tensor([1.0, 0.0], requires_grad=True)
    y = torch.tensor([1.0, 0.0], requires_grad=True)
    _same_error(lambda: mt.heaviside(x, mt.tensor([0.5, 0.5])).sum().backward(),
                lambda: torch.heaviside(y, torch.tensor([0.5, 0.5])).sum().backward(),
                RuntimeError)


# ---- compositions -----------------------------------------------------------------------------
def _torch_of(t):
    return torch.from_numpy(t.cpu().numpy().copy())


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool", "uint8"])
def test_sgn_signbit_nan_to_num_fix_match_torch(dtype, device):
    values = {"bool": [True, False], "int64": [-3, 0, 4], "uint8": [0, 7, 255]}.get(
        dtype, [-1.5, -0.0, 0.0, 2.5, NAN, -NAN, INF, -INF])
    t = mt.tensor(values, dtype=getattr(mt, dtype), device=device)
    ref = torch.tensor(values, dtype=getattr(torch, dtype))
    cases = [("sgn", ()), ("signbit", ()), ("nan_to_num", ()), ("nan_to_num", (1.0, 9.0, -9.0)),
             ("deg2rad", ()), ("rad2deg", ())]
    if dtype != "bool":
        cases += [("fix", ()), ("positive", ())]
    for name, args in cases:
        got, want = getattr(mt, name)(t, *args), getattr(torch, name)(ref, *args)
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1], name
        np.testing.assert_allclose(got.cpu().numpy().astype(np.float64),
                                   want.numpy().astype(np.float64), rtol=1e-6, equal_nan=True)
    assert np.signbit(mt.sgn(t).cpu().numpy()[1]) == np.signbit(torch.sgn(ref).numpy()[1])


def test_positive_returns_its_input_and_refuses_bool():
    t = mt.tensor([1.0, -2.0])
    assert mt.positive(t) is t and t.positive() is t
    _same_error(lambda: mt.positive(mt.tensor([True])),
                lambda: torch.positive(torch.tensor([True])), RuntimeError)


def test_composition_gradients(rng):
    values = rng.uniform(-2.0, 2.0, (2, 3))
    t = mt.tensor(values, dtype=mt.float64, requires_grad=True)
    for fn in (mt.deg2rad, mt.rad2deg, mt.sgn, mt.fix, mt.positive,
               lambda x: mt.clamp_min(x, 0.3), lambda x: mt.clamp_max(x, -0.2),
               lambda x: mt.nan_to_num(mt.log(x))):
        assert gradcheck(fn, (t,) if fn is not mt.positive else (t * 1,))
    # nan_to_num passes the gradient where the value is kept and none where it is replaced
    x = torch.tensor([-1.0, 0.0, 2.0], dtype=torch.float64, requires_grad=True)
    a = mt.tensor([-1.0, 0.0, 2.0], dtype=mt.float64, requires_grad=True)
    torch.nan_to_num(torch.log(x) * 2).sum().backward()
    mt.nan_to_num(mt.log(a) * 2).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), x.grad.numpy(), equal_nan=True)


def test_clamp_min_and_max_with_tensors_promote_like_torch(device):
    i = mt.tensor([1, 5, -3], device=device)
    bound = mt.tensor([0.5, 2.0, 0.0], device=device)
    assert mt.clamp_min(i, 2).dtype is mt.int64
    np.testing.assert_array_equal(mt.clamp_min(i, 2).cpu().numpy(), [2, 5, 2])
    np.testing.assert_allclose(mt.clamp_max(i, bound).cpu().numpy(), [0.5, 2.0, -3.0])
    assert mt.clamp_max(i, 2.5).dtype is mt.float32


# ---- in place ---------------------------------------------------------------------------------
INPLACE = ["sinh", "cosh", "tan", "asin", "acos", "atan", "asinh", "atanh", "arcsin", "arctan",
           "log2", "log10", "exp2", "erfc", "lgamma", "digamma", "frac", "sgn", "deg2rad",
           "rad2deg", "nan_to_num", "fix"]


@pytest.mark.parametrize("name", INPLACE)
def test_inplace_unary(name, device):
    values = [0.25, -0.5, 0.75]
    t = mt.tensor(values, device=device)
    ref = torch.tensor(values)
    assert getattr(t, name + "_")() is t
    _assert_like_torch(t, getattr(ref, name + "_")(), mt.float32)


def test_inplace_binary_and_errors(device):
    t = mt.tensor([0.5, -1.0, 2.0], device=device)
    other = mt.tensor([2.0, 0.5, -1.0], device=device)
    ref, ref_other = torch.tensor([0.5, -1.0, 2.0]), torch.tensor([2.0, 0.5, -1.0])
    for name, args, torch_args in (("hypot", (other,), (ref_other,)),
                                   ("copysign", (other,), (ref_other,)),
                                   ("xlogy", (3.0,), (3.0,)),
                                   ("heaviside", (other,), (ref_other,)),
                                   ("clamp_min", (0.0,), (0.0,)),
                                   ("clamp_max", (other,), (ref_other,)),
                                   ("acosh", (), ())):
        _assert_like_torch(getattr(t, name + "_")(*args), getattr(ref, name + "_")(*torch_args),
                           mt.float32)
    _same_error(lambda: mt.tensor([1, 2]).sinh_(), lambda: torch.tensor([1, 2]).sinh_(),
                RuntimeError)
    _same_error(lambda: mt.tensor([1, 2]).frac_(), lambda: torch.tensor([1, 2]).frac_(),
                NotImplementedError)


@pytest.mark.parametrize("name", ["tan", "exp2", "frac"])
def test_inplace_gradient_flows_through_the_new_op(name):
    a = mt.tensor([0.3, 0.6], dtype=mt.float64, requires_grad=True)
    x = torch.tensor([0.3, 0.6], dtype=torch.float64, requires_grad=True)
    getattr(a * 2, name + "_")().sum().backward()
    getattr(x * 2, name + "_")().sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), x.grad.numpy())
