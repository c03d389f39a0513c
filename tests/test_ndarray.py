"""NDArray views and ops against numpy: layouts, dtypes, sharing, and errors."""
import numpy as np
import pytest

from minitorch import dtypes
from minitorch.ndarray import NDArray, broadcast_shapes
from minitorch.opcodes import BinaryOp, ReduceOp, UnaryOp

FLOATS = [np.float32, np.float64]


def nd(array):
    return NDArray.from_numpy(np.asarray(array))


def layouts(rng, shape, dtype=np.float64):
    """(numpy array, NDArray) pairs with the same values in several memory layouts."""
    base = rng.standard_normal(shape).astype(dtype)
    yield base, nd(base)
    if len(shape) >= 2:                                  # permuted (non-contiguous)
        t = nd(np.ascontiguousarray(base.swapaxes(0, -1))).transpose(0, -1)
        yield base, t
    big = rng.standard_normal(tuple(2 * s + 1 for s in shape)).astype(dtype)
    key = tuple(slice(1, None, 2) for _ in shape)           # stepped slices of a bigger array
    yield big[key], nd(big)[key]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.bool_])
def test_round_trip_every_dtype(rng, dtype):
    a = (rng.standard_normal((3, 4)) * 5).astype(dtype)
    x = nd(a)
    assert x.dtype is dtypes.from_numpy(dtype)
    np.testing.assert_array_equal(x.numpy(), a)
    assert x.numpy().dtype == np.dtype(dtype)


def test_from_numpy_copies_and_numpy_shares(rng):
    a = rng.standard_normal(5)
    x = nd(a)
    a[0] = 100.0
    assert x.numpy()[0] != 100.0
    x.numpy()[1] = 7.0
    assert x.numpy()[1] == 7.0


def test_zero_d_and_empty():
    x = nd(np.float32(3.5))
    assert x.shape == () and x.numpy() == np.float32(3.5)
    e = nd(np.zeros((0, 3), np.float32))
    assert e.size == 0 and e.numpy().shape == (0, 3)
    assert e.reshape((3, 0)).shape == (3, 0)


@pytest.mark.parametrize("key", [
    0, -1, (1, 2), slice(None), slice(1, None, 2), slice(None, None, -1), slice(-1, 0, -2),
    (Ellipsis, 1), (None, 0), (slice(None), None, slice(None, None, 3)), (1, Ellipsis, None),
    (slice(5, 1), 0), (slice(None, None, -3), slice(1, 3), -2),
])
def test_getitem_matches_numpy_and_shares(rng, key):
    a = rng.standard_normal((5, 6, 7))
    x = nd(a)
    view = x[key]
    np.testing.assert_array_equal(view.numpy(), a[key])
    assert view.buffer is x.buffer


def test_getitem_errors():
    x = nd(np.zeros((2, 3)))
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 1 with size 3"):
        x[0, 3]
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 2"):
        x[0, 0, 0]
    with pytest.raises(IndexError, match="single ellipsis"):
        x[..., ...]


def test_setitem_through_views_changes_base(rng):
    a = rng.standard_normal((4, 5))
    x = nd(a)
    x[1] = 3.0
    x[:, ::2] = nd(np.arange(3.0))            # broadcast row into a stepped view
    x.transpose(0, 1)[4, ::-1] = nd(np.array([9.0, 8, 7, 6]))
    a[1] = 3.0
    a[:, ::2] = np.arange(3.0)
    a.T[4, ::-1] = [9.0, 8, 7, 6]
    np.testing.assert_array_equal(x.numpy(), a)


def test_setitem_overlapping_source_reads_old_values():
    a = np.arange(10.0)
    x = nd(a)
    x[1:] = x[:-1]
    a[1:] = a[:-1].copy()
    np.testing.assert_array_equal(x.numpy(), a)


def test_setitem_casts_value_dtype():
    x = nd(np.zeros(3, np.int64))
    x[:] = nd(np.array([1.7, -2.2, 3.9]))
    np.testing.assert_array_equal(x.numpy(), [1, -2, 3])


