"""DistributedDataParallel: one model replica per rank; gradients averaged across ranks in
buckets whose all-reduce starts, asynchronously, as soon as backward has produced them."""
import contextlib

from ... import distributed as dist
from ...autograd import is_grad_enabled, no_grad
from ...distributed.algorithms.join import _DISABLED, Join, Joinable, JoinHook
from ...distributed.group import resolve
from ...dtypes import uint8
from ...tensor import ones, tensor as new_tensor, zeros
from ..module import Module
from .buckets import FIRST_BUCKET_BYTES, assign_buckets, set_factor
from .data_parallel import move_to
from .reducer import Reducer


class DistributedDataParallel(Module, Joinable):
    """torch.nn.parallel.DistributedDataParallel over mt.distributed (MPI or NCCL).

    At construction rank 0's parameters and buffers are broadcast to every rank. Each forward
    (with gradients enabled, outside no_sync) prepares a reduction: as backward accumulates a
    parameter's gradient, a post-accumulate hook copies it into its bucket multiplied by
    1 / world size (as torch does, before the sum), and a full bucket starts an async all-reduce
    (buckets start in order on every rank, as MPI requires; those that fill when no gradient is
    left to compute run blocking). When the last bucket has started, the hook waits for them
    all and writes the averages back into .grad, so after backward() every rank holds the same
    gradients. A large parameter (buckets.SOLO_BYTES) is a bucket of its own whose .grad is
    scaled and all-reduced in place, without copies: a post-accumulate hook registered after
    DDP's may see that .grad scaled or mid-reduction (as with torch's
    gradient_as_bucket_view=True). With gradient_as_bucket_view=True every .grad becomes a view
    of its bucket at its first synced backward (as in torch), so the averages need no copy
    back. static_graph is accepted and has no effect: each forward plans its reduction from the
    graph it built, which already covers what torch's static-graph mode optimizes for.
    register_comm_hook swaps the averaging for a hook; join() trains ranks with uneven inputs
    (distributed/algorithms/join.py)."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=True,
                 init_sync=True, process_group=None, bucket_cap_mb=None,
                 find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False, **unsupported):
        super().__init__()
        if unsupported:
            raise TypeError(f"DistributedDataParallel got unexpected keyword arguments "
                            f"{sorted(unsupported)}")
        self.process_group = resolve(process_group)
        self.module = module
        self.device_ids, self.output_device, self.dim = device_ids, output_device, dim
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view, self.static_graph = gradient_as_bucket_view, static_graph
        self.require_backward_grad_sync = True
        self._join_config = _DISABLED       # Joinable's state (join(): uneven inputs)
        self._divide_by_initial_world_size = True
        self._params = [p for p in module.parameters() if p.requires_grad]
        if not self._params:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have "
                               "any parameter that requires a gradient.")
        # torch's modules_buffers: the buffers to broadcast are fixed at construction (they are
        # updated in place), so a model without any skips the broadcast for nothing
        self._buffers_to_sync = list(module.buffers())
        self._world = self.process_group.size()
        self._verify_same_model()
        if init_sync:
            self._sync_module_states()
        cap_mb = 25 if bucket_cap_mb is None else bucket_cap_mb
        self.bucket_bytes_cap = int(cap_mb * 1024 * 1024)
        # torch's first bucket is 1 MB only under the default cap (then communication starts
        # early); an explicit bucket_cap_mb caps every bucket
        first_cap = FIRST_BUCKET_BYTES if bucket_cap_mb is None else self.bucket_bytes_cap
        with no_grad():     # the bucket views are not part of any graph
            self._buckets = assign_buckets(self._params, self.bucket_bytes_cap, first_cap,
                                           factor=1.0 / self._world,
                                           as_views=gradient_as_bucket_view)
        self._reducer = Reducer(self._params, self._buckets, self.process_group,
                                find_unused_parameters)

    # ---- construction -----------------------------------------------------------------------
    def _verify_same_model(self):
        """torch's check that every rank wraps the same architecture."""
        mine = [(tuple(p.shape), p.dtype.name) for p in self._params]
        everyone = [None] * self._world
        dist.all_gather_object(everyone, mine, group=self.process_group)
        me = self.process_group.rank()
        for rank, theirs in enumerate(everyone):
            if len(theirs) != len(mine):
                raise RuntimeError(f"DDP expects same model across all ranks, but Rank {me} has "
                                   f"{len(mine)} params, while rank {rank} has inconsistent "
                                   f"{len(theirs)} params.")
            for i, (a, b) in enumerate(zip(mine, theirs)):
                if a != b:
                    raise RuntimeError(f"DDP expects same model across all ranks, but Rank {me} "
                                       f"has parameter {i} of shape {list(a[0])} {a[1]}, while "
                                       f"rank {rank} has {list(b[0])} {b[1]}.")

    def _sync_module_states(self, root=None):
        """Rank root's (the group's first by default) parameters and buffers everywhere (in
        place: optimizers keep their refs)."""
        root = self.process_group.ranks[0] if root is None else root
        with no_grad():
            for tensor in list(self.module.parameters()) + list(self.module.buffers()):
                dist.broadcast(tensor.detach(), src=root, group=self.process_group)

    def _syncs_buffers(self):
        """Whether a training forward broadcasts the buffers (rank 0's win)."""
        return self.broadcast_buffers and bool(self._buffers_to_sync) and self._world > 1

    def _sync_buffers(self):
        root = self.process_group.ranks[0]
        with no_grad():
            for buffer in self._buffers_to_sync:
                dist.broadcast(buffer, src=root, group=self.process_group)

    # ---- forward ------------------------------------------------------------------------------
    def forward(self, *inputs, **kwargs):
        syncing = is_grad_enabled() and self.require_backward_grad_sync
        if syncing:
            self._reducer.check_prior_reduction_finished()
        joining = is_grad_enabled() and self._join_config.enable
        self._reducer.blocking = joining
        if joining:
            self._join_iteration_start()
        if self._syncs_buffers() and is_grad_enabled():
            self._sync_buffers()
        if self.device_ids:         # torch moves the inputs to the replica's device
            device = self.device_ids[0]
            inputs, kwargs = move_to((inputs, kwargs),
                                     f"cuda:{device}" if isinstance(device, int) else device)
        output = self.module(*inputs, **kwargs)
        if syncing:
            self._reducer.prepare(output)
        else:
            self._reducer.cancel()
        return output

    # ---- user controls ------------------------------------------------------------------------
    @contextlib.contextmanager
    def no_sync(self):
        """Backward inside accumulates gradients locally; the first synced backward after it
        averages the accumulated sums."""
        previous = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = previous

    def register_comm_hook(self, state, hook):
        """hook(state, bucket) reduces each bucket from now on instead of DDP's average: it
        gets a dist.GradBucket of this rank's summed gradients (not divided by the world
        size: the hook does that) and returns a Future of the reduced flat buffer. Hooks
        are in minitorch.distributed.algorithms.ddp_comm_hooks (torch's names); one per
        model."""
        if not callable(hook):
            raise TypeError("Communication hook must be callable.")
        if self._reducer.comm_hook is not None:
            raise RuntimeError("register_comm_hook or register_builtin_comm_hook can only be "
                               "called once.")
        set_factor(self._buckets, 1.0)
        self._reducer.comm_hook = (state, hook)

    # ---- uneven inputs (Join) -----------------------------------------------------------------
    def join(self, divide_by_initial_world_size=True, enable=True,
             throw_on_early_termination=False):
        """A context manager for training loops whose ranks see different numbers of inputs:
        a rank out of inputs shadows the others' all-reduces with zeros until all are done,
        then every rank takes the last joiner's model. Gradients are averaged over the initial
        world size (a joined rank contributes zeros), or over the ranks still training when
        divide_by_initial_world_size=False."""
        return Join([self], enable, throw_on_early_termination,
                    divide_by_initial_world_size=divide_by_initial_world_size)

    def join_hook(self, **kwargs):
        return _DDPJoinHook(self, kwargs.get("divide_by_initial_world_size", True))

    @property
    def join_device(self):
        return self._params[0].device

    @property
    def join_process_group(self):
        return self.process_group

    def _join_iteration_start(self):
        """A rank still training, in join mode: the count of ranks training and whether this
        iteration syncs gradients (a joined rank matches both with zeros), then the averaging
        factor for the ranks training."""
        count = Join.notify_join_context(self)
        flag = (ones if self.require_backward_grad_sync else zeros)(1, device=self.join_device)
        dist.all_reduce(flag, group=self.process_group)
        if count and not self._divide_by_initial_world_size and \
                self._reducer.comm_hook is None:
            set_factor(self._buckets, 1.0 / count)

    def extra_repr(self):
        return ""


