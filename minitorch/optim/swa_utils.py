"""torch.optim.swa_utils: weight averaging (SWA and EMA) with AveragedModel, the SWALR schedule
that anneals to a constant SWA rate, and update_bn, which recomputes batch-norm statistics for
the averaged weights."""
import copy
import itertools
import math

from .. import nn
from ..autograd import no_grad
from ..nn.normalization import _BatchNorm
from ..tensor import tensor
from .lr_scheduler import LRScheduler, _format_param

__all__ = ["AveragedModel", "SWALR", "get_ema_avg_fn", "get_ema_multi_avg_fn", "get_swa_avg_fn",
           "get_swa_multi_avg_fn", "update_bn"]


# ---- averaging rules --------------------------------------------------------------------------
def get_ema_avg_fn(decay=0.999):
    """averaged ← decay · averaged + (1 - decay) · current."""
    def ema_update(averaged_param, current_param, num_averaged):
        return decay * averaged_param + (1 - decay) * current_param
    return ema_update


def get_swa_avg_fn():
    """The running mean over every update: averaged + (current - averaged) / (n + 1)."""
    def swa_update(averaged_param, current_param, num_averaged):
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)
    return swa_update


def get_ema_multi_avg_fn(decay=0.999):
    """The EMA rule over lists of tensors, updating the averaged ones in place."""
    def ema_update(averaged_params, current_params, num_averaged):
        for averaged, current in zip(averaged_params, current_params):
            if averaged.dtype.is_floating_point:
                averaged.lerp_(current, 1 - decay)
            else:
                averaged.copy_(averaged * decay + current * (1 - decay))
    return ema_update


def get_swa_multi_avg_fn():
    """The running-mean rule over lists of tensors, updating the averaged ones in place."""
    def swa_update(averaged_params, current_params, num_averaged):
        weight = 1.0 / (float(num_averaged) + 1)
        for averaged, current in zip(averaged_params, current_params):
            if averaged.dtype.is_floating_point:
                averaged.lerp_(current, weight)
            else:
                averaged.copy_(averaged + (current - averaged) * weight)
    return swa_update


# ---- the averaged model -----------------------------------------------------------------------
class AveragedModel(nn.Module):
    """A copy of `model` whose parameters (and, with use_buffers, buffers) are the running
    average of the model's over every update_parameters(model) call; n_averaged counts them."""

    def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False):
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", tensor(0, device=device))
        self.avg_fn, self.multi_avg_fn, self.use_buffers = avg_fn, multi_avg_fn, use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def _tracked(self, module):
        if self.use_buffers:
            return list(itertools.chain(module.parameters(), module.buffers()))
        return list(module.parameters())

    def update_parameters(self, model):
        """Fold `model`'s current weights into the average (the first call copies them)."""
        averaged = self._tracked(self.module)
        current = [p.detach().to(a.device) for a, p in zip(averaged, self._tracked(model))]
        first = int(self.n_averaged.item()) == 0
        with no_grad():
            if first:
                for a, c in zip(averaged, current):
                    a.copy_(c)
            elif self.multi_avg_fn is not None:
                groups = _by_device_and_dtype(averaged, current)
                for (device, _), (group, currents) in groups.items():
                    self.multi_avg_fn(group, currents, self.n_averaged.to(device))
            else:
                rule = self.avg_fn or get_swa_avg_fn()
                count = self.n_averaged.to(averaged[0].device) if averaged else 0
                for a, c in zip(averaged, current):
                    a.copy_(rule(a.detach(), c, count))
        if not self.use_buffers:
            # Buffers are not averaged: keep the model's (update_bn recomputes BN statistics).
            with no_grad():
                for a, b in zip(self.module.buffers(), model.buffers()):
                    a.copy_(b.detach().to(a.device))
        self.n_averaged += 1


def _by_device_and_dtype(averaged, current):
    """{(device, dtype): ([averaged…], [current…])}: multi_avg_fn sees one kind at a time."""
    groups = {}
    for a, c in zip(averaged, current):
        lists = groups.setdefault((a.device, a.dtype), ([], []))
        lists[0].append(a.detach())
        lists[1].append(c)
    return groups


@no_grad()
def update_bn(loader, model, device=None):
    """One pass over `loader` in training mode with every batch norm's running statistics reset
    and averaged cumulatively (momentum None), so they match the model's current weights."""
    norms = {m: m.momentum for m in model.modules()
             if isinstance(m, _BatchNorm) and m.track_running_stats}
    if not norms:
        return
    was_training = model.training
    model.train()
    for module in norms:
        module.reset_running_stats()
        module.momentum = None
    for batch in loader:
        if isinstance(batch, (list, tuple)):
            batch = batch[0]
        if device is not None:
            batch = batch.to(device)
        model(batch)
    for module, momentum in norms.items():
        module.momentum = momentum
    model.train(was_training)


# ---- the schedule -----------------------------------------------------------------------------
class SWALR(LRScheduler):
    """Anneals every group's rate from its current value to swa_lr over anneal_epochs steps
    (cosine or linear), then holds it there."""

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos",
                 last_epoch=-1):
        for rate, group in zip(_format_param("swa_lr", optimizer, swa_lr),
                               optimizer.param_groups):
            group["swa_lr"] = rate
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got "
                             f"{anneal_epochs}")
        self.anneal_epochs, self._anneal_strategy = anneal_epochs, anneal_strategy
        super().__init__(optimizer, last_epoch)

    def _anneal(self, t):
        return (1 - math.cos(math.pi * t)) / 2 if self._anneal_strategy == "cos" else t

    def _progress(self, step):
        return self._anneal(max(0.0, min(1.0, step / max(1, self.anneal_epochs))))

    def get_lr(self):
        """From each group's current rate, recover the rate the annealing started from (the
        previous step's mixing weight), then mix it with swa_lr at this step's weight."""
        self._warn_if_called_directly()
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        before, now = self._progress(step - 1), self._progress(step)
        rates = []
        for group in self.optimizer.param_groups:
            swa = group["swa_lr"]
            start = swa if before == 1 else (group["lr"] - before * swa) / (1 - before)
            rates.append(swa * now + start * (1 - now))
        return rates
