"""mt.optim.swa_utils against torch.optim.swa_utils: averaged weights (SWA and EMA, with and
without buffers), SWALR's rate sequence, and update_bn's recomputed statistics."""
import numpy as np
import pytest

import minitorch as mt
from minitorch import nn
from minitorch.optim import swa_utils

torch = pytest.importorskip("torch")


def twin_models(rng):
    theirs = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4),
                                 torch.nn.Linear(4, 2)).double()
    ours = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2)).double()
    ours.load_state_dict({k: mt.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    return ours, theirs


def perturb(ours, theirs, rng):
    """The same random change to both models' parameters (and BN statistics)."""
    with torch.no_grad(), mt.no_grad():
        for (_, a), (_, b) in zip(ours.state_dict().items(), theirs.state_dict().items()):
            if b.dtype == torch.float64:
                step = rng.standard_normal(tuple(b.shape))
                b.add_(torch.tensor(step))
                a.add_(mt.tensor(step))


@pytest.mark.parametrize("kind", ["swa", "ema", "swa_multi", "ema_multi"])
@pytest.mark.parametrize("use_buffers", [False, True])
def test_averaged_model_matches_torch(rng, kind, use_buffers):
    ours, theirs = twin_models(rng)
    fns = {"swa": {}, "ema": {"avg_fn": "get_ema_avg_fn"},
           "swa_multi": {"multi_avg_fn": "get_swa_multi_avg_fn"},
           "ema_multi": {"multi_avg_fn": "get_ema_multi_avg_fn"}}[kind]
    make = {key: (lambda lib, name=name: getattr(lib, name)(*((0.8,) if "ema" in name else ())))
            for key, name in fns.items()}
    avg_ours = swa_utils.AveragedModel(ours, use_buffers=use_buffers,
                                       **{k: f(swa_utils) for k, f in make.items()})
    if kind == "swa_multi" and use_buffers:
        make_theirs = {}    # torch's multi-tensor SWA fails on integer buffers: same math
    else:
        make_theirs = make
    avg_theirs = torch.optim.swa_utils.AveragedModel(
        theirs, use_buffers=use_buffers,
        **{k: f(torch.optim.swa_utils) for k, f in make_theirs.items()})
    for _ in range(4):
        perturb(ours, theirs, rng)
        avg_ours.update_parameters(ours)
        avg_theirs.update_parameters(theirs)
    expected = avg_theirs.state_dict()
    got = avg_ours.state_dict()
    assert list(got) == list(expected)
    # torch's multi-tensor SWA weight is 1 / (n_averaged + 1) computed as a float32 tensor;
    # ours is exact, hence the looser tolerance there
    rtol, atol = (1e-6, 1e-8) if kind == "swa_multi" else (1e-12, 0)
    for key in expected:
        np.testing.assert_allclose(got[key].numpy(), expected[key].numpy(), rtol=rtol,
                                   atol=atol, err_msg=key)
    x = rng.standard_normal((5, 3))
    np.testing.assert_allclose(avg_ours.eval()(mt.tensor(x)).detach().numpy(),
                               avg_theirs.eval()(torch.tensor(x)).detach().numpy(), rtol=1e-10)


def test_averaged_model_argument_check():
    with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn"):
        swa_utils.AveragedModel(nn.Linear(2, 2), avg_fn=swa_utils.get_swa_avg_fn(),
                                multi_avg_fn=swa_utils.get_swa_multi_avg_fn())


@pytest.mark.parametrize("strategy", ["cos", "linear"])
@pytest.mark.parametrize("anneal_epochs", [0, 1, 4])
def test_swalr_rates_match_torch(strategy, anneal_epochs):
    def rates(lib, sched_module):
        params = [lib.nn.Parameter(lib.zeros(2)), lib.nn.Parameter(lib.zeros(1))]
        opt = lib.optim.SGD([{"params": [params[0]]}, {"params": [params[1]], "lr": 0.3}],
                            lr=1.0)
        sched = sched_module.SWALR(opt, swa_lr=[0.05, 0.1], anneal_epochs=anneal_epochs,
                                   anneal_strategy=strategy)
        seen = [sched.get_last_lr()]
        for _ in range(8):
            opt.step()
            sched.step()
            seen.append(sched.get_last_lr())
        return seen
    np.testing.assert_allclose(rates(mt, swa_utils), rates(torch, torch.optim.swa_utils),
                               rtol=1e-12)


def test_swalr_argument_errors():
    opt = mt.optim.SGD([nn.Parameter(mt.zeros(1))], lr=0.1)
    with pytest.raises(ValueError, match="anneal_strategy must be one of 'cos' or 'linear'"):
        swa_utils.SWALR(opt, 0.05, anneal_strategy="step")
    with pytest.raises(ValueError, match="anneal_epochs must be equal or greater than 0"):
        swa_utils.SWALR(opt, 0.05, anneal_epochs=-1)


def test_update_bn_matches_torch(rng):
    ours, theirs = twin_models(rng)
    batches = [rng.standard_normal((6, 3)) for _ in range(3)]
    ours.eval()
    theirs.eval()
    swa_utils.update_bn([(mt.tensor(b), 0) for b in batches], ours)
    torch.optim.swa_utils.update_bn([(torch.tensor(b), 0) for b in batches], theirs)
    assert not ours.training and ours[1].momentum == 0.1
    for key in ("1.running_mean", "1.running_var", "1.num_batches_tracked"):
        np.testing.assert_allclose(ours.state_dict()[key].numpy(),
                                   theirs.state_dict()[key].numpy(), rtol=1e-12)
