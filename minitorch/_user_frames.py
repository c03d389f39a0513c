"""Where a warning should point: torch's C++ warnings name the Python line that reached them,
which for minitorch's Python implementation is the first frame outside the package."""
import os
import sys

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _inside(frame):
    return os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR)


def user_stacklevel():
    """warnings.warn's stacklevel, for the function calling this one, that names the innermost
    frame outside minitorch (the user's `.backward()` line, however deep the engine is)."""
    frame, level = sys._getframe(1), 1
    while frame is not None and _inside(frame):
        frame, level = frame.f_back, level + 1
    return level


def called_from_user():
    """Whether the function calling this one was called from outside minitorch (a user's
    torch.tensor(t), not one of ours)."""
    frame = sys._getframe(2)
    return frame is not None and not _inside(frame)
