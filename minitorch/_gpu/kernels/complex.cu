// Complex arithmetic on interleaved (re, im) pairs of float / double: the GPU twin of
// minitorch/_cpu/complex.pyx, with the same op codes and formulas (c10::complex's scaled
// division, hypot for abs). Only the ops that mix the two parts live here; everything else a
// complex tensor does runs the real kernels over its pairs (minitorch/_cpu/complex_pairs.py).
// One thread per complex element; buffers are compact.
#include "common.cuh"

MATH1(exp) MATH1(sin) MATH1(cos)
MATH2(atan2) MATH2(hypot)

#define COMPLEX_MUL 0
#define COMPLEX_DIV 1
#define COMPLEX_ABS 0
#define COMPLEX_ANGLE 1
#define COMPLEX_EXP 2
#define COMPLEX_SGN 3
#define COMPLEX_RECIPROCAL 4

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
        } else {
            complex_divide(ar, ai, br, bi, &out[2 * i], &out[2 * i + 1]);
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
        } else if (op == COMPLEX_EXP) {
            T e = m_exp(re);
            if (im == T(0)) {                   // exp of a real number stays real
                out[2 * i] = e;
                out[2 * i + 1] = im;
            } else {
                out[2 * i] = e * m_cos(im);
                out[2 * i + 1] = e * m_sin(im);
            }
        } else if (op == COMPLEX_SGN) {
            T m = m_hypot(re, im);
            out[2 * i] = m == T(0) ? T(0) : re / m;
            out[2 * i + 1] = m == T(0) ? T(0) : im / m;
        } else {
            complex_divide(T(1), T(0), re, im, &out[2 * i], &out[2 * i + 1]);
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
