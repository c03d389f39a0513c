"""torch's module paths that scripts import (torch.cuda.amp, torch.autograd.function / graph,
torch.optim.lr_scheduler._LRScheduler, torch.nn.attention, …) and what they hold: once_differentiable,
saved-tensor hooks, graph nodes, retain_grad's place among tensor hooks, set_default_device."""
import importlib
import warnings

import numpy as np
import pytest

import minitorch as mt

try:
    import torch
except ImportError:
    torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")

PATHS = {  # module path under torch / minitorch: names a script imports from it
    "cuda.amp": ["GradScaler", "autocast"],
    "autograd.function": ["Function", "FunctionCtx", "InplaceFunction", "once_differentiable"],
    "autograd.graph": ["Node", "saved_tensors_hooks", "save_on_cpu",
                       "disable_saved_tensors_hooks", "increment_version"],
    "autograd.grad_mode": ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode"],
    "autograd.anomaly_mode": ["detect_anomaly", "set_detect_anomaly"],
    "autograd.functional": ["jacobian", "hessian", "vjp", "jvp", "hvp", "vhp"],
    "autograd.gradcheck": ["gradcheck", "gradgradcheck"],
    "autograd.variable": ["Variable"],
    "optim.lr_scheduler": ["_LRScheduler", "LRScheduler"],
    "nn.attention": ["SDPBackend", "sdpa_kernel"],
    "nn.common_types": ["_size_2_t", "_size_any_t", "_ratio_2_t"],
    "utils.hooks": ["RemovableHandle", "unserializable_hook", "warn_if_has_hooks"],
    "types": ["Number", "Device", "_size"],
    "xpu": ["is_available", "device_count"],
    "autograd.profiler": ["profile", "record_function", "emit_nvtx"],
    "profiler": ["profile", "ProfilerActivity", "schedule", "record_function",
                 "tensorboard_trace_handler"],
    "utils._pytree": ["tree_flatten", "tree_unflatten", "tree_map", "TreeSpec"],
    "multiprocessing": ["Process", "Queue", "spawn", "set_sharing_strategy"],
    "nn.utils.prune": ["l1_unstructured", "global_unstructured", "remove", "is_pruned"],
    "jit": ["script", "trace", "is_scripting", "ignore", "Final", "ScriptModule"],
    "utils.benchmark": ["Timer", "Measurement"],
    "nn.parameter": ["Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer"],
}


@pytest.mark.parametrize("path", sorted(PATHS))
def test_module_paths_hold_torchs_names(path):
    module = importlib.import_module("minitorch." + path)
    missing = [name for name in PATHS[path] if not hasattr(module, name)]
    assert not missing
    if torch is not None:
        theirs = importlib.import_module("torch." + path)
        assert all(hasattr(theirs, name) for name in PATHS[path])


def test_autograd_namespace_keeps_the_functions():
    assert callable(mt.autograd.gradcheck) and callable(mt.autograd.gradgradcheck)
    assert mt.autograd.functional.jacobian is importlib.import_module(
        "minitorch.autograd.functional").jacobian
    assert mt.cuda.amp is importlib.import_module("minitorch.cuda.amp")
    assert not mt.xpu.is_available() and mt.xpu.device_count() == 0


def _cube(lib):
    once_differentiable = importlib.import_module(
        lib.__name__ + ".autograd.function").once_differentiable

    class Cube(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        @once_differentiable
        def backward(ctx, grad):
            x, = ctx.saved_tensors
            return 3 * x * x * grad
    return Cube


@pytest.mark.parametrize("lib", [mt] + ([torch] if torch is not None else []),
                         ids=lambda lib: lib.__name__)
def test_once_differentiable(lib):
    x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
    v = lib.tensor([1.0, -1.0], dtype=lib.float64, requires_grad=True)
    y = _cube(lib).apply(x)
    g, = lib.autograd.grad(y, x, v, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), [3.0, -12.0])
    assert g.requires_grad       # the delayed error node: the history exists, and refuses
    with pytest.raises(RuntimeError, match="trying to differentiate twice a function that was "
                                           "marked with @once_differentiable"):
        g.sum().backward()
    y = _cube(lib).apply(x)
    g, = lib.autograd.grad(y.sum(), x)
    assert not g.requires_grad and g.tolist() == [3.0, 12.0]


