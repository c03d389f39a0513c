// Reductions and scans over the middle axis of a compact (rows, n, inner) array.
//
// reduce_rows_kernel (inner == 1): one block per (row, part) task, threads stride along the row
// (coalesced), then a warp-shuffle tree and a tree across the warps. reduce_cols_kernel
// (inner > 1): a (x, y) block where x walks columns (coalesced) and y splits the reduced axis,
// then a tree across y. Either can cut n into `parts` chunks: pass 1 writes (rows, parts[, inner])
// partial values (and indices for ARGMAX/ARGMIN), pass 2 reduces those with `in_idx` set.
// Every combine is commutative and ties break on the index, so results do not depend on timing.
// SUM / PROD / MAX / MIN take the value-only vectorised kernels further down instead.
#include "common.cuh"

#define MAX_BLOCK 256

// A partial result: for ARGMAX/ARGMIN the index of the extreme too (-1: no element yet).
template <typename T> struct Partial {
    T v;
    i64 i;
};

template <typename T, int OP> __device__ __forceinline__ Partial<T> reduce_identity() {
    Partial<T> p;
    p.i = -1;
    if constexpr (OP == REDUCE_SUM) p.v = T(0);
    else if constexpr (OP == REDUCE_PROD) p.v = T(1);
    else if constexpr (OP == REDUCE_MAX) {
        if constexpr (is_float_type<T>::value) p.v = -pos_inf<T>();
        else if constexpr (same_type<T, i64>::value) p.v = (i64)(1ull << 63);
        else p.v = 0;
    } else if constexpr (OP == REDUCE_MIN) {
        if constexpr (is_float_type<T>::value) p.v = pos_inf<T>();
        else if constexpr (same_type<T, i64>::value) p.v = (i64)((1ull << 63) - 1);
        else p.v = 255;
    } else p.v = T(0);
    return p;
}

// For ARGMAX/ARGMIN: does candidate b beat a? NaN is the extreme (the first NaN wins); equal
// values go to the lower index, so the first occurrence wins whatever the combining order.
template <typename T, int OP>
__device__ __forceinline__ bool arg_beats(Partial<T> b, Partial<T> a) {
    if (a.i < 0) return true;
    if (b.i < 0) return false;
    bool a_nan = is_nan(a.v), b_nan = is_nan(b.v);
    if (a_nan || b_nan) return b_nan && (!a_nan || b.i < a.i);
    if (b.v == a.v) return b.i < a.i;
    return OP == REDUCE_ARGMAX ? b.v > a.v : b.v < a.v;
}

template <typename T, int OP>
__device__ __forceinline__ Partial<T> combine(Partial<T> a, Partial<T> b) {
    if constexpr (OP == REDUCE_ARGMAX || OP == REDUCE_ARGMIN) {
        return arg_beats<T, OP>(b, a) ? b : a;
    } else {
        Partial<T> r;
        r.i = 0;
        if constexpr (OP == REDUCE_SUM) {
            if constexpr (same_type<T, i64>::value) r.v = (i64)((u64)a.v + (u64)b.v);
            else r.v = a.v + b.v;
        } else if constexpr (OP == REDUCE_PROD) {
            if constexpr (same_type<T, i64>::value) r.v = (i64)((u64)a.v * (u64)b.v);
            else r.v = a.v * b.v;
        } else if constexpr (OP == REDUCE_MAX) {       // NaN propagates
            r.v = (b.v > a.v) | (b.v != b.v) ? b.v : a.v;
        } else {
            r.v = (b.v < a.v) | (b.v != b.v) ? b.v : a.v;
        }
        return r;
    }
}

template <typename T, int OP>
__device__ __forceinline__ Partial<T> warp_reduce(Partial<T> p) {
#pragma unroll
    for (int delta = 16; delta > 0; delta >>= 1) {
        Partial<T> other;
        other.v = shfl_down(p.v, delta);
        other.i = shfl_down(p.i, delta);
        p = combine<T, OP>(p, other);
    }
    return p;
}

