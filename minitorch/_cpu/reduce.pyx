"""Reduction and scan CPU kernels over the middle axis of a compact (m, n, inner) array.

inner == 1 reduces contiguous rows (SIMD lanes across the row); inner > 1 accumulates whole rows
of `inner` elements (SIMD across the columns), which reduces a middle axis without a permute copy.
Float sums are pairwise over blocks, so float32 stays about as accurate as numpy's sum.
"""
cimport numpy as cnp
from cython.parallel cimport prange
from libc.math cimport INFINITY
from libc.stdint cimport INT64_MAX, INT64_MIN, int64_t, uint8_t, uint64_t
from libc.stdlib cimport free, malloc

from minitorch._cpu.common cimport PARALLEL_MIN_ELEMENTS
from minitorch._cpu.opcodes cimport *

cnp.import_array()

cdef extern from *:
    """
    #ifdef _OPENMP
    #include <omp.h>
    static int mt_max_threads(void) { return omp_get_max_threads(); }
    #else
    static int mt_max_threads(void) { return 1; }
    #endif
    """
    int mt_max_threads() nogil


cdef enum:
    DT_F32 = 0
    DT_F64 = 1
    DT_I64 = 2
    DT_BOOL = 3
    LANES = 32          # independent accumulators across a contiguous row
    PW_CHUNKS = 16      # pairwise base case: 16 chunks of LANES = 512 elements
    TW = 256            # column tile (inner > 1): the accumulators stay in L1
    COL_BLOCK = 32      # pairwise base case along n for column sums
    SMALL_INNER = 16    # below this, columns are folded into lanes (see small_lanes)
    LMAX = 256          # lcm(inner, 16) for inner < SMALL_INNER
    ARG_BLOCK = 256     # argmax: best block found with SIMD, then one short scalar search

DTYPE_NAMES = ("float32", "float64", "int64", "bool")
REDUCE_NAMES = ("SUM", "PROD", "MAX", "MIN", "ARGMAX", "ARGMIN")

ctypedef fused num:
    float
    double
    int64_t
    uint8_t

ctypedef fused scan_t:
    float
    double
    int64_t


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


cdef int buffer_dtype(cnp.ndarray a, str name, bint writable=False) except -1:
    """Check that a buffer is C-contiguous (and writable for outputs); return its dtype code."""
    cdef int dt = dtype_code(a)
    if dt < 0:
        raise TypeError(f"{name}: unsupported storage dtype {a.dtype}")
    if not cnp.PyArray_IS_C_CONTIGUOUS(a):
        raise ValueError(f"{name}: buffer must be C-contiguous")
    if writable and not cnp.PyArray_ISWRITEABLE(a):
        raise ValueError(f"{name}: output buffer is read-only")
    return dt


cdef inline str op_name(int op):
    return REDUCE_NAMES[op] if 0 <= op < 6 else str(op)


cdef inline int threads_for(Py_ssize_t work) noexcept nogil:
    """Threads worth using for `work` elements: OpenMP only pays off above a threshold."""
    if work < PARALLEL_MIN_ELEMENTS:
        return 1
    return mt_max_threads()


# ---------------------------------------------------------------------------------------------
# per-element combine; `op` is a literal at every inlined call site, so gcc keeps one branch
# ---------------------------------------------------------------------------------------------

cdef inline num combine(int op, num acc, num v) noexcept nogil:
    """acc (op) v; MAX/MIN propagate NaN (v != v), integers wrap (uint64 arithmetic)."""
    if op == REDUCE_SUM:
        if num is int64_t:
            return <int64_t>(<uint64_t>acc + <uint64_t>v)
        else:
            return acc + v
    elif op == REDUCE_PROD:
        if num is int64_t:
            return <int64_t>(<uint64_t>acc * <uint64_t>v)
        else:
            return acc * v
    elif op == REDUCE_MAX:
        if num is float or num is double:
            return v if (v > acc or v != v) else acc
        else:
            return v if v > acc else acc
    else:
        if num is float or num is double:
            return v if (v < acc or v != v) else acc
        else:
            return v if v < acc else acc


