"""backend="nccl" on the CUDA emulator (tests/cuda_emulator) with a recording stand-in for
cupy.cuda.nccl (world size 1): every collective on cuda tensors, the exact NCCL calls made
(pointers of the tensors' own memory, counts, dtype and op codes), and the device checks.
Started by tests/test_distributed.py; prints "ok N" when every check passed."""
import ctypes
import pathlib
import sys
import types

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import cuda_emulator  # noqa: E402

CODES = {"NCCL_INT8": 0, "NCCL_UINT8": 1, "NCCL_INT32": 2, "NCCL_INT64": 4, "NCCL_FLOAT16": 6,
         "NCCL_FLOAT32": 7, "NCCL_FLOAT64": 8, "NCCL_SUM": 0, "NCCL_PROD": 1, "NCCL_MAX": 2,
         "NCCL_MIN": 3, "NCCL_AVG": 4}
SIZES = {0: 1, 1: 1, 2: 4, 4: 8, 6: 2, 7: 4, 8: 8}
calls = []


class Communicator:
    """cupy.cuda.nccl.NcclCommunicator's signatures (cupy/cuda/nccl.pyx), one rank: a
    reduction of one rank's data is that data."""

    def __init__(self, ndev, commId, rank):
        assert isinstance(commId, tuple) and len(commId) == 128, commId
        assert (ndev, rank) == (1, 0)
        self._queued = []

    def _copy(self, name, send, recv, count, datatype, *rest):
        for value in (send, recv, count, datatype, *rest):
            assert isinstance(value, int), (name, value)
        assert datatype in SIZES, datatype
        calls.append((name, send, recv, count, datatype, *rest))
        if send != recv and count:
            ctypes.memmove(recv, send, count * SIZES[datatype])

    def allReduce(self, sendbuf, recvbuf, count, datatype, op, stream):
        assert op in (0, 1, 2, 3, 4)
        self._copy("allReduce", sendbuf, recvbuf, count, datatype, op, stream)

    def reduce(self, sendbuf, recvbuf, count, datatype, op, root, stream):
        assert root == 0
        self._copy("reduce", sendbuf, recvbuf, count, datatype, op, root, stream)

    def bcast(self, buff, count, datatype, root, stream):
        assert root == 0
        self._copy("bcast", buff, buff, count, datatype, root, stream)

    def allGather(self, sendbuf, recvbuf, count, datatype, stream):
        self._copy("allGather", sendbuf, recvbuf, count, datatype, stream)

    def reduceScatter(self, sendbuf, recvbuf, recvcount, datatype, op, stream):
        self._copy("reduceScatter", sendbuf, recvbuf, recvcount, datatype, op, stream)

    def send(self, sendbuf, count, datatype, peer, stream):
        assert peer == 0
        calls.append(("send", sendbuf, count, datatype, peer, stream))
        self._queued.append(sendbuf)

    def recv(self, recvbuf, count, datatype, peer, stream):
        assert peer == 0
        calls.append(("recv", recvbuf, count, datatype, peer, stream))
        if count:
            ctypes.memmove(recvbuf, self._queued.pop(0), count * SIZES[datatype])

    def device_id(self):
        return 0

    def destroy(self):
        calls.append(("destroy",))

    def abort(self):
        calls.append(("abort",))


def install():
    cupy = cuda_emulator.cupy_module()
    nccl = types.SimpleNamespace(
        NcclCommunicator=Communicator, get_version=lambda: 22105,
        get_unique_id=lambda: tuple(range(-64, 64)),
        groupStart=lambda: calls.append(("groupStart",)),
        groupEnd=lambda: calls.append(("groupEnd",)), **CODES)
    cupy.cuda.nccl = nccl
    cupy.cuda.get_current_stream = lambda: types.SimpleNamespace(ptr=0, synchronize=lambda: None)
    cupy.cuda.Event = lambda block=False, disable_timing=True: types.SimpleNamespace(
        record=lambda stream=None: None, done=True, synchronize=lambda: None)
    # CuPy arrays take slice assignment (the emulator's Array needs it only here)
    cuda_emulator.Array.__setitem__ = lambda self, key, value: self.host.__setitem__(
        key, value.host if isinstance(value, cuda_emulator.Array) else value)
    sys.modules["cupy"], sys.modules["cupy.cuda"], sys.modules["cupy.cuda.nccl"] = \
        cupy, cupy.cuda, nccl


