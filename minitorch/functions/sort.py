"""Sorting and order statistics: sort, argsort, msort, topk, kthvalue, median, unique.

Every one runs the `sort_last` kernel (a stable sort of rows, NaN the largest value) on the input
with the sorted dim moved last, then picks positions of the result. The indices carry no
gradient; when autograd records, the values are gathered from the input at the indices, so the
gradient flows back through gather's backward (a scatter into zeros, itself differentiable).
"""
import numbers

import numpy as np

from .. import dtypes
from ..autograd import KernelFunction, is_grad_enabled, no_grad
from ..ndarray import NDArray, normalize_dim
from ..opcodes import BinaryOp as B, ReduceOp
from ..tensor import arange, wrap
from . import elementwise as _E
from .index import GatherBackward
from .movement import _inverse
from .complex_refusals import refuse_complex
from .reduce import _check_int_dim, _check_nonempty, _ExtremumAll, _return_type


__all__ = ['argsort', 'kthvalue', 'median', 'msort', 'nanmedian', 'sort', 'topk',
           'unique', 'unique_consecutive']


def _result_type(name):
    """torch.return_types.<name>: a (values, indices) namedtuple like max(dim)'s."""
    cls = _return_type(name)
    cls.__module__ = __name__       # so pickle finds it in this module
    return cls


_SortResult = _result_type("sort")
_TopkResult = _result_type("topk")
_KthvalueResult = _result_type("kthvalue")
_MedianResult = _result_type("median")
_NanmedianResult = _result_type("nanmedian")


# ---- the sort along a dim ---------------------------------------------------------------------
def _sorted_along(nd, dim, descending, k=None):
    """(values, indices) NDArrays of nd stably sorted along dim (0 for a 0-d array), or only the
    first k of that order (the backend's top_last selects them without sorting the rest): the
    kernel works on the rows of a compact copy with dim moved last; the results are moved back
    (views)."""
    if nd.ndim == 0:
        values, indices = _sorted_along(nd.reshape((1,)), 0, descending, k)
        return values.reshape(()), indices.reshape(())
    order = [d for d in range(nd.ndim) if d != dim] + [dim]
    rows = nd.permute(order).compact()
    n = rows.shape[-1]
    shape = rows.shape if k is None else rows.shape[:-1] + (k,)
    values, indices = rows._new(shape), rows._new(shape, dtypes.int64)
    if values.size:
        if k is None:
            nd.backend.sort_last(rows.flat(), values.buffer, indices.buffer, n, descending)
        else:
            nd.backend.top_last(rows.flat(), values.buffer, indices.buffer, n, k, descending)
    back = _inverse(order)
    return values.permute(back), indices.permute(back)


def _selection_pays(k, n):
    """Whether top_last beats a whole sort: each element costs a comparison unless it enters
    the top k (then up to k moves), so for small k only (for a row in the wrong order, every
    element enters: k = 64 then costs about what the merge sort does)."""
    return 0 < k <= 64 and 4 * k <= n


def _along(nd, dim, start, stop):
    """nd[..., start:stop, ...] with the slice on dim (a view)."""
    if nd.ndim == 0:
        return nd
    return nd[(slice(None),) * dim + (slice(start, stop),)]


class _Picked(KernelFunction):
    """input gathered at (kept-dim) indices along dim, the dim then squeezed unless keepdim;
    the gradient goes back to those positions through gather's backward. Subclasses only
    name the node after the op that picked the indices."""
    op_name = None

    @classmethod
    def name(cls):
        return cls.op_name

    @staticmethod
    def forward(ctx, a, indices, dim, keepdim):
        nd = a._data
        ctx.input_shape, ctx.dim, ctx.keepdim = nd.shape, dim, keepdim or not nd.ndim
        ctx.save_for_backward(indices)
        values = nd.gather(dim, indices._data)
        return wrap(values if ctx.keepdim else values.squeeze((dim,)))

    @staticmethod
    def backward(ctx, g):
        indices, = ctx.saved_tensors
        if not ctx.keepdim:
            g = g.unsqueeze(ctx.dim)
        return GatherBackward.apply(g, indices, ctx.dim, ctx.input_shape), None, None, None


