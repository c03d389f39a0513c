"""Indexing and index ops: basic (view) and advanced (integer / boolean tensor) getitem and
setitem, gather, scatter, scatter_add, scatter_reduce, index_select, index_add, index_fill,
index_copy, masked_fill, masked_scatter, masked_select, take, take_along_dim, nonzero, argwhere,
index_put, select/slice/diagonal_scatter and fill_diagonal_.

A key is parsed once into an `_Indexer`: its basic part (ints, slices, None) is a view; its
advanced part (`_Advanced`) picks elements of that view by int64 index arrays. Reading turns the
advanced part into flat element offsets with our int64 kernels (index · stride summed over the
indexed dims, plus a stride ramp for each other dim) and reads them with one `take`; writing
uses `put`, accumulating duplicates in the adjoint. Every Function's backward is written with
these Functions again, so gradients of gradients work.
"""
import numbers
import operator
import warnings

import numpy as np

from .. import dtypes
from ..autograd import KernelFunction, _grad_mode
from ..ndarray import (NDArray, broadcast_shapes, contiguous_strides, normalize_dim, shape_numel,
                       shape_str)
from ..opcodes import BinaryOp as B, ReduceOp
from ..tensor import Tensor, arange, tensor as _make_tensor, wrap
from . import reduce as _reduce
from .elementwise import cast, scalar_array, where
from .reduce import sum_to
from .movement import rebase_view_write, view_of
from .linalg import Diagonal, _offset_diagonal_view


__all__ = [
    'argwhere', 'diagonal_scatter', 'gather', 'index_add', 'index_copy', 'index_fill',
    'index_put', 'index_select', 'masked_fill', 'masked_scatter', 'masked_select', 'nonzero',
    'scatter', 'scatter_add', 'scatter_reduce', 'select_scatter', 'slice_scatter', 'take',
    'take_along_dim', 'tril_indices', 'triu_indices', 'unravel_index', 'index_reduce', 'put',
    'index_put_',
]

_TORCH_NAMES = {"float32": "Float", "float64": "Double", "int64": "Long", "bool": "Bool"}
_C_NAMES = {"float32": "float", "float64": "double", "int64": "long int", "bool": "bool"}


# ---- small helpers on int64 NDArrays (all arithmetic in our kernels) --------------------------
def _const(value, device):
    return scalar_array(value, dtypes.int64, device)


def _item(nd):
    """A one-element NDArray's value on the host (copying only that element off the device)."""
    if len(nd.buffer) != 1:
        nd = nd.copy()
    return nd.numpy().reshape(()).item()


def _ramp(n, step, device):
    """[0, step, 2·step, …] of length n: the scan kernel's cumulative sum of [0, step, …]."""
    steps = NDArray.full((n,), step, dtypes.int64, device)
    if n:
        steps[:1].assign(0)
    return steps.scan(ReduceOp.SUM, 0)


def _first_outside(index, low, high):
    """The first entry (C order) of `index` outside [low, high) (the caller knows one is)."""
    flat = index.reshape((index.size,))
    device = index.device
    bad = flat.binary(B.LT, _const(low, device)).binary(
        B.LOGICAL_OR, flat.binary(B.GE, _const(high, device)))
    return _item(flat[_item(bad.astype(dtypes.int64).reduce(ReduceOp.ARGMAX))])


def _wrapped(index, size, error):
    """`index` checked against a dim of `size` (torch accepts -size <= i < size) with negative
    entries wrapped; `error(value)` is raised for the first bad entry before any kernel reads
    the indices."""
    if index.size == 0:
        return index
    # Two reductions on the common path; the offending entry is located only if there is one.
    low, high = _item(index.reduce(ReduceOp.MIN)), _item(index.reduce(ReduceOp.MAX))
    if low < -size or high >= size:
        raise error(_first_outside(index, -size, size))
    if low < 0:
        return index.binary(B.REMAINDER, _const(size, index.device))
    return index


