# cython: cdivision=True
"""grid_sample's kernels: an input sampled at the points of a grid, and the adjoint (the
gradients for the input and for the grid). ATen's GridSampler arithmetic, operation for
operation (its scalar CPU fallback and CUDA kernels; the CUDA twins here are
minitorch/_gpu/kernels/grid_sample.cu).

Layout (every buffer compact, float32 or float64, one dtype): x is (N, C, D, H, W), grid
(N, OD, OH, OW, dims) holding (x, y[, z]) in [-1, 1] per output point, out (N, C, OD, OH, OW);
a 2-D sampling has dims = 2 and D = OD = 1. mode: 0 bilinear (trilinear in 3-D), 1 nearest,
2 bicubic (2-D only); padding: 0 zeros, 1 border, 2 reflection (torch's enum values).

Each output point becomes a list of taps: a source offset in an input plane (-1: outside,
reads 0) and a weight, plus the weight's derivatives along x, y, z of the unnormalized source
coordinate; the chain factors from unnormalizing, clipping and reflecting are kept per axis.
bilinear has 4 taps (nw, ne, sw, se in ATen's order), trilinear 8, nearest 1, bicubic 16:

    out[n, c, p]           = sum_k x[n, c, off_k] * w_k
    grad_input[n, c, off_k] += w_k * g[n, c, p]                         (each tap, each point)
    grad_grid[n, p, axis]  = mult_axis * sum_c sum_k x[n, c, off_k] * dw_k/daxis * g[n, c, p]

nearest's grid gradient is 0 (torch's). The forward and the grid gradient run points in
parallel; the input gradient runs (batch, channel range) units in parallel, each writing only
its own planes, so there are no atomics and every sum has a fixed order.
"""
cimport numpy as cnp
from cython cimport floating
from cython.parallel cimport prange
from libc.math cimport floor, fmod, nearbyint
from libc.string cimport memset

from minitorch._cpu.common cimport DT_F32, DT_F64, dtype_code, threads_for

cnp.import_array()

cdef enum:
    BILINEAR = 0
    NEAREST = 1
    BICUBIC = 2
    ZEROS = 0
    BORDER = 1
    REFLECTION = 2
    MAX_TAPS = 16


cdef struct Geo:
    Py_ssize_t n, c, dims, d, h, w, points, plane
    int mode, padding
    bint align


# ---- coordinates (ATen's GridSampler.h) -----------------------------------------------------
cdef inline floating unnormalize(floating coord, Py_ssize_t size, bint align,
                                 floating* grad) noexcept nogil:
    """[-1, 1] to [0, size - 1] (align_corners) or [-0.5, size - 0.5]; grad = d/dcoord. (The
    constants are typed: Cython writes a bare 1 in float arithmetic as the double 1.0, which
    would compute float32 in double where ATen computes in float.)"""
    cdef floating one = 1, two = 2
    if align:
        grad[0] = <floating>(size - 1) / 2
        return ((coord + one) / two) * <floating>(size - 1)
    grad[0] = <floating>size / 2
    return ((coord + one) * <floating>size - one) / two


cdef inline floating clip(floating v, Py_ssize_t size, floating* grad) noexcept nogil:
    """v clipped to [0, size - 1]; the borders count as outside for the gradient (ATen)."""
    cdef floating top = <floating>(size - 1)
    if v <= 0:
        grad[0] = 0
        return 0
    if v >= top:
        grad[0] = 0
        return top
    grad[0] = 1
    return v


