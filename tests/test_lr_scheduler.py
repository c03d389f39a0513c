"""Learning-rate schedulers: sequences against torch and against closed forms, momentum
cycling, ReduceLROnPlateau, state_dict, warnings and errors."""
import math
import warnings

import numpy as np
import pytest

import minitorch as mt
import minitorch.nn as nn
import minitorch.optim as optim
from minitorch.optim import lr_scheduler as S


def _optimizer(lib=mt, name="SGD", groups=1, **kwargs):
    kwargs.setdefault("lr", 0.1)
    if lib is mt:
        params = [nn.Parameter(mt.ones(1)) for _ in range(groups)]
        cls = getattr(optim, name)
    else:
        params = [lib.nn.Parameter(lib.ones(1)) for _ in range(groups)]
        cls = getattr(lib.optim, name)
    group_list = [{"params": [p], "lr": kwargs["lr"] * (i + 1)} for i, p in enumerate(params)]
    return cls(group_list, **kwargs)


def _lrs(scheduler, optimizer, steps, metrics=None, keys=("lr",)):
    """Per step: the groups' values of `keys` (the optimizer steps first, as it should)."""
    out = []
    for i in range(steps):
        optimizer.step()
        if metrics is None:
            scheduler.step()
        else:
            scheduler.step(metrics[i])
        out.append([g[k] if not isinstance(g[k], tuple) else g[k][0]
                    for g in optimizer.param_groups for k in keys])
    return np.array(out, dtype=np.float64)


SCHEDULES = [
    ("StepLR", {"step_size": 3, "gamma": 0.5}),
    ("MultiStepLR", {"milestones": [2, 5, 5, 9], "gamma": 0.3}),
    ("ExponentialLR", {"gamma": 0.9}),
    ("CosineAnnealingLR", {"T_max": 7, "eta_min": 0.01}),
    ("LinearLR", {"start_factor": 0.25, "end_factor": 0.9, "total_iters": 6}),
    ("ConstantLR", {"factor": 0.5, "total_iters": 4}),
    ("PolynomialLR", {"total_iters": 8, "power": 2.0}),
    ("LambdaLR", {"lr_lambda": lambda epoch: 0.95 ** epoch + 0.01 * epoch}),
    ("MultiplicativeLR", {"lr_lambda": lambda epoch: 0.9}),
    ("CosineAnnealingWarmRestarts", {"T_0": 3, "T_mult": 2, "eta_min": 0.001}),
    ("OneCycleLR", {"max_lr": 1.0, "total_steps": 20}),
    ("OneCycleLR", {"max_lr": [1.0, 2.0], "total_steps": 20, "anneal_strategy": "linear",
                    "pct_start": 0.4}),
    ("OneCycleLR", {"max_lr": 0.5, "epochs": 4, "steps_per_epoch": 5, "three_phase": True}),
    ("CyclicLR", {"base_lr": 0.01, "max_lr": 0.1, "step_size_up": 3, "mode": "triangular2"}),
    ("CyclicLR", {"base_lr": 0.01, "max_lr": 0.1, "step_size_up": 2, "step_size_down": 4,
                  "mode": "exp_range", "gamma": 0.9}),
]


@pytest.mark.parametrize("name,kwargs", SCHEDULES, ids=[s[0] + str(i)
                                                        for i, s in enumerate(SCHEDULES)])
def test_sequences_match_torch(name, kwargs):
    torch = pytest.importorskip("torch")
    steps = 19 if name == "OneCycleLR" else 25
    opt_name = "SGD"
    keys = ("lr", "momentum") if name in ("OneCycleLR", "CyclicLR") else ("lr",)
    ours_opt = _optimizer(mt, opt_name, groups=2, momentum=0.9)
    theirs_opt = _optimizer(torch, opt_name, groups=2, momentum=0.9)
    ours = _lrs(getattr(S, name)(ours_opt, **kwargs), ours_opt, steps, keys=keys)
    theirs = _lrs(getattr(torch.optim.lr_scheduler, name)(theirs_opt, **kwargs), theirs_opt,
                  steps, keys=keys)
    np.testing.assert_allclose(ours, theirs, rtol=1e-13, atol=1e-15)


def test_one_cycle_cycles_adam_beta1_like_torch():
    torch = pytest.importorskip("torch")
    results = []
    for lib, module in ((mt, S), (torch, torch.optim.lr_scheduler)):
        opt = _optimizer(lib, "Adam", lr=0.1)
        sched = module.OneCycleLR(opt, max_lr=0.3, total_steps=10, three_phase=True)
        results.append(_lrs(sched, opt, 9, keys=("lr", "betas")))
    np.testing.assert_allclose(results[0], results[1], rtol=1e-13)