cdef inline num identity(int op, num like) noexcept nogil:
    """The neutral element, so that lanes can start empty (`like` only picks the type)."""
    if op == REDUCE_SUM:
        return 0
    elif op == REDUCE_PROD:
        return 1
    elif op == REDUCE_MAX:
        if num is float or num is double:
            return -INFINITY
        elif num is int64_t:
            return INT64_MIN
        else:
            return 0
    else:
        if num is float or num is double:
            return INFINITY
        elif num is int64_t:
            return INT64_MAX
        else:
            return 255


cdef inline bint better(int op, num v, num best) noexcept nogil:
    """ARGMAX/ARGMIN: v strictly beats best (ties keep the first); the first NaN wins."""
    if num is float or num is double:
        if op == REDUCE_ARGMAX:
            return v > best or (v != v and best == best)
        return v < best or (v != v and best == best)
    else:
        if op == REDUCE_ARGMAX:
            return v > best
        return v < best


cdef inline num fold_lanes(int op, num* acc, Py_ssize_t lanes) noexcept nogil:
    """Tree-combine `lanes` (a power of two) accumulators into one value."""
    cdef Py_ssize_t w = lanes // 2, j
    while w >= 1:
        for j in range(w):
            acc[j] = combine(op, acc[j], acc[j + w])
        w //= 2
    return acc[0]


# ---------------------------------------------------------------------------------------------
# inner == 1: contiguous rows
# ---------------------------------------------------------------------------------------------

cdef void sum_chunks(const num* x, Py_ssize_t nch, num* acc) noexcept nogil:
    """acc[LANES] = lane sums of nch chunks of LANES elements, pairwise above PW_CHUNKS."""
    cdef num tmp[LANES]
    cdef Py_ssize_t i, j, h
    if nch <= PW_CHUNKS:
        for j in range(LANES):
            acc[j] = 0
        for i in range(nch):
            for j in range(LANES):
                acc[j] = acc[j] + x[i * LANES + j]
        return
    h = nch // 2
    sum_chunks(x, h, acc)
    sum_chunks(x + h * LANES, nch - h, tmp)
    for j in range(LANES):
        acc[j] = acc[j] + tmp[j]


cdef inline num flat_row(int op, const num* x, Py_ssize_t n) noexcept nogil:
    """Reduce a contiguous row with LANES independent accumulators (gcc turns them into
    vector registers); SUM goes through the pairwise sum_chunks."""
    cdef num acc[LANES]
    cdef Py_ssize_t nch = n // LANES, i, j
    if op == REDUCE_SUM:
        sum_chunks(x, nch, acc)
    else:
        for j in range(LANES):
            acc[j] = identity(op, x[0])
        for i in range(nch):
            for j in range(LANES):
                acc[j] = combine(op, acc[j], x[i * LANES + j])
    for j in range(n - nch * LANES):
        acc[j] = combine(op, acc[j], x[nch * LANES + j])
    return fold_lanes(op, acc, LANES)


cdef num reduce_row(int op, const num* x, Py_ssize_t n) noexcept nogil:
    if op == REDUCE_SUM:
        return flat_row(REDUCE_SUM, x, n)
    elif op == REDUCE_PROD:
        return flat_row(REDUCE_PROD, x, n)
    elif op == REDUCE_MAX:
        return flat_row(REDUCE_MAX, x, n)
    return flat_row(REDUCE_MIN, x, n)


