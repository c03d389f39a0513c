"""The GPU fast paths of issue 14 (float4 SGEMM, vectorised reductions, vectorised and 2-D
broadcast elementwise kernels) against numpy, run in the CUDA emulator (tests/cuda_emulator).

Shapes are small (the emulator runs every CUDA thread as a fiber) but cross tile boundaries:
m / n of 1, 127, 129, k not a multiple of the 16-deep slice, batches, transposed operands,
misaligned offsets that must fall back to the general kernels. Each test also checks which
kernel ran, so a fast path that silently stopped being taken fails here.
"""
import numpy as np
import pytest

import cuda_emulator
from minitorch._gpu import launch
from minitorch.opcodes import BinaryOp, ReduceOp

pytestmark = pytest.mark.skipif(not cuda_emulator.can_execute(),
                                reason="g++ is needed to run kernels in the emulator")


@pytest.fixture(scope="module")
def gpu():
    from minitorch._gpu.backend import GpuBackend
    return GpuBackend(cuda_emulator.cupy_module(), 0)


def launched(gpu):
    """The instance names launched so far (the emulator records them)."""
    return gpu.cupy.launches


def last_kernels(gpu, count):
    return [name.partition("<")[0] for name in launched(gpu)[-count:]]


# ---------------------------------------------------------------------------------------------
# host planning (plain Python)

def test_fast_path_planning():
    # A row-major, B row-major / transposed; size-1 axes' strides do not matter
    assert launch.sgemm_layout((1, 1), 8, 8, 8, (0, 64, 8, 1), (0, 64, 8, 1))[:2] == (True, False)
    assert launch.sgemm_layout((1, 2), 8, 8, 8, (0, 64, 1, 8), (0, 0, 1, 8))[:2] == (False, True)
    assert launch.sgemm_layout((1, 1), 1, 8, 8, (0, 8, 7, 1), (0, 64, 8, 1)) is not None
    assert launch.sgemm_layout((1, 1), 8, 8, 6, (0, 48, 6, 1), (0, 48, 8, 1)) is None      # k % 4
    assert launch.sgemm_layout((1, 3), 8, 8, 8, (0, 66, 8, 1), (0, 64, 8, 1)) is None      # batch stride
    assert launch.sgemm_layout((1, 1), 8, 8, 8, (0, 64, 16, 2), (0, 64, 8, 1)) is None     # no unit axis
    assert launch.sgemm_grid(2, 130, 300, launch.SGEMM_TILES["small"]) == (5, 3, 2)
    assert launch.row_group(32, 4) == 8 and launch.row_group(33, 4) == 32
    assert launch.row_group(1, 4) == 1 and launch.row_group(1024, 4) == 32
    parts, chunk = launch.reduce_plan(1, 10 ** 6, 1, 132, align=4)
    assert chunk % 4 == 0 and parts * chunk >= 10 ** 6 > (parts - 1) * chunk
    assert launch.binary_rows_layout((6, 12), [(12, 1), (0, 1)], 4) == \
        ((6, 6, 12), [(0, 12, 1), (0, 0, 1)], True)
    assert launch.binary_rows_layout((10,), [(1,), (0,)], 4) == \
        ((1, 1, 10), [(0, 0, 1), (0, 0, 0)], False)
    assert launch.binary_rows_layout((2, 3, 8), [(24, 8, 1), (0, 1, 0)], 4) == \
        ((6, 3, 8), [(24, 8, 1), (0, 1, 0)], True)
    assert launch.binary_rows_layout((6, 12), [(1, 6), (0, 1)], 4) is None
    assert launch.binary_rows_layout((2, 2, 2, 4), [(16, 8, 4, 1), (0, 0, 1, 0)], 4) is None
    assert launch.binary_rows_launch(65536, 32, 4) == ((1, 2048), (8, 32))
    assert launch.binary_rows_launch(1, 2 ** 26, 4) == ((2 ** 15, 1), (256, 1))


# ---------------------------------------------------------------------------------------------
# SGEMM

