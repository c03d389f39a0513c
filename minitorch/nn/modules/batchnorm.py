"""torch.nn.modules.batchnorm: the batch norms and their bases (minitorch/nn/normalization.py,
minitorch/nn/lazy.py, minitorch/nn/sync_batchnorm.py)."""
from ..lazy import (LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d,  # noqa: F401
                    _LazyNormBase)
from ..normalization import (BatchNorm1d, BatchNorm2d, BatchNorm3d, _BatchNorm,  # noqa: F401
                             _NormBase)
from ..sync_batchnorm import SyncBatchNorm  # noqa: F401
