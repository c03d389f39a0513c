# cython: cdivision=True
"""Fused normalisation rows (layer_norm, group_norm, instance_norm, rms_norm), forward and
backward, one pass per row each instead of a dozen kernels (the CUDA twins are
minitorch/_gpu/kernels/norm.cu).

Layout shared by every kernel: x is compact (rows, n); row r uses parameter block r % groups
of the (groups, n // inner) weight and bias, element j of a row the parameter j // inner of its
block. Layer norm: groups = inner = 1 (a weight per element); group norm: groups = G,
inner = H·W (a weight per channel); instance norm: groups = C, inner = n = H·W.

Segmented rows (segments > 1, one parameter per row: inner = n): x is compact (segments,
rows, n // segments), row r made of the pieces x[i, r, :]. Batch norm's channel rows of an
NCHW (N, C, S) input are its segments = N pieces, read in place (no gathering copy each way).
"""
cimport numpy as cnp
import numpy as np
from cython.parallel cimport prange
from libc.math cimport sqrt

from minitorch._cpu.common cimport buffer_dtype, DT_F32, DT_F64, threads_for
from minitorch._cpu.vector_math cimport real

cnp.import_array()

DTYPE_NAMES = ("float32", "float64", "int64", "bool")

cdef enum:
    LANES = 16      # independent double accumulators across a row (gcc vectorizes them)


cdef struct RowShape:
    Py_ssize_t n, inner, groups, channels       # channels = n // inner parameters per block
    Py_ssize_t segments, piece, piece_stride    # row r: segments pieces of `piece` values,
                                                # at r·piece + i·piece_stride
    Py_ssize_t span                             # a channel's values in one piece: inner //
                                                # segments (inner unless segmented)
    double eps
    bint rms                                    # rms_norm: no centering (mean is 0)


# ---- row sums in double, LANES at a time (float32 rows too: exact enough at any length) ----
cdef double lane_fold(double* acc) noexcept nogil:
    cdef int j
    for j in range(8):
        acc[j] = acc[j] + acc[j + 8]
    for j in range(4):
        acc[j] = acc[j] + acc[j + 4]
    return (acc[0] + acc[2]) + (acc[1] + acc[3])


cdef inline void zero_lanes(double* acc) noexcept nogil:
    cdef int j
    for j in range(LANES):
        acc[j] = 0


cdef inline void add_sum(double* acc, const real* x, Py_ssize_t n) noexcept nogil:
    """acc (LANES partials) += the values of x: every piece of a row adds into one acc, folded
    once (a fold per 16-value piece of a segmented row cost more than its sums)."""
    cdef Py_ssize_t i, j, full = n - n % LANES
    for i in range(0, full, 16):     # 16 = LANES (a literal step)
        for j in range(LANES):
            acc[j] = acc[j] + <double>x[i + j]
    for i in range(full, n):
        acc[0] = acc[0] + <double>x[i]


cdef inline void add_sq_dev(double* acc, const real* x, Py_ssize_t n, double mean) noexcept nogil:
    """acc += (x - mean)²: the second pass of a two-pass variance."""
    cdef double d
    cdef Py_ssize_t i, j, full = n - n % LANES
    for i in range(0, full, 16):     # 16 = LANES (a literal step)
        for j in range(LANES):
            d = <double>x[i + j] - mean
            acc[j] = acc[j] + d * d
    for i in range(full, n):
        d = <double>x[i] - mean
        acc[0] = acc[0] + d * d


cdef inline void add_grad_sums(double* a1, double* a2, const real* g, const real* x, const real* w,
                        Py_ssize_t n, double mean) noexcept nogil:
    """a1 += g·w, a2 += g·w·(x - mean) in one pass (w NULL: 1), g·w rounded to real first
    as a separate product would be."""
    cdef real gw
    cdef Py_ssize_t i, j, full = n - n % LANES
    if w != NULL:
        for i in range(0, full, 16):     # 16 = LANES (a literal step)
            for j in range(LANES):
                gw = g[i + j] * w[i + j]
                a1[j] = a1[j] + gw
                a2[j] = a2[j] + gw * (<double>x[i + j] - mean)
        for i in range(full, n):
            gw = g[i] * w[i]
            a1[0] = a1[0] + gw
            a2[0] = a2[0] + gw * (<double>x[i] - mean)
    else:
        for i in range(0, full, 16):
            for j in range(LANES):
                a1[j] = a1[j] + g[i + j]
                a2[j] = a2[j] + g[i + j] * (<double>x[i + j] - mean)
        for i in range(full, n):
            a1[0] = a1[0] + g[i]
            a2[0] = a2[0] + g[i] * (<double>x[i] - mean)


