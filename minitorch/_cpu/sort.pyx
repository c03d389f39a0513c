# cython: cdivision=True
"""Sorting CPU kernels: a stable sort of every row of a compact (rows, n) array, writing the
sorted values and the int64 positions they came from (torch.sort, and through it argsort, topk,
kthvalue, median), and the binary search of values in sorted rows (searchsorted, bucketize).

Each row is merge-sorted: insertion-sorted runs of RUN elements, then merge passes that go back
and forth between the outputs and a scratch row. Both steps move an element past another only
when it strictly comes first, so ties keep their input order (descending too). NaN counts as the
largest value, as in torch: last when ascending, first when descending.
"""
cimport numpy as cnp
from cython.parallel cimport prange
from libc.stdint cimport int64_t, uint8_t

from minitorch._cpu.common cimport (buffer_dtype, DT_BOOL, DT_F32, DT_F64, DT_I64,
                                      omp_get_max_threads, PARALLEL_MIN_ELEMENTS)

import numpy as np

cnp.import_array()

DTYPE_NAMES = ("float32", "float64", "int64", "bool")
STORAGE = (np.float32, np.float64, np.int64, np.uint8)

cdef enum:
    RUN = 16        # rows are insertion-sorted in runs of this length before merging

ctypedef fused anyt:
    float
    double
    int64_t
    uint8_t


cdef inline bint comes_first(anyt x, anyt y, bint descending) noexcept nogil:
    """x strictly precedes y in the sorted order (NaN is the largest value)."""
    if anyt is float or anyt is double:
        if descending:
            return x > y or (x != x and y == y)
        return x < y or (y != y and x == x)
    else:
        return x > y if descending else x < y


cdef void insertion_runs(const anyt* a, anyt* v, int64_t* idx, Py_ssize_t n,
                         bint descending) noexcept nogil:
    """v, idx = each run of RUN elements of a, sorted, with the positions of its elements."""
    cdef Py_ssize_t lo = 0, hi, i, j
    cdef anyt x
    while lo < n:
        hi = lo + RUN if lo + RUN < n else n
        for i in range(lo, hi):
            x = a[i]
            j = i
            while j > lo and comes_first(x, v[j - 1], descending):
                v[j] = v[j - 1]
                idx[j] = idx[j - 1]
                j -= 1
            v[j] = x
            idx[j] = i
        lo = hi


cdef void merge_runs(const anyt* v, const int64_t* idx, anyt* dv, int64_t* didx, Py_ssize_t n,
                     Py_ssize_t width, bint descending) noexcept nogil:
    """dv, didx = neighbouring sorted runs of `width` in v, idx merged into runs of 2 * width;
    the right run's element goes first only when it strictly comes first (stability)."""
    cdef Py_ssize_t lo = 0, mid, hi, i, j, k
    while lo < n:
        mid = lo + width if lo + width < n else n
        hi = lo + 2 * width if lo + 2 * width < n else n
        i, j = lo, mid
        for k in range(lo, hi):
            if j < hi and (i >= mid or comes_first(v[j], v[i], descending)):
                dv[k] = v[j]
                didx[k] = idx[j]
                j += 1
            else:
                dv[k] = v[i]
                didx[k] = idx[i]
                i += 1
        lo = hi


cdef void sort_row(const anyt* a, anyt* v, int64_t* idx, anyt* sv, int64_t* sidx, Py_ssize_t n,
                   bint descending) noexcept nogil:
    """Stable sort of one row of a into v, idx (sv, sidx: scratch of n elements)."""
    cdef Py_ssize_t width = RUN
    cdef int passes = 0
    while width < n:
        passes += 1
        width *= 2
    # Start in the buffer that makes the last merge pass land in the outputs: no final copy.
    cdef anyt* src_v = sv if passes % 2 else v
    cdef int64_t* src_i = sidx if passes % 2 else idx
    cdef anyt* dst_v = v if passes % 2 else sv
    cdef int64_t* dst_i = idx if passes % 2 else sidx
    insertion_runs(a, src_v, src_i, n, descending)
    width = RUN
    while width < n:
        merge_runs(src_v, src_i, dst_v, dst_i, n, width, descending)
        src_v, dst_v = dst_v, src_v
        src_i, dst_i = dst_i, src_i
        width *= 2


