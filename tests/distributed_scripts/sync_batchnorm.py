"""SyncBatchNorm and the differentiable collectives (mt.distributed.nn) on every rank against one
process computing on the global batch (started by tests/test_distributed.py under mpiexec, ranks
holding batches of different sizes); prints "rank R ok" when every check passed."""
import numpy as np

import minitorch as mt
import minitorch.distributed as dist
import minitorch.distributed.nn as dist_nn
import minitorch.nn as nn
import minitorch.nn.functional as F
from common import assert_close

dist.init_process_group("mpi")
rank, world = dist.get_rank(), dist.get_world_size()
SIZES = [rank_size + 1 for rank_size in range(world)]          # rank r holds r + 1 samples
START = sum(SIZES[:rank])


def mine(array):
    return mt.tensor(array[START:START + SIZES[rank]], requires_grad=True)


def check_batch_norm_of_the_global_batch():
    rng = np.random.default_rng(7)
    images = rng.standard_normal((sum(SIZES), 3, 4, 5))
    weights = rng.standard_normal(images.shape)
    reference, synced = nn.BatchNorm2d(3).double(), nn.SyncBatchNorm(3).double()
    with mt.no_grad():
        for norm in (reference, synced):
            norm.weight.copy_(mt.tensor([0.5, 2.0, -1.0], dtype=mt.float64))
            norm.bias.copy_(mt.tensor([0.1, 0.0, 3.0], dtype=mt.float64))
    whole = mt.tensor(images, requires_grad=True)
    expected = reference(whole)
    (expected * mt.tensor(weights)).sum().backward()
    part = mine(images)
    out = synced(part)
    (out * mt.tensor(weights[START:START + SIZES[rank]])).sum().backward()
    span = slice(START, START + SIZES[rank])
    assert_close(out.detach(), expected.detach().numpy()[span], "output", 1e-10, 1e-12)
    assert_close(part.grad, whole.grad.numpy()[span], "input gradient", 1e-10, 1e-12)
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        assert_close(getattr(synced, name), getattr(reference, name).numpy(), name, 1e-12, 1e-12)
    for name in ("weight", "bias"):     # per rank: their sum over ranks is the global gradient
        grad = getattr(synced, name).grad.clone()
        dist.all_reduce(grad)
        assert_close(grad, getattr(reference, name).grad.numpy(), f"{name} gradient", 1e-10,
                     1e-12)
    synced.eval()                                   # evaluation: running statistics, no sync
    assert_close(synced(part).detach(), reference.eval()(whole).detach().numpy()[span],
                 "eval output", 1e-10, 1e-12)


def check_differentiable_collectives():
    rng = np.random.default_rng(3)
    parts = [rng.standard_normal((2, 3)) for _ in range(world)]
    x = mt.tensor(parts[rank], requires_grad=True)
    total = dist_nn.all_reduce(x * (rank + 1))
    assert_close(total.detach(), sum(p * (r + 1) for r, p in enumerate(parts)), "all_reduce")
    (total * total).sum().backward()        # every rank's loss uses the same total
    assert_close(x.grad, 2 * world * (rank + 1) * total.detach().numpy(), "all_reduce grad")
    x.grad = None
    gathered = dist_nn.all_gather(x)
    assert len(gathered) == world
    for r, t in enumerate(gathered):
        assert_close(t.detach(), parts[r], f"all_gather slot {r}")
    loss = sum((t * (r + 1 + rank)).sum() for r, t in enumerate(gathered))
    loss.backward()
    # this rank's x reached slot `rank` on every rank q, weighted (rank + 1 + q) there
    expected = sum(rank + 1 + q for q in range(world)) * np.ones((2, 3))
    assert_close(x.grad, expected, "all_gather grad")
    assert (x.grad is not None) and float(np.abs(parts[rank]).sum()) > 0


def check_converted_model_trains_like_the_global_batch():
    """DDP over a model converted with convert_sync_batchnorm takes the steps one process takes
    on the global batch (equal shards here, so the averaged loss is the global mean)."""
    rng = np.random.default_rng(11)
    batches = [(rng.standard_normal((2 * world, 2, 4, 4)), rng.integers(0, 3, 2 * world))
               for _ in range(3)]

    def build():
        mt.manual_seed(0)
        return nn.Sequential(nn.Conv2d(2, 3, 3, padding=1), nn.BatchNorm2d(3), nn.ReLU(),
                             nn.Flatten(), nn.Linear(48, 3)).double()
    single, converted = build(), nn.SyncBatchNorm.convert_sync_batchnorm(build())
    assert isinstance(converted[1], nn.SyncBatchNorm)
    ddp = nn.parallel.DistributedDataParallel(converted)
    optimizers = [mt.optim.SGD(m.parameters(), lr=0.1) for m in (single, ddp)]
    for images, labels in batches:
        for model, optimizer, span in ((single, optimizers[0], slice(None)),
                                       (ddp, optimizers[1], slice(2 * rank, 2 * rank + 2))):
            optimizer.zero_grad()
            F.cross_entropy(model(mt.tensor(images[span])), mt.tensor(labels[span])).backward()
            optimizer.step()
    for (name, a), b in zip(single.state_dict().items(), converted.state_dict().values()):
        assert_close(b, a.numpy(), f"after 3 steps: {name}", 1e-9, 1e-11)


check_batch_norm_of_the_global_batch()
check_differentiable_collectives()
check_converted_model_trains_like_the_global_batch()
dist.destroy_process_group()
print(f"rank {rank} ok")
