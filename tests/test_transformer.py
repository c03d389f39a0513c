"""nn.Transformer and its encoder/decoder stacks and layers: torch's state-dict keys and reprs;
outputs and input/parameter gradients against torch with torch's weights copied in (post- and
pre-norm, relu / gelu / callable activations, bias=False, batch_first, unbatched, bool and float
masks, key padding, causal hints); the square subsequent mask; torch's errors."""
import math
import types
import warnings

import numpy as np
import pytest

import minitorch as mt
from minitorch.nn import transformer
from minitorch.nn.activation import GELU
from minitorch.nn.normalization import LayerNorm
from torch_parity import check_against_torch, same_errors, seq, value

# The classes under test, reached like torch.nn's (minitorch.nn does not export them yet).
ours_nn = types.SimpleNamespace(**{name: getattr(transformer, name)
                                   for name in transformer.__all__},
                                GELU=GELU, LayerNorm=LayerNorm)


@pytest.fixture(autouse=True)
def quiet():
    # torch warns about its nested-tensor fast path and about mixed bool/float masks.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def causal(size):
    return np.triu(np.full((size, size), -np.inf), 1)


def padding(batch, length, padded):
    """A key padding mask (True = ignored) hiding the last `padded` keys of the last sample."""
    mask = np.zeros((batch, length), bool)
    mask[-1, length - padded:] = True
    return mask


def encoder(nn, **kwargs):
    return nn.TransformerEncoder(nn.TransformerEncoderLayer(4, 2, 8, 0.1, **kwargs), 2,
                                 nn.LayerNorm(4))


def decoder(nn, **kwargs):
    return nn.TransformerDecoder(nn.TransformerDecoderLayer(4, 2, 8, 0.1, **kwargs), 2,
                                 nn.LayerNorm(4))


# (id, module factory over an nn namespace, input shapes, constants, call)
CASES = [
    ("encoder_layer_masks", lambda nn: nn.TransformerEncoderLayer(4, 2, 8, 0.1),
     [(3, 2, 4)], [causal(3) != 0, padding(2, 3, 1)],
     lambda m, x, mask, pad: m(x, src_mask=mask, src_key_padding_mask=pad)),
    ("encoder_layer_norm_first_gelu_no_bias",
     lambda nn: nn.TransformerEncoderLayer(4, 2, 8, 0.1, "gelu", norm_first=True,
                                           batch_first=True, bias=False),
     [(2, 3, 4)], [], lambda m, x: m(x)),
    ("encoder_layer_unbatched_causal", lambda nn: nn.TransformerEncoderLayer(4, 2, 8, 0.1),
     [(3, 4)], [causal(3)], lambda m, x, mask: m(x, src_mask=mask, is_causal=True)),
    ("encoder_detects_causal_mask", encoder, [(3, 2, 4)], [causal(3), padding(2, 3, 1)],
     lambda m, x, mask, pad: m(x, mask=mask, src_key_padding_mask=pad)),
    ("encoder_batch_first_custom_activation",
     lambda nn: encoder(nn, activation=nn.GELU("tanh"), batch_first=True, norm_first=True),
     [(2, 3, 4)], [], lambda m, x: m(x)),
    ("decoder_layer_masks", lambda nn: nn.TransformerDecoderLayer(4, 2, 8, 0.1),
     [(3, 2, 4), (5, 2, 4)], [causal(3), seq(3, 5, seed=9), padding(2, 5, 2)],
     lambda m, x, mem, mask, mem_mask, pad: m(x, mem, tgt_mask=mask, memory_mask=mem_mask,
                                              memory_key_padding_mask=pad)),
    ("decoder_norm_first_causal", lambda nn: decoder(nn, norm_first=True),
     [(3, 2, 4), (5, 2, 4)], [causal(3), padding(2, 3, 1)],
     lambda m, x, mem, mask, pad: m(x, mem, tgt_mask=mask, tgt_key_padding_mask=pad,
                                    tgt_is_causal=True)),
    ("transformer_batch_first",
     lambda nn: nn.Transformer(4, 2, 1, 1, 8, 0.1, batch_first=True),
     [(2, 5, 4), (2, 3, 4)], [padding(2, 5, 2), causal(3)],
     lambda m, src, tgt, pad, mask: m(src, tgt, tgt_mask=mask, src_key_padding_mask=pad,
                                      memory_key_padding_mask=pad)),
    ("transformer_unbatched", lambda nn: nn.Transformer(4, 2, 1, 1, 8, 0.1, "gelu"),
     [(5, 4), (3, 4)], [causal(5)], lambda m, src, tgt, mask: m(src, tgt, src_mask=mask)),
]


