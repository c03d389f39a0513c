"""Indexing (getitem / setitem) and the index ops, against numpy and torch's pinned behaviour."""
import warnings

import numpy as np
import pytest

import minitorch as mt
from minitorch.autograd import gradcheck, gradgradcheck

X = np.arange(24.0).reshape(2, 3, 4)


def t64(array, requires_grad=True):
    return mt.tensor(np.asarray(array, np.float64), dtype=mt.float64, requires_grad=requires_grad)


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def numpy_key(key):
    """The same key for numpy (lists as int arrays, empty ones too)."""
    def item(k):
        return np.asarray(k, dtype=None if k else np.int64) if isinstance(k, list) else k
    return tuple(item(k) for k in key) if isinstance(key, tuple) else item(key)


def check_grads(fn, *arrays):
    inputs = tuple(t64(a) for a in arrays)
    assert gradcheck(fn, inputs)
    assert gradgradcheck(fn, inputs)


# ---- getitem: basic keys are views ------------------------------------------------------------
BASIC_KEYS = [
    0, -1, (1, 2), (0, -1, -4), slice(1, None), slice(None, None, 2), (slice(None), slice(1, 3)),
    (Ellipsis, 1), (1, Ellipsis), (None, 0), (0, None, slice(None), None), Ellipsis, (),
    (slice(-2, None), slice(None, None, 3), slice(5, 9)), (slice(0, 0),), (None,),
]


@pytest.mark.parametrize("key", BASIC_KEYS, ids=repr)
def test_basic_getitem_matches_numpy_and_is_a_view(device, key):
    x = mt.tensor(X, device=device)
    y = x[key]
    np.testing.assert_array_equal(y.cpu().numpy(), X[key])
    assert y._data.buffer is x._data.buffer and y._version is x._version


def test_basic_views_of_non_contiguous_tensors(device):
    base = mt.tensor(X, device=device).permute(2, 0, 1)[:, 1:, ::2]
    expected = X.transpose(2, 0, 1)[:, 1:, ::2]
    for key in [(0,), (slice(1, 3), 0), (Ellipsis, -1), (None, 1, slice(None), 0)]:
        np.testing.assert_array_equal(base[key].cpu().numpy(), expected[key])


def test_zero_d_tensor_indexing(device):
    x = mt.tensor(5.0, device=device)
    assert x[...].shape == () and x[None].shape == (1,) and x[()].item() == 5.0
    with pytest.raises(IndexError, match="invalid index of a 0-dim tensor"):
        x[0]


def test_writes_through_basic_views_change_the_base(device):
    x = mt.zeros(3, 4, device=device)
    row = x[1]
    row.fill_(2.0)
    x[:, 1:3][0].fill_(7.0)
    expected = np.zeros((3, 4))
    expected[1] = 2.0
    expected[0, 1:3] = 7.0
    np.testing.assert_array_equal(x.cpu().numpy(), expected)
    assert x._version_counter == row._version_counter > 0


@pytest.mark.parametrize("key,name", [
    ((slice(None),), "AliasBackward0"), ((Ellipsis,), "AliasBackward0"),
    ((0,), "SelectBackward0"), ((slice(1, 2),), "SliceBackward0"),
    ((0, slice(1, 2)), "SliceBackward0"), ((slice(1, 2), 0), "SelectBackward0"),
    ((None,), "UnsqueezeBackward0"), ((0, None), "UnsqueezeBackward0"),
    ((None, 0), "SelectBackward0"), (([0, 1],), "IndexBackward0"),
    ((0, [0, 1]), "IndexBackward0"),
], ids=repr)
def test_grad_fn_names_follow_torch(key, name):
    x = mt.tensor(X, requires_grad=True)
    assert x[key].grad_fn.name() == name


# ---- getitem: advanced keys copy --------------------------------------------------------------
ADVANCED_KEYS = [
    [1, 0, 1], ([[0, 1], [1, 1]],), (slice(None), [0, 2, 2], [1, 3, 3]),
    ([0, 1], slice(None), [1, 2]),
    ([-1, -2], slice(None), [-4, 3]), (slice(None), [[0], [2]], slice(1, 3)),
    (Ellipsis, [3, 0]), ([1], [2], [3]), (slice(None), slice(None, None, 2), [1, 3]),
    ([[0], [1]], [0, 2], slice(None)), ([], slice(1, None)),
]


@pytest.mark.parametrize("key", ADVANCED_KEYS, ids=repr)
def test_advanced_getitem_matches_numpy(device, key):
    x = mt.tensor(X, device=device)
    y = x[key]
    expected = X[numpy_key(key)]
    np.testing.assert_array_equal(y.cpu().numpy(), expected)
    assert y.shape == expected.shape
    assert y._data.buffer is not x._data.buffer


def test_index_tensor_and_permuted_input(device):
    x = mt.tensor(X, device=device).permute(2, 0, 1)
    index = mt.tensor([[1, 3], [0, -1]], device=device)
    expected = X.transpose(2, 0, 1)[np.array([[1, 3], [0, -1]])]
    np.testing.assert_array_equal(x[index].cpu().numpy(), expected)
    np.testing.assert_array_equal(x[index, :, [2, 0]].cpu().numpy(),
                                  X.transpose(2, 0, 1)[np.array([[1, 3], [0, -1]]), :, [2, 0]])


def test_ints_are_basic_before_advanced_indices(device):
    """torch applies ints as views first, so x[0, :, idx] keeps the slice dim in front (numpy
    would treat the int as an advanced index and move the index dims first)."""
    x = mt.tensor(X, device=device)
    np.testing.assert_array_equal(x[0, :, [1, 2]].cpu().numpy(), X[0][:, [1, 2]])
    assert x[[0, 1], :, 0].shape == (2, 3)
    assert x[[0, 1], None, [1, 2]].shape == (2, 1, 4)   # None separates the index tensors


