"""Module containers: Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict.

Each stores its members as ordinary registered children/parameters (named "0", "1", … or by
key), so parameters(), state_dict() and to() see through them exactly as in torch.
"""
import operator
import warnings
from collections import OrderedDict, abc
from itertools import chain, islice

from ..tensor import Tensor
from .activation import ReLU
from .conv import Conv1d, Conv2d, Conv3d
from .functional.linear_maps import linear_relu
from .linear import Linear
from .module import Module, _addindent, _typename
from .parameter import Parameter
from .pooling import MaxPool2d

__all__ = ["Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"]


def _renumber(modules):
    """Keys "0".."n-1" again after a deletion, keeping the order."""
    return OrderedDict(zip((str(i) for i in range(len(modules))), modules.values()))


# Layers whose output a following ReLU can join in one pass: (layer class, fused call).
_RELU_FUSIONS = ((Linear, lambda layer, x: linear_relu(x, layer.weight, layer.bias)),
                 (Conv2d, Conv2d._forward_relu), (Conv1d, Conv1d._forward_relu),
                 (Conv3d, Conv3d._forward_relu))


def _fused_with_relu(first, second):
    """The call that runs first then second as one when second is a ReLU and calling the two
    would run nothing but their forwards (no hooks, plain classes), else None."""
    if not second._calls_plain_forward(ReLU):
        return None
    for cls, fused in _RELU_FUSIONS:
        if first._calls_plain_forward(cls):
            return fused
    return None


def _fused_with_relu_max_pool(first, second, third):
    """The call that runs Conv2d → ReLU → MaxPool2d as a convolution and one node (values
    only asked of the pool, plain modules as _fused_with_relu asks), else None."""
    if (third._calls_plain_forward(MaxPool2d) and not third.return_indices
            and second._calls_plain_forward(ReLU) and first._calls_plain_forward(Conv2d)):
        return lambda input: first._forward_relu_max_pool(third, input)
    return None


class Container(Module):
    """torch's deprecated container: a Module whose keyword arguments become its children."""
    def __init__(self, **kwargs):
        warnings.warn("`nn.Container` is deprecated. All of its functionality is now implemented "
                      "in `nn.Module`. Subclass that instead.", FutureWarning, stacklevel=2)
        super().__init__()
        for key, value in kwargs.items():
            self.add_module(key, value)


class Sequential(Module):
    """Modules called one after another; built from modules or from an OrderedDict."""

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for key, module in args[0].items():
                self.add_module(key, module)
        else:
            for index, module in enumerate(args):
                self.add_module(str(index), module)

    def _get_item_by_idx(self, iterator, idx):
        size = len(self)
        idx = operator.index(idx)
        if not -size <= idx < size:
            raise IndexError(f"index {idx} is out of range")
        return next(islice(iterator, idx % size, None))

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return self.__class__(OrderedDict(list(self._modules.items())[idx]))
        return self._get_item_by_idx(self._modules.values(), idx)

    def __setitem__(self, idx, module):
        setattr(self, self._get_item_by_idx(self._modules.keys(), idx), module)

    def __delitem__(self, idx):
        if isinstance(idx, slice):
            for key in list(self._modules.keys())[idx]:
                delattr(self, key)
        else:
            delattr(self, self._get_item_by_idx(self._modules.keys(), idx))
        self._modules = _renumber(self._modules)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __add__(self, other):
        if not isinstance(other, Sequential):
            raise ValueError("add operator supports only objects of Sequential class, but "
                             f"{type(other)} is given.")
        combined = Sequential()
        for layer in chain(self, other):
            combined.append(layer)
        return combined

    def __iadd__(self, other):
        if not isinstance(other, Sequential):
            raise ValueError("add operator supports only objects of Sequential class, but "
                             f"{type(other)} is given.")
        offset = len(self)
        for i, module in enumerate(other):
            self.add_module(str(i + offset), module)
        return self

    def __mul__(self, other):
        self._check_factor(other)
        combined = Sequential()
        for index, module in enumerate(list(self) * other):
            combined.add_module(str(index), module)
        return combined

    __rmul__ = __mul__

    def __imul__(self, other):
        self._check_factor(other)
        originals = list(self)
        for index, module in enumerate(originals * (other - 1), start=len(originals)):
            self.add_module(str(index), module)
        return self

    def _check_factor(self, other):
        if not isinstance(other, int):
            raise TypeError(f"unsupported operand type(s) for *: {type(self)} and {type(other)}")
        if other <= 0:
            raise ValueError(f"Non-positive multiplication factor {other} for {type(self)}")

    def pop(self, key):
        module = self[key]
        del self[key]
        return module

    def __dir__(self):
        return [key for key in super().__dir__() if not key.isdigit()]

    def forward(self, input):
        """Each module on the previous one's output. A Linear or a convolution followed by a
        ReLU runs as one: the Linear's GEMM adds the bias and applies the relu as it stores
        (one kernel instead of three), the convolution's bias add and relu are one pass
        (AddRelu), and a Conv2d → ReLU → MaxPool2d's relu and pool one node (ReluMaxPool), with
        the separate calls' values and gradients, whenever calling them would run nothing
        else: no hooks, plain classes, no forward replaced on the instance."""
        modules = list(self._modules.values())
        i, count = 0, len(modules)
        while i < count:
            module = modules[i]
            fused = (_fused_with_relu_max_pool(module, modules[i + 1], modules[i + 2])
                     if i + 2 < count else None)
            if fused is not None:
                input = fused(input)
                i += 3
                continue
            fused = _fused_with_relu(module, modules[i + 1]) if i + 1 < count else None
            if fused is not None:
                input = fused(module, input)
                i += 2
            else:
                input = module(input)
                i += 1
        return input

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def insert(self, index, module):
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")
        n = len(self._modules)
        if not -n <= index <= n:
            raise IndexError(f"Index out of range: {index}")
        if index < 0:
            index += n
        for i in range(n, index, -1):
            self._modules[str(i)] = self._modules[str(i - 1)]
        self._modules[str(index)] = module
        return self

    def extend(self, sequential):
        for layer in sequential:
            self.append(layer)
        return self


