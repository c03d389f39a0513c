# cython: cdivision=True
"""Complex arithmetic on interleaved (re, im) pairs of float32 / float64.

A complex buffer (numpy complex64 / complex128) reaches these kernels viewed as its real pairs:
element i is a[2i] + a[2i+1]·j. Only the ops whose math mixes the two parts live here
(multiplication, division, pow, abs, angle, exp, sgn, polar and the transcendental functions);
addition, subtraction, negation, sums and every data movement run the real kernels over the
pairs (see minitorch/ndarray.py). The formulas are c10::complex's (torch's): Smith's scaled
division, hypot for abs, and libm's C99 complex functions (clog, csqrt, csin, ctanh, casin,
catanh, cpow ...), which torch's CPU kernels reach through std::complex, so branch cuts,
signed zeros and infinities are C99's; log1p and expm1 are c10's own formulas. A pair is
copied part by part into a C99 `double complex` for libm (a complex64 one widened) and the
result rounded back.
"""
cimport numpy as cnp
from cython.parallel cimport prange
from libc.math cimport (atan2, atan2f, cos, cosf, exp, expf, expm1, expm1f, fabs, fabsf, hypot,
                        hypotf, sin, sinf)

from minitorch._cpu.common cimport threads_for

cnp.import_array()

cdef extern from "<complex.h>" nogil:
    double complex clog(double complex)
    double complex cexp(double complex)
    double complex csqrt(double complex)
    double complex csin(double complex)
    double complex ccos(double complex)
    double complex ctan(double complex)
    double complex csinh(double complex)
    double complex ccosh(double complex)
    double complex ctanh(double complex)
    double complex casin(double complex)
    double complex cacos(double complex)
    double complex catan(double complex)
    double complex casinh(double complex)
    double complex cacosh(double complex)
    double complex catanh(double complex)
    double complex cpow(double complex, double complex)
    float complex cpowf(float complex, float complex)

ctypedef fused real_t:
    float
    double

# op codes (ndarray.py names them through COMPLEX_BINARY / COMPLEX_UNARY below)
cdef enum:
    MUL = 0
    DIV = 1
    POW = 2         # a ** b: C99's cpow
    ABS = 0         # complex -> real
    ANGLE = 1       # complex -> real
    EXP = 2         # complex -> complex from here on
    SGN = 3         # z / |z|, 0 at 0
    RECIPROCAL = 4  # 1 / z
    LOG = 5
    LOG2 = 6        # log z / log 2, as std::log2 of a complex
    LOG10 = 7       # log z / log 10
    LOG1P = 8
    SQRT = 9
    RSQRT = 10      # 1 / sqrt z
    SIN = 11
    COS = 12
    TAN = 13
    SINH = 14
    COSH = 15
    TANH = 16
    SIGMOID = 17    # 1 / (1 + exp(-z))
    EXP2 = 18       # exp(z log 2)
    EXPM1 = 19
    ASIN = 20
    ACOS = 21
    ATAN = 22
    ASINH = 23
    ACOSH = 24
    ATANH = 25
    LAST_UNARY = 25
    ACOS_C99 = 26   # internal: complex64's acos (torch's float kernel is std::acos, C99's cacos)

COMPLEX_BINARY = {"mul": MUL, "div": DIV, "pow": POW}
COMPLEX_UNARY = {"abs": ABS, "angle": ANGLE, "exp": EXP, "sgn": SGN, "reciprocal": RECIPROCAL,
                 "log": LOG, "log2": LOG2, "log10": LOG10, "log1p": LOG1P, "sqrt": SQRT,
                 "rsqrt": RSQRT, "sin": SIN, "cos": COS, "tan": TAN, "sinh": SINH, "cosh": COSH,
                 "tanh": TANH, "sigmoid": SIGMOID, "exp2": EXP2, "expm1": EXPM1, "asin": ASIN,
                 "acos": ACOS, "atan": ATAN, "asinh": ASINH, "acosh": ACOSH, "atanh": ATANH}


cdef inline void divide(real_t a, real_t b, real_t c, real_t d, real_t* re, real_t* im) noexcept nogil:
    """(a + bj) / (c + dj), c10::complex's scaled (Smith's) division."""
    cdef real_t rat, scl
    cdef real_t abs_c = c if c >= 0 else -c
    cdef real_t abs_d = d if d >= 0 else -d
    if abs_c >= abs_d:
        if abs_c == 0 and abs_d == 0:       # a complex inf or nan, as torch gives
            re[0] = a / abs_c
            im[0] = b / abs_d
        else:
            rat = d / c
            scl = 1 / (c + d * rat)
            re[0] = (a + b * rat) * scl
            im[0] = (b - a * rat) * scl
    else:
        rat = c / d
        scl = 1 / (d + c * rat)
        re[0] = (a * rat + b) * scl
        im[0] = (b * rat - a) * scl


