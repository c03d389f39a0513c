"""mt.fft: fft / ifft / rfft / irfft and their n-dimensional forms against numpy and torch
(values, shapes, dtypes, s / n, dim, norm), power-of-two and other sizes, their gradients by
gradcheck and against torch's, fftfreq / rfftfreq / fftshift / ifftshift, and the refusals
(complex rfft, a bad norm, n < 1, repeated dims, cuda)."""
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
        _assert_gradient_matches_torch(name, real if name == "rfft" else cplx,
                                       {"n": n, "dim": dim, "norm": norm})


def _assert_gradient_matches_torch(name, source, kwargs):
    """The loss and input gradient of a weighted |transform| (its square when real) equal
    torch's."""
    results = []
    for lib in (torch, mt):
        x = lib.tensor(source, requires_grad=True)
        y = getattr(lib.fft, name)(x, **kwargs)
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
    with pytest.raises(RuntimeError, match='Invalid normalization mode: "sideways"'):
        mt.fft.fft(z, norm="sideways")
    with pytest.raises(TypeError, match="fft_rfft\\(\\): argument 'norm' must be str, not int"):
        mt.fft.rfft(z.real, norm=3)
    with pytest.raises(RuntimeError, match=r"Invalid number of data points \(0\) specified"):
        mt.fft.fft(z, n=0)
    with pytest.raises(RuntimeError, match=r"Invalid number of data points \(0\) specified"):
        mt.fft.irfft(mt.ones(1, dtype=mt.complex64))
    with pytest.raises(IndexError):
        mt.fft.fft(z, dim=3)


# ---- n-dimensional transforms -----------------------------------------------------------------
ND_CASES = [  # (name, keyword arguments); numpy names dim "axes"
    ("fftn", {}), ("fftn", {"s": (5, 3)}), ("fftn", {"dim": (2, 0), "s": (2, -1)}),
    ("ifftn", {"norm": "ortho"}), ("ifftn", {"dim": 1, "s": (7,)}), ("fft2", {}),
    ("fft2", {"dim": (0, 2), "norm": "forward"}), ("ifft2", {"s": (3, 9)}),
    ("rfftn", {}), ("rfftn", {"dim": (0, 1), "norm": "ortho"}), ("rfft2", {"s": (3, 7)}),
    ("irfftn", {}), ("irfftn", {"s": (4, 5)}), ("irfftn", {"dim": (2, 0), "norm": "forward"}),
    ("irfft2", {}), ("irfft2", {"s": (2, 9), "dim": (0, 1)}), ("hfftn", {}),
    ("hfftn", {"s": (2, 7), "norm": "ortho"}), ("hfft2", {"dim": (0, 2), "norm": "forward"}),
    ("ihfftn", {}), ("ihfftn", {"dim": (1, 2), "s": (3, 5)}), ("ihfft2", {"norm": "ortho"}),
    ("hfft", {"n": 7}), ("hfft", {"dim": 0, "norm": "forward"}), ("ihfft", {"norm": "ortho"}),
    ("ihfft", {"n": 9, "dim": 1})]
_FLIPPED = {None: "forward", "backward": "forward", "forward": "backward", "ortho": "ortho"}


def _numpy_call(name, source, kwargs):
    if name in ("hfftn", "hfft2", "ihfftn", "ihfft2"):      # numpy has only the 1-D ones
        flipped = dict(kwargs, norm=_FLIPPED[kwargs.get("norm")])
        if name.startswith("h"):
            return _numpy_call(name.replace("h", "ir"), np.conj(source), flipped)
        return np.conj(_numpy_call(name.replace("ih", "r"), source, flipped))
    if name in ("hfft", "ihfft"):
        kwargs = {"axis" if k == "dim" else k: v for k, v in kwargs.items()}
        return getattr(np.fft, name)(source, **kwargs)
    numpy_kwargs = {"axes" if k == "dim" else k: v for k, v in kwargs.items()}
    if "axes" in numpy_kwargs and isinstance(numpy_kwargs["axes"], int):
        numpy_kwargs["axes"] = (numpy_kwargs["axes"],)
    if "s" in numpy_kwargs:     # numpy has no -1 for "keep": the input's size
        axes = numpy_kwargs.get("axes", range(source.ndim - len(numpy_kwargs["s"]), source.ndim))
        numpy_kwargs["s"] = [source.shape[a] if n == -1 else n
                             for n, a in zip(numpy_kwargs["s"], axes)]
        numpy_kwargs["axes"] = tuple(axes)     # numpy 2 deprecates s without axes
    return getattr(np.fft, name)(source, **numpy_kwargs)


@pytest.mark.parametrize("name, kwargs", ND_CASES)
def test_nd_transforms_match_numpy(name, kwargs):
    real, cplx = _inputs(np.random.default_rng(3), (3, 4, 6))
    source = real if name.startswith(("rfft", "ihfft")) else cplx
    ours = getattr(mt.fft, name)(mt.tensor(source), **kwargs)
    expected = _numpy_call(name, source, kwargs)
    real_out = name.startswith(("irfft", "hfft"))
    assert ours.shape == expected.shape
    assert ours.dtype is (mt.float64 if real_out else mt.complex128)
    np.testing.assert_allclose(ours.numpy(), expected, rtol=1e-10, atol=1e-12)
    x = mt.tensor(source.astype(np.float32 if name.startswith(("rfft", "ihfft"))
                                else np.complex64))
    assert getattr(mt.fft, name)(x, **kwargs).dtype is (mt.float32 if real_out else mt.complex64)


