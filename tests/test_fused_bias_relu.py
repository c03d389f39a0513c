"""Bias add and relu fused where a layer runs them back to back: the GEMM epilogue (bias and relu
as the product is stored: Linear → ReLU in nn.Sequential, the Transformer feed-forward) and
the one-pass relu(a + b) (AddRelu: a convolution's bias and the ReLU after it). The same values
as the separate ops, bit for bit, and the same gradients."""
import numpy as np
import pytest

import minitorch as mt
import minitorch.nn as nn
import minitorch.nn.functional as F
from minitorch.functions.elementwise import AddRelu
from minitorch.nn.functional.linear_maps import linear_relu


def _unfused(modules, x):
    """The modules called one by one, as Sequential did before the fusion."""
    for module in modules:
        x = module(x)
    return x


def _mlp(device, dtype=mt.float32):
    mt.manual_seed(0)
    return nn.Sequential(nn.Flatten(), nn.Linear(20, 16), nn.ReLU(), nn.Linear(16, 16),
                         nn.ReLU(inplace=True), nn.Linear(16, 3)).to(device, dtype)


def _grads(model):
    return [p.grad.clone() for p in model.parameters()]


def test_sequential_linear_relu_is_one_node_with_the_unfused_bits(device):
    model = _mlp(device)
    x = mt.randn(9, 4, 5, device=device)
    fused = model(x)
    assert type(fused.grad_fn).__name__ == "Linear" and fused.grad_fn.name() == "AddmmBackward0"
    relu_out = model[:3](x).grad_fn         # relu inside the node, named as torch's last one
    assert type(relu_out).__name__ == "Linear" and relu_out.name() == "ReluBackward0"
    fused.square().sum().backward()
    fused_grads = _grads(model)
    model.zero_grad()
    reference = _unfused(model, x)
    assert model[2](model[1](model[0](x))).grad_fn.name() == "ReluBackward0"
    reference.square().sum().backward()
    assert mt.equal(fused, reference)
    for got, want in zip(fused_grads, _grads(model)):
        assert mt.equal(got, want)


def test_epilogue_matches_numpy_over_views_broadcasts_and_empty(device, rng):
    x = rng.standard_normal((6, 7))
    w = rng.standard_normal((5, 7))
    b = rng.standard_normal(5)
    for xv, wv, bv in ((x, w, b), (x[::2], w, b),            # strided rows
                       (x.T.copy().T, w[:, ::-1].copy()[:, ::-1], b),    # transposed layouts
                       (x[:0], w, b), (x[:, :0], w[:, :0], b)):          # empty batch, k = 0
        out = linear_relu(mt.tensor(xv, device=device), mt.tensor(wv, device=device),
                          mt.tensor(bv, device=device))
        np.testing.assert_allclose(out.cpu().numpy(), np.maximum(xv @ wv.T + bv, 0),
                                   rtol=1e-12, atol=1e-12)
    # no bias; a 3-D input keeps its batch axes
    x3 = rng.standard_normal((2, 3, 7))
    out = linear_relu(mt.tensor(x3, device=device), mt.tensor(w, device=device))
    np.testing.assert_allclose(out.cpu().numpy(), np.maximum(x3 @ w.T, 0), rtol=1e-12)


def test_epilogue_relu_passes_nan_and_keeps_negative_zero(device):
    x = mt.tensor([[1.0], [float("nan")], [-2.0], [0.0]], device=device)
    w = mt.tensor([[1.0]], device=device)
    fused = linear_relu(x, w, mt.tensor([-0.0], device=device))
    unfused = F.relu(F.linear(x, w, mt.tensor([-0.0], device=device)))
    assert mt.isnan(fused[1, 0])
    np.testing.assert_array_equal(np.signbit(fused.cpu().numpy()),
                                  np.signbit(unfused.cpu().numpy()))
    np.testing.assert_array_equal(fused.cpu().numpy(), unfused.cpu().numpy())


