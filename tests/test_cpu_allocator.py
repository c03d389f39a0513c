"""The CPU buffer cache (minitorch/_cpu/allocator.py): a freed buffer's memory is reused, a live
one (or any view of it) never is, and importing minitorch leaves other libraries' memory alone."""
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import minitorch as mt
from minitorch._cpu import allocator
from minitorch._cpu.allocator import BufferCache

ROOT = pathlib.Path(__file__).resolve().parents[1]
BIG = allocator.MIN_CACHED_BYTES // 4      # float32 elements of a cached buffer


def test_freed_buffer_is_reused_and_live_one_never():
    cache = BufferCache(1 << 30)
    a = cache.empty(BIG, np.float32)
    a_ptr = a.ctypes.data
    b = cache.empty(BIG, np.float32)
    assert not np.shares_memory(a, b)
    del a
    c = cache.empty(BIG, np.int32)         # same bytes, another dtype: the freed slab
    assert c.ctypes.data == a_ptr and c.dtype == np.int32 and c.shape == (BIG,)
    assert cache.cached_bytes == 2 * allocator.MIN_CACHED_BYTES


def test_a_freed_larger_slab_serves_a_smaller_request():
    cache = BufferCache(1 << 30)
    large = cache.empty(4 * BIG, np.float32)
    ptr = large.ctypes.data
    del large
    quarter = cache.empty(BIG, np.float32)              # over 2x smaller: a slab of its own
    assert quarter.ctypes.data != ptr
    half = cache.empty(2 * BIG + 1000, np.float32)      # at most 2x smaller: shares the slab
    assert half.ctypes.data == ptr and cache.cached_bytes == 5 * allocator.MIN_CACHED_BYTES


@pytest.mark.parametrize("keep", ["reshape", "slice", "memoryview", "numpy_of_tensor"])
def test_any_view_keeps_its_buffer_out_of_reuse(keep):
    cache = BufferCache(1 << 30)
    buffer = cache.empty(BIG, np.float32)
    buffer[:] = 7
    held = {"reshape": lambda: buffer.reshape(2, -1), "slice": lambda: buffer[5:9],
            "memoryview": lambda: memoryview(buffer),
            "numpy_of_tensor": lambda: mt.from_numpy(buffer).numpy()}[keep]()
    del buffer
    other = cache.empty(BIG, np.float32)
    other[:] = -1
    assert (np.asarray(held) == 7).all()


def test_small_buffers_bypass_the_cache_and_idle_cap_is_kept():
    cache = BufferCache(3 * allocator.MIN_CACHED_BYTES)
    small = cache.empty(10, np.float64)
    assert small.base is None and cache.cached_bytes == 0
    live = [cache.empty(BIG, np.float32) for _ in range(5)]
    del live
    assert cache.idle_bytes() == cache.cached_bytes == 5 * allocator.MIN_CACHED_BYTES
    other = cache.empty(2 * BIG, np.float32)     # a new size: the idle slabs past the cap go
    assert cache.idle_bytes() == 0 and cache.cached_bytes == other.nbytes
    del other
    cache.clear()
    assert cache.cached_bytes == 0


def test_stale_slabs_are_forgotten_and_live_ones_stay_valid(monkeypatch):
    monkeypatch.setattr(allocator, "STALE_AFTER", 3)
    cache = BufferCache(1 << 30)
    kept = cache.empty(BIG, np.float32)
    kept[:] = 5
    idle = cache.empty(2 * BIG, np.float32)
    del idle
    for _ in range(4):
        cache.empty(3 * BIG, np.float32)         # one new slab, then reused
    cache.empty(4 * BIG, np.float32)             # a miss: the first two entries are stale
    assert cache.cached_bytes == 7 * allocator.MIN_CACHED_BYTES
    assert (kept == 5).all()    # forgotten while in use: numpy frees it with its last view


_CACHED_RESULTS = """
import minitorch as mt
from minitorch._cpu import allocator
x = mt.ones(allocator.MIN_CACHED_BYTES // 4)
for _ in range(3):   # a loop of same-size results reuses slabs instead of growing
    x = x + 1
before = allocator.CACHE.cached_bytes
for _ in range(20):
    x = x * 1
assert allocator.CACHE.cached_bytes == before
assert (x.numpy() == 4).all()
"""


def test_tensor_results_come_from_the_cache_when_it_is_on():
    """The cache is opt-in (MINITORCH_CPU_CACHE=1): a process of its own turns it on."""
    env = dict(os.environ, MINITORCH_CPU_CACHE="1",
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    done = subprocess.run([sys.executable, "-c", _CACHED_RESULTS], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr


PROBE = """
import ctypes, sys
import numpy as np
import minitorch

def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20

base = rss_mb()
arrays = [np.ones(2**20 // 8 * 4, np.float64) for _ in range(256)]   # 256 x 4 MB = 1 GB
peak = rss_mb()
del arrays
print(round(peak - base), round(rss_mb() - base))
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="reads RSS from /proc")
def test_importing_minitorch_leaves_numpy_memory_alone():
    """numpy's freed memory goes back to the system as it would without minitorch (the old
    import-time mallopt made glibc keep all of it: 1023 MB retained of 1 GB)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, check=True,
                         capture_output=True, text=True).stdout.split()
    peak, retained = map(int, out)
    assert peak > 900 and retained < 16, (peak, retained)
