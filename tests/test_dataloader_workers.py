"""DataLoader with worker processes: order, prefetch, errors, dead workers, timeouts, shutdown,
persistent workers, seeding and IterableDataset sharding."""
import os
import random
import signal
import sys
import time

import numpy as np
import pytest

import minitorch as mt
from minitorch.utils.data import (DataLoader, Dataset, IterableDataset, TensorDataset,
                                  get_worker_info)


class Slow(Dataset):
    """i → i, with early indices slower so workers finish out of order."""

    def __init__(self, n):
        self.n = n

    def __getitem__(self, i):
        time.sleep(0.01 if i % 4 == 0 else 0.0)
        return i

    def __len__(self):
        return self.n


class Failing(Dataset):
    def __init__(self, bad, error=ValueError):
        self.bad, self.error = bad, error

    def __getitem__(self, i):
        if i == self.bad:
            raise self.error(f"bad index {i}")
        return i

    def __len__(self):
        return 8


class Exiting(Dataset):
    """A worker that reaches index 5 dies without a word."""

    def __getitem__(self, i):
        if i == 5:
            os._exit(3)
        return i

    def __len__(self):
        return 16


class Sleepy(Dataset):
    def __getitem__(self, i):
        time.sleep(2.0)
        return i

    def __len__(self):
        return 4


class WhoAmI(Dataset):
    """Reports which worker served it and what its RNGs give."""

    def __getitem__(self, i):
        info = get_worker_info()
        return {"id": info.id, "num_workers": info.num_workers, "seed": info.seed,
                "pid": os.getpid(), "mt": mt.rand(1).item(), "np": float(np.random.rand()),
                "py": random.random(), "init": _init_mark}

    def __len__(self):
        return 4


class Range(IterableDataset):
    def __init__(self, n, shard):
        self.n, self.shard = n, shard

    def __iter__(self):
        info = get_worker_info()
        if not self.shard or info is None:
            return iter(range(self.n))
        return iter(range(info.id, self.n, info.num_workers))


class LocalError(Exception):
    pass


class Unpicklable(Dataset):
    def __getitem__(self, i):
        return lambda: i  # lambdas can't cross a process boundary

    def __len__(self):
        return 2


_init_mark = None


def _mark_init(worker_id):
    global _init_mark
    _init_mark = f"init {worker_id}"


def _failing_init(worker_id):
    raise LocalError(f"init failed in {worker_id}")


def _all_dead(workers, within=3.0):
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not any(w.is_alive() for w in workers):
            return True
        time.sleep(0.02)
    return False


def test_workers_keep_sampler_order():
    loader = DataLoader(Slow(23), batch_size=3, num_workers=3)
    flat = [x for batch in loader for x in batch.tolist()]
    assert flat == list(range(23))
    assert len(loader) == 8


def test_workers_match_single_process_tensor_batches(device):
    context = None
    if device == "cuda":
        # A forked worker cannot use CUDA (torch's rule: tests/test_cuda_fork.py); spawned ones
        # can, but a spawned child imports the real CuPy, not the emulated one
        if getattr(sys.modules.get("cupy"), "emulated", False):
            pytest.skip("spawned workers need a real GPU (the emulated CuPy stays in this process)")
        context = "spawn"
    x = mt.tensor(np.arange(40, dtype=np.float32).reshape(20, 2), device=device)
    y = mt.arange(20, device=device)
    single = list(DataLoader(TensorDataset(x, y), batch_size=6))
    multi = list(DataLoader(TensorDataset(x, y), batch_size=6, num_workers=2,
                            multiprocessing_context=context))
    assert len(single) == len(multi) == 4
    for (a, b), (c, d) in zip(single, multi):
        np.testing.assert_array_equal(a.cpu().numpy(), c.cpu().numpy())
        np.testing.assert_array_equal(b.cpu().numpy(), d.cpu().numpy())
        assert c.dtype == a.dtype and c.device == a.device


def test_shuffle_with_workers_is_a_permutation_and_reproducible():
    loader = DataLoader(Slow(30), batch_size=4, shuffle=True, num_workers=2)
    mt.manual_seed(11)
    first = [x for b in loader for x in b.tolist()]
    mt.manual_seed(11)
    second = [x for b in loader for x in b.tolist()]
    assert first == second and sorted(first) == list(range(30))


def test_prefetch_factor_bounds_tasks_in_flight():
    loader = DataLoader(Slow(40), batch_size=2, num_workers=2, prefetch_factor=3)
    it = iter(loader)
    assert it._send_idx == 6  # prefetch_factor batches per worker queued up front
    for _ in it:
        assert it._send_idx - it._rcvd_idx <= 6


def test_worker_exception_is_reraised_with_traceback():
    it = iter(DataLoader(Failing(5), batch_size=2, num_workers=2))
    workers = list(it._workers)
    assert next(it).tolist() == [0, 1]
    with pytest.raises(ValueError) as info:
        list(it)
    message = str(info.value)
    assert message.startswith("Caught ValueError in DataLoader worker process 0.\n"
                              "Original Traceback (most recent call last):\n")
    assert "bad index 5" in message and "__getitem__" in message
    assert _all_dead(workers)


def test_worker_key_error_message_stays_readable():
    with pytest.raises(KeyError) as info:
        list(DataLoader(Failing(0, KeyError), num_workers=1))
    assert "Caught KeyError in DataLoader worker process 0." in str(info.value)
    assert "\\n" not in str(info.value)


