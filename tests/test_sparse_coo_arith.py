"""Sparse COO arithmetic (functions/sparse_coo.py, torch.sparse): dense + sparse, sparse +
sparse, sparse * scalar / dense / sparse, sparse / scalar, -sparse, dense @ sparse, sparse @
sparse, torch.sparse.addmm / sum / softmax / log_softmax, t / transpose, a dense tensor's
to_dense. Forward against numpy's dense results, gradients to the values and the dense
operands by gradcheck in float64, which results are coalesced and the errors against torch."""
import warnings

import numpy as np
import pytest

import minitorch as mt

INDICES = [[0, 1, 1, 0, 2], [2, 0, 2, 2, 1]]        # (0, 2) twice: uncoalesced
VALUES = [3.0, 4.0, 5.0, 1.0, -2.0]
OTHER_INDICES = [[2, 0, 0], [2, 0, 2]]
OTHER_VALUES = [1.0, 2.0, 3.0]
HYBRID_INDICES = [[0, 2, 0]]                          # one sparse dim, one dense dim
HYBRID_VALUES = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]


def _np_dense(indices, values, shape):
    out = np.zeros(shape)
    values = np.asarray(values, dtype=np.float64)
    for k, position in enumerate(zip(*indices)):
        out[position] += values[k]
    return out


def _np(t):
    return t.detach().cpu().numpy()


def _sparse(device, indices=INDICES, values=VALUES, shape=(3, 3), dtype=mt.float32):
    return mt.sparse_coo_tensor(indices, values, shape, dtype=dtype, device=device)


def _empty(device, shape=(3, 3)):
    return mt.sparse_coo_tensor(mt.zeros(2, 0, dtype=mt.int64), mt.zeros(0), shape,
                                device=device)


S = _np_dense(INDICES, VALUES, (3, 3))
T = _np_dense(OTHER_INDICES, OTHER_VALUES, (3, 3))
DENSE = np.arange(9.0).reshape(3, 3)


# ---- addition -----------------------------------------------------------------------------------
def test_dense_plus_sparse_is_dense(device):
    s, d = _sparse(device), mt.tensor(DENSE, dtype=mt.float32, device=device)
    for result, expected in ((d + s, DENSE + S), (d - s, DENSE - S),
                             (mt.add(d, s), DENSE + S), (mt.add(d, s, alpha=2), DENSE + 2 * S),
                             (mt.sub(d, s, alpha=2), DENSE - 2 * S), (d.add(s), DENSE + S)):
        assert isinstance(result, mt.Tensor) and result.device.type == device
        np.testing.assert_allclose(_np(result), expected)
    assert (d + _empty(device)).tolist() == d.tolist()
    # the dtype promotes: long + float is float
    longs = mt.ones(3, 3, dtype=mt.int64, device=device)
    assert (longs + s).dtype is mt.float32
    np.testing.assert_allclose(_np(longs + s), 1 + S)


def test_dense_plus_hybrid_sparse(device):
    h = mt.sparse_coo_tensor(HYBRID_INDICES, HYBRID_VALUES, (3, 2), device=device)
    d = mt.ones(3, 2, device=device)
    np.testing.assert_allclose(_np(d + h), 1 + _np_dense(HYBRID_INDICES, HYBRID_VALUES, (3, 2)))


def test_sparse_plus_dense_or_number_is_torchs_error(device):
    s, d = _sparse(device), mt.ones(3, 3, device=device)
    for attempt in (lambda: s + d, lambda: s - d, lambda: s + 1, lambda: 1 + s,
                    lambda: s - 2, lambda: mt.add(s, d)):
        with pytest.raises(RuntimeError, match=r"add\(sparse, dense\) is not supported. Use "
                                               r"add\(dense, sparse\) instead."):
            attempt()


