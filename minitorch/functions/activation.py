"""The activations that are nodes of their own, computed on NDArrays: Hardtanh (a clamp whose
gradient is torch's, zero at the bounds) and LogSigmoid (overflow-free, exact gradient). The
rest of torch.nn.functional's activations compose other ops (nn/functional/activation.py)."""
from ..autograd import KernelFunction
from ..opcodes import BinaryOp, UnaryOp
from ..tensor import wrap
from .elementwise import scalar_array

__all__ = []   # nn/functional's hardtanh, logsigmoid and BCE-with-logits run these


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