cdef inline floating reflect(floating v, Py_ssize_t twice_low, Py_ssize_t twice_high,
                             floating* grad) noexcept nogil:
    """v reflected by the bounds twice_low / 2 and twice_high / 2 until it falls between.
    ATen's scalar form takes the remainder by the span and the parity of the number of spans,
    which a rounded division gets wrong far out; the remainder by twice the span (exact, as
    ATen's vectorized CPU kernel takes it) folded once gives the same values and the exact
    reflection of any finite v."""
    cdef floating low, span, twice_span, extra, sign = 1
    if twice_low == twice_high:
        grad[0] = 0
        return 0
    low = <floating>twice_low / 2
    span = <floating>(twice_high - twice_low) / 2
    twice_span = <floating>(twice_high - twice_low)
    v = v - low
    if v < 0:
        sign = -1
        v = -v
    extra = <floating>fmod(v, twice_span)
    if extra < span:
        grad[0] = sign
        return extra + low
    grad[0] = -sign
    return (twice_span - extra) + low


cdef inline floating pad_coordinate(floating v, Py_ssize_t size, int padding, bint align,
                                    floating* grad) noexcept nogil:
    """compute_coordinates: border clips, reflection reflects then clips (grad: the chain
    factor of that mapping)."""
    cdef floating g_clip, g_reflect
    if padding == BORDER:
        return clip(v, size, grad)
    if padding == REFLECTION:
        if align:
            v = reflect(v, 0, 2 * (size - 1), &g_reflect)
        else:
            v = reflect(v, -1, 2 * size - 1, &g_reflect)
        v = clip(v, size, &g_clip)
        grad[0] = g_reflect * g_clip
        return v
    grad[0] = 1
    return v


cdef inline Py_ssize_t to_index(floating v) noexcept nogil:
    """static_cast<int64_t> of an integral coordinate; NaN, infinities and values no bounds
    check could accept become -2 or 2**40 (the C conversion of those is undefined)."""
    if not v >= -2:
        return -2
    if v > 1099511627776.0:
        return 1099511627776
    return <Py_ssize_t>v


cdef inline void cubic_coefficients(floating* c, floating t) noexcept nogil:
    """ATen's get_cubic_upsample_coefficients (A = -0.75), in floating arithmetic (the
    multiples of A are exact constants)."""
    cdef floating A = -0.75, one = 1, a_2 = 1.25, a_3 = 2.25, a5 = -3.75, a8 = -6, a4 = -3
    cdef floating x1 = t, x2 = one - t, x
    x = x1 + one
    c[0] = ((A * x - a5) * x + a8) * x - a4
    c[1] = (a_2 * x1 - a_3) * x1 * x1 + one
    c[2] = (a_2 * x2 - a_3) * x2 * x2 + one
    x = x2 + one
    c[3] = ((A * x - a5) * x + a8) * x - a4


cdef inline void cubic_coefficients_grad(floating* c, floating t) noexcept nogil:
    """ATen's get_cubic_coefficients_grad: -3A, 10A, 8A, -3(A + 2), 2(A + 3), 3(A + 2), 3A
    as exact constants."""
    cdef floating one = 1, two = 2, m3a = 2.25, a10 = -7.5, a8 = -6, m3a_2 = -3.75
    cdef floating twoa_3 = 4.5, p3a_2 = 3.75, p3a = -2.25
    cdef floating x
    x = -one - t
    c[0] = (m3a * x - a10) * x - a8
    x = -t
    c[1] = (m3a_2 * x - twoa_3) * x
    x = one - t
    c[2] = (p3a_2 * x - twoa_3) * x
    x = two - t
    c[3] = (p3a * x - a10) * x + a8


