"""The tensor collectives and point-to-point calls of torch.distributed: argument checks with
torch's errors, then the engine call on the tensors' own memory."""
import datetime
import os
import time
import warnings

from ..autograd import no_grad
from .buffers import FlatBuffer, check_tensor, check_tensor_list, describe
from .. import dtypes
from ..tensor import Tensor, zeros
from .errors import DistBackendError
from .group import _state, resolve
from .reduce_op import ReduceOp, check_op, for_bool, supports_complex
from .work import Work, _seconds


# ---- shared steps ---------------------------------------------------------------------------
def _check_device(pg, operation, *tensors):
    """MPI takes CPU tensors, NCCL cuda ones (torch's messages)."""
    engine = pg.engine
    for t in tensors:
        kind = t.device.type
        if kind == engine.device_type:
            if kind == "cuda" and (t.device.index or 0) != engine.device_index:
                raise RuntimeError(f"ProcessGroupNCCL::{operation}: tensor on {t.device}, but "
                                   f"this process group uses cuda:{engine.device_index} (call "
                                   "mt.cuda.set_device(local_rank) before init_process_group)")
            continue
        if engine.name == "mpi":
            raise RuntimeError("CUDA tensor detected and the MPI used doesn't have CUDA-aware "
                               "MPI support")
        raise RuntimeError(f"No backend type associated with device type {kind}")


def _check_same_dtype(pg, operation, reference, tensors):
    for i, t in enumerate(tensors):
        if t.dtype is not reference.dtype:
            raise RuntimeError(f"ProcessGroup{pg.engine.name.upper()}::{operation}: invalid "
                               f"tensor type at index {i} (expected {reference.dtype}, got "
                               f"{t.dtype})")


def _engine_op(op, tensor):
    """The engine's reduction: bools reduce as logical or/and; AVG is a SUM then a division
    where the engine has no average."""
    op = check_op(op)
    if tensor.dtype.name == "bool":
        return for_bool(op)
    return op


def _engine_averages(pg, tensor):
    """NCCL averages floating-point tensors itself; otherwise AVG is a SUM and a division."""
    return pg.engine.native_avg and tensor.is_floating_point()


def _reduced(pg, tensor):
    """The FlatBuffer an engine reduces: widened where the engine cannot add the dtype."""
    return FlatBuffer(tensor, widen=tensor.dtype in pg.engine.widened)


def _sent_op(pg, op, tensor):
    return ReduceOp.SUM if op is ReduceOp.AVG and not _engine_averages(pg, tensor) else op


def _averager(pg, op, tensor):
    """The division ReduceOp.AVG needs after an engine SUM (nothing for other ops)."""
    if op is not ReduceOp.AVG or _engine_averages(pg, tensor):
        return None
    size = pg.size()

    def divide():
        with no_grad():
            if tensor.is_floating_point():
                tensor.div_(size)
            else:
                tensor.div_(size, rounding_mode="trunc")
        return None
    return divide


def _complete(pg, operation, pending, async_op, *finish, result=None):
    """Run the finishing steps now (blocking) or when the Work completes (async); `result`:
    the tensors the Work's result() and future give."""
    finish = tuple(step for step in finish if step is not None)
    if async_op:
        return Work(pending, operation, pg.ranks[pg.rank()], pg.timeout_s, finish, result)
    for step in finish:
        step()
    return None


_BOOL = dtypes.bool_
_DETAIL = os.environ.get("TORCH_DISTRIBUTED_DEBUG", "").upper() == "DETAIL"


