"""The core elementwise ops: torch's type promotion, dtype casts and device moves, the basic
unary math (neg, abs, exp, log, sqrt, sin, cos, tanh, sigmoid, relu, rounding), binary
arithmetic with broadcasting (+ - * / pow, maximum, minimum), where and clamp. Comparisons are
compare.py, further math float_math.py, special functions special_functions.py.

Forward works on NDArrays (one kernel call); backward is written with Tensor ops so it can be
differentiated again. Binary backward sums the gradient back over broadcast axes (`sum_to`).
"""
import math
import numbers
import warnings

import numpy as np

from .. import dtypes
from ..autograd import KernelFunction, _grad_mode
from ..autograd import engine as _engine
from ..autograd.engine import recorded as _recorded
from ..backend import device as device_of
from ..ndarray import NDArray, scalar_array
from ..opcodes import BinaryOp as B, UnaryOp as U
from ..tensor import (Tensor, copy_in_layout, is_contiguous_as, layout_for, preserve_format,
                      wrap, zeros, zeros_like)
from ..tensor import memory_format as _memory_format
from .autocast_policy import batched_result, batching_point
from .complex_refusals import refuse_complex
from .reduce import sum_to


__all__ = [
    'abs', 'absolute', 'add', 'ceil', 'clamp', 'clamp_max', 'clamp_min', 'clip', 'cos', 'div',
    'divide', 'erf', 'exp', 'expm1', 'float_power', 'floor', 'floor_divide', 'log', 'log1p',
    'maximum', 'minimum', 'mul', 'multiply', 'neg', 'negative', 'pow', 'reciprocal', 'relu',
    'round', 'rsqrt', 'sigmoid', 'sign', 'sin', 'sqrt', 'square', 'sub', 'subtract', 'tanh',
    'true_divide', 'trunc', 'where',
]
_FAST_SCALARS = (int, float)
_DENSE_OPERANDS = frozenset((Tensor, int, float, bool))
_INT64_MIN, _INT64_MAX = -2 ** 63, 2 ** 63 - 1
# torch's names for dtypes in error messages: ScalarType names, and C type names (c10 typename).
TORCH_NAMES = {d.name: d.torch_name for d in dtypes.ALL + dtypes.COMPLEX}
C_NAMES = {"float32": "float", "float64": "double", "int64": "long int", "int32": "int",
           "int16": "short int", "int8": "signed char", "uint8": "unsigned char", "bool": "bool",
           "float16": "c10::Half", "bfloat16": "c10::BFloat16",
           "complex64": "c10::complex<float>", "complex128": "c10::complex<double>"}


def _priority(x):
    return 0 if not isinstance(x, Tensor) else (2 if x._data.shape else 1)


def _sparse(x):
    """Whether x is a sparse COO tensor: a dense Tensor or a Python number is answered without
    getattr's failing (slow) lookup on a number."""
    return type(x) not in _DENSE_OPERANDS and getattr(x, "is_sparse", False)


def _conj(t):
    """t.conj() in a backward rule; a real tensor is itself, without the call."""
    return t.conj() if t._data.dtype.is_complex else t


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
        kind = type(x)
        if kind is Tensor:      # the common operands first, without the general checks
            p, d = 2 if x._data.shape else 1, x._data.dtype
        elif kind is float:
            p, d = 0, dtypes.get_default_dtype()
        else:
            _check_operand(x)
            p, d = _priority(x), _dtype_of(x)
        held = by_priority[p]
        by_priority[p] = d if held is None or held is d else dtypes.promote_types(held, d)
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
    if type(a) not in _DENSE_OPERANDS:      # (a tensor or a Python number cannot be refused)
        _check_operand(a)
    if type(b) not in _DENSE_OPERANDS:
        _check_operand(b)
    dtype = dtypes.result_type(_dtype_of(a), _dtype_of(b), _priority(a), _priority(b))
    if floating and not (dtype.is_floating_point or dtype.is_complex):
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
    """Integer/bool inputs of float-valued functions are promoted to the default float dtype;
    complex inputs stay complex (NDArray runs the ops it has complex kernels for and raises
    torch's missing-kernel error for the others)."""
    dtype = a._data.dtype
    return a if dtype.is_floating_point or dtype.is_complex else \
        cast(a, dtypes.get_default_dtype())


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
        if g._data.dtype.is_complex and not ctx.source_dtype.is_complex:
            g = g.real      # a real input's gradient is the real part (torch, without warning)
        return cast(g, ctx.source_dtype), None


