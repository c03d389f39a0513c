"""CPU buffers: numpy arrays, the large ones from a pool of our own (buffer_pool.pyx).

Every op result is a fresh buffer, and a training step frees and re-allocates the same few-MB
buffers dozens of times. glibc serves such sizes with mmap, or from the heap but gives the top
of the heap back to the kernel when it is freed; either way the next buffer is fresh memory whose
first write page-faults every 4 KB: on the MNIST CNN, 3,900 faults per step, a fifth of its time
at one thread and up to half at two, where the threads fault in turn (docs/benchmarks.md).
Tuning glibc (mallopt) cured that but changed every library's memory in the process, so the
backend keeps its own large buffers instead: a freed result's memory serves the next result of
its size class (or of up to half its size), the most recently freed first. Only minitorch's own
buffers are kept: memory that numpy or any other library frees goes back to the system as before.

Switches (read at import): MINITORCH_CPU_CACHE=0 turns the pool off (every buffer a plain
np.empty); MINITORCH_CPU_CACHE_MB (default 1024) caps the idle memory it keeps.
"""
import os

import numpy as np

from .buffer_pool import BufferPool

# Below this glibc's heap reuses freed blocks without returning them to the kernel, and the
# pool's bookkeeping would cost more than the pages it saves. glibc maps every block from its
# mmap threshold up afresh (128 KB, counting its 16-byte header, until a large free raises it),
# so the pool starts well below it: the MNIST MLP's (128, 256) float32 activations, exactly
# 128 KB, faulted 165 times a step in a process whose threshold had not risen (1.41 vs 1.19 ms
# a step; docs/benchmarks.md, "Page faults at glibc's mmap threshold").
MIN_CACHED_BYTES = 64 * 1024


def _pool_from_env():
    if os.environ.get("MINITORCH_CPU_CACHE", "1") == "0":
        return None
    return BufferPool(int(os.environ.get("MINITORCH_CPU_CACHE_MB", "1024")) << 20,
                      MIN_CACHED_BYTES)


POOL = _pool_from_env()
# empty(n, dtype): an uninitialized buffer of n elements (the backend's allocation path, called
# for every op result: the pool's own method, no Python frame around it)
empty = np.empty if POOL is None else POOL.empty


def full(n, value, dtype):
    buffer = empty(n, dtype)
    buffer.fill(value)
    return buffer
