"""Adam and AdamW (decoupled weight decay), with amsgrad and maximize: torch's update rule,
operation for operation."""
from ..functions.elementwise import maximum
from ._checks import (check_betas, check_lr, check_non_negative, check_not_differentiable,
                      to_scalar)
from .optimizer import Optimizer, _fusable, _gradient

__all__ = ["Adam", "AdamW"]


class Adam(Optimizer):
    """Adam (Kingma & Ba); decoupled_weight_decay=True gives AdamW."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None, decoupled_weight_decay=False):
        check_lr(lr)
        check_not_differentiable(differentiable)
        check_non_negative(eps, "epsilon")
        check_betas(betas)
        check_non_negative(weight_decay, "weight_decay")
        if not (isinstance(betas[0], float) and isinstance(betas[1], float)):
            raise ValueError("betas must be either both floats or both Tensors")
        defaults = {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay,
                    "amsgrad": amsgrad, "maximize": maximize, "foreach": foreach,
                    "capturable": capturable, "differentiable": differentiable, "fused": fused,
                    "decoupled_weight_decay": decoupled_weight_decay}
        super().__init__(params, defaults)

    def _state_of(self, param, group):
        amsgrad = ("max_exp_avg_sq",) if group["amsgrad"] else ()
        state = self._new_state(param, "exp_avg", "exp_avg_sq", *amsgrad)
        if group["capturable"] and param.device.type == "cuda" and \
                state["step"].device != param.device:
            state["step"] = state["step"].to(param.device)     # torch's capturable step
        return state

    _foreach_rule = "adam"
    # AdamW's message names Adam too, as torch's does
    _sparse_grad_error = ("Adam does not support sparse gradients, please consider SparseAdam "
                          "instead")

    def _foreach_tensors(self, param, group):
        state = self._state_of(param, group)
        return (param, param.grad, state["exp_avg"], state["exp_avg_sq"],
                state["max_exp_avg_sq"] if group["amsgrad"] else None)

    @staticmethod
    def _foreach_scalars(group):
        beta1, beta2 = group["betas"]
        return (to_scalar(group["lr"]), beta1, beta2, group["eps"], group["weight_decay"],
                group["decoupled_weight_decay"], group["maximize"])

    @staticmethod
    def _update(param, state, group):
        if state["step"].device.type == "cuda":
            Adam._capturable_update(param, state, group)
            return
        lr, eps = group["lr"], group["eps"]
        beta1, beta2 = group["betas"]
        step = state["step"].add_(1).item()
        step_size = lr / (1 - beta1 ** step)
        bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
        moments = [state["exp_avg"], state["exp_avg_sq"]]
        if group["amsgrad"]:
            moments.append(state["max_exp_avg_sq"])
        if _fusable([param, param.grad] + moments):
            Adam._fused_update(param, moments, group, step_size, bias_correction2_sqrt)
            return
        exp_avg, exp_avg_sq = moments[:2]
        grad = _gradient(param, group, lr)
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        second_moment = exp_avg_sq
        if group["amsgrad"]:
            second_moment = moments[2]
            second_moment.copy_(maximum(second_moment, exp_avg_sq))
        denom = (second_moment.sqrt() / bias_correction2_sqrt).add_(eps)
        param.addcdiv_(exp_avg, denom, value=-step_size)

    @staticmethod
    def _capturable_update(param, state, group):
        """torch's capturable rule: the step counter stays on the device and the bias
        corrections are device tensors, so nothing is read back (a CUDA graph can capture it
        and each replay counts its own step)."""
        lr, eps = group["lr"], group["eps"]
        beta1, beta2 = group["betas"]
        step = state["step"].add_(1)
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        grad = _gradient(param, group, lr)
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        step_size_neg = (lr / (1 - beta1 ** step)).neg()
        bias_correction2_sqrt = (1 - beta2 ** step).sqrt()
        second_moment = exp_avg_sq
        if group["amsgrad"]:
            second_moment = state["max_exp_avg_sq"]
            second_moment.copy_(maximum(second_moment, exp_avg_sq))
        denom = (second_moment.sqrt() / (bias_correction2_sqrt * step_size_neg)).add_(
            eps / step_size_neg)
        param.addcdiv_(exp_avg, denom)

    @staticmethod
    def _fused_update(param, moments, group, step_size, bias_correction2_sqrt):
        """The same rule in one kernel pass (one launch per parameter on a GPU)."""
        lr, weight_decay = group["lr"], group["weight_decay"]
        decoupled = group["decoupled_weight_decay"]
        buffers = [t._data.flat() for t in [param, param.grad] + moments]
        if len(buffers) == 4:
            buffers.append(None)
        param._data.backend.adam_step(
            *buffers, *group["betas"], group["eps"], step_size, bias_correction2_sqrt,
            grad_decay=0.0 if decoupled else weight_decay,
            param_scale=1 - lr * weight_decay if decoupled else 1.0,
            maximize=group["maximize"])
        for t in [param] + moments:
            t._bump_version()


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter): param *= 1 - lr * wd first."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False, foreach=None, capturable=False,
                 differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach,
                         maximize=maximize, capturable=capturable,
                         differentiable=differentiable, fused=fused, decoupled_weight_decay=True)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True
