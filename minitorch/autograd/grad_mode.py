"""torch.autograd.grad_mode: the grad-mode switches (written in engine.py)."""
from .engine import enable_grad, inference_mode, no_grad, set_grad_enabled

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode"]
