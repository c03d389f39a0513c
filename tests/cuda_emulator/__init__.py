"""A stand-in for the `cupy` module that runs minitorch's own CUDA kernels on the CPU.

`cupy_module()` offers what minitorch._gpu uses of CuPy (buffers, transfers, devices,
RawModule). Buffers are host memory, each ending at an inaccessible guard page, so a kernel that
reads or writes past a buffer's end faults and the launch reports it. RawModule compiles the
exact text NVRTC would get with g++ and emulator.h (a fiber-per-thread CUDA runtime, see there);
every launch first checks its arguments against the kernel's CUDA declaration.

Streams and CUDA graphs (cupy.cuda.Stream / cupy.cuda.graph.Graph, see "streams and stream
capture" below): work issued while the current stream captures (kernel launches, memsets) is
recorded with its raw addresses instead of run, and Graph.launch() runs the recording again; a
host synchronisation during a capture (a device-to-host copy, a host-to-device upload, a stream
or device synchronize) raises cudaErrorStreamCaptureUnsupported and invalidates the capture,
as the CUDA runtime does; so does a new allocation (cudaMalloc) unless the thread switched to
relaxed mode first (`runtime.threadExchangeStreamCaptureMode`, a call real CuPy does not bind:
minitorch reaches the driver's for it).

With execute=False nothing is compiled (for machines without g++): launches are only checked.
The test suite uses this through tests/conftest.py (MINITORCH_TEST_CUDA=emulator runs every
`device` test on "cuda" too) and tests/test_gpu_backend.py (kernel-by-kernel against the CPU).
"""
import ctypes
import functools
import hashlib
import mmap
import os
import pathlib
import shutil
import subprocess
import tempfile
import threading
import time
import types

import numpy as np

from minitorch._gpu import launch

from .declarations import check_launch, kernel_signatures

HEADER = pathlib.Path(__file__).resolve().with_name("emulator.h")
CXX = shutil.which("g++")
CXX_FLAGS = ["-std=c++17", "-O1", "-shared", "-fPIC", "-fvisibility=hidden", "-w"]
SM_COUNT = 132          # an H100's multiprocessors: the host plans launches for that
TOTAL_MEMORY = 85_520_809_984       # an H100 SXM's global memory, as cudaGetDeviceProperties says
_PROT_NONE = 0


def can_execute():
    """Kernels can be compiled and run here (g++ on PATH)."""
    return CXX is not None


def real_gpu():
    """True when minitorch's cuda device is a real GPU: CuPy imports, is not this emulator
    (which conftest may have put in sys.modules), and sees a device."""
    try:
        import cupy
    except ImportError:
        return False
    import minitorch
    return not getattr(cupy, "emulated", False) and minitorch.cuda.is_available()


# ---------------------------------------------------------------------------------------------
# buffers

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mprotect.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)


