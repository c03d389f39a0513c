"""nn.Sequential's Conv2d → ReLU → MaxPool2d as a convolution and one ReluMaxPool node: the
relu (with the bias add) and the max pool in one node that keeps no full-size relu output and
masks the gradient on the pooled size. The same values and gradients as the three modules
called one by one, bit for bit on the CPU; not fused where the calls would run anything else."""
import numpy as np
import pytest

import minitorch as mt
import minitorch.nn as nn
from minitorch.functions.window import PoolGeometry, relu_max_pool

POOLS = {"2x2": dict(kernel_size=2),
         "3x3 stride 2 padding 1": dict(kernel_size=3, stride=2, padding=1),
         "ceil_mode": dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
         "dilation 2 stride 1": dict(kernel_size=2, stride=1, dilation=2),
         "rectangular": dict(kernel_size=(2, 3), stride=(2, 1))}


def _model(device, pool, bias=True, groups=1, dtype=mt.float32):
    mt.manual_seed(0)
    return nn.Sequential(nn.Conv2d(4, 6, 3, padding=1, bias=bias, groups=groups), nn.ReLU(),
                         nn.MaxPool2d(**pool)).to(device, dtype)


def _unfused(model, x):
    for module in model:
        x = module(x)
    return x


def _input(device, dtype=mt.float32, n=2):
    x = mt.randn(n, 4, 9, 8, device=device, dtype=dtype)
    if n:
        x[0, :, :5, :5] = -3.0          # windows whose relu outputs are all zero
    return x


def _value_and_grads(model, x, out_of):
    x = x.detach().requires_grad_()
    out = out_of(model, x)
    weights = mt.arange(out.numel(), device=x.device, dtype=out.dtype).reshape(out.shape).cos()
    grads = mt.autograd.grad((out * weights).sum(), [x] + list(model.parameters()))
    return out, grads


def _assert_same(device, got, want, gpu_tol=1e-6):
    # the GPU adds with atomics (overlapping windows, the convolution's input gradient): the
    # order, and so the last bits, vary from run to run; a sum's rounding is relative to the
    # largest terms, so the absolute tolerance scales with the largest value
    got, want = got.detach().cpu().numpy(), want.detach().cpu().numpy()
    if device == "cpu":
        np.testing.assert_array_equal(got, want)
        return
    scale = max(1.0, float(np.abs(want).max(initial=0)))
    np.testing.assert_allclose(got, want, rtol=gpu_tol, atol=gpu_tol * scale)


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no bias"])
@pytest.mark.parametrize("pool", list(POOLS))
def test_fused_has_the_unfused_values_and_gradients(device, pool, bias):
    model = _model(device, POOLS[pool], bias)
    x = _input(device)
    fused, fused_grads = _value_and_grads(model, x, lambda m, x: m(x))
    assert type(fused.grad_fn).__name__ == "ReluMaxPool"
    reference, reference_grads = _value_and_grads(model, x, _unfused)
    assert mt.equal(fused, reference) and fused.is_contiguous()
    for got, want in zip(fused_grads, reference_grads):
        _assert_same(device, got, want)


def test_nan_grouped_and_float64(device):
    model = _model(device, POOLS["3x3 stride 2 padding 1"], groups=2, dtype=mt.float64)
    x = _input(device, mt.float64)
    x[1, 2, 4, 4] = float("nan")          # relu passes NaN, and it wins its windows
    fused, fused_grads = _value_and_grads(model, x, lambda m, x: m(x))
    reference, reference_grads = _value_and_grads(model, x, _unfused)
    assert fused.isnan().any().item()
    np.testing.assert_array_equal(fused.detach().cpu().numpy(),
                                  reference.detach().cpu().numpy())
    for got, want in zip(fused_grads, reference_grads):
        np.testing.assert_array_equal(got.isnan().cpu().numpy(), want.isnan().cpu().numpy())
        _assert_same(device, got.nan_to_num(), want.nan_to_num())


def test_empty_batch(device):
    model = _model(device, POOLS["2x2"])
    x = _input(device, n=0)
    assert model(x).shape == _unfused(model, x).shape == (0, 6, 4, 4)


