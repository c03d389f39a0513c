"""Strided data movement: compact (a view into contiguous memory), its adjoints strided_add and
strided_set (a contiguous block scattered through a view, overlap-safe), and dtype cast.

Every kernel walks the view as an odometer over `collapse_dims`-merged axes. Two stride sets
travel together (destination, source), so one walker serves both directions: compact is
(packed dst, view src), strided_set / strided_add are (view dst, packed src). Shapes that walk
badly row by row get one of two layouts: transposes go through square tiles, short inner rows
(im2col's kernel rows) through a table of offsets for a block of inner axes. Threads split the
walk only where their writes provably cannot meet (see `plan`).
"""
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from cython.parallel cimport prange
cimport numpy as cnp

from minitorch._cpu.common cimport (collapse_dims, load_dims, MAX_DIMS, omp_get_max_threads,
                                      PARALLEL_MIN_ELEMENTS, shape_size, unravel_offset)

cnp.import_array()

cdef extern from "transpose8.h":     # an 8 x 8 copy of 32-bit words through vector shuffles
    void transpose8_32(const void* src, Py_ssize_t ss, void* dst, Py_ssize_t ds) nogil

ctypedef fused move_t:      # pure data movement only cares about the element width
    uint8_t
    uint16_t
    uint32_t
    uint64_t

ctypedef fused value_t:     # arithmetic needs the real type (uint8 is bool: add means or)
    float
    double
    int64_t
    uint8_t

cdef enum:
    TILE = 16                   # transpose tile edge: a cache line (float32) or two (float64)
    CHUNKS_PER_THREAD = 4       # dynamic chunks: a thread the OS delays holds up less work
    SHORT_ROW = 16              # innermost rows shorter than this are worth reordering
    ROW_WINDOW = 16384          # elements the packed side may span inside a reordered row
    TABLE_MAX = 512             # largest block of inner axes walked through an offset table


# ---------------------------------------------------------------------------------------------
# validation (Python level, before anything is written)

cdef int check_buffer(cnp.ndarray buf, str name, bint writable) except -1:
    """Buffers must be 1-D and C-contiguous (we index them with raw pointers)."""
    if cnp.PyArray_NDIM(buf) != 1 or not cnp.PyArray_IS_C_CONTIGUOUS(buf):
        raise ValueError(f"{name} must be a 1-D contiguous buffer, got shape "
                         f"{(<object>buf).shape} and strides {(<object>buf).strides}")
    if writable and not cnp.PyArray_ISWRITEABLE(buf):
        raise ValueError(f"{name} is read-only")
    return 0


cdef int check_same_dtype(cnp.ndarray a, cnp.ndarray b, str a_name, str b_name) except -1:
    cdef int ta = cnp.PyArray_TYPE(a), tb = cnp.PyArray_TYPE(b)
    if ta != tb and not cnp.PyArray_EquivTypenums(ta, tb):
        raise TypeError(f"{a_name} has dtype {(<object>a).dtype} but {b_name} has dtype "
                        f"{(<object>b).dtype}")
    return 0


cdef int value_code(cnp.ndarray a) except -1:
    """0..3 for float32, float64, int64, uint8/bool (the storage dtypes); TypeError otherwise."""
    cdef int t = cnp.PyArray_TYPE(a)
    cdef Py_ssize_t size = cnp.PyArray_ITEMSIZE(a)
    if t == cnp.NPY_FLOAT32:
        return 0
    if t == cnp.NPY_FLOAT64:
        return 1
    if (t == cnp.NPY_LONG or t == cnp.NPY_LONGLONG) and size == 8:
        return 2
    if t == cnp.NPY_UINT8 or t == cnp.NPY_BOOL:
        return 3
    raise TypeError(f"unsupported dtype {(<object>a).dtype}: expected float32, float64, int64 "
                    "or uint8 (bool)")


cdef tuple as_tuple(int nd, const Py_ssize_t* p):
    return tuple([p[d] for d in range(nd)])