// The block's combined partial, valid in thread 0 (blockDim.x a multiple of 32, <= MAX_BLOCK).
template <typename T, int OP>
__device__ __forceinline__ Partial<T> block_reduce(Partial<T> p) {
    __shared__ T warp_v[MAX_BLOCK / 32];
    __shared__ i64 warp_i[MAX_BLOCK / 32];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    p = warp_reduce<T, OP>(p);
    if (warps == 1) return p;
    if (lane == 0) {
        warp_v[warp] = p.v;
        warp_i[warp] = p.i;
    }
    __syncthreads();
    if (warp == 0) {
        p = reduce_identity<T, OP>();
        if (lane < warps) {
            p.v = warp_v[lane];
            p.i = warp_i[lane];
        }
        p = warp_reduce<T, OP>(p);
    }
    __syncthreads();    // the shared slots are reused by the block's next task
    return p;
}

template <typename T> __device__ __forceinline__ void store_partial(Partial<T> p, T* out_v,
                                                                   i64* out_i, i64 at) {
    if (out_v) out_v[at] = p.v;
    if (out_i) out_i[at] = p.i;
}

template <typename T, int OP>
__device__ void reduce_rows(const T* __restrict__ a, const i64* __restrict__ in_idx, T* out_v,
                            i64* out_i, i64 rows, i64 n, i64 parts, i64 chunk) {
    for (i64 task = blockIdx.x; task < rows * parts; task += gridDim.x) {
        i64 r = task / parts, start = (task - r * parts) * chunk;
        i64 end = min(n, start + chunk);
        Partial<T> acc = reduce_identity<T, OP>();
        for (i64 j = start + threadIdx.x; j < end; j += blockDim.x) {
            Partial<T> x;
            x.v = a[r * n + j];
            x.i = in_idx ? in_idx[r * n + j] : j;
            acc = combine<T, OP>(acc, x);
        }
        acc = block_reduce<T, OP>(acc);
        if (threadIdx.x == 0) store_partial(acc, out_v, out_i, task);
    }
}

#define REDUCE_CASE(OP, CALL) case OP: CALL<T, OP>(a, in_idx, out_v, out_i, ARGS); break;
#define REDUCE_SWITCH(CALL)                                                                 \
    switch (op) {                                                                           \
        REDUCE_CASE(REDUCE_SUM, CALL) REDUCE_CASE(REDUCE_PROD, CALL)                        \
        REDUCE_CASE(REDUCE_MAX, CALL) REDUCE_CASE(REDUCE_MIN, CALL)                         \
        REDUCE_CASE(REDUCE_ARGMAX, CALL) REDUCE_CASE(REDUCE_ARGMIN, CALL)                   \
        default: break;                                                                     \
    }

// out[task] for task = row * parts + part; out_v and/or out_i may be null (a final ARGMAX
// writes only indices, a final SUM only values).
template <typename T>
__global__ void __launch_bounds__(MAX_BLOCK)
reduce_rows_kernel(int op, const T* __restrict__ a, const i64* __restrict__ in_idx, T* out_v,
                   i64* out_i, i64 rows, i64 n, i64 parts, i64 chunk) {
#define ARGS rows, n, parts, chunk
    REDUCE_SWITCH(reduce_rows)
#undef ARGS
}

