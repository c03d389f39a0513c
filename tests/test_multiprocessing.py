"""minitorch.multiprocessing (torch.multiprocessing) and Tensor.share_memory_: shared CPU storage
across fork and spawn children, tensors through Queues, a Hogwild run, spawn()'s errors.

Every child process is joined with a timeout and terminated if it is still running, so a hang
fails its test instead of the run. Children that run under spawn import this module by name, so
their targets are top-level functions.
"""
import multiprocessing as std_mp
import pickle
from multiprocessing.reduction import ForkingPickler

import numpy as np
import pytest

import minitorch as mt
import minitorch.multiprocessing as mp
from minitorch import nn
from minitorch._cpu import shared
from minitorch.multiprocessing import reductions
from minitorch.nn import functional as F

TIMEOUT = 30
METHODS = ["fork", "spawn"]


def _run(ctx, target, args, timeout=TIMEOUT):
    """Start a child, wait for it (bounded) and check it exited cleanly."""
    process = ctx.Process(target=target, args=args)
    process.start()
    _join(process, timeout)


def _join(process, timeout=TIMEOUT):
    process.join(timeout)
    if process.is_alive():
        process.kill()
        process.join()
        pytest.fail(f"child process still running after {timeout} s")
    assert process.exitcode == 0, f"child exited with {process.exitcode}"


@pytest.fixture
def strategy():
    """Restores the sharing strategy a test changes."""
    before = mp.get_sharing_strategy()
    yield
    mp.set_sharing_strategy(before)


# ---- share_memory_ / is_shared ------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [mt.float32, mt.float64, mt.int64, mt.bool, mt.bfloat16,
                                   mt.float16, mt.uint8])
def test_share_memory_keeps_values_and_is_shared(dtype):
    t = (mt.arange(12) % 3).to(dtype).reshape(3, 4)
    expected = t.clone()
    assert not t.is_shared()
    assert t.share_memory_() is t
    assert t.is_shared() and t.dtype == dtype
    assert mt.equal(t, expected)
    address = t.data_ptr()
    t.share_memory_()                     # already shared: nothing moves
    assert t.data_ptr() == address


def test_views_follow_the_moved_storage_as_in_torch():
    t = mt.arange(6.)
    row, col = t.view(2, 3)[1], t.view(2, 3).t()[1]
    t.share_memory_()
    assert row.is_shared() and col.is_shared()
    assert row.data_ptr() == t.data_ptr() + 3 * 4
    row[0] = 30.
    col[0] = 10.
    assert t.tolist() == [0., 10., 2., 30., 4., 5.]
    t.add_(1)
    assert row.tolist() == [31., 5., 6.]


def test_view_taken_first_shares_and_parameter_data_follows():
    p = nn.Parameter(mt.randn(4, 3))
    d, v = p.data, p[1:]
    v.share_memory_()                     # sharing a view moves the whole storage
    assert p.is_shared() and d.is_shared()
    p.data.mul_(0)
    assert v.abs().sum().item() == 0


def test_empty_and_graph_saved_tensors():
    e = mt.empty(0, 3)
    assert e.share_memory_().is_shared() and e.shape == (0, 3)
    w = mt.randn(3, requires_grad=True)
    loss = (w * w).sum()                  # the graph saved w
    w.share_memory_()
    loss.backward()
    assert mt.allclose(w.grad, 2 * w)


def test_module_share_memory_covers_params_buffers_and_grads():
    net = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    net[0].weight.grad = mt.ones(4, 3)
    weight = net[0].weight
    before = weight.detach().clone()
    assert net.share_memory() is net
    assert net[0].weight is weight and mt.equal(weight, before)
    assert all(p.is_shared() for p in net.parameters())
    assert all(b.is_shared() for b in net.buffers())
    assert weight.grad.is_shared()


def test_sharing_strategies():
    assert mp.get_all_sharing_strategies() == {"file_descriptor", "file_system"}
    assert mp.get_sharing_strategy() == "file_descriptor"
    with pytest.raises(AssertionError, match="invalid sharing strategy 'foo'"):
        mp.set_sharing_strategy("foo")


def test_file_system_strategy_names_a_file_removed_with_the_tensor(strategy):
    import gc
    import os
    mp.set_sharing_strategy("file_system")
    t = mt.ones(5).share_memory_()
    mapping = shared.mapping_of(t._data.buffer)
    assert mapping.name is not None and os.path.exists(mapping.name)
    name = mapping.name
    del t, mapping
    gc.collect()
    assert not os.path.exists(name)


