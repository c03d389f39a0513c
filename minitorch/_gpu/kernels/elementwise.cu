// Elementwise kernels: unary ops over a compact input, binary ops and where with every operand
// read through its own strides (a broadcast operand has stride 0 and is never materialised).
// The op is a kernel argument; the switch sits outside the element loop, so each op runs its own
// tight loop. Semantics match the CPU backend (minitorch/_cpu/elementwise.pyx); the special
// functions live in minitorch/_kernels/special_math.h, shared with it. Fused row and optimizer
// kernels (softmax, Adam) are in fused.cu.
#include "common.cuh"

#define ERR_ZERO_DIV 1
#define ERR_NEG_POW 2

MATH1(fabs) MATH1(exp) MATH1(log) MATH1(log1p) MATH1(expm1) MATH1(sqrt) MATH1(sin) MATH1(cos)
MATH1(tanh) MATH1(floor) MATH1(ceil) MATH1(rint) MATH1(trunc) MATH1(erf)
MATH1(sinh) MATH1(cosh) MATH1(tan) MATH1(asin) MATH1(acos) MATH1(atan) MATH1(asinh) MATH1(acosh)
MATH1(atanh) MATH1(log2) MATH1(log10) MATH1(exp2) MATH1(erfc) MATH1(lgamma)
MATH2(fmod) MATH2(pow) MATH2(atan2) MATH2(copysign) MATH2(hypot) MATH2(nextafter)

// ---------------------------------------------------------------------------------------------
// unary

template <typename T> __device__ __forceinline__ T sigmoid_of(T x) {
    // 1/(1+e^-x) through e = e^-|x|, so the exponential never overflows
    T e = m_exp(x > T(0) ? -x : x);
    T s = T(1) / (T(1) + e);
    return x >= T(0) ? s : e * s;
}

// digamma for x > 0 (or NaN): recurrence up to 10, then the asymptotic series (torch's)
template <typename T> __device__ __forceinline__ T digamma_positive(T x) {
    T result = T(0);
    while (x < T(10)) {
        result -= T(1) / x;
        x += T(1);
    }
    if (x == T(10)) return result + T(2.25175258906672110764);
    T z = T(0);
    if (x < T(1.0e17)) {
        z = T(1) / (x * x);
        z *= (((((T(8.33333333333333333333E-2) * z - T(2.10927960927960927961E-2)) * z
                 + T(7.57575757575757575758E-3)) * z - T(4.16666666666666666667E-3)) * z
               + T(3.96825396825396825397E-3)) * z - T(8.33333333333333333333E-3)) * z
             + T(8.33333333333333333333E-2);
    }
    return result + m_log(x) - T(0.5) / x - z;
}

// torch's calc_digamma: ±0 gives ∓inf, negative integers (and -inf) NaN, other negatives the
// reflection digamma(1 - x) - pi / tan(pi * x)
template <typename T> __device__ __forceinline__ T digamma_of(T x) {
    const double pi = 3.14159265358979323846;
    if (x == T(0)) return m_copysign(pos_inf<T>(), -x);
    if (x < T(0)) {
        T whole = m_trunc(x);
        if (x == whole) return pos_inf<T>() - pos_inf<T>();     // NaN
        double frac = (double)(x - whole);   // tan(pi * frac): pi * x would lose precision
        return digamma_positive(T(1) - x) - T(pi / m_tan(pi * frac));
    }
    return digamma_positive(x);
}

// torch's calc_trigamma: reflection below 1/2, six recurrence steps, asymptotic series
template <typename T> __device__ __forceinline__ T trigamma_of(T x) {
    const T pi = T(3.14159265358979323846);
    T sign = T(1), result = T(0);
    if (x < T(0.5)) {
        sign = T(-1);
        T s = m_sin(pi * x);
        result -= pi * pi / (s * s);
        x = T(1) - x;
    }
    for (int i = 0; i < 6; ++i) {
        result += T(1) / (x * x);
        x += T(1);
    }
    T ixx = T(1) / (x * x);
    result += (T(1) + T(1) / (T(2) * x)
               + ixx * (T(1) / T(6) - ixx * (T(1) / T(30) - ixx * (T(1) / T(42))))) / x;
    return sign * result;
}