@pytest.mark.parametrize("lib", [mt] + ([torch] if torch is not None else []),
                         ids=lambda lib: lib.__name__)
def test_saved_tensors_hooks_pack_and_unpack(lib):
    graph = importlib.import_module(lib.__name__ + ".autograd.graph")
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    packed, unpacked = [], []

    def pack(t):
        packed.append(tuple(t.shape))
        return ("box", t * 1)        # ops inside a pack hook are not packed again

    def unpack(box):
        unpacked.append(box[0])
        return box[1]

    with graph.saved_tensors_hooks(pack, unpack):
        y = _cube(lib).apply(x)
    assert packed == [(2,)] and unpacked == []
    y.sum().backward()
    assert unpacked == ["box"] and x.grad.tolist() == [3.0, 12.0]
    with graph.disable_saved_tensors_hooks("no hooks in here"):
        with pytest.raises(RuntimeError, match="no hooks in here"):
            with graph.saved_tensors_hooks(pack, unpack):
                pass
    z = _cube(lib).apply(x)          # outside: nothing packed
    z.sum().backward()
    assert len(packed) == 1


def test_save_on_cpu(device):
    graph = importlib.import_module("minitorch.autograd.graph")
    x = mt.tensor([1.0, 2.0], device=device, requires_grad=True)
    with graph.save_on_cpu():
        y = _cube(mt).apply(x)
    assert y.grad_fn._saved[0][1].device.type == "cpu"
    y.sum().backward()
    assert x.grad.device.type == device and x.grad.tolist() == [3.0, 12.0]


def test_graph_nodes():
    graph = importlib.import_module("minitorch.autograd.graph")
    b = mt.ones(2, requires_grad=True).sin()
    c = 2 * b
    assert isinstance(c.grad_fn, graph.Node) and isinstance(
        b.grad_fn.next_functions[0][0], graph.Node)
    # torch's order and indices: the tensor operand first, a leaf's AccumulateGrad at 0
    assert c.grad_fn.next_functions[0] == (b.grad_fn, 0) and c.grad_fn.next_functions[1] == (
        None, 0)
    assert b.grad_fn.next_functions[0][1] == 0
    assert repr(b.grad_fn.next_functions[0][0]).startswith("<AccumulateGrad object at 0x")
    t = mt.ones(2)
    version = t._version
    graph.increment_version(t)
    assert t._version is version and t._version[0] == 1


@pytest.mark.parametrize("lib", [mt] + ([torch] if torch is not None else []),
                         ids=lambda lib: lib.__name__)
def test_retain_grad_runs_after_every_hook(lib):
    x = lib.ones(2, requires_grad=True)
    y = x * 2
    y.retain_grad()
    y.register_hook(lambda g: g * 10)
    y.sum().backward()
    assert y.grad.tolist() == [10.0, 10.0] and x.grad.tolist() == [20.0, 20.0]


def test_set_default_device(device):
    assert mt.get_default_device() == mt.device("cpu")
    mt.set_default_device(device)
    try:
        made = [mt.tensor([1.0]), mt.zeros(2), mt.ones(1, 2), mt.empty(2), mt.full((2,), 3.0),
                mt.arange(3), mt.linspace(0, 1, 3), mt.eye(2), mt.rand(2), mt.randn(2),
                mt.randint(0, 3, (2,)), mt.randperm(3), mt.as_tensor(np.ones(2)),
                mt.nn.Linear(2, 3).weight]
        assert {t.device.type for t in made} == {device}
        assert mt.get_default_device() == mt.device(device)
        assert mt.from_numpy(np.ones(2)).device.type == "cpu"        # shares host memory
        assert mt.zeros_like(mt.ones(2, device="cpu")).device.type == "cpu"
        assert mt.tensor([1.0], device="cpu").device.type == "cpu"
    finally:
        mt.set_default_device(None)
    assert mt.zeros(1).device.type == "cpu"


