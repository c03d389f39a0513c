"""torch.fft's one-dimensional transforms: fft / ifft (complex to complex), rfft (real to the
onesided half spectrum) and irfft (its inverse), with torch's n, dim and norm arguments.

One differentiable node does the work: `FftC2C`, the scaled DFT of the last dim of a complex
tensor (the kernel `fft_rows`, _cpu/fft.pyx), whose backward is the same node in the other
direction with the same scale (the adjoint of s·F is s·conj(F)). rfft and irfft are built
around it from differentiable ops (a cast to complex and a narrow; the Hermitian extension by
flip and conj, and .real), so their gradients are the compositions' and equal torch's
(rfft's is the real part of the zero-padded adjoint, irfft's doubles the mirrored bins).
"""
import math

from .. import dtypes
from ..autograd import KernelFunction
from ..ndarray import NDArray, normalize_dim, scalar_array
from ..opcodes import BinaryOp
from ..tensor import Tensor, wrap, zeros
from . import complex as _C
from . import elementwise as _E
from . import joining as _J

__all__ = ['fft', 'ifft', 'irfft', 'rfft']

_NORMS = ("backward", "forward", "ortho")


class FftC2C(KernelFunction):
    """scale · DFT of the last dim (the conjugate transform when inverse), unnormalised kernel."""

    @staticmethod
    def forward(ctx, a, inverse, scale):
        ctx.inverse, ctx.scale = inverse, scale
        src = a._data.compact()
        rows = src.size // src.shape[-1] if src.ndim and src.shape[-1] else 0
        out = NDArray.empty(src.shape, src.dtype, src.device)
        real = src.dtype.real_dtype
        if out.size:
            out.backend.fft_rows(src.flat().view(real.storage), out.buffer.view(real.storage),
                                 rows, src.shape[-1], inverse)
        if scale != 1.0 and out.size:
            pairs = out.as_real().binary(BinaryOp.MUL, scalar_array(scale, real, out.device))
            out = pairs.as_complex()
        return wrap(out)

    @staticmethod
    def backward(ctx, g):
        return FftC2C.apply(g, not ctx.inverse, ctx.scale), None, None


def _scale(n, norm, inverse):
    """torch's normalisation: "backward" scales the inverse by 1/n, "forward" the forward
    transform, "ortho" both by 1/√n."""
    if norm is None:
        norm = "backward"
    if norm not in _NORMS:
        raise ValueError(f"Invalid normalization mode: {norm}")
    if norm == "ortho":
        return 1.0 / math.sqrt(n) if n else 1.0
    scaled = (norm == "backward") == inverse
    return 1.0 / n if scaled and n else 1.0


def _check(input, name, n):
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if input.device.type != "cpu":
        raise NotImplementedError(f"{name}: minitorch has no {input.device.type} kernel for "
                                  "the FFT (CPU only)")
    if input.ndim == 0:
        raise IndexError("Dimension specified as -1 but tensor has no dimensions")
    if n is not None and n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")


def _resized(x, n, dim):
    """x trimmed or zero-padded to n along dim (torch's n argument)."""
    size = x.shape[dim]
    if n == size:
        return x
    if n < size:
        return x.narrow(dim, 0, n)
    shape = list(x.shape)
    shape[dim] = n - size
    return _J.cat([x, zeros(*shape, dtype=x.dtype, device=x.device)], dim)


def _to_complex(x):
    return x if x.dtype.is_complex else _E.cast(x, dtypes.to_complex(x.dtype))


def _c2c(x, dim, inverse, scale):
    """FftC2C along `dim` (moved last and back)."""
    last = x.ndim - 1
    if dim != last:
        x = x.transpose(dim, last)
    y = FftC2C.apply(x, inverse, scale)
    return y.transpose(dim, last) if dim != last else y


def _complex_transform(input, n, dim, norm, inverse, name):
    _check(input, name, n)
    dim = normalize_dim(dim, input.ndim)
    x = _to_complex(input)
    n = x.shape[dim] if n is None else n
    x = _resized(x, n, dim)
    return _c2c(x, dim, inverse, _scale(n, norm, inverse))


def fft(input, n=None, dim=-1, norm=None):
    """torch.fft.fft: the DFT along dim (real input becomes complex), trimmed or zero-padded to
    n points; norm "backward" (default, unscaled), "forward" (1/n) or "ortho" (1/√n)."""
    return _complex_transform(input, n, dim, norm, False, "fft_fft")


def ifft(input, n=None, dim=-1, norm=None):
    """torch.fft.ifft: the inverse DFT along dim (1/n with the default norm "backward")."""
    return _complex_transform(input, n, dim, norm, True, "fft_ifft")


def rfft(input, n=None, dim=-1, norm=None):
    """torch.fft.rfft: the DFT of real input along dim, its n // 2 + 1 non-negative frequencies."""
    _check(input, "fft_rfft", n)
    if input.dtype.is_complex:
        raise RuntimeError(f"rfft expects a real input tensor, but got {input.dtype.torch_name}")
    dim = normalize_dim(dim, input.ndim)
    n = input.shape[dim] if n is None else n
    x = _resized(_to_complex(input), n, dim)
    return _c2c(x, dim, False, _scale(n, norm, False)).narrow(dim, 0, n // 2 + 1)


def irfft(input, n=None, dim=-1, norm=None):
    """torch.fft.irfft: the real signal of n points (default 2·(bins - 1)) whose onesided
    spectrum along dim is input (the imaginary parts of the zero and Nyquist bins ignored)."""
    _check(input, "fft_irfft", n)
    dim = normalize_dim(dim, input.ndim)
    bins = input.shape[dim]
    n = 2 * (bins - 1) if n is None else n
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")
    half = _resized(_to_complex(input), n // 2 + 1, dim)
    mirrored = n - (n // 2 + 1)         # bins n//2+1 .. n-1: conj of bins n-1-.. 1
    if mirrored:
        tail = _C.conj(half.narrow(dim, 1, mirrored).flip(dim))
        half = _J.cat([half, tail], dim)
    return _C.real(_c2c(half, dim, True, _scale(n, norm, True))).contiguous()
