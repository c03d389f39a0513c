"""Shape and movement ops.

Views (reshape, permute, expand, narrow, split, unfold, as_strided, …) share storage with their
input and its version counter; their backward maps the gradient back through the inverse view.
Copies (flip, roll, repeat, cat, stack) run one strided-copy kernel per block they write.
The backward of every strided view is one overlap-correct `strided_add` of the gradient through
the same view of a zeroed buffer (`AsStridedBackward`), whose own backward is the view again.
"""
import functools
import itertools
import math
import numbers
import operator

from .. import dtypes
from ..autograd import KernelFunction, _grad_mode
from ..autograd.engine import recorded as _recorded
from .autocast_policy import batching_point
from ..ndarray import (NDArray, _device_mismatch, _plain_ints, check_shape, contiguous_strides,
                       normalize_dim, normalize_dims, real_dim, scalar_array, shape_numel,
                       shape_str)
from ..opcodes import BinaryOp
from ..tensor import (Tensor, channels_last, channels_last_3d, check_memory_format,
                      contiguous_format, copy_in_layout, is_contiguous_as, layout_for,
                      memory_format, preserve_format, wrap)


__all__ = [
    'as_strided', 'broadcast_to', 'clone', 'flatten', 'flip', 'fliplr', 'flipud', 'moveaxis',
    'movedim', 'narrow', 'permute', 'reshape', 'roll', 'select', 'squeeze', 'swapaxes',
    'swapdims', 't', 'tile', 'transpose', 'unflatten', 'unsqueeze',
    # torch's memory formats (defined with Tensor), exported here beside clone
    'memory_format', 'preserve_format', 'contiguous_format', 'channels_last', 'channels_last_3d',
]


# ---- helpers ----------------------------------------------------------------------------------
def view_of(a, data):
    """A Tensor viewing `data`, part of `a`'s storage: it shares `a`'s version counter (in-place
    writes are seen by saved-tensor checks) and remembers the tensor owning the storage, so an
    in-place write through the view can update that tensor's graph (CopySlices)."""
    t = wrap(data, version=a._version)
    no_grad_view = getattr(a, "_no_grad_view", False)
    if _grad_mode.enabled:      # without recording there is no graph to re-root later
        t._base = a._base if a._base is not None else a
        t._view_version = a._version[0]
    if no_grad_view or (a.requires_grad and not _grad_mode.enabled):
        # an in-place write through it while recording is refused (also through a view of such
        # a view, whenever made: torch keeps the creation mode along the chain)
        t._no_grad_view = True
    return t


def _view_of(a, data):
    """view_of when `data` still lies in `a`'s buffer, else a fresh tensor (reshape copies)."""
    return view_of(a, data) if data.buffer is a._data.buffer else wrap(data)


class CopySlices(KernelFunction):
    """The storage owner after an in-place write through one of its views: gradient in the
    view's region goes to the written value, the rest to the owner's previous history."""
    node_name = "CopySlices"    # torch's

    @staticmethod
    def forward(ctx, old_base, value, region):
        ctx.region = region
        return wrap(old_base._data, version=old_base._version)

    @staticmethod
    def backward(ctx, g):
        shape, strides, offset = ctx.region
        g = g.contiguous()      # compact, but maybe a view into a larger buffer: offset by its own
        needs_base, needs_value = ctx.next_edges[0] is not None, ctx.next_edges[1] is not None
        if not _grad_mode.enabled:      # nothing recorded: the views and the zeroing unchecked
            data = g._data
            grad_value = view_of(g, data._view(shape, strides, data.offset + offset)) \
                if needs_value else None
            if not needs_base:
                return None, grad_value, None
            outside = data.copy()           # g with the region zeroed
            zero = scalar_array(0, outside.dtype, outside.device)
            outside.backend.strided_set(zero.buffer, outside.buffer, shape, strides, offset)
            return wrap(outside), grad_value, None
        grad_value = g.as_strided(shape, strides, g._data.offset + offset) \
            if needs_value else None
        grad_base = None
        if needs_base:                  # create_graph: the same as ops
            outside = NDArray.full(g._data.shape, 1, g.dtype, g.device)
            outside.as_strided(shape, strides, offset).assign(0)
            grad_base = g * wrap(outside)
        return grad_base, grad_value, None


