# cython: cdivision=True
"""Discrete Fourier transforms of the rows of a compact complex buffer (torch.fft's kernel).

`fft_rows` transforms each length-n row of interleaved (re, im) pairs, unnormalised:
out[k] = sum_j a[j] exp(∓2πi jk/n), minus for the forward transform, plus for the inverse;
minitorch/fft.py scales and builds rfft / irfft from it. A power-of-two n runs the iterative
radix-2 Cooley-Tukey (bit-reversed copy, then log2 n butterfly stages); any other n the direct
O(n²) sum, accumulated in double. Twiddles are computed once per call, in double, from
cos / sin of 2πk/n. Rows run in parallel.
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


def fft_rows(real_t[::1] a, real_t[::1] out, Py_ssize_t rows, Py_ssize_t n, bint inverse=False):
    """The unnormalised DFT (inverse: the conjugate transform) of each of `rows` rows of n
    complex values, from the pair buffer a into out (compact, 2·rows·n floats each)."""
    cdef Py_ssize_t row, k, count
    cdef double sign = 1.0 if inverse else -1.0
    cdef double* tw
    cdef bint radix2 = is_power_of_two(n)
    if rows < 0 or n < 0 or a.shape[0] != 2 * rows * n or out.shape[0] != 2 * rows * n:
        raise ValueError(f"fft_rows: {rows} rows of {n} pairs need 2·rows·n floats, got "
                         f"{a.shape[0]} and {out.shape[0]}")
    if rows == 0 or n == 0:
        return
    count = n // 2 if radix2 else n
    tw = <double*>malloc(max(count, 1) * 2 * sizeof(double))
    if tw == NULL:
        raise MemoryError()
    try:
        for k in range(count):
            tw[2 * k] = cos(2.0 * M_PI * k / n)
            tw[2 * k + 1] = sign * sin(2.0 * M_PI * k / n)
        with nogil:
            for row in prange(rows, schedule="static", num_threads=threads_for(rows * n)):
                if radix2:
                    radix2_row(&a[2 * row * n], &out[2 * row * n], n, tw)
                else:
                    direct_row(&a[2 * row * n], &out[2 * row * n], n, tw)
    finally:
        free(tw)
