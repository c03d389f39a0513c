"""vmap's batched path (minitorch/_vmap): results equal to the per-index mapping and to
torch.func, which path ran, the fallback for ops without a rule, and the transforms
(grad, vjp, jacrev, hessian) running batched end to end."""
import copy
import sys

import numpy as np
import pytest

import minitorch as mt
import minitorch.func as mf
import minitorch.nn.functional as F
from minitorch._pytree import leaves

VMAP = sys.modules["minitorch.vmap"]


def run_both(fn, *args, expect="batched", tol=1e-12, **options):
    """fn vmapped on the batched path (asserting which path it took) and on the mapping;
    the two must agree. Returns the batched result."""
    before = dict(VMAP.CALLS)
    batched = mf.vmap(fn, **options)(*args)
    took = {k: VMAP.CALLS[k] - before[k] for k in before}
    if expect == "batched":
        assert took["mapped"] == 0 and took["batched"] >= 1, took
    else:
        assert took["mapped"] >= 1, took
    VMAP.BATCHED[0] = False
    try:
        mapped = mf.vmap(fn, **options)(*args)
    finally:
        VMAP.BATCHED[0] = True
    for a, b in zip(leaves(batched), leaves(mapped), strict=True):
        assert type(a) is mt.Tensor and a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_allclose(a.detach().cpu().numpy(), b.detach().cpu().numpy(),
                                   rtol=tol, atol=tol)
    return batched


def t64(rng, *shape, device="cpu"):
    return mt.tensor(rng.standard_normal(shape), device=device)


# ---- elementwise and broadcasting ------------------------------------------------------------
def test_elementwise_with_broadcasting_never_pairs_the_batch_dim(device, rng):
    x, y, s = t64(rng, 4, 3, device=device), t64(rng, 2, 3, device=device), \
        t64(rng, 4, device=device)
    run_both(lambda a, b: (a * b).exp() + a.sin() / (1 + b * b), x, y, in_dims=(0, None))
    # a batched 0-d example against a batched (3,) example, and a batched (3,) vs (2, 3)
    run_both(lambda a, b: a - b, s, x)
    run_both(lambda a, b: a + b, x, t64(rng, 4, 2, 3, device=device))
    run_both(lambda a, b: mt.tensor(2.0, dtype=mt.float64) ** a + b.abs().sqrt(), x, x,
             in_dims=(0, 0))


@pytest.mark.parametrize("in_dims,out_dims", [((1, None), 0), ((-1, 0), 1), ((0, 1), -1)])
def test_in_dims_and_out_dims(rng, in_dims, out_dims):
    x = t64(rng, 3, 3, 3)
    run_both(lambda a, b: (a * b).relu() - a.tanh(), x, t64(rng, 3, 3),
             in_dims=in_dims, out_dims=out_dims)


def test_comparisons_where_and_clamp(rng):
    x, y = t64(rng, 5, 4), t64(rng, 5, 4)
    run_both(lambda a, b: a.where(a > b, b).clamp(-0.5, 0.5) + (a >= 0).double(), x, y)
    run_both(lambda a, b: a.maximum(b) * a.sigmoid(), x, y)


# ---- reductions ----------------------------------------------------------------------------------
@pytest.mark.parametrize("op", [
    lambda a: a.sum(), lambda a: a.sum(0), lambda a: a.mean(keepdim=True, dim=None),
    lambda a: a.prod(1), lambda a: a.std(dim=(0, 1)), lambda a: a.all(), lambda a: a.any(-1),
    lambda a: a.sum((0, -1), keepdim=True),
    lambda a: a.mean(-1), lambda a: a.max(), lambda a: a.max(1).values,
    lambda a: a.max(1)[1], lambda a: a.amax(0), lambda a: a.argmax(),
    lambda a: a.argmax(-1, keepdim=True), lambda a: a.min(0).values, lambda a: a.logsumexp(1),
    lambda a: a.softmax(-1), lambda a: a.log_softmax(0), lambda a: F.softmax(a, dim=1),
    lambda a: F.log_softmax(a, dim=-1), lambda a: a.cumsum(1), lambda a: a.var(1)])
def test_reductions_over_logical_dims(rng, op):
    run_both(op, t64(rng, 4, 3, 5))


def test_reductions_of_0d_examples(rng):
    x = t64(rng, 6)
    run_both(lambda a: a.sum() + a.mean() + a.max() + a.sum(0) + a.squeeze() + a.squeeze(0),
             x)
    run_both(lambda a: a.softmax(0) + a.cumsum(-1) + a.unsqueeze(0).sum(0, keepdim=True), x)


