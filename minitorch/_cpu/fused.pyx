# cython: cdivision=True
# (C division semantics, also in MINITORCH_DEBUG builds, as the rest of the elementwise kernels)
"""Fused CPU kernels that replace a chain of elementwise passes: softmax / log_softmax rows
(forward and backward), cross-entropy rows (forward and backward) and the Adam update (the CUDA
twins are minitorch/_gpu/kernels/fused.cu).
"""
from libc.stdint cimport int64_t
cimport numpy as cnp
from cython.parallel cimport prange
from libc.math cimport NAN, sqrt

from minitorch._cpu.common cimport buffer_dtype, chunk_start, DT_F32, DT_F64, threads_for
from minitorch._cpu.vector_math cimport r_exp, real, vlog, vlogf

cnp.import_array()

DTYPE_NAMES = ("float32", "float64", "int64", "bool")


# ---------------------------------------------------------------------------------------------
# row reductions in LANES running partials: a single running max or sum is a chain of dependent
# operations (3-4 cycles each) that gcc may not reorder (no -ffast-math), so a 256-wide row cost
# ~2 ns per element; LANES independent partials are one vector operation per LANES elements.
# The partials are then combined as a tree (8 + 8, 4 + 4, 2 + 2, 1 + 1: four vector steps, as
# torch's vectorized reductions end), not one after another: for short rows (a 65-class
# cross-entropy) sixteen dependent scalar steps per row were a third of the kernel.
# ---------------------------------------------------------------------------------------------

cdef enum:
    LANES = 16


cdef inline real lanes_total(real* acc) noexcept nogil:
    """Σ acc[0:LANES] as a tree (acc is overwritten)."""
    cdef Py_ssize_t l
    for l in range(8):
        acc[l] = acc[l] + acc[l + 8]
    for l in range(4):
        acc[l] = acc[l] + acc[l + 4]
    for l in range(2):
        acc[l] = acc[l] + acc[l + 2]
    return acc[0] + acc[1]


cdef inline real lanes_max(real* acc) noexcept nogil:
    """max acc[0:LANES] as a tree (acc is overwritten; NaN is the caller's)."""
    cdef Py_ssize_t l
    for l in range(8):
        acc[l] = acc[l + 8] if acc[l + 8] > acc[l] else acc[l]
    for l in range(4):
        acc[l] = acc[l + 4] if acc[l + 4] > acc[l] else acc[l]
    for l in range(2):
        acc[l] = acc[l + 2] if acc[l + 2] > acc[l] else acc[l]
    return acc[1] if acc[1] > acc[0] else acc[0]


cdef inline real row_max(const real* xr, Py_ssize_t n) noexcept nogil:
    """The row's max, NaN if it holds one (torch's). NaN is tracked apart from the max: a
    select that lets NaN win (v > p | v != v) does not vectorize (gcc branches on it; 3.4 ns
    per element, against 0.2 for these two loops)."""
    cdef real acc[LANES]
    cdef real peak = xr[0], v
    cdef bint nan = False
    cdef Py_ssize_t j, l, full = n - n % LANES
    for l in range(LANES):
        acc[l] = peak
    for j in range(0, full, 16):   # LANES (Cython needs a literal step)
        for l in range(LANES):
            v = xr[j + l]
            acc[l] = v if v > acc[l] else acc[l]
    peak = lanes_max(acc)
    for j in range(full, n):
        peak = xr[j] if xr[j] > peak else peak
    for j in range(n):
        nan = nan | (xr[j] != xr[j])
    return <real>NAN if nan else peak


cdef inline void lane_add(real* acc, const real* v, Py_ssize_t count) noexcept nogil:
    """acc[l] += v[j] for every j ≡ l (mod LANES), j < count (a multiple of LANES)."""
    cdef Py_ssize_t j, l
    for j in range(0, count, 16):   # LANES (Cython needs a literal step)
        for l in range(LANES):
            acc[l] = acc[l] + v[j + l]


cdef inline real lane_sum(const real* v, Py_ssize_t n, real* acc) noexcept nogil:
    """Σ v over the row: LANES partials (acc, initialised by the caller and also fed by earlier
    blocks of the same row), then the tail past the last full group, in order."""
    cdef Py_ssize_t j, full = n - n % LANES
    cdef real total
    lane_add(acc, v, full)
    total = lanes_total(acc)
    for j in range(full, n):
        total = total + v[j]
    return total


