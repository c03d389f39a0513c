"""The CPU matmul kernel against numpy: every tile remainder, strides, broadcasts, offsets, edges.

Most cases use small integer-valued data: every product and partial sum is then exact in both
float dtypes, so any summation order gives numpy's answer bit for bit and the comparison can be
exact. Normal-distributed data checks the tolerance-scaled case separately.
"""
import numpy as np
import pytest

from minitorch._cpu.matmul import matmul, pack_panels, panel_matmul

DTYPES = [np.float32, np.float64]
# Sizes hitting every remainder class of the register tiles (8 x 16 for n <= 16, 8 x 32 above:
# every value mod 8 and many mod 16 and 32), both sides of the plain-loop cutoff, both orientations (n < 32 with m > n), kept
# sparse so that the full m x n x k grid stays fast.
GRID = [1, 2, 3, 4, 5, 6, 7, 9, 12, 17, 31, 32, 33, 40, 47, 64, 65, 67]


def ints(rng, shape, dtype):
    return rng.integers(-3, 4, size=shape).astype(dtype)


def layout(x, transposed):
    """Store the (batch, r, c) array x in a flat buffer, either compact or as the transpose of a
    compact (batch, c, r) array; return (buffer, strides) describing x."""
    batch, r, c = x.shape
    if transposed:
        return np.ascontiguousarray(x.transpose(0, 2, 1)).ravel(), (r * c, 1, r)
    return np.ascontiguousarray(x).ravel(), (r * c, c, 1)


def run(a, b, a_t=False, b_t=False):
    """matmul of the logical arrays a (batch, m, k) and b (batch, k, n), into a NaN-filled out."""
    batch, m, k = a.shape
    n = b.shape[2]
    abuf, sa = layout(a, a_t)
    bbuf, sb = layout(b, b_t)
    out = np.full(batch * m * n, np.nan, a.dtype)
    matmul(abuf, bbuf, out, batch, m, n, k, sa, 0, sb, 0)
    return out.reshape(batch, m, n)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("m", GRID)
def test_all_remainders_exact(dtype, m):
    rng = np.random.default_rng(m)
    for n in GRID:
        for k in GRID:
            a, b = ints(rng, (1, m, k), dtype), ints(rng, (1, k, n), dtype)
            np.testing.assert_array_equal(run(a, b), a @ b, err_msg=f"m={m} n={n} k={k}")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("a_t", [False, True])
@pytest.mark.parametrize("b_t", [False, True])
def test_transposed_operands(dtype, a_t, b_t):
    rng = np.random.default_rng(1)
    # n < 32 with a much taller a: with a_t that runs as out.T = b.T @ a.T (the three sizes
    # after (130, 1, 64) also split over threads); the last two: a column-major a whose k stride
    # (>= 2 KiB) has it packed column by column at a narrow n, full panels and a partial one
    for m, n, k in [(5, 7, 3), (37, 29, 41), (67, 64, 65), (130, 200, 70), (61, 300, 129),
                    (300, 5, 40), (130, 1, 64), (1000, 1, 600), (3000, 17, 100), (777, 9, 90),
                    (530, 100, 70), (1030, 96, 600)]:
        a, b = ints(rng, (1, m, k), dtype), ints(rng, (1, k, n), dtype)
        np.testing.assert_array_equal(run(a, b, a_t, b_t), a @ b, err_msg=f"{m} {n} {k}")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(300, 257, 513), (129, 1100, 600), (7, 3100, 40),
                                   (1000, 33, 20), (12544, 16, 9), (40, 3170, 1100)])
def test_large_exact(dtype, shape):
    """Several k blocks (k > 512 floats / 256 doubles), several n blocks (n > 3072), tall-thin,
    and B's panels read in place (m <= 64) across k and n blocks with a partial last panel."""
    m, n, k = shape
    rng = np.random.default_rng(2)
    a, b = ints(rng, (1, m, k), dtype), ints(rng, (1, k, n), dtype)
    np.testing.assert_array_equal(run(a, b), a @ b)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("a_t", [False, True])
