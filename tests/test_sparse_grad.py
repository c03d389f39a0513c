"""Sparse gradients: F.embedding / nn.Embedding / embedding_bag with sparse=True give the weight a
sparse COO .grad in torch's layout; the engine accumulates them as torch's AccumulateGrad; SGD,
Adagrad and SparseAdam update from them (the other optimizers and gradient clipping refuse them
with torch's errors). Dense equivalence is checked without torch; layouts, errors and training
trajectories against torch where it is installed."""
import numpy as np
import pytest

import minitorch as mt
import minitorch.nn.functional as F

WEIGHT = np.random.RandomState(0).randn(7, 3)

# (indices, padding_idx): repeated indices, a 2-D index tensor, padding, nothing looked up
CASES = [
    ([1, 2, 1, 6, 1], None),
    ([[1, 2, 1], [4, 2, 0]], None),
    ([[1, 2, 1], [4, 2, 0]], 2),
    ([3, 3], 3),
    ([], None),
    ([5], -2),
]


def _torch():
    return pytest.importorskip("torch")


def _leaf(device, dtype=mt.float64):
    return mt.tensor(WEIGHT, dtype=dtype, device=device, requires_grad=True)


def _upstream(shape, seed=1):
    """A fixed non-constant output gradient (so values differ row by row)."""
    return np.random.RandomState(seed).randn(*shape)


def _embedding_grad(device, indices, padding_idx, sparse):
    w = _leaf(device)
    idx = mt.tensor(indices, dtype=mt.int64, device=device)
    out = F.embedding(idx, w, padding_idx=padding_idx, sparse=sparse)
    out.backward(mt.tensor(_upstream(out.shape), device=device))
    return w.grad


@pytest.mark.parametrize("indices,padding_idx", CASES)
def test_embedding_sparse_grad_equals_dense(device, indices, padding_idx):
    sparse = _embedding_grad(device, indices, padding_idx, True)
    dense = _embedding_grad(device, indices, padding_idx, False)
    assert sparse.is_sparse and sparse.layout is mt.sparse_coo and sparse.shape == (7, 3)
    assert sparse.device.type == device and sparse.dtype is mt.float64
    np.testing.assert_allclose(sparse.to_dense().cpu().numpy(), dense.cpu().numpy(), atol=1e-15)


@pytest.mark.parametrize("indices,padding_idx", CASES)
def test_embedding_sparse_layout_is_torchs(device, indices, padding_idx):
    torch = _torch()
    ours = _embedding_grad(device, indices, padding_idx, True)
    w = torch.tensor(WEIGHT, requires_grad=True)
    out = torch.nn.functional.embedding(torch.tensor(indices, dtype=torch.int64), w,
                                        padding_idx=padding_idx, sparse=True)
    out.backward(torch.tensor(_upstream(out.shape)))
    theirs = w.grad
    assert ours._indices().cpu().tolist() == theirs._indices().tolist()     # uncoalesced
    np.testing.assert_array_equal(ours._values().cpu().numpy(), theirs._values().numpy())
    assert ours.is_coalesced() == theirs.is_coalesced()
    ours_c, theirs_c = ours.coalesce(), theirs.coalesce()
    assert ours_c.indices().cpu().tolist() == theirs_c.indices().tolist()
    np.testing.assert_allclose(ours_c.values().cpu().numpy(), theirs_c.values().numpy(),
                               rtol=1e-15)


def test_embedding_sparse_keeps_duplicates_in_input_order(device):
    grad = _embedding_grad(device, [[4, 1], [4, 4]], None, True)
    assert grad._indices().cpu().tolist() == [[4, 1, 4, 4]]
    assert grad._nnz() == 4 and grad.sparse_dim() == 1 and grad.dense_dim() == 1
    assert not grad.is_coalesced()
    assert grad.coalesce().indices().cpu().tolist() == [[1, 4]]


def test_embedding_sparse_padding_entries_are_left_out(device):
    grad = _embedding_grad(device, [0, 2, 0, 5], 0, True)
    assert grad._indices().cpu().tolist() == [[2, 5]]
    only_padding = _embedding_grad(device, [2, 2], 2, True)
    assert only_padding._nnz() == 0 and only_padding._indices().shape == (1, 0)
    assert only_padding._values().shape == (0, 3)


