"""Sorting and order statistics: sort, argsort, msort, topk, kthvalue, median, unique.

Every one runs the `sort_last` kernel (a stable sort of rows, NaN the largest value) on the input
with the sorted dim moved last, then picks positions of the result. The indices carry no
gradient; when autograd records, the values are gathered from the input at the indices, so the
gradient flows back through gather's backward (a scatter into zeros, itself differentiable).
"""
import numbers

import numpy as np

from .. import dtypes
from ..autograd import Function, is_grad_enabled, no_grad
from ..ndarray import NDArray, normalize_dim
from ..opcodes import BinaryOp as B, ReduceOp
from ..tensor import wrap
from . import elementwise as _E
from .index import GatherBackward
from .movement import _inverse
from .reduce import _check_int_dim, _check_nonempty, _ExtremumAll, _return_type


__all__ = ['argsort', 'kthvalue', 'median', 'msort', 'sort', 'topk', 'unique']


def _result_type(name):
    """torch.return_types.<name>: a (values, indices) namedtuple like max(dim)'s."""
    cls = _return_type(name)
    cls.__module__ = __name__       # so pickle finds it in this module
    return cls


_SortResult = _result_type("sort")
_TopkResult = _result_type("topk")
_KthvalueResult = _result_type("kthvalue")
_MedianResult = _result_type("median")


# ---- the sort along a dim ---------------------------------------------------------------------
def _sorted_along(nd, dim, descending):
    """(values, indices) NDArrays of nd stably sorted along dim (0 for a 0-d array): the kernel
    sorts the rows of a compact copy with dim moved last; the results are moved back (views)."""
    if nd.ndim == 0:
        values, indices = _sorted_along(nd.reshape((1,)), 0, descending)
        return values.reshape(()), indices.reshape(())
    order = [d for d in range(nd.ndim) if d != dim] + [dim]
    rows = nd.permute(order).compact()
    values, indices = rows._new(rows.shape), rows._new(rows.shape, dtypes.int64)
    if rows.size:
        nd.backend.sort_last(rows.flat(), values.buffer, indices.buffer, rows.shape[-1],
                             descending)
    back = _inverse(order)
    return values.permute(back), indices.permute(back)


def _along(nd, dim, start, stop):
    """nd[..., start:stop, ...] with the slice on dim (a view)."""
    if nd.ndim == 0:
        return nd
    return nd[(slice(None),) * dim + (slice(start, stop),)]


class _Picked(Function):
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
    values, indices = _sorted_along(input._data, dim, bool(descending))
    return _picked(_SortResult, input, values, indices, dim, SortPicked)


def argsort(input, dim=-1, descending=False, *, stable=False):
    """The indices that sort input along dim (stable)."""
    dim = _dim("argsort", input, dim)
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
    if not 0 <= k <= _size(input, dim):
        raise RuntimeError("selected index k out of range")
    values, indices = (_along(nd, dim, 0, k)
                       for nd in _sorted_along(input._data, dim, bool(largest)))
    return _picked(_TopkResult, input, values, indices, dim, TopkPicked)


# ---- kthvalue, median -------------------------------------------------------------------------
def kthvalue(input, k, dim=-1, keepdim=False):
    """(values, indices) of the k-th smallest element along dim (NaN the largest)."""
    k = _check_k("kthvalue", k)
    dim = _dim("kthvalue", input, dim)
    _check_not_bool("kthvalue", input)
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


class MedianAll(_ExtremumAll):
    """median() over every element; ties share the gradient evenly, as in torch."""

    @classmethod
    def forward(cls, ctx, a):
        flat = a._data.reshape((a._data.size,))
        out = wrap(flat.gather(0, _median_indices(flat, 0)).reshape(()))
        ctx.save_for_backward(a, out)
        return out

    @classmethod
    def name(cls):
        return "MedianBackward0"


def _empty_median(input):
    """torch's median of nothing: NaN, or for integers int64's lowest value converted."""
    if input.dtype.is_floating_point:
        return NDArray.full((), float("nan"), input.dtype, input.device)
    return NDArray.full((), -2 ** 63, dtypes.int64, input.device).astype(input.dtype)


def median(input, dim=None, keepdim=False):
    """median(input) -> 0-d lower median (NaN if any); median(input, dim, keepdim) ->
    (values, indices)."""
    _check_not_bool("median", input)
    if dim is None:
        if input.numel() == 0:
            return wrap(_empty_median(input))
        return MedianAll.apply(input)
    dim = _dim("median", input, dim)
    _check_nonempty("median", input.shape, (dim,) if input.ndim else (), full=False)
    indices = _median_indices(input._data, dim)
    values = input._data.gather(dim, indices)
    return _picked(_MedianResult, input, values, indices, dim, MedianPicked, keepdim)


# ---- unique -----------------------------------------------------------------------------------
def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The sorted distinct elements of input (every NaN distinct, as in torch), with the index
    of each input element among them and each one's count when asked. Not differentiable;
    the output is sorted whatever `sorted` says (torch's CPU does the same)."""
    if dim is not None:
        raise NotImplementedError("minitorch.unique supports dim=None only")
    flat = input._data.reshape((input.numel(),))
    values, order = _sorted_along(flat, 0, False)
    n = flat.size
    starts = NDArray.full((n,), True, dtypes.bool_, input.device)
    if n > 1:       # a group starts where the value differs from the one before
        starts[1:] = values[1:].binary(B.NE, values[:-1])
    group = starts.astype(dtypes.int64).scan(ReduceOp.SUM, 0).binary(
        B.SUB, _E.scalar_array(1, dtypes.int64, input.device))      # each element's group
    count = int(group[n - 1:].numpy()[0]) + 1 if n else 0
    output = NDArray.empty((count,), input.dtype, input.device)
    output.scatter_into(0, group, values, False)
    result = [wrap(output)]
    if return_inverse:
        inverse = NDArray.empty((n,), dtypes.int64, input.device)
        inverse.scatter_into(0, order, group, False)
        result.append(wrap(inverse.reshape(input.shape)))
    if return_counts:
        counts = NDArray.full((count,), 0, dtypes.int64, input.device)
        counts.scatter_into(0, group, NDArray.full((n,), 1, dtypes.int64, input.device), True)
        result.append(wrap(counts))
    return result[0] if len(result) == 1 else tuple(result)
