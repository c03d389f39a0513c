// Separable gathers over the last three axes and their adjoint: reflect / replicate / circular
// padding and nearest upsampling in one launch (layout and tables: minitorch/_cpu/grid.pyx).
// One thread per output element; the scatter adds with atomics into a zeroed grad_in.
#include "common.cuh"

// The source offset in x (planes, d, h, w) of output element e of (planes, od, oh, ow); the three
// tables follow one another in `index`.
__device__ __forceinline__ i64 grid_source(i64 e, const i64* index, i64 d, i64 h, i64 w,
                                           i64 od, i64 oh, i64 ow) {
    i64 c = e % ow, rest = e / ow;
    i64 b = rest % oh;
    rest /= oh;
    i64 a = rest % od, p = rest / od;
    return ((p * d + index[a]) * h + index[od + b]) * w + index[od + oh + c];
}

template <typename T>
__global__ void __launch_bounds__(THREADS)
grid_gather_kernel(const T* __restrict__ x, const i64* __restrict__ index, T* __restrict__ out,
                   i64 planes, i64 d, i64 h, i64 w, i64 od, i64 oh, i64 ow) {
    FOR_EACH_ELEMENT(e, planes * od * oh * ow) {
        out[e] = x[grid_source(e, index, d, h, w, od, oh, ow)];
    }
}

template <typename T>
__global__ void __launch_bounds__(THREADS)
grid_scatter_add_kernel(const T* __restrict__ grad, const i64* __restrict__ index,
                        T* grad_in, i64 planes, i64 d, i64 h, i64 w, i64 od,
                        i64 oh, i64 ow) {
    FOR_EACH_ELEMENT(e, planes * od * oh * ow) {
        atomic_accumulate(grad_in + grid_source(e, index, d, h, w, od, oh, ow), grad[e]);
    }
}
