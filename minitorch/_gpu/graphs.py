"""CUDA graph capture under the GPU backend: the capture's life (begin, end, abandon), the
memory pool a graph owns, and the host synchronisations a capture refuses. mt.cuda's CUDAGraph,
graph and make_graphed_callables (torch's API) are built on this.

A capture runs on a CuPy stream (cupy.cuda.Stream.begin_capture / end_capture): while it is the
current stream every kernel, memset and allocation of the backend goes to it and is recorded
into a cupy.cuda.graph.Graph instead of run. For the recording to stay valid,

- every buffer allocated during the capture comes from the graph's pool and lives as long as
  the pool (so a replay reads and writes the same addresses); a new one is allocated with the
  thread in relaxed capture mode, since cudaMalloc is a call a global or thread-local capture
  refuses (CUDA 13 enforces it; torch's allocator does the same). A buffer freed during the
  capture goes back to that pool only, and is handed out again only to a later allocation of a
  capture into the same pool, which runs after it on replay (torch's private graph pool; graphs
  share one through graph_pool_handle() or another graph's pool());
- the foreach pointer tables the captured optimizer kernels read are held by the graph (the
  backend's table cache may drop them later);
- anything that waits for the device or copies from host memory (to_host, an upload, a
  synchronize, an error flag or index read back) is refused: the capture is abandoned (the
  stream's capture ended and discarded, the backend as before) and torch's RuntimeError
  raised. Integer indices of gather/scatter-like kernels, which the backend checks on the host
  before a kernel reads them, are checked again before each replay instead (one small readback
  per replay); indices computed inside the captured work cannot be, and are refused.

Tensors made before the capture and read by it (static inputs, parameters) must be kept alive
by the caller while the graph is replayed, as in torch. One capture at a time per process.
"""

import contextlib
import ctypes
import os

from . import buffers

CAPTURING = "CUDA error: operation not permitted when stream is capturing"
INVALIDATED = "CUDA error: operation failed due to a previous error during capture"
ILLEGAL_STATE = "CUDA error: the operation cannot be performed in the present state"
MODES = ("global", "thread_local", "relaxed")      # cudaStreamCaptureMode 0, 1, 2

_active = None      # the Capture under way, if any


class GraphPool:
    """The buffers allocated while graphs sharing this pool captured (torch's graph pool)."""

    def __init__(self):
        self._buckets = {}      # (n, dtype): [(buffer, its memory)]
        self._held = []         # buffers without a readable memory object: kept, never reused
        self.nbytes = 0

    def __repr__(self):
        return f"<graph memory pool: {self.nbytes} bytes>"

    def empty(self, allocate, n, dtype):
        """A buffer of the pool nothing else holds any more, else a new one, kept."""
        bucket = self._buckets.get((n, dtype))
        if bucket:
            buffer = buffers._first_free(bucket, buffers._FREE)
            if buffer is not None:
                return buffer
        buffer = allocate(n, dtype)
        memory = _memory(buffer)
        if memory is None:
            self._held.append(buffer)
        else:
            self._buckets.setdefault((n, dtype), []).append((buffer, memory))
        self.nbytes += buffer.nbytes
        return buffer


def _memory(buffer):
    return getattr(getattr(buffer, "data", None), "mem", None)


class _CapturingCupy:
    """The cupy module as the backend sees it during a capture: allocations from the graph's
    pool, uploads from host memory refused, the rest CuPy's own."""

    def __init__(self, cupy, capture):
        self._cupy, self._capture = cupy, capture

    def __getattr__(self, name):
        return getattr(self._cupy, name)

    def empty(self, n, dtype):
        return self._capture.empty(n, dtype)

    def zeros(self, n, dtype):
        buffer = self._capture.empty(n, dtype)
        buffer.data.memset_async(0, buffer.nbytes)
        return buffer

    def asarray(self, *args, **kwargs):
        self._capture.refuse()


