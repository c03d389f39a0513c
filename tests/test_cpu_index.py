"""minitorch._cpu.index (gather, scatter, scatter_add, index_select, index_add, take, put)
against numpy's take_along_axis / put_along_axis / add.at / take."""
import numpy as np
import pytest

from minitorch._cpu.index import (gather, index_add, index_select, put, scatter, scatter_add,
                                  take)

DTYPES = [np.float32, np.float64, np.int64, np.uint8]
# (outer, dim, index_dim, inner); the last two are large enough for the parallel paths
SIZES = [(1, 1, 1, 1), (3, 5, 7, 4), (2, 6, 3, 1), (1, 9, 20, 33), (70, 8, 10, 50),
         (1, 50, 40, 1000), (40, 30, 1000, 1), (2, 30, 20000, 1)]


def values(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if dtype == np.uint8:
        return rng.integers(0, 2, shape).astype(np.uint8)
    if dtype == np.int64:
        return rng.integers(-1000, 1000, shape).astype(np.int64)
    return rng.standard_normal(shape).astype(dtype)


def indices(shape, dim, seed=1):
    return np.random.default_rng(seed).integers(0, dim, shape).astype(np.int64)


def add_reference(out, where, src):
    """np.add.at, with logical or for bool (uint8) buffers."""
    if out.dtype == np.uint8:
        np.logical_or.at(out, where, src)
    else:
        np.add.at(out, where, src)


# ---------------------------------------------------------------------------- gather/scatter

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("outer,dim,index_dim,inner", SIZES)
def test_gather(dtype, outer, dim, index_dim, inner):
    a = values((outer, dim, inner), dtype)
    index = indices((outer, index_dim, inner), dim)
    out = np.empty(index.size, dtype)
    gather(a.ravel(), index.ravel(), out, outer, dim, index_dim, inner)
    np.testing.assert_array_equal(out, np.take_along_axis(a, index, 1).ravel())


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("outer,dim,index_dim,inner", SIZES)
def test_scatter_last_write_wins(dtype, outer, dim, index_dim, inner):
    src = values((outer, index_dim, inner), dtype, 2)
    index = indices((outer, index_dim, inner), dim, 3)
    out = values((outer, dim, inner), dtype, 4)
    ref = out.copy()
    o, i = np.ogrid[:outer, :inner]
    for j in range(index_dim):                  # duplicates: the last j wins
        ref[o, index[:, j, :], i] = src[:, j, :]
    scatter(src.ravel(), index.ravel(), out.reshape(-1), outer, dim, index_dim, inner)
    np.testing.assert_array_equal(out, ref)


def test_scatter_matches_put_along_axis_for_a_permutation():
    rng = np.random.default_rng(5)
    index = np.stack([rng.permutation(6) for _ in range(12)]).reshape(3, 4, 6).transpose(0, 2, 1)
    index = np.ascontiguousarray(index)
    src = values((3, 6, 4), np.float32, 6)
    out = np.zeros((3, 6, 4), np.float32)
    ref = out.copy()
    np.put_along_axis(ref, index, src, 1)
    scatter(src.ravel(), index.ravel(), out.reshape(-1), 3, 6, 6, 4)
    np.testing.assert_array_equal(out, ref)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("outer,dim,index_dim,inner", SIZES)
def test_scatter_add_duplicates(dtype, outer, dim, index_dim, inner):
    src = values((outer, index_dim, inner), dtype, 7)
    index = indices((outer, index_dim, inner), dim, 8)
    out = values((outer, dim, inner), dtype, 9)
    ref = out.copy()
    o, i = np.ogrid[:outer, :inner]
    add_reference(ref, (o[:, None, :], index, i[None, :, :]), src)
    scatter_add(src.ravel(), index.ravel(), out.reshape(-1), outer, dim, index_dim, inner)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------ index_select / index_add

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("outer,dim,n_index,inner", SIZES)
def test_index_select(dtype, outer, dim, n_index, inner):
    a = values((outer, dim, inner), dtype, 10)
    index = indices(n_index, dim, 11)
    out = np.empty(outer * n_index * inner, dtype)
    index_select(a.ravel(), index, out, outer, dim, n_index, inner)
    np.testing.assert_array_equal(out, np.take(a, index, axis=1).ravel())


def test_index_select_embedding():
    table = values((1000, 64), np.float32, 12)
    ids = indices(4096, 1000, 13)
    out = np.empty(4096 * 64, np.float32)
    index_select(table.ravel(), ids, out, 1, 1000, 4096, 64)
    np.testing.assert_array_equal(out.reshape(4096, 64), table[ids])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("outer,dim,n_index,inner", SIZES)
def test_index_add_duplicates(dtype, outer, dim, n_index, inner):
    src = values((outer, n_index, inner), dtype, 14)
    index = indices(n_index, dim, 15)
    out = values((outer, dim, inner), dtype, 16)
    ref = out.copy()
    add_reference(ref, (slice(None), index), src)
    index_add(src.ravel(), index, out.reshape(-1), outer, dim, n_index, inner)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


# ----------------------------------------------------------------------------- take / put

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [0, 1, 17, 100000])
def test_take(dtype, n):
    a = values(1000, dtype, 17)
    offsets = indices(n, 1000, 18)
    out = np.empty(n, dtype)
    take(a, offsets, out)
    np.testing.assert_array_equal(out, np.take(a, offsets))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [0, 1, 17, 5000])