def _verify_same_call(pg, operation, *tensors):
    """TORCH_DISTRIBUTED_DEBUG=DETAIL: every rank must run the same collective on tensors of the
    same shapes and dtypes (torch's fingerprint check; one extra exchange per call)."""
    if not _DETAIL:
        return
    mine = (operation, tuple((tuple(t.shape), t.dtype.name) for t in tensors))
    everyone = pg.engine.allgather_object(mine)
    for rank, theirs in enumerate(everyone):
        if theirs != mine:
            raise RuntimeError(
                "Detected mismatch between collectives on ranks. Rank "
                f"{pg.ranks[pg.rank()]} is running collective: {_fingerprint(mine)}, but Rank "
                f"{pg.ranks[rank]} is running collective: {_fingerprint(theirs)}.")


def _fingerprint(call):
    operation, tensors = call
    shapes = ", ".join(f"{list(shape)}" for shape, _ in tensors)
    kinds = ", ".join(dtype for _, dtype in tensors)
    return (f"CollectiveFingerPrint(OpType={operation.upper()}, TensorShape={shapes}, "
            f"TensorDtypes={kinds})")


# ---- collectives ----------------------------------------------------------------------------
def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduces tensor across every rank of group with op, in place, so all ranks hold the
    result; a Work when async_op (torch.distributed.all_reduce)."""
    pg = _state.default
    if (group is None or group is pg) and pg is not None and not async_op and not _DETAIL \
            and type(tensor) is Tensor:
        # the common call (gradients, metrics): a contiguous tensor, blocking, no average;
        # its checks are the general path's, in a few attribute reads
        data = tensor._data
        engine = pg.engine
        if op in engine.direct_ops and data.device.type == "cpu" == engine.device_type \
                and data.dtype is not _BOOL and data.dtype not in engine.widened \
                and data.is_compact() and (op is ReduceOp.SUM or not data.dtype.is_complex):
            engine.allreduce(data.flat(), op, False)
            tensor._version[0] += 1
            return None
    check_tensor(tensor)
    pg = resolve(group)
    if pg is None:
        return None
    engine_op = _engine_op(op, tensor)
    if tensor.dtype.is_complex and not supports_complex(engine_op):
        raise ValueError(f"all_reduce does not support {op} on complex tensors")
    _check_device(pg, "allreduce", tensor)
    _verify_same_call(pg, "allreduce", tensor)
    buffer = _reduced(pg, tensor)
    pending = pg.engine.allreduce(buffer.array, _sent_op(pg, engine_op, tensor), async_op)
    return _complete(pg, "all_reduce", pending, async_op, buffer.write_back,
                     _averager(pg, engine_op, tensor), result=[tensor])


def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    """Copies tensor from rank src to every rank of group, in place; a Work when async_op
    (torch.distributed.broadcast)."""
    check_tensor(tensor)
    pg = resolve(group)
    if pg is None:
        return None
    root = _root(pg, src, group_src, "broadcast", "src")
    _check_device(pg, "broadcast", tensor)
    _verify_same_call(pg, "broadcast", tensor)
    buffer = FlatBuffer(tensor)
    pending = pg.engine.broadcast(buffer.array, root, async_op)
    return _complete(pg, "broadcast", pending, async_op, buffer.write_back, result=[tensor])


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op=False, group_dst=None):
    """Reduces tensor across group with op into rank dst's tensor, in place; a Work when
    async_op (torch.distributed.reduce)."""
    check_tensor(tensor)
    pg = resolve(group)
    if pg is None:
        return None
    root = _root(pg, dst, group_dst, "reduce", "dst")
    engine_op = _engine_op(op, tensor)
    _check_device(pg, "reduce", tensor)
    _verify_same_call(pg, "reduce", tensor)
    buffer = _reduced(pg, tensor)
    pending = pg.engine.reduce(buffer.array, _sent_op(pg, engine_op, tensor), root, async_op)
    divide = _averager(pg, engine_op, tensor) if pg.rank() == root else None
    return _complete(pg, "reduce", pending, async_op, buffer.write_back, divide)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """Gathers into one compact buffer, then copies each rank's part into the list."""
    check_tensor_list(tensor_list, "tensor_list")
    check_tensor(tensor)
    pg = resolve(group)
    if pg is None:
        return None
    name = f"ProcessGroup{pg.engine.name.upper()}::allgather"
    if len(tensor_list) != pg.size():
        raise RuntimeError(f"{name}: invalid output tensor list at index 0 (expected length "
                           f"{pg.size()}, got {len(tensor_list)})")
    _check_same_dtype(pg, "allgather", tensor, tensor_list)
    for i, t in enumerate(tensor_list):
        if t.shape != tensor.shape:
            raise RuntimeError(f"{name}: invalid tensor size at index {i} (expected "
                               f"({', '.join(map(str, tensor.shape))}), got "
                               f"({', '.join(map(str, t.shape))}))")
    _check_device(pg, "allgather", tensor, *tensor_list)
    _verify_same_call(pg, "allgather", tensor)
    source = FlatBuffer(tensor).array
    gathered = tensor._data.backend.empty(source.size * pg.size(), source.dtype)
    pending = pg.engine.allgather(source, gathered, async_op)
    return _complete(pg, "all_gather", pending, async_op,
                     lambda: _split_into(gathered, tensor_list))


