"""torch.distributions: parametrised probability distributions with sampling (rsample is
reparameterised where torch's is), log_prob, moments, entropy, cdf/icdf, constraints and
kl_divergence.

    import minitorch.distributions as D
    D.Normal(loc, scale).log_prob(x)
"""
from . import constraints, kl_more  # noqa: F401  (kl_more registers its KL divergences)
from .continuous import Cauchy, Exponential, Laplace, Normal, Uniform
from .continuous_bernoulli import ContinuousBernoulli
from .discrete import (Bernoulli, Binomial, Categorical, Geometric, Multinomial,
                       OneHotCategorical, Poisson)
from .distribution import Distribution, ExponentialFamily
from .fishersnedecor import FisherSnedecor
from .gamma import Beta, Chi2, Dirichlet, Gamma
from .generalized_pareto import GeneralizedPareto
from .independent import Independent
from .kl import kl_divergence, register_kl
from .lowrank_multivariate_normal import LowRankMultivariateNormal
from .mixture_same_family import MixtureSameFamily
from .multivariate_normal import MultivariateNormal
from .negative_binomial import NegativeBinomial
from .one_hot_categorical import OneHotCategoricalStraightThrough
from .studentT import StudentT
from .von_mises import VonMises
from .transformed import (AffineTransform, ExpTransform, LogNormal, SigmoidTransform,
                          Transform, TransformedDistribution)

__all__ = ["AffineTransform", "Bernoulli", "Beta", "Binomial", "Categorical", "Cauchy",
           "Chi2", "ContinuousBernoulli", "Dirichlet", "Distribution", "ExpTransform",
           "Exponential", "ExponentialFamily", "FisherSnedecor", "Gamma", "GeneralizedPareto",
           "Geometric", "Independent", "Laplace", "LogNormal", "LowRankMultivariateNormal",
           "MixtureSameFamily", "Multinomial", "MultivariateNormal", "NegativeBinomial", "Normal",
           "OneHotCategorical", "OneHotCategoricalStraightThrough", "Poisson", "SigmoidTransform",
           "StudentT", "Transform", "TransformedDistribution", "Uniform", "VonMises",
           "constraints", "kl_divergence", "register_kl"]
