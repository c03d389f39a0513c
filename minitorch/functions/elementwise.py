"""Elementwise ops: unary math, binary arithmetic with torch's promotion and broadcasting,
comparisons, where/clamp, dtype casts and device moves.

Forward works on NDArrays (one kernel call); backward is written with Tensor ops so it can be
differentiated again. Binary backward sums the gradient back over broadcast axes (`sum_to`).
"""
import math
import numbers

import numpy as np

from .. import dtypes
from ..autograd import Function
from ..ndarray import NDArray
from ..opcodes import BinaryOp as B, UnaryOp as U
from ..tensor import Tensor, wrap
from .reduce import sum_to


__all__ = [
    'abs', 'absolute', 'add', 'allclose', 'atan2', 'bitwise_and', 'bitwise_not', 'bitwise_or',
    'bitwise_xor', 'ceil', 'clamp', 'clip', 'cos', 'div', 'divide', 'eq', 'equal', 'erf', 'exp',
    'expm1', 'float_power', 'floor', 'floor_divide', 'fmax', 'fmin', 'fmod', 'ge', 'greater',
    'gt', 'isclose', 'isfinite', 'isinf', 'isnan', 'le', 'lerp', 'less', 'log', 'log1p',
    'logical_and', 'logical_not', 'logical_or', 'logical_xor', 'lt', 'maximum', 'minimum',
    'mul', 'multiply', 'ne', 'neg', 'negative', 'pow', 'reciprocal', 'relu', 'remainder',
    'round', 'rsqrt', 'sigmoid', 'sign', 'sin', 'sqrt', 'square', 'sub', 'subtract', 'tanh',
    'true_divide', 'trunc', 'where',
]
_scalar_cache = {}


def scalar_array(value, dtype, device):
    """A 0-d NDArray holding `value` (cached: `x * 2` should not allocate a constant each time).
    Cached arrays are only ever read by kernels, never handed to users."""
    key = (value, type(value), dtype, device)
    nd = _scalar_cache.get(key)
    if nd is None:
        if len(_scalar_cache) > 4096:
            _scalar_cache.clear()
        nd = NDArray.full((), value, dtype, device)
        _scalar_cache[key] = nd
    return nd


def _priority(x):
    return 0 if not isinstance(x, Tensor) else (2 if x._data.shape else 1)


def _dtype_of(x):
    return x._data.dtype if isinstance(x, Tensor) else dtypes.scalar_dtype(x)


def promote(a, b, floating=False):
    """Both operands as Tensors of torch's result dtype (default float when `floating` and the
    result would be integral); Python scalars become cached 0-d constants."""
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        raise TypeError("at least one operand must be a Tensor")
    _check_operand(a)
    _check_operand(b)
    dtype = dtypes.result_type(_dtype_of(a), _dtype_of(b), _priority(a), _priority(b))
    if floating and not dtype.is_floating_point:
        dtype = dtypes.get_default_dtype()
    device = a.device if isinstance(a, Tensor) else b.device
    return _as_operand(a, dtype, device), _as_operand(b, dtype, device)


def _check_operand(x):
    if not isinstance(x, (Tensor, numbers.Number, np.number, np.bool_)):
        raise TypeError(f"unsupported operand type: '{type(x).__name__}'")


def _as_operand(x, dtype, device):
    if isinstance(x, Tensor):
        return x if x._data.dtype is dtype else cast(x, dtype)
    return wrap(scalar_array(x, dtype, device))


def _float_input(a):
    """Integer/bool inputs of float-valued functions are promoted to the default float dtype."""
    return a if a._data.dtype.is_floating_point else cast(a, dtypes.get_default_dtype())


# ---- dtype casts and device moves -------------------------------------------------------------
class Cast(Function):
    @staticmethod
    def forward(ctx, a, dtype):
        ctx.source_dtype = a._data.dtype
        return wrap(a._data.astype(dtype))

    @staticmethod
    def backward(ctx, g):
        return cast(g, ctx.source_dtype), None


