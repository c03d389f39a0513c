"""torch's closed-form KL divergences involving ContinuousBernoulli and
LowRankMultivariateNormal, registered with kl.register_kl when this module is imported.
(OneHotCategoricalStraightThrough pairs dispatch to OneHotCategorical's KL.)"""
import math

from ..functions import elementwise as E
from ..functions.joining import broadcast_shapes
from ..linalg import solve_triangular
from ..tensor import full_like, ones_like
from .continuous import Exponential, Laplace, Normal, Uniform
from .continuous_bernoulli import ContinuousBernoulli
from .gamma import Beta, Gamma
from .kl import _batch_trace_XXT, register_kl
from .lowrank_multivariate_normal import (LowRankMultivariateNormal, batch_lowrank_logdet,
                                          batch_lowrank_mahalanobis)
from .multivariate_normal import MultivariateNormal, batch_mahalanobis, log_det_half

__all__ = []


@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_continuous_bernoulli_continuous_bernoulli(p, q):
    t1 = p.mean * (p.logits - q.logits)
    t2 = p._cont_bern_log_norm() + E.log1p(-p.probs)
    t3 = -q._cont_bern_log_norm() - E.log1p(-q.probs)
    return t1 + t2 + t3


def _cross_entropy_continuous_bernoulli(p_mean, q):
    """-E_p[log q] for a q ContinuousBernoulli: it depends on p through its mean only."""
    return -p_mean * q.logits - E.log1p(-q.probs) - q._cont_bern_log_norm()


@register_kl(Beta, ContinuousBernoulli)
def _kl_beta_continuous_bernoulli(p, q):
    return -p.entropy() + _cross_entropy_continuous_bernoulli(p.mean, q)


@register_kl(Uniform, ContinuousBernoulli)
def _kl_uniform_continuous_bernoulli(p, q):
    result = -p.entropy() + _cross_entropy_continuous_bernoulli(p.mean, q)
    # torch's test: infinite unless p's support lies strictly inside [0, 1]
    outside = p.high.ge(q.support.upper_bound) | p.low.le(q.support.lower_bound)
    return E.where(outside, ones_like(result) * math.inf, result)


@register_kl(ContinuousBernoulli, Exponential)
def _kl_continuous_bernoulli_exponential(p, q):
    return -p.entropy() - q.rate.log() + q.rate * p.mean


@register_kl(ContinuousBernoulli, Normal)
def _kl_continuous_bernoulli_normal(p, q):
    t1 = -p.entropy()
    t2 = 0.5 * (math.log(2.0 * math.pi) + (q.loc / q.scale).square()) + q.scale.log()
    t3 = (p.variance + p.mean.square() - 2.0 * q.loc * p.mean) / (2.0 * q.scale.square())
    return t1 + t2 + t3


@register_kl(ContinuousBernoulli, Uniform)
def _kl_continuous_bernoulli_uniform(p, q):
    result = -p.entropy() + (q.high - q.low).log()
    # torch's test, kept as it is: infinite when q.low >= 0 or q.high <= 1
    outside = q.low.ge(p.support.lower_bound) | q.high.le(p.support.upper_bound)
    return E.where(outside, ones_like(result) * math.inf, result)


def _infinite_like(param):
    return lambda p, q: full_like(getattr(p, param), math.inf)


# p is supported beyond [0, 1]: no ContinuousBernoulli covers it
for _p, _param in ((Exponential, "rate"), (Gamma, "concentration"), (Laplace, "loc"),
                   (Normal, "loc")):
    register_kl(_p, ContinuousBernoulli)(_infinite_like(_param))


def _check_event_shapes(p, q, what):
    if p.event_shape != q.event_shape:
        # torch's message has a run of spaces from a line continuation inside its string
        raise ValueError(f"KL-divergence between two {what} with{' ' * 26}different event "
                         "shapes cannot be computed")


