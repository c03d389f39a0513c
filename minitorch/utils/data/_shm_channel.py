"""A worker's result channel: whole messages from one worker process to the main process, never
a half-written one, with large payloads in anonymous shared memory.

A channel is a Unix socket pair of type SOCK_SEQPACKET (SOCK_DGRAM where the platform lacks it):
the kernel delivers each message whole or not at all, so a worker killed in the middle of a send
leaves nothing the reader could block on, and the reader only ever reads what is complete.

A payload is pickled with protocol 5, so tensor and array data come out as separate buffers.
A small payload travels inside the message. A larger one is written into one of the worker's
shared-memory slots: anonymous memory files (memfd_create; an unlinked temporary file where that
is missing) whose descriptor rides along with the first message that uses the file
(SCM_RIGHTS). The files have no name, so they cannot leak whoever dies when: the kernel frees
each once its last descriptor and mapping are gone, including descriptors still queued in a
socket that gets closed. The main process maps a slot once, unpickles straight from it, and
sends the slot back (a release message on the same socket) for the worker to reuse: writing
into memory that is already there is five times cheaper than into fresh pages. A slot whose
memory the unpickled batch still references (a numpy array viewing it) is not reused.
"""
import array
import mmap
import os
import pickle
import socket
import struct
import sys

from ..._cpu.shared import anonymous_file

# Largest message sent inline (bytes). Small enough to stay far below a Unix socket's send
# buffer (about 200 KB on Linux); macOS caps Unix datagrams at 2 KB, hence the second limit.
SEQPACKET_INLINE_LIMIT = 32 * 1024
DGRAM_INLINE_LIMIT = 1024
RECEIVE_SIZE = SEQPACKET_INLINE_LIMIT
ALIGNMENT = 64           # buffers start on cache lines, as numpy's own allocations do
SLOT_GRANULE = 64 * 1024  # slot sizes are rounded up to this, so a smaller last batch fits
_FD_BYTES = array.array("i").itemsize
_CMSG_CLOEXEC = getattr(socket, "MSG_CMSG_CLOEXEC", 0)
_RELEASE = struct.Struct("!i?")  # slot, reusable


def channel_pair():
    """(main end, worker end) of a new channel."""
    kind = getattr(socket, "SOCK_SEQPACKET", None)
    if kind is not None:
        try:
            return socket.socketpair(socket.AF_UNIX, kind)
        except OSError:
            pass
    return socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)


