"""Complex numbers: the views between complex and real tensors (view_as_real, view_as_complex,
.real, .imag), construction (complex, polar), conjugation, sgn and angle.

A complex64 / complex128 tensor's buffer holds (re, im) pairs (dtypes.py); NDArray.as_real /
as_complex are the two views. Gradients follow torch's convention: for a real loss L of a
complex z = x + yj, z.grad = dL/dx + j dL/dy (the conjugate Wirtinger derivative times 2), so
mul's backward is grad * conj(other) (elementwise.py) and the views' backwards are each other.
Arithmetic, sums, abs and exp of complex tensors are the ordinary ops (elementwise.py,
reduce.py), whose NDArray paths run the complex kernels (_cpu/complex.pyx); the transcendental
functions and pow are complex_math.py's, imported at the end of this module.
"""
from .. import dtypes
from ..autograd import KernelFunction
from ..ndarray import NDArray, broadcast_shapes
from ..opcodes import UnaryOp
from ..tensor import Tensor, wrap
from . import compare, float_math
from .movement import view_of
from .reduce import sum_to


__all__ = ['angle', 'complex', 'conj', 'conj_physical', 'imag', 'is_conj', 'isreal', 'polar',
           'real', 'resolve_conj', 'sgn', 'view_as_complex', 'view_as_real']


def _check_tensor(x, name, arg="input", position=1):
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument '{arg}' (position {position}) must be Tensor, not "
                        f"{type(x).__name__}")


# ---- the two views ----------------------------------------------------------------------------
class ViewAsReal(KernelFunction):
    @staticmethod
    def forward(ctx, a):
        return view_of(a, a._data.as_real())

    @staticmethod
    def backward(ctx, g):
        return view_as_complex(g.contiguous())


class ViewAsComplex(KernelFunction):
    @staticmethod
    def forward(ctx, a):
        return view_of(a, a._data.as_complex())

    @staticmethod
    def backward(ctx, g):
        return view_as_real(g)


def view_as_real(input):
    """torch.view_as_real: a complex tensor's (re, im) floats as a real view with one more dim
    of size 2 (strides doubled, storage shared)."""
    _check_tensor(input, "view_as_real")
    if not input._data.dtype.is_complex:
        raise RuntimeError("view_as_real is only supported for complex tensors")
    return ViewAsReal.apply(input)


def view_as_complex(input):
    """torch.view_as_complex: a float32 / float64 tensor whose last dim (size 2, stride 1) holds
    (re, im) pairs, viewed as complex (storage shared), with torch's checks."""
    _check_tensor(input, "view_as_complex")
    nd = input._data
    if nd.dtype not in (dtypes.float32, dtypes.float64):
        if nd.dtype is dtypes.float16:
            raise RuntimeError("view_as_complex: minitorch has no ComplexHalf (complex32) dtype; "
                               "convert the Half tensor to float first")
        raise RuntimeError("view_as_complex is only supported for half, float and double "
                           f"tensors, but got a tensor of scalar type: {nd.dtype.torch_name}")
    if nd.ndim == 0:
        raise RuntimeError("Input tensor must have one or more dimensions")
    if nd.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    if nd.strides[-1] != 1:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(s % 2 for s in nd.strides[:-1]):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    if nd.offset % 2:
        raise RuntimeError("Tensor must have a storage_offset divisible by 2")
    return ViewAsComplex.apply(input)


class Real(KernelFunction):
    @staticmethod
    def forward(ctx, a):
        return view_of(a, a._data.as_real()[..., 0])

    @staticmethod
    def backward(ctx, g):
        return complex(g, g.new_zeros(()).expand(g.shape))


class Imag(KernelFunction):
    @staticmethod
    def forward(ctx, a):
        return view_of(a, a._data.as_real()[..., 1])

    @staticmethod
    def backward(ctx, g):
        return complex(g.new_zeros(()).expand(g.shape), g)


def real(input):
    """torch.real / Tensor.real: the real parts of a complex tensor as a view; a real tensor
    itself."""
    _check_tensor(input, "real")
    return Real.apply(input) if input._data.dtype.is_complex else input


def imag(input):
    """torch.imag / Tensor.imag: the imaginary parts of a complex tensor as a view (torch's
    error for a real tensor)."""
    _check_tensor(input, "imag")
    if not input._data.dtype.is_complex:
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return Imag.apply(input)


# ---- construction -----------------------------------------------------------------------------
def _check_float_pair(name, a, b):
    _check_tensor(a, name, "real" if name == "complex" else "abs", 1)
    _check_tensor(b, name, "imag" if name == "complex" else "angle", 2)
    da, db = a._data.dtype, b._data.dtype
    if da not in (dtypes.float32, dtypes.float64) or db not in (dtypes.float32, dtypes.float64):
        raise RuntimeError("Expected both inputs to be Half, Float or Double tensors but got "
                           f"{da.torch_name} and {db.torch_name}")
    if da is not db:
        raise RuntimeError(f"Expected object of scalar type {da.torch_name} but got scalar type "
                           f"{db.torch_name} for second argument")
    if a._data.device is not b._data.device:
        raise RuntimeError("Expected all tensors to be on the same device, but found at least "
                           f"two devices, {a._data.device} and {b._data.device}!")


