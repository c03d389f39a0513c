"""torch's global switches whose contract minitorch meets without doing anything: compile (the
eager program is the compiled program's specification, and it is what runs) and the float32
matmul precision (our kernels always compute in full float32, which every setting permits)."""
import warnings

__all__ = ["compile", "get_float32_matmul_precision", "set_float32_matmul_precision"]

_PRECISIONS = ("highest", "high", "medium")
_state = {"matmul_precision": "highest"}


def compile(model=None, *, fullgraph=False, dynamic=None, backend=None, mode=None, options=None,
            name=None, disable=False, **kwargs):
    """torch.compile: returns `model` itself (or, without a model, a decorator that does).
    There is no graph compiler here; the eager code already runs our own kernels."""
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be specified "
                           "at the same time.")
    if model is None:
        return lambda fn: fn
    if not callable(model):
        raise RuntimeError("Invalid model or function: not callable")
    return model


def set_float32_matmul_precision(precision):
    """Records the float32 matmul precision setting (torch.set_float32_matmul_precision). No-op
    stand-in: our kernels always compute in full float32, whatever the setting."""
    if precision not in _PRECISIONS:
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
                      "set_float32_matmul_precision call has no effect.")
        return
    _state["matmul_precision"] = precision


def get_float32_matmul_precision():
    """The recorded float32 matmul precision, 'highest' by default
    (torch.get_float32_matmul_precision)."""
    return _state["matmul_precision"]