@pytest.mark.parametrize("shape", [(9, 16, 5000), (16, 9, 5000), (3, 32, 4099), (20, 20, 3000),
                                   (144, 32, 3000), (1, 1, 2048)])
def test_long_k_small_out(dtype, a_t, shape):
    """Out of a tile or two and a long k (conv weight gradients): k is cut across threads and
    the partial products summed; a compact b exactly one panel wide (16 or 32) is read in
    place. Both orientations (a column-major runs as out.T = b.T @ a.T)."""
    m, n, k = shape
    rng = np.random.default_rng(5)
    a, b = ints(rng, (1, m, k), dtype), ints(rng, (1, k, n), dtype)
    np.testing.assert_array_equal(run(a, b, a_t), a @ b)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 4, 4, 4), (1, 33, 65, 70), (1, 300, 257, 513),
                                   (3, 100, 200, 300)])
def test_random_normal_within_tolerance(dtype, shape):
    batch, m, n, k = shape
    rng = np.random.default_rng(3)
    a = rng.standard_normal((batch, m, k)).astype(dtype)
    b = rng.standard_normal((batch, k, n)).astype(dtype)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    tol = 50 * np.finfo(dtype).eps
    np.testing.assert_allclose(run(a, b), ref, rtol=tol, atol=tol * np.sqrt(k))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(32, 8, 8, 8), (32, 64, 64, 64), (4, 64, 64, 64),
                                   (3, 100, 200, 300), (5, 40, 70, 33), (2, 130, 90, 150),
                                   (3, 300, 10, 200), (8, 100, 5, 50)])
def test_batched(dtype, shape):
    """Small batches split each product over threads; large ones give whole items to threads.
    n < 32 runs as the transposed product."""
    batch, m, n, k = shape
    rng = np.random.default_rng(4)
    a, b = ints(rng, (batch, m, k), dtype), ints(rng, (batch, k, n), dtype)
    np.testing.assert_array_equal(run(a, b), a @ b)
    np.testing.assert_array_equal(run(a, b, True, True), a @ b)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(16, 5, 6, 7), (32, 64, 64, 64), (3, 120, 150, 200)])
@pytest.mark.parametrize("which", ["a", "b"])
def test_broadcast_batch_stride_zero(dtype, shape, which):
    batch, m, n, k = shape
    rng = np.random.default_rng(5)
    a = ints(rng, (1 if which == "a" else batch, m, k), dtype)
    b = ints(rng, (1 if which == "b" else batch, k, n), dtype)
    sa = (0 if which == "a" else m * k, k, 1)
    sb = (0 if which == "b" else k * n, n, 1)
    out = np.full(batch * m * n, np.nan, dtype)
    matmul(a.ravel(), b.ravel(), out, batch, m, n, k, sa, 0, sb, 0)
    np.testing.assert_array_equal(out.reshape(batch, m, n), np.matmul(a, b))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(2, 5, 6, 7), (2, 70, 150, 90)])