def _matmul(gpu, a, b, batch, m, n, k, a_strides, a_offset, b_strides, b_offset, dtype):
    out = gpu.empty(batch * m * n, np.dtype(dtype))
    gpu.matmul(gpu.from_host(a), gpu.from_host(b), out, batch, m, n, k, a_strides, a_offset,
               b_strides, b_offset)
    return gpu.to_host(out).reshape(batch, m, n)


def _view(buffer, dims, strides, offset):
    return np.lib.stride_tricks.as_strided(buffer[offset:], dims,
                                           [s * buffer.itemsize for s in strides])


def _check_matmul(gpu, batch, m, n, k, a_t=False, b_t=False, a_offset=0, b_offset=0,
                  b_broadcast=False, dtype=np.float32):
    rng = np.random.default_rng(batch * 1000 + m + n + k)
    a = rng.standard_normal(a_offset + batch * m * k).astype(dtype)
    b = rng.standard_normal(b_offset + (1 if b_broadcast else batch) * k * n).astype(dtype)
    a_strides = (m * k, 1, m) if a_t else (m * k, k, 1)
    b_strides = (k * n, 1, k) if b_t else (k * n, n, 1)
    if b_broadcast:
        b_strides = (0,) + b_strides[1:]
    got = _matmul(gpu, a, b, batch, m, n, k, a_strides, a_offset, b_strides, b_offset, dtype)
    want = np.matmul(_view(a, (batch, m, k), a_strides, a_offset).astype(np.float64),
                     _view(b, (batch, k, n), b_strides, b_offset).astype(np.float64))
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.sqrt(max(k, 1)))
    return last_kernels(gpu, 1)[0]


@pytest.mark.parametrize("m,n,k", [(129, 127, 20), (1, 129, 36), (127, 1, 16), (4, 4, 4),
                                   (130, 260, 8)])
def test_sgemm_edges(gpu, m, n, k):
    # a row-major B needs n % 4 == 0 for float4 rows; a transposed one (x @ W.T) only k % 4
    assert _check_matmul(gpu, 1, m, n, k, b_t=n % 4 != 0) == "sgemm_kernel"


@pytest.mark.parametrize("a_t,b_t", [(True, False), (False, True), (True, True)])
def test_sgemm_transposed_operands(gpu, a_t, b_t):
    assert _check_matmul(gpu, 2, 68, 132, 24, a_t=a_t, b_t=b_t) == "sgemm_kernel"


def test_sgemm_batch_broadcast_and_large_tiles(gpu):
    # 2 x 9 x 9 tiles of 128 >= the emulator's 132 multiprocessors: the large tile shape
    assert launch.sgemm_tiles(2, 1090, 1090, 132) == "large"
    assert _check_matmul(gpu, 3, 36, 40, 12, b_broadcast=True, b_offset=4) == "sgemm_kernel"


def test_sgemm_large_tile_edges(gpu):
    gpu_small_sm = gpu.sm_count
    gpu.sm_count = 1            # force the 128 x 128 tiles on a small product
    try:
        gpu._plans.clear()
        assert _check_matmul(gpu, 2, 129, 130, 20, b_t=True) == "sgemm_kernel"
        assert launched(gpu)[-1].startswith("sgemm_kernel<128, 128")
    finally:
        gpu.sm_count = gpu_small_sm
        gpu._plans.clear()


def test_sgemm_falls_back_when_float4_reads_are_impossible(gpu):
    assert _check_matmul(gpu, 1, 33, 35, 13) == "matmul_kernel"          # k % 4
    assert _check_matmul(gpu, 1, 32, 32, 16, a_offset=1) == "matmul_kernel"  # misaligned
    assert _check_matmul(gpu, 1, 33, 34, 16, dtype=np.float64) == "matmul_kernel"
    assert _check_matmul(gpu, 2, 33, 34, 16, a_t=True) == "matmul_kernel"  # m % 4, A m-major


@pytest.mark.parametrize("dtype,kernel", [(np.float32, "sgemm_kernel"),
                                          (np.float64, "matmul_kernel")])
