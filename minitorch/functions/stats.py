"""Statistics: nansum, nanmean, aminmax, logcumsumexp, cummax/cummin, bincount, histc, mode,
quantile/nanquantile, searchsorted/bucketize.

Most are compositions of existing ops, so their gradients come from the ops they are made of.
cummax/cummin run the `scan_index_last` kernel (a running extreme with its position) and
searchsorted/bucketize the `searchsorted` kernel (a binary search per value); logcumsumexp has
its own node, with torch's stable backward. bincount, histc and searchsorted give counts and
positions: they record no gradient.
"""
import math
import numbers
import warnings

import numpy as np

from .. import dtypes
from ..autograd import KernelFunction, no_grad
from ..ndarray import NDArray, normalize_dim, shape_str
from ..opcodes import BinaryOp as B, ReduceOp
from ..tensor import Tensor, arange, linspace, wrap, zeros_like
from .autocast_policy import batching_point
from . import elementwise as _E
from . import compare as _compare
from . import complex as _complex
from . import reduce as _R
from .index import GatherBackward
from .complex_refusals import refuse_complex
from .joining import cat, diff, stack
from .sort import _along, _node, _picked, _sorted_along, sort


__all__ = ['aminmax', 'bincount', 'bucketize', 'corrcoef', 'cov', 'cummax', 'cummin',
           'cumulative_trapezoid', 'histc', 'histogram', 'isin', 'logcumsumexp', 'mode',
           'nanmean', 'nanquantile', 'nansum', 'quantile', 'searchsorted', 'trapezoid', 'trapz']

_TORCH_NAMES = _E.TORCH_NAMES
_AminmaxResult = _R._return_type("aminmax", ("min", "max"))
_CummaxResult = _R._return_type("cummax")
_CumminResult = _R._return_type("cummin")
_ModeResult = _R._return_type("mode")
_HistogramResult = _R._return_type("histogram", ("hist", "bin_edges"))
for _cls in (_AminmaxResult, _CummaxResult, _CumminResult, _ModeResult, _HistogramResult):
    _cls.__module__ = __name__      # so pickle finds them in this module


def _not_implemented(kernel, input):
    return NotImplementedError(f'"{kernel}_{input.device.type}" not implemented for '
                               f"'{_TORCH_NAMES[input.dtype.name]}'")


# ---- NaN-ignoring reductions, aminmax ---------------------------------------------------------
def _nan_to_zero(input):
    """input with NaNs replaced by 0 (a where: no gradient reaches the NaNs)."""
    if not input.dtype.is_floating_point:
        return input
    return _E.where(_compare.isnan(input), _R._zero_like(input), input)


@batching_point
def nansum(input, dim=None, keepdim=False, *, dtype=None):
    """sum treating NaN as 0."""
    refuse_complex("nansum", input)
    return _R.sum(_nan_to_zero(input), dim, keepdim, dtype=dtype)


def nanmean(input, dim=None, keepdim=False, *, dtype=None):
    """mean over the non-NaN elements (NaN where there are none)."""
    refuse_complex("nansum", input)
    if not input.dtype.is_floating_point:
        raise RuntimeError("nanmean(): expected input to have floating point or complex dtype "
                           f"but got {_TORCH_NAMES[input.dtype.name]}")
    count = _R.sum(_compare.logical_not(_compare.isnan(input)), dim, keepdim)
    return nansum(input, dim, keepdim, dtype=dtype) / count


def aminmax(input, *, dim=None, keepdim=False):
    """(min, max) over dim (every element when None); ties share each gradient evenly."""
    refuse_complex("aminmax", input)
    nd = input._data
    if dim is None:
        if nd.size == 0:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the "
                               "operation has no identity.")
    else:
        _R._check_int_dim("aminmax", dim)
        d = normalize_dim(dim, nd.ndim)
        if nd.ndim and nd.shape[d] == 0:
            raise IndexError(f"aminmax: Expected reduction dim {d} to have non-zero size.")
    dims = () if dim is None else dim
    return _AminmaxResult(_R.amin(input, dims, keepdim), _R.amax(input, dims, keepdim))


