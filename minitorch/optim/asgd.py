"""ASGD (averaged stochastic gradient descent), torch's single-tensor rule operation for
operation."""
from ..tensor import zeros_like
from ._checks import check_lr, check_non_negative, check_not_differentiable, scalar_state, to_scalar
from .optimizer import Optimizer, _gradient

__all__ = ["ASGD"]


class ASGD(Optimizer):
    """ASGD (Polyak & Juditsky), step for step torch.optim.ASGD; the running average of the
    parameters is state["ax"]."""

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0,
                 foreach=None, maximize=False, differentiable=False, capturable=False):
        check_lr(lr)
        check_not_differentiable(differentiable)
        check_non_negative(weight_decay, "weight_decay")
        defaults = {"lr": lr, "lambd": lambd, "alpha": alpha, "t0": t0,
                    "weight_decay": weight_decay, "foreach": foreach, "maximize": maximize,
                    "differentiable": differentiable, "capturable": capturable}
        super().__init__(params, defaults)

    def _state_of(self, param, group):
        state = self.state[param]
        if not state:
            # torch keeps these scalars on the parameter's device, in the scalar dtype
            state["step"] = scalar_state(0.0, param.device)
            state["eta"] = scalar_state(to_scalar(group["lr"]), param.device)
            state["mu"] = scalar_state(1.0, param.device)
            state["ax"] = zeros_like(param)
        return state

    @staticmethod
    def _update(param, state, group):
        lr, lambd = to_scalar(group["lr"]), group["lambd"]
        eta, mu, ax = state["eta"], state["mu"], state["ax"]
        step = state["step"].add_(1).item()
        grad = _gradient(param, group)
        eta_value = eta.item()
        param.mul_(1 - lambd * eta_value)
        param.add_(grad, alpha=-eta_value)
        if mu.item() != 1:
            ax.add_(param.sub(ax).mul_(mu))
        else:
            ax.copy_(param)
        # torch.as_tensor(python float) first: the new values are rounded to the default dtype
        # even when eta and mu were loaded as float64 by load_state_dict
        eta.copy_(scalar_state(lr / ((1 + lambd * lr * step) ** group["alpha"]), eta.device))
        mu.copy_(scalar_state(1 / max(1, step - group["t0"]), mu.device))