def test_relu_max_pool_against_numpy_and_gradcheck(device, rng):
    x = rng.uniform(-1, 1, (2, 3, 5, 5))
    b = rng.uniform(-0.3, 0.3, (1, 3, 1, 1))
    geometry = PoolGeometry((2, 2), (2, 2), (2, 2), (0, 0), (1, 1))
    out = relu_max_pool(mt.tensor(x, device=device), mt.tensor(b, device=device), geometry)
    y = np.maximum(x + b, 0)[:, :, :4, :4]
    want = y.reshape(2, 3, 2, 2, 2, 2).max(axis=(3, 5))
    np.testing.assert_allclose(out.cpu().numpy(), want, rtol=0, atol=0)
    # values apart from each other and from relu's kink, for finite differences
    values = rng.permutation(np.arange(2 * 3 * 5 * 5)).reshape(2, 3, 5, 5) / 10.0 - 3.05
    xt = mt.tensor(values, device=device, requires_grad=True)
    bt = mt.tensor([[[[0.01]], [[0.52]], [[-0.27]]]], dtype=mt.float64, device=device,
                   requires_grad=True)
    assert mt.autograd.gradcheck(lambda x, b: relu_max_pool(x, b, geometry), (xt, bt))
    assert mt.autograd.gradgradcheck(lambda x, b: relu_max_pool(x, b, geometry), (xt, bt))
    assert mt.autograd.gradcheck(lambda x: relu_max_pool(x, None, geometry), (xt,))


def test_double_backward_matches_unfused(device):
    model = _model(device, POOLS["3x3 stride 2 padding 1"], dtype=mt.float64)
    x = _input(device, mt.float64).requires_grad_()
    results = []
    for out in (model(x), _unfused(model, x)):
        g, = mt.autograd.grad(out.square().sum(), x, create_graph=True)
        results.append(mt.autograd.grad(g.sin().sum(), [x, model[0].weight]))
    for got, want in zip(*results):
        _assert_same(device, got, want)


def test_not_fused_where_the_calls_would_run_more(device):
    model = _model(device, POOLS["2x2"])
    x = _input(device)
    reference = _unfused(model, x)
    assert model(x[0]).grad_fn.name() == "MaxPool2DWithIndicesBackward0"   # unbatched
    assert mt.equal(model(x[0]), reference[0])
    with_indices = nn.Sequential(model[0], model[1], nn.MaxPool2d(2, return_indices=True))
    values, indices = with_indices(x)
    assert mt.equal(values, reference) and indices.dtype is mt.int64
    seen = []
    handle = model[1].register_forward_hook(lambda module, args, out: seen.append(out.shape))
    out = model(x)
    assert seen == [(2, 6, 9, 8)] and out.grad_fn.name() == "MaxPool2DWithIndicesBackward0"
    handle.remove()

    class Pool(nn.MaxPool2d):
        pass

    subclassed = nn.Sequential(model[0], model[1], Pool(2))
    assert subclassed(x).grad_fn.name() == "MaxPool2DWithIndicesBackward0"
    assert mt.equal(subclassed(x), reference)


def test_bad_pool_arguments_raise_as_unfused(device):
    model = _model(device, dict(kernel_size=5, padding=3))     # padding above half the kernel
    x = _input(device)
    with pytest.raises(RuntimeError) as fused:
        model(x)
    with pytest.raises(RuntimeError) as reference:
        _unfused(model, x)
    assert str(fused.value) == str(reference.value)


@pytest.mark.parametrize("dtype", [mt.float16, mt.bfloat16])
def test_narrow_dtypes_and_autocast(device, dtype):
    model = _model(device, POOLS["3x3 stride 2 padding 1"], dtype=dtype)
    x = _input(device, dtype)
    fused, fused_grads = _value_and_grads(model, x, lambda m, x: m(x))
    reference, reference_grads = _value_and_grads(model, x, _unfused)
    assert fused.dtype is dtype and mt.equal(fused, reference)
    for got, want in zip(fused_grads, reference_grads):
        _assert_same(device, got.float(), want.float(), gpu_tol=2e-2)
    model = _model(device, POOLS["2x2"])
    x = _input(device)
    with mt.autocast(device_type=device, dtype=dtype):
        fused, reference = model(x), _unfused(model, x)
    assert fused.dtype is dtype and type(fused.grad_fn).__name__ == "ReluMaxPool"
    assert mt.equal(fused, reference)
