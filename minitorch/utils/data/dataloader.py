"""DataLoader: batches from a dataset, in the main process or in worker processes.

With `num_workers > 0`, each worker has its own index queue and its own result channel
(_shm_channel: whole messages only, large batches in anonymous shared memory), and no lock is
shared between processes, so a worker killed at any moment cannot wedge the others or the main
process. The main process keeps `prefetch_factor` batches in flight per worker, hands tasks out
round-robin, puts the results back into sampler order, waits on the result channels and on the
workers' process sentinels together (so a dead worker is reported as soon as it dies), and shuts
every worker down when its iterator ends, fails or is deleted (or, with persistent_workers, when
the loader goes away). Workers die with the main process (see _worker.ParentWatch).
"""
import collections
import ctypes
import itertools
import multiprocessing
import multiprocessing.connection
import multiprocessing.context
import os
import signal
import threading
import time
import warnings

from .dataset import IterableDataset
from . import _shm_channel
from ._collate import default_collate, default_convert
from ._worker import (RESUME_ACK, ExceptionWrapper, IterableDatasetStopIteration,
                      ResumeIteration, create_fetcher, worker_loop)
from .sampler import (BatchSampler, InfiniteConstantSampler, RandomSampler, SequentialSampler,
                      draw_seed)

__all__ = ["DataLoader"]

# Longest single wait for a batch before the workers' liveness is checked again. Death is seen
# at once through the sentinels; this only bounds the wait should a sentinel ever be missed.
STATUS_CHECK_INTERVAL = 5.0
JOIN_TIMEOUT = 2.0    # seconds all workers together get to exit before being terminated
STUCK_JOIN_TIMEOUT = 0.1  # the same after a timeout or a dead worker, when waiting is futile
_FROZEN = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
           "persistent_workers")