def complex_binary(int op, real_t[::1] a, real_t[::1] b, real_t[::1] out):
    """out = a op b elementwise over compact pair buffers of one length (MUL, DIV)."""
    cdef Py_ssize_t n = out.shape[0] // 2, i
    cdef real_t ar, ai, br, bi
    cdef real_t* pa
    cdef real_t* pb
    cdef real_t* po
    if a.shape[0] != out.shape[0] or b.shape[0] != out.shape[0] or out.shape[0] % 2:
        raise ValueError(f"complex_binary needs pair buffers of one length, got {a.shape[0]}, "
                         f"{b.shape[0]} and {out.shape[0]}")
    if op < MUL or op > POW:
        raise ValueError(f"complex_binary: unknown op {op}")
    if n == 0:
        return
    with nogil:
        if op == MUL:       # a loop of its own over raw pointers, which gcc vectorises
            pa = &a[0]; pb = &b[0]; po = &out[0]
            for i in prange(n, schedule="static", num_threads=threads_for(2 * n)):
                ar = pa[2 * i]; ai = pa[2 * i + 1]; br = pb[2 * i]; bi = pb[2 * i + 1]
                po[2 * i] = ar * br - ai * bi
                po[2 * i + 1] = ar * bi + ai * br
        elif op == DIV:
            for i in prange(n, schedule="static", num_threads=threads_for(2 * n)):
                divide(a[2 * i], a[2 * i + 1], b[2 * i], b[2 * i + 1], &out[2 * i],
                       &out[2 * i + 1])
        else:
            for i in prange(n, schedule="static", num_threads=threads_for(2 * n)):
                power(&a[2 * i], &b[2 * i], &out[2 * i])


cdef inline real_t r_hypot(real_t x, real_t y) noexcept nogil:
    if real_t is float:
        return hypotf(x, y)
    return hypot(x, y)


cdef inline real_t r_atan2(real_t y, real_t x) noexcept nogil:
    if real_t is float:
        return atan2f(y, x)
    return atan2(y, x)


cdef inline real_t r_exp(real_t x) noexcept nogil:
    if real_t is float:
        return expf(x)
    return exp(x)


cdef inline real_t r_cos(real_t x) noexcept nogil:
    if real_t is float:
        return cosf(x)
    return cos(x)


cdef inline real_t r_sin(real_t x) noexcept nogil:
    if real_t is float:
        return sinf(x)
    return sin(x)


cdef inline void power(const real_t* a, const real_t* b, real_t* out) noexcept nogil:
    """out = a ** b (pairs), C99's cpow: exp(b log a)."""
    if real_t is float:
        (<float complex*>out)[0] = cpowf((<float complex*>a)[0], (<float complex*>b)[0])
    else:
        (<double complex*>out)[0] = cpow((<double complex*>a)[0], (<double complex*>b)[0])


cdef inline double complex libm_op(int op, double complex z) noexcept nogil:
    if op == LOG:
        return clog(z)
    if op == SQRT:
        return csqrt(z)
    if op == SIN:
        return csin(z)
    if op == COS:
        return ccos(z)
    if op == TAN:
        return ctan(z)
    if op == SINH:
        return csinh(z)
    if op == COSH:
        return ccosh(z)
    if op == TANH:
        return ctanh(z)
    if op == ASIN:
        return casin(z)
    if op == ACOS_C99:
        return cacos(z)
    if op == ACOS:      # torch's double kernel: π/2 - asin z (acos 0 is π/2 + 0j, C99's - 0j)
        z = casin(z)
        (<double*>&z)[0] = 1.5707963267948966 - (<double*>&z)[0]
        (<double*>&z)[1] = 0.0 - (<double*>&z)[1]
        return z
    if op == ATAN:
        return catan(z)
    if op == ASINH:
        return casinh(z)
    if op == ACOSH:
        return cacosh(z)
    if op == ATANH:
        return catanh(z)
    return cexp(z)


