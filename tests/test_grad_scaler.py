"""mt.amp.GradScaler against torch.amp.GradScaler: the scale trajectory with injected infs/NaNs,
skipped steps, the unscale_ / clip / step pattern, state_dict, enabled=False, errors and
warnings (the wording pinned as torch 2.13's: `torch_exact`)."""
import pickle
import warnings

import numpy as np
import pytest

import minitorch as mt
from minitorch import nn

SHAPES = [(4, 3), (3,), (2, 2)]


def _scaler(lib, device, **kwargs):
    return lib.amp.GradScaler(device, **kwargs)


def _cuda_device(device):
    return "cuda" if device.startswith("cuda") else "cpu"


def _gradients(steps, seed=0):
    """Per step, one target gradient per parameter; some steps hold an inf, a NaN, or values
    that overflow float32 once scaled (every float32 inf path of a real backward)."""
    rng = np.random.default_rng(seed)
    plan = []
    for step in range(steps):
        grads = [rng.standard_normal(shape).astype(np.float32) for shape in SHAPES]
        kind = step % 7
        if kind == 3:
            grads[0][1, 2] = np.inf
        elif kind == 5:
            grads[1][0] = np.nan
        elif kind == 6 and step % 3 == 0:
            grads[2][1, 1] = 3e38           # finite, but inf after scaling
        plan.append(grads)
    return plan


def _train(lib, device, plan, scaler_kwargs, optimizer=("Adam", {"lr": 0.01})):
    """Runs the scaled loop; returns (scale after each update, tracker after each update,
    final parameters as numpy)."""
    rng = np.random.default_rng(1)
    params = [nn.Parameter(lib.tensor(rng.standard_normal(s).astype(np.float32), device=device))
              if lib is mt else
              lib.nn.Parameter(lib.tensor(rng.standard_normal(s).astype(np.float32)))
              for s in SHAPES]
    opt = getattr(lib.optim, optimizer[0])(params, **optimizer[1])
    scaler = _scaler(lib, _cuda_device(device) if lib is mt else "cpu", **scaler_kwargs)
    scales, trackers = [], []
    for grads in plan:
        opt.zero_grad()
        # d(sum(p * g))/dp = g: the backward of the scaled loss gives g * scale
        loss = sum((p * lib.tensor(g, device=p.device)).sum() for p, g in zip(params, grads))
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        scales.append(scaler.get_scale())
        trackers.append(scaler.state_dict()["_growth_tracker"])
    return scales, trackers, [np.array(p.detach().cpu().tolist()) for p in params]


@pytest.mark.parametrize("scaler_kwargs", [
    {"init_scale": 2.0 ** 16, "growth_interval": 4},
    {"init_scale": 1000.0, "growth_factor": 3.0, "backoff_factor": 0.3, "growth_interval": 3},
])
def test_scale_trajectory_matches_torch(device, scaler_kwargs):
    torch = pytest.importorskip("torch")
    plan = _gradients(100)
    ours = _train(mt, device, plan, scaler_kwargs)
    theirs = _train(torch, "cpu", plan, scaler_kwargs)
    assert ours[0] == theirs[0]                      # get_scale() at every step, exactly
    assert ours[1] == theirs[1]
    assert len(set(ours[0])) > 5                     # it both grew and backed off
    for p, q in zip(ours[2], theirs[2]):
        np.testing.assert_allclose(p, q, rtol=1e-6, atol=1e-6)


def test_growth_stops_before_float32_overflow(device):
    torch = pytest.importorskip("torch")
    plan = [[np.zeros(s, np.float32) for s in SHAPES]] * 4
    kwargs = {"init_scale": 2.0 ** 126, "growth_interval": 1}
    ours = _train(mt, device, plan, kwargs, ("SGD", {"lr": 0.1}))
    theirs = _train(torch, "cpu", plan, kwargs, ("SGD", {"lr": 0.1}))
    assert ours[0] == theirs[0] == [2.0 ** 127] * 4
    assert ours[1] == theirs[1] == [0] * 4


def _model_and_adam(device):
    model = nn.Linear(3, 2).to(device)
    opt = mt.optim.Adam(model.parameters(), lr=0.1)
    return model, opt


def _snapshot(model, opt):
    params = [p.detach().cpu().tolist() for p in model.parameters()]
    state = [{k: (v.cpu().tolist() if isinstance(v, mt.Tensor) else v) for k, v in s.items()}
             for s in opt.state.values()]
    return params, state