def rebase_view_write(base, view, value):
    """Record that `value` was written in place through `view` into `base`'s storage: `base`
    becomes the output of a CopySlices node (torch's semantics for in-place ops on views)."""
    if not base._data.is_compact():
        raise RuntimeError("in-place writes through a view of a non-contiguous tensor that is "
                           "part of an autograd graph are not supported")
    data = view._data
    record_region_write(base, (data.shape, data.strides, data.offset - base._data.offset), value)


def record_region_write(base, region, value):
    """Record that `value` was written into `region` (shape, strides, offset from base's own)
    of compact `base`'s memory: base becomes the output of a CopySlices node."""
    old = wrap(base._data, version=base._version)
    if base.requires_grad:
        old.requires_grad, old.grad_fn, old._output_nr = True, base.grad_fn, base._output_nr
    new = CopySlices.apply(old, value, region)
    base.requires_grad, base.grad_fn, base._output_nr = True, new.grad_fn, 0


def _sizes(size, keyword=None):
    """Varargs sizes (`x.view(2, 3)`), one sequence (`x.view((2, 3))`) or, with no positional
    sizes, the keyword form (`x.permute(dims=(1, 0))`) as a tuple of ints."""
    if not size and keyword is not None:
        size = (keyword,)
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = size[0]
    if type(size) is tuple and _plain_ints(size):
        return size         # the common call: nothing to convert or refuse
    for pos, s in enumerate(size):
        if isinstance(s, bool):     # operator.index accepts True as 1; torch refuses it
            raise TypeError(f"argument 'shape' must be tuple of ints, but found element of type "
                            f"bool at pos {pos}")
    return tuple(operator.index(s) for s in size)


def _axis_key(dim, item):
    """An NDArray index selecting `item` (int or slice) along `dim` and everything elsewhere."""
    return (slice(None),) * dim + (item,)


def _copy_into(dst, src):
    """dst := src for a view `dst` of a fresh buffer: one `compact` kernel straight into dst when
    dst is contiguous, else `assign` (strided_set, after compacting a non-contiguous src)."""
    if dst.size == 0:
        return
    if dst.is_compact():
        dst.backend.compact(src.buffer, dst.flat(), src.shape, src.strides, src.offset)
    else:
        dst.assign(src)


def _check_tensor_list(tensors, op):
    """torch's TypeErrors for cat/stack arguments that are not a sequence of Tensors."""
    if not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{op}(): argument 'tensors' (position 1) must be tuple of Tensors, not "
                        f"{type(tensors).__name__}")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got "
                            f"{type(t).__name__}")


def _common(tensors):
    """The tensors on one device, cast to their promoted dtype (Cast nodes carry the gradient)."""
    from .elementwise import cast
    device = tensors[0].device
    for t in tensors[1:]:
        if t.device is not device:
            raise RuntimeError(_device_mismatch(device, t.device))
    dtype = functools.reduce(dtypes.promote_types, (t.dtype for t in tensors))
    return [cast(t, dtype) for t in tensors]


# ---- geometry of strided views (for AsStridedBackward) ----------------------------------------
def _span(geometry):
    """(lowest, highest) buffer offset a non-empty (shape, strides, offset) view touches."""
    shape, strides, offset = geometry
    low = high = offset
    for size, stride in zip(shape, strides):
        if stride > 0:
            high += (size - 1) * stride
        else:
            low += (size - 1) * stride
    return low, high


def _maybe_overlapping(shape, strides):
    """True unless the axes provably address distinct elements (torch's sufficient test)."""
    reach = 0
    for stride, size in sorted((abs(st), n) for n, st in zip(shape, strides) if n > 1):
        if stride <= reach:
            return True
        reach += stride * (size - 1)
    return False


