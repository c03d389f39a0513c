"""Python's operators on Tensor: `a + b`, `a @ b`, `a == b`, `~a`. A binary dunder returns
NotImplemented for operand types torch does not take (so Python raises its own TypeError), and
the commonest ones, `+ - *` between two tensors of one dtype, skip the promoting path. A numpy
array operand takes torch's route (functions/interop.py) where torch takes one: `t + ndarray`
as numpy's ufunc would type it, `t == ndarray` as two tensors; `ndarray + t` and `t < ndarray`
are TypeErrors, as in torch."""
import numbers

import numpy as np

from .. import dtypes
from ..autograd import _grad_mode
from ..tensor import Tensor, wrap
from . import compare, elementwise, interop

_OPERAND_TYPES = (Tensor, numbers.Number, np.number, np.bool_)
_NUMBERS = (float, int)     # Python numbers (bool aside) that a floating tensor never promotes
_BOOL = dtypes.bool_
_profiling = False      # set by autograd/profiler.py while a profile records


def binary_operator(fn, reflected=False, ufunc=None, ndarray=None):
    """A binary dunder: NotImplemented for foreign operand types (so `t == None` is False and
    `t + "a"` raises Python's TypeError), else the op with the operands in the right order.
    A numpy array operand goes to `ndarray(self, array)`, or to numpy's typing of `ufunc`
    (interop.with_ndarray); with neither it is foreign too."""
    on_ndarray = _ndarray_rule(fn, ufunc, ndarray)
    if reflected:
        def method(self, other):
            if isinstance(other, _OPERAND_TYPES):
                return fn(other, self)
            return _foreign(self, other, on_ndarray)
    else:
        def method(self, other):
            if isinstance(other, _OPERAND_TYPES):
                return fn(self, other)
            return _foreign(self, other, on_ndarray)
    return method


def _ndarray_rule(fn, ufunc, ndarray):
    if ndarray is None and ufunc is not None:
        return lambda self, array: interop.with_ndarray(fn, ufunc, self, array)
    return ndarray


def _foreign(self, other, on_ndarray):
    if on_ndarray is not None and isinstance(other, np.ndarray):
        return on_ndarray(self, other)
    return NotImplemented


def comparison_operator(fn):
    """`==` / `!=`: a numpy array operand is taken as a tensor (torch's `t == ndarray`)."""
    return binary_operator(fn, ndarray=lambda self, array: interop.compare_with_ndarray(
        fn, self, array))


def fast_operator(function_class, slow_path, ufunc=None, floating=False):
    """`a op b` for two tensors of one dtype goes straight to the op's Function (the most
    common call in any model), or straight to the kernel when nothing is recorded (neither
    needs a gradient, or grad mode is off, as inside a backward); everything else takes the
    general promoting path. bool tensors always take the Function, which raises torch's
    error for `-` on them. `floating`: only floating dtypes go straight (true division
    promotes integers)."""
    op = function_class.op
    record = function_class.apply_recording
    on_ndarray = _ndarray_rule(slow_path, ufunc, None)

    def method(self, other):
        if isinstance(other, Tensor):
            data, other_data = self._data, other._data
            if other_data.dtype is data.dtype and (not floating or
                                                    data.dtype.is_floating_point):
                if (self.requires_grad or other.requires_grad) and _grad_mode.enabled:
                    return record(self, other)
                if data.dtype is _BOOL or _profiling:   # (the profiler records apply)
                    return function_class.apply(self, other)
                return wrap(data.binary(op, other_data))
        elif type(other) in _NUMBERS and self._data.dtype.is_floating_point:
            return elementwise.number_apply(function_class, self, other)
        if isinstance(other, _OPERAND_TYPES):
            return slow_path(self, other)
        return _foreign(self, other, on_ndarray)
    return method


def number_operator(function_class, general, reflected=False):
    """A dunder whose Python int / float operand, with a floating tensor, goes straight to
    `function_class` (elementwise.number_apply: `x / 2.0`, `0.5 * x`, `1.0 - x`); any other
    operand takes `general`, the binary_operator of the op's function."""
    def method(self, other):
        if type(other) in _NUMBERS and self._data.dtype.is_floating_point:
            return elementwise.number_apply(function_class, self, other, reflected)
        return general(self, other)
    return method


def inplace_operator(method):
    """`t += x`: with a numpy array x, NotImplemented, so Python falls back to `t = t + x`
    (torch's in-place dunders refuse an ndarray that way)."""
    def dunder(self, other):
        return NotImplemented if isinstance(other, np.ndarray) else method(self, other)
    return dunder


def invert(self):
    """`~t`: torch checks the dtype in Python before calling bitwise_not."""
    if self.dtype.is_floating_point:
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type "
                        "tensors")
    return compare.bitwise_not(self)