def cast(a, dtype):
    if a._data.dtype is dtype:
        return a
    if a._data.dtype.is_complex and not dtype.is_complex:
        warnings.warn("Casting complex values to real discards the imaginary part",
                      UserWarning, stacklevel=3)
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


def to(self, *args, dtype=None, device=None, non_blocking=False, copy=False, memory_format=None):
    """to(dtype), to(device), to(device, dtype), to(other_tensor); memory_format lays the result
    out so (channels_last needs 4 dims), self itself when nothing changes."""
    if dtype is not None and not isinstance(dtype, dtypes.dtype):
        raise TypeError(_TO_SIGNATURES.format(f"dtype={type(dtype).__name__}, "))
    if memory_format is not None and not isinstance(memory_format, _memory_format):
        raise TypeError(_TO_SIGNATURES.format(
            f"memory_format={type(memory_format).__name__}, "))
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
    if memory_format is not None and memory_format is not preserve_format:
        layout = layout_for(result._data, memory_format)    # torch's rank error first
        if not is_contiguous_as(result._data, memory_format) or (copy and result is self):
            return _ToCopyLayout.apply(result, layout)
    if copy and result is self:
        result = self.clone()
    return result


class _ToCopyLayout(KernelFunction):
    """to(memory_format=...)'s copy in the new layout (torch's node: ToCopyBackward0)."""
    node_name = "ToCopyBackward0"

    @staticmethod
    def forward(ctx, a, layout):
        return wrap(copy_in_layout(a._data, *layout))

    @staticmethod
    def backward(ctx, g):
        return g, None


# ---- unary ------------------------------------------------------------------------------------
# The complex versions of ops, keyed by the real op's Function (a callable taking the same
# arguments): functions/complex_math.py fills it; _unary and pow look there for complex input.
COMPLEX_OPS = {}


class _Unary(KernelFunction):
    """out = op(a); subclasses give `op` and a backward. A subclass whose forward is one of
    these classes' (the kernel, and what its backward saves) is `kernel_only`: unrecorded, its
    apply is the kernel alone (-g, out * 2 ... in backward rules)."""
    op = None
    kernel_only = True

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "forward" in vars(cls) and "kernel_only" not in vars(cls):
            cls.kernel_only = False     # a forward of its own runs through apply

    @classmethod
    def apply(cls, *args):
        if type(args[0]) is not Tensor:
            result = batched_result(apply_unary, (cls, args[0]), {})     # inside vmap
            if result is not NotImplemented:
                return result
        if cls.kernel_only and not _recorded(args[0]):
            return wrap(args[0]._data.unary(cls.op))
        return _kernel_apply(cls, *args)

    @classmethod
    def forward(cls, ctx, a):
        return wrap(a._data.unary(cls.op))


def apply_unary(cls, a):
    """cls.apply(a) for a _Unary class: the name vmap's rule for direct applies answers to
    (mt.abs, mt.relu, mt.square, … call their node's apply after their own checks)."""
    return cls.apply(a)


class Neg(_Unary):
    op = U.NEG

    @staticmethod
    def backward(ctx, g):
        return -g


class _UnarySavingInput(_Unary):
    kernel_only = True

    @classmethod
    def forward(cls, ctx, a):
        ctx.save_for_backward(a)
        return wrap(a._data.unary(cls.op))


