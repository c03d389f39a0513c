"""torch.frexp: each float split into a mantissa in [0.5, 1) (sign kept) and an int32 exponent
with input = mantissa * 2**exponent, composed of our ops (log2 for a first exponent, exact
power-of-two scalings to correct it), so the mantissa's gradient is 2**-exponent as torch's."""
from .. import dtypes
from ..autograd import no_grad
from ..tensor import Tensor
from .reduce import _return_type

__all__ = ["frexp"]

_FrexpResult = _return_type("frexp", ("mantissa", "exponent"))
_FrexpResult.__module__ = __name__      # so pickle finds it in this module


def _scaled(x, exponent):
    """x * 2**-exponent, exactly: in two power-of-two factors, as 2**|exponent| alone can
    overflow (a float32 subnormal's exponent is -148, beyond float32's largest power 2**127)."""
    half = (-exponent).div(2, rounding_mode="floor")
    return x * half.exp2() * (-exponent - half).exp2()


def _exponent(x):
    """The frexp exponent of each element (0 for zeros, infinities and NaNs), in x's dtype."""
    finite = x.isfinite() & (x != 0)
    magnitude = x.abs().where(finite, 1.0)
    exponent = magnitude.log2().floor() + 1
    # log2 rounds: near a power of two the first exponent may be one off either way
    mantissa = _scaled(magnitude, exponent)
    exponent = exponent + (mantissa >= 1).to(x.dtype) - (mantissa < 0.5).to(x.dtype)
    return exponent.where(finite, 0.0)


def frexp(input):
    """torch.frexp: (mantissa, exponent) with input = mantissa * 2**exponent, |mantissa| in
    [0.5, 1) and an int32 exponent; zeros, infinities and NaNs are their own mantissa with
    exponent 0."""
    if not isinstance(input, Tensor):
        raise TypeError(f"frexp(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if not input.is_floating_point():
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    with no_grad():
        exponent = _exponent(input.detach())
    mantissa = _scaled(input, exponent)
    return _FrexpResult(mantissa, exponent.to(dtypes.int32))
