"""The argument checks torch's optimizers share (same messages), and the learning rate as a
number (torch accepts a one-element Tensor lr)."""
from ..tensor import Tensor, tensor
from .optimizer import _scalar_dtype

__all__ = ["check_betas", "check_lr", "check_non_negative", "check_not_differentiable",
           "scalar_state", "to_scalar"]


def check_lr(lr):
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")


def check_non_negative(value, what):
    """`what` as torch spells it in the message: "epsilon", "weight_decay", ..."""
    if not 0.0 <= value:
        raise ValueError(f"Invalid {what} value: {value}")


def check_not_differentiable(differentiable):
    """torch's differentiable=True lets gradients flow through the update itself; minitorch's
    updates are not recorded, so it refuses rather than silently differ."""
    if differentiable:
        raise NotImplementedError("differentiable=True is not supported by minitorch's "
                                  "optimizers (the update is not recorded by autograd)")


def check_betas(betas):
    for index in (0, 1):
        if not 0.0 <= betas[index] < 1.0:
            raise ValueError(f"Invalid beta parameter at index {index}: {betas[index]}")


def to_scalar(value):
    """A Tensor lr read as a Python number (torch's _to_scalar)."""
    return value.item() if isinstance(value, Tensor) else value


def scalar_state(value, device=None):
    """A 0-d state tensor in the dtype torch keeps step-like scalars in (float32 unless the
    default dtype is float64): its rounding is part of the trajectory."""
    return tensor(value, dtype=_scalar_dtype(), device=device)
