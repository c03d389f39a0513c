"""CUDA graphs (mt.cuda.CUDAGraph, graph, graph_pool_handle, make_graphed_callables) on the CUDA
emulator's stream capture (tests/cuda_emulator): capture records, replay equals eager, a host
synchronisation inside a capture raises torch's error and leaves nothing half captured, and a
whole training step replays to eager's losses. Needs g++ (the emulator runs the kernels)."""
import importlib.util
import pathlib
import sys

import numpy as np
import pytest

import minitorch as mt
import minitorch.nn.functional as F
from minitorch import _cuda_graphs, _gpu
from minitorch._gpu import graphs

import cuda_emulator

ROOT = pathlib.Path(__file__).resolve().parents[1]
CAPTURING = "CUDA error: operation not permitted when stream is capturing"


@pytest.fixture(params=["emulator", "gpu"])
def cuda(request, monkeypatch):
    """The CUDA device a test runs on: a fresh emulated GPU (its own backend and default
    capture stream), or the real one when CuPy sees a GPU."""
    if request.param == "gpu":
        if not cuda_emulator.real_gpu():
            pytest.skip("no CUDA device (CuPy and a GPU are needed)")
        yield None
    else:
        if not cuda_emulator.can_execute():
            pytest.skip("g++ is needed to run kernels in the emulator")
        cuda_emulator.forget_backends(monkeypatch)
        monkeypatch.setattr(_cuda_graphs.graph, "default_capture_stream", None)
        cupy = cuda_emulator.cupy_module()
        monkeypatch.setitem(sys.modules, "cupy", cupy)
        yield cupy
    assert graphs.active() is None          # no test leaves a capture behind


@pytest.fixture
def emulated(cuda):
    """Tests of the emulator's own bookkeeping (launch lists, node counts, its errors)."""
    if cuda is None:
        pytest.skip("checks the CUDA emulator's own records")
    return cuda


def _assert_clean(x):
    """No capture under way, the backend eager again: ops run and give the right numbers."""
    assert graphs.active() is None and not mt.cuda.is_current_stream_capturing()
    assert _gpu.backend_for(0)._capture is None
    np.testing.assert_allclose((x * 3).sum().item(), 3 * x.cpu().numpy().sum(), rtol=1e-5)


# ---------------------------------------------------------------------------------------------
# capture and replay

def test_replay_recomputes_captured_ops_from_new_inputs(cuda):
    rng = np.random.default_rng(0)
    x = mt.tensor(rng.standard_normal((6, 5)), dtype=mt.float32, device="cuda")
    w = mt.tensor(rng.standard_normal((5, 4)), dtype=mt.float32, device="cuda")
    index = mt.tensor([[0, 3], [2, 1]] * 3, device="cuda")

    def ops(x):
        y = (x @ w).relu() * 2 + 1
        return y.softmax(-1), y.sum(0), y.gather(1, index), x.exp().mean()
    ops(x)                                               # warm up (compiles the kernels)
    g = mt.cuda.CUDAGraph()
    with mt.cuda.graph(g):
        assert mt.cuda.is_current_stream_capturing()
        outs = ops(x)
    assert not mt.cuda.is_current_stream_capturing()
    for _ in range(3):
        fresh = rng.standard_normal((6, 5))
        x.copy_(mt.tensor(fresh, dtype=mt.float32))
        g.replay()
        want = ops(mt.tensor(fresh, dtype=mt.float32, device="cuda"))     # eager
        for got, expected in zip(outs, want):
            np.testing.assert_array_equal(got.cpu().numpy(), expected.cpu().numpy())


def test_capture_records_instead_of_running(emulated):
    cuda = emulated
    x = mt.ones(4, device="cuda")
    (x + 1).sum()                                        # warm up
    launched = len(cuda.launches)
    stream = mt.cuda.Stream()
    with mt.cuda.stream(stream):
        g = mt.cuda.CUDAGraph()
        g.capture_begin()
        y = x + 1
        assert stream.is_capturing() and len(cuda.launches) > launched
        g.capture_end()
    assert not y.cpu().numpy().any()                    # recorded, not run: still zeros
    g.replay()
    np.testing.assert_array_equal(y.cpu().numpy(), 2)
    assert g._graph.node_count >= 1