def _flat_nonzero(x):
    """1-d int64 flat (C-order) positions of the nonzero entries of NDArray x. The running
    count of the mask gives each hit its output slot (1..n; misses all go to slot 0) and one
    `put` writes the positions there."""
    size, device = x.size, x.device
    mask = x if x.dtype is dtypes.bool_ else x.binary(B.NE, scalar_array(0, x.dtype, device))
    mask = mask.reshape((size,))
    if size == 0:
        return NDArray.full((0,), 0, dtypes.int64, device)
    counts = mask.astype(dtypes.int64).scan(ReduceOp.SUM, 0)
    n = _item(counts[size - 1])
    slots = mask.where(counts, _const(0, device))
    out = NDArray.empty((n + 1,), dtypes.int64, device)
    out.backend.put(_ramp(size, 1, device).flat(), slots.flat(), out.buffer, False)
    return out[1:]


def _unravel(flat, shape):
    """(n, len(shape)) multi-indices of C-order flat positions (floor-division and remainder
    kernels against the contiguous strides and the sizes, broadcast over the rows)."""
    device, n = flat.device, flat.size
    if not shape or n == 0:
        return NDArray.full((n, len(shape)), 0, dtypes.int64, device)
    flat = flat.reshape((n, 1))
    if len(shape) == 1:
        return flat
    strides = NDArray.from_numpy(np.array(contiguous_strides(shape), np.int64), dtypes.int64,
                                 device)
    sizes = NDArray.from_numpy(np.array(shape, np.int64), dtypes.int64, device)
    return flat.binary(B.FLOOR_DIVIDE, strides).binary(B.REMAINDER, sizes)


def _zeros(shape, like):
    return wrap(NDArray.full(shape, 0, like.dtype, like.device))


def _zero(like):
    return wrap(scalar_array(0, like.dtype, like.device))


def _torch_name(dtype):
    return _TORCH_NAMES[dtype.name]


# ---- advanced indexing: where each result element comes from ----------------------------------
class _Advanced:
    """Validated, non-negative int64 index arrays for some dims of a view of `view_shape`. Each
    array indexes a group of adjacent dims (one dim for an index tensor; a k-d mask's dims,
    by flat C-order position within them). numpy/torch layout: the broadcast index shape
    replaces the indexed dims in place when they are adjacent, and goes first otherwise."""
    __slots__ = ("view_shape", "groups", "indices", "result_shape", "start", "rest")

    def __init__(self, view_shape, groups, indices):
        self.view_shape, self.groups = view_shape, groups
        shape = indices[0].shape
        for index in indices[1:]:
            try:
                shape = broadcast_shapes(shape, index.shape)
            except RuntimeError:
                raise IndexError("shape mismatch: indexing tensors could not be broadcast "
                                 "together with shapes " +
                                 ", ".join(shape_str(i.shape) for i in indices)) from None
        self.indices = tuple(i if i.shape == shape else i.expand(shape) for i in indices)
        dims = [d + i for d, width in groups for i in range(width)]
        adjacent = all(b == a + 1 for a, b in zip(dims, dims[1:]))
        kept = [d for d in range(len(view_shape)) if d not in dims]
        before = [d for d in kept if d < dims[0]] if adjacent else []
        after = kept[len(before):]
        self.start = len(before)
        self.result_shape = (tuple(view_shape[d] for d in before) + shape +
                             tuple(view_shape[d] for d in after))
        self.rest = [(d, i) for i, d in enumerate(before)] + \
            [(d, self.start + len(shape) + i) for i, d in enumerate(after)]

    def offsets(self, strides, offset, device):
        """int64 NDArray (result_shape) of element offsets into a buffer laid out by `strides`
        and `offset`: Σ index·stride over the indexed dims + a ramp per other dim."""
        total = None
        for index, group in zip(self.indices, self.groups):
            term = self._group_offsets(index, group, strides, device)
            total = term if total is None else total.binary(B.ADD, term)
        ndim, count = len(self.result_shape), len(self.indices[0].shape)
        total = total.reshape((1,) * self.start + total.shape +
                              (1,) * (ndim - self.start - count))
        for d, position in self.rest:
            ramp = _ramp(self.view_shape[d], strides[d], device)
            total = total.binary(B.ADD, ramp.reshape((1,) * position + ramp.shape +
                                                     (1,) * (ndim - position - 1)))
        if offset:
            total = total.binary(B.ADD, _const(offset, device))
        return total.compact()

    def _group_offsets(self, index, group, strides, device):
        """Offsets of a group's flat positions: one multiply when the group's dims are
        contiguous among themselves, else unravelled and summed dim by dim."""
        dim, width = group
        sizes, steps = self.view_shape[dim:dim + width], strides[dim:dim + width]
        if all(steps[i] == steps[i + 1] * sizes[i + 1] for i in range(width - 1)):
            step = steps[-1]
            return index if step == 1 else index.binary(B.MUL, _const(step, device))
        shape = index.shape
        columns = _unravel(index.reshape((index.size,)), sizes)
        terms = columns.binary(B.MUL, NDArray.from_numpy(np.array(steps, np.int64),
                                                         dtypes.int64, device))
        return terms.reduce(ReduceOp.SUM, (1,)).reshape(shape)

    def _single(self, view):
        """(merged view, dim, flat index) when one index array on a compact view can use the
        index_select / index_add kernels directly (its group merged into one dim), else None."""
        if len(self.groups) != 1 or not view.is_compact():
            return None
        (dim, width), index = self.groups[0], self.indices[0]
        shape = view.shape
        merged = view.reshape(shape[:dim] + (shape_numel(shape[dim:dim + width]),) +
                              shape[dim + width:])
        return merged, dim, index.reshape((index.size,))

    def take(self, view):
        """view[indices] as a new compact array."""
        out = view._new(self.result_shape)
        if out.size == 0:
            return out
        single = self._single(view)
        if single is not None:
            merged, dim, index = single
            return merged.index_select(dim, index).reshape(self.result_shape)
        offsets = self.offsets(view.strides, view.offset, view.device)
        view.backend.take(view.buffer, offsets.flat(), out.buffer)
        return out

    def put(self, view, values, accumulate):
        """view[indices] = values (+= when accumulate), in place; values broadcast to
        result_shape and already of view's dtype."""
        if shape_numel(self.result_shape) == 0:
            return
        single = self._single(view) if accumulate else None
        if single is not None:
            merged, dim, index = single
            block = merged.shape[:dim] + (index.size,) + merged.shape[dim + 1:]
            merged.index_add_into(dim, index, values.expand(self.result_shape).reshape(block))
            return
        source = values.reshape((1,)) if values.size == 1 else values.expand(self.result_shape)
        if not source.is_compact() or source.buffer is view.buffer:
            source = source.copy()
        offsets = self.offsets(view.strides, view.offset, view.device)
        view.backend.put(source.flat(), offsets.flat(), view.buffer, accumulate)


