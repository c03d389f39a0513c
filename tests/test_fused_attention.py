"""The fused scaled_dot_product_attention node (functions/attention.py, _cpu/attention.pyx,
_gpu/kernels/attention.cu) against the composed reference (nn/functional/attention.py's
composed_attention) in float64 to 1e-10, forward and gradients; gradcheck and gradgradcheck;
dropout with a shared seed; torch's values where torch is installed; and that
nn.MultiheadAttention and the Transformer layers run it."""
import numpy as np
import pytest

import minitorch as mt
import minitorch.nn.functional as F
from minitorch.autograd import gradcheck, gradgradcheck
from minitorch.functions import attention as fused
from minitorch.nn.functional.attention import composed_attention
from torch_parity import value

NODE = "ScaledDotProductFlashAttentionForCpuBackward0"


def tensors(rng, device, *shapes, dtype=mt.float64, grad=True):
    return [mt.tensor(rng.standard_normal(s), dtype=dtype, device=device, requires_grad=grad)
            for s in shapes]


def check_against_composed(q, k, v, tol=1e-10, **kwargs):
    """Fused forward and gradients equal the composed path's (the node must be the fused one)."""
    out = F.scaled_dot_product_attention(q, k, v, **kwargs)
    assert out.grad_fn.name() == NODE
    expected = composed_attention(q, k, v, **kwargs)
    np.testing.assert_allclose(value(out), value(expected), rtol=tol,
                               atol=tol)
    g = mt.randn(*out.shape, dtype=out.dtype, device=out.device)
    ours = mt.autograd.grad(out, (q, k, v), g)
    theirs = mt.autograd.grad(expected, (q, k, v), g)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(value(a), value(b), rtol=tol, atol=tol)


CASES = [
    # (q shape, k shape, v shape, keyword arguments)
    ((2, 3, 5, 4), (2, 3, 7, 4), (2, 3, 7, 6), {}),
    ((2, 3, 37, 16), (2, 3, 70, 16), (2, 3, 70, 16), {"is_causal": True}),
    ((1, 2, 70, 8), (1, 2, 37, 8), (1, 2, 37, 5), {"is_causal": True, "scale": 0.3}),
    ((5, 3), (7, 3), (7, 2), {}),                                    # no batch axes
    ((2, 2, 3, 17, 5), (2, 2, 3, 9, 5), (2, 2, 3, 9, 5), {}),        # two batch axes + heads
    ((2, 4, 19, 6), (2, 2, 19, 6), (2, 2, 19, 3), {"enable_gqa": True, "is_causal": True}),
]


@pytest.mark.parametrize("q_shape, k_shape, v_shape, kwargs", CASES)
def test_fused_matches_composed(q_shape, k_shape, v_shape, kwargs, device, rng):
    check_against_composed(*tensors(rng, device, q_shape, k_shape, v_shape), **kwargs)


def test_masks_read_in_place(device, rng):
    """Bool and float masks broadcast from fewer or size-1 axes, fully masked rows."""
    q, k, v = tensors(rng, device, (2, 3, 19, 8), (2, 3, 21, 8), (2, 3, 21, 4))
    bool_mask = rng.random((19, 21)) > 0.4
    bool_mask[3] = False                            # every key masked: zeros, not NaN
    float_mask = rng.standard_normal((2, 1, 19, 21))
    float_mask[1, 0, 7] = -np.inf
    for mask in (bool_mask, float_mask, rng.random(21) > 0.5, rng.standard_normal((19, 1)),
                 rng.random((3, 1, 21)) > 0.3):
        check_against_composed(q, k, v, attn_mask=mt.tensor(mask, device=device))
    out = F.scaled_dot_product_attention(q, k, v, mt.tensor(bool_mask, device=device))
    assert (out[:, :, 3] == 0).all()
    out.sum().backward()
    assert (q.grad[:, :, 3] == 0).all()


def test_strided_views_are_not_copied_wrongly(device, rng):
    """MultiheadAttention's heads: permuted views of an (L, B, H·D) projection."""
    x, = tensors(rng, device, (13, 2, 3 * 12))
    q, k, v = (t.reshape(13, 2, 3, 4).permute(1, 2, 0, 3) for t in x.chunk(3, dim=-1))
    check_against_composed(q, k, v)
    t, = tensors(rng, device, (2, 3, 6, 9))             # non-unit last stride: compacted
    check_against_composed(t.mT, t.mT, t.mT)


def test_float32_matches_composed(device, rng):
    q, k, v = tensors(rng, device, (2, 3, 33, 16), (2, 3, 40, 16), (2, 3, 40, 16),
                      dtype=mt.float32)
    check_against_composed(q, k, v, tol=1e-5, is_causal=True)


