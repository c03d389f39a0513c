"""OpenMP thread count for every CPU kernel (mt.set_num_threads / mt.get_num_threads)."""
from minitorch._cpu.common cimport omp_get_max_threads, omp_set_num_threads


def set_num_threads(int n):
    if n < 1:
        raise ValueError(f"set_num_threads expects a positive integer, got {n}")
    omp_set_num_threads(n)


def get_num_threads():
    return omp_get_max_threads()
