"""HalfNormal(scale): |X| for X ~ Normal(0, scale), an AbsTransform of the Normal, and the
base _Half it shares with HalfCauchy (the folded density is twice the base's on [0, inf))."""
import math

from ..functions import elementwise as E
from ..tensor import zeros_like
from . import constraints
from .continuous import Normal
from .transformed import TransformedDistribution
from .transforms import AbsTransform

__all__ = ["HalfNormal"]


class _Half(TransformedDistribution):
    """|X| for X of a centred symmetric base: log_prob, cdf, icdf and entropy fold the base's
    two halves together."""
    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, base_dist, validate_args=None):
        super().__init__(base_dist, AbsTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(type(self), _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def scale(self):
        return self.base_dist.scale

    @property
    def mode(self):
        return zeros_like(self.scale)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_prob = self.base_dist.log_prob(value) + math.log(2)
        return E.where(value >= 0, log_prob, -math.inf)

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob):
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self):
        return self.base_dist.entropy() - math.log(2)



class HalfNormal(_Half):
    """HalfNormal(scale): |X| for X ~ Normal(0, scale)."""

    def __init__(self, scale, validate_args=None):
        super().__init__(Normal(0, scale, validate_args=False), validate_args=validate_args)

    @property
    def mean(self):
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def variance(self):
        return self.scale.pow(2) * (1 - 2 / math.pi)
