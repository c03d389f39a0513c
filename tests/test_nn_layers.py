"""The nn layer modules: parameter names, shapes and default init as torch's, reprs, forward
behaviour (padding modes, running statistics, masks), torch's errors, and a small CNN whose SGD
trajectory follows torch's when torch's weights are copied in."""
import math
import re
import warnings

import numpy as np
import pytest

import minitorch as mt
import minitorch.nn as nn
import minitorch.nn.functional as F
from minitorch.autograd import gradcheck
from minitorch.nn import activation
from torch_parity import value


def tensor(x, device, grad=False):
    return mt.tensor(np.asarray(x), device=device, requires_grad=grad)


def module_class(backend, name):
    """A layer class by name; ReLU6, ELU, Softplus, LogSigmoid and Hardtanh are reached through
    minitorch.nn.activation until minitorch.nn exports them."""
    found = getattr(backend.nn, name, None)
    return found if found is not None else getattr(activation, name)


def copy_torch_state(ours, theirs, device="cpu"):
    ours.load_state_dict({k: mt.tensor(v.detach().numpy(), device=device)
                          for k, v in theirs.state_dict().items()})


# (class name, args, kwargs)
SPECS = [
    ("Linear", (3, 4), {}), ("Linear", (3, 4), {"bias": False}), ("Identity", (), {}),
    ("Flatten", (), {}), ("Flatten", (0, 2), {}), ("Unflatten", (1, (2, 3)), {}),
    ("Conv1d", (2, 4, 3), {}),
    ("Conv1d", (2, 4, 3), {"stride": 2, "padding": 1, "dilation": 2, "groups": 2, "bias": False,
                           "padding_mode": "reflect"}),
    ("Conv1d", (2, 4, 3), {"padding": "same"}), ("Conv2d", (2, 4, 3), {}),
    ("Conv2d", (2, 4, (3, 2)), {"stride": (2, 1), "padding": (1, 0), "dilation": 2, "groups": 2,
                                "bias": False, "padding_mode": "circular"}),
    ("Conv2d", (2, 4, 3), {"padding": "same"}), ("Conv2d", (2, 4, 3), {"padding": "valid"}),
    ("Conv2d", (2, 4, 3), {"padding": 1, "padding_mode": "replicate"}),
    ("ConvTranspose2d", (2, 4, 3), {}),
    ("ConvTranspose2d", (2, 4, 3), {"stride": 2, "padding": 1, "output_padding": 1, "groups": 2,
                                    "dilation": 2, "bias": False}),
    ("MaxPool2d", (2,), {}),
    ("MaxPool2d", (3, 2, 1), {"dilation": 2, "ceil_mode": True, "return_indices": True}),
    ("MaxPool2d", ((2, 3),), {}), ("AvgPool2d", (2,), {}),
    ("AvgPool2d", (3, 2, 1), {"ceil_mode": True, "count_include_pad": False,
                              "divisor_override": 2}),
    ("AdaptiveAvgPool2d", ((2, 3),), {}), ("AdaptiveAvgPool2d", (1,), {}),
    ("AdaptiveAvgPool2d", ((None, 2),), {}),
    ("BatchNorm1d", (3,), {}), ("BatchNorm1d", (3,), {"bias": False}),
    ("BatchNorm2d", (3,), {"eps": 1e-3, "momentum": None, "affine": False,
                           "track_running_stats": False}),
    ("LayerNorm", (4,), {}), ("LayerNorm", ((2, 3),), {"elementwise_affine": False}),
    ("LayerNorm", (4,), {"bias": False}), ("GroupNorm", (2, 4), {}),
    ("GroupNorm", (2, 4), {"affine": False, "eps": 1e-3}), ("GroupNorm", (2, 4), {"bias": False}),
    ("Dropout", (), {}), ("Dropout", (0.2, True), {}), ("Embedding", (5, 3), {}),
    ("Embedding", (5, 3), {"padding_idx": -1, "max_norm": 1.0, "norm_type": 1.0,
                           "scale_grad_by_freq": True}),
    ("ReLU", (), {}), ("ReLU", (True,), {}), ("ReLU6", (), {}), ("ReLU6", (True,), {}),
    ("LeakyReLU", (), {}), ("LeakyReLU", (0.2, True), {}), ("ELU", (), {}),
    ("ELU", (0.5, True), {}), ("GELU", (), {}), ("GELU", ("tanh",), {}), ("SiLU", (), {}),
    ("SiLU", (True,), {}), ("Softplus", (), {}), ("Softplus", (2, 10), {}),
    ("LogSigmoid", (), {}), ("Hardtanh", (), {}), ("Hardtanh", (-2.0, 2.0, True), {}),
    ("Sigmoid", (), {}), ("Tanh", (), {}), ("Softmax", (), {}), ("Softmax", (1,), {}),
    ("LogSoftmax", (-1,), {}),
    ("CrossEntropyLoss", (), {}), ("CrossEntropyLoss", (), {"label_smoothing": 0.1}),
    ("NLLLoss", (), {}), ("MSELoss", (), {}), ("L1Loss", (), {}), ("SmoothL1Loss", (), {}),
    ("HuberLoss", (), {}), ("BCELoss", (), {}), ("BCEWithLogitsLoss", (), {}),
    ("KLDivLoss", (), {}),
    ("MultiheadAttention", (4, 2), {}), ("MultiheadAttention", (4, 2), {"bias": False}),
    ("MultiheadAttention", (4, 2), {"kdim": 3, "vdim": 5, "add_bias_kv": True}),
]
SPEC_IDS = [f"{name}{args}{kwargs or ''}" for name, args, kwargs in SPECS]


