# cython: cdivision=True
"""Discrete Fourier transforms of the rows of a compact complex buffer (torch.fft's kernel).

`fft_rows` transforms each length-n row of interleaved (re, im) pairs, unnormalised:
out[k] = sum_j a[j] exp(∓2πi jk/n), minus for the forward transform, plus for the inverse;
minitorch/fft.py scales and builds rfft / irfft from it. A power-of-two n runs the iterative
radix-2 Cooley-Tukey (bit-reversed copy, then log2 n butterfly stages); a short row of any
other length the direct O(n²) sum, accumulated in double; a longer one Bluestein's chirp-z
algorithm (the DFT as a convolution with the chirp exp(±πi k²/n), done by radix-2 transforms of
a power-of-two length m >= 2n - 1, in double). Twiddles and chirps are computed once per call,
in double, from cos / sin (the chirp's k² reduced mod 2n in integers first). Rows run in
parallel.
"""
from cython.parallel cimport prange
from libc.math cimport M_PI, cos, sin
from libc.stdlib cimport free, malloc

from minitorch._cpu.common cimport threads_for

ctypedef fused real_t:
    float
    double


cdef inline bint is_power_of_two(Py_ssize_t n) noexcept nogil:
    return n > 0 and (n & (n - 1)) == 0


cdef void radix2_row(real_t* a, real_t* out, Py_ssize_t n, const double* tw) noexcept nogil:
    """One row by radix-2: out = the bit-reversed copy of a, then the butterflies in place.
    tw holds exp(±2πi k/n) for k < n/2 as (re, im)."""
    cdef Py_ssize_t j, r, bit, size, half, start, k, step, p, q
    cdef double wr, wi, xr, xi, yr, yi, tr, ti
    r = 0
    for j in range(n):
        out[2 * r] = a[2 * j]
        out[2 * r + 1] = a[2 * j + 1]
        bit = n >> 1                 # r <- the bit reversal of j + 1
        while bit and (r & bit):
            r ^= bit
            bit >>= 1
        r |= bit
    size = 2
    while size <= n:
        half = size >> 1
        step = n // size
        start = 0
        while start < n:
            for k in range(half):
                wr = tw[2 * k * step]
                wi = tw[2 * k * step + 1]
                p = start + k
                q = p + half
                xr = out[2 * p]; xi = out[2 * p + 1]
                yr = out[2 * q]; yi = out[2 * q + 1]
                tr = yr * wr - yi * wi
                ti = yr * wi + yi * wr
                out[2 * p] = <real_t>(xr + tr)
                out[2 * p + 1] = <real_t>(xi + ti)
                out[2 * q] = <real_t>(xr - tr)
                out[2 * q + 1] = <real_t>(xi - ti)
            start += size
        size <<= 1


cdef void direct_row(real_t* a, real_t* out, Py_ssize_t n, const double* tw) noexcept nogil:
    """One row by the direct sum (any n); tw holds exp(±2πi k/n) for k < n."""
    cdef Py_ssize_t j, k, idx
    cdef double sr, si, xr, xi
    for k in range(n):
        sr = 0.0
        si = 0.0
        idx = 0                      # (j * k) mod n, kept without a multiplication
        for j in range(n):
            xr = a[2 * j]; xi = a[2 * j + 1]
            sr = sr + xr * tw[2 * idx] - xi * tw[2 * idx + 1]
            si = si + xr * tw[2 * idx + 1] + xi * tw[2 * idx]
            idx += k
            if idx >= n:
                idx -= n
        out[2 * k] = <real_t>sr
        out[2 * k + 1] = <real_t>si


cdef enum:
    DIRECT_MAX = 32     # other lengths up to this take the direct sum, longer ones Bluestein


cdef double* twiddles(Py_ssize_t n, Py_ssize_t count, double sign) except NULL:
    """exp(sign·2πi k/n) for k < count as (re, im), in a malloc'ed array."""
    cdef Py_ssize_t k
    cdef double* tw = <double*>malloc(max(count, 1) * 2 * sizeof(double))
    if tw == NULL:
        raise MemoryError()
    for k in range(count):
        tw[2 * k] = cos(2.0 * M_PI * k / n)
        tw[2 * k + 1] = sign * sin(2.0 * M_PI * k / n)
    return tw


cdef struct Chirp:
    Py_ssize_t n, m
    double* chirp       # exp(sign·πi k²/n), k < n
    double* spectrum    # the m-point transform of conj(chirp) laid out for a circular convolution
    double* forward     # m-point twiddles, both directions
    double* inverse


