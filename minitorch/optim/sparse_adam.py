"""SparseAdam: Adam's moments and update applied only to the rows a sparse gradient names
(nn.Embedding(sparse=True)), torch.optim.SparseAdam operation for operation. The arithmetic
runs on the gradient's values and on the moment and parameter rows they name (index_select,
index_add: our kernels), never on the whole parameter."""
import math

from ..functions.sparse_coo import add_sparse_into_, sparse_mask_values
from ..tensor import Tensor, zeros_like
from ._checks import check_betas, to_scalar
from .optimizer import Optimizer

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    """Masked Adam for sparse gradients: each step, for the coalesced gradient's rows only,
    the moments move toward the gradient and the parameter takes Adam's bias-corrected step.
    A dense gradient is torch's error (use Adam)."""

    _sparse_grad_error = None

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
        _check_arguments(lr, eps, betas)
        params = list(params) if not isinstance(params, Tensor) else params
        _refuse_sparse_params(params)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "maximize": maximize}
        super().__init__(params, defaults)

    def _step_group(self, params, group):
        if any(not p.grad.is_sparse for p in params):   # before the group changes
            raise RuntimeError("SparseAdam does not support dense gradients, please "
                               "consider Adam instead")
        for param in params:
            self._update(param, self._state_of(param), group)

    def _state_of(self, param):
        state = self.state[param]
        if not state:           # torch keeps the step as a Python int here
            state["step"] = 0
            state["exp_avg"] = zeros_like(param)
            state["exp_avg_sq"] = zeros_like(param)
        state["step"] += 1
        return state

    @staticmethod
    def _update(param, state, group):
        """torch's sparse_adam for one parameter (functional.py there), in its order of
        operations: old <- old + (1 - beta) * (new - old) on the named rows."""
        beta1, beta2 = group["betas"]
        grad = param.grad if not group["maximize"] else -param.grad
        grad = grad.coalesce()      # the update is not linear: every row once
        values = grad._values()
        if values.numel() == 0:
            return
        exp_avg, exp_avg_sq, step = state["exp_avg"], state["exp_avg_sq"], state["step"]
        old_exp_avg = sparse_mask_values(exp_avg, grad)
        exp_avg_update = values.sub(old_exp_avg).mul_(1 - beta1)
        add_sparse_into_(exp_avg, grad._with_values(exp_avg_update))
        old_exp_avg_sq = sparse_mask_values(exp_avg_sq, grad)
        exp_avg_sq_update = values.pow(2).sub_(old_exp_avg_sq).mul_(1 - beta2)
        add_sparse_into_(exp_avg_sq, grad._with_values(exp_avg_sq_update))
        numer = exp_avg_update.add_(old_exp_avg)
        denom = exp_avg_sq_update.add_(old_exp_avg_sq).sqrt_().add_(group["eps"])
        step_size = to_scalar(group["lr"]) * math.sqrt(1 - beta2 ** step) / (1 - beta1 ** step)
        add_sparse_into_(param, grad._with_values(-step_size * numer.div_(denom)))


def _check_arguments(lr, eps, betas):
    """torch's checks: lr and eps strictly positive (not just non-negative, unlike Adam)."""
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    if not 0.0 < lr:
        raise ValueError(f"Invalid learning rate: {lr}")
    if not 0.0 < eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    check_betas(betas)


def _refuse_sparse_params(params):
    """torch's ValueError naming [group, position] of each sparse parameter (checked before
    the base class, which takes Tensors only and would say less)."""
    if isinstance(params, Tensor):
        return
    groups = [g["params"] for g in params if isinstance(g, dict)] or [params]
    sparse = [[g, i] for g, group in enumerate(groups)
              for i, p in enumerate([group] if isinstance(group, Tensor) else group)
              if getattr(p, "is_sparse", False)]
    if sparse:
        raise ValueError(f"Sparse params at indices {sparse}: SparseAdam requires dense "
                         "parameter tensors")