def cast(a, dtype):
    if a._data.dtype is dtype:
        return a
    return Cast.apply(a, dtype)


class ToDevice(Function):
    @staticmethod
    def forward(ctx, a, device):
        ctx.source_device = a._data.device
        host = a._data.compact()
        flat = host.backend.to_host(host.flat())
        return wrap(NDArray.from_numpy(np.asarray(flat).reshape(host.shape)
                                       .view(a._data.dtype.storage), a._data.dtype, device))

    @staticmethod
    def backward(ctx, g):
        return to_device(g, ctx.source_device), None


def to_device(a, device):
    if a._data.device is device:
        return a
    return ToDevice.apply(a, device)


# ---- unary ------------------------------------------------------------------------------------
class _Unary(Function):
    """out = op(a); subclasses give `op` and a backward."""
    op = None

    @classmethod
    def forward(cls, ctx, a):
        return wrap(a._data.unary(cls.op))


class Neg(_Unary):
    op = U.NEG

    @staticmethod
    def backward(ctx, g):
        return -g


class _UnarySavingInput(_Unary):
    @classmethod
    def forward(cls, ctx, a):
        ctx.save_for_backward(a)
        return wrap(a._data.unary(cls.op))


class _UnarySavingOutput(_Unary):
    @classmethod
    def forward(cls, ctx, a):
        out = wrap(a._data.unary(cls.op))
        ctx.save_for_backward(out)
        return out


class Abs(_UnarySavingInput):
    op = U.ABS

    @staticmethod
    def backward(ctx, g):
        a, = ctx.saved_tensors
        return g * sign(a)


class Exp(_UnarySavingOutput):
    op = U.EXP

    @staticmethod
    def backward(ctx, g):
        out, = ctx.saved_tensors
        return g * out


class Log(_UnarySavingInput):
    op = U.LOG

    @staticmethod
    def backward(ctx, g):
        a, = ctx.saved_tensors
        return g / a


class Log1p(_UnarySavingInput):
    op = U.LOG1P

    @staticmethod
    def backward(ctx, g):
        a, = ctx.saved_tensors
        return g / (a + 1)


class Expm1(_UnarySavingOutput):
    op = U.EXPM1

    @staticmethod
    def backward(ctx, g):
        out, = ctx.saved_tensors
        return g * (out + 1)


class Sqrt(_UnarySavingOutput):
    op = U.SQRT

    @staticmethod
    def backward(ctx, g):
        out, = ctx.saved_tensors
        return g / (out * 2)


class Rsqrt(_UnarySavingOutput):
    op = U.RSQRT

    @staticmethod
    def backward(ctx, g):
        out, = ctx.saved_tensors
        return g * out * out * out * -0.5


class Sin(_UnarySavingInput):
    op = U.SIN

    @staticmethod
    def backward(ctx, g):
        a, = ctx.saved_tensors
        return g * cos(a)


class Cos(_UnarySavingInput):
    op = U.COS

    @staticmethod
    def backward(ctx, g):
        a, = ctx.saved_tensors
        return -g * sin(a)


class Reciprocal(_UnarySavingOutput):
    op = U.RECIPROCAL

    @staticmethod
    def backward(ctx, g):
        out, = ctx.saved_tensors
        return -g * out * out


class Square(_UnarySavingInput):
    op = U.SQUARE

    @staticmethod
    def backward(ctx, g):
        a, = ctx.saved_tensors
        return g * a * 2


class Erf(_UnarySavingInput):
    op = U.ERF

    @staticmethod
    def backward(ctx, g):
        a, = ctx.saved_tensors
        return g * exp(-(a * a)) * (2.0 / math.sqrt(math.pi))


