// Complex arithmetic on interleaved (re, im) pairs of float / double: the GPU twin of
// minitorch/_cpu/complex.pyx, with the same op codes. The CPU calls libm's C99 complex
// functions; NVRTC has no <complex.h>, so the formulas are written out here, as thrust's and
// c10's CUDA paths write them: c10::complex's scaled division, hypot for abs, log as
// (log|z|, atan2), the half-angle square root, Kahan's tanh, c10's CUDA log1p, and the
// inverse functions by their logarithmic forms. Signed
// zeros and the branch cuts on the negative real axis follow C99 (atan2 and copysign carry
// the sign of a zero imaginary part); infinite and NaN inputs are C99's for exp, log, sqrt and
// tanh, and otherwise whatever the formula gives. Only the ops that mix the two parts live
// here; everything else a complex tensor does runs the real kernels over its pairs
// (minitorch/_cpu/complex_pairs.py). One thread per complex element; buffers are compact.
#include "common.cuh"

MATH1(exp) MATH1(sin) MATH1(cos) MATH1(log) MATH1(log1p) MATH1(expm1) MATH1(sqrt) MATH1(tan)
MATH1(sinh) MATH1(cosh) MATH1(fabs) MATH1(asin) MATH1(acos) MATH1(atan) MATH1(asinh) MATH1(acosh)
MATH1(atanh)
MATH2(atan2) MATH2(hypot) MATH2(copysign)

#define COMPLEX_MUL 0
#define COMPLEX_DIV 1
#define COMPLEX_POW 2
#define COMPLEX_ABS 0
#define COMPLEX_ANGLE 1
#define COMPLEX_EXP 2
#define COMPLEX_SGN 3
#define COMPLEX_RECIPROCAL 4
#define COMPLEX_LOG 5
#define COMPLEX_LOG2 6
#define COMPLEX_LOG10 7
#define COMPLEX_LOG1P 8
#define COMPLEX_SQRT 9
#define COMPLEX_RSQRT 10
#define COMPLEX_SIN 11
#define COMPLEX_COS 12
#define COMPLEX_TAN 13
#define COMPLEX_SINH 14
#define COMPLEX_COSH 15
#define COMPLEX_TANH 16
#define COMPLEX_SIGMOID 17
#define COMPLEX_EXP2 18
#define COMPLEX_EXPM1 19
#define COMPLEX_ASIN 20
#define COMPLEX_ACOS 21
#define COMPLEX_ATAN 22
#define COMPLEX_ASINH 23
#define COMPLEX_ACOSH 24
#define COMPLEX_ATANH 25

template <typename T> struct cpx { T re, im; };

// (a + bj) / (c + dj) as c10::complex divides
template <typename T>
__device__ __forceinline__ void complex_divide(T a, T b, T c, T d, T* re, T* im) {
    T abs_c = c >= T(0) ? c : -c;
    T abs_d = d >= T(0) ? d : -d;
    if (abs_c >= abs_d) {
        if (abs_c == T(0) && abs_d == T(0)) {   // a complex inf or nan, as torch gives
            *re = a / abs_c;
            *im = b / abs_d;
        } else {
            T rat = d / c;
            T scl = T(1) / (c + d * rat);
            *re = (a + b * rat) * scl;
            *im = (b - a * rat) * scl;
        }
    } else {
        T rat = c / d;
        T scl = T(1) / (d + c * rat);
        *re = (a * rat + b) * scl;
        *im = (b * rat - a) * scl;
    }
}

template <typename T>
__device__ __forceinline__ cpx<T> c_div(cpx<T> a, cpx<T> b) {
    cpx<T> q;
    complex_divide(a.re, a.im, b.re, b.im, &q.re, &q.im);
    return q;
}

template <typename T>
__device__ __forceinline__ cpx<T> c_mul(cpx<T> a, cpx<T> b) {
    return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
}

template <typename T>
__device__ __forceinline__ cpx<T> c_exp(cpx<T> z) {
    T e = m_exp(z.re);
    if (z.im == T(0)) return {e, z.im};     // exp of a real number stays real (no 0 * inf NaN)
    if (m_fabs(z.re) == pos_inf<T>() && !(m_fabs(z.im) < pos_inf<T>())) {
        // C99 for an infinite x and an infinite or NaN y: 0 from -inf, (inf, NaN) from +inf
        if (z.re < T(0)) return {T(0), T(0)};
        return {z.re, z.im - z.im};
    }
    return {e * m_cos(z.im), e * m_sin(z.im)};
}