@pytest.mark.torch_exact
@pytest.mark.parametrize("name,args,kwargs", SPECS, ids=SPEC_IDS)
def test_structure_and_repr_match_torch(name, args, kwargs):
    torch = pytest.importorskip("torch")
    theirs = getattr(torch.nn, name)(*args, **kwargs)
    ours = module_class(mt, name)(*args, **kwargs)
    assert repr(ours) == repr(theirs)
    assert [(k, tuple(p.shape)) for k, p in ours.named_parameters()] == \
        [(k, tuple(p.shape)) for k, p in theirs.named_parameters()]
    assert [(k, tuple(b.shape)) for k, b in ours.named_buffers()] == \
        [(k, tuple(b.shape)) for k, b in theirs.named_buffers()]
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for key, t in theirs.state_dict().items():
        assert ours.state_dict()[key].dtype.name == str(t.dtype).replace("torch.", "")


def test_structure_and_repr():
    linear = nn.Linear(3, 4)
    assert repr(linear) == "Linear(in_features=3, out_features=4, bias=True)"
    assert [(k, p.shape) for k, p in linear.named_parameters()] == [("weight", (4, 3)),
                                                                    ("bias", (4,))]
    conv = nn.Conv2d(2, 4, (3, 2), stride=(2, 1), padding=(1, 0), dilation=2, groups=2,
                     bias=False, padding_mode="circular")
    assert repr(conv) == ("Conv2d(2, 4, kernel_size=(3, 2), stride=(2, 1), padding=(1, 0), "
                          "dilation=(2, 2), groups=2, bias=False, padding_mode=circular)")
    assert conv.weight.shape == (4, 1, 3, 2) and conv.bias is None
    assert nn.ConvTranspose2d(2, 4, 3, groups=2).weight.shape == (2, 2, 3, 3)
    bn = nn.BatchNorm2d(3)
    assert repr(bn) == ("BatchNorm2d(3, eps=1e-05, momentum=0.1, affine=True, bias=True, "
                        "track_running_stats=True)")
    assert list(bn.state_dict()) == ["weight", "bias", "running_mean", "running_var",
                                     "num_batches_tracked"]
    assert bn.num_batches_tracked.dtype is mt.int64
    assert repr(nn.LayerNorm(4)) == "LayerNorm((4,), eps=1e-05, elementwise_affine=True, bias=True)"
    assert repr(nn.MaxPool2d(2)) == ("MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, "
                                     "ceil_mode=False)")
    assert repr(activation.Hardtanh(-2.0, 2.0, True)) == \
        "Hardtanh(min_val=-2.0, max_val=2.0, inplace=True)"
    mha = nn.MultiheadAttention(4, 2)
    assert repr(mha) == ("MultiheadAttention(\n  (out_proj): NonDynamicallyQuantizableLinear("
                         "in_features=4, out_features=4, bias=True)\n)")
    assert list(mha.state_dict()) == ["in_proj_weight", "in_proj_bias", "out_proj.weight",
                                      "out_proj.bias"]


# ---- default initialisation -------------------------------------------------------------------
@pytest.mark.parametrize("make,fan_in", [
    (lambda: nn.Linear(200, 300), 200), (lambda: nn.Conv2d(8, 32, 3), 72),
    (lambda: nn.Conv2d(8, 32, 3, groups=4), 18), (lambda: nn.Conv1d(6, 40, 5), 30),
    (lambda: nn.ConvTranspose2d(8, 32, 3), 288)])
def test_default_init_is_kaiming_uniform(make, fan_in):
    # kaiming_uniform_(a=√5) gives U(-1/√fan_in, 1/√fan_in); the bias uses the same bound.
    mt.manual_seed(0)
    layer = make()
    bound = 1 / math.sqrt(fan_in)
    for p in (layer.weight, layer.bias):
        values = value(p)
        assert np.abs(values).max() <= bound
        assert np.abs(values).max() > 0.9 * bound
        assert abs(values.std() - bound / math.sqrt(3)) < 0.15 * bound
    mt.manual_seed(0)
    np.testing.assert_array_equal(value(make().weight), value(layer.weight))    # reproducible


def test_default_init_of_other_layers():
    mt.manual_seed(0)
    mha = nn.MultiheadAttention(16, 4)
    # in_proj: xavier_uniform over (3E, E); its bias and out_proj's bias are zero.
    bound = math.sqrt(6 / (16 + 48))
    assert np.abs(value(mha.in_proj_weight)).max() <= bound
    assert np.abs(value(mha.in_proj_weight)).max() > 0.9 * bound
    assert not value(mha.in_proj_bias).any() and not value(mha.out_proj.bias).any()
    assert np.abs(value(mha.out_proj.weight)).max() <= 1 / math.sqrt(16)
    emb = nn.Embedding(400, 50, padding_idx=3)
    weights = value(emb.weight)
    assert abs(weights.std() - 1) < 0.05 and not weights[3].any()
    bn = nn.BatchNorm1d(3)
    for t, expected in ((bn.weight, 1), (bn.bias, 0), (bn.running_mean, 0), (bn.running_var, 1),
                        (bn.num_batches_tracked, 0)):
        np.testing.assert_array_equal(value(t), expected)
    ln, gn = nn.LayerNorm((2, 3)), nn.GroupNorm(2, 4)
    np.testing.assert_array_equal(value(ln.weight), np.ones((2, 3)))
    np.testing.assert_array_equal(value(gn.bias), np.zeros(4))


# ---- errors -----------------------------------------------------------------------------------
def _z(lib, *shape):
    return lib.zeros(*shape)


