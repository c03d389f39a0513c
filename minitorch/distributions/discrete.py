"""Discrete distributions: Bernoulli, Categorical, OneHotCategorical, Binomial, Poisson,
Geometric, Multinomial. Draws come from minitorch's samplers (bernoulli, multinomial, binomial,
poisson, uniform_); probabilities are computed with minitorch ops."""
import math

from .. import dtypes
from ..functions import elementwise as E
from ..functions.float_math import xlogy
from ..functions.special_functions import lgamma
from ..functions.joining import broadcast_tensors
from ..nn.functional import binary_cross_entropy_with_logits, one_hot
from ..random import bernoulli, binomial, multinomial, poisson
from ..tensor import Size, arange, eye, full, ones_like, tensor, zeros, zeros_like
from . import constraints
from .continuous import init_broadcast, new_draws
from .distribution import Distribution, ExponentialFamily
from .utils import (as_size, broadcast_all, format_value, lazy_property, logits_to_probs,
                    probs_to_logits)

__all__ = ["Bernoulli", "Binomial", "Categorical", "Geometric", "Multinomial",
           "OneHotCategorical", "Poisson"]


def check_one_of(probs, logits):
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")


def enumerate_values(values, batch_shape, expand):
    """`values` (one per support point) along dim 0, singleton or expanded batch dims after."""
    values = values.view((-1,) + (1,) * len(batch_shape))
    return values.expand((-1,) + tuple(batch_shape)) if expand else values


class _ProbsOrLogits(Distribution):
    """Parametrised by probs or by logits (one given, the other derived lazily)."""

    @property
    def _param(self):
        return self.probs if "probs" in self.__dict__ else self.logits

    @property
    def param_shape(self):
        return self._param.shape


class _Binary(_ProbsOrLogits):
    """probs is the chance of a 1 and logits its log-odds."""

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)


class Bernoulli(_Binary, ExponentialFamily):
    """Bernoulli(probs=None, logits=None): 1 with probability probs."""
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True
    _batched_params = ("probs", "logits")

    def __init__(self, probs=None, logits=None, validate_args=None):
        check_one_of(probs, logits)
        name, value = ("probs", probs) if probs is not None else ("logits", logits)
        init_broadcast(self, (name,), (value,), validate_args)

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        mode = (self.probs >= 0.5).to(self.probs)
        return E.where(self.probs == 0.5, math.nan, mode)

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        return bernoulli(self.probs.detach().expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -binary_cross_entropy_with_logits(logits, value, reduction="none")

    def entropy(self):
        return binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")

    def enumerate_support(self, expand=True):
        values = arange(2, dtype=self._param.dtype, device=self._param.device)
        return enumerate_values(values, self._batch_shape, expand)


class Categorical(_ProbsOrLogits):
    """Categorical(probs=None, logits=None): indices into the last dimension of the
    (unnormalised) probabilities or log-probabilities."""
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    has_enumerate_support = True
    _batched_params = ("probs", "logits")
    _copied_attrs = ("_num_events",)

    def __init__(self, probs=None, logits=None, validate_args=None):
        check_one_of(probs, logits)
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(dim=-1, keepdim=True)
        self._num_events = self._param.shape[-1]
        batch_shape = self._param.shape[:-1] if self._param.dim() > 1 else Size()
        super().__init__(batch_shape, validate_args=validate_args)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits)

    def _nan_filled(self):
        return full(tuple(self._extended_shape()), math.nan, dtype=self.probs.dtype,
                    device=self.probs.device)

    @property
    def mean(self):
        return self._nan_filled()

    @property
    def mode(self):
        return self.probs.argmax(-1)

    @property
    def variance(self):
        return self._nan_filled()

    def sample(self, sample_shape=Size()):
        sample_shape = as_size(sample_shape)
        probs_2d = self.probs.detach().reshape(-1, self._num_events)
        count = sample_shape.numel()
        samples_2d = multinomial(probs_2d, count, True)
        if count != 1:      # one sample per row: (rows, 1) holds them in the order .T would
            samples_2d = samples_2d.T
        return samples_2d.reshape(tuple(self._extended_shape(sample_shape)))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value, log_pmf = value.long().unsqueeze(-1), self.logits
        if value._data.shape[:-1] != log_pmf._data.shape[:-1]:
            # torch's broadcast; with one batch shape already it would change nothing
            value, log_pmf = broadcast_tensors(value, log_pmf)
            value = value[..., :1]
        return log_pmf.gather(-1, value).squeeze(-1)

    def entropy(self):
        # -inf logits (zero probabilities) contribute 0, not NaN
        logits = self.logits.clamp(min=dtypes.finfo(self.logits.dtype).min)
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand=True):
        values = arange(self._num_events, dtype=dtypes.int64, device=self._param.device)
        return enumerate_values(values, self._batch_shape, expand)