def test_reshape_view_when_possible_copy_otherwise(rng):
    a = rng.standard_normal((4, 6))
    x = nd(a)
    v = x.reshape((2, 2, 6))
    assert v.buffer is x.buffer
    t = x.transpose(0, 1)                        # (6, 4), not contiguous
    assert t.reshape((3, 2, 4)).buffer is t.buffer   # splits one axis: still a view
    c = t.reshape((24,))
    assert c.buffer is not x.buffer
    np.testing.assert_array_equal(c.numpy(), a.T.reshape(24))
    np.testing.assert_array_equal(x.reshape((-1, 3)).numpy(), a.reshape(-1, 3))
    with pytest.raises(RuntimeError, match=r"shape '\[5, 5\]' is invalid for input of size 24"):
        x.reshape((5, 5))
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        t.view((24,))


def test_permute_expand_as_strided(rng):
    a = rng.standard_normal((2, 3, 4))
    x = nd(a)
    np.testing.assert_array_equal(x.permute((2, 0, 1)).numpy(), a.transpose(2, 0, 1))
    e = nd(a[:, :1]).expand((5, 2, 3, 4))
    np.testing.assert_array_equal(e.numpy(), np.broadcast_to(a[:, :1], (5, 2, 3, 4)))
    assert e.strides[0] == 0
    w = nd(np.arange(10.0)).as_strided((4, 3), (2, 1))      # overlapping windows
    np.testing.assert_array_equal(w.numpy(), [[0, 1, 2], [2, 3, 4], [4, 5, 6], [6, 7, 8]])
    with pytest.raises(RuntimeError, match="out of bounds for storage"):
        nd(np.arange(10.0)).as_strided((4, 3), (3, 1))
    with pytest.raises(RuntimeError, match="duplicate dims"):
        x.permute((0, 0, 1))
    with pytest.raises(RuntimeError, match=r"expanded size of the tensor \(5\) must match"):
        x.expand((2, 5, 4))
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of "
                                          r"\[-3, 2\], but got 3\)"):
        x.transpose(0, 3)


def test_negative_shape_rejected():
    with pytest.raises(RuntimeError, match="negative dimension -1"):
        NDArray.full((2, -1), 0.0)


@pytest.mark.parametrize("dtype", FLOATS)
def test_compact_of_every_layout(rng, dtype):
    for a, x in layouts(rng, (5, 7, 3), dtype):
        c = x.compact()
        assert c.is_compact()
        np.testing.assert_array_equal(c.numpy(), a)


@pytest.mark.parametrize("dtype", FLOATS)
def test_binary_broadcast_over_layouts(rng, dtype):
    for a, x in layouts(rng, (4, 5, 6), dtype):
        for b_shape in [(6,), (5, 1), (4, 1, 6), (), (4, 5, 6)]:
            b = rng.standard_normal(b_shape).astype(dtype)
            got = x.binary(BinaryOp.MUL, nd(b)).numpy()
            np.testing.assert_allclose(got, a * b, rtol=1e-6)
            np.testing.assert_array_equal(nd(b).binary(BinaryOp.LT, x).numpy(), b < a)


def test_broadcast_error_message():
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(2\) must match the size of "
                                           r"tensor b \(3\) at non-singleton dimension 1"):
        broadcast_shapes((4, 2), (3,))


def test_unary_and_cast(rng):
    a = rng.standard_normal((3, 4))
    x = nd(a).transpose(0, 1)
    np.testing.assert_allclose(x.unary(UnaryOp.EXP).numpy(), np.exp(a.T))
    np.testing.assert_array_equal(x.astype(dtypes.int64).numpy(), a.T.astype(np.int64))
    np.testing.assert_array_equal(x.unary(UnaryOp.ISNAN).numpy(), np.zeros((4, 3), bool))


def test_where(rng):
    c = rng.random((3, 1)) > 0.5
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4,))
    got = nd(c).where(nd(a), nd(b)).numpy()
    np.testing.assert_array_equal(got, np.where(c, a, b))


