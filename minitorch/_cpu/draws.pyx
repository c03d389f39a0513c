# cython: cdivision=True
"""The host side of torch's CPU random numbers: raw 32-bit outputs of torch's Mersenne Twister
(minitorch/random.py draws them through numpy's RandomState, which seeds MT19937 as torch's
CPU generator does) become torch's values here, by torch's own transformations
(aten/src/ATen/core/TransformationHelper.h, DistributionTemplates.h, randperm_cpu). The draws
are random numbers; what turns them into floats, normals, integers, permutations and the
other samplers' values is this module's work, calling libm's functions where torch's scalar
loops call them.

A "64-bit draw" is two consecutive 32-bit outputs, the first one high (torch's random64()).
torch's kernels are built for FMA-capable CPUs, where `a * b + c` compiles to one fused
multiply-add: these write fma() so the last bit is torch's on every build."""
cimport numpy as cnp
from cpython.pycapsule cimport PyCapsule_GetPointer
from libc.math cimport (ceil, cos, exp, fabs, floor, fma, fmaf, lgamma, log, log1p, log1pf, pow,
                        sin, sqrt, sqrtf, tan, INFINITY, M_PI, NAN)
from libc.float cimport DBL_MIN, FLT_MIN
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t
from numpy.random cimport bitgen_t

cnp.import_array()

cdef double TWO_POW_MINUS_24 = 1.0 / 16777216.0
cdef double TWO_POW_MINUS_53 = 1.0 / 9007199254740992.0
cdef uint64_t MASK_53 = (<uint64_t>1 << 53) - 1


cdef inline uint64_t draw64(const uint32_t* z, Py_ssize_t i) noexcept nogil:
    return (<uint64_t>z[2 * i] << 32) | z[2 * i + 1]


cdef inline float uniform32(uint32_t bits) noexcept nogil:
    """[0, 1) from the low 24 bits (torch's uniform_real for float)."""
    return <float>(bits & 0xFFFFFF) * <float>TWO_POW_MINUS_24


cdef inline double uniform64(uint64_t bits) noexcept nogil:
    """[0, 1) from the low 53 bits (torch's uniform_real for double)."""
    return <double>(bits & MASK_53) * TWO_POW_MINUS_53


# numpy type numbers, not dtype names: `dtype.name` is a Python property (and comparing a dtype
# with a string parses the string), a few microseconds per call where a tiny draw takes less.
_TYPE_NUMBERS = {"float32": cnp.NPY_FLOAT, "float64": cnp.NPY_DOUBLE, "int64": cnp.NPY_INT64}


cdef inline bint _is_double(cnp.ndarray out):
    return cnp.PyArray_TYPE(out) == cnp.NPY_DOUBLE


def _check_draws(cnp.ndarray draws, Py_ssize_t needed, str op):
    if cnp.PyArray_TYPE(draws) != cnp.NPY_UINT32 or not cnp.PyArray_IS_C_CONTIGUOUS(draws):
        raise TypeError(f"{op}: draws must be a C-contiguous uint32 buffer")
    if cnp.PyArray_SIZE(draws) < needed:
        raise ValueError(f"{op}: {cnp.PyArray_SIZE(draws)} draws, {needed} needed")


def _check_out(cnp.ndarray out, str op, kinds=("float32", "float64")):
    cdef int type_number = cnp.PyArray_TYPE(out)
    if cnp.PyArray_IS_C_CONTIGUOUS(out):
        for kind in kinds:
            if type_number == _TYPE_NUMBERS[kind]:
                return
    raise TypeError(f"{op}: out must be a C-contiguous buffer of {' or '.join(kinds)}")


