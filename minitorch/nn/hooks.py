"""Module hooks: the handles register_*_hook returns, the global hooks of
torch.nn.modules.module (register_module_forward_hook and friends; every Module runs them
before its own), and the backward-hook plumbing: full backward hooks wrap a module's tensor
inputs and outputs in an identity autograd Function whose backward sees the gradients w.r.t.
the module's outputs and inputs (torch's BackwardHook); non-full ones get torch's warnings."""
import functools
import warnings
import weakref
from collections import OrderedDict

from ..autograd import Function, RemovableHandle, is_grad_enabled
from .._user_frames import user_stacklevel
from ..tensor import Tensor, wrap, zeros


class _ModuleHookHandle(RemovableHandle):
    """A hook handle that also forgets the hook's flags (with_kwargs, always_call)."""

    def __init__(self, hooks_dict, *extra_dicts):
        super().__init__(hooks_dict)
        self.extra_dicts = extra_dicts

    def remove(self):
        super().remove()
        for extra in self.extra_dicts:
            extra.pop(self.id, None)


def _register_hook(hooks, hook, prepend, *extra_dicts):
    handle = _ModuleHookHandle(hooks, *extra_dicts)
    hooks[handle.id] = hook
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    return handle


class _WrappedHook:
    """A hook that gets its module as first argument through a weak reference (so the module's
    own hook dicts do not keep it alive), or is called as is when `module` is None."""

    def __init__(self, hook, module=None):
        self.hook = hook
        functools.update_wrapper(self, hook)
        self.with_module = module is not None
        if self.with_module:
            self.module = weakref.ref(module)

    def __call__(self, *args, **kwargs):
        if self.with_module:
            module = self.module()
            if module is None:
                raise RuntimeError("You are trying to call the hook of a dead Module!")
            return self.hook(module, *args, **kwargs)
        return self.hook(*args, **kwargs)

    def __getstate__(self):
        # A weakref cannot be pickled or deep-copied: keep the module itself.
        state = {"hook": self.hook, "with_module": self.with_module}
        if self.with_module:
            state["module"] = self.module()
        return state

    def __setstate__(self, state):
        self.hook = state["hook"]
        self.with_module = state["with_module"]
        if self.with_module:
            if state["module"] is None:
                raise RuntimeError("You are trying to revive the hook of a dead Module!")
            self.module = weakref.ref(state["module"])


# ---- global hooks (torch.nn.modules.module's): every Module runs them before its own -------------
_global_buffer_registration_hooks = OrderedDict()
_global_module_registration_hooks = OrderedDict()
_global_parameter_registration_hooks = OrderedDict()
_global_backward_pre_hooks = OrderedDict()
_global_backward_hooks = OrderedDict()
_global_is_full_backward_hook = None   # None until a global backward hook of either kind exists
_global_forward_pre_hooks = OrderedDict()
_global_forward_hooks = OrderedDict()
_global_forward_hooks_always_called = OrderedDict()
_global_forward_hooks_with_kwargs = OrderedDict()



def _has_global_call_hook():
    return bool(_global_backward_pre_hooks or _global_backward_hooks or
                _global_forward_pre_hooks or _global_forward_hooks)


def register_module_buffer_registration_hook(hook):
    """hook(module, name, buffer) -> None or a new buffer, run by every register_buffer."""
    return _register_hook(_global_buffer_registration_hooks, hook, False)


def register_module_module_registration_hook(hook):
    """hook(module, name, submodule) -> None or a new submodule, run by every add_module."""
    return _register_hook(_global_module_registration_hooks, hook, False)


def register_module_parameter_registration_hook(hook):
    """hook(module, name, param) -> None or a new Parameter, run by every register_parameter."""
    return _register_hook(_global_parameter_registration_hooks, hook, False)


def register_module_forward_pre_hook(hook):
    """hook(module, args) -> None or new args, before every module's own forward pre-hooks."""
    return _register_hook(_global_forward_pre_hooks, hook, False)


def register_module_forward_hook(hook, *, with_kwargs=False, always_call=False):
    """hook(module, args, output) -> None or new output (with_kwargs: kwargs before output),
    before every module's own forward hooks; always_call: also run when forward raises."""
    handle = _register_hook(_global_forward_hooks, hook, False,
                            _global_forward_hooks_with_kwargs, _global_forward_hooks_always_called)
    if with_kwargs:
        _global_forward_hooks_with_kwargs[handle.id] = True
    if always_call:
        _global_forward_hooks_always_called[handle.id] = True
    return handle


