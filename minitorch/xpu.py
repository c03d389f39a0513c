"""torch.xpu: Intel GPUs, which minitorch has no backend for (scripts ask before choosing)."""

__all__ = ["is_available", "device_count"]


def is_available():
    """False: minitorch runs on the CPU and on CUDA only."""
    return False


def device_count():
    """0 (see is_available)."""
    return 0
