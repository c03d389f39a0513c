"""nn.utils.parametrizations: orthogonal, weight_norm and spectral_norm as parametrizations
(nn.utils.parametrize), with torch's originals, buffers and state_dict keys."""
from enum import Enum, auto

from ... import dtypes
from ...autograd import no_grad
from ...functions.linalg import mv
from ...functions.joining import cat
from ...functions.spectral import geqrf
from ...linalg import matrix_exp, qr, solve
from ...random import randn
from ...tensor import Tensor, eye, zeros_like
from .. import functional as F
from ..module import Module
from . import parametrize
from .spectral_norm import (check_power_iterations, default_dim, normalize_into,
                            weight_to_matrix)
from .weight_norm import norm_except_dim, weight_norm_from

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


# ---- orthogonal ----------------------------------------------------------------------------------
def _is_orthogonal(Q):
    n, k = Q.size(-2), Q.size(-1)
    identity = eye(k, dtype=Q.dtype, device=Q.device)
    return bool((Q.mH @ Q).allclose(identity, atol=10.0 * n * dtypes.finfo(Q.dtype).eps))


def _make_orthogonal(A):
    """The Q of A's QR decomposition with R's diagonal made positive (unique for full rank):
    what torch builds from geqrf + householder_product."""
    Q, R = qr(A)
    return Q * R.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


def _householder_product(A, tau):
    """torch.linalg.householder_product for real A (..., n, k): the first k columns of
    H_1 ... H_k, H_i = I - tau_i v_i v_i^T, v_i = column i of A below the diagonal with a 1 on
    it. Applied right to left to the identity's first k columns."""
    n, k = A.size(-2), A.size(-1)
    reflectors = A.tril(-1) + eye(n, k, dtype=A.dtype, device=A.device)
    Q = eye(n, k, dtype=A.dtype, device=A.device).expand(*A.shape)
    for i in reversed(range(k)):
        v = reflectors[..., :, i:i + 1]                              # (..., n, 1)
        Q = Q - (tau[..., i:i + 1].unsqueeze(-1) * v) @ (v.mT @ Q)
    return Q


class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


class _Orthogonal(Module):
    """Maps an unconstrained matrix to an orthogonal one (torch's _Orthogonal); with
    use_trivialization the result is `base @ map(X)`, `base` being set by right_inverse."""

    def __init__(self, weight, orthogonal_map, *, use_trivialization=True):
        super().__init__()
        if weight.is_complex() and orthogonal_map == _OrthMaps.householder:
            raise ValueError("The householder parametrization does not support complex "
                             "tensors.")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X):
        n, k = X.size(-2), X.size(-1)
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map == _OrthMaps.householder:
            Q = self._householder(X)
        else:
            Q = self._exponential_or_cayley(X, n, k)
        if hasattr(self, "base"):
            Q = self.base @ Q
        return Q.mT if transposed else Q

    def _exponential_or_cayley(self, X, n, k):
        X = X.tril()
        if n != k:
            padding = X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)
            X = cat([X, padding], dim=-1)
        A = X - X.mH                                     # skew-symmetric
        if self.orthogonal_map == _OrthMaps.matrix_exp:
            Q = matrix_exp(A)
        else:
            identity = eye(n, dtype=A.dtype, device=A.device)
            Q = solve(identity - 0.5 * A, identity + 0.5 * A)
        return Q[..., :k] if n != k else Q

    @staticmethod
    def _householder(X):
        A = X.tril(diagonal=-1)
        tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
        Q = _householder_product(A, tau)
        # The diagonal's sign (as an int, so the sign is all the diagonal contributes) flips
        # columns, reaching matrices of determinant -1 too.
        return Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)

    @staticmethod
    def _householder_inverse(Q, transposed):
        """torch's: geqrf's reflectors, with R's diagonal replaced by its signs (so that the
        map reproduces Q, not -Q) and flipped where a reflection was skipped (tau = 0)."""
        A, tau = geqrf(Q)
        diagonal = A.diagonal(dim1=-2, dim2=-1)
        diagonal.copy_(diagonal.sign() * (1 - 2 * (tau == 0).to(A.dtype)))
        return A.mT if transposed else A

    @no_grad()
    def right_inverse(self, Q):
        if Q.shape != self.shape:
            raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                             f"Got a tensor of shape {Q.shape}.")
        Q_init = Q
        n, k = Q.size(-2), Q.size(-1)
        if n < k:
            Q = Q.mT
            n, k = k, n
        if not hasattr(self, "base"):
            if self.orthogonal_map != _OrthMaps.householder:
                raise NotImplementedError("It is not possible to assign to the matrix "
                                          "exponential or the Cayley parametrizations when "
                                          "use_trivialization=False.")
            return self._householder_inverse(Q, transposed=Q_init.size(-2) < Q_init.size(-1))
        if n == k:
            Q = Q.clone() if _is_orthogonal(Q) else _make_orthogonal(Q)
        else:
            # complete Q's columns to a square orthogonal basis (random directions added)
            noise = randn(*Q.shape[:-2], n, n - k, dtype=Q.dtype, device=Q.device)
            Q = _make_orthogonal(cat([Q, noise], dim=-1))
        self.base = Q
        # the map sends -I to I for all three choices, so the product is `base` itself
        neg_identity = zeros_like(Q_init)
        neg_identity.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
        return neg_identity


