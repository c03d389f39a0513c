// Fused scaled-dot-product attention (the CPU twin is minitorch/_cpu/attention.pyx): operands
// are planes (batch·head) of rows with unit column stride, each plane at its own element offset
// (q_off, k_off, ...) and rows `*_row` elements apart. A simple, correct version: one thread per
// query row (forward, dQ) or key row (dK, dV), blocks of ATTN_ROWS rows of one plane; the
// forward is an online softmax over chunks of ATTN_CHUNK keys, the backward recomputes the
// weights from the saved logsumexp. Masks: kind 1 bool (attend where nonzero), 2 added; a row
// with every key masked gives 0 and lse -inf. The pointers of an absent mask / keep are dummies.
#include "common.cuh"

MATH1(exp) MATH1(log)

#define ATTN_ROWS 64
#define ATTN_CHUNK 32

// scale · q_i · k_j + mask, -inf where masked or (causal) j > i
template <typename T>
__device__ __forceinline__ T attn_score(const T* qrow, const T* krow, i64 E, T scale, i64 i,
                                        i64 j, const i64* m_off, const unsigned char* bool_mask,
                                        const T* add_mask, i64 p, i64 m_row, i64 m_col,
                                        int mask_kind, int causal) {
    T dot = T(0);
    for (i64 e = 0; e < E; ++e) dot += qrow[e] * krow[e];
    T s = dot * scale;
    if (mask_kind == 1 && !bool_mask[m_off[p] + i * m_row + j * m_col]) s = -pos_inf<T>();
    if (mask_kind == 2) s += add_mask[m_off[p] + i * m_row + j * m_col];
    if (causal && j > i) s = -pos_inf<T>();
    return s;
}

template <typename T>
__global__ void __launch_bounds__(ATTN_ROWS)
attention_forward_kernel(const T* __restrict__ q, const T* __restrict__ k,
                         const T* __restrict__ v, T* __restrict__ out, T* __restrict__ lse,
                         const i64* __restrict__ q_off, const i64* __restrict__ k_off,
                         const i64* __restrict__ v_off, const i64* __restrict__ m_off,
                         const unsigned char* __restrict__ bool_mask,
                         const T* __restrict__ add_mask, const unsigned char* __restrict__ keep,
                         i64 L, i64 S, i64 E, i64 Ev, i64 q_row, i64 k_row, i64 v_row,
                         i64 m_row, i64 m_col, int mask_kind, int causal, int use_keep, T scale,
                         T keep_scale) {
    const i64 blocks = (L + ATTN_ROWS - 1) / ATTN_ROWS;
    const i64 p = blockIdx.x / blocks;
    const i64 i = (blockIdx.x % blocks) * ATTN_ROWS + threadIdx.x;
    if (i >= L) return;                        // no barrier below
    const T* qrow = q + q_off[p] + i * q_row;
    T* orow = out + (p * L + i) * Ev;
    for (i64 e = 0; e < Ev; ++e) orow[e] = T(0);
    T m = -pos_inf<T>(), l = T(0), s[ATTN_CHUNK];
    const i64 end = causal ? min(S, i + 1) : S;
    for (i64 j0 = 0; j0 < end; j0 += ATTN_CHUNK) {
        const int n = (int)min((i64)ATTN_CHUNK, end - j0);
        T top = m;
        for (int c = 0; c < n; ++c) {
            s[c] = attn_score(qrow, k + k_off[p] + (j0 + c) * k_row, E, scale, i, j0 + c,
                              m_off, bool_mask, add_mask, p, m_row, m_col, mask_kind, causal);
            top = (s[c] > top || s[c] != s[c]) ? s[c] : top;   // NaN wins, as in max
        }
        // a row masked so far has max -inf: shift by 0 so that exp(-inf - 0) = 0, not NaN
        const T shift = top == -pos_inf<T>() ? T(0) : top;
        const T alpha = m_exp(m - shift);
        m = top;
        l *= alpha;
        for (int c = 0; c < n; ++c) {
            T w = m_exp(s[c] - shift);
            l += w;
            if (use_keep) w *= T(keep[(p * L + i) * S + j0 + c]) * keep_scale;
            s[c] = w;
        }
        for (i64 e = 0; e < Ev; ++e) {
            T acc = orow[e] * alpha;
            for (int c = 0; c < n; ++c) acc += s[c] * v[v_off[p] + (j0 + c) * v_row + e];
            orow[e] = acc;
        }
    }
    if (l == T(0)) {                           // every key masked: zeros (torch's safe softmax)
        for (i64 e = 0; e < Ev; ++e) orow[e] = T(0);
        lse[p * L + i] = -pos_inf<T>();
    } else {
        for (i64 e = 0; e < Ev; ++e) orow[e] /= l;
        lse[p * L + i] = m + m_log(l);
    }
}

// The weight of key j for row i from its score and the row's logsumexp (0 for a masked row)
template <typename T> __device__ __forceinline__ T attn_weight(T s, T row_lse) {
    return row_lse == -pos_inf<T>() ? T(0) : m_exp(s - row_lse);
}

