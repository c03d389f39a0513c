# cython: cdivision=True
# (C division semantics, also in MINITORCH_DEBUG builds, as the rest of the elementwise kernels)
"""Multi-tensor optimizer steps (torch's `foreach`): one kernel call updates every parameter of
an optimizer group that shares a float dtype, so a model of many small parameters pays one
Python call per step instead of one per parameter (or a dozen, op by op). The CUDA twin is
minitorch/_gpu/kernels/foreach.cu.

Each function takes Python lists of compact buffers (parameters, gradients, state buffers, one
entry per parameter) and the group's scalars. The pointers and sizes are collected once into C
arrays; the parameters' elements, concatenated, are then shared out among threads in equal
ranges (a range may span several small tensors or part of a large one). The rules are torch's
single-tensor ones operation for operation, every operation rounded to the element type as
the separate tensor ops round (no fused multiply-adds, float math in float): a foreach step
gives the bits of optim's op-by-op rule (fused.pyx's per-parameter adam_step takes float32
square roots in double and lets the compiler fuse multiply-adds: it may differ in the last
bits).
"""
cimport numpy as cnp
from cython.parallel cimport prange
from libc.math cimport pow, sqrt, sqrtf
from libc.stdlib cimport free, malloc

from minitorch._cpu.common cimport buffer_dtype, chunk_start, DT_F32, DT_F64, threads_for
from minitorch._cpu.vector_math cimport real

cnp.import_array()

# No fused multiply-adds: every operation of the rules rounds as the separate tensor ops do, so
# a foreach step gives the single-tensor rule's bits, vectorized or not (gcc contracts a * b + c
# by default, differently in vector and scalar loops).
cdef extern from *:
    """
    #if defined(__clang__)
    #pragma clang fp contract(off)
    #elif defined(__GNUC__)
    #pragma GCC optimize ("fp-contract=off")
    #endif
    """


cdef inline real r_sqrt(real x) noexcept nogil:
    """sqrt in the element type (libm's sqrt would widen float math to double: other bits)."""
    return sqrtf(x) if real is float else sqrt(x)


DTYPE_NAMES = ("float32", "float64", "int64", "bool")

cdef enum:
    RULE_SGD = 0
    RULE_ADAM = 1
    RULE_ADADELTA = 2
    RULE_RMSPROP = 3


# A rule's scalars (each rule reads its own), as doubles: rounded to the element type in the
# element loops.
cdef struct Hyper:
    double grad_scale       # -1 for maximize
    double weight_decay     # L2 decay added to the gradient
    double neg_lr
    double momentum, keep   # SGD: keep = 1 - dampening, Adam: 1 - (1 - beta1); RMSprop: momentum
    double w1, beta2, c2, eps, param_scale   # Adam (w1 = 1 - beta1, c2 = 1 - beta2)
    double rho, c_rho       # Adadelta: rho, 1 - rho; RMSprop: alpha, 1 - alpha
    bint nesterov, init     # SGD


# The tensors of one call: n parameters, `slots` buffers each (slot-major pointers; a NULL slot
# is an absent optional buffer), offsets[k] the start of tensor k in the concatenated element
# range, and per-tensor Adam scalars.
cdef struct Batch:
    Py_ssize_t n
    int slots
    void** ptrs
    Py_ssize_t* offsets
    double* neg_step        # Adam: -lr / (1 - beta1**step) per tensor
    double* bc2_sqrt        # Adam: sqrt(1 - beta2**step) per tensor


# ---------------------------------------------------------------------------------------------
# the rules, on elements [i0, i1) of one tensor

