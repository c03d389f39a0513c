"""DistributedDataParallel: one model replica per rank; gradients averaged across ranks in
buckets whose all-reduce starts, asynchronously, as soon as backward has produced them."""
import contextlib

from ... import distributed as dist
from ..._pytree import leaves
from ...autograd import is_grad_enabled, no_grad
from ...distributed.group import resolve
from ...tensor import Tensor
from ..module import Module
from .buckets import FIRST_BUCKET_BYTES, assign_buckets

UNFINISHED_REDUCTION = (
    "Expected to have finished reduction in the prior iteration before starting a new one. "
    "This error indicates that your module has parameters that were not used in producing "
    "loss. You can enable unused parameter detection by passing the keyword argument "
    "`find_unused_parameters=True` to `torch.nn.parallel.DistributedDataParallel`, and by \n"
    "making sure all `forward` function outputs participate in calculating loss. \n"
    "If you already have done the above, then the distributed data parallel module wasn't able "
    "to locate the output tensors in the return value of your module's `forward` function. "
    "Please include the loss function and the structure of the return value of `forward` of "
    "your module when reporting this issue (e.g. list, dict, iterable).\n"
    "Parameter indices which did not receive grad for rank {rank}: {missing}\n"
    " In addition, you can set the environment variable TORCH_DISTRIBUTED_DEBUG to either INFO "
    "or DETAIL to print out information about which particular parameters did not receive "
    "gradient on this rank as part of this error")


class DistributedDataParallel(Module):
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
    graph it built, which already covers what torch's static-graph mode optimizes for."""

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
        self._param_ids = [id(p) for p in self._params]
        self._locate = {}       # id(param) -> (bucket index, index in bucket)
        for b, bucket in enumerate(self._buckets):
            for i, p in enumerate(bucket.params):
                self._locate[id(p)] = (b, i)
        self._pass = None       # the reduction the next backward runs (a _Pass), if prepared
        self._grad_hook_handles = [p.register_post_accumulate_grad_hook(self._grad_ready)
                       for p in self._params]

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

    def _sync_module_states(self):
        """Rank 0's parameters and buffers everywhere (in place: optimizers keep their refs)."""
        root = self.process_group.ranks[0]
        with no_grad():
            for tensor in list(self.module.parameters()) + list(self.module.buffers()):
                dist.broadcast(tensor.detach(), src=root, group=self.process_group)

    def _sync_buffers(self):
        root = self.process_group.ranks[0]
        with no_grad():
            for buffer in self._buffers_to_sync:
                dist.broadcast(buffer, src=root, group=self.process_group)

    # ---- forward ------------------------------------------------------------------------------
    def forward(self, *inputs, **kwargs):
        syncing = is_grad_enabled() and self.require_backward_grad_sync
        if syncing:
            self._check_prior_reduction_finished()
        if self.broadcast_buffers and self._buffers_to_sync and self._world > 1 \
                and is_grad_enabled():
            self._sync_buffers()
        if self.device_ids:         # torch moves the inputs to the replica's device
            inputs, kwargs = _to_device((inputs, kwargs), self.device_ids[0])
        output = self.module(*inputs, **kwargs)
        if syncing:
            self._prepare_for_backward(output)
        else:
            self._pass = None
        return output

    def _check_prior_reduction_finished(self):
        state = self._pass
        if state is not None and state.touched:
            missing = " ".join(str(i) for i, p in enumerate(self._params)
                               if id(p) in state.due)
            raise RuntimeError(UNFINISHED_REDUCTION.format(rank=dist.get_rank(), missing=missing))

    def _prepare_for_backward(self, output):
        """Every parameter's gradient is due once (autograd sums a parameter's uses before its
        post-accumulate hook runs); with find_unused_parameters, those this output's graph
        does not reach count as ready (zeros) at once."""
        state = self._pass = _Pass(set(self._param_ids), len(self._buckets))
        for bucket in self._buckets:
            bucket.waiting = len(bucket.params)
            bucket.work = None
        if self.find_unused_parameters:
            reached = _leaves_reached(output, self._locate)
            state.used = {key: key in reached for key in self._param_ids}
            unused = [p for p in self._params if id(p) not in reached]
            for p in unused:
                b, i = self._locate[id(p)]
                self._buckets[b].take_zeros(i)
            for p in unused:
                state.due.discard(id(p))
                self._slot_filled(state, p)
        # else an unused parameter leaves the reduction unfinished, and (as in torch) the next
        # forward says so

    # ---- backward -----------------------------------------------------------------------------
    def _grad_ready(self, param):
        """Post-accumulate hook: param.grad holds this backward's gradient."""
        state = self._pass
        if state is None:
            return                      # no_sync, or a backward without a prepared forward
        key = id(param)
        # arrived already: a second backward through the graph before the reduction finished
        if key not in state.due:
            return
        state.due.remove(key)
        state.touched = True
        b, i = self._locate[key]
        self._buckets[b].take(i, param.grad)
        self._slot_filled(state, param)

    def _slot_filled(self, state, param):
        b, _ = self._locate[id(param)]
        bucket = self._buckets[b]
        bucket.waiting -= 1
        if bucket.waiting == 0:
            state.ready[b] = True
            self._launch_ready_buckets(state)
        else:
            self._progress(state)

    def _launch_ready_buckets(self, state):
        buckets, ready = self._buckets, state.ready
        # Once every remaining bucket is ready, backward has nothing left to overlap them
        # with: they are all-reduced blocking (a blocking all-reduce, with MPI's tuned
        # algorithms, beats a non-blocking one plus its wait); earlier ones start async.
        overlap = not all(ready[state.next_bucket:])
        while state.next_bucket < len(buckets) and ready[state.next_bucket]:
            bucket = buckets[state.next_bucket]
            bucket.work = dist.all_reduce(bucket.tensor, group=self.process_group,
                                          async_op=overlap)
            state.next_bucket += 1
        if state.next_bucket == len(buckets):
            self._finalize(state)

    def _progress(self, state):
        """MPI advances non-blocking collectives only inside MPI calls: poke the ones in
        flight so they move while backward computes."""
        for bucket in self._buckets[:state.next_bucket]:
            if bucket.work is not None:
                bucket.work.is_completed()

    def _finalize(self, state):
        """Wait for every bucket, then each .grad becomes the average over ranks."""
        used_anywhere = self._globally_used(state.used) if self.find_unused_parameters \
            else None
        for bucket in self._buckets:
            if bucket.work is not None:
                bucket.work.wait()
                bucket.work = None
            for i, averaged in bucket.results():
                p = bucket.params[i]
                if used_anywhere is not None and not used_anywhere[id(p)]:
                    continue                # unused on every rank: .grad stays as it was
                _write_grad(p, averaged)
            bucket.release()
        self._pass = None

    def _globally_used(self, used):
        from ...tensor import tensor as make_tensor
        flags = make_tensor([used[id(p)] for p in self._params], dtype=_uint8(),
                            device=self._params[0].device)     # NCCL reduces cuda tensors only
        dist.all_reduce(flags, op=dist.ReduceOp.MAX, group=self.process_group)
        return {id(p): bool(flag) for p, flag in zip(self._params, flags.tolist())}

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

    def extra_repr(self):
        return ""


