"""DistributedDataParallel on every rank against single-process training on the global batch
(started by tests/test_distributed.py, directly or through minitorch.distributed.run); prints
"rank R ok N" when every check passed."""
import os

import numpy as np

import minitorch as mt
import minitorch.distributed as dist
import minitorch.nn as nn
import minitorch.nn.functional as F
from common import assert_close, expect
from minitorch.distributed.algorithms.ddp_comm_hooks import default_hooks
from minitorch.nn.parallel.buckets import SoloBucket

dist.init_process_group("mpi")
rank, world = dist.get_rank(), dist.get_world_size()
if "LAUNCHED_BY_RUN" in os.environ:       # the launcher's torchrun environment
    assert os.environ["RANK"] == str(rank) and os.environ["WORLD_SIZE"] == str(world)
    assert os.environ["LOCAL_RANK"] == str(rank) and "MASTER_PORT" in os.environ
PER_RANK, STEPS = 4, 20


def mlp():
    return nn.Sequential(nn.Flatten(), nn.Linear(36, 16), nn.ReLU(), nn.Linear(16, 5))


def cnn():
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(4, 6, 3), nn.ReLU(), nn.Flatten(), nn.Linear(6, 5))


def global_batch(step, micro=0):
    rng = np.random.default_rng(100 * step + micro)
    images = rng.standard_normal((PER_RANK * world, 1, 6, 6)).astype(np.float32)
    labels = rng.integers(0, 5, PER_RANK * world)
    return mt.tensor(images), mt.tensor(labels)


def shard(t):
    return t[rank * PER_RANK:(rank + 1) * PER_RANK]


def train(build, distributed, bucket_cap_mb=None, as_views=False, hook=None, state=None):
    mt.manual_seed(rank if distributed else 0)     # DDP must broadcast rank 0's weights
    model = build()
    net = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=bucket_cap_mb,
                                              gradient_as_bucket_view=as_views) \
        if distributed else model
    if hook is not None:
        net.register_comm_hook(state, hook)
    optimizer = mt.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    for step in range(STEPS):
        images, labels = global_batch(step)
        if distributed:
            images, labels = shard(images), shard(labels)
        optimizer.zero_grad()
        F.cross_entropy(net(images), labels).backward()
        optimizer.step()
    return [p.detach().numpy() for p in model.parameters()]


checks = 0
for build in (mlp, cnn):
    reference = train(build, False)
    for cap in (None, 0.0005):             # one bucket; several (in-order launches)
        for as_views in (False, True):
            for got, want in zip(train(build, True, cap, as_views), reference):
                assert_close(got, want, f"DDP {build.__name__} bucket_cap_mb={cap} "
                             f"gradient_as_bucket_view={as_views}", rtol=1e-4, atol=1e-5)
            checks += 1

# communication hooks: torch's allreduce_hook trains as DDP's own average; a hook returning a
# new tensor (copied into the bucket) sees each bucket once per backward, in order
def blocking_average(seen, bucket):
    seen.append((bucket.index(), bucket.is_last(), [g.shape for g in bucket.gradients()],
                 [p.shape for p in bucket.parameters()]))
    averaged = bucket.buffer() / world
    dist.all_reduce(averaged)
    future = mt.futures.Future()
    future.set_result(averaged)
    return future


for build in (mlp, cnn):
    reference = train(build, False)
    for cap in (None, 0.0005):             # one shared bucket; every parameter in its own
        for got, want in zip(train(build, True, cap, hook=default_hooks.allreduce_hook),
                             reference):
            assert_close(got, want, f"allreduce_hook {build.__name__} bucket_cap_mb={cap}",
                         rtol=1e-4, atol=1e-5)
        seen = []
        for got, want in zip(train(build, True, cap, hook=blocking_average, state=seen),
                             reference):
            assert_close(got, want, f"custom hook {build.__name__} bucket_cap_mb={cap}",
                         rtol=1e-4, atol=1e-5)
        per_step = len(seen) // STEPS
        assert [index for index, *_ in seen] == list(range(per_step)) * STEPS, seen
        assert [last for _, last, *_ in seen] == ([False] * (per_step - 1) + [True]) * STEPS
        assert all(grads == params for *_, grads, params in seen)
        checks += 2

