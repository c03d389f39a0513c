"""Multi-tensor (foreach) optimizer steps: SGD, Adam/AdamW, Adadelta and RMSprop update every
compact parameter of a dtype and device in one kernel call. Their trajectories and state are
those of the op-by-op single-tensor rule bit for bit (on the CPU), match torch over several
steps, and the rest (non-compact, foreach=False, capturable) takes the per-parameter path."""
import sys

import numpy as np
import pytest

import minitorch as mt
import minitorch.nn as nn
import minitorch.optim as optim
import minitorch.optim.adam as adam_module
from minitorch import _cpu

CONFIGS = [
    ("SGD", {"lr": 0.05}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "dampening": 0.3, "weight_decay": 0.1}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "nesterov": True, "maximize": True}),
    ("Adam", {"lr": 0.01}),
    ("Adam", {"lr": 0.01, "betas": (0.3, 0.99), "weight_decay": 0.1, "amsgrad": True,
              "maximize": True}),
    ("AdamW", {"lr": 0.01, "amsgrad": True}),
    ("Adadelta", {}),
    ("Adadelta", {"lr": 0.5, "rho": 0.8, "weight_decay": 0.1, "maximize": True}),
    ("RMSprop", {}),
    ("RMSprop", {"momentum": 0.9}),
    ("RMSprop", {"centered": True, "momentum": 0.9, "weight_decay": 0.1}),
    ("RMSprop", {"centered": True, "alpha": 0.3, "maximize": True}),
]
IDS = [f"{name}-{'-'.join(f'{k}={v}' for k, v in kw.items())}" for name, kw in CONFIGS]
SHAPES = [(37, 29), (64,), (5, 7, 3), (1,), (0, 4)]
KERNELS = {"SGD": "foreach_sgd", "Adam": "foreach_adam", "AdamW": "foreach_adam",
           "Adadelta": "foreach_adadelta", "RMSprop": "foreach_rmsprop"}


def _run(lib, name, kwargs, dtype, steps=6, device="cpu", shapes=SHAPES, skip=None):
    """Parameters and state after `steps` steps on fixed gradients; parameter `skip` gets no
    gradient on odd steps (so step counts differ between parameters)."""
    rng = np.random.default_rng(0)
    starts = [rng.standard_normal(s) for s in shapes]
    grads = [[rng.standard_normal(s) for s in shapes] for _ in range(steps)]
    dt = getattr(lib, dtype)

    def make(a):
        return lib.tensor(a, dtype=dt) if lib is not mt else lib.tensor(a, dtype=dt, device=device)
    params = [lib.nn.Parameter(make(a)) for a in starts]
    opt = getattr(lib.optim, name)(params, **kwargs)
    for t, step_grads in enumerate(grads):
        for k, (p, g) in enumerate(zip(params, step_grads)):
            p.grad = None if k == skip and t % 2 else make(g)
        opt.step()
    state = opt.state_dict()["state"]
    return ([p.detach().cpu().numpy() for p in params],
            {k: {n: (v.cpu().numpy() if hasattr(v, "cpu") else v) for n, v in s.items()}
             for k, s in state.items()})


def _assert_same(a, b, exact, dtype):
    (params_a, state_a), (params_b, state_b) = a, b
    assert state_a.keys() == state_b.keys()
    pairs = list(zip(params_a, params_b))
    for k in state_b:
        assert state_a[k].keys() == state_b[k].keys()
        pairs += [(state_a[k][n], state_b[k][n]) for n in state_b[k]]
    for x, y in pairs:
        if exact:
            np.testing.assert_array_equal(x, y)
        else:
            tol = 1e-5 if dtype == "float32" else 1e-13
            np.testing.assert_allclose(x, y, rtol=tol, atol=tol)


@pytest.fixture
def op_by_op(monkeypatch):
    """Adam's per-parameter path runs the rule op by op (not the adam_step kernel)."""
    monkeypatch.setattr(adam_module, "_fusable", lambda tensors: False)


@pytest.fixture
def calls(monkeypatch):
    """{kernel name: [number of parameters of each call]} of the CPU foreach kernels."""
    seen = {}
    for kernel in set(KERNELS.values()):
        def spy(*args, _kernel=kernel, _real=getattr(_cpu, kernel), **kwargs):
            seen.setdefault(_kernel, []).append(len(args[0]))
            return _real(*args, **kwargs)
        monkeypatch.setattr(_cpu, kernel, spy)
    return seen


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,kwargs", CONFIGS, ids=IDS)
def test_foreach_gives_the_op_by_op_bits(name, kwargs, dtype, device, op_by_op, calls):
    """One kernel call per step, and the single-tensor rule's results, per-parameter step
    counts (one parameter skips every other step) included: bit for bit on the CPU and the
    emulated GPU; on a real GPU (not yet run there) to the last bits."""
    fused = _run(mt, name, kwargs, dtype, device=device, skip=2)
    reference = _run(mt, name, dict(kwargs, foreach=False), dtype, device=device, skip=2)
    emulated = getattr(sys.modules.get("cupy"), "emulated", False)
    _assert_same(fused, reference, exact=device == "cpu" or emulated, dtype=dtype)
    if device == "cpu":
        # steps 1, 3, 5 update all five parameters, steps 2, 4, 6 the four with a gradient
        assert calls[KERNELS[name]] == [5, 4] * 3


