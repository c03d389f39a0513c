"""Rprop (resilient backpropagation), torch's single-tensor rule operation for operation."""
from ..tensor import full_like, zeros_like
from ._checks import check_lr, check_not_differentiable, to_scalar
from .optimizer import Optimizer, _gradient, _step_counter

__all__ = ["Rprop"]


class Rprop(Optimizer):
    """Rprop (Riedmiller & Braun), step for step torch.optim.Rprop: each entry's step size
    grows by etas[1] while its gradient keeps its sign and shrinks by etas[0] when it flips."""

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        check_lr(lr)
        check_not_differentiable(differentiable)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = {"lr": lr, "etas": etas, "step_sizes": step_sizes, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable,
                    "capturable": capturable}
        super().__init__(params, defaults)

    def _state_of(self, param, group):
        state = self.state[param]
        if not state:
            state["step"] = _step_counter()
            state["prev"] = zeros_like(param)
            state["step_size"] = full_like(param.grad, to_scalar(group["lr"]))
        return state

    @staticmethod
    def _update(param, state, group):
        etaminus, etaplus = group["etas"]
        step_size_min, step_size_max = group["step_sizes"]
        grad = _gradient(param, group)
        prev, step_size = state["prev"], state["step_size"]
        state["step"].add_(1)
        sign = grad.mul(prev).sign()
        sign.masked_fill_(sign.gt(0), etaplus)
        sign.masked_fill_(sign.lt(0), etaminus)
        sign.masked_fill_(sign.eq(0), 1)
        step_size.mul_(sign).clamp_(step_size_min, step_size_max)
        # after a sign change the entry does not move, and the next step sees no history
        grad = grad.clone().masked_fill_(sign.eq(etaminus), 0)
        param.addcmul_(grad.sign(), step_size, value=-1)
        prev.copy_(grad)
