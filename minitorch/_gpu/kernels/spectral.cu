// Spectral kernels on batches of compact row-major matrices: the symmetric eigendecomposition
// (two-sided cyclic Jacobi), the SVD (one-sided Hestenes Jacobi), the Householder QR and the
// formation of Q. The algorithms, orders of operations and tie rules are the CPU backend's
// (minitorch/_cpu/spectral.pyx); the docstrings there explain them.
//
// One block of THREADS per matrix (grid-strided over the batch). The Jacobi kernels take the
// n/2 disjoint pairs of a round-robin step at once: the pairs' rotations go to the matrix's
// `work` row, then the block applies them all to the rows/columns involved. Every loop that
// holds a barrier has a trip count that all threads read from the same memory after a barrier,
// so the barriers never diverge.
#include "common.cuh"

#define MAX_SWEEPS 100

MATH1(fabs) MATH1(sqrt) MATH2(hypot)

template <typename T> __device__ __forceinline__ T machine_eps();
template <> __device__ __forceinline__ float machine_eps<float>() {
    return 1.1920928955078125e-07f;
}
template <> __device__ __forceinline__ double machine_eps<double>() {
    return 2.220446049250313e-16;
}
template <typename T> __device__ __forceinline__ T smallest_normal();
template <> __device__ __forceinline__ float smallest_normal<float>() {
    return 1.1754943508222875e-38f;
}
template <> __device__ __forceinline__ double smallest_normal<double>() {
    return 2.2250738585072014e-308;
}

// The i-th pair p < q of round `step` of the tournament among n players (plus a dummy when n is
// odd: seat 0 stays, the others turn); false when it meets the dummy.
__device__ __forceinline__ bool tournament_pair(i64 i, i64 step, i64 n, i64* p, i64* q) {
    i64 players = n + (n & 1);
    i64 x = i == 0 ? 0 : (i - 1 + step) % (players - 1) + 1;
    i64 j = players - 1 - i;
    i64 y = j == 0 ? 0 : (j - 1 + step) % (players - 1) + 1;
    *p = x < y ? x : y;
    *q = x < y ? y : x;
    return *q < n;
}

// (c, s) of J = [[c, s], [-s, c]] making J^T [[app, apq], [apq, aqq]] J diagonal; false (and
// s = 0) when apq is negligible against the diagonal, or NaN.
template <typename T>
__device__ __forceinline__ bool jacobi_rotation(T app, T aqq, T apq, T tol, T* c, T* s) {
    *c = T(1);
    *s = T(0);
    if (!(m_fabs(apq) > tol * m_sqrt(m_fabs(app)) * m_sqrt(m_fabs(aqq))) ||
        m_fabs(apq) < smallest_normal<T>())
        return false;
    T tau = (aqq - app) / (T(2) * apq);
    T t = (tau >= T(0) ? T(1) : T(-1)) / (m_fabs(tau) + m_hypot(T(1), tau));
    *c = T(1) / m_sqrt(T(1) + t * t);
    *s = t * *c;
    return *s != T(0);
}

// Items (pair i, index k) of a step: rows or columns p, q rotated by the pair's (c, s) in
// `rot` (s == 0: the pair is left alone). `stride_k` steps along the rotated vectors, `stride_pq`
// picks them; the element (p, q) / (q, p) is set to exactly 0 when `zero_at` names its k.
template <typename T>
__device__ void apply_rotations(T* a, const T* rot, i64 n_pairs, i64 len, i64 n, i64 step,
                                i64 stride_k, i64 stride_pq, bool zero_off_diagonal) {
    for (i64 item = threadIdx.x; item < n_pairs * len; item += THREADS) {
        i64 i = item / len, k = item - i * len, p, q;
        T c = rot[2 * i], s = rot[2 * i + 1];
        if (s == T(0) || !tournament_pair(i, step, n, &p, &q)) continue;
        T* x = a + k * stride_k + p * stride_pq;
        T* y = a + k * stride_k + q * stride_pq;
        T xv = *x, yv = *y;
        *x = c * xv - s * yv;
        *y = s * xv + c * yv;
        if (zero_off_diagonal && k == q) *x = T(0);
        if (zero_off_diagonal && k == p) *y = T(0);
    }
}

