"""minitorch._cpu.strided (compact, strided_add, strided_set, cast) against numpy."""
import itertools

import numpy as np
import pytest

from minitorch._cpu.strided import cast, compact, strided_add, strided_set

DTYPES = [np.float32, np.float64, np.int64, np.uint8]


def data(n, dtype, seed=0):
    """n values of dtype; bool-like 0/1 for uint8 so logical-or semantics are checkable."""
    rng = np.random.default_rng(seed)
    if dtype == np.uint8:
        return rng.integers(0, 2, n).astype(np.uint8)
    if dtype == np.int64:
        return rng.integers(-1000, 1000, n).astype(np.int64)
    return rng.standard_normal(n).astype(dtype)


def view_of(v, base):
    """(shape, strides, offset) in elements of the numpy view v into the 1-D buffer base."""
    item = v.itemsize
    offset = (v.__array_interface__["data"][0] - base.__array_interface__["data"][0]) // item
    return v.shape, tuple(s // item for s in v.strides), offset


def offsets(shape, strides, offset):
    """Flat element offsets of every index of the view, in C order."""
    flat = np.full(shape, offset, dtype=np.int64)
    for d, (n, s) in enumerate(zip(shape, strides)):
        axis = [1] * len(shape)
        axis[d] = n
        flat = flat + (np.arange(n, dtype=np.int64) * s).reshape(axis)
    return flat.ravel()


def check_compact(buf, shape, strides, offset):
    out = np.empty(int(np.prod(shape)), buf.dtype)
    compact(buf, out, shape, strides, offset)
    np.testing.assert_array_equal(out, buf[offsets(shape, strides, offset)])


def last_write(flat, src):
    """Reference for strided_set: where offsets repeat, the last one in C order wins."""
    _, first_from_end = np.unique(flat[::-1], return_index=True)
    keep = len(flat) - 1 - first_from_end
    return flat[keep], src[keep]


# ------------------------------------------------------------------------------------ compact

@pytest.mark.parametrize("dtype", DTYPES)
def test_compact_contiguous_odd_sizes(dtype):
    for n in range(1, 68):
        buf = data(n + 3, dtype, n)
        check_compact(buf, (n,), (1,), 3)
        check_compact(buf, (1, n), (n, 1), 2)


@pytest.mark.parametrize("dtype", DTYPES)
def test_compact_permuted_4d(dtype):
    shape = (3, 5, 4, 7)
    buf = data(int(np.prod(shape)), dtype)
    x = buf.reshape(shape)
    for perm in itertools.permutations(range(4)):
        v = x.transpose(perm)
        check_compact(buf, *view_of(v, buf))


@pytest.mark.parametrize("dtype", DTYPES)
def test_compact_slices_with_steps(dtype):
    buf = data(9 * 11 * 13, dtype)
    x = buf.reshape(9, 11, 13)
    for v in [x[::2], x[:, ::-1], x[::-2, 1:10:3, ::-4], x[1:, :, 5], x[3:4, 2:3, ::5],
              x[..., ::-1].transpose(2, 0, 1), x[::-1, ::-1, ::-1]]:
        check_compact(buf, *view_of(v, buf))


def test_compact_broadcast_zero_d_and_empty():
    buf = data(6, np.float32)
    check_compact(buf, (4, 6), (0, 1), 0)
    check_compact(buf, (3, 4, 5), (0, 0, 0), 5)
    check_compact(buf, (2, 1, 3), (3, 0, 1), 0)
    out = np.empty(1, np.float32)
    compact(buf, out, (), (), 4)
    assert out[0] == buf[4]
    out = np.full(3, 7, np.float32)
    compact(buf, out, (0, 5), (5, 1), 0)
    compact(np.empty(0, np.float32), out, (3, 0), (1, 1), 0)
    np.testing.assert_array_equal(out, [7, 7, 7])


@pytest.mark.parametrize("dtype", DTYPES)
def test_compact_large_parallel(dtype):
    buf = data(64 * 33 * 65, dtype)
    x = buf.reshape(64, 33, 65)
    for v in [x.transpose(2, 1, 0), x.transpose(0, 2, 1), x.transpose(1, 2, 0), x[:, ::-1, 1::2],
              x.ravel()[::-1], x[:, :1, :].transpose(1, 0, 2)]:
        check_compact(buf, *view_of(v, buf))
    check_compact(buf, (300, 500), (0, 1), 7)


def test_compact_random_views():
    rng = np.random.default_rng(1)
    for _ in range(300):
        nd = int(rng.integers(0, 6))
        shape = tuple(int(n) for n in rng.integers(0, 6, nd))
        strides = tuple(int(s) for s in rng.integers(-7, 8, nd))
        lo = sum(min(0, (n - 1) * s) for n, s in zip(shape, strides) if n)
        hi = sum(max(0, (n - 1) * s) for n, s in zip(shape, strides) if n)
        buf = data(hi - lo + 3, np.float64, _)
        check_compact(buf, shape, strides, -lo + 1)


def test_compact_validation():
    buf = np.arange(10, dtype=np.float32)
    out = np.full(10, -1, np.float32)
    with pytest.raises(TypeError, match="float32.*float64"):
        compact(buf, np.empty(10, np.float64), (10,), (1,), 0)
    with pytest.raises(IndexError, match=r"1\.\.10 of a, which has 10"):
        compact(buf, out, (10,), (1,), 1)
    with pytest.raises(IndexError, match="-1"):
        compact(buf, out, (2,), (-1,), 0)
    with pytest.raises(IndexError):
        compact(buf, out, (2, 5), (6, 1), 0)
    with pytest.raises(ValueError, match="out has 10 elements"):
        compact(buf, out, (2, 6), (0, 1), 0)
    with pytest.raises(ValueError):
        compact(buf, out, (-1,), (1,), 0)
    with pytest.raises(ValueError):
        compact(buf, out, (2,), (1, 1), 0)
    with pytest.raises(ValueError):
        compact(buf, out, (3, 2), (2 ** 62, 1), 0)
    with pytest.raises(ValueError, match="contiguous"):
        compact(buf.reshape(2, 5), out, (10,), (1,), 0)
    np.testing.assert_array_equal(out, -1)


# ------------------------------------------------------------------------------- strided_add

@pytest.mark.parametrize("dtype", DTYPES)
def test_strided_add_non_overlapping(dtype):
    base = data(9 * 11 * 13, dtype, 3)
    for index in [np.s_[::2, :, 1:], np.s_[:, ::-1, ::-3], np.s_[2, 1::2]]:
        out = base.copy()
        view = out.reshape(9, 11, 13)[index].transpose()
        shape, strides, offset = view_of(view, out)
        src = data(view.size, dtype, 4)
        strided_add(src, out, shape, strides, offset)
        ref = base.copy()
        flat = offsets(shape, strides, offset)
        if dtype == np.uint8:
            ref[flat] |= src
        else:
            ref[flat] += src
        np.testing.assert_allclose(out, ref, rtol=1e-6)


@pytest.mark.parametrize("dtype", DTYPES)
def test_strided_add_stride_zero_sums(dtype):
    src = data(4 * 5 * 6, dtype, 5)
    out = np.zeros(6, dtype)
    strided_add(src, out, (4, 5, 6), (0, 0, 1), 0)
    s = src.reshape(20, 6)
    ref = s.any(0).astype(np.uint8) if dtype == np.uint8 else s.sum(0)
    np.testing.assert_allclose(out, ref, rtol=1e-5)
    out = np.zeros(4, dtype)
    strided_add(src, out, (4, 30), (1, 0), 0)
    s = src.reshape(4, 30)
    ref = s.any(1).astype(np.uint8) if dtype == np.uint8 else s.sum(1)
    np.testing.assert_allclose(out, ref, rtol=1e-5)


def col2im_reference(src, shape, strides, offset, size):
    ref = np.zeros(size, src.dtype)
    np.add.at(ref, offsets(shape, strides, offset), src)
    return ref


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_strided_add_sliding_windows_1d(dtype):
    n, length, k, step = 3, 50, 5, 2
    windows = (length - k) // step + 1
    shape, strides = (n, windows, k), (length, step, 1)
    src = data(int(np.prod(shape)), dtype, 6)
    out = np.zeros(n * length, dtype)
    strided_add(src, out, shape, strides, 0)
    np.testing.assert_allclose(out, col2im_reference(src, shape, strides, 0, out.size), rtol=1e-5)


@pytest.mark.parametrize("layout", ["unfold", "rows"])
@pytest.mark.parametrize("batch", [2, 16])     # 16 reaches the parallel path
def test_strided_add_im2col_2d(layout, batch):
    c, h, w, kh, kw, dil = 3, 19, 17, 3, 2, 2
    oh, ow = h - dil * (kh - 1), w - dil * (kw - 1)
    if layout == "unfold":          # (N, C, kh, kw, OH, OW), as torch's F.unfold
        shape = (batch, c, kh, kw, oh, ow)
        strides = (c * h * w, h * w, dil * w, dil, w, 1)
    else:                           # (N, OH, OW, C, kh, kw)
        shape = (batch, oh, ow, c, kh, kw)
        strides = (c * h * w, w, 1, h * w, dil * w, dil)
    src = data(int(np.prod(shape)), np.float64, 7)
    out = np.zeros(batch * c * h * w)
    strided_add(src, out, shape, strides, 0)
    np.testing.assert_allclose(out, col2im_reference(src, shape, strides, 0, out.size))


def test_strided_add_large_overlap_serial_path():
    shape, strides = (200, 300), (1, 1)         # Hankel: heavy overlap, no disjoint axis
    src = data(60000, np.float64, 8)
    out = np.zeros(499)
    strided_add(src, out, shape, strides, 0)
    np.testing.assert_allclose(out, col2im_reference(src, shape, strides, 0, 499))


def test_strided_add_large_injective():
    src = data(100000, np.float32, 9)
    out = data(200003, np.float32, 10)
    ref = out.copy()
    strided_add(src, out, (100000,), (-2,), 200001)
    ref[200001:1:-2] += src
    np.testing.assert_allclose(out, ref)


def test_strided_add_random_views():
    rng = np.random.default_rng(2)
    for trial in range(300):
        nd = int(rng.integers(0, 5))
        shape = tuple(int(n) for n in rng.integers(0, 6, nd))
        strides = tuple(int(s) for s in rng.integers(-4, 5, nd))
        lo = sum(min(0, (n - 1) * s) for n, s in zip(shape, strides) if n)
        hi = sum(max(0, (n - 1) * s) for n, s in zip(shape, strides) if n)
        src = data(int(np.prod(shape)), np.float64, trial)
        out = data(hi - lo + 2, np.float64, trial + 1)
        ref = out.copy()
        if src.size:
            np.add.at(ref, offsets(shape, strides, -lo), src)
        strided_add(src, out, shape, strides, -lo)
        np.testing.assert_allclose(out, ref)


def random_big_view(rng, injective):
    """A random view of 32k..200k elements (the parallel paths), rows short or long: a
    permuted, step-sliced array when injective, else arbitrary (overlapping) strides."""
    while True:
        nd = int(rng.integers(2, 6))
        shape = tuple(int(n) for n in rng.integers(1, 40, nd))
        if 32768 <= np.prod(shape) <= 200000:
            break
    if injective:
        steps = rng.choice([-2, -1, 1, 1, 2, 3], nd)
        base = np.empty([n * abs(int(s)) for n, s in zip(shape, steps)], np.float64)
        view = base[tuple(slice(None, None, int(s)) for s in steps)].transpose(rng.permutation(nd))
        shape, strides, offset = view_of(view, base.reshape(-1))
        return shape, strides, offset, base.size
    strides = tuple(int(s) for s in rng.integers(-60, 61, nd))
    lo = sum(min(0, (n - 1) * s) for n, s in zip(shape, strides))
    hi = sum(max(0, (n - 1) * s) for n, s in zip(shape, strides))
    return shape, strides, -lo, hi - lo + 1


def test_random_big_views_all_kernels():
    rng = np.random.default_rng(4)
    for trial in range(16):
        shape, strides, offset, length = random_big_view(rng, trial % 2 == 0)
        flat = offsets(shape, strides, offset)
        buf = data(length, np.float64, trial)
        check_compact(buf, shape, strides, offset)
        src = data(flat.size, np.float64, trial + 100)
        out = buf.copy()
        strided_add(src, out, shape, strides, offset)
        ref = buf.copy()
        np.add.at(ref, flat, src)
        np.testing.assert_allclose(out, ref, rtol=1e-9, atol=1e-9)
        out = buf.copy()
        strided_set(src, out, shape, strides, offset)
        ref = buf.copy()
        where, value = last_write(flat, src)
        ref[where] = value
        np.testing.assert_array_equal(out, ref)


def test_strided_add_validation():
    out = np.zeros(10, np.float32)
    with pytest.raises(TypeError):
        strided_add(np.ones(10, np.float64), out, (10,), (1,), 0)
    with pytest.raises(TypeError):
        strided_add(np.ones(10, np.int32), np.zeros(10, np.int32), (10,), (1,), 0)
    with pytest.raises(IndexError):
        strided_add(np.ones(10, np.float32), out, (10,), (1,), 1)
    with pytest.raises(ValueError, match="src has 9"):
        strided_add(np.ones(9, np.float32), out, (10,), (1,), 0)
    with pytest.raises(ValueError, match="read-only"):
        ro = np.zeros(10, np.float32)
        ro.flags.writeable = False
        strided_add(np.ones(10, np.float32), ro, (10,), (1,), 0)
    np.testing.assert_array_equal(out, 0)


# ------------------------------------------------------------------------------- strided_set

@pytest.mark.parametrize("dtype", DTYPES)
def test_strided_set_non_overlapping(dtype):
    base = data(9 * 11 * 13, dtype, 11)
    for index in [np.s_[::2, :, 1:], np.s_[:, ::-1, ::-3], np.s_[2, 1::2], np.s_[...]]:
        out = base.copy()
        view = out.reshape(9, 11, 13)[index].transpose()
        shape, strides, offset = view_of(view, out)
        src = data(view.size, dtype, 12)
        strided_set(src, out, shape, strides, offset)
        ref = base.copy()
        ref.reshape(9, 11, 13)[index].transpose()[...] = src.reshape(shape)
        np.testing.assert_array_equal(out, ref)


@pytest.mark.parametrize("dtype", DTYPES)
def test_strided_set_fill(dtype):
    out = data(200, dtype, 13)
    ref = out.copy()
    value = data(1, dtype, 14)
    strided_set(value, out, (10, 5), (20, -3), 12)
    ref[offsets((10, 5), (20, -3), 12)] = value[0]
    np.testing.assert_array_equal(out, ref)
    big = np.zeros(100000, dtype)
    strided_set(value, big, (100000,), (1,), 0)
    np.testing.assert_array_equal(big, value[0])


@pytest.mark.parametrize("dtype", DTYPES)
def test_strided_set_fill_any_axis_order(dtype):
    """A fill writes in memory order whatever the view's axis order: permuted, flipped,
    overlapping (stride 0 and windows) and a channels-last buffer's border seen as NCHW."""
    value = data(1, dtype, 15)
    base = data(4 * 6 * 10 * 10, dtype, 16)
    nchw = base.reshape(4, 10, 10, 6).transpose(0, 3, 1, 2)       # a channels-last buffer
    windows = np.lib.stride_tricks.as_strided(base[3:], (5, 7, 4), (0, 8 * base.itemsize,
                                                                     24 * base.itemsize))
    views = [nchw[:, :, ::9],                 # the top and bottom rows of a 1-wide border
             nchw[:, :, 1:9, ::9],            # its left and right columns
             nchw.transpose(3, 2, 0, 1)[::-1, 1:, ::2],
             windows]
    for view in views:
        out = base.copy()
        shape, strides, offset = view_of(view, base)
        strided_set(value, out, shape, strides, offset)
        ref = base.copy()
        ref[offsets(shape, strides, offset)] = value[0]
        np.testing.assert_array_equal(out, ref)


def test_strided_set_overlap_last_write_wins():
    rng = np.random.default_rng(3)
    for trial in range(200):
        nd = int(rng.integers(1, 5))
        shape = tuple(int(n) for n in rng.integers(1, 6, nd))
        strides = tuple(int(s) for s in rng.integers(-3, 4, nd))
        lo = sum(min(0, (n - 1) * s) for n, s in zip(shape, strides))
        hi = sum(max(0, (n - 1) * s) for n, s in zip(shape, strides))
        src = data(int(np.prod(shape)), np.int64, trial)
        out = np.zeros(hi - lo + 1, np.int64)
        strided_set(src, out, shape, strides, -lo)
        ref = np.zeros_like(out)
        where, value = last_write(offsets(shape, strides, -lo), src)
        ref[where] = value
        np.testing.assert_array_equal(out, ref)


def test_strided_set_large_windows():
    shape, strides = (64, 30, 30, 9), (1024, 32, 1, 1)   # disjoint batch axis, overlapping rest
    src = data(int(np.prod(shape)), np.float32, 15)
    out = np.zeros(64 * 1024, np.float32)
    strided_set(src, out, shape, strides, 0)
    ref = np.zeros_like(out)
    where, value = last_write(offsets(shape, strides, 0), src)
    ref[where] = value
    np.testing.assert_array_equal(out, ref)


def test_strided_set_large_transpose():
    out = np.zeros(257 * 300, np.float64)
    src = data(out.size, np.float64, 16)
    strided_set(src, out, (300, 257), (1, 300), 0)
    np.testing.assert_array_equal(out.reshape(257, 300), src.reshape(300, 257).T)


@pytest.mark.parametrize("dtype", DTYPES + [np.float16, np.int32])
@pytest.mark.parametrize("shape", [(2, 33, 5, 17), (3, 16, 4, 16), (1, 40, 3, 37)])
def test_channels_last_round_trip_through_tiles(dtype, shape):
    """NCHW -> padded NHWC (strided_set) and back (compact): the transposing tiles, full and
    partial, with source and destination contiguous along different axes."""
    n, c, h, w = shape
    src = data(n * c * h * w, dtype, 17) if dtype != np.float16 else \
        data(n * c * h * w, np.float32, 17).astype(np.float16)
    padded = np.zeros((n, h + 2, w + 3, c), dtype)
    strides = ((h + 2) * (w + 3) * c, 1, (w + 3) * c, c)
    offset = (w + 3) * c + 2 * c
    strided_set(src, padded.ravel(), shape, strides, offset)
    ref = np.zeros_like(padded)
    ref[:, 1:h + 1, 2:w + 2, :] = src.reshape(shape).transpose(0, 2, 3, 1)
    np.testing.assert_array_equal(padded, ref)
    back = np.empty(src.size, dtype)
    compact(padded.ravel(), back, shape, strides, offset)
    np.testing.assert_array_equal(back, src)


@pytest.mark.parametrize("shape, perm", [((2, 32, 8, 8), (0, 2, 3, 1)),
                                         ((2, 8, 8, 48), (0, 3, 1, 2)),
                                         ((3, 24, 40), (0, 2, 1)), ((40, 17), (1, 0))])
def test_transposing_compact_moves_32_bit_words_exactly(shape, perm):
    """Full 16 x 16 tiles of 32-bit words go through 8 x 8 register transposes
    (_kernels/transpose8.h), ragged edges element by element: every bit pattern arrives
    unchanged (NaN payloads, signed zeros, subnormals), as a numpy transpose of the bits."""
    bits = np.random.default_rng(5).integers(0, 2**32, int(np.prod(shape)), dtype=np.uint32)
    bits[:4] = [0x7FC00001, 0xFF800000, 0x80000000, 0x00000001]   # NaN payload, -inf, -0, tiny
    source = bits.view(np.float32).reshape(shape)
    view = source.transpose(perm)
    out = np.empty(view.size, np.float32)
    compact(source.ravel(), out, view.shape, tuple(st // 4 for st in view.strides), 0)
    np.testing.assert_array_equal(out.view(np.uint32), np.ascontiguousarray(view).ravel()
                                  .view(np.uint32))


def test_strided_set_validation():
    out = np.zeros(10, np.int64)
    with pytest.raises(TypeError):
        strided_set(np.ones(10, np.float32), out, (10,), (1,), 0)
    with pytest.raises(IndexError):
        strided_set(np.ones(10, np.int64), out, (10,), (-1,), 8)
    with pytest.raises(ValueError, match="src has 3"):
        strided_set(np.ones(3, np.int64), out, (10,), (1,), 0)
    np.testing.assert_array_equal(out, 0)


# -------------------------------------------------------------------------------------- cast

@pytest.mark.parametrize("src_dtype", DTYPES)
@pytest.mark.parametrize("dst_dtype", DTYPES)
def test_cast_pairs(src_dtype, dst_dtype):
    for n in (0, 1, 67, 100000):
        a = data(n, src_dtype, n)
        if src_dtype in (np.float32, np.float64):
            a = (a * 50).astype(src_dtype)
        out = np.empty(n, dst_dtype)
        cast(a, out)
        if dst_dtype == np.uint8:
            ref = (a != 0).astype(np.uint8)
        else:
            ref = a.astype(dst_dtype)
        np.testing.assert_array_equal(out, ref)


def test_cast_special_values():
    a = np.array([np.nan, -0.0, 0.0, -2.7, 2.7, -0.5, np.inf], np.float64)
    out = np.empty(7, np.uint8)
    cast(a, out)
    np.testing.assert_array_equal(out, [1, 0, 0, 1, 1, 1, 1])
    ints = np.empty(6, np.int64)
    cast(a[1:6].astype(np.float32).repeat([1, 1, 1, 1, 2]), ints)
    np.testing.assert_array_equal(ints, [0, 0, -2, 2, 0, 0])
    floats = np.empty(3, np.float32)
    cast(np.array([2 ** 40 + 1, -3, 0], np.int64), floats)
    np.testing.assert_array_equal(floats, np.float32([2 ** 40, -3, 0]))


def test_cast_validation():
    with pytest.raises(ValueError):
        cast(np.ones(3, np.float32), np.empty(4, np.float64))
    with pytest.raises(TypeError, match="uint32"):
        cast(np.ones(3, np.uint32), np.empty(3, np.float64))
