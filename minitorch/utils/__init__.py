"""mt.utils, as in torch.utils: data loading (mt.utils.data), activation checkpointing
(mt.utils.checkpoint) and the hook handles (mt.utils.hooks)."""
from . import checkpoint, data, hooks

__all__ = ["checkpoint", "data", "hooks"]
