"""Math beyond the basics: trigonometric and hyperbolic functions and their inverses,
log2 / log10 / exp2 / erfc, frac, angle conversions, nan_to_num; the binary math (atan2, hypot,
logaddexp, copysign, xlogy, heaviside, remainder, fmod, fmax, fmin); and the compositions lerp,
addcmul and addcdiv. The basic ops (exp, log, sqrt, tanh, + - * /, …) are in elementwise.py."""
import math

import numpy as np

from .. import dtypes
from ..autograd import KernelFunction
from ..ndarray import scalar_array
from ..opcodes import BinaryOp as B, UnaryOp as U
from ..tensor import Tensor, wrap, zeros
from .autocast_policy import batching_point
from .compare import eq, isnan, lt
from .elementwise import (C_NAMES, TORCH_NAMES, Remainder, Where, _Binary, _Unary,
                          _UnarySavingInput, _UnarySavingOutput, _ZeroGradUnary, _as_operand,
                          _binary, _check_tensor, _copy, _float_input, _integer_division_operands,
                          _no_kernel, _unary, exp, promote, result_type, rsqrt, sign, trunc,
                          where)
from .complex_refusals import refuse_complex
from .reduce import sum_to


__all__ = [
    'acos', 'acosh', 'addcdiv', 'addcmul', 'angle', 'arccos', 'arccosh', 'arcsin', 'arcsinh',
    'arctan', 'arctan2', 'arctanh', 'asin', 'asinh', 'atan', 'atan2', 'atanh', 'copysign',
    'cosh', 'deg2rad', 'erfc', 'exp2', 'fix', 'fmax', 'fmin', 'fmod', 'frac', 'heaviside',
    'hypot', 'lerp', 'log10', 'log2', 'logaddexp', 'logaddexp2', 'nan_to_num', 'positive',
    'rad2deg', 'remainder', 'sgn', 'sinh', 'tan', 'xlogy',
]


class Sinh(_UnarySavingInput):
    op = U.SINH

    @staticmethod
    def backward(ctx, g):
        a, = ctx.saved_tensors
        return g * cosh(a)


class Cosh(_UnarySavingInput):
    op = U.COSH

    @staticmethod
    def backward(ctx, g):
        a, = ctx.saved_tensors
        return g * sinh(a)


class Tan(_UnarySavingOutput):
    op = U.TAN

    @staticmethod
    def backward(ctx, g):
        out, = ctx.saved_tensors
        return g * (out * out + 1)


class Asin(_UnarySavingInput):
    op = U.ASIN

    @staticmethod
    def backward(ctx, g):
        a, = ctx.saved_tensors
        return g * rsqrt(1 - a * a)


class Acos(_UnarySavingInput):
    op = U.ACOS

    @staticmethod
    def backward(ctx, g):
        a, = ctx.saved_tensors
        return g * -rsqrt(1 - a * a)


class Atan(_UnarySavingInput):
    op = U.ATAN

    @staticmethod
    def backward(ctx, g):
        a, = ctx.saved_tensors
        return g / (a * a + 1)


class Asinh(_UnarySavingInput):
    op = U.ASINH

    @staticmethod
    def backward(ctx, g):
        a, = ctx.saved_tensors
        return g * rsqrt(a * a + 1)


class Acosh(_UnarySavingInput):
    op = U.ACOSH

    @staticmethod
    def backward(ctx, g):
        a, = ctx.saved_tensors
        return g * rsqrt(a * a - 1)


class Atanh(_UnarySavingInput):
    op = U.ATANH

    @staticmethod
    def backward(ctx, g):
        a, = ctx.saved_tensors
        return g / (1 - a * a)


class Log2(_UnarySavingInput):
    op = U.LOG2

    @staticmethod
    def backward(ctx, g):
        a, = ctx.saved_tensors
        return g / (a * math.log(2.0))


class Log10(_UnarySavingInput):
    op = U.LOG10

    @staticmethod
    def backward(ctx, g):
        a, = ctx.saved_tensors
        return g / (a * math.log(10.0))


class Exp2(_UnarySavingOutput):
    op = U.EXP2

    @staticmethod
    def backward(ctx, g):
        out, = ctx.saved_tensors
        return g * out * math.log(2.0)


