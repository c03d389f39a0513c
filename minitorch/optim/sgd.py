"""SGD with momentum, dampening, Nesterov, weight decay and maximize (torch's update rule).
Sparse gradients follow torch's single-tensor rule too: the momentum buffer is sparse (its
entries grow by concatenation), weight decay is torch's add(sparse, dense) error."""
from ..functions.sparse_coo import add_sparse_into_
from ..tensor import empty_like
from ._checks import check_lr, check_non_negative, check_not_differentiable, to_scalar
from .optimizer import Optimizer, _bump_versions, _foreach_buckets, _foreach_buffers, _gradient

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

    def _step_group(self, params, group):
        if group["foreach"] is not False:
            # sparse gradients take the per-parameter rule (as in torch's foreach SGD)
            sparse = [p for p in params if p.grad.is_sparse]
            params = self._foreach_update([p for p in params if not p.grad.is_sparse],
                                          group) + sparse
        for param in params:
            self._update(param, group)

    def _foreach_update(self, params, group):
        """Every compact parameter of one dtype and device in one foreach_sgd call per bucket
        (momentum buffers made on this step apart: they start as the gradient); returns the
        rest for the per-parameter rule."""
        momentum = group["momentum"]
        if momentum == 0:       # no state at all, as in torch
            buckets, rest = _foreach_buckets(params, lambda p: (p, p.grad))
            batches = [(batch, False) for batch in buckets.values()]
        else:
            buckets, rest = _foreach_buckets(params, lambda p: (p, p.grad, self.state[p].get(
                "momentum_buffer")))
            batches = []
            for batch in buckets.values():
                old = [tensors for tensors in batch if tensors[2] is not None]
                new = [self._new_buffer(p, grad) for p, grad, buf in batch if buf is None]
                batches += [(part, init) for part, init in ((old, False), (new, True)) if part]
        for batch, init in batches:
            batch[0][0]._data.backend.foreach_sgd(
                *_foreach_buffers(batch), *([None] if momentum == 0 else []),
                to_scalar(group["lr"]), momentum, group["dampening"], group["weight_decay"],
                group["nesterov"], group["maximize"], init)
            _bump_versions(batch)
        return rest

    def _new_buffer(self, param, grad):
        buf = self.state[param]["momentum_buffer"] = empty_like(param)
        return param, grad, buf

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
        if grad.is_sparse:      # sparse .grad (Embedding(sparse=True)): only its rows move
            add_sparse_into_(param, grad, alpha=-to_scalar(group["lr"]))
        else:
            param.add_(grad, alpha=-group["lr"])
