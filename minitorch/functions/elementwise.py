"""Elementwise ops: unary math, binary arithmetic with torch's promotion and broadcasting,
comparisons, where/clamp, dtype casts and device moves.

Forward works on NDArrays (one kernel call); backward is written with Tensor ops so it can be
differentiated again. Binary backward sums the gradient back over broadcast axes (`sum_to`).
"""
import math
import numbers
import warnings

import numpy as np

from .. import dtypes
from ..backend import device as device_of
from ..autograd import KernelFunction
from ..ndarray import NDArray, scalar_array
from ..opcodes import BinaryOp as B, ReduceOp, UnaryOp as U
from ..tensor import Tensor, ones_like, wrap, zeros, zeros_like
from .reduce import sum_to


__all__ = [
    'addcdiv', 'addcmul',
    'abs', 'absolute', 'add', 'allclose', 'arctan2', 'atan2', 'bitwise_and',
    'bitwise_left_shift', 'bitwise_not', 'bitwise_or', 'bitwise_right_shift', 'bitwise_xor',
    'ceil', 'clamp', 'clip',
    'cos', 'div', 'divide', 'eq', 'equal', 'erf', 'exp',
    'expm1', 'float_power', 'floor', 'floor_divide', 'fmax', 'fmin', 'fmod', 'ge', 'greater',
    'greater_equal', 'gt', 'isclose', 'isfinite', 'isinf', 'isnan', 'le', 'lerp', 'less',
    'less_equal', 'log', 'log1p', 'logical_and', 'logical_not', 'logical_or', 'logical_xor', 'lt',
    'maximum', 'minimum', 'mul', 'multiply', 'ne', 'neg', 'negative', 'not_equal', 'pow',
    'reciprocal', 'relu', 'remainder',
    'round', 'rsqrt', 'sigmoid', 'sign', 'sin', 'sqrt', 'square', 'sub', 'subtract', 'tanh',
    'true_divide', 'trunc', 'where',
    # further math
    'acos', 'acosh', 'arccos', 'arccosh', 'arcsin', 'arcsinh', 'arctan', 'arctanh', 'asin',
    'asinh', 'atan', 'atanh', 'clamp_max', 'clamp_min', 'copysign', 'cosh', 'deg2rad',
    'digamma', 'erfc', 'exp2', 'fix', 'frac', 'heaviside', 'hypot', 'lgamma', 'log10', 'log2',
    'logaddexp', 'logaddexp2', 'nan_to_num', 'positive', 'rad2deg', 'sgn', 'signbit', 'sinh',
    'tan', 'xlogy',
    # special functions (the rest of torch.special is in minitorch/special.py)
    'erfinv', 'gcd', 'i0', 'igamma', 'igammac', 'lcm', 'ldexp', 'logit', 'mvlgamma', 'nextafter',
    'polygamma', 'sinc',
    # complex-number queries, as torch answers them for real tensors
    'angle', 'isneginf', 'isposinf', 'isreal',
]
_FAST_SCALARS = (int, float)
# torch's names for dtypes in error messages: ScalarType names, and C type names (c10 typename).
TORCH_NAMES = {"float32": "Float", "float64": "Double", "int64": "Long", "uint8": "Byte",
               "bool": "Bool"}
C_NAMES = {"float32": "float", "float64": "double", "int64": "long int", "uint8": "unsigned char",
           "bool": "bool"}


def _priority(x):
    return 0 if not isinstance(x, Tensor) else (2 if x._data.shape else 1)


def _dtype_of(x):
    return x._data.dtype if isinstance(x, Tensor) else dtypes.scalar_dtype(x)


def result_type(*operands):
    """torch.result_type over any number of operands (None ignored): dtypes promote within each
    priority class (dimensioned tensors, 0-d tensors, Python scalars), then a lower class
    overrides only with a higher category."""
    by_priority = [None, None, None]
    for x in operands:
        if x is None:
            continue
        _check_operand(x)
        p, d = _priority(x), _dtype_of(x)
        by_priority[p] = d if by_priority[p] is None else dtypes.promote_types(by_priority[p], d)
    result = None
    for p in (2, 1, 0):
        d = by_priority[p]
        if d is not None:
            result = d if result is None else dtypes.result_type(result, d, 1, 0)
    return result


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


def _check_tensor(x, name, position=1, arg="input"):
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument '{arg}' (position {position}) must be Tensor, not "
                        f"{type(x).__name__}")


def _as_operand(x, dtype, device):
    if isinstance(x, Tensor):
        return x if x._data.dtype is dtype else cast(x, dtype)
    return wrap(scalar_array(x, dtype, device))


def _float_input(a):
    """Integer/bool inputs of float-valued functions are promoted to the default float dtype."""
    return a if a._data.dtype.is_floating_point else cast(a, dtypes.get_default_dtype())


