# cython: cdivision=True
"""Max-pooling CPU kernels over compact (planes, *size) arrays with 1 to 3 spatial axes: the
maximum of every window with its flat position in the plane (torch's return_indices), and the
gradient, summed back at those positions.

Geometry is torch's: the window of output o along an axis starts at o·stride - padding and
reaches (kernel - 1)·dilation + 1 elements; only the positions inside the input are read
(padding never competes for the maximum), the first of them being the initial index. The
maximum is taken with torch's CPU rule `val > max || isnan(val)` from the lowest value of the
dtype, so a NaN wins (the last one when there are several) and ties keep the first position.
Fewer spatial axes are run as 3-D with leading axes of size 1.

Outputs whose windows lie inside the input are computed in tiles of up to ROW_TILE (several
rows when rows are short), branch-free and vectorized; the edge outputs one at a time. With a
per-channel bias the forward reads relu(x + bias) instead of x (a convolution's bias add and
ReLU, pooled without a pass of their own).
"""
cimport numpy as cnp
from cython.parallel cimport prange
from libc.math cimport INFINITY
from libc.stdint cimport int64_t, uint8_t, INT64_MIN
from libc.string cimport memset

from minitorch._cpu.common cimport (buffer_dtype, DT_F32, DT_F64, DT_I64, omp_get_max_threads,
                                      PARALLEL_MIN_ELEMENTS)

cnp.import_array()

DTYPE_NAMES = ("float32", "float64", "int64", "bool")
GEOMETRY_NAMES = ("size", "out_size", "kernel", "stride", "padding", "dilation")
LOWEST = (0, 0, 1, 1, 0, 1)         # smallest value each geometry entry may take
PADDING = 4                         # the one entry that is 0, not 1, on the added leading axes

ctypedef fused anyt:
    float
    double
    int64_t
    uint8_t


cdef enum:
    ROW_TILE = 256      # outputs whose maxima are kept in local arrays at a time
    LANES = 16          # the row loop runs in multiples of this (a 64-byte vector of floats)


cdef struct Axes:
    # one entry per axis, outermost (depth) first: input and output sizes and the window
    Py_ssize_t size[3]
    Py_ssize_t out[3]
    Py_ssize_t kernel[3]
    Py_ssize_t stride[3]
    Py_ssize_t padding[3]
    Py_ssize_t dilation[3]
    # a per-channel bias (plane p uses bias[p % channels]) whose add and relu every read value
    # gets, or NULL
    const void* bias
    Py_ssize_t channels


cdef inline void window_span(const Axes* g, int d, Py_ssize_t o, Py_ssize_t* first,
                             Py_ssize_t* end) noexcept nogil:
    """[first, end) of the real positions of window o along axis d, stepped by the dilation:
    torch's start (moved past the padding a dilation step at a time) and clamped end."""
    cdef Py_ssize_t start = o * g.stride[d] - g.padding[d]
    cdef Py_ssize_t stop = start + (g.kernel[d] - 1) * g.dilation[d] + 1
    if start < 0:
        start += (-start + g.dilation[d] - 1) // g.dilation[d] * g.dilation[d]
    first[0] = start
    end[0] = stop if stop < g.size[d] else g.size[d]


cdef inline anyt lowest(const anyt* like) noexcept nogil:
    """The value every window's maximum starts from (torch's -inf, or the integer minimum) for
    the element type of `like` (not read)."""
    if anyt is float or anyt is double:
        return -INFINITY
    elif anyt is int64_t:
        return INT64_MIN
    else:
        return 0


cdef inline anyt add_relu(anyt v, anyt b) noexcept nogil:
    """relu(v + b) with BINARY_ADD_RELU's ops (binary.pyx): NaN passes, -0.0 stays."""
    v = v + b
    return 0 if v < 0 else v


cdef inline bint wins(anyt v, anyt top) noexcept nogil:
    """torch's rule: v replaces the running maximum top when greater, or when it is NaN."""
    if anyt is float or anyt is double:
        return (v > top) | (v != v)       # no short circuit: the row loop stays branch-free
    else:
        return v > top