class _UnarySavingOutput(_Unary):
    kernel_only = True

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
        return g * (a.sgn() if a._data.dtype.is_complex else sign(a))


class Exp(_UnarySavingOutput):
    op = U.EXP

    @staticmethod
    def backward(ctx, g):
        out, = ctx.saved_tensors
        return g * _conj(out)       # conj: complex gradients are conjugate Wirtinger ones


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
        return -g * _conj(out * out)


class Square(_UnarySavingInput):
    node_name = "PowBackward0"          # torch's x ** 2
    op = U.SQUARE

    @staticmethod
    def backward(ctx, g):
        a, = ctx.saved_tensors
        return g * _conj(a) * 2


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
    if type(a) is not Tensor:
        if not isinstance(a, Tensor):       # (the op's name is only spelled for the error)
            _check_tensor(a, fn.__name__.lower())
        result = batched_result(_unary, (fn, a, integer_ok), {})    # inside vmap: mt.exp(x)
        if result is not NotImplemented:
            return result
    if not integer_ok:
        dtype = a._data.dtype
        if not dtype.is_floating_point:
            if dtype.is_complex:        # functions/complex_math.py's op, where it has one
                return COMPLEX_OPS.get(fn, fn.apply)(a)
            a = _float_input(a)
    return fn.apply(a)


def neg(a):
    """Elementwise negation -input (torch.neg, alias negative)."""
    _check_tensor(a, "neg")
    if a._data.dtype is dtypes.bool_:
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If you "
                           "are trying to invert a mask, use the `~` or `logical_not()` operator "
                           "instead.")
    return Neg.apply(a)


def abs(a):
    """Elementwise absolute value |input| (torch.abs, alias absolute)."""
    _check_tensor(a, "abs")
    if a._data.dtype is dtypes.bool_:
        raise _no_bool_kernel("abs", a.device)
    return Abs.apply(a)


def sign(a):
    """Elementwise sign of input: -1, 0 or 1 in input's dtype (torch.sign)."""
    _check_tensor(a, "sign")
    dtype = a._data.dtype
    if dtype.is_complex:
        refuse_complex("sign", a)
    return _copy(a) if dtype is dtypes.bool_ else Sign.apply(a)


def exp(a):
    """Elementwise exponential e**input (torch.exp)."""
    return _unary(Exp, a)


def log(a):
    """Elementwise natural logarithm (torch.log)."""
    return _unary(Log, a)


def log1p(a):
    """Elementwise log(1 + input), accurate for small input (torch.log1p)."""
    return _unary(Log1p, a)


def expm1(a):
    """Elementwise exp(input) - 1, accurate for small input (torch.expm1)."""
    return _unary(Expm1, a)


def sqrt(a):
    """Elementwise square root (torch.sqrt)."""
    return _unary(Sqrt, a)


def rsqrt(a):
    """Elementwise reciprocal square root 1 / sqrt(input) (torch.rsqrt)."""
    return _unary(Rsqrt, a)


def sin(a):
    """Elementwise sine, in radians (torch.sin)."""
    return _unary(Sin, a)


def cos(a):
    """Elementwise cosine, in radians (torch.cos)."""
    return _unary(Cos, a)


def tanh(a):
    """Elementwise hyperbolic tangent (torch.tanh)."""
    return _unary(Tanh, a)


def sigmoid(a):
    """Elementwise logistic sigmoid 1 / (1 + exp(-input)) (torch.sigmoid)."""
    return _unary(Sigmoid, a)


def relu(a):
    """Elementwise rectified linear unit max(input, 0) (torch.relu)."""
    _check_tensor(a, "relu")
    dtype = a._data.dtype
    if dtype is dtypes.bool_:
        raise RuntimeError("Boolean inputs not supported for relu")
    if dtype.is_complex:            # torch's relu is a clamp: clamp's refusal
        refuse_complex("clamp", a)
    return Relu.apply(a)


def reciprocal(a):
    """Elementwise reciprocal 1 / input (torch.reciprocal)."""
    return _unary(Reciprocal, a)


