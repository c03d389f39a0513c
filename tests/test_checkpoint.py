"""mt.utils.checkpoint: recomputed activations give the same values and gradients as the
plain run, in both of torch's variants, with dropout replayed and closures over parameters."""
import warnings

import numpy as np
import pytest

import minitorch as mt
from minitorch import nn
from minitorch.utils.checkpoint import checkpoint, checkpoint_sequential


def block():
    mt.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Dropout(0.3), nn.Linear(8, 3))


def grads_of(model, x, run):
    model.zero_grad()
    x = x.detach().requires_grad_(x.requires_grad)
    mt.manual_seed(7)
    out = run(model, x)
    weights = mt.arange(out.numel(), dtype=out.dtype, device=out.device).reshape(out.shape)
    (out * weights).sum().backward()
    return out.detach(), x.grad, [p.grad.clone() for p in model.parameters()]


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_checkpoint_matches_the_plain_run(device, rng, use_reentrant):
    model = block().to(device).train()
    x = mt.tensor(rng.standard_normal((5, 4)), dtype=mt.float32, device=device,
                  requires_grad=True)
    plain = grads_of(model, x, lambda m, t: m(t))
    checked = grads_of(model, x, lambda m, t: checkpoint(m, t, use_reentrant=use_reentrant))
    np.testing.assert_allclose(checked[0].cpu().numpy(), plain[0].cpu().numpy(), rtol=1e-6)
    np.testing.assert_allclose(checked[1].cpu().numpy(), plain[1].cpu().numpy(), rtol=1e-5)
    for a, b in zip(checked[2], plain[2]):
        np.testing.assert_allclose(a.cpu().numpy(), b.cpu().numpy(), rtol=1e-5, atol=1e-7)


def test_non_reentrant_reaches_parameters_when_the_input_needs_no_grad(rng):
    model = block().eval()
    x = mt.tensor(rng.standard_normal((5, 4)), dtype=mt.float32)
    out = checkpoint(model, x, use_reentrant=False)
    assert out.requires_grad
    out.sum().backward()
    assert all(p.grad is not None for p in model.parameters())
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
        out = checkpoint(model, x, use_reentrant=True)
    assert not out.requires_grad       # torch's reentrant variant: no gradients at all