# ---- views and indexing --------------------------------------------------------------------------
@pytest.mark.parametrize("op", [
    lambda a: a.reshape(-1), lambda a: a.view(3, 2, 2), lambda a: a.transpose(0, 1),
    lambda a: a.permute(2, 0, 1), lambda a: a.unsqueeze(-1), lambda a: a.unsqueeze(0),
    lambda a: a.unsqueeze(1).squeeze(1), lambda a: a[:, :1].squeeze(), lambda a: a.select(1, 0),
    lambda a: a[1], lambda a: a[..., 1:3], lambda a: a[None, 0, ::2], lambda a: a.flatten(1),
    lambda a: a.T, lambda a: a.mT, lambda a: a.movedim(0, -1), lambda a: a.expand(2, 3, 2, 2),
    lambda a: a.flip(0), lambda a: a.narrow(2, 0, 1), lambda a: a.unbind(1)[0],
    lambda a: a.chunk(2, 2)[1], lambda a: a.split(1, 0)[2], lambda a: a.repeat(2, 1, 1),
    lambda a: a.contiguous().clone().detach()])
def test_views(rng, op):
    run_both(op, t64(rng, 5, 3, 2, 2))


def test_shape_queries_see_one_example(rng):
    seen = []

    def f(a):
        seen.append((tuple(a.shape), a.ndim, a.size(-1), a.numel(), len(a), a.dim()))
        return a.reshape(a.shape[0], -1)
    run_both(f, t64(rng, 3, 4, 5), in_dims=1)
    assert seen[0] == ((3, 5), 2, 5, 15, 3, 2)


def test_index_errors_name_the_example(rng):
    with pytest.raises(IndexError, match="Dimension out of range"):
        mf.vmap(lambda a: a.sum(2))(t64(rng, 3, 4))


# ---- products ------------------------------------------------------------------------------------
@pytest.mark.parametrize("shapes,in_dims", [
    (((4, 3), (4, 3)), (0, 0)), (((4, 2, 3), (3, 5)), (0, None)), (((2, 3), (4, 3, 5)), (None, 0)),
    (((4, 2, 3), (4, 3)), (0, 0)), (((4, 3), (4, 3, 2)), (0, 0)),
    (((4, 6, 2, 3), (4, 3, 5)), (0, 0)), (((4, 2, 3), (2, 3, 5)), (0, None)),
    (((3, 4), (3,)), (1, None))])
def test_matmul_cases(rng, shapes, in_dims):
    a, b = (t64(rng, *s) for s in shapes)
    run_both(lambda x, y: x @ y, a, b, in_dims=in_dims)
    run_both(mt.matmul, a, b, in_dims=in_dims)


def test_mm_mv_dot_and_linear(rng):
    a, v, w = t64(rng, 4, 2, 3), t64(rng, 4, 3), t64(rng, 5, 3)
    run_both(lambda x, y: x.mm(y.T), a, w, in_dims=(0, None))
    run_both(lambda x, y: x.mv(y), a, v)
    run_both(lambda x, y: x.dot(y), v, v)
    run_both(lambda x, m, b: F.linear(x, m, b), v, w, t64(rng, 5), in_dims=(0, None, None))
    run_both(lambda x, m, b: F.linear(x, m, b), v, t64(rng, 4, 5, 3), t64(rng, 4, 5))
    run_both(lambda x, m: F.linear(x, m), a, t64(rng, 4, 5, 3))


# ---- losses --------------------------------------------------------------------------------------
def test_cross_entropy_nll_and_mse_reduce_each_example(rng):
    scores = t64(rng, 6, 3, 5)
    targets = mt.tensor(rng.integers(0, 5, (6, 3)))
    targets[1, 2] = -100
    weight = mt.tensor(rng.random(5) + 0.5)
    for reduction in ("mean", "sum", "none"):
        run_both(lambda x, t: F.cross_entropy(x, t, reduction=reduction), scores, targets)
        run_both(lambda x, t: F.cross_entropy(x, t, weight=weight, reduction=reduction),
                 scores, targets)
        run_both(lambda x, t: F.nll_loss(x.log_softmax(-1), t, reduction=reduction), scores,
                 targets)
        run_both(lambda x, y: F.mse_loss(x, y, reduction=reduction), scores, t64(rng, 6, 3, 5))
    run_both(lambda x, t: F.cross_entropy(x, t, label_smoothing=0.1), scores[:, 0],
             targets[:, 0])