cdef void row_grad_sums(const real* g, const real* x, const real* w, Py_ssize_t n, double mean,
                        double* s1, double* s2) noexcept nogil:
    """s1 = Σ g·w, s2 = Σ g·w·(x - mean) (w NULL: 1)."""
    cdef double a1[LANES]
    cdef double a2[LANES]
    zero_lanes(a1)
    zero_lanes(a2)
    add_grad_sums(a1, a2, g, x, w, n, mean)
    s1[0] = lane_fold(a1)
    s2[0] = lane_fold(a2)


cdef void add_param_grads(const real* g, const real* x, const real* w, Py_ssize_t n,
                          double mean, double rstd, double* pw, double* pb, double* s1,
                          double* s2) noexcept nogil:
    """pw += g·(x - mean)·rstd, pb += g element by element (a parameter per element), and in
    the same pass row_grad_sums' s1, s2 (w NULL: 1)."""
    cdef double a1[LANES]
    cdef double a2[LANES]
    cdef double gd, d
    cdef real gw
    cdef Py_ssize_t i, j, full = n - n % LANES
    for j in range(LANES):
        a1[j] = 0
        a2[j] = 0
    for i in range(0, full, 16):     # 16 = LANES (a literal step)
        for j in range(LANES):
            gd = g[i + j]
            d = <double>x[i + j] - mean
            pw[i + j] += gd * d * rstd
            pb[i + j] += gd
            gw = g[i + j] * w[i + j] if w != NULL else g[i + j]
            a1[j] = a1[j] + gw
            a2[j] = a2[j] + gw * d
    for i in range(full, n):
        gd = g[i]
        d = <double>x[i] - mean
        pw[i] += gd * d * rstd
        pb[i] += gd
        gw = g[i] * w[i] if w != NULL else g[i]
        a1[0] = a1[0] + gw
        a2[0] = a2[0] + gw * d
    s1[0] = lane_fold(a1)
    s2[0] = lane_fold(a2)


# ---- the sums over a row's pieces (one piece, the row itself, unless segmented) ---------------
cdef double pieces_sum(const real* xr, RowShape s) noexcept nogil:
    cdef double acc[LANES]
    cdef Py_ssize_t i
    zero_lanes(acc)
    for i in range(s.segments):
        add_sum(acc, xr + i * s.piece_stride, s.piece)
    return lane_fold(acc)


cdef double pieces_sq_dev(const real* xr, RowShape s, double mean) noexcept nogil:
    cdef double acc[LANES]
    cdef Py_ssize_t i
    zero_lanes(acc)
    for i in range(s.segments):
        add_sq_dev(acc, xr + i * s.piece_stride, s.piece, mean)
    return lane_fold(acc)


cdef void pieces_grad_sums(const real* gr, const real* xr, RowShape s, double mean, double* s1,
                           double* s2) noexcept nogil:
    """row_grad_sums (w NULL) over one channel's values, s.span in each piece of its row."""
    cdef double a1[LANES]
    cdef double a2[LANES]
    cdef Py_ssize_t i
    zero_lanes(a1)
    zero_lanes(a2)
    for i in range(s.segments):
        add_grad_sums(a1, a2, gr + i * s.piece_stride, xr + i * s.piece_stride, NULL, s.span,
                      mean)
    s1[0] = lane_fold(a1)
    s2[0] = lane_fold(a2)


