"""torch.sparse's namespace for the COO support minitorch has (functions/sparse_coo.py): mm,
addmm, sum, softmax / log_softmax, the legacy FloatTensor-style constructors, and the sparse
tensor type's checks."""
from . import dtypes
from .functions.sparse_coo import (sparse_addmm, sparse_coo_tensor, sparse_log_softmax,
                                   sparse_mm, sparse_softmax, sparse_sum)
from .tensor import zeros

__all__ = ["addmm", "mm", "sum", "softmax", "log_softmax", "check_sparse_tensor_invariants",
           "FloatTensor", "DoubleTensor", "LongTensor"]


def mm(mat1, mat2):
    """torch.sparse.mm: a 2-D sparse COO matrix times a dense one (gradients to both: the
    sparse operand's lands on its values), dense times sparse, or sparse times sparse (a
    coalesced sparse result)."""
    return sparse_mm(mat1, mat2)


def addmm(mat, mat1, mat2, *, beta=1.0, alpha=1.0):
    """torch.sparse.addmm: beta * mat + alpha * (mat1 @ mat2), mat1 sparse, mat2 dense."""
    return sparse_addmm(mat, mat1, mat2, beta=beta, alpha=alpha)


def sum(input, dim=None, dtype=None):
    """torch.sparse.sum: a dense 0-d tensor over every dim (or a dense tensor when every sparse
    dim is summed), else a coalesced sparse tensor."""
    return sparse_sum(input, dim, dtype=dtype)


def softmax(input, dim, *, dtype=None):
    """torch.sparse.softmax: over the specified entries along dim (the rest count as -inf)."""
    return sparse_softmax(input, dim, dtype=dtype)


def log_softmax(input, dim, *, dtype=None):
    """torch.sparse.log_softmax."""
    return sparse_log_softmax(input, dim, dtype=dtype)


def _legacy(dtype):
    def constructor(*args, device=None):
        """torch.sparse.<Type>Tensor(indices, values, size) (or (indices, values), or sizes for
        an empty one): the legacy spelling of sparse_coo_tensor with a fixed dtype."""
        if len(args) >= 2 and not isinstance(args[0], int):
            indices, values, *size = args
            return sparse_coo_tensor(indices, values, tuple(size[0]) if size else None,
                                     dtype=dtype, device=device)
        size = tuple(args[0]) if len(args) == 1 and not isinstance(args[0], int) else args
        return sparse_coo_tensor(zeros(len(size), 0, dtype=dtypes.int64),
                                 zeros(0, dtype=dtype), size, device=device)
    return constructor


FloatTensor = _legacy(dtypes.float32)
DoubleTensor = _legacy(dtypes.float64)
LongTensor = _legacy(dtypes.int64)


class check_sparse_tensor_invariants:
    """torch.sparse.check_sparse_tensor_invariants: accepted as a context manager and decorator;
    minitorch always checks the invariants (indices in range) when a sparse tensor is made."""

    def __init__(self, enable=True):
        self.enable = enable

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __call__(self, function):
        return function

    @staticmethod
    def is_enabled():
        """Always True: sparse_coo_tensor checks its indices."""
        return True