# ---- the worker's end ---------------------------------------------------------------------------
class SlotWriter:
    """Turns `(task_id, data)` into messages for a non-blocking worker end, reusing the slots
    the main process gives back."""

    def __init__(self, sock):
        self.sock = sock
        self.inline_limit = SEQPACKET_INLINE_LIMIT if sock.type != socket.SOCK_DGRAM \
            else DGRAM_INLINE_LIMIT
        self.slots = []   # slot → [fd, capacity, free]

    def encode(self, task_id, data):
        """`(message, fd)` for `send`: fd is a slot's file to pass along, or None. Raises what
        pickling raises."""
        buffers = []
        stream = pickle.dumps(data, protocol=5, buffer_callback=buffers.append)
        frames = [stream, *(buffer.raw() for buffer in buffers)]
        size = sum(frame.nbytes if isinstance(frame, memoryview) else len(frame)
                   for frame in frames)
        if size <= self.inline_limit:
            message = pickle.dumps((task_id, stream, [bytearray(b) for b in frames[1:]]),
                                   protocol=5)
            if len(message) <= self.inline_limit:
                return message, None
        slot, fd_to_send = self._slot_for(size + len(frames) * ALIGNMENT + 4096)
        try:
            layout_at, layout_size = _write_frames(self.slots[slot][0], frames)
        except BaseException:
            if fd_to_send is not None:  # a file the main process will never hear of
                os.close(fd_to_send)
                self.slots[slot] = [-1, 0, True]
            self.slots[slot][2] = True
            raise
        return pickle.dumps((task_id, slot, layout_at, layout_size), protocol=5), fd_to_send

    def send(self, message, fd):
        """Send one encoded message; BlockingIOError when the main process is not keeping up
        (nothing is sent then: try again)."""
        if fd is None:
            self.sock.sendmsg([message])
        else:
            self.sock.sendmsg([message],
                              [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [fd]))])

    def _slot_for(self, size):
        """A free slot of at least `size` bytes, as (slot, fd the main process has not seen
        yet or None)."""
        self._take_releases()
        free = [i for i, (_, _, is_free) in enumerate(self.slots) if is_free]
        for slot in free:
            if self.slots[slot][1] >= size:
                self.slots[slot][2] = False
                return slot, None
        if free:
            slot = free[0]
            if self.slots[slot][0] >= 0:
                os.close(self.slots[slot][0])  # too small: a new file takes its place
        else:
            slot = len(self.slots)
            self.slots.append(None)
        capacity = -(-size // SLOT_GRANULE) * SLOT_GRANULE
        fd = anonymous_file(capacity, "minitorch-dataloader-batch")
        self.slots[slot] = [fd, capacity, False]
        return slot, fd

    def _take_releases(self):
        while True:
            try:
                message = self.sock.recv(64)
            except (BlockingIOError, InterruptedError, ConnectionError):
                return  # none waiting, or the main end is closed (the send will tell)
            if len(message) != _RELEASE.size:
                return
            slot, reusable = _RELEASE.unpack(message)
            if not reusable:  # the main process's batch still uses that memory: leave it be
                os.close(self.slots[slot][0])
                self.slots[slot][:2] = [-1, 0]
            self.slots[slot][2] = True


def _write_frames(fd, frames):
    """Each frame at an aligned offset, then the pickled list of (offset, size); returns the
    offset of that list and its size."""
    layout, offset = [], 0
    for frame in frames:
        size = _write_all(fd, frame, offset)
        layout.append((offset, size))
        offset = -(-(offset + size) // ALIGNMENT) * ALIGNMENT
    index = pickle.dumps(layout, protocol=5)
    _write_all(fd, index, offset)
    return offset, len(index)


def _write_all(fd, frame, offset):
    # pwrite rather than a mapping: running out of memory is an OSError here, not a SIGBUS.
    view = memoryview(frame).cast("B")
    size = view.nbytes
    while view:
        written = os.pwrite(fd, view, offset)
        view, offset = view[written:], offset + written
    return size


# ---- the main process's end ---------------------------------------------------------------------
class SlotReader:
    """Reads whole messages from a non-blocking main end and gives slots back."""

    def __init__(self, sock):
        self.sock = sock
        self.mappings = {}      # slot → mmap of the worker's file
        self.unsent = []        # release messages the socket had no room for yet

    def receive(self):
        """The next whole message as `(task_id, data)`; None when none is waiting. Raises
        EOFError once the worker's end is closed."""
        try:
            message, ancillary, flags, _ = self.sock.recvmsg(
                RECEIVE_SIZE, socket.CMSG_SPACE(_FD_BYTES), _CMSG_CLOEXEC)
        except (BlockingIOError, InterruptedError):
            return None
        except ConnectionResetError:  # the worker died with our release messages unread
            raise EOFError from None
        fds = _received_fds(ancillary)
        if flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC):
            for fd in fds:
                os.close(fd)
            raise RuntimeError("DataLoader worker sent a truncated message")
        if not message:
            raise EOFError
        fields = pickle.loads(message)
        if len(fields) == 3:
            task_id, stream, buffers = fields
            return task_id, pickle.loads(stream, buffers=buffers)
        task_id, slot, layout_at, layout_size = fields
        if fds:
            self._map(slot, fds[0])
        return task_id, self._load(slot, layout_at, layout_size)

    def close(self):
        self.sock.close()
        for mapping in self.mappings.values():
            try:
                mapping.close()
            except BufferError:
                pass  # still viewed: unmapped when the last view goes
        self.mappings.clear()

    def _map(self, slot, fd):
        try:
            mapping = mmap.mmap(fd, os.fstat(fd).st_size)
        finally:
            os.close(fd)
        old = self.mappings.pop(slot, None)
        if old is not None:
            old.close()
        self.mappings[slot] = mapping

    def _load(self, slot, layout_at, layout_size):
        mapping = self.mappings[slot]
        whole, frames = memoryview(mapping), []
        try:
            layout = pickle.loads(whole[layout_at:layout_at + layout_size])
            frames = [whole[offset:offset + size] for offset, size in layout]
            data = pickle.loads(frames[0], buffers=frames[1:])
        finally:
            reusable = _unused_after_release(mapping, [*frames, whole])
            if not reusable:
                # The batch views this memory: it stays mapped as long as the batch lives.
                del self.mappings[slot]
            self._give_back(slot, reusable)
        return data

    def _give_back(self, slot, reusable):
        self.unsent.append(_RELEASE.pack(slot, reusable))
        while self.unsent:
            try:
                self.sock.send(self.unsent[0])
            except (BlockingIOError, InterruptedError):
                return  # the worker reads them before its next batch; retried next time
            except OSError:
                self.unsent.clear()  # the worker is gone
                return
            del self.unsent[0]


def _unused_after_release(mapping, views):
    """Release our views of `mapping`; True if nothing else views it any more. Every view of
    it, however derived (numpy arrays, memoryviews of our views), keeps the mapping object
    referenced, so its reference count tells."""
    for view in views:
        try:
            view.release()
        except BufferError:
            pass  # exported to something that lives on: the count below sees it
    views.clear()
    # References: the mappings dict, the caller's variable, this function's argument and
    # getrefcount's.
    return sys.getrefcount(mapping) <= 4


def _received_fds(ancillary):
    fds = array.array("i")
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[:len(data) - len(data) % _FD_BYTES])
    return list(fds)
