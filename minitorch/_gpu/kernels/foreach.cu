// Multi-tensor optimizer steps (torch's foreach; the CPU twins are minitorch/_cpu/foreach.pyx):
// one launch updates every parameter of a batch. The host passes one u64 table:
//   [0, n]                  offsets: tensor k holds elements [offsets[k], offsets[k + 1]) of the
//                           concatenated range the flat loop walks
//   [n + 1 + s * n + k]     the device address of slot s of tensor k (param, grad, state...)
//   after the slots         Adam's per-tensor -step_size and sqrt(bias_correction2) as double
//                           bits, when the tensors' step counts differ (flag PER_TENSOR)
// Each element finds its tensor by binary search over the offsets. The rules are torch's
// single-tensor ones operation for operation with every operation rounded on its own (the
// mul / add / sub helpers keep NVRTC from fusing multiply-adds), so a GPU step gives the CPU's
// bits.
#include "common.cuh"

MATH1(sqrt)

// ---- one rounding per operation ----------------------------------------------------------------
#ifdef __CUDA_ARCH__
__device__ __forceinline__ float mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float add(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double add(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ float sub(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ double sub(double a, double b) { return __dsub_rn(a, b); }
#else   // host-side parsing and the CPU emulator: a C++ compiler that does not contract here
template <typename T> __device__ __forceinline__ T mul(T a, T b) { return a * b; }
template <typename T> __device__ __forceinline__ T add(T a, T b) { return a + b; }
template <typename T> __device__ __forceinline__ T sub(T a, T b) { return a - b; }
#endif

#define FLAG_DECAY 1        // L2 weight decay added to the gradient
#define FLAG_BUFFER 2       // SGD / RMSprop: a momentum buffer; Adam: amsgrad's running max
#define FLAG_NESTEROV 4     // SGD; RMSprop: centered
#define FLAG_INIT 8         // SGD: new momentum buffers take the gradient
#define FLAG_NEAR 16        // lerp weight in (-0.5, 0.5): the m + (g - m) * w side
#define FLAG_PER_TENSOR 32  // Adam: per-tensor scalars at the end of the table

// The tensor holding element i of the concatenation (the last k with offsets[k] <= i).
__device__ __forceinline__ i64 tensor_of(const u64* __restrict__ offsets, i64 n, i64 i) {
    i64 lo = 0, hi = n - 1;
    while (lo < hi) {
        i64 mid = (lo + hi + 1) >> 1;
        if ((i64)offsets[mid] <= i) lo = mid; else hi = mid - 1;
    }
    return lo;
}

template <typename T> __device__ __forceinline__ T* slot(const u64* table, i64 n, int s, i64 k) {
    return reinterpret_cast<T*>(table[n + 1 + (i64)s * n + k]);
}

// The gradient the rules use: negated for maximize, plus L2 weight decay.
template <typename T>
__device__ __forceinline__ T decayed(T g, T p, T grad_scale, T wd, int flags) {
    g = mul(g, grad_scale);
    return (flags & FLAG_DECAY) ? add(g, mul(p, wd)) : g;
}

// torch's two-sided lerp of m toward g by w (keep = 1 - w).
template <typename T> __device__ __forceinline__ T lerp(T m, T g, T w, T keep, int flags) {
    return (flags & FLAG_NEAR) ? add(m, mul(sub(g, m), w)) : sub(g, mul(sub(g, m), keep));
}

// SGD: buf = momentum * buf + (1 - dampening) * g (or g on the first step); Nesterov
// g + momentum * buf, else buf; param -= lr * that.
template <typename T>
__global__ void __launch_bounds__(THREADS)
foreach_sgd_kernel(const u64* __restrict__ table, i64 n, i64 total, T grad_scale, T wd, T neg_lr,
                   T momentum, T keep, int flags) {
    FOR_EACH_ELEMENT(i, total) {
        const i64 k = tensor_of(table, n, i), j = i - (i64)table[k];
        T* p = slot<T>(table, n, 0, k);
        T gi = decayed(slot<T>(table, n, 1, k)[j], p[j], grad_scale, wd, flags);
        if (flags & FLAG_BUFFER) {
            T* b = slot<T>(table, n, 2, k);
            T bi = (flags & FLAG_INIT) ? gi : add(mul(b[j], momentum), mul(gi, keep));
            b[j] = bi;
            gi = (flags & FLAG_NESTEROV) ? add(gi, mul(bi, momentum)) : bi;
        }
        p[j] = add(p[j], mul(gi, neg_lr));
    }
}

// Adam / AdamW (see foreach.pyx): param *= param_scale, exp_avg lerps to g, exp_avg_sq =
// beta2 * v + (1 - beta2) * g², amsgrad's running max, param += -step_size * m / (sqrt(v) /
// bc2_sqrt + eps).
template <typename T>
__global__ void __launch_bounds__(THREADS)
foreach_adam_kernel(const u64* __restrict__ table, i64 n, i64 total, T grad_scale, T param_scale,
                    T grad_decay, T w1, T keep, T beta2, T c2, T eps, T neg_step, T bc2_sqrt,
                    int flags) {
    const int slots = (flags & FLAG_BUFFER) ? 5 : 4;
    FOR_EACH_ELEMENT(i, total) {
        const i64 k = tensor_of(table, n, i), j = i - (i64)table[k];
        T step = neg_step, bc2 = bc2_sqrt;
        if (flags & FLAG_PER_TENSOR) {
            const u64* scalars = table + n + 1 + slots * n;
            step = (T)__longlong_as_double((long long)scalars[2 * k]);
            bc2 = (T)__longlong_as_double((long long)scalars[2 * k + 1]);
        }
        T* p = slot<T>(table, n, 0, k);
        T* m = slot<T>(table, n, 2, k);
        T* v = slot<T>(table, n, 3, k);
        const T gi = decayed(slot<T>(table, n, 1, k)[j], p[j], grad_scale, grad_decay, flags);
        const T mi = lerp(m[j], gi, w1, keep, flags);
        T vi = add(mul(v[j], beta2), mul(mul(gi, c2), gi));
        m[j] = mi;
        v[j] = vi;
        if (flags & FLAG_BUFFER) {                      // amsgrad: a NaN on either side wins
            T* top = slot<T>(table, n, 4, k);
            const T t = top[j];
            vi = (t > vi || t != t) ? t : vi;
            top[j] = vi;
        }
        p[j] = add(mul(p[j], param_scale), mul(mi, step) / add(m_sqrt(vi) / bc2, eps));
    }
}

// Adadelta: sq = rho * sq + (1 - rho) * g²; delta = sqrt(acc + eps) / sqrt(sq + eps) * g;
// acc = rho * acc + (1 - rho) * delta²; param -= lr * delta.
template <typename T>
__global__ void __launch_bounds__(THREADS)
foreach_adadelta_kernel(const u64* __restrict__ table, i64 n, i64 total, T grad_scale, T wd,
                        T neg_lr, T rho, T c_rho, T eps, int flags) {
    FOR_EACH_ELEMENT(i, total) {
        const i64 k = tensor_of(table, n, i), j = i - (i64)table[k];
        T* p = slot<T>(table, n, 0, k);
        T* sq = slot<T>(table, n, 2, k);
        T* acc = slot<T>(table, n, 3, k);
        const T gi = decayed(slot<T>(table, n, 1, k)[j], p[j], grad_scale, wd, flags);
        const T si = add(mul(sq[j], rho), mul(mul(gi, c_rho), gi));
        sq[j] = si;
        const T di = mul(m_sqrt(add(acc[j], eps)) / m_sqrt(add(si, eps)), gi);
        acc[j] = add(mul(acc[j], rho), mul(mul(di, c_rho), di));
        p[j] = add(p[j], mul(di, neg_lr));
    }
}

// RMSprop: sq = alpha * sq + (1 - alpha) * g²; centered: grad_avg lerps to g and avg =
// sqrt(sq - grad_avg²) + eps, else sqrt(sq) + eps; with momentum buf = momentum * buf + g / avg
// and param -= lr * buf, else param -= lr * g / avg. Slots: param, grad, sq, buf, grad_avg.
template <typename T>
__global__ void __launch_bounds__(THREADS)
foreach_rmsprop_kernel(const u64* __restrict__ table, i64 n, i64 total, T grad_scale, T wd,
                       T neg_lr, T alpha, T c_alpha, T eps, T momentum, T lerp_keep,
                       int flags) {
    FOR_EACH_ELEMENT(i, total) {
        const i64 k = tensor_of(table, n, i), j = i - (i64)table[k];
        T* p = slot<T>(table, n, 0, k);
        T* sq = slot<T>(table, n, 2, k);
        const T gi = decayed(slot<T>(table, n, 1, k)[j], p[j], grad_scale, wd, flags);
        const T si = add(mul(sq[j], alpha), mul(mul(gi, c_alpha), gi));
        sq[j] = si;
        T avg;
        if (flags & FLAG_NESTEROV) {                    // centered
            T* ga = slot<T>(table, n, 4, k);
            const T ai = lerp(ga[j], gi, c_alpha, lerp_keep, flags);
            ga[j] = ai;
            avg = add(m_sqrt(add(si, mul(-ai, ai))), eps);
        } else {
            avg = add(m_sqrt(si), eps);
        }
        if (flags & FLAG_BUFFER) {
            T* b = slot<T>(table, n, 3, k);
            const T bi = add(mul(b[j], momentum), gi / avg);
            b[j] = bi;
            p[j] = add(p[j], mul(bi, neg_lr));
        } else {
            p[j] = add(p[j], mul(gi, neg_lr) / avg);
        }
    }
}
