"""The deprecated per-device spellings of mt.amp (torch.cuda.amp, torch.cpu.amp): autocast and
GradScaler classes bound to one device type, which warn as torch's do when made."""
import warnings

from .autocast_mode import autocast as _autocast
from .grad_scaler import GradScaler as _GradScaler


def _deprecated(device, name):
    warnings.warn(f"`torch.{device}.amp.{name}(args...)` is deprecated. Please use "
                  f"`torch.amp.{name}('{device}', args...)` instead.", FutureWarning,
                  stacklevel=3)


def autocast_for(device, default_dtype, module):
    """torch.<device>.amp.autocast: mt.amp.autocast(device, ...) with torch's FutureWarning."""

    class autocast(_autocast):
        def __init__(self, enabled=True, dtype=default_dtype, cache_enabled=True):
            _deprecated(device, "autocast")
            super().__init__(device, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)

    autocast.__module__, autocast.__qualname__ = module, "autocast"
    autocast.__doc__ = (f'torch.{device}.amp.autocast: deprecated; use '
                        f'mt.amp.autocast("{device}", ...).')
    return autocast


def grad_scaler_for(device, module):
    """torch.<device>.amp.GradScaler: mt.amp.GradScaler(device, ...) with torch's warning."""

    class GradScaler(_GradScaler):
        def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                     growth_interval=2000, enabled=True):
            _deprecated(device, "GradScaler")
            super().__init__(device, init_scale=init_scale, growth_factor=growth_factor,
                             backoff_factor=backoff_factor, growth_interval=growth_interval,
                             enabled=enabled)

    GradScaler.__module__, GradScaler.__qualname__ = module, "GradScaler"
    GradScaler.__doc__ = (f'torch.{device}.amp.GradScaler: deprecated; use '
                          f'mt.amp.GradScaler("{device}", ...).')
    return GradScaler