cdef void sort_rows(const anyt* a, anyt* v, int64_t* idx, anyt* sv, int64_t* sidx,
                    Py_ssize_t r0, Py_ssize_t r1, Py_ssize_t n, bint descending) noexcept nogil:
    cdef Py_ssize_t r
    for r in range(r0, r1):
        sort_row(a + r * n, v + r * n, idx + r * n, sv, sidx, n, descending)


cdef void sort_part(int dt, const void* a, void* v, int64_t* idx, void* sv, int64_t* sidx,
                    Py_ssize_t r0, Py_ssize_t r1, Py_ssize_t n, bint descending) noexcept nogil:
    """Rows [r0, r1) of one dtype (the scratch row belongs to the calling thread)."""
    if dt == DT_F32:
        sort_rows(<const float*>a, <float*>v, idx, <float*>sv, sidx, r0, r1, n, descending)
    elif dt == DT_F64:
        sort_rows(<const double*>a, <double*>v, idx, <double*>sv, sidx, r0, r1, n, descending)
    elif dt == DT_I64:
        sort_rows(<const int64_t*>a, <int64_t*>v, idx, <int64_t*>sv, sidx, r0, r1, n,
                  descending)
    else:
        sort_rows(<const uint8_t*>a, <uint8_t*>v, idx, <uint8_t*>sv, sidx, r0, r1, n,
                  descending)


cdef int check_sort(cnp.ndarray a, cnp.ndarray values, cnp.ndarray indices,
                    Py_ssize_t n) except -1:
    """The dtype code of a, after checking the outputs and that a holds rows of length n."""
    cdef int dt = buffer_dtype(a, "sort_last")
    cdef Py_ssize_t size = cnp.PyArray_SIZE(a)
    if buffer_dtype(values, "sort_last", True) != dt:
        raise TypeError(f"sort_last: values must have the dtype of the input "
                        f"({DTYPE_NAMES[dt]})")
    if buffer_dtype(indices, "sort_last", True) != DT_I64:
        raise TypeError("sort_last: indices must have dtype int64")
    if n < 0 or (size % n if n else size):
        raise ValueError(f"sort_last: {size} elements are not rows of length {n}")
    if cnp.PyArray_SIZE(values) != size or cnp.PyArray_SIZE(indices) != size:
        raise ValueError(f"sort_last: values and indices need {size} elements, got "
                         f"{cnp.PyArray_SIZE(values)} and {cnp.PyArray_SIZE(indices)}")
    return dt


