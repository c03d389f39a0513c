"""Layers composed of existing ops: Bilinear, LPPool1d/2d, LocalResponseNorm, Softmax2d,
ChannelShuffle, AdaptiveMaxPool1d, UpsamplingNearest2d/Bilinear2d, AlphaDropout,
FeatureAlphaDropout, EmbeddingBag and gumbel_softmax, plus nn.utils.rnn.pad_sequence /
unpad_sequence. Outputs and gradients are compared with torch on contiguous and stepped inputs,
gradients are checked by finite differences in float64, errors and reprs match torch's."""
import warnings

import numpy as np
import pytest

import minitorch as mt
import minitorch.nn as nn
import minitorch.nn.functional as F
from minitorch.autograd import gradcheck
from minitorch.nn.utils.rnn import pad_sequence, unpad_sequence
from torch_parity import check_against_torch, same_error, seq, value


def _leaf(lib, a, device, stepped):
    """A float64 leaf requiring grad, and the input made from it: itself, or the even columns
    of a twice-as-wide leaf (a non-contiguous view)."""
    data = np.repeat(a, 2, axis=-1) if stepped else a
    leaf = mt.tensor(data, device=device, requires_grad=True) if lib is mt else \
        lib.tensor(data, requires_grad=True)
    return leaf, (leaf[..., ::2] if stepped else leaf)


def compare(fn, arrays, device, stepped=False):
    """fn(lib, *inputs) in minitorch and torch: equal outputs and input gradients."""
    torch = pytest.importorskip("torch")
    ours = [_leaf(mt, a, device, stepped) for a in arrays]
    theirs = [_leaf(torch, a, None, stepped) for a in arrays]
    out, expected = fn(mt, *(x for _, x in ours)), fn(torch, *(x for _, x in theirs))
    assert out.shape == tuple(expected.shape) and out.device.type == device
    np.testing.assert_allclose(value(out), expected.detach().numpy(), rtol=1e-10, atol=1e-12)
    weights = seq(*expected.shape, seed=5)
    (out * mt.tensor(weights, device=device)).sum().backward()
    (expected * torch.tensor(weights)).sum().backward()
    for (mine, _), (their, _) in zip(ours, theirs):
        np.testing.assert_allclose(value(mine.grad), their.grad.numpy(), rtol=1e-9, atol=1e-10)


def check_grad(fn, *arrays, device="cpu"):
    assert gradcheck(fn, tuple(mt.tensor(a, device=device, requires_grad=True) for a in arrays))


# ---- Bilinear ----------------------------------------------------------------------------------
def test_bilinear_module_matches_torch(device):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    check_against_torch(nn.Bilinear(3, 4, 2), torch.nn.Bilinear(3, 4, 2),
                        [seq(5, 3), seq(5, 4, seed=1)], device, lambda m, a, b: m(a, b))


@pytest.mark.parametrize("stepped", [False, True])
def test_bilinear_functional_batched_and_strided(device, stepped):
    w, b = seq(2, 3, 4, seed=2), seq(2, seed=3)
    compare(lambda lib, x1, x2, w, b: lib.nn.functional.bilinear(x1, x2, w, b),
            [seq(2, 5, 3), seq(2, 5, 4, seed=1), w, b], device, stepped)
    compare(lambda lib, x1, x2, w: lib.nn.functional.bilinear(x1, x2, w),
            [seq(3), seq(4, seed=1), w], device, stepped)
    check_grad(lambda x1, x2, w: F.bilinear(x1, x2, w), seq(2, 3), seq(2, 4), w, device=device)


def test_bilinear_empty_and_errors():
    assert F.bilinear(mt.ones(0, 3), mt.ones(0, 4), mt.ones(2, 3, 4)).shape == (0, 2)
    for x1, x2, w, b in [((4, 3), (3, 4), (2, 3, 4), (2,)), ((4, 3), (4, 6), (2, 3, 4), (2,)),
                         ((4, 4), (4, 4), (2, 3, 4), (2,)), ((4, 3), (4, 4), (2, 3, 4), (3,)),
                         ((2, 1, 3), (4, 4), (2, 3, 4), (2,)), ((4, 3), (4, 4), (2, 3), (2,))]:
        same_error(lambda lib: lib.nn.functional.bilinear(
            lib.ones(x1), lib.ones(x2), lib.ones(w), lib.ones(b)))
    same_error(lambda lib: lib.nn.Bilinear(0, 2, 3))