install()
import minitorch as mt  # noqa: E402
import minitorch.distributed as dist  # noqa: E402
import minitorch.nn as nn  # noqa: E402
import minitorch.nn.functional as F  # noqa: E402
from common import assert_close, check_scaled_bucket_takes, expect  # noqa: E402

dist.init_process_group("nccl")
assert dist.get_backend() == "nccl" and dist.get_world_size() == 1
checks = 0

for dtype, code in ((mt.float32, 7), (mt.float64, 8), (mt.int64, 4), (mt.uint8, 1),
                    (mt.bool, 1)):
    t = mt.tensor([1, 0, 1], dtype=dtype, device="cuda")
    calls.clear()
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    assert calls == [("allReduce", t.data_ptr(), t.data_ptr(), 3, code, 2, 0)], calls
    assert_close(t.cpu(), np.array([1, 0, 1], dtype=dtype.numpy_dtype), f"all_reduce {dtype}")
    checks += 1

for dtype, code in ((mt.float16, 6), (mt.int32, 2), (mt.int8, 0)):   # NCCL's own types
    t = mt.tensor([1, 0, 3], dtype=dtype, device="cuda")
    calls.clear()
    dist.all_reduce(t)
    assert calls == [("allReduce", t.data_ptr(), t.data_ptr(), 3, code, 0, 0)], calls
    checks += 1
for dtype, code in ((mt.bfloat16, 7), (mt.int16, 4)):   # no NCCL type: summed widened
    t = mt.tensor([1, 0, 3], dtype=dtype, device="cuda")
    calls.clear()
    dist.all_reduce(t)
    assert len(calls) == 1 and calls[0][0] == "allReduce" and calls[0][1] != t.data_ptr() \
        and calls[0][3:5] == (3, code), calls
    assert t.tolist() == [1, 0, 3], t
    calls.clear()
    dist.broadcast(t, src=0)                 # bytes move as a type of their size
    assert calls == [("bcast", t.data_ptr(), t.data_ptr(), 3, 6, 0, 0)], calls
    checks += 1

t = mt.arange(6.0, device="cuda").reshape(2, 3)
calls.clear()
dist.all_reduce(t, op=dist.ReduceOp.AVG)
assert calls[0][0] == "allReduce" and calls[0][5] == 4, calls    # NCCL's own average
integers = mt.tensor([4, 7], device="cuda")
calls.clear()
dist.all_reduce(integers, op=dist.ReduceOp.AVG)        # integers: a sum, then trunc division
assert calls[0][5] == 0, calls
assert_close(integers.cpu(), np.array([4, 7]), "integer average")
view = t.t()                                  # non-contiguous: a compact copy, written back
dist.all_reduce(view, op=dist.ReduceOp.SUM)
assert_close(t.cpu(), np.arange(6.0, dtype=np.float32).reshape(2, 3), "view")
calls.clear()
dist.broadcast(t, src=0)
assert calls == [("bcast", t.data_ptr(), t.data_ptr(), 6, 7, 0, 0)], calls
dist.reduce(t, dst=0)
out = mt.zeros(2, 3, device="cuda")
calls.clear()
dist.all_gather_into_tensor(out, t)
assert calls == [("allGather", t.data_ptr(), out.data_ptr(), 6, 7, 0)], calls
assert_close(out.cpu(), t.cpu().numpy(), "all_gather_into_tensor")
parts = [mt.zeros(2, 3, device="cuda")]
dist.all_gather(parts, t)
assert_close(parts[0].cpu(), t.cpu().numpy(), "all_gather")
small = mt.zeros(2, 3, device="cuda")
calls.clear()
dist.reduce_scatter_tensor(small, t)
assert calls == [("reduceScatter", t.data_ptr(), small.data_ptr(), 6, 7, 0, 0)], calls
gathered = [mt.zeros(2, 3, device="cuda")]
dist.gather(t, gathered, dst=0)
assert_close(gathered[0].cpu(), t.cpu().numpy(), "gather")
scattered = mt.zeros(2, 3, device="cuda")
dist.scatter(scattered, [t], src=0)
assert_close(scattered.cpu(), t.cpu().numpy(), "scatter")
exchanged = mt.zeros(6, device="cuda")
calls.clear()
dist.all_to_all_single(exchanged, t.reshape(6))
assert [c[0] for c in calls] == ["groupStart", "send", "recv", "groupEnd"], calls
assert_close(exchanged.cpu(), np.arange(6.0, dtype=np.float32), "all_to_all_single")
work = dist.all_reduce(t, async_op=True)
assert work.wait() and work.is_completed()
dist.barrier()
objects = [None]
dist.all_gather_object(objects, {"rank": 0})
assert objects == [{"rank": 0}]
listed = ["x", 2]
dist.broadcast_object_list(listed, src=0)
assert listed == ["x", 2]
checks += 12

