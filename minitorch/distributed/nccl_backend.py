"""The NCCL engine (CuPy's cupy.cuda.nccl) behind backend="nccl": collectives on flat cupy
buffers of cuda tensors, queued on the current stream like our kernels, so they are ordered
with the computation without a host synchronization (as torch's NCCL process group)."""
import contextlib
import os
import pickle
import time

import numpy as np

from .. import dtypes
from .reduce_op import ReduceOp


def load_nccl():
    """(cupy, cupy.cuda.nccl), or torch's RuntimeError when NCCL is unavailable."""
    try:
        import cupy
        from cupy.cuda import nccl
        nccl.get_version()
    except Exception as error:       # no CuPy, CuPy built without NCCL, no driver
        raise RuntimeError("Distributed package doesn't have NCCL built in (backend='nccl' "
                           "needs CuPy with NCCL: pip install cupy-cuda12x, "
                           "python -m cupyx.tools.install_library --library nccl)") from error
    return cupy, nccl


def init_nccl(world_size, rank, timeout_s, init_method, watchdog_for):
    """One NCCL communicator over the job. The unique id travels by an MPI broadcast when
    mpiexec started the job; otherwise NCCL's own bootstrap listens at
    MASTER_ADDR:MASTER_PORT (NCCL_COMM_ID), with RANK and WORLD_SIZE from the environment."""
    cupy, nccl = load_nccl()
    size, rank = _job_size_and_rank(world_size, rank)
    if _launched_by_mpi():
        from .mpi_backend import load_mpi
        MPI = load_mpi()
        comm = MPI.COMM_WORLD
        size, rank = comm.Get_size(), comm.Get_rank()
        unique_id = comm.bcast(nccl.get_unique_id() if rank == 0 else None, root=0)
    else:
        if size > 1:
            os.environ["NCCL_COMM_ID"] = _rendezvous_address(init_method)
        unique_id = nccl.get_unique_id()
    communicator = nccl.NcclCommunicator(size, unique_id, rank)
    watchdog_for(rank, communicator.abort)
    return NCCLBackend(cupy, nccl, communicator, rank, size, timeout_s)


def _launched_by_mpi():
    return any(name in os.environ for name in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"))


def _job_size_and_rank(world_size, rank):
    size = world_size if world_size != -1 else int(os.environ.get("WORLD_SIZE", "1"))
    rank = rank if rank != -1 else int(os.environ.get("RANK", "0"))
    if not 0 <= rank < size:
        raise ValueError(f"Invalid rank {rank} for world size {size}")
    return size, rank


def _rendezvous_address(init_method):
    """host:port for NCCL's bootstrap: init_method "tcp://host:port" or MASTER_ADDR/PORT."""
    if init_method and init_method.startswith("tcp://"):
        return init_method[len("tcp://"):]
    if init_method not in (None, "env://"):
        raise ValueError(f"init_method {init_method!r}: nccl takes env:// or tcp://host:port")
    try:
        return f"{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}"
    except KeyError as missing:
        raise ValueError(f"Error initializing torch.distributed using env:// rendezvous: "
                         f"environment variable {missing.args[0]} expected, but not set") from None


class StreamEvent:
    """The `pending` of an async NCCL Work: an event recorded after the queued operation."""

    def __init__(self, cupy, record=True):
        self.event = cupy.cuda.Event(block=False, disable_timing=True)
        if record:
            self.event.record()

    def test(self):
        return self.event.done

    def wait(self, deadline):
        while not self.event.done:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.0002)
        return True


