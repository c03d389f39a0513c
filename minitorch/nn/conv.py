"""Conv1d/2d/3d, ConvTranspose1d/2d/3d: parameters and init as torch; the math is
nn.functional's."""
import math
import numbers

import minitorch as mt
from ..functions.conv import conv_relu
from . import functional as F, init
from .module import Module
from .parameter import Parameter


def _tuple(value, n):
    return (int(value),) * n if isinstance(value, numbers.Integral) else tuple(value)


class _ConvNd(Module):
    _dims = 2
    transposed = False

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", device=None, dtype=None,
                 output_padding=0):
        super().__init__()
        n = self._dims
        stride = _tuple(stride, n)
        self._check_args(in_channels, out_channels, groups, padding, stride, padding_mode)
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride = _tuple(kernel_size, n), stride
        self.padding = padding if isinstance(padding, str) else _tuple(padding, n)
        self.dilation, self.groups = _tuple(dilation, n), groups
        self.output_padding = _tuple(output_padding, n)
        self.padding_mode = padding_mode
        self._reversed_padding_repeated_twice = self._explicit_padding()
        shape = ((in_channels, out_channels // groups) if self.transposed else
                 (out_channels, in_channels // groups)) + self.kernel_size
        self.weight = Parameter(mt.empty(*shape, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(mt.empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    @staticmethod
    def _check_args(in_channels, out_channels, groups, padding, stride, padding_mode):
        """torch's constructor checks; its messages print these sets, built in its order."""
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups:
            raise ValueError("out_channels must be divisible by groups")
        valid_padding_strings = {"same", "valid"}
        if isinstance(padding, str):
            if padding not in valid_padding_strings:
                raise ValueError(f"Invalid padding string {padding!r}, should be one of "
                                 f"{valid_padding_strings}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        valid_padding_modes = {"zeros", "reflect", "replicate", "circular"}
        if padding_mode not in valid_padding_modes:
            raise ValueError(f"padding_mode must be one of {valid_padding_modes}, but got "
                             f"padding_mode='{padding_mode}'")

    def _explicit_padding(self):
        """F.pad amounts (last axis first) for the non-zero padding modes; 'same' puts any odd
        extra on the right, like the functional form."""
        if not isinstance(self.padding, str):
            return [p for p in reversed(self.padding) for _ in range(2)]
        pads = [0, 0] * self._dims
        if self.padding == "same":
            for i, (d, k) in enumerate(zip(reversed(self.dilation), reversed(self.kernel_size))):
                total = d * (k - 1)
                pads[2 * i], pads[2 * i + 1] = total // 2, total - total // 2
        return pads

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def _forward_relu(self, input):
        """relu(self(input)) with the bias add and the relu in one pass (nn.Sequential's
        convolution → ReLU)."""
        input, padding = self._padded_input(input)
        return conv_relu(self._dims, input, self.weight, self.bias, self.stride, padding,
                         self.dilation, self.groups)

    def _forward_relu_max_pool(self, pool, input):
        """pool(relu(self(input))) for a MaxPool2d `pool` (nn.Sequential's Conv2d → ReLU →
        MaxPool2d), the relu and the pool one node after the convolution (ReluMaxPool: no
        full-size relu output kept, its gradient pass made on the pooled size). A batched input
        only; otherwise the three run as two."""
        if input.dim() != 4:
            return pool(self._forward_relu(input))
        input, padding = self._padded_input(input)
        return conv_relu(self._dims, input, self.weight, self.bias, self.stride, padding,
                         self.dilation, self.groups, pool=pool._geometry_for)

    def _padded_input(self, input):
        """Non-zero padding modes pad explicitly, then convolve without padding."""
        if self.padding_mode == "zeros":
            return input, self.padding
        padded = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
        return padded, (0,) * self._dims

    def extra_repr(self):
        text = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}")
        if self.padding != (0,) * len(self.padding):
            text += f", padding={self.padding}"
        if self.dilation != (1,) * self._dims:
            text += f", dilation={self.dilation}"
        if self.output_padding != (0,) * self._dims:
            text += f", output_padding={self.output_padding}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias is None:
            text += ", bias=False"
        if self.padding_mode != "zeros":
            text += f", padding_mode={self.padding_mode}"
        return text


class Conv1d(_ConvNd):
    """Applies a 1-D convolution over an input of shape (N, C, L) or (C, L); torch.nn.Conv1d's
    arguments (padding_mode included) and initialisation."""
    _dims = 1

    def forward(self, input):
        input, padding = self._padded_input(input)
        return F.conv1d(input, self.weight, self.bias, self.stride, padding, self.dilation,
                        self.groups)


class Conv2d(_ConvNd):
    """Applies a 2-D convolution over an input of shape (N, C, H, W) or (C, H, W);
    torch.nn.Conv2d's arguments (padding_mode included) and initialisation."""
    def forward(self, input):
        input, padding = self._padded_input(input)
        return F.conv2d(input, self.weight, self.bias, self.stride, padding, self.dilation,
                        self.groups)


class Conv3d(_ConvNd):
    """Applies a 3-D convolution over an input of shape (N, C, D, H, W) or (C, D, H, W);
    torch.nn.Conv3d's arguments (padding_mode included) and initialisation."""
    _dims = 3

    def forward(self, input):
        input, padding = self._padded_input(input)
        return F.conv3d(input, self.weight, self.bias, self.stride, padding, self.dilation,
                        self.groups)


class _ConvTransposeNd(_ConvNd):
    transposed = True
    _functional = staticmethod(F.conv_transpose2d)

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 device=None, dtype=None):
        if padding_mode != "zeros":
            raise ValueError('Only "zeros" padding mode is supported for '
                             f"{type(self).__name__}")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups,
                         bias, padding_mode, device, dtype, output_padding)

    def forward(self, input, output_size=None):
        output_padding = self._output_padding(input, output_size)
        return self._functional(input, self.weight, self.bias, self.stride, self.padding,
                                output_padding, self.groups, self.dilation)

    def _output_padding(self, input, output_size):
        """The output_padding that makes the result `output_size` (torch's rule: any size from
        the minimal one up to stride - 1 more)."""
        if output_size is None:
            return self.output_padding
        spatial = self._dims
        leading = 2 if input.ndim == spatial + 2 else 1
        if len(output_size) == leading + spatial:
            output_size = output_size[leading:]
        if len(output_size) != spatial:
            raise ValueError(f"ConvTranspose{spatial}D: for {input.ndim}D input, output_size must "
                             f"have {spatial} or {leading + spatial} elements (got "
                             f"{len(output_size)})")
        min_sizes = [(input.shape[d + leading] - 1) * self.stride[d] - 2 * self.padding[d] +
                     self.dilation[d] * (self.kernel_size[d] - 1) + 1 for d in range(spatial)]
        max_sizes = [low + s - 1 for low, s in zip(min_sizes, self.stride)]
        for size, low, high in zip(output_size, min_sizes, max_sizes):
            if size < low or size > high:
                raise ValueError(f"requested an output size of {output_size}, but valid sizes "
                                 f"range from {min_sizes} to {max_sizes} (for an input of "
                                 f"{mt.Size(input.shape[2:])})")   # torch's [2:], batched or not
        return tuple(size - low for size, low in zip(output_size, min_sizes))


class ConvTranspose1d(_ConvTransposeNd):
    """Applies a 1-D transposed convolution (the gradient of Conv1d) over (N, C, L) or (C, L)
    input; torch.nn.ConvTranspose1d's arguments and initialisation."""
    _dims = 1
    _functional = staticmethod(F.conv_transpose1d)


class ConvTranspose2d(_ConvTransposeNd):
    """Applies a 2-D transposed convolution (the gradient of Conv2d) over (N, C, H, W) or (C,
    H, W) input; torch.nn.ConvTranspose2d's arguments and initialisation."""
    pass


class ConvTranspose3d(_ConvTransposeNd):
    """Applies a 3-D transposed convolution (the gradient of Conv3d) over (N, C, D, H, W) or
    (C, D, H, W) input; torch.nn.ConvTranspose3d's arguments and initialisation."""
    _dims = 3
    _functional = staticmethod(F.conv_transpose3d)