def _compact_geometry(shape):
    return (tuple(shape), contiguous_strides(tuple(shape)), 0)


def _restride(nd, src, dst, counted):
    """Scatter-add `nd` through the view `src` of a zeroed buffer, divide by how often the view
    `counted` addresses each element (when given), and gather the view `dst` compactly."""
    out_shape = dst[0]
    if not shape_numel(out_shape) or not nd.size:
        return NDArray.full(out_shape, 0, nd.dtype, nd.device)
    (src_low, src_high), (dst_low, dst_high) = _span(src), _span(dst)
    low, high = min(src_low, dst_low), max(src_high, dst_high)
    storage = NDArray.full((high - low + 1,), 0, nd.dtype, nd.device)
    backend = nd.backend
    backend.strided_add(nd.compact().flat(), storage.buffer, src[0], src[1], src[2] - low)
    if counted is not None:
        counts = NDArray.full((high - low + 1,), 0, nd.dtype, nd.device)
        ones = NDArray.full(counted[0], 1, nd.dtype, nd.device)
        backend.strided_add(ones.buffer, counts.buffer, counted[0], counted[1], counted[2] - low)
        one = NDArray.full((), 1, nd.dtype, nd.device)
        storage = storage.binary(BinaryOp.DIV, counts.binary(BinaryOp.MAXIMUM, one))
    return storage._view(out_shape, dst[1], dst[2] - low).compact()


class AsStridedBackward(KernelFunction):
    """g → gather_dst(scatter_add_src(g) / counts): the backward of every strided view. It is
    linear, and its adjoint is itself with src and dst swapped, so double backward works."""

    @staticmethod
    def forward(ctx, g, src, dst, counted):
        ctx.geometry = (src, dst, counted)
        return wrap(_restride(g._data, src, dst, counted))

    @staticmethod
    def backward(ctx, gg):
        src, dst, counted = ctx.geometry
        return AsStridedBackward.apply(gg, dst, src, counted), None, None, None


def _scatter_back(g, input_shape, view_geometry):
    """The gradient of a view of a tensor of `input_shape`, where `view_geometry` is that view
    expressed over the compact layout of the input."""
    return AsStridedBackward.apply(g, view_geometry, _compact_geometry(input_shape), None)


# ---- reshape family ---------------------------------------------------------------------------
class View(KernelFunction):
    @staticmethod
    def forward(ctx, a, shape, strides=None):
        nd = a._data
        ctx.input_shape = nd.shape
        return _view_of(a, nd.view(shape) if strides is None else nd._view(shape, strides))

    @staticmethod
    def backward(ctx, g):
        return g.reshape(ctx.input_shape), None, None


class UnsafeView(KernelFunction):
    """reshape of a layout no view can describe: a compact copy (torch's _unsafe_view)."""

    @staticmethod
    def forward(ctx, a, shape):
        ctx.input_shape = a._data.shape
        return wrap(a._data.copy()._view(shape, contiguous_strides(shape), 0))

    @staticmethod
    def backward(ctx, g):
        return g.reshape(ctx.input_shape), None


def reshape(input, *args, shape=None):
    """A view when the strides allow it, otherwise a copy (torch's rule and grad_fn names)."""
    shape = _sizes(args, shape)
    nd = input._data
    shape = nd._infer_shape(shape)
    strides = nd._view_strides(shape)
    if strides is not None:
        if not _recorded(input):
            return view_of(input, nd._view(shape, strides))     # View's forward, unrecorded
        return View.apply(input, shape, strides)
    return UnsafeView.apply(input, shape)


def view(input, *shape, size=None):
    if len(shape) == 1 and isinstance(shape[0], dtypes.dtype):
        return _view_dtype(input, shape[0])
    if not _recorded(input):
        return view_of(input, input._data.view(_sizes(shape, size)))   # View's forward
    return View.apply(input, _sizes(shape, size))