def _no_kernel(kernel, dtype, device):
    """torch's error for an op without a kernel for a dtype ("frac_cpu" … for 'Long')."""
    return NotImplementedError(f'"{kernel}_{device.type}" not implemented for '
                               f"'{TORCH_NAMES[dtype.name]}'")


def _no_bool_kernel(kernel, device):
    """torch's error for an op that has no bool kernel ("floor_vml_cpu", "remainder_cpu", …)."""
    return _no_kernel(kernel, dtypes.bool_, device)


def _copy(a):
    """A new tensor with a's values: ops that are the identity on a dtype still return a copy,
    as in torch (writing into the result must not change the input)."""
    return wrap(a._data.copy())


# ---- dtype casts and device moves -------------------------------------------------------------
class ToCopy(KernelFunction):
    """A dtype conversion (torch's grad_fn for `.to(dtype)` is ToCopyBackward0)."""

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
    return ToCopy.apply(a, dtype)


class ToDevice(KernelFunction):
    """A copy to another device; shows as ToCopyBackward0 like torch's."""

    @classmethod
    def name(cls):
        return "ToCopyBackward0"

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


_TO_SIGNATURES = (
    "to() received an invalid combination of arguments - got ({}), but expected one of:\n"
    " * (torch.device device = None, torch.dtype dtype = None, bool non_blocking = False, "
    "bool copy = False, *, torch.memory_format memory_format = None)\n"
    " * (torch.dtype dtype, bool non_blocking = False, bool copy = False, *, "
    "torch.memory_format memory_format = None)\n"
    " * (Tensor tensor, bool non_blocking = False, bool copy = False, *, "
    "torch.memory_format memory_format = None)\n")



def to(self, *args, dtype=None, device=None, non_blocking=False, copy=False):
    """to(dtype), to(device), to(device, dtype), to(other_tensor)."""
    if dtype is not None and not isinstance(dtype, dtypes.dtype):
        raise TypeError(_TO_SIGNATURES.format(f"dtype={type(dtype).__name__}, "))
    for arg in args:
        if isinstance(arg, dtypes.dtype):
            dtype = arg
        elif isinstance(arg, Tensor):
            dtype, device = arg.dtype, arg.device
        elif arg is not None:
            device = arg
    result = self
    if device is not None and device_of(device) is not self.device:
        result = to_device(result, device_of(device))
    if dtype is not None and dtype is not result.dtype:
        result = cast(result, dtype)
    if copy and result is self:
        result = self.clone()
    return result


# ---- unary ------------------------------------------------------------------------------------
class _Unary(KernelFunction):
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
        return zeros_like(g)


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


class Frac(_Unary):
    op = U.FRAC

    @staticmethod
    def backward(ctx, g):
        return g


# Fused backward kernels, each a Function itself so that double backward still works.
class TanhBackward(KernelFunction):
    @staticmethod
    def forward(ctx, g, out):
        ctx.save_for_backward(g, out)
        return wrap(g._data.binary(B.TANH_BACKWARD, out._data))

    @staticmethod
    def backward(ctx, gg):
        g, out = ctx.saved_tensors
        return gg * (1 - out * out), gg * g * out * -2


class SigmoidBackward(KernelFunction):
    @staticmethod
    def forward(ctx, g, out):
        ctx.save_for_backward(g, out)
        return wrap(g._data.binary(B.SIGMOID_BACKWARD, out._data))

    @staticmethod
    def backward(ctx, gg):
        g, out = ctx.saved_tensors
        return gg * out * (1 - out), gg * g * (1 - out * 2)


class ReluBackward(KernelFunction):
    @staticmethod
    def forward(ctx, g, out):
        ctx.save_for_backward(out)
        return wrap(g._data.binary(B.RELU_BACKWARD, out._data))

    @staticmethod
    def backward(ctx, gg):
        out, = ctx.saved_tensors
        return ReluBackward.apply(gg, out), None


def _unary(fn, a, integer_ok=False):
    _check_tensor(a, fn.__name__.lower())
    if not integer_ok:
        a = _float_input(a)
    return fn.apply(a)


def neg(a):
    _check_tensor(a, "neg")
    if a._data.dtype is dtypes.bool_:
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If you "
                           "are trying to invert a mask, use the `~` or `logical_not()` operator "
                           "instead.")
    return Neg.apply(a)


def abs(a):
    _check_tensor(a, "abs")
    if a._data.dtype is dtypes.bool_:
        raise _no_bool_kernel("abs", a.device)
    return Abs.apply(a)


