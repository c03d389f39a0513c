"""nn.Module, with torch's registration, traversal, state_dict and hooks.

A Module keeps its Parameters, buffers and child Modules in three ordered dicts filled by
`__setattr__`; everything else (named_parameters, state_dict, to(), train()) walks them. Calling a
module runs forward between the forward hooks (hooks.py has the hook plumbing and the global
hooks, which torch.nn.modules.module exposes here too; parameter.py has Parameter and Buffer).
"""
import functools
import itertools
import warnings
from collections import OrderedDict, namedtuple
from collections.abc import Mapping


from .. import dtypes
from ..autograd import RemovableHandle, no_grad
from ..backend import device as Device
from ..tensor import Tensor, empty_like
from . import hooks as _hooks
from .hooks import (register_module_backward_hook, register_module_buffer_registration_hook,
                    register_module_forward_hook, register_module_forward_pre_hook,
                    register_module_full_backward_hook, register_module_full_backward_pre_hook,
                    register_module_module_registration_hook,
                    register_module_parameter_registration_hook)
from .parameter import Buffer, Parameter, _from_foreign_array

__all__ = ["Module", "Parameter", "Buffer", "register_module_forward_pre_hook",
           "register_module_forward_hook", "register_module_backward_hook",
           "register_module_full_backward_pre_hook", "register_module_full_backward_hook",
           "register_module_buffer_registration_hook",
           "register_module_module_registration_hook",
           "register_module_parameter_registration_hook"]

_EXTRA_STATE_KEY_SUFFIX = "_extra_state"
_PENDING_LOADS = "_minitorch_pending_loads"


