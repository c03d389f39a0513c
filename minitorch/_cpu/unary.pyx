# cython: cdivision=True
# (C division semantics, also in MINITORCH_DEBUG builds, as the rest of the elementwise kernels)
"""Unary elementwise CPU kernels: out[i] = op(a[i]) over a compact buffer, for every UnaryOp.

The op is picked once per call and each op runs its own tight loop, so gcc vectorizes most of
them; the special functions (ERFINV and after) come from minitorch/_kernels/special_math.h,
which the CUDA kernels share.
"""
cimport numpy as cnp
from cython.parallel cimport prange
from libc.math cimport (INFINITY, M_PI, NAN, acos, acosf, acosh, acoshf, asin, asinf, asinh,
                        asinhf, atan, atan2, atan2f, atanf, atanh, atanhf, ceil, ceilf, copysign,
                        copysignf, cos, cosf, cosh, coshf, erfc, erfcf, exp, exp2, exp2f, fabs,
                        fabsf, floor, floorf, fmod, fmodf, hypot, hypotf, lgamma, lgammaf, log,
                        log10, log10f, log2, log2f, nextafter, nextafterf, pow, powf, rint, rintf,
                        sin, sinf, sinh, sinhf, sqrt, sqrtf, tan, tanf, trunc, truncf)
from libc.stdint cimport int64_t, uint8_t, uint64_t
from libc.string cimport memmove

from minitorch._cpu.common cimport (buffer_dtype, chunk_start, DT_BOOL, DT_F32, DT_F64, DT_I64,
                                      op_name, threads_for)
from minitorch._cpu.opcodes cimport *
from minitorch._cpu.special_math cimport *
from minitorch._cpu.vector_math cimport (r_erf, r_exp, r_gelu, r_sigmoid, r_silu, real, vexp,
                                         vexpf, vexpm1, vexpm1f, vlog, vlog1p, vlog1pf, vlogf,
                                         vtanh, vtanhf)
from minitorch.opcodes import UnaryOp

cnp.import_array()

DTYPE_NAMES = ("float32", "float64", "int64", "bool")

ctypedef fused anyt:
    float
    double
    int64_t
    uint8_t


cdef inline real r_sign(real x) noexcept nogil:
    """torch.sign: (0 < x) - (x < 0), so sign(NaN) = 0 and sign(-0.0) = 0."""
    return <real>(x > 0) - <real>(x < 0)


cdef inline real r_digamma_positive(real x) noexcept nogil:
    """digamma for x > 0 (or NaN): recurrence up to 10, then the asymptotic series."""
    cdef real one = 1, result = 0, z = 0
    while x < 10:
        result -= one / x
        x += one
    if x == 10:
        return result + <real>2.25175258906672110764
    if x < <real>1.0e17:
        z = one / (x * x)
        z *= (((((<real>8.33333333333333333333E-2 * z - <real>2.10927960927960927961E-2) * z
                 + <real>7.57575757575757575758E-3) * z - <real>4.16666666666666666667E-3) * z
               + <real>3.96825396825396825397E-3) * z - <real>8.33333333333333333333E-3) * z \
            + <real>8.33333333333333333333E-2
    return result + (vlogf(x) if real is float else vlog(x)) - <real>0.5 / x - z


cdef inline real r_digamma(real x) noexcept nogil:
    """torch's calc_digamma: ±0 gives ∓inf, negative integers (and -inf) NaN, other negatives
    the reflection digamma(1 - x) - pi / tan(pi * x)."""
    cdef real one = 1, whole
    cdef double frac
    if x == 0:
        return copysign(INFINITY, -x)
    if x < 0:
        whole = truncf(x) if real is float else trunc(x)
        if x == whole:
            return NAN
        frac = x - whole            # tan(pi * frac): pi * x itself would lose precision
        return r_digamma_positive(one - x) - <real>(M_PI / tan(M_PI * frac))
    return r_digamma_positive(x)


cdef inline real r_trigamma(real x) noexcept nogil:
    """torch's calc_trigamma: reflection below 1/2, six recurrence steps, asymptotic series."""
    cdef real one = 1, sign = 1, result = 0, s, ixx
    cdef real pi = <real>M_PI
    cdef int i
    if x < <real>0.5:
        sign = -one
        s = sinf(pi * x) if real is float else sin(pi * x)
        result -= pi * pi / (s * s)
        x = one - x
    for i in range(6):
        result += one / (x * x)
        x += one
    ixx = one / (x * x)
    result += (one + one / (2 * x) + ixx * (one / 6 - ixx * (one / 30 - ixx * (one / 42)))) / x
    return sign * result


