"""Sparse COO basics (functions/sparse_coo.py): construction and its checks, to_dense, coalesce,
indices / values, to_sparse, and sparse @ dense with gradients to the dense operand and to the
values; forward against numpy, gradients by gradcheck in float64, behaviour against torch."""
import numpy as np
import pytest

import minitorch as mt

INDICES = [[0, 1, 1, 0, 2], [2, 0, 2, 2, 1]]
VALUES = [3.0, 4.0, 5.0, 1.0, -2.0]


def _dense(indices, values, shape):
    out = np.zeros(shape)
    for (r, c), v in zip(zip(*indices), values):
        out[r, c] += v
    return out


def test_to_dense_sums_duplicates(device):
    s = mt.sparse_coo_tensor(INDICES, VALUES, (3, 3), device=device)
    assert s.is_sparse and s.layout is mt.sparse_coo and s.shape == (3, 3)
    assert s._nnz() == 5 and s.sparse_dim() == 2 and s.dense_dim() == 0
    assert not s.is_coalesced()
    np.testing.assert_array_equal(s.to_dense().cpu().numpy(), _dense(INDICES, VALUES, (3, 3)))


def test_coalesce_sorts_and_sums(device):
    s = mt.sparse_coo_tensor(INDICES, VALUES, (3, 3), device=device).coalesce()
    assert s.is_coalesced()
    assert s.indices().tolist() == [[0, 1, 1, 2], [2, 0, 2, 1]]
    assert s.values().tolist() == [4.0, 4.0, 5.0, -2.0]
    with pytest.raises(RuntimeError, match="Cannot get indices on an uncoalesced tensor"):
        mt.sparse_coo_tensor(INDICES, VALUES, (3, 3)).indices()


def test_size_is_inferred_and_checked():
    assert mt.sparse_coo_tensor(INDICES, VALUES).shape == (3, 3)
    with pytest.raises(RuntimeError, match="size is inconsistent with indices: for dim 1, size "
                                           "is 2 but found index 2"):
        mt.sparse_coo_tensor(INDICES, VALUES, (3, 2))
    with pytest.raises(RuntimeError, match="found negative index -1 for dim 0"):
        mt.sparse_coo_tensor([[-1], [0]], [1.0], (2, 2))
    with pytest.raises(RuntimeError, match="indices and values must have same nnz"):
        mt.sparse_coo_tensor(INDICES, VALUES[:3], (3, 3))
    empty = mt.sparse_coo_tensor(mt.zeros(2, 0, dtype=mt.int64), mt.zeros(0), (2, 2))
    assert empty.to_dense().tolist() == [[0.0, 0.0], [0.0, 0.0]]


def test_hybrid_values_and_to_sparse(device):
    dense = mt.tensor([[0.0, 0.0], [1.0, 0.0], [0.0, 0.0], [2.0, 3.0]], device=device)
    s = dense.to_sparse(1)
    assert s.sparse_dim() == 1 and s.dense_dim() == 1 and s.is_coalesced()
    assert s.indices().tolist() == [[1, 3]]
    assert s.values().tolist() == [[1.0, 0.0], [2.0, 3.0]]
    np.testing.assert_array_equal(s.to_dense().cpu().numpy(), dense.cpu().numpy())
    full = dense.to_sparse()
    assert full.indices().tolist() == [[1, 3, 3], [0, 0, 1]]
    assert full.coalesce() is full


def test_sparse_mm_values_and_gradients(device):
    rng = np.random.default_rng(0)
    values = mt.tensor(VALUES, dtype=mt.float64, device=device, requires_grad=True)
    dense = mt.tensor(rng.normal(size=(3, 4)), dtype=mt.float64, device=device,
                      requires_grad=True)

    def product(v, d):
        return mt.sparse.mm(mt.sparse_coo_tensor(INDICES, v, (3, 3)), d)
    np.testing.assert_allclose(product(values, dense).detach().cpu().numpy(),
                               _dense(INDICES, VALUES, (3, 3)) @ dense.detach().cpu().numpy())
    assert mt.autograd.gradcheck(product, (values, dense))
    s = mt.sparse_coo_tensor(INDICES, values, (3, 3))
    for result in (s @ dense, mt.mm(s, dense), mt.spmm(s, dense), mt.matmul(s, dense)):
        np.testing.assert_allclose(result.detach().cpu().numpy(),
                                   product(values, dense).detach().cpu().numpy())


def test_a_leaf_sparse_tensor_gets_a_sparse_grad(device):
    s = mt.sparse_coo_tensor(INDICES, VALUES, (3, 3), device=device, requires_grad=True)
    assert s.requires_grad and s.grad is None
    mt.sparse.mm(s, mt.ones(3, 2, device=device)).sum().backward()
    assert s.grad.is_sparse and s.grad._values().tolist() == [2.0] * 5


def test_errors_of_sparse_mm():
    s = mt.sparse_coo_tensor(INDICES, VALUES, (3, 3))
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(3x3 and "
                                           r"2x2\)"):
        s @ mt.ones(2, 2)
    with pytest.raises(RuntimeError, match="same dtype"):
        s @ mt.ones(3, 2, dtype=mt.float64)


torch = pytest.importorskip("torch", reason="torch comparisons need torch installed")


def test_matches_torch():
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = torch.sparse_coo_tensor(torch.tensor(INDICES), torch.tensor(VALUES), (3, 3))
    ours = mt.sparse_coo_tensor(INDICES, VALUES, (3, 3))
    assert repr(ours) == repr(theirs)
    assert repr(ours.coalesce()) == repr(theirs.coalesce())
    np.testing.assert_array_equal(ours.to_dense().numpy(), theirs.to_dense().numpy())
    dense = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    np.testing.assert_allclose((ours @ mt.tensor(dense)).numpy(),
                               torch.sparse.mm(theirs, torch.tensor(dense)).numpy())
    assert repr(mt.tensor([[0.0, 2.0], [3.0, 0.0]]).to_sparse()) == \
        repr(torch.tensor([[0.0, 2.0], [3.0, 0.0]]).to_sparse())
    assert repr(mt.zeros(1).layout) == repr(torch.zeros(1).layout)
