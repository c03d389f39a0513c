"""torch.sparse's namespace for the COO basics minitorch has (functions/sparse_coo.py): mm, and
the sparse tensor type's checks."""
from .functions.sparse_coo import sparse_mm

__all__ = ["mm", "check_sparse_tensor_invariants"]


def mm(mat1, mat2):
    """torch.sparse.mm: a 2-D sparse COO matrix times a dense one, gradients to both (the sparse
    operand's gradient lands on its values)."""
    return sparse_mm(mat1, mat2)


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
