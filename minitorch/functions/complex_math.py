"""Elementwise math of complex tensors: log, log2, log10, log1p, sqrt, rsqrt, sin, cos, tan,
sinh, cosh, tanh, sigmoid, exp2, expm1, asin, acos, atan, asinh, acosh, atanh and pow, each a
kernel of _cpu/complex.pyx (libm's C99
functions, so branch cuts and signed zeros are torch's) and _gpu/kernels/complex.cu.

The public functions stay elementwise.py's and float_math.py's (mt.log, Tensor.sqrt, ...):
their dispatch (`elementwise._unary`, `elementwise.pow`) hands a complex input to the op
registered here in `elementwise.COMPLEX_OPS` under the real op's Function, so the real path
pays nothing. Gradients are torch's for a holomorphic f: grad = g · conj(f'(z)) (the conjugate
Wirtinger convention of functions/complex.py), each written beside its forward.
"""
import math
import numbers

import numpy as np

from ..autograd import KernelFunction
from ..ndarray import NDArray, broadcast_shapes, scalar_array
from ..opcodes import BinaryOp as B
from ..tensor import Tensor, wrap
from . import elementwise as E
from . import float_math as FM
from .reduce import sum_to


# ---- unary ------------------------------------------------------------------------------------
class _ComplexUnary(KernelFunction):
    """out = f(z) by the complex kernel named `kernel`; subclasses give f'(z) as
    `derivative(z, out)`, and the gradient is g · conj(f'(z))."""
    kernel = None

    @classmethod
    def forward(cls, ctx, a):
        out = wrap(a._data.complex_unary(cls.kernel))
        ctx.save_for_backward(a, out)
        return out

    @classmethod
    def backward(cls, ctx, g):
        a, out = ctx.saved_tensors
        return g * cls.derivative(a, out).conj()


def _op(class_name, kernel, derivative):
    """The Function class (named as torch's node) for the complex kernel `kernel`, with
    f'(z) = derivative(z, out)."""
    return type(class_name, (_ComplexUnary,), {"kernel": kernel, "__module__": __name__,
                                               "derivative": staticmethod(derivative)})


LN2, LN10 = math.log(2.0), math.log(10.0)
Log = _op("Log", "log", lambda z, out: z.reciprocal())
Log2 = _op("Log2", "log2", lambda z, out: (z * LN2).reciprocal())
Log10 = _op("Log10", "log10", lambda z, out: (z * LN10).reciprocal())
Log1p = _op("Log1P", "log1p", lambda z, out: (z + 1).reciprocal())
Sqrt = _op("Sqrt", "sqrt", lambda z, out: (out * 2).reciprocal())
Rsqrt = _op("Rsqrt", "rsqrt", lambda z, out: out * out * out * -0.5)
Sin = _op("Sin", "sin", lambda z, out: E.cos(z))
Cos = _op("Cos", "cos", lambda z, out: -E.sin(z))
Tan = _op("Tan", "tan", lambda z, out: out * out + 1)
Sinh = _op("Sinh", "sinh", lambda z, out: FM.cosh(z))
Cosh = _op("Cosh", "cosh", lambda z, out: FM.sinh(z))
Tanh = _op("Tanh", "tanh", lambda z, out: 1 - out * out)
Sigmoid = _op("Sigmoid", "sigmoid", lambda z, out: out * (1 - out))
Exp2 = _op("Exp2", "exp2", lambda z, out: out * LN2)
Expm1 = _op("Expm1", "expm1", lambda z, out: out + 1)
Asin = _op("Asin", "asin", lambda z, out: (1 - z * z).rsqrt())
Acos = _op("Acos", "acos", lambda z, out: -(1 - z * z).rsqrt())
Atan = _op("Atan", "atan", lambda z, out: (z * z + 1).reciprocal())
Asinh = _op("Asinh", "asinh", lambda z, out: (z * z + 1).rsqrt())
# 1 / (√(z + 1) √(z - 1)), not 1 / √(z² - 1), which has the wrong sign where Re z < 0
Acosh = _op("Acosh", "acosh", lambda z, out: (z + 1).rsqrt() * (z - 1).rsqrt())
Atanh = _op("Atanh", "atanh", lambda z, out: (1 - z * z).reciprocal())


