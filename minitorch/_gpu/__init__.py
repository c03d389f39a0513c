"""The GPU backend: CuPy RawKernels behind the same kernel interface as minitorch._cpu.

`backend_for(index)` returns the backend object of `cuda:index` (minitorch.backend.get_backend
calls it). CuPy is imported here, lazily: `import minitorch` never needs it, and using a CUDA
device without CuPy or without a GPU raises a RuntimeError that says what is missing.

A process forked after it used CUDA cannot use it (the driver's context does not survive the
fork): as in torch, every CUDA call in such a child raises "Cannot re-initialize CUDA in forked
subprocess" instead of failing inside the driver (a DataLoader worker forked from a process that
holds cuda tensors, for one).
"""
import os

INSTALL_HINT = ('install CuPy for your CUDA version: pip install "minitorch[cuda]" '
                "(which brings cupy-cuda12x), or pip install cupy-cuda13x for CUDA 13")

_BACKENDS = {}
FORKED_MESSAGE = ("Cannot re-initialize CUDA in forked subprocess. To use CUDA with "
                  "multiprocessing, you must use the 'spawn' start method")
_forked = False     # this process was forked from one that had used CUDA


def _after_fork_in_child():
    """In a child forked after CUDA was used: every backend method raises torch's error."""
    global _forked
    if _BACKENDS:
        _forked = True
        for backend in _BACKENDS.values():
            backend.refuse_all(FORKED_MESSAGE)


def import_cupy():
    """The cupy module, or a RuntimeError saying how to get it."""
    try:
        import cupy
    except ImportError as error:
        raise RuntimeError(f"minitorch's CUDA backend needs CuPy, which could not be imported "
                           f"({error}); {INSTALL_HINT}") from None
    return cupy


def device_count(cupy):
    """How many GPUs CuPy sees, or a RuntimeError when there is no usable driver or GPU."""
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as error:   # CUDARuntimeError and friends: no driver, driver too old, ...
        raise RuntimeError("Found no NVIDIA driver on your system. Please check that you have "
                           f"an NVIDIA GPU and installed a driver (CuPy reports: {error})"
                           ) from None
    if count == 0:
        raise RuntimeError("Found no NVIDIA GPU on your system (CuPy sees 0 CUDA devices)")
    return count


def backend_for(index):
    """The kernel backend of `cuda:index` (memoised; compiled kernels live in it)."""
    backend = _BACKENDS.get(index)
    if backend is None:
        if _forked:
            raise RuntimeError(FORKED_MESSAGE)
        cupy = import_cupy()
        count = device_count(cupy)
        if not 0 <= index < count:
            raise RuntimeError(f"CUDA error: invalid device ordinal (cuda:{index} requested, "
                               f"{count} device{'s' if count != 1 else ''} available)")
        from .backend import GpuBackend
        from .._cpu.widen import NARROW_VIA_WIDE, wrap_kernels
        from . import memory
        if not _BACKENDS and hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=_after_fork_in_child)
        memory.track(cupy)      # peak memory statistics and OutOfMemoryError (memory.py)
        backend = GpuBackend(cupy, index)
        wrap_kernels(backend, NARROW_VIA_WIDE, backend.empty, backend.cast)
        from .._cpu import complex_pairs    # complex buffers move as their (re, im) pairs
        complex_pairs.wrap_backend(backend)
        _BACKENDS[index] = backend
    return backend
