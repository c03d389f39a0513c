"""minitorch._cpu.reduce (reduce_last, scan_last) against numpy."""
import numpy as np
import pytest

from minitorch._cpu.reduce import reduce_last, scan_last
from minitorch.opcodes import ReduceOp

R = ReduceOp
NUMERIC = [np.float32, np.float64, np.int64]
REFERENCE = {R.SUM: np.sum, R.PROD: np.prod, R.MAX: np.max, R.MIN: np.min,
             R.ARGMAX: np.argmax, R.ARGMIN: np.argmin}
# (m, n, inner): rows, odd/1 lengths, small inners (lane folding), wide inners (column tiles),
# and shapes large enough for the parallel paths (many slabs, or one long slab split along n)
SHAPES = [(1, 1, 1), (3, 1, 1), (5, 7, 1), (4, 33, 1), (2, 67, 1), (3, 513, 1), (1, 100_003, 1),
          (700, 129, 1), (2, 5, 2), (3, 17, 3), (2, 100, 7), (4, 9, 15), (3, 31, 16), (2, 11, 67),
          (2, 40, 300), (1, 70_001, 3), (1, 3000, 40), (1, 99, 1000), (64, 40, 64), (5, 1, 9)]


def data(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if dtype == np.uint8:
        return rng.integers(0, 2, shape).astype(np.uint8)
    if dtype == np.int64:
        return rng.integers(-1000, 1000, shape).astype(np.int64)
    return rng.uniform(-1, 1, shape).astype(dtype)


def run_reduce(op, x, inner=1):
    """x is (m, n, inner) or (m, n); returns our result shaped (m, inner)."""
    m, n = x.shape[0], x.shape[1]
    out_dtype = np.int64 if op in (R.ARGMAX, R.ARGMIN) else x.dtype
    out = np.empty(m * inner, out_dtype)
    reduce_last(op, np.ascontiguousarray(x).reshape(-1), out, n, inner)
    return out.reshape(m, inner)


def check(op, x3):
    got = run_reduce(op, x3, x3.shape[2])
    want = REFERENCE[op](x3, axis=1)
    if op == R.PROD and x3.dtype != np.int64:
        np.testing.assert_allclose(got, want, rtol=1e-4 if x3.dtype == np.float32 else 1e-10)
    elif op == R.SUM and x3.dtype != np.int64:
        atol = 1e-5 * np.sqrt(x3.shape[1]) if x3.dtype == np.float32 else 1e-12 * x3.shape[1]
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=atol)
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", NUMERIC)
@pytest.mark.parametrize("op", list(R))
def test_reduce(op, dtype):
    for i, shape in enumerate(SHAPES):
        x = data(shape, dtype, seed=i)
        if op == R.PROD:
            x = (x % 3 + 1).astype(dtype) if dtype == np.int64 else (1 + x / 64).astype(dtype)
        check(op, x)


@pytest.mark.parametrize("op", [R.MAX, R.MIN])
def test_reduce_bool_any_all(op):
    for i, shape in enumerate(SHAPES):
        x = data(shape, np.uint8, seed=i)
        check(op, x)
        check(op, np.ones_like(x))
        check(op, np.zeros_like(x))


def test_ties_keep_first_index():
    x = np.zeros((3, 1000, 1), np.float32)
    x[0, [5, 700]] = 2.0
    x[1, [600, 999]] = -2.0
    x[2, :] = 1.0
    for inner in (1, 5):
        y = np.repeat(x, inner, axis=2)
        np.testing.assert_array_equal(run_reduce(R.ARGMAX, y, inner)[:, 0], [5, 0, 0])
        np.testing.assert_array_equal(run_reduce(R.ARGMIN, y, inner)[:, 0], [0, 600, 0])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("inner", [1, 3, 40])
def test_nan_handling(dtype, inner):
    """MAX/MIN propagate NaN; ARGMAX/ARGMIN point at the first NaN (torch semantics)."""
    n = 2000
    x = data((4, n, inner), dtype)
    x[0, 1500] = np.nan
    x[1, [3, 1200]] = np.nan
    x[2, 0] = np.nan
    for op in (R.MAX, R.MIN):
        got = run_reduce(op, x, inner)
        np.testing.assert_array_equal(got, REFERENCE[op](x, axis=1))
    for op in (R.ARGMAX, R.ARGMIN):
        got = run_reduce(op, x, inner)
        np.testing.assert_array_equal(got, REFERENCE[op](x, axis=1))   # numpy agrees here
    y = np.full((1, 100_000, 1), -np.inf, dtype)
    y[0, 77_000] = np.nan
    y[0, 90_000] = np.nan
    assert run_reduce(R.ARGMAX, y)[0, 0] == 77_000
    assert np.isnan(run_reduce(R.MAX, y)[0, 0])
    z = np.full((1, 100_000, 1), np.inf, dtype)
    assert run_reduce(R.ARGMAX, z)[0, 0] == 0
    assert run_reduce(R.ARGMIN, -z)[0, 0] == 0


