# cython: cdivision=True
"""Matrix factorisation CPU kernels, in place on compact batches of row-major matrices (float32 /
float64 / complex64 / complex128): LU with partial pivoting (LAPACK getrf), the permutation its
pivots describe, the triangular solve A X = B, and Cholesky (lower, L L^H = A). Matrices of a
batch are shared out among threads. Complex pivots are chosen by |re| + |im| (LAPACK's cabs1).

Errors the arithmetic finds are reported per matrix in an int64 `info`, as LAPACK does: the
order of the first exactly-zero pivot (LU, which still completes) or of the first leading minor
that is not positive (Cholesky, which stops there). Callers raise torch's errors from it.
The GPU kernels (minitorch/_gpu/kernels/factor.cu) run the same steps in the same order.
"""
cimport numpy as cnp
from cython.parallel cimport prange
from libc.math cimport fabs, sqrt
from libc.stdint cimport int64_t

from minitorch._cpu.common cimport (buffer_dtype, DT_F32, DT_F64, DT_I64, omp_get_max_threads,
                                      PARALLEL_MIN_ELEMENTS)

cnp.import_array()

DTYPE_NAMES = ("float32", "float64", "int64", "bool", "complex64", "complex128")


cdef enum:                      # beside common.pxd's codes: the complex storage types
    DT_C64 = 4
    DT_C128 = 5

ctypedef fused floating:
    float
    double
    float complex
    double complex


cdef inline double magnitude(floating x) noexcept nogil:
    """|x| for real x; |re| + |im| for complex x (the pivot order LAPACK's izamax uses)."""
    if floating is float or floating is double:
        return fabs(x)
    else:
        return fabs(x.real) + fabs(x.imag)


cdef inline floating conjugate(floating x) noexcept nogil:
    if floating is float or floating is double:
        return x
    else:
        return x.conjugate()


cdef int threads_for(Py_ssize_t batch, Py_ssize_t work) noexcept:
    """One thread per matrix up to the machine's, when the batch is worth a parallel region."""
    if batch > 1 and batch * work >= PARALLEL_MIN_ELEMENTS:
        return min(omp_get_max_threads(), batch)
    return 1


# ---- argument checks (the GPU backend raises the same types with the same words) --------------
cdef int float_buffer(cnp.ndarray a, str name, str label) except -1:
    """The dtype code of a writable compact float or complex buffer."""
    cdef int t = cnp.PyArray_TYPE(a)
    if t == cnp.NPY_CFLOAT or t == cnp.NPY_CDOUBLE:
        if not cnp.PyArray_IS_C_CONTIGUOUS(a) or not cnp.PyArray_ISWRITEABLE(a):
            raise ValueError(f"{name}: {label} must be a writable C-contiguous buffer")
        return DT_C64 if t == cnp.NPY_CFLOAT else DT_C128
    cdef int dt = buffer_dtype(a, name, True)
    if dt != DT_F32 and dt != DT_F64:
        # the GPU backend's words (its complex buffers go to these kernels on the host)
        raise TypeError(f"{name}: {label} must be float32 or float64, got {DTYPE_NAMES[dt]}")
    return dt


cdef int int64_buffer(cnp.ndarray a, str name, str label) except -1:
    if buffer_dtype(a, name, True) != DT_I64:
        raise TypeError(f"{name}: {label} must have dtype int64")
    return 0


cdef int check_sizes(str name, Py_ssize_t m, Py_ssize_t n) except -1:
    if m < 0 or n < 0:
        raise ValueError(f"{name}: sizes must be non-negative, got {m} and {n}")
    return 0


cdef int check_count(str name, str label, Py_ssize_t have, Py_ssize_t need) except -1:
    if have != need:
        raise ValueError(f"{name}: {label} has {have} elements, {need} are needed")
    return 0


cdef Py_ssize_t matrix_count(str name, Py_ssize_t size, Py_ssize_t n) except -1:
    """How many n x n matrices a buffer of `size` elements holds (0 when n is 0)."""
    if n == 0:
        check_count(name, "a", size, 0)
        return 0
    if size % (n * n):
        raise ValueError(f"{name}: {size} elements are not {n}x{n} matrices")
    return size // (n * n)


# ---- LU -----------------------------------------------------------------------------------------
cdef void lu_one(floating* a, int64_t* piv, int64_t* info, Py_ssize_t m,
                 Py_ssize_t n) noexcept nogil:
    """getrf on one m x n matrix: for each column j, the first row of largest magnitude at or
    below j becomes the pivot (a NaN never does, unless it is a[j, j]), its row is swapped up,
    the column below is divided by it, and the trailing block takes the rank-1 update. A zero
    pivot is recorded (LAPACK's info) and skipped: its column below is zero already."""
    cdef Py_ssize_t k = m if m < n else n, i, j, c, p
    cdef double best, v
    cdef floating pivot, l
    info[0] = 0
    for j in range(k):
        p = j
        best = magnitude(a[j * n + j])
        for i in range(j + 1, m):
            v = magnitude(a[i * n + j])
            if v > best:
                best, p = v, i
        piv[j] = p + 1
        pivot = a[p * n + j]
        if pivot != 0:
            if p != j:
                for c in range(n):
                    a[j * n + c], a[p * n + c] = a[p * n + c], a[j * n + c]
            for i in range(j + 1, m):
                a[i * n + j] = a[i * n + j] / pivot
        elif info[0] == 0:
            info[0] = j + 1
        for i in range(j + 1, m):
            l = a[i * n + j]
            for c in range(j + 1, n):
                a[i * n + c] -= l * a[j * n + c]


