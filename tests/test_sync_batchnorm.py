"""SyncBatchNorm in one process (no process group: it is BatchNorm, as torch's) and
convert_sync_batchnorm; the multi-rank behaviour is tests/distributed_scripts/sync_batchnorm.py
(through tests/test_distributed.py)."""
import numpy as np
import pytest

import minitorch as mt
import minitorch.nn as nn


@pytest.mark.parametrize("shape", [(4, 3), (4, 3, 5), (2, 3, 4, 5), (2, 3, 2, 2, 2)])
def test_without_a_process_group_it_is_batch_norm(device, rng, shape):
    data = rng.standard_normal(shape)
    synced, plain = nn.SyncBatchNorm(3).double().to(device), nn.BatchNorm1d(3).double().to(device)
    x1 = mt.tensor(data, device=device, requires_grad=True)
    x2 = mt.tensor(data, device=device, requires_grad=True)
    out1, out2 = synced(x1), nn.functional.batch_norm(x2, plain.running_mean,
                                                       plain.running_var, plain.weight,
                                                       plain.bias, True, 0.1, 1e-5)
    np.testing.assert_allclose(out1.detach().cpu().numpy(), out2.detach().cpu().numpy(),
                               rtol=1e-12, atol=1e-12)
    out1.sum().backward()
    out2.sum().backward()
    np.testing.assert_allclose(x1.grad.cpu().numpy(), x2.grad.cpu().numpy(), atol=1e-12)
    np.testing.assert_allclose(synced.running_var.cpu().numpy(), plain.running_var.cpu().numpy())
    assert synced.num_batches_tracked.item() == 1


def test_cumulative_momentum_and_eval(device, rng):
    synced = nn.SyncBatchNorm(2, momentum=None).to(device)
    batches = [rng.standard_normal((5, 2)).astype(np.float32) for _ in range(3)]
    for batch in batches:
        synced(mt.tensor(batch, device=device))
    np.testing.assert_allclose(synced.running_mean.cpu().numpy(),
                               np.mean([b.mean(0) for b in batches], axis=0), rtol=1e-5,
                               atol=1e-6)
    synced.eval()
    x = rng.standard_normal((4, 2)).astype(np.float32)
    expected = (x - synced.running_mean.cpu().numpy()) / np.sqrt(
        synced.running_var.cpu().numpy() + 1e-5)
    np.testing.assert_allclose(synced(mt.tensor(x, device=device)).detach().cpu().numpy(),
                               expected, rtol=1e-5, atol=1e-5)


def test_bad_input():
    with pytest.raises(ValueError, match=r"expected at least 2D input \(got 1D input\)"):
        nn.SyncBatchNorm(3)(mt.zeros(3))
    with pytest.raises(ValueError, match="SyncBatchNorm number of input channels should be "
                                         "non-zero"):
        nn.SyncBatchNorm(0)(mt.zeros(2, 0))


def test_convert_sync_batchnorm_shares_the_parameters():
    model = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2, momentum=0.3),
                          nn.Sequential(nn.BatchNorm1d(4, affine=False)), nn.InstanceNorm2d(2))
    model[1].eval()
    norm, inner = model[1], model[2][0]
    converted = nn.SyncBatchNorm.convert_sync_batchnorm(model, process_group="group")
    assert converted is model                       # containers are converted in place
    sync = converted[1]
    assert isinstance(sync, nn.SyncBatchNorm) and sync.process_group == "group"
    assert sync.weight is norm.weight and sync.bias is norm.bias
    assert sync.running_mean is norm.running_mean and not sync.training
    assert sync.momentum == 0.3
    assert isinstance(converted[2][0], nn.SyncBatchNorm) and converted[2][0].weight is None
    assert converted[2][0].running_var is inner.running_var
    assert type(converted[3]) is nn.InstanceNorm2d
    assert isinstance(nn.SyncBatchNorm.convert_sync_batchnorm(nn.BatchNorm1d(3)),
                      nn.SyncBatchNorm)


def test_matches_torch_without_a_process_group(rng):
    torch = pytest.importorskip("torch")
    data = rng.standard_normal((6, 3, 4)).astype(np.float32)
    theirs, ours = torch.nn.SyncBatchNorm(3), nn.SyncBatchNorm(3)
    assert repr(ours) == repr(theirs)
    np.testing.assert_allclose(ours(mt.tensor(data)).detach().numpy(),
                               theirs(torch.tensor(data)).detach().numpy(), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(ours.running_var.numpy(), theirs.running_var.numpy(), rtol=1e-6)
