# cython: cdivision=True
"""Complex arithmetic on interleaved (re, im) pairs of float32 / float64.

A complex buffer (numpy complex64 / complex128) reaches these kernels viewed as its real pairs:
element i is a[2i] + a[2i+1]·j. Only the ops whose math mixes the two parts live here
(multiplication, division, abs, angle, exp, sgn, polar); addition, subtraction, negation, sums
and every data movement run the real kernels over the pairs (see minitorch/ndarray.py). The
formulas are c10::complex's (torch's): Smith's scaled division, hypot for abs.
"""
cimport numpy as cnp
from cython.parallel cimport prange
from libc.math cimport atan2, atan2f, cos, cosf, exp, expf, fabs, fabsf, hypot, hypotf, sin, sinf

from minitorch._cpu.common cimport threads_for

cnp.import_array()

ctypedef fused real_t:
    float
    double

# op codes (ndarray.py names them through COMPLEX_BINARY / COMPLEX_UNARY below)
cdef enum:
    MUL = 0
    DIV = 1
    ABS = 0         # complex -> real
    ANGLE = 1       # complex -> real
    EXP = 2         # complex -> complex
    SGN = 3         # complex -> complex: z / |z|, 0 at 0
    RECIPROCAL = 4  # complex -> complex: 1 / z

COMPLEX_BINARY = {"mul": MUL, "div": DIV}
COMPLEX_UNARY = {"abs": ABS, "angle": ANGLE, "exp": EXP, "sgn": SGN, "reciprocal": RECIPROCAL}


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
    if op != MUL and op != DIV:
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
        else:
            for i in prange(n, schedule="static", num_threads=threads_for(2 * n)):
                divide(a[2 * i], a[2 * i + 1], b[2 * i], b[2 * i + 1], &out[2 * i],
                       &out[2 * i + 1])


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


def complex_unary(int op, real_t[::1] a, real_t[::1] out):
    """out[i] = op(a[i]) over a compact pair buffer: ABS and ANGLE write one real per pair, EXP,
    SGN and RECIPROCAL a pair."""
    cdef Py_ssize_t n = a.shape[0] // 2, i
    cdef real_t re, im, m, e
    cdef bint to_real = op == ABS or op == ANGLE
    if op < ABS or op > RECIPROCAL:
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
                e = r_exp(re)
                if im == 0:             # exp of a real number stays real (no 0 * inf NaN)
                    out[2 * i] = e
                    out[2 * i + 1] = im
                else:
                    out[2 * i] = e * r_cos(im)
                    out[2 * i + 1] = e * r_sin(im)
            elif op == SGN:
                m = r_hypot(re, im)
                if m == 0:
                    out[2 * i] = 0
                    out[2 * i + 1] = 0
                else:
                    out[2 * i] = re / m
                    out[2 * i + 1] = im / m
            else:
                divide(<real_t>1, <real_t>0, re, im, &out[2 * i], &out[2 * i + 1])


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
    if nd > STRIDED_MAX_DIMS or op != MUL and op != DIV:
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
                else:
                    divide(ar, ai, br, bi, &po[2 * (row * inner + i)],
                           &po[2 * (row * inner + i) + 1])