# ---- logcumsumexp -----------------------------------------------------------------------------
def _nd_logcumsumexp(nd, dim):
    """log(cumsum(exp(nd))) along dim as a Hillis-Steele scan of logaddexp: after the step with
    shift k each element holds the log-sum-exp of the 2k elements ending at it. Each logaddexp
    is max + log1p(exp(-|a - b|)), so no early term underflows against a later, larger one (as
    shifting by one max for the whole row would)."""
    out = nd.copy()
    n = nd.shape[dim] if nd.ndim else 1
    k = 1
    while k < n:
        summed = _along(out, dim, k, n).binary(B.LOGADDEXP, _along(out, dim, 0, n - k))
        _along(out, dim, k, n).assign(summed)
        k *= 2
    return out


class Logcumsumexp(KernelFunction):
    """logcumsumexp along dim, or (reverse=True) from the end, which its backward uses."""

    @staticmethod
    def forward(ctx, a, dim, reverse):
        nd = a._data
        ctx.dim, ctx.reverse = dim, reverse
        if reverse and nd.ndim:
            out = _R._flip_along(_nd_logcumsumexp(_R._flip_along(nd, dim), dim), dim).compact()
        else:
            out = _nd_logcumsumexp(nd, dim)
        out = wrap(out)
        ctx.save_for_backward(a, out)
        return out

    @staticmethod
    def backward(ctx, g):
        # torch's stable form: the gradient exp(a) * suffix_sum(g * exp(-out)) in log space,
        # the positive and negative parts of g apart (their logs are real).
        a, out = ctx.saved_tensors
        lowest = _E.scalar_array(float(np.finfo(g.dtype.numpy_dtype).min), g.dtype, g.device)
        log_abs = _E.log(_E.abs(g))

        def part(mask):
            logs = _E.where(mask, log_abs, wrap(lowest))
            return _E.exp(Logcumsumexp.apply(logs - out, ctx.dim, not ctx.reverse) + a)

        return part(g > 0) - part(g < 0), None, None


def logcumsumexp(input, dim):
    """Cumulative log(sum(exp(input))) along dim, computed stably (torch.logcumsumexp)."""
    if not input.dtype.is_floating_point:
        raise _not_implemented("logcumsumexp_out", input)
    return Logcumsumexp.apply(input, normalize_dim(dim, input.ndim), False)


# ---- cummax / cummin --------------------------------------------------------------------------
def _nd_running_extreme(nd, op, dim):
    """(values, int64 indices) NDArrays of the running MAX/MIN along dim: one scan_index_last
    over nd as (outer, n, inner)."""
    src = nd.compact()
    values, indices = src._new(src.shape), src._new(src.shape, dtypes.int64)
    if src.size:
        n = src.shape[dim] if src.ndim else 1
        nd.backend.scan_index_last(op, src.flat(), values.buffer, indices.buffer, n,
                                   math.prod(src.shape[dim + 1:]))
    return values, indices


class Cummax(KernelFunction):
    """(values, indices) of the running maximum; the gradient goes to the indices (added up
    where one element stays the maximum for several positions)."""
    op, result = ReduceOp.MAX, _CummaxResult
    materialize_grads = False

    @classmethod
    def forward(cls, ctx, a, dim):
        ctx.dim, ctx.input_shape = dim, a._data.shape
        values, indices = (wrap(x) for x in _nd_running_extreme(a._data, cls.op, dim))
        ctx.save_for_backward(indices)
        return cls.result(values, indices)

    @staticmethod
    def backward(ctx, g, _indices_grad):
        if g is None or not ctx.input_shape:
            return g, None
        indices, = ctx.saved_tensors
        return GatherBackward.apply(g, indices, ctx.dim, ctx.input_shape), None