def test_a_skipped_step_leaves_parameters_and_optimizer_state_untouched(device):
    model, opt = _model_and_adam(device)
    scaler = mt.amp.GradScaler(_cuda_device(device), init_scale=8.0)
    x = mt.ones(4, 3, device=device)
    scaler.scale(model(x).sum()).backward()
    scaler.step(opt)                                 # a clean step: Adam state exists
    scaler.update()
    before = _snapshot(model, opt)
    opt.zero_grad()
    scaler.scale(model(x * mt.tensor(float("inf"), device=device)).sum()).backward()
    assert scaler.step(opt) is None
    assert _snapshot(model, opt) == before
    scaler.update()
    assert scaler.get_scale() == 4.0
    assert scaler.state_dict()["_growth_tracker"] == 0


class _CountingOptimizer(mt.optim.SGD):
    """SGD whose step returns what it was given, to see step()'s forwarding."""

    def step(self, *args, **kwargs):
        super().step()
        return ("stepped", args, kwargs)


def test_step_forwards_arguments_and_returns_optimizer_step_value(device):
    p = nn.Parameter(mt.ones(2, device=device))
    opt = _CountingOptimizer([p], lr=0.5)
    scaler = mt.amp.GradScaler(_cuda_device(device), init_scale=4.0)
    scaler.scale((p * 2).sum()).backward()
    assert scaler.step(opt, 1, flag=True) == ("stepped", (1,), {"flag": True})
    assert p.detach().cpu().tolist() == [0.0, 0.0]   # unscaled gradient 2, lr 0.5


def test_unscale_clip_step_pattern_matches_torch(device):
    torch = pytest.importorskip("torch")
    w = np.random.default_rng(2).standard_normal((3, 4)).astype(np.float32)
    results = []
    for lib, dev in ((mt, device), (torch, "cpu")):
        p = (nn.Parameter if lib is mt else torch.nn.Parameter)(lib.tensor(w, device=dev))
        opt = lib.optim.SGD([p], lr=0.1)
        scaler = lib.amp.GradScaler(_cuda_device(dev), init_scale=1024.0)
        scaler.scale((p * p).sum() * 3).backward()
        scaler.unscale_(opt)
        unscaled = np.array(p.grad.cpu().tolist())
        norm = lib.nn.utils.clip_grad_norm_([p], max_norm=1.0).item()
        scaler.step(opt)
        scaler.update()
        results.append((unscaled, norm, np.array(p.detach().cpu().tolist()),
                        scaler.get_scale()))
    ours, theirs = results
    np.testing.assert_allclose(ours[0], 6 * w, rtol=1e-6)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-6)
    assert ours[1] == pytest.approx(theirs[1], rel=1e-6)
    np.testing.assert_allclose(ours[2], theirs[2], rtol=1e-6, atol=1e-6)
    assert ours[3] == theirs[3] == 1024.0


def test_unscale_checks_every_device_and_dtype_group(device):
    p32 = nn.Parameter(mt.ones(2, device=device))
    p64 = nn.Parameter(mt.ones(2, dtype=mt.float64, device=device))
    opt = mt.optim.SGD([p32, p64], lr=1.0)
    scaler = mt.amp.GradScaler(_cuda_device(device), init_scale=4.0)
    p32.grad = mt.tensor([8.0, 4.0], device=device)
    p64.grad = mt.tensor([float("nan"), 4.0], dtype=mt.float64, device=device)
    scaler.scale(mt.ones((), device=device))
    scaler.unscale_(opt)
    assert p32.grad.cpu().tolist() == [2.0, 1.0]     # unscaled even when another had NaN
    assert p64.grad.cpu().tolist()[1] == 1.0
    found = scaler._found_inf_per_device(opt)
    assert [f.item() for f in found.values()] == [1.0]
    assert scaler.step(opt) is None
    assert p32.detach().cpu().tolist() == [1.0, 1.0]


def test_scale_nested_outputs(device):
    scaler = mt.amp.GradScaler(_cuda_device(device), init_scale=2.0)
    x = mt.tensor([1.0, 3.0], device=device)
    out = scaler.scale([x, (x, [x])])
    assert isinstance(out, list) and isinstance(out[1], tuple) and isinstance(out[1][1], list)
    assert out[1][1][0].cpu().tolist() == [2.0, 6.0]
    lazy = scaler.scale(iter([x]))
    assert not isinstance(lazy, (list, tuple))
    assert [t.cpu().tolist() for t in lazy] == [[2.0, 6.0]]
    assert scaler.scale(mt.tensor([1, 2], device=device)).dtype == mt.float32
    with pytest.raises(ValueError, match="outputs must be a Tensor or an iterable of Tensors"):
        scaler.scale(3)