// v (rows x cols) = the identity's first cols columns.
template <typename T>
__device__ void set_identity(T* v, i64 rows, i64 cols) {
    for (i64 item = threadIdx.x; item < rows * cols; item += THREADS) {
        i64 i = item / cols, j = item - i * cols;
        v[item] = i == j ? T(1) : T(0);
    }
}

// Selection sort of w (first extreme wins ties) swapping the columns of v (n x n) and, unless
// null, of u (rows x n) along: thread 0 picks, the block swaps.
template <typename T>
__device__ void sort_with_columns(T* w, T* u, i64 rows, T* v, i64 n, bool descending) {
    __shared__ i64 pick;
    for (i64 i = 0; i < n; ++i) {
        if (threadIdx.x == 0) {
            pick = i;
            for (i64 j = i + 1; j < n; ++j)
                if (descending ? w[j] > w[pick] : w[j] < w[pick]) pick = j;
        }
        __syncthreads();
        i64 j = pick;
        if (j != i) {
            for (i64 k = threadIdx.x; k < n + (u ? rows : 0); k += THREADS) {
                T* m = k < n ? v : u;
                i64 r = k < n ? k : k - n;
                T t = m[r * n + i];
                m[r * n + i] = m[r * n + j];
                m[r * n + j] = t;
            }
            if (threadIdx.x == 0) {
                T t = w[i];
                w[i] = w[j];
                w[j] = t;
            }
        }
        __syncthreads();
    }
}

// ---------------------------------------------------------------------------------------------
// symmetric eigendecomposition

// values (ascending), vectors (columns) of each symmetric n x n matrix of a, read from its lower
// triangle (a is overwritten); work holds n + (n & 1) entries per matrix; info 1: no convergence.
template <typename T>
__global__ void eigh_jacobi_kernel(T* __restrict__ a, T* __restrict__ values,
                                   T* __restrict__ vectors, i64* __restrict__ info,
                                   T* __restrict__ work, i64 batch, i64 n) {
    __shared__ int rotated;
    i64 players = n + (n & 1), n_pairs = players / 2;
    for (i64 b = blockIdx.x; b < batch; b += gridDim.x) {
        T* m = a + b * n * n;
        T* v = vectors + b * n * n;
        T* rot = work + b * players;
        for (i64 item = threadIdx.x; item < n * n; item += THREADS) {
            i64 i = item / n, j = item - i * n;
            if (j > i) m[item] = m[j * n + i];
        }
        set_identity(v, n, n);
        i64 status = 1;
        for (int sweep = 0; sweep < MAX_SWEEPS; ++sweep) {
            if (threadIdx.x == 0) rotated = 0;
            __syncthreads();
            for (i64 step = 0; step < players - 1; ++step) {
                for (i64 i = threadIdx.x; i < n_pairs; i += THREADS) {
                    i64 p, q;
                    T c = T(1), s = T(0);
                    if (tournament_pair(i, step, n, &p, &q) &&
                        jacobi_rotation(m[p * n + p], m[q * n + q], m[p * n + q],
                                        machine_eps<T>(), &c, &s))
                        rotated = 1;
                    rot[2 * i] = c;
                    rot[2 * i + 1] = s;
                }
                __syncthreads();
                apply_rotations(m, rot, n_pairs, n, n, step, n, 1, false);   // A J
                apply_rotations(v, rot, n_pairs, n, n, step, n, 1, false);   // V J
                __syncthreads();
                apply_rotations(m, rot, n_pairs, n, n, step, 1, n, true);    // J^T (A J)
                __syncthreads();
            }
            bool done = rotated == 0;
            __syncthreads();        // everyone has read the flag before thread 0 resets it
            if (done) {
                status = 0;
                break;
            }
        }
        T* w = values + b * n;
        for (i64 i = threadIdx.x; i < n; i += THREADS) w[i] = m[i * n + i];
        if (threadIdx.x == 0) info[b] = status;
        __syncthreads();
        sort_with_columns(w, (T*)nullptr, 0, v, n, false);
    }
}

// ---------------------------------------------------------------------------------------------
// singular value decomposition

template <typename T>
__device__ __forceinline__ T column_dot(const T* a, i64 m, i64 n, i64 i, i64 j) {
    T total = T(0);
    for (i64 k = 0; k < m; ++k) total += a[k * n + i] * a[k * n + j];
    return total;
}

