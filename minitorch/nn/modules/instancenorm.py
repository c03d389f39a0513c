"""torch.nn.modules.instancenorm: the instance norms and their bases (minitorch/nn/normalization.py,
minitorch/nn/lazy.py)."""
from ..lazy import (LazyInstanceNorm1d, LazyInstanceNorm2d, LazyInstanceNorm3d,  # noqa: F401
                    _LazyNormBase)
from ..normalization import (InstanceNorm1d, InstanceNorm2d, InstanceNorm3d,  # noqa: F401
                             _InstanceNorm, _NormBase)
