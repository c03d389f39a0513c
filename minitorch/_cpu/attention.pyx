# cython: cdivision=True
"""Fused scaled-dot-product attention on the CPU, forward and backward (the CUDA twins are
minitorch/_gpu/kernels/attention.cu): softmax(scale · q kᵀ + mask) v without the (L, S) weights.

Operands are planes (one per batch·head) of rows with unit column stride, each plane found at
its own element offset (a table per operand, so that permuted heads, broadcast batches and
grouped-query heads are read in place) and rows `row` elements apart. The work is a block of
BR query rows: those rows are the vector lanes of every inner loop (scores, running max,
exponentials, the weighted sum of values), so each loop is BR independent FMAs per key and head
element, whatever the head dimension.

Forward: online softmax over tiles of BC keys (a running max m and sum l per row, earlier
partial sums rescaled by exp(m_old - m_new)); it writes the output and each row's logsumexp.
Backward (FlashAttention's): weights are recomputed key by key from the logsumexp,
dS = P ∘ (dP - D) with D = rowsum(dO ∘ O), and dQ, dK, dV accumulate; one thread owns a whole
plane, so dK and dV need no atomics. Rows with every key masked give zero output and zero
gradients (torch's safe softmax); the causal mask is the test j > i, never materialised.
"""
cimport numpy as cnp
from cython.parallel cimport parallel, prange
from libc.math cimport INFINITY
from libc.stdint cimport int64_t, uint8_t
from libc.stdlib cimport free, malloc
from libc.string cimport memset

from minitorch._cpu.common cimport buffer_dtype, DT_BOOL, DT_F32, DT_F64, threads_for
from minitorch._cpu.vector_math cimport r_exp, real, vlog, vlogf

import numpy as np

cnp.import_array()

DTYPE_NAMES = ("float32", "float64", "int64", "bool")

