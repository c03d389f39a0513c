"""Reductions: sum, mean, prod, max/min, arg-reductions, var/std, logsumexp, softmax family,
norms, cumulative ops, all/any. Every reduction is one `reduce_last` kernel call (through
NDArray.reduce) and every cumulative op one `scan_last`; composites chain a few of them.

Forward works on NDArrays; backward is written with Tensor ops so it can be differentiated
again. Softmax and log_softmax have fused backward Functions of their own (they run in every
training step), each with its own backward so double backward still works.
"""
import builtins
import collections
import math
import numbers
import warnings

import numpy as np

from .. import dtypes
from ..autograd import KernelFunction, is_grad_enabled, no_grad
from ..autograd.engine import recorded as _recorded
from ..ndarray import (NDArray, _remember, contiguous_strides, normalize_dim, normalize_dims,
                       shape_numel)
from ..opcodes import BinaryOp as B, ReduceOp, UnaryOp as U
from ..tensor import Tensor, wrap
from . import elementwise as _E   # circular at import time: only used inside functions
from .autocast_policy import batched_result, batching_point
from .complex_refusals import refuse_complex


__all__ = [
    'all', 'amax', 'amin', 'any', 'argmax', 'argmin', 'count_nonzero', 'cumprod', 'cumsum',
    'log_softmax', 'logsumexp', 'max', 'mean', 'min', 'prod', 'renorm',
    'softmax', 'std', 'std_mean', 'sum', 'var', 'var_mean',
]


# ---- helpers ----------------------------------------------------------------------------------
def _scalar(value, nd):
    """A cached 0-d NDArray of `nd`'s dtype and device (an operand for one binary kernel)."""
    return _E.scalar_array(value, nd.dtype, nd.device)


def _zero_like(t):
    return wrap(_E.scalar_array(0, t.dtype, t.device))


def _all_if_empty(dim):
    """torch reads dim=None and an empty dim list alike: reduce over every dim."""
    if dim is None or type(dim) is int or isinstance(dim, (numbers.Integral, np.integer)):
        return dim      # (the exact int first: the abstract check costs ~0.25 us a call)
    dim = tuple(dim)
    return dim if dim else None


def _count(shape, dims):
    """How many elements each output element reduces over."""
    return math.prod(shape[d] for d in dims)


def _restore_dims(g, dims, ndim):
    """Re-insert reduced axes as size 1 so the gradient broadcasts back over them."""
    shape = list(g.shape)
    for d in dims:
        shape.insert(d, 1)
    return g.reshape(shape) if ndim else g


def _kept(t, dims, keepdim, ndim):
    """A reduction result (or its gradient) with the reduced axes present as size 1."""
    return t if keepdim else _restore_dims(t, dims, ndim)


def _check_nonempty(name, shape, dims, full):
    """torch's errors for max-like reductions (no identity element) over nothing."""
    if full and shape_numel(shape) == 0:
        raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() "
                           "== 0. Specify the reduction dim with the 'dim' argument.")
    for d in dims:
        if shape[d] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")


def _check_int_dim(name, dim):
    if not isinstance(dim, (numbers.Integral, np.integer)):
        raise TypeError(f"{name}(): argument 'dim' must be int, not {type(dim).__name__}")


def _integral_to_long(input, dtype):
    """torch's accumulation dtype for sum/prod/cumsum/cumprod: `dtype`, else int64 for
    bool/integer input, else the input's own."""
    if dtype is not None:
        return _E.cast(input, dtype)
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        return _E.cast(input, dtypes.int64)
    return input


def _torch_dtype_name(dtype):
    return dtype.torch_name


# ---- sum / mean -------------------------------------------------------------------------------
class Sum(KernelFunction):
    @staticmethod
    def forward(ctx, a, dims, keepdim):
        ctx.input_shape = a._data.shape
        ctx.keepdim = keepdim
        if dims is None:        # everything: backward expands the 0-d gradient, no dims needed
            ctx.dims = ()
            return wrap(a._data.reduce(ReduceOp.SUM, None, keepdim))
        ctx.dims = normalize_dims(dims, a._data.ndim)
        ctx.node_name = "SumBackward1"          # torch's sum over dims
        return wrap(a._data.reduce(ReduceOp.SUM, ctx.dims, keepdim))

    @staticmethod
    def backward(ctx, g):
        # A full reduction's 0-d gradient expands directly; otherwise re-insert the axes.
        if not ctx.keepdim and g.ndim:
            g = _restore_dims(g, ctx.dims, len(ctx.input_shape))
        return g.expand(ctx.input_shape), None, None


def sum(input, dim=None, keepdim=False, dtype=None):
    """Sum of all elements, or over dim (int or tuple) with keepdim; bool and integer inputs
    sum to int64 (torch.sum)."""
    if type(input) is not Tensor:       # inside vmap: mt.sum(x)
        result = batched_result(sum, (input, dim, keepdim, dtype), {})
        if result is not NotImplemented:
            return result
    if getattr(input, "is_sparse", False):
        return input.sum(dim, keepdim, dtype)
    if dtype is dtypes.bool_:               # a sum in bool saturates: any() of the truths
        return wrap(_truth_reduce(ReduceOp.MAX, False, input._data, _all_if_empty(dim),
                                  keepdim))
    input = _integral_to_long(input, dtype)     # torch sums bool/int into int64
    dims = _all_if_empty(dim)
    if not _recorded(input):        # nothing records: Sum's forward alone, without its node
        nd = input._data
        return wrap(nd.reduce(ReduceOp.SUM, None if dims is None else normalize_dims(dims, nd.ndim),
                              keepdim))
    return Sum.apply(input, dims, keepdim)


def sum_to(g, shape):
    """Sum a broadcast gradient back to `shape` (leading axes and size-1 axes)."""
    g_shape = g._data.shape
    if g_shape == shape:
        return g
    dims = _SUM_TO_DIMS.get((g_shape, shape))
    if dims is None:
        dims = _remember(_SUM_TO_DIMS, (g_shape, shape), _broadcast_dims(g_shape, shape))
    if dims and not _recorded(g):   # a backward without create_graph: the kernel alone
        total = g._data.reduce(ReduceOp.SUM, dims, True)
        return wrap(total if total.shape == shape else total.reshape(shape))
    result = Sum.apply(g, dims, True) if dims else g
    return result.reshape(shape) if result._data.shape != shape else result