# ---- forward --------------------------------------------------------------------------------
cdef void forward_rows(const real* x, const real* w, const real* b, real* y, real* mean_out,
                       real* rstd_out, Py_ssize_t r0, Py_ssize_t r1, RowShape s) noexcept nogil:
    """Rows [r0, r1): mean and rstd = 1/sqrt(var + eps) (two passes), then
    y = (x - mean)·rstd·w + b; mean and rstd are saved for the backward."""
    cdef Py_ssize_t r, j, c, k, k0, i, n = s.n, inner = s.inner
    cdef double mean, var, rstd
    cdef real m, rs, scale, shift
    cdef const real* xr
    cdef const real* wr
    cdef const real* br
    cdef real* yr
    for r in range(r0, r1):
        xr = x + r * s.piece
        yr = y + r * s.piece
        mean = 0 if s.rms else pieces_sum(xr, s) / n
        var = pieces_sq_dev(xr, s, mean) / n
        rstd = 1 / sqrt(var + s.eps)
        mean_out[r] = <real>mean
        rstd_out[r] = <real>rstd
        m, rs = <real>mean, <real>rstd
        wr = w + (r % s.groups) * s.channels if w != NULL else NULL
        br = b + (r % s.groups) * s.channels if b != NULL else NULL
        if inner == 1 and wr != NULL and br != NULL:    # a parameter per element
            for j in range(n):
                yr[j] = (xr[j] - m) * rs * wr[j] + br[j]
        elif inner == 1:    # separate short passes stay vectorized (and branch-free)
            for j in range(n):
                yr[j] = (xr[j] - m) * rs
            if wr != NULL:
                for j in range(n):
                    yr[j] = yr[j] * wr[j]
            if br != NULL:
                for j in range(n):
                    yr[j] = yr[j] + br[j]
        else:               # a parameter per channel of `inner` elements, span per piece
            for c in range(s.channels):
                scale = rs * wr[c] if wr != NULL else rs
                shift = br[c] if br != NULL else 0
                for i in range(s.segments):
                    k0 = i * s.piece_stride + c * s.span
                    for k in range(k0, k0 + s.span):
                        yr[k] = (xr[k] - m) * scale + shift


cdef void forward_part(int dt, const void* x, const void* w, const void* b, void* y, void* mean,
                       void* rstd, Py_ssize_t r0, Py_ssize_t r1, RowShape s) noexcept nogil:
    if dt == DT_F32:
        forward_rows(<const float*>x, <const float*>w, <const float*>b, <float*>y,
                     <float*>mean, <float*>rstd, r0, r1, s)
    else:
        forward_rows(<const double*>x, <const double*>w, <const double*>b, <double*>y,
                     <double*>mean, <double*>rstd, r0, r1, s)


# ---- backward -------------------------------------------------------------------------------
cdef void backward_rows(const real* g, const real* x, const real* mean_in, const real* rstd_in,
                        const real* w, real* dx, double* pw, double* pb, Py_ssize_t r0,
                        Py_ssize_t r1, RowShape s) noexcept nogil:
    """Rows [r0, r1): dx = rstd·(g·w - mean(g·w) - x̂·mean(g·w·x̂)) (no mean(g·w) term for
    rms), and the weight / bias gradients Σ g·x̂ and Σ g added into this thread's partials
    pw, pb (one per parameter; NULL when not wanted)."""
    cdef Py_ssize_t r, j, c, k, k0, i, n = s.n, inner = s.inner, p0
    cdef double mean, rstd, s1, s2, a, bsum, wc, c1, c2
    cdef real rg, rc1, rc2, rm, gw
    cdef const real* gr
    cdef const real* xr
    cdef const real* wr
    cdef real* dr
    for r in range(r0, r1):
        gr = g + r * s.piece
        xr = x + r * s.piece
        dr = dx + r * s.piece if dx != NULL else NULL
        mean = mean_in[r]
        rstd = rstd_in[r]
        p0 = (r % s.groups) * s.channels
        wr = w + p0 if w != NULL else NULL
        s1 = 0      # Σ g·w
        s2 = 0      # Σ g·w·(x - mean)
        if inner == 1:
            if pw != NULL:
                add_param_grads(gr, xr, wr, n, mean, rstd, pw + p0, pb + p0, &s1, &s2)
            elif dr != NULL:
                row_grad_sums(gr, xr, wr, n, mean, &s1, &s2)
        else:
            for c in range(s.channels):
                pieces_grad_sums(gr + c * s.span, xr + c * s.span, s, mean, &a, &bsum)
                wc = wr[c] if wr != NULL else 1
                s1 += wc * a
                s2 += wc * bsum
                if pw != NULL:
                    pw[p0 + c] += bsum * rstd
                    pb[p0 + c] += a
        if dr == NULL:
            continue
        if s.rms:
            s1 = 0
        # dx = rstd·g·w + c1 + c2·(x - mean)
        c1 = -rstd * s1 / n
        c2 = -rstd * rstd * rstd * s2 / n
        rg, rc1, rc2, rm = <real>rstd, <real>c1, <real>c2, <real>mean
        if inner == 1:
            if wr != NULL:
                for j in range(n):
                    dr[j] = rg * (gr[j] * wr[j]) + rc1 + rc2 * (xr[j] - rm)
            else:
                for j in range(n):
                    dr[j] = rg * gr[j] + rc1 + rc2 * (xr[j] - rm)
        else:
            for c in range(s.channels):
                gw = <real>(rstd * wr[c]) if wr != NULL else rg
                for i in range(s.segments):
                    k0 = i * s.piece_stride + c * s.span
                    for k in range(k0, k0 + s.span):
                        dr[k] = gw * gr[k] + rc1 + rc2 * (xr[k] - rm)