# The products over the head dimension, in C with gcc/clang vector types: the BR lanes are one
# vector value, and each helper keeps four independent accumulators in registers across its
# loop (four FMA chains; in Cython loops every accumulator went through memory each step).
cdef extern from *:
    """
    #include <string.h>
    typedef float attn_vf __attribute__((vector_size(16 * sizeof(float))));
    typedef double attn_vd __attribute__((vector_size(16 * sizeof(double))));
    #define ATTN_HELPERS(SUF, T, V)                                                         \
    static inline V attn_ld_##SUF(const T* p) { V v; memcpy(&v, p, sizeof v); return v; }  \
    static inline void attn_st_##SUF(T* p, V v) { memcpy(p, &v, sizeof v); }                \
    /* out[c*16 + i] = sum_e lanes[e*16 + i] * r_c[e], for four rows r_c */                 \
    static inline void attn_dots4_##SUF(const T* lanes, const T* r0, const T* r1,          \
                                        const T* r2, const T* r3, Py_ssize_t n, T* out) {   \
        V a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};                                           \
        for (Py_ssize_t e = 0; e < n; e++) {                                                \
            V t = attn_ld_##SUF(lanes + e * 16);                                            \
            a0 += t * r0[e]; a1 += t * r1[e]; a2 += t * r2[e]; a3 += t * r3[e];             \
        }                                                                                   \
        attn_st_##SUF(out, a0); attn_st_##SUF(out + 16, a1);                                \
        attn_st_##SUF(out + 32, a2); attn_st_##SUF(out + 48, a3);                           \
    }                                                                                       \
    /* lanes[e*16 + i] += sum_{c<n} coef[c*16 + i] * rows[c*row + e], e < m: O += P V and   \
       dQ += dS K with rows as lanes */                                                     \
    static inline void attn_lanes_acc_##SUF(T* lanes, const T* coef, const T* rows,         \
                                            Py_ssize_t row, Py_ssize_t n, Py_ssize_t m) {   \
        Py_ssize_t e = 0, c;                                                                \
        for (; e + 4 <= m; e += 4) {                                                        \
            V a0 = attn_ld_##SUF(lanes + e * 16), a1 = attn_ld_##SUF(lanes + e * 16 + 16);  \
            V a2 = attn_ld_##SUF(lanes + e * 16 + 32), a3 = attn_ld_##SUF(lanes + e * 16 + 48); \
            for (c = 0; c < n; c++) {                                                       \
                V w = attn_ld_##SUF(coef + c * 16);                                         \
                const T* r = rows + c * row + e;                                            \
                a0 += w * r[0]; a1 += w * r[1]; a2 += w * r[2]; a3 += w * r[3];             \
            }                                                                               \
            attn_st_##SUF(lanes + e * 16, a0); attn_st_##SUF(lanes + e * 16 + 16, a1);      \
            attn_st_##SUF(lanes + e * 16 + 32, a2); attn_st_##SUF(lanes + e * 16 + 48, a3); \
        }                                                                                   \
        for (; e < m; e++) {                                                                \
            V a0 = attn_ld_##SUF(lanes + e * 16);                                           \
            for (c = 0; c < n; c++) a0 += attn_ld_##SUF(coef + c * 16) * rows[c * row + e]; \
            attn_st_##SUF(lanes + e * 16, a0);                                              \
        }                                                                                   \
    }                                                                                       \
    /* d_c[e] += sum_{i<nr} coef[c*16 + i] * src[i*row + e] for four rows d_c, e < m:      \
       dK += dS^T Q and dV += P^T dO, 16 elements of a row at a time */                     \
    static inline void attn_rows_acc4_##SUF(T* d0, T* d1, T* d2, T* d3, const T* coef,     \
                                            const T* src, Py_ssize_t row, Py_ssize_t nr,    \
                                            Py_ssize_t m) {                                 \
        Py_ssize_t e = 0, i;                                                                \
        for (; e + 16 <= m; e += 16) {                                                      \
            V a0 = attn_ld_##SUF(d0 + e), a1 = attn_ld_##SUF(d1 + e);                       \
            V a2 = attn_ld_##SUF(d2 + e), a3 = attn_ld_##SUF(d3 + e);                       \
            for (i = 0; i < nr; i++) {                                                      \
                V r = attn_ld_##SUF(src + i * row + e);                                     \
                a0 += r * coef[i]; a1 += r * coef[16 + i];                                  \
                a2 += r * coef[32 + i]; a3 += r * coef[48 + i];                             \
            }                                                                               \
            attn_st_##SUF(d0 + e, a0); attn_st_##SUF(d1 + e, a1);                           \
            attn_st_##SUF(d2 + e, a2); attn_st_##SUF(d3 + e, a3);                           \
        }                                                                                   \
        for (; e < m; e++) {                                                                \
            T a0 = d0[e], a1 = d1[e], a2 = d2[e], a3 = d3[e];                               \
            for (i = 0; i < nr; i++) {                                                      \
                T r = src[i * row + e];                                                     \
                a0 += r * coef[i]; a1 += r * coef[16 + i];                                  \
                a2 += r * coef[32 + i]; a3 += r * coef[48 + i];                             \
            }                                                                               \
            d0[e] = a0; d1[e] = a1; d2[e] = a2; d3[e] = a3;                                 \
        }                                                                                   \
    }
    ATTN_HELPERS(f, float, attn_vf)
    ATTN_HELPERS(d, double, attn_vd)
    """
    void attn_dots4_f(const float* lanes, const float* r0, const float* r1, const float* r2,
                      const float* r3, Py_ssize_t n, float* out) noexcept nogil
    void attn_dots4_d(const double* lanes, const double* r0, const double* r1,
                      const double* r2, const double* r3, Py_ssize_t n,
                      double* out) noexcept nogil
    void attn_lanes_acc_f(float* lanes, const float* coef, const float* rows, Py_ssize_t row,
                          Py_ssize_t n, Py_ssize_t m) noexcept nogil
    void attn_lanes_acc_d(double* lanes, const double* coef, const double* rows,
                          Py_ssize_t row, Py_ssize_t n, Py_ssize_t m) noexcept nogil
    void attn_rows_acc4_f(float* d0, float* d1, float* d2, float* d3, const float* coef,
                          const float* src, Py_ssize_t row, Py_ssize_t nr,
                          Py_ssize_t m) noexcept nogil
    void attn_rows_acc4_d(double* d0, double* d1, double* d2, double* d3, const double* coef,
                          const double* src, Py_ssize_t row, Py_ssize_t nr,
                          Py_ssize_t m) noexcept nogil


