"""mt.cuda: what the GPU backend offers (torch.cuda's names), answerable without CuPy installed:
is_available() is False then, and the calls that need a GPU raise the backend's clear
RuntimeError (torch built with CUDA raises one on a machine without a GPU; a CPU-only torch
build raises AssertionError instead). Devices and their properties, streams and events (CuPy's),
memory statistics (memory.py), the generator's state (random.py) and, from
minitorch/_cuda_graphs.py, CUDA graphs (CUDAGraph, graph, graph_pool_handle,
make_graphed_callables)."""
from .._gpu.memory import OutOfMemoryError


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
    return get_device_properties(device).name


class _CudaDeviceProperties:
    """torch.cuda.get_device_properties' answer, from cudaGetDeviceProperties via CuPy."""
    _FIELDS = (("name", "name", ""), ("major", "major", 0), ("minor", "minor", 0),
               ("total_memory", "totalGlobalMem", 0),
               ("multi_processor_count", "multiProcessorCount", 0),
               ("L2_cache_size", "l2CacheSize", 0), ("warp_size", "warpSize", 32),
               ("max_threads_per_multi_processor", "maxThreadsPerMultiProcessor", 0),
               ("regs_per_multiprocessor", "regsPerMultiprocessor", 0),
               ("is_integrated", "integrated", 0), ("is_multi_gpu_board", "isMultiGpuBoard", 0),
               ("uuid", "uuid", b""), ("pci_bus_id", "pciBusID", 0),
               ("pci_device_id", "pciDeviceID", 0), ("pci_domain_id", "pciDomainID", 0))

    def __init__(self, props):
        for field, key, default in self._FIELDS:
            value = props.get(key, default)
            if field == "name" and isinstance(value, bytes):
                value = value.decode()
            setattr(self, field, value)
        self.is_integrated, self.is_multi_gpu_board = (bool(self.is_integrated),
                                                       bool(self.is_multi_gpu_board))

    def __repr__(self):
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, "
                f"minor={self.minor}, total_memory={self.total_memory // 2 ** 20}MB, "
                f"multi_processor_count={self.multi_processor_count}, "
                f"L2_cache_size={self.L2_cache_size // 2 ** 20}MB)")


def get_device_properties(device=None):
    """The device's properties (torch.cuda.get_device_properties): name, major, minor,
    total_memory, multi_processor_count, L2_cache_size, warp_size, ...; needs a GPU."""
    cupy = _require_cupy()
    index = _index(device)
    if not 0 <= index < cupy.cuda.runtime.getDeviceCount():
        raise AssertionError("Invalid device id")
    return _CudaDeviceProperties(cupy.cuda.runtime.getDeviceProperties(index))


def get_device_capability(device=None):
    """(major, minor) compute capability of the device (torch.cuda.get_device_capability)."""
    props = get_device_properties(device)
    return props.major, props.minor


def is_initialized():
    """Whether minitorch has started using a GPU (made a CUDA tensor or called init())."""
    from .. import _gpu
    return bool(_gpu._BACKENDS)


def init():
    """Start minitorch's CUDA backend on the current device now rather than at the first CUDA
    tensor (torch.cuda.init); RuntimeError without CuPy or a GPU."""
    from .. import _gpu
    _gpu.backend_for(current_device())


class device:
    """`with mt.cuda.device(d):` makes GPU d current inside the block (torch.cuda.device); a
    negative index or None changes nothing."""

    def __init__(self, device):
        self.idx = -1 if device is None else _index(device)
        self.prev_idx = -1

    def __enter__(self):
        if self.idx >= 0:
            runtime = _require_cupy().cuda.runtime
            self.prev_idx = runtime.getDevice()
            if self.prev_idx != self.idx:
                runtime.setDevice(self.idx)

    def __exit__(self, *exc):
        if self.idx >= 0 and self.prev_idx != self.idx:
            _require_cupy().cuda.runtime.setDevice(self.prev_idx)
        return False