def uniform_floats(cnp.ndarray draws not None, cnp.ndarray out not None, double low,
                   double high):
    """out = low + (high - low) · u, u in [0, 1) (torch's uniform_ on the CPU): float32 from one
    32-bit draw each, computed in float; float64 from one 64-bit draw each."""
    _check_out(out, "uniform_floats")
    cdef Py_ssize_t n = cnp.PyArray_SIZE(out), i
    cdef bint wide = _is_double(out)
    _check_draws(draws, 2 * n if wide else n, "uniform_floats")
    cdef const uint32_t* z = <const uint32_t*>cnp.PyArray_DATA(draws)
    cdef float* o32 = <float*>cnp.PyArray_DATA(out)
    cdef double* o64 = <double*>cnp.PyArray_DATA(out)
    cdef float low32 = <float>low, span32 = <float>high - <float>low
    cdef double span = high - low
    with nogil:
        if wide:
            for i in range(n):
                o64[i] = fma(uniform64(draw64(z, i)), span, low)
        else:
            for i in range(n):
                o32[i] = fmaf(uniform32(z[i]), span32, low32)


def bernoulli_numbers(cnp.ndarray draws not None, cnp.ndarray out not None, double p):
    """out = 1 where a 53-bit uniform (one 64-bit draw per element) is below p, else 0: torch's
    bernoulli_(p) for a number p on the CPU, written straight in out's dtype."""
    _check_out(out, "bernoulli_numbers")
    cdef Py_ssize_t n = cnp.PyArray_SIZE(out), i
    _check_draws(draws, 2 * n, "bernoulli_numbers")
    cdef const uint32_t* z = <const uint32_t*>cnp.PyArray_DATA(draws)
    cdef float* o32 = <float*>cnp.PyArray_DATA(out)
    cdef double* o64 = <double*>cnp.PyArray_DATA(out)
    cdef bint wide = _is_double(out)
    with nogil:
        if wide:
            for i in range(n):
                o64[i] = 1.0 if uniform64(draw64(z, i)) < p else 0.0
        else:
            for i in range(n):
                o32[i] = 1.0 if uniform64(draw64(z, i)) < p else 0.0


# The samplers torch's CPU kernels run one double uniform through (DistributionTemplates.h's
# exponential, cauchy and geometric distributions, each a scalar loop over the elements).
cpdef enum Sampler:
    EXPONENTIAL = 0
    CAUCHY = 1
    GEOMETRIC = 2


def from_uniforms(cnp.ndarray draws not None, cnp.ndarray out not None, Sampler kind, double a,
                  double b):
    """One 64-bit draw per element gives u in [0, 1) (53 bits); out = EXPONENTIAL (a = lambda):
    -1/a · log1p(-u); CAUCHY (a = median, b = sigma): a + b · tan(π(u - 1/2)), fused; GEOMETRIC
    (a = p): ceil(log(u) / log1p(-p)). Computed in double, stored in out's dtype."""
    _check_out(out, "from_uniforms")
    if kind not in (EXPONENTIAL, CAUCHY, GEOMETRIC):
        raise ValueError(f"from_uniforms: unknown sampler {kind}")
    cdef Py_ssize_t n = cnp.PyArray_SIZE(out), i
    _check_draws(draws, 2 * n, "from_uniforms")
    cdef const uint32_t* z = <const uint32_t*>cnp.PyArray_DATA(draws)
    cdef float* o32 = <float*>cnp.PyArray_DATA(out)
    cdef double* o64 = <double*>cnp.PyArray_DATA(out)
    cdef bint wide = _is_double(out)
    cdef double u, value, scale = -1.0 / a if kind == EXPONENTIAL else 0.0
    cdef double log_q = log1p(-a) if kind == GEOMETRIC else 0.0
    with nogil:
        for i in range(n):
            u = uniform64(draw64(z, i))
            if kind == EXPONENTIAL:
                value = scale * log1p(-u)
            elif kind == CAUCHY:
                value = fma(b, tan(M_PI * (u - 0.5)), a)
            else:
                value = ceil(log(u) / log_q)
            if wide:
                o64[i] = value
            else:
                o32[i] = <float>value


cdef union Bits:
    float f
    int32_t i


