"""mt.fft: fft / ifft / rfft / irfft against numpy and torch (values, shapes, dtypes, n, dim,
norm), power-of-two and other sizes, their gradients by gradcheck and against torch's, and
the refusals (complex rfft, a bad norm, n < 1, cuda)."""
import numpy as np
import pytest

import minitorch as mt

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")

CASES = [((3, 8), -1, None, None), ((3, 8), 0, None, "ortho"), ((4, 6), -1, 5, "forward"),
         ((2, 7), 1, 10, None), ((5,), 0, None, "backward"), ((2, 3, 12), 1, None, "ortho"),
         ((1, 16), -1, 3, None), ((2, 2), -1, None, None), ((2, 9), -1, 4, "forward"),
         ((2, 100), -1, None, "ortho"), ((3, 45), 1, 33, None), ((37, 2), 0, None, "forward")]
# lengths: powers of two (radix-2), short others (the direct sum), long others (Bluestein)


def _inputs(rng, shape):
    real = rng.standard_normal(shape)
    return real, real + 1j * rng.standard_normal(shape)


@pytest.mark.parametrize("shape, dim, n, norm", CASES)
def test_transforms_match_numpy(shape, dim, n, norm):
    rng = np.random.default_rng(0)
    real, cplx = _inputs(rng, shape)
    for name in ("fft", "ifft", "rfft", "irfft"):
        source = real if name == "rfft" else cplx
        expected = getattr(np.fft, name)(source, n=n, axis=dim, norm=norm)
        ours = getattr(mt.fft, name)(mt.tensor(source), n=n, dim=dim, norm=norm)
        assert ours.shape == expected.shape, name
        assert ours.dtype is (mt.float64 if name == "irfft" else mt.complex128), name
        np.testing.assert_allclose(ours.numpy(), expected, rtol=1e-10, atol=1e-12)


def test_dtypes_follow_torch():
    x = mt.arange(8, dtype=mt.float32)
    assert mt.fft.fft(x).dtype is mt.complex64 and mt.fft.rfft(x).dtype is mt.complex64
    assert mt.fft.fft(mt.arange(8)).dtype is mt.complex64        # integers: default complex
    assert mt.fft.irfft(mt.fft.rfft(x)).dtype is mt.float32
    np.testing.assert_allclose(mt.fft.irfft(mt.fft.rfft(x)).numpy(), np.arange(8), atol=1e-5)
    np.testing.assert_allclose(mt.fft.ifft(mt.fft.fft(x)).numpy(), np.arange(8), atol=1e-5)


@needs_torch
@pytest.mark.parametrize("shape, dim, n, norm", CASES)
def test_gradients_match_torch(shape, dim, n, norm):
    rng = np.random.default_rng(1)
    real, cplx = _inputs(rng, shape)
    for name in ("fft", "ifft", "rfft", "irfft"):
        source = real if name == "rfft" else cplx
        results = []
        for lib in (torch, mt):
            x = lib.tensor(source, requires_grad=True)
            y = getattr(lib.fft, name)(x, n=n, dim=dim, norm=norm)
            weight = lib.tensor(np.cos(np.arange(y.numel())).reshape(tuple(y.shape)))
            loss = (y.abs() * weight).sum() if y.dtype.is_complex else (y * y * weight).sum()
            loss.backward()
            results.append((loss.item(), x.grad.numpy()))
        np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-10)
        np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-9, atol=1e-12)


def test_gradcheck():
    rng = np.random.default_rng(2)
    real, cplx = _inputs(rng, (2, 6))
    x = mt.tensor(real, requires_grad=True)
    z = mt.tensor(cplx, requires_grad=True)
    odd = mt.tensor(_inputs(rng, (5,))[1], requires_grad=True)
    long = mt.tensor(_inputs(rng, (35,))[1], requires_grad=True)
    assert mt.autograd.gradcheck(lambda t: mt.fft.fft(t, norm="ortho"), (z,))
    assert mt.autograd.gradcheck(lambda t: mt.fft.ifft(t, n=8), (z,))
    assert mt.autograd.gradcheck(lambda t: mt.fft.fft(t), (odd,))          # direct DFT
    assert mt.autograd.gradcheck(lambda t: mt.fft.ifft(t), (long,))        # Bluestein
    assert mt.autograd.gradcheck(lambda t: mt.fft.rfft(t, dim=0), (x,))
    assert mt.autograd.gradcheck(lambda t: mt.fft.irfft(t, n=9), (z,))
    assert mt.autograd.gradcheck(lambda t: mt.fft.irfft(mt.fft.rfft(t) * 1j).sum(-1), (x,))


def test_refusals(device):
    z = mt.ones(4, dtype=mt.complex64, device=device)
    if device == "cuda":
        with pytest.raises(NotImplementedError, match="no cuda kernel for the FFT"):
            mt.fft.fft(z)
        return
    with pytest.raises(RuntimeError, match="rfft expects a real input tensor, but got "
                                           "ComplexFloat"):
        mt.fft.rfft(z)
    with pytest.raises(ValueError, match="Invalid normalization mode: sideways"):
        mt.fft.fft(z, norm="sideways")
    with pytest.raises(RuntimeError, match=r"Invalid number of data points \(0\) specified"):
        mt.fft.fft(z, n=0)
    with pytest.raises(RuntimeError, match=r"Invalid number of data points \(0\) specified"):
        mt.fft.irfft(mt.ones(1, dtype=mt.complex64))
    with pytest.raises(IndexError):
        mt.fft.fft(z, dim=3)