def _broadcast_dims(broadcast, shape):
    """The axes of `broadcast` that broadcasting `shape` to it added or stretched."""
    lead = len(broadcast) - len(shape)
    return tuple(range(lead)) + tuple(lead + i for i, size in enumerate(shape)
                                      if size == 1 and broadcast[lead + i] != 1)


_SUM_TO_DIMS = {}   # (gradient shape, operand shape) -> _broadcast_dims: backward's sum_to


class Mean(KernelFunction):
    @staticmethod
    def forward(ctx, a, dims, keepdim):
        nd = a._data
        ctx.input_shape, ctx.keepdim = nd.shape, keepdim
        ctx.dims = normalize_dims(dims, nd.ndim)
        if dims is not None:
            ctx.node_name = "MeanBackward1"     # torch's mean over dims
        mean, ctx.count = _mean_of(nd, None if dims is None else ctx.dims, keepdim)
        return wrap(mean)

    @staticmethod
    def backward(ctx, g):
        if g._data.shape:           # a full mean's 0-d gradient expands as it is
            g = _kept(g, ctx.dims, ctx.keepdim, len(ctx.input_shape))
        return (g / builtins.max(ctx.count, 1)).expand(ctx.input_shape), None, None


def _mean_of(nd, dims, keepdim):
    """(mean, count): Mean's forward on an NDArray, the sum over normalized `dims` (None:
    all, which sums a compact array with one kernel call) divided by the count of elements
    each output reduces (0/0 = nan when empty)."""
    count = nd.size if dims is None else _count(nd.shape, dims)
    total = nd.reduce(ReduceOp.SUM, dims, keepdim)
    return total.binary(B.DIV, _scalar(count, nd)), count


def mean(input, dim=None, keepdim=False, dtype=None):
    """Mean of all elements, or over dim with keepdim; floating inputs or a floating dtype only
    (torch.mean)."""
    if type(input) is not Tensor:       # inside vmap: mt.mean(x)
        result = batched_result(mean, (input, dim, keepdim, dtype), {})
        if result is not NotImplemented:
            return result
    if dtype is not None:
        if not (dtype.is_floating_point or dtype.is_complex):
            raise RuntimeError("mean(): could not infer output dtype. Optional dtype must be "
                               "either a floating point or complex dtype. Got: "
                               f"{_torch_dtype_name(dtype)}")
        input = _E.cast(input, dtype)
    elif not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise RuntimeError("mean(): could not infer output dtype. Input dtype must be either a "
                           "floating point or complex dtype. Got: "
                           f"{_torch_dtype_name(input.dtype)}")
    dims = _all_if_empty(dim)
    if not _recorded(input):        # nothing records: Mean's forward alone, without its node
        nd = input._data
        return wrap(_mean_of(nd, None if dims is None else normalize_dims(dims, nd.ndim),
                             keepdim)[0])
    return Mean.apply(input, dims, keepdim)


# ---- prod -------------------------------------------------------------------------------------
class Prod(KernelFunction):
    @staticmethod
    def forward(ctx, a, dim, keepdim):
        nd = a._data
        ctx.dim, ctx.keepdim = dim, keepdim
        if nd.dtype.is_complex:
            out = wrap(_complex_prod(nd, dim, keepdim))
        else:
            out = wrap(nd.reduce(ReduceOp.PROD, dim, keepdim))
        ctx.save_for_backward(a, out)
        return out

    @staticmethod
    def backward(ctx, g):
        a, out = ctx.saved_tensors
        if a.is_complex():      # the conjugate of the product of the others (torch's rule)
            a, out = a.conj(), out.conj()
        if a.ndim == 0:                 # torch: a 0-d product passes g (even for inf / nan)
            return g, None, None
        if ctx.dim is None:             # full product: work on the flattened input
            if not is_grad_enabled() and int(count_nonzero(a == 0)) > 1:
                return a.new_zeros(a.shape), None, None     # torch's shortcut (no 0 * inf NaN)
            flat = a.reshape(-1)
            grad = _product_of_others(g.reshape(1), flat, out.reshape(1), 0)
            return grad.reshape(a.shape), None, None
        dims = normalize_dims(ctx.dim, a.ndim)
        g, out = (_kept(t, dims, ctx.keepdim, a.ndim) for t in (g, out))
        return _product_of_others(g, a, out, normalize_dim(ctx.dim, a.ndim)), None, None