def sign(a):
    _check_tensor(a, "sign")
    return _copy(a) if a._data.dtype is dtypes.bool_ else Sign.apply(a)


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
    _check_tensor(a, "relu")
    if a._data.dtype is dtypes.bool_:
        raise RuntimeError("Boolean inputs not supported for relu")
    return Relu.apply(a)


def reciprocal(a):
    return _unary(Reciprocal, a)


def square(a):
    _check_tensor(a, "square")
    if a._data.dtype is dtypes.bool_:       # torch squares bools as int64 (pow(a, 2))
        a = cast(a, dtypes.int64)
    return Square.apply(a)


def erf(a):
    return _unary(Erf, a)


def _rounding(fn, a, kernel):
    """floor/ceil/round/trunc: a copy for integers, torch's error for bool."""
    _check_tensor(a, kernel)
    if a._data.dtype.is_floating_point:
        return fn.apply(a)
    if a._data.dtype is dtypes.bool_:
        raise _no_bool_kernel(kernel + "_vml", a.device)
    return _copy(a)


def floor(a):
    return _rounding(Floor, a, "floor")


def ceil(a):
    return _rounding(Ceil, a, "ceil")


def round(a, decimals=0):
    """Round half to even; with `decimals`, scale like torch does (divide for negative decimals
    so that e.g. 1250 rounds to 1200 exactly)."""
    if not decimals or not isinstance(a, Tensor) or not a._data.dtype.is_floating_point:
        return _rounding(Round, a, "round")
    if decimals > 0:
        scale = 10.0 ** decimals
        return Round.apply(a * scale) / scale
    scale = 10.0 ** -decimals
    return Round.apply(a / scale) * scale


def trunc(a):
    return _rounding(Trunc, a, "trunc")


def _predicate(op, a, name):
    _check_tensor(a, name)
    return wrap(a._data.unary(op))


def isnan(a):
    return _predicate(U.ISNAN, a, "isnan")


def isinf(a):
    return _predicate(U.ISINF, a, "isinf")


def isfinite(a):
    return _predicate(U.ISFINITE, a, "isfinite")


def logical_not(a):
    return _predicate(U.LOGICAL_NOT, a, "logical_not")


def sinh(a):
    return _unary(Sinh, a)


def cosh(a):
    return _unary(Cosh, a)


def tan(a):
    return _unary(Tan, a)


def asin(a):
    return _unary(Asin, a)


def acos(a):
    return _unary(Acos, a)


def atan(a):
    return _unary(Atan, a)


def asinh(a):
    return _unary(Asinh, a)


def acosh(a):
    return _unary(Acosh, a)


def atanh(a):
    return _unary(Atanh, a)


def log2(a):
    return _unary(Log2, a)


def log10(a):
    return _unary(Log10, a)


def exp2(a):
    return _unary(Exp2, a)


def erfc(a):
    return _unary(Erfc, a)


def lgamma(a):
    return _unary(Lgamma, a)


def digamma(a):
    return _unary(Digamma, a)


def frac(a):
    """a - trunc(a), keeping a's sign; torch has no integer or bool kernel."""
    _check_tensor(a, "frac")
    if not a._data.dtype.is_floating_point:
        raise _no_kernel("frac", a._data.dtype, a.device)
    return Frac.apply(a)


def isposinf(a):
    return _infinity_test(a, math.inf, "isposinf")


def isneginf(a):
    return _infinity_test(a, -math.inf, "isneginf")


def _infinity_test(a, infinity, name):
    _check_tensor(a, name)
    if not a._data.dtype.is_floating_point:
        return zeros_like(a, dtype=dtypes.bool_)
    return eq(a, infinity)


def isreal(a):
    """True everywhere: every minitorch dtype is real (torch: imaginary part == 0)."""
    _check_tensor(a, "isreal")
    return ones_like(a, dtype=dtypes.bool_)


class Angle(_ZeroGradUnary):
    """The argument of a real number: π for negatives, 0 otherwise, NaN kept; zero gradient."""

    @classmethod
    def forward(cls, ctx, a):
        a = a.detach()          # our ops' forwards run recording: keep these selects off it
        data = a._data
        pi, zero = (wrap(scalar_array(v, data.dtype, data.device)) for v in (math.pi, 0.0))
        return where(isnan(a), a, where(lt(a, zero), pi, zero))


def angle(a):
    _check_tensor(a, "angle")
    return Angle.apply(_float_input(a))


def sgn(a):
    """sign for real tensors (torch's sgn differs only for complex ones)."""
    _check_tensor(a, "sgn")
    return sign(a)


def signbit(a):
    """True where the sign bit is set, -0.0 and negative NaNs included (copysign sees it)."""
    _check_tensor(a, "signbit")
    data = a._data
    if not data.dtype.is_floating_point:
        return lt(a, 0)
    one, zero = (scalar_array(v, data.dtype, data.device) for v in (1, 0))
    return wrap(one.binary(B.COPYSIGN, data).binary(B.LT, zero))