class Cummin(Cummax):
    op, result = ReduceOp.MIN, _CumminResult


def _cumulative_extreme(fn, name, input, dim):
    if not isinstance(dim, (numbers.Integral, np.integer)):
        raise TypeError(f"{name}(): argument 'dim' (position 2) must be int, not "
                        f"{type(dim).__name__}")
    if input.ndim == 0 and dim not in (0, -1):
        raise IndexError(f"{name}(): Expected reduction dim -1 or 0 for scalar but got {dim}")
    refuse_complex(name, input)
    return fn.apply(input, normalize_dim(dim, input.ndim))


def cummax(input, dim):
    """(values, indices): the maximum so far along dim and where it is (the last of equal
    values; NaN propagates)."""
    return _cumulative_extreme(Cummax, "cummax", input, dim)


def cummin(input, dim):
    """(values, indices): the minimum so far along dim and where it is."""
    return _cumulative_extreme(Cummin, "cummin", input, dim)


# ---- counting: bincount, histc ----------------------------------------------------------------
def _host_values(*tensors):
    """Python numbers of 0-d tensors, in one transfer from the device."""
    with no_grad():
        return stack(tensors).tolist()


def _counts(index, weights, length, dtype):
    """zeros(length) with weights (1 when None) added at index: the one scatter both counters
    share."""
    out = NDArray.full((length,), 0, dtype, index.device)
    if index.numel():
        ones = weights._data if weights is not None else _E.scalar_array(
            1, dtype, index.device).expand(index._data.shape)
        out.scatter_into(0, index._data, ones, True)
    return wrap(out)


def bincount(input, weights=None, minlength=0):
    """How often each non-negative integer occurs in the 1-d input (weights summed instead when
    given), over max(input) + 1 or minlength bins. No gradient (torch has none either)."""
    if input.dtype.is_floating_point or input.dtype is dtypes.bool_:
        raise _not_implemented("bincount", input)
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if input.ndim == 1 and input.numel() == 0:
        return wrap(NDArray.full((minlength,), 0, dtypes.int64, input.device))
    if input.ndim != 1 or _host_values(_R.amin(input))[0] < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is not None and (weights.ndim != 1 or weights.shape[0] != input.shape[0]):
        raise RuntimeError("weights should be 1-d and have the same length as input")
    length = max(int(_host_values(_R.amax(input))[0]) + 1, minlength)
    dtype = dtypes.int64
    if weights is not None:
        dtype = weights.dtype if weights.dtype.is_floating_point else dtypes.float64
        weights = _E.cast(weights.detach(), dtype)
    return _counts(_E.cast(input, dtypes.int64), weights, length, dtype)


def _histc_range(input, min, max):
    """torch's outer bin edges: (min, max), else the data's range, widened by 1 both ways when
    empty; it must be finite and increasing."""
    low, high = float(min), float(max)
    if low == high and input.numel():
        low, high = _host_values(_R.amin(input), _R.amax(input))
    if low == high:
        low, high = low - 1, high + 1
    if not (math.isfinite(low) and math.isfinite(high)):
        raise RuntimeError(f"torch.histc: range of [{low:g}, {high:g}] is not finite")
    if not low < high:
        raise RuntimeError("torch.histc: max must be larger than min")
    return low, high


def histc(input, bins=100, min=0, max=0):
    """Counts of input in `bins` equal bins over [min, max] (the data's range when min == max);
    values outside, and NaN, are left out; max itself falls in the last bin."""
    if not input.dtype.is_floating_point:
        raise _not_implemented("histogram", input)
    low, high = _histc_range(input, min, max)
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    with no_grad():
        x = input.detach().reshape(-1)
        # torch's linear map, in the input's dtype, truncated toward zero
        left, right = (wrap(_E.scalar_array(v, x.dtype, x.device)) for v in (low, high))
        position = _E.cast((x - left) * bins / (right - left), dtypes.int64).clamp(max=bins - 1)
        inside = (x >= low) & (x <= high)
        index = _E.where(inside, position, _R._zero_like(position))
        return _counts(index, _E.cast(inside, input.dtype), bins, input.dtype)


