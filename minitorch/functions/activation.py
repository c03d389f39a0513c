"""The activations that are nodes of their own, computed on NDArrays: Hardtanh (a clamp whose
gradient is torch's, zero at the bounds), LogSigmoid (overflow-free, exact gradient), the
exact GELU and SiLU (one kernel each way instead of five and two), LeakyRelu (one kernel
forward and two backward, instead of three and two), BinaryCrossEntropyWithLogits (its
elementwise loss: one node instead of five) and SmoothL1 (smooth_l1_loss's, instead of eight
ops). The rest of torch.nn.functional's activations
compose other ops (nn/functional/activation.py)."""
import math

from ..autograd import KernelFunction
from ..opcodes import BinaryOp, UnaryOp
from ..tensor import wrap
from .elementwise import scalar_array, where

# nn/functional's hardtanh, logsigmoid, gelu, silu, leaky_relu, BCE-with-logits and smooth_l1
# run these
__all__ = []


class BinaryCrossEntropyWithLogits(KernelFunction):
    """The elementwise (1 - t)·x - log σ(x) of binary_cross_entropy_with_logits without weights
    (input and target of one float dtype and shape), computed with the composition's kernels
    (LogSigmoid's, then (1 - t)·x + its negation); its backward is torch's, g·(σ(x) - t) for
    the input and -g·x for the target, in Tensor ops."""

    @staticmethod
    def forward(ctx, input, target):
        x, t = input._data, target._data
        ctx.save_for_backward(input, target)
        return wrap(scalar_array(1, x.dtype, x.device).binary(BinaryOp.SUB, t).binary(
            BinaryOp.MUL, x).binary(BinaryOp.ADD, _log_sigmoid(x).unary(UnaryOp.NEG)))

    @staticmethod
    def backward(ctx, g):
        x, t = ctx.saved_tensors
        return (g * (x.sigmoid() - t) if ctx.needs_input_grad[0] else None,
                -(g * x) if ctx.needs_input_grad[1] else None)


class SmoothL1(KernelFunction):
    """smooth_l1_loss's elementwise loss with reduction 'none' (input and target float32 or
    float64 of one shape, beta > 0) as one node instead of eight ops: forward torch's kernel's
    operations, z = |input - target|, z < beta ? 0.5·z·z / beta : z - 0.5·beta (its bits);
    backward SmoothL1Backward."""
    node_name = "SmoothL1LossBackward0"

    @staticmethod
    def forward(ctx, input, target, beta):
        a = input._data
        dtype, device = a.dtype, a.device
        ctx.save_for_backward(input, target)
        ctx.beta = beta
        diff = a.binary(BinaryOp.SUB, target._data).unary(UnaryOp.ABS)
        inside = diff.binary(BinaryOp.LT, scalar_array(beta, dtype, device))
        square = diff.binary(BinaryOp.MUL, scalar_array(0.5, dtype, device)).binary(
            BinaryOp.MUL, diff).binary(BinaryOp.DIV, scalar_array(beta, dtype, device))
        return wrap(inside.where(square, diff.binary(BinaryOp.SUB,
                                                     scalar_array(0.5 * beta, dtype, device))))

    @staticmethod
    def backward(ctx, g):
        input, target = ctx.saved_tensors
        grad = SmoothL1Backward.apply(g, input, target, ctx.beta)
        needs = ctx.needs_input_grad
        return grad if needs[0] else None, -grad if needs[1] else None, None


class SmoothL1Backward(KernelFunction):
    """SmoothL1's input gradient by the formula of torch's smooth_l1_loss_backward, on the
    NDArrays: -g where x <= -beta, g where x >= beta, x·g / beta between (x = input - target).
    Linear in g; its own backward, in Tensor ops, keeps double backward."""

    @staticmethod
    def forward(ctx, g, input, target, beta):
        ctx.save_for_backward(g, input, target)
        ctx.beta = beta
        x, grad = input._data.binary(BinaryOp.SUB, target._data), g._data
        dtype, device = x.dtype, x.device
        inner = x.binary(BinaryOp.MUL, grad).binary(BinaryOp.DIV,
                                                     scalar_array(beta, dtype, device))
        above = x.binary(BinaryOp.GE, scalar_array(beta, dtype, device)).where(grad, inner)
        below = x.binary(BinaryOp.LE, scalar_array(-beta, dtype, device))
        return wrap(below.where(grad.unary(UnaryOp.NEG), above))

    @staticmethod
    def backward(ctx, gg):
        g, input, target = ctx.saved_tensors
        beta = ctx.beta
        needs = ctx.needs_input_grad
        grad_g = SmoothL1Backward.apply(gg, input, target, beta) if needs[0] else None
        grad_input = grad_target = None
        if needs[1] or needs[2]:      # x·g / beta inside: g / beta per unit of x, else 0
            x = input - target
            inside = (x > -beta) & (x < beta)
            zero = wrap(scalar_array(0, gg.dtype, gg.device))
            grad_x = where(inside, gg * g / beta, zero)
            grad_input = grad_x if needs[1] else None
            grad_target = -grad_x if needs[2] else None
        return grad_g, grad_input, grad_target, None