class ModuleList(Module):
    """A list of registered submodules."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self += modules

    def _get_abs_string_index(self, idx):
        idx = operator.index(idx)
        if not -len(self) <= idx < len(self):
            raise IndexError(f"index {idx} is out of range")
        return str(idx + len(self) if idx < 0 else idx)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return self.__class__(list(self._modules.values())[idx])
        return self._modules[self._get_abs_string_index(idx)]

    def __setitem__(self, idx, module):
        setattr(self, self._get_abs_string_index(idx), module)

    def __delitem__(self, idx):
        if isinstance(idx, slice):
            for k in range(len(self._modules))[idx]:
                delattr(self, str(k))
        else:
            delattr(self, self._get_abs_string_index(idx))
        self._modules = _renumber(self._modules)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __iadd__(self, modules):
        return self.extend(modules)

    def __add__(self, other):
        combined = ModuleList()
        for index, module in enumerate(chain(self, other)):
            combined.add_module(str(index), module)
        return combined

    def __repr__(self):
        """torch's compact form: runs of identical modules print once as "(0-2): 3 x …"."""
        reprs = [repr(item) for item in self]
        if not reprs:
            return self._get_name() + "()"
        runs = []               # [start, end, repr]
        for index, text in enumerate(reprs):
            if runs and runs[-1][2] == text:
                runs[-1][1] = index
            else:
                runs.append([index, index, text])
        lines = []
        for start, end, text in runs:
            line = f"({start}): {text}" if start == end else \
                f"({start}-{end}): {end - start + 1} x {text}"
            lines.append(_addindent(line, 2))
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"

    def __dir__(self):
        return [key for key in super().__dir__() if not key.isdigit()]

    def insert(self, index, module):
        for i in range(len(self._modules), index, -1):
            self._modules[str(i)] = self._modules[str(i - 1)]
        self._modules[str(index)] = module

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def pop(self, key):
        module = self[key]
        del self[key]
        return module

    def extend(self, modules):
        if not isinstance(modules, abc.Iterable):
            raise TypeError("ModuleList.extend should be called with an iterable, but got " +
                            type(modules).__name__)
        offset = len(self)
        for i, module in enumerate(modules):
            self.add_module(str(offset + i), module)
        return self


class ModuleDict(Module):
    """An ordered dict of registered submodules."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def __delitem__(self, key):
        del self._modules[key]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key):
        return key in self._modules

    def clear(self):
        self._modules.clear()

    def pop(self, key):
        module = self[key]
        del self[key]
        return module

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def update(self, modules):
        if not isinstance(modules, abc.Iterable):
            raise TypeError("ModuleDict.update should be called with an iterable of key/value "
                            "pairs, but got " + type(modules).__name__)
        if isinstance(modules, (OrderedDict, ModuleDict, abc.Mapping)):
            for key, module in modules.items():
                self[key] = module
            return
        for j, item in enumerate(modules):
            _check_pair("ModuleDict", j, item)
            self[item[0]] = item[1]


def _check_pair(kind, j, item):
    if not isinstance(item, abc.Iterable):
        raise TypeError(f"{kind} update sequence element #{j} should be Iterable; is" +
                        type(item).__name__)
    if len(item) != 2:
        raise ValueError(f"{kind} update sequence element #{j} has length {len(item)}; 2 is "
                         "required")


def _describe(key, value, type_text):
    """One line of ParameterList/ParameterDict's repr."""
    if isinstance(value, Tensor):
        size = "x".join(str(s) for s in value.size())
        device = f" ({value.device})" if value.device.type == "cuda" else ""
        kind = "Parameter" if isinstance(value, Parameter) else "Tensor"
        return f"  ({key}): {kind} containing: [{type_text(value)} of size {size}{device}]"
    return f"  ({key}): Object of type: {type(value).__name__}"