def test_bool_masks_index_like_nonzero(device):
    x = mt.tensor(X, device=device)
    mask = X % 3 == 0
    np.testing.assert_array_equal(x[mt.tensor(mask, device=device)].cpu().numpy(), X[mask])
    row_mask = np.array([True, False, True])
    np.testing.assert_array_equal(x[:, mt.tensor(row_mask, device=device)].cpu().numpy(),
                                  X[:, row_mask])
    plane = X[0] > 5
    np.testing.assert_array_equal(x[:, mt.tensor(plane, device=device)].cpu().numpy(),
                                  X[:, plane])
    np.testing.assert_array_equal(x[[True, False]].cpu().numpy(), X[[True, False]])
    both = x[mt.tensor([True, False], device=device), :, mt.tensor([False, True, True, False],
                                                                   device=device)]
    np.testing.assert_array_equal(both.cpu().numpy(), X[[0], :, [1, 2]].reshape(2, 3))
    mixed = x[mt.tensor(X[:, :, 0] > 10, device=device), [1, 2, 3]]
    np.testing.assert_array_equal(mixed.cpu().numpy(), X[X[:, :, 0] > 10, np.array([1, 2, 3])])


def test_masks_on_non_contiguous_views(device):
    base = mt.tensor(X, device=device)
    view, expected = base.permute(2, 0, 1)[:, :, ::2], X.transpose(2, 0, 1)[:, :, ::2]
    mask = expected[0] > 3
    np.testing.assert_array_equal(view[:, mt.tensor(mask, device=device)].cpu().numpy(),
                                  expected[:, mask])
    full = expected % 2 == 0
    np.testing.assert_array_equal(view[mt.tensor(full, device=device)].cpu().numpy(),
                                  expected[full])


def test_bool_scalars_and_empty_results(device):
    x = mt.tensor(X, device=device)
    assert x[True].shape == (1, 2, 3, 4) and x[False].shape == (0, 2, 3, 4)
    assert x[:, True].shape == (2, 1, 3, 4)
    assert x[mt.tensor(True, device=device), [0, 1]].shape == (2, 3, 4)
    assert mt.tensor(5.0, device=device)[mt.tensor(True, device=device)].shape == (1,)
    assert mt.arange(3.0, device=device)[mt.tensor(False, device=device)].shape == (0, 3)
    empty = x[x > 100]
    assert empty.shape == (0,) and empty.dtype is x.dtype
    assert x[[]].shape == (0, 3, 4)
    assert x[mt.tensor([], dtype=mt.int64, device=device), 1:].shape == (0, 2, 4)
    assert mt.zeros(0, 3, device=device)[:, [0, 2]].shape == (0, 2)


def test_zero_d_int_tensor_is_an_int(device):
    x = mt.tensor(X, device=device)
    y = x[mt.tensor(1, device=device)]
    assert y.shape == (3, 4) and y._data.buffer is x._data.buffer
    assert x[mt.tensor(1, device=device), [0, 2]].shape == (2, 4)


def test_list_with_sequences_is_read_as_a_tuple(device):
    x = mt.tensor(X, device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_array_equal(x[[[0, 1], [1, 0]]].cpu().numpy(), X[[0, 1], [1, 0]])
        assert x[[0, slice(None)]].shape == (3, 4)


@pytest.mark.parametrize("key,kind,message", [
    (5, IndexError, "index 5 is out of bounds for dimension 0 with size 2"),
    ((0, 5), IndexError, "index 5 is out of bounds for dimension 1 with size 3"),
    ([5], IndexError, "index 5 is out of bounds for dimension 0 with size 2"),
    ((0, [5]), IndexError, "index 5 is out of bounds for dimension 0 with size 3"),
    ((slice(None), [5]), IndexError, "index 5 is out of bounds for dimension 0 with size 3"),
    ((slice(None), slice(None), [1, 7, 9]), IndexError,
     "index 7 is out of bounds for dimension 0 with size 4"),
    ((slice(None), slice(None), [-5]), IndexError,
     "index -5 is out of bounds for dimension 0 with size 4"),
    (([0], slice(None), [9]), IndexError, "index 9 is out of bounds for dimension 1 with size 4"),
    (([0], [1], [9]), IndexError, "index 9 is out of bounds for dimension 2 with size 4"),
    (([3], [9]), IndexError, "index 3 is out of bounds for dimension 0 with size 2"),
    (([0, 1], [0, 1, 2]), IndexError, "shape mismatch: indexing tensors could not be broadcast "
                                      "together with shapes [2], [3]"),
    ((0, 0, 0, 0), IndexError, "too many indices for tensor of dimension 3"),
    ((Ellipsis, Ellipsis), IndexError, "an index can only have a single ellipsis"),
    (slice(None, None, -1), ValueError, "step must be greater than zero"),
    (slice(None, None, 0), ValueError, "slice step cannot be zero"),
    (1.0, IndexError, "only integers, slices"),
], ids=repr)
def test_getitem_errors(device, key, kind, message):
    x = mt.tensor(X, device=device)
    with pytest.raises(kind) as info:
        x[key]
    assert message in str(info.value)


def test_getitem_tensor_errors(device):
    x = mt.tensor(X, device=device)
    with pytest.raises(IndexError, match="tensors used as indices must be long, int, byte or "
                                         "bool tensors"):
        x[mt.tensor([1.0], device=device)]
    with pytest.raises(IndexError) as info:
        mt.zeros(4, device=device)[mt.tensor([True, False, True], device=device)]
    assert str(info.value) == ("The shape of the mask [3] at index 0 does not match the shape of "
                               "the indexed tensor [4] at index 0")
    with pytest.raises(IndexError) as info:
        mt.zeros(2, 4, device=device)[:, mt.tensor([True, False, True], device=device)]
    assert str(info.value) == ("The shape of the mask [3] at index 0 does not match the shape of "
                               "the indexed tensor [2, 4] at index 1")
    with pytest.raises(IndexError, match=r"mask \[2, 3\] at index 1 .* \[2, 4\] at index 1"):
        mt.zeros(2, 4, device=device)[mt.ones(2, 3, dtype=mt.bool, device=device)]


# ---- getitem gradients ------------------------------------------------------------------------
@pytest.mark.parametrize("key", [
    0, (slice(None), -1), (slice(1, None), None, slice(None, None, 2)), ([0, 1, 1],),
    (slice(None), [0, 2, 2], [1, 3, 3]), ([1, 0], slice(None), [1, 1]), (0, slice(None), [3, 3]),
    (Ellipsis, [[0], [1]], [2, 2]),
], ids=repr)
def test_getitem_gradients(key):
    check_grads(lambda x: x[key], rand(2, 3, 4))


def test_mask_and_permuted_getitem_gradients():
    data = rand(2, 3, 4)
    mask = mt.tensor(data > 0)
    check_grads(lambda x: x[mask], data)
    plane = mt.tensor(data[:, :, 0] > 0)
    check_grads(lambda x: x.permute(2, 0, 1)[1:, plane] * 2, data)
    check_grads(lambda x: x[x > 0.1] ** 2, data)


def test_duplicate_indices_accumulate_gradients():
    x = mt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x[[0, 0, 2, 0]].sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 0.0, 1.0])
    y = mt.tensor(X, requires_grad=True)
    (y[[1, 1], :, [0, 0]] * 2).sum().backward()
    expected = np.zeros_like(X)
    expected[1, :, 0] = 4.0
    np.testing.assert_array_equal(y.grad.numpy(), expected)