class LeakyRelu(KernelFunction):
    """x if x > 0 else x·slope as one kernel (float32/float64; the slope a broadcast scalar
    operand); its backward g·(1 if x > 0 else slope), the factor one more kernel. With a slope
    >= 0 the output has x's sign, so the factor is read from it and the in-place form
    (leaky_relu_, which overwrites x) still differentiates."""

    @staticmethod
    def forward(ctx, input, negative_slope):
        nd = input._data
        out = wrap(nd.binary(BinaryOp.LEAKY_RELU, scalar_array(negative_slope, nd.dtype,
                                                                nd.device)))
        ctx.save_for_backward(out if negative_slope >= 0 else input)
        ctx.slope = negative_slope
        return out

    @staticmethod
    def backward(ctx, g):
        signed, = ctx.saved_tensors
        nd = signed._data
        factor = wrap(nd.binary(BinaryOp.LEAKY_RELU_SLOPE,
                                scalar_array(ctx.slope, nd.dtype, nd.device)))
        return g * factor, None


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
        ctx.save_for_backward(input)
        return wrap(_log_sigmoid(input._data))

    @staticmethod
    def backward(ctx, g):
        input, = ctx.saved_tensors
        return g * (-input).sigmoid()


def _log_sigmoid(nd):
    """min(x, 0) − log1p(exp(−|x|)) on an NDArray (LogSigmoid's and BCE-with-logits' kernels)."""
    tail = nd.unary(UnaryOp.ABS).unary(UnaryOp.NEG).unary(UnaryOp.EXP).unary(UnaryOp.LOG1P)
    return nd.binary(BinaryOp.MINIMUM, scalar_array(0.0, nd.dtype, nd.device)) \
        .binary(BinaryOp.SUB, tail)


class _SlopeBackward(KernelFunction):
    """g · f'(x) in one pass (`op`, a binary kernel of g and the input x); differentiable again
    through `curvature`, f''(x) as Tensor ops."""
    op = None

    @classmethod
    def forward(cls, ctx, g, input):
        ctx.save_for_backward(g, input)
        return wrap(g._data.binary(cls.op, input._data))

    @classmethod
    def backward(cls, ctx, gg):
        g, x = ctx.saved_tensors
        grad_g = cls.apply(gg, x) if ctx.needs_input_grad[0] else None
        grad_x = gg * g * cls.curvature(x) if ctx.needs_input_grad[1] else None
        return grad_g, grad_x


class _FusedActivation(KernelFunction):
    """f(x) as one unary kernel (`op`) whose gradient is its `slope` node, one kernel too."""
    op = slope = None

    @classmethod
    def forward(cls, ctx, input):
        ctx.save_for_backward(input)
        return wrap(input._data.unary(cls.op))

    @classmethod
    def backward(cls, ctx, g):
        input, = ctx.saved_tensors
        return cls.slope.apply(g, input)


class GeluBackward(_SlopeBackward):
    """g (Φ(x) + x φ(x)); the slope's derivative is φ(x) (2 - x²)."""
    op = BinaryOp.GELU_BACKWARD

    @staticmethod
    def curvature(x):
        return (x * x * -0.5).exp() * (1.0 / math.sqrt(2.0 * math.pi)) * (2.0 - x * x)


class Gelu(_FusedActivation):
    """torch's exact GELU, x Φ(x), one kernel each way (five composed)."""
    op, slope = UnaryOp.GELU, GeluBackward


class SiluBackward(_SlopeBackward):
    """g s (1 + x (1 - s)), s = σ(x); the slope's derivative is s (1 - s) (2 + x (1 - 2 s))."""
    op = BinaryOp.SILU_BACKWARD

    @staticmethod
    def curvature(x):
        s = x.sigmoid()
        return s * (1.0 - s) * (2.0 + x * (1.0 - 2.0 * s))


class Silu(_FusedActivation):
    """SiLU x / (1 + e^-x), torch's formula, one kernel each way (x·σ(x) is two kernels,
    rounded differently)."""
    op, slope = UnaryOp.SILU, SiluBackward
