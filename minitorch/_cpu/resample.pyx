# cython: cdivision=True
"""Separable linear interpolation over the last three axes, and its adjoint: linear, bilinear
and trilinear `interpolate` as one pass each way instead of two gathers and three arithmetic
ops per axis (the CUDA twins are minitorch/_gpu/kernels/resample.cu).

x is a compact (planes, D, H, W) float array, out (planes, OD, OH, OW). Per axis, each output
position reads `taps` source positions (2: interpolated, 1: an axis passed through) with
weights; `index` holds the three axes' source tables one after another, two entries per output
position (OD pairs for depth, then OH, then OW; a pass-through axis reads the first of each
pair, and every entry must be a valid position), `weights` the matching weights in x's dtype.
The sum is nested as ATen's generic upsampling kernel nests it, innermost axis first: for two
interpolated axes

    out = (x[h0, w0]·λw0 + x[h0, w1]·λw1)·λh0 + (x[h1, w0]·λw0 + x[h1, w1]·λw1)·λh1

and a pass-through axis contributes no multiplication. lerp_resample_backward zeroes grad_in
and adds (g·(λd·λh))·λw at each source of each output: the adjoint. Planes run in parallel (each
writes only its own plane, so the adjoint needs no atomics and adds in a fixed order).
"""
cimport numpy as cnp
from cython cimport floating
from cython.parallel cimport prange
from libc.stdint cimport int64_t
from libc.string cimport memset

from minitorch._cpu.common cimport DT_F32, DT_F64, dtype_code, threads_for

cnp.import_array()


cdef struct Axis:
    Py_ssize_t size, out, taps       # input length, output length, 1 or 2
    const int64_t* index             # 2 * out entries: (i0, i1) per output position
    const void* weights              # 2 * out weights of x's dtype: (λ0, λ1)


cdef inline floating lerp_w(const floating* row, const int64_t* iw, const floating* lw,
                            Py_ssize_t c, bint two) noexcept nogil:
    """The innermost axis at output column c of one source row."""
    if two:
        return row[iw[2 * c]] * lw[2 * c] + row[iw[2 * c + 1]] * lw[2 * c + 1]
    return row[iw[2 * c]]


cdef void resample_row(const floating* src, floating* dst, Axis d, Axis h, Axis w,
                       Py_ssize_t a, Py_ssize_t b) noexcept nogil:
    """Output row (a, b) of one plane: its up to four source rows and their depth / height
    weights found once, then a loop over the columns (the nesting of the module docstring)."""
    cdef Py_ssize_t c, hw = h.size * w.size
    cdef const int64_t* iw = w.index
    cdef const floating* lw = <const floating*>w.weights
    cdef const floating* lh = <const floating*>h.weights
    cdef const floating* ld = <const floating*>d.weights
    cdef bint two = w.taps == 2
    cdef const floating* r00 = src + d.index[2 * a] * hw + h.index[2 * b] * w.size
    cdef const floating* r01 = src + d.index[2 * a] * hw + h.index[2 * b + 1] * w.size
    cdef const floating* r10 = src + d.index[2 * a + 1] * hw + h.index[2 * b] * w.size
    cdef const floating* r11 = src + d.index[2 * a + 1] * hw + h.index[2 * b + 1] * w.size
    cdef floating h0 = lh[2 * b], h1 = lh[2 * b + 1], d0 = ld[2 * a], d1 = ld[2 * a + 1]
    if d.taps == 1 and h.taps == 1:
        for c in range(w.out):
            dst[c] = lerp_w(r00, iw, lw, c, two)
    elif d.taps == 1:
        for c in range(w.out):
            dst[c] = lerp_w(r00, iw, lw, c, two) * h0 + lerp_w(r01, iw, lw, c, two) * h1
    elif h.taps == 1:
        for c in range(w.out):
            dst[c] = lerp_w(r00, iw, lw, c, two) * d0 + lerp_w(r10, iw, lw, c, two) * d1
    else:
        for c in range(w.out):
            dst[c] = ((lerp_w(r00, iw, lw, c, two) * h0 + lerp_w(r01, iw, lw, c, two) * h1) * d0
                      + (lerp_w(r10, iw, lw, c, two) * h0
                         + lerp_w(r11, iw, lw, c, two) * h1) * d1)


