# cython: cdivision=True
"""The general (non-symmetric) eigenproblem on the CPU, in complex128: A = Z T Z^H by Householder
reduction to Hessenberg form, then single-shift QR sweeps (Wilkinson shifts, Givens rotations)
down to the upper triangular Schur form T; the eigenvalues are T's diagonal and the
eigenvectors T's (back substitution) carried back by Z, each scaled to unit 2-norm with its
largest component real and positive, LAPACK geev's convention (without geev's balancing).

Matrices are compact row-major n x n, a batch shared out among threads; `info` is 0, or the
1-based order of an eigenvalue that did not converge in 30 sweeps per eigenvalue. Real inputs
are converted to complex128 by the caller (the kernel has one arithmetic)."""
cimport numpy as cnp
from cython.parallel cimport prange
from libc.math cimport fabs, hypot, sqrt
from libc.stdint cimport int64_t
from libc.stdlib cimport free, malloc

from minitorch._cpu.common cimport omp_get_max_threads, PARALLEL_MIN_ELEMENTS

cnp.import_array()

ctypedef double complex cplx

cdef double EPS = 2.220446049250313e-16
cdef double SAFE_MIN = 2.2250738585072014e-308
cdef int SWEEPS_PER_EIGENVALUE = 30


cdef inline cplx conj(cplx z) noexcept nogil:
    return z.real - z.imag * 1j


cdef inline double mag(cplx z) noexcept nogil:
    return hypot(z.real, z.imag)


cdef inline double mag1(cplx z) noexcept nogil:
    """|re| + |im|: LAPACK's cheap magnitude for comparisons."""
    return fabs(z.real) + fabs(z.imag)


cdef inline cplx csqrt(cplx z) noexcept nogil:
    """The principal square root."""
    cdef double r = mag(z), re, im
    if r == 0:
        return 0
    re = sqrt((r + z.real) / 2)
    im = sqrt((r - z.real) / 2)
    return re + (im if z.imag >= 0 else -im) * 1j


# ---- Hessenberg reduction -----------------------------------------------------------------------
cdef void reflect_from_right(cplx* m, const cplx* v, double vv, Py_ssize_t n,
                             Py_ssize_t k) noexcept nogil:
    """m = m (I - 2 v v^H / vv) on columns k + 1 … n - 1 (v's entries there, vv = v^H v)."""
    cdef Py_ssize_t i, j
    cdef cplx s
    for i in range(n):
        s = 0
        for j in range(k + 1, n):
            s = s + m[i * n + j] * v[j]
        s = 2 * s / vv
        for j in range(k + 1, n):
            m[i * n + j] = m[i * n + j] - s * conj(v[j])


cdef void hessenberg(cplx* a, cplx* z, cplx* v, Py_ssize_t n) noexcept nogil:
    """a = Z H Z^H with H upper Hessenberg (in a) and Z unitary (z starts as the identity):
    for each column k, a Householder reflection I - 2 v v^H / (v^H v) zeros it below k + 1."""
    cdef Py_ssize_t k, i, j
    cdef double alpha, vv
    cdef cplx beta, s, head
    for k in range(n - 2):
        alpha = 0
        for i in range(k + 1, n):
            alpha += a[i * n + k].real ** 2 + a[i * n + k].imag ** 2
        alpha = sqrt(alpha)
        if alpha == 0:
            continue
        head = a[(k + 1) * n + k]
        # beta has the opposite phase of the head, so v's first entry does not cancel
        beta = -alpha if mag(head) == 0 else -alpha * head / mag(head)
        for i in range(k + 1, n):
            v[i] = a[i * n + k]
        v[k + 1] = v[k + 1] - beta
        vv = 0
        for i in range(k + 1, n):
            vv += v[i].real ** 2 + v[i].imag ** 2
        for j in range(k, n):                   # from the left: rows k + 1 … n - 1
            s = 0
            for i in range(k + 1, n):
                s = s + conj(v[i]) * a[i * n + j]
            s = 2 * s / vv
            for i in range(k + 1, n):
                a[i * n + j] = a[i * n + j] - v[i] * s
        reflect_from_right(a, v, vv, n, k)      # columns k + 1 … n - 1 of H and of Z
        reflect_from_right(z, v, vv, n, k)
        a[(k + 1) * n + k] = beta
        for i in range(k + 2, n):
            a[i * n + k] = 0


