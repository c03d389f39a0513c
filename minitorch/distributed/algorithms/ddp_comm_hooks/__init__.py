"""DDP communication hooks (torch.distributed.algorithms.ddp_comm_hooks): register one with
`ddp_model.register_comm_hook(state, hook)`; default_hooks has torch's stateless ones."""
from . import default_hooks

__all__ = ["default_hooks"]