class Erfc(_UnarySavingInput):
    op = U.ERFC

    @staticmethod
    def backward(ctx, g):
        a, = ctx.saved_tensors
        return g * exp(-(a * a)) * (-2.0 / math.sqrt(math.pi))


class Frac(_Unary):
    op = U.FRAC

    @staticmethod
    def backward(ctx, g):
        return g


def sinh(a):
    """Elementwise hyperbolic sine (torch.sinh)."""
    return _unary(Sinh, a)


def cosh(a):
    """Elementwise hyperbolic cosine (torch.cosh)."""
    return _unary(Cosh, a)


def tan(a):
    """Elementwise tangent, in radians (torch.tan)."""
    return _unary(Tan, a)


def asin(a):
    """Elementwise inverse sine (torch.asin, alias arcsin)."""
    return _unary(Asin, a)


def acos(a):
    """Elementwise inverse cosine (torch.acos, alias arccos)."""
    return _unary(Acos, a)


def atan(a):
    """Elementwise inverse tangent (torch.atan, alias arctan)."""
    return _unary(Atan, a)


def asinh(a):
    """Elementwise inverse hyperbolic sine (torch.asinh, alias arcsinh)."""
    return _unary(Asinh, a)


def acosh(a):
    """Elementwise inverse hyperbolic cosine (torch.acosh, alias arccosh)."""
    return _unary(Acosh, a)


def atanh(a):
    """Elementwise inverse hyperbolic tangent (torch.atanh, alias arctanh)."""
    return _unary(Atanh, a)


def log2(a):
    """Elementwise base-2 logarithm (torch.log2)."""
    return _unary(Log2, a)


def log10(a):
    """Elementwise base-10 logarithm (torch.log10)."""
    return _unary(Log10, a)


def exp2(a):
    """Elementwise 2 ** input (torch.exp2)."""
    return _unary(Exp2, a)


def erfc(a):
    """Elementwise complementary error function 1 - erf(input) (torch.erfc)."""
    return _unary(Erfc, a)


def frac(a):
    """a - trunc(a), keeping a's sign; torch has no integer or bool kernel."""
    _check_tensor(a, "frac")
    if not a._data.dtype.is_floating_point:
        raise _no_kernel("frac", a._data.dtype, a.device)
    return Frac.apply(a)


class Angle(_ZeroGradUnary):
    """The argument of a real number: π for negatives, 0 otherwise, NaN kept; zero gradient."""

    @classmethod
    def forward(cls, ctx, a):
        a = a.detach()          # our ops' forwards run recording: keep these selects off it
        data = a._data
        pi, zero = (wrap(scalar_array(v, data.dtype, data.device)) for v in (math.pi, 0.0))
        return where(isnan(a), a, where(lt(a, zero), pi, zero))


def angle(a):
    """Elementwise angle of a real input: 0 for x >= 0, pi for x < 0, NaN for NaN
    (torch.angle). Complex inputs are not supported (minitorch has no complex dtypes)."""
    _check_tensor(a, "angle")
    return Angle.apply(_float_input(a))


def sgn(a):
    """sign for real tensors (torch's sgn differs only for complex ones)."""
    _check_tensor(a, "sgn")
    return sign(a)


def deg2rad(a):
    """Elementwise conversion of degrees to radians (torch.deg2rad)."""
    _check_tensor(a, "deg2rad")
    return _float_input(a) * (math.pi / 180)


def rad2deg(a):
    """Elementwise conversion of radians to degrees (torch.rad2deg)."""
    _check_tensor(a, "rad2deg")
    return _float_input(a) * (180 / math.pi)


@batching_point
def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    """NaN, +inf and -inf replaced (by default with 0 and the dtype's largest and lowest finite
    values); integer and bool tensors are returned as copies."""
    _check_tensor(input, "nan_to_num")
    dtype = input._data.dtype
    if not dtype.is_floating_point:
        return _copy(input)
    info = np.finfo(dtype.numpy_dtype)
    posinf = float(info.max) if posinf is None else posinf
    neginf = float(info.min) if neginf is None else neginf
    result = input
    for mask, value in ((isnan(input), nan), (eq(input, math.inf), posinf),
                        (eq(input, -math.inf), neginf)):
        result = Where.apply(mask, wrap(scalar_array(value, dtype, input._data.device)), result)
    return result