def _set_global_backward_hook_kind(full):
    global _global_is_full_backward_hook
    if _global_is_full_backward_hook is (not full):
        raise RuntimeError("Cannot use both regular backward hooks and full backward hooks as a "
                           "global Module hook. Please use only one of them.")
    _global_is_full_backward_hook = full


def register_module_backward_hook(hook):
    """Deprecated: a global non-full backward hook (see Module.register_backward_hook)."""
    _set_global_backward_hook_kind(full=False)
    return _register_hook(_global_backward_hooks, hook, False)


def register_module_full_backward_pre_hook(hook):
    """hook(module, grad_output) for every module, before the module's own pre-hooks."""
    return _register_hook(_global_backward_pre_hooks, hook, False)


def register_module_full_backward_hook(hook):
    """hook(module, grad_input, grad_output) for every module, before the module's own."""
    _set_global_backward_hook_kind(full=True)
    return _register_hook(_global_backward_hooks, hook, False)


def _run_registration_hooks(hooks, module, name, value):
    """The global registration hooks, each of which may replace the value being registered."""
    for hook in hooks.values():
        output = hook(module, name, value)
        if output is not None:
            value = output
    return value


def _warn_non_full_backward_hook(inputs, result, grad_fn):
    """torch's FutureWarnings for the cases where a non-full backward hook misses gradients."""
    if isinstance(result, Tensor):
        result = (result,)
    elif not (isinstance(result, tuple) and all(isinstance(r, Tensor) for r in result)):
        _warn_non_full("Using non-full backward hooks on a Module that does not return a single "
                       "Tensor or a tuple of Tensors is deprecated and will be removed in future "
                       "versions. This hook will be missing some of the grad_output. Please use "
                       "register_full_backward_hook to get the documented behavior.")
        return
    if isinstance(inputs, Tensor):
        inputs = (inputs,)
    elif not (isinstance(inputs, tuple) and all(isinstance(i, Tensor) for i in inputs)):
        _warn_non_full("Using non-full backward hooks on a Module that does not take as input a "
                       "single Tensor or a tuple of Tensors is deprecated and will be removed in "
                       "future versions. This hook will be missing some of the grad_input. Please "
                       "use register_full_backward_hook to get the documented behavior.")
        return
    out_grad_fn = {r.grad_fn for r in result if r.grad_fn is not None}
    if not out_grad_fn or (len(out_grad_fn) == 1 and grad_fn not in out_grad_fn):
        _warn_non_full("Using a non-full backward hook when outputs are nested in python data "
                       "structure is deprecated and will be removed in future versions. This "
                       "hook will be missing some grad_output.")
    elif len(out_grad_fn) > 1:
        _warn_non_full("Using a non-full backward hook when outputs are generated by different "
                       "autograd Nodes is deprecated and will be removed in future versions. "
                       "This hook will be missing some grad_output. Please use "
                       "register_full_backward_hook to get the documented behavior.")
    elif {i.grad_fn for i in inputs if i.grad_fn is not None} != \
            {node for node, _ in grad_fn.next_functions}:
        _warn_non_full("Using a non-full backward hook when the forward contains multiple "
                       "autograd Nodes is deprecated and will be removed in future versions. "
                       "This hook will be missing some grad_input. Please use "
                       "register_full_backward_hook to get the documented behavior.")


def _warn_non_full(message):
    warnings.warn(message, FutureWarning, stacklevel=5)


class BackwardHookFunction(Function):
    """Identity on a module's tensors (inputs or outputs); its backward passes the gradients
    through the module's hook state, which may replace them."""

    @staticmethod
    def forward(ctx, *args):
        *tensors, on_backward = args
        ctx.on_backward = on_backward
        return tuple(wrap(t._data, version=t._version) for t in tensors)

    @staticmethod
    def backward(ctx, *grads):
        return tuple(ctx.on_backward(grads)) + (None,)


