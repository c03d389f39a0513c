# cython: cdivision=True
# Vectorizable exp, log and tanh for the CPU kernels (unary, binary, fused): libm's are scalar
# calls, these branch-free versions (Cephes polynomials, special cases as selects) let gcc emit
# SIMD loops; they are the hot ones (softmax, log-softmax, sigmoid, tanh). exp: Cody-Waite
# reduction x = n*ln2 + r, a polynomial for e^r, and 2^n applied as two factors so that overflow
# gives inf and underflow rounds gracefully through the subnormals; NaN propagates through r.
from libc.math cimport INFINITY, NAN, copysign, copysignf, erf, fabs, fabsf
from libc.stdint cimport int32_t, int64_t

ctypedef fused real:
    float
    double


cdef union F32Bits:
    float f
    int32_t i

cdef union F64Bits:
    double f
    int64_t i


cdef inline float pow2f(int32_t k) noexcept nogil:
    """2**k for -126 <= k <= 127."""
    cdef F32Bits u
    u.i = (k + 127) << 23
    return u.f


cdef inline double pow2d(int64_t k) noexcept nogil:
    """2**k for -1022 <= k <= 1023."""
    cdef F64Bits u
    u.i = (k + 1023) << 52
    return u.f


cdef inline float vexpf(float x) noexcept nogil:
    """expf within ~1 ulp (Cephes polynomial), written so that loops over it vectorize."""
    cdef float n, r, p
    cdef F32Bits m
    cdef int32_t k
    x = 89.0 if x > 89.0 else x          # beyond: inf (2**128 overflows)
    x = -104.0 if x < -104.0 else x      # below: 0 (under half the smallest subnormal)
    m.f = x * <float>1.44269504088896341 + <float>12582912.0   # round-to-nearest trick
    n = m.f - <float>12582912.0
    k = m.i - 0x4B400000
    k = 0 if x != x else k
    r = x - n * <float>0.693359375 - n * <float>-2.12194440e-4
    p = ((((<float>1.9875691500E-4 * r + <float>1.3981999507E-3) * r
            + <float>8.3334519073E-3) * r + <float>4.1665795894E-2) * r
         + <float>1.6666665459E-1) * r + <float>5.0000001201E-1
    p = p * r * r + r + <float>1.0
    return p * pow2f(k >> 1) * pow2f(k - (k >> 1))


cdef inline double vexp(double x) noexcept nogil:
    """exp within ~1 ulp (degree-13 Taylor polynomial on |r| <= ln2/2), vectorizable."""
    cdef double n, r, p
    cdef F64Bits m
    cdef int64_t k
    x = 710.0 if x > 710.0 else x
    x = -746.0 if x < -746.0 else x
    m.f = x * 1.4426950408889634 + 6755399441055744.0
    n = m.f - 6755399441055744.0
    k = m.i - <int64_t>0x4338000000000000LL
    k = 0 if x != x else k
    r = x - n * 6.93147180369123816490e-01 - n * 1.90821492927058770002e-10
    p = 1.0 / 6227020800.0
    p = p * r + 1.0 / 479001600.0
    p = p * r + 1.0 / 39916800.0
    p = p * r + 1.0 / 3628800.0
    p = p * r + 1.0 / 362880.0
    p = p * r + 1.0 / 40320.0
    p = p * r + 1.0 / 5040.0
    p = p * r + 1.0 / 720.0
    p = p * r + 1.0 / 120.0
    p = p * r + 1.0 / 24.0
    p = p * r + 1.0 / 6.0
    p = p * r + 0.5
    p = p * r * r + r + 1.0
    return p * pow2d(k >> 1) * pow2d(k - (k >> 1))


cdef inline float vlogf(float x) noexcept nogil:
    """logf within ~1 ulp (Cephes polynomial on the mantissa), vectorizable."""
    # the exponent is split off with bit operations, subnormals pre-scaled, specials selected
    cdef F32Bits u
    cdef float m, z, y, e, res
    cdef int32_t k, one = 1, shift = 23   # typed so that every lane stays 32 bits wide
    cdef bint sub = x < <float>1.17549435e-38
    u.f = x * <float>8388608.0 if sub else x                 # 2**23 makes subnormals normal
    k = ((u.i >> 23) & 0xff) - 126
    k = k - shift if sub else k
    u.i = (u.i & 0x007fffff) | 0x3f000000                   # mantissa in [0.5, 1)
    m = u.f
    k = k - one if m < <float>0.707106781186547524 else k   # keep m - 1 within +-0.3
    m = (m + m if m < <float>0.707106781186547524 else m) - <float>1.0
    e = <float>k
    z = m * m
    y = ((((((((<float>7.0376836292E-2 * m - <float>1.1514610310E-1) * m
                + <float>1.1676998740E-1) * m - <float>1.2420140846E-1) * m
              + <float>1.4249322787E-1) * m - <float>1.6668057665E-1) * m
            + <float>2.0000714765E-1) * m - <float>2.4999993993E-1) * m
         + <float>3.3333331174E-1) * m * z
    y = y + e * <float>-2.12194440e-4 - <float>0.5 * z
    res = m + y + e * <float>0.693359375
    res = INFINITY if x == INFINITY else res
    res = -INFINITY if x == 0 else res
    res = NAN if x < 0 else res
    return x if x != x else res


