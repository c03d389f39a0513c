"""torch.nn.modules.normalization: LayerNorm, GroupNorm, RMSNorm, LocalResponseNorm
(minitorch/nn/normalization.py) and CrossMapLRN2d (minitorch/nn/cross_map_lrn.py)."""
from ..cross_map_lrn import CrossMapLRN2d  # noqa: F401
from ..normalization import GroupNorm, LayerNorm, LocalResponseNorm, RMSNorm  # noqa: F401