# ---- convolution and models ----------------------------------------------------------------------
def test_conv2d_folds_examples_into_n_and_batched_weights_into_groups(rng):
    x, w, b = t64(rng, 3, 2, 2, 6, 6), t64(rng, 4, 2, 3, 3), t64(rng, 4)
    run_both(lambda a: F.conv2d(a, w, b, padding=1), x)
    run_both(lambda a: F.conv2d(a, w, stride=2), x[:, 0])             # unbatched examples
    ws, bs = t64(rng, 3, 4, 2, 3, 3), t64(rng, 3, 4)
    run_both(lambda a, m, c: F.conv2d(a, m, c), x, ws, bs)
    run_both(lambda a, m: F.conv2d(a, m, groups=2), x[0], t64(rng, 3, 4, 1, 3, 3),
             in_dims=(None, 0))


def models():
    mt.manual_seed(0)
    mlp = mt.nn.Sequential(mt.nn.Linear(6, 8), mt.nn.ReLU(), mt.nn.Linear(8, 3)).double()
    cnn = mt.nn.Sequential(mt.nn.Conv2d(1, 4, 3), mt.nn.ReLU(), mt.nn.Flatten(),
                           mt.nn.Linear(4 * 4 * 4, 3)).double()
    return mlp, cnn


@pytest.mark.parametrize("which", [0, 1])
def test_functional_call_of_models(rng, which):
    model = models()[which]
    data = t64(rng, 5, 6) if which == 0 else t64(rng, 5, 1, 6, 6)
    params = dict(model.named_parameters())
    run_both(lambda x: mf.functional_call(model, params, (x.unsqueeze(0),)), data)


def test_model_ensembling(device, rng):
    mt.manual_seed(1)
    ensemble = [mt.nn.Sequential(mt.nn.Linear(6, 8), mt.nn.ReLU(), mt.nn.Linear(8, 3)).to(device)
                for _ in range(4)]
    params, buffers = mf.stack_module_state(ensemble)
    base = copy.deepcopy(ensemble[0]).to("meta")
    x = mt.tensor(rng.standard_normal((7, 6)), dtype=mt.float32, device=device)
    out = run_both(lambda p, b, d: mf.functional_call(base, (p, b), (d,)), params, buffers, x,
                   in_dims=(0, 0, None), tol=1e-5)
    for k, model in enumerate(ensemble):
        np.testing.assert_allclose(out[k].detach().cpu().numpy(),
                                   model(x).detach().cpu().numpy(), rtol=1e-5, atol=1e-6)


# ---- transforms ----------------------------------------------------------------------------------
def loss_of(model):
    def compute_loss(params, buffers, sample, target):
        predictions = mf.functional_call(model, (params, buffers), (sample.unsqueeze(0),))
        return F.cross_entropy(predictions, target.unsqueeze(0))
    return compute_loss


@pytest.mark.parametrize("which", [0, 1])
def test_per_sample_gradients_run_batched_and_equal_the_loop(rng, which):
    model = models()[which]
    data = t64(rng, 6, 6) if which == 0 else t64(rng, 6, 1, 6, 6)
    targets = mt.tensor(rng.integers(0, 3, 6))
    params = {k: v.detach() for k, v in model.named_parameters()}
    buffers = {k: v.detach() for k, v in model.named_buffers()}
    grads = run_both(mf.grad(loss_of(model)), params, buffers, data, targets,
                     in_dims=(None, None, 0, 0))
    for i in range(6):
        one = mf.grad(loss_of(model))(params, buffers, data[i], targets[i])
        for key in params:
            np.testing.assert_allclose(grads[key][i].numpy(), one[key].numpy(), rtol=1e-10)


class TutorialCNN(mt.nn.Module):
    """torch's "Per-sample-gradients" tutorial model (smaller input)."""

    def __init__(self):
        super().__init__()
        self.conv1 = mt.nn.Conv2d(1, 4, 3, 1)
        self.conv2 = mt.nn.Conv2d(4, 8, 3, 1)
        self.fc1 = mt.nn.Linear(8 * 3 * 3, 16)
        self.fc2 = mt.nn.Linear(16, 10)

    def forward(self, x):
        x = F.relu(self.conv2(F.relu(self.conv1(x))))
        x = mt.flatten(F.max_pool2d(x, 2), 1)
        return F.log_softmax(self.fc2(F.gelu(self.fc1(x))), dim=1)


