"""The CPU elementwise kernels (minitorch/_cpu/unary.pyx, binary.pyx, fused.pyx: unary, binary,
where, softmax rows) against numpy."""
import math

import numpy as np
import pytest

from minitorch._cpu import binary, softmax_backward_last, softmax_last, unary, where
from minitorch.opcodes import BinaryOp, UnaryOp

U, B = UnaryOp, BinaryOp
FLOATS = [np.float32, np.float64]
SPECIALS = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 1e-30, -1e-30, 1e30, -1e30,
            88.5, 89.0, -87.5, -103.0, -104.0, 709.0, 710.0, -745.0, 20.0, -20.0,
            np.inf, -np.inf, np.nan]


def rtol_of(dtype):
    return 2e-6 if dtype == np.float32 else 1e-13


def data(n, dtype, seed=0, low=-3.0, high=3.0):
    """n values of dtype; 0/1 for bool (uint8), small integers for int64."""
    rng = np.random.default_rng(seed)
    if dtype == np.uint8:
        return rng.integers(0, 2, n).astype(np.uint8)
    if dtype == np.int64:
        return rng.integers(-50, 50, n).astype(np.int64)
    return rng.uniform(low, high, n).astype(dtype)


def view_of(v, base):
    """(strides, offset) in elements of the numpy view v into the 1-D buffer base."""
    item = v.itemsize
    offset = (v.__array_interface__["data"][0] - base.__array_interface__["data"][0]) // item
    return tuple(s // item for s in v.strides), offset


def assert_close(got, want, dtype, rtol=None, atol=0.0):
    if np.issubdtype(np.dtype(dtype), np.floating):
        np.testing.assert_allclose(got, want, rtol=rtol or rtol_of(dtype), atol=atol,
                                   equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)


# ---------------------------------------------------------------------------------------------
# unary
# ---------------------------------------------------------------------------------------------

def erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def torch_sign(x):
    """torch.sign: NaN -> 0 (numpy's sign returns NaN)."""
    return np.where(np.isnan(x), 0, np.sign(x))


def sigmoid(x):
    with np.errstate(over="ignore"):
        return np.where(x >= 0, 1 / (1 + np.exp(-np.abs(x))),
                        np.exp(-np.abs(x)) / (1 + np.exp(-np.abs(x))))


FLOAT_UNARY = {
    U.IDENTITY: lambda x: x, U.NEG: np.negative, U.ABS: np.abs, U.SIGN: torch_sign,
    U.EXP: np.exp, U.LOG: np.log, U.LOG1P: np.log1p, U.EXPM1: np.expm1, U.SQRT: np.sqrt,
    U.RSQRT: lambda x: 1 / np.sqrt(x), U.SIN: np.sin, U.COS: np.cos, U.TANH: np.tanh,
    U.SIGMOID: sigmoid, U.RELU: lambda x: np.where(x < 0, 0, x), U.RECIPROCAL: lambda x: 1 / x,
    U.SQUARE: np.square, U.FLOOR: np.floor, U.CEIL: np.ceil, U.ROUND: np.round,
    U.TRUNC: np.trunc, U.ERF: erf,
}
PREDICATES = {U.ISNAN: np.isnan, U.ISINF: np.isinf, U.ISFINITE: np.isfinite,
              U.LOGICAL_NOT: np.logical_not}
INT_UNARY = {U.IDENTITY: lambda x: x, U.NEG: np.negative, U.ABS: np.abs, U.SIGN: np.sign,
             U.SQUARE: np.square, U.RELU: lambda x: np.maximum(x, 0)}


def run_unary(op, x, out_dtype=None):
    out = np.empty(x.shape, out_dtype or x.dtype)
    unary(op, x, out)
    return out


def reference_unary(op, x):
    """Computed in float64 from the same inputs, then rounded to x's dtype."""
    with np.errstate(all="ignore"):
        return FLOAT_UNARY[op](x.astype(np.float64)).astype(x.dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", list(FLOAT_UNARY))
def test_unary_float(op, dtype):
    low = 0.01 if op in (U.LOG, U.SQRT, U.RSQRT) else -3.0
    for n in (0, 1, 7, 33, 67, 100_003):
        x = data(n, dtype, seed=n, low=low)
        assert_close(run_unary(op, x), reference_unary(op, x), dtype, atol=1e-7)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", list(FLOAT_UNARY))
def test_unary_float_special_values(op, dtype):
    x = np.array(SPECIALS + [np.finfo(dtype).tiny / 4, np.finfo(dtype).max], dtype)
    with np.errstate(all="ignore"):
        assert_close(run_unary(op, x), reference_unary(op, x), dtype,
                     atol=float(np.finfo(dtype).smallest_subnormal) * 2)


@pytest.mark.parametrize("dtype", FLOATS)
def test_exp_sigmoid_tanh_sweep(dtype):
    """The vectorized exp and its users over the whole useful range, subnormals included."""
    x = np.linspace(-800 if dtype == np.float64 else -110, 800 if dtype == np.float64 else 95,
                    200_001).astype(dtype)
    tiny = float(np.finfo(dtype).smallest_subnormal) * 2
    for op in (U.EXP, U.SIGMOID, U.TANH):
        assert_close(run_unary(op, x), reference_unary(op, x), dtype, atol=tiny)


@pytest.mark.parametrize("dtype", FLOATS)
def test_log_sweep(dtype):
    """The vectorized log from the smallest subnormal to the largest finite value."""
    info = np.finfo(dtype)
    x = np.geomspace(float(info.smallest_subnormal), float(info.max) / 4, 200_001).astype(dtype)
    x = np.concatenate([x, np.linspace(0.5, 2, 10_001, dtype=dtype)])
    assert_close(run_unary(U.LOG, x), reference_unary(U.LOG, x), dtype)


def test_sigmoid_limits_exact_and_quiet():
    x = np.array([-1e4, -200, -110, 110, 200, 1e4, -np.inf, np.inf], np.float32)
    with np.errstate(all="raise"):
        got = run_unary(U.SIGMOID, x)
    np.testing.assert_array_equal(got, [0, 0, 0, 1, 1, 1, 0, 1])


def test_round_half_to_even_sign_nan_relu_nan():
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.5], np.float32)
    np.testing.assert_array_equal(run_unary(U.ROUND, x), [0, 2, 2, -0, -2, -2, 4])
    special = np.array([np.nan, -0.0, 0.0, -np.inf, np.inf], np.float64)
    np.testing.assert_array_equal(run_unary(U.SIGN, special), [0, 0, 0, -1, 1])
    assert np.isnan(run_unary(U.RELU, np.array([np.nan], np.float32))[0])


