"""Reductions: sum, mean, prod, max/min, arg-reductions, var/std, logsumexp, softmax family,
norms, cumulative ops, all/any. Each reduces with one `reduce_last` kernel call."""
from .. import dtypes
from ..autograd import Function
from ..ndarray import normalize_dims
from ..opcodes import ReduceOp
from ..tensor import wrap



__all__ = [
    'sum',
]
class Sum(Function):
    @staticmethod
    def forward(ctx, a, dims, keepdim):
        ctx.input_shape = a._data.shape
        ctx.dims = normalize_dims(dims, a._data.ndim)
        ctx.keepdim = keepdim
        return wrap(a._data.reduce(ReduceOp.SUM, ctx.dims, keepdim))

    @staticmethod
    def backward(ctx, g):
        # A full reduction's 0-d gradient expands directly; otherwise re-insert the axes.
        if not ctx.keepdim and g.ndim:
            g = _restore_dims(g, ctx.dims, len(ctx.input_shape))
        return g.expand(ctx.input_shape), None, None


def _restore_dims(g, dims, ndim):
    """Re-insert reduced axes as size 1 so the gradient broadcasts back over them."""
    shape = list(g.shape)
    for d in dims:
        shape.insert(d, 1)
    return g.reshape(shape) if ndim else g


def sum(input, dim=None, keepdim=False, dtype=None):
    if dtype is not None:
        input = input.to(dtype)
    elif not input.dtype.is_floating_point:
        input = input.to(dtypes.int64)      # torch sums bool/int into int64
    if dim is not None and not isinstance(dim, int) and len(dim) == 0:
        dim = None
    return Sum.apply(input, dim, keepdim)


def sum_to(g, shape):
    """Sum a broadcast gradient back to `shape` (leading axes and size-1 axes)."""
    if g._data.shape == shape:
        return g
    lead = g.ndim - len(shape)
    dims = tuple(range(lead)) + tuple(lead + i for i, size in enumerate(shape)
                                      if size == 1 and g._data.shape[lead + i] != 1)
    result = Sum.apply(g, dims, True) if dims else g
    return result.reshape(shape) if result._data.shape != shape else result