# ---- QR sweeps to the Schur form ----------------------------------------------------------------
cdef cplx wilkinson_shift(cplx* a, Py_ssize_t n, Py_ssize_t hi) noexcept nogil:
    """The eigenvalue of the trailing 2 x 2 block of the active part nearer its last entry."""
    cdef cplx p = a[(hi - 1) * n + hi - 1], q = a[(hi - 1) * n + hi]
    cdef cplx r = a[hi * n + hi - 1], d = a[hi * n + hi]
    cdef cplx half = (p - d) / 2
    cdef cplx root = csqrt(half * half + q * r)
    cdef cplx first = (p + d) / 2 + root, second = (p + d) / 2 - root
    return first if mag(first - d) < mag(second - d) else second


cdef void qr_sweep(cplx* a, cplx* z, double* cs, cplx* sn, Py_ssize_t n, Py_ssize_t lo,
                   Py_ssize_t hi, cplx shift) noexcept nogil:
    """One shifted QR step on the active block lo…hi: H - shift = G^H R by Givens rotations on
    row pairs (applied across every column to its right, so the whole Schur form is kept),
    then R G^H + shift (applied to every row above, and to Z)."""
    cdef Py_ssize_t k, j, i, top
    cdef double r, c
    cdef cplx x, y, s, t0, t1
    for k in range(lo, hi + 1):
        a[k * n + k] = a[k * n + k] - shift
    for k in range(lo, hi):
        x, y = a[k * n + k], a[(k + 1) * n + k]
        r = hypot(mag(x), mag(y))
        if r == 0:
            c, s = 1, 0
        elif mag(x) == 0:
            c, s = 0, conj(y) / mag(y)
        else:
            c = mag(x) / r
            s = (x / mag(x)) * conj(y) / r
        cs[k], sn[k] = c, s
        for j in range(k, n):
            t0, t1 = a[k * n + j], a[(k + 1) * n + j]
            a[k * n + j] = c * t0 + s * t1
            a[(k + 1) * n + j] = -conj(s) * t0 + c * t1
    for k in range(lo, hi):
        c, s = cs[k], sn[k]
        top = k + 2 if k + 2 <= hi else hi
        for i in range(top + 1):
            t0, t1 = a[i * n + k], a[i * n + k + 1]
            a[i * n + k] = c * t0 + conj(s) * t1
            a[i * n + k + 1] = -s * t0 + c * t1
        for i in range(n):
            t0, t1 = z[i * n + k], z[i * n + k + 1]
            z[i * n + k] = c * t0 + conj(s) * t1
            z[i * n + k + 1] = -s * t0 + c * t1
    for k in range(lo, hi + 1):
        a[k * n + k] = a[k * n + k] + shift


cdef int64_t schur(cplx* a, cplx* z, double* cs, cplx* sn, Py_ssize_t n) noexcept nogil:
    """The Hessenberg a becomes upper triangular (its subdiagonal negligible entries zeroed)
    and z collects the rotations; 0, or the order of the first eigenvalue that did not
    converge."""
    cdef Py_ssize_t hi = n - 1, lo, sweeps = 0
    cdef cplx shift
    cdef double scale
    while hi > 0:
        lo = hi
        while lo > 0:
            scale = mag1(a[(lo - 1) * n + lo - 1]) + mag1(a[lo * n + lo])
            if mag1(a[lo * n + lo - 1]) <= EPS * scale or \
                    mag1(a[lo * n + lo - 1]) <= SAFE_MIN:
                a[lo * n + lo - 1] = 0
                break
            lo -= 1
        if lo == hi:            # a[hi, hi] has split off: an eigenvalue
            hi -= 1
            sweeps = 0
            continue
        sweeps += 1
        if sweeps > SWEEPS_PER_EIGENVALUE:
            return hi + 1
        if sweeps % 10 == 0:    # an exceptional shift breaks a cycle of the Wilkinson shifts
            shift = a[hi * n + hi] + 0.75 * mag1(a[hi * n + hi - 1])
        else:
            shift = wilkinson_shift(a, n, hi)
        qr_sweep(a, z, cs, sn, n, lo, hi, shift)
    return 0


