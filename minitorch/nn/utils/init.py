"""nn.utils.skip_init: build a module without running its parameter initialization."""
import inspect

from ..module import Module

__all__ = ["skip_init"]


def skip_init(module_cls, *args, **kwargs):
    """module_cls(*args, **kwargs) whose parameters are left with unspecified values. torch
    builds it on the meta device and allocates it empty; minitorch has no meta device, so the
    module is built on `device` directly (its values are then simply not to be relied on)."""
    if not (isinstance(module_cls, type) and issubclass(module_cls, Module)):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    kwargs["device"] = kwargs.pop("device", "cpu")
    return module_cls(*args, **kwargs)
