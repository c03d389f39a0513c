"""mt.distributed's argument checking and torch's errors in one plain process (MPI world size
1, no mpiexec), started by tests/test_distributed.py; prints "ok N" when every check passed."""
import datetime

import numpy as np

import minitorch as mt
import minitorch.distributed as dist
import minitorch.nn as nn
from common import assert_close, expect

checks = []


def check(name):
    def register(fn):
        checks.append((name, fn))
        return fn
    return register


NOT_INIT = "Default process group has not been initialized"
expect(ValueError, NOT_INIT, lambda: dist.barrier())
expect(ValueError, NOT_INIT, lambda: nn.parallel.DistributedDataParallel(nn.Linear(2, 2)))
expect(ValueError, "world_size=4 does not match", lambda: dist.init_process_group(
    "mpi", world_size=4, rank=0))
assert not dist.is_initialized()
dist.init_process_group("mpi", timeout=datetime.timedelta(seconds=20))
assert dist.is_initialized() and dist.get_backend() == "mpi" and dist.get_world_size() == 1


@check("init twice")
def _():
    expect(ValueError, "trying to initialize the default process group twice!",
           lambda: dist.init_process_group("mpi"))


@check("argument types")
def _():
    expect(TypeError, "Expected parameter `tensor` of type torch.Tensor",
           lambda: dist.all_reduce([mt.ones(2)]))
    expect(TypeError, "incompatible function arguments", lambda: dist.all_reduce(mt.ones(2),
                                                                                  op="sum"))
    expect(ValueError, "Group 5 is not registered", lambda: dist.get_rank(group=5))


@check("ranks")
def _():
    expect(RuntimeError, "ProcessGroupMPI::broadcast: invalid root rank: 3",
           lambda: dist.broadcast(mt.ones(2), src=3))
    expect(ValueError, "Invalid destination rank: destination rank should not be the same",
           lambda: dist.send(mt.ones(2), dst=0))
    expect(ValueError, "Invalid source rank", lambda: dist.recv(mt.ones(2), src=0))
    expect(ValueError, "Must specify global_rank or group_rank",
           lambda: dist.broadcast(mt.ones(2)))
    expect(ValueError, "Can't specify both group_rank and global_rank",
           lambda: dist.reduce(mt.ones(2), dst=0, group_dst=0))
    gathered = [mt.zeros(2)]
    dist.gather(mt.ones(2), gathered)          # gather and scatter default to rank 0
    assert_close(gathered[0], np.ones(2, np.float32), "gather to rank 0 by default")


@check("sizes and dtypes")
def _():
    expect(RuntimeError, "invalid output tensor list at index 0 (expected length 1, got 2)",
           lambda: dist.all_gather([mt.zeros(3), mt.zeros(3)], mt.ones(3)))
    expect(RuntimeError, "invalid tensor size at index 0 (expected (3), got (5))",
           lambda: dist.all_gather([mt.zeros(5)], mt.ones(3)))
    expect(RuntimeError, "invalid tensor type at index 0",
           lambda: dist.all_gather([mt.zeros(3, dtype=mt.float64)], mt.ones(3)))
    expect(ValueError, "world size (1) times the elements",
           lambda: dist.all_gather_into_tensor(mt.zeros(5), mt.ones(3)))
    expect(RuntimeError, "must have the same dtype",
           lambda: dist.all_gather_into_tensor(mt.zeros(3, dtype=mt.float64), mt.ones(3)))
    expect(ValueError, "world size (1) times the elements",
           lambda: dist.reduce_scatter_tensor(mt.zeros(5), mt.ones(3)))
    expect(RuntimeError, "Split sizes doesn't match total dim 0 size",
           lambda: dist.all_to_all_single(mt.zeros(4), mt.ones(4), [2], [4]))
    expect(RuntimeError, "Number of tensor splits not equal to group size",
           lambda: dist.all_to_all_single(mt.zeros(4), mt.ones(4), [2, 2], [4]))
    expect(ValueError, "Argument ``gather_list`` must be specified on destination rank.",
           lambda: dist.gather(mt.ones(3), None, dst=0))
    expect(ValueError, "Argument ``scatter_list`` must be specified on source rank.",
           lambda: dist.scatter(mt.ones(3), None, src=0))
    expect(RuntimeError, "Incorrect input list size 2",
           lambda: dist.scatter(mt.ones(3), [mt.zeros(3), mt.zeros(3)], src=0))


