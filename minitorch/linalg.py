"""torch.linalg: norms, products and the factorizations, under torch.linalg's names.

The norms and products here are compositions of existing ops (so their gradients come from the
ops they are made of); the factorizations live in functions/factor.py (LU, Cholesky, triangular
solves) and functions/spectral.py (eigh, SVD, QR), each of which lists its torch.linalg names in
a LINALG table that this module publishes.
"""
import math
import operator


from .functions import elementwise as _E, factor as _factor, linalg as _L, reduce as _R
from .functions import eig as _eig, norms as _norms, spectral as _spectral
from .functions.autocast_policy import LOWER, autocast_op
from .ndarray import normalize_dim

matmul = _L.matmul
multi_dot = _L.multi_dot
vector_norm = _norms.vector_norm
matrix_norm = _norms.matrix_norm
norm = _norms.linalg_norm

# ---- products ---------------------------------------------------------------------------------
@autocast_op(LOWER)
def vecdot(x, y, *, dim=-1):
    """Dot products of the vectors along dim (batch dims broadcast)."""
    if x.dtype is not y.dtype:
        raise RuntimeError("linalg.vecdot: Expected x and y to have the same dtype, but found "
                           f"x of type {_E.TORCH_NAMES[x.dtype.name]} and y of type "
                           f"{_E.TORCH_NAMES[y.dtype.name]} instead")
    return _R.sum(x * y, dim)


def cross(input, other, *, dim=-1):
    """The cross product of 3-vectors along dim (batch dims broadcast)."""
    if input.ndim != other.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    return _L.cross(input, other, dim=dim)


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """View of the diagonal of A (offset from the main one) over dims dim1, dim2
    (torch.linalg.diagonal)."""
    return _L.diagonal(A, offset, dim1, dim2)


def vander(x, *, N=None):
    """Columns x^0, x^1, ..., x^(N-1) (increasing powers, unlike torch.vander) for each vector
    along the last dim."""
    n = (x.shape[-1] if x.ndim else 1) if N is None else operator.index(N)
    if n <= 1:
        raise RuntimeError("N must be greater than 1.")
    if x.ndim < 1:
        raise RuntimeError("linalg.vander: x must have at least one dimension.")
    return _L.powers_along_last(x, n)


# ---- everything the factorization modules list under torch.linalg's names --------------------
globals().update(_factor.LINALG)
globals().update(_spectral.LINALG)
globals().update(_eig.LINALG)


def tensorinv(A, ind=2):
    """The inverse of A seen as a matrix from its first `ind` dims to the rest."""
    ind = operator.index(ind)
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    rows, columns = A.shape[:ind], A.shape[ind:]
    size = math.prod(rows)
    if size != math.prod(columns):
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {math.prod(columns)} != {size}")
    return _factor.LINALG["inv"](A.reshape(size, size)).reshape(*columns, *rows)


def tensorsolve(A, B, dims=None):
    """X with tensordot(A, X, X.ndim) = B: a linear solve with A flattened into a matrix."""
    if dims is not None:        # those dims of A move to the end
        moved = [normalize_dim(d, A.ndim) for d in dims]
        A = A.permute(*[d for d in range(A.ndim) if d not in moved], *moved)
    solution_shape = A.shape[B.ndim:]
    size = math.prod(solution_shape)
    rows = math.prod(A.shape[:B.ndim])
    if size != rows:
        raise RuntimeError("Expected self to satisfy the requirement prod(self.shape[other.ndim:"
                           f"]) == prod(self.shape[:other.ndim]), but got {size} != {rows}")
    solved = _factor.LINALG["solve"](A.reshape(rows, size), B.reshape(rows))
    return solved.reshape(solution_shape)


__all__ = sorted(
    ["vector_norm", "matrix_norm", "norm", "vecdot", "multi_dot", "cross", "diagonal", "matmul",
     "vander", "tensorinv", "tensorsolve"]
    + [name for name in _factor.LINALG] + [name for name in _spectral.LINALG])
