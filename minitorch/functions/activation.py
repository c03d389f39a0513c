"""The activations that are nodes of their own, computed on NDArrays: Hardtanh (a clamp whose
gradient is torch's, zero at the bounds), LogSigmoid (overflow-free, exact gradient), the
exact GELU (one kernel each way instead of five), LeakyRelu (one node each way instead of
three) and BinaryCrossEntropyWithLogits (its elementwise loss: one node instead of five).
The rest of torch.nn.functional's activations compose other ops
(nn/functional/activation.py)."""
import math

from ..autograd import KernelFunction
from ..opcodes import BinaryOp, UnaryOp
from ..tensor import wrap
from .elementwise import scalar_array, where

__all__ = []   # nn/functional's hardtanh, logsigmoid, gelu, leaky_relu, BCE-with-logits run these


class BinaryCrossEntropyWithLogits(KernelFunction):
    """The elementwise (1 - t)·x - log σ(x) of binary_cross_entropy_with_logits without weights
    (input and target of one float dtype and shape), computed with the composition's kernels
    (LogSigmoid's, then (1 - t)·x + its negation); its backward is torch's, g·(σ(x) - t) for
    the input and -g·x for the target, in Tensor ops."""

    @staticmethod
    def forward(ctx, input, target):
        x, t = input._data, target._data
        tail = x.unary(UnaryOp.ABS).unary(UnaryOp.NEG).unary(UnaryOp.EXP).unary(UnaryOp.LOG1P)
        log_sigmoid = x.binary(BinaryOp.MINIMUM, scalar_array(0.0, x.dtype, x.device)) \
            .binary(BinaryOp.SUB, tail)
        ctx.save_for_backward(input, target)
        return wrap(scalar_array(1, x.dtype, x.device).binary(BinaryOp.SUB, t)
                    .binary(BinaryOp.MUL, x).binary(BinaryOp.ADD, log_sigmoid.unary(UnaryOp.NEG)))

    @staticmethod
    def backward(ctx, g):
        x, t = ctx.saved_tensors
        return (g * (x.sigmoid() - t) if ctx.needs_input_grad[0] else None,
                -(g * x) if ctx.needs_input_grad[1] else None)


class LeakyRelu(KernelFunction):
    """where(x > 0, x, x·slope) as one node (float32/float64: the composition's kernels, so
    the same values); its backward where(x > 0, g, g·slope) in Tensor ops, the mask kept from
    the forward."""

    @staticmethod
    def forward(ctx, input, negative_slope):
        nd = input._data
        mask = nd.binary(BinaryOp.GT, scalar_array(0, nd.dtype, nd.device))
        ctx.mask, ctx.slope = mask, negative_slope
        scaled = nd.binary(BinaryOp.MUL, scalar_array(negative_slope, nd.dtype, nd.device))
        return wrap(mask.where(nd, scaled))

    @staticmethod
    def backward(ctx, g):
        return where(wrap(ctx.mask), g, g * ctx.slope), None


class Hardtanh(KernelFunction):
    """clamp(x, min_val, max_val) whose gradient passes strictly inside the range only (torch's
    rule: 0 at the bounds). The mask is read from the output, so the in-place form, which
    overwrites the input, still differentiates."""

    @staticmethod
    def forward(ctx, input, min_val, max_val):
        nd = input._data
        out = wrap(nd.binary(BinaryOp.MAXIMUM, scalar_array(min_val, nd.dtype, nd.device))
                   .binary(BinaryOp.MINIMUM, scalar_array(max_val, nd.dtype, nd.device)))
        ctx.save_for_backward(out)
        ctx.bounds = (min_val, max_val)
        return out

    @staticmethod
    def backward(ctx, g):
        out, = ctx.saved_tensors
        low, high = ctx.bounds
        inside = (out > low).logical_and(out < high)
        return g * inside.to(g.dtype), None, None


class LogSigmoid(KernelFunction):
    """log σ(x) = min(x, 0) − log1p(exp(−|x|)), which never overflows; the gradient σ(−x) is
    exact everywhere (the composed form would take a subgradient of |x| at 0)."""

    @staticmethod
    def forward(ctx, input):
        nd = input._data
        tail = nd.unary(UnaryOp.ABS).unary(UnaryOp.NEG).unary(UnaryOp.EXP).unary(UnaryOp.LOG1P)
        ctx.save_for_backward(input)
        zero = scalar_array(0.0, nd.dtype, nd.device)
        return wrap(nd.binary(BinaryOp.MINIMUM, zero).binary(BinaryOp.SUB, tail))

    @staticmethod
    def backward(ctx, g):
        input, = ctx.saved_tensors
        return g * (-input).sigmoid()


class Gelu(KernelFunction):
    """torch's exact GELU, x Φ(x), as one kernel; its gradient g (Φ(x) + x φ(x)) is
    GeluBackward, one kernel too."""

    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return wrap(input._data.unary(UnaryOp.GELU))

    @staticmethod
    def backward(ctx, g):
        input, = ctx.saved_tensors
        return GeluBackward.apply(g, input)


class GeluBackward(KernelFunction):
    """g (Φ(x) + x φ(x)) in one pass; differentiable again (d/dx of the slope is φ(x)(2 - x²))."""

    @staticmethod
    def forward(ctx, g, input):
        ctx.save_for_backward(g, input)
        return wrap(g._data.binary(BinaryOp.GELU_BACKWARD, input._data))

    @staticmethod
    def backward(ctx, gg):
        g, x = ctx.saved_tensors
        pdf = (x * x * -0.5).exp() * (1.0 / math.sqrt(2.0 * math.pi))
        grad_g = GeluBackward.apply(gg, x) if ctx.needs_input_grad[0] else None
        grad_x = gg * g * pdf * (2.0 - x * x) if ctx.needs_input_grad[1] else None
        return grad_g, grad_x
