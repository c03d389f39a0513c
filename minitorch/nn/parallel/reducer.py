"""DistributedDataParallel's reducer (torch's Reducer): during each synced backward, parameters'
gradients enter their buckets as autograd completes them, full buckets are all-reduced in
order, and the last one writes the averages back into .grad.

Its per-backward state lives in plain attributes, and each parameter's hook is a closure that
already knows its bucket: this runs once per parameter per step, where attribute assignment on
a Module (checked for parameters and submodules) or a dict lookup per call would show in a
small model's step."""
from ... import distributed as dist
from ..._pytree import leaves
from ...autograd import no_grad
from ...distributed.grad_bucket import GradBucket
from ...futures import Future
from ...dtypes import uint8
from ...tensor import Tensor, tensor, zeros_like

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


class Reducer:
    """The gradient averaging of one DDP module's parameters over `group`, in `buckets`."""

    def __init__(self, params, buckets, group, find_unused_parameters):
        self.params, self.buckets, self.group = params, buckets, group
        self.find_unused_parameters = find_unused_parameters
        self.active = False         # a reduction is prepared for the next backward
        self.due = set()            # ids of the parameters whose gradient has not arrived
        self.touched = False        # some gradient arrived in this reduction
        self.next_bucket = 0        # buckets start in index order on every rank (MPI's rule)
        self.used = None            # id(param) -> used on this rank (find_unused_parameters)
        self.comm_hook = None       # (state, hook) of register_comm_hook: reduces each bucket
        self.blocking = False       # every all-reduce blocking (join mode: see Join)
        self._all_ids = frozenset(id(p) for p in params)
        self._slot = {id(p): (bucket, i) for bucket in buckets
                      for i, p in enumerate(bucket.params)}
        self.hook_handles = [p.register_post_accumulate_grad_hook(self._hook_for(p))
                             for p in params]

    # ---- each forward -------------------------------------------------------------------------
    def check_prior_reduction_finished(self):
        if self.active and self.touched:
            missing = " ".join(str(i) for i, p in enumerate(self.params) if id(p) in self.due)
            raise RuntimeError(UNFINISHED_REDUCTION.format(rank=dist.get_rank(),
                                                           missing=missing))

    def prepare(self, output):
        """Every parameter's gradient is due once (autograd sums a parameter's uses before its
        post-accumulate hook runs); with find_unused_parameters, those this output's graph
        does not reach count as arrived (zeros) at once. Without it an unused parameter
        leaves the reduction unfinished, and (as in torch) the next forward says so."""
        self.due = set(self._all_ids)
        self.touched = False
        self.next_bucket = 0
        self.used = None
        self.active = True
        for bucket in self.buckets:
            bucket.waiting = len(bucket.params)
            bucket.work = None
        if self.find_unused_parameters:
            reached = _leaves_reached(output, self._all_ids)
            self.used = {key: key in reached for key in self._all_ids}
            unused = [p for p in self.params if id(p) not in reached]
            for p in unused:
                bucket, i = self._slot[id(p)]
                bucket.take_zeros(i)
            for p in unused:
                self.due.discard(id(p))
                self._filled(self._slot[id(p)][0])

    def cancel(self):
        """No reduction for the next backward (no_sync, or a forward without gradients)."""
        self.active = False

    # ---- backward -----------------------------------------------------------------------------
    def _hook_for(self, param):
        key = id(param)
        bucket, index = self._slot[key]

        def gradient_ready(param):
            """Post-accumulate hook: param.grad holds this backward's gradient (nothing to do
            outside a prepared reduction, or for a second backward through the same graph
            before the reduction finished)."""
            if not self.active or key not in self.due:
                return
            self.due.remove(key)
            self.touched = True
            bucket.take(index, param.grad)
            self._filled(bucket)
        return gradient_ready

    def _filled(self, bucket):
        bucket.waiting -= 1
        if bucket.waiting == 0:
            self._launch_ready_buckets()
        else:
            self._progress()

    def _launch_ready_buckets(self):
        buckets, start = self.buckets, self.next_bucket
        # Once every remaining bucket is ready, backward has nothing left to overlap them
        # with: they are all-reduced blocking (a blocking all-reduce, with MPI's tuned
        # algorithms, beats a non-blocking one plus its wait); earlier ones start async.
        overlap = not self.blocking and any(b.waiting for b in buckets[start:])
        i = start
        while i < len(buckets) and buckets[i].waiting == 0:
            bucket = buckets[i]
            if self.comm_hook is None:
                bucket.work = dist.all_reduce(bucket.tensor, group=self.group, async_op=overlap)
            else:
                bucket.work = HookedReduction(self.comm_hook, i, bucket, i == len(buckets) - 1)
            i += 1
        self.next_bucket = i
        if i == len(buckets):
            self._finalize()

    def _progress(self):
        """MPI advances non-blocking collectives only inside MPI calls: poke the ones in
        flight so they move while backward computes."""
        for bucket in self.buckets[:self.next_bucket]:
            if bucket.work is not None:
                bucket.work.is_completed()

    def _finalize(self):
        """Wait for every bucket, then each .grad becomes the average over ranks."""
        used_anywhere = self._globally_used() if self.find_unused_parameters else None
        for bucket in self.buckets:
            if bucket.work is not None:
                bucket.work.wait()
                bucket.work = None
            for i, averaged in bucket.results():
                p = bucket.params[i]
                if used_anywhere is not None and not used_anywhere[id(p)]:
                    continue                # unused on every rank: .grad stays as it was
                _write_grad(p, averaged)
            bucket.release()
        self.active = False

    def _globally_used(self):
        flags = tensor([self.used[id(p)] for p in self.params], dtype=uint8,
                            device=self.params[0].device)   # NCCL reduces cuda tensors only
        dist.all_reduce(flags, op=dist.ReduceOp.MAX, group=self.group)
        return {id(p): bool(flag) for p, flag in zip(self.params, flags.tolist())}


class HookedReduction:
    """A bucket reduced by a communication hook: the hook gets the bucket's gradients as a
    GradBucket and returns a Future of the reduced flat buffer, which lands in the bucket (a
    copy only when the hook's result is another tensor)."""
    __slots__ = ("future", "buffer")

    def __init__(self, comm_hook, index, bucket, is_last):
        state, hook = comm_hook
        self.buffer = bucket.tensor.view(-1)
        self.future = hook(state, GradBucket(index, self.buffer, bucket.params, is_last))
        if not isinstance(self.future, Future):
            raise RuntimeError(f"A communication hook must return a torch.futures.Future, got "
                               f"{type(self.future).__name__}")

    def is_completed(self):
        return self.future.done()

    def wait(self):
        result = self.future.wait()
        if isinstance(result, (list, tuple)) and len(result) == 1:
            result = result[0]
        if result is not self.buffer:
            if not isinstance(result, Tensor) or result.numel() != self.buffer.numel():
                raise RuntimeError(f"A communication hook's Future must hold the reduced "
                                   f"bucket, {self.buffer.numel()} elements: got {result!r}")
            with no_grad():
                self.buffer.copy_(result.reshape(-1))
        return True


def _write_grad(param, averaged):
    """Copy the averaged slot into param.grad in place (a zero-filled .grad for a parameter
    this rank did not use)."""
    grad = param.grad
    if grad is None:
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