# ---- setitem ----------------------------------------------------------------------------------
@pytest.mark.parametrize("key,value", [
    (0, 7.0), ((slice(None), 1), np.arange(4.0)), ((Ellipsis, slice(1, 3)), np.ones((1, 1, 2))),
    ([1, 0], 5.0), ((slice(None), [0, 2], [1, 3]), np.array([[1.0, 2.0], [3.0, 4.0]])),
    (([0, 1], slice(None), [1, 2]), np.arange(6.0).reshape(2, 3)),
    ((0, slice(None), [0, 3]), np.array([[1.0, 2.0]])),
    ((slice(None), slice(None, None, 2)), -1.0), ((None, 1, 2), np.arange(4.0)),
], ids=repr)
def test_setitem_matches_numpy(device, key, value):
    x = mt.tensor(X, device=device)
    version = x._version_counter
    x[key] = mt.tensor(value, device=device) if isinstance(value, np.ndarray) else value
    expected = X.copy()
    nkey = numpy_key(key)
    if isinstance(key, tuple) and key and key[0] == 0 and isinstance(key[-1], list):
        expected[0][:, key[-1]] = value    # torch: the int is a view first
    else:
        expected[nkey] = value
    np.testing.assert_array_equal(x.cpu().numpy(), expected)
    assert x._version_counter == version + 1


def test_setitem_masks_casts_and_overlap(device):
    x = mt.tensor(X, device=device)
    x[x > 10] = 0
    expected = np.where(X > 10, 0, X)
    np.testing.assert_array_equal(x.cpu().numpy(), expected)
    x[:, mt.tensor([True, False, True], device=device)] = mt.tensor([1.0, 2.0, 3.0, 4.0],
                                                                    dtype=mt.float64,
                                                                    device=device)
    expected[:, [0, 2]] = [1.0, 2.0, 3.0, 4.0]
    np.testing.assert_array_equal(x.cpu().numpy(), expected)
    ints = mt.zeros(3, dtype=mt.int64, device=device)
    ints[0] = 2.7
    ints[mt.tensor([False, True, False], device=device)] = 1.9
    # index tensors run index_put_, which (as in torch) wants the value's dtype
    with pytest.raises(RuntimeError, match="Index put requires the source and destination"):
        ints[[1, 2]] = mt.tensor([1.9, -1.5], device=device)
    np.testing.assert_array_equal(ints.cpu().numpy(), [2, 1, 0])
    shifted = mt.arange(6.0, device=device)
    shifted[1:] = shifted[:-1]
    np.testing.assert_array_equal(shifted.cpu().numpy(), [0, 0, 1, 2, 3, 4])
    rolled = mt.arange(4.0, device=device)
    rolled[[0, 1, 2, 3]] = rolled[[3, 0, 1, 2]]
    np.testing.assert_array_equal(rolled.cpu().numpy(), [3, 0, 1, 2])


def test_setitem_through_non_contiguous_views(device):
    base = mt.tensor(X, device=device)
    view = base.permute(2, 0, 1)[:, :, ::2]
    view[[1, 3], 0] = -1.0
    view[mt.tensor(X.transpose(2, 0, 1)[:, :, ::2] > 20, device=device)] = -2.0
    expected = X.copy()
    view_np = expected.transpose(2, 0, 1)[:, :, ::2]
    view_np[[1, 3], 0] = -1.0
    view_np[X.transpose(2, 0, 1)[:, :, ::2] > 20] = -2.0
    np.testing.assert_array_equal(base.cpu().numpy(), expected)


def test_augmented_assignment_with_duplicates_does_not_accumulate(device):
    x = mt.zeros(2, 3, device=device)
    x[0, [0, 0]] += 1
    x[:, 1] *= 2
    x[mt.tensor([0, 0], device=device)] = mt.tensor([1.0, 2.0], device=device)[:, None]
    np.testing.assert_array_equal(x.cpu().numpy(), [[2, 2, 2], [0, 0, 0]])


AUGMENTED_KEYS = [1, slice(1, None), (slice(None), 1), (slice(None, None, 2), 0),
                  (1, slice(0, 1)), (-1, -2)]


@pytest.mark.parametrize("key", AUGMENTED_KEYS, ids=repr)
def test_augmented_assignment_through_basic_keys(device, key):
    """`x[key] op= v` on ints / slices / tuples of them, strided regions included: values as
    numpy, the version moves (saved tensors see the write), and with history the gradients are
    torch's (the write-back of the view onto itself records nothing of its own)."""
    base = np.arange(12.0).reshape(4, 3)
    x, expected = mt.tensor(base, device=device), base.copy()
    version = x._version[0]
    x[key] -= 2.5
    x[key] *= 3
    x[key] += mt.ones(np.shape(expected[key]), device=device)
    expected[key] = (expected[key] - 2.5) * 3 + 1
    np.testing.assert_array_equal(x.cpu().numpy(), expected)
    assert x._version[0] > version

    def run(lib, dev):
        w = lib.tensor(base, dtype=lib.float64, device=dev, requires_grad=True)
        v = lib.tensor(np.full(np.shape(base[key]), 2.0), dtype=lib.float64, device=dev,
                       requires_grad=True)
        f = lib.zeros_like(w)
        f[key] += v * w[key]
        f[key] -= w[key]
        (f * f).sum().backward()
        return f.detach().cpu().numpy(), w.grad.cpu().numpy(), v.grad.cpu().numpy()

    ours = run(mt, device)
    w, v = base, np.full(np.shape(base[key]), 2.0)
    f = np.zeros_like(base)
    f[key] = v * w[key] - w[key]
    np.testing.assert_allclose(ours[0], f)
    grad_w = np.zeros_like(base)
    grad_w[key] = 2 * f[key] * (v - 1)
    np.testing.assert_allclose(ours[1], grad_w)
    np.testing.assert_allclose(ours[2], 2 * f[key] * w[key])


