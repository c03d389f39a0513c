"""In-place ops: how `x.op_(...)` computes, writes into x's memory and takes x's place in the
graph (`inplace`), in-place views (`x.t_()`), the one-kernel fast path for `x += y` that
optimizer steps are made of, and the in-place fills and copies (`fill_`, `zero_`, `copy_`).
tensor_methods.py puts them on Tensor."""
import numbers

import numpy as np

from .. import dtypes
from ..autograd import _grad_mode
from ..ndarray import broadcast_shapes
from ..opcodes import BinaryOp
from ..tensor import Tensor, tensor, wrap
from . import elementwise as E
from . import movement as M


def inplace(fn, saves_input=True):
    """torch's `x.op_(...)`: compute out of place, write the result into x's memory, and make x
    the op's output in the graph (its old history becomes the op's input). `saves_input`
    False: the op's backward never reads x's values (add, sub), so x needs no copy."""
    def method(self, *args, **kwargs):
        check_no_overlap(self)
        check_no_partial_overlap(self, args)
        self._check_inplace()
        source = self
        if saves_input and _grad_mode.enabled and (self.requires_grad or any(
                getattr(a, "requires_grad", False) for a in args + tuple(kwargs.values()))):
            # The op may save its input for backward (sin_, log_, mul_ by a weight): give it a
            # copy, since self is about to be overwritten (torch keeps the original too).
            source = self.clone()
        result = fn(source, *args, **kwargs)
        return self._assign_result(result)
    method.__name__ = fn.__name__ + "_"
    return method


def check_no_overlap(t):
    """torch refuses in-place writes into a tensor whose elements share memory (an expand):
    the result would depend on the order of the writes."""
    nd = t._data
    if any(stride == 0 and size > 1 for size, stride in zip(nd.shape, nd.strides)):
        raise RuntimeError("unsupported operation: more than one element of the written-to "
                           "tensor refers to a single memory location. Please clone() the tensor "
                           "before performing the operation.")


def check_no_partial_overlap(t, operands):
    """torch refuses an in-place op whose operand lies partly over the written memory (x[1:]
    -= x[:-1]): the result would depend on the order of the writes. The same memory exactly
    (x += x) is fine, and so are layouts torch does not judge (not dense)."""
    out = t._data
    for operand in operands:
        if not isinstance(operand, Tensor) or operand._data.buffer is not out.buffer:
            continue
        data = operand._data
        if not (out.is_compact() and data.is_compact()) or not out.size or not data.size:
            continue
        same = data.offset == out.offset and data.size == out.size
        if not same and data.offset < out.offset + out.size and out.offset < data.offset + \
                data.size:
            raise RuntimeError("unsupported operation: some elements of the input tensor and "
                               "the written-to tensor refer to a single memory location. Please "
                               "clone() the tensor before performing the operation.")


def assign_result(self, result):
    """Write an out-of-place result into self (an in-place op) and make self its output in the
    graph; through a view, the storage owner's graph is updated too (CopySlices)."""
    if (result.dtype.is_floating_point and not self.dtype.is_floating_point) or (
            self.dtype is dtypes.bool_ and result.dtype is not dtypes.bool_):
        raise RuntimeError(f"result type {E.TORCH_NAMES[result.dtype.name]} can't be cast to "
                           f"the desired output type {E.TORCH_NAMES[self.dtype.name]}")
    if result.shape != self.shape:
        raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the broadcast "
                           f"shape {list(result.shape)}")
    if _grad_mode.enabled and self.requires_grad and not result.requires_grad:
        # the new values do not depend on the old ones (copy_ of a constant, eq_, ...): torch
        # keeps self in the graph, with no gradient reaching its old history
        everywhere = wrap(E.scalar_array(True, dtypes.bool_, self.device))
        result = E.where(everywhere, result, self)
    self._data.assign(result._data)
    self._bump_version()
    if _grad_mode.enabled:
        if result.requires_grad:
            self.requires_grad = True
            self.grad_fn = result.grad_fn
            self._output_nr = result._output_nr
            self._view_version = self._version[0]
        base = self._base
        if base is not None and base._version is self._version and (
                base.requires_grad or result.requires_grad):
            M.rebase_view_write(base, self, result)
    return self


def inplace_view(fn):
    """torch's `x.t_()`, `x.squeeze_()`, …: x itself takes the view's shape and strides (the
    storage stays) and, while recording, the view's place in the graph. Like torch, it counts as
    an in-place op: saved copies of x are invalidated."""
    def method(self, *args, **kwargs):
        self._check_inplace()
        view = fn(self, *args, **kwargs)
        self._data = view._data
        self._bump_version()
        if view.requires_grad:
            self.grad_fn, self._output_nr = view.grad_fn, view._output_nr
            self._view_version = self._version[0]
        return self
    method.__name__ = fn.__name__ + "_"
    return method


def castable_first(fn):
    """An in-place bitwise op: torch checks that the promoted result type can be written into
    self before it looks for a kernel (`int_t &= 2.5` is a cast error, not a missing kernel)."""
    def checked(self, other):
        dtype = E.result_type(self, other)
        if dtype.is_floating_point and not self.dtype.is_floating_point:
            raise RuntimeError(f"result type {E.TORCH_NAMES[dtype.name]} can't be cast to the "
                               f"desired output type {E.TORCH_NAMES[self.dtype.name]}")
        return fn(self, other)
    checked.__name__ = fn.__name__
    return checked