def square(a):
    """Elementwise square input * input (torch.square)."""
    _check_tensor(a, "square")
    if a._data.dtype is dtypes.bool_:       # torch squares bools as int64 (pow(a, 2))
        a = cast(a, dtypes.int64)
    return Square.apply(a)


def erf(a):
    """Elementwise Gauss error function (torch.erf)."""
    return _unary(Erf, a)


def _rounding(fn, a, kernel):
    """floor/ceil/round/trunc: a copy for integers, torch's error for bool."""
    _check_tensor(a, kernel)
    if a._data.dtype.is_floating_point:
        return fn.apply(a)
    if a._data.dtype is dtypes.bool_:
        raise _no_bool_kernel(kernel + "_vml", a.device)
    if a._data.dtype.is_complex:
        raise NotImplementedError(f"{kernel} is not supported for complex inputs")
    return _copy(a)


def floor(a):
    """Elementwise floor, rounding down to the nearest integer (torch.floor)."""
    return _rounding(Floor, a, "floor")


def ceil(a):
    """Elementwise ceiling, rounding up to the nearest integer (torch.ceil)."""
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
    """Elementwise truncation toward zero (torch.trunc)."""
    return _rounding(Trunc, a, "trunc")


# ---- binary -----------------------------------------------------------------------------------
class _Binary(KernelFunction):
    """out = op(a, b) with broadcasting; subclasses give `op` and a backward."""
    op = None

    @classmethod
    def forward(cls, ctx, a, b):
        ctx.shapes = (a._data.shape, b._data.shape)
        return wrap(a._data.binary(cls.op, b._data))


def _needs_both(ctx):
    """needs_input_grad of a two-input node, read from its edges: a backward skips the sum_to
    (or negation) of an operand that takes no gradient, such as the scalar of `x - 1.0`."""
    edges = ctx.next_edges
    return edges[0] is not None, edges[1] is not None


class Add(_Binary):
    op = B.ADD

    @staticmethod
    def backward(ctx, g):
        a_shape, b_shape = ctx.shapes
        shape = g._data.shape
        if a_shape == shape and b_shape == shape:
            return g, g         # nothing was broadcast: sum_to would return g twice
        needs_a, needs_b = _needs_both(ctx)
        return (sum_to(g, a_shape) if needs_a else None,
                sum_to(g, b_shape) if needs_b else None)


class AddRelu(_Binary):
    """relu(a + b) as one node and one kernel: a layer's bias add and the ReLU after it (a
    convolution followed by nn.ReLU in nn.Sequential), with the two ops' bits. Its backward
    masks g by the saved output, then sums it to each operand's shape as Add does."""
    node_name = "ReluBackward0"          # torch's graph ends in the ReLU
    op = B.ADD_RELU

    @classmethod
    def forward(cls, ctx, a, b):
        out = super().forward(ctx, a, b)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        out, = ctx.saved_tensors
        return Add.backward(ctx, ReluBackward.apply(g, out))


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
        shape = g._data.shape     # sum_to's own test inline: most operands are not broadcast
        needs_a, needs_b = _needs_both(ctx)
        return (None if not needs_a else g if a_shape == shape else sum_to(g, a_shape),
                None if not needs_b else -g if b_shape == shape else sum_to(-g, b_shape))


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
        grad_a = grad_b = None
        if b is not None:
            grad_a = g * _conj(b)       # conj: the identity on real tensors
            if grad_a._data.shape != a_shape:   # sum_to's own test, without the call
                grad_a = sum_to(grad_a, a_shape)
        if a is not None:
            grad_b = g * _conj(a)
            if grad_b._data.shape != b_shape:
                grad_b = sum_to(grad_b, b_shape)
        return grad_a, grad_b


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
        dtype = g._data.dtype
        if not _grad_mode.enabled and dtype.compute is dtype and not dtype.is_complex and \
                b._data.dtype is dtype and (a is None or a._data.dtype is dtype):
            return _div_grads_unrecorded(g._data, a, b._data, ctx.next_edges[0] is not None,
                                         a_shape, b_shape)
        grad_a = grad_b = None
        if ctx.needs_input_grad[0]:
            grad_a = g / _conj(b)       # conj: the identity on real tensors
            if grad_a._data.shape != a_shape:   # sum_to's own test, without the call
                grad_a = sum_to(grad_a, a_shape)
        if a is not None:
            grad_b = -g * _conj(a) / _conj(b * b)
            if grad_b._data.shape != b_shape:
                grad_b = sum_to(grad_b, b_shape)
        return grad_a, grad_b


