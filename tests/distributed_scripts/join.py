"""DDP's join() with uneven inputs on every rank of one mpiexec launch (started by
tests/test_distributed.py): rank r trains on STEPS - r batches; the result equals one process
replaying the same averages (over the initial world size, or over the ranks still training),
every rank ends with the same model and buffers, and throw_on_early_termination raises on all
ranks. Prints "rank R ok N" when every check passed."""
import numpy as np

import minitorch as mt
import minitorch.distributed as dist
import minitorch.nn as nn
import minitorch.nn.functional as F
from common import assert_close

dist.init_process_group("mpi")
rank, world = dist.get_rank(), dist.get_world_size()
STEPS, PER_RANK = 5, 4


def model():
    mt.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 5), nn.BatchNorm1d(5), nn.ReLU(), nn.Linear(5, 3))


def batch(r, step):
    rng = np.random.default_rng(100 * r + step)
    return (mt.tensor(rng.standard_normal((PER_RANK, 6)).astype(np.float32)),
            mt.tensor(rng.integers(0, 3, PER_RANK)))


def steps_of(r):
    return STEPS - r                 # uneven: rank 0 has the most


def reference(divide_by_initial):
    """One process replaying every iteration: the gradients of the ranks still training,
    summed, divided by the world size or by their count. (BatchNorm's statistics in train
    mode come from each rank's own batch, its running buffers from rank 0's, as DDP's
    broadcast makes them.)"""
    net = model()
    optimizer = mt.optim.SGD(net.parameters(), lr=0.1)
    for step in range(steps_of(0)):
        training = [r for r in range(world) if step < steps_of(r)]
        total = [mt.zeros_like(p) for p in net.parameters()]
        buffers = [b.clone() for b in net.buffers()]
        for r in training:
            for b, saved in zip(net.buffers(), buffers):
                b.copy_(saved)
            net.zero_grad()
            images, labels = batch(r, step)
            F.cross_entropy(net(images), labels).backward()
            for t, p in zip(total, net.parameters()):
                t.add_(p.grad)
            if r == training[0]:
                kept = [b.clone() for b in net.buffers()]
        for b, value in zip(net.buffers(), kept):
            b.copy_(value)
        divisor = world if divide_by_initial else len(training)
        for p, t in zip(net.parameters(), total):
            p.grad = t / divisor
        optimizer.step()
    return net


def train(divide_by_initial):
    net = model()
    ddp = nn.parallel.DistributedDataParallel(net)
    optimizer = mt.optim.SGD(ddp.parameters(), lr=0.1)
    with ddp.join(divide_by_initial_world_size=divide_by_initial):
        for step in range(steps_of(rank)):
            optimizer.zero_grad()
            images, labels = batch(rank, step)
            F.cross_entropy(ddp(images), labels).backward()
            optimizer.step()
    return net


checks = 0
for divide_by_initial in (True, False):
    ours, expected = train(divide_by_initial), reference(divide_by_initial)
    for (name, got), want in zip(ours.state_dict().items(), expected.state_dict().values()):
        assert_close(got, want.numpy(), f"join {divide_by_initial} {name}", rtol=1e-4,
                     atol=1e-5)
        gathered = [None] * world
        dist.all_gather_object(gathered, got.numpy().tolist())
        assert all(g == gathered[0] for g in gathered), name     # one model on every rank
    checks += 1

# throw_on_early_termination: every rank raises once one runs out
net = model()
ddp = nn.parallel.DistributedDataParallel(net)
raised = None
try:
    with ddp.join(throw_on_early_termination=True):
        for step in range(steps_of(rank)):
            images, labels = batch(rank, step)
            F.cross_entropy(ddp(images), labels).backward()
except RuntimeError as error:
    raised = str(error)
if world > 1:
    last = world - 1                 # the rank with the fewest inputs joins first
    expected = f"Rank {last} exhausted all inputs." if rank == last else \
        "Detected at least one rank that exhausted inputs. Throwing across all ranks."
    assert raised == expected, (raised, expected)
checks += 1

# after a join, training without one goes on as before (the averaging factor restored)
ddp = nn.parallel.DistributedDataParallel(nn.Linear(2, 1, bias=False))
ddp.module.weight.data.fill_(0.0)
ddp(mt.full((1, 2), float(rank + 1))).sum().backward()
assert_close(ddp.module.weight.grad, np.full((1, 2), (world + 1) / 2, np.float32), "after")
checks += 1

dist.destroy_process_group()
print(f"rank {rank} ok {checks}", flush=True)