# ---- pow --------------------------------------------------------------------------------------
def _pow_kernel(a, b):
    """a ** b over two complex NDArrays of one dtype (broadcast), by the complex pow kernel."""
    from .._cpu.complex import COMPLEX_BINARY
    shape = broadcast_shapes(a.shape, b.shape)
    a, b = a.expand(shape).compact(), b.expand(shape).compact()
    out = NDArray.empty(shape, a.dtype, a.device)
    if out.size:
        real = a.dtype.real_dtype.storage
        out.backend.complex_binary(COMPLEX_BINARY["pow"], a.flat().view(real),
                                   b.flat().view(real), out.buffer.view(real))
    return out


def _power_of_number(a, exponent):
    """a ** exponent as torch's pow(Tensor, Scalar) computes it: 0 and 1 exactly, the small
    integer and half powers by products, sqrt, rsqrt and reciprocal, the rest by cpow."""
    if exponent == 0:
        return NDArray.full(a.shape, 1, a.dtype, a.device)
    if exponent == 1:
        return a.copy()
    if exponent in (2, 3, -2):
        square = a.binary(B.MUL, a)
        if exponent == 2:
            return square
        return square.binary(B.MUL, a) if exponent == 3 else square.complex_unary("reciprocal")
    named = {0.5: "sqrt", -0.5: "rsqrt", -1: "reciprocal"}.get(exponent)
    if named is not None:
        return a.complex_unary(named)
    return _pow_kernel(a, scalar_array(exponent, a.dtype, a.device))


class Pow(KernelFunction):
    """complex tensor ** Python number (torch's PowBackward0)."""

    @staticmethod
    def forward(ctx, a, exponent):
        ctx.save_for_backward(a)
        ctx.exponent = exponent
        return wrap(_power_of_number(a._data, exponent))

    @staticmethod
    def backward(ctx, g):
        # torch's pow_backward: 0 for the exponent 0, else g · conj(e z^(e-1))
        a, = ctx.saved_tensors
        exponent = ctx.exponent
        if exponent == 0:
            return E.zeros_like(g), None
        return g * (pow(a, exponent - 1) * exponent).conj(), None


class PowTensor(KernelFunction):
    """complex ** complex, either side a tensor (torch's PowBackward1)."""

    @classmethod
    def name(cls):
        return "PowBackward1"

    @staticmethod
    def forward(ctx, a, b):
        out = wrap(_pow_kernel(a._data, b._data))
        ctx.save_for_backward(a, b, out)
        ctx.shapes = (a._data.shape, b._data.shape)
        return out

    @staticmethod
    def backward(ctx, g):
        # torch's pow_backward_self / pow_backward_exponent: 0 where b = 0, and where a = 0
        # with b a real number >= 0
        a, b, out = ctx.saved_tensors
        zero = g.new_zeros(())
        grad_a = grad_b = None
        if ctx.needs_input_grad[0]:
            grad_a = E.where(b == 0, zero, g * (b * pow(a, b - 1)).conj())
            grad_a = sum_to(grad_a, ctx.shapes[0])
        if ctx.needs_input_grad[1]:
            at_zero = (a == 0).logical_and(b.imag == 0).logical_and(b.real >= 0)
            grad_b = sum_to(E.where(at_zero, zero, g * (out * Log.apply(a)).conj()),
                            ctx.shapes[1])
        return grad_a, grad_b


def pow(input, exponent):
    """input ** exponent where the result is complex (elementwise.pow's dispatch): a complex
    tensor to a Python number, or both sides as complex tensors of one dtype."""
    if isinstance(input, Tensor) and isinstance(exponent, numbers.Number) and \
            not isinstance(exponent, (complex, np.complexfloating)):
        return Pow.apply(input, exponent)
    a, b = E.promote(input, exponent)
    return PowTensor.apply(a, b)


E.COMPLEX_OPS.update({
    E.Log: Log.apply, E.Log1p: Log1p.apply, E.Sqrt: Sqrt.apply, E.Rsqrt: Rsqrt.apply,
    E.Sin: Sin.apply, E.Cos: Cos.apply, E.Tanh: Tanh.apply, E.Sigmoid: Sigmoid.apply,
    E.Expm1: Expm1.apply, FM.Log2: Log2.apply, FM.Log10: Log10.apply, FM.Tan: Tan.apply,
    FM.Sinh: Sinh.apply, FM.Cosh: Cosh.apply, FM.Exp2: Exp2.apply, FM.Asin: Asin.apply,
    FM.Acos: Acos.apply, FM.Atan: Atan.apply, FM.Asinh: Asinh.apply, FM.Acosh: Acosh.apply,
    FM.Atanh: Atanh.apply,
    E.Pow: pow, E.PowTensor: pow})
