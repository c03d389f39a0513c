"""Elementwise ops: forward against numpy and gradients against finite differences over
contiguous, permuted, stepped, broadcast, 0-d and empty inputs; torch's dtype promotion, integer
semantics, errors and in-place rules pinned."""
import math

import numpy as np
import pytest

import minitorch as mt
from minitorch.autograd import gradcheck, gradgradcheck

# ---- inputs -----------------------------------------------------------------------------------
# Each layout: (base shape, view). The view works on numpy arrays and on tensors alike, so the
# reference sees exactly the elements the op sees.
LAYOUTS = {
    "contiguous": ((2, 3), lambda x: x),
    "permuted": ((3, 2), lambda x: x.transpose(1, 0)),
    "stepped": ((2, 6), lambda x: x[:, ::2]),
    "0-d": ((), lambda x: x),
    "empty": ((0, 3), lambda x: x),
}
# Binary layouts: (a base, a view, b base, b view); broadcasting on either or both sides.
PAIRS = {
    "contiguous": ((2, 3), None, (2, 3), None),
    "permuted": ((3, 2), LAYOUTS["permuted"][1], (2, 3), None),
    "stepped": ((2, 3), None, (2, 6), LAYOUTS["stepped"][1]),
    "broadcast_left": ((3,), None, (2, 3), None),
    "broadcast_right": ((2, 3), None, (2, 1), None),
    "broadcast_both": ((2, 1), None, (1, 3), None),
    "0-d": ((), None, (2, 3), None),
    "both 0-d": ((), None, (), None),
    "empty": ((0, 3), None, (3,), None),
}


def _values(domain, shape, rng):
    """Inputs inside an op's domain and away from its kinks (finite differences need both)."""
    size = rng.uniform(0.3, 1.5, shape)
    signs = np.where(rng.random(shape) < 0.5, -1.0, 1.0)
    if domain == "any":
        return rng.standard_normal(shape)
    if domain == "pos":
        return rng.uniform(0.5, 2.0, shape)
    if domain == "nonzero":
        return signs * size
    if domain == "unit":
        return rng.uniform(-0.8, 0.8, shape)
    if domain == "offgrid":          # away from integers and half-integers: rounding is smooth
        return signs * (rng.integers(0, 3, shape) + rng.uniform(0.1, 0.4, shape))
    raise ValueError(domain)


def _view(x, view):
    return x if view is None else view(x)


def _make(values, view, dtype, device, requires_grad=False):
    """(tensor after the layout's view, the same values as a numpy array)."""
    base = mt.tensor(values, dtype=dtype, device=device, requires_grad=requires_grad)
    return base, _view(values.astype(dtype.numpy_dtype), view)