@pytest.mark.parametrize("op", list(INT_UNARY))
def test_unary_int64(op):
    x = np.concatenate([data(1000, np.int64), [0, 1, -1, 2**40, -(2**40)]]).astype(np.int64)
    np.testing.assert_array_equal(run_unary(op, x), INT_UNARY[op](x))


@pytest.mark.parametrize("dtype", FLOATS + [np.int64, np.uint8])
@pytest.mark.parametrize("op", list(PREDICATES))
def test_predicates(op, dtype):
    x = data(70_001, dtype)
    if dtype in FLOATS:
        x[:6] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0]
    got = run_unary(op, x, np.uint8)
    np.testing.assert_array_equal(got, PREDICATES[op](x).astype(np.uint8))


def test_unary_errors():
    x = np.ones(4, np.float32)
    with pytest.raises(TypeError, match="EXP.*int64"):
        unary(U.EXP, np.ones(4, np.int64), np.empty(4, np.int64))
    with pytest.raises(TypeError, match="NEG.*bool"):
        unary(U.NEG, np.ones(4, np.uint8), np.empty(4, np.uint8))
    with pytest.raises(TypeError):
        unary(U.EXP, x, np.empty(4, np.float64))           # out dtype must match
    with pytest.raises(TypeError):
        unary(U.ISNAN, x, np.empty(4, np.float32))         # predicates write bool
    with pytest.raises(ValueError):
        unary(U.EXP, x, np.empty(3, np.float32))
    with pytest.raises(TypeError):
        unary(U.EXP, np.ones(4, np.int32), np.empty(4, np.int32))
    with pytest.raises(ValueError):
        unary(U.EXP, np.ones(8, np.float32)[::2], np.empty(4, np.float32))


def test_unary_in_place():
    x = data(100_000, np.float32)
    want = np.exp(x.astype(np.float64)).astype(np.float32)
    unary(U.EXP, x, x)
    assert_close(x, want, np.float32)


# ---------------------------------------------------------------------------------------------
# binary
# ---------------------------------------------------------------------------------------------

