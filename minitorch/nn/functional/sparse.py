"""torch.nn.functional's sparse functions: embedding (one Embedding node, functions/embedding.py,
with torch's max_norm renormalisation), embedding_bag and one_hot.
"""
import math
import warnings

import minitorch as mt
from ... import dtypes
from ...functions.embedding import Embedding
from ...tensor import wrap


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """torch.nn.functional.embedding: weight[input]; with max_norm, the looked-up rows are first
    renormalised in place (torch's embedding_renorm_). sparse=True gives the weight a sparse
    COO gradient: one entry per looked-up index (padding_idx's left out), uncoalesced."""
    if input.dtype is not dtypes.int64:
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the "
                           f"following scalar types: Long, Int; but got {input.type()} instead "
                           "(while checking arguments for embedding)")
    if weight.ndim != 2:
        raise RuntimeError("'weight' must be 2-D")
    if padding_idx is not None:
        if padding_idx > 0 and padding_idx >= weight.shape[0]:
            raise AssertionError("Padding_idx must be within num_embeddings")
        if padding_idx < 0:
            if padding_idx < -weight.shape[0]:
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx += weight.shape[0]
    if max_norm is not None:
        _embedding_renorm_(weight, input, max_norm, norm_type)
    return Embedding.apply(weight, input, padding_idx, scale_grad_by_freq, bool(sparse))


def _embedding_renorm_(weight, indices, max_norm, norm_type):
    """Scale each referenced row whose norm exceeds max_norm to max_norm / (norm + 1e-7)."""
    with mt.no_grad():
        flat = indices.reshape(-1)
        try:
            rows = wrap(weight._data.index_select(0, flat._data))
        except IndexError:
            raise IndexError("index out of range in self") from None
        norms = rows.norm(norm_type, dim=1, keepdim=True)
        scale = mt.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
        weight[flat] = rows * scale


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2,
                  scale_grad_by_freq=False, mode="mean", sparse=False, per_sample_weights=None,
                  include_last_offset=False, padding_idx=None):
    """Sums, means or maxima of bags of embedding rows. A 1-D input is cut into bags at
    `offsets`; a 2-D input is one bag per row. padding_idx entries belong to no bag (an
    empty bag gives zeros); per_sample_weights scale each row (mode "sum" only)."""
    if weight.dtype is dtypes.int64 and input.is_floating_point():
        warnings.warn("Argument order of nn.functional.embedding_bag was changed. Usage "
                      "`embedding_bag(weight, input, ...)` is deprecated, and should now be "
                      "`embedding_bag(input, weight, ...)`.", stacklevel=2)
        weight, input = input, weight
    if per_sample_weights is not None and input.shape != per_sample_weights.shape:
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is "
                         f"not None, then it must have the same shape as the input "
                         f"({input.shape})")
    if weight.ndim != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension "
                         f"{weight.ndim}")
    input, offsets, per_sample_weights, include_last_offset = _bag_layout(
        input, offsets, per_sample_weights, include_last_offset)
    _check_bag_mode(mode, scale_grad_by_freq, sparse)
    if max_norm is not None:
        _embedding_renorm_(weight, input, max_norm, norm_type)
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. "
                                  f"per_sample_weights is only supported for mode='sum' (got "
                                  f"mode='{mode}'). Please open a feature request on GitHub.")
    padding_idx = _check_bag_arguments(input, weight, offsets, per_sample_weights, padding_idx)
    return _bags(input, weight, offsets, mode, per_sample_weights, include_last_offset,
                 padding_idx, scale_grad_by_freq, sparse)


def _bag_layout(input, offsets, per_sample_weights, include_last_offset):
    """A 2-D input as a 1-D one with an offset at each row start (torch's conversion)."""
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError(f"if input is 2D, then offsets has to be None, as input is treated "
                             f"is a mini-batch of fixed length sequences. However, found "
                             f"offsets of type {type(offsets)}")
        offsets = mt.arange(0, input.numel(), max(input.shape[1], 1), dtype=input.dtype,
                            device=input.device)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
        return input.reshape(-1), offsets, per_sample_weights, False
    if input.ndim == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.ndim != 1:
            raise ValueError("offsets has to be a 1D Tensor")
        return input, offsets, per_sample_weights, include_last_offset
    raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension "
                     f"{input.ndim}")


def _check_bag_mode(mode, scale_grad_by_freq, sparse):
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if mode == "max" and sparse:
        raise ValueError("max mode does not support sparse weights")