# Cephes' single-precision log and sin/cos, as torch's AVX2 normal_fill evaluates them (through
# avx_mathfun's log256_ps and sincos256_ps, multiply-adds fused as its build fuses them):
# minitorch's float32 normals are then torch's to the bit on the machines where torch takes
# that path (checked against torch on 160,000 draws).
cdef float SQRTHF = 0.707106781186547524
cdef float LOG_P0 = 7.0376836292E-2, LOG_P1 = -1.1514610310E-1, LOG_P2 = 1.1676998740E-1
cdef float LOG_P3 = -1.2420140846E-1, LOG_P4 = 1.4249322787E-1, LOG_P5 = -1.6668057665E-1
cdef float LOG_P6 = 2.0000714765E-1, LOG_P7 = -2.4999993993E-1, LOG_P8 = 3.3333331174E-1
cdef float LOG_Q1 = -2.12194440e-4, LOG_Q2 = 0.693359375
cdef float FOUR_OVER_PI = 1.27323954473516
cdef float DP1 = 0.78515625, DP2 = 2.4187564849853515625e-4, DP3 = 3.77489497744594108e-8
cdef float COS_P0 = 2.443315711809948E-005, COS_P1 = -1.388731625493765E-003
cdef float COS_P2 = 4.166664568298827E-002
cdef float SIN_P0 = -1.9515295891E-4, SIN_P1 = 8.3321608736E-3, SIN_P2 = -1.6666654611E-1
cdef float TWO_PI_F = <float>(2.0 * M_PI)


cdef inline float cephes_logf(float x) noexcept nogil:
    """log(x) for a normal positive float: x = m·2^e with m in [sqrt(1/2), sqrt(2)), then a
    degree-9 polynomial in m - 1."""
    cdef Bits b
    b.f = x
    cdef float e = <float>((b.i >> 23) - 0x7f) + 1
    b.i = (b.i & ~0x7f800000) | 0x3f000000          # the mantissa, in [0.5, 1)
    cdef float m = b.f
    cdef bint low = m < SQRTHF
    cdef float held = m if low else 0
    m = m - 1
    e = e - (1 if low else 0)
    m = m + held
    cdef float z = m * m
    cdef float y = fmaf(fmaf(fmaf(fmaf(LOG_P0, m, LOG_P1), m, LOG_P2), m, LOG_P3), m, LOG_P4)
    y = fmaf(fmaf(fmaf(fmaf(y, m, LOG_P5), m, LOG_P6), m, LOG_P7), m, LOG_P8) * m
    y = fmaf(y, z, e * LOG_Q1)
    y = fmaf(z, -0.5, y)
    m = m + y
    return fmaf(e, LOG_Q2, m)


cdef inline void cephes_sincosf(float x, float* sine, float* cosine) noexcept nogil:
    """sin(x) and cos(x) for x >= 0: x reduced by multiples of pi/4 (pi/4 in three parts), then
    the sine or cosine polynomial on [-pi/4, pi/4] for each, and the octant's signs."""
    cdef int32_t octant = (<int32_t>(x * FOUR_OVER_PI) + 1) & ~1
    cdef float y = <float>octant
    cdef int32_t sine_sign = (octant & 4) << 29
    cdef int32_t cosine_sign = (~(octant - 2) & 4) << 29
    cdef bint swapped = (octant & 2) != 0
    x = fmaf(y, -DP1, x)
    x = fmaf(y, -DP2, x)
    x = fmaf(y, -DP3, x)
    cdef float z = x * x
    cdef float c = fmaf(fmaf(COS_P0, z, COS_P1), z, COS_P2) * z
    c = fmaf(c, z, -(z * 0.5)) + 1
    cdef float s = fmaf(fmaf(SIN_P0, z, SIN_P1), z, SIN_P2) * z
    s = fmaf(s, x, x)
    cdef Bits bs, bc
    bs.f = c if swapped else s
    bc.f = s if swapped else c
    bs.i = bs.i ^ sine_sign
    bc.i = bc.i ^ cosine_sign
    sine[0] = bs.f
    cosine[0] = bc.f


