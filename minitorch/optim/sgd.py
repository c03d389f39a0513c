"""SGD with momentum, dampening, Nesterov, weight decay and maximize (torch's update rule)."""
from ..autograd import no_grad
from ._checks import check_lr, check_non_negative, check_not_differentiable
from .optimizer import Optimizer, _gradient

__all__ = ["SGD"]


class SGD(Optimizer):
    """Stochastic gradient descent, step for step torch.optim.SGD."""

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False,
                 *, maximize=False, foreach=None, differentiable=False, fused=None):
        check_lr(lr)
        check_not_differentiable(differentiable)
        check_non_negative(momentum, "momentum")
        check_non_negative(weight_decay, "weight_decay")
        defaults = {"lr": lr, "momentum": momentum, "dampening": dampening,
                    "weight_decay": weight_decay, "nesterov": nesterov, "maximize": maximize,
                    "foreach": foreach, "differentiable": differentiable, "fused": fused}
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)

    def step(self, closure=None):
        """One update of every parameter that has a .grad; returns the closure's loss."""
        loss = self._evaluate(closure)
        with no_grad():
            for group in self.param_groups:
                for param in group["params"]:
                    if param.grad is not None:
                        self._update(param, group)
        return loss

    def _update(self, param, group):
        grad = _gradient(param, group)
        momentum = group["momentum"]
        if momentum != 0:
            state = self.state[param]
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = state["momentum_buffer"] = grad.detach().clone()
            else:
                buf.mul_(momentum).add_(grad, alpha=1 - group["dampening"])
            grad = grad.add(buf, alpha=momentum) if group["nesterov"] else buf
        param.add_(grad, alpha=-group["lr"])
