"""mt.distributed: torch.distributed's API on MPI (mpi4py, CPU tensors) and NCCL (CuPy, cuda
tensors). Importing it is cheap: the engines load in init_process_group.

    python -m minitorch.distributed.run --nproc-per-node 2 train.py   # or mpiexec -n 2 python …
    dist.init_process_group("mpi")
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
"""
import importlib.util
import sys

from .collectives import (all_gather, all_gather_into_tensor, all_reduce, all_to_all_single,
                          barrier, broadcast, gather, irecv, isend, recv, reduce,
                          reduce_scatter_tensor, scatter, send)
from .group import (Backend, GroupMember, ProcessGroup, default_pg_timeout,
                    destroy_process_group, get_backend, get_global_rank, get_group_rank,
                    get_process_group_ranks, get_rank, get_world_size, init_process_group,
                    is_initialized, new_group)
from .objects import all_gather_object, broadcast_object_list, gather_object
from .reduce_op import ReduceOp
from .work import Work

group = GroupMember   # torch.distributed.group.WORLD


def is_mpi_available():
    """True when mpi4py is installed (found without importing it: that would start MPI)."""
    return importlib.util.find_spec("mpi4py") is not None


def is_nccl_available():
    """True when CuPy's NCCL bindings import and report a version
    (torch.distributed.is_nccl_available)."""
    if "cupy" not in sys.modules and importlib.util.find_spec("cupy") is None:
        return False
    try:
        from cupy.cuda import nccl
        nccl.get_version()
        return True
    except Exception:
        return False


def is_available():
    """torch.distributed.is_available: True when some backend can run here."""
    return is_mpi_available() or is_nccl_available()


__all__ = ["Backend", "GroupMember", "ProcessGroup", "ReduceOp", "Work", "all_gather",
           "all_gather_into_tensor", "all_gather_object", "all_reduce", "all_to_all_single",
           "barrier", "broadcast", "broadcast_object_list", "default_pg_timeout",
           "destroy_process_group", "gather", "gather_object", "get_backend", "get_global_rank",
           "get_group_rank", "get_process_group_ranks", "get_rank", "get_world_size", "group",
           "init_process_group", "irecv", "is_available", "is_initialized", "is_mpi_available",
           "is_nccl_available", "isend", "new_group", "recv", "reduce", "reduce_scatter_tensor",
           "scatter", "send"]