class _Indexer:
    """A parsed key: `basic` (ints, slices, None) is applied as a view by `view_op` (None when
    it changes nothing), then `adv` (or None) picks elements of that view."""
    __slots__ = ("basic", "view_op", "adv")

    def __init__(self, basic, view_op, adv):
        self.basic, self.view_op, self.adv = basic, view_op, adv

    def result_shape(self, data):
        """The shape of data[key]."""
        if self.adv is not None:
            return self.adv.result_shape
        return data[self.basic].shape if self.view_op is not None else data.shape

    def read(self, t):
        """t[key] as Tensor ops (differentiable)."""
        if self.view_op is not None:
            t = self.view_op.apply(t, self.basic)
        elif self.adv is None:
            return Alias.apply(t, ())
        return Index.apply(t, self.adv) if self.adv is not None else t

    def write(self, out, values, accumulate):
        """out[key] = values (+= when accumulate) on NDArrays, in place."""
        if accumulate and out.dtype is dtypes.uint8:
            # The byte kernels add as bools (logical or): accumulate in int64, and let the
            # assignment back wrap modulo 256 as torch's uint8 sums do.
            wide = out.astype(dtypes.int64)
            self.write(wide, values.astype(dtypes.int64), True)
            out.assign(wide)
            return
        view = out[self.basic] if self.view_op is not None else out
        values = values.astype(out.dtype)
        if self.adv is not None:
            self.adv.put(view, values, accumulate)
        elif accumulate:
            if view.size:
                source = values.expand(view.shape).copy()
                out.backend.strided_add(source.flat(), view.buffer, view.shape, view.strides,
                                        view.offset)
        else:
            view.assign(values)


