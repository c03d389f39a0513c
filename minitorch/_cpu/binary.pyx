# cython: cdivision=True
# (C division semantics are relied on below, also in MINITORCH_DEBUG builds)
"""Binary elementwise CPU kernels and where: out = op(a, b) or a-if-cond-else-b, every operand
read through its own strides (a broadcast operand has stride 0 and is never materialised).

Each kernel validates its arguments with the GIL held, then runs a `noexcept nogil` loop chosen
once per call (op and dtype), so the element loops are branch-free and gcc vectorizes them.
ZETA, IGAMMA and IGAMMAC come from minitorch/_kernels/special_math.h (shared with CUDA).
"""
cimport numpy as cnp
from cython.parallel cimport prange
from libc.math cimport (INFINITY, M_PI, NAN, acos, acosf, acosh, acoshf, asin, asinf, asinh,
                        asinhf, atan, atan2, atan2f, atanf, atanh, atanhf, ceil, ceilf, copysign,
                        copysignf, cos, cosf, cosh, coshf, erf, erfc, erfcf, erff, exp, exp2,
                        exp2f, expm1, expm1f, fabs, fabsf, floor, floorf, fmod, fmodf, hypot,
                        hypotf, lgamma, lgammaf, log, log10, log10f, log1p, log1pf, log2, log2f,
                        nextafter, nextafterf, pow, powf, rint, rintf, sin, sinf, sinh, sinhf,
                        sqrt, sqrtf, tan, tanf, trunc, truncf)
from libc.stdint cimport int64_t, uint8_t, uint64_t

from minitorch._cpu.common cimport (buffer_dtype, chunk_start, collapse_dims, DT_BOOL, DT_F32,
                                      DT_F64, DT_I64, load_dims, load_strides, MAX_DIMS, op_name,
                                      shape_size, threads_for, unravel_offset)
from minitorch._cpu.opcodes cimport *
from minitorch._cpu.special_math cimport sp_igamma, sp_igammac, sp_zeta
from minitorch._cpu.vector_math cimport r_exp, r_gelu_slope, r_silu_slope, real, vlog, vlogf
from minitorch.opcodes import BinaryOp

cnp.import_array()


cdef enum:
    # error flags raised by the nogil loops (bit flags so threads can OR them together)
    ERR_ZERO_DIV = 1
    ERR_NEG_POW = 2

DTYPE_NAMES = ("float32", "float64", "int64", "bool")

ctypedef fused anyt:
    float
    double
    int64_t
    uint8_t


cdef int check_view(cnp.ndarray buf, int nd, const Py_ssize_t* shape, const Py_ssize_t* strides,
                    Py_ssize_t offset, str name) except -1:
    """Raise IndexError unless every element of a non-empty strided view lies inside buf."""
    cdef Py_ssize_t lo = offset, hi = offset, ext
    cdef int d
    for d in range(nd):
        ext = (shape[d] - 1) * strides[d]
        if ext < 0:
            lo += ext
        else:
            hi += ext
    if lo < 0 or hi >= cnp.PyArray_SIZE(buf):
        raise IndexError(f"{name}: strided view touches elements [{lo}, {hi}] of a buffer of "
                         f"{cnp.PyArray_SIZE(buf)} elements")
    return 0


cdef int check_out(cnp.ndarray out, Py_ssize_t size) except -1:
    if cnp.PyArray_SIZE(out) < size:
        raise ValueError(f"out holds {cnp.PyArray_SIZE(out)} elements, the result needs {size}")
    return 0


cdef inline int64_t gcd_int(int64_t x, int64_t y) noexcept nogil:
    """Euclid on |x|, |y| (|INT64_MIN| wraps to itself, as in torch)."""
    cdef int64_t t
    x = <int64_t>(0 - <uint64_t>x) if x < 0 else x
    y = <int64_t>(0 - <uint64_t>y) if y < 0 else y
    while x != 0:
        t = x
        x = y % x
        y = t
    return y