def test_matmul_two_batch_axes(gpu, dtype, kernel):
    # q @ k.T of attention's head-split views of one (B, T, 3·H·D) array: batch axes (B, H)
    # with strides (T·3HD, D), read in place through (outer, inner) batch strides
    B, T, H, D = 2, 8, 3, 4
    row = 3 * H * D
    qkv = np.random.default_rng(0).standard_normal(B * T * row).astype(dtype)
    q_strides, k_strides = (T * row, D, row, 1), (T * row, D, 1, row)
    out = gpu.empty(B * H * T * T, np.dtype(dtype))
    buf = gpu.from_host(qkv)
    gpu.matmul(buf, buf, out, (B, H), T, T, D, q_strides, 0, k_strides, H * D)
    want = np.matmul(_view(qkv, (B, H, T, D), q_strides, 0).astype(np.float64),
                     _view(qkv, (B, H, D, T), k_strides, H * D).astype(np.float64))
    np.testing.assert_allclose(gpu.to_host(out).reshape(B, H, T, T), want, rtol=1e-5,
                               atol=1e-5)
    assert last_kernels(gpu, 1)[0] == kernel
    q = np.ascontiguousarray(_view(qkv, (B, H, T, D), q_strides, 0))   # strides None: compact
    k = np.ascontiguousarray(_view(qkv, (B, H, D, T), k_strides, H * D))
    gpu.matmul(gpu.from_host(q.ravel()), gpu.from_host(k.ravel()), out, (B, H), T, T, D)
    np.testing.assert_allclose(gpu.to_host(out).reshape(B, H, T, T), want, rtol=1e-5,
                               atol=1e-5)
    with pytest.raises(ValueError, match=r"a view \(shape \(2, 3, 8, 4\)"):
        gpu.matmul(buf, buf, out, (B, H), T, T, D, q_strides, B * T * row, k_strides, H * D)


def test_sgemm_empty_and_zero_k(gpu):
    f32 = np.dtype(np.float32)
    out = gpu.from_host(np.ones(6, np.float32))
    gpu.matmul(gpu.empty(0, f32), gpu.empty(0, f32), out, 2, 1, 3, 0)
    assert (gpu.to_host(out) == 0).all()
    gpu.matmul(gpu.empty(0, f32), gpu.empty(0, f32), gpu.empty(0, f32), 0, 4, 4, 4)


# ---------------------------------------------------------------------------------------------
# reductions

_NP_REDUCE = {ReduceOp.SUM: np.sum, ReduceOp.PROD: np.prod, ReduceOp.MAX: np.max,
              ReduceOp.MIN: np.min}


def _reduce_input(size, dtype, op, seed):
    rng = np.random.default_rng(seed)
    if dtype == np.uint8:
        return (rng.random(size) < 0.5).astype(np.uint8)
    if dtype == np.int64:
        return rng.integers(-50, 50, size)
    if op == ReduceOp.PROD:         # keep products finite and away from 0
        return rng.uniform(0.9, 1.1, size).astype(dtype)
    return rng.standard_normal(size).astype(dtype)


def _check_reduce(gpu, op, dtype, m, n, inner, host=None, shift=0):
    """reduce_last of (m, n, inner) against numpy; `shift` drops leading elements of a bigger
    device buffer so that the input starts misaligned. Returns the kernels launched."""
    host = _reduce_input(m * n * inner, dtype, op, m + n + inner) if host is None else host
    before = len(launched(gpu))
    device = gpu.from_host(np.concatenate([host[:shift], host]) if shift else host)
    out = gpu.empty(m * inner, np.dtype(dtype))
    gpu.reduce_last(int(op), device[shift:] if shift else device, out, n, inner)
    got = gpu.to_host(out).reshape(m, inner)
    want = _NP_REDUCE[op](host.reshape(m, n, inner).astype(
        np.float64 if dtype == np.float32 else dtype), axis=1)
    if dtype in (np.float32, np.float64):
        np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == np.float32 else 1e-12,
                                   atol=1e-4 if dtype == np.float32 else 1e-10, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want.astype(dtype))
    return [name.partition("<")[0] for name in launched(gpu)[before:]]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