def _complex_prod(nd, dim, keepdim):
    """The product of complex numbers along dim (all of them when None) by halving: the first
    half times the second half (the complex mul kernel) until one is left, an odd last one
    multiplied into the first; a product of nothing is 1."""
    x, axis = (nd.reshape((-1,)), 0) if dim is None else (nd, normalize_dim(dim, nd.ndim))
    if x.ndim == 0:
        return x.copy()

    def part(start, stop):
        return x[(slice(None),) * axis + (slice(start, stop),)]

    if x.shape[axis] == 0:
        x = NDArray.full(x.shape[:axis] + (1,) + x.shape[axis + 1:], 1, nd.dtype, nd.device)
    while x.shape[axis] > 1:
        n = x.shape[axis]
        halved = part(0, n // 2).binary(B.MUL, part(n // 2, 2 * (n // 2)))
        if n % 2:
            first = halved[(slice(None),) * axis + (slice(0, 1),)]
            first.assign(first.binary(B.MUL, part(n - 1, n)))
        x = halved
    if dim is None:
        return x.reshape(())
    return x if keepdim else x.squeeze((axis,))


def _kth_zero_masks(zero, dim):
    """Masks of the first (and, when recording a graph, second) zero along `dim`: only those
    positions have a nonzero gradient (first order) or a nonzero derivative of it (second)."""
    if not bool(any(zero)):
        return
    ranks = cumsum(zero, dim)                       # k at the k-th zero of each slice
    for k in ((1, 2) if is_grad_enabled() else (1,)):
        kth = zero & (ranks == k)
        if not bool(any(kth)):
            return
        yield k, ranks, kth


def _product_of_others(g, x, out, dim):
    """g * prod_{j != i} x_j along `dim` (g, out keep the axis). out / x is exact as a function
    wherever x_i != 0; at a zero, the product of the others is taken with that entry set to 1.
    Both pieces are Tensor expressions of x, so the result is differentiable again."""
    zero = x == 0
    masks = list(_kth_zero_masks(zero, dim))
    if not masks:
        return g * (out / x)
    grad = g * (out / _E.where(zero, 1, x))
    for _, _, kth in masks:
        others = prod(_E.where(kth, 1, x), dim, keepdim=True)
        grad = _E.where(kth, g * others, grad)
    return grad


@batching_point
def prod(input, dim=None, keepdim=False, dtype=None):
    """Product of all elements, or over one dim with keepdim; bool and integer inputs multiply
    in int64 (torch.prod)."""
    if dim is not None or keepdim:      # torch's (dim, keepdim) overload needs an int dim
        _check_int_dim("prod", dim)
    input = _integral_to_long(input, dtype)
    return Prod.apply(input, dim, keepdim)


# ---- max / min and friends --------------------------------------------------------------------
def _return_type(name, fields=("values", "indices")):
    """A namedtuple (values, indices unless told) printed like torch.return_types.<name>."""
    cls = collections.namedtuple(name, fields)
    cls.__qualname__ = f"_{name.capitalize()}Result"      # so pickle finds it in this module
    cls.__repr__ = lambda self: (f"minitorch.return_types.{name}(\n" + ",\n".join(
        f"{field}={value!r}" for field, value in zip(fields, self)) + ")")
    return cls


_MaxResult = _return_type("max")
_MinResult = _return_type("min")


class _ExtremumAll(KernelFunction):
    """max() / min() over every element; ties (and NaNs, when the result is NaN) share the
    gradient evenly, as in torch."""
    op = None

    @classmethod
    def forward(cls, ctx, a):
        out = wrap(a._data.reduce(cls.op, None, False))
        ctx.save_for_backward(a, out)
        return out

    @staticmethod
    def backward(ctx, g):
        a, out = ctx.saved_tensors
        hit = _E.cast((a == out) | (a.isnan() & out.isnan()), g.dtype)
        return hit * (g / sum(hit))


class MaxAll(_ExtremumAll):
    op = ReduceOp.MAX

    @classmethod
    def name(cls):
        return "MaxBackward1"


class MinAll(_ExtremumAll):
    op = ReduceOp.MIN

    @classmethod
    def name(cls):
        return "MinBackward1"


class Max(KernelFunction):
    """max(dim) -> (values, indices); the gradient goes to the returned index only."""
    op, arg_op, result = ReduceOp.MAX, ReduceOp.ARGMAX, _MaxResult
    materialize_grads = False

    @classmethod
    def forward(cls, ctx, a, dim, keepdim):
        nd = a._data
        ctx.input_shape, ctx.keepdim = nd.shape, keepdim
        ctx.dims = normalize_dims(dim, nd.ndim)
        # The arg kernels have no bool variant: indices of a bool input come from int64.
        index_src = nd.astype(dtypes.int64) if nd.dtype is dtypes.bool_ else nd
        kept = index_src.reduce(cls.arg_op, ctx.dims, True)
        # The values are read at the indices (a pass over the output, not over the input
        # again); argmax picks torch's max, NaN included.
        values = nd.take_at(ctx.dims[0], kept) if nd.ndim else nd.copy()
        if not keepdim and nd.ndim:
            d = ctx.dims[0]
            shape = kept.shape[:d] + kept.shape[d + 1:]
            kept = kept._view(shape, contiguous_strides(shape))
            values = values._view(shape, contiguous_strides(shape))
        indices = wrap(kept)
        ctx.save_for_backward(indices)
        return cls.result(wrap(values), indices)

    @staticmethod
    def backward(ctx, g, _indices_grad):
        if g is None:
            return None, None, None
        if not ctx.input_shape:
            return g, None, None
        from .index import GatherBackward   # index builds on this module: import at use
        indices, = ctx.saved_tensors
        dim, ndim = ctx.dims[0], len(ctx.input_shape)
        g, indices = (_kept(t, ctx.dims, ctx.keepdim, ndim) for t in (g, indices))
        # One scatter into zeros (differentiable: its backward is a gather), not a full-size
        # compare-and-select.
        return GatherBackward.apply(g, indices, dim, ctx.input_shape), None, None


class Min(Max):
    op, arg_op, result = ReduceOp.MIN, ReduceOp.ARGMIN, _MinResult


def _max_min(name, all_fn, dim_fn, pair_fn, input, dim, keepdim, other):
    if other is not None or isinstance(dim, Tensor):
        other = dim if other is None else other
        refuse_complex("maximum" if name == "max" else "minimum", input, other)
        return pair_fn(input, other)
    nd = input._data
    if dim is None:
        _check_nonempty(name, nd.shape, (), full=True)
        refuse_complex(name, input)
        return all_fn.apply(input)
    _check_int_dim(name, dim)
    d = normalize_dim(dim, nd.ndim)
    _check_nonempty(name, nd.shape, (d,) if nd.ndim else (), full=False)
    refuse_complex(name + "_dim", input)
    return dim_fn.apply(input, d, keepdim)


@batching_point
def max(input, dim=None, keepdim=False, *, other=None):
    """max(input) -> 0-d; max(input, dim, keepdim) -> (values, indices); max(input, other)."""
    return _max_min("max", MaxAll, Max, _E.maximum, input, dim, keepdim, other)


@batching_point
def min(input, dim=None, keepdim=False, *, other=None):
    """min(input) -> 0-d; min(input, dim, keepdim) -> (values, indices); min(input, other)."""
    return _max_min("min", MinAll, Min, _E.minimum, input, dim, keepdim, other)


class Amax(KernelFunction):
    """amax over dims; ties share the gradient evenly (torch's scale_grad_by_count)."""
    op = ReduceOp.MAX

    @classmethod
    def forward(cls, ctx, a, dims, keepdim):
        nd = a._data
        ctx.dims, ctx.keepdim = normalize_dims(dims, nd.ndim), keepdim
        out = wrap(nd.reduce(cls.op, ctx.dims, keepdim))
        ctx.save_for_backward(a, out)
        return out

    @staticmethod
    def backward(ctx, g):
        a, out = ctx.saved_tensors
        g, out = (_kept(t, ctx.dims, ctx.keepdim, a.ndim) for t in (g, out))
        hit = _E.cast(a == out, g.dtype)
        return (g / sum(hit, ctx.dims, keepdim=True)) * hit, None, None


class Amin(Amax):
    op = ReduceOp.MIN


def _amax_amin(name, fn, input, dim, keepdim):
    dim = _all_if_empty(dim)
    nd = input._data
    normalize_dims(dim, nd.ndim)                     # range / duplicate errors first
    if dim is None:
        _check_nonempty(name, nd.shape, (), full=True)
    else:
        _check_nonempty(name, nd.shape, _empty_dims(nd, dim), full=False)
    refuse_complex(name, input)
    return fn.apply(input, dim, keepdim)


def _empty_dims(nd, dim):
    """The dims of `dim`, as the user wrote them, that have size 0 (torch's messages name the
    dim as given)."""
    dims = (dim,) if isinstance(dim, (numbers.Integral, np.integer)) else tuple(dim)
    return [d for d in dims if nd.ndim and nd.shape[normalize_dim(d, nd.ndim)] == 0]


@batching_point
def amax(input, dim=(), keepdim=False):
    """Maximum over dim (all dims by default) with keepdim; the gradient is shared evenly among
    tied maxima (torch.amax)."""
    return _amax_amin("amax", Amax, input, dim, keepdim)


@batching_point
def amin(input, dim=(), keepdim=False):
    """Minimum over dim (all dims by default) with keepdim; the gradient is shared evenly among
    tied minima (torch.amin)."""
    return _amax_amin("amin", Amin, input, dim, keepdim)


def _arg_reduce(name, op, input, dim, keepdim):
    """Indices (int64) of the extreme value; ties give the first, and the first NaN wins."""
    nd = input._data
    if nd.dtype is dtypes.bool_:
        raise RuntimeError(f"{name}(): does not support bool input")
    refuse_complex(name, input)
    if dim is None:
        if nd.size == 0:
            raise IndexError(f"{name}(): Expected reduction dim to be specified for "
                             "input.numel() == 0.")
        out = nd.reshape((nd.size,)).reduce(op, 0, False)
        return wrap(out.reshape((1,) * nd.ndim) if keepdim else out)
    _check_int_dim(name, dim)
    d = normalize_dim(dim, nd.ndim)
    _check_nonempty(name, nd.shape, (d,) if nd.ndim else (), full=False)
    return wrap(nd.reduce(op, d, keepdim))


@batching_point
def argmax(input, dim=None, keepdim=False):
    """Index of the maximum over the flattened input, or along dim with keepdim (torch.argmax)."""
    return _arg_reduce("argmax", ReduceOp.ARGMAX, input, dim, keepdim)


@batching_point
def argmin(input, dim=None, keepdim=False):
    """Index of the minimum over the flattened input, or along dim with keepdim (torch.argmin)."""
    return _arg_reduce("argmin", ReduceOp.ARGMIN, input, dim, keepdim)


# ---- var / std --------------------------------------------------------------------------------
def _nd_var(nd, dims, correction, keepdim):
    """(variance, keepdim mean) by two passes: mean first, then squared deviations, which
    stays accurate in float32 where E[x^2] - E[x]^2 would cancel."""
    count = _count(nd.shape, dims)
    mean = nd.reduce(ReduceOp.SUM, dims, True).binary(B.DIV, _scalar(count, nd))
    squares = nd.binary(B.SUB, mean).unary(U.SQUARE)
    dof = builtins.max(0, count - correction)        # torch: max(0, N - correction)
    var = squares.reduce(ReduceOp.SUM, dims, keepdim).binary(B.DIV, _scalar(dof, nd))
    return var, mean


def _var_backward(g, a, dims, correction):
    """d var / d a = 2 (a - mean) / (N - correction), with g already keeping the axes."""
    count = _count(a.shape, dims)
    dof = count - correction
    scale = 2.0 / dof if dof > 0 else math.inf
    return (g * scale) * (a - mean(a, dims, keepdim=True))


class Var(KernelFunction):
    @staticmethod
    def forward(ctx, a, dims, correction, keepdim):
        ctx.dims = normalize_dims(dims, a._data.ndim)
        ctx.correction, ctx.keepdim = correction, keepdim
        ctx.save_for_backward(a)
        return wrap(_nd_var(a._data, ctx.dims, correction, keepdim)[0])

    @staticmethod
    def backward(ctx, g):
        a, = ctx.saved_tensors
        g = _kept(g, ctx.dims, ctx.keepdim, a.ndim)
        return _var_backward(g, a, ctx.dims, ctx.correction), None, None, None


def _std_grad(g, std):
    """var's gradient for std = sqrt(var): g / (2 std), zero where std is 0 (as torch)."""
    return _E.where(std == 0, _zero_like(g), g / (std * 2))


class Std(KernelFunction):
    @staticmethod
    def forward(ctx, a, dims, correction, keepdim):
        ctx.dims = normalize_dims(dims, a._data.ndim)
        ctx.correction, ctx.keepdim = correction, keepdim
        out = wrap(_nd_var(a._data, ctx.dims, correction, keepdim)[0].unary(U.SQRT))
        ctx.save_for_backward(a, out)
        return out

    @staticmethod
    def backward(ctx, g):
        a, out = ctx.saved_tensors
        g, out = (_kept(t, ctx.dims, ctx.keepdim, a.ndim) for t in (g, out))
        return _var_backward(_std_grad(g, out), a, ctx.dims, ctx.correction), None, None, None


class VarMean(KernelFunction):
    """(var, mean) from one pass over the mean."""
    materialize_grads = False
    take_sqrt = False

    @classmethod
    def forward(cls, ctx, a, dims, correction, keepdim):
        nd = a._data
        ctx.dims = normalize_dims(dims, nd.ndim)
        ctx.correction, ctx.keepdim = correction, keepdim
        var, mean_kept = _nd_var(nd, ctx.dims, correction, keepdim)
        if cls.take_sqrt:
            var = var.unary(U.SQRT)
        out = wrap(var)
        ctx.save_for_backward(a, out)
        return out, wrap(mean_kept if keepdim else mean_kept.squeeze(ctx.dims))

    @classmethod
    def backward(cls, ctx, g_spread, g_mean):
        a, spread = ctx.saved_tensors
        grad = None
        if g_spread is not None:
            g_spread, spread = (_kept(t, ctx.dims, ctx.keepdim, a.ndim)
                                for t in (g_spread, spread))
            if cls.take_sqrt:
                g_spread = _std_grad(g_spread, spread)
            grad = _var_backward(g_spread, a, ctx.dims, ctx.correction)
        if g_mean is not None:
            g_mean = _kept(g_mean, ctx.dims, ctx.keepdim, a.ndim)
            from_mean = (g_mean / builtins.max(_count(a.shape, ctx.dims), 1)).expand(a.shape)
            grad = from_mean if grad is None else grad + from_mean
        return grad, None, None, None


class StdMean(VarMean):
    take_sqrt = True


def _var_args(name, input, dim, unbiased, correction):
    """torch's var/std overloads: (dim, unbiased, keepdim), (unbiased) and (dim, *,
    correction, keepdim). Returns (dims or None, correction)."""
    if isinstance(dim, bool):
        if unbiased is not None:
            raise TypeError(f"{name}(): argument 'dim' must be tuple of ints, not bool")
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise TypeError(f"{name}(): 'unbiased' and 'correction' can't be given together; "
                        "use correction (unbiased=False is correction=0)")
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        what = name if name.endswith("_mean") else "std and var"
        raise RuntimeError(f"{what} only support floating point and complex dtypes")
    if correction is None:
        correction = 0 if unbiased is False else 1
    dim = _all_if_empty(dim)
    nd = input._data
    count = _count(nd.shape, normalize_dims(dim, nd.ndim))
    if count - correction <= 0:
        warnings.warn(f"{name}(): degrees of freedom is <= 0. Correction should be strictly "
                      "less than the reduction factor (input numel divided by output numel).",
                      UserWarning, stacklevel=3)
    return dim, correction


def _complex_var(input, dim, correction, keepdim):
    """The variance of complex numbers, a real tensor: the mean of |z - mean|^2, which is the
    variance of the real parts plus that of the imaginary parts. Its gradient, through .real
    and .imag, is torch's 2 g (z - mean) / (N - correction)."""
    return (Var.apply(input.real, dim, correction, keepdim) +
            Var.apply(input.imag, dim, correction, keepdim))


class _StdOfVar(KernelFunction):
    """sqrt of a variance, with std's gradient (0 where the deviation is 0)."""
    node_name = "StdBackward0"

    @staticmethod
    def forward(ctx, v):
        out = wrap(v._data.unary(U.SQRT))
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        out, = ctx.saved_tensors
        return _std_grad(g, out)


@batching_point
def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Variance over dim (all by default) with Bessel's correction (unbiased / correction);
    real for complex input (torch.var)."""
    dim, correction = _var_args("var", input, dim, unbiased, correction)
    if input.dtype.is_complex:
        return _complex_var(input, dim, correction, keepdim)
    return Var.apply(input, dim, correction, keepdim)


@batching_point
def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Standard deviation over dim (all by default) with Bessel's correction (unbiased /
    correction); real for complex input (torch.std)."""
    dim, correction = _var_args("std", input, dim, unbiased, correction)
    if input.dtype.is_complex:
        return _StdOfVar.apply(_complex_var(input, dim, correction, keepdim))
    return Std.apply(input, dim, correction, keepdim)


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(variance, mean) over dim, arguments as var (torch.var_mean)."""
    dim, correction = _var_args("var_mean", input, dim, unbiased, correction)
    if input.dtype.is_complex:
        return (_complex_var(input, dim, correction, keepdim),
                Mean.apply(input, dim, keepdim))
    return VarMean.apply(input, dim, correction, keepdim)


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(standard deviation, mean) over dim, arguments as std (torch.std_mean)."""
    dim, correction = _var_args("std_mean", input, dim, unbiased, correction)
    if input.dtype.is_complex:
        return (_StdOfVar.apply(_complex_var(input, dim, correction, keepdim)),
                Mean.apply(input, dim, keepdim))
    return StdMean.apply(input, dim, correction, keepdim)


# ---- logsumexp / softmax ----------------------------------------------------------------------
class Logsumexp(KernelFunction):
    @staticmethod
    def forward(ctx, a, dims, keepdim):
        nd = a._data
        ctx.dims, ctx.keepdim = normalize_dims(dims, nd.ndim), keepdim
        if _count(nd.shape, ctx.dims) == 0:            # log of an empty sum
            kept = tuple(1 if i in ctx.dims else s for i, s in enumerate(nd.shape))
            result = NDArray.full(kept, -math.inf, nd.dtype, nd.device)
        else:
            # Shift by the max for stability, but by 0 where the max is infinite, so that
            # all -inf gives -inf (not -inf - -inf = nan) and +inf gives +inf.
            peak = nd.reduce(ReduceOp.MAX, ctx.dims, True)
            shift = peak.unary(U.ISFINITE).where(peak, _scalar(0, nd))
            total = nd.binary(B.SUB, shift).unary(U.EXP).reduce(ReduceOp.SUM, ctx.dims, True)
            result = total.unary(U.LOG).binary(B.ADD, shift)
        out = wrap(result if keepdim else result.squeeze(ctx.dims))
        ctx.save_for_backward(a, out)
        return out

    @staticmethod
    def backward(ctx, g):
        a, out = ctx.saved_tensors
        g, out = (_kept(t, ctx.dims, ctx.keepdim, a.ndim) for t in (g, out))
        return g * _E.exp(a - out), None, None


@batching_point
def logsumexp(input, dim, keepdim=False):
    """log(sum(exp(input))) over dim, computed stably; integer inputs are computed in the
    default float dtype (torch.logsumexp)."""
    if dim is None:
        raise TypeError("logsumexp(): argument 'dim' must be tuple of ints, not NoneType")
    if input.dtype.is_complex:
        return _complex_logsumexp(input, _all_if_empty(dim), keepdim)
    if not input.dtype.is_floating_point:
        input = _E.cast(input, dtypes.get_default_dtype())
    return Logsumexp.apply(input, _all_if_empty(dim), keepdim)


def _complex_logsumexp(input, dim, keepdim):
    """torch's complex logsumexp, composed (so its gradient is g · conj(softmax)): shifted by
    the largest real part (0 where that is infinite), log(sum(exp(z - m))) + m."""
    dims = normalize_dims(dim, input.ndim)
    with no_grad():
        shift = amax(input.real, dims, keepdim=True)
        shift = _E.where(shift.abs() == math.inf, 0.0, shift)
    total = sum((input - shift).exp(), dims, keepdim).log()
    return total + (shift if keepdim else shift.squeeze(dims))


def _nd_softmax(nd, dim, log):
    """softmax (log_softmax when `log`) along dim: one fused kernel over the rows when dim is
    the last axis; otherwise composed of reductions over dim as a middle axis (no transposing
    copy). log_softmax is x - max - log(sum(exp(x - max))): exact for the dominant entry, no
    overflow."""
    if dim == nd.ndim - 1:
        return nd.softmax_last(log)
    shifted = nd.binary(B.SUB, nd.reduce(ReduceOp.MAX, dim, True))
    e = shifted.unary(U.EXP)
    if log:
        return shifted.binary(B.SUB, e.reduce(ReduceOp.SUM, dim, True).unary(U.LOG))
    return e.binary(B.DIV, e.reduce(ReduceOp.SUM, dim, True))


def _nd_softmax_backward(gd, yd, dim, log):
    """The input gradient of softmax, (g - sum(g * y)) * y, or of log_softmax,
    g - exp(y) * sum(g), from the output y: fused over last-axis rows, else composed."""
    if dim == gd.ndim - 1:
        return gd.softmax_backward_last(yd, log)
    if log:
        total = gd.reduce(ReduceOp.SUM, dim, True)
        return gd.binary(B.SUB, yd.unary(U.EXP).binary(B.MUL, total))
    dot = gd.binary(B.MUL, yd).reduce(ReduceOp.SUM, dim, True)
    return gd.binary(B.SUB, dot).binary(B.MUL, yd)


class Softmax(KernelFunction):
    """softmax along a dim; LogSoftmax below differs only in `log` (and its backward node)."""
    log = False

    @classmethod
    def forward(cls, ctx, a, dim):
        nd = a._data
        ctx.dim = dim
        out = wrap(_nd_softmax(nd, dim, cls.log) if nd.size else nd.copy())
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        y, = ctx.saved_tensors
        node = LogSoftmaxBackward if ctx.log else SoftmaxBackward
        return node.apply(g, y, ctx.dim), None


class LogSoftmax(Softmax):
    log = True


class SoftmaxBackward(KernelFunction):
    """The fused input gradient (see _nd_softmax_backward); its own backward, in Tensor ops,
    keeps double backward."""
    log = False

    @classmethod
    def forward(cls, ctx, g, y, dim):
        ctx.dim = dim
        ctx.save_for_backward(g, y)
        return wrap(_nd_softmax_backward(g._data, y._data, dim, cls.log))

    @staticmethod
    def backward(ctx, gg):
        g, y = ctx.saved_tensors
        dim = ctx.dim
        grad_g = SoftmaxBackward.apply(gg, y, dim) if ctx.needs_input_grad[0] else None
        grad_y = None
        if ctx.needs_input_grad[1]:
            grad_y = (gg * (g - sum(g * y, dim, keepdim=True))
                      - g * sum(gg * y, dim, keepdim=True))
        return grad_g, grad_y, None


class LogSoftmaxBackward(SoftmaxBackward):
    log = True

    @staticmethod
    def backward(ctx, gg):
        g, y = ctx.saved_tensors
        dim = ctx.dim
        e = _E.exp(y)
        grad_g = gg - sum(gg * e, dim, keepdim=True) if ctx.needs_input_grad[0] else None
        grad_y = -(gg * e) * sum(g, dim, keepdim=True) if ctx.needs_input_grad[1] else None
        return grad_g, grad_y, None


def _softmax_input(name, input, dim, dtype):
    if dtype is not None:
        input = _E.cast(input, dtype)
    _check_int_dim(name, dim)
    dim = normalize_dim(dim, input.ndim)
    if not input.dtype.is_floating_point:     # torch names the kernel it would have run
        kernel = "lastdim_kernel_impl" if dim == builtins.max(input.ndim - 1, 0) else \
            "kernel_impl"
        raise NotImplementedError(f'"{name}_{kernel}" not implemented for '
                                  f"'{_torch_dtype_name(input.dtype)}'")
    return input, dim


@batching_point
def softmax(input, dim, dtype=None):
    """Softmax exp(x) / sum(exp(x)) along dim, optionally in dtype (torch.softmax)."""
    input, dim = _softmax_input("softmax", input, dim, dtype)
    return Softmax.apply(input, dim)


@batching_point
def log_softmax(input, dim, dtype=None):
    """log(softmax(input)) along dim computed stably, optionally in dtype (torch.log_softmax)."""
    input, dim = _softmax_input("log_softmax", input, dim, dtype)
    return LogSoftmax.apply(input, dim)


# ---- norm -------------------------------------------------------------------------------------
class LinalgVectorNorm(KernelFunction):
    """(sum |x|^p)^(1/p) over dims, with p = 0 (count), 1, 2, inf, -inf or any float."""

    @staticmethod
    def forward(ctx, a, p, dims, keepdim):
        nd = a._data
        ctx.p, ctx.keepdim = p, keepdim
        ctx.dims = dims = normalize_dims(dims, nd.ndim)
        if p == 2:
            result = nd.unary(U.SQUARE).reduce(ReduceOp.SUM, dims, keepdim).unary(U.SQRT)
        elif p == 1:
            result = nd.unary(U.ABS).reduce(ReduceOp.SUM, dims, keepdim)
        elif math.isinf(p):
            op = ReduceOp.MAX if p > 0 else ReduceOp.MIN
            result = nd.unary(U.ABS).reduce(op, dims, keepdim)
        elif p == 0:
            nonzero = nd.binary(B.NE, _scalar(0, nd)).astype(nd.dtype)
            result = nonzero.reduce(ReduceOp.SUM, dims, keepdim)
        else:
            powered = nd.unary(U.ABS).binary(B.POW, _scalar(float(p), nd))
            result = powered.reduce(ReduceOp.SUM, dims, keepdim).binary(
                B.POW, _scalar(1.0 / p, nd))
        out = wrap(result)
        ctx.save_for_backward(a, out)
        return out

    @staticmethod
    def backward(ctx, g):
        a, out = ctx.saved_tensors
        p, dims = ctx.p, ctx.dims
        if p == 0:
            return None, None, None, None        # piecewise constant: torch gives no gradient
        g, out = (_kept(t, dims, ctx.keepdim, a.ndim) for t in (g, out))
        return _norm_backward(g, a, out, p, dims), None, None, None


def _norm_backward(g, a, out, p, dims):
    """torch's linalg_vector_norm_backward (g and out keep the reduced axes)."""
    zero = _zero_like(g)
    if p == 1:
        return _E.sign(a) * g
    if p == 2:
        return a * _E.where(out == 0, zero, g / out)
    if math.isinf(p):
        magnitude = _E.abs(a)
        hit = _E.cast((magnitude == out) | magnitude.isnan(), g.dtype)
        return _E.sign(a) * ((g / sum(hit, dims, keepdim=True)) * hit)
    magnitude = _E.abs(a)
    if p < 1:
        scaled = _E.where(a == 0, zero, magnitude ** (p - 1))
        return _E.sign(a) * scaled * g * out ** (1 - p)
    scale = _E.where(out == 0, zero, g / out ** (p - 1))
    if p < 2:
        return _E.sign(a) * magnitude ** (p - 1) * scale
    return a * magnitude ** (p - 2) * scale


def _norm_order(p, dim):
    """p as a float (vector norms only: 'fro' is the 2-norm of the flattened dims)."""
    if isinstance(p, str):
        if p == "fro":
            if dim is not None and not isinstance(dim, numbers.Integral) and len(dim) > 2:
                raise RuntimeError("linalg.matrix_norm: dim must be a 2-tuple. Got "
                                   + " ".join(str(d) for d in dim))
            return 2.0
        raise RuntimeError(f"linalg.matrix_norm: Order {p} not supported.")
    if p is None:
        return 2.0
    return float(p)


def check_norm_arguments(input, p, out, dtype):
    """torch.norm's argument checks, in torch's order."""
    if out is not None:
        raise TypeError("norm(): the 'out' argument is not supported by minitorch")
    if dtype is not None:
        if not (dtype.is_floating_point or dtype.is_complex):
            raise RuntimeError("linalg.vector_norm: dtype should be floating point or complex, "
                               f"but got {_torch_dtype_name(dtype)}")
        if input.dtype.is_complex and not dtype.is_complex:
            raise RuntimeError("linalg.vector_norm: dtype should be complex for complex inputs, "
                               f"but got {_torch_dtype_name(dtype)}")
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise RuntimeError("linalg.vector_norm: Expected a floating point or complex tensor as "
                           f"input. Got {_torch_dtype_name(input.dtype)}")
    if p is not None and not isinstance(p, (str, numbers.Number)):
        raise TypeError("linalg_vector_norm(): argument 'ord' (position 2) must be Number, not "
                        f"{type(p).__name__}")


@batching_point
def p_norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):
    """torch.norm for every p but 'nuc' (functions/norms.py adds that one): the p-norm of the
    elements over dim, 'fro' and None meaning 2."""
    check_norm_arguments(input, p, out, dtype)
    order = _norm_order(p, dim)
    if dtype is not None:
        input = _E.cast(input, dtype)
    if input.dtype.is_complex:          # the norm of the magnitudes (abs's gradient is sgn's)
        input = _E.abs(input)
    dim = _all_if_empty(dim)
    _check_norm_identity(input._data, p, order, dim)
    return LinalgVectorNorm.apply(input, order, dim, keepdim)


