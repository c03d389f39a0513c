"""LKJCholesky(dim, concentration=1.0): Cholesky factors of correlation matrices, sampled by
the onion method (Beta and Normal draws: torch's stream)."""
import math

from .. import dtypes
from ..functions.joining import cat
from ..functions.special_functions import lgamma, mvlgamma
from ..random import randn
from ..tensor import Size, arange
from . import constraints
from .distribution import Distribution
from .gamma import Beta
from .utils import as_size, broadcast_all

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    """LKJCholesky(dim, concentration=1.0): Cholesky factors L of dim x dim correlation
    matrices with density proportional to det(L L^T) ** (concentration - 1) (uniform over
    correlation matrices at 1). Sampled by the onion method (Lewandowski, Kurowicka & Joe
    2009); like torch's it has sample but no rsample, and no mean, variance or entropy
    (NotImplementedError)."""
    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim, concentration=1.0, validate_args=None):
        if dim < 2:
            raise ValueError("Expected dim to be an integer greater than or equal to 2. "
                             f"Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        batch_shape = self.concentration.shape
        event_shape = Size((dim, dim))
        # the Beta of each row's squared norm
        marginal_conc = self.concentration + 0.5 * (self.dim - 2)
        offset = arange(self.dim - 1, dtype=self.concentration.dtype,
                        device=self.concentration.device)
        offset = cat([offset.new_zeros((1,)), offset])
        beta_conc1 = offset + 0.5
        beta_conc0 = marginal_conc.unsqueeze(-1) - 0.5 * offset
        self._beta = Beta(beta_conc1, beta_conc0)
        super().__init__(batch_shape, event_shape, validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LKJCholesky, _instance)
        batch_shape = as_size(batch_shape)
        new.dim = self.dim
        new.concentration = self.concentration.expand(tuple(batch_shape))
        new._beta = self._beta.expand(tuple(batch_shape) + (self.dim,))
        return self._finish_expand(new, batch_shape)

    def sample(self, sample_shape=Size()):
        y = self._beta.sample(sample_shape).unsqueeze(-1)
        u_normal = randn(self._extended_shape(sample_shape), dtype=y.dtype,
                         device=y.device).tril(-1)
        u_hypersphere = u_normal / u_normal.norm(dim=-1, keepdim=True)
        u_hypersphere[..., 0, :].fill_(0.0)     # the first row is e_1 (its 0/0 was NaN)
        w = y.sqrt() * u_hypersphere
        eps = dtypes.finfo(w.dtype).tiny
        diag_elems = (1 - (w ** 2).sum(dim=-1)).clamp(min=eps).sqrt()
        w += diag_elems.diag_embed()
        return w

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diag_elems = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = arange(2, self.dim + 1, device=self.concentration.device)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized_log_pdf = (order * diag_elems.log()).sum(dim=-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        denominator = lgamma(alpha) * dm1
        numerator = mvlgamma(alpha - 0.5, dm1)
        pi_constant = 0.5 * dm1 * math.log(math.pi)
        return unnormalized_log_pdf - (pi_constant + numerator - denominator)