def test_in_place_refuses_an_operand_partly_over_the_written_memory(device):
    """torch's partial-overlap check: x[1:] -= x[:-1] would depend on the order of the writes;
    the very same memory (x += x) and disjoint parts of one buffer are fine."""
    x = mt.arange(6.0, device=device)
    view = x[1:]
    with pytest.raises(RuntimeError, match="some elements of the input tensor and the written-to "
                                           "tensor refer to a single memory location"):
        view -= x[:-1]
    x += x
    head = x[:3]
    head += x[3:]
    np.testing.assert_array_equal(x.cpu().numpy(), [6, 10, 14, 6, 8, 10])


def test_writing_a_detached_alias_back_cuts_the_history():
    """x[1] = x[1].detach() is not the augmented write-back: torch records the copy, so no
    gradient reaches x's old history for that row."""
    w = mt.ones(3, 2, requires_grad=True)
    x = w * 2
    x[1] = x[1].detach()
    x.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [[2, 2], [0, 0], [2, 2]])


def test_setitem_errors(device):
    y = mt.zeros(3, device=device)
    with pytest.raises(RuntimeError) as info:
        y[mt.tensor([0, 1], device=device)] = mt.ones(2, 2, device=device)
    assert str(info.value) == ("shape mismatch: value tensor of shape [2, 2] cannot be broadcast "
                               "to indexing result of shape [2]")
    with pytest.raises(RuntimeError, match=r"the number of sizes provided \(0\) must be greater"):
        y[1] = mt.ones(2, device=device)
    with pytest.raises(RuntimeError, match="The expanded size of the tensor"):
        mt.zeros(2, 3, device=device)[0] = mt.ones(4, device=device)
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 3"):
        y[[5]] = 1.0
    with pytest.raises(ValueError, match="step must be greater than zero"):
        y[::-1] = 1.0
    for value, name in (([1.0], "list"), ("a", "str"), (np.ones(3), "numpy.ndarray")):
        with pytest.raises(TypeError, match=f"can't assign a {name} to a {y.type()}$"):
            y[0] = value
    np.testing.assert_array_equal(y.cpu().numpy(), np.zeros(3))


def test_setitem_on_leaf_requiring_grad():
    w = mt.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="^a view of a leaf Variable that requires grad"):
        w[0] = 1.0
    for key in ([0], mt.tensor([True, False, True]), Ellipsis, slice(None)):
        with pytest.raises(RuntimeError, match="^a leaf Variable that requires grad is being "
                                               "used in an in-place operation."):
            w[key] = 1.0
    with mt.no_grad():
        w[1] = 5.0
    np.testing.assert_array_equal(w.detach().numpy(), [0.0, 5.0, 0.0])
    assert w.is_leaf


def test_setitem_rebases_the_graph():
    x, v = t64(rand(2, 3, 4)), t64(rand(3, seed=1))
    y = x * 1
    y[0, 1:, 0] = v[1:]
    assert y.grad_fn.name() == "CopySlices"
    y[[1, 0], [2, 2]] = 3.0
    assert y.grad_fn.name() == "IndexPutBackward0"
    y.sum().backward()
    expected = np.ones((2, 3, 4))
    expected[0, 1:, 0] = 0.0
    expected[[1, 0], [2, 2]] = 0.0
    np.testing.assert_array_equal(x.grad.numpy(), expected)
    np.testing.assert_array_equal(v.grad.numpy(), [0.0, 1.0, 0.0])   # y[0, 2, 0] overwritten


def test_setitem_into_plain_tensor_records_value_gradient():
    v = t64([2.0])
    y = mt.zeros(3, dtype=mt.float64)
    y[1] = v
    assert y.requires_grad and not y.is_leaf
    (y * mt.tensor([1.0, 5.0, 1.0], dtype=mt.float64)).sum().backward()
    np.testing.assert_array_equal(v.grad.numpy(), [5.0])


@pytest.mark.parametrize("key", [
    (0, slice(1, None)), ([1, 0], slice(None), [2, 3]), (slice(None), [0, 2]), (Ellipsis, 1),
], ids=repr)
def test_setitem_gradients(key):
    value_shape = mt.zeros(2, 3, 4)[key].shape

    def fn(x, v):
        y = x * 2
        y[key] = v * 3
        return y
    check_grads(fn, rand(2, 3, 4), rand(*value_shape, seed=1))


def test_setitem_mask_gradients():
    data = rand(2, 3)
    mask = mt.tensor(data > 0)

    def fn(x, v):
        y = x * 2
        y[mask] = v
        return y
    check_grads(fn, data, rand(1, seed=2))


# ---- gather / scatter -------------------------------------------------------------------------
def test_gather_matches_numpy(device):
    index = np.array([[[0, 2]], [[1, 1]]])
    x = mt.tensor(X, device=device)
    result = mt.gather(x, 1, mt.tensor(index, device=device))
    np.testing.assert_array_equal(result.cpu().numpy(), np.take_along_axis(X[:, :, :2], index, 1))
    permuted = x.permute(1, 0, 2)
    idx = np.array([[[3, 0, 1, 1]], [[2, 2, 0, 3]]]).transpose(1, 0, 2)
    np.testing.assert_array_equal(permuted.gather(2, mt.tensor(idx, device=device)).cpu().numpy(),
                                  np.take_along_axis(X.transpose(1, 0, 2)[:1], idx, 2))
    assert mt.gather(mt.tensor(3.0, device=device), 0, mt.tensor(0, device=device)).item() == 3.0
    assert x.gather(1, mt.zeros(2, 0, 4, dtype=mt.int64, device=device)).shape == (2, 0, 4)


