"""A cache of our own device buffers by exact (length, dtype), so that a steady training step
takes its buffers back from the previous step instead of asking CuPy for new ones (cupy.empty
costs about 5 us of host time, a cache hit well under one).

A buffer is handed out again only when nothing but the cache holds it: neither the CuPy array
(an NDArray, a slice's `base`, a DLPack capsule hold that) nor its memory (every view and export
made from `buffer.data + offset` holds CuPy's memory object). Both are read from reference
counts, so this needs CuPy's real objects: buffers without `data.mem` (test stand-ins) are never
cached. Reuse on the same stream is ordered as CuPy's own pool orders it.

Off unless MINITORCH_CUDA_BUFFER_CACHE=1 until it has been checked on a GPU (see
docs/gpu_check.md); mt.cuda.empty_cache() empties it.
"""
import os
import sys

MAX_PER_SIZE = 16           # buffers kept per (length, dtype): scanning them stays cheap
MAX_BYTES = 4 << 30         # bytes the cache may keep alive in all


def enabled():
    return os.environ.get("MINITORCH_CUDA_BUFFER_CACHE", "0") == "1"


def _first_free(entries, free):
    """The first (buffer, memory) entry whose buffer and memory only the cache references."""
    getrefcount = sys.getrefcount
    for entry in entries:
        if getrefcount(entry[0]) == free[0] and getrefcount(entry[1]) == free[1]:
            return entry[0]
    return None


def _free_counts():
    """The reference counts _first_free sees for an entry nothing else holds (measured, as
    they depend on the interpreter: the entry tuple and the getrefcount argument), the memory
    having one more: the buffer's own MemoryPointer (`buffer.data`)."""
    probe = [(object(), object())]
    getrefcount = sys.getrefcount
    for entry in probe:
        return getrefcount(entry[0]), getrefcount(entry[1]) + 1


_FREE = _free_counts()


class BufferCache:
    """empty(n, dtype) through the cache; `allocate` is cupy.empty."""

    def __init__(self, allocate):
        self._allocate = allocate
        self._buckets = {}
        self.bytes = 0
        self.hits = self.misses = 0

    def empty(self, n, dtype):
        bucket = self._buckets.get((n, dtype))
        if bucket is not None:
            buffer = _first_free(bucket, _FREE)
            if buffer is not None:
                self.hits += 1
                return buffer
        self.misses += 1
        try:
            buffer = self._allocate(n, dtype)
        except MemoryError:     # CuPy's OutOfMemoryError is one: give our spares back, retry
            self.clear()
            buffer = self._allocate(n, dtype)
        self._keep(n, dtype, buffer, bucket)
        return buffer

    def _keep(self, n, dtype, buffer, bucket):
        memory = getattr(getattr(buffer, "data", None), "mem", None)
        if memory is None or self.bytes + buffer.nbytes > MAX_BYTES:
            return
        if bucket is None:
            bucket = self._buckets[n, dtype] = []
        if len(bucket) < MAX_PER_SIZE:
            bucket.append((buffer, memory))
            self.bytes += buffer.nbytes

    def clear(self):
        """Forget every buffer (those still in use live on with their users, then go back to
        CuPy's pool as any other)."""
        self._buckets.clear()
        self.bytes = 0
