"""torch.signal.windows: each window against its formula in numpy (symmetric and periodic,
float32 / float64, lengths 0-11), the argument errors, and torch's values when installed."""
import math

import numpy as np
import pytest

import minitorch as mt
from minitorch.signal import windows

try:
    import torch
except ImportError:
    torch = None


def _cosine_sum(a):
    def formula(n, M, sym):
        span = M - 1 if sym else M
        return sum((-1) ** i * w * np.cos(2 * np.pi * i * n / span) for i, w in enumerate(a))
    return formula


def _exponential(n, M, sym):
    return np.exp(-np.abs(n - (M - 1 if sym else M) / 2))


def _gaussian(n, M, sym, std=1.0):
    return np.exp(-((n - (M - 1 if sym else M) / 2) / std) ** 2 / 2)


def _kaiser(n, M, sym, beta=12.0):
    span = M - 1 if sym else M
    return np.i0(beta * np.sqrt(np.clip(1 - (2 * n / span - 1) ** 2, 0, None))) / np.i0(beta)


FORMULAS = {
    "hann": _cosine_sum([0.5, 0.5]), "hamming": _cosine_sum([0.54, 0.46]),
    "blackman": _cosine_sum([0.42, 0.5, 0.08]),
    "nuttall": _cosine_sum([0.3635819, 0.4891775, 0.1365995, 0.0106411]),
    "bartlett": lambda n, M, sym: 1 - np.abs(2 * n / (M - 1 if sym else M) - 1),
    "cosine": lambda n, M, sym: np.sin(np.pi * (n + 0.5) / (M if sym else M + 1)),
    "exponential": _exponential, "gaussian": _gaussian, "kaiser": _kaiser,
}


@pytest.mark.parametrize("name", sorted(FORMULAS))
def test_windows_follow_their_formulas(name, device):
    for M in range(12):
        for sym in (True, False):
            for dtype in (mt.float32, mt.float64):
                got = getattr(windows, name)(M, sym=sym, dtype=dtype, device=device)
                assert got.shape == (M,) and got.dtype is dtype and got.device.type == device
                if M == 0:
                    continue
                n = np.arange(M, dtype=np.float64)
                # one point: the symmetric window either way (torch's rule)
                want = np.ones(1) if M == 1 and name not in (
                    "cosine", "exponential", "gaussian") else FORMULAS[name](n, M, sym or M == 1)
                tolerance = 1e-12 if dtype is mt.float64 else 2e-6
                np.testing.assert_allclose(got.cpu().numpy(), want, rtol=tolerance,
                                           atol=tolerance, err_msg=f"{name} {M} {sym}")


def test_parameters_and_general_forms():
    n = np.arange(9.0)
    got = windows.gaussian(9, std=2.5, dtype=mt.float64)
    np.testing.assert_allclose(got.numpy(), _gaussian(n, 9, True, 2.5), rtol=1e-12)
    got = windows.kaiser(9, beta=5.0, sym=False, dtype=mt.float64)
    np.testing.assert_allclose(got.numpy(), _kaiser(n, 9, False, 5.0), rtol=1e-12)
    got = windows.exponential(9, center=2.0, tau=3.0, sym=False, dtype=mt.float64)
    np.testing.assert_allclose(got.numpy(), np.exp(-np.abs(n - 2) / 3), rtol=1e-12)
    got = windows.general_hamming(9, alpha=0.6, dtype=mt.float64)
    np.testing.assert_allclose(got.numpy(), _cosine_sum([0.6, 0.4])(n, 9, True), atol=1e-15)
    assert windows.hann(4, requires_grad=True).requires_grad
    assert windows.hann(5).dtype is mt.get_default_dtype()


@pytest.mark.parametrize("call, kind, message", [
    (lambda: windows.hann(-1), ValueError,
     "general_cosine requires non-negative window length, got M=-1"),
    (lambda: windows.cosine(3, dtype=mt.int64), ValueError,
     "cosine expects float32 or float64 dtypes, got: torch.int64"),
    (lambda: windows.bartlett(3, layout=mt.sparse_coo), ValueError,
     "bartlett is implemented for strided tensors only, got: torch.sparse_coo"),
    (lambda: windows.gaussian(3, std=0), ValueError,
     "Standard deviation must be positive, got: 0 instead."),
    (lambda: windows.exponential(3, tau=-1), ValueError, "Tau must be positive, got: -1"),
    (lambda: windows.exponential(3, center=1.0), ValueError,
     "Center must be None for symmetric windows"),
    (lambda: windows.general_cosine(3, a=3), TypeError, "Coefficients must be a list/tuple"),
    (lambda: windows.kaiser(3, beta=-1), ValueError, "beta must be non-negative, got: -1"),
])
def test_errors_are_torchs(call, kind, message):
    with pytest.raises(kind, match=message.replace("(", r"\(").replace(")", r"\)")):
        call()


@pytest.mark.skipif(torch is None, reason="torch is not installed")
def test_values_are_torchs():
    for name in windows.__all__:
        extra = {"general_cosine": dict(a=[0.46, 0.23, 0.31])}.get(name, {})
        for M in (1, 2, 7, 16):
            for sym in (True, False):
                theirs = getattr(torch.signal.windows, name)(M, sym=sym, **extra).numpy()
                ours = getattr(windows, name)(M, sym=sym, **extra).numpy()
                np.testing.assert_allclose(ours, theirs, rtol=2e-6, atol=1e-7,
                                           err_msg=f"{name} {M} {sym}")
    assert math.isclose(float(windows.kaiser(3)[1]), 1.0)