def test_gather_errors(device):
    x = mt.tensor(X, device=device)
    with pytest.raises(RuntimeError, match="^index 5 is out of bounds for dimension 1 with size "
                                           "3$"):
        x.gather(1, mt.tensor([[[5]]], device=device))
    with pytest.raises(RuntimeError, match="^index -1 is out of bounds for dimension 1 with size"):
        x.gather(1, mt.tensor([[[-1]]], device=device))
    with pytest.raises(RuntimeError, match=r"gather\(\): Expected dtype int32/int64 for index"):
        x.gather(1, mt.tensor([[[1.0]]], device=device))
    with pytest.raises(RuntimeError, match="Index tensor must have the same number of dimensions "
                                           "as input tensor"):
        x.gather(1, mt.tensor([[1]], device=device))
    with pytest.raises(RuntimeError, match=r"Size does not match at dimension 0 expected index "
                                           r"\[3, 1, 1\] to be no larger than self \[2, 3, 4\] "
                                           "apart from dimension 1"):
        x.gather(1, mt.zeros(3, 1, 1, dtype=mt.int64, device=device))
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.gather(3, mt.zeros(1, 1, 1, dtype=mt.int64, device=device))


def test_scatter_and_scatter_add_match_numpy(device):
    src = mt.arange(1.0, 7.0, device=device).reshape(2, 3)
    out = mt.zeros(2, 3, device=device).scatter(1, mt.tensor([[2, 0]], device=device), src)
    np.testing.assert_array_equal(out.cpu().numpy(), [[2, 0, 1], [0, 0, 0]])
    index = mt.tensor([1, 1], device=device)
    np.testing.assert_array_equal(mt.zeros(3, device=device).scatter(0, index, 2.5).cpu().numpy(),
                                  [0, 2.5, 0])
    np.testing.assert_array_equal(
        mt.zeros(3, device=device).scatter(0, index, value=2.5).cpu().numpy(), [0, 2.5, 0])
    np.testing.assert_array_equal(
        mt.zeros(3, device=device).scatter(0, index, 2.5, reduce="add").cpu().numpy(), [0, 5, 0])
    added = mt.zeros(2, 4, device=device).scatter_add(
        1, mt.tensor([[0, 0, 3], [1, 1, 1]], device=device), mt.ones(2, 3, device=device))
    np.testing.assert_array_equal(added.cpu().numpy(), [[2, 0, 0, 1], [0, 3, 0, 0]])
    ints = mt.zeros(3, dtype=mt.int64, device=device).scatter(0, mt.tensor([0], device=device), 2.7)
    np.testing.assert_array_equal(ints.cpu().numpy(), [2, 0, 0])
    assert mt.tensor(1.0, device=device).scatter(0, mt.tensor(0, device=device),
                                                 mt.tensor(5.0, device=device)).item() == 5.0


def test_in_place_index_methods(device):
    x = mt.zeros(2, 3, device=device)
    assert x.scatter_(1, mt.tensor([[2], [0]], device=device), 1.0) is x
    x.scatter_add_(0, mt.tensor([[1, 1, 1]], device=device), mt.ones(1, 3, device=device))
    x.index_add_(1, mt.tensor([0, 0], device=device), mt.ones(2, 2, device=device), alpha=2)
    x.masked_fill_(mt.tensor([False, True, False], device=device), -1.0)
    x.index_put_((mt.tensor([0], device=device), mt.tensor([0], device=device)),
                 mt.tensor(9.0, device=device), accumulate=True)
    np.testing.assert_array_equal(x.cpu().numpy(), [[13, -1, 1], [6, -1, 1]])
    assert x._version_counter == 5


def test_scatter_errors(device):
    ones = mt.ones(3, device=device)
    with pytest.raises(RuntimeError, match="^index 5 is out of bounds for dimension 0 with size "
                                           "3$"):
        mt.zeros(3, device=device).scatter(0, mt.tensor([1, 5], device=device), mt.ones(2))
    with pytest.raises(RuntimeError, match="^index 3 is out of bounds for dimension 0 with size "
                                           "3$"):
        mt.zeros(3, device=device).scatter_add(0, mt.tensor([3], device=device), mt.ones(1))
    with pytest.raises(RuntimeError, match=r"Expected index \[2\] to be no larger than self \[3\] "
                                           r"apart from dimension 0 and to be no larger size than "
                                           r"src \[1\]"):
        ones.scatter(0, mt.tensor([1, 1], device=device), mt.tensor([2.0], device=device))
    with pytest.raises(RuntimeError, match=r"scatter\(\): Expected self.dtype to be equal to "
                                           "src.dtype"):
        ones.scatter_add(0, mt.tensor([1], device=device),
                         mt.tensor([2.0], dtype=mt.float64, device=device))
    with pytest.raises(RuntimeError, match=r"scatter\(\): Expected dtype int32/int64 for index"):
        ones.scatter(0, mt.tensor([0.0], device=device), 1.0)
    with pytest.raises(RuntimeError, match="Index tensor must have the same number of dimensions "
                                           "as self tensor"):
        ones.scatter(0, mt.tensor([[0]], device=device), mt.ones(1, 1, device=device))
    with pytest.raises(RuntimeError, match="reduce argument must be either add or multiply."):
        ones.scatter(0, mt.tensor([0], device=device), 1.0, reduce="max")


def test_gather_scatter_gradients():
    index = mt.tensor([[[0, 2, 2, 1]], [[1, 1, 0, 0]]])
    check_grads(lambda x: x.gather(1, index), rand(2, 3, 4))
    check_grads(lambda x: x.permute(1, 0, 2).gather(0, index.permute(1, 0, 2)), rand(2, 3, 4))
    small = mt.tensor([[1, 0], [2, 2]])
    check_grads(lambda x, s: x.scatter_add(1, small, s), rand(2, 3), rand(2, 4, seed=1))
    unique = mt.tensor([[2, 0], [1, 2]])
    check_grads(lambda x, s: x.scatter(1, unique, s), rand(2, 3), rand(3, 2, seed=1))
    check_grads(lambda x: x.scatter(1, unique, 0.5), rand(2, 3))