def test_sparse_plus_sparse_keeps_both_entry_lists_uncoalesced(device):
    a, b = _sparse(device), _sparse(device, OTHER_INDICES, OTHER_VALUES)
    total = a + b
    assert total.is_sparse and not total.is_coalesced() and total._nnz() == 8
    np.testing.assert_allclose(_np(total.to_dense()), S + T)
    np.testing.assert_allclose(_np((a - b).to_dense()), S - T)
    np.testing.assert_allclose(_np(mt.add(a, b, alpha=2).to_dense()), S + 2 * T)
    np.testing.assert_allclose(_np(a.sub(b, alpha=3).to_dense()), S - 3 * T)
    assert (a - a).coalesce().values().tolist() == [0.0] * 4     # explicit zeros stay


def test_coalesced_plus_coalesced_is_their_coalesced_union(device):
    a, b = _sparse(device).coalesce(), _sparse(device, OTHER_INDICES, OTHER_VALUES).coalesce()
    total = a + b
    assert total.is_coalesced()
    assert total.indices().tolist() == [[0, 0, 1, 1, 2, 2], [0, 2, 0, 2, 1, 2]]
    assert total.values().tolist() == [2.0, 7.0, 4.0, 5.0, -2.0, 1.0]
    assert (b + a).indices().tolist() == total.indices().tolist()


def test_sparse_plus_empty_sparse(device):
    a, e = _sparse(device), _empty(device)
    for result, coalesced in ((a + e, False), (e + a, False), (a.coalesce() + e, True),
                              (e + e, True)):
        assert result.is_coalesced() is coalesced
    np.testing.assert_allclose(_np((a + e).to_dense()), S)
    np.testing.assert_allclose(_np((e - a).to_dense()), -S)
    assert (e + e)._nnz() == 0


def test_hybrid_sparse_plus_sparse(device):
    h = mt.sparse_coo_tensor(HYBRID_INDICES, HYBRID_VALUES, (3, 2), device=device)
    expected = 2 * _np_dense(HYBRID_INDICES, HYBRID_VALUES, (3, 2))
    np.testing.assert_allclose(_np((h + h).to_dense()), expected)
    np.testing.assert_allclose(_np((h.coalesce() + h.coalesce()).to_dense()), expected)


def test_promotion_of_sparse_plus_sparse(device):
    total = _sparse(device) + _sparse(device, dtype=mt.float64)
    assert total.dtype is mt.float64
    np.testing.assert_allclose(_np(total.to_dense()), 2 * S)


# ---- scalars, negation, division ----------------------------------------------------------------
def test_scalar_multiplication_division_and_negation(device):
    s = _sparse(device)
    for result, expected in ((s * 2, 2 * S), (2 * s, 2 * S), (s / 2, S / 2), (-s, -S),
                             (s * mt.tensor(2.0, device=device), 2 * S),
                             (mt.tensor(2.0, device=device) * s, 2 * S),
                             (np.float64(2.0) * s, 2 * S), (s.mul(2), 2 * S), (s.div(4), S / 4),
                             (s.neg(), -S), (mt.mul(s, 3), 3 * S), (mt.mul(3, s), 3 * S)):
        assert result.is_sparse and not result.is_coalesced() and result._nnz() == 5
        np.testing.assert_allclose(_np(result.to_dense()), expected)
    c = s.coalesce()
    assert (c * 2).is_coalesced() and (c / 2).is_coalesced() and (-c).is_coalesced()
    integers = _sparse(device, values=[1, 2, 3, 4, 5], dtype=mt.int64)
    assert (integers / 2).dtype is mt.float32 and (integers * 2).dtype is mt.int64
    assert (integers * 1.5).dtype is mt.float32
    assert (_empty(device) * 2)._nnz() == 0


def test_division_by_a_tensor_is_torchs_error(device):
    s = _sparse(device)
    with pytest.raises(RuntimeError, match=r"Sparse division requires a scalar or zero-dim dense "
                                           r"tensor divisor \(got shape \[3, 3\] for divisor\)"):
        s / mt.ones(3, 3, device=device)
    with pytest.raises(RuntimeError, match="Sparse division requires a scalar"):
        s / s