def _check_norm_identity(nd, p, order, dim):
    """Norms with p < 0 or p = inf have no value over nothing: torch's errors."""
    if order >= 0 and not math.isinf(order):
        return
    if dim is None:
        if nd.size == 0:
            raise RuntimeError(f"linalg.vector_norm cannot compute the {p} norm on an empty "
                               "tensor because the operation does not have an identity")
        return
    empty = _empty_dims(nd, dim)
    if empty:
        # (torch's message really has no space before "because")
        raise RuntimeError(f"linalg.vector_norm cannot compute the {p} norm on the dimension "
                           f"{empty[0]}because this dimension is empty and the operation does "
                           "not have an identity")


def renorm(input, p, dim, maxnorm):
    """Each slice along dim whose p-norm exceeds maxnorm scaled down to norm maxnorm (torch's
    1e-7 guard in the divisor)."""
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"renorm: expected a floating point tensor, got "
                           f"{_torch_dtype_name(input.dtype)}")
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    d = normalize_dim(dim, input.ndim)
    others = tuple(k for k in range(input.ndim) if k != d)
    norms = p_norm(input, p, others, keepdim=True)
    scale = _E.where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0)
    return input * scale


# ---- cumulative ops ---------------------------------------------------------------------------
def _flip_along(nd, dim):
    """nd reversed along dim (a view)."""
    return nd[(slice(None),) * dim + (slice(None, None, -1),)]