def histogram(input, bins=100, *, range=None, weight=None, density=False):
    """(hist, bin_edges): weighted counts of input in `bins` equal bins over `range` (the data's
    range, widened by 0.5 both ways when it is one value) or between given edges; the last bin
    includes its right edge; density divides by the total and the bin widths."""
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f'"histogramdd" not implemented for '
                                  f"'{_TORCH_NAMES[input.dtype.name]}'")
    if weight is not None and weight.dtype is not input.dtype:
        raise RuntimeError("torch.histogramdd: if weight tensor is provided, input tensor and "
                           "weight tensor should have the same dtype, but got input("
                           f"{_E.C_NAMES[input.dtype.name]}), and weight("
                           f"{_E.C_NAMES[weight.dtype.name]})")
    edges = _histogram_edges(input, bins, range)
    n_bins = edges.numel() - 1
    with no_grad():
        x = input.detach().reshape(-1)
        position = searchsorted(edges, x, right=True) - 1
        position = _E.where(x == edges[-1], n_bins - 1, position)
        inside = (x >= edges[0]) & (x <= edges[-1])
        counted = _E.cast(inside, input.dtype)
        if weight is not None:
            counted = counted * weight.detach().reshape(-1)
        hist = _counts(_E.where(inside, position, 0), counted, n_bins, input.dtype)
        if density:
            hist = hist / (hist.sum() * diff(edges))
    return _HistogramResult(hist, edges)


def _histogram_edges(input, bins, range):
    if isinstance(bins, Tensor):
        if bins.ndim != 1 or bins.numel() < 1:
            raise RuntimeError("torch.histogram(): bins tensor should have one dimension and at "
                               f"least 1 element, but got {bins.ndim} dimensions")
        return _E.cast(bins.detach(), input.dtype)
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    if range is not None:
        low, high = (float(v) for v in range)
    elif input.numel():
        low, high = _host_values(_R.amin(input), _R.amax(input))
        if not (math.isfinite(low) and math.isfinite(high)):
            raise RuntimeError(f"torch.histogramdd: dimension 0's range [{low:g}, {high:g}] is "
                               "not finite")
    else:
        low, high = 0.0, 1.0
    if low == high:
        low, high = low - 0.5, high + 0.5
    if low > high:
        raise RuntimeError(f"torch.histogram(): min should not exceed max, but got min {low} max "
                           f"{high} for dimension 0")
    return linspace(low, high, bins + 1, dtype=input.dtype, device=input.device)


# ---- mode -------------------------------------------------------------------------------------
ModePicked = _node("ModeBackward0")


def _nd_mode_positions(nd, dim):
    """(sorted values, source indices, kept-dim position in them) of each row's mode: the
    longest run of equal values in the ascending stable sort, the first (smallest) such run,
    at its last element (so the index is the last occurrence, as torch's CPU gives)."""
    with no_grad():
        values, order = (wrap(x) for x in _sorted_along(nd, dim, False))
        n = values.shape[dim]
        ends = [values.narrow(dim, 1, n - 1) != values.narrow(dim, 0, n - 1)]
        edge = wrap(NDArray.full(values.shape[:dim] + (1,) + values.shape[dim + 1:], True,
                                 dtypes.bool_, nd.device))
        starts, ends = cat([edge] + ends, dim), cat(ends + [edge], dim)
        position = arange(n, dtype=dtypes.int64, device=nd.device).reshape(
            (n,) + (1,) * (nd.ndim - dim - 1))
        run_start = cummax(_E.where(starts, position, _R._zero_like(position)), dim).values
        run_length = _E.where(ends, position - run_start + 1, _R._zero_like(position))
        return values, order, _R.argmax(run_length, dim, keepdim=True)


