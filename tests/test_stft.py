"""torch.stft / torch.istft: forward values against numpy's framing and FFT, gradients by
finite differences (float64, real and complex), the round trip, torch's argument errors, and
(with torch installed) torch's values for the same arguments."""
import warnings

import numpy as np
import pytest

import minitorch as mt

try:
    import torch
except ImportError:
    torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")


def numpy_stft(x, n_fft, hop, window, center=True, onesided=True, normalized=False):
    """The definition: frames of the (reflect-padded) signal times the window, each FFT'd."""
    if center:
        x = np.pad(x, [(0, 0)] * (x.ndim - 1) + [(n_fft // 2, n_fft // 2)], mode="reflect")
    count = 1 + (x.shape[-1] - n_fft) // hop
    frames = np.stack([x[..., t * hop:t * hop + n_fft] for t in range(count)], -2) * window
    spectrum = (np.fft.rfft if onesided else np.fft.fft)(frames, axis=-1)
    if normalized:
        spectrum = spectrum / np.sqrt(n_fft)
    return np.swapaxes(spectrum, -1, -2)


@pytest.mark.parametrize("layout", ["contiguous", "strided", "one signal"])
def test_forward_matches_the_definition(layout):
    rng = np.random.default_rng(0)
    signal = rng.standard_normal((3, 50))
    x = mt.tensor(signal)
    if layout == "strided":
        signal = signal[:, ::2]
        x = x[:, ::2]
    elif layout == "one signal":
        signal, x = signal[1], x[1]
    window = np.hanning(12)
    for kwargs in (dict(), dict(normalized=True), dict(center=False), dict(onesided=False)):
        got = mt.stft(x, 12, hop_length=3, window=mt.tensor(window), return_complex=True,
                      **kwargs)
        want = numpy_stft(signal, 12, 3, window, **kwargs)
        assert got.dtype is mt.complex128 and got.shape == want.shape
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-10, atol=1e-12)
    assert x.stft(12, return_complex=True).shape == mt.stft(x, 12, return_complex=True).shape


def test_window_shorter_than_n_fft_is_centred_and_defaults():
    x = mt.tensor(np.random.default_rng(1).standard_normal(40))
    short = np.hanning(6)
    padded = np.concatenate([np.zeros(3), short, np.zeros(3)])
    got = mt.stft(x, 12, win_length=6, window=mt.tensor(short), return_complex=True)
    np.testing.assert_allclose(got.numpy(), numpy_stft(x.numpy(), 12, 3, padded), atol=1e-12)
    rectangular = mt.stft(x, 12, win_length=6, return_complex=True)        # ones of win_length
    np.testing.assert_allclose(rectangular.numpy(), numpy_stft(
        x.numpy(), 12, 3, np.r_[np.zeros(3), np.ones(6), np.zeros(3)]), atol=1e-12)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        real = mt.stft(x, 12, return_complex=False)
    assert "return_complex=False is deprecated" in str(caught[0].message)
    assert real.shape == (7, 14, 2) and real.dtype is mt.float64


@pytest.mark.parametrize("kwargs", [dict(), dict(hop_length=4, normalized=True),
                                    dict(win_length=6), dict(center=False)])
def test_round_trip_and_gradients(kwargs):
    rng = np.random.default_rng(2)
    x = mt.tensor(rng.standard_normal((2, 30)), requires_grad=True)
    # without centring, the signal's ends need a window that is not zero there (NOLA)
    length = kwargs.get("win_length", 8)
    window = mt.hann_window(length, dtype=mt.float64) if kwargs.get("center", True) else \
        mt.linspace(0.5, 1.0, length, dtype=mt.float64)
    spectrum = mt.stft(x, 8, window=window, return_complex=True, **kwargs)
    back = mt.istft(spectrum, 8, window=window, length=30, **{
        k: v for k, v in kwargs.items() if k != "center"}, center=kwargs.get("center", True))
    if kwargs.get("center", True):      # without centring the ends lack overlapping windows
        np.testing.assert_allclose(back.detach().numpy(), x.detach().numpy(), atol=1e-12)
    assert mt.autograd.gradcheck(
        lambda s: mt.view_as_real(mt.stft(s, 8, window=window, return_complex=True, **kwargs)),
        (x,))
    z = mt.tensor(spectrum.detach().numpy(), requires_grad=True)
    assert mt.autograd.gradcheck(lambda s: mt.istft(s, 8, window=window, **kwargs), (z,))


def test_complex_signals_are_two_sided():
    rng = np.random.default_rng(3)
    signal = rng.standard_normal(24) + 1j * rng.standard_normal(24)
    z = mt.tensor(signal, requires_grad=True)
    got = mt.stft(z, 8)                                  # return_complex defaults to True
    np.testing.assert_allclose(got.detach().numpy(),
                               numpy_stft(signal, 8, 2, 1.0, onesided=False), atol=1e-12)
    back = mt.istft(got, 8, return_complex=True, length=24)
    np.testing.assert_allclose(back.detach().numpy(), signal, atol=1e-12)
    assert mt.autograd.gradcheck(lambda s: mt.view_as_real(mt.stft(s, 8)), (z,))


@pytest.mark.parametrize("call, kind, message", [
    (lambda x: mt.stft(x, 8), RuntimeError, "stft requires the return_complex parameter"),
    (lambda x: mt.stft(x, 0, return_complex=True), RuntimeError,
     r"n_fft=0, hop_length=0, win_length=0, window=None, normalized=0, onesided=None, "
     r"return_complex=1, align_to_window=None\) : expected 0 < n_fft < 20, but got n_fft=0"),
    (lambda x: mt.stft(x, 8, hop_length=0, return_complex=True), RuntimeError,
     r"stft\(torch.DoubleTensor\[28\].*expected hop_length > 0"),
    (lambda x: mt.stft(x, 8, win_length=9, return_complex=True), RuntimeError,
     "expected 0 < win_length <= n_fft, but got win_length=9"),
    (lambda x: mt.stft(x, 8, window=mt.ones(5), return_complex=True), RuntimeError,
     r"window=torch.FloatTensor\{\[5\]\}.*but got window with size \[5\]"),
    (lambda x: mt.stft(x.view(1, 2, 10), 4, return_complex=True), RuntimeError,
     "expected a 1D or 2D tensor"),
    (lambda x: mt.stft(x, 8, align_to_window=True, return_complex=True), RuntimeError,
     "align_to_window should only be set when center = false"),
    (lambda x: mt.stft(x.to(mt.complex128), 8, onesided=True), RuntimeError,
     "Cannot have onesided output if window or input is complex"),
    (lambda x: mt.istft(x, 8), RuntimeError, "istft requires a complex-valued input"),
    (lambda x: mt.istft(mt.stft(x, 8, return_complex=True), 6), RuntimeError,
     r"istft\(CPUComplexDoubleType\[5, 11\].* : expected the frequency dimension \(3rd to the "
     r"last\) of the input tensor to match n_fft / 2 \+ 1 when onesided=True, but got 5"),
    (lambda x: mt.istft(mt.stft(x, 8, return_complex=True), 8, window=mt.ones(4)),
     RuntimeError, "Invalid window shape"),
    (lambda x: mt.istft(mt.stft(x, 8, return_complex=True), 8, center=False,
                        window=mt.hann_window(8, dtype=mt.float64)), RuntimeError,
     "window overlap add min"),
    (lambda x: mt.istft(mt.stft(x, 8, return_complex=True)[:, 0], 8), IndexError,
     r"Dimension out of range \(expected to be in range of \[-2, 1\], but got -3\)"),
])
def test_errors_are_torchs(call, kind, message):
    with pytest.raises(kind, match=message):
        call(mt.tensor(np.arange(20.0)))


def test_cuda_says_the_fft_is_cpu_only(device):
    x = mt.ones(20, device=device)
    if device == "cuda":
        with pytest.raises(NotImplementedError, match="no cuda kernel for the FFT"):
            mt.stft(x, 8, return_complex=True)
    else:
        assert mt.stft(x, 8, return_complex=True).device.type == "cpu"


@needs_torch
def test_values_are_torchs():
    rng = np.random.default_rng(4)
    signal = rng.standard_normal((2, 45)).astype(np.float32)
    short = np.hanning(8).astype(np.float32)
    cases = [dict(n_fft=16, return_complex=True),
             dict(n_fft=16, hop_length=5, window=np.hanning(16).astype(np.float32),
                  normalized=True, return_complex=True),
             dict(n_fft=16, win_length=8, window=short, center=False, align_to_window=True,
                  return_complex=True),
             dict(n_fft=10, pad_mode="replicate", onesided=False, return_complex=True)]
    for case in cases:
        results = []
        for lib in (torch, mt):
            kwargs = {k: lib.tensor(v) if isinstance(v, np.ndarray) else v
                      for k, v in case.items()}
            spectrum = lib.stft(lib.tensor(signal), **kwargs)
            inverse_args = {k: v for k, v in kwargs.items()
                            if k in ("n_fft", "hop_length", "win_length", "window", "normalized",
                                     "onesided")}
            results.append([spectrum.numpy(), lib.istft(spectrum, length=45, **inverse_args,
                                                        center=case.get("center", True))
                            .numpy() if case.get("center", True) else None])
        for ours, theirs in zip(results[1], results[0]):
            if theirs is not None:
                np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-5)
