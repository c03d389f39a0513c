"""torch.autograd.function: Function (written in engine.py; ctx is the node itself, so
FunctionCtx is Function), InplaceFunction and once_differentiable."""
import functools

from .engine import Function, _grad_mode, no_grad

__all__ = ["Function", "FunctionCtx", "InplaceFunction", "once_differentiable"]

FunctionCtx = Function


class InplaceFunction(Function):
    """A Function told whether to write its result in place (torch's base for such ops)."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace


class _DelayedError(Function):
    """Passes its inputs through; differentiating through it raises (once_differentiable)."""
    message = ("trying to differentiate twice a function that was marked with "
               "@once_differentiable")

    @staticmethod
    def forward(ctx, *tensors):
        return tensors[0] if len(tensors) == 1 else tensors

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError(_DelayedError.message)


def once_differentiable(fn):
    """Decorates a Function's backward that is not itself differentiable: it runs without
    recording, and a double backward through its results raises torch's RuntimeError."""
    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with no_grad():
            outputs = fn(ctx, *args)
        if not _grad_mode.enabled or not any(
                getattr(a, "requires_grad", False) for a in args):
            return outputs
        single = not isinstance(outputs, tuple)
        outputs = (outputs,) if single else outputs
        floating = [o is not None and o.is_floating_point() for o in outputs]
        present = [o.detach().requires_grad_() for o, f in zip(outputs, floating) if f]
        if not present:
            return outputs[0] if single else outputs
        errored = _DelayedError.apply(*present)
        errored = iter((errored,) if len(present) == 1 else errored)
        result = tuple(next(errored) if f else o for o, f in zip(outputs, floating))
        return result[0] if single else result
    return wrapper