// log|z| near |z| = 1 as log1p(|z|² - 1), the larger part's square taken exactly as
// (a - 1)(a + 1): log(hypot) would round a small log|z| away
template <typename T>
__device__ __forceinline__ cpx<T> c_log(cpx<T> z) {
    T a = m_fabs(z.re), b = m_fabs(z.im), r = m_hypot(a, b);
    if (a < b) { T t = a; a = b; b = t; }
    T log_r = (r > T(0.7) && r < T(1.4)) ? T(0.5) * m_log1p((a - T(1)) * (a + T(1)) + b * b)
                                          : m_log(r);
    return {log_r, m_atan2(z.im, z.re)};
}

// sinh and cosh, exact for a zero part (no 0 · inf where the other part overflows); sin and
// cos are them at jz
template <typename T>
__device__ __forceinline__ cpx<T> c_sinh(cpx<T> z) {
    if (z.im == T(0)) return {m_sinh(z.re), z.im};
    if (z.re == T(0)) return {z.re * m_cos(z.im), m_sin(z.im)};
    return {m_sinh(z.re) * m_cos(z.im), m_cosh(z.re) * m_sin(z.im)};
}

template <typename T>
__device__ __forceinline__ cpx<T> c_cosh(cpx<T> z) {
    if (z.im == T(0)) return {m_cosh(z.re), z.im * m_copysign(T(1), z.re)};
    return {m_cosh(z.re) * m_cos(z.im), m_sinh(z.re) * m_sin(z.im)};
}

// C99's csqrt: the half-angle formula, sqrt((|x| + |z|) / 2) on the side of x's sign, the
// imaginary part's sign kept (the branch cut on the negative reals)
template <typename T>
__device__ __forceinline__ cpx<T> c_sqrt(cpx<T> z) {
    T x = z.re, y = z.im, inf = pos_inf<T>();
    if (x == T(0) && y == T(0)) return {T(0), y};
    if (m_fabs(y) == inf) return {inf, y};
    if (is_nan(x)) return {x, x};
    if (m_fabs(x) == inf) {
        if (x > T(0)) return {x, is_nan(y) ? y : m_copysign(T(0), y)};
        return {is_nan(y) ? y : T(0), m_copysign(inf, y)};
    }
    T t = m_sqrt((m_fabs(x) + m_hypot(x, y)) * T(0.5));
    if (x >= T(0)) return {t, y / (T(2) * t)};
    return {m_fabs(y) / (T(2) * t), m_copysign(t, y)};
}

// Kahan's tanh (as FreeBSD's ctanh and thrust): no overflow for large |x|
template <typename T>
__device__ __forceinline__ cpx<T> c_tanh(cpx<T> z) {
    T x = z.re, y = z.im, inf = pos_inf<T>();
    if (is_nan(x) || m_fabs(x) == inf) {
        if (is_nan(x)) return {x, y == T(0) ? y : x * y};
        bool finite_y = !is_nan(y) && m_fabs(y) != inf;
        return {m_copysign(T(1), x), m_copysign(T(0), finite_y ? m_sin(y) * m_cos(y) : y)};
    }
    if (is_nan(y) || m_fabs(y) == inf) return {y - y, y - y};
    if (m_fabs(x) >= T(sizeof(T) == 4 ? 9 : 22)) {       // tanh x rounds to ±1
        T e = m_exp(-m_fabs(x));
        return {m_copysign(T(1), x), T(4) * m_sin(y) * m_cos(y) * e * e};
    }
    T t = m_tan(y), beta = T(1) + t * t, s = m_sinh(x), rho = m_sqrt(T(1) + s * s);
    T denom = T(1) + beta * s * s;
    return {beta * rho * s / denom, t / denom};
}

// c10's CUDA log1p: log1p of |1 + z|² - 1 near 0, where log(1 + z) would round away x
template <typename T>
__device__ __forceinline__ cpx<T> c_log1p(cpx<T> z) {
    T x = z.re, y = z.im, theta = m_atan2(y, x + T(1));
    if (m_hypot(x, y) < T(0.5)) {
        T r = x * (T(2) + x) + y * y;
        return {r == T(0) ? x : T(0.5) * m_log1p(r), theta};
    }
    return {m_log(m_hypot(x + T(1), y)), theta};
}

template <typename T>
__device__ __forceinline__ cpx<T> c_add(cpx<T> a, cpx<T> b) { return {a.re + b.re, a.im + b.im}; }

