"""Norms: torch.norm (every p, and 'nuc'), torch.nuclear_norm and torch.linalg's vector_norm,
matrix_norm and norm. The p-norms themselves are reduce.py's LinalgVectorNorm; the nuclear and
spectral norms take singular values from spectral.py, which is why they are gathered here,
above both, instead of in the core reductions."""
import math
import numbers

import numpy as np

from ..ndarray import normalize_dim
from . import elementwise as E
from . import reduce as R
from . import spectral

__all__ = ['norm', 'nuclear_norm']

_MATRIX_ORDERS = ("fro", "nuc", math.inf, -math.inf, 1, -1, 2, -2)


def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):
    """torch.norm: 'nuc' is the sum of singular values over two dims, anything else a p-norm."""
    if isinstance(p, str) and p == "nuc":
        R.check_norm_arguments(input, p, out, dtype)
        return nuclear_norm(input if dtype is None else E.cast(input, dtype),
                            (-2, -1) if dim is None else dim, keepdim)
    return R.p_norm(input, p, dim, keepdim, out, dtype)


def nuclear_norm(input, dim=(-2, -1), keepdim=False):
    """The sum of the singular values of the matrices over the two dims."""
    return matrix_norm(input, "nuc", dim, keepdim)


# ---- norms ------------------------------------------------------------------------------------
def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """(sum |x|^ord)^(1/ord) over dim (all dims when None); ord 0 counts non-zeros, ±inf gives
    the largest/smallest magnitude."""
    if isinstance(ord, str):
        raise RuntimeError(f"linalg.vector_norm: Order {ord} not supported.")
    return R.p_norm(x, float(ord), dim, keepdim, dtype=dtype)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    """'fro', 'nuc', ±inf (max/min row sum of |A|), ±1 (column sums) or ±2 (singular values)
    over the two dims in `dim`."""
    _check_matrix_input(A, "linalg.matrix_norm")
    if ord not in _MATRIX_ORDERS:
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    rows, columns = _matrix_dims(dim, A.ndim)
    if dtype is not None:
        A = E.cast(A, dtype)
    if ord == "fro":
        return R.p_norm(A, 2.0, (rows, columns), keepdim)
    if ord in ("nuc", 2, -2):
        return spectral.matrix_norm_spectral(A, ord, (rows, columns), keepdim)
    return _sum_then_extreme(A, ord, rows, columns, keepdim)


def _check_matrix_input(A, name):
    if A.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    if not (A.dtype.is_floating_point or A.dtype.is_complex):
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got "
                           f"{E.TORCH_NAMES[A.dtype.name]}")


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
    sums = R.p_norm(A, 1.0, summed, keepdim=keepdim)
    if not keepdim and summed < extreme:
        extreme -= 1
    pick = R.amax if ord > 0 else R.amin
    return pick(sums, extreme, keepdim)


def linalg_norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):
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
