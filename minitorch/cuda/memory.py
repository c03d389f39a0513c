"""mt.cuda.memory (torch.cuda.memory): memory statistics of CuPy's default pool, which every
minitorch CUDA buffer comes from. "allocated" is the bytes in use by live buffers (CuPy's
used_bytes, in its 512-byte allocation units), "reserved" the bytes the pool holds from the
driver (total_bytes); the peaks are kept by minitorch._gpu.memory's allocator hook. Before
minitorch has used a GPU (and without one) there are no statistics: memory_stats() is empty
and the figures are 0, as in torch before CUDA is initialised."""
import collections
import warnings

from . import _cupy, _index, _require_cupy

__all__ = ["empty_cache", "max_memory_allocated", "max_memory_cached", "max_memory_reserved",
           "mem_get_info", "memory_allocated", "memory_cached", "memory_reserved",
           "memory_stats", "memory_summary", "reset_accumulated_memory_stats",
           "get_per_process_memory_fraction", "set_per_process_memory_fraction",
           "reset_max_memory_allocated", "reset_max_memory_cached", "reset_peak_memory_stats"]


def _tracker():
    """minitorch's allocator hook, or None before any GPU backend (nothing allocated)."""
    from .. import _gpu
    from .._gpu import memory
    cupy = _cupy()
    return memory.tracker(cupy) if cupy is not None and _gpu._BACKENDS else None


def memory_stats(device=None):
    """torch.cuda.memory_stats: the statistics torch's scripts read, as an ordered dict:
    allocated_bytes.all.{current,peak}, reserved_bytes.all.{current,peak},
    active_bytes.all.{current,peak} (= allocated: CuPy frees a buffer when its last user goes),
    inactive_split_bytes.all.current (reserved but unused) and num_ooms. torch's other keys
    (per-pool, allocation counts, ...) are absent. Empty before minitorch has used a GPU."""
    tracker = _tracker()
    if tracker is None:
        return collections.OrderedDict()
    index = _index(device)
    with tracker.cupy.cuda.Device(index):
        used, held = tracker.pool.used_bytes(), tracker.pool.total_bytes()
    peak_used, peak_held = tracker.peaks.get(index, (used, held))
    stats = {"allocated_bytes.all.current": used, "allocated_bytes.all.peak": max(peak_used, used),
             "active_bytes.all.current": used, "active_bytes.all.peak": max(peak_used, used),
             "reserved_bytes.all.current": held, "reserved_bytes.all.peak": max(peak_held, held),
             "inactive_split_bytes.all.current": held - used,
             "num_ooms": tracker.ooms.get(index, 0)}
    return collections.OrderedDict(sorted(stats.items()))


def _stat(device, key):
    return memory_stats(device).get(key, 0)


def memory_allocated(device=None):
    """Bytes in use by CUDA tensors on the device (torch.cuda.memory_allocated)."""
    return _stat(device, "allocated_bytes.all.current")


def max_memory_allocated(device=None):
    """The highest memory_allocated since start-up or reset_peak_memory_stats."""
    return _stat(device, "allocated_bytes.all.peak")


def memory_reserved(device=None):
    """Bytes CuPy's pool holds on the device, in use or cached (torch.cuda.memory_reserved)."""
    return _stat(device, "reserved_bytes.all.current")


def max_memory_reserved(device=None):
    """The highest memory_reserved since start-up or reset_peak_memory_stats."""
    return _stat(device, "reserved_bytes.all.peak")


def reset_peak_memory_stats(device=None):
    """The peaks restart from the current figures (a no-op before minitorch has used a GPU:
    there are no statistics yet)."""
    tracker = _tracker()
    if tracker is not None:
        index = _index(device)
        with tracker.cupy.cuda.Device(index):
            tracker.reset_peaks(index)


def reset_accumulated_memory_stats(device=None):
    """Resets num_ooms, the one accumulated statistic kept here."""
    tracker = _tracker()
    if tracker is not None:
        tracker.ooms.pop(_index(device), None)


