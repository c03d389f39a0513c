"""torch.nn.functional.scaled_dot_product_attention: one fused node (functions/attention.py)
where the shapes allow, else composed from matmul, softmax and dropout (the reference the fused
kernels are tested against).
"""
import math

import minitorch as mt
from ... import dtypes
from ...functions.autocast_policy import LOWER, autocast_op
from ...functions.attention import (ScaledDotProductFlashAttentionForCpu, attention_weights,
                                    repeat_heads)
from .dropouts import dropout, keep_noise


@autocast_op(LOWER)
def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    """softmax(q kᵀ · scale + mask) v, as torch.nn.functional.scaled_dot_product_attention: a
    bool mask marks the positions that may be attended, a float mask is added, and a query
    row with every position masked gets zero weights (torch's safe softmax), not NaN.

    Dropout (dropout_p > 0) draws its keep mask as F.dropout does on the weights, one value per
    weight: on the CPU torch's own noise, so a seeded run drops the weights torch's drops."""
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set "
                           "when is_causal=True")
    if _fusable(query, key, value, attn_mask, dropout_p, enable_gqa):
        scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
        keep = None
        if dropout_p > 0.0:
            keep = keep_noise(query, dropout_p, (*query.shape[:-1], key.shape[-2])) > 0
        return ScaledDotProductFlashAttentionForCpu.apply(
            query, key, value, attn_mask, keep, scale, is_causal, 1.0 / (1.0 - dropout_p))
    return composed_attention(query, key, value, attn_mask, dropout_p, is_causal, scale,
                              enable_gqa)


def composed_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
                       scale=None, enable_gqa=False):
    """scaled_dot_product_attention from matmul, softmax and dropout, the weights formed."""
    if enable_gqa and key.ndim >= 3 and key.shape[-3] != query.shape[-3]:
        key, value = (repeat_heads(t, query.shape[-3]) for t in (key, value))
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    weights = attention_weights(query, key, attn_mask, scale, is_causal)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p)
    return weights @ value


def _fusable(query, key, value, mask, dropout_p, enable_gqa):
    """The fused node computes this call: float q, k, v of one dtype and device with equal
    batch dims (or grouped key/value heads), a bool or q-dtype mask that needs no gradient and
    broadcasts to the weights, 0 <= dropout_p < 1. Anything else, including every error case,
    takes the composed path."""
    tensors = (query, key, value)
    if not all(isinstance(t, mt.Tensor) for t in tensors):
        return False
    dtype, device, ndim = query.dtype, query.device, query.ndim
    if dtype not in (dtypes.float32, dtypes.float64) or ndim < 2 or query.shape[-1] == 0:
        return False
    if any(t.dtype is not dtype or t.device != device or t.ndim != ndim for t in (key, value)):
        return False
    if key.shape[-1] != query.shape[-1] or value.shape[-2] != key.shape[-2]:
        return False
    if not 0.0 <= dropout_p < 1.0:
        return False
    if key.shape[:-2] != query.shape[:-2] or value.shape[:-2] != key.shape[:-2]:
        grouped = (enable_gqa and ndim >= 3 and key.shape[:-2] == value.shape[:-2]
                   and key.shape[:-3] == query.shape[:-3] and key.shape[-3] > 0
                   and query.shape[-3] % key.shape[-3] == 0)
        if not grouped:
            return False
    return mask is None or _fusable_mask(mask, query, key)


def _fusable_mask(mask, query, key):
    if not isinstance(mask, mt.Tensor) or mask.device != query.device or mask.requires_grad:
        return False
    if mask.dtype is not dtypes.bool_ and mask.dtype is not query.dtype:
        return False
    target = (*query.shape[:-1], key.shape[-2])
    if mask.ndim > len(target):
        return False
    return all(m in (1, t) for m, t in zip(reversed(mask.shape), reversed(target)))
