"""backend="nccl" on a real GPU with world size 1 (one GPU cannot hold two NCCL ranks): every
collective through CuPy's NCCL on cuda tensors, checked against numpy; ordering with our
kernels on the same stream; DistributedDataParallel training equal to plain training; the
rendezvous paths (no environment, MASTER_ADDR/PORT, tcp://). No MPI needed.
Started by tests/test_nccl_gpu.py; prints "ok N" when every check passed."""
import os
import socket

import numpy as np

import minitorch as mt
import minitorch.distributed as dist
import minitorch.nn as nn
import minitorch.nn.functional as F
from common import DTYPES, assert_close, check_scaled_bucket_takes, expect, rank_data

checks = 0


def on_gpu(array, dtype):
    return mt.tensor(array, dtype=dtype, device="cuda")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


dist.init_process_group("nccl")
assert dist.get_backend() == "nccl" and dist.get_world_size() == 1 and dist.get_rank() == 0

# every dtype and reduction: one rank's reduction is its own data (bfloat16 and int16, which
# NCCL lacks, go widened; the average of integers is a sum and a truncating division)
for name, dtype in DTYPES.items():
    expected = rank_data(0, (5, 3), name)
    ops = [dist.ReduceOp.SUM, dist.ReduceOp.MAX, dist.ReduceOp.MIN, dist.ReduceOp.PRODUCT]
    if name != "bool":
        ops.append(dist.ReduceOp.AVG)
    for op in ops:
        t = on_gpu(expected, dtype)
        dist.all_reduce(t, op=op)
        assert t.dtype is dtype, (name, t.dtype)
        assert_close(t.cpu(), expected, f"all_reduce {name} {op}")
    t = on_gpu(expected, dtype)
    dist.broadcast(t, src=0)
    assert_close(t.cpu(), expected, f"broadcast {name}")
    checks += 1

# the collectives of the API, contiguous and not
base = rank_data(0, (4, 6), "float32")
t = on_gpu(base, mt.float32)
view = t.t()                                  # compacted, reduced, written back
dist.all_reduce(view)
assert_close(t.cpu(), base, "all_reduce of a transposed view")
dist.reduce(t, dst=0)
assert_close(t.cpu(), base, "reduce")
out = mt.zeros(4, 6, device="cuda")
dist.all_gather_into_tensor(out, t)
assert_close(out.cpu(), base, "all_gather_into_tensor")
parts = [mt.zeros(4, 6, device="cuda")]
dist.all_gather(parts, t)
assert_close(parts[0].cpu(), base, "all_gather")
small = mt.zeros(4, 6, device="cuda")
dist.reduce_scatter_tensor(small, t)
assert_close(small.cpu(), base, "reduce_scatter_tensor")
gathered = [mt.zeros(4, 6, device="cuda")]
dist.gather(t, gathered, dst=0)
assert_close(gathered[0].cpu(), base, "gather")
scattered = mt.zeros(4, 6, device="cuda")
dist.scatter(scattered, [t], src=0)
assert_close(scattered.cpu(), base, "scatter")
exchanged = mt.zeros(24, device="cuda")
dist.all_to_all_single(exchanged, t.reshape(24))       # grouped send and receive to itself
assert_close(exchanged.cpu(), base.ravel(), "all_to_all_single")
checks += 8

# queued on the stream of our kernels: a kernel before and after sees the collective's order,
# with no host synchronization in between
big = mt.arange(1 << 20, dtype=mt.float32, device="cuda")
doubled = big * 2
work = dist.all_reduce(doubled, async_op=True)
after = doubled + 1
assert work.wait() and work.is_completed()
assert_close(after.cpu(), np.arange(1 << 20, dtype=np.float32) * 2 + 1, "ordering on the stream")
dist.barrier()
objects = [None]
dist.all_gather_object(objects, {"rank": 0, "data": [1, 2]})
assert objects == [{"rank": 0, "data": [1, 2]}], objects
listed = ["x", 2, None]
dist.broadcast_object_list(listed, src=0)
assert listed == ["x", 2, None], listed
checks += 3

expect(RuntimeError, "No backend type associated with device type cpu",
       lambda: dist.all_reduce(mt.ones(2)))
expect(RuntimeError, "receiving from any source is not supported",
       lambda: dist.recv(mt.ones(2, device="cuda")))
checks += 1

# DDP on cuda: 5 SGD steps equal plain training of the same model (the average of one rank's
# gradients is that gradient), with a bucket of small parameters and a solo large one
def model_and_copy():
    mt.manual_seed(0)
    model = nn.Sequential(nn.Linear(20, 256), nn.ReLU(), nn.Linear(256, 300), nn.ReLU(),
                          nn.Linear(300, 4)).to("cuda")
    twin = nn.Sequential(nn.Linear(20, 256), nn.ReLU(), nn.Linear(256, 300), nn.ReLU(),
                         nn.Linear(300, 4)).to("cuda")
    twin.load_state_dict(model.state_dict())
    return model, twin


model, plain = model_and_copy()
ddp = nn.parallel.DistributedDataParallel(model, device_ids=[0])
optimizers = [mt.optim.SGD(m.parameters(), lr=0.1) for m in (ddp, plain)]
rng = np.random.default_rng(0)
for step in range(5):
    x = mt.tensor(rng.standard_normal((16, 20)).astype(np.float32), device="cuda")
    y = mt.tensor(rng.integers(0, 4, 16), device="cuda")
    for net, optimizer in zip((ddp, plain), optimizers):
        optimizer.zero_grad()
        F.cross_entropy(net(x), y).backward()
        optimizer.step()
for (key, ours), theirs in zip(model.state_dict().items(), plain.state_dict().values()):
    assert_close(ours.cpu(), theirs.cpu().numpy(), f"DDP parameter {key}", rtol=1e-5, atol=1e-6)
assert list(ddp.state_dict())[0] == "module.0.weight"
with ddp.no_sync():
    F.cross_entropy(ddp(x), y).backward()
checks += 2

check_scaled_bucket_takes("cuda")
checks += 1
dist.destroy_process_group()
assert not dist.is_initialized()

# the other rendezvous paths, then a second job in the same process
os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()))
dist.init_process_group("nccl", init_method="env://", world_size=1, rank=0)
t = on_gpu(base, mt.float32)
dist.all_reduce(t, op=dist.ReduceOp.AVG)
assert_close(t.cpu(), base, "all_reduce after env:// rendezvous")
dist.destroy_process_group()
dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{free_port()}", world_size=1,
                        rank=0)
group = dist.new_group([0])
dist.all_reduce(t, group=group)
assert_close(t.cpu(), base, "all_reduce on a new group")
dist.destroy_process_group()
checks += 2
print(f"ok {checks}", flush=True)