class OneHotCategorical(Distribution):
    """OneHotCategorical(probs=None, logits=None): one-hot vectors of a Categorical's draws."""
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(OneHotCategorical, _instance)
        new._categorical = self._categorical.expand(batch_shape)
        return self._finish_expand(new, as_size(batch_shape))

    @property
    def _param(self):
        return self._categorical._param

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def param_shape(self):
        return self._categorical.param_shape

    @property
    def mean(self):
        return self._categorical.probs

    @property
    def mode(self):
        probs = self._categorical.probs
        return one_hot(probs.argmax(-1), probs.shape[-1]).to(probs)

    @property
    def variance(self):
        return self._categorical.probs * (1 - self._categorical.probs)

    def sample(self, sample_shape=Size()):
        indices = self._categorical.sample(sample_shape)
        return one_hot(indices, self._categorical._num_events).to(self._categorical.probs)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self._categorical.log_prob(value.max(-1)[1])

    def entropy(self):
        return self._categorical.entropy()

    def enumerate_support(self, expand=True):
        n = self._event_shape[0]
        values = eye(n, dtype=self._param.dtype, device=self._param.device)
        values = values.view((n,) + (1,) * len(self._batch_shape) + (n,))
        return values.expand((n,) + tuple(self._batch_shape) + (n,)) if expand else values


def _clamp_by_zero(x):
    """max(x, 0) with the gradient 1/2 at 0 (torch's)."""
    return (x.clamp(min=0) + x - x.clamp(max=0)) / 2