@pytest.mark.filterwarnings("ignore:This instance was constructed with capturable=True")
def test_training_step_replays_give_eager_losses(cuda):
    """SGD with momentum (one foreach kernel) and Adam(capturable=True): forward, loss,
    backward, step, zero_grad(set_to_none=False) captured once, replayed over new batches."""
    rng = np.random.default_rng(0)
    batches = [(rng.standard_normal((6, 8)).astype(np.float32), rng.integers(0, 4, 6))
               for _ in range(5)]

    def make(kind):
        mt.manual_seed(0)
        model = mt.nn.Sequential(mt.nn.Linear(8, 16), mt.nn.ReLU(),
                                 mt.nn.Linear(16, 4)).to("cuda")
        if kind == "sgd":
            return model, mt.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        return model, mt.optim.Adam(model.parameters(), lr=0.01, capturable=True)

    def step(model, optimizer, x, y):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=False)
        return loss

    for kind in ("sgd", "adam"):
        model, optimizer = make(kind)
        eager = [step(model, optimizer, mt.tensor(x, device="cuda"),
                      mt.tensor(y, device="cuda")).item() for x, y in batches]
        model, optimizer = make(kind)
        static_x = mt.zeros(6, 8, device="cuda")
        static_y = mt.zeros(6, dtype=mt.int64, device="cuda")
        graphed = []
        for i, (x, y) in enumerate(batches):
            static_x.copy_(mt.tensor(x))
            static_y.copy_(mt.tensor(y))
            if i < 2:                                    # warm-up steps run eagerly
                graphed.append(step(model, optimizer, static_x, static_y).item())
                continue
            if i == 2:
                g = mt.cuda.CUDAGraph()
                with mt.cuda.graph(g):
                    static_loss = step(model, optimizer, static_x, static_y)
            g.replay()
            graphed.append(static_loss.item())
        np.testing.assert_allclose(graphed, eager, rtol=1e-6, err_msg=kind)
        if kind == "adam":
            assert optimizer.state[model[0].weight]["step"].item() == len(batches)


def test_capturable_adam_warns_once_outside_a_capture(cuda):
    p = mt.nn.Parameter(mt.ones(3, device="cuda"))
    optimizer = mt.optim.Adam([p], capturable=True)
    p.grad = mt.ones(3, device="cuda")
    with pytest.warns(UserWarning, match="but step\\(\\) is running without CUDA graph capture"):
        optimizer.step()
    optimizer.step()                                     # once only (an error if it warned)


def test_adam_without_capturable_refuses_capture(cuda):
    model = mt.nn.Linear(3, 2).to("cuda")
    optimizer = mt.optim.Adam(model.parameters())
    x = mt.ones(4, 3, device="cuda")
    model(x).sum().backward()
    optimizer.step()
    with pytest.raises(RuntimeError, match=r"^Attempting CUDA graph capture of step\(\) for an "
                                           r"instance of Adam but param_groups' capturable is "
                                           r"False\.$"):
        with mt.cuda.graph(mt.cuda.CUDAGraph()):
            model(x).sum().backward()
            optimizer.step()
    _assert_clean(x)


def test_buffers_freed_during_capture_stay_with_the_graph(cuda):
    x = mt.ones(256, device="cuda")
    (x * 2 + 1).sum()
    g = mt.cuda.CUDAGraph()
    with mt.cuda.graph(g):
        temporary = x * 2
        freed = temporary.data_ptr()
        del temporary                                    # its memory goes back to g's pool,
        out = x * 3 + 1                                  # which the capture may reuse
    eager = [x * 2 for _ in range(4)]                    # eager work never gets it
    assert freed not in {t.data_ptr() for t in eager}
    g.replay()
    np.testing.assert_array_equal(out.cpu().numpy(), 4)
    del out
    assert g.pool().nbytes > 0
    g.reset()
    with pytest.raises(RuntimeError, match="without a preceding successful capture"):
        g.replay()