cdef inline Py_ssize_t arg_row_impl(int op, const num* x, Py_ssize_t n, num* best_out) noexcept nogil:
    """First index of the extreme of a row (n >= 1): the NaN-propagating block extreme is
    vectorized, only the winning block is searched element by element."""
    cdef int vop = REDUCE_MAX if op == REDUCE_ARGMAX else REDUCE_MIN
    cdef num best = x[0], bm
    cdef Py_ssize_t blk, b0, bstart = 0, bn, i, end
    for blk in range((n + ARG_BLOCK - 1) // ARG_BLOCK):
        b0 = blk * ARG_BLOCK
        bn = n - b0 if n - b0 < ARG_BLOCK else ARG_BLOCK
        bm = flat_row(vop, x + b0, bn)
        if better(op, bm, best):
            best = bm
            bstart = b0
    best_out[0] = best
    end = bstart + ARG_BLOCK if bstart + ARG_BLOCK < n else n
    for i in range(bstart, end):
        if x[i] == best:
            return i
        if num is float or num is double:
            if best != best and x[i] != x[i]:
                return i
    return bstart


cdef Py_ssize_t arg_row(int op, const num* x, Py_ssize_t n, num* best_out) noexcept nogil:
    if op == REDUCE_ARGMAX:
        return arg_row_impl(REDUCE_ARGMAX, x, n, best_out)
    return arg_row_impl(REDUCE_ARGMIN, x, n, best_out)


# ---------------------------------------------------------------------------------------------
# inner > 1: accumulate rows of `w` columns (stride `stride` between rows)
# ---------------------------------------------------------------------------------------------

cdef void sum_cols(const num* x, Py_ssize_t nrows, Py_ssize_t stride, Py_ssize_t w,
                   num* acc) noexcept nogil:
    """acc[0:w] = column sums of nrows >= 1 rows (w <= TW), pairwise over COL_BLOCK rows."""
    cdef num tmp[TW]
    cdef const num* row
    cdef Py_ssize_t r, c, h
    if nrows <= COL_BLOCK:
        for c in range(w):
            acc[c] = x[c]
        for r in range(1, nrows):
            row = x + r * stride
            for c in range(w):
                acc[c] = acc[c] + row[c]
        return
    h = nrows // 2
    sum_cols(x, h, stride, w, acc)
    sum_cols(x + h * stride, nrows - h, stride, w, tmp)
    for c in range(w):
        acc[c] = acc[c] + tmp[c]


cdef inline void flat_cols(int op, const num* x, Py_ssize_t nrows, Py_ssize_t stride,
                           Py_ssize_t w, num* acc) noexcept nogil:
    cdef const num* row
    cdef Py_ssize_t r, c
    for c in range(w):
        acc[c] = x[c]
    for r in range(1, nrows):
        row = x + r * stride
        for c in range(w):
            acc[c] = combine(op, acc[c], row[c])


cdef inline void arg_cols_impl(int op, const num* x, Py_ssize_t nrows, Py_ssize_t stride,
                               Py_ssize_t w, num* best, int64_t* idx,
                               int64_t base) noexcept nogil:
    """Per column: first row index of the extreme (+ base), and the extreme itself."""
    cdef const num* row
    cdef Py_ssize_t r, c
    cdef num v
    cdef bint take
    for c in range(w):
        best[c] = x[c]
        idx[c] = base
    for r in range(1, nrows):
        row = x + r * stride
        for c in range(w):
            v = row[c]
            take = better(op, v, best[c])
            best[c] = v if take else best[c]
            idx[c] = base + r if take else idx[c]


cdef void small_lanes(int op, const num* x, Py_ssize_t n, Py_ssize_t inner,
                      num* out) noexcept nogil:
    """A compact (n, inner) slab with small inner, read as one flat stream: L = lcm(inner, 16)
    lanes, lane j accumulating column j % inner, so the loop is as wide as for a row."""
    cdef num acc[LMAX]
    cdef Py_ssize_t L = 16, total = n * inner, nch, i, j, c
    while L % inner:
        L += 16
    nch = total // L
    if op == REDUCE_SUM:
        sum_chunks_L(x, nch, L, acc)
    else:
        for j in range(L):
            acc[j] = identity(op, x[0])
        small_flat(op, x, nch, L, acc)
    for j in range(total - nch * L):     # leftover whole rows
        acc[j] = combine(op, acc[j], x[nch * L + j])
    for c in range(inner):
        out[c] = acc[c]
        for j in range(1, L // inner):
            out[c] = combine(op, out[c], acc[j * inner + c])


cdef void small_flat(int op, const num* x, Py_ssize_t nch, Py_ssize_t L, num* acc) noexcept nogil:
    cdef Py_ssize_t i, j
    if op == REDUCE_PROD:
        for i in range(nch):
            for j in range(L):
                acc[j] = combine(REDUCE_PROD, acc[j], x[i * L + j])
    elif op == REDUCE_MAX:
        for i in range(nch):
            for j in range(L):
                acc[j] = combine(REDUCE_MAX, acc[j], x[i * L + j])
    else:
        for i in range(nch):
            for j in range(L):
                acc[j] = combine(REDUCE_MIN, acc[j], x[i * L + j])


cdef void sum_chunks_L(const num* x, Py_ssize_t nch, Py_ssize_t L, num* acc) noexcept nogil:
    """sum_chunks with a run-time lane count L <= LMAX."""
    cdef num tmp[LMAX]
    cdef Py_ssize_t i, j, h
    if nch <= PW_CHUNKS:
        for j in range(L):
            acc[j] = 0
        for i in range(nch):
            for j in range(L):
                acc[j] = acc[j] + x[i * L + j]
        return
    h = nch // 2
    sum_chunks_L(x, h, L, acc)
    sum_chunks_L(x + h * L, nch - h, L, tmp)
    for j in range(L):
        acc[j] = acc[j] + tmp[j]


cdef void reduce_slab(int op, const num* x, Py_ssize_t nrows, Py_ssize_t stride, Py_ssize_t w,
                      num* vals, int64_t* idx, int64_t base) noexcept nogil:
    """Reduce nrows >= 1 rows of w columns (row stride `stride`) into vals[0:w]; ARG ops also
    write idx[0:w] = base + first row of the extreme. Picks the row, small-inner or column
    kernel, tiling wide slabs by TW columns."""
    cdef Py_ssize_t t, c0, tw
    if op == REDUCE_ARGMAX or op == REDUCE_ARGMIN:
        if w == 1 and stride == 1:
            idx[0] = base + arg_row(op, x, nrows, vals)
        elif op == REDUCE_ARGMAX:
            arg_cols_impl(REDUCE_ARGMAX, x, nrows, stride, w, vals, idx, base)
        else:
            arg_cols_impl(REDUCE_ARGMIN, x, nrows, stride, w, vals, idx, base)
    elif w == 1 and stride == 1:
        vals[0] = reduce_row(op, x, nrows)
    elif w == stride and w < SMALL_INNER:
        small_lanes(op, x, nrows, w, vals)
    else:
        for t in range((w + TW - 1) // TW):
            c0 = t * TW
            tw = w - c0 if w - c0 < TW else TW
            if op == REDUCE_SUM:
                sum_cols(x + c0, nrows, stride, tw, vals + c0)
            elif op == REDUCE_PROD:
                flat_cols(REDUCE_PROD, x + c0, nrows, stride, tw, vals + c0)
            elif op == REDUCE_MAX:
                flat_cols(REDUCE_MAX, x + c0, nrows, stride, tw, vals + c0)
            else:
                flat_cols(REDUCE_MIN, x + c0, nrows, stride, tw, vals + c0)


# ---------------------------------------------------------------------------------------------
# work decomposition: units are (slab k, column tile); a few long slabs split n instead
# ---------------------------------------------------------------------------------------------

cdef inline Py_ssize_t tile_width(Py_ssize_t inner) noexcept nogil:
    """Columns per work unit: small inners stay whole (small_lanes needs the full row)."""
    return inner if inner < SMALL_INNER else TW


cdef void reduce_units(int op, const num* a, num* out, int64_t* iout, Py_ssize_t n,
                       Py_ssize_t inner, Py_ssize_t u0, Py_ssize_t u1) noexcept nogil:
    """Work units [u0, u1): unit u is column tile u % tiles of slab u // tiles."""
    cdef Py_ssize_t tw = tile_width(inner), tiles = (inner + tw - 1) // tw, u, k, c0, w
    cdef bint arg = op == REDUCE_ARGMAX or op == REDUCE_ARGMIN
    cdef num scratch[TW]
    for u in range(u0, u1):
        k = u // tiles
        c0 = (u % tiles) * tw
        w = inner - c0 if inner - c0 < tw else tw
        if arg:
            reduce_slab(op, a + k * n * inner + c0, n, inner, w, scratch,
                        iout + k * inner + c0, 0)
        else:
            reduce_slab(op, a + k * n * inner + c0, n, inner, w, out + k * inner + c0, NULL, 0)


cdef int reduce_split(int op, const num* a, num* out, int64_t* iout, Py_ssize_t m, Py_ssize_t n,
                      Py_ssize_t inner, int nt) noexcept nogil:
    """Few, long slabs: every thread reduces a range of rows of the slab into a partial result,
    then the partials are combined in row order (so ARG ties still keep the first index)."""
    cdef num* vals = <num*>malloc(nt * inner * sizeof(num))
    cdef int64_t* idx = <int64_t*>malloc(nt * inner * sizeof(int64_t))
    cdef bint arg = op == REDUCE_ARGMAX or op == REDUCE_ARGMIN
    cdef Py_ssize_t k, c, r0, r1
    cdef int t
    if vals == NULL or idx == NULL:
        free(vals)
        free(idx)
        return -1
    for k in range(m):
        for t in prange(nt, num_threads=nt, schedule="static"):
            r0 = n * t // nt
            r1 = n * (t + 1) // nt
            reduce_slab(op, a + (k * n + r0) * inner, r1 - r0, inner, inner, vals + t * inner,
                        idx + t * inner, r0)
        for c in range(inner):
            for t in range(1, nt):
                if arg:
                    if better(op, vals[t * inner + c], vals[c]):
                        vals[c] = vals[t * inner + c]
                        idx[c] = idx[t * inner + c]
                elif op == REDUCE_SUM:
                    vals[c] = combine(REDUCE_SUM, vals[c], vals[t * inner + c])
                elif op == REDUCE_PROD:
                    vals[c] = combine(REDUCE_PROD, vals[c], vals[t * inner + c])
                elif op == REDUCE_MAX:
                    vals[c] = combine(REDUCE_MAX, vals[c], vals[t * inner + c])
                else:
                    vals[c] = combine(REDUCE_MIN, vals[c], vals[t * inner + c])
            if arg:
                iout[k * inner + c] = idx[c]
            else:
                out[k * inner + c] = vals[c]
    free(vals)
    free(idx)
    return 0


cdef int reduce_run(int op, const num* a, num* out, int64_t* iout, Py_ssize_t m, Py_ssize_t n,
                    Py_ssize_t inner) noexcept nogil:
    """Serial, parallel over units, or split along n; returns -1 when out of memory."""
    cdef int nt = threads_for(m * n * inner), t
    cdef Py_ssize_t tw = tile_width(inner), units = m * ((inner + tw - 1) // tw)
    if nt == 1:
        reduce_units(op, a, out, iout, n, inner, 0, units)
    elif units >= 2 * nt or n < 4 * nt:
        for t in prange(nt, num_threads=nt, schedule="static"):
            reduce_units(op, a, out, iout, n, inner, units * t // nt, units * (t + 1) // nt)
    else:
        return reduce_split(op, a, out, iout, m, n, inner, nt)
    return 0


cdef inline bint reduce_supported(int op, int dt) noexcept:
    if op < REDUCE_SUM or op > REDUCE_ARGMIN:
        return False
    if dt == DT_BOOL:
        return op == REDUCE_MAX or op == REDUCE_MIN
    return True


cdef int fill_empty(int op, int dt, cnp.ndarray out, Py_ssize_t size) except -1:
    """n == 0: the sum of nothing is 0 and the product 1; the rest have no answer."""
    cdef Py_ssize_t i
    cdef char* po = <char*>cnp.PyArray_DATA(out)
    if op != REDUCE_SUM and op != REDUCE_PROD:
        raise ValueError(f"{op_name(op)}: cannot reduce over an empty axis")
    cdef int value = 1 if op == REDUCE_PROD else 0
    for i in range(size):
        if dt == DT_F32:
            (<float*>po)[i] = value
        elif dt == DT_F64:
            (<double*>po)[i] = value
        else:
            (<int64_t*>po)[i] = value
    return 0


def reduce_last(int op, cnp.ndarray a, cnp.ndarray out, Py_ssize_t n, Py_ssize_t inner=1):
    """Reduce the middle axis of compact a viewed as (m, n, inner) into compact out (m, inner)."""
    cdef int dt = buffer_dtype(a, "reduce_last")
    cdef int dto = buffer_dtype(out, "reduce_last", True)
    cdef Py_ssize_t size = cnp.PyArray_SIZE(a), osize = cnp.PyArray_SIZE(out), m
    cdef bint arg = op == REDUCE_ARGMAX or op == REDUCE_ARGMIN
    cdef int rc = 0
    if not reduce_supported(op, dt):
        raise TypeError(f"reduce op {op_name(op)} is not supported for dtype {DTYPE_NAMES[dt]}")
    if dto != (DT_I64 if arg else dt):
        raise TypeError(f"reduce op {op_name(op)} on {DTYPE_NAMES[dt]} cannot write "
                        f"{DTYPE_NAMES[dto]}")
    if n < 0 or inner < 0:
        raise ValueError(f"reduce_last: n={n} and inner={inner} must be non-negative")
    if n == 0 or inner == 0:
        if size != 0 or (inner == 0 and osize != 0):
            raise ValueError(f"reduce_last: a has {size} elements, expected 0 for n={n}, "
                             f"inner={inner}")
        if inner and osize % inner:
            raise ValueError(f"reduce_last: out has {osize} elements, not a multiple of {inner}")
        if osize:
            fill_empty(op, dt, out, osize)
        return
    m = size // (n * inner)
    if m * n * inner != size:
        raise ValueError(f"reduce_last: a has {size} elements, not a multiple of n*inner = "
                         f"{n * inner}")
    if osize != m * inner:
        raise ValueError(f"reduce_last: out has {osize} elements, expected {m * inner}")
    if m == 0:
        return
    cdef const void* pa = cnp.PyArray_DATA(a)
    cdef void* po = cnp.PyArray_DATA(out)
    with nogil:
        if dt == DT_F32:
            rc = reduce_run(op, <const float*>pa, <float*>po, <int64_t*>po, m, n, inner)
        elif dt == DT_F64:
            rc = reduce_run(op, <const double*>pa, <double*>po, <int64_t*>po, m, n, inner)
        elif dt == DT_I64:
            rc = reduce_run(op, <const int64_t*>pa, <int64_t*>po, <int64_t*>po, m, n, inner)
        else:
            rc = reduce_run(op, <const uint8_t*>pa, <uint8_t*>po, <int64_t*>po, m, n, inner)
    if rc < 0:
        raise MemoryError("reduce_last: could not allocate partial results")


# ---------------------------------------------------------------------------------------------
# scans
# ---------------------------------------------------------------------------------------------

cdef inline void scan_slab_impl(int op, const scan_t* x, scan_t* o, Py_ssize_t n,
                                Py_ssize_t inner, Py_ssize_t c0, Py_ssize_t c1) noexcept nogil:
    """Inclusive scan of columns [c0, c1) of one (n, inner) slab, in row order (the same
    order as numpy's cumsum, so float results match it exactly)."""
    cdef Py_ssize_t r, c
    cdef scan_t acc
    if inner == 1:
        acc = x[0]
        o[0] = acc
        for r in range(1, n):
            acc = combine(op, acc, x[r])
            o[r] = acc
        return
    for c in range(c0, c1):
        o[c] = x[c]
    for r in range(1, n):
        for c in range(c0, c1):
            o[r * inner + c] = combine(op, o[(r - 1) * inner + c], x[r * inner + c])


cdef void scan_units(int op, const scan_t* a, scan_t* out, Py_ssize_t n, Py_ssize_t inner,
                     Py_ssize_t tiles, Py_ssize_t u0, Py_ssize_t u1) noexcept nogil:
    """Units [u0, u1): unit u scans column tile u % tiles of slab u // tiles."""
    cdef Py_ssize_t u, k, c0, c1, tw = (inner + tiles - 1) // tiles
    for u in range(u0, u1):
        k = u // tiles
        c0 = (u % tiles) * tw
        c1 = c0 + tw if c0 + tw < inner else inner
        if op == REDUCE_SUM:
            scan_slab_impl(REDUCE_SUM, a + k * n * inner, out + k * n * inner, n, inner, c0, c1)
        else:
            scan_slab_impl(REDUCE_PROD, a + k * n * inner, out + k * n * inner, n, inner, c0, c1)


cdef void scan_run(int op, const scan_t* a, scan_t* out, Py_ssize_t m, Py_ssize_t n,
                   Py_ssize_t inner) noexcept nogil:
    """Parallel over slabs, or over column tiles when there are few slabs."""
    cdef int nt = threads_for(m * n * inner), t
    cdef Py_ssize_t tiles = 1, units
    if nt > 1 and m < 2 * nt and inner >= 64 * nt:
        tiles = nt
    units = m * tiles
    if nt == 1 or units < 2:
        scan_units(op, a, out, n, inner, tiles, 0, units)
    else:
        for t in prange(nt, num_threads=nt, schedule="static"):
            scan_units(op, a, out, n, inner, tiles, units * t // nt, units * (t + 1) // nt)


def scan_last(int op, cnp.ndarray a, cnp.ndarray out, Py_ssize_t n, Py_ssize_t inner=1):
    """Inclusive scan (SUM: cumsum, PROD: cumprod) along the middle axis of compact (m, n, inner)."""
    cdef int dt = buffer_dtype(a, "scan_last")
    cdef int dto = buffer_dtype(out, "scan_last", True)
    cdef Py_ssize_t size = cnp.PyArray_SIZE(a), m
    if op != REDUCE_SUM and op != REDUCE_PROD:
        raise ValueError(f"scan_last supports SUM (cumsum) and PROD (cumprod), not {op_name(op)}")
    if dt == DT_BOOL:
        raise TypeError(f"scan {op_name(op)} is not supported for dtype bool")
    if dto != dt:
        raise TypeError(f"scan {op_name(op)} on {DTYPE_NAMES[dt]} cannot write {DTYPE_NAMES[dto]}")
    if cnp.PyArray_SIZE(out) != size:
        raise ValueError(f"scan_last: a has {size} elements but out has {cnp.PyArray_SIZE(out)}")
    if n < 0 or inner < 0:
        raise ValueError(f"scan_last: n={n} and inner={inner} must be non-negative")
    if size == 0:
        return
    m = size // (n * inner) if n * inner else 0
    if m * n * inner != size:
        raise ValueError(f"scan_last: a has {size} elements, not a multiple of n*inner = "
                         f"{n * inner}")
    cdef const void* pa = cnp.PyArray_DATA(a)
    cdef void* po = cnp.PyArray_DATA(out)
    with nogil:
        if dt == DT_F32:
            scan_run(op, <const float*>pa, <float*>po, m, n, inner)
        elif dt == DT_F64:
            scan_run(op, <const double*>pa, <double*>po, m, n, inner)
        else:
            scan_run(op, <const int64_t*>pa, <int64_t*>po, m, n, inner)
