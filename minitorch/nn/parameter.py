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
        if requires_grad and not data.dtype.is_floating_point:
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
