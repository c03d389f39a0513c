"""torch.serialization's allow-list for weights_only unpickling (safe_globals, add_safe_globals,
get_safe_globals, clear_safe_globals): accepted and kept, so scripts written for torch's
weights_only loading run unchanged. mt.load never unpickles anything (the format holds only
data), so the list never changes what loads."""
_allowed = []


def _checked(safe_globals):
    if not isinstance(safe_globals, (list, tuple)):
        raise TypeError(f"'{type(safe_globals).__name__}' object is not iterable")
    return list(safe_globals)


def add_safe_globals(safe_globals):
    """Add to the allow-list (a list of classes/functions or (object, "module.name") pairs)."""
    _allowed.extend(_checked(safe_globals))


def get_safe_globals():
    return list(_allowed)


def clear_safe_globals():
    _allowed.clear()


class safe_globals:
    """Context manager: the given globals are on the allow-list inside the block only."""

    def __init__(self, safe_globals):
        self.safe_globals = _checked(safe_globals)

    def __enter__(self):
        self.saved = list(_allowed)
        _allowed.extend(self.safe_globals)

    def __exit__(self, *exc):
        _allowed[:] = self.saved
