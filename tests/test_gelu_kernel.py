"""The exact GELU as one kernel each way (UnaryOp.GELU, BinaryOp.GELU_BACKWARD, Gelu /
GeluBackward in functions/activation.py) against its composed formula x (1 + erf(x/√2)) / 2:
values and gradients in float64 to 1e-12 (contiguous, strided, 0-d, empty), gradcheck and
gradgradcheck, special values, and torch in float32."""
import math

import numpy as np
import pytest

import minitorch as mt
import minitorch.nn.functional as F


def _composed(x):
    return x * 0.5 * ((x * (1.0 / math.sqrt(2.0))).erf() + 1.0)


@pytest.mark.parametrize("shape", [(7, 5), (), (0, 3)])
def test_values_and_gradients_match_the_composed_formula(device, shape):
    rng = np.random.default_rng(0)
    base = mt.tensor(rng.normal(size=shape) * 3, dtype=mt.float64, device=device,
                     requires_grad=True)
    for x in (base, base.mT if base.ndim == 2 else base):       # strided view too
        g = mt.tensor(rng.normal(size=x.shape), dtype=mt.float64, device=device)
        fused, composed = F.gelu(x), _composed(x)
        np.testing.assert_allclose(fused.detach().cpu().numpy(),
                                   composed.detach().cpu().numpy(), rtol=1e-12, atol=1e-14)
        (gf,) = mt.autograd.grad(fused, [base], g)
        (gc,) = mt.autograd.grad(composed, [base], g)
        np.testing.assert_allclose(gf.cpu().numpy(), gc.cpu().numpy(), rtol=1e-12, atol=1e-14)


def test_gradcheck_and_gradgradcheck(device):
    x = mt.tensor([-3.0, -0.7, 0.0, 0.4, 2.5], dtype=mt.float64, device=device,
                  requires_grad=True)
    assert mt.autograd.gradcheck(F.gelu, (x,))
    assert mt.autograd.gradgradcheck(F.gelu, (x,))


def test_special_values(device):
    x = mt.tensor([float("nan"), float("inf"), -0.0, 0.0, 10.0], device=device)
    out = F.gelu(x).cpu().numpy()
    assert np.isnan(out[0]) and out[1] == np.inf and out[4] == 10.0
    assert np.signbit(out[2]) and not np.signbit(out[3])
    assert np.isnan(F.gelu(mt.tensor([float("-inf")], device=device)).item())


def test_float32_matches_torch():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(1).normal(size=2000).astype(np.float32) * 4
    ours, theirs = mt.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    np.testing.assert_allclose(F.gelu(ours).detach().numpy(),
                               torch.nn.functional.gelu(theirs).detach().numpy(),
                               rtol=2e-6, atol=1e-6)
    F.gelu(ours).sum().backward()
    torch.nn.functional.gelu(theirs).sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=2e-6, atol=1e-6)
    assert F.gelu(ours).grad_fn.name() == torch.nn.functional.gelu(theirs).grad_fn.name()
