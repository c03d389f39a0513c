"""mt.amp (torch.amp): automatic mixed precision. GradScaler: dynamic loss scaling."""
from .grad_scaler import GradScaler

__all__ = ["GradScaler"]