def test_graphs_share_a_pool(cuda):
    x = mt.ones(8, device="cuda")
    x + 1
    pool = mt.cuda.graph_pool_handle()
    first, second = mt.cuda.CUDAGraph(), mt.cuda.CUDAGraph()
    with mt.cuda.graph(first, pool=pool):
        y = x + 1
    with mt.cuda.graph(second, pool=first.pool()):
        z = y * 5
    assert first.pool() is second.pool() is pool
    x.fill_(2.0)
    first.replay()
    second.replay()
    np.testing.assert_array_equal(z.cpu().numpy(), 15)


def test_indices_are_checked_before_each_replay(cuda):
    """gather's index check reads back on the host: inside a capture it moves to replay()."""
    scores = mt.randn(4, 3, device="cuda")
    target = mt.tensor([0, 1, 2, 0], device="cuda")
    F.cross_entropy(scores, target)
    g = mt.cuda.CUDAGraph()
    with mt.cuda.graph(g):
        loss = F.cross_entropy(scores, target)
    target.copy_(mt.tensor([0, 1, 7, 0]))
    with pytest.raises(IndexError, match="index 7 is out of bounds for dimension with size 3"):
        g.replay()
    target.copy_(mt.tensor([2, 1, 0, 0]))
    g.replay()
    want = F.cross_entropy(scores.cpu(), target.cpu())
    np.testing.assert_allclose(loss.item(), want.item(), rtol=1e-6)


# ---------------------------------------------------------------------------------------------
# host synchronisation inside a capture

SYNCS = {
    "item": lambda x: x.sum().item(),
    "cpu": lambda x: x.cpu(),
    "numpy": lambda x: x.numpy(force=True),
    "print": lambda x: repr(x),
    "bool": lambda x: bool(x.sum() > 0),
    "nonzero": lambda x: x.nonzero(),
    "upload": lambda x: x + mt.tensor([1.0, 2.0, 3.0], device="cuda"),
    "synchronize": lambda x: mt.cuda.synchronize(),
    "index from the graph": lambda x: x.index_select(0, (x > 0).long().sum().reshape(1) - 3),
}


@pytest.mark.parametrize("sync", SYNCS)
def test_host_sync_raises_and_leaves_no_capture(cuda, sync):
    x = mt.tensor([1.0, 2.0, 3.0], device="cuda")
    SYNCS["index from the graph"](x)                    # warm up
    g = mt.cuda.CUDAGraph()
    with pytest.raises(RuntimeError) as error:
        with mt.cuda.graph(g):
            y = x * 2
            SYNCS[sync](y)
    assert str(error.value) == CAPTURING
    _assert_clean(x)
    with pytest.raises(RuntimeError, match="without a preceding successful capture"):
        g.replay()
    with mt.cuda.graph(g):                               # the same graph captures again
        z = x + 1
    g.replay()
    np.testing.assert_array_equal(z.cpu().numpy(), [2.0, 3.0, 4.0])


def test_capture_end_after_a_caught_refusal(cuda):
    """The error caught inside the block: the capture is already over, capture_end says so as
    torch's (an invalidated capture)."""
    x = mt.ones(3, device="cuda")
    g = mt.cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match="operation failed due to a previous error during "
                                           "capture"):
        with mt.cuda.graph(g):
            with pytest.raises(RuntimeError, match=CAPTURING):
                x.sum().item()
    _assert_clean(x)


def test_kernels_first_loaded_inside_a_capture(cuda):
    """No warm-up: on the emulator's fresh backend every module the captured ops need is compiled
    and loaded during the capture; the replay computes, and the thread is in global capture
    mode again afterwards (it was relaxed only around the loads and allocations)."""
    x = mt.arange(6.0, device="cuda")
    g = mt.cuda.CUDAGraph()
    with mt.cuda.graph(g):
        y = (x.cosh() * 3).cumsum(0)
    x.copy_(mt.arange(1.0, 7.0, device="cuda"))
    g.replay()
    np.testing.assert_allclose(y.cpu().numpy(), np.cumsum(np.cosh(np.arange(1.0, 7.0)) * 3),
                               rtol=1e-5)
    exchange = graphs.capture_mode_exchange(_gpu.backend_for(0).cupy)
    mode = exchange(graphs.MODES.index("global"))
    exchange(mode)
    assert graphs.MODES[mode] == "global"