def mode(input, dim=-1, keepdim=False):
    """(values, indices) of the most frequent value along dim (the smallest of equally frequent
    ones) and its last position."""
    _R._check_int_dim("mode", dim)
    dim = normalize_dim(dim, input.ndim)
    refuse_complex("mode", input)
    nd = input._data
    if not nd.ndim:
        indices = NDArray.full((), 0, dtypes.int64, nd.device)
        return _picked(_ModeResult, input, nd.copy(), indices, dim, ModePicked, keepdim)
    _R._check_nonempty("mode", nd.shape, (dim,), full=False)
    values, order, at = _nd_mode_positions(nd, dim)
    return _picked(_ModeResult, input, values._data.gather(dim, at._data),
                   order._data.gather(dim, at._data), dim, ModePicked, keepdim)


# ---- quantile / nanquantile -------------------------------------------------------------------
_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile_q(input, q):
    """q as a 1-d tensor of input's dtype (and whether it was a scalar), after torch's checks
    (whose messages say quantile() for nanquantile too)."""
    scalar = not isinstance(q, Tensor)
    if scalar and not 0 <= q <= 1:
        raise RuntimeError(f"quantile() q must be in the range [0, 1] but got {float(q):g}")
    if input.numel() == 0:
        raise RuntimeError("quantile() input tensor must be non-empty")
    if not scalar and q.ndim > 1:
        raise RuntimeError("quantile() q must be a scalar or 1D tensor")
    if input.dtype not in (dtypes.float32, dtypes.float64):
        raise RuntimeError("quantile() input tensor must be either float or double dtype")
    if scalar:
        return wrap(NDArray.full((1,), float(q), input.dtype, input.device)), True
    if q.dtype is not input.dtype:
        raise RuntimeError("quantile() q tensor must be same dtype as the input tensor")
    if q.device != input.device:
        raise RuntimeError("quantile() q tensor must be on the same device as the input tensor")
    if q.numel() and not bool(_R.all((q >= 0) & (q <= 1))):
        raise RuntimeError("quantile() q values must be in the range [0, 1]")
    return q.reshape(-1), q.ndim == 0


def _sorted_rows(input, dim, keepdim):
    """input sorted along dim, moved last, shaped (reduced output shape..., n): the rows the
    quantiles are read from (through sort's gradient)."""
    if dim is None:
        rows, reduced = input.reshape(-1), (1,) * input.ndim if keepdim else ()
    else:
        rows = input.movedim(dim, -1) if input.ndim else input.reshape(1)
        reduced = list(input.shape)
        if reduced:
            reduced[dim:dim + 1] = [1] if keepdim else []
        reduced = tuple(reduced)
    values = sort(rows, -1).values
    return values.reshape(reduced + (values.shape[-1],))


def _ranks(q, values, ignore_nan, interpolation):
    """Fractional positions (…, len(q)) of the quantiles in the sorted rows, as torch computes
    them: a row with NaN reads its last element (NaN), unless NaNs are ignored."""
    nan = _compare.isnan(values)
    if ignore_nan:
        count = _R.sum(_compare.logical_not(nan), -1, keepdim=True)
        ranks = q * (count - 1)
        ranks = _E.where(ranks < 0, _R._zero_like(ranks), ranks)    # no values: the first
    else:
        last = values.shape[-1] - 1
        ranks = _E.where(_R.any(nan, -1, keepdim=True), wrap(_E.scalar_array(
            last, q.dtype, q.device)), q * last)
    if interpolation == "lower":
        return _E.floor(ranks)
    if interpolation == "higher":
        return _E.ceil(ranks)
    if interpolation == "nearest":
        return _E.round(ranks)
    return ranks


