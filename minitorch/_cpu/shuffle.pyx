# cython: cdivision=True
"""The host side of torch's CPU randperm: a swap shuffle of 0 .. n - 1 driven by given 32-bit
draws (minitorch/random.py draws them from torch's Mersenne Twister). The draws are random
numbers; the permutation they drive is this kernel's work."""
cimport numpy as cnp
from libc.stdint cimport int64_t, uint32_t

cnp.import_array()


def swap_shuffle(cnp.ndarray draws not None, cnp.ndarray out not None):
    """out = 0 .. n - 1, then for i < n - 1 swap out[i] and out[i + draws[i] % (n - i)]
    (torch's randperm_cpu for n < 2**31 / 10). draws: uint32, n - 1 of them; out: int64 of n
    elements."""
    cdef Py_ssize_t n = cnp.PyArray_SIZE(out), i, j
    if draws.dtype != "uint32" or out.dtype != "int64" or not cnp.PyArray_IS_C_CONTIGUOUS(out) \
            or not cnp.PyArray_IS_C_CONTIGUOUS(draws):
        raise TypeError("swap_shuffle: draws must be a C-contiguous uint32 buffer, out an int64 "
                        "one")
    if cnp.PyArray_SIZE(draws) < n - 1:
        raise ValueError(f"swap_shuffle: {cnp.PyArray_SIZE(draws)} draws for {n} elements")
    cdef const uint32_t* z = <const uint32_t*>cnp.PyArray_DATA(draws)
    cdef int64_t* r = <int64_t*>cnp.PyArray_DATA(out)
    cdef int64_t held
    with nogil:
        for i in range(n):
            r[i] = i
        for i in range(n - 1):
            j = i + <Py_ssize_t>(<int64_t>z[i] % (n - i))
            held = r[i]
            r[i] = r[j]
            r[j] = held
