"""Special functions: lgamma, digamma and polygamma, erfinv, the Bessel family, the incomplete
gamma functions, zeta, logit, sinc, entr, ndtr, gcd / lcm and friends (torch.special and their
top-level spellings). Their math is in the kernels' special-function code; gradients are
written with Tensor ops, so they can be differentiated again where torch can."""
import math
import numbers

import numpy as np

from .. import dtypes
from ..autograd import KernelFunction
from ..ndarray import NDArray, scalar_array
from ..opcodes import BinaryOp as B, UnaryOp as U
from ..tensor import wrap, zeros
from .autocast_policy import batching_point
from .elementwise import (_Binary, _Unary, _UnarySavingInput, _UnarySavingOutput, _as_operand,
                          _binary, _check_tensor, _float_input, _no_kernel, _unary, cos, exp, log,
                          mul, result_type, sign, sin, where)
from .float_math import _BinarySavingAll, _float_only_binary, erfc, xlogy
from .reduce import sum_to


__all__ = [
    'digamma', 'erfinv', 'gcd', 'i0', 'igamma', 'igammac', 'lcm', 'ldexp', 'lgamma', 'logit',
    'mvlgamma', 'nextafter', 'polygamma', 'sinc',
]


class Lgamma(_UnarySavingInput):
    op = U.LGAMMA

    @staticmethod
    def backward(ctx, g):
        a, = ctx.saved_tensors
        return g * digamma(a)


class Digamma(_UnarySavingInput):
    op = U.DIGAMMA

    @staticmethod
    def backward(ctx, g):
        a, = ctx.saved_tensors
        return g * Polygamma.apply(a, 1)


def lgamma(a):
    """Elementwise log of the absolute value of the gamma function (torch.lgamma,
    special.gammaln)."""
    return _unary(Lgamma, a)


def digamma(a):
    """Elementwise digamma (psi), the derivative of lgamma (torch.digamma, special.psi)."""
    return _unary(Digamma, a)


class _UnarySavingBoth(_Unary):
    @classmethod
    def forward(cls, ctx, a):
        out = wrap(a._data.unary(cls.op))
        ctx.save_for_backward(a, out)
        return out


class Erfinv(_UnarySavingOutput):
    op = U.ERFINV

    @staticmethod
    def backward(ctx, g):
        out, = ctx.saved_tensors
        return g * exp(out * out) * (math.sqrt(math.pi) / 2)


class I0(_UnarySavingInput):
    op = U.I0

    @staticmethod
    def backward(ctx, g):
        a, = ctx.saved_tensors
        return g * special_i1(a)


class SpecialI0E(_UnarySavingBoth):
    op = U.I0E

    @staticmethod
    def backward(ctx, g):
        a, out = ctx.saved_tensors
        return g * (special_i1e(a) - sign(a) * out)


def _away_from_zero(a):
    """(|a| > eps, a with its tiny values replaced by eps): torch's i1/i1e backward divides by
    the input, and puts their limit 1/2 at zero instead."""
    eps = dtypes.finfo(a.dtype).eps
    not_tiny = abs(a) > eps
    return not_tiny, where(not_tiny, a, wrap(scalar_array(eps, a.dtype, a.device)))


class SpecialI1(_UnarySavingBoth):
    op = U.I1

    @staticmethod
    def backward(ctx, g):
        a, out = ctx.saved_tensors
        not_tiny, safe = _away_from_zero(a)
        half = wrap(scalar_array(0.5, g.dtype, g.device))
        return g * where(not_tiny, i0(safe) - out / safe, half)


class SpecialI1E(_UnarySavingBoth):
    op = U.I1E

    @staticmethod
    def backward(ctx, g):
        a, out = ctx.saved_tensors
        not_tiny, safe = _away_from_zero(a)
        half = wrap(scalar_array(0.5, g.dtype, g.device))
        return g * where(not_tiny, special_i0e(safe) - out * (sign(safe) + 1 / safe), half)


class SpecialNdtri(_UnarySavingOutput):
    op = U.NDTRI

    @staticmethod
    def backward(ctx, g):
        out, = ctx.saved_tensors
        return g * exp(out * out * 0.5) * math.sqrt(2 * math.pi)


class SpecialLogNdtr(_UnarySavingBoth):
    op = U.LOG_NDTR

    @staticmethod
    def backward(ctx, g):
        a, out = ctx.saved_tensors
        return g / math.sqrt(2 * math.pi) * exp(-(out + a * a / 2))


