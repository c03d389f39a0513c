# Helpers shared by the strided kernels: shapes/strides from Python tuples into C arrays, and the
# axis collapsing that lets every odometer walk as few (and as long) axes as possible.
cimport numpy as cnp

cdef extern from *:
    """
    #ifdef _OPENMP
    #include <omp.h>
    #else  /* built without OpenMP: one thread, and the setter is a no-op */
    static int omp_get_max_threads(void) { return 1; }
    static void omp_set_num_threads(int n) { (void)n; }
    #endif
    """
    int omp_get_max_threads() nogil
    void omp_set_num_threads(int n) nogil


cdef enum:
    MAX_DIMS = 64               # torch's limit too
    PARALLEL_MIN_ELEMENTS = 32768   # below this an OpenMP region costs more than it saves
    DT_F32 = 0                  # dtype codes of the four storage types
    DT_F64 = 1
    DT_I64 = 2
    DT_BOOL = 3


cdef inline int dtype_code(cnp.ndarray a) noexcept:
    """Our dtype code for a buffer, or -1 for a storage type minitorch does not use."""
    cdef int t = cnp.PyArray_TYPE(a)
    if t == cnp.NPY_FLOAT32:
        return DT_F32
    if t == cnp.NPY_FLOAT64:
        return DT_F64
    if (t == cnp.NPY_LONG or t == cnp.NPY_LONGLONG) and cnp.PyArray_ITEMSIZE(a) == 8:
        return DT_I64
    if t == cnp.NPY_UINT8 or t == cnp.NPY_BOOL:
        return DT_BOOL
    return -1


cdef inline int buffer_dtype(cnp.ndarray a, str name, bint writable=False) except -1:
    """Check that a buffer is C-contiguous (and writable for outputs); return its dtype code."""
    cdef int dt = dtype_code(a)
    if dt < 0:
        raise TypeError(f"{name}: unsupported storage dtype {a.dtype}")
    if not cnp.PyArray_IS_C_CONTIGUOUS(a):
        raise ValueError(f"{name}: buffer must be C-contiguous")
    if writable and not cnp.PyArray_ISWRITEABLE(a):
        raise ValueError(f"{name}: output buffer is read-only")
    return dt


cdef inline int load_dims(object shape, object strides, Py_ssize_t* c_shape,
                          Py_ssize_t* c_strides) except -1:
    """Copy a shape and its strides into C arrays; returns ndim."""
    cdef Py_ssize_t nd = len(shape), d
    if nd > MAX_DIMS:
        raise ValueError(f"minitorch supports at most {MAX_DIMS} dimensions, got {nd}")
    if len(strides) != nd:
        raise ValueError(f"shape {tuple(shape)} and strides {tuple(strides)} differ in length")
    for d in range(nd):
        c_shape[d] = shape[d]
        c_strides[d] = strides[d]
    return <int>nd


cdef inline int load_strides(object strides, int nd, Py_ssize_t* c_strides) except -1:
    """Copy one more operand's strides (same ndim as the shape already loaded)."""
    cdef Py_ssize_t d
    if len(strides) != nd:
        raise ValueError(f"strides {tuple(strides)} do not have {nd} entries")
    for d in range(nd):
        c_strides[d] = strides[d]
    return 0


cdef inline int collapse_dims(int nd, Py_ssize_t* shape, Py_ssize_t** strides,
                              int n_operands) noexcept nogil:
    """Drop size-1 axes and merge neighbouring axes that are contiguous with each other in
    every operand's strides; rewrites shape/strides in place and returns the new ndim.
    Callers handle size 0 before calling; a result of 0 axes means one element."""
    cdef int d, s, out_nd = 0
    cdef bint mergeable
    for d in range(nd):
        if shape[d] == 1:
            continue
        if out_nd > 0:
            mergeable = True
            for s in range(n_operands):
                if strides[s][out_nd - 1] != strides[s][d] * shape[d]:
                    mergeable = False
                    break
            if mergeable:
                shape[out_nd - 1] *= shape[d]
                for s in range(n_operands):
                    strides[s][out_nd - 1] = strides[s][d]
                continue
        shape[out_nd] = shape[d]
        for s in range(n_operands):
            strides[s][out_nd] = strides[s][d]
        out_nd += 1
    return out_nd


cdef inline Py_ssize_t shape_size(int nd, const Py_ssize_t* shape) noexcept nogil:
    cdef Py_ssize_t n = 1
    cdef int d
    for d in range(nd):
        n *= shape[d]
    return n


cdef inline Py_ssize_t unravel_offset(Py_ssize_t linear, int nd, const Py_ssize_t* shape,
                                      const Py_ssize_t* strides) noexcept nogil:
    """Element offset of the `linear`-th C-order index of `shape` under `strides` (lets a
    thread start its odometer anywhere)."""
    cdef Py_ssize_t pos = 0
    cdef int d
    for d in range(nd - 1, -1, -1):
        pos += (linear % shape[d]) * strides[d]
        linear //= shape[d]
    return pos


cdef inline int threads_for(Py_ssize_t work) noexcept nogil:
    """Threads worth using for `work` elements: OpenMP only pays off above a threshold."""
    if work < PARALLEL_MIN_ELEMENTS:
        return 1
    return omp_get_max_threads()


cdef inline Py_ssize_t chunk_start(Py_ssize_t n, int nt, Py_ssize_t t) noexcept nogil:
    """Start of the t-th of nt near-equal chunks of n (t == nt gives n)."""
    # multiples of 16 elements (a cache line of float32): threads never share an output line
    if t >= nt:
        return n
    return ((n * t // nt) // 16) * 16


cdef inline str op_name(object enum, int op):
    """The enum member's name for error messages (the number if it is not a member)."""
    try:
        return enum(op).name
    except ValueError:
        return str(op)