cdef inline int64_t lcm_int(int64_t x, int64_t y) noexcept nogil:
    """|x / gcd * y|, 0 when both are 0; the product wraps like torch's."""
    cdef int64_t g = gcd_int(x, y), r
    if g == 0:
        return 0
    r = <int64_t>(<uint64_t>(x // g) * <uint64_t>y)
    return <int64_t>(0 - <uint64_t>r) if r < 0 else r


# ---------------------------------------------------------------------------------------------
# binary: per-element op functions, one specialised row loop per (op, dtype), and the
# dispatchers that pick the loop once per row.
# ---------------------------------------------------------------------------------------------

cdef inline real floordiv_real(real x, real y) noexcept nogil:
    """floor(x / y) computed like Python/numpy/torch (via fmod, exact at the boundaries)."""
    cdef real mod, div, fl, one = 1
    if y == 0:
        return x / y
    mod = fmodf(x, y) if real is float else fmod(x, y)
    div = (x - mod) / y
    if mod != 0 and ((y < 0) != (mod < 0)):
        div -= one
    if div != 0:
        fl = floorf(div) if real is float else floor(div)
        if div - fl > 0.5:
            fl += one
        return fl
    return copysignf(0, x / y) if real is float else copysign(0, x / y)


cdef inline real remainder_real(real x, real y) noexcept nogil:
    """Python-style modulo: the result takes the divisor's sign (torch.remainder); a zero
    keeps fmod's sign (the dividend's), as in torch."""
    cdef real mod = fmodf(x, y) if real is float else fmod(x, y)
    if mod != 0 and (y < 0) != (mod < 0):
        mod += y
    return mod


cdef inline int64_t floordiv_int(int64_t x, int64_t y, int* err) noexcept nogil:
    cdef int64_t q
    if y == 0:
        err[0] |= ERR_ZERO_DIV
        return 0
    if y == -1:                     # INT64_MIN // -1 would trap: wrap like numpy
        return <int64_t>(0 - <uint64_t>x)
    q = x // y                      # C truncates (cdivision); step down when signs differ
    if (x % y != 0) and ((x < 0) != (y < 0)):
        q -= 1
    return q


cdef inline int64_t remainder_int(int64_t x, int64_t y, int* err) noexcept nogil:
    cdef int64_t r
    if y == 0:
        err[0] |= ERR_ZERO_DIV
        return 0
    if y == -1:
        return 0
    r = x % y
    if r != 0 and ((r < 0) != (y < 0)):
        r += y
    return r


cdef inline int64_t pow_int(int64_t x, int64_t y, int* err) noexcept nogil:
    """x**y by squaring, wrapping on overflow; negative exponents are an error (torch)."""
    cdef uint64_t base = <uint64_t>x, result = 1
    if y < 0:
        err[0] |= ERR_NEG_POW
        return 0
    while y:
        if y & 1:
            result *= base
        base *= base
        y >>= 1
    return <int64_t>result


# Op tags: empty structs whose only job is to be a fused type, so Cython emits one copy of
# each row loop per op (and dtype) with the op body pasted in, instead of relying on gcc to
# inline and constant-fold a runtime switch (its heuristics do not always do it).
cdef struct OpAdd:
    char unused
cdef struct OpSub:
    char unused
cdef struct OpMul:
    char unused
cdef struct OpDiv:
    char unused
cdef struct OpPow:
    char unused
cdef struct OpMaximum:
    char unused
cdef struct OpMinimum:
    char unused
cdef struct OpFloorDivide:
    char unused
cdef struct OpRemainder:
    char unused
cdef struct OpAtan2:
    char unused
cdef struct OpReluBackward:
    char unused
cdef struct OpTanhBackward:
    char unused
cdef struct OpSigmoidBackward:
    char unused
cdef struct OpGeluBackward:
    char unused
cdef struct OpSiluBackward:
    char unused
cdef struct OpAddRelu:
    char unused
cdef struct OpLeakyRelu:
    char unused
cdef struct OpLeakyReluSlope:
    char unused
cdef struct OpEq:
    char unused
cdef struct OpNe:
    char unused
cdef struct OpLt:
    char unused
cdef struct OpLe:
    char unused
cdef struct OpGt:
    char unused
cdef struct OpGe:
    char unused
cdef struct OpBitAnd:
    char unused
cdef struct OpBitOr:
    char unused
cdef struct OpBitXor:
    char unused
cdef struct OpShiftLeft:
    char unused
cdef struct OpShiftRight:
    char unused
cdef struct OpHypot:
    char unused
cdef struct OpLogaddexp:
    char unused
cdef struct OpLogaddexp2:
    char unused
cdef struct OpCopysign:
    char unused
cdef struct OpHeaviside:
    char unused
cdef struct OpXlogy:
    char unused
cdef struct OpGcd:
    char unused
cdef struct OpLcm:
    char unused
cdef struct OpNextafter:
    char unused
cdef struct OpZeta:
    char unused
cdef struct OpIgamma:
    char unused
cdef struct OpIgammac:
    char unused
cdef struct OpXlog1py:
    char unused
cdef struct OpAnd:
    char unused
cdef struct OpOr:
    char unused
cdef struct OpXor:
    char unused

ctypedef fused arith_op:
    OpAdd
    OpSub
    OpMul
    OpDiv
    OpPow
    OpMaximum
    OpMinimum
    OpFloorDivide
    OpRemainder
    OpAtan2
    OpReluBackward
    OpTanhBackward
    OpSigmoidBackward
    OpGeluBackward
    OpSiluBackward
    OpAddRelu
    OpLeakyRelu
    OpLeakyReluSlope
    OpBitAnd
    OpBitOr
    OpBitXor
    OpShiftLeft
    OpShiftRight
    OpHypot
    OpLogaddexp
    OpLogaddexp2
    OpCopysign
    OpHeaviside
    OpXlogy
    OpGcd
    OpLcm
    OpNextafter
    OpZeta
    OpIgamma
    OpIgammac
    OpXlog1py

ctypedef fused pred_op:
    OpEq
    OpNe
    OpLt
    OpLe
    OpGt
    OpGe
    OpAnd
    OpOr
    OpXor


cdef inline anyt arith(arith_op* tag, anyt x, anyt y, int* err) noexcept nogil:
    """Ops that keep the dtype; combinations rejected by binary_supported are never called."""
    cdef anyt one = 1               # typed: a bare literal would make Cython compute in double
    if arith_op is OpAdd:
        if anyt is uint8_t:
            return (x | y) != 0
        elif anyt is int64_t:
            return <int64_t>(<uint64_t>x + <uint64_t>y)
        else:
            return x + y
    elif arith_op is OpSub:
        if anyt is int64_t:
            return <int64_t>(<uint64_t>x - <uint64_t>y)
        else:
            return x - y
    elif arith_op is OpMul:
        if anyt is uint8_t:
            return (x != 0) & (y != 0)
        elif anyt is int64_t:
            return <int64_t>(<uint64_t>x * <uint64_t>y)
        else:
            return x * y
    elif arith_op is OpDiv:
        if anyt is float or anyt is double:
            return x / y
        else:
            return 0
    elif arith_op is OpMaximum:          # a NaN on either side wins; ties (±0) keep x, as torch
        if anyt is float or anyt is double:
            return y if (x < y) | (y != y) else x     # | not `or`: no branch
        else:
            return y if x < y else x
    elif arith_op is OpMinimum:
        if anyt is float or anyt is double:
            return y if (y < x) | (y != y) else x
        else:
            return y if y < x else x
    elif arith_op is OpPow:
        if anyt is float:
            return powf(x, y)
        elif anyt is double:
            return pow(x, y)
        elif anyt is int64_t:
            return pow_int(x, y, err)
        else:
            return 0
    elif arith_op is OpFloorDivide:
        if anyt is float or anyt is double:
            return floordiv_real(x, y)
        elif anyt is int64_t:
            return floordiv_int(x, y, err)
        else:
            return 0
    elif arith_op is OpRemainder:
        if anyt is float or anyt is double:
            return remainder_real(x, y)
        elif anyt is int64_t:
            return remainder_int(x, y, err)
        else:
            return 0
    elif arith_op is OpAtan2:
        if anyt is float:
            return atan2f(x, y)
        elif anyt is double:
            return atan2(x, y)
        else:
            return 0
    elif arith_op is OpReluBackward:     # torch's threshold_backward: a NaN output passes g
        return 0 if y <= 0 else x
    elif arith_op is OpHeaviside:
        return y if x == 0 else <anyt>(x > 0)      # NaN > 0 is false: heaviside(NaN) = 0
    elif arith_op is OpHypot or arith_op is OpLogaddexp or arith_op is OpLogaddexp2 or \
            arith_op is OpCopysign or arith_op is OpXlogy or arith_op is OpNextafter or \
            arith_op is OpZeta or arith_op is OpIgamma or arith_op is OpIgammac or \
            arith_op is OpXlog1py:
        if anyt is float or anyt is double:
            return float_math(tag, x, y)
        else:
            return 0
    elif arith_op is OpBitAnd or arith_op is OpBitOr or arith_op is OpBitXor or \
            arith_op is OpShiftLeft or arith_op is OpShiftRight:
        if anyt is int64_t:
            return bit_op(tag, x, y)
        else:
            return 0
    elif arith_op is OpGcd:
        if anyt is int64_t:
            return gcd_int(x, y)
        else:
            return 0
    elif arith_op is OpLcm:
        if anyt is int64_t:
            return lcm_int(x, y)
        else:
            return 0
    elif arith_op is OpTanhBackward:
        return x * (one - y * y)
    elif arith_op is OpGeluBackward:
        if anyt is float or anyt is double:
            return x * r_gelu_slope(y)
        else:
            return 0
    elif arith_op is OpAddRelu:      # relu's x < 0 ? 0 : x, so NaN passes and -0.0 stays
        if anyt is float or anyt is double:
            return 0 if x + y < 0 else x + y
        else:
            return 0
    elif arith_op is OpLeakyRelu:    # NaN > 0 is false: NaN·slope stays NaN, -0.0 stays -0.0
        if anyt is float or anyt is double:
            return x if x > 0 else x * y
        else:
            return 0
    elif arith_op is OpLeakyReluSlope:
        if anyt is float or anyt is double:
            return one if x > 0 else y
        else:
            return 0
    elif arith_op is OpSiluBackward:
        if anyt is float or anyt is double:
            return x * r_silu_slope(y)
        else:
            return 0
    else:
        return x * y * (one - y)    # OpSigmoidBackward


cdef inline real float_math(arith_op* tag, real x, real y) noexcept nogil:
    """HYPOT, LOGADDEXP(2), COPYSIGN, XLOGY and the float ops NEXTAFTER..XLOG1PY, written as
    torch's CPU kernels (the special functions in double)."""
    if arith_op is OpNextafter:
        return nextafterf(x, y) if real is float else nextafter(x, y)
    elif arith_op is OpZeta:
        return <real>sp_zeta(x, y)
    elif arith_op is OpIgamma:
        return <real>sp_igamma(x, y)
    elif arith_op is OpIgammac:
        return <real>sp_igammac(x, y)
    elif arith_op is OpXlog1py:
        if y != y:                  # NaN y wins even over x == 0
            return y
        return 0 if x == 0 else x * (log1pf(y) if real is float else log1p(y))
    elif arith_op is OpHypot:
        return hypotf(x, y) if real is float else hypot(x, y)
    elif arith_op is OpCopysign:
        return copysignf(x, y) if real is float else copysign(x, y)
    elif arith_op is OpXlogy:
        if y != y:                  # NaN y wins even over x == 0
            return y
        return 0 if x == 0 else x * (vlogf(y) if real is float else vlog(y))
    else:
        return logaddexp_real(x, y, arith_op is OpLogaddexp2)


cdef inline real logaddexp_real(real x, real y, bint base2) noexcept nogil:
    """max + log1p(e^-|x - y|) (base 2: log1p(2^-|x - y|) / ln 2); equal infinities are
    returned as they are (inf - inf would be NaN)."""
    cdef real big, diff
    if (x == y) & ((x == INFINITY) | (x == -INFINITY)):
        return x
    big = y if x < y else x
    diff = -(fabsf(x - y) if real is float else fabs(x - y))
    if not base2:
        return big + (log1pf(r_exp(diff)) if real is float else log1p(r_exp(diff)))
    return big + (log1pf(exp2f(diff)) if real is float else log1p(exp2(diff))) \
        * <real>(1.0 / 0.693147180559945309417232121458176568)


cdef inline int64_t bit_op(arith_op* tag, int64_t x, int64_t y) noexcept nogil:
    """int64 &, |, ^, << and >>. A shift by a negative amount or by 64 or more is undefined in
    C; torch gives 0 for << and the sign fill (x >> 63) for >>."""
    if arith_op is OpBitAnd:
        return x & y
    elif arith_op is OpBitOr:
        return x | y
    elif arith_op is OpBitXor:
        return x ^ y
    elif arith_op is OpShiftLeft:
        return <int64_t>(<uint64_t>x << y) if 0 <= y < 64 else 0
    else:
        return x >> y if 0 <= y < 64 else x >> 63


cdef inline uint8_t predicate(pred_op* tag, anyt x, anyt y) noexcept nogil:
    """Comparisons and logical ops (NaN is truthy, as in torch)."""
    if pred_op is OpEq:
        return x == y
    elif pred_op is OpNe:
        return x != y
    elif pred_op is OpLt:
        return x < y
    elif pred_op is OpLe:
        return x <= y
    elif pred_op is OpGt:
        return x > y
    elif pred_op is OpGe:
        return x >= y
    elif pred_op is OpAnd:
        return (x != 0) & (y != 0)
    elif pred_op is OpOr:
        return (x != 0) | (y != 0)
    else:
        return (x != 0) ^ (y != 0)


cdef int arith_loop(arith_op* tag, anyt* o, const anyt* x, Py_ssize_t sx, const anyt* y,
                    Py_ssize_t sy, Py_ssize_t n) noexcept nogil:
    """One row of a dtype-preserving op; returns the error flags."""
    # the three common stride patterns get their own loops so that each vectorizes (a
    # stride-0 operand is loaded once, outside the loop)
    cdef Py_ssize_t i
    cdef int err = 0
    cdef anyt xv, yv
    if sx == 1 and sy == 1:
        for i in range(n):
            o[i] = arith(tag, x[i], y[i], &err)
    elif sx == 1 and sy == 0:
        yv = y[0]
        for i in range(n):
            o[i] = arith(tag, x[i], yv, &err)
    elif sx == 0 and sy == 1:
        xv = x[0]
        for i in range(n):
            o[i] = arith(tag, xv, y[i], &err)
    else:
        for i in range(n):
            o[i] = arith(tag, x[i * sx], y[i * sy], &err)
    return err


cdef void pred_loop(pred_op* tag, uint8_t* o, const anyt* x, Py_ssize_t sx, const anyt* y,
                    Py_ssize_t sy, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i
    cdef anyt xv, yv
    if sx == 1 and sy == 1:
        for i in range(n):
            o[i] = predicate(tag, x[i], y[i])
    elif sx == 1 and sy == 0:
        yv = y[0]
        for i in range(n):
            o[i] = predicate(tag, x[i], yv)
    elif sx == 0 and sy == 1:
        xv = x[0]
        for i in range(n):
            o[i] = predicate(tag, xv, y[i])
    else:
        for i in range(n):
            o[i] = predicate(tag, x[i * sx], y[i * sy])


cdef int arith_row(int op, anyt* o, const anyt* x, Py_ssize_t sx, const anyt* y,
                   Py_ssize_t sy, Py_ssize_t n) noexcept nogil:
    """Run the row loop specialised for `op` (the NULL tag only selects the specialisation)."""
    if op == BINARY_ADD:
        return arith_loop(<OpAdd*>NULL, o, x, sx, y, sy, n)
    elif op == BINARY_SUB:
        return arith_loop(<OpSub*>NULL, o, x, sx, y, sy, n)
    elif op == BINARY_MUL:
        return arith_loop(<OpMul*>NULL, o, x, sx, y, sy, n)
    elif op == BINARY_DIV:
        return arith_loop(<OpDiv*>NULL, o, x, sx, y, sy, n)
    elif op == BINARY_POW:
        return arith_loop(<OpPow*>NULL, o, x, sx, y, sy, n)
    elif op == BINARY_MAXIMUM:
        return arith_loop(<OpMaximum*>NULL, o, x, sx, y, sy, n)
    elif op == BINARY_MINIMUM:
        return arith_loop(<OpMinimum*>NULL, o, x, sx, y, sy, n)
    elif op == BINARY_FLOOR_DIVIDE:
        return arith_loop(<OpFloorDivide*>NULL, o, x, sx, y, sy, n)
    elif op == BINARY_REMAINDER:
        return arith_loop(<OpRemainder*>NULL, o, x, sx, y, sy, n)
    elif op == BINARY_ATAN2:
        return arith_loop(<OpAtan2*>NULL, o, x, sx, y, sy, n)
    elif op == BINARY_RELU_BACKWARD:
        return arith_loop(<OpReluBackward*>NULL, o, x, sx, y, sy, n)
    elif op == BINARY_TANH_BACKWARD:
        return arith_loop(<OpTanhBackward*>NULL, o, x, sx, y, sy, n)
    elif op == BINARY_SIGMOID_BACKWARD:
        return arith_loop(<OpSigmoidBackward*>NULL, o, x, sx, y, sy, n)
    elif op == BINARY_GELU_BACKWARD:
        return arith_loop(<OpGeluBackward*>NULL, o, x, sx, y, sy, n)
    elif op == BINARY_SILU_BACKWARD:
        return arith_loop(<OpSiluBackward*>NULL, o, x, sx, y, sy, n)
    elif op == BINARY_ADD_RELU:
        return arith_loop(<OpAddRelu*>NULL, o, x, sx, y, sy, n)
    elif op == BINARY_LEAKY_RELU:
        return arith_loop(<OpLeakyRelu*>NULL, o, x, sx, y, sy, n)
    elif op == BINARY_LEAKY_RELU_SLOPE:
        return arith_loop(<OpLeakyReluSlope*>NULL, o, x, sx, y, sy, n)
    elif op == BINARY_BITWISE_AND:
        return arith_loop(<OpBitAnd*>NULL, o, x, sx, y, sy, n)
    elif op == BINARY_BITWISE_OR:
        return arith_loop(<OpBitOr*>NULL, o, x, sx, y, sy, n)
    elif op == BINARY_BITWISE_XOR:
        return arith_loop(<OpBitXor*>NULL, o, x, sx, y, sy, n)
    elif op == BINARY_LEFT_SHIFT:
        return arith_loop(<OpShiftLeft*>NULL, o, x, sx, y, sy, n)
    elif op == BINARY_RIGHT_SHIFT:
        return arith_loop(<OpShiftRight*>NULL, o, x, sx, y, sy, n)
    elif op == BINARY_HYPOT:
        return arith_loop(<OpHypot*>NULL, o, x, sx, y, sy, n)
    elif op == BINARY_LOGADDEXP:
        return arith_loop(<OpLogaddexp*>NULL, o, x, sx, y, sy, n)
    elif op == BINARY_LOGADDEXP2:
        return arith_loop(<OpLogaddexp2*>NULL, o, x, sx, y, sy, n)
    elif op == BINARY_COPYSIGN:
        return arith_loop(<OpCopysign*>NULL, o, x, sx, y, sy, n)
    elif op == BINARY_HEAVISIDE:
        return arith_loop(<OpHeaviside*>NULL, o, x, sx, y, sy, n)
    elif op == BINARY_XLOGY:
        return arith_loop(<OpXlogy*>NULL, o, x, sx, y, sy, n)
    elif op == BINARY_GCD:
        return arith_loop(<OpGcd*>NULL, o, x, sx, y, sy, n)
    elif op == BINARY_LCM:
        return arith_loop(<OpLcm*>NULL, o, x, sx, y, sy, n)
    elif op == BINARY_NEXTAFTER:
        return arith_loop(<OpNextafter*>NULL, o, x, sx, y, sy, n)
    elif op == BINARY_ZETA:
        return arith_loop(<OpZeta*>NULL, o, x, sx, y, sy, n)
    elif op == BINARY_IGAMMA:
        return arith_loop(<OpIgamma*>NULL, o, x, sx, y, sy, n)
    elif op == BINARY_IGAMMAC:
        return arith_loop(<OpIgammac*>NULL, o, x, sx, y, sy, n)
    elif op == BINARY_XLOG1PY:
        return arith_loop(<OpXlog1py*>NULL, o, x, sx, y, sy, n)
    return 0


cdef void pred_row(int op, uint8_t* o, const anyt* x, Py_ssize_t sx, const anyt* y,
                   Py_ssize_t sy, Py_ssize_t n) noexcept nogil:
    if op == BINARY_EQ:
        pred_loop(<OpEq*>NULL, o, x, sx, y, sy, n)
    elif op == BINARY_NE:
        pred_loop(<OpNe*>NULL, o, x, sx, y, sy, n)
    elif op == BINARY_LT:
        pred_loop(<OpLt*>NULL, o, x, sx, y, sy, n)
    elif op == BINARY_LE:
        pred_loop(<OpLe*>NULL, o, x, sx, y, sy, n)
    elif op == BINARY_GT:
        pred_loop(<OpGt*>NULL, o, x, sx, y, sy, n)
    elif op == BINARY_GE:
        pred_loop(<OpGe*>NULL, o, x, sx, y, sy, n)
    elif op == BINARY_LOGICAL_AND:
        pred_loop(<OpAnd*>NULL, o, x, sx, y, sy, n)
    elif op == BINARY_LOGICAL_OR:
        pred_loop(<OpOr*>NULL, o, x, sx, y, sy, n)
    elif op == BINARY_LOGICAL_XOR:
        pred_loop(<OpXor*>NULL, o, x, sx, y, sy, n)


# ---------------------------------------------------------------------------------------------
# strided traversal shared by binary and where: operands' strides collapsed together, rows of
# the innermost axis walked by an odometer over the outer axes.
# ---------------------------------------------------------------------------------------------

cdef struct Plan:
    int nd                          # collapsed ndim (>= 1)
    int nops                        # operands besides out
    Py_ssize_t rows                 # product of the outer axes
    Py_ssize_t shape[MAX_DIMS]
    Py_ssize_t strides[3][MAX_DIMS]  # per input operand; out is compact


cdef int make_plan(Plan* p, object shape, tuple strides_list, Py_ssize_t* size) except -1:
    """Load shape and every operand's strides into p; sets *size (0: nothing to do)."""
    cdef int nd, d, s
    p.nops = len(strides_list)
    nd = load_dims(shape, strides_list[0], p.shape, p.strides[0])
    for s in range(1, p.nops):
        load_strides(strides_list[s], nd, p.strides[s])
    for d in range(nd):
        if p.shape[d] < 0:
            raise ValueError(f"negative dimension in shape {tuple(shape)}")
    size[0] = shape_size(nd, p.shape)
    p.nd = nd
    return 0


cdef void collapse_plan(Plan* p) noexcept nogil:
    """Merge axes (out's compact strides included) and leave at least one axis."""
    cdef Py_ssize_t out_strides[MAX_DIMS]
    cdef Py_ssize_t* sp[4]
    cdef Py_ssize_t acc = 1
    cdef int d, s
    for d in range(p.nd - 1, -1, -1):
        out_strides[d] = acc
        acc *= p.shape[d]
    sp[0] = out_strides
    for s in range(p.nops):
        sp[s + 1] = p.strides[s]
    p.nd = collapse_dims(p.nd, p.shape, sp, p.nops + 1)
    if p.nd == 0:                   # one element: a single axis of length 1
        p.nd = 1
        p.shape[0] = 1
        for s in range(p.nops):
            p.strides[s][0] = 0
    p.rows = shape_size(p.nd - 1, p.shape)


cdef inline void split_work(const Plan* p, Py_ssize_t size, int* nt, bint* by_rows) noexcept nogil:
    """Threads split the rows when there are plenty, else each row's columns."""
    nt[0] = threads_for(size)
    by_rows[0] = p.rows >= 4 * nt[0]


cdef int binary_block(int op, const anyt* a, const anyt* b, char* o, const Plan* p,
                      Py_ssize_t r0, Py_ssize_t r1, Py_ssize_t c0, Py_ssize_t c1) noexcept nogil:
    """Rows [r0, r1), columns [c0, c1) of a binary op; returns the error flags."""
    cdef int nd = p.nd, d, err = 0
    cdef bint pred = binary_is_pred(op)
    cdef Py_ssize_t inner = p.shape[nd - 1], r
    cdef Py_ssize_t sa = p.strides[0][nd - 1], sb = p.strides[1][nd - 1]
    cdef Py_ssize_t idx[MAX_DIMS]
    cdef Py_ssize_t pa = unravel_offset(r0, nd - 1, p.shape, p.strides[0]) + c0 * sa
    cdef Py_ssize_t pb = unravel_offset(r0, nd - 1, p.shape, p.strides[1]) + c0 * sb
    if c1 <= c0:
        return 0
    r = r0
    for d in range(nd - 2, -1, -1):
        idx[d] = r % p.shape[d]
        r //= p.shape[d]
    for r in range(r0, r1):
        if pred:
            pred_row(op, <uint8_t*>o + r * inner + c0, a + pa, sa, b + pb, sb, c1 - c0)
        else:
            err |= arith_row(op, <anyt*>o + r * inner + c0, a + pa, sa, b + pb, sb, c1 - c0)
        d = nd - 2                  # odometer: bump the last outer axis, carry leftwards
        while d >= 0:
            idx[d] += 1
            pa += p.strides[0][d]
            pb += p.strides[1][d]
            if idx[d] < p.shape[d]:
                break
            pa -= p.strides[0][d] * p.shape[d]
            pb -= p.strides[1][d] * p.shape[d]
            idx[d] = 0
            d -= 1
    return err


cdef int binary_part(int op, int dt, const char* a, const char* b, char* o, const Plan* p,
                     Py_ssize_t r0, Py_ssize_t r1, Py_ssize_t c0, Py_ssize_t c1) noexcept nogil:
    if dt == DT_F32:
        return binary_block(op, <const float*>a, <const float*>b, o, p, r0, r1, c0, c1)
    elif dt == DT_F64:
        return binary_block(op, <const double*>a, <const double*>b, o, p, r0, r1, c0, c1)
    elif dt == DT_I64:
        return binary_block(op, <const int64_t*>a, <const int64_t*>b, o, p, r0, r1, c0, c1)
    return binary_block(op, <const uint8_t*>a, <const uint8_t*>b, o, p, r0, r1, c0, c1)


cdef inline Py_ssize_t itemsize_of(int dt) noexcept nogil:
    return 4 if dt == DT_F32 else (1 if dt == DT_BOOL else 8)


def binary(int op, cnp.ndarray a, cnp.ndarray b, cnp.ndarray out, shape, a_strides,
           Py_ssize_t a_offset, b_strides, Py_ssize_t b_offset):
    """out (compact, `shape`) = op(a, b), a and b read through their strides (0 broadcasts)."""
    cdef int dt = buffer_dtype(a, "binary")
    cdef int dtb = buffer_dtype(b, "binary")
    cdef int dto = buffer_dtype(out, "binary", True)
    cdef Plan p
    cdef Py_ssize_t size, t, rows, inner
    cdef int nt, err = 0
    cdef bint by_rows
    if dt != dtb:
        raise TypeError(f"binary op {op_name(BinaryOp, op)}: operands differ in dtype "
                        f"({DTYPE_NAMES[dt]} and {DTYPE_NAMES[dtb]})")
    if not binary_supported(op, dt):
        raise TypeError(f"binary op {op_name(BinaryOp, op)} is not supported for dtype "
                        f"{DTYPE_NAMES[dt]}")
    if dto != (DT_BOOL if binary_is_pred(op) else dt):
        raise TypeError(f"binary op {op_name(BinaryOp, op)} on {DTYPE_NAMES[dt]} cannot write "
                        f"{DTYPE_NAMES[dto]}")
    make_plan(&p, shape, (a_strides, b_strides), &size)
    check_out(out, size)
    if size == 0:
        return
    check_view(a, p.nd, p.shape, p.strides[0], a_offset, "binary: a")
    check_view(b, p.nd, p.shape, p.strides[1], b_offset, "binary: b")
    cdef const char* pa = <const char*>cnp.PyArray_DATA(a) + a_offset * itemsize_of(dt)
    cdef const char* pb = <const char*>cnp.PyArray_DATA(b) + b_offset * itemsize_of(dt)
    cdef char* po = <char*>cnp.PyArray_DATA(out)
    with nogil:
        collapse_plan(&p)
        rows = p.rows
        inner = p.shape[p.nd - 1]
        split_work(&p, size, &nt, &by_rows)
        if nt == 1:
            err = binary_part(op, dt, pa, pb, po, &p, 0, rows, 0, inner)
        elif by_rows:
            for t in prange(nt, num_threads=nt, schedule="static"):
                err |= binary_part(op, dt, pa, pb, po, &p, rows * t // nt, rows * (t + 1) // nt,
                                   0, inner)
        else:
            for t in prange(nt, num_threads=nt, schedule="static"):
                err |= binary_part(op, dt, pa, pb, po, &p, 0, rows, chunk_start(inner, nt, t),
                                   chunk_start(inner, nt, t + 1))
    if err & ERR_NEG_POW:
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    if err & ERR_ZERO_DIV:
        raise RuntimeError("ZeroDivisionError")


# ---------------------------------------------------------------------------------------------
# where
# ---------------------------------------------------------------------------------------------

cdef inline void where_loop(anyt* o, const uint8_t* c, Py_ssize_t sc, const anyt* x,
                            Py_ssize_t sx, const anyt* y, Py_ssize_t sy,
                            Py_ssize_t n) noexcept nogil:
    """One row of a select; contiguous and scalar-operand patterns get their own loops."""
    cdef Py_ssize_t i
    cdef anyt xv, yv
    if sc == 1 and sx == 1 and sy == 1:
        for i in range(n):
            o[i] = x[i] if c[i] else y[i]
    elif sc == 1 and sx == 1 and sy == 0:
        yv = y[0]
        for i in range(n):
            o[i] = x[i] if c[i] else yv
    elif sc == 1 and sx == 0 and sy == 1:
        xv = x[0]
        for i in range(n):
            o[i] = xv if c[i] else y[i]
    elif sc == 1 and sx == 0 and sy == 0:
        xv = x[0]
        yv = y[0]
        for i in range(n):
            o[i] = xv if c[i] else yv
    elif sc == 0:                   # the condition is constant along the row
        if c[0]:
            for i in range(n):
                o[i] = x[i * sx]
        else:
            for i in range(n):
                o[i] = y[i * sy]
    else:
        for i in range(n):
            o[i] = x[i * sx] if c[i * sc] else y[i * sy]


cdef void where_block(const uint8_t* c, const anyt* a, const anyt* b, anyt* o, const Plan* p,
                      Py_ssize_t r0, Py_ssize_t r1, Py_ssize_t c0, Py_ssize_t c1) noexcept nogil:
    """Rows [r0, r1), columns [c0, c1) of where (same odometer as binary_block)."""
    cdef int nd = p.nd, d
    cdef Py_ssize_t inner = p.shape[nd - 1], r
    cdef Py_ssize_t sc = p.strides[0][nd - 1], sa = p.strides[1][nd - 1]
    cdef Py_ssize_t sb = p.strides[2][nd - 1]
    cdef Py_ssize_t idx[MAX_DIMS]
    cdef Py_ssize_t pc = unravel_offset(r0, nd - 1, p.shape, p.strides[0]) + c0 * sc
    cdef Py_ssize_t pa = unravel_offset(r0, nd - 1, p.shape, p.strides[1]) + c0 * sa
    cdef Py_ssize_t pb = unravel_offset(r0, nd - 1, p.shape, p.strides[2]) + c0 * sb
    if c1 <= c0:
        return
    r = r0
    for d in range(nd - 2, -1, -1):
        idx[d] = r % p.shape[d]
        r //= p.shape[d]
    for r in range(r0, r1):
        where_loop(o + r * inner + c0, c + pc, sc, a + pa, sa, b + pb, sb, c1 - c0)
        d = nd - 2
        while d >= 0:
            idx[d] += 1
            pc += p.strides[0][d]
            pa += p.strides[1][d]
            pb += p.strides[2][d]
            if idx[d] < p.shape[d]:
                break
            pc -= p.strides[0][d] * p.shape[d]
            pa -= p.strides[1][d] * p.shape[d]
            pb -= p.strides[2][d] * p.shape[d]
            idx[d] = 0
            d -= 1


cdef void where_part(int dt, const uint8_t* c, const char* a, const char* b, char* o,
                     const Plan* p, Py_ssize_t r0, Py_ssize_t r1, Py_ssize_t c0,
                     Py_ssize_t c1) noexcept nogil:
    """Select is a pure copy, so dispatch on the element width (floats move as their bits)."""
    if dt == DT_F32:
        where_block(c, <const float*>a, <const float*>b, <float*>o, p, r0, r1, c0, c1)
    elif dt == DT_F64:
        where_block(c, <const double*>a, <const double*>b, <double*>o, p, r0, r1, c0, c1)
    elif dt == DT_I64:
        where_block(c, <const int64_t*>a, <const int64_t*>b, <int64_t*>o, p, r0, r1, c0, c1)
    else:
        where_block(c, <const uint8_t*>a, <const uint8_t*>b, <uint8_t*>o, p, r0, r1, c0, c1)


def where(cnp.ndarray cond, cnp.ndarray a, cnp.ndarray b, cnp.ndarray out, shape, c_strides,
          Py_ssize_t c_offset, a_strides, Py_ssize_t a_offset, b_strides, Py_ssize_t b_offset):
    """out (compact, `shape`) = a if cond else b, all three read through their strides."""
    cdef int dtc, dt, dtb, dto
    cdef Plan p
    cdef Py_ssize_t size, t, rows, inner
    cdef int nt
    cdef bint by_rows
    if cnp.PyArray_ISCOMPLEX(out):          # complex: the select of the (re, im) floats
        from minitorch._cpu import complex_pairs
        return complex_pairs.where(where, cond, a, b, out, shape, c_strides, c_offset, a_strides,
                                   a_offset, b_strides, b_offset)
    dtc = buffer_dtype(cond, "where")
    dt = buffer_dtype(a, "where")
    dtb = buffer_dtype(b, "where")
    dto = buffer_dtype(out, "where", True)
    if dtc != DT_BOOL:
        raise TypeError(f"where expected condition to be a boolean tensor, but got a tensor "
                        f"with dtype {DTYPE_NAMES[dtc]}")
    if dt != dtb or dt != dto:
        raise TypeError(f"where: a, b and out must share a dtype (got {DTYPE_NAMES[dt]}, "
                        f"{DTYPE_NAMES[dtb]}, {DTYPE_NAMES[dto]})")
    make_plan(&p, shape, (c_strides, a_strides, b_strides), &size)
    check_out(out, size)
    if size == 0:
        return
    check_view(cond, p.nd, p.shape, p.strides[0], c_offset, "where: cond")
    check_view(a, p.nd, p.shape, p.strides[1], a_offset, "where: a")
    check_view(b, p.nd, p.shape, p.strides[2], b_offset, "where: b")
    cdef Py_ssize_t w = itemsize_of(dt)
    cdef const uint8_t* pc = <const uint8_t*>cnp.PyArray_DATA(cond) + c_offset
    cdef const char* pa = <const char*>cnp.PyArray_DATA(a) + a_offset * w
    cdef const char* pb = <const char*>cnp.PyArray_DATA(b) + b_offset * w
    cdef char* po = <char*>cnp.PyArray_DATA(out)
    with nogil:
        collapse_plan(&p)
        rows = p.rows
        inner = p.shape[p.nd - 1]
        split_work(&p, size, &nt, &by_rows)
        if nt == 1:
            where_part(dt, pc, pa, pb, po, &p, 0, rows, 0, inner)
        elif by_rows:
            for t in prange(nt, num_threads=nt, schedule="static"):
                where_part(dt, pc, pa, pb, po, &p, rows * t // nt, rows * (t + 1) // nt,
                           0, inner)
        else:
            for t in prange(nt, num_threads=nt, schedule="static"):
                where_part(dt, pc, pa, pb, po, &p, 0, rows, chunk_start(inner, nt, t),
                           chunk_start(inner, nt, t + 1))
