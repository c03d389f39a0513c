// Strided data movement: compact (gather a view into contiguous memory), its adjoints strided_set
// and strided_add (scatter a contiguous block through a view), fill, and dtype cast.
// One thread per view element; the geometry's operand 0 is the view.
#include "common.cuh"
#define HALF_DEVICE __device__
#include "half.h"

// out[i] = a[a_off + view(i)]
template <typename T, int MAXD>
__global__ void __launch_bounds__(THREADS)
compact_kernel(const T* __restrict__ a, i64 a_off, T* __restrict__ out, i64 n,
               Geometry<1, MAXD> g) {
    FOR_EACH_ELEMENT(i, n) {
        i64 off[1];
        geometry_offsets(g, (u64)i, off);
        out[i] = a[a_off + off[0]];
    }
}

// out[out_off + view(i)] = src[i * src_step] (src_step 0: a fill from one element). A view that
// may overlap itself runs twice with claims (MODE_CLAIM then MODE_WRITE) so that the last write
// in C order wins, as on the CPU; claims are indexed from the view's lowest element claim_base.
template <typename T, int MAXD>
__global__ void __launch_bounds__(THREADS)
strided_set_kernel(const T* __restrict__ src, i64 src_step, T* out, i64 out_off, i64 n,
                   Geometry<1, MAXD> g, int mode, i64* claims, i64 claim_base) {
    FOR_EACH_ELEMENT(i, n) {
        i64 off[1];
        geometry_offsets(g, (u64)i, off);
        i64 target = out_off + off[0];
        claimed_store(mode, out, target, src[i * src_step], claims, target - claim_base, i);
    }
}

// out[out_off + view(i)] += src[i]; atomics only where the view may overlap itself (col2im,
// expand backward), plain read-modify-write where the host proved it injective.
template <typename T, int MAXD>
__global__ void __launch_bounds__(THREADS)
strided_add_kernel(const T* __restrict__ src, T* out, i64 out_off, i64 n, Geometry<1, MAXD> g,
                   int atomic) {
    FOR_EACH_ELEMENT(i, n) {
        i64 off[1];
        geometry_offsets(g, (u64)i, off);
        if (atomic) {
            atomic_accumulate(out + out_off + off[0], src[i]);
        } else {
            plain_accumulate(out + out_off + off[0], src[i]);
        }
    }
}

template <typename T>
__global__ void __launch_bounds__(THREADS)
fill_kernel(T* __restrict__ out, i64 n, T value) {
    FOR_EACH_ELEMENT(i, n) { out[i] = value; }
}

// C conversion (float to int truncates toward zero). An unsigned char buffer holds bool or uint8:
// to bool (to_bool != 0) it is a != 0, so NaN becomes true; to uint8 the value goes through i64
// and keeps its low byte (torch's modulo-256 wrap; float to unsigned char is undefined in C
// outside 0..255, float to i64 only outside i64's range).
// The narrow integers (int, short, signed char) go through i64 too, wrapping like the CPU.
template <typename S, typename D>
__device__ __forceinline__ D convert(S v, int to_bool) {
    if constexpr (same_type<D, unsigned char>::value) {
        return to_bool ? (D)(v != (S)0) : (D)(i64)v;
    } else if constexpr (same_type<D, int>::value || same_type<D, short>::value ||
                         same_type<D, signed char>::value) {
        return (D)(i64)v;
    } else {
        return (D)v;
    }
}

template <typename S, typename D>
__global__ void __launch_bounds__(THREADS)
cast_kernel(const S* __restrict__ a, D* __restrict__ out, i64 n, int to_bool) {
    FOR_EACH_ELEMENT(i, n) {
        out[i] = convert<S, D>(a[i], to_bool);
    }
}

// A cast with a 16-bit float side (SRC16 / DST16: 1 float16, 2 bfloat16, 0 neither; such a
// side's type is unsigned short): through float32 with half.h's conversions, as the CPU does.
template <typename S, typename D, int SRC16, int DST16>
__global__ void __launch_bounds__(THREADS)
cast16_kernel(const S* __restrict__ a, D* __restrict__ out, i64 n, int to_bool) {
    FOR_EACH_ELEMENT(i, n) {
        float v;
        if constexpr (SRC16 == 1) v = mt_half_to_float(a[i]);
        else if constexpr (SRC16 == 2) v = mt_bfloat16_to_float(a[i]);
        else v = (float)a[i];
        if constexpr (DST16 == 1) out[i] = mt_float_to_half(v);
        else if constexpr (DST16 == 2) out[i] = mt_float_to_bfloat16(v);
        else out[i] = convert<float, D>(v, to_bool);
    }
}
