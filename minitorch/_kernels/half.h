/* The 16-bit float formats, converted bit by bit so that both backends round alike:
 * IEEE half (float16: 1 sign, 5 exponent, 10 mantissa bits) and bfloat16 (the top 16 bits of a
 * float32). Both are storage formats in minitorch: kernels compute in float32 and round each
 * result once with these functions, as torch's CPU kernels do.
 *
 * Rounding is to nearest, ties to even; NaN becomes c10's quiet NaN (float16 keeps the sign,
 * bfloat16 is 0x7fc0); float32 values
 * beyond the half range become infinities and those below half's smallest subnormal become
 * (signed) zeros, as IEEE conversions do.
 *
 * Included by the Cython cast kernel (minitorch/_cpu/strided.pyx, compiled as C) and by the CUDA
 * kernels (minitorch/_gpu/kernels/strided.cu through the loader, which pastes this text). A CUDA
 * includer defines HALF_DEVICE as __device__ first. No header is included: NVRTC has none.
 */
#ifndef MINITORCH_HALF_H
#define MINITORCH_HALF_H

#ifdef HALF_DEVICE
#define HALF_FN HALF_DEVICE static inline
#define HALF_BITS(f) __float_as_uint(f)
#define HALF_FLOAT(u) __uint_as_float(u)
#else
#define HALF_FN static inline
HALF_FN unsigned int half_bits_of(float f) { union { float f; unsigned int u; } v; v.f = f; return v.u; }
HALF_FN float half_float_of(unsigned int u) { union { float f; unsigned int u; } v; v.u = u; return v.f; }
#define HALF_BITS(f) half_bits_of(f)
#define HALF_FLOAT(u) half_float_of(u)
#endif

HALF_FN float mt_half_to_float(unsigned short h) {
    unsigned int sign = ((unsigned int)h & 0x8000u) << 16;
    unsigned int exponent = ((unsigned int)h >> 10) & 0x1fu, mantissa = (unsigned int)h & 0x3ffu;
    if (exponent == 0x1fu)                          /* inf, NaN (payload kept) */
        return HALF_FLOAT(sign | 0x7f800000u | (mantissa << 13));
    if (exponent == 0) {                            /* zero, subnormal: m * 2^-24, exact */
        float value = (float)mantissa * 5.9604644775390625e-08f;
        return sign ? -value : value;
    }
    return HALF_FLOAT(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

HALF_FN unsigned short mt_float_to_half(float f) {
    unsigned int x = HALF_BITS(f);
    unsigned int sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u)                           /* NaN */
        return (unsigned short)(sign | 0x7e00u);
    if (ax >= 0x477ff000u)                          /* >= 65520 rounds to infinity */
        return (unsigned short)(sign | 0x7c00u);
    if (ax >= 0x38800000u) {                        /* normal half: rebias, round the 13 bits */
        unsigned int m = ax - 0x38000000u;
        m += 0x0fffu + ((m >> 13) & 1u);
        return (unsigned short)(sign | (m >> 13));
    }
    if (ax < 0x33000000u)                           /* below 2^-25: zero */
        return (unsigned short)sign;
    {                                               /* subnormal half: m = mantissa >> shift */
        unsigned int shift = 126u - (ax >> 23);     /* 14 .. 24 */
        unsigned int mantissa = (ax & 0x7fffffu) | 0x800000u;
        unsigned int r = mantissa >> shift, rest = mantissa & ((1u << shift) - 1u);
        unsigned int halfway = 1u << (shift - 1u);
        if (rest > halfway || (rest == halfway && (r & 1u)))
            r += 1u;
        return (unsigned short)(sign | r);
    }
}

HALF_FN float mt_bfloat16_to_float(unsigned short h) {
    return HALF_FLOAT((unsigned int)h << 16);
}

HALF_FN unsigned short mt_float_to_bfloat16(float f) {
    unsigned int x = HALF_BITS(f);
    if ((x & 0x7fffffffu) > 0x7f800000u)            /* NaN */
        return (unsigned short)0x7fc0u;
    return (unsigned short)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

#endif
