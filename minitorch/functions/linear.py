"""torch.nn.functional.linear as one node, Linear (input @ weightᵀ + bias, optionally followed by
relu: nn.Sequential's Linear → ReLU), and its gradients as one node, LinearBackward, both
computed on NDArrays."""
import math

from ..autograd import KernelFunction
from ..opcodes import ReduceOp
from ..tensor import wrap
from .elementwise import ReluBackward

__all__ = []   # nn/functional/linear_maps.py's linear runs these


def _row_shape(shape):
    """(rows, last): a (..., n) shape as a matrix, spelt out so that an empty batch or an
    empty last axis stays unambiguous (reshape(-1, 0) is not)."""
    return (math.prod(shape[:-1]), shape[-1])


def _as_rows(data):
    """An NDArray as the matrix _row_shape describes (itself when it is one already)."""
    return data if data.ndim == 2 else data.reshape(_row_shape(data.shape))


# torch's F.linear is addmm / mm on a matrix, a matmul reshaped back otherwise
_TORCH_NODES = {(True, True): "AddmmBackward0", (True, False): "MmBackward0",
                (False, True): "ViewBackward0", (False, False): "UnsafeViewBackward0"}


class Linear(KernelFunction):
    """relu?(input @ weight.T + bias) as one node and one GEMM: the bias and the relu are the
    GEMM's epilogue (no pass of their own; the same bits as the separate ops). Forward reads
    the transposed weight as a strided view (the GEMM packs it for free); backward masks g by
    the saved output when relu (ReluBackward) and computes the weight's gradient directly in
    the weight's own layout (gᵀ · input) rather than as the transpose of x.T @ g."""

    @staticmethod
    def forward(ctx, input, weight, bias, relu=False):
        data = input._data
        matrix = data.ndim == 2         # the usual (batch, features): no reshape either way
        out = _as_rows(data).matmul(weight._data.transpose(0, 1),
                                    bias=None if bias is None else bias._data, relu=relu)
        out = wrap(out if matrix else out.reshape(data.shape[:-1] + (weight._data.shape[0],)))
        ctx.save_for_backward(input if weight.requires_grad else None,
                              weight if input.requires_grad else None, out if relu else None)
        ctx.input_shape = data.shape
        ctx.node_name = "ReluBackward0" if relu else _TORCH_NODES[matrix, bias is not None]
        return out

    @staticmethod
    def backward(ctx, g):
        input, weight, out = ctx.saved_tensors
        if out is not None:
            g = ReluBackward.apply(g, out)
        return LinearBackward.apply(g, input, weight, tuple(ctx.needs_input_grad[:3]),
                                    ctx.input_shape) + (None,)


class LinearBackward(KernelFunction):
    """Linear's three gradients as one node computed on NDArrays (a training step runs it once
    per layer; as Tensor ops it was eight nodes): g·W, gᵀ·x and Σg over rows. Its backward,
    in Tensor ops, keeps double backward."""
    materialize_grads = False

    @staticmethod
    def forward(ctx, g, input, weight, needs, input_shape):
        ctx.save_for_backward(g, input, weight)
        ctx.input_shape = input_shape
        rows = _as_rows(g._data)
        grad_input = grad_weight = grad_bias = None
        if needs[0]:
            grad_input = rows.matmul(weight._data)
            grad_input = wrap(grad_input if len(input_shape) == 2 else
                              grad_input.reshape(input_shape))
        if needs[1]:
            grad_weight = wrap(rows.transpose(0, 1).matmul(_as_rows(input._data)))
        if needs[2]:
            grad_bias = wrap(rows.reduce(ReduceOp.SUM, (0,)))
        return grad_input, grad_weight, grad_bias

    @staticmethod
    def backward(ctx, gg_input, gg_weight, gg_bias):
        """The backward is linear in g; x and W enter one product each."""
        g, input, weight = ctx.saved_tensors
        rows = g.reshape(_row_shape(g.shape))
        grad_g = grad_input = grad_weight = None
        terms = []
        if gg_input is not None:
            gg_rows = gg_input.reshape(_row_shape(gg_input.shape))
            terms.append(gg_rows @ weight.mT)
            if ctx.needs_input_grad[2]:
                grad_weight = rows.mT @ gg_rows
        if gg_weight is not None:
            x = input.reshape(_row_shape(input.shape))
            terms.append(x @ gg_weight.mT)
            if ctx.needs_input_grad[1]:
                grad_input = (rows @ gg_weight).reshape(ctx.input_shape)
        if gg_bias is not None:
            terms.append(gg_bias.expand(rows.shape))
        if terms and ctx.needs_input_grad[0]:
            grad_g = sum(terms[1:], terms[0]).reshape(g.shape)
        return grad_g, grad_input, grad_weight, None, None
