"""torch.multiprocessing: Python's multiprocessing, with tensors shared between processes.

Everything of the standard module is re-exported (Process, Queue, Pool, Pipe, get_context,
set_start_method, …), and importing this package registers reducers with multiprocessing's
pickler (reductions.py): a CPU tensor or nn.Parameter sent to another process (a Process's
arguments under spawn/forkserver, a Queue, a Pipe, a Pool) is moved into shared memory
(Tensor.share_memory_(), minitorch/_cpu/shared.py) and the receiver maps the same memory, so
each side sees the other's writes: Hogwild training (`model.share_memory()`, then several
Processes training the one model) works under both fork and spawn. `spawn(fn, args, nprocs)`
(spawn.py) is torch's, with ProcessContext and ProcessRaisedException / ProcessExitedException.

Sharing strategies (torch's names): "file_descriptor" (the default on Linux) and
"file_system"; see minitorch/_cpu/shared.py for what each does and costs. cuda tensors are not
shared (torch uses CUDA IPC, which minitorch lacks): their share_memory_() is a no-op and they
are sent as copies, with a warning.
"""
import multiprocessing
import os
import sys
from multiprocessing import *  # noqa: F403  (the whole standard module, as torch)

from .._cpu import shared as _shared
from .reductions import init_reductions
from .spawn import (  # noqa: F401  (torch.multiprocessing's names)
    ENV_VAR_PARALLEL_START,
    ProcessContext,
    ProcessException,
    ProcessExitedException,
    ProcessRaisedException,
    SpawnContext,
    spawn,
    start_processes,
)

__all__ = ["get_all_sharing_strategies", "get_sharing_strategy", "set_sharing_strategy"]
__all__ += multiprocessing.__all__

if sys.platform == "darwin" or sys.platform == "win32":
    _all_sharing_strategies = {"file_system"}
else:
    _all_sharing_strategies = {"file_descriptor", "file_system"}


def set_sharing_strategy(new_strategy):
    """Set the strategy for sharing CPU tensors: one of get_all_sharing_strategies(). It
    applies to tensors moved into shared memory from then on."""
    if new_strategy not in _all_sharing_strategies:
        raise AssertionError(f"invalid sharing strategy {new_strategy!r}, "
                             f"expected one of {_all_sharing_strategies}")
    _shared.set_strategy(new_strategy)


def get_sharing_strategy():
    """Return the current strategy for sharing CPU tensors."""
    return _shared.get_strategy()


def get_all_sharing_strategies():
    """Return a set of sharing strategies supported on a current system."""
    return _all_sharing_strategies


def _one_kernel_thread():
    # A forked child cannot use the OpenMP thread pool it inherits (GNU libgomp's pool threads
    # do not exist in the child; its first parallel kernel would wait for them forever, in torch
    # too), so forked children run the kernels on one thread, as DataLoader workers do.
    # mt.set_num_threads raises it again, safely only if the parent never ran a parallel kernel.
    from .._cpu.threads import set_num_threads
    set_num_threads(1)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_one_kernel_thread)
init_reductions()
