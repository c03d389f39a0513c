"""StudentT(df, loc=0, scale=1): a Normal draw divided by the root of a Chi2(df) draw over df."""
import math

from ..functions import elementwise as E
from ..functions.special_functions import digamma, lgamma
from ..tensor import Size
from . import constraints
from .distribution import Distribution
from .gamma import Chi2
from .utils import as_size, broadcast_all, standard_normal

__all__ = ["StudentT"]


class StudentT(Distribution):
    """Student's t-distribution with `df` degrees of freedom, location `loc` and scale `scale`.
    rsample is reparameterised: the normal draw directly, the Chi2 draw through Gamma's implicit
    gradient."""
    arg_constraints = {"df": constraints.positive, "loc": constraints.real,
                       "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        # torch's batch shape is df's even when every parameter is a number (then ())
        super().__init__(self.df.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(StudentT, _instance)
        batch_shape = as_size(batch_shape)
        new.df = self.df.expand(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        new._chi2 = self._chi2.expand(batch_shape)
        return self._finish_expand(new, batch_shape)

    @property
    def mean(self):
        # defined only for df > 1
        return E.where(self.df <= 1, math.nan, self.loc)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        # finite for df > 2, infinite for 1 < df <= 2, undefined below
        finite = self.scale.pow(2) * self.df / (self.df - 2)
        undefined = E.where(self.df <= 1, math.nan, math.inf)
        return E.where(self.df > 2, finite, undefined).to(self.df.dtype)

    def rsample(self, sample_shape=Size()):
        #   X ~ Normal(0, 1), Z ~ Chi2(df)  =>  X / sqrt(Z / df) ~ StudentT(df)
        shape = self._extended_shape(sample_shape)
        X = standard_normal(shape, self.df.dtype, self.df.device)
        Z = self._chi2.rsample(sample_shape)
        Y = X * (Z / self.df).rsqrt()
        return self.loc + self.scale * Y

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        Z = (self.scale.log() + 0.5 * self.df.log() + 0.5 * math.log(math.pi)
             + lgamma(0.5 * self.df) - lgamma(0.5 * (self.df + 1.0)))
        return -0.5 * (self.df + 1.0) * E.log1p(y ** 2.0 / self.df) - Z

    def entropy(self):
        lbeta = lgamma(0.5 * self.df) + math.lgamma(0.5) - lgamma(0.5 * (self.df + 1))
        return (self.scale.log()
                + 0.5 * (self.df + 1) * (digamma(0.5 * (self.df + 1)) - digamma(0.5 * self.df))
                + 0.5 * self.df.log() + lbeta)
