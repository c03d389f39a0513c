"""torch.autograd.Variable, the pre-0.4 wrapper that old scripts still call: a Variable is a
Tensor. `Variable(t)` gives a new tensor sharing t's storage, detached from its history, with
requires_grad as asked (torch's behaviour, volatile's warning included), and isinstance(x,
Variable) holds for every tensor."""
import warnings

from ..tensor import Tensor, empty


class _VariableMeta(type):
    def __instancecheck__(cls, other):
        return isinstance(other, Tensor)


class Variable(metaclass=_VariableMeta):
    """Variable(data, requires_grad=False, volatile=False): data.detach() with requires_grad."""

    def __new__(cls, data=None, requires_grad=False, volatile=False):
        if volatile:
            warnings.warn("volatile was removed and now has no effect. Use `with "
                          "torch.no_grad():` instead.", UserWarning, stacklevel=2)
        if data is None:
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        return data.detach().requires_grad_(requires_grad)
