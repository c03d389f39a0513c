"""Differential audit of the training infrastructure against torch: optimizers (trajectories,
state_dict layout, load round trips), lr schedulers, gradient clipping, nn.init, utils.data,
save/load and Module.load_state_dict."""
import collections
import io
import math

import numpy as np
import pytest

import minitorch as mt
from torch_parity import error_of

torch = pytest.importorskip("torch")


def _np(t):
    return t.detach().cpu().numpy()


def _same_error(call):
    """call(torch) and call(mt) raise the same exception type with the same message."""
    theirs = error_of(lambda: call(torch))
    assert theirs is not None
    assert error_of(lambda: call(mt)) == theirs


# ---- optimizers ----------------------------------------------------------------------------------
_RNG = np.random.default_rng(0)
_W0, _B0 = _RNG.standard_normal((3, 4)), _RNG.standard_normal(4)
_X, _Y = _RNG.standard_normal((5, 3)), _RNG.standard_normal((5, 4))

OPTIMIZER_CASES = [
    ("SGD", dict(lr=0.01, momentum=0.9, dampening=0.3, weight_decay=0.1)),
    ("SGD", dict(lr=0.01, momentum=0.9, nesterov=True, weight_decay=0.1)),
    ("SGD", dict(lr=0.01, momentum=0.5, maximize=True)),
    ("Adam", dict(lr=0.01, amsgrad=True, weight_decay=0.1)),
    ("Adam", dict(lr=0.01, maximize=True, betas=(0.8, 0.9))),
    ("AdamW", dict(lr=0.01, amsgrad=True, weight_decay=0.3)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.1, initial_accumulator_value=0.5)),
    ("Adadelta", dict(lr=0.5, rho=0.8, weight_decay=0.1, maximize=True)),
    ("Adamax", dict(lr=0.01, weight_decay=0.1)),
    ("NAdam", dict(lr=0.01, momentum_decay=0.01, weight_decay=0.1)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("RAdam", dict(lr=0.01, weight_decay=0.1)),
    ("RAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("RMSprop", dict(lr=0.01, centered=True, momentum=0.9, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.01, alpha=0.9, maximize=True)),
    ("Rprop", dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 0.1))),
    ("ASGD", dict(lr=0.05, t0=5, lambd=0.01, alpha=0.5, weight_decay=0.1)),
]


def _train(lib, name, options, device=None, steps=20, group=None, closure=False):
    """`steps` updates of a small float64 least-squares problem (plus a parameter that never
    gets a gradient); returns the parameter trajectory and the optimizer."""
    kw = {} if lib is torch else {"device": device}
    w = lib.tensor(_W0, requires_grad=True, **kw)
    b = lib.tensor(_B0, requires_grad=True, **kw)
    unused = lib.tensor(np.ones(2), requires_grad=True, **kw)
    x, y = lib.tensor(_X, **kw), lib.tensor(_Y, **kw)
    params = [{"params": [w], **group}, {"params": [b, unused]}] if group else [w, b, unused]
    opt = getattr(lib.optim, name)(params, **options)

    def loss_fn():
        opt.zero_grad()
        loss = ((x @ w + b - y) ** 2).sum() + (w ** 4).sum() * 0.01
        loss.backward()
        return loss
    trajectory = []
    for _ in range(steps):
        if closure:
            opt.step(loss_fn)
        else:
            loss_fn()
            opt.step()
        trajectory.append(np.concatenate([_np(t).ravel() for t in (w, b, unused)]))
    return np.array(trajectory), opt


def _layout(state_dict):
    """state_dict's structure: group options, param indices, state keys, dtypes and shapes."""
    def describe(v):
        if hasattr(v, "dtype") and hasattr(v, "shape"):
            return str(v.dtype).split(".")[-1], tuple(v.shape)
        return type(v).__name__
    groups = [{k: (v if k == "params" else repr(v)) for k, v in g.items()}
              for g in state_dict["param_groups"]]
    state = {i: {k: describe(v) for k, v in s.items()} for i, s in state_dict["state"].items()}
    return groups, state


@pytest.mark.parametrize("name,options", OPTIMIZER_CASES,
                         ids=[f"{n}-{i}" for i, (n, _) in enumerate(OPTIMIZER_CASES)])
def test_optimizer_trajectory_and_state_dict_match_torch(name, options, device):
    theirs, their_opt = _train(torch, name, options, group={"lr": 0.003})
    ours, our_opt = _train(mt, name, options, device, group={"lr": 0.003})
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-10)
    assert _layout(our_opt.state_dict()) == _layout(their_opt.state_dict())


