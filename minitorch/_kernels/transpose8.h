/* An 8 x 8 transposing copy of 32-bit words (float32, int32: bits only) in registers, with
 * gcc/clang vector types: three rounds of shuffles, the textbook AVX transpose, instead of 64
 * scalar loads and stores; other compilers get the same copy element by element.
 *
 *     dst[p * ds + j] = src[j * ss + p]    for p, j < 8 (strides in words)
 *
 * Used by the CPU kernels only (the GEMM's packing of a transposed B in _cpu/matmul.pyx, the
 * NCHW <-> NHWC tiles of _cpu/strided.pyx); memcpy moves the rows, so any 32-bit type and any
 * alignment will do.
 */
#ifndef MINITORCH_TRANSPOSE8_H
#define MINITORCH_TRANSPOSE8_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 12)
typedef uint32_t mt_v8u __attribute__((vector_size(8 * sizeof(uint32_t))));
#define MT_SHUF __builtin_shufflevector

static inline void transpose8_32(const void* src_, ptrdiff_t ss, void* dst_, ptrdiff_t ds) {
    const uint32_t* src = (const uint32_t*)src_;
    uint32_t* dst = (uint32_t*)dst_;
    mt_v8u r0, r1, r2, r3, r4, r5, r6, r7;
    memcpy(&r0, src, 32); memcpy(&r1, src + ss, 32);
    memcpy(&r2, src + 2 * ss, 32); memcpy(&r3, src + 3 * ss, 32);
    memcpy(&r4, src + 4 * ss, 32); memcpy(&r5, src + 5 * ss, 32);
    memcpy(&r6, src + 6 * ss, 32); memcpy(&r7, src + 7 * ss, 32);
    mt_v8u t0 = MT_SHUF(r0, r1, 0, 8, 1, 9, 4, 12, 5, 13);
    mt_v8u t1 = MT_SHUF(r0, r1, 2, 10, 3, 11, 6, 14, 7, 15);
    mt_v8u t2 = MT_SHUF(r2, r3, 0, 8, 1, 9, 4, 12, 5, 13);
    mt_v8u t3 = MT_SHUF(r2, r3, 2, 10, 3, 11, 6, 14, 7, 15);
    mt_v8u t4 = MT_SHUF(r4, r5, 0, 8, 1, 9, 4, 12, 5, 13);
    mt_v8u t5 = MT_SHUF(r4, r5, 2, 10, 3, 11, 6, 14, 7, 15);
    mt_v8u t6 = MT_SHUF(r6, r7, 0, 8, 1, 9, 4, 12, 5, 13);
    mt_v8u t7 = MT_SHUF(r6, r7, 2, 10, 3, 11, 6, 14, 7, 15);
    mt_v8u u0 = MT_SHUF(t0, t2, 0, 1, 8, 9, 4, 5, 12, 13);
    mt_v8u u1 = MT_SHUF(t0, t2, 2, 3, 10, 11, 6, 7, 14, 15);
    mt_v8u u2 = MT_SHUF(t1, t3, 0, 1, 8, 9, 4, 5, 12, 13);
    mt_v8u u3 = MT_SHUF(t1, t3, 2, 3, 10, 11, 6, 7, 14, 15);
    mt_v8u u4 = MT_SHUF(t4, t6, 0, 1, 8, 9, 4, 5, 12, 13);
    mt_v8u u5 = MT_SHUF(t4, t6, 2, 3, 10, 11, 6, 7, 14, 15);
    mt_v8u u6 = MT_SHUF(t5, t7, 0, 1, 8, 9, 4, 5, 12, 13);
    mt_v8u u7 = MT_SHUF(t5, t7, 2, 3, 10, 11, 6, 7, 14, 15);
    mt_v8u o0 = MT_SHUF(u0, u4, 0, 1, 2, 3, 8, 9, 10, 11);
    mt_v8u o1 = MT_SHUF(u1, u5, 0, 1, 2, 3, 8, 9, 10, 11);
    mt_v8u o2 = MT_SHUF(u2, u6, 0, 1, 2, 3, 8, 9, 10, 11);
    mt_v8u o3 = MT_SHUF(u3, u7, 0, 1, 2, 3, 8, 9, 10, 11);
    mt_v8u o4 = MT_SHUF(u0, u4, 4, 5, 6, 7, 12, 13, 14, 15);
    mt_v8u o5 = MT_SHUF(u1, u5, 4, 5, 6, 7, 12, 13, 14, 15);
    mt_v8u o6 = MT_SHUF(u2, u6, 4, 5, 6, 7, 12, 13, 14, 15);
    mt_v8u o7 = MT_SHUF(u3, u7, 4, 5, 6, 7, 12, 13, 14, 15);
    memcpy(dst, &o0, 32); memcpy(dst + ds, &o1, 32);
    memcpy(dst + 2 * ds, &o2, 32); memcpy(dst + 3 * ds, &o3, 32);
    memcpy(dst + 4 * ds, &o4, 32); memcpy(dst + 5 * ds, &o5, 32);
    memcpy(dst + 6 * ds, &o6, 32); memcpy(dst + 7 * ds, &o7, 32);
}
#else   /* other compilers: the same copy, element by element */
static inline void transpose8_32(const void* src_, ptrdiff_t ss, void* dst_, ptrdiff_t ds) {
    const uint32_t* src = (const uint32_t*)src_;
    uint32_t* dst = (uint32_t*)dst_;
    for (int p = 0; p < 8; p++)
        for (int j = 0; j < 8; j++)
            dst[p * ds + j] = src[j * ss + p];
}
#endif

#endif