def orthogonal(module, name="weight", orthogonal_map=None, *, use_trivialization=True):
    """Constrain `module.<name>` (a matrix or batch of matrices) to be orthogonal; the map is
    "matrix_exp" for square matrices and "householder" otherwise unless given."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError("Expected a matrix or batch of matrices. Got a tensor of "
                         f"{weight.ndim} dimensions.")
    if orthogonal_map is None:
        square = weight.size(-2) == weight.size(-1)
        orthogonal_map = "matrix_exp" if square or weight.is_complex() else "householder"
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
                         f"Got: {orthogonal_map}")
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module


# ---- weight_norm ---------------------------------------------------------------------------------
class _WeightNorm(Module):
    """(g, v) -> g * v / ||v||, the norm taken over every axis but `dim` (all when None)."""

    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return weight_norm_from(weight_v, weight_g, self.dim)

    def right_inverse(self, weight):
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module, name="weight", dim=0):
    """Reparametrize `module.<name>` as g * v / ||v||: originals
    `parametrizations.<name>.original0` (g) and `original1` (v)."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def _weight_norm_compat_hook(state_dict, prefix, local_metadata, strict, missing_keys,
                                 unexpected_keys, error_msgs):
        # A checkpoint of the legacy nn.utils.weight_norm (<name>_g, <name>_v) loads here.
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)

    module._register_load_state_dict_pre_hook(_weight_norm_compat_hook)
    return module


# ---- spectral_norm -------------------------------------------------------------------------------
class _SpectralNorm(Module):
    """W -> W / sigma(W), sigma from power iteration on the buffers _u, _v (one step of
    n_power_iterations per forward in training mode; 15 at construction)."""

    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{ndim}, "
                             f"{ndim - 1}] but got {dim})")
        check_power_iterations(n_power_iterations)
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = weight_to_matrix(weight, self.dim)
            height, width = weight_mat.shape
            with no_grad():
                u = weight_mat.new_empty(height).normal_(0, 1)
                v = weight_mat.new_empty(width).normal_(0, 1)
                self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
                self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            self._power_method(weight_mat, 15)

    @no_grad()
    def _power_method(self, weight_mat, n_power_iterations):
        for _ in range(n_power_iterations):
            normalize_into(self._u, mv(weight_mat, self._v), self.eps)
            normalize_into(self._v, mv(weight_mat.mH, self._u), self.eps)

    def forward(self, weight):
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = weight_to_matrix(weight, self.dim)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        # copies: the buffers are updated in place by the next forward
        u, v = self._u.clone(), self._v.clone()
        sigma = u.vdot(mv(weight_mat, v))
        return weight / sigma

    def right_inverse(self, value):
        return value


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Reparametrize `module.<name>` as W / sigma(W); the power-iteration vectors are the
    buffers `parametrizations.<name>.0._u` and `._v`."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    dim = default_dim(module) if dim is None else dim
    parametrization = _SpectralNorm(weight, n_power_iterations, dim, eps)
    parametrize.register_parametrization(module, name, parametrization)
    return module
