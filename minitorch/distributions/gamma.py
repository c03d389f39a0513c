"""The gamma family: Gamma, Chi2, Dirichlet, Beta. Draws come from numpy's gamma sampler on the
host; rsample's gradient is torch's implicit reparameterisation (d sample / d concentration
from the gamma CDF, `_standard_gamma_grad`), computed with minitorch ops."""
from .. import dtypes
from ..autograd import Function
from ..functions import elementwise as E
from ..functions.float_math import xlogy
from ..functions.special_functions import digamma, lgamma
from ..functions.compare import isnan
from ..functions.joining import stack
from ..nn.functional import one_hot
from ..random import _draw
from ..special import gammainc
from ..tensor import Size, as_tensor, tensor
from . import constraints
from .continuous import init_broadcast
from .distribution import ExponentialFamily
from .utils import broadcast_all, is_number

__all__ = ["Beta", "Chi2", "Dirichlet", "Gamma"]

# torch's bivariate rational approximation of the gradient for small alpha and x >= 0.8
_RATIONAL_COEFFICIENTS = (
    (0.16009398, -0.094634809, 0.025146376, -0.0030648343,
     1, 0.32668115, 0.10406089, 0.0014179084),
    (0.53487893, 0.1298071, 0.065735949, -0.0015649758,
     0.16639465, 0.020070113, -0.0035938915, -0.00058392623),
    (0.040121004, -0.0065914022, -0.0026286047, -0.0013441777,
     0.017050642, -0.0021309326, 0.00085092367, -1.5247877e-07),
)


def _grad_small_x(alpha, x):
    """Taylor series of the gamma CDF and its alpha-derivative (torch's branch for x < 0.8)."""
    numer, denom = 1.0, alpha
    series1, series2 = 1 / denom, 1 / (denom * denom)
    for i in range(1, 6):
        numer = numer * (-x / i)
        denom = denom + 1
        series1 = series1 + numer / denom
        series2 = series2 + numer / (denom * denom)
    pow_x_alpha = x ** alpha
    pdf = x ** (alpha - 1) * E.exp(-x)
    cdf = pow_x_alpha * series1
    cdf_alpha = (x.log() - digamma(alpha)) * cdf - pow_x_alpha * series2
    result = -cdf_alpha / pdf
    return E.where(isnan(result), 0.0, result)


def _grad_large_alpha(alpha, x):
    """Rice saddle-point expansion (torch's branch for alpha > 8)."""
    numer_1 = 1 + 24 * alpha * (1 + 12 * alpha)
    numer_2 = (1440 * alpha * alpha + 6 * x * (53 - 120 * x) - 65 * x * x / alpha
               + alpha * (107 + 3600 * x))
    near_mode = numer_1 * numer_2 / (1244160 * (alpha * alpha) * (alpha * alpha))
    denom = (8 * alpha).sqrt()
    term2 = denom / (alpha - x)
    term3 = (x - alpha - alpha * (x / alpha).log()) ** -1.5
    term23 = E.where(x < alpha, term2 - term3, term2 + term3)
    term1 = (x / alpha).log() * term23 - (2 / alpha).sqrt() * (alpha + x) / ((alpha - x) ** 2)
    stirling = 1 + 1 / (12 * alpha) * (1 + 1 / (24 * alpha))
    far = -stirling * x * term1 / denom
    return E.where((0.9 * alpha <= x) & (x <= 1.1 * alpha), near_mode, far)


def _grad_rational(alpha, x):
    u, v = (x / alpha).log(), alpha.log()
    coef = [c0 + u * (c1 + u * c2) for c0, c1, c2 in zip(*_RATIONAL_COEFFICIENTS)]
    p = coef[0] + v * (coef[1] + v * (coef[2] + v * coef[3]))
    q = coef[4] + v * (coef[5] + v * (coef[6] + v * coef[7]))
    return E.exp(p / q)


def standard_gamma_grad(alpha, x):
    """d x / d alpha for x ~ Gamma(alpha, 1) drawn by inverting the CDF (torch's
    `_standard_gamma_grad`), computed in float64 like torch's accumulate type."""
    alpha64, x64 = alpha.to(dtypes.float64), x.to(dtypes.float64)
    result = E.where(x64 < 0.8, _grad_small_x(alpha64, x64),
                     E.where(alpha64 > 8.0, _grad_large_alpha(alpha64, x64),
                             _grad_rational(alpha64, x64)))
    return result.to(x.dtype)


class _StandardGammaGrad(Function):
    """The gradient factor as a node of its own: torch defines no derivative for it, so a
    double backward through a gamma sample raises instead of silently missing a term."""

    @staticmethod
    def forward(ctx, alpha, x):
        return standard_gamma_grad(alpha, x)

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError("the derivative for '_standard_gamma_grad' is not implemented.")