cdef int point_taps(const floating* gp, const Geo* g, Py_ssize_t* off, floating* w,
                    floating* dx, floating* dy, floating* dz, floating* mult) noexcept nogil:
    """The taps of the output point whose grid coordinates start at gp; returns their count.
    mult[axis] is the derivative of the source coordinate along axis by the grid value."""
    cdef floating ix, iy, iz = 0, fx, fy, fz = 0, unused, tx, ty
    cdef floating wx[2]
    cdef floating wy[2]
    cdef floating wz[2]
    cdef floating cx[4]
    cdef floating cy[4]
    cdef floating gx[4]
    cdef floating gy[4]
    cdef Py_ssize_t xs[4]
    cdef Py_ssize_t ys[4]
    cdef Py_ssize_t x0, y0, z0 = 0, a, b, e, count = 0, xi, yi, zi
    cdef floating m, one = 1
    cdef bint inside
    mult[2] = 0
    if g.mode == BICUBIC:
        # unnormalized only: the padding maps each of the 16 sample positions instead
        ix = unnormalize(gp[0], g.w, g.align, &mult[0])
        iy = unnormalize(gp[1], g.h, g.align, &mult[1])
        fx = <floating>floor(ix)
        fy = <floating>floor(iy)
        tx = ix - fx
        ty = iy - fy
        cubic_coefficients(cx, tx)
        cubic_coefficients(cy, ty)
        cubic_coefficients_grad(gx, tx)
        cubic_coefficients_grad(gy, ty)
        for a in range(4):
            xi = to_index(pad_coordinate(fx - one + <floating>a, g.w, g.padding, g.align, &unused))
            xs[a] = xi if 0 <= xi < g.w else -1
            yi = to_index(pad_coordinate(fy - one + <floating>a, g.h, g.padding, g.align, &unused))
            ys[a] = yi if 0 <= yi < g.h else -1
        for b in range(4):
            for a in range(4):
                off[count] = ys[b] * g.w + xs[a] if xs[a] >= 0 and ys[b] >= 0 else -1
                w[count] = cx[a] * cy[b]
                dx[count] = -(gx[a] * cy[b])
                dy[count] = -(gy[b] * cx[a])
                dz[count] = 0
                count += 1
        return count
    ix = unnormalize(gp[0], g.w, g.align, &mult[0])
    ix = pad_coordinate(ix, g.w, g.padding, g.align, &m)
    mult[0] = mult[0] * m
    iy = unnormalize(gp[1], g.h, g.align, &mult[1])
    iy = pad_coordinate(iy, g.h, g.padding, g.align, &m)
    mult[1] = mult[1] * m
    if g.dims == 3:
        iz = unnormalize(gp[2], g.d, g.align, &mult[2])
        iz = pad_coordinate(iz, g.d, g.padding, g.align, &m)
        mult[2] = mult[2] * m
    if g.mode == NEAREST:
        xi = to_index(<floating>nearbyint(ix))
        yi = to_index(<floating>nearbyint(iy))
        zi = to_index(<floating>nearbyint(iz)) if g.dims == 3 else 0
        inside = 0 <= xi < g.w and 0 <= yi < g.h and 0 <= zi < g.d
        off[0] = (zi * g.h + yi) * g.w + xi if inside else -1
        w[0] = 1
        dx[0] = dy[0] = dz[0] = 0
        return 1
    fx = <floating>floor(ix)
    fy = <floating>floor(iy)
    x0, y0 = to_index(fx), to_index(fy)
    wx[0], wx[1] = (fx + one) - ix, ix - fx
    wy[0], wy[1] = (fy + one) - iy, iy - fy
    if g.dims == 2:
        for b in range(2):
            for a in range(2):
                xi, yi = x0 + a, y0 + b
                off[count] = yi * g.w + xi if 0 <= xi < g.w and 0 <= yi < g.h else -1
                w[count] = wx[a] * wy[b]
                dx[count] = wy[b] if a else -wy[b]
                dy[count] = wx[a] if b else -wx[a]
                dz[count] = 0
                count += 1
        return count
    fz = <floating>floor(iz)
    z0 = to_index(fz)
    wz[0], wz[1] = (fz + one) - iz, iz - fz
    for e in range(2):
        for b in range(2):
            for a in range(2):
                xi, yi, zi = x0 + a, y0 + b, z0 + e
                off[count] = (zi * g.h + yi) * g.w + xi \
                    if 0 <= xi < g.w and 0 <= yi < g.h and 0 <= zi < g.d else -1
                w[count] = wx[a] * wy[b] * wz[e]
                dx[count] = wy[b] * wz[e] if a else -(wy[b] * wz[e])
                dy[count] = wx[a] * wz[e] if b else -(wx[a] * wz[e])
                dz[count] = wx[a] * wy[b] if e else -(wx[a] * wy[b])
                count += 1
    return count