@pytest.mark.parametrize("op", [ReduceOp.SUM, ReduceOp.PROD, ReduceOp.MAX, ReduceOp.MIN])
def test_reduce_rows_short_long_and_full(gpu, dtype, op):
    for m, n in [(37, 1), (33, 3), (65, 32), (9, 37), (5, 1024)]:
        assert _check_reduce(gpu, op, dtype, m, n, 1) == ["reduce_rows_group_kernel"]
    assert _check_reduce(gpu, op, dtype, 3, 1030, 1) == ["reduce_rows_vec_kernel"]
    # one long row: partials over parts of it, then a second (small) launch
    assert _check_reduce(gpu, op, dtype, 1, 20000, 1) == ["reduce_rows_vec_kernel",
                                                         "reduce_rows_group_kernel"]
    assert _check_reduce(gpu, op, dtype, 1, 20001, 1, shift=1)[0] == "reduce_rows_vec_kernel"


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
@pytest.mark.parametrize("op", [ReduceOp.SUM, ReduceOp.MAX])
def test_reduce_columns(gpu, dtype, op):
    for m, n, inner in [(2, 300, 8), (1, 5, 64), (3, 7, 33), (1, 2000, 4), (2, 9, 130)]:
        assert _check_reduce(gpu, op, dtype, m, n, inner)[0] == "reduce_cols_vec_kernel"
    assert _check_reduce(gpu, op, dtype, 2, 9, 8, shift=1)[0] == "reduce_cols_vec_kernel"


def test_reduce_bool_max_min(gpu):
    for op in (ReduceOp.MAX, ReduceOp.MIN):
        for m, n, inner in [(5, 40, 1), (1, 9000, 1), (3, 20, 32), (4, 33, 1)]:
            _check_reduce(gpu, op, np.uint8, m, n, inner)


@pytest.mark.parametrize("op", [ReduceOp.MAX, ReduceOp.MIN, ReduceOp.SUM])
def test_reduce_propagates_nan(gpu, op):
    for m, n, inner in [(4, 40, 1), (1, 9000, 1), (3, 20, 8), (2, 1500, 1)]:
        host = _reduce_input(m * n * inner, np.float32, op, 7)
        host[::5] = np.nan if op != ReduceOp.MAX else host[::5]
        host[n * inner - 1] = np.nan        # the last element of the first slab
        host[1] = -np.inf
        _check_reduce(gpu, op, np.float32, m, n, inner, host=host)


def test_reduce_arg_ops_keep_their_kernels(gpu):
    host = np.array([3, 1, 3, 0], np.float32)
    out = gpu.empty(1, np.dtype(np.int64))
    gpu.reduce_last(int(ReduceOp.ARGMAX), gpu.from_host(host), out, 4)
    assert gpu.to_host(out)[0] == 0 and last_kernels(gpu, 1) == ["reduce_rows_kernel"]


def test_reduce_empty(gpu):
    out = gpu.from_host(np.full(3, 7, np.float32))
    gpu.reduce_last(int(ReduceOp.SUM), gpu.empty(0, np.dtype(np.float32)), out, 0, 3)
    assert (gpu.to_host(out) == 0).all()


# ---------------------------------------------------------------------------------------------
# elementwise (binary)

def _binary_operands(dtype, n, seed):
    rng = np.random.default_rng(seed)
    if dtype == np.uint8:
        return rng.integers(0, 2, n).astype(np.uint8)
    if dtype == np.int64:
        x = rng.integers(-20, 20, n)
        return np.where(x == 0, 3, x)           # integer division by zero raises
    x = rng.standard_normal(n) * 3
    x[::7] = np.nan
    x[3::11] = np.inf
    x[5::13] = 0.0
    return x.astype(dtype)


def _check_binary(gpu, op, dtype, shape, a_strides, b_strides, a_size, b_size, a_offset=0,
                  b_offset=0):
    """binary on both backends (the CPU one is the reference); returns the kernel launched."""
    from minitorch import _cpu
    from minitorch._gpu.backend import binary_supported
    name = np.dtype(dtype).name
    if not binary_supported(op, name):
        return None
    a = _binary_operands(dtype, a_offset + a_size, 1)
    b = _binary_operands(dtype, b_offset + b_size, 2)
    if dtype == np.int64 and op == BinaryOp.POW:
        b = np.abs(b) % 5
    size = int(np.prod(shape))
    out_dtype = np.uint8 if BinaryOp(op).writes_bool else dtype
    want = np.zeros(size, out_dtype)
    _cpu.binary(int(op), a, b, want, shape, a_strides, a_offset, b_strides, b_offset)
    out = gpu.empty(size, np.dtype(out_dtype))
    gpu.binary(int(op), gpu.from_host(a), gpu.from_host(b), out, shape, a_strides, a_offset,
               b_strides, b_offset)
    got = gpu.to_host(out)
    if out_dtype in (np.float32, np.float64):
        tol = 2e-6 if out_dtype == np.float32 else 1e-13
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, equal_nan=True,
                                   err_msg=BinaryOp(op).name)
    else:
        np.testing.assert_array_equal(got, want, err_msg=BinaryOp(op).name)
    return last_kernels(gpu, 1)[0]


