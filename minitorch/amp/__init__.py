"""mt.amp (torch.amp): automatic mixed precision. autocast: regions where listed ops run in a
lower precision (autocast_mode.py); GradScaler: dynamic loss scaling (grad_scaler.py)."""
from .autocast_mode import (autocast, custom_bwd, custom_fwd, get_autocast_dtype,
                            is_autocast_available)
from .grad_scaler import GradScaler

__all__ = ["GradScaler", "autocast", "custom_bwd", "custom_fwd", "get_autocast_dtype",
           "is_autocast_available"]
