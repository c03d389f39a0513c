"""OpenMP thread count for every CPU kernel (mt.set_num_threads / mt.get_num_threads)."""

cdef extern from *:
    """
    #ifdef _OPENMP
    #include <omp.h>
    #else  /* built without OpenMP: one thread, and the setter is a no-op */
    static void omp_set_num_threads(int n) { (void)n; }
    static int omp_get_max_threads(void) { return 1; }
    #endif
    """
    void omp_set_num_threads(int n) nogil
    int omp_get_max_threads() nogil


def set_num_threads(int n):
    if n < 1:
        raise ValueError(f"set_num_threads expects a positive integer, got {n}")
    omp_set_num_threads(n)


def get_num_threads():
    return omp_get_max_threads()
