"""Integer-index kernels along one axis: gather / scatter / scatter_add / scatter_reduce (index
per element), index_select / index_add (one index per slice: embeddings), take / put (flat
offsets).

Arrays are viewed as (outer, dim, inner), compact. Every index is checked before anything is
written, so a bad index raises IndexError and leaves `out` untouched. Writes that may collide
(duplicate indices) run in index order; only slices that can never collide go in parallel.
"""
from libc.stdint cimport int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy
from cython.parallel cimport prange
cimport numpy as cnp
import numpy as np

from minitorch._cpu.common cimport (omp_get_max_threads, PARALLEL_MIN_ELEMENTS)
from minitorch._cpu.opcodes cimport *

cnp.import_array()

ctypedef fused move_t:      # copies only care about the element width
    uint8_t
    uint16_t
    uint32_t
    uint64_t

ctypedef fused value_t:     # accumulation needs the real type (uint8 is bool: add means or)
    float
    double
    int64_t
    uint8_t


# ---------------------------------------------------------------------------------------------
# validation (Python level, before anything is written)

cdef int check_buffer(cnp.ndarray buf, str name, Py_ssize_t need, bint writable) except -1:
    """1-D, C-contiguous and holding at least `need` elements (we index with raw pointers)."""
    if cnp.PyArray_NDIM(buf) != 1 or not cnp.PyArray_IS_C_CONTIGUOUS(buf):
        raise ValueError(f"{name} must be a 1-D contiguous buffer, got shape "
                         f"{(<object>buf).shape} and strides {(<object>buf).strides}")
    if writable and not cnp.PyArray_ISWRITEABLE(buf):
        raise ValueError(f"{name} is read-only")
    if cnp.PyArray_DIM(buf, 0) < need:
        raise ValueError(f"{name} has {cnp.PyArray_DIM(buf, 0)} elements but {need} are needed")
    return 0


cdef int value_code(cnp.ndarray a) except -1:
    """0..3 for float32, float64, int64, uint8/bool (the storage dtypes); TypeError otherwise."""
    cdef int t = cnp.PyArray_TYPE(a)
    if t == cnp.NPY_FLOAT32:
        return 0
    if t == cnp.NPY_FLOAT64:
        return 1
    if (t == cnp.NPY_LONG or t == cnp.NPY_LONGLONG) and cnp.PyArray_ITEMSIZE(a) == 8:
        return 2
    if t == cnp.NPY_UINT8 or t == cnp.NPY_BOOL:
        return 3
    raise TypeError(f"unsupported dtype {(<object>a).dtype}: expected float32, float64, int64 "
                    "or uint8 (bool)")


cdef int check_values(cnp.ndarray a, cnp.ndarray b, str a_name, str b_name) except -1:
    """Both value buffers share one supported dtype; returns its code."""
    cdef int ca = value_code(a), cb = value_code(b)
    if ca != cb:
        raise TypeError(f"{a_name} has dtype {(<object>a).dtype} but {b_name} has dtype "
                        f"{(<object>b).dtype}")
    return ca


MOVABLE = frozenset(np.dtype(t) for t in (np.float32, np.float64, np.int64, np.uint8, np.bool_,
                                         np.int32, np.int16, np.int8, np.float16, np.uint16))


cdef Py_ssize_t check_movable(cnp.ndarray a, cnp.ndarray b, str a_name, str b_name) except -1:
    """Both buffers share one dtype of any storage (copies only care about the element width:
    the narrow dtypes move too); returns the width in bytes."""
    cdef int ta = cnp.PyArray_TYPE(a), tb = cnp.PyArray_TYPE(b)
    cdef Py_ssize_t width = cnp.PyArray_ITEMSIZE(a)
    if (<object>a).dtype not in MOVABLE:
        raise TypeError(f"unsupported dtype {(<object>a).dtype}: expected one of minitorch's "
                        "storage dtypes")
    if ta != tb and not cnp.PyArray_EquivTypenums(ta, tb):
        raise TypeError(f"{a_name} has dtype {(<object>a).dtype} but {b_name} has dtype "
                        f"{(<object>b).dtype}")
    return width