def _node(op_name):
    return type(f"{op_name[:-9]}Picked", (_Picked,), {"op_name": op_name})


SortPicked = _node("SortBackward0")
TopkPicked = _node("TopkBackward0")
KthvaluePicked = _node("KthvalueBackward0")
MedianPicked = _node("MedianBackward1")
NanmedianPicked = _node("NanmedianBackward1")


def _picked(result, input, values, indices, dim, node, keepdim=True):
    """result(values, indices) from NDArrays that keep dim. When autograd records, the values
    are gathered from input at the indices by `node`, so that the gradient flows back;
    otherwise they are the kernel's values as they are."""
    if is_grad_enabled() and input.requires_grad:
        return result(node.apply(input, wrap(indices), dim, keepdim),
                      wrap(_squeezed(indices, dim, keepdim)))
    return result(wrap(_squeezed(values, dim, keepdim)), wrap(_squeezed(indices, dim, keepdim)))


def _squeezed(nd, dim, keepdim):
    return nd if keepdim or not nd.ndim else nd.squeeze((dim,))


# ---- argument checks --------------------------------------------------------------------------
def _dim(name, input, dim):
    _check_int_dim(name, dim)
    return normalize_dim(dim, input.ndim)


def _size(input, dim):
    return input.shape[dim] if input.ndim else 1


def _check_k(name, k):
    if not isinstance(k, (numbers.Integral, np.integer)) or isinstance(k, bool):
        raise TypeError(f"{name}(): argument 'k' (position 2) must be int, not "
                        f"{type(k).__name__}")
    return int(k)


def _check_not_bool(name, input):
    if input.dtype is dtypes.bool_:
        raise NotImplementedError(f'"{name}_{input.device.type}" not implemented for \'Bool\'')


# ---- sort, argsort, msort, topk ---------------------------------------------------------------
def sort(input, dim=-1, descending=False, *, stable=False):
    """(values, indices) of input sorted along dim. Always stable (so `stable` changes nothing);
    NaN sorts as the largest value."""
    dim = _dim("sort", input, dim)
    refuse_complex("sort", input)
    values, indices = _sorted_along(input._data, dim, bool(descending))
    return _picked(_SortResult, input, values, indices, dim, SortPicked)


def argsort(input, dim=-1, descending=False, *, stable=False):
    """The indices that sort input along dim (stable)."""
    dim = _dim("argsort", input, dim)
    refuse_complex("sort", input)
    return wrap(_sorted_along(input._data, dim, bool(descending))[1])


def msort(input):
    """input sorted along its first dim."""
    return sort(input, 0).values


def topk(input, k, dim=-1, largest=True, sorted=True):
    """(values, indices) of the k largest (smallest unless `largest`) elements along dim, in
    order (also when not `sorted`); NaN counts as the largest."""
    k = _check_k("topk", k)
    dim = _dim("topk", input, dim)
    if input.dtype is dtypes.bool_:
        raise RuntimeError(f"topk does not support bool dtypes on {input.device.type.upper()}")
    refuse_complex("topk", input)
    if not 0 <= k <= _size(input, dim):
        raise RuntimeError("selected index k out of range")
    if _selection_pays(k, _size(input, dim)):
        values, indices = _sorted_along(input._data, dim, bool(largest), k)
    else:
        values, indices = (_along(nd, dim, 0, k)
                           for nd in _sorted_along(input._data, dim, bool(largest)))
    return _picked(_TopkResult, input, values, indices, dim, TopkPicked)


# ---- kthvalue, median -------------------------------------------------------------------------
def kthvalue(input, k, dim=-1, keepdim=False):
    """(values, indices) of the k-th smallest element along dim (NaN the largest)."""
    k = _check_k("kthvalue", k)
    dim = _dim("kthvalue", input, dim)
    _check_not_bool("kthvalue", input)
    refuse_complex("kthvalue", input)
    _check_nonempty("kthvalue", input.shape, (dim,) if input.ndim else (), full=False)
    if not 1 <= k <= _size(input, dim):
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {dim}")
    values, indices = (_along(nd, dim, k - 1, k) for nd in _sorted_along(input._data, dim, False))
    return _picked(_KthvalueResult, input, values, indices, dim, KthvaluePicked, keepdim)


