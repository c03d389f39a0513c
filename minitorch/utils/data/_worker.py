"""What runs inside a DataLoader worker process, and the fetchers that turn a sampler's indices
into a batch (shared with the single-process loader).

A worker reads `(task_id, indices)` from its own index queue, fetches and collates the batch,
and sends `(task_id, batch)` over its own result channel (_shm_channel: whole messages, large
batches in anonymous shared memory). It shares no lock with other processes, never blocks for
good on a send, and dies with the main process (ParentWatch).
"""
import ctypes
import os
import pickle
import queue
import random
import selectors
import signal
import sys
import threading
import time
import traceback

import numpy as np

from . import _shm_channel
from ._collate import default_collate

# How often a worker checks that its parent still exists (so it outlives it at most this long).
PARENT_CHECK_INTERVAL = 0.5
PR_SET_PDEATHSIG = 1  # linux/prctl.h
RESUME_ACK = "resume"  # the task id of a worker's reply to a ResumeIteration

_worker_info = None


class WorkerInfo:
    """id, num_workers, seed and dataset (this worker's copy); read-only once built."""
    __initialized = False

    def __init__(self, **kwargs):
        for key, value in kwargs.items():
            setattr(self, key, value)
        self.__keys = tuple(kwargs)
        self.__initialized = True

    def __setattr__(self, key, value):
        if self.__initialized:
            raise RuntimeError(f"Cannot assign attributes to {self.__class__.__name__} objects")
        super().__setattr__(key, value)

    def __repr__(self):
        items = ", ".join(f"{key}={getattr(self, key)}" for key in self.__keys)
        return f"{self.__class__.__name__}({items})"


def get_worker_info():
    """This worker's WorkerInfo inside a DataLoader worker process; None in the main process."""
    return _worker_info


class ExceptionWrapper:
    """An exception caught in a worker, carried to the main process as its type and formatted
    traceback (the traceback object itself can't cross a process boundary)."""

    def __init__(self, exc_info=None, where="in background"):
        exc_info = exc_info or sys.exc_info()
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self):
        """Raise the same exception type with torch's message: where it was caught, then the
        original traceback."""
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = KeyErrorMessage(msg)
        elif getattr(self.exc_type, "message", None):
            raise self.exc_type(message=msg)
        try:
            exception = self.exc_type(msg)
        except Exception:
            raise RuntimeError(msg) from None
        raise exception

    def __reduce__(self):
        # A locally defined exception class can't be pickled by reference: send RuntimeError.
        exc_type = self.exc_type
        try:
            pickle.dumps(exc_type)
        except Exception:
            exc_type = RuntimeError
        return (_rebuild_wrapper, (exc_type, self.exc_msg, self.where))


def _rebuild_wrapper(exc_type, exc_msg, where):
    wrapper = ExceptionWrapper.__new__(ExceptionWrapper)
    wrapper.exc_type, wrapper.exc_msg, wrapper.where = exc_type, exc_msg, where
    return wrapper


class KeyErrorMessage(str):
    """KeyError repr()s its argument; this keeps the traceback text readable."""

    def __repr__(self):
        return self


class IterableDatasetStopIteration:
    """A worker's answer once its copy of an IterableDataset is exhausted."""

    def __init__(self, worker_id):
        self.worker_id = worker_id


class ResumeIteration:
    """Sent to persistent workers at the start of a new epoch: rebuild the fetcher."""


# ---- fetchers ----------------------------------------------------------------------------------
class MapDatasetFetcher:
    """indices → batch for a map-style dataset. With default_collate and a dataset that offers
    `_getitems_collated`, the batch is gathered in one go; otherwise samples come from
    `__getitems__` (one call per batch) or `dataset[i]`, then `collate_fn`."""

    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.collated = getattr(dataset, "_getitems_collated", None) \
            if collate_fn is default_collate else None
        self.getitems = getattr(dataset, "__getitems__", None)

    def fetch(self, index):
        if not self.auto_collation:
            return self.collate_fn(self.dataset[index])
        if self.collated is not None:
            return self.collated(index)
        if self.getitems:
            data = self.getitems(index)
        else:
            data = [self.dataset[i] for i in index]
        return self.collate_fn(data)


class IterableDatasetFetcher:
    """Next `len(index)` samples of the dataset's iterator → batch (StopIteration at the end;
    a final partial batch is dropped with drop_last)."""

    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset_iter = iter(dataset)
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        self.ended = False

    def fetch(self, index):
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self.dataset_iter))
        data = []
        for _ in index:
            try:
                data.append(next(self.dataset_iter))
            except StopIteration:
                self.ended = True
                break
        if not data or (self.drop_last and len(data) < len(index)):
            raise StopIteration
        return self.collate_fn(data)


def create_fetcher(iterable, dataset, auto_collation, collate_fn, drop_last):
    kind = IterableDatasetFetcher if iterable else MapDatasetFetcher
    return kind(dataset, auto_collation, collate_fn, drop_last)