def _split_into(flat, tensors):
    """Copy consecutive parts of a flat array into each tensor (bytes moved, no math)."""
    start = 0
    for t in tensors:
        n = t.numel()
        part = FlatBuffer(t)
        part.array[...] = flat[start:start + n]
        part.write_back()
        start += n


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """Concatenates every rank's input_tensor into output_tensor on all ranks; a Work when
    async_op (torch.distributed.all_gather_into_tensor)."""
    check_tensor(output_tensor, "output_tensor")
    check_tensor(input_tensor, "input_tensor")
    pg = resolve(group)
    if pg is None:
        return None
    _check_sized(pg, "all_gather_into_tensor", output_tensor, input_tensor, pg.size())
    _check_device(pg, "allgather", output_tensor, input_tensor)
    _verify_same_call(pg, "all_gather_into_tensor", input_tensor)
    output = FlatBuffer(output_tensor)
    pending = pg.engine.allgather(FlatBuffer(input_tensor).array, output.array, async_op)
    return _complete(pg, "all_gather_into_tensor", pending, async_op, output.write_back)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduces input across ranks with op and leaves each rank its own chunk in output; a Work
    when async_op (torch.distributed.reduce_scatter_tensor)."""
    check_tensor(output, "output")
    check_tensor(input, "input")
    pg = resolve(group)
    if pg is None:
        return None
    engine_op = _engine_op(op, input)
    _check_sized(pg, "reduce_scatter_tensor", input, output, pg.size())
    _check_device(pg, "reduce_scatter", output, input)
    _verify_same_call(pg, "reduce_scatter_tensor", input)
    result = _reduced(pg, output)
    pending = pg.engine.reduce_scatter(_reduced(pg, input).array, result.array,
                                       _sent_op(pg, engine_op, input), async_op)
    return _complete(pg, "reduce_scatter_tensor", pending, async_op, result.write_back,
                     _averager(pg, engine_op, output))


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduces input_list[i] across ranks with op into rank i's output; a Work when async_op
    (torch.distributed.reduce_scatter). Every input holds output's number of elements."""
    check_tensor(output, "output")
    check_tensor_list(input_list, "input_list")
    _ensure_same_dtype(output, *input_list)
    pg = resolve(group)
    if pg is None:
        return None
    name = f"ProcessGroup{pg.engine.name.upper()}::reduce_scatter"
    _check_list_length(name, "input", input_list, pg.size())
    for i, t in enumerate(input_list):
        if t.numel() != output.numel():
            raise ValueError(f"{name}: input_list[{i}] is {describe(t)}, but every input must "
                             f"have the elements of output, {describe(output)}")
    return reduce_scatter_tensor(output, _concatenated(input_list), op, group, async_op)