// dQ, one thread per query row; also writes D_i = dO_i · O_i for the dK / dV kernel
template <typename T>
__global__ void __launch_bounds__(ATTN_ROWS)
attention_backward_dq_kernel(const T* __restrict__ g, const T* __restrict__ q,
                             const T* __restrict__ k, const T* __restrict__ v,
                             const T* __restrict__ out, const T* __restrict__ lse,
                             T* __restrict__ dq, T* __restrict__ dot,
                             const i64* __restrict__ g_off, const i64* __restrict__ q_off,
                             const i64* __restrict__ k_off, const i64* __restrict__ v_off,
                             const i64* __restrict__ m_off,
                             const unsigned char* __restrict__ bool_mask,
                             const T* __restrict__ add_mask,
                             const unsigned char* __restrict__ keep, i64 L, i64 S, i64 E,
                             i64 Ev, i64 g_row, i64 q_row, i64 k_row, i64 v_row, i64 m_row,
                             i64 m_col, int mask_kind, int causal, int use_keep, T scale,
                             T keep_scale) {
    const i64 blocks = (L + ATTN_ROWS - 1) / ATTN_ROWS;
    const i64 p = blockIdx.x / blocks;
    const i64 i = (blockIdx.x % blocks) * ATTN_ROWS + threadIdx.x;
    if (i >= L) return;
    const T* qrow = q + q_off[p] + i * q_row;
    const T* grow = g + g_off[p] + i * g_row;
    const T* orow = out + (p * L + i) * Ev;
    T* dqrow = dq + (p * L + i) * E;
    T d = T(0);
    for (i64 e = 0; e < Ev; ++e) d += grow[e] * orow[e];
    dot[p * L + i] = d;
    for (i64 e = 0; e < E; ++e) dqrow[e] = T(0);
    const T row_lse = lse[p * L + i];
    const i64 end = causal ? min(S, i + 1) : S;
    for (i64 j = 0; j < end; ++j) {
        const T* krow = k + k_off[p] + j * k_row;
        const T* vrow = v + v_off[p] + j * v_row;
        const T w = attn_weight(attn_score(qrow, krow, E, scale, i, j, m_off, bool_mask,
                                           add_mask, p, m_row, m_col, mask_kind, causal),
                                row_lse);
        T dp = T(0);
        for (i64 e = 0; e < Ev; ++e) dp += grow[e] * vrow[e];
        if (use_keep) dp *= T(keep[(p * L + i) * S + j]) * keep_scale;
        const T ds = w * (dp - d) * scale;
        for (i64 e = 0; e < E; ++e) dqrow[e] += ds * krow[e];
    }
}

// dK and dV, one thread per key row; reads D from the dQ kernel
template <typename T>
__global__ void __launch_bounds__(ATTN_ROWS)
attention_backward_dkv_kernel(const T* __restrict__ g, const T* __restrict__ q,
                              const T* __restrict__ k, const T* __restrict__ v,
                              const T* __restrict__ lse, const T* __restrict__ dot,
                              T* __restrict__ dk, T* __restrict__ dv,
                              const i64* __restrict__ g_off, const i64* __restrict__ q_off,
                              const i64* __restrict__ k_off, const i64* __restrict__ v_off,
                              const i64* __restrict__ m_off,
                              const unsigned char* __restrict__ bool_mask,
                              const T* __restrict__ add_mask,
                              const unsigned char* __restrict__ keep, i64 L, i64 S, i64 E,
                              i64 Ev, i64 g_row, i64 q_row, i64 k_row, i64 v_row, i64 m_row,
                              i64 m_col, int mask_kind, int causal, int use_keep, T scale,
                              T keep_scale) {
    const i64 blocks = (S + ATTN_ROWS - 1) / ATTN_ROWS;
    const i64 p = blockIdx.x / blocks;
    const i64 j = (blockIdx.x % blocks) * ATTN_ROWS + threadIdx.x;
    if (j >= S) return;
    const T* krow = k + k_off[p] + j * k_row;
    const T* vrow = v + v_off[p] + j * v_row;
    T* dkrow = dk + (p * S + j) * E;
    T* dvrow = dv + (p * S + j) * Ev;
    for (i64 e = 0; e < E; ++e) dkrow[e] = T(0);
    for (i64 e = 0; e < Ev; ++e) dvrow[e] = T(0);
    for (i64 i = causal ? j : 0; i < L; ++i) {
        const T* qrow = q + q_off[p] + i * q_row;
        const T* grow = g + g_off[p] + i * g_row;
        const T w = attn_weight(attn_score(qrow, krow, E, scale, i, j, m_off, bool_mask,
                                           add_mask, p, m_row, m_col, mask_kind, causal),
                                lse[p * L + i]);
        const T z = use_keep ? T(keep[(p * L + i) * S + j]) * keep_scale : T(1);
        T dp = T(0);
        for (i64 e = 0; e < Ev; ++e) dp += grow[e] * vrow[e];
        const T ds = w * (dp * z - dot[p * L + i]) * scale;
        const T wd = w * z;
        for (i64 e = 0; e < Ev; ++e) dvrow[e] += wd * grow[e];
        for (i64 e = 0; e < E; ++e) dkrow[e] += ds * qrow[e];
    }
}