class Capture:
    """One capture under way on `backend`, into `pool`, on the CuPy `stream`."""

    def __init__(self, backend, stream, pool, mode):
        self.backend, self.stream, self.pool = backend, stream, pool
        self.index_checks = {}      # (pointer, n, dim): index buffer, checked before replays
        self._allocated = set()     # ids of the memories allocated during this capture
        self._saved = (backend.cupy, backend._empty)
        self._allocate = backend.cupy.empty
        stream.begin_capture(_cuda_mode(backend.cupy, mode))
        backend.cupy = _CapturingCupy(backend.cupy, self)
        backend._empty = self.empty
        backend._capture = self

    def empty(self, n, dtype):
        buffer = self.pool.empty(self._allocate_relaxed, n, dtype)
        memory = _memory(buffer)
        if memory is not None:
            self._allocated.add(id(memory))
        return buffer

    def _allocate_relaxed(self, n, dtype):
        with relaxed_capture_mode(self._saved[0]):
            return self._allocate(n, dtype)

    def defer_index_check(self, index, n, dim):
        """The backend's host-side check of `index` (n entries in [0, dim)), deferred to each
        replay; refused for indices computed inside the capture (their values exist only when
        the graph runs)."""
        memory = _memory(index)
        if memory is not None and id(memory) in self._allocated:
            self.refuse()
        self.index_checks.setdefault((index.data.ptr, n, dim), index)

    def refuse(self):
        """A host synchronisation was asked for: abandon the capture, raise torch's error."""
        self.abandon()
        raise RuntimeError(CAPTURING)

    def end(self):
        """The captured cupy Graph, the backend restored. RuntimeError when the capture was
        invalidated (a CuPy call refused inside it)."""
        self._restore()
        try:
            return self.stream.end_capture()
        except RuntimeError as error:     # CuPy's CUDARuntimeError is one
            raise RuntimeError(INVALIDATED) from error

    def abandon(self):
        """End the capture and drop what it recorded; the backend works eagerly again."""
        self._restore()
        try:
            self.stream.end_capture()
        except RuntimeError:    # already invalidated: ending it is all that was needed
            pass

    def _restore(self):
        global _active
        backend = self.backend
        if backend._capture is self:
            backend.cupy, backend._empty = self._saved
            backend._capture = None
        if _active is self:
            _active = None

    def tables(self):
        """The device pointer tables of the backend's foreach kernels (held by the graph)."""
        return list(self.backend.__dict__.get("_foreach_tables", {}).values())


def _cuda_mode(cupy, mode):
    runtime = cupy.cuda.runtime
    name = {"global": "streamCaptureModeGlobal", "thread_local": "streamCaptureModeThreadLocal",
            "relaxed": "streamCaptureModeRelaxed"}[mode]
    return getattr(runtime, name, MODES.index(mode))


@contextlib.contextmanager
def relaxed_capture_mode(cupy):
    """The calling thread in relaxed capture mode for the duration (its own mode restored after):
    its "potentially unsafe" calls such as cudaMalloc are then allowed during a capture. They are
    not stream operations, so nothing of them is recorded."""
    exchange = capture_mode_exchange(cupy)
    previous = exchange(MODES.index("relaxed"))
    try:
        yield
    finally:
        exchange(previous)


def capture_mode_exchange(cupy):
    """cudaThreadExchangeStreamCaptureMode as a function of the new mode returning the previous
    one: CuPy's binding where it has one (the test emulator's), else the driver's."""
    return getattr(cupy.cuda.runtime, "threadExchangeStreamCaptureMode", None) or \
        _driver_exchange


_libcuda = None


def _driver_exchange(mode):
    """cuThreadExchangeStreamCaptureMode from the driver library (CuPy binds no such call): the
    thread's new mode in, its previous one out."""
    global _libcuda
    if _libcuda is None:
        library = ctypes.CDLL("nvcuda.dll" if os.name == "nt" else "libcuda.so.1")
        library.cuThreadExchangeStreamCaptureMode.argtypes = [ctypes.POINTER(ctypes.c_int)]
        library.cuThreadExchangeStreamCaptureMode.restype = ctypes.c_int
        _libcuda = library
    value = ctypes.c_int(mode)
    status = _libcuda.cuThreadExchangeStreamCaptureMode(ctypes.byref(value))
    if status != 0:
        raise RuntimeError(f"CUDA driver error {status} from cuThreadExchangeStreamCaptureMode")
    return value.value


def begin(backend, stream, pool, mode):
    """Start capturing `backend`'s work on the CuPy `stream` (its current stream) into `pool`."""
    global _active
    if _active is not None:
        raise RuntimeError(ILLEGAL_STATE)
    _active = Capture(backend, stream, pool, mode)
    return _active


def active():
    """The Capture under way, or None."""
    return _active


def capturing_on(stream_ptr):
    """Whether a capture is under way on the stream with this pointer."""
    return _active is not None and _active.stream.ptr == stream_ptr


def sync_point(backend):
    """Called by the backend before anything that waits for the device."""
    capture = backend._capture
    if capture is not None:
        capture.refuse()


def abandon_after(error):
    """After `error` escaped a capture: abandon it; returns the error to raise (torch's text
    for CuPy's refusal of a host synchronisation)."""
    capture = _active
    if capture is not None:
        capture.abandon()
    if type(error).__name__ == "CUDARuntimeError" and \
            getattr(error, "status", None) in (900, 906):
        return RuntimeError(CAPTURING)
    return error