def deg2rad(a):
    _check_tensor(a, "deg2rad")
    return _float_input(a) * (math.pi / 180)


def rad2deg(a):
    _check_tensor(a, "rad2deg")
    return _float_input(a) * (180 / math.pi)


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
    return trunc(a)


def positive(input):
    _check_tensor(input, "positive")
    if input._data.dtype is dtypes.bool_:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


# ---- binary -----------------------------------------------------------------------------------
class _Binary(KernelFunction):
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

    @classmethod
    def forward(cls, ctx, a, b):
        if a._data.dtype is dtypes.bool_:   # Tensor.__sub__ calls apply directly for one dtype
            _check_sub(a, b)
        ctx.shapes = (a._data.shape, b._data.shape)
        return wrap(a._data.binary(B.SUB, b._data))

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
        # torch saves the inputs, not the result, so `y = a / b; y += 1` stays legal.
        ctx.save_for_backward(a if b.requires_grad else None, b)
        ctx.shapes = (a._data.shape, b._data.shape)
        return wrap(a._data.binary(B.DIV, b._data))

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        a_shape, b_shape = ctx.shapes
        grad_a = sum_to(g / b, a_shape) if ctx.needs_input_grad[0] else None
        grad_b = sum_to(-g * a / (b * b), b_shape) if a is not None else None
        return grad_a, grad_b


class FloorDivide(_Binary):
    """floor(a / b) computed exactly by the kernel; piecewise constant, so zero gradients."""
    op = B.FLOOR_DIVIDE

    @staticmethod
    def backward(ctx, g):
        needs = ctx.needs_input_grad
        return tuple(zeros(*shape, dtype=g.dtype, device=g.device) if need else None
                     for shape, need in zip(ctx.shapes, needs))


class TruncDivide(FloorDivide):
    """trunc(a / b) for floats; zero gradients like every rounding division in torch."""

    @classmethod
    def forward(cls, ctx, a, b):
        ctx.shapes = (a._data.shape, b._data.shape)
        return wrap(a._data.binary(B.DIV, b._data).unary(U.TRUNC))


class Pow(KernelFunction):
    """tensor ** Python number (torch's PowBackward0)."""

    @staticmethod
    def forward(ctx, a, exponent):
        ctx.save_for_backward(a)
        ctx.exponent = exponent
        data = a._data
        return wrap(data.binary(B.POW, scalar_array(exponent, data.dtype, data.device)))

    @staticmethod
    def backward(ctx, g):
        a, = ctx.saved_tensors
        exponent = ctx.exponent
        if exponent == 0:
            return zeros_like(g), None
        return g * exponent * pow(a, exponent - 1), None


class PowTensor(_Binary):
    """tensor ** tensor and number ** tensor (torch's PowBackward1)."""
    op = B.POW

    @classmethod
    def name(cls):
        return "PowBackward1"

    @classmethod
    def forward(cls, ctx, a, b):
        try:
            out = a._data.binary(B.POW, b._data)
        except RuntimeError:
            if a._data.dtype is not dtypes.int64:
                raise
            out = _int_pow_negative(a._data, b._data)
        out = wrap(out)
        ctx.save_for_backward(a, b, out if b.requires_grad else None)
        ctx.shapes = (a._data.shape, b._data.shape)
        return out

    @staticmethod
    def backward(ctx, g):
        a, b, out = ctx.saved_tensors
        a_shape, b_shape = ctx.shapes
        grad_a = grad_b = None
        if ctx.needs_input_grad[0]:
            # torch's convention: no gradient through a zero exponent (even where a == 0).
            zero = wrap(scalar_array(0, g.dtype, g.device))
            grad_a = sum_to(where(b == 0, zero, g * b * pow(a, b - 1)), a_shape)
        if out is not None:
            # ... and d(a**b)/db = 0 where a == 0 and b >= 0 (instead of 0 * log 0).
            zero = wrap(scalar_array(0, g.dtype, g.device))
            grad_b = sum_to(g * where((a == 0) & (b >= 0), zero, out * log(a)), b_shape)
        return grad_a, grad_b


