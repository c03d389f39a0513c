"""torch.distributed.algorithms.join: training when ranks have uneven numbers of inputs. Inside
`with Join([joinables])` (or `with ddp_model.join():`), a rank that runs out of inputs leaves the
loop and, in the context's exit, shadows the collectives the other ranks still make each
iteration (its joinables' main hooks) until every rank has joined; then the post hooks run
(DDP: every rank takes the last joiner's parameters and buffers).

Each iteration a rank that has not joined says so first (Join.notify_join_context: an
all-reduce of 1, which a joined rank matches with 0, so the sum counts the ranks still
training); with throw_on_early_termination every rank instead raises once one has joined.
All of these collectives are blocking: MPI does not match a blocking collective with a
non-blocking one."""
import collections
from abc import ABC, abstractmethod

from ... import distributed as dist
from ...tensor import ones, zeros

_JoinConfig = collections.namedtuple("_JoinConfig",
                                     "enable throw_on_early_termination is_first_joinable")
_DISABLED = _JoinConfig(False, False, False)


class JoinHook:
    """What a joined rank runs for one of its joinables: main_hook once per iteration the other
    ranks still make, post_hook(is_last_joiner) once when all have joined."""

    def main_hook(self):
        pass

    def post_hook(self, is_last_joiner):
        pass


class Joinable(ABC):
    """A class whose per-iteration collectives Join can shadow (DistributedDataParallel is
    one): join_hook, join_device and join_process_group, and Join.notify_join_context called
    before each iteration's collectives."""

    def __init__(self):
        super().__init__()
        self._join_config = _DISABLED

    @abstractmethod
    def join_hook(self, **kwargs):
        """The JoinHook a joined rank runs for this joinable."""

    @property
    @abstractmethod
    def join_device(self):
        """The device of the join context's own collectives."""

    @property
    @abstractmethod
    def join_process_group(self):
        """The process group of the join context's own collectives."""


class Join:
    """The join context manager: `with Join([model, ...], enable, throw_on_early_termination):`
    around a training loop whose ranks may see different numbers of inputs."""

    def __init__(self, joinables, enable=True, throw_on_early_termination=False, **kwargs):
        if len(joinables) == 0:
            raise ValueError("The join context manager requires at least one joinable")
        self._joinables = joinables
        self._join_hooks = [joinable.join_hook(**kwargs) for joinable in joinables]
        self._enable, self._throw_on_early_termination = enable, throw_on_early_termination
        for i, joinable in enumerate(joinables):
            joinable._join_config = _JoinConfig(enable, throw_on_early_termination, i == 0)
        first = joinables[0]
        self._device, self._process_group = first.join_device, first.join_process_group
        self._rank = dist.get_rank(self._process_group)

    def __enter__(self):
        return self

    def __exit__(self, kind, value, traceback):
        """Shadow the other ranks' iterations until every rank has joined, then run the post
        hooks; an exception from the loop passes through untouched."""
        try:
            if not self._enable or kind is not None:
                return
            is_last_joiner = True
            while self._ranks_still_training():
                if self._throw_on_early_termination:
                    dist.all_reduce(ones(1, device=self._device), group=self._process_group)
                    raise RuntimeError(f"Rank {self._rank} exhausted all inputs.")
                for hook in self._join_hooks:
                    hook.main_hook()
                is_last_joiner = False
            for hook in self._join_hooks:
                hook.post_hook(is_last_joiner)
        finally:
            for joinable in self._joinables:
                joinable._join_config = _DISABLED

    def _ranks_still_training(self):
        count = zeros(1, device=self._device)
        dist.all_reduce(count, group=self._process_group)
        return count.item() > 0

    @staticmethod
    def notify_join_context(joinable):
        """Called by a rank that has not joined, before an iteration's collectives: counts it
        among the ranks still training (and raises, with throw_on_early_termination, once some
        rank has joined). The count (the first joinable's call only; None otherwise)."""
        config = joinable._join_config
        if not config.is_first_joinable or not config.enable:
            return None
        group, device = joinable.join_process_group, joinable.join_device
        count = ones(1, device=device)
        dist.all_reduce(count, group=group)
        if config.throw_on_early_termination:
            joined = zeros(1, device=device)
            dist.all_reduce(joined, group=group)
            if joined.item():
                raise RuntimeError("Detected at least one rank that exhausted inputs. Throwing "
                                   "across all ranks.")
        return int(count.item())


__all__ = ["Join", "JoinHook", "Joinable"]