def where_relu_bw(a, b):
    """torch's threshold_backward: g unless the output is <= 0 (a NaN output passes g)."""
    return np.where(b <= 0, 0, a).astype(a.dtype)


ARITH = {
    B.ADD: np.add, B.SUB: np.subtract, B.MUL: np.multiply, B.DIV: np.true_divide,
    B.POW: np.power, B.MAXIMUM: np.maximum, B.MINIMUM: np.minimum,
    B.FLOOR_DIVIDE: np.floor_divide, B.REMAINDER: np.remainder, B.ATAN2: np.arctan2,
    B.RELU_BACKWARD: where_relu_bw, B.TANH_BACKWARD: lambda a, b: a * (1 - b * b),
    B.SIGMOID_BACKWARD: lambda a, b: a * b * (1 - b),
    B.LEAKY_RELU: lambda a, b: np.where(a > 0, a, a * b),
    B.LEAKY_RELU_SLOPE: lambda a, b: np.where(a > 0, 1, b),
}
COMPARE = {B.EQ: np.equal, B.NE: np.not_equal, B.LT: np.less, B.LE: np.less_equal,
           B.GT: np.greater, B.GE: np.greater_equal, B.LOGICAL_AND: np.logical_and,
           B.LOGICAL_OR: np.logical_or, B.LOGICAL_XOR: np.logical_xor}
INT_ARITH = [B.ADD, B.SUB, B.MUL, B.MAXIMUM, B.MINIMUM, B.FLOOR_DIVIDE, B.REMAINDER, B.POW]
BOOL_ARITH = {B.ADD: np.logical_or, B.MUL: np.logical_and, B.MAXIMUM: np.maximum,
              B.MINIMUM: np.minimum}


def run_binary(op, xv, xbase, yv, ybase, out_dtype):
    """Our binary over numpy views (broadcast to a common shape) of 1-D buffers."""
    shape = np.broadcast_shapes(xv.shape, yv.shape)
    xv, yv = np.broadcast_to(xv, shape), np.broadcast_to(yv, shape)
    xs, xo = view_of(xv, xbase)
    ys, yo = view_of(yv, ybase)
    out = np.empty(shape, out_dtype)
    binary(op, xbase, ybase, out.reshape(-1), shape, xs, xo, ys, yo)
    return out


def reference_binary(op, x, y):
    dtype = x.dtype
    with np.errstate(all="ignore"):
        if op in COMPARE:
            return COMPARE[op](x, y).astype(np.uint8)
        if dtype == np.uint8:
            return BOOL_ARITH[op](x.astype(bool), y.astype(bool)).astype(np.uint8)
        if dtype == np.float32 and op in (B.DIV, B.POW, B.ATAN2):   # one rounding either way
            return ARITH[op](x.astype(np.float64), y.astype(np.float64)).astype(dtype)
        return np.asarray(ARITH[op](x, y)).astype(dtype)


def operands(op, dtype, n, seed):
    x, y = data(n, dtype, seed), data(n, dtype, seed + 1)
    if dtype == np.int64 and op in (B.FLOOR_DIVIDE, B.REMAINDER):
        y[y == 0] = 7
    if dtype == np.int64 and op == B.POW:
        x, y = x % 9 - 4, np.abs(y) % 7
    if dtype in FLOATS and op == B.POW:
        x = np.abs(x)
    return x, y


def check_layouts(op, dtype, out_dtype):
    """Contiguous, transposed, negative-stride, broadcast on either side, 0-d, size 0, odd
    sizes, and one big enough for the parallel path."""
    rtol = 1e-5 if dtype == np.float32 else None
    cases = []
    for n in list(range(1, 68, 3)) + [50_000]:
        x, y = operands(op, dtype, n, n)
        cases.append((x, x, y, y))
    x, y = operands(op, dtype, 6 * 35, 1)
    cases.append((x.reshape(6, 35).T, x, y.reshape(35, 6), y))             # transposed
    cases.append((x[::-1], x, y[::-1], y))                                 # negative strides
    cases.append((x.reshape(6, 35)[:, ::-3], x, y[:12].reshape(1, 12), y))  # broadcast + neg
    x, y = operands(op, dtype, 300 * 257, 2)
    cases.append((x.reshape(300, 257), x, y[:257], y))                     # row broadcast
    cases.append((x[:300].reshape(300, 1), x, y.reshape(300, 257), y))     # column broadcast
    cases.append((x.reshape(257, 300)[::-1, ::2], x, y[:1].reshape(()), y))  # scalar operand
    cases.append((x.reshape(300, 257)[:3, None], x, y[:257 * 4].reshape(257, 4).T[None], y))
    cases.append((x[:1].reshape(()), x, y[:1].reshape(()), y))            # 0-d
    cases.append((x[:0], x, y[:0], y))                                      # size 0
    cases.append((x[:0].reshape(0, 5), x, y[:5], y))
    for xv, xb, yv, yb in cases:
        got = run_binary(op, xv, xb, yv, yb, out_dtype)
        want = reference_binary(op, *np.broadcast_arrays(xv, yv))
        assert_close(got, want, out_dtype, rtol=rtol, atol=fma_atol(op, dtype))