cdef void sgd_elements(real* p, const real* g, real* b, Py_ssize_t i0, Py_ssize_t i1,
                       const Hyper* h) noexcept nogil:
    """grad (negated for maximize) + wd * param; momentum buffer b = grad on the first step,
    else momentum * b + (1 - dampening) * grad; Nesterov: grad + momentum * b; param -= lr * .
    Without momentum a loop of its own: a store into b under `if b != NULL` would keep the
    compiler from vectorizing (3x slower on a 6.4M-element table)."""
    cdef real grad_scale = <real>h.grad_scale, wd = <real>h.weight_decay, neg_lr = <real>h.neg_lr
    cdef real momentum = <real>h.momentum, keep = <real>h.keep, gi, bi
    cdef bint decay = h.weight_decay != 0, nesterov = h.nesterov, init = h.init
    cdef Py_ssize_t i
    if b == NULL:
        for i in range(i0, i1):
            p[i] = p[i] + plain_grad(p[i], g[i], grad_scale, wd, decay) * neg_lr
        return
    for i in range(i0, i1):
        gi = plain_grad(p[i], g[i], grad_scale, wd, decay)
        bi = gi if init else b[i] * momentum + gi * keep
        b[i] = bi
        gi = gi + bi * momentum if nesterov else bi
        p[i] = p[i] + gi * neg_lr


cdef void adam_elements(real* p, const real* g, real* m, real* v, real* vmax, Py_ssize_t i0,
                        Py_ssize_t i1, const Hyper* h, double neg_step_,
                        double bc2_sqrt_) noexcept nogil:
    """Adam with this tensor's step size and bias correction, as optim.Adam's op-by-op rule:
    param *= 1 - lr * wd (AdamW), exp_avg lerps to the grad, exp_avg_sq = beta2 * v +
    (1 - beta2) * g², amsgrad keeps the running max, param += -step_size * m / (sqrt(v) /
    bias_correction2_sqrt + eps). One loop with amsgrad and one without, so that neither has a
    conditional store (both vectorize)."""
    cdef real grad_scale = <real>h.grad_scale, param_scale = <real>h.param_scale
    cdef real grad_decay = <real>h.weight_decay, w1 = <real>h.w1, keep = <real>h.keep
    cdef real beta2 = <real>h.beta2, c2 = <real>h.c2, eps = <real>h.eps
    cdef real bc2_sqrt = <real>bc2_sqrt_, neg_step = <real>neg_step_, gi, mi, vi, top
    cdef bint decay = h.weight_decay != 0, near = -0.5 < h.w1 < 0.5
    cdef Py_ssize_t i
    if vmax == NULL:
        for i in range(i0, i1):
            gi = plain_grad(p[i], g[i], grad_scale, grad_decay, decay)
            mi = m[i]
            mi = mi + (gi - mi) * w1 if near else gi - (gi - mi) * keep
            vi = v[i] * beta2 + (gi * c2) * gi
            m[i] = mi
            v[i] = vi
            p[i] = p[i] * param_scale + (mi * neg_step) / (r_sqrt(vi) / bc2_sqrt + eps)
    else:
        for i in range(i0, i1):
            gi = plain_grad(p[i], g[i], grad_scale, grad_decay, decay)
            mi = m[i]
            mi = mi + (gi - mi) * w1 if near else gi - (gi - mi) * keep
            vi = v[i] * beta2 + (gi * c2) * gi
            m[i] = mi
            v[i] = vi
            top = vmax[i]                               # amsgrad: a NaN on either side wins
            top = top if (top > vi) | (top != top) else vi
            vmax[i] = top
            p[i] = p[i] * param_scale + (mi * neg_step) / (r_sqrt(top) / bc2_sqrt + eps)


