"""torch.utils.hooks: the handle register_*hook returns, and the marker for hooks a checkpoint
need not warn about."""
import warnings

from ..autograd.engine import RemovableHandle

__all__ = ["RemovableHandle", "unserializable_hook", "warn_if_has_hooks"]


def unserializable_hook(f):
    """Marks f as a hook that is not expected to be saved with its tensor (no warning)."""
    f.__torch_unserializable__ = True
    return f


def warn_if_has_hooks(tensor):
    """Warns, as torch does, for each backward hook on `tensor` that saving would lose."""
    for hook in _backward_hooks(tensor):
        if not hasattr(hook, "__torch_unserializable__"):
            warnings.warn(f"backward hook {hook!r} on tensor will not be serialized.  If this is "
                          "expected, you can decorate the function with "
                          "@torch.utils.hooks.unserializable_hook to suppress this warning",
                          stacklevel=2)


def _backward_hooks(tensor):
    """tensor.register_hook's hooks: on a leaf the tensor holds them, on an op's result its node
    does (retain_grad's store is not one of them, as in torch)."""
    if tensor.grad_fn is None:
        return list((tensor._hooks or {}).values())
    per_output = (tensor.grad_fn._tensor_hooks or {}).get(tensor._output_nr, {})
    return [hook for hook in per_output.values() if not getattr(hook, "retains_grad", False)]