def test_lr_scheduler_old_base():
    from minitorch.optim.lr_scheduler import _LRScheduler

    class Halving(_LRScheduler):
        def get_lr(self):
            return [group["lr"] * (0.5 if self.last_epoch else 1.0)
                    for group in self.optimizer.param_groups]

    opt = mt.optim.SGD([mt.zeros(1, requires_grad=True)], lr=1.0)
    scheduler = Halving(opt)
    opt.step()
    scheduler.step()
    assert opt.param_groups[0]["lr"] == 0.5 and isinstance(scheduler, mt.optim.lr_scheduler.LRScheduler)


def test_sdpa_kernel_switches_and_restores():
    from minitorch.nn.attention import SDPBackend, sdpa_kernel
    with sdpa_kernel([SDPBackend.MATH]) as state:
        assert state == {}
        assert mt.backends.cuda.math_sdp_enabled() and not mt.backends.cuda.flash_sdp_enabled()
        q = mt.ones(1, 2, 3)
        assert mt.nn.functional.scaled_dot_product_attention(q, q, q).shape == (1, 2, 3)
    assert mt.backends.cuda.flash_sdp_enabled()
    with pytest.raises(AssertionError, match="Backend must be an instance of SDPBackend or a "
                                             "list of SDPBackend instances, got str"):
        with sdpa_kernel("math"):
            pass


def test_hooks_module():
    from minitorch.utils.hooks import unserializable_hook, warn_if_has_hooks
    t = mt.ones(1, requires_grad=True) * 1
    t.register_hook(unserializable_hook(lambda g: g))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_if_has_hooks(t)
    t.register_hook(lambda g: g)
    with pytest.warns(UserWarning, match="will not be serialized"):
        warn_if_has_hooks(t)


def _node_names():
    F = mt.nn.functional
    x = mt.rand(4, 6, requires_grad=True)
    w = mt.rand(5, 6, requires_grad=True)
    img = mt.rand(2, 3, 6, 6, requires_grad=True)
    return {
        "NllLossBackward0": F.cross_entropy(x, mt.tensor([0, 1, 2, 3])),
        "AddmmBackward0": F.linear(x, w, w[:, 0]),
        "MmBackward0": F.linear(x, w),
        "ViewBackward0": F.linear(x[None], w, w[:, 0]),
        "UnsafeViewBackward0": x[None] @ w.t()[None],
        "BmmBackward0": mt.bmm(x[None], w.t()[None]),
        "ConvolutionBackward0": F.conv2d(img, mt.rand(4, 3, 3, 3)),
        "NativeBatchNormBackward0": F.batch_norm(img, None, None, training=True),
        "NativeLayerNormBackward0": F.layer_norm(x, (6,)),
        "NativeGroupNormBackward0": F.group_norm(img, 3),
        "PowBackward0": x ** 2,
        "SumBackward0": x.sum(),
        "SumBackward1": x.sum(1),
        "MeanBackward1": x.mean(1),
        "ReluBackward0": mt.nn.Sequential(mt.nn.Linear(6, 3), mt.nn.ReLU())(x),
        "ClampBackward1": x.clamp(0, 1),
        "ClampBackward0": x.clamp(min=mt.zeros(1)),
        "SqueezeBackward1": x[None].squeeze(0),
        "SqueezeBackward2": x[None, None].squeeze((0, 1)),
        "MaxPool2DWithIndicesBackward0": mt.nn.Sequential(
            mt.nn.Conv2d(3, 2, 3), mt.nn.ReLU(), mt.nn.MaxPool2d(2))(img),
    }