def reset_max_memory_allocated(device=None):
    """Deprecated: reset_peak_memory_stats (which resets every peak), with torch's warning."""
    warnings.warn("torch.cuda.reset_max_memory_allocated now calls "
                  "torch.cuda.reset_peak_memory_stats, which resets /all/ peak memory stats.",
                  FutureWarning, stacklevel=2)
    reset_peak_memory_stats(device)


def reset_max_memory_cached(device=None):
    """Deprecated: reset_peak_memory_stats (which resets every peak), with torch's warning."""
    warnings.warn("torch.cuda.reset_max_memory_cached now calls "
                  "torch.cuda.reset_peak_memory_stats, which resets /all/ peak memory stats.",
                  FutureWarning, stacklevel=2)
    reset_peak_memory_stats(device)


def memory_cached(device=None):
    """Deprecated name of memory_reserved (torch's FutureWarning)."""
    warnings.warn("`torch.cuda.memory_cached` has been renamed to `torch.cuda.memory_reserved`",
                  FutureWarning, stacklevel=2)
    return memory_reserved(device)


def max_memory_cached(device=None):
    """Deprecated name of max_memory_reserved (torch's FutureWarning)."""
    warnings.warn("`torch.cuda.max_memory_cached` has been renamed to "
                  "`torch.cuda.max_memory_reserved`", FutureWarning, stacklevel=2)
    return max_memory_reserved(device)


def mem_get_info(device=None):
    """(free, total) bytes of the device's memory, as the driver reports them
    (torch.cuda.mem_get_info); needs a GPU."""
    cupy = _require_cupy()
    with cupy.cuda.Device(_index(device)):
        return tuple(cupy.cuda.runtime.memGetInfo())


def set_per_process_memory_fraction(fraction, device=None):
    """Cap this process's CUDA memory on the device at fraction × its total memory
    (torch.cuda.set_per_process_memory_fraction): CuPy's pool limit, beyond which an
    allocation raises OutOfMemoryError."""
    cupy = _require_cupy()
    index = _index(device)
    if not isinstance(fraction, float):
        raise TypeError("Invalid type for fraction argument, must be `float`")
    if fraction < 0 or fraction > 1:
        raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~1")
    with cupy.cuda.Device(index):
        # CuPy reads a limit of 0 as "no limit": a 1-byte one refuses every allocation instead
        cupy.get_default_memory_pool().set_limit(**({"fraction": fraction} if fraction else
                                                    {"size": 1}))


def get_per_process_memory_fraction(device=None):
    """The fraction set by set_per_process_memory_fraction (1.0 when none was)."""
    cupy = _require_cupy()
    with cupy.cuda.Device(_index(device)):
        limit = cupy.get_default_memory_pool().get_limit()
        total = cupy.cuda.runtime.memGetInfo()[1]
    return 1.0 if limit == 0 else 0.0 if limit == 1 else limit / total


def memory_summary(device=None, abbreviated=False):
    """A table of memory_stats' figures (torch.cuda.memory_summary; torch's table has rows
    for statistics kept here only as these totals)."""
    stats = memory_stats(device)
    index = _index(device) if stats else 0
    rows = [("Allocated memory", "allocated_bytes.all"), ("Active memory", "active_bytes.all"),
            ("GPU reserved memory", "reserved_bytes.all")]
    lines = [f"|{'minitorch CUDA memory summary, device ID ' + str(index):^75}|",
             f"|{'':-^75}|", f"| {'Metric':<35}| {'Cur Usage':>17} | {'Peak Usage':>17} |"]
    for title, key in rows:
        lines.append(f"| {title:<35}| {_mib(stats.get(key + '.current', 0)):>17} | "
                     f"{_mib(stats.get(key + '.peak', 0)):>17} |")
    lines.append(f"| {'Number of OOMs':<35}| {stats.get('num_ooms', 0):>17} | {'':>17} |")
    border = "|" + "=" * 75 + "|"
    return "\n".join([border, *lines, border]) + "\n"


def _mib(n):
    return f"{n / 2 ** 20:.2f} MiB"


def empty_cache():
    """Release the device buffers minitorch and CuPy keep for reuse (torch.cuda.empty_cache;
    a no-op without a GPU or before any CUDA tensor)."""
    from .. import _gpu
    for backend in _gpu._BACKENDS.values():
        backend.empty_cache()
