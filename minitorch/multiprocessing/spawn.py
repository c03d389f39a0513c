"""torch.multiprocessing.spawn: start N processes running fn(i, *args) and wait for them, with
torch's ProcessContext, exceptions and messages.

A child that raises writes its formatted traceback to a per-process error file (a one-shot
message that cannot deadlock, as torch does); the parent, on seeing a process exit non-zero,
terminates the others (SIGTERM, then SIGKILL after a grace period) and raises
ProcessRaisedException with that traceback, or ProcessExitedException with the exit code or
signal when the process died without one.
"""
import ctypes
import logging
import multiprocessing
import multiprocessing.connection
import os
import pickle
import signal
import sys
import tempfile
import time
import warnings
from concurrent.futures import ThreadPoolExecutor, as_completed

ENV_VAR_PARALLEL_START = "TORCH_MP_PARALLEL_START"

log = logging.getLogger(__name__)

__all__ = [
    "ProcessContext",
    "ProcessException",
    "ProcessExitedException",
    "ProcessRaisedException",
    "SpawnContext",
    "spawn",
    "start_processes",
]

_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def _prctl_pr_set_pdeathsig(sig):
    """Have the kernel send `sig` to this process when its parent dies (Linux; a no-op
    elsewhere), so non-daemonic children do not outlive a killed parent."""
    if not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
    except (OSError, AttributeError):
        pass


class ProcessException(Exception):
    __slots__ = ["error_index", "error_pid"]

    def __init__(self, msg, error_index, error_pid):
        super().__init__(msg)
        self.msg = msg
        self.error_index = error_index
        self.error_pid = error_pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.error_pid)


class ProcessRaisedException(ProcessException):
    """Exception raised when a process failed due to an exception raised by the code."""


class ProcessExitedException(ProcessException):
    """Exception raised when a process failed due to signal or exited with a specific code."""
    __slots__ = ["exit_code"]

    def __init__(self, msg, error_index, error_pid, exit_code, signal_name=None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code = exit_code
        self.signal_name = signal_name

    def __reduce__(self):
        return (type(self),
                (self.msg, self.error_index, self.error_pid, self.exit_code, self.signal_name))


def _wrap(fn, i, args, error_file):
    _prctl_pr_set_pdeathsig(signal.SIGINT)
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass  # SIGINT: killed by the parent
    except Exception:
        import traceback
        with open(error_file, "wb") as fh:
            pickle.dump(traceback.format_exc(), fh)
        sys.exit(1)


class ProcessContext:
    def __init__(self, processes, error_files):
        self.error_files = error_files
        self.processes = processes
        self.sentinels = {process.sentinel: index for index, process in enumerate(processes)}

    def pids(self):
        return [int(process.pid) for process in self.processes]

    def _join_procs_with_timeout(self, timeout):
        """Attempt to join all processes with a shared timeout."""
        end = time.monotonic() + timeout
        for process in self.processes:
            process.join(max(0, end - time.monotonic()))

    def join(self, timeout=None, grace_period=None):
        """Join one or more processes: True when all have exited successfully, False when
        some still run after `timeout`. If one exited with a non-zero status, the others are
        terminated (after `grace_period` seconds, then killed after another) and the cause is
        raised: ProcessRaisedException (the child's traceback) or ProcessExitedException."""
        if len(self.sentinels) == 0:
            return True
        ready = multiprocessing.connection.wait(self.sentinels.keys(), timeout=timeout)
        error_index = None
        for sentinel in ready:
            index = self.sentinels.pop(sentinel)
            process = self.processes[index]
            process.join()
            if process.exitcode != 0:
                error_index = index
                break
        if error_index is None:
            return len(self.sentinels) == 0

        if grace_period is not None:
            self._join_procs_with_timeout(grace_period)
        for process in self.processes:
            if process.is_alive():
                log.warning("Terminating process %s via signal SIGTERM", process.pid)
                process.terminate()
        self._join_procs_with_timeout(30 if grace_period is None else grace_period)
        for process in self.processes:
            if process.is_alive():
                log.warning("Unable to shutdown process %s via SIGTERM , forcefully exiting via "
                            "SIGKILL", process.pid)
                process.kill()
            process.join()

        failed_process = self.processes[error_index]
        if not os.access(self.error_files[error_index], os.R_OK):
            exitcode = failed_process.exitcode
            if exitcode < 0:
                try:
                    name = signal.Signals(-exitcode).name
                except ValueError:
                    name = f"<Unknown signal {-exitcode}>"
                raise ProcessExitedException(
                    f"process {error_index:d} terminated with signal {name}",
                    error_index=error_index, error_pid=failed_process.pid, exit_code=exitcode,
                    signal_name=name)
            raise ProcessExitedException(
                f"process {error_index:d} terminated with exit code {exitcode:d}",
                error_index=error_index, error_pid=failed_process.pid, exit_code=exitcode)

        with open(self.error_files[error_index], "rb") as fh:
            original_trace = pickle.load(fh)
        os.unlink(self.error_files[error_index])
        msg = f"\n\n-- Process {error_index:d} terminated with the following error:\n"
        msg += original_trace
        raise ProcessRaisedException(msg, error_index, failed_process.pid)


class SpawnContext(ProcessContext):
    def __init__(self, processes, error_files):
        warnings.warn("SpawnContext is renamed to ProcessContext since 1.4 release.",
                      stacklevel=2)
        super().__init__(processes, error_files)


def start_processes(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """spawn() for any start method ('spawn', 'fork', 'forkserver'): returns a ProcessContext
    when join is False, else waits for every process (None) or raises the first failure."""
    start_parallel = (start_method == "forkserver"
                      and os.environ.get(ENV_VAR_PARALLEL_START, "0") == "1")
    mp = multiprocessing.get_context(start_method)
    error_files = [None] * nprocs
    processes = [None] * nprocs

    def start_process(i):
        # Each process gets a file for its traceback: its existence tells an exception apart
        # from an expected shutdown.
        tf = tempfile.NamedTemporaryFile(prefix="minitorch-errorfile-", suffix=".pickle",
                                         delete=False)
        tf.close()
        os.unlink(tf.name)
        process = mp.Process(target=_wrap, args=(fn, i, args, tf.name), daemon=daemon)
        process.start()
        return i, process, tf.name

    if not start_parallel:
        for i in range(nprocs):
            idx, process, tf_name = start_process(i)
            error_files[idx] = tf_name
            processes[idx] = process
    else:
        with ThreadPoolExecutor(max_workers=nprocs) as executor:
            futures = [executor.submit(start_process, i) for i in range(nprocs)]
            for fut in as_completed(futures):
                idx, process, tf_name = fut.result()
                error_files[idx] = tf_name
                processes[idx] = process
    context = ProcessContext(processes, error_files)
    if not join:
        return context
    while not context.join():
        pass


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """torch.multiprocessing.spawn: run fn(i, *args) in nprocs processes, i = 0 … nprocs - 1.

    fn must be defined at the top level of a module (it is pickled). With join=True this waits
    for all of them and returns None, or terminates the rest and raises ProcessRaisedException
    (with the child's traceback) / ProcessExitedException as soon as one fails; with
    join=False it returns the ProcessContext. Always the spawn start method (another one is
    deprecated, with torch's FutureWarning: use start_processes)."""
    if start_method != "spawn":
        msg = (f"This method only supports start_method=spawn (got: {start_method}).\n"
               "To use a different start_method use:\n\t\t"
               " torch.multiprocessing.start_processes(...)")
        warnings.warn(msg, FutureWarning, stacklevel=2)
    return start_processes(fn, args, nprocs, join, daemon, start_method="spawn")
