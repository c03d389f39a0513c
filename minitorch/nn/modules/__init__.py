"""torch.nn.modules' layout for code that imports from it (`torch.nn.modules.module`,
`torch.nn.modules.conv.Conv2d`, the global hooks in `torch.nn.modules.module`): the same
modules as minitorch.nn's files, under torch's names."""
from .. import (activation, containers, conv, distance, dropout, fold, lazy, linear, loss,  # noqa
                module, normalization, padding, pixelshuffle, pooling, rnn, sparse,
                transformer, upsampling)
from ..channelshuffle import ChannelShuffle  # noqa: F401