@pytest.mark.parametrize("options", [dict(lr=1), dict(lr=0.5, line_search_fn="strong_wolfe",
                                                      history_size=3, max_iter=5)])
def test_lbfgs_trajectory_matches_torch(options):
    theirs, _ = _train(torch, "LBFGS", options, steps=5, closure=True)
    ours, _ = _train(mt, "LBFGS", options, steps=5, closure=True)
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-10)


@pytest.mark.parametrize("name,options", [("ASGD", dict(lr=0.1)), ("NAdam", dict(lr=0.1)),
                                          ("Adam", dict(lr=0.1, amsgrad=True)),
                                          ("SGD", dict(lr=0.1, momentum=0.9))])
def test_optimizer_load_state_dict_round_trip_matches_torch(name, options):
    """A float64 model resumed from a state_dict: ASGD's eta/mu are float64 after the load, but
    torch still rounds each new value through a default-dtype tensor."""
    def run(lib):
        p = lib.ones(3, dtype=lib.float64, requires_grad=True)
        opt = getattr(lib.optim, name)([p], **options)
        for _ in range(3):
            opt.zero_grad()
            (p * p).sum().backward()
            opt.step()
        q = lib.ones(3, dtype=lib.float64, requires_grad=True)
        resumed = getattr(lib.optim, name)([q], **options)
        resumed.load_state_dict(opt.state_dict())
        for _ in range(3):
            resumed.zero_grad()
            (q * q * q).sum().backward()
            resumed.step()
        state = resumed.state_dict()["state"][0]
        return _np(q), {k: (str(v.dtype).split(".")[-1], _np(v)) for k, v in state.items()}
    (theirs, their_state), (ours, our_state) = run(torch), run(mt)
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-12)
    assert our_state.keys() == their_state.keys()
    for key, (dtype, value) in their_state.items():
        assert our_state[key][0] == dtype, key
        np.testing.assert_allclose(our_state[key][1], value, rtol=1e-15, atol=0, err_msg=key)


def test_optimizer_zero_grad_and_add_param_group_match_torch():
    def run(lib):
        p = lib.ones(3, requires_grad=True)
        opt = lib.optim.SGD([p], lr=0.1, momentum=0.9)
        (p * p).sum().backward()
        opt.step()
        opt.zero_grad(set_to_none=False)
        kept = p.grad.tolist()
        opt.zero_grad()
        opt.add_param_group({"params": lib.zeros(2, requires_grad=True), "lr": 0.5})
        return kept, p.grad, opt.state_dict()["param_groups"]
    theirs, ours = run(torch), run(mt)
    assert ours[0] == theirs[0] and ours[1] is None and theirs[1] is None
    assert ours[2] == theirs[2]
    _same_error(lambda lib: (lambda p: lib.optim.SGD([p], lr=0.1).add_param_group(
        {"params": [p]}))(lib.zeros(2, requires_grad=True)))


@pytest.mark.parametrize("name,options", [("SGD", dict(lr=-1.0)), ("Adam", dict(eps=-1.0)),
                                          ("Adam", dict(betas=(1.0, 0.9))),
                                          ("Adadelta", dict(rho=1.5)),
                                          ("Rprop", dict(etas=(1.5, 1.2))),
                                          ("RMSprop", dict(alpha=-1.0)),
                                          ("SGD", dict(lr=0.1, nesterov=True))])
def test_optimizer_argument_errors_match_torch(name, options):
    _same_error(lambda lib: getattr(lib.optim, name)([lib.zeros(2, requires_grad=True)],
                                                     **options))


# ---- lr schedulers -------------------------------------------------------------------------------
def _l(lib):
    return lib.optim.lr_scheduler


SCHEDULERS = {
    "StepLR": lambda lib, o: _l(lib).StepLR(o, 7, gamma=0.3),
    "MultiStepLR": lambda lib, o: _l(lib).MultiStepLR(o, [3, 8, 8, 20], gamma=0.5),
    "CosineAnnealingWarmRestarts": lambda lib, o: _l(lib).CosineAnnealingWarmRestarts(
        o, T_0=3, T_mult=2, eta_min=0.01),
    "OneCycleLR": lambda lib, o: _l(lib).OneCycleLR(
        o, max_lr=1.0, epochs=3, steps_per_epoch=10, anneal_strategy="linear",
        three_phase=True, pct_start=0.2),
    "CyclicLR": lambda lib, o: _l(lib).CyclicLR(o, [0.01, 0.02], 0.1, step_size_up=3,
                                                step_size_down=5, mode="triangular2"),
    "CyclicLR-exp": lambda lib, o: _l(lib).CyclicLR(o, 0.01, 0.1, step_size_up=4,
                                                    mode="exp_range", gamma=0.9),
    "PolynomialLR": lambda lib, o: _l(lib).PolynomialLR(o, total_iters=12, power=2.0),
    "SequentialLR": lambda lib, o: _l(lib).SequentialLR(
        o, [_l(lib).LinearLR(o, 0.1, total_iters=5), _l(lib).CosineAnnealingLR(o, 10)],
        milestones=[5]),
    "ChainedScheduler": lambda lib, o: _l(lib).ChainedScheduler(
        [_l(lib).ConstantLR(o, 0.5, total_iters=4), _l(lib).ExponentialLR(o, 0.9)]),
}