# ---- parsing keys -----------------------------------------------------------------------------
_INT, _SLICE, _NONE, _ELLIPSIS, _BOOL, _INDEX, _MASK = range(7)
_BAD_KEY = ("only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are "
            "valid indices (got {})")


def _key_items(key):
    """The key as a tuple of items; a list holding sequences, slices, None, ... or tensors is
    read as a tuple, as torch still does (with its deprecation warning)."""
    if isinstance(key, tuple):
        return key
    if isinstance(key, list) and len(key) < 32 and any(
            isinstance(k, (list, tuple, slice, Tensor, np.ndarray)) or k is None or k is Ellipsis
            for k in key):
        warnings.warn("Using a non-tuple sequence for multidimensional indexing is deprecated; "
                      "use x[tuple(seq)] instead of x[seq]", UserWarning, stacklevel=3)
        return tuple(key)
    return (key,)


def _token(item, device):
    """(kind, payload) for one key item; sequences become index tensors on `device`."""
    if item is None:
        return _NONE, None
    if item is Ellipsis:
        return _ELLIPSIS, None
    if isinstance(item, slice):
        if item.step is not None:
            step = operator.index(item.step)
            if step == 0:
                raise ValueError("slice step cannot be zero")
            if step < 0:
                raise ValueError("step must be greater than zero")
        return _SLICE, item
    if isinstance(item, (bool, np.bool_)):
        return _BOOL, bool(item)
    if isinstance(item, numbers.Integral):
        return _INT, operator.index(item)
    if isinstance(item, (list, tuple, np.ndarray)):
        empty = item.size == 0 if isinstance(item, np.ndarray) else len(item) == 0
        item = _make_tensor(item, dtype=dtypes.int64 if empty else None, device=device)
    if not isinstance(item, Tensor):
        raise IndexError(_BAD_KEY.format(type(item).__name__))
    dtype = item.dtype
    if dtype is dtypes.uint8:       # torch's deprecated byte masks
        warnings.warn("indexing with dtype torch.uint8 is now deprecated, please use a dtype "
                      "torch.bool instead.", UserWarning)
        item, dtype = cast(item, dtypes.bool_), dtypes.bool_
    if dtype is dtypes.int64:
        return (_INT, item.item()) if item.ndim == 0 else (_INDEX, item.to(device))
    if dtype is dtypes.bool_:
        return (_BOOL, item.item()) if item.ndim == 0 else (_MASK, item.to(device))
    raise IndexError("tensors used as indices must be long, int, byte or bool tensors")


def _parse(t, key, too_many=None):
    """The `_Indexer` for t[key]; raises torch's errors before anything is read or written."""
    data = t._data
    tokens = [_token(item, data.device) for item in _key_items(key)]
    ndim = data.ndim
    consumed = sum(1 if kind in (_INT, _SLICE, _INDEX) else (p.ndim if kind == _MASK else 0)
                   for kind, p in tokens)
    if sum(1 for kind, _ in tokens if kind == _ELLIPSIS) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if consumed > ndim:
        if ndim == 0 and tokens[0][0] == _INT:
            raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                             "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number")
        raise IndexError(too_many or f"too many indices for tensor of dimension {ndim}")
    basic, pending, view_op = [], [], None
    dim = vdim = 0
    for kind, payload in tokens:
        if kind == _ELLIPSIS:
            basic += [slice(None)] * (ndim - consumed)
            dim += ndim - consumed
            vdim += ndim - consumed
        elif kind == _INT:
            basic.append(payload)
            view_op, dim = Select, dim + 1
        elif kind == _SLICE:
            basic.append(payload)
            if payload.indices(data.shape[dim]) != (0, data.shape[dim], 1):
                view_op = Slice
            dim, vdim = dim + 1, vdim + 1
        elif kind in (_NONE, _BOOL):
            basic.append(None)
            view_op = Unsqueeze
            if kind == _BOOL:
                pending.append((vdim, kind, payload))
            vdim += 1
        else:
            width = 1 if kind == _INDEX else payload.ndim
            basic += [slice(None)] * width
            pending.append((vdim, kind, payload))
            dim, vdim = dim + width, vdim + width
    basic = tuple(basic)
    if not pending:
        return _Indexer(basic, view_op, None)
    view_shape = data[basic].shape if view_op is not None else data.shape
    return _Indexer(basic, view_op, _resolve(view_shape, pending, data.device))


