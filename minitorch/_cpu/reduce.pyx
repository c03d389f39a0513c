# cython: cdivision=True
# (C division semantics are relied on below, also in MINITORCH_DEBUG builds)
"""Reduction and scan CPU kernels over the middle axis of a compact (m, n, inner) array.

inner == 1 reduces contiguous rows (SIMD lanes across the row); inner > 1 accumulates whole rows
of `inner` elements (SIMD across the columns), which reduces a middle axis without a permute copy.
Float sums are pairwise over blocks, so float32 stays about as accurate as numpy's sum.
"""
cimport numpy as cnp
from cython.parallel cimport prange
from libc.math cimport INFINITY
from libc.stdint cimport INT64_MAX, INT64_MIN, int32_t, int64_t, uint8_t, uint64_t
from libc.stdlib cimport free, malloc

from minitorch._cpu.common cimport (buffer_dtype, DT_BOOL, DT_F32, DT_F64, DT_I64, dtype_code,
                                      omp_get_max_threads, PARALLEL_MIN_ELEMENTS)
from minitorch._cpu.opcodes cimport *

cnp.import_array()

cdef enum:
    LANES = 64          # independent accumulators across a contiguous row
    PW_CHUNKS = 8       # pairwise base case: 8 chunks of LANES = 512 elements
    TW = 1024           # column tile (inner > 1): accumulators for 4-8 KB of a row
    COL_BLOCK = 32      # pairwise base case along n for column sums
    SMALL_INNER = 16    # below this, columns are folded into lanes (see small_lanes)
    LMAX = 256          # lcm(inner, 16) for inner < SMALL_INNER

DTYPE_NAMES = ("float32", "float64", "int64", "bool")
REDUCE_NAMES = ("SUM", "PROD", "MAX", "MIN", "ARGMAX", "ARGMIN")

ctypedef fused num:
    float
    double
    int64_t
    uint8_t

cdef inline str op_name(int op):
    return REDUCE_NAMES[op] if 0 <= op < 6 else str(op)


cdef inline int threads_for(Py_ssize_t work) noexcept nogil:
    """Threads worth using for `work` elements: OpenMP only pays off above a threshold."""
    if work < PARALLEL_MIN_ELEMENTS:
        return 1
    return omp_get_max_threads()


# ---------------------------------------------------------------------------------------------
# Op tags: empty structs used as fused types, so Cython emits one copy of every loop per op
# (and dtype) with the op pasted in; the element loops then vectorize without depending on
# gcc to inline and constant-fold a runtime switch.
# ---------------------------------------------------------------------------------------------

cdef struct OpSum:
    char unused
cdef struct OpProd:
    char unused
cdef struct OpMax:
    char unused
cdef struct OpMin:
    char unused
cdef struct OpArgmax:
    char unused
cdef struct OpArgmin:
    char unused

ctypedef fused value_op:
    OpSum
    OpProd
    OpMax
    OpMin

ctypedef fused arg_op:
    OpArgmax
    OpArgmin


cdef inline num combine(value_op* tag, num acc, num v) noexcept nogil:
    """acc (op) v; MAX/MIN propagate NaN (v != v), integers wrap (uint64 arithmetic)."""
    if value_op is OpSum:
        if num is int64_t:
            return <int64_t>(<uint64_t>acc + <uint64_t>v)
        else:
            return acc + v
    elif value_op is OpProd:
        if num is int64_t:
            return <int64_t>(<uint64_t>acc * <uint64_t>v)
        else:
            return acc * v
    elif value_op is OpMax:
        if num is float or num is double:
            return v if (v > acc) | (v != v) else acc   # | not `or`: no branch
        else:
            return v if v > acc else acc
    else:
        if num is float or num is double:
            return v if (v < acc) | (v != v) else acc
        else:
            return v if v < acc else acc


cdef inline num identity(value_op* tag, num like) noexcept nogil:
    """The neutral element, so that lanes can start empty (`like` only picks the type)."""
    if value_op is OpSum:
        return 0
    elif value_op is OpProd:
        return 1
    elif value_op is OpMax:
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