class Complex(KernelFunction):
    @staticmethod
    def forward(ctx, re, im):
        ctx.shapes = (re._data.shape, im._data.shape)
        shape = broadcast_shapes(re._data.shape, im._data.shape)
        out = NDArray.empty(shape, re._data.dtype.complex_dtype, re._data.device)
        pairs = out.as_real()
        pairs[..., 0].assign(re._data)
        pairs[..., 1].assign(im._data)
        return wrap(out)

    @staticmethod
    def backward(ctx, g):
        re_shape, im_shape = ctx.shapes
        grad_re = sum_to(real(g), re_shape) if ctx.needs_input_grad[0] else None
        grad_im = sum_to(imag(g), im_shape) if ctx.needs_input_grad[1] else None
        return grad_re, grad_im


def complex(real, imag):
    """torch.complex: real + imag·j from two float tensors of one dtype (broadcast)."""
    _check_float_pair("complex", real, imag)
    return Complex.apply(real, imag)


class Polar(KernelFunction):
    @staticmethod
    def forward(ctx, r, theta):
        ctx.shapes = (r._data.shape, theta._data.shape)
        shape = broadcast_shapes(r._data.shape, theta._data.shape)
        a, b = r._data.expand(shape).compact(), theta._data.expand(shape).compact()
        out = NDArray.empty(shape, r._data.dtype.complex_dtype, r._data.device)
        if out.size:
            out.backend.complex_polar(a.flat(), b.flat(), out.buffer.view(a.dtype.storage))
        result = wrap(out)
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, g):
        # torch's polar_backward: d|z| = Re(conj(g) sgn z), dθ = Re(conj(g) · j z)
        result, = ctx.saved_tensors
        r_shape, theta_shape = ctx.shapes
        g_conj = conj(g)
        grad_r = grad_theta = None
        if ctx.needs_input_grad[0]:
            grad_r = sum_to(real(g_conj * sgn(result)), r_shape)
        if ctx.needs_input_grad[1]:
            grad_theta = sum_to(real(g_conj * (result * 1j)), theta_shape)
        return grad_r, grad_theta


def polar(abs, angle):
    """torch.polar: abs·(cos(angle) + j sin(angle)) from two float tensors of one dtype."""
    _check_float_pair("polar", abs, angle)
    return Polar.apply(abs, angle)


# ---- conjugation, sgn, angle ------------------------------------------------------------------
class Conj(KernelFunction):
    """The conjugate, materialised (torch flips a lazy bit; minitorch has none)."""

    @staticmethod
    def forward(ctx, a):
        pairs = a._data.as_real()
        out = NDArray.empty(a._data.shape, a._data.dtype, a._data.device)
        out_pairs = out.as_real()
        out_pairs[..., 0].assign(pairs[..., 0])
        out_pairs[..., 1].assign(pairs[..., 1].unary(UnaryOp.NEG))
        return wrap(out)

    @staticmethod
    def backward(ctx, g):
        return conj(g)


class ConjPhysical(Conj):
    pass


def conj(input):
    """torch.conj / Tensor.conj: the complex conjugate (a new tensor: no lazy conjugate bit, so
    is_conj() is False); a real tensor itself."""
    _check_tensor(input, "conj")
    return Conj.apply(input) if input._data.dtype.is_complex else input


def conj_physical(input):
    """torch.conj_physical: the conjugate in new memory; a real tensor itself."""
    _check_tensor(input, "conj_physical")
    return ConjPhysical.apply(input) if input._data.dtype.is_complex else input


def resolve_conj(input):
    """torch.resolve_conj: input itself, conj() having materialised already."""
    _check_tensor(input, "resolve_conj")
    return input


def is_conj(input):
    """torch.is_conj: False (conj materialises)."""
    _check_tensor(input, "is_conj")
    return False


class Sgn(KernelFunction):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return wrap(a._data.complex_unary("sgn"))

    @staticmethod
    def backward(ctx, g):
        # torch's sgn_backward: (g - Re(g conj(sgn z)) sgn z) / |z|, 0 where z = 0
        a, = ctx.saved_tensors
        magnitude = a.abs()
        s = sgn(a)
        value = (g - real(g * conj(s)) * s) / magnitude
        return value.masked_fill(magnitude == 0, 0)


def sgn(input):
    """torch.sgn: z / |z| (0 at 0) for complex input; sign() for real input."""
    _check_tensor(input, "sgn")
    return Sgn.apply(input) if input._data.dtype.is_complex else float_math.sgn(input)


class Angle(KernelFunction):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return wrap(a._data.complex_unary("angle"))

    @staticmethod
    def backward(ctx, g):
        # torch's angle_backward: g · j z / |z|², 0 at z = 0
        a, = ctx.saved_tensors
        magnitude2 = real(a * conj(a))
        value = (g / magnitude2) * (a * 1j)
        return value.masked_fill(magnitude2 == 0, 0)


def angle(input):
    """torch.angle: the argument atan2(imag, real) of complex input (a real result); real input
    takes float_math.angle (π where negative, else 0)."""
    _check_tensor(input, "angle")
    return Angle.apply(input) if input._data.dtype.is_complex else float_math.angle(input)


def isreal(input):
    """torch.isreal: True where the imaginary part is 0 (everywhere for real input)."""
    _check_tensor(input, "isreal")
    if input._data.dtype.is_complex:
        return imag(input) == 0
    return compare.isreal(input)


from . import complex_math  # noqa: E402,F401  (registers the complex ops in elementwise.COMPLEX_OPS)
