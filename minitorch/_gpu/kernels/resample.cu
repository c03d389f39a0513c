// Separable linear interpolation over the last three axes and its adjoint: linear, bilinear and
// trilinear interpolate in one launch each way (layout, tables and the order of the sums:
// minitorch/_cpu/resample.pyx). One thread per output element; the adjoint adds with atomics
// into a zeroed grad_in.
#include "common.cuh"

// One axis of the resampling: its input length, 1 or 2 taps, and its tables (two entries per
// output position: source indices and weights), which follow one another in the arguments
// (depth, height, width: 2·out entries each).
template <typename T> struct Axis {
    i64 size;
    int taps;
    const i64* index;
    const T* weights;
};

template <typename T>
__device__ __forceinline__ T along_w(const T* row, const Axis<T>& w, i64 c) {
    if (w.taps == 1) return row[w.index[2 * c]];
    return row[w.index[2 * c]] * w.weights[2 * c] + row[w.index[2 * c + 1]] * w.weights[2 * c + 1];
}

template <typename T>
__device__ __forceinline__ T along_hw(const T* plane, const Axis<T>& h, const Axis<T>& w, i64 b,
                                      i64 c) {
    if (h.taps == 1) return along_w(plane + h.index[2 * b] * w.size, w, c);
    return along_w(plane + h.index[2 * b] * w.size, w, c) * h.weights[2 * b] +
           along_w(plane + h.index[2 * b + 1] * w.size, w, c) * h.weights[2 * b + 1];
}

template <typename T>
__global__ void __launch_bounds__(THREADS)
lerp_resample_kernel(const T* __restrict__ x, const i64* __restrict__ index,
                     const T* __restrict__ weights, T* __restrict__ out, i64 planes, i64 d, i64 h,
                     i64 w, i64 od, i64 oh, i64 ow, int td, int th, int tw) {
    const Axis<T> ad{d, td, index, weights};
    const Axis<T> ah{h, th, index + 2 * od, weights + 2 * od};
    const Axis<T> aw{w, tw, index + 2 * (od + oh), weights + 2 * (od + oh)};
    FOR_EACH_ELEMENT(e, planes * od * oh * ow) {
        const i64 c = e % ow, b = (e / ow) % oh, a = (e / (ow * oh)) % od, p = e / (ow * oh * od);
        const T* src = x + p * d * h * w;
        if (td == 1) {
            out[e] = along_hw(src + ad.index[2 * a] * h * w, ah, aw, b, c);
        } else {
            out[e] = along_hw(src + ad.index[2 * a] * h * w, ah, aw, b, c) * ad.weights[2 * a] +
                     along_hw(src + ad.index[2 * a + 1] * h * w, ah, aw, b, c) *
                         ad.weights[2 * a + 1];
        }
    }
}

// The adjoint: each output's gradient added at its sources with the CPU kernel's products,
// (g · (λd · λh)) · λw.
template <typename T>
__global__ void __launch_bounds__(THREADS)
lerp_resample_backward_kernel(const T* __restrict__ grad, const i64* __restrict__ index,
                              const T* __restrict__ weights, T* grad_in, i64 planes, i64 d,
                              i64 h, i64 w, i64 od, i64 oh, i64 ow, int td, int th, int tw) {
    const i64* index_h = index + 2 * od;
    const i64* index_w = index + 2 * (od + oh);
    const T* weights_h = weights + 2 * od;
    const T* weights_w = weights + 2 * (od + oh);
    FOR_EACH_ELEMENT(e, planes * od * oh * ow) {
        const i64 c = e % ow, b = (e / ow) % oh, a = (e / (ow * oh)) % od, p = e / (ow * oh * od);
        T* dst = grad_in + p * d * h * w;
        for (int i = 0; i < td; ++i) {
            for (int j = 0; j < th; ++j) {
                const T ld = weights[2 * a + i], lh = weights_h[2 * b + j];
                const T scale = td == 1 ? (th == 1 ? T(1) : lh) : (th == 1 ? ld : ld * lh);
                const T v = grad[e] * scale;
                T* row = dst + (index[2 * a + i] * h + index_h[2 * b + j]) * w;
                atomic_accumulate(row + index_w[2 * c], tw == 1 ? v : v * weights_w[2 * c]);
                if (tw == 2) atomic_accumulate(row + index_w[2 * c + 1], v * weights_w[2 * c + 1]);
            }
        }
    }
}