def guarded_empty(n, dtype):
    """A 1-D numpy array of n elements whose last byte is followed by an inaccessible page."""
    dtype = np.dtype(dtype)
    nbytes = n * dtype.itemsize
    pages = -(-nbytes // mmap.PAGESIZE)
    raw = np.frombuffer(mmap.mmap(-1, (pages + 1) * mmap.PAGESIZE), np.uint8)
    guard = raw.ctypes.data + pages * mmap.PAGESIZE
    if _libc.mprotect(guard, mmap.PAGESIZE, _PROT_NONE) != 0:
        raise OSError(ctypes.get_errno(), "mprotect failed for a guard page")
    start = pages * mmap.PAGESIZE - nbytes
    return raw[start:start + nbytes].view(dtype)


class Memory:
    """The allocation behind a buffer and all its views (CuPy's `data.mem`): what a reference
    count must see to know that nothing uses the memory any more. `owner` is the stand-in
    module that allocated it: a kernel of another one refuses it, as a real GPU's kernels
    would fault on an address of another CUDA context (or of no device at all). Its `size`
    counts in its pool's used bytes until the last reference goes."""
    __slots__ = ("__weakref__", "owner", "pool", "size")

    def __init__(self, owner, pool=None, size=0):
        self.owner, self.pool, self.size = owner, pool, size

    def __del__(self):
        if self.pool is not None:
            self.pool.release(self.size)


class Array:
    """A CuPy-like 1-D device buffer: host memory (views share it, like CuPy slices)."""

    def __init__(self, host, mem):
        self.host = host
        self.mem = mem

    size = property(lambda self: self.host.size)
    dtype = property(lambda self: self.host.dtype)
    ndim = property(lambda self: self.host.ndim)
    shape = property(lambda self: self.host.shape)
    strides = property(lambda self: self.host.strides)
    nbytes = property(lambda self: self.host.nbytes)
    flags = property(lambda self: self.host.flags)

    @property
    def data(self):
        ptr = self.host.ctypes.data
        return types.SimpleNamespace(ptr=ptr, mem=self.mem,
                                     memset_async=lambda value, n: _memset(ptr, value, n))

    def __len__(self):
        return len(self.host)

    def __getitem__(self, key):
        return Array(self.host[key], self.mem)

    def view(self, dtype):
        return Array(self.host.view(dtype), self.mem)

    def get(self):
        _host_sync("a device-to-host copy")
        return self.host.copy()


def _empty(allocator, n, dtype):
    dtype = np.dtype(dtype)
    pointer = allocator[0](n * dtype.itemsize)
    return Array(pointer.host.view(dtype), pointer.mem)


def _zeros(allocator, n, dtype):
    array = _empty(allocator, n, dtype)
    _memset(array.data.ptr, 0, array.nbytes)
    return array


def _asarray(allocator, host):
    _host_sync("a host-to-device copy from pageable memory")
    host = np.asarray(host)
    array = _empty(allocator, host.size, host.dtype)
    array.host.reshape(host.shape)[...] = host
    return Array(array.host.reshape(host.shape), array.mem)


# ---- CuPy's memory pool (cupy.get_default_memory_pool) and allocator switch ---------------------
ALLOCATION_UNIT = 512       # CuPy's pool rounds every allocation up to a multiple of this


class OutOfMemoryError(MemoryError):
    """cupy.cuda.memory.OutOfMemoryError, with CuPy's message."""

    def __init__(self, size, total, limit=0):
        limit_text = f", limit set to: {limit:,} bytes" if limit else ""
        super().__init__(f"Out of memory allocating {size:,} bytes (allocated so far: "
                         f"{total:,} bytes{limit_text}).")


class MemoryPointer:
    """cupy.cuda.MemoryPointer: an allocation's address, its memory and device (and here the
    host bytes behind it, each allocation ending at a guard page)."""

    def __init__(self, host, mem, device_id):
        self.host, self.mem, self.device_id = host, mem, device_id
        self.ptr = host.ctypes.data


class MemoryPool:
    """cupy.cuda.MemoryPool for the emulator: every live allocation's rounded size counts as
    used; freed memory goes straight back (no cached free blocks, so total_bytes() equals
    used_bytes()). set_limit makes larger requests fail with OutOfMemoryError, as CuPy's."""

    def __init__(self, owner, current_device):
        self._owner, self._device = owner, current_device
        self._used, self._limit = 0, 0

    def malloc(self, size):
        rounded = -(-size // ALLOCATION_UNIT) * ALLOCATION_UNIT
        if self._limit and self._used + rounded > self._limit:
            raise OutOfMemoryError(size, self._used, self._limit)
        _unsafe_call()                   # a new allocation: cudaMalloc
        self._used += rounded
        return MemoryPointer(guarded_empty(size, np.uint8), Memory(self._owner, self, rounded),
                             self._device())

    def release(self, size):
        self._used -= size

    def used_bytes(self):
        return self._used

    def total_bytes(self):
        return self._used

    def free_bytes(self):
        return 0

    def free_all_blocks(self, stream=None):
        pass

    def set_limit(self, size=None, fraction=None):
        self._limit = int(fraction * TOTAL_MEMORY) if fraction is not None else size or 0

    def get_limit(self):
        return self._limit


# ---------------------------------------------------------------------------------------------
# compiling and launching

_compile_lock = threading.Lock()
_launch_lock = threading.Lock()      # the emulator's runtime state is global (emulator.h)


def _cache_dir():
    path = pathlib.Path(os.environ.get("MINITORCH_EMULATOR_CACHE") or
                        pathlib.Path(tempfile.gettempdir()) / f"minitorch-emulator-{os.getuid()}")
    path.mkdir(parents=True, exist_ok=True)
    return path


def emulator_source(code, names):
    """The C++ g++ compiles: the emulator, the module's CUDA text, a launcher per instance."""
    launchers = "".join(
        f'extern "C" __attribute__((visibility("default"))) int emu_launch_{i}('
        f"const unsigned* g, const unsigned* b, void** a, char* e, size_t n) "
        f"{{ return emu::launch(&{name}, g, b, a, e, n); }}\n"
        for i, name in enumerate(names))
    return f'#include "{HEADER}"\n{code}\n{launchers}'


def compile_library(code, names):
    """Build (or find in the cache) the shared library for these instances; returns its path."""
    source = emulator_source(code, names)
    digest = hashlib.sha256((source + HEADER.read_text() + " ".join(CXX_FLAGS)).encode())
    target = _cache_dir() / f"{digest.hexdigest()[:24]}.so"
    with _compile_lock:
        if not target.exists():
            scratch = pathlib.Path(tempfile.mkdtemp(dir=target.parent))
            try:
                (scratch / "module.cpp").write_text(source)
                result = subprocess.run([CXX, *CXX_FLAGS, "module.cpp", "-o", "module.so"],
                                        cwd=scratch, capture_output=True, text=True)
                if result.returncode != 0:
                    raise RuntimeError(f"g++ could not compile the emulated module:\n"
                                       f"{result.stderr[-4000:]}")
                os.replace(scratch / "module.so", target)
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
    return target


class KernelError(RuntimeError):
    """A launch the emulator refused: a fault or misuse a GPU would not report cleanly."""


def _argument_pointer(arg, keep):
    """A pointer to the argument's value, as cuLaunchKernel takes kernel parameters."""
    if arg is None or isinstance(arg, Array):
        holder = ctypes.c_void_p(None if arg is None else arg.data.ptr)
        keep.append(holder)
        return ctypes.addressof(holder)
    value = np.array(arg)       # a typed scalar, or the packed geometry struct
    keep.append(value)
    return value.ctypes.data


class Function:
    def __init__(self, name, signature, entry, launches, owner=None):
        self.name, self.signature, self.entry, self.launches = name, signature, entry, launches
        self.owner = owner

    def __call__(self, grid, block, args):
        check_launch(self.name, self.signature, grid, block, args,
                     lambda a: isinstance(a, Array))
        for i, arg in enumerate(args):
            if isinstance(arg, Array) and arg.mem.owner is not self.owner:
                raise KernelError(f"{self.name}: argument {i} is a buffer of another CuPy "
                                  f"module (another context): the kernel cannot read it")
        self.launches.append(self.name)
        self.run(grid, block, args)

    def run(self, grid, block, args):
        """Launch without the declaration check (tests of the emulator itself use this); on a
        capturing stream, record it instead."""
        _issue(self._packed(grid, block, args))

    def _packed(self, grid, block, args):
        """The launch as a call that needs none of the Python arguments: buffers reduced to
        their addresses and scalars to copies, as cuLaunchKernel (and a graph node) holds
        them. A kernel replayed after its buffers were freed faults on their addresses."""
        if self.entry is None:
            return lambda: self._emulate_validator(args)
        keep = []
        pointers = (ctypes.c_void_p * max(1, len(args)))(
            *[_argument_pointer(a, keep) for a in args])
        dims = [(ctypes.c_uint * 3)(*(tuple(d) + (1, 1))[:3]) for d in (grid, block)]

        def launch():
            error = ctypes.create_string_buffer(512)
            with _launch_lock:
                status = self.entry(dims[0], dims[1], pointers, error, len(error))
            if status != 0:
                raise KernelError(f"{self.name}: {error.value.decode()}")
        launch.keep = keep
        return launch

    def _emulate_validator(self, args):
        """Without a compiler, the index validator still answers (its result steers the host)."""
        if self.name == "index_umax_kernel":
            index, n, out = args
            out.host[0] = index.host[:int(n)].view(np.uint64).max(initial=0)


class Module:
    def __init__(self, code, options, name_expressions, launches, execute, owner=None):
        self.owner = owner
        module = next(m for m in launch.MODULES if launch.module_source(m) == code)
        assert "-std=c++17" in options
        self.signatures = kernel_signatures(module)
        self.names, self.launches = list(name_expressions), launches
        self.library = None
        if execute:
            self.library = ctypes.CDLL(str(compile_library(code, self.names)))

    def get_function(self, name):
        assert name in self.names, f"{name} was not among the compiled name expressions"
        entry = None
        if self.library is not None:
            entry = getattr(self.library, f"emu_launch_{self.names.index(name)}")
            entry.restype = ctypes.c_int
            entry.argtypes = (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                              ctypes.c_char_p, ctypes.c_size_t)
        return Function(name, self.signatures[name.partition("<")[0]], entry, self.launches,
                        self.owner)


# ---------------------------------------------------------------------------------------------
# streams and stream capture

# cudaStreamCaptureMode values
CAPTURE_GLOBAL, CAPTURE_THREAD_LOCAL, CAPTURE_RELAXED = 0, 1, 2
# the cudaError_t values a capture can end in, with the runtime's own strings
ILLEGAL_STATE, CAPTURE_UNSUPPORTED, CAPTURE_INVALIDATED, CAPTURE_IMPLICIT = 401, 900, 901, 906
INVALID_HANDLE = 400
_ERRORS = {
    INVALID_HANDLE: ("cudaErrorInvalidResourceHandle", "invalid resource handle"),
    ILLEGAL_STATE: ("cudaErrorIllegalState",
                    "the operation cannot be performed in the present state"),
    CAPTURE_UNSUPPORTED: ("cudaErrorStreamCaptureUnsupported",
                          "operation not permitted when stream is capturing"),
    CAPTURE_INVALIDATED: ("cudaErrorStreamCaptureInvalidated",
                          "operation failed due to a previous error during capture"),
    CAPTURE_IMPLICIT: ("cudaErrorStreamCaptureImplicit",
                       "operation would make the legacy stream depend on a capturing blocking "
                       "stream"),
}


class CUDARuntimeError(RuntimeError):
    """CuPy's cupy.cuda.runtime.CUDARuntimeError: `status` and "name: description"."""

    def __init__(self, status):
        self.status = status
        name, text = _ERRORS[status]
        super().__init__(f"{name}: {text}")


_current = threading.local()        # the thread's current stream (CuPy's is per thread too)
_thread_mode = threading.local()    # the thread's capture interaction mode (default global)
_capturing = set()                   # streams with a capture under way, in any thread
_stream_ids = iter(range(1, 1 << 62))


class Stream:
    """cupy.cuda.Stream: `with stream:` makes it current; begin_capture() / end_capture()."""
    null = None     # the legacy default stream, set below

    def __init__(self, null=False, non_blocking=False, ptr=None):
        self.ptr = 0 if null else next(_stream_ids)
        self.non_blocking = non_blocking
        self._recording = None      # the captured work while a capture is under way
        self._mode = self._thread = None
        self._invalid = False
        self._outer = []

    def __repr__(self):
        return f"<emulated cupy.cuda.Stream {self.ptr}>"

    def __enter__(self):
        self._outer.append(get_current_stream())
        _current.stream = self
        return self

    def __exit__(self, *exc):
        _current.stream = self._outer.pop()
        return False

    def use(self):
        _current.stream = self
        return self

    def synchronize(self):
        _host_sync("cudaStreamSynchronize", self)

    def record(self, event=None):
        """An event after the work queued so far (the emulator runs work as it is queued, so
        waiting on one is immediate; recording into a capture is allowed, as on a GPU)."""
        event = Event() if event is None else event
        event.record(self)
        return event

    def wait_event(self, event):
        pass

    def begin_capture(self, mode=None):
        if self.ptr == 0:
            raise CUDARuntimeError(CAPTURE_UNSUPPORTED)     # the legacy stream cannot capture
        if self._recording is not None:
            raise CUDARuntimeError(ILLEGAL_STATE)
        self._recording, self._invalid = [], False
        self._mode = CAPTURE_GLOBAL if mode is None else mode
        self._thread = threading.get_ident()
        _capturing.add(self)

    def end_capture(self):
        """The captured Graph; cudaErrorStreamCaptureInvalidated when an error broke it."""
        if self._recording is None:
            raise CUDARuntimeError(ILLEGAL_STATE)
        recording, invalid = self._recording, self._invalid
        self._recording, self._invalid = None, False
        _capturing.discard(self)
        if invalid:
            raise CUDARuntimeError(CAPTURE_INVALIDATED)
        return Graph(recording)

    def is_capturing(self):
        if self._recording is None:
            return False
        if self._invalid:
            raise RuntimeError("the stream was capturing, but an error has invalidated the "
                               "capture sequence")
        return True

    def _invalidate(self):
        self._invalid = True
        self._recording.clear()


Stream.null = Stream(null=True)


class Event:
    """cupy.cuda.Event: work is done when queued here, so it is always complete (`done`), and
    its time is the host's clock when it is recorded."""

    def __init__(self, block=False, disable_timing=False, interprocess=False):
        self.disable_timing = disable_timing
        self.time = None
        self.ptr = next(_stream_ids)

    def record(self, stream=None):
        self.time = time.perf_counter()

    def synchronize(self):
        _host_sync("cudaEventSynchronize")

    @property
    def done(self):
        return True

    def query(self):
        return True


def get_elapsed_time(start_event, end_event):
    """cupy.cuda.get_elapsed_time: milliseconds between two recorded timing events
    (cudaErrorInvalidResourceHandle otherwise, as cudaEventElapsedTime)."""
    if start_event.disable_timing or end_event.disable_timing or None in (start_event.time,
                                                                          end_event.time):
        raise CUDARuntimeError(INVALID_HANDLE)
    return (end_event.time - start_event.time) * 1000.0


def get_current_stream():
    return getattr(_current, "stream", None) or Stream.null


class Graph:
    """cupy.cuda.graph.Graph: the work recorded by a capture, run again by launch()."""

    def __init__(self, recording):
        self._recording = list(recording)
        self.node_count = len(self._recording)      # the emulator's own, for tests

    def launch(self, stream=None):
        stream = get_current_stream() if stream is None else stream
        for work in self._recording:
            _issue(work, stream)

    def upload(self, stream=None):
        pass


def _issue(work, stream=None):
    """Run `work` (a kernel launch or memset reduced to raw addresses) on the stream, or record
    it while that stream captures."""
    stream = get_current_stream() if stream is None else stream
    if stream._recording is not None:
        if stream._invalid:
            raise CUDARuntimeError(CAPTURE_INVALIDATED)
        stream._recording.append(work)
        return
    if stream.ptr == 0:
        # the legacy stream would wait on work that is only being recorded
        _break([s for s in _capturing if not s.non_blocking], CAPTURE_IMPLICIT)
    work()


def _host_sync(what, stream=None):
    """A call that waits for the device (or copies from pageable host memory): not permitted
    on a capturing stream, nor in any thread while a capture in global mode is under way (in
    the capturing thread for thread_local mode); the capture it breaks is invalidated."""
    stream = get_current_stream() if stream is None else stream
    me = threading.get_ident()
    broken = [s for s in _capturing
              if s is stream or s._mode == CAPTURE_GLOBAL or
              (s._mode == CAPTURE_THREAD_LOCAL and s._thread == me)]
    _break(broken, CAPTURE_UNSUPPORTED)


def _exchange_capture_mode(mode):
    """cudaThreadExchangeStreamCaptureMode: the thread's new mode in, its previous one out."""
    previous = getattr(_thread_mode, "mode", CAPTURE_GLOBAL)
    _thread_mode.mode = mode
    return previous


def _unsafe_call():
    """A "potentially unsafe" call (cudaMalloc): refused while a capture forbids it, and that
    capture invalidated. The calling thread's mode decides: relaxed is never bound, thread_local
    by its own captures begun in another mode than relaxed, global by those and by other
    threads' captures begun in global mode (cudaThreadExchangeStreamCaptureMode's rules)."""
    mode = getattr(_thread_mode, "mode", CAPTURE_GLOBAL)
    if mode == CAPTURE_RELAXED:
        return
    me = threading.get_ident()
    broken = [s for s in _capturing
              if (s._thread == me and s._mode != CAPTURE_RELAXED) or
              (mode == CAPTURE_GLOBAL and s._thread != me and s._mode == CAPTURE_GLOBAL)]
    _break(broken, CAPTURE_UNSUPPORTED)


def _break(captures, status):
    """A call those captures forbid: each is invalidated and the call fails with `status`
    (nothing happens when there are none)."""
    if captures:
        for stream in captures:
            stream._invalidate()
        raise CUDARuntimeError(status)


def _memset(ptr, value, n):
    """memset_async on the current stream (recorded while it captures)."""
    _issue(lambda: ctypes.memset(ptr, value, n))


# ---------------------------------------------------------------------------------------------
# devices

class Device:
    def __init__(self, index):
        self.id, self.attributes = index, {"MultiProcessorCount": SM_COUNT}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def synchronize(self):
        _host_sync("cudaDeviceSynchronize")


def _device_properties(index):
    """cudaGetDeviceProperties of an H100 SXM, the fields minitorch reads (CuPy's keys)."""
    return {"name": b"minitorch CUDA emulator", "totalGlobalMem": TOTAL_MEMORY, "major": 9,
            "minor": 0, "multiProcessorCount": SM_COUNT, "l2CacheSize": 52_428_800,
            "warpSize": 32, "maxThreadsPerMultiProcessor": 2048,
            "regsPerMultiprocessor": 65536, "integrated": 0, "isMultiGpuBoard": 0,
            "uuid": bytes(range(16)), "pciBusID": index, "pciDeviceID": 0, "pciDomainID": 0}


def cupy_module(device_count=1, execute=None, launches=None):
    """The stand-in module. device_count=None behaves as a machine without a driver; execute
    defaults to can_execute(); every launched instance name is appended to `launches`."""
    execute = can_execute() if execute is None else execute
    launches = [] if launches is None else launches
    current = [0]

    def count():
        if device_count is None:
            raise RuntimeError("cudaErrorInsufficientDriver: CUDA driver version is insufficient")
        return device_count

    def set_device(index):
        current[0] = index

    owner = object()        # this instance's "context": its arrays and kernels carry it
    pool = MemoryPool(owner, lambda: current[0])
    allocator = [pool.malloc]       # cupy.cuda.set_allocator's current allocator

    def set_allocator(function=None):
        allocator[0] = pool.malloc if function is None else function

    runtime = types.SimpleNamespace(
        getDeviceCount=count, getDevice=lambda: current[0], setDevice=set_device,
        getDeviceProperties=_device_properties,
        memGetInfo=lambda: (TOTAL_MEMORY - pool.total_bytes(), TOTAL_MEMORY),
        CUDARuntimeError=CUDARuntimeError, streamCaptureModeGlobal=CAPTURE_GLOBAL,
        streamCaptureModeThreadLocal=CAPTURE_THREAD_LOCAL,
        streamCaptureModeRelaxed=CAPTURE_RELAXED,
        threadExchangeStreamCaptureMode=_exchange_capture_mode)
    return types.SimpleNamespace(
        cuda=types.SimpleNamespace(Device=Device, runtime=runtime, Stream=Stream, Event=Event,
                                   get_current_stream=get_current_stream,
                                   get_elapsed_time=get_elapsed_time,
                                   graph=types.SimpleNamespace(Graph=Graph),
                                   set_allocator=set_allocator, get_allocator=lambda: allocator[0],
                                   alloc=lambda size: allocator[0](size),
                                   memory=types.SimpleNamespace(OutOfMemoryError=OutOfMemoryError),
                                   MemoryPool=MemoryPool),
        get_default_memory_pool=lambda: pool,
        empty=functools.partial(_empty, allocator), zeros=functools.partial(_zeros, allocator),
        asarray=functools.partial(_asarray, allocator), ndarray=Array,   # (einops' isinstance)
        RawModule=lambda code, options, name_expressions: Module(
            code, options, name_expressions, launches, execute, owner),
        launches=launches, emulated=True)


def forget_backends(monkeypatch):
    """For the duration of a test: no device backend cached (either cache) and no cached device
    constant, so the next CUDA use builds them on whatever `cupy` is then installed. Buffers
    belong to the CuPy that made them (a real GPU's kernels cannot read an emulated buffer or
    the reverse), and the fork guard knows only the backends made after this."""
    from minitorch import _gpu, backend, ndarray
    monkeypatch.setattr(_gpu, "_BACKENDS", {})
    monkeypatch.setattr(backend, "_BACKENDS", {})
    monkeypatch.setattr(ndarray, "_scalar_cache", {})


# ---- helpers for the tests that compare a GPU backend on this emulator with the CPU one -------
def on_device(gpu, args):
    """Kernel arguments with every host array copied to the (emulated) device."""
    return [gpu.from_host(a) if isinstance(a, np.ndarray) else a for a in args]


def assert_same_kernel_errors(cpu, gpu, cases):
    """Each (kernel, args, exception type) of `cases` raises that type with one message from
    both backends (args are host arrays and numbers)."""
    import pytest
    for kernel, args, error in cases:
        with pytest.raises(error) as cpu_error:
            getattr(cpu, kernel)(*args)
        with pytest.raises(error) as gpu_error:
            getattr(gpu, kernel)(*on_device(gpu, args))
        assert str(gpu_error.value) == str(cpu_error.value)