def test_emulator_refuses_allocation_in_a_global_capture_unless_relaxed(emulated):
    cuda = emulated
    stream = cuda.cuda.Stream(non_blocking=True)
    with stream:
        stream.begin_capture()
        previous = cuda.cuda.runtime.threadExchangeStreamCaptureMode(2)
        cuda.empty(4, np.float32)
        assert cuda.cuda.runtime.threadExchangeStreamCaptureMode(previous) == 2
        with pytest.raises(cuda_emulator.CUDARuntimeError,
                           match="cudaErrorStreamCaptureUnsupported"):
            cuda.empty(4, np.float32)
        with pytest.raises(cuda_emulator.CUDARuntimeError,
                           match="cudaErrorStreamCaptureInvalidated"):
            stream.end_capture()


def test_emulator_capture_follows_the_cuda_runtime(emulated):
    cuda = emulated
    """The stand-in's own rules: a sync invalidates the capture, end_capture then fails."""
    stream = cuda.cuda.Stream(non_blocking=True)
    buffer = cuda.zeros(4, np.float32)
    with stream:
        stream.begin_capture()
        with pytest.raises(cuda_emulator.CUDARuntimeError,
                           match="cudaErrorStreamCaptureUnsupported: operation not permitted "
                                 "when stream is capturing"):
            buffer.get()
        with pytest.raises(RuntimeError, match="invalidated"):
            stream.is_capturing()
        with pytest.raises(cuda_emulator.CUDARuntimeError, match="Invalidated"):
            stream.end_capture()
        assert not stream.is_capturing()
        with pytest.raises(cuda_emulator.CUDARuntimeError, match="IllegalState"):
            stream.end_capture()
    blocking = cuda.cuda.Stream()
    with blocking:
        blocking.begin_capture()
    with pytest.raises(cuda_emulator.CUDARuntimeError, match="Implicit"):
        buffer.data.memset_async(0, 4)                 # legacy stream vs a blocking capture
    with blocking, pytest.raises(cuda_emulator.CUDARuntimeError):
        blocking.end_capture()


# ---------------------------------------------------------------------------------------------
# make_graphed_callables

def test_make_graphed_callables_forward_and_backward(cuda):
    rng = np.random.default_rng(1)
    mt.manual_seed(0)
    module = mt.nn.Sequential(mt.nn.Linear(5, 7), mt.nn.Tanh(), mt.nn.Linear(7, 3)).to("cuda")
    twin = mt.nn.Sequential(mt.nn.Linear(5, 7), mt.nn.Tanh(), mt.nn.Linear(7, 3)).to("cuda")
    twin.load_state_dict(module.state_dict())

    def scale(a, b):
        return (a * b).sin()

    sample = mt.randn(4, 5, device="cuda", requires_grad=True)
    pair = (mt.randn(4, 3, device="cuda", requires_grad=True), mt.randn(4, 3, device="cuda"))
    graphed_module, graphed_fn = mt.cuda.make_graphed_callables((module, scale),
                                                                ((sample,), pair))
    assert graphed_module is module
    for _ in range(2):
        x = mt.tensor(rng.standard_normal((4, 5)), dtype=mt.float32, device="cuda",
                      requires_grad=True)
        b = mt.tensor(rng.standard_normal((4, 3)), dtype=mt.float32, device="cuda")
        x_eager = x.detach().clone().requires_grad_(True)
        out = graphed_fn(graphed_module(x), b)
        want = scale(twin(x_eager), b)
        np.testing.assert_allclose(out.cpu().detach().numpy(), want.cpu().detach().numpy(),
                                   rtol=1e-5, atol=1e-6)
        out.sum().backward()
        want.sum().backward()
        np.testing.assert_allclose(x.grad.cpu().numpy(), x_eager.grad.cpu().numpy(),
                                   rtol=1e-5, atol=1e-6)
        for p, q in zip(module.parameters(), twin.parameters()):
            np.testing.assert_allclose(p.grad.cpu().numpy(), q.grad.cpu().numpy(), rtol=1e-5,
                                       atol=1e-6)
    module.eval()                                        # another mode: the eager forward
    np.testing.assert_allclose(module(x_eager).cpu().detach().numpy(),
                               twin(x_eager).cpu().detach().numpy(), rtol=1e-6)


