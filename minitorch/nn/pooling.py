"""MaxPool1d/2d/3d, AvgPool1d/2d/3d, AdaptiveAvgPool1d/2d/3d, AdaptiveMaxPool1d/2d/3d,
LPPool1d/2d/3d, MaxUnpool1d/2d/3d."""
from . import functional as F
from .functional.pooling import max_pool_geometry
from .module import Module


class _MaxPoolNd(Module):
    """The arguments every max pool keeps (torch's _MaxPoolNd: MaxPool1d, 2d and 3d are its
    siblings, none a subclass of another, so isinstance tells them apart as in torch)."""
    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False,
                 ceil_mode=False):
        super().__init__()
        self.kernel_size, self.stride = kernel_size, stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool2d(_MaxPoolNd):
    """2-D max pooling over (N, C, H, W) or (C, H, W) input (torch.nn.MaxPool2d)."""
    def forward(self, input):
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            self.ceil_mode, self.return_indices)

    def _geometry_for(self, input):
        """The PoolGeometry forward pools `input` with, checked as forward checks it (asked by
        nn.Sequential's convolution → ReLU → MaxPool2d, see Conv2d._forward_relu_max_pool)."""
        return max_pool_geometry("max_pool2d", input, self.kernel_size, self.stride,
                                 self.padding, self.dilation, self.ceil_mode)


class _AvgPoolNd(Module):
    """The arguments of the 2-d and 3-d average pools (AvgPool1d keeps tuples of its own), and
    the repr of all three (torch's _AvgPoolNd)."""
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True, divisor_override=None):
        super().__init__()
        self.kernel_size, self.stride = kernel_size, stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(_AvgPoolNd):
    """2-D average pooling over (N, C, H, W) or (C, H, W) input (torch.nn.AvgPool2d)."""
    def forward(self, input):
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)


class _AdaptiveAvgPoolNd(Module):
    """The output size every adaptive average pool keeps (torch's _AdaptiveAvgPoolNd)."""
    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def extra_repr(self):
        return f"output_size={self.output_size}"


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    """2-D average pooling to a fixed output size (torch.nn.AdaptiveAvgPool2d)."""
    def forward(self, input):
        return F.adaptive_avg_pool2d(input, self.output_size)


class MaxPool1d(_MaxPoolNd):
    """1-D max pooling over (N, C, L) or (C, L) input (torch.nn.MaxPool1d)."""
    def forward(self, input):
        return F.max_pool1d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            self.ceil_mode, self.return_indices)


def _single(value):
    """torch's _single: AvgPool1d stores its arguments as 1-tuples."""
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


class AvgPool1d(_AvgPoolNd):
    """1-D average pooling over (N, C, L) or (C, L) input (torch.nn.AvgPool1d)."""
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True):
        Module.__init__(self)       # torch's AvgPool1d has no divisor_override
        self.kernel_size = _single(kernel_size)
        self.stride = _single(stride if stride is not None else kernel_size)
        self.padding = _single(padding)
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad

    def forward(self, input):
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    """1-D average pooling to a fixed output length (torch.nn.AdaptiveAvgPool1d)."""
    def forward(self, input):
        return F.adaptive_avg_pool1d(input, self.output_size)


class _AdaptiveMaxPoolNd(Module):
    """What every adaptive max pool keeps (torch's _AdaptiveMaxPoolNd)."""
    def __init__(self, output_size, return_indices=False):
        super().__init__()
        self.output_size, self.return_indices = output_size, return_indices

    def extra_repr(self):
        return f"output_size={self.output_size}"


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    """2-D max pooling to a fixed output size, optionally returning indices
    (torch.nn.AdaptiveMaxPool2d)."""
    def forward(self, input):
        return F.adaptive_max_pool2d(input, self.output_size, self.return_indices)


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    """1-D max pooling to a fixed output length, optionally returning indices
    (torch.nn.AdaptiveMaxPool1d)."""
    def forward(self, input):
        return F.adaptive_max_pool1d(input, self.output_size, self.return_indices)


class _LPPoolNd(Module):
    """Power-average pooling: (sum over the window of x^p)^(1/p) (torch's _LPPoolNd)."""

    def __init__(self, norm_type, kernel_size, stride=None, ceil_mode=False):
        super().__init__()
        self.norm_type, self.kernel_size = norm_type, kernel_size
        self.stride, self.ceil_mode = stride, ceil_mode

    def extra_repr(self):
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPoolNd):
    """1-D power-average pooling (sum of x**p over each window)**(1/p) (torch.nn.LPPool1d)."""
    def forward(self, input):
        return F.lp_pool1d(input, self.norm_type, self.kernel_size, self.stride, self.ceil_mode)


class LPPool2d(_LPPoolNd):
    """2-D power-average pooling (sum of x**p over each window)**(1/p) (torch.nn.LPPool2d)."""
    def forward(self, input):
        return F.lp_pool2d(input, self.norm_type, self.kernel_size, self.stride, self.ceil_mode)


class LPPool3d(_LPPoolNd):
    """3-D power-average pooling (sum of x**p over each window)**(1/p) (torch.nn.LPPool3d)."""
    def forward(self, input):
        return F.lp_pool3d(input, self.norm_type, self.kernel_size, self.stride, self.ceil_mode)


class MaxPool3d(_MaxPoolNd):
    """3-D max pooling over (N, C, D, H, W) or (C, D, H, W) input (torch.nn.MaxPool3d)."""
    def forward(self, input):
        return F.max_pool3d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            self.ceil_mode, self.return_indices)


class AvgPool3d(_AvgPoolNd):
    """3-D average pooling over (N, C, D, H, W) or (C, D, H, W) input (torch.nn.AvgPool3d)."""
    def forward(self, input):
        return F.avg_pool3d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    """3-D average pooling to a fixed output size (torch.nn.AdaptiveAvgPool3d)."""
    def forward(self, input):
        return F.adaptive_avg_pool3d(input, self.output_size)


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    """3-D max pooling to a fixed output size, optionally returning indices
    (torch.nn.AdaptiveMaxPool3d)."""
    def forward(self, input):
        return F.adaptive_max_pool3d(input, self.output_size, self.return_indices)


class _MaxUnpoolNd(Module):
    """The inverse of a max pool, given its indices; torch stores the arguments as tuples."""
    _dims = 2

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        self.kernel_size = F._ntuple(kernel_size, self._dims)
        self.stride = F._ntuple(stride if stride is not None else kernel_size, self._dims)
        self.padding = F._ntuple(padding, self._dims)

    def forward(self, input, indices, output_size=None):
        unpool = getattr(F, f"max_unpool{self._dims}d")
        return unpool(input, indices, self.kernel_size, self.stride, self.padding, output_size)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """Partial inverse of MaxPool1d: scatters values to the indices it returned, zeros
    elsewhere (torch.nn.MaxUnpool1d)."""
    _dims = 1


class MaxUnpool2d(_MaxUnpoolNd):
    """Partial inverse of MaxPool2d: scatters values to the indices it returned, zeros
    elsewhere (torch.nn.MaxUnpool2d)."""
    pass


class MaxUnpool3d(_MaxUnpoolNd):
    """Partial inverse of MaxPool3d: scatters values to the indices it returned, zeros
    elsewhere (torch.nn.MaxUnpool3d)."""
    _dims = 3
