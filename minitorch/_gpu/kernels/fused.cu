// Fused kernels that replace a chain of elementwise launches: softmax / log_softmax rows forward
// and backward, and the Adam update (the CPU twins are minitorch/_cpu/fused.pyx).
#include "common.cuh"

MATH1(exp) MATH1(log) MATH1(sqrt)

// ---------------------------------------------------------------------------------------------
// softmax rows (see minitorch/_cpu/fused.pyx): softmax / log_softmax of each length-n row
// of a compact (rows, n) array and their input gradients, one warp per row: lanes stride along
// the row (coalesced), shuffles combine the row's max and sums.

template <typename T> __device__ __forceinline__ T warp_sum(T v) {
#pragma unroll
    for (int delta = 16; delta > 0; delta >>= 1) v += __shfl_xor_sync(0xffffffffu, v, delta);
    return v;
}

// max over the warp; a NaN anywhere wins (torch's max, and then the whole row is NaN)
template <typename T> __device__ __forceinline__ T warp_max(T v) {
#pragma unroll
    for (int delta = 16; delta > 0; delta >>= 1) {
        T other = __shfl_xor_sync(0xffffffffu, v, delta);
        v = (other > v || other != other) ? other : v;
    }
    return v;
}

// a row's max (NaN wins) and Σ exp(x - max), reduced over the warp
template <typename T>
__device__ __forceinline__ void row_peak_total(const T* x, i64 n, int lane, T& peak, T& total) {
    peak = -pos_inf<T>();
    for (i64 j = lane; j < n; j += 32) {
        T v = x[j];
        peak = (v > peak || v != v) ? v : peak;
    }
    peak = warp_max(peak);
    total = T(0);
    for (i64 j = lane; j < n; j += 32) total += m_exp(x[j] - peak);
    total = warp_sum(total);
}

template <typename T>
__global__ void __launch_bounds__(THREADS)
softmax_rows_kernel(const T* __restrict__ a, T* __restrict__ out, i64 rows, i64 n, int log) {
    const int lane = threadIdx.x & 31;
    // row is uniform across a warp, so the shuffles below always see all 32 lanes
    for (i64 row = ((i64)blockIdx.x * blockDim.x + threadIdx.x) / 32; row < rows;
         row += (i64)gridDim.x * (blockDim.x / 32)) {
    const T* x = a + row * n;
    T* y = out + row * n;
    T peak, total;
    row_peak_total(x, n, lane, peak, total);
    if (log) {
        const T log_total = m_log(total);
        for (i64 j = lane; j < n; j += 32) y[j] = (x[j] - peak) - log_total;
    } else {
        for (i64 j = lane; j < n; j += 32) y[j] = m_exp(x[j] - peak) / total;
    }
    }
}

// softmax: y * (g - sum(g * y)); log_softmax: g - exp(y) * sum(g)
template <typename T>
__global__ void __launch_bounds__(THREADS)
softmax_backward_rows_kernel(const T* __restrict__ g, const T* __restrict__ y, T* __restrict__ out,
                             i64 rows, i64 n, int log) {
    const int lane = threadIdx.x & 31;
    for (i64 row = ((i64)blockIdx.x * blockDim.x + threadIdx.x) / 32; row < rows;
         row += (i64)gridDim.x * (blockDim.x / 32)) {
    const T* gr = g + row * n;
    const T* yr = y + row * n;
    T* o = out + row * n;
    T total = T(0);
    for (i64 j = lane; j < n; j += 32) total += log ? gr[j] : gr[j] * yr[j];
    total = warp_sum(total);
    for (i64 j = lane; j < n; j += 32)
        o[j] = log ? gr[j] - m_exp(yr[j]) * total : (gr[j] - total) * yr[j];
    }
}

// ---------------------------------------------------------------------------------------------
// cross-entropy rows (see minitorch/_cpu/fused.pyx): a row's log_softmax read at its target
// class, and the input gradient c·onehot − c·softmax, one warp per row as softmax_rows_kernel
// (same arithmetic, so the composed path's values). Targets are checked on the host first.

template <typename T>
__global__ void __launch_bounds__(THREADS)
cross_entropy_rows_kernel(const T* __restrict__ a, const i64* __restrict__ target,
                          T* __restrict__ picked, T* __restrict__ stats, i64 rows, i64 n) {
    const int lane = threadIdx.x & 31;
    for (i64 row = ((i64)blockIdx.x * blockDim.x + threadIdx.x) / 32; row < rows;
         row += (i64)gridDim.x * (blockDim.x / 32)) {
    const T* x = a + row * n;
    T peak, total;
    row_peak_total(x, n, lane, peak, total);
    if (lane == 0) {
        const T log_total = m_log(total);
        picked[row] = (x[target[row]] - peak) - log_total;
        stats[2 * row] = peak;              // the backward's softmax, without the reductions
        stats[2 * row + 1] = log_total;
    }
    }
}

template <typename T>
__global__ void __launch_bounds__(THREADS)
cross_entropy_rows_backward_kernel(const T* __restrict__ coef, const T* __restrict__ a,
                                   const i64* __restrict__ target,
                                   const T* __restrict__ stats, T* __restrict__ out,
                                   i64 rows, i64 n) {
    const int lane = threadIdx.x & 31;
    for (i64 row = ((i64)blockIdx.x * blockDim.x + threadIdx.x) / 32; row < rows;
         row += (i64)gridDim.x * (blockDim.x / 32)) {
    const T* x = a + row * n;
    T* o = out + row * n;
    const T c = coef[row];
    const i64 t = target[row];
    const T peak = stats[2 * row], log_total = stats[2 * row + 1];
    for (i64 j = lane; j < n; j += 32)
        o[j] = (j == t ? c : T(0)) - m_exp((x[j] - peak) - log_total) * c;
    }
}

// ---------------------------------------------------------------------------------------------
// fused Adam update (see adam_step in minitorch/_cpu/fused.pyx): torch's single-tensor
// Adam operation for operation, every scalar rounded to T first as separate tensor ops would.
// max_v is null unless amsgrad.

template <typename T>
__global__ void __launch_bounds__(THREADS)
adam_kernel(T* __restrict__ p, const T* __restrict__ g, T* __restrict__ m, T* __restrict__ v,
            T* __restrict__ max_v, i64 n, T grad_scale, T param_scale, T grad_decay, T w1, T beta2,
            T c2, T eps, T bc2_sqrt, T neg_step) {
    FOR_EACH_ELEMENT(i, n) {
        T pi = p[i] * param_scale;                      // decoupled weight decay (AdamW)
        T gi = g[i] * grad_scale;                       // maximize: the negated gradient
        if (grad_decay != T(0)) gi = gi + grad_decay * p[i];    // L2 weight decay
        T mi = m[i];
        mi = w1 < T(0.5) ? mi + w1 * (gi - mi) : gi - (gi - mi) * (T(1) - w1);   // lerp
        T vi = v[i] * beta2 + c2 * gi * gi;
        m[i] = mi;
        v[i] = vi;
        if (max_v) {                                    // amsgrad: a NaN on either side wins
            T top = max_v[i];
            if (top > vi || top != top) vi = top;
            max_v[i] = vi;
        }
        p[i] = pi + neg_step * (mi / (m_sqrt(vi) / bc2_sqrt + eps));
    }
}
