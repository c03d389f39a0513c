# cython: cdivision=True
"""Spectral CPU kernels on batches of compact row-major float32/float64 matrices: the symmetric
eigendecomposition (two-sided cyclic Jacobi), the SVD (one-sided Hestenes Jacobi) and the
Householder QR with the formation of Q (torch.linalg.eigh, svd, qr and what builds on them).

Both Jacobi kernels visit the pairs (p, q) in the round-robin tournament order (players 0..n-1,
plus a dummy when n is odd; in each of the n - 1 steps of a sweep every player meets one other).
The pairs of one step are disjoint, so their rotations commute: here they run one after
another, on the GPU at the same time, and both backends compute the same thing. A pair is left
alone when its off-diagonal entry is negligible against the diagonal ones (a relative test, so
small eigen/singular values keep their relative accuracy); a sweep without a rotation ends the
iteration, and MAX_SWEEPS sweeps without that set the matrix's info flag.
"""
cimport numpy as cnp
from cython.parallel cimport prange
from libc.math cimport fabs, hypot, sqrt
from libc.stdint cimport int64_t

from minitorch._cpu.common cimport (buffer_dtype, DT_F32, DT_F64, DT_I64, omp_get_max_threads,
                                      PARALLEL_MIN_ELEMENTS)

cnp.import_array()

DTYPE_NAMES = ("float32", "float64", "int64", "bool")

cdef enum:
    MAX_SWEEPS = 100

ctypedef fused real:
    float
    double


cdef inline double eps_of(real x) noexcept nogil:
    """The machine epsilon of x's type."""
    if real is float:
        return 1.1920928955078125e-07
    return 2.220446049250313e-16


cdef inline double tiny_of(real x) noexcept nogil:
    """The smallest normal number of x's type."""
    if real is float:
        return 1.1754943508222875e-38
    return 2.2250738585072014e-308


cdef inline Py_ssize_t seat(Py_ssize_t position, Py_ssize_t step,
                            Py_ssize_t players) noexcept nogil:
    """Who sits at `position` in round `step` of the tournament: seat 0 stays, the rest turn."""
    if position == 0:
        return 0
    return (position - 1 + step) % (players - 1) + 1


cdef inline bint tournament_pair(Py_ssize_t i, Py_ssize_t step, Py_ssize_t n, Py_ssize_t* p,
                                 Py_ssize_t* q) noexcept nogil:
    """p < q = the i-th pair of round `step` among n players; False when it meets the dummy."""
    cdef Py_ssize_t players = n + (n & 1)
    cdef Py_ssize_t x = seat(i, step, players), y = seat(players - 1 - i, step, players)
    if x > y:
        x, y = y, x
    p[0] = x
    q[0] = y
    return y < n


cdef inline bint jacobi_rotation(real app, real aqq, real apq, double tol, real* c,
                                 real* s) noexcept nogil:
    """(c, s) of the rotation J = [[c, s], [-s, c]] with J^T [[app, apq], [apq, aqq]] J
    diagonal (Golub & Van Loan's symmetric Schur step, the smaller angle); False when apq is
    negligible (|apq| <= tol * sqrt(|app| |aqq|), or NaN) and the pair stays as it is."""
    cdef real tau, t
    if not (fabs(apq) > tol * sqrt(fabs(app)) * sqrt(fabs(aqq))) or fabs(apq) < tiny_of(apq):
        return False
    tau = (aqq - app) / (2 * apq)
    t = (1 if tau >= 0 else -1) / (fabs(tau) + hypot(1, tau))
    c[0] = 1 / sqrt(1 + t * t)
    s[0] = t * c[0]
    return s[0] != 0


cdef inline void rotate_columns(real* a, Py_ssize_t rows, Py_ssize_t cols, Py_ssize_t p,
                                Py_ssize_t q, real c, real s) noexcept nogil:
    """a[:, p], a[:, q] = c a_p - s a_q, s a_p + c a_q (a is rows x cols): a = a J."""
    cdef Py_ssize_t k
    cdef real x, y
    for k in range(rows):
        x, y = a[k * cols + p], a[k * cols + q]
        a[k * cols + p] = c * x - s * y
        a[k * cols + q] = s * x + c * y


cdef inline void rotate_rows(real* a, Py_ssize_t n, Py_ssize_t p, Py_ssize_t q, real c,
                             real s) noexcept nogil:
    """a[p, :], a[q, :] = c a_p - s a_q, s a_p + c a_q: a = J^T a."""
    cdef Py_ssize_t k
    cdef real x, y
    for k in range(n):
        x, y = a[p * n + k], a[q * n + k]
        a[p * n + k] = c * x - s * y
        a[q * n + k] = s * x + c * y