def _quantile(name, input, q, dim, keepdim, interpolation, ignore_nan):
    refuse_complex("quantile", input)
    if dim is not None:
        _R._check_int_dim(name, dim)
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError("quantile() interpolation must be one of linear, lower, higher, "
                           f"midpoint or nearest, but got {interpolation}")
    q, scalar_q = _quantile_q(input, q)
    if dim is not None:
        dim = normalize_dim(dim, input.ndim)
    values = _sorted_rows(input, dim, keepdim)
    ranks = _ranks(q, values, ignore_nan, interpolation)
    below = _E.cast(ranks, dtypes.int64)
    result = values.gather(-1, below)
    if interpolation in ("linear", "midpoint"):
        above = values.gather(-1, _E.cast(_E.ceil(ranks), dtypes.int64))
        weight = 0.5 if interpolation == "midpoint" else ranks - below
        result = result.lerp(above, weight)
    return result.squeeze(-1) if scalar_q else result.movedim(-1, 0)


def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """The q-th quantiles (q a float or a 1-d tensor, its axis first in the result) along dim,
    or of every element; NaN where a row has NaN."""
    return _quantile("quantile", input, q, dim, keepdim, interpolation, False)


def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """quantile ignoring NaNs (NaN only for rows that are all NaN)."""
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, True)


# ---- searchsorted / bucketize -----------------------------------------------------------------
def _check_side(side, right):
    if side is None:
        return right
    if side not in ("left", "right"):
        raise RuntimeError("torch.searchsorted(): side can only be 'left' or 'right' but got "
                           f"{side}")
    if right and side != "right":
        raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got "
                           f"side of {side} while right was True")
    return side == "right"


def _check_sorter(sorter, boundaries):
    if sorter.device != boundaries.device:
        raise RuntimeError("torch.searchsorted(): sorter and boundaries must be on the same "
                           "device")
    if tuple(sorter.shape) != tuple(boundaries.shape):
        raise RuntimeError("torch.searchsorted(): boundary and sorter must have the same size, "
                           f"but got boundary tensor {shape_str(boundaries.shape)}and got sorter "
                           f"tensor {shape_str(sorter.shape)}")
    if sorter.dtype is not dtypes.int64:
        raise RuntimeError("torch.searchsorted(): sorter must be a tensor of long dtype but got "
                           f"dtype {_TORCH_NAMES[sorter.dtype.name]}")
    if sorter.numel():
        low, high = _host_values(_R.amin(sorter), _R.amax(sorter))
        if low < 0 or high >= sorter.shape[-1]:
            raise RuntimeError("torch.searchsorted(): sorter index out of range")


def _check_search_shapes(boundaries, input):
    if input.ndim == 0 and boundaries.ndim != 1:
        raise RuntimeError("torch.searchsorted(): input value can be a scalar only when "
                           "boundaries tensor dimension is 1, but we got boundaries tensor "
                           f"dim({boundaries.ndim}) and input value's dim({input.ndim}) "
                           f"numel({input.numel()})")
    if boundaries.ndim == 0:
        raise RuntimeError("torch.searchsorted(): boundaries tensor should have positive "
                           "dimension, but got 0 dimension")
    if boundaries.ndim != 1 and (boundaries.ndim != input.ndim
                                 or boundaries.shape[:-1] != input.shape[:-1]):
        raise RuntimeError("torch.searchsorted(): boundaries tensor should be 1 dimension or the "
                           "first N-1 dimensions of boundaries tensor and input value tensor "
                           f"must match, but we got boundaries tensor "
                           f"{shape_str(boundaries.shape)} and input value tensor "
                           f"{shape_str(input.shape)}")


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None,
                 sorter=None):
    """Indices (int64) where each value of input would be inserted into the innermost rows of
    sorted_sequence to keep them sorted (after equal values when `right` or side='right')."""
    right = _check_side(side, right)
    if not isinstance(input, Tensor):       # a Python number: a 0-d result
        input = wrap(NDArray.full((), input, _E.result_type(input), sorted_sequence.device))
    if input.device != sorted_sequence.device:
        raise RuntimeError("torch.searchsorted(): boundaries and input value tensors should "
                           "have same device type, but got boundaries tensor device type "
                           f"{sorted_sequence.device.type} and input value tensor device type "
                           f"{input.device.type}")
    refuse_complex("searchsorted", sorted_sequence, input)
    if sorter is not None:
        _check_sorter(sorter, sorted_sequence)
    _check_search_shapes(sorted_sequence, input)
    if out_int32:
        raise NotImplementedError("searchsorted(out_int32=True): minitorch has no int32 dtype")
    dtype = dtypes.promote_types(sorted_sequence.dtype, input.dtype)
    boundaries = _E.cast(sorted_sequence.detach(), dtype)._data.compact()
    values = _E.cast(input.detach(), dtype)._data.compact()
    out = values._new(values.shape, dtypes.int64)
    if out.size:
        m = values.size if boundaries.ndim == 1 else values.shape[-1]
        values.backend.searchsorted(boundaries.flat(), values.flat(), out.buffer,
                                    boundaries.shape[-1], m, right,
                                    None if sorter is None else sorter._data.compact().flat())
    return wrap(out)