cdef void adadelta_elements(real* p, const real* g, real* sq, real* acc, Py_ssize_t i0,
                            Py_ssize_t i1, const Hyper* h) noexcept nogil:
    """square_avg = rho * sq + (1 - rho) * g²; delta = sqrt(acc + eps) / sqrt(sq + eps) * g;
    acc_delta = rho * acc + (1 - rho) * delta²; param -= lr * delta."""
    cdef real grad_scale = <real>h.grad_scale, wd = <real>h.weight_decay, neg_lr = <real>h.neg_lr
    cdef real rho = <real>h.rho, c_rho = <real>h.c_rho, eps = <real>h.eps, gi, si, di, ai
    cdef bint decay = h.weight_decay != 0
    cdef Py_ssize_t i
    for i in range(i0, i1):
        gi = g[i] * grad_scale
        if decay:
            gi = gi + p[i] * wd
        si = sq[i] * rho + (gi * c_rho) * gi
        sq[i] = si
        di = r_sqrt(acc[i] + eps) / r_sqrt(si + eps) * gi
        ai = acc[i] * rho + (di * c_rho) * di
        acc[i] = ai
        p[i] = p[i] + di * neg_lr


cdef void rmsprop_elements(real* p, const real* g, real* sq, real* b, real* ga, Py_ssize_t i0,
                           Py_ssize_t i1, const Hyper* h) noexcept nogil:
    """square_avg = alpha * sq + (1 - alpha) * g²; centered: grad_avg lerps to g and
    avg = sqrt(sq - grad_avg²) + eps, else sqrt(sq) + eps; momentum buffer b = momentum * b +
    g / avg and param -= lr * b, or param -= lr * g / avg without momentum. One loop per
    combination of the optional buffers, so that none has a conditional store."""
    cdef real grad_scale = <real>h.grad_scale, wd = <real>h.weight_decay, neg_lr = <real>h.neg_lr
    cdef real alpha = <real>h.rho, c_alpha = <real>h.c_rho, eps = <real>h.eps
    cdef real momentum = <real>h.momentum, gi, si, ai, bi
    cdef real lerp_w = <real>h.c_rho, lerp_keep = <real>(1.0 - h.c_rho)
    cdef bint decay = h.weight_decay != 0, near = -0.5 < h.c_rho < 0.5
    cdef Py_ssize_t i
    if ga == NULL and b == NULL:
        for i in range(i0, i1):
            gi = plain_grad(p[i], g[i], grad_scale, wd, decay)
            si = sq[i] * alpha + (gi * c_alpha) * gi
            sq[i] = si
            p[i] = p[i] + (gi * neg_lr) / (r_sqrt(si) + eps)
    elif ga == NULL:
        for i in range(i0, i1):
            gi = plain_grad(p[i], g[i], grad_scale, wd, decay)
            si = sq[i] * alpha + (gi * c_alpha) * gi
            sq[i] = si
            bi = b[i] * momentum + gi / (r_sqrt(si) + eps)
            b[i] = bi
            p[i] = p[i] + bi * neg_lr
    elif b == NULL:
        for i in range(i0, i1):
            gi = plain_grad(p[i], g[i], grad_scale, wd, decay)
            si = sq[i] * alpha + (gi * c_alpha) * gi
            sq[i] = si
            ai = ga[i]
            ai = ai + (gi - ai) * lerp_w if near else gi - (gi - ai) * lerp_keep
            ga[i] = ai
            p[i] = p[i] + (gi * neg_lr) / (r_sqrt(si + (-ai) * ai) + eps)
    else:
        for i in range(i0, i1):
            gi = plain_grad(p[i], g[i], grad_scale, wd, decay)
            si = sq[i] * alpha + (gi * c_alpha) * gi
            sq[i] = si
            ai = ga[i]
            ai = ai + (gi - ai) * lerp_w if near else gi - (gi - ai) * lerp_keep
            ga[i] = ai
            bi = b[i] * momentum + gi / (r_sqrt(si + (-ai) * ai) + eps)
            b[i] = bi
            p[i] = p[i] + bi * neg_lr


cdef inline real plain_grad(real p, real g, real grad_scale, real wd, bint decay) noexcept nogil:
    """The gradient torch's rules use: negated for maximize, plus L2 weight decay."""
    g = g * grad_scale
    if decay:
        g = g + p * wd
    return g


# ---------------------------------------------------------------------------------------------
# the driver: tensor k's buffers, a range of the concatenated elements, threads

