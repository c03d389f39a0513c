"""Shared-memory CPU buffers: what `Tensor.share_memory_()` moves a tensor into and what
minitorch.multiprocessing sends between processes (torch's CPU storage sharing).

A shared buffer is a numpy array over a MAP_SHARED mapping of a memory file, so every process
that maps the file, or forks after it was mapped, reads and writes the same pages. The file is
one of two kinds, torch's two sharing strategies:

- "file_descriptor" (the default on Linux): an anonymous file (memfd_create; an unlinked
  temporary file where that is missing). It has no name: another process gets it as a file
  descriptor (multiprocessing.reduction.DupFd), and the kernel frees it once every descriptor
  and mapping of it is gone, whoever dies when. Each shared buffer keeps its descriptor open
  (to send it again), as torch's strategy does, so a process sharing very many tensors may need
  "file_system" or a higher `ulimit -n`.
- "file_system": a named file in /dev/shm (the temporary directory elsewhere), the descriptor
  closed once mapped. Another process opens it by name. The process that made it removes the
  name when its buffer is freed or when it exits normally (torch runs a manager daemon for
  this instead): a receiver must map the buffer while the sender still holds it, and a killed
  sender leaves its files behind.

`share(nd)` moves an NDArray's buffer into a new shared buffer in place: the values are copied
and every NDArray over the old buffer (its views, what autograd saved of it) is pointed at the
new one, so they all stay views of one memory, as torch's tensors share one moved storage.
numpy arrays taken of the old buffer before (`t.numpy()`) keep the old memory (in torch they
dangle). Mappings and buffers are cached by file identity, so a buffer that comes back to a
process (sent out and returned, or two views of one buffer in one message) is the very buffer
it had, and ops that check whether operands share a buffer (`a[1:] = a[:-1]`) still see it.
"""
import gc
import itertools
import mmap
import os
import secrets
import sys
import tempfile
import threading
import weakref

import numpy as np

if sys.platform in ("darwin", "win32"):
    STRATEGIES = ("file_system",)
else:
    STRATEGIES = ("file_descriptor", "file_system")
_strategy = STRATEGIES[0]


def get_strategy():
    return _strategy


def set_strategy(name):
    """Choose how later share() calls make their files (minitorch.multiprocessing checks the
    name first)."""
    global _strategy
    if name not in STRATEGIES:
        raise ValueError(f"unknown sharing strategy {name!r}")
    _strategy = name


class Mapping(mmap.mmap):
    """One shared file mapped into this process. `fd` is the open descriptor of a
    file_descriptor file (-1 for a named one), `name` the path of a file_system file, `key`
    the file's (st_dev, st_ino), `address` where the mapping starts."""


# (st_dev, st_ino) -> Mapping; (st_dev, st_ino, byte offset, length, numpy dtype) -> buffer
_MAPPINGS = weakref.WeakValueDictionary()
_BUFFERS = weakref.WeakValueDictionary()
_LOCK = threading.Lock()
_COUNTER = itertools.count()


def _after_fork():
    global _LOCK
    _LOCK = threading.Lock()     # a fork while another thread held it would leave it held


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def _release(fd, name, owner):
    """A mapping's finalizer: close its descriptor; the creator of a named file removes it."""
    if fd >= 0:
        try:
            os.close(fd)
        except OSError:
            pass
    if name is not None and os.getpid() == owner:
        try:
            os.unlink(name)
        except OSError:
            pass


def _map(fd, nbytes, name=None, owner=None, keep_fd=True):
    """Map `fd` (at least nbytes long) and register the mapping under its file's identity."""
    stat = os.fstat(fd)
    mapping = Mapping(fd, max(nbytes, 1))   # mmap keeps its own duplicate of fd
    mapping.fd = fd if keep_fd else -1
    mapping.name = name
    mapping.nbytes = nbytes
    mapping.key = (stat.st_dev, stat.st_ino)
    mapping.address = np.frombuffer(mapping, np.uint8, 1).ctypes.data
    weakref.finalize(mapping, _release, mapping.fd, name, owner)
    _MAPPINGS[mapping.key] = mapping
    return mapping