def _div_grads_unrecorded(g, a, b, needs_a, a_shape, b_shape):
    """Div's gradients with nothing recorded, for NDArrays of one float32 / float64 dtype: the
    kernels of the Tensor ops above (g / b, -g * a / (b * b), each summed to its operand's
    shape), without a Tensor per intermediate."""
    grad_a = grad_b = None
    if needs_a:
        grad_a = sum_to(wrap(g.binary(B.DIV, b)), a_shape)
    if a is not None:
        square = b.binary(B.MUL, b)
        grad_b = sum_to(wrap(g.unary(U.NEG).binary(B.MUL, a._data).binary(B.DIV, square)),
                        b_shape)
    return grad_a, grad_b


# The ops whose torch CPU kernels read a Python scalar second operand in their float math type
# before it is rounded to a 16-bit tensor's dtype (`h * 3.3` multiplies by 3.3, not by half(3.3));
# every other op (sub, rsub, rdiv, pow, fmod, comparisons) rounds the scalar to the tensor's
# dtype first, as torch does (_binary). Only the narrow floats tell the two apart. Reflected:
# `3.3 * h` is mul(h, 3.3) in torch, `3.3 / h` a division by h of half(3.3).
_OPMATH_SCALAR, _OPMATH_SCALAR_REFLECTED = (Add, Mul, Div), (Add, Mul)
_kernel_apply = KernelFunction.apply.__func__     # _Unary.apply's path when it records
# Functions whose forward on floating operands is `wrap(a._data.binary(op, b._data))` alone
_KERNEL_ONLY = frozenset((Add, Sub, Mul, Div))


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
    """Apply a binary Function: same-dtype tensors and float tensor ⊕ Python int/float go
    straight to the kernel; anything else is promoted first."""
    if type(a) is not Tensor or type(b) is not Tensor:
        result = batched_result(_binary, (fn, a, b, floating), {})   # inside vmap
        if result is not NotImplemented:
            return result
    if isinstance(a, Tensor):
        dtype = a._data.dtype
        if isinstance(b, Tensor):
            if b._data.dtype is dtype and (not floating or dtype.is_floating_point):
                return _float_apply(fn, a, b) if dtype.is_floating_point else fn.apply(a, b)
        elif type(b) in _FAST_SCALARS and dtype.is_floating_point:
            return number_apply(fn, a, b)
    elif type(a) in _FAST_SCALARS and isinstance(b, Tensor) and b._data.dtype.is_floating_point:
        return number_apply(fn, b, a, reflected=True)
    a, b = promote(a, b, floating)
    return fn.apply(a, b)


def number_apply(fn, tensor, number, reflected=False):
    """fn(tensor, number), or fn(number, tensor) when reflected, for a floating tensor and a
    Python int / float (no promotion can happen): the number is held in the tensor's dtype, or
    in its compute dtype for the ops that read it so (_OPMATH_SCALAR); add / sub / mul / div
    that nothing records are the kernel alone, without wrapping the constant."""
    data = tensor._data
    dtype = data.dtype
    held = dtype.compute if fn in (_OPMATH_SCALAR_REFLECTED if reflected else
                                   _OPMATH_SCALAR) else dtype
    scalar = scalar_array(number, held, data.device)
    if fn in _KERNEL_ONLY and not (_grad_mode.enabled and tensor.requires_grad or
                                   _engine._profiling):
        return wrap(scalar.binary(fn.op, data) if reflected else data.binary(fn.op, scalar))
    scalar = wrap(scalar)
    return fn.apply(scalar, tensor) if reflected else fn.apply(tensor, scalar)


