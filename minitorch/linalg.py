"""torch.linalg: norms, products and the factorizations, under torch.linalg's names.

The norms and products here are compositions of existing ops (so their gradients come from the
ops they are made of); the factorizations live in functions/factor.py (LU, Cholesky, triangular
solves) and functions/spectral.py (eigh, SVD, QR), each of which lists its torch.linalg names in
a LINALG table that this module publishes.
"""
import math
import numbers
import operator

import numpy as np

from .functions import elementwise as _E, factor as _factor, linalg as _L, reduce as _R
from .functions import spectral as _spectral
from .ndarray import normalize_dim

matmul = _L.matmul
multi_dot = _L.multi_dot

_MATRIX_ORDERS = ("fro", "nuc", math.inf, -math.inf, 1, -1, 2, -2)


# ---- norms ------------------------------------------------------------------------------------
def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """(sum |x|^ord)^(1/ord) over dim (all dims when None); ord 0 counts non-zeros, ±inf gives
    the largest/smallest magnitude."""
    if isinstance(ord, str):
        raise RuntimeError(f"linalg.vector_norm: Order {ord} not supported.")
    return _R.norm(x, float(ord), dim, keepdim, dtype=dtype)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    """'fro', 'nuc', ±inf (max/min row sum of |A|), ±1 (column sums) or ±2 (singular values)
    over the two dims in `dim`."""
    _check_matrix_input(A, "linalg.matrix_norm")
    if ord not in _MATRIX_ORDERS:
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    rows, columns = _matrix_dims(dim, A.ndim)
    if dtype is not None:
        A = _E.cast(A, dtype)
    if ord == "fro":
        return _R.norm(A, 2.0, (rows, columns), keepdim)
    if ord in ("nuc", 2, -2):
        return _spectral.matrix_norm_spectral(A, ord, (rows, columns), keepdim)
    return _sum_then_extreme(A, ord, rows, columns, keepdim)


def _check_matrix_input(A, name):
    if A.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    if not A.dtype.is_floating_point:
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got "
                           f"{_E.TORCH_NAMES[A.dtype.name]}")


def _as_dims(dim):
    """An int dim or a sequence of them as a tuple."""
    return (dim,) if isinstance(dim, (numbers.Integral, np.integer)) else tuple(dim)


def _matrix_dims(dim, ndim):
    """The two (normalised, distinct) dims a matrix norm reduces."""
    dims = _as_dims(dim)
    if len(dims) != 2:
        raise RuntimeError("linalg.matrix_norm: dim must be a 2-tuple. Got "
                           + " ".join(str(d) for d in dims))
    rows, columns = (normalize_dim(d, ndim) for d in dims)
    if rows == columns:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dims[0]}, "
                           f"{dims[1]})")
    return rows, columns


def _sum_then_extreme(A, ord, rows, columns, keepdim):
    """torch's rule: ±1 sums |A| down the rows then takes the extreme over columns; ±inf the
    other way round."""
    summed, extreme = (rows, columns) if abs(ord) == 1 else (columns, rows)
    sums = _R.norm(A, 1.0, summed, keepdim=keepdim)
    if not keepdim and summed < extreme:
        extreme -= 1
    pick = _R.amax if ord > 0 else _R.amin
    return pick(sums, extreme, keepdim)


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):
    """A vector norm over one dim (or all, when neither ord nor dim is given), a matrix norm
    over two (or over a 2-D input's both when only ord is given)."""
    if dim is not None:
        dims = _as_dims(dim)
        if len(dims) not in (1, 2):
            raise RuntimeError("linalg.norm: If dim is specified, it must be of length 1 or 2. "
                               f"Got {list(dims)}")
    elif ord is not None:
        if A.ndim not in (1, 2):
            raise RuntimeError("linalg.norm: If dim is not specified but ord is, the input "
                               f"must be 1D or 2D. Got {A.ndim}D.")
        dims = tuple(range(A.ndim))
    else:
        return vector_norm(A, 2, None, keepdim, dtype=dtype)
    if len(dims) == 2 or isinstance(ord, str):
        return matrix_norm(A, "fro" if ord is None else ord, dims, keepdim, dtype=dtype)
    return vector_norm(A, 2 if ord is None else ord, dims, keepdim, dtype=dtype)


# ---- products ---------------------------------------------------------------------------------
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
