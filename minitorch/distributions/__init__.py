"""torch.distributions: parametrised probability distributions with sampling (rsample is
reparameterised where torch's is; seeded draws are torch's CPU values), log_prob, moments,
entropy, cdf/icdf, constraints, the transforms and their registry (biject_to, transform_to),
and kl_divergence.

    import minitorch.distributions as D
    D.Normal(loc, scale).log_prob(x)
"""
import sys

# kl_more and kl_transformed register their KL divergences when imported
from . import constraint_registry, constraints, kl_more, kl_transformed, transforms  # noqa: F401
from . import continuous, discrete, distribution, gamma, transformed
from .constraint_registry import biject_to, transform_to
from .continuous import Cauchy, Exponential, Laplace, Normal, Uniform
from .continuous_bernoulli import ContinuousBernoulli
from .discrete import (Bernoulli, Binomial, Categorical, Geometric, Multinomial,
                       OneHotCategorical, Poisson)
from .distribution import Distribution, ExponentialFamily
from .fishersnedecor import FisherSnedecor
from .gamma import Beta, Chi2, Dirichlet, Gamma
from .generalized_pareto import GeneralizedPareto
from .gumbel import Gumbel
from .half_cauchy import HalfCauchy
from .half_normal import HalfNormal
from .independent import Independent
from .inverse_gamma import InverseGamma
from .kl import kl_divergence, register_kl
from .kumaraswamy import Kumaraswamy
from .lkj_cholesky import LKJCholesky
from .logistic_normal import LogisticNormal
from .lowrank_multivariate_normal import LowRankMultivariateNormal
from .mixture_same_family import MixtureSameFamily
from .multivariate_normal import MultivariateNormal
from .negative_binomial import NegativeBinomial
from .one_hot_categorical import OneHotCategoricalStraightThrough
from .pareto import Pareto
from .relaxed_bernoulli import RelaxedBernoulli
from .relaxed_categorical import RelaxedOneHotCategorical
from .studentT import StudentT
from .transformed import LogNormal, TransformedDistribution
from .transforms import (AbsTransform, AffineTransform, CatTransform, ComposeTransform,
                         CorrCholeskyTransform, CumulativeDistributionTransform, ExpTransform,
                         IndependentTransform, LowerCholeskyTransform, PositiveDefiniteTransform,
                         PowerTransform, ReshapeTransform, SigmoidTransform, SoftmaxTransform,
                         SoftplusTransform, StackTransform, StickBreakingTransform,
                         TanhTransform, Transform, identity_transform)
from .von_mises import VonMises
from .weibull import Weibull
from .wishart import Wishart

# torch's list, in torch's order
__all__ = ["Bernoulli", "Beta", "Binomial", "Categorical", "Cauchy", "Chi2", "ContinuousBernoulli",
           "Dirichlet", "Distribution", "Exponential", "ExponentialFamily", "FisherSnedecor",
           "Gamma", "GeneralizedPareto", "Geometric", "Gumbel", "HalfCauchy", "HalfNormal",
           "Independent", "InverseGamma", "Kumaraswamy", "LKJCholesky", "Laplace", "LogNormal",
           "LogisticNormal", "LowRankMultivariateNormal", "MixtureSameFamily", "Multinomial",
           "MultivariateNormal", "NegativeBinomial", "Normal", "OneHotCategorical",
           "OneHotCategoricalStraightThrough", "Pareto", "RelaxedBernoulli",
           "RelaxedOneHotCategorical", "StudentT", "Poisson", "Uniform", "VonMises", "Weibull",
           "Wishart", "TransformedDistribution", "biject_to", "kl_divergence", "register_kl",
           "transform_to", "AbsTransform", "AffineTransform", "CatTransform", "ComposeTransform",
           "CorrCholeskyTransform", "CumulativeDistributionTransform", "ExpTransform",
           "IndependentTransform", "LowerCholeskyTransform", "PositiveDefiniteTransform",
           "PowerTransform", "ReshapeTransform", "SigmoidTransform", "SoftplusTransform",
           "TanhTransform", "SoftmaxTransform", "StackTransform", "StickBreakingTransform",
           "Transform", "identity_transform"]

# torch's one-module-per-class names (`from torch.distributions.normal import Normal`): here
# several classes share a module, so each torch name points at the module holding its class
_TORCH_MODULES = {"bernoulli": discrete, "beta": gamma, "binomial": discrete,
                  "categorical": discrete, "cauchy": continuous, "chi2": gamma,
                  "dirichlet": gamma, "exp_family": distribution, "exponential": continuous,
                  "geometric": discrete, "laplace": continuous, "log_normal": transformed,
                  "multinomial": discrete, "normal": continuous, "poisson": discrete,
                  "transformed_distribution": transformed, "uniform": continuous}
for _name, _module in _TORCH_MODULES.items():
    globals()[_name] = _module
    sys.modules[f"{__name__}.{_name}"] = _module
