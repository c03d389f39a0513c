"""mt.cpu (torch.cpu): the CPU under torch.cuda's names, for device-agnostic scripts
(`getattr(torch, device_type).synchronize()`). The CPU runs every op when it is called, on one
implicit queue, so streams and events are no-ops here, as they are in torch.cpu: Stream,
StreamContext / stream, Event, synchronize and set_device do nothing."""
import contextlib

from . import amp

__all__ = ["Event", "Stream", "StreamContext", "amp", "current_device", "current_stream",
           "device_count", "is_available", "is_initialized", "set_device", "stream",
           "synchronize"]


def is_available():
    """True: the CPU is always there."""
    return True


def is_initialized():
    """True: the CPU needs no initialisation."""
    return True


def device_count():
    """1: minitorch sees the CPU as one device (its threads are mt.get_num_threads())."""
    return 1


def current_device():
    """'cpu', as torch.cpu.current_device() answers."""
    return "cpu"


def set_device(device):
    """A no-op (there is one CPU device)."""


def synchronize(device=None):
    """A no-op: every CPU op has finished when its call returns."""


class Stream:
    """A no-op stand-in for torch.cuda.Stream: CPU work is never queued, so there is nothing to
    order or wait for."""

    def __init__(self, priority=-1):
        self.priority = priority

    def wait_stream(self, stream):
        """A no-op."""

    def record_event(self):
        """A no-op (returns None, as torch.cpu's)."""

    def wait_event(self, event):
        """A no-op."""


class Event:
    """A no-op stand-in for torch.cuda.Event: always complete."""

    def query(self):
        return True

    def record(self, stream=None):
        """A no-op."""

    def synchronize(self):
        """A no-op."""

    def wait(self, stream=None):
        """A no-op."""


_default_stream = Stream()
_current_stream = _default_stream


def current_stream(device=None):
    """The Stream selected by `stream(...)`, else the default one (`device` is ignored)."""
    return _current_stream


class StreamContext(contextlib.AbstractContextManager):
    """`with mt.cpu.stream(s):` makes s what current_stream() returns; nothing else changes
    (CPU ops run at once whatever the stream). None leaves the current stream as it is."""

    def __init__(self, stream):
        self.stream = stream
        self.prev_stream = _default_stream

    def __enter__(self):
        global _current_stream
        if self.stream is not None:
            self.prev_stream, _current_stream = _current_stream, self.stream

    def __exit__(self, *exc):
        global _current_stream
        if self.stream is not None:
            _current_stream = self.prev_stream


def stream(stream):
    """StreamContext(stream), as torch.cpu.stream."""
    return StreamContext(stream)
