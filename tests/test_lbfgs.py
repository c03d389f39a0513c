"""optim.LBFGS: losses, closure evaluations and parameters against torch.optim.LBFGS (with and
without the strong-Wolfe line search) on least squares, logistic regression and Rosenbrock,
state and state_dict, and torch's argument errors."""
import copy

import numpy as np
import pytest

import minitorch as mt
import minitorch.optim as optim

torch = pytest.importorskip("torch")


def _least_squares(lib, make, rng):
    """Two-output linear regression: a weight, a 0-d bias, and a parameter the loss ignores
    (its gradient stays None and counts as zeros)."""
    x, y = make(rng.standard_normal((12, 3))), make(rng.standard_normal((12, 2)))
    w0 = rng.standard_normal((3, 2))
    # ours is a transposed (non-contiguous) view; torch's LBFGS needs contiguous gradients
    w = lib.nn.Parameter(make(w0.T.copy()).t() if lib is mt else make(w0))
    b = lib.nn.Parameter(make(rng.standard_normal(())))
    unused = lib.nn.Parameter(make(rng.standard_normal(2)))
    return [w, b, unused], lambda: ((x.matmul(w) + b - y) ** 2).sum()


def _logistic(lib, make, rng):
    """Logistic regression (labels +-1, mean log(1 + exp(-y z))) on overlapping classes."""
    x = make(rng.standard_normal((20, 3)))
    y = make(np.where(rng.standard_normal(20) > 0, 1.0, -1.0))
    w, b = lib.nn.Parameter(make(rng.standard_normal(3))), lib.nn.Parameter(make(np.zeros(1)))
    return [w, b], lambda: (1 + (-(x.matmul(w) + b) * y).exp()).log().mean()


def _rosenbrock(lib, make, rng):
    x = lib.nn.Parameter(make(np.array([-1.5, 2.0, -0.5, 1.2])))
    return [x], lambda: ((1 - x[:-1]) ** 2 + 100 * (x[1:] - x[:-1] ** 2) ** 2).sum()


PROBLEMS = {"least_squares": _least_squares, "logistic": _logistic, "rosenbrock": _rosenbrock}

# Rosenbrock amplifies rounding differences (a 1-ulp change of the loss reaches 1e-10 after
# ~25 evaluations in torch itself), so its runs are kept short
CONFIGS = [
    ("least_squares", {}, 2),
    ("least_squares", {"lr": 0.01, "max_iter": 3, "line_search_fn": "strong_wolfe"}, 2),
    ("logistic", {"max_iter": 6}, 3),
    ("logistic", {"history_size": 2, "line_search_fn": "strong_wolfe"}, 2),
    ("rosenbrock", {"max_iter": 5}, 3),
    ("rosenbrock", {"max_iter": 6, "history_size": 2, "line_search_fn": "strong_wolfe"}, 2),
    ("rosenbrock", {"max_iter": 5, "lr": 30, "line_search_fn": "strong_wolfe"}, 2),  # zooms
]
IDS = [f"{p}-{'-'.join(f'{k}={v}' for k, v in kw.items())}" for p, kw, _ in CONFIGS]


def _maker(lib, dtype, device):
    if lib is mt:
        return lambda a: mt.tensor(a, dtype=getattr(mt, dtype), device=device)
    return lambda a: torch.tensor(a, dtype=getattr(torch, dtype))


def _setup(lib, problem, kwargs, dtype="float64", device="cpu"):
    """(params, optimizer, closure, list the closure appends each evaluated loss to)."""
    params, loss_fn = PROBLEMS[problem](lib, _maker(lib, dtype, device),
                                        np.random.default_rng(0))
    opt = lib.optim.LBFGS(params, **kwargs)
    evaluated = []

    def closure():
        opt.zero_grad()
        loss = loss_fn()
        loss.backward()
        evaluated.append(loss.item())
        return loss

    return params, opt, closure, evaluated


def _flat(params):
    return np.concatenate([p.detach().cpu().numpy().ravel() for p in params])


def _run(lib, problem, kwargs, steps, dtype="float64", device="cpu"):
    params, opt, closure, evaluated = _setup(lib, problem, kwargs, dtype, device)
    returned = [opt.step(closure).item() for _ in range(steps)]
    state = opt.state[params[0]]
    counters = (state["func_evals"], state["n_iter"])
    return np.array(returned), np.array(evaluated), _flat(params), counters, opt


@pytest.mark.parametrize("problem,kwargs,steps", CONFIGS, ids=IDS)
def test_trajectory_matches_torch(problem, kwargs, steps, device):
    ours = _run(mt, problem, kwargs, steps, device=device)
    theirs = _run(torch, problem, kwargs, steps)
    assert ours[3] == theirs[3]                       # closure evaluations, iterations
    for mine, their in zip(ours[:3], theirs[:3]):     # step losses, every loss, parameters
        np.testing.assert_allclose(mine, their, rtol=1e-10, atol=1e-12)