# ---- elementwise products -----------------------------------------------------------------------
def test_sparse_times_dense_is_sparse_at_the_same_indices(device):
    s, d = _sparse(device), mt.tensor(DENSE, dtype=mt.float32, device=device)
    for result in (s * d, d * s, mt.mul(d, s)):
        assert result.is_sparse and result._indices().tolist() == INDICES
        np.testing.assert_allclose(_np(result.to_dense()), S * DENSE)
    row = mt.tensor([1.0, 2.0, 3.0], device=device)         # broadcasts to the sparse shape
    np.testing.assert_allclose(_np((s * row).to_dense()), S * np.array([1.0, 2.0, 3.0]))
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(4\) must match the size of "
                                           r"tensor b \(3\) at non-singleton dimension 1"):
        s * mt.ones(3, 4, device=device)


def test_sparse_times_sparse_follows_torchs_intersection(device):
    a, b = _sparse(device), _sparse(device, OTHER_INDICES, OTHER_VALUES)
    # neither coalesced: looked up in the one with more entries, the other's entries kept
    for product in (a * b, b * a):
        assert not product.is_coalesced()
        assert product._indices().tolist() == OTHER_INDICES
        assert product._values().tolist() == [0.0, 0.0, 12.0]
    # one coalesced: looked up in it
    product = a * b.coalesce()
    assert product._indices().tolist() == INDICES
    assert product._values().tolist() == [9.0, 0.0, 0.0, 3.0, 0.0]
    # both coalesced: only the common entries, coalesced
    product = a.coalesce() * b.coalesce()
    assert product.is_coalesced() and product.indices().tolist() == [[0], [2]]
    assert product.values().tolist() == [12.0]
    np.testing.assert_allclose(_np((a * a).to_dense()), S * S)
    empty = a * _empty(device)
    assert empty._nnz() == 0 and empty.is_coalesced()


def test_hybrid_sparse_times_sparse(device):
    h = mt.sparse_coo_tensor(HYBRID_INDICES, HYBRID_VALUES, (3, 2), device=device)
    dense = _np_dense(HYBRID_INDICES, HYBRID_VALUES, (3, 2))
    np.testing.assert_allclose(_np((h.coalesce() * h.coalesce()).to_dense()), dense * dense)


def test_sparse_times_sparse_of_another_shape_is_torchs_error():
    with pytest.raises(RuntimeError, match="expects sparse inputs with equal dimensionality, "
                                           "number of sparse dimensions, and shape of sparse "
                                           "dimensions"):
        _sparse("cpu") * _sparse("cpu", shape=(3, 4))


