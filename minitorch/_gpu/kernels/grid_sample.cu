// grid_sample: an input sampled at a grid's points and the gradients for the input and the grid
// (layout, codes and the taps: minitorch/_cpu/grid_sample.pyx, whose arithmetic this repeats).
// One thread per output point (batch, point), looping over the channels: the forward writes the
// point's value in every channel, the backward adds the input gradient with atomics into a
// zeroed grad_input and writes the point's grid gradient itself.
#include "common.cuh"

MATH1(floor) MATH1(rint) MATH2(fmod)

#define GS_BILINEAR 0
#define GS_NEAREST 1
#define GS_BICUBIC 2
#define GS_BORDER 1
#define GS_REFLECTION 2
#define GS_MAX_TAPS 16

struct GridShape {
    i64 c, d, h, w, points, plane;
    int dims, mode, padding, align;
};

// [-1, 1] to [0, size - 1] (align_corners) or [-0.5, size - 0.5]; grad = d/dcoord.
template <typename T>
__device__ __forceinline__ T gs_unnormalize(T coord, i64 size, int align, T* grad) {
    if (align) {
        *grad = static_cast<T>(size - 1) / 2;
        return ((coord + 1) / 2) * static_cast<T>(size - 1);
    }
    *grad = static_cast<T>(size) / 2;
    return ((coord + 1) * static_cast<T>(size) - 1) / 2;
}

// Clipped to [0, size - 1]; the borders count as outside for the gradient (ATen).
template <typename T> __device__ __forceinline__ T gs_clip(T v, i64 size, T* grad) {
    const T top = static_cast<T>(size - 1);
    if (v <= T(0)) {
        *grad = T(0);
        return T(0);
    }
    if (v >= top) {
        *grad = T(0);
        return top;
    }
    *grad = T(1);
    return v;
}

// Reflected by the bounds twice_low / 2 and twice_high / 2 until it falls between them: the
// exact remainder by twice the span, folded once (the CPU module says why).
template <typename T>
__device__ __forceinline__ T gs_reflect(T v, i64 twice_low, i64 twice_high, T* grad) {
    if (twice_low == twice_high) {
        *grad = T(0);
        return T(0);
    }
    const T low = static_cast<T>(twice_low) / 2;
    const T span = static_cast<T>(twice_high - twice_low) / 2;
    const T twice_span = static_cast<T>(twice_high - twice_low);
    T sign = T(1);
    v = v - low;
    if (v < T(0)) {
        sign = T(-1);
        v = -v;
    }
    const T extra = m_fmod(v, twice_span);
    if (extra < span) {
        *grad = sign;
        return extra + low;
    }
    *grad = -sign;
    return (twice_span - extra) + low;
}

// compute_coordinates: border clips, reflection reflects then clips.
template <typename T>
__device__ __forceinline__ T gs_pad(T v, i64 size, int padding, int align, T* grad) {
    if (padding == GS_BORDER) return gs_clip(v, size, grad);
    if (padding == GS_REFLECTION) {
        T g_reflect, g_clip;
        v = align ? gs_reflect(v, 0, 2 * (size - 1), &g_reflect)
                  : gs_reflect(v, -1, 2 * size - 1, &g_reflect);
        v = gs_clip(v, size, &g_clip);
        *grad = g_reflect * g_clip;
        return v;
    }
    *grad = T(1);
    return v;
}

// An integral coordinate as an index; NaN, infinities and huge values become positions no
// bounds check accepts (their C conversion is undefined).
template <typename T> __device__ __forceinline__ i64 gs_index(T v) {
    if (!(v >= T(-2))) return -2;
    if (v > T(1099511627776.0)) return 1099511627776LL;
    return static_cast<i64>(v);
}

template <typename T> __device__ __forceinline__ void gs_cubic(T* c, T t) {
    const T A = T(-0.75);
    const T x1 = t, x2 = T(1) - t;
    T x = x1 + T(1);
    c[0] = ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
    c[1] = ((A + 2) * x1 - (A + 3)) * x1 * x1 + 1;
    c[2] = ((A + 2) * x2 - (A + 3)) * x2 * x2 + 1;
    x = x2 + T(1);
    c[3] = ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
}