def test_gradcheck_and_gradgradcheck(device, rng):
    q, k, v = tensors(rng, device, (1, 2, 3, 2), (1, 2, 4, 2), (1, 2, 4, 3))
    mask = mt.tensor(rng.random((3, 4)) > 0.3, device=device)
    for kwargs in ({"is_causal": True}, {"attn_mask": mask}, {"scale": 0.6}):
        fn = (lambda kw: lambda *a: F.scaled_dot_product_attention(*a, **kw))(kwargs)
        assert gradcheck(fn, (q, k, v))
        assert gradgradcheck(fn, (q, k, v))
    k1, v1 = tensors(rng, device, (1, 1, 4, 2), (1, 1, 4, 3))
    gqa = lambda *a: F.scaled_dot_product_attention(*a, enable_gqa=True)  # noqa: E731
    assert gradcheck(gqa, (q, k1, v1)) and gradgradcheck(gqa, (q, k1, v1))


def test_dropout_matches_composed_with_the_same_seed(device, rng):
    q, k, v = tensors(rng, device, (2, 2, 9, 4), (2, 2, 11, 4), (2, 2, 11, 5))
    mt.manual_seed(3)
    out = F.scaled_dot_product_attention(q, k, v, dropout_p=0.4)
    assert out.grad_fn.name() == NODE
    mt.manual_seed(3)
    expected = composed_attention(q, k, v, dropout_p=0.4)
    np.testing.assert_allclose(value(out), value(expected), rtol=1e-10)
    g = mt.randn(*out.shape, dtype=out.dtype, device=device)
    wanted = mt.autograd.grad(expected, (q, k, v), g)
    for a, b in zip(mt.autograd.grad(out, (q, k, v), g, retain_graph=True), wanted):
        np.testing.assert_allclose(value(a), value(b), rtol=1e-10, atol=1e-12)
    recorded = mt.autograd.grad(out, (q, k, v), g, create_graph=True)  # the composed formula
    for a, b in zip(recorded, wanted):
        np.testing.assert_allclose(value(a), value(b), rtol=1e-10, atol=1e-12)


def test_composed_path_for_what_the_node_does_not_cover(device, rng):
    """A mask that needs a gradient, mixed dtypes (torch's error) and dropout_p=1 compose."""
    q, k, v = tensors(rng, device, (1, 2, 3, 2), (1, 2, 4, 2), (1, 2, 4, 3))
    mask, = tensors(rng, device, (3, 4))
    out = F.scaled_dot_product_attention(q, k, v, mask)
    assert out.grad_fn.name() != NODE
    out.sum().backward()
    assert mask.grad is not None
    assert (F.scaled_dot_product_attention(q, k, v, dropout_p=1.0) == 0).all()
    with pytest.raises(RuntimeError):
        F.scaled_dot_product_attention(q, k.float(), v)


def test_matches_torch_float32(device, rng):
    torch = pytest.importorskip("torch")
    arrays = [rng.standard_normal(s).astype(np.float32)
              for s in ((2, 4, 24, 16), (2, 4, 30, 16), (2, 4, 30, 8))]
    mask = rng.random((24, 30)) > 0.5
    mask[5] = False
    for kwargs, theirs_kwargs in (({"is_causal": True}, {"is_causal": True}),
                                  ({"attn_mask": mt.tensor(mask, device=device)},
                                   {"attn_mask": torch.tensor(mask)})):
        ours = [mt.tensor(a, device=device, requires_grad=True) for a in arrays]
        theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
        out = F.scaled_dot_product_attention(*ours, **kwargs)
        expected = torch.nn.functional.scaled_dot_product_attention(*theirs, **theirs_kwargs)
        np.testing.assert_allclose(value(out), value(expected), atol=1e-5)
        g = rng.standard_normal(out.shape).astype(np.float32)
        out.backward(mt.tensor(g, device=device))
        expected.backward(torch.tensor(g))
        for a, b in zip(ours, theirs):
            np.testing.assert_allclose(value(a.grad), value(b.grad), atol=1e-5)


def _count_fused_calls(monkeypatch):
    calls = []
    apply = fused.ScaledDotProductFlashAttentionForCpu.apply

    def counting(*args):
        calls.append(1)
        return apply(*args)
    monkeypatch.setattr(fused.ScaledDotProductFlashAttentionForCpu, "apply", counting)
    return calls


def test_multihead_attention_and_transformer_layers_use_the_node(monkeypatch, device):
    calls = _count_fused_calls(monkeypatch)
    mt.manual_seed(0)
    mha = mt.nn.MultiheadAttention(16, 4, batch_first=True).to(device)
    x = mt.randn(2, 5, 16, device=device)
    mha(x, x, x, need_weights=False)[0].sum().backward()
    assert len(calls) == 1
    layer = mt.nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, dropout=0.1,
                                          batch_first=True).to(device)
    mask = mt.nn.Transformer.generate_square_subsequent_mask(5, device=device)
    layer(x, src_mask=mask, is_causal=True).sum().backward()        # training: dropout too
    layer.eval()
    layer(x, src_key_padding_mask=mt.tensor([[False] * 4 + [True]] * 2, device=device))
    assert len(calls) == 3