def test_update_with_a_new_scale(device):
    scaler = mt.amp.GradScaler(_cuda_device(device))
    scaler.scale(mt.ones((), device=device))
    scaler.update(128.0)
    assert scaler.get_scale() == 128.0
    new = mt.tensor(32.0, device=device)
    scaler.update(new)
    new.fill_(1.0)                                   # the value was copied
    assert scaler.get_scale() == 32.0
    reason = "new_scale should be a float or a 1-element"
    with pytest.raises(AssertionError, match=reason):
        scaler.update(mt.tensor([1.0, 2.0], device=device))
    with pytest.raises(AssertionError, match=reason):
        scaler.update(mt.tensor(2.0, device=device, requires_grad=True))


def test_state_dict_round_trip(device):
    torch = pytest.importorskip("torch")
    scaler = mt.amp.GradScaler(_cuda_device(device), init_scale=256.0, growth_interval=3)
    p = nn.Parameter(mt.ones(2, device=device))
    opt = mt.optim.SGD([p], lr=0.1)
    for _ in range(2):
        scaler.scale(p.sum()).backward()
        scaler.step(opt)
        scaler.update()
    state = scaler.state_dict()
    assert state == {"scale": 256.0, "growth_factor": 2.0, "backoff_factor": 0.5,
                     "growth_interval": 3, "_growth_tracker": 2}
    assert state.keys() == torch.amp.GradScaler("cpu").state_dict().keys()
    fresh = mt.amp.GradScaler(_cuda_device(device))
    fresh.load_state_dict(state)
    assert fresh.state_dict() == state               # before its tensors exist
    fresh.scale(mt.ones((), device=device))
    assert fresh.state_dict() == state               # and made from the loaded values
    scaler.load_state_dict(dict(state, scale=8.0, _growth_tracker=1))
    assert (scaler.get_scale(), scaler.state_dict()["_growth_tracker"]) == (8.0, 1)
    clone = pickle.loads(pickle.dumps(scaler))
    assert clone.state_dict() == scaler.state_dict() and clone._scale is None


def test_pickling_mid_iteration_is_refused():
    p = nn.Parameter(mt.ones(2))
    opt = mt.optim.SGD([p], lr=0.1)
    scaler = mt.amp.GradScaler("cpu")
    scaler.scale(p.sum()).backward()
    scaler.unscale_(opt)
    with pytest.raises(AssertionError, match="may only be pickled at the beginning"):
        pickle.dumps(scaler)


def test_disabled_scaler_is_a_pass_through(device):
    p = nn.Parameter(mt.ones(2, device=device))
    opt = _CountingOptimizer([p], lr=1.0)
    scaler = mt.amp.GradScaler(_cuda_device(device), enabled=False)
    loss = p.sum()
    assert scaler.scale(loss) is loss
    loss.backward()
    assert scaler.unscale_(opt) is None
    assert scaler.step(opt, closure=None) == ("stepped", (), {"closure": None})
    assert scaler.update() is None
    assert p.detach().cpu().tolist() == [0.0, 0.0]
    assert (scaler.is_enabled(), scaler.get_scale(), scaler.state_dict()) == (False, 1.0, {})
    assert scaler.load_state_dict({}) is None
    assert scaler.__getstate__() == {"_device": _cuda_device(device), "_enabled": False}


@pytest.mark.torch_exact
def test_errors_match_torch():
    torch = pytest.importorskip("torch")
    for lib in (mt, torch):
        Param = nn.Parameter if lib is mt else torch.nn.Parameter
        p = Param(lib.ones(2))
        opt = lib.optim.SGD([p], lr=0.1)
        scaler = lib.amp.GradScaler("cpu")
        for call, name in ((scaler.unscale_, "unscale_"), (scaler.step, "step"),
                           (lambda _: scaler.update(), "update")):
            with pytest.raises(AssertionError, match=rf"^Attempted {name} but _scale is None\. "
                               r" This may indicate your script did not use scaler\.scale"):
                call(opt)
        scaler.scale(p.sum())
        with pytest.raises(AssertionError, match="^No inf checks were recorded prior to update"):
            scaler.update()
        with pytest.raises(AssertionError, match="^No inf checks were recorded for this "
                                                 "optimizer.$"):
            scaler.step(opt)                         # no parameter has a gradient
        scaler.update(2.0 ** 16)                     # a new scale needs no inf check
        scaler.scale(p.sum()).backward()
        with pytest.raises(RuntimeError, match="^Closure use is not currently supported if "
                                               "GradScaler is enabled.$"):
            scaler.step(opt, closure=lambda: None)
        scaler.unscale_(opt)
        with pytest.raises(RuntimeError, match=r"^unscale_\(\) has already been called on this "
                                               r"optimizer since the last update\(\)\.$"):
            scaler.unscale_(opt)
        scaler.step(opt)
        with pytest.raises(RuntimeError, match=r"^step\(\) has already been called since the "
                                               r"last update\(\)\.$"):
            scaler.step(opt)
        with pytest.raises(RuntimeError, match=r"^unscale_\(\) is being called after step\(\)"):
            scaler.unscale_(opt)
        scaler.update()
        with pytest.raises(RuntimeError, match="^The source state dict is empty, possibly "
                                               "because it was saved from a disabled instance"):
            scaler.load_state_dict({})
        with pytest.raises(AssertionError, match=r"^The growth factor must be > 1\.0\.$"):
            lib.amp.GradScaler("cpu", growth_factor=1.0)
        with pytest.raises(AssertionError, match=r"^The backoff factor must be < 1\.0\.$"):
            lib.amp.GradScaler("cpu", backoff_factor=1.0)