# ---- index_select / index_add -----------------------------------------------------------------
def test_index_select_and_index_add_match_numpy(device):
    x = mt.tensor(X, device=device)
    index = mt.tensor([3, 0, 0], device=device)
    np.testing.assert_array_equal(mt.index_select(x, 2, index).cpu().numpy(), X[:, :, [3, 0, 0]])
    np.testing.assert_array_equal(x.permute(2, 1, 0).index_select(0, index).cpu().numpy(),
                                  X.transpose(2, 1, 0)[[3, 0, 0]])
    assert x.index_select(1, mt.tensor(1, device=device)).shape == (2, 1, 4)
    assert mt.tensor(3.0, device=device).index_select(0, mt.tensor([0], device=device)).shape == ()
    added = mt.zeros(3, 2, device=device).index_add(1, mt.tensor([1, 1, 0], device=device),
                                                    mt.ones(3, 3, device=device))
    np.testing.assert_array_equal(added.cpu().numpy(), [[1, 2]] * 3)
    scaled = mt.zeros(3, device=device).index_add(0, mt.tensor([0, 0], device=device),
                                                  mt.tensor([1.0, 2.0], device=device), alpha=2)
    np.testing.assert_array_equal(scaled.cpu().numpy(), [6, 0, 0])
    assert mt.tensor(2.0, device=device).index_add(0, mt.tensor(0, device=device),
                                                   mt.tensor(1.0, device=device)).item() == 3.0


def test_index_select_and_index_add_errors(device):
    x, zeros = mt.tensor(X, device=device), mt.zeros(3, device=device)
    for bad in (5, -1):
        with pytest.raises(RuntimeError, match=f"^INDICES element is out of DATA bounds, id={bad} "
                                               "axis_dim=3$"):
            x.index_select(1, mt.tensor([bad], device=device))
    with pytest.raises(IndexError, match=r"index_select\(\): Index is supposed to be a vector"):
        x.index_select(1, mt.tensor([[1]], device=device))
    with pytest.raises(RuntimeError, match=r"index_select\(\): Expected dtype int32 or int64"):
        x.index_select(1, mt.tensor([1.0], device=device))
    with pytest.raises(RuntimeError, match="Index to scalar can have only 1 value, got 2 value"):
        mt.tensor(3.0, device=device).index_select(0, mt.tensor([0, 0], device=device))
    with pytest.raises(IndexError, match="^index out of range in self$"):
        zeros.index_add(0, mt.tensor([0, 5], device=device), mt.ones(2, device=device))
    with pytest.raises(RuntimeError, match=r"Number of indices \(2\) should be equal to "
                                           r"source.size\(dim\): \(3\), for dim: 0"):
        zeros.index_add(0, mt.tensor([0, 1], device=device), mt.ones(3, device=device))
    with pytest.raises(RuntimeError, match=r"Got self.shape = \[3, 2\] source.shape = \[2, 3\]"):
        mt.zeros(3, 2, device=device).index_add(0, mt.tensor([0, 1], device=device),
                                                mt.ones(2, 3, device=device))
    with pytest.raises(RuntimeError, match=r"self \(Float\) and source \(Double\) must have the "
                                           "same scalar type"):
        zeros.index_add(0, mt.tensor([0], device=device), mt.ones(1, dtype=mt.float64,
                                                                  device=device))
    with pytest.raises(RuntimeError, match="Expected dtype int32/int64 for index but got: Float"):
        zeros.index_add(0, mt.tensor([0.0], device=device), mt.ones(1, device=device))
    np.testing.assert_array_equal(zeros.cpu().numpy(), np.zeros(3))


def test_index_select_and_index_add_gradients():
    index = mt.tensor([2, 0, 2])
    check_grads(lambda x: x.index_select(1, index), rand(2, 3, 4))
    check_grads(lambda x: x.t().index_select(0, index), rand(4, 3))
    check_grads(lambda x, s: x.index_add(0, index, s, alpha=-2), rand(3, 2), rand(3, 2, seed=1))


# ---- masks ------------------------------------------------------------------------------------
def test_masked_fill_and_masked_select(device):
    zeros = mt.zeros(2, 3, device=device)
    mask = mt.tensor([True, False, True], device=device)
    np.testing.assert_array_equal(zeros.masked_fill(mask, 5).cpu().numpy(), [[5, 0, 5]] * 2)
    filled = zeros.masked_fill(mask, mt.tensor(4.0, dtype=mt.float64, device=device))
    assert filled.dtype is mt.float32 and filled[0, 0].item() == 4.0
    wide = mt.zeros(3, device=device).masked_fill(mt.ones(2, 3, dtype=mt.bool, device=device), 1)
    assert wide.shape == (2, 3)
    ints = mt.zeros(3, dtype=mt.int64, device=device).masked_fill(mask, 1.7)
    np.testing.assert_array_equal(ints.cpu().numpy(), [1, 0, 1])
    selected = mt.masked_select(mt.arange(3.0, device=device),
                                mt.tensor([[True, False, True], [False, False, True]],
                                          device=device))
    np.testing.assert_array_equal(selected.cpu().numpy(), [0, 2, 2])
    x = mt.tensor(X, device=device).permute(2, 0, 1)
    np.testing.assert_array_equal(x.masked_select(x > 11).cpu().numpy(),
                                  X.transpose(2, 0, 1)[X.transpose(2, 0, 1) > 11])
    assert mt.masked_select(mt.tensor(2.0, device=device),
                            mt.tensor(False, device=device)).shape == (0,)


def test_mask_errors(device):
    zeros = mt.zeros(2, 3, device=device)
    with pytest.raises(RuntimeError, match="masked_fill_ only supports boolean masks, but got mask "
                                           "with dtype long int"):
        zeros.masked_fill(mt.tensor([1, 0, 1], device=device), 5)
    with pytest.raises(RuntimeError, match=r"only supports a 0-dimensional value tensor, but got "
                                           r"tensor with 1 dimension\(s\)."):
        zeros.masked_fill(mt.tensor([True, False, True], device=device), mt.ones(1))
    with pytest.raises(RuntimeError, match="masked_select: expected BoolTensor for mask"):
        zeros.masked_select(mt.tensor([1, 0, 1], device=device))


