"""The GPU kernel backend for one device: the KernelBackend interface of minitorch.backend over
CuPy buffers, every computation in our own CUDA kernels (minitorch/_gpu/kernels/*.cu).

CuPy allocates, copies and compiles (NVRTC, lazily, one module per (source, dtype) and device,
cached on disk by CuPy); it does no math here. Arguments are checked on the host with the CPU
backend's exception types and messages (minitorch/_gpu/checks.py), and integer indices are validated before any kernel
reads them: a device-side fault would poison the CUDA context for the rest of the process.
"""
import functools
import math
import struct

import numpy as np

from ..opcodes import FLOAT, BinaryOp, ReduceOp, UnaryOp
from . import buffers, checks as C, compile, graphs, join_fallback, launch as L
# complex factorizations (and the general eigenproblem) have no GPU kernel: the CPU's run on
# host copies (see _on_host), as torch's cuda eig runs on the host in MAGMA
from .._cpu import eig as CPU_EIG, factor as CPU_FACTOR
from .checks import DTYPE_NAMES  # noqa: F401  (tests read the storage dtype names here)

I64, I32 = np.int64, np.int32

_UNARY_OPS = frozenset(int(op) for op in UnaryOp)
_BINARY_OPS = frozenset(int(op) for op in BinaryOp)
_BINARY_CAN_FAIL = {BinaryOp.POW, BinaryOp.FLOOR_DIVIDE, BinaryOp.REMAINDER}
_ARG_OPS = {ReduceOp.ARGMAX, ReduceOp.ARGMIN}
# binary ops binary_rows_kernel leaves to binary_kernel (out-of-line calls: special functions,
# and for int64 the divisions)
_BINARY_CALLED = {BinaryOp.ZETA, BinaryOp.IGAMMA, BinaryOp.IGAMMAC}
_BINARY_CALLED_INT = {BinaryOp.FLOOR_DIVIDE, BinaryOp.REMAINDER, BinaryOp.GCD, BinaryOp.LCM}
_SCATTER_REDUCE_OPS = {ReduceOp.PROD, ReduceOp.MAX, ReduceOp.MIN}
ERR_ZERO_DIV, ERR_NEG_POW = 1, 2
MODE_PLAIN, MODE_CLAIM, MODE_WRITE = 0, 1, 2
_GEOMETRY_CACHE_MAX = 4096
_PLAN_CACHE_MAX = 8192
_RECURRENT_BLOCKS = {0: (1, 1), 1: (1, 1), 2: (4, 4), 3: (3, 4)}   # mode → (G, A) (recurrent.pyx)
_HYPER = struct.Struct("9d")     # Adam's hyper-parameters as doubles, compared bit for bit


def _op_name(enum, op):
    try:
        return enum(op).name
    except ValueError:
        return str(op)


def dtype_class(dtype):
    """The opcodes.py dtype class (FLOAT, INT64, UINT8) of a storage dtype name."""
    return FLOAT if dtype in L.FLOAT_TYPES else dtype


def unary_supported(op, dtype):
    """From the op table in minitorch/opcodes.py, as the CPU kernels check it."""
    return op in _UNARY_OPS and UnaryOp(op).supports(dtype_class(dtype))


def binary_supported(op, dtype):
    return op in _BINARY_OPS and BinaryOp(op).supports(dtype_class(dtype))


def reduce_supported(op, dtype):
    if not ReduceOp.SUM <= op <= ReduceOp.ARGMIN:
        return False
    return op in (ReduceOp.MAX, ReduceOp.MIN) if dtype == "uint8" else True


_DEVICE_METHODS = {}      # name: the method _on_device wraps, unwrapped


