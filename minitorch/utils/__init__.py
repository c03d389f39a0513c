"""mt.utils, as in torch.utils: data loading (mt.utils.data) and activation checkpointing
(mt.utils.checkpoint)."""
from . import checkpoint, data

__all__ = ["checkpoint", "data"]