def _lr_sequence(lib, make, optimizer="SGD", metrics=None):
    p, q = lib.zeros(2, requires_grad=True), lib.zeros(2, requires_grad=True)
    extra = {"momentum": 0.9} if optimizer == "SGD" else {}
    opt = getattr(lib.optim, optimizer)([{"params": [p]}, {"params": [q], "lr": 0.5}], lr=0.1,
                                        **extra)
    scheduler = make(lib, opt)
    rows = []
    for epoch in range(30):
        opt.step()
        scheduler.step(*([] if metrics is None else [metrics[epoch]]))
        g = opt.param_groups
        row = [g[0]["lr"], g[1]["lr"]] + list(scheduler.get_last_lr())
        row += [g[0].get("momentum", 0.0)] + list(g[0].get("betas", ()))
        rows.append(row)
    return np.array(rows), scheduler


@pytest.mark.parametrize("name", SCHEDULERS)
@pytest.mark.parametrize("optimizer", ["SGD", "Adam"])
def test_scheduler_sequence_matches_torch(name, optimizer):
    theirs, their_scheduler = _lr_sequence(torch, SCHEDULERS[name], optimizer)
    ours, our_scheduler = _lr_sequence(mt, SCHEDULERS[name], optimizer)
    np.testing.assert_allclose(ours, theirs, rtol=1e-15, atol=0)
    assert sorted(our_scheduler.state_dict()) == sorted(their_scheduler.state_dict())


@pytest.mark.parametrize("options", [dict(mode="max", factor=0.5, patience=2),
                                     dict(threshold_mode="abs", threshold=0.1, cooldown=2,
                                          patience=1, min_lr=[0.02, 0.05]),
                                     dict(patience=0, eps=0.05, factor=0.5)])
def test_reduce_lr_on_plateau_matches_torch(options):
    metrics = list(np.abs(np.random.default_rng(0).standard_normal(30)).round(1))
    make = lambda lib, o: _l(lib).ReduceLROnPlateau(o, **options)  # noqa: E731
    theirs, their_scheduler = _lr_sequence(torch, make, metrics=metrics)
    ours, our_scheduler = _lr_sequence(mt, make, metrics=metrics)
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=0)
    state = {k: v for k, v in our_scheduler.state_dict().items() if k != "optimizer"}
    expected = {k: v for k, v in their_scheduler.state_dict().items() if k != "optimizer"}
    assert repr(state) == repr(expected)


# ---- gradient clipping ---------------------------------------------------------------------------
@pytest.mark.parametrize("norm_type", [2.0, 1, math.inf, -math.inf, 0, 3.5])
def test_clip_grad_norm_matches_torch(norm_type, device):
    grads = [np.random.default_rng(i).standard_normal(s) * 3 for i, s in enumerate([(3, 4), 5])]

    def run(lib, **kw):
        params = [lib.zeros(g.shape, requires_grad=True, **kw) for g in grads]
        params.append(lib.zeros(2, requires_grad=True, **kw))        # no grad: skipped
        for p, g in zip(params, grads):
            p.grad = lib.tensor(g, dtype=lib.float32, **kw)
        total = lib.nn.utils.clip_grad_norm_(params, 1.0, norm_type=norm_type)
        return [_np(total)] + [_np(p.grad) for p in params[:2]]
    for ours, theirs in zip(run(mt, device=device), run(torch), strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6)


def test_clip_grad_norm_errors_match_torch():
    """Integer tensors and empty gradients with an order that has no identity are refused,
    with linalg.vector_norm's errors."""
    _same_error(lambda lib: lib.nn.utils.get_total_norm([lib.ones(3, dtype=lib.int64)]))

    def empty_grad(lib):
        p = lib.zeros(0, requires_grad=True)
        p.grad = lib.zeros(0)
        lib.nn.utils.clip_grad_norm_([p], 1.0, -math.inf)
    _same_error(empty_grad)

    def nonfinite(lib):
        p = lib.zeros(2, requires_grad=True)
        p.grad = lib.tensor([math.inf, 1.0])
        lib.nn.utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)
    _same_error(nonfinite)


