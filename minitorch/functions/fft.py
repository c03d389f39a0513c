"""torch.fft: the one-dimensional transforms fft / ifft (complex to complex), rfft (real to
the onesided half spectrum) and irfft (its inverse), with torch's n, dim and norm arguments;
their n-dimensional forms (fft2 / ifft2 / fftn / ifftn, rfft2 / irfft2 / rfftn / irfftn: one
1-D transform per dim, whose scales multiply to torch's n-dimensional norm); fftfreq /
rfftfreq and fftshift / ifftshift; and the Hermitian hfft / ihfft family, each the real
transform of the conjugate with the opposite normalisation.

One differentiable node does the work: `FftC2C`, the scaled DFT of the last dim of a complex
tensor (the kernel `fft_rows`, _cpu/fft.pyx), whose backward is the same node in the other
direction with the same scale (the adjoint of s·F is s·conj(F)). rfft and irfft are built
around it from differentiable ops (a cast to complex and a narrow; the Hermitian extension by
flip and conj, and .real), so their gradients are the compositions' and equal torch's
(rfft's is the real part of the zero-padded adjoint, irfft's doubles the mirrored bins).
"""
import math
import numbers

from .. import dtypes
from ..autograd import KernelFunction
from ..ndarray import NDArray, normalize_dim, scalar_array
from ..opcodes import BinaryOp
from ..tensor import Tensor, arange, wrap, zeros
from . import complex as _C
from . import elementwise as _E
from . import joining as _J
from .movement import roll

__all__ = ['fft', 'fft2', 'fftfreq', 'fftn', 'fftshift', 'hfft', 'hfft2', 'hfftn', 'ifft',
           'ifft2', 'ifftn', 'ifftshift', 'ihfft', 'ihfft2', 'ihfftn', 'irfft', 'irfft2',
           'irfftn', 'rfft', 'rfft2', 'rfftfreq', 'rfftn']

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


def _check_norm(norm, name):
    if norm is not None and not isinstance(norm, str):
        raise TypeError(f"{name}(): argument 'norm' must be str, not {type(norm).__name__}")
    if norm is not None and norm not in _NORMS:
        raise RuntimeError(f'Invalid normalization mode: "{norm}"')


def _scale(n, norm, inverse):
    """torch's normalisation: "backward" scales the inverse by 1/n, "forward" the forward
    transform, "ortho" both by 1/√n (norm already checked)."""
    if norm is None:
        norm = "backward"
    if norm == "ortho":
        return 1.0 / math.sqrt(n) if n else 1.0
    scaled = (norm == "backward") == inverse
    return 1.0 / n if scaled and n else 1.0


def _check_input(input, name, norm):
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if input.device.type != "cpu":
        raise NotImplementedError(f"{name}: minitorch has no {input.device.type} kernel for "
                                  "the FFT (CPU only)")
    _check_norm(norm, name)


def _check_points(n):
    if n is not None and n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")


def _check(input, name, n, norm):
    """A 1-D transform's checks: a tensor on the CPU with a dim, n >= 1, a known norm."""
    _check_input(input, name, norm)
    if input.ndim == 0:
        raise IndexError("Dimension specified as -1 but tensor has no dimensions")
    _check_points(n)


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
    _check(input, name, n, norm)
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
    _check(input, "fft_rfft", n, norm)
    if input.dtype.is_complex:
        raise RuntimeError(f"rfft expects a real input tensor, but got {input.dtype.torch_name}")
    dim = normalize_dim(dim, input.ndim)
    n = input.shape[dim] if n is None else n
    x = _resized(_to_complex(input), n, dim)
    return _c2c(x, dim, False, _scale(n, norm, False)).narrow(dim, 0, n // 2 + 1)


def irfft(input, n=None, dim=-1, norm=None):
    """torch.fft.irfft: the real signal of n points (default 2·(bins - 1)) whose onesided
    spectrum along dim is input (the imaginary parts of the zero and Nyquist bins ignored)."""
    _check(input, "fft_irfft", n, norm)
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


# ---- n-dimensional transforms: one 1-D transform per dim ---------------------------------------
def _signal(input, s, dim):
    """torch's (s, dim) of an n-dimensional transform: the dims (all, or the last len(s) when
    only s is given) and the signal size along each (-1 or no s: the input's)."""
    if dim is None:
        if s is not None and len(s) > input.ndim:
            raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has "
                               f"{input.ndim} dimensions.")
        dims = list(range(input.ndim - (input.ndim if s is None else len(s)), input.ndim))
    else:
        dims = [normalize_dim(d, input.ndim) for d in
                ((dim,) if isinstance(dim, numbers.Integral) else dim)]
        if len(set(dims)) != len(dims):
            raise RuntimeError("FFT dims must be unique")
        if s is not None and len(s) != len(dims):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
    sizes = [input.shape[d] if s is None or s[i] == -1 else s[i] for i, d in enumerate(dims)]
    return sizes, dims


