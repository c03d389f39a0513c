"""Diagonals, triangles, blocks, grids, splits, rotations, differences and repeats: forward
against torch (skipped without it) or numpy, gradients by finite differences, on both devices."""
import numpy as np
import pytest

import minitorch as mt
from minitorch.autograd import gradcheck


def _t(a, device, requires_grad=False):
    return mt.tensor(np.asarray(a, dtype=np.float64), device=device, requires_grad=requires_grad)


def _host(t):
    return t.detach().cpu().numpy()


LAYOUTS = {
    "contiguous": lambda a: a,
    "transposed": lambda a: a.transpose(0, 1),
    "stepped": lambda a: a[:, ::2] if a.ndim == 2 else a[::2],
}

CASES = [
    ("diagonal", lambda L, x: L.diagonal(x, 1), (4, 6)),
    ("diagonal_neg", lambda L, x: L.diagonal(x, -2), (5, 6)),
    ("diagonal_3d", lambda L, x: L.diagonal(x, 0, 2, 0), (3, 4, 5)),
    ("diagonal_empty", lambda L, x: L.diagonal(x, 7), (4, 6)),
    ("diag_vector", lambda L, x: L.diag(x.reshape(-1)[:5], -1), (4, 6)),
    ("diag_matrix", lambda L, x: L.diag(x, 2), (4, 6)),
    ("diag_embed", lambda L, x: L.diag_embed(x, 1, 0, 2), (4, 6)),
    ("trace", lambda L, x: L.trace(x), (4, 6)),
    ("tril", lambda L, x: L.tril(x), (4, 6)),
    ("tril_batched", lambda L, x: L.tril(x, -1), (2, 4, 6)),
    ("triu", lambda L, x: L.triu(x, 2), (4, 6)),
    ("block_diag", lambda L, x: L.block_diag(x, x[0], x[1, 1]), (4, 6)),
    ("rot90", lambda L, x: L.rot90(x), (4, 6)),
    ("rot90_neg", lambda L, x: L.rot90(x, -3, (1, 0)), (4, 6)),
    ("rot90_two", lambda L, x: L.rot90(x, 2, (0, 2)), (3, 4, 5)),
    ("diff", lambda L, x: L.diff(x), (4, 6)),
    ("diff_twice_dim0_prepend", lambda L, x: L.diff(x, 2, 0, prepend=x[:1] * 2), (4, 6)),
    ("repeat_interleave", lambda L, x: L.repeat_interleave(x, 2, 0), (4, 6)),
    ("repeat_interleave_flat", lambda L, x: L.repeat_interleave(x, 3), (4, 6)),
    ("select", lambda L, x: L.select(x, 1, -2), (4, 6)),
    ("tensor_split", lambda L, x: L.tensor_split(x, 4, 1)[1], (4, 6)),
    ("tensor_split_indices", lambda L, x: L.tensor_split(x, [1, 5, -2], 1)[2], (4, 6)),
    ("cross", lambda L, x: L.cross(x[:, :3], x[:, 3:], dim=1), (4, 6)),
    ("cdist", lambda L, x: L.cdist(x[:2], x[2:]), (4, 6)),
    ("dist", lambda L, x: L.dist(x[0], x[1], 3), (4, 6)),
]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name,fn,shape", CASES, ids=[c[0] for c in CASES])
def test_matches_torch_and_gradients(name, fn, shape, layout, device):
    torch = pytest.importorskip("torch")
    base = np.random.default_rng(0).standard_normal(shape[:1] + (shape[1] * 2,) + shape[2:]
                                                    if layout == "stepped" else shape)
    if layout == "transposed":
        base = np.ascontiguousarray(np.swapaxes(base, 0, 1))
    view = LAYOUTS[layout]
    ours = fn(mt, view(_t(base, device)))
    theirs = fn(torch, view(torch.tensor(base)))
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(_host(ours), theirs.numpy(), rtol=1e-12, atol=1e-12)
    leaf = _t(base, device, requires_grad=True)
    assert gradcheck(lambda x: fn(mt, view(x)), (leaf,))


def test_diagonal_is_a_view(device):
    x = _t(np.arange(12.0).reshape(3, 4), device)
    d = mt.diagonal(x, 1)
    d.mul_(10)                       # writes through to x
    np.testing.assert_array_equal(_host(x)[[0, 1, 2], [1, 2, 3]], [10.0, 60.0, 110.0])
    assert mt.tril(mt.ones(2, 3, dtype=mt.bool, device=device)).dtype is mt.bool