class Binomial(_Binary):
    """Binomial(total_count=1, probs=None, logits=None)."""
    arg_constraints = {"total_count": constraints.nonnegative_integer,
                       "probs": constraints.unit_interval, "logits": constraints.real}
    has_enumerate_support = True
    _batched_params = ("total_count", "probs", "logits")

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        check_one_of(probs, logits)
        name, value = ("probs", probs) if probs is not None else ("logits", logits)
        total_count, param = broadcast_all(total_count, value)
        self.total_count = total_count.type_as(param)
        setattr(self, name, param)
        super().__init__(param.shape, validate_args=validate_args)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self):
        return self.total_count * self.probs

    @property
    def mode(self):
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        return binomial(self.total_count.detach().expand(shape),
                        self.probs.detach().expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_factorial_n = lgamma(self.total_count + 1)
        log_factorial_k = lgamma(value + 1)
        log_factorial_nmk = lgamma(self.total_count - value + 1)
        # n * log(1 + exp(logits)), written so that it does not overflow
        normalize_term = (self.total_count * _clamp_by_zero(self.logits)
                          + self.total_count * E.log1p(E.exp(-self.logits.abs()))
                          - log_factorial_n)
        return value * self.logits - log_factorial_k - log_factorial_nmk - normalize_term

    def _homogeneous_count(self, method):
        total_count = int(self.total_count.max())
        if not self.total_count.min() == total_count:
            raise NotImplementedError(f"Inhomogeneous total count not supported by `{method}`.")
        return total_count

    def entropy(self):
        self._homogeneous_count("entropy")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(E.exp(log_prob) * log_prob).sum(0)

    def enumerate_support(self, expand=True):
        total_count = self._homogeneous_count("enumerate_support")
        values = arange(1 + total_count, dtype=self._param.dtype, device=self._param.device)
        return enumerate_values(values, self._batch_shape, expand)


class Poisson(ExponentialFamily):
    """Poisson(rate)."""
    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer
    _batched_params = ("rate",)

    def __init__(self, rate, validate_args=None):
        init_broadcast(self, ("rate",), (rate,), validate_args)

    @property
    def mean(self):
        return self.rate

    @property
    def mode(self):
        return self.rate.floor()

    @property
    def variance(self):
        return self.rate

    def sample(self, sample_shape=Size()):
        return poisson(self.rate.detach().expand(tuple(self._extended_shape(sample_shape))))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return xlogy(value, rate) - rate - lgamma(value + 1)


class Geometric(_Binary):
    """Geometric(probs=None, logits=None): the number of failures before the first success."""
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer
    _batched_params = ("probs", "logits")

    def __init__(self, probs=None, logits=None, validate_args=None):
        check_one_of(probs, logits)
        name, value = ("probs", probs) if probs is not None else ("logits", logits)
        init_broadcast(self, (name,), (value,), validate_args)
        if self._validate_args and probs is not None:
            self._check_positive(self.probs)

    def _check_positive(self, value):
        valid = value > 0
        if not bool(valid.all()):
            raise ValueError(
                f"Expected parameter probs ({type(value).__name__} of shape "
                f"{tuple(value.shape)}) of distribution {self!r} to be positive but found "
                f"invalid values:\n{format_value(value.detach()[~valid])}")

    @property
    def mean(self):
        return 1.0 / self.probs - 1.0

    @property
    def mode(self):
        return zeros_like(self.probs)

    @property
    def variance(self):
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        probs = self.probs.detach()
        u = new_draws(probs, shape).uniform_(dtypes.finfo(probs.dtype).tiny, 1)
        return (u.log() / E.log1p(-probs)).floor()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        # a sure success (p = 1) scores 0 failures as log 1, not 0 * log 0 = NaN
        probs = E.where((probs == 1) & (value == 0), 0.0, probs)
        return value * E.log1p(-probs) + self.probs.log()

    def entropy(self):
        return binary_cross_entropy_with_logits(self.logits, self.probs,
                                                reduction="none") / self.probs


class Multinomial(Distribution):
    """Multinomial(total_count=1, probs=None, logits=None): counts of total_count
    Categorical draws."""
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        self._binomial = Binomial(total_count=total_count, probs=self.probs)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Multinomial, _instance)
        new.total_count = self.total_count
        new._categorical = self._categorical.expand(batch_shape)
        return self._finish_expand(new, as_size(batch_shape))

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return constraints.multinomial(self.total_count)

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def param_shape(self):
        return self._categorical.param_shape

    @property
    def mean(self):
        return self.probs * self.total_count

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=Size()):
        sample_shape = tuple(sample_shape)
        samples = self._categorical.sample((self.total_count,) + sample_shape)
        # the draws' dim goes last, then each draw adds one to its category's count
        samples = samples.permute(*range(1, samples.dim()), 0)
        counts = zeros(tuple(self._extended_shape(sample_shape)), dtype=samples.dtype,
                       device=samples.device)
        counts.scatter_add_(-1, samples, ones_like(samples))
        return counts.type_as(self.probs)

    def entropy(self):
        # torch takes lgamma of an integer tensor, so this term is rounded to float32 there too
        n = tensor(self.total_count, device=self.probs.device)
        term1 = n * self._categorical.entropy() - lgamma(n + 1)
        support = self._binomial.enumerate_support(expand=False)[1:]
        binomial_probs = E.exp(self._binomial.log_prob(support))
        weights = lgamma(support + 1)
        return term1 + (binomial_probs * weights).sum([0, -1])

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        # an impossible category drawn 0 times contributes 0, not 0 * -inf
        logits = E.where((value == 0) & (logits == -math.inf), 0.0, logits)
        log_factorial_n = lgamma(value.sum(-1) + 1)
        log_factorial_xs = lgamma(value + 1).sum(-1)
        return log_factorial_n - log_factorial_xs + (logits * value).sum(-1)
