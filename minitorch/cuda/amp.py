"""mt.cuda.amp (torch.cuda.amp): the deprecated CUDA spellings of mt.amp. GradScaler(...) is
mt.amp.GradScaler("cuda", ...) with torch's FutureWarning."""
import warnings

from ..amp.autocast_mode import autocast as _autocast
from ..amp.grad_scaler import GradScaler as _GradScaler
from .. import dtypes

__all__ = ["GradScaler", "autocast"]


class autocast(_autocast):
    """torch.cuda.amp.autocast: deprecated; use mt.amp.autocast("cuda", ...)."""

    def __init__(self, enabled=True, dtype=dtypes.float16, cache_enabled=True):
        warnings.warn("`torch.cuda.amp.autocast(args...)` is deprecated. Please use "
                      "`torch.amp.autocast('cuda', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(_GradScaler):
    """torch.cuda.amp.GradScaler: deprecated; use mt.amp.GradScaler("cuda", ...)."""

    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        warnings.warn("`torch.cuda.amp.GradScaler(args...)` is deprecated. Please use "
                      "`torch.amp.GradScaler('cuda', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cuda", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval,
                         enabled=enabled)