# ---- pooling, normalization, softmax2d, channel shuffle ----------------------------------------
@pytest.mark.parametrize("norm_type,kwargs", [(2, {}), (1.5, {"stride": 1}),
                                              (3, {"ceil_mode": True, "stride": 2}),
                                              (float("inf"), {})])
@pytest.mark.torch_exact
def test_lp_pool_matches_torch(device, norm_type, kwargs):
    x = np.abs(seq(2, 3, 5, 7)) + 0.1          # fractional powers of negatives are NaN
    compare(lambda lib, x: lib.nn.LPPool2d(norm_type, (2, 3), **kwargs)(x), [x], device)
    compare(lambda lib, x: lib.nn.LPPool1d(norm_type, 3, **kwargs)(x), [x[0]], device,
            stepped=True)
    compare(lambda lib, x: lib.nn.functional.lp_pool2d(x, norm_type, 2), [x], device,
            stepped=True)


def test_lp_pool_gradients_and_errors():
    check_grad(lambda x: F.lp_pool2d(x, 2, 2), np.abs(seq(1, 2, 4, 4)) + 0.5)
    check_grad(lambda x: F.lp_pool1d(x, 3, 2, 1), np.abs(seq(2, 5)) + 0.5)
    same_error(lambda lib: lib.nn.functional.lp_pool2d(lib.ones(2, 3, 4, 4), 2, 5))


@pytest.mark.parametrize("shape", [(2, 5, 3), (2, 6, 3, 4), (1, 4, 2, 3, 2)])
def test_local_response_norm_matches_torch(device, shape):
    compare(lambda lib, x: lib.nn.LocalResponseNorm(3, alpha=0.1, beta=0.6, k=2.0)(x),
            [seq(*shape)], device, stepped=True)
    compare(lambda lib, x: lib.nn.functional.local_response_norm(x, 2), [seq(*shape)], device)


def test_local_response_norm_gradient_empty_and_errors():
    check_grad(lambda x: F.local_response_norm(x, 3, alpha=0.5), seq(1, 4, 3))
    assert F.local_response_norm(mt.ones(0, 3, 2), 2).shape == (0, 3, 2)
    same_error(lambda lib: lib.nn.functional.local_response_norm(lib.ones(2, 3), 2))


def test_softmax2d_matches_torch(device):
    compare(lambda lib, x: lib.nn.Softmax2d()(x), [seq(2, 3, 4, 2)], device, stepped=True)
    compare(lambda lib, x: lib.nn.Softmax2d()(x), [seq(3, 4, 2)], device)
    same_error(lambda lib: lib.nn.Softmax2d()(lib.ones(2, 3)))


def test_channel_shuffle_matches_torch(device):
    compare(lambda lib, x: lib.nn.ChannelShuffle(3)(x), [seq(2, 6, 2, 3)], device, stepped=True)
    compare(lambda lib, x: lib.nn.functional.channel_shuffle(x, 2), [seq(1, 4, 5)], device)
    assert F.channel_shuffle(mt.ones(0, 6, 3), 2).shape == (0, 6, 3)
    for shape, groups in [((2, 6, 3), 4), ((2, 6, 3), 0), ((6,), 2), ((2, 6), 2)]:
        same_error(lambda lib: lib.nn.functional.channel_shuffle(lib.ones(shape), groups))


@pytest.mark.parametrize("size", [3, 7, 2])
def test_adaptive_max_pool1d_matches_torch(device, size):
    torch = pytest.importorskip("torch")
    x = seq(2, 3, 7)
    compare(lambda lib, x: lib.nn.AdaptiveMaxPool1d(size)(x), [x], device, stepped=True)
    compare(lambda lib, x: lib.nn.functional.adaptive_max_pool1d(x, [size]), [x[0]], device)
    _, indices = F.adaptive_max_pool1d(mt.tensor(x, device=device), size, return_indices=True)
    expected = torch.nn.functional.adaptive_max_pool1d(torch.tensor(x), size, True)[1]
    np.testing.assert_array_equal(value(indices), expected.numpy())


def test_adaptive_max_pool1d_errors():
    for shape, size in [((2, 3, 7), (2, 3)), ((7,), 3), ((2, 0, 7), 3), ((2, 2, 7), -1)]:
        same_error(lambda lib: lib.nn.functional.adaptive_max_pool1d(lib.ones(shape), size))


