"""A separable gather over the last one to three axes as one node: out[..., a, b, c] =
input[..., rows_d[a], rows_h[b], rows_w[c]] for given source tables. Reflect / replicate /
circular padding (functions/padding.py) and nearest / nearest-exact interpolation
(nn/functional/vision.py) are this with their own tables: one kernel pass forward and one
backward, where one index_select per axis (and one index_add per axis backward) were.
"""
import numpy as np

from ..autograd import KernelFunction
from ..ndarray import NDArray
from ..tensor import wrap

__all__ = []


def _layout(shape, tables):
    """(planes, in_size, out_size) of the kernel's (planes, D, H, W) view, missing leading
    spatial axes as size 1."""
    k = len(tables)
    spatial = tuple(shape[len(shape) - k:])
    planes = 1
    for size in shape[:len(shape) - k]:
        planes *= size
    in_size = (1,) * (3 - k) + spatial
    out_size = (1,) * (3 - k) + tuple(len(t) for t in tables)
    return planes, in_size, out_size


def _index_buffer(tables, device):
    """The three tables (the unused ones [0]) as one int64 buffer on `device`."""
    full = [[0]] * (3 - len(tables)) + [list(t) for t in tables]
    flat = np.fromiter((i for t in full for i in t), dtype=np.int64)
    return NDArray.from_numpy(flat, device=device)


class GridGather(KernelFunction):
    """input[..., tables[0][a], tables[1][b], ...] over the last len(tables) axes (1 to 3);
    every table entry must be a valid position (the callers build them)."""

    @staticmethod
    def forward(ctx, input, tables):
        x = input._data.compact()
        planes, in_size, out_size = _layout(x.shape, tables)
        index = _index_buffer(tables, x.device)
        out = x._new(x.shape[:x.ndim - len(tables)] + out_size[3 - len(tables):])
        x.backend.grid_gather(x.flat(), index.buffer, out.buffer, planes, in_size, out_size)
        ctx.tables, ctx.input_shape = tables, x.shape
        return wrap(out)

    @staticmethod
    def backward(ctx, g):
        return GridScatterAdd.apply(g, ctx.tables, ctx.input_shape), None


class GridScatterAdd(KernelFunction):
    """GridGather's adjoint: each gradient added at its source position (linear in g, so its
    own backward is the gather again)."""

    @staticmethod
    def forward(ctx, g, tables, input_shape):
        grad = g._data.compact()
        planes, in_size, out_size = _layout(input_shape, tables)
        index = _index_buffer(tables, grad.device)
        out = grad._new(tuple(input_shape))
        grad.backend.grid_scatter_add(grad.flat(), index.buffer, out.buffer, planes, in_size,
                                      out_size)
        ctx.tables = tables
        return wrap(out)

    @staticmethod
    def backward(ctx, gg):
        return GridGather.apply(gg, ctx.tables), None, None


def grid_gather(input, tables):
    """The separable gather of input's last len(tables) axes (see GridGather)."""
    return GridGather.apply(input, tuple(tuple(t) for t in tables))