def _nd_scan(nd, op, dim, reverse):
    """Inclusive scan along dim; `reverse` scans from the end (through flipped views)."""
    if not reverse or not nd.ndim:
        return nd.scan(op, dim)
    return _flip_along(_flip_along(nd, dim).scan(op, dim), dim).compact()


class Cumsum(KernelFunction):
    """cumsum, or (reverse=True) the suffix sum that is its backward; each is the other's
    gradient."""

    @staticmethod
    def forward(ctx, a, dim, reverse):
        ctx.dim, ctx.reverse = dim, reverse
        return wrap(_nd_scan(a._data, ReduceOp.SUM, dim, reverse))

    @staticmethod
    def backward(ctx, g):
        return Cumsum.apply(g, ctx.dim, not ctx.reverse), None, None


class Cumprod(KernelFunction):
    @staticmethod
    def forward(ctx, a, dim):
        ctx.dim = dim
        nd = a._data
        out = wrap(_complex_cumprod(nd, dim) if nd.dtype.is_complex else nd.scan(ReduceOp.PROD,
                                                                                   dim))
        ctx.save_for_backward(a, out)
        return out

    @staticmethod
    def backward(ctx, g):
        a, out = ctx.saved_tensors
        if a.is_complex():      # the conjugate of the products of the others (torch's rule)
            a, out = a.conj(), out.conj()
        return _cumprod_backward(g, a, out, ctx.dim), None