@pytest.mark.parametrize("make", [lambda lib: lib.nn.UpsamplingNearest2d(scale_factor=2),
                                  lambda lib: lib.nn.UpsamplingNearest2d(size=(5, 3)),
                                  lambda lib: lib.nn.UpsamplingBilinear2d(scale_factor=2),
                                  lambda lib: lib.nn.UpsamplingBilinear2d(size=(3, 7))])
def test_upsampling_layers_match_torch(device, make):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")           # torch's deprecation warning
        compare(lambda lib, x: make(lib)(x), [seq(2, 3, 2, 4)], device, stepped=True)


# ---- alpha dropout ------------------------------------------------------------------------------
def _alpha_constants(p):
    alpha = 1.7580993408473766
    a = 1 / np.sqrt((alpha ** 2 * p + 1) * (1 - p))
    return a, alpha * a * p - alpha * a           # scale of kept units, value of dropped ones


def test_alpha_dropout_keeps_or_saturates_each_unit(device):
    mt.manual_seed(0)
    x = mt.tensor(seq(40, 50), device=device, requires_grad=True)
    out = nn.AlphaDropout(0.3)(x)
    a, dropped_value = _alpha_constants(0.3)
    shift = 1.7580993408473766 * a * 0.3
    kept = np.isclose(value(out), value(x) * a + shift, rtol=1e-12, atol=1e-12)
    dropped = np.isclose(value(out), dropped_value, rtol=1e-12)
    assert (kept | dropped).all() and 0.2 < dropped.mean() < 0.4
    out.sum().backward()
    np.testing.assert_allclose(value(x.grad), np.where(kept, a, 0.0), rtol=1e-12)


def test_alpha_dropout_keeps_zero_mean_unit_variance():
    mt.manual_seed(1)
    out = F.alpha_dropout(mt.randn(200_000, dtype=mt.float64), 0.2, training=True).numpy()
    assert abs(out.mean()) < 0.01 and abs(out.std() - 1) < 0.01


def test_feature_alpha_dropout_drops_whole_channels(device):
    mt.manual_seed(2)
    out = value(nn.FeatureAlphaDropout(0.5)(mt.tensor(seq(8, 6, 5), device=device)))
    _, dropped_value = _alpha_constants(0.5)
    channel_dropped = np.isclose(out, dropped_value, rtol=1e-12).all(-1)
    assert channel_dropped.any() and not channel_dropped.all()
    assert not np.isclose(out[~channel_dropped], dropped_value, rtol=1e-12).any()


def test_alpha_dropout_identities_and_errors():
    x = mt.tensor(seq(3, 4))
    assert F.alpha_dropout(x, 0.5) is x                              # training=False default
    assert nn.AlphaDropout(0.5).eval()(x) is x
    assert F.feature_alpha_dropout(x, 0.0, training=True) is x
    assert (F.alpha_dropout(x, 1.0, training=True).numpy() == 0).all()
    same_error(lambda lib: lib.nn.functional.alpha_dropout(lib.ones(2), 1.5))
    same_error(lambda lib: lib.nn.FeatureAlphaDropout(-0.1))
    same_error(lambda lib: lib.nn.functional.feature_alpha_dropout(lib.ones(3), 0.5, True))


# ---- EmbeddingBag ------------------------------------------------------------------------------
BAGS = [({"mode": "sum"}, [4, 1, 2, 2, 0, 3], [0, 2, 2, 5]),
        ({"mode": "mean"}, [4, 1, 2, 2, 0, 3], [0, 2, 2, 5]),
        ({"mode": "max"}, [4, 1, 2, 2, 0, 3], [0, 2, 2, 5]),
        ({"mode": "mean", "include_last_offset": True}, [4, 1, 2, 2, 0, 3], [0, 1, 6]),
        # torch's CPU kernel runs the last bag to the input's end, whatever the final offset
        ({"mode": "max", "include_last_offset": True}, [4, 1, 2, 2, 0, 3], [0, 1, 4]),
        ({"mode": "max", "padding_idx": 2}, [4, 1, 2, 2, 0, 2], [0, 2, 4, 5]),
        ({"mode": "mean", "padding_idx": -1}, [4, 1, 4, 2, 0, 3], [0, 1, 3]),
        ({"mode": "sum", "max_norm": 1.0}, [4, 1, 2, 2, 0, 3], [0, 3]),
        ({"mode": "max"}, [[4, 1, 2], [2, 0, 3]], None),
        ({"mode": "mean"}, [[4, 1, 2], [2, 0, 3]], None)]


