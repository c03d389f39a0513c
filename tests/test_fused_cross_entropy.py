"""F.cross_entropy on (N, C) scores is one fused node (functions/loss.py CrossEntropyRows,
kernels cross_entropy_rows / _backward on both backends): its loss and gradient must be the
composed log_softmax + nll_loss path's bit for bit, over reductions, ignore_index, class
weights, non-contiguous scores and empty batches; gradcheck and gradgradcheck in float64;
torch's errors for bad targets."""
import numpy as np
import pytest

import minitorch as mt
import minitorch.nn.functional as F

CASES = [{}, {"ignore_index": 2}, {"ignore_index": -1}, {"weight": "w"},
         {"weight": "w", "ignore_index": 0}]


def _composed(scores, target, **kwargs):
    return F.nll_loss(F.log_softmax(scores, 1), target, **kwargs)


@pytest.mark.parametrize("dtype", [mt.float32, mt.float64], ids=str)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_fused_equals_the_composed_path(device, dtype, reduction, case):
    rng = np.random.default_rng(case)
    x = rng.standard_normal((9, 6)) * 3
    target = mt.tensor([0, 5, 2, 2, 1, 3, 0, 4, 2], device=device)
    kwargs = dict(CASES[case], reduction=reduction)
    if kwargs.get("weight") == "w":
        kwargs["weight"] = mt.tensor(rng.random(6), dtype=dtype, device=device)
    results = []
    for loss_fn in (F.cross_entropy, _composed):
        scores = mt.tensor(x, dtype=dtype, device=device).requires_grad_()
        loss = loss_fn(scores, target, **kwargs)
        loss.backward(mt.ones_like(loss))
        results.append((loss.detach().cpu().numpy(), scores.grad.cpu().numpy()))
    (fused_loss, fused_grad), (loss, grad) = results
    np.testing.assert_array_equal(fused_loss, loss)
    np.testing.assert_array_equal(fused_grad, grad)


@pytest.mark.parametrize("dtype", [mt.float32, mt.float64], ids=str)
def test_long_rows_equal_the_composed_path(device, dtype):
    # 1043 classes: the fused forward sums its exponentials in blocks of scratch, softmax in
    # one pass; both must sum in the same order
    x = mt.tensor(np.random.default_rng(5).standard_normal((3, 1043)) * 4, dtype=dtype,
                  device=device)
    target = mt.tensor([0, 1042, 517], device=device)
    np.testing.assert_array_equal(F.cross_entropy(x, target, reduction="none").cpu().numpy(),
                                  _composed(x, target, reduction="none").cpu().numpy())


def test_non_contiguous_scores_and_empty_batch(device):
    x = mt.randn(6, 8, device=device).t()            # (8, 6), transposed view
    target = mt.tensor([0, 1, 2, 3, 4, 5, 0, 1], device=device)
    np.testing.assert_array_equal(F.cross_entropy(x, target).cpu().numpy(),
                                  _composed(x, target).cpu().numpy())
    empty = mt.zeros(0, 4, device=device, requires_grad=True)
    loss = F.cross_entropy(empty, mt.zeros(0, dtype=mt.int64, device=device), reduction="sum")
    loss.backward()
    assert loss.item() == 0 and empty.grad.shape == (0, 4)


def test_gradcheck_and_gradgradcheck(device):
    x = mt.randn(5, 4, dtype=mt.float64, device=device, requires_grad=True)
    target = mt.tensor([3, 0, 1, 1, 2], device=device)
    w = mt.tensor([0.5, 1.0, 2.0, 1.5], dtype=mt.float64, device=device)
    for kwargs in ({}, {"ignore_index": 1}, {"weight": w, "reduction": "sum"}):
        assert mt.autograd.gradcheck(lambda s: F.cross_entropy(s, target, **kwargs), (x,))
        assert mt.autograd.gradgradcheck(lambda s: F.cross_entropy(s, target, **kwargs), (x,))


