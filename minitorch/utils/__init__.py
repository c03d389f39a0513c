"""mt.utils: data loading utilities (mt.utils.data), as in torch.utils."""
from . import data

__all__ = ["data"]
