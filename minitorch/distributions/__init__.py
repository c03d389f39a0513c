"""torch.distributions: parametrised probability distributions with sampling (rsample is
reparameterised where torch's is), log_prob, moments, entropy, cdf/icdf, constraints and
kl_divergence.

    import minitorch.distributions as D
    D.Normal(loc, scale).log_prob(x)
"""
from . import constraints
from .continuous import Cauchy, Exponential, Laplace, Normal, Uniform
from .discrete import (Bernoulli, Binomial, Categorical, Geometric, Multinomial,
                       OneHotCategorical, Poisson)
from .distribution import Distribution, ExponentialFamily
from .gamma import Beta, Chi2, Dirichlet, Gamma
from .independent import Independent
from .kl import kl_divergence, register_kl
from .multivariate_normal import MultivariateNormal
from .transformed import (AffineTransform, ExpTransform, LogNormal, SigmoidTransform,
                          Transform, TransformedDistribution)

__all__ = ["AffineTransform", "Bernoulli", "Beta", "Binomial", "Categorical", "Cauchy",
           "Chi2", "Dirichlet", "Distribution", "ExpTransform", "Exponential",
           "ExponentialFamily", "Gamma", "Geometric", "Independent", "Laplace", "LogNormal",
           "Multinomial", "MultivariateNormal", "Normal", "OneHotCategorical", "Poisson",
           "SigmoidTransform", "Transform", "TransformedDistribution", "Uniform", "constraints",
           "kl_divergence", "register_kl"]
