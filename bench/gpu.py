"""GPU kernel benchmark: minitorch's CUDA kernels vs CuPy's own (cuBLAS for matmul), float32.

Prints, in one run and with the GPU's name, throughput (higher is better) and the ratio
minitorch/cupy for: matmul at 1024/2048/4096, binary add, broadcast add, compact of a permuted
4-D array, and sums over the last axis, the first axis and everything. Times are GPU times
(CUDA events, best of several repeats). Run: python bench/gpu.py
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # a checkout
import minitorch as mt  # noqa: E402
from minitorch.opcodes import BinaryOp, ReduceOp  # noqa: E402

if not mt.cuda.is_available():
    sys.exit('bench/gpu.py needs an NVIDIA GPU and CuPy (pip install "minitorch[cuda]"); '
             "mt.cuda.is_available() is False on this machine")

import cupy  # noqa: E402  (only importable where the check above passed)

from minitorch import _gpu  # noqa: E402

gpu = _gpu.backend_for(0)
rng = np.random.default_rng(0)


def gpu_time(fn, repeat=5, min_ms=20.0):
    """Best GPU milliseconds per call: each repeat times enough back-to-back calls to last at
    least min_ms between two CUDA events."""
    fn()
    cupy.cuda.Device().synchronize()
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    start.record()
    fn()
    stop.record()
    stop.synchronize()
    once = max(cupy.cuda.get_elapsed_time(start, stop), 1e-3)
    calls = max(1, int(min_ms / once))
    best = float("inf")
    for _ in range(repeat):
        start.record()
        for _ in range(calls):
            fn()
        stop.record()
        stop.synchronize()
        best = min(best, cupy.cuda.get_elapsed_time(start, stop) / calls)
    return best


UNITS = {"TFLOP/s": 1e12, "GB/s": 1e9}


def report(label, ours_ms, theirs_ms, amount, unit):
    """amount (flops or bytes) per second in `unit` for both, and the ratio minitorch / cupy
    (above 1: we are faster)."""
    ours, theirs = (amount / (ms * 1e-3) / UNITS[unit] for ms in (ours_ms, theirs_ms))
    print(f"{label:<40} minitorch {ours:8.1f} {unit:<7}  cupy {theirs:8.1f} {unit:<7}  "
          f"ratio {ours / theirs:5.2f}x", flush=True)


def randn(*shape):
    return cupy.asarray(rng.standard_normal(shape, dtype=np.float32))


def bench_matmul(n):
    a, b = randn(n, n), randn(n, n)
    out, ref = cupy.empty((n, n), np.float32), cupy.empty((n, n), np.float32)
    ours = gpu_time(lambda: gpu.matmul(a.ravel(), b.ravel(), out.ravel(), 1, n, n, n))
    theirs = gpu_time(lambda: cupy.matmul(a, b, out=ref))
    error = float(cupy.abs(out - ref).max() / cupy.abs(ref).max())
    report(f"matmul {n}x{n}x{n} (rel err {error:.0e})", ours, theirs, 2 * n ** 3, "TFLOP/s")


def bench_add(shape, b_shape):
    a, b = randn(*shape), randn(*b_shape)
    out = cupy.empty(shape, np.float32)
    b_strides = tuple(st // 4 for st in cupy.broadcast_to(b, shape).strides)   # 0: broadcast
    a_strides = tuple(st // 4 for st in a.strides)
    ours = gpu_time(lambda: gpu.binary(int(BinaryOp.ADD), a.ravel(), b.ravel(), out.ravel(),
                                       shape, a_strides, 0, b_strides, 0))
    theirs = gpu_time(lambda: cupy.add(a, b, out=out))
    report(f"add {shape} + {b_shape}", ours, theirs, a.nbytes + b.nbytes + out.nbytes, "GB/s")


def bench_compact(shape, order):
    a = randn(*shape)
    view = a.transpose(order)
    out = cupy.empty(view.shape, np.float32)
    strides = tuple(st // 4 for st in view.strides)
    ours = gpu_time(lambda: gpu.compact(a.ravel(), out.ravel(), view.shape, strides, 0))
    theirs = gpu_time(lambda: cupy.copyto(out, view))
    report(f"compact {shape} permute{order}", ours, theirs, 2 * a.nbytes, "GB/s")


def bench_sum(shape, axis):
    a = randn(*shape)
    m, n = shape
    if axis == 1:
        out, args = cupy.empty(m, np.float32), (n, 1)
    elif axis == 0:
        out, args = cupy.empty(n, np.float32), (m, n)
    else:
        out, args = cupy.empty(1, np.float32), (m * n, 1)
    ours = gpu_time(lambda: gpu.reduce_last(int(ReduceOp.SUM), a.ravel(), out, *args))
    theirs = gpu_time(lambda: cupy.sum(a, axis=axis))
    report(f"sum {shape} axis={axis}", ours, theirs, a.nbytes, "GB/s")


def main():
    print(f"GPU: {mt.cuda.get_device_name()}  (CuPy {cupy.__version__})", flush=True)
    for n in (1024, 2048, 4096):
        bench_matmul(n)
    bench_add((8192, 8192), (8192, 8192))
    bench_add((8192, 8192), (8192,))
    bench_add((8192, 8192), (8192, 1))
    bench_compact((64, 64, 64, 64), (0, 2, 3, 1))
    bench_compact((64, 64, 64, 64), (3, 2, 1, 0))
    bench_sum((8192, 8192), 1)
    bench_sum((8192, 8192), 0)
    bench_sum((8192, 8192), None)
    bench_sum((65536, 32), 1)


if __name__ == "__main__":
    main()