def _woodbury_factor(q):
    """A with (W W^T + D)^-1 = D^-1 - A^T A for q's low-rank covariance."""
    qWt_qDinv = q._unbroadcasted_cov_factor.mT / q._unbroadcasted_cov_diag.unsqueeze(-2)
    return solve_triangular(q._capacitance_tril, qWt_qDinv, upper=False)


def _lowrank_logdet(d):
    return batch_lowrank_logdet(d._unbroadcasted_cov_factor, d._unbroadcasted_cov_diag,
                                d._capacitance_tril)


def _lowrank_mahalanobis(q, x):
    return batch_lowrank_mahalanobis(q._unbroadcasted_cov_factor, q._unbroadcasted_cov_diag,
                                     x, q._capacitance_tril)


@register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal)
def _kl_lowrankmultivariatenormal_lowrankmultivariatenormal(p, q):
    _check_event_shapes(p, q, "Low Rank Multivariate Normals")
    term1 = _lowrank_logdet(q) - _lowrank_logdet(p)
    term3 = _lowrank_mahalanobis(q, q.loc - p.loc)
    # trace(q_cov^-1 p_cov) = trace((qD^-1 - A^T A)(pD + pW pW^T))
    A = _woodbury_factor(q)
    pW, pD, qD = (p._unbroadcasted_cov_factor, p._unbroadcasted_cov_diag,
                  q._unbroadcasted_cov_diag)
    term21 = (pD / qD).sum(-1)
    term22 = _batch_trace_XXT(pW * qD.rsqrt().unsqueeze(-1))
    term23 = _batch_trace_XXT(A * pD.sqrt().unsqueeze(-2))
    term24 = _batch_trace_XXT(A @ pW)
    term2 = term21 + term22 - term23 - term24
    return 0.5 * (term1 + term2 + term3 - p.event_shape[0])


@register_kl(MultivariateNormal, LowRankMultivariateNormal)
def _kl_multivariatenormal_lowrankmultivariatenormal(p, q):
    _check_event_shapes(p, q, "(Low Rank) Multivariate Normals")
    p_tril = p._unbroadcasted_scale_tril
    term1 = _lowrank_logdet(q) - 2 * log_det_half(p_tril)
    term3 = _lowrank_mahalanobis(q, q.loc - p.loc)
    # trace(q_cov^-1 p_cov) = trace((qD^-1 - A^T A) pL pL^T)
    A = _woodbury_factor(q)
    term21 = _batch_trace_XXT(p_tril * q._unbroadcasted_cov_diag.rsqrt().unsqueeze(-1))
    term22 = _batch_trace_XXT(A @ p_tril)
    return 0.5 * (term1 + term21 - term22 + term3 - p.event_shape[0])


@register_kl(LowRankMultivariateNormal, MultivariateNormal)
def _kl_lowrankmultivariatenormal_multivariatenormal(p, q):
    _check_event_shapes(p, q, "(Low Rank) Multivariate Normals")
    q_tril = q._unbroadcasted_scale_tril
    term1 = 2 * log_det_half(q_tril) - _lowrank_logdet(p)
    term3 = batch_mahalanobis(q_tril, q.loc - p.loc)
    # trace(q_cov^-1 p_cov) = |qL^-1 pW|^2 + |qL^-1 pD^1/2|^2
    batch = tuple(broadcast_shapes(q_tril.shape[:-2], p._unbroadcasted_cov_factor.shape[:-2]))
    n = p.event_shape[0]
    q_scale_tril = q_tril.expand(batch + (n, n))
    p_cov_factor = p._unbroadcasted_cov_factor.expand(batch + (n, p.cov_factor.shape[-1]))
    p_cov_diag = p._unbroadcasted_cov_diag.sqrt().diag_embed().expand(batch + (n, n))
    term21 = _batch_trace_XXT(solve_triangular(q_scale_tril, p_cov_factor, upper=False))
    term22 = _batch_trace_XXT(solve_triangular(q_scale_tril, p_cov_diag, upper=False))
    return 0.5 * (term1 + term21 + term22 + term3 - p.event_shape[0])