class _DDPJoinHook(JoinHook):
    """A joined rank's part in DDP's iterations: the sync flag, the buffer broadcast and, when
    the others sync, one all-reduce of zeros per bucket in bucket order (and the unused-
    parameter flags); at the end every rank takes the last joiner's parameters and buffers."""

    def __init__(self, ddp, divide_by_initial_world_size):
        ddp._divide_by_initial_world_size = divide_by_initial_world_size
        self.ddp = ddp

    def main_hook(self):
        ddp = self.ddp
        group, device = ddp.process_group, ddp.join_device
        flag = zeros(1, device=device)
        dist.all_reduce(flag, group=group)
        if ddp._syncs_buffers():
            ddp._sync_buffers()
        if not flag.item():
            return
        for bucket in ddp._buckets:
            first = bucket.params[0]
            dist.all_reduce(zeros(sum(p.numel() for p in bucket.params), dtype=first.dtype,
                                  device=device), group=group)
        if ddp.find_unused_parameters:
            dist.all_reduce(zeros(len(ddp._params), dtype=uint8, device=device),
                            op=dist.ReduceOp.MAX, group=group)

    def post_hook(self, is_last_joiner):
        ddp = self.ddp
        group = ddp.process_group
        rank = new_tensor([dist.get_rank(group) if is_last_joiner else -1],
                          device=ddp.join_device)
        dist.all_reduce(rank, op=dist.ReduceOp.MAX, group=group)
        ddp._sync_module_states(root=int(rank.item()))
        if ddp._reducer.comm_hook is None:
            set_factor(ddp._buckets, 1.0 / ddp._world)