template <typename T> __device__ __forceinline__ void gs_cubic_grad(T* c, T t) {
    const T A = T(-0.75);
    T x = T(-1) - t;
    c[0] = (-3 * A * x - 10 * A) * x - 8 * A;
    x = -t;
    c[1] = (-3 * (A + 2) * x - 2 * (A + 3)) * x;
    x = T(1) - t;
    c[2] = (3 * (A + 2) * x - 2 * (A + 3)) * x;
    x = T(2) - t;
    c[3] = (3 * A * x - 10 * A) * x + 8 * A;
}

// The taps of the point whose grid coordinates start at gp (see the CPU module); returns their
// count. mult[axis]: the derivative of the source coordinate along axis by the grid value.
template <typename T>
__device__ int gs_taps(const T* gp, const GridShape& s, i64* off, T* w, T* dx, T* dy, T* dz,
                       T* mult) {
    T unused, m;
    mult[2] = T(0);
    if (s.mode == GS_BICUBIC) {
        const T ix = gs_unnormalize(gp[0], s.w, s.align, &mult[0]);
        const T iy = gs_unnormalize(gp[1], s.h, s.align, &mult[1]);
        const T fx = m_floor(ix), fy = m_floor(iy);
        const T tx = ix - fx, ty = iy - fy;
        T cx[4], cy[4], gx[4], gy[4];
        gs_cubic(cx, tx);
        gs_cubic(cy, ty);
        gs_cubic_grad(gx, tx);
        gs_cubic_grad(gy, ty);
        i64 xs[4], ys[4];
        for (int a = 0; a < 4; ++a) {
            const i64 xi = gs_index(gs_pad(fx - 1 + a, s.w, s.padding, s.align, &unused));
            xs[a] = xi >= 0 && xi < s.w ? xi : -1;
            const i64 yi = gs_index(gs_pad(fy - 1 + a, s.h, s.padding, s.align, &unused));
            ys[a] = yi >= 0 && yi < s.h ? yi : -1;
        }
        int count = 0;
        for (int b = 0; b < 4; ++b) {
            for (int a = 0; a < 4; ++a) {
                off[count] = xs[a] >= 0 && ys[b] >= 0 ? ys[b] * s.w + xs[a] : -1;
                w[count] = cx[a] * cy[b];
                dx[count] = -(gx[a] * cy[b]);
                dy[count] = -(gy[b] * cx[a]);
                dz[count] = T(0);
                ++count;
            }
        }
        return count;
    }
    T ix = gs_unnormalize(gp[0], s.w, s.align, &mult[0]);
    ix = gs_pad(ix, s.w, s.padding, s.align, &m);
    mult[0] = mult[0] * m;
    T iy = gs_unnormalize(gp[1], s.h, s.align, &mult[1]);
    iy = gs_pad(iy, s.h, s.padding, s.align, &m);
    mult[1] = mult[1] * m;
    T iz = T(0);
    if (s.dims == 3) {
        iz = gs_unnormalize(gp[2], s.d, s.align, &mult[2]);
        iz = gs_pad(iz, s.d, s.padding, s.align, &m);
        mult[2] = mult[2] * m;
    }
    if (s.mode == GS_NEAREST) {
        const i64 xi = gs_index(m_rint(ix)), yi = gs_index(m_rint(iy));
        const i64 zi = s.dims == 3 ? gs_index(m_rint(iz)) : 0;
        const bool inside = xi >= 0 && xi < s.w && yi >= 0 && yi < s.h && zi >= 0 && zi < s.d;
        off[0] = inside ? (zi * s.h + yi) * s.w + xi : -1;
        w[0] = T(1);
        dx[0] = dy[0] = dz[0] = T(0);
        return 1;
    }
    const T fx = m_floor(ix), fy = m_floor(iy);
    const i64 x0 = gs_index(fx), y0 = gs_index(fy);
    const T wx[2] = {(fx + 1) - ix, ix - fx};
    const T wy[2] = {(fy + 1) - iy, iy - fy};
    int count = 0;
    if (s.dims == 2) {
        for (int b = 0; b < 2; ++b) {
            for (int a = 0; a < 2; ++a) {
                const i64 xi = x0 + a, yi = y0 + b;
                off[count] = xi >= 0 && xi < s.w && yi >= 0 && yi < s.h ? yi * s.w + xi : -1;
                w[count] = wx[a] * wy[b];
                dx[count] = a ? wy[b] : -wy[b];
                dy[count] = b ? wx[a] : -wx[a];
                dz[count] = T(0);
                ++count;
            }
        }
        return count;
    }
    const T fz = m_floor(iz);
    const i64 z0 = gs_index(fz);
    const T wz[2] = {(fz + 1) - iz, iz - fz};
    for (int e = 0; e < 2; ++e) {
        for (int b = 0; b < 2; ++b) {
            for (int a = 0; a < 2; ++a) {
                const i64 xi = x0 + a, yi = y0 + b, zi = z0 + e;
                off[count] = xi >= 0 && xi < s.w && yi >= 0 && yi < s.h && zi >= 0 && zi < s.d
                                 ? (zi * s.h + yi) * s.w + xi
                                 : -1;
                w[count] = wx[a] * wy[b] * wz[e];
                dx[count] = a ? wy[b] * wz[e] : -(wy[b] * wz[e]);
                dy[count] = b ? wx[a] * wz[e] : -(wx[a] * wz[e]);
                dz[count] = e ? wx[a] * wy[b] : -(wx[a] * wy[b]);
                ++count;
            }
        }
    }
    return count;
}