cdef void pool_window(const anyt* src, const Axes* g, Py_ssize_t d0, Py_ssize_t d1,
                      Py_ssize_t h0, Py_ssize_t h1, Py_ssize_t ow, anyt* top,
                      int64_t* best, anyt b) noexcept nogil:
    """One output of a row whose window may reach past the input's ends along w (values read
    as add_relu(v, b) when g has a bias)."""
    cdef Py_ssize_t h_size = g.size[1], w_size = g.size[2], w0, w1, d, h, w, at
    cdef anyt v
    window_span(g, 2, ow, &w0, &w1)
    best[0] = (d0 * h_size + h0) * w_size + w0
    top[0] = lowest(src)
    d = d0
    while d < d1:
        h = h0
        while h < h1:
            at = (d * h_size + h) * w_size + w0
            w = w0
            while w < w1:
                v = src[at]
                if g.bias != NULL:
                    v = add_relu(v, b)
                if wins(v, top[0]):
                    top[0], best[0] = v, at
                at += g.dilation[2]
                w += g.dilation[2]
            h += g.dilation[1]
        d += g.dilation[0]


cdef void pool_tile(const anyt* src, const Axes* g, Py_ssize_t d0, Py_ssize_t d1,
                    Py_ssize_t h0, Py_ssize_t h1, Py_ssize_t rows, Py_ssize_t c0,
                    Py_ssize_t columns, anyt* top, int64_t* best, anyt b) noexcept nogil:
    """The outputs c0 .. c0 + columns - 1 of `rows` neighbouring output rows (at most ROW_TILE
    in all), whose windows lie inside the input along w, and along h too when rows > 1 (the
    first row's span [h0, h1) then serves every row, a row's stride further). Every window
    element, in torch's order, is gathered from all of them into a local row and offered to
    their running maxima at once, without branches (a data-dependent branch per window
    mispredicts on most inputs), over whole vectors of lanes: rows are short (7 or 14
    outputs in a small CNN), and a vector loop's scalar remainder would branch."""
    cdef Py_ssize_t h_size = g.size[1], w_size = g.size[2], stride = g.stride[2]
    cdef Py_ssize_t row_step = g.stride[1] * w_size, count = rows * columns
    cdef Py_ssize_t lanes = (count + LANES - 1) // LANES * LANES, k, r, c, d, h, j, at
    cdef anyt peak[ROW_TILE]
    cdef anyt row[ROW_TILE]
    cdef int64_t where[ROW_TILE]
    cdef int64_t offset[ROW_TILE]      # each lane's output position relative to the first's
    cdef anyt floor = lowest(src)
    cdef const anyt* first
    cdef bint take
    for r in range(rows):
        for c in range(columns):
            offset[r * columns + c] = r * row_step + (c0 + c) * stride - g.padding[2]
    for k in range(count, lanes):
        offset[k] = 0
        row[k] = 0      # lanes past the tile compute on zeros, never stored
    for k in range(lanes):
        peak[k] = floor
        where[k] = (d0 * h_size + h0) * w_size + offset[k]
    d = d0
    while d < d1:
        h = h0
        while h < h1:
            for j in range(g.kernel[2]):
                at = (d * h_size + h) * w_size + j * g.dilation[2]
                for r in range(rows):       # affine in r and c: cheaper than through offset
                    first = src + at + r * row_step + c0 * stride - g.padding[2]
                    if g.bias != NULL:
                        for c in range(columns):
                            row[r * columns + c] = add_relu(first[c * stride], b)
                    else:
                        for c in range(columns):
                            row[r * columns + c] = first[c * stride]
                for k in range(lanes):
                    take = wins(row[k], peak[k])
                    peak[k] = row[k] if take else peak[k]
                    where[k] = at + offset[k] if take else where[k]
            h += g.dilation[1]
        d += g.dilation[0]
    for r in range(rows):
        for c in range(columns):
            top[r * g.out[2] + c0 + c] = peak[r * columns + c]
            best[r * g.out[2] + c0 + c] = where[r * columns + c]


cdef void interior(const Axes* g, int axis, Py_ssize_t* lo, Py_ssize_t* hi) noexcept nogil:
    """[lo, hi): the outputs along `axis` whose whole window lies inside the input."""
    cdef Py_ssize_t stride = g.stride[axis], pad = g.padding[axis]
    cdef Py_ssize_t last = g.size[axis] - 1 + pad - (g.kernel[axis] - 1) * g.dilation[axis]
    lo[0] = (pad + stride - 1) // stride
    hi[0] = last // stride + 1 if last >= 0 else 0
    if hi[0] > g.out[axis]:
        hi[0] = g.out[axis]
    if lo[0] > hi[0]:
        lo[0] = hi[0]