cdef enum:
    BR = 16         # query rows per block: the vector lanes
    BC = 64         # keys per tile of the forward's online softmax
    MASK_NONE = 0
    MASK_BOOL = 1   # attend where nonzero
    MASK_ADD = 2    # added to the scaled scores


cdef struct Problem:
    Py_ssize_t planes, L, S, E, Ev
    Py_ssize_t lanes    # BR, read at run time: gcc would peel a constant 16-trip loop into
                        # scalar code and shuffle it into vectors; a loop it vectorizes
    const int64_t* q_off
    const int64_t* k_off
    const int64_t* v_off
    const int64_t* g_off
    const int64_t* m_off
    Py_ssize_t q_row, k_row, v_row, g_row, m_row, m_col
    int mask_kind
    bint causal
    double scale, keep_scale
    const void* mask
    const uint8_t* keep


# ---------------------------------------------------------------------------------------------
# shared by forward and backward

cdef inline void load_lanes(const real* src, Py_ssize_t row, Py_ssize_t nr, Py_ssize_t n,
                            real* dst) noexcept nogil:
    """dst (n × BR) = the transpose of nr rows of n elements (row stride `row`), zero lanes
    beyond nr."""
    cdef Py_ssize_t i, e
    memset(dst, 0, n * BR * sizeof(real))
    for i in range(nr):
        for e in range(n):
            dst[e * BR + i] = src[i * row + e]


cdef inline void lane_dots4(const real* lanes, const real* rows, Py_ssize_t row, Py_ssize_t nk,
                            Py_ssize_t n, real* out) noexcept nogil:
    """out[c·BR + i] = Σ_e lanes[e·BR + i] · rows[c·row + e] for the nk <= 4 rows c (missing
    rows repeat the first; their lanes are written and ignored)."""
    cdef const real* r1 = rows + row if nk > 1 else rows
    cdef const real* r2 = rows + 2 * row if nk > 2 else rows
    cdef const real* r3 = rows + 3 * row if nk > 3 else rows
    if real is float:
        attn_dots4_f(lanes, rows, r1, r2, r3, n, out)
    else:
        attn_dots4_d(lanes, rows, r1, r2, r3, n, out)


cdef inline void lanes_acc(real* lanes, const real* coef, const real* rows, Py_ssize_t row,
                           Py_ssize_t n, Py_ssize_t m) noexcept nogil:
    """lanes[e·BR + i] += Σ_{c<n} coef[c·BR + i] · rows[c·row + e] for e < m."""
    if real is float:
        attn_lanes_acc_f(lanes, coef, rows, row, n, m)
    else:
        attn_lanes_acc_d(lanes, coef, rows, row, n, m)


cdef inline void rows_acc4(real* dst, Py_ssize_t nk, real* spare, const real* coef,
                           const real* src, Py_ssize_t row, Py_ssize_t nr,
                           Py_ssize_t m) noexcept nogil:
    """Rows c < nk of dst (length m, consecutive) += Σ_{i<nr} coef[c·BR + i] · src row i; the
    missing rows of a group of four go to `spare`."""
    cdef real* d1 = dst + m if nk > 1 else spare
    cdef real* d2 = dst + 2 * m if nk > 2 else spare
    cdef real* d3 = dst + 3 * m if nk > 3 else spare
    if real is float:
        attn_rows_acc4_f(dst, d1, d2, d3, coef, src, row, nr, m)
    else:
        attn_rows_acc4_d(dst, d1, d2, d3, coef, src, row, nr, m)