MODULE_ERRORS = {
    "Linear input": (lambda L: L.nn.Linear(5, 2)(_z(L, 3, 4)), RuntimeError,
                     "mat1 and mat2 shapes cannot be multiplied (3x4 and 5x2)"),
    "Conv2d channels": (lambda L: L.nn.Conv2d(3, 2, 3)(_z(L, 1, 4, 5, 5)), RuntimeError,
                        "Given groups=1, weight of size [2, 3, 3, 3], expected input[1, 4, 5, 5] "
                        "to have 3 channels, but got 4 channels instead"),
    "Conv2d rank": (lambda L: L.nn.Conv2d(3, 2, 3)(_z(L, 5, 5)), RuntimeError,
                    "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of "
                    "size: [5, 5]"),
    "Conv1d rank": (lambda L: L.nn.Conv1d(3, 2, 3)(_z(L, 1, 3, 5, 5)), RuntimeError,
                    "Expected 2D (unbatched) or 3D (batched) input to conv1d, but got input of "
                    "size: [1, 3, 5, 5]"),
    "Conv2d groups": (lambda L: L.nn.Conv2d(3, 2, 3, groups=2), ValueError,
                      "in_channels must be divisible by groups"),
    "Conv2d out groups": (lambda L: L.nn.Conv2d(4, 3, 3, groups=2), ValueError,
                          "out_channels must be divisible by groups"),
    "Conv2d zero groups": (lambda L: L.nn.Conv2d(3, 2, 3, groups=0), ValueError,
                           "groups must be a positive integer"),
    "Conv2d same stride": (lambda L: L.nn.Conv2d(4, 3, 3, padding="same", stride=2), ValueError,
                           "padding='same' is not supported for strided convolutions"),
    "Conv2d padding string": (lambda L: L.nn.Conv2d(4, 3, 3, padding="full"), ValueError,
                              f"Invalid padding string 'full', should be one of "
                              f"{ {'same', 'valid'} }"),
    "Conv2d padding mode": (lambda L: L.nn.Conv2d(4, 3, 3, padding_mode="wrap"), ValueError,
                            f"padding_mode must be one of "
                            f"{ {'zeros', 'reflect', 'replicate', 'circular'} }, but got "
                            "padding_mode='wrap'"),
    "ConvTranspose2d mode": (lambda L: L.nn.ConvTranspose2d(3, 2, 3, padding_mode="reflect"),
                             ValueError, 'Only "zeros" padding mode is supported for '
                                         'ConvTranspose2d'),
    "ConvTranspose2d output_size": (
        lambda L: L.nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1)(_z(L, 1, 2, 5, 5), (8, 9)),
        ValueError, "requested an output size of (8, 9), but valid sizes range from [9, 9] to "
                    "[10, 10] (for an input of torch.Size([5, 5]))"),
    "MaxPool2d rank": (lambda L: L.nn.MaxPool2d(2)(_z(L, 5, 5)), RuntimeError,
                       "non-empty 3D or 4D (batch mode) tensor expected for input"),
    "BatchNorm1d rank": (lambda L: L.nn.BatchNorm1d(3)(_z(L, 2, 3, 4, 5)), ValueError,
                         "expected 2D or 3D input (got 4D input)"),
    "BatchNorm2d rank": (lambda L: L.nn.BatchNorm2d(3)(_z(L, 2, 3, 4)), ValueError,
                         "expected 4D input (got 3D input)"),
    "BatchNorm2d channels": (lambda L: L.nn.BatchNorm2d(3)(_z(L, 2, 4, 4, 4)), RuntimeError,
                             "running_mean should contain 4 elements not 3"),
    "BatchNorm1d single value": (lambda L: L.nn.BatchNorm1d(3)(_z(L, 1, 3)), ValueError,
                                 "Expected more than 1 value per channel when training, got "
                                 "input size torch.Size([1, 3])"),
    "LayerNorm shape": (lambda L: L.nn.LayerNorm(5)(_z(L, 2, 4)), RuntimeError,
                        "Given normalized_shape=[5], expected input with shape [*, 5], but got "
                        "input of size[2, 4]"),
    "GroupNorm groups": (lambda L: L.nn.GroupNorm(4, 6), ValueError,
                         "num_channels (6) must be divisible by num_groups (4)"),
    "GroupNorm channels": (lambda L: L.nn.GroupNorm(2, 6)(_z(L, 2, 4, 5)), RuntimeError,
                           "Expected weight to be a vector of size equal to the number of "
                           "channels in input, but got weight of shape [6] and input of shape "
                           "[2, 4, 5]"),
    "Embedding padding_idx": (lambda L: L.nn.Embedding(5, 2, padding_idx=5), AssertionError,
                              "Padding_idx must be within num_embeddings"),
    "Embedding index": (lambda L: L.nn.Embedding(5, 2)(L.tensor([0, 7])), IndexError,
                        "index out of range in self"),
    "Embedding pretrained": (lambda L: L.nn.Embedding.from_pretrained(_z(L, 3)), AssertionError,
                             "Embeddings parameter is expected to be 2-dimensional"),
    "Dropout p": (lambda L: L.nn.Dropout(1.5), ValueError,
                  "dropout probability has to be between 0 and 1, but got 1.5"),
    "MHA heads": (lambda L: L.nn.MultiheadAttention(5, 2), AssertionError,
                  "embed_dim must be divisible by num_heads"),
    "MHA sizes": (lambda L: L.nn.MultiheadAttention(0, 2), ValueError,
                  "embed_dim and num_heads must be greater than 0, got embed_dim=0 and "
                  "num_heads=2 instead"),
    "MHA embed dim": (lambda L: L.nn.MultiheadAttention(4, 2)(*[_z(L, 3, 2, 5)] * 3),
                      AssertionError, "was expecting embedding dimension of 4, but got 5"),
    "MHA rank": (lambda L: L.nn.MultiheadAttention(4, 2)(*[_z(L, 1, 3, 2, 4)] * 3),
                 AssertionError, "query should be unbatched 2D or batched 3D tensor but received "
                                 "4-D query tensor"),
    "MHA mask shape": (lambda L: L.nn.MultiheadAttention(4, 2)(*[_z(L, 3, 2, 4)] * 3,
                                                               attn_mask=_z(L, 3, 2)),
                       RuntimeError, "The shape of the 2D attn_mask is torch.Size([3, 2]), but "
                                     "should be (3, 3)."),
    "MHA causal": (lambda L: L.nn.MultiheadAttention(4, 2)(*[_z(L, 3, 2, 4)] * 3, is_causal=True),
                   RuntimeError, "Need attn_mask if specifying the is_causal hint. You may use "
                                 "the Transformer module method `generate_square_subsequent_mask` "
                                 "to create this mask."),
    "MHA padding mask": (
        lambda L: L.nn.MultiheadAttention(4, 2)(*[_z(L, 3, 2, 4)] * 3,
                                                key_padding_mask=_z(L, 2, 4).bool()),
        AssertionError, "Expected key_padded_mask.shape[1] to be 3, but got 4"),
    "Softmax dim": (lambda L: L.nn.Softmax(3)(_z(L, 2, 3)), IndexError,
                    "Dimension out of range (expected to be in range of [-2, 1], but got 3)"),
}