template <typename T, int OP>
__device__ void reduce_cols(const T* __restrict__ a, const i64* __restrict__ in_idx, T* out_v,
                            i64* out_i, i64 rows, i64 n, i64 inner, i64 parts, i64 chunk) {
    __shared__ T tile_v[MAX_BLOCK];
    __shared__ i64 tile_i[MAX_BLOCK];
    const int tx = threadIdx.x, ty = threadIdx.y, bx = blockDim.x, by = blockDim.y;
    const int slot = ty * bx + tx;
    const i64 col_blocks = (inner + bx - 1) / bx;
    for (i64 task = blockIdx.x; task < rows * parts * col_blocks; task += gridDim.x) {
        i64 rp = task / col_blocks, col = (task - rp * col_blocks) * bx + tx;
        i64 r = rp / parts, start = (rp - r * parts) * chunk;
        i64 end = min(n, start + chunk);
        Partial<T> acc = reduce_identity<T, OP>();
        if (col < inner) {
            for (i64 j = start + ty; j < end; j += by) {
                i64 at = (r * n + j) * inner + col;
                Partial<T> x;
                x.v = a[at];
                x.i = in_idx ? in_idx[at] : j;
                acc = combine<T, OP>(acc, x);
            }
        }
        tile_v[slot] = acc.v;
        tile_i[slot] = acc.i;
        __syncthreads();
        for (int half = by >> 1; half > 0; half >>= 1) {    // tree across y, fixed order
            if (ty < half) {
                Partial<T> mine, other;
                mine.v = tile_v[slot];
                mine.i = tile_i[slot];
                other.v = tile_v[slot + half * bx];
                other.i = tile_i[slot + half * bx];
                mine = combine<T, OP>(mine, other);
                tile_v[slot] = mine.v;
                tile_i[slot] = mine.i;
            }
            __syncthreads();
        }
        if (ty == 0 && col < inner) {
            Partial<T> p;
            p.v = tile_v[tx];
            p.i = tile_i[tx];
            store_partial(p, out_v, out_i, rp * inner + col);
        }
        __syncthreads();
    }
}

// out[(row * parts + part) * inner + col]; blockDim = (x, y) with x * y = MAX_BLOCK, y a power
// of two.
template <typename T>
__global__ void __launch_bounds__(MAX_BLOCK)
reduce_cols_kernel(int op, const T* __restrict__ a, const i64* __restrict__ in_idx, T* out_v,
                   i64* out_i, i64 rows, i64 n, i64 inner, i64 parts, i64 chunk) {
#define ARGS rows, n, inner, parts, chunk
    REDUCE_SWITCH(reduce_cols)
#undef ARGS
}

// ---------------------------------------------------------------------------------------------
// Value-only fast paths for SUM, PROD, MAX and MIN (ARGMAX / ARGMIN keep the kernels above): no
// index travels with the values, loads are 16-byte vectors (Pack) wherever the host found the
// rows aligned (`vec`), and every thread keeps UNROLL loads in flight, which is what a
// bandwidth-bound reduction needs to saturate HBM. Combining orders are fixed, so the results
// are deterministic (the same bits on every run).
// - reduce_rows_vec_kernel (inner == 1, long rows): a block per (row, part) task. A full
//   reduction is rows = 1 cut into about four parts per multiprocessor, each block reducing its
//   part with a grid-stride-free contiguous loop, then a warp-shuffle and a cross-warp tree;
//   the host reduces the parts' partials with a second, small launch (two launches, no atomics).
// - reduce_rows_group_kernel (inner == 1, n <= 1024): `group` lanes (a power of two <= 32) per
//   row and blockDim / group rows per block, so short rows do not leave most of a block idle.
// - reduce_cols_vec_kernel (inner > 1): x walks columns (a vector of them per thread, so a
//   warp reads 512 contiguous bytes of a row), y splits the reduced axis, then a tree across y.

#define UNROLL 4

template <typename T> struct __align__(16) Pack {
    T v[16 / sizeof(T)];
};

template <typename T, int OP> __device__ __forceinline__ T value_identity() {
    return reduce_identity<T, OP>().v;
}

template <typename T, int OP> __device__ __forceinline__ T value_combine(T a, T b) {
    Partial<T> x, y;
    x.v = a;
    x.i = 0;
    y.v = b;
    y.i = 0;
    return combine<T, OP>(x, y).v;
}

// Lane 0 of each aligned group of `width` lanes gets its group's combination.
template <typename T, int OP> __device__ __forceinline__ T warp_reduce_values(T v, int width) {
    for (int delta = width >> 1; delta > 0; delta >>= 1)
        v = value_combine<T, OP>(v, shfl_down(v, delta));
    return v;
}

