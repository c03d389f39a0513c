"""mt.backends.mps: Apple's Metal backend does not exist in minitorch, so both answers are
False (scripts test it to pick a device)."""


def is_available():
    return False


def is_built():
    return False