def test_public_surface_reexports_multiprocessing():
    for name in std_mp.__all__:
        assert name in mp.__all__ and hasattr(mp, name)
    for name in ("spawn", "start_processes", "ProcessContext", "ProcessRaisedException",
                 "ProcessExitedException", "set_sharing_strategy", "get_sharing_strategy",
                 "get_all_sharing_strategies"):
        assert hasattr(mp, name)
    assert mp.Process is std_mp.Process and mp.get_context is std_mp.get_context


@pytest.mark.skipif(not mt.cuda.is_available(), reason="no CUDA device")
def test_cuda_tensors_are_not_shared_and_travel_as_copies():
    t = mt.arange(4., device="cuda")
    assert t.share_memory_() is t and not t.is_shared()     # torch: True (CUDA IPC)
    reductions._warned_cuda = False
    with pytest.warns(UserWarning, match="sends cuda tensors as copies"):
        data = ForkingPickler.dumps(nn.Parameter(t))
    u = pickle.loads(data)
    assert type(u) is nn.Parameter and u.device == t.device and u.tolist() == t.tolist()
    u.data.fill_(0)
    assert t.tolist() == [0., 1., 2., 3.]


# ---- pickling through multiprocessing's pickler -------------------------------------------------
def test_reducer_moves_to_shared_memory_and_rebuilds_a_view_of_it():
    t = mt.arange(10.)[2:8:2]
    data = ForkingPickler.dumps(t)
    assert t.is_shared()                  # torch: sending moves the storage
    u = pickle.loads(data)
    assert u.tolist() == t.tolist() and u.stride() == (2,) and u.storage_offset() == 2
    u[0] = -1.
    assert t[0].item() == -1.
    assert u._data.buffer is t._data.buffer   # same process: the very same buffer


def test_parameter_and_requires_grad_travel_grad_does_not():
    p = nn.Parameter(mt.ones(2, 2))
    p.grad = mt.ones(2, 2)
    q = pickle.loads(ForkingPickler.dumps(p))
    assert type(q) is nn.Parameter and q.requires_grad and q.grad is None
    r = pickle.loads(ForkingPickler.dumps(mt.ones(2, requires_grad=True)))
    assert type(r) is mt.Tensor and r.requires_grad and r.is_leaf


@pytest.mark.torch_exact
def test_non_leaf_requiring_grad_is_refused_with_torchs_error():
    x = mt.ones(3, requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="Cowardly refusing to serialize non-leaf tensor"):
        ForkingPickler.dumps(x)
    ForkingPickler.dumps(x.detach())


# ---- child processes ----------------------------------------------------------------------------
def _fill_all(tensors, net, value):
    for t in tensors:
        t.fill_(value)
    for p in net.parameters():
        p.data.fill_(value)


@pytest.mark.parametrize("method", METHODS)
def test_child_writes_are_seen_by_the_parent(method, strategy):
    ctx = mp.get_context(method)
    t = mt.zeros(3, 4).share_memory_()
    mp.set_sharing_strategy("file_system")
    named = mt.zeros(3).share_memory_()
    mp.set_sharing_strategy("file_descriptor")
    plain = mt.zeros(2)                   # not in shared memory
    net = nn.Linear(2, 2)
    net.share_memory()
    _run(ctx, _fill_all, ([t[1], named, plain], net, 7.))
    assert t.sum().item() == 28. and t[1].tolist() == [7.] * 4
    assert named.tolist() == [7.] * 3
    assert all((p == 7).all().item() for p in net.parameters())
    if method == "spawn":                 # pickling the arguments moved it (torch's reducer)
        assert plain.is_shared() and plain.tolist() == [7.] * 2
    else:                                 # fork pickles nothing: the child wrote its own copy
        assert not plain.is_shared() and plain.tolist() == [0.] * 2


def _echo(inbox, outbox, done):
    t, view = inbox.get(timeout=TIMEOUT)
    view.add_(1)                          # a view of t in the same message: one storage
    made = mt.arange(3, dtype=mt.int64) * 10
    outbox.put((t, made))
    done.wait(TIMEOUT)                    # the parent fetches the descriptors from us


