"""The 3-D members of the nn layer families (conv, transposed conv, pooling, adaptive pooling,
LP pooling, normalization, dropout, padding), max unpooling, CTC loss and the lazy modules:
values and errors vs torch, gradients by gradcheck in float64, on both devices."""
import math
import warnings

import numpy as np
import pytest

import minitorch as mt
import minitorch.nn.functional as F
from minitorch.autograd import gradcheck, gradgradcheck

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def _pair(rng, shape, device):
    """The same float64 values as a (minitorch, torch) pair."""
    values = rng.standard_normal(shape)
    return mt.tensor(values, device=device), torch.tensor(values)


def _close(ours, theirs, tol=1e-10):
    if isinstance(ours, tuple):
        for a, b in zip(ours, theirs):
            _close(a, b, tol)
        return
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.detach().cpu().numpy(), theirs.detach().numpy(), atol=tol)


def _same_error(ours, theirs):
    """Both calls raise the same exception type with the same message."""
    with pytest.raises(Exception) as expected:
        theirs()
    with pytest.raises(type(expected.value)) as got:
        ours()
    assert str(got.value) == str(expected.value)


def _leaf(t):
    return t.detach().requires_grad_()


# ---- convolution ------------------------------------------------------------------------------
CONV3D = [   # (input shape, weight shape, keyword arguments)
    ((1, 4, 3, 5, 3), (6, 2, 2, 3, 1), dict(stride=(1, 2, 1), padding=(1, 0, 1),
                                            dilation=(2, 1, 1), groups=2)),
    ((3, 4, 4, 3), (2, 3, 2, 2, 2), dict(padding="same")),
    ((1, 2, 3, 4, 4), (3, 2, 1, 2, 3), dict(stride=2, padding="valid")),
]


