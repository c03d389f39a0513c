"""Differential audit of minitorch.nn against torch.nn: each test pins a discrepancy the audit
found (and fixed), plus a compact sweep of the layer and loss options the audit compared, with
torch's float64 weights copied in and outputs, input and parameter gradients compared."""
import warnings

import numpy as np
import pytest

import minitorch as mt
from minitorch.autograd import gradcheck
from torch_parity import check_against_torch, same_errors, seq, value

F = mt.nn.functional


class Call(mt.nn.Module):
    """A parameterless module around a functional call, for check_against_torch."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def functional_against_torch(fn, arrays, device):
    """fn(library, *inputs) in both libraries: outputs and input gradients."""
    torch = pytest.importorskip("torch")

    class TorchCall(torch.nn.Module):
        def forward(self, *args):
            return fn(torch, *args)
    check_against_torch(Call(lambda *args: fn(mt, *args)), TorchCall(), arrays, device,
                        lambda module, *args: module(*args))


# ---- transposed convolution with output_padding >= stride (allowed below the dilation) ------
@pytest.mark.parametrize("dims", [1, 2, 3])
@pytest.mark.parametrize("padding", [0, 1])
def test_conv_transpose_output_padding_at_least_stride(device, dims, padding):
    torch = pytest.importorskip("torch")
    name = f"ConvTranspose{dims}d"
    kwargs = dict(stride=1, dilation=2, output_padding=1, padding=padding, groups=2)
    check_against_torch(getattr(mt.nn, name)(4, 6, 3, **kwargs),
                        getattr(torch.nn, name)(4, 6, 3, **kwargs),
                        [seq(2, 4, *(4, 3, 5)[:dims])], device, lambda m, x: m(x))


def test_conv_transpose_output_padding_gradcheck():
    x = mt.tensor(seq(1, 2, 4), requires_grad=True)
    w = mt.tensor(seq(2, 1, 3, seed=1), requires_grad=True)
    assert gradcheck(lambda a, b: F.conv_transpose1d(a, b, stride=2, dilation=3,
                                                     output_padding=2), (x, w))


# ---- interpolate: bicubic and 3-D area were missing --------------------------------------------
@pytest.mark.parametrize("kwargs", [
    dict(size=(9, 4)), dict(size=(2, 3)), dict(size=(1, 1)), dict(scale_factor=1.7),
    dict(scale_factor=(0.6, 2.25)), dict(scale_factor=1.7, recompute_scale_factor=True)])
@pytest.mark.parametrize("align_corners", [False, True])
def test_bicubic_matches_torch(device, kwargs, align_corners):
    torch = pytest.importorskip("torch")
    check_against_torch(mt.nn.Upsample(mode="bicubic", align_corners=align_corners, **kwargs),
                        torch.nn.Upsample(mode="bicubic", align_corners=align_corners, **kwargs),
                        [seq(2, 3, 5, 6)], device, lambda m, x: m(x))


def test_bicubic_gradcheck():
    x = mt.tensor(seq(1, 1, 3, 4), requires_grad=True)
    assert gradcheck(lambda a: F.interpolate(a, size=(5, 3), mode="bicubic"), (x,))


@pytest.mark.parametrize("size", [(2, 3, 4), (7, 9, 11), (1, 1, 1)])
def test_area_3d_matches_torch(device, size):
    torch = pytest.importorskip("torch")
    check_against_torch(mt.nn.Upsample(size=size, mode="area"),
                        torch.nn.Upsample(size=size, mode="area"),
                        [seq(2, 2, 3, 4, 5)], device, lambda m, x: m(x))


@pytest.mark.parametrize("shape,mode", [((1, 2, 3), "bicubic"), ((1, 2, 3, 3, 3), "bicubic"),
                                        ((1, 2, 3), "bilinear"), ((1, 2, 3, 3, 3, 3), "area")])
@pytest.mark.torch_exact
def test_interpolate_rank_errors(shape, mode):
    torch = pytest.importorskip("torch")
    same_errors(lambda: F.interpolate(mt.zeros(*shape), size=2, mode=mode),
                lambda: torch.nn.functional.interpolate(torch.zeros(*shape), size=2, mode=mode))


def test_upsample_aliases(device):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        functional_against_torch(
            lambda lib, x: (lib.nn.functional.upsample_nearest(x, scale_factor=2),
                            lib.nn.functional.upsample_bilinear(x, size=(5, 4))),
            [seq(1, 2, 3, 3)], device)
    with pytest.warns(UserWarning, match="upsample_bilinear` is deprecated"):
        F.upsample_bilinear(mt.zeros(1, 1, 2, 2), scale_factor=2)


# ---- activations: integer inputs are rejected as torch does; hardtanh keeps integer dtypes ----
@pytest.mark.parametrize("name", ["softplus", "elu", "selu", "celu", "gelu", "silu", "mish",
                                  "hardswish", "hardsigmoid", "leaky_relu", "logsigmoid",
                                  "softshrink", "hardshrink", "glu", "rrelu"])
def test_activation_rejects_integer_input(name):
    torch = pytest.importorskip("torch")
    same_errors(lambda: getattr(F, name)(mt.tensor([[1, -2]])),
                lambda: getattr(torch.nn.functional, name)(torch.tensor([[1, -2]])))


def test_hardtanh_integer_and_bool_inputs():
    torch = pytest.importorskip("torch")
    for fn in (lambda lib, x: lib.nn.functional.hardtanh(x, -0.5, 2.5),
               lambda lib, x: lib.nn.functional.relu6(x)):
        ours, theirs = fn(mt, mt.tensor([7, -2, 1, 0])), fn(torch, torch.tensor([7, -2, 1, 0]))
        assert ours.dtype is mt.int64 and ours.tolist() == theirs.tolist()
    same_errors(lambda: F.hardtanh(mt.tensor([True])),
                lambda: torch.nn.functional.hardtanh(torch.tensor([True])))


# ---- binary_cross_entropy_with_logits: the gradient at a logit of exactly 0 -------------------
@pytest.mark.parametrize("pos_weight", [None, [2.0, 0.5, 3.0]])
def test_bce_with_logits_gradient_at_zero(device, pos_weight):
    target = np.array([[0.0, 1.0, 0.3], [1.0, 0.0, 0.7]])

    def fn(lib, x):
        pw = None if pos_weight is None else lib.tensor(pos_weight, dtype=x.dtype,
                                                        device=x.device)
        return lib.nn.functional.binary_cross_entropy_with_logits(
            x, lib.tensor(target, device=x.device), pos_weight=pw, reduction="none")
    functional_against_torch(fn, [np.array([[0.0, 0.0, 0.0], [0.0, 2.0, -3.0]])], device)


def test_bce_with_logits_gradient_at_zero_float32():
    x = mt.zeros(3, requires_grad=True)
    F.binary_cross_entropy_with_logits(x, mt.tensor([0.0, 1.0, 0.25]), reduction="sum").backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.5, -0.5, 0.25])


# ---- TripletMarginWithDistanceLoss was missing -------------------------------------------------
@pytest.mark.parametrize("swap", [False, True])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_triplet_margin_with_distance_loss(device, swap, reduction):
    def fn(lib, a, p, n):
        cosine = lambda x, y: 1 - lib.nn.functional.cosine_similarity(x, y)   # noqa: E731
        default = lib.nn.functional.triplet_margin_with_distance_loss(
            a, p, n, margin=0.5, swap=swap, reduction=reduction)
        custom = lib.nn.TripletMarginWithDistanceLoss(
            distance_function=cosine, margin=1.5, swap=swap, reduction=reduction)(a, p, n)
        return default, custom
    functional_against_torch(fn, [seq(3, 4), seq(3, 4, seed=1), seq(3, 4, seed=2)], device)


def test_triplet_margin_with_distance_loss_module_and_errors():
    torch = pytest.importorskip("torch")
    assert repr(mt.nn.TripletMarginWithDistanceLoss()) == \
        repr(torch.nn.TripletMarginWithDistanceLoss())
    assert list(mt.nn.TripletMarginWithDistanceLoss().state_dict()) == []
    same_errors(lambda: mt.nn.TripletMarginWithDistanceLoss(margin=0),
                lambda: torch.nn.TripletMarginWithDistanceLoss(margin=0))
    for shapes, kwargs in [([(2, 3), (2, 3), (3,)], {}), ([(2, 3)] * 3, {"reduction": "avg"}),
                           ([(2, 3)] * 3, {"margin": -1.0})]:
        same_errors(lambda: F.triplet_margin_with_distance_loss(
                        *(mt.zeros(*s) for s in shapes), **kwargs),
                    lambda: torch.nn.functional.triplet_margin_with_distance_loss(
                        *(torch.zeros(*s) for s in shapes), **kwargs))


# ---- a compact sweep of what the audit compared (all matched torch) ----------------------------
SWEEP = [
    ("MultiheadAttention", (8, 2), dict(kdim=5, vdim=6, add_bias_kv=True, add_zero_attn=True,
                                        batch_first=True), [(2, 3, 8), (2, 4, 5), (2, 4, 6)]),
    ("TransformerDecoderLayer", (8, 2, 16, 0.0), dict(activation="gelu", norm_first=True),
     [(3, 2, 8), (4, 2, 8)]),
    ("Conv2d", (4, 6, 3), dict(padding="same", dilation=2, groups=2, padding_mode="circular"),
     [(2, 4, 5, 6)]),
    ("AvgPool2d", (3, 2, 1), dict(ceil_mode=True, count_include_pad=False, divisor_override=None),
     [(2, 3, 7, 6)]),
    ("LPPool2d", (1.5, 3, 2), dict(ceil_mode=True), [(2, 3, 7, 6)]),
    ("AdaptiveMaxPool2d", ((3, 4),), dict(return_indices=True), [(2, 3, 7, 6)]),
    ("LSTM", (3, 5), dict(num_layers=2, bidirectional=True, proj_size=2, batch_first=True),
     [(2, 4, 3)]),
    ("GroupNorm", (2, 6), {}, [(2, 6, 3, 2)]),
    ("LocalResponseNorm", (3, 0.5, 0.5, 2.0), {}, [(2, 6, 3, 3)]),
    ("EmbeddingBag", (10, 3), dict(mode="max", padding_idx=1), []),
]


@pytest.mark.parametrize("name,args,kwargs,shapes", SWEEP, ids=[s[0] for s in SWEEP])
def test_sweep_matches_torch(device, name, args, kwargs, shapes):
    torch = pytest.importorskip("torch")
    if name == "EmbeddingBag":
        check_against_torch(mt.nn.EmbeddingBag(*args, **kwargs),
                            torch.nn.EmbeddingBag(*args, **kwargs), [], device,
                            lambda m, idx: m(idx), constants=[np.array([[1, 2, 4], [9, 1, 3]])])
        return
    arrays = [np.abs(seq(*s, seed=i)) + 0.1 if name == "LPPool2d" else seq(*s, seed=i)
              for i, s in enumerate(shapes)]
    check_against_torch(getattr(mt.nn, name)(*args, **kwargs),
                        getattr(torch.nn, name)(*args, **kwargs), arrays, device,
                        lambda m, *x: m(*x))


@pytest.mark.parametrize("momentum", [0.1, None])
def test_batchnorm_running_stats_over_steps(device, momentum):
    torch = pytest.importorskip("torch")
    ours = mt.nn.BatchNorm2d(3, momentum=momentum).double().to(device)
    theirs = torch.nn.BatchNorm2d(3, momentum=momentum).double()
    for step in range(3):
        x = seq(4, 3, 2, 2, seed=step) * 2 + 1
        np.testing.assert_allclose(value(ours(mt.tensor(x, device=device))),
                                   theirs(torch.tensor(x)).detach().numpy(), atol=1e-10)
    for name, buffer in theirs.named_buffers():
        np.testing.assert_allclose(value(dict(ours.named_buffers())[name]), buffer.numpy(),
                                   atol=1e-12, err_msg=name)


# ---- MultiLabelMarginLoss was missing ----------------------------------------------------------
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_multilabel_margin_loss(device, reduction):
    target = np.array([[3, 0, -1, 1], [0, 1, 2, 3], [1, -1, 0, 0], [2, 2, -1, 0], [-1, 0, 0, 0]])

    def fn(lib, x, x1):
        batched = lib.nn.MultiLabelMarginLoss(reduction=reduction)(
            x, lib.tensor(target, device=x.device))
        single = lib.nn.functional.multilabel_margin_loss(
            x1, lib.tensor([2, 0, -1, 3], device=x.device), reduction=reduction)
        return batched, single
    functional_against_torch(fn, [seq(5, 4), seq(4, seed=1)], device)


def test_multilabel_margin_loss_errors():
    torch = pytest.importorskip("torch")
    cases = [((2, 4), [[1, 2, -1, 0]]), ((2, 4), [[1, 2, -1]] * 2), ((2, 4), [[1, 5, -1, 0]] * 2),
             ((2, 4), [[1.0, 2.0, -1.0, 0.0]] * 2), ((2, 4), [[1, -2, -1, 0]] * 2),
             ((2, 2, 2), np.zeros((2, 2, 2), np.int64))]
    for shape, target in cases:
        same_errors(lambda: F.multilabel_margin_loss(mt.zeros(*shape), mt.tensor(target)),
                    lambda: torch.nn.functional.multilabel_margin_loss(torch.zeros(*shape),
                                                                       torch.tensor(target)))
    assert repr(mt.nn.MultiLabelMarginLoss()) == repr(torch.nn.MultiLabelMarginLoss())