def _sorted_sets(message):
    """torch prints Python sets in some messages; their order depends on string hashing."""
    return re.sub(r"\{[^{}]*\}", lambda m: str(sorted(m.group(0)[1:-1].split(", "))), message)


@pytest.mark.parametrize("name", list(MODULE_ERRORS))
def test_module_errors(name):
    call, kind, message = MODULE_ERRORS[name]
    with pytest.raises(kind) as info:
        call(mt)
    assert _sorted_sets(str(info.value)) == _sorted_sets(message)


@pytest.mark.parametrize("name", list(MODULE_ERRORS))
def test_module_errors_match_torch(name):
    torch = pytest.importorskip("torch")
    call = MODULE_ERRORS[name][0]
    with pytest.raises(Exception) as theirs:
        call(torch)
    with pytest.raises(Exception) as ours:
        call(mt)
    assert type(ours.value) is type(theirs.value)
    assert _sorted_sets(str(ours.value)) == _sorted_sets(str(theirs.value))


def test_batch_norm_error_leaves_statistics_alone():
    bn = nn.BatchNorm2d(3)
    with pytest.raises(RuntimeError):
        bn(mt.zeros(2, 4, 3, 3))
    assert bn.num_batches_tracked.item() == 0


# ---- convolution and pooling layers -----------------------------------------------------------
def conv2d_ref(x, w, b):
    """Valid cross-correlation (stride 1, no dilation) for the padding-mode tests."""
    kh, kw = w.shape[2:]
    oh, ow = x.shape[2] - kh + 1, x.shape[3] - kw + 1
    out = np.zeros((x.shape[0], w.shape[0], oh, ow))
    for i in range(kh):
        for j in range(kw):
            out += np.einsum("nchw,oc->nohw", x[:, :, i:i + oh, j:j + ow], w[:, :, i, j])
    return out + b.reshape(1, -1, 1, 1)


@pytest.mark.parametrize("mode,numpy_mode", [("zeros", "constant"), ("reflect", "reflect"),
                                             ("replicate", "edge"), ("circular", "wrap")])
@pytest.mark.parametrize("padding,kernel", [(1, 3), ((2, 1), (3, 2)), ("same", (4, 3))])
def test_conv2d_padding_modes(mode, numpy_mode, padding, kernel, device, rng):
    layer = nn.Conv2d(2, 3, kernel, padding=padding, padding_mode=mode, dtype=mt.float64)
    layer.to(device)
    x = rng.standard_normal((2, 2, 5, 6))
    if padding == "same":      # 'same' with an even kernel puts the extra row at the bottom
        pads = ((1, 2), (1, 1))
    else:
        pads = tuple((p, p) for p in ((padding,) * 2 if isinstance(padding, int) else padding))
    xp = np.pad(x, ((0, 0), (0, 0)) + pads, numpy_mode)
    out = layer(tensor(x, device))
    np.testing.assert_allclose(value(out), conv2d_ref(xp, value(layer.weight), value(layer.bias)),
                               rtol=1e-10, atol=1e-12)
    assert out.shape[2:] == (x.shape[2] + sum(pads[0]) - layer.kernel_size[0] + 1,
                             x.shape[3] + sum(pads[1]) - layer.kernel_size[1] + 1)


def test_conv_layers_gradients(device, rng):
    conv = nn.Conv2d(2, 2, 2, padding=1, padding_mode="reflect", dtype=mt.float64).to(device)
    x = tensor(rng.standard_normal((1, 2, 3, 3)), device, True)
    assert gradcheck(lambda a, w, b: F.conv2d(F.pad(a, (1, 1, 1, 1), "reflect"), w, b),
                     (x, conv.weight, conv.bias))
    out = conv(x)
    out.sum().backward()
    assert conv.weight.grad.shape == conv.weight.shape and x.grad.shape == x.shape
    conv1 = nn.Conv1d(2, 4, 3, padding="same", padding_mode="circular", dtype=mt.float64)
    conv1.to(device)
    y = tensor(rng.standard_normal((2, 5)), device, True)          # unbatched (C, L)
    assert gradcheck(lambda a: conv1(a), (y,))
    assert conv1(y).shape == (4, 5)


def test_conv_transpose2d_output_size(device, rng):
    layer = nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1, dtype=mt.float64).to(device)
    x = tensor(rng.standard_normal((2, 2, 5, 5)), device)
    assert layer(x).shape == (2, 3, 9, 9)
    for size in [(10, 10), (9, 10), [2, 3, 10, 9]]:
        out = layer(x, size)
        assert out.shape[2:] == tuple(size[-2:])
        padding = tuple(s - 9 for s in size[-2:])
        np.testing.assert_allclose(value(out), value(F.conv_transpose2d(
            x, layer.weight, layer.bias, 2, 1, padding)), rtol=1e-12)
    assert layer(tensor(rng.standard_normal((2, 5, 5)), device), (10, 10)).shape == (3, 10, 10)


def test_pooling_layers(device, rng):
    x = tensor(rng.standard_normal((2, 3, 7, 8)), device)
    out, idx = nn.MaxPool2d(3, 2, 1, return_indices=True, ceil_mode=True)(x)
    expected = F.max_pool2d(x, 3, 2, 1, ceil_mode=True, return_indices=True)
    np.testing.assert_array_equal(value(out), value(expected[0]))
    np.testing.assert_array_equal(value(idx), value(expected[1]))
    np.testing.assert_array_equal(value(nn.AvgPool2d(2, count_include_pad=False, padding=1)(x)),
                                  value(F.avg_pool2d(x, 2, 2, 1, False, False)))
    assert nn.AdaptiveAvgPool2d((None, 3))(x).shape == (2, 3, 7, 3)
    assert nn.AdaptiveAvgPool2d(1)(x).shape == (2, 3, 1, 1)


