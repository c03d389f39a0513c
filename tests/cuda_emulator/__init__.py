"""A stand-in for the `cupy` module that runs minitorch's own CUDA kernels on the CPU.

`cupy_module()` offers what minitorch._gpu uses of CuPy (buffers, transfers, devices,
RawModule). Buffers are host memory, each ending at an inaccessible guard page, so a kernel that
reads or writes past a buffer's end faults and the launch reports it. RawModule compiles the
exact text NVRTC would get with g++ and emulator.h (a fiber-per-thread CUDA runtime, see there);
every launch first checks its arguments against the kernel's CUDA declaration.

With execute=False nothing is compiled (for machines without g++): launches are only checked.
The test suite uses this through tests/conftest.py (MINITORCH_TEST_CUDA=emulator runs every
`device` test on "cuda" too) and tests/test_gpu_backend.py (kernel-by-kernel against the CPU).
"""
import ctypes
import hashlib
import mmap
import os
import pathlib
import shutil
import subprocess
import tempfile
import threading
import types

import numpy as np

from minitorch._gpu import launch

from .declarations import check_launch, kernel_signatures

HEADER = pathlib.Path(__file__).resolve().with_name("emulator.h")
CXX = shutil.which("g++")
CXX_FLAGS = ["-std=c++17", "-O1", "-shared", "-fPIC", "-fvisibility=hidden", "-w"]
SM_COUNT = 132          # an H100's multiprocessors: the host plans launches for that
_PROT_NONE = 0


def can_execute():
    """Kernels can be compiled and run here (g++ on PATH)."""
    return CXX is not None


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


class Array:
    """A CuPy-like 1-D device buffer: host memory (views share it, like CuPy slices)."""

    def __init__(self, host):
        self.host = host

    size = property(lambda self: self.host.size)
    dtype = property(lambda self: self.host.dtype)
    ndim = property(lambda self: self.host.ndim)
    shape = property(lambda self: self.host.shape)
    strides = property(lambda self: self.host.strides)
    nbytes = property(lambda self: self.host.nbytes)
    flags = property(lambda self: self.host.flags)

    @property
    def data(self):
        host = self.host
        return types.SimpleNamespace(
            ptr=host.ctypes.data,
            memset_async=lambda value, n: host.view(np.uint8)[:n].fill(value))

    def __len__(self):
        return len(self.host)

    def __getitem__(self, key):
        return Array(self.host[key])

    def view(self, dtype):
        return Array(self.host.view(dtype))

    def get(self):
        return self.host.copy()


def _empty(n, dtype):
    return Array(guarded_empty(n, dtype))


def _zeros(n, dtype):
    array = guarded_empty(n, dtype)
    array.fill(0)
    return Array(array)


def _asarray(host):
    host = np.asarray(host)
    array = guarded_empty(host.size, host.dtype).reshape(host.shape)
    array[...] = host
    return Array(array)


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
    def __init__(self, name, signature, entry, launches):
        self.name, self.signature, self.entry, self.launches = name, signature, entry, launches

    def __call__(self, grid, block, args):
        check_launch(self.name, self.signature, grid, block, args,
                     lambda a: isinstance(a, Array))
        self.launches.append(self.name)
        self.run(grid, block, args)

    def run(self, grid, block, args):
        """Launch without the declaration check (tests of the emulator itself use this)."""
        if self.entry is None:
            self._emulate_validator(args)
            return
        keep = []
        pointers = (ctypes.c_void_p * max(1, len(args)))(
            *[_argument_pointer(a, keep) for a in args])
        dims = [(ctypes.c_uint * 3)(*(tuple(d) + (1, 1))[:3]) for d in (grid, block)]
        error = ctypes.create_string_buffer(512)
        with _launch_lock:
            status = self.entry(dims[0], dims[1], pointers, error, len(error))
        if status != 0:
            raise KernelError(f"{self.name}: {error.value.decode()}")

    def _emulate_validator(self, args):
        """Without a compiler, the index validator still answers (its result steers the host)."""
        if self.name == "index_umax_kernel":
            index, n, out = args
            out.host[0] = index.host[:int(n)].view(np.uint64).max(initial=0)


class Module:
    def __init__(self, code, options, name_expressions, launches, execute):
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
        return Function(name, self.signatures[name.partition("<")[0]], entry, self.launches)


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
        pass


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

    runtime = types.SimpleNamespace(
        getDeviceCount=count, getDevice=lambda: current[0], setDevice=set_device,
        getDeviceProperties=lambda i: {"name": b"minitorch CUDA emulator"})
    return types.SimpleNamespace(
        cuda=types.SimpleNamespace(Device=Device, runtime=runtime),
        empty=_empty, zeros=_zeros, asarray=_asarray,
        RawModule=lambda code, options, name_expressions: Module(
            code, options, name_expressions, launches, execute),
        launches=launches, emulated=True)


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