def test_embedding_module_sparse(device):
    mt.manual_seed(0)
    emb = mt.nn.Embedding(10, 4, padding_idx=0, sparse=True, device=device)
    emb(mt.tensor([[0, 3], [3, 9]], device=device)).sum().backward()
    grad = emb.weight.grad
    assert grad.is_sparse and grad._indices().cpu().tolist() == [[3, 3, 9]]
    np.testing.assert_array_equal(grad._values().cpu().numpy(), np.ones((3, 4)))
    assert "sparse=True" in repr(emb)


def test_embedding_sparse_max_norm_matches_torch(device):
    torch = _torch()
    idx = [1, 2, 1, 6]
    w = _leaf(device)
    F.embedding(mt.tensor(idx, device=device), w, max_norm=1.0, sparse=True).pow(2).sum() \
        .backward()
    tw = torch.tensor(WEIGHT, requires_grad=True)
    torch.nn.functional.embedding(torch.tensor(idx), tw, max_norm=1.0, sparse=True).pow(2) \
        .sum().backward()
    np.testing.assert_allclose(w.detach().cpu().numpy(), tw.detach().numpy(), rtol=1e-12)
    assert w.grad._indices().cpu().tolist() == tw.grad._indices().tolist()
    np.testing.assert_allclose(w.grad._values().cpu().numpy(), tw.grad._values().numpy(),
                               rtol=1e-12)


def test_embedding_sparse_scale_grad_by_freq_is_refused_at_backward():
    w = _leaf("cpu")
    out = F.embedding(mt.tensor([1, 1]), w, scale_grad_by_freq=True, sparse=True)
    with pytest.raises(RuntimeError, match="embedding_backward: scale_grad_by_freq not "
                                           "supported with sparse gradients"):
        out.sum().backward()
    assert w.grad is None


def test_embedding_sparse_non_leaf_weight_gets_dense_sum(device):
    """A weight that is an op's result passes the sum on densely (torch would keep it sparse
    through the op); the leaf's gradient is the same sum."""
    w = _leaf(device)
    F.embedding(mt.tensor([1, 1, 4], device=device), w * 2, sparse=True).sum().backward()
    expected = np.zeros((7, 3))
    expected[1], expected[4] = 4.0, 2.0
    assert not w.grad.is_sparse
    np.testing.assert_array_equal(w.grad.cpu().numpy(), expected)


# ---- embedding_bag ----------------------------------------------------------------------------
BAGS = [
    {"input": [1, 2, 1, 4, 6], "offsets": [0, 2], "mode": "sum"},
    {"input": [1, 2, 1, 4, 6], "offsets": [0, 2, 2], "mode": "mean"},
    {"input": [1, 2, 1, 4, 6], "offsets": [0, 3], "mode": "mean", "padding_idx": 1},
    {"input": [[1, 2, 1], [4, 6, 4]], "offsets": None, "mode": "sum", "per_sample_weights": True},
    {"input": [], "offsets": [0], "mode": "sum"},
]


def _bag_grad(lib, device, case, sparse):
    kw = dict(case)
    per_sample = kw.pop("per_sample_weights", False)
    tensor = (lambda x, **k: lib.tensor(x, device=device, **k)) if lib is mt else lib.tensor
    w = tensor(WEIGHT, requires_grad=True)
    idx = tensor(kw.pop("input"), dtype=lib.int64)
    offsets = kw.pop("offsets")
    offsets = None if offsets is None else tensor(offsets, dtype=lib.int64)
    weights = tensor(np.arange(1.0, idx.numel() + 1).reshape(tuple(idx.shape))) \
        if per_sample else None
    functional = F if lib is mt else lib.nn.functional
    out = functional.embedding_bag(idx, w, offsets, sparse=sparse,
                                   per_sample_weights=weights, **kw)
    out.backward(tensor(_upstream(tuple(out.shape))))
    return w.grad


@pytest.mark.parametrize("case", BAGS)
def test_embedding_bag_sparse_grad_equals_dense(device, case):
    sparse, dense = _bag_grad(mt, device, case, True), _bag_grad(mt, device, case, False)
    assert sparse.is_sparse
    np.testing.assert_allclose(sparse.to_dense().cpu().numpy(), dense.cpu().numpy(),
                               atol=1e-15)


