"""Univariate continuous distributions with closed-form samplers: Normal, Uniform, Exponential,
Laplace, Cauchy. Every sample is a transform of standard draws, so rsample is differentiable."""
import math

from .. import dtypes
from ..functions import elementwise as E
from ..functions.float_math import atan, tan
from ..functions.special_functions import erfinv
from ..random import rand
from ..tensor import Size, empty, full, zeros_like
from . import constraints
from .distribution import Distribution, ExponentialFamily
from .utils import broadcast_all, is_number, standard_normal

__all__ = ["Cauchy", "Exponential", "Laplace", "Normal", "Uniform"]


def init_broadcast(dist, names, values, validate_args):
    """Set the parameters `names` to `values` broadcast together; the batch shape is theirs,
    or () when every value is a plain number (torch's rule)."""
    tensors = broadcast_all(*values)
    for name, value in zip(names, tensors):
        setattr(dist, name, value)
    batch_shape = Size() if all(is_number(v) for v in values) else tensors[0].shape
    Distribution.__init__(dist, batch_shape, validate_args=validate_args)


def new_draws(like, shape):
    """An uninitialised tensor of `shape` with `like`'s dtype and device, for in-place draws."""
    return empty(shape, dtype=like.dtype, device=like.device)


class Normal(ExponentialFamily):
    """Normal(loc, scale)."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True
    _batched_params = ("loc", "scale")

    def __init__(self, loc, scale, validate_args=None):
        init_broadcast(self, ("loc", "scale"), (loc, scale), validate_args)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def stddev(self):
        return self.scale

    @property
    def variance(self):
        return self.stddev.pow(2)

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        eps = standard_normal(shape, self.loc.dtype, self.loc.device)
        return self.loc + eps * self.scale

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        var = self.scale ** 2
        return (-((value - self.loc) ** 2) / (2 * var) - self.scale.log()
                - math.log(math.sqrt(2 * math.pi)))

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 * (1 + E.erf((value - self.loc) * self.scale.reciprocal() / math.sqrt(2)))

    def icdf(self, value):
        return self.loc + self.scale * erfinv(2 * value - 1) * math.sqrt(2)

    def entropy(self):
        return 0.5 + 0.5 * math.log(2 * math.pi) + self.scale.log()


class Uniform(Distribution):
    """Uniform(low, high): the half-open interval [low, high)."""
    has_rsample = True
    _batched_params = ("low", "high")

    def __init__(self, low, high, validate_args=None):
        init_broadcast(self, ("low", "high"), (low, high), validate_args)

    @property
    def arg_constraints(self):
        return {"low": constraints.less_than(self.high),
                "high": constraints.greater_than(self.low)}

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.interval(self.low, self.high)

    @property
    def mean(self):
        return (self.high + self.low) / 2

    @property
    def mode(self):
        return math.nan * self.high

    @property
    def stddev(self):
        return (self.high - self.low) / 12 ** 0.5

    @property
    def variance(self):
        return (self.high - self.low).pow(2) / 12

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        draws = rand(shape, dtype=self.low.dtype, device=self.low.device)
        return self.low + draws * (self.high - self.low)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        inside = self.low.le(value).type_as(self.low) * self.high.gt(value).type_as(self.low)
        return inside.log() - (self.high - self.low).log()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return ((value - self.low) / (self.high - self.low)).clamp(min=0, max=1)

    def icdf(self, value):
        return value * (self.high - self.low) + self.low

    def entropy(self):
        return (self.high - self.low).log()


class Exponential(ExponentialFamily):
    """Exponential(rate)."""
    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _batched_params = ("rate",)

    def __init__(self, rate, validate_args=None):
        init_broadcast(self, ("rate",), (rate,), validate_args)

    @property
    def mean(self):
        return self.rate.reciprocal()

    @property
    def mode(self):
        return zeros_like(self.rate)

    @property
    def stddev(self):
        return self.rate.reciprocal()

    @property
    def variance(self):
        return self.rate.pow(-2)

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        return new_draws(self.rate, shape).exponential_() / self.rate

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self.rate.log() - self.rate * value

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 1 - E.exp(-self.rate * value)

    def icdf(self, value):
        return -E.log1p(-value) / self.rate

    def entropy(self):
        return 1.0 - self.rate.log()


class Laplace(Distribution):
    """Laplace(loc, scale)."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True
    _batched_params = ("loc", "scale")

    def __init__(self, loc, scale, validate_args=None):
        init_broadcast(self, ("loc", "scale"), (loc, scale), validate_args)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return 2 * self.scale.pow(2)

    @property
    def stddev(self):
        return (2 ** 0.5) * self.scale

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        # u in [eps - 1, 1), as torch: log1p(-|u|) stays finite
        u = new_draws(self.loc, shape).uniform_(dtypes.finfo(self.loc.dtype).eps - 1, 1)
        return self.loc - self.scale * u.sign() * E.log1p(-u.abs())

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return -(2 * self.scale).log() - (value - self.loc).abs() / self.scale

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        centred = value - self.loc
        return 0.5 - 0.5 * centred.sign() * E.expm1(-centred.abs() / self.scale)

    def icdf(self, value):
        term = value - 0.5
        return self.loc - self.scale * term.sign() * E.log1p(-2 * term.abs())

    def entropy(self):
        return 1 + (2 * self.scale).log()


class Cauchy(Distribution):
    """Cauchy(loc, scale)."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True
    _batched_params = ("loc", "scale")

    def __init__(self, loc, scale, validate_args=None):
        init_broadcast(self, ("loc", "scale"), (loc, scale), validate_args)

    def _filled(self, value):
        return full(tuple(self._extended_shape()), value, dtype=self.loc.dtype,
                    device=self.loc.device)

    @property
    def mean(self):
        return self._filled(math.nan)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return self._filled(math.inf)

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        return self.loc + new_draws(self.loc, shape).cauchy_() * self.scale

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (-math.log(math.pi) - self.scale.log()
                - (((value - self.loc) / self.scale) ** 2).log1p())

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return atan((value - self.loc) / self.scale) / math.pi + 0.5

    def icdf(self, value):
        return tan(math.pi * (value - 0.5)) * self.scale + self.loc

    def entropy(self):
        return math.log(4 * math.pi) + self.scale.log()