cdef inline void scores(const Problem* P, const real* qT, const real* k, Py_ssize_t p,
                        Py_ssize_t i0, Py_ssize_t nr, Py_ssize_t j, Py_ssize_t nk,
                        real* s) noexcept nogil:
    """s[c·BR + i] = scale · q_{i0+i} · k_{j+c} (+ mask) for nk <= 4 keys, -inf where masked or
    above the causal diagonal, for the BR lanes of a row block (lanes beyond nr see a zero
    query row)."""
    cdef real sc = <real>P.scale
    cdef Py_ssize_t c, i
    cdef const uint8_t* bm
    cdef const real* fm
    cdef real* sj
    lane_dots4(qT, k + P.k_off[p] + j * P.k_row, P.k_row, nk, P.E, s)
    for c in range(nk):
        sj = s + c * BR
        for i in range(P.lanes):
            sj[i] = sj[i] * sc
        if P.mask_kind == MASK_BOOL:
            bm = <const uint8_t*>P.mask + P.m_off[p] + i0 * P.m_row + (j + c) * P.m_col
            for i in range(nr):
                if bm[i * P.m_row] == 0:
                    sj[i] = -INFINITY
        elif P.mask_kind == MASK_ADD:
            fm = <const real*>P.mask + P.m_off[p] + i0 * P.m_row + (j + c) * P.m_col
            for i in range(nr):
                sj[i] = sj[i] + fm[i * P.m_row]
        if P.causal and j + c > i0:
            for i in range(P.lanes):
                if j + c > i0 + i:
                    sj[i] = -INFINITY


cdef inline Py_ssize_t key_end(const Problem* P, Py_ssize_t i0, Py_ssize_t nr) noexcept nogil:
    """Keys a row block can attend: all, or with the causal mask those j <= its last row."""
    if P.causal and i0 + nr < P.S:
        return i0 + nr
    return P.S


cdef inline real r_log(real x) noexcept nogil:
    if real is float:
        return vlogf(x)
    else:
        return vlog(x)


# ---------------------------------------------------------------------------------------------
# forward