class Tanh(_UnarySavingOutput):
    op = U.TANH

    @staticmethod
    def backward(ctx, g):
        out, = ctx.saved_tensors
        return TanhBackward.apply(g, out)


class Sigmoid(_UnarySavingOutput):
    op = U.SIGMOID

    @staticmethod
    def backward(ctx, g):
        out, = ctx.saved_tensors
        return SigmoidBackward.apply(g, out)


class Relu(_UnarySavingOutput):
    op = U.RELU

    @staticmethod
    def backward(ctx, g):
        out, = ctx.saved_tensors
        return ReluBackward.apply(g, out)


class _ZeroGradUnary(_Unary):
    """Piecewise-constant functions (floor, sign, …): zero gradient almost everywhere."""

    @staticmethod
    def backward(ctx, g):
        return g * 0


class Sign(_ZeroGradUnary):
    op = U.SIGN


class Floor(_ZeroGradUnary):
    op = U.FLOOR


class Ceil(_ZeroGradUnary):
    op = U.CEIL


class Round(_ZeroGradUnary):
    op = U.ROUND


class Trunc(_ZeroGradUnary):
    op = U.TRUNC


# Fused backward kernels, each a Function itself so that double backward still works.
class TanhBackward(Function):
    @staticmethod
    def forward(ctx, g, out):
        ctx.save_for_backward(g, out)
        return wrap(g._data.binary(B.TANH_BACKWARD, out._data))

    @staticmethod
    def backward(ctx, gg):
        g, out = ctx.saved_tensors
        return gg * (1 - out * out), gg * g * out * -2


class SigmoidBackward(Function):
    @staticmethod
    def forward(ctx, g, out):
        ctx.save_for_backward(g, out)
        return wrap(g._data.binary(B.SIGMOID_BACKWARD, out._data))

    @staticmethod
    def backward(ctx, gg):
        g, out = ctx.saved_tensors
        return gg * out * (1 - out), gg * g * (1 - out * 2)


class ReluBackward(Function):
    @staticmethod
    def forward(ctx, g, out):
        ctx.save_for_backward(out)
        return wrap(g._data.binary(B.RELU_BACKWARD, out._data))

    @staticmethod
    def backward(ctx, gg):
        out, = ctx.saved_tensors
        return ReluBackward.apply(gg, out), None


def _unary(fn, a, integer_ok=False):
    if not isinstance(a, Tensor):
        raise TypeError(f"{fn.__name__.lower()}(): argument 'input' must be Tensor, not "
                        f"{type(a).__name__}")
    if not integer_ok:
        a = _float_input(a)
    return fn.apply(a)


def neg(a):
    if a._data.dtype is dtypes.bool_:
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If you "
                           "are trying to invert a mask, use the `~` or `logical_not()` operator "
                           "instead.")
    return _unary(Neg, a, integer_ok=True)


def abs(a):
    return _unary(Abs, a, integer_ok=True)


def sign(a):
    return _unary(Sign, a, integer_ok=True)


def exp(a):
    return _unary(Exp, a)


def log(a):
    return _unary(Log, a)


def log1p(a):
    return _unary(Log1p, a)


def expm1(a):
    return _unary(Expm1, a)


def sqrt(a):
    return _unary(Sqrt, a)


def rsqrt(a):
    return _unary(Rsqrt, a)


def sin(a):
    return _unary(Sin, a)


def cos(a):
    return _unary(Cos, a)


def tanh(a):
    return _unary(Tanh, a)


def sigmoid(a):
    return _unary(Sigmoid, a)


def relu(a):
    return _unary(Relu, a, integer_ok=True)


def reciprocal(a):
    return _unary(Reciprocal, a)


def square(a):
    return _unary(Square, a, integer_ok=True)


def erf(a):
    return _unary(Erf, a)


def floor(a):
    return a if not a.dtype.is_floating_point else _unary(Floor, a)


def ceil(a):
    return a if not a.dtype.is_floating_point else _unary(Ceil, a)


