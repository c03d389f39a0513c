// Shared by every minitorch CUDA module: 64-bit index types, strided geometry with magic-number
// division, launch-shape constants, NaN helpers and the atomic accumulate used by every "add into
// a view" kernel. The loader (minitorch/_gpu/launch.py) pastes this file and a generated opcode
// prelude (#define UNARY_EXP 4, ...) in front of each module, so no file here includes a system
// header: NVRTC compiles the result as one translation unit.
typedef long long i64;
typedef unsigned long long u64;

// Elements per thread in flat kernels: ITEMS loads in flight per thread, block-strided so that
// each load instruction of a warp is coalesced.
#define THREADS 256
#define ITEMS 4

// ---------------------------------------------------------------------------------------------
// Strided geometry, passed by value. Axes are stored innermost first; each axis carries its size
// and a magic multiplier/shift so that splitting a linear index into coordinates costs a
// multiply-high and a shift instead of a 64-bit division (Granlund & Montgomery, as in PyTorch's
// IntDivider, widened to 64 bits: exact for dividends below 2**63). Every field is 8 bytes, so
// the host packs it as a flat uint64 array (launch.pack_geometry) with no padding rules.
template <int NARGS, int MAXD>
struct Geometry {
    i64 ndim;                    // >= 1 after the host's axis collapsing
    u64 size[MAXD];
    u64 magic[MAXD];
    u64 shift[MAXD];
    i64 stride[NARGS][MAXD];     // per operand, in elements (may be 0 or negative)
};

__device__ __forceinline__ u64 magic_div(u64 n, u64 magic, u64 shift) {
    u64 t = __umul64hi(n, magic);
    return (t + n) >> shift;     // t + n < 2**64 because n < 2**63
}

// Element offsets of the `linear`-th C-order index for every operand of g.
template <int NARGS, int MAXD>
__device__ __forceinline__ void geometry_offsets(const Geometry<NARGS, MAXD>& g, u64 linear,
                                                 i64 (&off)[NARGS]) {
    // unrolled for the default 8 axes; the rare 64-axis instances keep a loop (compile time)
    constexpr int UNROLL = MAXD <= 8 ? MAXD : 1;
#pragma unroll
    for (int k = 0; k < NARGS; ++k) off[k] = 0;
#pragma unroll UNROLL
    for (int d = 0; d < MAXD; ++d) {
        if (d == g.ndim - 1) {   // outermost axis: the rest of the index is its coordinate
#pragma unroll
            for (int k = 0; k < NARGS; ++k) off[k] += (i64)linear * g.stride[k][d];
            break;
        }
        u64 q = magic_div(linear, g.magic[d], g.shift[d]);
        i64 r = (i64)(linear - q * g.size[d]);
#pragma unroll
        for (int k = 0; k < NARGS; ++k) off[k] += r * g.stride[k][d];
        linear = q;
    }
}

// The flat work loop: chunks of THREADS*ITEMS elements, grid-strided when the grid is capped;
// element k of a thread's chunk is ITEM(base, k).
#define FOR_EACH_CHUNK(base, n)                                                             \
    for (i64 base = (i64)blockIdx.x * (THREADS * ITEMS); base < (n);                        \
         base += (i64)gridDim.x * (THREADS * ITEMS))
#define ITEM(base, k) ((base) + (i64)(k) * THREADS + threadIdx.x)

#define FOR_EACH_ELEMENT(i, n)                                                              \
    FOR_EACH_CHUNK(_base, n)                                                                \
        _Pragma("unroll") for (int _k = 0; _k < ITEMS; ++_k)                               \
            if (i64 i = ITEM(_base, _k); i < (n))

// ---------------------------------------------------------------------------------------------
// Floating-point helpers (NVRTC has no <cmath> macros for these)

template <typename T> __device__ __forceinline__ bool is_nan(T x) { return x != x; }

template <typename T> __device__ __forceinline__ T pos_inf();
template <> __device__ __forceinline__ float pos_inf<float>() { return __int_as_float(0x7f800000); }
template <> __device__ __forceinline__ double pos_inf<double>() {
    return __longlong_as_double(0x7ff0000000000000LL);
}