def _view_dtype(input, dtype):
    """x.view(dtype): the same bytes read as another dtype of the same size (float64 ↔ int64)."""
    nd = input._data
    if dtype is nd.dtype:
        return View.apply(input, nd.shape)
    if dtype.itemsize != nd.dtype.itemsize or dtypes.bool_ in (dtype, nd.dtype):
        raise RuntimeError(f"view(): minitorch only reinterprets between dtypes of the same size "
                           f"(float64 and int64), not {nd.dtype.name} as {dtype.name}")
    data = NDArray(nd.buffer.view(dtype.storage), nd.shape, nd.strides, nd.offset, dtype,
                   nd.device, nd.backend)
    return view_of(input, data)


def view_as(input, other):
    return view(input, other.shape)


def reshape_as(input, other):
    return reshape(input, other.shape)


@batching_point
def flatten(input, start_dim=0, end_dim=-1):
    """Flattens dims start_dim..end_dim into one, as a view when possible (torch.flatten)."""
    if input.ndim == 0:
        normalize_dim(start_dim, 0), normalize_dim(end_dim, 0)     # torch's range check
        return reshape(input, 1)
    start, end = normalize_dim(start_dim, input.ndim), normalize_dim(end_dim, input.ndim)
    if start > end:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if start == end:
        return input
    shape = input._data.shape
    return reshape(input, shape[:start] + (math.prod(shape[start:end + 1]),) + shape[end + 1:])


