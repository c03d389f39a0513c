"""torch.nn.functional.embedding's node, Embedding: rows of a weight picked by integer indices
(one index_select on NDArrays), the gradient added back into the weight's rows (index_add), or,
with sparse=True, handed back as a sparse COO gradient in torch's layout."""
from .. import dtypes
from ..autograd import KernelFunction
from ..tensor import ones, wrap, zeros
from .index import index_add_to_zeros, index_select
from .sparse_coo import SparseCooTensor

__all__ = []   # nn/functional/sparse.py's embedding runs it


class Embedding(KernelFunction):
    """Rows of the weight picked by integer indices (one index_select). Backward adds each
    gradient row into its weight row (one index_add), skipping padding_idx and dividing by
    each index's count for scale_grad_by_freq; with sparse it returns those rows as a sparse
    COO gradient instead (torch's embedding_sparse_backward)."""

    @staticmethod
    def forward(ctx, weight, indices, padding_idx, scale_grad_by_freq, sparse=False):
        flat = indices._data.reshape((-1,))
        try:
            rows = weight._data.index_select(0, flat)
        except IndexError:
            raise IndexError("index out of range in self") from None
        ctx.save_for_backward(indices)
        ctx.weight_shape, ctx.padding_idx = weight._data.shape, padding_idx
        ctx.scale_grad_by_freq, ctx.sparse = scale_grad_by_freq, sparse
        return wrap(rows.reshape(indices._data.shape + (weight._data.shape[1],)))

    @staticmethod
    def backward(ctx, g):
        indices, = ctx.saved_tensors
        flat = indices.reshape(-1)
        rows = g.reshape(-1, ctx.weight_shape[1])
        if ctx.sparse:
            grad = _sparse_gradient(ctx, flat, rows)
            # Only a leaf stores a sparse gradient; the other nodes' backward rules are dense
            # (torch would pass the sparse tensor on; the sum it describes is the same).
            return (grad if _weight_is_leaf(ctx) else grad.to_dense()), None, None, None, None
        if ctx.padding_idx is not None:
            rows = rows.masked_fill((flat == ctx.padding_idx).unsqueeze(1), 0.0)
        if ctx.scale_grad_by_freq:
            each = ones(flat.shape[0], dtype=g.dtype, device=g.device)
            counts = zeros(ctx.weight_shape[0], dtype=g.dtype, device=g.device).index_add(
                0, flat, each)
            rows = rows / counts.index_select(0, flat).unsqueeze(1)
        return index_add_to_zeros(ctx.weight_shape, flat, rows, 0), None, None, None, None


def _sparse_gradient(ctx, flat, rows):
    """torch's layout: indices (1, nnz), one entry per looked-up index in input order
    (duplicates kept, uncoalesced), values the output gradient's rows; padding_idx's entries
    are left out."""
    if ctx.scale_grad_by_freq:
        raise RuntimeError("embedding_backward: scale_grad_by_freq not supported with sparse "
                           "gradients")
    if ctx.padding_idx is not None:
        keep = (flat != ctx.padding_idx).nonzero().reshape(-1)
        flat, values = index_select(flat, 0, keep), index_select(rows, 0, keep)
    else:   # rows may view the output's gradient, which other nodes hold: .grad gets a copy
        values = rows.clone()
    indices = flat.reshape(1, -1).clone().to(dtypes.int64)
    return SparseCooTensor(indices, values, ctx.weight_shape, coalesced=indices.shape[1] <= 1)


def _weight_is_leaf(ctx):
    """Whether the weight's gradient goes straight into a leaf's .grad (edge output_nr -1)."""
    edge = ctx.next_edges[0]
    return edge is not None and edge[1] == -1
