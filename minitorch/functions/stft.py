"""torch.stft / torch.istft, composed as ATen composes them (native/SpectralOps.cpp): frames
are a strided view of the (centre-padded) signal, times the window (zero-padded to n_fft),
through torch.fft's real or complex transform; istft inverts each frame, windows it again and
overlap-adds frames and squared windows with fold, dividing one by the other. Autograd
differentiates them through those ops; the transforms are the CPU fft module's."""
import warnings

from ..tensor import ones, zeros
from . import fft as _fft
from .complex import complex as _complex, view_as_real
from .elementwise import TORCH_NAMES
from .joining import cat
from .padding import pad
from .window import fold

__all__ = ["istft", "stft"]

_RETURN_COMPLEX_REQUIRED = (
    "stft requires the return_complex parameter be given for real inputs, and will further "
    "require that return_complex=True in a future PyTorch release.")
_RETURN_REAL_DEPRECATED = (
    "stft with return_complex=False is deprecated. In a future pytorch release, stft will "
    "return complex tensors for all inputs, and return_complex=False will raise an error.\n"
    "Note: you can still call torch.view_as_real on the complex output to recover the old "
    "return format.")


def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True,
         pad_mode="reflect", normalized=False, onesided=None, return_complex=None,
         align_to_window=None):
    """Short-time Fourier transform of a signal (L) or batch of signals (B, L): (B?, N, T)
    complex, N = n_fft // 2 + 1 frequencies when onesided (the default for real input and
    window), T frames of n_fft samples hop_length apart (torch.stft)."""
    if align_to_window is not None and center:
        raise RuntimeError("stft align_to_window should only be set when center = false")
    complex_in = input.dtype.is_complex or (window is not None and window.dtype.is_complex)
    if return_complex is None:
        if not complex_in:
            raise RuntimeError(_RETURN_COMPLEX_REQUIRED)
        return_complex = True
    if not return_complex:
        warnings.warn(_RETURN_REAL_DEPRECATED, UserWarning, stacklevel=2)
    if center:
        input = _centre_padded(input, n_fft, pad_mode)
    hop_length = n_fft // 4 if hop_length is None else hop_length
    win_length = n_fft if win_length is None else win_length
    prefix = (f"stft({input.type()}{list(input.shape)}, n_fft={n_fft}, hop_length={hop_length}, "
              f"win_length={win_length}, window={_describe(window)}, "
              f"normalized={int(normalized)}, onesided={_flag(onesided)}, "
              f"return_complex={int(return_complex)}, align_to_window={_flag(align_to_window)})"
              " : ")
    _check_stft(prefix, input, n_fft, hop_length, win_length, window)
    signal = input if input.ndim == 2 else input.unsqueeze(0)
    full_window = _padded_window(window, n_fft, win_length, signal)
    if align_to_window and win_length < n_fft:
        # frames placed so that each window (not each n_fft span) lies inside the signal
        left = (n_fft - win_length) // 2
        signal = _zero_padded(signal, left, n_fft - win_length - left)
    frames = signal.unfold(-1, n_fft, hop_length)           # (B, T, n_fft), a view
    if full_window is not None:
        frames = frames * full_window
    onesided = not frames.dtype.is_complex if onesided is None else onesided
    norm = "ortho" if normalized else "backward"
    if frames.dtype.is_complex:
        if onesided:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        spectrum = _fft.fft(frames, dim=-1, norm=norm)
    else:
        transform = _fft.rfft if onesided else _fft.fft
        spectrum = transform(frames, dim=-1, norm=norm)
    spectrum = spectrum.transpose(1, 2)
    if input.ndim == 1:
        spectrum = spectrum.squeeze(0)
    return spectrum if return_complex else view_as_real(spectrum)


def istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True,
          normalized=False, onesided=None, length=None, return_complex=False):
    """The inverse of stft: each frame's inverse transform, windowed, overlap-added and
    divided by the overlap-added squared window (torch.istft); `length` trims or zero-pads
    the result."""
    hop_length = n_fft // 4 if hop_length is None else hop_length
    win_length = n_fft if win_length is None else win_length
    prefix = (f"istft({_aten_type(input)}{list(input.shape)}, n_fft={n_fft}, "
              f"hop_length={hop_length}, win_length={win_length}, window={_describe(window)}, "
              f"center={int(center)}, normalized={int(normalized)}, onesided={_flag(onesided)}, "
              f"length={'None' if length is None else length}, "
              f"return_complex={int(return_complex)}) ")
    if not input.dtype.is_complex:
        raise RuntimeError("istft requires a complex-valued input tensor matching the output "
                           "from stft with return_complex=True.")
    if input.ndim < 2:      # torch reads sizes -2 and -3 of the (re, im) view, as these say
        raise IndexError("Dimension out of range (expected to be in range of "
                         f"{'[-2, 1], but got -3' if input.ndim else '[-1, 0], but got -2'})")
    n_frames, fft_size = input.shape[-1], input.shape[-2]
    onesided = fft_size != n_fft if onesided is None else onesided
    _check_istft(prefix, input, n_fft, hop_length, win_length, window, fft_size, onesided)
    if window is None:      # a tensor even so: the envelope divides by its overlap-added square
        window = ones(win_length, dtype=input.dtype.real_dtype, device=input.device)
    full_window = _padded_window(window, n_fft, win_length, input)
    spectra = (input if input.ndim == 3 else input.unsqueeze(0)).transpose(1, 2)
    norm = "ortho" if normalized else "backward"
    if return_complex:
        if onesided:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        frames = _fft.ifft(spectra, dim=-1, norm=norm)
    else:
        if window is not None and window.dtype.is_complex:
            raise RuntimeError(prefix + ": Complex windows are incompatible with "
                               "return_complex=False")
        if not onesided:
            spectra = spectra.narrow(-1, 0, n_fft // 2 + 1)
        frames = _fft.irfft(spectra, n=n_fft, dim=-1, norm=norm)
    expected = n_fft + hop_length * (n_frames - 1)
    signal = _overlap_add(frames * full_window, expected, n_fft, hop_length)
    envelope = _overlap_add((full_window * full_window).expand(1, n_frames, n_fft), expected,
                            n_fft, hop_length)
    start = n_fft // 2 if center else 0
    end = start + length if length is not None else expected - n_fft // 2 if center \
        else expected
    signal = signal[:, start:min(end, expected)]
    envelope = envelope[:, start:min(end, expected)]
    if bool((envelope.abs().min() < 1e-11).item()):
        raise RuntimeError(prefix + "window overlap add min: 1")
    signal = signal / envelope
    if input.ndim == 2:
        signal = signal.squeeze(0)
    if end > expected:
        warnings.warn("The length of signal is shorter than the length parameter. Result is "
                      "being padded with zeros in the tail. Please check your center and "
                      "hop_length settings.", UserWarning, stacklevel=2)
        signal = _zero_padded(signal, 0, end - expected)
    return signal


# ---- checks -------------------------------------------------------------------------------------
def _check_stft(prefix, input, n_fft, hop_length, win_length, window):
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise RuntimeError(prefix + "expected a tensor of floating point or complex values")
    if input.ndim not in (1, 2):
        raise RuntimeError(prefix + "expected a 1D or 2D tensor")
    length = input.shape[-1]
    if not 0 < n_fft <= length:
        raise RuntimeError(prefix + f"expected 0 < n_fft < {length}, but got n_fft={n_fft}")
    if hop_length <= 0:
        raise RuntimeError(prefix + f"expected hop_length > 0, but got hop_length={hop_length}")
    if not 0 < win_length <= n_fft:
        raise RuntimeError(prefix + "expected 0 < win_length <= n_fft, but got "
                           f"win_length={win_length}")
    if window is not None and (window.ndim != 1 or window.shape[0] != win_length):
        raise RuntimeError(prefix + "expected a 1D window tensor of size equal to "
                           f"win_length={win_length}, but got window with size "
                           f"{list(window.shape)}")


def _check_istft(prefix, input, n_fft, hop_length, win_length, window, fft_size, onesided):
    if input.numel() == 0:
        raise RuntimeError(prefix + ": input tensor cannot be empty.")
    if input.ndim not in (2, 3):
        raise RuntimeError(prefix + ": expected a tensor with 3 or 4 dimensions of complex "
                           f"numbers, but got {input.ndim}")
    if onesided and n_fft // 2 + 1 != fft_size:
        raise RuntimeError(prefix + ": expected the frequency dimension (3rd to the last) of the "
                           "input tensor to match n_fft / 2 + 1 when onesided=True, but got "
                           f"{fft_size}")
    if not onesided and n_fft != fft_size:
        raise RuntimeError(prefix + ": expected the frequency dimension (3rd to the last) of the "
                           f"input tensor to match n_fft when onesided=False, but got {fft_size}")
    if not 0 < hop_length <= win_length:
        raise RuntimeError(prefix + ": expected 0 < hop_length <= win_length")
    if not 0 < win_length <= n_fft:
        raise RuntimeError(prefix + ": expected 0 < win_length <= n_fft")
    if window is not None and (window.ndim != 1 or window.shape[0] != win_length):
        raise RuntimeError(prefix + ": Invalid window shape. window has to be 1D and length of "
                           "`win_length`")


# ---- pieces -------------------------------------------------------------------------------------
def _centre_padded(input, n_fft, pad_mode):
    """n_fft // 2 samples of pad_mode padding at both ends, as torch.stft's Python part pads
    (through a 3-d view, where reflect and replicate padding are defined)."""
    signal_dim = input.ndim
    extended = [1] * (3 - signal_dim) + list(input.shape)
    padded = pad(input.view(extended), [n_fft // 2, n_fft // 2], pad_mode)
    return padded.view(padded.shape[-signal_dim:])


def _padded_window(window, n_fft, win_length, like):
    """The window zero-padded at both ends to n_fft (a rectangular one when None and shorter
    than n_fft; None when None and full length: no multiplication)."""
    if window is None and win_length == n_fft:
        return None
    if window is None:
        window = ones(win_length, dtype=like.dtype.real_dtype if like.dtype.is_complex
                      else like.dtype, device=like.device)
    if win_length == n_fft:
        return window
    left = (n_fft - win_length) // 2
    return _zero_padded(window, left, n_fft - win_length - left)


def _zero_padded(t, before, after):
    """t with `before` and `after` zeros along its last dim."""
    shape = list(t.shape[:-1])
    return cat([zeros(*shape, before, dtype=t.dtype, device=t.device), t,
                zeros(*shape, after, dtype=t.dtype, device=t.device)], -1)


def _overlap_add(frames, length, n_fft, hop_length):
    """(C, length): frame t of frames (C, T, n_fft) added in at t * hop_length (fold; a complex
    signal part by part)."""
    if frames.dtype.is_complex:
        return _complex(_overlap_add(frames.real, length, n_fft, hop_length),
                        _overlap_add(frames.imag, length, n_fft, hop_length))
    added = fold(frames.transpose(1, 2), output_size=(1, length), kernel_size=(1, n_fft),
                 stride=(1, hop_length))
    return added.reshape(frames.shape[0], length)


def _describe(window):
    return "None" if window is None else f"{window.type()}{{{list(window.shape)}}}"


def _flag(value):
    return "None" if value is None else str(int(value))


def _aten_type(t):
    """ATen's name of the tensor's type in istft's messages: CPUComplexFloatType."""
    return f"{t.device.type.upper()}{TORCH_NAMES[t.dtype.name]}Type"