cdef void resample_planes(const floating* x, floating* out, Axis d, Axis h, Axis w,
                          Py_ssize_t p0, Py_ssize_t p1) noexcept nogil:
    cdef Py_ssize_t p, a, b, in_plane = d.size * h.size * w.size
    cdef Py_ssize_t out_plane = d.out * h.out * w.out
    for p in range(p0, p1):
        for a in range(d.out):
            for b in range(h.out):
                resample_row(x + p * in_plane, out + p * out_plane + (a * h.out + b) * w.out,
                             d, h, w, a, b)


cdef void adjoint_row(const floating* g, floating* dst, Axis d, Axis h, Axis w, Py_ssize_t a,
                      Py_ssize_t b) noexcept nogil:
    """Output row (a, b)'s gradient g added into its source rows of one grad_in plane."""
    cdef Py_ssize_t c, i, j, hw = h.size * w.size
    cdef const int64_t* iw = w.index
    cdef const floating* lw = <const floating*>w.weights
    cdef const floating* lh = <const floating*>h.weights
    cdef const floating* ld = <const floating*>d.weights
    cdef floating* row
    cdef floating scale, v
    for i in range(d.taps):
        for j in range(h.taps):
            row = dst + d.index[2 * a + i] * hw + h.index[2 * b + j] * w.size
            if d.taps == 1 and h.taps == 1:
                scale = 1
            elif d.taps == 1:
                scale = lh[2 * b + j]
            elif h.taps == 1:
                scale = ld[2 * a + i]
            else:
                scale = ld[2 * a + i] * lh[2 * b + j]
            if w.taps == 1:
                for c in range(w.out):
                    row[iw[2 * c]] += g[c] * scale
            else:
                for c in range(w.out):
                    v = g[c] * scale
                    row[iw[2 * c]] += v * lw[2 * c]
                    row[iw[2 * c + 1]] += v * lw[2 * c + 1]


cdef void adjoint_planes(const floating* grad, floating* grad_in, Axis d, Axis h, Axis w,
                         Py_ssize_t p0, Py_ssize_t p1) noexcept nogil:
    cdef Py_ssize_t p, a, b, in_plane = d.size * h.size * w.size
    cdef Py_ssize_t out_plane = d.out * h.out * w.out
    for p in range(p0, p1):
        memset(grad_in + p * in_plane, 0, in_plane * sizeof(floating))
        for a in range(d.out):
            for b in range(h.out):
                adjoint_row(grad + p * out_plane + (a * h.out + b) * w.out,
                            grad_in + p * in_plane, d, h, w, a, b)


cdef int load_axes(Axis* axes, cnp.ndarray index, cnp.ndarray weights, tuple in_size,
                   tuple out_size, tuple taps, str op) except -1:
    """The three axes, after checking the tables: int64 indices in range, weights of the
    buffers' dtype, enough of both."""
    cdef Py_ssize_t total = 0, axis, i, start = 0
    cdef const int64_t* table
    for axis in range(3):
        axes[axis].size, axes[axis].out, axes[axis].taps = in_size[axis], out_size[axis], \
            taps[axis]
        if axes[axis].size < 0 or axes[axis].out < 0:
            raise ValueError(f"{op}: negative size in {in_size} / {out_size}")
        if axes[axis].taps not in (1, 2):
            raise ValueError(f"{op}: taps must be 1 or 2, got {taps}")
        total += 2 * axes[axis].out
    if cnp.PyArray_TYPE(index) != cnp.NPY_INT64 or not cnp.PyArray_IS_C_CONTIGUOUS(index):
        raise TypeError(f"{op}: index must be a C-contiguous int64 buffer")
    if not cnp.PyArray_IS_C_CONTIGUOUS(weights):
        raise ValueError(f"{op}: weights must be C-contiguous")
    for name, buf in (("index", index), ("weights", weights)):
        if cnp.PyArray_SIZE(buf) < total:
            raise ValueError(f"{op}: {name} has {cnp.PyArray_SIZE(buf)} entries, needs {total}")
    table = <const int64_t*>cnp.PyArray_DATA(index)
    for axis in range(3):
        for i in range(start, start + 2 * axes[axis].out):
            if not 0 <= table[i] < axes[axis].size:
                raise IndexError(f"{op}: index {table[i]} is out of bounds for axis {axis} "
                                 f"of size {axes[axis].size}")
        axes[axis].index = table + start
        axes[axis].weights = (<const char*>cnp.PyArray_DATA(weights)
                              + start * cnp.PyArray_ITEMSIZE(weights))
        start += 2 * axes[axis].out
    return 0