def _check_close(result, expected, dtype):
    expected = np.asarray(expected)
    assert tuple(result.shape) == expected.shape
    tol = dict(rtol=1e-5, atol=1e-6) if dtype is mt.float32 else dict(rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(result.cpu().numpy().astype(np.float64), expected, **tol)


def _erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


# ---- unary ------------------------------------------------------------------------------------
UNARY = [
    pytest.param(mt.neg, np.negative, "any", id="neg"),
    pytest.param(mt.abs, np.abs, "nonzero", id="abs"),
    pytest.param(mt.sign, np.sign, "nonzero", id="sign"),
    pytest.param(mt.exp, np.exp, "any", id="exp"),
    pytest.param(mt.log, np.log, "pos", id="log"),
    pytest.param(mt.log1p, np.log1p, "unit", id="log1p"),
    pytest.param(mt.expm1, np.expm1, "any", id="expm1"),
    pytest.param(mt.sqrt, np.sqrt, "pos", id="sqrt"),
    pytest.param(mt.rsqrt, lambda x: 1 / np.sqrt(x), "pos", id="rsqrt"),
    pytest.param(mt.sin, np.sin, "any", id="sin"),
    pytest.param(mt.cos, np.cos, "any", id="cos"),
    pytest.param(mt.tanh, np.tanh, "any", id="tanh"),
    pytest.param(mt.sigmoid, _sigmoid, "any", id="sigmoid"),
    pytest.param(mt.relu, lambda x: np.maximum(x, 0), "nonzero", id="relu"),
    pytest.param(mt.reciprocal, np.reciprocal, "nonzero", id="reciprocal"),
    pytest.param(mt.square, np.square, "any", id="square"),
    pytest.param(mt.erf, _erf, "any", id="erf"),
    pytest.param(mt.floor, np.floor, "offgrid", id="floor"),
    pytest.param(mt.ceil, np.ceil, "offgrid", id="ceil"),
    pytest.param(mt.round, np.round, "offgrid", id="round"),
    pytest.param(lambda x: mt.round(x, decimals=1), lambda x: np.round(x, 1), "offgrid",
                 id="round_decimals"),
    pytest.param(mt.trunc, np.trunc, "offgrid", id="trunc"),
    pytest.param(lambda x: mt.clamp(x, -0.5, 0.7), lambda x: np.clip(x, -0.5, 0.7), "any",
                 id="clamp_scalars"),
    pytest.param(lambda x: mt.clamp(x, min=0.2), lambda x: np.maximum(x, 0.2), "any",
                 id="clamp_min"),
    pytest.param(lambda x: mt.clamp(x, max=0.2), lambda x: np.minimum(x, 0.2), "any",
                 id="clamp_max"),
    pytest.param(lambda x: x ** 3, lambda x: x ** 3, "any", id="pow_scalar"),
    pytest.param(lambda x: x ** 2, lambda x: x ** 2, "any", id="pow_2"),
    pytest.param(lambda x: x ** 0.5, np.sqrt, "pos", id="pow_half"),
    pytest.param(lambda x: x ** -1.5, lambda x: x ** -1.5, "pos", id="pow_negative"),
    pytest.param(lambda x: 2.5 ** x, lambda x: 2.5 ** x, "any", id="scalar_pow_tensor"),
    pytest.param(lambda x: x * 2.5 - 1, lambda x: x * 2.5 - 1, "any", id="scalar_arith"),
    pytest.param(lambda x: 3 / x, lambda x: 3 / x, "nonzero", id="scalar_div_tensor"),
]


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("op,reference,domain", UNARY)
def test_unary_forward(op, reference, domain, layout, device, rng):
    shape, view = LAYOUTS[layout]
    values = _values(domain, shape, rng)
    for dtype in (mt.float32, mt.float64):
        t, x = _make(values, view, dtype, device)
        result = op(view(t))
        assert result.dtype is dtype
        _check_close(result, reference(x.astype(np.float64)), dtype)


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("op,reference,domain", UNARY)
def test_unary_gradient(op, reference, domain, layout, rng):
    shape, view = LAYOUTS[layout]
    t = mt.tensor(_values(domain, shape, rng), dtype=mt.float64, requires_grad=True)
    assert gradcheck(lambda a: op(view(a)), (t,))


# ---- binary -----------------------------------------------------------------------------------
def _torch_div(mode):
    return {None: np.divide, "trunc": lambda a, b: np.trunc(a / b), "floor": np.floor_divide}[mode]


BINARY = [
    pytest.param(mt.add, np.add, "any", "any", id="add"),
    pytest.param(lambda a, b: mt.add(a, b, alpha=2.5), lambda a, b: a + 2.5 * b, "any", "any",
                 id="add_alpha"),
    pytest.param(mt.sub, np.subtract, "any", "any", id="sub"),
    pytest.param(lambda a, b: mt.sub(a, b, alpha=2), lambda a, b: a - 2 * b, "any", "any",
                 id="sub_alpha"),
    pytest.param(mt.mul, np.multiply, "any", "any", id="mul"),
    pytest.param(mt.div, np.divide, "any", "nonzero", id="div"),
    pytest.param(lambda a, b: mt.div(a, b, rounding_mode="trunc"), _torch_div("trunc"),
                 "offgrid", "nonzero", id="div_trunc"),
    pytest.param(lambda a, b: mt.div(a, b, rounding_mode="floor"), _torch_div("floor"),
                 "offgrid", "nonzero", id="div_floor"),
    pytest.param(mt.pow, np.power, "pos", "any", id="pow"),
    pytest.param(mt.maximum, np.maximum, "any", "any", id="maximum"),
    pytest.param(mt.minimum, np.minimum, "any", "any", id="minimum"),
    pytest.param(mt.fmax, np.fmax, "any", "any", id="fmax"),
    pytest.param(mt.fmin, np.fmin, "any", "any", id="fmin"),
    pytest.param(mt.atan2, np.arctan2, "any", "nonzero", id="atan2"),
    pytest.param(mt.remainder, np.remainder, "offgrid", "nonzero", id="remainder"),
    pytest.param(mt.fmod, np.fmod, "offgrid", "nonzero", id="fmod"),
    pytest.param(mt.floor_divide, np.floor_divide, "offgrid", "nonzero", id="floor_divide"),
    pytest.param(lambda a, b: mt.clamp(a, min=b), np.maximum, "any", "any", id="clamp_min_tensor"),
    pytest.param(lambda a, b: mt.clamp(a, max=b), np.minimum, "any", "any", id="clamp_max_tensor"),
    pytest.param(lambda a, b: mt.lerp(a, b, 0.3), lambda a, b: a + 0.3 * (b - a), "any", "any",
                 id="lerp_scalar_weight"),
    pytest.param(lambda a, b: mt.lerp(a, b, 0.8), lambda a, b: a + 0.8 * (b - a), "any", "any",
                 id="lerp_high_weight"),
    pytest.param(lambda a, b: mt.where(a > 0, a, b), lambda a, b: np.where(a > 0, a, b), "nonzero",
                 "any", id="where"),
]


def _pair(layout, domains, dtype, device, rng, requires_grad=False):
    a_shape, a_view, b_shape, b_view = PAIRS[layout]
    a_values, b_values = _values(domains[0], a_shape, rng), _values(domains[1], b_shape, rng)
    a = mt.tensor(a_values, dtype=dtype, device=device, requires_grad=requires_grad)
    b = mt.tensor(b_values, dtype=dtype, device=device, requires_grad=requires_grad)
    return (a, b), (_view(a_values, a_view), _view(b_values, b_view)), (a_view, b_view)


@pytest.mark.parametrize("layout", list(PAIRS))
@pytest.mark.parametrize("op,reference,domain_a,domain_b", BINARY)
def test_binary_forward(op, reference, domain_a, domain_b, layout, device, rng):
    for dtype in (mt.float32, mt.float64):
        (a, b), (x, y), (a_view, b_view) = _pair(layout, (domain_a, domain_b), dtype, device,
                                                 rng)
        x, y = x.astype(dtype.numpy_dtype), y.astype(dtype.numpy_dtype)
        result = op(_view(a, a_view), _view(b, b_view))
        assert result.dtype is dtype
        _check_close(result, reference(x.astype(np.float64), y.astype(np.float64)), dtype)


@pytest.mark.parametrize("layout", list(PAIRS))
@pytest.mark.parametrize("op,reference,domain_a,domain_b", BINARY)
def test_binary_gradient(op, reference, domain_a, domain_b, layout, rng):
    (a, b), _, (a_view, b_view) = _pair(layout, (domain_a, domain_b), mt.float64, "cpu", rng,
                                        requires_grad=True)
    assert gradcheck(lambda p, q: op(_view(p, a_view), _view(q, b_view)), (a, b))


@pytest.mark.parametrize("layout", ["contiguous", "permuted", "broadcast_both", "0-d", "empty"])
@pytest.mark.parametrize("op,reference", [
    pytest.param(lambda a, b, w: mt.lerp(a, b, w), lambda a, b, w: a + w * (b - a), id="lerp"),
    pytest.param(lambda a, lo, hi: mt.clamp(a, lo, hi - lo.abs() - 0.1),
                 lambda a, lo, hi: np.minimum(np.maximum(a, lo), hi - np.abs(lo) - 0.1),
                 id="clamp_tensors"),
])
def test_ternary_forward_and_gradient(op, reference, layout, device, rng):
    (a, b), (x, y), (a_view, b_view) = _pair(layout, ("any", "any"), mt.float64, device, rng)
    w_values = rng.uniform(-0.5, 1.5, (3,))
    w = mt.tensor(w_values, dtype=mt.float64, device=device)
    _check_close(op(_view(a, a_view), _view(b, b_view), w), reference(x, y, w_values),
                 mt.float64)
    if device == "cpu":
        for t in (a, b, w):
            t.requires_grad_()
        assert gradcheck(lambda p, q, r: op(_view(p, a_view), _view(q, b_view), r), (a, b, w))


@pytest.mark.parametrize("op", [
    pytest.param(lambda a, b: a ** b, id="pow_tensor_tensor"),
    pytest.param(lambda a, b: a ** 3, id="pow_tensor_scalar"),
    pytest.param(lambda a, b: 1.5 ** b, id="pow_scalar_tensor"),
    pytest.param(lambda a, b: mt.tanh(a * b), id="tanh"),
    pytest.param(lambda a, b: mt.sigmoid(a * b), id="sigmoid"),
    pytest.param(lambda a, b: mt.sigmoid(a - b), id="sigmoid_of_difference"),
    pytest.param(lambda a, b: mt.relu(a) * b, id="relu"),
    pytest.param(lambda a, b: mt.relu(a * b), id="relu_of_product"),
    pytest.param(lambda a, b: a * b * a, id="mul"),
    pytest.param(lambda a, b: a / b, id="div"),
    pytest.param(lambda a, b: mt.exp(a) * b, id="exp"),
    pytest.param(lambda a, b: mt.log(a) + mt.sqrt(b.abs()), id="log_sqrt"),
])
def test_second_derivatives(op, rng):
    a = mt.tensor(rng.uniform(0.5, 2.0, (2, 3)), dtype=mt.float64, requires_grad=True)
    b = mt.tensor(rng.uniform(0.5, 2.0, (3,)) * np.array([1, -1, 1]), dtype=mt.float64,
                  requires_grad=True)
    assert gradgradcheck(op, (a, b))


# ---- comparisons and predicates (bool results) ------------------------------------------------
@pytest.mark.parametrize("layout", list(PAIRS))
@pytest.mark.parametrize("op,reference", [
    pytest.param(mt.eq, np.equal, id="eq"),
    pytest.param(mt.ne, np.not_equal, id="ne"),
    pytest.param(mt.lt, np.less, id="lt"),
    pytest.param(mt.le, np.less_equal, id="le"),
    pytest.param(mt.gt, np.greater, id="gt"),
    pytest.param(mt.ge, np.greater_equal, id="ge"),
    pytest.param(mt.logical_and, np.logical_and, id="logical_and"),
    pytest.param(mt.logical_or, np.logical_or, id="logical_or"),
    pytest.param(mt.logical_xor, np.logical_xor, id="logical_xor"),
    pytest.param(mt.isclose, np.isclose, id="isclose"),
    pytest.param(lambda a, b: a == b.round(), lambda a, b: a == np.round(b), id="eq_operator"),
])
def test_comparisons(op, reference, layout, device, rng):
    a_shape, a_view, b_shape, b_view = PAIRS[layout]
    # small integers stored as float so that equality happens often
    x = rng.integers(-2, 3, a_shape).astype(np.float64)
    y = rng.integers(-2, 3, b_shape).astype(np.float64)
    a, b = mt.tensor(x, device=device), mt.tensor(y, device=device)
    result = op(_view(a, a_view), _view(b, b_view))
    assert result.dtype is mt.bool
    np.testing.assert_array_equal(result.cpu().numpy(), reference(_view(x, a_view),
                                                                  _view(y, b_view)))


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("op,reference", [
    pytest.param(mt.isnan, np.isnan, id="isnan"),
    pytest.param(mt.isinf, np.isinf, id="isinf"),
    pytest.param(mt.isfinite, np.isfinite, id="isfinite"),
    pytest.param(mt.logical_not, np.logical_not, id="logical_not"),
])
def test_predicates(op, reference, layout, device, rng):
    shape, view = LAYOUTS[layout]
    x = rng.choice(np.array([0.0, 1.5, -2.0, np.nan, np.inf, -np.inf]), shape)
    result = op(view(mt.tensor(x, device=device)))
    assert result.dtype is mt.bool
    np.testing.assert_array_equal(result.cpu().numpy(), reference(view(x)))


def test_predicates_on_integers(device):
    x = mt.tensor([0, 3, -1], device=device)
    assert mt.isnan(x).tolist() == [False] * 3 and mt.isfinite(x).tolist() == [True] * 3
    assert mt.logical_not(x).tolist() == [True, False, False]


def test_isclose_allclose_equal(device):
    a = mt.tensor([1.0, float("inf"), float("nan"), 1.0, -float("inf")], device=device)
    b = mt.tensor([1.0 + 1e-6, float("inf"), float("nan"), 1.1, float("inf")], device=device)
    assert mt.isclose(a, b).tolist() == [True, True, False, False, False]
    assert mt.isclose(a, b, equal_nan=True).tolist() == [True, True, True, False, False]
    assert mt.isclose(a, b, rtol=0.2).tolist() == [True, True, False, True, False]
    assert mt.isclose(a, b, rtol=0, atol=0).tolist() == [False, True, False, False, False]
    assert mt.isclose(mt.tensor([1, 2]), mt.tensor([1, 3])).tolist() == [True, False]
    assert mt.isclose(mt.tensor([True]), mt.tensor([False])).tolist() == [False]
    assert not mt.allclose(a, b) and mt.allclose(a[:2], b[:2])
    assert mt.allclose(a[:0], b[:0]) and a[:2].allclose(b[:2])
    assert mt.equal(mt.tensor([1.0, 2.0]), mt.tensor([1, 2])) is True
    assert mt.equal(mt.tensor([1.0, 2.0]), mt.tensor([1.0, 2.0, 3.0])) is False
    assert mt.equal(mt.tensor(1.0), mt.tensor([1.0])) is False
    assert mt.equal(mt.tensor([float("nan")]), mt.tensor([float("nan")])) is False
    assert mt.equal(mt.zeros(0, 2), mt.zeros(0, 2)) is True


def test_isclose_errors():
    with pytest.raises(RuntimeError, match="^Float did not match Long$"):
        mt.isclose(mt.tensor([1.0]), mt.tensor([1]))
    with pytest.raises(RuntimeError, match="^Float did not match Double$"):
        mt.allclose(mt.tensor([1.0]), mt.tensor([1.0], dtype=mt.float64))
    with pytest.raises(RuntimeError, match="rtol must be greater than or equal to zero, but got"):
        mt.isclose(mt.tensor([1.0]), mt.tensor([1.0]), rtol=-1)
    with pytest.raises(RuntimeError, match="atol must be greater than or equal to zero, but got"):
        mt.isclose(mt.tensor([1.0]), mt.tensor([1.0]), atol=-1)


# ---- dtypes: promotion and integer semantics --------------------------------------------------
@pytest.mark.parametrize("fn,expected,dtype", [
    (lambda: mt.tensor([1, 2]) / mt.tensor([2, 4]), [0.5, 0.5], mt.float32),
    (lambda: mt.tensor([3]) / 2, [1.5], mt.float32),
    (lambda: mt.tensor([1, 2]) + 2.5, [3.5, 4.5], mt.float32),
    (lambda: mt.tensor([1, 2]) + mt.tensor(2.5, dtype=mt.float64), [3.5, 4.5], mt.float64),
    (lambda: mt.tensor([1.0]) + mt.tensor(2.5, dtype=mt.float64), [3.5], mt.float32),
    (lambda: mt.tensor([1.0]) + mt.tensor([2.5], dtype=mt.float64), [3.5], mt.float64),
    (lambda: mt.tensor([1, 2]) * 3, [3, 6], mt.int64),
    (lambda: mt.tensor([True, False]) + mt.tensor([True, True]), [True, True], mt.bool),
    (lambda: mt.tensor([True, False]) * mt.tensor([True, True]), [True, False], mt.bool),
    (lambda: mt.tensor([True, False]) * 3, [3, 0], mt.int64),
    (lambda: mt.tensor([True]) + 1.5, [2.5], mt.float32),
    (lambda: mt.tensor([True]) / mt.tensor([True]), [1.0], mt.float32),
    (lambda: mt.tensor([2, 3]) ** 2, [4, 9], mt.int64),
    (lambda: mt.tensor([4]) ** 0.5, [2.0], mt.float32),
    (lambda: mt.tensor([True, False]) ** 2, [1, 0], mt.int64),
    (lambda: mt.tensor([2, 3, 1, -1, -1, 0]) ** mt.tensor([-1, -2, -3, -3, -2, -1]),
     [0, 0, 1, -1, 1, 0], mt.int64),
    (lambda: mt.tensor([2, 3]) ** mt.tensor(-1), [0, 0], mt.int64),
    (lambda: 2 ** mt.tensor([-1, 2]), [0, 4], mt.int64),
    (lambda: mt.tensor([2, 4]) ** -1.0, [0.5, 0.25], mt.float32),
    (lambda: mt.tensor([-7, 7, -7, 7]) // mt.tensor([2, 2, -2, -2]), [-4, 3, 3, -4], mt.int64),
    (lambda: mt.tensor([-7, 7, -7, 7]) % mt.tensor([2, 2, -2, -2]), [1, 1, -1, -1], mt.int64),
    (lambda: -7 // mt.tensor([2, -2]), [-4, 3], mt.int64),
    (lambda: 7 % mt.tensor([-3, 3]), [-2, 1], mt.int64),
    (lambda: mt.tensor([-7.5, 7.5]) % -2, [-1.5, -0.5], mt.float32),
    (lambda: mt.tensor([-7.5, 7.5]) // -2, [3.0, -4.0], mt.float32),
    (lambda: mt.fmod(mt.tensor([-7, 7, -7, 7]), mt.tensor([2, 2, -2, -2])), [-1, 1, -1, 1],
     mt.int64),
    (lambda: mt.fmod(mt.tensor([-7.5, 7.5]), 2), [-1.5, 1.5], mt.float32),
    (lambda: mt.div(mt.tensor([-7, 7, -6]), 2, rounding_mode="trunc"), [-3, 3, -3], mt.int64),
    (lambda: mt.div(mt.tensor([-7, 7]), 2, rounding_mode="floor"), [-4, 3], mt.int64),
    (lambda: mt.div(mt.tensor([-7.0, 7.0]), 2, rounding_mode="trunc"), [-3.0, 3.0], mt.float32),
    (lambda: mt.tensor([1, 2]) / 0, [math.inf, math.inf], mt.float32),
    (lambda: mt.atan2(mt.tensor([1]), mt.tensor([1])), [math.pi / 4], mt.float32),
    (lambda: mt.maximum(mt.tensor([1, 5]), mt.tensor([3.5, 2.0])), [3.5, 5.0], mt.float32),
    (lambda: mt.fmax(mt.tensor([1.0, math.nan]), mt.tensor([math.nan, 2.0])), [1.0, 2.0],
     mt.float32),
    (lambda: mt.maximum(mt.tensor([1.0, math.nan]), mt.tensor([math.nan, 2.0])),
     [math.nan, math.nan], mt.float32),
    (lambda: mt.clamp(mt.tensor([1, 5, 9]), 2.5, 7), [2.5, 5.0, 7.0], mt.float32),
    (lambda: mt.clamp(mt.tensor([1, 5, 9]), 2, 7), [2, 5, 7], mt.int64),
    (lambda: mt.clamp(mt.tensor([1.0, 5.0, 9.0]), 7, 2), [2.0, 2.0, 2.0], mt.float32),
    (lambda: mt.clamp(mt.tensor([1.0, math.nan]), 2, 7), [2.0, math.nan], mt.float32),
    (lambda: mt.clip(mt.tensor([1, 5]), max=mt.tensor([0.5, 9.0])), [0.5, 5.0], mt.float32),
    (lambda: mt.where(mt.tensor([True, False]), 1, 2.5), [1.0, 2.5], mt.float32),
    (lambda: mt.where(mt.tensor([True, False]), 1, 2), [1, 2], mt.int64),
    (lambda: mt.where(mt.tensor([True, False]), mt.tensor([1, 2]), 2.5), [1.0, 2.5], mt.float32),
    (lambda: mt.where(mt.tensor([True, False]), mt.tensor([1.0, 2.0]),
                      mt.tensor([3.0, 4.0], dtype=mt.float64)), [1.0, 4.0], mt.float64),
    (lambda: mt.exp(mt.tensor([0, 1])), [1.0, math.e], mt.float32),
    (lambda: mt.sqrt(mt.tensor([True, False])), [1.0, 0.0], mt.float32),
    (lambda: mt.sigmoid(mt.tensor([0])), [0.5], mt.float32),
    (lambda: mt.abs(mt.tensor([-3, 2])), [3, 2], mt.int64),
    (lambda: mt.sign(mt.tensor([-3, 0, 2])), [-1, 0, 1], mt.int64),
    (lambda: mt.sign(mt.tensor([True, False])), [True, False], mt.bool),
    (lambda: mt.square(mt.tensor([-3, 2])), [9, 4], mt.int64),
    (lambda: mt.square(mt.tensor([True, False])), [1, 0], mt.int64),
    (lambda: mt.relu(mt.tensor([-3, 2])), [0, 2], mt.int64),
    (lambda: -mt.tensor([-3, 2]), [3, -2], mt.int64),
    (lambda: mt.floor(mt.tensor([-3, 2])), [-3, 2], mt.int64),
    (lambda: mt.round(mt.tensor([0.5, 1.5, 2.5, -0.5])), [0.0, 2.0, 2.0, -0.0], mt.float32),
    (lambda: mt.round(mt.tensor([1.25, 2.35]), decimals=1), [1.2, 2.4], mt.float32),
    (lambda: mt.round(mt.tensor([1250.0, 2351.0]), decimals=-2), [1200.0, 2400.0], mt.float32),
    (lambda: mt.float_power(mt.tensor([2]), 2), [4.0], mt.float64),
    (lambda: mt.true_divide(mt.tensor([3]), 2), [1.5], mt.float32),
])
def test_result_values_and_dtypes(fn, expected, dtype):
    result = fn()
    assert result.dtype is dtype
    np.testing.assert_array_equal(result.numpy(), np.array(expected, dtype=dtype.numpy_dtype))


@pytest.mark.parametrize("fn,error,message", [
    (lambda: mt.tensor([2, 3]) ** -1, RuntimeError,
     "Integers to negative integer powers are not allowed."),
    (lambda: mt.tensor([True]) - mt.tensor([False]), RuntimeError,
     "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
     "`logical_xor()` operator instead."),
    (lambda: mt.tensor([True]) - 1, RuntimeError,
     "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to "
     "invert a mask, use the `~` or `logical_not()` operator instead."),
    (lambda: 1.0 - mt.tensor([True]), RuntimeError,
     "Subtraction, the `-` operator, with a bool tensor is not supported."),
    (lambda: mt.tensor([1]) - True, RuntimeError,
     "Subtraction, the `-` operator, with a bool tensor is not supported."),
    (lambda: -mt.tensor([True]), RuntimeError,
     "Negation, the `-` operator, on a bool tensor is not supported."),
    (lambda: mt.tensor([1, 2]) // 0, RuntimeError, "ZeroDivisionError"),
    (lambda: mt.tensor([1, 2]) % 0, RuntimeError, "ZeroDivisionError"),
    (lambda: mt.tensor([True]) // mt.tensor([True]), NotImplementedError,
     "\"div_floor_cpu\" not implemented for 'Bool'"),
    (lambda: mt.tensor([True]) % mt.tensor([True]), NotImplementedError,
     "\"remainder_cpu\" not implemented for 'Bool'"),
    (lambda: mt.fmod(mt.tensor([True]), mt.tensor([True])), NotImplementedError,
     "\"fmod_cpu\" not implemented for 'Bool'"),
    (lambda: mt.div(mt.tensor([True]), mt.tensor([True]), rounding_mode="trunc"),
     NotImplementedError, "\"div_trunc_cpu\" not implemented for 'Bool'"),
    (lambda: mt.tensor([True]) ** mt.tensor([True]), NotImplementedError,
     "\"pow\" not implemented for 'Bool'"),
    (lambda: mt.abs(mt.tensor([True])), NotImplementedError,
     "\"abs_cpu\" not implemented for 'Bool'"),
    (lambda: mt.floor(mt.tensor([True])), NotImplementedError,
     "\"floor_vml_cpu\" not implemented for 'Bool'"),
    (lambda: mt.relu(mt.tensor([True])), RuntimeError, "Boolean inputs not supported for relu"),
    (lambda: mt.div(mt.tensor([1.0]), 2, rounding_mode="round"), RuntimeError,
     "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found 'round'"),
    (lambda: mt.add(mt.tensor([1]), mt.tensor([2]), alpha=1.5), RuntimeError,
     "For integral input tensors, argument alpha must not be a floating point number."),
    (lambda: mt.clamp(mt.tensor([1.0])), RuntimeError,
     "torch.clamp: At least one of 'min' or 'max' must not be None"),
    (lambda: mt.where(mt.tensor([1, 0]), 1.0, 2.0), RuntimeError,
     "where expected condition to be a boolean tensor, but got a tensor with dtype Long"),
    (lambda: mt.lerp(mt.tensor([1, 2]), mt.tensor([3, 4]), 0.5), NotImplementedError,
     "\"lerp_kernel_scalar\" not implemented for 'Long'"),
    (lambda: mt.lerp(mt.tensor([1.0]), mt.tensor([3.0], dtype=mt.float64), 0.5), RuntimeError,
     "expected dtype float for `end` but got dtype double"),
    (lambda: mt.tensor([1.0, 2.0]) + mt.tensor([1.0, 2.0, 3.0]), RuntimeError,
     "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0"),
    (lambda: mt.exp(2.0), TypeError,
     "exp(): argument 'input' (position 1) must be Tensor, not float"),
    (lambda: mt.tensor([1.0]) + "a", TypeError, None),
])
def test_errors(fn, error, message):
    with pytest.raises(error) as info:
        fn()
    if message is not None:
        assert str(info.value).startswith(message)


def test_operators_with_foreign_types():
    t = mt.tensor([1.0])
    assert (t == None) is False and (t != None) is True     # noqa: E711 (torch's behaviour)
    assert (t + np.float64(1.5)).tolist() == [2.5] and (np.int64(2) * t).tolist() == [2.0]


def test_rounding_results_are_copies_for_integers():
    x = mt.tensor([1, 2])
    for op in (mt.floor, mt.ceil, mt.round, mt.trunc, mt.sign):
        y = op(x)
        y.add_(10)
        assert x.tolist() == [1, 2]


# ---- gradient conventions ---------------------------------------------------------------------
def _grad(fn, *values):
    inputs = [mt.tensor(v, dtype=mt.float64, requires_grad=True) for v in values]
    fn(*inputs).sum().backward()
    return [t.grad.tolist() if t.grad is not None else None for t in inputs]


def test_gradient_conventions_at_kinks():
    # torch: pow's exponent gets 0 where the base is 0 (not nan); a zero exponent gives 0
    assert _grad(lambda a, b: a ** b, [0.0, 0.0, 2.0], [2.0, 0.0, 0.0]) == \
        [[0.0, 0.0, 0.0], [0.0, 0.0, math.log(2.0)]]
    assert _grad(lambda a: a ** 0, [0.0, 3.0]) == [[0.0, 0.0]]
    assert _grad(lambda a: 0.0 ** a, [1.0, 2.0]) == [[0.0, 0.0]]
    assert _grad(mt.abs, [0.0, -2.0]) == [[0.0, -1.0]]
    assert _grad(mt.relu, [0.0, 2.0]) == [[0.0, 1.0]]
    # ties share the gradient evenly
    assert _grad(mt.maximum, [1.0, 2.0], [1.0, 1.0]) == [[0.5, 1.0], [0.5, 0.0]]
    # clamp passes the gradient at the bounds themselves
    assert _grad(lambda a: mt.clamp(a, 0.0, 1.0), [0.0, 0.5, 1.0, 2.0]) == \
        [[1.0, 1.0, 1.0, 0.0]]
    assert _grad(lambda a: mt.floor_divide(a, 2.0), [3.0]) == [[0.0]]
    assert _grad(lambda a, b: mt.fmod(a, b), [-7.5], [2.0]) == [[1.0], [3.0]]


def test_broadcast_gradient_shapes():
    a = mt.tensor(np.ones((2, 1)), requires_grad=True)
    b = mt.tensor(np.ones(3), requires_grad=True)
    (a * b + a - b / 2).sum().backward()
    assert a.grad.shape == (2, 1) and b.grad.shape == (3,)
    assert a.grad.tolist() == [[6.0], [6.0]] and b.grad.tolist() == [1.0, 1.0, 1.0]


def test_grad_fn_names():
    x = mt.tensor([1.0, 2.0], requires_grad=True)
    assert (x ** 3).grad_fn.name() == "PowBackward0"
    assert (x ** x).grad_fn.name() == "PowBackward1"
    assert x.double().grad_fn.name() == "ToCopyBackward0"
    assert mt.fmod(x, 1.5).grad_fn.name() == "FmodBackward0"
    assert (x + x).grad_fn.name() == "AddBackward0" and (-x).grad_fn.name() == "NegBackward0"
    assert mt.where(x > 1, x, 0.0).grad_fn.name() == "WhereBackward0"


def test_integer_results_never_require_grad():
    x = mt.tensor([1.5, -2.5], requires_grad=True)
    assert not (x > 0).requires_grad and (x > 0).grad_fn is None
    assert not mt.isnan(x).requires_grad


# ---- in-place variants ------------------------------------------------------------------------
@pytest.mark.parametrize("method,args,kwargs,expected", [
    ("add_", (1.5,), {}, [2.5, -0.5, 4.5]),
    ("add_", (mt.tensor([2.0, 1.0, 2.0]),), {"alpha": 2}, [5.0, 0.0, 7.0]),
    ("sub_", (1.0,), {}, [0.0, -3.0, 2.0]),
    ("mul_", (2.0,), {}, [2.0, -4.0, 6.0]),
    ("div_", (2.0,), {}, [0.5, -1.0, 1.5]),
    ("pow_", (2,), {}, [1.0, 4.0, 9.0]),
    ("clamp_", (-1.0, 2.0), {}, [1.0, -1.0, 2.0]),
    ("clamp_", (), {"max": mt.tensor([0.0, 0.0, 5.0])}, [0.0, -2.0, 3.0]),
    ("clip_", (0.0,), {}, [1.0, 0.0, 3.0]),
    ("neg_", (), {}, [-1.0, 2.0, -3.0]),
    ("abs_", (), {}, [1.0, 2.0, 3.0]),
    ("exp_", (), {}, list(np.exp([1.0, -2.0, 3.0]).astype(np.float32))),
    ("relu_", (), {}, [1.0, 0.0, 3.0]),
    ("floor_", (), {}, [1.0, -2.0, 3.0]),
    ("lerp_", (mt.tensor([3.0, 3.0, 3.0]), 0.5), {}, [2.0, 0.5, 3.0]),
])
def test_inplace_methods(method, args, kwargs, expected, device):
    x = mt.tensor([1.0, -2.0, 3.0], device=device)
    args = tuple(a.to(device) if isinstance(a, mt.Tensor) else a for a in args)
    kwargs = {k: v.to(device) if isinstance(v, mt.Tensor) else v for k, v in kwargs.items()}
    version = x._version_counter
    result = getattr(x, method)(*args, **kwargs)
    assert result is x and x._version_counter > version
    np.testing.assert_allclose(x.cpu().numpy(), np.array(expected, np.float32), rtol=1e-6)


def test_inplace_operators_keep_identity(device):
    x = mt.tensor([1.0, 2.0], device=device)
    y = x
    x += 1
    x *= 3
    x -= mt.tensor([1.0, 1.0], device=device)
    x /= 2
    x **= 2
    assert x is y and x.tolist() == [6.25, 16.0]


def test_inplace_writes_through_views(device):
    base = mt.zeros(2, 3, device=device)
    base[:, 1].add_(5.0)
    base.t()[2].mul_(0.0).add_(1.0)
    assert base.tolist() == [[0.0, 5.0, 1.0], [0.0, 5.0, 1.0]]


def test_integer_inplace_arithmetic_keeps_int64_and_wraps(device):
    """int64 add_/sub_/mul_ with int operands write into self directly (one kernel); results
    wrap as torch's, and a float operand or division still raises torch's error."""
    x = mt.tensor([2 ** 62, 1, -3], device=device)
    version = x._version_counter
    assert x.mul_(4) is x and x.tolist() == [0, 4, -12] and x._version_counter > version
    x.add_(mt.tensor([1, 1, 1], device=device), alpha=3).sub_(2)
    assert x.dtype is mt.int64 and x.tolist() == [1, 5, -11]
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Long"):
        x.add_(0.5)
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Long"):
        x.div_(2)
    assert x.tolist() == [1, 5, -11]


def test_inplace_dtype_error_message():
    with pytest.raises(RuntimeError, match="^result type Float can't be cast to the desired "
                                           "output type Long$"):
        mt.tensor([1, 2]).add_(1.5)


def test_inplace_errors_leave_tensor_unchanged():
    x = mt.tensor([1, 2])
    for call in (lambda: x.add_(1.5), lambda: x.div_(2), lambda: x.clamp_(0.5),
                 lambda: x.mul_(mt.tensor([0.5]))):
        with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
            call()
    with pytest.raises(RuntimeError, match=r"output with shape \[2\] doesn't match the broadcast "
                                           r"shape \[2, 2\]"):
        x.add_(mt.tensor([[1], [2]]))
    assert x.tolist() == [1, 2] and x._version_counter == 0
    assert x.add_(True).tolist() == [2, 3]       # bool and int results cast into int64


def test_inplace_on_leaf_requiring_grad():
    w = mt.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in "
                                           "an in-place operation."):
        w.add_(1.0)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        w *= 2
    with mt.no_grad():
        w.mul_(3.0)
    assert w.tolist() == [3.0, 6.0] and w.requires_grad and w.grad_fn is None


def test_inplace_is_recorded_in_the_graph():
    x = mt.tensor([1.0, -2.0, 3.0], requires_grad=True)
    y = x * 1.0
    y.mul_(2.0)
    y.clamp_(min=0.0)
    y.add_(x)
    y.sum().backward()
    assert x.grad.tolist() == [3.0, 1.0, 3.0]


def test_inplace_modification_of_saved_tensor_is_detected():
    x = mt.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()             # exp saves its result, as torch does
    y.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_inplace_after_ops_that_do_not_save_their_result():
    a = mt.tensor([1.0, 2.0], requires_grad=True)
    b = mt.tensor([4.0, 8.0], requires_grad=True)
    y = a / b               # div saves its inputs only (torch does too), so this stays legal
    y.add_(1.0)
    z = a * 2.0
    z.mul_(3.0)             # mul by a constant saves nothing of the output
    (y.sum() + z.sum()).backward()
    assert a.grad.tolist() == [6.25, 6.125]
    assert b.grad.tolist() == [-1.0 / 16, -2.0 / 64]


# ---- the scalar cache -------------------------------------------------------------------------
def test_scalar_constants_never_leak(device):
    x = mt.tensor([1.0, 2.0], device=device)
    for make in (lambda: x * 2, lambda: x + 0, lambda: 2 ** x / 1,
                 lambda: mt.where(mt.tensor(True, device=device), 2.0, 3.0),
                 lambda: mt.clamp(x, 5.0), lambda: x ** 1, lambda: x - 0.0):
        first = make()
        expected = first.tolist()
        first.add_(100.0)
        first.mul_(-1.0)
        assert make().tolist() == expected
    assert x.tolist() == [1.0, 2.0]


def test_negative_zero_constant_is_not_positive_zero(device):
    x = mt.tensor([1.0], device=device)
    assert (1 / (x * 0.0)).tolist() == [math.inf]
    assert (1 / (x * -0.0)).tolist() == [-math.inf]
    assert (1 / (x * 0.0)).tolist() == [math.inf]


# ---- against torch ----------------------------------------------------------------------------
@pytest.mark.parametrize("expression", [
    "a + b", "a - 2 * b", "a * b", "a / b", "a // b", "a % b", "a ** 2", "abs(a) ** b",
    "2 ** b", "-a", "abs(a)", "M.fmod(a, b)", "M.remainder(a, -1.5)", "M.atan2(a, b)",
    "M.maximum(a, b)", "M.fmin(a, b)", "M.clamp(a, -0.5, 0.5)", "M.lerp(a, b, 0.25)",
    "M.where(a > b, a, b)", "M.div(a, b, rounding_mode='trunc')", "M.round(a, decimals=2)",
    "M.sigmoid(a) * M.tanh(b)", "M.erf(a) + M.expm1(b)", "M.isclose(a, b, rtol=0.5)",
    "(a > 0) & (b < 0)", "M.sign(a) * M.relu(b)", "ai // bi", "ai % bi", "ai / bi",
    "M.fmod(ai, bi)", "M.div(ai, bi, rounding_mode='trunc')", "ai ** 2 + ai * 3 - 1",
    "M.clamp(ai, 0.5)", "ai + 2.5", "bb * 3", "bb + bb",
])
def test_matches_torch(expression, rng):
    torch = pytest.importorskip("torch")
    x = rng.standard_normal((3, 4)) * 3
    y = rng.standard_normal((4,)) * 3
    xi = rng.integers(-9, 10, (3, 4))
    yi = rng.integers(1, 5, (4,)) * np.array([1, -1, 1, -1])
    yb = rng.random(4) < 0.5

    def evaluate(module):
        env = {"M": module, "a": module.tensor(x), "b": module.tensor(y),
               "ai": module.tensor(xi), "bi": module.tensor(yi), "bb": module.tensor(yb)}
        return eval(expression, {"abs": abs}, env)

    ours, theirs = evaluate(mt), evaluate(torch)
    assert ours.dtype.name == str(theirs.dtype).replace("torch.", "")
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12, atol=1e-12)


def test_gradients_match_torch(rng):
    torch = pytest.importorskip("torch")
    x = rng.standard_normal((3, 4))
    y = rng.uniform(0.5, 2.0, (4,))

    def grads(module):
        a = module.tensor(x, requires_grad=True)
        b = module.tensor(y, requires_grad=True)
        out = (a * b).sum() + (a / b).sum() + (abs(a) ** b).sum() + module.atan2(a, b).sum() \
            + module.lerp(a, b, 0.3).sum() + module.fmod(a, b).sum() + module.tanh(a).sum() \
            + module.maximum(a, b).sum() + module.clamp(a, -0.5, 0.5).sum()
        out.backward()
        return a.grad.numpy(), b.grad.numpy()

    for ours, theirs in zip(grads(mt), grads(torch)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10)


# ---- bitwise ops ------------------------------------------------------------------------------
BIT_INT = np.array([1, -8, 5, -5, 7, 0, -1, 2 ** 62], dtype=np.int64)
BIT_SHIFT = np.array([65, 1, 63, 64, -1, 3, 70, 1], dtype=np.int64)


def shift_ref(x, s, left):
    """torch's shifts: by a negative amount or by 64 or more, 0 for << and the sign for >>."""
    inside = (s >= 0) & (s < 64)
    safe = np.where(inside, s, 0).astype(np.uint64)
    if left:
        return np.where(inside, (x.astype(np.uint64) << safe).astype(np.int64), 0)
    return np.where(inside, x >> safe.astype(np.int64), x >> 63)


@pytest.mark.parametrize("name,ref", [
    ("bitwise_and", lambda x, y: x & y), ("bitwise_or", lambda x, y: x | y),
    ("bitwise_xor", lambda x, y: x ^ y),
    ("bitwise_left_shift", lambda x, y: shift_ref(x, y, True)),
    ("bitwise_right_shift", lambda x, y: shift_ref(x, y, False))])
def test_bitwise_int64_matches_reference(name, ref, device):
    x, y = mt.tensor(BIT_INT, device=device), mt.tensor(BIT_SHIFT, device=device)
    out = getattr(mt, name)(x, y)
    assert out.dtype is mt.int64
    np.testing.assert_array_equal(out.cpu().numpy(), ref(BIT_INT, BIT_SHIFT))
    # broadcast against a column, and a Python scalar on either side
    col = mt.tensor(BIT_INT[:3].reshape(3, 1), device=device)
    np.testing.assert_array_equal(getattr(mt, name)(col, x).cpu().numpy(),
                                  ref(BIT_INT[:3].reshape(3, 1), BIT_INT))
    np.testing.assert_array_equal(getattr(mt, name)(x, 3).cpu().numpy(), ref(BIT_INT, 3))
    np.testing.assert_array_equal(getattr(mt, name)(3, y).cpu().numpy(),
                                  ref(np.int64(3), BIT_SHIFT))


def test_bitwise_operators_dtypes_and_errors_match_torch(device):
    """&, |, ^, ~, <<, >> (and in place) on int64, uint8 (wrapping) and bool (logical), mixed
    dtypes promoted as torch does; floats raise torch's errors."""
    torch = pytest.importorskip("torch")
    cases = [
        lambda m: m.tensor([1, -8, 5]) << m.tensor([65, 1, 63]),
        lambda m: m.tensor([200, 3], dtype=m.uint8) << 1,
        lambda m: m.tensor([200, 3], dtype=m.uint8) >> m.tensor([1, 9], dtype=m.uint8),
        lambda m: ~m.tensor([200, 3], dtype=m.uint8),
        lambda m: ~m.tensor([5, -1]),
        lambda m: ~m.tensor([True, False]),
        lambda m: m.tensor([200, 3], dtype=m.uint8) ^ 255,
        lambda m: m.tensor([200, 3], dtype=m.uint8) | m.tensor([1, 1]),
        lambda m: m.tensor([True, False]) & m.tensor([True, True]),
        lambda m: m.tensor([True, False]) & m.tensor([1, 2]),
        lambda m: m.tensor([True, False]) << 1,
        lambda m: 6 & m.tensor([3, 5]),
        lambda m: 3 << m.tensor([1, 2]),
    ]
    for case in cases:
        ours, theirs = case(mt), case(torch)
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    x = mt.tensor([6, 3], device=device)
    x &= 5
    x <<= 1
    x ^= mt.tensor([1, 1], device=device)
    assert x.cpu().tolist() == [9, 3]
    for bad, error in ((lambda m: m.tensor([1.0]) & m.tensor([1.0]), NotImplementedError),
                       (lambda m: m.tensor([1.0]) << 1, NotImplementedError),
                       (lambda m: m.bitwise_not(m.tensor([1.0])), NotImplementedError),
                       (lambda m: ~m.tensor([1.0]), TypeError)):
        with pytest.raises(error) as theirs:
            bad(torch)
        with pytest.raises(error) as ours:
            bad(mt)
        assert str(ours.value) == str(theirs.value)