// The block's combination, valid in thread 0 (blockDim.x a multiple of 32, <= MAX_BLOCK).
template <typename T, int OP> __device__ __forceinline__ T block_reduce_values(T v) {
    __shared__ T warp_values[MAX_BLOCK / 32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    v = warp_reduce_values<T, OP>(v, 32);
    if (warps == 1) return v;
    if (lane == 0) warp_values[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < warps ? warp_values[lane] : value_identity<T, OP>();
        v = warp_reduce_values<T, OP>(v, 32);
    }
    __syncthreads();    // the shared slots are reused by the block's next task
    return v;
}

// Thread t of `threads` combines its share of p[0, len): vectors t, t + threads, ... (when
// `vec`: p is 16-byte aligned), UNROLL of them loaded before any is combined, into UNROLL
// independent accumulators; the scalar loop takes the rest (or everything without `vec`).
template <typename T, int OP>
__device__ __forceinline__ T thread_partial(const T* __restrict__ p, i64 len, int t, int threads,
                                            int vec) {
    constexpr int V = 16 / sizeof(T);
    T acc[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) acc[u] = value_identity<T, OP>();
    i64 done = 0;
    if (vec) {
        const Pack<T>* q = reinterpret_cast<const Pack<T>*>(p);
        const i64 nv = len / V;
        for (i64 i = t; i < nv; i += (i64)threads * UNROLL) {
            Pack<T> x[UNROLL];
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) {
                if (i + (i64)u * threads < nv) {
                    x[u] = q[i + (i64)u * threads];
                } else {
#pragma unroll
                    for (int e = 0; e < V; ++e) x[u].v[e] = value_identity<T, OP>();
                }
            }
#pragma unroll
            for (int u = 0; u < UNROLL; ++u)
#pragma unroll
                for (int e = 0; e < V; ++e) acc[u] = value_combine<T, OP>(acc[u], x[u].v[e]);
        }
        done = nv * V;
    }
    for (i64 j = done + t; j < len; j += (i64)threads * UNROLL) {
        T x[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const i64 at = j + (i64)u * threads;
            x[u] = at < len ? p[at] : value_identity<T, OP>();
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) acc[u] = value_combine<T, OP>(acc[u], x[u]);
    }
#pragma unroll
    for (int u = 1; u < UNROLL; ++u) acc[0] = value_combine<T, OP>(acc[0], acc[u]);
    return acc[0];
}

template <typename T, int OP>
__device__ void reduce_rows_vec(const T* __restrict__ a, T* __restrict__ out, i64 rows, i64 n,
                                i64 parts, i64 chunk, int vec) {
    for (i64 task = blockIdx.x; task < rows * parts; task += gridDim.x) {
        const i64 r = task / parts, start = (task - r * parts) * chunk;
        const i64 end = min(n, start + chunk);
        T v = thread_partial<T, OP>(a + r * n + start, end - start, threadIdx.x, blockDim.x,
                                    vec);
        v = block_reduce_values<T, OP>(v);
        if (threadIdx.x == 0) out[task] = v;
    }
}

template <typename T, int OP>
__device__ void reduce_rows_group(const T* __restrict__ a, T* __restrict__ out, i64 rows, i64 n,
                                  int group, int vec) {
    const int per_block = blockDim.x / group, lane = threadIdx.x % group;
    for (i64 base = (i64)blockIdx.x * per_block; base < rows;
         base += (i64)gridDim.x * per_block) {       // the same trip count in every thread
        const i64 r = base + threadIdx.x / group;
        T v = value_identity<T, OP>();
        if (r < rows) v = thread_partial<T, OP>(a + r * n, n, lane, group, vec);
        v = warp_reduce_values<T, OP>(v, group);
        if (lane == 0 && r < rows) out[r] = v;
    }
}