@pytest.mark.parametrize("make,shapes,constants,call", [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_matches_torch(device, make, shapes, constants, call):
    torch = pytest.importorskip("torch")
    arrays = [seq(*shape, seed=i) for i, shape in enumerate(shapes)]
    check_against_torch(make(ours_nn), make(torch.nn), arrays, device, call, constants)


def test_non_contiguous_input(device):
    torch = pytest.importorskip("torch")
    check_against_torch(ours_nn.TransformerEncoderLayer(4, 2, 8),
                        torch.nn.TransformerEncoderLayer(4, 2, 8), [seq(2, 3, 4)], device,
                        lambda m, x: m(x.transpose(0, 1)))


def test_dropout_is_active_in_training_only():
    mt.manual_seed(0)
    layer = ours_nn.TransformerEncoderLayer(4, 2, 8, dropout=0.5)
    x = mt.randn(3, 2, 4)
    assert not np.allclose(value(layer(x)), value(layer(x)))
    layer.eval()
    np.testing.assert_array_equal(value(layer(x)), value(layer(x)))


# ---- masks -------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [None, "float64"])
def test_square_subsequent_mask_matches_torch(device, dtype):
    torch = pytest.importorskip("torch")
    mask = transformer.Transformer.generate_square_subsequent_mask(
        4, device=device, dtype=getattr(mt, dtype) if dtype else None)
    expected = torch.nn.Transformer.generate_square_subsequent_mask(
        4, dtype=getattr(torch, dtype) if dtype else None)
    assert mask.device.type == device
    assert mask.dtype.name == str(expected.dtype).replace("torch.", "")
    np.testing.assert_array_equal(value(mask), expected.numpy())


def test_causal_mask_is_detected():
    detect = transformer._detect_is_causal_mask
    mask = transformer.Transformer.generate_square_subsequent_mask(3)
    assert detect(mask) and detect(mask, None, 3)
    assert not detect(mask, None, 4) and not detect(mask, False) and detect(None, True)
    assert not detect(mt.zeros(3, 3)) and not detect(None)


# ---- structure ---------------------------------------------------------------------------------
@pytest.mark.parametrize("make", [
    lambda nn: nn.Transformer(4, 2, 2, 1, 8),
    lambda nn: nn.Transformer(4, 2, 1, 2, 8, norm_first=True, bias=False, layer_norm_eps=1e-6),
    lambda nn: nn.TransformerDecoderLayer(4, 2, 8, activation=nn.GELU()),
    lambda nn: nn.TransformerEncoder(nn.TransformerEncoderLayer(4, 2, 8), 2),
], ids=["default", "norm_first_no_bias", "callable_activation", "encoder_without_norm"])
@pytest.mark.torch_exact
def test_structure_and_repr_match_torch(make):
    torch = pytest.importorskip("torch")
    ours, theirs = make(ours_nn), make(torch.nn)
    assert repr(ours) == repr(theirs)
    assert [(k, tuple(v.shape)) for k, v in ours.state_dict().items()] == \
        [(k, tuple(v.shape)) for k, v in theirs.state_dict().items()]


def test_transformer_init_is_xavier_for_matrices():
    mt.manual_seed(0)
    model = ours_nn.Transformer(16, 2, 1, 1, 48)
    for name, param in model.named_parameters():
        values = value(param)
        if param.ndim > 1:
            rows, cols = param.shape
            bound = math.sqrt(6 / (rows + cols))
            assert np.abs(values).max() <= bound and np.abs(values).max() > 0.8 * bound, name
    assert not value(model.encoder.layers[0].self_attn.in_proj_bias).any()
    assert model.encoder.layers[0].activation_relu_or_gelu == 1
    assert ours_nn.TransformerEncoderLayer(4, 2, activation="gelu").activation_relu_or_gelu == 2


def test_layers_are_independent_copies():
    layer = ours_nn.TransformerEncoderLayer(4, 2, 8)
    stack = ours_nn.TransformerEncoder(layer, 2)
    assert stack.layers[0].linear1.weight is not stack.layers[1].linear1.weight
    assert stack.layers[0].linear1.weight is not layer.linear1.weight


# ---- errors ------------------------------------------------------------------------------------
def run_transformer(batch_first, src_shape, tgt_shape):
    return lambda nn, lib: nn.Transformer(4, 2, 1, 1, 8, batch_first=batch_first)(
        lib.zeros(*src_shape), lib.zeros(*tgt_shape))


ERROR_CASES = [
    ("batch_mismatch", run_transformer(False, (5, 2, 4), (3, 3, 4))),
    ("batch_mismatch_batch_first", run_transformer(True, (2, 5, 4), (3, 3, 4))),
    ("feature_mismatch", run_transformer(False, (5, 2, 4), (3, 2, 5))),
    ("activation", lambda nn, lib: nn.TransformerEncoderLayer(4, 2, activation="tanh")),
    ("decoder_activation", lambda nn, lib: nn.TransformerDecoderLayer(4, 2, activation="elu")),
    ("causal_without_mask",
     lambda nn, lib: nn.TransformerEncoderLayer(4, 2, 8)(lib.zeros(3, 2, 4), is_causal=True)),
    ("decoder_causal_without_mask",
     lambda nn, lib: nn.TransformerDecoderLayer(4, 2, 8)(lib.zeros(3, 2, 4), lib.zeros(2, 2, 4),
                                                         tgt_is_causal=True)),
    ("wrong_d_model", lambda nn, lib: nn.TransformerEncoderLayer(4, 2, 8)(lib.zeros(3, 2, 5))),
    ("int_mask", lambda nn, lib: nn.TransformerEncoderLayer(4, 2, 8)(
        lib.zeros(3, 2, 4), src_mask=lib.zeros(3, 3, dtype=lib.int64))),
    ("heads_do_not_divide", lambda nn, lib: nn.TransformerEncoderLayer(5, 2)),
]


@pytest.mark.parametrize("run", [c[1] for c in ERROR_CASES], ids=[c[0] for c in ERROR_CASES])
def test_errors_match_torch(run):
    torch = pytest.importorskip("torch")
    same_errors(lambda: run(ours_nn, mt), lambda: run(torch.nn, torch))