cdef void lu_batch(floating* a, int64_t* piv, int64_t* info, Py_ssize_t batch, Py_ssize_t m,
                   Py_ssize_t n, int nt) noexcept nogil:
    cdef Py_ssize_t b, k = m if m < n else n
    for b in prange(batch, num_threads=nt, schedule="dynamic"):
        lu_one(a + b * m * n, piv + b * k, info + b, m, n)


def lu_factor(cnp.ndarray a, cnp.ndarray pivots, cnp.ndarray info, Py_ssize_t m, Py_ssize_t n):
    """In place on a batch of compact m x n matrices (one per element of `info`): L (unit
    diagonal, not stored) and U of P A = L U with partial pivoting; pivots (int64, min(m, n)
    per matrix) are LAPACK's 1-based row swaps, info the order of the first zero pivot or 0."""
    cdef int dt = float_buffer(a, "lu_factor", "a")
    int64_buffer(pivots, "lu_factor", "pivots")
    int64_buffer(info, "lu_factor", "info")
    check_sizes("lu_factor", m, n)
    cdef Py_ssize_t batch = cnp.PyArray_SIZE(info)
    check_count("lu_factor", "a", cnp.PyArray_SIZE(a), batch * m * n)
    check_count("lu_factor", "pivots", cnp.PyArray_SIZE(pivots), batch * min(m, n))
    cdef int nt = threads_for(batch, m * n * min(m, n))
    cdef void* pa = cnp.PyArray_DATA(a)
    cdef int64_t* pp = <int64_t*>cnp.PyArray_DATA(pivots)
    cdef int64_t* pi = <int64_t*>cnp.PyArray_DATA(info)
    with nogil:
        if dt == DT_F32:
            lu_batch(<float*>pa, pp, pi, batch, m, n, nt)
        elif dt == DT_F64:
            lu_batch(<double*>pa, pp, pi, batch, m, n, nt)
        elif dt == DT_C64:
            lu_batch(<float complex*>pa, pp, pi, batch, m, n, nt)
        else:
            lu_batch(<double complex*>pa, pp, pi, batch, m, n, nt)


def lu_permutation(cnp.ndarray pivots, cnp.ndarray perm, Py_ssize_t m, Py_ssize_t k):
    """perm (int64, m per matrix) = the row of the original matrix that ends up at each row
    after LAPACK's swaps `pivots` (k per matrix, 1-based): P A = A[perm]. Swaps out of [1, m]
    are skipped (callers reject them first)."""
    int64_buffer(pivots, "lu_permutation", "pivots")
    int64_buffer(perm, "lu_permutation", "perm")
    check_sizes("lu_permutation", m, k)
    if k > m:
        raise ValueError(f"lu_permutation: {k} pivots do not fit rows of {m}")
    cdef Py_ssize_t batch = cnp.PyArray_SIZE(perm) // m if m else 0
    check_count("lu_permutation", "perm", cnp.PyArray_SIZE(perm), batch * m)
    check_count("lu_permutation", "pivots", cnp.PyArray_SIZE(pivots), batch * k)
    cdef const int64_t* pp = <const int64_t*>cnp.PyArray_DATA(pivots)
    cdef int64_t* out = <int64_t*>cnp.PyArray_DATA(perm)
    cdef Py_ssize_t b, i, target
    with nogil:
        for b in range(batch):
            for i in range(m):
                out[b * m + i] = i
            for i in range(k):
                target = pp[b * k + i] - 1
                if 0 <= target < m:
                    out[b * m + i], out[b * m + target] = out[b * m + target], out[b * m + i]


# ---- triangular solve ---------------------------------------------------------------------------
cdef void solve_one(const floating* a, floating* x, Py_ssize_t n, Py_ssize_t k, bint upper,
                    bint unit) noexcept nogil:
    """x (n x k) = A^-1 x for triangular A, row by row: each row of x takes away the solved rows
    times A's entries (nearest the diagonal last, as the GPU's column sweeps do), then is divided
    by the diagonal unless it is a unit one."""
    cdef Py_ssize_t step, r, i, j, c
    cdef floating l, d
    for step in range(n):
        i = n - 1 - step if upper else step
        if upper:
            for j in range(n - 1, i, -1):
                l = a[i * n + j]
                for c in range(k):
                    x[i * k + c] -= l * x[j * k + c]
        else:
            for j in range(i):
                l = a[i * n + j]
                for c in range(k):
                    x[i * k + c] -= l * x[j * k + c]
        if not unit:
            d = a[i * n + i]
            for c in range(k):
                x[i * k + c] = x[i * k + c] / d