def fma_atol(op, dtype):
    """gcc contracts a*(1-b*b) into FMAs: one rounding fewer than numpy, so allow for the
    cancellation in 1 - b*b."""
    if op in (B.TANH_BACKWARD, B.SIGMOID_BACKWARD):
        return 1e-5 if dtype == np.float32 else 1e-13
    return 0.0


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", list(ARITH))
def test_binary_float(op, dtype):
    check_layouts(op, dtype, dtype)


@pytest.mark.parametrize("op", INT_ARITH)
def test_binary_int64(op):
    check_layouts(op, np.int64, np.int64)


@pytest.mark.parametrize("op", list(BOOL_ARITH))
def test_binary_bool(op):
    check_layouts(op, np.uint8, np.uint8)


@pytest.mark.parametrize("dtype", FLOATS + [np.int64, np.uint8])
@pytest.mark.parametrize("op", list(COMPARE))
def test_binary_compare(op, dtype):
    check_layouts(op, dtype, np.uint8)


@pytest.mark.parametrize("dtype", FLOATS)
def test_binary_special_values(dtype):
    v = np.array(SPECIALS, dtype)
    x, y = np.repeat(v, len(v)), np.tile(v, len(v))
    for op in list(ARITH) + list(COMPARE):
        out_dtype = np.uint8 if op in COMPARE else dtype
        got = run_binary(op, x, x, y, y, out_dtype)
        want = reference_binary(op, x, y)
        if op in (B.FLOOR_DIVIDE, B.REMAINDER, B.POW, B.ATAN2):
            ok = np.isfinite(want) & (np.abs(want) < 1e25)   # libm corner cases aside
            got, want = got[ok], want[ok]
        assert_close(got, want, out_dtype, rtol=1e-5 if dtype == np.float32 else None,
                     atol=fma_atol(op, dtype))


def test_maximum_minimum_propagate_nan():
    x = np.array([np.nan, 1.0, np.nan, -np.inf], np.float32)
    y = np.array([1.0, np.nan, np.nan, np.inf], np.float32)
    for op, f in ((B.MAXIMUM, np.maximum), (B.MINIMUM, np.minimum)):
        np.testing.assert_array_equal(run_binary(op, x, x, y, y, np.float32), f(x, y))


def test_int_remainder_floor_divide_signs():
    x = np.array([7, -7, 7, -7, 0, -(2**63), -(2**63)], np.int64)
    y = np.array([2, 2, -2, -2, 3, -1, 1], np.int64)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(run_binary(B.REMAINDER, x, x, y, y, np.int64),
                                      np.remainder(x, y))
        np.testing.assert_array_equal(run_binary(B.FLOOR_DIVIDE, x, x, y, y, np.int64),
                                      np.floor_divide(x, y))


def test_float_remainder_floor_divide_signs():
    x = np.array([7.5, -7.5, 7.5, -7.5, 0.0, 1.0, 6.0], np.float64)
    y = np.array([2.0, 2.0, -2.0, -2.0, 3.0, 0.0, -3.0], np.float64)
    with np.errstate(all="ignore"):
        for op, f in ((B.REMAINDER, np.remainder), (B.FLOOR_DIVIDE, np.floor_divide)):
            np.testing.assert_array_equal(run_binary(op, x, x, y, y, np.float64), f(x, y))