template <typename T>
__global__ void __launch_bounds__(THREADS)
grid_sample_forward_kernel(const T* __restrict__ x, const T* __restrict__ grid,
                           T* __restrict__ out, i64 batch, i64 channels, i64 d, i64 h, i64 w,
                           i64 points, int dims, int mode, int padding, int align) {
    const GridShape s{channels, d, h, w, points, d * h * w, dims, mode, padding, align};
    FOR_EACH_ELEMENT(e, batch * points) {
        i64 off[GS_MAX_TAPS];
        T wt[GS_MAX_TAPS], dx[GS_MAX_TAPS], dy[GS_MAX_TAPS], dz[GS_MAX_TAPS], mult[3];
        const int count = gs_taps(grid + e * dims, s, off, wt, dx, dy, dz, mult);
        const i64 n = e / points, p = e - n * points;
        const T* src = x + n * channels * s.plane;
        T* dst = out + n * channels * points + p;
        for (i64 c = 0; c < channels; ++c) {
            T acc = T(0);
            for (int k = 0; k < count; ++k) {
                if (off[k] >= 0) acc = acc + src[off[k]] * wt[k];
            }
            dst[c * points] = acc;
            src += s.plane;
        }
    }
}

// grad_input (zeroed by the host; atomics: points share sources) and grad_grid, each may be
// null when not wanted.
template <typename T>
__global__ void __launch_bounds__(THREADS)
grid_sample_backward_kernel(const T* __restrict__ grad, const T* __restrict__ x,
                            const T* __restrict__ grid, T* grad_input, T* grad_grid, i64 batch,
                            i64 channels, i64 d, i64 h, i64 w, i64 points, int dims, int mode,
                            int padding, int align) {
    const GridShape s{channels, d, h, w, points, d * h * w, dims, mode, padding, align};
    FOR_EACH_ELEMENT(e, batch * points) {
        i64 off[GS_MAX_TAPS];
        T wt[GS_MAX_TAPS], dx[GS_MAX_TAPS], dy[GS_MAX_TAPS], dz[GS_MAX_TAPS], mult[3];
        const int count = gs_taps(grid + e * dims, s, off, wt, dx, dy, dz, mult);
        const i64 n = e / points, p = e - n * points;
        T sx = T(0), sy = T(0), sz = T(0);
        for (i64 c = 0; c < channels; ++c) {
            const i64 plane = (n * channels + c) * s.plane;
            const T gv = grad[(n * channels + c) * points + p];
            for (int k = 0; k < count; ++k) {
                if (off[k] < 0) continue;
                if (grad_input != nullptr) {
                    atomic_accumulate(grad_input + plane + off[k], wt[k] * gv);
                }
                if (grad_grid != nullptr && mode != GS_NEAREST) {
                    const T v = x[plane + off[k]];
                    sx = sx + v * dx[k] * gv;
                    sy = sy + v * dy[k] * gv;
                    sz = sz + v * dz[k] * gv;
                }
            }
        }
        if (grad_grid != nullptr) {
            T* dst = grad_grid + e * dims;
            const bool nearest = mode == GS_NEAREST;
            dst[0] = nearest ? T(0) : mult[0] * sx;
            dst[1] = nearest ? T(0) : mult[1] * sy;
            if (dims == 3) dst[2] = nearest ? T(0) : mult[2] * sz;
        }
    }
}