# ---- normalization layers ---------------------------------------------------------------------
@pytest.mark.parametrize("cls,shape", [(nn.BatchNorm1d, (6, 3)), (nn.BatchNorm1d, (4, 3, 5)),
                                       (nn.BatchNorm2d, (2, 3, 4, 2))])
@pytest.mark.parametrize("momentum", [0.1, 0.4, None])
def test_batch_norm_running_statistics(cls, shape, momentum, device, rng):
    bn = cls(3, momentum=momentum, dtype=mt.float64).to(device)
    axes = (0,) + tuple(range(2, len(shape)))
    count = np.prod(shape) // 3
    mean, var = np.zeros(3), np.ones(3)
    for step in range(1, 4):
        x = rng.standard_normal(shape) * step + step
        out = bn(tensor(x, device))
        batch_mean, batch_var = x.mean(axis=axes), x.var(axis=axes)
        view = (1, 3) + (1,) * (len(shape) - 2)
        np.testing.assert_allclose(value(out), (x - batch_mean.reshape(view)) /
                                   np.sqrt(batch_var.reshape(view) + 1e-5), rtol=1e-10,
                                   atol=1e-12)
        # momentum=None is a cumulative average: factor 1/step.
        factor = 1 / step if momentum is None else momentum
        mean = (1 - factor) * mean + factor * batch_mean
        var = (1 - factor) * var + factor * batch_var * count / (count - 1)
        np.testing.assert_allclose(value(bn.running_mean), mean, rtol=1e-10)
        np.testing.assert_allclose(value(bn.running_var), var, rtol=1e-10)
        assert bn.num_batches_tracked.item() == step
    bn.eval()
    x = rng.standard_normal(shape)
    out = bn(tensor(x, device))
    view = (1, 3) + (1,) * (len(shape) - 2)
    expected = (x - mean.reshape(view)) / np.sqrt(var.reshape(view) + 1e-5)
    np.testing.assert_allclose(value(out), expected, rtol=1e-10)
    assert bn.num_batches_tracked.item() == 3


def test_batch_norm_without_running_statistics(device, rng):
    bn = nn.BatchNorm2d(3, track_running_stats=False, dtype=mt.float64).to(device)
    assert bn.running_mean is None and list(bn.state_dict()) == ["weight", "bias"]
    x = rng.standard_normal((2, 3, 2, 2))
    bn.eval()                                  # still normalises with the batch statistics
    expected = (x - x.mean(axis=(0, 2, 3), keepdims=True)) / np.sqrt(
        x.var(axis=(0, 2, 3), keepdims=True) + 1e-5)
    np.testing.assert_allclose(value(bn(tensor(x, device))), expected, rtol=1e-10, atol=1e-12)
    x = tensor(rng.standard_normal((4, 3)), device, True)
    bn1 = nn.BatchNorm1d(3, dtype=mt.float64).to(device)
    assert gradcheck(lambda a, w, b: F.batch_norm(a, None, None, w, b, True),
                     (x, bn1.weight, bn1.bias))


def test_layer_and_group_norm_layers(device, rng):
    x = tensor(rng.standard_normal((2, 4, 3)), device, True)
    ln = nn.LayerNorm((4, 3), dtype=mt.float64).to(device)
    np.testing.assert_allclose(value(ln(x)), value(F.layer_norm(x, (4, 3))), rtol=1e-12)
    assert gradcheck(lambda a, w, b: F.layer_norm(a, (4, 3), w, b), (x, ln.weight, ln.bias))
    gn = nn.GroupNorm(2, 4, bias=False, dtype=mt.float64).to(device)
    assert gn.bias is None
    np.testing.assert_allclose(value(gn(x)), value(F.group_norm(x, 2)), rtol=1e-12)
    assert nn.LayerNorm(3, elementwise_affine=False).weight is None


def test_normalization_layers_match_torch(device, rng):
    torch = pytest.importorskip("torch")
    for name, shape, kwargs in [("BatchNorm1d", (4, 3, 5), {"momentum": None}),
                                ("BatchNorm2d", (2, 3, 4, 2), {"momentum": 0.3}),
                                ("BatchNorm1d", (5, 3), {"track_running_stats": False})]:
        theirs = getattr(torch.nn, name)(3, dtype=torch.float64, **kwargs)
        ours = getattr(nn, name)(3, dtype=mt.float64, **kwargs).to(device)
        for step in range(3):
            x = rng.standard_normal(shape) * 2 + step
            np.testing.assert_allclose(value(ours(tensor(x, device))),
                                       theirs(torch.tensor(x)).detach().numpy(), rtol=1e-10)
        for key, t in theirs.state_dict().items():
            np.testing.assert_allclose(value(ours.state_dict()[key]), t.numpy(), rtol=1e-12)
        ours.eval()
        theirs.eval()
        x = rng.standard_normal(shape)
        np.testing.assert_allclose(value(ours(tensor(x, device))),
                                   theirs(torch.tensor(x)).detach().numpy(), rtol=1e-10)


# ---- dropout, embedding, activations, losses --------------------------------------------------
def test_dropout_layer(device):
    drop = nn.Dropout(0.25)
    x = mt.ones(100, 40, device=device)
    mt.manual_seed(1)
    out = drop(x)
    kept = value(out) != 0
    assert abs(kept.mean() - 0.75) < 0.03
    np.testing.assert_allclose(value(out)[kept], 1 / 0.75, rtol=1e-6)
    mt.manual_seed(1)
    np.testing.assert_array_equal(value(drop(x)), value(out))
    drop.eval()
    assert drop(x) is x