cdef inline double vlog(double x) noexcept nogil:
    """log within ~1 ulp (Cephes rational approximation), vectorizable like vlogf."""
    cdef F64Bits u
    cdef double m, z, y, e, res
    cdef int64_t k, one = 1, shift = 54
    cdef bint sub = x < 2.2250738585072014e-308
    u.f = x * 18014398509481984.0 if sub else x             # 2**54
    k = ((u.i >> 52) & 0x7ff) - 1022
    k = k - shift if sub else k
    u.i = (u.i & <int64_t>0x000fffffffffffffLL) | <int64_t>0x3fe0000000000000LL
    m = u.f
    k = k - one if m < 0.70710678118654752440 else k
    m = (m + m if m < 0.70710678118654752440 else m) - 1.0
    e = <double>k
    z = m * m
    y = m * (z * (((((1.01875663804580931796E-4 * m + 4.97494994976747001425E-1) * m
                     + 4.70579119878881725854E0) * m + 1.44989225341610930846E1) * m
                   + 1.79368678507819816313E1) * m + 7.70838733755885391666E0)
             / (((((m + 1.12873587189167450590E1) * m + 4.52279145837532221105E1) * m
                  + 8.29875266912776603211E1) * m + 7.11544750618563894466E1) * m
                + 2.31251620126765340583E1))
    y = y - e * 2.121944400546905827679e-4 - 0.5 * z
    res = m + y + e * 0.693359375
    res = INFINITY if x == INFINITY else res
    res = -INFINITY if x == 0 else res
    res = NAN if x < 0 else res
    return x if x != x else res


cdef inline float vlog1pf(float x) noexcept nogil:
    """log1pf within a few ulp, vectorizable (libm's log1pf is a scalar call, ~25 ns): with
    u = 1 + x rounded, log(u) · x / (u - 1) cancels the rounding of u (Goldberg); where u == 1
    the answer is x itself, and +inf stays inf."""
    cdef float u = <float>1.0 + x
    cdef float d = u - <float>1.0
    cdef float res = vlogf(u) * (x / d)
    return x if (d == 0) | (x == INFINITY) else res


cdef inline double vlog1p(double x) noexcept nogil:
    """log1p within a few ulp, vectorizable like vlog1pf."""
    cdef double u = 1.0 + x
    cdef double d = u - 1.0
    cdef double res = vlog(u) * (x / d)
    return x if (d == 0) | (x == INFINITY) else res


cdef inline float vexpm1f(float x) noexcept nogil:
    """expm1f within a few ulp, vectorizable (libm's is a scalar call): e^x - 1 where that
    loses nothing (|x| >= 1/2), the Taylor series to x^10 below (error < x^11/11! < 1/4 ulp)."""
    cdef float t = ((((((((x * <float>(1.0 / 3628800) + <float>(1.0 / 362880)) * x
                         + <float>(1.0 / 40320)) * x + <float>(1.0 / 5040)) * x
                       + <float>(1.0 / 720)) * x + <float>(1.0 / 120)) * x
                     + <float>(1.0 / 24)) * x + <float>(1.0 / 6)) * x + <float>0.5) * x * x + x
    t = x if x == 0 else t                      # keeps -0.0
    return t if (x < <float>0.5) & (x > <float>-0.5) else vexpf(x) - <float>1.0


cdef inline double vexpm1(double x) noexcept nogil:
    """expm1 within a few ulp, vectorizable like vexpm1f (Taylor series to x^18 below 1/2)."""
    cdef double t = (
        (((((((((((((((1.0 / 355687428096000.0) * x + 1.0 / 20922789888000.0) * x + 1.0 /
        1307674368000.0) * x + 1.0 / 87178291200.0) * x + 1.0 / 6227020800.0) * x + 1.0 /
        479001600.0) * x + 1.0 / 39916800.0) * x + 1.0 / 3628800.0) * x + 1.0 / 362880.0) * x +
        1.0 / 40320.0) * x + 1.0 / 5040.0) * x + 1.0 / 720.0) * x + 1.0 / 120.0) * x + 1.0 /
        24.0) * x + 1.0 / 6.0) * x + 1.0 / 2.0)
    t = t * x * x + x
    t = x if x == 0 else t                      # keeps -0.0
    return t if (x < 0.5) & (x > -0.5) else vexp(x) - 1.0


