# cython: cdivision=True
"""Separable gathers over the last three axes, and their adjoint: the kernels behind reflect /
replicate / circular padding and nearest / nearest-exact upsampling, each one pass instead of
one index_select per axis (the CUDA twins are minitorch/_gpu/kernels/grid.cu).

x is a compact (planes, D, H, W) array; `index` holds three source tables one after another,
OD entries for depth, OH for height and OW for width (an axis the caller does not index has
size 1 and the table [0]):

    grid_gather:      out[p, a, b, c] = x[p, index_d[a], index_h[b], index_w[c]]
    grid_scatter_add: grad_in = 0, then grad_in[p, index_d[a], index_h[b], index_w[c]] += g[p, a, b, c]

Planes run in parallel (each writes only its own plane of out / grad_in, so the scatter needs
no atomics and adds in a fixed order).
"""
cimport numpy as cnp
from cython.parallel cimport prange
from libc.stdint cimport int64_t, uint8_t
from libc.string cimport memset

from minitorch._cpu.common cimport DT_F32, DT_F64, dtype_code, threads_for

cnp.import_array()

ctypedef fused item:
    float
    double
    int64_t
    uint8_t

ctypedef fused real:
    float
    double


cdef struct Grid:
    Py_ssize_t d, h, w, od, oh, ow
    const int64_t* index_d
    const int64_t* index_h
    const int64_t* index_w


cdef void gather_planes(const item* x, item* out, Grid g, Py_ssize_t p0,
                        Py_ssize_t p1) noexcept nogil:
    cdef Py_ssize_t p, a, b, c, in_plane = g.d * g.h * g.w, out_plane = g.od * g.oh * g.ow
    cdef const item* src
    cdef item* dst
    for p in range(p0, p1):
        for a in range(g.od):
            for b in range(g.oh):
                src = x + p * in_plane + (g.index_d[a] * g.h + g.index_h[b]) * g.w
                dst = out + p * out_plane + (a * g.oh + b) * g.ow
                for c in range(g.ow):
                    dst[c] = src[g.index_w[c]]


cdef void scatter_planes(const real* grad, real* grad_in, Grid g, Py_ssize_t p0,
                         Py_ssize_t p1) noexcept nogil:
    cdef Py_ssize_t p, a, b, c, in_plane = g.d * g.h * g.w, out_plane = g.od * g.oh * g.ow
    cdef const real* src
    cdef real* dst
    for p in range(p0, p1):
        memset(grad_in + p * in_plane, 0, in_plane * sizeof(real))
        for a in range(g.od):
            for b in range(g.oh):
                dst = grad_in + p * in_plane + (g.index_d[a] * g.h + g.index_h[b]) * g.w
                src = grad + p * out_plane + (a * g.oh + b) * g.ow
                for c in range(g.ow):
                    dst[g.index_w[c]] += src[c]


cdef Grid make_grid(cnp.ndarray index, tuple in_size, tuple out_size, str op) except *:
    """The geometry, after checking that `index` is int64 with every entry in range."""
    cdef Grid g
    g.d, g.h, g.w = in_size
    g.od, g.oh, g.ow = out_size
    if min(g.d, g.h, g.w, g.od, g.oh, g.ow) < 0:
        raise ValueError(f"{op}: negative size in {in_size} / {out_size}")
    if cnp.PyArray_TYPE(index) != cnp.NPY_INT64 or not cnp.PyArray_IS_C_CONTIGUOUS(index):
        raise TypeError(f"{op}: index must be a C-contiguous int64 buffer")
    if cnp.PyArray_SIZE(index) < g.od + g.oh + g.ow:
        raise ValueError(f"{op}: index has {cnp.PyArray_SIZE(index)} entries, needs "
                         f"{g.od + g.oh + g.ow}")
    cdef const int64_t* table = <const int64_t*>cnp.PyArray_DATA(index)
    cdef Py_ssize_t i, axis, start = 0, count, bound
    for axis, (count, bound) in enumerate(((g.od, g.d), (g.oh, g.h), (g.ow, g.w))):
        for i in range(start, start + count):
            if not 0 <= table[i] < bound:
                raise IndexError(f"{op}: index {table[i]} is out of bounds for axis {axis} "
                                 f"of size {bound}")
        start += count
    g.index_d, g.index_h, g.index_w = table, table + g.od, table + g.od + g.oh
    return g