@pytest.mark.parametrize("case", BAGS)
def test_embedding_bag_sparse_layout_is_torchs(device, case):
    torch = _torch()
    ours, theirs = _bag_grad(mt, device, case, True), _bag_grad(torch, None, case, True)
    assert ours._indices().cpu().tolist() == theirs._indices().tolist()
    np.testing.assert_allclose(ours._values().cpu().numpy(), theirs._values().numpy(),
                               rtol=1e-14)


def test_embedding_bag_max_sparse_is_refused():
    bag = mt.nn.EmbeddingBag(5, 2, mode="max", sparse=True)
    with pytest.raises(ValueError, match="max mode does not support sparse weights"):
        bag(mt.tensor([[1, 2]]))


def test_embedding_bag_module_sparse(device):
    bag = mt.nn.EmbeddingBag(6, 2, mode="sum", sparse=True, device=device)
    bag(mt.tensor([1, 5, 5], device=device), mt.tensor([0, 1], device=device)).sum().backward()
    assert bag.weight.grad.is_sparse
    assert bag.weight.grad._indices().cpu().tolist() == [[1, 5, 5]]


# ---- accumulation, hooks, zero_grad ------------------------------------------------------------
def _lookup(w, indices, device, scale=1.0):
    idx = mt.tensor(indices, dtype=mt.int64, device=device)
    F.embedding(idx, w, sparse=True).mul(scale).sum().backward()


def test_sparse_plus_sparse_concatenates(device):
    w = _leaf(device)
    _lookup(w, [1, 2], device)
    _lookup(w, [2, 5], device, scale=3.0)
    grad = w.grad
    assert grad.is_sparse and not grad.is_coalesced()
    assert grad._indices().cpu().tolist() == [[1, 2, 2, 5]]
    np.testing.assert_array_equal(grad._values().cpu().numpy()[:, 0], [1.0, 1.0, 3.0, 3.0])


def test_two_lookups_in_one_graph_are_summed_sparse(device):
    w = _leaf(device)
    idx = mt.tensor([1, 4], device=device)
    (F.embedding(idx, w, sparse=True).sum() +
     F.embedding(idx + 1, w, sparse=True).mul(2.0).sum()).backward()
    assert w.grad.is_sparse and sorted(w.grad._indices().cpu().tolist()[0]) == [1, 2, 4, 5]
    expected = np.zeros((7, 3))
    expected[[1, 4]] += 1.0
    expected[[2, 5]] += 2.0
    np.testing.assert_array_equal(w.grad.to_dense().cpu().numpy(), expected)


@pytest.mark.parametrize("sparse_first", [True, False])
def test_sparse_and_dense_accumulate_to_dense(device, sparse_first):
    w = _leaf(device)
    steps = [lambda: _lookup(w, [1, 1], device), lambda: (w * 3.0).sum().backward()]
    for step in (steps if sparse_first else steps[::-1]):
        step()
    expected = np.full((7, 3), 3.0)
    expected[1] += 2.0
    assert not w.grad.is_sparse
    np.testing.assert_array_equal(w.grad.cpu().numpy(), expected)


def test_sparse_and_dense_in_one_graph_sum_to_dense(device):
    w = _leaf(device)
    (F.embedding(mt.tensor([0, 0], device=device), w, sparse=True).sum() + w.sum()).backward()
    expected = np.ones((7, 3))
    expected[0] += 2.0
    assert not w.grad.is_sparse
    np.testing.assert_array_equal(w.grad.cpu().numpy(), expected)


def test_hooks_see_the_sparse_gradient(device):
    w = _leaf(device)
    seen, after = [], []
    w.register_hook(lambda g: seen.append((g.is_sparse, g._nnz())) or g * 2.0)
    w.register_post_accumulate_grad_hook(lambda t: after.append(t.grad.is_sparse))
    _lookup(w, [3, 3, 0], device)
    assert seen == [(True, 3)] and after == [True]
    np.testing.assert_array_equal(w.grad._values().cpu().numpy(), np.full((3, 3), 2.0))


def test_autograd_grad_returns_sparse(device):
    w = _leaf(device)
    out = F.embedding(mt.tensor([2, 0], device=device), w, sparse=True).sum()
    grad, = mt.autograd.grad(out, w)
    assert grad.is_sparse and grad._indices().cpu().tolist() == [[2, 0]]
    assert w.grad is None


