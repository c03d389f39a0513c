"""mt.use_deterministic_algorithms and its queries: the switch is validated and stored as in
torch, and changes no kernel here.

What it means in minitorch: every CPU kernel is deterministic (threads split work only where
no two of them write one element, in a fixed order), and so is every GPU kernel except those
that add floats through atomics, where the order of the adds, and so the last bits of a float
sum, can change from run to run: scatter_add / scatter_reduce, index_add, index_put / put with
accumulate=True (and the backwards of gather, indexing and embedding, which use them), the
backward of pooling with overlapping windows, and adding into a self-overlapping view (the
input gradient of unfold / fold and of convolutions whose windows overlap). Integer and bool
results of those kernels are exact. torch raises for some such ops under mode=True and picks a
slower ordered algorithm for others; minitorch has no ordered variants, and does neither."""

_state = {"mode": False, "warn_only": False}


def use_deterministic_algorithms(mode, *, warn_only=False):
    """torch.use_deterministic_algorithms: validate and store the switch (and warn_only) as torch
    does; it changes no kernel here, see the module docstring for what is deterministic."""
    if not isinstance(mode, bool):
        raise TypeError("_set_deterministic_algorithms(): argument 'mode' (position 1) must be "
                        f"bool, not {type(mode).__name__}")
    if not isinstance(warn_only, bool):
        raise TypeError("_set_deterministic_algorithms(): argument 'warn_only' must be bool, "
                        f"not {type(warn_only).__name__}")
    _state["mode"], _state["warn_only"] = mode, warn_only


def are_deterministic_algorithms_enabled():
    """torch.are_deterministic_algorithms_enabled: the mode last given to
    use_deterministic_algorithms (False at start)."""
    return _state["mode"]


def is_deterministic_algorithms_warn_only_enabled():
    """torch.is_deterministic_algorithms_warn_only_enabled: the warn_only last given to
    use_deterministic_algorithms (False at start)."""
    return _state["warn_only"]