# ---- the three passes -----------------------------------------------------------------------
cdef void forward_points(const floating* x, const floating* grid, floating* out, const Geo* g,
                         Py_ssize_t e0, Py_ssize_t e1) noexcept nogil:
    """Output points e0..e1 of the flat (N, points) range, every channel."""
    cdef Py_ssize_t off[MAX_TAPS]
    cdef floating w[MAX_TAPS]
    cdef floating dx[MAX_TAPS]
    cdef floating dy[MAX_TAPS]
    cdef floating dz[MAX_TAPS]
    cdef floating mult[3]
    cdef Py_ssize_t e, n, p, c, k, count
    cdef const floating* src
    cdef floating* dst
    cdef floating acc
    for e in range(e0, e1):
        n = e // g.points
        p = e - n * g.points
        count = point_taps(grid + e * g.dims, g, off, w, dx, dy, dz, mult)
        src = x + n * g.c * g.plane
        dst = out + n * g.c * g.points + p
        for c in range(g.c):
            acc = 0
            for k in range(count):
                if off[k] >= 0:
                    acc = acc + src[off[k]] * w[k]
            dst[c * g.points] = acc
            src = src + g.plane


cdef void input_grad_unit(const floating* grad, const floating* grid, floating* grad_in,
                          const Geo* g, Py_ssize_t n, Py_ssize_t c0,
                          Py_ssize_t c1) noexcept nogil:
    """grad_input planes (n, c0..c1): zeroed, then every point's gradient added at its taps
    in point order (ATen's order for a plane)."""
    cdef Py_ssize_t off[MAX_TAPS]
    cdef floating w[MAX_TAPS]
    cdef floating dx[MAX_TAPS]
    cdef floating dy[MAX_TAPS]
    cdef floating dz[MAX_TAPS]
    cdef floating mult[3]
    cdef Py_ssize_t p, c, k, count
    cdef floating gv
    cdef floating* dst
    if c1 <= c0:
        return
    memset(grad_in + (n * g.c + c0) * g.plane, 0, (c1 - c0) * g.plane * sizeof(floating))
    for p in range(g.points):
        count = point_taps(grid + (n * g.points + p) * g.dims, g, off, w, dx, dy, dz, mult)
        for c in range(c0, c1):
            gv = grad[(n * g.c + c) * g.points + p]
            dst = grad_in + (n * g.c + c) * g.plane
            for k in range(count):
                if off[k] >= 0:
                    dst[off[k]] += w[k] * gv


cdef void grid_grad_points(const floating* grad, const floating* x, const floating* grid,
                           floating* grad_grid, const Geo* g, Py_ssize_t e0,
                           Py_ssize_t e1) noexcept nogil:
    """grad_grid of points e0..e1: the taps' weight derivatives against the input values,
    summed over channels, times the coordinate chain factors."""
    cdef Py_ssize_t off[MAX_TAPS]
    cdef floating w[MAX_TAPS]
    cdef floating dx[MAX_TAPS]
    cdef floating dy[MAX_TAPS]
    cdef floating dz[MAX_TAPS]
    cdef floating mult[3]
    cdef Py_ssize_t e, n, p, c, k, count, axis
    cdef floating gv, v, sx, sy, sz
    cdef const floating* src
    cdef floating* dst
    for e in range(e0, e1):
        dst = grad_grid + e * g.dims
        if g.mode == NEAREST:
            for axis in range(g.dims):
                dst[axis] = 0
            continue
        n = e // g.points
        p = e - n * g.points
        count = point_taps(grid + e * g.dims, g, off, w, dx, dy, dz, mult)
        sx = sy = sz = 0
        for c in range(g.c):
            gv = grad[(n * g.c + c) * g.points + p]
            src = x + (n * g.c + c) * g.plane
            for k in range(count):
                if off[k] >= 0:
                    v = src[off[k]]
                    sx = sx + v * dx[k] * gv
                    sy = sy + v * dy[k] * gv
                    sz = sz + v * dz[k] * gv
        dst[0] = mult[0] * sx
        dst[1] = mult[1] * sy
        if g.dims == 3:
            dst[2] = mult[2] * sz