def _concatenated(tensors):
    """The tensors' elements one after another in a new 1-d tensor (bytes moved, no math)."""
    from ..functions.joining import cat
    with no_grad():
        return cat([t.reshape(-1) for t in tensors])


def _ensure_same_dtype(*tensors):
    """torch's check that collective arguments share one dtype (torch also lets complex64 meet
    float32, through views as (re, im) pairs of twice the size; here counts are elements of
    each tensor's own dtype, so that mix is refused too)."""
    first = None
    for t in tensors:
        if first is None:
            first = t.dtype
        elif t.dtype is not first:
            raise ValueError(f"Invalid usage of tensors with different dtypesFound "
                             f"torch.{first.name} and  torch.{t.dtype.name}")


def _check_list_length(name, argument, tensors, world):
    if len(tensors) != world:
        raise RuntimeError(f"{name}: the {argument} list has {len(tensors)} tensors, one per "
                           f"rank of the group ({world}) is needed")


def _check_sized(pg, operation, big, small, factor):
    """`big` holds `factor` times `small`'s elements, of the same dtype."""
    if big.dtype is not small.dtype:
        raise RuntimeError(f"ProcessGroup{pg.engine.name.upper()}::{operation}: input and output "
                           f"tensors must have the same dtype, got {big.dtype} and "
                           f"{small.dtype}")
    if big.numel() != small.numel() * factor:
        raise ValueError(f"{operation}: the larger tensor must have world size ({factor}) times "
                         f"the elements of the smaller one: got {describe(big)} and "
                         f"{describe(small)}")


def gather(tensor, gather_list=None, dst=None, group=None, async_op=False, group_dst=None):
    """Collects every rank's tensor into gather_list on rank dst; a Work when async_op
    (torch.distributed.gather)."""
    check_tensor(tensor)
    pg = resolve(group)
    if pg is None:
        return None
    root = _root(pg, dst, group_dst, "gather", "dst")
    at_root = pg.rank() == root
    _check_root_list(pg, "gather_list", gather_list, at_root, "destination", tensor, "gather")
    _check_device(pg, "gather", tensor, *(gather_list or ()))
    _verify_same_call(pg, "gather", tensor)
    source = FlatBuffer(tensor).array
    gathered = tensor._data.backend.empty(source.size * pg.size(), source.dtype) \
        if at_root else None
    pending = pg.engine.gather(source, gathered, root, async_op)
    copy = (lambda: _split_into(gathered, gather_list)) if at_root else None
    return _complete(pg, "gather", pending, async_op, copy)


def scatter(tensor, scatter_list=None, src=None, group=None, async_op=False, group_src=None):
    """Sends scatter_list[i] from rank src into rank i's tensor; a Work when async_op
    (torch.distributed.scatter)."""
    check_tensor(tensor)
    pg = resolve(group)
    if pg is None:
        return None
    root = _root(pg, src, group_src, "scatter", "src")
    at_root = pg.rank() == root
    _check_root_list(pg, "scatter_list", scatter_list, at_root, "source", tensor, "scatter")
    _check_device(pg, "scatter", tensor, *(scatter_list or ()))
    _verify_same_call(pg, "scatter", tensor)
    received = FlatBuffer(tensor)
    source = None
    if at_root:
        source = tensor._data.backend.empty(received.array.size * pg.size(),
                                            received.array.dtype)
        start = 0
        for t in scatter_list:
            source[start:start + t.numel()] = FlatBuffer(t).array
            start += t.numel()
    pending = pg.engine.scatter(source, received.array, root, async_op)
    return _complete(pg, "scatter", pending, async_op, received.write_back)


