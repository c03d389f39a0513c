"""DataLoader workers under kills: a worker killed mid-batch is reported (never a hang), workers
die with a killed parent, and no shared memory or descriptor outlives a loader."""
import gc
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import minitorch as mt
from minitorch.utils.data import DataLoader, Dataset

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="checks /proc and /dev/shm")

BATCH_SIZE = 4
BATCH_BYTES = [200_000, 2_000_000, 8_000_000]   # an MNIST batch of 64, and bigger


class Big(Dataset):
    """Float32 samples sized so that a batch of BATCH_SIZE is about `batch_bytes`."""

    def __init__(self, batch_bytes, n=400):
        self.numel, self.n = batch_bytes // (4 * BATCH_SIZE), n

    def __getitem__(self, i):
        return mt.full((self.numel,), float(i))

    def __len__(self):
        return self.n


class Exiting(Dataset):
    def __getitem__(self, i):
        if i == 3:
            os._exit(3)
        return mt.zeros(50_000)

    def __len__(self):
        return 16


class Arrays(Dataset):
    def __getitem__(self, i):
        return np.full(50_000, i)

    def __len__(self):
        return 12


def _first(batch):
    return batch[0]


def _alive(pid):
    """True while `pid` runs (a zombie has exited)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _wait_gone(pids, within):
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not any(_alive(pid) for pid in pids):
            return True
        time.sleep(0.02)
    return False


def _our_shm_entries(pids=()):
    """/dev/shm entries a loader or its workers could have left. Others share the machine: a
    minitorch entry (minitorch_<creator pid>_...) counts when this process, one of `pids` or a
    process that no longer runs made it, not while another running process holds its own."""
    def ours(name):
        if any(f"-{pid}-" in name for pid in pids):
            return True
        if not name.startswith("minitorch_"):
            return False
        creator = int(name.split("_")[1])
        return creator == os.getpid() or creator in pids or not _alive(creator)
    return sorted(name for name in os.listdir("/dev/shm") if ours(name))


def _open_fds():
    # Loaders of earlier tests (kept alive by reference cycles, e.g. through a traceback) close
    # their channels only when the collector runs: run it, so the count is this test's alone.
    gc.collect()
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.timeout(30)
@pytest.mark.parametrize("batch_bytes", BATCH_BYTES)
def test_worker_killed_mid_batch_is_reported(batch_bytes):
    it = iter(DataLoader(Big(batch_bytes), batch_size=BATCH_SIZE, num_workers=2))
    next(it)
    pids = [w.pid for w in it._workers]
    time.sleep(0.2)  # both workers busy producing and sending batches
    os.kill(pids[1], signal.SIGKILL)
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=rf"DataLoader worker \(pid\(s\) [\d, ]*{pids[1]}"
                                           r"[\d, ]*\) exited unexpectedly") as info:
        for _ in it:
            pass
    assert time.monotonic() - start < 5.0
    assert str(info.value.__cause__) == \
        f"DataLoader worker (pid {pids[1]}) is killed by signal: Killed. "
    assert _wait_gone(pids, within=3.0)
    assert _our_shm_entries(pids) == []


@pytest.mark.timeout(20)
def test_worker_exit_code_is_the_cause():
    it = iter(DataLoader(Exiting(), batch_size=1, num_workers=1))
    with pytest.raises(RuntimeError, match=r"exited unexpectedly") as info:
        list(it)
    pid = it._workers[0].pid
    assert str(info.value.__cause__) == (
        f"DataLoader worker (pid {pid}) exited unexpectedly with exit code 3. Details are lost "
        "due to multiprocessing. Rerunning with num_workers=0 may give better error trace.")


@pytest.mark.timeout(20)
def test_no_descriptors_or_shared_memory_left_after_runs():
    list(DataLoader(Big(200_000, n=8), batch_size=BATCH_SIZE, num_workers=2))  # warm-up
    before = _open_fds()
    for batch_bytes in (200_000, 2_000_000):
        for _ in range(2):
            batches = list(DataLoader(Big(batch_bytes, n=16), batch_size=BATCH_SIZE,
                                      num_workers=2))
            assert [b[0, 0].item() for b in batches] == [0.0, 4.0, 8.0, 12.0]
        it = iter(DataLoader(Big(batch_bytes), batch_size=BATCH_SIZE, num_workers=2))
        next(it)
        del it  # stopped half-way: batches still queued are freed with the channels
    # <=, not ==: multiprocessing closes finished children's sentinels lazily, when it starts
    # new processes, so descriptors of earlier tests' workers may be closed in between
    assert _open_fds() <= before
    assert _our_shm_entries() == []


@pytest.mark.timeout(20)
def test_shared_memory_still_viewed_by_a_batch_is_not_reused():
    # A collate_fn that keeps numpy arrays: the batch views the worker's shared memory.
    batches = list(DataLoader(Arrays(), batch_size=2, num_workers=2, collate_fn=_first))
    assert [int(b[0]) for b in batches] == list(range(0, 12, 2))
    assert all((b == b[0]).all() for b in batches)


_PARENT = textwrap.dedent("""
    import sys, threading, time
    import minitorch as mt

    class Big(mt.utils.data.Dataset):
        def __init__(self, numel):
            self.numel = numel
        def __getitem__(self, i):
            return mt.full((self.numel,), float(i))
        def __len__(self):
            return 100_000

    def main(batch_bytes, mode, where, context):
        loader = mt.utils.data.DataLoader(Big(batch_bytes // 16), batch_size=4, num_workers=2,
                                          multiprocessing_context=context)
        made = []
        if where == "thread":  # the kernel's parent-death signal can't be used then
            thread = threading.Thread(target=lambda: made.append(iter(loader)))
            thread.start()
            thread.join()
        else:
            made.append(iter(loader))
        it = made[0]
        next(it)
        print(" ".join(str(w.pid) for w in it._workers), flush=True)
        if mode == "busy":
            for _ in it:
                pass
        time.sleep(60)

    if __name__ == "__main__":
        main(int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4])
""")


def _kill_parent_and_wait_for_workers(tmp_path, batch_bytes, mode, where="main",
                                      context="fork"):
    script = tmp_path / "parent.py"
    script.write_text(_PARENT)
    parent = subprocess.Popen([sys.executable, str(script), str(batch_bytes), mode, where,
                               context], stdout=subprocess.PIPE, text=True)
    try:
        pids = [int(pid) for pid in parent.stdout.readline().split()]
        assert len(pids) == 2
        time.sleep(0.3)  # busy: the workers are fetching and sending batches
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=10)
        assert _wait_gone(pids, within=5.0), [pid for pid in pids if _alive(pid)]
        assert _our_shm_entries(pids) == []
    finally:
        parent.kill()
        parent.stdout.close()
        parent.wait(timeout=10)


@pytest.mark.timeout(30)
@pytest.mark.parametrize("batch_bytes", BATCH_BYTES)
def test_workers_die_with_a_killed_busy_parent(tmp_path, batch_bytes):
    _kill_parent_and_wait_for_workers(tmp_path, batch_bytes, "busy")


@pytest.mark.timeout(30)
@pytest.mark.parametrize("mode, where, context", [("idle", "main", "fork"),
                                                  ("busy", "thread", "fork"),
                                                  ("busy", "main", "spawn")])
def test_workers_die_with_a_killed_parent(tmp_path, mode, where, context):
    _kill_parent_and_wait_for_workers(tmp_path, 2_000_000, mode, where, context)
