"""ContinuousBernoulli(probs=None, logits=None): the density proportional to
probs^x (1 - probs)^(1 - x) on [0, 1] (Loaiza-Ganem and Cunningham, NeurIPS 2019)."""
import math
import numbers

from ..autograd import no_grad
from ..functions import elementwise as E
from ..nn.functional import binary_cross_entropy_with_logits
from ..random import rand
from ..tensor import Size, ones_like, zeros_like
from . import constraints
from .discrete import check_one_of
from .distribution import ExponentialFamily
from .utils import (as_size, broadcast_all, clamp_probs, lazy_property, logits_to_probs,
                    probs_to_logits)

__all__ = ["ContinuousBernoulli"]


class ContinuousBernoulli(ExponentialFamily):
    """A continuous Bernoulli on [0, 1], parametrised by `probs` in (0, 1) or real `logits`
    (neither is a probability or log-odds here; the names follow Bernoulli's). Near probs = 1/2
    (inside `lims`) the normaliser, moments and cdf use Taylor expansions, as torch's do.
    rsample is the inverse cdf of a uniform draw."""
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    _mean_carrier_measure = 0
    has_rsample = True

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501), validate_args=None):
        check_one_of(probs, logits)
        if probs is not None:
            is_scalar = isinstance(probs, numbers.Number)
            (self.probs,) = broadcast_all(probs)
            # checked before the clamp below would make any probs pass; torch checks whenever
            # validate_args is given, even as False
            if validate_args is not None and not bool(
                    self.arg_constraints["probs"].check(self.probs).all()):
                raise ValueError("The parameter probs has invalid values")
            self.probs = clamp_probs(self.probs)
        else:
            is_scalar = isinstance(logits, numbers.Number)
            (self.logits,) = broadcast_all(logits)
        self._param = self.probs if probs is not None else self.logits
        self._lims = lims
        batch_shape = Size() if is_scalar else self._param.shape
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(ContinuousBernoulli, _instance)
        new._lims = self._lims
        batch_shape = as_size(batch_shape)
        for name in ("probs", "logits"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(batch_shape))
                new._param = new.__dict__[name]
        return self._finish_expand(new, batch_shape)

    def _outside_unstable_region(self):
        return self.probs.le(self._lims[0]) | self.probs.gt(self._lims[1])

    def _cut_probs(self):
        """probs, with those in the unstable region moved to its lower edge (where the closed
        forms are finite; the Taylor branch replaces their results)."""
        return E.where(self._outside_unstable_region(), self.probs,
                       self._lims[0] * ones_like(self.probs))

    def _cont_bern_log_norm(self):
        """The log normalising constant as a function of probs."""
        cut_probs = self._cut_probs()
        cut_probs_below_half = E.where(cut_probs.le(0.5), cut_probs, zeros_like(cut_probs))
        cut_probs_above_half = E.where(cut_probs.ge(0.5), cut_probs, ones_like(cut_probs))
        log_norm = ((E.log1p(-cut_probs) - cut_probs.log()).abs().log()
                    - E.where(cut_probs.le(0.5), E.log1p(-2.0 * cut_probs_below_half),
                              (2.0 * cut_probs_above_half - 1.0).log()))
        x = (self.probs - 0.5).pow(2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return E.where(self._outside_unstable_region(), log_norm, taylor)

    @property
    def mean(self):
        cut_probs = self._cut_probs()
        mus = (cut_probs / (2.0 * cut_probs - 1.0)
               + 1.0 / (E.log1p(-cut_probs) - cut_probs.log()))
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x.pow(2)) * x
        return E.where(self._outside_unstable_region(), mus, taylor)

    @property
    def stddev(self):
        return self.variance.sqrt()

    @property
    def variance(self):
        cut_probs = self._cut_probs()
        variances = (cut_probs * (cut_probs - 1.0) / (1.0 - 2.0 * cut_probs).pow(2)
                     + 1.0 / (E.log1p(-cut_probs) - cut_probs.log()).pow(2))
        x = (self.probs - 0.5).pow(2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return E.where(self._outside_unstable_region(), variances, taylor)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    @property
    def param_shape(self):
        return self._param.shape

    def sample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        u = rand(shape, dtype=self.probs.dtype, device=self.probs.device)
        with no_grad():
            return self.icdf(u)

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        u = rand(shape, dtype=self.probs.dtype, device=self.probs.device)
        return self.icdf(u)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return (-binary_cross_entropy_with_logits(logits, value, reduction="none")
                + self._cont_bern_log_norm())

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        cut_probs = self._cut_probs()
        cdfs = ((cut_probs.pow(value) * (1.0 - cut_probs).pow(1.0 - value) + cut_probs - 1.0)
                / (2.0 * cut_probs - 1.0))
        unbounded_cdfs = E.where(self._outside_unstable_region(), cdfs, value)
        return E.where(value.le(0.0), zeros_like(value),
                       E.where(value.ge(1.0), ones_like(value), unbounded_cdfs))

    def icdf(self, value):
        cut_probs = self._cut_probs()
        inverse = ((E.log1p(-cut_probs + value * (2.0 * cut_probs - 1.0))
                    - E.log1p(-cut_probs))
                   / (cut_probs.log() - E.log1p(-cut_probs)))
        return E.where(self._outside_unstable_region(), inverse, value)

    def entropy(self):
        log_probs0 = E.log1p(-self.probs)
        log_probs1 = self.probs.log()
        return self.mean * (log_probs0 - log_probs1) - self._cont_bern_log_norm() - log_probs0

    @property
    def _natural_params(self):
        return (self.logits,)

    def _log_normalizer(self, x):
        """The log normalising constant as a function of the natural parameter (logits)."""
        out_unst_reg = x.le(self._lims[0] - 0.5) | x.gt(self._lims[1] - 0.5)
        cut_nat_params = E.where(out_unst_reg, x, (self._lims[0] - 0.5) * ones_like(x))
        log_norm = E.expm1(cut_nat_params).abs().log() - cut_nat_params.abs().log()
        taylor = 0.5 * x + x.pow(2) / 24.0 - x.pow(4) / 2880.0
        return E.where(out_unst_reg, log_norm, taylor)
