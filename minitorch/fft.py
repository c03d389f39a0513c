"""torch.fft: the one-dimensional transforms fft, ifft, rfft and irfft (functions/fft.py), with
torch's n / dim / norm arguments and autograd. CPU only; the n-dimensional and Hermitian
variants (fft2, fftn, hfft, ...) and the frequency helpers are not implemented."""
from .functions.fft import fft, ifft, irfft, rfft

__all__ = ['fft', 'ifft', 'irfft', 'rfft']