@pytest.mark.parametrize("shape, weight_shape, kwargs", CONV3D)
def test_conv3d_matches_torch_and_gradcheck(device, rng, shape, weight_shape, kwargs):
    (x, tx), (w, tw) = _pair(rng, shape, device), _pair(rng, weight_shape, device)
    (b, tb) = _pair(rng, weight_shape[:1], device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")         # torch's 'same' with an even kernel
        _close(F.conv3d(x, w, b, **kwargs), TF.conv3d(tx, tw, tb, **kwargs))
    assert gradcheck(lambda *a: F.conv3d(*a, **kwargs), (_leaf(x), _leaf(w), _leaf(b)))


def test_conv3d_non_contiguous_input_and_double_backward(device, rng):
    x, tx = _pair(rng, (2, 2, 3, 4, 3), device)
    w, tw = _pair(rng, (2, 2, 2, 2, 2), device)
    xt, txt = x.transpose(2, 4), tx.transpose(2, 4)
    _close(F.conv3d(xt, w, padding=1), TF.conv3d(txt, tw, padding=1))
    assert gradgradcheck(lambda a, b: F.conv3d(a.transpose(2, 4), b), (_leaf(x), _leaf(w)))


CONV_TRANSPOSE = [   # (spatial, input shape, weight shape, keyword arguments)
    (1, (2, 4, 5), (4, 3, 3), dict(stride=3, padding=1, output_padding=2, groups=2,
                                   dilation=2)),
    (1, (4, 3), (4, 2, 2), dict()),
    (3, (2, 4, 3, 2, 3), (4, 1, 2, 3, 2), dict(stride=(2, 1, 2), padding=(1, 0, 1),
                                               output_padding=(1, 0, 1), groups=2,
                                               dilation=(1, 2, 1))),
    (3, (2, 2, 2, 3), (2, 2, 2, 1, 2), dict(stride=2)),
]


@pytest.mark.parametrize("spatial, shape, weight_shape, kwargs", CONV_TRANSPOSE)
def test_conv_transpose_matches_torch_and_gradcheck(device, rng, spatial, shape, weight_shape,
                                                    kwargs):
    name = f"conv_transpose{spatial}d"
    ours, theirs = getattr(F, name), getattr(TF, name)
    (x, tx), (w, tw) = _pair(rng, shape, device), _pair(rng, weight_shape, device)
    out_channels = weight_shape[1] * kwargs.get("groups", 1)
    b, tb = _pair(rng, (out_channels,), device)
    _close(ours(x, w, b, **kwargs), theirs(tx, tw, tb, **kwargs))
    assert gradcheck(lambda *a: ours(*a, **kwargs), (_leaf(x), _leaf(w), _leaf(b)))


@pytest.mark.parametrize("name", ["Conv3d", "ConvTranspose1d", "ConvTranspose3d"])
def test_conv_modules_match_torch(device, rng, name):
    transposed = name.startswith("ConvTranspose")
    extra = dict(output_padding=1) if transposed else dict(padding_mode="circular")
    kwargs = dict(stride=2, padding=1, groups=2, **extra)
    ours, theirs = getattr(mt.nn, name)(4, 6, 3, **kwargs), getattr(torch.nn, name)(
        4, 6, 3, **kwargs)
    assert repr(ours) == repr(theirs)
    ours.to(device=device, dtype=mt.float64)
    with mt.no_grad():
        ours.weight.copy_(mt.tensor(theirs.weight.detach().double().numpy()))
        ours.bias.copy_(mt.tensor(theirs.bias.detach().double().numpy()))
    spatial = 1 if name.endswith("1d") else 3
    x, tx = _pair(rng, (2, 4) + (5,) * spatial, device)
    size = dict(output_size=(10,) * spatial) if transposed else {}
    _close(ours(x, **size), theirs.double()(tx, **size))


def test_conv_errors_match_torch():
    x5, w5 = mt.zeros(1, 2, 1, 1, 1), mt.zeros(2, 2, 2, 2, 2)
    tx5, tw5 = torch.zeros(1, 2, 1, 1, 1), torch.zeros(2, 2, 2, 2, 2)
    _same_error(lambda: F.conv3d(x5, w5), lambda: TF.conv3d(tx5, tw5))
    _same_error(lambda: F.conv3d(x5[0, 0], w5), lambda: TF.conv3d(tx5[0, 0], tw5))
    _same_error(lambda: F.conv_transpose3d(x5, w5, padding=3),
                lambda: TF.conv_transpose3d(tx5, tw5, padding=3))
    _same_error(lambda: F.conv_transpose3d(x5, w5, output_padding=1),
                lambda: TF.conv_transpose3d(tx5, tw5, output_padding=1))
    _same_error(lambda: F.conv_transpose1d(mt.zeros(1, 2, 5), mt.zeros(2, 2, 3),
                                           output_padding=1),
                lambda: TF.conv_transpose1d(torch.zeros(1, 2, 5), torch.zeros(2, 2, 3),
                                            output_padding=1))
    _same_error(lambda: mt.nn.ConvTranspose3d(2, 2, 3, padding_mode="reflect"),
                lambda: torch.nn.ConvTranspose3d(2, 2, 3, padding_mode="reflect"))
    _same_error(lambda: mt.nn.ConvTranspose1d(2, 2, 3)(mt.zeros(1, 2, 4), output_size=[20]),
                lambda: torch.nn.ConvTranspose1d(2, 2, 3)(torch.zeros(1, 2, 4),
                                                          output_size=[20]))


# ---- pooling ----------------------------------------------------------------------------------
POOL3D = [   # (function name, input shape, keyword arguments)
    ("max_pool3d", (2, 2, 5, 4, 5), dict(kernel_size=(2, 3, 2), stride=(1, 2, 2),
                                         padding=(1, 1, 0), dilation=(2, 1, 1), ceil_mode=True,
                                         return_indices=True)),
    ("max_pool3d", (2, 4, 4, 4), dict(kernel_size=2, return_indices=True)),
    ("avg_pool3d", (2, 2, 5, 4, 5), dict(kernel_size=(2, 3, 2), stride=(1, 2, 2),
                                         padding=(1, 1, 0), ceil_mode=True,
                                         count_include_pad=False)),
    ("avg_pool3d", (2, 2, 5, 4, 5), dict(kernel_size=(2, 3, 2), stride=(2, 2, 3),
                                         padding=(1, 1, 0), ceil_mode=True)),
    ("avg_pool3d", (2, 4, 4, 5), dict(kernel_size=3, stride=2, padding=1, divisor_override=5)),
    ("adaptive_avg_pool3d", (2, 2, 5, 4, 5), dict(output_size=(2, None, 3))),
    ("adaptive_avg_pool3d", (2, 4, 4, 4), dict(output_size=2)),
    ("adaptive_max_pool3d", (2, 2, 3, 3, 4), dict(output_size=(2, 2, 3), return_indices=True)),
    ("adaptive_max_pool3d", (2, 4, 4, 4), dict(output_size=2, return_indices=True)),
    ("lp_pool3d", (2, 2, 5, 4, 5), dict(norm_type=2, kernel_size=(2, 3, 2), ceil_mode=True)),
]


@pytest.mark.parametrize("name, shape, kwargs", POOL3D)
def test_pool3d_matches_torch_and_gradcheck(device, rng, name, shape, kwargs):
    x, tx = _pair(rng, shape, device)
    ours, theirs = getattr(F, name), getattr(TF, name)
    if name == "lp_pool3d":     # positive inputs: a power of a sum of squares
        x, tx = x.abs() + 0.5, tx.abs() + 0.5
    _close(ours(x, **kwargs), theirs(tx, **kwargs))
    values_only = {k: v for k, v in kwargs.items() if k != "return_indices"}
    # one plane of a stepped (non-contiguous) view of a larger input
    plane = x[(slice(0, 1),) * (x.ndim - 3)].cpu().numpy()
    wide = mt.tensor(np.repeat(plane, 2, axis=-1), device=device)
    assert gradcheck(lambda a: ours(a[..., ::2], **values_only), (_leaf(wide),))


def test_pool3d_modules_and_with_indices(device, rng):
    x, tx = _pair(rng, (2, 3, 4, 4, 6), device)
    pairs = [(mt.nn.MaxPool3d(2, return_indices=True), torch.nn.MaxPool3d(2, return_indices=True)),
             (mt.nn.AvgPool3d(2, 1, 1), torch.nn.AvgPool3d(2, 1, 1)),
             (mt.nn.AdaptiveAvgPool3d((1, None, 2)), torch.nn.AdaptiveAvgPool3d((1, None, 2))),
             (mt.nn.AdaptiveMaxPool3d(3), torch.nn.AdaptiveMaxPool3d(3)),
             (mt.nn.LPPool3d(1, 2), torch.nn.LPPool3d(1, 2))]
    for ours, theirs in pairs:
        assert repr(ours) == repr(theirs)
        _close(ours(x), theirs(tx))
    for name in ("max_pool1d", "max_pool2d", "max_pool3d"):
        spatial = int(name[-2])
        shape = (2, 3) + (4,) * spatial
        y, ty = _pair(rng, shape, device)
        _close(getattr(F, name + "_with_indices")(y, 2),
               getattr(TF, name + "_with_indices")(ty, 2))
        adaptive = f"adaptive_max_pool{spatial}d_with_indices"
        _close(getattr(F, adaptive)(y, 3), getattr(TF, adaptive)(ty, 3))


def test_pool3d_empty_batch(device):
    x = mt.zeros(0, 2, 4, 4, 4, device=device)
    assert tuple(F.max_pool3d(x, 2).shape) == (0, 2, 2, 2, 2)
    assert tuple(F.avg_pool3d(x, 2).shape) == (0, 2, 2, 2, 2)


@pytest.mark.parametrize("call", [
    lambda F_, x: F_.max_pool3d(x, (1, 2)),
    lambda F_, x: F_.avg_pool3d(x, 2, (1, 2)),
    lambda F_, x: F_.max_pool3d(x, 2, dilation=0),
    lambda F_, x: F_.max_pool3d(x, 2, padding=2),
    lambda F_, x: F_.max_pool3d(x, 3, padding=2, dilation=2, stride=1),
    lambda F_, x: F_.max_pool3d(x, 4),
    lambda F_, x: F_.avg_pool3d(x, 4),
    lambda F_, x: F_.max_pool3d(x[0, 0], 2),
    lambda F_, x: F_.max_pool3d(x[:, :0], 2),
    lambda F_, x: F_.avg_pool3d(x, 2, divisor_override=0),
    lambda F_, x: F_.adaptive_avg_pool3d(x, (2, 2)),
    lambda F_, x: F_.adaptive_max_pool3d(x, (2, 2)),
    lambda F_, x: F_.adaptive_max_pool3d(x[0, 0], 2),
    lambda F_, x: F_.adaptive_max_pool3d(x, (2, -1, 2)),
])
def test_pool3d_errors_match_torch(call):
    _same_error(lambda: call(F, mt.zeros(1, 2, 3, 6, 6)),
                lambda: call(TF, torch.zeros(1, 2, 3, 6, 6)))


# ---- max unpooling ----------------------------------------------------------------------------
UNPOOL = [   # (spatial, input shape, stride, output_size)
    (1, (2, 3, 7), None, None),
    (2, (2, 3, 6, 7), None, (7, 7)),
    (2, (3, 5, 5), 1, None),
    (3, (3, 4, 6, 6), None, None),
    (3, (1, 2, 5, 6, 7), 1, (1, 2, 5, 6, 7)),
]


@pytest.mark.parametrize("spatial, shape, stride, output_size", UNPOOL)
def test_max_unpool_matches_torch_and_gradcheck(device, rng, spatial, shape, stride,
                                                output_size):
    _, tx = _pair(rng, shape, device)
    values, indices = getattr(TF, f"max_pool{spatial}d")(tx, 2, stride, return_indices=True)
    v = mt.tensor(values.numpy(), device=device)
    i = mt.tensor(indices.numpy(), device=device)
    ours, theirs = getattr(F, f"max_unpool{spatial}d"), getattr(TF, f"max_unpool{spatial}d")
    _close(ours(v, i, 2, stride, output_size=output_size),
           theirs(values, indices, 2, stride, output_size=output_size))
    if stride is None:      # overlapping windows may repeat an index: no single gradient
        assert gradcheck(lambda a: ours(a, i, 2, stride, output_size=output_size), (_leaf(v),))
    module = getattr(mt.nn, f"MaxUnpool{spatial}d")(2, stride)
    assert repr(module) == repr(getattr(torch.nn, f"MaxUnpool{spatial}d")(2, stride))
    _close(module(v, i, output_size), theirs(values, indices, 2, stride, 0, output_size))


@pytest.mark.parametrize("call", [
    lambda F_, v, i: F_.max_unpool2d(v, i, 2, output_size=(6, 5)),
    lambda F_, v, i: F_.max_unpool2d(v, i, 2, output_size=(5,)),
    lambda F_, v, i: F_.max_unpool2d(v, i * 0 + 16, 2),
    lambda F_, v, i: F_.max_unpool1d(v[:, :, 0], i[:, :, 0] * 0 - 1, 2),
    lambda F_, v, i: F_.max_unpool2d(v, i.float(), 2),
    lambda F_, v, i: F_.max_unpool2d(v, i[..., :1], 2),
    lambda F_, v, i: F_.max_unpool2d(v[0, 0], i[0, 0], 2),
    lambda F_, v, i: F_.max_unpool3d(v[0], i[0], 2),
    lambda F_, v, i: F_.max_unpool3d(v.unsqueeze(2), i.unsqueeze(2) * 0 + 40, 2),
])
def test_max_unpool_errors_match_torch(call):
    values, indices = TF.max_pool2d(torch.randn(1, 2, 4, 4), 2, return_indices=True)
    ours = (mt.tensor(values.numpy()), mt.tensor(indices.numpy()))
    _same_error(lambda: call(F, *ours), lambda: call(TF, values, indices))


# ---- normalization, dropout, padding ----------------------------------------------------------
@pytest.mark.torch_exact
def test_batch_and_instance_norm_3d(device, rng):
    x, tx = _pair(rng, (3, 2, 2, 3, 2), device)
    for ours, theirs in ((mt.nn.BatchNorm3d(2), torch.nn.BatchNorm3d(2)),
                         (mt.nn.InstanceNorm3d(2, affine=True, track_running_stats=True),
                          torch.nn.InstanceNorm3d(2, affine=True, track_running_stats=True))):
        assert repr(ours) == repr(theirs)
        ours.to(device=device, dtype=mt.float64)
        _close(ours(x), theirs.double()(tx))
        _close(ours.running_var, theirs.running_var)
    _same_error(lambda: mt.nn.BatchNorm3d(2)(mt.zeros(2, 2, 3, 3)),
                lambda: torch.nn.BatchNorm3d(2)(torch.zeros(2, 2, 3, 3)))
    _same_error(lambda: mt.nn.InstanceNorm3d(2)(mt.zeros(2, 2, 3)),
                lambda: torch.nn.InstanceNorm3d(2)(torch.zeros(2, 2, 3)))


def test_dropout3d_drops_whole_channels(device):
    x = mt.ones(4, 8, 2, 3, 2, device=device)
    out = mt.nn.Dropout3d(0.5)(x).cpu().numpy()
    per_channel = out.reshape(4, 8, -1)
    assert set(np.unique(per_channel)) <= {0.0, 2.0}
    assert (per_channel.min(-1) == per_channel.max(-1)).all()
    unbatched = F.dropout3d(mt.ones(8, 2, 2, 2, device=device), 0.5).cpu().numpy()
    assert (unbatched.reshape(8, -1).min(-1) == unbatched.reshape(8, -1).max(-1)).all()
    assert repr(mt.nn.Dropout3d()) == repr(torch.nn.Dropout3d())
    with pytest.warns(UserWarning, match="dropout3d: Received a 2-D input"):
        F.dropout3d(mt.ones(2, 3, device=device))


@pytest.mark.parametrize("name, args", [
    ("ZeroPad3d", ((1, 0, 2, 1, 0, 1),)), ("ConstantPad3d", (1, 2.5)),
    ("ReflectionPad3d", ((1, 2, 0, 1, 1, 1),)), ("ReplicationPad3d", (2,)),
    ("CircularPad3d", ((1, 0, 1, 2, 0, 1),)),
])
def test_pad3d_modules(device, rng, name, args):
    x, tx = _pair(rng, (2, 2, 3, 3, 4), device)
    ours, theirs = getattr(mt.nn, name)(*args), getattr(torch.nn, name)(*args)
    assert repr(ours) == repr(theirs)
    _close(ours(x), theirs(tx))
    _close(ours(x[0]), theirs(tx[0]))
    assert gradcheck(ours, (_leaf(x[:1]),))


# ---- CTC loss ---------------------------------------------------------------------------------
def _ctc_case(seed, T, N, C, S, input_lengths=None, target_lengths=None, targets=None):
    gen = torch.Generator().manual_seed(seed)
    log_probs = torch.randn(T, N, C, dtype=torch.float64, generator=gen).log_softmax(2)
    if targets is None:
        targets = torch.randint(1, C, (N, S), generator=gen)
    if target_lengths is None:
        target_lengths = torch.randint(0, S + 1, (N,), generator=gen)
    if input_lengths is None:
        input_lengths = torch.randint(T // 2, T + 1, (N,), generator=gen)
    return log_probs, targets, torch.as_tensor(input_lengths), torch.as_tensor(target_lengths)


def _ctc_compare(device, log_probs, targets, input_lengths, target_lengths, **kwargs):
    expected = TF.ctc_loss(log_probs.requires_grad_(), targets, input_lengths, target_lengths,
                           **kwargs)
    grad, = torch.autograd.grad(expected.sum(), log_probs)
    ours_lp = mt.tensor(log_probs.detach().numpy(), device=device, requires_grad=True)
    ours = F.ctc_loss(ours_lp, *(mt.tensor(t.numpy(), device=device) for t in
                                 (targets, input_lengths, target_lengths)), **kwargs)
    ours.sum().backward()
    _close(ours, expected, 1e-9)
    np.testing.assert_allclose(ours_lp.grad.cpu().numpy(), grad.numpy(), atol=1e-9)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_ctc_loss_padded_targets(device, reduction):
    case = _ctc_case(0, 12, 4, 5, 4)
    _ctc_compare(device, *case, reduction=reduction)


def test_ctc_loss_concatenated_targets_and_repeats(device):
    log_probs, _, input_lengths, _ = _ctc_case(1, 9, 3, 5, 4, input_lengths=[9, 7, 8])
    targets = torch.tensor([1, 1, 2, 3, 3, 3, 2])    # repeated labels need a blank between
    _ctc_compare(device, log_probs, targets, input_lengths, torch.tensor([3, 3, 1]),
                 reduction="mean")
    _ctc_compare(device, log_probs, targets, input_lengths, torch.tensor([3, 3, 1]), blank=4)


def test_ctc_loss_unbatched_and_raw_scores(device):
    log_probs, targets, _, _ = _ctc_case(2, 7, 1, 5, 3)
    _ctc_compare(device, log_probs[:, 0], targets[0], torch.tensor(6), torch.tensor(3))
    scores = torch.randn(6, 2, 4, dtype=torch.float64)   # torch's gradient formula holds as is
    _ctc_compare(device, scores, torch.tensor([[1, 2], [3, 3]]), torch.tensor([6, 5]),
                 torch.tensor([2, 2]), reduction="sum")


@pytest.mark.parametrize("zero_infinity", [False, True])
def test_ctc_loss_impossible_and_empty(device, zero_infinity):
    # sample 0 cannot fit (needs 4 steps), 1 has an empty input and target, 2 empty input only
    log_probs, targets, _, _ = _ctc_case(3, 3, 3, 4, 3, targets=torch.tensor([[1, 1, 2]] * 3))
    input_lengths, target_lengths = torch.tensor([3, 0, 0]), torch.tensor([3, 0, 2])
    expected = TF.ctc_loss(log_probs, targets, input_lengths, target_lengths, reduction="none",
                           zero_infinity=zero_infinity)
    ours = F.ctc_loss(mt.tensor(log_probs.numpy(), device=device), mt.tensor(targets.numpy()),
                      [3, 0, 0], (3, 0, 2), reduction="none", zero_infinity=zero_infinity)
    _close(ours, expected)
    if zero_infinity:
        _ctc_compare(device, log_probs, targets, input_lengths, target_lengths,
                     zero_infinity=True)


def test_ctc_loss_gradcheck_through_log_softmax(device, rng):
    x, _ = _pair(rng, (6, 2, 4), device)
    targets, lengths = mt.tensor([[1, 2], [3, 1]], device=device), mt.tensor([6, 5])

    def loss(scores):
        return F.ctc_loss(scores.log_softmax(2), targets, lengths, mt.tensor([2, 1]))
    assert gradcheck(loss, (_leaf(x),))


def test_ctc_loss_module():
    log_probs, targets, input_lengths, target_lengths = _ctc_case(4, 8, 2, 5, 3)
    ours = mt.nn.CTCLoss(blank=0, reduction="sum", zero_infinity=True)
    assert repr(ours) == repr(torch.nn.CTCLoss())
    expected = torch.nn.CTCLoss(reduction="sum", zero_infinity=True)(
        log_probs, targets, input_lengths, target_lengths)
    inputs = (log_probs, targets, input_lengths, target_lengths)
    _close(ours(*(mt.tensor(t.numpy()) for t in inputs)), expected)


@pytest.mark.parametrize("call", [
    lambda F_, lp, tg, il, tl: F_.ctc_loss(lp, tg, il, tl, reduction="foo"),
    lambda F_, lp, tg, il, tl: F_.ctc_loss(lp, tg, il, tl, blank=4),
    lambda F_, lp, tg, il, tl: F_.ctc_loss(lp, tg, il, tl * 2),
    lambda F_, lp, tg, il, tl: F_.ctc_loss(lp, tg, il + 1, tl),
    lambda F_, lp, tg, il, tl: F_.ctc_loss(lp, tg, il - 7, tl),
    lambda F_, lp, tg, il, tl: F_.ctc_loss(lp, tg, il, tl - 3),
    lambda F_, lp, tg, il, tl: F_.ctc_loss(lp, tg, il[:1], tl),
    lambda F_, lp, tg, il, tl: F_.ctc_loss(lp, tg, il, tl[:1]),
    lambda F_, lp, tg, il, tl: F_.ctc_loss(lp, tg.reshape(-1)[:4], il, tl),
    lambda F_, lp, tg, il, tl: F_.ctc_loss(lp, tg, il, tl.double()),
    lambda F_, lp, tg, il, tl: F_.ctc_loss(lp.unsqueeze(0), tg, il, tl),
    lambda F_, lp, tg, il, tl: F_.ctc_loss(lp[:0], tg, il * 0, tl),
])
def test_ctc_loss_errors_match_torch(call):
    log_probs, targets = torch.randn(6, 2, 4).log_softmax(2), torch.tensor([[1, 2, 2], [3, 1, 0]])
    lengths = torch.tensor([6, 5]), torch.tensor([3, 2])
    ours = [mt.tensor(t.numpy()) for t in (log_probs, targets) + lengths]
    _same_error(lambda: call(F, *ours), lambda: call(TF, log_probs, targets, *lengths))


def test_ctc_loss_cost():
    """T=50, N=16, C=20, S=10 forward and backward stay cheap (two recursions of T steps)."""
    log_probs, targets, input_lengths, target_lengths = _ctc_case(5, 50, 16, 20, 10)
    lp = mt.tensor(log_probs.numpy(), requires_grad=True)
    loss = F.ctc_loss(lp, *(mt.tensor(t.numpy()) for t in (targets, input_lengths,
                                                           target_lengths)))
    loss.backward()
    expected = TF.ctc_loss(log_probs, targets, input_lengths, target_lengths)
    assert math.isclose(loss.item(), expected.item(), rel_tol=1e-9)


# ---- lazy modules -----------------------------------------------------------------------------
LAZY = [   # (class name, constructor arguments, input shape, the class it becomes)
    ("LazyLinear", (3,), (2, 5), "Linear"),
    ("LazyConv1d", (4, 3), (2, 3, 8), "Conv1d"),
    ("LazyConv2d", (4, 3), (6, 5, 5), "Conv2d"),
    ("LazyConv3d", (4, 2), (1, 2, 3, 3, 3), "Conv3d"),
    ("LazyConvTranspose1d", (4, 3), (2, 3, 5), "ConvTranspose1d"),
    ("LazyConvTranspose2d", (4, 2), (2, 2, 3, 3), "ConvTranspose2d"),
    ("LazyConvTranspose3d", (2, 2), (2, 3, 2, 2, 2), "ConvTranspose3d"),
    ("LazyBatchNorm1d", (), (4, 3), "BatchNorm1d"),
    ("LazyBatchNorm2d", (), (2, 3, 2, 2), "BatchNorm2d"),
    ("LazyBatchNorm3d", (), (2, 3, 2, 2, 2), "BatchNorm3d"),
    ("LazyInstanceNorm1d", (), (2, 3, 4), "InstanceNorm1d"),
    ("LazyInstanceNorm2d", (), (2, 3, 2, 2), "InstanceNorm2d"),
    ("LazyInstanceNorm3d", (), (2, 3, 2, 2, 2), "InstanceNorm3d"),
]


@pytest.mark.torch_exact
@pytest.mark.parametrize("name, args, shape, becomes", LAZY)
def test_lazy_modules_materialize_like_torch(device, rng, name, args, shape, becomes):
    extra = dict(affine=True, track_running_stats=True) if "Instance" in name else {}
    ours = getattr(mt.nn, name)(*args, device=device, dtype=mt.float64, **extra)
    theirs = getattr(torch.nn, name)(*args, dtype=torch.float64, **extra)
    assert repr(ours) == repr(theirs)
    assert isinstance(ours.weight, mt.nn.UninitializedParameter)
    optimizer = mt.optim.SGD(ours.parameters(), lr=0.1)     # made before the first call
    x, tx = _pair(rng, shape, device)
    out = ours(x)
    expected = theirs(tx)
    assert type(ours) is getattr(mt.nn, becomes) and repr(ours) == repr(theirs)
    for (n, p), (tn, tp) in zip(ours.named_parameters(), theirs.named_parameters()):
        assert n == tn and type(p) is mt.nn.Parameter and tuple(p.shape) == tuple(tp.shape)
        assert p.device.type == device and p.dtype is mt.float64
    for (n, b), (tn, tb) in zip(ours.named_buffers(), theirs.named_buffers()):
        assert n == tn and tuple(b.shape) == tuple(tb.shape)
    assert tuple(out.shape) == tuple(expected.shape)
    before = [p.detach().clone() for p in ours.parameters()]
    out.sum().backward()
    optimizer.step()    # the optimizer updates the materialised parameters
    assert any((p.detach() != b).any().item() for p, b in zip(ours.parameters(), before))


def test_lazy_errors_match_torch():
    _same_error(lambda: mt.nn.LazyConv2d(4, 3, groups=2)(mt.zeros(1, 3, 4, 4)),
                lambda: torch.nn.LazyConv2d(4, 3, groups=2)(torch.zeros(1, 3, 4, 4)))
    with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized"):
        mt.nn.LazyLinear(2).weight.shape


@pytest.mark.torch_exact
def test_lazy_instance_norms_default_to_affine_with_running_stats_like_torch():
    torch = pytest.importorskip("torch")
    ours, theirs = mt.nn.LazyInstanceNorm1d(), torch.nn.LazyInstanceNorm1d()
    x = [[[1., 2., 4.]]]
    ours(mt.tensor(x)), theirs(torch.tensor(x))
    assert repr(ours) == repr(theirs)
    ours.eval(), theirs.eval()
    np.testing.assert_allclose(ours(mt.tensor(x)).detach().numpy(),
                               theirs(torch.tensor(x)).detach().numpy(), rtol=1e-6)


def test_a_lazy_module_loads_a_checkpoint_before_its_first_input():
    source, lazy = mt.nn.Conv2d(2, 4, 3), mt.nn.LazyConv2d(4, 3)
    lazy.load_state_dict(source.state_dict())
    x = mt.randn(1, 2, 5, 5)
    np.testing.assert_allclose(lazy(x).detach().numpy(), source(x).detach().numpy(), rtol=1e-6)
    assert type(lazy) is mt.nn.Conv2d
