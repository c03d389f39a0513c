"""The strided kernels' run tables (minitorch/_cpu/strided.pyx, prepare_blocks): a view whose
innermost rows are short and contiguous on both sides, as the im2col rows of a channels-last
image (kw·C values per kernel row), is copied, added and set a run at a time. Against numpy,
for every element width (16-bit ones are only moved), with overlapping windows (col2im) and in
parallel chunks."""
import numpy as np
import pytest

from minitorch._cpu.strided import compact, strided_add, strided_set
from minitorch._cpu.threads import get_num_threads, set_num_threads
from test_cpu_strided import offsets as flat_offsets

DTYPES = [np.float32, np.float64, np.int64, np.uint8, np.float16]

# (images, padded side, channels, kernel, stride): runs of kw·C = 3, 4, 6, 9, 15 values
WINDOWS = [(2, 9, 1, 3, 1), (2, 10, 1, 4, 2), (2, 9, 2, 3, 1), (3, 11, 3, 3, 2),
           (2, 12, 3, 5, 2)]


def values(n, dtype, seed):
    rng = np.random.default_rng(seed)
    if dtype == np.uint8:           # bool: strided_add is a logical or
        return rng.integers(0, 2, n).astype(np.uint8)
    if dtype == np.int64:
        return rng.integers(-1000, 1000, n).astype(np.int64)
    return rng.standard_normal(n).astype(dtype)


def im2col_view(images, side, channels, kernel, stride):
    """(shape, strides) of the rows (N, OH, OW, kh, kw·C) of a channels-last (N, H, W, C)."""
    out = (side - kernel) // stride + 1
    row = side * channels
    return ((images, out, out, kernel, kernel * channels),
            (side * row, stride * row, stride * channels, row, 1))


@pytest.fixture(params=[1, 2], ids=["1 thread", "2 threads"])
def threads(request):
    before = get_num_threads()
    set_num_threads(request.param)
    yield request.param
    set_num_threads(before)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("window", WINDOWS)
def test_short_runs_compact_add_and_set(threads, dtype, window):
    shape, strides = im2col_view(*window)
    size = window[0] * window[1] ** 2 * window[2]
    image = values(size + 1, dtype, 0)
    where = flat_offsets(shape, strides, 1)          # an offset: runs start off alignment
    rows = np.empty(len(where), dtype)
    compact(image, rows, shape, strides, 1)
    np.testing.assert_array_equal(rows, image[where])

    written = np.zeros(size + 1, dtype)
    expected = np.zeros(size + 1, dtype)
    source = values(len(where), dtype, 2)
    for position, value in zip(where, source):      # overlaps: the last write wins
        expected[position] = value
    strided_set(source, written, shape, strides, 1)
    np.testing.assert_array_equal(written, expected)

    if dtype == np.float16:                          # 16-bit words are moved, not added
        return
    folded = values(size + 1, dtype, 1)
    expected = folded.copy()
    if dtype == np.uint8:
        np.logical_or.at(expected, where, rows.astype(bool))
    else:
        np.add.at(expected, where, rows)
    strided_add(rows, folded, shape, strides, 1)
    if dtype in (np.float32, np.float64):            # overlapping windows: sums in C order
        np.testing.assert_allclose(folded, expected, rtol=1e-6 if dtype == np.float32 else 0)
    else:
        np.testing.assert_array_equal(folded, expected)


def test_large_batch_of_runs_in_parallel_chunks(threads):
    """Enough rows to split across threads (the run tables are per block, shared)."""
    shape, strides = im2col_view(64, 36, 3, 5, 2)
    image = values(64 * 36 * 36 * 3, np.float32, 3)
    rows = np.empty(int(np.prod(shape)), np.float32)
    compact(image, rows, shape, strides, 0)
    np.testing.assert_array_equal(rows, image[flat_offsets(shape, strides, 0)])
