"""mt.accelerator: torch.accelerator's device-agnostic calls, answered for minitorch's one
accelerator, the CUDA GPU backend (mt.cuda). Without a usable GPU there is no accelerator:
current_accelerator() is None and the calls that need a device raise torch's RuntimeError."""
import contextlib

from . import cuda
from .backend import device as Device

__all__ = ["current_accelerator", "current_device_idx", "current_device_index", "device_count",
           "device_index", "is_available", "set_device_idx", "set_device_index", "synchronize"]

_NONE = "Cannot access accelerator device when none is available."


def is_available():
    """True when a GPU is usable (mt.cuda.is_available())."""
    return cuda.is_available()


def current_accelerator(check_available=False):
    """device('cuda') when a GPU is usable, else None. (A torch built for CUDA answers cuda even
    without a GPU unless check_available; minitorch only counts a usable GPU, so scripts that
    fall back to the CPU on None do so.)"""
    return Device("cuda") if cuda.is_available() else None


def device_count():
    return cuda.device_count()


def _require():
    if not cuda.is_available():
        raise RuntimeError(_NONE)


def _index(device):
    """An int, "cuda:1" or a device as a GPU index (None: the current one)."""
    if device is None:
        return cuda.current_device()
    if isinstance(device, int):
        return device
    dev = Device(device)
    if dev.type != "cuda":
        raise ValueError(f"{dev.type} doesn't match the current accelerator cuda.")
    return cuda.current_device() if dev.index is None else dev.index


def current_device_index():
    _require()
    return cuda.current_device()


def set_device_index(device, /):
    _require()
    cuda.set_device(_index(device))


def synchronize(device=None, /):
    """Wait for every kernel queued on the device."""
    _require()
    cuda.synchronize(_index(device))


@contextlib.contextmanager
def device_index(device, /):
    """Make `device` (an index, or None: change nothing) current inside the block."""
    if device is None:
        yield
        return
    previous = current_device_index()
    set_device_index(device)
    try:
        yield
    finally:
        set_device_index(previous)


current_device_idx, set_device_idx = current_device_index, set_device_index   # torch's old names
