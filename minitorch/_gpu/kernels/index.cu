// Integer-index kernels along one axis of compact (outer, dim, inner) arrays: gather / scatter /
// scatter_add / scatter_reduce (one index per element), index_select / index_add (one index per
// slice), take / put (flat offsets). The host has validated every index before any of these runs (a device
// fault would poison the CUDA context), so the kernels index without checks. Accumulating writes
// use atomics; plain writes to targets that may repeat use claims (common.cuh), so the last
// source in order wins, as on the CPU.
#include "common.cuh"

// out[0] = max over i of (u64)index[i]: one number tells whether every index lies in [0, dim)
// (negative indices become huge). out must hold 0 before the launch.
__global__ void __launch_bounds__(THREADS)
index_umax_kernel(const i64* __restrict__ index, i64 n, u64* out) {
    u64 best = 0;
    for (i64 i = (i64)blockIdx.x * THREADS + threadIdx.x; i < n; i += (i64)gridDim.x * THREADS) {
        u64 v = (u64)index[i];
        best = v > best ? v : best;
    }
#pragma unroll
    for (int delta = 16; delta > 0; delta >>= 1) {
        u64 other = __shfl_down_sync(0xffffffffu, best, delta);
        best = other > best ? other : best;
    }
    if ((threadIdx.x & 31) == 0 && best) atomicMax(out, best);
}

// out[o, j, i] = a[o, index[o, j, i], i]
template <typename T>
__global__ void __launch_bounds__(THREADS)
gather_kernel(const T* __restrict__ a, const i64* __restrict__ index, T* __restrict__ out,
              i64 outer, i64 a_dim, i64 index_dim, i64 inner) {
    FOR_EACH_ELEMENT(e, outer * index_dim * inner) {
        i64 o = e / (index_dim * inner), i = e % inner;
        out[e] = a[(o * a_dim + index[e]) * inner + i];
    }
}

// out[o, index[o, j, i], i] = src[o, j, i] (mode: MODE_PLAIN, or MODE_CLAIM then MODE_WRITE
// with one claim per element of out)
template <typename T>
__global__ void __launch_bounds__(THREADS)
scatter_kernel(const T* __restrict__ src, const i64* __restrict__ index, T* out, i64 outer,
               i64 out_dim, i64 index_dim, i64 inner, int mode, i64* claims) {
    FOR_EACH_ELEMENT(e, outer * index_dim * inner) {
        i64 o = e / (index_dim * inner), i = e % inner;
        i64 target = (o * out_dim + index[e]) * inner + i;
        claimed_store(mode, out, target, src[e], claims, target, e);
    }
}

// out[o, index[o, j, i], i] += src[o, j, i]
template <typename T>
__global__ void __launch_bounds__(THREADS)
scatter_add_kernel(const T* __restrict__ src, const i64* __restrict__ index, T* out, i64 outer,
                   i64 out_dim, i64 index_dim, i64 inner) {
    FOR_EACH_ELEMENT(e, outer * index_dim * inner) {
        i64 o = e / (index_dim * inner), i = e % inner;
        atomic_accumulate(out + (o * out_dim + index[e]) * inner + i, src[e]);
    }
}

// ---------------------------------------------------------------------------------------------
// scatter_reduce: PROD / MAX / MIN combined into out with a compare-and-swap loop on the word
// holding the element (a byte's aligned 32-bit word, as in atomic_accumulate).


// The unsigned word a value travels in through atomicCAS, and a union reading its bits
// (the emulator's C++ has no __float_as_uint family).
template <typename T> struct cas_word { typedef u64 type; };
template <> struct cas_word<float> { typedef unsigned int type; };
template <typename T> union value_bits {
    T value;
    typename cas_word<T>::type word;
};

// a combined with b: MAX / MIN keep a NaN from either side (torch's scatter_reduce), PROD wraps
// for integers (uint8: its low byte) like the CPU.
template <typename T> __device__ __forceinline__ T reduce_pair(int op, T a, T b) {
    if (op == REDUCE_PROD) {
        if constexpr (same_type<T, i64>::value) return (i64)((u64)a * (u64)b);
        else return (T)(a * b);
    }
    bool keep = op == REDUCE_MAX ? a > b : a < b;
    return keep || is_nan(a) ? a : b;
}

