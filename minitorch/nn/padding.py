"""Padding layers: constant (and zero), reflection, replication and circular, 1-D to 3-D, thin
wrappers over F.pad with torch's constructor arguments and reprs."""
import numbers

from . import functional as F
from .module import Module


def _expand_padding(padding, count):
    """An int padding repeats to `count` values; a sequence is taken as given."""
    if isinstance(padding, numbers.Integral):
        return (int(padding),) * count
    return tuple(padding)


class _PadNd(Module):
    _mode = "constant"
    _sides = 2                  # 2 amounts per padded axis: 1-D pads (left, right)

    def __init__(self, padding):
        super().__init__()
        self.padding = _expand_padding(padding, self._sides)

    def forward(self, input):
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self):
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value):
        super().__init__(padding)
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pads the last dim with a constant value, padding an int or (left, right)
    (torch.nn.ConstantPad1d)."""
    pass


class ConstantPad2d(_ConstantPadNd):
    """Pads the last 2 dims with a constant value, padding an int or (left, right, top, bottom)
    (torch.nn.ConstantPad2d)."""
    _sides = 4


class ConstantPad3d(_ConstantPadNd):
    """Pads the last 3 dims with a constant value, padding an int or a 6-tuple
    (torch.nn.ConstantPad3d)."""
    _sides = 6


class ZeroPad1d(ConstantPad1d):
    """Pads the last dim with zeros (torch.nn.ZeroPad1d)."""
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad2d(ConstantPad2d):
    """Pads the last 2 dims with zeros (torch.nn.ZeroPad2d)."""
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad3d(ConstantPad3d):
    """Pads the last 3 dims with zeros (torch.nn.ZeroPad3d)."""
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class _ReflectionPadNd(_PadNd):
    """The reflection pads' base (torch's _ReflectionPadNd)."""
    _mode = "reflect"


class _ReplicationPadNd(_PadNd):
    """The replication pads' base (torch's _ReplicationPadNd)."""
    _mode = "replicate"


class ReflectionPad1d(_ReflectionPadNd):
    """Pads the last dim with the reflection of the input, edge not repeated
    (torch.nn.ReflectionPad1d)."""


class ReflectionPad2d(_ReflectionPadNd):
    """Pads the last 2 dims with the reflection of the input, edge not repeated
    (torch.nn.ReflectionPad2d)."""
    _sides = 4


class ReflectionPad3d(_ReflectionPadNd):
    """Pads the last 3 dims with the reflection of the input, edge not repeated
    (torch.nn.ReflectionPad3d)."""
    _sides = 6


class ReplicationPad1d(_ReplicationPadNd):
    """Pads the last dim by repeating the edge value (torch.nn.ReplicationPad1d)."""


class ReplicationPad2d(_ReplicationPadNd):
    """Pads the last 2 dims by repeating the edge values (torch.nn.ReplicationPad2d)."""
    _sides = 4


class ReplicationPad3d(_ReplicationPadNd):
    """Pads the last 3 dims by repeating the edge values (torch.nn.ReplicationPad3d)."""
    _sides = 6


class _CircularPadNd(_PadNd):
    _mode = "circular"

    def forward(self, input):
        # torch's CircularPad checks the rank itself (F.pad's message is about pad sizes).
        dims = (self._sides // 2 + 1, self._sides // 2 + 2)
        if input.ndim not in dims:
            raise ValueError(f"expected {dims[0]}D or {dims[1]}D input (got {input.ndim}D input)")
        return super().forward(input)


class CircularPad1d(_CircularPadNd):
    """Pads the last dim by wrapping around: values from the opposite end
    (torch.nn.CircularPad1d)."""
    pass


class CircularPad2d(_CircularPadNd):
    """Pads the last 2 dims by wrapping around: values from the opposite ends
    (torch.nn.CircularPad2d)."""
    _sides = 4


class CircularPad3d(_CircularPadNd):
    """Pads the last 3 dims by wrapping around: values from the opposite ends
    (torch.nn.CircularPad3d)."""
    _sides = 6