# (shape, a strides, b strides, a size, b size): contiguous, row vector, column, scalar
_ROW_LAYOUTS = [((40,), (1,), (1,), 40, 40), ((37,), (1,), (1,), 37, 37),
                ((6, 12), (12, 1), (0, 1), 72, 12), ((5, 7), (7, 1), (0, 1), 35, 7),
                ((9, 8), (8, 1), (1, 0), 72, 9), ((13,), (1,), (0,), 13, 1),
                ((3, 520), (520, 1), (0, 1), 1560, 520)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.uint8])
def test_binary_rows_every_op(gpu, dtype):
    for op in BinaryOp:
        for layout in _ROW_LAYOUTS[:3] + _ROW_LAYOUTS[4:6]:
            kernel = _check_binary(gpu, op, dtype, *layout)
            called = op in (BinaryOp.ZETA, BinaryOp.IGAMMA, BinaryOp.IGAMMAC) or (
                dtype == np.int64 and op in (BinaryOp.FLOOR_DIVIDE, BinaryOp.REMAINDER,
                                             BinaryOp.GCD, BinaryOp.LCM))
            assert kernel in (None, "binary_kernel" if called else "binary_rows_kernel"), \
                (op, layout)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.uint8])
def test_binary_rows_shapes_and_offsets(gpu, dtype):
    for op in (BinaryOp.ADD, BinaryOp.MUL, BinaryOp.MAXIMUM, BinaryOp.LT):
        for layout in _ROW_LAYOUTS:
            for offsets in ((0, 0), (1, 0), (0, 3)):     # misaligned: scalar loads and stores
                assert _check_binary(gpu, op, dtype, *layout, *offsets) in (
                    None, "binary_rows_kernel")
    # a per-channel bias on (N, C, H*W): rows split into (outer, inner)
    for layout in (((2, 3, 8), (24, 8, 1), (0, 1, 0), 48, 3),
                   ((3, 5, 7), (35, 7, 1), (0, 1, 0), 105, 5),
                   ((2, 3, 8), (24, 8, 1), (8, 0, 1), 48, 16)):
        assert _check_binary(gpu, BinaryOp.MUL, dtype, *layout) == "binary_rows_kernel"
        assert _check_binary(gpu, BinaryOp.MUL, dtype, *layout, 1, 1) == "binary_rows_kernel"
    # a permuted operand, or four axes: the general strided kernel
    assert _check_binary(gpu, BinaryOp.ADD, dtype, (4, 5), (1, 4), (5, 1), 20, 20) == \
        "binary_kernel"
    assert _check_binary(gpu, BinaryOp.MUL, dtype, (2, 2, 3, 4), (24, 12, 4, 1), (0, 1, 0, 1),
                         48, 5) == "binary_kernel"


def test_binary_rows_integer_errors(gpu):
    from minitorch import _cpu
    for op, divisor, message in ((BinaryOp.POW, -1, "negative integer powers"),):
        a, b = np.arange(-4, 4, dtype=np.int64), np.full(8, divisor, np.int64)
        b[0] = 1
        with pytest.raises(RuntimeError, match=message):
            gpu.binary(int(op), gpu.from_host(a), gpu.from_host(b), gpu.empty(8, a.dtype), (8,),
                       (1,), 0, (1,), 0)
        assert last_kernels(gpu, 1) == ["binary_rows_kernel"]
        with pytest.raises(RuntimeError, match=message):
            _cpu.binary(int(op), a, b, np.empty(8, np.int64), (8,), (1,), 0, (1,), 0)