@pytest.mark.parametrize("name,kwargs", CONFIGS, ids=IDS)
def test_trajectory_matches_torch(name, kwargs):
    torch = pytest.importorskip("torch")
    ours = _run(mt, name, kwargs, "float64", steps=10)
    for foreach in (False, True):
        theirs = _run(torch, name, dict(kwargs, foreach=foreach), "float64", steps=10)
        for x, y in zip(ours[0], theirs[0]):
            np.testing.assert_allclose(x, y, rtol=1e-10, atol=1e-12)


def test_float32_close_to_torch():
    torch = pytest.importorskip("torch")
    for name, kwargs in CONFIGS:
        ours = _run(mt, name, kwargs, "float32")
        theirs = _run(torch, name, kwargs, "float32")
        for x, y in zip(ours[0], theirs[0]):
            np.testing.assert_allclose(x, y, rtol=2e-4, atol=2e-5, err_msg=name)


def test_fallbacks_take_the_per_parameter_path(calls, op_by_op):
    """A transposed parameter and a float64 one beside float32 ones: the compact float32 ones
    share a call, the float64 one has its own, the transposed one goes op by op; foreach=False
    and capturable=True never call a kernel. All end where the per-parameter rule does."""
    rng = np.random.default_rng(1)

    def make():
        w = mt.tensor(rng.standard_normal((4, 3)), dtype=mt.float32)
        return [nn.Parameter(mt.tensor(rng.standard_normal((3, 5)), dtype=mt.float32)),
                nn.Parameter(w.t()),
                nn.Parameter(mt.tensor(rng.standard_normal(7), dtype=mt.float64)),
                nn.Parameter(mt.tensor(rng.standard_normal(2), dtype=mt.float32))]
    results = []
    for options in ({}, {"foreach": False}, {"capturable": True}):
        rng = np.random.default_rng(1)
        params = make()
        assert not params[1].is_contiguous()
        opt = optim.Adam(params, lr=0.1, **options)
        for _ in range(3):
            for p in params:
                p.grad = mt.ones_like(p)
            opt.step()
        results.append([p.detach().numpy() for p in params])
        if options:
            assert "foreach_adam" not in calls
        else:
            assert sorted(calls.pop("foreach_adam")) == [1, 1, 1, 2, 2, 2]
    for other in results[1:]:
        for x, y in zip(results[0], other):
            np.testing.assert_array_equal(x, y)


def test_sgd_without_momentum_keeps_no_state(calls):
    params = [nn.Parameter(mt.randn(3, 4)), nn.Parameter(mt.randn(4))]
    opt = optim.SGD(params, lr=0.1)
    for p in params:
        p.grad = mt.ones_like(p)
    opt.step()
    assert calls["foreach_sgd"] == [2] and opt.state_dict()["state"] == {}


def test_step_bumps_versions_of_everything_written():
    params = [nn.Parameter(mt.randn(3, 4)), nn.Parameter(mt.randn(4))]
    opt = optim.Adam(params, amsgrad=True)
    for p in params:
        p.grad = mt.ones_like(p)
    opt.step()
    state = opt.state[params[0]]
    before = [t._version[0] for t in (params[0], state["exp_avg"], state["exp_avg_sq"],
                                      state["max_exp_avg_sq"], state["step"])]
    grad_version = params[0].grad._version[0]
    opt.step()
    after = [t._version[0] for t in (params[0], state["exp_avg"], state["exp_avg_sq"],
                                     state["max_exp_avg_sq"], state["step"])]
    assert all(b < a for b, a in zip(before, after))
    assert params[0].grad._version[0] == grad_version


def test_many_threads_give_one_threads_bits():
    """Above the parallel threshold the concatenated elements are split among threads at
    places that cut through tensors: the result does not depend on it."""
    shapes = [(300, 70), (3,), (129, 33), (1000,), (64, 64)]
    results = []
    threads = mt.get_num_threads()
    try:
        for n in (1, 3):
            mt.set_num_threads(n)
            results.append(_run(mt, "Adam", {"amsgrad": True}, "float32", steps=3,
                                shapes=shapes))
    finally:
        mt.set_num_threads(threads)
    _assert_same(results[0], results[1], exact=True, dtype="float32")


def test_bad_lists_are_refused_before_anything_changes():
    p, g, m, v = (np.ones(3, np.float32) for _ in range(4))
    steps = [np.zeros(1, np.float32)]
    with pytest.raises(ValueError, match="step counter is one float32 or float64 element"):
        _cpu.foreach_adam([p, p], [g, g], [m, m], [v, v], None, [steps[0], np.zeros(2)],
                          0.1, 0.9, 0.99, 1e-8)
    assert steps[0][0] == 0 and (p == 1).all() and (m == 1).all()
    with pytest.raises(ValueError, match="a buffer has 4 elements, its parameter 3"):
        _cpu.foreach_sgd([p], [np.ones(4, np.float32)], None, 0.1)
    with pytest.raises(TypeError, match=r"every buffer must have the parameters' dtype"):
        _cpu.foreach_rmsprop([p], [g], [np.ones(3)], None, None, None, 0.1, 0.9, 1e-8)
    with pytest.raises(ValueError, match="read-only"):
        readonly = np.ones(3, np.float32)
        readonly.flags.writeable = False
        _cpu.foreach_adadelta([readonly], [g], [m], [v], None, 1.0, 0.9, 1e-6)
    _cpu.foreach_sgd([], [], None, 0.1)          # nothing to do
