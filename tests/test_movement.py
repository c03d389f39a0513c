"""Shape and movement ops: values vs numpy over layouts (contiguous, permuted, stepped, 0-d,
empty), views sharing storage, gradients (gradcheck / gradgradcheck), torch's errors and
grad_fn names."""
import numpy as np
import pytest

import minitorch as mt
from minitorch.autograd import gradcheck, gradgradcheck


# ---- layouts: the same logical values held contiguously, permuted, or with a step -------------
def _layout_view(t, layout):
    """The logical tensor a leaf of `_leaf_shape(shape, layout)` stands for."""
    if layout == "permuted":
        return t.permute(*reversed(range(t.ndim)))
    if layout == "stepped":
        return t.unflatten(-1, (t.shape[-1] // 2, 2)).unbind(-1)[0]
    return t


def _leaf_shape(shape, layout):
    if layout == "permuted":
        return tuple(reversed(shape))
    if layout == "stepped":
        return shape[:-1] + (2 * shape[-1],)
    return shape


def _leaf_values(values, layout):
    if layout == "permuted":
        return np.ascontiguousarray(values.transpose())
    if layout == "stepped":
        out = np.full(values.shape[:-1] + (2 * values.shape[-1],), -7.0)
        out[..., ::2] = values
        return out
    return values


def make(values, layout, device, requires_grad=False):
    """(view, leaf): a tensor holding `values` in `layout`, and the leaf it views."""
    leaf = mt.tensor(_leaf_values(values, layout), dtype=mt.float64, device=device,
                     requires_grad=requires_grad)
    return _layout_view(leaf, layout), leaf


LAYOUTS = ["contiguous", "permuted", "stepped"]
SHAPE = (2, 3, 4)

# name -> (minitorch op, numpy reference); each runs on a (2, 3, 4) input
OPS = {
    "reshape": (lambda t: t.reshape(4, 6), lambda a: a.reshape(4, 6)),
    "reshape_infer": (lambda t: mt.reshape(t, (-1, 2)), lambda a: a.reshape(-1, 2)),
    "view_as": (lambda t: t.contiguous().view_as(mt.zeros(24)), lambda a: a.reshape(24)),
    "reshape_as": (lambda t: t.reshape_as(mt.zeros(3, 8)), lambda a: a.reshape(3, 8)),
    "flatten": (lambda t: t.flatten(), lambda a: a.reshape(-1)),
    "flatten_1": (lambda t: mt.flatten(t, 1), lambda a: a.reshape(2, 12)),
    "flatten_0_1": (lambda t: t.flatten(0, 1), lambda a: a.reshape(6, 4)),
    "unflatten": (lambda t: t.unflatten(2, (2, -1)), lambda a: a.reshape(2, 3, 2, 2)),
    "squeeze": (lambda t: t[:, :1].squeeze(), lambda a: a[:, 0]),
    "squeeze_dims": (lambda t: t[:1, :1].squeeze((0, 1, 2)), lambda a: a[0, 0]),
    "unsqueeze": (lambda t: t.unsqueeze(-1), lambda a: a[..., None]),
    "unsqueeze_mid": (lambda t: mt.unsqueeze(t, 1), lambda a: a[:, None]),
    "permute": (lambda t: t.permute(2, 0, 1), lambda a: a.transpose(2, 0, 1)),
    "permute_tuple": (lambda t: mt.permute(t, (1, 2, 0)), lambda a: a.transpose(1, 2, 0)),
    "transpose": (lambda t: t.transpose(0, -1), lambda a: a.swapaxes(0, 2)),
    "swapaxes": (lambda t: mt.swapaxes(t, 1, 2), lambda a: a.swapaxes(1, 2)),
    "t": (lambda t: t[0].t(), lambda a: a[0].T),
    "T": (lambda t: t.T, lambda a: a.T),
    "movedim": (lambda t: t.movedim(0, -1), lambda a: np.moveaxis(a, 0, -1)),
    "movedim_tuple": (lambda t: mt.movedim(t, (0, 2), (2, 0)),
                      lambda a: np.moveaxis(a, (0, 2), (2, 0))),
    "expand": (lambda t: t[:, :1].expand(2, 2, 5, 4),
               lambda a: np.broadcast_to(a[:, :1], (2, 2, 5, 4))),
    "expand_as": (lambda t: t[:1].expand_as(mt.zeros(3, 2, 3, 4)),
                  lambda a: np.broadcast_to(a[:1], (3, 2, 3, 4))),
    "broadcast_to": (lambda t: mt.broadcast_to(t[..., :1], (2, 3, 3)),
                     lambda a: np.broadcast_to(a[..., :1], (2, 3, 3))),
    "narrow": (lambda t: t.narrow(2, 1, 2), lambda a: a[:, :, 1:3]),
    "narrow_neg": (lambda t: mt.narrow(t, -2, -2, 2), lambda a: a[:, 1:3]),
    "unfold": (lambda t: t.unfold(2, 2, 1),
               lambda a: np.lib.stride_tricks.sliding_window_view(a, 2, axis=2)),
    "unfold_step": (lambda t: t.unfold(1, 2, 2),
                    lambda a: np.lib.stride_tricks.sliding_window_view(a, 2, axis=1)[:, ::2]),
    "flip": (lambda t: t.flip(0, 2), lambda a: a[::-1, :, ::-1]),
    "flip_list": (lambda t: mt.flip(t, [1]), lambda a: a[:, ::-1]),
    "fliplr": (lambda t: mt.fliplr(t), lambda a: np.fliplr(a)),
    "flipud": (lambda t: mt.flipud(t), lambda a: np.flipud(a)),
    "roll": (lambda t: t.roll(1, 2), lambda a: np.roll(a, 1, 2)),
    "roll_flat": (lambda t: mt.roll(t, -5), lambda a: np.roll(a, -5)),
    "roll_dims": (lambda t: t.roll((1, -2, 7), (0, 2, 1)),
                  lambda a: np.roll(a, (1, -2, 7), (0, 2, 1))),
    "roll_dup": (lambda t: t.roll((1, 1), (2, 2)), lambda a: np.roll(a, 2, 2)),
    "repeat": (lambda t: t.repeat(2, 1, 3), lambda a: np.tile(a, (2, 1, 3))),
    "repeat_lead": (lambda t: t.repeat(2, 1, 1, 2), lambda a: np.tile(a, (2, 1, 1, 2))),
    "tile": (lambda t: mt.tile(t, (2,)), lambda a: np.tile(a, 2)),
    "tile_more": (lambda t: t.tile(2, 1, 1, 1), lambda a: np.tile(a, (2, 1, 1, 1))),
    "clone": (lambda t: t.clone(), lambda a: a.copy()),
    "contiguous": (lambda t: t.contiguous(), lambda a: a.copy()),
    "as_strided": (lambda t: t.contiguous().as_strided((3, 3), (2, 1), 1),
                   lambda a: np.lib.stride_tricks.as_strided(
                       a.ravel()[1:], (3, 3), (16, 8))),
    "split_piece": (lambda t: t.split(2, 2)[1], lambda a: a[:, :, 2:]),
    "chunk_piece": (lambda t: mt.chunk(t, 2, 1)[1], lambda a: a[:, 2:]),
    "unbind_piece": (lambda t: t.unbind(1)[2], lambda a: a[:, 2]),
}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name", sorted(OPS))
def test_op_matches_numpy(name, layout, device, rng):
    op, reference = OPS[name]
    values = rng.standard_normal(SHAPE)
    t, _ = make(values, layout, device)
    result = op(t)
    np.testing.assert_array_equal(result.cpu().numpy(), reference(values))
    assert result.dtype is mt.float64 and result.device == mt.device(device)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name", sorted(OPS))
def test_op_gradcheck(name, layout, device, rng):
    op, _ = OPS[name]
    values = rng.standard_normal(SHAPE)
    _, leaf = make(values, layout, device, requires_grad=True)
    assert gradcheck(lambda x: op(_layout_view(x, layout)), (leaf,))


DOUBLE_BACKWARD = ["reshape", "unflatten", "squeeze", "unsqueeze", "permute", "transpose", "t",
                   "movedim", "expand", "narrow", "unfold_step", "flip", "roll_dims", "repeat",
                   "tile", "as_strided", "split_piece", "unbind_piece", "clone"]


@pytest.mark.parametrize("name", DOUBLE_BACKWARD)
def test_op_gradgradcheck(name, device, rng):
    op, _ = OPS[name]
    values = rng.standard_normal(SHAPE)
    _, leaf = make(values, "permuted", device, requires_grad=True)
    # Squaring makes the first derivative depend on the input, so double backward is exercised.
    assert gradgradcheck(lambda x: op(_layout_view(x, "permuted")) ** 2, (leaf,))


# ---- 0-d and empty inputs ---------------------------------------------------------------------
SCALAR_OPS = [
    (lambda t: t.reshape(1, 1), lambda a: a.reshape(1, 1)),
    (lambda t: t.view(-1), lambda a: a.reshape(-1)),
    (lambda t: t.flatten(), lambda a: a.reshape(1)),
    (lambda t: t.unsqueeze(0), lambda a: a[None]),
    (lambda t: t.unsqueeze(-1), lambda a: a[None]),
    (lambda t: t.squeeze(), lambda a: a),
    (lambda t: t.squeeze(0), lambda a: a),
    (lambda t: t.t(), lambda a: a),
    (lambda t: t.transpose(0, -1), lambda a: a),
    (lambda t: t.permute(), lambda a: a),
    (lambda t: t.movedim(0, 0), lambda a: a),
    (lambda t: t.expand(2, 3), lambda a: np.broadcast_to(a, (2, 3))),
    (lambda t: t.flip(0), lambda a: a),
    (lambda t: t.roll(3), lambda a: a),
    (lambda t: t.repeat(()), lambda a: a),
    (lambda t: t.repeat(2, 3), lambda a: np.tile(a, (2, 3))),
    (lambda t: mt.tile(t, ()), lambda a: a),
    (lambda t: t.unfold(0, 1, 1), lambda a: a.reshape(1)),
    (lambda t: t.unfold(0, 0, 1), lambda a: a.reshape(1)[:0]),
    (lambda t: t.as_strided((2,), (0,)), lambda a: np.broadcast_to(a, (2,))),
    (lambda t: mt.stack([t, t * 2]), lambda a: np.stack([a, a * 2])),
    (lambda t: mt.hstack([t, t]), lambda a: np.hstack([a, a])),
    (lambda t: mt.vstack([t, t]), lambda a: np.vstack([a, a])),
    (lambda t: t.clone(), lambda a: a),
]


@pytest.mark.parametrize("index", range(len(SCALAR_OPS)))
def test_zero_dim(index, device):
    op, reference = SCALAR_OPS[index]
    x = mt.tensor(2.5, dtype=mt.float64, device=device, requires_grad=True)
    result = op(x)
    expected = reference(np.array(2.5))
    assert result.shape == expected.shape
    np.testing.assert_array_equal(result.detach().cpu().numpy(), expected)
    assert gradcheck(op, (x,))


EMPTY_OPS = {
    "reshape": (lambda t: t.reshape(3, 0), lambda a: a.reshape(3, 0)),
    "view": (lambda t: t.view(-1, 3), lambda a: a.reshape(-1, 3)),
    "permute": (lambda t: t.permute(1, 0), lambda a: a.T),
    "flatten": (lambda t: t.flatten(), lambda a: a.reshape(-1)),
    "narrow": (lambda t: t.narrow(1, 1, 2), lambda a: a[:, 1:3]),
    "flip": (lambda t: t.flip(0, 1), lambda a: a[::-1, ::-1]),
    "roll": (lambda t: t.roll(1, 0), lambda a: np.roll(a, 1, 0)),
    "repeat": (lambda t: t.repeat(2, 2), lambda a: np.tile(a, (2, 2))),
    "expand": (lambda t: t.unsqueeze(0).expand(2, 0, 3), lambda a: np.broadcast_to(a, (2, 0, 3))),
    "unfold": (lambda t: t.unfold(1, 2, 1),
               lambda a: np.lib.stride_tricks.sliding_window_view(a, 2, axis=1)),
    "cat": (lambda t: mt.cat([t, t], 1), lambda a: np.concatenate([a, a], 1)),
    "stack": (lambda t: mt.stack([t, t], 2), lambda a: np.stack([a, a], 2)),
    "split": (lambda t: t.split(2, 1)[1], lambda a: a[:, 2:]),
}


@pytest.mark.parametrize("name", sorted(EMPTY_OPS))
def test_empty(name, device):
    op, reference = EMPTY_OPS[name]
    values = np.zeros((0, 3))
    x = mt.tensor(values, dtype=mt.float64, device=device, requires_grad=True)
    result = op(x)
    assert tuple(result.shape) == reference(values).shape
    result.sum().backward()
    assert x.grad.shape == (0, 3)


# ---- views share storage and the version counter; copies don't --------------------------------
VIEWS = {
    "reshape": lambda t: t.reshape(6, 4),
    "view": lambda t: t.view(24),
    "flatten": lambda t: t.flatten(1),
    "unflatten": lambda t: t.unflatten(2, (2, 2)),
    "squeeze": lambda t: t[:1].squeeze(0),
    "unsqueeze": lambda t: t.unsqueeze(1),
    "permute": lambda t: t.permute(2, 1, 0),
    "transpose": lambda t: t.transpose(0, 1),
    "t": lambda t: t[1].t(),
    "movedim": lambda t: t.movedim(2, 0),
    "expand": lambda t: t[:1].expand(3, 3, 4),
    "as_strided": lambda t: t.as_strided((2, 2), (5, 1), 3),
    "narrow": lambda t: t.narrow(1, 1, 2),
    "split": lambda t: t.split(1, 2)[3],
    "chunk": lambda t: t.chunk(3, 1)[2],
    "unbind": lambda t: t.unbind(2)[1],
    "unfold": lambda t: t.unfold(2, 3, 1),
}


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_views_share_storage(name, device):
    base = mt.zeros(*SHAPE, dtype=mt.float64, device=device)
    view = VIEWS[name](base)
    assert view._version is base._version
    base.add_(1.5)
    assert np.all(view.cpu().numpy() == 1.5)
    assert view._version_counter == 1


COPIES = {
    "flip": lambda t: t.flip(0),
    "roll": lambda t: t.roll(1, 1),
    "repeat": lambda t: t.repeat(1, 1, 1),
    "tile": lambda t: t.tile(1),
    "clone": lambda t: t.clone(),
    "cat": lambda t: mt.cat([t]),
    "stack": lambda t: mt.stack([t]),
    "reshape_noncontiguous": lambda t: t.transpose(0, 1).reshape(-1),
}


@pytest.mark.parametrize("name", sorted(COPIES))
def test_copies_do_not_share(name, device):
    base = mt.zeros(*SHAPE, dtype=mt.float64, device=device)
    result = COPIES[name](base)
    base.add_(1.0)
    assert np.all(result.cpu().numpy() == 0.0)


def test_reshape_views_only_when_strides_allow(device):
    x = mt.zeros(2, 3, 4, device=device)
    assert x.transpose(1, 2).reshape(2, 12).grad_fn is None
    assert x.reshape(6, 4).data_ptr() == x.data_ptr()
    assert x[:, :, ::2].reshape(6, 2).data_ptr() == x.data_ptr()     # merged dims stay strided
    assert x.transpose(1, 2).reshape(2, 12).data_ptr() != x.data_ptr()


def test_as_strided_offsets_are_storage_offsets(device):
    base = mt.arange(12.0, device=device)
    v = base[2:]
    np.testing.assert_array_equal(v.as_strided((2,), (1,)).cpu().numpy(), [2.0, 3.0])
    np.testing.assert_array_equal(v.as_strided((2,), (1,), 0).cpu().numpy(), [0.0, 1.0])
    assert v.as_strided((3,), (2,), 5).storage_offset() == 5


def test_view_dtype_reinterprets_bytes(device):
    values = np.array([1.5, -2.0, 0.0])
    x = mt.tensor(values, dtype=mt.float64, device=device)
    as_int = x.view(mt.int64)
    assert as_int.dtype is mt.int64
    np.testing.assert_array_equal(as_int.cpu().numpy(), values.view(np.int64))
    np.testing.assert_array_equal(as_int.view(mt.float64).cpu().numpy(), values)
    assert x.view(mt.float64).grad_fn is None and x.view(mt.float64).shape == (3,)


# ---- split / chunk / unbind -------------------------------------------------------------------
@pytest.mark.parametrize("size,split_arg,sizes", [
    (5, 2, [2, 2, 1]), (5, 5, [5]), (5, 10, [5]), (0, 2, [0]), (0, 0, [0]),
    (6, [1, 0, 5], [1, 0, 5]), (0, [0, 0], [0, 0]),
])
def test_split_sizes(size, split_arg, sizes, device):
    x = mt.arange(float(size * 2), device=device).reshape(2, size)
    pieces = x.split(split_arg, 1)
    assert isinstance(pieces, tuple) and [p.shape[1] for p in pieces] == sizes
    np.testing.assert_array_equal(mt.cat(pieces, 1).cpu().numpy(), x.cpu().numpy())


@pytest.mark.parametrize("size,chunks,sizes", [
    (6, 5, [2, 2, 2]), (5, 2, [3, 2]), (3, 5, [1, 1, 1]), (0, 3, [0, 0, 0]), (7, 1, [7]),
])
def test_chunk_sizes(size, chunks, sizes, device):
    pieces = mt.chunk(mt.zeros(size, 2, device=device), chunks)
    assert [p.shape[0] for p in pieces] == sizes


def test_split_unbind_gradients(device, rng):
    leaf = mt.tensor(rng.standard_normal((3, 5)), dtype=mt.float64, device=device,
                     requires_grad=True)
    assert gradcheck(lambda x: x.split([2, 3], 1), (leaf,))
    assert gradcheck(lambda x: x.chunk(2, 0), (leaf,))
    assert gradcheck(lambda x: x.unbind(1), (leaf,))
    # Only one output used: the others' gradients are zeros.
    assert gradcheck(lambda x: x.split(2, 1)[1] * 3, (leaf,))
    assert gradgradcheck(lambda x: x.unbind(0)[1] ** 2, (leaf,))
    assert gradgradcheck(lambda x: x.split([4, 1], 1)[0] ** 2, (leaf,))


def test_iteration_unbinds(device):
    rows = list(mt.arange(6.0, device=device).reshape(3, 2))
    assert [r.tolist() for r in rows] == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]


# ---- cat / stack and friends ------------------------------------------------------------------
@pytest.mark.parametrize("dim", [0, 1, 2, -1])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_cat_matches_numpy(dim, layout, device, rng):
    a_values, b_values = rng.standard_normal(SHAPE), rng.standard_normal(SHAPE)
    a, a_leaf = make(a_values, layout, device, requires_grad=True)
    b, b_leaf = make(b_values, "contiguous", device, requires_grad=True)
    result = mt.cat([a, b, a], dim)
    np.testing.assert_array_equal(result.detach().cpu().numpy(),
                                  np.concatenate([a_values, b_values, a_values], dim))
    assert gradcheck(lambda x, y: mt.cat((_layout_view(x, layout), y, y), dim),
                     (a_leaf, b_leaf))


@pytest.mark.parametrize("dim", [0, 1, 3, -1])
def test_stack_matches_numpy(dim, device, rng):
    values = [rng.standard_normal(SHAPE) for _ in range(3)]
    leaves = [mt.tensor(v, device=device, requires_grad=True) for v in values]
    inputs = [leaves[0], leaves[1].transpose(0, 1).contiguous().transpose(0, 1), leaves[2]]
    np.testing.assert_array_equal(mt.stack(inputs, dim).detach().cpu().numpy(),
                                  np.stack(values, dim))
    small = [mt.tensor(v[:, :2, :2], dtype=mt.float64, device=device, requires_grad=True)
             for v in values[:2]]
    assert gradcheck(lambda x, y: mt.stack([x, y, x], dim), tuple(small))


@pytest.mark.parametrize("name,reference", [
    ("hstack", np.hstack), ("vstack", np.vstack), ("dstack", np.dstack),
    ("column_stack", np.column_stack),
])
@pytest.mark.parametrize("shapes", [[(3,), (3,)], [(2, 3), (2, 3)], [(), ()], [(2, 1, 2)] * 2])
def test_stack_family(name, reference, shapes, device, rng):
    values = [rng.standard_normal(s) for s in shapes]
    tensors = [mt.tensor(v, dtype=mt.float64, device=device) for v in values]
    if name == "column_stack" and len(shapes[0]) == 3:
        pytest.skip("numpy's column_stack is the same concatenation; covered by the 2-D case")
    np.testing.assert_array_equal(getattr(mt, name)(tensors).cpu().numpy(), reference(values))


def test_cat_aliases_and_tuple_input(device):
    a = mt.ones(2, 2, device=device)
    assert mt.concat((a, a), dim=1).shape == (2, 4)
    assert mt.concatenate([a, a], axis=0).shape == (4, 2)
    assert mt.cat((a,)).shape == (2, 2)


@pytest.mark.parametrize("dtypes,expected", [
    ((mt.int64, mt.float32), mt.float32), ((mt.bool, mt.int64), mt.int64),
    ((mt.float32, mt.float64), mt.float64), ((mt.bool, mt.bool), mt.bool),
])
def test_cat_and_stack_promote(dtypes, expected, device):
    tensors = [mt.ones(2, dtype=d, device=device) for d in dtypes]
    assert mt.cat(tensors).dtype is expected and mt.stack(tensors).dtype is expected
    np.testing.assert_array_equal(mt.cat(tensors).cpu().numpy(), np.ones(4))


def test_cat_gradient_through_promotion(device):
    a = mt.ones(2, dtype=mt.float32, device=device, requires_grad=True)
    b = mt.ones(3, dtype=mt.float64, device=device, requires_grad=True)
    out = mt.cat([a, b])
    assert out.dtype is mt.float64
    (out * mt.arange(5.0, dtype=mt.float64, device=device)).sum().backward()
    assert a.grad.dtype is mt.float32 and a.grad.tolist() == [0.0, 1.0]
    assert b.grad.tolist() == [2.0, 3.0, 4.0]


def test_cat_skips_legacy_empty(device):
    x = mt.ones(2, 3, device=device, requires_grad=True)
    empty = mt.zeros(0, device=device, requires_grad=True)
    out = mt.cat([empty, x, empty], dim=1)
    assert out.shape == (2, 3)
    out.sum().backward()
    assert empty.grad.shape == (0,) and x.grad.tolist() == [[1.0] * 3] * 2
    assert mt.cat([mt.zeros(0, dtype=mt.int64, device=device), x]).dtype is mt.float32
    assert mt.cat([mt.zeros(0, device=device)] * 2).shape == (0,)
    assert mt.cat([mt.zeros(0, 3, device=device), x]).shape == (2, 3)


def test_cat_non_differentiable_inputs(device):
    x = mt.ones(2, device=device, requires_grad=True)
    out = mt.cat([x, mt.zeros(3, device=device), x * 2])
    out.sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


# ---- as_strided and Tensor.unfold gradients ---------------------------------------------------
def test_as_strided_overlapping_output_gradient(device, rng):
    leaf = mt.tensor(rng.standard_normal(6), dtype=mt.float64, device=device, requires_grad=True)
    assert gradcheck(lambda x: x.as_strided((3, 3), (1, 1)), (leaf,))
    assert gradcheck(lambda x: x[1:].as_strided((2, 2), (1, 2)), (leaf,))     # offset view
    assert gradcheck(lambda x: x.reshape(2, 3).t().as_strided((2, 2), (3, 1)), (leaf,))
    x = mt.ones(5, dtype=mt.float64, device=device, requires_grad=True)
    x.as_strided((3, 3), (1, 1)).sum().backward()
    assert x.grad.tolist() == [1.0, 2.0, 3.0, 2.0, 1.0]


def test_as_strided_of_expanded_input_gradient(device, rng):
    leaf = mt.tensor(rng.standard_normal((1, 4)), dtype=mt.float64, device=device,
                     requires_grad=True)
    assert gradcheck(lambda x: x.expand(3, 4).as_strided((2, 3), (1, 1)), (leaf,))
    assert gradgradcheck(lambda x: x.expand(3, 4).as_strided((2, 3), (1, 1)) ** 2, (leaf,))


def test_unfold_overlapping_windows_gradient(device):
    x = mt.ones(6, dtype=mt.float64, device=device, requires_grad=True)
    x.unfold(0, 3, 1).sum().backward()
    assert x.grad.tolist() == [1.0, 2.0, 3.0, 3.0, 2.0, 1.0]
    y = mt.ones(7, dtype=mt.float64, device=device, requires_grad=True)
    y.unfold(0, 2, 3).sum().backward()        # windows skip element 2 and 5, and the tail
    assert y.grad.tolist() == [1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 0.0]


def test_unfold_of_expanded_input_is_logical(device):
    x = mt.ones(1, 4, dtype=mt.float64, device=device, requires_grad=True)
    x.expand(3, 4).unfold(1, 2, 1).sum().backward()
    assert x.grad.tolist() == [[3.0, 6.0, 6.0, 3.0]]


# ---- grad_fn names (torch's) ------------------------------------------------------------------
@pytest.mark.parametrize("fn,name", [
    (lambda x: x.reshape(6, 4), "ViewBackward0"),
    (lambda x: x.transpose(0, 1).reshape(-1), "UnsafeViewBackward0"),
    (lambda x: x.view(-1), "ViewBackward0"),
    (lambda x: x.flatten(), "ViewBackward0"),
    (lambda x: x.unflatten(2, (2, 2)), "ViewBackward0"),
    (lambda x: x.squeeze(), "SqueezeBackward0"),
    (lambda x: x.unsqueeze(0), "UnsqueezeBackward0"),
    (lambda x: x.permute(2, 0, 1), "PermuteBackward0"),
    (lambda x: x.movedim(0, 2), "PermuteBackward0"),
    (lambda x: x.transpose(0, 1), "TransposeBackward0"),
    (lambda x: x.swapaxes(0, 1), "TransposeBackward0"),
    (lambda x: x[0].t(), "TBackward0"),
    (lambda x: x.expand(2, 2, 3, 4), "ExpandBackward0"),
    (lambda x: x.as_strided((2, 2), (1, 2)), "AsStridedBackward0"),
    (lambda x: x.narrow(1, 1, 2), "SliceBackward0"),
    (lambda x: x.unbind(1)[0], "UnbindBackward0"),
    (lambda x: x.split(2, 1)[0], "SplitBackward0"),
    (lambda x: x.split([1, 2], 1)[0], "SplitWithSizesBackward0"),
    (lambda x: x.chunk(2, 1)[0], "SplitBackward0"),
    (lambda x: x.flip(0), "FlipBackward0"),
    (lambda x: x.roll(1), "RollBackward0"),
    (lambda x: x.repeat(1, 2, 1), "RepeatBackward0"),
    (lambda x: x.tile(2), "RepeatBackward0"),
    (lambda x: mt.cat([x, x]), "CatBackward0"),
    (lambda x: mt.hstack([x, x]), "CatBackward0"),
    (lambda x: mt.stack([x, x]), "StackBackward0"),
    (lambda x: x.unfold(2, 2, 1), "UnfoldBackward0"),
    (lambda x: x.clone(), "CloneBackward0"),
    (lambda x: x.transpose(0, 1).contiguous(), "CloneBackward0"),
])
def test_grad_fn_names(fn, name, device):
    x = mt.zeros(2, 3, 4, device=device, requires_grad=True)
    assert fn(x).grad_fn.name() == name


def test_flatten_of_one_dim_returns_input():
    x = mt.zeros(2, 3)
    assert x.flatten(1, 1) is x and x.contiguous() is x


# ---- errors (torch's types and wording) -------------------------------------------------------
X = mt.zeros(2, 3, 4)
S = mt.tensor(1.0)


@pytest.mark.parametrize("fn,error,message", [
    (lambda: X.unflatten(1, (2, 2)), RuntimeError, "unflatten: Provided sizes [2, 2] don't "
     "multiply up to the size of dim 1 (3) in the input tensor"),
    (lambda: X.unflatten(1, (-1, 2)), RuntimeError, "unflatten: Provided sizes [-1, 2]"),
    (lambda: X.unflatten(2, ()), RuntimeError, "unflatten: sizes must be non-empty"),
    (lambda: X.unflatten(2, (-1, -1)), RuntimeError, "only one dimension can be inferred"),
    (lambda: S.unflatten(0, (1,)), IndexError,
     "Dimension specified as 0 but tensor has no dimensions"),
    (lambda: X.squeeze(3), IndexError,
     "Dimension out of range (expected to be in range of [-3, 2], but got 3)"),
    (lambda: X.squeeze((0, 0)), RuntimeError, "dim 0 appears multiple times in the list of dims"),
    (lambda: X.unsqueeze(4), IndexError,
     "Dimension out of range (expected to be in range of [-4, 3], but got 4)"),
    (lambda: X.permute(0, 1), RuntimeError, "input.dim() = 3 is not equal to len(dims) = 2"),
    (lambda: X.permute(0, 1, 1), RuntimeError, "permute(): duplicate dims are not allowed."),
    (lambda: X.transpose(0, 3), IndexError, "but got 3)"),
    (lambda: X.t(), RuntimeError, "t() expects a tensor with <= 2 dimensions, but self is 3D"),
    (lambda: X.expand(3, 3, 4), RuntimeError, "The expanded size of the tensor (3) must match "
     "the existing size (2) at non-singleton dimension 0.  Target sizes: [3, 3, 4].  Tensor "
     "sizes: [2, 3, 4]"),
    (lambda: X.movedim((0, 1), (0,)), RuntimeError, "movedim: Invalid source or destination "
     "dims: source ([0, 1] dims) should contain the same number of dims as destination ([0] "
     "dims)"),
    (lambda: X.movedim((0, -3), (1, 2)), RuntimeError,
     "movedim: repeated dim in `source` ([0, -3])"),
    (lambda: X.movedim((0, 1), (2, 2)), RuntimeError,
     "movedim: repeated dim in `destination` ([2, 2])"),
    (lambda: X.as_strided((5, 5), (5, 1)), RuntimeError, "setStorage: sizes [5, 5], strides "
     "[5, 1], storage offset 0, and itemsize 4 requiring a storage size of 100 are out of "
     "bounds for storage of size 96"),
    (lambda: X.as_strided((2,), (-1,)), RuntimeError,
     "as_strided: Negative strides are not supported at the moment, got strides: [-1]"),
    (lambda: X.as_strided((2,), (1, 1)), RuntimeError, "mismatch in length of strides and shape"),
    (lambda: X.narrow(1, 4, 1), IndexError,
     "start out of range (expected to be in range of [-3, 3], but got 4)"),
    (lambda: X.narrow(1, 1, 3), RuntimeError,
     "start (1) + length (3) exceeds dimension size (3)."),
    (lambda: X.narrow(1, -1, 2), RuntimeError,
     "start (2) + length (2) exceeds dimension size (3)."),
    (lambda: X.narrow(1, 1, -1), RuntimeError, "narrow(): length must be non-negative."),
    (lambda: S.narrow(0, 0, 1), RuntimeError, "narrow() cannot be applied to a 0-dim tensor."),
    (lambda: S.unbind(), IndexError, "Dimension specified as 0 but tensor has no dimensions"),
    (lambda: X.unbind(3), IndexError, "but got 3)"),
    (lambda: X.split([1, 1], 1), RuntimeError, "split_with_sizes expects split_sizes to sum "
     "exactly to 3 (input tensor's size at dimension 1), but got split_sizes=[1, 1]"),
    (lambda: X.split([4, -1], 1), RuntimeError, "split_with_sizes expects split_sizes have only "
     "non-negative entries, but got split_sizes=[4, -1]"),
    (lambda: X.split(0, 1), RuntimeError,
     "split_size can only be 0 if dimension size is 0, but got dimension size of 3"),
    (lambda: X.split(-1, 1), RuntimeError,
     "split expects split_size be non-negative, but got split_size=-1"),
    (lambda: S.split(1), RuntimeError, "split expects at least a 1-dimensional tensor"),
    (lambda: X.chunk(0, 1), RuntimeError, "chunk expects `chunks` to be greater than 0, got: 0"),
    (lambda: S.chunk(1), RuntimeError, "chunk expects at least a 1-dimensional tensor"),
    (lambda: X.flip(0, 0), RuntimeError, "dim 0 appears multiple times in the list of dims"),
    (lambda: X.flip(3), IndexError, "but got 3)"),
    (lambda: X.roll((1, 2), (0,)), RuntimeError,
     "shifts and dimensions must align. shifts: 2, dims:1"),
    (lambda: X.roll((1, 2)), RuntimeError, "shifts and dimensions must align. shifts: 2, dims:0"),
    (lambda: X.roll((), ()), RuntimeError, "`shifts` required"),
    (lambda: S.roll(1, 0), IndexError, "Dimension specified as 0 but tensor has no dimensions"),
    (lambda: X.repeat(2, 2), RuntimeError, "Number of dimensions of repeat dims can not be "
     "smaller than number of dimensions of tensor"),
    (lambda: X.repeat(-1, 2, 2), RuntimeError,
     "Trying to create tensor with negative dimension -2: [-2, 6, 8]"),
    (lambda: X.unfold(2, 5, 1), RuntimeError,
     "maximum size for tensor at dimension 2 is 4 but size is 5"),
    (lambda: X.unfold(2, -1, 0), RuntimeError, "size is -1 but must be >= 0"),
    (lambda: X.unfold(2, 2, 0), RuntimeError, "step is 0 but must be > 0"),
    (lambda: S.unfold(0, 2, 1), RuntimeError,
     "maximum size for tensor at dimension 0 is 1 but size is 2"),
    (lambda: X.view(5, 5), RuntimeError, "shape '[5, 5]' is invalid for input of size 24"),
    (lambda: X.transpose(0, 1).view(-1), RuntimeError, "view size is not compatible with input "
     "tensor's size and stride (at least one dimension spans across two contiguous subspaces). "
     "Use .reshape(...) instead."),
    (lambda: X.reshape(-1, -1), RuntimeError, "only one dimension can be inferred"),
    (lambda: X.flatten(2, 1), RuntimeError,
     "flatten() has invalid args: start_dim cannot come after end_dim"),
    (lambda: mt.cat([]), ValueError, "torch.cat(): expected a non-empty list of Tensors"),
    (lambda: mt.cat(X), TypeError,
     "cat(): argument 'tensors' (position 1) must be tuple of Tensors, not Tensor"),
    (lambda: mt.cat([X, 1]), TypeError, "expected Tensor as element 1 in argument 0, but got int"),
    (lambda: mt.cat([X, mt.zeros(2, 4, 4)], 2), RuntimeError, "Sizes of tensors must match "
     "except in dimension 2. Expected size 3 but got size 4 for tensor number 1 in the list."),
    (lambda: mt.cat([X, mt.zeros(2, 3)]), RuntimeError,
     "Tensors must have same number of dimensions: got 3 and 2"),
    (lambda: mt.cat([X, S]), RuntimeError,
     "zero-dimensional tensor (at position 1) cannot be concatenated"),
    (lambda: mt.cat([mt.zeros(0), X], 3), IndexError,
     "Dimension out of range (expected to be in range of [-3, 2], but got 3)"),
    (lambda: mt.stack([]), RuntimeError, "stack expects a non-empty TensorList"),
    (lambda: mt.stack(X), TypeError,
     "stack(): argument 'tensors' (position 1) must be tuple of Tensors, not Tensor"),
    (lambda: mt.stack([X, mt.zeros(2, 3, 5)]), RuntimeError, "stack expects each tensor to be "
     "equal size, but got [2, 3, 4] at entry 0 and [2, 3, 5] at entry 1"),
    (lambda: mt.stack([X, X], 4), IndexError,
     "Dimension out of range (expected to be in range of [-4, 3], but got 4)"),
    (lambda: mt.hstack([]), RuntimeError, "hstack expects a non-empty TensorList"),
    (lambda: mt.vstack([]), RuntimeError, "vstack expects a non-empty TensorList"),
])
def test_errors(fn, error, message):
    with pytest.raises(error) as info:
        fn()
    assert message in str(info.value)


# ---- torch comparisons (skipped without torch) ------------------------------------------------
TORCH_CASES = [
    lambda m, x: x.reshape(6, 4),
    lambda m, x: x.transpose(0, 2).reshape(4, 6),
    lambda m, x: x.unflatten(2, (2, 2)).movedim((0, 3), (3, 1)),
    lambda m, x: x.as_strided((3, 4), (2, 1), 1),
    lambda m, x: x.expand(2, 2, 3, 4).as_strided((4, 4), (3, 0), 2),
    lambda m, x: x.unfold(2, 3, 1).unfold(1, 2, 1),
    lambda m, x: x.narrow(2, 1, 3).flip(0, 1),
    lambda m, x: x.roll((2, -1), (2, 0)),
    lambda m, x: x.roll(7),
    lambda m, x: x.repeat(2, 1, 1, 3),
    lambda m, x: x.tile((2, 1)),
    lambda m, x: m.cat([x, x.transpose(1, 2).contiguous().transpose(1, 2), x[:1]], 0),
    lambda m, x: m.stack(x.unbind(1), 2),
    lambda m, x: m.cat(x.split([1, 3], 2)[::-1], 2),
    lambda m, x: m.vstack(x.chunk(3, 1)),
    lambda m, x: m.hstack([x, x]),
]


@pytest.mark.parametrize("index", range(len(TORCH_CASES)))
def test_matches_torch(index, device, rng):
    torch = pytest.importorskip("torch")
    fn = TORCH_CASES[index]
    values = rng.standard_normal(SHAPE)
    x = mt.tensor(values, device=device, dtype=mt.float64, requires_grad=True)
    tx = torch.tensor(values, requires_grad=True)
    out, t_out = fn(mt, x), fn(torch, tx)
    seed = rng.standard_normal(tuple(t_out.shape))
    np.testing.assert_allclose(out.detach().cpu().numpy(), t_out.detach().numpy())
    out.backward(mt.tensor(seed, dtype=mt.float64, device=device))
    t_out.backward(torch.tensor(seed))
    np.testing.assert_allclose(x.grad.cpu().numpy(), tx.grad.numpy(), rtol=1e-12, atol=1e-12)
    assert out.grad_fn.name() == type(t_out.grad_fn).__name__
