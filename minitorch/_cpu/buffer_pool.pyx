"""A pool of large CPU buffers of our own: a freed op result's memory serves the next result of
its size, already mapped, instead of going back to glibc (see allocator.py for why and when).

Each pooled buffer is a numpy array over memory owned by a `_Block`, the array's base. numpy
collapses every view's base to that array, so every view, reshape, `.numpy()` result or DLPack
export keeps the block alive; when the last one goes, the block's __dealloc__ hands its memory
back to the pool (or to the system past the cap). Nothing is scanned to find a free buffer: idle
blocks wait in one list per size class, and the most recently freed one is handed out first,
its lines likely still in cache.
"""
from libc.stdint cimport uintptr_t
cimport numpy as cnp

import numpy as np

cnp.import_array()

# Aligned blocks and the huge-page advice, per platform (the advice exists on Linux only).
cdef extern from *:
    """
    #include <stdlib.h>
    #ifdef _WIN32
    #include <malloc.h>
    static void* mt_block_alloc(size_t alignment, size_t size) {
        return _aligned_malloc(size, alignment);
    }
    static void mt_block_free(void* p) { _aligned_free(p); }
    #else
    #include <sys/mman.h>
    static void* mt_block_alloc(size_t alignment, size_t size) {
        void* p = NULL;
        return posix_memalign(&p, alignment, size) == 0 ? p : NULL;
    }
    static void mt_block_free(void* p) { free(p); }
    #endif
    static void mt_advise_huge_pages(void* p, size_t size) {
    #ifdef MADV_HUGEPAGE
        madvise(p, size, MADV_HUGEPAGE);    /* advice only: a failure changes nothing */
    #else
        (void)p; (void)size;
    #endif
    }
    """
    void* mt_block_alloc(size_t alignment, size_t size) nogil
    void mt_block_free(void* p) nogil
    void mt_advise_huge_pages(void* p, size_t size) nogil

cdef enum:
    ALIGNMENT = 64          # a cache line (and a zmm): numpy's own buffers are 16-byte aligned
    # Blocks from this size on are backed by transparent huge pages where the kernel has them
    # (as numpy asks for its own arrays of 4 MB and more): 2 MB pages fault 512 times less often
    # and take far fewer TLB entries. Aligned to a huge page so that the whole block qualifies.
    HUGE_MIN = 4 << 20
    HUGE_PAGE = 2 << 20
    PAGE = 4096             # the smallest step between size classes


cpdef Py_ssize_t size_class(Py_ssize_t nbytes):
    """The block size serving `nbytes`: 8 sizes per power of two (a 1.94 MB and a 2 MB result
    share blocks); a block is only touched as far as it is used, so the rounding costs address
    space, not memory."""
    cdef Py_ssize_t step = PAGE, bits = 0, v = nbytes
    while v > 1:
        v >>= 1
        bits += 1
    if bits - 3 > 12:
        step = (<Py_ssize_t>1) << (bits - 3)
    return (nbytes + step - 1) // step * step


cdef class _Block:
    """One pooled allocation, the base of the array over it."""
    cdef void* ptr
    cdef Py_ssize_t nbytes
    cdef BufferPool pool

    def __dealloc__(self):
        if self.pool is None or not self.pool._give_back(self.ptr, self.nbytes):
            mt_block_free(self.ptr)