cdef void pool_rows(const anyt* src, const Axes* g, Py_ssize_t d0, Py_ssize_t d1,
                    Py_ssize_t oh, Py_ssize_t rows, Py_ssize_t lo, Py_ssize_t hi, anyt* top,
                    int64_t* best, anyt b) noexcept nogil:
    """Output rows oh .. oh + rows - 1 (several only where their windows lie inside the input
    along h): edge outputs along w one by one, the rest in tiles of ROW_TILE."""
    cdef Py_ssize_t width = g.out[2], h0, h1, ow, r, c0, columns, per_tile, n
    window_span(g, 1, oh, &h0, &h1)
    for r in range(rows):
        window_span(g, 1, oh + r, &h0, &h1)
        for ow in range(lo):
            pool_window(src, g, d0, d1, h0, h1, ow, top + r * width + ow,
                        best + r * width + ow, b)
        for ow in range(hi, width):
            pool_window(src, g, d0, d1, h0, h1, ow, top + r * width + ow,
                        best + r * width + ow, b)
    window_span(g, 1, oh, &h0, &h1)
    columns = hi - lo if hi - lo < ROW_TILE else ROW_TILE
    if columns == 0:
        return
    per_tile = ROW_TILE // columns
    r = 0
    while r < rows:
        n = rows - r if rows - r < per_tile else per_tile
        c0 = lo
        while c0 < hi:
            columns = hi - c0 if hi - c0 < ROW_TILE else ROW_TILE
            pool_tile(src, g, d0, d1, h0 + r * g.stride[1], h1 + r * g.stride[1], n, c0,
                      columns, top + r * width, best + r * width, b)
            c0 += columns
        r += n


cdef void pool_planes(const anyt* x, anyt* values, int64_t* indices, const Axes* g,
                      Py_ssize_t p0, Py_ssize_t p1) noexcept nogil:
    """Planes [p0, p1): every window's maximum and its flat position in the plane. The rows
    whose windows lie inside the input along h go together (short rows fill whole tiles)."""
    cdef Py_ssize_t plane = g.size[0] * g.size[1] * g.size[2], width = g.out[2]
    cdef Py_ssize_t p, od, oh, d0, d1, lo, hi, h_lo, h_hi
    cdef const anyt* src
    cdef anyt b = 0
    interior(g, 2, &lo, &hi)
    interior(g, 1, &h_lo, &h_hi)
    for p in range(p0, p1):
        src = x + p * plane
        if g.bias != NULL:
            b = (<const anyt*>g.bias)[p % g.channels]
        for od in range(g.out[0]):
            window_span(g, 0, od, &d0, &d1)
            for oh in range(h_lo):
                pool_rows(src, g, d0, d1, oh, 1, lo, hi, values + oh * width,
                          indices + oh * width, b)
            pool_rows(src, g, d0, d1, h_lo, h_hi - h_lo, lo, hi, values + h_lo * width,
                      indices + h_lo * width, b)
            for oh in range(h_hi, g.out[1]):
                pool_rows(src, g, d0, d1, oh, 1, lo, hi, values + oh * width,
                          indices + oh * width, b)
            values += g.out[1] * width
            indices += g.out[1] * width


cdef void pool_part(int dt, const void* x, void* values, int64_t* indices, const Axes* g,
                    Py_ssize_t p0, Py_ssize_t p1) noexcept nogil:
    """Planes [p0, p1) of one dtype (the outputs start at plane p0)."""
    cdef Py_ssize_t outputs = p0 * g.out[0] * g.out[1] * g.out[2]
    if dt == DT_F32:
        pool_planes(<const float*>x, <float*>values + outputs, indices + outputs, g, p0, p1)
    elif dt == DT_F64:
        pool_planes(<const double*>x, <double*>values + outputs, indices + outputs, g, p0, p1)
    elif dt == DT_I64:
        pool_planes(<const int64_t*>x, <int64_t*>values + outputs, indices + outputs, g, p0, p1)
    else:
        pool_planes(<const uint8_t*>x, <uint8_t*>values + outputs, indices + outputs, g, p0,
                    p1)