def _int_pow_negative(a, b):
    """Integer a ** b where some b < 0 (torch: 1 for a == 1, ±1 for a == -1, else 0)."""
    zero = scalar_array(0, dtypes.int64, a.device)
    one = scalar_array(1, dtypes.int64, a.device)
    powered = a.binary(B.POW, b.unary(U.ABS))
    vanishes = b.binary(B.LT, zero).binary(B.LOGICAL_AND, a.unary(U.ABS).binary(B.NE, one))
    return vanishes.where(zero, powered)


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
        # torch's rule: ties split the gradient evenly; only the losing side gets none, so a
        # NaN (no side loses) sends the whole gradient to both.
        a_loses, b_loses = (a < b, a > b) if cls.op is B.MAXIMUM else (a > b, a < b)
        zero = wrap(scalar_array(0, g.dtype, g.device))
        half = where(a == b, g * 0.5, g)
        grad_a = sum_to(where(a_loses, zero, half), a_shape) if ctx.needs_input_grad[0] else None
        grad_b = sum_to(where(b_loses, zero, half), b_shape) if ctx.needs_input_grad[1] else None
        return grad_a, grad_b


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
        # torch zeroes the infinite 1/(a^2 + b^2) at the origin, so the gradient there is 0
        recip = (a * a + b * b).reciprocal()
        recip = recip.masked_fill(recip.isinf(), 0.0)
        return sum_to(g * b * recip, a_shape), sum_to(g * -a * recip, b_shape)


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


def _binary(fn, a, b, floating=False):
    """Apply a binary Function: same-dtype tensors and float tensor ⊕ Python int/float go
    straight to the kernel; anything else is promoted first."""
    if isinstance(a, Tensor):
        dtype = a._data.dtype
        if isinstance(b, Tensor):
            if b._data.dtype is dtype and (not floating or dtype.is_floating_point):
                return fn.apply(a, b)
        elif type(b) in _FAST_SCALARS and dtype.is_floating_point:
            return fn.apply(a, wrap(scalar_array(b, dtype, a._data.device)))
    elif type(a) in _FAST_SCALARS and isinstance(b, Tensor) and b._data.dtype.is_floating_point:
        return fn.apply(wrap(scalar_array(a, b._data.dtype, b._data.device)), b)
    a, b = promote(a, b, floating)
    return fn.apply(a, b)


def _scale(other, alpha, input):
    """other * alpha for add/sub, with torch's checks on alpha's type."""
    if isinstance(alpha, float) and not result_type(input, other).is_floating_point:
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating "
                           "point number.")
    return other * alpha


def add(input, other, alpha=1):
    if alpha != 1:
        if result_type(input, other) is dtypes.bool_:     # torch casts alpha to bool too
            other = _compare(B.LOGICAL_AND, other, bool(alpha))
        else:
            other = _scale(other, alpha, input)
    return _binary(Add, input, other)


def _check_sub(input, other):
    """torch refuses `-` on bool operands (it would be ambiguous with logical ops)."""
    a_bool, b_bool = _dtype_of(input) is dtypes.bool_, _dtype_of(other) is dtypes.bool_
    if a_bool and b_bool:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                           "supported. Use the `^` or `logical_xor()` operator instead.")
    if a_bool or b_bool:
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")


def sub(input, other, alpha=1):
    _check_sub(input, other)
    if alpha != 1:
        other = _scale(other, alpha, input)
    return _binary(Sub, input, other)


def mul(input, other):
    return _binary(Mul, input, other)


def _integer_division_operands(input, other, kernel):
    """Promoted operands of floor/trunc division, remainder and fmod; torch has no bool kernel."""
    a, b = promote(input, other)
    if a._data.dtype is dtypes.bool_:
        raise _no_bool_kernel(kernel, a.device)
    return a, b


def div(input, other, rounding_mode=None):
    if rounding_mode is None:
        return _binary(Div, input, other, floating=True)
    if rounding_mode == "floor":
        return FloorDivide.apply(*_integer_division_operands(input, other, "div_floor"))
    if rounding_mode == "trunc":
        a, b = _integer_division_operands(input, other, "div_trunc")
        if a._data.dtype.is_floating_point:
            return TruncDivide.apply(a, b)
        # Integers: floor division, moved up by one where the exact quotient is negative and
        # not whole.
        quotient = FloorDivide.apply(a, b)
        inexact = Remainder.apply(a, b) != 0
        negative = (a < 0) != (b < 0)
        return quotient + cast(inexact & negative, quotient.dtype)
    raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but "
                       f"found '{rounding_mode}'")


def true_divide(input, other):
    return div(input, other)


def pow(input, exponent):
    if isinstance(exponent, (bool, np.bool_)) and isinstance(input, Tensor) and \
            input.dtype is dtypes.bool_:
        return input.clone() if exponent else _compare(B.LOGICAL_OR, input, True)  # x**0 = 1
    if isinstance(input, Tensor) and isinstance(exponent, numbers.Real) and not isinstance(
            exponent, (bool, np.bool_)):
        dtype = result_type(input, exponent)
        if dtype is dtypes.bool_:
            raise NotImplementedError('"pow" not implemented for \'Bool\'')
        if not dtype.is_floating_point and exponent < 0:
            # checked before the exponent is stored as uint8 (where -1 would wrap to 255)
            raise RuntimeError("Integers to negative integer powers are not allowed.")
        input = cast(input, dtype)
        if dtype.is_floating_point:
            if exponent == 2:
                return square(input)
            if exponent == 0.5:
                return sqrt(input)
        return Pow.apply(input, exponent)
    a, b = promote(input, exponent)
    if a._data.dtype is dtypes.bool_:
        raise NotImplementedError('"pow" not implemented for \'Bool\'')
    return PowTensor.apply(a, b)


