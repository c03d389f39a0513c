"""nn.utils.parametrize: express a parameter or buffer as a function of other tensors.

register_parametrization moves `module.<name>` into `module.parametrizations.<name>.original`
(or original0, original1, ... when the first parametrization's right_inverse returns several
tensors) and swaps the module's class for a subclass with a property `<name>` that computes the
parametrized value on every access (once per `cached()` block) and, when assigned, stores
right_inverse(value) back into the originals. State_dict keys are torch's.
"""
import copyreg
from collections.abc import Sequence
from contextlib import contextmanager
from copy import deepcopy

from ...autograd import no_grad
from ...tensor import Tensor
from ..containers import ModuleDict, ModuleList
from ..parameter import Parameter

__all__ = ["cached", "ParametrizationList", "register_parametrization", "is_parametrized",
           "remove_parametrizations", "type_before_parametrizations",
           "transfer_parametrizations_and_params"]

_cache_enabled = 0
_cache = {}


@contextmanager
def cached():
    """Within the block each parametrized tensor is computed once, on first access, and reused
    (e.g. a recurrent kernel used at every step); the cache is emptied on leaving."""
    global _cache, _cache_enabled
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache = {}


def _register_parameter_or_buffer(module, name, value):
    if isinstance(value, Parameter):
        module.register_parameter(name, value)
    else:
        module.register_buffer(name, value)