def _resolve(view_shape, pending, device):
    """Index tensors and masks → the validated `_Advanced` part (a mask indexes its dims by the
    flat positions of its nonzero entries)."""
    groups, arrays = [], []
    for vdim, kind, payload in pending:
        if kind == _INDEX:
            size, position = view_shape[vdim], len(arrays)
            arrays.append(_wrapped(payload._data, size, lambda v: IndexError(
                f"index {v} is out of bounds for dimension {position} with size {size}")))
            groups.append((vdim, 1))
        elif kind == _MASK:
            mask = payload._data
            for i, size in enumerate(mask.shape):
                if size != view_shape[vdim + i]:
                    raise IndexError(f"The shape of the mask {shape_str(mask.shape)} at index {i} "
                                     "does not match the shape of the indexed tensor "
                                     f"{shape_str(view_shape)} at index {vdim + i}")
            arrays.append(_flat_nonzero(mask))
            groups.append((vdim, mask.ndim))
        else:
            arrays.append(NDArray.full((1 if payload else 0,), 0, dtypes.int64, device))
            groups.append((vdim, 1))
    return _Advanced(view_shape, tuple(groups), arrays)


# ---- getitem / setitem Functions --------------------------------------------------------------
class _View(KernelFunction):
    """t[ints, slices, None]: a view sharing t's storage and version counter. Subclasses only
    name the node like torch's (by the last view op applied)."""

    @staticmethod
    def forward(ctx, a, key):
        ctx.input_shape, ctx.key = a._data.shape, key
        return view_of(a, a._data[key])

    @classmethod
    def backward(cls, ctx, g):
        indexer = _Indexer(ctx.key, cls, None)
        return IndexPut.apply(_zeros(ctx.input_shape, g), g, indexer, False, True), None


class Select(_View):
    """An int in the key."""


class Slice(_View):
    """A slice that keeps less than the whole dim."""


class Unsqueeze(_View):
    """None (or a bool scalar) in the key."""


class Alias(_View):
    """A key that changes nothing (t[...], t[:])."""

    @staticmethod
    def backward(ctx, g):
        return g, None


class Index(KernelFunction):
    """view[index tensors]: a copy read with `take`; backward puts into zeros (accumulating)."""

    @staticmethod
    def forward(ctx, a, adv):
        ctx.adv = adv
        return wrap(adv.take(a._data))

    @staticmethod
    def backward(ctx, g):
        adv = ctx.adv
        indexer = _Indexer((), None, adv)
        return IndexPut.apply(_zeros(adv.view_shape, g), g, indexer, True, True), None


class MaskedSelect(Index):
    """masked_select(input, mask) = input[mask] (after broadcasting both)."""


class Take(Index):
    """take(input, index) = input.flatten()[index]."""


class IndexPut(KernelFunction):
    """base with `values` written (or added, when accumulate) at an indexer's positions: a copy,
    or base itself when `in_place` (setitem, and the zero buffers of backward rules)."""

    @staticmethod
    def forward(ctx, base, values, indexer, accumulate, in_place=False):
        ctx.indexer, ctx.accumulate, ctx.values_shape = indexer, accumulate, values._data.shape
        out = base._data if in_place else base._data.copy()
        indexer.write(out, values._data, accumulate)
        return wrap(out, version=base._version) if in_place else wrap(out)

    @staticmethod
    def backward(ctx, g):
        indexer = ctx.indexer
        grad_base = grad_values = None
        if ctx.needs_input_grad[0]:
            # Overwritten positions take no gradient back to the old values.
            grad_base = g if ctx.accumulate else IndexPut.apply(g, _zero(g), indexer, False)
        if ctx.needs_input_grad[1]:
            grad_values = sum_to(indexer.read(g), ctx.values_shape)
        return grad_base, grad_values


class CopySlices(IndexPut):
    """`t[basic key] = v` while recording: t's new grad_fn (torch's node name)."""

    @classmethod
    def name(cls):
        return "CopySlices"