def unflatten(input, dim, sizes):
    """Split dimension `dim` into `sizes` (one of which may be -1)."""
    d = real_dim(dim, input.ndim)
    sizes = tuple(operator.index(s) for s in sizes)
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    if sizes.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    size = input._data.shape[d]
    known = math.prod(s for s in sizes if s != -1)
    if -1 in sizes:
        if known == 0 or size % known:
            if known == 0 and size == 0:
                raise RuntimeError(f"cannot reshape tensor of 0 elements into shape "
                                   f"{shape_str(sizes)} because the unspecified dimension size "
                                   "-1 can be any value and is ambiguous")
            raise _unflatten_error(sizes, d, size)
        sizes = tuple(size // known if s == -1 else s for s in sizes)
    elif known != size:
        raise _unflatten_error(sizes, d, size)
    shape = input._data.shape
    return view(input, shape[:d] + sizes + shape[d + 1:])


def _unflatten_error(sizes, dim, size):
    return RuntimeError(f"unflatten: Provided sizes {shape_str(sizes)} don't multiply up to the "
                        f"size of dim {dim} ({size}) in the input tensor")


class Squeeze(KernelFunction):
    @staticmethod
    def forward(ctx, a, dims):
        ctx.input_shape = a._data.shape
        return _view_of(a, a._data.squeeze(dims))

    @staticmethod
    def backward(ctx, g):
        return g.reshape(ctx.input_shape), None


class SqueezeDim(Squeeze):
    """squeeze(dim): torch's squeeze.dim overload, so its node's name."""
    node_name = "SqueezeBackward1"


class SqueezeDims(Squeeze):
    """squeeze((dims)): torch's squeeze.dims overload."""
    node_name = "SqueezeBackward2"


class Unsqueeze(KernelFunction):
    @staticmethod
    def forward(ctx, a, dim):
        ctx.dim = dim
        return _view_of(a, a._data.unsqueeze(dim))

    @staticmethod
    def backward(ctx, g):
        return squeeze(g, ctx.dim), None


def squeeze(input, dim=None):
    """Drop size-1 dims: all of them, or those among `dim` (an int or a tuple)."""
    dims = normalize_dims(dim, input.ndim)
    if not _recorded(input):
        return view_of(input, input._data.squeeze(dims))      # Squeeze's forward
    node = Squeeze if dim is None else SqueezeDim if isinstance(dim, numbers.Integral) else \
        SqueezeDims
    return node.apply(input, dims)


def unsqueeze(input, dim):
    """View with a size-1 dim inserted at dim (torch.unsqueeze)."""
    dim = normalize_dim(dim, input.ndim + 1)
    if not _recorded(input):
        return view_of(input, input._data.unsqueeze(dim))     # Unsqueeze's forward
    return Unsqueeze.apply(input, dim)


# ---- permutations -----------------------------------------------------------------------------
def _inverse(order):
    inverse = [0] * len(order)
    for i, d in enumerate(order):
        inverse[d] = i
    return tuple(inverse)


class Permute(KernelFunction):
    @staticmethod
    def forward(ctx, a, dims):
        ctx.dims = _normalized_dims(dims, a._data.ndim)
        return _view_of(a, a._data.permute(ctx.dims))

    @staticmethod
    def backward(ctx, g):
        return Permute.apply(g, _inverse(ctx.dims)), None


class Transpose(KernelFunction):
    @staticmethod
    def forward(ctx, a, dim0, dim1):
        ctx.dims = (dim0, dim1)
        return _view_of(a, _swapped(a._data, dim0, dim1))

    @staticmethod
    def backward(ctx, g):
        return Transpose.apply(g, *ctx.dims), None, None


class T(KernelFunction):
    @staticmethod
    def forward(ctx, a):
        return _view_of(a, _swapped(a._data, 0, 1) if a._data.ndim == 2 else a._data._view(
            a._data.shape, a._data.strides))

    @staticmethod
    def backward(ctx, g):
        return T.apply(g)


def _swapped(nd, d0, d1):
    """nd with axes d0 and d1 exchanged (an alias view when there is nothing to swap)."""
    if d0 == d1 or nd.ndim < 2:
        return nd._view(nd.shape, nd.strides)
    return nd.transpose(d0, d1)


def permute(input, *args, dims=None):
    """View with the dims reordered as dims (torch.permute)."""
    dims = _sizes(args, dims)
    if not _recorded(input):
        return view_of(input, input._data.permute(_normalized_dims(dims, input.ndim)))
    return Permute.apply(input, dims)


def _normalized_dims(dims, ndim):
    return tuple(normalize_dim(d, ndim) for d in dims)


def transpose(input, dim0, dim1):
    """View with dims dim0 and dim1 swapped (torch.transpose)."""
    ndim = input.ndim
    dim0, dim1 = normalize_dim(dim0, ndim), normalize_dim(dim1, ndim)
    if not _recorded(input):
        return view_of(input, _swapped(input._data, dim0, dim1))     # Transpose's forward
    return Transpose.apply(input, dim0, dim1)


def swapaxes(input, axis0, axis1):
    """View with axes axis0 and axis1 swapped, same as transpose (torch.swapaxes)."""
    return transpose(input, axis0, axis1)


def swapdims(input, dim0, dim1):
    """View with dims dim0 and dim1 swapped, same as transpose (torch.swapdims)."""
    return transpose(input, dim0, dim1)


def t(input):
    """Transpose of a tensor of at most 2 dims; 0-D and 1-D input come back as they are
    (torch.t)."""
    if input.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                           f"{input.ndim}D")
    if not _recorded(input):
        return view_of(input, _swapped(input._data, 0, 1))      # T's forward
    return T.apply(input)


def movedim(input, source, destination):
    """Move dims `source` to positions `destination` (ints or sequences); the rest keep order."""
    ndim = input.ndim
    src = (source,) if isinstance(source, numbers.Integral) else tuple(source)
    dst = (destination,) if isinstance(destination, numbers.Integral) else tuple(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source "
                           f"({shape_str(src)} dims) should contain the same number of dims as "
                           f"destination ({shape_str(dst)} dims)")
    norm_src = [normalize_dim(d, ndim) for d in src]
    norm_dst = [normalize_dim(d, ndim) for d in dst]
    for name, given, norm in (("source", src, norm_src), ("destination", dst, norm_dst)):
        if len(set(norm)) != len(norm):
            raise RuntimeError(f"movedim: repeated dim in `{name}` ({shape_str(given)})")
    if ndim == 0:
        return Permute.apply(input, ())
    order = [-1] * ndim
    for s, d in zip(norm_src, norm_dst):
        order[d] = s
    rest = iter(d for d in range(ndim) if d not in norm_src)
    order = [next(rest) if o == -1 else o for o in order]
    return Permute.apply(input, tuple(order))


