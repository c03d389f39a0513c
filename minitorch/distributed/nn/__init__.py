"""torch.distributed.nn: collectives that autograd differentiates (see functional.py)."""
from .functional import all_gather, all_reduce  # noqa: F401

__all__ = ["all_gather", "all_reduce"]