def test_graphed_callable_shape_mismatch_raises_as_torch(cuda):
    """torch's graphed forward copies each argument into its captured input: another shape
    fails in that copy_, before anything replays (the static output is left as it was)."""
    def double(a):
        return a * 2
    sample = mt.ones(4, device="cuda", requires_grad=True)
    graphed = mt.cuda.make_graphed_callables(double, (sample,))
    before = graphed(mt.full((4,), 3.0, device="cuda", requires_grad=True))
    with pytest.raises(RuntimeError) as ours:
        graphed(mt.ones(3, device="cuda", requires_grad=True))
    with pytest.raises(RuntimeError) as copy:
        mt.ones(4).copy_(mt.ones(3))
    assert str(ours.value) == str(copy.value)
    np.testing.assert_array_equal(before.cpu().detach().numpy(), 6.0)
    with pytest.raises(AssertionError, match="sample_args for each callable must contain only "
                                             "Tensors"):
        mt.cuda.make_graphed_callables(double, (3.0,))


# ---------------------------------------------------------------------------------------------
# misuse

def test_misuse_errors(cuda):
    g = mt.cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match=r"^Called CUDAGraph::replay without a preceding "
                                           r"successful capture\.$"):
        g.replay()
    with pytest.raises(RuntimeError, match="must be captured on a non-default stream"):
        g.capture_begin()
    with pytest.raises(RuntimeError, match="Unknown capture error mode. Expected `global`, "
                                           "`thread_local`, or `relaxed`, got nope"):
        with mt.cuda.graph(g, capture_error_mode="nope"):
            pass
    x = mt.ones(2, device="cuda")
    with mt.cuda.graph(g):
        x + 1
    with pytest.raises(RuntimeError, match="already owns a captured graph"):
        with mt.cuda.graph(g):
            pass
    with pytest.raises(RuntimeError, match="^" + CAPTURING + "$"):
        with mt.cuda.graph(mt.cuda.CUDAGraph()):
            with mt.cuda.graph(mt.cuda.CUDAGraph()):     # its synchronize() is refused
                pass
    _assert_clean(x)
    with mt.cuda.graph(mt.cuda.CUDAGraph()):
        with mt.cuda.stream(mt.cuda.Stream()):
            with pytest.raises(RuntimeError, match="operation cannot be performed"):
                mt.cuda.CUDAGraph().capture_begin()     # one capture at a time
        x + 1
    with mt.cuda.stream(mt.cuda.Stream()):
        mt.cuda.CUDAGraph().capture_begin()             # dropped mid-capture: abandoned
    _assert_clean(x)
    with pytest.raises(RuntimeError, match="Capture must end on the same stream"):
        with mt.cuda.stream(mt.cuda.Stream()):
            g2 = mt.cuda.CUDAGraph()
            g2.capture_begin()
            with mt.cuda.stream(mt.cuda.Stream()):
                try:
                    g2.capture_end()
                finally:
                    g2.reset()
    _assert_clean(x)
    if cuda is not None:            # the emulator counts a graph's nodes; CuPy does not say
        with pytest.warns(UserWarning, match="The CUDA Graph is empty"):
            with mt.cuda.graph(mt.cuda.CUDAGraph()):
                pass


# ---------------------------------------------------------------------------------------------
# examples/train_mnist.py --cuda-graph's step

def test_example_graphed_step_matches_eager(cuda):
    spec = importlib.util.spec_from_file_location("train_mnist", ROOT / "examples" /
                                                  "train_mnist.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    rng = np.random.default_rng(0)
    full, partial = 4, 2                 # an epoch's last batch, then the next epoch's first
    batches = [(rng.random((n, 1, 28, 28)).astype(np.float32), rng.integers(0, 10, n))
               for n in (full, full, full, partial, full)]
    runs = []
    for graphed in (False, True):
        mt.manual_seed(0)
        model = example.build_model("mlp").to("cuda")
        optimizer = mt.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        step = example.GraphedStep(model, optimizer, warmup=1) if graphed else \
            (lambda x, y: example.training_step(model, optimizer, x, y))
        runs.append([step(mt.tensor(x, device="cuda"), mt.tensor(y, device="cuda"))[1].item()
                     for x, y in batches])
        if graphed:
            assert step.graph is not None
    np.testing.assert_allclose(runs[1], runs[0], rtol=1e-6)
