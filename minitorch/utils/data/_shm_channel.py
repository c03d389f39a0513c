"""A worker's result channel: whole messages from one worker process to the main process, never
a half-written one, with large payloads in anonymous shared memory.

A channel is a Unix socket pair of type SOCK_SEQPACKET (SOCK_DGRAM where the platform lacks it):
the kernel delivers each message whole or not at all, so a worker killed in the middle of a send
leaves nothing the reader could block on, and the reader only ever reads what is complete.

A payload is pickled with protocol 5, so tensor and array data come out as separate buffers.
A small payload travels inside the message. A larger one is written into an anonymous memory
file (memfd_create; an unlinked temporary file where that is missing) whose descriptor rides
along with the message (SCM_RIGHTS). The file has no name, so it cannot leak whoever dies when:
the kernel frees it once the last descriptor and mapping are gone, including descriptors still
queued in a socket that gets closed. The reader maps the file and unpickles straight from it.
"""
import array
import mmap
import os
import pickle
import socket
import tempfile

# Largest message sent inline (bytes). Small enough to stay far below a Unix socket's send
# buffer (about 200 KB on Linux); macOS caps Unix datagrams at 2 KB, hence the second limit.
SEQPACKET_INLINE_LIMIT = 32 * 1024
DGRAM_INLINE_LIMIT = 1024
RECEIVE_SIZE = SEQPACKET_INLINE_LIMIT
ALIGNMENT = 64  # buffers start on cache lines, as numpy's own allocations do
_FD_BYTES = array.array("i").itemsize
_CMSG_CLOEXEC = getattr(socket, "MSG_CMSG_CLOEXEC", 0)


def channel_pair():
    """(receiver, sender): the main process keeps the receiver, the worker gets the sender."""
    kind = getattr(socket, "SOCK_SEQPACKET", None)
    if kind is not None:
        try:
            return socket.socketpair(socket.AF_UNIX, kind)
        except OSError:
            pass
    return socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)


def _inline_limit(sock):
    return SEQPACKET_INLINE_LIMIT if sock.type != socket.SOCK_DGRAM else DGRAM_INLINE_LIMIT


# ---- sending (in the worker) --------------------------------------------------------------------
def encode(task_id, data, inline_limit):
    """Pickle `(task_id, data)` into what `send_message` sends: `(message, fd)`, where fd is an
    anonymous file holding the payload, or None when the payload fits in the message. Raises
    what pickling raises."""
    buffers = []
    stream = pickle.dumps(data, protocol=5, buffer_callback=buffers.append)
    buffers = [buffer.raw() for buffer in buffers]
    if len(stream) + sum(b.nbytes for b in buffers) <= inline_limit:
        message = pickle.dumps((task_id, stream, [bytearray(b) for b in buffers]), protocol=5)
        if len(message) <= inline_limit:
            return message, None
    fd, layout_at, layout_size = _write_frames([stream, *buffers])
    return pickle.dumps((task_id, layout_at, layout_size), protocol=5), fd


def _write_frames(frames):
    """An anonymous file with each frame at an aligned offset, then the pickled list of
    (offset, size); returns (fd, offset of that list, its size)."""
    fd = _anonymous_file()
    try:
        layout, offset = [], 0
        for frame in frames:
            _write_all(fd, frame, offset)
            layout.append((offset, len(frame) if isinstance(frame, bytes) else frame.nbytes))
            offset = -(-(offset + layout[-1][1]) // ALIGNMENT) * ALIGNMENT
        index = pickle.dumps(layout, protocol=5)
        _write_all(fd, index, offset)
        return fd, offset, len(index)
    except BaseException:
        os.close(fd)
        raise


def _anonymous_file():
    if hasattr(os, "memfd_create"):
        return os.memfd_create("minitorch-dataloader-batch", os.MFD_CLOEXEC)
    fd, path = tempfile.mkstemp(prefix="minitorch-dataloader-")
    os.unlink(path)
    return fd


def _write_all(fd, frame, offset):
    # pwrite rather than a mapping: running out of memory is an OSError here, not a SIGBUS.
    view = memoryview(frame).cast("B")
    while view:
        written = os.pwrite(fd, view, offset)
        view, offset = view[written:], offset + written


def send_message(sock, message, fd):
    """Send one encoded message (the fd, if any, travels with it and is closed here). May raise
    TimeoutError when the socket has a timeout and the reader is not keeping up; nothing is
    sent then and the fd stays open for another try."""
    if fd is None:
        sock.sendmsg([message])
        return
    sock.sendmsg([message], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [fd]))])
    os.close(fd)


# ---- receiving (in the main process) ------------------------------------------------------------
def receive(sock):
    """The next whole message on a non-blocking receiver as `(task_id, data)`; None when none is
    waiting. Raises EOFError once the worker's end is closed."""
    try:
        message, ancillary, flags, _ = sock.recvmsg(
            RECEIVE_SIZE, socket.CMSG_SPACE(_FD_BYTES), _CMSG_CLOEXEC)
    except (BlockingIOError, InterruptedError):
        return None
    fds = _received_fds(ancillary)
    if flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC):
        for fd in fds:
            os.close(fd)
        raise RuntimeError("DataLoader worker sent a truncated message")
    if not message:
        raise EOFError
    if not fds:
        task_id, stream, buffers = pickle.loads(message)
        return task_id, pickle.loads(stream, buffers=buffers)
    task_id, layout_at, layout_size = pickle.loads(message)
    return task_id, _load_mapped(fds[0], layout_at, layout_size)


def _received_fds(ancillary):
    fds = array.array("i")
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[:len(data) - len(data) % _FD_BYTES])
    return list(fds)


def _load_mapped(fd, layout_at, layout_size):
    try:
        mapping = mmap.mmap(fd, os.fstat(fd).st_size)
    finally:
        os.close(fd)
    whole = memoryview(mapping)
    layout = pickle.loads(whole[layout_at:layout_at + layout_size])
    frames = [whole[offset:offset + size] for offset, size in layout]
    data = pickle.loads(frames[0], buffers=frames[1:])
    try:
        for view in (*frames, whole):
            view.release()
        mapping.close()
    except BufferError:
        pass  # arrays in `data` still view the mapping: it is unmapped when they are freed
    return data