# ---- nn.init -------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["uniform_", "normal_", "trunc_normal_", "xavier_uniform_",
                                  "xavier_normal_", "kaiming_uniform_", "kaiming_normal_",
                                  "orthogonal_"])
@pytest.mark.torch_exact
def test_init_rejects_integer_tensors_like_torch(name):
    _same_error(lambda lib: getattr(lib.nn.init, name)(lib.zeros(3, 3, dtype=lib.int64)))
    t = mt.zeros(3, 3, dtype=mt.int64)
    with pytest.raises(NotImplementedError):
        getattr(mt.nn.init, name)(t)
    assert t.tolist() == [[0] * 3] * 3


@pytest.mark.parametrize("method", ["uniform_", "normal_"])
def test_tensor_random_fill_rejects_integer_tensors_like_torch(method):
    _same_error(lambda lib: getattr(lib.zeros(3, dtype=lib.int64), method)())
    _same_error(lambda lib: getattr(lib.zeros(3, dtype=lib.bool), method)())


def test_init_gains_and_bounds_match_torch():
    for args in [("leaky_relu", 0.2), ("leaky_relu",), ("selu",), ("tanh",), ("relu",),
                 ("conv_transpose2d",)]:
        assert mt.nn.init.calculate_gain(*args) == torch.nn.init.calculate_gain(*args)
    _same_error(lambda lib: lib.nn.init.calculate_gain("leaky_relu", "x"))
    _same_error(lambda lib: lib.nn.init.xavier_uniform_(lib.empty(3)))
    _same_error(lambda lib: lib.nn.init.kaiming_uniform_(lib.empty(3, 4), mode="fan"))
    w = mt.nn.init.kaiming_uniform_(mt.empty(64, 32, 3, dtype=mt.float64), a=0.3,
                                    mode="fan_out", nonlinearity="leaky_relu")
    bound = math.sqrt(2.0 / (1 + 0.3 ** 2)) * math.sqrt(3.0 / (64 * 3))
    assert np.abs(_np(w)).max() <= bound and np.abs(_np(w)).max() > 0.95 * bound


# ---- utils.data ----------------------------------------------------------------------------------
def test_multinomial_and_weighted_sampler_errors_match_torch():
    for weights, n, replacement in [([0.5, 0.5], 5, False), ([-0.5, 0.5], 5, True),
                                    ([0.0, 0.0], 2, True), ([1.0, math.nan], 2, True),
                                    ([1.0, math.inf], 2, True)]:
        _same_error(lambda lib: list(lib.utils.data.WeightedRandomSampler(weights, n,
                                                                          replacement)))
    _same_error(lambda lib: lib.multinomial(lib.ones(2, 2, 2), 1))
    _same_error(lambda lib: lib.multinomial(lib.ones(2, dtype=lib.int64), 1))
    _same_error(lambda lib: lib.multinomial(lib.ones(2), 0, True))


def test_stack_dataset_matches_torch():
    for lib in (torch, mt):
        data = lib.utils.data
        stacked = data.StackDataset([1, 2], ["a", "b"])
        assert (len(stacked), stacked[1]) == (2, (2, "b"))
        assert data.StackDataset(x=[1, 2], y=[3, 4])[0] == {"x": 1, "y": 3}
        loader = data.DataLoader(data.StackDataset(x=[1.0, 2.0], y=[3, 4]), batch_size=2)
        batch = next(iter(loader))
        assert batch["x"].dtype == lib.float64 and batch["y"].tolist() == [3, 4]
    _same_error(lambda lib: lib.utils.data.StackDataset([1], x=[1]))
    _same_error(lambda lib: lib.utils.data.StackDataset())
    _same_error(lambda lib: lib.utils.data.StackDataset([1], [1, 2]))


Point = collections.namedtuple("Point", "x y")


def _describe(value):
    if isinstance(value, (torch.Tensor, mt.Tensor)):
        return "T", str(value.dtype).split(".")[-1], value.tolist()
    if isinstance(value, dict):
        return type(value).__name__, {k: _describe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value).__name__, [_describe(v) for v in value]
    return value


@pytest.mark.parametrize("batch", [
    [1, 2], [True, False], [1.0, 2.5], [np.float32(1), np.float32(2)], [np.ones(2), np.zeros(2)],
    ["a", "b"], [{"a": 1, "b": (1.0, 2)}, {"a": 2, "b": (3.0, 4)}], [(1, 2.0), (3, 4.0)],
    [Point(1, 2.0), Point(3, 4.0)], [[1, 2.0], [3, 4.0]]], ids=str)