def sort_last(cnp.ndarray a, cnp.ndarray values, cnp.ndarray indices, Py_ssize_t n,
              bint descending=False):
    """values, indices = each length-n row of compact a stably sorted (ascending, or descending
    when `descending`; NaN is the largest value) and the positions of its elements in the row.
    Rows are shared out among threads."""
    cdef int dt = check_sort(a, values, indices, n)
    cdef Py_ssize_t m = cnp.PyArray_SIZE(a) // n if n else 0, t
    cdef int nt = 1
    if m > 1 and m * n >= PARALLEL_MIN_ELEMENTS:
        nt = min(omp_get_max_threads(), m)
    # one scratch row per thread, allocated here so that the nogil part cannot fail
    cdef cnp.ndarray scratch_v = np.empty(nt * n, STORAGE[dt])
    cdef cnp.ndarray scratch_i = np.empty(nt * n, np.int64)
    cdef const void* pa = cnp.PyArray_DATA(a)
    cdef void* pv = cnp.PyArray_DATA(values)
    cdef int64_t* pi = <int64_t*>cnp.PyArray_DATA(indices)
    cdef char* psv = <char*>cnp.PyArray_DATA(scratch_v)
    cdef int64_t* psi = <int64_t*>cnp.PyArray_DATA(scratch_i)
    cdef Py_ssize_t row_bytes = n * cnp.PyArray_ITEMSIZE(a)
    if m == 0:
        return
    with nogil:
        if nt == 1:
            sort_part(dt, pa, pv, pi, psv, psi, 0, m, n, descending)
        else:
            for t in prange(nt, num_threads=nt, schedule="static"):
                sort_part(dt, pa, pv, pi, psv + t * row_bytes, psi + t * n, m * t // nt,
                          m * (t + 1) // nt, n, descending)


cdef void top_row(const anyt* a, anyt* v, int64_t* idx, Py_ssize_t n, Py_ssize_t k,
                  bint descending) noexcept nogil:
    """The first k of a's stable sorted order, by insertion into a k-long sorted prefix: an
    element enters only when it strictly comes before the prefix's last, and moves up only past
    elements it strictly comes before, so ties keep their input order (as sort_row's do)."""
    cdef Py_ssize_t i, j, filled = 0
    cdef anyt x
    for i in range(n):
        x = a[i]
        if filled == k:
            if not comes_first(x, v[k - 1], descending):
                continue
            j = k - 1
        else:
            j = filled
            filled += 1
        while j > 0 and comes_first(x, v[j - 1], descending):
            v[j] = v[j - 1]
            idx[j] = idx[j - 1]
            j -= 1
        v[j] = x
        idx[j] = i


cdef void top_rows(const anyt* a, anyt* v, int64_t* idx, Py_ssize_t r0, Py_ssize_t r1,
                   Py_ssize_t n, Py_ssize_t k, bint descending) noexcept nogil:
    cdef Py_ssize_t r
    for r in range(r0, r1):
        top_row(a + r * n, v + r * k, idx + r * k, n, k, descending)


cdef void top_part(int dt, const void* a, void* v, int64_t* idx, Py_ssize_t r0, Py_ssize_t r1,
                   Py_ssize_t n, Py_ssize_t k, bint descending) noexcept nogil:
    if dt == DT_F32:
        top_rows(<const float*>a, <float*>v, idx, r0, r1, n, k, descending)
    elif dt == DT_F64:
        top_rows(<const double*>a, <double*>v, idx, r0, r1, n, k, descending)
    elif dt == DT_I64:
        top_rows(<const int64_t*>a, <int64_t*>v, idx, r0, r1, n, k, descending)
    else:
        top_rows(<const uint8_t*>a, <uint8_t*>v, idx, r0, r1, n, k, descending)


def top_last(cnp.ndarray a, cnp.ndarray values, cnp.ndarray indices, Py_ssize_t n,
             Py_ssize_t k, bint descending=False):
    """values, indices (rows of k) = the first k of each length-n row of compact a in its stable
    sorted order (sort_last's order, NaN the largest) and their positions: topk without sorting
    the rest of the row. Each element costs one comparison unless it enters the top k, so this
    pays while k is small (the caller sorts instead when it is not)."""
    cdef int dt = buffer_dtype(a, "top_last")
    cdef Py_ssize_t size = cnp.PyArray_SIZE(a), m, t
    if buffer_dtype(values, "top_last", True) != dt:
        raise TypeError(f"top_last: values must have the dtype of the input "
                        f"({DTYPE_NAMES[dt]})")
    if buffer_dtype(indices, "top_last", True) != DT_I64:
        raise TypeError("top_last: indices must have dtype int64")
    if n <= 0 or size % n or not 0 < k <= n:
        raise ValueError(f"top_last: {size} elements are not rows of length {n} >= k = {k} > 0")
    m = size // n
    if cnp.PyArray_SIZE(values) != m * k or cnp.PyArray_SIZE(indices) != m * k:
        raise ValueError(f"top_last: values and indices need {m * k} elements, got "
                         f"{cnp.PyArray_SIZE(values)} and {cnp.PyArray_SIZE(indices)}")
    cdef int nt = 1
    if m > 1 and size >= PARALLEL_MIN_ELEMENTS:
        nt = min(omp_get_max_threads(), m)
    cdef const void* pa = cnp.PyArray_DATA(a)
    cdef void* pv = cnp.PyArray_DATA(values)
    cdef int64_t* pi = <int64_t*>cnp.PyArray_DATA(indices)
    with nogil:
        if nt == 1:
            top_part(dt, pa, pv, pi, 0, m, n, k, descending)
        else:
            for t in prange(nt, num_threads=nt, schedule="static"):
                top_part(dt, pa, pv, pi, m * t // nt, m * (t + 1) // nt, n, k, descending)


# ---------------------------------------------------------------------------------------------
# searchsorted
# ---------------------------------------------------------------------------------------------

cdef inline int64_t insertion_point(const anyt* bd, const int64_t* order, Py_ssize_t n, anyt v,
                                    bint right) noexcept nogil:
    """Where v goes in the sorted row bd (read through `order` when not NULL): torch's
    comparisons, the lower bound moving right while !(b >= v), the upper while !(b > v)."""
    cdef Py_ssize_t lo = 0, hi = n, mid
    cdef anyt b
    while lo < hi:
        mid = lo + ((hi - lo) >> 1)
        b = bd[order[mid]] if order != NULL else bd[mid]
        if (not (b > v)) if right else (not (b >= v)):
            lo = mid + 1
        else:
            hi = mid
    return lo


cdef void search_values(const anyt* bd, const anyt* values, const int64_t* sorter, int64_t* out,
                        Py_ssize_t size, Py_ssize_t n, Py_ssize_t m, bint shared_row,
                        bint right) noexcept nogil:
    """out[i] = the insertion point of values[i] in boundary row i // m (row 0 if shared)."""
    cdef Py_ssize_t i, row
    cdef int nt = omp_get_max_threads() if size >= PARALLEL_MIN_ELEMENTS else 1
    for i in prange(size, num_threads=nt, schedule="static"):
        row = 0 if shared_row else i // m
        out[i] = insertion_point(bd + row * n, sorter + row * n if sorter != NULL else NULL, n,
                                 values[i], right)


cdef int check_sorter(cnp.ndarray sorter, Py_ssize_t size, Py_ssize_t n) except -1:
    """sorter holds int64 positions in [0, n), one per boundary."""
    cdef const int64_t* p
    cdef Py_ssize_t i
    if buffer_dtype(sorter, "searchsorted") != DT_I64:
        raise TypeError("searchsorted: sorter must have dtype int64")
    if cnp.PyArray_SIZE(sorter) != size:
        raise ValueError(f"searchsorted: sorter has {cnp.PyArray_SIZE(sorter)} elements, the "
                         f"boundaries {size}")
    p = <const int64_t*>cnp.PyArray_DATA(sorter)
    for i in range(size):
        if p[i] < 0 or p[i] >= n:
            raise IndexError(f"searchsorted: sorter position {p[i]} is out of bounds for rows "
                             f"of {n}")
    return 0


def searchsorted(cnp.ndarray boundaries, cnp.ndarray values, cnp.ndarray out, Py_ssize_t n,
                 Py_ssize_t m, bint right=False, cnp.ndarray sorter=None):
    """out (int64) = for each of the compact values, viewed as rows of m, its insertion point in
    the sorted row of n boundaries of the same row, or in the one row when boundaries has only
    one (the left end of equal values, or the right end when `right`). A `sorter` (int64, one
    position in [0, n) per boundary) gives the sorted order of unsorted rows."""
    cdef int dt = buffer_dtype(boundaries, "searchsorted")
    cdef Py_ssize_t size = cnp.PyArray_SIZE(values), rows
    if buffer_dtype(values, "searchsorted") != dt:
        raise TypeError(f"searchsorted: values must have the dtype of the boundaries "
                        f"({DTYPE_NAMES[dt]})")
    if buffer_dtype(out, "searchsorted", True) != DT_I64:
        raise TypeError("searchsorted: out must have dtype int64")
    if cnp.PyArray_SIZE(out) != size:
        raise ValueError(f"searchsorted: out has {cnp.PyArray_SIZE(out)} elements, the values "
                         f"{size}")
    if n < 0 or m < 0 or (size % m if m else size):
        raise ValueError(f"searchsorted: {size} values are not rows of m={m} (n={n})")
    rows = cnp.PyArray_SIZE(boundaries) // n if n else 1
    if rows * n != cnp.PyArray_SIZE(boundaries) or (rows != 1 and rows * m != size):
        raise ValueError(f"searchsorted: {cnp.PyArray_SIZE(boundaries)} boundaries are not one "
                         f"row of n={n} or one per row of m={m} values")
    if sorter is not None:
        check_sorter(sorter, cnp.PyArray_SIZE(boundaries), n)
    cdef const void* pb = cnp.PyArray_DATA(boundaries)
    cdef const void* pv = cnp.PyArray_DATA(values)
    cdef const int64_t* ps = NULL if sorter is None else <const int64_t*>cnp.PyArray_DATA(sorter)
    cdef int64_t* po = <int64_t*>cnp.PyArray_DATA(out)
    cdef bint shared = rows == 1
    with nogil:
        if dt == DT_F32:
            search_values(<const float*>pb, <const float*>pv, ps, po, size, n, m, shared, right)
        elif dt == DT_F64:
            search_values(<const double*>pb, <const double*>pv, ps, po, size, n, m, shared, right)
        elif dt == DT_I64:
            search_values(<const int64_t*>pb, <const int64_t*>pv, ps, po, size, n, m, shared,
                          right)
        else:
            search_values(<const uint8_t*>pb, <const uint8_t*>pv, ps, po, size, n, m, shared,
                          right)