class _BackwardHook:
    """One module call's backward-hook state: grad_output is captured when the gradient passes
    the outputs' identity node, and the hooks run when it reaches the inputs' identity node."""

    def __init__(self, module, user_hooks, user_pre_hooks):
        self.module = module
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.grad_outputs = None
        self.n_inputs = self.n_outputs = -1
        self.input_tensors_index = self.output_tensors_index = None
        self.input_constants = ()

    @staticmethod
    def _apply_on_tensors(args, on_backward):
        """Route the tensors of `args` that require grad through one identity node. Returns
        the new args, the routed positions and the other tensors' (position, shape, dtype,
        device): as inputs, torch reports zeros for those and None for non-tensors."""
        routed = [i for i, arg in enumerate(args) if isinstance(arg, Tensor) and
                  arg.requires_grad]
        if not (routed and is_grad_enabled()):
            return args, None, ()
        constants = tuple((i, arg.shape, arg.dtype, arg.device) for i, arg in enumerate(args)
                          if isinstance(arg, Tensor) and not arg.requires_grad)
        outputs = BackwardHookFunction.apply(*(args[i] for i in routed), on_backward)
        new_args = list(args)
        for index, value in zip(routed, outputs):
            new_args[index] = value
        return tuple(new_args), routed, constants

    @staticmethod
    def _pack(indices, values, constants, size):
        packed = [None] * size
        for index, shape, dtype, device in constants:
            packed[index] = zeros(*shape, dtype=dtype, device=device)
        for index, value in zip(indices, values):
            packed[index] = value
        return tuple(packed)

    def setup_input_hook(self, args):
        args, self.input_tensors_index, self.input_constants = self._apply_on_tensors(
            args, self._input_backward)
        self.n_inputs = len(args)
        return args

    def setup_output_hook(self, result):
        is_tuple = isinstance(result, tuple)
        outputs = result if is_tuple else (result,)
        # torch reports None (not zeros) for outputs that do not require grad
        outputs, self.output_tensors_index, _ = self._apply_on_tensors(outputs,
                                                                       self._output_backward)
        self.n_outputs = len(outputs)
        return outputs if is_tuple else outputs[0]

    def _output_backward(self, grads):
        self.grad_outputs = self._pack(self.output_tensors_index, grads, (), self.n_outputs)
        for pre_hook in self.user_pre_hooks:
            replaced = pre_hook(self.module, self.grad_outputs)
            if replaced is None:
                continue
            if len(replaced) != len(self.grad_outputs):
                raise RuntimeError("Backward pre hook returned an invalid number of grad_output, "
                                   f"got {len(replaced)}, but expected {len(self.grad_outputs)}")
            self.grad_outputs = replaced
        local_grad_outputs = self.grad_outputs
        if self.input_tensors_index is None:
            self._hooks_without_input_grads()
        return tuple(local_grad_outputs[i] for i in self.output_tensors_index)

    def _hooks_without_input_grads(self):
        """No input requires grad: the hooks fire here with grad_input all None (torch)."""
        warnings.warn("Full backward hook is firing when gradients are computed with respect to "
                      "module outputs since no inputs require gradients. See https://docs."
                      "pytorch.org/docs/main/generated/torch.nn.Module.html#torch.nn.Module."
                      "register_full_backward_hook for more details.",
                      stacklevel=user_stacklevel())
        grad_inputs = (None,) * self.n_inputs
        for hook in self.user_hooks:
            result = hook(self.module, grad_inputs, self.grad_outputs)
            if result is not None and not (isinstance(result, tuple) and
                                           all(g is None for g in result)):
                raise RuntimeError("Backward hook for Modules where no input requires gradient "
                                   "should always return None or None for all gradients.")
        self.grad_outputs = None

    def _input_backward(self, grads):
        if self.grad_outputs is None:
            # The gradient reached the inputs without passing the outputs (double backward).
            return grads
        grad_inputs = self._pack(self.input_tensors_index, grads, self.input_constants,
                                 self.n_inputs)
        for hook in self.user_hooks:
            replaced = hook(self.module, grad_inputs, self.grad_outputs)
            if replaced is None:
                continue
            if len(replaced) != len(grad_inputs):
                raise RuntimeError("Backward hook returned an invalid number of grad_input, got "
                                   f"{len(replaced)}, but expected {len(grad_inputs)}")
            grad_inputs = replaced
        self.grad_outputs = None
        return tuple(grad_inputs[i] for i in self.input_tensors_index)