def test_default_collate_matches_torch(batch):
    ours = mt.utils.data.default_collate(batch)
    theirs = torch.utils.data.default_collate(batch)
    assert _describe(ours) == _describe(theirs)
    assert type(ours).__name__ == type(theirs).__name__


def test_dataloader_and_split_options_match_torch():
    def tensors(lib):
        return lib.utils.data.TensorDataset(lib.tensor(np.arange(20.).reshape(10, 2)),
                                            lib.arange(10))
    for options in [dict(batch_size=3), dict(batch_size=3, drop_last=True),
                    dict(batch_size=None), dict(sampler=[3, 1, 2], batch_size=2),
                    dict(batch_sampler=[[1, 2], [5]])]:
        ours = list(mt.utils.data.DataLoader(tensors(mt), **options))
        theirs = list(torch.utils.data.DataLoader(tensors(torch), **options))
        assert _describe(ours) == _describe(theirs)
        assert len(mt.utils.data.DataLoader(tensors(mt), **options)) == len(theirs)
    for options in [dict(sampler=[1], shuffle=True), dict(batch_sampler=[[1]], batch_size=2),
                    dict(batch_sampler=[[1]], drop_last=True), dict(batch_size=None,
                                                                    drop_last=True)]:
        _same_error(lambda lib: lib.utils.data.DataLoader(tensors(lib), **options))
    loader = mt.utils.data.DataLoader(list(range(5)), batch_size=2, in_order=False,
                                      pin_memory_device="")          # accepted as in torch
    assert [b.tolist() for b in loader] == [[0, 1], [2, 3], [4]]
    for lengths in ([0.5, 0.5], [0.1, 0.1, 0.1, 0.7], [3, 8]):
        split = lambda lib: [len(s) for s in lib.utils.data.random_split(  # noqa: E731
            range(11), lengths)]
        if sum(lengths) in (1, 11):
            assert split(mt) == split(torch)
        else:
            _same_error(split)


# ---- serialization and Module.load_state_dict --------------------------------------------------
def test_save_load_keeps_parameters_as_parameters():
    p = mt.nn.Parameter(mt.ones(2))
    frozen = mt.nn.Parameter(mt.ones(2), requires_grad=False)
    f = io.BytesIO()
    mt.save({"p": p, "frozen": frozen, "t": mt.ones(2)}, f)
    f.seek(0)
    loaded = mt.load(f)
    assert type(loaded["p"]) is mt.nn.Parameter and loaded["p"].requires_grad
    assert type(loaded["frozen"]) is mt.nn.Parameter and not loaded["frozen"].requires_grad
    assert type(loaded["t"]) is mt.Tensor


def test_batchnorm_state_dict_version_and_missing_counter_match_torch():
    """A plain dict (no _metadata: version None) without num_batches_tracked loads into a
    BatchNorm as in torch, keeping the current counter; a versioned one reports it missing."""
    def run(lib):
        model = lib.nn.Sequential(lib.nn.BatchNorm1d(2), lib.nn.Linear(2, 2))
        model[0].num_batches_tracked.fill_(5)
        metadata = dict(model.state_dict()._metadata)
        plain = {k: v for k, v in model.state_dict().items() if "num_batches" not in k}
        result = model.load_state_dict(plain)
        versioned = model.state_dict()
        del versioned["0.num_batches_tracked"]
        return metadata, str(result), model[0].num_batches_tracked.item(), error_of(
            lambda: model.load_state_dict(versioned))
    assert run(mt) == run(torch)


def test_module_load_state_dict_reports_match_torch():
    def model(lib):
        m = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.BatchNorm1d(4))
        m.register_buffer("scratch", lib.zeros(2), persistent=False)
        return m

    def load(lib, edit, strict):
        m = model(lib)
        state = dict(model(lib).state_dict())
        edit(lib, state)
        result = m.load_state_dict(state, strict=strict)
        return type(result).__name__, result.missing_keys, result.unexpected_keys
    edits = [lambda lib, s: s.pop("0.weight"), lambda lib, s: s.update({"extra": lib.ones(1)}),
             lambda lib, s: s.update({"scratch": lib.ones(2)})]
    for edit in edits:
        assert load(mt, edit, False) == load(torch, edit, False)
        _same_error(lambda lib: load(lib, edit, True))
    _same_error(lambda lib: load(lib, lambda lib, s: s.update({"0.weight": lib.ones(2, 2)}),
                                 False))
    assert list(model(mt).state_dict()) == list(model(torch).state_dict())