template <typename T, int OP>
__device__ void reduce_cols_vec(const T* __restrict__ a, T* __restrict__ out, i64 rows, i64 n,
                                i64 inner, i64 parts, i64 chunk, int vec) {
    constexpr int V = 16 / sizeof(T);
    __shared__ __align__(16) T tile[MAX_BLOCK * V];
    const int tx = threadIdx.x, ty = threadIdx.y, bx = blockDim.x, by = blockDim.y;
    const int width = vec ? V : 1, slot = (ty * bx + tx) * V;
    const i64 span = (i64)bx * width, col_blocks = (inner + span - 1) / span;
    for (i64 task = blockIdx.x; task < rows * parts * col_blocks; task += gridDim.x) {
        const i64 rp = task / col_blocks, col = (task - rp * col_blocks) * span + tx * width;
        const i64 r = rp / parts, start = (rp - r * parts) * chunk;
        const i64 end = min(n, start + chunk);
        T acc[V];
#pragma unroll
        for (int e = 0; e < V; ++e) acc[e] = value_identity<T, OP>();
        if (col < inner) {
            const T* p = a + r * n * inner + col;
            for (i64 j = start + ty; j < end; j += (i64)by * UNROLL) {
                if (vec) {
                    Pack<T> x[UNROLL];
#pragma unroll
                    for (int u = 0; u < UNROLL; ++u) {
                        const i64 at = j + (i64)u * by;
                        if (at < end) {
                            x[u] = *reinterpret_cast<const Pack<T>*>(p + at * inner);
                        } else {
#pragma unroll
                            for (int e = 0; e < V; ++e) x[u].v[e] = value_identity<T, OP>();
                        }
                    }
#pragma unroll
                    for (int u = 0; u < UNROLL; ++u)
#pragma unroll
                        for (int e = 0; e < V; ++e)
                            acc[e] = value_combine<T, OP>(acc[e], x[u].v[e]);
                } else {
                    T x[UNROLL];
#pragma unroll
                    for (int u = 0; u < UNROLL; ++u) {
                        const i64 at = j + (i64)u * by;
                        x[u] = at < end ? p[at * inner] : value_identity<T, OP>();
                    }
#pragma unroll
                    for (int u = 0; u < UNROLL; ++u) acc[0] = value_combine<T, OP>(acc[0], x[u]);
                }
            }
        }
#pragma unroll
        for (int e = 0; e < V; ++e) tile[slot + e] = acc[e];
        __syncthreads();
        for (int half = by >> 1; half > 0; half >>= 1) {    // tree across y, fixed order
            if (ty < half) {
                for (int e = 0; e < width; ++e)
                    tile[slot + e] = value_combine<T, OP>(tile[slot + e],
                                                          tile[slot + half * bx * V + e]);
            }
            __syncthreads();
        }
        if (ty == 0 && col < inner) {
            for (int e = 0; e < width; ++e) out[rp * inner + col + e] = tile[tx * V + e];
        }
        __syncthreads();
    }
}

#define VALUE_CASE(OP, CALL) case OP: CALL<T, OP>(a, out, ARGS); break;
#define VALUE_SWITCH(CALL)                                                                  \
    switch (op) {                                                                           \
        VALUE_CASE(REDUCE_SUM, CALL) VALUE_CASE(REDUCE_PROD, CALL)                          \
        VALUE_CASE(REDUCE_MAX, CALL) VALUE_CASE(REDUCE_MIN, CALL)                           \
        default: break;                                                                     \
    }

// out[row * parts + part]; blockDim.x a multiple of 32
template <typename T>
__global__ void __launch_bounds__(MAX_BLOCK)
reduce_rows_vec_kernel(int op, const T* __restrict__ a, T* __restrict__ out, i64 rows, i64 n,
                       i64 parts, i64 chunk, int vec) {
#define ARGS rows, n, parts, chunk, vec
    VALUE_SWITCH(reduce_rows_vec)
#undef ARGS
}

// out[row]; blockDim.x a multiple of 32, group a power of two <= 32
template <typename T>
__global__ void __launch_bounds__(MAX_BLOCK)
reduce_rows_group_kernel(int op, const T* __restrict__ a, T* __restrict__ out, i64 rows, i64 n,
                         int group, int vec) {
#define ARGS rows, n, group, vec
    VALUE_SWITCH(reduce_rows_group)
#undef ARGS
}