# ---- eigenvectors -------------------------------------------------------------------------------
cdef void eigenvectors(const cplx* t, const cplx* z, cplx* vectors, cplx* x,
                       Py_ssize_t n) noexcept nogil:
    """Column k of vectors = Z x_k for T x_k = t_kk x_k (x_k[k] = 1, zero below), scaled to
    unit norm with its largest component real and positive. A vanishing T[j, j] - t_kk is
    replaced by a tiny one (LAPACK trevc's rule), so repeated eigenvalues give finite
    vectors."""
    cdef Py_ssize_t k, j, l, i, largest
    cdef cplx s, d, phase
    cdef double smin, norm, best, size
    for k in range(n):
        smin = EPS * mag1(t[k * n + k])
        if smin < SAFE_MIN:
            smin = SAFE_MIN
        x[k] = 1
        for j in range(k - 1, -1, -1):
            s = 0
            for l in range(j + 1, k + 1):
                s = s + t[j * n + l] * x[l]
            d = t[j * n + j] - t[k * n + k]
            if mag1(d) < smin:
                d = smin
            x[j] = -s / d
        norm, best, largest = 0, -1, 0
        for i in range(n):
            s = 0
            for l in range(k + 1):
                s = s + z[i * n + l] * x[l]
            vectors[i * n + k] = s
            size = s.real ** 2 + s.imag ** 2
            norm += size
            if size > best:
                best, largest = size, i
        norm = sqrt(norm)
        phase = conj(vectors[largest * n + k]) / mag(vectors[largest * n + k])
        for i in range(n):
            vectors[i * n + k] = vectors[i * n + k] * phase / norm
        vectors[largest * n + k] = vectors[largest * n + k].real


cdef int64_t eig_one(cplx* a, cplx* values, cplx* vectors, Py_ssize_t n,
                     bint want_vectors) noexcept nogil:
    cdef cplx* z = <cplx*>malloc(n * n * sizeof(cplx))
    cdef cplx* work = <cplx*>malloc(n * sizeof(cplx))
    cdef double* cs = <double*>malloc(n * sizeof(double))
    cdef Py_ssize_t i, j
    cdef int64_t info
    for i in range(n):
        for j in range(n):
            z[i * n + j] = 1 if i == j else 0
    hessenberg(a, z, work, n)
    info = schur(a, z, cs, work, n)
    for i in range(n):
        values[i] = a[i * n + i]
    if want_vectors and info == 0:
        eigenvectors(a, z, vectors, work, n)
    free(z)
    free(work)
    free(cs)
    return info


cdef void eig_batch(cplx* a, cplx* values, cplx* vectors, int64_t* info, Py_ssize_t batch,
                    Py_ssize_t n, bint want_vectors, int nt) noexcept nogil:
    cdef Py_ssize_t b
    for b in prange(batch, num_threads=nt, schedule="dynamic"):
        info[b] = eig_one(a + b * n * n, values + b * n,
                          vectors + b * n * n if want_vectors else NULL, n, want_vectors)


def eig_general(cnp.ndarray a, cnp.ndarray values, cnp.ndarray vectors, cnp.ndarray info,
                Py_ssize_t batch, Py_ssize_t n):
    """In place on `a` (compact complex128 n x n matrices, destroyed): eigenvalues into
    `values` (batch x n) and, unless `vectors` is None, unit eigenvectors as the columns of
    `vectors` (batch x n x n); info (int64, one per matrix) 0 or the order of an eigenvalue
    that did not converge."""
    for name, array, size in (("a", a, batch * n * n), ("values", values, batch * n)):
        if cnp.PyArray_TYPE(array) != cnp.NPY_CDOUBLE or not array.flags.c_contiguous:
            raise TypeError(f"eig_general: {name} must be compact complex128")
        if cnp.PyArray_SIZE(array) != size:
            raise ValueError(f"eig_general: {name} has {cnp.PyArray_SIZE(array)} elements, "
                             f"{size} are needed")
    want_vectors = vectors is not None
    if want_vectors and (cnp.PyArray_TYPE(vectors) != cnp.NPY_CDOUBLE
                         or not vectors.flags.c_contiguous
                         or cnp.PyArray_SIZE(vectors) != batch * n * n):
        raise ValueError("eig_general: vectors must be compact complex128, batch x n x n")
    if cnp.PyArray_TYPE(info) != cnp.NPY_INT64 or cnp.PyArray_SIZE(info) != batch:
        raise ValueError("eig_general: info must be int64, one per matrix")
    cdef int nt = min(omp_get_max_threads(), batch) \
        if batch > 1 and batch * n * n * n >= PARALLEL_MIN_ELEMENTS else 1
    cdef cplx* pa = <cplx*>cnp.PyArray_DATA(a)
    cdef cplx* pw = <cplx*>cnp.PyArray_DATA(values)
    cdef cplx* pv = <cplx*>cnp.PyArray_DATA(vectors) if want_vectors else NULL
    cdef int64_t* pi = <int64_t*>cnp.PyArray_DATA(info)
    cdef bint vectors_too = want_vectors
    with nogil:
        eig_batch(pa, pw, pv, pi, batch, n, vectors_too, max(nt, 1))
