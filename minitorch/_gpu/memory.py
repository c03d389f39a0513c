"""What torch.cuda's memory statistics need of CuPy: its default memory pool answers the
current figures (bytes in use by arrays: "allocated"; bytes held from the driver: "reserved"),
and `PeakTracker`, installed as CuPy's allocator when the first GPU backend is made, keeps the
peaks CuPy does not, reading both figures after every allocation from the pool (about a
microsecond per allocation), and turns an allocation failure into torch's OutOfMemoryError.
mt.cuda.memory reads them; they describe CuPy's default pool, so memory a script allocates
through an allocator of its own set before minitorch's first CUDA use is not counted."""


class OutOfMemoryError(RuntimeError, MemoryError):
    """torch.OutOfMemoryError (torch.cuda.OutOfMemoryError): a CUDA allocation failed. A
    RuntimeError as torch's, and a MemoryError as CuPy's OutOfMemoryError, so code catching
    either catches it."""


def _format_size(n):
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "bytes" else f"{n:.2f} {unit}"
        n /= 1024


class PeakTracker:
    """CuPy's allocator wrapped: allocate through the allocator that was current, then record
    the pool's used and held bytes if they are the device's highest so far."""

    def __init__(self, cupy):
        self.cupy = cupy
        self.pool = cupy.get_default_memory_pool()
        allocate = cupy.cuda.get_allocator()
        previous = getattr(allocate, "__self__", None)
        # a tracker installed before (the backends were forgotten and rebuilt): wrap what it wraps
        self._allocate = previous._allocate if isinstance(previous, PeakTracker) else allocate
        self.peaks = {}         # device index: [peak allocated bytes, peak reserved bytes]
        self.ooms = {}          # device index: allocations that failed

    def malloc(self, size):
        try:
            memory = self._allocate(size)
        except MemoryError as error:
            raise self._out_of_memory(size) from error
        used, held = self.pool.used_bytes(), self.pool.total_bytes()
        peaks = self.peaks.get(memory.device_id)
        if peaks is None:
            self.peaks[memory.device_id] = [used, held]
        else:
            if used > peaks[0]:
                peaks[0] = used
            if held > peaks[1]:
                peaks[1] = held
        return memory

    def _out_of_memory(self, size):
        index = self.cupy.cuda.runtime.getDevice()
        self.ooms[index] = self.ooms.get(index, 0) + 1
        free, total = self.cupy.cuda.runtime.memGetInfo()
        used, held = self.pool.used_bytes(), self.pool.total_bytes()
        return OutOfMemoryError(
            f"CUDA out of memory. Tried to allocate {_format_size(size)}. GPU {index} has a "
            f"total capacity of {_format_size(total)} of which {_format_size(free)} is free. "
            f"Of the allocated memory {_format_size(used)} is allocated by minitorch, and "
            f"{_format_size(held - used)} is reserved by minitorch but unallocated.")

    def reset_peaks(self, index):
        """The device's peaks restart from its current figures (the pool's, which are the
        current device's)."""
        self.peaks[index] = [self.pool.used_bytes(), self.pool.total_bytes()]


# the installed PeakTrackers by their cupy module's id (one in a program; tests swap emulated
# modules in and out, and each keeps its own)
_trackers = {}


def track(cupy):
    """Install a PeakTracker as this CuPy's allocator (once per cupy module)."""
    if tracker(cupy) is None:
        installed = PeakTracker(cupy)
        cupy.cuda.set_allocator(installed.malloc)
        _trackers[id(cupy)] = installed


def tracker(cupy):
    """The PeakTracker installed on this cupy module, or None (no GPU backend made yet)."""
    installed = _trackers.get(id(cupy))
    return installed if installed is not None and installed.cupy is cupy else None