class _StandardGamma(Function):
    """Gamma(alpha, 1) draws with implicit reparameterisation gradients."""

    @staticmethod
    def forward(ctx, alpha):
        shapes = alpha.detach().cpu().numpy()
        draws = _draw((tuple(alpha.shape),), alpha.dtype, alpha.device, False, None,
                      lambda rng, shape: rng.standard_gamma(shapes))
        # torch clamps draws that underflow to 0, keeping log_prob and the gradient finite
        sample = draws.clamp(min=dtypes.finfo(alpha.dtype).tiny)
        ctx.save_for_backward(alpha, sample)
        return sample

    @staticmethod
    def backward(ctx, grad):
        alpha, sample = ctx.saved_tensors
        return grad * _StandardGammaGrad.apply(alpha, sample)


def standard_gamma(alpha):
    return _StandardGamma.apply(alpha)


class Gamma(ExponentialFamily):
    """Gamma(concentration, rate)."""
    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _batched_params = ("concentration", "rate")

    def __init__(self, concentration, rate, validate_args=None):
        init_broadcast(self, ("concentration", "rate"), (concentration, rate), validate_args)

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        return standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)

    def log_prob(self, value):
        value = as_tensor(value, dtype=self.rate.dtype, device=self.rate.device)
        if self._validate_args:
            self._validate_sample(value)
        return (xlogy(self.concentration, self.rate)
                + xlogy(self.concentration - 1, value)
                - self.rate * value - lgamma(self.concentration))

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return gammainc(self.concentration, self.rate * value)

    def entropy(self):
        return (self.concentration - self.rate.log() + lgamma(self.concentration)
                + (1.0 - self.concentration) * digamma(self.concentration))


class Chi2(Gamma):
    """Chi2(df) = Gamma(df / 2, 1 / 2)."""
    arg_constraints = {"df": constraints.positive}

    def __init__(self, df, validate_args=None):
        super().__init__(0.5 * df, 0.5, validate_args=validate_args)

    @property
    def df(self):
        return self.concentration * 2


class Dirichlet(ExponentialFamily):
    """Dirichlet(concentration): the last dimension of concentration is the event."""
    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True
    _batched_params = ("concentration",)

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        super().__init__(concentration.shape[:-1], concentration.shape[-1:],
                         validate_args=validate_args)

    def rsample(self, sample_shape=()):
        # Normalised independent gammas are Dirichlet; their implicit gradients chain through
        # the normalisation (torch differentiates the Dirichlet CDF directly instead: the
        # expected gradient is the same, individual pathwise values differ).
        shape = tuple(self._extended_shape(sample_shape))
        gammas = standard_gamma(self.concentration.expand(shape))
        return gammas / gammas.sum(-1, True)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (xlogy(self.concentration - 1.0, value).sum(-1)
                + lgamma(self.concentration.sum(-1)) - lgamma(self.concentration).sum(-1))

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, True)

    @property
    def mode(self):
        shifted = (self.concentration - 1).clamp(min=0.0)
        mode = shifted / shifted.sum(-1, True)
        # every concentration below 1: torch puts all mass on the arg-max of the NaN row
        corner = one_hot(mode.argmax(-1), shifted.shape[-1]).to(mode)
        return E.where((self.concentration < 1).all(-1, True), corner, mode)

    @property
    def variance(self):
        total = self.concentration.sum(-1, True)
        return self.concentration * (total - self.concentration) / (total.pow(2) * (total + 1))

    def entropy(self):
        k = self.concentration.shape[-1]
        total = self.concentration.sum(-1)
        return (lgamma(self.concentration).sum(-1) - lgamma(total)
                - (k - total) * digamma(total)
                - ((self.concentration - 1.0) * digamma(self.concentration)).sum(-1))


class Beta(ExponentialFamily):
    """Beta(concentration1, concentration0), a two-component Dirichlet's first component."""
    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        if is_number(concentration1) and is_number(concentration0):
            both = tensor([float(concentration1), float(concentration0)])
        else:
            both = stack(broadcast_all(concentration1, concentration0), -1)
        self._dirichlet = Dirichlet(both, validate_args=validate_args)
        super().__init__(self._dirichlet._batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Beta, _instance)
        new._dirichlet = self._dirichlet.expand(batch_shape)
        return self._finish_expand(new, Size(tuple(batch_shape)))

    @property
    def concentration1(self):
        return self._dirichlet.concentration[..., 0]

    @property
    def concentration0(self):
        return self._dirichlet.concentration[..., 1]

    @property
    def mean(self):
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self):
        return self._dirichlet.mode[..., 0]

    @property
    def variance(self):
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape=()):
        return self._dirichlet.rsample(sample_shape).select(-1, 0)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self._dirichlet.log_prob(stack([value, 1.0 - value], -1))

    def entropy(self):
        return self._dirichlet.entropy()
