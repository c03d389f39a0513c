"""Matrix products: matmul with torch's rank rules, mm, bmm, mv, dot, outer, einsum."""
from ..autograd import Function
from ..tensor import wrap
from .elementwise import promote
from .reduce import sum_to



__all__ = [
    'matmul',
]
class Matmul(Function):
    """(…, m, k) @ (…, k, n) with broadcast batch axes (both inputs at least 2-D)."""

    @staticmethod
    def forward(ctx, a, b):
        # Each input's gradient needs only the other input.
        ctx.save_for_backward(a if b.requires_grad else None, b if a.requires_grad else None)
        ctx.shapes = (a._data.shape, b._data.shape)
        return wrap(a._data.matmul(b._data))

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        a_shape, b_shape = ctx.shapes
        grad_a = sum_to(matmul(g, b.mT), a_shape) if b is not None else None
        grad_b = sum_to(matmul(a.mT, g), b_shape) if a is not None else None
        return grad_a, grad_b


def matmul(input, other):
    """torch.matmul: 1-D operands are promoted to matrices and the added axis removed after."""
    a, b = promote(input, other)
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are "
                           f"{a.ndim}D and {b.ndim}D")
    if a.ndim == 1 and b.ndim == 1:
        if a.shape[0] != b.shape[0]:
            raise RuntimeError(f"inconsistent tensor size, expected tensor [{a.shape[0]}] and src "
                               f"[{b.shape[0]}] to have the same number of elements, but got "
                               f"{a.shape[0]} and {b.shape[0]} elements respectively")
        return Matmul.apply(a.reshape(1, -1), b.reshape(-1, 1)).reshape(())
    if a.ndim == 1:
        return Matmul.apply(a.unsqueeze(0), b).squeeze(-2)
    if b.ndim == 1:
        return Matmul.apply(a, b.unsqueeze(-1)).squeeze(-1)
    return Matmul.apply(a, b)