cdef Py_ssize_t product(object sizes):
    cdef Py_ssize_t n = 1
    for s in sizes:
        n *= s
    return n


cdef int load_axes(Axes* g, tuple geometry) except -1:
    """Check the geometry (equally long tuples of 1 to 3 entries, each at least its LOWEST) and
    store it right-aligned in 3-D, leading axes of size 1 with a window of 1."""
    cdef Py_ssize_t nd = len(geometry[0]), d, k, lead
    cdef Py_ssize_t* fields[6]
    fields[0], fields[1], fields[2] = g.size, g.out, g.kernel
    fields[3], fields[4], fields[5] = g.stride, g.padding, g.dilation
    if not 1 <= nd <= 3 or any(len(entry) != nd for entry in geometry):
        raise ValueError("max_pool_forward: size, out_size, kernel, stride, padding and dilation "
                         f"need one to three entries each, all as many, got {geometry}")
    for k in range(6):
        if any(v < LOWEST[k] for v in geometry[k]):
            raise ValueError(f"max_pool_forward: {GEOMETRY_NAMES[k]} entries must be at least "
                             f"{LOWEST[k]}, got {tuple(geometry[k])}")
    lead = 3 - nd
    for k in range(6):
        for d in range(3):
            fields[k][d] = geometry[k][d - lead] if d >= lead else (k != PADDING)
    return 0


def check_counts(str kernel, tuple buffers, tuple names, tuple counts):
    """Each buffer holds exactly its count of elements."""
    for buffer, name, count in zip(buffers, names, counts):
        if buffer.size != count:
            raise ValueError(f"{kernel}: {name} has {buffer.size} elements, {count} are needed")


cdef int thread_count(Py_ssize_t planes, Py_ssize_t work) noexcept:
    """Threads for `planes` planes of `work` element visits in all (one below the threshold)."""
    if planes > 1 and work >= PARALLEL_MIN_ELEMENTS:
        return <int>min(omp_get_max_threads(), planes)
    return 1


