"""The flag machinery torch.backends' modules share: a module whose attributes are checked
properties (`cudnn.benchmark = 1` raises torch's RuntimeError, an unknown name AttributeError),
and a context manager that sets some flags and restores them."""
import contextlib
import sys
import types


class FlagModule(types.ModuleType):
    """A module whose boolean flags are validated on assignment, as torch's are."""

    _flags = {}     # name -> torch's setter name (for its "expects a bool" message)

    def __setattr__(self, name, value):
        if name in self._flags:
            check_bool(self._flags[name], value)
        super().__setattr__(name, value)


def check_bool(setter, value):
    if not isinstance(value, bool):
        raise RuntimeError(f"{setter} expects a bool, but got {type(value).__name__}")


def install(module_name, cls):
    """Turn the already-loaded module `module_name` into an instance of `cls`."""
    sys.modules[module_name].__class__ = cls


@contextlib.contextmanager
def flags_set(module, **values):
    """Set the given flags (None leaves one alone) for the block, then restore them."""
    values = {k: v for k, v in values.items() if v is not None}
    saved = {name: getattr(module, name) for name in values}
    for name, value in values.items():
        setattr(module, name, value)
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(module, name, value)
