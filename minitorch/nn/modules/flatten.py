"""torch.nn.modules.flatten: Flatten and Unflatten (minitorch/nn/linear.py)."""
from ..linear import Flatten, Unflatten  # noqa: F401