cdef inline void* slot(const Batch* b, int s, Py_ssize_t k) noexcept nogil:
    return b.ptrs[s * b.n + k]


cdef void run_tensor(int rule, int dt, const Batch* b, const Hyper* h, Py_ssize_t k,
                     Py_ssize_t i0, Py_ssize_t i1) noexcept nogil:
    cdef void* p = slot(b, 0, k)
    cdef void* g = slot(b, 1, k)
    cdef void* s2 = slot(b, 2, k) if b.slots > 2 else NULL
    cdef void* s3 = slot(b, 3, k) if b.slots > 3 else NULL
    cdef void* s4 = slot(b, 4, k) if b.slots > 4 else NULL
    if dt == DT_F32:
        if rule == RULE_SGD:
            sgd_elements(<float*>p, <const float*>g, <float*>s2, i0, i1, h)
        elif rule == RULE_ADAM:
            adam_elements(<float*>p, <const float*>g, <float*>s2, <float*>s3, <float*>s4, i0,
                          i1, h, b.neg_step[k], b.bc2_sqrt[k])
        elif rule == RULE_ADADELTA:
            adadelta_elements(<float*>p, <const float*>g, <float*>s2, <float*>s3, i0, i1, h)
        else:
            rmsprop_elements(<float*>p, <const float*>g, <float*>s2, <float*>s3, <float*>s4,
                             i0, i1, h)
    else:
        if rule == RULE_SGD:
            sgd_elements(<double*>p, <const double*>g, <double*>s2, i0, i1, h)
        elif rule == RULE_ADAM:
            adam_elements(<double*>p, <const double*>g, <double*>s2, <double*>s3, <double*>s4,
                          i0, i1, h, b.neg_step[k], b.bc2_sqrt[k])
        elif rule == RULE_ADADELTA:
            adadelta_elements(<double*>p, <const double*>g, <double*>s2, <double*>s3, i0, i1,
                              h)
        else:
            rmsprop_elements(<double*>p, <const double*>g, <double*>s2, <double*>s3,
                             <double*>s4, i0, i1, h)


cdef void run_range(int rule, int dt, const Batch* b, const Hyper* h, Py_ssize_t lo,
                    Py_ssize_t hi) noexcept nogil:
    """Elements [lo, hi) of the concatenation: the part of each tensor that falls inside."""
    cdef Py_ssize_t k = 0, start, end
    cdef const Py_ssize_t* off = b.offsets
    while k < b.n and off[k + 1] <= lo:
        k += 1
    while k < b.n and off[k] < hi:
        start = lo if lo > off[k] else off[k]
        end = hi if hi < off[k + 1] else off[k + 1]
        if end > start:
            run_tensor(rule, dt, b, h, k, start - off[k], end - off[k])
        k += 1


cdef void run(int rule, int dt, const Batch* b, const Hyper* h) noexcept nogil:
    cdef Py_ssize_t total = b.offsets[b.n], t
    cdef int nt = threads_for(total)
    if nt == 1:
        run_range(rule, dt, b, h, 0, total)
    else:
        for t in prange(nt, num_threads=nt, schedule="static"):
            run_range(rule, dt, b, h, chunk_start(total, nt, t), chunk_start(total, nt, t + 1))


# ---------------------------------------------------------------------------------------------
# collecting the lists

