"""NegativeBinomial(total_count, probs=None, logits=None): the number of successes before
total_count failures, drawn as a Poisson whose rate is Gamma distributed."""
from ..autograd import no_grad
from ..functions import elementwise as E
from ..functions.special_functions import lgamma
from ..nn.functional import logsigmoid
from ..random import poisson
from ..tensor import Size
from . import constraints
from .discrete import check_one_of
from .distribution import Distribution
from .gamma import Gamma
from .utils import as_size, broadcast_all, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["NegativeBinomial"]


class NegativeBinomial(Distribution):
    """Successes of independent Bernoulli trials (success probability `probs`, or log-odds
    `logits`) before `total_count` failures; total_count may be any non-negative real."""
    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0),
                       "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        check_one_of(probs, logits)
        name, value = ("probs", probs) if probs is not None else ("logits", logits)
        total_count, param = broadcast_all(total_count, value)
        self.total_count = total_count.type_as(param)
        setattr(self, name, param)
        self._param = param
        super().__init__(param.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(NegativeBinomial, _instance)
        batch_shape = as_size(batch_shape)
        new.total_count = self.total_count.expand(batch_shape)
        for name in ("probs", "logits"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(batch_shape))
                new._param = new.__dict__[name]
        return self._finish_expand(new, batch_shape)

    @property
    def mean(self):
        return self.total_count * E.exp(self.logits)

    @property
    def mode(self):
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self):
        return self.mean / E.sigmoid(-self.logits)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self):
        return self._param.shape

    @lazy_property
    def _gamma(self):
        # not validated: total_count may be 0
        return Gamma(concentration=self.total_count, rate=E.exp(-self.logits),
                     validate_args=False)

    def sample(self, sample_shape=Size()):
        with no_grad():
            rate = self._gamma.sample(sample_shape=sample_shape)
            return poisson(rate)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_unnormalized_prob = (self.total_count * logsigmoid(-self.logits)
                                 + value * logsigmoid(self.logits))
        log_normalization = (-lgamma(self.total_count + value) + lgamma(1.0 + value)
                             + lgamma(self.total_count))
        # total_count = 0 puts all mass on 0, where lgamma(0) is infinite
        log_normalization = log_normalization.masked_fill(self.total_count + value == 0.0, 0.0)
        return log_unnormalized_prob - log_normalization
