"""RAdam (Adam with a rectified adaptive learning rate), torch's single-tensor rule operation
for operation."""
from ._checks import check_betas, check_lr, check_non_negative, check_not_differentiable, to_scalar
from .optimizer import Optimizer, _gradient

__all__ = ["RAdam"]


class RAdam(Optimizer):
    """RAdam (Liu et al.), step for step torch.optim.RAdam; decoupled_weight_decay gives
    RAdamW."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False,
                 capturable=False, differentiable=False):
        check_lr(lr)
        check_not_differentiable(differentiable)
        check_non_negative(eps, "epsilon")
        check_betas(betas)
        check_non_negative(weight_decay, "weight_decay")
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "maximize": maximize, "foreach": foreach, "capturable": capturable,
                    "decoupled_weight_decay": decoupled_weight_decay,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def _state_of(self, param, group):
        return self._new_state(param, "exp_avg", "exp_avg_sq")

    @staticmethod
    def _update(param, state, group):
        lr = to_scalar(group["lr"])
        beta1, beta2 = group["betas"]
        step = state["step"].add_(1).item()
        grad = _gradient(param, group, lr)
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        bias_correction2 = 1 - beta2 ** step
        update = exp_avg / (1 - beta1 ** step) * lr
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
        # the variance is only tractable (rectified) once the SMA is longer than 5 steps
        if rho_t > 5.0:
            adaptive_lr = (bias_correction2 ** 0.5) / exp_avg_sq.sqrt().add_(group["eps"])
            rect = ((rho_t - 4) * (rho_t - 2) * rho_inf /
                    ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
            update = update * adaptive_lr * rect
        param.add_(update, alpha=-1.0)
