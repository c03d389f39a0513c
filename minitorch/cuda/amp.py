"""mt.cuda.amp (torch.cuda.amp): the deprecated CUDA spellings of mt.amp. GradScaler(...) is
mt.amp.GradScaler("cuda", ...) with torch's FutureWarning."""
from ..amp.device_aliases import autocast_for, grad_scaler_for
from .. import dtypes

__all__ = ["GradScaler", "autocast"]

autocast = autocast_for("cuda", dtypes.float16, __name__)
GradScaler = grad_scaler_for("cuda", __name__)
