"""torch.distributed.algorithms: DDP communication hooks (ddp_comm_hooks) and the join context
manager for uneven inputs (join)."""
from . import ddp_comm_hooks, join
from .join import Join, Joinable, JoinHook

__all__ = ["Join", "JoinHook", "Joinable", "ddp_comm_hooks", "join"]