template <typename T> __device__ __forceinline__ void atomic_reduce(int op, T* p, T v) {
    if constexpr (same_type<T, unsigned char>::value) {
        u64 addr = reinterpret_cast<u64>(p);
        unsigned int* word = reinterpret_cast<unsigned int*>(addr & ~(u64)3);
        unsigned int shift = (unsigned int)(addr & 3) * 8, seen = *word, expected;
        do {
            expected = seen;
            unsigned int next = reduce_pair(op, (T)(expected >> shift), v);
            seen = atomicCAS(word, expected,
                                    (expected & ~(0xffu << shift)) | (next << shift));
        } while (seen != expected);
    } else {
        typedef typename cas_word<T>::type W;
        W* word = reinterpret_cast<W*>(p);
        W seen = *word, expected;
        do {
            expected = seen;
            value_bits<T> current, next;
            current.word = expected;
            next.value = reduce_pair(op, current.value, v);
            seen = atomicCAS(word, expected, next.word);
        } while (seen != expected);
    }
}

// out[o, index[o, j, i], i] = op(out[o, index[o, j, i], i], src[o, j, i])
template <typename T>
__global__ void __launch_bounds__(THREADS)
scatter_reduce_kernel(int op, const T* __restrict__ src, const i64* __restrict__ index, T* out,
                      i64 outer, i64 out_dim, i64 index_dim, i64 inner) {
    FOR_EACH_ELEMENT(e, outer * index_dim * inner) {
        i64 o = e / (index_dim * inner), i = e % inner;
        atomic_reduce(op, out + (o * out_dim + index[e]) * inner + i, src[e]);
    }
}

// out[o, j, i] = a[o, index[j], i] (an embedding lookup is outer = 1, inner = dim)
template <typename T>
__global__ void __launch_bounds__(THREADS)
index_select_kernel(const T* __restrict__ a, const i64* __restrict__ index, T* __restrict__ out,
                    i64 outer, i64 a_dim, i64 n_index, i64 inner) {
    FOR_EACH_ELEMENT(e, outer * n_index * inner) {
        i64 row = e / inner, i = e - row * inner;
        i64 o = row / n_index, j = row - o * n_index;
        out[e] = a[(o * a_dim + index[j]) * inner + i];
    }
}

// out[o, index[j], i] += src[o, j, i]
template <typename T>
__global__ void __launch_bounds__(THREADS)
index_add_kernel(const T* __restrict__ src, const i64* __restrict__ index, T* out, i64 outer,
                 i64 out_dim, i64 n_index, i64 inner) {
    FOR_EACH_ELEMENT(e, outer * n_index * inner) {
        i64 row = e / inner, i = e - row * inner;
        i64 o = row / n_index, j = row - o * n_index;
        atomic_accumulate(out + (o * out_dim + index[j]) * inner + i, src[e]);
    }
}

// out[i] = a[offsets[i]]
template <typename T>
__global__ void __launch_bounds__(THREADS)
take_kernel(const T* __restrict__ a, const i64* __restrict__ offsets, T* __restrict__ out,
            i64 n) {
    FOR_EACH_ELEMENT(i, n) { out[i] = a[offsets[i]]; }
}

// out[offsets[i]] = src[i * src_step] (src_step 0 broadcasts one value), or += when accumulate;
// plain writes take a mode as in scatter_kernel, with one claim per element of out.
template <typename T>
__global__ void __launch_bounds__(THREADS)
put_kernel(const T* __restrict__ src, i64 src_step, const i64* __restrict__ offsets, T* out,
           i64 n, int accumulate, int mode, i64* claims) {
    FOR_EACH_ELEMENT(i, n) {
        i64 target = offsets[i];
        if (accumulate) {
            atomic_accumulate(out + target, src[i * src_step]);
        } else {
            claimed_store(mode, out, target, src[i * src_step], claims, target, i);
        }
    }
}