def bucketize(input, boundaries, *, out_int32=False, right=False):
    """The bucket of each value of input among the 1-d sorted boundaries: searchsorted."""
    if boundaries.ndim != 1:
        raise RuntimeError("boundaries tensor must be 1 dimension, but got "
                           f"dim({boundaries.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


# ---- membership -------------------------------------------------------------------------------
def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Whether each element occurs among test_elements (either may be a Python number): a
    binary search of each element in the sorted test elements."""
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError(f"isin() received an invalid combination of arguments - got "
                        f"({type(elements).__name__}, {type(test_elements).__name__})")
    if dtypes.bool_ in (_E._dtype_of(elements), _E._dtype_of(test_elements)):
        raise RuntimeError("Unsupported input type encountered for isin(): Bool")
    elements, test_elements = _E.promote(elements, test_elements)
    with no_grad():
        found = _found(elements, sort(test_elements.reshape(-1)).values)
        return ~found if invert else found


def _found(elements, boundaries):
    """elements == the boundary each would be inserted before (False when there is none). The
    search sees the trailing NaNs as +inf, which keeps the row sorted for the binary search;
    a real +inf sorts before them, so it is still found."""
    if boundaries.numel() == 0:
        return zeros_like(elements, dtype=dtypes.bool_)
    searchable = boundaries
    if boundaries.dtype.is_floating_point:
        searchable = _E.where(_compare.isnan(boundaries), math.inf, boundaries)
    position = searchsorted(searchable, elements).clamp(max=boundaries.numel() - 1)
    return boundaries[position] == elements


# ---- covariance -------------------------------------------------------------------------------
def cov(input, *, correction=1, fweights=None, aweights=None):
    """The covariance matrix of the variables in input's rows (observations in columns), with
    optional integer frequency weights and float observation weights (torch's estimator)."""
    if input.ndim > 2:
        raise RuntimeError("cov(): expected input to have two or fewer dimensions but got an "
                           f"input with {input.ndim} dimensions")
    x = _E._float_input(input.reshape(1, -1) if input.ndim < 2 else input)
    weights = _observation_weights(x, fweights, aweights)
    if weights is None:
        mean = _R.mean(x, 1, keepdim=True)
        scale = x.shape[1] - correction
    else:
        total = _R.sum(weights)
        mean = _R.sum(x * weights, 1, keepdim=True) / total
        scale = total
        if correction:
            scale = total - correction * (
                _R.sum(weights * aweights) / total if aweights is not None else 1)
    centred = x - mean
    # the conjugate transpose: a complex covariance is E[(x - μ)(x - μ)^H]
    product = centred @ (centred if weights is None else centred * weights).mT.conj()
    return (product / _nonpositive_to_zero(scale)).squeeze()


def _observation_weights(x, fweights, aweights):
    """fweights * aweights (either may be missing; None when both are), checked like torch."""
    weights = None
    for name, w in (("fweights", fweights), ("aweights", aweights)):
        if w is None:
            continue
        if w.ndim > 1:
            raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got "
                               f"{name} with {w.ndim} dimensions")
        if w.numel() != x.shape[1]:
            raise RuntimeError(f"cov(): expected {name} to have the same numel as there are "
                               f"observations in the input but got {w.numel()} != {x.shape[1]}")
        if name == "fweights" and (w.dtype.is_floating_point or w.dtype is dtypes.bool_):
            raise RuntimeError("cov(): expected fweights to have integral dtype but got fweights "
                               f"with {_TORCH_NAMES[w.dtype.name]} dtype")
        if name == "aweights" and not w.dtype.is_floating_point:
            raise RuntimeError("cov(): expected aweights to have floating point dtype but got "
                               f"aweights with {_TORCH_NAMES[w.dtype.name]} dtype")
        if w.numel() and _host_values(_R.amin(w))[0] < 0:
            raise RuntimeError(f"cov(): {name} cannot be negative")
        weights = w if weights is None else weights * w
    return weights


def _nonpositive_to_zero(scale):
    """torch's divisor: a non-positive number of degrees of freedom becomes 0 (inf/nan results),
    with its warning."""
    value = scale.item() if isinstance(scale, Tensor) else scale
    if value <= 0:
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less "
                      "than the number of observations.", UserWarning)
        return scale * 0
    return scale


