// Fused normalisation rows (layer_norm, group_norm, instance_norm, rms_norm), forward and
// backward (the CPU twins and the layout are in minitorch/_cpu/norm.pyx): x is compact
// (rows, n); row r, element j uses parameter (r % groups) * (n / inner) + j / inner. Segmented
// rows (segments > 1, inner = n): x is compact (segments, rows, n / segments), element j of
// row r at norm_at (batch norm's channel rows of an NCHW input, in place).
// One block per row (the rows are long: 128 to 8192 elements), block sums through warp
// shuffles and one shared slot per warp, read back in the same order by every thread (so the
// result does not depend on scheduling). The weight and bias gradients are column sums in
// kernels of their own, a lane (inner == 1) or a block (inner > 1) per parameter: no
// atomics, deterministic.
#include "common.cuh"

MATH1(sqrt)

template <typename T> __device__ __forceinline__ T norm_warp_sum(T v) {
#pragma unroll
    for (int delta = 16; delta > 0; delta >>= 1) v += __shfl_xor_sync(0xffffffffu, v, delta);
    return v;
}

// weight and bias may be null (no affine parameter).

// the sum of v over the block (THREADS threads); `slots` holds THREADS / 32 values
template <typename T> __device__ __forceinline__ T norm_block_sum(T v, T* slots) {
    v = norm_warp_sum(v);
    __syncthreads();                    // the previous sum's slots have been read
    if ((threadIdx.x & 31) == 0) slots[threadIdx.x >> 5] = v;
    __syncthreads();
    T total = T(0);
    for (int w = 0; w < THREADS / 32; ++w) total += slots[w];
    return total;
}

__device__ __forceinline__ i64 norm_param(i64 row, i64 j, i64 n, i64 inner, i64 groups) {
    return (row % groups) * (n / inner) + (inner == 1 ? j : j / inner);
}

// where element j of row `row` lies (the row's start is not row * n when segmented)
__device__ __forceinline__ i64 norm_at(i64 row, i64 j, i64 rows, i64 n, i64 segments) {
    if (segments == 1) return row * n + j;
    const i64 piece = n / segments;
    return ((j / piece) * rows + row) * piece + j % piece;
}

template <typename T>
__global__ void __launch_bounds__(THREADS)
norm_rows_kernel(const T* __restrict__ x, const T* __restrict__ weight, const T* __restrict__ bias,
                 T* __restrict__ y, T* __restrict__ mean_out, T* __restrict__ rstd_out, i64 rows,
                 i64 n, i64 inner, i64 groups, double eps, int rms, i64 segments) {
    __shared__ T slots[THREADS / 32];
    for (i64 row = blockIdx.x; row < rows; row += gridDim.x) {
        T total = T(0);
        if (!rms) {
            for (i64 j = threadIdx.x; j < n; j += THREADS)
                total += x[norm_at(row, j, rows, n, segments)];
            total = norm_block_sum(total, slots);
        }
        const T mean = total / T(n);
        T squares = T(0);
        for (i64 j = threadIdx.x; j < n; j += THREADS) {
            const T d = x[norm_at(row, j, rows, n, segments)] - mean;
            squares += d * d;
        }
        squares = norm_block_sum(squares, slots);
        const T rstd = T(1) / m_sqrt(squares / T(n) + T(eps));
        if (threadIdx.x == 0) {
            mean_out[row] = mean;
            rstd_out[row] = rstd;
        }
        for (i64 j = threadIdx.x; j < n; j += THREADS) {
            const i64 at = norm_at(row, j, rows, n, segments);
            T v = (x[at] - mean) * rstd;
            if (weight || bias) {
                const i64 p = norm_param(row, j, n, inner, groups);
                if (weight) v = v * weight[p];
                if (bias) v = v + bias[p];
            }
            y[at] = v;
        }
    }
}

