"""The CPU buffer pool (minitorch/_cpu/allocator.py, buffer_pool.pyx): a freed buffer's memory is
reused, a live one (or any view of it) never is, and importing minitorch leaves other libraries'
memory alone."""
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import minitorch as mt
from minitorch._cpu import allocator
from minitorch._cpu.buffer_pool import BufferPool

ROOT = pathlib.Path(__file__).resolve().parents[1]
BIG = allocator.MIN_CACHED_BYTES // 4      # float32 elements of a pooled buffer


def pool(max_idle_bytes=1 << 30, **kwargs):
    return BufferPool(max_idle_bytes, allocator.MIN_CACHED_BYTES, **kwargs)


def test_freed_buffer_is_reused_and_live_one_never():
    p = pool()
    a = p.empty(BIG, np.float32)
    a_ptr = a.ctypes.data
    b = p.empty(BIG, np.float32)
    assert not np.shares_memory(a, b)
    del a
    c = p.empty(BIG, np.int32)         # same bytes, another dtype: the freed block
    assert c.ctypes.data == a_ptr and c.dtype == np.int32 and c.shape == (BIG,)
    assert p.new_blocks == 2 and p.live_bytes == 2 * allocator.MIN_CACHED_BYTES
    del b, c
    assert p.live_bytes == 0 and p.idle_bytes == 2 * allocator.MIN_CACHED_BYTES


def test_the_most_recently_freed_block_is_handed_out_first():
    p = pool()
    a, b = p.empty(BIG, np.float32), p.empty(BIG, np.float32)
    b_ptr = b.ctypes.data
    del a, b                                        # b freed last: its lines are warmest
    assert p.empty(BIG, np.float32).ctypes.data == b_ptr


def test_a_freed_larger_block_serves_a_smaller_request():
    p = pool()
    large = p.empty(4 * BIG, np.float32)
    ptr = large.ctypes.data
    del large
    quarter = p.empty(BIG, np.float32)              # over 2x smaller: a block of its own
    assert quarter.ctypes.data != ptr
    half = p.empty(2 * BIG + 1000, np.float32)      # at most 2x smaller: shares the block
    assert half.ctypes.data == ptr and p.new_bytes == 5 * allocator.MIN_CACHED_BYTES


@pytest.mark.parametrize("keep", ["reshape", "slice", "memoryview", "numpy_of_tensor",
                                  "dlpack"])
def test_any_view_keeps_its_buffer_out_of_reuse(keep):
    p = pool()
    buffer = p.empty(BIG, np.float32)
    buffer[:] = 7
    held = {"reshape": lambda: buffer.reshape(2, -1), "slice": lambda: buffer[5:9],
            "memoryview": lambda: memoryview(buffer),
            "numpy_of_tensor": lambda: mt.from_numpy(buffer).numpy(),
            "dlpack": lambda: np.from_dlpack(mt.from_numpy(buffer))}[keep]()
    del buffer
    other = p.empty(BIG, np.float32)
    other[:] = -1
    assert (np.asarray(held) == 7).all()


def test_small_and_huge_buffers_bypass_the_pool_and_the_idle_cap_is_kept():
    p = pool(3 * allocator.MIN_CACHED_BYTES, max_bytes=8 * allocator.MIN_CACHED_BYTES)
    small = p.empty(10, np.float64)
    huge = p.empty(9 * BIG, np.float32)
    assert small.base is None and huge.base is None and p.new_blocks == 0
    live = [p.empty(BIG, np.float32) for _ in range(5)]
    del live                                    # the last two freed go back to the system
    assert p.idle_bytes == 3 * allocator.MIN_CACHED_BYTES and p.live_bytes == 0
    p.clear()
    assert p.idle_bytes == 0


def test_blocks_idle_for_long_make_room_for_new_sizes_and_recent_ones_stay():
    p = pool(keep_recent=4)
    old = p.empty(3 * BIG, np.float32)
    del old                                     # idle since allocation 1
    held = p.empty(4 * BIG, np.float32)         # new memory; the idle block is recent: kept
    assert p.idle_bytes == 3 * allocator.MIN_CACHED_BYTES
    for _ in range(4):
        p.empty(BIG, np.float32)                # one new block, then reused (allocations 3-6)
    assert p.idle_bytes == 4 * allocator.MIN_CACHED_BYTES
    big = p.empty(8 * BIG, np.float32)          # a miss: the block idle since allocation 1 goes,
    assert p.idle_bytes == allocator.MIN_CACHED_BYTES     # the one freed at 6 stays
    assert held.size == 4 * BIG and big.size == 8 * BIG


def test_large_blocks_are_aligned_for_huge_pages():
    p = pool()
    assert p.empty(BIG, np.float32).ctypes.data % 64 == 0
    assert p.empty((4 << 20) // 4, np.float32).ctypes.data % (2 << 20) == 0


def test_tensor_results_come_from_the_pool():
    """On by default: a loop of same-size results reuses blocks instead of growing."""
    assert allocator.POOL is not None
    x = mt.ones(BIG)
    for _ in range(3):
        x = x + 1
    before = allocator.POOL.new_blocks
    for _ in range(20):
        x = x * 1
    assert allocator.POOL.new_blocks == before
    assert (x.numpy() == 4).all()


def test_the_pool_can_be_turned_off():
    # off, a large result's buffer is a plain np.empty: it owns its memory (no pool block)
    code = ("import minitorch as mt\nfrom minitorch._cpu import allocator\n"
            "assert allocator.POOL is None\nbuffer = (mt.ones(1 << 20) + 1)._data.buffer\n"
            "assert buffer.base is None and buffer.flags.owndata\nprint('ok')")
    env = dict(os.environ, MINITORCH_CPU_CACHE="0",
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr


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


def test_buffers_at_glibcs_mmap_threshold_come_from_the_pool():
    """glibc maps a block of 128 KB (its default mmap threshold, header included) afresh on
    every allocation until some large free raises the threshold: a (128, 256) float32
    activation would fault 33 pages each time it is allocated."""
    if allocator.POOL is None:
        pytest.skip("the pool is off (MINITORCH_CPU_CACHE=0)")
    for nbytes in (128 * 1024 - 16, 128 * 1024, 200 * 1024):
        buffer = allocator.empty(nbytes // 4, np.float32)
        assert type(buffer.base).__name__ == "_Block", nbytes