def test_per_sample_gradients_tutorial_runs_batched_end_to_end(rng):
    mt.manual_seed(0)
    model = TutorialCNN()
    data = mt.tensor(rng.standard_normal((5, 1, 10, 10)), dtype=mt.float32)
    targets = mt.tensor(rng.integers(0, 10, 5))
    params = {k: v.detach() for k, v in model.named_parameters()}
    buffers = {k: v.detach() for k, v in model.named_buffers()}

    def compute_loss(params, buffers, sample, target):
        predictions = mf.functional_call(model, (params, buffers), (sample.unsqueeze(0),))
        return F.nll_loss(predictions, target.unsqueeze(0))
    grads = run_both(mf.grad(compute_loss), params, buffers, data, targets,
                     in_dims=(None, None, 0, 0), tol=1e-5)
    for i in range(5):
        one = mf.grad(compute_loss)(params, buffers, data[i], targets[i])
        for key in params:
            np.testing.assert_allclose(grads[key][i].numpy(), one[key].numpy(), rtol=1e-4,
                                       atol=1e-6)


def test_pooling_and_activations(rng):
    x = t64(rng, 3, 2, 2, 6, 6)
    run_both(lambda a: F.max_pool2d(a, 2) + F.avg_pool2d(a, 2, stride=2), x)
    run_both(lambda a: F.max_pool2d(a, 3, stride=1, padding=1, return_indices=True)[1], x[:, 0])
    run_both(lambda a: F.gelu(a) + F.gelu(a, approximate="tanh") + F.relu(a) + F.tanh(a) +
             F.sigmoid(a), x)


def test_vmap_of_grad_and_value_vjp_and_jacrev(rng):
    x, y = t64(rng, 4, 3), t64(rng, 4, 3)

    def f(a, b):
        return (a.sin() * b).sum() + (a * a).mean()
    run_both(mf.grad(f, argnums=(0, 1)), x, y)
    run_both(mf.grad_and_value(f), x, y, in_dims=(0, None))
    run_both(lambda a, ct: mf.vjp(lambda z: z.exp() * z, a)[1](ct), x, y)
    run_both(mf.jacrev(lambda a: a.tanh() * a.sum()), x)
    run_both(mf.hessian(lambda a: (a.exp() * a).sum()), x)


def test_nested_vmap_and_pytrees(rng):
    x, y = t64(rng, 3, 4, 5), t64(rng, 4, 5)

    def inner(a, b):
        return {"s": (a * b).sum(-1), "p": (a @ b.T, a.relu())}
    run_both(lambda a, b: mf.vmap(inner, in_dims=(0, None))(a, b), x, y, in_dims=(1, None))
    run_both(mf.vmap(mf.vmap(lambda a: a.sin().sum())), x)


def test_elementwise_function_forms_run_batched(rng):
    """mt.exp(x), mt.add(x, y), mt.abs(x), … reach the batching hook in elementwise's _unary
    / _binary and in _Unary.apply, so they run on the batch as the method forms do; their
    argument checks read the example's dtype from the batched tensor's metadata."""
    x, y, row = t64(rng, 4, 5), t64(rng, 4, 5), t64(rng, 5)
    run_both(lambda a: mt.exp(a) + mt.sigmoid(a) * mt.tanh(a) - mt.log1p(a.abs()), x)
    run_both(lambda a, b: mt.atan2(a, b) + mt.mul(a, 2.0) - mt.add(3, b), x, y)
    run_both(lambda a, b: mt.sub(mt.maximum(a, b), mt.minimum(a, b)) * mt.hypot(a, b), x, y)
    run_both(lambda a: mt.abs(a) + mt.relu(a) - mt.neg(mt.square(a)) + mt.floor(a), x)
    run_both(lambda a: mt.sum(a) + mt.mean(a, 0, keepdim=True) + mt.sum(a > 0, dtype=mt.float64),
             x)
    run_both(lambda a: mt.add(a, row) * mt.div(row, 2), x)          # an unbatched operand
    run_both(lambda a, b: mt.atan2(a, b.unsqueeze(0)), x, y[:, :1], in_dims=(0, 0))
    run_both(mf.vmap(lambda a, b: mt.mul(mt.exp(a), b)), x.view(2, 2, 5), y.view(2, 2, 5))
    ints = mt.tensor(np.arange(20).reshape(4, 5))
    run_both(lambda a: mt.sqrt(a), ints)                            # integers made float
    weights = t64(rng, 5).requires_grad_()
    loss = lambda w, a: mt.exp(mt.mul(a, w)).sum()
    grads = mf.vmap(mf.grad(loss), in_dims=(None, 0))(weights, x)
    expected = mt.stack([mf.grad(loss)(weights, x[i]) for i in range(4)])
    np.testing.assert_allclose(grads.detach().numpy(), expected.detach().numpy(), rtol=1e-12)


