"""Helpers shared by the distributions (torch.distributions.utils)."""
import functools
import numbers

from .. import dtypes
from ..autograd import enable_grad
from ..functions import elementwise as E
from ..functions.joining import broadcast_tensors
from ..tensor import Size, Tensor, tensor
from ..random import randn

euler_constant = 0.57721566490153286060  # Euler-Mascheroni

__all__ = ["broadcast_all", "clamp_probs", "lazy_property", "logits_to_probs",
           "probs_to_logits"]


def broadcast_all(*values):
    """Broadcast tensors and numbers together; numbers take the first tensor's dtype/device."""
    if not all(isinstance(v, (Tensor, numbers.Number)) for v in values):
        raise ValueError("Input arguments must all be instances of Number, torch.Tensor or "
                         "objects implementing __torch_function__.")
    like = next((v for v in values if isinstance(v, Tensor)), None)
    options = ({"dtype": dtypes.get_default_dtype()} if like is None
               else {"dtype": like.dtype, "device": like.device})
    return broadcast_tensors(*(v if isinstance(v, Tensor) else tensor(v, **options)
                               for v in values))


def is_number(value):
    return isinstance(value, numbers.Number)


def standard_normal(shape, dtype, device):
    return randn(shape, dtype=dtype, device=device)


def sum_rightmost(value, dim):
    """Sum out the `dim` rightmost dimensions of `value`."""
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[:-dim]) + (-1,)).sum(-1)


def logits_to_probs(logits, is_binary=False):
    """Log-odds (binary) or unnormalised log-probabilities (last dim) to probabilities."""
    if is_binary:
        return E.sigmoid(logits)
    return logits.softmax(-1)


def clamp_probs(probs):
    """Probabilities clamped into [eps, 1 - eps] of their dtype (so logits stay finite)."""
    eps = dtypes.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary=False):
    clamped = clamp_probs(probs)
    if is_binary:
        return clamped.log() - (-clamped).log1p()
    return clamped.log()


class lazy_property:
    """A property computed on first access (with grad enabled) and then cached on the instance,
    so a distribution built from probs computes its logits once, and vice versa."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        functools.update_wrapper(self, wrapped)

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        with enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


def format_value(value):
    """How torch's f-strings print a tensor: a 0-d one as its number, others as tensors."""
    if isinstance(value, Tensor) and value.dim() == 0:
        return format(value.item())
    return str(value)


def as_size(shape):
    return shape if isinstance(shape, Size) else Size(tuple(shape))
