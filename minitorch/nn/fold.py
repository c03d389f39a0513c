"""Fold and Unfold (col2im / im2col as layers)."""
from . import functional as F
from .module import Module


def _geometry_repr(module):
    return (f"kernel_size={module.kernel_size}, dilation={module.dilation}, "
            f"padding={module.padding}, stride={module.stride}")


class Fold(Module):
    """Sums sliding-block columns (N, C * prod(kernel_size), L) back into an image of
    output_size, inverse layout of Unfold (torch.nn.Fold)."""
    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input):
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding,
                      self.stride)

    def extra_repr(self):
        return f"output_size={self.output_size}, " + _geometry_repr(self)


class Unfold(Module):
    """Extracts sliding blocks of (N, C, H, W) input as columns (N, C * prod(kernel_size), L)
    (torch.nn.Unfold)."""
    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size, self.dilation = kernel_size, dilation
        self.padding, self.stride = padding, stride

    def forward(self, input):
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return _geometry_repr(self)