def keeping_dtype(fn):
    """An op whose bool result an in-place form casts back to self's dtype (torch's `x.eq_(y)`
    and `x.logical_and_(y)` keep x's dtype, float or not)."""
    return lambda self, *args: E.cast(fn(self, *args), self.dtype)


def float_power_(self, exponent):
    """torch refuses to compute float_power_ (a float64 op) into anything but float64."""
    if self.dtype is not dtypes.float64:
        raise RuntimeError("the base given to float_power_ has dtype "
                           f"{E.TORCH_NAMES[self.dtype.name]} but the operation's result "
                           "requires dtype Double")
    return inplace(E.float_power)(self, exponent)


def _direct_inplace(self, other, opcode):
    """`self op= other` computed by one kernel writing straight into self's memory (instead of
    a new buffer and a copy back: optimizer steps are made of these), or for a strided view of
    a tensor (`x[:, 1] -= 1`) one kernel into a scratch buffer and one strided write. Applies
    only when nothing is being recorded and the result keeps self's shape and dtype; returns
    False so the general path runs (and raises torch's errors) otherwise."""
    if _grad_mode.enabled and (self.requires_grad or getattr(other, "requires_grad", False) or
                               getattr(self, "_no_grad_view", False)):
        return False
    nd = self._data
    if not (nd.dtype.is_floating_point or _exact_integer_op(nd.dtype, opcode, other)) or \
            nd.dtype.compute is not nd.dtype:
        return False
    compact = nd.is_compact()
    if not compact and any(stride == 0 and size > 1 for size, stride in zip(nd.shape,
                                                                            nd.strides)):
        return False
    if isinstance(other, Tensor):
        operand = other._data
        if operand.dtype is not nd.dtype or operand.device is not nd.device:
            return False
        if operand.buffer is nd.buffer and (operand.strides, operand.offset, operand.shape) != (
                nd.strides, nd.offset, nd.shape):
            return False     # a shifted view of self would be read after being overwritten
    elif isinstance(other, (numbers.Number, np.number)) and not isinstance(other, bool):
        operand = E.scalar_array(other, nd.dtype, nd.device)
    else:
        return False
    if operand.shape != nd.shape:
        if broadcast_shapes(nd.shape, operand.shape) != nd.shape:
            return False
        operand = operand.expand(nd.shape)
    if nd.size:
        out = nd.flat() if compact else nd.backend.empty(nd.size, nd.dtype.storage)
        nd.backend.binary(opcode, nd.buffer, operand.buffer, out, nd.shape, nd.strides,
                          nd.offset, operand.strides, operand.offset)
        if not compact:
            nd.backend.strided_set(out, nd.buffer, nd.shape, nd.strides, nd.offset)
    self._bump_version()
    return True


def _exact_integer_op(dtype, opcode, other):
    """int64 += / -= / *= an int64 tensor or a Python int in int64's range: the result keeps
    the dtype, so the direct kernel applies (a batch norm's num_batches_tracked.add_(1)); a
    float operand or division promotes, and the general path raises torch's error."""
    if dtype is not dtypes.int64 or opcode not in _INTEGER_KEEPING:
        return False
    if isinstance(other, Tensor):
        return True                 # its dtype is compared with self's by the caller
    return isinstance(other, numbers.Integral) and not isinstance(other, bool) and \
        -2 ** 63 <= other < 2 ** 63


_INTEGER_KEEPING = (BinaryOp.ADD, BinaryOp.SUB, BinaryOp.MUL)


def fast_inplace(opcode, general, scaled):
    """add_/sub_ (with alpha) and mul_/div_: the direct kernel when possible, else `general`."""
    if scaled:
        def method(self, other, *, alpha=1):
            operand = other if alpha == 1 else other * alpha
            if _direct_inplace(self, operand, opcode):
                return self
            return general(self, other, alpha=alpha)
    else:
        def method(self, other, **kwargs):
            if not kwargs and _direct_inplace(self, other, opcode):
                return self
            return general(self, other, **kwargs)
    return method


def fill_(self, value):
    """Every element := value. Inside a recorded graph the value is written as an op result
    (its old history then gets no gradient, see _assign_result); otherwise it is a plain fill
    of the memory."""
    self._check_inplace()
    if self.requires_grad and _grad_mode.enabled:
        return self._assign_result(M.expand(_scalar_like(value, self), *self.shape))
    self._data.assign(value._data.astype(self.dtype) if isinstance(value, Tensor) else value)
    self._bump_version()
    return self


def zero_(self):
    return fill_(self, 0)


def copy_(self, src, non_blocking=False):
    check_no_overlap(self)
    self._check_inplace()
    src = src.to(self.device) if isinstance(src, Tensor) else tensor(src)
    result = E.cast(M.expand(src, *self.shape) if src.shape != self.shape else src, self.dtype)
    if result is src and src.requires_grad and _grad_mode.enabled:
        result = M.clone(src)      # a node of its own: self must not become src's alias leaf
    return self._assign_result(result)


def _scalar_like(value, t):
    if isinstance(value, Tensor):
        return E.cast(value, t.dtype)
    return wrap(E.scalar_array(value, t.dtype, t.device))