class IndexPutInPlace(IndexPut):
    """`t[advanced key] = v` while recording (torch shows IndexPutBackward0)."""

    @classmethod
    def name(cls):
        return "IndexPutBackward0"


def getitem(t, key):
    """t[key] (Tensor.__getitem__): basic keys give views, advanced keys copies."""
    return _parse(t, key).read(t)


def setitem(t, key, value):
    """t[key] = value (Tensor.__setitem__). Inside a recorded graph t becomes the output of a
    CopySlices / IndexPut node, so gradients see the overwrite as torch's do."""
    indexer = _parse(t, key)
    shape = indexer.result_shape(t._data)
    if t.requires_grad and t.grad_fn is None and _grad_mode.enabled:
        raise RuntimeError(("a view of a leaf Variable" if indexer.view_op is not None else
                            "a leaf Variable") + " that requires grad is being used in an "
                           "in-place operation.")
    if indexer.adv is not None and isinstance(value, Tensor):
        _check_put_dtype(t, key, value)
    value = _fit_value(_value_tensor(t, value), shape, indexer.adv is not None)
    if _grad_mode.enabled and (t.requires_grad or value.requires_grad):
        node = CopySlices if indexer.adv is None else IndexPutInPlace
        result = node.apply(t, value, indexer, False, True)
        t.requires_grad, t.grad_fn, t._output_nr = True, result.grad_fn, 0
        base = t._base
        if base is not None and base._version is t._version:
            rebase_view_write(base, t, result)      # t is a view: its base was written too
        t._bump_version()
        t._view_version = t._version[0]
    else:
        indexer.write(t._data, value._data, False)
        t._bump_version()


def _put_dtype_error(destination, source):
    return RuntimeError("Index put requires the source and destination dtypes match, got "
                        f"{_torch_name(destination)} for the destination and "
                        f"{_torch_name(source)} for the source.")


def _check_put_dtype(t, key, value):
    """torch's setitem with index tensors runs index_put_, which refuses a value of another
    dtype, unless it becomes masked_fill_: one bool mask (no other index tensor, no bool in a
    tuple) and a one-element CPU value. A bare True / False key is no index tensor there."""
    if value.dtype is t.dtype or isinstance(key, (bool, np.bool_)):
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kinds = [_token(item, t._data.device)[0] for item in _key_items(key)]
    if kinds.count(_MASK) == 1 and _INDEX not in kinds and _BOOL not in kinds and \
            value.numel() == 1 and value.device.type == "cpu":
        return
    raise _put_dtype_error(t.dtype, value.dtype)


def _value_tensor(t, value):
    """A setitem value as a Tensor of t's dtype on t's device (torch casts, never promotes)."""
    if isinstance(value, Tensor):
        return cast(value.to(t.device), t.dtype)
    if isinstance(value, (numbers.Number, np.number, np.bool_)) and not isinstance(
            value, complex):
        dtypes.check_scalar_fits(value, t.dtype)       # torch: x[0] = 256 overflows uint8
        return wrap(scalar_array(value, t.dtype, t.device))
    kind = type(value)
    name = kind.__name__ if kind.__module__ == "builtins" else \
        f"{kind.__module__}.{kind.__qualname__}"
    raise TypeError(f"can't assign a {name} to a {t.type()}")


def _fit_value(value, shape, advanced):
    """value with its leading size-1 dims dropped (torch's rule), checked to broadcast to the
    indexed shape: torch's shape-mismatch error for advanced keys, expand's for basic ones."""
    stripped = tuple(value.shape)
    while stripped and stripped[0] == 1:
        stripped = stripped[1:]
    fits = len(stripped) <= len(shape) and all(
        v in (1, s) for v, s in zip(reversed(stripped), reversed(shape)))
    if not fits:
        if advanced:
            raise RuntimeError(f"shape mismatch: value tensor of shape {shape_str(value.shape)} "
                               f"cannot be broadcast to indexing result of shape "
                               f"{shape_str(shape)}")
        value._data.reshape(stripped).expand(shape)   # raises expand's error
    return value.reshape(stripped) if stripped != tuple(value.shape) else value


