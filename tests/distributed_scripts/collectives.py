"""Every collective and dtype of mt.distributed against numpy, on all ranks of one mpiexec
launch (started by tests/test_distributed.py); prints "rank R ok N" when every check passed."""
import datetime
import time

import numpy as np

import minitorch as mt
import minitorch.distributed as dist
from common import DTYPES, assert_close, expect, rank_data

dist.init_process_group("mpi")
rank, world = dist.get_rank(), dist.get_world_size()
checks = 0


def everyone(shape, name, salt=0):
    return [rank_data(r, shape, name, salt) for r in range(world)]


def mine(shape, name, salt=0):
    return mt.tensor(rank_data(rank, shape, name, salt), dtype=DTYPES[name])


def reduce_numpy(arrays, op, name):
    stacked = np.stack(arrays)
    if name == "bool":
        return stacked.any(0) if op in ("SUM", "MAX") else stacked.all(0)
    result = {"SUM": stacked.sum(0), "PRODUCT": stacked.prod(0), "MIN": stacked.min(0),
              "MAX": stacked.max(0)}.get(op)
    if op == "AVG":
        total = stacked.sum(0)
        result = total / world if total.dtype.kind == "f" else np.trunc(total / world)
    return result.astype(arrays[0].dtype)


for name in DTYPES:
    ops = ["SUM", "PRODUCT", "MIN", "MAX"] + ([] if name == "bool" else ["AVG"])
    for op in ops:
        for layout in ("contiguous", "transposed", "async"):
            t = mine((3, 4), name, salt=len(op))
            expected = reduce_numpy(everyone((3, 4), name, salt=len(op)), op, name)
            if layout == "transposed":     # non-contiguous: compacted, then written back
                t = mt.tensor(rank_data(rank, (3, 4), name, len(op)).T.copy(),
                              dtype=DTYPES[name]).t()
            work = dist.all_reduce(t, op=getattr(dist.ReduceOp, op), async_op=layout == "async")
            if work is not None:
                work.wait()
                assert work.is_completed()
            assert_close(t, expected, f"all_reduce {op} {name} {layout}")
            checks += 1

    src = world - 1
    t = mine((5,), name, 1)
    dist.broadcast(t, src=src)
    assert_close(t, everyone((5,), name, 1)[src], f"broadcast {name}")

    t = mine((2, 3), name, 2)
    dist.reduce(t, dst=src, op=dist.ReduceOp.SUM)
    if rank == src:
        assert_close(t, reduce_numpy(everyone((2, 3), name, 2), "SUM", name), f"reduce {name}")

    outputs = [mt.zeros(2, 2, dtype=DTYPES[name]) for _ in range(world)]
    dist.all_gather(outputs, mine((2, 2), name, 3))
    for r, out in enumerate(outputs):
        assert_close(out, everyone((2, 2), name, 3)[r], f"all_gather {name} from {r}")

    out = mt.zeros(world * 2, 3, dtype=DTYPES[name])
    dist.all_gather_into_tensor(out, mine((2, 3), name, 4))
    assert_close(out, np.concatenate(everyone((2, 3), name, 4)), f"all_gather_into {name}")

    out = mt.zeros(2, dtype=DTYPES[name])
    dist.reduce_scatter_tensor(out, mine((world * 2,), name, 5))
    total = reduce_numpy(everyone((world * 2,), name, 5), "SUM", name)
    assert_close(out, total[rank * 2:rank * 2 + 2], f"reduce_scatter_tensor {name}")

    gathered = [mt.zeros(3, dtype=DTYPES[name]) for _ in range(world)] if rank == 0 else None
    dist.gather(mine((3,), name, 6), gathered, dst=0)
    if rank == 0:
        for r, out in enumerate(gathered):
            assert_close(out, everyone((3,), name, 6)[r], f"gather {name}")

    pieces = [mt.tensor(rank_data(0, (3,), name, 7 + r), dtype=DTYPES[name])
              for r in range(world)] if rank == 0 else None
    out = mt.zeros(3, dtype=DTYPES[name])
    dist.scatter(out, pieces, src=0)
    assert_close(out, rank_data(0, (3,), name, 7 + rank), f"scatter {name}")

    out = mt.zeros(world * 2, dtype=DTYPES[name])
    dist.all_to_all_single(out, mine((world * 2,), name, 8))
    expected = np.concatenate([a[rank * 2:rank * 2 + 2] for a in everyone((world * 2,), name, 8)])
    assert_close(out, expected, f"all_to_all_single {name}")
    checks += 8