def _typename(obj):
    """torch.typename: what torch's error messages call an object's type."""
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(type(obj), "__module__", "") or ""
    qualname = type(obj).__qualname__
    return qualname if module in ("", "builtins") else f"{module}.{qualname}"


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What load_state_dict returns: the keys it could not match."""
    __slots__ = ()

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _addindent(text, spaces):
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    first = lines.pop(0)
    return first + "\n" + "\n".join(" " * spaces + line for line in lines)


def _forward_unimplemented(self, *input):
    raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" '
                              'function')


# ---- Module --------------------------------------------------------------------------------------
class Module:
    """Base class of every layer and model; mirrors torch.nn.Module."""
    training = True
    _version = 1
    call_super_init = False

    def __init__(self, *args, **kwargs):
        if kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got an unexpected keyword argument "
                            f"'{next(iter(kwargs))}'")
        if args:
            raise TypeError(f"{type(self).__name__}.__init__() takes 1 positional argument but "
                            f"{len(args) + 1} were given")
        setattr_ = object.__setattr__
        setattr_(self, "training", True)
        setattr_(self, "_parameters", {})
        setattr_(self, "_buffers", {})
        setattr_(self, "_non_persistent_buffers_set", set())
        setattr_(self, "_backward_pre_hooks", OrderedDict())
        setattr_(self, "_backward_hooks", OrderedDict())
        setattr_(self, "_is_full_backward_hook", None)
        setattr_(self, "_forward_hooks", OrderedDict())
        setattr_(self, "_forward_hooks_with_kwargs", OrderedDict())
        setattr_(self, "_forward_hooks_always_called", OrderedDict())
        setattr_(self, "_forward_pre_hooks", OrderedDict())
        setattr_(self, "_forward_pre_hooks_with_kwargs", OrderedDict())
        setattr_(self, "_state_dict_hooks", OrderedDict())
        setattr_(self, "_state_dict_pre_hooks", OrderedDict())
        setattr_(self, "_load_state_dict_pre_hooks", OrderedDict())
        setattr_(self, "_load_state_dict_post_hooks", OrderedDict())
        setattr_(self, "_modules", {})

    forward = _forward_unimplemented

    # -- registration ---------------------------------------------------------------------------
    def register_buffer(self, name, tensor, persistent=True):
        """A tensor that is module state but not a parameter (saved in state_dict unless
        persistent=False, moved by to())."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"buffer name should be a string. Got {_typename(name)}")
        if "." in name:
            raise KeyError('buffer name can\'t contain "."')
        if name == "":
            raise KeyError('buffer name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                            "(torch Tensor or None required)")
        tensor = _hooks._run_registration_hooks(_hooks._global_buffer_registration_hooks, self, name, tensor)
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name, param):
        """Add a Parameter (or None) under `name`."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"parameter name should be a string. Got {_typename(name)}")
        if "." in name:
            raise KeyError('parameter name can\'t contain "."')
        if name == "":
            raise KeyError('parameter name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is None:
            self._parameters[name] = None
        elif not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                            "(torch.nn.Parameter or None required)")
        elif param.grad_fn is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model "
                             f"parameters must be created explicitly. To express '{name}' as a "
                             "function of another Tensor, compute the value in the forward() "
                             "method.")
        else:
            self._parameters[name] = _hooks._run_registration_hooks(
                _hooks._global_parameter_registration_hooks, self, name, param)

    def add_module(self, name, module):
        """Add a child Module (or None) under `name`."""
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {_typename(name)}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        self._modules[name] = _hooks._run_registration_hooks(_hooks._global_module_registration_hooks, self,
                                                      name, module)

    def register_module(self, name, module):
        return self.add_module(name, module)

    def get_submodule(self, target):
        """The submodule at a dotted path such as "net.0"."""
        if target == "":
            return self
        module = self
        for item in target.split("."):
            if not hasattr(module, item):
                raise AttributeError(module._get_name() + " has no attribute `" + item + "`")
            module = getattr(module, item)
            if not isinstance(module, Module):
                raise AttributeError("`" + item + "` is not an nn.Module")
        return module

    def set_submodule(self, target, module, strict=False):
        """Put `module` at a dotted path such as "net.0" whose parent exists; strict: only
        replace an existing submodule."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        parent_path, _, name = target.rpartition(".")
        parent = self.get_submodule(parent_path)
        if strict and not hasattr(parent, name):
            raise AttributeError(parent._get_name() + " has no attribute `" + name + "`")
        if hasattr(parent, name) and not isinstance(getattr(parent, name), Module):
            raise AttributeError("`" + name + "` is not an nn.Module")
        setattr(parent, name, module)

    def get_parameter(self, target):
        """The Parameter at a dotted path such as "net.0.weight"."""
        module_path, _, name = target.rpartition(".")
        module = self.get_submodule(module_path)
        if not hasattr(module, name):
            raise AttributeError(module._get_name() + " has no attribute `" + name + "`")
        param = getattr(module, name)
        if not isinstance(param, Parameter):
            raise AttributeError("`" + name + "` is not an nn.Parameter")
        return param

    def get_buffer(self, target):
        """The buffer at a dotted path such as "bn.running_mean"."""
        module_path, _, name = target.rpartition(".")
        module = self.get_submodule(module_path)
        if not hasattr(module, name):
            raise AttributeError(module._get_name() + " has no attribute `" + name + "`")
        if name not in module._buffers:
            raise AttributeError("`" + name + "` is not a buffer")
        return getattr(module, name)

    def get_extra_state(self):
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never be "
                           "called. Please file an issue at https://github.com/pytorch/pytorch/"
                           "issues/new?template=bug-report.yml to report this bug.")

    def set_extra_state(self, state):
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never be "
                           "called. Please file an issue at https://github.com/pytorch/pytorch/"
                           "issues/new?template=bug-report.yml to report this bug.")

    # -- attribute protocol ---------------------------------------------------------------------
    def __getattr__(self, name):
        # Only reached when normal lookup fails: parameters, buffers and children live in dicts.
        state = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            members = state.get(store)
            if members is not None and name in members:
                return members[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._remove_member(name, self.__dict__, self._buffers, self._modules,
                                self._non_persistent_buffers_set)
            self.register_parameter(name, value)
            return
        if params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' "
                                "(torch.nn.Parameter or None expected)")
            self.register_parameter(name, value)
            return
        modules = self.__dict__.get("_modules")
        if isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._remove_member(name, self.__dict__, self._parameters, self._buffers,
                                self._non_persistent_buffers_set)
            modules[name] = _hooks._run_registration_hooks(_hooks._global_module_registration_hooks, self,
                                                    name, value)
            return
        if modules is not None and name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as child module '{name}' "
                                "(torch.nn.Module or None expected)")
            modules[name] = _hooks._run_registration_hooks(_hooks._global_module_registration_hooks, self,
                                                    name, value)
            return
        buffers = self.__dict__.get("_buffers")
        if isinstance(value, Buffer) or (buffers is not None and name in buffers):
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{_typename(value)}' as buffer '{name}' "
                                "(torch.nn.Buffer, torch.Tensor or None expected)")
            persistent = value.persistent if isinstance(value, Buffer) else \
                name not in self._non_persistent_buffers_set
            self.register_buffer(name, value, persistent)
            return
        object.__setattr__(self, name, value)

    @staticmethod
    def _remove_member(name, *stores):
        for store in stores:
            if name in store:
                if isinstance(store, dict):
                    del store[name]
                else:
                    store.discard(name)

    def __delattr__(self, name):
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            object.__delattr__(self, name)

    def __setstate__(self, state):
        self.__dict__.update(state)
        # A module pickled before the hook dicts existed gets empty ones (as torch does).
        for name in ("_state_dict_hooks", "_state_dict_pre_hooks",
                     "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks"):
            self.__dict__.setdefault(name, OrderedDict())
        self.__dict__.setdefault("_is_full_backward_hook", None)

    def __dir__(self):
        keys = (dir(self.__class__) + list(self.__dict__) + list(self._parameters) +
                list(self._modules) + list(self._buffers))
        return sorted(key for key in keys if not key[0].isdigit())

    # -- traversal ------------------------------------------------------------------------------
    def _named_members(self, get_members, prefix="", recurse=True, remove_duplicate=True):
        memo = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) \
            if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for name, value in get_members(module):
                if value is None or value in memo:
                    continue
                if remove_duplicate:
                    memo.add(value)
                yield module_prefix + ("." if module_prefix else "") + name, value

    def parameters(self, recurse=True):
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self._named_members(lambda module: module._parameters.items(), prefix,
                                       recurse, remove_duplicate)

    def buffers(self, recurse=True):
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self._named_members(lambda module: module._buffers.items(), prefix, recurse,
                                       remove_duplicate)

    def children(self):
        for _, module in self.named_children():
            yield module

    def named_children(self):
        memo = set()
        for name, module in self._modules.items():
            if module is not None and module not in memo:
                memo.add(module)
                yield name, module

    def modules(self):
        for _, module in self.named_modules():
            yield module

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        if memo is None:
            memo = set()
        if self in memo:
            return
        if remove_duplicate:
            memo.add(self)
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            yield from module.named_modules(memo, prefix + ("." if prefix else "") + name,
                                            remove_duplicate)

    def apply(self, fn):
        """fn(module) on every submodule (children first) and then self."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # -- modes and gradients --------------------------------------------------------------------
    def train(self, mode=True):
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for param in self.parameters():
            param.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        for param in self.parameters():
            _zero_grad(param, set_to_none)

    # -- device and dtype -----------------------------------------------------------------------
    def _apply(self, fn, recurse=True):
        """Replace every parameter's data (keeping the Parameter object) and buffer by fn(t)."""
        if recurse:
            for module in self.children():
                module._apply(fn)
        with no_grad():
            for param in self._parameters.values():
                if param is None:
                    continue
                param.data = fn(param)
                if param.grad is not None:
                    param.grad.data = fn(param.grad)
            for key, buf in self._buffers.items():
                if buf is not None:
                    self._buffers[key] = fn(buf)
        return self

    def to(self, *args, **kwargs):
        """to(device), to(dtype), to(device, dtype), to(tensor); floating dtypes only."""
        device, dtype = _parse_to(args, kwargs)
        if dtype is not None and not dtype.is_floating_point:
            raise TypeError("nn.Module.to only accepts floating point or complex dtypes, but got "
                            f"desired dtype={dtype}")
        # torch: the memory format applies to the 4-D and 5-D parameters and buffers only
        memory_format = kwargs.get("memory_format")

        def convert(t):
            try:
                if memory_format is not None and t.dim() in (4, 5):
                    return t.to(device=device, dtype=dtype if t.is_floating_point() else None,
                                memory_format=memory_format)
                return t.to(device=device, dtype=dtype if t.is_floating_point() else None)
            except NotImplementedError as error:
                if str(error) == "Cannot copy out of meta tensor; no data!":
                    raise NotImplementedError(
                        f"{error} Please use torch.nn.Module.to_empty() instead of "
                        "torch.nn.Module.to() when moving module from meta to a different "
                        "device.") from None
                raise
        return self._apply(convert)

    def compile(self, *args, **kwargs):
        """torch's Module.compile: calls go through torch.compile(self._call_impl) from now on.
        minitorch.compile returns what it is given (there is no graph compiler), so this checks
        the arguments as torch.compile does and the module's calls are unchanged."""
        from ..settings import compile as compile_function
        compile_function(self._call_impl, *args, **kwargs)

    def cuda(self, device=None):
        return self._apply(lambda t: t.cuda(device))

    def cpu(self):
        return self._apply(lambda t: t.cpu())

    def float(self):
        return self._apply(lambda t: t.float() if t.is_floating_point() else t)

    def double(self):
        return self._apply(lambda t: t.double() if t.is_floating_point() else t)

    def half(self):
        """Cast floating-point parameters and buffers to float16 (torch.nn.Module.half)."""
        return self._apply(lambda t: t.half() if t.is_floating_point() else t)

    def bfloat16(self):
        """Cast floating-point parameters and buffers to bfloat16."""
        return self._apply(lambda t: t.bfloat16() if t.is_floating_point() else t)

    def type(self, dst_type):
        """Cast every parameter and buffer, integer ones included, to `dst_type`."""
        return self._apply(lambda t: t.type(dst_type))

    def to_empty(self, *, device, recurse=True):
        """Move parameters and buffers to `device` as uninitialized tensors (nothing copied)."""
        return self._apply(lambda t: empty_like(t, device=device), recurse=recurse)

    def share_memory(self):
        """Tensor.share_memory_ on every parameter and buffer."""
        return self._apply(lambda t: t.share_memory_())

    # -- state_dict -----------------------------------------------------------------------------
    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()
        if type(self).get_extra_state is not Module.get_extra_state:
            destination[prefix + _EXTRA_STATE_KEY_SUFFIX] = self.get_extra_state()

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        """An OrderedDict of parameters and persistent buffers, keyed by dotted names (values
        detached, sharing storage with the module's tensors)."""
        if args:
            warnings.warn("Positional args are being deprecated, use kwargs instead. Refer to "
                          "https://pytorch.org/docs/main/generated/torch.nn.Module.html"
                          "#torch.nn.Module.state_dict for details.", FutureWarning,
                          stacklevel=2)
            destination = args[0] if destination is None else destination
            prefix = args[1] if len(args) > 1 and prefix == "" else prefix
            keep_vars = args[2] if len(args) > 2 and keep_vars is False else keep_vars
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = {"version": self._version}
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        for hook in self._state_dict_pre_hooks.values():
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".",
                                  keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            hook_result = hook(self, destination, prefix, local_metadata)
            if not getattr(hook, "_from_public_api", False):
                # The private API's hook may return a new dict; torch only honours it for the
                # module state_dict() was called on (its children's returns are dropped).
                if hook_result is not None:
                    destination = hook_result
            elif hook_result is not None:
                raise RuntimeError("state_dict post-hook must return None")
        return destination

    def register_state_dict_pre_hook(self, hook):
        """hook(module, prefix, keep_vars) -> None, before this module saves its state."""
        return _hooks._register_hook(self._state_dict_pre_hooks, hook, False)

    def register_state_dict_post_hook(self, hook):
        """hook(module, state_dict, prefix, local_metadata) -> None, after this module and its
        children saved their state; may edit state_dict in place."""
        # torch marks the hook itself, so the private API can tell it apart (and refuse it).
        hook._from_public_api = True
        return _hooks._register_hook(self._state_dict_hooks, hook, False)

    def _register_state_dict_hook(self, hook):
        """The older post-hook: like register_state_dict_post_hook, but a returned dict
        replaces the state_dict (only on the module state_dict() was called on)."""
        if getattr(hook, "_from_public_api", False):
            raise RuntimeError("Cannot register the same function as the state dict post hook "
                               "that was previously registered via "
                               "register_state_dict_post_hook")
        return _hooks._register_hook(self._state_dict_hooks, hook, False)

    def register_load_state_dict_pre_hook(self, hook):
        """hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs) -> None, before this module loads its own state; may edit
        this module's (copied) state_dict."""
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def _register_load_state_dict_pre_hook(self, hook, with_module=False):
        """Like register_load_state_dict_pre_hook; without with_module the hook is not given
        the module."""
        handle = RemovableHandle(self._load_state_dict_pre_hooks)
        self._load_state_dict_pre_hooks[handle.id] = _hooks._WrappedHook(
            hook, self if with_module else None)
        return handle

    def register_load_state_dict_post_hook(self, hook):
        """hook(module, incompatible_keys) -> None, after this module and its children loaded;
        may edit incompatible_keys' lists in place, which decides whether a strict load
        raises."""
        return _hooks._register_hook(self._load_state_dict_post_hooks, hook, False)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        """Match this module's own tensors against `state_dict`, recording problems. Inside
        load_state_dict the copies are queued (unless load post-hooks exist, see there) so nothing
        changes on error."""
        pending = local_metadata.pop(_PENDING_LOADS, None)   # hidden from the hooks
        for hook in self._load_state_dict_pre_hooks.values():
            hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                 error_msgs)
        persistent = {k: v for k, v in self._buffers.items()
                      if k not in self._non_persistent_buffers_set}
        members = itertools.chain(self._parameters.items(), persistent.items())
        local_state = {k: v for k, v in members if v is not None}
        assign = local_metadata.get("assign_to_params_buffers", False)
        for name, param in local_state.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            value = state_dict[key]
            if not isinstance(value, Tensor):
                error_msgs.append(f'While copying the parameter named "{key}", expected '
                                  "torch.Tensor or Tensor-like object from checkpoint but "
                                  f"received {type(value)}")
                continue
            if param.ndim == 0 and value.ndim == 1 and value.shape[0] == 1:
                value = value[0]    # torch's compatibility with 0.3-era 1-element checkpoints
            if value.shape != param.shape:
                error_msgs.append(f"size mismatch for {key}: copying a param with shape "
                                  f"{value.shape} from checkpoint, the shape in current model is "
                                  f"{param.shape}.")
                continue
            copy = functools.partial(self._load_tensor, name, key, param, value, assign)
            if pending is None:
                copy(error_msgs)
            else:
                pending.append(copy)
        extra_key = prefix + _EXTRA_STATE_KEY_SUFFIX
        if type(self).set_extra_state is not Module.set_extra_state:
            if extra_key in state_dict:
                load_extra = functools.partial(_set_extra_state, self, state_dict[extra_key])
                if pending is None:
                    load_extra(error_msgs)
                else:
                    pending.append(load_extra)
            elif strict:
                missing_keys.append(extra_key)
        elif strict and extra_key in state_dict:
            unexpected_keys.append(extra_key)
        if strict:
            for key in state_dict:
                if key.startswith(prefix) and key != extra_key:
                    head = key[len(prefix):].split(".", 1)
                    if (len(head) > 1 and head[0] not in self._modules) or (
                            len(head) == 1 and head[0] not in local_state):
                        unexpected_keys.append(key)

    def _load_tensor(self, name, key, param, value, assign, error_msgs):
        try:
            with no_grad():
                if assign:
                    if isinstance(param, Parameter):
                        value = Parameter(value, requires_grad=param.requires_grad) \
                            if not isinstance(value, Parameter) else \
                            value.requires_grad_(param.requires_grad)
                    setattr(self, name, value)
                else:
                    param.copy_(value)
        except Exception as error:
            error_msgs.append(f'While copying the parameter named "{key}", whose dimensions in '
                              f"the model are {param.size()} and whose dimensions in the "
                              f"checkpoint are {value.size()}, an exception occurred : "
                              f"{error.args}.")

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copy parameters and buffers from `state_dict`. Every key and shape is checked first:
        on any error nothing is copied (torch copies what it can before raising). Load
        post-hooks see the loaded tensors and decide, by editing the key lists, whether a strict
        load fails: when there are any, tensors are copied as they are checked, as in torch."""
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing_keys, unexpected_keys, error_msgs = [], [], []
        has_post_hooks = any(module._load_state_dict_post_hooks for module in self.modules())
        pending = None if has_post_hooks else []
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict((key, _from_foreign_array(value))
                                 for key, value in state_dict.items())
        if metadata is not None:
            state_dict._metadata = metadata

        def load(module, local_state_dict, prefix=""):
            local_metadata = {} if metadata is None else dict(metadata.get(prefix[:-1], {}))
            if assign:
                local_metadata["assign_to_params_buffers"] = assign
            if pending is not None:
                local_metadata[_PENDING_LOADS] = pending
            module._load_from_state_dict(local_state_dict, prefix, local_metadata, True,
                                         missing_keys, unexpected_keys, error_msgs)
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    load(child, {k: v for k, v in local_state_dict.items()
                                 if k.startswith(child_prefix)}, child_prefix)
            incompatible_keys = _IncompatibleKeys(missing_keys, unexpected_keys)
            for hook in module._load_state_dict_post_hooks.values():
                if hook(module, incompatible_keys) is not None:
                    raise AssertionError(
                        "Hooks registered with ``register_load_state_dict_post_hook`` are not "
                        "expected to return new values, if incompatible_keys need to be "
                        "modified, it should be done inplace.")

        load(self, state_dict)
        if strict:
            if unexpected_keys:
                error_msgs.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected_keys)))
            if missing_keys:
                error_msgs.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing_keys)))
        if not error_msgs:
            for copy in pending or ():
                copy(error_msgs)
        if error_msgs:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                type(self).__name__, "\n\t".join(error_msgs)))
        return _IncompatibleKeys(missing_keys, unexpected_keys)

    # -- hooks ----------------------------------------------------------------------------------
    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """hook(module, args) -> None or new args; with_kwargs: hook(module, args, kwargs) ->
        None or (new_args, new_kwargs). Runs before forward."""
        handle = _hooks._register_hook(self._forward_pre_hooks, hook, prepend,
                                self._forward_pre_hooks_with_kwargs)
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        return handle

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False,
                              always_call=False):
        """hook(module, args, output) -> None or new output (with_kwargs: kwargs before output);
        always_call: also run when forward raises."""
        handle = _hooks._register_hook(self._forward_hooks, hook, prepend,
                                self._forward_hooks_with_kwargs,
                                self._forward_hooks_always_called)
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        return handle

    def register_full_backward_pre_hook(self, hook, prepend=False):
        """hook(module, grad_output) -> None or new grad_output, before the module's inputs'
        gradients are computed."""
        return _hooks._register_hook(self._backward_pre_hooks, hook, prepend)

    def register_full_backward_hook(self, hook, prepend=False):
        """hook(module, grad_input, grad_output) -> None or new grad_input, where grad_input are
        the gradients w.r.t. the module's positional tensor inputs."""
        self._set_backward_hook_kind(full=True)
        return _hooks._register_hook(self._backward_hooks, hook, prepend)

    def register_backward_hook(self, hook):
        """Deprecated (torch's non-full backward hook): hook(module, grad_input, grad_output)
        on the autograd node that made the module's first output tensor, so grad_input are
        that node's input gradients, not necessarily the module's."""
        self._set_backward_hook_kind(full=False)
        return _hooks._register_hook(self._backward_hooks, hook, False)

    def _set_backward_hook_kind(self, full):
        if self._is_full_backward_hook is (not full):
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks "
                               "on a single Module. Please use only one of them.")
        self._is_full_backward_hook = full

    def _get_backward_hooks(self):
        """(full hooks, non-full hooks), the global ones first."""
        full, non_full = [], []
        for is_full, hooks in ((_hooks._global_is_full_backward_hook, _hooks._global_backward_hooks),
                               (self._is_full_backward_hook, self._backward_hooks)):
            if is_full is True:
                full += hooks.values()
            elif is_full is False:
                non_full += hooks.values()
        return full, non_full

    def _get_backward_pre_hooks(self):
        return [*_hooks._global_backward_pre_hooks.values(), *self._backward_pre_hooks.values()]

    def _has_call_hooks(self):
        """Whether calling this module runs anything besides its forward (its own hooks or
        global ones)."""
        return bool(self._forward_pre_hooks or self._forward_hooks or self._backward_hooks
                    or self._backward_pre_hooks or _hooks._has_global_call_hook())

    def _calls_plain_forward(self, cls):
        """Whether calling this module is exactly cls.forward: a cls itself (no subclass), no
        forward replaced on the instance, no hooks. Layers that fuse a call into the next one's
        (Linear then ReLU) ask this first."""
        return type(self) is cls and "forward" not in self.__dict__ and not self._has_call_hooks()

    def _call_impl(self, *args, **kwargs):
        if not self._has_call_hooks():
            return self.forward(*args, **kwargs)
        result, called = None, set()
        try:
            # Taken before the pre-hooks run: hooks they register apply from the next call.
            full_hooks, non_full_hooks = self._get_backward_hooks()
            backward_pre_hooks = self._get_backward_pre_hooks()
            args, kwargs = self._run_forward_pre_hooks(args, kwargs)
            bw_hook = None
            if full_hooks or backward_pre_hooks:
                bw_hook = _hooks._BackwardHook(self, full_hooks, backward_pre_hooks)
                args = bw_hook.setup_input_hook(args)
            result = self.forward(*args, **kwargs)
            for hook_id, hook in (*_hooks._global_forward_hooks.items(), *self._forward_hooks.items()):
                if hook_id in self._forward_hooks_always_called or \
                        hook_id in _hooks._global_forward_hooks_always_called:
                    called.add(hook_id)
                new = self._run_forward_hook(hook_id, hook, args, kwargs, result)
                if new is not None:
                    result = new
            if bw_hook is not None:
                if not isinstance(result, (Tensor, tuple)):
                    warnings.warn("For backward hooks to be called, module output should be a "
                                  f"Tensor or a tuple of Tensors but received {type(result)}",
                                  stacklevel=2)
                result = bw_hook.setup_output_hook(result)
            if non_full_hooks:
                self._attach_non_full_backward_hooks(non_full_hooks, args, result)
            return result
        except Exception:
            self._run_always_called_hooks(called, args, kwargs, result)
            raise

    def _run_forward_pre_hooks(self, args, kwargs):
        for hook_id, hook in (*_hooks._global_forward_pre_hooks.items(),
                              *self._forward_pre_hooks.items()):
            if hook_id in self._forward_pre_hooks_with_kwargs:
                new = hook(self, args, kwargs)
                if new is not None:
                    if not (isinstance(new, tuple) and len(new) == 2):
                        raise RuntimeError("forward pre-hook must return None or a tuple of "
                                           f"(new_args, new_kwargs), but got {new}.")
                    args, kwargs = new
            else:
                new = hook(self, args)
                if new is not None:
                    args = new if isinstance(new, tuple) else (new,)
        return args, kwargs

    def _run_forward_hook(self, hook_id, hook, args, kwargs, result):
        if hook_id in self._forward_hooks_with_kwargs or \
                hook_id in _hooks._global_forward_hooks_with_kwargs:
            return hook(self, args, kwargs, result)
        return hook(self, args, result)

    def _run_always_called_hooks(self, called, args, kwargs, result):
        """After forward raised: the always_call forward hooks that have not run yet, the
        global ones first (torch calls those without kwargs)."""
        for hook_id, hook in list(_hooks._global_forward_hooks.items()):
            if hook_id in _hooks._global_forward_hooks_always_called and hook_id not in called:
                result = self._run_silenced(lambda: hook(self, args, result), result,
                                            "global module")
        for hook_id, hook in list(self._forward_hooks.items()):
            if hook_id in self._forward_hooks_always_called and hook_id not in called:
                result = self._run_silenced(
                    lambda: self._run_forward_hook(hook_id, hook, args, kwargs, result), result,
                    "module")

    @staticmethod
    def _run_silenced(call, result, kind):
        """An always_call hook after forward failed: its error becomes a warning, as the
        forward error is the one raised."""
        try:
            new = call()
        except Exception as error:
            warnings.warn(f"{kind} forward hook with ``always_call=True`` raised an exception "
                          f"that was silenced as another error was raised in forward: {error}",
                          stacklevel=3)
            return result
        return result if new is None else new

    def _attach_non_full_backward_hooks(self, hooks, args, result):
        """torch's non-full backward hooks: Node hooks on the first output tensor's grad_fn."""
        var = result
        while not isinstance(var, Tensor):
            if isinstance(var, dict):
                var = next(v for v in var.values() if isinstance(v, Tensor))
            else:
                var = var[0]
        grad_fn = var.grad_fn
        if grad_fn is not None:
            for hook in hooks:
                grad_fn.register_hook(_hooks._WrappedHook(hook, self))
            _hooks._warn_non_full_backward_hook(args, result, grad_fn)

    __call__ = _call_impl

    # -- printing -------------------------------------------------------------------------------
    def extra_repr(self):
        """Override to show a module's settings inside its repr parentheses."""
        return ""

    def _get_name(self):
        return type(self).__name__

    def __repr__(self):
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({key}): " + _addindent(repr(module), 2)
                       for key, module in self._modules.items()]
        lines = extra_lines + child_lines
        text = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                text += extra_lines[0]
            else:
                text += "\n  " + "\n  ".join(lines) + "\n"
        return text + ")"


def _set_extra_state(module, state, error_msgs):
    module.set_extra_state(state)


def _zero_grad(param, set_to_none):
    """Module.zero_grad / Optimizer.zero_grad for one parameter."""
    if param.grad is None:
        return
    if set_to_none:
        param.grad = None
        return
    if param.grad.grad_fn is not None:
        param.grad.detach_()
    else:
        param.grad.requires_grad_(False)
    param.grad.zero_()


def _parse_to(args, kwargs):
    """(device, dtype) from Module.to's torch signatures."""
    device, dtype = kwargs.get("device"), kwargs.get("dtype")
    for arg in args:
        if isinstance(arg, dtypes.dtype):
            dtype = arg
        elif isinstance(arg, Tensor):
            device, dtype = arg.device, arg.dtype
        elif isinstance(arg, (str, int, Device)):
            device = arg
        elif arg is not None and not isinstance(arg, bool):   # to(device, dtype, non_blocking)
            raise TypeError(f"to() received an invalid combination of arguments - got "
                            f"({type(arg).__name__})")
    return (Device(device) if device is not None else None), dtype