class DataLoader:
    """Iterate over `dataset` in batches (torch.utils.data.DataLoader's arguments and checks)."""
    __initialized = False

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor=None, persistent_workers=False, pin_memory_device="",
                 in_order=True):
        prefetch_factor = _check_worker_options(num_workers, timeout, prefetch_factor,
                                                persistent_workers)
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        # in_order=False only permits out-of-order batches: delivering them in order is valid
        self.in_order = in_order
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self._iterable = isinstance(dataset, IterableDataset)
        shuffle = _check_sampling_options(self._iterable, shuffle, sampler, batch_sampler,
                                          batch_size, drop_last)
        if batch_sampler is not None:
            batch_size, drop_last = None, False
        if sampler is None:
            if self._iterable:
                sampler = InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self._iterator = None
        self.__initialized = True

    @property
    def multiprocessing_context(self):
        return self.__multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, context):
        if context is not None:
            if self.num_workers <= 0:
                raise ValueError("multiprocessing_context can only be used with multi-process "
                                 "loading (num_workers > 0), but got "
                                 f"num_workers={self.num_workers}")
            if isinstance(context, str):
                valid = multiprocessing.get_all_start_methods()
                if context not in valid:
                    raise ValueError("multiprocessing_context option should specify a valid "
                                     f"start method in {valid!r}, but got "
                                     f"multiprocessing_context={context!r}")
                context = multiprocessing.get_context(context)
            if not isinstance(context, multiprocessing.context.BaseContext):
                raise TypeError("multiprocessing_context option should be a valid context "
                                "object or a string specifying the start method, but got "
                                f"multiprocessing_context={context}")
        self.__multiprocessing_context = context

    def __setattr__(self, attr, value):
        if self.__initialized and attr in _FROZEN:
            raise ValueError(f"{attr} attribute should not be set after "
                             f"{self.__class__.__name__} is initialized")
        super().__setattr__(attr, value)

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def __iter__(self):
        if self.persistent_workers and self.num_workers > 0:
            # One iterator (and one set of workers) for the loader's lifetime.
            if self._iterator is None or self._iterator._is_shutdown:
                self._iterator = _MultiProcessingDataLoaderIter(self)
            else:
                self._iterator._reset(self)
            return self._iterator
        if self.num_workers == 0:
            return _SingleProcessDataLoaderIter(self)
        return _MultiProcessingDataLoaderIter(self)

    def __len__(self):
        if self._iterable:
            length = len(self.dataset)
            if self.batch_size is not None:
                length = length // self.batch_size if self.drop_last else \
                    -(-length // self.batch_size)
            return length
        return len(self._index_sampler)


def _check_worker_options(num_workers, timeout, prefetch_factor, persistent_workers):
    """torch's checks of the multiprocessing arguments; returns the effective prefetch_factor."""
    if num_workers < 0:
        raise ValueError("num_workers option should be non-negative; use num_workers=0 to "
                         "disable multiprocessing.")
    if timeout < 0:
        raise ValueError("timeout option should be non-negative")
    if num_workers == 0 and prefetch_factor is not None:
        raise ValueError("prefetch_factor option could only be specified in multiprocessing."
                         "let num_workers > 0 to enable multiprocessing, otherwise set "
                         "prefetch_factor to None.")
    if num_workers > 0 and prefetch_factor is None:
        prefetch_factor = 2
    elif prefetch_factor is not None and prefetch_factor < 0:
        raise ValueError("prefetch_factor option should be non-negative")
    if persistent_workers and num_workers == 0:
        raise ValueError("persistent_workers option needs num_workers > 0")
    return prefetch_factor


def _check_sampling_options(iterable, shuffle, sampler, batch_sampler, batch_size, drop_last):
    """torch's checks of the sampling arguments; returns shuffle as a bool."""
    if iterable:
        if shuffle not in {False, None}:
            raise ValueError("DataLoader with IterableDataset: expected unspecified shuffle "
                             f"option, but got shuffle={shuffle}")
        if sampler is not None:
            raise ValueError("DataLoader with IterableDataset: expected unspecified sampler "
                             f"option, but got sampler={sampler}")
        if batch_sampler is not None:
            raise ValueError("DataLoader with IterableDataset: expected unspecified "
                             f"batch_sampler option, but got batch_sampler={batch_sampler}")
    else:
        shuffle = bool(shuffle)
    if sampler is not None and shuffle:
        raise ValueError("sampler option is mutually exclusive with shuffle")
    if batch_sampler is not None:
        if batch_size != 1 or shuffle or sampler is not None or drop_last:
            raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                             "shuffle, sampler, and drop_last")
    elif batch_size is None and drop_last:
        raise ValueError("batch_size=None option disables auto-batching and is mutually "
                         "exclusive with drop_last")
    return bool(shuffle)


class _BaseDataLoaderIter:
    def __init__(self, loader):
        self._dataset = loader.dataset
        self._iterable = loader._iterable
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        self._timeout = loader.timeout
        self._collate_fn = loader.collate_fn
        self._persistent_workers = loader.persistent_workers
        self._sampler_iter = iter(self._index_sampler)
        # Drawn for every iterator, as torch does, so the RNG stream matches torch's use.
        self._base_seed = draw_seed(loader.generator)
        if loader.pin_memory:
            from ... import cuda
            if not cuda.is_available():
                warnings.warn("'pin_memory' argument is set as true but no accelerator is "
                              "found, then device pinned memory won't be used.")

    def __iter__(self):
        return self

    def _reset(self, loader, first_iter=False):
        self._sampler_iter = iter(self._index_sampler)

    def _next_index(self):
        return next(self._sampler_iter)

    def __next__(self):
        return self._next_data()

    def __len__(self):
        return len(self._index_sampler)

    def __getstate__(self):
        raise NotImplementedError(f"{self.__class__.__name__} cannot be pickled")


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    def __init__(self, loader):
        super().__init__(loader)
        if self._timeout != 0:
            raise AssertionError("_SingleProcessDataLoaderIter requires timeout == 0")
        self._fetcher = create_fetcher(self._iterable, self._dataset, self._auto_collation,
                                       self._collate_fn, self._drop_last)

    def _next_data(self):
        return self._fetcher.fetch(self._next_index())


