"""torch's process-wide switches that minitorch answers without an engine behind them:

- inter-op threads: torch runs independent ops of a TorchScript graph (jit.fork) on an inter-op
  pool; minitorch runs ops one after another (each op's own parallelism is set_num_threads),
  so the number is only recorded, with torch's rule that it may be set once.
- flush-denormal mode: our kernels run on OpenMP worker threads whose floating-point control
  registers are not switched, so set_flush_denormal reports it unsupported (False), torch's
  answer on a CPU without the mode, and changes nothing.
- warn_always: torch's once-only warnings come from its C++ core (TORCH_WARN_ONCE), which
  minitorch does not have; the flag is recorded and read back, and changes no warning.
"""
import os

__all__ = ["get_num_interop_threads", "is_warn_always_enabled", "set_flush_denormal",
           "set_num_interop_threads", "set_warn_always"]

_state = {"interop_threads": None, "warn_always": False}


def set_num_interop_threads(num):
    """Records the inter-op thread count (torch.set_num_interop_threads; see the module
    docstring: minitorch has no inter-op pool). Allowed once, as in torch."""
    if num <= 0:
        raise RuntimeError("set_num_interop_threads expects a positive integer")
    if _state["interop_threads"] is not None:
        raise RuntimeError("Error: cannot set number of interop threads after parallel work "
                           "has started or set_num_interop_threads called")
    _state["interop_threads"] = int(num)


def get_num_interop_threads():
    """The recorded inter-op thread count, by default the number of CPUs (as torch's)."""
    return _state["interop_threads"] or os.cpu_count() or 1


def set_flush_denormal(mode):
    """torch.set_flush_denormal: returns False, "not supported" (see the module docstring);
    denormals keep being computed as IEEE 754 says."""
    return False


def set_warn_always(b):
    """Records torch's warn_always flag (torch.set_warn_always); no minitorch warning depends
    on it (see the module docstring)."""
    _state["warn_always"] = bool(b)


def is_warn_always_enabled():
    """The flag set_warn_always recorded (False by default)."""
    return _state["warn_always"]