cdef inline void set_identity(real* v, Py_ssize_t rows, Py_ssize_t cols) noexcept nogil:
    cdef Py_ssize_t i, j
    for i in range(rows):
        for j in range(cols):
            v[i * cols + j] = 1 if i == j else 0


cdef inline void swap_columns(real* a, Py_ssize_t rows, Py_ssize_t cols, Py_ssize_t i,
                              Py_ssize_t j) noexcept nogil:
    cdef Py_ssize_t k
    cdef real t
    for k in range(rows):
        t = a[k * cols + i]
        a[k * cols + i] = a[k * cols + j]
        a[k * cols + j] = t


cdef void sort_with_columns(real* w, real* u, Py_ssize_t rows, real* v, Py_ssize_t n,
                            bint descending) noexcept nogil:
    """Selection sort of w (the first extreme wins ties) carrying along the columns of v
    (n x n) and, unless NULL, of u (rows x n): the same swaps as the GPU kernels."""
    cdef Py_ssize_t i, j, pick
    cdef real t
    for i in range(n):
        pick = i
        for j in range(i + 1, n):
            if (w[j] > w[pick]) if descending else (w[j] < w[pick]):
                pick = j
        if pick != i:
            t = w[i]
            w[i] = w[pick]
            w[pick] = t
            swap_columns(v, n, n, i, pick)
            if u != NULL:
                swap_columns(u, rows, n, i, pick)


# ---------------------------------------------------------------------------------------------
# symmetric eigendecomposition