cdef void box_muller_16_float(float* d, float mean, float std) noexcept nogil:
    """torch's normal_fill_16 (AVX2): the first 8 uniforms give the radii, the next 8 the
    angles."""
    cdef int j
    cdef float radius, sine, cosine
    for j in range(8):
        radius = sqrtf(-2 * cephes_logf(1 - d[j]))      # 1 - u in (0, 1] for the log
        cephes_sincosf(TWO_PI_F * d[j + 8], &sine, &cosine)
        d[j] = fmaf(radius * cosine, std, mean)
        d[j + 8] = fmaf(radius * sine, std, mean)


cdef void box_muller_16_double(double* d, double mean, double std) noexcept nogil:
    cdef int j
    cdef double u1, u2, radius, theta
    for j in range(8):
        u1 = 1 - d[j]
        u2 = d[j + 8]
        radius = sqrt(-2 * log(u1))
        theta = 2.0 * M_PI * u2
        d[j] = fma(radius * cos(theta), std, mean)
        d[j + 8] = fma(radius * sin(theta), std, mean)


def normal_blocks(cnp.ndarray draws not None, cnp.ndarray out not None, double mean,
                  double std):
    """The body of torch's normal_fill (randn / normal_ of 16 or more contiguous elements on
    the CPU), for whole blocks of 16: out filled with uniforms, then each block turned into
    normals by Box-Muller (the caller redraws the last 16 when n is not a multiple of 16, as
    torch does). float32 follows torch's AVX2 kernel (Cephes' log and sin/cos), float64 its
    scalar one (libm's)."""
    _check_out(out, "normal_blocks")
    cdef Py_ssize_t n = cnp.PyArray_SIZE(out), i, block
    if n % 16:
        raise ValueError(f"normal_blocks: {n} elements, not whole blocks of 16")
    cdef bint wide = _is_double(out)
    _check_draws(draws, 2 * n if wide else n, "normal_blocks")
    cdef const uint32_t* z = <const uint32_t*>cnp.PyArray_DATA(draws)
    cdef float* o32 = <float*>cnp.PyArray_DATA(out)
    cdef double* o64 = <double*>cnp.PyArray_DATA(out)
    with nogil:
        if wide:
            for i in range(n):
                o64[i] = uniform64(draw64(z, i))
            for block in range(0, n, 16):
                box_muller_16_double(o64 + block, mean, std)
        else:
            for i in range(n):
                o32[i] = uniform32(z[i])
            for block in range(0, n, 16):
                box_muller_16_float(o32 + block, <float>mean, <float>std)


