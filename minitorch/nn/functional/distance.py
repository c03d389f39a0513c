"""torch.nn.functional's distances: pairwise_distance, pdist and cosine_similarity.
"""
import minitorch as mt
from ...ndarray import broadcast_shapes


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """torch's formulation: the inputs are broadcast, each is divided by its norm (clamped at
    eps, the clamp not entering the gradient), and the quotients' products are summed."""
    shape = tuple(broadcast_shapes(tuple(x1.shape), tuple(x2.shape)))
    x1, x2 = (x if tuple(x.shape) == shape else x.expand(*shape) for x in (x1, x2))
    norms = []
    for x in (x1, x2):
        norm = x.norm(2, dim, keepdim=True).clone()
        with mt.no_grad():
            norm.clamp_(min=eps)
        norms.append(norm)
    return ((x1 / norms[0]) * (x2 / norms[1])).sum(dim)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """‖x1 - x2 + eps‖_p over the last axis (torch adds eps to the difference)."""
    dim = max(x1.ndim, x2.ndim) - 1
    return (x1 - x2 + eps).norm(p, max(dim, 0), keepdim=keepdim)


def pdist(input, p=2):
    """The p-norm distances between every pair of rows i < j of an (N, M) input, in row-major
    order of the pairs (N·(N-1)/2 values)."""
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if not input.dtype.is_floating_point:
        raise RuntimeError("pdist only supports floating-point dtypes")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    first, second = mt.triu_indices(input.shape[0], input.shape[0], 1, device=input.device)
    return (input[first] - input[second]).norm(p, 1)
