"""Activations that are one kernel each way (Gelu / Silu and their slope nodes in
functions/activation.py) against their composed formulas — GELU x (1 + erf(x/√2)) / 2, SiLU
x·σ(x): values and gradients in float64 to 1e-12 (contiguous, strided, 0-d, empty), gradcheck
and gradgradcheck, special values, the in-place SiLU, and torch in float32."""
import math

import numpy as np
import pytest

import minitorch as mt
import minitorch.nn as nn
import minitorch.nn.functional as F

COMPOSED = {"gelu": lambda x: x * 0.5 * ((x * (1.0 / math.sqrt(2.0))).erf() + 1.0),
            "silu": lambda x: x * x.sigmoid()}


@pytest.mark.parametrize("name", sorted(COMPOSED))
@pytest.mark.parametrize("shape", [(7, 5), (), (0, 3)])
def test_values_and_gradients_match_the_composed_formula(device, name, shape):
    fn, composed_fn = getattr(F, name), COMPOSED[name]
    rng = np.random.default_rng(0)
    base = mt.tensor(rng.normal(size=shape) * 4, dtype=mt.float64, device=device,
                     requires_grad=True)
    for x in (base, base.mT if base.ndim == 2 else base):       # strided view too
        g = mt.tensor(rng.normal(size=x.shape), dtype=mt.float64, device=device)
        fused, composed = fn(x), composed_fn(x)
        np.testing.assert_allclose(fused.detach().cpu().numpy(),
                                   composed.detach().cpu().numpy(), rtol=1e-12, atol=1e-14)
        (gf,) = mt.autograd.grad(fused, [base], g)
        (gc,) = mt.autograd.grad(composed, [base], g)
        np.testing.assert_allclose(gf.cpu().numpy(), gc.cpu().numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", sorted(COMPOSED))
def test_gradcheck_and_gradgradcheck(device, name):
    x = mt.tensor([-6.0, -0.7, 0.0, 0.4, 3.5], dtype=mt.float64, device=device,
                  requires_grad=True)
    assert mt.autograd.gradcheck(getattr(F, name), (x,))
    assert mt.autograd.gradgradcheck(getattr(F, name), (x,))


def test_gelu_special_values(device):
    x = mt.tensor([float("nan"), float("inf"), -0.0, 0.0, 10.0], device=device)
    out = F.gelu(x).cpu().numpy()
    assert np.isnan(out[0]) and out[1] == np.inf and out[4] == 10.0
    assert np.signbit(out[2]) and not np.signbit(out[3])
    assert np.isnan(F.gelu(mt.tensor([float("-inf")], device=device)).item())


def test_silu_special_values(device):
    x = mt.tensor([float("nan"), float("inf"), float("-inf"), -0.0, 0.0, -200.0, 50.0],
                  device=device)
    out = F.silu(x).cpu().numpy()
    assert np.isnan(out[0]) and out[1] == np.inf and np.isnan(out[2])   # -inf / inf, as torch
    assert np.signbit(out[3]) and not np.signbit(out[4])
    assert out[5] == 0 and np.signbit(out[5]) and out[6] == 50.0


def test_silu_in_place_module(device):
    x = mt.tensor([-2.0, 0.5, 3.0], device=device)
    y = x.clone().requires_grad_()
    out = nn.SiLU(inplace=True)(y * 1.0)
    np.testing.assert_allclose(out.detach().cpu().numpy(), COMPOSED["silu"](x).cpu().numpy(),
                               rtol=1e-6)
    out.sum().backward()
    s = x.sigmoid()
    np.testing.assert_allclose(y.grad.cpu().numpy(), (s * (1 + x * (1 - s))).cpu().numpy(),
                               rtol=1e-6)


@pytest.mark.parametrize("name", sorted(COMPOSED))
def test_float32_matches_torch(name):
    torch = pytest.importorskip("torch")
    ours_fn, theirs_fn = getattr(F, name), getattr(torch.nn.functional, name)
    x = np.random.default_rng(1).normal(size=2000).astype(np.float32) * 6
    ours, theirs = mt.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    np.testing.assert_allclose(ours_fn(ours).detach().numpy(), theirs_fn(theirs).detach().numpy(),
                               rtol=2e-6, atol=1e-6)
    ours_fn(ours).sum().backward()
    theirs_fn(theirs).sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=2e-6, atol=1e-6)
    assert ours_fn(ours).grad_fn.name() == theirs_fn(theirs).grad_fn.name()