def float_power(input, exponent):
    input = input.double() if isinstance(input, Tensor) else float(input)
    exponent = exponent.double() if isinstance(exponent, Tensor) else float(exponent)
    return pow(input, exponent)


def maximum(input, other):
    return _binary(Maximum, input, other)


def minimum(input, other):
    return _binary(Minimum, input, other)


def fmax(input, other):
    """maximum that ignores NaN: the other operand wins where one side is NaN. One select,
    so the gradient goes to one side as in torch (to input on ties and where other is NaN)."""
    _check_tensor(input, "fmax")
    _check_tensor(other, "fmax", 2, "other")
    return where((input >= other) | isnan(other), input, other)


def fmin(input, other):
    _check_tensor(input, "fmin")
    _check_tensor(other, "fmin", 2, "other")
    return where((input <= other) | isnan(other), input, other)


def atan2(input, other):
    return _binary(Atan2, input, other, floating=True)


def remainder(input, other):
    """Python's modulo: the result takes the divisor's sign."""
    return Remainder.apply(*_integer_division_operands(input, other, "remainder"))


def fmod(input, other):
    """C's fmod: the result takes the dividend's sign."""
    return Fmod.apply(*_integer_division_operands(input, other, "fmod"))


def floor_divide(input, other):
    return FloorDivide.apply(*_integer_division_operands(input, other, "div_floor"))


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
    return _float_only_binary(Hypot, "hypot", input, other)


def logaddexp(input, other):
    return _float_only_binary(Logaddexp, "logaddexp", input, other)


def logaddexp2(input, other):
    return _float_only_binary(Logaddexp2, "logaddexp2", input, other)


def copysign(input, other):
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
    return Heaviside.apply(input, values)


def clamp_min(input, min):
    return clamp(input, min=min)


def clamp_max(input, max):
    return clamp(input, max=max)


# ---- special functions (torch.special; kernels ERFINV..BESSEL_J1 and GCD..XLOG1PY) -----------
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
    return _special_unary(Erfinv, input, "erfinv")


def i0(input):
    return _special_unary(I0, input, "i0")


def special_i0e(input):
    return _special_unary(SpecialI0E, input, "special_i0e")


def special_i1(input):
    return _special_unary(SpecialI1, input, "special_i1")


def special_i1e(input):
    return _special_unary(SpecialI1E, input, "special_i1e")


def special_ndtri(input):
    return _special_unary(SpecialNdtri, input, "special_ndtri")


def special_log_ndtr(input):
    return _special_unary(SpecialLogNdtr, input, "special_log_ndtr")


def special_erfcx(input):
    return _special_unary(SpecialErfcx, input, "special_erfcx")


def _no_gradient_unary(op, input, name):
    """Bessel J0/J1: torch records no gradient for them (the result never requires grad)."""
    _check_tensor(input, name)
    return wrap(_float_input(input)._data.unary(op))


def special_bessel_j0(input):
    return _no_gradient_unary(U.BESSEL_J0, input, "special_bessel_j0")


def special_bessel_j1(input):
    return _no_gradient_unary(U.BESSEL_J1, input, "special_bessel_j1")


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
    return _float_only_binary(Igamma, "igamma", input, other)


def igammac(input, other):
    return _float_only_binary(Igammac, "igammac", input, other)


def nextafter(input, other):
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
    return _integer_only_binary(B.GCD, "gcd", input, other)


def lcm(input, other):
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


def logit(input, eps=None):
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


def sinc(input):
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
    _check_tensor(input, "special_entr")
    return SpecialEntr.apply(_float_input(input))


def special_ndtr(input):
    """The standard normal CDF, (1 + erf(x / sqrt 2)) / 2 written with erfc so that both tails
    keep their precision."""
    _check_tensor(input, "special_ndtr")
    return erfc(_float_input(input) * -math.sqrt(0.5)) * 0.5


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


