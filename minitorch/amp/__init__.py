"""torch.amp: autocast regions (autocast_mode.py) and gradient scaling (grad_scaler.py)."""
from .autocast_mode import (autocast, custom_bwd, custom_fwd, get_autocast_dtype,
                            is_autocast_available)