def draws_for_normal_pairs(Py_ssize_t n, bint cached):
    """How many 32-bit draws normal_pairs takes for n elements: two 64-bit draws per pair of
    normals, the cached one first."""
    cdef Py_ssize_t fresh = n - 1 if cached and n else n
    return 4 * ((fresh + 1) // 2)


cdef inline double normal_pair(double u1, double u2, double* second) noexcept nogil:
    """torch's normal_distribution<double> from two uniforms: r·cos(2πu1), with r·sin(2πu1)
    left in *second for the generator to cache, r = sqrt(-2·log1p(-u2))."""
    cdef double r = sqrt(-2.0 * log1p(-u2)), theta = 2.0 * M_PI * u1
    second[0] = r * sin(theta)
    return r * cos(theta)


def normal_pairs(cnp.ndarray draws not None, cnp.ndarray out not None, double mean, double std,
                 cached, bint log_normal=False):
    """torch's normal_distribution<double> (randn / normal_ of fewer than 16 elements, or a
    non-contiguous one, on the CPU): each pair of uniforms u1, u2 gives r·cos(2πu1) and
    caches r·sin(2πu1), r = sqrt(-2·log1p(-u2)); the generator's cached normal (or None) is
    used first. With log_normal, exp of each value (torch's lognormal_distribution). Computed
    in double, stored in out's dtype. Returns the normal left cached."""
    _check_out(out, "normal_pairs")
    cdef Py_ssize_t n = cnp.PyArray_SIZE(out), i, pair = 0
    cdef bint has_cache = cached is not None
    _check_draws(draws, draws_for_normal_pairs(n, has_cache), "normal_pairs")
    cdef double cache = cached if has_cache else 0.0
    cdef double value
    cdef const uint32_t* z = <const uint32_t*>cnp.PyArray_DATA(draws)
    cdef float* o32 = <float*>cnp.PyArray_DATA(out)
    cdef double* o64 = <double*>cnp.PyArray_DATA(out)
    cdef bint wide = _is_double(out)
    with nogil:
        for i in range(n):
            if has_cache:
                value = cache
                has_cache = False
            else:
                value = normal_pair(uniform64(draw64(z, 2 * pair)),
                                    uniform64(draw64(z, 2 * pair + 1)), &cache)
                pair += 1
                has_cache = True
            value = fma(value, std, mean)
            if log_normal:
                value = exp(value)
            if wide:
                o64[i] = value
            else:
                o32[i] = <float>value
    return cache if has_cache else None


def integers(cnp.ndarray draws not None, cnp.ndarray out not None, int64_t low, uint64_t span,
             bint wide):
    """out = low + draw % span (torch's random_from_to / uniform_int): one 32-bit draw per
    element, or one 64-bit draw when `wide` (torch takes 64 bits for spans of 2**32 or more,
    and for random_() of int64 and float64). out: int64."""
    _check_out(out, "integers", ("int64",))
    cdef Py_ssize_t n = cnp.PyArray_SIZE(out), i
    if span == 0:
        raise ValueError("integers: span must be positive")
    _check_draws(draws, 2 * n if wide else n, "integers")
    cdef const uint32_t* z = <const uint32_t*>cnp.PyArray_DATA(draws)
    cdef int64_t* o = <int64_t*>cnp.PyArray_DATA(out)
    with nogil:
        if wide:
            for i in range(n):
                o[i] = low + <int64_t>(draw64(z, i) % span)
        else:
            for i in range(n):
                o[i] = low + <int64_t>(z[i] % span)


def swap_shuffle(cnp.ndarray draws not None, cnp.ndarray out not None):
    """out = 0 .. n - 1, then for i < n - 1 swap out[i] and out[i + draws[i] % (n - i)]
    (torch's randperm_cpu for n < 2**31 / 10). draws: uint32, n - 1 of them; out: int64 of n
    elements."""
    cdef Py_ssize_t n = cnp.PyArray_SIZE(out), i, j
    _check_out(out, "swap_shuffle", ("int64",))
    _check_draws(draws, n - 1, "swap_shuffle")
    cdef const uint32_t* z = <const uint32_t*>cnp.PyArray_DATA(draws)
    cdef int64_t* r = <int64_t*>cnp.PyArray_DATA(out)
    cdef int64_t held
    with nogil:
        for i in range(n):
            r[i] = i
        for i in range(n - 1):
            j = i + <Py_ssize_t>(<int64_t>z[i] % (n - i))
            held = r[i]
            r[i] = r[j]
            r[j] = held


# ---- samplers that take a varying number of draws per element (rejection loops) ----------
# They pull the twister's outputs one at a time through numpy's bit-generator interface, in
# the order torch's generator hands them out.

cdef struct Normals:
    double cached           # torch's generator keeps the second normal of a pair
    bint has_cached


ctypedef fused real:
    float
    double


cdef bitgen_t* twister_of(bit_generator) except NULL:
    """The C interface of numpy's bit generator (its capsule's pointer)."""
    return <bitgen_t*>PyCapsule_GetPointer(bit_generator.capsule, "BitGenerator")


cdef inline double next_uniform(bitgen_t* rng) noexcept nogil:
    """torch's uniform_real_distribution<double>(0, 1): 53 bits of random64()."""
    cdef uint64_t high = rng.next_uint32(rng.state)
    cdef uint64_t low = rng.next_uint32(rng.state)
    return uniform64((high << 32) | low)


cdef inline double next_normal(bitgen_t* rng, Normals* normals) noexcept nogil:
    """torch's normal_distribution<double>(0, 1) (normal_pairs' sampler, one value)."""
    cdef double u1
    if normals.has_cached:
        normals.has_cached = False
        return normals.cached
    u1 = next_uniform(rng)      # the two uniforms in torch's order
    normals.has_cached = True
    return normal_pair(u1, next_uniform(rng), &normals.cached)


cdef double sample_gamma(real alpha, bitgen_t* rng, Normals* normals) noexcept nogil:
    """torch's sample_gamma (ATen/native/Distributions.h, Marsaglia and Tsang with the boost
    for alpha < 1), its float literals and float-typed alpha arithmetic kept: a float32
    alpha is boosted and shifted in float, the rest runs in double."""
    cdef double scale = 1.0, d, c, x, y, v, u, xx
    if alpha < 1:
        if alpha == 0:
            return 0.0
        scale *= pow(1 - next_uniform(rng), <real>1.0 / alpha)
        alpha += <real>1.0
    d = alpha - <real>(<float>1.0 / <float>3.0)
    c = 1.0 / sqrt(9.0 * d)
    while True:
        while True:
            x = next_normal(rng, normals)
            y = 1.0 + c * x
            if y > 0:
                break
        v = y * y * y
        u = 1 - next_uniform(rng)
        xx = x * x
        if u < 1.0 - <double><float>0.0331 * xx * xx:
            return scale * d * v
        if log(u) < 0.5 * xx + d * (1.0 - v + log(v)):
            return scale * d * v


def gamma_draws(bit_generator, cnp.ndarray alphas not None, cnp.ndarray out not None, cached):
    """out[i] = a Gamma(alphas[i], 1) draw from the MT19937 `bit_generator` (numpy's, holding
    torch's twister), as torch's _standard_gamma makes it on the CPU: alphas and out of one
    dtype, float32 (torch's float kernel) or float64; each draw at least the dtype's smallest
    normal number. `cached` is the generator's cached normal (or None); returns the one left."""
    _check_out(out, "gamma_draws")
    if alphas.dtype != out.dtype or not cnp.PyArray_IS_C_CONTIGUOUS(alphas) \
            or cnp.PyArray_SIZE(alphas) != cnp.PyArray_SIZE(out):
        raise TypeError("gamma_draws: alphas must be a C-contiguous array of out's dtype "
                        "and size")
    cdef bitgen_t* rng = twister_of(bit_generator)
    cdef Normals normals
    normals.has_cached = cached is not None
    normals.cached = cached if cached is not None else 0.0
    cdef Py_ssize_t n = cnp.PyArray_SIZE(out), i
    cdef const float* a32 = <const float*>cnp.PyArray_DATA(alphas)
    cdef const double* a64 = <const double*>cnp.PyArray_DATA(alphas)
    cdef float* o32 = <float*>cnp.PyArray_DATA(out)
    cdef double* o64 = <double*>cnp.PyArray_DATA(out)
    cdef float drawn32
    cdef double drawn64
    cdef bint wide = _is_double(out)
    with bit_generator.lock, nogil:
        for i in range(n):
            if wide:
                drawn64 = sample_gamma(a64[i], rng, &normals)
                o64[i] = drawn64 if drawn64 > DBL_MIN else DBL_MIN
            else:
                drawn32 = <float>sample_gamma(a32[i], rng, &normals)
                o32[i] = drawn32 if drawn32 > FLT_MIN else FLT_MIN
    return normals.cached if normals.has_cached else None


cdef double poisson_draw(double rate, bitgen_t* rng) noexcept nogil:
    """torch's sample_poisson (Distributions.cpp, after numpy's): Hoermann's transformed
    rejection from a rate of 10, else multiplying uniforms until below exp(-rate)."""
    cdef double slam, loglam, a, b, invalpha, vr, U, V, us, product, limit
    cdef int64_t k
    if rate >= 10:
        slam = sqrt(rate)
        loglam = log(rate)
        b = 0.931 + 2.53 * slam
        a = -0.059 + 0.02483 * b
        invalpha = 1.1239 + 1.1328 / (b - 3.4)
        vr = 0.9277 - 3.6224 / (b - 2)
        while True:
            U = next_uniform(rng) - 0.5
            V = next_uniform(rng)
            us = 0.5 - fabs(U)
            k = <int64_t>floor((2 * a / us + b) * U + rate + 0.43)
            if us >= 0.07 and V <= vr:
                return <double>k
            if k < 0 or (us < 0.013 and V > us):
                continue
            if log(V) + log(invalpha) - log(a / (us * us) + b) <= \
                    -rate + k * loglam - lgamma(<double>k + 1):
                return <double>k
    if rate == 0:
        return 0.0
    k = 0
    product = 1.0
    limit = exp(-rate)
    while True:
        product *= next_uniform(rng)
        if product > limit:
            k += 1
        else:
            return <double>k


def poisson_draws(bit_generator, cnp.ndarray rates not None, cnp.ndarray out not None):
    """out[i] = a Poisson(rates[i]) draw from the MT19937 `bit_generator`, as torch's CPU
    kernel makes it (each rate taken as a double): float64 arrays of one size."""
    _check_out(out, "poisson_draws", ("float64",))
    _check_out(rates, "poisson_draws", ("float64",))
    if cnp.PyArray_SIZE(rates) != cnp.PyArray_SIZE(out):
        raise TypeError("poisson_draws: rates and out differ in size")
    cdef bitgen_t* rng = twister_of(bit_generator)
    cdef Py_ssize_t n = cnp.PyArray_SIZE(out), i
    cdef const double* r = <const double*>cnp.PyArray_DATA(rates)
    cdef double* o = <double*>cnp.PyArray_DATA(out)
    with bit_generator.lock, nogil:
        for i in range(n):
            o[i] = poisson_draw(r[i], rng)


cdef double stirling_tail(double k) noexcept nogil:
    """torch's stirling_approx_tail: the error of Stirling's log k!, tabulated below 10."""
    cdef double kp1sq
    if k < 10:
        return STIRLING_TAIL[<int>k]
    kp1sq = (k + 1) * (k + 1)
    return (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)


cdef double[10] STIRLING_TAIL = [
    0.0810614667953272, 0.0413406959554092, 0.0276779256849983, 0.02079067210376509,
    0.0166446911898211, 0.0138761288230707, 0.0118967099458917, 0.0104112652619720,
    0.00925546218271273, 0.00833056343336287]


cdef inline double log1p_as(real x) noexcept nogil:
    """std::log1p of torch's scalar type: log1pf for a float."""
    if real is float:
        return log1pf(x)
    return log1p(x)


cdef inline double sqrt_as(real x) noexcept nogil:
    if real is float:
        return sqrtf(x)
    return sqrt(x)


cdef real binomial_inversion(real count, real prob, bitgen_t* rng) noexcept nogil:
    cdef double geom_sum = 0, logprob = log1p_as(-prob)
    cdef real num_geom = 0
    while True:
        geom_sum += ceil(log(next_uniform(rng)) / logprob)
        if geom_sum > count:
            return num_geom
        num_geom = num_geom + 1


cdef real btrs(real count, real prob, bitgen_t* rng) noexcept nogil:
    """torch's btrs (Hoermann's transformed rejection with squeeze), its scalar-type
    arithmetic kept where torch's is in the parameters' type."""
    cdef real k
    cdef double U, V, us, upperbound
    cdef double stddev = sqrt_as(<real>(count * prob * (1 - prob)))
    cdef double b = 1.15 + 2.53 * stddev
    cdef double a = -0.0873 + 0.0248 * b + 0.01 * prob
    cdef double c = count * prob + 0.5
    cdef double v_r = 0.92 - 4.2 / b
    cdef double r = <real>(prob / (1 - prob))
    cdef double alpha = (2.83 + 5.1 / b) * stddev
    cdef double m = floor(<real>((count + 1) * prob))
    while True:
        U = next_uniform(rng) - 0.5
        V = next_uniform(rng)
        us = 0.5 - fabs(U)
        k = <real>floor((2 * a / us + b) * U + c)
        if k < 0 or k > count:
            continue
        if us >= 0.07 and V <= v_r:
            return k
        V = log(V * alpha / (a / (us * us) + b))
        upperbound = ((m + 0.5) * log((m + 1) / (r * (count - m + 1)))
                      + (count + 1) * log((count - m + 1) / <real>(count - k + 1))
                      + (k + 0.5) * log(r * <real>(count - k + 1) / <real>(k + 1))
                      + stirling_tail(m) + stirling_tail(count - m)
                      - stirling_tail(k) - stirling_tail(<real>(count - k)))
        if V <= upperbound:
            return k


cdef real sample_binomial(real count, real prob, bitgen_t* rng) noexcept nogil:
    """torch's sample_binomial: btrs from a mean of 10, inversion below, on the smaller of
    prob and 1 - prob."""
    cdef real qprob
    if count <= 0.0 or prob <= 0.0:
        return 0
    if not count < INFINITY:
        return NAN          # a NaN or infinite count: torch's loops would never end
    if prob >= 1.0:
        return count
    if prob <= 0.5:
        if count * prob >= 10.0:
            return btrs(count, prob, rng)
        return binomial_inversion(count, prob, rng)
    if not prob > 0.5:
        return NAN          # prob is NaN
    qprob = <real>(1.0 - prob)
    if count * qprob >= 10.0:
        return count - btrs(count, qprob, rng)
    return count - binomial_inversion(count, qprob, rng)


def binomial_draws(bit_generator, cnp.ndarray counts not None, cnp.ndarray probs not None,
                   cnp.ndarray out not None):
    """out[i] = a Binomial(counts[i], probs[i]) draw from the MT19937 `bit_generator`, as
    torch's CPU kernel makes it: C-contiguous arrays of one size and one dtype, float32 (torch's
    float arithmetic) or float64. A NaN probability, or a NaN or infinite count, draws NaN."""
    _check_out(out, "binomial_draws")
    for array in (counts, probs):
        if array.dtype != out.dtype or not cnp.PyArray_IS_C_CONTIGUOUS(array) \
                or cnp.PyArray_SIZE(array) != cnp.PyArray_SIZE(out):
            raise TypeError("binomial_draws: counts and probs must be C-contiguous arrays of "
                            "out's dtype and size")
    cdef bitgen_t* rng = twister_of(bit_generator)
    cdef Py_ssize_t n = cnp.PyArray_SIZE(out), i
    cdef const float* c32 = <const float*>cnp.PyArray_DATA(counts)
    cdef const float* p32 = <const float*>cnp.PyArray_DATA(probs)
    cdef float* o32 = <float*>cnp.PyArray_DATA(out)
    cdef const double* c64 = <const double*>cnp.PyArray_DATA(counts)
    cdef const double* p64 = <const double*>cnp.PyArray_DATA(probs)
    cdef double* o64 = <double*>cnp.PyArray_DATA(out)
    cdef bint wide = _is_double(out)
    with bit_generator.lock, nogil:
        for i in range(n):
            if wide:
                o64[i] = sample_binomial(c64[i], p64[i], rng)
            else:
                o32[i] = sample_binomial(c32[i], p32[i], rng)
