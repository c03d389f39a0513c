"""torch.nn.functional.pad (functions/padding.py, where stft reaches it too)."""
from ...functions.padding import pad

__all__ = ["pad"]