// ---------------------------------------------------------------------------------------------
// special functions (ERFINV..BESSEL_J1, ZETA, IGAMMA, IGAMMAC): written once for both backends in
// minitorch/_kernels/special_math.h (the loader pastes it here, as it pastes common.cuh); both
// float dtypes compute in double and round once at the end.

#define SPECIAL_DEVICE __device__
#include "special_math.h"

// Euclid on |x|, |y| (|INT64_MIN| wraps to itself, as in torch)
__device__ __forceinline__ i64 gcd_of(i64 x, i64 y) {
    x = x < 0 ? (i64)(0ull - (u64)x) : x;
    y = y < 0 ? (i64)(0ull - (u64)y) : y;
    while (x != 0) {
        i64 t = x;
        x = y % x;
        y = t;
    }
    return y;
}

// |x / gcd * y|, 0 when both are 0; the product wraps like torch's
__device__ __forceinline__ i64 lcm_of(i64 x, i64 y) {
    i64 g = gcd_of(x, y);
    if (g == 0) return 0;
    i64 r = (i64)((u64)(x / g) * (u64)y);
    return r < 0 ? (i64)(0ull - (u64)r) : r;
}

template <typename T> __device__ __forceinline__ T xlog1py_of(T x, T y) {
    if (y != y) return y;                   // NaN y wins even over x == 0
    return x == T(0) ? T(0) : x * m_log1p(y);
}

template <typename T, int OP> __device__ __forceinline__ T unary_value(T x) {
    if constexpr (is_float_type<T>::value) {
        if constexpr (OP == UNARY_IDENTITY) return x;
        else if constexpr (OP == UNARY_NEG) return -x;
        else if constexpr (OP == UNARY_ABS) return m_fabs(x);
        else if constexpr (OP == UNARY_SIGN) return T(x > T(0)) - T(x < T(0));   // sign(NaN) = 0
        else if constexpr (OP == UNARY_EXP) return m_exp(x);
        else if constexpr (OP == UNARY_LOG) return m_log(x);
        else if constexpr (OP == UNARY_LOG1P) return m_log1p(x);
        else if constexpr (OP == UNARY_EXPM1) return m_expm1(x);
        else if constexpr (OP == UNARY_SQRT) return m_sqrt(x);
        else if constexpr (OP == UNARY_RSQRT) return T(1) / m_sqrt(x);
        else if constexpr (OP == UNARY_SIN) return m_sin(x);
        else if constexpr (OP == UNARY_COS) return m_cos(x);
        else if constexpr (OP == UNARY_TANH) return m_tanh(x);
        else if constexpr (OP == UNARY_SIGMOID) return sigmoid_of(x);
        else if constexpr (OP == UNARY_RELU) return x < T(0) ? T(0) : x;         // NaN passes
        else if constexpr (OP == UNARY_RECIPROCAL) return T(1) / x;
        else if constexpr (OP == UNARY_SQUARE) return x * x;
        else if constexpr (OP == UNARY_FLOOR) return m_floor(x);
        else if constexpr (OP == UNARY_CEIL) return m_ceil(x);
        else if constexpr (OP == UNARY_ROUND) return m_rint(x);                   // half to even
        else if constexpr (OP == UNARY_TRUNC) return m_trunc(x);
        else if constexpr (OP == UNARY_ERF) return m_erf(x);
        else if constexpr (OP == UNARY_SINH) return m_sinh(x);
        else if constexpr (OP == UNARY_COSH) return m_cosh(x);
        else if constexpr (OP == UNARY_TAN) return m_tan(x);
        else if constexpr (OP == UNARY_ASIN) return m_asin(x);
        else if constexpr (OP == UNARY_ACOS) return m_acos(x);
        else if constexpr (OP == UNARY_ATAN) return m_atan(x);
        else if constexpr (OP == UNARY_ASINH) return m_asinh(x);
        else if constexpr (OP == UNARY_ACOSH) return m_acosh(x);
        else if constexpr (OP == UNARY_ATANH) return m_atanh(x);
        else if constexpr (OP == UNARY_LOG2) return m_log2(x);
        else if constexpr (OP == UNARY_LOG10) return m_log10(x);
        else if constexpr (OP == UNARY_EXP2) return m_exp2(x);
        else if constexpr (OP == UNARY_ERFC) return m_erfc(x);
        else if constexpr (OP == UNARY_LGAMMA) return m_lgamma(x);
        else if constexpr (OP == UNARY_DIGAMMA) return digamma_of(x);
        else if constexpr (OP == UNARY_TRIGAMMA) return trigamma_of(x);
        else if constexpr (OP == UNARY_FRAC) return x - m_trunc(x);           // inf: NaN
        else if constexpr (OP == UNARY_ERFINV) return T(sp_erfinv(x));
        else if constexpr (OP == UNARY_I0) return T(sp_i0(x));
        else if constexpr (OP == UNARY_I0E) return T(sp_i0e(x));
        else if constexpr (OP == UNARY_I1) return T(sp_i1(x));
        else if constexpr (OP == UNARY_I1E) return T(sp_i1e(x));
        else if constexpr (OP == UNARY_NDTRI) return T(sp_ndtri(x));
        else if constexpr (OP == UNARY_LOG_NDTR) return T(sp_log_ndtr(x));
        else if constexpr (OP == UNARY_ERFCX) return T(sp_erfcx(x));
        else if constexpr (OP == UNARY_BESSEL_J0) return T(sp_bessel_j0(x));
        else if constexpr (OP == UNARY_BESSEL_J1) return T(sp_bessel_j1(x));
        else if constexpr (OP == UNARY_SPHERICAL_BESSEL_J0) return T(sp_spherical_bessel_j0(x));
        else if constexpr (OP == UNARY_GELU)                // x Φ(x), torch's exact GELU
            return x * T(0.5) * (T(1) + m_erf(x * T(0.70710678118654752440)));
        else if constexpr (OP == UNARY_SILU) return x / (T(1) + m_exp(-x));   // torch's formula
        else return x;
    } else if constexpr (same_type<T, i64>::value) {
        // integer arithmetic wraps: done in uint64, where overflow is defined
        if constexpr (OP == UNARY_NEG) return (i64)(0ull - (u64)x);
        else if constexpr (OP == UNARY_ABS) return x < 0 ? (i64)(0ull - (u64)x) : x;
        else if constexpr (OP == UNARY_SIGN) return (i64)(x > 0) - (i64)(x < 0);
        else if constexpr (OP == UNARY_SQUARE) return (i64)((u64)x * (u64)x);
        else if constexpr (OP == UNARY_RELU) return x < 0 ? 0 : x;
        else if constexpr (OP == UNARY_BITWISE_NOT) return ~x;
        else return x;
    } else {
        return x;   // bool: IDENTITY only (the host refuses the rest)
    }
}