def test_float32_sum_accuracy():
    """Pairwise summation: 10^7 uniform(0, 1) float32 values within 1e-6 of the exact sum."""
    x = np.random.default_rng(0).random(10**7, dtype=np.float32)
    exact = x.astype(np.float64).sum()
    for inner in (1, 2):
        out = np.empty(inner, np.float32)
        reduce_last(R.SUM, x, out, 10**7 // inner, inner)
        want = x.reshape(-1, inner).astype(np.float64).sum(axis=0)
        np.testing.assert_allclose(out, want, rtol=1e-6)
    out = np.empty(1000, np.float32)
    reduce_last(R.SUM, x, out, 10**4, 1000)
    want = x.reshape(10**4, 1000).astype(np.float64).sum(axis=0)
    np.testing.assert_allclose(out, want, rtol=1e-6)
    assert abs(float(np.float32(exact)) - exact) / exact < 1e-6


def test_int64_wraps():
    x = np.array([2**62, 2**62, 2**62, 1], np.int64)
    out = np.empty(1, np.int64)
    reduce_last(R.SUM, x, out, 4)
    with np.errstate(over="ignore"):
        assert out[0] == x.sum()
    reduce_last(R.PROD, np.array([2**32, 2**32, 3], np.int64), out, 3)
    assert out[0] == 0


def test_empty_axis():
    out = np.full(6, 7.0, np.float32)
    reduce_last(R.SUM, np.empty(0, np.float32), out, 0, 2)
    np.testing.assert_array_equal(out, 0)
    reduce_last(R.PROD, np.empty(0, np.float32), out, 0)
    np.testing.assert_array_equal(out, 1)
    iout = np.full(3, 7, np.int64)
    reduce_last(R.SUM, np.empty(0, np.int64), iout, 0)
    np.testing.assert_array_equal(iout, 0)
    for op in (R.MAX, R.MIN):
        with pytest.raises(ValueError, match="empty"):
            reduce_last(op, np.empty(0, np.float32), np.empty(2, np.float32), 0)
    with pytest.raises(ValueError, match="empty"):
        reduce_last(R.ARGMAX, np.empty(0, np.float32), np.empty(2, np.int64), 0)
    reduce_last(R.MAX, np.empty(0, np.float32), np.empty(0, np.float32), 5)   # m == 0
    reduce_last(R.MAX, np.empty(0, np.float32), np.empty(0, np.float32), 0)   # nothing at all


def test_reduce_errors():
    f = np.ones(12, np.float32)
    with pytest.raises(TypeError, match="SUM.*bool"):
        reduce_last(R.SUM, np.ones(4, np.uint8), np.empty(1, np.uint8), 4)
    with pytest.raises(TypeError, match="ARGMAX.*bool"):
        reduce_last(R.ARGMAX, np.ones(4, np.uint8), np.empty(1, np.int64), 4)
    with pytest.raises(TypeError):
        reduce_last(R.ARGMAX, f, np.empty(3, np.float32), 4)      # indices are int64
    with pytest.raises(TypeError):
        reduce_last(R.SUM, f, np.empty(3, np.float64), 4)
    with pytest.raises(TypeError):
        reduce_last(R.SUM, np.ones(4, np.int32), np.empty(1, np.int32), 4)
    with pytest.raises(ValueError):
        reduce_last(R.SUM, f, np.empty(2, np.float32), 4)         # out too small
    with pytest.raises(ValueError):
        reduce_last(R.SUM, f, np.empty(3, np.float32), 5)         # 12 is not a multiple of 5
    with pytest.raises(ValueError):
        reduce_last(R.SUM, f, np.empty(3, np.float32), -4)
    with pytest.raises(TypeError):
        reduce_last(9, f, np.empty(3, np.float32), 4)


# ---------------------------------------------------------------------------------------------
# scans
# ---------------------------------------------------------------------------------------------

SCAN_SHAPES = [(1, 1, 1), (4, 37, 1), (3, 5, 6), (2, 50, 67), (1, 100_000, 1), (300, 200, 1),
               (2, 300, 200), (1, 64, 2000), (0, 5, 3)]


@pytest.mark.parametrize("dtype", NUMERIC)
@pytest.mark.parametrize("op", [R.SUM, R.PROD])
def test_scan(op, dtype):
    for i, shape in enumerate(SCAN_SHAPES):
        x = data(shape, dtype, seed=i)
        if op == R.PROD:
            x = (x % 3 - 1).astype(dtype) if dtype == np.int64 else (1 + x / 64).astype(dtype)
        out = np.empty(x.size, dtype)
        scan_last(op, x.reshape(-1), out, shape[1], shape[2])
        want = (np.cumsum if op == R.SUM else np.cumprod)(x, axis=1)
        if dtype == np.int64:
            np.testing.assert_array_equal(out.reshape(shape), want)
        else:
            np.testing.assert_allclose(out.reshape(shape), want,
                                       rtol=1e-4 if dtype == np.float32 else 1e-10, atol=1e-3)


def test_scan_matches_numpy_order_exactly():
    x = data((3, 1000, 1), np.float32)
    out = np.empty(x.size, np.float32)
    scan_last(R.SUM, x.reshape(-1), out, 1000)
    np.testing.assert_array_equal(out.reshape(x.shape), np.cumsum(x, axis=1))


def test_scan_errors():
    f = np.ones(6, np.float32)
    with pytest.raises((TypeError, ValueError)):
        scan_last(R.MAX, f, np.empty(6, np.float32), 6)
    with pytest.raises(TypeError):
        scan_last(R.SUM, np.ones(6, np.uint8), np.empty(6, np.uint8), 6)
    with pytest.raises(TypeError):
        scan_last(R.SUM, f, np.empty(6, np.float64), 6)
    with pytest.raises(ValueError):
        scan_last(R.SUM, f, np.empty(5, np.float32), 6)
    with pytest.raises(ValueError):
        scan_last(R.SUM, f, np.empty(6, np.float32), 4)
    scan_last(R.SUM, np.empty(0, np.float32), np.empty(0, np.float32), 0)