def fix(a):
    """Elementwise truncation toward zero, same as trunc (torch.fix)."""
    return trunc(a)


def positive(input):
    """Returns input itself, unchanged (torch.positive)."""
    _check_tensor(input, "positive")
    if input._data.dtype is dtypes.bool_:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


class Atan2(_Binary):
    op = B.ATAN2

    @classmethod
    def forward(cls, ctx, a, b):
        ctx.save_for_backward(a, b)
        ctx.shapes = (a._data.shape, b._data.shape)
        return wrap(a._data.binary(B.ATAN2, b._data))

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        a_shape, b_shape = ctx.shapes
        # torch zeroes the infinite 1/(a^2 + b^2) at the origin, so the gradient there is 0
        recip = (a * a + b * b).reciprocal()
        recip = recip.masked_fill(recip.isinf(), 0.0)
        return sum_to(g * b * recip, a_shape), sum_to(g * -a * recip, b_shape)


class _BinarySavingAll(_Binary):
    """Saves both inputs and the result for the backward."""

    @classmethod
    def forward(cls, ctx, a, b):
        out = wrap(a._data.binary(cls.op, b._data))
        ctx.save_for_backward(a, b, out)
        ctx.shapes = (a._data.shape, b._data.shape)
        return out


class Hypot(_BinarySavingAll):
    op = B.HYPOT

    @staticmethod
    def backward(ctx, g):
        a, b, out = ctx.saved_tensors
        a_shape, b_shape = ctx.shapes
        return sum_to(g * a / out, a_shape), sum_to(g * b / out, b_shape)


class Logaddexp(_BinarySavingAll):
    op = B.LOGADDEXP

    @staticmethod
    def backward(ctx, g):
        a, b, _ = ctx.saved_tensors
        a_shape, b_shape = ctx.shapes
        return sum_to(g / (exp(b - a) + 1), a_shape), sum_to(g / (exp(a - b) + 1), b_shape)


class Logaddexp2(_BinarySavingAll):
    op = B.LOGADDEXP2

    @staticmethod
    def backward(ctx, g):
        a, b, _ = ctx.saved_tensors
        a_shape, b_shape = ctx.shapes
        return sum_to(g / (exp2(b - a) + 1), a_shape), sum_to(g / (exp2(a - b) + 1), b_shape)


class Copysign(_BinarySavingAll):
    """|a| with b's sign: the gradient is g times the sign flip out / a (0 where a == 0), and
    none for b, as in torch."""
    op = B.COPYSIGN

    @staticmethod
    def backward(ctx, g):
        a, _, out = ctx.saved_tensors
        a_shape, b_shape = ctx.shapes
        zero = wrap(scalar_array(0, g.dtype, g.device))
        grad_b = zeros(*b_shape, dtype=g.dtype, device=g.device) \
            if ctx.needs_input_grad[1] else None
        return sum_to(g * where(a == 0, zero, out / a), a_shape), grad_b


class Xlogy(_BinarySavingAll):
    op = B.XLOGY

    @staticmethod
    def backward(ctx, g):
        a, b, _ = ctx.saved_tensors
        a_shape, b_shape = ctx.shapes
        zero = wrap(scalar_array(0, g.dtype, g.device))
        grad_a = where((a == 0) & (b <= 0), zero, xlogy(g, b))
        return sum_to(grad_a, a_shape), sum_to(g * a / b, b_shape)


class Heaviside(_Binary):
    """A step: torch records the op but has no derivative for it."""
    op = B.HEAVISIDE

    @staticmethod
    def backward(ctx, g):
        raise RuntimeError("derivative for aten::heaviside is not implemented")


def atan2(input, other):
    """Elementwise arctangent of input / other using both signs to pick the quadrant
    (torch.atan2, alias arctan2)."""
    return _binary(Atan2, input, other, floating=True)


def _float_only_binary(fn, kernel, input, other, other_name="other"):
    """An op of two tensors with only floating kernels: torch names the promoted dtype when
    it is not floating."""
    _check_tensor(input, kernel)
    _check_tensor(other, kernel, 2, other_name)
    dtype = result_type(input, other)
    if not dtype.is_floating_point:
        raise _no_kernel(kernel, dtype, input.device)
    return _binary(fn, input, other)