// dx = rstd * (g*w - mean(g*w) - xhat * mean(g*w*xhat)), no mean(g*w) term for rms
template <typename T>
__global__ void __launch_bounds__(THREADS)
norm_rows_backward_kernel(const T* __restrict__ g, const T* __restrict__ x,
                          const T* __restrict__ mean_in, const T* __restrict__ rstd_in,
                          const T* __restrict__ weight, T* __restrict__ dx, i64 rows, i64 n,
                          i64 inner, i64 groups, int rms, i64 segments) {
    __shared__ T slots[THREADS / 32];
    for (i64 row = blockIdx.x; row < rows; row += gridDim.x) {
        const T mean = mean_in[row], rstd = rstd_in[row];
        T s1 = T(0), s2 = T(0);
        for (i64 j = threadIdx.x; j < n; j += THREADS) {
            const i64 at = norm_at(row, j, rows, n, segments);
            const T gw = weight ? g[at] * weight[norm_param(row, j, n, inner, groups)] : g[at];
            s1 += gw;
            s2 += gw * (x[at] - mean);
        }
        s1 = rms ? T(0) : norm_block_sum(s1, slots);
        s2 = norm_block_sum(s2, slots);
        const T c1 = -rstd * s1 / T(n), c2 = -rstd * rstd * rstd * s2 / T(n);
        for (i64 j = threadIdx.x; j < n; j += THREADS) {
            const i64 at = norm_at(row, j, rows, n, segments);
            const T gw = weight ? g[at] * weight[norm_param(row, j, n, inner, groups)] : g[at];
            dx[at] = rstd * gw + c1 + c2 * (x[at] - mean);
        }
    }
}

// inner == 1: a block per 32 consecutive parameters p = (block, j), a lane each; the 8 warps
// take every 8th row of the parameter's block (coalesced along j) and their partial sums meet
// in shared memory, added in warp order
template <typename T>
__global__ void __launch_bounds__(THREADS)
norm_params_cols_kernel(const T* __restrict__ g, const T* __restrict__ x,
                        const T* __restrict__ mean_in, const T* __restrict__ rstd_in,
                        T* __restrict__ dw, T* __restrict__ db, i64 rows, i64 n, i64 groups) {
    constexpr int SLICES = THREADS / 32;
    __shared__ T parts_w[THREADS];
    __shared__ T parts_b[THREADS];
    const int lane = threadIdx.x & 31, slice = threadIdx.x >> 5;
    const i64 count = groups * n;
    for (i64 base = (i64)blockIdx.x * 32; base < count; base += (i64)gridDim.x * 32) {
        const i64 p = base + lane;
        T sw = T(0), sb = T(0);
        if (p < count) {
            const i64 j = p % n;
            for (i64 row = p / n + slice * groups; row < rows; row += groups * SLICES) {
                const T gv = g[row * n + j];
                sw += gv * (x[row * n + j] - mean_in[row]) * rstd_in[row];
                sb += gv;
            }
        }
        parts_w[threadIdx.x] = sw;
        parts_b[threadIdx.x] = sb;
        __syncthreads();
        if (slice == 0 && p < count) {
            for (int k = 1; k < SLICES; ++k) {
                sw += parts_w[k * 32 + lane];
                sb += parts_b[k * 32 + lane];
            }
            dw[p] = sw;
            db[p] = sb;
        }
        __syncthreads();                // the parts are read before the next round writes
    }
}

// inner > 1: one block per parameter p = (block, channel), over its inner elements of every
// row of its block
template <typename T>
__global__ void __launch_bounds__(THREADS)
norm_params_blocks_kernel(const T* __restrict__ g, const T* __restrict__ x,
                          const T* __restrict__ mean_in, const T* __restrict__ rstd_in,
                          T* __restrict__ dw, T* __restrict__ db, i64 rows, i64 n, i64 inner,
                          i64 groups, i64 segments) {
    __shared__ T slots[THREADS / 32];
    const i64 channels = n / inner, count = groups * channels;
    const i64 length = rows / groups * inner;     // the elements of one parameter
    for (i64 p = blockIdx.x; p < count; p += gridDim.x) {
        const i64 first_row = p / channels, start = (p % channels) * inner;
        T sw = T(0), sb = T(0);
        for (i64 t = threadIdx.x; t < length; t += THREADS) {
            const i64 row = first_row + (t / inner) * groups;
            const i64 i = norm_at(row, start + t % inner, rows, n, segments);
            const T gv = g[i];
            sw += gv * (x[i] - mean_in[row]) * rstd_in[row];
            sb += gv;
        }
        sw = norm_block_sum(sw, slots);
        sb = norm_block_sum(sb, slots);
        if (threadIdx.x == 0) {
            dw[p] = sw;
            db[p] = sb;
        }
    }
}