cdef inline bint better(arg_op* tag, num v, num best) noexcept nogil:
    """ARGMAX/ARGMIN: v strictly beats best (ties keep the first); the first NaN wins."""
    if num is float or num is double:
        if arg_op is OpArgmax:
            return (v > best) | ((v != v) & (best == best))
        else:
            return (v < best) | ((v != v) & (best == best))
    else:
        if arg_op is OpArgmax:
            return v > best
        else:
            return v < best


cdef inline num fold_lanes(value_op* tag, num* acc) noexcept nogil:
    """Tree-combine the LANES (64) accumulators; constant trip counts let gcc unroll it."""
    cdef Py_ssize_t j
    for j in range(32):
        acc[j] = combine(tag, acc[j], acc[j + 32])
    for j in range(16):
        acc[j] = combine(tag, acc[j], acc[j + 16])
    for j in range(8):
        acc[j] = combine(tag, acc[j], acc[j + 8])
    for j in range(4):
        acc[j] = combine(tag, acc[j], acc[j + 4])
    for j in range(2):
        acc[j] = combine(tag, acc[j], acc[j + 2])
    return combine(tag, acc[0], acc[1])


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


cdef num reduce_row(value_op* tag, const num* x, Py_ssize_t n) noexcept nogil:
    """Reduce a contiguous row with LANES independent (vectorized) accumulators."""
    cdef num acc[LANES]
    cdef Py_ssize_t nch = n // LANES, i, j
    if value_op is OpSum:
        sum_chunks(x, nch, acc)
    else:
        for j in range(LANES):
            acc[j] = identity(tag, x[0])
        for i in range(nch):
            for j in range(LANES):
                acc[j] = combine(tag, acc[j], x[i * LANES + j])
    for j in range(n - nch * LANES):
        acc[j] = combine(tag, acc[j], x[nch * LANES + j])
    return fold_lanes(tag, acc)


cdef Py_ssize_t arg_row(arg_op* tag, const num* x, Py_ssize_t n, num* best_out) noexcept nogil:
    """First index of the extreme of a row (n >= 1), in one vectorized pass."""
    # each of LANES lanes keeps its best value and the chunk where it was found (strictly
    # better only, so the first); then the lowest index holding the overall extreme wins, and
    # the tail, whose indices come after every lane's, is checked last
    cdef num best[LANES]
    cdef num tmp[LANES]
    cdef int32_t chunk[LANES]       # as wide as a float lane; reduce_row_arg keeps rows short
    cdef Py_ssize_t nch = n // LANES, i, j, bi, cand
    cdef num v, bv
    cdef bint take
    if nch == 0:
        bv = x[0]
        bi = 0
    else:
        for j in range(LANES):
            best[j] = x[j]
            chunk[j] = 0
        for i in range(1, nch):
            for j in range(LANES):
                v = x[i * LANES + j]
                take = better(tag, v, best[j])
                best[j] = v if take else best[j]
                chunk[j] = <int32_t>i if take else chunk[j]
        for j in range(LANES):
            tmp[j] = best[j]
        if arg_op is OpArgmax:       # NaN-propagating max/min: the extreme in torch's sense
            bv = fold_lanes(<OpMax*>NULL, tmp)
        else:
            bv = fold_lanes(<OpMin*>NULL, tmp)
        bi = n
        for j in range(LANES):
            cand = chunk[j] * LANES + j
            if num is float or num is double:
                cand = cand if (best[j] == bv) | ((best[j] != best[j]) & (bv != bv)) else n
            else:
                cand = cand if best[j] == bv else n
            bi = cand if cand < bi else bi
    for i in range(nch * LANES, n):     # the tail comes after every lane index
        if better(tag, x[i], bv):
            bv = x[i]
            bi = i
    best_out[0] = bv
    return bi


