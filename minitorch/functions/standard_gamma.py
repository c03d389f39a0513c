"""torch's _standard_gamma and _standard_gamma_grad: Gamma(alpha, 1) draws (torch's CPU sampler
on its stream: random.gamma_into) whose gradient is the implicit reparameterisation
d sample / d alpha, computed from the gamma CDF with minitorch ops in float64 as torch does.
Each is a node of its own."""
import numpy as np

from .. import dtypes
from ..autograd import KernelFunction
from ..ndarray import NDArray
from ..random import gamma_into
from ..tensor import wrap
from . import elementwise as E
from . import special_functions
from . import compare

__all__ = []   # distributions/gamma.py samples with these


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
    cdf_alpha = (x.log() - special_functions.digamma(alpha)) * cdf - pow_x_alpha * series2
    result = -cdf_alpha / pdf
    return E.where(compare.isnan(result), 0.0, result)


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


class _StandardGammaGrad(KernelFunction):
    """The gradient factor as a node of its own: torch defines no derivative for it, so a
    double backward through a gamma sample raises instead of silently missing a term."""

    @staticmethod
    def forward(ctx, alpha, x):
        # an internal forward records nothing: the factor is computed from detached operands
        return standard_gamma_grad(alpha.detach(), x.detach())

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError("the derivative for '_standard_gamma_grad' is not implemented.")


class _StandardGamma(KernelFunction):
    """Gamma(alpha, 1) draws with implicit reparameterisation gradients."""

    @staticmethod
    def forward(ctx, alpha):
        # drawn on the host in alpha's compute dtype (float16 / bfloat16 as float32), each at
        # least the dtype's smallest normal (torch's clamp keeps log_prob and the gradient
        # finite), then rounded to alpha's dtype
        wide = alpha.dtype.compute
        alphas = np.array(alpha.detach().cpu().numpy(), wide.storage, order="C")  # 0-d kept
        draws = np.empty_like(alphas)
        gamma_into(alphas, draws)
        sample = wrap(NDArray.from_numpy(draws, wide, alpha.device)).to(alpha.dtype)
        if alpha.dtype is not wide:
            sample = sample.clamp(min=dtypes.finfo(alpha.dtype).tiny)
        ctx.save_for_backward(alpha, sample)
        return sample

    @staticmethod
    def backward(ctx, grad):
        alpha, sample = ctx.saved_tensors
        return grad * _StandardGammaGrad.apply(alpha, sample)


def standard_gamma(alpha):
    return _StandardGamma.apply(alpha)