class _Pass:
    """One backward's reduction: plain attributes, written by the gradient hooks (a Module's
    attribute assignment is checked for parameters and submodules, too slow for per-gradient
    bookkeeping)."""
    __slots__ = ("due", "ready", "next_bucket", "touched", "used")

    def __init__(self, due, bucket_count):
        self.due = due                  # ids of the parameters whose gradient has not arrived
        self.ready = [False] * bucket_count
        self.next_bucket = 0            # buckets start in index order on every rank
        self.touched = False            # some gradient arrived
        self.used = None                # id(param) -> used on this rank (find_unused_parameters)


def _to_device(tree, device_id):
    from ..._pytree import tree_map
    device = f"cuda:{device_id}" if isinstance(device_id, int) else device_id
    return tree_map(lambda x: x.to(device) if isinstance(x, Tensor) else x, tree)


def _uint8():
    from ... import dtypes
    return dtypes.uint8


def _write_grad(param, averaged):
    """Copy the averaged slot into param.grad in place (a zero-filled .grad for a parameter
    this rank did not use)."""
    grad = param.grad
    if grad is None:
        from ...tensor import zeros_like
        grad = param.grad = zeros_like(param)
    data = grad._data
    if data.is_compact():
        data.flat()[...] = averaged         # bytes moved (numpy or cupy), no arithmetic
    else:
        data.backend.strided_set(averaged, data.buffer, data.shape, data.strides, data.offset)


def _leaves_reached(output, wanted):
    """The ids of the leaves in `wanted` that the graph of the tensors in `output` reaches."""
    reached, seen, stack = set(), set(), []
    for item in leaves(output):
        if not isinstance(item, Tensor) or not item.requires_grad:
            continue
        if item.grad_fn is None:
            if id(item) in wanted:
                reached.add(id(item))
        elif item.grad_fn not in seen:
            seen.add(item.grad_fn)
            stack.append(item.grad_fn)
    while stack:
        node = stack.pop()
        for edge in node.next_edges:
            if edge is None:
                continue
            target, nr = edge
            if nr == -1:
                if id(target) in wanted:
                    reached.add(id(target))
            elif target not in seen:
                seen.add(target)
                stack.append(target)
    return reached
