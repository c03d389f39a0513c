"""torch.nn.attention: SDPBackend and sdpa_kernel, which switches the attention backends
(torch.backends.cuda.enable_*_sdp) for a region and restores them after.

The switches are stored only: minitorch has one scaled_dot_product_attention (the math one, on
our fused attention kernel), which runs whatever they say.
"""
import contextlib
import enum

from ..backends import cuda as _cuda_backends

__all__ = ["SDPBackend", "sdpa_kernel"]


class SDPBackend(enum.IntEnum):
    """torch's attention backends, with its values."""
    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


_SWITCHES = {SDPBackend.MATH: "math", SDPBackend.FLASH_ATTENTION: "flash",
             SDPBackend.EFFICIENT_ATTENTION: "mem_efficient", SDPBackend.CUDNN_ATTENTION: "cudnn"}


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority=False):
    """Only `backends` (one SDPBackend or a list) are enabled inside (see the module docstring:
    the switch is recorded; minitorch's one kernel runs regardless)."""
    if isinstance(backends, SDPBackend):
        backends = [backends]
    if not isinstance(backends, list) or not all(isinstance(b, SDPBackend) for b in backends):
        raise AssertionError("Backend must be an instance of SDPBackend or a list of SDPBackend "
                             f"instances, got {type(backends).__name__}")
    saved = dict(_cuda_backends._sdp)
    for backend, name in _SWITCHES.items():
        _cuda_backends._sdp[name] = backend in backends
    try:
        yield {}
    finally:
        _cuda_backends._sdp.update(saved)