def round(a, decimals=0):
    if not a.dtype.is_floating_point:
        return a
    if decimals:
        scale = 10.0 ** decimals
        return _unary(Round, a * scale) / scale
    return _unary(Round, a)


def trunc(a):
    return a if not a.dtype.is_floating_point else _unary(Trunc, a)


def _predicate(op, a):
    return wrap(a._data.unary(op))


def isnan(a):
    return _predicate(U.ISNAN, a)


def isinf(a):
    return _predicate(U.ISINF, a)


def isfinite(a):
    return _predicate(U.ISFINITE, a)


def logical_not(a):
    return _predicate(U.LOGICAL_NOT, a)


# ---- binary -----------------------------------------------------------------------------------
class _Binary(Function):
    """out = op(a, b) with broadcasting; subclasses give `op` and a backward."""
    op = None

    @classmethod
    def forward(cls, ctx, a, b):
        ctx.shapes = (a._data.shape, b._data.shape)
        return wrap(a._data.binary(cls.op, b._data))


class Add(_Binary):
    op = B.ADD

    @staticmethod
    def backward(ctx, g):
        a_shape, b_shape = ctx.shapes
        return sum_to(g, a_shape), sum_to(g, b_shape)


class Sub(_Binary):
    op = B.SUB

    @staticmethod
    def backward(ctx, g):
        a_shape, b_shape = ctx.shapes
        return sum_to(g, a_shape), sum_to(-g, b_shape)


class Mul(_Binary):
    op = B.MUL

    @classmethod
    def forward(cls, ctx, a, b):
        # Save only what the other input's gradient needs, so `y.mul_(2)` stays legal.
        ctx.save_for_backward(b if a.requires_grad else None, a if b.requires_grad else None)
        ctx.shapes = (a._data.shape, b._data.shape)
        return wrap(a._data.binary(B.MUL, b._data))

    @staticmethod
    def backward(ctx, g):
        b, a = ctx.saved_tensors
        a_shape, b_shape = ctx.shapes
        return (sum_to(g * b, a_shape) if b is not None else None,
                sum_to(g * a, b_shape) if a is not None else None)


class Div(_Binary):
    op = B.DIV

    @classmethod
    def forward(cls, ctx, a, b):
        out = wrap(a._data.binary(B.DIV, b._data))
        ctx.save_for_backward(b, out if b.requires_grad else None)
        ctx.shapes = (a._data.shape, b._data.shape)
        return out

    @staticmethod
    def backward(ctx, g):
        b, out = ctx.saved_tensors
        a_shape, b_shape = ctx.shapes
        grad_a = g / b
        return (sum_to(grad_a, a_shape),
                sum_to(-grad_a * out, b_shape) if out is not None else None)


class Pow(_Binary):
    op = B.POW

    @classmethod
    def forward(cls, ctx, a, b):
        out = wrap(a._data.binary(B.POW, b._data))
        ctx.save_for_backward(a, b, out)
        ctx.shapes = (a._data.shape, b._data.shape)
        return out

    @staticmethod
    def backward(ctx, g):
        a, b, out = ctx.saved_tensors
        a_shape, b_shape = ctx.shapes
        grad_a = sum_to(g * b * pow(a, b - 1), a_shape) if ctx.needs_input_grad[0] else None
        grad_b = None
        if ctx.needs_input_grad[1]:
            # torch's convention: the exponent's gradient is 0 where the base is 0.
            safe_log = where(a == 0, wrap(scalar_array(0.0, a.dtype, a.device)), log(a))
            grad_b = sum_to(g * out * safe_log, b_shape)
        return grad_a, grad_b


