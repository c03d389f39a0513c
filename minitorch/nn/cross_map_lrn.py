"""CrossMapLRN2d (torch.nn.CrossMapLRN2d): Lua torch's local response normalization across
channels, with the autograd Function that computes it.

torch keeps this legacy implementation's exact arithmetic, quirks included, and so do we:
- forward: channel c is divided by (k + alpha/size · s_c)^beta, where s_c sums the squares of
  channels c-p+1 … c+p-1 (p = int((size-1)/2 + 1)) and, from channel p on, channel 0 once more
  (Lua's running sum never subtracts it);
- backward: its own formula, whose window is shifted by one channel from the forward's, so it is
  not the exact gradient of the forward (torch's own gradcheck of it fails for C > 1).
Both run as window sums over channels (unfold) rather than Lua's channel-by-channel loops.
"""
import minitorch as mt

from ..autograd import Function
from ..functions.elementwise import TORCH_NAMES
from ..ndarray import shape_str
from .module import Module


def _window_sums(x, before, width):
    """Sums of `width` consecutive channels of (N, C, H, W) x, after `before` zero channels
    are put in front (and zeros after, so that there are C windows)."""
    n, _, h, w = x.shape
    after = width - 1 - before
    padded = mt.cat([x.new_zeros(n, before, h, w), x, x.new_zeros(n, after, h, w)], dim=1)
    return padded.unfold(1, width, 1).sum(-1)


def _check_input(input, size):
    """torch's failures, raised where its Lua-style loops raise them."""
    if input.dim() != 4:
        raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D instead.")
    if input.shape[1] == 0:
        raise IndexError(f"select(): index 0 out of range for tensor of size "
                         f"{shape_str(input.shape)} at dimension 1")
    if not input.dtype.is_floating_point:
        # torch's first cast failure: pow(bool, 2) is Long, scaling an integer square is Float
        result = "Long" if input.dtype is mt.bool else "Float"
        raise RuntimeError(f"result type {result} can't be cast to the desired output type "
                           f"{TORCH_NAMES[input.dtype.name]}")
    if size < 0:
        # torch runs its loops with a negative window and fails only in backward; refuse early
        raise ValueError(f"CrossMapLRN2d: size must be non-negative, got {size}")


class _CrossMapLRN2dFunction(Function):
    """The forward and torch's hand-written backward of CrossMapLRN2d."""

    @classmethod
    def name(cls):
        return "CrossMapLRN2dBackward"      # torch's node name (its Function is CrossMapLRN2d)

    @staticmethod
    def forward(ctx, input, size, alpha=1e-4, beta=0.75, k=1):
        _check_input(input, size)
        ctx.size, ctx.alpha, ctx.beta, ctx.k = size, alpha, beta, k
        factor = alpha / size       # size 0: ZeroDivisionError, as in torch
        channels = input.shape[1]
        square = input * input
        pre_pad = int((size - 1) / 2 + 1)
        sums = _window_sums(square, pre_pad - 1, 2 * pre_pad - 1)
        late = (mt.arange(channels, device=input.device) >= pre_pad).reshape(1, channels, 1, 1)
        sums = sums + square[:, :1] * late      # channel 0, never taken out of the running sum
        ctx.scale = sums * factor + k
        output = ctx.scale.pow(-beta) * input
        ctx.save_for_backward(input, output)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        input, output = ctx.saved_tensors
        size, channels = ctx.size, input.shape[1]
        before = int(size - (size - 1) / 2)
        if before + channels > channels + size - 1:     # size 1: torch's narrow fails here
            raise RuntimeError(f"start ({before}) + length ({channels}) exceeds dimension size "
                               f"({channels + size - 1}).")
        grad_input = ctx.scale.pow(-ctx.beta) * grad_output
        ratio = grad_output * output / ctx.scale
        accum = _window_sums(ratio, before, size)
        cache = 2 * ctx.alpha * ctx.beta / size
        return grad_input - cache * input * accum, None, None, None, None


class CrossMapLRN2d(Module):
    """Local response normalization across channels of (N, C, H, W) input, torch's legacy
    (Lua) arithmetic (torch.nn.CrossMapLRN2d)."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        return _CrossMapLRN2dFunction.apply(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