def max_pool_forward(cnp.ndarray x, cnp.ndarray values, cnp.ndarray indices, Py_ssize_t planes,
                     size, out_size, kernel, stride, padding, dilation, cnp.ndarray bias=None):
    """values, indices (planes, *out_size) = the maximum of every window of compact x (planes,
    *size) and its flat position in the plane; windows as torch's max_pool (module
    docstring). With `bias` (float, x's dtype, one value per channel: plane p's is
    bias[p % bias.size]), every value is read as relu(x + bias) with ADD_RELU's ops: the pool
    of a convolution's bias add and ReLU without their pass. Planes are shared out among
    threads."""
    cdef int dt = buffer_dtype(x, "max_pool_forward")
    cdef Axes g
    if buffer_dtype(values, "max_pool_forward", True) != dt:
        raise TypeError(f"max_pool_forward: values must have the dtype of the input "
                        f"({DTYPE_NAMES[dt]})")
    if buffer_dtype(indices, "max_pool_forward", True) != DT_I64:
        raise TypeError("max_pool_forward: indices must have dtype int64")
    if planes < 0:
        raise ValueError(f"max_pool_forward: planes must be non-negative, got {planes}")
    g.bias, g.channels = NULL, 1
    if bias is not None:
        if (dt != DT_F32 and dt != DT_F64) or buffer_dtype(bias, "max_pool_forward") != dt:
            raise TypeError(f"max_pool_forward: bias needs a float input and its dtype, got "
                            f"{DTYPE_NAMES[dt]} and {bias.dtype}")
        if bias.size == 0 or planes % bias.size:
            raise ValueError(f"max_pool_forward: bias has {bias.size} values, which must "
                             f"divide the {planes} planes")
        g.bias, g.channels = cnp.PyArray_DATA(bias), bias.size
    geometry = tuple(tuple(int(v) for v in entry) for entry in
                     (size, out_size, kernel, stride, padding, dilation))
    load_axes(&g, geometry)
    cdef Py_ssize_t outputs = planes * product(geometry[1])
    check_counts("max_pool_forward", (x, values, indices), ("x", "values", "indices"),
                 (planes * product(geometry[0]), outputs, outputs))
    cdef int nt = thread_count(planes, outputs * product(geometry[2])), t
    cdef const void* px = cnp.PyArray_DATA(x)
    cdef void* pv = cnp.PyArray_DATA(values)
    cdef int64_t* pi = <int64_t*>cnp.PyArray_DATA(indices)
    if outputs == 0:
        return
    with nogil:
        if nt == 1:
            pool_part(dt, px, pv, pi, &g, 0, planes)
        else:
            for t in prange(nt, num_threads=nt, schedule="static"):
                pool_part(dt, px, pv, pi, &g, planes * t // nt, planes * (t + 1) // nt)


# ---------------------------------------------------------------------------------------------
# the gradient
# ---------------------------------------------------------------------------------------------

cdef void unpool_planes(const anyt* grad_out, const int64_t* indices, anyt* grad_in,
                        Py_ssize_t p0, Py_ssize_t p1, Py_ssize_t in_plane,
                        Py_ssize_t out_plane) noexcept nogil:
    """Planes [p0, p1) of grad_in: zeroed, then every output's gradient added at its index
    (positions outside the plane are skipped: torch's empty windows point there)."""
    cdef Py_ssize_t p, o
    cdef int64_t at
    cdef anyt* target
    for p in range(p0, p1):
        target = grad_in + p * in_plane
        memset(target, 0, in_plane * sizeof(anyt))
        for o in range(p * out_plane, (p + 1) * out_plane):
            at = indices[o]
            if 0 <= at < in_plane:
                target[at] += grad_out[o]


cdef void unpool_part(int dt, const void* grad_out, const int64_t* indices, void* grad_in,
                      Py_ssize_t p0, Py_ssize_t p1, Py_ssize_t in_plane,
                      Py_ssize_t out_plane) noexcept nogil:
    if dt == DT_F32:
        unpool_planes(<const float*>grad_out, indices, <float*>grad_in, p0, p1, in_plane,
                      out_plane)
    else:
        unpool_planes(<const double*>grad_out, indices, <double*>grad_in, p0, p1, in_plane,
                      out_plane)


def max_pool_backward(cnp.ndarray grad_out, cnp.ndarray indices, cnp.ndarray grad_in,
                      Py_ssize_t planes, Py_ssize_t in_plane, Py_ssize_t out_plane):
    """grad_in (planes, in_plane; float, overwritten) = the sum of the gradients grad_out
    (planes, out_plane) at their flat positions `indices` in each plane (overlapping windows
    add up; positions outside the plane are skipped). Planes are shared out among threads."""
    cdef int dt = buffer_dtype(grad_out, "max_pool_backward")
    if dt != DT_F32 and dt != DT_F64:
        raise TypeError(f"max_pool_backward: unsupported dtype {DTYPE_NAMES[dt]} (float32 or "
                        "float64 only)")
    if buffer_dtype(grad_in, "max_pool_backward", True) != dt:
        raise TypeError(f"max_pool_backward: grad_in must have the dtype of grad_out "
                        f"({DTYPE_NAMES[dt]})")
    if buffer_dtype(indices, "max_pool_backward") != DT_I64:
        raise TypeError("max_pool_backward: indices must have dtype int64")
    if planes < 0 or in_plane < 0 or out_plane < 0:
        raise ValueError(f"max_pool_backward: sizes must be non-negative, got planes={planes}, "
                         f"in_plane={in_plane}, out_plane={out_plane}")
    check_counts("max_pool_backward", (grad_out, indices, grad_in),
                 ("grad_out", "indices", "grad_in"),
                 (planes * out_plane, planes * out_plane, planes * in_plane))
    cdef int nt = thread_count(planes, planes * (in_plane + out_plane)), t
    cdef const void* pg = cnp.PyArray_DATA(grad_out)
    cdef const int64_t* pi = <const int64_t*>cnp.PyArray_DATA(indices)
    cdef void* po = cnp.PyArray_DATA(grad_in)
    if planes == 0 or in_plane == 0:
        return
    with nogil:
        if nt == 1:
            unpool_part(dt, pg, pi, po, 0, planes, in_plane, out_plane)
        else:
            for t in prange(nt, num_threads=nt, schedule="static"):
                unpool_part(dt, pg, pi, po, planes * t // nt, planes * (t + 1) // nt, in_plane,
                            out_plane)