// The inverse functions, with the branch cuts and the signs of zero parts of C99: on an axis
// (a zero part) the real function, exactly; elsewhere asinh z = log(z + sqrt(z² + 1)) on the
// right half-plane (odd, so the left one never cancels), acosh z = log(z + sqrt(z + 1)
// sqrt(z - 1)) (Kahan's product keeps the cut on the reals below 1), and atanh by Kahan's
// parts: log1p(4x / ((1 - x)² + y²)) / 4 and atan2(2y, (1 - x)(1 + x) - y²) / 2. asin and atan
// are -j asinh(jz) and -j atanh(jz); acos is π/2 - asin z, as torch's CPU kernel.
template <typename T>
__device__ __forceinline__ cpx<T> c_asinh(cpx<T> z) {
    if (z.im == T(0)) return {m_asinh(z.re), z.im};
    if (z.re == T(0) && m_fabs(z.im) <= T(1)) return {z.re, m_asin(z.im)};
    if (z.re == T(0))       // the cut: ±(acosh |y|) on the side of x's sign, ±π/2
        return {m_copysign(m_acosh(m_fabs(z.im)), z.re), m_copysign(T(1.5707963267948966), z.im)};
    bool flip = z.re < T(0);
    cpx<T> w = flip ? cpx<T>{-z.re, -z.im} : z;
    cpx<T> r = c_log(c_add(w, c_sqrt(cpx<T>{(w.re - w.im) * (w.re + w.im) + T(1),
                                               T(2) * w.re * w.im})));
    return flip ? cpx<T>{-r.re, -r.im} : r;
}

template <typename T>
__device__ __forceinline__ cpx<T> c_acosh(cpx<T> z) {
    if (z.im == T(0) && m_fabs(z.re) <= T(1)) return {T(0), m_copysign(m_acos(z.re), z.im)};
    if (z.im == T(0) && z.re > T(1)) return {m_acosh(z.re), z.im};
    cpx<T> p = c_mul(c_sqrt(cpx<T>{z.re + T(1), z.im}), c_sqrt(cpx<T>{z.re - T(1), z.im}));
    return c_log(c_add(z, p));
}

template <typename T>
__device__ __forceinline__ cpx<T> c_atanh(cpx<T> z) {
    T x = z.re, y = z.im;
    if (y == T(0) && m_fabs(x) <= T(1)) return {m_atanh(x), y};
    if (x == T(0)) return {x, m_atan(y)};
    T d = (T(1) - x) * (T(1) - x) + y * y;      // |1 - z|²; the real part is log(|1 + z|² / d) / 4
    T re = m_fabs(x) < T(0.5) ? m_log1p(T(4) * x / d)
                              : m_log((T(1) + x) * (T(1) + x) + y * y) - m_log(d);
    return {T(0.25) * re, T(0.5) * m_atan2(T(2) * y, (T(1) - x) * (T(1) + x) - y * y)};
}

// The six inverse functions, in double for complex64 too (the formulas cancel near the branch
// points). acos z = π/2 - asin z with torch's CPU signs: 0 - Im asin for complex128, C99's
// cacosf (-Im asin) for complex64.
__device__ __forceinline__ cpx<double> inverse_math(int op, cpx<double> z, bool c99_acos) {
    switch (op) {
    case COMPLEX_ASINH: return c_asinh(z);
    case COMPLEX_ACOSH: return c_acosh(z);
    case COMPLEX_ATANH: return c_atanh(z);
    case COMPLEX_ATAN: {
        cpx<double> t = c_atanh(cpx<double>{-z.im, z.re});
        return {t.im, -t.re};
    }
    default: {              // ASIN, ACOS: asin z = (t.im, -t.re) for t = asinh(jz)
        cpx<double> t = c_asinh(cpx<double>{-z.im, z.re});
        if (op == COMPLEX_ASIN) return {t.im, -t.re};
        return {1.5707963267948966 - t.im, c99_acos ? t.re : 0.0 + t.re};
    }
    }
}

