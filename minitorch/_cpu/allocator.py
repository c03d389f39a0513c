"""CPU buffers: numpy arrays, with the large ones recycled by a cache of our own.

Every op result is a fresh buffer, and a training step frees and re-allocates the same few-MB
buffers dozens of times. glibc serves such sizes with mmap, or from the heap but gives the top
of the heap back to the kernel when it is freed; either way the next buffer is fresh memory whose
first write page-faults every 4 KB (on the MNIST CNN a third of the step: docs/benchmarks.md).
Tuning glibc (mallopt) cured that but changed every library's memory in the process, so instead
the backend keeps its own large buffers: `empty` hands out a view of a cached uint8 "slab" of the
same size class (or one up to twice as large) whose only reference left is the cache's.

Why a refcount says a slab is free: numpy collapses a view's base to the array that owns the
memory, so every view, reshape, `.numpy()` result, memoryview or DLPack export of a buffer holds
a reference to its slab; the cache's own reference is the only one once all of them are gone.
Slabs are forgotten once unused for STALE_AFTER allocations, and idle ones are freed when a new
slab would take the idle bytes past the cap (MINITORCH_CPU_CACHE_MB, default 1024);
the cache is opt-in, MINITORCH_CPU_CACHE=1: on this machine it made the bench's MNIST CNN epoch
slower (11.4 s against 8.6 s without it), a cost to find before it is the default. Only
minitorch's own buffers are kept:
memory that numpy or any other library frees goes back to the system as before.
"""
import os
import sys
import threading

import numpy as np

PAGE = 4096
# Below this glibc's heap reuses freed blocks without returning them to the kernel (its default
# mmap and trim thresholds are 128 KB), and a view costs more than the pages it would save.
MIN_CACHED_BYTES = 256 * 1024
CLASS_BITS = 3            # 2**3 slab sizes per power of two (see size_class)
REUSE_UP_TO = 2           # an idle slab up to this many times larger serves a request
STALE_AFTER = 8192        # pooled allocations (a CNN step makes ~100): a slab idle that long goes
FREE_REFCOUNT = 2         # sys.getrefcount of a slab held only by its cache entry (+ the argument)


def size_class(nbytes):
    """The slab size serving `nbytes`: 2**CLASS_BITS sizes per power of two, so buffers of
    nearly the same size (a 1.94 MB and a 2 MB result) share slabs; a slab is only touched as
    far as it is used, so the rounding costs address space, not memory."""
    step = max(PAGE, 1 << max(0, nbytes.bit_length() - 1 - CLASS_BITS))
    return -(-nbytes // step) * step


def _in_use(entry):
    """Whether anything but the cache holds the entry's slab (see the module docstring)."""
    return sys.getrefcount(entry[0]) > FREE_REFCOUNT


class BufferCache:
    """Slab size (size_class) -> [slab, last use] entries, in use or idle (see module doc)."""

    def __init__(self, max_idle_bytes):
        self.max_idle_bytes = max_idle_bytes
        self.cached_bytes = 0               # slabs the cache tracks, in use and idle
        self._entries = {}
        self._tick = 0
        self._lock = threading.Lock()

    def reset_lock(self):
        """In a forked child: a lock another thread held at the fork would stay held."""
        self._lock = threading.Lock()

    def empty(self, n, dtype):
        """An uninitialized 1-D array of n elements of numpy dtype `dtype`, like np.empty."""
        dtype = np.dtype(dtype)
        nbytes = n * dtype.itemsize
        if nbytes < MIN_CACHED_BYTES:
            return np.empty(n, dtype)
        size = size_class(nbytes)
        with self._lock:   # two threads must never both see a slab free and take it
            self._tick += 1
            entry = self._free_entry(size) or self._new_entry(size)
            entry[1] = self._tick
            return entry[0][:nbytes].view(dtype)

    def _free_entry(self, size):
        """An idle slab of class `size`, else the smallest idle one of at most twice that size:
        buffers of different sizes live at different moments of a step, and sharing slabs
        across sizes keeps the cache near the step's peak of live bytes (half, measured)."""
        for entry in self._entries.get(size, ()):
            if not _in_use(entry):
                return entry
        for larger in sorted(k for k in self._entries if size < k <= REUSE_UP_TO * size):
            for entry in self._entries[larger]:
                if not _in_use(entry):
                    return entry
        return None

    def _new_entry(self, size):
        """A new slab of `size` bytes. Misses are rare once a loop runs, so they pay for the
        housekeeping: entries unused for STALE_AFTER allocations are forgotten (an idle slab is
        then freed; one in use is freed by numpy with its last view, and never handed out
        again), and the idle slabs all go when they would pass the cap."""
        self._forget(lambda entry: self._tick - entry[1] > STALE_AFTER)
        if self.idle_bytes() + size > self.max_idle_bytes:
            self._forget(lambda entry: not _in_use(entry))
        entry = [np.empty(size, np.uint8), self._tick]
        self._entries.setdefault(size, []).append(entry)
        self.cached_bytes += size
        return entry

    def _forget(self, should_forget):
        for size in list(self._entries):
            kept = [e for e in self._entries[size] if not should_forget(e)]
            self.cached_bytes -= size * (len(self._entries[size]) - len(kept))
            if kept:
                self._entries[size] = kept
            else:
                del self._entries[size]

    def idle_bytes(self):
        """Bytes of slabs no buffer uses now (memory the process holds for reuse)."""
        return sum(size for size, entries in self._entries.items()
                   for e in entries if not _in_use(e))

    def clear(self):
        """Free every idle slab."""
        with self._lock:
            self._forget(lambda entry: not _in_use(entry))


def _cache_from_env():
    if os.environ.get("MINITORCH_CPU_CACHE", "0") != "1":
        return None
    cache = BufferCache(int(os.environ.get("MINITORCH_CPU_CACHE_MB", "1024")) * 1024 * 1024)
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=cache.reset_lock)
    return cache


CACHE = _cache_from_env()


def empty(n, dtype):
    """An uninitialized buffer of n elements (the backend's allocation path)."""
    return np.empty(n, dtype) if CACHE is None else CACHE.empty(n, dtype)


def full(n, value, dtype):
    buffer = empty(n, dtype)
    buffer.fill(value)
    return buffer
