"""Indexing: basic (views) and advanced (integer / boolean tensors) getitem and setitem, and the
index ops gather, scatter, index_select, index_add, masked_fill, take_along_dim."""
from ..autograd import Function
from ..tensor import wrap



__all__ = []
class BasicIndex(Function):
    """t[ints, slices, None, ...]: a view; backward scatters the gradient into zeros."""

    @staticmethod
    def forward(ctx, a, key):
        ctx.input_shape, ctx.key = a._data.shape, key
        view = a._data[key]
        return wrap(view, version=a._version)

    @staticmethod
    def backward(ctx, g):
        from ..tensor import zeros
        grad = zeros(*ctx.input_shape, dtype=g.dtype, device=g.device)
        grad._data[ctx.key] = g._data
        return grad, None


def getitem(t, key):
    return BasicIndex.apply(t, key)