template <int OP> struct is_unary_predicate {
    static constexpr bool value = OP == UNARY_LOGICAL_NOT || OP == UNARY_ISNAN ||
                                  OP == UNARY_ISINF || OP == UNARY_ISFINITE;
};

template <typename T, int OP> __device__ __forceinline__ unsigned char unary_predicate(T x) {
    if constexpr (OP == UNARY_LOGICAL_NOT) return x == T(0);
    else if constexpr (OP == UNARY_ISNAN) return x != x;
    else if constexpr (OP == UNARY_ISINF) {
        if constexpr (is_float_type<T>::value) return m_fabs(x) == pos_inf<T>();
        else return 0;
    } else return (x - x) == T(0);      // ISFINITE: inf - inf and NaN - NaN are NaN
}

// Apply OP to a thread's loaded items (kept as a loop: one copy of each op's code).
template <typename T, int OP>
__device__ __forceinline__ void unary_apply(const T (&x)[ITEMS], void* out, i64 base, i64 n) {
#pragma unroll 1
    for (int k = 0; k < ITEMS; ++k) {
        i64 i = ITEM(base, k);
        if (i >= n) break;
        if constexpr (is_unary_predicate<OP>::value) {
            static_cast<unsigned char*>(out)[i] = unary_predicate<T, OP>(x[k]);
        } else {
            static_cast<T*>(out)[i] = unary_value<T, OP>(x[k]);
        }
    }
}

#define UNARY_CASE(OP) case OP: unary_apply<T, OP>(x, out, base, n); break;