// Column j of u (m x n) = a unit vector orthogonal to the orthonormal columns 0..j-1 (the unit
// vector e_k they cover least, Gram-Schmidt twice, normalised); dots: n scratch entries.
template <typename T>
__device__ void complete_column(T* u, i64 m, i64 n, i64 j, T* dots) {
    __shared__ i64 best;
    __shared__ T norm;
    if (threadIdx.x == 0) {
        T least = T(0);
        for (i64 k = 0; k < m; ++k) {
            T energy = T(0);
            for (i64 i = 0; i < j; ++i) energy += u[k * n + i] * u[k * n + i];
            if (k == 0 || energy < least) {
                least = energy;
                best = k;
            }
        }
    }
    __syncthreads();
    for (i64 k = threadIdx.x; k < m; k += THREADS) u[k * n + j] = k == best ? T(1) : T(0);
    __syncthreads();
    for (int pass = 0; pass < 2; ++pass) {
        for (i64 i = threadIdx.x; i < j; i += THREADS) dots[i] = column_dot(u, m, n, i, j);
        __syncthreads();
        for (i64 k = threadIdx.x; k < m; k += THREADS) {
            T x = u[k * n + j];
            for (i64 i = 0; i < j; ++i) x -= dots[i] * u[k * n + i];
            u[k * n + j] = x;
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) norm = m_sqrt(column_dot(u, m, n, j, j));
    __syncthreads();
    for (i64 k = threadIdx.x; k < m; k += THREADS) u[k * n + j] /= norm;
    __syncthreads();
}

// Each m x n matrix (m >= n) of a becomes U, s its singular values (descending), v V, so that
// a = U diag(s) V^T; work holds n + (n & 1) entries per matrix; info 1: no convergence.
template <typename T>
__global__ void svd_jacobi_kernel(T* __restrict__ a, T* __restrict__ s, T* __restrict__ v,
                                  i64* __restrict__ info, T* __restrict__ work, i64 batch,
                                  i64 m, i64 n) {
    __shared__ int rotated;
    i64 players = n + (n & 1), n_pairs = players / 2;
    T tol = m_sqrt(T(m)) * machine_eps<T>();
    for (i64 b = blockIdx.x; b < batch; b += gridDim.x) {
        T* u = a + b * m * n;
        T* vb = v + b * n * n;
        T* rot = work + b * players;
        set_identity(vb, n, n);
        i64 status = 1;
        for (int sweep = 0; sweep < MAX_SWEEPS; ++sweep) {
            if (threadIdx.x == 0) rotated = 0;
            __syncthreads();
            for (i64 step = 0; step < players - 1; ++step) {
                for (i64 i = threadIdx.x; i < n_pairs; i += THREADS) {
                    i64 p, q;
                    T c = T(1), sn = T(0);
                    if (tournament_pair(i, step, n, &p, &q)) {
                        T alpha = T(0), beta = T(0), gamma = T(0);
                        for (i64 k = 0; k < m; ++k) {
                            T x = u[k * n + p], y = u[k * n + q];
                            alpha += x * x;
                            beta += y * y;
                            gamma += x * y;
                        }
                        if (jacobi_rotation(alpha, beta, gamma, tol, &c, &sn)) rotated = 1;
                    }
                    rot[2 * i] = c;
                    rot[2 * i + 1] = sn;
                }
                __syncthreads();
                apply_rotations(u, rot, n_pairs, m, n, step, n, 1, false);
                apply_rotations(vb, rot, n_pairs, n, n, step, n, 1, false);
                __syncthreads();
            }
            bool done = rotated == 0;
            __syncthreads();
            if (done) {
                status = 0;
                break;
            }
        }
        T* sb = s + b * n;
        for (i64 i = threadIdx.x; i < n; i += THREADS) sb[i] = m_sqrt(column_dot(u, m, n, i, i));
        if (threadIdx.x == 0) info[b] = status;
        __syncthreads();
        sort_with_columns(sb, u, m, vb, n, true);
        for (i64 item = threadIdx.x; item < m * n; item += THREADS) {
            i64 j = item % n;
            if (sb[j] > smallest_normal<T>()) u[item] /= sb[j];
        }
        __syncthreads();
        for (i64 j = 0; j < n; ++j)     // zero columns, sorted last, complete the orthonormal set
            if (!(sb[j] > smallest_normal<T>())) complete_column(u, m, n, j, rot);
    }
}

// ---------------------------------------------------------------------------------------------
// Householder QR

// Sum of v over the block (every thread gets it); red: THREADS shared entries.
template <typename T>
__device__ T block_sum(T v, T* red) {
    red[threadIdx.x] = v;
    __syncthreads();
    for (int half = THREADS / 2; half > 0; half >>= 1) {
        if (threadIdx.x < half) red[threadIdx.x] += red[threadIdx.x + half];
        __syncthreads();
    }
    T total = red[0];
    __syncthreads();
    return total;
}

// LAPACK's geqrf, unblocked: each m x n matrix of a becomes R (on and above the diagonal) and
// the reflectors v_k = [1, a[k+1:, k]] (below), H_k = I - tau_k v_k v_k^T; work: n per matrix.
template <typename T>
__global__ void qr_householder_kernel(T* __restrict__ a, T* __restrict__ tau,
                                      T* __restrict__ work, i64 batch, i64 m, i64 n) {
    __shared__ T red[THREADS];
    __shared__ T scale;
    i64 kmax = m < n ? m : n;
    for (i64 b = blockIdx.x; b < batch; b += gridDim.x) {
        T* x = a + b * m * n;
        T* t = tau + b * kmax;
        T* w = work + b * n;
        for (i64 k = 0; k < kmax; ++k) {
            T partial = T(0);
            for (i64 i = k + 1 + threadIdx.x; i < m; i += THREADS)
                partial += x[i * n + k] * x[i * n + k];
            T xnorm = m_sqrt(block_sum(partial, red));
            if (xnorm == T(0)) {        // the same value in every thread: a uniform branch
                if (threadIdx.x == 0) t[k] = T(0);
                continue;
            }
            if (threadIdx.x == 0) {
                T alpha = x[k * n + k];
                T beta = alpha >= T(0) ? -m_hypot(alpha, xnorm) : m_hypot(alpha, xnorm);
                t[k] = (beta - alpha) / beta;
                scale = T(1) / (alpha - beta);
                x[k * n + k] = beta;
            }
            __syncthreads();
            for (i64 i = k + 1 + threadIdx.x; i < m; i += THREADS) x[i * n + k] *= scale;
            __syncthreads();
            T tk = t[k];
            for (i64 j = k + 1 + threadIdx.x; j < n; j += THREADS) {
                T total = x[k * n + j];
                for (i64 i = k + 1; i < m; ++i) total += x[i * n + k] * x[i * n + j];
                w[j] = tk * total;
            }
            __syncthreads();
            i64 cols = n - k - 1;
            for (i64 item = threadIdx.x; item < (m - k) * cols; item += THREADS) {
                i64 i = k + item / cols, j = k + 1 + item % cols;
                x[i * n + j] -= w[j] * (i == k ? T(1) : x[i * n + k]);
            }
            __syncthreads();
        }
    }
}

// q (m x cols) = the first cols columns of H_0 ... H_{K-1} from qr_householder's a and tau,
// applied to the identity from the last reflector back (LAPACK's orgqr); work: cols per matrix.
template <typename T>
__global__ void qr_form_q_kernel(const T* __restrict__ a, const T* __restrict__ tau,
                                 T* __restrict__ q, T* __restrict__ work, i64 batch, i64 m,
                                 i64 n, i64 cols) {
    i64 kmax = m < n ? m : n;
    for (i64 b = blockIdx.x; b < batch; b += gridDim.x) {
        const T* x = a + b * m * n;
        const T* t = tau + b * kmax;
        T* qb = q + b * m * cols;
        T* w = work + b * cols;
        set_identity(qb, m, cols);
        __syncthreads();
        for (i64 k = kmax - 1; k >= 0; --k) {
            T tk = t[k];
            if (tk == T(0)) continue;    // read from global by every thread: uniform
            for (i64 j = k + threadIdx.x; j < cols; j += THREADS) {
                T total = qb[k * cols + j];
                for (i64 i = k + 1; i < m; ++i) total += x[i * n + k] * qb[i * cols + j];
                w[j] = tk * total;
            }
            __syncthreads();
            i64 width = cols - k;
            for (i64 item = threadIdx.x; item < (m - k) * width; item += THREADS) {
                i64 i = k + item / width, j = k + item % width;
                qb[i * cols + j] -= w[j] * (i == k ? T(1) : x[i * n + k]);
            }
            __syncthreads();
        }
    }
}
