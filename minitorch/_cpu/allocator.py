"""Keep freed buffers in the process (glibc malloc tuning, applied once at import).

Every op result is a fresh numpy buffer, and a training step frees and re-allocates the same
few-MB buffers dozens of times. glibc serves such sizes with mmap, or from the heap but gives
the top of the heap back to the kernel when it is freed; either way the next buffer of that size
is fresh memory, and its first write page-faults every 4 KB (the kernel zeroes each page). On
the MNIST CNN that is a third of the step (a bias add over a 6 MB output: 3.7 ms of faults
against 0.3 ms of arithmetic). Raising the mmap threshold to glibc's ceiling (32 MB) and never
trimming the heap lets freed buffers be reused as they are; the cost is that the process keeps
its peak heap size (what a caching allocator does on purpose).
MINITORCH_MALLOC_TUNING=0 leaves malloc alone.
"""
import ctypes
import os
import platform

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD_CEILING = 32 * 1024 * 1024      # glibc refuses larger values (HEAP_MAX_SIZE / 2)
NEVER_TRIM = 2 ** 31 - 1                       # the largest int mallopt takes: 2 GB


def tune_malloc():
    """True when glibc took the settings (both are needed: either one alone turns glibc's
    adaptive threshold off and leaves the other default in place, which is slower)."""
    if os.environ.get("MINITORCH_MALLOC_TUNING", "1") == "0":
        return False
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_CEILING)) and bool(
        mallopt(M_TRIM_THRESHOLD, NEVER_TRIM))


MALLOC_TUNED = tune_malloc()