expect(RuntimeError, "No backend type associated with device type cpu",
       lambda: dist.all_reduce(mt.ones(2)))
expect(RuntimeError, "receiving from any source is not supported",
       lambda: dist.recv(mt.ones(2, device="cuda")))

mt.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2)).to("cuda")
reference = [p.detach().cpu().numpy().copy() for p in model.parameters()]
ddp = nn.parallel.DistributedDataParallel(model, device_ids=[0], find_unused_parameters=True)
x = mt.randn(5, 4)
F.mse_loss(ddp(x), mt.zeros(5, 2, device="cuda")).backward()     # device_ids moves x
grads = [p.grad.cpu().numpy() for p in model.parameters()]
cpu_model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
with mt.no_grad():
    for p, value in zip(cpu_model.parameters(), reference):
        p.copy_(mt.tensor(value))
F.mse_loss(cpu_model(x), mt.zeros(5, 2)).backward()
for got, p in zip(grads, cpu_model.parameters()):
    assert_close(got, p.grad.numpy(), "DDP on nccl", rtol=1e-4, atol=1e-6)
checks += 3

# this session's additions at world size 1: list collectives, futures, object scatter, the
# monitored barrier, communication hooks and join
parts = [mt.zeros(2, 3, device="cuda")]
dist.all_to_all(parts, [t])
assert_close(parts[0].cpu(), t.cpu().numpy(), "all_to_all")
single = mt.zeros(2, 3, device="cuda")
dist.reduce_scatter(single, [t])
assert_close(single.cpu(), t.cpu().numpy(), "reduce_scatter")
future = dist.all_reduce(t.clone(), async_op=True).get_future().then(lambda f: f.value()[0] * 2)
assert_close(future.wait().cpu(), t.cpu().numpy() * 2, "get_future")
mine = [None]
dist.scatter_object_list(mine, [{"only": 0}], src=0)
assert mine == [{"only": 0}]
dist.monitored_barrier()
expect(ValueError, "all_reduce does not support RedOpType.MAX on complex tensors",
       lambda: dist.all_reduce(mt.ones(2, dtype=mt.complex64, device="cuda"),
                               op=dist.ReduceOp.MAX))
from minitorch.distributed.algorithms.ddp_comm_hooks import default_hooks  # noqa: E402
for hook in (default_hooks.allreduce_hook, default_hooks.fp16_compress_hook):
    mt.manual_seed(0)
    hooked = nn.Linear(4, 2).to("cuda")
    ddp = nn.parallel.DistributedDataParallel(hooked)
    ddp.register_comm_hook(None, hook)
    with ddp.join():
        ddp(x.to("cuda")).sum().backward()
    mt.manual_seed(0)
    plain = nn.Linear(4, 2)
    plain(x).sum().backward()
    assert_close(hooked.weight.grad.cpu(), plain.weight.grad.numpy(), hook.__name__,
                 rtol=1e-3, atol=1e-3)
checks += 8

check_scaled_bucket_takes("cuda")
checks += 1
dist.destroy_process_group()
assert calls[-1] == ("destroy",)

dist.init_process_group("mpi")            # a cuda tensor on the MPI backend
expect(RuntimeError, "CUDA tensor detected and the MPI used doesn't have CUDA-aware MPI",
       lambda: dist.all_reduce(mt.ones(2, device="cuda")))
dist.destroy_process_group()
print(f"ok {checks + 1}", flush=True)