def hypot(input, other):
    """Elementwise sqrt(input**2 + other**2) for floating tensors (torch.hypot)."""
    return _float_only_binary(Hypot, "hypot", input, other)


def logaddexp(input, other):
    """Elementwise log(exp(input) + exp(other)) computed stably (torch.logaddexp)."""
    if isinstance(input, Tensor) and isinstance(other, Tensor) and \
            result_type(input, other).is_complex:
        return _complex_logaddexp(*promote(input, other))
    return _float_only_binary(Logaddexp, "logaddexp", input, other)


def _complex_logaddexp(a, b):
    """torch's complex logaddexp, composed (so the gradient is g · conj(exp(z - out))): the
    operand with the larger real part plus log1p(exp(smaller - larger)); where both real parts
    are the same infinity, the smaller operand (-inf) or log(exp(a) + exp(b)) (+inf)."""
    a_first = a.real >= b.real
    high, low = where(a_first, a, b), where(a_first, b, a)
    out = high + (low - high).exp().log1p()
    same_infinity = (high.real == low.real).logical_and(high.real.isinf())
    at_infinity = where(low.real < 0, low, (low.exp() + high.exp()).log())
    return where(same_infinity, at_infinity, out)


def logaddexp2(input, other):
    """Elementwise log2(2**input + 2**other) computed stably (torch.logaddexp2)."""
    return _float_only_binary(Logaddexp2, "logaddexp2", input, other)


def copysign(input, other):
    """Elementwise magnitude of input with the sign of other (torch.copysign)."""
    _check_tensor(input, "copysign")
    return _binary(Copysign, input, other, floating=True)


def xlogy(input, other):
    """input * log(other), 0 where input == 0 unless other is NaN; either may be a number."""
    return _binary(Xlogy, input, other, floating=True)


def heaviside(input, values):
    """values where input == 0, else 1 for input > 0 and 0 below (NaN included)."""
    _check_tensor(input, "heaviside")
    _check_tensor(values, "heaviside", 2, "values")
    if input.dtype is not values.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    refuse_complex("heaviside", input)
    return Heaviside.apply(input, values)


def _addc_operands(input, tensor1, tensor2, value):
    """The three tensors in their joint result dtype (one op in torch: a 0-d or lower-priority
    operand does not widen it step by step), and value converted to it (0.5 is 0 for int64)."""
    dtype = result_type(input, tensor1, tensor2)
    if not (dtype.is_floating_point or dtype.is_complex):
        value = bool(value) if dtype is dtypes.bool_ else int(value)
    device = input.device
    return [_as_operand(t, dtype, device) for t in (input, tensor1, tensor2)] + [value]


def addcmul(input, tensor1, tensor2, *, value=1):
    """input + value * tensor1 * tensor2, in torch's operation order."""
    if result_type(input, tensor1, tensor2) is dtypes.bool_:
        raise NotImplementedError('"addcmul_cpu_out" not implemented for \'Bool\'')
    input, tensor1, tensor2, value = _addc_operands(input, tensor1, tensor2, value)
    return input + (tensor1 * value if value != 1 else tensor1) * tensor2


def addcdiv(input, tensor1, tensor2, *, value=1):
    """input + value * tensor1 / tensor2, in torch's operation order."""
    if not (tensor1.dtype.is_floating_point or tensor2.dtype.is_floating_point
            or tensor1.dtype.is_complex or tensor2.dtype.is_complex):
        raise RuntimeError(
            "Integer division with addcdiv is no longer supported, and in a future  release "
            "addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv "
            "behavior can be implemented as (input + value * torch.trunc(tensor1 / tensor2))"
            ".to(input.dtype) for integer inputs and as (input + value * tensor1 / tensor2) for "
            "float inputs. The future addcdiv behavior is just the latter implementation: "
            "(input + value * tensor1 / tensor2), for all dtypes.")
    input, tensor1, tensor2, value = _addc_operands(input, tensor1, tensor2, value)
    return input + (tensor1 * value if value != 1 else tensor1) / tensor2