def _check_root_list(pg, argument, tensors, at_root, role, tensor, operation):
    """torch's rules for gather_list / scatter_list: given at the root only, one per rank."""
    if not at_root:
        if tensors:
            raise ValueError(f"Argument ``{argument}`` must NOT be specified on non-{role} "
                             "ranks.")
        return
    if not tensors:
        raise ValueError(f"Argument ``{argument}`` must be specified on {role} rank.")
    check_tensor_list(tensors, argument)
    if len(tensors) != pg.size():
        raise RuntimeError(f"ProcessGroup{pg.engine.name.upper()}::{operation}: Incorrect "
                           f"{'input' if operation == 'scatter' else 'output'} list size "
                           f"{len(tensors)}. {'Input' if operation == 'scatter' else 'Output'} "
                           f"list size should be {pg.size()}, same as size of the process "
                           "group.")
    _check_same_dtype(pg, operation, tensor, tensors)
    for i, t in enumerate(tensors):
        if t.shape != tensor.shape:
            raise RuntimeError(f"ProcessGroup{pg.engine.name.upper()}::{operation}: invalid "
                               f"tensor size at index {i} (expected {describe(tensor)}, got "
                               f"{describe(t)})")


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None,
                      group=None, async_op=False):
    """Splits input among the ranks and concatenates what each rank receives into output, with
    optional uneven split sizes (torch.distributed.all_to_all_single)."""
    check_tensor(output, "output")
    check_tensor(input, "input")
    pg = resolve(group)
    if pg is None:
        return None
    if output.dtype is not input.dtype:
        raise RuntimeError(f"ProcessGroup{pg.engine.name.upper()}::alltoall_base: input and "
                           f"output tensors must have the same dtype, got {input.dtype} and "
                           f"{output.dtype}")
    send_counts = _split_counts(input, input_split_sizes, pg.size())
    receive_counts = _split_counts(output, output_split_sizes, pg.size())
    _check_device(pg, "alltoall_base", output, input)
    _verify_same_call(pg, "all_to_all_single", input)
    result = FlatBuffer(output)
    pending = pg.engine.alltoall(FlatBuffer(input).array, send_counts, result.array,
                                 receive_counts, async_op)
    return _complete(pg, "all_to_all_single", pending, async_op, result.write_back)


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    """Sends input_tensor_list[i] to rank i and receives rank i's tensor for this rank into
    output_tensor_list[i]; sizes may differ from rank to rank; a Work when async_op
    (torch.distributed.all_to_all)."""
    check_tensor_list(output_tensor_list, "output_tensor_list")
    check_tensor_list(input_tensor_list, "input_tensor_list")
    _ensure_same_dtype(*output_tensor_list, *input_tensor_list)
    pg = resolve(group)
    if pg is None:
        return None
    name = f"ProcessGroup{pg.engine.name.upper()}::alltoall"
    _check_list_length(name, "input", input_tensor_list, pg.size())
    _check_list_length(name, "output", output_tensor_list, pg.size())
    _check_device(pg, "alltoall", *output_tensor_list, *input_tensor_list)
    source = _concatenated(input_tensor_list)
    received = source._data.backend.empty(sum(t.numel() for t in output_tensor_list),
                                          FlatBuffer(source).array.dtype)
    pending = pg.engine.alltoall(FlatBuffer(source).array,
                                 [t.numel() for t in input_tensor_list], received,
                                 [t.numel() for t in output_tensor_list], async_op)
    return _complete(pg, "all_to_all", pending, async_op,
                     lambda: _split_into(received, output_tensor_list))