@pytest.mark.parametrize("kwargs,indices,offsets", BAGS)
def test_embedding_bag_matches_torch(device, kwargs, indices, offsets):
    torch = pytest.importorskip("torch")
    constants = [np.array(indices)] + ([] if offsets is None else [np.array(offsets)])
    check_against_torch(nn.EmbeddingBag(5, 3, **kwargs), torch.nn.EmbeddingBag(5, 3, **kwargs),
                        [], device, lambda m, *c: m(*c), constants)


@pytest.mark.parametrize("two_d", [False, True])
def test_embedding_bag_per_sample_weights(device, two_d):
    torch = pytest.importorskip("torch")
    indices = np.array([[4, 1, 2], [2, 0, 3]]) if two_d else np.array([4, 1, 2, 2, 0, 3])
    constants = [indices] if two_d else [indices, np.array([0, 4])]
    check_against_torch(nn.EmbeddingBag(5, 3, mode="sum", padding_idx=0),
                        torch.nn.EmbeddingBag(5, 3, mode="sum", padding_idx=0),
                        [seq(*indices.shape)], device,
                        lambda m, w, *c: m(*c, per_sample_weights=w), constants)


def test_embedding_bag_empty_and_gradcheck():
    weight = mt.tensor(seq(5, 3), requires_grad=True)
    empty = F.embedding_bag(mt.tensor([], dtype=mt.int64), weight, mt.tensor([0, 0]), mode="max")
    assert empty.tolist() == [[0.0] * 3] * 2
    none = F.embedding_bag(mt.tensor([1, 2]), weight, mt.tensor([], dtype=mt.int64))
    assert none.shape == (0, 3)
    indices, offsets = mt.tensor([1, 3, 3, 0]), mt.tensor([0, 1, 1])
    for mode in ("sum", "mean", "max"):
        assert gradcheck(lambda w: F.embedding_bag(indices, w, offsets, mode=mode), (weight,))


EMBEDDING_BAG_ERRORS = [     # (indices, offsets, keyword arguments: lib -> value or value)
    ([1, 2, 3], [1, 2], {}), ([1, 2, 3], [0, 4], {}), ([1, 2, 7], [0], {}),
    ([1, 2, 3], [0, 1], {"mode": "avg"}), ([1, 2, 3], [[0, 1]], {}), ([1, 2, 3], None, {}),
    ([[[1]]], None, {}), ([1, 2, 3], [0, 1], {"padding_idx": 5}),
    ([1, 2, 3], [0], {"mode": "max", "scale_grad_by_freq": True}),
    ([1, 2, 3], [0], {"mode": "mean", "per_sample_weights": lambda lib: lib.ones(3)}),
    ([1, 2, 3], [0], {"mode": "sum", "per_sample_weights": lambda lib: lib.ones(2)}),
    ([1, 2, 3], [0], {"mode": "sum",
                      "per_sample_weights": lambda lib: lib.ones(3, dtype=lib.float64)}),
]


def test_embedding_bag_offsets_with_2d_input_are_refused():
    """torch's message names the offsets' type, which is library specific."""
    with pytest.raises(ValueError, match="^if input is 2D, then offsets has to be None, as input "
                                         "is treated is a mini-batch of fixed length sequences. "
                                         "However, found offsets of type <class 'minitorch"):
        F.embedding_bag(mt.tensor([[1, 2]]), mt.ones(5, 2), mt.tensor([0]))


@pytest.mark.parametrize("indices,offsets,kwargs", EMBEDDING_BAG_ERRORS)
def test_embedding_bag_errors_match_torch(indices, offsets, kwargs):
    def call(lib):
        options = {k: v(lib) if callable(v) else v for k, v in kwargs.items()}
        return lib.nn.functional.embedding_bag(
            lib.tensor(indices), lib.ones(5, 2),
            None if offsets is None else lib.tensor(offsets), **options)
    same_error(call)


# ---- gumbel_softmax -----------------------------------------------------------------------------
def test_gumbel_softmax_samples_the_softmax_distribution(device):
    mt.manual_seed(0)
    probabilities = np.array([0.1, 0.2, 0.7])
    logits = mt.tensor(np.log(np.tile(probabilities, (20_000, 1))), device=device)
    soft = F.gumbel_softmax(logits, tau=0.5)
    np.testing.assert_allclose(value(soft.sum(-1)), 1.0, rtol=1e-12)
    picked = np.bincount(value(soft.argmax(-1)), minlength=3) / 20_000
    np.testing.assert_allclose(picked, probabilities, atol=0.015)


