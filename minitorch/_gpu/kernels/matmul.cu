// Batched strided GEMM: C (compact batch x M x N) = A (batch x M x K) @ B (batch x K x N), each
// operand read through its own (batch, row, col) element strides, so transposed operands and
// broadcast batches (stride 0) cost no copy. The batch may be two axes (outer, inner): item b
// starts at (b / inner)·outer stride + (b % inner)·batch stride (batch_item), so attention's
// (batch, head) views of one array are read in place too; one axis is inner = batch.
//
// A block computes a BM x BN tile of C with THREADS = (BM/TM) * (BN/TN) threads, each owning a
// TM x TN register microtile (outer products over BK-deep slices). Slices of A and B go through
// shared memory, k-major (As[k][m], Bs[k][n]) and double buffered: the next slice is fetched
// into registers while the current one is multiplied, so one barrier per slice suffices. The
// global loads are scalar and bounds-checked (zero padding handles every remainder); each
// operand's load mapping walks whichever of its two axes has the smaller stride, so a warp's
// loads are coalesced for row-major and transposed operands alike. Rows of shared tiles are
// padded by 4 elements: with a k-fastest load mapping the stores then hit distinct banks.
// A thread's microtile is split into TM/4 x TN/4 groups of 4 x 4 spread BM/(TM/4) apart, so the
// fragment reads are 4-wide vector loads that a warp serves without bank conflicts.
#include "common.cuh"

__device__ __forceinline__ float madd(float a, float b, float c) { return fmaf(a, b, c); }
__device__ __forceinline__ double madd(double a, double b, double c) { return fma(a, b, c); }

template <typename T> struct Vec4;
template <> struct Vec4<float> {
    static __device__ __forceinline__ void load(const float* p, float* r) {
        float4 v = *reinterpret_cast<const float4*>(p);
        r[0] = v.x; r[1] = v.y; r[2] = v.z; r[3] = v.w;
    }
};
template <> struct Vec4<double> {
    static __device__ __forceinline__ void load(const double* p, double* r) {
        double2 u = *reinterpret_cast<const double2*>(p);
        double2 v = *reinterpret_cast<const double2*>(p + 2);
        r[0] = u.x; r[1] = u.y; r[2] = v.x; r[3] = v.y;
    }
};

// Per-thread view of one operand's tile loads: LOADS elements per slice, slot l at tile position
// (x + l*dx, k + l*dk), where x is the row of A or the column of B. The mapping keeps either x
// or k fixed per thread, so one pointer and one step describe every slot (few registers).
template <typename T, int TILE_X, int BK, int NT, int LOADS>
struct TileLoader {
    const T* ptr;            // slot 0 at k0 = 0
    i64 step, k_stride, x_left;
    int x, k, dx, dk;

    __device__ __forceinline__ void init(const T* base, i64 x0, i64 x_count, i64 x_stride,
                                         i64 k_stride_, int tid) {
        static_assert(NT % BK == 0 && NT % TILE_X == 0, "slots must advance along one axis");
        const i64 ak = k_stride_ < 0 ? -k_stride_ : k_stride_;
        const i64 ax = x_stride < 0 ? -x_stride : x_stride;
        k_stride = k_stride_;
        if (ak <= ax) {          // consecutive threads walk k
            x = tid / BK; k = tid % BK; dx = NT / BK; dk = 0;
        } else {                 // consecutive threads walk x
            x = tid % TILE_X; k = tid / TILE_X; dx = 0; dk = NT / TILE_X;
        }
        ptr = base + (x0 + x) * x_stride + k * k_stride;
        step = dx * x_stride + dk * k_stride;
        x_left = x_count - x0 - x;
    }

    __device__ __forceinline__ void fetch(i64 k0, i64 K, T (&regs)[LOADS]) const {
#pragma unroll
        for (int l = 0; l < LOADS; ++l) {
            bool ok = l * dx < x_left && k0 + k + l * dk < K;
            regs[l] = ok ? ptr[l * step + k0 * k_stride] : T(0);
        }
    }

