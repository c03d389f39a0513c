# cython: cdivision=True
# (C division semantics are relied on below, also in MINITORCH_DEBUG builds)
"""Elementwise CPU kernels: unary ops, strided/broadcast binary ops and where.

Each kernel validates its arguments with the GIL held, then runs a `noexcept nogil` loop chosen
once per call (op and dtype), so the element loops are branch-free and gcc vectorizes them.
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
from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t
from libc.string cimport memmove

from minitorch._cpu.common cimport (buffer_dtype, collapse_dims, DT_BOOL, DT_F32, DT_F64, DT_I64,
                                      dtype_code, load_dims, load_strides, MAX_DIMS,
                                      omp_get_max_threads, PARALLEL_MIN_ELEMENTS, shape_size,
                                      unravel_offset)
from minitorch._cpu.opcodes cimport *
from minitorch.opcodes import BinaryOp, UnaryOp

cnp.import_array()



# ---------------------------------------------------------------------------------------------
# dtypes and argument checks
# ---------------------------------------------------------------------------------------------

cdef enum:
    # error flags raised by the nogil loops (bit flags so threads can OR them together)
    ERR_ZERO_DIV = 1
    ERR_NEG_POW = 2

DTYPE_NAMES = ("float32", "float64", "int64", "bool")

ctypedef fused real:
    float
    double

ctypedef fused anyt:
    float
    double
    int64_t
    uint8_t


cdef inline int class_bit(int dt) noexcept nogil:
    """The opcodes.py dtype class of a storage dtype code, as a support-mask bit."""
    if dt == DT_F32 or dt == DT_F64:
        return OPS_FLOAT
    return OPS_INT64 if dt == DT_I64 else OPS_UINT8


cdef str op_name(object enum, int op):
    """The enum member's name for error messages (the number if it is not a member)."""
    try:
        return enum(op).name
    except ValueError:
        return str(op)


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


cdef inline int threads_for(Py_ssize_t work) noexcept nogil:
    """Threads worth using for `work` elements: OpenMP only pays off above a threshold."""
    if work < PARALLEL_MIN_ELEMENTS:
        return 1
    return omp_get_max_threads()