def test_mask_gradients():
    mask = mt.tensor([[True, False, True], [False, False, True]])
    check_grads(lambda x: x.masked_fill(mask, 2.0), rand(2, 3))
    check_grads(lambda x, v: x.masked_fill(mask, v[0]), rand(3), rand(1, seed=1))
    check_grads(lambda x: x.masked_select(mask), rand(3))
    check_grads(lambda x: x.t().masked_select(mask.t()), rand(2, 3))


def test_masked_fill_grad_fn_and_value_gradient():
    x, v = t64(rand(3)), t64(2.0)
    y = x.masked_fill(mt.tensor([True, False, True]), v)
    assert y.grad_fn.name() == "MaskedFillBackward0"
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0, 1, 0])
    assert v.grad.item() == 2.0


# ---- take / take_along_dim / nonzero / argwhere -----------------------------------------------
def test_take_and_take_along_dim(device):
    x = mt.tensor(X, device=device)
    index = mt.tensor([[0, -1], [5, 23]], device=device)
    np.testing.assert_array_equal(mt.take(x, index).cpu().numpy(), [[0, 23], [5, 23]])
    permuted = x.permute(2, 0, 1)
    np.testing.assert_array_equal(permuted.take(index).cpu().numpy(),
                                  X.transpose(2, 0, 1).ravel()[[[0, -1], [5, 23]]])
    assert x.take(mt.tensor(5, device=device)).item() == 5.0
    assert mt.zeros(0, device=device).take(mt.tensor([], dtype=mt.int64)).shape == (0,)
    idx = np.array([[[0], [2]]])
    np.testing.assert_array_equal(x.take_along_dim(mt.tensor(idx, device=device), 1).cpu().numpy(),
                                  np.take_along_axis(X, np.broadcast_to(idx, (2, 2, 4)), 1))
    row = mt.arange(4.0, device=device).reshape(1, 4)
    np.testing.assert_array_equal(
        row.take_along_dim(mt.tensor([[0], [1], [3]], device=device), 1).cpu().numpy(),
        [[0], [1], [3]])
    flat = mt.take_along_dim(x, mt.tensor([0, 23, 5], device=device))
    np.testing.assert_array_equal(flat.cpu().numpy(), [0, 23, 5])
    # with a dim, torch reads indices modulo the dim's size
    wrapped = x.take_along_dim(mt.tensor([[[-1, -5, 4, 9]]], device=device), dim=2)
    np.testing.assert_array_equal(wrapped.cpu().numpy(), X[:, :, [3, 3, 0, 1]])


def test_take_errors(device):
    x = mt.tensor(X, device=device)
    for bad in (24, -25):
        with pytest.raises(IndexError, match=f"^out of range: tried to access index {bad} on a "
                                             "tensor of 24 elements.$"):
            x.take(mt.tensor([0, bad], device=device))
    with pytest.raises(RuntimeError, match=r"take\(\): Expected a long tensor for index, but got "
                                           "Float"):
        x.take(mt.tensor([1.0], device=device))
    with pytest.raises(IndexError, match=r"take\(\): tried to take from an empty tensor"):
        mt.zeros(0, device=device).take(mt.tensor([0], device=device))
    with pytest.raises(RuntimeError, match="^index -5 is out of bounds for dimension 0 with size "
                                           "24$"):
        x.take_along_dim(mt.tensor([-5], device=device))
    with pytest.raises(RuntimeError, match="input and indices should have the same number of "
                                           "dimensions, but got 3 dimensions for input, and 2"):
        x.take_along_dim(mt.tensor([[0]], device=device), dim=2)


def test_take_gradients():
    index = mt.tensor([[0, -1], [5, 5]])
    check_grads(lambda x: x.take(index), rand(2, 3))
    check_grads(lambda x: x.t().take(index), rand(2, 3))
    check_grads(lambda x: x.take_along_dim(mt.tensor([[1], [0]]), dim=1), rand(2, 3))
    check_grads(lambda x: x.take_along_dim(mt.tensor([[0, 2, 2]]), dim=0), rand(3, 3))


def test_nonzero_and_argwhere(device):
    data = np.array([[0, 1, 0], [2, 0, 3]])
    x = mt.tensor(data, device=device)
    np.testing.assert_array_equal(mt.nonzero(x).cpu().numpy(), np.argwhere(data))
    assert mt.nonzero(x).dtype is mt.int64
    columns = x.nonzero(as_tuple=True)
    assert len(columns) == 2
    for got, expected in zip(columns, np.nonzero(data)):
        np.testing.assert_array_equal(got.cpu().numpy(), expected)
    np.testing.assert_array_equal(mt.argwhere(x).cpu().numpy(), np.argwhere(data))
    cube = X.transpose(2, 0, 1) % 5 == 0
    np.testing.assert_array_equal(
        mt.tensor(X, device=device).permute(2, 0, 1).remainder(5).eq(0).nonzero().cpu().numpy(),
        np.argwhere(cube))
    assert mt.nonzero(mt.tensor(3.0, device=device)).shape == (1, 0)
    assert mt.nonzero(mt.tensor(0.0, device=device)).shape == (0, 0)
    assert mt.nonzero(mt.tensor(3.0, device=device), as_tuple=True)[0].tolist() == [0]
    assert mt.nonzero(mt.tensor(0.0, device=device), as_tuple=True)[0].shape == (0,)
    assert mt.nonzero(mt.tensor([float("nan"), 0.0], device=device)).tolist() == [[0]]
    assert mt.nonzero(mt.zeros(2, 0, device=device)).shape == (0, 2)
    assert mt.nonzero(mt.zeros(2, 3, device=device)).shape == (0, 2)
    assert mt.where(x > 1)[1].tolist() == [0, 2]