    __device__ __forceinline__ void store(const T (&regs)[LOADS], T (*tile)[TILE_X + 4]) const {
#pragma unroll
        for (int l = 0; l < LOADS; ++l) tile[k + l * dk][x + l * dx] = regs[l];
    }
};

__device__ __forceinline__ i64 batch_item(i64 b, i64 inner, i64 outer_stride, i64 stride) {
    return (b / inner) * outer_stride + (b % inner) * stride;
}

// The epilogue both kernels apply to each finished element of C: + bias[row·bias_rs +
// col·bias_cs] when bias is given (a Linear layer's bias: rs 0, cs 1; a conv's: rs 1, cs 0),
// then relu when asked: the float operations of the separate bias add and relu kernels (relu:
// x < 0 ? 0 : x, NaN passes), so the same bits without their two launches.
template <typename T>
__device__ __forceinline__ T epilogue(T v, const T* bias, i64 row, i64 col, i64 bias_rs,
                                      i64 bias_cs, int relu) {
    if (bias) v = v + bias[row * bias_rs + col * bias_cs];
    return relu && v < T(0) ? T(0) : v;
}

template <typename T, int BM, int BN, int BK, int TM, int TN>
__global__ void __launch_bounds__((BM / TM) * (BN / TN), sizeof(T) == 4 ? 2 : 1)
matmul_kernel(const T* __restrict__ A, i64 a_off, i64 a_outer, i64 as0, i64 as1, i64 as2,
              const T* __restrict__ B, i64 b_off, i64 b_outer, i64 bs0, i64 bs1, i64 bs2,
              T* __restrict__ C, i64 inner, i64 batch, i64 M, i64 N, i64 K,
              const T* __restrict__ bias, i64 bias_off, i64 bias_rs, i64 bias_cs, int relu) {
    constexpr int TX = BN / TN, TY = BM / TM, NT = TX * TY;
    constexpr int A_LOADS = BM * BK / NT, B_LOADS = BN * BK / NT;
    constexpr int GM = TM / 4, GN = TN / 4;             // 4 x 4 groups per microtile
    static_assert(TM % 4 == 0 && TN % 4 == 0, "microtiles are made of 4 x 4 groups");
    static_assert(A_LOADS * NT == BM * BK && B_LOADS * NT == BN * BK, "loads must tile evenly");

    __shared__ __align__(16) T As[2][BK][BM + 4];
    __shared__ __align__(16) T Bs[2][BK][BN + 4];

    const int tid = threadIdx.x, tx = tid % TX, ty = tid / TX;
    const i64 m_tiles = (M + BM - 1) / BM, n_tiles = (N + BN - 1) / BN;
    const i64 k_tiles = (K + BK - 1) / BK;

    for (i64 tile = blockIdx.x; tile < batch * m_tiles * n_tiles; tile += gridDim.x) {
        const i64 b = tile / (m_tiles * n_tiles);
        const i64 rest = tile - b * m_tiles * n_tiles;
        const i64 m0 = (rest % m_tiles) * BM, n0 = (rest / m_tiles) * BN;

        TileLoader<T, BM, BK, NT, A_LOADS> la;
        TileLoader<T, BN, BK, NT, B_LOADS> lb;
        la.init(A + a_off + batch_item(b, inner, a_outer, as0), m0, M, as1, as2, tid);
        lb.init(B + b_off + batch_item(b, inner, b_outer, bs0), n0, N, bs2, bs1, tid);
        T ra[A_LOADS], rb[B_LOADS];

        T acc[TM][TN];
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
            for (int j = 0; j < TN; ++j) acc[i][j] = T(0);

        la.fetch(0, K, ra);
        lb.fetch(0, K, rb);
        la.store(ra, As[0]);
        lb.store(rb, Bs[0]);
        __syncthreads();

        for (i64 kt = 0; kt < k_tiles; ++kt) {
            const int cur = kt & 1;
            const bool more = kt + 1 < k_tiles;
            if (more) {
                la.fetch((kt + 1) * BK, K, ra);
                lb.fetch((kt + 1) * BK, K, rb);
            }
#pragma unroll
            for (int kk = 0; kk < BK; ++kk) {
                T af[TM], bf[TN];
#pragma unroll
                for (int g = 0; g < GM; ++g)
                    Vec4<T>::load(&As[cur][kk][g * (BM / GM) + ty * 4], af + 4 * g);
#pragma unroll
                for (int g = 0; g < GN; ++g)
                    Vec4<T>::load(&Bs[cur][kk][g * (BN / GN) + tx * 4], bf + 4 * g);
#pragma unroll
                for (int i = 0; i < TM; ++i)
#pragma unroll
                    for (int j = 0; j < TN; ++j) acc[i][j] = madd(af[i], bf[j], acc[i][j]);
            }
            if (more) {
                la.store(ra, As[cur ^ 1]);
                lb.store(rb, Bs[cur ^ 1]);
            }
            __syncthreads();
        }

        T* c = C + b * M * N;
        const T* bb = bias ? bias + bias_off : nullptr;
#pragma unroll
        for (int i = 0; i < TM; ++i) {
            const i64 row = m0 + (i / 4) * (BM / GM) + ty * 4 + (i % 4);
            if (row >= M) continue;
#pragma unroll
            for (int j = 0; j < TN; ++j) {
                const i64 col = n0 + (j / 4) * (BN / GN) + tx * 4 + (j % 4);
                if (col < N)
                    c[row * N + col] = epilogue(acc[i][j], bb, row, col, bias_rs, bias_cs, relu);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// sgemm_kernel: the float32 fast path, for operands whose contiguous axis (k, or A's m / B's n)
// can be read as aligned float4 (the host checks strides, sizes, offsets and pointers; anything
// else runs matmul_kernel above). The design of the fastest hand-written SGEMMs (warp tiling as
// in CUTLASS and siboehm's "warptiling" kernel):
// - a BM x BN block tile, BK-deep slices of A and B staged in shared memory as [k][m] / [k][n]
//   (A transposed on the way in when its k axis is the contiguous one), double buffered, the
//   next slice fetched into registers with float4 loads while the current one is multiplied;
// - each warp owns a WM x WN piece of the block tile and each thread a TM x TN register tile,
//   made of (TM/4) x (TN/4) groups of 4 x 4 spaced a warp's width apart, so every fragment read
//   is a 16-byte shared load that the warp serves in one pass (broadcasts, distinct chunks);
// - shared rows are XOR-swizzled in 16-byte chunks by k (swizzle() below), so the transposing
//   scalar stores of a k-contiguous operand hit 32 distinct banks while fragment reads stay
//   float4-contiguous (a padded row would break the 16-byte alignment of the reads);
// - a 3-D grid (n tiles fastest, so neighbouring blocks share A's row panel in L2; m tiles;
//   batch) and 32-bit tile coordinates; only base offsets are 64-bit.
// Edges: rows / columns past M / N and k past K load zeros (whole float4s: the host requires
// the contiguous extent to be a multiple of 4), and the epilogue stores only inside C.

// Column of element x of shared row k: chunks of 4 floats XOR'ed with (k / 4) * (32 / BK) mod 8.
// A warp's transposing store covers BK / 4 groups of 4 k for 128 / BK consecutive x (32 / BK
// chunks); the XOR moves each group to its own chunks, so the 32 lanes hit 32 distinct banks.
template <int BK> __device__ __forceinline__ int swizzle(int x, int k) {
    return x ^ ((((k >> 2) * (32 / BK)) & 7) << 2);
}

// One operand's slice loads: X is the tile's width along m (A) or n (B). K_CONTIG: the operand's
// k axis is contiguous (a thread reads 4 consecutive k of one x, stored transposed); otherwise
// x is contiguous (a thread reads 4 consecutive x of one k, stored as one float4).
template <int X, int BK, int NT, bool K_CONTIG>
struct SliceLoader {
    static constexpr int LOADS = X * BK / 4 / NT;
    static constexpr int PER_LINE = K_CONTIG ? BK / 4 : X / 4;   // threads per x (or k) line
    static constexpr int LINES = NT / PER_LINE;                    // lines per pass
    static_assert(LOADS * NT * 4 == X * BK && NT % PER_LINE == 0, "loads must tile evenly");
    static_assert(K_CONTIG || BK % LINES == 0, "a slice is whole passes of k lines");
    // Few registers (the 128 x 128 tile has none to spare): the pointer moves by one slice per
    // fetch, and the unit stride of the contiguous axis is implied.
    // The swizzle of a thread's slots is the same for all of them (asserted below), so one
    // shared offset locates every store.
    static_assert(K_CONTIG ? LINES % 32 == 0 : (LINES * 8 / BK) % 8 == 0, "one swizzle per thread");
    const float* ptr;       // slot 0 of the next slice to fetch
    i64 slot_step;          // between slots (LINES rows of x, or LINES rows of k)
    int x_left, k_left, sts;

    __device__ __forceinline__ void init(const float* base, i64 x0, i64 x_count, i64 x_stride,
                                         i64 k_stride, i64 K, int tid) {
        int x, k;
        if (K_CONTIG) {
            x = tid / PER_LINE;
            k = (tid % PER_LINE) * 4;
            slot_step = LINES * x_stride;
        } else {
            k = tid / PER_LINE;
            x = (tid % PER_LINE) * 4;
            slot_step = LINES * k_stride;
        }
        sts = k * X + swizzle<BK>(x, k);
        ptr = base + (x0 + x) * x_stride + k * k_stride;
        x_left = (int)min(x_count - x0 - x, (i64)X + 1);   // <= 0: no valid slot
        k_left = (int)min(K - k, (i64)1 << 30);            // k still inside K, from the next slice
    }

    // The next slice (zeros outside the operand); then step to the one after.
    __device__ __forceinline__ void fetch(float4 (&regs)[LOADS]) {
#pragma unroll
        for (int l = 0; l < LOADS; ++l) {
            const bool ok = K_CONTIG ? (l * LINES < x_left && 0 < k_left)
                                     : (0 < x_left && l * LINES < k_left);
            regs[l] = ok ? *reinterpret_cast<const float4*>(ptr + l * slot_step)
                         : float4{0.f, 0.f, 0.f, 0.f};
        }
        ptr += K_CONTIG ? (i64)BK : slot_step * (BK / LINES);
        k_left -= BK;
    }

    __device__ __forceinline__ void store(const float4 (&regs)[LOADS], float (*tile)[X]) const {
        float* t = &tile[0][0] + sts;
#pragma unroll
        for (int l = 0; l < LOADS; ++l) {
            if (K_CONTIG) {     // x + l * LINES, k + j: same swizzle, so plain offsets
                t[l * LINES] = regs[l].x;
                t[l * LINES + X] = regs[l].y;
                t[l * LINES + 2 * X] = regs[l].z;
                t[l * LINES + 3 * X] = regs[l].w;
            } else {
                *reinterpret_cast<float4*>(t + l * LINES * X) = regs[l];
            }
        }
    }
};

template <int BM, int BN, int BK, int WM, int WN, int TM, int TN, bool A_K, bool B_K>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32, 2)
sgemm_kernel(const float* __restrict__ A, i64 a_off, i64 a_outer, i64 as0, i64 as1, i64 as2,
             const float* __restrict__ B, i64 b_off, i64 b_outer, i64 bs0, i64 bs1, i64 bs2,
             float* __restrict__ C, i64 inner, i64 batch, i64 M, i64 N, i64 K,
             const float* __restrict__ bias, i64 bias_off, i64 bias_rs, i64 bias_cs, int relu) {
    constexpr int WARPS_N = BN / WN, NT = (BM / WM) * WARPS_N * 32;
    constexpr int LANES_N = WN / TN, LANES_M = WM / TM;      // a warp's threads along n and m
    constexpr int GM = TM / 4, GN = TN / 4;                   // 4 x 4 groups per thread tile
    constexpr int SPAN_M = LANES_M * 4, SPAN_N = LANES_N * 4; // distance between groups
    static_assert(LANES_M * LANES_N == 32, "a warp's threads must cover its tile");
    static_assert((BK == 8 || BK == 16) && BM % 32 == 0 && BN % 32 == 0, "see swizzle()");
    typedef SliceLoader<BM, BK, NT, A_K> LoaderA;
    typedef SliceLoader<BN, BK, NT, B_K> LoaderB;

    __shared__ __align__(16) float As[2][BK][BM];
    __shared__ __align__(16) float Bs[2][BK][BN];

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm0 = (warp / WARPS_N) * WM + (lane / LANES_N) * 4;   // this thread's first row
    const int wn0 = (warp % WARPS_N) * WN + (lane % LANES_N) * 4;   // and column in the tile
    const i64 b = blockIdx.z, m0 = (i64)blockIdx.y * BM, n0 = (i64)blockIdx.x * BN;

    LoaderA la;
    LoaderB lb;
    // A: x = m (stride as1), k (stride as2); B: x = n (stride bs2), k (stride bs1)
    la.init(A + a_off + batch_item(b, inner, a_outer, as0), m0, M, as1, as2, K, tid);
    lb.init(B + b_off + batch_item(b, inner, b_outer, bs0), n0, N, bs2, bs1, K, tid);
    float4 ra[LoaderA::LOADS], rb[LoaderB::LOADS];

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.f;

    const int k_tiles = (int)((K + BK - 1) / BK);
    la.fetch(ra);
    lb.fetch(rb);
    la.store(ra, As[0]);
    lb.store(rb, Bs[0]);
    __syncthreads();

    for (int kt = 0; kt < k_tiles; ++kt) {
        const int cur = kt & 1;
        const bool more = kt + 1 < k_tiles;
        if (more) {
            la.fetch(ra);
            lb.fetch(rb);
        }
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            float af[TM], bf[TN];
#pragma unroll
            for (int g = 0; g < GM; ++g) {
                float4 v = *reinterpret_cast<const float4*>(
                    &As[cur][kk][swizzle<BK>(wm0 + g * SPAN_M, kk)]);
                af[4 * g] = v.x; af[4 * g + 1] = v.y; af[4 * g + 2] = v.z; af[4 * g + 3] = v.w;
            }
#pragma unroll
            for (int g = 0; g < GN; ++g) {
                float4 v = *reinterpret_cast<const float4*>(
                    &Bs[cur][kk][swizzle<BK>(wn0 + g * SPAN_N, kk)]);
                bf[4 * g] = v.x; bf[4 * g + 1] = v.y; bf[4 * g + 2] = v.z; bf[4 * g + 3] = v.w;
            }
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(af[i], bf[j], acc[i][j]);
        }
        if (more) {
            la.store(ra, As[cur ^ 1]);
            lb.store(rb, Bs[cur ^ 1]);
        }
        __syncthreads();
    }

    // epilogue: float4 stores where C's rows are 16-byte aligned, scalar ones otherwise
    float* c = C + b * M * N;
    const float* bb = bias ? bias + bias_off : nullptr;
    const bool vec = (N & 3) == 0 && (reinterpret_cast<u64>(C) & 15) == 0;
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const i64 row = m0 + wm0 + (i / 4) * SPAN_M + (i % 4);
        if (row >= M) continue;
#pragma unroll
        for (int g = 0; g < GN; ++g) {
            const i64 col = n0 + wn0 + g * SPAN_N;
            float* dst = c + row * N + col;
            float v[4];
#pragma unroll
            for (int j = 0; j < 4; ++j)     // bias is read only inside C
                v[j] = col + j < N ? epilogue(acc[i][4 * g + j], bb, row, col + j, bias_rs,
                                              bias_cs, relu) : 0.f;
            if (vec && col < N) {
                *reinterpret_cast<float4*>(dst) = float4{v[0], v[1], v[2], v[3]};
            } else {
#pragma unroll
                for (int j = 0; j < 4; ++j)
                    if (col + j < N) dst[j] = v[j];
            }
        }
    }
}