# ---- the worker process ------------------------------------------------------------------------
def seed_worker(seed):
    """Seed every RNG a dataset might use: minitorch's, Python's and numpy's legacy global one."""
    from ...random import manual_seed
    random.seed(seed)
    manual_seed(seed)
    np.random.seed(np.random.SeedSequence(seed).generate_state(4))


def worker_loop(iterable, dataset, index_queue, result_channel, stop_flag, auto_collation,
                collate_fn, drop_last, base_seed, init_fn, worker_id, num_workers,
                main_pid, die_with_parent):
    """The body of worker process `worker_id` (see the module docstring)."""
    global _worker_info
    parent = ParentWatch(main_pid, die_with_parent)
    try:
        from ..._cpu.threads import set_num_threads
        # One kernel thread per worker: workers already run in parallel, and an OpenMP pool
        # inherited through fork must not be used.
        set_num_threads(1)
        seed = base_seed + worker_id
        seed_worker(seed)
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed,
                                  dataset=dataset)
        where = f"in DataLoader worker process {worker_id}"
        init_exception, fetcher = None, None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = create_fetcher(iterable, dataset, auto_collation, collate_fn, drop_last)
        except Exception:
            init_exception = ExceptionWrapper(where=where)
        sender = ResultSender(result_channel, parent, stop_flag, where)
        _serve(index_queue, sender, stop_flag, parent, fetcher, init_exception, where,
               lambda: create_fetcher(iterable, dataset, auto_collation, collate_fn, drop_last),
               worker_id)
    except (KeyboardInterrupt, ParentGone):
        pass


def _serve(index_queue, sender, stop_flag, parent, fetcher, init_exception, where, new_fetcher,
           worker_id):
    iteration_end = False
    while parent.alive():
        try:
            task = index_queue.get(timeout=PARENT_CHECK_INTERVAL)
        except queue.Empty:
            continue
        if task is None:
            break
        if isinstance(task, ResumeIteration):
            sender.send(RESUME_ACK, None)
            iteration_end = False
            fetcher = new_fetcher()
            continue
        if stop_flag.value or iteration_end:
            continue
        task_id, index = task
        if init_exception is not None:
            data, init_exception = init_exception, None
        else:
            try:
                data = fetcher.fetch(index)
            except StopIteration:
                if not isinstance(fetcher, IterableDatasetFetcher):
                    data = ExceptionWrapper(where=where)
                else:
                    data, iteration_end = IterableDatasetStopIteration(worker_id), True
            except Exception:
                data = ExceptionWrapper(where=where)
        sender.send(task_id, data)
        del data, task, index


class ParentGone(Exception):
    """The main process died or stopped listening: this worker stops."""


class ResultSender:
    """Sends `(task_id, data)` over this worker's channel without ever blocking for good: a send
    the main process does not take within PARENT_CHECK_INTERVAL is retried only while the parent
    lives and the loader has not stopped."""

    def __init__(self, channel, parent, stop_flag, where):
        channel.setblocking(False)
        self.writer = _shm_channel.SlotWriter(channel)
        self.channel, self.parent, self.stop_flag, self.where = channel, parent, stop_flag, where

    def send(self, task_id, data):
        message, fd = self._encode(task_id, data)
        while True:
            try:
                self.writer.send(message, fd)
                return
            except (BlockingIOError, InterruptedError):
                pass
            except ConnectionError:
                raise ParentGone from None  # the main process closed its end: it has stopped
            with selectors.DefaultSelector() as selector:  # select() can't take fds >= 1024
                selector.register(self.channel, selectors.EVENT_WRITE)
                selector.select(PARENT_CHECK_INTERVAL)
            if not self.parent.alive():
                raise ParentGone
            if self.stop_flag.value:
                return  # shutting down: nobody will read it

    def _encode(self, task_id, data):
        # Pickled here, not in the main process: an unpicklable batch becomes an error the main
        # process sees instead of a silently dropped message.
        try:
            return self.writer.encode(task_id, data)
        except Exception:
            return self.writer.encode(task_id, ExceptionWrapper(where=self.where))


class ParentWatch:
    """Makes this worker die with the main process, busy or idle: the kernel kills it when the
    thread that started it ends (Linux, when that thread is the main process's main thread),
    and a daemon thread exits the process once the parent is gone (everywhere)."""

    def __init__(self, main_pid, die_with_parent):
        self.main_pid = main_pid
        self.parent_pid = os.getppid()
        if die_with_parent and self.parent_pid == main_pid:
            _kill_me_when_parent_dies()
        if not self.alive():  # it died before the line above took effect
            os._exit(1)
        threading.Thread(target=self._watch, name="DataLoaderWorkerWatchdog",
                         daemon=True).start()

    def alive(self):
        if os.getppid() != self.parent_pid:
            return False
        # With forkserver the parent is the server; the main process is checked directly.
        return self.parent_pid == self.main_pid or _pid_exists(self.main_pid)

    def _watch(self):
        while self.alive():
            time.sleep(PARENT_CHECK_INTERVAL)
        os._exit(1)  # the main thread may be blocked or busy in user code: don't wait for it


def _kill_me_when_parent_dies():
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # no prctl (not Linux): the watchdog thread alone does it


def _pid_exists(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