cdef enum:
    EXP_BLOCK = 512     # exponentials computed per pass when they are not kept (stack scratch)


cdef inline real exp_sum(const real* xr, real* yr, Py_ssize_t n, real peak) noexcept nogil:
    """Σ exp(x - peak) over the row, each exponential stored in yr, or (yr NULL) only summed,
    in the same order either way. Flat loops: gcc vectorizes r_exp only in a simple loop."""
    cdef real acc[LANES]
    cdef real scratch[EXP_BLOCK]
    cdef Py_ssize_t start = 0, count, j, l
    for l in range(LANES):
        acc[l] = 0
    if yr != NULL:
        for j in range(n):
            yr[j] = r_exp(xr[j] - peak)
        return lane_sum(yr, n, acc)
    while n - start > EXP_BLOCK:         # every block but the last is a multiple of LANES
        for j in range(EXP_BLOCK):
            scratch[j] = r_exp(xr[start + j] - peak)
        lane_add(acc, scratch, EXP_BLOCK)
        start += EXP_BLOCK
    count = n - start
    for j in range(count):
        scratch[j] = r_exp(xr[start + j] - peak)
    return lane_sum(scratch, count, acc)


cdef inline real row_dot(const real* a, const real* b, Py_ssize_t n) noexcept nogil:
    """Σ a·b over the row, in LANES partials."""
    cdef real acc[LANES]
    cdef real total
    cdef Py_ssize_t j, l, full = n - n % LANES
    for l in range(LANES):
        acc[l] = 0
    for j in range(0, full, 16):   # LANES
        for l in range(LANES):
            acc[l] = acc[l] + a[j + l] * b[j + l]
    total = lanes_total(acc)
    for j in range(full, n):
        total = total + a[j] * b[j]
    return total


cdef inline real row_sum(const real* a, Py_ssize_t n) noexcept nogil:
    cdef real acc[LANES]
    cdef Py_ssize_t l
    for l in range(LANES):
        acc[l] = 0
    return lane_sum(a, n, acc)


# ---------------------------------------------------------------------------------------------
# softmax rows: a row's max, exponentials, sum and normalisation fused in one kernel, forward
# and backward, for softmax and log_softmax over the last axis of a compact (m, n) array (one
# pass per row instead of six kernels, each a full pass and a Python call).
# ---------------------------------------------------------------------------------------------

cdef void softmax_rows(const real* x, real* y, Py_ssize_t r0, Py_ssize_t r1, Py_ssize_t n,
                       bint log) noexcept nogil:
    """y = softmax or log_softmax of rows [r0, r1): exp(x - max) / sum, or (x - max) - log(sum)
    (torch's formulas; a NaN in a row makes the whole row NaN)."""
    cdef Py_ssize_t r, j
    cdef real peak, total, log_total
    cdef const real* xr
    cdef real* yr
    for r in range(r0, r1):
        xr = x + r * n
        yr = y + r * n
        peak = row_max(xr, n)
        total = exp_sum(xr, yr, n, peak)
        if log:
            log_total = vlogf(total) if real is float else vlog(total)
            for j in range(n):
                yr[j] = (xr[j] - peak) - log_total
        else:
            for j in range(n):
                yr[j] = yr[j] / total


cdef void softmax_backward_rows(const real* g, const real* y, real* o, Py_ssize_t r0,
                                Py_ssize_t r1, Py_ssize_t n, bint log) noexcept nogil:
    """The input gradient from the output y and its gradient g, rows [r0, r1): softmax
    y * (g - sum(g * y)); log_softmax g - exp(y) * sum(g)."""
    cdef Py_ssize_t r, j
    cdef real total
    cdef const real* gr
    cdef const real* yr
    cdef real* orow
    for r in range(r0, r1):
        gr = g + r * n
        yr = y + r * n
        orow = o + r * n
        if log:
            total = row_sum(gr, n)
            for j in range(n):
                orow[j] = gr[j] - r_exp(yr[j]) * total
        else:
            total = row_dot(gr, yr, n)
            for j in range(n):
                orow[j] = (gr[j] - total) * yr[j]