// out[(row * parts + part) * inner + col]; blockDim = (x, y), x * y <= MAX_BLOCK, y a power of
// two; with `vec` (inner a multiple of the vector width, a aligned) a thread owns a vector of
// columns
template <typename T>
__global__ void __launch_bounds__(MAX_BLOCK)
reduce_cols_vec_kernel(int op, const T* __restrict__ a, T* __restrict__ out, i64 rows, i64 n,
                       i64 inner, i64 parts, i64 chunk, int vec) {
#define ARGS rows, n, inner, parts, chunk, vec
    VALUE_SWITCH(reduce_cols_vec)
#undef ARGS
}

// ---------------------------------------------------------------------------------------------
// scans (inclusive), each a policy S over a State: how an element loads, how two states combine
// (the earlier one first), how a state moves across lanes and how it is stored.
// ValueScan: SUM = cumsum, PROD = cumprod (integers wrap). IndexScan: MAX = cummax, MIN = cummin,
// a (value, position) Partial that a later element takes over on ties, and a NaN always, as in
// torch. That rule is the maximum under one total order (NaN above every number, then value,
// then position), so it is associative and the block scan below applies to it as well.

template <typename T, int OP> struct ValueScan {
    typedef T State;
    static __device__ __forceinline__ State identity() { return OP == REDUCE_SUM ? T(0) : T(1); }
    static __device__ __forceinline__ State load(const T* a, i64 at, i64) { return a[at]; }
    static __device__ __forceinline__ State combine(State a, State b) {
        if constexpr (same_type<T, i64>::value) {
            return OP == REDUCE_SUM ? (i64)((u64)a + (u64)b) : (i64)((u64)a * (u64)b);
        } else {
            return OP == REDUCE_SUM ? a + b : a * b;
        }
    }
    static __device__ __forceinline__ State shfl_up_state(State s, int delta) {
        return shfl_up(s, delta);
    }
    static __device__ __forceinline__ void store(T* values, i64*, i64 at, State s) {
        values[at] = s;
    }
};

template <typename T, int OP> struct IndexScan {
    typedef Partial<T> State;
    static __device__ __forceinline__ State identity() {
        State s;
        s.v = T(0);
        s.i = -1;       // no element yet: loses to everything
        return s;
    }
    static __device__ __forceinline__ State load(const T* a, i64 at, i64 j) {
        State s;
        s.v = a[at];
        s.i = j;
        return s;
    }
    static __device__ __forceinline__ State combine(State a, State b) {
        if (b.i < 0) return a;
        if (a.i < 0) return b;
        bool takes_over;
        if (is_nan(b.v)) takes_over = true;
        else if (is_nan(a.v)) takes_over = false;
        else takes_over = OP == REDUCE_MAX ? b.v >= a.v : b.v <= a.v;
        return takes_over ? b : a;
    }
    static __device__ __forceinline__ State shfl_up_state(State s, int delta) {
        s.v = shfl_up(s.v, delta);
        s.i = shfl_up(s.i, delta);
        return s;
    }
    static __device__ __forceinline__ void store(T* values, i64* indices, i64 at, State s) {
        values[at] = s.v;
        indices[at] = s.i;
    }
};

