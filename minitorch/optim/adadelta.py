"""Adadelta, torch's single-tensor rule operation for operation."""
from ._checks import check_lr, check_non_negative, check_not_differentiable, to_scalar
from .optimizer import Optimizer, _gradient

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    """Adadelta (Zeiler), step for step torch.optim.Adadelta."""

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *,
                 capturable=False, maximize=False, differentiable=False):
        check_lr(lr)
        check_not_differentiable(differentiable)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        check_non_negative(eps, "epsilon")
        check_non_negative(weight_decay, "weight_decay")
        defaults = {"lr": lr, "rho": rho, "eps": eps, "weight_decay": weight_decay,
                    "maximize": maximize, "capturable": capturable, "foreach": foreach,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def _state_of(self, param, group):
        return self._new_state(param, "square_avg", "acc_delta")

    _foreach_rule = "adadelta"

    def _foreach_tensors(self, param, group):
        state = self._state_of(param, group)
        return param, param.grad, state["square_avg"], state["acc_delta"]

    @staticmethod
    def _foreach_scalars(group):
        return (to_scalar(group["lr"]), group["rho"], group["eps"], group["weight_decay"],
                group["maximize"])

    @staticmethod
    def _update(param, state, group):
        rho, eps = group["rho"], group["eps"]
        state["step"].add_(1)
        grad = _gradient(param, group)
        square_avg, acc_delta = state["square_avg"], state["acc_delta"]
        square_avg.mul_(rho).addcmul_(grad, grad, value=1 - rho)
        std = square_avg.add(eps).sqrt_()
        delta = acc_delta.add(eps).sqrt_().div_(std).mul_(grad)
        acc_delta.mul_(rho).addcmul_(delta, delta, value=1 - rho)
        param.add_(delta, alpha=-to_scalar(group["lr"]))
