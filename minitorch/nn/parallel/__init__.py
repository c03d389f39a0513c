"""mt.nn.parallel: DistributedDataParallel, and DataParallel on at most one GPU (torch.nn.parallel's
names)."""
from .data_parallel import DataParallel, data_parallel  # noqa: F401
from .distributed import DistributedDataParallel  # noqa: F401

__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel"]