// inner == 1: one block per row (grid-strided over rows) walks the row in tiles of blockDim
// elements: a shuffle scan inside each warp, the warp totals scanned by warp 0, and the running
// total of the earlier tiles carried in.
template <typename S, typename T>
__device__ void scan_rows(const T* __restrict__ a, T* __restrict__ values,
                          i64* __restrict__ indices, i64 rows, i64 n) {
    typedef typename S::State State;
    __shared__ State warp_total[MAX_BLOCK / 32];
    __shared__ State carry_in;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
        if (threadIdx.x == 0) carry_in = S::identity();
        __syncthreads();
        for (i64 base = 0; base < n; base += blockDim.x) {
            i64 j = base + threadIdx.x;
            State v = j < n ? S::load(a, r * n + j, j) : S::identity();
#pragma unroll
            for (int delta = 1; delta < 32; delta <<= 1) {
                State up = S::shfl_up_state(v, delta);
                if (lane >= delta) v = S::combine(up, v);
            }
            if (lane == 31) warp_total[warp] = v;
            __syncthreads();
            if (warp == 0) {
                State w = lane < warps ? warp_total[lane] : S::identity();
#pragma unroll
                for (int delta = 1; delta < 32; delta <<= 1) {
                    State up = S::shfl_up_state(w, delta);
                    if (lane >= delta) w = S::combine(up, w);
                }
                if (lane < warps) warp_total[lane] = w;     // inclusive over warps
            }
            __syncthreads();
            State prefix = carry_in;
            if (warp > 0) prefix = S::combine(prefix, warp_total[warp - 1]);
            v = S::combine(prefix, v);
            if (j < n) S::store(values, indices, r * n + j, v);
            __syncthreads();                                // everyone has read carry_in
            if (threadIdx.x == blockDim.x - 1) carry_in = v;
            __syncthreads();
        }
    }
}

template <typename T>
__global__ void __launch_bounds__(MAX_BLOCK)
scan_rows_kernel(int op, const T* __restrict__ a, T* __restrict__ out, i64 rows, i64 n) {
    if (op == REDUCE_SUM) scan_rows<ValueScan<T, REDUCE_SUM>>(a, out, nullptr, rows, n);
    else scan_rows<ValueScan<T, REDUCE_PROD>>(a, out, nullptr, rows, n);
}

template <typename T>
__global__ void __launch_bounds__(MAX_BLOCK)
scan_index_rows_kernel(int op, const T* __restrict__ a, T* __restrict__ values,
                       i64* __restrict__ indices, i64 rows, i64 n) {
    if (op == REDUCE_MAX) scan_rows<IndexScan<T, REDUCE_MAX>>(a, values, indices, rows, n);
    else scan_rows<IndexScan<T, REDUCE_MIN>>(a, values, indices, rows, n);
}

// inner > 1: one thread per (row, column) runs down its column in order (coalesced across
// columns), so results equal the CPU's sequential scan exactly.
template <typename S, typename T>
__device__ void scan_cols(const T* __restrict__ a, T* __restrict__ values,
                          i64* __restrict__ indices, i64 rows, i64 n, i64 inner) {
    FOR_EACH_ELEMENT(t, rows * inner) {
        i64 r = t / inner, c = t - r * inner;
        i64 at = r * n * inner + c;
        typename S::State acc = S::load(a, at, 0);
        S::store(values, indices, at, acc);
        for (i64 j = 1; j < n; ++j) {
            at += inner;
            acc = S::combine(acc, S::load(a, at, j));
            S::store(values, indices, at, acc);
        }
    }
}

template <typename T>
__global__ void __launch_bounds__(THREADS)
scan_cols_kernel(int op, const T* __restrict__ a, T* __restrict__ out, i64 rows, i64 n,
                 i64 inner) {
    if (op == REDUCE_SUM) scan_cols<ValueScan<T, REDUCE_SUM>>(a, out, nullptr, rows, n, inner);
    else scan_cols<ValueScan<T, REDUCE_PROD>>(a, out, nullptr, rows, n, inner);
}

template <typename T>
__global__ void __launch_bounds__(THREADS)
scan_index_cols_kernel(int op, const T* __restrict__ a, T* __restrict__ values,
                       i64* __restrict__ indices, i64 rows, i64 n, i64 inner) {
    if (op == REDUCE_MAX) {
        scan_cols<IndexScan<T, REDUCE_MAX>>(a, values, indices, rows, n, inner);
    } else {
        scan_cols<IndexScan<T, REDUCE_MIN>>(a, values, indices, rows, n, inner);
    }
}