def test_function_forms_of_methods_run_batched(device, rng):
    """mt.prod(x, 1), mt.clamp(x, ...), mt.where(c, x, y), mt.norm(x), … are the Tensor
    methods' functions: their batching point reaches the method's rule, so the function form
    runs on the batch as `x.prod(1)` does (reductions shift the logical dims, elementwise ones
    align their operands; 0-d examples reduce over an added size-1 dim)."""
    x, y, s = t64(rng, 4, 3, 5, device=device), t64(rng, 3, 5, device=device), \
        t64(rng, 4, device=device)
    run_both(lambda a: (mt.prod(a, 1), mt.amax(a, 0), mt.amin(a, (0, 1)), mt.logsumexp(a, -1),
                        mt.std(a, 0), mt.var(a, 1, correction=0), mt.nansum(a, 1)), x)
    run_both(lambda a: (mt.max(a, 1).values, mt.min(a, 0)[1], mt.argmax(a, -1), mt.max(a),
                        mt.min(a), mt.argmin(a)), x)
    run_both(lambda a: (mt.softmax(a, -1), mt.log_softmax(a, 0), mt.cumsum(a, 1),
                        mt.cumprod(a, 0)), x)
    run_both(lambda a: (mt.clamp(a, -0.5, 0.5), mt.clamp(a, y, y + 1), mt.clip(a, min=0.1),
                        mt.clamp_min(a, 0.2), mt.clamp_max(a, 0.3)), x)
    run_both(lambda a: (mt.where(a > 0, a, 0.0), mt.where(y > 0, y, a),
                        mt.masked_fill(a, y < 0, 2.0)), x)
    run_both(lambda a: (mt.fmod(a, 0.3), mt.remainder(a, y), mt.fmax(a, y), mt.fmin(y, a),
                        mt.sinc(a), mt.lerp(a, y, 0.25), mt.nan_to_num(a / 0.0),
                        mt.logit(a.sigmoid(), 1e-6)), x)
    run_both(lambda a: (mt.isnan(a), mt.isfinite(a), mt.logical_and(a > 0, y > 0),
                        mt.logical_not(a > 0), mt.all(a > -9, 1), mt.any(a > 0)), x)
    run_both(lambda a: (mt.norm(a), mt.norm(a, 1, dim=(0, 1)),
                        mt.linalg.vector_norm(a, float("inf"), dim=-1, keepdim=True)), x)
    # 0-d examples
    run_both(lambda a: (mt.max(a), mt.norm(a), mt.clamp(a, 0), mt.softmax(a, 0),
                        mt.where(a > 0, a, -a), mt.linalg.vector_norm(a, dim=0, keepdim=True)),
             s)
    # per-example gradients through them
    w = t64(rng, 5, device=device).requires_grad_()
    loss = lambda w, a: mt.logsumexp(mt.clamp(a * w, -1, 1), -1).sum() + mt.norm(a * w)
    grads = mf.vmap(mf.grad(loss), in_dims=(None, 0))(w, x)
    expected = mt.stack([mf.grad(loss)(w, x[i]) for i in range(4)])
    np.testing.assert_allclose(grads.detach().cpu().numpy(), expected.detach().cpu().numpy(),
                               rtol=1e-12)


def test_ops_without_a_rule_fall_back_to_mapping(rng):
    x = t64(rng, 4, 5)
    run_both(lambda a: a.sort(-1).values * 2, x, expect="mapped")
    run_both(lambda a: F.silu(a) + a, x, expect="mapped")
    run_both(lambda a: mt.prod(a), x, expect="mapped")      # every dim: prod takes one dim

    def in_place(a):
        b = a.clone()
        b.add_(1)
        return b
    run_both(in_place, x, expect="mapped")


def test_randomness_flags(rng):
    x = t64(rng, 4, 3)
    with pytest.raises(RuntimeError, match="randomness error mode"):
        mf.vmap(lambda a: a + mt.rand(3, dtype=mt.float64))(x)
    mt.manual_seed(0)
    same = mf.vmap(lambda a: mt.rand(3, dtype=mt.float64) + a * 0, randomness="same")(x)
    assert all(np.array_equal(same[0].numpy(), row.numpy()) for row in same)
    mt.manual_seed(0)
    different = mf.vmap(lambda a: mt.rand(3, dtype=mt.float64) + a * 0,
                        randomness="different")(x)
    assert not np.array_equal(different[0].numpy(), different[1].numpy())