cdef int load(Batch* b, list lists, str op) except -1:
    """Fill b from `lists` (slot by slot; a slot may be None, or hold None entries only for
    the optional ones): checks every buffer against the parameter's dtype and size. Returns
    the dtype code; b's arrays are allocated here and freed by release()."""
    cdef list params = lists[0]
    cdef Py_ssize_t n = len(params), k, total = 0
    cdef int s, dt = -1
    cdef cnp.ndarray buf, param
    cdef object entries
    for s in range(1, len(lists)):
        if lists[s] is not None and len(lists[s]) != n:
            raise ValueError(f"{op}: {len(lists[s])} buffers in list {s} for {n} parameters")
    b.n, b.slots = n, len(lists)
    b.ptrs = <void**>malloc(max(1, b.slots * n) * sizeof(void*))
    b.offsets = <Py_ssize_t*>malloc((n + 1) * sizeof(Py_ssize_t))
    b.neg_step = <double*>malloc(max(1, n) * sizeof(double))
    b.bc2_sqrt = <double*>malloc(max(1, n) * sizeof(double))
    if b.ptrs == NULL or b.offsets == NULL or b.neg_step == NULL or b.bc2_sqrt == NULL:
        raise MemoryError()
    b.offsets[0] = 0
    for k in range(n):
        param = params[k]
        if dt < 0:
            dt = buffer_dtype(param, op, True)
            if dt != DT_F32 and dt != DT_F64:
                raise TypeError(f"{op}: unsupported dtype {DTYPE_NAMES[dt]} (float32 or "
                                "float64 only)")
        for s in range(b.slots):
            entries = lists[s]
            if entries is None or entries[k] is None:
                if s < 2:
                    raise TypeError(f"{op}: a parameter and its gradient are required")
                b.ptrs[s * n + k] = NULL
                continue
            buf = entries[k]
            if buffer_dtype(buf, op, s != 1) != dt:
                raise TypeError(f"{op}: every buffer must have the parameters' dtype "
                                f"({DTYPE_NAMES[dt]})")
            if cnp.PyArray_SIZE(buf) != cnp.PyArray_SIZE(param):
                raise ValueError(f"{op}: a buffer has {cnp.PyArray_SIZE(buf)} elements, its "
                                 f"parameter {cnp.PyArray_SIZE(param)}")
            b.ptrs[s * n + k] = cnp.PyArray_DATA(buf)
        total += cnp.PyArray_SIZE(param)
        b.offsets[k + 1] = total
    return DT_F32 if dt < 0 else dt


cdef void release(Batch* b) noexcept:
    free(b.ptrs)
    free(b.offsets)
    free(b.neg_step)
    free(b.bc2_sqrt)


cdef void clear(Batch* b) noexcept:
    b.ptrs, b.offsets, b.neg_step, b.bc2_sqrt = NULL, NULL, NULL, NULL


cdef int execute(int rule, list lists, Hyper* h, str op, list steps=None, double lr=0.0,
                 double beta1=0.0, double beta2=0.0) except -1:
    cdef Batch b
    cdef int dt
    clear(&b)
    try:
        dt = load(&b, lists, op)
        if steps is not None:
            check_counters(steps, b.n, op)
            if rule == RULE_ADAM:
                bias_corrections(&b, steps, lr, beta1, beta2)
            else:
                for counter in steps:
                    increment(<cnp.ndarray>counter)
        with nogil:
            run(rule, dt, &b, h)
    finally:
        release(&b)
    return 0


cdef int check_counters(list steps, Py_ssize_t n, str op) except -1:
    """Every step counter is one writable float32 / float64 element (checked before any
    changes)."""
    if len(steps) != n:
        raise ValueError(f"{op}: {len(steps)} step counters for {n} parameters")
    cdef cnp.ndarray c
    for counter in steps:
        c = counter
        dt = buffer_dtype(c, op, True)
        if cnp.PyArray_SIZE(c) != 1 or (dt != DT_F32 and dt != DT_F64):
            raise ValueError(f"{op}: a step counter is one float32 or float64 element")
    return 0


cdef double increment(cnp.ndarray c) noexcept:
    """A checked step counter += 1 in its dtype (as state["step"].add_(1) does); returns the
    new count."""
    if cnp.PyArray_TYPE(c) == cnp.NPY_FLOAT32:
        (<float*>cnp.PyArray_DATA(c))[0] += 1
        return (<float*>cnp.PyArray_DATA(c))[0]
    (<double*>cnp.PyArray_DATA(c))[0] += 1
    return (<double*>cnp.PyArray_DATA(c))[0]


