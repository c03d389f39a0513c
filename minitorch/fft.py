"""torch.fft: fft / ifft / rfft / irfft, their n-dimensional forms (fft2, ifft2, fftn,
ifftn, rfft2, irfft2, rfftn, irfftn), fftfreq / rfftfreq and fftshift / ifftshift
(functions/fft.py), with torch's s / n, dim and norm arguments and autograd. The transforms run
on the CPU only; the Hermitian variants (hfft, ihfft, ...) are not implemented."""
from .functions.fft import (fft, fft2, fftfreq, fftn, fftshift, ifft, ifft2, ifftn, ifftshift,
                            irfft, irfft2, irfftn, rfft, rfft2, rfftfreq, rfftn)

__all__ = ['fft', 'fft2', 'fftfreq', 'fftn', 'fftshift', 'ifft', 'ifft2', 'ifftn', 'ifftshift',
           'irfft', 'irfft2', 'irfftn', 'rfft', 'rfft2', 'rfftfreq', 'rfftn']