class Maximum(_Binary):
    op = B.MAXIMUM

    @classmethod
    def forward(cls, ctx, a, b):
        ctx.save_for_backward(a, b)
        ctx.shapes = (a._data.shape, b._data.shape)
        return wrap(a._data.binary(cls.op, b._data))

    @classmethod
    def backward(cls, ctx, g):
        a, b = ctx.saved_tensors
        a_shape, b_shape = ctx.shapes
        # Ties split the gradient evenly, as in torch.
        wins = cast(a > b if cls.op is B.MAXIMUM else a < b, g.dtype)
        share = wins + cast(a == b, g.dtype) * 0.5
        return sum_to(g * share, a_shape), sum_to(g * (1 - share), b_shape)


class Minimum(Maximum):
    op = B.MINIMUM


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
        scale = g / (a * a + b * b)
        return sum_to(scale * b, a_shape), sum_to(-scale * a, b_shape)


class Remainder(_Binary):
    op = B.REMAINDER

    @classmethod
    def forward(cls, ctx, a, b):
        ctx.save_for_backward(a, b)
        ctx.shapes = (a._data.shape, b._data.shape)
        return wrap(a._data.binary(B.REMAINDER, b._data))

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        a_shape, b_shape = ctx.shapes
        return sum_to(g, a_shape), sum_to(-g * floor_divide(a, b), b_shape)


def _binary(fn, a, b, floating=False):
    if isinstance(a, Tensor) and isinstance(b, Tensor) and a._data.dtype is b._data.dtype and (
            not floating or a._data.dtype.is_floating_point):
        return fn.apply(a, b)
    a, b = promote(a, b, floating)
    return fn.apply(a, b)


def add(input, other, alpha=1):
    if alpha != 1:
        other = other * alpha
    return _binary(Add, input, other)


def sub(input, other, alpha=1):
    if _dtype_of(input) is dtypes.bool_ and _dtype_of(other) is dtypes.bool_:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                           "supported. Use the `^` or `logical_xor()` operator instead.")
    if alpha != 1:
        other = other * alpha
    return _binary(Sub, input, other)


def mul(input, other):
    return _binary(Mul, input, other)


def div(input, other, rounding_mode=None):
    if rounding_mode is None:
        return _binary(Div, input, other, floating=True)
    if rounding_mode == "floor":
        return floor_divide(input, other)
    if rounding_mode == "trunc":
        if _dtype_of(input).is_floating_point or _dtype_of(other).is_floating_point:
            return trunc(_binary(Div, input, other, floating=True))
        quotient = floor_divide(input, other)
        remainder_nonzero = remainder(input, other) != 0
        negative = (input < 0) != (other < 0)
        return quotient + cast(remainder_nonzero & negative, dtypes.int64)
    raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but "
                       f"found '{rounding_mode}'")


def true_divide(input, other):
    return div(input, other)


def pow(input, exponent):
    if isinstance(exponent, numbers.Number) and not isinstance(exponent, bool) and isinstance(
            input, Tensor):
        if exponent == 1:
            return input * 1
        if exponent == 2 and input.dtype.is_floating_point:
            return square(input)
        if exponent == 0.5 and input.dtype.is_floating_point:
            return sqrt(input)
    return _binary(Pow, input, exponent)


def float_power(input, exponent):
    input = input.double() if isinstance(input, Tensor) else input
    exponent = exponent.double() if isinstance(exponent, Tensor) else exponent
    return pow(input, exponent)


def maximum(input, other):
    return _binary(Maximum, input, other)


def minimum(input, other):
    return _binary(Minimum, input, other)


def fmax(input, other):
    return where(isnan(other), input, where(isnan(input), other, maximum(input, other)))


def fmin(input, other):
    return where(isnan(other), input, where(isnan(input), other, minimum(input, other)))


def atan2(input, other):
    return _binary(Atan2, input, other, floating=True)


def remainder(input, other):
    return _binary(Remainder, input, other)


def fmod(input, other):
    """C-style remainder: the result takes the dividend's sign."""
    return input - div(input, other, rounding_mode="trunc") * other


