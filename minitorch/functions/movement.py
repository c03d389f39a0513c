"""Shape and movement ops. Views (reshape, permute, expand, …) share storage with their input
and its version counter; their backward maps the gradient back through the inverse view."""
import math
import operator

from ..autograd import Function
from ..ndarray import normalize_dim
from ..tensor import wrap



__all__ = [
    'broadcast_to', 'clone', 'contiguous', 'expand', 'flatten', 'permute', 'reshape', 'squeeze',
    't', 'transpose', 'unsqueeze', 'view',
]
def _view_of(a, data):
    """A Tensor viewing `data`, sharing `a`'s version counter (in-place writes are seen)."""
    return wrap(data, version=a._version) if data.buffer is a._data.buffer else wrap(data)


class Reshape(Function):
    @staticmethod
    def forward(ctx, a, shape):
        ctx.input_shape = a._data.shape
        return _view_of(a, a._data.reshape(shape))

    @staticmethod
    def backward(ctx, g):
        return g.reshape(ctx.input_shape), None


class View(Function):
    @staticmethod
    def forward(ctx, a, shape):
        ctx.input_shape = a._data.shape
        return _view_of(a, a._data.view(shape))

    @staticmethod
    def backward(ctx, g):
        return g.reshape(ctx.input_shape), None


class Expand(Function):
    @staticmethod
    def forward(ctx, a, shape):
        ctx.input_shape = a._data.shape
        return _view_of(a, a._data.expand(shape))

    @staticmethod
    def backward(ctx, g):
        from .reduce import sum_to
        return sum_to(g, ctx.input_shape), None


class Permute(Function):
    @staticmethod
    def forward(ctx, a, dims):
        ctx.dims = tuple(normalize_dim(d, a._data.ndim) for d in dims)
        return _view_of(a, a._data.permute(ctx.dims))

    @staticmethod
    def backward(ctx, g):
        inverse = [0] * len(ctx.dims)
        for i, d in enumerate(ctx.dims):
            inverse[d] = i
        return g.permute(*inverse), None


def _sizes(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        return tuple(operator.index(s) for s in size[0])
    return tuple(operator.index(s) for s in size)


def reshape(input, *shape):
    shape = _sizes(shape)
    if shape == input._data.shape:
        return input
    return Reshape.apply(input, shape)


def view(input, *shape):
    return View.apply(input, _sizes(shape))


def expand(input, *sizes):
    sizes = _sizes(sizes)
    if sizes == input._data.shape:
        return input
    return Expand.apply(input, sizes)


def broadcast_to(input, size):
    return expand(input, *size)


def expand_as(input, other):
    return expand(input, *other.shape)


def permute(input, *dims):
    return Permute.apply(input, _sizes(dims))


def transpose(input, dim0, dim1):
    ndim = input.ndim
    if ndim < 2 and dim0 in (0, -1) and dim1 in (0, -1):
        return input
    d0, d1 = normalize_dim(dim0, ndim), normalize_dim(dim1, ndim)
    order = list(range(ndim))
    order[d0], order[d1] = order[d1], order[d0]
    return Permute.apply(input, tuple(order))


def t(input):
    if input.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                           f"{input.ndim}D")
    return transpose(input, 0, 1) if input.ndim == 2 else input


def squeeze(input, dim=None):
    return reshape(input, wrap(input._data.squeeze(dim)).shape)


def unsqueeze(input, dim):
    return reshape(input, wrap(input._data.unsqueeze(dim)).shape)


def flatten(input, start_dim=0, end_dim=-1):
    if input.ndim == 0:
        return reshape(input, 1)
    start, end = normalize_dim(start_dim, input.ndim), normalize_dim(end_dim, input.ndim)
    if start > end:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    shape = tuple(input.shape)
    return reshape(input, shape[:start] + (math.prod(shape[start:end + 1]),) + shape[end + 1:])


class Clone(Function):
    @staticmethod
    def forward(ctx, a):
        return wrap(a._data.copy())

    @staticmethod
    def backward(ctx, g):
        return g


def clone(input, memory_format=None):
    return Clone.apply(input)


def contiguous(input, memory_format=None):
    return input if input._data.is_compact() else Clone.apply(input)
