"""mt.cpu.amp (torch.cpu.amp): the deprecated CPU spellings of mt.amp: autocast(...) is
mt.amp.autocast("cpu", ...) (bfloat16 by default) and GradScaler(...) mt.amp.GradScaler("cpu",
...), each with torch's FutureWarning."""
from ..amp.device_aliases import autocast_for, grad_scaler_for
from .. import dtypes

__all__ = ["GradScaler", "autocast"]

autocast = autocast_for("cpu", dtypes.bfloat16, __name__)
GradScaler = grad_scaler_for("cpu", __name__)