def _check_bag_arguments(input, weight, offsets, per_sample_weights, padding_idx):
    """ATen's embedding_bag checks; returns padding_idx as a row number (or None)."""
    for t in (input, offsets):
        if t.dtype is not dtypes.int64:
            raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the "
                               f"following scalar types: Long, Int; but got {t.type()} instead "
                               "(while checking arguments for embedding_bag)")
    if per_sample_weights is not None and per_sample_weights.dtype is not weight.dtype:
        raise RuntimeError(f"Expected tensor for argument #1 'weight' to have the same type as "
                           f"tensor for argument #1 'per_sample_weights'; but type "
                           f"{weight.type()} does not equal {per_sample_weights.type()} (while "
                           "checking arguments for embedding_bag)")
    rows, n = weight.shape[0], input.shape[0]
    if padding_idx is not None:
        if not -rows <= padding_idx < rows:
            raise RuntimeError(f"padding_idx must be within the number of embeddings, -{rows} "
                               f"through {rows - 1}, but got {padding_idx}")
        padding_idx %= rows
    if offsets.numel():
        first, last = int(offsets[0].item()), int(offsets[-1].item())
        if first != 0:
            raise RuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the "
                               f"mini-batch has to start from position 0. However, got "
                               f"{first}\n[ torch.LongTensor{{}} ]")
        if last > n:
            raise RuntimeError(f"offsets[-1] can not be greater than input's length {n} but got "
                               f"offsets[-1] of {last}")
    out_of_range = (input < 0).logical_or(input >= rows)
    if out_of_range.any().item():
        position = int(out_of_range.nonzero()[0, 0].item())
        raise RuntimeError(f"Index {position} of input takes value {int(input[position].item())} "
                           f"which is not in the valid range [0, {rows})")
    return padding_idx


def _bags(input, weight, offsets, mode, per_sample_weights, include_last_offset, padding_idx,
          scale_grad_by_freq, sparse=False):
    """The bags' reductions. Each index's bag number is the count of bag starts at or before
    it (torch's CPU kernel lets the last bag run to the input's end whatever the final offset
    of include_last_offset says). With sparse, the rows' lookup gives the weight torch's
    sparse gradient: an entry per index (padding_idx's left out), its bag's gradient scaled."""
    n, dim, device = input.shape[0], weight.shape[1], input.device
    bags = offsets.shape[0] - (1 if include_last_offset else 0)
    if bags <= 0:
        return mt.zeros(0, dim, dtype=weight.dtype, device=device)
    starts = offsets[1:bags]
    bag_of = mt.zeros(n + 1, dtype=dtypes.int64, device=device).index_add(
        0, starts, mt.ones_like(starts)).cumsum(0)[:n]
    rows = embedding(input, weight, padding_idx if sparse else None,
                     scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)
    keep = (input != padding_idx) if padding_idx is not None else \
        mt.ones(n, dtype=dtypes.bool_, device=device)
    counts = mt.zeros(bags, dtype=weight.dtype, device=device).index_add(
        0, bag_of, keep.to(weight.dtype)).unsqueeze(1)
    if mode == "max":
        return _bag_maxima(rows.masked_fill(keep.logical_not().unsqueeze(1), -math.inf),
                           offsets, bag_of, bags).masked_fill(counts == 0, 0.0)
    scale = keep.to(weight.dtype)
    if per_sample_weights is not None:
        scale = scale * per_sample_weights
    sums = mt.zeros(bags, dim, dtype=weight.dtype, device=device).index_add(
        0, bag_of, rows * scale.unsqueeze(1))
    return sums if mode == "sum" else sums / counts.clamp_min(1.0)


def _bag_maxima(rows, offsets, bag_of, bags):
    """Each bag's row-wise maximum: the rows laid out as (bags, longest bag, dim), short bags
    filled with a -inf row, and reduced over the middle axis."""
    (n, dim), device = rows.shape, rows.device
    if n == 0:
        return mt.zeros(bags, dim, dtype=rows.dtype, device=device)
    position = mt.arange(n, device=device) - offsets.index_select(0, bag_of)
    width = int(position.max().item()) + 1
    slots = mt.full((bags * width,), n, dtype=dtypes.int64, device=device).scatter(
        0, bag_of * width + position, mt.arange(n, device=device))
    filler = mt.full((1, dim), -math.inf, dtype=rows.dtype, device=device)
    table = mt.cat([rows, filler]).index_select(0, slots).reshape(bags, width, dim)
    return table.max(1)[0]


def one_hot(tensor, num_classes=-1):
    """int64 one-hot encoding of an int64 index tensor, with a trailing dim of num_classes
    (inferred as max + 1 when -1) (torch.nn.functional.one_hot)."""
    if tensor.dtype is not dtypes.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes == -1:
        if tensor.numel() == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(tensor.max().item()) + 1
    if tensor.numel():
        if int(tensor.min().item()) < 0:
            raise RuntimeError("Class values must be non-negative.")
        if int(tensor.max().item()) >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    classes = mt.arange(num_classes, device=tensor.device)
    return (tensor.unsqueeze(-1) == classes).long()
