"""mt.backends.cudnn: torch.backends.cudnn's flags, accepted and stored so scripts that set
them run unchanged. minitorch never calls cuDNN: its GPU convolutions are its own CUDA kernels
(one algorithm each, nothing to benchmark or pick), so is_available() is False, version() is
None, and the flags change nothing:
- benchmark / benchmark_limit: no algorithm search exists here; stored only.
- deterministic: stored only. Our convolutions are deterministic except on the GPU, where the
  input gradient of an overlapping-window convolution adds into the image with float atomics
  (see mt.use_deterministic_algorithms for what that means here).
- enabled: stored only (there is no cuDNN path to turn off).
- allow_tf32: stored only; our kernels compute float32 in full float32, never TF32.
"""
from ._flags import FlagModule, flags_set, install

benchmark = False
benchmark_limit = 10
deterministic = False
enabled = True
allow_tf32 = True


def is_available():
    """False: minitorch's GPU kernels are its own, cuDNN is never used."""
    return False


def version():
    """None: cuDNN is not used (torch's answer when it is missing)."""
    return None


def is_acceptable(tensor):
    """False: no tensor goes through cuDNN here."""
    return False


def flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False,
          allow_tf32=True, fp32_precision="none", depthwise_kernel="auto"):
    """torch.backends.cudnn.flags: set the flags for a `with` block, restoring them after."""
    import sys
    return flags_set(sys.modules[__name__], enabled=enabled, benchmark=benchmark,
                     deterministic=deterministic, allow_tf32=allow_tf32)


class _CudnnModule(FlagModule):
    _flags = {"benchmark": "set_benchmark_cudnn", "deterministic": "set_deterministic_cudnn",
              "enabled": "set_enabled_cudnn", "allow_tf32": "set_allow_tf32_cublas"}


install(__name__, _CudnnModule)
