"""RMSprop with momentum, centering, weight decay and maximize (torch's update rule)."""
from ..tensor import zeros_like
from ._checks import check_lr, check_non_negative, check_not_differentiable, to_scalar
from .optimizer import Optimizer, _gradient, _step_counter

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """RMSprop (Hinton), step for step torch.optim.RMSprop."""

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
                 centered=False, capturable=False, foreach=None, maximize=False,
                 differentiable=False):
        check_lr(lr)
        check_not_differentiable(differentiable)
        check_non_negative(eps, "epsilon")
        check_non_negative(momentum, "momentum")
        check_non_negative(weight_decay, "weight_decay")
        check_non_negative(alpha, "alpha")
        defaults = {"lr": lr, "momentum": momentum, "alpha": alpha, "eps": eps,
                    "centered": centered, "weight_decay": weight_decay, "foreach": foreach,
                    "maximize": maximize, "capturable": capturable,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def _state_of(self, param, group):
        state = self.state[param]
        if not state:
            state["step"] = _step_counter()
            state["square_avg"] = zeros_like(param)
            if group["momentum"] > 0:
                state["momentum_buffer"] = zeros_like(param)
            if group["centered"]:
                state["grad_avg"] = zeros_like(param)
        return state

    _foreach_rule = "rmsprop"

    def _foreach_tensors(self, param, group):
        state = self._state_of(param, group)
        return (param, param.grad, state["square_avg"], state.get("momentum_buffer"),
                state.get("grad_avg"))

    @staticmethod
    def _foreach_scalars(group):
        return (to_scalar(group["lr"]), group["alpha"], group["eps"], group["weight_decay"],
                group["momentum"], group["maximize"])

    @staticmethod
    def _update(param, state, group):
        alpha, momentum = group["alpha"], group["momentum"]
        square_avg = state["square_avg"]
        state["step"].add_(1)
        grad = _gradient(param, group)
        square_avg.mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
        if group["centered"]:
            grad_avg = state["grad_avg"].lerp_(grad, 1 - alpha)
            avg = square_avg.addcmul(grad_avg, grad_avg, value=-1).sqrt_()
        else:
            avg = square_avg.sqrt()
        avg = avg.add_(group["eps"])
        if momentum > 0:
            buf = state["momentum_buffer"]
            buf.mul_(momentum).addcdiv_(grad, avg)
            param.add_(buf, alpha=-group["lr"])
        else:
            param.addcdiv_(grad, avg, value=-group["lr"])
