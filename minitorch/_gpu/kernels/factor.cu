// Matrix factorisations in place on compact batches of row-major matrices (float / double): LU
// with partial pivoting (LAPACK getrf), the permutation its pivots describe, the triangular solve
// A X = B, and Cholesky (lower). The same steps in the same order as the CPU kernels
// (minitorch/_cpu/factor.pyx), so both give the same pivots and, up to rounding, the same values.
//
// One block of THREADS per matrix (grid-strided over the batch); each step of a factorisation
// is one pass of the block's threads over a row, a column or the trailing block, separated by
// __syncthreads. The pivot search is a shared-memory reduction. Errors the arithmetic finds
// come back in an int64 `info` per matrix (as LAPACK's), which the host reads once.
#include "common.cuh"

__device__ __forceinline__ float square_root(float x) { return sqrtf(x); }
__device__ __forceinline__ double square_root(double x) { return sqrt(x); }

template <typename T> __device__ __forceinline__ T magnitude(T x) { return x < T(0) ? -x : x; }

// The first row >= j of the largest magnitude in column j of the m x n matrix A, as the CPU's
// serial scan finds it: NaNs never win, unless A[j, j] is NaN, which then stays the pivot.
template <typename T>
__device__ i64 pivot_row(const T* A, i64 j, i64 m, i64 n, T* best_v, i64* best_i) {
    T v_best = T(-1);
    i64 i_best = m;
    for (i64 i = j + threadIdx.x; i < m; i += THREADS) {
        T v = magnitude(A[i * n + j]);
        if (v > v_best) { v_best = v; i_best = i; }
    }
    best_v[threadIdx.x] = v_best;
    best_i[threadIdx.x] = i_best;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) {
            T v = best_v[threadIdx.x + s];
            i64 i = best_i[threadIdx.x + s];
            if (v > best_v[threadIdx.x] || (v == best_v[threadIdx.x] && i < best_i[threadIdx.x])) {
                best_v[threadIdx.x] = v;
                best_i[threadIdx.x] = i;
            }
        }
        __syncthreads();
    }
    i64 p = best_i[0];
    __syncthreads();    // every thread has read the winner before the arrays are reused
    return (is_nan(A[j * n + j]) || p >= m) ? j : p;
}

// getrf on each m x n matrix of a: pivot search, row swap, column scaling, rank-1 update of the
// trailing block. pivots (min(m, n) per matrix) are 1-based; info = order of the first zero pivot.
template <typename T>
__global__ void lu_factor_kernel(T* __restrict__ a, i64* __restrict__ pivots,
                                 i64* __restrict__ info, i64 batch, i64 m, i64 n) {
    __shared__ T best_v[THREADS];
    __shared__ i64 best_i[THREADS];
    i64 k = m < n ? m : n;
    for (i64 b = blockIdx.x; b < batch; b += gridDim.x) {
        T* A = a + b * m * n;
        i64 first_zero = 0;
        for (i64 j = 0; j < k; ++j) {
            i64 p = pivot_row(A, j, m, n, best_v, best_i);
            T pivot = A[p * n + j];
            __syncthreads();    // every thread holds the pivot before the swap moves it
            if (threadIdx.x == 0) pivots[b * k + j] = p + 1;
            if (pivot == T(0) && first_zero == 0) first_zero = j + 1;
            if (pivot != T(0) && p != j) {
                for (i64 c = threadIdx.x; c < n; c += THREADS) {
                    T v = A[j * n + c];
                    A[j * n + c] = A[p * n + c];
                    A[p * n + c] = v;
                }
            }
            __syncthreads();
            if (pivot != T(0)) {
                for (i64 i = j + 1 + threadIdx.x; i < m; i += THREADS) A[i * n + j] /= pivot;
            }
            __syncthreads();
            i64 rows = m - j - 1, cols = n - j - 1;
            for (i64 t = threadIdx.x; t < rows * cols; t += THREADS) {
                i64 i = j + 1 + t / cols, c = j + 1 + t % cols;
                A[i * n + c] -= A[i * n + j] * A[j * n + c];
            }
            __syncthreads();
        }
        if (threadIdx.x == 0) info[b] = first_zero;
    }
}