def _float_apply(fn, a, b):
    """fn.apply(a, b) for floating operands; add / sub / mul / div that nothing records (nor
    the profiler) are their forward's one kernel call, without a node."""
    if fn in _KERNEL_ONLY and not (_grad_mode.enabled and (a.requires_grad or b.requires_grad)
                                   or _engine._profiling):
        return wrap(a._data.binary(fn.op, b._data))
    return fn.apply(a, b)


def _scale(other, alpha, input):
    """other * alpha for add/sub, with torch's checks on alpha's type."""
    if isinstance(alpha, float) and not result_type(input, other).is_floating_point:
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating "
                           "point number.")
    return other * alpha


def add(input, other, alpha=1):
    """input + alpha * other with broadcasting and type promotion (torch.add)."""
    if _sparse(input):
        return input.add(other, alpha=alpha)
    if _sparse(other):
        return other.__radd__(input, alpha=alpha)
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
    """input - alpha * other with broadcasting and type promotion (torch.sub, alias subtract)."""
    if _sparse(input):
        return input.sub(other, alpha=alpha)
    if _sparse(other):
        return other.__rsub__(input, alpha=alpha)
    _check_sub(input, other)
    if alpha != 1:
        other = _scale(other, alpha, input)
    return _binary(Sub, input, other)


def mul(input, other):
    """input * other with broadcasting and type promotion (torch.mul, alias multiply)."""
    if _sparse(input) or _sparse(other):
        return input.mul(other) if _sparse(input) else other.mul(input)
    return _binary(Mul, input, other)


def _integer_division_operands(input, other, kernel):
    """Promoted operands of floor/trunc division, remainder and fmod; torch has no bool kernel."""
    a, b = promote(input, other)
    if a._data.dtype is dtypes.bool_:
        raise _no_bool_kernel(kernel, a.device)
    return a, b


def div(input, other, rounding_mode=None):
    """input / other with broadcasting: true division, or rounding_mode 'floor' / 'trunc'
    (torch.div, alias divide)."""
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
    """input / other as true (floating) division (torch.true_divide)."""
    return div(input, other)


def pow(input, exponent):
    """input ** exponent elementwise, either side a Tensor or a Python scalar (torch.pow)."""
    if isinstance(exponent, (bool, np.bool_)) and isinstance(input, Tensor) and \
            input.dtype is dtypes.bool_:
        return input.clone() if exponent else _compare(B.LOGICAL_OR, input, True)  # x**0 = 1
    if isinstance(input, Tensor) and isinstance(exponent, numbers.Real) and not isinstance(
            exponent, (bool, np.bool_)):
        dtype = result_type(input, exponent)
        if dtype is dtypes.bool_:
            raise NotImplementedError('"pow" not implemented for \'Bool\'')
        if not dtype.is_floating_point:
            if dtype.is_complex:
                return COMPLEX_OPS[Pow](input, exponent)
            if exponent < 0:
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
    if a._data.dtype.is_complex:
        return COMPLEX_OPS[PowTensor](a, b)
    return PowTensor.apply(a, b)


def float_power(input, exponent):
    """input ** exponent computed in float64 (torch.float_power)."""
    input = input.double() if isinstance(input, Tensor) else float(input)
    exponent = exponent.double() if isinstance(exponent, Tensor) else float(exponent)
    return pow(input, exponent)


def maximum(input, other):
    """Elementwise maximum of input and other, propagating NaN (torch.maximum)."""
    refuse_complex("maximum", input, other)
    return _binary(Maximum, input, other)


def minimum(input, other):
    """Elementwise minimum of input and other, propagating NaN (torch.minimum)."""
    refuse_complex("minimum", input, other)
    return _binary(Minimum, input, other)