class ParameterList(Module):
    """A list of parameters (plain tensors are wrapped in Parameter when stored)."""

    def __init__(self, values=None):
        super().__init__()
        self._size = 0
        if values is not None:
            self += values

    def _get_abs_string_index(self, idx):
        idx = operator.index(idx)
        if not -len(self) <= idx < len(self):
            raise IndexError(f"index {idx} is out of range")
        return str(idx + len(self) if idx < 0 else idx)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            out = self.__class__()
            for i in range(*idx.indices(len(self))):
                out.append(self[i])
            return out
        return getattr(self, self._get_abs_string_index(idx))

    def __setitem__(self, idx, param):
        idx = self._get_abs_string_index(idx)
        if isinstance(param, Tensor) and not isinstance(param, Parameter):
            param = Parameter(param)
        setattr(self, idx, param)

    def __len__(self):
        return self._size

    def __iter__(self):
        return iter(self[i] for i in range(len(self)))

    def __iadd__(self, parameters):
        return self.extend(parameters)

    def __dir__(self):
        return [key for key in super().__dir__() if not key.isdigit()]

    def append(self, value):
        index = len(self)
        self._size += 1
        self[index] = value
        return self

    def extend(self, values):
        if not isinstance(values, abc.Iterable) or isinstance(values, Tensor):
            raise TypeError("ParameterList.extend should be called with an iterable, but got " +
                            type(values).__name__)
        for value in values:
            self.append(value)
        return self

    def extra_repr(self):
        return "\n".join(_describe(k, p, lambda t: t.dtype) for k, p in enumerate(self))

    def __call__(self, *args, **kwargs):
        raise RuntimeError("ParameterList should not be called.")


class ParameterDict(Module):
    """An ordered dict of parameters (plain tensors are wrapped in Parameter when stored)."""

    def __init__(self, parameters=None):
        super().__init__()
        self._keys = {}
        if parameters is not None:
            self.update(parameters)

    @staticmethod
    def _key_to_attr(key):
        if not isinstance(key, str):
            raise TypeError("Index given to ParameterDict cannot be used as a key as it is not a "
                            f"string (type is '{type(key).__name__}'). Open an issue on github if "
                            "you need non-string keys.")
        return key

    def __getitem__(self, key):
        return getattr(self, self._key_to_attr(key))

    def __setitem__(self, key, value):
        attr = self._key_to_attr(key)
        self._keys[key] = None
        if isinstance(value, Tensor) and not isinstance(value, Parameter):
            value = Parameter(value)
        setattr(self, attr, value)

    def __delitem__(self, key):
        del self._keys[key]
        delattr(self, self._key_to_attr(key))

    def __len__(self):
        return len(self._keys)

    def __iter__(self):
        return iter(self._keys)

    def __reversed__(self):
        return reversed(self._keys)

    def __contains__(self, key):
        return key in self._keys

    def copy(self):
        return ParameterDict(OrderedDict((k, self[k]) for k in self._keys))

    def setdefault(self, key, default=None):
        if key not in self:
            self[key] = default
        return self[key]

    def clear(self):
        for key in list(self._keys):
            del self[key]

    def pop(self, key):
        value = self[key]
        del self[key]
        return value

    def popitem(self):
        key = next(reversed(self._keys))
        return key, self.pop(key)

    def get(self, key, default=None):
        return self[key] if key in self else default

    def fromkeys(self, keys, default=None):
        return ParameterDict((k, default) for k in keys)

    def keys(self):
        return self._keys.keys()

    def items(self):
        return ((k, self[k]) for k in self._keys)

    def values(self):
        return (self[k] for k in self._keys)

    def update(self, parameters):
        if not isinstance(parameters, abc.Iterable):
            raise TypeError("ParametersDict.update should be called with an iterable of "
                            "key/value pairs, but got " + type(parameters).__name__)
        if isinstance(parameters, (OrderedDict, ParameterDict)):
            for key, value in parameters.items():
                self[key] = value
        elif isinstance(parameters, abc.Mapping):
            for key, value in sorted(parameters.items()):
                self[key] = value
        else:
            for j, item in enumerate(parameters):
                _check_pair("ParameterDict", j, item)
                self[item[0]] = item[1]

    def extra_repr(self):
        return "\n".join(_describe(k, p, _typename) for k, p in self.items())

    def __call__(self, input):
        raise RuntimeError("ParameterDict should not be called.")

    def __or__(self, other):
        combined = self.copy()
        combined.update(other)
        return combined

    def __ror__(self, other):
        combined = other.copy()
        combined.update(self)
        return combined

    def __ior__(self, other):
        self.update(other)
        return self
