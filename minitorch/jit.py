"""torch.jit as no-op stand-ins: minitorch has no TorchScript compiler, so scripting and
tracing return what they are given and the code runs as the Python it is (the same results
torch's eager mode gives). What TorchScript alone can do, write a .pt archive, raises instead of
pretending: save a state_dict with minitorch.save.

Scripts use torch.jit for speed-ups they can live without (`@torch.jit.script` on an activation,
`torch.jit.trace(model, x)` before inference), for annotations (`Final`, `annotate`, `ignore`,
`unused`, `export`), and to ask whether they are being compiled (`is_scripting()`, always False
here, as in torch's eager mode).
"""
import contextlib
import typing

from .nn.module import Module

__all__ = ["script", "trace", "trace_module", "is_scripting", "is_tracing", "ignore", "unused",
           "export", "interface", "annotate", "Attribute", "Final", "ScriptModule",
           "ScriptFunction", "fork", "wait", "freeze", "optimize_for_inference",
           "optimized_execution", "set_fusion_strategy", "save", "load"]

Final = typing.Final
_NO_ARCHIVES = ("TorchScript archives have no minitorch counterpart (minitorch has no "
                "TorchScript compiler; torch.jit.script and trace return their argument). Save "
                "the weights with minitorch.save(model.state_dict(), path) instead.")


class ScriptModule(Module):
    """torch.jit.ScriptModule's name, for isinstance checks: script() never makes one (it
    returns the module itself), so a module is a ScriptModule only if its class derives from
    this one."""


class ScriptFunction:
    """torch.jit.ScriptFunction's name, for isinstance checks; script() returns the function
    itself, never one of these."""


def script(obj, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    """No-op stand-in for torch.jit.script: returns `obj` (a function, a Module or a class)
    unchanged; it runs eagerly, as it would in torch without TorchScript."""
    return obj


def trace(func, example_inputs=None, optimize=None, check_trace=True, check_inputs=None,
          check_tolerance=1e-5, strict=True, _force_outplace=False, _module_class=None,
          _compilation_unit=None, example_kwarg_inputs=None, _store_inputs=True):
    """No-op stand-in for torch.jit.trace: returns `func` (a function or a Module) unchanged,
    without running it on the example inputs; later calls run the Python as written, so the
    result follows the inputs' control flow (a real trace would freeze the traced path)."""
    return func


def trace_module(mod, inputs, optimize=None, check_trace=True, check_inputs=None,
                 check_tolerance=1e-5, strict=True, _force_outplace=False,
                 _module_class=None, _compilation_unit=None, example_inputs_is_kwarg=False,
                 _store_inputs=True):
    """No-op stand-in for torch.jit.trace_module: returns `mod` unchanged."""
    return mod


def is_scripting():
    """False: nothing runs under TorchScript here (torch's answer in eager mode)."""
    return False


def is_tracing():
    """False: nothing is traced here."""
    return False


def ignore(drop=False, **kwargs):
    """@torch.jit.ignore / @torch.jit.ignore(drop=True): leaves the function as it is (it is
    never compiled here, so there is nothing to leave out)."""
    if callable(drop):
        return drop
    return lambda fn: fn


def unused(fn):
    """@torch.jit.unused: the function, unchanged."""
    return fn


def export(fn):
    """@torch.jit.export: the method, unchanged."""
    return fn


def interface(obj):
    """@torch.jit.interface: the class, unchanged."""
    return obj


def annotate(the_type, the_value):
    """torch.jit.annotate: the value (the type is for TorchScript only)."""
    return the_value


def Attribute(value, type):  # noqa: N802  (torch's name)
    """torch.jit.Attribute: the value itself, as in torch's eager mode."""
    return value


class Future:
    """What fork() returns: the call's result, computed at once (no TorchScript threads)."""

    def __init__(self, value):
        self._value = value

    def wait(self):
        return self._value

    def done(self):
        return True


def fork(func, *args, **kwargs):
    """torch.jit.fork: runs func(*args, **kwargs) now (torch's eager fork runs it at once too)
    and returns a Future holding the result."""
    return Future(func(*args, **kwargs))


def wait(future):
    """torch.jit.wait: the result of a fork."""
    return future.wait()


def freeze(mod, preserved_attrs=None, optimize_numerics=True):
    """No-op stand-in for torch.jit.freeze: returns `mod` unchanged."""
    return mod


def optimize_for_inference(mod, other_methods=None):
    """No-op stand-in for torch.jit.optimize_for_inference: returns `mod` unchanged."""
    return mod


@contextlib.contextmanager
def optimized_execution(should_optimize):
    """No-op stand-in for torch.jit.optimized_execution (there is no executor to switch)."""
    yield


def set_fusion_strategy(strategy):
    """Accepted and recorded nowhere (no fuser here); returns the strategy, as torch returns
    the previous one."""
    return strategy


def save(m, f, _extra_files=None):
    """torch.jit.save: refused (see the module docstring)."""
    raise NotImplementedError(f"torch.jit.save: {_NO_ARCHIVES}")


def load(f, map_location=None, _extra_files=None, _restore_shapes=False):
    """torch.jit.load: refused (see the module docstring)."""
    raise NotImplementedError(f"torch.jit.load: {_NO_ARCHIVES}")
