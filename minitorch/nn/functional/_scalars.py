"""Scalars as 0-d operands of a given tensor's dtype and device (as a Tensor for the composed
functional code, as an NDArray for kernel calls), shared by the activation, loss and attention
families."""
from ...functions.elementwise import scalar_array
from ...tensor import wrap


def _constant(value, like):
    return wrap(scalar_array(value, like.dtype, like.device))


def _scalar(value, nd):
    """A 0-d NDArray of nd's dtype and device (a kernel operand)."""
    return scalar_array(value, nd.dtype, nd.device)