cdef void solve_batch(const floating* a, floating* x, Py_ssize_t batch, Py_ssize_t n,
                      Py_ssize_t k, bint upper, bint unit, int nt) noexcept nogil:
    cdef Py_ssize_t b
    for b in prange(batch, num_threads=nt, schedule="dynamic"):
        solve_one(a + b * n * n, x + b * n * k, n, k, upper, unit)


def triangular_solve(cnp.ndarray a, cnp.ndarray b, Py_ssize_t n, Py_ssize_t k, bint upper=False,
                     bint unitriangular=False):
    """b (a batch of compact n x k matrices) = A^-1 b in place, for the batch of compact n x n
    triangular matrices a (lower, or upper when `upper`; only that triangle is read, and not
    the diagonal when `unitriangular`). A zero diagonal gives inf / NaN, as LAPACK's trtrs."""
    cdef int dt = float_buffer(a, "triangular_solve", "a")
    if float_buffer(b, "triangular_solve", "b") != dt:
        raise TypeError(f"triangular_solve: b must have the dtype of a ({DTYPE_NAMES[dt]})")
    check_sizes("triangular_solve", n, k)
    cdef Py_ssize_t batch = matrix_count("triangular_solve", cnp.PyArray_SIZE(a), n)
    check_count("triangular_solve", "b", cnp.PyArray_SIZE(b), batch * n * k)
    cdef int nt = threads_for(batch, n * n * k)
    cdef const void* pa = cnp.PyArray_DATA(a)
    cdef void* pb = cnp.PyArray_DATA(b)
    with nogil:
        if dt == DT_F32:
            solve_batch(<const float*>pa, <float*>pb, batch, n, k, upper, unitriangular, nt)
        elif dt == DT_F64:
            solve_batch(<const double*>pa, <double*>pb, batch, n, k, upper, unitriangular, nt)
        elif dt == DT_C64:
            solve_batch(<const float complex*>pa, <float complex*>pb, batch, n, k, upper,
                        unitriangular, nt)
        else:
            solve_batch(<const double complex*>pa, <double complex*>pb, batch, n, k, upper,
                        unitriangular, nt)


# ---- Cholesky -----------------------------------------------------------------------------------
cdef void cholesky_one(floating* a, int64_t* info, Py_ssize_t n) noexcept nogil:
    """Right-looking Cholesky of the lower triangle: column j is the square root of its
    diagonal and the entries below divided by it, then the trailing lower triangle takes the
    rank-1 update (with the conjugate for complex A: L L^H = A). Stops at the first diagonal
    whose real part is not positive (or NaN), as potrf does, leaving the partly updated
    matrix; a complex diagonal's imaginary part is not read (A is taken as Hermitian). The
    strict upper triangle is zeroed first."""
    cdef Py_ssize_t i, j, c
    cdef double d
    cdef floating l
    info[0] = 0
    for i in range(n):
        for c in range(i + 1, n):
            a[i * n + c] = 0
    for j in range(n):
        if floating is float or floating is double:
            d = a[j * n + j]
        else:
            d = a[j * n + j].real
        if not d > 0:
            info[0] = j + 1
            return
        d = sqrt(d)
        a[j * n + j] = d
        for i in range(j + 1, n):
            a[i * n + j] = a[i * n + j] / d
        for i in range(j + 1, n):
            l = a[i * n + j]
            for c in range(j + 1, i + 1):
                a[i * n + c] -= l * conjugate(a[c * n + j])


cdef void cholesky_batch(floating* a, int64_t* info, Py_ssize_t batch, Py_ssize_t n,
                         int nt) noexcept nogil:
    cdef Py_ssize_t b
    for b in prange(batch, num_threads=nt, schedule="dynamic"):
        cholesky_one(a + b * n * n, info + b, n)


def cholesky_factor(cnp.ndarray a, cnp.ndarray info, Py_ssize_t n):
    """In place on a batch of compact n x n matrices (one per element of `info`): L (lower, the
    strict upper triangle zeroed) with L L^H = A, from A's lower triangle; info (int64) = the
    order of the first leading minor that is not positive definite, or 0."""
    cdef int dt = float_buffer(a, "cholesky_factor", "a")
    int64_buffer(info, "cholesky_factor", "info")
    check_sizes("cholesky_factor", n, n)
    cdef Py_ssize_t batch = cnp.PyArray_SIZE(info)
    check_count("cholesky_factor", "a", cnp.PyArray_SIZE(a), batch * n * n)
    cdef int nt = threads_for(batch, n * n * n)
    cdef void* pa = cnp.PyArray_DATA(a)
    cdef int64_t* pi = <int64_t*>cnp.PyArray_DATA(info)
    with nogil:
        if dt == DT_F32:
            cholesky_batch(<float*>pa, pi, batch, n, nt)
        elif dt == DT_F64:
            cholesky_batch(<double*>pa, pi, batch, n, nt)
        elif dt == DT_C64:
            cholesky_batch(<float complex*>pa, pi, batch, n, nt)
        else:
            cholesky_batch(<double complex*>pa, pi, batch, n, nt)