# ---- entry points ---------------------------------------------------------------------------
cdef Geo make_geo(Py_ssize_t batch, Py_ssize_t channels, tuple in_size, tuple out_size,
                  int mode, int padding, bint align_corners, str op) except *:
    cdef Geo g
    cdef Py_ssize_t dims = len(in_size)
    if dims not in (2, 3) or len(out_size) != dims:
        raise ValueError(f"{op}: in_size and out_size must both have 2 or 3 entries, got "
                         f"{in_size} / {out_size}")
    if mode not in (BILINEAR, NEAREST, BICUBIC) or padding not in (ZEROS, BORDER, REFLECTION):
        raise ValueError(f"{op}: unknown mode {mode} or padding {padding}")
    if mode == BICUBIC and dims != 2:
        raise ValueError(f"{op}: bicubic sampling is 2-D only")
    if batch < 0 or channels < 0 or min(in_size + out_size) < 0:
        raise ValueError(f"{op}: negative size in {batch}, {channels}, {in_size} / {out_size}")
    if min(in_size) == 0:
        raise ValueError(f"{op}: empty input plane {in_size}")
    g.n, g.c, g.dims, g.mode, g.padding, g.align = batch, channels, dims, mode, padding, \
        align_corners
    g.d, g.h, g.w = (1,) + in_size if dims == 2 else in_size
    g.points = out_size[0] * out_size[1] * (out_size[2] if dims == 3 else 1)
    g.plane = g.d * g.h * g.w
    return g


cdef int check_buffer(cnp.ndarray a, int dt, Py_ssize_t needed, str name, str op,
                      bint writable) except -1:
    if dtype_code(a) != dt:
        raise TypeError(f"{op}: {name} has dtype {a.dtype}, expected the input's")
    if not cnp.PyArray_IS_C_CONTIGUOUS(a):
        raise ValueError(f"{op}: {name} must be C-contiguous")
    if cnp.PyArray_SIZE(a) < needed:
        raise ValueError(f"{op}: {name} has {cnp.PyArray_SIZE(a)} elements, needs {needed}")
    if writable and not cnp.PyArray_ISWRITEABLE(a):
        raise ValueError(f"{op}: {name} is read-only")
    return 0


cdef int float_dtype(cnp.ndarray a, str op) except -1:
    cdef int dt = dtype_code(a)
    if dt != DT_F32 and dt != DT_F64:
        raise TypeError(f"{op}: unsupported dtype {a.dtype}")
    return dt


