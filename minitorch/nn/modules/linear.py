"""torch.nn.modules.linear: the linear maps (minitorch/nn/linear.py) and LazyLinear
(minitorch/nn/lazy.py)."""
from ..lazy import LazyLinear  # noqa: F401
from ..linear import (Bilinear, Identity, Linear,  # noqa: F401
                      NonDynamicallyQuantizableLinear)
