"""torch.nn.modules.pooling: the pools and their bases (minitorch/nn/pooling.py) and the
fractional max pools (minitorch/nn/fractional_pooling.py)."""
from ..fractional_pooling import FractionalMaxPool2d, FractionalMaxPool3d  # noqa: F401
from ..pooling import (AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveAvgPool3d,  # noqa: F401
                       AdaptiveMaxPool1d, AdaptiveMaxPool2d, AdaptiveMaxPool3d, AvgPool1d,
                       AvgPool2d, AvgPool3d, LPPool1d, LPPool2d, LPPool3d, MaxPool1d, MaxPool2d,
                       MaxPool3d, MaxUnpool1d, MaxUnpool2d, MaxUnpool3d, _AdaptiveAvgPoolNd,
                       _AdaptiveMaxPoolNd, _AvgPoolNd, _LPPoolNd, _MaxPoolNd, _MaxUnpoolNd)