@batching_point
def lerp(input, end, weight):
    """input + weight * (end - input), in torch's two-sided form (exact at weight 0 and 1)."""
    _check_tensor(input, "lerp")
    _check_tensor(end, "lerp", 2, "end")
    kind = "tensor" if isinstance(weight, Tensor) else "scalar"
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise NotImplementedError(f'"lerp_kernel_{kind}" not implemented for '
                                  f"'{TORCH_NAMES[input.dtype.name]}'")
    for name, other in (("end", end), ("weight", weight)):
        if isinstance(other, Tensor) and other.dtype is not input.dtype:
            raise RuntimeError(f"expected dtype {C_NAMES[input.dtype.name]} for `{name}` but got "
                               f"dtype {C_NAMES[other.dtype.name]}")
    return Lerp.apply(input, end, weight)


class Lerp(KernelFunction):
    """torch's lerp: input + weight * (end - input) where |weight| < 0.5, else
    end - (end - input) * (1 - weight) (exact at both ends); the gradients are torch's
    closed forms (g * conj(1 - weight), g * conj(weight), g * conj(end - input): conj for
    complex operands), not the chosen branch's."""

    @staticmethod
    def forward(ctx, input, end, weight):
        tensor_weight = isinstance(weight, Tensor)
        ctx.save_for_backward(input, end, weight if tensor_weight else None)
        ctx.weight = None if tensor_weight else weight
        # our ops' forwards run recording: compute on detached operands
        input, end = input.detach(), end.detach()
        diff = end - input
        if not tensor_weight:
            out = input + diff * weight if abs(weight) < 0.5 else end - diff * (1 - weight)
        else:
            weight = weight.detach()
            out = where(abs(weight) < 0.5, input + diff * weight, end - diff * (1 - weight))
        return wrap(out._data)

    @staticmethod
    def backward(ctx, g):
        input, end, weight = ctx.saved_tensors
        if weight is None:
            weight = ctx.weight
        needs = ctx.needs_input_grad
        if input.is_complex():
            weight = weight.conj() if isinstance(weight, Tensor) else weight.conjugate()
            input, end = input.conj(), end.conj()
        grad_input = sum_to(g * (1 - weight), input.shape) if needs[0] else None
        grad_end = sum_to(g * weight, end.shape) if needs[1] else None
        grad_weight = sum_to(g * (end - input), weight.shape) if needs[2] else None
        return grad_input, grad_end, grad_weight


arcsin = asin


arccos = acos


arctan = atan


arcsinh = asinh


arccosh = acosh


arctanh = atanh


arctan2 = atan2


class Fmod(_Binary):
    """C's fmod (the result takes the dividend's sign), exactly: for |a|, |b| it equals the
    kernel's remainder, and the sign of a is put back."""

    @classmethod
    def forward(cls, ctx, a, b):
        ctx.save_for_backward(a, b)
        ctx.shapes = (a._data.shape, b._data.shape)
        x, y = a._data, b._data
        magnitude = x.unary(U.ABS).binary(B.REMAINDER, y.unary(U.ABS))
        if x.dtype.is_floating_point:       # the sign bit, so fmod(-0.0, y) is -0.0
            return wrap(magnitude.binary(B.COPYSIGN, x))
        negative = x.binary(B.LT, scalar_array(0, x.dtype, x.device))
        return wrap(negative.where(magnitude.unary(U.NEG), magnitude))

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        a_shape, b_shape = ctx.shapes
        return sum_to(g, a_shape), sum_to(-g * trunc(a / b), b_shape)


@batching_point
def fmax(input, other):
    """maximum that ignores NaN: the other operand wins where one side is NaN. One select,
    so the gradient goes to one side as in torch (to input on ties and where other is NaN)."""
    _check_tensor(input, "fmax")
    _check_tensor(other, "fmax", 2, "other")
    refuse_complex("fmax", input, other)
    return where((input >= other) | other.isnan(), input, other)


@batching_point
def fmin(input, other):
    """Elementwise minimum that ignores NaN: where one side is NaN the other is returned
    (torch.fmin)."""
    _check_tensor(input, "fmin")
    _check_tensor(other, "fmin", 2, "other")
    refuse_complex("fmin", input, other)
    return where((input <= other) | other.isnan(), input, other)


@batching_point
def remainder(input, other):
    """Python's modulo: the result takes the divisor's sign."""
    return Remainder.apply(*_integer_division_operands(input, other, "remainder"))


@batching_point
def fmod(input, other):
    """C's fmod: the result takes the dividend's sign."""
    return Fmod.apply(*_integer_division_operands(input, other, "fmod"))
