"""torch.nn.functional.scaled_dot_product_attention as one node: a fused forward kernel (online
softmax: the (L, S) weights are never formed) and a fused backward kernel that recomputes the
weights from the saved per-row logsumexp (minitorch/_cpu/attention.pyx,
minitorch/_gpu/kernels/attention.cu). When a graph of the gradient is asked for
(create_graph=True) the backward is the composed formula in Tensor ops instead, so double
backward works as with torch's math backend.

Each operand is described to the kernels as planes (one per batch·head) of rows: a table of plane
offsets into its buffer plus a row stride, so permuted heads (nn.MultiheadAttention's views),
grouped-query key/value heads and broadcast masks are read in place, without copies.
"""
import functools
import math

import numpy as np

from .. import dtypes
from ..autograd import KernelFunction, is_grad_enabled
from ..ndarray import shape_numel
from ..opcodes import ReduceOp
from ..tensor import arange, wrap
from .reduce import softmax

__all__ = []   # nn/functional/attention.py's scaled_dot_product_attention runs these


def plane_offsets(nd, batch):
    """Element offsets (int64) of the trailing (rows, cols) planes of NDArray nd for every index
    of `batch`, nd's batch axes aligned right, size-1 and missing axes broadcast."""
    return _offsets(nd.shape[:-2], nd.strides[:-2], nd.offset, tuple(batch))


@functools.lru_cache(maxsize=512)
def _offsets(shape, strides, offset, batch):
    """plane_offsets of a layout (a training step asks for the same few layouts every time)."""
    total = np.full(batch, offset, dtype=np.int64)
    lead = len(batch) - len(shape)
    for d, (size, stride) in enumerate(zip(shape, strides)):
        if size != 1:
            steps = np.arange(size, dtype=np.int64) * stride
            total = total + steps.reshape((-1,) + (1,) * (len(batch) - 1 - lead - d))
    total = total.reshape(-1)
    total.flags.writeable = False
    return total


def _unit_columns(nd):
    """nd itself when its last axis has unit stride (what the kernels read), else a compact copy."""
    return nd if nd.shape[-1] <= 1 or nd.strides[-1] == 1 else nd.compact()


def _row_stride(nd):
    return nd.strides[-2] if nd.shape[-2] > 1 else 0


class _Plan:
    """The kernel arguments of one attention call that forward and backward share."""

    def __init__(self, q, k, v, mask, keep, scale, causal, keep_scale):
        self.q, self.k, self.v = (_unit_columns(t) for t in (q, k, v))
        self.batch = q.shape[:-2]
        planes = shape_numel(self.batch)
        self.groups = q.shape[-3] // k.shape[-3] if q.ndim >= 3 else 1
        self.sizes = (planes, q.shape[-2], k.shape[-2], q.shape[-1], v.shape[-1])
        self.views = [(plane_offsets(self.q, self.batch), _row_stride(self.q))]
        for nd in (self.k, self.v):
            offsets = plane_offsets(nd, self.batch[:-1] + (nd.shape[-3],)) if self.groups > 1 \
                else plane_offsets(nd, self.batch)
            if self.groups > 1:     # query head h reads key/value head h // groups
                offsets = np.repeat(offsets, self.groups)
            self.views.append((offsets, _row_stride(nd)))
        self.options = {"causal": causal, "keep_scale": keep_scale, "mask": None,
                        "mask_view": None, "keep": None}
        if mask is not None:
            m = mask
            self.options["mask"] = m.buffer
            self.options["mask_view"] = (
                plane_offsets(m, self.batch) if m.ndim >= 2 else np.full(planes, m.offset),
                m.strides[-2] if m.ndim >= 2 and m.shape[-2] > 1 else 0,
                m.strides[-1] if m.ndim >= 1 and m.shape[-1] > 1 else 0)
        if keep is not None:
            self.options["keep"] = keep.compact().flat()
        self.scale = scale

    def forward(self):
        planes, length, _, _, dim_v = self.sizes
        out = self.q._new(self.batch + (length, dim_v))
        lse = self.q._new(self.batch + (length,))
        self.q.backend.attention_forward(
            self.q.buffer, self.k.buffer, self.v.buffer, out.buffer, lse.buffer, self.sizes,
            *self.views, self.scale, **self.options)
        return out, lse

    def backward(self, g, out, lse):
        g = _unit_columns(g)
        _, length, source, dim, dim_v = self.sizes
        dq = self.q._new(self.batch + (length, dim))
        dk = self.q._new(self.batch + (source, dim))
        dv = self.q._new(self.batch + (source, dim_v))
        self.q.backend.attention_backward(
            g.buffer, self.q.buffer, self.k.buffer, self.v.buffer, out.buffer, lse.buffer,
            dq.buffer, dk.buffer, dv.buffer, self.sizes,
            (plane_offsets(g, self.batch), _row_stride(g)), *self.views, self.scale,
            **self.options)
        if self.groups > 1:         # the query heads sharing a key/value head add up
            dk, dv = (self._fold_groups(t) for t in (dk, dv))
        return dq, dk, dv

    def _fold_groups(self, nd):
        heads = self.batch[-1] // self.groups
        grouped = nd.reshape(self.batch[:-1] + (heads, self.groups) + nd.shape[-2:])
        return grouped.reduce(ReduceOp.SUM, (len(self.batch),))