// The loads are issued once (all ITEMS in flight), then the op is picked by a uniform switch.
template <typename T>
__global__ void __launch_bounds__(THREADS)
unary_kernel(int op, const T* __restrict__ a, void* out, i64 n) {
    FOR_EACH_CHUNK(base, n) {
        T x[ITEMS];
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            i64 i = ITEM(base, k);
            x[k] = i < n ? a[i] : T(0);
        }
        switch (op) {
            UNARY_OPS(UNARY_CASE)  // every UnaryOp (the loader's prelude lists them)
            default: break;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// binary

template <typename T> __device__ __forceinline__ T floordiv_real(T x, T y) {
    // floor(x / y) computed like Python/numpy/torch (via fmod, exact at the boundaries)
    if (y == T(0)) return x / y;
    T mod = m_fmod(x, y);
    T div = (x - mod) / y;
    if (mod != T(0) && ((y < T(0)) != (mod < T(0)))) div -= T(1);
    if (div != T(0)) {
        T fl = m_floor(div);
        if (div - fl > T(0.5)) fl += T(1);
        return fl;
    }
    return m_copysign(T(0), x / y);
}

template <typename T> __device__ __forceinline__ T remainder_real(T x, T y) {
    // Python-style modulo: the result takes the divisor's sign (torch.remainder); a zero
    // keeps fmod's sign (the dividend's), as in torch
    T mod = m_fmod(x, y);
    if (mod != T(0) && (y < T(0)) != (mod < T(0))) mod += y;
    return mod;
}

__device__ __forceinline__ i64 floordiv_int(i64 x, i64 y, int& err) {
    if (y == 0) { err |= ERR_ZERO_DIV; return 0; }
    if (y == -1) return (i64)(0ull - (u64)x);       // INT64_MIN // -1 wraps like numpy
    i64 q = x / y;
    if ((x % y != 0) && ((x < 0) != (y < 0))) q -= 1;
    return q;
}

__device__ __forceinline__ i64 remainder_int(i64 x, i64 y, int& err) {
    if (y == 0) { err |= ERR_ZERO_DIV; return 0; }
    if (y == -1) return 0;
    i64 r = x % y;
    if (r != 0 && ((r < 0) != (y < 0))) r += y;
    return r;
}

__device__ __forceinline__ i64 pow_int(i64 x, i64 y, int& err) {
    // by squaring, wrapping on overflow; negative exponents are an error (torch)
    if (y < 0) { err |= ERR_NEG_POW; return 0; }
    u64 base = (u64)x, result = 1;
    while (y) {
        if (y & 1) result *= base;
        base *= base;
        y >>= 1;
    }
    return (i64)result;
}

// logaddexp / logaddexp2 as torch computes them: max + log1p(e^-|x - y|) (base 2: log1p of
// 2^-|x - y|, over ln 2); equal infinities are returned as they are (inf - inf would be NaN)
template <typename T> __device__ __forceinline__ T logaddexp_of(T x, T y, bool base2) {
    if (x == y && m_fabs(x) == pos_inf<T>()) return x;
    T big = x < y ? y : x;
    T diff = -m_fabs(x - y);
    if (!base2) return big + m_log1p(m_exp(diff));
    return big + m_log1p(m_exp2(diff)) * T(1.0 / 0.693147180559945309417232121458176568);
}

template <typename T> __device__ __forceinline__ T xlogy_of(T x, T y) {
    if (y != y) return y;                   // NaN y wins even over x == 0
    return x == T(0) ? T(0) : x * m_log(y);
}

template <typename T, int OP> __device__ __forceinline__ T arith(T x, T y, int& err) {
    if constexpr (OP == BINARY_ADD) {
        if constexpr (same_type<T, unsigned char>::value) return (x | y) != 0;
        else if constexpr (same_type<T, i64>::value) return (i64)((u64)x + (u64)y);
        else return x + y;
    } else if constexpr (OP == BINARY_SUB) {
        if constexpr (same_type<T, i64>::value) return (i64)((u64)x - (u64)y);
        else return x - y;
    } else if constexpr (OP == BINARY_MUL) {
        if constexpr (same_type<T, unsigned char>::value) return (x != 0) & (y != 0);
        else if constexpr (same_type<T, i64>::value) return (i64)((u64)x * (u64)y);
        else return x * y;
    } else if constexpr (OP == BINARY_MAXIMUM) {       // a NaN on either side wins; ties keep x
        return (x < y) | (y != y) ? y : x;
    } else if constexpr (OP == BINARY_MINIMUM) {
        return (y < x) | (y != y) ? y : x;
    } else if constexpr (OP == BINARY_RELU_BACKWARD) {   // a NaN output passes g, as in torch
        return y <= T(0) ? T(0) : x;
    } else if constexpr (OP == BINARY_HEAVISIDE) {
        return x == T(0) ? y : T(x > T(0));     // NaN > 0 is false: heaviside(NaN) = 0
    } else if constexpr (is_float_type<T>::value) {
        if constexpr (OP == BINARY_DIV) return x / y;
        else if constexpr (OP == BINARY_POW) return m_pow(x, y);
        else if constexpr (OP == BINARY_FLOOR_DIVIDE) return floordiv_real(x, y);
        else if constexpr (OP == BINARY_REMAINDER) return remainder_real(x, y);
        else if constexpr (OP == BINARY_ATAN2) return m_atan2(x, y);
        else if constexpr (OP == BINARY_TANH_BACKWARD) return x * (T(1) - y * y);
        else if constexpr (OP == BINARY_SIGMOID_BACKWARD) return x * y * (T(1) - y);
        else if constexpr (OP == BINARY_GELU_BACKWARD) {    // x (Φ(y) + y φ(y))
            T cdf = T(0.5) * (T(1) + m_erf(y * T(0.70710678118654752440)));
            T pdf = m_exp(T(-0.5) * y * y) * T(0.39894228040143267794);
            return x * (cdf + y * pdf);
        }
        else if constexpr (OP == BINARY_ADD_RELU) {         // relu(x + y); NaN passes
            T v = x + y;
            return v < T(0) ? T(0) : v;
        }
        else if constexpr (OP == BINARY_LEAKY_RELU) return x > T(0) ? x : x * y;   // NaN stays
        else if constexpr (OP == BINARY_LEAKY_RELU_SLOPE) return x > T(0) ? T(1) : y;
        else if constexpr (OP == BINARY_SILU_BACKWARD) {    // x s (1 + y (1 - s)), s = σ(y)
            T s = T(1) / (T(1) + m_exp(-y));
            return x * (s * (T(1) + y * (T(1) - s)));
        }
        else if constexpr (OP == BINARY_HYPOT) return m_hypot(x, y);
        else if constexpr (OP == BINARY_LOGADDEXP) return logaddexp_of(x, y, false);
        else if constexpr (OP == BINARY_LOGADDEXP2) return logaddexp_of(x, y, true);
        else if constexpr (OP == BINARY_COPYSIGN) return m_copysign(x, y);
        else if constexpr (OP == BINARY_XLOGY) return xlogy_of(x, y);
        else if constexpr (OP == BINARY_NEXTAFTER) return m_nextafter(x, y);
        else if constexpr (OP == BINARY_ZETA) return T(sp_zeta(x, y));
        else if constexpr (OP == BINARY_IGAMMA) return T(sp_igamma(x, y));
        else if constexpr (OP == BINARY_IGAMMAC) return T(sp_igammac(x, y));
        else if constexpr (OP == BINARY_XLOG1PY) return xlog1py_of(x, y);
        else return T(0);
    } else if constexpr (same_type<T, i64>::value) {
        if constexpr (OP == BINARY_POW) return pow_int(x, y, err);
        else if constexpr (OP == BINARY_FLOOR_DIVIDE) return floordiv_int(x, y, err);
        else if constexpr (OP == BINARY_REMAINDER) return remainder_int(x, y, err);
        else if constexpr (OP == BINARY_BITWISE_AND) return x & y;
        else if constexpr (OP == BINARY_BITWISE_OR) return x | y;
        else if constexpr (OP == BINARY_BITWISE_XOR) return x ^ y;
        // shifts by a negative amount or by 64 or more: torch's 0 for <<, sign fill for >>
        else if constexpr (OP == BINARY_LEFT_SHIFT) return 0 <= y && y < 64 ? (i64)((u64)x << y) : 0;
        else if constexpr (OP == BINARY_RIGHT_SHIFT) return 0 <= y && y < 64 ? x >> y : x >> 63;
        else if constexpr (OP == BINARY_GCD) return gcd_of(x, y);
        else if constexpr (OP == BINARY_LCM) return lcm_of(x, y);
        else return 0;
    } else {
        return 0;   // combinations the host refuses
    }
}

template <typename T, int OP> __device__ __forceinline__ unsigned char predicate(T x, T y) {
    // comparisons and logical ops (NaN is truthy, as in torch)
    if constexpr (OP == BINARY_EQ) return x == y;
    else if constexpr (OP == BINARY_NE) return x != y;
    else if constexpr (OP == BINARY_LT) return x < y;
    else if constexpr (OP == BINARY_LE) return x <= y;
    else if constexpr (OP == BINARY_GT) return x > y;
    else if constexpr (OP == BINARY_GE) return x >= y;
    else if constexpr (OP == BINARY_LOGICAL_AND) return (x != T(0)) & (y != T(0));
    else if constexpr (OP == BINARY_LOGICAL_OR) return (x != T(0)) | (y != T(0));
    else return (x != T(0)) ^ (y != T(0));
}

template <typename T, int OP> struct is_predicate {
    static constexpr bool value = OP >= BINARY_EQ && OP <= BINARY_LOGICAL_XOR;
};

template <typename T, int OP>
__device__ __forceinline__ int binary_apply(const T (&x)[ITEMS], const T (&y)[ITEMS], void* out,
                                            i64 base, i64 n) {
    int err = 0;
#pragma unroll 1
    for (int k = 0; k < ITEMS; ++k) {
        i64 i = ITEM(base, k);
        if (i >= n) break;
        if constexpr (is_predicate<T, OP>::value) {
            static_cast<unsigned char*>(out)[i] = predicate<T, OP>(x[k], y[k]);
        } else {
            static_cast<T*>(out)[i] = arith<T, OP>(x[k], y[k], err);
        }
    }
    return err;
}

#define BINARY_CASE(OP) case OP: err |= binary_apply<T, OP>(x, y, out, base, n); break;

// a and b are read at a_off / b_off plus their view offsets; err may be null unless the op is
// an integer floor_divide / remainder / pow (the only ops that can fail).
template <typename T, int MAXD>
__global__ void __launch_bounds__(THREADS)
binary_kernel(int op, const T* __restrict__ a, i64 a_off, const T* __restrict__ b, i64 b_off,
              void* out, i64 n, Geometry<2, MAXD> g, int* err_flag) {
    int err = 0;
    FOR_EACH_CHUNK(base, n) {
        T x[ITEMS], y[ITEMS];
#pragma unroll
        for (int k = 0; k < ITEMS; ++k) {
            i64 i = ITEM(base, k);
            i64 off[2] = {0, 0};
            if (i < n) geometry_offsets(g, (u64)i, off);
            x[k] = i < n ? a[a_off + off[0]] : T(0);
            y[k] = i < n ? b[b_off + off[1]] : T(0);
        }
        switch (op) {
            BINARY_OPS(BINARY_CASE)  // every BinaryOp (the loader's prelude lists them)
            default: break;
        }
    }
    if (err && err_flag) atomicOr(err_flag, err);
}

// ---------------------------------------------------------------------------------------------
// binary_rows_kernel: the fast path for views that collapse to (rows, cols) or (outer, rows,
// cols) with every operand's column stride 0 or 1 - same-shape contiguous operands (rows = 1),
// a row vector or a column broadcast against a matrix, a scalar, a per-channel bias. No per-element index arithmetic: a 2-D launch (x along
// a row's runs of V = 16 / sizeof(T) elements, y over rows, a block of bx x by threads so that
// short rows still fill it) gives each thread a row pointer per operand, and with `vec` (the
// host checked sizes, strides, offsets and pointers) every run is one 16-byte load per operand
// and one 16-byte store. A column-stride-0 operand is one scalar load per run. RUN_UNROLL runs
// per thread are loaded before the op is applied, so several loads are in flight.

#define RUN_UNROLL 2

template <typename T> struct __align__(16) Vec16 {
    T v[16 / sizeof(T)];
};

// The ops whose element loops are unrolled (a few instructions each); the others keep one copy
// of their code per kernel (compile time and instruction cache).
template <int OP> struct is_cheap_binary {
    static constexpr bool value = OP == BINARY_ADD || OP == BINARY_SUB || OP == BINARY_MUL ||
        OP == BINARY_DIV || OP == BINARY_MAXIMUM || OP == BINARY_MINIMUM ||
        (OP >= BINARY_EQ && OP <= BINARY_LOGICAL_XOR) || OP == BINARY_RELU_BACKWARD ||
        OP == BINARY_TANH_BACKWARD || OP == BINARY_SIGMOID_BACKWARD ||
        OP == BINARY_BITWISE_AND || OP == BINARY_BITWISE_OR || OP == BINARY_BITWISE_XOR ||
        OP == BINARY_COPYSIGN || OP == BINARY_HEAVISIDE;
};

// One operand's run of V elements starting at column c of row p (column stride `unit`, 0 or 1).
template <typename T>
__device__ __forceinline__ void load_run(const T* __restrict__ p, i64 unit, i64 c, i64 cols,
                                         int vec, T (&x)[16 / sizeof(T)]) {
    constexpr int V = 16 / sizeof(T);
    if (!unit) {
        const T s = p[0];
#pragma unroll
        for (int e = 0; e < V; ++e) x[e] = s;
    } else if (vec) {
        const Vec16<T> w = *reinterpret_cast<const Vec16<T>*>(p + c);
#pragma unroll
        for (int e = 0; e < V; ++e) x[e] = w.v[e];
    } else {
#pragma unroll
        for (int e = 0; e < V; ++e) x[e] = c + e < cols ? p[c + e] : T(0);
    }
}

// out[at + e] = r[e] for e < count (count == V when vec: one 16-byte store).
template <typename T>
__device__ __forceinline__ void store_run(const T (&r)[16 / sizeof(T)], T* out, i64 at,
                                          int count, int vec) {
    constexpr int V = 16 / sizeof(T);
    if (vec) {
        Vec16<T> w;
#pragma unroll
        for (int e = 0; e < V; ++e) w.v[e] = r[e];
        *reinterpret_cast<Vec16<T>*>(out + at) = w;
    } else {
#pragma unroll
        for (int e = 0; e < V; ++e)
            if (e < count) out[at + e] = r[e];
    }
}

// The thread's runs k, k + bx, ... (RUN_UNROLL of them) of row r, already loaded: out = op(x, y)
// element by element, padding past `cols` not computed (an integer 0 divisor would flag).
template <typename T, int OP>
__device__ __forceinline__ int binary_runs(const T (&x)[RUN_UNROLL][16 / sizeof(T)],
                                           const T (&y)[RUN_UNROLL][16 / sizeof(T)], void* out,
                                           i64 row_at, i64 k, int bx, i64 runs, i64 cols,
                                           int vec) {
    constexpr int V = 16 / sizeof(T);
    int err = 0;
    if constexpr (is_predicate<T, OP>::value) {
#pragma unroll
        for (int u = 0; u < RUN_UNROLL; ++u) {
            const i64 c = (k + (i64)u * bx) * V;
            unsigned char* o = static_cast<unsigned char*>(out) + row_at + c;
            const bool run_in = k + (i64)u * bx < runs;
#pragma unroll
            for (int e = 0; e < V; ++e)
                if (run_in && c + e < cols) o[e] = predicate<T, OP>(x[u][e], y[u][e]);
        }
    } else {
        T r[RUN_UNROLL][V];
        if constexpr (is_cheap_binary<OP>::value) {
#pragma unroll
            for (int u = 0; u < RUN_UNROLL; ++u)
#pragma unroll
                for (int e = 0; e < V; ++e) {
                    const bool in = k + (i64)u * bx < runs && (k + (i64)u * bx) * V + e < cols;
                    r[u][e] = in ? arith<T, OP>(x[u][e], y[u][e], err) : T(0);
                }
        } else {    // one call site: the special functions are long
#pragma unroll 1
            for (int q = 0; q < RUN_UNROLL * V; ++q) {
                const int u = q / V, e = q % V;
                const bool in = k + (i64)u * bx < runs && (k + (i64)u * bx) * V + e < cols;
                r[u][e] = in ? arith<T, OP>(x[u][e], y[u][e], err) : T(0);
            }
        }
#pragma unroll
        for (int u = 0; u < RUN_UNROLL; ++u) {
            const i64 run = k + (i64)u * bx;
            if (run < runs)
                store_run(r[u], static_cast<T*>(out), row_at + run * V,
                          (int)min(cols - run * V, (i64)V), vec);
        }
    }
    return err;
}

// zeta and the incomplete gammas (special_math.h), and int64 division (floor_divide, remainder,
// gcd, lcm), are out-of-line calls: across them the row loop's state would spill, so the host
// sends them to binary_kernel (they never run here).
template <typename T, int OP> struct is_called_binary {
    static constexpr bool value = OP == BINARY_ZETA || OP == BINARY_IGAMMA ||
        OP == BINARY_IGAMMAC || (same_type<T, i64>::value &&
        (OP == BINARY_FLOOR_DIVIDE || OP == BINARY_REMAINDER || OP == BINARY_GCD ||
         OP == BINARY_LCM));
};

#define BINARY_ROWS_CASE(OP)                                                                \
    case OP:                                                                                \
        if constexpr (!is_called_binary<T, OP>::value)                                      \
            err |= binary_runs<T, OP>(x, y, out, r * cols, k, bx, runs, cols, vec);         \
        break;

// out (compact rows x cols) = op(a, b). Rows are (outer, inner) pairs, r = outer * inner_rows +
// inner (split with the magic divider of inner_rows, once per row); operand p's element (r, c)
// is at p_off + outer * pso + inner * ps0 + c * ps1 with ps1 0 or 1, so a (N, C, H*W) tensor
// plus a (C, 1) bias is one launch too. err_flag as for binary_kernel.
template <typename T>
__global__ void __launch_bounds__(256)
binary_rows_kernel(int op, const T* __restrict__ a, i64 a_off, i64 aso, i64 as0, i64 as1,
                   const T* __restrict__ b, i64 b_off, i64 bso, i64 bs0, i64 bs1, void* out,
                   i64 rows, i64 inner_rows, u64 magic, u64 shift, i64 cols, int vec,
                   int* err_flag) {
    constexpr int V = 16 / sizeof(T);
    const int bx = blockDim.x, by = blockDim.y;
    const i64 runs = (cols + V - 1) / V;
    int err = 0;
    for (i64 r = (i64)blockIdx.y * by + threadIdx.y; r < rows; r += (i64)gridDim.y * by) {
        const i64 outer = (i64)magic_div((u64)r, magic, shift), inner = r - outer * inner_rows;
        const T* pa = a + a_off + outer * aso + inner * as0;
        const T* pb = b + b_off + outer * bso + inner * bs0;
        for (i64 k = (i64)blockIdx.x * bx * RUN_UNROLL + threadIdx.x; k < runs;
             k += (i64)gridDim.x * bx * RUN_UNROLL) {
            T x[RUN_UNROLL][V], y[RUN_UNROLL][V];
#pragma unroll
            for (int u = 0; u < RUN_UNROLL; ++u) {
                const i64 run = k + (i64)u * bx;
                if (run < runs) {
                    load_run(pa, as1, run * V, cols, vec, x[u]);
                    load_run(pb, bs1, run * V, cols, vec, y[u]);
                }
            }
            switch (op) {
                BINARY_OPS(BINARY_ROWS_CASE)  // every BinaryOp (the loader's prelude lists them)
                default: break;
            }
        }
    }
    if (err && err_flag) atomicOr(err_flag, err);
}

// ---------------------------------------------------------------------------------------------
// where: out = a if cond else b (a pure select; operands 0, 1, 2 of g are cond, a, b)

template <typename T, int MAXD>
__global__ void __launch_bounds__(THREADS)
where_kernel(const unsigned char* __restrict__ cond, i64 c_off, const T* __restrict__ a,
             i64 a_off, const T* __restrict__ b, i64 b_off, T* __restrict__ out, i64 n,
             Geometry<3, MAXD> g) {
    FOR_EACH_ELEMENT(i, n) {
        i64 off[3];
        geometry_offsets(g, (u64)i, off);
        out[i] = cond[c_off + off[0]] ? a[a_off + off[1]] : b[b_off + off[2]];
    }
}
