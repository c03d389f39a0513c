// Batched strided GEMM: C (compact batch x M x N) = A (batch x M x K) @ B (batch x K x N), each
// operand read through its own (batch, row, col) element strides, so transposed operands and
// broadcast batches (stride 0) cost no copy.
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

template <typename T, int BM, int BN, int BK, int TM, int TN>
__global__ void __launch_bounds__((BM / TM) * (BN / TN), sizeof(T) == 4 ? 2 : 1)
matmul_kernel(const T* __restrict__ A, i64 a_off, i64 as0, i64 as1, i64 as2,
              const T* __restrict__ B, i64 b_off, i64 bs0, i64 bs1, i64 bs2,
              T* __restrict__ C, i64 batch, i64 M, i64 N, i64 K) {
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
        la.init(A + a_off + b * as0, m0, M, as1, as2, tid);
        lb.init(B + b_off + b * bs0, n0, N, bs2, bs1, tid);
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
#pragma unroll
        for (int i = 0; i < TM; ++i) {
            const i64 row = m0 + (i / 4) * (BM / GM) + ty * 4 + (i % 4);
            if (row >= M) continue;
#pragma unroll
            for (int j = 0; j < TN; ++j) {
                const i64 col = n0 + (j / 4) * (BN / GN) + tx * 4 + (j % 4);
                if (col < N) c[row * N + col] = acc[i][j];
            }
        }
    }
}