@pytest.mark.parametrize("dims", [None, 0, 1, 2, -1, (0, 2), (1, 2), (0, 1), (2, 0, 1)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_reduce_sum_max_over_layouts(rng, dims, keepdim):
    for a, x in layouts(rng, (3, 4, 5)):
        np_dims = tuple(d % 3 for d in dims) if isinstance(dims, tuple) else dims
        np.testing.assert_allclose(x.reduce(ReduceOp.SUM, dims, keepdim).numpy(),
                                   a.sum(axis=np_dims, keepdims=keepdim), rtol=1e-12)
        np.testing.assert_array_equal(x.reduce(ReduceOp.MAX, dims, keepdim).numpy(),
                                      a.max(axis=np_dims, keepdims=keepdim))


def test_argmax_and_empty_reductions(rng):
    a = rng.standard_normal((4, 6))
    np.testing.assert_array_equal(nd(a).reduce(ReduceOp.ARGMAX, 1).numpy(), a.argmax(1))
    empty = nd(np.zeros((0, 3)))
    np.testing.assert_array_equal(empty.reduce(ReduceOp.SUM, 0).numpy(), np.zeros(3))
    with pytest.raises(IndexError, match="non-zero size"):
        empty.reduce(ReduceOp.MAX, 0)


def test_scan(rng):
    a = rng.standard_normal((3, 4, 5))
    np.testing.assert_allclose(nd(a).scan(ReduceOp.SUM, 1).numpy(), np.cumsum(a, 1))
    np.testing.assert_allclose(nd(a).transpose(0, 2).scan(ReduceOp.PROD, -1).numpy(),
                               np.cumprod(a.transpose(2, 1, 0), -1))


@pytest.mark.parametrize("a_shape,b_shape", [
    ((3, 4), (4, 5)), ((2, 3, 4), (4, 5)), ((3, 4), (2, 4, 5)), ((2, 1, 3, 4), (1, 5, 4, 2)),
    ((0, 4), (4, 3)), ((3, 0), (0, 2)),
])
def test_matmul_batched_broadcast(rng, a_shape, b_shape):
    a, b = rng.standard_normal(a_shape), rng.standard_normal(b_shape)
    np.testing.assert_allclose(nd(a).matmul(nd(b)).numpy(), a @ b, rtol=1e-10, atol=1e-12)


def test_matmul_transposed_operand_and_error(rng):
    a, b = rng.standard_normal((5, 3)), rng.standard_normal((5, 4))
    np.testing.assert_allclose(nd(a).transpose(0, 1).matmul(nd(b)).numpy(), a.T @ b)
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied "
                                           r"\(2x3 and 4x5\)"):
        nd(np.zeros((2, 3))).matmul(nd(np.zeros((4, 5))))


def test_gather_scatter_index_ops(rng):
    a = rng.standard_normal((4, 5))
    idx = rng.integers(0, 5, (4, 3))
    np.testing.assert_array_equal(nd(a).gather(1, nd(idx)).numpy(),
                                  np.take_along_axis(a, idx, 1))
    out = nd(np.zeros((4, 5)))
    src = rng.standard_normal((4, 3))
    out.scatter_into(1, nd(idx), nd(src), accumulate=True)
    expected = np.zeros((4, 5))
    np.add.at(expected, (np.arange(4)[:, None], idx), src)
    np.testing.assert_allclose(out.numpy(), expected)
    sel = np.array([3, 0, 3])
    np.testing.assert_array_equal(nd(a).index_select(0, nd(sel)).numpy(), a[sel])
    acc = nd(np.zeros((4, 5)))
    acc.transpose(0, 1).index_add_into(1, nd(sel), nd(np.ones((5, 3))))
    expected = np.zeros((4, 5))
    np.add.at(expected, sel, 1.0)
    np.testing.assert_array_equal(acc.numpy(), expected)


def test_gather_smaller_index_and_bad_index_leaves_target(rng):
    a = rng.standard_normal((4, 5))
    idx = np.array([[4, 0], [1, 1]])
    np.testing.assert_array_equal(nd(a).gather(1, nd(idx)).numpy(),
                                  np.take_along_axis(a[:2], idx, 1))
    target = nd(np.zeros((2, 3)))
    with pytest.raises(IndexError, match="out of bounds"):
        target.scatter_into(1, nd(np.array([[0, 3]])), nd(np.ones((1, 2))), accumulate=False)
    np.testing.assert_array_equal(target.numpy(), np.zeros((2, 3)))
    with pytest.raises(RuntimeError, match="Expected dtype int64"):
        nd(a).gather(1, nd(idx.astype(np.float64)))