CUDA_MISSING = "torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling."
DEPRECATED = ("`torch.cuda.amp.GradScaler(args...)` is deprecated. Please use "
              "`torch.amp.GradScaler('cuda', args...)` instead.")


def _warnings(make):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scaler = make()
    return scaler, [(w.category, str(w.message)) for w in caught]


@pytest.mark.torch_exact
def test_cuda_requested_without_cuda_warns_and_disables_like_torch():
    torch = pytest.importorskip("torch")
    if mt.cuda.is_available() or torch.cuda.is_available():
        pytest.skip("needs a machine without CUDA")
    for lib in (mt, torch):
        scaler, caught = _warnings(lambda: lib.amp.GradScaler())
        assert caught == [(UserWarning, CUDA_MISSING)] and not scaler.is_enabled()
        scaler, caught = _warnings(lambda: lib.cuda.amp.GradScaler(init_scale=4.0))
        assert caught == [(FutureWarning, DEPRECATED), (UserWarning, CUDA_MISSING)]
        assert not scaler.is_enabled() and isinstance(scaler, lib.amp.GradScaler)
        scaler, caught = _warnings(lambda: lib.amp.GradScaler("cuda", enabled=False))
        assert caught == [] and scaler.get_scale() == 1.0
        scaler, caught = _warnings(lambda: lib.amp.GradScaler("cpu"))
        assert caught == [] and scaler.is_enabled()


def test_the_warning_points_at_the_caller():
    if mt.cuda.is_available():
        pytest.skip("needs a machine without CUDA")
    with pytest.warns(UserWarning, match="CUDA is not available") as caught:
        mt.amp.GradScaler()
    assert caught[0].filename == __file__


def test_cuda_alias_on_a_gpu():
    if not mt.cuda.is_available():
        pytest.skip("no CUDA device (CuPy and a GPU are needed)")
    with pytest.warns(FutureWarning, match="is deprecated"):
        scaler = mt.cuda.amp.GradScaler(init_scale=8.0)
    assert scaler.is_enabled() and scaler.get_scale() == 8.0
    assert scaler.scale(mt.ones(2, device="cuda")).device.type == "cuda"


def test_amp_aware_optimizer_protocol():
    seen = {}

    class AmpAware(mt.optim.SGD):
        _step_supports_amp_scaling = True

        def step(self, closure=None):
            seen["grad_scale"] = self.grad_scale.item()
            seen["found_inf"] = self.found_inf.item()

    p = nn.Parameter(mt.ones(2))
    opt = AmpAware([p], lr=0.1)
    scaler = mt.amp.GradScaler("cpu", init_scale=16.0)
    scaler.scale(p.sum() * mt.tensor(float("inf"))).backward()
    scaler.step(opt)
    assert seen == {"grad_scale": 16.0, "found_inf": 1.0}
    assert not hasattr(opt, "grad_scale") and not hasattr(opt, "found_inf")
    scaler.update()
    assert scaler.get_scale() == 8.0


def test_float16_gradients_are_refused_before_any_unscaling():
    if not hasattr(mt, "float16"):
        pytest.skip("minitorch has no float16 storage yet")
    p32 = nn.Parameter(mt.ones(2))
    p16 = nn.Parameter(mt.ones(2, dtype=mt.float16))
    opt = mt.optim.SGD([p32, p16], lr=1.0)
    p32.grad, p16.grad = mt.full((2,), 4.0), mt.ones(2, dtype=mt.float16)
    scaler = mt.amp.GradScaler("cpu", init_scale=4.0)
    scaler.scale(mt.ones(()))
    with pytest.raises(ValueError, match="^Attempting to unscale FP16 gradients.$"):
        scaler.step(opt)
    assert p32.grad.tolist() == [4.0, 4.0]
    p16.grad = None
    scaler.step(opt)                                 # the failed call left no stage behind
    assert p32.tolist() == [0.0, 0.0]