def _complex_cumprod(nd, dim):
    """Running products of complex numbers along dim by doubling (Hillis and Steele): after
    the step of span s every entry holds the product of the 2s before it, through the complex
    mul kernel."""
    out = nd.copy()
    n, span = (nd.shape[dim] if nd.ndim else 1), 1
    while span < n:
        later = out[(slice(None),) * dim + (slice(span, None),)]
        earlier = out[(slice(None),) * dim + (slice(0, n - span),)]
        later.assign(later.binary(B.MUL, earlier))      # binary reads both before assigning
        span *= 2
    return out


def _cumprod_backward(g, x, out, dim):
    """grad_i = sum_{j >= i} g_j * prod_{k <= j, k != i} x_k in O(n).

    Wherever x_i != 0 that is suffix_sum(g * out)_i / x_i exactly (as a function, so it
    differentiates correctly). At the first zero (and the second, which matters for double
    backward) the product skips the entry by setting it to 1 and summing g * cumprod from there.
    """
    suffix = Cumsum.apply(g * out, dim, True)
    zero = x == 0
    masks = list(_kth_zero_masks(zero, dim))
    if not masks:
        return suffix / x
    grad = suffix / _E.where(zero, 1, x)
    for k, ranks, kth in masks:
        tail = _E.where(ranks >= k, g * cumprod(_E.where(kth, 1, x), dim), _zero_like(g))
        grad = _E.where(kth, sum(tail, dim, keepdim=True), grad)
    return grad