def test_zero_grad_on_sparse_grads(device):
    emb = mt.nn.Embedding(7, 3, sparse=True, device=device)
    opt = mt.optim.SGD(emb.parameters(), lr=0.1)
    emb(mt.tensor([1, 2], device=device)).sum().backward()
    opt.zero_grad()
    assert emb.weight.grad is None
    emb(mt.tensor([1, 2], device=device)).sum().backward()
    kept = emb.weight.grad
    opt.zero_grad(set_to_none=False)
    assert emb.weight.grad is kept and kept.is_sparse and kept._nnz() == 0
    assert kept.shape == (7, 3)
    emb(mt.tensor([4], device=device)).sum().backward()
    assert emb.weight.grad._indices().cpu().tolist() == [[4]]
    emb.zero_grad(set_to_none=False)
    assert emb.weight.grad._nnz() == 0
    emb.zero_grad()
    assert emb.weight.grad is None


# ---- optimizers ------------------------------------------------------------------------------
STEPS = [[1, 2, 1], [3, 1], [0, 0, 5, 2], [], [6, 1, 1]]


def _trajectory(lib, optimizer, kwargs, device=None, dtype="float64"):
    """The weight after one optimizer step per index list of STEPS (loss: sum of squares)."""
    kw = {} if lib is not mt else {"device": device}
    w = lib.tensor(WEIGHT, dtype=getattr(lib, dtype), requires_grad=True, **kw)
    opt = getattr(lib.optim, optimizer)([w], **kwargs)
    functional = F if lib is mt else lib.nn.functional
    for indices in STEPS:
        opt.zero_grad()
        idx = lib.tensor(indices, dtype=lib.int64, **kw)
        functional.embedding(idx, w, sparse=True).pow(2).sum().backward()
        opt.step()
    return w.detach().cpu().numpy() if lib is mt else w.detach().numpy()


OPTIMIZERS = [
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.1, "momentum": 0.9}),
    ("SGD", {"lr": 0.1, "momentum": 0.5, "dampening": 0.3, "foreach": False}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True, "maximize": True}),
    ("Adagrad", {"lr": 0.1}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.1, "initial_accumulator_value": 0.2, "maximize": True}),
    ("SparseAdam", {"lr": 0.1}),
    ("SparseAdam", {"lr": 0.05, "betas": (0.8, 0.9), "eps": 1e-3, "maximize": True}),
]


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("optimizer,kwargs", OPTIMIZERS)
def test_sparse_optimizers_match_torch(device, optimizer, kwargs):
    torch = _torch()
    ours = _trajectory(mt, optimizer, kwargs, device)
    theirs = _trajectory(torch, optimizer, kwargs)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-14)


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("optimizer,kwargs", OPTIMIZERS[::2])
def test_sparse_optimizers_match_torch_float32(optimizer, kwargs):
    torch = _torch()
    ours = _trajectory(mt, optimizer, kwargs, "cpu", "float32")
    theirs = _trajectory(torch, optimizer, kwargs, dtype="float32")
    np.testing.assert_allclose(ours, theirs, rtol=2e-6, atol=1e-7)


def test_sparse_adam_one_step_pinned(device):
    """Adam's first step on the named rows only: param -= lr * g / (|g| + eps / sqrt(1 -
    beta2)) per element (torch adds eps before the bias correction), other rows untouched."""
    w = _leaf(device)
    opt = mt.optim.SparseAdam([w], lr=0.1)
    _lookup(w, [2, 2, 4], device, scale=0.5)    # rows 2 (gradient 1.0) and 4 (0.5)
    opt.step()
    expected = WEIGHT.copy()
    eps = 1e-8 / np.sqrt(1 - 0.999)
    expected[2] -= 0.1 * 1.0 / (1.0 + eps)
    expected[4] -= 0.1 * 0.5 / (0.5 + eps)
    np.testing.assert_allclose(w.detach().cpu().numpy(), expected, rtol=1e-12)
    state = opt.state[w]
    assert state["step"] == 1
    exp_avg = np.zeros((7, 3))
    exp_avg[2], exp_avg[4] = 0.1, 0.05
    np.testing.assert_allclose(state["exp_avg"].cpu().numpy(), exp_avg, rtol=1e-12)