# ---- index_put --------------------------------------------------------------------------------
def test_index_put(device):
    zeros = mt.zeros(3, device=device)
    index = mt.tensor([0, 0], device=device)
    put = zeros.index_put((index,), mt.tensor([1.0, 2.0], device=device), accumulate=True)
    np.testing.assert_array_equal(put.cpu().numpy(), [3, 0, 0])
    np.testing.assert_array_equal(zeros.cpu().numpy(), [0, 0, 0])
    assert mt.index_put(zeros, [index], mt.tensor(1.0, device=device)).tolist() == [1, 0, 0]
    pairs = mt.zeros(2, 3, device=device).index_put(
        (mt.tensor([0, 1, 0], device=device), mt.tensor([2, 2, 2], device=device)),
        mt.tensor([1.0, 2.0, 3.0], device=device), accumulate=True)
    np.testing.assert_array_equal(pairs.cpu().numpy(), [[0, 0, 4], [0, 0, 2]])
    masked = mt.zeros(2, 3, device=device).index_put(
        (mt.tensor([True, False], device=device),), mt.tensor(1.0, device=device))
    np.testing.assert_array_equal(masked.cpu().numpy(), [[1, 1, 1], [0, 0, 0]])


def test_index_put_errors(device):
    zeros = mt.zeros(3, device=device)
    with pytest.raises(TypeError, match="must be tuple of Tensors, not Tensor"):
        zeros.index_put(mt.tensor([0], device=device), mt.tensor(1.0, device=device))
    with pytest.raises(TypeError, match="expected Tensor as element 1 in argument 0, but got "
                                        "NoneType"):
        mt.zeros(2, 3).index_put((mt.tensor([0]), None), mt.tensor(1.0))
    with pytest.raises(TypeError, match="argument 'values' .* must be Tensor, not float"):
        zeros.index_put((mt.tensor([0], device=device),), 1.0)
    with pytest.raises(RuntimeError, match="Index put requires the source and destination dtypes "
                                           "match, got Float for the destination and Double"):
        zeros.index_put((mt.tensor([0], device=device),),
                        mt.tensor([1.0], dtype=mt.float64, device=device))
    with pytest.raises(IndexError, match="index 7 is out of bounds for dimension 0 with size 3"):
        zeros.index_put((mt.tensor([7], device=device),), mt.tensor([1.0], device=device))
    with pytest.raises(IndexError, match=r"too many indices for tensor of dimension 1 \(got 2\)"):
        zeros.index_put((mt.tensor([0]), mt.tensor([0])), mt.tensor([1.0]))
    with pytest.raises(RuntimeError, match="shape mismatch: value tensor of shape"):
        mt.zeros(2, 3).index_put((mt.tensor([0, 1]),), mt.ones(3, 3))


def test_index_put_gradients():
    rows, cols = mt.tensor([1, 0, 1]), mt.tensor([2, 2, 2])
    check_grads(lambda x, v: x.index_put((rows, cols), v, accumulate=True), rand(2, 3),
                rand(3, seed=1))
    check_grads(lambda x, v: x.index_put((mt.tensor([1, 0]),), v), rand(2, 3), rand(3, seed=1))
    y = t64(rand(2, 3))
    assert y.index_put((rows,), mt.tensor(0.0, dtype=mt.float64)).grad_fn.name() == \
        "IndexPutBackward0"


# ---- against torch, where it is installed -----------------------------------------------------
TORCH_KEYS = [
    0, (0, slice(None), [1, 2]), ([0, 1], None, [1, 2]), (slice(None), [[0, 1], [2, 2]], 1),
    ([[1], [0]], slice(1, None), [3, 0]), (Ellipsis, [True, False, True, True]),
    ([-1], [-3], slice(None, None, 3)), (None, [1, 1], Ellipsis, None),
]


@pytest.mark.parametrize("key", TORCH_KEYS, ids=repr)
def test_getitem_and_setitem_match_torch(key):
    torch = pytest.importorskip("torch")
    ours, theirs = mt.tensor(X), torch.tensor(X)
    np.testing.assert_array_equal(ours[key].numpy(), theirs[key].numpy())
    ours[key] = -1.0
    theirs[key] = -1.0
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_index_op_gradients_match_torch():
    torch = pytest.importorskip("torch")
    data, index = rand(3, 4), np.array([[2, 0, 2, 1]])
    ours, theirs = t64(data), torch.tensor(data, requires_grad=True)
    weights = rand(1, 4, seed=3)
    (ours.gather(0, mt.tensor(index)) * mt.tensor(weights)).sum().backward()
    (theirs.gather(0, torch.tensor(index)) * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy())
    ours.grad = theirs.grad = None
    ours[[2, 2, 0], 1:].sum().backward()
    theirs[[2, 2, 0], 1:].sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy())


def test_int32_indices_are_taken_as_torch_takes_them(device):
    """gather, scatter, scatter_add, index_select and index_add read int32 indices like int64
    ones (torch accepts both); take_along_dim wants int64, with torch's message."""
    x = mt.arange(6.0, device=device).reshape(2, 3)
    for dtype in (mt.int32, mt.int64):
        i = mt.tensor([[0, 1, 1]], dtype=dtype, device=device)
        assert mt.gather(x, 0, i).tolist() == [[0.0, 4.0, 5.0]]
        assert mt.zeros(2, 3, device=device).scatter(0, i, 1.0).tolist() == \
            [[1.0, 0.0, 0.0], [0.0, 1.0, 1.0]]
        assert mt.zeros(2, 3, device=device).scatter_add(
            0, i, mt.ones(1, 3, device=device)).tolist() == [[1.0, 0.0, 0.0], [0.0, 1.0, 1.0]]
        cols = mt.tensor([2, 0], dtype=dtype, device=device)
        assert x.index_select(1, cols).tolist() == [[2.0, 0.0], [5.0, 3.0]]
        assert mt.zeros(2, 3, device=device).index_add(
            1, cols, mt.ones(2, 2, device=device)).tolist() == [[1.0, 0.0, 1.0], [1.0, 0.0, 1.0]]
    with pytest.raises(RuntimeError, match="gather\\(\\): Expected dtype int32/int64 for index"):
        mt.gather(x, 0, mt.tensor([[0, 1, 1]], dtype=mt.int16, device=device))
    with pytest.raises(RuntimeError, match="torch.take_along_dim\\(\\): dtype of indices should "
                                           "be Long but got Int"):
        mt.take_along_dim(x, mt.tensor([[0, 1, 1]], dtype=mt.int32, device=device), 0)
