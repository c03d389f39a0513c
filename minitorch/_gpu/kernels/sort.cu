// Stable sort of every row of a compact (rows, n) array: the sorted values and the int64
// positions they came from (torch.sort, and through it argsort, topk, kthvalue, median).
//
// Bitonic networks on (value, position) pairs. Ordering the pairs by value, then by position,
// is a strict total order, so the network's result is unique and equal to a stable sort, for
// descending too. NaN is the largest value (last ascending, first descending, as in torch).
// Rows are padded to a power of two with virtual elements (positions >= n) that sort last.
//
// sort_rows_kernel: rows of up to SORT_TILE elements, one block per row, in shared memory.
// Longer rows: sort_pad_kernel copies them into padded scratch rows, sort_stage_kernel runs one
// (k, j) stage of the network over global memory per launch, sort_unpad_kernel copies back.
#include "common.cuh"

#define SORT_TILE 2048

// Does the pair (x, i) come before (y, j)? Virtual elements (position >= n) last.
template <typename T>
__device__ __forceinline__ bool sorts_before(T x, i64 i, T y, i64 j, i64 n, int descending) {
    if (i >= n || j >= n) return i < j;
    bool x_nan = is_nan(x), y_nan = is_nan(y);
    if (x_nan || y_nan) {
        if (x_nan && y_nan) return i < j;
        return descending ? x_nan : y_nan;
    }
    if (x == y) return i < j;
    return descending ? x > y : x < y;
}

// Compare-exchange of t and its partner t ^ j in stage (k, j): within each run of k the order is
// ascending where bit k of t is clear, descending where it is set (the bitonic merge pattern).
template <typename T, typename P>
__device__ __forceinline__ void compare_exchange(T* key, P* pos, i64 t, i64 k, i64 j, i64 n,
                                                 int descending) {
    i64 partner = t ^ j;
    if (partner <= t) return;
    bool forward = (t & k) == 0;
    if (sorts_before(key[partner], (i64)pos[partner], key[t], (i64)pos[t], n, descending) ==
        forward) {
        T v = key[t];
        key[t] = key[partner];
        key[partner] = v;
        P p = pos[t];
        pos[t] = pos[partner];
        pos[partner] = p;
    }
}

// One block of THREADS per row (grid-strided over rows); the row, padded to the power of two
// `padded` <= SORT_TILE, is sorted in shared memory.
template <typename T>
__global__ void sort_rows_kernel(const T* __restrict__ a, T* __restrict__ values,
                                 i64* __restrict__ indices, i64 rows, i64 n, i64 padded,
                                 int descending) {
    __shared__ T key[SORT_TILE];
    __shared__ int pos[SORT_TILE];
    for (i64 row = blockIdx.x; row < rows; row += gridDim.x) {
        const T* src = a + row * n;
        for (int t = threadIdx.x; t < padded; t += THREADS) {
            key[t] = t < n ? src[t] : T(0);
            pos[t] = t;
        }
        __syncthreads();
        for (i64 k = 2; k <= padded; k <<= 1) {
            for (i64 j = k >> 1; j > 0; j >>= 1) {
                for (int t = threadIdx.x; t < padded; t += THREADS)
                    compare_exchange(key, pos, t, k, j, n, descending);
                __syncthreads();
            }
        }
        for (int t = threadIdx.x; t < n; t += THREADS) {
            values[row * n + t] = key[t];
            indices[row * n + t] = pos[t];
        }
        __syncthreads();    // the next row reuses the shared arrays
    }
}

// keys/pos (rows, padded) = the rows of a (rows, n), positions 0..padded-1 (>= n: virtual).
template <typename T>
__global__ void sort_pad_kernel(const T* __restrict__ a, T* __restrict__ keys,
                                i64* __restrict__ pos, i64 rows, i64 n, i64 padded) {
    FOR_EACH_ELEMENT(i, rows * padded) {
        i64 row = i / padded, t = i - row * padded;
        keys[i] = t < n ? a[row * n + t] : T(0);
        pos[i] = t;
    }
}

// Stage (k, j) of the network over every padded row (one thread per element; the lower one of
// each pair does the exchange).
template <typename T>
__global__ void sort_stage_kernel(T* __restrict__ keys, i64* __restrict__ pos, i64 rows, i64 n,
                                  i64 padded, i64 k, i64 j, int descending) {
    FOR_EACH_ELEMENT(i, rows * padded) {
        i64 row = i / padded;
        compare_exchange(keys + row * padded, pos + row * padded, i - row * padded, k, j, n,
                         descending);
    }
}

// values/indices (rows, n) = the first n (the real) elements of each sorted padded row.
template <typename T>
__global__ void sort_unpad_kernel(const T* __restrict__ keys, const i64* __restrict__ pos,
                                  T* __restrict__ values, i64* __restrict__ indices, i64 rows,
                                  i64 n, i64 padded) {
    FOR_EACH_ELEMENT(i, rows * n) {
        i64 row = i / n, t = i - row * n;
        values[i] = keys[row * padded + t];
        indices[i] = pos[row * padded + t];
    }
}

// searchsorted: out[i] = where values[i] would be inserted in its row of sorted boundaries (rows
// of n: row i / m, or row 0 for every value when `shared_row`), the row read through its sorter
// positions `sorter` when not null. The comparisons are torch's (the lower bound moves right
// while !(b >= v), the upper bound while !(b > v)), so NaNs land where torch puts them.
template <typename T>
__global__ void searchsorted_kernel(const T* __restrict__ boundaries, const T* __restrict__ values,
                                    const i64* __restrict__ sorter, i64* __restrict__ out,
                                    i64 size, i64 n, i64 m, int shared_row, int right) {
    FOR_EACH_ELEMENT(i, size) {
        i64 row = shared_row ? 0 : i / m;
        const T* bd = boundaries + row * n;
        const i64* order = sorter ? sorter + row * n : nullptr;
        T v = values[i];
        i64 lo = 0, hi = n;
        while (lo < hi) {
            i64 mid = lo + ((hi - lo) >> 1);
            T b = bd[order ? order[mid] : mid];
            if (right ? !(b > v) : !(b >= v)) lo = mid + 1;
            else hi = mid;
        }
        out[i] = lo;
    }
}
