"""Python's operators on Tensor: `a + b`, `a @ b`, `a == b`, `~a`. A binary dunder returns
NotImplemented for operand types torch does not take (so Python raises its own TypeError), and
the commonest ones, `+ - *` between two tensors of one dtype, skip the promoting path."""
import numbers

import numpy as np

from .. import dtypes
from ..autograd import _grad_mode
from ..tensor import Tensor, wrap
from . import compare

_OPERAND_TYPES = (Tensor, numbers.Number, np.number, np.bool_)
_BOOL = dtypes.bool_


def binary_operator(fn, reflected=False):
    """A binary dunder: NotImplemented for foreign operand types (so `t == None` is False and
    `t + "a"` raises Python's TypeError), else the op with the operands in the right order."""
    if reflected:
        return lambda self, other: fn(other, self) if isinstance(other, _OPERAND_TYPES) \
            else NotImplemented
    return lambda self, other: fn(self, other) if isinstance(other, _OPERAND_TYPES) \
        else NotImplemented


def fast_operator(function_class, slow_path):
    """`a op b` for two tensors of one dtype goes straight to the op's Function (the most
    common call in any model), or straight to the kernel when nothing is recorded (neither
    needs a gradient, or grad mode is off, as inside a backward); everything else takes the
    general promoting path. bool tensors always take the Function, which raises torch's
    error for `-` on them."""
    op = function_class.op

    def method(self, other):
        if isinstance(other, Tensor):
            data, other_data = self._data, other._data
            if other_data.dtype is data.dtype:
                if ((self.requires_grad or other.requires_grad) and _grad_mode.enabled
                        or data.dtype is _BOOL):
                    return function_class.apply(self, other)
                return wrap(data.binary(op, other_data))
        return slow_path(self, other) if isinstance(other, _OPERAND_TYPES) else NotImplemented
    return method


def invert(self):
    """`~t`: torch checks the dtype in Python before calling bitwise_not."""
    if self.dtype.is_floating_point:
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type "
                        "tensors")
    return compare.bitwise_not(self)
