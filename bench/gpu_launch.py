"""Where a small op's time goes on a real GPU: the pieces of one launch, per call, wall time.

The host path of a small op on "cuda" is our Python (bench/gpu_host.py's stand-in measures it)
plus CuPy's calls: this times those calls one by one, on one of our kernels
(index_umax_kernel: a pointer, an int64, a pointer), so that the cost of each is known before
any of them is replaced.

  cupy.empty(10)                  a buffer from CuPy's memory pool
  cupy.zeros(1)                   a pool buffer and a memset
  launch through CuPy             the kernel object's call with (array, int64, array) arguments
  launch through the driver       cuLaunchKernel by ctypes, its parameter array packed once
                                  (what a launcher of our own would cost at best)
  8-byte read back                .get() of one value: waits for the device
  backend.binary ADD, 10 values   our planning and checks plus CuPy's launch, no autograd
  mt add of 10-element tensors    the whole op; torch's beside it when it has CUDA

Each figure is the best of 5 timings of a loop of calls (bench/common.py's best_times, the
rows in alternation), the device waited for once at the end of each timing, so launches are
timed as the host submits them (a tiny kernel runs in less time than it takes to launch).
Run on a GPU machine: python bench/gpu_launch.py
"""
import ctypes
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # a checkout
sys.path.insert(0, HERE)
from common import best_times, try_import_torch  # noqa: E402

import minitorch as mt  # noqa: E402
from minitorch.opcodes import BinaryOp  # noqa: E402

if not mt.cuda.is_available():
    sys.exit("bench/gpu_launch.py needs an NVIDIA GPU and CuPy; mt.cuda.is_available() is "
             "False on this machine")

import cupy  # noqa: E402

from minitorch import _gpu  # noqa: E402


def driver_launcher(kernel, index, n, out, threads):
    """A no-argument callable launching `kernel` (a CuPy kernel object) through cuLaunchKernel
    with (index, n, out) packed once, or None (with the reason) when the handle is not there."""
    function = getattr(kernel, "kernel", kernel)        # RawKernel → cupy.cuda.Function
    handle = getattr(function, "ptr", None)
    if not handle:
        return None, f"no CUfunction handle on {type(kernel).__name__}"
    driver = ctypes.CDLL("libcuda.so.1")
    launch = driver.cuLaunchKernel
    launch.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
    launch.restype = ctypes.c_int
    values = (ctypes.c_void_p(index.data.ptr), ctypes.c_int64(n), ctypes.c_void_p(out.data.ptr))
    params = (ctypes.c_void_p * 3)(*(ctypes.cast(ctypes.byref(v), ctypes.c_void_p)
                                     for v in values))
    stream = cupy.cuda.get_current_stream().ptr

    def call():
        status = launch(handle, 1, 1, 1, threads, 1, 1, 0, stream, params, None)
        if status:
            raise RuntimeError(f"cuLaunchKernel failed: CUresult {status}")
    call.keep = (values, params)        # the packed values must outlive the callable
    return call, None


def main():
    backend = _gpu.backend_for(0)
    threads = 256
    n = 10
    index = cupy.zeros(n, np.int64)
    out = cupy.zeros(1, np.uint64)
    kernel = backend._function("index", "check", "index_umax_kernel")
    rows = [("cupy.empty(10)", lambda: cupy.empty(10, np.float32)),
            ("cupy.zeros(1)", lambda: cupy.zeros(1, np.uint64)),
            ("launch through CuPy", lambda: kernel((1,), (threads,), (index, np.int64(n), out)))]
    through_driver, why_not = driver_launcher(kernel, index, n, out, threads)
    if through_driver is not None:
        rows.append(("launch through the driver", through_driver))
    rows.append(("8-byte read back", lambda: out.get()))
    a, b, c = (cupy.zeros(n, np.float32) for _ in range(3))
    rows.append(("backend.binary ADD, 10 values",
                 lambda: backend.binary(BinaryOp.ADD, a, b, c, (n,), (1,), 0, (1,), 0)))
    x, y = mt.ones(n, device="cuda"), mt.ones(n, device="cuda")
    rows.append(("mt add of 10-element tensors", lambda: x + y))
    torch = try_import_torch()
    if torch is not None and torch.cuda.is_available():
        tx, ty = torch.ones(n, device="cuda"), torch.ones(n, device="cuda")
        rows.append(("torch add of 10-element tensors", lambda: tx + ty))
    version = getattr(cupy, "__version__", "?")
    print(f"one launch in pieces on {mt.cuda.get_device_name()} (CuPy {version}), "
          "wall µs per call, best of 5 timings of 20 ms (the device synchronized in each)")
    times = best_times(dict(rows), repeat=5, min_seconds=0.02, sync=mt.cuda.synchronize)
    for label, seconds in times.items():
        print(f"{label:<34}{seconds * 1e6:8.2f} us", flush=True)
    if why_not:
        print(f"launch through the driver: skipped ({why_not})")


if __name__ == "__main__":
    main()