@pytest.mark.parametrize("op", [B.FLOOR_DIVIDE, B.REMAINDER])
def test_int_division_by_zero(op):
    x = np.arange(100_000, dtype=np.int64)
    y = np.ones(100_000, np.int64)
    y[77_777] = 0
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        run_binary(op, x, x, y, y, np.int64)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        run_binary(op, x[:5], x, y[77_777:77_778].reshape(()), y, np.int64)


def test_int_negative_power():
    x = np.array([2, 3], np.int64)
    y = np.array([1, -1], np.int64)
    with pytest.raises(RuntimeError, match="Integers to negative integer powers are not allowed."):
        run_binary(B.POW, x, x, y, y, np.int64)


def test_binary_errors():
    f, i, b = np.ones(4, np.float32), np.ones(4, np.int64), np.ones(4, np.uint8)
    with pytest.raises(TypeError, match="DIV.*int64"):
        binary(B.DIV, i, i, np.empty(4, np.int64), (4,), (1,), 0, (1,), 0)
    with pytest.raises(TypeError, match="ATAN2.*int64"):
        binary(B.ATAN2, i, i, np.empty(4, np.int64), (4,), (1,), 0, (1,), 0)
    with pytest.raises(TypeError, match="SUB.*bool"):
        binary(B.SUB, b, b, np.empty(4, np.uint8), (4,), (1,), 0, (1,), 0)
    with pytest.raises(TypeError, match="dtype"):
        binary(B.ADD, f, i, np.empty(4, np.float32), (4,), (1,), 0, (1,), 0)
    with pytest.raises(TypeError):
        binary(B.LT, f, f, np.empty(4, np.float32), (4,), (1,), 0, (1,), 0)  # bool out
    with pytest.raises(TypeError):
        binary(B.ADD, f, f, np.empty(4, np.uint8), (4,), (1,), 0, (1,), 0)
    with pytest.raises(ValueError):
        binary(B.ADD, f, f, np.empty(3, np.float32), (4,), (1,), 0, (1,), 0)
    with pytest.raises(IndexError):
        binary(B.ADD, f, f, np.empty(4, np.float32), (4,), (1,), 1, (1,), 0)
    with pytest.raises(IndexError):
        binary(B.ADD, f, f, np.empty(4, np.float32), (4,), (1,), 0, (-1,), 2)
    with pytest.raises(IndexError):
        binary(B.ADD, f, f, np.empty(8, np.float32), (2, 4), (4, 1), 0, (0, 1), 0)
    with pytest.raises(ValueError):
        binary(B.ADD, f, f, np.empty(4, np.float32), (4,), (1, 1), 0, (1,), 0)
    # a size-0 result is a no-op whatever the (unused) offsets say
    binary(B.ADD, f, f, np.empty(0, np.float32), (0, 3), (1, 1), 99, (1, 1), 99)


def test_binary_in_place_broadcast():
    x = data(300 * 257, np.float32)
    y = data(257, np.float32, seed=5)
    want = x.reshape(300, 257) + y
    binary(B.ADD, x, y, x, (300, 257), (257, 1), 0, (0, 1), 0)
    np.testing.assert_array_equal(x.reshape(300, 257), want)


# ---------------------------------------------------------------------------------------------
# where
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOATS + [np.int64, np.uint8])
def test_where(dtype):
    rng = np.random.default_rng(3)
    cbase = rng.integers(0, 2, 300 * 257).astype(np.uint8)
    x, y = data(300 * 257, dtype, 1), data(300 * 257, dtype, 2)
    if dtype in FLOATS:
        x[::7] = np.nan
    cases = [
        (cbase.reshape(300, 257), x.reshape(300, 257), y.reshape(300, 257)),
        (cbase[:257], x.reshape(300, 257), y[:1].reshape(())),
        (cbase[:300].reshape(300, 1), x[:257], y.reshape(300, 257)),
        (cbase.reshape(257, 300).T[::-1], x[:257], y[:300].reshape(300, 1)),
        (cbase[:1].reshape(()), x[:30].reshape(5, 6), y[:6]),
        (cbase[:35], x[::-1][:35], y[::2][:35]),
        (cbase[:0], x[:0], y[:0]),
        (cbase[:1].reshape(()), x[:1].reshape(()), y[:1].reshape(())),
    ]
    for cv, xv, yv in cases:
        shape = np.broadcast_shapes(cv.shape, xv.shape, yv.shape)
        cv, xv, yv = (np.broadcast_to(v, shape) for v in (cv, xv, yv))
        out = np.empty(shape, dtype)
        where(cbase, x, y, out.reshape(-1), shape, *view_of(cv, cbase), *view_of(xv, x),
              *view_of(yv, y))
        np.testing.assert_array_equal(out, np.where(cv.astype(bool), xv, yv))