def test_errors_inside_the_function_are_the_examples(rng):
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied"):
        mf.vmap(lambda a: F.linear(a.unsqueeze(0), mt.ones(2, 5, dtype=mt.float64)))(
            t64(rng, 4, 3))
    with pytest.raises(ValueError, match="can not return a BatchedTensor when out_dim is None"):
        mf.vmap(lambda a: a * 2, out_dims=None)(t64(rng, 4, 3))


# ---- against torch.func --------------------------------------------------------------------------
def test_per_sample_gradients_and_jacobians_match_torch_func(rng):
    torch = pytest.importorskip("torch")
    tf = pytest.importorskip("torch.func")
    data, targets = rng.standard_normal((8, 6)), rng.integers(0, 3, 8)
    w1, b1, w2 = rng.standard_normal((5, 6)), rng.standard_normal(5), rng.standard_normal((3, 5))

    def loss(lib, fn):
        def compute(p, x, t):
            h = fn.linear(x.unsqueeze(0), p["w1"], p["b1"]).tanh()
            return fn.cross_entropy(fn.linear(h, p["w2"]), t.unsqueeze(0))
        return compute
    ours = mf.vmap(mf.grad(loss(mt, F)), in_dims=(None, 0, 0))(
        {"w1": mt.tensor(w1), "b1": mt.tensor(b1), "w2": mt.tensor(w2)}, mt.tensor(data),
        mt.tensor(targets))
    theirs = tf.vmap(tf.grad(loss(torch, torch.nn.functional)), in_dims=(None, 0, 0))(
        {"w1": torch.tensor(w1), "b1": torch.tensor(b1), "w2": torch.tensor(w2)},
        torch.tensor(data), torch.tensor(targets))
    for key in ours:
        np.testing.assert_allclose(ours[key].numpy(), theirs[key].numpy(), rtol=1e-10)

    def f(x):
        return (x.sin() * x.exp()).sum() * x.tanh()
    xs = rng.standard_normal((5, 4))
    np.testing.assert_allclose(mf.vmap(mf.jacrev(f))(mt.tensor(xs)).numpy(),
                               tf.vmap(tf.jacrev(f))(torch.tensor(xs)).numpy(), rtol=1e-10)
    np.testing.assert_allclose(
        mf.vmap(mf.hessian(lambda x: f(x).sum()))(mt.tensor(xs)).numpy(),
        tf.vmap(tf.hessian(lambda x: f(x).sum()))(torch.tensor(xs)).numpy(), rtol=1e-9)


def test_transforms_compose_with_an_outer_grad(rng):
    x = t64(rng, 4)

    def outer(a):
        return mf.jacrev(lambda z: z.sin() * z.sum())(a).sum()
    before = VMAP.CALLS["batched"]
    ours = mf.grad(outer)(x)
    assert VMAP.CALLS["batched"] > before
    VMAP.BATCHED[0] = False
    try:
        mapped = mf.grad(outer)(x)
    finally:
        VMAP.BATCHED[0] = True
    np.testing.assert_allclose(ours.numpy(), mapped.numpy(), rtol=1e-12)


@pytest.mark.parametrize("in_dims,out_dims", [((0, None), 0), ((1, 0), 1), ((None, 0), (0, 1)),
                                              ((-2, 0), -1)])
def test_in_and_out_dims_match_torch_func(rng, in_dims, out_dims):
    torch = pytest.importorskip("torch")
    tf = pytest.importorskip("torch.func")
    a, b = rng.standard_normal((3, 3, 4)), rng.standard_normal((3, 4))

    def f(lib):
        return lambda x, y: ((x * y).softmax(-1) @ y.transpose(-1, -2) if y.ndim > 1 else
                             (x * y).softmax(-1), (x + y).sum(-1))
    ours = mf.vmap(f(mt), in_dims=in_dims, out_dims=out_dims, chunk_size=2)(
        mt.tensor(a), mt.tensor(b))
    theirs = tf.vmap(f(torch), in_dims=in_dims, out_dims=out_dims)(
        torch.tensor(a), torch.tensor(b))
    for o, t in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(o.numpy(), t.numpy(), rtol=1e-12)