cdef void forward_block(const Problem* P, const real* q, const real* k, const real* v,
                        real* out, real* lse, Py_ssize_t p, Py_ssize_t i0,
                        real* work) noexcept nogil:
    """Output rows [i0, i0 + BR) of plane p and their logsumexp, by online softmax."""
    cdef Py_ssize_t E = P.E, Ev = P.Ev, L = P.L, S = P.S
    cdef Py_ssize_t nr = BR if i0 + BR <= L else L - i0
    cdef real* qT = work                 # E × BR
    cdef real* oT = work + E * BR        # Ev × BR: unnormalised output
    cdef real* s = oT + Ev * BR          # BC × BR: a tile of scores, then weights
    cdef real m[BR]
    cdef real l[BR]
    cdef real top[BR]
    cdef real shift[BR]
    cdef real x, z
    cdef Py_ssize_t i, e, t, j0, jj, nc, jend = key_end(P, i0, nr)
    cdef const real* vrow
    cdef real* orow
    cdef const uint8_t* keep
    load_lanes(q + P.q_off[p] + i0 * P.q_row, P.q_row, nr, E, qT)
    memset(oT, 0, Ev * BR * sizeof(real))
    for i in range(P.lanes):
        m[i] = -INFINITY
        l[i] = 0
    for t in range((jend + BC - 1) // BC):
        j0 = t * BC
        nc = BC if j0 + BC <= jend else jend - j0
        for jj in range(0, nc, 4):
            scores(P, qT, k, p, i0, nr, j0 + jj, 4 if jj + 4 <= nc else nc - jj, s + jj * BR)
        for i in range(P.lanes):
            top[i] = m[i]
        for jj in range(nc):
            for i in range(P.lanes):
                x = s[jj * BR + i]
                top[i] = x if (x > top[i]) | (x != x) else top[i]   # NaN wins, as in max
        for i in range(P.lanes):
            # a row masked so far has max -inf: shift by 0 so exp(-inf - 0) gives 0, not NaN
            shift[i] = 0 if top[i] == -INFINITY else top[i]
            x = r_exp(m[i] - shift[i])
            m[i] = top[i]
            l[i] = l[i] * x
            top[i] = x                   # the rescaling factor of the earlier sums
        for e in range(Ev):
            for i in range(P.lanes):
                oT[e * BR + i] = oT[e * BR + i] * top[i]
        for jj in range(nc):
            for i in range(P.lanes):
                x = r_exp(s[jj * BR + i] - shift[i])
                s[jj * BR + i] = x
                l[i] = l[i] + x
        if P.keep != NULL:               # dropout after the normalising sum, as torch
            z = <real>P.keep_scale
            keep = P.keep + (p * L + i0) * S + j0
            for i in range(nr):
                for jj in range(nc):
                    s[jj * BR + i] = s[jj * BR + i] * keep[i * S + jj] * z
        lanes_acc(oT, s, v + P.v_off[p] + j0 * P.v_row, P.v_row, nc, Ev)
    for i in range(nr):
        orow = out + (p * L + i0 + i) * Ev
        if l[i] == 0:                    # every key masked: zeros (torch's safe softmax)
            for e in range(Ev):
                orow[e] = 0
            lse[p * L + i0 + i] = -INFINITY
        else:
            for e in range(Ev):
                orow[e] = oT[e * BR + i] / l[i]
            lse[p * L + i0 + i] = m[i] + r_log(l[i])


cdef void forward_run(const Problem* P, const real* q, const real* k, const real* v, real* out,
                      real* lse, int nt) noexcept nogil:
    cdef Py_ssize_t blocks = (P.L + BR - 1) // BR, t
    cdef Py_ssize_t words = (P.E + P.Ev + BC) * BR
    cdef real* work = NULL
    if nt == 1:
        work = <real*>malloc(words * sizeof(real))
        for t in range(P.planes * blocks):
            forward_block(P, q, k, v, out, lse, t // blocks, (t % blocks) * BR, work)
        free(work)
        return
    with parallel(num_threads=nt):
        work = <real*>malloc(words * sizeof(real))
        for t in prange(P.planes * blocks, schedule="dynamic"):
            forward_block(P, q, k, v, out, lse, t // blocks, (t % blocks) * BR, work)
        free(work)


# ---------------------------------------------------------------------------------------------
# backward

cdef void backward_block(const Problem* P, const real* g, const real* q, const real* k,
                         const real* v, const real* out, const real* lse, real* dq, real* dk,
                         real* dv, Py_ssize_t p, Py_ssize_t i0, real* work) noexcept nogil:
    """Rows [i0, i0 + BR) of plane p: their dQ, and their share of the plane's dK and dV."""
    cdef Py_ssize_t E = P.E, Ev = P.Ev, L = P.L, S = P.S
    cdef Py_ssize_t nr = BR if i0 + BR <= L else L - i0
    cdef real* qT = work                 # E × BR
    cdef real* gT = work + E * BR        # Ev × BR
    cdef real* dqT = gT + Ev * BR        # E × BR
    cdef real s4[4 * BR]                 # scores of four keys
    cdef real dp4[4 * BR]                # dO · v of four keys
    cdef real wd4[4 * BR]                # their weights after dropout
    cdef real ds4[4 * BR]                # dS
    cdef real dsk4[4 * BR]               # dS · scale
    cdef real* spare = dqT + E * BR      # a row for the missing keys of a group of four
    cdef real top[BR]                    # logsumexp, +inf for empty lanes and masked rows
    cdef real dot[BR]                    # D = dO · O
    cdef real x, sc = <real>P.scale
    cdef Py_ssize_t i, e, c, j0, nk, jend = key_end(P, i0, nr)
    cdef const real* orow
    cdef const uint8_t* keep = P.keep + (p * L + i0) * S if P.keep != NULL else NULL
    load_lanes(q + P.q_off[p] + i0 * P.q_row, P.q_row, nr, E, qT)
    load_lanes(g + P.g_off[p] + i0 * P.g_row, P.g_row, nr, Ev, gT)
    memset(dqT, 0, E * BR * sizeof(real))
    for i in range(P.lanes):
        top[i] = INFINITY
        dot[i] = 0
    for i in range(nr):
        x = lse[p * L + i0 + i]
        top[i] = INFINITY if x == -INFINITY else x
        orow = out + (p * L + i0 + i) * Ev
        for e in range(Ev):
            dot[i] = dot[i] + gT[e * BR + i] * orow[e]
    for j0 in range(0, jend, 4):
        nk = 4 if j0 + 4 <= jend else jend - j0
        scores(P, qT, k, p, i0, nr, j0, nk, s4)
        lane_dots4(gT, v + P.v_off[p] + j0 * P.v_row, P.v_row, nk, Ev, dp4)
        for c in range(nk):
            key_weights(P, nr, j0 + c, s4 + c * BR, dp4 + c * BR, top, dot, keep,
                        wd4 + c * BR, ds4 + c * BR, dsk4 + c * BR)
        rows_acc4(dk + (p * S + j0) * E, nk, spare, dsk4, q + P.q_off[p] + i0 * P.q_row,
                  P.q_row, nr, E)
        rows_acc4(dv + (p * S + j0) * Ev, nk, spare, wd4, g + P.g_off[p] + i0 * P.g_row,
                  P.g_row, nr, Ev)
        lanes_acc(dqT, ds4, k + P.k_off[p] + j0 * P.k_row, P.k_row, nk, E)
    for i in range(nr):
        for e in range(E):
            dq[(p * L + i0 + i) * E + e] = dqT[e * BR + i] * sc


cdef inline void key_weights(const Problem* P, Py_ssize_t nr, Py_ssize_t j, const real* s,
                             const real* dp, const real* top, const real* dot,
                             const uint8_t* keep, real* wd, real* ds,
                             real* dsk) noexcept nogil:
    """Key j's weights for a row block from its scores s and dO · v_j (dp): the weights after
    dropout (wd), dS = P ∘ (dP - D) and dS · scale (dsk)."""
    cdef Py_ssize_t i
    cdef real w, x, sc = <real>P.scale, z = <real>P.keep_scale
    for i in range(P.lanes):            # (lanes beyond nr have weight 0: top = +inf)
        w = r_exp(s[i] - top[i])
        wd[i] = w
        ds[i] = w * (dp[i] - dot[i])
    if keep != NULL:                     # a separate loop keeps the one above vectorized
        for i in range(nr):
            x = keep[i * P.S + j] * z
            ds[i] = wd[i] * (dp[i] * x - dot[i])
            wd[i] = wd[i] * x
    for i in range(P.lanes):
        dsk[i] = ds[i] * sc

cdef void backward_plane(const Problem* P, const real* g, const real* q, const real* k,
                         const real* v, const real* out, const real* lse, real* dq, real* dk,
                         real* dv, Py_ssize_t p, real* work) noexcept nogil:
    cdef Py_ssize_t b
    memset(dk + p * P.S * P.E, 0, P.S * P.E * sizeof(real))
    memset(dv + p * P.S * P.Ev, 0, P.S * P.Ev * sizeof(real))
    for b in range((P.L + BR - 1) // BR):
        backward_block(P, g, q, k, v, out, lse, dq, dk, dv, p, b * BR, work)


cdef void backward_run(const Problem* P, const real* g, const real* q, const real* k,
                       const real* v, const real* out, const real* lse, real* dq, real* dk,
                       real* dv, int nt) noexcept nogil:
    cdef Py_ssize_t words = (2 * P.E + P.Ev) * BR + max(P.E, P.Ev), p
    cdef real* work = NULL
    if nt == 1:
        work = <real*>malloc(words * sizeof(real))
        for p in range(P.planes):
            backward_plane(P, g, q, k, v, out, lse, dq, dk, dv, p, work)
        free(work)
        return
    with parallel(num_threads=nt):
        work = <real*>malloc(words * sizeof(real))
        for p in prange(P.planes, schedule="dynamic"):
            backward_plane(P, g, q, k, v, out, lse, dq, dk, dv, p, work)
        free(work)


# ---------------------------------------------------------------------------------------------
# entry points: checks, then the kernels without the GIL

cdef int check_float(cnp.ndarray a, int dt, str what, bint writable=False) except -1:
    if buffer_dtype(a, "attention", writable) != dt:
        raise TypeError(f"attention: {what} must have the dtype of q ({DTYPE_NAMES[dt]})")
    return 0


cdef int check_size(cnp.ndarray a, Py_ssize_t n, str what) except -1:
    if cnp.PyArray_SIZE(a) != n:
        raise ValueError(f"attention: {what} has {cnp.PyArray_SIZE(a)} elements, expected {n}")
    return 0


def _offsets(view, Py_ssize_t planes, Py_ssize_t rows, Py_ssize_t cols, Py_ssize_t size,
             str what):
    """A view (offsets, row stride[, column stride]) as (int64 offsets, row, col), checked to
    stay inside a buffer of `size` elements."""
    offsets = np.ascontiguousarray(view[0], dtype=np.int64).reshape(-1)
    row = int(view[1])
    col = int(view[2]) if len(view) > 2 else 1
    if offsets.size != planes:
        raise ValueError(f"attention: {what} has {offsets.size} plane offsets, expected {planes}")
    if planes and rows and cols:
        lo = offsets + min(0, (rows - 1) * row) + min(0, (cols - 1) * col)
        hi = offsets + max(0, (rows - 1) * row) + max(0, (cols - 1) * col)
        if lo.min() < 0 or hi.max() >= size:
            raise ValueError(f"attention: the view of {what} reaches outside its buffer")
    return offsets, row, col


cdef int float_dtype(cnp.ndarray q) except -1:
    """q's dtype code, which must be float32 or float64 (every other operand must match it)."""
    cdef int dt = buffer_dtype(q, "attention")
    if dt != DT_F32 and dt != DT_F64:
        raise TypeError(f"attention: unsupported dtype {DTYPE_NAMES[dt]} (float32 or float64 "
                        "only)")
    return dt


cdef object setup(Problem* P, int dt, cnp.ndarray q, cnp.ndarray k, cnp.ndarray v, sizes,
                  q_view, k_view, v_view, double scale, bint causal, mask, mask_view, keep,
                  double keep_scale):
    """Fill P from the arguments after checking them; returns the objects P points into."""
    P.planes, P.L, P.S, P.E, P.Ev = (int(n) for n in sizes)
    P.lanes = BR
    if P.planes < 0 or P.L < 0 or P.S < 0 or P.E < 0 or P.Ev < 0:
        raise ValueError(f"attention: negative size in {tuple(sizes)}")
    check_float(k, dt, "k")
    check_float(v, dt, "v")
    qo, P.q_row, _ = _offsets(q_view, P.planes, P.L, P.E, cnp.PyArray_SIZE(q), "q")
    ko, P.k_row, _ = _offsets(k_view, P.planes, P.S, P.E, cnp.PyArray_SIZE(k), "k")
    vo, P.v_row, _ = _offsets(v_view, P.planes, P.S, P.Ev, cnp.PyArray_SIZE(v), "v")
    P.q_off = <const int64_t*>cnp.PyArray_DATA(qo)
    P.k_off = <const int64_t*>cnp.PyArray_DATA(ko)
    P.v_off = <const int64_t*>cnp.PyArray_DATA(vo)
    P.scale, P.causal, P.keep_scale = scale, causal, keep_scale
    P.mask_kind, P.mask, P.m_off, P.keep = MASK_NONE, NULL, NULL, NULL
    P.m_row = P.m_col = 0
    mo = None
    if mask is not None:
        if causal:
            raise ValueError("attention: a mask and causal=True exclude each other")
        mdt = buffer_dtype(mask, "attention")
        if mdt != DT_BOOL and mdt != dt:
            raise TypeError(f"attention: mask must be bool or have the dtype of q "
                            f"({DTYPE_NAMES[dt]})")
        P.mask_kind = MASK_BOOL if mdt == DT_BOOL else MASK_ADD
        mo, P.m_row, P.m_col = _offsets(mask_view, P.planes, P.L, P.S,
                                        cnp.PyArray_SIZE(mask), "mask")
        P.m_off = <const int64_t*>cnp.PyArray_DATA(mo)
        P.mask = cnp.PyArray_DATA(mask)
    if keep is not None:
        if buffer_dtype(keep, "attention") != DT_BOOL:
            raise TypeError("attention: keep must be a bool buffer")
        check_size(keep, P.planes * P.L * P.S, "keep")
        P.keep = <const uint8_t*>cnp.PyArray_DATA(keep)
    return (qo, ko, vo, mo)


def attention_forward(cnp.ndarray q, cnp.ndarray k, cnp.ndarray v, cnp.ndarray out,
                      cnp.ndarray lse, sizes, q_view, k_view, v_view, double scale,
                      bint causal=False, mask=None, mask_view=None, keep=None,
                      double keep_scale=1.0):
    """out (planes, L, Ev) = softmax(scale · q kᵀ + mask) v per plane, lse (planes, L) = each
    row's logsumexp (-inf for a row with every key masked, whose output is 0); see
    minitorch.backend.KernelBackend.attention_forward."""
    cdef int dt = float_dtype(q)
    cdef Problem P
    keep_alive = setup(&P, dt, q, k, v, sizes, q_view, k_view, v_view, scale, causal, mask,
                       mask_view, keep, keep_scale)
    check_float(out, dt, "out", True)
    check_float(lse, dt, "lse", True)
    check_size(out, P.planes * P.L * P.Ev, "out")
    check_size(lse, P.planes * P.L, "lse")
    cdef int nt = threads_for(P.planes * P.L * P.S * (P.E + P.Ev)) if P.planes * P.L > BR else 1
    cdef const void* pq = cnp.PyArray_DATA(q)
    cdef const void* pk = cnp.PyArray_DATA(k)
    cdef const void* pv = cnp.PyArray_DATA(v)
    cdef void* po = cnp.PyArray_DATA(out)
    cdef void* pl = cnp.PyArray_DATA(lse)
    with nogil:
        if dt == DT_F32:
            forward_run(&P, <const float*>pq, <const float*>pk, <const float*>pv, <float*>po,
                        <float*>pl, nt)
        else:
            forward_run(&P, <const double*>pq, <const double*>pk, <const double*>pv,
                        <double*>po, <double*>pl, nt)
    del keep_alive


def attention_backward(cnp.ndarray g, cnp.ndarray q, cnp.ndarray k, cnp.ndarray v,
                       cnp.ndarray out, cnp.ndarray lse, cnp.ndarray dq, cnp.ndarray dk,
                       cnp.ndarray dv, sizes, g_view, q_view, k_view, v_view, double scale,
                       bint causal=False, mask=None, mask_view=None, keep=None,
                       double keep_scale=1.0):
    """dq (planes, L, E), dk (planes, S, E), dv (planes, S, Ev) = the gradients of
    attention_forward from the output gradient g, its out and lse; see
    minitorch.backend.KernelBackend.attention_backward."""
    cdef int dt = float_dtype(q)
    cdef Problem P
    keep_alive = setup(&P, dt, q, k, v, sizes, q_view, k_view, v_view, scale, causal, mask,
                       mask_view, keep, keep_scale)
    check_float(g, dt, "g")
    go, P.g_row, _ = _offsets(g_view, P.planes, P.L, P.Ev, cnp.PyArray_SIZE(g), "g")
    P.g_off = <const int64_t*>cnp.PyArray_DATA(go)
    check_float(out, dt, "out")
    check_float(lse, dt, "lse")
    check_size(out, P.planes * P.L * P.Ev, "out")
    check_size(lse, P.planes * P.L, "lse")
    for buffer, n, what in ((dq, P.planes * P.L * P.E, "dq"), (dk, P.planes * P.S * P.E, "dk"),
                            (dv, P.planes * P.S * P.Ev, "dv")):
        check_float(buffer, dt, what, True)
        check_size(buffer, n, what)
    cdef int nt = threads_for(P.planes * P.L * P.S * (P.E + P.Ev)) if P.planes > 1 else 1
    cdef const void* pg = cnp.PyArray_DATA(g)
    cdef const void* pq = cnp.PyArray_DATA(q)
    cdef const void* pk = cnp.PyArray_DATA(k)
    cdef const void* pv = cnp.PyArray_DATA(v)
    cdef const void* po = cnp.PyArray_DATA(out)
    cdef const void* pl = cnp.PyArray_DATA(lse)
    cdef void* pdq = cnp.PyArray_DATA(dq)
    cdef void* pdk = cnp.PyArray_DATA(dk)
    cdef void* pdv = cnp.PyArray_DATA(dv)
    with nogil:
        if dt == DT_F32:
            backward_run(&P, <const float*>pg, <const float*>pq, <const float*>pk,
                         <const float*>pv, <const float*>po, <const float*>pl, <float*>pdq,
                         <float*>pdk, <float*>pdv, nt)
        else:
            backward_run(&P, <const double*>pg, <const double*>pq, <const double*>pk,
                         <const double*>pv, <const double*>po, <const double*>pl,
                         <double*>pdq, <double*>pdk, <double*>pdv, nt)
    del keep_alive, go