def test_linear_relu_gradcheck_and_gradgradcheck(device, rng):
    # inputs away from relu's kink so that finite differences see a smooth function
    x = mt.tensor(rng.uniform(0.5, 1.0, (4, 3)), dtype=mt.float64, device=device,
                  requires_grad=True)
    w = mt.tensor(rng.uniform(-1.0, 1.0, (5, 3)), dtype=mt.float64, device=device,
                  requires_grad=True)
    b = mt.tensor([0.3, -5.0, 0.2, 4.0, -0.1], dtype=mt.float64, device=device,
                  requires_grad=True)
    assert mt.autograd.gradcheck(linear_relu, (x, w, b))
    assert mt.autograd.gradgradcheck(linear_relu, (x, w, b))


@pytest.mark.parametrize("dtype", [mt.float16, mt.bfloat16, mt.float64])
def test_fusion_keeps_each_dtype_bits(device, dtype):
    model = _mlp(device, dtype)
    x = mt.randn(5, 20, device=device).to(dtype)
    assert mt.equal(model(x), _unfused(model, x))


def test_fusion_under_autocast_matches_unfused(device):
    model = _mlp(device)
    x = mt.randn(5, 20, device=device)
    with mt.autocast(device_type=device, dtype=mt.bfloat16):
        fused, reference = model(x), _unfused(model, x)
    assert fused.dtype is mt.bfloat16
    assert mt.equal(fused, reference)


def test_hooks_subclasses_and_replaced_forwards_are_not_fused(device):
    model = _mlp(device)
    x = mt.randn(3, 20, device=device)
    seen = []
    handle = model[2].register_forward_hook(lambda module, args, out: seen.append(out.shape))
    out = model(x)
    assert seen == [(3, 16)] and mt.equal(out, _unfused(model, x))
    handle.remove()

    class Shifted(nn.ReLU):
        def forward(self, input):
            return super().forward(input) + 1

    shifted = nn.Sequential(model[1], Shifted())
    assert mt.equal(shifted(x), F.relu(model[1](x)) + 1)
    model[1].forward = lambda input: F.linear(input, model[1].weight) * 0
    assert mt.equal(model[1:3](x), mt.zeros(3, 16, device=device))


def test_linear_without_bias_and_relu_only_epilogue(device):
    mt.manual_seed(1)
    layer = nn.Linear(6, 4, bias=False).to(device)
    x = mt.randn(3, 6, device=device, requires_grad=True)
    fused = nn.Sequential(layer, nn.ReLU())(x)
    assert mt.equal(fused, F.relu(layer(x)))
    fused.sum().backward()
    grad = x.grad.clone()
    x.grad = None
    F.relu(layer(x)).sum().backward()
    assert mt.equal(grad, x.grad)


def test_transformer_feed_forward_fuses_its_relu(device):
    mt.manual_seed(0)
    fused = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True).to(device)
    plain = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True,
                                       activation=lambda t: F.relu(t)).to(device)
    plain.load_state_dict(fused.state_dict())
    x = mt.randn(2, 5, 16, device=device)
    out, reference = fused(x), plain(x)
    assert mt.equal(out, reference)
    out.sum().backward()
    reference.sum().backward()
    for got, want in zip(fused.parameters(), plain.parameters()):
        assert mt.equal(got.grad, want.grad)


@pytest.mark.parametrize("dtype", [mt.float32, mt.float64, mt.float16, mt.bfloat16])
def test_add_relu_has_the_separate_ops_bits(device, dtype):
    mt.manual_seed(0)
    a = mt.randn(4, 3, 5, 5, device=device).to(dtype).requires_grad_()
    b = mt.randn(1, 3, 1, 1, device=device).to(dtype).requires_grad_()
    fused, reference = AddRelu.apply(a, b), (a + b).relu()
    assert type(fused.grad_fn).__name__ == "AddRelu" and mt.equal(fused, reference)
    assert fused.grad_fn.name() == "ReluBackward0"         # torch's graph ends in the ReLU
    g = mt.randn(4, 3, 5, 5, device=device).to(dtype)
    for got, want in zip(mt.autograd.grad(fused, [a, b], g),
                         mt.autograd.grad(reference, [a, b], g)):
        assert mt.equal(got, want)
    view = a.detach().transpose(1, 3)                     # strided, broadcast the other way
    assert mt.equal(AddRelu.apply(view, b.detach().reshape(3)),
                    (view + b.detach().reshape(3)).relu())