cdef int check_view(int nd, const Py_ssize_t* shape, const Py_ssize_t* strides,
                    Py_ssize_t offset, Py_ssize_t length, str name) except -1:
    """The view must touch only elements in [0, length); size-0 views touch nothing."""
    cdef Py_ssize_t lo = offset, hi = offset, reach, limit = <Py_ssize_t>(<size_t>-1 >> 2)
    cdef int d
    for d in range(nd):
        if shape[d] < 0:
            raise ValueError(f"negative dimension {shape[d]} in shape {as_tuple(nd, shape)}")
    if shape_size(nd, shape) == 0:
        return 0
    for d in range(nd):
        if shape[d] > 1 and (strides[d] > limit // (shape[d] - 1)
                             or strides[d] < -limit // (shape[d] - 1)):
            raise ValueError(f"stride {strides[d]} of a size-{shape[d]} axis overflows")
        reach = (shape[d] - 1) * strides[d]
        if reach > 0:
            hi += reach
        else:
            lo += reach
        if hi > limit or lo < -limit:
            raise ValueError("view extent overflows")
    if lo < 0 or hi >= length:
        raise IndexError(f"view (shape {as_tuple(nd, shape)}, strides {as_tuple(nd, strides)}, "
                         f"offset {offset}) reaches "
                         f"elements {lo}..{hi} of {name}, which has {length} elements")
    return 0


cdef int check_length(cnp.ndarray buf, Py_ssize_t need, str name) except -1:
    cdef Py_ssize_t have = cnp.PyArray_DIM(buf, 0)
    if have < need:
        raise ValueError(f"{name} has {have} elements but the view needs {need}")
    return 0


cdef void c_strides(int nd, const Py_ssize_t* shape, Py_ssize_t* out) noexcept nogil:
    """Strides of a C-contiguous array of `shape` (the compact side of every kernel)."""
    cdef Py_ssize_t step = 1
    cdef int d
    for d in range(nd - 1, -1, -1):
        out[d] = step
        step *= shape[d]


# ---------------------------------------------------------------------------------------------
# memory-layout analysis: which parallel splits are safe

cdef inline Py_ssize_t absval(Py_ssize_t x) noexcept nogil:
    return -x if x < 0 else x


cdef bint is_injective(int nd, const Py_ssize_t* shape, const Py_ssize_t* strides) noexcept nogil:
    """Sufficient test that no two indices share an element: sorted by |stride|, each stride
    exceeds the span of all smaller ones (fails for stride 0 and for overlapping windows)."""
    cdef int order[MAX_DIMS]
    cdef int d, e, t
    cdef Py_ssize_t span = 0
    for d in range(nd):
        order[d] = d
    for d in range(1, nd):          # insertion sort: nd is tiny
        e = d
        while e > 0 and absval(strides[order[e - 1]]) > absval(strides[order[e]]):
            t = order[e]; order[e] = order[e - 1]; order[e - 1] = t
            e -= 1
    for d in range(nd):
        e = order[d]
        if absval(strides[e]) <= span:
            return False
        span += (shape[e] - 1) * absval(strides[e])
    return True


cdef int disjoint_axis(int nd, const Py_ssize_t* shape, const Py_ssize_t* strides) noexcept nogil:
    """An axis whose slices never share an element (|stride| > span of every other axis), or
    -1. For an im2col view this is the batch axis."""
    cdef Py_ssize_t span = 0
    cdef int d
    for d in range(nd):
        span += (shape[d] - 1) * absval(strides[d])
    for d in range(nd):
        if shape[d] > 1 and absval(strides[d]) > span - (shape[d] - 1) * absval(strides[d]):
            return d
    return -1


cdef void move_axis_first(int nd, int d, Py_ssize_t* shape, Py_ssize_t* s0,
                          Py_ssize_t* s1) noexcept nogil:
    """Reorder axes so that `d` comes first (its slices become contiguous linear ranges)."""
    cdef Py_ssize_t n = shape[d], a = s0[d], b = s1[d]
    cdef int e
    for e in range(d, 0, -1):
        shape[e] = shape[e - 1]; s0[e] = s0[e - 1]; s1[e] = s1[e - 1]
    shape[0] = n; s0[0] = a; s1[0] = b


# ---------------------------------------------------------------------------------------------
# the odometer walkers

cdef inline Py_ssize_t start_odometer(Py_ssize_t linear, int nd, const Py_ssize_t* shape,
                                      const Py_ssize_t* strides, Py_ssize_t* idx) noexcept nogil:
    """Set idx to the `linear`-th C-order index of `shape`; returns its offset under strides."""
    cdef Py_ssize_t pos = 0
    cdef int d
    for d in range(nd - 1, -1, -1):
        idx[d] = linear % shape[d]
        pos += idx[d] * strides[d]
        linear //= shape[d]
    return pos


cdef inline void carry(Py_ssize_t* idx, int d, const Py_ssize_t* shape, const Py_ssize_t* sa,
                       const Py_ssize_t* sb, Py_ssize_t* pa, Py_ssize_t* pb) noexcept nogil:
    """Advance the odometer at axis d, carrying into outer axes, moving both positions."""
    while d >= 0:
        idx[d] += 1
        pa[0] += sa[d]
        pb[0] += sb[d]
        if idx[d] < shape[d]:
            return
        pa[0] -= shape[d] * sa[d]
        pb[0] -= shape[d] * sb[d]
        idx[d] = 0
        d -= 1


cdef inline value_t combine(value_t a, value_t b) noexcept nogil:
    if value_t is uint8_t:
        return (a != 0) | (b != 0)      # bool "addition" is logical or
    else:
        return a + b


cdef inline void copy_row(move_t* d, Py_ssize_t jd, const move_t* s, Py_ssize_t js,
                          Py_ssize_t cnt) noexcept nogil:
    cdef Py_ssize_t j
    if jd == 1 and js == 1:
        if cnt >= 16:               # a libc call only pays off on longer rows
            memcpy(d, s, cnt * sizeof(move_t))
        else:
            for j in range(cnt):
                d[j] = s[j]
    elif js == 0:
        fill_row(d, jd, s[0], cnt)
    elif jd == 1:
        for j in range(cnt):
            d[j] = s[j * js]
    else:
        for j in range(cnt):
            d[j * jd] = s[j * js]


cdef inline void fill_row(move_t* d, Py_ssize_t jd, move_t value, Py_ssize_t cnt) noexcept nogil:
    """A fill with its value in a register: read through s, d may alias it, so every store
    would reload it and the loop would not vectorize (a 400 KB zero fill ran at 1 element per
    cycle; measured)."""
    cdef Py_ssize_t j
    if jd == 1:
        for j in range(cnt):
            d[j] = value
    else:
        for j in range(cnt):
            d[j * jd] = value


cdef inline void add_row(value_t* d, Py_ssize_t jd, const value_t* s, Py_ssize_t js,
                         Py_ssize_t cnt) noexcept nogil:
    """In index order, so a repeated destination (stride 0) receives every contribution."""
    cdef Py_ssize_t j
    cdef value_t acc
    if jd == 0:                     # a broadcast row: sum in a register, store once
        acc = d[0]
        for j in range(cnt):
            acc = combine(acc, s[j * js])
        d[0] = acc
    elif jd == 1 and js == 1:
        for j in range(cnt):
            d[j] = combine(d[j], s[j])
    else:
        for j in range(cnt):
            d[j * jd] = combine(d[j * jd], s[j * js])


cdef void copy_range(move_t* dst, const Py_ssize_t* sd, const move_t* src, const Py_ssize_t* ss,
                     int nd, const Py_ssize_t* shape, Py_ssize_t start,
                     Py_ssize_t stop) noexcept nogil:
    """dst[view_d(i)] = src[view_s(i)] for the C-order indices i in [start, stop), in order.
    Whole blocks of the two innermost axes run as a nested loop, so the odometer steps once
    per block rather than once per row."""
    cdef Py_ssize_t idx[MAX_DIMS]
    cdef Py_ssize_t pd = start_odometer(start, nd, shape, sd, idx)
    cdef Py_ssize_t ps = unravel_offset(start, nd, shape, ss)
    cdef int last = nd - 1
    cdef Py_ssize_t n = shape[last], jd = sd[last], js = ss[last], cnt, r
    cdef Py_ssize_t m = shape[last - 1] if nd >= 2 else 1
    cdef Py_ssize_t rd = sd[last - 1] if nd >= 2 else 0, rs = ss[last - 1] if nd >= 2 else 0
    while start < stop:
        if nd >= 2 and idx[last] == 0 and idx[last - 1] == 0 and stop - start >= m * n:
            for r in range(m):
                copy_row(dst + pd + r * rd, jd, src + ps + r * rs, js, n)
            start += m * n
            pd += (m - 1) * rd + (n - 1) * jd   # onto the block's last element, then carry
            ps += (m - 1) * rs + (n - 1) * js
            idx[last - 1] = m - 1
            idx[last] = n - 1
        else:
            cnt = min(n - idx[last], stop - start)
            copy_row(dst + pd, jd, src + ps, js, cnt)
            start += cnt
            pd += (cnt - 1) * jd
            ps += (cnt - 1) * js
            idx[last] += cnt - 1
        carry(idx, last, shape, sd, ss, &pd, &ps)


cdef void add_range(value_t* dst, const Py_ssize_t* sd, const value_t* src, const Py_ssize_t* ss,
                    int nd, const Py_ssize_t* shape, Py_ssize_t start,
                    Py_ssize_t stop) noexcept nogil:
    """dst[view_d(i)] += src[view_s(i)] for i in [start, stop), strictly in order, so repeated
    destination elements (stride 0, overlapping windows) accumulate every contribution."""
    cdef Py_ssize_t idx[MAX_DIMS]
    cdef Py_ssize_t pd = start_odometer(start, nd, shape, sd, idx)
    cdef Py_ssize_t ps = unravel_offset(start, nd, shape, ss)
    cdef int last = nd - 1
    cdef Py_ssize_t n = shape[last], jd = sd[last], js = ss[last], cnt, r
    cdef Py_ssize_t m = shape[last - 1] if nd >= 2 else 1
    cdef Py_ssize_t rd = sd[last - 1] if nd >= 2 else 0, rs = ss[last - 1] if nd >= 2 else 0
    while start < stop:
        if nd >= 2 and idx[last] == 0 and idx[last - 1] == 0 and stop - start >= m * n:
            for r in range(m):
                add_row(dst + pd + r * rd, jd, src + ps + r * rs, js, n)
            start += m * n
            pd += (m - 1) * rd + (n - 1) * jd
            ps += (m - 1) * rs + (n - 1) * js
            idx[last - 1] = m - 1
            idx[last] = n - 1
        else:
            cnt = min(n - idx[last], stop - start)
            add_row(dst + pd, jd, src + ps, js, cnt)
            start += cnt
            pd += (cnt - 1) * jd
            ps += (cnt - 1) * js
            idx[last] += cnt - 1
        carry(idx, last, shape, sd, ss, &pd, &ps)


cdef int block_axis(int nd, const Py_ssize_t* shape) noexcept nogil:
    """With short innermost rows, the first axis t >= 1 such that axes t.. form a block of at
    most TABLE_MAX elements spanning two or more axes; -1 when there is none."""
    cdef Py_ssize_t size = 1
    cdef int t = nd
    if nd < 3 or shape[nd - 1] >= SHORT_ROW:
        return -1
    while t > 1 and size * shape[t - 1] <= TABLE_MAX:
        t -= 1
        size *= shape[t]
    return t if t <= nd - 2 else -1


cdef Py_ssize_t fill_table(int nd, const Py_ssize_t* shape, int t, const Py_ssize_t* strides,
                           Py_ssize_t* table) noexcept nogil:
    """Offsets of every index of the block (axes t..) under `strides`; returns the block size."""
    cdef Py_ssize_t size = shape_size(nd - t, shape + t), q
    for q in range(size):
        table[q] = unravel_offset(q, nd - t, shape + t, strides + t)
    return size


cdef void copy_blocks(move_t* dst, const Py_ssize_t* sd, const move_t* src, const Py_ssize_t* ss,
                      int t, const Py_ssize_t* shape, const Py_ssize_t* td,
                      const Py_ssize_t* ts, Py_ssize_t size, Py_ssize_t run, Py_ssize_t b0,
                      Py_ssize_t b1) noexcept nogil:
    """Blocks [b0, b1) of the odometer over axes < t, each block copied through the offset
    tables (`size` entries, each the start of a contiguous run of `run` elements): C order,
    with one odometer step per block instead of per short row."""
    cdef Py_ssize_t idx[MAX_DIMS]
    cdef Py_ssize_t pd = start_odometer(b0, t, shape, sd, idx)
    cdef Py_ssize_t ps = unravel_offset(b0, t, shape, ss), b, q, j
    cdef move_t* d
    cdef const move_t* s
    for b in range(b0, b1):
        d = dst + pd
        s = src + ps
        if run == 1:
            for q in range(size):
                d[td[q]] = s[ts[q]]
        else:
            for q in range(size):
                for j in range(run):
                    d[td[q] + j] = s[ts[q] + j]
        carry(idx, t - 1, shape, sd, ss, &pd, &ps)


cdef void add_blocks(value_t* dst, const Py_ssize_t* sd, const value_t* src,
                     const Py_ssize_t* ss, int t, const Py_ssize_t* shape, const Py_ssize_t* td,
                     const Py_ssize_t* ts, Py_ssize_t size, Py_ssize_t run, Py_ssize_t b0,
                     Py_ssize_t b1) noexcept nogil:
    """As copy_blocks, accumulating (strictly in C order, so overlaps sum exactly serially; a
    run's elements are distinct, so it may add them as one vector)."""
    cdef Py_ssize_t idx[MAX_DIMS]
    cdef Py_ssize_t pd = start_odometer(b0, t, shape, sd, idx)
    cdef Py_ssize_t ps = unravel_offset(b0, t, shape, ss), b, q, j
    cdef value_t* d
    cdef const value_t* s
    for b in range(b0, b1):
        d = dst + pd
        s = src + ps
        if run == 1:
            for q in range(size):
                d[td[q]] = combine(d[td[q]], s[ts[q]])
        else:
            for q in range(size):
                for j in range(run):
                    d[td[q] + j] = combine(d[td[q] + j], s[ts[q] + j])
        carry(idx, t - 1, shape, sd, ss, &pd, &ps)


cdef void copy_tiles(move_t* dst, const Py_ssize_t* sd, const move_t* src, const Py_ssize_t* ss,
                     int nd, const Py_ssize_t* shape, int k, bint parallel) noexcept nogil:
    """Blocked transpose: axes k and nd-1 are walked in small square tiles, so the side that is
    contiguous along k reuses each cache line it loads instead of touching one per element."""
    cdef Py_ssize_t oshape[MAX_DIMS]
    cdef Py_ssize_t osd[MAX_DIMS]
    cdef Py_ssize_t oss[MAX_DIMS]
    cdef int no = 0, d, last = nd - 1
    cdef Py_ssize_t B = TILE if sizeof(move_t) > 1 else 4 * TILE   # bytes: a full line too
    cdef Py_ssize_t nk = shape[k], nl = shape[last], tk = (nk + B - 1) // B, tl = (nl + B - 1) // B
    cdef Py_ssize_t per_outer = tk * tl, outer, w
    for d in range(nd):
        if d != k and d != last:
            oshape[no] = shape[d]; osd[no] = sd[d]; oss[no] = ss[d]
            no += 1
    outer = shape_size(no, oshape)
    if parallel:
        for w in prange(outer * per_outer, schedule="dynamic", chunksize=16):
            copy_tile(dst, src, w, per_outer, tl, B, no, oshape, osd, oss, nk, nl,
                      sd[k], ss[k], sd[last], ss[last])
    else:
        for w in range(outer * per_outer):
            copy_tile(dst, src, w, per_outer, tl, B, no, oshape, osd, oss, nk, nl,
                      sd[k], ss[k], sd[last], ss[last])


cdef inline void copy_tile(move_t* dst, const move_t* src, Py_ssize_t w, Py_ssize_t per_outer,
                           Py_ssize_t tl, Py_ssize_t B, int no, const Py_ssize_t* oshape,
                           const Py_ssize_t* osd, const Py_ssize_t* oss, Py_ssize_t nk,
                           Py_ssize_t nl, Py_ssize_t dk, Py_ssize_t sk, Py_ssize_t dl,
                           Py_ssize_t sl) noexcept nogil:
    """Tile number w: outer position w // per_outer, then tile row and column."""
    cdef Py_ssize_t p = w // per_outer, t = w % per_outer
    cdef Py_ssize_t k0 = (t // tl) * B, l0 = (t % tl) * B
    cdef Py_ssize_t k1 = min(k0 + B, nk), l1 = min(l0 + B, nl), i, j
    cdef move_t* d = dst + unravel_offset(p, no, oshape, osd)
    cdef const move_t* s = src + unravel_offset(p, no, oshape, oss)
    if B == TILE and ((sl == 1 and dk == 1) or (sk == 1 and dl == 1)):
        transpose_tile(d + k0 * dk + l0 * dl, s + k0 * sk + l0 * sl, dk, sk, dl, sl, k1 - k0,
                       l1 - l0)
        return
    for i in range(k0, k1):
        for j in range(l0, l1):
            d[i * dk + j * dl] = s[i * sk + j * sl]


cdef inline void transpose_tile(move_t* d, const move_t* s, Py_ssize_t dk, Py_ssize_t sk,
                                Py_ssize_t dl, Py_ssize_t sl, Py_ssize_t kn,
                                Py_ssize_t ln) noexcept nogil:
    """A kn x ln tile (at most TILE x TILE) whose source is contiguous along one axis and
    destination along the other (NCHW <-> NHWC): read in source rows into a local tile, written
    out in destination rows, both with unit strides the loops know (1.8x the strided element
    loop on full tiles: the NCHW -> NHWC copy of a (32, 32, 8, 8) array, measured)."""
    cdef move_t tile[TILE * TILE]
    cdef Py_ssize_t i, j
    if move_t is uint32_t and kn == TILE and ln == TILE:
        # full tiles of 32-bit words (float32: NCHW <-> NHWC copies) as 8 x 8 register
        # transposes, straight from source to destination
        for i in range(0, TILE, 8):
            for j in range(0, TILE, 8):
                if sl == 1:
                    transpose8_32(s + i * sk + j, sk, d + i + j * dl, dl)
                else:
                    transpose8_32(s + i + j * sl, sl, d + i * dk + j, dk)
        return
    if sl == 1:         # and dk == 1: s rows run along l, d rows along k
        for i in range(kn):
            for j in range(ln):
                tile[i * TILE + j] = s[i * sk + j]
        for j in range(ln):
            for i in range(kn):
                d[i + j * dl] = tile[i * TILE + j]
    else:               # sk == 1, dl == 1: s rows run along k, d rows along l
        for j in range(ln):
            for i in range(kn):
                tile[j * TILE + i] = s[i + j * sl]
        for i in range(kn):
            for j in range(ln):
                d[i * dk + j] = tile[j * TILE + i]


cdef int tile_axis(int nd, const Py_ssize_t* shape, const Py_ssize_t* sd,
                   const Py_ssize_t* ss) noexcept nogil:
    """When the innermost axis is contiguous on one side only, the axis (other than the last)
    where the other side is most nearly contiguous; -1 when tiling would not help."""
    cdef int d, best = -1, last = nd - 1
    cdef const Py_ssize_t* other
    if nd < 2 or shape[last] < 4:
        return -1
    if sd[last] == 1 and absval(ss[last]) > 1:
        other = ss
    elif ss[last] == 1 and absval(sd[last]) > 1:
        other = sd
    else:
        return -1
    for d in range(last):
        if other[d] != 0 and shape[d] >= 4 and absval(other[d]) < absval(other[last]):
            if best < 0 or absval(other[d]) < absval(other[best]):
                best = d
    return best


# ---------------------------------------------------------------------------------------------
# drivers: pick serial, parallel linear chunks, or parallel disjoint slices

cdef int chunk_count(Py_ssize_t size) noexcept nogil:
    if size < PARALLEL_MIN_ELEMENTS:
        return 1
    return omp_get_max_threads() * CHUNKS_PER_THREAD


cdef void lengthen_rows(int nd, Py_ssize_t* shape, Py_ssize_t* view, Py_ssize_t* packed,
                        int first) noexcept nogil:
    """Short innermost rows (an im2col view's 3-wide kernel rows, a broadcast last axis) cost
    an odometer step per few elements. Walk a longer axis innermost instead, when it is no
    less contiguous in the view and the packed side's accesses stay within a cache-sized
    window. Only for walks whose order does not matter (injective writes, or sums); axes
    before `first` stay in place."""
    cdef int e, best = -1, last = nd - 1
    cdef Py_ssize_t n, v, p
    if nd < 2 or shape[last] >= SHORT_ROW:
        return
    n = shape[last]
    for e in range(first, last):
        if (shape[e] >= 2 * n and absval(view[e]) <= max(absval(view[last]), 1)
                and absval(packed[e]) * shape[e] <= ROW_WINDOW
                and (best < 0 or shape[e] > shape[best])):
            best = e
    if best < 0:
        return
    n, v, p = shape[best], view[best], packed[best]
    for e in range(best, last):
        shape[e] = shape[e + 1]; view[e] = view[e + 1]; packed[e] = packed[e + 1]
    shape[last] = n; view[last] = v; packed[last] = p


cdef int plan(int nd, Py_ssize_t* shape, Py_ssize_t* sd, Py_ssize_t* ss, Py_ssize_t size,
              bint injective, int* chunks, Py_ssize_t* unit) noexcept nogil:
    """Decide how a walk writing through strides `sd` may split across threads: anywhere when
    no two indices write one element (unit 1); else at whole slices of an axis whose slices
    are disjoint, moved to the front (unit = slice size); else not at all (one chunk)."""
    cdef int k
    unit[0] = 1
    if chunks[0] > 1 and not injective:
        k = disjoint_axis(nd, shape, sd)
        if k < 0:
            chunks[0] = 1
        else:
            move_axis_first(nd, k, shape, sd, ss)
            unit[0] = size // shape[0]
    return 0


cdef int prepare_blocks(int nd, Py_ssize_t* shape, Py_ssize_t* sd, Py_ssize_t* ss,
                        Py_ssize_t* view, Py_ssize_t* packed, bint reorder, Py_ssize_t unit,
                        Py_ssize_t* td, Py_ssize_t* ts, Py_ssize_t* block,
                        Py_ssize_t* run) noexcept nogil:
    """Short rows: offset tables for a block of inner axes (returns its first axis; `block`
    elements, table entries of `run` elements each), or, when the walk order is free, a longer
    row moved innermost (returns -1, block 1). Rows contiguous on both sides (an im2col
    window's kw·C values of a channels-last image) are table entries whole, copied as runs:
    conv(3→32, 5x5, stride 2)'s rows of 15 floats, element by element, moved 5 GB/s."""
    cdef int t = block_axis(nd, shape)
    block[0] = run[0] = 1
    if t >= 0 and sd[nd - 1] == 1 and ss[nd - 1] == 1:
        run[0] = shape[nd - 1]
        block[0] = fill_table(nd - 1, shape, t, sd, td) * run[0]
        fill_table(nd - 1, shape, t, ss, ts)
    elif t >= 0:
        block[0] = fill_table(nd, shape, t, sd, td)
        fill_table(nd, shape, t, ss, ts)
    elif reorder:
        lengthen_rows(nd, shape, view, packed, 1 if unit > 1 else 0)
    return t


cdef void copy_driver(move_t* dst, Py_ssize_t* sd, const move_t* src, Py_ssize_t* ss, int nd,
                      Py_ssize_t* shape, Py_ssize_t size, bint dst_injective,
                      bint view_is_dst) noexcept nogil:
    """copy over the whole view: tiles for transposes; otherwise rows or offset-table blocks,
    split across threads as `plan` allows. Overlapping writes keep C order (last one wins)."""
    cdef Py_ssize_t td[TABLE_MAX]
    cdef Py_ssize_t ts[TABLE_MAX]
    cdef int chunks = chunk_count(size), c, t
    cdef Py_ssize_t unit, block, run, total, units
    if dst_injective:
        t = tile_axis(nd, shape, sd, ss)
        if t >= 0:
            copy_tiles(dst, sd, src, ss, nd, shape, t, chunks > 1)
            return
    plan(nd, shape, sd, ss, size, dst_injective, &chunks, &unit)
    if view_is_dst:
        t = prepare_blocks(nd, shape, sd, ss, sd, ss, dst_injective, unit, td, ts, &block,
                           &run)
    else:
        t = prepare_blocks(nd, shape, sd, ss, ss, sd, dst_injective, unit, td, ts, &block,
                           &run)
    total = size // block
    unit = max(1, unit // block)    # a slice of axis 0 holds whole blocks (t >= 1)
    units = total // unit
    chunks = <int>min(<Py_ssize_t>chunks, units)
    if chunks > 1:
        for c in prange(chunks, schedule="dynamic"):
            copy_part(dst, sd, src, ss, nd, shape, t, td, ts, block, run,
                      units * c // chunks * unit, units * (c + 1) // chunks * unit)
    else:
        copy_part(dst, sd, src, ss, nd, shape, t, td, ts, block, run, 0, total)


cdef inline void copy_part(move_t* dst, const Py_ssize_t* sd, const move_t* src,
                           const Py_ssize_t* ss, int nd, const Py_ssize_t* shape, int t,
                           const Py_ssize_t* td, const Py_ssize_t* ts, Py_ssize_t block,
                           Py_ssize_t run, Py_ssize_t start, Py_ssize_t stop) noexcept nogil:
    """Work items [start, stop): blocks when there is a block table (t >= 0), else elements."""
    if t >= 0:
        copy_blocks(dst, sd, src, ss, t, shape, td, ts, block // run, run, start, stop)
    else:
        copy_range(dst, sd, src, ss, nd, shape, start, stop)


cdef void add_driver(value_t* dst, Py_ssize_t* sd, const value_t* src, Py_ssize_t* ss, int nd,
                     Py_ssize_t* shape, Py_ssize_t size) noexcept nogil:
    """Accumulate over the whole view, split across threads only where `plan` proves no two
    threads touch one element. The walk order is fixed per call (deterministic); a reordered
    row may add overlapping contributions in another order than plain C order."""
    cdef Py_ssize_t td[TABLE_MAX]
    cdef Py_ssize_t ts[TABLE_MAX]
    cdef int chunks = chunk_count(size), c, t
    cdef Py_ssize_t unit, block, run, total, units
    plan(nd, shape, sd, ss, size, chunks > 1 and is_injective(nd, shape, sd), &chunks, &unit)
    t = prepare_blocks(nd, shape, sd, ss, sd, ss, True, unit, td, ts, &block, &run)
    total = size // block
    unit = max(1, unit // block)
    units = total // unit
    chunks = <int>min(<Py_ssize_t>chunks, units)
    if chunks > 1:
        for c in prange(chunks, schedule="dynamic"):
            add_part(dst, sd, src, ss, nd, shape, t, td, ts, block, run,
                     units * c // chunks * unit, units * (c + 1) // chunks * unit)
    else:
        add_part(dst, sd, src, ss, nd, shape, t, td, ts, block, run, 0, total)


cdef inline void add_part(value_t* dst, const Py_ssize_t* sd, const value_t* src,
                          const Py_ssize_t* ss, int nd, const Py_ssize_t* shape, int t,
                          const Py_ssize_t* td, const Py_ssize_t* ts, Py_ssize_t block,
                          Py_ssize_t run, Py_ssize_t start, Py_ssize_t stop) noexcept nogil:
    if t >= 0:
        add_blocks(dst, sd, src, ss, t, shape, td, ts, block // run, run, start, stop)
    else:
        add_range(dst, sd, src, ss, nd, shape, start, stop)


cdef int move_dispatch(cnp.ndarray dst, Py_ssize_t dst_start, Py_ssize_t* sd, cnp.ndarray src,
                       Py_ssize_t src_start, Py_ssize_t* ss, int nd, Py_ssize_t* shape,
                       Py_ssize_t size, bint dst_injective, bint view_is_dst) except -1:
    """Call copy_driver with the element width of the buffers (1, 2, 4 or 8 bytes)."""
    cdef Py_ssize_t width = cnp.PyArray_ITEMSIZE(dst)
    cdef char* d = <char*>cnp.PyArray_DATA(dst) + dst_start * width
    cdef char* s = <char*>cnp.PyArray_DATA(src) + src_start * width
    if width == 4:
        with nogil:
            copy_driver(<uint32_t*>d, sd, <uint32_t*>s, ss, nd, shape, size, dst_injective,
                        view_is_dst)
    elif width == 8:
        with nogil:
            copy_driver(<uint64_t*>d, sd, <uint64_t*>s, ss, nd, shape, size, dst_injective,
                        view_is_dst)
    elif width == 2:
        with nogil:
            copy_driver(<uint16_t*>d, sd, <uint16_t*>s, ss, nd, shape, size, dst_injective,
                        view_is_dst)
    elif width == 1:
        with nogil:
            copy_driver(<uint8_t*>d, sd, <uint8_t*>s, ss, nd, shape, size, dst_injective,
                        view_is_dst)
    else:
        raise TypeError(f"unsupported dtype {(<object>dst).dtype}: elements of 1, 2, 4 or 8 "
                        "bytes")
    return 0


# ---------------------------------------------------------------------------------------------
# the kernels

cdef object _complex_pairs():
    """complex_pairs.py, which runs a complex buffer through these kernels as its float pairs
    (imported when first needed: it imports nothing from here)."""
    from minitorch._cpu import complex_pairs
    return complex_pairs


def compact(cnp.ndarray a, cnp.ndarray out, shape, strides, Py_ssize_t offset):
    """out[i] = a[offset + Σ idx_d·strides_d] for the i-th index of `shape` in C order."""
    cdef Py_ssize_t c_shape[MAX_DIMS]
    cdef Py_ssize_t sv[MAX_DIMS]
    cdef Py_ssize_t sc[MAX_DIMS]
    cdef Py_ssize_t* pair[2]
    cdef int nd
    cdef Py_ssize_t size
    if cnp.PyArray_ISCOMPLEX(a):            # complex: the same copy of the (re, im) floats
        return _complex_pairs().compact(compact, a, out, shape, strides, offset)
    nd = load_dims(shape, strides, c_shape, sv)
    check_buffer(a, "a", False)
    check_buffer(out, "out", True)
    check_same_dtype(a, out, "a", "out")
    check_view(nd, c_shape, sv, offset, cnp.PyArray_DIM(a, 0), "a")
    size = shape_size(nd, c_shape)
    check_length(out, size, "out")
    if size == 0:
        return
    c_strides(nd, c_shape, sc)
    pair[0] = sc; pair[1] = sv
    nd = collapse_dims(nd, c_shape, pair, 2)
    if nd == 0:                     # one element (0-d, or all axes of size 1)
        nd = 1; c_shape[0] = 1; sc[0] = 1; sv[0] = 1
    move_dispatch(out, 0, sc, a, offset, sv, nd, c_shape, size, True, False)


cdef void memory_order(int nd, Py_ssize_t* shape, Py_ssize_t* strides) noexcept nogil:
    """Reorder the axes of a view by decreasing |stride| (insertion sort: nd <= MAX_DIMS)."""
    cdef int i, j
    cdef Py_ssize_t n, st
    for i in range(1, nd):
        n = shape[i]
        st = strides[i]
        j = i - 1
        while j >= 0 and absval(strides[j]) < absval(st):
            shape[j + 1] = shape[j]
            strides[j + 1] = strides[j]
            j -= 1
        shape[j + 1] = n
        strides[j + 1] = st


def strided_set(cnp.ndarray src, cnp.ndarray out, shape, strides, Py_ssize_t offset):
    """out[offset + Σ idx_d·strides_d] = src[i] (src may hold one element: a fill). Where the
    view overlaps itself, the last write in C order wins."""
    cdef Py_ssize_t c_shape[MAX_DIMS]
    cdef Py_ssize_t sv[MAX_DIMS]
    cdef Py_ssize_t sc[MAX_DIMS]
    cdef Py_ssize_t* pair[2]
    cdef int nd, d
    cdef Py_ssize_t size
    if cnp.PyArray_ISCOMPLEX(out):
        return _complex_pairs().strided_write(strided_set, src, out, shape, strides, offset)
    nd = load_dims(shape, strides, c_shape, sv)
    check_buffer(src, "src", False)
    check_buffer(out, "out", True)
    check_same_dtype(src, out, "src", "out")
    check_view(nd, c_shape, sv, offset, cnp.PyArray_DIM(out, 0), "out")
    size = shape_size(nd, c_shape)
    if size == 0:
        return
    if cnp.PyArray_DIM(src, 0) == 1:
        for d in range(nd):         # broadcast the single element: every source stride is 0
            sc[d] = 0
        # every write stores the same value, so any order will do: memory order, whose inner
        # rows are contiguous (a channels-last buffer's padding border, viewed NCHW, has rows
        # of W values C apart otherwise)
        memory_order(nd, c_shape, sv)
    else:
        check_length(src, size, "src")
        c_strides(nd, c_shape, sc)
    pair[0] = sv; pair[1] = sc
    nd = collapse_dims(nd, c_shape, pair, 2)
    if nd == 0:
        nd = 1; c_shape[0] = 1; sc[0] = 1; sv[0] = 1
    move_dispatch(out, offset, sv, src, 0, sc, nd, c_shape, size, is_injective(nd, c_shape, sv),
                  True)


def strided_add(cnp.ndarray src, cnp.ndarray out, shape, strides, Py_ssize_t offset):
    """out[offset + Σ idx_d·strides_d] += src[i]: the adjoint of compact, exact when the view
    overlaps itself (col2im). For bool (uint8) buffers the addition is a logical or."""
    cdef Py_ssize_t c_shape[MAX_DIMS]
    cdef Py_ssize_t sv[MAX_DIMS]
    cdef Py_ssize_t sc[MAX_DIMS]
    cdef Py_ssize_t* pair[2]
    cdef int nd, code
    cdef Py_ssize_t size
    cdef void* d
    cdef void* s
    if cnp.PyArray_ISCOMPLEX(out):
        return _complex_pairs().strided_write(strided_add, src, out, shape, strides, offset)
    nd = load_dims(shape, strides, c_shape, sv)
    check_buffer(src, "src", False)
    check_buffer(out, "out", True)
    check_same_dtype(src, out, "src", "out")
    code = value_code(out)
    check_view(nd, c_shape, sv, offset, cnp.PyArray_DIM(out, 0), "out")
    size = shape_size(nd, c_shape)
    check_length(src, size, "src")
    if size == 0:
        return
    c_strides(nd, c_shape, sc)
    pair[0] = sv; pair[1] = sc
    nd = collapse_dims(nd, c_shape, pair, 2)
    if nd == 0:
        nd = 1; c_shape[0] = 1; sc[0] = 1; sv[0] = 1
    d = cnp.PyArray_DATA(out)
    s = cnp.PyArray_DATA(src)
    with nogil:
        if code == 0:
            add_driver(<float*>d + offset, sv, <float*>s, sc, nd, c_shape, size)
        elif code == 1:
            add_driver(<double*>d + offset, sv, <double*>s, sc, nd, c_shape, size)
        elif code == 2:
            add_driver(<int64_t*>d + offset, sv, <int64_t*>s, sc, nd, c_shape, size)
        else:
            add_driver(<uint8_t*>d + offset, sv, <uint8_t*>s, sc, nd, c_shape, size)


# ---------------------------------------------------------------------------------------------
# cast

cdef extern from "half.h" nogil:
    float mt_half_to_float(uint16_t h)
    uint16_t mt_float_to_half(float f)
    float mt_bfloat16_to_float(uint16_t h)
    uint16_t mt_float_to_bfloat16(float f)

ctypedef fused src_t:
    float
    double
    int64_t
    int32_t
    int16_t
    int8_t
    uint8_t

ctypedef fused dst_t:
    float
    double
    int64_t
    int32_t
    int16_t
    int8_t
    uint8_t

cdef enum:
    # cast's codes: the arithmetic storages, the narrow integers, then the 16-bit floats (which
    # are converted through float32 by half.h's functions)
    CODE_F32, CODE_F64, CODE_I64, CODE_U8, CODE_I32, CODE_I16, CODE_I8, CODE_F16, CODE_BF16
    HALF_BLOCK = 512            # 16-bit float elements converted per step through a float block


cdef int cast_code(cnp.ndarray a) except -1:
    """Every storage dtype: value_code's four, int32/16/8, float16 and uint16 (bfloat16 words)."""
    cdef int t = cnp.PyArray_TYPE(a)
    cdef Py_ssize_t size = cnp.PyArray_ITEMSIZE(a)
    if t == cnp.NPY_FLOAT16:
        return CODE_F16
    if t == cnp.NPY_UINT16:
        return CODE_BF16
    if t == cnp.NPY_INT8:
        return CODE_I8
    if t == cnp.NPY_INT16:
        return CODE_I16
    if t == cnp.NPY_INT32 and size == 4:
        return CODE_I32
    return value_code(a)


cdef inline void cast_range(const src_t* a, dst_t* out, Py_ssize_t n,
                            bint to_bool) noexcept nogil:
    """C conversion (float to int truncates toward zero), one loop per kind so each vectorizes.
    A uint8 buffer holds bool or uint8: to bool it is a != 0 (NaN is 1). Narrow integers take
    the value through int64 and keep its low bits (torch's wrap; C leaves a float out of a
    narrow type's range undefined, but not one in int64's)."""
    cdef Py_ssize_t i
    if dst_t is uint8_t:
        if to_bool:
            for i in range(n):
                out[i] = a[i] != 0
        else:
            for i in range(n):
                out[i] = <uint8_t><int64_t>a[i]
    elif dst_t is int32_t or dst_t is int16_t or dst_t is int8_t:
        for i in range(n):
            out[i] = <dst_t><int64_t>a[i]
    else:
        for i in range(n):
            out[i] = <dst_t>a[i]


cdef void cast_loop(const src_t* a, dst_t* out, Py_ssize_t n, bint to_bool) noexcept nogil:
    """cast_range over one contiguous chunk per thread above the parallel threshold."""
    cdef Py_ssize_t chunks = omp_get_max_threads() if n >= PARALLEL_MIN_ELEMENTS else 1
    cdef Py_ssize_t c, lo
    if chunks == 1:
        cast_range(a, out, n, to_bool)
        return
    for c in prange(chunks, schedule="static"):
        lo = n * c // chunks
        cast_range(a + lo, out + lo, n * (c + 1) // chunks - lo, to_bool)


cdef void cast_to(const src_t* a, void* out, int out_code, Py_ssize_t n,
                  bint to_bool) noexcept nogil:
    if out_code == CODE_F32:
        cast_loop(a, <float*>out, n, to_bool)
    elif out_code == CODE_F64:
        cast_loop(a, <double*>out, n, to_bool)
    elif out_code == CODE_I64:
        cast_loop(a, <int64_t*>out, n, to_bool)
    elif out_code == CODE_I32:
        cast_loop(a, <int32_t*>out, n, to_bool)
    elif out_code == CODE_I16:
        cast_loop(a, <int16_t*>out, n, to_bool)
    elif out_code == CODE_I8:
        cast_loop(a, <int8_t*>out, n, to_bool)
    else:
        cast_loop(a, <uint8_t*>out, n, to_bool)


cdef void cast_from(const void* a, int code, void* out, int out_code, Py_ssize_t n,
                    bint to_bool) noexcept nogil:
    """cast_to for a source of any non-16-bit code."""
    if code == CODE_F32:
        cast_to(<const float*>a, out, out_code, n, to_bool)
    elif code == CODE_F64:
        cast_to(<const double*>a, out, out_code, n, to_bool)
    elif code == CODE_I64:
        cast_to(<const int64_t*>a, out, out_code, n, to_bool)
    elif code == CODE_I32:
        cast_to(<const int32_t*>a, out, out_code, n, to_bool)
    elif code == CODE_I16:
        cast_to(<const int16_t*>a, out, out_code, n, to_bool)
    elif code == CODE_I8:
        cast_to(<const int8_t*>a, out, out_code, n, to_bool)
    else:
        cast_to(<const uint8_t*>a, out, out_code, n, to_bool)


cdef void cast_16bit(const char* a, int code, char* out, int out_code, Py_ssize_t n,
                     bint to_bool) noexcept nogil:
    """A cast with a float16 or bfloat16 side, through float32 (as torch converts them: a double
    rounds to float first), HALF_BLOCK elements at a time in a stack buffer."""
    cdef float block[HALF_BLOCK]
    cdef Py_ssize_t start = 0, m, i
    cdef const uint16_t* h
    cdef uint16_t* o
    cdef Py_ssize_t in_size = 2 if code >= CODE_F16 else elem_size(code)
    cdef Py_ssize_t out_size = 2 if out_code >= CODE_F16 else elem_size(out_code)
    while start < n:
        m = min(<Py_ssize_t>HALF_BLOCK, n - start)
        if code == CODE_F16 or code == CODE_BF16:
            h = <const uint16_t*>(a + start * 2)
            for i in range(m):
                block[i] = mt_half_to_float(h[i]) if code == CODE_F16 else \
                    mt_bfloat16_to_float(h[i])
        else:
            cast_from(a + start * in_size, code, block, CODE_F32, m, to_bool)
        if out_code == CODE_F16 or out_code == CODE_BF16:
            o = <uint16_t*>(out + start * 2)
            for i in range(m):
                o[i] = mt_float_to_half(block[i]) if out_code == CODE_F16 else \
                    mt_float_to_bfloat16(block[i])
        else:
            cast_to(<const float*>block, out + start * out_size, out_code, m, to_bool)
        start += m


cdef inline Py_ssize_t elem_size(int code) noexcept nogil:
    if code == CODE_F64 or code == CODE_I64:
        return 8
    if code == CODE_F32 or code == CODE_I32:
        return 4
    if code == CODE_I16 or code >= CODE_F16:
        return 2
    return 1


def cast(cnp.ndarray a, cnp.ndarray out, bint to_bool=True):
    """out[i] = a[i] converted to out's dtype. A uint8 `out` is bool (a[i] != 0) when
    `to_bool`, else uint8 (the value modulo 256, through int64): the buffer can't say which.
    float16 buffers are numpy float16, bfloat16 buffers uint16 words."""
    cdef int ac, oc
    cdef Py_ssize_t n
    cdef void* src
    cdef void* dst
    if cnp.PyArray_ISCOMPLEX(a) or cnp.PyArray_ISCOMPLEX(out):
        return _complex_pairs().cast(cast, a, out)
    check_buffer(a, "a", False)
    check_buffer(out, "out", True)
    ac = cast_code(a)
    oc = cast_code(out)
    n = cnp.PyArray_DIM(a, 0)
    if cnp.PyArray_DIM(out, 0) != n:
        raise ValueError(f"cast needs buffers of one length, got {n} and "
                         f"{cnp.PyArray_DIM(out, 0)}")
    src = cnp.PyArray_DATA(a)
    dst = cnp.PyArray_DATA(out)
    with nogil:
        if ac >= CODE_F16 or oc >= CODE_F16:
            cast_16bit(<const char*>src, ac, <char*>dst, oc, n, to_bool)
        else:
            cast_from(src, ac, dst, oc, n, to_bool)


# ---------------------------------------------------------------------------------------------
# join: many sources into their slots of one output (stack / cat / collate) in one call

cdef int load_piece(object shape, object strides, object out_strides, Py_ssize_t* c_shape,
                    Py_ssize_t* sv, Py_ssize_t* sd) except -1:
    """One source's shape and strides, and the output strides over the same shape."""
    cdef int nd = load_dims(shape, strides, c_shape, sv)
    load_dims(shape, out_strides, c_shape, sd)
    return nd


cdef struct Piece:
    char* dst
    char* src
    int nd
    bint injective
    Py_ssize_t size
    Py_ssize_t shape[MAX_DIMS]
    Py_ssize_t sd[MAX_DIMS]
    Py_ssize_t sv[MAX_DIMS]


cdef void copy_pieces(Piece* pieces, Py_ssize_t n, Py_ssize_t width) noexcept nogil:
    cdef Py_ssize_t i
    cdef Piece* p
    for i in range(n):
        p = pieces + i
        if p.size == 0:
            continue
        if p.nd == 1 and p.sd[0] == 1 and p.sv[0] == 1:    # a contiguous piece: no walk to plan
            memcpy(p.dst, p.src, p.size * width)
        elif width == 4:
            copy_driver(<uint32_t*>p.dst, p.sd, <uint32_t*>p.src, p.sv, p.nd, p.shape, p.size,
                        p.injective, True)
        elif width == 8:
            copy_driver(<uint64_t*>p.dst, p.sd, <uint64_t*>p.src, p.sv, p.nd, p.shape, p.size,
                        p.injective, True)
        elif width == 2:
            copy_driver(<uint16_t*>p.dst, p.sd, <uint16_t*>p.src, p.sv, p.nd, p.shape, p.size,
                        p.injective, True)
        else:
            copy_driver(<uint8_t*>p.dst, p.sd, <uint8_t*>p.src, p.sv, p.nd, p.shape, p.size,
                        p.injective, True)


def join(sources, cnp.ndarray out, shapes, strides, offsets, out_strides, out_offsets):
    """For each source i: out[out_offsets[i] + Σ idx_d·out_strides_d] =
    sources[i][offsets[i] + Σ idx_d·strides[i]_d] over the indices of shapes[i]. Every piece is
    checked before anything is written; where slots overlap, later sources win. The copies run
    in one GIL-free loop (stack/cat of many small tensors pay per piece only the walk)."""
    cdef Py_ssize_t n = len(sources), i, width, offset, out_offset
    cdef cnp.ndarray src
    cdef Py_ssize_t* pair[2]
    cdef Piece* pieces
    cdef Piece* p
    if cnp.PyArray_ISCOMPLEX(out):
        return _complex_pairs().join(join, sources, out, shapes, strides, offsets, out_strides,
                                     out_offsets)
    check_buffer(out, "out", True)
    if len(shapes) != n or len(strides) != n or len(offsets) != n or len(out_offsets) != n:
        raise ValueError(f"join: {n} sources but {len(shapes)} shapes, {len(strides)} strides, "
                         f"{len(offsets)} offsets and {len(out_offsets)} out_offsets")
    width = cnp.PyArray_ITEMSIZE(out)
    if width != 1 and width != 2 and width != 4 and width != 8:
        raise TypeError(f"unsupported dtype {(<object>out).dtype}: elements of 1, 2, 4 or 8 "
                        "bytes")
    pieces = <Piece*>PyMem_Malloc(max(n, 1) * sizeof(Piece))
    if pieces == NULL:
        raise MemoryError()
    try:
        for i in range(n):
            p = pieces + i
            src = sources[i]
            offset, out_offset = offsets[i], out_offsets[i]
            check_buffer(src, "source", False)
            check_same_dtype(src, out, "source", "out")
            p.nd = load_piece(shapes[i], strides[i], out_strides, p.shape, p.sv, p.sd)
            check_view(p.nd, p.shape, p.sv, offset, cnp.PyArray_DIM(src, 0), "source")
            check_view(p.nd, p.shape, p.sd, out_offset, cnp.PyArray_DIM(out, 0), "out")
            p.size = shape_size(p.nd, p.shape)
            p.src = <char*>cnp.PyArray_DATA(src) + offset * width
            p.dst = <char*>cnp.PyArray_DATA(out) + out_offset * width
            if p.size == 0:
                continue
            pair[0] = p.sd; pair[1] = p.sv
            p.nd = collapse_dims(p.nd, p.shape, pair, 2)
            if p.nd == 0:
                p.nd = 1; p.shape[0] = 1; p.sd[0] = 1; p.sv[0] = 1
            p.injective = is_injective(p.nd, p.shape, p.sd)
        with nogil:
            copy_pieces(pieces, n, width)
    finally:
        PyMem_Free(pieces)
