"""NAdam (Adam with Nesterov momentum and a momentum-decay schedule), torch's single-tensor
rule operation for operation."""
from ..tensor import zeros_like
from ._checks import (check_betas, check_lr, check_non_negative, check_not_differentiable,
                      scalar_state, to_scalar)
from .optimizer import Optimizer, _gradient, _step_counter

__all__ = ["NAdam"]


class NAdam(Optimizer):
    """NAdam (Dozat), step for step torch.optim.NAdam; decoupled_weight_decay gives NAdamW."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 momentum_decay=4e-3, decoupled_weight_decay=False, *, foreach=None,
                 maximize=False, capturable=False, differentiable=False):
        check_lr(lr)
        check_not_differentiable(differentiable)
        check_non_negative(eps, "epsilon")
        check_betas(betas)
        check_non_negative(weight_decay, "weight_decay")
        check_non_negative(momentum_decay, "momentum_decay")
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "momentum_decay": momentum_decay,
                    "decoupled_weight_decay": decoupled_weight_decay, "maximize": maximize,
                    "foreach": foreach, "capturable": capturable,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def _state_of(self, param, group):
        state = self.state[param]
        if not state:
            state["step"] = _step_counter()
            # a float32 tensor in torch: the product's rounding shapes the trajectory
            state["mu_product"] = scalar_state(1.0)
            state["exp_avg"] = zeros_like(param)
            state["exp_avg_sq"] = zeros_like(param)
        return state

    @staticmethod
    def _update(param, state, group):
        lr = to_scalar(group["lr"])
        beta1, beta2 = group["betas"]
        step = state["step"].add_(1).item()
        bias_correction2 = 1 - beta2 ** step
        grad = _gradient(param, group, lr)
        mu = NAdam._momentum(beta1, step, group["momentum_decay"])
        mu_next = NAdam._momentum(beta1, step + 1, group["momentum_decay"])
        mu_product = state["mu_product"].mul_(mu).item()
        mu_product_next = mu_product * mu_next
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        denom = exp_avg_sq.div(bias_correction2).sqrt().add_(group["eps"])
        param.addcdiv_(grad, denom, value=-lr * (1.0 - mu) / (1.0 - mu_product))
        param.addcdiv_(exp_avg, denom, value=(-lr * mu_next) / (1.0 - mu_product_next))

    @staticmethod
    def _momentum(beta1, step, momentum_decay):
        """The momentum cache mu_t of the schedule."""
        return beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
