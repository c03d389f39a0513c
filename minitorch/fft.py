"""torch.fft: fft / ifft / rfft / irfft / hfft / ihfft, their n-dimensional forms (fft2,
ifft2, fftn, ifftn, rfft2, irfft2, rfftn, irfftn, hfft2, ihfft2, hfftn, ihfftn), fftfreq /
rfftfreq and fftshift / ifftshift (functions/fft.py), with torch's s / n, dim and norm arguments
and autograd. The transforms run on the CPU only."""
from .functions.fft import (fft, fft2, fftfreq, fftn, fftshift, hfft, hfft2, hfftn, ifft, ifft2,
                            ifftn, ifftshift, ihfft, ihfft2, ihfftn, irfft, irfft2, irfftn, rfft,
                            rfft2, rfftfreq, rfftn)

__all__ = ['fft', 'fft2', 'fftfreq', 'fftn', 'fftshift', 'hfft', 'hfft2', 'hfftn', 'ifft',
           'ifft2', 'ifftn', 'ifftshift', 'ihfft', 'ihfft2', 'ihfftn', 'irfft', 'irfft2',
           'irfftn', 'rfft', 'rfft2', 'rfftfreq', 'rfftn']
