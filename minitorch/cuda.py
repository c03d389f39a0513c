"""mt.cuda: what the GPU backend offers (torch.cuda's names), answerable without CuPy installed:
is_available() is False then, and the calls that need a GPU raise the backend's clear error."""


def _cupy():
    try:
        import cupy
        return cupy
    except ImportError:
        return None


def is_available():
    """True when CuPy is installed and sees at least one GPU (never raises)."""
    cupy = _cupy()
    if cupy is None:
        return False
    try:
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # CuPy present but no driver/GPU: report "not available", never raise
        return False


def device_count():
    """Number of visible CUDA devices, 0 when CuPy or a GPU is unavailable
    (torch.cuda.device_count)."""
    return _cupy().cuda.runtime.getDeviceCount() if is_available() else 0


def _require_cupy():
    from ._gpu import device_count as count_devices, import_cupy
    cupy = import_cupy()
    count_devices(cupy)
    return cupy


def _index(device):
    """A device argument (None, int, "cuda:1", mt.device) as a GPU index."""
    if device is None:
        return current_device()
    if isinstance(device, int):
        return device
    from .backend import device as Device
    dev = Device(device)
    if dev.type != "cuda":
        raise ValueError(f"Expected a cuda device, but got: {dev}")
    return dev.index


def current_device():
    """The index of the GPU that CuPy currently targets."""
    return _require_cupy().cuda.runtime.getDevice()


def set_device(device):
    """Makes device the current CUDA device (torch.cuda.set_device)."""
    _require_cupy().cuda.runtime.setDevice(_index(device))


def get_device_name(device=None):
    """Name of a CUDA device, the current one by default (torch.cuda.get_device_name)."""
    props = _require_cupy().cuda.runtime.getDeviceProperties(_index(device))
    name = props["name"]
    return name.decode() if isinstance(name, bytes) else name


def synchronize(device=None):
    """Wait for every kernel queued on the device (a no-op without a GPU)."""
    if is_available():
        _cupy().cuda.Device(_index(device)).synchronize()


def empty_cache():
    """Release the device buffers minitorch and CuPy keep for reuse (torch.cuda.empty_cache;
    a no-op without a GPU or before any CUDA tensor)."""
    from . import _gpu
    for backend in _gpu._BACKENDS.values():
        backend.empty_cache()


def manual_seed(seed):
    """Random numbers are drawn on the host for every device, so this is mt.manual_seed."""
    from .random import manual_seed as seed_all
    seed_all(seed)


manual_seed_all = manual_seed


from . import cuda_amp as amp  # noqa: E402  (mt.cuda.amp; last: it imports minitorch.amp)