def index_put(input, indices, values, accumulate=False):
    """input with input[indices] = values (or += with accumulate: duplicates all count)."""
    if not isinstance(indices, (tuple, list)):
        raise TypeError("index_put(): argument 'indices' (position 1) must be tuple of Tensors, "
                        f"not {type(indices).__name__}")
    for i, index in enumerate(indices):
        if not isinstance(index, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got "
                            f"{type(index).__name__}")
    if not isinstance(values, Tensor):
        raise TypeError("index_put(): argument 'values' (position 2) must be Tensor, not "
                        f"{type(values).__name__}")
    too_many = f"too many indices for tensor of dimension {input.ndim} (got {len(indices)})"
    indexer = _parse(input, tuple(indices), too_many)
    # torch turns one bool mask with a one-element CPU value into masked_fill_ (any dtype)
    masked_fill = not accumulate and len(indices) == 1 and indices[0].dtype is dtypes.bool_ \
        and values.numel() == 1 and values.device.type == "cpu"
    if values.dtype is not input.dtype:
        if not masked_fill:
            raise _put_dtype_error(input.dtype, values.dtype)
        values = cast(values, input.dtype)
    values = _fit_value(values.to(input.device), indexer.result_shape(input._data), True)
    return IndexPut.apply(input, values, indexer, bool(accumulate))


# ---- gather / scatter -------------------------------------------------------------------------
def _check_index_dtype(index, message):
    if not isinstance(index, Tensor) or index.dtype is not dtypes.int64:
        raise RuntimeError(message)


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
        try:
            return wrap(a._data.gather(dim, index._data))
        except IndexError:
            raise _out_of_bounds(index._data, dim, a._data.shape[dim]) from None

    @staticmethod
    def backward(ctx, g):
        index, = ctx.saved_tensors
        return GatherBackward.apply(g, index, ctx.dim, ctx.input_shape), None


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
    _check_index_dtype(index, "gather(): Expected dtype int32/int64 for index")
    if max(input.ndim, 1) != max(index.ndim, 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    dim = normalize_dim(dim, input.ndim)
    a, i = _at_least_1d(input, index.to(input.device))
    for d, (n_index, n_self) in enumerate(zip(i.shape, a.shape)):
        if d != dim and n_index > n_self:
            raise RuntimeError(f"Size does not match at dimension {d} expected index "
                               f"{shape_str(i.shape)} to be no larger than self "
                               f"{shape_str(a.shape)} apart from dimension {dim}")
    result = Gather.apply(a, i, dim)
    return result.reshape(index.shape) if result.shape != index.shape else result


def _scatter_args(input, dim, index, src):
    """Checks shared by scatter and scatter_add; returns (input, index, src, dim) at least 1-d."""
    _check_index_dtype(index, "scatter(): Expected dtype int32/int64 for index")
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
        _check_index_dtype(index, "scatter(): Expected dtype int32/int64 for index")
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
        return IndexAdd.apply(_zeros(ctx.input_shape, g), index, g, ctx.dim), None


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
    _check_index_dtype(index, "index_select(): Expected dtype int32 or int64 for index")
    if index.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    dim = normalize_dim(dim, input.ndim)
    if input.ndim == 0 and index.numel() != 1:
        raise RuntimeError(f"index_select(): Index to scalar can have only 1 value, got "
                           f"{index.numel()} value(s)")
    result = IndexSelect.apply(input, index.to(input.device), dim)
    return result.reshape(()) if input.ndim == 0 else result


def index_add(input, dim, index, source, *, alpha=1):
    """torch.index_add: input with alpha·source's slices added at index along dim."""
    _check_index_dtype(index, "index_add_(): Expected dtype int32/int64 for index but got: "
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
    return wrap(positions)


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
    _check_index_dtype(indices, "gather(): Expected dtype int32/int64 for index")
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


def index_put_(input, indices, values, accumulate=False):
    """torch.index_put_: input[indices] = values (or +=) in place."""
    return input.index_put_(indices, values, accumulate)


def put(input, index, source, accumulate=False):
    """A copy of input with source written (or added) at flat, row-major positions index."""
    flat = input.reshape(-1)
    return index_put(flat, (index.reshape(-1),), source.reshape(-1), accumulate).reshape(
        input.shape)


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
