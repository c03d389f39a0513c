"""mt.backends.mkldnn: minitorch does not use oneDNN (MKL-DNN); `enabled` is accepted and
stored only, and is_available() is False."""
from ._flags import FlagModule, flags_set, install

enabled = True


def is_available():
    return False


def flags(enabled=False, deterministic=False):
    """torch.backends.mkldnn.flags: set `enabled` for a `with` block (stored only)."""
    import sys
    return flags_set(sys.modules[__name__], enabled=enabled)


class _MkldnnModule(FlagModule):
    _flags = {"enabled": "set_enabled_mkldnn"}


install(__name__, _MkldnnModule)
