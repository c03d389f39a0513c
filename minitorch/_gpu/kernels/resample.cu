// Separable linear interpolation over the last three axes and its adjoint: linear, bilinear and
// trilinear interpolate in one launch each way (layout, tables and the order of the sums:
// minitorch/_cpu/resample.pyx). One thread per output element; the adjoint adds with atomics
// into a zeroed grad_in.
#include "common.cuh"

// One axis of the resampling: input and output lengths, 1 or 2 taps, and its tables (two
// entries per output position: source indices and weights).
template <typename T> struct Axis {
    i64 size, out;
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

// The three axes from the kernels' flat arguments: the tables follow one another (depth,
// height, width), 2·out entries each.
template <typename T>
__device__ __forceinline__ void load_axes(Axis<T> (&axes)[3], const i64* index, const T* weights,
                                          i64 d, i64 h, i64 w, i64 od, i64 oh, i64 ow, int td,
                                          int th, int tw) {
    const i64 sizes[3] = {d, h, w}, outs[3] = {od, oh, ow};
    const int taps[3] = {td, th, tw};
    i64 start = 0;
    for (int k = 0; k < 3; ++k) {
        axes[k] = Axis<T>{sizes[k], outs[k], taps[k], index + start, weights + start};
        start += 2 * outs[k];
    }
}

template <typename T>
__global__ void __launch_bounds__(THREADS)
lerp_resample_kernel(const T* __restrict__ x, const i64* __restrict__ index,
                     const T* __restrict__ weights, T* __restrict__ out, i64 planes, i64 d, i64 h,
                     i64 w, i64 od, i64 oh, i64 ow, int td, int th, int tw) {
    Axis<T> axes[3];
    load_axes(axes, index, weights, d, h, w, od, oh, ow, td, th, tw);
    FOR_EACH_ELEMENT(e, planes * od * oh * ow) {
        const i64 c = e % ow, b = (e / ow) % oh, a = (e / (ow * oh)) % od, p = e / (ow * oh * od);
        const T* src = x + p * d * h * w;
        const Axis<T>& ad = axes[0];
        if (ad.taps == 1) {
            out[e] = along_hw(src + ad.index[2 * a] * h * w, axes[1], axes[2], b, c);
        } else {
            out[e] = along_hw(src + ad.index[2 * a] * h * w, axes[1], axes[2], b, c) *
                         ad.weights[2 * a] +
                     along_hw(src + ad.index[2 * a + 1] * h * w, axes[1], axes[2], b, c) *
                         ad.weights[2 * a + 1];
        }
    }
}

template <typename T>
__global__ void __launch_bounds__(THREADS)
lerp_resample_backward_kernel(const T* __restrict__ grad, const i64* __restrict__ index,
                              const T* __restrict__ weights, T* grad_in, i64 planes, i64 d,
                              i64 h, i64 w, i64 od, i64 oh, i64 ow, int td, int th, int tw) {
    Axis<T> axes[3];
    load_axes(axes, index, weights, d, h, w, od, oh, ow, td, th, tw);
    FOR_EACH_ELEMENT(e, planes * od * oh * ow) {
        const i64 c = e % ow, b = (e / ow) % oh, a = (e / (ow * oh)) % od, p = e / (ow * oh * od);
        T* dst = grad_in + p * d * h * w;
        for (int i = 0; i < td; ++i) {
            const i64 depth = axes[0].index[2 * a + i] * h;
            for (int j = 0; j < th; ++j) {
                // the CPU kernel's products: (g · (λd · λh)) · λw
                const T ld = axes[0].weights[2 * a + i], lh = axes[1].weights[2 * b + j];
                const T scale = td == 1 ? (th == 1 ? T(1) : lh) : (th == 1 ? ld : ld * lh);
                const T v = grad[e] * scale;
                T* row = dst + (depth + axes[1].index[2 * b + j]) * w;
                for (int k = 0; k < tw; ++k)
                    atomic_accumulate(row + axes[2].index[2 * c + k],
                                      tw == 1 ? v : v * axes[2].weights[2 * c + k]);
            }
        }
    }
}