cdef int check_rows(cnp.ndarray a, cnp.ndarray out, Py_ssize_t n, str op) except -1:
    """Compact float rows of length n > 0 in a, and an out of a's size and dtype."""
    cdef int dt = buffer_dtype(a, op)
    if dt != DT_F32 and dt != DT_F64:
        raise TypeError(f"{op}: unsupported dtype {DTYPE_NAMES[dt]} (float32 or float64 only)")
    if buffer_dtype(out, op, True) != dt:
        raise TypeError(f"{op}: out must have the dtype of the input ({DTYPE_NAMES[dt]})")
    if n <= 0 or cnp.PyArray_SIZE(a) % n:
        raise ValueError(f"{op}: {cnp.PyArray_SIZE(a)} elements are not rows of length {n}")
    if cnp.PyArray_SIZE(out) != cnp.PyArray_SIZE(a):
        raise ValueError(f"{op}: out has {cnp.PyArray_SIZE(out)} elements, expected "
                         f"{cnp.PyArray_SIZE(a)}")
    return dt


cdef void softmax_part(int dt, const void* x, void* y, Py_ssize_t r0, Py_ssize_t r1,
                       Py_ssize_t n, bint log) noexcept nogil:
    if dt == DT_F32:
        softmax_rows(<const float*>x, <float*>y, r0, r1, n, log)
    else:
        softmax_rows(<const double*>x, <double*>y, r0, r1, n, log)


cdef void softmax_backward_part(int dt, const void* g, const void* y, void* o, Py_ssize_t r0,
                                Py_ssize_t r1, Py_ssize_t n, bint log) noexcept nogil:
    if dt == DT_F32:
        softmax_backward_rows(<const float*>g, <const float*>y, <float*>o, r0, r1, n, log)
    else:
        softmax_backward_rows(<const double*>g, <const double*>y, <double*>o, r0, r1, n, log)


# ---------------------------------------------------------------------------------------------
# cross-entropy rows: each row's log_softmax read at its target class (forward) and the input
# gradient c·onehot − c·softmax (backward), without the (rows, n) log_softmax matrix that
# log_softmax followed by nll_loss would write and read back. The arithmetic is softmax_rows'
# and log_softmax's backward operation for operation, so the results are the composed path's
# bits. The forward keeps each row's max and log Σ exp(x − max) (`stats`, two values per row),
# so the backward is one exponential per element and no reduction.
# ---------------------------------------------------------------------------------------------

cdef enum:
    ROW_BLOCK = 64      # rows whose log-sums are taken together (one vector loop, not a scalar
                        # polynomial per row: that was half of a 65-class forward)


cdef inline void log_each(real* v, Py_ssize_t count) noexcept nogil:
    cdef Py_ssize_t i
    if real is float:
        for i in range(count):
            v[i] = vlogf(v[i])
    else:
        for i in range(count):
            v[i] = vlog(v[i])


cdef void cross_entropy_rows_part(const real* x, const int64_t* target, real* picked,
                                  real* stats, Py_ssize_t r0, Py_ssize_t r1,
                                  Py_ssize_t n) noexcept nogil:
    """picked[r] = log_softmax(x[r])[target[r]] for rows [r0, r1), and stats[2r], stats[2r + 1]
    = the row's max and log Σ exp(x − max)."""
    cdef real log_totals[ROW_BLOCK]
    cdef Py_ssize_t first = r0, count, i, r
    cdef real peak
    while first < r1:
        count = min(<Py_ssize_t>ROW_BLOCK, r1 - first)
        for i in range(count):
            r = first + i
            peak = row_max(x + r * n, n)
            stats[2 * r] = peak
            log_totals[i] = exp_sum(x + r * n, NULL, n, peak)
        log_each(log_totals, count)
        for i in range(count):
            r = first + i
            stats[2 * r + 1] = log_totals[i]
            picked[r] = (x[r * n + target[r]] - stats[2 * r]) - log_totals[i]
        first += count


cdef void cross_entropy_backward_part(const real* coef, const real* x, const int64_t* target,
                                      const real* stats, real* o, Py_ssize_t r0, Py_ssize_t r1,
                                      Py_ssize_t n) noexcept nogil:
    """o[r, j] = c·[j = target[r]] − exp(log_softmax(x[r])[j])·c, c = coef[r] (log_softmax's
    backward of a gradient that is c at the target and 0 elsewhere)."""
    cdef Py_ssize_t r, j, t
    cdef real peak, log_total, c
    cdef const real* xr
    cdef real* orow
    for r in range(r0, r1):
        xr = x + r * n
        orow = o + r * n
        c = coef[r]
        peak = stats[2 * r]
        log_total = stats[2 * r + 1]
        for j in range(n):
            orow[j] = 0 - r_exp((xr[j] - peak) - log_total) * c
        t = target[r]
        orow[t] = c - r_exp((xr[t] - peak) - log_total) * c