class SpecialErfcx(_UnarySavingBoth):
    op = U.ERFCX

    @staticmethod
    def backward(ctx, g):
        a, out = ctx.saved_tensors
        return (a * out * 2 - 2 / math.sqrt(math.pi)) * g


def _special_unary(fn, a, name):
    """A float-valued special function (integer and bool inputs computed in the default float
    dtype), checked under torch's name for it."""
    _check_tensor(a, name)
    return fn.apply(_float_input(a))


def erfinv(input):
    """Elementwise inverse error function (torch.erfinv)."""
    return _special_unary(Erfinv, input, "erfinv")


def i0(input):
    """Elementwise modified Bessel function of the first kind, order 0 (torch.i0)."""
    return _special_unary(I0, input, "i0")


def special_i0e(input):
    """Elementwise exponentially scaled modified Bessel function exp(-|x|) * i0(x)
    (torch.special.i0e)."""
    return _special_unary(SpecialI0E, input, "special_i0e")


def special_i1(input):
    """Elementwise modified Bessel function of the first kind, order 1 (torch.special.i1)."""
    return _special_unary(SpecialI1, input, "special_i1")


def special_i1e(input):
    """Elementwise exponentially scaled modified Bessel function exp(-|x|) * i1(x)
    (torch.special.i1e)."""
    return _special_unary(SpecialI1E, input, "special_i1e")


def special_ndtri(input):
    """Elementwise inverse of the standard normal CDF (torch.special.ndtri)."""
    return _special_unary(SpecialNdtri, input, "special_ndtri")


def special_log_ndtr(input):
    """Elementwise log of the standard normal CDF (torch.special.log_ndtr)."""
    return _special_unary(SpecialLogNdtr, input, "special_log_ndtr")


def special_erfcx(input):
    """Elementwise scaled complementary error function exp(x**2) * erfc(x)
    (torch.special.erfcx)."""
    return _special_unary(SpecialErfcx, input, "special_erfcx")


def _no_gradient_unary(op, input, name):
    """Bessel J0/J1: torch records no gradient for them (the result never requires grad)."""
    _check_tensor(input, name)
    return wrap(_float_input(input)._data.unary(op))


def special_bessel_j0(input):
    """Elementwise Bessel function of the first kind, order 0 (torch.special.bessel_j0)."""
    return _no_gradient_unary(U.BESSEL_J0, input, "special_bessel_j0")


def special_bessel_j1(input):
    """Elementwise Bessel function of the first kind, order 1 (torch.special.bessel_j1)."""
    return _no_gradient_unary(U.BESSEL_J1, input, "special_bessel_j1")


def special_spherical_bessel_j0(input):
    """sin(x) / x (1 at 0, 0 at ±inf). Like torch, it records no gradient."""
    return _no_gradient_unary(U.SPHERICAL_BESSEL_J0, input, "special_spherical_bessel_j0")


def _polygamma_data(x, n):
    """polygamma(n, x) as torch's calc_polygamma: digamma, trigamma, then
    (-1)^(n+1) n! zeta(n + 1, x)."""
    if n == 0:
        return x.unary(U.DIGAMMA)
    if n == 1:
        return x.unary(U.TRIGAMMA)
    log_factorial = math.lgamma(n + 1.0)
    factorial = math.inf if log_factorial > 709.78 else math.exp(log_factorial)
    order = scalar_array(float(n + 1), x.dtype, x.device)
    factor = scalar_array(factorial if n % 2 else -factorial, x.dtype, x.device)
    return order.binary(B.ZETA, x).binary(B.MUL, factor)


class Polygamma(KernelFunction):
    """polygamma(n, x); its derivative is polygamma(n + 1, x), so any order differentiates."""

    @staticmethod
    def forward(ctx, a, n):
        ctx.save_for_backward(a)
        ctx.n = n
        return wrap(_polygamma_data(a._data, n))

    @staticmethod
    def backward(ctx, g):
        a, = ctx.saved_tensors
        return g * Polygamma.apply(a, ctx.n + 1), None


def polygamma(n, input):
    """Elementwise n-th derivative of the digamma function (torch.polygamma)."""
    if not isinstance(n, numbers.Integral) or isinstance(n, (bool, np.bool_)):
        raise TypeError(f"polygamma(): argument 'n' (position 1) must be int, not "
                        f"{type(n).__name__}")
    _check_tensor(input, "polygamma", 2)
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    return Polygamma.apply(_float_input(input), int(n))