def test_jacobians_tutorial_matches_torch_func(rng):
    """torch's "Jacobians, Hessians, hvp, vhp, and more" tutorial: predict = tanh(linear)."""
    torch = pytest.importorskip("torch")
    tf = pytest.importorskip("torch.func")
    w, b, x = rng.standard_normal((5, 5)), rng.standard_normal(5), rng.standard_normal((4, 5))

    def predict(lib):
        return lambda weight, bias, v: lib.nn.functional.linear(v, weight, bias).tanh()
    ours_args = (mt.tensor(w), mt.tensor(b), mt.tensor(x))
    theirs_args = (torch.tensor(w), torch.tensor(b), torch.tensor(x))
    cases = [
        (lambda m, f: m.vmap(m.jacrev(f, argnums=2), in_dims=(None, None, 0))),
        (lambda m, f: m.vmap(m.jacfwd(f, argnums=2), in_dims=(None, None, 0))),
        (lambda m, f: m.vmap(m.jacrev(f, argnums=(0, 1)), in_dims=(None, None, 0))),
        (lambda m, f: m.vmap(m.hessian(lambda *a: f(*a).sum(), argnums=2),
                             in_dims=(None, None, 0))),
        (lambda m, f: m.jacrev(f, argnums=0)),
    ]
    for case in cases:
        before = VMAP.CALLS["mapped"]
        ours = case(mf, predict(mt))(*ours_args)
        assert VMAP.CALLS["mapped"] == before
        theirs = case(tf, predict(torch))(*theirs_args)
        for o, t in zip(leaves(ours), leaves(theirs), strict=True):
            np.testing.assert_allclose(o.numpy(), t.numpy(), rtol=1e-10, atol=1e-12)


def test_gradients_flow_through_a_batched_vmap(rng):
    w = t64(rng, 3, 4).requires_grad_()
    x = t64(rng, 5, 4)

    def f(weight):
        return mf.vmap(lambda m, v: (F.linear(v, m).tanh() * v[:3]).softmax(0), in_dims=(None, 0))(
            weight, x)
    before = VMAP.CALLS["batched"]
    assert mt.autograd.gradcheck(f, (w,))
    assert mt.autograd.gradgradcheck(f, (w,))
    assert VMAP.CALLS["batched"] > before


@pytest.mark.parametrize("join", [
    lambda a, b, w: mt.cat([a, b]), lambda a, b, w: mt.cat((a, w), -1),
    lambda a, b, w: mt.concat([a.unsqueeze(0), b.unsqueeze(0)], dim=1),
    lambda a, b, w: mt.stack([a, b]), lambda a, b, w: mt.stack([w, b, a], dim=-1),
    lambda a, b, w: mt.cat([a, b[:2]])], ids=["cat", "cat unbatched", "concat", "stack",
                                             "stack last", "cat unequal"])
def test_cat_and_stack(device, rng, join):
    a, b, w = t64(rng, 4, 3, device=device), t64(rng, 4, 3, device=device), \
        t64(rng, 3, device=device)
    run_both(lambda x, y: join(x, y, w), a, b)
    # and their gradients, through vjp of the batched join
    run_both(lambda x, y: mf.grad(lambda u: (join(u, y, w) ** 2).sum())(x), a, b)


def test_cat_and_stack_refusals_take_the_mapped_path(rng):
    a = t64(rng, 4, 3)
    with pytest.raises(RuntimeError, match="zero-dimensional tensor .at position 0. cannot be "
                                           "concatenated"):
        mf.vmap(lambda x: mt.cat([x[0], x[1]]))(a)
    with pytest.raises(RuntimeError, match=r"stack expects each tensor to be equal size, but got "
                                           r"\[3\] at entry 0 and \[2\] at entry 1"):
        mf.vmap(lambda x: mt.stack([x, x[:2]]))(a)
    run_both(lambda x: mt.cat([x, mt.zeros(0, dtype=x.dtype)]), a, expect="mapped")