def _compare(op, a, b):
    if type(a) is Tensor:   # the common cases need no promotion: what promote would give
        data, kind = a._data, type(b)
        if kind is Tensor and b._data.dtype is data.dtype:
            return wrap(data.binary(op, b._data))
        if kind in _FAST_SCALARS and (data.dtype.is_floating_point or (
                data.dtype is dtypes.int64 and kind is int and _INT64_MIN <= b <= _INT64_MAX)):
            return wrap(data.binary(op, scalar_array(b, data.dtype, data.device)))
    a, b = promote(a, b)
    return wrap(a._data.binary(op, b._data))


@batching_point
def floor_divide(input, other):
    """Elementwise input / other rounded down to an integer value (torch.floor_divide)."""
    return FloorDivide.apply(*_integer_division_operands(input, other, "div_floor"))


@batching_point
def clamp_min(input, min):
    """Elementwise max(input, min) (torch.clamp_min)."""
    return clamp(input, min=min)


@batching_point
def clamp_max(input, max):
    """Elementwise min(input, max) (torch.clamp_max)."""
    return clamp(input, max=max)


# ---- special functions (torch.special; kernels ERFINV..BESSEL_J1 and GCD..XLOG1PY) -----------


# ---- comparisons and logic (no gradient) ------------------------------------------------------


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


@batching_point
def where(condition, input=None, other=None):
    """input where condition else other (broadcast together); where(condition) = nonzero."""
    if input is None and other is None:
        return condition.nonzero(as_tuple=True)
    _check_tensor(condition, "where", arg="condition")
    if condition._data.dtype is dtypes.bool_ and type(input) is Tensor and \
            type(other) is Tensor and input._data.dtype is other._data.dtype:
        if (input.requires_grad or other.requires_grad) and _grad_mode.enabled or \
                _engine._profiling:
            return Where.apply(condition, input, other)
        # nothing records (a backward's where(c, g, zero)): Where's kernel, without its node
        return wrap(condition._data.where(input._data, other._data))
    if condition.dtype is dtypes.uint8:
        warnings.warn("where received a uint8 condition tensor. This behavior is deprecated and "
                      "will be removed in a future version of PyTorch. Use a boolean condition "
                      "instead.", UserWarning, stacklevel=2)
        condition = cast(condition, dtypes.bool_)
    if condition.dtype is not dtypes.bool_:
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor "
                           f"with dtype {TORCH_NAMES[condition.dtype.name]}")
    dtype = result_type(input, other)
    _check_scalars_fit(dtype, input, other, narrow_floats=False)
    device = condition.device
    return Where.apply(condition, _as_operand(input, dtype, device),
                       _as_operand(other, dtype, device))


def _check_scalars_fit(dtype, *values, narrow_floats=True):
    """torch's overflow check on the Python scalars of where/clamp (arithmetic instead wraps
    them: `uint8_tensor + 300` is fine, `where(c, uint8_tensor, 300)` is not)."""
    floating = dtype.is_floating_point
    for value in values:
        if value is None or isinstance(value, Tensor) or (
                floating and type(value) is float and -65504.0 <= value <= 65504.0):
            continue    # (within float16's range: every float dtype holds it)
        dtypes.check_scalar_fits(value, dtype, narrow_floats=narrow_floats)


_NUMBER_BOUNDS = (float, int, type(None))