cdef int check_sizes(Py_ssize_t a, Py_ssize_t b, Py_ssize_t c, Py_ssize_t d) except -1:
    """Sizes are non-negative and every product of three of them fits in a Py_ssize_t."""
    cdef Py_ssize_t limit = <Py_ssize_t>(<size_t>-1 >> 2), biggest
    if a < 0 or b < 0 or c < 0 or d < 0:
        raise ValueError(f"sizes must be non-negative, got {a}, {b}, {c}, {d}")
    biggest = max(b, c)
    if a and d and biggest and (biggest > limit // a or biggest * a > limit // d):
        raise ValueError(f"sizes {a}, {b}, {c}, {d} overflow")
    return 0


cdef Py_ssize_t count_bad(const int64_t* idx, Py_ssize_t n, int64_t dim) noexcept nogil:
    """How many indices fall outside [0, dim): a branch-free pass the compiler vectorises
    (the unsigned compare also catches negatives)."""
    cdef Py_ssize_t k, bad = 0
    if n >= PARALLEL_MIN_ELEMENTS * 4:     # ~1 cycle per index: threads pay off only later
        for k in prange(n, schedule="static"):
            bad += <uint64_t>idx[k] >= <uint64_t>dim
    else:
        for k in range(n):
            bad += <uint64_t>idx[k] >= <uint64_t>dim
    return bad


cdef int check_index(cnp.ndarray index, Py_ssize_t n, Py_ssize_t dim) except -1:
    """index is an int64 buffer of at least n entries, all in [0, dim)."""
    cdef const int64_t* p
    cdef Py_ssize_t k, bad
    cdef int t = cnp.PyArray_TYPE(index)
    if not ((t == cnp.NPY_LONG or t == cnp.NPY_LONGLONG) and cnp.PyArray_ITEMSIZE(index) == 8):
        raise TypeError(f"index must have dtype int64, got {(<object>index).dtype}")
    check_buffer(index, "index", n, False)
    p = <const int64_t*>cnp.PyArray_DATA(index)
    with nogil:
        bad = count_bad(p, n, dim)
    if bad:
        for k in range(n):
            if p[k] < 0 or p[k] >= dim:
                raise IndexError(f"index {p[k]} is out of bounds for dimension with size {dim}")
    return 0


cdef inline bint parallel(Py_ssize_t work) noexcept nogil:
    return work >= PARALLEL_MIN_ELEMENTS and omp_get_max_threads() > 1


cdef Py_ssize_t split_count(Py_ssize_t outer, Py_ssize_t axis, Py_ssize_t work) noexcept nogil:
    """How many pieces to cut `axis` into so that (outer x pieces) independent tasks keep
    every thread busy; 1 when outer alone suffices or the job is small."""
    cdef Py_ssize_t want = 4 * omp_get_max_threads()
    if not parallel(work) or outer >= want:
        return 1
    return max(1, min(axis // 16, (want + outer - 1) // outer))


# ---------------------------------------------------------------------------------------------
# gather / scatter / scatter_add: one index per element

cdef void gather_slices(const move_t* a, const int64_t* index, move_t* out, Py_ssize_t outer,
                        Py_ssize_t a_dim, Py_ssize_t index_dim, Py_ssize_t inner) noexcept nogil:
    """out[o, j, i] = a[o, index[o, j, i], i]. Every output is written once, so tasks are
    (o, piece of j), as many as keep the threads busy."""
    cdef Py_ssize_t pieces = split_count(outer, index_dim, outer * index_dim * inner), t
    if pieces * outer > 1 and parallel(outer * index_dim * inner):
        for t in prange(outer * pieces, schedule="static"):
            gather_task(a, index, out, t, pieces, a_dim, index_dim, inner)
    else:
        for t in range(outer * pieces):
            gather_task(a, index, out, t, pieces, a_dim, index_dim, inner)


cdef inline void gather_task(const move_t* a, const int64_t* index, move_t* out, Py_ssize_t t,
                             Py_ssize_t pieces, Py_ssize_t a_dim, Py_ssize_t index_dim,
                             Py_ssize_t inner) noexcept nogil:
    cdef Py_ssize_t o = t // pieces, p = t % pieces
    cdef Py_ssize_t j0 = index_dim * p // pieces, j1 = index_dim * (p + 1) // pieces, j, i
    cdef const move_t* base = a + o * a_dim * inner
    cdef const int64_t* idx = index + o * index_dim * inner
    cdef move_t* dst = out + o * index_dim * inner
    if inner == 1:                  # e.g. picking each row's target logit: one flat loop
        for j in range(j0, j1):
            dst[j] = base[idx[j]]
        return
    for j in range(j0, j1):
        for i in range(inner):
            dst[j * inner + i] = base[idx[j * inner + i] * inner + i]


cdef enum:
    WRITE = -1      # scatter's plain store; the other `how`s are ReduceOp codes


cdef void scatter_slices(const value_t* src, const int64_t* index, value_t* out,
                         Py_ssize_t outer, Py_ssize_t out_dim, Py_ssize_t index_dim,
                         Py_ssize_t inner, int how) noexcept nogil:
    """out[o, index[o, j, i], i] = src[o, j, i] (how = WRITE), or combined with it by the
    ReduceOp `how`. Tasks are (o, piece of i): two tasks never write one element, and within a
    task j runs in order (last write wins, reductions are serial)."""
    cdef Py_ssize_t pieces = split_count(outer, inner, outer * index_dim * inner), t
    if pieces * outer > 1 and parallel(outer * index_dim * inner):
        for t in prange(outer * pieces, schedule="static"):
            scatter_task(src, index, out, t, pieces, out_dim, index_dim, inner, how)
    else:
        for t in range(outer * pieces):
            scatter_task(src, index, out, t, pieces, out_dim, index_dim, inner, how)


cdef inline void scatter_task(const value_t* src, const int64_t* index, value_t* out,
                              Py_ssize_t t, Py_ssize_t pieces, Py_ssize_t out_dim,
                              Py_ssize_t index_dim, Py_ssize_t inner, int how) noexcept nogil:
    cdef Py_ssize_t o = t // pieces, p = t % pieces
    cdef Py_ssize_t i0 = inner * p // pieces, i1 = inner * (p + 1) // pieces, j, i
    cdef const value_t* s
    cdef const int64_t* idx
    cdef value_t* dst = out + o * out_dim * inner
    if inner == 1:                  # e.g. max-pool backward rows: one flat loop over j
        s = src + o * index_dim
        idx = index + o * index_dim
        for j in range(index_dim):
            dst[idx[j]] = s[j] if how == WRITE else reduce_pair(dst[idx[j]], s[j], how)
        return
    for j in range(index_dim):
        s = src + (o * index_dim + j) * inner
        idx = index + (o * index_dim + j) * inner
        if how == WRITE:
            for i in range(i0, i1):
                dst[idx[i] * inner + i] = s[i]
        else:
            for i in range(i0, i1):
                dst[idx[i] * inner + i] = reduce_pair(dst[idx[i] * inner + i], s[i], how)


cdef inline value_t combine(value_t a, value_t b) noexcept nogil:
    if value_t is uint8_t:
        return (a != 0) | (b != 0)      # bool "addition" is logical or
    else:
        return a + b


cdef inline value_t reduce_pair(value_t a, value_t b, int op) noexcept nogil:
    """a combined with b by a ReduceOp: SUM as `combine`; MAX / MIN keep a NaN from either
    side (a != a is NaN), as torch's scatter_reduce does; PROD wraps for integers."""
    if op == REDUCE_SUM:
        return combine(a, b)
    if op == REDUCE_PROD:
        if value_t is int64_t:
            return <int64_t>(<uint64_t>a * <uint64_t>b)     # two's complement, no C UB
        else:
            return <value_t>(a * b)     # uint8: the low byte, like torch's uint8 product
    cdef bint keep = a > b if op == REDUCE_MAX else a < b
    if value_t is float or value_t is double:
        keep = keep or a != a
    return a if keep else b


# ---------------------------------------------------------------------------------------------
# index_select / index_add: one index per slice

cdef void select_rows(const char* a, const int64_t* index, char* out, Py_ssize_t outer,
                      Py_ssize_t a_dim, Py_ssize_t n_index, Py_ssize_t row_bytes) noexcept nogil:
    """out[o, j, :] = a[o, index[j], :]: whole rows, so a byte copy serves every dtype."""
    cdef Py_ssize_t rows = outer * n_index, r
    if parallel(rows * row_bytes // 4):
        for r in prange(rows, schedule="static"):
            memcpy(out + r * row_bytes,
                   a + ((r // n_index) * a_dim + index[r % n_index]) * row_bytes, row_bytes)
    else:
        for r in range(rows):
            memcpy(out + r * row_bytes,
                   a + ((r // n_index) * a_dim + index[r % n_index]) * row_bytes, row_bytes)


cdef void add_slices(const value_t* src, const int64_t* index, value_t* out, Py_ssize_t outer,
                     Py_ssize_t out_dim, Py_ssize_t n_index, Py_ssize_t inner) noexcept nogil:
    """out[o, index[j], i] += src[o, j, i]; tasks are (o, piece of i) as in scatter."""
    cdef Py_ssize_t pieces = split_count(outer, inner, outer * n_index * inner), t
    if pieces * outer > 1 and parallel(outer * n_index * inner):
        for t in prange(outer * pieces, schedule="static"):
            add_task(src, index, out, t, pieces, out_dim, n_index, inner)
    else:
        for t in range(outer * pieces):
            add_task(src, index, out, t, pieces, out_dim, n_index, inner)


cdef inline void add_task(const value_t* src, const int64_t* index, value_t* out, Py_ssize_t t,
                          Py_ssize_t pieces, Py_ssize_t out_dim, Py_ssize_t n_index,
                          Py_ssize_t inner) noexcept nogil:
    cdef Py_ssize_t o = t // pieces, p = t % pieces
    cdef Py_ssize_t i0 = inner * p // pieces, i1 = inner * (p + 1) // pieces, j, i
    cdef const value_t* s
    cdef value_t* d
    for j in range(n_index):
        s = src + (o * n_index + j) * inner
        d = out + (o * out_dim + index[j]) * inner
        for i in range(i0, i1):
            d[i] = combine(d[i], s[i])


# ---------------------------------------------------------------------------------------------
# take / put: flat offsets into the whole buffer

cdef void take_elems(const move_t* a, const int64_t* offsets, move_t* out,
                     Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i
    if parallel(n):
        for i in prange(n, schedule="static"):
            out[i] = a[offsets[i]]
    else:
        for i in range(n):
            out[i] = a[offsets[i]]


cdef void put_elems(const value_t* src, Py_ssize_t src_step, const int64_t* offsets,
                    value_t* out, Py_ssize_t n, bint accumulate) noexcept nogil:
    """Serial: duplicate offsets are allowed, so any split could collide (src_step 0 is a
    broadcast of one value)."""
    cdef Py_ssize_t i
    if accumulate:
        for i in range(n):
            out[offsets[i]] = combine(out[offsets[i]], src[i * src_step])
    else:
        for i in range(n):
            out[offsets[i]] = src[i * src_step]


# ---------------------------------------------------------------------------------------------
# the kernels

def gather(cnp.ndarray a, cnp.ndarray index, cnp.ndarray out, Py_ssize_t outer,
           Py_ssize_t a_dim, Py_ssize_t index_dim, Py_ssize_t inner):
    """out[o, j, i] = a[o, index[o, j, i], i]; a is (outer, a_dim, inner)."""
    cdef Py_ssize_t n = outer * index_dim * inner
    cdef Py_ssize_t width
    cdef void* pa
    cdef void* po
    cdef const int64_t* pi
    check_sizes(outer, a_dim, index_dim, inner)
    width = check_movable(a, out, "a", "out")
    check_buffer(a, "a", outer * a_dim * inner, False)
    check_buffer(out, "out", n, True)
    check_index(index, n, a_dim)
    pa, po = cnp.PyArray_DATA(a), cnp.PyArray_DATA(out)
    pi = <const int64_t*>cnp.PyArray_DATA(index)
    with nogil:
        if width == 1:
            gather_slices(<uint8_t*>pa, pi, <uint8_t*>po, outer, a_dim, index_dim, inner)
        elif width == 2:
            gather_slices(<uint16_t*>pa, pi, <uint16_t*>po, outer, a_dim, index_dim, inner)
        elif width == 4:
            gather_slices(<uint32_t*>pa, pi, <uint32_t*>po, outer, a_dim, index_dim, inner)
        else:
            gather_slices(<uint64_t*>pa, pi, <uint64_t*>po, outer, a_dim, index_dim, inner)


cdef int scatter_common(cnp.ndarray src, cnp.ndarray index, cnp.ndarray out, Py_ssize_t outer,
                        Py_ssize_t out_dim, Py_ssize_t index_dim, Py_ssize_t inner,
                        int how) except -1:
    cdef Py_ssize_t n = outer * index_dim * inner
    cdef int code
    cdef void* ps
    cdef void* po
    cdef const int64_t* pi
    check_sizes(outer, out_dim, index_dim, inner)
    code = check_values(src, out, "src", "out")
    check_buffer(src, "src", n, False)
    check_buffer(out, "out", outer * out_dim * inner, True)
    check_index(index, n, out_dim)
    ps, po = cnp.PyArray_DATA(src), cnp.PyArray_DATA(out)
    pi = <const int64_t*>cnp.PyArray_DATA(index)
    with nogil:
        if code == 0:
            scatter_slices(<float*>ps, pi, <float*>po, outer, out_dim, index_dim, inner, how)
        elif code == 1:
            scatter_slices(<double*>ps, pi, <double*>po, outer, out_dim, index_dim, inner, how)
        elif code == 2:
            scatter_slices(<int64_t*>ps, pi, <int64_t*>po, outer, out_dim, index_dim, inner, how)
        else:
            scatter_slices(<uint8_t*>ps, pi, <uint8_t*>po, outer, out_dim, index_dim, inner, how)
    return 0


def scatter(cnp.ndarray src, cnp.ndarray index, cnp.ndarray out, Py_ssize_t outer,
            Py_ssize_t out_dim, Py_ssize_t index_dim, Py_ssize_t inner):
    """out[o, index[o, j, i], i] = src[o, j, i] (duplicates: the last j wins)."""
    scatter_common(src, index, out, outer, out_dim, index_dim, inner, WRITE)


def scatter_add(cnp.ndarray src, cnp.ndarray index, cnp.ndarray out, Py_ssize_t outer,
                Py_ssize_t out_dim, Py_ssize_t index_dim, Py_ssize_t inner):
    """out[o, index[o, j, i], i] += src[o, j, i]: the adjoint of gather (bool: logical or)."""
    scatter_common(src, index, out, outer, out_dim, index_dim, inner, REDUCE_SUM)


SCATTER_REDUCE_OPS = {REDUCE_PROD: "PROD", REDUCE_MAX: "MAX", REDUCE_MIN: "MIN"}


def scatter_reduce(int op, cnp.ndarray src, cnp.ndarray index, cnp.ndarray out,
                   Py_ssize_t outer, Py_ssize_t out_dim, Py_ssize_t index_dim, Py_ssize_t inner):
    """out[o, index[o, j, i], i] = op(out[o, index[o, j, i], i], src[o, j, i]) in j order, for
    op ReduceOp.PROD, MAX or MIN (MAX / MIN propagate NaN; uint8 products wrap)."""
    if op not in SCATTER_REDUCE_OPS:
        raise ValueError(f"scatter_reduce supports the reduce ops PROD, MAX and MIN, not {op}")
    scatter_common(src, index, out, outer, out_dim, index_dim, inner, op)


def index_select(cnp.ndarray a, cnp.ndarray index, cnp.ndarray out, Py_ssize_t outer,
                 Py_ssize_t a_dim, Py_ssize_t n_index, Py_ssize_t inner):
    """out[o, j, i] = a[o, index[j], i] (an embedding lookup is outer=1, inner=dim)."""
    cdef Py_ssize_t width
    cdef const char* pa
    cdef char* po
    cdef const int64_t* pi
    check_sizes(outer, a_dim, n_index, inner)
    check_movable(a, out, "a", "out")
    check_buffer(a, "a", outer * a_dim * inner, False)
    check_buffer(out, "out", outer * n_index * inner, True)
    check_index(index, n_index, a_dim)
    width = cnp.PyArray_ITEMSIZE(a)
    pa, po = <const char*>cnp.PyArray_DATA(a), <char*>cnp.PyArray_DATA(out)
    pi = <const int64_t*>cnp.PyArray_DATA(index)
    with nogil:
        select_rows(pa, pi, po, outer, a_dim, n_index, inner * width)


def index_add(cnp.ndarray src, cnp.ndarray index, cnp.ndarray out, Py_ssize_t outer,
              Py_ssize_t out_dim, Py_ssize_t n_index, Py_ssize_t inner):
    """out[o, index[j], i] += src[o, j, i]: the adjoint of index_select (duplicates add up)."""
    cdef int code
    cdef void* ps
    cdef void* po
    cdef const int64_t* pi
    check_sizes(outer, out_dim, n_index, inner)
    code = check_values(src, out, "src", "out")
    check_buffer(src, "src", outer * n_index * inner, False)
    check_buffer(out, "out", outer * out_dim * inner, True)
    check_index(index, n_index, out_dim)
    ps, po = cnp.PyArray_DATA(src), cnp.PyArray_DATA(out)
    pi = <const int64_t*>cnp.PyArray_DATA(index)
    with nogil:
        if code == 0:
            add_slices(<float*>ps, pi, <float*>po, outer, out_dim, n_index, inner)
        elif code == 1:
            add_slices(<double*>ps, pi, <double*>po, outer, out_dim, n_index, inner)
        elif code == 2:
            add_slices(<int64_t*>ps, pi, <int64_t*>po, outer, out_dim, n_index, inner)
        else:
            add_slices(<uint8_t*>ps, pi, <uint8_t*>po, outer, out_dim, n_index, inner)


def take(cnp.ndarray a, cnp.ndarray offsets, cnp.ndarray out):
    """out[i] = a[offsets[i]] (flat element offsets into the buffer a)."""
    cdef Py_ssize_t n, width
    cdef void* pa
    cdef void* po
    cdef const int64_t* pi
    width = check_movable(a, out, "a", "out")
    check_buffer(a, "a", 0, False)
    check_buffer(offsets, "offsets", 0, False)
    n = cnp.PyArray_DIM(offsets, 0)
    check_buffer(out, "out", n, True)
    check_index(offsets, n, cnp.PyArray_DIM(a, 0))
    pa, po = cnp.PyArray_DATA(a), cnp.PyArray_DATA(out)
    pi = <const int64_t*>cnp.PyArray_DATA(offsets)
    with nogil:
        if width == 1:
            take_elems(<uint8_t*>pa, pi, <uint8_t*>po, n)
        elif width == 2:
            take_elems(<uint16_t*>pa, pi, <uint16_t*>po, n)
        elif width == 4:
            take_elems(<uint32_t*>pa, pi, <uint32_t*>po, n)
        else:
            take_elems(<uint64_t*>pa, pi, <uint64_t*>po, n)


def put(cnp.ndarray src, cnp.ndarray offsets, cnp.ndarray out, bint accumulate):
    """out[offsets[i]] = src[i], or += when `accumulate` (duplicates then all count); a
    one-element src is broadcast."""
    cdef Py_ssize_t n, step
    cdef int code
    cdef void* ps
    cdef void* po
    cdef const int64_t* pi
    code = check_values(src, out, "src", "out")
    check_buffer(out, "out", 0, True)
    check_buffer(offsets, "offsets", 0, False)
    n = cnp.PyArray_DIM(offsets, 0)
    check_buffer(src, "src", 0, False)
    step = 0 if cnp.PyArray_DIM(src, 0) == 1 else 1
    check_buffer(src, "src", n * step, False)
    check_index(offsets, n, cnp.PyArray_DIM(out, 0))
    ps, po = cnp.PyArray_DATA(src), cnp.PyArray_DATA(out)
    pi = <const int64_t*>cnp.PyArray_DATA(offsets)
    with nogil:
        if code == 0:
            put_elems(<float*>ps, step, pi, <float*>po, n, accumulate)
        elif code == 1:
            put_elems(<double*>ps, step, pi, <double*>po, n, accumulate)
        elif code == 2:
            put_elems(<int64_t*>ps, step, pi, <int64_t*>po, n, accumulate)
        else:
            put_elems(<uint8_t*>ps, step, pi, <uint8_t*>po, n, accumulate)
