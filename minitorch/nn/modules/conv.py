"""torch.nn.modules.conv: the convolutions and their bases (minitorch/nn/conv.py) and the lazy
ones (minitorch/nn/lazy.py)."""
from ..conv import (Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d,  # noqa: F401
                    ConvTranspose3d, _ConvNd, _ConvTransposeNd)
from ..lazy import (LazyConv1d, LazyConv2d, LazyConv3d, LazyConvTranspose1d,  # noqa: F401
                    LazyConvTranspose2d, LazyConvTranspose3d)
