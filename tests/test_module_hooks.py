"""nn.Module's state_dict / load_state_dict hooks, global (torch.nn.modules.module) hooks, the
deprecated non-full backward hook, set_submodule, to_empty, share_memory and type: call order,
arguments, prefixes and results pinned against torch."""
import warnings

import numpy as np
import pytest

import minitorch as mt
from minitorch.nn import module as mt_module
from minitorch.nn.utils import parametrizations

torch = pytest.importorskip("torch")


def make_net(lib, device="cpu"):
    """The same small model over minitorch or torch: Net(a=Leaf, inner=Sequential(Leaf, Leaf))."""

    class Leaf(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = lib.nn.Parameter(lib.tensor([1.0, 2.0], dtype=lib.float64, device=device))
            self.register_buffer("b", lib.tensor([0.5, -1.0], dtype=lib.float64, device=device))

        def forward(self, x):
            return x * self.w + self.b

    class Net(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = Leaf()
            self.inner = lib.nn.Sequential(Leaf(), Leaf())

        def forward(self, x):
            return self.inner(self.a(x))

    return Net()


def module_names(net):
    return {module: name for name, module in net.named_modules()}


def to_numpy(t):
    return None if t is None else t.detach().cpu().numpy()


def both(run):
    """run(lib) on minitorch and on torch; the two results must be equal."""
    ours, theirs = run(mt), run(torch)
    assert ours == theirs
    return ours


def same_error(run, error):
    with pytest.raises(error) as ours:
        run(mt)
    with pytest.raises(error) as theirs:
        run(torch)
    assert str(ours.value) == str(theirs.value)


# ---- state_dict hooks ----------------------------------------------------------------------------
def state_dict_hook_log(lib):
    net = make_net(lib)
    names, log = module_names(net), []
    for module in names:
        module.register_state_dict_pre_hook(
            lambda m, prefix, keep_vars: log.append(("pre", names[m], prefix, keep_vars)))
        module.register_state_dict_post_hook(
            lambda m, sd, prefix, meta: log.append(("post", names[m], prefix, list(sd),
                                                    dict(meta))))
    keys = list(net.state_dict(prefix="top.", keep_vars=True))
    return log, keys


def test_state_dict_pre_and_post_hooks_order_and_prefixes():
    log, keys = both(state_dict_hook_log)
    assert log[0] == ("pre", "", "top.", True) and log[-1][:3] == ("post", "", "top.")
    assert log[-1][3] == keys


def test_state_dict_post_hook_results():
    def run(lib):
        net = make_net(lib)
        net.register_state_dict_post_hook(lambda *args: {"x": 1})
        net.state_dict()
    same_error(run, RuntimeError)

    def private(lib):
        net = make_net(lib)
        # the private hook's new dict counts on the root only; a child's return is dropped
        net.a._register_state_dict_hook(lambda *args: {"ignored": 0})
        net._register_state_dict_hook(lambda m, sd, prefix, meta: {k: 0 for k in sd if "a" in k})
        return dict(net.state_dict())
    assert both(private) == {"a.w": 0, "a.b": 0}

    def both_apis(lib):
        def hook(*args):
            pass
        net = make_net(lib)
        net.register_state_dict_post_hook(hook)
        net._register_state_dict_hook(hook)
    same_error(both_apis, RuntimeError)


# ---- load_state_dict hooks -----------------------------------------------------------------------
def load_hook_log(lib, with_module):
    net = make_net(lib)
    state = net.state_dict()
    del state["inner.1.b"]
    state["inner.0.extra"] = lib.zeros(1)
    names, log = module_names(net), []

    def pre(*args):
        module, args = (args[0], args[1:]) if with_module else (None, args)
        state_dict, prefix, meta, strict, missing, unexpected, errors = args
        log.append(("pre", names.get(module), prefix, sorted(state_dict), dict(meta), strict,
                    list(missing), list(unexpected), list(errors)))

    def post(module, incompatible):
        log.append(("post", names[module], list(incompatible.missing_keys),
                    list(incompatible.unexpected_keys)))

    for module in names:
        if with_module:
            module.register_load_state_dict_pre_hook(pre)
        else:
            module._register_load_state_dict_pre_hook(pre)
        module.register_load_state_dict_post_hook(post)
    result = net.load_state_dict(state, strict=False)
    return log, result.missing_keys, result.unexpected_keys


@pytest.mark.parametrize("with_module", [True, False])
def test_load_state_dict_hooks_order_and_arguments(with_module):
    log, missing, unexpected = both(lambda lib: load_hook_log(lib, with_module))
    assert missing == ["inner.1.b"] and unexpected == ["inner.0.extra"]
    assert [entry[0] for entry in log[:2]] == ["pre", "pre"] and log[-1][:2] == ("post", "")


def test_load_pre_hook_edits_this_modules_state_dict(device):
    net = make_net(mt, device)
    state = {k.replace("a.w", "a.old_w"): v * 3 for k, v in net.state_dict().items()}

    def rename(module, state_dict, prefix, *args):
        state_dict[prefix + "w"] = state_dict.pop(prefix + "old_w")

    net.a.register_load_state_dict_pre_hook(rename)
    assert str(net.load_state_dict(state)) == "<All keys matched successfully>"
    np.testing.assert_array_equal(to_numpy(net.a.w), [3.0, 6.0])


@pytest.mark.torch_exact
def test_load_post_hook_decides_strict_errors_and_sees_loaded_tensors(device):
    net, seen = make_net(mt, device), []
    state = {k: v + 1 for k, v in net.state_dict().items() if k != "inner.0.w"}

    def forgive(module, incompatible):
        seen.append(to_numpy(module.w))
        incompatible.missing_keys.clear()

    handle = net.inner[0].register_load_state_dict_post_hook(forgive)
    result = net.load_state_dict(state)
    assert result.missing_keys == [] and len(seen) == 1
    np.testing.assert_array_equal(seen[0], [1.0, 2.0])         # its own key was missing
    np.testing.assert_array_equal(to_numpy(net.inner[1].w), [2.0, 3.0])
    handle.remove()
    net.a.register_load_state_dict_post_hook(lambda m, keys: keys.unexpected_keys.append("z"))
    full = {k: v for k, v in make_net(mt, device).state_dict().items()}
    with pytest.raises(RuntimeError, match='Unexpected key\\(s\\) in state_dict: "z"'):
        net.load_state_dict(full)

    def returns(lib):
        net = make_net(lib)
        net.register_load_state_dict_post_hook(lambda m, keys: keys)
        net.load_state_dict(net.state_dict())
    same_error(returns, AssertionError)


def test_weight_norm_parametrization_loads_legacy_weight_norm_checkpoint(device):
    def checkpoint(lib):
        on = device if lib is mt else "cpu"
        lib.manual_seed(0)
        legacy = lib.nn.Sequential(lib.nn.Linear(3, 2).double())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)     # legacy weight_norm is deprecated
            lib.nn.utils.weight_norm(legacy[0])
        state = {k: v.to(on) for k, v in legacy.state_dict().items()}
        target = lib.nn.Sequential(lib.nn.Linear(3, 2).double().to(on))
        lib.nn.utils.parametrizations.weight_norm(target[0])
        result = target.load_state_dict(state)
        return (sorted(state), list(target.state_dict()), str(result),
                to_numpy(target[0].weight).round(12).tolist(),
                to_numpy(legacy[0].weight).round(12).tolist())

    keys, new_keys, result, weight, legacy_weight = checkpoint(mt)
    assert keys == ["0.bias", "0.weight_g", "0.weight_v"]
    assert new_keys == ["0.bias", "0.parametrizations.weight.original0",
                        "0.parametrizations.weight.original1"]
    assert result == "<All keys matched successfully>" and weight == legacy_weight
    assert checkpoint(torch)[:3] == (keys, new_keys, result)
    assert parametrizations.weight_norm is mt.nn.utils.parametrizations.weight_norm


# ---- global hooks --------------------------------------------------------------------------------
def global_module(lib):
    return mt_module if lib is mt else torch.nn.modules.module


def forward_hook_log(lib):
    net, glob = make_net(lib), global_module(lib)
    names, log = module_names(net), []
    handles = [
        glob.register_module_forward_pre_hook(lambda m, args: log.append(("gpre", names[m]))),
        glob.register_module_forward_hook(
            lambda m, args, kwargs, out: log.append(("gfwd", names[m], sorted(kwargs))),
            with_kwargs=True),
        net.a.register_forward_pre_hook(lambda m, args: (args[0] * 2,)),
        net.a.register_forward_hook(lambda m, args, out: log.append(("fwd", "a"))),
    ]
    try:
        out = net(lib.tensor([1.0, 1.0], dtype=lib.float64))
    finally:
        for handle in handles:
            handle.remove()
    net(lib.ones(2, dtype=lib.float64))                 # removed: nothing more logged
    return log, to_numpy(out).tolist()


def test_global_forward_hooks_run_before_the_modules_own():
    log, out = both(forward_hook_log)
    assert log[:2] == [("gpre", ""), ("gpre", "a")] and log[-1] == ("gfwd", "", [])
    assert out == [3.5, 9.0]


def test_global_always_call_forward_hook_runs_when_forward_raises():
    def run(lib):
        log = []

        class Failing(lib.nn.Module):
            def forward(self, x):
                raise ValueError("boom")

        handle = global_module(lib).register_module_forward_hook(
            lambda m, args, out: log.append((type(m).__name__, out)), always_call=True)
        try:
            with pytest.raises(ValueError, match="boom"):
                Failing()(1)
        finally:
            handle.remove()
        return log
    assert both(run) == [("Failing", None)]


def backward_hook_log(lib, device):
    net, glob = make_net(lib, device), global_module(lib)
    names, log = module_names(net), []

    def record(kind):
        def hook(module, *grads):
            log.append((kind, names[module]) + tuple(
                [to_numpy(g).tolist() for g in group] for group in grads))
        return hook

    handles = [glob.register_module_full_backward_pre_hook(record("gpre")),
               glob.register_module_full_backward_hook(record("gfull")),
               net.inner[0].register_full_backward_pre_hook(record("pre")),
               net.inner[0].register_full_backward_hook(record("full"))]
    x = lib.tensor([1.0, -2.0], dtype=lib.float64, device=device, requires_grad=True)
    try:
        (net(x) * lib.tensor([1.0, 3.0], dtype=lib.float64, device=device)).sum().backward()
    finally:
        for handle in handles:
            handle.remove()
    return log, to_numpy(x.grad).tolist()


def test_global_full_backward_hooks_match_torch(device):
    log, grad = backward_hook_log(mt, device)
    assert (log, grad) == backward_hook_log(torch, "cpu")
    assert [entry[:2] for entry in log[:3]] == [("gpre", ""), ("gpre", "inner"),
                                                ("gpre", "inner.1")]
    assert ("pre", "inner.0") in [entry[:2] for entry in log] and grad == [1.0, 24.0]


def test_global_backward_hook_kinds_cannot_mix():
    def run(lib):
        glob = global_module(lib)
        glob.register_module_full_backward_hook(lambda *args: None).remove()
        glob.register_module_backward_hook(lambda *args: None)
    same_error(run, RuntimeError)


def registration_log(lib):
    glob, log = global_module(lib), []

    def hook(kind, replace=None):
        def record(module, name, value):
            log.append((kind, type(module).__name__, name, type(value).__name__))
            return replace(value) if replace and value is not None else None
        return record

    handles = [glob.register_module_buffer_registration_hook(hook("buffer", lambda v: v * 0)),
               glob.register_module_module_registration_hook(hook("module")),
               glob.register_module_parameter_registration_hook(hook("param"))]
    try:
        net = make_net(lib)
        net.extra = lib.nn.Identity()
        net.register_buffer("none", None)
        net.a.w = lib.nn.Parameter(lib.ones(2))
    finally:
        for handle in handles:
            handle.remove()
    return log, to_numpy(net.a.b).tolist()


def test_global_registration_hooks_see_and_replace_members():
    log, buffer = both(registration_log)
    assert ("module", "Net", "inner", "Sequential") in log and buffer == [0.0, -0.0]
    assert log[-2:] == [("buffer", "Net", "none", "NoneType"), ("param", "Leaf", "w", "Parameter")]


# ---- the deprecated non-full backward hook -------------------------------------------------------
def non_full_hook_run(lib, device, double_input_grad):
    class Scale(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = lib.nn.Parameter(lib.tensor([1.0, 2.0], dtype=lib.float64, device=device))

        def forward(self, x):
            return x * self.w

    log, module = [], Scale()

    def hook(m, grad_input, grad_output):
        log.append((type(m).__name__, [to_numpy(g).tolist() for g in grad_input],
                    [to_numpy(g).tolist() for g in grad_output]))
        if double_input_grad:
            return (grad_input[0] * 2,) + tuple(grad_input[1:])

    module.register_backward_hook(hook)
    x = lib.tensor([3.0, 4.0], dtype=lib.float64, device=device, requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = module(x)
    (out * lib.tensor([1.0, 10.0], dtype=lib.float64, device=device)).sum().backward()
    return log, to_numpy(x.grad).tolist(), [(w.category, str(w.message)) for w in caught]


@pytest.mark.parametrize("double_input_grad", [False, True])
def test_non_full_backward_hook_matches_torch(device, double_input_grad):
    ours = non_full_hook_run(mt, device, double_input_grad)
    assert ours == non_full_hook_run(torch, "cpu", double_input_grad)
    assert ours[0] == [("Scale", [[1.0, 20.0], [3.0, 40.0]], [[1.0, 10.0]])]
    assert ours[2][0][0] is FutureWarning      # the leaf input makes two autograd nodes


def test_backward_hook_kinds_cannot_mix_on_a_module():
    def full_then_old(lib):
        module = lib.nn.Linear(2, 2)
        module.register_full_backward_hook(lambda *args: None)
        module.register_backward_hook(lambda *args: None)
    same_error(full_then_old, RuntimeError)

    def old_then_full(lib):
        module = lib.nn.Linear(2, 2)
        module.register_backward_hook(lambda *args: None)
        module.register_full_backward_hook(lambda *args: None)
    same_error(old_then_full, RuntimeError)


# ---- set_submodule, to_empty, share_memory, type -------------------------------------------------
def test_set_submodule_replaces_and_adds():
    def run(lib):
        net = make_net(lib)
        net.set_submodule("inner.0", lib.nn.Identity())
        net.set_submodule("inner.new", lib.nn.Tanh(), strict=False)
        net.set_submodule("a", lib.nn.ReLU(), strict=True)
        return [(name, type(m).__name__) for name, m in net.named_modules()]
    assert both(run)[-3:] == [("inner.0", "Identity"), ("inner.1", "Leaf"),
                              ("inner.new", "Tanh")]


@pytest.mark.parametrize("target, module, strict, error", [
    ("", "Identity", False, ValueError),
    ("a", None, False, ValueError),
    ("inner.zzz", "Identity", True, AttributeError),
    ("a.w", "Identity", False, AttributeError),
    ("missing.x", "Identity", False, AttributeError),
])
def test_set_submodule_errors(target, module, strict, error):
    def run(lib):
        value = getattr(lib.nn, module)() if module else 3
        make_net(lib).set_submodule(target, value, strict=strict)
    same_error(run, error)


def test_to_empty_keeps_parameters_and_moves_them(device):
    net = make_net(mt)
    weight = net.a.w
    assert net.to_empty(device=device) is net
    assert net.a.w is weight and isinstance(net.a.w, mt.nn.Parameter)
    for tensor in (*net.parameters(), *net.buffers()):
        assert tensor.device.type == device and tensor.shape == (2,)
        assert tensor.dtype is mt.float64
    net.inner.to_empty(device="cpu", recurse=False)    # Sequential itself holds nothing
    assert net.inner[0].w.device.type == device
    same_error(lambda lib: make_net(lib).to_empty(), TypeError)


def test_type_casts_every_tensor_and_share_memory_returns_self(device):
    net = make_net(mt, device)
    net.a.register_buffer("steps", mt.tensor([3], device=device))
    weight = net.a.w
    assert net.type(mt.float32) is net and net.a.w is weight
    assert [t.dtype for t in net.a.state_dict().values()] == [mt.float32] * 3
    assert net.share_memory() is net and net.a.w is weight
    np.testing.assert_array_equal(to_numpy(net.a.w), [1.0, 2.0])