def _split_counts(tensor, split_sizes, world):
    """Elements sent to (or received from) each rank: dim-0 splits times the row size."""
    rows = tensor.shape[0] if tensor.ndim else 1
    row_size = tensor.numel() // rows if rows else 0
    if not split_sizes:
        if rows % world:
            raise RuntimeError("Tensor's dim 0 does not divide equally across group size")
        return [rows // world * row_size] * world
    split_sizes = list(split_sizes)
    if len(split_sizes) != world:
        raise RuntimeError("Number of tensor splits not equal to group size")
    if sum(split_sizes) != rows or any(s < 0 for s in split_sizes):
        raise RuntimeError("Split sizes doesn't match total dim 0 size")
    return [s * row_size for s in split_sizes]


# ---- point to point -------------------------------------------------------------------------
def send(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Sends tensor to rank dst, blocking until it is sent (torch.distributed.send)."""
    pg, peer, buffer = _p2p(tensor, dst, group, group_dst, "destination")
    if pg is not None:
        pg.engine.send(buffer.array, peer, tag, False)


def isend(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Sends tensor to rank dst without blocking; returns a Work to wait on
    (torch.distributed.isend)."""
    pg, peer, buffer = _p2p(tensor, dst, group, group_dst, "destination")
    if pg is None:
        return None
    return Work(pg.engine.send(buffer.array, peer, tag, True), "send", pg.ranks[pg.rank()],
                pg.timeout_s)


def recv(tensor, src=None, group=None, tag=0, group_src=None):
    """Receives into `tensor`; returns the sender's global rank (any sender when src=None)."""
    pg, peer, buffer = _p2p(tensor, src, group, group_src, "source")
    if pg is None:
        return -1
    source = pg.engine.recv(buffer.array, peer, tag, False)
    buffer.write_back()
    return pg.ranks[source]


def irecv(tensor, src=None, group=None, tag=0, group_src=None):
    """Receives into tensor from rank src without blocking; returns a Work to wait on
    (torch.distributed.irecv)."""
    pg, peer, buffer = _p2p(tensor, src, group, group_src, "source")
    if pg is None:
        return None
    return Work(pg.engine.recv(buffer.array, peer, tag, True), "recv", pg.ranks[pg.rank()],
                pg.timeout_s, (buffer.write_back,))


def _p2p(tensor, peer, group, group_peer, role):
    check_tensor(tensor)
    pg = resolve(group)
    if pg is None:
        return None, None, None
    rank = peer_rank(pg, peer, group_peer, role)
    _check_device(pg, "send" if role == "destination" else "recv", tensor)
    return pg, rank, FlatBuffer(tensor)


def peer_rank(pg, peer, group_peer, role):
    """The rank in pg of a send's destination or a receive's source (role), from a global
    (peer) or group rank; None for a receive from any rank."""
    if peer is None and group_peer is None and role == "source":
        return None
    operation, argument = ("send", "dst") if role == "destination" else ("recv", "src")
    rank = _root(pg, peer, group_peer, operation, argument)
    if rank == pg.rank():
        raise ValueError(f"Invalid {role} rank: {role} rank should not be the same as the "
                         "rank of the current process.")
    return rank


class P2POp:
    """One send or receive for batch_isend_irecv: op is isend or irecv, peer a global rank
    (or group_peer a rank in group) (torch.distributed.P2POp)."""

    def __init__(self, op, tensor, peer=None, group=None, tag=0, group_peer=None):
        if op is not isend and op is not irecv:
            raise ValueError("Invalid ``op``. Expected ``op`` to be of type "
                             "``torch.distributed.isend`` or ``torch.distributed.irecv``.")
        check_tensor(tensor)
        self.op, self.tensor, self.group, self.tag = op, tensor, group, tag
        pg = resolve(group)
        self.group_peer = None if pg is None else _root(
            pg, peer, group_peer, "send" if op is isend else "recv",
            "dst" if op is isend else "src")
        self.peer = None if pg is None else pg.ranks[self.group_peer]

    def __repr__(self):
        pg = resolve(self.group)
        me = pg.rank() if pg is not None else -1
        src, dst = (me, self.group_peer) if self.op is isend else (self.group_peer, me)
        return (f"P2POp({self.op.__name__} pg={pg.name if pg else None}, group_src={src}, "
                f"group_dst={dst},  {self.tensor.shape}, {self.tensor.dtype})")


def batch_isend_irecv(p2p_op_list):
    """Starts every send and receive of the list (P2POps of one group) and returns their Works
    to wait on (torch.distributed.batch_isend_irecv). NCCL issues them as one group, so that
    pairs of ranks sending to each other do not wait on one another."""
    if not isinstance(p2p_op_list, list) or not all(isinstance(p, P2POp) for p in p2p_op_list):
        raise ValueError("Invalid ``p2p_op_list``. Each op is expected to to be of type "
                         "``torch.distributed.P2POp``.")
    group = p2p_op_list[0].group
    if not all(p.group is group for p in p2p_op_list):
        raise ValueError("All ops need to use the same group.")
    pg = resolve(group)
    if pg is None:
        return []
    with pg.engine.batched():
        works = [p.op(p.tensor, group=group, tag=p.tag,
                      **{"group_dst" if p.op is isend else "group_src": p.group_peer})
                 for p in p2p_op_list]
    return [work for work in works if work is not None]


def barrier(group=None, async_op=False, device_ids=None, timeout=None):
    """Blocks until every rank of group reaches it; a Work when async_op
    (torch.distributed.barrier). device_ids and timeout are accepted and ignored."""
    pg = resolve(group)
    if pg is None:
        return None
    return _complete(pg, "barrier", pg.engine.barrier(async_op), async_op)


def monitored_barrier(group=None, timeout=None, wait_all_ranks=False):
    """A barrier that names who did not come: rank 0 waits up to `timeout` for a token from
    every other rank, then releases them; a rank missing raises DistBackendError on rank 0
    naming it (the first one, or every late one with wait_all_ranks), and the others raise when
    rank 0's release does not come in time (torch.distributed.monitored_barrier, which torch
    runs on gloo only)."""
    pg = resolve(group)
    if pg is None or pg.size() == 1:
        return None
    if isinstance(timeout, float):
        warnings.warn("Please specify timeout arg as a timedelta. Converting current value of "
                      f"{timeout} assuming it represents seconds", stacklevel=2)
        timeout = datetime.timedelta(seconds=timeout)
    timeout_s = pg.timeout_s if timeout is None else _seconds(timeout)
    deadline = time.monotonic() + timeout_s
    token = zeros(1, dtype=dtypes.int32, device=pg.engine.device_type)
    if pg.rank() != 0:
        isend(token, group=group, group_dst=0).wait()
        if not irecv(token, group=group, group_src=0).wait_until(deadline):
            raise DistBackendError(f"[Rank {pg.ranks[pg.rank()]}]: Rank 0 did not release "
                                   f"monitoredBarrier in {int(timeout_s * 1000)} ms")
        return None
    arrivals = {r: irecv(zeros(1, dtype=dtypes.int32, device=token.device), group=group,
                         group_src=r) for r in range(1, pg.size())}
    late = [pg.ranks[r] for r, work in arrivals.items() if not work.wait_until(deadline)]
    if late:
        shown = late if wait_all_ranks else late[:1]
        who = f"Ranks {', '.join(map(str, shown))}" if len(shown) > 1 else f"Rank {shown[0]}"
        raise DistBackendError(f"{who} failed to pass monitoredBarrier in "
                               f"{int(timeout_s * 1000)} ms")
    for r in arrivals:
        isend(token, group=group, group_dst=r).wait()
    return None


# ---- ranks ----------------------------------------------------------------------------------
def _root(pg, global_rank, group_rank, operation, role):
    """The root's rank inside the group from src/dst (global) or group_src/group_dst; gather
    and scatter default to rank 0, the others need one of them (torch's rules)."""
    if global_rank is not None and group_rank is not None:
        raise ValueError("Can't specify both group_rank and global_rank")
    if group_rank is not None:
        if not 0 <= group_rank < pg.size():
            raise ValueError(f"Group rank {group_rank} is not part of group {pg!r}")
        return group_rank
    if global_rank is None:
        if operation not in ("gather", "scatter"):
            raise ValueError("Must specify global_rank or group_rank")
        global_rank = 0
    return pg.group_rank(global_rank, role, operation)