moveaxis = movedim


# ---- broadcasting -----------------------------------------------------------------------------
class Expand(KernelFunction):
    @staticmethod
    def forward(ctx, a, shape):
        ctx.input_shape = a._data.shape
        return _view_of(a, a._data.expand(shape))

    @staticmethod
    def backward(ctx, g):
        from .reduce import sum_to
        return sum_to(g, ctx.input_shape), None


def expand(input, *sizes, size=None):
    if not _recorded(input):        # (a sum's backward without create_graph)
        return view_of(input, input._data.expand(_sizes(sizes, size)))    # Expand's forward
    return Expand.apply(input, _sizes(sizes, size))


def broadcast_to(input, size):
    """View of input broadcast to size, same as expand (torch.broadcast_to)."""
    return expand(input, tuple(size))


def expand_as(input, other):
    return expand(input, tuple(other.shape))


# ---- strided views ----------------------------------------------------------------------------
class AsStrided(KernelFunction):
    """A view with explicit size/stride/offset into the input's storage (torch's semantics:
    the gradient is routed through storage, averaged where the input's own view overlaps)."""

    @staticmethod
    def forward(ctx, a, size, stride, storage_offset):
        nd = a._data
        out = nd.as_strided(size, stride, storage_offset)
        ctx.geometry = ((out.shape, out.strides, out.offset), (nd.shape, nd.strides, nd.offset))
        return _view_of(a, out)

    @staticmethod
    def backward(ctx, g):
        out_geometry, in_geometry = ctx.geometry
        counted = in_geometry if _maybe_overlapping(*in_geometry[:2]) else None
        return AsStridedBackward.apply(g, out_geometry, in_geometry, counted), None, None, None


def as_strided(input, size, stride, storage_offset=None):
    """View of input's storage with the given size, stride and storage_offset
    (torch.as_strided)."""
    return AsStrided.apply(input, tuple(size), tuple(stride), storage_offset)


def _unfold_geometry(shape, strides, offset, dim, size, step):
    """Tensor.unfold's view: dim becomes the window count, a trailing axis walks each window."""
    if not shape:
        return (size,), (1,), offset
    shape, strides = list(shape), list(strides)
    count = (shape[dim] - size) // step + 1
    window_stride = strides[dim]
    shape[dim], strides[dim] = count, strides[dim] * step
    return tuple(shape) + (size,), tuple(strides) + (window_stride,), offset


class Unfold(KernelFunction):
    """Tensor.unfold(dimension, size, step): every window of `size` along a dim, as a view."""

    @staticmethod
    def forward(ctx, a, dim, size, step):
        nd = a._data
        ctx.args = (nd.shape, dim, size, step)
        shape, strides, offset = _unfold_geometry(nd.shape, nd.strides, nd.offset, dim, size, step)
        return _view_of(a, nd._view(shape, strides, offset))

    @staticmethod
    def backward(ctx, g):
        shape, dim, size, step = ctx.args
        geometry = _unfold_geometry(shape, contiguous_strides(shape), 0, dim, size, step)
        return _scatter_back(g, shape, geometry), None, None, None


def unfold(input, dimension, size, step):
    ndim = input.ndim
    dim = normalize_dim(dimension, ndim)
    max_size = input._data.shape[dim] if ndim else 1
    if size > max_size:
        raise RuntimeError(f"maximum size for tensor at dimension {dim} is {max_size} but size "
                           f"is {size}")
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    return Unfold.apply(input, dim, operator.index(size), operator.index(step))