template <typename T>
__device__ __forceinline__ cpx<T> complex_math(int op, cpx<T> z) {
    const T ln2 = T(0.6931471805599453), ln10 = T(2.302585092994046);
    switch (op) {
    case COMPLEX_EXP: return c_exp(z);
    case COMPLEX_LOG: return c_log(z);
    case COMPLEX_LOG2: { cpx<T> l = c_log(z); return {l.re / ln2, l.im / ln2}; }
    case COMPLEX_LOG10: { cpx<T> l = c_log(z); return {l.re / ln10, l.im / ln10}; }
    case COMPLEX_LOG1P: return c_log1p(z);
    case COMPLEX_SQRT: return c_sqrt(z);
    case COMPLEX_RSQRT: return c_div(cpx<T>{T(1), T(0)}, c_sqrt(z));
    case COMPLEX_SIN: {     // sin z = -j sinh(jz)
        cpx<T> t = c_sinh(cpx<T>{-z.im, z.re});
        return {t.im, -t.re};
    }
    case COMPLEX_COS: return c_cosh(cpx<T>{-z.im, z.re});     // cos z = cosh(jz)
    case COMPLEX_TAN: {     // tan z = -j tanh(jz)
        cpx<T> t = c_tanh(cpx<T>{-z.im, z.re});
        return {t.im, -t.re};
    }
    case COMPLEX_SINH: return c_sinh(z);
    case COMPLEX_COSH: return c_cosh(z);
    case COMPLEX_TANH: return c_tanh(z);
    case COMPLEX_SIGMOID: {
        cpx<T> e = c_exp(cpx<T>{-z.re, -z.im});
        return c_div(cpx<T>{T(1), T(0)}, cpx<T>{T(1) + e.re, e.im});
    }
    case COMPLEX_EXP2: return c_exp(cpx<T>{z.re * ln2, z.im * ln2});
    case COMPLEX_ASIN: case COMPLEX_ACOS: case COMPLEX_ATAN:
    case COMPLEX_ASINH: case COMPLEX_ACOSH: case COMPLEX_ATANH: {
        cpx<double> r = inverse_math(op, cpx<double>{double(z.re), double(z.im)}, sizeof(T) == 4);
        return {T(r.re), T(r.im)};
    }
    default: {              // EXPM1, c10's: expm1(x) cos y - 2 sin²(y / 2) + j e^x sin y
        T h = m_sin(z.im / T(2));
        return {m_expm1(z.re) * m_cos(z.im) - T(2) * h * h, m_exp(z.re) * m_sin(z.im)};
    }
    }
}

// a ** b as C99's cpow: exp(b log a)
template <typename T>
__device__ __forceinline__ cpx<T> c_pow(cpx<T> a, cpx<T> b) {
    return c_exp(c_mul(b, c_log(a)));
}

// out[i] = a[i] op b[i] over n complex elements (2n floats each)
template <typename T>
__global__ void __launch_bounds__(THREADS)
complex_binary_kernel(int op, const T* __restrict__ a, const T* __restrict__ b,
                      T* __restrict__ out, i64 n) {
    FOR_EACH_ELEMENT(i, n) {
        T ar = a[2 * i], ai = a[2 * i + 1], br = b[2 * i], bi = b[2 * i + 1];
        if (op == COMPLEX_MUL) {
            out[2 * i] = ar * br - ai * bi;
            out[2 * i + 1] = ar * bi + ai * br;
        } else if (op == COMPLEX_DIV) {
            complex_divide(ar, ai, br, bi, &out[2 * i], &out[2 * i + 1]);
        } else {
            cpx<T> p = c_pow(cpx<T>{ar, ai}, cpx<T>{br, bi});
            out[2 * i] = p.re;
            out[2 * i + 1] = p.im;
        }
    }
}

// out[i] = op(a[i]): ABS and ANGLE write one real per element, the others a pair
template <typename T>
__global__ void __launch_bounds__(THREADS)
complex_unary_kernel(int op, const T* __restrict__ a, T* __restrict__ out, i64 n) {
    FOR_EACH_ELEMENT(i, n) {
        T re = a[2 * i], im = a[2 * i + 1];
        if (op == COMPLEX_ABS) {
            out[i] = m_hypot(re, im);
        } else if (op == COMPLEX_ANGLE) {
            out[i] = m_atan2(im, re);
        } else if (op == COMPLEX_SGN) {
            T m = m_hypot(re, im);
            out[2 * i] = m == T(0) ? T(0) : re / m;
            out[2 * i + 1] = m == T(0) ? T(0) : im / m;
        } else if (op == COMPLEX_RECIPROCAL) {
            complex_divide(T(1), T(0), re, im, &out[2 * i], &out[2 * i + 1]);
        } else {
            cpx<T> r = complex_math(op, cpx<T>{re, im});
            out[2 * i] = r.re;
            out[2 * i + 1] = r.im;
        }
    }
}

// out[i] = r[i] (cos theta[i] + j sin theta[i])
template <typename T>
__global__ void __launch_bounds__(THREADS)
complex_polar_kernel(const T* __restrict__ r, const T* __restrict__ theta, T* __restrict__ out,
                     i64 n) {
    FOR_EACH_ELEMENT(i, n) {
        out[2 * i] = r[i] * m_cos(theta[i]);
        out[2 * i + 1] = r[i] * m_sin(theta[i]);
    }
}