cdef class BufferPool:
    """Size class -> idle blocks (most recently freed last). A request takes an idle block of
    its class, else the smallest idle one of up to `reuse_up_to` times its size (buffers of
    different sizes live at different moments of a step: sharing keeps the pool near the
    step's peak of live bytes), else new memory. Before taking new memory, idle blocks not
    used for `keep_recent` pooled allocations (a step's own blocks are reused every step) are
    given back to the system, the least recently freed first, as many bytes as the new block:
    when the sizes change (training, then evaluation on larger batches) the memory held, in use
    + idle, grows only as the bytes in use do. Idle bytes stay at most `max_idle_bytes` (a
    block freed past that goes back at once). Every method runs holding the GIL, and reads the
    lists again after anything that could run other Python code (an allocation's collection
    may free blocks), so threads (a DataLoader's) share one pool."""
    cdef dict _idle                     # size class -> list of [address, tick last freed]
    cdef public Py_ssize_t max_idle_bytes, min_bytes, max_bytes, keep_recent
    cdef public double reuse_up_to
    cdef readonly Py_ssize_t idle_bytes, live_bytes, new_blocks, new_bytes   # (new: ever taken)
    cdef Py_ssize_t _tick

    def __init__(self, Py_ssize_t max_idle_bytes, Py_ssize_t min_bytes=64 * 1024,
                 Py_ssize_t max_bytes=32 << 20, double reuse_up_to=2.0,
                 Py_ssize_t keep_recent=64):
        self._idle = {}
        self.max_idle_bytes = max_idle_bytes
        self.min_bytes = min_bytes
        self.max_bytes = max_bytes
        self.reuse_up_to = reuse_up_to
        self.keep_recent = keep_recent
        self.idle_bytes = self.live_bytes = self.new_blocks = self.new_bytes = 0
        self._tick = 0

    def empty(self, Py_ssize_t n, dtype):
        """An uninitialized 1-D array of n elements of numpy dtype `dtype`, like np.empty,
        which serves requests outside [min_bytes, max_bytes]."""
        # the backend passes numpy dtypes: no conversion on the path every small result takes
        cdef cnp.dtype descr = dtype if isinstance(dtype, cnp.dtype) else np.dtype(dtype)
        cdef Py_ssize_t nbytes = n * descr.itemsize
        cdef cnp.npy_intp dims[1]
        dims[0] = n
        if nbytes < self.min_bytes or nbytes > self.max_bytes:
            return cnp.PyArray_EMPTY(1, dims, descr.type_num, 0)
        cdef _Block block = self._take(size_class(nbytes))
        cdef cnp.ndarray array = cnp.PyArray_SimpleNewFromData(1, dims, descr.type_num,
                                                               block.ptr)
        cnp.set_array_base(array, block)
        return array

    cdef _Block _take(self, Py_ssize_t size):
        """A block of at least `size` bytes: an idle one (see the class doc) or a new one."""
        cdef _Block block = _Block.__new__(_Block)
        cdef void* ptr = NULL
        cdef list idle
        cdef Py_ssize_t found = 0, k
        self._tick += 1
        idle = self._idle.get(size)
        if idle:
            found = size
        else:
            for k in sorted(self._idle):
                if k > size and k <= self.reuse_up_to * size and self._idle[k]:
                    found = k
                    break
        if found:
            idle = self._idle[found]
            ptr = <void*><uintptr_t>idle.pop()[0]
            self.idle_bytes -= found
            size = found
        else:
            self._release(size)
            ptr = mt_block_alloc(HUGE_PAGE if size >= HUGE_MIN else ALIGNMENT, size)
            if ptr == NULL:
                raise MemoryError(f"cannot allocate {size} bytes")
            if size >= HUGE_MIN:
                mt_advise_huge_pages(ptr, size)
            self.new_blocks += 1
            self.new_bytes += size
        block.ptr = ptr
        block.nbytes = size
        block.pool = self
        self.live_bytes += size
        return block

    cdef bint _give_back(self, void* ptr, Py_ssize_t size):
        """Keep a freed block for reuse, unless that would pass the cap (then the caller
        frees it)."""
        self.live_bytes -= size
        if self._idle is None or self.idle_bytes + size > self.max_idle_bytes:
            return False        # (None: the pool was cleared by the collector at exit)
        idle = self._idle.get(size)
        if idle is None:
            idle = self._idle[size] = []
        idle.append([<uintptr_t>ptr, self._tick])
        self.idle_bytes += size
        return True

    cdef _release(self, Py_ssize_t nbytes):
        """Free the least recently freed idle blocks idle for over keep_recent allocations, at
        least nbytes of them (or all there are)."""
        cdef Py_ssize_t size, oldest_size
        cdef list idle
        while nbytes > 0:
            oldest_size = 0
            for size, idle in self._idle.items():
                if idle and (oldest_size == 0 or idle[0][1] < self._idle[oldest_size][0][1]):
                    oldest_size = size
            if oldest_size == 0 or \
                    self._idle[oldest_size][0][1] > self._tick - self.keep_recent:
                return
            mt_block_free(<void*><uintptr_t>self._idle[oldest_size].pop(0)[0])
            self.idle_bytes -= oldest_size
            nbytes -= oldest_size

    def clear(self):
        """Free every idle block (blocks in use go back to the pool when freed)."""
        cdef Py_ssize_t size
        for size, idle in self._idle.items():
            for e in idle:
                mt_block_free(<void*><uintptr_t>e[0])
            self.idle_bytes -= size * len(idle)
        self._idle.clear()

    def __dealloc__(self):
        # blocks still in use hold a reference to the pool: only idle memory is left here
        for idle in (self._idle or {}).values():
            for e in idle:
                mt_block_free(<void*><uintptr_t>e[0])