cdef int64_t eigh_one(real* a, real* w, real* v, Py_ssize_t n) noexcept nogil:
    """w ascending, v (columns) = the eigenpairs of the symmetric matrix whose lower triangle
    a holds (a is overwritten); returns 1 when MAX_SWEEPS sweeps did not converge."""
    cdef Py_ssize_t i, j, p, q, step, sweep
    cdef real c = 0, s = 0
    cdef bint rotated
    cdef int64_t info = 1
    for i in range(n):
        for j in range(i + 1, n):
            a[i * n + j] = a[j * n + i]
    set_identity(v, n, n)
    for sweep in range(MAX_SWEEPS):
        rotated = False
        for step in range(n + (n & 1) - 1):
            for i in range((n + 1) // 2):
                if not tournament_pair(i, step, n, &p, &q):
                    continue
                if not jacobi_rotation(a[p * n + p], a[q * n + q], a[p * n + q], eps_of(c),
                                       &c, &s):
                    continue
                rotated = True
                rotate_columns(a, n, n, p, q, c, s)
                rotate_rows(a, n, p, q, c, s)
                a[p * n + q] = 0
                a[q * n + p] = 0
                rotate_columns(v, n, n, p, q, c, s)
        if not rotated:
            info = 0
            break
    for i in range(n):
        w[i] = a[i * n + i]
    sort_with_columns(w, NULL, 0, v, n, False)
    return info


cdef void eigh_batch(real* a, real* w, real* v, int64_t* info, Py_ssize_t batch,
                     Py_ssize_t n, int nt) noexcept nogil:
    cdef Py_ssize_t b
    for b in prange(batch, num_threads=nt, schedule="dynamic"):
        info[b] = eigh_one(a + b * n * n, w + b * n, v + b * n * n, n)


# ---------------------------------------------------------------------------------------------
# singular value decomposition

cdef inline void column_products(const real* a, Py_ssize_t m, Py_ssize_t n, Py_ssize_t p,
                                 Py_ssize_t q, real* alpha, real* beta,
                                 real* gamma) noexcept nogil:
    """alpha, beta, gamma = |a_p|^2, |a_q|^2, a_p . a_q for columns p, q of a (m x n)."""
    cdef Py_ssize_t k
    cdef real x, y
    alpha[0] = beta[0] = gamma[0] = 0
    for k in range(m):
        x, y = a[k * n + p], a[k * n + q]
        alpha[0] += x * x
        beta[0] += y * y
        gamma[0] += x * y


cdef inline real column_dot(const real* a, Py_ssize_t m, Py_ssize_t n, Py_ssize_t i,
                            Py_ssize_t j) noexcept nogil:
    cdef Py_ssize_t k
    cdef real total = 0
    for k in range(m):
        total += a[k * n + i] * a[k * n + j]
    return total


cdef void complete_column(real* u, Py_ssize_t m, Py_ssize_t n, Py_ssize_t j) noexcept nogil:
    """Column j of u (m x n) = a unit vector orthogonal to the orthonormal columns 0..j-1: the
    unit vector e_k they cover least (largest residual), Gram-Schmidt twice, normalised."""
    cdef Py_ssize_t i, k, best = 0
    cdef real energy, least = 0, d, norm
    cdef int sweep
    for k in range(m):
        energy = 0
        for i in range(j):
            energy += u[k * n + i] * u[k * n + i]
        if k == 0 or energy < least:
            least, best = energy, k
    for k in range(m):
        u[k * n + j] = 1 if k == best else 0
    for sweep in range(2):
        for i in range(j):
            d = column_dot(u, m, n, i, j)
            for k in range(m):
                u[k * n + j] -= d * u[k * n + i]
    norm = sqrt(column_dot(u, m, n, j, j))
    for k in range(m):
        u[k * n + j] /= norm


cdef int64_t svd_one(real* a, real* sv, real* v, Py_ssize_t m, Py_ssize_t n) noexcept nogil:
    """a (m x n, m >= n) becomes U with orthonormal columns, sv the singular values
    (descending), v (n x n) V, so that a = U diag(sv) V^T; returns 1 when not converged."""
    cdef Py_ssize_t i, k, p, q, step, sweep
    cdef real c = 0, s = 0, alpha, beta, gamma
    cdef bint rotated
    cdef int64_t info = 1
    # dot products of m terms carry rounding of about sqrt(m) eps (LAPACK's gesvj tolerance)
    cdef double tol = sqrt(<double>m) * eps_of(c)
    set_identity(v, n, n)
    for sweep in range(MAX_SWEEPS):
        rotated = False
        for step in range(n + (n & 1) - 1):
            for i in range((n + 1) // 2):
                if not tournament_pair(i, step, n, &p, &q):
                    continue
                column_products(a, m, n, p, q, &alpha, &beta, &gamma)
                if not jacobi_rotation(alpha, beta, gamma, tol, &c, &s):
                    continue
                rotated = True
                rotate_columns(a, m, n, p, q, c, s)
                rotate_columns(v, n, n, p, q, c, s)
        if not rotated:
            info = 0
            break
    for i in range(n):
        sv[i] = sqrt(column_dot(a, m, n, i, i))
    sort_with_columns(sv, a, m, v, n, True)
    for i in range(n):
        if sv[i] > tiny_of(c):
            for k in range(m):
                a[k * n + i] /= sv[i]
        else:       # zero columns (sorted last) become the rest of an orthonormal set
            complete_column(a, m, n, i)
    return info


cdef void svd_batch(real* a, real* sv, real* v, int64_t* info, Py_ssize_t batch, Py_ssize_t m,
                    Py_ssize_t n, int nt) noexcept nogil:
    cdef Py_ssize_t b
    for b in prange(batch, num_threads=nt, schedule="dynamic"):
        info[b] = svd_one(a + b * m * n, sv + b * n, v + b * n * n, m, n)


# ---------------------------------------------------------------------------------------------
# Householder QR

cdef void qr_one(real* a, real* tau, Py_ssize_t m, Py_ssize_t n) noexcept nogil:
    """LAPACK's geqrf without blocking: a (m x n) becomes R on and above the diagonal and the
    reflectors v_k = [1, a[k+1:, k]] below it, with H_k = I - tau_k v_k v_k^T (dlarfg's
    convention: beta = -sign(alpha) |(alpha, x)|, so R and Q equal LAPACK's and torch's)."""
    cdef Py_ssize_t i, j, k
    cdef real alpha, xnorm, beta, scale, w
    for k in range(min(m, n)):
        xnorm = 0
        for i in range(k + 1, m):
            xnorm += a[i * n + k] * a[i * n + k]
        xnorm = sqrt(xnorm)
        if xnorm == 0:
            tau[k] = 0
            continue
        alpha = a[k * n + k]
        beta = -hypot(alpha, xnorm) if alpha >= 0 else hypot(alpha, xnorm)
        tau[k] = (beta - alpha) / beta
        scale = 1 / (alpha - beta)
        for i in range(k + 1, m):
            a[i * n + k] *= scale
        a[k * n + k] = beta
        for j in range(k + 1, n):
            w = a[k * n + j]
            for i in range(k + 1, m):
                w += a[i * n + k] * a[i * n + j]
            w *= tau[k]
            a[k * n + j] -= w
            for i in range(k + 1, m):
                a[i * n + j] -= w * a[i * n + k]


cdef void form_q_one(const real* a, const real* tau, real* q, Py_ssize_t m, Py_ssize_t n,
                     Py_ssize_t cols) noexcept nogil:
    """q (m x cols) = the first cols columns of H_0 H_1 ... H_{K-1} (K = min(m, n)), applied
    to the identity from the last reflector back (LAPACK's orgqr)."""
    cdef Py_ssize_t i, j, k
    cdef real w
    set_identity(q, m, cols)
    for k in range(min(m, n) - 1, -1, -1):
        if tau[k] == 0:
            continue
        for j in range(k, cols):    # columns left of k are still e_j: H_k leaves them alone
            w = q[k * cols + j]
            for i in range(k + 1, m):
                w += a[i * n + k] * q[i * cols + j]
            w *= tau[k]
            q[k * cols + j] -= w
            for i in range(k + 1, m):
                q[i * cols + j] -= w * a[i * n + k]


cdef void qr_batch(real* a, real* tau, Py_ssize_t batch, Py_ssize_t m, Py_ssize_t n,
                   int nt) noexcept nogil:
    cdef Py_ssize_t b
    for b in prange(batch, num_threads=nt, schedule="static"):
        qr_one(a + b * m * n, tau + b * min(m, n), m, n)


cdef void form_q_batch(const real* a, const real* tau, real* q, Py_ssize_t batch, Py_ssize_t m,
                       Py_ssize_t n, Py_ssize_t cols, int nt) noexcept nogil:
    cdef Py_ssize_t b
    for b in prange(batch, num_threads=nt, schedule="static"):
        form_q_one(a + b * m * n, tau + b * min(m, n), q + b * m * cols, m, n, cols)


# ---------------------------------------------------------------------------------------------
# entry points

cdef int check_float(str name, cnp.ndarray a, list outputs) except -1:
    """The dtype code of a (float32 or float64) after checking that every output has it."""
    cdef int dt = buffer_dtype(a, name, True)
    if dt != DT_F32 and dt != DT_F64:
        raise TypeError(f"{name}: unsupported dtype {DTYPE_NAMES[dt]} (expected float32 or "
                        f"float64)")
    for out in outputs:
        if buffer_dtype(out, name, True) != dt:
            raise TypeError(f"{name}: every output must have the dtype of a ({DTYPE_NAMES[dt]})")
    return dt


cdef int check_info(str name, cnp.ndarray info, Py_ssize_t batch) except -1:
    if buffer_dtype(info, name, True) != DT_I64:
        raise TypeError(f"{name}: info must have dtype int64")
    check_sizes(name, ("info",), (info,), (batch,))
    return 0


cdef int check_sizes(str name, tuple labels, tuple buffers, tuple sizes) except -1:
    for label, buf, size in zip(labels, buffers, sizes):
        if cnp.PyArray_SIZE(buf) != size:
            raise ValueError(f"{name}: {label} has {cnp.PyArray_SIZE(buf)} elements, expected "
                             f"{size}")
    return 0


cdef int threads_for(Py_ssize_t batch, Py_ssize_t work) noexcept:
    """Threads for a batch of matrices (one matrix per thread at a time)."""
    if batch > 1 and batch * work >= PARALLEL_MIN_ELEMENTS:
        return min(omp_get_max_threads(), batch)
    return 1


def eigh_jacobi(cnp.ndarray a, cnp.ndarray values, cnp.ndarray vectors, cnp.ndarray info,
                Py_ssize_t batch, Py_ssize_t n):
    """values (batch x n, ascending), vectors (batch x n x n, eigenvectors in columns) = the
    eigendecomposition of each symmetric n x n matrix of compact a, read from its lower
    triangle (a is overwritten). info[b] = 1 where matrix b did not converge, else 0."""
    if batch < 0 or n < 0:
        raise ValueError(f"eigh_jacobi: negative size (batch={batch}, n={n})")
    cdef int dt = check_float("eigh_jacobi", a, [values, vectors])
    check_sizes("eigh_jacobi", ("a", "values", "vectors"), (a, values, vectors),
                (batch * n * n, batch * n, batch * n * n))
    check_info("eigh_jacobi", info, batch)
    cdef void* pa = cnp.PyArray_DATA(a)
    cdef void* pw = cnp.PyArray_DATA(values)
    cdef void* pv = cnp.PyArray_DATA(vectors)
    cdef int64_t* pi = <int64_t*>cnp.PyArray_DATA(info)
    cdef int nt = threads_for(batch, n * n * n)
    with nogil:
        if dt == DT_F32:
            eigh_batch(<float*>pa, <float*>pw, <float*>pv, pi, batch, n, nt)
        else:
            eigh_batch(<double*>pa, <double*>pw, <double*>pv, pi, batch, n, nt)


def svd_jacobi(cnp.ndarray a, cnp.ndarray s, cnp.ndarray v, cnp.ndarray info, Py_ssize_t batch,
               Py_ssize_t m, Py_ssize_t n):
    """Each m x n matrix (m >= n) of compact a becomes U (orthonormal columns), with s
    (batch x n, descending) its singular values and v (batch x n x n) V: a = U diag(s) V^T.
    info[b] = 1 where matrix b did not converge, else 0."""
    if batch < 0 or n < 0 or m < n:
        raise ValueError(f"svd_jacobi: needs 0 <= n <= m and batch >= 0, got batch={batch}, "
                         f"m={m}, n={n}")
    cdef int dt = check_float("svd_jacobi", a, [s, v])
    check_sizes("svd_jacobi", ("a", "s", "v"), (a, s, v), (batch * m * n, batch * n,
                                                          batch * n * n))
    check_info("svd_jacobi", info, batch)
    cdef void* pa = cnp.PyArray_DATA(a)
    cdef void* ps = cnp.PyArray_DATA(s)
    cdef void* pv = cnp.PyArray_DATA(v)
    cdef int64_t* pi = <int64_t*>cnp.PyArray_DATA(info)
    cdef int nt = threads_for(batch, m * n * n)
    with nogil:
        if dt == DT_F32:
            svd_batch(<float*>pa, <float*>ps, <float*>pv, pi, batch, m, n, nt)
        else:
            svd_batch(<double*>pa, <double*>ps, <double*>pv, pi, batch, m, n, nt)


def qr_householder(cnp.ndarray a, cnp.ndarray tau, Py_ssize_t batch, Py_ssize_t m,
                   Py_ssize_t n):
    """Each m x n matrix of compact a becomes R (on and above the diagonal) and its Householder
    reflectors (below), tau (batch x min(m, n)) their factors, as LAPACK's geqrf."""
    if batch < 0 or m < 0 or n < 0:
        raise ValueError(f"qr_householder: negative size (batch={batch}, m={m}, n={n})")
    cdef int dt = check_float("qr_householder", a, [tau])
    check_sizes("qr_householder", ("a", "tau"), (a, tau), (batch * m * n, batch * min(m, n)))
    cdef void* pa = cnp.PyArray_DATA(a)
    cdef void* pt = cnp.PyArray_DATA(tau)
    cdef int nt = threads_for(batch, m * n * n)
    with nogil:
        if dt == DT_F32:
            qr_batch(<float*>pa, <float*>pt, batch, m, n, nt)
        else:
            qr_batch(<double*>pa, <double*>pt, batch, m, n, nt)


def qr_form_q(cnp.ndarray a, cnp.ndarray tau, cnp.ndarray q, Py_ssize_t batch, Py_ssize_t m,
              Py_ssize_t n, Py_ssize_t cols):
    """q (batch x m x cols) = the first cols (<= m) columns of Q from qr_householder's a and
    tau (cols = min(m, n): the reduced Q; cols = m: the complete one)."""
    if batch < 0 or m < 0 or n < 0 or not 0 <= cols <= m:
        raise ValueError(f"qr_form_q: needs 0 <= cols <= m and sizes >= 0, got batch={batch}, "
                         f"m={m}, n={n}, cols={cols}")
    cdef int dt = check_float("qr_form_q", a, [tau, q])
    check_sizes("qr_form_q", ("a", "tau", "q"), (a, tau, q), (batch * m * n, batch * min(m, n),
                                                            batch * m * cols))
    cdef const void* pa = cnp.PyArray_DATA(a)
    cdef const void* pt = cnp.PyArray_DATA(tau)
    cdef void* pq = cnp.PyArray_DATA(q)
    cdef int nt = threads_for(batch, m * cols * n)
    with nogil:
        if dt == DT_F32:
            form_q_batch(<const float*>pa, <const float*>pt, <float*>pq, batch, m, n, cols, nt)
        else:
            form_q_batch(<const double*>pa, <const double*>pt, <double*>pq, batch, m, n, cols,
                         nt)
