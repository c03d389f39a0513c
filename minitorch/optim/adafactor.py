"""Adafactor (Shazeer & Stern, 2018), torch's single-tensor rule operation for operation: the
second moment of a matrix (or of the last two dims of a higher tensor) kept as a row and a
column factor, a relative step size min(lr, 1/√t) scaled by the parameter's RMS, and the
update clipped to RMS ≤ d."""
import math

from ..dtypes import finfo
from ..functions.norms import norm
from ..tensor import zeros_like
from ._checks import to_scalar
from .optimizer import Optimizer, _step_counter

__all__ = ["Adafactor"]


class Adafactor(Optimizer):
    """torch.optim.Adafactor: lr=1e-2, beta2_decay=-0.8 (β̂₂ₜ = 1 - t^beta2_decay), eps=(eps1,
    eps2) with eps1 None meaning the dtype's machine epsilon, d the clipping threshold and
    decoupled weight decay (param *= 1 - lr·weight_decay). foreach is accepted and the
    per-parameter rule runs either way (torch's foreach path computes the same steps)."""

    _sparse_grad_error = "Adafactor does not support sparse gradients"

    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0,
                 weight_decay=0.0, *, foreach=None, maximize=False):
        if hasattr(lr, "numel") and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        for ok, message in ((0.0 <= lr, f"Learning rate should be >= 0 but is: {lr}"),
                            (0.0 >= beta2_decay,
                             f"beta2_decay should be <= 0 but is: {beta2_decay}"),
                            (eps[0] is None or 0.0 <= eps[0],
                             f"epsilon1 should be >= 0 but is: {eps[0]}"),
                            (0.0 <= eps[1], f"epsilon2 should be >= 0 but is: {eps[1]}"),
                            (1.0 <= d, f"Clipping threshold d should be >= 1 but is: {d}"),
                            (0.0 <= weight_decay,
                             f"weight_decay should be >= 0 but is: {weight_decay}")):
            if not ok:
                raise ValueError(message)
        defaults = {"lr": lr, "beta2_decay": beta2_decay, "eps": eps, "d": d,
                    "weight_decay": weight_decay, "foreach": foreach, "maximize": maximize}
        super().__init__(params, defaults)

    def _step_group(self, params, group):
        self._check_sparse_grads(params)
        if any(p.is_complex() for p in params):
            raise RuntimeError("Adafactor does not support complex parameters")
        # eps1=None is the machine epsilon of the group's first parameter with a gradient,
        # kept for the rest of the group (torch's loop assigns it once)
        eps1 = group["eps"][0]
        for param in params:
            if eps1 is None:
                eps1 = finfo(param.dtype).eps
            _update(param, self._state_of(param, group), group, eps1)

    def _state_of(self, param, group):
        state = self.state[param]
        if not state:
            state["step"] = _step_counter()
            grad = param.grad
            if grad.dim() > 1:      # the row and column factors of the last two dims
                state["row_var"] = grad.new_zeros(grad.shape[:-1] + (1,))
                state["col_var"] = grad.new_zeros(grad.shape[:-2] + (1, grad.shape[-1]))
            else:
                state["variance"] = zeros_like(grad)
        return state


def _update(param, state, group, eps1):
    lr = to_scalar(group["lr"])
    grad = param.grad if not group["maximize"] else -param.grad
    step = state["step"].add_(1).item()
    one_minus_beta2 = step ** group["beta2_decay"]
    rho = min(lr, 1 / step ** 0.5)
    alpha = max(group["eps"][1], param.norm(2).item() / math.sqrt(param.numel())) * rho
    if group["weight_decay"] != 0:
        param.mul_(1 - lr * group["weight_decay"])
    if grad.dim() > 1:
        row_var, col_var = state["row_var"], state["col_var"]
        # the mean of g² over a dim as torch computes it: the norm squared, over the count
        row_var.lerp_(norm(grad, dim=-1, keepdim=True).square_().div_(grad.size(-1)),
                      one_minus_beta2)
        col_var.lerp_(norm(grad, dim=-2, keepdim=True).square_().div_(grad.size(-2)),
                      one_minus_beta2)
        estimate = row_var @ col_var
        estimate.div_(row_var.mean(dim=-2, keepdim=True).clamp_(min=eps1))
    else:
        variance = state["variance"]
        variance.lerp_(grad * grad, one_minus_beta2)
        estimate = variance.clone()
    update = estimate.clamp_(min=eps1 * eps1).rsqrt_().mul_(grad)
    denom = max(1.0, update.norm(2).item() / (math.sqrt(update.numel()) * group["d"]))
    param.add_(update, alpha=-alpha / denom)