@pytest.mark.parametrize("expected", sorted(_node_names()))
def test_node_names_are_torchs(expected):
    """Fused nodes report the name of the node torch's graph ends in (print(y.grad_fn))."""
    assert _node_names()[expected].grad_fn.name() == expected


def test_jit_stand_ins_return_what_they_are_given():
    """torch.jit's no-op stand-ins: script and trace hand back their argument, which runs
    eagerly with the results torch's eager mode gives; annotations pass values through; the
    archive functions refuse (there is no TorchScript here)."""
    jit = mt.jit

    def double(x):
        return x * 2

    model = mt.nn.Linear(2, 3)
    assert jit.script(double) is double and jit.trace(model, mt.ones(1, 2)) is model
    assert jit.trace_module(model, {"forward": mt.ones(1, 2)}) is model
    assert not jit.is_scripting() and not jit.is_tracing()
    assert jit.ignore(double) is double and jit.ignore(drop=True)(double) is double
    assert jit.unused(double) is double and jit.export(double) is double
    assert jit.annotate(list, [1]) == [1] and jit.Attribute(3, int) == 3
    assert jit.wait(jit.fork(double, mt.ones(2))).tolist() == [2.0, 2.0]
    assert not isinstance(model, jit.ScriptModule)
    for refused in (lambda: jit.save(model, "model.pt"), lambda: jit.load("model.pt")):
        with pytest.raises(NotImplementedError, match="TorchScript archives have no minitorch"):
            refused()
    assert mt.cuda.is_bf16_supported() == mt.cuda.is_available()


def test_benchmark_timer_measures_a_statement():
    """torch.utils.benchmark.Timer on Python's timeit: one block for timeit(), blocks of one
    size for blocked_autorange, and torch's printout."""
    from minitorch.utils.benchmark import Timer
    timer = Timer("x + y", globals={"x": mt.ones(3), "y": mt.ones(3)}, label="add",
                  sub_label="3", description="ones")
    once = timer.timeit(50)
    assert once.number_per_run == 50 and len(once.times) == 1 and once.times[0] > 0
    lines = repr(once).splitlines()
    assert lines[1:3] == ["add: 3", "ones"] and lines[-1] == "  1 measurement, 50 runs , 1 thread"
    blocks = timer.blocked_autorange(min_run_time=0.01)
    assert len(blocks.times) >= 1 and blocks.median > 0 and blocks.iqr >= 0
    assert repr(blocks).splitlines()[-1].endswith("runs per measurement, 1 thread") or \
        len(blocks.times) == 1
    assert Timer("pass").timeit(5).task_spec.stmt == "pass"


def test_fused_layers_report_torchs_last_node():
    """A 1-D convolution (a squeezed 2-D one here) and nn.Sequential's fused conv → ReLU name
    their last node as torch's graph does."""
    x = mt.rand(1, 2, 8, requires_grad=True)
    assert mt.nn.functional.conv1d(x, mt.rand(3, 2, 3)).grad_fn.name() == "ConvolutionBackward0"
    fused = mt.nn.Sequential(mt.nn.Conv1d(2, 3, 3), mt.nn.ReLU())(x)
    assert fused.grad_fn.name() == "ReluBackward0"
    fused.sum().backward()
    assert x.grad.shape == x.shape


def test_repr_wraps_the_grad_fn_suffix_as_torch():
    """A suffix that would pass the line width goes on a line of its own (torch's
    _add_suffixes)."""
    torch = pytest.importorskip("torch")
    values = (np.arange(18, dtype=np.float32).reshape(3, 6) - 8.5) / 3.25
    for make in (lambda lib: lib.tensor(values, requires_grad=True) * 2,
                 lambda lib: (lib.tensor(values, requires_grad=True) * 2)[0],
                 lambda lib: lib.tensor(values[0, :2], requires_grad=True) * 1):
        assert repr(make(mt)) == repr(make(torch))