def test_sgd_sparse_momentum_pinned(device):
    w = _leaf(device)
    opt = mt.optim.SGD([w], lr=0.5, momentum=0.9)
    for _ in range(2):
        opt.zero_grad()
        _lookup(w, [3], device)
        opt.step()
    buf = opt.state[w]["momentum_buffer"]
    assert buf.is_sparse and buf.coalesce().indices().cpu().tolist() == [[3]]
    np.testing.assert_allclose(buf.to_dense().cpu().numpy()[3], [1.9] * 3)     # 0.9·g + g
    expected = WEIGHT.copy()
    expected[3] -= 0.5 * 1.0 + 0.5 * 1.9
    np.testing.assert_allclose(w.detach().cpu().numpy(), expected, rtol=1e-12)


def test_adagrad_sparse_pinned(device):
    w = _leaf(device)
    opt = mt.optim.Adagrad([w], lr=0.1)
    _lookup(w, [5, 5], device)                  # gradient 2 on row 5
    opt.step()
    expected = WEIGHT.copy()
    expected[5] -= 0.1 * 2.0 / (2.0 + 1e-10)
    np.testing.assert_allclose(w.detach().cpu().numpy(), expected, rtol=1e-12)
    sums = np.zeros((7, 3))
    sums[5] = 4.0
    np.testing.assert_array_equal(opt.state[w]["sum"].cpu().numpy(), sums)


@pytest.mark.parametrize("name,message", [
    ("Adam", "Adam does not support sparse gradients, please consider SparseAdam instead"),
    ("AdamW", "Adam does not support sparse gradients, please consider SparseAdam instead"),
    ("RMSprop", "RMSprop does not support sparse gradients"),
    ("Adadelta", "Adadelta does not support sparse gradients"),
    ("Adamax", "Adamax does not support sparse gradients"),
    ("NAdam", "NAdam does not support sparse gradients"),
    ("RAdam", "RAdam does not support sparse gradients"),
    ("ASGD", "ASGD does not support sparse gradients"),
    ("Rprop", "Rprop does not support sparse gradients"),
])
def test_dense_only_optimizers_refuse_sparse_grads(device, name, message):
    w = _leaf(device)
    opt = getattr(mt.optim, name)([w])
    _lookup(w, [1], device)
    with pytest.raises(RuntimeError, match=f"^{message}$"):
        opt.step()
    np.testing.assert_array_equal(w.detach().cpu().numpy(), WEIGHT)


def test_sparse_rule_errors(device):
    w = _leaf(device)
    _lookup(w, [1], device)
    with pytest.raises(RuntimeError, match=r"add\(sparse, dense\) is not supported. Use "
                                           r"add\(dense, sparse\) instead."):
        mt.optim.SGD([w], lr=0.1, weight_decay=0.1).step()
    with pytest.raises(RuntimeError, match="weight_decay option is not compatible with sparse "
                                           "gradients"):
        mt.optim.Adagrad([w], lr=0.1, weight_decay=0.1).step()
    dense = _leaf(device)
    (dense * 2).sum().backward()
    with pytest.raises(RuntimeError, match="SparseAdam does not support dense gradients, please "
                                           "consider Adam instead"):
        mt.optim.SparseAdam([dense]).step()


@pytest.mark.parametrize("kwargs,message", [
    ({"lr": 0.0}, "Invalid learning rate: 0.0"),
    ({"lr": -1.0}, "Invalid learning rate: -1.0"),
    ({"eps": 0.0}, "Invalid epsilon value: 0.0"),
    ({"betas": (1.0, 0.9)}, "Invalid beta parameter at index 0: 1.0"),
    ({"betas": (0.9, -0.1)}, r"Invalid beta parameter at index 1: -0.1"),
])
def test_sparse_adam_argument_checks(kwargs, message):
    with pytest.raises(ValueError, match=f"^{message}$"):
        mt.optim.SparseAdam([_leaf("cpu")], **kwargs)


def test_sparse_adam_refuses_sparse_params():
    sparse = mt.sparse_coo_tensor([[0, 1]], [1.0, 2.0], (3,), requires_grad=True)
    with pytest.raises(ValueError, match=r"Sparse params at indices \[\[1, 0\]\]: SparseAdam "
                                         "requires dense parameter tensors"):
        mt.optim.SparseAdam([{"params": [_leaf("cpu")]}, {"params": [sparse]}])


