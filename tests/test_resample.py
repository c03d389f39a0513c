"""Linear / bilinear / trilinear interpolate as one kernel each way (functions/resample.py):
against the composed reference (a gather pair and a weighted sum per axis, the path it
replaced), numpy, torch where installed, finite differences, and torch's NaN / inf behaviour."""
import itertools

import numpy as np
import pytest

import minitorch as mt
import minitorch.nn.functional as F
from minitorch.functions.resample import linear_tables

CASES = [((2, 3, 5), {"size": 11, "mode": "linear"}),
         ((2, 3, 9), {"size": 4, "mode": "linear", "align_corners": True}),
         ((2, 3, 5, 7), {"size": (9, 4), "mode": "bilinear"}),
         ((2, 3, 5, 7), {"scale_factor": 1.7, "mode": "bilinear"}),
         ((1, 2, 4, 6), {"scale_factor": (2.0, 0.5), "mode": "bilinear", "align_corners": True}),
         ((1, 2, 4, 5), {"size": (4, 8), "mode": "bilinear"}),                # one axis kept
         ((1, 2, 3, 4, 5), {"size": (5, 6, 2), "mode": "trilinear"}),
         ((1, 1, 3, 4, 2), {"scale_factor": 1.5, "mode": "trilinear",
                            "recompute_scale_factor": True})]


def _reference(x, kwargs):
    """The composed path in float64 numpy: per axis x[i0]·λ0 + x[i1]·λ1 with ATen's tables."""
    spatial = x.ndim - 2
    sizes, scales = kwargs.get("size"), kwargs.get("scale_factor")
    sizes = [sizes] * spatial if isinstance(sizes, int) else sizes
    scales = [scales] * spatial if not isinstance(scales, (tuple, list)) else scales
    if sizes is None:
        sizes = [int(np.floor(s * f)) for s, f in zip(x.shape[2:], scales)]
    if kwargs.get("recompute_scale_factor"):
        scales = [None] * spatial
    out = x.astype(np.float64)
    for axis in range(spatial):
        index, weights = linear_tables(x.shape[2 + axis], sizes[axis], scales[axis],
                                       kwargs.get("align_corners", False), np.float64)
        low, high = np.take(out, index[0::2], 2 + axis), np.take(out, index[1::2], 2 + axis)
        shape = [1] * x.ndim
        shape[2 + axis] = -1
        out = low * weights[0::2].reshape(shape) + high * weights[1::2].reshape(shape)
    return out


@pytest.mark.parametrize("shape, kwargs", CASES)
def test_matches_the_composed_reference(device, rng, shape, kwargs):
    x = rng.standard_normal(shape)
    got = F.interpolate(mt.tensor(x, device=device), **kwargs)
    np.testing.assert_allclose(got.cpu().numpy(), _reference(x, kwargs), rtol=1e-13, atol=1e-14)
    got32 = F.interpolate(mt.tensor(x, dtype=mt.float32, device=device), **kwargs)
    np.testing.assert_allclose(got32.cpu().numpy(), _reference(x, kwargs), rtol=1e-5,
                               atol=1e-6)


@pytest.mark.parametrize("shape, kwargs", CASES)
def test_matches_torch(device, rng, shape, kwargs):
    torch = pytest.importorskip("torch")
    for dtype in (np.float32, np.float64):
        x = rng.standard_normal(shape).astype(dtype)
        got = F.interpolate(mt.tensor(x, device=device), **kwargs).cpu().numpy()
        want = torch.nn.functional.interpolate(torch.tensor(x), **kwargs).numpy()
        # ATen's tables exactly; its sums differ from ours by the last place at most
        np.testing.assert_allclose(got, want, rtol=4 * np.finfo(dtype).eps,
                                   atol=4 * np.finfo(dtype).eps)


def test_tables_are_atens(device):
    """One-hot inputs read the weights back: torch's, bit for bit (its source index is a fused
    multiply-add)."""
    torch = pytest.importorskip("torch")
    for n, kwargs in itertools.product((3, 6, 37), ({"size": 13}, {"size": 100},
                                                   {"scale_factor": 1.7}, {"size": 2},
                                                   {"size": 7, "align_corners": True})):
        for dtype in (np.float32, np.float64):
            eye = np.eye(n, dtype=dtype).reshape(n, 1, n)
            got = F.interpolate(mt.tensor(eye, device=device), mode="linear", **kwargs)
            want = torch.nn.functional.interpolate(torch.tensor(eye), mode="linear", **kwargs)
            np.testing.assert_array_equal(got.cpu().numpy(), want.numpy())