def test_closure_parameters_multiple_outputs_and_kwargs(rng):
    w = mt.tensor(rng.standard_normal((3, 3)), requires_grad=True)
    x = mt.tensor(rng.standard_normal((2, 3)), requires_grad=True)

    def f(t, scale=1.0):
        h = (t @ w).sin()
        return h * scale, h.sum(), 3

    a, b, c = checkpoint(f, x, scale=2.0, use_reentrant=False)
    assert c == 3
    (a.sum() + b).backward()
    expected_w, expected_x = w.grad.clone(), x.grad.clone()
    w.grad = x.grad = None
    a, b, _ = f(x, 2.0)
    (a.sum() + b).backward()
    np.testing.assert_allclose(expected_w.numpy(), w.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(expected_x.numpy(), x.grad.numpy(), rtol=1e-12)
    with pytest.raises(ValueError, match="Unexpected keyword arguments: scale"):
        checkpoint(f, x, scale=2.0, use_reentrant=True)


def test_double_backward_through_a_checkpoint_is_refused():
    x = mt.tensor([0.3, -0.7], dtype=mt.float64, requires_grad=True)
    y = checkpoint(lambda t: (t ** 3).sum(), x, use_reentrant=False)
    with pytest.raises(RuntimeError, match="create_graph=True"):
        mt.autograd.grad(y, x, create_graph=True)
    (g,) = mt.autograd.grad(checkpoint(lambda t: (t ** 3).sum(), x, use_reentrant=False), x)
    np.testing.assert_allclose(g.numpy(), 3 * x.detach().numpy() ** 2)


def test_no_grad_mode_runs_the_function_plainly_and_warns_without_use_reentrant():
    model = block()
    with mt.no_grad():
        assert not checkpoint(model, mt.ones(2, 4), use_reentrant=False).requires_grad
    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed explicitly"):
        checkpoint(model, mt.ones(2, 4, requires_grad=True))


def test_context_fn_wraps_forward_and_recomputation():
    calls = []

    class Note:
        def __init__(self, name):
            self.name = name

        def __enter__(self):
            calls.append(self.name)

        def __exit__(self, *exc):
            return False

    x = mt.ones(2, requires_grad=True)
    y = checkpoint(lambda t: t * 2, x, use_reentrant=False,
                   context_fn=lambda: (Note("forward"), Note("recompute")))
    y.sum().backward()
    assert calls == ["forward", "recompute"] and x.grad.tolist() == [2.0, 2.0]


def test_checkpoint_sequential_matches_the_sequential(rng):
    mt.manual_seed(0)
    model = nn.Sequential(*[nn.Linear(4, 4) for _ in range(5)])
    x = mt.tensor(rng.standard_normal((3, 4)), dtype=mt.float32, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = checkpoint_sequential(model, 2, x, use_reentrant=False)
    np.testing.assert_allclose(out.detach().numpy(), model(x).detach().numpy(), rtol=1e-6)
    out.sum().backward()
    got = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    model(x).sum().backward()
    for a, p in zip(got, model.parameters()):
        np.testing.assert_allclose(a.numpy(), p.grad.numpy(), rtol=1e-5, atol=1e-7)


# ---- the random state replayed: both of the generator's streams --------------------------------
def _shuffled_dropout(w, x):
    """randperm draws from the Mersenne Twister, dropout from numpy's stream."""
    h = (x @ w).tanh()
    return nn.functional.dropout(h[:, mt.randperm(h.shape[1])], 0.5, training=True) * h


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_a_recomputed_randperm_and_dropout_draw_as_the_first_run(rng, use_reentrant):
    w0 = rng.standard_normal((4, 6))
    x = mt.tensor(rng.standard_normal((3, 4)))
    grads = []
    for run in (_shuffled_dropout,
                lambda w, t: checkpoint(_shuffled_dropout, w, t, use_reentrant=use_reentrant)):
        w = mt.tensor(w0, requires_grad=True)
        mt.manual_seed(3)
        mt.randperm(5)                  # the twister exists before the checkpointed region
        out = run(w, x)
        mt.randperm(7)                  # draws after it, before backward recomputes
        mt.rand(2)
        out.sum().backward()
        grads.append((out.detach().numpy(), w.grad.numpy(), mt.randperm(10).tolist()))
    (plain_out, plain_grad, plain_next), (out, grad, following) = grads
    np.testing.assert_array_equal(out, plain_out)
    np.testing.assert_allclose(grad, plain_grad, rtol=1e-12)
    assert following == plain_next      # the recomputation leaves the streams where they were


def test_get_and_set_rng_state_cover_both_streams_and_the_seed():
    mt.manual_seed(5)
    state = mt.get_rng_state()          # taken before randperm has made its twister
    first = (mt.randperm(8).tolist(), mt.rand(3).tolist())
    mt.manual_seed(9)
    mt.set_rng_state(state)
    assert mt.initial_seed() == 5       # as torch: the state holds the seed
    assert (mt.randperm(8).tolist(), mt.rand(3).tolist()) == first
    state = mt.get_rng_state()          # now with a twister part way through its stream
    second = (mt.randperm(8).tolist(), mt.rand(3).tolist())
    mt.randperm(4)
    mt.set_rng_state(state)
    assert (mt.randperm(8).tolist(), mt.rand(3).tolist()) == second
    generator = mt.Generator().manual_seed(2)
    saved = generator.get_state()
    drawn = mt.randperm(6, generator=generator).tolist()
    generator.manual_seed(4)
    generator.set_state(saved)
    assert generator.initial_seed() == 2
    assert mt.randperm(6, generator=generator).tolist() == drawn


def test_vmap_randomness_sees_the_twister():
    x = mt.zeros(3, 4)
    with pytest.raises(RuntimeError, match="randomness error mode"):
        mt.vmap(lambda row: row + mt.randperm(4))(x)
    same = mt.vmap(lambda row: row + mt.randperm(4), randomness="same")(x)
    assert all(same[i].tolist() == same[0].tolist() for i in range(3))
