"""torch.nn.modules' layout, for code that imports from it (`from torch.nn.modules.batchnorm
import _BatchNorm`, `from torch.nn.modules.utils import _pair`, `torch.nn.modules.conv.Conv2d`):
every layer class of minitorch.nn, and torch's submodule names. A torch submodule that matches
one of minitorch.nn's files is that file, registered under the torch name as well; those that
gather classes from several files (batchnorm, conv, flatten, instancenorm, linear,
normalization, pooling) or have no counterpart (utils) are small modules of this package."""
import sys

from .. import (activation, adaptive, channelshuffle, containers, distance,  # noqa: F401
                dropout, fold, lazy, loss, module, padding, pixelshuffle, rnn, sparse,
                transformer, upsampling)
from . import (batchnorm, conv, flatten, instancenorm, linear, normalization,  # noqa: F401
               pooling, utils)

container = containers      # torch's singular name

for _name in ("activation", "adaptive", "channelshuffle", "container", "distance", "dropout",
              "fold", "lazy", "loss", "module", "padding", "pixelshuffle", "rnn", "sparse",
              "transformer", "upsampling"):
    sys.modules[f"{__name__}.{_name}"] = globals()[_name]

# torch.nn.modules also exports every layer class (`from torch.nn.modules import Linear`)
globals().update({_name: _value for _name, _value in vars(sys.modules[__package__.rpartition(
    ".")[0]]).items() if isinstance(_value, type) and issubclass(_value, module.Module)})