def test_embedding_layer(device, rng):
    emb = nn.Embedding(6, 3, padding_idx=2, dtype=mt.float64).to(device)
    idx = mt.tensor([[0, 2, 2], [5, 2, 1]], device=device)
    out = emb(idx)
    np.testing.assert_array_equal(value(out), value(emb.weight)[value(idx)])
    out.sum().backward()
    np.testing.assert_array_equal(value(emb.weight.grad)[:, 0], [1, 1, 0, 0, 0, 1])
    weights = tensor(rng.standard_normal((4, 2)), device)
    frozen = nn.Embedding.from_pretrained(weights)
    assert not frozen.weight.requires_grad
    np.testing.assert_array_equal(value(frozen(mt.tensor([3, 0], device=device))),
                                  value(weights)[[3, 0]])
    assert nn.Embedding.from_pretrained(weights, freeze=False).weight.requires_grad
    clipped = nn.Embedding(4, 2, max_norm=0.5, _weight=weights.clone())
    out = clipped(mt.tensor([1, 1, 3], device=device))
    assert np.linalg.norm(value(out), axis=1).max() <= 0.5 + 1e-6


ACTIVATION_LAYERS = [
    ("ReLU", (), F.relu), ("ReLU6", (), F.relu6), ("LeakyReLU", (0.2,),
                                                   lambda x: F.leaky_relu(x, 0.2)),
    ("ELU", (0.5,), lambda x: F.elu(x, 0.5)), ("GELU", ("tanh",), lambda x: F.gelu(x, "tanh")),
    ("SiLU", (), F.silu), ("Softplus", (2.0, 1.0), lambda x: F.softplus(x, 2.0, 1.0)),
    ("LogSigmoid", (), F.logsigmoid), ("Hardtanh", (-0.5, 2.0),
                                       lambda x: F.hardtanh(x, -0.5, 2.0)),
    ("Sigmoid", (), F.sigmoid), ("Tanh", (), F.tanh), ("Softmax", (1,), lambda x: F.softmax(x, 1)),
    ("LogSoftmax", (0,), lambda x: F.log_softmax(x, 0)),
]


@pytest.mark.parametrize("name,args,fn", ACTIVATION_LAYERS, ids=[a[0] for a in ACTIVATION_LAYERS])
def test_activation_layers(name, args, fn, device, rng):
    layer = module_class(mt, name)(*args)
    x = rng.standard_normal((3, 4)) * 3
    np.testing.assert_array_equal(value(layer(tensor(x, device))), value(fn(tensor(x, device))))
    if "inplace" in layer.__dict__:
        inplace = module_class(mt, name)(*args, inplace=True)
        y = tensor(x, device)
        assert inplace(y) is y
        np.testing.assert_array_equal(value(y), value(fn(tensor(x, device))))


@pytest.mark.parametrize("shape,dim", [((3,), 0), ((2, 3), 1), ((2, 3, 4), 0), ((2, 3, 4, 5), 1)])
def test_softmax_layer_without_dim(shape, dim, device, rng):
    # torch's legacy implicit dim: 0 for 0-, 1- and 3-d inputs, else 1 (with a warning).
    x = tensor(rng.standard_normal(shape), device)
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        out = nn.Softmax()(x)
    np.testing.assert_allclose(value(out), value(F.softmax(x, dim)), rtol=1e-12)
    with pytest.warns(UserWarning, match="Implicit dimension choice for log_softmax"):
        out = nn.LogSoftmax()(x)
    np.testing.assert_allclose(value(out), value(F.log_softmax(x, dim)), rtol=1e-12)


@pytest.mark.parametrize("name,args,fn", ACTIVATION_LAYERS, ids=[a[0] for a in ACTIVATION_LAYERS])
def test_activation_layers_match_torch(name, args, fn, device, rng):
    torch = pytest.importorskip("torch")
    x = rng.standard_normal((3, 4)) * 3
    x[0, :3] = [0.0, -0.5, 2.0]
    ours, theirs = tensor(x, device, True), torch.tensor(x, requires_grad=True)
    out, expected = module_class(mt, name)(*args)(ours), getattr(torch.nn, name)(*args)(theirs)
    np.testing.assert_allclose(value(out), expected.detach().numpy(), rtol=1e-10, atol=1e-14)
    g = rng.standard_normal((3, 4))
    out.backward(tensor(g, device))
    expected.backward(torch.tensor(g))
    np.testing.assert_allclose(value(ours.grad), theirs.grad.numpy(), rtol=1e-10, atol=1e-14)


def test_loss_layers(device, rng):
    x = tensor(rng.standard_normal((5, 4)), device)
    target = mt.tensor([0, 3, 1, 3, 2], device=device)
    weight = tensor(rng.random(4) + 0.5, device)
    loss = nn.CrossEntropyLoss(weight=weight, ignore_index=3, label_smoothing=0.1,
                               reduction="sum")
    assert [k for k, _ in loss.named_buffers()] == ["weight"]
    np.testing.assert_allclose(value(loss(x, target)), value(F.cross_entropy(
        x, target, weight, ignore_index=3, reduction="sum", label_smoothing=0.1)), rtol=1e-12)
    logp = F.log_softmax(x, 1)
    np.testing.assert_allclose(value(nn.NLLLoss(reduction="none")(logp, target)),
                               value(F.nll_loss(logp, target, reduction="none")), rtol=1e-12)
    y = tensor(rng.standard_normal((5, 4)), device)
    for layer, fn in [(nn.MSELoss(), F.mse_loss), (nn.L1Loss(reduction="sum"),
                                                   lambda a, b: F.l1_loss(a, b, reduction="sum")),
                      (nn.SmoothL1Loss(beta=0.5), lambda a, b: F.smooth_l1_loss(a, b, beta=0.5)),
                      (nn.HuberLoss(delta=0.3), lambda a, b: F.huber_loss(a, b, delta=0.3)),
                      (nn.BCEWithLogitsLoss(pos_weight=weight),
                       lambda a, b: F.binary_cross_entropy_with_logits(a, b.sigmoid(),
                                                                       pos_weight=weight)),
                      (nn.KLDivLoss(reduction="batchmean", log_target=True),
                       lambda a, b: F.kl_div(a, b, reduction="batchmean", log_target=True))]:
        target_y = y.sigmoid() if isinstance(layer, nn.BCEWithLogitsLoss) else y
        np.testing.assert_allclose(value(layer(x, target_y)), value(fn(x, y)), rtol=1e-12)
    bce = nn.BCELoss(weight=weight)
    np.testing.assert_allclose(value(bce(x.sigmoid(), y.sigmoid())), value(
        F.binary_cross_entropy(x.sigmoid(), y.sigmoid(), weight)), rtol=1e-12)
    # torch's deprecated size_average/reduce arguments map onto reduction, with a warning.
    with pytest.warns(UserWarning, match="please use reduction='none' instead"):
        assert nn.MSELoss(reduce=False).reduction == "none"
    with pytest.warns(UserWarning, match="please use reduction='sum' instead"):
        assert nn.L1Loss(size_average=False).reduction == "sum"


