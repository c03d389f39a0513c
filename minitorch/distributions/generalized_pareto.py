"""GeneralizedPareto(loc, scale, concentration): the distribution of tails above a threshold;
Exponential at concentration 0, Pareto for positive and bounded (Uniform at -1) for negative
concentrations."""
import math

from ..functions import elementwise as E
from ..functions.compare import isclose
from ..functions.movement import broadcast_to
from ..random import rand
from ..tensor import Size, ones_like, zeros_like
from . import constraints
from .continuous import init_broadcast
from .distribution import Distribution
from .utils import as_size

__all__ = ["GeneralizedPareto"]


class GeneralizedPareto(Distribution):
    """The generalized Pareto distribution (TensorFlow Probability's parametrisation, as
    torch's). rsample is the inverse cdf of a uniform draw."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive,
                       "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args=None):
        init_broadcast(self, ("loc", "scale", "concentration"), (loc, scale, concentration),
                       validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(GeneralizedPareto, _instance)
        batch_shape = as_size(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        return self._finish_expand(new, batch_shape)

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        u = rand(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.icdf(u)

    def _safe_concentration(self):
        """Whether concentration is 0, and concentration with those 0s replaced by 1 (the
        closed forms divide by it; the concentration-0 branch replaces their results).
        torch compares with a float32 scalar, which fails for float64 parameters; zeros_like
        keeps the parameters' dtype."""
        eq_zero = isclose(self.concentration, zeros_like(self.concentration))
        return eq_zero, E.where(eq_zero, ones_like(self.concentration), self.concentration)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero, safe_conc = self._safe_concentration()
        y = 1 / safe_conc + ones_like(z)
        where_nonzero = E.where(y == 0, y, y * E.log1p(safe_conc * z))
        return -self.scale.log() - E.where(eq_zero, z, where_nonzero)

    def log_survival_function(self, value):
        """log P(X > value)."""
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero, safe_conc = self._safe_concentration()
        where_nonzero = -E.log1p(safe_conc * z) / safe_conc
        return E.where(eq_zero, -z, where_nonzero)

    def log_cdf(self, value):
        return E.log1p(-E.exp(self.log_survival_function(value)))

    def cdf(self, value):
        return E.exp(self.log_cdf(value))

    def icdf(self, value):
        eq_zero, safe_conc = self._safe_concentration()
        logu = E.log1p(-value)
        where_nonzero = self.loc + self.scale / safe_conc * E.expm1(-safe_conc * logu)
        where_zero = self.loc - self.scale * logu
        return E.where(eq_zero, where_zero, where_nonzero)

    def _z(self, x):
        return (x - self.loc) / self.scale

    @property
    def mean(self):
        valid = self.concentration < 1
        safe_conc = E.where(valid, self.concentration, 0.5)
        return E.where(valid, self.loc + self.scale / (1 - safe_conc), math.nan)

    @property
    def variance(self):
        valid = self.concentration < 0.5
        safe_conc = E.where(valid, self.concentration, 0.25)
        result = self.scale ** 2 / ((1 - safe_conc) ** 2 * (1 - 2 * safe_conc))
        return E.where(valid, result, math.nan)

    def entropy(self):
        return broadcast_to(self.scale.log() + self.concentration + 1, tuple(self._batch_shape))

    @property
    def mode(self):
        return self.loc

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        # [loc, inf), or [loc, loc - scale / concentration] for negative concentrations
        lower = self.loc
        upper = E.where(self.concentration < 0, lower - self.scale / self.concentration,
                        math.inf)
        return constraints.interval(lower, upper)
