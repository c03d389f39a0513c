"""NDArray: a flat device buffer plus shape, strides (in elements), offset, dtype and device.

View operations (reshape when strides allow, permute, expand, slicing, as_strided) only compute
new metadata and share the buffer. Everything else allocates `out`, compacts an operand where a
kernel needs contiguous input, and calls the device's kernel. No autograd lives here.
"""
import math
import operator

import numpy as np

from . import dtypes
from .backend import CPU, get_backend
from .strides import merge_axes
from .opcodes import (BOOL_RESULT_BINARY, BOOL_RESULT_UNARY, INDEX_RESULT_REDUCE, BinaryOp,
                      ReduceOp, UnaryOp)


# Plain dicts rather than functools.lru_cache: these sit on every op's path and a dict lookup
# costs half as much as an lru_cache call. Shapes seen in a program are few; the caches are
# cleared if a program produces very many.
_STRIDES, _NUMEL = {}, {}
# (requested shape, array size) -> the checked shape, -1 inferred: reshape's common case.
_INFERRED_SHAPES = {}


def contiguous_strides(shape):
    """C-order strides (in elements) of a compact array of `shape`."""
    strides = _STRIDES.get(shape)
    if strides is None:
        if len(_STRIDES) > 65536:
            _STRIDES.clear()
        result, step = [], 1
        for size in reversed(shape):
            result.append(step)
            step *= max(size, 1)
        strides = _STRIDES[shape] = tuple(reversed(result))
    return strides


def dense_order(shape, strides):
    """The axis order (outermost first) of a non-overlapping dense layout (torch's
    is_non_overlapping_and_dense), or None when it is not one."""
    inner_first = sorted(range(len(shape)), key=lambda d: (shape[d] < 2, strides[d]))
    expected = 1
    for d in inner_first:
        if shape[d] < 2:
            break
        if strides[d] != expected:
            return None
        expected *= shape[d]
    return tuple(reversed(inner_first))


def _plain_ints(sizes):
    """True when every size is exactly an int (not a bool, which equals 1 as a cache key, nor
    another integer type): a loop, cheaper than all() over a generator for a few sizes."""
    for s in sizes:
        if type(s) is not int:
            return False
    return True


def shape_numel(shape):
    n = _NUMEL.get(shape)
    if n is None:
        if len(_NUMEL) > 65536:
            _NUMEL.clear()
        n = _NUMEL[shape] = math.prod(shape)
    return n


def shape_str(shape):
    return "[" + ", ".join(str(s) for s in shape) + "]"


def normalize_dim(dim, ndim):
    """A dim in [-ndim, ndim) → [0, ndim); torch treats a 0-d array as having one dim here."""
    if type(dim) is int and 0 <= dim < ndim:
        return dim          # the common case, without the conversions below
    dim = operator.index(dim)
    bound = max(ndim, 1)
    if not -bound <= dim < bound:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-bound}, "
                         f"{bound - 1}], but got {dim})")
    return dim + bound if dim < 0 else dim


def real_dim(dim, ndim):
    """normalize_dim for ops that need a real dimension (torch rejects 0-d tensors here)."""
    if ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    return normalize_dim(dim, ndim)


def normalize_dims(dims, ndim):
    """None → every dim; an int or a sequence → sorted unique positive dims (torch's errors)."""
    if type(dims) is int and -ndim <= dims < ndim:      # the common case: x.sum(-1)
        return (dims + ndim if dims < 0 else dims,)
    if type(dims) is tuple and dims in _SORTED_DIMS.get(ndim, ()):
        return dims
    if dims is None:
        return tuple(range(ndim))
    if isinstance(dims, (int, np.integer)):
        dims = (dims,)
    result = []
    for dim in dims:
        d = normalize_dim(dim, ndim)
        if d in result:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        result.append(d)
    result = tuple(sorted(d for d in result if d < ndim))
    if len(_SORTED_DIMS.setdefault(ndim, set())) < 512:
        _SORTED_DIMS[ndim].add(result)
    return result


# Per rank, dims tuples already normalized (sorted, unique, in range): returned as they are.
_SORTED_DIMS = {}


# Permutations already checked (tuples of non-negative ints): permute's common case skips the
# checks. A valid permutation of range(n) is valid for exactly the n-d arrays.
_PERMUTATIONS = set()


def _checked_permutation(dims, ndim):
    """dims as a permutation of range(ndim) (negative dims allowed), with torch's errors."""
    dims = tuple(normalize_dim(d, ndim) for d in dims)
    if len(dims) != ndim:
        raise RuntimeError("permute(sparse_coo): number of dimensions in the tensor input does "
                           "not match the length of the desired ordering of dimensions i.e. "
                           f"input.dim() = {ndim} is not equal to len(dims) = {len(dims)}")
    if len(set(dims)) != len(dims):
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    if len(_PERMUTATIONS) > 65536:
        _PERMUTATIONS.clear()
    _PERMUTATIONS.add(dims)
    return dims


def broadcast_shapes(a, b):
    """torch.broadcast_shapes for two shapes, with torch's error message."""
    if a == b:
        return a
    ndim = max(len(a), len(b))
    a_pad, b_pad = (1,) * (ndim - len(a)) + a, (1,) * (ndim - len(b)) + b
    out = []
    for i, (x, y) in enumerate(zip(a_pad, b_pad)):
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            raise RuntimeError(f"The size of tensor a ({x}) must match the size of tensor b ({y}) "
                               f"at non-singleton dimension {i}")
    return tuple(out)


def _broadcast_shape(a, b):
    """broadcast_shapes of two NDArray shapes (tuples of ints), remembered: an op meets the same
    pair of shapes at every step of a loop."""
    shape = _BROADCASTS.get((a, b))
    return _remember(_BROADCASTS, (a, b), broadcast_shapes(a, b)) if shape is None else shape


def _remember(cache, key, value):
    """cache[key] = value, the cache emptied first when it has grown past 65536 entries (shapes
    of a long-running program's ops are few; a shape-varying one must not grow it forever)."""
    if len(cache) > 65536:
        cache.clear()
    cache[key] = value
    return value


# broadcast_shapes of NDArray shape pairs; the strides of a broadcast view (shape, strides, to)
_BROADCASTS, _BROADCAST_STRIDES = {}, {}


def _batch_views(a, b, nbatch):
    """The GEMM's batch argument and a, b as (batch, r, c) views, or (outer, inner, r, c) ones
    when their batch axes need two strides (attention's (batch, head) views of one array). An
    operand is copied only when its own batch axes need more than one stride and the pair
    more than two."""
    sizes, (sa, sb) = merge_axes(a.shape[:nbatch], (a.strides[:nbatch], b.strides[:nbatch]))
    if len(sizes) > 2:
        a, b = (x if len(merge_axes(x.shape[:nbatch], (x.strides[:nbatch],))[0]) <= 1
                else x.copy() for x in (a, b))
        sizes, (sa, sb) = merge_axes(a.shape[:nbatch], (a.strides[:nbatch], b.strides[:nbatch]))
    if len(sizes) == 2:
        return (tuple(sizes), a._view(tuple(sizes) + a.shape[-2:], tuple(sa) + a.strides[-2:]),
                b._view(tuple(sizes) + b.shape[-2:], tuple(sb) + b.strides[-2:]))
    batch = sizes[0] if sizes else 1
    return (batch, a._view((batch,) + a.shape[-2:], (sa[0] if sizes else 0,) + a.strides[-2:]),
            b._view((batch,) + b.shape[-2:], (sb[0] if sizes else 0,) + b.strides[-2:]))


