"""mt.distributed: torch.distributed's API on MPI (mpi4py, CPU tensors) and NCCL (CuPy, cuda
tensors). Importing it is cheap: the engines load in init_process_group.

    python -m minitorch.distributed.run --nproc-per-node 2 train.py   # or mpiexec -n 2 python …
    dist.init_process_group("mpi")
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
"""
import importlib.util
import sys

from .collectives import (P2POp, all_gather, all_gather_into_tensor, all_reduce, all_to_all,
                          all_to_all_single, barrier, batch_isend_irecv, broadcast, gather,
                          irecv, isend, monitored_barrier, recv, reduce, reduce_scatter,
                          reduce_scatter_tensor, scatter, send)
from .errors import (DistBackendError, DistError, DistNetworkError, DistStoreError,
                     QueueEmptyError)
from .grad_bucket import GradBucket
from .group import (Backend, GroupMember, ProcessGroup, default_pg_timeout,
                    destroy_process_group, get_backend, get_default_backend_for_device,
                    get_global_rank, get_group_rank, get_pg_count, get_process_group_ranks,
                    get_rank, get_world_size, init_process_group, is_initialized, new_group,
                    new_subgroups, new_subgroups_by_enumeration)
from .launch_env import get_node_local_rank, is_torchelastic_launched
from .objects import (all_gather_object, broadcast_object_list, gather_object,
                      recv_object_list, scatter_object_list, send_object_list)
from .reduce_op import ReduceOp, supports_complex
from .work import Work
from . import algorithms

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


def is_gloo_available():
    """False: minitorch has no gloo; CPU tensors use backend "mpi"."""
    return False


def is_ucc_available():
    """False: minitorch has no UCC backend."""
    return False


def is_xccl_available():
    """False: minitorch has no XCCL (Intel GPU) backend."""
    return False


def is_backend_available(backend):
    """Whether init_process_group(backend) can run here: "mpi" with mpi4py, "nccl" with
    CuPy's NCCL (torch.distributed.is_backend_available)."""
    return {"mpi": is_mpi_available, "nccl": is_nccl_available}.get(
        str(backend).lower(), lambda: False)()


def is_available():
    """torch.distributed.is_available: True when some backend can run here."""
    return is_mpi_available() or is_nccl_available()


__all__ = ["Backend", "DistBackendError", "DistError", "DistNetworkError", "DistStoreError",
           "GradBucket", "GroupMember", "P2POp", "ProcessGroup", "QueueEmptyError", "ReduceOp",
           "Work", "algorithms", "all_gather", "all_gather_into_tensor", "all_gather_object",
           "all_reduce", "all_to_all", "all_to_all_single", "barrier", "batch_isend_irecv", "broadcast",
           "broadcast_object_list", "default_pg_timeout", "destroy_process_group", "gather",
           "gather_object", "get_backend", "get_default_backend_for_device", "get_global_rank",
           "get_group_rank", "get_node_local_rank", "get_pg_count", "get_process_group_ranks",
           "get_rank", "get_world_size", "group", "init_process_group", "irecv", "is_available",
           "is_backend_available", "is_gloo_available", "is_initialized", "is_mpi_available",
           "is_nccl_available", "is_torchelastic_launched", "is_ucc_available",
           "is_xccl_available", "isend", "monitored_barrier", "new_group", "new_subgroups",
           "new_subgroups_by_enumeration", "recv", "recv_object_list", "reduce",
           "reduce_scatter", "reduce_scatter_tensor", "scatter", "scatter_object_list", "send",
           "send_object_list", "supports_complex"]