class Slice(KernelFunction):
    """narrow: `length` entries of one dim starting at `start`, as a view."""

    @staticmethod
    def forward(ctx, a, dim, start, length):
        ctx.args = (a._data.shape, dim, start, length)
        return _view_of(a, a._data[_axis_key(dim, slice(start, start + length))])

    @staticmethod
    def backward(ctx, g):
        shape, dim, start, length = ctx.args
        strides = contiguous_strides(shape)
        view_shape = shape[:dim] + (length,) + shape[dim + 1:]
        return _scatter_back(g, shape, (view_shape, strides, start * strides[dim])), None, None, \
            None


def narrow(input, dim, start, length):
    """View of length elements of dim starting at start (torch.narrow)."""
    if input.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    start, length = operator.index(start), operator.index(length)
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    dim = normalize_dim(dim, input.ndim)
    size = input._data.shape[dim]
    if not -size <= start <= size:
        raise IndexError(f"start out of range (expected to be in range of [{-size}, {size}], "
                         f"but got {start})")
    if start < 0:
        start += size
    if start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size "
                           f"({size}).")
    return Slice.apply(input, dim, start, length)


# ---- copies -----------------------------------------------------------------------------------
class Clone(KernelFunction):
    """A copy, compact unless given a layout (axis order, strides) from tensor.layout_for."""

    @staticmethod
    def forward(ctx, a, layout=None):
        nd = a._data
        return wrap(nd.copy() if layout is None else copy_in_layout(nd, *layout))

    @staticmethod
    def backward(ctx, g):
        return g, None


def clone(input, memory_format=None):
    """torch.clone: a copy of input that records autograd history, laid out as torch lays it
    out: memory_format preserve_format (the default: a dense input's strides exactly, else
    input's axis order), contiguous_format, channels_last (4-D) or channels_last_3d (5-D)."""
    fmt = check_memory_format(memory_format, "clone")
    return Clone.apply(input, layout_for(input._data, fmt))


def contiguous(input, memory_format=None):
    """torch.Tensor.contiguous: input itself when already laid out in memory_format's order
    (default contiguous_format), else a copy laid out so."""
    if memory_format is None or memory_format is contiguous_format:
        return input if input._data.is_compact() else Clone.apply(input)
    fmt = check_memory_format(memory_format, "contiguous")
    if is_contiguous_as(input._data, fmt):
        return input
    if fmt is preserve_format:
        raise RuntimeError("preserve memory format is unsupported by the contiguous operator")
    return Clone.apply(input, layout_for(input._data, fmt))


class Flip(KernelFunction):
    """A reversed copy: a negative-stride view compacted by one kernel."""

    @staticmethod
    def forward(ctx, a, dims):
        ctx.dims = dims
        key = tuple(slice(None, None, -1) if d in dims else slice(None)
                    for d in range(a._data.ndim))
        return wrap(a._data[key].copy())

    @staticmethod
    def backward(ctx, g):
        return Flip.apply(g, ctx.dims), None


def flip(input, *args, dims=None):
    """Copy of input with the order of elements reversed along dims (torch.flip)."""
    return Flip.apply(input, normalize_dims(_sizes(args, dims), input.ndim))


def fliplr(input):
    """Reverses the order along dim 1 of an input of at least 2 dims (torch.fliplr)."""
    if input.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip(input, 1)


def flipud(input):
    """Reverses the order along dim 0 of an input of at least 1 dim (torch.flipud)."""
    if input.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip(input, 0)


class Roll(KernelFunction):
    """Shift entries cyclically along dims: one strided copy per block of the result."""

    @staticmethod
    def forward(ctx, a, shifts, dims):
        ctx.shifts, ctx.dims = shifts, dims
        nd = a._data
        if dims is None:    # roll the flattened tensor, then restore the shape
            flat = _roll(nd.reshape((nd.size,)), shifts, (0,))
            return wrap(flat._view(nd.shape, contiguous_strides(nd.shape), 0))
        return wrap(_roll(nd, shifts, dims))

    @staticmethod
    def backward(ctx, g):
        return Roll.apply(g, tuple(-s for s in ctx.shifts), ctx.dims), None, None