// perm (m per matrix) = the original row at each row after the swaps `pivots` (k per matrix,
// 1-based); swaps out of [1, m] are skipped (the host rejects them first). One thread a matrix.
__global__ void lu_permutation_kernel(const i64* __restrict__ pivots, i64* __restrict__ perm,
                                      i64 batch, i64 m, i64 k) {
    FOR_EACH_ELEMENT(b, batch) {
        i64* row = perm + b * m;
        for (i64 i = 0; i < m; ++i) row[i] = i;
        for (i64 i = 0; i < k; ++i) {
            i64 target = pivots[b * k + i] - 1;
            if (target >= 0 && target < m) {
                i64 v = row[i];
                row[i] = row[target];
                row[target] = v;
            }
        }
    }
}

// x (n x k per matrix) = A^-1 x for triangular A (lower, or upper when `upper`), by column
// sweeps: row j of x is divided by A[j, j] (unless `unit`), then every row still to solve takes
// away A[i, j] times it. Rows are solved top-down for lower A, bottom-up for upper.
template <typename T>
__global__ void triangular_solve_kernel(const T* __restrict__ a, T* __restrict__ x, i64 batch,
                                        i64 n, i64 k, int upper, int unit) {
    for (i64 b = blockIdx.x; b < batch; b += gridDim.x) {
        const T* A = a + b * n * n;
        T* X = x + b * n * k;
        for (i64 step = 0; step < n; ++step) {
            i64 j = upper ? n - 1 - step : step;
            if (!unit) {
                T d = A[j * n + j];
                for (i64 c = threadIdx.x; c < k; c += THREADS) X[j * k + c] /= d;
            }
            __syncthreads();
            i64 first = upper ? 0 : j + 1, rows = upper ? j : n - j - 1;
            for (i64 t = threadIdx.x; t < rows * k; t += THREADS) {
                i64 i = first + t / k, c = t % k;
                X[i * k + c] -= A[i * n + j] * X[j * k + c];
            }
            __syncthreads();
        }
    }
}

// Right-looking Cholesky of each n x n matrix's lower triangle (the strict upper one zeroed):
// column j = its diagonal's square root and the entries below divided by it, then the trailing
// lower triangle's rank-1 update. Stops at the first diagonal that is not positive (info = its
// order), leaving the partly updated matrix, as potrf does.
template <typename T>
__global__ void cholesky_factor_kernel(T* __restrict__ a, i64* __restrict__ info, i64 batch,
                                       i64 n) {
    for (i64 b = blockIdx.x; b < batch; b += gridDim.x) {
        T* A = a + b * n * n;
        for (i64 t = threadIdx.x; t < n * n; t += THREADS) {
            if (t % n > t / n) A[t] = T(0);
        }
        __syncthreads();
        i64 failed = 0;
        for (i64 j = 0; j < n; ++j) {
            T d = A[j * n + j];
            if (!(d > T(0))) {      // the same value in every thread: they all leave together
                failed = j + 1;
                break;
            }
            d = square_root(d);
            __syncthreads();        // every thread has read A[j, j] before it is overwritten
            if (threadIdx.x == 0) A[j * n + j] = d;
            for (i64 i = j + 1 + threadIdx.x; i < n; i += THREADS) A[i * n + j] /= d;
            __syncthreads();
            i64 rest = n - j - 1;
            for (i64 t = threadIdx.x; t < rest * rest; t += THREADS) {
                i64 i = j + 1 + t / rest, c = j + 1 + t % rest;
                if (c <= i) A[i * n + c] -= A[i * n + j] * A[c * n + j];
            }
            __syncthreads();
        }
        if (threadIdx.x == 0) info[b] = failed;
        __syncthreads();            // the next matrix starts when this one's block is done
    }
}