def test_where_errors():
    c, f = np.ones(4, np.uint8), np.ones(4, np.float32)
    args = ((4,), (1,), 0, (1,), 0, (1,), 0)
    with pytest.raises(TypeError):
        where(f, f, f, np.empty(4, np.float32), *args)
    with pytest.raises(TypeError):
        where(c, f, np.ones(4, np.float64), np.empty(4, np.float32), *args)
    with pytest.raises(IndexError):
        where(c, f, f, np.empty(4, np.float32), (4,), (1,), 1, (1,), 0, (1,), 0)
    with pytest.raises(ValueError):
        where(c, f, f, np.empty(2, np.float32), *args)


# ---- softmax rows ------------------------------------------------------------------------------
def softmax_ref(x, log):
    x = x.astype(np.float64)
    shifted = x - x.max(-1, keepdims=True)
    total = np.exp(shifted).sum(-1, keepdims=True)
    return shifted - np.log(total) if log else np.exp(shifted) / total


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("shape", [(128, 10), (1, 1), (3, 1000), (4, 33), (2, 1043),
                                   (5000, 9)])   # last: threads
def test_softmax_rows_match_numpy(dtype, log, shape):
    m, n = shape
    x = data(m * n, dtype, seed=3, low=-30, high=30)
    out = np.full(m * n, np.nan, dtype)
    softmax_last(x, out, n, log)
    expected = softmax_ref(x.reshape(m, n), log)
    np.testing.assert_allclose(out.reshape(m, n), expected, rtol=10 * rtol_of(dtype),
                               atol=10 * rtol_of(dtype))
    g = data(m * n, dtype, seed=4)
    grad = np.full(m * n, np.nan, dtype)
    softmax_backward_last(g, out, grad, n, log)
    y, g64 = expected, g.reshape(m, n).astype(np.float64)
    ref = (g64 - np.exp(y) * g64.sum(-1, keepdims=True) if log
           else (g64 - (g64 * y).sum(-1, keepdims=True)) * y)
    np.testing.assert_allclose(grad.reshape(m, n), ref, rtol=50 * rtol_of(dtype),
                               atol=50 * rtol_of(dtype))


@pytest.mark.parametrize("log", [False, True])
def test_softmax_rows_special_values(log):
    """As torch: a NaN, an all -inf row or a +inf (inf - inf) makes the row NaN; huge values
    don't overflow."""
    x = np.array([[1.0, np.nan, 2.0], [-np.inf, -np.inf, -np.inf], [np.inf, 0.0, 1.0],
                  [1e30, 1e30, -1e30]], np.float32)
    out = np.empty(x.size, np.float32)
    softmax_last(x.ravel(), out, 3, log)
    out = out.reshape(4, 3)
    assert np.isnan(out[:3]).all()
    expected = [math.log(0.5), math.log(0.5), -2e30] if log else [0.5, 0.5, 0.0]
    np.testing.assert_allclose(out[3], expected, rtol=1e-6)


@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("where", [0, 5, 37])     # first, in a full group of lanes, in the tail
def test_softmax_rows_nan_anywhere_in_a_long_row(log, where):
    x = np.linspace(-3, 3, 2 * 40).astype(np.float32)
    x[40 + where] = np.nan
    out = np.empty_like(x)
    softmax_last(x, out, 40, log)
    assert np.isnan(out[40:]).all() and not np.isnan(out[:40]).any()


def test_softmax_rows_reject_bad_arguments():
    with pytest.raises(TypeError, match="float32 or float64"):
        softmax_last(np.zeros(6, np.int64), np.zeros(6, np.int64), 3)
    with pytest.raises(TypeError, match="dtype of the input"):
        softmax_last(np.zeros(6, np.float32), np.zeros(6, np.float64), 3)
    with pytest.raises(ValueError, match="rows of length 4"):
        softmax_last(np.zeros(6, np.float32), np.zeros(6, np.float32), 4)
    with pytest.raises(ValueError, match="out has 5 elements"):
        softmax_backward_last(np.zeros(6), np.zeros(6), np.zeros(5), 3)