def grid_sample_forward(cnp.ndarray x not None, cnp.ndarray grid not None,
                        cnp.ndarray out not None, Py_ssize_t batch, Py_ssize_t channels,
                        tuple in_size, tuple out_size, int mode, int padding,
                        bint align_corners):
    """out (N, C, *out_size) = x (N, C, *in_size) sampled at grid (N, *out_size, dims) (see
    the module docstring); float32 / float64."""
    op = "grid_sample_forward"
    cdef Geo g = make_geo(batch, channels, in_size, out_size, mode, padding, align_corners, op)
    cdef int dt = float_dtype(x, op)
    check_buffer(x, dt, g.n * g.c * g.plane, "x", op, False)
    check_buffer(grid, dt, g.n * g.points * g.dims, "grid", op, False)
    check_buffer(out, dt, g.n * g.c * g.points, "out", op, True)
    cdef Py_ssize_t total = g.n * g.points, e0, e1
    cdef int nt = max(1, min(threads_for(total * max(g.c, 1)), total)), t
    cdef void* px = cnp.PyArray_DATA(x)
    cdef void* pg = cnp.PyArray_DATA(grid)
    cdef void* po = cnp.PyArray_DATA(out)
    if total == 0 or g.c == 0:
        return
    with nogil:
        for t in prange(nt, num_threads=nt, schedule="static"):
            e0, e1 = total * t // nt, total * (t + 1) // nt
            if dt == DT_F32:
                forward_points(<const float*>px, <const float*>pg, <float*>po, &g, e0, e1)
            else:
                forward_points(<const double*>px, <const double*>pg, <double*>po, &g, e0, e1)


def grid_sample_backward(cnp.ndarray grad not None, cnp.ndarray x not None,
                         cnp.ndarray grid not None, cnp.ndarray grad_input,
                         cnp.ndarray grad_grid, Py_ssize_t batch, Py_ssize_t channels,
                         tuple in_size, tuple out_size, int mode, int padding,
                         bint align_corners):
    """grad_input (N, C, *in_size; zeroed first) and grad_grid (N, *out_size, dims) from the
    output gradient grad; either may be None (not wanted)."""
    op = "grid_sample_backward"
    cdef Geo g = make_geo(batch, channels, in_size, out_size, mode, padding, align_corners, op)
    cdef int dt = float_dtype(grad, op)
    check_buffer(grad, dt, g.n * g.c * g.points, "grad", op, False)
    check_buffer(x, dt, g.n * g.c * g.plane, "x", op, False)
    check_buffer(grid, dt, g.n * g.points * g.dims, "grid", op, False)
    if grad_input is not None:
        check_buffer(grad_input, dt, g.n * g.c * g.plane, "grad_input", op, True)
    if grad_grid is not None:
        check_buffer(grad_grid, dt, g.n * g.points * g.dims, "grad_grid", op, True)
    cdef Py_ssize_t total = g.n * g.points, units, chunks, u, n, j, e0, e1
    cdef int nt = max(1, threads_for(total * max(g.c, 1))), t
    cdef void* pgrad = cnp.PyArray_DATA(grad)
    cdef void* px = cnp.PyArray_DATA(x)
    cdef void* pg = cnp.PyArray_DATA(grid)
    cdef void* pgi
    cdef void* pgg
    if grad_input is not None and g.n * g.c > 0:
        pgi = cnp.PyArray_DATA(grad_input)
        # (batch, channel range) units: a thread owns its planes, so no atomics are needed
        chunks = max(1, min(g.c, nt))
        units = g.n * chunks
        with nogil:
            for u in prange(units, num_threads=min(nt, units), schedule="static"):
                n = u // chunks
                j = u - n * chunks
                if dt == DT_F32:
                    input_grad_unit(<const float*>pgrad, <const float*>pg, <float*>pgi, &g, n,
                                    g.c * j // chunks, g.c * (j + 1) // chunks)
                else:
                    input_grad_unit(<const double*>pgrad, <const double*>pg, <double*>pgi, &g,
                                    n, g.c * j // chunks, g.c * (j + 1) // chunks)
    if grad_grid is not None and total > 0:
        pgg = cnp.PyArray_DATA(grad_grid)
        nt = min(nt, total)
        with nogil:
            for t in prange(nt, num_threads=nt, schedule="static"):
                e0, e1 = total * t // nt, total * (t + 1) // nt
                if dt == DT_F32:
                    grid_grad_points(<const float*>pgrad, <const float*>px, <const float*>pg,
                                     <float*>pgg, &g, e0, e1)
                else:
                    grid_grad_points(<const double*>pgrad, <const double*>px,
                                     <const double*>pg, <double*>pgg, &g, e0, e1)