def test_put(dtype, n):
    src = values(n, dtype, 19)
    offsets = indices(n, 300, 20)
    out = values(300, dtype, 21)
    ref = out.copy()
    for k in range(n):                          # duplicates: the last one wins
        ref[offsets[k]] = src[k]
    put(src, offsets, out, False)
    np.testing.assert_array_equal(out, ref)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [0, 1, 17, 5000])
def test_put_accumulate(dtype, n):
    src = values(n, dtype, 22)
    offsets = indices(n, 300, 23)
    out = values(300, dtype, 24)
    ref = out.copy()
    add_reference(ref, offsets, src)
    put(src, offsets, out, True)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("accumulate", [False, True])
def test_put_broadcast_one_value(accumulate):
    out = np.zeros(10, np.float64)
    put(np.array([2.5]), np.array([1, 3, 3, 9]), out, accumulate)
    ref = np.zeros(10)
    ref[[1, 3, 9]] = 2.5
    if accumulate:
        ref[3] = 5.0
    np.testing.assert_array_equal(out, ref)


# ----------------------------------------------------------------------------- validation

BAD = [-1, 5, 2 ** 40, -2 ** 62]


def kernels(bad):
    """Each kernel called with one index equal to `bad` (dimension size 5), and its out."""
    index = np.array([0, 4, bad, 1], np.int64)
    f4 = lambda n: np.arange(n, dtype=np.float32)   # noqa: E731
    return [
        (gather, (f4(5), index, None, 1, 5, 4, 1), 4),
        (scatter, (f4(4), index, None, 1, 5, 4, 1), 5),
        (scatter_add, (f4(4), index, None, 1, 5, 4, 1), 5),
        (index_select, (f4(10), index, None, 1, 5, 4, 2), 8),
        (index_add, (f4(8), index, None, 1, 5, 4, 2), 10),
        (take, (f4(5), index, None), 4),
        (put, (f4(4), index, None, False), 5),
        (put, (f4(4), index, None, True), 5),
    ]


@pytest.mark.parametrize("bad", BAD)
def test_out_of_range_index_raises_and_leaves_out_unchanged(bad):
    for fn, args, n_out in kernels(bad):
        out = np.full(n_out, -7, np.float32)
        args = tuple(out if a is None else a for a in args)
        with pytest.raises(IndexError, match=f"index {bad} is out of bounds for dimension "
                                             f"with size 5"):
            fn(*args)
        np.testing.assert_array_equal(out, -7, err_msg=fn.__name__)


def test_first_bad_index_is_reported_in_large_index():
    index = indices(200000, 10, 25)
    index[150000] = 12
    index[190000] = -3
    out = np.full(200000, -7.0)
    with pytest.raises(IndexError, match="index 12 is out"):
        take(np.zeros(10), index, out)
    np.testing.assert_array_equal(out, -7.0)


def test_empty_index():
    out = np.full(6, 3.0)
    empty = np.empty(0, np.int64)
    gather(np.zeros(6), empty, np.empty(0), 2, 3, 0, 1)
    scatter(np.empty(0), empty, out, 2, 3, 0, 1)
    scatter_add(np.empty(0), empty, out, 2, 3, 0, 1)
    index_select(np.zeros(6), empty, np.empty(0), 2, 3, 0, 1)
    index_add(np.empty(0), empty, out, 2, 3, 0, 1)
    take(np.zeros(6), empty, np.empty(0))
    put(np.empty(0), empty, out, True)
    np.testing.assert_array_equal(out, 3.0)


def test_type_and_size_validation():
    a = np.zeros(6, np.float32)
    index = np.zeros(2, np.int64)
    with pytest.raises(TypeError, match="int64"):
        gather(a, index.astype(np.int32), np.empty(2, np.float32), 1, 6, 2, 1)
    with pytest.raises(TypeError, match="float32.*float64"):
        gather(a, index, np.empty(2, np.float64), 1, 6, 2, 1)
    with pytest.raises(TypeError, match="complex64"):
        take(np.zeros(6, np.complex64), index, np.empty(2, np.complex64))
    with pytest.raises(ValueError, match="a has 6 elements but 7"):
        gather(a, index, np.empty(2, np.float32), 1, 7, 2, 1)
    with pytest.raises(ValueError, match="out has 1 elements"):
        index_select(a, index, np.empty(1, np.float32), 1, 6, 2, 1)
    with pytest.raises(ValueError, match="index has 2 elements but 3"):
        scatter_add(np.zeros(3, np.float32), index, a, 1, 6, 3, 1)
    with pytest.raises(ValueError, match="src has 2 elements but 3"):
        put(np.zeros(2, np.float32), np.zeros(3, np.int64), a, True)
    with pytest.raises(ValueError, match="non-negative"):
        index_add(a, index, a, 1, -6, 2, 1)
    with pytest.raises(ValueError, match="overflow"):
        gather(a, index, a, 2 ** 40, 2 ** 40, 1, 1)