def _not_differentiable(ctx, position, what):
    """torch's error for an input whose derivative it does not implement (only raised when
    that input needs a gradient)."""
    if ctx.needs_input_grad[position]:
        raise NotImplementedError(f"the derivative for '{what}' is not implemented.")


class SpecialZeta(_Binary):
    """Hurwitz zeta(x, q): differentiable in q only, as in torch."""
    op = B.ZETA

    @classmethod
    def forward(cls, ctx, a, b):
        ctx.save_for_backward(a, b)
        ctx.shapes = (a._data.shape, b._data.shape)
        return wrap(a._data.binary(B.ZETA, b._data))

    @staticmethod
    def backward(ctx, g):
        _not_differentiable(ctx, 0, "zeta")
        a, b = ctx.saved_tensors
        return None, sum_to(g * -a * special_zeta(a + 1, b), ctx.shapes[1])


class Igamma(_Binary):
    """Regularized lower incomplete gamma P(a, x): differentiable in x only, as in torch."""
    op = B.IGAMMA
    sign = 1

    @classmethod
    def forward(cls, ctx, a, b):
        ctx.save_for_backward(a, b)
        ctx.shapes = (a._data.shape, b._data.shape)
        return wrap(a._data.binary(cls.op, b._data))

    @classmethod
    def backward(cls, ctx, g):
        _not_differentiable(ctx, 0, f"{cls.op.name.lower()}: input")
        a, x = ctx.saved_tensors
        density = exp((a - 1) * log(x) - x - lgamma(a))      # d/dx of P(a, x)
        return None, sum_to(g * density * cls.sign, ctx.shapes[1])


class Igammac(Igamma):
    op = B.IGAMMAC
    sign = -1


class SpecialXlog1py(_BinarySavingAll):
    op = B.XLOG1PY

    @staticmethod
    def backward(ctx, g):
        a, b, _ = ctx.saved_tensors
        a_shape, b_shape = ctx.shapes
        zero = wrap(scalar_array(0, g.dtype, g.device))
        grad_a = where((a == 0) & (b <= -1), zero, special_xlog1py(g, b))
        return sum_to(grad_a, a_shape), sum_to(g * a / (b + 1), b_shape)


class Nextafter(_Binary):
    """A step to the neighbouring float: torch passes the gradient to input unchanged and
    gives other zero."""
    op = B.NEXTAFTER

    @staticmethod
    def backward(ctx, g):
        a_shape, b_shape = ctx.shapes
        grad_b = zeros(*b_shape, dtype=g.dtype, device=g.device) \
            if ctx.needs_input_grad[1] else None
        return sum_to(g, a_shape), grad_b


def special_zeta(input, other):
    """Hurwitz zeta(input, other); either may be a number (integers compute in float)."""
    return _binary(SpecialZeta, input, other, floating=True)


def special_xlog1py(input, other):
    """input * log1p(other), 0 where input == 0 unless other is NaN; either may be a number."""
    return _binary(SpecialXlog1py, input, other, floating=True)


def igamma(input, other):
    """Elementwise regularized lower incomplete gamma function P(input, other) (torch.igamma)."""
    return _float_only_binary(Igamma, "igamma", input, other)


def igammac(input, other):
    """Elementwise regularized upper incomplete gamma function Q(input, other) (torch.igammac)."""
    return _float_only_binary(Igammac, "igammac", input, other)


def nextafter(input, other):
    """Elementwise next floating-point value after input in the direction of other
    (torch.nextafter)."""
    return _float_only_binary(Nextafter, "nextafter", input, other)


def _integer_only_binary(op, kernel, input, other):
    """gcd / lcm: integer kernels only (uint8 runs in int64); integer results carry no
    gradient, so there is no autograd node."""
    _check_tensor(input, kernel)
    _check_tensor(other, kernel, 2, "other")
    dtype = result_type(input, other)
    if dtype.is_floating_point or dtype is dtypes.bool_:
        raise _no_kernel(kernel, dtype, input.device)
    a, b = (_as_operand(x, dtype, input.device) for x in (input, other))
    return wrap(a._data.binary(op, b._data))