cdef void unary_real(int op, const real* a, real* o, Py_ssize_t n) noexcept nogil:
    """Float unary ops: one loop per op so each is a tight (mostly vectorized) pass."""
    cdef Py_ssize_t i
    cdef real x, one = 1           # typed: a bare literal would make Cython compute in double
    if op == UNARY_IDENTITY:
        memmove(o, a, n * sizeof(real))
    elif op == UNARY_NEG:
        for i in range(n):
            o[i] = -a[i]
    elif op == UNARY_ABS:
        for i in range(n):
            o[i] = fabsf(a[i]) if real is float else fabs(a[i])
    elif op == UNARY_SIGN:
        for i in range(n):
            o[i] = r_sign(a[i])
    elif op == UNARY_EXP:
        for i in range(n):
            o[i] = r_exp(a[i])
    elif op == UNARY_LOG:
        for i in range(n):
            o[i] = vlogf(a[i]) if real is float else vlog(a[i])
    elif op == UNARY_LOG1P:
        for i in range(n):
            o[i] = vlog1pf(a[i]) if real is float else vlog1p(a[i])
    elif op == UNARY_EXPM1:
        for i in range(n):
            o[i] = vexpm1f(a[i]) if real is float else vexpm1(a[i])
    elif op == UNARY_SQRT:
        for i in range(n):
            o[i] = sqrtf(a[i]) if real is float else sqrt(a[i])
    elif op == UNARY_RSQRT:
        for i in range(n):
            o[i] = one / (sqrtf(a[i]) if real is float else sqrt(a[i]))
    elif op == UNARY_SIN:
        for i in range(n):
            o[i] = sinf(a[i]) if real is float else sin(a[i])
    elif op == UNARY_COS:
        for i in range(n):
            o[i] = cosf(a[i]) if real is float else cos(a[i])
    elif op == UNARY_TANH:
        for i in range(n):
            o[i] = vtanhf(a[i]) if real is float else vtanh(a[i])
    elif op == UNARY_SIGMOID:
        for i in range(n):
            o[i] = r_sigmoid(a[i])
    elif op == UNARY_RELU:
        for i in range(n):          # NaN < 0 is false, so NaN passes through as in torch
            x = a[i]
            o[i] = 0 if x < 0 else x
    elif op == UNARY_RECIPROCAL:
        for i in range(n):
            o[i] = one / a[i]
    elif op == UNARY_SQUARE:
        for i in range(n):
            o[i] = a[i] * a[i]
    elif op == UNARY_FLOOR:
        for i in range(n):
            o[i] = floorf(a[i]) if real is float else floor(a[i])
    elif op == UNARY_CEIL:
        for i in range(n):
            o[i] = ceilf(a[i]) if real is float else ceil(a[i])
    elif op == UNARY_ROUND:
        for i in range(n):          # rint in the default rounding mode: half to even
            o[i] = rintf(a[i]) if real is float else rint(a[i])
    elif op == UNARY_TRUNC:
        for i in range(n):
            o[i] = truncf(a[i]) if real is float else trunc(a[i])
    elif op == UNARY_ERF:
        for i in range(n):
            o[i] = r_erf(a[i])
    elif op == UNARY_GELU:
        for i in range(n):
            o[i] = r_gelu(a[i])
    elif op == UNARY_SILU:
        for i in range(n):
            o[i] = r_silu(a[i])
    else:
        unary_real_math(op, a, o, n)