def corrcoef(input):
    """Pearson correlation coefficients of input's rows, clipped to [-1, 1]."""
    c = cov(input)
    if c.ndim == 0:
        return c / c
    std = _E.sqrt(c.diagonal())
    c = c / std.unsqueeze(1) / std.unsqueeze(0)
    if c.dtype.is_complex:          # torch clips each part
        return _complex.complex(_E.clamp(c.real, -1, 1), _E.clamp(c.imag, -1, 1))
    return _E.clamp(c, -1, 1)


# ---- integration ------------------------------------------------------------------------------
def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The integral of y along dim by the trapezoidal rule, at sample points x (or spaced dx)."""
    return _R.sum(_trapezoids(y, x, dx, dim, "trapezoid"), dim)


def trapz(y, x=None, *, dx=None, dim=-1):
    """Trapezoid-rule integral of y along dim, over x or a spacing dx (torch.trapz, same as
    trapezoid)."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running integrals (one per interval) of trapezoid."""
    return _R.cumsum(_trapezoids(y, x, dx, dim, "cumulative_trapezoid"), dim)


def _trapezoids(y, x, dx, dim, name):
    """The area of each interval along dim: (y[i] + y[i+1]) / 2 * (x[i+1] - x[i])."""
    if x is not None and not isinstance(x, Tensor):
        raise TypeError(f"{name}() received an invalid combination of arguments - got (Tensor, "
                        f"{type(x).__name__})")
    y = _E._float_input(y)
    dim = normalize_dim(dim, y.ndim)
    n = y.shape[dim] if y.ndim else 1
    ends = _along_dim(y, dim, 1, n) + _along_dim(y, dim, 0, n - 1)
    if x is None:
        return ends * ((1.0 if dx is None else dx) / 2)
    if x.ndim == 1:
        if x.shape[0] != n:
            raise RuntimeError(f"{name}: There must be one `x` value for each sample point")
        x = x.reshape([n if d == dim else 1 for d in range(y.ndim)])
    return ends * diff(x, dim=dim if x.ndim == y.ndim else -1) / 2


def _along_dim(t, dim, start, stop):
    """t[..., start:stop] along dim (empty when stop <= start)."""
    return t.narrow(dim, min(start, t.shape[dim]), max(stop - start, 0))
