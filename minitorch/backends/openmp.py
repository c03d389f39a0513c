"""mt.backends.openmp: our Cython CPU kernels are built with OpenMP (prange)."""


def is_available():
    return True
