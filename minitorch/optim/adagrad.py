"""Adagrad with lr decay, weight decay, an initial accumulator and maximize (torch's rule),
and torch's sparse-gradient rule (nn.Embedding(sparse=True)): only the rows named change."""
from ..functions.sparse_coo import add_sparse_into_, sparse_mask_values
from ..tensor import full_like
from ._checks import check_lr, check_non_negative, check_not_differentiable, to_scalar
from .optimizer import Optimizer, _gradient, _step_counter

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """Adagrad (Duchi et al.), step for step torch.optim.Adagrad."""

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0,
                 eps=1e-10, foreach=None, *, maximize=False, differentiable=False, fused=None):
        check_lr(lr)
        check_not_differentiable(differentiable)
        check_non_negative(lr_decay, "lr_decay")
        check_non_negative(weight_decay, "weight_decay")
        check_non_negative(initial_accumulator_value, "initial_accumulator_value")
        check_non_negative(eps, "epsilon")
        defaults = {"lr": lr, "lr_decay": lr_decay, "eps": eps, "weight_decay": weight_decay,
                    "initial_accumulator_value": initial_accumulator_value, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable, "fused": fused}
        super().__init__(params, defaults)
        # torch creates the accumulators up front (they are in state_dict before any step)
        for group in self.param_groups:
            for param in group["params"]:
                self._state_of(param, group)

    def _state_of(self, param, group):
        state = self.state[param]
        if not state:
            state["step"] = _step_counter()
            state["sum"] = full_like(param, self.defaults["initial_accumulator_value"])
        return state

    _sparse_grad_error = None       # sparse gradients have their own rule below

    @staticmethod
    def _update(param, state, group):
        step = state["step"].add_(1).item()
        if param.grad.is_sparse:
            Adagrad._sparse_update(param, state, group, step)
            return
        grad = _gradient(param, group)
        clr = group["lr"] / (1 + (step - 1) * group["lr_decay"])
        state_sum = state["sum"]
        state_sum.addcmul_(grad, grad, value=1)
        std = state_sum.sqrt().add_(group["eps"])
        param.addcdiv_(grad, std, value=-clr)

    @staticmethod
    def _sparse_update(param, state, group, step):
        """torch's sparse rule: the gradient coalesced (the update is not linear in it), then
        only the rows it names change: sum += g², param -= clr * g / (sqrt(sum) + eps)."""
        grad = param.grad if not group["maximize"] else -param.grad
        if group["weight_decay"] != 0:
            raise RuntimeError("weight_decay option is not compatible with sparse gradients")
        clr = to_scalar(group["lr"]) / (1 + (step - 1) * group["lr_decay"])
        grad = grad.coalesce()
        values = grad._values()
        add_sparse_into_(state["sum"], grad._with_values(values.pow(2)))
        std_values = sparse_mask_values(state["sum"], grad).sqrt_().add_(group["eps"])
        add_sparse_into_(param, grad._with_values(values / std_values), alpha=-clr)