@pytest.mark.parametrize("chunk_size", [1, 2, 3, 7, 50])
def test_chunk_size_runs_the_batch_in_slices(device, rng, chunk_size):
    """chunk_size splits the mapped examples into runs of at most chunk_size (each run batched)
    and joins the outputs along their out_dims: the same values as one run; an out_dim None
    output is the first chunk's; randomness='same' gives every chunk the same draws."""
    x, w = t64(rng, 7, 3, 4, device=device), t64(rng, 3, 4, device=device)
    before = dict(VMAP.CALLS)
    f = lambda a, b: (a.sin() * b, a.sum(0), b)        # noqa: E731
    options = dict(in_dims=(0, None), out_dims=(0, 1, None))
    chunked = mf.vmap(f, chunk_size=chunk_size, **options)(x, w)
    whole = mf.vmap(f, **options)(x, w)
    assert VMAP.CALLS["mapped"] == before["mapped"]
    assert VMAP.CALLS["batched"] - before["batched"] == -(-7 // chunk_size) + 1
    for a, b in zip(chunked, whole, strict=True):
        assert a.shape == b.shape
        np.testing.assert_allclose(a.cpu().numpy(), b.cpu().numpy(), rtol=1e-12)
    moved = mf.vmap(lambda a: a.exp(), in_dims=1, out_dims=-1, chunk_size=chunk_size)(x)
    np.testing.assert_allclose(moved.cpu().numpy(), np.moveaxis(x.exp().cpu().numpy(), 1, -1),
                               rtol=1e-12)
    mt.manual_seed(0)
    same = mf.vmap(lambda a: a + mt.rand(4, dtype=mt.float64, device=device),
                   randomness="same", chunk_size=chunk_size)(mt.zeros(7, 4, dtype=mt.float64,
                                                                      device=device))
    np.testing.assert_array_equal(same.cpu().numpy(), np.broadcast_to(same[0].cpu().numpy(),
                                                                       (7, 4)))
    grads = mf.vmap(mf.grad(lambda w, a: (a * w).sin().sum()), in_dims=(None, 0),
                    chunk_size=chunk_size)(w, x)
    expected = mt.stack([mf.grad(lambda w, a: (a * w).sin().sum())(w, x[i]) for i in range(7)])
    np.testing.assert_allclose(grads.cpu().numpy(), expected.cpu().numpy(), rtol=1e-12)


@pytest.mark.parametrize("chunk_size", [1, 2, 5, 100])
def test_jacrev_chunk_size_gives_the_same_jacobian(rng, chunk_size):
    a = t64(rng, 3, 4)
    f = lambda x: (x.sin() @ x.mT, x.sum(0))      # noqa: E731
    whole, chunked = mf.jacrev(f)(a), mf.jacrev(f, chunk_size=chunk_size)(a)
    for w, c in zip(whole, chunked, strict=True):
        assert w.shape == c.shape
        np.testing.assert_allclose(c.numpy(), w.numpy(), rtol=1e-12)
    with pytest.raises(ValueError, match="jacrev: `chunk_size` should be greater than 0."):
        mf.jacrev(f, chunk_size=0)


def test_vmap_of_a_vjp_made_outside_the_vmap(device, rng):
    """torch.func's Jacobian recipe, vmap(vjp_fn)(basis), with the vjp (and its graph) made
    before the vmap: the batched cotangents go through that graph's backward (it returned
    zeros: the cotangents were differentiated against copies of the variables made inside the
    vmap). A model whose backward has an op without a rule maps, with the same values."""
    x = t64(rng, 3, device=device)
    f = lambda a: (a.sin() * a).exp()       # noqa: E731
    _, vjp_fn = mf.vjp(f, x)
    basis = mt.eye(3, dtype=mt.float64, device=device)
    jacobian = run_both(vjp_fn, basis)[0]
    np.testing.assert_allclose(jacobian.cpu().numpy(), mf.jacrev(f)(x).cpu().numpy(),
                               rtol=1e-12)
    cotangents = t64(rng, 4, 3, device=device)
    loop = mt.stack([vjp_fn(cotangents[i])[0] for i in range(4)])
    np.testing.assert_allclose(run_both(vjp_fn, cotangents)[0].cpu().numpy(),
                               loop.cpu().numpy(), rtol=1e-12)
    model = mt.nn.Sequential(mt.nn.Linear(3, 4), mt.nn.Tanh(),
                             mt.nn.Linear(4, 2)).double().to(device)
    _, vjp_fn = mf.vjp(model, x)
    rows = mf.vmap(vjp_fn)(mt.eye(2, dtype=mt.float64, device=device))[0]
    np.testing.assert_allclose(rows.cpu().numpy(), mf.jacrev(model)(x).detach().cpu().numpy(),
                               rtol=1e-12)


def test_named_tuple_outputs_keep_their_type(rng):
    """A function returning torch.return_types (max, sort, topk) vmaps to the same named tuple
    of stacked fields, batched and mapped (rebuilding it failed: namedtuples take fields, not an
    iterable)."""
    x = t64(rng, 4, 3, 5)
    for f, path in ((lambda a: a.max(0), "batched"), (lambda a: mt.max(a, -1, True), "batched"),
                    (lambda a: a.sort(0), "mapped"), (lambda a: mt.topk(a, 2), "mapped")):
        result = run_both(f, x, expect=path)
        assert type(result) is type(f(x[0]))
        assert result.values.shape == (4,) + tuple(f(x[0]).values.shape)