def _default_context():
    """fork where the platform has it (workers inherit the dataset without pickling it)."""
    if "fork" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context()


class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    """Worker processes fed through queues; see the module docstring."""

    def __init__(self, loader):
        super().__init__(loader)
        self._is_shutdown = True  # until the workers exist, there is nothing to shut down
        self._prefetch_factor = loader.prefetch_factor
        context = loader.multiprocessing_context or _default_context()
        # A flag in shared memory without a lock: a worker killed while reading it can't
        # leave a lock held (an Event's lock would wedge the main process at shutdown).
        self._stop_flag = context.RawValue(ctypes.c_bool, False)
        self._index_queues, self._workers, self._channels = [], [], []
        self._arrived = collections.deque()  # (task_id, data) received, not yet returned
        self._is_shutdown = False
        try:
            for worker_id in range(self._num_workers):
                self._start_worker(context, loader, worker_id)
            self._reset(loader, first_iter=True)
        except BaseException:
            self._shutdown_workers()
            raise

    def _start_worker(self, context, loader, worker_id):
        index_queue = context.Queue()
        # Tasks still buffered when we stop must not keep this process from exiting.
        index_queue.cancel_join_thread()
        receiver, sender = _shm_channel.channel_pair()
        # The kernel's parent-death signal follows the thread that started the worker: only
        # the main thread lives as long as the process.
        in_main_thread = threading.current_thread() is threading.main_thread()
        worker = context.Process(
            target=worker_loop, daemon=True,
            args=(self._iterable, self._dataset, index_queue, sender, self._stop_flag,
                  self._auto_collation, self._collate_fn, self._drop_last, self._base_seed,
                  loader.worker_init_fn, worker_id, self._num_workers, os.getpid(),
                  in_main_thread))
        try:
            worker.start()
        finally:
            sender.close()  # the worker has its own copy; workers started later get none
        receiver.setblocking(False)
        self._index_queues.append(index_queue)
        self._workers.append(worker)
        self._channels.append(_shm_channel.SlotReader(receiver))

    def _reset(self, loader, first_iter=False):
        super()._reset(loader, first_iter)
        self._send_idx = 0     # next task id to send
        self._rcvd_idx = 0     # next task id to return
        self._task_info = {}   # task id → (worker_id,) or (worker_id, data) if it came early
        self._workers_status = [True] * self._num_workers
        self._worker_cycle = itertools.cycle(range(self._num_workers))
        if not first_iter:
            # Persistent workers: start a new epoch, dropping what the last one left behind.
            for index_queue in self._index_queues:
                index_queue.put(ResumeIteration())
            pending = self._num_workers
            while pending:
                task_id, _ = self._get_data()
                pending -= task_id == RESUME_ACK
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    def _try_put_index(self):
        try:
            index = self._next_index()
        except StopIteration:
            return
        for _ in range(self._num_workers):
            worker_id = next(self._worker_cycle)
            if self._workers_status[worker_id]:
                break
        else:
            return  # every worker's copy of an IterableDataset is exhausted
        self._index_queues[worker_id].put((self._send_idx, index))
        self._task_info[self._send_idx] = (worker_id,)
        self._send_idx += 1

    def _get_data(self):
        """The next (task_id, data) from any worker; raises if a worker died or the timeout
        passed. Only whole messages are ever read, so this can't block on a dead worker."""
        deadline = time.monotonic() + self._timeout if self._timeout > 0 else None
        while not self._arrived:
            wait = STATUS_CHECK_INTERVAL if deadline is None else \
                max(0.0, min(STATUS_CHECK_INTERVAL, deadline - time.monotonic()))
            channels = [c for c in self._channels if c.sock.fileno() >= 0]
            ready = multiprocessing.connection.wait(
                [c.sock for c in channels] + [w.sentinel for w in self._workers], wait)
            for channel in channels:
                if channel.sock in ready:
                    self._receive(channel)
            self._raise_if_a_worker_died()
            if not self._arrived and deadline is not None and time.monotonic() >= deadline:
                # The workers are stuck in user code: don't wait for them to finish.
                self._shutdown_workers(join_timeout=STUCK_JOIN_TIMEOUT)
                raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")
        return self._arrived.popleft()

    def _receive(self, channel):
        """Take every whole message waiting on `channel`."""
        while True:
            try:
                message = channel.receive()
            except EOFError:
                channel.close()  # its worker is gone: the sentinel reports it
                return
            if message is None:
                return
            self._arrived.append(message)

    def _raise_if_a_worker_died(self):
        """torch's error for workers that exited while we wait for them, its cause naming the
        first one's exit code or signal."""
        dead = [w for w in self._workers if w.exitcode is not None]
        if not dead:
            return
        self._shutdown_workers(join_timeout=STUCK_JOIN_TIMEOUT)
        pids = ", ".join(str(w.pid) for w in dead)
        raise RuntimeError(f"DataLoader worker (pid(s) {pids}) exited unexpectedly") \
            from _exit_error(dead[0])

    def _next_data(self):
        if self._is_shutdown:
            raise StopIteration
        while True:
            # Skip tasks that went to a worker whose IterableDataset copy is exhausted.
            while self._rcvd_idx < self._send_idx:
                info = self._task_info[self._rcvd_idx]
                if len(info) == 2 or self._workers_status[info[0]]:
                    break
                del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
            else:
                if not self._persistent_workers:
                    self._shutdown_workers()
                raise StopIteration
            if len(self._task_info[self._rcvd_idx]) == 2:
                return self._process_data(self._task_info.pop(self._rcvd_idx)[1])
            task_id, data = self._get_data()
            if task_id == RESUME_ACK:
                continue
            if isinstance(data, IterableDatasetStopIteration):
                self._workers_status[data.worker_id] = False
                self._try_put_index()
                continue
            if task_id != self._rcvd_idx:
                self._task_info[task_id] += (data,)  # early: keep it until its turn
                continue
            del self._task_info[task_id]
            return self._process_data(data)

    def _process_data(self, data):
        self._rcvd_idx += 1
        self._try_put_index()
        if isinstance(data, ExceptionWrapper):
            self._shutdown_workers()
            data.reraise()
        return data

    def _shutdown_workers(self, join_timeout=JOIN_TIMEOUT):
        """Tell every worker to stop, give them `join_timeout` seconds, terminate the rest."""
        if self._is_shutdown:
            return
        self._is_shutdown = True
        try:
            self._stop_flag.value = True
            for worker, index_queue in zip(self._workers, self._index_queues):
                if worker.is_alive():
                    index_queue.put(None)
            deadline = time.monotonic() + join_timeout
            for worker in self._workers:
                worker.join(timeout=max(0.0, deadline - time.monotonic()))
            for index_queue in self._index_queues:
                index_queue.cancel_join_thread()
                index_queue.close()
            # Closing a channel frees the batches still queued in it, shared memory included.
            for channel in self._channels:
                channel.close()
            self._arrived.clear()
        finally:
            for worker in self._workers:
                if worker.is_alive():
                    worker.terminate()
                    worker.join(timeout=1.0)

    def __del__(self):
        try:
            self._shutdown_workers()
        except Exception:  # interpreter shutdown: modules may already be gone
            pass


def _exit_error(worker):
    """What torch's SIGCHLD handler reports for a worker that exited: its signal, or its exit
    code."""
    code = worker.exitcode
    if code < 0:
        try:
            name = signal.strsignal(-code) or f"{-code}"
        except ValueError:
            name = f"{-code}"
        return RuntimeError(f"DataLoader worker (pid {worker.pid}) is killed by signal: "
                            f"{name}. ")
    return RuntimeError(f"DataLoader worker (pid {worker.pid}) exited unexpectedly with exit "
                        f"code {code}. Details are lost due to multiprocessing. Rerunning "
                        "with num_workers=0 may give better error trace.")
