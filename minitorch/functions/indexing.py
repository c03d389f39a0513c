"""t[key] and t[key] = value: basic (view) and advanced (integer / boolean tensor) indexing,
and index_put / put, which write the same way.

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
from ..ndarray import NDArray, broadcast_shapes, contiguous_strides, shape_numel, shape_str
from ..opcodes import BinaryOp as B, ReduceOp
from ..tensor import Tensor, tensor as _make_tensor, wrap
from .elementwise import cast, scalar_array
from .movement import rebase_view_write, record_region_write, view_of
from .reduce import sum_to

__all__ = ['index_put', 'index_put_', 'put']

# the kinds of item a key is made of
_INT, _SLICE, _NONE, _ELLIPSIS, _BOOL, _INDEX, _MASK = range(7)


# ---- small helpers on int64 NDArrays (all arithmetic in our kernels) ---------------------------
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
    if index.size == 0 or index.device.type == "meta":
        return index        # meta: no values to check (torch's meta kernels check nothing)
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
    return dtype.torch_name


_BAD_KEY = ("only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are "
            "valid indices (got {})")


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
    __slots__ = ("basic", "view_op", "adv", "_last_view")

    def __init__(self, basic, view_op, adv):
        self.basic, self.view_op, self.adv = basic, view_op, adv
        self._last_view = None

    def _basic_view(self, data):
        """data[basic], remembered for the next call on the same data: setitem asks for the
        shape, then writes; slicing an NDArray twice was a third of `x[1:6] = v`."""
        last = self._last_view
        if last is not None and last[0] is data:
            return last[1]
        view = data[self.basic]
        self._last_view = (data, view)
        return view

    def result_shape(self, data):
        """The shape of data[key]."""
        if self.adv is not None:
            return self.adv.result_shape
        return self._basic_view(data).shape if self.view_op is not None else data.shape

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
        view = self._basic_view(out) if self.view_op is not None else out
        self._last_view = None      # a graph node may keep the indexer: don't keep the data
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
def _key_items(key):
    """The key as a tuple of items; a list holding sequences, slices, None, ... or tensors is
    read as a tuple, as torch still does (with its deprecation warning)."""
    if isinstance(key, tuple):
        return key
    if isinstance(key, list) and len(key) < 32 and any(
            k is None or k is Ellipsis or
            isinstance(k, (list, tuple, range, slice, Tensor, np.ndarray)) for k in key):
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
    if isinstance(item, range):     # any Python sequence indexes as the list of its items
        item = list(item)
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

    region = None   # the view's (shape, strides, offset) in a compact array of a's shape

    @staticmethod
    def forward(ctx, a, key, view=None):
        """`view`: a._data[key] when the caller has it already (getitem's one-int path)."""
        data = a._data
        ctx.input_shape, ctx.key = data.shape, key
        if view is None:
            view = data[key]
        if data.is_compact():       # the region backward writes g into, known now
            ctx.region = (view.shape, view.strides, view.offset - data.offset)
        return view_of(a, view)

    @classmethod
    def backward(cls, ctx, g):
        if not _grad_mode.enabled:      # nothing recorded: g written into zeros directly
            grad = NDArray.full(ctx.input_shape, 0, g.dtype, g.device)
            region = ctx.region if ctx.region is not None else _basic_region(grad, ctx.key)
            if region is not None and region[0] == g._data.shape:
                _write_region(grad, region, g._data)
                return wrap(grad), None
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
    kind = type(key)
    if kind is tuple and 0 < len(key) <= t._data.ndim and all(
            type(k) is int or type(k) is Tensor and k.dtype is dtypes.int64 and not k.shape
            for k in key):
        key = tuple(k if type(k) is int else k.item() for k in key)   # 0-d indices are ints
        data = t._data
        region = _leading_ints_region(data, key)
        if region is not None:      # x[0, 3]: the view without parsing the key
            view = NDArray(data.buffer, *region, data.dtype, data.device, data.backend)
            if not (t.requires_grad and _grad_mode.enabled):
                return view_of(t, view)
            return Select.apply(t, key, view)
    elif kind is int or kind is slice and key.step is None:
        data = t._data
        region = _first_dim_region(data, key) if data.shape else None
        if region is not None:      # one int or slice: the view without parsing the key
            view = NDArray(data.buffer, *region, data.dtype, data.device, data.backend)
            if not (t.requires_grad and _grad_mode.enabled):
                return view_of(t, view)
            if kind is int:
                return Select.apply(t, key, view)
            if region[0][0] != data.shape[0]:       # torch records a whole-dim slice as
                return Slice.apply(t, key, view)    # an alias: the parsed path's answer
    if (kind is tuple or kind is slice) and not (t.requires_grad and _grad_mode.enabled):
        data = t._data
        region = _basic_region(data, key)
        if region is not None:      # x[:, 1] with nothing to record: the view, unparsed
            return view_of(t, NDArray(data.buffer, *region, data.dtype, data.device,
                                      data.backend))
    return _parse(t, key).read(t)


def _first_dim_region(data, key):
    """(shape, strides, offset) of data[key] for a key that is one int or one step-less slice
    (the common setitem), computed without an NDArray; None for an int out of range (the
    checked path raises torch's error)."""
    shape, strides = data.shape, data.strides
    size = shape[0]
    if type(key) is int:
        if not -size <= key < size:
            return None
        return shape[1:], strides[1:], data.offset + (key + size if key < 0 else key) * strides[0]
    start, stop, _ = key.indices(size)
    count = stop - start if stop > start else 0
    return (count,) + shape[1:], strides, data.offset + (start * strides[0] if count else 0)


def _basic_region(data, key):
    """(shape, strides, offset) of data[key] for an int, a slice of int bounds and positive
    step, or a tuple of them no longer than the rank (after a leading Ellipsis or not); None
    for any other key or an int out of range (the checked path answers those, with torch's
    errors). getitem's hottest keys keep their special cases, _first_dim_region and
    _leading_ints_region: through this general loop x[1:] costs 1.8 µs instead of 1.0."""
    items = key if type(key) is tuple else (key,)
    if items and items[0] is Ellipsis:      # x[..., :1], x[..., 0]: whole leading dims
        items = (_WHOLE,) * (len(data.shape) - len(items) + 1) + items[1:]
    if len(items) > len(data.shape):
        return None
    shape, strides, offset = [], [], data.offset
    for item, size, stride in zip(items, data.shape, data.strides):
        kind = type(item)
        if kind is int:
            if not -size <= item < size:
                return None
            offset += (item + size if item < 0 else item) * stride
        elif kind is slice and type(item.start) in _BOUNDS and type(item.stop) in _BOUNDS and \
                type(item.step) in _BOUNDS:
            start, stop, step = item.indices(size)
            if step <= 0:
                return None
            count = max(0, (stop - start + step - 1) // step)
            offset += start * stride if count else 0
            shape.append(count)
            strides.append(stride * step)
        else:
            return None
    n = len(items)
    return tuple(shape) + data.shape[n:], tuple(strides) + data.strides[n:], offset


_WHOLE = slice(None)
_BOUNDS = frozenset((int, type(None)))      # the slice bounds _basic_region reads itself


def _leading_ints_region(data, key):
    """(shape, strides, offset) of data[i, j, ...] for a tuple of ints no longer than the rank;
    None when one is out of range (the checked path raises torch's error)."""
    offset = data.offset
    for index, size, stride in zip(key, data.shape, data.strides):
        if not -size <= index < size:
            return None
        offset += (index + size if index < 0 else index) * stride
    n = len(key)
    return data.shape[n:], data.strides[n:], offset


def _writes_itself_back(t, region, value):
    """t[key] = t[key]'s own view (t[key] being `region`), as `t[key] += x` ends: the memory holds the values already
    and, while recording, t's history does too (the in-place op on the view rebased t's graph),
    so only the version moves, as torch's copy onto itself moves it. False for anything else,
    such as a detached alias, whose write would cut t's history: the checked path records it."""
    if type(value) is not Tensor:
        return False
    data, v = t._data, value._data
    if v.buffer is not data.buffer or not data.shape or v.dtype is not data.dtype:
        return False
    if _grad_mode.enabled and (t.requires_grad or value.requires_grad):
        # both in one history: value a view of t's storage owner, t itself an op's result
        owner = t if t._base is None else t._base
        if not (value.requires_grad and t.requires_grad and t.grad_fn is not None
                and value._base is owner):
            return False
    if (v.shape, v.strides, v.offset) != region:
        return False
    t._bump_version()
    return True


def _setitem_fast(t, region, value):
    """t[ints and slices] (their `region` of t) = a plain float / int, or a Tensor of t's dtype, device and of the
    indexed shape, with nothing to record: one strided_set from the value's memory (a scalar
    from the cached constant). False, having changed nothing, when the checked path
    must run (it raises torch's errors and records the node)."""
    data = t._data
    grad = _grad_mode.enabled
    if grad and t.requires_grad:
        return False
    shape, strides, offset = region
    kind = type(value)
    if kind is float or kind is int:
        # torch: x[0] = 256 overflows uint8 (a float16 x takes 1e6 as inf)
        dtypes.check_scalar_fits(value, data.dtype, narrow_floats=False)
        source = scalar_array(value, data.dtype, data.device).buffer
    elif kind is Tensor:
        v = value._data
        if (grad and value.requires_grad) or v.shape != shape or v.dtype is not data.dtype or \
                v.device is not data.device or v.buffer is data.buffer or not v.is_compact():
            return False    # casts, broadcasts, overlapping or strided sources: checked path
        source = v.flat()
    else:
        return False
    data.backend.strided_set(source, data.buffer, shape, strides, offset)
    t._version[0] += 1
    return True


def _write_region(data, region, values):
    """data's `region` (shape, strides, offset) := `values`, an NDArray of the region's shape,
    dtype and device that shares no memory with data: one strided_set from its memory."""
    if not values.is_compact():
        values = values.copy()
    data.backend.strided_set(values.flat(), data.buffer, *region)


def _setitem_recorded(t, region, value):
    """t[ints and slices] (their `region` of t) = a Tensor of t's dtype, device and the indexed
    shape, not sharing t's memory, while recording, t compact and owning its memory (not a
    view, nor a leaf requiring grad): one strided_set and the CopySlices node over the region,
    without parsing the key (the checked path's node and gradients). False, having changed
    nothing, otherwise."""
    if type(value) is not Tensor or not _grad_mode.enabled:
        return False
    data, v = t._data, value._data
    if not (t.requires_grad or value.requires_grad) or t._base is not None or \
            (t.requires_grad and t.grad_fn is None) or not data.is_compact():
        return False
    shape, strides, offset = region
    if v.shape != shape or v.dtype is not data.dtype or v.device is not data.device or \
            v.buffer is data.buffer:
        return False
    _write_region(data, region, v)
    record_region_write(t, (shape, strides, offset - data.offset), value)
    t._bump_version()
    t._view_version = t._version[0]
    return True


def setitem(t, key, value):
    """t[key] = value (Tensor.__setitem__). Inside a recorded graph t becomes the output of a
    CopySlices / IndexPut node, so gradients see the overwrite as torch's do."""
    if _grad_mode.enabled and getattr(t, "_no_grad_view", False):
        raise _no_grad_view_write(key)
    region = _basic_region(t._data, key)
    if region is not None and (_setitem_fast(t, region, value) or
                               _writes_itself_back(t, region, value) or
                               _setitem_recorded(t, region, value)):
        return
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


def _no_grad_view_write(key):
    """torch's error for writing, with grad mode on, into a view made under no_grad: an int or
    slice key writes through a further Select / Slice view ("a view of a view"), any other key
    into the view itself."""
    items = key if isinstance(key, tuple) else (key,)
    last = items[-1] if items else None
    kind = "Select" if isinstance(last, (int, np.integer)) and not isinstance(
        last, (bool, np.bool_)) else "Slice" if isinstance(last, slice) else None
    rest = ("and is being modified inplace with grad mode enabled. Given that this use case is "
            "ambiguous and error-prone, it is forbidden. You can clarify your code by moving "
            "both the view and the inplace either both inside the no_grad block (if you don't "
            "want the inplace to be tracked) or both outside (if you want the inplace to be "
            "tracked).")
    if kind is None:
        return RuntimeError(f"A view was created in no_grad mode {rest}")
    return RuntimeError(f"Output 0 of {kind} is a view of a view which was created in no_grad "
                        f"mode {rest}")


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
    if isinstance(value, (numbers.Number, np.number, np.bool_)) and (
            t.dtype.is_complex or not isinstance(value, complex)):
        dtypes.check_scalar_fits(value, t.dtype, narrow_floats=False)    # as above
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


def index_put_(input, indices, values, accumulate=False):
    """torch.index_put_: input[indices] = values (or +=) in place."""
    return input.index_put_(indices, values, accumulate)


def put(input, index, source, accumulate=False):
    """A copy of input with source written (or added) at flat, row-major positions index."""
    flat = input.reshape(-1)
    return index_put(flat, (index.reshape(-1),), source.reshape(-1), accumulate).reshape(
        input.shape)