def test_add_relu_special_values_gradcheck_and_gradgradcheck(device):
    nan, inf = float("nan"), float("inf")
    a = mt.tensor([nan, -inf, inf, -0.0, -1.0, 2.0], device=device)
    out = AddRelu.apply(a, mt.tensor(0.0, device=device)).cpu().numpy()
    assert np.isnan(out[0]) and out[1] == 0 and out[2] == inf and out[5] == 2.0
    assert np.signbit(out[3]) == np.signbit(float(F.relu(mt.tensor(-0.0) + 0.0)))
    x = mt.tensor([[0.5, -0.4, 1.2], [-0.9, 0.7, 0.3]], dtype=mt.float64, device=device,
                  requires_grad=True)
    b = mt.tensor([0.25, -0.15, 0.1], dtype=mt.float64, device=device, requires_grad=True)
    assert mt.autograd.gradcheck(AddRelu.apply, (x, b))
    assert mt.autograd.gradgradcheck(AddRelu.apply, (x, b))


@pytest.mark.parametrize("layer", [
    lambda: nn.Conv2d(3, 8, 3, padding=1),
    lambda: nn.Conv2d(3, 8, 3, stride=2, bias=False),
    lambda: nn.Conv2d(4, 8, 3, groups=2, padding=1, padding_mode="reflect"),
    lambda: nn.Conv1d(3, 5, 4, padding=2),
    lambda: nn.Conv3d(3, 4, 2)])
def test_sequential_conv_relu_has_the_unfused_bits(device, layer):
    mt.manual_seed(0)
    conv = layer().to(device, mt.float64)
    model = nn.Sequential(conv, nn.ReLU())
    shape = {1: (2, conv.in_channels, 9), 2: (2, conv.in_channels, 7, 6),
             3: (2, conv.in_channels, 4, 5, 3)}[conv._dims]
    x = mt.randn(*shape, device=device, dtype=mt.float64, requires_grad=True)
    fused, reference = model(x), F.relu(conv(x))
    assert fused.grad_fn.name() == "ReluBackward0"         # torch's name, fused or not
    if conv._dims > 1:      # a 1-D result is the squeezed 2-D one
        assert type(fused.grad_fn).__name__ == ("AddRelu" if conv.bias is not None
                                                else "Relu")
    assert mt.equal(fused, reference) and fused.is_contiguous()
    g = mt.randn(*fused.shape, device=device, dtype=mt.float64)
    params = [x] + list(conv.parameters())
    for got, want in zip(mt.autograd.grad(fused, params, g),
                         mt.autograd.grad(reference, params, g)):
        # the GPU's input gradient adds with atomics: its last bits vary from run to run
        np.testing.assert_allclose(got.cpu().numpy(), want.cpu().numpy(),
                                   rtol=0 if device == "cpu" else 1e-13, atol=0)


def test_conv_relu_under_autocast_and_with_hooks(device):
    mt.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(2, 4, 3), nn.ReLU()).to(device)
    x = mt.randn(2, 2, 6, 6, device=device)
    with mt.autocast(device_type=device, dtype=mt.bfloat16):
        fused, reference = model(x), F.relu(model[0](x))
    assert fused.dtype is mt.bfloat16 and mt.equal(fused, reference)
    seen = []
    model[0].register_forward_hook(lambda module, args, out: seen.append(out.shape))
    assert mt.equal(model(x), F.relu(model[0](x))) and seen == [(2, 4, 4, 4)] * 2