cdef inline Py_ssize_t chunk_start(Py_ssize_t n, int nt, Py_ssize_t t) noexcept nogil:
    """Start of the t-th of nt near-equal chunks of n (t == nt gives n)."""
    # multiples of 16 elements (a cache line of float32): threads never share an output line
    if t >= nt:
        return n
    return ((n * t // nt) // 16) * 16


# ---------------------------------------------------------------------------------------------
# vectorizable exp, log and tanh: libm's are scalar calls, these branch-free versions (Cephes
# polynomials, special cases as selects) let gcc emit SIMD loops; they are the hot ones
# (softmax, log-softmax, sigmoid, tanh). exp: Cody-Waite reduction x = n*ln2 + r, a polynomial
# for e^r, and 2^n applied as two factors so that overflow gives inf and underflow rounds
# gracefully through the subnormals; NaN propagates through r.
# ---------------------------------------------------------------------------------------------

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


# ---------------------------------------------------------------------------------------------
# unary
# ---------------------------------------------------------------------------------------------

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


# ---------------------------------------------------------------------------------------------
# special functions (ERFINV..BESSEL_J1, ZETA, IGAMMA, IGAMMAC): no libm function exists for
# them, so they are written out here (and again in elementwise.cu) from published
# approximations. Both float dtypes compute in double and round once at the end: the series
# and recurrences below would lose several float32 digits otherwise.
# ---------------------------------------------------------------------------------------------

cdef double MACHEP = 1.11022302462515654042e-16          # 2^-53
cdef double SQRT_PI_INV = 0.564189583547756286948079451561     # 1 / sqrt(pi)

# Chebyshev coefficients from the Cephes Math Library (S. Moshier, i0.c / i1.c), as torch uses:
# exp(-x) I0(x) on [0, 8] and exp(-x) sqrt(x) I0(x) on the inverted interval [8, inf).
cdef double[30] I0E_A = [
    -4.41534164647933937950E-18, 3.33079451882223809783E-17, -2.43127984654795469359E-16,
    1.71539128555513303061E-15, -1.16853328779934516808E-14, 7.67618549860493561688E-14,
    -4.85644678311192946090E-13, 2.95505266312963983461E-12, -1.72682629144155570723E-11,
    9.67580903537323691224E-11, -5.18979560163526290666E-10, 2.65982372468238665035E-9,
    -1.30002500998624804212E-8, 6.04699502254191894932E-8, -2.67079385394061173391E-7,
    1.11738753912010371815E-6, -4.41673835845875056359E-6, 1.64484480707288970893E-5,
    -5.75419501008210370398E-5, 1.88502885095841655729E-4, -5.76375574538582365885E-4,
    1.63947561694133579842E-3, -4.32430999505057594430E-3, 1.05464603945949983183E-2,
    -2.37374148058994688156E-2, 4.93052842396707084878E-2, -9.49010970480476444210E-2,
    1.71620901522208775349E-1, -3.04682672343198398683E-1, 6.76795274409476084995E-1]
cdef double[25] I0E_B = [
    -7.23318048787475395456E-18, -4.83050448594418207126E-18, 4.46562142029675999901E-17,
    3.46122286769746109310E-17, -2.82762398051658348494E-16, -3.42548561967721913462E-16,
    1.77256013305652638360E-15, 3.81168066935262242075E-15, -9.55484669882830764870E-15,
    -4.15056934728722208663E-14, 1.54008621752140982691E-14, 3.85277838274214270114E-13,
    7.18012445138366623367E-13, -1.79417853150680611778E-12, -1.32158118404477131188E-11,
    -3.14991652796324136454E-11, 1.18891471078464383424E-11, 4.94060238822496958910E-10,
    3.39623202570838634515E-9, 2.26666899049817806459E-8, 2.04891858946906374183E-7,
    2.89137052083475648297E-6, 6.88975834691682398426E-5, 3.36911647825569408990E-3,
    8.04490411014108831608E-1]
# exp(-x) I1(x) / x on [0, 8] and exp(-x) sqrt(x) I1(x) on [8, inf) (Cephes i1.c)
cdef double[29] I1E_A = [
    2.77791411276104639959E-18, -2.11142121435816608115E-17, 1.55363195773620046921E-16,
    -1.10559694773538630805E-15, 7.60068429473540693410E-15, -5.04218550472791168711E-14,
    3.22379336594557470981E-13, -1.98397439776494371520E-12, 1.17361862988909016308E-11,
    -6.66348972350202774223E-11, 3.62559028155211703701E-10, -1.88724975172282928790E-9,
    9.38153738649577178388E-9, -4.44505912879632808065E-8, 2.00329475355213526229E-7,
    -8.56872026469545474066E-7, 3.47025130813767847674E-6, -1.32731636560394358279E-5,
    4.78156510755005422638E-5, -1.61760815825896745588E-4, 5.12285956168575772895E-4,
    -1.51357245063125314899E-3, 4.15642294431288815669E-3, -1.05640848946261981558E-2,
    2.47264490306265168283E-2, -5.29459812080949914269E-2, 1.02643658689847095384E-1,
    -1.76416518357834055153E-1, 2.52587186443633654823E-1]
cdef double[25] I1E_B = [
    7.51729631084210481353E-18, 4.41434832307170791151E-18, -4.65030536848935832153E-17,
    -3.20952592199342395980E-17, 2.96262899764595013876E-16, 3.30820231092092828324E-16,
    -1.88035477551078244854E-15, -3.81440307243700780478E-15, 1.04202769841288027642E-14,
    4.27244001671195135429E-14, -2.10154184277266431302E-14, -4.08355111109219731823E-13,
    -7.19855177624590851209E-13, 2.03562854414708950722E-12, 1.41258074366137813316E-11,
    3.25260358301548823856E-11, -1.89749581235054123450E-11, -5.58974346219658380687E-10,
    -3.83538038596423702205E-9, -2.63146884688951950684E-8, -2.51223623787020892529E-7,
    -3.88256480887769039346E-6, -1.10588938762623716291E-4, -9.76109749136146840777E-3,
    7.78576235018280120474E-1]

# ndtri (Cephes ndtri.c): P0/Q0 for |y - 1/2| <= 3/8, P1/Q1 for z = sqrt(-2 log y) in [2, 8],
# P2/Q2 for z in [8, 64]; Q* lead with an implied 1.
cdef double[5] NDTRI_P0 = [
    -5.99633501014107895267E1, 9.80010754185999661536E1, -5.66762857469070293439E1,
    1.39312609387279679503E1, -1.23916583867381258016E0]
cdef double[8] NDTRI_Q0 = [
    1.95448858338141759834E0, 4.67627912898881538453E0, 8.63602421390890590575E1,
    -2.25462687854119370527E2, 2.00260212380060660359E2, -8.20372256168333339912E1,
    1.59056225126211695515E1, -1.18331621121330003142E0]
cdef double[9] NDTRI_P1 = [
    4.05544892305962419923E0, 3.15251094599893866154E1, 5.71628192246421288162E1,
    4.40805073893200834700E1, 1.46849561928858024014E1, 2.18663306850790267539E0,
    -1.40256079171354495875E-1, -3.50424626827848203418E-2, -8.57456785154685413611E-4]
cdef double[8] NDTRI_Q1 = [
    1.57799883256466749731E1, 4.53907635128879210584E1, 4.13172038254672030440E1,
    1.50425385692907503408E1, 2.50464946208309415979E0, -1.42182922854787788574E-1,
    -3.80806407691578277194E-2, -9.33259480895457427372E-4]
cdef double[9] NDTRI_P2 = [
    3.23774891776946035970E0, 6.91522889068984211695E0, 3.93881025292474443415E0,
    1.33303460815807542389E0, 2.01485389549179081538E-1, 1.23716634817820021358E-2,
    3.01581553508235416007E-4, 2.65806974686737550832E-6, 6.23974539184983293730E-9]
cdef double[8] NDTRI_Q2 = [
    6.02427039364742014255E0, 3.67983563856160859403E0, 1.37702099489081330271E0,
    2.16236993594496635890E-1, 1.34204006088543189037E-2, 3.28014464682127739104E-4,
    2.89247864745380683936E-6, 6.79019408009981274425E-9]

# Bessel J0 and J1 (Cephes j0.c / j1.c): R/(Q with an implied leading 1) times the factors of
# the first two zeros on [0, 5]; the Hankel asymptotic form P cos - Q sin beyond.
cdef double[7] J0_PP = [
    7.96936729297347051624E-4, 8.28352392107440799803E-2, 1.23953371646414299388E0,
    5.44725003058768775090E0, 8.74716500199817011941E0, 5.30324038235394892183E0,
    9.99999999999999997821E-1]
cdef double[7] J0_PQ = [
    9.24408810558863637013E-4, 8.56288474354474431428E-2, 1.25352743901058953537E0,
    5.47097740330417105182E0, 8.76190883237069594232E0, 5.30605288235394617618E0,
    1.00000000000000000218E0]
cdef double[8] J0_QP = [
    -1.13663838898469149931E-2, -1.28252718670509318512E0, -1.95539544257735972385E1,
    -9.32060152123768231369E1, -1.77681167980488050595E2, -1.47077505154951170175E2,
    -5.14105326766599330220E1, -6.05014350600728481186E0]
cdef double[7] J0_QQ = [
    6.43178256118178023184E1, 8.56430025976980587198E2, 3.88240183605401609683E3,
    7.24046774195652478189E3, 5.93072701187316984827E3, 2.06209331660327847417E3,
    2.42005740240291393179E2]
cdef double[4] J0_RP = [
    -4.79443220978201773821E9, 1.95617491946556577543E12, -2.49248344360967716204E14,
    9.70862251047306323952E15]
cdef double[8] J0_RQ = [
    4.99563147152651017219E2, 1.73785401676374683123E5, 4.84409658339962045305E7,
    1.11855537045356834862E10, 2.11277520115489217587E12, 3.10518229857422583814E14,
    3.18121955943204943306E16, 1.71086294081043136091E18]
cdef double[7] J1_PP = [
    7.62125616208173112003E-4, 7.31397056940917570436E-2, 1.12719608129684925192E0,
    5.11207951146807644818E0, 8.42404590141772420927E0, 5.21451598682361504063E0,
    1.00000000000000000254E0]
cdef double[7] J1_PQ = [
    5.71323128072548699714E-4, 6.88455908754495404082E-2, 1.10514232634061696926E0,
    5.07386386128601488557E0, 8.39985554327604159757E0, 5.20982848682361821619E0,
    9.99999999999999997461E-1]
cdef double[8] J1_QP = [
    5.10862594750176621635E-2, 4.98213872951233449420E0, 7.58238284132545283818E1,
    3.66779609360150777800E2, 7.10856304998926107277E2, 5.97489612400613639965E2,
    2.11688757100572135698E2, 2.52070205858023719784E1]
cdef double[7] J1_QQ = [
    7.42373277035675149943E1, 1.05644886038262816351E3, 4.98641058337653607651E3,
    9.56231892404756170795E3, 7.99704160447350683650E3, 2.82619278517639096600E3,
    3.36093607810698293419E2]
cdef double[4] J1_RP = [
    -8.99971225705559398224E8, 4.52228297998194034323E11, -7.27494245221818276015E13,
    3.68295732863852883286E15]
cdef double[8] J1_RQ = [
    6.20836478118054335476E2, 2.56987256757748830383E5, 8.35146791431949253037E7,
    2.21511595479792499675E10, 4.74914122079991414898E12, 7.84369607876235854894E14,
    8.95222336184627338078E16, 5.32278620332680085395E18]

# Euler-Maclaurin coefficients (2k)! / B_2k of the Hurwitz zeta tail (Cephes zeta.c)
cdef double[12] ZETA_A = [
    12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9, 7.47242496e10,
    -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15,
    1.8152105401943546773e17, -7.1661652561756670113e18]


cdef inline double polevl(double x, const double* c, int n) noexcept nogil:
    """c[0] x^n + ... + c[n] (Horner)."""
    cdef double r = c[0]
    cdef int i
    for i in range(1, n + 1):
        r = r * x + c[i]
    return r


cdef inline double p1evl(double x, const double* c, int n) noexcept nogil:
    """x^n + c[0] x^(n-1) + ... + c[n-1]: polevl with an implied leading 1."""
    cdef double r = x + c[0]
    cdef int i
    for i in range(1, n):
        r = r * x + c[i]
    return r


cdef inline double chbevl(double x, const double* c, int n) noexcept nogil:
    """A Chebyshev series of n terms at x in [-2, 2] (Clenshaw's recurrence, as in Cephes)."""
    cdef double b0 = c[0], b1 = 0, b2 = 0
    cdef int i
    for i in range(1, n):
        b2 = b1
        b1 = b0
        b0 = x * b1 - b2 + c[i]
    return 0.5 * (b0 - b2)


cdef double sp_erfinv(double y) noexcept nogil:
    """torch's calc_erfinv: G. Pavlis' rational first guess (central |y| <= 0.7, tail beyond)
    refined by two Newton steps on erf(x) = y."""
    cdef double ay = fabs(y), x, z
    if ay > 1:
        return NAN
    if ay == 1:
        return copysign(INFINITY, y)
    if ay <= 0.7:
        z = y * y
        x = y * (((-0.140543331 * z + 0.914624893) * z - 1.645349621) * z + 0.886226899) / \
            ((((0.012229801 * z - 0.329097515) * z + 1.442710462) * z - 2.118377725) * z + 1)
    else:
        z = sqrt(-log((1 - ay) / 2))
        x = copysign(((1.641345311 * z + 3.429567803) * z - 1.624906493) * z - 1.970840454, y) \
            / ((1.637067800 * z + 3.543889200) * z + 1)
    x -= (erf(x) - y) / (2 * SQRT_PI_INV * exp(-x * x))
    x -= (erf(x) - y) / (2 * SQRT_PI_INV * exp(-x * x))
    return x


cdef double sp_i0e(double x) noexcept nogil:
    x = fabs(x)
    if x <= 8:
        return chbevl(x / 2 - 2, I0E_A, 30)
    return chbevl(32 / x - 2, I0E_B, 25) / sqrt(x)


cdef double sp_i1e(double x) noexcept nogil:
    """Odd: computed for |x| and the sign put back."""
    cdef double ax = fabs(x), r
    if ax <= 8:
        r = chbevl(ax / 2 - 2, I1E_A, 29) * ax
    else:
        r = chbevl(32 / ax - 2, I1E_B, 25) / sqrt(ax)
    return -r if x < 0 else r


cdef double sp_ndtri(double y0) noexcept nogil:
    """x with Phi(x) = y0 (Cephes ndtri): 0 and 1 give -inf and inf, outside [0, 1] NaN."""
    cdef double y = y0, x, z, x0
    cdef bint negate = True
    if y0 == 0:
        return -INFINITY
    if y0 == 1:
        return INFINITY
    if not (0 < y0 < 1):                # NaN too
        return NAN
    if y > 1 - 0.13533528323661269189:  # exp(-2): use the symmetric tail
        y = 1 - y
        negate = False
    if y > 0.13533528323661269189:
        y -= 0.5
        z = y * y
        return (y + y * (z * polevl(z, NDTRI_P0, 4) / p1evl(z, NDTRI_Q0, 8))) \
            * 2.50662827463100050242
    x = sqrt(-2 * log(y))
    x0 = x - log(x) / x
    z = 1 / x
    if x < 8:
        x = x0 - z * polevl(z, NDTRI_P1, 8) / p1evl(z, NDTRI_Q1, 8)
    else:
        x = x0 - z * polevl(z, NDTRI_P2, 8) / p1evl(z, NDTRI_Q2, 8)
    return -x if negate else x


cdef double expx2(double x) noexcept nogil:
    """exp(x * x) without the rounding error of x * x (Cephes expx2): x = m + f with m a
    multiple of 1/128, so m * m is exact and the small rest 2mf + f^2 goes to a second exp."""
    cdef double m, f
    x = fabs(x)
    m = floor(x * 128 + 0.5) / 128
    f = x - m
    return exp(m * m) * exp(2 * m * f + f * f)


cdef double sp_erfcx(double x) noexcept nogil:
    """exp(x^2) erfc(x): the product below 26 (erfc is accurate relative to itself, expx2 is
    exact-ish), the Laplace continued fraction 1/sqrt(pi) / (x + (1/2)/(x + 1/(x + ...)))
    beyond, where erfc underflows; for x < 0, 2 exp(x^2) - erfcx(-x)."""
    cdef double t
    cdef int k
    if x != x:
        return x
    if x < 0:
        if x < -26.7:
            return INFINITY
        return 2 * expx2(x) - sp_erfcx(-x)
    if x < 26:
        return expx2(x) * erfc(x)
    t = x
    for k in range(12, 0, -1):          # converged to double precision for x >= 26
        t = x + 0.5 * k / t
    return SQRT_PI_INV / t


cdef double sp_log_ndtr(double x) noexcept nogil:
    """log Phi(x) as torch (SciPy): through erfcx below -1, where Phi underflows."""
    cdef double t = x * 0.707106781186547524400844362104849039
    if x < -1:
        return log(sp_erfcx(-t) / 2) - t * t
    return log1p(-erfc(t) / 2)


cdef double sp_bessel_j0(double x) noexcept nogil:
    cdef double z, w, p, q
    x = fabs(x)
    if x <= 5:
        z = x * x
        if x < 1e-5:
            return 1 - z / 4
        return (z - 5.78318596294678452118E0) * (z - 3.04712623436620863991E1) \
            * polevl(z, J0_RP, 3) / p1evl(z, J0_RQ, 8)
    w = 5 / x
    z = w * w
    p = polevl(z, J0_PP, 6) / polevl(z, J0_PQ, 6)
    q = polevl(z, J0_QP, 7) / p1evl(z, J0_QQ, 7)
    return (p * cos(x - 0.785398163397448309615660845819875721)
            - w * q * sin(x - 0.785398163397448309615660845819875721)) \
        * 0.797884560802865355879892119868763737 / sqrt(x)


cdef double sp_bessel_j1(double x) noexcept nogil:
    """Odd: computed for |x| and the sign put back."""
    cdef double ax = fabs(x), z, w, p, q, r
    if ax <= 5:
        z = ax * ax
        r = polevl(z, J1_RP, 3) / p1evl(z, J1_RQ, 8) * ax \
            * (z - 1.46819706421238932572E1) * (z - 4.92184563216946036703E1)
    else:
        w = 5 / ax
        z = w * w
        p = polevl(z, J1_PP, 6) / polevl(z, J1_PQ, 6)
        q = polevl(z, J1_QP, 7) / p1evl(z, J1_QQ, 7)
        r = (p * cos(ax - 2.356194490192344928846982537459627163)
             - w * q * sin(ax - 2.356194490192344928846982537459627163)) \
            * 0.797884560802865355879892119868763737 / sqrt(ax)
    return -r if x < 0 else r


cdef double sp_zeta(double x, double q) noexcept nogil:
    """Hurwitz zeta (Cephes zeta.c, as torch): direct sum until the terms are negligible or
    q + k > 9, then the Euler-Maclaurin tail. x < 1 is NaN, x == 1 a pole; q a non-positive
    integer is a pole, other negative q need an integer x."""
    cdef double a, b = 0, k, s, t, w
    cdef int i = 0
    if x == 1:
        return INFINITY
    if x < 1:
        return NAN
    if q <= 0:
        if q == floor(q):
            return INFINITY
        if x != floor(x):
            return NAN
    s = pow(q, -x)
    a = q
    while i < 9 or a <= 9:
        i += 1
        a += 1
        b = pow(a, -x)
        s += b
        if -MACHEP * s < b < MACHEP * s:
            return s
    w = a
    s += b * w / (x - 1) - 0.5 * b
    a = 1
    k = 0
    for i in range(12):
        a *= x + k
        b /= w
        t = a * b / ZETA_A[i]
        s += t
        if fabs(t / s) < MACHEP:
            return s
        k += 1
        a *= x + k
        b /= w
        k += 1
    return s


# Lanczos sum (g = 6.0246800407767296) scaled by exp(g) (Boost, via SciPy and torch's igamma):
# it gives x^a e^-x / Gamma(a) without the cancellation of a log x - x - lgamma(a) when a ~ x.
cdef double[13] LANCZOS_NUM = [
    0.006061842346248906525783753964555936883222, 0.5098416655656676188125178644804694509993,
    19.51992788247617482847860966235652136208, 449.9445569063168119446858607650988409623,
    6955.999602515376140356310115515198987526, 75999.29304014542649875303443598909137092,
    601859.6171681098786670226533699352302507, 3481712.15498064590882071018964774556468,
    14605578.08768506808414169982791359218571, 43338889.32467613834773723740590533316085,
    86363131.28813859145546927288977868422342, 103794043.1163445451906271053616070238554,
    56906521.91347156388090791033559122686859]
cdef double[13] LANCZOS_DENOM = [
    1., 66., 1925., 32670., 357423., 2637558., 13339535., 45995730., 105258076., 150917976.,
    120543840., 39916800., 0.]
cdef double LANCZOS_G = 6.024680040776729583740234375
cdef int IGAMMA_MAXITER = 2000


cdef double lanczos_sum_expg_scaled(double x) noexcept nogil:
    """The ratio of two degree-12 polynomials, in 1/x (coefficients reversed) for x > 1."""
    cdef double num = 0, den = 0, y
    cdef int i
    if fabs(x) <= 1:
        for i in range(13):
            num = num * x + LANCZOS_NUM[i]
            den = den * x + LANCZOS_DENOM[i]
    else:
        y = 1 / x
        for i in range(12, -1, -1):
            num = num * y + LANCZOS_NUM[i]
            den = den * y + LANCZOS_DENOM[i]
    return num / den


cdef double igamma_factor(double a, double x) noexcept nogil:
    """x^a e^-x / Gamma(a), the prefactor of both series (torch's _igam_helper_fac)."""
    cdef double ax, fac, res, num
    if fabs(a - x) > 0.4 * fabs(a):
        ax = a * log(x) - x - lgamma(a)
        return 0.0 if ax < -7.09782712893383996843E2 else exp(ax)
    fac = a + LANCZOS_G - 0.5
    res = sqrt(fac / 2.718281828459045) / lanczos_sum_expg_scaled(a)
    if a < 200 and x < 200:
        return res * exp(a - x) * pow(x / fac, a)
    num = (x - a - LANCZOS_G + 0.5) / fac
    return res * exp(a * (log1p(num) - num) + x * (0.5 - LANCZOS_G) / fac)


cdef double igamma_series(double a, double x) noexcept nogil:
    """P(a, x) by its power series (DLMF 8.11.4)."""
    cdef double ax = igamma_factor(a, x), r = a, c = 1, total = 1
    cdef int i
    if ax == 0:
        return 0
    for i in range(IGAMMA_MAXITER):
        r += 1
        c *= x / r
        total += c
        if c <= MACHEP * total:
            break
    return total * ax / a


cdef double igammac_series(double a, double x) noexcept nogil:
    """Q(a, x) for small x (DLMF 8.7.3), written to avoid cancellation."""
    cdef double fac = 1, total = 0, term, logx
    cdef int n
    for n in range(1, IGAMMA_MAXITER):
        fac *= -x / n
        term = fac / (a + n)
        total += term
        if fabs(term) <= MACHEP * fabs(total):
            break
    logx = log(x)
    return -expm1(a * logx - lgamma(1 + a)) - exp(a * logx - lgamma(a)) * total


cdef double igammac_fraction(double a, double x) noexcept nogil:
    """Q(a, x) for x > 1.1, x >= a by its continued fraction (DLMF 8.9.2), rescaled when the
    convergents grow large."""
    cdef double ax = igamma_factor(a, x), y, z, c = 0, yc, r, t, ans
    cdef double pk, qk, pkm1, qkm1, pkm2 = 1, qkm2 = x
    cdef int i
    if ax == 0:
        return 0
    y = 1 - a
    z = x + y + 1
    pkm1 = x + 1
    qkm1 = z * x
    ans = pkm1 / qkm1
    for i in range(IGAMMA_MAXITER):
        c += 1
        y += 1
        z += 2
        yc = y * c
        pk = pkm1 * z - pkm2 * yc
        qk = qkm1 * z - qkm2 * yc
        if qk != 0:
            r = pk / qk
            t = fabs((ans - r) / r)
            ans = r
        else:
            t = 1
        pkm2, pkm1, qkm2, qkm1 = pkm1, pk, qkm1, qk
        if fabs(pk) > 4.503599627370496e15:
            pkm2 *= MACHEP * 2
            pkm1 *= MACHEP * 2
            qkm2 *= MACHEP * 2
            qkm1 *= MACHEP * 2
        if t <= MACHEP:
            break
    return ans * ax


cdef double igamma_boundary(double a, double x, bint upper) noexcept nogil:
    """torch's (SciPy's) values at the edges of the domain, NaN where it is not one."""
    cdef double lower_value
    if x < 0 or a < 0 or (a == 0 and not x > 0) or (a == INFINITY and x == INFINITY):
        return NAN
    if a == 0 or x == INFINITY:
        lower_value = 1
    else:                               # x == 0 or a == inf
        lower_value = 0
    return 1 - lower_value if upper else lower_value


cdef inline bint igamma_at_boundary(double a, double x) noexcept nogil:
    return not (x > 0 and a > 0 and x < INFINITY and a < INFINITY)


cdef double sp_igammac(double a, double x) noexcept nogil:
    """Q(a, x) as torch's calc_igammac picks its method, less the uniform asymptotic
    expansion for large a ~ x (the series and the fraction still converge there)."""
    if igamma_at_boundary(a, x):
        return x + a if x != x or a != a else igamma_boundary(a, x, True)
    if x > 1.1:
        return 1 - igamma_series(a, x) if x < a else igammac_fraction(a, x)
    if (x <= 0.5 and -0.4 / log(x) < a) or (x > 0.5 and x * 1.1 < a):
        return 1 - igamma_series(a, x)
    return igammac_series(a, x)


cdef double sp_igamma(double a, double x) noexcept nogil:
    """P(a, x) as torch's calc_igamma (see sp_igammac)."""
    if igamma_at_boundary(a, x):
        return x + a if x != x or a != a else igamma_boundary(a, x, False)
    if x > 1 and x > a:
        return 1 - sp_igammac(a, x)
    return igamma_series(a, x)


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
            o[i] = log1pf(a[i]) if real is float else log1p(a[i])
    elif op == UNARY_EXPM1:
        for i in range(n):
            o[i] = expm1f(a[i]) if real is float else expm1(a[i])
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
            o[i] = erff(a[i]) if real is float else erf(a[i])
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
    """ERFINV..BESSEL_J1, computed in double (see the special functions above)."""
    cdef Py_ssize_t i
    if op == UNARY_ERFINV:
        for i in range(n):
            o[i] = <real>sp_erfinv(a[i])
    elif op == UNARY_I0:
        for i in range(n):
            o[i] = <real>(exp(fabs(<double>a[i])) * sp_i0e(a[i]))
    elif op == UNARY_I0E:
        for i in range(n):
            o[i] = <real>sp_i0e(a[i])
    elif op == UNARY_I1:
        for i in range(n):
            o[i] = <real>(exp(fabs(<double>a[i])) * sp_i1e(a[i]))
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


cdef inline bint unary_supported(int op, int dt) noexcept nogil:
    """The op table of minitorch/opcodes.py (generated into opcodes.pxd by setup.py)."""
    return unary_accepts(op, class_bit(dt))


cdef inline bint unary_is_pred(int op) noexcept nogil:
    return unary_writes_bool(op)


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


cdef inline bint binary_is_pred(int op) noexcept nogil:
    return binary_writes_bool(op)


cdef inline bint binary_supported(int op, int dt) noexcept nogil:
    """The op table of minitorch/opcodes.py (generated into opcodes.pxd by setup.py)."""
    return binary_accepts(op, class_bit(dt))


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
    cdef int dtc = buffer_dtype(cond, "where")
    cdef int dt = buffer_dtype(a, "where")
    cdef int dtb = buffer_dtype(b, "where")
    cdef int dto = buffer_dtype(out, "where", True)
    cdef Plan p
    cdef Py_ssize_t size, t, rows, inner
    cdef int nt
    cdef bint by_rows
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
    cdef real peak, total, v, log_total
    cdef const real* xr
    cdef real* yr
    for r in range(r0, r1):
        xr = x + r * n
        yr = y + r * n
        peak = xr[0]
        for j in range(1, n):
            v = xr[j]
            peak = v if (v > peak) | (v != v) else peak
        for j in range(n):
            yr[j] = r_exp(xr[j] - peak)
        total = 0
        for j in range(n):
            total = total + yr[j]
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
        total = 0
        if log:
            for j in range(n):
                total = total + gr[j]
            for j in range(n):
                orow[j] = gr[j] - r_exp(yr[j]) * total
        else:
            for j in range(n):
                total = total + gr[j] * yr[j]
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


cdef void adam_elements(real* p, const real* g, real* m, real* v, real* vmax, Py_ssize_t i0,
                        Py_ssize_t i1, AdamScalars s) noexcept nogil:
    """torch's single-tensor Adam, operation for operation, on elements [i0, i1): each scalar
    is rounded to the element type first, as the separate tensor ops would."""
    cdef real grad_scale = <real>s.grad_scale, param_scale = <real>s.param_scale
    cdef real grad_decay = <real>s.grad_decay, w1 = <real>s.w1, beta2 = <real>s.beta2
    cdef real c2 = <real>s.c2, eps = <real>s.eps, bc2_sqrt = <real>s.bc2_sqrt
    cdef real neg_step = <real>s.neg_step, pi, gi, mi, vi, top
    cdef Py_ssize_t i
    for i in range(i0, i1):
        pi = p[i] * param_scale                         # decoupled weight decay (AdamW)
        gi = g[i] * grad_scale                          # maximize: the negated gradient
        if grad_decay != 0:                             # L2 weight decay (an inf p stays out
            gi = gi + grad_decay * p[i]                 # when there is none)
        mi = m[i]
        mi = mi + w1 * (gi - mi) if w1 < 0.5 else gi - (gi - mi) * (1 - w1)    # lerp
        vi = v[i] * beta2 + c2 * gi * gi
        m[i] = mi
        v[i] = vi
        if vmax != NULL:                                # amsgrad: a NaN on either side wins
            top = vmax[i]
            if top > vi or top != top:
                vi = top
            vmax[i] = vi
        p[i] = pi + neg_step * (mi / (sqrt(vi) / bc2_sqrt + eps))


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
