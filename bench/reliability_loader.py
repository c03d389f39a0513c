"""Kill trials for DataLoader worker processes: random worker kills and random parent kills
mid-iteration, counting hangs, orphaned workers and shared memory left behind.

Each trial runs in a process forked from this one (minitorch already imported, so a trial costs
no import), which plays the training process: it iterates a DataLoader with two workers over
batches of the given size. A worker-kill trial SIGKILLs one or both workers at a random moment
and times how long the loader takes to raise; a parent-kill trial SIGKILLs the training process
itself at a random moment and times how long its workers outlive it.

    python bench/reliability_loader.py [trials]
"""
import multiprocessing
import os
import random
import signal
import sys
import time

import minitorch as mt
from minitorch.utils.data import DataLoader, Dataset

BATCH_SIZE = 4
NUM_WORKERS = 2
HANG_SECONDS = 15.0     # no error this long after a worker kill counts as a hang
ORPHAN_SECONDS = 10.0   # a worker alive this long after its parent's death is an orphan
KILL_DELAY = (0.0, 1.0)  # seconds after the first batch, drawn uniformly


class _Big(Dataset):
    """Float32 samples sized so that a batch is `batch_bytes`; long enough never to end."""

    def __init__(self, batch_bytes):
        self.numel = max(1, batch_bytes // (4 * BATCH_SIZE))

    def __getitem__(self, i):
        return mt.full((self.numel,), float(i % 1000))

    def __len__(self):
        return 10 ** 7


def loader_kill_trials(trials=50, batch_bytes=(200_000, 2_000_000, 8_000_000)):
    """{batch_bytes: {trials, hangs, orphaned_workers, shm_leftovers, max_detect_seconds,
    worker_kills, parent_kills, max_orphan_seconds}}: max_detect_seconds is the slowest time
    from a worker kill to the loader's error (hangs excluded), max_orphan_seconds the longest a
    worker outlived its killed parent (orphans excluded)."""
    rng = random.Random(0)
    return {size: _trials_for(size, trials, rng) for size in batch_bytes}


def _trials_for(batch_bytes, trials, rng):
    counts = dict(trials=trials, hangs=0, orphaned_workers=0, shm_leftovers=0,
                  max_detect_seconds=0.0, worker_kills=0, parent_kills=0,
                  max_orphan_seconds=0.0)
    for _ in range(trials):
        delay = rng.uniform(*KILL_DELAY)
        if rng.random() < 0.5:
            counts["worker_kills"] += 1
            detect, pids = _worker_kill_trial(batch_bytes, delay, rng.choice(["one", "all"]))
            if detect is None:
                counts["hangs"] += 1
            else:
                _raise_max(counts, "max_detect_seconds", detect)
        else:
            counts["parent_kills"] += 1
            outlived, pids = _parent_kill_trial(batch_bytes, delay)
            if outlived < ORPHAN_SECONDS:
                _raise_max(counts, "max_orphan_seconds", outlived)
        counts["orphaned_workers"] += _count_orphans(pids, ORPHAN_SECONDS)
        counts["shm_leftovers"] += len(_shm_entries(pids))
    return counts


def _raise_max(counts, key, seconds):
    counts[key] = max(counts[key], round(seconds, 3))


# ---- the two kinds of trial (run in this process) ----------------------------------------------
def _worker_kill_trial(batch_bytes, delay, which):
    """(seconds from the kill to the loader's error or None if it hung, worker pids)."""
    trainer, reader = _start_trainer(batch_bytes, delay, which)
    try:
        pids = _read_line(reader, HANG_SECONDS)
        pids = [int(pid) for pid in pids.split()] if pids else []
        result = _read_line(reader, HANG_SECONDS + delay)
        detect = float(result) if result and result != "no error" else None
    finally:
        reader.close()
        _kill(trainer.pid)
        trainer.join()
    return detect, pids


def _parent_kill_trial(batch_bytes, delay):
    """(seconds the workers outlived their killed parent (orphans count as ORPHAN_SECONDS),
    worker pids)."""
    trainer, reader = _start_trainer(batch_bytes, None, None)
    try:
        line = _read_line(reader, HANG_SECONDS)
        pids = [int(pid) for pid in line.split()] if line else []
        time.sleep(delay)
    finally:
        reader.close()
        _kill(trainer.pid)
        trainer.join()
    start = time.monotonic()
    _wait_gone(pids, ORPHAN_SECONDS)
    return time.monotonic() - start, pids


def _start_trainer(batch_bytes, delay, which):
    context = multiprocessing.get_context("fork")
    reader, writer = context.Pipe(duplex=False)
    trainer = context.Process(target=_trainer, args=(batch_bytes, delay, which, writer))
    trainer.start()
    writer.close()
    return trainer, reader


def _read_line(reader, timeout):
    """What the trainer sent next; None if it sent nothing in time or died first."""
    try:
        return reader.recv() if reader.poll(timeout) else None
    except EOFError:
        return None


# ---- the training process (forked) --------------------------------------------------------------
def _trainer(batch_bytes, kill_delay, which, writer):
    """Iterate a loader, report its worker pids, then (worker-kill trial) kill workers after
    `kill_delay` and report the seconds until the loader raised."""
    it = iter(DataLoader(_Big(batch_bytes), batch_size=BATCH_SIZE, num_workers=NUM_WORKERS))
    next(it)
    pids = [w.pid for w in it._workers]
    writer.send(" ".join(map(str, pids)))
    if kill_delay is None:
        for _ in it:  # until the bench kills this process
            pass
    deadline = time.monotonic() + kill_delay
    while time.monotonic() < deadline:
        next(it)
    victims = pids if which == "all" else [random.choice(pids)]
    killed_at = time.monotonic()
    for pid in victims:
        os.kill(pid, signal.SIGKILL)
    try:
        for _ in it:
            pass
        writer.send("no error")
    except RuntimeError:
        writer.send(repr(time.monotonic() - killed_at))
    os._exit(0)


# ---- what a trial leaves behind -----------------------------------------------------------------
def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
    except OSError:
        return _pid_exists(pid)


def _pid_exists(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _wait_gone(pids, within):
    deadline = time.monotonic() + within
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.01)


def _count_orphans(pids, within):
    """Workers still alive after `within` seconds; killed so the next trial starts clean."""
    _wait_gone(pids, within)
    orphans = [pid for pid in pids if _alive(pid)]
    for pid in orphans:
        _kill(pid)
    return len(orphans)


def _shm_entries(pids):
    """/dev/shm entries a trial's processes could have left (named after minitorch or a pid)."""
    if not os.path.isdir("/dev/shm"):
        return []
    marks = ["minitorch", *(f"-{pid}-" for pid in pids)]
    return [name for name in os.listdir("/dev/shm") if any(mark in name for mark in marks)]


def _kill(pid):
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def main():
    trials = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    results = loader_kill_trials(trials)
    print(f"DataLoader kill trials ({trials} per batch size, {NUM_WORKERS} workers; "
          f"hang = no error {HANG_SECONDS:.0f} s after a worker kill, orphan = a worker alive "
          f"{ORPHAN_SECONDS:.0f} s after its parent's kill)")
    for size, counts in results.items():
        fields = "  ".join(f"{key}={value}" for key, value in counts.items())
        print(f"  batch {size / 1e6:g} MB: {fields}")


if __name__ == "__main__":
    main()
