"""torch.nn.functional's linear layers: linear (one Linear node, functions/linear.py) and
bilinear.
"""
import math

from ...functions.linear import Linear
from ...functions.autocast_policy import LOWER, autocast_op


@autocast_op(LOWER)
def linear(input, weight, bias=None):
    """torch.nn.functional.linear: input @ weight.T + bias."""
    return _linear(input, weight, bias, False)


@autocast_op(LOWER)
def linear_relu(input, weight, bias=None):
    """relu(linear(input, weight, bias)) as one node whose bias add and relu run in the GEMM's
    epilogue (same values as the two calls). Not a torch function: nn.Sequential runs a Linear
    followed by a ReLU through it (see Sequential.forward)."""
    return _linear(input, weight, bias, True)


def _linear(input, weight, bias, relu):
    if input.shape[-1] != weight.shape[-1]:
        rows = math.prod(input.shape[:-1]) if input.ndim > 1 else 1
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x{input.shape[-1]} "
                           f"and {weight.shape[1]}x{weight.shape[0]})")
    if input.ndim == 0 or weight.ndim != 2 or input.dtype is not weight.dtype or (
            bias is not None and bias.dtype is not weight.dtype) or \
            not input.dtype.is_floating_point:
        # the general path: integer products (exact, no GEMM kernel) and torch's errors for
        # odd cases
        out = input @ weight.mT
        out = out + bias if bias is not None else out
        return out.relu() if relu else out
    return Linear.apply(input, weight, bias, relu)


def bilinear(input1, input2, weight, bias=None):
    """y[..., o] = input1[..., i] · weight[o, i, j] · input2[..., j] + bias[o]: one GEMM of
    input1 with the weight laid out (i, o·j), then a product with input2 summed over j."""
    if input1.ndim != input2.ndim:
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.ndim} and "
                           f"{input2.ndim}")
    for dim in range(input1.ndim - 1):
        if input1.shape[dim] != input2.shape[dim]:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {dim}: "
                               f"got {input1.shape[dim]} and {input2.shape[dim]}")
    for name, x, dim in (("input1", input1, 1), ("input2", input2, 2)):
        if x.shape[-1] != weight.size(dim):
            raise RuntimeError(f"bilinear(): {name} size does not match weight size: got "
                               f"{x.shape[-1]} but expected {weight.size(dim)}")
    out, in1, in2 = weight.shape
    if bias is not None and bias.shape[0] != out:
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got "
                           f"{bias.shape[0]} but expected {out}")
    left = input1.matmul(weight.permute(1, 0, 2).reshape(in1, out * in2))
    result = (left.unflatten(-1, (out, in2)) * input2.unsqueeze(-2)).sum(-1)
    return result if bias is None else result + bias