def test_float32_close_to_torch_and_state_in_param_dtype():
    kwargs = {"line_search_fn": "strong_wolfe", "max_iter": 8}
    ours = _run(mt, "least_squares", kwargs, 1, dtype="float32")
    theirs = _run(torch, "least_squares", kwargs, 1, dtype="float32")
    assert ours[2].dtype == np.float32
    np.testing.assert_allclose(ours[2], theirs[2], rtol=1e-4, atol=1e-5)
    state = ours[4].state_dict()["state"][0]
    assert state["d"].dtype is mt.float32 and state["prev_flat_grad"].dtype is mt.float32
    assert state["ro"][0].dtype is mt.float32 and state["H_diag"].dtype is mt.float32


def test_state_matches_torch():
    kwargs = {"max_iter": 4, "history_size": 3}
    ours, theirs = (_run(lib, "least_squares", kwargs, 2)[4].state_dict() for lib in (mt, torch))
    assert list(ours["state"]) == list(theirs["state"]) == [0]
    mine, their = ours["state"][0], theirs["state"][0]
    assert list(mine) == list(their)
    for key, value in their.items():
        if key == "prev_loss" or not isinstance(value, (list, torch.Tensor)):
            assert mine[key] == pytest.approx(value, rel=1e-10), key
            continue
        values = value if isinstance(value, list) else [value]
        mine_values = mine[key] if isinstance(value, list) else [mine[key]]
        assert len(mine_values) == len(values), key
        for a, b in zip(mine_values, values):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, atol=1e-14)
    assert ours["param_groups"] == theirs["param_groups"]


def test_state_dict_round_trip_resumes_identically(device):
    kwargs = {"max_iter": 3, "history_size": 2, "line_search_fn": "strong_wolfe"}
    params, opt, closure, _ = _setup(mt, "logistic", kwargs, device=device)
    opt.step(closure)
    saved = copy.deepcopy(opt.state_dict())
    params2, opt2, closure2, _ = _setup(mt, "logistic", kwargs, device=device)
    with mt.no_grad():
        for p, q in zip(params2, params):
            p.copy_(q)
    opt2.load_state_dict(saved)
    for _ in range(2):
        assert opt.step(closure).item() == opt2.step(closure2).item()
    np.testing.assert_array_equal(_flat(params2), _flat(params))
    resumed, original = opt2.state[params2[0]], opt.state[params[0]]
    for key in ("n_iter", "func_evals"):
        assert resumed[key] == original[key]
    assert resumed["n_iter"] > kwargs["max_iter"]


def test_converged_start_returns_at_once(device):
    params, opt, closure, evaluated = _setup(mt, "least_squares", {"tolerance_grad": 1e9},
                                             device=device)
    before = _flat(params)
    loss = opt.step(closure)
    assert loss.item() == evaluated[0] and len(evaluated) == 1
    np.testing.assert_array_equal(_flat(params), before)
    assert opt.state[params[0]] == {"func_evals": 1, "n_iter": 0}


def test_closure_runs_with_grad_enabled_and_step_hooks_run():
    params, opt, closure, evaluated = _setup(mt, "rosenbrock", {"max_iter": 2})
    calls = []
    opt.register_step_post_hook(lambda optimizer, args, kwargs: calls.append(len(args)))
    with mt.no_grad():
        opt.step(closure)
    assert len(evaluated) == 2 and calls == [1]


def test_defaults_match_torch():
    for kwargs in ({}, {"max_iter": 7}, {"max_iter": 7, "max_eval": 3}):
        ours = optim.LBFGS([mt.nn.Parameter(mt.zeros(2))], **kwargs)
        theirs = torch.optim.LBFGS([torch.nn.Parameter(torch.zeros(2))], **kwargs)
        assert ours.defaults == theirs.defaults


def _error(lib, make):
    with pytest.raises(Exception) as info:
        make(lib)
    return info.type, str(info.value)


def _params(lib):
    return [lib.nn.Parameter(lib.zeros(2)), lib.nn.Parameter(lib.zeros(1))]


def _step_without_closure(lib):
    lib.optim.LBFGS(_params(lib)).step()


def _unknown_line_search(lib):
    params = _params(lib)
    opt = lib.optim.LBFGS(params, line_search_fn="armijo")

    def closure():
        loss = (params[0] - 1).sum()
        loss.backward()
        return loss

    opt.step(closure)


@pytest.mark.parametrize("make", [
    lambda lib: lib.optim.LBFGS(_params(lib), lr=-1.0),
    lambda lib: lib.optim.LBFGS([{"params": [p]} for p in _params(lib)]),
    lambda lib: lib.optim.LBFGS([]),
    lambda lib: lib.optim.LBFGS(lib.zeros(2)),
    _step_without_closure,
    _unknown_line_search,
], ids=["lr", "param_groups", "empty", "tensor", "no_closure", "line_search_fn"])
def test_errors_match_torch(make):
    assert _error(mt, make) == _error(torch, make)