def _c2c_dims(x, sizes, dims, norm, inverse):
    """x (complex) resized and transformed along each dim in turn."""
    for n, d in zip(sizes, dims):
        _check_points(n)
        x = _c2c(_resized(x, n, d), d, inverse, _scale(n, norm, inverse))
    return x


def _complex_n(input, s, dim, norm, inverse, name):
    _check_input(input, name, norm)
    sizes, dims = _signal(input, s, dim)
    x = _to_complex(input)
    if not dims:            # nothing to transform: a complex copy, as torch's
        return x if x is not input else x.clone()
    return _c2c_dims(x, sizes, dims, norm, inverse)


def fftn(input, s=None, dim=None, norm=None):
    """torch.fft.fftn: the DFT over every dim in dim (all by default, or the last len(s)), each
    trimmed or zero-padded to its size in s."""
    return _complex_n(input, s, dim, norm, False, "fft_fftn")


def ifftn(input, s=None, dim=None, norm=None):
    """torch.fft.ifftn: the inverse of fftn (1 / the signal's size with norm "backward")."""
    return _complex_n(input, s, dim, norm, True, "fft_ifftn")


def fft2(input, s=None, dim=(-2, -1), norm=None):
    """torch.fft.fft2: fftn over two dims (the last two by default)."""
    return _complex_n(input, s, dim, norm, False, "fft_fft2")


def ifft2(input, s=None, dim=(-2, -1), norm=None):
    """torch.fft.ifft2: ifftn over two dims (the last two by default)."""
    return _complex_n(input, s, dim, norm, True, "fft_ifft2")


def _real_dims(input, s, dim, norm, name):
    _check_input(input, f"fft_{name}", norm)
    sizes, dims = _signal(input, s, dim)
    if not dims:
        raise RuntimeError(f"{name} must transform at least one axis")
    return sizes, dims


def rfftn(input, s=None, dim=None, norm=None):
    """torch.fft.rfftn: rfft over the last dim of dim (its n // 2 + 1 non-negative
    frequencies), then the full DFT over the others."""
    sizes, dims = _real_dims(input, s, dim, norm, "rfftn")
    if input.dtype.is_complex:
        raise RuntimeError(f"rfftn expects a real-valued input tensor, but got "
                           f"{input.dtype.torch_name}")
    _check_points(sizes[-1])
    half = rfft(input, sizes[-1], dims[-1], norm)
    return _c2c_dims(half, sizes[:-1], dims[:-1], norm, False)


def irfftn(input, s=None, dim=None, norm=None):
    """torch.fft.irfftn: the inverse DFT over every dim of dim but the last, then irfft over
    the last (n = 2 (bins - 1) unless s says)."""
    sizes, dims = _real_dims(input, s, dim, norm, "irfftn")
    if s is None or s[-1] == -1:
        sizes[-1] = 2 * (input.shape[dims[-1]] - 1)
    _check_points(sizes[-1])
    x = _c2c_dims(_to_complex(input), sizes[:-1], dims[:-1], norm, True)
    return irfft(x, sizes[-1], dims[-1], norm)


def rfft2(input, s=None, dim=(-2, -1), norm=None):
    """torch.fft.rfft2: rfftn over two dims (the last two by default)."""
    return rfftn(input, s, dim, norm)


def irfft2(input, s=None, dim=(-2, -1), norm=None):
    """torch.fft.irfft2: irfftn over two dims (the last two by default)."""
    return irfftn(input, s, dim, norm)


