"""Comparisons and logic: ==, <, … (bool results), the predicates (isnan, isinf, signbit, …),
logical and bitwise ops, and the whole-tensor tests equal / allclose / isclose. None of them has
a gradient."""
import math

from .. import dtypes
from ..ndarray import scalar_array
from ..opcodes import BinaryOp as B, ReduceOp, UnaryOp as U
from ..tensor import Tensor, ones_like, wrap, zeros_like
from .autocast_policy import batching_point
from .complex_refusals import refuse_complex
from .elementwise import (TORCH_NAMES, _as_operand, _check_tensor, _compare, _float_input,
                          _no_kernel, result_type)


__all__ = [
    'allclose', 'bitwise_and', 'bitwise_left_shift', 'bitwise_not', 'bitwise_or',
    'bitwise_right_shift', 'bitwise_xor', 'eq', 'equal', 'ge', 'greater', 'greater_equal',
    'gt', 'isclose', 'isfinite', 'isinf', 'isnan', 'isneginf', 'isposinf', 'isreal', 'le',
    'less', 'less_equal', 'logical_and', 'logical_not', 'logical_or', 'logical_xor', 'lt',
    'ne', 'not_equal', 'signbit',
]


def _predicate(op, a, name):
    _check_tensor(a, name)
    return wrap(a._data.unary(op))


@batching_point
def isnan(a):
    """Boolean tensor, True where input is NaN (torch.isnan)."""
    return _predicate(U.ISNAN, a, "isnan")


@batching_point
def isinf(a):
    """Boolean tensor, True where input is +inf or -inf (torch.isinf)."""
    return _predicate(U.ISINF, a, "isinf")


@batching_point
def isfinite(a):
    """Boolean tensor, True where input is neither NaN nor infinite (torch.isfinite)."""
    return _predicate(U.ISFINITE, a, "isfinite")


@batching_point
def logical_not(a):
    """Boolean tensor, True where input is zero (torch.logical_not)."""
    return _predicate(U.LOGICAL_NOT, a, "logical_not")


def isposinf(a):
    """Boolean tensor, True where input is +inf (torch.isposinf)."""
    return _infinity_test(a, math.inf, "isposinf")


def isneginf(a):
    """Boolean tensor, True where input is -inf (torch.isneginf)."""
    return _infinity_test(a, -math.inf, "isneginf")


def _infinity_test(a, infinity, name):
    _check_tensor(a, name)
    if not a._data.dtype.is_floating_point:
        refuse_complex(name, a)
        return zeros_like(a, dtype=dtypes.bool_)
    return eq(a, infinity)


def isreal(a):
    """True everywhere: every minitorch dtype is real (torch: imaginary part == 0)."""
    _check_tensor(a, "isreal")
    return ones_like(a, dtype=dtypes.bool_)


def signbit(a):
    """True where the sign bit is set, -0.0 and negative NaNs included (copysign sees it)."""
    _check_tensor(a, "signbit")
    data = a._data
    if not data.dtype.is_floating_point:
        refuse_complex("signbit", a)
        return lt(a, 0)
    one, zero = (scalar_array(v, data.dtype, data.device) for v in (1, 0))
    return wrap(one.binary(B.COPYSIGN, data).binary(B.LT, zero))


def eq(input, other):
    """Elementwise input == other as a bool tensor, with broadcasting (torch.eq)."""
    return _compare(B.EQ, input, other)


def ne(input, other):
    """Elementwise input != other as a bool tensor, with broadcasting (torch.ne, alias
    not_equal)."""
    return _compare(B.NE, input, other)


def lt(input, other):
    """Elementwise input < other as a bool tensor, with broadcasting (torch.lt, alias less)."""
    return _compare(B.LT, input, other)


def le(input, other):
    """Elementwise input <= other as a bool tensor, with broadcasting (torch.le, alias
    less_equal)."""
    return _compare(B.LE, input, other)


def gt(input, other):
    """Elementwise input > other as a bool tensor, with broadcasting (torch.gt, alias greater)."""
    return _compare(B.GT, input, other)


def ge(input, other):
    """Elementwise input >= other as a bool tensor, with broadcasting (torch.ge, alias
    greater_equal)."""
    return _compare(B.GE, input, other)


@batching_point
def logical_and(input, other):
    """Elementwise logical AND of the truth values of input and other (torch.logical_and)."""
    return _compare(B.LOGICAL_AND, input, other)


@batching_point
def logical_or(input, other):
    """Elementwise logical OR of the truth values of input and other (torch.logical_or)."""
    return _compare(B.LOGICAL_OR, input, other)


@batching_point
def logical_xor(input, other):
    """Elementwise logical XOR of the truth values of input and other (torch.logical_xor)."""
    return _compare(B.LOGICAL_XOR, input, other)


def _bitwise(kernel, op, logical_op, a, b):
    """&, |, ^, <<, >>: integers bit by bit (uint8 wraps, computed in int64), bool & | ^
    logically (torch's bool results); floats raise torch's NotImplementedError. Integer results
    carry no gradient, so there is no autograd node."""
    if logical_op is not None and type(a) is Tensor and type(b) is Tensor and \
            a._data.dtype is dtypes.bool_ and b._data.dtype is dtypes.bool_:
        return wrap(a._data.binary(logical_op, b._data))      # mask & mask
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
    """Elementwise bitwise AND of integer or bool tensors (torch.bitwise_and)."""
    return _bitwise("bitwise_and", B.BITWISE_AND, B.LOGICAL_AND, input, other)


def bitwise_or(input, other):
    """Elementwise bitwise OR of integer or bool tensors (torch.bitwise_or)."""
    return _bitwise("bitwise_or", B.BITWISE_OR, B.LOGICAL_OR, input, other)


def bitwise_xor(input, other):
    """Elementwise bitwise XOR of integer or bool tensors (torch.bitwise_xor)."""
    return _bitwise("bitwise_xor", B.BITWISE_XOR, B.LOGICAL_XOR, input, other)


def bitwise_left_shift(input, other):
    """Elementwise input << other for integer tensors (torch.bitwise_left_shift)."""
    return _bitwise("lshift", B.LEFT_SHIFT, None, input, other)


def bitwise_right_shift(input, other):
    """Elementwise input >> other for integer tensors (torch.bitwise_right_shift)."""
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
    """True if every element satisfies |input - other| <= atol + rtol * |other|
    (torch.allclose)."""
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
    if equal_nan and (input.dtype.is_floating_point or input.dtype.is_complex):
        close = close | (isnan(input) & isnan(other))
    if rtol == 0 and atol == 0:
        return close
    a, b = _float_input(input.detach()), _float_input(other.detach())
    error = abs(a - b)
    return close | (isfinite(error) & (error <= abs(b * rtol) + atol))


greater = gt


less = lt


greater_equal = ge


less_equal = le


not_equal = ne