# all_to_all_single with uneven splits: rank r sends r + 1 rows to every peer
rows_out = [rank + 1] * world
rows_in = [r + 1 for r in range(world)]
source = mt.full((sum(rows_out), 2), float(rank))
out = mt.zeros(sum(rows_in), 2)
dist.all_to_all_single(out, source, output_split_sizes=rows_in, input_split_sizes=rows_out)
expected = np.concatenate([np.full((r + 1, 2), float(r), np.float32) for r in range(world)])
assert_close(out, expected, "all_to_all_single uneven")

# point to point: a ring, blocking and non-blocking
right, left = (rank + 1) % world, (rank - 1) % world
incoming = mt.zeros(4)
if rank % 2 == 0:
    dist.send(mt.full((4,), float(rank)), dst=right)
    sender = dist.recv(incoming, src=left)
else:
    sender = dist.recv(incoming)          # any source
    dist.send(mt.full((4,), float(rank)), dst=right)
assert sender == left, (sender, left)
assert_close(incoming, np.full(4, float(left), np.float32), "send/recv")
incoming = mt.zeros(2, 3).t()             # non-contiguous receive buffer
works = [dist.isend(mt.full((3, 2), 10.0 + rank), dst=right), dist.irecv(incoming, src=left)]
for work in works:
    work.wait()
assert_close(incoming, np.full((3, 2), 10.0 + left, np.float32), "isend/irecv")

# groups: the even ranks only
evens = dist.new_group([r for r in range(world) if r % 2 == 0])
if rank % 2 == 0:
    t = mt.tensor([float(rank)])
    dist.all_reduce(t, group=evens)
    assert_close(t, np.array([sum(range(0, world, 2))], np.float32), "group all_reduce")
    assert dist.get_world_size(evens) == len(range(0, world, 2))
else:
    assert evens == dist.GroupMember.NON_GROUP_MEMBER

objects = [None, None] if rank else [{"epoch": 3}, "text"]
dist.broadcast_object_list(objects, src=0)
assert objects == [{"epoch": 3}, "text"], objects
gathered = [None] * world
dist.all_gather_object(gathered, ("rank", rank))
assert gathered == [("rank", r) for r in range(world)], gathered
work = dist.barrier(async_op=True)
work.wait()
dist.barrier()
checks += 6

# all_to_all with sizes that differ by rank and peer: rank r sends r + q + 1 values to rank q
for name in ("float32", "int64", "bool"):
    inputs = [mt.tensor(rank_data(rank, (rank + q + 1,), name, 20 + q), dtype=DTYPES[name])
              for q in range(world)]
    outputs = [mt.zeros(r + rank + 1, dtype=DTYPES[name]) for r in range(world)]
    dist.all_to_all(outputs, inputs)
    for r, out in enumerate(outputs):
        assert_close(out, rank_data(r, (r + rank + 1,), name, 20 + rank), f"all_to_all {name}")
outputs = [mt.zeros(2, 3).t() for _ in range(world)]         # non-contiguous outputs, async
work = dist.all_to_all(outputs, [mt.full((3, 2), 10.0 * rank + q) for q in range(world)],
                       async_op=True)
work.wait()
for r, out in enumerate(outputs):
    assert_close(out, np.full((3, 2), 10.0 * r + rank, np.float32), "all_to_all async")

# reduce_scatter of a list: rank q gets the sum over ranks of input_list[q]
for name in ("float32", "int32"):
    inputs = [mt.tensor(rank_data(rank, (2, 2), name, 30 + q), dtype=DTYPES[name])
              for q in range(world)]
    out = mt.zeros(2, 2, dtype=DTYPES[name])
    dist.reduce_scatter(out, inputs)
    expected = reduce_numpy([rank_data(r, (2, 2), name, 30 + rank) for r in range(world)],
                            "SUM", name)
    assert_close(out, expected, f"reduce_scatter {name}")
out = mt.zeros(3)
dist.reduce_scatter(out, [mt.full((3,), float(rank + q)) for q in range(world)],
                    op=dist.ReduceOp.AVG)
assert_close(out, np.full(3, sum(r + rank for r in range(world)) / world, np.float32),
             "reduce_scatter AVG")
expect(ValueError, "different dtypes", lambda: dist.reduce_scatter(
    mt.zeros(2), [mt.zeros(2, dtype=mt.float64)] * world))
