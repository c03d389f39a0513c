"""HalfCauchy(scale): |X| for X ~ Cauchy(0, scale)."""
import math

from ..functions import elementwise as E
from ..tensor import as_tensor, full
from .continuous import Cauchy
from .half_normal import _Half

__all__ = ["HalfCauchy"]


class HalfCauchy(_Half):
    """HalfCauchy(scale): |X| for X ~ Cauchy(0, scale)."""

    def __init__(self, scale, validate_args=None):
        super().__init__(Cauchy(0, scale, validate_args=False), validate_args=validate_args)

    @property
    def mean(self):
        return full(tuple(self._extended_shape()), math.inf, dtype=self.scale.dtype,
                    device=self.scale.device)

    @property
    def variance(self):
        return self.base_dist.variance

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value = as_tensor(value, dtype=self.scale.dtype, device=self.scale.device)
        log_prob = self.base_dist.log_prob(value) + math.log(2)
        return E.where(value >= 0, log_prob, -math.inf)