def gcd(input, other):
    """Elementwise greatest common divisor of integer tensors (torch.gcd)."""
    return _integer_only_binary(B.GCD, "gcd", input, other)


def lcm(input, other):
    """Elementwise least common multiple of integer tensors (torch.lcm)."""
    return _integer_only_binary(B.LCM, "lcm", input, other)


# composites of the kernels above and older ones
class Logit(KernelFunction):
    """log(x / (1 - x)), x first clamped to [eps, 1 - eps] when eps is given; torch's gradient
    is NaN outside [0, 1] without eps and 0 outside [eps, 1 - eps] with it."""

    @staticmethod
    def forward(ctx, a, eps):
        ctx.save_for_backward(a)
        ctx.eps = eps
        if eps is None:
            x = a
        else:       # torch's order: below eps first (so eps > 0.5 gives eps, as in torch)
            x = where(a < eps, eps, where(a > 1 - eps, 1 - eps, a))
        return log(x / (1 - x))

    @staticmethod
    def backward(ctx, g):
        a, = ctx.saved_tensors
        eps = ctx.eps
        low, high, outside_value = (0, 1, math.nan) if eps is None else (eps, 1 - eps, 0)
        fill = wrap(scalar_array(outside_value, g.dtype, g.device))
        return where((a < low) | (a > high), fill, g / (a * (1 - a))), None


@batching_point
def logit(input, eps=None):
    """Elementwise log(p / (1 - p)), with input clamped to [eps, 1 - eps] when eps is given
    (torch.logit)."""
    _check_tensor(input, "logit")
    return Logit.apply(_float_input(input), None if eps is not None and eps < 0 else eps)


class Sinc(KernelFunction):
    """sin(pi x) / (pi x), 1 at 0, with torch's derivative (0 at 0)."""

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        scaled = a * math.pi
        one = wrap(scalar_array(1, a.dtype, a.device))
        return where(a == 0, one, sin(scaled) / scaled)

    @staticmethod
    def backward(ctx, g):
        a, = ctx.saved_tensors
        scaled = a * math.pi
        slope = (scaled * cos(scaled) - sin(scaled)) / (scaled * a)
        zero = wrap(scalar_array(0, g.dtype, g.device))
        return where(a == 0, zero, slope) * g


@batching_point
def sinc(input):
    """Elementwise normalized sinc sin(pi x) / (pi x), 1 at x = 0 (torch.sinc)."""
    _check_tensor(input, "sinc")
    return Sinc.apply(_float_input(input))


def ldexp(input, other):
    """input * 2**other, as torch computes it."""
    _check_tensor(input, "ldexp")
    _check_tensor(other, "ldexp", 2, "other")
    return mul(input, pow(2.0, other))


def mvlgamma(input, p):
    """The multivariate log-gamma of dimension p: sum of lgamma(x - i/2) for i < p, plus
    p (p - 1) / 4 log(pi) (torch's construction, so the gradient is lgamma's)."""
    _check_tensor(input, "mvlgamma")
    if input.dtype is dtypes.bool_:
        raise RuntimeError("The input tensor may not be a boolean tensor.")
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    x = _float_input(input)
    offsets = NDArray.from_numpy(np.arange(-(p - 1) / 2, 0.5, 0.5), x.dtype, x._data.device)
    terms = lgamma(x.unsqueeze(-1) + wrap(offsets))
    return terms.sum(-1) + p * (p - 1) / 4 * math.log(math.pi)


class SpecialEntr(KernelFunction):
    """-x log x (0 at 0, -inf below), with torch's derivative -(1 + log x)."""

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        negative_inf = wrap(scalar_array(-math.inf, a.dtype, a.device))
        return where(a < 0, negative_inf, -xlogy(a, a))

    @staticmethod
    def backward(ctx, g):
        a, = ctx.saved_tensors
        return g * -(log(a) + 1)


def special_entr(input):
    """Elementwise entropy term -x * log(x), 0 at x = 0 and -inf for x < 0
    (torch.special.entr)."""
    _check_tensor(input, "special_entr")
    return SpecialEntr.apply(_float_input(input))


def special_ndtr(input):
    """The standard normal CDF, (1 + erf(x / sqrt 2)) / 2 written with erfc so that both tails
    keep their precision."""
    _check_tensor(input, "special_ndtr")
    return erfc(_float_input(input) * -math.sqrt(0.5)) * 0.5