cdef inline void libm_unary(int op, const real_t* a, real_t* out) noexcept nogil:
    """out = op(a) for the ops that are libm's C99 complex functions. The pair is copied part
    by part into a double complex (a complex64 one widened: signed zeros, infinities and NaN
    survive, where building it as re + im·I would not) and the result rounded back."""
    cdef double complex z
    cdef double* parts = <double*>&z
    parts[0] = a[0]
    parts[1] = a[1]
    z = libm_op(ACOS_C99 if real_t is float and op == ACOS else op, z)
    out[0] = <real_t>parts[0]
    out[1] = <real_t>parts[1]


cdef inline real_t r_expm1(real_t x) noexcept nogil:
    if real_t is float:
        return expm1f(x)
    return expm1(x)


cdef inline void log1p_pair(const real_t* z, real_t* out) noexcept nogil:
    """log(1 + z) by c10's CPU formula (numpy's): log(u) · z / (u - 1) with u = 1 + z, which
    corrects the rounding of 1 + z."""
    cdef real_t u[2]
    cdef real_t log_u[2]
    cdef real_t q[2]
    u[0] = z[0] + 1; u[1] = z[1]
    if u[0] == 1 and u[1] == 0:
        out[0] = z[0]; out[1] = z[1]
        return
    libm_unary(LOG, u, log_u)
    if u[0] - 1 == z[0] and u[1] == z[1]:       # (false for a NaN part, as in c10)
        out[0] = log_u[0]; out[1] = log_u[1]
        return
    divide(z[0], z[1], u[0] - 1, u[1], &q[0], &q[1])
    out[0] = log_u[0] * q[0] - log_u[1] * q[1]
    out[1] = log_u[0] * q[1] + log_u[1] * q[0]


cdef inline void expm1_pair(real_t x, real_t y, real_t* out) noexcept nogil:
    """exp(z) - 1 by c10's formula: expm1(x) cos y - 2 sin²(y / 2) + j e^x sin y."""
    cdef real_t half_sin = r_sin(y / 2)
    out[0] = r_expm1(x) * r_cos(y) - 2 * half_sin * half_sin
    out[1] = r_exp(x) * r_sin(y)


cdef inline void transcendental(int op, const real_t* a, real_t* out) noexcept nogil:
    """The complex -> complex ops from LOG on (op >= LOG or op == EXP2)."""
    cdef real_t t[2]
    cdef real_t scale
    if op == LOG2 or op == LOG10:
        libm_unary(LOG, a, out)
        scale = <real_t>(0.6931471805599453 if op == LOG2 else 2.302585092994046)
        out[0] = out[0] / scale
        out[1] = out[1] / scale
    elif op == LOG1P:
        log1p_pair(a, out)
    elif op == EXPM1:
        expm1_pair(a[0], a[1], out)
    elif op == RSQRT:
        libm_unary(SQRT, a, t)
        divide(<real_t>1, <real_t>0, t[0], t[1], &out[0], &out[1])
    elif op == SIGMOID:
        t[0] = -a[0]; t[1] = -a[1]
        libm_unary(EXP, t, t)
        divide(<real_t>1, <real_t>0, 1 + t[0], t[1], &out[0], &out[1])
    elif op == EXP2:
        t[0] = a[0] * <real_t>0.6931471805599453; t[1] = a[1] * <real_t>0.6931471805599453
        libm_unary(EXP, t, out)
    else:
        libm_unary(op, a, out)


def complex_unary(int op, real_t[::1] a, real_t[::1] out):
    """out[i] = op(a[i]) over a compact pair buffer: ABS and ANGLE write one real per pair, the
    others a pair."""
    cdef Py_ssize_t n = a.shape[0] // 2, i
    cdef real_t re, im, m
    cdef bint to_real = op == ABS or op == ANGLE
    if op < ABS or op > LAST_UNARY:
        raise ValueError(f"complex_unary: unknown op {op}")
    if a.shape[0] % 2 or out.shape[0] != (n if to_real else 2 * n):
        raise ValueError(f"complex_unary: buffers of {a.shape[0]} and {out.shape[0]} values")
    with nogil:
        for i in prange(n, schedule="static", num_threads=threads_for(2 * n)):
            re = a[2 * i]; im = a[2 * i + 1]
            if op == ABS:
                out[i] = r_hypot(re, im)
            elif op == ANGLE:
                out[i] = r_atan2(im, re)
            elif op == EXP:
                libm_unary(EXP, &a[2 * i], &out[2 * i])
            elif op == SGN:
                m = r_hypot(re, im)
                if m == 0:
                    out[2 * i] = 0
                    out[2 * i + 1] = 0
                else:
                    out[2 * i] = re / m
                    out[2 * i + 1] = im / m
            elif op == RECIPROCAL:
                divide(<real_t>1, <real_t>0, re, im, &out[2 * i], &out[2 * i + 1])
            else:
                transcendental(op, &a[2 * i], &out[2 * i])