cdef void bias_corrections(Batch* b, list steps, double lr, double beta1,
                           double beta2) noexcept:
    """Adam's step counters += 1, then each tensor's -lr / (1 - beta1**step) and
    sqrt(1 - beta2**step) as the per-parameter path computes them in Python (C pow is Python's
    float **)."""
    cdef Py_ssize_t k
    cdef double step
    for k in range(b.n):
        step = increment(<cnp.ndarray>steps[k])
        b.neg_step[k] = -(lr / (1 - pow(beta1, step)))
        b.bc2_sqrt[k] = pow(1 - pow(beta2, step), 0.5)


# ---------------------------------------------------------------------------------------------
# the kernels

def foreach_sgd(list params, list grads, list momentum_buffers, double lr, double momentum=0.0,
                double dampening=0.0, double weight_decay=0.0, bint nesterov=False,
                bint maximize=False, bint init_buffers=False):
    """SGD over every parameter at once (torch's rule). momentum_buffers is None without
    momentum; init_buffers: they are new (torch's first step sets them to the gradient)."""
    cdef Hyper h
    h.grad_scale, h.weight_decay, h.neg_lr = (-1.0 if maximize else 1.0), weight_decay, -lr
    h.momentum, h.keep, h.nesterov, h.init = momentum, 1.0 - dampening, nesterov, init_buffers
    lists = [params, grads]
    if momentum_buffers is not None:
        lists.append(momentum_buffers)
    execute(RULE_SGD, lists, &h, "foreach_sgd")


def foreach_adam(list params, list grads, list exp_avgs, list exp_avg_sqs,
                 list max_exp_avg_sqs, list steps, double lr, double beta1, double beta2,
                 double eps, double weight_decay=0.0, bint decoupled=False,
                 bint maximize=False):
    """Adam / AdamW (decoupled) over every parameter at once: increments each one-element step
    counter in `steps` and uses it for that parameter's bias corrections, as adam_step does;
    max_exp_avg_sqs is None unless amsgrad."""
    cdef Hyper h
    h.grad_scale = -1.0 if maximize else 1.0
    h.param_scale = 1 - lr * weight_decay if decoupled else 1.0
    h.weight_decay = 0.0 if decoupled else weight_decay
    h.w1, h.keep, h.beta2, h.c2, h.eps = 1.0 - beta1, 1.0 - (1.0 - beta1), beta2, 1.0 - beta2, eps
    execute(RULE_ADAM, [params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs], &h,
            "foreach_adam", steps, lr, beta1, beta2)


def foreach_adadelta(list params, list grads, list square_avgs, list acc_deltas, list steps,
                     double lr, double rho, double eps, double weight_decay=0.0,
                     bint maximize=False):
    """Adadelta over every parameter at once (torch's rule); each step counter (or None)
    += 1."""
    cdef Hyper h
    h.grad_scale, h.weight_decay, h.neg_lr = (-1.0 if maximize else 1.0), weight_decay, -lr
    h.rho, h.c_rho, h.eps = rho, 1.0 - rho, eps
    execute(RULE_ADADELTA, [params, grads, square_avgs, acc_deltas], &h, "foreach_adadelta",
            steps)


def foreach_rmsprop(list params, list grads, list square_avgs, list momentum_buffers,
                    list grad_avgs, list steps, double lr, double alpha, double eps,
                    double weight_decay=0.0, double momentum=0.0, bint maximize=False):
    """RMSprop over every parameter at once (torch's rule): momentum_buffers is None without
    momentum, grad_avgs None unless centered; each step counter (or None) += 1."""
    cdef Hyper h
    h.grad_scale, h.weight_decay, h.neg_lr = (-1.0 if maximize else 1.0), weight_decay, -lr
    h.rho, h.c_rho, h.eps, h.momentum = alpha, 1.0 - alpha, eps, momentum
    execute(RULE_RMSPROP, [params, grads, square_avgs, momentum_buffers, grad_avgs], &h,
            "foreach_rmsprop", steps)