def test_grids_and_products(device):
    torch = pytest.importorskip("torch")
    a, b, c = np.arange(3.0), np.arange(4.0) * 2, np.array([5.0, 7.0])
    for indexing in ("ij", "xy"):
        ours = mt.meshgrid(_t(a, device), _t(b, device), _t(c, device), indexing=indexing)
        theirs = torch.meshgrid(torch.tensor(a), torch.tensor(b), torch.tensor(c),
                                indexing=indexing)
        for o, t in zip(ours, theirs):
            np.testing.assert_array_equal(_host(o), t.numpy())
    with pytest.warns(UserWarning, match="indexing argument"):
        mt.meshgrid(_t(a, device), _t(b, device))
    np.testing.assert_array_equal(
        _host(mt.cartesian_prod(_t(a, device), _t(c, device))),
        torch.cartesian_prod(torch.tensor(a), torch.tensor(c)).numpy())
    x, y = mt.broadcast_tensors(_t(np.ones((3, 1)), device), _t(np.ones(4), device))
    assert x.shape == y.shape == (3, 4)
    assert mt.broadcast_shapes((2, 1), (5,), 1) == torch.broadcast_shapes((2, 1), (5,), 1)
    index = mt.repeat_interleave(mt.tensor([2, 0, 1], device=device))
    np.testing.assert_array_equal(_host(index), [0, 0, 2])
    counts = mt.repeat_interleave(_t([[1, 2], [3, 4]], device), mt.tensor([1, 2]), dim=0)
    np.testing.assert_array_equal(_host(counts), [[1, 2], [3, 4], [3, 4]])
    np.testing.assert_array_equal(_host(mt.diff(mt.tensor([True, True, False], device=device))),
                                  [False, True])


def test_splits_match_torch(device):
    torch = pytest.importorskip("torch")
    base = np.arange(2 * 4 * 6.0).reshape(2, 4, 6)
    for fn, arg in (("hsplit", 2), ("vsplit", [1]), ("dsplit", 3), ("tensor_split", 3)):
        ours = getattr(mt, fn)(_t(base, device), arg)
        theirs = getattr(torch, fn)(torch.tensor(base), arg)
        assert len(ours) == len(theirs)
        for o, t in zip(ours, theirs):
            np.testing.assert_array_equal(_host(o), t.numpy())


@pytest.mark.parametrize("call,error", [
    (lambda x: mt.diagonal(x, 0, 1, 1), "diagonal dimensions cannot be identical 1, 1"),
    (lambda x: mt.diag(x.reshape(1, 2, 3)), "diag\\(\\): Supports 1D or 2D tensors. Got 3D"),
    (lambda x: mt.trace(x[0]), "trace: expected a matrix, but got tensor with dim 1"),
    (lambda x: mt.tril(x[0]), "tril: input tensor must have at least 2 dimensions"),
    (lambda x: mt.rot90(x, 1, (0, 0)), "expected rotation dims to be different"),
    (lambda x: mt.cross(x, x, dim=0),
     "linalg.cross: inputs dimension 0 must have length 3. Got 2 and 2"),
    (lambda x: mt.repeat_interleave(x, mt.tensor([1, 2, 3]), dim=0),
     "repeats must have the same size as input along dim, but got repeats.size\\(0\\) = 3"),
    (lambda x: mt.block_diag(x.reshape(1, 2, 3)), "Input 0 has 3 dimensions"),
    (lambda x: mt.cdist(x[0], x), "cdist only supports at least 2D tensors, X1 got: 1D"),
    (lambda x: mt.hsplit(x, 4), "torch.hsplit attempted to split along dimension 1"),
    (lambda x: mt.select(x, 0, 2), "select\\(\\): index 2 out of range"),
])
def test_errors(call, error, device):
    x = _t(np.zeros((2, 3)), device)
    with pytest.raises((RuntimeError, IndexError), match=error):
        call(x)


def test_bool_sizes_are_refused_like_torch(device):
    x = mt.zeros(2, 5, device=device)
    for call in (lambda: x.reshape((True, 10)), lambda: x.view(True, 10),
                 lambda: x.permute(False, 1)):
        with pytest.raises(TypeError, match="found element of type bool at pos 0"):
            call()