cdef void unary_real_math(int op, const real* a, real* o, Py_ssize_t n) noexcept nogil:
    """The libm-backed float ops SINH..FRAC (kept apart so unary_real stays readable)."""
    cdef Py_ssize_t i
    if op == UNARY_SINH:
        for i in range(n):
            o[i] = sinhf(a[i]) if real is float else sinh(a[i])
    elif op == UNARY_COSH:
        for i in range(n):
            o[i] = coshf(a[i]) if real is float else cosh(a[i])
    elif op == UNARY_TAN:
        for i in range(n):
            o[i] = tanf(a[i]) if real is float else tan(a[i])
    elif op == UNARY_ASIN:
        for i in range(n):
            o[i] = asinf(a[i]) if real is float else asin(a[i])
    elif op == UNARY_ACOS:
        for i in range(n):
            o[i] = acosf(a[i]) if real is float else acos(a[i])
    elif op == UNARY_ATAN:
        for i in range(n):
            o[i] = atanf(a[i]) if real is float else atan(a[i])
    elif op == UNARY_ASINH:
        for i in range(n):
            o[i] = asinhf(a[i]) if real is float else asinh(a[i])
    elif op == UNARY_ACOSH:
        for i in range(n):
            o[i] = acoshf(a[i]) if real is float else acosh(a[i])
    elif op == UNARY_ATANH:
        for i in range(n):
            o[i] = atanhf(a[i]) if real is float else atanh(a[i])
    elif op == UNARY_LOG2:
        for i in range(n):
            o[i] = log2f(a[i]) if real is float else log2(a[i])
    elif op == UNARY_LOG10:
        for i in range(n):
            o[i] = log10f(a[i]) if real is float else log10(a[i])
    elif op == UNARY_EXP2:
        for i in range(n):
            o[i] = exp2f(a[i]) if real is float else exp2(a[i])
    elif op == UNARY_ERFC:
        for i in range(n):
            o[i] = erfcf(a[i]) if real is float else erfc(a[i])
    elif op == UNARY_LGAMMA:
        for i in range(n):
            o[i] = lgammaf(a[i]) if real is float else lgamma(a[i])
    elif op == UNARY_DIGAMMA:
        for i in range(n):
            o[i] = r_digamma(a[i])
    elif op == UNARY_TRIGAMMA:
        for i in range(n):
            o[i] = r_trigamma(a[i])
    elif op == UNARY_FRAC:
        for i in range(n):          # inf - inf = NaN, as in torch
            o[i] = a[i] - (truncf(a[i]) if real is float else trunc(a[i]))
    else:
        unary_real_special(op, a, o, n)


cdef void unary_real_special(int op, const real* a, real* o, Py_ssize_t n) noexcept nogil:
    """ERFINV..BESSEL_J1 and SPHERICAL_BESSEL_J0, computed in double (special_math.h)."""
    cdef Py_ssize_t i
    if op == UNARY_ERFINV:
        for i in range(n):
            o[i] = <real>sp_erfinv(a[i])
    elif op == UNARY_I0:
        for i in range(n):
            o[i] = <real>sp_i0(a[i])
    elif op == UNARY_I0E:
        for i in range(n):
            o[i] = <real>sp_i0e(a[i])
    elif op == UNARY_I1:
        for i in range(n):
            o[i] = <real>sp_i1(a[i])
    elif op == UNARY_I1E:
        for i in range(n):
            o[i] = <real>sp_i1e(a[i])
    elif op == UNARY_NDTRI:
        for i in range(n):
            o[i] = <real>sp_ndtri(a[i])
    elif op == UNARY_LOG_NDTR:
        for i in range(n):
            o[i] = <real>sp_log_ndtr(a[i])
    elif op == UNARY_ERFCX:
        for i in range(n):
            o[i] = <real>sp_erfcx(a[i])
    elif op == UNARY_BESSEL_J0:
        for i in range(n):
            o[i] = <real>sp_bessel_j0(a[i])
    elif op == UNARY_BESSEL_J1:
        for i in range(n):
            o[i] = <real>sp_bessel_j1(a[i])
    elif op == UNARY_SPHERICAL_BESSEL_J0:
        for i in range(n):
            o[i] = <real>sp_spherical_bessel_j0(a[i])


