"""MultivariateNormal, parametrised by a covariance, precision or lower Cholesky factor; every
computation goes through the (unbroadcast) Cholesky factor of the covariance."""
import math

from ..functions.factor import cholesky_inverse
from ..functions.movement import flip
from ..functions.joining import broadcast_shapes
from ..linalg import cholesky, solve_triangular
from ..tensor import Size, eye
from . import constraints
from .distribution import Distribution
from .utils import lazy_property, standard_normal

__all__ = ["MultivariateNormal"]


def _batch_mv(bmat, bvec):
    return (bmat @ bvec.unsqueeze(-1)).squeeze(-1)


def batch_mahalanobis(bL, bx):
    """Squared Mahalanobis distance x^T (L L^T)^-1 x for a batch of x whose batch shape
    contains L's (torch's algorithm: the x of one L become the columns of a single triangular
    solve, so L is never expanded to x's sample dims)."""
    n = bx.shape[-1]
    bx_batch_shape = tuple(bx.shape[:-1])
    bL_batch_dims = bL.dim() - 2
    outer_batch_dims = len(bx_batch_shape) - bL_batch_dims
    old_batch_dims = outer_batch_dims + bL_batch_dims
    new_batch_dims = outer_batch_dims + 2 * bL_batch_dims
    # reshape bx to (..., sx // sL, sL, ..., n), then move the sL dims next to each other
    new_shape = tuple(bx.shape[:outer_batch_dims])
    for sL, sx in zip(bL.shape[:-2], bx.shape[outer_batch_dims:-1]):
        new_shape += (sx // sL, sL)
    bx = bx.reshape(new_shape + (n,))
    permute_dims = (list(range(outer_batch_dims))
                    + list(range(outer_batch_dims, new_batch_dims, 2))
                    + list(range(outer_batch_dims + 1, new_batch_dims, 2)) + [new_batch_dims])
    bx = bx.permute(*permute_dims)
    flat_L = bL.reshape(-1, n, n)
    flat_x = bx.reshape(-1, flat_L.shape[0], n)
    flat_x_swap = flat_x.permute(1, 2, 0)
    M_swap = solve_triangular(flat_L, flat_x_swap, upper=False).pow(2).sum(-2)
    permuted_M = M_swap.t().reshape(tuple(bx.shape[:-1]))
    permute_inv_dims = list(range(outer_batch_dims))
    for i in range(bL_batch_dims):
        permute_inv_dims += [outer_batch_dims + i, old_batch_dims + i]
    return permuted_M.permute(*permute_inv_dims).reshape(bx_batch_shape)


def _precision_to_scale_tril(P):
    """Lower Cholesky factor of P^-1 without inverting P: flip, factor, flip back, invert
    the triangle."""
    Lf = cholesky(flip(P, (-2, -1)))
    L_inv = flip(Lf, (-2, -1)).transpose(-2, -1)
    identity = eye(P.shape[-1], dtype=P.dtype, device=P.device)
    return solve_triangular(L_inv, identity, upper=False)


def log_det_half(scale_tril):
    """log det(L L^T) / 2 = sum of log diag(L)."""
    return scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)


class MultivariateNormal(Distribution):
    """MultivariateNormal(loc, covariance_matrix=None, precision_matrix=None,
    scale_tril=None)."""
    arg_constraints = {"loc": constraints.real_vector,
                       "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite,
                       "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True
    _batched_params = ("loc", "covariance_matrix", "precision_matrix", "scale_tril")
    _copied_attrs = ("_unbroadcasted_scale_tril",)

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        given = {"scale_tril": scale_tril, "covariance_matrix": covariance_matrix,
                 "precision_matrix": precision_matrix}
        given = {name: matrix for name, matrix in given.items() if matrix is not None}
        if len(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or "
                             "scale_tril may be specified.")
        (name, matrix), = given.items()
        if matrix.dim() < 2:
            what = "scale_tril matrix" if name == "scale_tril" else name
            raise ValueError(f"{what} must be at least two-dimensional, with optional "
                             "leading batch dimensions")
        batch_shape = tuple(broadcast_shapes(matrix.shape[:-2], loc.shape[:-1]))
        setattr(self, name, matrix.expand(batch_shape + (-1, -1)))
        self.loc = loc.expand(batch_shape + (-1,))
        super().__init__(batch_shape, self.loc.shape[-1:], validate_args=validate_args)
        if name == "scale_tril":
            self._unbroadcasted_scale_tril = matrix
        elif name == "covariance_matrix":
            self._unbroadcasted_scale_tril = cholesky(matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(matrix)

    def _matrix_shape(self):
        return tuple(self._batch_shape) + tuple(self._event_shape) * 2

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return (L @ L.mT).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self):
        return cholesky_inverse(self._unbroadcasted_scale_tril).expand(self._matrix_shape())

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return (self._unbroadcasted_scale_tril.pow(2).sum(-1)
                .expand(tuple(self._batch_shape) + tuple(self._event_shape)))

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        eps = standard_normal(shape, self.loc.dtype, self.loc.device)
        return self.loc + _batch_mv(self._unbroadcasted_scale_tril, eps)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        M = batch_mahalanobis(self._unbroadcasted_scale_tril, value - self.loc)
        return (-0.5 * (self._event_shape[0] * math.log(2 * math.pi) + M)
                - log_det_half(self._unbroadcasted_scale_tril))

    def entropy(self):
        H = (0.5 * self._event_shape[0] * (1.0 + math.log(2 * math.pi))
             + log_det_half(self._unbroadcasted_scale_tril))
        return H if len(self._batch_shape) == 0 else H.expand(tuple(self._batch_shape))
