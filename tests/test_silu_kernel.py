"""SiLU as one kernel each way (UnaryOp.SILU, BinaryOp.SILU_BACKWARD, Silu / SiluBackward in
functions/activation.py) against its composed formula x·σ(x): values and gradients in float64
to 1e-12 (contiguous, strided, 0-d, empty), gradcheck and gradgradcheck, special values, the
in-place form, and torch in float32."""
import numpy as np
import pytest

import minitorch as mt
import minitorch.nn as nn
import minitorch.nn.functional as F


def _composed(x):
    return x * x.sigmoid()


@pytest.mark.parametrize("shape", [(7, 5), (), (0, 3)])
def test_values_and_gradients_match_the_composed_formula(device, shape):
    rng = np.random.default_rng(0)
    base = mt.tensor(rng.normal(size=shape) * 6, dtype=mt.float64, device=device,
                     requires_grad=True)
    for x in (base, base.mT if base.ndim == 2 else base):       # strided view too
        g = mt.tensor(rng.normal(size=x.shape), dtype=mt.float64, device=device)
        fused, composed = F.silu(x), _composed(x)
        np.testing.assert_allclose(fused.detach().cpu().numpy(),
                                   composed.detach().cpu().numpy(), rtol=1e-12, atol=1e-14)
        (gf,) = mt.autograd.grad(fused, [base], g)
        (gc,) = mt.autograd.grad(composed, [base], g)
        np.testing.assert_allclose(gf.cpu().numpy(), gc.cpu().numpy(), rtol=1e-12, atol=1e-14)


def test_gradcheck_and_gradgradcheck(device):
    x = mt.tensor([-6.0, -0.7, 0.0, 0.4, 3.5], dtype=mt.float64, device=device,
                  requires_grad=True)
    assert mt.autograd.gradcheck(F.silu, (x,))
    assert mt.autograd.gradgradcheck(F.silu, (x,))


def test_special_values(device):
    x = mt.tensor([float("nan"), float("inf"), float("-inf"), -0.0, 0.0, -200.0, 50.0],
                  device=device)
    out = F.silu(x).cpu().numpy()
    assert np.isnan(out[0]) and out[1] == np.inf and np.isnan(out[2])   # -inf / inf, as torch
    assert np.signbit(out[3]) and not np.signbit(out[4])
    assert out[5] == 0 and np.signbit(out[5]) and out[6] == 50.0


def test_in_place_and_module(device):
    x = mt.tensor([-2.0, 0.5, 3.0], device=device)
    want = _composed(x)
    y = x.clone().requires_grad_()
    out = nn.SiLU(inplace=True)(y * 1.0)
    np.testing.assert_allclose(out.detach().cpu().numpy(), want.cpu().numpy(), rtol=1e-6)
    out.sum().backward()
    s = x.sigmoid()
    np.testing.assert_allclose(y.grad.cpu().numpy(), (s * (1 + x * (1 - s))).cpu().numpy(),
                               rtol=1e-6)


def test_float32_matches_torch():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(1).normal(size=2000).astype(np.float32) * 8
    ours, theirs = mt.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    np.testing.assert_allclose(F.silu(ours).detach().numpy(),
                               torch.nn.functional.silu(theirs).detach().numpy(),
                               rtol=2e-6, atol=1e-7)
    F.silu(ours).sum().backward()
    torch.nn.functional.silu(theirs).sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=2e-6, atol=1e-6)
    assert F.silu(ours).grad_fn.name() == torch.nn.functional.silu(theirs).grad_fn.name()