def _on_device(method):
    """Run a backend method with this backend's GPU current (allocations and launches). With one
    GPU in the machine it is current in every thread already, and GpuBackend drops the wrapper
    (entering a CuPy Device costs about a microsecond per call)."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        with self._device:
            return method(self, *args, **kwargs)
    _DEVICE_METHODS[method.__name__] = method
    return wrapper


def _i64(value):
    """np.int64(value), from a cache for the common small values (offsets are mostly 0): a
    numpy scalar costs about half a microsecond to build."""
    cached = _SMALL_I64.get(value)
    return I64(value) if cached is None else cached


_SMALL_I64 = {v: I64(v) for v in range(-1, 257)}
_I32_BOOL = (I32(0), I32(1))


class GpuBackend:
    """Kernels and buffers for `cuda:index` (built by minitorch._gpu.backend_for)."""

    def __init__(self, cupy, index, device_count=None):
        self.cupy = cupy
        self.index = index
        self._device = cupy.cuda.Device(index)
        self.sm_count = self._device.attributes["MultiProcessorCount"]
        self._modules = {}
        self._functions = {}
        self._geometries = {}
        self._plans = {}        # launch plans per (kernel, dtypes, shape class): see _plan
        self._fill_values = {}  # (value, its type, dtype): the numpy scalar a fill writes
        self._adam_scalars = (None, None)     # the last Adam hyper-parameters, packed
        self.buffer_cache = buffers.BufferCache(cupy.empty) if buffers.enabled() else None
        self._empty = cupy.empty if self.buffer_cache is None else self.buffer_cache.empty
        self._capture = None    # the CUDA graph capture under way (graphs.py swaps cupy, _empty)
        if device_count is None:
            device_count = cupy.cuda.runtime.getDeviceCount()
        if device_count == 1:   # the only GPU is every thread's current one: no switching
            for name, method in _DEVICE_METHODS.items():
                setattr(self, name, method.__get__(self))

    def __repr__(self):
        return f"<minitorch GPU backend for cuda:{self.index}>"

    def refuse_all(self, message):
        """Make every public method raise RuntimeError(message) (a forked child's backend:
        minitorch._gpu), at no cost to the calls of a process that may use CUDA."""
        def refuse(*args, **kwargs):
            raise RuntimeError(message)
        for name in dir(type(self)):
            if not name.startswith("_") and callable(getattr(type(self), name)):
                setattr(self, name, refuse)

    # ---- buffers ------------------------------------------------------------------------------
    @_on_device
    def empty(self, n, dtype):
        return self._empty(n, dtype)

    def empty_cache(self):
        """Drop the spare buffers of our cache and of CuPy's pool (mt.cuda.empty_cache)."""
        if self.buffer_cache is not None:
            self.buffer_cache.clear()
        pool = getattr(self.cupy, "get_default_memory_pool", None)
        if pool is not None:
            with self._device:
                pool().free_all_blocks()

    @_on_device
    def full(self, n, value, dtype):
        buffer = self._empty(n, dtype)
        if n:
            self._fill(buffer, value)
        return buffer

    @_on_device
    def from_host(self, array):
        return self.cupy.asarray(np.ascontiguousarray(array).reshape(-1))

    def to_host(self, buffer):
        graphs.sync_point(self)
        return buffer.get()

    def data_ptr(self, buffer):
        return buffer.data.ptr

    def synchronize(self):
        graphs.sync_point(self)
        self._device.synchronize()

    # ---- compilation and launch ---------------------------------------------------------------
    def _function(self, module, key, name):
        """The compiled kernel `name` (compiling its whole (module, key) group on first use)."""
        fn = self._functions.get(name)
        if fn is None:
            compiled = self._modules.get((module, key))
            if compiled is None:
                compiled = self._modules[module, key] = self._load(module, key)
            fn = self._functions[name] = compiled.get_function(name)
        return fn

    def _load(self, module, key):
        """Compile and load a module; during a capture with the thread in relaxed mode (loading
        a module, like cudaMalloc, is not stream work, and a global capture may refuse it)."""
        source, names = L.module_source(module), L.name_expressions(module, key)
        if self._capture is None:
            return compile.load_module(self.cupy, source, names, self._device)
        with graphs.relaxed_capture_mode(self.cupy):
            return compile.load_module(self.cupy, source, names, self._device)

    def _launch(self, module, key, name, grid, args, block=L.THREADS):
        self._function(module, key, name)(grid if isinstance(grid, tuple) else (grid,),
                                          block if isinstance(block, tuple) else (block,), args)

    def _plan(self, key, build, *args):
        """The launch plan cached under `key` (a kernel's name, its dtypes and a shape class),
        made by build(*args) on first use: that runs every check that depends only on the key,
        so a hit leaves the per-call checks (buffer lengths, offsets) and the launch. An
        unhashable key (lists for shapes) is planned afresh."""
        try:
            plan = self._plans.get(key)
        except TypeError:
            return build(*args)
        if plan is None:
            if len(self._plans) > _PLAN_CACHE_MAX:
                self._plans.clear()
            plan = self._plans[key] = build(*args)
        return plan

    def _geometry(self, shape, strides_list):
        """(packed Geometry, compiled axis count, key suffix) for an already collapsed view."""
        cache_key = (shape, tuple(strides_list))
        hit = self._geometries.get(cache_key)
        if hit is None:
            if len(self._geometries) > _GEOMETRY_CACHE_MAX:
                self._geometries.clear()
            dims = L.geometry_dims(len(shape))
            hit = (L.pack_geometry(shape, strides_list, dims), dims,
                   ":wide" if dims == L.WIDE_DIMS else "")
            self._geometries[cache_key] = hit
        return hit

    def _claims(self, n):
        """n int64 claims, all -1 (bytes 0xff), for last-writer-wins scatters."""
        claims = self.cupy.empty(max(n, 1), np.int64)
        claims.data.memset_async(0xFF, claims.nbytes)
        return claims

    # ---- strided data movement ----------------------------------------------------------------
    def _strided_view(self, shape, strides, offset, view_buffer, view_name):
        """The checked element count of a strided view into `view_buffer`, and (for a non-empty
        view) its collapsed (shape, strides, packed geometry, compiled axis count, key suffix)."""
        plan = self._plan(("view", shape, strides), self._view_plan, shape, strides)
        self._check_extent(plan[0], offset, view_buffer, view_name)
        return plan[1:]

    def _view_plan(self, shape, strides):
        """(extent for the offset check, size, collapsed shape and strides, geometry, axis
        count, key suffix) of a strided view, after the checks of its shape and strides."""
        shape, strides = C.dims(shape, strides)
        size = C.numel(shape)
        if size == 0:
            return ((shape, strides, 0, -1), 0) + (None,) * 5
        cshape, (_, cstrides) = L.collapse(shape, [L.contiguous(shape), strides])
        return ((self._extent(shape, strides), size, cshape, cstrides)
                + tuple(self._geometry(cshape, [cstrides])))

    join = join_fallback.join      # a loop over compact + strided_set (join_fallback.py)

    @_on_device
    def compact(self, a, out, shape, strides, offset):
        """out[i] = a[offset + Σ idx_d·strides_d] for the i-th index of `shape` in C order."""
        name = C.same_dtype(a, out, "a", "out")
        size, _, _, geometry, dims, wide = self._strided_view(shape, strides, offset, a, "a")
        C.check_length(out, size, "out")
        if size == 0:
            return
        self._launch("strided", name + wide, f"compact_kernel<{L.CTYPES[name]}, {dims}>",
                     L.flat_grid(size), (a, I64(offset), out, I64(size), geometry))

    @_on_device
    def strided_set(self, src, out, shape, strides, offset):
        """out[offset + Σ idx_d·strides_d] = src[i] (src may hold one element: a fill). Where the
        view overlaps itself, the last write in C order wins, as on the CPU."""
        name = C.same_dtype(src, out, "src", "out")
        size, cshape, cstrides, geometry, dims, wide = self._strided_view(shape, strides, offset,
                                                                          out, "out")
        if size == 0:
            return
        step = 0 if src.size == 1 else 1
        if step:
            C.check_length(src, size, "src")
        kernel = f"strided_set_kernel<{L.CTYPES[name]}, {dims}>"
        args = (src, I64(step), out, I64(offset), I64(size), geometry)
        if step == 0 or L.is_injective(cshape, cstrides):
            self._launch("strided", name + wide, kernel, L.flat_grid(size),
                         args + (I32(MODE_PLAIN), None, I64(0)))
            return
        lo, hi = L.view_extent(cshape, cstrides, offset)
        claims = self._claims(hi - lo + 1)
        for mode in (MODE_CLAIM, MODE_WRITE):
            self._launch("strided", name + wide, kernel, L.flat_grid(size),
                         args + (I32(mode), claims, I64(lo)))

    @_on_device
    def strided_add(self, src, out, shape, strides, offset):
        """out[offset + Σ idx_d·strides_d] += src[i]: the adjoint of compact, exact when the view
        overlaps itself (col2im): atomics then, plain adds for injective views. bool: or."""
        name = C.same_dtype(src, out, "src", "out")
        size, cshape, cstrides, geometry, dims, wide = self._strided_view(shape, strides, offset,
                                                                          out, "out")
        C.check_length(src, size, "src")
        if size == 0:
            return
        atomic = not L.is_injective(cshape, cstrides)
        self._launch("strided", name + wide, f"strided_add_kernel<{L.CTYPES[name]}, {dims}>",
                     L.flat_grid(size), (src, out, I64(offset), I64(size), geometry, I32(atomic)))

    @_on_device
    def cast(self, a, out, to_bool=True):
        """out[i] = a[i] converted to out's dtype. A uint8 `out` is bool (a[i] != 0) when
        `to_bool`, else uint8 (the value modulo 256, through int64): the buffer can't say which."""
        src, dst = C.dtype_name(a, "a"), C.dtype_name(out, "out")
        if a.size != out.size:
            raise ValueError(f"cast needs buffers of one length, got {a.size} and {out.size}")
        if not a.size:
            return
        self._launch("strided", src, L.cast_name(src, dst), L.flat_grid(a.size),
                     (a, out, I64(a.size), I32(bool(to_bool))))

    # ---- elementwise --------------------------------------------------------------------------
    @_on_device
    def unary(self, op, a, out):
        """out[i] = op(a[i]) over compact a; ISNAN, ISINF, ISFINITE and LOGICAL_NOT write bool."""
        size = a.size
        fn, op_arg = self._plan(("unary", op, a.dtype, out.dtype), self._unary_plan, op, a, out)
        if out.size != size:
            raise ValueError(f"unary: a has {size} elements but out has {out.size}")
        if size:
            fn((L.flat_grid(size),), L.BLOCK, (op_arg, a, out, _i64(size)))

    def _unary_plan(self, op, a, out):
        name, out_name = C.dtype_name(a, "unary"), C.dtype_name(out, "unary")
        if not unary_supported(op, name):
            raise TypeError(f"unary op {_op_name(UnaryOp, op)} is not supported for dtype "
                            f"{C.SHOWN[name]}")
        if out_name != ("uint8" if UnaryOp(op).writes_bool else name):
            raise TypeError(f"unary op {_op_name(UnaryOp, op)} on {C.SHOWN[name]} cannot write "
                            f"{C.SHOWN[out_name]}")
        return self._function("elementwise", name, f"unary_kernel<{L.CTYPES[name]}>"), I32(op)

    @_on_device
    def binary(self, op, a, b, out, shape, a_strides, a_offset, b_strides, b_offset):
        """out (compact, `shape`) = op(a, b), a and b read through their strides (0 broadcasts)."""
        fn, grid, op_arg, size, size_arg, geometry, a_ext, b_ext, err, rows = self._plan(
            ("binary", op, a.dtype, b.dtype, out.dtype, shape, a_strides, b_strides),
            self._binary_plan, op, a, b, out, shape, a_strides, b_strides)
        if out.size < size:
            raise ValueError(f"out holds {out.size} elements, the result needs {size}")
        if size == 0:
            return
        self._check_extent(a_ext, a_offset, a, "binary: a")
        self._check_extent(b_ext, b_offset, b, "binary: b")
        err = self.cupy.zeros(1, np.int32) if err else None
        if rows is not None:
            fn, grid, block, a_args, b_args, sizes, vec_ok, a_unit, b_unit, width = rows
            vec = vec_ok and not out.data.ptr % L.VECTOR_BYTES and \
                (not a_unit or not (a_offset % width or a.data.ptr % L.VECTOR_BYTES)) and \
                (not b_unit or not (b_offset % width or b.data.ptr % L.VECTOR_BYTES))
            fn(grid, block, (op_arg, a, _i64(a_offset)) + a_args + (b, _i64(b_offset)) + b_args
               + (out,) + sizes + (I32(1) if vec else I32(0), err))
        else:
            fn(grid, L.BLOCK, (op_arg, a, _i64(a_offset), b, _i64(b_offset), out, size_arg,
                               geometry, err))
        if err is not None:
            graphs.sync_point(self)
            flags = int(err.get()[0])
            if flags & ERR_NEG_POW:
                raise RuntimeError("Integers to negative integer powers are not allowed.")
            if flags & ERR_ZERO_DIV:
                raise RuntimeError("ZeroDivisionError")

    def _binary_plan(self, op, a, b, out, shape, a_strides, b_strides):
        """binary's checks of dtypes and shape, and its launch (kernel, grid, packed arguments,
        each operand's (shape, strides, lowest, highest element) for the offset checks)."""
        name, b_name = C.dtype_name(a, "binary"), C.dtype_name(b, "binary")
        out_name = C.dtype_name(out, "binary")
        if name != b_name:
            raise TypeError(f"binary op {_op_name(BinaryOp, op)}: operands differ in dtype "
                            f"({C.SHOWN[name]} and {C.SHOWN[b_name]})")
        if not binary_supported(op, name):
            raise TypeError(f"binary op {_op_name(BinaryOp, op)} is not supported for dtype "
                            f"{C.SHOWN[name]}")
        if out_name != ("uint8" if BinaryOp(op).writes_bool else name):
            raise TypeError(f"binary op {_op_name(BinaryOp, op)} on {C.SHOWN[name]} cannot write "
                            f"{C.SHOWN[out_name]}")
        shape, a_strides = C.dims(shape, a_strides)
        b_strides = C.strides(b_strides, len(shape))
        size = C.numel(shape)
        if size == 0:
            return (None, None, None, 0, None, None, None, None, False, None)
        cshape, (_, sa, sb) = L.collapse(shape, [L.contiguous(shape), a_strides, b_strides])
        geometry, dims, wide = self._geometry(cshape, [sa, sb])
        fn = self._function("elementwise", name + wide, f"binary_kernel<{L.CTYPES[name]}, {dims}>")
        return (fn, (L.flat_grid(size),), I32(op), size, I64(size), geometry,
                self._extent(shape, a_strides), self._extent(shape, b_strides),
                name == "int64" and op in _BINARY_CAN_FAIL,
                self._binary_rows_plan(op, name, cshape, sa, sb))

    def _binary_rows_plan(self, op, name, cshape, sa, sb):
        """binary_rows_kernel's launch (kernel, grid, block, packed strides of a and b, packed
        sizes, whether sizes and strides allow vectors, whether a / b step by one element per
        column, vector width) for a collapsed view it can read, else None."""
        width = L.vector_width(name)
        layout = L.binary_rows_layout(cshape, [sa, sb], width)
        if layout is None or op in _BINARY_CALLED or \
                (name == "int64" and op in _BINARY_CALLED_INT):
            return None
        (rows, inner_rows, cols), (a_rc, b_rc), aligned = layout
        grid, block = L.binary_rows_launch(rows, cols, width)
        fn = self._function("elementwise", name, f"binary_rows_kernel<{L.CTYPES[name]}>")
        magic, shift = L.magic_divider(inner_rows)
        sizes = (I64(rows), I64(inner_rows), np.uint64(magic), np.uint64(shift), I64(cols))
        return (fn, grid, block, tuple(I64(s) for s in a_rc), tuple(I64(s) for s in b_rc),
                sizes, aligned, a_rc[2] == 1, b_rc[2] == 1, width)

    @staticmethod
    def _extent(shape, strides):
        """(shape, strides, lowest, highest) element offset a view reaches from its offset."""
        return (shape, strides) + L.view_extent(shape, strides, 0)

    @staticmethod
    def _check_extent(extent, offset, buffer, name):
        """check_view's test with the extent planned ahead (its IndexError when it fails)."""
        shape, strides, lo, hi = extent
        if offset + lo < 0 or offset + hi >= buffer.size:
            C.check_view(shape, strides, offset, buffer.size, name)

    @_on_device
    def where(self, cond, a, b, out, shape, c_strides, c_offset, a_strides, a_offset,
              b_strides, b_offset):
        """out (compact, `shape`) = a if cond else b, all three read through their strides."""
        c_name = C.dtype_name(cond, "where")
        names = [C.dtype_name(x, "where") for x in (a, b, out)]
        if c_name != "uint8":
            raise TypeError("where expected condition to be a boolean tensor, but got a tensor "
                            f"with dtype {C.SHOWN[c_name]}")
        if len(set(names)) != 1:
            raise TypeError("where: a, b and out must share a dtype (got "
                            + ", ".join(C.SHOWN[n] for n in names) + ")")
        shape, c_strides = C.dims(shape, c_strides)
        a_strides, b_strides = C.strides(a_strides, len(shape)), C.strides(b_strides, len(shape))
        size = C.numel(shape)
        if out.size < size:
            raise ValueError(f"out holds {out.size} elements, the result needs {size}")
        if size == 0:
            return
        for view, offset, buf, label in ((c_strides, c_offset, cond, "cond"),
                                         (a_strides, a_offset, a, "a"),
                                         (b_strides, b_offset, b, "b")):
            C.check_view(shape, view, offset, buf.size, f"where: {label}")
        cshape, (_, sc, sa, sb) = L.collapse(shape, [L.contiguous(shape), c_strides, a_strides,
                                                     b_strides])
        geometry, dims, wide = self._geometry(cshape, [sc, sa, sb])
        name = names[0]
        self._launch("elementwise", name + wide, f"where_kernel<{L.CTYPES[name]}, {dims}>",
                     L.flat_grid(size), (cond, I64(c_offset), a, I64(a_offset), b, I64(b_offset),
                                         out, I64(size), geometry))

    # ---- reductions ---------------------------------------------------------------------------
    @_on_device
    def reduce_last(self, op, a, out, n, inner=1):
        """Reduce the middle axis of compact a viewed as (m, n, inner) into compact out
        (m, inner). ARGMAX/ARGMIN write int64: the first index of the extreme, NaN counting as
        the extreme."""
        name, out_name = C.dtype_name(a, "reduce_last"), C.dtype_name(out, "reduce_last")
        arg = op in _ARG_OPS
        if not reduce_supported(op, name):
            raise TypeError(f"reduce op {_op_name(ReduceOp, op)} is not supported for dtype "
                            f"{C.SHOWN[name]}")
        if out_name != ("int64" if arg else name):
            raise TypeError(f"reduce op {_op_name(ReduceOp, op)} on {C.SHOWN[name]} cannot write "
                            f"{C.SHOWN[out_name]}")
        if n < 0 or inner < 0:
            raise ValueError(f"reduce_last: n={n} and inner={inner} must be non-negative")
        size, osize = a.size, out.size
        if n == 0 or inner == 0:
            if size != 0 or (inner == 0 and osize != 0):
                raise ValueError(f"reduce_last: a has {size} elements, expected 0 for n={n}, "
                                 f"inner={inner}")
            if inner and osize % inner:
                raise ValueError(f"reduce_last: out has {osize} elements, not a multiple of "
                                 f"{inner}")
            if osize:
                if op not in (ReduceOp.SUM, ReduceOp.PROD):
                    raise ValueError(f"{_op_name(ReduceOp, op)}: cannot reduce over an empty "
                                     "axis")
                self._fill(out, 1 if op == ReduceOp.PROD else 0)
            return
        m = size // (n * inner)
        if m * n * inner != size:
            raise ValueError(f"reduce_last: a has {size} elements, not a multiple of n*inner = "
                             f"{n * inner}")
        if osize != m * inner:
            raise ValueError(f"reduce_last: out has {osize} elements, expected {m * inner}")
        if m == 0:
            return
        final = (None, out) if arg else (out, None)
        self._reduce(op, name, a, None, final, m, n, inner)

    def _fill(self, buffer, value):
        """buffer[:] = value, converted as numpy converts it (as on the CPU)."""
        dtype = buffer.dtype
        fn = self._plan(("fill", dtype), self._fill_plan, buffer)
        key = (value, type(value), dtype)
        try:
            if value == 0:      # 0.0 and -0.0 are equal keys but different fills
                key += (math.copysign(1.0, value),)
            scalar = self._fill_values.get(key)
        except TypeError:       # an unhashable value: numpy says what is wrong with it
            scalar = key = None
        if scalar is None:
            scalar = np.full(1, value, dtype)[0]
            if dtype == np.float16:     # fill_kernel<unsigned short> takes the word
                scalar = scalar.view(np.uint16)
            if key is not None and len(self._fill_values) < 256:
                self._fill_values[key] = scalar
        size = buffer.size
        fn((L.flat_grid(size),), L.BLOCK, (buffer, _i64(size), scalar))

    def _fill_plan(self, buffer):
        name = C.dtype_name(buffer, "out")
        return self._function("strided", name, f"fill_kernel<{L.CTYPES[name]}>")

    def _reduce(self, op, name, a, in_idx, final, m, n, inner):
        """One or two passes: partials over chunks of n when there are too few outputs to keep
        the GPU busy, then their reduction into `final` (values, indices)."""
        if op not in _ARG_OPS:
            self._reduce_values(op, name, a, final[0], m, n, inner)
            return
        fn, grid, block, args, parts = self._plan(("reduce", op, name, m, n, inner),
                                                  self._reduce_plan, op, name, m, n, inner)
        if parts == 1:
            target = final
        else:
            count = m * parts * inner
            target = (self._empty(count, a.dtype),
                      self._empty(count, np.int64) if op in _ARG_OPS else None)
        fn(grid, block, (args[0], a, in_idx, target[0], target[1]) + args[1:])
        if parts > 1:
            self._reduce(op, name, target[0], target[1], final, m, parts, inner)

    def _reduce_plan(self, op, name, m, n, inner):
        """(kernel, grid, block, packed op and sizes, parts) of one reduction pass."""
        t = L.CTYPES[name]
        if inner == 1:
            parts, chunk = L.reduce_plan(m, n, 1, self.sm_count)
            kernel, block = f"reduce_rows_kernel<{t}>", (L.row_threads(min(n, chunk)),)
            tasks = m * parts
        else:
            bx, by = L.column_block(inner)
            col_blocks = -(-inner // bx)
            parts, chunk = L.reduce_plan(m, n, col_blocks, self.sm_count)
            kernel, block = f"reduce_cols_kernel<{t}>", (bx, by)
            tasks = m * parts * col_blocks
        sizes = (I64(m), I64(n)) + ((I64(inner),) if inner > 1 else ()) + (I64(parts), I64(chunk))
        return (self._function("reduce", name, kernel), (min(tasks, L.MAX_GRID),), block,
                (I32(op),) + sizes, parts)

    def _reduce_values(self, op, name, a, out, m, n, inner):
        """SUM / PROD / MAX / MIN through the value-only kernels: one pass, or partials over
        parts of n and a second pass over them (deterministic: no atomics). Vector loads when
        the plan's sizes allow them and a is 16-byte aligned."""
        fn, grid, block, args, parts, aligned = self._plan(
            ("reduce_values", op, name, m, n, inner), self._reduce_values_plan, op, name, m, n,
            inner)
        target = out if parts == 1 else self._empty(m * parts * inner, a.dtype)
        vec = I32(1) if aligned and not a.data.ptr % L.VECTOR_BYTES else I32(0)
        fn(grid, block, (args[0], a, target) + args[1:] + (vec,))
        if parts > 1:
            self._reduce_values(op, name, target, out, m, parts, inner)

    def _reduce_values_plan(self, op, name, m, n, inner):
        """(kernel, grid, block, packed op and sizes, parts, whether rows / columns allow vector
        loads) of one value-only reduction pass."""
        t, width = L.CTYPES[name], L.vector_width(name)
        if inner == 1 and n <= L.GROUP_ROW_MAX:
            group = L.row_group(n, width)
            kernel, grid, block = f"reduce_rows_group_kernel<{t}>", L.row_group_grid(m, group), \
                (L.THREADS,)
            sizes, parts, aligned = (I64(m), I64(n), I32(group)), 1, n % width == 0
        elif inner == 1:
            parts, chunk = L.reduce_plan(m, n, 1, self.sm_count, align=width)
            kernel, grid, block = f"reduce_rows_vec_kernel<{t}>", min(m * parts, L.MAX_GRID), \
                (L.THREADS,)
            sizes, aligned = (I64(m), I64(n), I64(parts), I64(chunk)), n % width == 0
        else:
            aligned = inner % width == 0
            columns = inner // width if aligned else inner
            bx, by = L.column_block(columns)
            col_blocks = -(-columns // bx)
            parts, chunk = L.reduce_plan(m, n, col_blocks, self.sm_count)
            kernel, grid, block = f"reduce_cols_vec_kernel<{t}>", \
                min(m * parts * col_blocks, L.MAX_GRID), (bx, by)
            sizes = (I64(m), I64(n), I64(inner), I64(parts), I64(chunk))
        return (self._function("reduce", name, kernel), (grid,), block, (I32(op),) + sizes,
                parts, aligned)

    @staticmethod
    def _scan_checks(kernel, op, a, out, n, inner):
        """(dtype name, slab count m) of a scan of compact a (m, n, inner) into out, after the
        checks every scan shares (op and dtype support are the caller's)."""
        name, out_name = C.dtype_name(a, kernel), C.dtype_name(out, kernel)
        if out_name != name:
            raise TypeError(f"scan {_op_name(ReduceOp, op)} on {C.SHOWN[name]} cannot write "
                            f"{C.SHOWN[out_name]}")
        size = a.size
        if out.size != size:
            raise ValueError(f"{kernel}: a has {size} elements but out has {out.size}")
        if n < 0 or inner < 0:
            raise ValueError(f"{kernel}: n={n} and inner={inner} must be non-negative")
        m = size // (n * inner) if n * inner else 0
        if m * n * inner != size:
            raise ValueError(f"{kernel}: a has {size} elements, not a multiple of n*inner = "
                             f"{n * inner}")
        return name, m

    def _scan(self, kernel, op, name, buffers, m, n, inner):
        """Launch the row (inner == 1) or column variant of a scan kernel over m slabs."""
        t = L.CTYPES[name]
        if m == 0:
            return
        if inner == 1:
            self._launch("reduce", name, f"{kernel}_rows_kernel<{t}>", min(m, L.MAX_GRID),
                         (I32(op),) + buffers + (I64(m), I64(n)), L.row_threads(n))
        else:
            self._launch("reduce", name, f"{kernel}_cols_kernel<{t}>", L.flat_grid(m * inner),
                         (I32(op),) + buffers + (I64(m), I64(n), I64(inner)))

    @_on_device
    def scan_last(self, op, a, out, n, inner=1):
        """Inclusive scan (SUM: cumsum, PROD: cumprod) along the middle axis of (m, n, inner)."""
        if op not in (ReduceOp.SUM, ReduceOp.PROD):
            raise ValueError("scan_last supports SUM (cumsum) and PROD (cumprod), not "
                             f"{_op_name(ReduceOp, op)}")
        if C.dtype_name(a, "scan_last") == "uint8":
            raise TypeError(f"scan {_op_name(ReduceOp, op)} is not supported for dtype bool")
        name, m = self._scan_checks("scan_last", op, a, out, n, inner)
        self._scan("scan", op, name, (a, out), m, n, inner)

    @_on_device
    def scan_index_last(self, op, a, values, indices, n, inner=1):
        """Running MAX (cummax) or MIN (cummin) along the middle axis of (m, n, inner), with the
        int64 position of the extreme (ties: the later one; NaN propagates), as on the CPU."""
        if op not in (ReduceOp.MAX, ReduceOp.MIN):
            raise ValueError("scan_index_last supports MAX (cummax) and MIN (cummin), not "
                             f"{_op_name(ReduceOp, op)}")
        name, m = self._scan_checks("scan_index_last", op, a, values, n, inner)
        if C.dtype_name(indices, "scan_index_last") != "int64":
            raise TypeError("scan_index_last: indices must have dtype int64")
        if indices.size != a.size:
            raise ValueError(f"scan_index_last: a has {a.size} elements but indices has "
                             f"{indices.size}")
        self._scan("scan_index", op, name, (a, values, indices), m, n, inner)

    @_on_device
    def softmax_last(self, a, out, n, log=False):
        """out = softmax (log_softmax when `log`) of each length-n row of compact float a."""
        name = self._softmax_rows(a, out, n, "softmax_last")
        if a.size:
            self._launch("fused", name, f"softmax_rows_kernel<{L.CTYPES[name]}>",
                         L.row_warp_grid(a.size // n), (a, out, I64(a.size // n), I64(n),
                                                        I32(bool(log))))

    @_on_device
    def softmax_backward_last(self, g, y, out, n, log=False):
        """out = the input gradient of softmax (log_softmax) rows of length n from the output y
        and its gradient g."""
        name = self._softmax_rows(g, out, n, "softmax_backward_last")
        if C.dtype_name(y, "softmax_backward_last") != name or y.size != g.size:
            raise ValueError("softmax_backward_last: y must match g in dtype and size")
        if g.size:
            self._launch("fused", name,
                         f"softmax_backward_rows_kernel<{L.CTYPES[name]}>",
                         L.row_warp_grid(g.size // n),
                         (g, y, out, I64(g.size // n), I64(n), I32(bool(log))))

    @_on_device
    def cross_entropy_rows(self, a, target, picked, stats, n):
        """picked[r] = log_softmax(row r of compact float a)[target[r]] (targets checked on
        the host first) and the row's max and log Σ exp(x − max) in stats: one warp per row."""
        name, rows = self._float_rows(a, n, "cross_entropy_rows")
        self._check_targets(target, rows, n, "cross_entropy_rows")
        if C.dtype_name(picked, "cross_entropy_rows") != name or picked.size != rows:
            raise ValueError(f"cross_entropy_rows: picked must hold {rows} values of the "
                             "input's dtype")
        self._check_stats(stats, name, rows, "cross_entropy_rows")
        if rows:
            self._launch("fused", name, f"cross_entropy_rows_kernel<{L.CTYPES[name]}>",
                         L.row_warp_grid(rows), (a, target, picked, stats, I64(rows), I64(n)))

    @_on_device
    def cross_entropy_rows_backward(self, coef, a, target, stats, out, n, targets_checked=False):
        """out[r, j] = coef[r]·[j = target[r]] − softmax(row r of a)[j]·coef[r], the softmax
        from the forward's stats. targets_checked: the forward checked these targets and they
        are guarded since (minitorch.backend): no second range check, a device round trip."""
        name = self._softmax_rows(a, out, n, "cross_entropy_rows_backward")    # out against a
        rows = a.size // n
        self._check_targets(target, rows, n, "cross_entropy_rows_backward",
                            in_range=targets_checked)
        if C.dtype_name(coef, "cross_entropy_rows_backward") != name or coef.size != rows:
            raise ValueError(f"cross_entropy_rows_backward: coef must hold {rows} values of "
                             "the input's dtype")
        self._check_stats(stats, name, rows, "cross_entropy_rows_backward")
        if rows:
            self._launch("fused", name,
                         f"cross_entropy_rows_backward_kernel<{L.CTYPES[name]}>",
                         L.row_warp_grid(rows), (coef, a, target, stats, out, I64(rows), I64(n)))

    @staticmethod
    def _check_stats(stats, name, rows, op):
        if C.dtype_name(stats, op) != name or stats.size != 2 * rows:
            raise ValueError(f"{op}: stats must hold {2 * rows} values of the input's dtype")

    def _check_targets(self, target, rows, n, op, in_range=False):
        """One class per row, each in [0, n) (unless known to be: in_range), checked on the
        host before a kernel reads them."""
        if target.size != rows:
            raise ValueError(f"{op}: target must hold {rows} contiguous classes, got "
                             f"{target.size}")
        if not in_range:
            self._check_index(target, rows, n)

    @_on_device
    def norm_rows(self, x, weight, bias, y, mean, rstd, n, inner=1, groups=1, eps=1e-5,
                  rms=False, segments=1):
        """y = (x - mean)·rstd·weight + bias over length-n rows, mean and rstd saved per row
        (minitorch.backend): one block per row."""
        name, rows, count = self._norm_layout(x, n, inner, groups, segments, "norm_rows")
        self._norm_buffers(name, "norm_rows", ((y, x.size, "y"), (mean, rows, "mean"),
                                               (rstd, rows, "rstd"), (weight, count, "weight"),
                                               (bias, count, "bias")))
        if rows:
            self._launch("norm", name, f"norm_rows_kernel<{L.CTYPES[name]}>", min(rows, L.MAX_GRID),
                         (x, weight, bias, y, mean, rstd, I64(rows), I64(n), I64(inner),
                          I64(groups), np.float64(eps), I32(bool(rms)), I64(segments)))

    @_on_device
    def norm_rows_backward(self, g, x, mean, rstd, weight, grad_input, grad_weight, grad_bias,
                           n, inner=1, groups=1, rms=False, segments=1):
        """The gradients of norm_rows (minitorch.backend): grad_input one block per row, the
        weight and bias gradients as column sums (a lane or a block per parameter)."""
        op = "norm_rows_backward"
        name, rows, count = self._norm_layout(x, n, inner, groups, segments, op)
        if (grad_weight is None) != (grad_bias is None):
            raise ValueError(f"{op}: grad_weight and grad_bias come together")
        self._norm_buffers(name, op, ((g, x.size, "g"), (mean, rows, "mean"),
                                      (rstd, rows, "rstd"), (weight, count, "weight"),
                                      (grad_input, x.size, "grad_input"),
                                      (grad_weight, count, "grad_weight"),
                                      (grad_bias, count, "grad_bias")))
        if not rows:
            return
        t = L.CTYPES[name]
        if grad_input is not None:
            self._launch("norm", name, f"norm_rows_backward_kernel<{t}>", min(rows, L.MAX_GRID),
                         (g, x, mean, rstd, weight, grad_input, I64(rows), I64(n), I64(inner),
                          I64(groups), I32(bool(rms)), I64(segments)))
        if grad_weight is None:
            return
        if inner == 1:
            self._launch("norm", name, f"norm_params_cols_kernel<{t}>",
                         min(-(-count // 32), L.MAX_GRID),
                         (g, x, mean, rstd, grad_weight, grad_bias, I64(rows), I64(n),
                          I64(groups)))
        else:
            self._launch("norm", name, f"norm_params_blocks_kernel<{t}>",
                         min(count, L.MAX_GRID), (g, x, mean, rstd, grad_weight, grad_bias,
                                                  I64(rows), I64(n), I64(inner), I64(groups),
                                                  I64(segments)))

    @staticmethod
    def _norm_layout(x, n, inner, groups, segments, op):
        """(dtype name, rows, parameter count) of a norm_rows layout, checked."""
        name, _ = GpuBackend._float_rows(x, n, op)
        if inner <= 0 or n % inner:
            raise ValueError(f"{op}: inner {inner} does not divide the row length {n}")
        if groups <= 0 or (x.size // n) % groups:
            raise ValueError(f"{op}: {x.size // n} rows are not a multiple of groups = {groups}")
        if segments <= 0 or n % segments or (segments > 1 and inner != n):
            raise ValueError(f"{op}: segments {segments} must divide the row length {n}, and "
                             f"segmented rows take one parameter per row (inner = n)")
        return name, x.size // n, groups * (n // inner)

    @staticmethod
    def _norm_buffers(name, op, buffers):
        """Each (buffer or None, length, label): the input's dtype and that many elements."""
        for buffer, length, label in buffers:
            if buffer is None:
                continue
            if C.dtype_name(buffer, op) != name:
                raise TypeError(f"{op}: {label} must have the dtype of the input "
                                f"({C.SHOWN[name]})")
            if buffer.size != length:
                raise ValueError(f"{op}: {label} has {buffer.size} elements, expected {length}")

    @_on_device
    def adam_step(self, param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, beta1, beta2, eps,
                  step_size, bias_correction2_sqrt, grad_decay=0.0, param_scale=1.0,
                  maximize=False):
        """One Adam update of compact float buffers of one size, in place (minitorch.backend)."""
        name = self._softmax_rows(param, param, 1, "adam_step")
        for buffer in (grad, exp_avg, exp_avg_sq, max_exp_avg_sq):
            if buffer is not None:
                self._softmax_rows(param, buffer, 1, "adam_step")
        if not param.size:
            return
        hyper = (-1.0 if maximize else 1.0, param_scale, grad_decay, 1.0 - beta1, beta2,
                 1.0 - beta2, eps, bias_correction2_sqrt, -step_size)
        key = (name, _HYPER.pack(*hyper))       # the exact bits (-0.0 is not 0.0 here)
        last, scalars = self._adam_scalars     # every parameter of a group shares them
        if key != last:
            scalar = np.float32 if name == "float32" else np.float64
            scalars = tuple(scalar(x) for x in hyper)
            self._adam_scalars = (key, scalars)
        self._launch("fused", name, f"adam_kernel<{L.CTYPES[name]}>",
                     L.flat_grid(param.size),
                     (param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, _i64(param.size))
                     + scalars)

    # ---- multi-tensor optimizer steps (kernels/foreach.cu; the CPU's minitorch/_cpu/foreach.pyx)
    @_on_device
    def foreach_sgd(self, params, grads, momentum_buffers, lr, momentum=0.0, dampening=0.0,
                    weight_decay=0.0, nesterov=False, maximize=False, init_buffers=False):
        """torch's SGD rule over lists of compact buffers, one launch (minitorch.backend)."""
        lists = [params, grads] + ([] if momentum_buffers is None else [momentum_buffers])
        name, total = self._foreach_checks(lists, "foreach_sgd")
        flags = self._foreach_flags(weight_decay != 0, momentum_buffers is not None, nesterov,
                                    init_buffers)
        self._foreach_launch("sgd", name, lists, total, flags, None,
                             (-1.0 if maximize else 1.0, weight_decay, -lr, momentum,
                              1.0 - dampening))

    @_on_device
    def foreach_adam(self, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, lr,
                     beta1, beta2, eps, weight_decay=0.0, decoupled=False, maximize=False):
        """adam_step over lists of buffers in one launch; host step counters += 1."""
        lists = [params, grads, exp_avgs, exp_avg_sqs]
        if max_exp_avg_sqs is not None:
            lists.append(max_exp_avg_sqs)
        name, total = self._foreach_checks(lists, "foreach_adam", steps)
        corrections = [(-(lr / (1 - beta1 ** step)), (1 - beta2 ** step) ** 0.5)
                       for step in self._foreach_count(steps)]
        uniform = all(c == corrections[0] for c in corrections)
        per_tensor = None if uniform else np.array(corrections, np.float64).view(np.uint64)
        flags = self._foreach_flags(weight_decay != 0 and not decoupled,
                                    max_exp_avg_sqs is not None, False, False,
                                    -0.5 < 1.0 - beta1 < 0.5, not uniform)
        neg_step, bc2_sqrt = corrections[0] if corrections else (0.0, 1.0)
        self._foreach_launch("adam", name, lists, total, flags, per_tensor,
                             (-1.0 if maximize else 1.0,
                              1 - lr * weight_decay if decoupled else 1.0,
                              0.0 if decoupled else weight_decay, 1.0 - beta1,
                              1.0 - (1.0 - beta1), beta2, 1.0 - beta2, eps, neg_step, bc2_sqrt))

    @_on_device
    def foreach_adadelta(self, params, grads, square_avgs, acc_deltas, steps, lr, rho, eps,
                         weight_decay=0.0, maximize=False):
        """torch's Adadelta rule over lists of buffers, one launch; host steps += 1."""
        lists = [params, grads, square_avgs, acc_deltas]
        name, total = self._foreach_checks(lists, "foreach_adadelta", steps)
        self._foreach_count(steps)
        self._foreach_launch("adadelta", name, lists, total,
                             self._foreach_flags(weight_decay != 0), None,
                             (-1.0 if maximize else 1.0, weight_decay, -lr, rho, 1.0 - rho, eps))

    @_on_device
    def foreach_rmsprop(self, params, grads, square_avgs, momentum_buffers, grad_avgs, steps, lr,
                        alpha, eps, weight_decay=0.0, momentum=0.0, maximize=False):
        """torch's RMSprop rule over lists of buffers, one launch; host steps += 1."""
        absent = [None] * len(params)
        lists = [params, grads, square_avgs, momentum_buffers or absent, grad_avgs or absent]
        name, total = self._foreach_checks(lists, "foreach_rmsprop", steps)
        self._foreach_count(steps)
        flags = self._foreach_flags(weight_decay != 0, momentum_buffers is not None,
                                    grad_avgs is not None, False, -0.5 < 1.0 - alpha < 0.5)
        self._foreach_launch("rmsprop", name, lists, total, flags, None,
                             (-1.0 if maximize else 1.0, weight_decay, -lr, alpha, 1.0 - alpha,
                              eps, momentum, 1.0 - (1.0 - alpha)))

    @staticmethod
    def _foreach_checks(lists, op, steps=None):
        """(dtype name, total elements) of lists of buffers, one list per slot, checked as the
        CPU's foreach.pyx checks them (the same messages), before anything changes."""
        params, n = lists[0], len(lists[0])
        for s, entries in enumerate(lists[1:], 1):
            if len(entries) != n:
                raise ValueError(f"{op}: {len(entries)} buffers in list {s} for {n} parameters")
        name, total = "float32", 0
        for k, param in enumerate(params):
            if k == 0:
                name = C.dtype_name(param, op)
                if name not in L.FLOAT_TYPES:
                    raise TypeError(f"{op}: unsupported dtype {C.SHOWN[name]} (float32 or "
                                    "float64 only)")
            for s, entries in enumerate(lists):
                buffer = entries[k]
                if buffer is None:
                    if s < 2:
                        raise TypeError(f"{op}: a parameter and its gradient are required")
                    continue
                if C.dtype_name(buffer, op) != name:
                    raise TypeError(f"{op}: every buffer must have the parameters' dtype "
                                    f"({name})")
                if buffer.size != param.size:
                    raise ValueError(f"{op}: a buffer has {buffer.size} elements, its parameter "
                                     f"{param.size}")
            total += param.size
        if steps is not None:
            if len(steps) != n:
                raise ValueError(f"{op}: {len(steps)} step counters for {n} parameters")
            for counter in steps:
                if counter.size != 1 or counter.dtype not in (np.float32, np.float64) or \
                        not counter.flags.writeable:
                    raise ValueError(f"{op}: a step counter is one float32 or float64 element")
        return name, total

    @staticmethod
    def _foreach_flags(decay, buffer=False, nesterov=False, init=False, near=False,
                       per_tensor=False):
        """foreach.cu's FLAG_* bits."""
        return decay * 1 | buffer * 2 | nesterov * 4 | init * 8 | near * 16 | per_tensor * 32

    @staticmethod
    def _foreach_count(steps):
        """Host step counters (one-element float arrays) += 1 in their dtype, as the CPU
        kernels and state["step"].add_(1) do; returns the new counts as Python floats."""
        counts = []
        for counter in steps or ():
            counter[0] += 1
            counts.append(float(counter[0]))
        return counts

    def _foreach_launch(self, rule, name, lists, total, flags, per_tensor, scalars):
        """One launch of foreach_<rule>_kernel over the batch: the pointer table (cached by
        its contents: a parameter list whose buffers stay put is uploaded once) and the
        rule's scalars rounded to the element type."""
        n = len(lists[0])
        if total == 0:
            return
        host = [0]
        for param in lists[0]:
            host.append(host[-1] + param.size)
        for entries in lists:
            host += [0 if b is None else b.data.ptr for b in entries]
        table = np.array(host, np.uint64)
        if per_tensor is not None:
            table = np.concatenate([table, per_tensor.reshape(-1)])
        key = table.tobytes()
        tables = self.__dict__.setdefault("_foreach_tables", {})
        device_table = tables.get(key)
        if device_table is None:
            if len(tables) >= 64:
                tables.clear()
            device_table = tables[key] = self.cupy.asarray(table)
        scalar = np.float32 if name == "float32" else np.float64
        self._launch("foreach", name, f"foreach_{rule}_kernel<{L.CTYPES[name]}>",
                     L.flat_grid(total), (device_table, I64(n), I64(total))
                     + tuple(scalar(x) for x in scalars) + (I32(flags),))

    @staticmethod
    def _float_rows(a, n, op):
        """(dtype name, rows) of float32 / float64 rows of length n in a, checked."""
        name = C.dtype_name(a, op)
        if name not in L.FLOAT_TYPES:
            raise TypeError(f"{op}: unsupported dtype {C.SHOWN[name]} (float32 or float64 only)")
        if n <= 0 or a.size % n:
            raise ValueError(f"{op}: {a.size} elements are not rows of length {n}")
        return name, a.size // n

    @staticmethod
    def _softmax_rows(a, out, n, op):
        """The dtype name of float rows of length n in a, checked against out."""
        name = C.dtype_name(a, op)
        if name not in L.FLOAT_TYPES:
            raise TypeError(f"{op}: unsupported dtype {C.SHOWN[name]} (float32 or float64 only)")
        if C.dtype_name(out, op) != name:
            raise TypeError(f"{op}: out must have the dtype of the input ({C.SHOWN[name]})")
        if n <= 0 or a.size % n:
            raise ValueError(f"{op}: {a.size} elements are not rows of length {n}")
        if out.size != a.size:
            raise ValueError(f"{op}: out has {out.size} elements, expected {a.size}")
        return name

    # ---- sorting ------------------------------------------------------------------------------
    @_on_device
    def sort_last(self, a, values, indices, n, descending=False):
        """values, indices = each length-n row of compact a stably sorted (NaN the largest
        value) and the positions of its elements: a bitonic network on (value, position)
        pairs, in shared memory for rows up to SORT_TILE, else one launch per stage."""
        name = C.dtype_name(a, "sort_last")
        if C.dtype_name(values, "sort_last") != name:
            raise TypeError(f"sort_last: values must have the dtype of the input ({C.SHOWN[name]})")
        if C.dtype_name(indices, "sort_last") != "int64":
            raise TypeError("sort_last: indices must have dtype int64")
        size = a.size
        if n < 0 or (size % n if n else size):
            raise ValueError(f"sort_last: {size} elements are not rows of length {n}")
        if values.size != size or indices.size != size:
            raise ValueError(f"sort_last: values and indices need {size} elements, got "
                             f"{values.size} and {indices.size}")
        if size == 0:
            return
        rows, padded, t = size // n, L.bitonic_length(n), L.CTYPES[name]
        order = I32(bool(descending))
        if padded <= L.SORT_TILE:
            self._launch("sort", name, f"sort_rows_kernel<{t}>", min(rows, L.MAX_GRID),
                         (a, values, indices, I64(rows), I64(n), I64(padded), order))
            return
        keys = self.cupy.empty(rows * padded, a.dtype)
        pos = self.cupy.empty(rows * padded, np.int64)
        sizes, grid = (I64(rows), I64(n), I64(padded)), L.flat_grid(rows * padded)
        self._launch("sort", name, f"sort_pad_kernel<{t}>", grid, (a, keys, pos) + sizes)
        for k, j in L.bitonic_stages(padded):
            self._launch("sort", name, f"sort_stage_kernel<{t}>", grid,
                         (keys, pos) + sizes + (I64(k), I64(j), order))
        self._launch("sort", name, f"sort_unpad_kernel<{t}>", L.flat_grid(size),
                     (keys, pos, values, indices) + sizes)

    @_on_device
    def top_last(self, a, values, indices, n, k, descending=False):
        """values, indices (rows of k) = the first k of sort_last's order of each length-n row:
        the rows sorted whole (the bitonic network has no partial form), the first k columns
        copied out."""
        size = a.size
        if n <= 0 or size % n or not 0 < k <= n:
            raise ValueError(f"top_last: {size} elements are not rows of length {n} >= k = {k} "
                             f"> 0")
        rows = size // n
        if values.size != rows * k or indices.size != rows * k:
            raise ValueError(f"top_last: values and indices need {rows * k} elements, got "
                             f"{values.size} and {indices.size}")
        sorted_values = self.cupy.empty(size, a.dtype)
        sorted_indices = self.cupy.empty(size, np.int64)
        self.sort_last(a, sorted_values, sorted_indices, n, descending)
        self.compact(sorted_values, values, (rows, k), (n, 1), 0)
        self.compact(sorted_indices, indices, (rows, k), (n, 1), 0)

    @_on_device
    def searchsorted(self, boundaries, values, out, n, m, right=False, sorter=None):
        """out (int64) = the insertion point of each of the values (rows of m) in its row of n
        sorted boundaries, or in the one row (binary search per value, torch's comparisons);
        `sorter` positions give the sorted order of unsorted rows (checked before use)."""
        name = C.dtype_name(boundaries, "searchsorted")
        size = values.size
        if C.dtype_name(values, "searchsorted") != name:
            raise TypeError("searchsorted: values must have the dtype of the boundaries "
                            f"({C.SHOWN[name]})")
        if C.dtype_name(out, "searchsorted") != "int64":
            raise TypeError("searchsorted: out must have dtype int64")
        if out.size != size:
            raise ValueError(f"searchsorted: out has {out.size} elements, the values {size}")
        if n < 0 or m < 0 or (size % m if m else size):
            raise ValueError(f"searchsorted: {size} values are not rows of m={m} (n={n})")
        rows = boundaries.size // n if n else 1
        if rows * n != boundaries.size or (rows != 1 and rows * m != size):
            raise ValueError(f"searchsorted: {boundaries.size} boundaries are not one row of "
                             f"n={n} or one per row of m={m} values")
        if sorter is not None:
            if C.dtype_name(sorter, "searchsorted") != "int64":
                raise TypeError("searchsorted: sorter must have dtype int64")
            if sorter.size != boundaries.size:
                raise ValueError(f"searchsorted: sorter has {sorter.size} elements, the "
                                 f"boundaries {boundaries.size}")
            self._check_sorter(sorter, n)
        if size:
            self._launch("sort", name, f"searchsorted_kernel<{L.CTYPES[name]}>",
                         L.flat_grid(size), (boundaries, values, sorter, out, I64(size), I64(n),
                                             I64(m), I32(rows == 1), I32(bool(right))))

    def _check_sorter(self, sorter, n):
        """Every sorter position lies in [0, n) (the index validator, with the CPU's error)."""
        try:
            self._check_index(sorter, sorter.size, n)
        except IndexError:
            values = sorter.get()
            bad = values[(values < 0) | (values >= n)][0]
            raise IndexError(f"searchsorted: sorter position {bad} is out of bounds for rows "
                             f"of {n}") from None

    # ---- fused attention (kernels/attention.cu; the CPU twin is _cpu/attention.pyx) ----------
    ATTENTION_ROWS = 64      # rows (threads) per block: ATTN_ROWS in attention.cu

    @_on_device
    def attention_forward(self, q, k, v, out, lse, sizes, q_view, k_view, v_view, scale,
                          causal=False, mask=None, mask_view=None, keep=None, keep_scale=1.0):
        """out = softmax(scale · q kᵀ + mask) v per plane and each row's logsumexp
        (minitorch.backend.KernelBackend.attention_forward): one thread per query row."""
        name, (planes, length, source, dim, dim_v), views, extra = self._attention_args(
            q, k, v, sizes, (q_view, k_view, v_view), scale, causal, mask, mask_view, keep,
            keep_scale)
        for buffer, n, what in ((out, planes * length * dim_v, "out"),
                                (lse, planes * length, "lse")):
            self._attention_buffer(buffer, name, n, what)
        if planes * length == 0:
            return
        (q_off, q_row), (k_off, k_row), (v_off, v_row) = views
        m_off, bool_mask, add_mask, keep_buffer, m_row, m_col, flags = extra
        self._launch("attention", name, f"attention_forward_kernel<{L.CTYPES[name]}>",
                     planes * self._attention_blocks(length),
                     (q, k, v, out, lse, q_off, k_off, v_off, m_off, bool_mask, add_mask,
                      keep_buffer, I64(length), I64(source), I64(dim), I64(dim_v), I64(q_row),
                      I64(k_row), I64(v_row), I64(m_row), I64(m_col)) + flags,
                     block=self.ATTENTION_ROWS)

    @_on_device
    def attention_backward(self, g, q, k, v, out, lse, dq, dk, dv, sizes, g_view, q_view,
                           k_view, v_view, scale, causal=False, mask=None, mask_view=None,
                           keep=None, keep_scale=1.0):
        """dq, dk, dv of attention_forward (minitorch.backend.KernelBackend.attention_backward):
        one kernel over query rows (dQ, and D = dO · O), one over key rows (dK, dV)."""
        name, (planes, length, source, dim, dim_v), views, extra = self._attention_args(
            q, k, v, sizes, (q_view, k_view, v_view), scale, causal, mask, mask_view, keep,
            keep_scale)
        if C.dtype_name(g, "attention") != name:
            raise TypeError(f"attention: g must have the dtype of q ({C.SHOWN[name]})")
        g_off, g_row = self._attention_view(g_view, planes, length, dim_v, g.size, "g")
        for buffer, n, what in ((out, planes * length * dim_v, "out"),
                                (lse, planes * length, "lse"), (dq, planes * length * dim, "dq"),
                                (dk, planes * source * dim, "dk"),
                                (dv, planes * source * dim_v, "dv")):
            self._attention_buffer(buffer, name, n, what)
        (q_off, q_row), (k_off, k_row), (v_off, v_row) = views
        m_off, bool_mask, add_mask, keep_buffer, m_row, m_col, flags = extra
        common = (g_off, q_off, k_off, v_off, m_off, bool_mask, add_mask, keep_buffer,
                  I64(length), I64(source), I64(dim), I64(dim_v), I64(g_row), I64(q_row),
                  I64(k_row), I64(v_row), I64(m_row), I64(m_col)) + flags
        t = L.CTYPES[name]
        dot = self.cupy.empty(max(planes * length, 1), q.dtype)     # D_i = dO_i · O_i
        if planes * length:
            self._launch("attention", name, f"attention_backward_dq_kernel<{t}>",
                         planes * self._attention_blocks(length),
                         (g, q, k, v, out, lse, dq, dot) + common, block=self.ATTENTION_ROWS)
        if planes * source:
            self._launch("attention", name, f"attention_backward_dkv_kernel<{t}>",
                         planes * self._attention_blocks(source),
                         (g, q, k, v, lse, dot, dk, dv) + common, block=self.ATTENTION_ROWS)

    def _attention_blocks(self, rows):
        return (rows + self.ATTENTION_ROWS - 1) // self.ATTENTION_ROWS

    def _attention_args(self, q, k, v, sizes, views, scale, causal, mask, mask_view, keep,
                        keep_scale):
        """The CPU kernel's checks, then (dtype name, sizes, device plane offsets with row
        strides, (mask offsets, bool mask, added mask, keep: dummies for what is absent, mask
        strides, the scalar arguments))."""
        name = C.dtype_name(q, "attention")
        if name not in L.FLOAT_TYPES:
            raise TypeError(f"attention: unsupported dtype {C.SHOWN[name]} (float32 or float64 "
                            "only)")
        planes, length, source, dim, dim_v = (int(n) for n in sizes)
        if min(planes, length, source, dim, dim_v) < 0:
            raise ValueError(f"attention: negative size in {tuple(sizes)}")
        for buffer, what in ((k, "k"), (v, "v")):
            if C.dtype_name(buffer, "attention") != name:
                raise TypeError(f"attention: {what} must have the dtype of q ({C.SHOWN[name]})")
        device_views = [self._attention_view(view, planes, rows, cols, buffer.size, what)
                        for view, rows, cols, buffer, what in
                        ((views[0], length, dim, q, "q"), (views[1], source, dim, k, "k"),
                         (views[2], source, dim_v, v, "v"))]
        kind, m_off, m_row, m_col = 0, self.cupy.zeros(1, np.int64), 0, 0
        bool_mask, add_mask = self.cupy.zeros(1, np.uint8), self.cupy.zeros(1, q.dtype)
        if mask is not None:
            if causal:
                raise ValueError("attention: a mask and causal=True exclude each other")
            mask_name = C.dtype_name(mask, "attention")
            if mask_name not in ("uint8", name):
                raise TypeError(f"attention: mask must be bool or have the dtype of q "
                                f"({C.SHOWN[name]})")
            kind = 1 if mask_name == "uint8" else 2
            m_off, m_row, m_col = self._attention_view(mask_view, planes, length, source,
                                                       mask.size, "mask", columns=True)
            bool_mask, add_mask = (mask, add_mask) if kind == 1 else (bool_mask, mask)
        keep_buffer = self.cupy.zeros(1, np.uint8)
        if keep is not None:
            if C.dtype_name(keep, "attention") != "uint8":
                raise TypeError("attention: keep must be a bool buffer")
            if keep.size != planes * length * source:
                raise ValueError(f"attention: keep has {keep.size} elements, expected "
                                 f"{planes * length * source}")
            keep_buffer = keep
        real = np.float32 if name == "float32" else np.float64
        flags = (I32(kind), I32(bool(causal)), I32(keep is not None), real(scale),
                 real(keep_scale))
        return name, (planes, length, source, dim, dim_v), device_views, \
            (m_off, bool_mask, add_mask, keep_buffer, m_row, m_col, flags)

    def _attention_view(self, view, planes, rows, cols, size, what, columns=False):
        """(device offsets, row stride[, column stride]) of a view, checked on the host to stay
        inside a buffer of `size` elements (the CPU kernel's check and message)."""
        offsets = np.ascontiguousarray(view[0], dtype=np.int64).reshape(-1)
        row, col = int(view[1]), int(view[2]) if len(view) > 2 else 1
        if offsets.size != planes:
            raise ValueError(f"attention: {what} has {offsets.size} plane offsets, expected "
                             f"{planes}")
        if planes and rows and cols:
            lo = offsets + min(0, (rows - 1) * row) + min(0, (cols - 1) * col)
            hi = offsets + max(0, (rows - 1) * row) + max(0, (cols - 1) * col)
            if lo.min() < 0 or hi.max() >= size:
                raise ValueError(f"attention: the view of {what} reaches outside its buffer")
        device = self.cupy.asarray(offsets if offsets.size else np.zeros(1, np.int64))
        return (device, row, col) if columns else (device, row)

    @staticmethod
    def _attention_buffer(buffer, name, n, what):
        if C.dtype_name(buffer, "attention") != name:
            raise TypeError(f"attention: {what} must have the dtype of q ({C.SHOWN[name]})")
        if buffer.size != n:
            raise ValueError(f"attention: {what} has {buffer.size} elements, expected {n}")

    # ---- matmul -------------------------------------------------------------------------------
    @_on_device
    def matmul(self, a, b, out, batch, m, n, k, a_strides=None, a_offset=0, b_strides=None,
               b_offset=0, bias=None, bias_offset=0, bias_strides=(0, 1), relu=False):
        """out (compact batch x m x n, overwritten) = a (batch x m x k) @ b (batch x k x n), each
        operand read through its (batch, row, col) element strides (None = compact), then the
        epilogue: + bias[bias_offset + i·bias_strides[0] + j·bias_strides[1]], relu. `batch`
        may be a pair (outer, inner) of batch axes, the strides then (outer, inner, row, col)."""
        outer, inner = batch if isinstance(batch, tuple) else (1, batch)
        fn, grid, block, sizes, a_args, b_args, a_ext, b_ext, fast = self._plan(
            ("matmul", a.dtype, b.dtype, out.dtype, outer, inner, m, n, k, a_strides, b_strides),
            self._matmul_plan, a, b, out, outer, inner, m, n, k, a_strides, b_strides)
        batch = outer * inner
        if out.size < batch * m * n:
            raise ValueError(f"matmul: out has {out.size} elements, needs {batch * m * n} "
                             f"(batch={batch}, m={m}, n={n})")
        for buf, label, offset, (dims, strides, lo, hi) in ((a, "a", a_offset, a_ext),
                                                            (b, "b", b_offset, b_ext)):
            if lo is not None and (offset + lo < 0 or offset + hi >= buf.size):
                C.check_matmul_view(buf, label, offset, dims, strides)
        if bias is not None:
            if bias.dtype != out.dtype:
                raise TypeError(f"matmul: dtypes differ: a {a.dtype}, b {b.dtype}, out "
                                f"{out.dtype}, bias {bias.dtype}")
            C.check_matmul_view(bias, "bias", bias_offset, (1, m, n), (0,) + tuple(bias_strides))
        if fn is None:
            return
        if k == 0 and bias is None and not relu:      # an empty sum: zeros
            self._fill(out[:batch * m * n], 0)
            return
        if (fast is not None and not (a_offset | b_offset) & 3
                and not (a.data.ptr | b.data.ptr) & 15):     # float4 reads: aligned operands
            fn, grid, block, a_args, b_args = fast
        fn(grid, block, (a, _i64(a_offset)) + a_args + (b, _i64(b_offset)) + b_args
           + (out,) + sizes + (bias, _i64(bias_offset), _i64(bias_strides[0]),
                               _i64(bias_strides[1]), _I32_BOOL[bool(relu)]))

    def _matmul_plan(self, a, b, out, outer, inner, m, n, k, a_strides, b_strides):
        """matmul's dtype and size checks, its operands' extents and its launch: (kernel or
        None when there is nothing to launch, grid, block, packed sizes, packed strides of a
        and b, extents of a and b)."""
        name = C.dtype_name(a, "matmul")
        if name not in L.FLOAT_TYPES:
            raise TypeError(f"matmul: unsupported dtype {a.dtype} (expected float32 or float64)")
        if b.dtype != a.dtype or out.dtype != a.dtype:
            raise TypeError(f"matmul: dtypes differ: a {a.dtype}, b {b.dtype}, out {out.dtype}")
        batch = outer * inner
        if outer < 0 or inner < 0 or m < 0 or n < 0 or k < 0:
            shown = inner if outer == 1 else (outer, inner)
            raise ValueError(f"matmul: negative size (batch={shown}, m={m}, n={n}, k={k})")
        a_strides = L.matmul_strides(a_strides, inner, m, k)
        b_strides = L.matmul_strides(b_strides, inner, k, n)
        extents = []
        for dims, strides in (((outer, inner, m, k), a_strides), ((outer, inner, k, n), b_strides)):
            extents.append((dims, strides) + ((None, None) if 0 in dims else
                                              L.view_extent(dims, strides, 0)))
        if batch == 0 or m == 0 or n == 0:
            return (None,) * 6 + tuple(extents) + (None,)
        tiles = L.MATMUL_TILES[L.matmul_tiles(batch, m, n, self.sm_count)]
        bm, bn = tiles[:2]
        blocks = min(batch * -(-m // bm) * -(-n // bn), L.MAX_GRID)
        threads = (bm // tiles[3]) * (bn // tiles[4])
        fn = self._function("matmul", name, L.matmul_name(L.CTYPES[name], tiles))
        return (fn, (blocks,), (threads,), (I64(inner), I64(batch), I64(m), I64(n), I64(k)),
                tuple(I64(s) for s in a_strides), tuple(I64(s) for s in b_strides)) + \
            tuple(extents) + (self._sgemm_plan(name, (outer, inner), m, n, k, a_strides,
                                               b_strides),)

    def _sgemm_plan(self, name, batch, m, n, k, a_strides, b_strides):
        """(kernel, grid, block, packed strides of a and b) of the float32 fast path
        (sgemm_kernel), or None when the operands' layout rules it out; batch is (outer,
        inner)."""
        layout = L.sgemm_layout(batch, m, n, k, a_strides, b_strides) \
            if name == "float32" and k else None
        if layout is None:
            return None
        a_k, b_k, a_norm, b_norm = layout
        batch = batch[0] * batch[1]
        tiles = L.SGEMM_TILES[L.sgemm_tiles(batch, m, n, self.sm_count)]
        fn = self._function("matmul", name, L.sgemm_name(tiles, a_k, b_k))
        return (fn, L.sgemm_grid(batch, m, n, tiles), (256,),
                tuple(I64(s) for s in a_norm), tuple(I64(s) for s in b_norm))

    # ---- recurrent steps (layout: minitorch/_cpu/recurrent.pyx) ---------------------------------
    @_on_device
    def recurrent_forward(self, mode, gi, gh, bias, h, c, act, hprev, cprev, out, row0, rows,
                          hidden):
        """One forward time step of an RNN / LSTM / GRU (minitorch.backend)."""
        gates, saved = _RECURRENT_BLOCKS[self._recurrent_mode(mode)]
        end = row0 + rows
        name = self._recurrent_buffers(
            "recurrent_forward", row0, rows, hidden,
            ((gi, "gi", end * gates), (gh, "gh", rows * gates), (bias, "bias", gates),
             (h, "h", rows), (c, "c", rows), (act, "act", end * saved), (hprev, "hprev", end),
             (cprev, "cprev", end), (out, "out", end)),
            required=("gi", "gh", "h", "act", "hprev", "out") + (("c", "cprev") if mode == 2
                                                                 else ()))
        if rows and hidden:
            self._launch("recurrent", name, f"recurrent_forward_kernel<{L.CTYPES[name]}>",
                         L.flat_grid(rows * hidden),
                         (I32(mode), gi, gh, bias, h, c, act, hprev, cprev, out, _i64(row0),
                          _i64(rows), _i64(hidden)))

    @_on_device
    def recurrent_backward(self, mode, dout, dh, carry, act, hprev, cprev, dgi, dgh, row0,
                           rows, hidden):
        """The backward of one recurrent_forward step (minitorch.backend)."""
        gates, saved = _RECURRENT_BLOCKS[self._recurrent_mode(mode)]
        end = row0 + rows
        name = self._recurrent_buffers(
            "recurrent_backward", row0, rows, hidden,
            ((dout, "dout", end), (dh, "dh", rows), (carry, "carry", rows),
             (act, "act", end * saved), (hprev, "hprev", end), (cprev, "cprev", end),
             (dgi, "dgi", end * gates), (dgh, "dgh", end * gates)),
            required=("dout", "dh", "act", "dgi") + {2: ("carry", "cprev"),
                                                     3: ("carry", "hprev", "dgh")}.get(mode, ()))
        if rows and hidden:
            self._launch("recurrent", name, f"recurrent_backward_kernel<{L.CTYPES[name]}>",
                         L.flat_grid(rows * hidden),
                         (I32(mode), dout, dh, carry, act, hprev, cprev, dgi, dgh, _i64(row0),
                          _i64(rows), _i64(hidden)))

    @staticmethod
    def _recurrent_mode(mode):
        if mode not in _RECURRENT_BLOCKS:
            raise ValueError(f"recurrent step: unknown mode {mode}")
        return mode

    @staticmethod
    def _recurrent_buffers(op, row0, rows, hidden, buffers, required):
        """The step's dtype name, after checking every buffer given: one float dtype, at least
        `blocks · hidden` elements each, and the mode's required ones present."""
        if row0 < 0 or rows < 0 or hidden < 0:
            raise ValueError(f"{op}: negative row0, rows or hidden")
        name = None
        for buf, label, blocks in buffers:
            if buf is None:
                if label in required:
                    raise ValueError(f"{op}: this mode needs {label}")
                continue
            kind = C.dtype_name(buf, op)
            if name is None and kind not in L.FLOAT_TYPES:
                raise TypeError(f"recurrent step: unsupported dtype {buf.dtype}")
            name = name or kind
            if kind != name:
                raise TypeError(f"recurrent step: {label} must be a C-contiguous buffer of the "
                                f"step's dtype, got {buf.dtype}")
            if buf.size < blocks * hidden:
                raise ValueError(f"recurrent step: {label} has {buf.size} elements, needs "
                                 f"{blocks * hidden}")
        return name

    # ---- separable gathers (layout: minitorch/_cpu/grid.pyx) ---------------------------------
    @_on_device
    def grid_gather(self, x, index, out, planes, in_size, out_size):
        """out[p, a, b, c] = x[p, index_d[a], index_h[b], index_w[c]] (minitorch.backend)."""
        name = C.same_dtype(x, out, "x", "out")
        n = self._grid_checks(x, index, out, planes, in_size, out_size, "grid_gather")
        if n:
            self._launch("grid", name, f"grid_gather_kernel<{L.CTYPES[name]}>", L.flat_grid(n),
                         (x, index, out, I64(planes)) + tuple(I64(s) for s in in_size)
                         + tuple(I64(s) for s in out_size))

    @_on_device
    def grid_scatter_add(self, grad, index, grad_in, planes, in_size, out_size):
        """grad_in = 0, then the adjoint of grid_gather applied to grad (minitorch.backend)."""
        name = C.same_dtype(grad, grad_in, "grad", "grad_in")
        if name not in L.FLOAT_TYPES:
            raise TypeError(f"grid_scatter_add: unsupported dtype {grad.dtype}")
        n = self._grid_checks(grad_in, index, grad, planes, in_size, out_size,
                              "grid_scatter_add")
        if grad_in.size:
            self._fill(grad_in[:planes * math.prod(in_size)], 0)
        if n:
            self._launch("grid", name, f"grid_scatter_add_kernel<{L.CTYPES[name]}>",
                         L.flat_grid(n), (grad, index, grad_in, I64(planes))
                         + tuple(I64(s) for s in in_size) + tuple(I64(s) for s in out_size))

    # ---- separable linear interpolation (layout: minitorch/_cpu/resample.pyx) ----------------
    @_on_device
    def lerp_resample(self, x, index, weights, out, planes, in_size, out_size, taps):
        """out[p] = the separable linear interpolation of x[p] (minitorch.backend)."""
        self._lerp_launch("lerp_resample", x, "x", out, "out", index, weights, planes, in_size,
                          out_size, taps)

    @_on_device
    def lerp_resample_backward(self, grad, index, weights, grad_in, planes, in_size, out_size,
                               taps):
        """grad_in = 0, then lerp_resample's adjoint applied to grad (minitorch.backend)."""
        self._lerp_launch("lerp_resample_backward", grad, "grad", grad_in, "grad_in", index,
                          weights, planes, in_size, out_size, taps)

    def _lerp_launch(self, op, src, src_name, dst, dst_name, index, weights, planes, in_size,
                     out_size, taps):
        """Both directions' checks (those of the CPU kernels, in their order) and launch."""
        in_size, out_size, taps = tuple(in_size), tuple(out_size), tuple(taps)
        if planes < 0:
            raise ValueError(f"{op}: negative planes")
        if min(in_size + out_size) < 0:
            raise ValueError(f"{op}: negative size in {in_size} / {out_size}")
        if any(t not in (1, 2) for t in taps):
            raise ValueError(f"{op}: taps must be 1 or 2, got {taps}")
        if index.dtype != np.int64:
            raise TypeError(f"{op}: index must be a C-contiguous int64 buffer")
        total = 2 * sum(out_size)
        for name, buf in (("index", index), ("weights", weights)):
            if buf.size < total:
                raise ValueError(f"{op}: {name} has {buf.size} entries, needs {total}")
        name = C.dtype_name(src, op)
        if name not in L.FLOAT_TYPES:
            raise TypeError(f"{op}: unsupported dtype {src.dtype}")
        if dst.dtype != src.dtype or weights.dtype != src.dtype:
            raise TypeError(f"{op}: dtypes differ: {src_name} {src.dtype}, {dst_name} "
                            f"{dst.dtype}, weights {weights.dtype}")
        forward = op == "lerp_resample"
        n_in, n_out = planes * math.prod(in_size), planes * math.prod(out_size)
        for label, buf, size in ((src_name, src, n_in if forward else n_out),
                                 (dst_name, dst, n_out if forward else n_in)):
            if buf.size < size:
                raise ValueError(f"{op}: {label} has {buf.size} elements, needs {size}")
        start = 0
        for count, bound in zip(out_size, in_size):
            self._check_index(index[start:start + 2 * count], 2 * count, bound)
            start += 2 * count
        if not forward and n_in:
            self._fill(dst[:n_in], 0)
        if n_out:
            self._launch("resample", name, f"{op}_kernel<{L.CTYPES[name]}>", L.flat_grid(n_out),
                         (src, index, weights, dst, I64(planes))
                         + tuple(I64(s) for s in in_size + out_size)
                         + tuple(I32(t) for t in taps))

    # ---- grid_sample (layout: minitorch/_cpu/grid_sample.pyx) --------------------------------
    @_on_device
    def grid_sample_forward(self, x, grid, out, batch, channels, in_size, out_size, mode,
                            padding, align_corners):
        """out = x sampled at grid's points (minitorch.backend)."""
        op = "grid_sample_forward"
        name, args, points = self._grid_sample_checks(
            op, ((x, "x", False), (grid, "grid", True), (out, "out", None)), batch, channels,
            in_size, out_size, mode, padding, align_corners)
        if batch * points and channels:
            self._launch("grid_sample", name, f"{op}_kernel<{L.CTYPES[name]}>",
                         L.flat_grid(batch * points), (x, grid, out) + args)

    @_on_device
    def grid_sample_backward(self, grad, x, grid, grad_input, grad_grid, batch, channels,
                             in_size, out_size, mode, padding, align_corners):
        """grad_input (zeroed first) and grad_grid of grid_sample (minitorch.backend); either
        may be None."""
        op = "grid_sample_backward"
        name, args, points = self._grid_sample_checks(
            op, ((grad, "grad", None), (x, "x", False), (grid, "grid", True),
                 (grad_input, "grad_input", False), (grad_grid, "grad_grid", True)),
            batch, channels, in_size, out_size, mode, padding, align_corners)
        n_in = batch * channels * math.prod(in_size)
        if grad_input is not None and n_in:
            self._fill(grad_input[:n_in], 0)
        if batch * points and (grad_grid is not None or (grad_input is not None and n_in)):
            self._launch("grid_sample", name, f"{op}_kernel<{L.CTYPES[name]}>",
                         L.flat_grid(batch * points), (grad, x, grid, grad_input, grad_grid)
                         + args)

    def _grid_sample_checks(self, op, buffers, batch, channels, in_size, out_size, mode,
                            padding, align_corners):
        """The CPU kernels' checks, in their order; returns (dtype name, the launch's size
        arguments, output points per batch element). buffers: (buffer or None, label, which
        layout: False input, True grid, None output)."""
        in_size, out_size = tuple(in_size), tuple(out_size)
        dims = len(in_size)
        if dims not in (2, 3) or len(out_size) != dims:
            raise ValueError(f"{op}: in_size and out_size must both have 2 or 3 entries, got "
                             f"{in_size} / {out_size}")
        if mode not in (0, 1, 2) or padding not in (0, 1, 2):
            raise ValueError(f"{op}: unknown mode {mode} or padding {padding}")
        if mode == 2 and dims != 2:
            raise ValueError(f"{op}: bicubic sampling is 2-D only")
        if batch < 0 or channels < 0 or min(in_size + out_size) < 0:
            raise ValueError(f"{op}: negative size in {batch}, {channels}, {in_size} / "
                             f"{out_size}")
        if min(in_size) == 0:
            raise ValueError(f"{op}: empty input plane {in_size}")
        name = C.dtype_name(buffers[0][0], op)
        if name not in L.FLOAT_TYPES:
            raise TypeError(f"{op}: unsupported dtype {buffers[0][0].dtype}")
        points = math.prod(out_size)
        sizes = {False: batch * channels * math.prod(in_size), True: batch * points * dims,
                 None: batch * channels * points}
        for buf, label, layout in buffers:
            if buf is None:
                continue
            if C.dtype_name(buf, op) != name:
                raise TypeError(f"{op}: {label} has dtype {buf.dtype}, expected the input's")
            if buf.size < sizes[layout]:
                raise ValueError(f"{op}: {label} has {buf.size} elements, needs "
                                 f"{sizes[layout]}")
        d, h, w = (1,) + in_size if dims == 2 else in_size
        args = (I64(batch), I64(channels), I64(d), I64(h), I64(w), I64(points), I32(dims),
                I32(mode), I32(padding), I32(1 if align_corners else 0))
        return name, args, points

    def _grid_checks(self, x, index, out, planes, in_size, out_size, op):
        """Sizes of the (planes, *in_size) and (planes, *out_size) buffers and the index tables
        (every entry in range, checked on the device); returns the output's element count."""
        if min(tuple(in_size) + tuple(out_size) + (planes,)) < 0:
            raise ValueError(f"{op}: negative size in {tuple(in_size)} / {tuple(out_size)}")
        C.check_length(x, planes * math.prod(in_size), "x" if op == "grid_gather" else "grad_in")
        n = planes * math.prod(out_size)
        C.check_length(out, n, "out" if op == "grid_gather" else "grad")
        start = 0
        for count, bound in zip(out_size, in_size):
            self._check_index(index[start:start + count], count, bound)
            start += count
        return n

    # ---- index kernels ------------------------------------------------------------------------
    def _check_index(self, index, n, dim):
        """index is an int64 buffer of at least n entries, all in [0, dim). One reduction on the
        GPU (the largest index read as unsigned, so negatives count as huge) and one number
        back; only a failing check copies the indices over to name the first bad one."""
        if index.dtype != np.int64:
            raise TypeError(f"index must have dtype int64, got {index.dtype}")
        C.check_length(index, n, "index")
        if n == 0:
            return
        if self._capture is not None:   # no readback inside a capture: checked at each replay
            self._capture.defer_index_check(index, n, dim)
            return
        largest = self.cupy.zeros(1, np.uint64)
        self._launch("index", "check", "index_umax_kernel",
                     max(1, min(-(-n // L.THREADS), 4 * self.sm_count)),
                     (index, I64(n), largest))
        if int(largest.get()[0]) >= dim:
            values = index[:n].get()
            bad = values[(values < 0) | (values >= dim)][0]
            raise IndexError(f"index {bad} is out of bounds for dimension with size {dim}")

    @_on_device
    def gather(self, a, index, out, outer, a_dim, index_dim, inner):
        """out[o, j, i] = a[o, index[o, j, i], i]; a is (outer, a_dim, inner)."""
        n = outer * index_dim * inner
        C.check_sizes(outer, a_dim, index_dim, inner)
        name = C.same_dtype(a, out, "a", "out")
        C.check_length(a, outer * a_dim * inner, "a")
        C.check_length(out, n, "out")
        self._check_index(index, n, a_dim)
        if n:
            self._launch("index", name, f"gather_kernel<{L.CTYPES[name]}>", L.flat_grid(n),
                         (a, index, out, I64(outer), I64(a_dim), I64(index_dim), I64(inner)))

    def _scatter_checks(self, src, index, out, outer, out_dim, index_dim, inner):
        n = outer * index_dim * inner
        C.check_sizes(outer, out_dim, index_dim, inner)
        name = C.same_dtype(src, out, "src", "out")
        C.check_length(src, n, "src")
        C.check_length(out, outer * out_dim * inner, "out")
        self._check_index(index, n, out_dim)
        return name, n

    @_on_device
    def scatter(self, src, index, out, outer, out_dim, index_dim, inner):
        """out[o, index[o, j, i], i] = src[o, j, i] (duplicates: the last j wins)."""
        name, n = self._scatter_checks(src, index, out, outer, out_dim, index_dim, inner)
        if n == 0:
            return
        claims = self._claims(outer * out_dim * inner)
        for mode in (MODE_CLAIM, MODE_WRITE):
            self._launch("index", name, f"scatter_kernel<{L.CTYPES[name]}>", L.flat_grid(n),
                         (src, index, out, I64(outer), I64(out_dim), I64(index_dim), I64(inner),
                          I32(mode), claims))

    @_on_device
    def scatter_add(self, src, index, out, outer, out_dim, index_dim, inner):
        """out[o, index[o, j, i], i] += src[o, j, i]: the adjoint of gather (bool: logical or)."""
        name, n = self._scatter_checks(src, index, out, outer, out_dim, index_dim, inner)
        if n:
            self._launch("index", name, f"scatter_add_kernel<{L.CTYPES[name]}>", L.flat_grid(n),
                         (src, index, out, I64(outer), I64(out_dim), I64(index_dim), I64(inner)))

    @_on_device
    def scatter_reduce(self, op, src, index, out, outer, out_dim, index_dim, inner):
        """out[o, index[o, j, i], i] = op(that element, src[o, j, i]) for the ReduceOp PROD, MAX
        or MIN: a compare-and-swap loop per element (float products in any order)."""
        if op not in _SCATTER_REDUCE_OPS:
            raise ValueError("scatter_reduce supports the reduce ops PROD, MAX and MIN, not "
                             f"{int(op)}")
        name, n = self._scatter_checks(src, index, out, outer, out_dim, index_dim, inner)
        if n:
            self._launch("index", name, f"scatter_reduce_kernel<{L.CTYPES[name]}>",
                         L.flat_grid(n), (I32(op), src, index, out, I64(outer), I64(out_dim),
                                          I64(index_dim), I64(inner)))

    @_on_device
    def index_select(self, a, index, out, outer, a_dim, n_index, inner):
        """out[o, j, i] = a[o, index[j], i] (an embedding lookup is outer=1, inner=dim)."""
        C.check_sizes(outer, a_dim, n_index, inner)
        name = C.same_dtype(a, out, "a", "out")
        C.check_length(a, outer * a_dim * inner, "a")
        n = outer * n_index * inner
        C.check_length(out, n, "out")
        self._check_index(index, n_index, a_dim)
        if n:
            self._launch("index", name, f"index_select_kernel<{L.CTYPES[name]}>", L.flat_grid(n),
                         (a, index, out, I64(outer), I64(a_dim), I64(n_index), I64(inner)))

    @_on_device
    def index_add(self, src, index, out, outer, out_dim, n_index, inner):
        """out[o, index[j], i] += src[o, j, i]: the adjoint of index_select (duplicates add)."""
        C.check_sizes(outer, out_dim, n_index, inner)
        name = C.same_dtype(src, out, "src", "out")
        n = outer * n_index * inner
        C.check_length(src, n, "src")
        C.check_length(out, outer * out_dim * inner, "out")
        self._check_index(index, n_index, out_dim)
        if n:
            self._launch("index", name, f"index_add_kernel<{L.CTYPES[name]}>", L.flat_grid(n),
                         (src, index, out, I64(outer), I64(out_dim), I64(n_index), I64(inner)))

    @_on_device
    def take(self, a, offsets, out):
        """out[i] = a[offsets[i]] (flat element offsets into the buffer a)."""
        name = C.same_dtype(a, out, "a", "out")
        n = offsets.size
        C.check_length(out, n, "out")
        self._check_index(offsets, n, a.size)
        if n:
            self._launch("index", name, f"take_kernel<{L.CTYPES[name]}>", L.flat_grid(n),
                         (a, offsets, out, I64(n)))

    @_on_device
    def put(self, src, offsets, out, accumulate):
        """out[offsets[i]] = src[i], or += when `accumulate` (duplicates then all count); a
        one-element src is broadcast. Without accumulate the last duplicate wins."""
        name = C.same_dtype(src, out, "src", "out")
        n = offsets.size
        step = 0 if src.size == 1 else 1
        C.check_length(src, n * step, "src")
        self._check_index(offsets, n, out.size)
        if n == 0:
            return
        kernel = f"put_kernel<{L.CTYPES[name]}>"
        if accumulate:
            self._launch("index", name, kernel, L.flat_grid(n),
                         (src, I64(step), offsets, out, I64(n), I32(1), I32(MODE_PLAIN), None))
            return
        claims = self._claims(out.size)
        for mode in (MODE_CLAIM, MODE_WRITE):
            self._launch("index", name, kernel, L.flat_grid(n),
                         (src, I64(step), offsets, out, I64(n), I32(0), I32(mode), claims))

    # ---- factorisations (kernels/factor.cu; one block per matrix) ------------------------------
    @_on_device
    def lu_factor(self, a, pivots, info, m, n):
        """In place on compact m x n matrices (one per element of info): getrf's L and U with
        partial pivoting, its 1-based pivots (int64) and info (first zero pivot's order or 0)."""
        if a.dtype.kind == "c":     # no complex GPU kernel: the CPU's on a host copy
            return self._on_host(CPU_FACTOR.lu_factor, (a, pivots, info), (a, pivots, info),
                                 m, n)
        name = C.float_buffer(a, "lu_factor", "a")
        C.int64_buffer(pivots, "lu_factor", "pivots")
        C.int64_buffer(info, "lu_factor", "info")
        C.factor_sizes("lu_factor", m, n)
        batch = info.size
        C.factor_count("lu_factor", "a", a.size, batch * m * n)
        C.factor_count("lu_factor", "pivots", pivots.size, batch * min(m, n))
        if batch:
            self._launch("factor", name, f"lu_factor_kernel<{L.CTYPES[name]}>",
                         min(batch, L.MAX_GRID), (a, pivots, info, I64(batch), I64(m), I64(n)))

    @_on_device
    def lu_permutation(self, pivots, perm, m, k):
        """perm (int64, m per matrix) = the original row at each row after the 1-based swaps
        `pivots` (k per matrix); swaps out of [1, m] are skipped (callers reject them)."""
        C.int64_buffer(pivots, "lu_permutation", "pivots")
        C.int64_buffer(perm, "lu_permutation", "perm")
        C.factor_sizes("lu_permutation", m, k)
        if k > m:
            raise ValueError(f"lu_permutation: {k} pivots do not fit rows of {m}")
        batch = perm.size // m if m else 0
        C.factor_count("lu_permutation", "perm", perm.size, batch * m)
        C.factor_count("lu_permutation", "pivots", pivots.size, batch * k)
        if batch:
            self._launch("factor", "float64", "lu_permutation_kernel", L.flat_grid(batch),
                         (pivots, perm, I64(batch), I64(m), I64(k)))

    @_on_device
    def triangular_solve(self, a, b, n, k, upper=False, unitriangular=False):
        """b (compact n x k matrices) = A^-1 b in place for the compact triangular n x n
        matrices a (lower, or upper; the diagonal is not read when unitriangular)."""
        if a.dtype.kind == "c" or b.dtype.kind == "c":
            return self._on_host(CPU_FACTOR.triangular_solve, (a, b), (b,), n, k, upper,
                                 unitriangular)
        name = C.float_buffer(a, "triangular_solve", "a")
        if C.dtype_name(b, "triangular_solve") != name:
            raise TypeError(f"triangular_solve: b must have the dtype of a ({C.SHOWN[name]})")
        C.factor_sizes("triangular_solve", n, k)
        batch = C.matrix_count("triangular_solve", a.size, n)
        C.factor_count("triangular_solve", "b", b.size, batch * n * k)
        if batch and k:
            self._launch("factor", name, f"triangular_solve_kernel<{L.CTYPES[name]}>",
                         min(batch, L.MAX_GRID), (a, b, I64(batch), I64(n), I64(k),
                                                  I32(bool(upper)), I32(bool(unitriangular))))

    @_on_device
    def cholesky_factor(self, a, info, n):
        """In place on compact n x n matrices (one per element of info): L (strict upper
        triangle zeroed) from the lower triangle; info = first non-positive minor's order."""
        if a.dtype.kind == "c":
            return self._on_host(CPU_FACTOR.cholesky_factor, (a, info), (a, info), n)
        name = C.float_buffer(a, "cholesky_factor", "a")
        C.int64_buffer(info, "cholesky_factor", "info")
        C.factor_sizes("cholesky_factor", n, n)
        batch = info.size
        C.factor_count("cholesky_factor", "a", a.size, batch * n * n)
        if batch:
            self._launch("factor", name, f"cholesky_factor_kernel<{L.CTYPES[name]}>",
                         min(batch, L.MAX_GRID), (a, info, I64(batch), I64(n)))

    # ---- spectral decompositions (kernels/spectral.cu; one block per matrix) ------------------
    @_on_device
    def eigh_jacobi(self, a, values, vectors, info, batch, n):
        """values (ascending), vectors (columns) of each symmetric n x n matrix of compact a,
        read from its lower triangle (a is overwritten); info[b] = 1 where b did not converge."""
        if batch < 0 or n < 0:
            raise ValueError(f"eigh_jacobi: negative size (batch={batch}, n={n})")
        counts = (batch * n * n, batch * n, batch * n * n)
        name = C.spectral_buffers("eigh_jacobi", a, (values, vectors), ("a", "values", "vectors"),
                                 counts, info, batch)
        if batch and n:
            self._spectral_run("eigh_jacobi_kernel", name, batch, n + (n & 1),
                               (a, values, vectors, info), (I64(batch), I64(n)))
        elif batch:
            self._fill(info, 0)     # nothing to iterate on: converged

    @_on_device
    def svd_jacobi(self, a, s, v, info, batch, m, n):
        """Each m x n matrix (m >= n) of compact a becomes U, s (descending) its singular
        values, v V: a = U diag(s) V^T; info[b] = 1 where b did not converge."""
        if batch < 0 or n < 0 or m < n:
            raise ValueError(f"svd_jacobi: needs 0 <= n <= m and batch >= 0, got batch={batch}, "
                             f"m={m}, n={n}")
        name = C.spectral_buffers("svd_jacobi", a, (s, v), ("a", "s", "v"),
                                 (batch * m * n, batch * n, batch * n * n), info, batch)
        if batch and n:
            self._spectral_run("svd_jacobi_kernel", name, batch, n + (n & 1), (a, s, v, info),
                               (I64(batch), I64(m), I64(n)))
        elif batch:
            self._fill(info, 0)     # nothing to iterate on: converged

    @_on_device
    def qr_householder(self, a, tau, batch, m, n):
        """Each m x n matrix of compact a becomes R (on and above the diagonal) and its
        Householder reflectors (below), tau (batch x min(m, n)) their factors: geqrf."""
        if batch < 0 or m < 0 or n < 0:
            raise ValueError(f"qr_householder: negative size (batch={batch}, m={m}, n={n})")
        name = C.spectral_buffers("qr_householder", a, (tau,), ("a", "tau"),
                                 (batch * m * n, batch * min(m, n)))
        if batch and m and n:
            self._spectral_run("qr_householder_kernel", name, batch, n, (a, tau),
                               (I64(batch), I64(m), I64(n)))

    @_on_device
    def qr_form_q(self, a, tau, q, batch, m, n, cols):
        """q (batch x m x cols, cols <= m) = the first cols columns of Q from qr_householder's
        a and tau (orgqr: the reflectors applied to the identity, last first)."""
        if batch < 0 or m < 0 or n < 0 or not 0 <= cols <= m:
            raise ValueError(f"qr_form_q: needs 0 <= cols <= m and sizes >= 0, got "
                             f"batch={batch}, m={m}, n={n}, cols={cols}")
        name = C.spectral_buffers("qr_form_q", a, (tau, q), ("a", "tau", "q"),
                                 (batch * m * n, batch * min(m, n), batch * m * cols))
        if batch and m and cols:
            self._spectral_run("qr_form_q_kernel", name, batch, cols, (a, tau, q),
                               (I64(batch), I64(m), I64(n), I64(cols)))

    def eig_general(self, a, values, vectors, info, batch, n):
        """The CPU kernel (_cpu/eig.pyx) on host copies: there is no GPU kernel for the
        non-symmetric eigenproblem (torch's cuda eig runs on the host too, in MAGMA's geev)."""
        self._on_host(CPU_EIG.eig_general, (a, values, vectors, info), (values, vectors, info),
                      batch, n)

    def _on_host(self, kernel, buffers, written, *sizes):
        """kernel(*host copies of buffers, *sizes) with a CPU kernel, then the `written`
        buffers copied back into place (complex ones as their float pairs); None passes
        through. For the factorizations minitorch has no GPU kernel of (complex matrices)."""
        host = {id(x): self.to_host(x) for x in buffers if x is not None}
        kernel(*(None if x is None else host[id(x)] for x in buffers), *sizes)
        for x in written:
            if x is None:
                continue
            target = x.view(np.float64 if x.dtype.itemsize == 16 else np.float32) \
                if x.dtype.kind == "c" else x
            source = self.from_host(host[id(x)].view(target.dtype))
            self.strided_set(source, target, (target.size,), (1,), 0)

    def _spectral_run(self, kernel, name, batch, work_per_matrix, buffers, sizes):
        """One block per matrix, each with its row of work_per_matrix scratch elements."""
        work = self.cupy.empty(batch * work_per_matrix, np.dtype(name))
        self._launch("spectral", name, f"{kernel}<{L.CTYPES[name]}>", min(batch, L.MAX_GRID),
                     buffers + (work,) + sizes)

    # ---- max pooling (kernels/pool.cu; the CPU's minitorch/_cpu/pool.pyx checks) --------------
    @_on_device
    def max_pool_forward(self, x, values, indices, planes, size, out_size, kernel, stride,
                         padding, dilation, bias=None):
        """values, indices (planes, *out_size) = the maximum of every window of compact x
        (planes, *size) and its flat position in the plane (torch's windows, NaN wins, ties
        keep the first), each value read as relu(x + bias[plane % channels]) when a bias is
        given: one thread per output, 1-D and 2-D run as 3-D."""
        name = C.dtype_name(x, "max_pool_forward")
        if C.dtype_name(values, "max_pool_forward") != name:
            raise TypeError("max_pool_forward: values must have the dtype of the input "
                            f"({C.SHOWN[name]})")
        if C.dtype_name(indices, "max_pool_forward") != "int64":
            raise TypeError("max_pool_forward: indices must have dtype int64")
        if planes < 0:
            raise ValueError(f"max_pool_forward: planes must be non-negative, got {planes}")
        if bias is not None:
            if name not in L.FLOAT_TYPES or C.dtype_name(bias, "max_pool_forward") != name:
                raise TypeError(f"max_pool_forward: bias needs a float input and its dtype, got "
                                f"{C.SHOWN[name]} and {bias.dtype}")
            if bias.size == 0 or planes % bias.size:
                raise ValueError(f"max_pool_forward: bias has {bias.size} values, which must "
                                 f"divide the {planes} planes")
        geometry = C.pool_geometry((size, out_size, kernel, stride, padding, dilation))
        total = planes * C.numel(geometry[1])
        C.pool_counts("max_pool_forward", (x, values, indices), ("x", "values", "indices"),
                     (planes * C.numel(geometry[0]), total, total))
        if total:
            axes = tuple(I64(v) for entry in C.pool_3d(geometry) for v in entry)
            self._launch("pool", name, f"max_pool_forward_kernel<{L.CTYPES[name]}>",
                         L.flat_grid(total), (x, values, indices, I64(total)) + axes
                         + (bias, I64(1 if bias is None else bias.size)))

    @_on_device
    def max_pool_backward(self, grad_out, indices, grad_in, planes, in_plane, out_plane):
        """grad_in (planes, in_plane; float, overwritten) = the gradients grad_out (planes,
        out_plane) summed at their flat positions `indices` in each plane: a zero fill, then
        one atomic add per output (positions outside the plane are skipped)."""
        name = C.dtype_name(grad_out, "max_pool_backward")
        if name not in L.FLOAT_TYPES:
            raise TypeError(f"max_pool_backward: unsupported dtype {C.SHOWN[name]} (float32 or "
                            "float64 only)")
        if C.dtype_name(grad_in, "max_pool_backward") != name:
            raise TypeError("max_pool_backward: grad_in must have the dtype of grad_out "
                            f"({C.SHOWN[name]})")
        if C.dtype_name(indices, "max_pool_backward") != "int64":
            raise TypeError("max_pool_backward: indices must have dtype int64")
        if planes < 0 or in_plane < 0 or out_plane < 0:
            raise ValueError("max_pool_backward: sizes must be non-negative, got "
                             f"planes={planes}, in_plane={in_plane}, out_plane={out_plane}")
        total = planes * out_plane
        C.pool_counts("max_pool_backward", (grad_out, indices, grad_in),
                     ("grad_out", "indices", "grad_in"), (total, total, planes * in_plane))
        if planes == 0 or in_plane == 0:
            return
        self._fill(grad_in, 0)
        if total:
            self._launch("pool", name, f"max_pool_backward_kernel<{L.CTYPES[name]}>",
                         L.flat_grid(total), (grad_out, indices, grad_in, I64(total),
                                              I64(in_plane), I64(out_plane)))

    # ---- complex arithmetic on (re, im) pairs (complex.cu; _cpu/complex.pyx's twin) ----------
    def _complex_dtype(self, buffers, op):
        name = C.dtype_name(buffers[0], op)
        if name not in L.FLOAT_TYPES or any(C.dtype_name(b, op) != name for b in buffers):
            raise TypeError(f"{op}: float32 or float64 pair buffers of one dtype only")
        return name

    @_on_device
    def complex_binary(self, op, a, b, out):
        """out = a op b over compact pair buffers of one length (the complex MUL, DIV)."""
        name = self._complex_dtype((a, b, out), "complex_binary")
        if not a.size == b.size == out.size or out.size % 2:
            raise ValueError(f"complex_binary needs pair buffers of one length, got {a.size}, "
                             f"{b.size} and {out.size}")
        n = out.size // 2
        if n:
            self._launch("complex", name, f"complex_binary_kernel<{L.CTYPES[name]}>",
                         L.flat_grid(n), (I32(op), a, b, out, I64(n)))

    @_on_device
    def complex_unary(self, op, a, out):
        """out = op(a) over a compact pair buffer: ABS and ANGLE write one real per pair."""
        name = self._complex_dtype((a, out), "complex_unary")
        n = a.size // 2
        if a.size % 2 or out.size != (n if op <= 1 else 2 * n):
            raise ValueError(f"complex_unary: buffers of {a.size} and {out.size} values")
        if n:
            self._launch("complex", name, f"complex_unary_kernel<{L.CTYPES[name]}>",
                         L.flat_grid(n), (I32(op), a, out, I64(n)))

    @_on_device
    def complex_polar(self, r, theta, out):
        """out[i] = r[i] (cos theta[i] + j sin theta[i]) from compact real buffers."""
        name = self._complex_dtype((r, theta, out), "complex_polar")
        n = r.size
        if theta.size != n or out.size != 2 * n:
            raise ValueError(f"complex_polar: buffers of {n}, {theta.size} and {out.size} values")
        if n:
            self._launch("complex", name, f"complex_polar_kernel<{L.CTYPES[name]}>",
                         L.flat_grid(n), (r, theta, out, I64(n)))

    def fft_rows(self, a, out, rows, n, inverse=False):
        """No FFT kernel on the GPU yet: minitorch.fft refuses cuda tensors before this."""
        raise NotImplementedError("fft_rows: minitorch has no cuda kernel for the FFT (CPU only)")