def complex_polar(real_t[::1] r, real_t[::1] theta, real_t[::1] out):
    """out[i] = r[i]·(cos θ[i] + j sin θ[i]) from compact real buffers of one length."""
    cdef Py_ssize_t n = r.shape[0], i
    if theta.shape[0] != n or out.shape[0] != 2 * n:
        raise ValueError(f"complex_polar: buffers of {n}, {theta.shape[0]} and {out.shape[0]} "
                         "values")
    with nogil:
        for i in prange(n, schedule="static", num_threads=threads_for(2 * n)):
            out[2 * i] = r[i] * r_cos(theta[i])
            out[2 * i + 1] = r[i] * r_sin(theta[i])


cdef enum:
    STRIDED_MAX_DIMS = 16


cdef inline void mul_row(const real_t* a, const real_t* b, real_t* out,
                         Py_ssize_t n) noexcept nogil:
    """n products of contiguous pairs (a row whose operands both have unit stride)."""
    cdef Py_ssize_t i
    cdef real_t ar, ai, br, bi
    for i in range(n):
        ar = a[2 * i]; ai = a[2 * i + 1]; br = b[2 * i]; bi = b[2 * i + 1]
        out[2 * i] = ar * br - ai * bi
        out[2 * i + 1] = ar * bi + ai * br


def complex_binary_strided(int op, real_t[::1] a, real_t[::1] b, real_t[::1] out, shape,
                           a_strides, Py_ssize_t a_offset, b_strides, Py_ssize_t b_offset):
    """out (compact, `shape`) = a op b with both operands read through their strides (counted
    in complex elements, 0 for a broadcast axis): a broadcast operand is never materialised.
    Rows of the last axis run in parallel; NDArray checks the views."""
    cdef Py_ssize_t dims[STRIDED_MAX_DIMS]
    cdef Py_ssize_t sa[STRIDED_MAX_DIMS]
    cdef Py_ssize_t sb[STRIDED_MAX_DIMS]
    cdef int nd = len(shape), d
    cdef Py_ssize_t rows = 1, inner, row, rest, i, ia, ib, pa_off, pb_off, coord
    cdef real_t ar, ai, br, bi
    cdef real_t* pa
    cdef real_t* pb
    cdef real_t* po
    if nd > STRIDED_MAX_DIMS or op < MUL or op > POW:
        raise ValueError(f"complex_binary_strided: {nd} dims (at most {STRIDED_MAX_DIMS}), op "
                         f"{op}")
    if nd == 0:
        dims[0] = 1; sa[0] = 0; sb[0] = 0; nd = 1
    else:
        for d in range(nd):
            dims[d] = shape[d]; sa[d] = a_strides[d]; sb[d] = b_strides[d]
    for d in range(nd - 1):
        rows *= dims[d]
    inner = dims[nd - 1]
    if out.shape[0] != 2 * rows * inner:
        raise ValueError(f"complex_binary_strided: out holds {out.shape[0]} floats, not "
                         f"{2 * rows * inner}")
    if rows * inner == 0:
        return
    pa = &a[0]; pb = &b[0]; po = &out[0]
    with nogil:
        for row in prange(rows, schedule="static", num_threads=threads_for(2 * rows * inner)):
            rest = row
            pa_off = a_offset
            pb_off = b_offset
            for d in range(nd - 2, -1, -1):     # the row's coordinates, innermost outer dim first
                coord = rest % dims[d]
                rest = rest // dims[d]
                pa_off = pa_off + coord * sa[d]
                pb_off = pb_off + coord * sb[d]
            if op == MUL and sa[nd - 1] == 1 and sb[nd - 1] == 1:
                mul_row(pa + 2 * pa_off, pb + 2 * pb_off, po + 2 * row * inner, inner)
                continue
            for i in range(inner):
                ia = 2 * (pa_off + i * sa[nd - 1])
                ib = 2 * (pb_off + i * sb[nd - 1])
                ar = pa[ia]; ai = pa[ia + 1]; br = pb[ib]; bi = pb[ib + 1]
                if op == MUL:
                    po[2 * (row * inner + i)] = ar * br - ai * bi
                    po[2 * (row * inner + i) + 1] = ar * bi + ai * br
                elif op == DIV:
                    divide(ar, ai, br, bi, &po[2 * (row * inner + i)],
                           &po[2 * (row * inner + i) + 1])
                else:
                    power(pa + ia, pb + ib, &po[2 * (row * inner + i)])
