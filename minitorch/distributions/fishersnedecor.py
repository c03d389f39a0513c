"""FisherSnedecor(df1, df2): the ratio of two scaled Chi2 draws (the F-distribution)."""
import math

from .. import dtypes
from ..functions import elementwise as E
from ..functions.special_functions import lgamma
from ..tensor import Size
from . import constraints
from .distribution import Distribution
from .gamma import Gamma
from .utils import as_size, broadcast_all, is_number

__all__ = ["FisherSnedecor"]


class FisherSnedecor(Distribution):
    """The Fisher-Snedecor (F) distribution with `df1` and `df2` degrees of freedom. rsample is
    reparameterised through the two Gamma draws' implicit gradients."""
    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1, df2, validate_args=None):
        self.df1, self.df2 = broadcast_all(df1, df2)
        # the Gammas validate first, by default, as torch's do (even with validate_args=False)
        self._gamma1 = Gamma(self.df1 * 0.5, self.df1)
        self._gamma2 = Gamma(self.df2 * 0.5, self.df2)
        batch_shape = Size() if is_number(df1) and is_number(df2) else self.df1.shape
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(FisherSnedecor, _instance)
        batch_shape = as_size(batch_shape)
        new.df1 = self.df1.expand(batch_shape)
        new.df2 = self.df2.expand(batch_shape)
        new._gamma1 = self._gamma1.expand(batch_shape)
        new._gamma2 = self._gamma2.expand(batch_shape)
        return self._finish_expand(new, batch_shape)

    @property
    def mean(self):
        df2 = E.where(self.df2 <= 2, math.nan, self.df2)    # defined for df2 > 2 only
        return df2 / (df2 - 2)

    @property
    def mode(self):
        mode = (self.df1 - 2) / self.df1 * self.df2 / (self.df2 + 2)
        return E.where(self.df1 <= 2, math.nan, mode)

    @property
    def variance(self):
        df2 = E.where(self.df2 <= 4, math.nan, self.df2)    # defined for df2 > 4 only
        return (2 * df2.pow(2) * (self.df1 + df2 - 2)
                / (self.df1 * (df2 - 2).pow(2) * (df2 - 4)))

    def rsample(self, sample_shape=Size()):
        #   X1 ~ Gamma(df1 / 2, df1), X2 ~ Gamma(df2 / 2, df2)  =>  X1 / X2 ~ F(df1, df2)
        shape = tuple(self._extended_shape(sample_shape))
        X1 = self._gamma1.rsample(sample_shape).view(shape)
        X2 = self._gamma2.rsample(sample_shape).view(shape)
        # neither a zero denominator nor a zero sample (log_prob's support is open at 0)
        tiny = dtypes.finfo(X2.dtype).tiny
        return (X1 / X2.clamp(min=tiny)).clamp(min=tiny)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        ct1 = self.df1 * 0.5
        ct2 = self.df2 * 0.5
        ct3 = self.df1 / self.df2
        t1 = lgamma(ct1 + ct2) - lgamma(ct1) - lgamma(ct2)
        t2 = ct1 * ct3.log() + (ct1 - 1) * E.log(value)
        t3 = (ct1 + ct2) * E.log1p(ct3 * value)
        return t1 + t2 - t3