cdef int check_sizes(cnp.ndarray a, Py_ssize_t needed, str name, str op) except -1:
    if not cnp.PyArray_IS_C_CONTIGUOUS(a):
        raise ValueError(f"{op}: {name} must be C-contiguous")
    if cnp.PyArray_SIZE(a) < needed:
        raise ValueError(f"{op}: {name} has {cnp.PyArray_SIZE(a)} elements, needs {needed}")
    return 0


def grid_gather(cnp.ndarray x not None, cnp.ndarray index not None, cnp.ndarray out not None,
                Py_ssize_t planes, tuple in_size, tuple out_size):
    """out[p, a, b, c] = x[p, index_d[a], index_h[b], index_w[c]] (see the module docstring);
    any storage dtype (pure data movement)."""
    cdef Grid g = make_grid(index, in_size, out_size, "grid_gather")
    if x.dtype != out.dtype:
        raise TypeError(f"grid_gather: dtypes differ: x {x.dtype}, out {out.dtype}")
    check_sizes(x, planes * g.d * g.h * g.w, "x", "grid_gather")
    check_sizes(out, planes * g.od * g.oh * g.ow, "out", "grid_gather")
    cdef int size = cnp.PyArray_ITEMSIZE(x), nt = threads_for(planes * g.od * g.oh * g.ow), t
    cdef void* px = cnp.PyArray_DATA(x)
    cdef void* po = cnp.PyArray_DATA(out)
    if size not in (1, 4, 8):
        raise TypeError(f"grid_gather: unsupported dtype {x.dtype}")
    nt = max(1, min(nt, planes))
    with nogil:
        for t in prange(nt, num_threads=nt, schedule="static"):
            gather_part(size, px, po, g, planes * t // nt, planes * (t + 1) // nt)


cdef void gather_part(int size, void* x, void* out, Grid g, Py_ssize_t p0,
                      Py_ssize_t p1) noexcept nogil:
    # by item size: the values are only moved (float and int32 share 4 bytes, int64 and double 8)
    if size == 1:
        gather_planes(<const uint8_t*>x, <uint8_t*>out, g, p0, p1)
    elif size == 4:
        gather_planes(<const float*>x, <float*>out, g, p0, p1)
    else:
        gather_planes(<const int64_t*>x, <int64_t*>out, g, p0, p1)


def grid_scatter_add(cnp.ndarray grad not None, cnp.ndarray index not None,
                     cnp.ndarray grad_in not None, Py_ssize_t planes, tuple in_size,
                     tuple out_size):
    """grad_in = the adjoint of grid_gather applied to grad: zeroed, then every gradient
    added at its source position (float32 / float64)."""
    cdef Grid g = make_grid(index, in_size, out_size, "grid_scatter_add")
    cdef int dt = dtype_code(grad)
    if dt != DT_F32 and dt != DT_F64:
        raise TypeError(f"grid_scatter_add: unsupported dtype {grad.dtype}")
    if grad_in.dtype != grad.dtype:
        raise TypeError(f"grid_scatter_add: dtypes differ: grad {grad.dtype}, grad_in "
                        f"{grad_in.dtype}")
    check_sizes(grad, planes * g.od * g.oh * g.ow, "grad", "grid_scatter_add")
    check_sizes(grad_in, planes * g.d * g.h * g.w, "grad_in", "grid_scatter_add")
    cdef int nt = max(1, min(threads_for(planes * g.od * g.oh * g.ow), planes)), t
    cdef void* pg = cnp.PyArray_DATA(grad)
    cdef void* pi = cnp.PyArray_DATA(grad_in)
    with nogil:
        for t in prange(nt, num_threads=nt, schedule="static"):
            if dt == DT_F32:
                scatter_planes(<const float*>pg, <float*>pi, g, planes * t // nt,
                               planes * (t + 1) // nt)
            else:
                scatter_planes(<const double*>pg, <double*>pi, g, planes * t // nt,
                               planes * (t + 1) // nt)