@batching_point
def clamp(input, min=None, max=None):
    """Limit to [min, max] (scalars or tensors, broadcast); NaN stays NaN. The result dtype
    promotes over all three, as in torch (an int tensor clamped to 0.5 is float)."""
    _check_tensor(input, "clamp")
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    dtype = input._data.dtype
    if not (dtype.is_floating_point and type(min) in _NUMBER_BOUNDS and
            type(max) in _NUMBER_BOUNDS):       # (Python numbers never promote a float tensor)
        dtype = result_type(input, min, max)
    if dtype.is_complex:
        refuse_complex("clamp", input, min, max)
    tensors = isinstance(min, Tensor) or isinstance(max, Tensor)
    if dtype is dtypes.bool_ and (not tensors or (min is not None and max is not None)):
        # torch has no bool clamp kernel (one tensor bound runs maximum / minimum instead)
        kind = "clamp" if min is not None and max is not None else \
            "clamp_min" if min is not None else "clamp_max"
        raise _no_bool_kernel(kind if tensors else kind + "_scalar", input.device)
    _check_scalars_fit(dtype, min, max)
    device = input.device
    input = cast(input, dtype)
    low = None if min is None else _as_operand(min, dtype, device)
    high = None if max is None else _as_operand(max, dtype, device)
    if not tensors and not _recorded(input):    # number bounds, nothing records: the kernels
        return wrap(_clamped(input, low, high))
    return (Clamp if tensors else ClampScalars).apply(input, low, high)


def _clamped(x, low, high):
    """Clamp's forward on the NDArrays: min(max(x, low), high)."""
    out = x._data
    if low is not None:
        out = out.binary(B.MAXIMUM, low._data)
    if high is not None:
        out = out.binary(B.MINIMUM, high._data)
    return out


class Clamp(KernelFunction):
    """min(max(x, low), high): NaN in x or in a bound propagates (as in torch), min > max gives
    max. Gradients are torch's clamp_backward / clamp_backward_min_max."""

    @staticmethod
    def forward(ctx, x, low, high):
        ctx.save_for_backward(x, low, high)
        return wrap(_clamped(x, low, high))

    @staticmethod
    def backward(ctx, g):
        x, low, high = ctx.saved_tensors
        zero = wrap(scalar_array(0, g.dtype, g.device))
        needs = ctx.needs_input_grad
        grad_x = grad_low = grad_high = None
        if needs[0]:
            inside = wrap(_clamp_inside(x, low, high))
            grad_x = sum_to(where(inside, g, zero), x._data.shape)
        if needs[1]:
            below = x < low if high is None else (x < low) & (low < high)
            grad_low = sum_to(where(below, g, zero), low.shape)
        if needs[2]:
            above = x > high if low is None else (x > high) | (high < low)
            grad_high = sum_to(where(above, g, zero), high.shape)
        return grad_x, grad_low, grad_high


class ClampScalars(Clamp):
    """clamp with number bounds: torch's clamp.Scalar overload, so its node's name. Only x
    takes a gradient: ClampScalarsBackward's."""
    node_name = "ClampBackward1"

    @staticmethod
    def backward(ctx, g):
        x, low, high = ctx.saved_tensors
        return ClampScalarsBackward.apply(g, x, low, high), None, None


class ClampScalarsBackward(KernelFunction):
    """ClampScalars' input gradient on the NDArrays: g where x lies within the bounds, else 0
    (Clamp's rule). Linear in g: its own backward is itself applied to gg."""

    @staticmethod
    def forward(ctx, g, x, low, high):
        ctx.save_for_backward(x, low, high)
        grad = g._data
        return wrap(_clamp_inside(x, low, high).where(
            grad, scalar_array(0, grad.dtype, grad.device)))

    @staticmethod
    def backward(ctx, gg):
        x, low, high = ctx.saved_tensors
        return ClampScalarsBackward.apply(gg, x, low, high), None, None, None


def _clamp_inside(x, low, high):
    """Where x lies within [low, high] (a None bound: unbounded), as a bool NDArray: the mask of
    clamp's gradient for x (NaN in x is outside)."""
    inside = None if low is None else x._data.binary(B.GE, low._data)
    if high is not None:
        below_high = x._data.binary(B.LE, high._data)
        inside = below_high if inside is None else inside.binary(B.LOGICAL_AND, below_high)
    return inside


clip = clamp
divide = div
multiply = mul
subtract = sub
negative = neg
absolute = abs
