"""mt.cuda: what the GPU backend offers, answerable without CuPy installed."""


def _cupy():
    try:
        import cupy
        return cupy
    except ImportError:
        return None


def is_available():
    cupy = _cupy()
    if cupy is None:
        return False
    try:
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # CuPy present but no driver/GPU: report "not available", never raise
        return False


def device_count():
    return _cupy().cuda.runtime.getDeviceCount() if is_available() else 0


def synchronize(device=None):
    if is_available():
        _cupy().cuda.Device().synchronize()


def manual_seed(seed):
    from .random import manual_seed as seed_all
    seed_all(seed)


manual_seed_all = manual_seed
