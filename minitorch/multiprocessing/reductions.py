"""How tensors cross process boundaries (torch.multiprocessing.reductions).

`init_reductions()` registers `reduce_tensor` for Tensor and nn.Parameter in
multiprocessing.reduction.ForkingPickler's table, which is what multiprocessing pickles with:
a Process's arguments under the spawn and forkserver start methods, and everything put on a
Queue, SimpleQueue, Pipe connection or Pool. As in torch, a CPU tensor sent that way is moved
into shared memory first (in place, `Tensor.share_memory_()`, minitorch/_cpu/shared.py) and
only a handle to that memory travels: the receiving process maps the same pages, so writes on
either side are seen by the other. A tensor that is shared already is sent without a copy.
(Under the fork start method a Process's arguments are not pickled at all: the child inherits
the parent's memory, shared pages included, so call share_memory_() before starting it.)

What travels is torch's: shape, strides, storage offset, dtype and requires_grad, not .grad and
not hooks; a non-leaf tensor that requires grad is refused with torch's error. The handle is a
file descriptor (multiprocessing's DupFd: passed to a spawned child at start, or fetched from
the sending process, which must still be alive, through multiprocessing's resource sharer) or,
under the "file_system" strategy, the name of a file in /dev/shm.

cuda tensors: torch shares them through CUDA IPC, which minitorch does not implement. They are
sent as a copy (the ordinary pickle), with a warning: the receiver's writes are not seen by the
sender.
"""
import warnings
from multiprocessing import reduction

from .. import dtypes
from .._cpu import shared
from ..backend import CPU, get_backend
from ..ndarray import NDArray
from ..nn.parameter import Parameter
from ..tensor import Tensor, wrap

try:
    # Loaded now, not by the first DupFd: a Queue pickles in a background thread, and a fork
    # during that import would leave the child a half-initialised module (torch does the same).
    import multiprocessing.resource_sharer
except ImportError:
    pass

_warned_cuda = False


def rebuild_tensor(cls, handle, byte_offset, count, storage_dtype, dtype_name, shape, strides,
                   offset, requires_grad):
    """Unpickling: a tensor over the sender's shared memory."""
    kind, source, nbytes = handle
    if kind == "fd":
        mapping = shared.attach_fd(source.detach(), nbytes)
    else:
        mapping = shared.attach_name(source, nbytes)
    buffer = shared.buffer_of(mapping, byte_offset, count, storage_dtype)
    t = wrap(NDArray(buffer, tuple(shape), tuple(strides), offset, dtypes.from_name(dtype_name),
                     CPU, get_backend(CPU)))
    if cls is Parameter:
        return Parameter(t, requires_grad=requires_grad)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _handle(mapping):
    if mapping.name is not None:
        return ("name", mapping.name, mapping.nbytes)
    return ("fd", reduction.DupFd(mapping.fd), mapping.nbytes)


def reduce_tensor(tensor):
    """ForkingPickler's reducer for Tensor and Parameter (see the module docstring)."""
    global _warned_cuda
    if tensor.requires_grad and not tensor.is_leaf:
        raise RuntimeError(
            "Cowardly refusing to serialize non-leaf tensor which requires_grad, "
            "since autograd does not support crossing process boundaries.  "
            "If you just want to transfer the data, call detach() on the tensor "
            "before serializing (e.g., putting it on the queue).")
    nd = tensor._data
    if nd.device.type != "cpu":
        if not _warned_cuda:
            _warned_cuda = True
            warnings.warn("minitorch.multiprocessing sends cuda tensors as copies: minitorch "
                          "has no CUDA IPC, so the receiving process's writes are not seen by "
                          "the sender (torch shares them)", stacklevel=2)
        return tensor.__reduce_ex__(2)
    shared.share(nd)
    buffer = nd.buffer
    mapping, byte_offset = shared.location(buffer)
    return (rebuild_tensor,
            (type(tensor), _handle(mapping), byte_offset, buffer.size, buffer.dtype.str,
             nd.dtype.name, nd.shape, nd.strides, nd.offset, tensor.requires_grad))


def init_reductions():
    """Register the reducers with multiprocessing's pickler (done on import of
    minitorch.multiprocessing)."""
    reduction.register(Tensor, reduce_tensor)
    reduction.register(Parameter, reduce_tensor)


__all__ = ["init_reductions", "rebuild_tensor", "reduce_tensor"]