def test_offsets_and_general_strides(dtype, shape):
    """Views into bigger buffers: nonzero offsets, no unit stride at all, negative strides."""
    batch, m, n, k = shape
    rng = np.random.default_rng(6)
    big_a = ints(rng, (batch + 1, 2 * m + 1, 3 * k + 2), dtype)
    big_b = ints(rng, (batch, k + 3, 2 * n), dtype)
    a = big_a[1:, 1::2, 2::3][:, :m, :k]              # strides (.., 2*row, 3): no unit stride
    b = big_b[:, 3:, ::-2][:, :k, :n]                 # reversed columns: negative stride
    item = big_a.itemsize
    sa = tuple(s // item for s in a.strides)
    sb = tuple(s // item for s in b.strides)
    a_off = (a.__array_interface__["data"][0] - big_a.__array_interface__["data"][0]) // item
    b_off = (b.__array_interface__["data"][0] - big_b.__array_interface__["data"][0]) // item
    out = np.full(batch * m * n, np.nan, dtype)
    matmul(big_a.ravel(), big_b.ravel(), out, batch, m, n, k, sa, a_off, sb, b_off)
    np.testing.assert_array_equal(out.reshape(batch, m, n), a @ b)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("sizes", [(2, 3, 8, 4), (4, 4, 32, 16), (3, 2, 70, 40)])
def test_two_batch_axes(dtype, sizes):
    """(outer, inner) batch axes with their own strides: attention's q @ k.T on the head-split
    views of one (B, T, 3·H·D) array (batch strides T·3HD and D), plus a b broadcast over the
    outer axis, each through both the plain loop and the packed path (and threads)."""
    B, H, T, D = sizes
    row = 3 * H * D
    qkv = ints(np.random.default_rng(7), (B, T, 3, H, D), dtype)
    q = qkv[:, :, 0].transpose(0, 2, 1, 3)                 # (B, H, T, D)
    k = qkv[:, :, 1].transpose(0, 2, 3, 1)                 # (B, H, D, T)
    out = np.full(B * H * T * T, np.nan, dtype)
    matmul(qkv.ravel(), qkv.ravel(), out, (B, H), T, T, D, (T * row, D, row, 1), 0,
           (T * row, D, 1, row), H * D)
    np.testing.assert_array_equal(out.reshape(B, H, T, T), q @ k)
    w = ints(np.random.default_rng(8), (H, D, 5), dtype)
    out = np.full(B * H * T * 5, np.nan, dtype)
    matmul(qkv.ravel(), w.ravel(), out, (B, H), T, 5, D, (T * row, D, row, 1), 0,
           (0, D * 5, 5, 1), 0)
    np.testing.assert_array_equal(out.reshape(B, H, T, 5), q @ w)
    out = np.full(B * H * T * T, np.nan, dtype)        # strides None: compact operands
    matmul(np.ascontiguousarray(q).ravel(), np.ascontiguousarray(k).ravel(), out, (B, H), T, T, D)
    np.testing.assert_array_equal(out.reshape(B, H, T, T), q @ k)
    with pytest.raises(ValueError, match=r"a view \(shape \(%d, %d, %d, %d\)" % (B, H, T, D)):
        matmul(qkv.ravel(), w.ravel(), out, (B, H), T, 5, D, (T * row, D, row, 1), row,
               (0, D * 5, 5, 1), 0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(0, 3, 4, 5), (2, 0, 4, 5), (2, 3, 0, 5), (0, 0, 0, 0)])
def test_empty_output(dtype, shape):
    batch, m, n, k = shape
    out = np.full(3, 7.0, dtype)
    matmul(np.ones(batch * m * k, dtype), np.ones(batch * k * n, dtype), out, batch, m, n, k)
    np.testing.assert_array_equal(out, 7.0)  # nothing to write, nothing written past the end


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(2, 3, 4), (1, 300, 400)])
def test_k_zero_gives_zeros(dtype, shape):
    batch, m, n = shape
    out = np.full(batch * m * n, np.nan, dtype)
    matmul(np.empty(0, dtype), np.empty(0, dtype), out, batch, m, n, 0)
    np.testing.assert_array_equal(out, 0.0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("b_t", [False, True])
@pytest.mark.parametrize("shape", [(1, 1, 1), (3, 5, 7), (1, 64, 8), (16, 204, 51),
                                   (32, 1024, 256), (32, 256, 1024), (130, 40, 600),
                                   (40, 3170, 1100), (9, 16, 5000)])
def test_prepacked_b(dtype, b_t, shape):
    """b packed once by pack_panels (an RNN's W_hh over its time steps): tiny products that
    would take the plain loop, partial last panels, several k and n blocks, thread splits and k
    slices; a broadcast to every batch item, a transposed a and the bias epilogue."""
    m, n, k = shape
    rng = np.random.default_rng(9)
    a, b = ints(rng, (1, m, k), dtype), ints(rng, (1, k, n), dtype)
    bbuf, sb = layout(b, b_t)
    packed = pack_panels(bbuf, k, n, sb[1:])
    out = np.full(2 * m * n, np.nan, dtype)
    panel_matmul(np.concatenate([a.ravel()] * 2), packed, out, 2, m, n, k)
    np.testing.assert_array_equal(out.reshape(2, m, n), np.concatenate([a @ b] * 2))
    abuf, sa = layout(a, True)
    bias = ints(rng, (n,), dtype)
    panel_matmul(abuf, packed, out, 1, m, n, k, sa, 0, bias)
    np.testing.assert_array_equal(out[:m * n].reshape(1, m, n), a @ b + bias)


def test_prepacked_b_checks():
    b = np.arange(12, dtype=np.float32)
    with pytest.raises(ValueError, match="outside"):
        pack_panels(b, 3, 5)
    with pytest.raises(TypeError, match="int64"):
        pack_panels(np.zeros(4, np.int64), 2, 2)
    packed = pack_panels(b, 3, 4)                   # one narrow panel (16 wide) of 3 rows
    assert packed.shape == (3 * 16,) and not packed.reshape(3, 16)[:, 4:].any()
    with pytest.raises(ValueError, match="too few"):
        panel_matmul(np.zeros(6, np.float32), packed, np.zeros(80, np.float32), 1, 2, 40, 3)
    out = np.full(4, np.nan, np.float32)
    panel_matmul(np.zeros(0, np.float32), pack_panels(b, 0, 2), out, 1, 2, 2, 0)
    np.testing.assert_array_equal(out, 0.0)


def test_out_is_overwritten_not_accumulated():
    rng = np.random.default_rng(7)
    for m, n, k in [(3, 4, 5), (200, 300, 600)]:
        a, b = ints(rng, (1, m, k), np.float32), ints(rng, (1, k, n), np.float32)
        out = np.full(m * n, 1e6, np.float32)
        matmul(a.ravel(), b.ravel(), out, 1, m, n, k)
        np.testing.assert_array_equal(out.reshape(1, m, n), a @ b)


def test_single_thread_matches():
    threads = pytest.importorskip("minitorch._cpu.threads")
    rng = np.random.default_rng(8)
    a, b = ints(rng, (3, 150, 230), np.float32), ints(rng, (3, 230, 170), np.float32)
    before = threads.get_num_threads()
    try:
        threads.set_num_threads(1)
        one = run(a, b)
    finally:
        threads.set_num_threads(before)
    np.testing.assert_array_equal(one, a @ b)
    np.testing.assert_array_equal(run(a, b), one)


@pytest.mark.parametrize("dtypes", [(np.float32, np.float64, np.float32),
                                    (np.float64, np.float64, np.float32),
                                    (np.float32, np.float32, np.float64)])
def test_dtype_mismatch_raises(dtypes):
    a, b, out = (np.zeros(4, d) for d in dtypes)
    with pytest.raises(TypeError, match="dtype"):
        matmul(a, b, out, 1, 2, 2, 2)


@pytest.mark.parametrize("dtype", [np.int64, np.uint8, np.float16, np.complex64])
def test_unsupported_dtype_raises(dtype):
    a = np.zeros(4, dtype)
    with pytest.raises(TypeError, match=np.dtype(dtype).name):
        matmul(a, a.copy(), a.copy(), 1, 2, 2, 2)


def test_out_too_small_raises():
    with pytest.raises(ValueError, match="out"):
        matmul(np.zeros(6, np.float32), np.zeros(6, np.float32), np.zeros(3, np.float32),
               1, 2, 2, 3)


def test_view_outside_buffer_raises():
    x = np.zeros(6, np.float32)
    with pytest.raises(ValueError, match="outside"):
        matmul(x, x, np.zeros(4, np.float32), 1, 2, 2, 3, (6, 3, 1), 1)   # offset 1: one too far
    with pytest.raises(ValueError, match="outside"):
        matmul(x, x, np.zeros(4, np.float32), 1, 2, 2, 3, None, 0, (6, 1, -1))


def test_bad_buffers_raise():
    x = np.zeros(8, np.float32)
    with pytest.raises(ValueError, match="contiguous"):
        matmul(x[::2], x[:4], np.zeros(4, np.float32), 1, 2, 2, 2)
    ro = np.zeros(4, np.float32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        matmul(x, x, ro, 1, 2, 2, 2)
    with pytest.raises(ValueError, match="negative"):
        matmul(x, x, x.copy(), 1, -1, 2, 2)