cdef int check_buffers(str op, cnp.ndarray src, str src_name, Py_ssize_t src_size,
                       cnp.ndarray dst, str dst_name, Py_ssize_t dst_size,
                       cnp.ndarray weights) except -1:
    cdef int dt = dtype_code(src)
    if dt != DT_F32 and dt != DT_F64:
        raise TypeError(f"{op}: unsupported dtype {src.dtype}")
    if dst.dtype != src.dtype or weights.dtype != src.dtype:
        raise TypeError(f"{op}: dtypes differ: {src_name} {src.dtype}, {dst_name} "
                        f"{dst.dtype}, weights {weights.dtype}")
    for name, buf, size in ((src_name, src, src_size), (dst_name, dst, dst_size)):
        if not cnp.PyArray_IS_C_CONTIGUOUS(buf):
            raise ValueError(f"{op}: {name} must be C-contiguous")
        if cnp.PyArray_SIZE(buf) < size:
            raise ValueError(f"{op}: {name} has {cnp.PyArray_SIZE(buf)} elements, needs {size}")
    if not cnp.PyArray_ISWRITEABLE(dst):
        raise ValueError(f"{op}: {dst_name} is read-only")
    return dt


cdef run(str op, cnp.ndarray src, str src_name, cnp.ndarray dst, str dst_name,
         cnp.ndarray index, cnp.ndarray weights, Py_ssize_t planes, tuple in_size,
         tuple out_size, tuple taps, bint forward):
    """Both directions: the checks, then planes shared out among threads."""
    cdef Axis axes[3]
    if planes < 0:
        raise ValueError(f"{op}: negative planes")
    load_axes(axes, index, weights, in_size, out_size, taps, op)
    cdef Py_ssize_t in_plane = axes[0].size * axes[1].size * axes[2].size
    cdef Py_ssize_t out_plane = axes[0].out * axes[1].out * axes[2].out
    cdef int dt = check_buffers(op, src, src_name, planes * (in_plane if forward else out_plane),
                                dst, dst_name, planes * (out_plane if forward else in_plane),
                                weights)
    cdef int nt = max(1, min(threads_for(planes * out_plane), planes)), t
    cdef void* ps = cnp.PyArray_DATA(src)
    cdef void* pd = cnp.PyArray_DATA(dst)
    cdef Py_ssize_t p0, p1
    with nogil:
        for t in prange(nt, num_threads=nt, schedule="static"):
            p0, p1 = planes * t // nt, planes * (t + 1) // nt
            if forward and dt == DT_F32:
                resample_planes(<const float*>ps, <float*>pd, axes[0], axes[1], axes[2], p0, p1)
            elif forward:
                resample_planes(<const double*>ps, <double*>pd, axes[0], axes[1], axes[2], p0,
                                p1)
            elif dt == DT_F32:
                adjoint_planes(<const float*>ps, <float*>pd, axes[0], axes[1], axes[2], p0, p1)
            else:
                adjoint_planes(<const double*>ps, <double*>pd, axes[0], axes[1], axes[2], p0, p1)


def lerp_resample(cnp.ndarray x not None, cnp.ndarray index not None,
                  cnp.ndarray weights not None, cnp.ndarray out not None, Py_ssize_t planes,
                  tuple in_size, tuple out_size, tuple taps):
    """out[p] = the separable linear interpolation of x[p] (see the module docstring);
    float32 / float64."""
    run("lerp_resample", x, "x", out, "out", index, weights, planes, in_size, out_size, taps,
        True)


def lerp_resample_backward(cnp.ndarray grad not None, cnp.ndarray index not None,
                           cnp.ndarray weights not None, cnp.ndarray grad_in not None,
                           Py_ssize_t planes, tuple in_size, tuple out_size, tuple taps):
    """grad_in = the adjoint of lerp_resample applied to grad: zeroed, then (g·(λd·λh))·λw
    added at every source of every output."""
    run("lerp_resample_backward", grad, "grad", grad_in, "grad_in", index, weights, planes,
        in_size, out_size, taps, False)