class NCCLBackend:
    """Arrays are 1-d contiguous cupy arrays on the communicator's GPU."""
    name = "nccl"
    device_type = "cuda"
    widened = frozenset({dtypes.bfloat16, dtypes.int16})     # reduced as float32 / int64

    def __init__(self, cupy, nccl, communicator, rank, size, timeout_s):
        self.cupy, self.nccl, self.comm = cupy, nccl, communicator
        self.rank, self.size, self.timeout_s = rank, size, timeout_s
        self.device_index = communicator.device_id()     # the GPU current at creation
        self._batch = None          # the events of a batch_isend_irecv being issued
        self._dtypes = {np.dtype(np.float32): nccl.NCCL_FLOAT32,
                        np.dtype(np.float64): nccl.NCCL_FLOAT64,
                        np.dtype(np.float16): nccl.NCCL_FLOAT16,
                        np.dtype(np.int64): nccl.NCCL_INT64,
                        np.dtype(np.int32): nccl.NCCL_INT32,
                        np.dtype(np.int8): nccl.NCCL_INT8,
                        np.dtype(np.uint8): nccl.NCCL_UINT8}
        # storages without an NCCL type (bfloat16's uint16 bits, int16) travel as a type of
        # their size; reductions of them are widened first (`widened`)
        self._same_size = {1: nccl.NCCL_UINT8, 2: nccl.NCCL_FLOAT16, 4: nccl.NCCL_FLOAT32,
                           8: nccl.NCCL_FLOAT64}
        self._ops = {ReduceOp.SUM: nccl.NCCL_SUM, ReduceOp.PRODUCT: nccl.NCCL_PROD,
                     ReduceOp.MIN: nccl.NCCL_MIN, ReduceOp.MAX: nccl.NCCL_MAX}
        average = getattr(nccl, "NCCL_AVG", None)   # NCCL >= 2.10
        self.native_avg = average is not None
        if average is not None:
            self._ops[ReduceOp.AVG] = average
        # all_reduce's fast path: AVG takes the general one (integers are summed, then divided)
        self.direct_ops = frozenset(self._ops) - {ReduceOp.AVG}

    def _stream(self):
        return self.cupy.cuda.get_current_stream().ptr

    def _done(self, async_op):
        if not async_op:
            return None
        if self._batch is None:
            return StreamEvent(self.cupy)
        event = StreamEvent(self.cupy, record=False)   # recorded once the group is queued
        self._batch.append(event)
        return event

    @contextlib.contextmanager
    def batched(self):
        """batch_isend_irecv's sends and receives as one NCCL group (two ranks sending to
        each other would otherwise wait on one another); their events are recorded after the
        group is queued, which happens at groupEnd."""
        self.nccl.groupStart()
        self._batch = []
        try:
            yield
        finally:
            events, self._batch = self._batch, None
            self.nccl.groupEnd()
            for event in events:
                event.event.record()

    def _type(self, array):
        kind = self._dtypes.get(array.dtype)
        return self._same_size[array.dtype.itemsize] if kind is None else kind

    def allreduce(self, array, op, async_op):
        ptr = array.data.ptr
        self.comm.allReduce(ptr, ptr, array.size, self._type(array), self._ops[op],
                            self._stream())
        return self._done(async_op)

    def broadcast(self, array, root, async_op):
        self.comm.bcast(array.data.ptr, array.size, self._type(array), root, self._stream())
        return self._done(async_op)

    def reduce(self, array, op, root, async_op):
        ptr = array.data.ptr
        self.comm.reduce(ptr, ptr, array.size, self._type(array), self._ops[op], root,
                         self._stream())
        return self._done(async_op)

    def allgather(self, send, receive, async_op):
        self.comm.allGather(send.data.ptr, receive.data.ptr, send.size, self._type(send),
                            self._stream())
        return self._done(async_op)

    def reduce_scatter(self, send, receive, op, async_op):
        self.comm.reduceScatter(send.data.ptr, receive.data.ptr, receive.size,
                                self._type(send), self._ops[op], self._stream())
        return self._done(async_op)

    def gather(self, send, receive, root, async_op):
        """NCCL has no gather: grouped sends to the root (receives there)."""
        n, kind, stream = send.size, self._type(send), self._stream()
        self.nccl.groupStart()
        try:
            if self.rank == root:
                for peer in range(self.size):
                    part = receive[peer * n:(peer + 1) * n]
                    if peer == root:
                        part[...] = send
                    else:
                        self.comm.recv(part.data.ptr, n, kind, peer, stream)
            else:
                self.comm.send(send.data.ptr, n, kind, root, stream)
        finally:
            self.nccl.groupEnd()
        return self._done(async_op)

    def scatter(self, send, receive, root, async_op):
        n, kind, stream = receive.size, self._type(receive), self._stream()
        self.nccl.groupStart()
        try:
            if self.rank == root:
                for peer in range(self.size):
                    part = send[peer * n:(peer + 1) * n]
                    if peer == root:
                        receive[...] = part
                    else:
                        self.comm.send(part.data.ptr, n, kind, peer, stream)
            else:
                self.comm.recv(receive.data.ptr, n, kind, root, stream)
        finally:
            self.nccl.groupEnd()
        return self._done(async_op)

    def alltoall(self, send, send_counts, receive, receive_counts, async_op):
        kind, stream = self._type(send), self._stream()
        self.nccl.groupStart()
        try:
            send_at = receive_at = 0
            for peer in range(self.size):
                self.comm.send(send[send_at:].data.ptr, send_counts[peer], kind, peer, stream)
                self.comm.recv(receive[receive_at:].data.ptr, receive_counts[peer], kind, peer,
                               stream)
                send_at += send_counts[peer]
                receive_at += receive_counts[peer]
        finally:
            self.nccl.groupEnd()
        return self._done(async_op)

    def send(self, array, peer, tag, async_op):
        self.comm.send(array.data.ptr, array.size, self._type(array), peer, self._stream())
        return self._done(async_op)

    def recv(self, array, peer, tag, async_op):
        if peer is None:
            raise RuntimeError("ProcessGroupNCCL::recv: receiving from any source is not "
                               "supported by NCCL; pass src")
        self.comm.recv(array.data.ptr, array.size, self._type(array), peer, self._stream())
        return self._done(async_op) if async_op else peer

    def barrier(self, async_op):
        """An all-reduce of one element, waited for on the host (torch's NCCL barrier)."""
        token = self.cupy.zeros(1, np.float32)
        self.allreduce(token, ReduceOp.SUM, False)
        if async_op:
            return StreamEvent(self.cupy)
        self.cupy.cuda.get_current_stream().synchronize()
        return None

    # ---- Python objects: pickled bytes in uint8 device buffers ------------------------------
    def broadcast_object(self, obj, root):
        payload = self._to_device(obj if self.rank == root else None)
        length = self.cupy.asarray(np.array([payload.size], np.int64))
        self.broadcast(length, root, False)
        if self.rank != root:
            payload = self.cupy.empty(int(length.get()[0]), np.uint8)
        self.broadcast(payload, root, False)
        return pickle.loads(payload.get().tobytes())

    def allgather_object(self, obj):
        payload = self._to_device(obj)
        lengths = self.cupy.empty(self.size, np.int64)
        self.allgather(self.cupy.asarray(np.array([payload.size], np.int64)), lengths, False)
        lengths = lengths.get()
        longest = int(lengths.max())
        padded = self.cupy.zeros(longest, np.uint8)
        padded[:payload.size] = payload
        everyone = self.cupy.empty(longest * self.size, np.uint8)
        self.allgather(padded, everyone, False)
        host = everyone.get()
        return [pickle.loads(host[i * longest:i * longest + int(n)].tobytes())
                for i, n in enumerate(lengths)]

    def gather_object(self, obj, root):
        everyone = self.allgather_object(obj)
        return everyone if self.rank == root else None

    def scatter_object(self, objects, root):
        """Every rank receives the whole list and keeps its own item (objects are small)."""
        return self.broadcast_object(objects, root)[self.rank]

    def send_object(self, obj, peer):
        payload = self._to_device(obj)
        self.send(self.cupy.asarray(np.array([payload.size], np.int64)), peer, 0, False)
        self.send(payload, peer, 0, False)

    def recv_object(self, peer):
        if peer is None:
            raise RuntimeError("ProcessGroupNCCL::recv: receiving from any source is not "
                               "supported by NCCL; pass src")
        length = self.cupy.empty(1, np.int64)
        self.recv(length, peer, 0, False)
        payload = self.cupy.empty(int(length.get()[0]), np.uint8)
        self.recv(payload, peer, 0, False)
        return pickle.loads(payload.get().tobytes()), peer

    def _to_device(self, obj):
        data = np.frombuffer(pickle.dumps(obj), dtype=np.uint8)
        return self.cupy.asarray(data)

    # ---- groups ---------------------------------------------------------------------------
    def subgroup(self, ranks, timeout_s):
        """A new communicator over `ranks`: its id travels over this one (every rank of this
        communicator takes part, as torch's new_group requires)."""
        ranks = list(ranks)
        unique_id = self.nccl.get_unique_id() if self.rank == ranks[0] else None
        unique_id = self.broadcast_object(unique_id, ranks[0])
        if self.rank not in ranks:
            return None
        communicator = self.nccl.NcclCommunicator(len(ranks), unique_id, ranks.index(self.rank))
        return NCCLBackend(self.cupy, self.nccl, communicator, ranks.index(self.rank),
                           len(ranks), timeout_s)

    def destroy(self):
        self.comm.destroy()

    def abort(self, code=1):
        self.comm.abort()
        os._exit(code)
