"""The gamma family: Gamma, Chi2, Dirichlet, Beta. Draws are torch's CPU gamma sampler on its
stream (random.gamma_into); rsample's gradient is torch's implicit reparameterisation
(d sample / d concentration from the gamma CDF, `_standard_gamma_grad`): both are nodes in
functions/standard_gamma.py."""
import numpy as np

from ..dtypes import finfo, float64
from ..functions import elementwise as E
from ..functions.float_math import xlogy
from ..functions.special_functions import digamma, lgamma
from ..functions.joining import stack
# standard_gamma_grad is re-exported: it was defined here, and tests import it from here
from ..functions.standard_gamma import standard_gamma, standard_gamma_grad  # noqa: F401
from ..nn.functional import one_hot
from ..special import gammainc
from ..tensor import Size, as_tensor, tensor
from . import constraints
from .continuous import init_broadcast
from .distribution import ExponentialFamily
from .utils import broadcast_all, is_number

__all__ = ["Beta", "Chi2", "Dirichlet", "Gamma"]


class Gamma(ExponentialFamily):
    """Gamma(concentration, rate)."""
    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _batched_params = ("concentration", "rate")

    def __init__(self, concentration, rate, validate_args=None):
        init_broadcast(self, ("concentration", "rate"), (concentration, rate), validate_args)

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        return standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)

    def log_prob(self, value):
        value = as_tensor(value, dtype=self.rate.dtype, device=self.rate.device)
        if self._validate_args:
            self._validate_sample(value)
        return (xlogy(self.concentration, self.rate) + xlogy(self.concentration - 1, value)
                - self.rate * value - lgamma(self.concentration))

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return gammainc(self.concentration, self.rate * value)

    def entropy(self):
        return (self.concentration - self.rate.log() + lgamma(self.concentration)
                + (1.0 - self.concentration) * digamma(self.concentration))


class Chi2(Gamma):
    """Chi2(df) = Gamma(df / 2, 1 / 2)."""
    arg_constraints = {"df": constraints.positive}

    def __init__(self, df, validate_args=None):
        super().__init__(0.5 * df, 0.5, validate_args=validate_args)

    @property
    def df(self):
        return self.concentration * 2


class Dirichlet(ExponentialFamily):
    """Dirichlet(concentration): the last dimension of concentration is the event."""
    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True
    _batched_params = ("concentration",)

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        super().__init__(concentration.shape[:-1], concentration.shape[-1:],
                         validate_args=validate_args)

    def rsample(self, sample_shape=()):
        # torch's _sample_dirichlet: gammas drawn and normalised in double, rounded to the
        # dtype and kept inside (0, 1). Their implicit gradients chain through the
        # normalisation (torch differentiates the Dirichlet CDF directly instead: the expected
        # gradient is the same, individual pathwise values differ).
        shape = tuple(self._extended_shape(sample_shape))
        dtype = self.concentration.dtype
        gammas = standard_gamma(self.concentration.expand(shape).to(float64))
        below_one = float(np.nextafter(np.array(1, dtype.compute.storage), 0))
        return (gammas / gammas.sum(-1, True)).to(dtype).clamp(finfo(dtype).tiny, below_one)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (xlogy(self.concentration - 1.0, value).sum(-1)
                + lgamma(self.concentration.sum(-1)) - lgamma(self.concentration).sum(-1))

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, True)

    @property
    def mode(self):
        shifted = (self.concentration - 1).clamp(min=0.0)
        mode = shifted / shifted.sum(-1, True)
        # every concentration below 1: torch puts all mass on the arg-max of the NaN row
        corner = one_hot(mode.argmax(-1), shifted.shape[-1]).to(mode)
        return E.where((self.concentration < 1).all(-1, True), corner, mode)

    @property
    def variance(self):
        total = self.concentration.sum(-1, True)
        return self.concentration * (total - self.concentration) / (total.pow(2) * (total + 1))

    def entropy(self):
        k = self.concentration.shape[-1]
        total = self.concentration.sum(-1)
        return (lgamma(self.concentration).sum(-1) - lgamma(total)
                - (k - total) * digamma(total)
                - ((self.concentration - 1.0) * digamma(self.concentration)).sum(-1))


class Beta(ExponentialFamily):
    """Beta(concentration1, concentration0), a two-component Dirichlet's first component."""
    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        if is_number(concentration1) and is_number(concentration0):
            both = tensor([float(concentration1), float(concentration0)])
        else:
            both = stack(broadcast_all(concentration1, concentration0), -1)
        self._dirichlet = Dirichlet(both, validate_args=validate_args)
        super().__init__(self._dirichlet._batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Beta, _instance)
        new._dirichlet = self._dirichlet.expand(batch_shape)
        return self._finish_expand(new, Size(tuple(batch_shape)))

    @property
    def concentration1(self):
        return self._dirichlet.concentration[..., 0]

    @property
    def concentration0(self):
        return self._dirichlet.concentration[..., 1]

    @property
    def mean(self):
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self):
        return self._dirichlet.mode[..., 0]

    @property
    def variance(self):
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape=()):
        return self._dirichlet.rsample(sample_shape).select(-1, 0)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self._dirichlet.log_prob(stack([value, 1.0 - value], -1))

    def entropy(self):
        return self._dirichlet.entropy()