expect(ValueError, "elements of output", lambda: dist.reduce_scatter(
    mt.zeros(2), [mt.zeros(3)] * world))

# complex tensors: sums and averages as (re, im) pairs; max / min / product refused as torch
z = mt.complex(mt.full((3,), float(rank)), mt.full((3,), 1.0))
dist.all_reduce(z)
total = sum(range(world))
assert_close(z, np.full(3, total + world * 1j, np.complex64), "all_reduce complex")
expect(ValueError, "all_reduce does not support RedOpType.MAX on complex tensors",
       lambda: dist.all_reduce(z, op=dist.ReduceOp.MAX))

# Work.get_future: completes with the collective's tensors; then() chains on it
t = mt.full((2,), float(rank))
future = dist.all_reduce(t, async_op=True).get_future()
halved = future.then(lambda fut: fut.value()[0] / 2)
assert halved.wait().tolist() == [total / 2] * 2 and future.value()[0] is t

# batch_isend_irecv: every rank sends to both neighbours and receives from both at once
to_left, to_right = mt.full((2,), 100.0 + rank), mt.full((2,), 200.0 + rank)
from_left, from_right = mt.zeros(2), mt.zeros(2)
ops = [dist.P2POp(dist.isend, to_right, right), dist.P2POp(dist.irecv, from_left, left),
       dist.P2POp(dist.isend, to_left, left), dist.P2POp(dist.irecv, from_right, right)]
if world == 2:                    # left and right are the same rank: one pair each way
    ops = ops[:2]
for work in dist.batch_isend_irecv(ops):
    work.wait()
assert_close(from_left, np.full(2, 200.0 + left, np.float32), "batch_isend_irecv left")
if world > 2:
    assert_close(from_right, np.full(2, 100.0 + right, np.float32), "batch_isend_irecv right")
expect(ValueError, "Expected ``op`` to be of type",
       lambda: dist.P2POp(dist.send, to_left, right))
expect(ValueError, "Each op is expected", lambda: dist.batch_isend_irecv([1]))
expect(ValueError, "should not be the same",       # checked when issued, as torch does
       lambda: dist.batch_isend_irecv([dist.P2POp(dist.isend, to_left, rank)]))

# Python objects point to point and scattered
if rank == 0:
    dist.send_object_list([{"lr": 0.1}, [1, 2]], dst=world - 1)
if rank == world - 1:
    received = [None, None]
    assert dist.recv_object_list(received, src=0) == 0
    assert received == [{"lr": 0.1}, [1, 2]], received
mine_only = [None]
dist.scatter_object_list(mine_only, [f"for {r}" for r in range(world)] if rank == 0 else None,
                         src=0)
assert mine_only == [f"for {rank}"], mine_only

# subgroups of consecutive ranks (one of size 1 when the world is odd, by enumeration)
pairs = [list(range(i, min(i + 2, world))) for i in range(0, world, 2)]
current, subgroups = dist.new_subgroups_by_enumeration(pairs)
assert len(subgroups) == len(pairs) and dist.get_process_group_ranks(current) == \
    pairs[rank // 2]
t = mt.tensor([1.0])
dist.all_reduce(t, group=current)
assert_close(t, np.array([len(pairs[rank // 2])], np.float32), "subgroup all_reduce")
expect(ValueError, "must be positive", lambda: dist.new_subgroups(group_size=0))
expect(ValueError, "must not exceed", lambda: dist.new_subgroups(group_size=world + 1))
if world % 2:
    expect(ValueError, "must be divisible", lambda: dist.new_subgroups(group_size=2))
assert dist.get_pg_count() == 2 + len(subgroups)        # the world, evens, the subgroups

# monitored_barrier: all in time passes; a rank that comes late is named on rank 0
dist.monitored_barrier(timeout=datetime.timedelta(seconds=30))
late = world - 1
if rank == late:
    time.sleep(1.5)
try:
    dist.monitored_barrier(timeout=datetime.timedelta(seconds=1), wait_all_ranks=True)
    raise AssertionError("a late rank passed the monitored barrier")
except dist.DistBackendError as error:
    expected = (f"Rank {late} failed to pass monitoredBarrier in 1000 ms" if rank == 0 else
                "Rank 0 did not release monitoredBarrier in 1000 ms")
    assert expected in str(error), str(error)
dist.barrier()
checks += 12

dist.destroy_process_group()
print(f"rank {rank} ok {checks}", flush=True)