cdef void backward_part(int dt, const void* g, const void* x, const void* mean, const void* rstd,
                        const void* w, void* dx, double* pw, double* pb, Py_ssize_t r0,
                        Py_ssize_t r1, RowShape s) noexcept nogil:
    if dt == DT_F32:
        backward_rows(<const float*>g, <const float*>x, <const float*>mean, <const float*>rstd,
                      <const float*>w, <float*>dx, pw, pb, r0, r1, s)
    else:
        backward_rows(<const double*>g, <const double*>x, <const double*>mean,
                      <const double*>rstd, <const double*>w, <double*>dx, pw, pb, r0, r1, s)


cdef void sum_partials(int dt, const double* parts, int nt, Py_ssize_t count,
                       void* out) noexcept nogil:
    """out[p] = Σ over the nt threads' partials (rows of `count`), rounded to out's type."""
    cdef Py_ssize_t p
    cdef int t
    cdef double total
    for p in range(count):
        total = 0
        for t in range(nt):
            total = total + parts[t * count + p]
        if dt == DT_F32:
            (<float*>out)[p] = <float>total
        else:
            (<double*>out)[p] = total


# ---- checks and entry points ----------------------------------------------------------------
cdef RowShape row_shape(Py_ssize_t size, Py_ssize_t n, Py_ssize_t inner, Py_ssize_t groups,
                        Py_ssize_t segments, double eps, bint rms, str op) except *:
    cdef RowShape s
    if n <= 0 or size % n:
        raise ValueError(f"{op}: {size} elements are not rows of length {n}")
    if inner <= 0 or n % inner:
        raise ValueError(f"{op}: inner {inner} does not divide the row length {n}")
    if groups <= 0 or (size // n) % groups:
        raise ValueError(f"{op}: {size // n} rows are not a multiple of groups = {groups}")
    if segments <= 0 or n % segments or (segments > 1 and inner != n):
        raise ValueError(f"{op}: segments {segments} must divide the row length {n}, and "
                         f"segmented rows take one parameter per row (inner = n)")
    s.n, s.inner, s.groups, s.channels, s.eps, s.rms = n, inner, groups, n // inner, eps, rms
    s.segments, s.piece, s.span = segments, n // segments, inner // segments
    s.piece_stride = size // segments        # rows · piece: from a row's piece to its next
    return s


cdef int check_buffer(cnp.ndarray buf, int dt, Py_ssize_t size, str name, str op,
                      bint writable=False) except -1:
    """A compact buffer of dtype dt with `size` elements."""
    if buffer_dtype(buf, op, writable) != dt:
        raise TypeError(f"{op}: {name} must have the dtype of the input ({DTYPE_NAMES[dt]})")
    if cnp.PyArray_SIZE(buf) != size:
        raise ValueError(f"{op}: {name} has {cnp.PyArray_SIZE(buf)} elements, expected {size}")
    return 0


cdef int float_dtype(cnp.ndarray x, str op) except -1:
    cdef int dt = buffer_dtype(x, op)
    if dt != DT_F32 and dt != DT_F64:
        raise TypeError(f"{op}: unsupported dtype {DTYPE_NAMES[dt]} (float32 or float64 only)")
    return dt


cdef const void* optional_data(cnp.ndarray buf):
    return NULL if buf is None else cnp.PyArray_DATA(buf)


def norm_rows(cnp.ndarray x, cnp.ndarray weight, cnp.ndarray bias, cnp.ndarray y,
              cnp.ndarray mean, cnp.ndarray rstd, Py_ssize_t n, Py_ssize_t inner=1,
              Py_ssize_t groups=1, double eps=1e-5, bint rms=False, Py_ssize_t segments=1):
    """y = (x - mean)·rstd·weight + bias over each length-n row of compact float x, with
    mean, rstd = 1/sqrt(var + eps) (biased variance) written per row; weight and bias (each
    optional: None) have groups·(n // inner) elements, see the module docstring (also for
    segmented rows). rms: mean is 0 (rms_norm). Rows are shared out among threads."""
    cdef int dt = float_dtype(x, "norm_rows")
    cdef Py_ssize_t size = cnp.PyArray_SIZE(x), m, t
    cdef RowShape s = row_shape(size, n, inner, groups, segments, eps, rms, "norm_rows")
    m = size // n
    check_buffer(y, dt, size, "y", "norm_rows", True)
    check_buffer(mean, dt, m, "mean", "norm_rows", True)
    check_buffer(rstd, dt, m, "rstd", "norm_rows", True)
    for name, param in (("weight", weight), ("bias", bias)):
        if param is not None:
            check_buffer(param, dt, groups * s.channels, name, "norm_rows")
    cdef const void* px = cnp.PyArray_DATA(x)
    cdef const void* pw = optional_data(weight)
    cdef const void* pb = optional_data(bias)
    cdef void* py = cnp.PyArray_DATA(y)
    cdef void* pm = cnp.PyArray_DATA(mean)
    cdef void* pr = cnp.PyArray_DATA(rstd)
    cdef int nt = threads_for(size) if m > 1 else 1
    with nogil:
        if nt == 1:
            forward_part(dt, px, pw, pb, py, pm, pr, 0, m, s)
        else:
            for t in prange(nt, num_threads=nt, schedule="static"):
                forward_part(dt, px, pw, pb, py, pm, pr, m * t // nt, m * (t + 1) // nt, s)


def norm_rows_backward(cnp.ndarray g, cnp.ndarray x, cnp.ndarray mean, cnp.ndarray rstd,
                       cnp.ndarray weight, cnp.ndarray grad_input, cnp.ndarray grad_weight,
                       cnp.ndarray grad_bias, Py_ssize_t n, Py_ssize_t inner=1,
                       Py_ssize_t groups=1, bint rms=False, Py_ssize_t segments=1):
    """The gradients of norm_rows from its output gradient g, its input x and the saved mean,
    rstd: grad_input (None: not computed) per row, and grad_weight = Σ g·x̂, grad_bias = Σ g
    (both None, or both given even when only one is wanted) summed over every row and element
    sharing a parameter, from per-thread partials (no atomics)."""
    cdef int dt = float_dtype(x, "norm_rows_backward")
    cdef Py_ssize_t size = cnp.PyArray_SIZE(x), m, t, count
    cdef RowShape s = row_shape(size, n, inner, groups, segments, 0.0, rms,
                                "norm_rows_backward")
    m = size // n
    count = groups * s.channels
    check_buffer(g, dt, size, "g", "norm_rows_backward")
    check_buffer(mean, dt, m, "mean", "norm_rows_backward")
    check_buffer(rstd, dt, m, "rstd", "norm_rows_backward")
    if weight is not None:
        check_buffer(weight, dt, count, "weight", "norm_rows_backward")
    if grad_input is not None:
        check_buffer(grad_input, dt, size, "grad_input", "norm_rows_backward", True)
    if (grad_weight is None) != (grad_bias is None):
        raise ValueError("norm_rows_backward: grad_weight and grad_bias come together")
    if grad_weight is not None:
        check_buffer(grad_weight, dt, count, "grad_weight", "norm_rows_backward", True)
        check_buffer(grad_bias, dt, count, "grad_bias", "norm_rows_backward", True)
    cdef int nt = threads_for(size) if m > 1 else 1
    cdef cnp.ndarray parts_w, parts_b
    cdef double* ppw = NULL
    cdef double* ppb = NULL
    if grad_weight is not None:         # one row of partials per thread
        parts_w = np.zeros(nt * count, np.float64)
        parts_b = np.zeros(nt * count, np.float64)
        ppw = <double*>cnp.PyArray_DATA(parts_w)
        ppb = <double*>cnp.PyArray_DATA(parts_b)
    cdef const void* pg = cnp.PyArray_DATA(g)
    cdef const void* px = cnp.PyArray_DATA(x)
    cdef const void* pm = cnp.PyArray_DATA(mean)
    cdef const void* pr = cnp.PyArray_DATA(rstd)
    cdef const void* pw = optional_data(weight)
    cdef void* pdx = <void*>optional_data(grad_input)
    cdef void* pgw = <void*>optional_data(grad_weight)
    cdef void* pgb = <void*>optional_data(grad_bias)
    with nogil:
        if nt == 1:
            backward_part(dt, pg, px, pm, pr, pw, pdx, ppw, ppb, 0, m, s)
        else:
            for t in prange(nt, num_threads=nt, schedule="static"):
                backward_part(dt, pg, px, pm, pr, pw, pdx,
                              ppw + t * count if ppw != NULL else NULL,
                              ppb + t * count if ppb != NULL else NULL,
                              m * t // nt, m * (t + 1) // nt, s)
        if ppw != NULL:
            sum_partials(dt, ppw, nt, count, pgw)
            sum_partials(dt, ppb, nt, count, pgb)