# ---- multi-head attention ---------------------------------------------------------------------
def test_multihead_attention_values(device, rng):
    mt.manual_seed(0)
    mha = nn.MultiheadAttention(4, 2, dtype=mt.float64).to(device)
    x = rng.standard_normal((3, 2, 4))            # (L, N, E)
    out, weights = mha(*[tensor(x, device)] * 3)
    w_in, b_in = value(mha.in_proj_weight), value(mha.in_proj_bias)
    q, k, v = (x @ w_in[i * 4:(i + 1) * 4].T + b_in[i * 4:(i + 1) * 4] for i in range(3))
    heads = [lambda t: t.reshape(3, 2, 2, 2).transpose(1, 2, 0, 3)][0]    # (N, H, L, D)
    scores = heads(q) @ heads(k).transpose(0, 1, 3, 2) / math.sqrt(2)
    p = np.exp(scores - scores.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    attended = (p @ heads(v)).transpose(2, 0, 1, 3).reshape(3, 2, 4)
    expected = attended @ value(mha.out_proj.weight).T + value(mha.out_proj.bias)
    np.testing.assert_allclose(value(out), expected, rtol=1e-10)
    np.testing.assert_allclose(value(weights), p.mean(1), rtol=1e-10)
    _, per_head = mha(*[tensor(x, device)] * 3, average_attn_weights=False)
    np.testing.assert_allclose(value(per_head), p, rtol=1e-10)
    assert mha(*[tensor(x, device)] * 3, need_weights=False)[1] is None
    # batch_first takes (N, L, E) and gives the same numbers transposed.
    mha.batch_first = True
    xb = tensor(x.transpose(1, 0, 2), device)
    np.testing.assert_allclose(value(mha(xb, xb, xb)[0]), expected.transpose(1, 0, 2),
                               rtol=1e-10)


def test_multihead_attention_gradients(device, rng):
    mha = nn.MultiheadAttention(4, 2, dtype=mt.float64).to(device)
    q = tensor(rng.standard_normal((2, 1, 4)), device, True)
    kv = tensor(rng.standard_normal((3, 1, 4)), device, True)
    mask = mt.tensor([[False, True, False], [False, False, True]], device=device)
    assert gradcheck(lambda a, b: mha(a, b, b, attn_mask=mask)[0], (q, kv))
    assert gradcheck(lambda a: mha(a, a, a, need_weights=False)[0], (q,))
    out, _ = mha(q, kv, kv)
    out.sum().backward()
    assert all(p.grad is not None for p in mha.parameters())


MHA_CONFIGS = [{}, {"batch_first": True}, {"bias": False}, {"kdim": 3, "vdim": 5},
               {"add_bias_kv": True, "add_zero_attn": True, "batch_first": True}]
MHA_CALLS = [
    ("plain", {}), ("no weights", {"need_weights": False}),
    ("per head", {"average_attn_weights": False}),
    ("padding mask", {"key_padding_mask": "kpm"}),
    ("float padding mask", {"key_padding_mask": "kpm_float"}),
    ("bool mask", {"attn_mask": "mask"}), ("float mask", {"attn_mask": "mask_float"}),
    ("3-d mask", {"attn_mask": "mask3"}),
    ("both masks, no weights", {"attn_mask": "mask", "key_padding_mask": "kpm",
                                "need_weights": False}),
    ("causal", {"attn_mask": "causal", "is_causal": True, "need_weights": False}),
]


@pytest.mark.parametrize("config", MHA_CONFIGS, ids=[str(c) for c in MHA_CONFIGS])
@pytest.mark.parametrize("call", MHA_CALLS, ids=[c[0] for c in MHA_CALLS])
def test_multihead_attention_matches_torch(config, call, device, rng):
    torch = pytest.importorskip("torch")
    theirs = torch.nn.MultiheadAttention(4, 2, dtype=torch.float64, **config)
    ours = nn.MultiheadAttention(4, 2, dtype=mt.float64, **config).to(device)
    copy_torch_state(ours, theirs, device)
    length, source, batch = 3, 4, 2
    first = config.get("batch_first", False)

    def shape(n, dim):
        return (batch, n, dim) if first else (n, batch, dim)

    arrays = [rng.standard_normal(shape(length, 4)),
              rng.standard_normal(shape(source, config.get("kdim", 4))),
              rng.standard_normal(shape(source, config.get("vdim", 4)))]
    kpm = np.zeros((batch, source), bool)
    kpm[1, 0] = True
    masks = {"kpm": kpm, "kpm_float": np.where(kpm, -1e9, 0.0),
             "mask": np.triu(np.ones((length, source), bool), 2),
             "mask_float": rng.standard_normal((length, source)),
             "mask3": rng.standard_normal((batch * 2, length, source)),
             "causal": np.triu(np.ones((length, source), bool), 1)}
    kwargs = dict(call[1])
    ours_kw = {k: (mt.tensor(masks[v], device=device) if isinstance(v, str) else v)
               for k, v in kwargs.items()}
    theirs_kw = {k: (torch.tensor(masks[v]) if isinstance(v, str) else v)
                 for k, v in kwargs.items()}
    mine = [tensor(a, device, True) for a in arrays]
    ref = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, weights = ours(*mine, **ours_kw)
    expected, expected_weights = theirs(*ref, **theirs_kw)
    np.testing.assert_allclose(value(out), expected.detach().numpy(), rtol=1e-9, atol=1e-12)
    if expected_weights is None:
        assert weights is None
    else:
        np.testing.assert_allclose(value(weights), expected_weights.detach().numpy(), rtol=1e-9,
                                   atol=1e-12)
    g = rng.standard_normal(tuple(expected.shape))
    out.backward(tensor(g, device))
    expected.backward(torch.tensor(g))
    for a, b in zip(mine, ref):
        np.testing.assert_allclose(value(a.grad), b.grad.numpy(), rtol=1e-8, atol=1e-10)
    for (name, p), (_, tp) in zip(ours.named_parameters(), theirs.named_parameters()):
        np.testing.assert_allclose(value(p.grad), tp.grad.numpy(), rtol=1e-8, atol=1e-10,
                                   err_msg=name)


def test_multihead_attention_unbatched_matches_torch(device, rng):
    torch = pytest.importorskip("torch")
    theirs = torch.nn.MultiheadAttention(4, 2, dtype=torch.float64, batch_first=True)
    ours = nn.MultiheadAttention(4, 2, dtype=mt.float64, batch_first=True).to(device)
    copy_torch_state(ours, theirs, device)
    q, k = rng.standard_normal((3, 4)), rng.standard_normal((5, 4))
    kpm = np.array([False, True, False, False, False])
    for kwargs in ({}, {"key_padding_mask": kpm, "average_attn_weights": False}):
        out, w = ours(tensor(q, device), tensor(k, device), tensor(k, device),
                      **{n: mt.tensor(v, device=device) if isinstance(v, np.ndarray) else v
                         for n, v in kwargs.items()})
        expected, expected_w = theirs(torch.tensor(q), torch.tensor(k), torch.tensor(k),
                                      **{n: torch.tensor(v) if isinstance(v, np.ndarray) else v
                                         for n, v in kwargs.items()})
        np.testing.assert_allclose(value(out), expected.detach().numpy(), rtol=1e-10)
        np.testing.assert_allclose(value(w), expected_w.detach().numpy(), rtol=1e-10)


def test_multihead_attention_self_attention_matches_torch(device, rng):
    torch = pytest.importorskip("torch")
    theirs = torch.nn.MultiheadAttention(6, 3, dtype=torch.float64)
    ours = nn.MultiheadAttention(6, 3, dtype=mt.float64).to(device)
    copy_torch_state(ours, theirs, device)
    x = rng.standard_normal((4, 2, 6))
    a, b = tensor(x, device, True), torch.tensor(x, requires_grad=True)
    out, expected = ours(a, a, a)[0], theirs(b, b, b)[0]         # one packed projection GEMM
    np.testing.assert_allclose(value(out), expected.detach().numpy(), rtol=1e-10)
    out.sum().backward()
    expected.sum().backward()
    np.testing.assert_allclose(value(a.grad), b.grad.numpy(), rtol=1e-9)
    np.testing.assert_allclose(value(ours.in_proj_weight.grad),
                               theirs.in_proj_weight.grad.numpy(), rtol=1e-9)


# ---- a small CNN trained against torch --------------------------------------------------------
def small_cnn(backend):
    """Conv2d → ReLU → MaxPool2d → Flatten → Linear, in float64."""
    return backend.nn.Sequential(backend.nn.Conv2d(2, 4, 3, padding=1),
                                 backend.nn.ReLU(), backend.nn.MaxPool2d(2),
                                 backend.nn.Flatten(), backend.nn.Linear(4 * 3 * 3, 5)).double()


def test_small_cnn_follows_torch_training(device, rng):
    torch = pytest.importorskip("torch")
    theirs = small_cnn(torch)
    ours = small_cnn(mt).to(device)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    copy_torch_state(ours, theirs, device)
    opt_ours = mt.optim.SGD(ours.parameters(), lr=0.1, momentum=0.9)
    opt_theirs = torch.optim.SGD(theirs.parameters(), lr=0.1, momentum=0.9)
    for step in range(6):
        x = rng.standard_normal((8, 2, 6, 6))
        y = rng.integers(0, 5, 8)
        loss = mt.nn.CrossEntropyLoss()(ours(tensor(x, device)), mt.tensor(y, device=device))
        expected = torch.nn.CrossEntropyLoss()(theirs(torch.tensor(x)), torch.tensor(y))
        np.testing.assert_allclose(loss.item(), expected.item(), rtol=1e-10, err_msg=str(step))
        for model, optimizer, result in ((ours, opt_ours, loss),
                                         (theirs, opt_theirs, expected)):
            optimizer.zero_grad()
            result.backward()
            optimizer.step()
    for key, t in theirs.state_dict().items():
        np.testing.assert_allclose(value(ours.state_dict()[key]), t.numpy(), rtol=1e-9,
                                   atol=1e-12, err_msg=key)


def test_small_cnn_trains(device, rng):
    """Without torch: the same model on a learnable task lowers its loss under SGD."""
    mt.manual_seed(0)
    model = small_cnn(mt).to(device)
    x = tensor(rng.standard_normal((16, 2, 6, 6)), device)
    y = mt.tensor(rng.integers(0, 5, 16), device=device)
    optimizer = mt.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    losses = []
    for _ in range(15):
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]


def test_flatten_unflatten_identity(device, rng):
    x = tensor(rng.standard_normal((2, 3, 4)), device)
    assert nn.Flatten()(x).shape == (2, 12)
    assert nn.Flatten(0, 1)(x).shape == (6, 4)
    assert nn.Unflatten(2, (2, 2))(x).shape == (2, 3, 2, 2)
    assert nn.Identity(5, unused=True)(x) is x
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nn.Linear(4, 2, dtype=mt.float64).to(device)(x)