def test_gumbel_softmax_hard_is_one_hot_with_soft_gradient(device):
    logits = mt.tensor(seq(4, 5), device=device, requires_grad=True)
    mt.manual_seed(3)
    hard = F.gumbel_softmax(logits, tau=2.0, hard=True, dim=1)
    assert sorted(set(value(hard).ravel().round(12))) == [0.0, 1.0]
    np.testing.assert_array_equal(value(hard).sum(1), 1.0)
    weights = mt.tensor(seq(4, 5, seed=1), device=device)
    (hard * weights).sum().backward()
    hard_grad = value(logits.grad)
    logits.grad = None
    mt.manual_seed(3)
    (F.gumbel_softmax(logits, tau=2.0, dim=1) * weights).sum().backward()
    np.testing.assert_allclose(hard_grad, value(logits.grad), rtol=1e-10, atol=1e-12)
    with pytest.warns(UserWarning, match="`eps` parameter is deprecated"):
        F.gumbel_softmax(logits, eps=1e-5)


# ---- nn.utils.rnn ------------------------------------------------------------------------------
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("side", ["right", "left"])
def test_pad_sequence_matches_torch(device, batch_first, side):
    torch = pytest.importorskip("torch")
    arrays = [seq(3, 2), seq(5, 2, seed=1), seq(1, 2, seed=2), seq(0, 2)]
    ours = [mt.tensor(a, device=device, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out = pad_sequence(ours, batch_first, -1.5, side)
    expected = torch.nn.utils.rnn.pad_sequence(theirs, batch_first, -1.5, side)
    np.testing.assert_array_equal(value(out), expected.detach().numpy())
    weights = seq(*expected.shape, seed=9)
    (out * mt.tensor(weights, device=device)).sum().backward()
    (expected * torch.tensor(weights)).sum().backward()
    for mine, their in zip(ours, theirs):
        np.testing.assert_array_equal(value(mine.grad), their.grad.numpy())
    lengths = mt.tensor([3, 5, 1, 0])
    for mine, a in zip(unpad_sequence(out.detach(), lengths, batch_first), arrays):
        if side == "right":
            np.testing.assert_array_equal(value(mine), a)


def test_pad_sequence_strided_1d_and_errors():
    a = mt.tensor(seq(4, 6), requires_grad=True)
    assert gradcheck(lambda x: pad_sequence([x[:, ::2], x[1:, 1::2]]), (a,))
    out = pad_sequence([mt.ones(2), mt.ones(3, dtype=mt.float64)], batch_first=True)
    assert out.dtype is mt.float32 and out.tolist() == [[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]]
    same_error(lambda lib: lib.nn.utils.rnn.pad_sequence([]))
    same_error(lambda lib: lib.nn.utils.rnn.pad_sequence([lib.ones(2)], padding_side="mid"))
    same_error(lambda lib: lib.nn.utils.rnn.pad_sequence(3))


# ---- reprs --------------------------------------------------------------------------------------
REPRS = [lambda lib: lib.nn.Bilinear(2, 3, 4, bias=False),
         lambda lib: lib.nn.LPPool2d(2, 3), lambda lib: lib.nn.LPPool1d(1.5, 3, stride=2),
         lambda lib: lib.nn.LocalResponseNorm(2), lambda lib: lib.nn.Softmax2d(),
         lambda lib: lib.nn.ChannelShuffle(2), lambda lib: lib.nn.AdaptiveMaxPool1d(3),
         lambda lib: lib.nn.UpsamplingNearest2d(scale_factor=2),
         lambda lib: lib.nn.UpsamplingBilinear2d(size=4), lambda lib: lib.nn.AlphaDropout(0.2),
         lambda lib: lib.nn.FeatureAlphaDropout(), lambda lib: lib.nn.EmbeddingBag(5, 3),
         lambda lib: lib.nn.EmbeddingBag(5, 3, mode="max", padding_idx=-1, max_norm=1.0,
                                         norm_type=1.0, scale_grad_by_freq=False)]


@pytest.mark.parametrize("make", REPRS)
def test_repr_matches_torch(make):
    torch = pytest.importorskip("torch")
    assert repr(make(mt)) == repr(make(torch))
