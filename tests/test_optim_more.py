"""Adamax, NAdam, RAdam, Adadelta, Rprop, ASGD and Adafactor: trajectories against torch
(float64 and float32), state_dict layout and resumption, defaults and argument validation."""
import copy

import numpy as np
import pytest

import minitorch as mt
import minitorch.nn as nn
import minitorch.optim as optim

torch = pytest.importorskip("torch")

CONFIGS = [
    ("Adamax", {}),
    ("Adamax", {"lr": 0.05, "betas": (0.8, 0.9), "weight_decay": 0.1}),
    ("Adamax", {"lr": 0.05, "maximize": True, "eps": 1e-3}),
    ("NAdam", {}),
    ("NAdam", {"lr": 0.05, "weight_decay": 0.1, "momentum_decay": 0.01}),
    ("NAdam", {"lr": 0.05, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("NAdam", {"lr": 0.02, "maximize": True}),
    ("RAdam", {}),                                   # un-rectified for the first 5 steps
    ("RAdam", {"lr": 0.05, "betas": (0.5, 0.9)}),    # rho_inf = 19: rectified from step 6
    ("RAdam", {"lr": 0.05, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("RAdam", {"lr": 0.05, "weight_decay": 0.1, "maximize": True}),
    ("Adadelta", {}),
    ("Adadelta", {"lr": 0.5, "rho": 0.5, "eps": 1e-3, "weight_decay": 0.1}),
    ("Adadelta", {"maximize": True}),
    ("Rprop", {}),
    ("Rprop", {"lr": 0.1, "etas": (0.3, 1.5), "step_sizes": (0.01, 0.2)}),
    ("Rprop", {"lr": 0.05, "maximize": True}),
    ("ASGD", {}),
    ("ASGD", {"lr": 0.05, "lambd": 0.01, "alpha": 0.5, "t0": 5, "weight_decay": 0.1}),
    ("ASGD", {"lr": 0.05, "t0": 3, "maximize": True}),
    ("Adafactor", {}),
    ("Adafactor", {"lr": 0.05, "weight_decay": 0.1, "beta2_decay": -0.5}),
    ("Adafactor", {"maximize": True, "d": 2.0, "eps": (1e-20, 1e-2)}),
]
IDS = [f"{name}-{'-'.join(f'{k}={v}' for k, v in kw.items())}" for name, kw in CONFIGS]


def _trajectory(lib, name, kwargs, dtype="float64", device="cpu", steps=12):
    """Parameters after each step of a linear regression (mean squared error); w is a
    transposed (non-contiguous) parameter, b a contiguous one."""
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((16, 3)), rng.standard_normal((16, 2))
    w0, b0 = rng.standard_normal((2, 3)), rng.standard_normal(2)
    dt = getattr(lib, dtype)
    make = (lambda a: mt.tensor(a, dtype=dt, device=device)) if lib is mt else \
        (lambda a: torch.tensor(a, dtype=dt))
    w = lib.nn.Parameter(make(w0.T.copy()).t())
    b = lib.nn.Parameter(make(b0))
    x, y = make(x), make(y)
    opt = getattr(lib.optim, name)([w, b], **kwargs)
    out = []
    for _ in range(steps):
        opt.zero_grad()
        (((x.matmul(w.t()) + b - y) ** 2).sum() * (1 / 16)).backward()
        opt.step()
        out.append(np.concatenate([w.detach().cpu().numpy().ravel(),
                                   b.detach().cpu().numpy().ravel()]))
    return np.array(out), opt


@pytest.mark.parametrize("name,kwargs", CONFIGS, ids=IDS)
def test_trajectory_matches_torch(name, kwargs, device):
    ours, _ = _trajectory(mt, name, kwargs, device=device)
    theirs, _ = _trajectory(torch, name, kwargs)
    np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["Adamax", "NAdam", "RAdam", "Adadelta", "Rprop", "ASGD",
                                  "Adafactor"])
def test_float32_trajectory_and_state_match_torch(name):
    kwargs = {"t0": 2} if name == "ASGD" else {}
    ours, our_opt = _trajectory(mt, name, kwargs, dtype="float32")
    theirs, their_opt = _trajectory(torch, name, kwargs, dtype="float32")
    assert ours.dtype == np.float32
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)
    ours_sd, theirs_sd = our_opt.state_dict(), their_opt.state_dict()
    for index, their_state in theirs_sd["state"].items():
        assert list(ours_sd["state"][index]) == list(their_state), name
        for key, value in their_state.items():
            mine = ours_sd["state"][index][key]
            assert mine.dtype.__repr__().split(".")[-1] == str(value.dtype).split(".")[-1]
            assert mine.shape == tuple(value.shape)
            np.testing.assert_allclose(mine.numpy(), value.numpy(), rtol=1e-4, atol=1e-6)
    assert set(ours_sd["param_groups"][0]) == set(theirs_sd["param_groups"][0])


def test_scalar_state_follows_the_default_dtype():
    """torch keeps step, mu_product, eta and mu in float64 under a float64 default dtype."""
    previous = mt.get_default_dtype()
    mt.set_default_dtype(mt.float64)
    try:
        p = nn.Parameter(mt.ones(2))
        opt = optim.ASGD([p])
        p.sum().backward()
        opt.step()
        assert {opt.state[p][k].dtype for k in ("step", "eta", "mu")} == {mt.float64}
    finally:
        mt.set_default_dtype(previous)


@pytest.mark.parametrize("name,kwargs", [("NAdam", {"lr": 0.05}), ("Rprop", {"lr": 0.05}),
                                         ("ASGD", {"t0": 2}), ("Adadelta", {})])
def test_state_dict_round_trip_resumes_identically(name, kwargs):
    """In float32: loading casts floating state (mu_product, eta, mu too, not step) to the
    parameter's dtype, as torch does, which would change a float64 run's rounding."""
    rng = np.random.default_rng(1)
    x, y = (mt.tensor(rng.standard_normal(s), dtype=mt.float32) for s in ((8, 3), (8, 1)))

    def train(w, opt, steps):
        for _ in range(steps):
            opt.zero_grad()
            ((x.matmul(w) - y) ** 2).sum().backward()
            opt.step()

    w = nn.Parameter(mt.tensor(rng.standard_normal((3, 1)), dtype=mt.float32))
    opt = getattr(optim, name)([w], **kwargs)
    train(w, opt, 4)
    w2 = nn.Parameter(w.detach().clone())
    opt2 = getattr(optim, name)([w2], lr=123.0)
    opt2.load_state_dict(copy.deepcopy(opt.state_dict()))
    assert opt2.param_groups[0]["lr"] == opt.param_groups[0]["lr"]
    train(w, opt, 4)
    train(w2, opt2, 4)
    np.testing.assert_array_equal(w.detach().numpy(), w2.detach().numpy())


def test_tensor_lr_and_untouched_parameters():
    a, b = nn.Parameter(mt.ones(2)), nn.Parameter(mt.ones(2))
    opt = optim.NAdam([a, b], lr=mt.tensor(0.01))
    (a * 2).sum().backward()
    opt.step()
    assert b.tolist() == [1.0, 1.0] and b not in opt.state and a.tolist() != [1.0, 1.0]


@pytest.mark.parametrize("name", ["Adamax", "NAdam", "RAdam", "Adadelta", "Rprop", "ASGD"])
def test_defaults_match_torch(name):
    ours = getattr(optim, name)([nn.Parameter(mt.ones(1))]).defaults
    theirs = getattr(torch.optim, name)([torch.nn.Parameter(torch.ones(1))]).defaults
    assert ours == theirs


ERRORS = [
    ("Adamax", {"lr": -1.0}), ("Adamax", {"eps": -1.0}), ("Adamax", {"betas": (1.0, 0.9)}),
    ("Adamax", {"betas": (0.9, -0.1)}), ("Adamax", {"weight_decay": -1}),
    ("NAdam", {"momentum_decay": -0.5}), ("NAdam", {"betas": (0.9, 1.0)}),
    ("RAdam", {"eps": -1e-3}), ("RAdam", {"weight_decay": -0.1}),
    ("Adadelta", {"rho": 1.5}), ("Adadelta", {"rho": -0.1}), ("Adadelta", {"eps": -1.0}),
    ("Rprop", {"etas": (1.0, 1.2)}), ("Rprop", {"etas": (0.5, 1.0)}), ("Rprop", {"lr": -1}),
    ("ASGD", {"weight_decay": -1.0}), ("ASGD", {"lr": -0.1}),
]


@pytest.mark.parametrize("name,kwargs", ERRORS, ids=[f"{n}-{k}" for n, k in ERRORS])
def test_argument_validation_matches_torch(name, kwargs):
    with pytest.raises(ValueError) as theirs:
        getattr(torch.optim, name)([torch.nn.Parameter(torch.ones(1))], **kwargs)
    with pytest.raises(ValueError) as ours:
        getattr(optim, name)([nn.Parameter(mt.ones(1))], **kwargs)
    assert str(ours.value) == str(theirs.value)


def test_tensor_lr_must_have_one_element():
    with pytest.raises(ValueError, match="^Tensor lr must be 1-element$"):
        optim.RAdam([nn.Parameter(mt.ones(1))], lr=mt.tensor([0.1, 0.2]))


def test_adafactor_factors_the_last_two_dims_and_checks_its_arguments():
    """A (2, 3, 4) parameter keeps (2, 3, 1) row and (2, 1, 4) column factors, a vector one
    variance, as torch's; the steps agree. torch's messages for bad arguments, complex
    parameters refused."""
    rng = np.random.default_rng(2)
    w0, v0, g0 = rng.standard_normal((2, 3, 4)), rng.standard_normal(5), rng.standard_normal(5)
    results = []
    for lib in (mt, torch):
        w, v = lib.nn.Parameter(lib.tensor(w0)), lib.nn.Parameter(lib.tensor(v0))
        opt = lib.optim.Adafactor([w, v], lr=0.03)
        for _ in range(5):
            opt.zero_grad()
            ((w * w).sum(0).sin().sum() + (v * lib.tensor(g0)).exp().sum()).backward()
            opt.step()
        results.append((w.detach().numpy(), v.detach().numpy(),
                        {k: tuple(t.shape) for k, t in opt.state[w].items()},
                        list(opt.state[v])))
    (w1, v1, shapes1, keys1), (w2, v2, shapes2, keys2) = results
    np.testing.assert_allclose(w1, w2, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(v1, v2, rtol=1e-12, atol=1e-14)
    assert shapes1 == shapes2 == {"step": (), "row_var": (2, 3, 1), "col_var": (2, 1, 4)}
    assert keys1 == keys2 == ["step", "variance"]
    p = [nn.Parameter(mt.ones(2))]
    for kwargs, message in (({"lr": -1.0}, "Learning rate should be >= 0 but is: -1.0"),
                            ({"beta2_decay": 0.5}, "beta2_decay should be <= 0 but is: 0.5"),
                            ({"eps": (-1.0, 1e-3)}, "epsilon1 should be >= 0 but is: -1.0"),
                            ({"eps": (None, -1.0)}, "epsilon2 should be >= 0 but is: -1.0"),
                            ({"d": 0.5}, "Clipping threshold d should be >= 1 but is: 0.5"),
                            ({"weight_decay": -0.1},
                             "weight_decay should be >= 0 but is: -0.1")):
        with pytest.raises(ValueError, match=message):
            optim.Adafactor(p, **kwargs)
    z = nn.Parameter(mt.ones(2, dtype=mt.complex64))
    z.grad = mt.ones(2, dtype=mt.complex64)
    with pytest.raises(RuntimeError, match="Adafactor does not support complex parameters"):
        optim.Adafactor([z]).step()