@pytest.mark.parametrize("targets,first_bad", [([0, 4, 1], 4), ([0, -3, 1], -3),
                                               ([0, 5, 9], 5), ([9, -3, 0], 9)])
def test_bad_targets_raise_torchs_error_naming_the_first(device, targets, first_bad):
    x = mt.randn(3, 4, device=device, requires_grad=True)
    for kwargs in ({}, {"ignore_index": 1}, {"weight": mt.ones(4, device=device)}):
        with pytest.raises(IndexError, match=f"^Target {first_bad} is out of bounds.$"):
            F.cross_entropy(x, mt.tensor(targets, device=device), **kwargs)
    assert x.grad is None


def test_the_kernels_check_their_operands():
    from minitorch import _cpu
    a = np.zeros(6, np.float32)
    stats = np.empty(4, np.float32)
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension with size 3"):
        _cpu.cross_entropy_rows(a, np.array([0, 3], np.int64), np.empty(2, np.float32), stats,
                                3)
    with pytest.raises(TypeError, match="int64"):
        _cpu.cross_entropy_rows(a, np.array([0, 1], np.int32), np.empty(2, np.float32), stats,
                                3)
    with pytest.raises(ValueError, match="rows of length 4"):
        _cpu.cross_entropy_rows(a, np.array([0, 1], np.int64), np.empty(2, np.float32), stats,
                                4)
    with pytest.raises(ValueError, match="stats must hold 4 values"):
        _cpu.cross_entropy_rows(a, np.array([0, 1], np.int64), np.empty(2, np.float32),
                                np.empty(2, np.float32), 3)
    with pytest.raises(ValueError, match="stats must hold 4 values"):
        _cpu.cross_entropy_rows_backward(np.ones(2, np.float32), a, np.array([0, 1], np.int64),
                                         np.empty(4, np.float64), np.empty(6, np.float32), 3)


@pytest.mark.parametrize("dtype", [mt.float16, mt.bfloat16], ids=str)
def test_16_bit_scores_match_the_composed_path(device, dtype):
    # the kernel runs widened; the saved row statistics stay in float32 between the passes
    x = np.random.default_rng(3).standard_normal((7, 65)) * 3
    target = mt.tensor([0, 64, 3, 3, 17, 9, 40], device=device)
    results = []
    for loss_fn in (F.cross_entropy, _composed):
        scores = mt.tensor(x, dtype=dtype, device=device).requires_grad_()
        loss = loss_fn(scores, target)
        loss.backward()
        results.append((loss.float().item(), scores.grad.float().cpu().numpy()))
    (fused_loss, fused_grad), (loss, grad) = results
    assert abs(fused_loss - loss) <= 1e-2 * abs(loss)
    np.testing.assert_allclose(fused_grad, grad, rtol=2e-2, atol=1e-3)


def test_the_gpu_checks_the_targets_once_per_step(device, monkeypatch):
    """The forward checks the targets' range (on a GPU, a device-to-host copy); the backward's
    targets are the same saved, version-guarded tensor, so the GPU does not check them again.
    (The CPU's check is a pass over host memory: it stays in both.)"""
    if device != "cuda":
        pytest.skip("the range check that is skipped is the GPU backend's")
    from minitorch._gpu.backend import GpuBackend
    checks = []
    original = GpuBackend._check_index
    monkeypatch.setattr(GpuBackend, "_check_index",
                        lambda self, *args: checks.append(args) or original(self, *args))
    scores = mt.randn(5, 4, device=device, requires_grad=True)
    target = mt.tensor([0, 3, 1, 2, 3], device=device)
    loss = F.cross_entropy(scores, target)
    assert len(checks) == 1
    loss.backward()
    assert len(checks) == 1 and scores.grad.shape == (5, 4)
    with pytest.raises(IndexError):
        F.cross_entropy(scores, mt.tensor([0, 4, 1, 2, 3], device=device))
