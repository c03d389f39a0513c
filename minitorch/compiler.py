"""mt.compiler (torch.compiler) for an eager-only framework: there is no graph compiler here
(mt.compile returns the model itself, see settings.py), so code is never being compiled or
exported. The decorators return what they are given and reset() has no caches to clear; the
questions scripts ask (is_compiling(), is_dynamo_compiling(), is_exporting()) are answered
False, which is torch's answer in eager mode."""
from .settings import compile

__all__ = ["allow_in_graph", "assume_constant_result", "compile", "cudagraph_mark_step_begin",
           "disable", "is_compiling", "is_dynamo_compiling", "is_exporting", "reset"]


def is_compiling():
    """False: minitorch runs code eagerly, never inside a compiler's trace."""
    return False


def is_dynamo_compiling():
    """False (see is_compiling)."""
    return False


def is_exporting():
    """False: minitorch has no torch.export."""
    return False


def reset():
    """A no-op: there are no compiled graphs or caches to clear."""


def cudagraph_mark_step_begin():
    """A no-op: mt.compile does not build CUDA graphs (mt.cuda.graph captures them by hand)."""


def disable(fn=None, recursive=True, *, reason=None):
    """Returns fn itself (or, without fn, a decorator that does): code is never compiled, so
    there is nothing to turn off."""
    if fn is None:
        return lambda f: disable(f, recursive, reason=reason)
    assert callable(fn), "fn must be callable"
    return fn


def allow_in_graph(fn):
    """Returns fn (each of a list or tuple of them) unchanged: there is no graph to keep it in."""
    if isinstance(fn, (list, tuple)):
        return type(fn)(allow_in_graph(f) for f in fn)
    assert callable(fn), "allow_in_graph expects a callable"
    return fn


def assume_constant_result(fn):
    """Returns fn unchanged: without a compiler its result is computed at every call."""
    return fn