def _maybe_set(dest, src):
    """torch's dest.set_(src): `dest` (kept as the same object) now shows src's memory."""
    with no_grad():
        dest.data = src


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, holding its unconstrained original(s); the type of
    `module.parametrizations[name]`. Not meant to be built by users."""

    def __init__(self, modules, original, unsafe=False):
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        original_shape, original_dtype = original.shape, original.dtype
        with no_grad():
            new = original
            for module in reversed(self):
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass
        if not isinstance(new, (Tensor, Sequence)):
            raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors "
                             f"(list, tuple...). Got {type(new).__name__}")
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            self._store_single_original(original, new)
        else:
            self._store_originals(original, new)
        if not self.unsafe:
            self._check_consistent(original_shape, original_dtype)

    def _store_single_original(self, original, new):
        if original.dtype != new.dtype:
            raise ValueError("When `right_inverse` outputs one tensor, it may not change the "
                             f"dtype.\noriginal.dtype: {original.dtype}\n"
                             f"right_inverse(original).dtype: {new.dtype}")
        if original.device != new.device:
            raise ValueError("When `right_inverse` outputs one tensor, it may not change the "
                             f"device.\noriginal.device: {original.device}\n"
                             f"right_inverse(original).device: {new.device}")
        _maybe_set(original, new)    # keeps the Parameter object (optimizers may hold it)
        _register_parameter_or_buffer(self, "original", original)

    def _store_originals(self, original, new):
        for i, original_i in enumerate(new):
            if not isinstance(original_i, Tensor):
                raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors "
                                 f"(list, tuple...). Got element {i} of the sequence with type "
                                 f"{type(original_i).__name__}.")
            if isinstance(original, Parameter):
                original_i = Parameter(original_i, original.requires_grad)
            original_i.requires_grad_(original.requires_grad)
            _register_parameter_or_buffer(self, f"original{i}", original_i)

    def _check_consistent(self, original_shape, original_dtype):
        value = self()
        if not isinstance(value, Tensor):
            raise ValueError("A parametrization must return a tensor. Got "
                             f"{type(value).__name__}.")
        if value.dtype != original_dtype:
            raise ValueError("Registering a parametrization may not change the dtype of the "
                             "tensor, unless `unsafe` flag is enabled.\n"
                             f"unparametrized dtype: {original_dtype}\n"
                             f"parametrized dtype: {value.dtype}")
        if value.shape != original_shape:
            raise ValueError("Registering a parametrization may not change the shape of the "
                             "tensor, unless `unsafe` flag is enabled.\n"
                             f"unparametrized shape: {original_shape}\n"
                             f"parametrized shape: {value.shape}")

    def right_inverse(self, value):
        """Run the right_inverses in reverse registration order and store the result in the
        original(s): what assigning `module.<name> = value` does."""
        with no_grad():
            for module in reversed(self):
                if not hasattr(module, "right_inverse"):
                    raise RuntimeError(f"parametrization {type(module).__name__} does not "
                                       "implement right_inverse.")
                value = module.right_inverse(value)
            if self.is_tensor:
                self._set_single_original(value)
            else:
                self._set_originals(value)

    def _set_single_original(self, value):
        if not isinstance(value, Tensor):
            raise ValueError(f"`right_inverse` should return a tensor. Got {type(value).__name__}")
        if value.dtype != self.original.dtype:
            raise ValueError(f"The tensor returned by `right_inverse` has dtype {value.dtype} "
                             f"while `original` has dtype {self.original.dtype}")
        _maybe_set(self.original, value)

    def _set_originals(self, values):
        if not isinstance(values, Sequence):
            raise ValueError("'right_inverse' must return a sequence of tensors. "
                             f"Got {type(values).__name__}.")
        if len(values) != self.ntensors:
            raise ValueError("'right_inverse' must return a sequence of tensors of length "
                             f"{self.ntensors}. Got a sequence of length {len(values)}.")
        for i, tensor in enumerate(values):
            original_i = getattr(self, f"original{i}")
            if not isinstance(tensor, Tensor):
                raise ValueError("'right_inverse' must return a sequence of tensors or "
                                 f"reference-type opaques. Got element {i} of type "
                                 f"{type(tensor).__name__}.")
            if original_i.dtype != tensor.dtype:
                raise ValueError(f"Tensor {i} returned by `right_inverse` has dtype "
                                 f"{tensor.dtype} while `original{i}` has dtype "
                                 f"{original_i.dtype}")
            _maybe_set(original_i, tensor)

    def forward(self):
        if self.is_tensor:
            value = self[0](self.original)
        else:
            value = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in list(self)[1:]:
            value = module(value)
        return value


def _default_deepcopy(self, memo):
    """deepcopy without __getstate__ (which parametrized modules refuse, as in torch)."""
    replica = memo.get(id(self))
    if replica is not None:
        return replica
    replica = self.__new__(self.__class__)
    memo[id(self)] = replica
    replica.__dict__ = deepcopy(self.__dict__, memo)
    for slot in copyreg._slotnames(self.__class__):
        if hasattr(self, slot):
            setattr(replica, slot, deepcopy(getattr(self, slot), memo))
    return replica


def _refuse_pickling(self):
    raise RuntimeError("Serialization of parametrized modules is only supported through "
                       "state_dict(). See:\nhttps://pytorch.org/tutorials/beginner/"
                       "saving_loading_models.html#saving-loading-a-general-checkpoint-for-"
                       "inference-and-or-resuming-training")


def _inject_new_class(module):
    """Give `module` a class of its own (Parametrized<Class>) to hang the properties on."""
    cls = module.__class__
    members = {"__getstate__": _refuse_pickling}
    if not hasattr(cls, "__deepcopy__"):
        members["__deepcopy__"] = _default_deepcopy
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), members)


def _inject_property(module, tensor_name):
    """The property `tensor_name` on the module's own class: computes on read, right_inverse
    on write."""
    if hasattr(module, tensor_name):
        raise AssertionError(f"Module already has an attribute named '{tensor_name}'")

    def get_parametrized(self):
        parametrization = self.parametrizations[tensor_name]
        if not _cache_enabled:
            return parametrization()
        key = (id(self), tensor_name)
        tensor = _cache.get(key)
        if tensor is None:
            tensor = _cache[key] = parametrization()
        return tensor

    def set_original(self, value):
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(module.__class__, tensor_name, property(get_parametrized, set_original))


def _check_added_parametrization(module, tensor_name, parametrization):
    """Adding to an existing list (unsafe=False): the new one must keep dtype and shape, and so
    must its right_inverse."""
    before = getattr(module, tensor_name)
    after = parametrization(before)
    if not isinstance(after, Tensor):
        raise ValueError(f"A parametrization must return a tensor. Got {type(after).__name__}.")
    _check_same(after, before, tensor_name, "Registering a parametrization may not change the "
                "{what} of the tensor, unless the `unsafe` flag is enabled.\n"
                "module.{name}.{what}: {old}\nparametrization(module.{name}).{what}: {new}")
    if not hasattr(parametrization, "right_inverse"):
        return
    try:
        inverse = parametrization.right_inverse(after)
    except NotImplementedError:
        return
    if not isinstance(inverse, Tensor):
        raise ValueError("parametrization.right_inverse must return a tensor. Got: "
                         f"{type(inverse).__name__}")
    _check_same(inverse, before, tensor_name, "The tensor returned by parametrization."
                "right_inverse must have the same {what} as module.{name}, unless the `unsafe` "
                "flag is enabled.\nmodule.{name}.{what}: {old}\nreturned {what}: {new}")


def _check_same(new, old, name, template):
    for what in ("dtype", "shape"):
        if getattr(new, what) != getattr(old, what):
            raise ValueError(template.format(what=what, name=name, old=getattr(old, what),
                                             new=getattr(new, what)))


def register_parametrization(module, tensor_name, parametrization, *, unsafe=False):
    """Make `module.<tensor_name>` read as parametrization(original); registering again on the
    same name chains parametrizations. Returns the module."""
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            _check_added_parametrization(module, tensor_name, parametrization)
        module.parametrizations[tensor_name].append(parametrization)
        module.parametrizations[tensor_name].unsafe |= unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        parametrizations = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = parametrizations
    else:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a "
                         f"parametrized element with name '{tensor_name}'")
    return module


def is_parametrized(module, tensor_name=None):
    """Whether `module` has a parametrization on `tensor_name` (on anything when None)."""
    parametrizations = getattr(module, "parametrizations", None)
    if parametrizations is None or not isinstance(parametrizations, ModuleDict):
        return False
    if tensor_name is None:
        return len(parametrizations) > 0
    return tensor_name in parametrizations


def remove_parametrizations(module, tensor_name, leave_parametrized=True):
    """Undo register_parametrization: `module.<tensor_name>` becomes a plain parameter/buffer
    again holding the current parametrized value (leave_parametrized) or the original."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    parametrizations = module.parametrizations[tensor_name]
    if parametrizations.is_tensor:
        original = parametrizations.original
        if leave_parametrized:
            with no_grad():
                _maybe_set(original, getattr(module, tensor_name))
    elif leave_parametrized:
        value = getattr(module, tensor_name)
        original = Parameter(value.detach()) if value.requires_grad else value
    else:
        raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor that "
                         "is parametrized in terms of a sequence of tensors.")
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module


def type_before_parametrizations(module):
    """The module's class before register_parametrization replaced it."""
    if is_parametrized(module):
        return module.__class__.__bases__[0]
    return type(module)


def transfer_parametrizations_and_params(from_module, to_module, tensor_name=None):
    """Register `from_module`'s parametrizations (all, or the one on `tensor_name`) on
    `to_module` too, sharing the original tensors."""
    if not is_parametrized(from_module):
        return to_module
    names = list(from_module.parametrizations) if tensor_name is None else [tensor_name]
    for name in names:
        source = from_module.parametrizations[name]
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name).detach()))
        for parametrization in source:
            register_parametrization(to_module, name, parametrization)
        target = to_module.parametrizations[name]
        if hasattr(source, "original"):
            target.original = source.original
        else:
            for i in range(source.ntensors):
                setattr(target, f"original{i}", getattr(source, f"original{i}"))
    return to_module