def _median_indices(nd, dim):
    """Where torch's lower median lies along dim (kept as size 1): the ((n - 1) // 2)-th of the
    ascending stable order, or a row's first NaN (NaN sorts last: at n - its NaN count)."""
    order = _sorted_along(nd, dim, False)[1]
    n = _size(nd, dim)
    middle = _along(order, dim, (n - 1) // 2, (n - 1) // 2 + 1)
    if not nd.dtype.is_floating_point:
        return middle
    with no_grad():
        nan_count = wrap(nd).isnan().sum(dim, keepdim=True)
        first_nan = wrap(order).gather(dim, (n - nan_count).clamp(max=n - 1))
        return _E.where(nan_count > 0, first_nan, wrap(middle))._data


def _nanmedian_indices(nd, dim):
    """Where the lower median of the non-NaN values lies along dim (kept as size 1): the
    ((count - 1) // 2)-th of the ascending order, NaN sorting last; a row of NaNs gives its
    first NaN."""
    if not nd.dtype.is_floating_point:
        return _median_indices(nd, dim)
    order = _sorted_along(nd, dim, False)[1]
    with no_grad():
        count = (~wrap(nd).isnan()).sum(dim, keepdim=True)
        return wrap(order).gather(dim, ((count - 1) // 2).clamp(min=0))._data


class MedianAll(_ExtremumAll):
    """median() over every element; ties share the gradient evenly, as in torch."""
    indices_of = staticmethod(_median_indices)
    node_name = "MedianBackward0"

    @classmethod
    def forward(cls, ctx, a):
        flat = a._data.reshape((a._data.size,))
        out = wrap(flat.gather(0, cls.indices_of(flat, 0)).reshape(()))
        ctx.save_for_backward(a, out)
        return out

    @classmethod
    def name(cls):
        return cls.node_name


class NanmedianAll(MedianAll):
    """nanmedian() over every element."""
    indices_of = staticmethod(_nanmedian_indices)
    node_name = "NanmedianBackward0"


def _empty_median(input):
    """torch's median of nothing: NaN, or for integers int64's lowest value converted."""
    if input.dtype.is_floating_point:
        return NDArray.full((), float("nan"), input.dtype, input.device)
    return NDArray.full((), -2 ** 63, dtypes.int64, input.device).astype(input.dtype)


def _median(name, all_node, picked_node, result, input, dim, keepdim):
    """median / nanmedian: a 0-d value over everything, or (values, indices) along dim."""
    _check_not_bool("median", input)        # torch names nanmedian's checks "median" too
    if dim is None:
        if input.numel() == 0:
            return wrap(_empty_median(input))
        refuse_complex("median", input)
        return all_node.apply(input)
    dim = _dim(name, input, dim)
    _check_nonempty("median", input.shape, (dim,) if input.ndim else (), full=False)
    refuse_complex("median_dim", input)
    indices = all_node.indices_of(input._data, dim)
    values = input._data.gather(dim, indices)
    return _picked(result, input, values, indices, dim, picked_node, keepdim)


def median(input, dim=None, keepdim=False):
    """median(input) -> 0-d lower median (NaN if any); median(input, dim, keepdim) ->
    (values, indices)."""
    return _median("median", MedianAll, MedianPicked, _MedianResult, input, dim, keepdim)


def nanmedian(input, dim=None, keepdim=False):
    """median ignoring NaNs (NaN only where a row has nothing else)."""
    return _median("nanmedian", NanmedianAll, NanmedianPicked, _NanmedianResult, input, dim,
                   keepdim)


# ---- unique, unique_consecutive --------------------------------------------------------------
def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The sorted distinct elements (or, with dim, distinct slices along dim) of input, every
    NaN distinct as in torch, with the index of each input element among them and each one's
    count when asked. Not differentiable; the output is sorted whatever `sorted` says (torch's
    CPU does the same)."""
    refuse_complex("unique", input)
    if dim is not None:
        rows, dim = _slices_as_rows(input, dim)
        order = _lexicographic_order(rows)
        return _runs(input, rows.gather(0, _rows_index(order, rows)), order, dim,
                     return_inverse, return_counts)
    flat = input._data.reshape((input.numel(),))
    values, order = _sorted_along(flat, 0, False)
    return _runs(input, values, order, None, return_inverse, return_counts)


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """Like unique, but only runs of equal neighbours collapse, and nothing is sorted."""
    refuse_complex("unique", input)
    if dim is not None:
        rows, dim = _slices_as_rows(input, dim)
        order = _positions(rows.shape[0], input.device)
        return _runs(input, rows, order, dim, return_inverse, return_counts)
    flat = input._data.reshape((input.numel(),))
    order = _positions(flat.size, input.device)
    return _runs(input, flat, order, None, return_inverse, return_counts)


def _slices_as_rows(input, dim):
    """input's slices along dim as the rows of a compact (n, k) array."""
    nd = input._data
    if not nd.ndim:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    dim = normalize_dim(dim, nd.ndim)
    if any(size == 0 for d, size in enumerate(nd.shape) if d != dim):
        raise RuntimeError("There are 0 sized dimensions, and they aren't selected, so unique "
                           "cannot be applied")
    moved = nd.permute(_dim_first(nd.ndim, dim))
    return moved.compact().reshape((nd.shape[dim], nd.size // max(nd.shape[dim], 1))), dim


def _dim_first(ndim, dim):
    """The axis order that moves dim to the front, the others keeping their order."""
    return [dim] + [d for d in range(ndim) if d != dim]


def _positions(n, device):
    """0, 1, ..., n-1 as an int64 NDArray."""
    return arange(n, dtype=dtypes.int64, device=device)._data


def _rows_index(order, rows):
    """order (n,) broadcast over the row length, as gather's index."""
    return order.reshape((rows.shape[0], 1)).expand(rows.shape)


def _lexicographic_order(rows):
    """The stable order that sorts the rows lexicographically: one stable sort per column,
    from the last column to the first (a radix sort whose digits are columns)."""
    order = _positions(rows.shape[0], rows.device)
    for column in reversed(range(rows.shape[1])):
        keys = rows[:, column].gather(0, order)
        order = order.gather(0, _sorted_along(keys, 0, False)[1])
    return order


def _runs(input, values, order, dim, return_inverse, return_counts):
    """unique's outputs from values (elements, or rows when dim is set) in which equal ones are
    neighbours; order[i] = the input position of values[i]."""
    n = values.shape[0]
    starts = NDArray.full((n,), True, dtypes.bool_, input.device)
    if n > 1:       # a group starts where the value (row) differs from the one before
        differs = values[1:].binary(B.NE, values[:-1])
        starts[1:] = differs if dim is None else differs.reduce(ReduceOp.MAX, 1, False)
    group = starts.astype(dtypes.int64).scan(ReduceOp.SUM, 0).binary(
        B.SUB, _E.scalar_array(1, dtypes.int64, input.device))      # each element's group
    count = int(group[n - 1:].numpy()[0]) + 1 if n else 0
    result = [wrap(_first_of_each_group(input, values, group, count, dim))]
    if return_inverse:
        inverse = NDArray.empty((n,), dtypes.int64, input.device)
        inverse.scatter_into(0, order, group, False)
        result.append(wrap(inverse if dim is not None else inverse.reshape(input.shape)))
    if return_counts:
        counts = NDArray.full((count,), 0, dtypes.int64, input.device)
        counts.scatter_into(0, group, NDArray.full((n,), 1, dtypes.int64, input.device), True)
        result.append(wrap(counts))
    return result[0] if len(result) == 1 else tuple(result)


def _first_of_each_group(input, values, group, count, dim):
    """The distinct values (rows, put back in input's layout along dim)."""
    if dim is None:
        output = NDArray.empty((count,), input.dtype, input.device)
        output.scatter_into(0, group, values, False)
        return output
    output = NDArray.empty((count, values.shape[1]), input.dtype, input.device)
    output.scatter_into(0, _rows_index(group, values), values, False)
    nd = input._data
    moved_shape = (count,) + tuple(s for d, s in enumerate(nd.shape) if d != dim)
    return output.reshape(moved_shape).permute(_inverse(_dim_first(nd.ndim, dim))).compact()