def test_worker_init_fn_error():
    with pytest.raises(LocalError, match="init failed in 0"):
        list(DataLoader(Slow(4), num_workers=1, worker_init_fn=_failing_init))


def test_unpicklable_batch_becomes_an_error():
    with pytest.raises(Exception, match="Caught .* in DataLoader worker process 0"):
        list(DataLoader(Unpicklable(), batch_size=None, num_workers=1, timeout=20))


def test_dead_worker_is_reported_quickly():
    it = iter(DataLoader(Exiting(), batch_size=1, num_workers=2))
    workers = list(it._workers)
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"DataLoader worker \(pid\(s\) \d+\) exited "
                                           r"unexpectedly"):
        list(it)
    assert time.monotonic() - start < 5.0
    assert _all_dead(workers)


def test_killed_worker_is_reported():
    it = iter(DataLoader(Slow(400), batch_size=1, num_workers=2))
    next(it)
    victim = it._workers[1]
    os.kill(victim.pid, signal.SIGKILL)
    with pytest.raises(RuntimeError, match=f"DataLoader worker \\(pid\\(s\\) {victim.pid}\\) "
                                           "exited unexpectedly"):
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            next(it)
    assert _all_dead(it._workers)


def test_timeout():
    it = iter(DataLoader(Sleepy(), num_workers=1, timeout=0.3))
    start = time.monotonic()
    with pytest.raises(RuntimeError, match="DataLoader timed out after 0.3 seconds"):
        next(it)
    assert time.monotonic() - start < 1.5
    assert _all_dead(it._workers)


def test_workers_shut_down_on_exhaustion_and_on_del():
    it = iter(DataLoader(Slow(8), batch_size=2, num_workers=2))
    workers = list(it._workers)
    assert all(w.is_alive() for w in workers)
    list(it)
    assert _all_dead(workers)
    it = iter(DataLoader(Slow(400), batch_size=2, num_workers=2))
    next(it)
    workers = list(it._workers)
    del it
    assert _all_dead(workers)


def test_persistent_workers_survive_epochs():
    loader = DataLoader(WhoAmI(), batch_size=None, num_workers=2, persistent_workers=True)
    first = [sample["pid"] for sample in loader]
    workers = list(loader._iterator._workers)
    second = [sample["pid"] for sample in loader]
    assert set(first) == set(second) == {w.pid for w in workers}
    assert all(w.is_alive() for w in workers)
    del loader
    assert _all_dead(workers)


def test_persistent_workers_drop_a_broken_epoch():
    loader = DataLoader(Slow(20), batch_size=2, num_workers=2, persistent_workers=True)
    for i, _ in enumerate(loader):
        if i == 1:
            break  # leaves prefetched batches of this epoch behind
    assert [x for b in loader for x in b.tolist()] == list(range(20))
    assert [x for b in loader for x in b.tolist()] == list(range(20))


def test_persistent_workers_restart_after_an_error():
    loader = DataLoader(Failing(3), batch_size=1, num_workers=1, persistent_workers=True)
    with pytest.raises(ValueError):
        list(loader)
    with pytest.raises(ValueError):
        list(loader)  # a fresh set of workers, not a dead iterator


def test_worker_seeds_are_distinct_and_reproducible():
    def run():
        mt.manual_seed(123)
        loader = DataLoader(WhoAmI(), batch_size=None, num_workers=2, worker_init_fn=_mark_init)
        return list(loader)

    first, second = run(), run()
    assert [dict(s, pid=0) for s in first] == [dict(s, pid=0) for s in second]
    by_worker = {s["id"]: s for s in first}
    assert set(by_worker) == {0, 1}
    assert by_worker[1]["seed"] == by_worker[0]["seed"] + 1
    assert by_worker[0]["num_workers"] == 2
    for key in ("mt", "np", "py"):
        assert by_worker[0][key] != by_worker[1][key]
    assert by_worker[0]["init"] == "init 0" and by_worker[1]["init"] == "init 1"


def test_worker_seed_follows_loader_generator():
    def seeds(seed):
        g = mt.Generator().manual_seed(seed)
        return [s["seed"] for s in DataLoader(WhoAmI(), batch_size=None, num_workers=1,
                                              generator=g)]

    assert seeds(1) == seeds(1) and seeds(1) != seeds(2)


def test_worker_info_is_read_only():
    class Probe(Dataset):
        def __getitem__(self, i):
            info = get_worker_info()
            try:
                info.id = 5
            except RuntimeError as error:
                return str(error)
            return "writable"

        def __len__(self):
            return 1

    assert list(DataLoader(Probe(), batch_size=None, num_workers=1)) == \
        ["Cannot assign attributes to WorkerInfo objects"]


def test_iterable_dataset_each_worker_iterates_its_copy():
    duplicated = [x for b in DataLoader(Range(5, shard=False), batch_size=2, num_workers=2)
                  for x in b.tolist()]
    assert sorted(duplicated) == sorted(list(range(5)) * 2)
    sharded = [x for b in DataLoader(Range(10, shard=True), batch_size=2, num_workers=2)
               for x in b.tolist()]
    assert sorted(sharded) == list(range(10))


def test_iterable_dataset_batches_interleave_like_torch():
    """Batches alternate between workers and a worker that runs dry drops out: this is the
    sequence torch 2.x yields for the same dataset and arguments."""
    ours = [b.tolist() for b in DataLoader(Range(11, shard=True), batch_size=2, num_workers=2)]
    assert ours == [[0, 2], [1, 3], [4, 6], [5, 7], [8, 10], [9]]
