"""torch's window functions for spectral analysis (hann, hamming, blackman, bartlett, kaiser),
computed from an arange with our elementwise kernels. A periodic window of length N is the
symmetric window of length N + 1 without its last point, as in torch."""
import math

from .. import dtypes
from ..tensor import arange, full_like, ones, tensor
from .elementwise import C_NAMES, cos, sqrt
from .special_functions import i0

__all__ = ["bartlett_window", "blackman_window", "hamming_window", "hann_window",
           "kaiser_window"]


def _positions(name, window_length, periodic, dtype, device):
    """(n / (M - 1) for n < window_length, where M is the symmetric length), or the finished
    window when it is trivially empty or a single 1."""
    dtype = dtypes.get_default_dtype() if dtype is None else dtype
    if not dtype.is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got: TensorOptions(dtype="
                           f"{C_NAMES[dtype.name]}, device={device or 'cpu'})")
    if window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got "
                           f"window_length={window_length}")
    if window_length <= 1:
        return None, ones(window_length, dtype=dtype, device=device)
    symmetric_length = window_length + 1 if periodic else window_length
    return arange(window_length, dtype=dtype, device=device) / (symmetric_length - 1), None


def _finish(window, requires_grad):
    return window.requires_grad_() if requires_grad else window


def _cosine_sum(name, coefficients, window_length, periodic, dtype, device, requires_grad):
    """Σ_k (-1)^k a_k cos(2πk·x): the hann/hamming/blackman family."""
    x, trivial = _positions(name, window_length, periodic, dtype, device)
    if trivial is not None:
        return _finish(trivial, requires_grad)
    window = full_like(x, coefficients[0])
    for k, a in enumerate(coefficients[1:], start=1):
        window = window + (-1) ** k * a * cos(x * (2 * math.pi * k))
    return _finish(window, requires_grad)


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                pin_memory=False, requires_grad=False):
    """Hann window of window_length points, periodic or symmetric (torch.hann_window). layout
    and pin_memory are accepted and ignored."""
    return _cosine_sum("hann_window", (0.5, 0.5), window_length, periodic, dtype, device,
                       requires_grad)


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None,
                   layout=None, device=None, pin_memory=False, requires_grad=False):
    """Hamming window alpha - beta cos(...) of window_length points, periodic or symmetric
    (torch.hamming_window). layout and pin_memory are accepted and ignored."""
    return _cosine_sum("hamming_window", (alpha, beta), window_length, periodic, dtype, device,
                       requires_grad)


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                    pin_memory=False, requires_grad=False):
    """Blackman window of window_length points, periodic or symmetric (torch.blackman_window).
    layout and pin_memory are accepted and ignored."""
    return _cosine_sum("blackman_window", (0.42, 0.5, 0.08), window_length, periodic, dtype,
                       device, requires_grad)


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                    pin_memory=False, requires_grad=False):
    """Bartlett (triangular) window of window_length points, periodic or symmetric
    (torch.bartlett_window). layout and pin_memory are accepted and ignored."""
    x, trivial = _positions("bartlett_window", window_length, periodic, dtype, device)
    if trivial is not None:
        return _finish(trivial, requires_grad)
    return _finish(1 - (x * 2 - 1).abs(), requires_grad)


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None,
                  device=None, pin_memory=False, requires_grad=False):
    """I0(β·sqrt(1 - (2x - 1)²)) / I0(β)."""
    x, trivial = _positions("kaiser_window", window_length, periodic, dtype, device)
    if trivial is not None:
        return _finish(trivial, requires_grad)
    centred = x * 2 - 1
    argument = sqrt((1 - centred * centred).clamp_min(0)) * beta
    scale = i0(tensor(beta, dtype=x.dtype, device=x.device))
    return _finish(i0(argument) / scale, requires_grad)