@batching_point
def cumsum(input, dim, *, dtype=None):
    """Cumulative sum along dim; bool and integer inputs accumulate in int64 (torch.cumsum)."""
    input = _integral_to_long(input, dtype)
    return Cumsum.apply(input, normalize_dim(dim, input.ndim), False)


@batching_point
def cumprod(input, dim, *, dtype=None):
    """Cumulative product along dim; bool and integer inputs accumulate in int64
    (torch.cumprod)."""
    input = _integral_to_long(input, dtype)
    return Cumprod.apply(input, normalize_dim(dim, input.ndim))


# ---- logical reductions -----------------------------------------------------------------------
def _truth(nd):
    """A bool NDArray: nd itself if bool, else nd != 0."""
    return nd if nd.dtype is dtypes.bool_ else nd.binary(B.NE, _scalar(0, nd))


def _logical_reduce(op, empty_value, input, dim, keepdim):
    """all/any: bool results, except uint8 in, uint8 out (0 or 1), as in torch."""
    nd = input._data
    result = _truth_reduce(op, empty_value, nd, dim, keepdim)
    return wrap(result.astype(dtypes.uint8) if nd.dtype is dtypes.uint8 else result)


def _truth_reduce(op, empty_value, nd, dim, keepdim):
    if dim is None and not keepdim and nd.size:
        return _truth(nd).reduce(op)             # everything (x.all()): one kernel call
    if dim is not None and type(dim) is not int and \
            not isinstance(dim, (numbers.Integral, np.integer)) and len(tuple(dim)) == 0:
        return _truth(nd).copy()                 # torch: dim=() reduces nothing
    dims = normalize_dims(dim, nd.ndim)
    if not nd.size and _count(nd.shape, dims) == 0:     # all() of nothing is True, any() False
        kept = tuple(1 if i in dims else s for i, s in enumerate(nd.shape))
        result = NDArray.full(kept, empty_value, dtypes.bool_, nd.device)
        return result if keepdim else result.squeeze(dims)
    return _truth(nd).reduce(op, dims, keepdim)


@batching_point
def all(input, dim=None, keepdim=False):
    """True if every element (or every element along dim) is nonzero (torch.all)."""
    return _logical_reduce(ReduceOp.MIN, True, input, dim, keepdim)


@batching_point
def any(input, dim=None, keepdim=False):
    """True if any element (or any element along dim) is nonzero (torch.any)."""
    return _logical_reduce(ReduceOp.MAX, False, input, dim, keepdim)


def count_nonzero(input, dim=None):
    """Number of nonzero elements, over all dims or over dim (torch.count_nonzero)."""
    nd = input._data
    dims = normalize_dims(_all_if_empty(dim), nd.ndim)
    return wrap(_truth(nd).astype(dtypes.int64).reduce(ReduceOp.SUM, dims, False))


def sum_to_size(self, *size):
    """self summed over its broadcast dims down to `size` (which must expand to self's shape)."""
    shape = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else size
    trailing = self.shape[len(self.shape) - len(shape):] if shape else ()
    if len(shape) > self.ndim or builtins.any(s not in (1, t) for s, t in zip(shape, trailing)):
        raise RuntimeError(f"size {{{list(shape)}}} is not expandable to size "
                           f"{{{list(self.shape)}}}.")
    return sum_to(self, shape)