template <typename T> struct is_float_type { static constexpr bool value = false; };
template <> struct is_float_type<float> { static constexpr bool value = true; };
template <> struct is_float_type<double> { static constexpr bool value = true; };

template <typename A, typename B> struct same_type { static constexpr bool value = false; };
template <typename A> struct same_type<A, A> { static constexpr bool value = true; };

// ---------------------------------------------------------------------------------------------
// out[p] += v, safe when other threads add into the same element. float/double/int64 use native
// atomics (double needs sm_60+, int64 adds as unsigned: two's complement wraps like the CPU);
// bool "addition" is a logical or, done on the aligned 32-bit word holding the byte (CuPy's pool
// hands out 512-byte-aligned blocks, so that word lies inside the allocation).
template <typename T> __device__ __forceinline__ void atomic_accumulate(T* p, T v) {
    if constexpr (same_type<T, float>::value || same_type<T, double>::value) {
        atomicAdd(p, v);
    } else if constexpr (same_type<T, i64>::value) {
        atomicAdd(reinterpret_cast<u64*>(p), (u64)v);
    } else {
        if (v) {
            u64 addr = reinterpret_cast<u64>(p);
            unsigned int* word = reinterpret_cast<unsigned int*>(addr & ~(u64)3);
            atomicOr(word, 1u << ((addr & 3) * 8));
        }
    }
}

// Plain (single-writer) accumulate with the same semantics.
template <typename T> __device__ __forceinline__ void plain_accumulate(T* p, T v) {
    if constexpr (same_type<T, unsigned char>::value) {
        *p = (unsigned char)((*p != 0) | (v != 0));
    } else if constexpr (same_type<T, i64>::value) {
        *p = (i64)((u64)*p + (u64)v);
    } else {
        *p = *p + v;
    }
}

// Last-writer-wins for scatters whose targets may repeat: pass CLAIM records the largest source
// position aiming at each target (claims start at -1), pass WRITE lets only that one store. The
// result equals a serial loop in source order, which is what the CPU backend does.
#define MODE_PLAIN 0
#define MODE_CLAIM 1
#define MODE_WRITE 2

template <typename T>
__device__ __forceinline__ void claimed_store(int mode, T* out, i64 target, T value,
                                              i64* claims, i64 claim_index, i64 position) {
    if (mode == MODE_PLAIN) {
        out[target] = value;
    } else if (mode == MODE_CLAIM) {
        atomicMax(claims + claim_index, position);
    } else if (claims[claim_index] == position) {
        out[target] = value;
    }
}

// Warp shuffles for every element type we reduce (bytes travel as int).
template <typename T> __device__ __forceinline__ T shfl_down(T v, int delta) {
    if constexpr (same_type<T, unsigned char>::value) {
        return (unsigned char)__shfl_down_sync(0xffffffffu, (int)v, delta);
    } else {
        return __shfl_down_sync(0xffffffffu, v, delta);
    }
}

template <typename T> __device__ __forceinline__ T shfl_up(T v, int delta) {
    if constexpr (same_type<T, unsigned char>::value) {
        return (unsigned char)__shfl_up_sync(0xffffffffu, (int)v, delta);
    } else {
        return __shfl_up_sync(0xffffffffu, v, delta);
    }
}

// Math by explicit name per precision (expf for float, exp for double), so no overload
// resolution differs between NVRTC and nvcc. A module instantiates the functions it needs:
// MATH1(sqrt) defines m_sqrt(float) and m_sqrt(double).
#define MATH1(NAME)                                                                        \
    __device__ __forceinline__ float m_##NAME(float x) { return NAME##f(x); }              \
    __device__ __forceinline__ double m_##NAME(double x) { return NAME(x); }
#define MATH2(NAME)                                                                        \
    __device__ __forceinline__ float m_##NAME(float x, float y) { return NAME##f(x, y); }  \
    __device__ __forceinline__ double m_##NAME(double x, double y) { return NAME(x, y); }
