// Max pooling over compact (planes, D, H, W) arrays (1-D and 2-D pooling run with leading axes
// of size 1): the maximum of every window with its flat position in the plane (torch's
// return_indices), and the gradient summed back at those positions.
//
// Windows are torch's: along each axis output o starts at o * stride - padding and reaches
// (kernel - 1) * dilation + 1 elements, of which only those inside the input are read (padding
// never competes), the first being the initial index. The maximum starts from the dtype's lowest
// value and takes torch's rule `val > max || isnan(val)`: a NaN wins (the last of several), ties
// keep the first position. Same results as the CPU kernels (minitorch/_cpu/pool.pyx).
#include "common.cuh"

// The value every window's maximum starts from: -inf, or the integer minimum (0 for bytes).
template <typename T> __device__ __forceinline__ T lowest_value() {
    if constexpr (is_float_type<T>::value) {
        return -pos_inf<T>();
    } else if constexpr (same_type<T, i64>::value) {
        return (i64)(-0x7fffffffffffffffLL - 1);
    } else {
        return T(0);
    }
}

// [first, end) of the real positions of window o along one axis, stepped by the dilation:
// torch's start moved past the padding a dilation step at a time, and its clamped end.
__device__ __forceinline__ void window_span(i64 o, i64 size, i64 kernel, i64 stride,
                                            i64 padding, i64 dilation, i64& first, i64& end) {
    i64 start = o * stride - padding;
    i64 stop = start + (kernel - 1) * dilation + 1;
    if (start < 0) start += (-start + dilation - 1) / dilation * dilation;
    first = start;
    end = stop < size ? stop : size;
}

// One thread per output element of `total` = planes * od * oh * ow. With a bias (else null),
// every value is read as relu(x + bias[plane % channels]) with BINARY_ADD_RELU's ops (the pool
// of a convolution's bias add and ReLU without their pass).
template <typename T>
__global__ void max_pool_forward_kernel(const T* __restrict__ x, T* __restrict__ values,
                                        i64* __restrict__ indices, i64 total, i64 d_size,
                                        i64 h_size, i64 w_size, i64 od, i64 oh, i64 ow, i64 kd,
                                        i64 kh, i64 kw, i64 sd, i64 sh, i64 sw, i64 pd, i64 ph,
                                        i64 pw, i64 dd, i64 dh, i64 dw,
                                        const T* __restrict__ bias, i64 channels) {
    FOR_EACH_ELEMENT(i, total) {
        i64 rest = i / ow, w_out = i - rest * ow;
        i64 h_out = rest % oh;
        rest /= oh;
        i64 d_out = rest % od, plane = rest / od;
        i64 d0, d1, h0, h1, w0, w1;
        window_span(d_out, d_size, kd, sd, pd, dd, d0, d1);
        window_span(h_out, h_size, kh, sh, ph, dh, h0, h1);
        window_span(w_out, w_size, kw, sw, pw, dw, w0, w1);
        const T* src = x + plane * d_size * h_size * w_size;
        const T b = bias ? bias[plane % channels] : T(0);
        i64 best = (d0 * h_size + h0) * w_size + w0;
        T top = lowest_value<T>();
        for (i64 d = d0; d < d1; d += dd) {
            for (i64 h = h0; h < h1; h += dh) {
                i64 at = (d * h_size + h) * w_size + w0;
                for (i64 w = w0; w < w1; w += dw, at += dw) {
                    T v = src[at];
                    if constexpr (is_float_type<T>::value) {     // a bias comes with floats only
                        if (bias) {
                            v = v + b;
                            v = v < T(0) ? T(0) : v;
                        }
                    }
                    if (v > top || is_nan(v)) {
                        top = v;
                        best = at;
                    }
                }
            }
        }
        values[i] = top;
        indices[i] = best;
    }
}

// grad_in (zeroed by the host) += grad_out at the indices, plane by plane, one thread per output
// gradient; overlapping windows send several to one element, hence the atomic add. Positions
// outside the plane (torch's empty windows point there) are skipped.
template <typename T>
__global__ void max_pool_backward_kernel(const T* __restrict__ grad_out,
                                         const i64* __restrict__ indices, T* __restrict__ grad_in,
                                         i64 total, i64 in_plane, i64 out_plane) {
    FOR_EACH_ELEMENT(i, total) {
        i64 at = indices[i];
        if (at >= 0 && at < in_plane)
            atomic_accumulate(grad_in + (i / out_plane) * in_plane + at, grad_out[i]);
    }
}
