// Separable gathers over the last three axes and their adjoint: reflect / replicate / circular
// padding and nearest upsampling in one launch (layout and tables: minitorch/_cpu/grid.pyx).
// One thread per output element; the scatter adds with atomics into a zeroed grad_in.
#include "common.cuh"

template <typename T>
__global__ void __launch_bounds__(THREADS)
grid_gather_kernel(const T* __restrict__ x, const i64* __restrict__ index, T* __restrict__ out,
                   i64 planes, i64 d, i64 h, i64 w, i64 od, i64 oh, i64 ow) {
    const i64* index_d = index;
    const i64* index_h = index + od;
    const i64* index_w = index + od + oh;
    FOR_EACH_ELEMENT(e, planes * od * oh * ow) {
        i64 c = e % ow, rest = e / ow;
        i64 b = rest % oh;
        rest /= oh;
        i64 a = rest % od, p = rest / od;
        out[e] = x[((p * d + index_d[a]) * h + index_h[b]) * w + index_w[c]];
    }
}

template <typename T>
__global__ void __launch_bounds__(THREADS)
grid_scatter_add_kernel(const T* __restrict__ grad, const i64* __restrict__ index,
                        T* grad_in, i64 planes, i64 d, i64 h, i64 w, i64 od,
                        i64 oh, i64 ow) {
    const i64* index_d = index;
    const i64* index_h = index + od;
    const i64* index_w = index + od + oh;
    FOR_EACH_ELEMENT(e, planes * od * oh * ow) {
        i64 c = e % ow, rest = e / ow;
        i64 b = rest % oh;
        rest /= oh;
        i64 a = rest % od, p = rest / od;
        atomic_accumulate(grad_in + ((p * d + index_d[a]) * h + index_h[b]) * w + index_w[c],
                          grad[e]);
    }
}