mt.manual_seed(0)
layer = nn.Linear(30, 4)
ddp = nn.parallel.DistributedDataParallel(layer)
ddp(mt.full((2, 30), float(rank + 1))).sum().backward()
expected = [layer.weight.grad.clone(), layer.bias.grad.clone()]
for hook in (default_hooks.fp16_compress_hook, default_hooks.bf16_compress_hook):
    mt.manual_seed(0)
    layer = nn.Linear(30, 4)
    ddp = nn.parallel.DistributedDataParallel(layer)
    ddp.register_comm_hook(None, hook)
    ddp(mt.full((2, 30), float(rank + 1))).sum().backward()
    for got, want in zip((layer.weight.grad, layer.bias.grad), expected):
        assert got.dtype is mt.float32
        assert_close(got, want.numpy(), hook.__name__, rtol=1e-2, atol=1e-2)
    expect(RuntimeError, "can only be called once",
           lambda: ddp.register_comm_hook(None, default_hooks.allreduce_hook))
    expect(TypeError, "must be callable", lambda: nn.parallel.DistributedDataParallel(
        nn.Linear(2, 2)).register_comm_hook(None, 3))
    checks += 1

# gradient_as_bucket_view: each .grad is its bucket's memory, holding the average, also when
# gradients accumulate across backwards without zero_grad
mt.manual_seed(0)
model = mlp()
ddp = nn.parallel.DistributedDataParallel(model, gradient_as_bucket_view=True)
sums = [np.zeros(p.shape) for p in model.parameters()]
for micro in range(2):
    images, labels = global_batch(0, micro)
    full = mlp()
    full.load_state_dict(model.state_dict())
    F.cross_entropy(full(images), labels).backward()    # the global batch's mean gradient
    for total, p in zip(sums, full.parameters()):
        total += p.grad.numpy()
    F.cross_entropy(ddp(shard(images)), shard(labels)).backward()
bucket = ddp._buckets[0]
for p, total in zip(model.parameters(), sums):
    assert_close(p.grad, total.astype(np.float32), "gradient_as_bucket_view accumulation",
                 rtol=1e-4, atol=1e-5)
    start = bucket.tensor.data_ptr()
    assert start <= p.grad.data_ptr() < start + bucket.tensor.numel() * 4, "grad is a view"
checks += 1

# no_sync: two local micro-batches accumulate, the third backward averages the sums
mt.manual_seed(0)
reference = mlp()
for micro in range(3):
    images, labels = global_batch(0, micro)
    F.cross_entropy(reference(images), labels).backward()
mt.manual_seed(0)
model = mlp()
ddp = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=0.0005)
with ddp.no_sync():
    for micro in range(2):
        images, labels = global_batch(0, micro)
        F.cross_entropy(ddp(shard(images)), shard(labels)).backward()
images, labels = global_batch(0, 2)
F.cross_entropy(ddp(shard(images)), shard(labels)).backward()
for p, want in zip(model.parameters(), reference.parameters()):
    assert_close(p.grad, want.grad.numpy(), "no_sync accumulation", rtol=1e-4, atol=1e-6)
checks += 1


class TwoHeads(nn.Module):
    """Rank 0 never uses `second`; `unused` is used by nobody."""

    def __init__(self, width=2):
        super().__init__()
        self.first, self.second, self.unused = (nn.Linear(3, width), nn.Linear(3, width),
                                                nn.Linear(3, width))

    def forward(self, x):
        out = self.first(x)
        return out + self.second(x) if rank else out


mt.manual_seed(0)
heads = TwoHeads()
ddp = nn.parallel.DistributedDataParallel(heads, find_unused_parameters=True)
x = mt.full((2, 3), 1.0 + rank)
ddp(x).sum().backward()
expected_second = sum(np.full((2, 3), 2.0 * (1.0 + r)) for r in range(1, world)) / world
assert_close(heads.second.weight.grad, expected_second.astype(np.float32), "unused on rank 0")
assert heads.unused.weight.grad is None, "a parameter unused everywhere keeps grad None"
checks += 1

# the same with buckets of one parameter (all-reduced in its .grad; a stand-in for `second`)
mt.manual_seed(0)
heads = TwoHeads(width=64)
ddp = nn.parallel.DistributedDataParallel(heads, find_unused_parameters=True,
                                          bucket_cap_mb=0.0005)
solo = [b.params[0] for b in ddp._buckets if isinstance(b, SoloBucket)]
assert [id(p) for p in solo] == [id(heads.unused.weight), id(heads.second.weight),
                                 id(heads.first.weight)], "solo buckets"