@pytest.mark.parametrize("method", METHODS)
def test_tensors_through_queues(method):
    ctx = mp.get_context(method)
    inbox, outbox, done = ctx.Queue(), ctx.Queue(), ctx.Event()
    process = ctx.Process(target=_echo, args=(inbox, outbox, done))
    process.start()
    try:
        t = mt.zeros(2, 3)
        inbox.put((t, t[:, 1]))
        back, made = outbox.get(timeout=TIMEOUT)
    finally:
        done.set()
        _join(process)
    assert t.tolist() == [[0., 1., 0.], [0., 1., 0.]]
    assert back._data.buffer is t._data.buffer       # came home: the very same buffer
    assert made.tolist() == [0, 10, 20] and made.dtype == mt.int64 and made.is_shared()


# ---- Hogwild ------------------------------------------------------------------------------------
def _hogwild_data():
    g = mt.Generator().manual_seed(0)
    x = mt.randn(128, 4, generator=g)
    return x, (x[:, 0] + x[:, 1] > 0).long()


def _hogwild_train(model, rank, steps):
    mt.manual_seed(rank)
    x, y = _hogwild_data()
    opt = mt.optim.SGD(model.parameters(), lr=0.2)
    for i in range(steps):
        idx = mt.randint(0, 128, (32,))
        opt.zero_grad()
        F.cross_entropy(model(x[idx]), y[idx]).backward()
        opt.step()


@pytest.mark.parametrize("method", METHODS)
def test_hogwild_training_updates_the_parents_model(method):
    mt.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
    model.share_memory()
    x, y = _hogwild_data()
    with mt.no_grad():
        loss_before = F.cross_entropy(model(x), y).item()
    before = [p.detach().clone() for p in model.parameters()]
    ctx = mp.get_context(method)
    processes = [ctx.Process(target=_hogwild_train, args=(model, rank, 30)) for rank in range(2)]
    for process in processes:
        process.start()
    for process in processes:
        _join(process)
    assert all(not mt.equal(p, b) for p, b in zip(model.parameters(), before))
    with mt.no_grad():
        loss_after = F.cross_entropy(model(x), y).item()
    assert loss_after < 0.8 * loss_before


def test_fork_child_after_parallel_kernels_does_not_hang():
    a = mt.randn(256, 256)
    (a @ a).sum()                         # the parent's OpenMP pool is up
    t = mt.zeros(2).share_memory_()
    _run(mp.get_context("fork"), _matmul_then_fill, (t,))
    assert t.tolist() == [1., 1.]


def _matmul_then_fill(t):
    b = mt.randn(256, 256)
    t.fill_(1.0 + 0 * (b @ b).sum().item())


# ---- spawn() ------------------------------------------------------------------------------------
def _worker_ok(i, t):
    t[i] = i + 1


def _worker_raises(i):
    if i == 1:
        raise ValueError("bad rank 1")


def _worker_exits(i):
    import sys
    sys.exit(3)


def test_start_processes_runs_fn_with_rank_and_args():
    t = mt.zeros(2).share_memory_()
    assert mp.start_processes(_worker_ok, args=(t,), nprocs=2, start_method="fork") is None
    assert t.tolist() == [1., 2.]


def test_spawn_raises_the_childs_exception_as_process_raised_exception():
    context = mp.spawn(_worker_raises, nprocs=2, join=False)
    assert isinstance(context, mp.ProcessContext) and len(context.pids()) == 2
    with pytest.raises(mp.ProcessRaisedException) as info:
        for _ in range(TIMEOUT):
            if context.join(timeout=1):
                break
        else:
            pytest.fail("spawned processes did not finish")
    error = info.value
    assert error.error_index == 1 and error.error_pid == context.pids()[1]
    assert "-- Process 1 terminated with the following error:" in str(error)
    assert "ValueError: bad rank 1" in str(error)
    assert pickle.loads(pickle.dumps(error)).msg == error.msg


def test_start_processes_reports_an_exit_code():
    context = mp.start_processes(_worker_exits, nprocs=1, join=False, start_method="fork")
    with pytest.raises(mp.ProcessExitedException, match="process 0 terminated with exit code 3"):
        for _ in range(TIMEOUT):
            if context.join(timeout=1):
                break
    assert np.all([not p.is_alive() for p in context.processes])
