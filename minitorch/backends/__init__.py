"""mt.backends: torch.backends' flags and availability checks that training scripts touch
(cudnn.benchmark, cuda.matmul.allow_tf32, mps.is_available(), ...). Each submodule says which
flags are honoured here and which are only stored because nothing in minitorch corresponds."""
from . import cpu, cuda, cudnn, mkldnn, mps, openmp  # noqa: F401

__all__ = ["cpu", "cuda", "cudnn", "mkldnn", "mps", "openmp"]