ddp(x).sum().backward()
expected_second = sum(np.full((64, 3), 2.0 * (1.0 + r)) for r in range(1, world)) / world
assert_close(heads.second.weight.grad, expected_second.astype(np.float32), "solo, unused on 0")
assert heads.unused.weight.grad is None, "a solo parameter unused everywhere keeps grad None"
checks += 1

# gradient_as_bucket_view: `first` (a bucket view after the first backward) goes unused on
# every rank in the second; without zero_grad its .grad must stay what the first one left
mt.manual_seed(0)
heads = TwoHeads()
ddp = nn.parallel.DistributedDataParallel(heads, find_unused_parameters=True,
                                          gradient_as_bucket_view=True)
ddp(x).sum().backward()
first = heads.first.weight.grad.numpy().copy()
assert_close(first, np.full((2, 3), sum(2.0 * (1.0 + r) for r in range(world)) / world,
                            np.float32),
             "bucket view, first backward")
ddp.module.forward = lambda x: heads.second(x) * 0 + heads.unused(x)   # `first` unused
ddp(x).sum().backward()
assert_close(heads.first.weight.grad, first, "bucket view unused everywhere keeps its grad")
checks += 1


class Transposed(nn.Module):
    """A weight used transposed: its gradient arrives as a non-contiguous view."""

    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(mt.randn(5, 36))

    def forward(self, x):
        return x.flatten(1) @ self.weight.t()


for cap in (None, 0.0005):
    reference = train(Transposed, False)
    for got, want in zip(train(Transposed, True, cap), reference):
        assert_close(got, want, f"DDP transposed weight bucket_cap_mb={cap}", rtol=1e-4,
                     atol=1e-5)
    checks += 1

class Tied(nn.Module):
    """One weight used twice in the model and once more in the loss (outside DDP's output):
    autograd sums its three gradients before DDP's hook sees it."""

    def __init__(self):
        super().__init__()
        self.inner = nn.Linear(36, 36)
        self.head = nn.Linear(36, 5)

    def forward(self, x):
        x = x.flatten(1)
        return self.head(F.relu(self.inner(F.relu(self.inner(x)))))


def train_tied(distributed):
    mt.manual_seed(0)
    model = Tied()
    net = nn.parallel.DistributedDataParallel(model) if distributed else model
    optimizer = mt.optim.SGD(net.parameters(), lr=0.1)
    for step in range(STEPS):
        images, labels = global_batch(step)
        if distributed:
            images, labels = shard(images), shard(labels)
        optimizer.zero_grad()
        penalty = 1e-3 * (model.inner.weight ** 2).sum()     # averaged: the same on each rank
        (F.cross_entropy(net(images), labels) + penalty).backward()
        optimizer.step()
    return [p.detach().numpy() for p in model.parameters()]


for got, want in zip(train_tied(True), train_tied(False)):
    assert_close(got, want, "DDP with a weight used three times", rtol=1e-4, atol=1e-5)
checks += 1

# 16-bit parameters: their gradients are scaled in a widened kernel, and bfloat16 (which MPI
# cannot add) is all-reduced as float32; rank r's input is r + 1, so the average weight
# gradient is the mean of (r + 1) * 3 over ranks (exact in 16 bits for these few ranks)
for dtype in (mt.float16, mt.bfloat16):
    for cap in (None, 0.0005):     # a weight in the shared bucket, then in its own (in place)
        mt.manual_seed(0)
        layer = nn.Linear(40, 8).to(dtype)
        ddp = nn.parallel.DistributedDataParallel(layer, bucket_cap_mb=cap)
        ddp(mt.full((3, 40), float(rank + 1), dtype=dtype)).sum().backward()
        mean = 3 * (world + 1) / 2
        assert_close(layer.weight.grad, np.full((8, 40), mean, np.float32 if dtype is
                     mt.bfloat16 else np.float16), f"DDP {dtype} weight, cap {cap}")
        assert_close(layer.bias.grad, np.full(8, 3, np.float32 if dtype is mt.bfloat16 else
                     np.float16), f"DDP {dtype} bias, cap {cap}")
        checks += 1

# buffers follow rank 0 at each forward (broadcast_buffers)
norm = nn.BatchNorm1d(3)
ddp = nn.parallel.DistributedDataParallel(norm)
norm.running_mean.fill_(float(rank))
ddp(mt.ones(4, 3))
assert_close(norm.running_mean, np.full(3, 0.9 * 0.0 + 0.1 * 1.0, np.float32), "buffers")
checks += 1

dist.destroy_process_group()
print(f"rank {rank} ok {checks}", flush=True)
