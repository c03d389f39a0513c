"""torch.nn.functional.embedding's node, Embedding: rows of a weight picked by integer indices
(one index_select on NDArrays), the gradient added back into the weight's rows (index_add)."""
from ..autograd import KernelFunction
from ..tensor import ones, wrap, zeros

__all__ = []   # nn/functional/sparse.py's embedding runs it


class Embedding(KernelFunction):
    """Rows of the weight picked by integer indices (one index_select). Backward adds each
    gradient row into its weight row (one index_add), skipping padding_idx and dividing by
    each index's count for scale_grad_by_freq."""

    @staticmethod
    def forward(ctx, weight, indices, padding_idx, scale_grad_by_freq):
        flat = indices._data.reshape((-1,))
        try:
            rows = weight._data.index_select(0, flat)
        except IndexError:
            raise IndexError("index out of range in self") from None
        ctx.save_for_backward(indices)
        ctx.weight_shape, ctx.padding_idx = weight._data.shape, padding_idx
        ctx.scale_grad_by_freq = scale_grad_by_freq
        return wrap(rows.reshape(indices._data.shape + (weight._data.shape[1],)))

    @staticmethod
    def backward(ctx, g):
        indices, = ctx.saved_tensors
        flat = indices.reshape(-1)
        rows = g.reshape(-1, ctx.weight_shape[1])
        if ctx.padding_idx is not None:
            rows = rows.masked_fill((flat == ctx.padding_idx).unsqueeze(1), 0.0)
        if ctx.scale_grad_by_freq:
            each = ones(flat.shape[0], dtype=g.dtype, device=g.device)
            counts = zeros(ctx.weight_shape[0], dtype=g.dtype, device=g.device).index_add(
                0, flat, each)
            rows = rows / counts.index_select(0, flat).unsqueeze(1)
        grad = zeros(*ctx.weight_shape, dtype=g.dtype, device=g.device)
        return grad.index_add(0, flat, rows), None, None, None