def floor_divide(input, other):
    a, b = promote(input, other)
    return wrap(a._data.binary(B.FLOOR_DIVIDE, b._data))


# ---- comparisons and logic (no gradient) ------------------------------------------------------
def _compare(op, a, b):
    a, b = promote(a, b)
    return wrap(a._data.binary(op, b._data))


def eq(input, other):
    return _compare(B.EQ, input, other)


def ne(input, other):
    return _compare(B.NE, input, other)


def lt(input, other):
    return _compare(B.LT, input, other)


def le(input, other):
    return _compare(B.LE, input, other)


def gt(input, other):
    return _compare(B.GT, input, other)


def ge(input, other):
    return _compare(B.GE, input, other)


def logical_and(input, other):
    return _compare(B.LOGICAL_AND, input, other)


def logical_or(input, other):
    return _compare(B.LOGICAL_OR, input, other)


def logical_xor(input, other):
    return _compare(B.LOGICAL_XOR, input, other)


def _bitwise(op, logical_op, a, b):
    """&, |, ^ on bool tensors are logical; on int64 they need bit ops we don't have yet."""
    if _dtype_of(a) is dtypes.bool_ and _dtype_of(b) is dtypes.bool_:
        return _compare(logical_op, a, b)
    raise TypeError(f"bitwise {op} is only supported for bool tensors in minitorch")


def bitwise_and(input, other):
    return _bitwise("and", B.LOGICAL_AND, input, other)


def bitwise_or(input, other):
    return _bitwise("or", B.LOGICAL_OR, input, other)


def bitwise_xor(input, other):
    return _bitwise("xor", B.LOGICAL_XOR, input, other)


def bitwise_not(input):
    if input.dtype is not dtypes.bool_:
        raise TypeError("bitwise not is only supported for bool tensors in minitorch")
    return logical_not(input)


def equal(input, other):
    """True when both have the same shape and elements."""
    return input.shape == other.shape and bool(eq(input, other).all())


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    return bool(isclose(input, other, rtol, atol, equal_nan).all())


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    a, b = promote(input, other)
    close = abs(a - b) <= atol + rtol * abs(b)
    close = close | (a == b)
    if equal_nan:
        close = close | (isnan(a) & isnan(b))
    return close


# ---- where / clamp ----------------------------------------------------------------------------
class Where(Function):
    @staticmethod
    def forward(ctx, condition, a, b):
        ctx.save_for_backward(condition)
        ctx.shapes = (a._data.shape, b._data.shape)
        return wrap(condition._data.where(a._data, b._data))

    @staticmethod
    def backward(ctx, g):
        condition, = ctx.saved_tensors
        a_shape, b_shape = ctx.shapes
        zero = wrap(scalar_array(0, g.dtype, g.device))
        return (None, sum_to(where(condition, g, zero), a_shape),
                sum_to(where(condition, zero, g), b_shape))


def where(condition, input=None, other=None):
    if input is None and other is None:
        return condition.nonzero(as_tuple=True)
    if condition.dtype is not dtypes.bool_:
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor "
                           f"with dtype {condition.dtype.name.capitalize()}")
    a, b = promote(input, other)
    return Where.apply(condition, a, b)


def clamp(input, min=None, max=None):
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    result = input
    if min is not None:
        result = where(lt(result, min), _broadcast_bound(min, result), result)
    if max is not None:
        result = where(lt(max, result), _broadcast_bound(max, result), result)
    return result


def _broadcast_bound(bound, like):
    if isinstance(bound, Tensor):
        return cast(bound, like.dtype)
    dtype = dtypes.result_type(like.dtype, dtypes.scalar_dtype(bound), 2, 0)
    return wrap(scalar_array(bound, dtype, like.device))


def lerp(input, end, weight):
    return input + (end - input) * weight


clip = clamp
divide = div
multiply = mul
subtract = sub
negative = neg
absolute = abs
greater = gt
less = lt