# ---- Hermitian transforms: the real ones of the conjugate, with the opposite normalisation -----
_FLIPPED = {None: "forward", "backward": "forward", "forward": "backward", "ortho": "ortho"}


def hfft(input, n=None, dim=-1, norm=None):
    """torch.fft.hfft: the (real) DFT of the Hermitian signal whose onesided half is input,
    irfft of its conjugate with the opposite normalisation."""
    _check(input, "fft_hfft", n, norm)
    return irfft(_C.conj(_to_complex(input)), n, dim, _FLIPPED[norm])


def ihfft(input, n=None, dim=-1, norm=None):
    """torch.fft.ihfft: the onesided inverse DFT of real input, hfft's inverse: the conjugate
    of rfft with the opposite normalisation."""
    _check(input, "fft_ihfft", n, norm)
    if input.dtype.is_complex:
        raise RuntimeError(f"ihfft expects a real input tensor, but got {input.dtype.torch_name}")
    return _C.conj(rfft(input, n, dim, _FLIPPED[norm]))


def hfftn(input, s=None, dim=None, norm=None):
    """torch.fft.hfftn: hfft over every dim of dim, irfftn of the conjugate with the opposite
    normalisation."""
    _real_dims(input, s, dim, norm, "hfftn")
    return irfftn(_C.conj(_to_complex(input)), s, dim, _FLIPPED[norm])


def ihfftn(input, s=None, dim=None, norm=None):
    """torch.fft.ihfftn: hfftn's inverse, the conjugate of rfftn with the opposite
    normalisation."""
    _real_dims(input, s, dim, norm, "ihfftn")
    if input.dtype.is_complex:
        raise RuntimeError(f"Only supports floating-point dtypes, but found: "
                           f"{input.dtype.torch_name}")
    return _C.conj(rfftn(input, s, dim, _FLIPPED[norm]))


def hfft2(input, s=None, dim=(-2, -1), norm=None):
    """torch.fft.hfft2: hfftn over two dims (the last two by default)."""
    return hfftn(input, s, dim, norm)


def ihfft2(input, s=None, dim=(-2, -1), norm=None):
    """torch.fft.ihfft2: ihfftn over two dims (the last two by default)."""
    return ihfftn(input, s, dim, norm)


# ---- frequencies and shifts -------------------------------------------------------------------
def _frequencies(count, n, d, negative, dtype, device, requires_grad):
    """arange(count) · 1/(n d), the upper half moved down by n when `negative` (fftfreq)."""
    dtype = dtypes.get_default_dtype() if dtype is None else dtype
    index = arange(count, dtype=dtype, device=device)
    if negative:
        index = _E.where(index >= (n + 1) // 2, index - n, index)
    spacing = n * d         # 1 / 0 is infinite in torch's C++ (so 0 Hz becomes NaN)
    result = index * (1.0 / spacing if spacing else math.copysign(math.inf, spacing))
    return result.requires_grad_() if requires_grad else result


def fftfreq(n, d=1.0, *, dtype=None, layout=None, device=None, requires_grad=False):
    """torch.fft.fftfreq: the sample frequencies of an n-point DFT with spacing d,
    [0, 1, ..., (n - 1) // 2, -(n // 2), ..., -1] / (n d)."""
    return _frequencies(n, n, d, True, dtype, device, requires_grad)


def rfftfreq(n, d=1.0, *, dtype=None, layout=None, device=None, requires_grad=False):
    """torch.fft.rfftfreq: the non-negative frequencies of rfft, [0, ..., n // 2] / (n d)."""
    return _frequencies(n // 2 + 1, n, d, False, dtype, device, requires_grad)


def _shifted(input, dim, sign):
    dims = list(range(input.ndim)) if dim is None else \
        [dim] if isinstance(dim, numbers.Integral) else list(dim)
    return roll(input, [sign * (input.shape[d] // 2) for d in dims], dims)


def fftshift(input, dim=None):
    """torch.fft.fftshift: the zero frequency moved to the centre (a roll by n // 2 along each
    dim, all by default)."""
    return _shifted(input, dim, 1)


def ifftshift(input, dim=None):
    """torch.fft.ifftshift: fftshift undone (a roll by -(n // 2))."""
    return _shifted(input, dim, -1)
