# cython: cdivision=True
"""The host side of torch's CPU random numbers: raw 32-bit outputs of torch's Mersenne Twister
(minitorch/random.py draws them through numpy's RandomState, which seeds MT19937 as torch's
CPU generator does) become torch's values here, by torch's own transformations
(aten/src/ATen/core/TransformationHelper.h, DistributionTemplates.h, randperm_cpu). The draws
are random numbers; what turns them into floats, normals, integers and permutations is this
module's work.

A "64-bit draw" is two consecutive 32-bit outputs, the first one high (torch's random64()).
torch's kernels are built for FMA-capable CPUs, where `a * b + c` compiles to one fused
multiply-add: these write fma() so the last bit is torch's on every build."""
cimport numpy as cnp
from libc.math cimport cos, cosf, fma, fmaf, log, log1p, logf, sin, sinf, sqrt, sqrtf, M_PI
from libc.stdint cimport int64_t, uint32_t, uint64_t

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


def _check_draws(cnp.ndarray draws, Py_ssize_t needed, str op):
    if draws.dtype != "uint32" or not cnp.PyArray_IS_C_CONTIGUOUS(draws):
        raise TypeError(f"{op}: draws must be a C-contiguous uint32 buffer")
    if cnp.PyArray_SIZE(draws) < needed:
        raise ValueError(f"{op}: {cnp.PyArray_SIZE(draws)} draws, {needed} needed")


def _check_out(cnp.ndarray out, str op, kinds=("float32", "float64")):
    if out.dtype.name not in kinds or not cnp.PyArray_IS_C_CONTIGUOUS(out):
        raise TypeError(f"{op}: out must be a C-contiguous buffer of {' or '.join(kinds)}")


def uniform_floats(cnp.ndarray draws not None, cnp.ndarray out not None, double low,
                   double high):
    """out = low + (high - low) · u, u in [0, 1) (torch's uniform_ on the CPU): float32 from one
    32-bit draw each, computed in float; float64 from one 64-bit draw each."""
    _check_out(out, "uniform_floats")
    cdef Py_ssize_t n = cnp.PyArray_SIZE(out), i
    cdef bint wide = out.dtype.name == "float64"
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


cdef void box_muller_16_float(float* d, float mean, float std) noexcept nogil:
    """torch's normal_fill_16: the first 8 uniforms give the radii, the next 8 the angles."""
    cdef int j
    cdef float u1, u2, radius, theta
    for j in range(8):
        u1 = 1 - d[j]                       # [0, 1) -> (0, 1] for the log
        u2 = d[j + 8]
        radius = sqrtf(-2 * logf(u1))
        theta = <float>(2.0 * M_PI * u2)
        d[j] = fmaf(radius * cosf(theta), std, mean)
        d[j + 8] = fmaf(radius * sinf(theta), std, mean)


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
    torch does). (torch's float32 path runs vectorised log/sin/cos on AVX2 machines: those
    values can differ from these in the last bit.)"""
    _check_out(out, "normal_blocks")
    cdef Py_ssize_t n = cnp.PyArray_SIZE(out), i, block
    if n % 16:
        raise ValueError(f"normal_blocks: {n} elements, not whole blocks of 16")
    cdef bint wide = out.dtype.name == "float64"
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


def normal_pairs(cnp.ndarray draws not None, cnp.ndarray out not None, double mean, double std,
                 cached):
    """torch's normal_distribution<double> (randn / normal_ of fewer than 16 elements, or a
    non-contiguous one, on the CPU): each pair of uniforms u1, u2 gives r·cos(2πu1) and
    caches r·sin(2πu1), r = sqrt(-2·log1p(-u2)); the generator's cached normal (or None) is
    used first. Computed in double, stored in out's dtype. Returns the normal left cached."""
    _check_out(out, "normal_pairs")
    cdef Py_ssize_t n = cnp.PyArray_SIZE(out), i, pair = 0
    cdef bint has_cache = cached is not None
    _check_draws(draws, draws_for_normal_pairs(n, has_cache), "normal_pairs")
    cdef double cache = cached if has_cache else 0.0
    cdef double u1, u2, r, theta, value
    cdef const uint32_t* z = <const uint32_t*>cnp.PyArray_DATA(draws)
    cdef float* o32 = <float*>cnp.PyArray_DATA(out)
    cdef double* o64 = <double*>cnp.PyArray_DATA(out)
    cdef bint wide = out.dtype.name == "float64"
    with nogil:
        for i in range(n):
            if has_cache:
                value = cache
                has_cache = False
            else:
                u1 = uniform64(draw64(z, 2 * pair))
                u2 = uniform64(draw64(z, 2 * pair + 1))
                pair += 1
                r = sqrt(-2.0 * log1p(-u2))
                theta = 2.0 * M_PI * u1
                cache = r * sin(theta)
                has_cache = True
                value = r * cos(theta)
            if wide:
                o64[i] = fma(value, std, mean)
            else:
                o32[i] = <float>fma(value, std, mean)
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
    if draws.dtype != "uint32" or out.dtype != "int64" or not cnp.PyArray_IS_C_CONTIGUOUS(out) \
            or not cnp.PyArray_IS_C_CONTIGUOUS(draws):
        raise TypeError("swap_shuffle: draws must be a C-contiguous uint32 buffer, out an int64 "
                        "one")
    if cnp.PyArray_SIZE(draws) < n - 1:
        raise ValueError(f"swap_shuffle: {cnp.PyArray_SIZE(draws)} draws for {n} elements")
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