def check_shape(shape):
    """Validate a requested shape (ints, none negative) and return it as a tuple."""
    if type(shape) is tuple:
        for s in shape:
            if type(s) is not int or s < 0:
                break
        else:
            return shape        # an NDArray's own shape: nothing to convert or refuse
    try:
        shape = tuple(operator.index(s) for s in shape)
    except TypeError:
        raise TypeError(f"shape must be a sequence of ints, got {shape!r}") from None
    if any(s < 0 for s in shape):
        bad = next(s for s in shape if s < 0)
        raise RuntimeError(f"Trying to create tensor with negative dimension {bad}: "
                           f"{shape_str(shape)}")
    return shape


def _storage_numel(shape, dtype):
    """shape's element count, refusing (as torch does, before allocating) a byte size that
    overflows int64."""
    n = shape_numel(shape)
    if n * dtype.itemsize >= 2 ** 63:
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(shape)}")
    return n


_BOOL = dtypes.bool_
_UINT8, _INT64 = dtypes.uint8, dtypes.int64
# The narrow dtypes (float16, bfloat16, int8/16/32, uint8) are storage formats: their arithmetic
# runs in the compute dtype (float32, int64) and is rounded or wrapped back (`_widened`), as
# torch's CPU kernels compute. uint8 shares bool's byte kernels, which compare unsigned bytes
# exactly (comparisons, logical ops, maximum/minimum, max/min reductions, predicates), so those
# ops run on uint8 directly; its other arithmetic is logical in the byte kernels (add is or).
_BYTE_EXACT_UNARY = BOOL_RESULT_UNARY | {UnaryOp.IDENTITY}
_BYTE_EXACT_BINARY = BOOL_RESULT_BINARY | {BinaryOp.MAXIMUM, BinaryOp.MINIMUM}
_BYTE_EXACT_REDUCE = frozenset({ReduceOp.MAX, ReduceOp.MIN})
# Reductions that may be split into successive reductions over groups of axes.
_SPLITTABLE_REDUCE = frozenset({ReduceOp.SUM, ReduceOp.PROD, ReduceOp.MAX, ReduceOp.MIN})


_NO_EPILOGUE = {}   # matmul's keyword arguments for a plain product (never written)


