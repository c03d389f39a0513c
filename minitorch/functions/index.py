"""Index ops: gather, scatter, scatter_add, scatter_reduce, index_select, index_add,
index_fill, index_copy, index_reduce, masked_fill, masked_scatter, masked_select, take,
take_along_dim, nonzero, argwhere, select/slice/diagonal_scatter, fill_diagonal_ and the index
constructors (tril_indices, unravel_index, ...). `t[key]` itself is indexing.py.

Integer indices are validated on the host before any kernel reads them. Every Function's
backward is written with these Functions again, so gradients of gradients work.
"""
import numbers
import operator
import warnings


from .. import dtypes
from ..autograd import KernelFunction
from ..autograd.engine import recorded as _recorded
from ..ndarray import (NDArray, broadcast_shapes, contiguous_strides, normalize_dim, shape_numel,
                       shape_str)
from ..opcodes import BinaryOp as B, ReduceOp
from ..tensor import Tensor, arange, tensor as _make_tensor, wrap, write_out
from .autocast_policy import batching_point
from . import reduce as _reduce
from .elementwise import cast, scalar_array, where
from .reduce import sum_to
from .indexing import (IndexPut, MaskedSelect, Slice, Take, _Advanced, _Indexer, _const,
                       _first_outside, _flat_nonzero, _torch_name, _unravel, _wrapped, _zero,
                       _zeros, setitem)
from .linalg import Diagonal, _offset_diagonal_view


__all__ = [
    'argwhere', 'diagonal_scatter', 'gather', 'index_add', 'index_copy', 'index_fill',
    'index_select', 'masked_fill', 'masked_scatter', 'masked_select', 'nonzero',
    'scatter', 'scatter_add', 'scatter_reduce', 'select_scatter', 'slice_scatter', 'take',
    'take_along_dim', 'tril_indices', 'triu_indices', 'unravel_index', 'index_reduce',
]

_C_NAMES = {"float32": "float", "float64": "double", "int64": "long int", "bool": "bool"}


# ---- gather / scatter -------------------------------------------------------------------------
def _long_index(index, message):
    """An int64 or int32 index tensor as int64 (what the kernels read; torch takes both), or
    torch's error `message` for anything else."""
    if not isinstance(index, Tensor) or index.dtype not in (dtypes.int64, dtypes.int32):
        raise RuntimeError(message)
    return index if index.dtype is dtypes.int64 else index.long()


def _out_of_bounds(index, dim, size):
    """torch's error for the first index outside [0, size) (the kernels refused the op)."""
    value = _first_outside(index, 0, size)
    return RuntimeError(f"index {value} is out of bounds for dimension {dim} with size {size}")


class Gather(KernelFunction):
    """out[..., j, ...] = a[..., index[..., j, ...], ...] along dim; backward scatter_adds."""

    @staticmethod
    def forward(ctx, a, index, dim):
        ctx.input_shape, ctx.dim = a._data.shape, dim
        ctx.save_for_backward(index)
        return _gathered(a, index, dim)

    @staticmethod
    def backward(ctx, g):
        index, = ctx.saved_tensors
        return GatherBackward.apply(g, index, ctx.dim, ctx.input_shape), None


def _gathered(a, index, dim):
    """Gather's forward: the kernel, with torch's error for an index out of range."""
    try:
        return wrap(a._data.gather(dim, index._data))
    except IndexError:
        raise _out_of_bounds(index._data, dim, a._data.shape[dim]) from None


class GatherBackward(KernelFunction):
    """g scatter-added into fresh zeros of the gathered input's shape (also max/min's backward,
    through the arg index): one fill and one scatter, where scatter_add(zeros, …) would copy
    the zeros once more. Linear in g; its backward gathers."""

    @staticmethod
    def forward(ctx, g, index, dim, input_shape):
        ctx.dim = dim
        ctx.save_for_backward(index)
        out = NDArray.full(input_shape, 0, g.dtype, g.device)
        out.scatter_into(dim, index._data, g._data, True)
        return wrap(out)

    @staticmethod
    def backward(ctx, gg):
        index, = ctx.saved_tensors
        return Gather.apply(gg, index, ctx.dim), None, None, None


class ScatterAdd(KernelFunction):
    """a with src[..., j, ...] added at a[..., index[..., j, ...], ...] (duplicates add up)."""
    accumulate = True

    @classmethod
    def forward(cls, ctx, a, index, src, dim):
        ctx.dim, ctx.src_shape = dim, src._data.shape
        ctx.save_for_backward(index)
        out = a._data.copy()
        try:
            out.scatter_into(dim, index._data, src._data, cls.accumulate)
        except IndexError:
            raise _out_of_bounds(index._data, dim, out.shape[dim]) from None
        return wrap(out)

    @staticmethod
    def backward(ctx, g):
        index, = ctx.saved_tensors
        grad_src = None
        if ctx.needs_input_grad[2]:
            grad_src = _pad_to(Gather.apply(g, index, ctx.dim), ctx.src_shape)
        return g, None, grad_src