cdef void unary_int(int op, const int64_t* a, int64_t* o, Py_ssize_t n) noexcept nogil:
    """int64 unary ops; arithmetic wraps (done in uint64, where overflow is defined)."""
    cdef Py_ssize_t i
    cdef int64_t x
    if op == UNARY_IDENTITY:
        memmove(o, a, n * sizeof(int64_t))
    elif op == UNARY_NEG:
        for i in range(n):
            o[i] = <int64_t>(0 - <uint64_t>a[i])
    elif op == UNARY_ABS:
        for i in range(n):
            x = a[i]
            o[i] = <int64_t>(0 - <uint64_t>x) if x < 0 else x
    elif op == UNARY_SIGN:
        for i in range(n):
            o[i] = <int64_t>(a[i] > 0) - <int64_t>(a[i] < 0)
    elif op == UNARY_SQUARE:
        for i in range(n):
            o[i] = <int64_t>(<uint64_t>a[i] * <uint64_t>a[i])
    elif op == UNARY_RELU:
        for i in range(n):
            x = a[i]
            o[i] = 0 if x < 0 else x
    elif op == UNARY_BITWISE_NOT:
        for i in range(n):
            o[i] = ~a[i]


cdef void unary_pred(int op, const anyt* a, uint8_t* o, Py_ssize_t n) noexcept nogil:
    """Predicates writing bool; for integer inputs isnan/isinf are false and isfinite true."""
    cdef Py_ssize_t i
    if op == UNARY_LOGICAL_NOT:
        for i in range(n):
            o[i] = a[i] == 0
    elif op == UNARY_ISNAN:
        for i in range(n):
            if anyt is float or anyt is double:
                o[i] = a[i] != a[i]
            else:
                o[i] = 0
    elif op == UNARY_ISINF:
        for i in range(n):
            if anyt is float:
                o[i] = fabsf(a[i]) == INFINITY
            elif anyt is double:
                o[i] = fabs(a[i]) == INFINITY
            else:
                o[i] = 0
    elif op == UNARY_ISFINITE:
        for i in range(n):
            o[i] = a[i] - a[i] == 0     # inf - inf and NaN - NaN are NaN


cdef void unary_chunk(int op, int dt, const char* a, char* o, Py_ssize_t lo,
                      Py_ssize_t hi) noexcept nogil:
    """Elements [lo, hi) of one unary call, dispatched on dtype."""
    cdef Py_ssize_t n = hi - lo
    if unary_is_pred(op):
        if dt == DT_F32:
            unary_pred(op, <const float*>a + lo, <uint8_t*>o + lo, n)
        elif dt == DT_F64:
            unary_pred(op, <const double*>a + lo, <uint8_t*>o + lo, n)
        elif dt == DT_I64:
            unary_pred(op, <const int64_t*>a + lo, <uint8_t*>o + lo, n)
        else:
            unary_pred(op, <const uint8_t*>a + lo, <uint8_t*>o + lo, n)
    elif dt == DT_F32:
        unary_real(op, <const float*>a + lo, <float*>o + lo, n)
    elif dt == DT_F64:
        unary_real(op, <const double*>a + lo, <double*>o + lo, n)
    elif dt == DT_I64:
        unary_int(op, <const int64_t*>a + lo, <int64_t*>o + lo, n)
    else:
        memmove(<uint8_t*>o + lo, <const uint8_t*>a + lo, n)


def unary(int op, cnp.ndarray a, cnp.ndarray out):
    """out[i] = op(a[i]) over compact a; ISNAN, ISINF, ISFINITE and LOGICAL_NOT write bool."""
    cdef int dt = buffer_dtype(a, "unary")
    cdef int dto = buffer_dtype(out, "unary", True)
    cdef Py_ssize_t n = cnp.PyArray_SIZE(a), t
    cdef int nt
    if not unary_supported(op, dt):
        raise TypeError(f"unary op {op_name(UnaryOp, op)} is not supported for dtype "
                        f"{DTYPE_NAMES[dt]}")
    if dto != (DT_BOOL if unary_is_pred(op) else dt):
        raise TypeError(f"unary op {op_name(UnaryOp, op)} on {DTYPE_NAMES[dt]} cannot write "
                        f"{DTYPE_NAMES[dto]}")
    if cnp.PyArray_SIZE(out) != n:
        raise ValueError(f"unary: a has {n} elements but out has {cnp.PyArray_SIZE(out)}")
    cdef const char* pa = <const char*>cnp.PyArray_DATA(a)
    cdef char* po = <char*>cnp.PyArray_DATA(out)
    with nogil:
        nt = threads_for(n)
        if nt == 1:
            unary_chunk(op, dt, pa, po, 0, n)
        else:
            for t in prange(nt, num_threads=nt, schedule="static"):
                unary_chunk(op, dt, pa, po, chunk_start(n, nt, t), chunk_start(n, nt, t + 1))