def _bitwise(kernel, op, logical_op, a, b):
    """&, |, ^, <<, >>: integers bit by bit (uint8 wraps, computed in int64), bool & | ^
    logically (torch's bool results); floats raise torch's NotImplementedError. Integer results
    carry no gradient, so there is no autograd node."""
    dtype = result_type(a, b)
    if dtype is dtypes.bool_ and logical_op is not None:
        return _compare(logical_op, a, b)
    device = a.device if isinstance(a, Tensor) else b.device
    if dtype.is_floating_point or dtype is dtypes.bool_:     # bool << bool too
        if kernel in ("lshift", "rshift") and dtype is dtypes.bool_:
            raise _no_kernel(kernel, dtype, device)
        raise _no_kernel(kernel, dtype, device)
    a, b = (_as_operand(x, dtype, device) for x in (a, b))
    return wrap(a._data.binary(op, b._data))


def bitwise_and(input, other):
    return _bitwise("bitwise_and", B.BITWISE_AND, B.LOGICAL_AND, input, other)


def bitwise_or(input, other):
    return _bitwise("bitwise_or", B.BITWISE_OR, B.LOGICAL_OR, input, other)


def bitwise_xor(input, other):
    return _bitwise("bitwise_xor", B.BITWISE_XOR, B.LOGICAL_XOR, input, other)


def bitwise_left_shift(input, other):
    return _bitwise("lshift", B.LEFT_SHIFT, None, input, other)


def bitwise_right_shift(input, other):
    return _bitwise("rshift", B.RIGHT_SHIFT, None, input, other)


def bitwise_not(input):
    """~x: logical not for bool, every bit flipped for integers."""
    if input.dtype is dtypes.bool_:
        return logical_not(input)
    if input.dtype.is_floating_point:
        raise _no_kernel("bitwise_not", input.dtype, input.device)
    return wrap(input._data.unary(U.BITWISE_NOT))


def _all(mask):
    """Python bool: every element of a bool tensor is True (one min-reduction kernel)."""
    if mask.numel() == 0:
        return True
    return bool(wrap(mask._data.reduce(ReduceOp.MIN)).item())


def equal(input, other):
    """True when both have the same shape and elements (values compared across dtypes)."""
    _check_tensor(input, "equal")
    _check_tensor(other, "equal", 2, "other")
    return input.shape == other.shape and _all(eq(input, other))


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    return _all(isclose(input, other, rtol, atol, equal_nan))


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """|input - other| <= atol + rtol * |other| (and equal values, infinities included)."""
    _check_tensor(input, "isclose")
    _check_tensor(other, "isclose", 2, "other")
    if input.dtype is not other.dtype:
        raise RuntimeError(f"{TORCH_NAMES[input.dtype.name]} did not match "
                           f"{TORCH_NAMES[other.dtype.name]}")
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol}")
    close = eq(input, other)
    if input.dtype is dtypes.bool_:
        return close
    if equal_nan and input.dtype.is_floating_point:
        close = close | (isnan(input) & isnan(other))
    if rtol == 0 and atol == 0:
        return close
    a, b = _float_input(input.detach()), _float_input(other.detach())
    error = abs(a - b)
    return close | (isfinite(error) & (error <= abs(b * rtol) + atol))


# ---- where / clamp / lerp ---------------------------------------------------------------------
class Where(KernelFunction):
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
        grad_a = sum_to(where(condition, g, zero), a_shape) if ctx.needs_input_grad[1] else None
        grad_b = sum_to(where(condition, zero, g), b_shape) if ctx.needs_input_grad[2] else None
        return None, grad_a, grad_b


def where(condition, input=None, other=None):
    """input where condition else other (broadcast together); where(condition) = nonzero."""
    if input is None and other is None:
        return condition.nonzero(as_tuple=True)
    _check_tensor(condition, "where", arg="condition")
    if condition.dtype is dtypes.uint8:
        warnings.warn("where received a uint8 condition tensor. This behavior is deprecated and "
                      "will be removed in a future version of PyTorch. Use a boolean condition "
                      "instead.", UserWarning, stacklevel=2)
        condition = cast(condition, dtypes.bool_)
    if condition.dtype is not dtypes.bool_:
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor "
                           f"with dtype {TORCH_NAMES[condition.dtype.name]}")
    dtype = result_type(input, other)
    _check_scalars_fit(dtype, input, other)
    device = condition.device
    return Where.apply(condition, _as_operand(input, dtype, device),
                       _as_operand(other, dtype, device))


def _check_scalars_fit(dtype, *values):
    """torch's overflow check on the Python scalars of where/clamp (arithmetic instead wraps
    them: `uint8_tensor + 300` is fine, `where(c, uint8_tensor, 300)` is not)."""
    for value in values:
        if value is not None and not isinstance(value, Tensor):
            dtypes.check_scalar_fits(value, dtype)