cdef inline float verff(float x) noexcept nogil:
    """erff within 3 ulp, vectorizable (libm's is a scalar call, ~14 ns). Below |x| = 1.25,
    x P(x^2); up to 3.92, 1 - e^(-x^2) Q(1/|x|) with Q ~ erfc(x) e^(x^2); beyond, +-1 (where
    erff rounds to +-1). P and Q are Chebyshev fits (numpy, in double) of erf(x)/x and of
    erfc(x) e^(x^2) on those ranges, degree 6 and 7. NaN propagates, -0.0 stays."""
    cdef float a = fabsf(x), y = x * x, t = <float>1.0 / fabsf(x)
    cdef float small = x * (
        ((((((<float>6.252744060475379e-05) * y + <float>-0.0007449965341947973) * y +
        <float>0.00511425593867898) * y + <float>-0.02680843509733677) * y +
        <float>0.11282326281070709) * y + <float>-0.3761249780654907) * y +
        <float>1.1283791065216064)
    cdef float big = <float>1.0 - vexpf(-y) * (
        (((((((<float>-0.008336743339896202) * t + <float>0.08561123162508011) * t +
        <float>-0.3002353608608246) * t + <float>0.5308732986450195) * t +
        <float>-0.4841182231903076) * t + <float>0.04484075307846069) * t +
        <float>0.558680534362793) * t + <float>0.00029023829847574234)
    big = copysignf(big, x)
    small = small if a < <float>1.25 else big
    return copysignf(<float>1.0, x) if a >= <float>3.92 else small


cdef inline float vtanhf(float x) noexcept nogil:
    """tanhf within ~2 ulp (Cephes): odd polynomial near 0, 1 - 2/(e^2|x| + 1) beyond."""
    cdef float a = fabsf(x), z = x * x, small, big
    small = ((((<float>-5.70498872745E-3 * z + <float>2.06390887954E-2) * z
               - <float>5.37397155531E-2) * z + <float>1.33314422036E-1) * z
             - <float>3.33332819422E-1) * z * x + x
    big = copysignf(<float>1.0 - <float>2.0 / (vexpf(a + a) + <float>1.0), x)
    return small if a < <float>0.625 else big


cdef inline double vtanh(double x) noexcept nogil:
    """tanh within ~2 ulp (Cephes): rational function near 0, 1 - 2/(e^2|x| + 1) beyond."""
    cdef double a = fabs(x), z = x * x, small, big
    small = x + x * z * (((-9.64399179425052238628E-1 * z - 9.92877231001918586564E1) * z
                          - 1.61468768441708447952E3)
                         / (((z + 1.12811678491632931402E2) * z + 2.23548839060100448583E3) * z
                            + 4.84406305325125486048E3))
    big = copysign(1.0 - 2.0 / (vexp(a + a) + 1.0), x)
    return small if a < 0.625 else big


cdef inline real r_exp(real x) noexcept nogil:
    if real is float:
        return vexpf(x)
    else:
        return vexp(x)


cdef inline real r_sigmoid(real x) noexcept nogil:
    """1/(1+e^-x) via e = e^-|x|, so the exponential never overflows; exact 0/1 limits."""
    cdef real one = 1              # typed: a bare literal would make Cython compute in double
    cdef real e = r_exp(-x if x > 0 else x)
    cdef real s = one / (one + e)
    return s if x >= 0 else e * s


cdef inline real r_tanh(real x) noexcept nogil:
    if real is float:
        return vtanhf(x)
    else:
        return vtanh(x)


cdef inline real r_erf(real x) noexcept nogil:
    """erf: the vectorizable verff for float, libm's erf for double."""
    if real is float:
        return verff(x)
    else:
        return erf(x)


cdef inline real r_gelu(real x) noexcept nogil:
    """x Φ(x) = x (1 + erf(x / √2)) / 2, torch's exact GELU."""
    cdef real half = 0.5, one = 1
    return x * half * (one + r_erf(x * <real>0.70710678118654752440))


cdef inline real r_silu(real x) noexcept nogil:
    """x / (1 + e^-x), torch's SiLU (e^-x overflows to inf for x < -88: then -0, as torch)."""
    cdef real one = 1
    return x / (one + r_exp(-x))


cdef inline real r_silu_slope(real x) noexcept nogil:
    """SiLU's derivative s (1 + x (1 - s)) with s = 1 / (1 + e^-x), as torch's silu_backward."""
    cdef real one = 1
    cdef real s = one / (one + r_exp(-x))
    return s * (one + x * (one - s))


cdef inline real r_gelu_slope(real x) noexcept nogil:
    """GELU's derivative Φ(x) + x φ(x), as torch's GeluBackward computes it."""
    cdef real half = 0.5, one = 1
    cdef real cdf = half * (one + r_erf(x * <real>0.70710678118654752440))
    cdef real pdf = r_exp(-half * x * x) * <real>0.39894228040143267794
    return cdf + x * pdf