def _roll(nd, shifts, dims):
    """Each rolled dim splits into two blocks that swap places; 2**len(dims) copies in all."""
    total = {}
    for s, d in zip(shifts, dims):
        total[d] = total.get(d, 0) + s
    out = nd._new(nd.shape)
    if not out.size:
        return out
    moves = []
    for d, s in total.items():
        n = nd.shape[d]
        s %= n
        moves.append([(d, slice(s, n), slice(0, n - s)), (d, slice(0, s), slice(n - s, n))]
                     if s else [(d, slice(None), slice(None))])
    for blocks in itertools.product(*moves):
        dst_key, src_key = [slice(None)] * nd.ndim, [slice(None)] * nd.ndim
        for d, dst, src in blocks:
            dst_key[d], src_key[d] = dst, src
        _copy_into(out[tuple(dst_key)], nd[tuple(src_key)])
    return out


def roll(input, shifts, dims=None):
    """Rolls elements along dims by shifts, wrapping around; flattened first when dims is None
    (torch.roll)."""
    shifts = (shifts,) if isinstance(shifts, numbers.Integral) else tuple(shifts)
    dims = () if dims is None else ((dims,) if isinstance(dims, numbers.Integral) else
                                    tuple(dims))
    if not shifts:
        raise RuntimeError("`shifts` required")
    if not dims and len(shifts) == 1:
        return Roll.apply(input, (operator.index(shifts[0]),), None)
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, "
                           f"dims:{len(dims)}")
    dims = tuple(real_dim(d, input.ndim) for d in dims)
    return Roll.apply(input, tuple(operator.index(s) for s in shifts), dims)


class Repeat(KernelFunction):
    """Tile the input `repeats` times per dim: an expanded (r0, s0, r1, s1, …) view compacted
    by one kernel; backward sums the gradient over the repeat axes."""

    @staticmethod
    def forward(ctx, a, repeats):
        nd = a._data
        lead = len(repeats) - nd.ndim
        sizes = (1,) * lead + nd.shape
        strides = (0,) * lead + nd.strides
        pairs_shape = tuple(x for r, s in zip(repeats, sizes) for x in (r, s))
        pairs_strides = tuple(x for st in strides for x in (0, st))
        ctx.input_shape, ctx.pairs_shape = nd.shape, pairs_shape
        tiled = nd._view(pairs_shape, pairs_strides).copy()
        shape = tuple(r * s for r, s in zip(repeats, sizes))
        return wrap(tiled._view(shape, contiguous_strides(shape), 0))

    @staticmethod
    def backward(ctx, g):
        from .reduce import Sum
        if not ctx.pairs_shape:
            return g, None
        folded = g.reshape(ctx.pairs_shape)
        repeat_axes = tuple(range(0, len(ctx.pairs_shape), 2))
        return Sum.apply(folded, repeat_axes, False).reshape(ctx.input_shape), None


def repeat(input, *args, repeats=None):
    repeats = _sizes(args, repeats)
    if len(repeats) < input.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number "
                           "of dimensions of tensor")
    lead = len(repeats) - input.ndim
    check_shape(tuple(r * s for r, s in zip(repeats, (1,) * lead + tuple(input.shape))))
    return Repeat.apply(input, repeats)


def tile(input, *args, dims=None):
    """Repeats input by dims, padding dims with leading 1s when it has fewer than input.ndim
    (torch.tile)."""
    dims = _sizes(args, dims)
    return repeat(input, (1,) * (input.ndim - len(dims)) + dims)


def select(input, dim, index):
    """The slice at `index` along dim, without that dim (a view)."""
    d = normalize_dim(dim, input.ndim) if input.ndim else None
    if d is None:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    size = input.shape[d]
    i = operator.index(index)
    if not -size <= i < size:
        raise IndexError(f"select(): index {i} out of range for tensor of size "
                         f"{shape_str(input.shape)} at dimension {d}")
    return narrow(input, d, i % size, 1).squeeze(d)