cdef Py_ssize_t reduce_row_arg(arg_op* tag, const num* x, Py_ssize_t n,
                               num* best_out) noexcept nogil:
    """arg_row over segments short enough for its 32-bit chunk counters, merged in order."""
    cdef Py_ssize_t seg = <Py_ssize_t>LANES << 24, s0, i, bi = 0
    cdef num v, bv
    for s0 in range(0, (n + seg - 1) // seg):
        i = s0 * seg + arg_row(tag, x + s0 * seg, n - s0 * seg if n - s0 * seg < seg else seg, &v)
        if s0 == 0 or better(tag, v, bv):
            bv = v
            bi = i
    best_out[0] = bv
    return bi


# ---------------------------------------------------------------------------------------------
# inner > 1: accumulate rows of `w` columns (stride `stride` between rows)
# ---------------------------------------------------------------------------------------------

cdef void sum_cols(const num* x, Py_ssize_t nrows, Py_ssize_t stride, Py_ssize_t w,
                   num* acc) noexcept nogil:
    """acc[0:w] = column sums of nrows >= 1 rows (w <= TW), pairwise over COL_BLOCK rows."""
    # the base case adds two rows per pass over acc, halving its loads and stores
    cdef num tmp[TW]
    cdef const num* r0
    cdef const num* r1
    cdef Py_ssize_t r, c, h
    if nrows <= COL_BLOCK:
        for c in range(w):
            acc[c] = x[c]
        r = 1
        while r + 1 < nrows:
            r0 = x + r * stride
            r1 = r0 + stride
            for c in range(w):
                acc[c] = acc[c] + (r0[c] + r1[c])
            r += 2
        if r < nrows:
            r0 = x + r * stride
            for c in range(w):
                acc[c] = acc[c] + r0[c]
        return
    h = nrows // 2
    sum_cols(x, h, stride, w, acc)
    sum_cols(x + h * stride, nrows - h, stride, w, tmp)
    for c in range(w):
        acc[c] = acc[c] + tmp[c]


cdef void flat_cols(value_op* tag, const num* x, Py_ssize_t nrows, Py_ssize_t stride,
                    Py_ssize_t w, num* acc) noexcept nogil:
    """acc[0:w] = column reduction of nrows >= 1 rows (SUM goes through sum_cols)."""
    cdef const num* row
    cdef Py_ssize_t r, c
    if value_op is OpSum:
        sum_cols(x, nrows, stride, w, acc)
    else:
        for c in range(w):
            acc[c] = x[c]
        for r in range(1, nrows):
            row = x + r * stride
            for c in range(w):
                acc[c] = combine(tag, acc[c], row[c])


cdef void arg_cols(arg_op* tag, const num* x, Py_ssize_t nrows, Py_ssize_t stride,
                   Py_ssize_t w, num* best, int64_t* idx, int64_t base) noexcept nogil:
    """Per column: the first row index of the extreme (+ base), and the extreme itself."""
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
            take = better(tag, v, best[c])
            best[c] = v if take else best[c]
            idx[c] = base + r if take else idx[c]


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


cdef void small_lanes(value_op* tag, const num* x, Py_ssize_t n, Py_ssize_t inner,
                      num* out) noexcept nogil:
    """out[0:inner] = reduction of a compact (n, inner) slab with a small inner."""
    # read as one flat stream with L = lcm(inner, 16) lanes, lane j accumulating column
    # j % inner, so the loop is as wide as a row reduction's instead of `inner` long
    cdef num acc[LMAX]
    cdef Py_ssize_t L = 16, total = n * inner, nch, i, j, c
    while L % inner:
        L += 16
    nch = total // L
    if value_op is OpSum:
        sum_chunks_L(x, nch, L, acc)
    else:
        for j in range(L):
            acc[j] = identity(tag, x[0])
        for i in range(nch):
            for j in range(L):
                acc[j] = combine(tag, acc[j], x[i * L + j])
    for j in range(total - nch * L):     # leftover whole rows
        acc[j] = combine(tag, acc[j], x[nch * L + j])
    for c in range(inner):
        out[c] = acc[c]
        for j in range(1, L // inner):
            out[c] = combine(tag, out[c], acc[j * inner + c])


cdef void value_slab(value_op* tag, const num* x, Py_ssize_t nrows, Py_ssize_t stride,
                     Py_ssize_t w, num* vals) noexcept nogil:
    """vals[0:w] = reduction of nrows >= 1 rows of w columns, row stride `stride`."""
    cdef Py_ssize_t t, c0
    if w == 1 and stride == 1:
        vals[0] = reduce_row(tag, x, nrows)
    elif w == stride and w < SMALL_INNER:
        small_lanes(tag, x, nrows, w, vals)
    else:
        for t in range((w + TW - 1) // TW):
            c0 = t * TW
            flat_cols(tag, x + c0, nrows, stride, w - c0 if w - c0 < TW else TW, vals + c0)


cdef void arg_slab(arg_op* tag, const num* x, Py_ssize_t nrows, Py_ssize_t stride,
                   Py_ssize_t w, num* vals, int64_t* idx, int64_t base) noexcept nogil:
    """idx[0:w] = base + first row of each column's extreme, vals[0:w] the extremes."""
    if w == 1 and stride == 1:
        idx[0] = base + reduce_row_arg(tag, x, nrows, vals)
    else:
        arg_cols(tag, x, nrows, stride, w, vals, idx, base)


cdef void reduce_slab(int op, const num* x, Py_ssize_t nrows, Py_ssize_t stride, Py_ssize_t w,
                      num* vals, int64_t* idx, int64_t base) noexcept nogil:
    """Dispatch on op once: SUM..MIN write vals, ARGMAX/ARGMIN write idx (and vals)."""
    if op == REDUCE_SUM:
        value_slab(<OpSum*>NULL, x, nrows, stride, w, vals)
    elif op == REDUCE_PROD:
        value_slab(<OpProd*>NULL, x, nrows, stride, w, vals)
    elif op == REDUCE_MAX:
        value_slab(<OpMax*>NULL, x, nrows, stride, w, vals)
    elif op == REDUCE_MIN:
        value_slab(<OpMin*>NULL, x, nrows, stride, w, vals)
    elif op == REDUCE_ARGMAX:
        arg_slab(<OpArgmax*>NULL, x, nrows, stride, w, vals, idx, base)
    else:
        arg_slab(<OpArgmin*>NULL, x, nrows, stride, w, vals, idx, base)


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


cdef void merge_values(value_op* tag, num* vals, Py_ssize_t parts, Py_ssize_t inner) noexcept nogil:
    """vals[0:inner] = combination of `parts` partial rows of `inner` values."""
    cdef Py_ssize_t t, c
    for t in range(1, parts):
        for c in range(inner):
            vals[c] = combine(tag, vals[c], vals[t * inner + c])


cdef void merge_args(arg_op* tag, num* vals, int64_t* idx, Py_ssize_t parts,
                     Py_ssize_t inner) noexcept nogil:
    """Like merge_values for ARG ops; partials are in row order, so strict wins keep ties."""
    cdef Py_ssize_t t, c
    for t in range(1, parts):
        for c in range(inner):
            if better(tag, vals[t * inner + c], vals[c]):
                vals[c] = vals[t * inner + c]
                idx[c] = idx[t * inner + c]


cdef int reduce_split(int op, const num* a, num* out, int64_t* iout, Py_ssize_t m, Py_ssize_t n,
                      Py_ssize_t inner, int nt) noexcept nogil:
    """Few, long slabs: threads reduce row ranges to partials, merged in row order."""
    # returns -1 when the partials cannot be allocated
    cdef num* vals = <num*>malloc(nt * inner * sizeof(num))
    cdef int64_t* idx = <int64_t*>malloc(nt * inner * sizeof(int64_t))
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
        if op == REDUCE_SUM:
            merge_values(<OpSum*>NULL, vals, nt, inner)
        elif op == REDUCE_PROD:
            merge_values(<OpProd*>NULL, vals, nt, inner)
        elif op == REDUCE_MAX:
            merge_values(<OpMax*>NULL, vals, nt, inner)
        elif op == REDUCE_MIN:
            merge_values(<OpMin*>NULL, vals, nt, inner)
        elif op == REDUCE_ARGMAX:
            merge_args(<OpArgmax*>NULL, vals, idx, nt, inner)
        else:
            merge_args(<OpArgmin*>NULL, vals, idx, nt, inner)
        for c in range(inner):
            if op == REDUCE_ARGMAX or op == REDUCE_ARGMIN:
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
# scans: SUM/PROD (cumsum, cumprod) write values; MAX/MIN (cummax, cummin) write values and the
# int64 position of the running extreme
# ---------------------------------------------------------------------------------------------

ctypedef fused extreme_op:
    OpMax
    OpMin


cdef void scan_slab(value_op* tag, const num* x, num* o, Py_ssize_t n,
                    Py_ssize_t inner, Py_ssize_t c0, Py_ssize_t c1) noexcept nogil:
    """Inclusive scan of columns [c0, c1) of one (n, inner) slab."""
    # sequential in row order, like numpy's cumsum, so float results match it exactly
    cdef Py_ssize_t r, c
    cdef num acc
    if inner == 1:
        acc = x[0]
        o[0] = acc
        for r in range(1, n):
            acc = combine(tag, acc, x[r])
            o[r] = acc
        return
    for c in range(c0, c1):
        o[c] = x[c]
    for r in range(1, n):
        for c in range(c0, c1):
            o[r * inner + c] = combine(tag, o[(r - 1) * inner + c], x[r * inner + c])


cdef inline bint takes_over(extreme_op* tag, num v, num best) noexcept nogil:
    """v replaces the running extreme `best`: ties too (the last occurrence wins), a NaN always,
    and nothing replaces a NaN but another NaN (torch's cummax/cummin rule)."""
    if num is float or num is double:
        if extreme_op is OpMax:
            return (v != v) | ((best == best) & (v >= best))
        else:
            return (v != v) | ((best == best) & (v <= best))
    else:
        if extreme_op is OpMax:
            return v >= best
        else:
            return v <= best


cdef void scan_index_slab(extreme_op* tag, const num* x, num* o, int64_t* idx, Py_ssize_t n,
                          Py_ssize_t inner, Py_ssize_t c0, Py_ssize_t c1) noexcept nogil:
    """Running extreme and its row down columns [c0, c1) of one (n, inner) slab."""
    cdef Py_ssize_t r, c, at
    cdef bint take
    for c in range(c0, c1):
        o[c] = x[c]
        idx[c] = 0
    for r in range(1, n):
        for c in range(c0, c1):
            at = r * inner + c
            take = takes_over(tag, x[at], o[at - inner])
            o[at] = x[at] if take else o[at - inner]
            idx[at] = r if take else idx[at - inner]


cdef void scan_units(int op, const num* a, num* out, int64_t* idx, Py_ssize_t n,
                     Py_ssize_t inner, Py_ssize_t tiles, Py_ssize_t u0,
                     Py_ssize_t u1) noexcept nogil:
    """Units [u0, u1): unit u scans column tile u % tiles of slab u // tiles."""
    cdef Py_ssize_t u, k, c0, c1, tw = (inner + tiles - 1) // tiles, at
    for u in range(u0, u1):
        k = u // tiles
        at = k * n * inner
        c0 = (u % tiles) * tw
        c1 = c0 + tw if c0 + tw < inner else inner
        if op == REDUCE_SUM:
            scan_slab(<OpSum*>NULL, a + at, out + at, n, inner, c0, c1)
        elif op == REDUCE_PROD:
            scan_slab(<OpProd*>NULL, a + at, out + at, n, inner, c0, c1)
        elif op == REDUCE_MAX:
            scan_index_slab(<OpMax*>NULL, a + at, out + at, idx + at, n, inner, c0, c1)
        else:
            scan_index_slab(<OpMin*>NULL, a + at, out + at, idx + at, n, inner, c0, c1)


cdef void scan_run(int op, const num* a, num* out, int64_t* idx, Py_ssize_t m, Py_ssize_t n,
                   Py_ssize_t inner) noexcept nogil:
    """Parallel over slabs, or over column tiles when there are few slabs."""
    cdef int nt = threads_for(m * n * inner), t
    cdef Py_ssize_t tiles = 1, units
    if nt > 1 and m < 2 * nt and inner >= 64 * nt:
        tiles = nt
    units = m * tiles
    if nt == 1 or units < 2:
        scan_units(op, a, out, idx, n, inner, tiles, 0, units)
    else:
        for t in prange(nt, num_threads=nt, schedule="static"):
            scan_units(op, a, out, idx, n, inner, tiles, units * t // nt, units * (t + 1) // nt)


cdef Py_ssize_t check_scan(str name, int op, cnp.ndarray a, cnp.ndarray out, Py_ssize_t n,
                           Py_ssize_t inner) except -1:
    """The slab count m of a scan of compact a (m, n, inner) into out, after the checks both
    scans share (op and dtype support are the caller's)."""
    cdef int dt = buffer_dtype(a, name)
    cdef int dto = buffer_dtype(out, name, True)
    cdef Py_ssize_t size = cnp.PyArray_SIZE(a), m
    if dto != dt:
        raise TypeError(f"scan {op_name(op)} on {DTYPE_NAMES[dt]} cannot write {DTYPE_NAMES[dto]}")
    if cnp.PyArray_SIZE(out) != size:
        raise ValueError(f"{name}: a has {size} elements but out has {cnp.PyArray_SIZE(out)}")
    if n < 0 or inner < 0:
        raise ValueError(f"{name}: n={n} and inner={inner} must be non-negative")
    m = size // (n * inner) if n * inner else 0
    if m * n * inner != size:
        raise ValueError(f"{name}: a has {size} elements, not a multiple of n*inner = "
                         f"{n * inner}")
    return m


cdef int scan_dispatch(int op, cnp.ndarray a, cnp.ndarray out, int64_t* idx, Py_ssize_t m,
                       Py_ssize_t n, Py_ssize_t inner) except -1:
    """Run scan_run for a's dtype (m slabs, none when a is empty)."""
    cdef int dt = dtype_code(a)
    cdef const void* pa = cnp.PyArray_DATA(a)
    cdef void* po = cnp.PyArray_DATA(out)
    if m == 0:
        return 0
    with nogil:
        if dt == DT_F32:
            scan_run(op, <const float*>pa, <float*>po, idx, m, n, inner)
        elif dt == DT_F64:
            scan_run(op, <const double*>pa, <double*>po, idx, m, n, inner)
        elif dt == DT_I64:
            scan_run(op, <const int64_t*>pa, <int64_t*>po, idx, m, n, inner)
        else:
            scan_run(op, <const uint8_t*>pa, <uint8_t*>po, idx, m, n, inner)
    return 0


def scan_last(int op, cnp.ndarray a, cnp.ndarray out, Py_ssize_t n, Py_ssize_t inner=1):
    """Inclusive scan (SUM: cumsum, PROD: cumprod) along the middle axis of (m, n, inner)."""
    if op != REDUCE_SUM and op != REDUCE_PROD:
        raise ValueError(f"scan_last supports SUM (cumsum) and PROD (cumprod), not {op_name(op)}")
    if buffer_dtype(a, "scan_last") == DT_BOOL:
        raise TypeError(f"scan {op_name(op)} is not supported for dtype bool")
    scan_dispatch(op, a, out, NULL, check_scan("scan_last", op, a, out, n, inner), n, inner)


def scan_index_last(int op, cnp.ndarray a, cnp.ndarray values, cnp.ndarray indices,
                    Py_ssize_t n, Py_ssize_t inner=1):
    """Running MAX (cummax) or MIN (cummin) along the middle axis of (m, n, inner) into values,
    and into indices (int64) the position along n where it was found: ties go to the later
    position, and NaN propagates (a later NaN taking over), as in torch. Any storage dtype."""
    if op != REDUCE_MAX and op != REDUCE_MIN:
        raise ValueError(f"scan_index_last supports MAX (cummax) and MIN (cummin), not "
                         f"{op_name(op)}")
    cdef Py_ssize_t m = check_scan("scan_index_last", op, a, values, n, inner)
    if buffer_dtype(indices, "scan_index_last", True) != DT_I64:
        raise TypeError("scan_index_last: indices must have dtype int64")
    if cnp.PyArray_SIZE(indices) != cnp.PyArray_SIZE(a):
        raise ValueError(f"scan_index_last: a has {cnp.PyArray_SIZE(a)} elements but indices "
                         f"has {cnp.PyArray_SIZE(indices)}")
    scan_dispatch(op, a, values, <int64_t*>cnp.PyArray_DATA(indices), m, n, inner)