class device_of(device):
    """`with mt.cuda.device_of(t):` makes t's GPU current (nothing for a CPU tensor)."""

    def __init__(self, obj):
        super().__init__(obj.get_device() if obj.is_cuda else -1)


def synchronize(device=None):
    """Wait for every kernel queued on the device (a no-op without a GPU; refused inside a graph
    capture, as in torch)."""
    if is_available():
        _refuse_during_capture()
        _cupy().cuda.Device(_index(device)).synchronize()


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

    def record_event(self, event=None):
        """Record `event` (a new Event when None) after the work queued so far; returns it."""
        event = Event() if event is None else event
        event.record(self)
        return event

    def wait_event(self, event):
        """Later work on this stream waits for the work `event` recorded."""
        event.wait(self)

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


class StreamContext:
    """`with mt.cuda.StreamContext(s):` queues CUDA work on s (None: no change)."""

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


def stream(stream):
    """`with mt.cuda.stream(s):` queues CUDA work on s (None: no change), torch.cuda.stream."""
    return StreamContext(stream)


class Event:
    """torch.cuda.Event over a CuPy event: a marker in a stream's work, for waiting on it from
    another stream or the host and, with enable_timing=True, for timing the work between two
    of them (elapsed_time, in milliseconds). `interprocess` events are not supported."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False, external=False):
        if interprocess:
            raise NotImplementedError("minitorch.cuda.Event: interprocess events are not "
                                      "supported")
        self.enable_timing, self.blocking = enable_timing, blocking
        self._event = _require_cupy().cuda.Event(block=blocking,
                                                 disable_timing=not enable_timing)
        self._recorded = False

    @property
    def cuda_event(self):
        return self._event.ptr

    def record(self, stream=None):
        """Record the event after the work queued so far on `stream` (the current one)."""
        stream = current_stream() if stream is None else stream
        self._event.record(stream._stream)
        self._recorded = True

    def wait(self, stream=None):
        """Make later work on `stream` (the current one) wait for the recorded work."""
        if self._recorded:
            stream = current_stream() if stream is None else stream
            stream._stream.wait_event(self._event)

    def query(self):
        """Whether the recorded work has finished (True before any record, as torch)."""
        return not self._recorded or self._event.done

    def synchronize(self):
        """Wait on the host until the recorded work has finished."""
        if self._recorded:
            _refuse_during_capture()
            self._event.synchronize()

    def elapsed_time(self, end_event):
        """Milliseconds from this event to end_event, both recorded with enable_timing=True."""
        if not (self.enable_timing and end_event.enable_timing):
            raise ValueError("Both events must be created with argument 'enable_timing=True'.")
        if not (self._recorded and end_event._recorded):
            raise ValueError("Both events must be recorded before calculating elapsed time.")
        if not (self.query() and end_event.query()):
            raise RuntimeError("Both events must be completed before calculating elapsed time.")
        return _cupy().cuda.get_elapsed_time(self._event, end_event._event)

    def __repr__(self):
        return f"<minitorch.cuda.Event {hex(self.cuda_event)}>"


def set_stream(stream):
    """Make `stream` the current stream (torch.cuda.set_stream)."""
    if stream is not None:
        stream._stream.use()


# ---- CUDA graphs ----------------------------------------------------------------------------
from .._cuda_graphs import (CUDAGraph, graph, graph_pool_handle,  # noqa: E402,F401
                          is_current_stream_capturing, make_graphed_callables)


from . import amp  # noqa: E402  (torch.cuda.amp; last: it imports minitorch.amp)
from . import memory, random  # noqa: E402  (they import the helpers above)
from .memory import *  # noqa: E402,F401,F403  (memory_allocated, memory_stats, ...)
from .random import *  # noqa: E402,F401,F403  (get_rng_state, manual_seed, seed, ...)
