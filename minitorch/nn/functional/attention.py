"""torch.nn.functional.scaled_dot_product_attention, composed from matmul, softmax and
dropout.
"""
import math

import minitorch as mt
from ... import dtypes
from ...functions.reduce import softmax as _softmax
from ._scalars import _constant
from .dropouts import dropout


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    """softmax(q kᵀ · scale + mask) v, as torch.nn.functional.scaled_dot_product_attention: a
    bool mask marks the positions that may be attended, a float mask is added, and a query
    row with every position masked gets zero weights (torch's safe softmax), not NaN."""
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set "
                           "when is_causal=True")
    if enable_gqa and key.ndim >= 3 and key.shape[-3] != query.shape[-3]:
        key, value = (_repeat_heads(t, query.shape[-3]) for t in (key, value))
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    scores = (query @ key.mT) * scale
    length, source = query.shape[-2], key.shape[-2]
    if is_causal:
        # Position i attends to j <= i (torch's lower-triangular causal mask).
        rows = mt.arange(length, device=query.device).unsqueeze(1)
        attn_mask = mt.arange(source, device=query.device) <= rows
    if attn_mask is None:
        weights = _softmax(scores, -1)
    else:
        if attn_mask.dtype is dtypes.bool_:
            scores = scores.masked_fill(attn_mask.logical_not(), -math.inf)
        else:
            scores = scores + attn_mask
        weights = _safe_softmax(scores)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p)
    return weights @ value


def _safe_softmax(scores):
    """softmax over the last axis, with rows that are entirely -inf giving zeros; such rows
    are replaced by 0 before the softmax so no NaN reaches forward or backward."""
    dead = (scores == -math.inf).all(-1, keepdim=True)
    weights = _softmax(mt.where(dead, _constant(0.0, scores), scores), -1)
    return mt.where(dead, _constant(0.0, weights), weights)


def _repeat_heads(t, heads):
    """(…, Hk, S, E) → (…, heads, S, E): each key/value head serves heads/Hk query heads."""
    if heads % t.shape[-3]:
        raise RuntimeError(f"number of heads in key/value must divide number of heads in query "
                           f"({t.shape[-3]} does not divide {heads})")
    groups = heads // t.shape[-3]
    expanded = t.unsqueeze(-3).expand(*t.shape[:-2], groups, *t.shape[-2:])
    return expanded.reshape(*t.shape[:-3], heads, *t.shape[-2:])