def test_strided_empty_and_sixteen_bit_inputs(device, rng):
    x = rng.standard_normal((3, 2, 6, 8))
    view = mt.tensor(x, device=device)[:, :, ::2, 1::2]          # non-contiguous
    np.testing.assert_allclose(F.interpolate(view, size=(5, 7), mode="bilinear").cpu().numpy(),
                               _reference(x[:, :, ::2, 1::2], {"size": (5, 7)}), rtol=1e-13)
    empty = F.interpolate(mt.zeros(0, 2, 3, 4, device=device), size=(5, 6), mode="bilinear")
    assert empty.shape == (0, 2, 5, 6)
    for dtype in (mt.float16, mt.bfloat16):
        half = mt.tensor(x, device=device).to(dtype)
        got = F.interpolate(half, size=(9, 5), mode="bilinear")
        want = F.interpolate(half.float(), size=(9, 5), mode="bilinear").to(dtype)
        assert got.dtype is dtype and mt.equal(got, want)   # float32 math, rounded once


def test_nan_and_inf_spread_as_in_torch(device):
    """A kept axis still weighs its neighbour by 0 (ATen copies with weights (1, 0)), so an inf
    beside a value gives NaN there, as torch does."""
    inf, nan = float("inf"), float("nan")
    x = mt.tensor([[[[1.0, inf], [2.0, 3.0]]]], device=device)
    np.testing.assert_array_equal(
        F.interpolate(x, size=(2, 2), mode="bilinear").cpu().numpy(),
        [[[[1.0, nan], [2.0, 3.0]]]])
    np.testing.assert_array_equal(
        F.interpolate(x, size=(2, 4), mode="bilinear").cpu().numpy()[0, 0, 0], [nan] * 4)
    line = mt.tensor([[[1.0, nan, 2.0]]], device=device)
    np.testing.assert_array_equal(F.interpolate(line, size=3, mode="linear").cpu().numpy(),
                                  [[[1.0, nan, 2.0]]])


@pytest.mark.parametrize("shape, kwargs", [CASES[0], CASES[2], CASES[4], CASES[6]])
def test_gradcheck_and_gradgradcheck(device, rng, shape, kwargs):
    x = mt.tensor(rng.standard_normal(shape), device=device, requires_grad=True)
    assert mt.autograd.gradcheck(lambda t: F.interpolate(t, **kwargs), (x,))
    assert mt.autograd.gradgradcheck(lambda t: F.interpolate(t, **kwargs), (x,))


def test_backward_matches_torch(device, rng):
    torch = pytest.importorskip("torch")
    x = rng.standard_normal((2, 3, 5, 7))
    g = rng.standard_normal((2, 3, 8, 4))
    ours = mt.tensor(x, device=device, requires_grad=True)
    F.interpolate(ours, size=(8, 4), mode="bilinear").backward(mt.tensor(g, device=device))
    theirs = torch.tensor(x, requires_grad=True)
    torch.nn.functional.interpolate(theirs, size=(8, 4), mode="bilinear").backward(
        torch.tensor(g))
    np.testing.assert_allclose(ours.grad.cpu().numpy(), theirs.grad.numpy(), rtol=1e-12,
                               atol=1e-14)


def test_kernel_rejects_bad_tables():
    from minitorch import _cpu
    x, out = np.ones(4), np.empty(4)
    index, weights = np.zeros(2 + 2 + 8, np.int64), np.ones(12)
    args = (1, (1, 1, 4), (1, 1, 4), (1, 1, 2))
    index[-1] = 4
    with pytest.raises(IndexError, match="index 4 is out of bounds for axis 2 of size 4"):
        _cpu.lerp_resample(x, index, weights, out, *args)
    with pytest.raises(TypeError, match="dtypes differ"):
        _cpu.lerp_resample(x, np.zeros(12, np.int64), weights.astype(np.float32), out, *args)
    with pytest.raises(ValueError, match="taps must be 1 or 2"):
        _cpu.lerp_resample(x, np.zeros(12, np.int64), weights, out, 1, (1, 1, 4), (1, 1, 4),
                           (1, 1, 3))