@check("bad input changes nothing")
def _():
    out = mt.full((5,), 7.0)
    expect(ValueError, "times the elements", lambda: dist.all_gather_into_tensor(out, mt.ones(3)))
    assert_close(out, np.full(5, 7.0, np.float32), "untouched output")


@check("in place, views and autograd")
def _():
    base = mt.arange(12.0).reshape(3, 4)
    view = base[:, 1:3]                      # strided: compacted, then written back
    dist.all_reduce(view, op=dist.ReduceOp.MAX)
    assert_close(base, np.arange(12.0, dtype=np.float32).reshape(3, 4), "view")
    leaf = mt.ones(3, requires_grad=True)
    version = leaf._version_counter
    dist.all_reduce(leaf.detach())
    assert leaf._version_counter == version + 1, "collectives bump the version counter"
    empty = mt.zeros(0)
    dist.all_reduce(empty)
    pointer = base.data_ptr()
    dist.broadcast(base, src=0)
    assert base.data_ptr() == pointer


@check("work handles")
def _():
    t = mt.ones(4)
    work = dist.all_reduce(t, op=dist.ReduceOp.AVG, async_op=True)
    assert work.wait() and work.is_completed()
    assert_close(t, np.ones(4, np.float32), "avg")
    assert dist.barrier(async_op=True).wait()


@check("objects")
def _():
    objects = [None]
    dist.all_gather_object(objects, {"a": [1, 2]})
    assert objects == [{"a": [1, 2]}]
    listed = [3, "x"]
    dist.broadcast_object_list(listed, src=0)
    assert listed == [3, "x"]


@check("ddp")
def _():
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    ddp = nn.parallel.DistributedDataParallel(model)
    assert ddp.module is model
    assert list(ddp.state_dict()) == ["module." + k for k in model.state_dict()]
    frozen = nn.Linear(2, 2)
    for p in frozen.parameters():
        p.requires_grad_(False)
    expect(RuntimeError, "DistributedDataParallel is not needed",
           lambda: nn.parallel.DistributedDataParallel(frozen))

    class Partial(nn.Module):
        def __init__(self):
            super().__init__()
            self.used, self.idle = nn.Linear(2, 2), nn.Linear(2, 2)

        def forward(self, x):
            return self.used(x)

    partial = nn.parallel.DistributedDataParallel(Partial())
    partial(mt.ones(1, 2)).sum().backward()
    expect(RuntimeError, "Expected to have finished reduction in the prior iteration",
           lambda: partial(mt.ones(1, 2)))
    expect(RuntimeError, "Parameter indices which did not receive grad for rank 0: 2 3\n",
           lambda: partial(mt.ones(1, 2)))
    with mt.no_grad():                    # evaluation never prepares a reduction
        ddp(mt.ones(2, 3))
        ddp(mt.ones(2, 3))


@check("groups and destroy")
def _():
    group = dist.new_group([0])
    assert dist.get_world_size(group) == 1 and dist.get_process_group_ranks(group) == [0]
    expect(ValueError, "the new group's world size should be less or equal",
           lambda: dist.new_group([0, 1]))
    dist.destroy_process_group(group)
    expect(ValueError, "is not registered", lambda: dist.all_reduce(mt.ones(1), group=group))


for name, fn in checks:
    try:
        fn()
    except Exception as error:
        raise AssertionError(f"check {name!r} failed: {error}") from error
dist.destroy_process_group()
expect(AssertionError, "Process group cannot be None", dist.destroy_process_group)
expect(ValueError, NOT_INIT, lambda: dist.get_rank())
dist.init_process_group("mpi")             # again after destroy, as torch allows
dist.destroy_process_group()
print(f"ok {len(checks)}", flush=True)