class ScaledDotProductFlashAttentionForCpu(KernelFunction):
    """softmax(scale · q kᵀ + mask) v (dropout's kept weights scaled by keep_scale) as one
    node, torch's CPU node name; the output and each row's logsumexp come from one kernel."""

    @staticmethod
    def forward(ctx, query, key, value, mask, keep, scale, causal, keep_scale):
        plan = _Plan(query._data, key._data, value._data,
                     None if mask is None else mask._data, None if keep is None else keep._data,
                     scale, causal, keep_scale)
        out, lse = plan.forward()
        result = wrap(out)
        ctx.plan, ctx.lse = plan, lse
        ctx.save_for_backward(query, key, value, mask, keep, result)
        return result

    @staticmethod
    def backward(ctx, g):
        query, key, value, mask, keep, out = ctx.saved_tensors
        plan = ctx.plan
        if is_grad_enabled():       # create_graph: a gradient that is itself differentiable
            grads = composed_gradients(g, query, key, value, mask, keep, plan.scale,
                                       plan.options["causal"], plan.options["keep_scale"])
        else:
            grads = [wrap(nd) for nd in plan.backward(g._data, out._data, ctx.lse)]
        grads = [grad if needed else None for grad, needed in zip(grads, ctx.needs_input_grad)]
        return tuple(grads) + (None,) * 5


# ---- the composed formulas: the reference the kernels are tested against, and the gradient
# when a graph of it is recorded -----------------------------------------------------------------

def safe_softmax(scores):
    """softmax over the last axis, with rows that are entirely -inf giving zeros (torch's
    _safe_softmax); such rows are replaced by 0 before the softmax so no NaN reaches forward
    or backward."""
    dead = (scores == -math.inf).all(-1, keepdim=True)
    weights = softmax(scores.masked_fill(dead, 0.0), -1)
    return weights.masked_fill(dead, 0.0)


def repeat_heads(t, heads):
    """(…, Hk, S, E) → (…, heads, S, E): each key/value head serves heads/Hk query heads."""
    if heads % t.shape[-3]:
        raise RuntimeError(f"number of heads in key/value must divide number of heads in query "
                           f"({t.shape[-3]} does not divide {heads})")
    groups = heads // t.shape[-3]
    expanded = t.unsqueeze(-3).expand(*t.shape[:-2], groups, *t.shape[-2:])
    return expanded.reshape(*t.shape[:-3], heads, *t.shape[-2:])


def attention_weights(query, key, mask, scale, causal):
    """The (…, L, S) weights safe_softmax(scale · q kᵀ + mask): a bool mask marks the positions
    that may be attended, a float mask is added, `causal` allows key j <= row i."""
    scores = (query @ key.mT) * scale
    if causal:
        rows = arange(query.shape[-2], device=query.device).unsqueeze(1)
        mask = arange(key.shape[-2], device=query.device) <= rows
    if mask is None:
        return softmax(scores, -1)
    if mask.dtype is dtypes.bool_:
        return safe_softmax(scores.masked_fill(mask.logical_not(), -math.inf))
    return safe_softmax(scores + mask)


def composed_gradients(g, query, key, value, mask, keep, scale, causal, keep_scale):
    """The gradients of attention with respect to query, key and value in Tensor ops (the
    weights recomputed): dV = Pᵈᵀ g, dS = P ∘ (dP - rowsum(dP ∘ P)), dQ = dS K · scale,
    dK = dSᵀ Q · scale, with key/value heads shared by several query heads summed."""
    heads = query.shape[-3] if query.ndim >= 3 else 1
    grouped = query.ndim >= 3 and key.shape[-3] != heads
    k, v = (repeat_heads(t, heads) for t in (key, value)) if grouped else (key, value)
    weights = attention_weights(query, k, mask, scale, causal)
    dropped = weights if keep is None else weights * keep.to(weights.dtype) * keep_scale
    grad_value = dropped.mT @ g
    grad_weights = g @ v.mT
    if keep is not None:
        grad_weights = grad_weights * keep.to(weights.dtype) * keep_scale
    grad_scores = weights * (grad_weights - (grad_weights * weights).sum(-1, keepdim=True))
    grad_query = (grad_scores @ k) * scale
    grad_key = (grad_scores.mT @ query) * scale
    if grouped:
        grad_key, grad_value = (_sum_groups(t, key.shape[-3]) for t in (grad_key, grad_value))
    return grad_query, grad_key, grad_value


def _sum_groups(t, kv_heads):
    groups = t.shape[-3] // kv_heads
    return t.reshape(*t.shape[:-3], kv_heads, groups, *t.shape[-2:]).sum(-3)
