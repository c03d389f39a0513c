"""torch.special.spherical_bessel_j0, the worked example of docs/adding_an_op.md: a kernel-backed
special function (UnaryOp.SPHERICAL_BESSEL_J0, math in minitorch/_kernels/special_math.h).

Kept in its own file while minitorch/functions/elementwise.py is being restructured; it belongs
next to special_bessel_j0 there.
"""
from ..opcodes import UnaryOp as U
from .elementwise import _no_gradient_unary


def special_spherical_bessel_j0(input):
    """sin(x) / x (1 at 0, 0 at ±inf). Like torch, it records no gradient."""
    return _no_gradient_unary(U.SPHERICAL_BESSEL_J0, input, "special_spherical_bessel_j0")