class NDArray:
    """A strided view of a flat buffer; see the module docstring."""
    __slots__ = ("buffer", "shape", "strides", "offset", "dtype", "device", "backend")

    def __init__(self, buffer, shape, strides, offset, dtype, device, backend):
        self.buffer = buffer
        self.shape = shape
        self.strides = strides
        self.offset = offset
        self.dtype = dtype
        self.device = device
        self.backend = backend   # get_backend(device), passed along so views skip the lookup

    # ---- construction -------------------------------------------------------------------------
    @staticmethod
    def empty(shape, dtype=dtypes.float32, device=CPU):
        if dtype.is_complex:
            check_complex_device(dtype, device)
        backend = get_backend(device)
        buffer = backend.empty(_storage_numel(shape, dtype), dtype.storage)
        return NDArray(buffer, shape, contiguous_strides(shape), 0, dtype, device, backend)

    @staticmethod
    def full(shape, value, dtype=dtypes.float32, device=CPU):
        shape = check_shape(shape)
        if dtype.is_complex:
            check_complex_device(dtype, device)
        backend = get_backend(device)
        buffer = backend.full(_storage_numel(shape, dtype), dtypes.storage_scalar(value, dtype),
                              dtype.storage)
        return NDArray(buffer, shape, contiguous_strides(shape), 0, dtype, device, backend)

    @staticmethod
    def from_numpy(array, dtype=None, device=CPU):
        """Copy a numpy array (any layout) into a new compact NDArray on `device`."""
        array = np.asarray(array)
        if dtype is not None and dtype.compute is not dtype and array.dtype != dtype.storage:
            # numpy's float -> int8 is platform-defined out of range (our cast kernel wraps) and
            # numpy has no bfloat16: the narrow dtypes come through our cast kernel
            return NDArray.from_numpy(array, None, device).astype(dtype)
        dtype = dtype or dtypes.from_numpy(array.dtype)
        if dtype.is_complex:
            check_complex_device(dtype, device)
        elif array.dtype.kind == "c":
            # numpy would drop the imaginary part with a ComplexWarning: convert as astype does
            return NDArray.from_numpy(array, None, device).astype(dtype)
        if dtype is _BOOL and array.dtype != np.bool_:
            array = array != 0      # truth values: a byte store would make 0.5 False
        if array.dtype.kind == "f" and array.dtype.itemsize > dtype.storage.itemsize:
            with np.errstate(over="ignore"):    # rounding past the range is inf, as torch's
                flat = np.array(array, dtype=dtype.storage, order="C", copy=True).reshape(-1)
        else:
            flat = np.array(array, dtype=dtype.storage, order="C", copy=True).reshape(-1)
        backend = get_backend(device)
        shape = tuple(array.shape)
        return NDArray(backend.from_host(flat), shape, contiguous_strides(shape), 0, dtype, device,
                       backend)

    @staticmethod
    def from_storage(array, dtype, device=CPU):
        """A new compact NDArray of `dtype` from a numpy array already holding its storage
        values (bfloat16's uint16 words: unpickling, checkpoints)."""
        if dtype.is_complex:
            check_complex_device(dtype, device)
        flat = np.array(array, dtype=dtype.storage, order="C", copy=True).reshape(-1)
        backend = get_backend(device)
        shape = tuple(np.shape(array))
        return NDArray(backend.from_host(flat), shape, contiguous_strides(shape), 0, dtype, device,
                       backend)

    def numpy(self):
        """A numpy array with this array's values: a view of the buffer on the CPU."""
        host = self.backend.to_host(self.buffer)
        itemsize = self.dtype.storage.itemsize
        if self.size == 0:
            return np.empty(self.shape, self.dtype.numpy_dtype)
        view = np.ndarray(self.shape, self.dtype.storage, buffer=host,
                          offset=self.offset * itemsize,
                          strides=tuple(s * itemsize for s in self.strides))
        return view.view(np.bool_) if self.dtype is dtypes.bool_ else view

    def values(self):
        """numpy() for every dtype: bfloat16, which numpy lacks, as float32 values (exact)."""
        return self.astype(dtypes.float32).numpy() if self.dtype is dtypes.bfloat16 else \
            self.numpy()

    # ---- metadata -----------------------------------------------------------------------------
    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        n = _NUMEL.get(self.shape)     # shape_numel's cache, read without the call
        return shape_numel(self.shape) if n is None else n

    def is_compact(self):
        """C-contiguous (strides of size-1 axes don't matter, as in torch)."""
        strides = _STRIDES.get(self.shape)     # contiguous_strides' cache, read without the call
        if self.strides == (contiguous_strides(self.shape) if strides is None else strides):
            return True
        expected = 1
        for size, stride in zip(reversed(self.shape), reversed(self.strides)):
            if size != 1 and stride != expected:
                return size == 0 or self.size == 0
            expected *= size
        return True

    def _view(self, shape, strides, offset=None):
        return NDArray(self.buffer, shape, strides, self.offset if offset is None else offset,
                       self.dtype, self.device, self.backend)

    def _new(self, shape, dtype=None):
        """A fresh compact array on this device (this dtype unless told)."""
        if dtype is None:
            dtype = self.dtype
        backend = self.backend
        return NDArray(backend.empty(shape_numel(shape), dtype.storage), shape,
                       contiguous_strides(shape), 0, dtype, self.device, backend)

    def flat(self):
        """The buffer slice holding a compact array's elements (what compact-input kernels take)."""
        n = self.size
        if self.offset == 0 and len(self.buffer) == n:
            return self.buffer
        return self.buffer[self.offset:self.offset + n]

    def __repr__(self):
        return (f"NDArray(shape={self.shape}, strides={self.strides}, offset={self.offset}, "
                f"dtype={self.dtype.name}, device={self.device})")

    # ---- views --------------------------------------------------------------------------------
    def compact(self):
        """Self when already C-contiguous, else a compact copy."""
        return self if self.is_compact() else self.copy()

    def copy(self):
        """A new compact array with these values (the `compact` kernel)."""
        out = self._new(self.shape)
        if out.size:
            self.backend.compact(self.buffer, out.buffer, self.shape, self.strides, self.offset)
        return out

    def reshape(self, shape):
        """A view when the strides allow it (torch's rule), otherwise a compact copy."""
        shape = self._infer_shape(shape)
        strides = self._view_strides(shape)
        if strides is None:
            return self.copy()._view(shape, contiguous_strides(shape), 0)
        return self._view(shape, strides)

    def view(self, shape):
        """Like reshape but never copies (torch's `view` error when the strides don't allow)."""
        shape = self._infer_shape(shape)
        strides = self._view_strides(shape)
        if strides is None:
            raise RuntimeError("view size is not compatible with input tensor's size and stride "
                               "(at least one dimension spans across two contiguous subspaces). "
                               "Use .reshape(...) instead.")
        return self._view(shape, strides)

    def _infer_shape(self, shape):
        size = self.size
        plain = type(shape) is tuple and _plain_ints(shape)
        if plain:
            inferred = _INFERRED_SHAPES.get((shape, size))
            if inferred is not None:
                return inferred     # the common case: a request already checked at this size
        inferred = self._checked_shape(shape)
        if plain:
            if len(_INFERRED_SHAPES) > 65536:
                _INFERRED_SHAPES.clear()
            _INFERRED_SHAPES[shape, size] = inferred
        return inferred

    def _checked_shape(self, shape):
        """The requested shape as a tuple of ints with any -1 inferred (torch's errors)."""
        shape = tuple(operator.index(s) for s in shape)
        if shape.count(-1) > 1:
            raise RuntimeError("only one dimension can be inferred")
        if any(s < -1 for s in shape):
            raise RuntimeError(f"invalid shape dimension {min(shape)}")
        known = math.prod(s for s in shape if s != -1)
        if -1 in shape:
            if known == 0 or self.size % known:
                raise RuntimeError(f"shape '{shape_str(shape)}' is invalid for input of size "
                                   f"{self.size}")
            shape = tuple(self.size // known if s == -1 else s for s in shape)
        elif known != self.size:
            raise RuntimeError(f"shape '{shape_str(shape)}' is invalid for input of size "
                               f"{self.size}")
        return shape

    def _view_strides(self, shape):
        """Strides that view this array's elements as `shape` in C order, or None (torch's
        computeStride: groups of old axes that are contiguous among themselves can be re-split)."""
        if self.is_compact():
            return contiguous_strides(shape)
        if self.size == 0:
            return contiguous_strides(shape)
        old = [(s, st) for s, st in zip(self.shape, self.strides) if s != 1]
        new_strides = [0] * len(shape)
        new_i = len(shape) - 1
        # Walk old axes from the innermost, merging runs that are contiguous with each other.
        chunk_size, chunk_stride = 1, None
        old_i = len(old) - 1
        while old_i >= 0:
            size, stride = old[old_i]
            chunk_size, chunk_stride = size, stride
            old_i -= 1
            while old_i >= 0 and old[old_i][1] == old[old_i + 1][1] * old[old_i + 1][0]:
                chunk_size *= old[old_i][0]
                old_i -= 1
            # Give this chunk to new axes, innermost first, until their product matches it.
            covered = 1
            while new_i >= 0 and (covered < chunk_size or shape[new_i] == 1):
                if covered * shape[new_i] > chunk_size:
                    return None
                new_strides[new_i] = chunk_stride * covered
                covered *= shape[new_i]
                new_i -= 1
            if covered != chunk_size:
                return None
        while new_i >= 0:           # leading size-1 axes
            new_strides[new_i] = 1
            new_i -= 1
        return tuple(new_strides)

    def permute(self, dims):
        shape, strides = self.shape, self.strides
        if type(dims) is not tuple or dims not in _PERMUTATIONS or len(dims) != len(shape):
            dims = _checked_permutation(dims, len(shape))
        return NDArray(self.buffer, tuple([shape[d] for d in dims]),
                       tuple([strides[d] for d in dims]), self.offset, self.dtype, self.device,
                       self.backend)

    def transpose(self, dim0, dim1):
        ndim = len(self.shape)
        d0, d1 = normalize_dim(dim0, ndim), normalize_dim(dim1, ndim)
        if ndim < 2:
            return self
        shape, strides = list(self.shape), list(self.strides)
        shape[d0], shape[d1] = shape[d1], shape[d0]
        strides[d0], strides[d1] = strides[d1], strides[d0]
        return self._view(tuple(shape), tuple(strides))

    def expand(self, shape):
        """Broadcast to `shape` with stride 0 on new or size-1 axes (-1 keeps a size)."""
        if not (type(shape) is tuple and _plain_ints(shape)):
            shape = tuple(operator.index(s) for s in shape)
        if len(shape) < self.ndim:
            raise RuntimeError(f"expand(torch.FloatTensor{{{shape_str(self.shape)}}}, "
                               f"size={shape_str(shape)}): the number of sizes provided "
                               f"({len(shape)}) must be greater or equal to the number of "
                               f"dimensions in the tensor ({self.ndim})")
        lead = len(shape) - self.ndim
        new_shape, new_strides = [], []
        for i, size in enumerate(shape):
            if i < lead:
                if size < 0:
                    raise RuntimeError(f"The expanded size of the tensor ({size}) isn't allowed in "
                                       "a leading, non-existing dimension 0")
                new_shape.append(size)
                new_strides.append(0)
                continue
            old_size, old_stride = self.shape[i - lead], self.strides[i - lead]
            if size == -1 or size == old_size:
                new_shape.append(old_size)
                new_strides.append(old_stride)
            elif old_size == 1:
                new_shape.append(size)
                new_strides.append(0)
            else:
                raise RuntimeError(f"The expanded size of the tensor ({size}) must match the "
                                   f"existing size ({old_size}) at non-singleton dimension {i}.  "
                                   f"Target sizes: {shape_str(shape)}.  Tensor sizes: "
                                   f"{shape_str(self.shape)}")
        return self._view(tuple(new_shape), tuple(new_strides))

    broadcast_to = expand

    def as_strided(self, shape, strides, storage_offset=None):
        """A view with explicit metadata; refuses one that reaches outside the buffer."""
        shape, strides = check_shape(shape), tuple(operator.index(s) for s in strides)
        offset = self.offset if storage_offset is None else operator.index(storage_offset)
        if len(shape) != len(strides):
            raise RuntimeError("mismatch in length of strides and shape")
        if any(s < 0 for s in strides):
            raise RuntimeError("as_strided: Negative strides are not supported at the moment, got "
                               f"strides: {shape_str(strides)}")
        if offset < 0:
            raise RuntimeError(f"Tensor: invalid storage offset {offset}")
        if math.prod(shape) > 0:
            needed = offset + 1 + sum((n - 1) * s for n, s in zip(shape, strides))
            if needed > len(self.buffer):
                raise RuntimeError(f"setStorage: sizes {shape_str(shape)}, strides "
                                   f"{shape_str(strides)}, storage offset {offset}, and itemsize "
                                   f"{self.dtype.itemsize} requiring a storage size of "
                                   f"{needed * self.dtype.itemsize} are out of bounds for storage "
                                   f"of size {len(self.buffer) * self.dtype.itemsize}")
        return self._view(shape, strides, offset)

    def squeeze(self, dims=None):
        dims = normalize_dims(dims, self.ndim)
        shape, strides = [], []
        for i, (size, stride) in enumerate(zip(self.shape, self.strides)):
            if size != 1 or i not in dims:
                shape.append(size)
                strides.append(stride)
        return self._view(tuple(shape), tuple(strides))

    def unsqueeze(self, dim):
        dim = normalize_dim(dim, self.ndim + 1)
        inner = self.strides[dim] * self.shape[dim] if dim < self.ndim else 1
        return self._view(self.shape[:dim] + (1,) + self.shape[dim:],
                          self.strides[:dim] + (inner,) + self.strides[dim:])

    def __getitem__(self, key):
        """Basic indexing: ints (negative ok), slices with any nonzero step, None, Ellipsis."""
        shape, strides, offset = [], [], self.offset
        dim = 0
        for item in _expand_ellipsis(key, self.ndim):
            if item is None:
                shape.append(1)
                strides.append(0)
                continue
            if isinstance(item, slice):
                start, stop, step = item.indices(self.shape[dim])
                count = max(0, (stop - start + (step - (1 if step > 0 else -1))) // step)
                if count:
                    offset += start * self.strides[dim]
                shape.append(count)
                strides.append(self.strides[dim] * step)
            else:
                index = _int_index(item)
                size = self.shape[dim]
                if not -size <= index < size:
                    raise IndexError(f"index {index} is out of bounds for dimension {dim} with "
                                     f"size {size}")
                offset += (index + size if index < 0 else index) * self.strides[dim]
            dim += 1
        shape += self.shape[dim:]
        strides += self.strides[dim:]
        return self._view(tuple(shape), tuple(strides), offset)

    def __setitem__(self, key, value):
        self[key].assign(value)

    def to_device(self, device):
        """A copy on `device` (through the host: used for 0-d operands)."""
        return NDArray.from_numpy(self.numpy(), self.dtype, device)

    def assign(self, value):
        """Write `value` (a scalar or an NDArray broadcastable to this view) through the view."""
        if self.size == 0:
            return
        if isinstance(value, NDArray):
            if value.device is not self.device:
                raise RuntimeError(_device_mismatch(self.device, value.device))
            value = value.expand(self.shape) if value.shape != self.shape else value
            # A source sharing our buffer is copied first so overlapping writes read old values.
            if value.buffer is self.buffer or not value.is_compact():
                value = value.copy()
            value = value.astype(self.dtype)
            source = value.flat()
        else:
            # torch's fill: 256 overflows uint8 (one element takes any float: see dtypes)
            dtypes.check_scalar_fits(value, self.dtype, narrow_floats=self.size != 1)
            source = self.backend.full(1, dtypes.storage_scalar(value, self.dtype),
                                       self.dtype.storage)
        self.backend.strided_set(source, self.buffer, self.shape, self.strides, self.offset)

    # ---- dtype --------------------------------------------------------------------------------
    def astype(self, dtype):
        """This array converted to `dtype` (self when it already has it)."""
        if dtype is self.dtype:
            return self
        if dtype.is_complex or self.dtype.is_complex:
            return self._astype_complex(dtype)
        src = self.compact()
        out = self._new(self.shape, dtype)
        if out.size:
            self.backend.cast(src.flat(), out.buffer, dtype is _BOOL)
        return out

    def _astype_complex(self, dtype):
        """Conversions with a complex side: complex <-> complex pair by pair (the cast kernel on
        the floats), real -> complex as (x, 0), complex -> real the real part (the Tensor layer
        warns as torch does), complex -> bool "either part nonzero"."""
        if dtype.is_complex:
            check_complex_device(dtype, self.device)
            if self.dtype.is_complex:
                src, out = self.compact(), self._new(self.shape, dtype)
                if out.size:
                    self.backend.cast(src.flat(), out.buffer, False)
                return out
            out = NDArray.full(self.shape, 0, dtype, self.device)
            out.as_real()[..., 0].assign(self.astype(dtype.real_dtype))
            return out
        parts = self.as_real()
        if dtype is _BOOL:
            zero = scalar_array(0, parts.dtype, self.device)
            return parts.binary(BinaryOp.NE, zero).reduce(ReduceOp.MAX, (self.ndim,))
        return parts[..., 0].astype(dtype)

    # ---- complex ------------------------------------------------------------------------------
    def as_real(self):
        """A complex array viewed as its (re, im) floats, sharing the buffer: one more axis of 2
        with stride 1, the other strides and the offset doubled (torch's view_as_real)."""
        real = self.dtype.real_dtype
        return NDArray(self.buffer.view(real.storage), self.shape + (2,),
                       tuple([2 * s for s in self.strides]) + (1,), 2 * self.offset, real,
                       self.device, self.backend)

    def as_complex(self):
        """The inverse of as_real for a float32 / float64 array whose last axis (size 2, stride
        1) holds (re, im) and whose other strides and offset are even; the caller checks this
        (torch.view_as_complex's errors, in functions/complex.py)."""
        complex_dtype = self.dtype.complex_dtype
        check_complex_device(complex_dtype, self.device)
        buffer = self.buffer
        if len(buffer) % 2:     # an odd float buffer: its last float belongs to no whole pair
            buffer = buffer[:len(buffer) - 1]
        return NDArray(buffer.view(complex_dtype.storage), self.shape[:-1],
                       tuple([s // 2 for s in self.strides[:-1]]), self.offset // 2,
                       complex_dtype, self.device, self.backend)

    def complex_unary(self, name):
        """A complex op of _cpu/complex.pyx by name: abs and angle give the real dtype; exp, sgn
        and reciprocal a complex array."""
        from ._cpu.complex import COMPLEX_UNARY
        src = self.compact()
        to_real = name in ("abs", "angle")
        out = self._new(self.shape, self.dtype.real_dtype if to_real else self.dtype)
        if out.size:
            self.backend.complex_unary(COMPLEX_UNARY[name], src.flat().view(
                self.dtype.real_dtype.storage), out.buffer if to_real else
                out.buffer.view(self.dtype.real_dtype.storage))
        return out

    def _complex_unary_op(self, op):
        """unary() for a complex array: neg over the floats, the mixing ops in the complex
        kernels, the predicates from the two parts; anything else is torch's missing kernel."""
        if op is UnaryOp.IDENTITY:
            return self.copy()
        if op is UnaryOp.NEG:
            return self.compact().as_real().unary(op).as_complex()
        if op in _COMPLEX_UNARY_KERNELS:
            return self.complex_unary(_COMPLEX_UNARY_KERNELS[op])
        if op is UnaryOp.SQUARE:
            return self.binary(BinaryOp.MUL, self)
        if op in _COMPLEX_PREDICATES:       # a NaN / inf part makes the number NaN / infinite
            return self.as_real().unary(op).reduce(_COMPLEX_PREDICATES[op], (self.ndim,))
        raise no_complex_kernel(op.name.lower(), self.dtype, self.device)

    def _complex_binary_op(self, op, other):
        """binary() for complex arrays of one dtype: add and sub over the floats, mul and div in
        the complex kernels, eq / ne from both parts."""
        if other.dtype is not self.dtype:
            other = other.astype(self.dtype)
        shape = broadcast_shapes(self.shape, other.shape)
        a, b = self._broadcast_view(shape), other._broadcast_view(shape)
        if op is BinaryOp.ADD or op is BinaryOp.SUB:
            return a.as_real().binary(op, b.as_real()).as_complex()
        if op is BinaryOp.EQ or op is BinaryOp.NE:
            both = a.as_real().binary(op, b.as_real())
            return both.reduce(ReduceOp.MIN if op is BinaryOp.EQ else ReduceOp.MAX, (len(shape),))
        if op is not BinaryOp.MUL and op is not BinaryOp.DIV:
            raise no_complex_kernel(op.name.lower(), self.dtype, self.device)
        from ._cpu.complex import COMPLEX_BINARY
        code, real = COMPLEX_BINARY[op.name.lower()], self.dtype.real_dtype.storage
        out = self._new(shape)
        if not out.size:
            return out
        if self.device.type == "cpu" and not (a.is_compact() and b.is_compact()):
            # a broadcast or strided operand read in place (RoPE's freqs over batch and heads)
            sizes, (sa, sb) = merge_axes(shape, (a.strides, b.strides))
            if len(sizes) <= 16:
                self.backend.complex_binary_strided(
                    code, a.buffer.view(real), b.buffer.view(real), out.buffer.view(real),
                    tuple(sizes), tuple(sa), a.offset, tuple(sb), b.offset)
                return out
        a, b = a.compact(), b.compact()
        self.backend.complex_binary(code, a.flat().view(real), b.flat().view(real),
                                    out.buffer.view(real))
        return out

    def _complex_matmul(self, other, bias, relu):
        """(A + Bj)(C + Dj) = (AC - BD) + (AD + BC)j: four real GEMMs reading the parts in
        place (the floats at stride 2), their sums written into the two halves of the result."""
        if bias is not None or relu:
            raise no_complex_kernel("addmm", self.dtype, self.device)
        if other.dtype is not self.dtype:
            other = other.astype(self.dtype)
        a, b = self.as_real(), other.as_real()
        a_re, a_im, b_re, b_im = a[..., 0], a[..., 1], b[..., 0], b[..., 1]
        real = a_re.matmul(b_re).binary(BinaryOp.SUB, a_im.matmul(b_im))
        imag = a_re.matmul(b_im).binary(BinaryOp.ADD, a_im.matmul(b_re))
        out = NDArray.empty(real.shape, self.dtype, self.device)
        pairs = out.as_real()
        pairs[..., 0].assign(real)
        pairs[..., 1].assign(imag)
        return out

    def _complex_reduce(self, op, dims, keepdim):
        """Sums of complex arrays are sums of their floats over the same axes; torch's other
        reductions of complex numbers (prod aside) are not defined, and prod is not written."""
        if op is not ReduceOp.SUM:
            raise no_complex_kernel(op.name.lower(), self.dtype, self.device)
        dims = tuple(range(self.ndim)) if dims is None else normalize_dims(dims, self.ndim)
        return self.as_real().reduce(op, dims, keepdim).as_complex()

    def _widened(self, compute, keep_wide=False):
        """A narrow dtype's arithmetic: compute(self in its compute dtype), rounded (wrapped)
        back to this dtype when the result has the compute dtype, unless it stays wide
        (arg-reduction indices). Bool results (comparisons) come back as they are."""
        wide = self.dtype.compute
        out = compute(self.astype(wide))
        return out if keep_wide or out.dtype is not wide else out.astype(self.dtype)

    # ---- elementwise --------------------------------------------------------------------------
    def unary(self, op, out_dtype=None):
        dtype = self.dtype
        if dtype.is_complex:
            return self._complex_unary_op(op)
        if dtype.compute is not dtype and (dtype is not _UINT8 or op not in _BYTE_EXACT_UNARY):
            return self._widened(lambda wide: wide.unary(op, out_dtype and out_dtype.compute))
        # compact(), flat() and _new() inlined for the common compact, unsliced input
        shape, buffer = self.shape, self.buffer
        numel = _NUMEL.get(shape)
        if numel is None:
            numel = shape_numel(shape)
        strides = _STRIDES.get(shape)
        if strides is None:
            strides = contiguous_strides(shape)
        if not (self.offset == 0 and len(buffer) == numel and self.strides == strides):
            buffer = self.compact().flat()
        if op in BOOL_RESULT_UNARY:
            out_dtype = _BOOL
        elif out_dtype is None:
            out_dtype = self.dtype
        backend = self.backend
        out = backend.empty(numel, out_dtype.storage)
        if numel:
            backend.unary(op, buffer, out)
        return NDArray(out, shape, strides, 0, out_dtype, self.device, backend)

    def binary(self, op, other):
        """op(self, other) with broadcasting; both operands must share dtype and device (a 0-d
        CPU operand joins the other's device, as torch lets a CPU scalar tensor do)."""
        if other.device is not self.device:
            self, other = _on_one_device(self, other)
        dtype = self.dtype
        if dtype.is_complex:
            return self._complex_binary_op(op, other)
        if dtype.compute is not dtype and (dtype is not _UINT8 or op not in _BYTE_EXACT_BINARY):
            return self._widened(lambda wide: wide.binary(op, other.astype(wide.dtype)))
        if other.dtype is not dtype and other.dtype.compute is dtype and dtype.is_floating_point:
            # a scalar held in float32 ⊕ a 16-bit float array (see elementwise._scalar_dtype)
            return other._widened(lambda wide: self.binary(op, wide))
        a, b, shape = self, other, self.shape
        if other.shape != shape:
            if not other.shape:     # a 0-d operand (a scalar): broadcast by stride 0 directly
                b = other._view(shape, (0,) * len(shape))
            else:
                shape = _broadcast_shape(shape, other.shape)
                a, b = self._broadcast_view(shape), other._broadcast_view(shape)
        dtype = _BOOL if op in BOOL_RESULT_BINARY else self.dtype
        backend = self.backend
        numel = _NUMEL.get(shape)
        if numel is None:
            numel = shape_numel(shape)
        buffer = backend.empty(numel, dtype.storage)
        if numel:
            backend.binary(op, a.buffer, b.buffer, buffer, shape,
                           a.strides, a.offset, b.strides, b.offset)
        return NDArray(buffer, shape, _STRIDES.get(shape) or contiguous_strides(shape), 0, dtype,
                       self.device, backend)

    def _broadcast_view(self, shape):
        """self viewed as `shape`, a broadcast of its shape (expand without the checks)."""
        own = self.shape
        if own == shape:
            return self
        key = (own, self.strides, shape)
        strides = _BROADCAST_STRIDES.get(key)
        if strides is None:
            lead = len(shape) - len(own)
            strides = [0] * lead
            for size, stride, n in zip(own, self.strides, shape[lead:]):
                strides.append(stride if size == n else 0)
            strides = _remember(_BROADCAST_STRIDES, key, tuple(strides))
        return self._view(shape, strides)

    def where(self, a, b):
        """a where self (bool) else b, all three broadcast together (on one device)."""
        if a.device is not self.device or b.device is not self.device:
            self, a, b = _on_one_device(self, a, b)
        narrow = next((x.dtype for x in (a, b) if x.dtype.compute is not x.dtype and
                       x.dtype is not _UINT8), None)
        if narrow is not None:      # no 8/16/32-bit select kernel (a scalar may be held wide)
            wide = narrow.compute
            return self.where(a.astype(wide), b.astype(wide)).astype(narrow)
        shape = _broadcast_shape(_broadcast_shape(self.shape, a.shape), b.shape)
        c, a, b = self._broadcast_view(shape), a._broadcast_view(shape), b._broadcast_view(shape)
        out = a._new(shape)
        if out.size:
            self.backend.where(c.buffer, a.buffer, b.buffer, out.buffer, shape,
                               c.strides, c.offset, a.strides, a.offset, b.strides, b.offset)
        return out

    # ---- reductions ---------------------------------------------------------------------------
    def reduce(self, op, dims=None, keepdim=False):
        """Reduce over `dims` (None = all). A contiguous group of reduced axes is reduced in
        place as the middle axis of (outer, n, inner); other layouts are permuted last first."""
        dtype = self.dtype
        if dtype.is_complex:
            return self._complex_reduce(op, dims, keepdim)
        if dtype.compute is not dtype and (dtype is not _UINT8 or op not in _BYTE_EXACT_REDUCE):
            return self._widened(lambda wide: wide.reduce(op, dims, keepdim),
                                 keep_wide=op in INDEX_RESULT_REDUCE)
        out_dtype = _INT64 if op in INDEX_RESULT_REDUCE else dtype
        if dims is None and not keepdim:
            n = self.size
            if n and self.is_compact():
                # everything, from a compact array (sum(), loss.mean()): one kernel call, no plan
                out = self._new((), out_dtype)
                self.backend.reduce_last(op, self.flat(), out.buffer, n, 1)
                return out
        dims = normalize_dims(dims, len(self.shape))
        if len(dims) == 1 and self.shape[dims[0]] and self.is_compact():
            # one axis of a compact array (x.sum(-1)): the middle of (outer, n, inner) as is
            d, shape, backend = dims[0], self.shape, self.backend
            if d == len(shape) - 1:     # the last axis (x.sum(-1)): no slicing of the shape
                out_shape, inner = shape[:-1] + (1,) if keepdim else shape[:-1], 1
            else:
                out_shape = shape[:d] + ((1,) if keepdim else ()) + shape[d + 1:]
                inner = shape_numel(shape[d + 1:])
            numel = shape_numel(out_shape)
            out = NDArray(backend.empty(numel, out_dtype.storage), out_shape,
                          contiguous_strides(out_shape), 0, out_dtype, self.device, backend)
            if numel:
                backend.reduce_last(op, self.flat(), out.buffer, shape[d], inner)
            return out
        kept_shape = tuple(1 if i in dims else s for i, s in enumerate(self.shape))
        n = math.prod(self.shape[d] for d in dims)
        if n == 0 and op not in (ReduceOp.SUM, ReduceOp.PROD):
            raise _empty_reduction_error(op, dims, self.shape)
        if dims and dims == tuple(range(dims[0], dims[-1] + 1)):
            src, inner = self.compact(), math.prod(self.shape[dims[-1] + 1:])
        elif dims and op in _SPLITTABLE_REDUCE and self.is_compact():
            return self._reduce_in_runs(op, dims, keepdim)
        else:
            order = [i for i in range(self.ndim) if i not in dims] + list(dims)
            src, inner = self.permute(order).compact(), 1
        out = self._new(kept_shape, out_dtype)
        if out.buffer.size:
            self.backend.reduce_last(op, src.flat(), out.buffer, n, inner)
        if keepdim:
            return out
        shape = tuple(s for i, s in enumerate(self.shape) if i not in dims)
        return out._view(shape, contiguous_strides(shape))

    def _reduce_in_runs(self, op, dims, keepdim):
        """Reduce separated axes (a bias gradient's (0, 2, 3)) one run of adjacent axes at a
        time, innermost first, each as the middle axis of a compact array: no transposing copy
        of the whole input."""
        runs = [[dims[0]]]
        for d in dims[1:]:
            if d == runs[-1][-1] + 1:
                runs[-1].append(d)
            else:
                runs.append([d])
        out = self
        for run in reversed(runs):
            out = out.reduce(op, tuple(run), True)
        return out if keepdim else out.squeeze(dims)

    def softmax_last(self, log):
        """softmax (log_softmax when `log`) over the last axis: one fused kernel over rows."""
        if self.dtype.compute is not self.dtype:
            return self._widened(lambda wide: wide.softmax_last(log))
        src, out = self.compact(), self._new(self.shape)
        if out.size:
            self.backend.softmax_last(src.flat(), out.buffer, self.shape[-1], log)
        return out

    def softmax_backward_last(self, y, log):
        """The input gradient of softmax_last from this output gradient and the output y."""
        if self.dtype.compute is not self.dtype:
            return self._widened(lambda wide: wide.softmax_backward_last(y.astype(wide.dtype),
                                                                          log))
        g, y, out = self.compact(), y.compact(), self._new(self.shape)
        if out.size:
            self.backend.softmax_backward_last(g.flat(), y.flat(), out.buffer, self.shape[-1],
                                               log)
        return out

    def scan(self, op, dim):
        """Inclusive cumulative SUM or PROD along `dim`."""
        if self.dtype.compute is not self.dtype:
            return self._widened(lambda wide: wide.scan(op, dim))
        if self.dtype.is_complex:       # a running sum of pairs is a running sum of floats
            if op is not ReduceOp.SUM:
                raise no_complex_kernel("cum" + op.name.lower(), self.dtype, self.device)
            return self.as_real().scan(op, normalize_dim(dim, self.ndim)).as_complex()
        dim = normalize_dim(dim, self.ndim)
        src = self.compact()
        out = self._new(self.shape)
        if out.size:
            n = self.shape[dim] if self.ndim else 1
            self.backend.scan_last(op, src.flat(), out.buffer, n, math.prod(self.shape[dim + 1:]))
        return out

    # ---- matmul -------------------------------------------------------------------------------
    def matmul(self, other, bias=None, relu=False):
        """(…, m, k) @ (…, k, n) with broadcast batch axes; both at least 2-D. The GEMM's
        epilogue adds `bias` (an array broadcastable to (m, n): a Linear layer's (n,) bias) and
        applies relu to the product as it is stored, with the bits of the separate ops."""
        for operand in (other, bias):
            if operand is not None and operand.device is not self.device:
                raise RuntimeError(_device_mismatch(self.device, operand.device))
        (m, k), (k2, n) = self.shape[-2:], other.shape[-2:]
        if k != k2:
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({m}x{k} and {k2}x{n})")
        if self.dtype.is_complex:
            return self._complex_matmul(other, bias, relu)
        if self.dtype.compute is not self.dtype:
            # the separate ops, each rounded to the narrow dtype as torch rounds them
            out = self._widened(lambda wide: wide.matmul(other.astype(wide.dtype)))
            out = out if bias is None else out.binary(BinaryOp.ADD, bias)
            return out.unary(UnaryOp.RELU) if relu else out
        epilogue = _NO_EPILOGUE
        if bias is not None:      # a Linear layer's (n,) bias is read as rows of stride 0
            strides = (0,) + bias.strides if bias.shape == (n,) else \
                bias.expand((m, n)).strides
            epilogue = {"bias": bias.buffer, "bias_offset": bias.offset, "bias_strides": strides}
        if relu:
            epilogue = dict(epilogue, relu=True)
        if self.ndim == 2 and other.ndim == 2:     # the common case, without batch bookkeeping
            out = self._new((m, n))
            if out.size:
                self.backend.matmul(self.buffer, other.buffer, out.buffer, 1, m, n, k,
                                    (0,) + self.strides, self.offset, (0,) + other.strides,
                                    other.offset, **epilogue)
            return out
        batch_shape = broadcast_shapes(self.shape[:-2], other.shape[:-2])
        batch, a, b = _batch_views(self.expand(batch_shape + (m, k)),
                                   other.expand(batch_shape + (k, n)), len(batch_shape))
        out = self._new((math.prod(batch_shape), m, n))
        if out.size:
            self.backend.matmul(a.buffer, b.buffer, out.buffer, batch, m, n, k,
                                a.strides, a.offset, b.strides, b.offset, **epilogue)
        return out._view(batch_shape + (m, n), contiguous_strides(batch_shape + (m, n)), 0)

    # ---- index kernels ------------------------------------------------------------------------
    def _index_layout(self, dim):
        """(outer, size along dim, inner): how an index kernel along `dim` sees this array."""
        shape = self.shape
        if not shape:
            return 1, 1, 1
        return shape_numel(shape[:dim]), shape[dim], shape_numel(shape[dim + 1:])

    def take_at(self, dim, index):
        """self's values at `index` along dim, for an index of self's shape but 1 along dim
        whose entries are known to be in range (an arg-reduction's own result): gather without
        its checks."""
        src = self.compact()
        outer, size, inner = src._index_layout(dim)
        out = self._new(index.shape)
        if out.size:
            self.backend.gather(src.flat(), index.flat(), out.buffer, outer, size, 1, inner)
        return out

    def gather(self, dim, index):
        """torch.gather: out[..., j, ...] = self[..., index[..., j, ...], ...] along dim."""
        shape, index_shape = self.shape, index.shape
        dim = normalize_dim(dim, len(shape))
        _check_index_array(index, "gather")
        region = self._index_block(dim, index_shape, "gather").compact()
        outer, size, inner = region._index_layout(dim)
        out = self._new(index_shape)
        if shape_numel(index_shape):
            try:
                self.backend.gather(region.flat(), index.compact().flat(), out.buffer, outer, size,
                                    index_shape[dim] if index_shape else 1, inner)
            except IndexError as error:
                raise _index_error(error, dim, shape) from None
        return out

    def _index_block(self, dim, index_shape, op):
        """The block of self gather/scatter address along dim: self itself in the common case
        (every other axis whole, gather and its backward), else the leading block the index
        covers (see _index_region)."""
        shape = self.shape
        if len(index_shape) == len(shape) and index_shape[:dim] == shape[:dim] and \
                index_shape[dim + 1:] == shape[dim + 1:]:
            return self
        return self[self._index_region(dim, index_shape, op)]

    def _index_region(self, dim, index_shape, op):
        """The key of the block gather/scatter address: index may be smaller than self on every
        axis but `dim` (torch's rule), and only that leading block is touched."""
        if len(index_shape) != self.ndim:
            raise RuntimeError(f"{op}(): Index tensor must have the same number of dimensions as "
                               "input tensor")
        for d, (i_size, s_size) in enumerate(zip(index_shape, self.shape)):
            if d != dim and i_size > s_size:
                raise RuntimeError(f"Size does not match at dimension {d} expected index "
                                   f"{shape_str(index_shape)} to be smaller than self "
                                   f"{shape_str(self.shape)} apart from dimension {dim}")
        return tuple(slice(None) if d == dim else slice(0, n) for d, n in enumerate(index_shape))

    def add_into(self, other):
        """self += other by one kernel writing into self's memory, for a compact self and an
        other of its shape, floating dtype and device not sharing its buffer (a gradient summed
        into .grad); False, with nothing done, for anything else (the caller's general path)."""
        dtype = self.dtype
        if other.shape != self.shape or other.dtype is not dtype or \
                other.device is not self.device or not dtype.is_floating_point or \
                dtype.compute is not dtype or other.buffer is self.buffer or not self.is_compact():
            return False
        if self.size:
            self.backend.binary(BinaryOp.ADD, self.buffer, other.buffer, self.flat(), self.shape,
                                self.strides, self.offset, other.strides, other.offset)
        return True

    def scatter_into(self, dim, index, src, accumulate):
        """In-place torch.scatter_ / scatter_add_: self[..., index[..., j, ...], ...] (+)= src.
        Works on a compact staging copy of the addressed block when that block isn't compact."""
        shape, index_shape = self.shape, index.shape
        dim = normalize_dim(dim, len(shape))
        _check_index_array(index, "scatter")
        region = self._index_block(dim, index_shape, "scatter")
        if index.size == 0:
            return
        target = _accumulation_target(region, accumulate)
        if src.shape != index_shape:
            src = src[tuple(slice(0, n) for n in index_shape)]
        values = src.compact().astype(target.dtype)
        outer, size, inner = target._index_layout(dim)
        kernel = self.backend.scatter_add if accumulate else self.backend.scatter
        try:
            kernel(values.flat(), index.compact().flat(), target.flat(), outer, size,
                   index.shape[dim] if index.ndim else 1, inner)
        except IndexError as error:
            raise _index_error(error, dim, self.shape) from None
        if target is not region:
            region.assign(target)

    def index_select(self, dim, index):
        dim = normalize_dim(dim, self.ndim)
        _check_index_array(index, "index_select", max_ndim=1)
        src = self.compact()
        outer, size, inner = src._index_layout(dim)
        n_index = index.size
        out_shape = self.shape[:dim] + (n_index,) + self.shape[dim + 1:] if self.ndim else (
            (n_index,) if index.ndim else ())
        out = self._new(out_shape)
        if out.size:
            try:
                self.backend.index_select(src.flat(), index.compact().flat(), out.buffer, outer,
                                          size, n_index, inner)
            except IndexError as error:
                raise _index_error(error, dim, self.shape) from None
        return out

    def index_add_into(self, dim, index, src):
        """In-place torch.index_add_: self[..., index[j], ...] += src[..., j, ...]."""
        dim = normalize_dim(dim, self.ndim)
        _check_index_array(index, "index_add", max_ndim=1)
        if index.size == 0:
            return
        target = _accumulation_target(self, True)
        outer, size, inner = target._index_layout(dim)
        try:
            self.backend.index_add(src.compact().astype(target.dtype).flat(),
                                   index.compact().flat(), target.flat(), outer, size,
                                   index.size, inner)
        except IndexError as error:
            raise _index_error(error, dim, self.shape) from None
        if target is not self:
            self.assign(target)


_COMPLEX_UNARY_KERNELS = {UnaryOp.ABS: "abs", UnaryOp.EXP: "exp",
                          UnaryOp.RECIPROCAL: "reciprocal"}
_COMPLEX_PREDICATES = {UnaryOp.ISNAN: ReduceOp.MAX, UnaryOp.ISINF: ReduceOp.MAX,
                       UnaryOp.ISFINITE: ReduceOp.MIN}


def check_complex_device(dtype, device):
    """Complex arrays live where there are complex kernels: the CPU and CUDA (and meta, which
    computes nothing). Refusing here, where every complex array is made, keeps any other
    backend from computing something wrong."""
    if device.type not in ("cpu", "cuda", "meta"):
        raise RuntimeError(f"minitorch has no {device.type} kernels for complex dtypes: "
                           f"{dtype} tensors are CPU-only (docs/ARCHITECTURE.md, "
                           "'Complex numbers')")


def no_complex_kernel(name, dtype, device):
    """torch's error for an op without a kernel for a complex dtype."""
    return NotImplementedError(f'"{name}_{device.type}" not implemented for '
                               f"'{dtype.torch_name}'")


def _accumulation_target(region, accumulate):
    """The compact array an index kernel writes for `region` (itself when compact), assigned
    back afterwards. A narrow dtype accumulates in its compute dtype (the byte kernels add
    bools, logical or; there are no 16/32-bit adds), and the assignment back rounds or wraps."""
    if accumulate and region.dtype.compute is not region.dtype:
        return region.astype(region.dtype.compute)
    return region if region.is_compact() else region.copy()


def _expand_ellipsis(key, ndim):
    """The indexing key as a list with `...` replaced by full slices; checks its length."""
    key = key if isinstance(key, tuple) else (key,)
    consumed = sum(1 for k in key if k is not None and k is not Ellipsis)
    ellipses = sum(1 for k in key if k is Ellipsis)
    if ellipses > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if consumed > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    items = []
    for k in key:
        if k is Ellipsis:
            items += [slice(None)] * (ndim - consumed)
        else:
            items.append(k)
    return items


def _int_index(item):
    if isinstance(item, (bool, np.bool_)):
        raise IndexError("boolean indices are handled by the tensor layer")
    try:
        return operator.index(item)
    except TypeError:
        raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte "
                         f"Variables are valid indices (got {type(item).__name__})") from None


def _check_index_array(index, op, max_ndim=None):
    if index.dtype is not dtypes.int64:
        raise RuntimeError(f"{op}(): Expected dtype int64 for index")
    if max_ndim is not None and index.ndim > max_ndim:
        raise IndexError(f"{op}(): Index is supposed to be a vector")


def _index_error(error, dim, shape):
    """An index kernel's out-of-range error with the dimension and the sizes added (raised from
    a try around the kernel call, which costs nothing when nothing is raised)."""
    return IndexError(f"{error} (dimension {dim} of a tensor of shape {shape_str(shape)})")


def _empty_reduction_error(op, dims, shape):
    name = op.name.lower()
    return IndexError(f"{name}(): Expected reduction dim {dims[0] if dims else 0} to have "
                      f"non-zero size (input shape {shape_str(shape)})")


def _on_one_device(*arrays):
    """The arrays on one device: 0-d CPU arrays (scalars) are copied to the device of the
    others, as torch allows; any other mix is torch's device-mismatch error."""
    devices = {a.device for a in arrays if a.ndim or a.device.type != "cpu"}
    if len(devices) != 1:
        other = next(a.device for a in arrays if a.device is not arrays[0].device)
        raise RuntimeError(_device_mismatch(arrays[0].device, other))
    device = devices.pop()
    return tuple(a if a.device is device else a.to_device(device) for a in arrays)


def _device_mismatch(a, b):
    if a.type == "meta" or b.type == "meta":     # torch's meta kernels word it so
        return f"Tensor on device {b} is not on the expected device {a}!"
    first, second = (a, b) if a.type == "cuda" else (b, a)
    return ("Expected all tensors to be on the same device, but found at least two devices, "
            f"{first} and {second}!")


from ._gpu import graphs as _graphs  # noqa: E402  (a CUDA graph capture: scalar_array)

_scalar_cache = {}


def scalar_array(value, dtype, device):
    """A 0-d NDArray holding `value` (cached: `x * 2` should not allocate a constant each time).
    Cached arrays are only ever read by kernels, never handed to users."""
    key = (value, type(value), dtype, device)
    if value == 0 and type(value) is float and math.copysign(1.0, value) < 0:
        key = ("-0.0", dtype, device)       # -0.0 == 0.0: keep the sign apart in the cache
    nd = _scalar_cache.get(key)
    if nd is None:
        with np.errstate(over="ignore"):    # where(c, half_x, 1e6): torch rounds to inf, silently
            nd = NDArray.full((), value, dtype, device)
        if _graphs.active() is not None:    # its fill only runs when the graph replays
            return nd
        if len(_scalar_cache) > 4096:
            _scalar_cache.clear()
        _scalar_cache[key] = nd
    return nd