class Scatter(ScatterAdd):
    """a with src[..., j, ...] written at a[..., index[..., j, ...], ...]."""
    accumulate = False

    @staticmethod
    def backward(ctx, g):
        index, = ctx.saved_tensors
        grad_a = grad_src = None
        if ctx.needs_input_grad[0]:
            zeros = wrap(scalar_array(0, g.dtype, g.device).expand(index.shape))
            grad_a = Scatter.apply(g, index, zeros, ctx.dim)
        if ctx.needs_input_grad[2]:
            grad_src = _pad_to(Gather.apply(g, index, ctx.dim), ctx.src_shape)
        return grad_a, None, grad_src


def _pad_to(t, shape):
    """t placed in the leading block of zeros(shape) (src may be larger than index)."""
    if tuple(t.shape) == tuple(shape):
        return t
    key = tuple(slice(0, n) for n in t.shape)
    indexer = _Indexer(key, Slice, None)
    return IndexPut.apply(_zeros(shape, t), t, indexer, False, True)


def _at_least_1d(input, index):
    """gather/scatter treat 0-d tensors as 1-d (torch's ensure_nonempty_dim)."""
    return (input.reshape(1) if input.ndim == 0 else input,
            index.reshape(1) if index.ndim == 0 else index)


def gather(input, dim, index, *, sparse_grad=False, out=None):
    """torch.gather: out[i][j][k] = input[i][index[i][j][k]][k] for dim=1."""
    index = _long_index(index, "gather(): Expected dtype int32/int64 for index")
    # the NDArrays' shapes, not Tensor.shape's Size objects: gather is a per-step op of RL loops
    index_shape = index._data.shape
    if max(input.ndim, 1) != max(len(index_shape), 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    dim = normalize_dim(dim, input.ndim)
    device = input._data.device
    a, i = _at_least_1d(input, index if index._data.device is device or
                        index._data.device == device else index.to(device))
    for d, (n_index, n_self) in enumerate(zip(i._data.shape, a._data.shape)):
        if d != dim and n_index > n_self:
            raise RuntimeError(f"Size does not match at dimension {d} expected index "
                               f"{shape_str(i.shape)} to be no larger than self "
                               f"{shape_str(a.shape)} apart from dimension {dim}")
    # nothing records (an RL loop's per-step gather): Gather's forward alone, without its node
    result = Gather.apply(a, i, dim) if _recorded(a) else _gathered(a, i, dim)
    if result._data.shape != index_shape:
        result = result.reshape(index_shape)
    return result if out is None else write_out(out, result, "gather")


def _scatter_args(input, dim, index, src):
    """Checks shared by scatter and scatter_add; returns (input, index, src, dim) at least 1-d."""
    index = _long_index(index, "scatter(): Expected dtype int32/int64 for index")
    if src.dtype is not input.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    if max(input.ndim, 1) != max(index.ndim, 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    dim = normalize_dim(dim, input.ndim)
    a, i = _at_least_1d(input, index.to(input.device))
    s = src.to(input.device)
    s = s.reshape(1) if s.ndim == 0 else s
    if s.ndim != i.ndim:
        raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
    if any(n > m for n, m in zip(i.shape, s.shape)) or any(
            d != dim and n > m for d, (n, m) in enumerate(zip(i.shape, a.shape))):
        raise RuntimeError(f"Expected index {shape_str(i.shape)} to be no larger than self "
                           f"{shape_str(a.shape)} apart from dimension {dim} and to be no larger "
                           f"size than src {shape_str(s.shape)}")
    return a, i, s, dim


def scatter(input, dim, index, src=None, value=None, *, reduce=None):
    """torch.scatter: input with src (or the scalar value) written at index along dim;
    reduce='add' accumulates instead, reduce='multiply' multiplies."""
    if src is not None and not isinstance(src, Tensor):
        src, value = None, src
    if src is None and value is None:
        raise TypeError("scatter() missing required argument 'src' or 'value'")
    if reduce not in (None, "add", "multiply"):
        raise RuntimeError("reduce argument must be either add or multiply.")
    if reduce is not None and src is not None:
        warnings.warn("The reduce argument of torch.scatter with Tensor src is deprecated and "
                      "will be removed in a future PyTorch release. Use torch.scatter_reduce "
                      "instead for more reduction options.", UserWarning, stacklevel=2)
    if src is None:
        index = _long_index(index, "scatter(): Expected dtype int32/int64 for index")
        dtypes.check_scalar_fits(value, input.dtype)
        src = wrap(scalar_array(value, input.dtype, input.device).expand(
            tuple(index.shape) or (1,)))
    a, i, s, dim = _scatter_args(input, dim, index, src)
    if reduce == "multiply":
        result = ScatterReduce.apply(a, i, s, dim, "prod", True)
    else:
        result = (ScatterAdd if reduce == "add" else Scatter).apply(a, i, s, dim)
    return result.reshape(input.shape) if result.shape != input.shape else result


def scatter_add(input, dim, index, src):
    """torch.scatter_add: input with src added at index along dim (duplicates add up)."""
    a, i, s, dim = _scatter_args(input, dim, index, src)
    result = ScatterAdd.apply(a, i, s, dim)
    return result.reshape(input.shape) if result.shape != input.shape else result


# ---- index_select / index_add -----------------------------------------------------------------
class IndexSelect(KernelFunction):
    """Slices of a along dim picked by a 1-d index; backward index_adds into zeros."""

    @staticmethod
    def forward(ctx, a, index, dim):
        ctx.input_shape, ctx.dim = a._data.shape, dim
        ctx.save_for_backward(index)
        try:
            return wrap(a._data.index_select(dim, index._data))
        except IndexError:
            size = a._data.shape[dim] if a._data.ndim else 1
            bad = _first_outside(index._data, 0, size)
            if a._data.ndim > 1 and dim == 1:     # torch's dim-1 fast path words it so
                raise RuntimeError(f"INDICES element is out of DATA bounds, id={bad} "
                                   f"axis_dim={size}") from None
            raise IndexError("index out of range in self") from None

    @staticmethod
    def backward(ctx, g):
        index, = ctx.saved_tensors
        return index_add_to_zeros(ctx.input_shape, index, g, ctx.dim), None


def index_add_to_zeros(shape, index, src, dim):
    """zeros(shape).index_add(dim, index, src): the backward of a lookup. Unrecorded, the
    slices go straight into the zeros (IndexAdd's out-of-place copy of a large table costs as
    much as the zeros themselves)."""
    if _recorded(src):      # create_graph (or the profiler): a node that differentiates
        return IndexAdd.apply(_zeros(shape, src), index, src, dim)
    out = NDArray.full(shape, 0, src._data.dtype, src._data.device)
    try:
        out.index_add_into(dim, index._data, src._data)
    except IndexError:
        raise IndexError("index out of range in self") from None
    return wrap(out)


class IndexAdd(KernelFunction):
    """a with the slices of src added at a's slices index[j] along dim."""

    @staticmethod
    def forward(ctx, a, index, src, dim):
        ctx.dim, ctx.src_shape = dim, src._data.shape
        ctx.save_for_backward(index)
        out = a._data.copy()
        try:
            out.index_add_into(dim, index._data, src._data)
        except IndexError:
            raise IndexError("index out of range in self") from None
        return wrap(out)

    @staticmethod
    def backward(ctx, g):
        index, = ctx.saved_tensors
        grad_src = None
        if ctx.needs_input_grad[2]:
            grad_src = IndexSelect.apply(g, index, ctx.dim).reshape(ctx.src_shape)
        return g, None, grad_src


def index_select(input, dim, index, *, out=None):
    """torch.index_select: the slices input[..., index[j], ...] along dim."""
    index = _long_index(index, "index_select(): Expected dtype int32 or int64 for index")
    if index.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    dim = normalize_dim(dim, input.ndim)
    if input.ndim == 0 and index.numel() != 1:
        raise RuntimeError(f"index_select(): Index to scalar can have only 1 value, got "
                           f"{index.numel()} value(s)")
    result = IndexSelect.apply(input, index.to(input.device), dim)
    result = result.reshape(()) if input.ndim == 0 else result
    return result if out is None else write_out(out, result, "index_select")


def index_add(input, dim, index, source, *, alpha=1):
    """torch.index_add: input with alpha·source's slices added at index along dim."""
    index = _long_index(index, "index_add_(): Expected dtype int32/int64 for index but got: "
                        + _torch_name(index.dtype))
    if index.ndim > 1:
        raise IndexError(f"index_add_(): Index is supposed to be a vector, but got dim: "
                         f"{index.ndim} with type: {_torch_name(index.dtype)} and size: "
                         f"{shape_str(index.shape)}")
    dim = normalize_dim(dim, input.ndim)
    if source.dtype is not input.dtype:
        raise RuntimeError(f"index_add_(): self ({_torch_name(input.dtype)}) and source "
                           f"({_torch_name(source.dtype)}) must have the same scalar type")
    if source.ndim != input.ndim or any(
            d != dim and a != b for d, (a, b) in enumerate(zip(input.shape, source.shape))):
        raise RuntimeError("source tensor shape must match self tensor shape, excluding the "
                           f"specified dimension. Got self.shape = {shape_str(input.shape)} "
                           f"source.shape = {shape_str(source.shape)}")
    count = source.shape[dim] if source.ndim else 1
    if index.numel() != count:
        raise RuntimeError(f"index_add_(): Number of indices ({index.numel()}) should be equal to "
                           f"source.size(dim): ({count}), for dim: {dim}")
    if not input.dtype.is_floating_point:
        # torch converts alpha to the tensor's type: 0.5 is 0 for int64, True for bool
        alpha = bool(alpha) if input.dtype is dtypes.bool_ else int(alpha)
    if alpha != 1:
        source = source * alpha
    return IndexAdd.apply(input, index.to(input.device), source.to(input.device), dim)


# ---- masks ------------------------------------------------------------------------------------
class MaskedFill(KernelFunction):
    """value where mask else a (mask and a broadcast together); value is a 0-d tensor."""

    @staticmethod
    def forward(ctx, a, mask, value):
        ctx.input_shape = a._data.shape
        ctx.save_for_backward(mask)
        return wrap(mask._data.where(value._data, a._data))

    @staticmethod
    def backward(ctx, g):
        mask, = ctx.saved_tensors
        zero = _zero(g)
        grad_a = grad_value = None
        if ctx.needs_input_grad[0]:
            grad_a = sum_to(where(mask, zero, g), ctx.input_shape)
        if ctx.needs_input_grad[2]:
            grad_value = _reduce.sum(where(mask, g, zero))
        return grad_a, None, grad_value


@batching_point
def masked_fill(input, mask, value):
    """torch.masked_fill: value where mask is True (mask broadcasts; value a scalar or 0-d)."""
    if mask.dtype is not dtypes.bool_:
        raise RuntimeError("masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{_C_NAMES[mask.dtype.name]}")
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError("masked_fill_ only supports a 0-dimensional value tensor, but got "
                               f"tensor with {value.ndim} dimension(s).")
        value = cast(value.to(input.device), input.dtype)
    else:
        dtypes.check_scalar_fits(value, input.dtype)
        value = wrap(scalar_array(value, input.dtype, input.device))
    return MaskedFill.apply(input, mask.to(input.device), value)


def masked_select(input, mask):
    """torch.masked_select: the 1-d tensor of input's elements where mask (broadcast) is True."""
    if mask.dtype is not dtypes.bool_:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    shape = broadcast_shapes(tuple(input.shape), tuple(mask.shape))
    values, mask = _broadcast(input, shape), mask.to(input.device)._data
    mask = mask.expand(shape) if mask.shape != shape else mask
    if not shape:       # 0-d: one element, selected or not
        shape, values = (1,), values.reshape(1)
    adv = _Advanced(shape, ((0, len(shape)),), [_flat_nonzero(mask)])
    return MaskedSelect.apply(values, adv)


def nonzero(input, *, out=None, as_tuple=False):
    """torch.nonzero: (n, ndim) int64 indices of the nonzero elements, or a tuple of columns."""
    flat = _flat_nonzero(input._data)
    if as_tuple and input.ndim == 0:
        return (wrap(NDArray.full((flat.size,), 0, dtypes.int64, input.device)),)
    positions = _unravel(flat, input._data.shape)
    if as_tuple:
        return tuple(wrap(positions[:, d]) for d in range(input.ndim))
    return wrap(positions) if out is None else write_out(out, wrap(positions), "nonzero")


def argwhere(input):
    """torch.argwhere: the same as nonzero(input)."""
    return nonzero(input)


# ---- take / take_along_dim --------------------------------------------------------------------
def take(input, index):
    """torch.take: input viewed as 1-d, read at index (negative indices count from the end)."""
    if not isinstance(index, Tensor) or index.dtype is not dtypes.int64:
        raise RuntimeError("take(): Expected a long tensor for index, but got "
                           f"{_torch_name(index.dtype) if isinstance(index, Tensor) else None}")
    numel = input.numel()
    if numel == 0 and index.numel():
        raise IndexError("take(): tried to take from an empty tensor")
    index = index.to(input.device)._data
    index = _wrapped(index, numel, lambda v: IndexError(
        f"out of range: tried to access index {v} on a tensor of {numel} elements."))
    adv = _Advanced((numel,), ((0, 1),), [index])
    return Take.apply(input.reshape(numel), adv)


def take_along_dim(input, indices, dim=None):
    """torch.take_along_dim: gather along dim after broadcasting the other dims. With dim=None
    both are flattened and indices must lie in [0, numel); with a dim, torch 2.x reads every
    index modulo the dim's size (-1 is the last), and so do we."""
    if not isinstance(indices, Tensor) or indices.dtype is not dtypes.int64:
        raise RuntimeError("torch.take_along_dim(): dtype of indices should be Long but got "
                           + _torch_name(indices.dtype))
    indices = indices.to(input.device)
    if dim is None:
        return gather(input.reshape(-1), 0, indices.reshape(-1))
    if input.ndim != indices.ndim:
        raise RuntimeError("torch.take_along_dim(): input and indices should have the same "
                           f"number of dimensions, but got {input.ndim} dimensions for input, "
                           f"and {indices.ndim} dimensions for indices")
    dim = normalize_dim(dim, input.ndim)
    if input.ndim:
        common = broadcast_shapes(_with(input.shape, dim, 1), _with(indices.shape, dim, 1))
        input = _broadcast(input, _with(common, dim, input.shape[dim]))
        indices = _broadcast(indices, _with(common, dim, indices.shape[dim]))
    size = input.shape[dim] if input.ndim else 1
    if size and indices.numel():
        indices = wrap(indices._data.binary(B.REMAINDER, _const(size, input.device)))
    return gather(input, dim, indices)


def _with(shape, dim, size):
    return tuple(shape[:dim]) + (size,) + tuple(shape[dim + 1:])


def _broadcast(t, shape):
    return t.expand(*shape) if tuple(t.shape) != tuple(shape) else t


# ---- scatter_reduce ---------------------------------------------------------------------------
_SCATTER_REDUCES = ("sum", "prod", "mean", "amax", "amin")
_KERNEL_OPS = {"prod": ReduceOp.PROD, "amax": ReduceOp.MAX, "amin": ReduceOp.MIN}


def _identity(reduce, dtype):
    """The value a reduction starts from (what include_self=False puts under the scattered
    positions first)."""
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    biggest = {"float32": float("inf"), "float64": float("inf"), "int64": 2 ** 63 - 1,
               "uint8": 255, "bool": True}[dtype.name]
    lowest = {"float32": -biggest, "float64": -biggest, "int64": -2 ** 63, "uint8": 0,
              "bool": False}[dtype.name]
    return lowest if reduce == "amax" else biggest


def _scatter_reduce_into(out, dim, index, src, op):
    """out[..., index[..., j, ...], ...] = op(that, src[..., j, ...]) in place (NDArrays; op a
    ReduceOp the scatter_reduce kernel runs), on a compact staging copy of the addressed block
    when that block isn't compact (as NDArray.scatter_into does)."""
    region = out[out._index_region(dim, index.shape, "scatter")]
    if index.size == 0:
        return
    target = region if region.is_compact() else region.copy()
    values = src[tuple(slice(0, n) for n in index.shape)].compact()
    outer, size, inner = target._index_layout(dim)
    try:
        out.backend.scatter_reduce(op, values.flat(), index.compact().flat(), target.flat(),
                                   outer, size, index.shape[dim], inner)
    except IndexError:
        raise _out_of_bounds(index, dim, out.shape[dim]) from None
    if target is not region:
        region.assign(target)


def _scatter_counts(shape, index, dim, include_self, like):
    """How many values each position of a `shape` result averages (at least 1, so that
    untouched positions divide by 1), in like's dtype."""
    counts = NDArray.full(shape, 1 if include_self else 0, like.dtype, like.device)
    ones = NDArray.full(index.shape, 1, like.dtype, like.device)
    counts.scatter_into(dim, index, ones, True)
    return counts.binary(B.MAXIMUM, scalar_array(1, like.dtype, like.device))


class ScatterReduce(KernelFunction):
    """a with src reduced into a[..., index[..., j, ...], ...] along dim by "sum", "prod",
    "mean", "amax" or "amin", a's own values taking part when include_self."""

    @staticmethod
    def forward(ctx, a, index, src, dim, reduce, include_self):
        ctx.dim, ctx.reduce, ctx.include_self = dim, reduce, include_self
        ctx.src_shape = src._data.shape
        i, out = index._data, a._data.copy()
        if not include_self:
            fill = NDArray.full(i.shape, _identity(reduce, out.dtype), out.dtype, out.device)
            out.scatter_into(dim, i, fill, False)
        if reduce in ("sum", "mean"):
            try:
                out.scatter_into(dim, i, src._data, True)
            except IndexError:
                raise _out_of_bounds(i, dim, out.shape[dim]) from None
            if reduce == "mean":
                counts = _scatter_counts(out.shape, i, dim, include_self, out)
                out = out.binary(B.DIV if out.dtype.is_floating_point else B.FLOOR_DIVIDE,
                                 counts)
        else:
            _scatter_reduce_into(out, dim, i, src._data, _KERNEL_OPS[reduce])
        result = wrap(out)
        ctx.save_for_backward(a, index, src, result)
        return result

    @staticmethod
    def backward(ctx, g):
        a, index, src, result = ctx.saved_tensors
        dim = ctx.dim
        src = src[tuple(slice(0, n) for n in index.shape)]     # the part that was scattered
        grad_a, grad_src = _REDUCE_GRADIENTS[ctx.reduce](ctx, g, a, index, src, result)
        if not ctx.include_self:
            grad_a = scatter(grad_a, dim, index, 0)     # a's values there took no part
        return grad_a, None, _pad_to(grad_src, ctx.src_shape), None, None, None


def _sum_gradients(ctx, g, a, index, src, result):
    return g, gather(g, ctx.dim, index)


def _mean_gradients(ctx, g, a, index, src, result):
    counts = wrap(_scatter_counts(g._data.shape, index._data, ctx.dim, ctx.include_self,
                                  g._data))
    grad_a = g / counts
    return grad_a, gather(grad_a, ctx.dim, index)


def _extreme_gradients(ctx, g, a, index, src, result):
    """amax / amin: the gradient is shared evenly among the values equal to the result."""
    dim = ctx.dim
    value = gather(result, dim, index)
    a_is_result, src_is_result = a == result, src == value
    ties = scatter_add(cast(a_is_result, g.dtype), dim, index, cast(src_is_result, g.dtype))
    share = g / ties
    return (where(a_is_result, share, _zero(g)),
            where(src_is_result, gather(share, dim, index), _zero(g)))


def _prod_gradients(ctx, g, a, index, src, result):
    """torch's formula: the product of the others, found by dividing out a value, except where
    that value is 0 (then the product is recomputed with a 1 in its place)."""
    dim, include_self = ctx.dim, ctx.include_self
    one = wrap(scalar_array(1, a.dtype, a.device))
    a_zero, src_zero = a == 0, src == 0
    ones_for_a = where(a_zero, one, a)
    grad_a = g * ScatterReduce.apply(ones_for_a, index, src, dim, "prod", include_self) \
        / ones_for_a
    zeros_per_target = gather(scatter_add(_zeros(a.shape, a), dim, index, cast(src_zero, a.dtype)),
                              dim, index)
    single_zero = src_zero & (zeros_per_target == 1)
    others = ScatterReduce.apply(a, index, where(single_zero, one, src), dim, "prod",
                                 include_self)
    grad_src = where(single_zero, gather(g * others, dim, index),
                     gather(g * result, dim, index) / where(src_zero, one, src))
    return grad_a, grad_src


_REDUCE_GRADIENTS = {"sum": _sum_gradients, "mean": _mean_gradients, "prod": _prod_gradients,
                     "amax": _extreme_gradients, "amin": _extreme_gradients}


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    """torch.scatter_reduce: src reduced into input at index along dim ("sum", "prod", "mean",
    "amax", "amin"); include_self=False leaves input's values at the scattered positions out."""
    reduce = {"max": "amax", "min": "amin"}.get(reduce, reduce)     # torch takes these too
    if reduce not in _SCATTER_REDUCES:
        raise RuntimeError("reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    a, i, s, dim = _scatter_args(input, dim, index, src)
    if reduce == "mean" and input.dtype is dtypes.bool_:
        raise NotImplementedError('"scatter_gather_tensor_cpu_reduce_mean" not implemented '
                                  "for 'Bool'")
    result = ScatterReduce.apply(a, i, s, dim, reduce, bool(include_self))
    return result.reshape(input.shape) if result.shape != input.shape else result


# ---- index_fill / index_copy ------------------------------------------------------------------
def _dim_indexer(input, dim, index, error):
    """The `_Indexer` picking input's slices index[j] along dim (a 0-d input counts as 1-d);
    error(value) is raised for an index outside [-size, size)."""
    shape = tuple(input.shape) or (1,)
    size = shape[dim]
    flat = index.to(input.device)._data.reshape((index.numel(),))
    return _Indexer((), None, _Advanced(shape, ((dim, 1),), [_wrapped(flat, size, error)]))


def _bounds_error(dim, size, prefix=""):
    return lambda v: IndexError(f"{prefix}index {v} is out of bounds for dimension {dim} with "
                                f"size {size}")


def index_fill(input, dim, index, value):
    """torch.index_fill: input with the slices index[j] along dim set to value (a scalar or a
    0-d tensor, which then receives their gradient)."""
    if not isinstance(index, Tensor) or index.dtype is not dtypes.int64:
        raise IndexError("index_fill_(): Expected dtype int64 for index.")
    if index.ndim > 1:
        raise RuntimeError("Index has to be a vector/scalar")
    dim = normalize_dim(dim, input.ndim)
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError("index_fill_ only supports a 0-dimensional value tensor, but got "
                               f"tensor with {value.ndim} dimension(s).")
        value = cast(value.to(input.device), input.dtype)
    else:
        dtypes.check_scalar_fits(value, input.dtype)
        value = wrap(scalar_array(value, input.dtype, input.device))
    size = input.shape[dim] if input.ndim else 1
    indexer = _dim_indexer(input, dim, index, _bounds_error(dim, size))
    base = input.reshape(1) if input.ndim == 0 else input
    return IndexPut.apply(base, value, indexer, False).reshape(input.shape)


def index_copy(input, dim, index, source):
    """torch.index_copy: input with its slices index[j] along dim replaced by source's j-th."""
    if not isinstance(index, Tensor) or index.dtype is not dtypes.int64:
        raise RuntimeError("index_copy_(): Expected a long tensor for index, but got "
                           f"{_torch_name(index.dtype) if isinstance(index, Tensor) else None}")
    if index.ndim > 1:
        raise IndexError(f"index_copy_(): Index should have dimension 1 or 0 (got {index.ndim})")
    if source.dtype is not input.dtype:
        raise RuntimeError("index_copy_(): self and source expected to have the same dtype, but "
                           f"got (self) {_torch_name(input.dtype)} and (source) "
                           f"{_torch_name(source.dtype)}")
    dim = normalize_dim(dim, input.ndim)
    _check_copy_shapes(input, dim, index, source)
    size = input.shape[dim] if input.ndim else 1
    indexer = _dim_indexer(input, dim, index, _bounds_error(dim, size, "index_copy_(): "))
    base = input.reshape(1) if input.ndim == 0 else input
    source = source.to(input.device).reshape(indexer.adv.result_shape)
    return IndexPut.apply(base, source, indexer, False).reshape(input.shape)


def _check_copy_shapes(input, dim, index, source):
    """index_copy's shape rules, with torch's messages."""
    if input.ndim and source.ndim and source.ndim != input.ndim:
        raise IndexError("index_copy_(): When source and destination are not scalars, their "
                         f"dimensionality must match. Source dimensionality ({source.ndim}), "
                         f"destination dimensionality ({input.ndim})")
    # torch numbers the dims of the slices (the shapes without dim) in its message
    slices = [tuple(t.shape[:dim]) + tuple(t.shape[dim + 1:]) for t in (input, source)]
    for d, (want, got) in enumerate(zip(*slices)):
        if want != got:
            raise RuntimeError("index_copy_(): Source/destination tensor must have same slice "
                               f"shapes. Destination slice shape: {want} at dimension {d} and "
                               f"source slice shape: {got} at dimension {d}.")
    count = source.shape[dim] if source.ndim else 1
    if index.numel() != count:
        raise IndexError(f"index_copy_(): Number of indices ({index.numel()}) should be equal to "
                         f"source.size(dim) ({count})")


# ---- masked_scatter ---------------------------------------------------------------------------
def masked_scatter(input, mask, source):
    """torch.masked_scatter: input (broadcast with mask) with the positions where mask is True
    taking source's elements in order."""
    if mask.dtype is not dtypes.bool_:
        raise RuntimeError("masked_scatter_ only supports boolean masks, but got mask with dtype "
                           f"{_torch_name(mask.dtype)}")
    if source.dtype is not input.dtype:
        raise RuntimeError("masked_scatter: expected self and source to have same dtypes but got"
                           f"{_torch_name(input.dtype)} and {_torch_name(source.dtype)}")
    shape = broadcast_shapes(tuple(mask.shape), tuple(input.shape))
    mask = mask.to(input.device)._data
    positions = _flat_nonzero(mask.expand(shape) if mask.shape != shape else mask)
    if positions.size > source.numel():
        raise RuntimeError("Number of elements of source < number of ones in mask")
    numel = shape_numel(shape)
    indexer = _Indexer((), None, _Advanced((numel,), ((0, 1),), [positions]))
    values = source.to(input.device).reshape(-1)[:positions.size]
    return IndexPut.apply(_broadcast(input, shape).reshape(numel), values, indexer,
                          False).reshape(shape)


# ---- select_scatter / slice_scatter / diagonal_scatter ----------------------------------------
class ViewScatter(KernelFunction):
    """a with the strided view `view(a)` (a select, a slice, a diagonal) overwritten by src.
    Backward: a's gradient with that region zeroed, and the region's gradient for src."""

    @staticmethod
    def forward(ctx, a, src, view):
        ctx.view, ctx.src_shape = view, src._data.shape
        out = a._data.copy()
        view(out).assign(src._data)
        return wrap(out)

    @staticmethod
    def backward(ctx, g):
        grad_a = grad_src = None
        if ctx.needs_input_grad[0]:
            zeros = wrap(scalar_array(0, g.dtype, g.device).expand(ctx.src_shape))
            grad_a = ViewScatter.apply(g, zeros, ctx.view)
        if ctx.needs_input_grad[1]:
            grad_src = Diagonal.apply(g, ctx.view)
        return grad_a, grad_src, None


def _view_scatter(input, src, view):
    """ViewScatter after torch's shape check of src against the view."""
    region = view(input._data).shape
    if tuple(src.shape) != region:
        raise RuntimeError("expected src to have a size equal to the slice of self. src size = "
                           f"{list(src.shape)}, slice size = {list(region)}")
    return ViewScatter.apply(input, cast(src.to(input.device), input.dtype), view)


def select_scatter(input, src, dim, index):
    """torch.select_scatter: input with input.select(dim, index) replaced by src."""
    dim = normalize_dim(dim, input.ndim)
    size = input.shape[dim]
    if not -size <= index < size:
        raise IndexError(f"select(): index {index} out of range for tensor of size "
                         f"{list(input.shape)} at dimension {dim}")
    key = (slice(None),) * dim + (operator.index(index),)
    return _view_scatter(input, src, lambda data: data[key])


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    """torch.slice_scatter: input with input[..., start:end:step, ...] (along dim) set to src."""
    dim = normalize_dim(dim, input.ndim)
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    key = (slice(None),) * dim + (slice(start, end, step),)
    return _view_scatter(input, src, lambda data: data[key])


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """torch.diagonal_scatter: input with input.diagonal(offset, dim1, dim2) replaced by src."""
    dim1, dim2 = normalize_dim(dim1, input.ndim), normalize_dim(dim2, input.ndim)
    if dim1 == dim2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return _view_scatter(input, src,
                         lambda data: _offset_diagonal_view(data, offset, dim1, dim2))


# ---- fill_diagonal_ ---------------------------------------------------------------------------
def fill_diagonal_(input, fill_value, wrap=False):
    """torch.Tensor.fill_diagonal_: input[i, i, ..., i] = fill_value in place; a tall matrix
    with wrap=True restarts its diagonal every columns + 1 rows."""
    if input.ndim < 2:
        raise RuntimeError("dimensions must larger than 1")
    if input.ndim > 2 and len(set(input.shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    from ..tensor import arange
    rows, columns = input.shape[0], input.shape[1]
    if input.ndim == 2 and wrap and rows > columns + 1:
        step = arange(rows, device=input.device) % (columns + 1)    # column, or `columns` (gap)
        keep = step < columns
        key = (arange(rows, device=input.device)[keep], step[keep])
    else:
        key = (arange(min(input.shape), device=input.device),) * input.ndim
    setitem(input, key, fill_value)
    return input


# ---- index construction -----------------------------------------------------------------------
def tril_indices(row, col, offset=0, *, dtype=dtypes.int64, device=None):
    """The (2, count) row and column indices of the lower triangle of a row x col matrix, in
    row-major order."""
    return _triangle_indices(row, col, offset, dtype, device, lower=True)


def triu_indices(row, col, offset=0, *, dtype=dtypes.int64, device=None):
    """2 x N tensor (int64 by default) of the (row, col) indices of the upper triangle of a
    row x col matrix, from diagonal offset (torch.triu_indices)."""
    return _triangle_indices(row, col, offset, dtype, device, lower=False)


def _triangle_indices(row, col, offset, dtype, device, lower):
    rows = arange(row, dtype=dtypes.int64, device=device).unsqueeze(1)
    columns = arange(col, dtype=dtypes.int64, device=device).unsqueeze(0)
    inside = (columns - rows <= offset) if lower else (columns - rows >= offset)
    return nonzero(inside).t().to(dtype)


def unravel_index(indices, shape):
    """The coordinates in `shape` of flat (row-major) indices, one tensor per dim: torch's
    floor division by the row-major strides, then the remainder by the sizes (negative
    indices wrap the same way)."""
    if not isinstance(indices, Tensor):
        indices = _make_tensor(indices)
    if indices.dtype.is_floating_point:
        raise TypeError("expected 'indices' to be integer dtype, but got "
                        f"minitorch.{indices.dtype.name}")
    shape = (operator.index(shape),) if isinstance(shape, numbers.Integral) else tuple(shape)
    if any(size < 0 for size in shape):
        raise ValueError(f"'shape' cannot have negative values, but got {shape}")
    if not shape:
        return ()
    strides = contiguous_strides(shape)
    as_long = indices.to(dtypes.int64).unsqueeze(-1)
    coordinates = (as_long // _make_tensor(list(strides), device=indices.device)) % \
        _make_tensor(list(shape), device=indices.device)
    return coordinates.unbind(-1)


def index_reduce(input, dim, index, source, reduce, *, include_self=True):
    """source's slices along dim reduced into input's slices index[i] ("prod", "mean", "amax",
    "amin"): scatter_reduce with the index spread over the slices."""
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError("index_reduce(): Expected reduce to be one of prod, mean, amax or "
                           f"amin but got {reduce}.")
    d = normalize_dim(dim, input.ndim)
    if source.ndim:
        spread = [index.numel() if k == d else 1 for k in range(source.ndim)]
        index = index.reshape(spread).expand(source.shape)
    else:
        index = index.reshape(())
    return scatter_reduce(input, d, index, source, reduce, include_self=include_self)
