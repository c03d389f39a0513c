"""nn.Parameter and nn.Buffer: tensors that a Module registers as its state (torch.nn.parameter)."""
import sys

import numpy as np

from ..printing import tensor_repr
from ..tensor import Tensor, empty, tensor, wrap_into



def _from_foreign_array(value):
    """numpy arrays, and torch tensors when torch is already imported (never imported here),
    become minitorch tensors (a copy, through numpy), so a numpy or torch state dict loads as it
    is. Anything else goes on to _load_from_state_dict's checks."""
    if isinstance(value, np.ndarray):
        return tensor(value)
    torch = sys.modules.get("torch")
    # ours first: under a `torch` -> minitorch alias, torch.Tensor is our Tensor
    if torch is not None and not isinstance(value, Tensor) and isinstance(value, torch.Tensor):
        value = value.detach().cpu()
        if value.dtype is torch.bfloat16:      # numpy has no bfloat16; float32 holds it exactly
            value = value.float()
        return tensor(value.resolve_conj().resolve_neg().numpy())
    return value


class Parameter(Tensor):
    """A Tensor that a Module registers as a parameter; shares storage with `data`."""
    __slots__ = ()

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter(): argument 'data' must be Tensor, not "
                            f"{type(data).__name__}")
        if requires_grad and not (data.dtype.is_floating_point or data.dtype.is_complex):
            raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                               "gradients")
        self = object.__new__(cls)
        wrap_into(self, data._data, requires_grad)
        self._version = data._version   # like data.detach(): in-place writes are seen by both
        return self

    def __init__(self, data=None, requires_grad=True):
        """Everything happens in __new__ (Tensor.__init__ would rebuild the data)."""

    def __repr__(self):
        return "Parameter containing:\n" + tensor_repr(self)

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.detach().clone(), self.requires_grad)
        memo[id(self)] = result
        return result

    def __reduce_ex__(self, protocol):
        return (_rebuild_parameter, (self.detach(), self.requires_grad))


def _rebuild_parameter(data, requires_grad):
    return Parameter(data, requires_grad)


class _BufferMeta(type):
    """isinstance(t, Buffer) is true for tensors made by Buffer(), as in torch."""

    def __instancecheck__(cls, instance):
        if cls is Buffer and isinstance(instance, Tensor) and \
                instance.__dict__.get("_is_buffer", False):
            return True
        return super().__instancecheck__(instance)


class Buffer(Tensor, metaclass=_BufferMeta):
    """Marks a tensor to be registered as a buffer when assigned to a Module attribute."""

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            data = empty(0)
        t = data.detach().requires_grad_(data.requires_grad)
        t.persistent = persistent
        t._is_buffer = True
        return t


class UninitializedTensorMixin:
    """A placeholder with no shape yet; `materialize` gives it one, in place."""
    __slots__ = ()
    cls_to_become = Tensor

    def materialize(self, shape, device=None, dtype=None):
        """Become a `cls_to_become` of `shape` (uninitialised values) on this placeholder's
        device and dtype unless others are given."""
        device = self._data.device if device is None else device
        dtype = self._data.dtype if dtype is None else dtype
        self._data = empty(*shape, device=device, dtype=dtype)._data
        self.__class__ = self.cls_to_become

    @property
    def shape(self):
        raise RuntimeError(
            "Can't access the shape of an uninitialized parameter or buffer. This error usually "
            "happens in `load_state_dict` when trying to load an uninitialized parameter into an "
            "initialized one. Call `forward` to initialize the parameters before accessing "
            "their attributes.")

    def __repr__(self):
        return f"<{type(self).__name__}>"


def _placeholder(cls, requires_grad, device, dtype):
    self = object.__new__(cls)
    wrap_into(self, empty(0, device=device, dtype=dtype)._data, requires_grad)
    return self


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A Parameter with no shape or data yet, materialized by a lazy module's first forward
    (torch.nn.UninitializedParameter)."""
    __slots__ = ()
    cls_to_become = Parameter

    def __new__(cls, requires_grad=True, device=None, dtype=None):
        return _placeholder(cls, requires_grad, device, dtype)

    def __init__(self, requires_grad=True, device=None, dtype=None):
        """Everything happens in __new__."""


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer with no shape or data yet, materialized by a lazy module's first forward
    (torch.nn.UninitializedBuffer)."""
    __slots__ = ()

    def __new__(cls, requires_grad=False, device=None, dtype=None):
        return _placeholder(cls, requires_grad, device, dtype)

    def __init__(self, requires_grad=False, device=None, dtype=None):
        """Everything happens in __new__ (Tensor.__init__ would rebuild the data)."""