def test_sparse_adam_skips_empty_gradient_but_counts_the_step():
    w = _leaf("cpu")
    opt = mt.optim.SparseAdam([w])
    _lookup(w, [], "cpu")
    opt.step()
    assert opt.state[w]["step"] == 1
    np.testing.assert_array_equal(w.detach().numpy(), WEIGHT)


def test_lbfgs_reads_a_sparse_gradient_densely():
    w = mt.tensor(WEIGHT, requires_grad=True)
    opt = mt.optim.LBFGS([w], lr=0.5, max_iter=3)

    def closure():
        opt.zero_grad()
        loss = F.embedding(mt.tensor([1, 3]), w, sparse=True).pow(2).sum()
        loss.backward()
        return loss
    opt.step(closure)
    assert np.abs(w.detach().numpy()[[1, 3]]).max() < np.abs(WEIGHT[[1, 3]]).max()
    np.testing.assert_array_equal(w.detach().numpy()[[0, 2, 4, 5, 6]], WEIGHT[[0, 2, 4, 5, 6]])


def test_clipping_sparse_grads_is_refused_as_in_torch(device):
    w = _leaf(device)
    _lookup(w, [1, 2], device)
    before = w.grad._values().cpu().numpy().copy()
    with pytest.raises(NotImplementedError, match="Could not run 'aten::linalg_vector_norm' "
                                                  "with arguments from the 'Sparse"):
        mt.nn.utils.clip_grad_norm_([w], 1.0)
    with pytest.raises(NotImplementedError, match="Could not run 'aten::clamp_'"):
        mt.nn.utils.clip_grad_value_([w], 0.1)
    np.testing.assert_array_equal(w.grad._values().cpu().numpy(), before)


# ---- a word2vec-like training loop -----------------------------------------------------------
def _skipgram_losses(lib, optimizer, kwargs, steps=20, device=None):
    """Skip-gram with negative sampling: center and context embeddings (sparse gradients), the
    logistic loss of their dot products; the losses of `steps` optimizer steps."""
    rng = np.random.RandomState(3)
    vocab, dim, batch = 30, 8, 16
    centers_w = rng.randn(vocab, dim) * 0.1
    contexts_w = rng.randn(vocab, dim) * 0.1
    # a learnable corpus: word w's true context is w + 1, three random words are negatives
    batches = []
    for _ in range(steps):
        words = rng.randint(0, vocab, batch)
        contexts = np.concatenate([((words + 1) % vocab)[:, None],
                                   rng.randint(0, vocab, (batch, 3))], axis=1)
        batches.append((words, contexts, np.tile([1.0, 0.0, 0.0, 0.0], (batch, 1))))
    kw = {} if lib is not mt else {"device": device}
    nn = lib.nn
    center = nn.Embedding(vocab, dim, sparse=True).to(dtype=lib.float64, **kw)
    context = nn.Embedding(vocab, dim, sparse=True).to(dtype=lib.float64, **kw)
    with lib.no_grad():
        center.weight.copy_(lib.tensor(centers_w, **kw))
        context.weight.copy_(lib.tensor(contexts_w, **kw))
    opt = getattr(lib.optim, optimizer)(list(center.parameters()) +
                                        list(context.parameters()), **kwargs)
    losses = []
    for c, ctx, label in batches:
        opt.zero_grad()
        scores = (center(lib.tensor(c, **kw)).unsqueeze(1) *
                  context(lib.tensor(ctx, **kw))).sum(-1)
        loss = nn.functional.binary_cross_entropy_with_logits(scores, lib.tensor(label, **kw))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("optimizer,kwargs", [("SparseAdam", {"lr": 0.05}),
                                              ("SGD", {"lr": 10.0}),
                                              ("SGD", {"lr": 1.0, "momentum": 0.9})])
def test_word2vec_loop_matches_torch(device, optimizer, kwargs):
    torch = _torch()
    ours = _skipgram_losses(mt, optimizer, kwargs, device=device)
    theirs = _skipgram_losses(torch, optimizer, kwargs)
    np.testing.assert_allclose(ours, theirs, rtol=1e-10)
    assert ours[-1] < ours[0]       # it trains