def test_reduce_on_plateau_matches_torch():
    torch = pytest.importorskip("torch")
    metrics = [1.0, 0.9, 0.95, 0.95, 0.96, 0.97, 0.5, 0.6, 0.6, 0.6, 0.6, 0.6, 0.61, 0.7]
    for kwargs in ({"patience": 1}, {"patience": 2, "cooldown": 2, "factor": 0.5},
                   {"mode": "max", "threshold_mode": "abs", "threshold": 0.05, "patience": 0},
                   {"patience": 0, "min_lr": [0.05, 0.1]}):
        ours_opt, theirs_opt = _optimizer(mt, groups=2), _optimizer(torch, groups=2)
        ours = _lrs(S.ReduceLROnPlateau(ours_opt, **kwargs), ours_opt, len(metrics), metrics)
        theirs = _lrs(torch.optim.lr_scheduler.ReduceLROnPlateau(theirs_opt, **kwargs),
                      theirs_opt, len(metrics), metrics)
        np.testing.assert_allclose(ours, theirs, rtol=1e-15)


# ---- closed forms (no torch needed) --------------------------------------------------------------
@pytest.mark.parametrize("name,kwargs,formula", [
    ("StepLR", {"step_size": 3, "gamma": 0.5}, lambda e: 0.1 * 0.5 ** (e // 3)),
    ("MultiStepLR", {"milestones": [2, 5], "gamma": 0.1},
     lambda e: 0.1 * 0.1 ** ((e >= 2) + (e >= 5))),
    ("ExponentialLR", {"gamma": 0.9}, lambda e: 0.1 * 0.9 ** e),
    ("CosineAnnealingLR", {"T_max": 10, "eta_min": 0.001},
     lambda e: 0.001 + (0.1 - 0.001) * (1 + math.cos(math.pi * e / 10)) / 2),
    ("LinearLR", {"start_factor": 0.5, "total_iters": 4},
     lambda e: 0.1 * (0.5 + 0.5 * min(e, 4) / 4)),
    ("LambdaLR", {"lr_lambda": lambda e: 1 / (1 + e)}, lambda e: 0.1 / (1 + e)),
    ("PolynomialLR", {"total_iters": 6, "power": 1.0}, lambda e: 0.1 * (1 - min(e, 6) / 6)),
])
def test_recursive_form_equals_closed_form(name, kwargs, formula):
    opt = _optimizer()
    sched = getattr(S, name)(opt, **kwargs)
    assert sched.get_last_lr() == [pytest.approx(formula(0), rel=1e-12)]
    for epoch in range(1, 13):
        opt.step()
        sched.step()
        assert sched.last_epoch == epoch
        assert sched.get_last_lr()[0] == pytest.approx(formula(epoch), rel=1e-12, abs=1e-15)
        assert opt.param_groups[0]["lr"] == sched.get_last_lr()[0]


def test_explicit_epoch_uses_closed_form_with_warning():
    opt = _optimizer()
    sched = S.StepLR(opt, step_size=2, gamma=0.5)
    opt.step()
    with pytest.warns(UserWarning, match="The epoch parameter in `scheduler.step\\(\\)` was not "
                                         "necessary"):
        sched.step(5)
    assert sched.last_epoch == 5 and opt.param_groups[0]["lr"] == pytest.approx(0.1 * 0.25)


def test_one_cycle_endpoints_and_momentum():
    opt = _optimizer(momentum=0.9)
    sched = S.OneCycleLR(opt, max_lr=1.0, total_steps=10, pct_start=0.3, div_factor=20.0,
                         final_div_factor=100.0)
    group = opt.param_groups[0]
    assert group["lr"] == pytest.approx(0.05) and group["momentum"] == pytest.approx(0.95)
    lrs, momenta = [group["lr"]], [group["momentum"]]
    for _ in range(9):
        opt.step()
        sched.step()
        lrs.append(group["lr"])
        momenta.append(group["momentum"])
    assert lrs[2] == pytest.approx(1.0) and momenta[2] == pytest.approx(0.85)   # end of warmup
    assert lrs[-1] == pytest.approx(0.05 / 100.0) and momenta[-1] == pytest.approx(0.95)
    assert np.all(np.diff(lrs[:3]) > 0) and np.all(np.diff(lrs[2:]) < 0)
    opt.step()
    with pytest.raises(ValueError, match="Tried to step 11 times. The specified number of total "
                                         "steps is 10"):
        sched.step()
        sched.step()


def test_reduce_on_plateau_by_hand():
    opt = _optimizer()
    sched = S.ReduceLROnPlateau(opt, patience=1, factor=0.5, min_lr=0.03)
    lrs = []
    for metric in (1.0, 1.0, 1.0, 0.5, 0.6, 0.7, 0.8, 0.9):
        sched.step(mt.tensor(metric))
        lrs.append(opt.param_groups[0]["lr"])
    assert lrs == pytest.approx([0.1, 0.1, 0.05, 0.05, 0.05, 0.03, 0.03, 0.03])
    assert sched.get_last_lr() == [0.03] and sched.best == 0.5
    with pytest.raises(ValueError, match="Factor should be < 1.0."):
        S.ReduceLROnPlateau(opt, factor=1.0)
    with pytest.raises(ValueError, match="mode avg is unknown!"):
        S.ReduceLROnPlateau(opt, mode="avg")


def test_sequential_and_chained():
    opt = _optimizer()
    warm = S.LinearLR(opt, start_factor=0.1, total_iters=3)
    decay = S.ExponentialLR(opt, gamma=0.5)
    sched = S.SequentialLR(opt, [warm, decay], milestones=[3])
    lrs = [opt.param_groups[0]["lr"]]
    for _ in range(5):
        opt.step()
        sched.step()
        lrs.append(opt.param_groups[0]["lr"])
    assert lrs == pytest.approx([0.01, 0.04, 0.07, 0.1, 0.05, 0.025])
    opt = _optimizer()
    chained = S.ChainedScheduler([S.ConstantLR(opt, factor=0.5, total_iters=2),
                                  S.ExponentialLR(opt, gamma=0.9)])
    values = []
    for _ in range(3):
        opt.step()
        chained.step()
        values.append(chained.get_last_lr()[0])
    assert values == pytest.approx([0.1 * 0.5 * 0.9, 0.1 * 0.81, 0.1 * 0.729])


def test_state_dict_resume():
    opt = _optimizer()
    sched = S.CosineAnnealingLR(opt, T_max=10)
    for _ in range(4):
        opt.step()
        sched.step()
    state = sched.state_dict()
    assert "optimizer" not in state and state["last_epoch"] == 4 and state["base_lrs"] == [0.1]
    opt2 = _optimizer()
    opt2.load_state_dict(opt.state_dict())
    sched2 = S.CosineAnnealingLR(opt2, T_max=10)
    sched2.load_state_dict(state)
    for _ in range(3):
        for o, s in ((opt, sched), (opt2, sched2)):
            o.step()
            s.step()
    assert sched2.get_last_lr() == sched.get_last_lr()
    assert opt2.param_groups[0]["initial_lr"] == 0.1


def test_warnings_and_errors():
    opt = _optimizer()
    sched = S.StepLR(opt, step_size=1)
    with pytest.warns(UserWarning, match="Detected call of `lr_scheduler.step\\(\\)` before "
                                         "`optimizer.step\\(\\)`"):
        sched.step()
    opt = _optimizer()
    sched = S.StepLR(opt, step_size=1)
    opt.step()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sched.step()
    with pytest.warns(UserWarning, match="please use `get_last_lr\\(\\)`"):
        sched.get_lr()
    with pytest.raises(TypeError, match="int is not an Optimizer"):
        S.StepLR(3, step_size=1)
    with pytest.raises(KeyError, match="param 'initial_lr' is not specified in "
                                       "param_groups\\[0\\]"):
        S.StepLR(_optimizer(), step_size=1, last_epoch=3)
    with pytest.raises(ValueError, match="You must define either total_steps OR"):
        S.OneCycleLR(_optimizer(), max_lr=1.0)
    with pytest.raises(ValueError, match="optimizer must support momentum or beta1"):
        S.OneCycleLR(_optimizer(name="Adagrad"), max_lr=1.0, total_steps=5)
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas, but got 1"):
        S.LambdaLR(_optimizer(groups=2), [lambda e: 1.0])


def test_scheduler_drives_the_optimizer():
    p = nn.Parameter(mt.tensor([1.0], dtype=mt.float64))
    opt = optim.SGD([p], lr=1.0)
    sched = S.MultiStepLR(opt, milestones=[1], gamma=0.1)
    for _ in range(2):
        opt.zero_grad()
        p.sum().backward()                  # gradient 1: each step subtracts the current lr
        opt.step()
        sched.step()
    assert p.item() == pytest.approx(1.0 - 1.0 - 0.1)
