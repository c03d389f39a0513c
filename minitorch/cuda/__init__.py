"""mt.cuda: what the GPU backend offers (torch.cuda's names), answerable without CuPy installed:
is_available() is False then, and the calls that need a GPU raise the backend's clear error.
Devices, streams (what graph capture needs of them) and, from minitorch/_cuda_graphs.py, CUDA
graphs (CUDAGraph, graph, graph_pool_handle, make_graphed_callables)."""


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


def is_bf16_supported(including_emulation=True):
    """torch.cuda.is_bf16_supported: True with a GPU (our kernels store bfloat16 and compute it
    in float32 on every device), False without one (torch's answer on a CPU-only machine)."""
    return is_available()


def device_count():
    """Number of visible CUDA devices, 0 when CuPy or a GPU is unavailable
    (torch.cuda.device_count)."""
    return _cupy().cuda.runtime.getDeviceCount() if is_available() else 0


def _require_cupy():
    from .._gpu import device_count as count_devices, import_cupy
    cupy = import_cupy()
    count_devices(cupy)
    return cupy


def _index(device):
    """A device argument (None, int, "cuda:1", mt.device) as a GPU index."""
    if device is None:
        return current_device()
    if isinstance(device, int):
        return device
    from ..backend import device as Device
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
    """Wait for every kernel queued on the device (a no-op without a GPU; refused inside a graph
    capture, as in torch)."""
    if is_available():
        _refuse_during_capture()
        _cupy().cuda.Device(_index(device)).synchronize()


def empty_cache():
    """Release the device buffers minitorch and CuPy keep for reuse (torch.cuda.empty_cache;
    a no-op without a GPU or before any CUDA tensor)."""
    from .. import _gpu
    for backend in _gpu._BACKENDS.values():
        backend.empty_cache()


def manual_seed(seed):
    """Random numbers are drawn on the host for every device, so this is mt.manual_seed."""
    from ..random import manual_seed as seed_all
    seed_all(seed)


manual_seed_all = manual_seed


# ---- streams (what graph capture needs of torch.cuda's streams) --------------------------------
class Stream:
    """torch.cuda.Stream over a CuPy stream (non-blocking, as torch's streams are). `priority`
    is accepted and ignored (CuPy streams here all have the default priority)."""

    def __init__(self, device=None, priority=0, **kwargs):
        cupy = _require_cupy()
        self.device = _device_of(device)
        self.priority = priority
        self._stream = kwargs.get("_cupy_stream") or cupy.cuda.Stream(non_blocking=True)

    @property
    def cuda_stream(self):
        return self._stream.ptr

    def __eq__(self, other):
        return isinstance(other, Stream) and self._stream.ptr == other._stream.ptr

    def __hash__(self):
        return hash(self._stream.ptr)

    def __repr__(self):
        return f"<minitorch.cuda.Stream device={self.device} cuda_stream={hex(self.cuda_stream)}>"

    def synchronize(self):
        """Wait for the stream's work (refused inside a graph capture, as in torch)."""
        _refuse_during_capture()
        self._stream.synchronize()

    def wait_stream(self, stream):
        """Later work on this stream waits for the work queued on `stream` so far."""
        self._stream.wait_event(stream._stream.record())

    def query(self):
        """True: the emulator and the callers here only ask once the work is known done."""
        return True

    def is_capturing(self):
        from .._gpu import graphs
        return graphs.capturing_on(self._stream.ptr)


def _device_of(device):
    from ..backend import device as Device
    return Device(f"cuda:{_index(device)}")


def _refuse_during_capture():
    from .._gpu import graphs
    capture = graphs.active()
    if capture is not None:
        capture.refuse()


def current_stream(device=None):
    """The stream CUDA work is queued on now (torch.cuda.current_stream)."""
    cupy = _require_cupy()
    return Stream(device, _cupy_stream=cupy.cuda.get_current_stream())


def default_stream(device=None):
    """The legacy default stream (torch.cuda.default_stream)."""
    cupy = _require_cupy()
    return Stream(device, _cupy_stream=cupy.cuda.Stream.null)


class stream:
    """`with mt.cuda.stream(s):` queues CUDA work on s (None: no change), torch.cuda.stream."""

    def __init__(self, stream):
        self.stream = stream

    def __enter__(self):
        if self.stream is not None:
            self.stream._stream.__enter__()
        return self.stream

    def __exit__(self, *exc):
        if self.stream is not None:
            self.stream._stream.__exit__(*exc)
        return False


def set_stream(stream):
    """Make `stream` the current stream (torch.cuda.set_stream)."""
    if stream is not None:
        stream._stream.use()


# ---- CUDA graphs ----------------------------------------------------------------------------
from .._cuda_graphs import (CUDAGraph, graph, graph_pool_handle,  # noqa: E402,F401
                          is_current_stream_capturing, make_graphed_callables)


from . import amp  # noqa: E402  (torch.cuda.amp; last: it imports minitorch.amp)