@needs_torch
@pytest.mark.parametrize("name, kwargs", ND_CASES)
def test_nd_gradients_match_torch(name, kwargs):
    real, cplx = _inputs(np.random.default_rng(4), (3, 4, 6))
    _assert_gradient_matches_torch(name, real if name.startswith(("rfft", "ihfft")) else cplx,
                                   kwargs)


def test_nd_gradcheck():
    real, cplx = _inputs(np.random.default_rng(5), (3, 4))
    x, z = mt.tensor(real, requires_grad=True), mt.tensor(cplx, requires_grad=True)
    assert mt.autograd.gradcheck(lambda t: mt.fft.fft2(t, norm="ortho"), (z,))
    assert mt.autograd.gradcheck(lambda t: mt.fft.ifftn(t, s=(5, 2)), (z,))
    assert mt.autograd.gradcheck(lambda t: mt.fft.rfft2(t), (x,))
    assert mt.autograd.gradcheck(lambda t: mt.fft.irfftn(t, s=(3, 5)), (z,))
    assert mt.autograd.gradcheck(lambda t: mt.fft.fftshift(mt.fft.fftn(t), dim=1), (z,))


def test_nd_edge_cases_and_refusals():
    x = mt.ones(3, 4, 5)
    zero_d = mt.fft.fftn(mt.tensor(2.0))           # nothing to transform: a complex copy
    assert zero_d.dtype is mt.complex64 and zero_d.item() == 2
    assert mt.fft.fftn(x, dim=()).shape == (3, 4, 5)
    cases = [(lambda: mt.fft.fftn(x, dim=(0, 0)), RuntimeError, "FFT dims must be unique"),
             (lambda: mt.fft.fftn(x, s=(2, 3), dim=(0,)), RuntimeError,
              "When given, dim and shape arguments must have the same length"),
             (lambda: mt.fft.fftn(x, s=(2, 3, 4, 5)), RuntimeError,
              "Got shape with 4 values but input tensor only has 3 dimensions."),
             (lambda: mt.fft.fftn(x, s=(0, 2)), RuntimeError,
              r"Invalid number of data points \(0\) specified"),
             (lambda: mt.fft.irfftn(x, s=(2, 0)), RuntimeError,
              r"Invalid number of data points \(0\) specified"),
             (lambda: mt.fft.rfftn(x.to(mt.complex64)), RuntimeError,
              "rfftn expects a real-valued input tensor, but got ComplexFloat"),
             (lambda: mt.fft.rfftn(x, dim=()), RuntimeError,
              "rfftn must transform at least one axis"),
             (lambda: mt.fft.irfftn(x, dim=()), RuntimeError,
              "irfftn must transform at least one axis"),
             (lambda: mt.fft.fftn(x, norm="bad"), RuntimeError,
              'Invalid normalization mode: "bad"'),
             (lambda: mt.fft.fft2(mt.ones(3)), IndexError, "Dimension out of range"),
             (lambda: mt.fft.ihfft(x.to(mt.complex128)), RuntimeError,
              "ihfft expects a real input tensor, but got ComplexDouble"),
             (lambda: mt.fft.ihfftn(x.to(mt.complex128)), RuntimeError,
              "Only supports floating-point dtypes, but found: ComplexDouble"),
             (lambda: mt.fft.hfftn(x, dim=()), RuntimeError,
              "hfftn must transform at least one axis")]
    for call, error, message in cases:
        with pytest.raises(error, match=message):
            call()


def test_frequencies_and_shifts():
    for n, d in ((5, 1.0), (6, 0.5), (1, 2.0), (7, -0.25)):
        np.testing.assert_allclose(mt.fft.fftfreq(n, d).numpy(), np.fft.fftfreq(n, d), rtol=1e-6)
        np.testing.assert_allclose(mt.fft.rfftfreq(n, d).numpy(), np.fft.rfftfreq(n, d),
                                   rtol=1e-6)
    assert mt.fft.fftfreq(0).shape == (0,)      # torch's 1 / 0 = inf: 0 Hz · inf is NaN
    assert np.isnan(mt.fft.rfftfreq(0).item())
    np.testing.assert_array_equal(mt.fft.fftfreq(3, 0).numpy(), [np.nan, np.inf, -np.inf])
    assert mt.fft.fftfreq(4).dtype is mt.float32
    frequencies = mt.fft.fftfreq(4, dtype=mt.float64, requires_grad=True)
    assert frequencies.dtype is mt.float64 and frequencies.requires_grad
    values = np.arange(30).reshape(5, 6)
    for dim in (None, 0, 1, (0, 1), (-1,)):
        axes = dim if dim is None or isinstance(dim, tuple) else (dim,)
        np.testing.assert_array_equal(mt.fft.fftshift(mt.tensor(values), dim).numpy(),
                                      np.fft.fftshift(values, axes))
        np.testing.assert_array_equal(mt.fft.ifftshift(mt.tensor(values), dim).numpy(),
                                      np.fft.ifftshift(values, axes))