cdef int check_targets(cnp.ndarray target, Py_ssize_t m, Py_ssize_t n, str op) except -1:
    """target: m int64 classes, each in [0, n) (checked before anything is written, with the
    index kernels' message, which nll_loss's callers turn into torch's)."""
    cdef const int64_t* p
    cdef Py_ssize_t k
    if cnp.PyArray_TYPE(target) not in (cnp.NPY_LONG, cnp.NPY_LONGLONG) or \
            cnp.PyArray_ITEMSIZE(target) != 8:
        raise TypeError(f"{op}: target must have dtype int64, got {(<object>target).dtype}")
    if cnp.PyArray_SIZE(target) != m or not cnp.PyArray_IS_C_CONTIGUOUS(target):
        raise ValueError(f"{op}: target must hold {m} contiguous classes, got "
                         f"{cnp.PyArray_SIZE(target)}")
    p = <const int64_t*>cnp.PyArray_DATA(target)
    for k in range(m):
        if p[k] < 0 or p[k] >= n:
            raise IndexError(f"index {p[k]} is out of bounds for dimension with size {n}")
    return 0


cdef int check_stats(cnp.ndarray stats, int dt, Py_ssize_t m, str op) except -1:
    if buffer_dtype(stats, op, True) != dt or cnp.PyArray_SIZE(stats) != 2 * m:
        raise ValueError(f"{op}: stats must hold {2 * m} values of the input's dtype")
    return 0