def anonymous_file(nbytes, name="minitorch-shared"):
    """A descriptor of a nameless memory file of nbytes (a memfd; an unlinked temporary file
    where there is none): what both sharing of tensors and the DataLoader's batches map."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create(name, os.MFD_CLOEXEC)
    else:
        fd, path = tempfile.mkstemp(prefix=name + "-")
        os.unlink(path)
    try:
        os.ftruncate(fd, nbytes)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _shm_dir():
    return "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()


def new_mapping(nbytes, strategy=None):
    """A new zero-filled shared file of nbytes (at least 1), mapped."""
    strategy = strategy or _strategy
    if strategy == "file_system":
        while True:
            name = os.path.join(_shm_dir(), f"minitorch_{os.getpid()}_{next(_COUNTER)}_"
                                            f"{secrets.token_hex(4)}")
            try:
                fd = os.open(name, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
                break
            except FileExistsError:
                continue
        try:
            os.ftruncate(fd, max(nbytes, 1))
            with _LOCK:
                return _map(fd, nbytes, name=name, owner=os.getpid(), keep_fd=False)
        except BaseException:
            os.unlink(name)
            raise
        finally:
            os.close(fd)
    fd = anonymous_file(max(nbytes, 1))
    try:
        with _LOCK:
            return _map(fd, nbytes)
    except BaseException:
        os.close(fd)
        raise


def attach_fd(fd, nbytes):
    """The mapping of a received descriptor (which this takes over: it is kept, or closed when
    the file is mapped here already)."""
    stat = os.fstat(fd)
    with _LOCK:
        mapping = _MAPPINGS.get((stat.st_dev, stat.st_ino))
        if mapping is not None:
            os.close(fd)
            return mapping
        try:
            return _map(fd, nbytes)
        except BaseException:
            os.close(fd)
            raise


def attach_name(name, nbytes):
    """The mapping of a named shared file; RuntimeError when its creator removed it already."""
    try:
        fd = os.open(name, os.O_RDWR)
    except FileNotFoundError:
        raise RuntimeError(f"shared memory file {name} no longer exists: its sending process "
                           "freed the tensor or exited before this process received it (the "
                           "'file_system' strategy needs the sender to keep the tensor until "
                           "it is received)") from None
    try:
        stat = os.fstat(fd)
        with _LOCK:
            mapping = _MAPPINGS.get((stat.st_dev, stat.st_ino))
            if mapping is None:
                mapping = _map(fd, nbytes, name=name, keep_fd=False)
            return mapping
    finally:
        os.close(fd)


def buffer_of(mapping, byte_offset, count, dtype):
    """The 1-D buffer of `count` elements of `dtype` at byte_offset in mapping, the same array
    object for as long as one is alive."""
    dtype = np.dtype(dtype)
    key = mapping.key + (byte_offset, count, dtype.str)
    with _LOCK:
        buffer = _BUFFERS.get(key)
        if buffer is None:
            buffer = np.frombuffer(mapping, dtype, count, byte_offset)
            _BUFFERS[key] = buffer
        return buffer


def mapping_of(buffer):
    """The Mapping a CPU buffer lies in, or None when it is not shared memory."""
    base = buffer
    while True:
        if isinstance(base, np.ndarray):
            base = base.base
        elif isinstance(base, memoryview):
            base = base.obj
        else:
            return base if isinstance(base, Mapping) else None


def is_shared(buffer):
    return mapping_of(buffer) is not None


def location(buffer):
    """(mapping, byte offset) of a shared buffer; the buffer must be one (see share)."""
    mapping = mapping_of(buffer)
    return mapping, buffer.ctypes.data - mapping.address


def shared_copy(buffer):
    """A new shared buffer holding a copy of a 1-D buffer's values."""
    buffer = np.asarray(buffer)
    mapping = new_mapping(buffer.nbytes)
    new = buffer_of(mapping, 0, buffer.size, buffer.dtype)
    np.copyto(new, buffer)
    return new


def share(nd):
    """Move a CPU NDArray's buffer into shared memory in place (nothing when it is there
    already): every object of nd's type whose `buffer` is the old one gets the new one."""
    old = nd.buffer
    if is_shared(old):
        return
    new = shared_copy(old)
    # References to `old`: nd's slot, the name `old`, getrefcount's argument. Anything more (a
    # view, what autograd saved, a numpy array over it) sends us looking for the other NDArrays.
    if sys.getrefcount(old) > 3:
        holder = type(nd)
        for referrer in gc.get_referrers(old):
            if type(referrer) is holder and referrer.buffer is old:
                referrer.buffer = new
    nd.buffer = new