cdef int chirp_setup(Chirp* c, Py_ssize_t n, double sign) except -1:
    cdef Py_ssize_t k, t, m = 1
    cdef double* b
    while m < 2 * n - 1:
        m <<= 1
    c.n, c.m = n, m
    c.chirp = <double*>malloc(2 * n * sizeof(double))
    c.spectrum = <double*>malloc(2 * m * sizeof(double))
    b = <double*>malloc(2 * m * sizeof(double))
    if c.chirp == NULL or c.spectrum == NULL or b == NULL:
        free(b)
        raise MemoryError()
    try:
        c.forward = twiddles(m, m // 2, -1.0)
        c.inverse = twiddles(m, m // 2, 1.0)
        for k in range(n):
            t = (k * k) % (2 * n)               # exact: the angle πt/n stays small
            c.chirp[2 * k] = cos(M_PI * t / n)
            c.chirp[2 * k + 1] = sign * sin(M_PI * t / n)
        for k in range(2 * m):
            b[k] = 0.0
        for k in range(n):                      # b[t] = conj(chirp[|t|]) for -n < t < n
            b[2 * k] = c.chirp[2 * k]
            b[2 * k + 1] = -c.chirp[2 * k + 1]
            if k:
                b[2 * (m - k)] = c.chirp[2 * k]
                b[2 * (m - k) + 1] = -c.chirp[2 * k + 1]
        radix2_row[double](b, c.spectrum, m, c.forward)
    finally:
        free(b)
    return 0


cdef void chirp_free(Chirp* c) noexcept nogil:
    free(c.chirp); free(c.spectrum); free(c.forward); free(c.inverse)


cdef void bluestein_row(real_t* a, real_t* out, const Chirp* c) noexcept nogil:
    """One row of any length n: X_k = chirp_k · Σ_j (a_j chirp_j) conj(chirp_{k-j}), the sum a
    circular convolution of length m by two radix-2 transforms."""
    cdef Py_ssize_t k, n = c.n, m = c.m
    cdef double xr, xi, yr, yi
    cdef double* work = <double*>malloc(4 * m * sizeof(double))
    cdef double* spectrum
    if work == NULL:            # no memory: NaNs rather than a crash inside a parallel loop
        for k in range(2 * n):
            out[k] = <real_t>(0.0 / 0.0)
        return
    spectrum = work + 2 * m
    for k in range(n):
        xr = a[2 * k]; xi = a[2 * k + 1]
        work[2 * k] = xr * c.chirp[2 * k] - xi * c.chirp[2 * k + 1]
        work[2 * k + 1] = xr * c.chirp[2 * k + 1] + xi * c.chirp[2 * k]
    for k in range(2 * n, 2 * m):
        work[k] = 0.0
    radix2_row[double](work, spectrum, m, c.forward)
    for k in range(m):
        xr = spectrum[2 * k]; xi = spectrum[2 * k + 1]
        yr = c.spectrum[2 * k]; yi = c.spectrum[2 * k + 1]
        spectrum[2 * k] = xr * yr - xi * yi
        spectrum[2 * k + 1] = xr * yi + xi * yr
    radix2_row[double](spectrum, work, m, c.inverse)
    for k in range(n):
        xr = work[2 * k] / m; xi = work[2 * k + 1] / m
        out[2 * k] = <real_t>(xr * c.chirp[2 * k] - xi * c.chirp[2 * k + 1])
        out[2 * k + 1] = <real_t>(xr * c.chirp[2 * k + 1] + xi * c.chirp[2 * k])
    free(work)


def fft_rows(real_t[::1] a, real_t[::1] out, Py_ssize_t rows, Py_ssize_t n, bint inverse=False):
    """The unnormalised DFT (inverse: the conjugate transform) of each of `rows` rows of n
    complex values, from the pair buffer a into out (compact, 2·rows·n floats each)."""
    cdef Py_ssize_t row
    cdef double sign = 1.0 if inverse else -1.0
    cdef double* tw = NULL
    cdef Chirp c
    cdef bint radix2 = is_power_of_two(n)
    cdef bint bluestein = not radix2 and n > DIRECT_MAX
    if rows < 0 or n < 0 or a.shape[0] != 2 * rows * n or out.shape[0] != 2 * rows * n:
        raise ValueError(f"fft_rows: {rows} rows of {n} pairs need 2·rows·n floats, got "
                         f"{a.shape[0]} and {out.shape[0]}")
    if rows == 0 or n == 0:
        return
    if bluestein:
        chirp_setup(&c, n, sign)
    else:
        tw = twiddles(n, n // 2 if radix2 else n, sign)
    try:
        with nogil:
            for row in prange(rows, schedule="static", num_threads=threads_for(rows * n)):
                if radix2:
                    radix2_row(&a[2 * row * n], &out[2 * row * n], n, tw)
                elif bluestein:
                    bluestein_row(&a[2 * row * n], &out[2 * row * n], &c)
                else:
                    direct_row(&a[2 * row * n], &out[2 * row * n], n, tw)
    finally:
        if bluestein:
            chirp_free(&c)
        free(tw)