def clamp(input, min=None, max=None):
    """Limit to [min, max] (scalars or tensors, broadcast); NaN stays NaN. The result dtype
    promotes over all three, as in torch (an int tensor clamped to 0.5 is float)."""
    _check_tensor(input, "clamp")
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    dtype = result_type(input, min, max)
    tensors = isinstance(min, Tensor) or isinstance(max, Tensor)
    if dtype is dtypes.bool_ and (not tensors or (min is not None and max is not None)):
        # torch has no bool clamp kernel (one tensor bound runs maximum / minimum instead)
        kind = "clamp" if min is not None and max is not None else \
            "clamp_min" if min is not None else "clamp_max"
        raise _no_bool_kernel(kind if tensors else kind + "_scalar", input.device)
    _check_scalars_fit(dtype, min, max)
    device = input.device
    return Clamp.apply(cast(input, dtype),
                       None if min is None else _as_operand(min, dtype, device),
                       None if max is None else _as_operand(max, dtype, device))


class Clamp(KernelFunction):
    """min(max(x, low), high): NaN in x or in a bound propagates (as in torch), min > max gives
    max. Gradients are torch's clamp_backward / clamp_backward_min_max."""

    @staticmethod
    def forward(ctx, x, low, high):
        ctx.save_for_backward(x, low, high)
        out = x._data
        if low is not None:
            out = out.binary(B.MAXIMUM, low._data)
        if high is not None:
            out = out.binary(B.MINIMUM, high._data)
        return wrap(out)

    @staticmethod
    def backward(ctx, g):
        x, low, high = ctx.saved_tensors
        zero = wrap(scalar_array(0, g.dtype, g.device))
        needs = ctx.needs_input_grad
        grad_x = grad_low = grad_high = None
        if needs[0]:
            inside = x >= low if low is not None else None
            if high is not None:
                inside = x <= high if inside is None else inside & (x <= high)
            grad_x = sum_to(where(inside, g, zero), x.shape)
        if needs[1]:
            below = x < low if high is None else (x < low) & (low < high)
            grad_low = sum_to(where(below, g, zero), low.shape)
        if needs[2]:
            above = x > high if low is None else (x > high) | (high < low)
            grad_high = sum_to(where(above, g, zero), high.shape)
        return grad_x, grad_low, grad_high


def _addc_operands(input, tensor1, tensor2, value):
    """The three tensors in their joint result dtype (one op in torch: a 0-d or lower-priority
    operand does not widen it step by step), and value converted to it (0.5 is 0 for int64)."""
    dtype = result_type(input, tensor1, tensor2)
    if not dtype.is_floating_point:
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
    if not (tensor1.dtype.is_floating_point or tensor2.dtype.is_floating_point):
        raise RuntimeError(
            "Integer division with addcdiv is no longer supported, and in a future  release "
            "addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv "
            "behavior can be implemented as (input + value * torch.trunc(tensor1 / tensor2))"
            ".to(input.dtype) for integer inputs and as (input + value * tensor1 / tensor2) for "
            "float inputs. The future addcdiv behavior is just the latter implementation: "
            "(input + value * tensor1 / tensor2), for all dtypes.")
    input, tensor1, tensor2, value = _addc_operands(input, tensor1, tensor2, value)
    return input + (tensor1 * value if value != 1 else tensor1) / tensor2


def lerp(input, end, weight):
    """input + weight * (end - input), in torch's two-sided form (exact at weight 0 and 1)."""
    _check_tensor(input, "lerp")
    _check_tensor(end, "lerp", 2, "end")
    kind = "tensor" if isinstance(weight, Tensor) else "scalar"
    if not input.dtype.is_floating_point:
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
    closed forms (g * (1 - weight), g * weight, g * (end - input)), not the chosen branch's."""

    @staticmethod
    def forward(ctx, input, end, weight):
        tensor_weight = isinstance(weight, Tensor)
        ctx.save_for_backward(input, end, weight if tensor_weight else None)
        ctx.weight = None if tensor_weight else weight
        # our ops' forwards run recording: compute on detached operands
        input, end = input.detach(), end.detach()
        diff = end - input
        if not tensor_weight:
            out = input + diff * weight if -0.5 < weight < 0.5 else end - diff * (1 - weight)
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
        grad_input = sum_to(g * (1 - weight), input.shape) if needs[0] else None
        grad_end = sum_to(g * weight, end.shape) if needs[1] else None
        grad_weight = sum_to(g * (end - input), weight.shape) if needs[2] else None
        return grad_input, grad_end, grad_weight


clip = clamp
arcsin = asin
arccos = acos
arctan = atan
arcsinh = asinh
arccosh = acosh
arctanh = atanh
divide = div
multiply = mul
subtract = sub
negative = neg
absolute = abs
greater = gt
less = lt
greater_equal = ge
less_equal = le
not_equal = ne
arctan2 = atan2