# ---- products -----------------------------------------------------------------------------------
def test_dense_at_sparse(device):
    s = _sparse(device)
    d = mt.tensor(np.arange(12.0).reshape(4, 3), dtype=mt.float32, device=device)
    expected = np.arange(12.0).reshape(4, 3) @ S
    for result in (d @ s, mt.mm(d, s), mt.matmul(d, s), mt.sparse.mm(d, s), d.mm(s),
                   d.matmul(s)):
        assert isinstance(result, mt.Tensor) and result.shape == (4, 3)
        np.testing.assert_allclose(_np(result), expected)
    vector = mt.tensor([1.0, 2.0, 3.0], device=device)
    np.testing.assert_allclose(_np(vector @ s), np.array([1.0, 2.0, 3.0]) @ S)
    np.testing.assert_allclose(_np(s @ vector), S @ np.array([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(_np(d @ _empty(device)), np.zeros((4, 3)))


def test_sparse_at_sparse_is_coalesced(device):
    a, b = _sparse(device), _sparse(device, OTHER_INDICES, OTHER_VALUES)
    for x, y, expected in ((a, a, S @ S), (a, b, S @ T), (b, a.t(), T @ S.T)):
        product = mt.sparse.mm(x, y)
        assert product.is_sparse and product.is_coalesced()
        np.testing.assert_allclose(_np(product.to_dense()), expected)
    assert (a @ a).indices().tolist() == [[0, 1, 1, 2, 2], [1, 1, 2, 0, 2]]
    assert (a @ _empty(device))._nnz() == 0


def test_addmm(device):
    s = _sparse(device)
    d = mt.tensor(DENSE, dtype=mt.float32, device=device)
    np.testing.assert_allclose(_np(mt.sparse.addmm(d, s, d)), DENSE + S @ DENSE)
    np.testing.assert_allclose(_np(mt.sparse.addmm(d, s, d, beta=0.5, alpha=2)),
                               0.5 * DENSE + 2 * S @ DENSE, rtol=1e-6)
    np.testing.assert_allclose(_np(mt.addmm(d, s, d)), DENSE + S @ DENSE)
    row = mt.ones(3, device=device)                          # input broadcasts
    np.testing.assert_allclose(_np(mt.sparse.addmm(row, s, d)), 1 + S @ DENSE)
    nan = mt.full((3, 3), float("nan"), device=device)     # beta=0 ignores the input
    np.testing.assert_allclose(_np(mt.sparse.addmm(nan, s, d, beta=0)), S @ DENSE)


def test_errors_of_products():
    s = _sparse("cpu")
    with pytest.raises(RuntimeError, match=r"addmm: Argument #3 \(dense\): Expected dim 0 size "
                                           r"3, got 4"):
        mt.ones(3, 4) @ s
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        mt.ones(3, 3, dtype=mt.float64) @ s
    with pytest.raises(RuntimeError, match=r"addmm: Argument #3 \(dense\): Expected dim 0 size "
                                           r"3, got 2"):
        mt.sparse.addmm(mt.ones(3, 2), s, mt.ones(2, 2))
    with pytest.raises(RuntimeError, match=r"The expanded size of the tensor \(3\) must match "
                                           r"the existing size \(2\) at non-singleton dimension 0"):
        mt.sparse.addmm(mt.ones(2, 2), s, mt.ones(3, 2))
    hybrid = mt.sparse_coo_tensor(HYBRID_INDICES, HYBRID_VALUES, (3, 2))
    with pytest.raises(RuntimeError, match="addmm: matrices expected, got 1D tensor"):
        hybrid @ mt.ones(2, 2)


# ---- reductions ---------------------------------------------------------------------------------
def test_sum(device):
    s = _sparse(device)
    for total in (mt.sparse.sum(s), mt.sum(s), s.sum(), mt.sparse.sum(s, (0, 1)),
                  mt.sparse.sum(s, [1, -2])):
        assert isinstance(total, mt.Tensor) and total.shape == () and total.item() == S.sum()
    for dim in (0, 1, -1):
        for part in (mt.sparse.sum(s, dim), s.sum(dim), mt.sum(s, dim)):
            assert part.is_sparse and part.is_coalesced() and part.shape == (3,)
            np.testing.assert_allclose(_np(part.to_dense()), S.sum(dim))
    kept = mt.sum(s, 1, keepdim=True)
    assert kept.is_sparse and kept.shape == (3, 1)
    np.testing.assert_allclose(_np(kept.to_dense()), S.sum(1, keepdims=True))
    assert mt.sparse.sum(s, dtype=mt.float64).dtype is mt.float64
    assert mt.sparse.sum(s, 0, dtype=mt.float64).dtype is mt.float64
    assert mt.sparse.sum(_empty(device)).item() == 0.0
    assert mt.sparse.sum(_empty(device), 0)._nnz() == 0
    integers = _sparse(device, values=[1, 2, 3, 4, 5], dtype=mt.int32)
    assert integers.sum().dtype is mt.int64 and integers.sum().item() == 15


def test_sum_of_hybrid_and_three_sparse_dims(device):
    h = mt.sparse_coo_tensor(HYBRID_INDICES, HYBRID_VALUES, (3, 2), device=device)
    dense = _np_dense(HYBRID_INDICES, HYBRID_VALUES, (3, 2))
    over_sparse = mt.sparse.sum(h, 0)          # every sparse dim: a dense tensor
    assert isinstance(over_sparse, mt.Tensor) and over_sparse.tolist() == dense.sum(0).tolist()
    over_dense = mt.sparse.sum(h, 1)
    assert over_dense.is_sparse and over_dense.indices().tolist() == [[0, 2]]
    assert over_dense.values().tolist() == [14.0, 7.0]
    assert mt.sum(h, 0, keepdim=True).tolist() == [dense.sum(0).tolist()]
    indices = [[0, 1, 1], [0, 0, 2], [1, 1, 0]]
    s3 = mt.sparse_coo_tensor(indices, [1.0, 2.0, 3.0], (2, 3, 2), device=device)
    dense3 = _np_dense(indices, [1.0, 2.0, 3.0], (2, 3, 2))
    for dims in (1, (0, 2), (0,), (2, 1)):
        np.testing.assert_allclose(_np(mt.sparse.sum(s3, dims).to_dense()), dense3.sum(dims))


def test_errors_of_sum():
    s = _sparse("cpu")
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of "
                                         r"\[-2, 1\], but got 2\)"):
        mt.sparse.sum(s, 2)
    with pytest.raises(RuntimeError, match="dim 0 appears multiple times in the list of dims"):
        mt.sparse.sum(s, (0, 0))


def _np_sparse_softmax(dense, mask, dim, log=False):
    shifted = np.where(mask, dense, -np.inf)
    shifted = shifted - shifted.max(dim, keepdims=True)
    exps = np.where(mask, np.exp(shifted), 0.0)
    result = exps / exps.sum(dim, keepdims=True)
    return np.where(mask, np.log(result) if log else result, 0.0)


def test_softmax_over_the_specified_entries(device):
    s = _sparse(device, dtype=mt.float64)
    mask = _np_dense(INDICES, [1.0] * 5, (3, 3)) > 0
    for dim in (0, 1, -1):
        result = mt.sparse.softmax(s, dim)
        assert result.is_sparse and result.is_coalesced()
        np.testing.assert_allclose(_np(result.to_dense()), _np_sparse_softmax(S, mask, dim))
        with np.errstate(divide="ignore"):
            expected = _np_sparse_softmax(S, mask, dim, log=True)
        np.testing.assert_allclose(_np(mt.sparse.log_softmax(s, dim).to_dense()), expected)
    assert mt.sparse.softmax(_sparse(device), 1, dtype=mt.float64).dtype is mt.float64
    h = mt.sparse_coo_tensor(HYBRID_INDICES, HYBRID_VALUES, (3, 2), dtype=mt.float64,
                             device=device).coalesce()
    values = np.array([[6.0, 8.0], [3.0, 4.0]])       # rows 0 and 2, coalesced
    over_rows = mt.sparse.softmax(h, 0).values()
    np.testing.assert_allclose(_np(over_rows), np.exp(values) / np.exp(values).sum(0))
    within = mt.sparse.softmax(h, 1).values()
    np.testing.assert_allclose(_np(within), np.exp(values) / np.exp(values).sum(1, keepdims=True))
    assert mt.sparse.softmax(_empty(device), 1)._nnz() == 0


# ---- views and conversions ----------------------------------------------------------------------
def test_t_transpose_and_to_dense(device):
    s = _sparse(device)
    for flipped in (s.t(), s.transpose(0, 1), s.coalesce().t()):
        assert not flipped.is_coalesced()
        np.testing.assert_allclose(_np(flipped.to_dense()), S.T)
    vector = mt.sparse_coo_tensor([[0, 2]], [1.0, 2.0], (3,), device=device)
    assert vector.t().to_dense().tolist() == [1.0, 0.0, 2.0]
    h = mt.sparse_coo_tensor(HYBRID_INDICES, HYBRID_VALUES, (3, 2), device=device)
    with pytest.raises(RuntimeError, match="t\\(\\) expects a tensor with <= 2 sparse and 0 dense "
                                           "dimensions, but got 1 sparse and 1 dense dimensions"):
        h.t()
    with pytest.raises(RuntimeError, match="dtype argument is not supported by sparse_to_dense"):
        s.to_dense(mt.float64)
    dense = mt.ones(2, 2, device=device)
    assert dense.to_dense() is dense
    assert dense.to_dense(mt.float64).dtype is mt.float64
    assert s.to_sparse() is s and dense.to_sparse().to_dense().tolist() == dense.tolist()


def test_legacy_sparse_float_tensor():
    s = mt.sparse.FloatTensor(mt.tensor(INDICES), mt.tensor(VALUES), (3, 3))
    assert s.is_sparse and s.dtype is mt.float32
    np.testing.assert_allclose(_np(s.to_dense()), S)
    assert mt.sparse.FloatTensor(2, 3).shape == (2, 3)


# ---- shape errors -------------------------------------------------------------------------------
def test_shape_mismatches_are_torchs_errors():
    s = _sparse("cpu")
    with pytest.raises(RuntimeError, match=r"add: expected 'self' and 'other' to have same "
                                           r"size, but self has size \[3, 4\] while other has "
                                           r"size \[3, 3\] \(FYI: dense-sparse addition does "
                                           r"not currently support broadcasting\)"):
        mt.ones(3, 4) + s
    with pytest.raises(RuntimeError, match=r"add: expected sizes of 'self' and 'other' to "
                                           r"match, but \[3, 3\] != \[3, 4\]"):
        s + _sparse("cpu", shape=(3, 4))
    hybrid = mt.sparse_coo_tensor([[0, 2, 0]], [[1.0, 2, 0], [3, 4, 0], [5, 6, 0]], (3, 3))
    with pytest.raises(RuntimeError, match="add: expected 'self' and 'other' to have same "
                                           "density, but 'self' has 2 sparse dimensions while "
                                           "'other' has 1 sparse dimensions"):
        s + hybrid
    booleans = mt.sparse_coo_tensor([[0], [1]], [True], (2, 2))
    with pytest.raises(NotImplementedError, match="\"cadd_sparse\" not implemented for 'Bool'"):
        booleans + booleans
    with pytest.raises(RuntimeError, match="For integral input tensors, argument alpha must not "
                                           "be a floating point number."):
        mt.add(_sparse("cpu", dtype=mt.int64), _sparse("cpu", dtype=mt.int64), alpha=0.5)


# ---- gradients ----------------------------------------------------------------------------------
def _values(device, values=VALUES):
    return mt.tensor(values, dtype=mt.float64, device=device, requires_grad=True)


def _dense_input(device, shape=(3, 3), seed=0):
    rng = np.random.default_rng(seed)
    return mt.tensor(rng.normal(size=shape), dtype=mt.float64, device=device,
                     requires_grad=True)


def _s(values, indices=INDICES, shape=(3, 3)):
    return mt.sparse_coo_tensor(indices, values, shape)


def test_gradients_of_addition_and_products(device):
    v, w = _values(device), _values(device, OTHER_VALUES)
    d, e = _dense_input(device), _dense_input(device, (4, 3), seed=1)
    gradcheck = mt.autograd.gradcheck
    assert gradcheck(lambda v, d: d + _s(v), (v, d))
    assert gradcheck(lambda v, d: mt.sub(d, _s(v), alpha=2.5), (v, d))
    assert gradcheck(lambda v, w: (_s(v) + _s(w, OTHER_INDICES)).to_dense(), (v, w))
    assert gradcheck(lambda v, w: (_s(v).coalesce() - _s(w, OTHER_INDICES).coalesce())
                     .values(), (v, w))
    assert gradcheck(lambda v: (-_s(v) * 3 / 2).to_dense(), (v,))
    assert gradcheck(lambda v, d: (_s(v) * d).to_dense(), (v, d))
    assert gradcheck(lambda v, w: (_s(v) * _s(w, OTHER_INDICES)).to_dense(), (v, w))
    assert gradcheck(lambda v: (_s(v).coalesce() * _s(v).coalesce()).values(), (v,))
    assert gradcheck(lambda v, e: e @ _s(v), (v, e))
    assert gradcheck(lambda v, d: mt.sparse.addmm(d, _s(v), d, beta=0.5, alpha=2.0), (v, d))
    assert gradcheck(lambda v, w: (_s(v) @ _s(w, OTHER_INDICES)).values(), (v, w))
    assert gradcheck(lambda v: _s(v).t().to_dense(), (v,))


def test_gradients_of_sum_and_softmax(device):
    v = _values(device)
    gradcheck = mt.autograd.gradcheck
    assert gradcheck(lambda v: mt.sparse.sum(_s(v)), (v,))
    assert gradcheck(lambda v: mt.sparse.sum(_s(v), 1).to_dense(), (v,))
    assert gradcheck(lambda v: mt.sparse.softmax(_s(v), 1).values(), (v,))
    assert gradcheck(lambda v: mt.sparse.log_softmax(_s(v), 0).values(), (v,))
    h = mt.tensor(HYBRID_VALUES, dtype=mt.float64, device=device, requires_grad=True)
    assert gradcheck(lambda h: mt.sparse.sum(_s(h, HYBRID_INDICES, (3, 2)), 0), (h,))
    assert gradcheck(lambda h: mt.sparse.softmax(_s(h, HYBRID_INDICES, (3, 2)), 0).values(),
                     (h,))


def test_a_leaf_sparse_tensor_gets_its_gradient_through_the_arithmetic(device):
    s = mt.sparse_coo_tensor(INDICES, VALUES, (3, 3), device=device, requires_grad=True)
    d = mt.ones(3, 3, device=device, requires_grad=True)
    (d + 2 * s).sum().backward()
    assert s.grad._values().tolist() == [2.0] * 5 and d.grad.tolist() == [[1.0] * 3] * 3
    s2 = mt.sparse_coo_tensor(INDICES, VALUES, (3, 3), device=device, requires_grad=True)
    mt.sparse.sum(s2 * s2.detach()).backward()
    assert s2.grad._values().tolist() == [4.0, 4.0, 5.0, 4.0, -2.0]   # the coalesced partner


# ---- torch --------------------------------------------------------------------------------------
@pytest.fixture
def torch():
    return pytest.importorskip("torch", reason="torch comparisons need torch installed")


def _pair(torch, indices=INDICES, values=VALUES, shape=(3, 3), coalesce=False):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = torch.sparse_coo_tensor(torch.tensor(indices, dtype=torch.int64),
                                         torch.tensor(values, dtype=torch.float32), shape)
    ours = mt.sparse_coo_tensor(mt.tensor(indices, dtype=mt.int64),
                                mt.tensor(values, dtype=mt.float32), shape)
    return (ours.coalesce(), theirs.coalesce()) if coalesce else (ours, theirs)


def _same(ours, theirs, entries=True):
    if theirs.is_sparse:
        assert ours.is_sparse and ours.shape == tuple(theirs.shape)
        assert ours.is_coalesced() == theirs.is_coalesced()
        if entries:
            assert ours._indices().tolist() == theirs._indices().tolist()
            np.testing.assert_allclose(_np(ours._values()), theirs._values().numpy(),
                                       rtol=1e-6)
        np.testing.assert_allclose(_np(ours.to_dense()), theirs.to_dense().numpy(), rtol=1e-6)
    else:
        assert not getattr(ours, "is_sparse", False)
        np.testing.assert_allclose(_np(ours), theirs.numpy(), rtol=1e-6)


@pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta")
def test_matches_torch(torch):
    a, ta = _pair(torch)
    b, tb = _pair(torch, OTHER_INDICES, OTHER_VALUES)
    ac, tac = _pair(torch, coalesce=True)
    bc, tbc = _pair(torch, OTHER_INDICES, OTHER_VALUES, coalesce=True)
    e, te = _pair(torch, [[], []], [], (3, 3))
    d = np.arange(9.0, dtype=np.float32).reshape(3, 3)
    md, td = mt.tensor(d), torch.tensor(d)
    cases = [
        (md + a, td + ta), (md - a, td - ta), (a * 2, ta * 2), (2 * a, 2 * ta), (a / 2, ta / 2),
        (-a, -ta), (ac * 2, tac * 2), (-ac, -tac), (a * md, ta * td), (md * a, td * ta),
        (a * b, ta * tb), (b * a, tb * ta), (a * bc, ta * tbc), (ac * b, tac * tb),
        (ac * bc, tac * tbc), (a * e, ta * te), (e * a, te * ta),
        (ac + bc, tac + tbc), (bc - ac, tbc - tac), (a + e, ta + te), (e + a, te + ta),
        (ac + e, tac + te), (e + e, te + te),
        (md @ a, td @ ta), (a @ md, ta @ td), (a @ a, ta @ ta), (a @ b, ta @ tb),
        (mt.sparse.addmm(md, a, md, beta=0.5, alpha=2), torch.sparse.addmm(td, ta, td, beta=0.5,
                                                                           alpha=2)),
        (mt.sparse.sum(a), torch.sparse.sum(ta)), (mt.sparse.sum(a, 0), torch.sparse.sum(ta, 0)),
        (mt.sparse.sum(a, 1), torch.sparse.sum(ta, 1)), (a.t(), ta.t()), (ac.t(), tac.t()),
        (mt.sparse.softmax(a, 1), torch.sparse.softmax(ta, 1)),
        (mt.sparse.log_softmax(a, 0), torch.sparse.log_softmax(ta, 0)),
    ]
    for ours, theirs in cases:
        _same(ours, theirs)
    # uncoalesced sums: torch merges the two entry lists in an order of its own
    for ours, theirs in ((a + b, ta + tb), (a - b, ta - tb), (a + a, ta + ta),
                         (a + bc, ta + tbc), (ac + b, tac + tb)):
        _same(ours, theirs, entries=False)
        _same(ours.coalesce(), theirs.coalesce())


def test_hybrid_matches_torch(torch):
    h, th = _pair(torch, HYBRID_INDICES, HYBRID_VALUES, (3, 2))
    dense = np.ones((3, 2), dtype=np.float32)
    for ours, theirs in ((mt.tensor(dense) + h, torch.tensor(dense) + th),
                         (mt.sparse.sum(h, 0), torch.sparse.sum(th, 0)),
                         (mt.sparse.sum(h, 1), torch.sparse.sum(th, 1)),
                         (mt.sparse.softmax(h, 0), torch.sparse.softmax(th, 0)),
                         (mt.sparse.softmax(h, 1), torch.sparse.softmax(th, 1)),
                         (h.coalesce() * h.coalesce(), th.coalesce() * th.coalesce()),
                         (h * 3, th * 3)):
        _same(ours, theirs)


@pytest.mark.torch_exact
def test_reprs_match_torch(torch):
    a, ta = _pair(torch)
    ac, tac = _pair(torch, coalesce=True)
    assert repr(a * 2) == repr(ta * 2)
    assert repr(ac + ac) == repr(tac + tac)
    assert repr(mt.sparse.sum(a, 1)) == repr(torch.sparse.sum(ta, 1))
    assert repr(mt.sparse.softmax(a, 1)) == repr(torch.sparse.softmax(ta, 1))


def test_errors_match_torch(torch):
    a, ta = _pair(torch)
    pairs = [
        (lambda: a + mt.ones(3, 3), lambda: ta + torch.ones(3, 3)),
        (lambda: mt.ones(3, 4) + a, lambda: torch.ones(3, 4) + ta),
        (lambda: a + _pair(torch, shape=(3, 4))[0], lambda: ta + _pair(torch, shape=(3, 4))[1]),
        (lambda: a / mt.ones(3, 3), lambda: ta / torch.ones(3, 3)),
        (lambda: mt.ones(3, 4) @ a, lambda: torch.ones(3, 4) @ ta),
        (lambda: mt.sparse.sum(a, 2), lambda: torch.sparse.sum(ta, 2)),
        (lambda: a * mt.ones(3, 4), lambda: ta * torch.ones(3, 4)),
    ]
    for ours, theirs in pairs:
        with pytest.raises(Exception) as expected:
            theirs()
        with pytest.raises(type(expected.value)) as got:
            ours()
        assert str(got.value).split("\n")[0] == str(expected.value).split("\n")[0]