def cross_entropy_rows(cnp.ndarray a, cnp.ndarray target, cnp.ndarray picked,
                       cnp.ndarray stats, Py_ssize_t n):
    """picked[r] = log_softmax(row r of compact a)[target[r]] for length-n rows, and stats[2r],
    stats[2r + 1] = the row's max and log Σ exp(x − max) (for the backward); targets are
    checked first (IndexError, nothing written)."""
    cdef int dt = buffer_dtype(a, "cross_entropy_rows")
    cdef Py_ssize_t m, t
    if dt != DT_F32 and dt != DT_F64:
        raise TypeError(f"cross_entropy_rows: unsupported dtype {DTYPE_NAMES[dt]} (float32 or "
                        "float64 only)")
    if n <= 0 or cnp.PyArray_SIZE(a) % n:
        raise ValueError(f"cross_entropy_rows: {cnp.PyArray_SIZE(a)} elements are not rows of "
                         f"length {n}")
    m = cnp.PyArray_SIZE(a) // n
    if buffer_dtype(picked, "cross_entropy_rows", True) != dt or cnp.PyArray_SIZE(picked) != m:
        raise ValueError(f"cross_entropy_rows: picked must hold {m} values of the input's dtype")
    check_stats(stats, dt, m, "cross_entropy_rows")
    check_targets(target, m, n, "cross_entropy_rows")
    cdef int nt = threads_for(m * n) if m > 1 else 1
    cdef const void* pa = cnp.PyArray_DATA(a)
    cdef const int64_t* pt = <const int64_t*>cnp.PyArray_DATA(target)
    cdef void* pp = cnp.PyArray_DATA(picked)
    cdef void* ps = cnp.PyArray_DATA(stats)
    with nogil:
        for t in prange(nt, num_threads=nt, schedule="static"):
            if dt == DT_F32:
                cross_entropy_rows_part(<const float*>pa, pt, <float*>pp, <float*>ps,
                                        m * t // nt, m * (t + 1) // nt, n)
            else:
                cross_entropy_rows_part(<const double*>pa, pt, <double*>pp, <double*>ps,
                                        m * t // nt, m * (t + 1) // nt, n)


def cross_entropy_rows_backward(cnp.ndarray coef, cnp.ndarray a, cnp.ndarray target,
                                cnp.ndarray stats, cnp.ndarray out, Py_ssize_t n,
                                bint targets_checked=False):
    """out[r, j] = coef[r]·[j = target[r]] − softmax(row r of a)[j]·coef[r]: the gradient at the
    scores of cross_entropy_rows for a gradient coef[r] at each picked value, from the forward's
    stats. The targets are checked even when targets_checked (the GPU skips its check then: a
    device-to-host copy; here it is a pass over host memory)."""
    cdef int dt = check_rows(a, out, n, "cross_entropy_rows_backward")
    cdef Py_ssize_t m = cnp.PyArray_SIZE(a) // n, t
    if buffer_dtype(coef, "cross_entropy_rows_backward") != dt or cnp.PyArray_SIZE(coef) != m:
        raise ValueError(f"cross_entropy_rows_backward: coef must hold {m} values of the "
                         "input's dtype")
    check_stats(stats, dt, m, "cross_entropy_rows_backward")
    check_targets(target, m, n, "cross_entropy_rows_backward")
    cdef int nt = threads_for(m * n) if m > 1 else 1
    cdef const void* pc = cnp.PyArray_DATA(coef)
    cdef const void* pa = cnp.PyArray_DATA(a)
    cdef const int64_t* pt = <const int64_t*>cnp.PyArray_DATA(target)
    cdef const void* ps = cnp.PyArray_DATA(stats)
    cdef void* po = cnp.PyArray_DATA(out)
    with nogil:
        for t in prange(nt, num_threads=nt, schedule="static"):
            if dt == DT_F32:
                cross_entropy_backward_part(<const float*>pc, <const float*>pa, pt,
                                            <const float*>ps, <float*>po, m * t // nt,
                                            m * (t + 1) // nt, n)
            else:
                cross_entropy_backward_part(<const double*>pc, <const double*>pa, pt,
                                            <const double*>ps, <double*>po, m * t // nt,
                                            m * (t + 1) // nt, n)


def softmax_last(cnp.ndarray a, cnp.ndarray out, Py_ssize_t n, bint log=False):
    """out = softmax (log_softmax when `log`) of each length-n row of compact a; rows are
    shared out among threads."""
    cdef int dt = check_rows(a, out, n, "softmax_last")
    cdef Py_ssize_t m = cnp.PyArray_SIZE(a) // n, t
    cdef int nt = threads_for(m * n) if m > 1 else 1
    cdef const void* pa = cnp.PyArray_DATA(a)
    cdef void* po = cnp.PyArray_DATA(out)
    with nogil:
        if nt == 1:
            softmax_part(dt, pa, po, 0, m, n, log)
        else:
            for t in prange(nt, num_threads=nt, schedule="static"):
                softmax_part(dt, pa, po, m * t // nt, m * (t + 1) // nt, n, log)


def softmax_backward_last(cnp.ndarray g, cnp.ndarray y, cnp.ndarray out, Py_ssize_t n,
                          bint log=False):
    """out = the gradient of softmax (log_softmax when `log`) rows of length n at the input,
    given their output y and its gradient g (all compact, one size and dtype)."""
    cdef int dt = check_rows(g, out, n, "softmax_backward_last")
    check_rows(y, out, n, "softmax_backward_last")
    cdef Py_ssize_t m = cnp.PyArray_SIZE(g) // n, t
    cdef int nt = threads_for(m * n) if m > 1 else 1
    cdef const void* pg = cnp.PyArray_DATA(g)
    cdef const void* py = cnp.PyArray_DATA(y)
    cdef void* po = cnp.PyArray_DATA(out)
    with nogil:
        if nt == 1:
            softmax_backward_part(dt, pg, py, po, 0, m, n, log)
        else:
            for t in prange(nt, num_threads=nt, schedule="static"):
                softmax_backward_part(dt, pg, py, po, m * t // nt, m * (t + 1) // nt, n, log)


# ---------------------------------------------------------------------------------------------
# fused optimizer update
# ---------------------------------------------------------------------------------------------

cdef struct AdamScalars:
    double grad_scale, param_scale, grad_decay, w1, beta2, c2, eps, bc2_sqrt, neg_step


cdef enum:
    ADAM_BLOCK = 256        # elements per pass of adam_elements' loops (stack scratch)


cdef void adam_elements(real* p, const real* g, real* m, real* v, real* vmax, Py_ssize_t i0,
                        Py_ssize_t i1, AdamScalars s) noexcept nogil:
    """torch's single-tensor Adam, operation for operation, on elements [i0, i1): each scalar
    is rounded to the element type first, as the separate tensor ops would. A block at a time,
    as short loops over few pointers each: gcc vectorizes a loop only while it can check every
    pair of its pointers for overlap at run time (one loop over all five ran scalar, 7 ns per
    element)."""
    cdef real grad_scale = <real>s.grad_scale, param_scale = <real>s.param_scale
    cdef real grad_decay = <real>s.grad_decay, w1 = <real>s.w1, beta2 = <real>s.beta2
    cdef real c2 = <real>s.c2, eps = <real>s.eps, bc2_sqrt = <real>s.bc2_sqrt
    cdef real neg_step = <real>s.neg_step, one = 1, half = 0.5, gi, mi
    cdef real grad[ADAM_BLOCK]
    cdef Py_ssize_t b, i, n
    cdef real* top
    b = i0
    while b < i1:
        n = min(<Py_ssize_t>ADAM_BLOCK, i1 - b)
        for i in range(n):
            grad[i] = g[b + i] * grad_scale             # maximize: the negated gradient
        if grad_decay != 0:                             # L2 weight decay (an inf p stays out
            for i in range(n):                          # when there is none)
                grad[i] = grad[i] + grad_decay * p[b + i]
        if w1 < half:                                   # lerp, in torch's two forms
            for i in range(n):
                m[b + i] = m[b + i] + w1 * (grad[i] - m[b + i])
        else:
            for i in range(n):
                gi = grad[i]
                m[b + i] = gi - (gi - m[b + i]) * (one - w1)
        for i in range(n):
            v[b + i] = v[b + i] * beta2 + c2 * grad[i] * grad[i]
        top = v
        if vmax != NULL:                                # amsgrad: a NaN on either side wins
            for i in range(n):
                mi = vmax[b + i]
                vmax[b + i] = mi if (mi > v[b + i]) | (mi != mi) else v[b + i]
            top = vmax
        for i in range(n):
            p[b + i] = p[b + i] * param_scale + neg_step * (
                m[b + i] / (sqrt(top[b + i]) / bc2_sqrt + eps))
        b += n


cdef void adam_part(int dt, void* p, const void* g, void* m, void* v, void* vmax, Py_ssize_t i0,
                    Py_ssize_t i1, AdamScalars s) noexcept nogil:
    if dt == DT_F32:
        adam_elements(<float*>p, <const float*>g, <float*>m, <float*>v, <float*>vmax, i0, i1, s)
    else:
        adam_elements(<double*>p, <const double*>g, <double*>m, <double*>v, <double*>vmax, i0,
                      i1, s)


def adam_step(cnp.ndarray param, cnp.ndarray grad, cnp.ndarray exp_avg, cnp.ndarray exp_avg_sq,
              cnp.ndarray max_exp_avg_sq, double beta1, double beta2, double eps,
              double step_size, double bias_correction2_sqrt, double grad_decay=0.0,
              double param_scale=1.0, bint maximize=False):
    """One Adam update of compact buffers of one float dtype and size, in place: param,
    exp_avg, exp_avg_sq and (amsgrad, else None) max_exp_avg_sq. grad_decay is L2 weight decay
    added to the gradient, param_scale the decoupled decay factor 1 - lr * weight_decay."""
    cdef int dt = check_rows(param, param, 1, "adam_step")
    cdef Py_ssize_t n = cnp.PyArray_SIZE(param), t
    for buf in (grad, exp_avg, exp_avg_sq, max_exp_avg_sq):
        if buf is not None:
            check_rows(param, buf, 1, "adam_step")
    cdef AdamScalars s
    s.grad_scale, s.param_scale, s.grad_decay = (-1.0 if maximize else 1.0), param_scale, grad_decay
    s.w1, s.beta2, s.c2, s.eps = 1.0 - beta1, beta2, 1.0 - beta2, eps
    s.bc2_sqrt, s.neg_step = bias_correction2_sqrt, -step_size
    cdef void* pp = cnp.PyArray_DATA(param)
    cdef const void* pg = cnp.PyArray_DATA(grad)
    cdef void* pm = cnp.PyArray_DATA(exp_avg)
    cdef void* pv = cnp.PyArray_DATA(exp_avg_sq)
    cdef void* pmax = NULL if max_exp_avg_sq is None else cnp.PyArray_DATA(max_exp_avg_sq)
    cdef int nt = threads_for(n)
    with nogil:
        if nt == 1:
            adam_part(dt, pp, pg, pm, pv, pmax, 0, n, s)
        else:
            for t in prange(nt, num_threads=nt, schedule="static"):
                adam_part(dt, pp, pg, pm, pv, pmax, chunk_start(n, nt, t),
                          chunk_start(n, nt, t + 1), s)
