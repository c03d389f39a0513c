"""torch.signal.windows: SciPy's window functions, each w[n] for n = 0 … M-1 computed with
our elementwise kernels from a linspace of positions (as torch computes them). `sym=False`
gives the periodic window, for spectral analysis: the symmetric window one point longer,
without its last point."""
import math

from ... import dtypes
from ...tensor import arange, empty, linspace, ones, strided, tensor
from ...functions.elementwise import abs as _abs, cos, exp, sin, sqrt
from ...functions.special_functions import i0

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine",
           "general_hamming", "hamming", "hann", "kaiser", "nuttall"]


def _checks(name, M, dtype, layout):
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    if layout is not strided:
        raise ValueError(f"{name} is implemented for strided tensors only, got: {layout}")
    if dtype not in (dtypes.float32, dtypes.float64):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: "
                         f"torch.{getattr(dtype, 'name', dtype)}")


def _positions(start, step, M, dtype, device, requires_grad):
    """linspace(start, start + (M - 1) * step, M): the points the formula is evaluated at."""
    return linspace(start, start + (M - 1) * step, M, dtype=dtype, device=device,
                    requires_grad=requires_grad)


def _empty(dtype, device, requires_grad):
    return empty(0, dtype=dtype, device=device, requires_grad=requires_grad)


def _span(M, sym):
    """The denominator of the symmetric (M - 1) or periodic (M) window."""
    return M - 1 if sym else M


def exponential(M, *, center=None, tau=1.0, sym=True, dtype=None, layout=strided, device=None,
                requires_grad=False):
    """w[n] = exp(-|n - center| / tau) (the Poisson window)."""
    dtype = dtype or dtypes.get_default_dtype()
    _checks("exponential", M, dtype, layout)
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    if M == 0:
        return _empty(dtype, device, requires_grad)
    if center is None:
        center = (M if not sym and M > 1 else M - 1) / 2.0
    k = _positions(-center / tau, 1 / tau, M, dtype, device, requires_grad)
    return exp(-_abs(k))


def cosine(M, *, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """w[n] = sin(pi (n + 0.5) / M) (the sine window)."""
    dtype = dtype or dtypes.get_default_dtype()
    _checks("cosine", M, dtype, layout)
    if M == 0:
        return _empty(dtype, device, requires_grad)
    step = math.pi / (M + 1 if not sym and M > 1 else M)
    return sin(_positions(0.5 * step, step, M, dtype, device, requires_grad))


def gaussian(M, *, std=1.0, sym=True, dtype=None, layout=strided, device=None,
             requires_grad=False):
    """w[n] = exp(-((n - (M - 1) / 2) / std)^2 / 2)."""
    dtype = dtype or dtypes.get_default_dtype()
    _checks("gaussian", M, dtype, layout)
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    if M == 0:
        return _empty(dtype, device, requires_grad)
    start = -(M if not sym and M > 1 else M - 1) / 2.0
    step = 1 / (std * math.sqrt(2))
    k = _positions(start * step, step, M, dtype, device, requires_grad)
    return exp(-k * k)


def kaiser(M, *, beta=12.0, sym=True, dtype=None, layout=strided, device=None,
           requires_grad=False):
    """w[n] = I0(beta sqrt(1 - (2n / (M - 1) - 1)^2)) / I0(beta)."""
    dtype = dtype or dtypes.get_default_dtype()
    _checks("kaiser", M, dtype, layout)
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    if M == 0:
        return _empty(dtype, device, requires_grad)
    if M == 1:
        return ones(1, dtype=dtype, device=device, requires_grad=requires_grad)
    step = 2 * beta / _span(M, sym)
    end = min(-beta + (M - 1) * step, beta)      # rounding must not put it past beta
    k = linspace(-beta, end, M, dtype=dtype, device=device, requires_grad=requires_grad)
    peak = tensor(float(beta), dtype=dtype, device=device)
    return i0(sqrt(peak * peak - k * k)) / i0(peak)


def general_cosine(M, *, a, sym=True, dtype=None, layout=strided, device=None,
                   requires_grad=False):
    """w[n] = sum_i (-1)^i a[i] cos(2 pi i n / (M - 1))."""
    dtype = dtype or dtypes.get_default_dtype()
    _checks("general_cosine", M, dtype, layout)
    if not isinstance(a, (list, tuple)):
        raise TypeError("Coefficients must be a list/tuple")
    if not a:
        raise ValueError("Coefficients cannot be empty")
    if M == 0:
        return _empty(dtype, device, requires_grad)
    if M == 1:
        return ones(1, dtype=dtype, device=device, requires_grad=requires_grad)
    k = _positions(0.0, 2 * math.pi / _span(M, sym), M, dtype, device, requires_grad)
    signed = tensor([(-1) ** i * w for i, w in enumerate(a)], dtype=dtype, device=device,
                    requires_grad=requires_grad)
    order = arange(len(a), dtype=dtype, device=device, requires_grad=requires_grad)
    return (signed.unsqueeze(-1) * cos(order.unsqueeze(-1) * k)).sum(0)


def general_hamming(M, *, alpha=0.54, sym=True, dtype=None, layout=strided, device=None,
                    requires_grad=False):
    """w[n] = alpha - (1 - alpha) cos(2 pi n / (M - 1))."""
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def hamming(M, *, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """general_hamming with alpha 0.54."""
    return general_hamming(M, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def hann(M, *, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """general_hamming with alpha 0.5."""
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def blackman(M, *, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """general_cosine with coefficients 0.42, 0.5, 0.08."""
    dtype = dtype or dtypes.get_default_dtype()
    _checks("blackman", M, dtype, layout)
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def bartlett(M, *, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """w[n] = 1 - |2n / (M - 1) - 1| (the triangular window ending in zeros)."""
    dtype = dtype or dtypes.get_default_dtype()
    _checks("bartlett", M, dtype, layout)
    if M == 0:
        return _empty(dtype, device, requires_grad)
    if M == 1:
        return ones(1, dtype=dtype, device=device, requires_grad=requires_grad)
    k = _positions(-1.0, 2.0 / _span(M, sym), M, dtype, device, requires_grad)
    return 1 - _abs(k)


def nuttall(M, *, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """general_cosine with Nuttall's four coefficients (minimum 4-term Blackman-Harris)."""
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym,
                          dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)
