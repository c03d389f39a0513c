"""Adamax (Adam with an infinity norm), torch's single-tensor rule operation for operation."""
from ..functions.elementwise import maximum
from ._checks import check_betas, check_lr, check_non_negative, check_not_differentiable, to_scalar
from .optimizer import Optimizer, _gradient

__all__ = ["Adamax"]


class Adamax(Optimizer):
    """Adamax (Kingma & Ba, section 7), step for step torch.optim.Adamax."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 foreach=None, *, maximize=False, differentiable=False, capturable=False):
        check_lr(lr)
        check_not_differentiable(differentiable)
        check_non_negative(eps, "epsilon")
        check_betas(betas)
        check_non_negative(weight_decay, "weight_decay")
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "foreach": foreach, "maximize": maximize, "differentiable": differentiable,
                    "capturable": capturable}
        super().__init__(params, defaults)

    def _state_of(self, param, group):
        return self._new_state(param, "exp_avg", "exp_inf")

    @staticmethod
    def _update(param, state, group):
        beta1, beta2 = group["betas"]
        step = state["step"].add_(1).item()
        grad = _gradient(param, group)
        exp_avg, exp_inf = state["exp_avg"], state["exp_inf"]
        exp_avg.lerp_(grad, 1 - beta1)
        exp_inf.copy_(maximum(exp_inf.mul_(beta2), grad.abs().add_(group["eps"])))
        clr = to_scalar(group["lr"]) / (1 - beta1 ** step)
        param.addcdiv_(exp_avg, exp_inf, value=-clr)
