"""torch.nn.functional's losses: regression (mse, l1, smooth_l1, huber), classification
(binary_cross_entropy, nll_loss, cross_entropy, kl_div, ctc_loss), margin and likelihood losses.
Arguments and reductions are checked in torch's order and wording (including the deprecated
size_average/reduce pair), before anything is computed.
"""
import math
import numbers
import operator
import warnings

import minitorch as mt
from ... import dtypes
from ...functions.autocast_policy import FP32, autocast_op
from ...functions.activation import BinaryCrossEntropyWithLogits, LogSigmoid, SmoothL1
from ...functions.elementwise import TORCH_NAMES
from ...functions.loss import BinaryCrossEntropy, cross_entropy_rows, ctc_nll, nll_rows
from ...functions.reduce import log_softmax as _log_softmax
from ...ndarray import _device_mismatch, shape_str
from ...opcodes import BinaryOp, ReduceOp
from ._scalars import _constant, _scalar
from .activation import logsigmoid, relu
from .distance import pairwise_distance


def _legacy_reduction(size_average, reduce, reduction):
    """torch's deprecated size_average/reduce pair → a reduction string (with its warning)."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    result = "mean" if size_average and reduce else ("sum" if reduce else "none")
    warnings.warn(f"size_average and reduce args will be deprecated, please use "
                  f"reduction='{result}' instead.")
    return result


def _refuse_complex(kernel, *operands):
    """torch's error for a loss whose kernel has no complex version, raised where torch's
    kernel would be reached (after the argument checks). `kernel` may name the device as
    {device} ("mse_cpu"); the dtype named is the operands' promoted one, as torch's is."""
    complex_dtypes = [t.dtype for t in operands if t is not None and t.dtype.is_complex]
    if not complex_dtypes:
        return
    if kernel is None:                          # the losses built on clamp
        raise NotImplementedError("clamp is not supported for complex types")
    dtype = complex_dtypes[0]
    for other in operands:
        if other is not None:
            dtype = dtypes.promote_types(dtype, other.dtype)
    name = kernel.format(device=operands[0].device.type)
    raise NotImplementedError(f'"{name}" not implemented for \'{TORCH_NAMES[dtype.name]}\'')


def _check_reduction(reduction):
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")


def _reduce(loss, reduction):
    _check_reduction(reduction)
    if reduction == "mean":
        return loss.mean()
    return loss.sum() if reduction == "sum" else loss


def _warn_size(input, target):
    if target.shape != input.shape:
        warnings.warn(f"Using a target size ({target.shape}) that is different to the input size "
                      f"({input.shape}). This will likely lead to incorrect results due to "
                      "broadcasting. Please ensure they have the same size.", stacklevel=3)


def _weighted(loss, weight, input, reduction, mean_by_weight):
    """torch's per-element `weight` for the regression losses: 'mean' divides by the weights'
    sum (mse, l1) or by the element count (huber)."""
    if weight.shape != input.shape:
        raise ValueError("Weights and input must have the same size.")
    loss = loss * weight
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    if reduction == "mean":
        return loss.sum() / weight.sum() if mean_by_weight else loss.mean()
    raise ValueError(f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', "
                     "'sum'.")


@autocast_op(FP32)
def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean squared error (input - target)**2, optionally weighted, reduced by reduction
    (torch.nn.functional.mse_loss)."""
    _warn_size(input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if weight is not None:      # torch weighs in Python, without the kernel (complex too)
        diff = input - target
        return _weighted(diff * diff, weight, input, reduction, True)
    _check_reduction(reduction)
    _refuse_complex("mse_{device}", input, target)
    diff = input - target
    return _reduce(diff * diff, reduction)


@autocast_op(FP32)
def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean absolute error |input - target|, optionally weighted, reduced by reduction
    (torch.nn.functional.l1_loss)."""
    _warn_size(input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if weight is not None:
        return _weighted((input - target).abs(), weight, input, reduction, True)
    return _reduce((input - target).abs(), reduction)


@autocast_op(FP32)
def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """Smooth L1 loss: 0.5 d**2 / beta where |d| < beta, else |d| - 0.5 beta
    (torch.nn.functional.smooth_l1_loss)."""
    _warn_size(input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    _refuse_complex("smooth_l1_{device}", input, target)
    if beta > 0 and type(input) is mt.Tensor and type(target) is mt.Tensor and \
            input.dtype in _SMOOTH_L1_NODE_DTYPES and target.dtype is input.dtype and \
            input._data.shape == target._data.shape and input.device == target.device:
        return _reduce(SmoothL1.apply(input, target, float(beta)), reduction)
    diff = (input - target).abs()
    if beta == 0:
        return _reduce(diff, reduction)
    loss = mt.where(diff < beta, diff * diff * (0.5 / beta), diff - 0.5 * beta)
    return _reduce(loss, reduction)


# smooth_l1_loss's dtypes for the one-node loss (the narrow floats' scalars round differently)
_SMOOTH_L1_NODE_DTYPES = (dtypes.float32, dtypes.float64)


@autocast_op(FP32)
def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """Huber loss: 0.5 d**2 where |d| < delta, else delta (|d| - 0.5 delta)
    (torch.nn.functional.huber_loss)."""
    _warn_size(input, target)
    if weight is None:          # the weighted loss checks it last (torch's order)
        _check_reduction(reduction)
    _refuse_complex("huber_{device}", input, target)
    diff = (input - target).abs()
    loss = mt.where(diff < delta, diff * diff * 0.5, (diff - 0.5 * delta) * delta)
    if weight is not None:
        return _weighted(loss, weight, input, reduction, False)
    return _reduce(loss, reduction)


@autocast_op(FP32, ("cpu",), banned=("cuda",))
def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    """Binary cross entropy -w (t log p + (1 - t) log(1 - p)) between probabilities and
    targets, logs clamped at -100 (torch.nn.functional.binary_cross_entropy)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if target.shape != input.shape:
        raise ValueError(f"Using a target size ({target.shape}) that is different to the input "
                         f"size ({input.shape}) is deprecated. Please ensure they have the same "
                         "size.")
    _refuse_complex("binary_cross_entropy", input, target)
    for name, t in (("input", input), ("target", target)):
        if t.numel() and not (t >= 0).logical_and(t <= 1).all().item():
            raise RuntimeError(f"all elements of {name} should be between 0 and 1")
    loss = BinaryCrossEntropy.apply(input, target)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


@autocast_op(FP32)
def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    """Binary cross entropy on logits, computed stably through log-sigmoid, with optional
    pos_weight (torch.nn.functional.binary_cross_entropy_with_logits)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if target.shape != input.shape:
        raise ValueError(f"Target size ({target.shape}) must be the same as input size "
                         f"({input.shape})")
    _refuse_complex("log_sigmoid_{device}", input, target)
    # -log σ(x) without overflow, and with the exact gradient σ(x) - 1 at x = 0 (the composed
    # log1p(exp(-|x|)) + max(-x, 0) would take subgradients of |x| and max there).
    if pos_weight is None and weight is None and input.dtype is target.dtype and \
            input.dtype in (dtypes.float32, dtypes.float64) and input.device == target.device:
        # the plain loss as one node (functions/activation.py)
        return _reduce(BinaryCrossEntropyWithLogits.apply(input, target), reduction)
    log_sigmoid_neg = -LogSigmoid.apply(input)
    if pos_weight is not None:
        log_weight = (pos_weight - 1) * target + 1
        loss = (1 - target) * input + log_weight * log_sigmoid_neg
    else:
        loss = (1 - target) * input + log_sigmoid_neg
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


@autocast_op(FP32)
def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """Pointwise target·(log target - input). A zero target contributes 0 and gets gradient 0
    (torch's xlogy form gives that gradient as NaN); a negative or NaN target gives NaN, as in
    torch, so corrupt targets do not go unnoticed."""
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce, reduction)
    elif reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the "
                      "support size.'batchmean' divides only by the batch size, and aligns with "
                      "the KL div math definition.'mean' will be changed to behave the same as "
                      "'batchmean' in the next major release.", stacklevel=2)
    if reduction != "batchmean":
        _check_reduction(reduction)
    if input.dtype.is_complex or target.dtype.is_complex:
        raise RuntimeError("kl_div: Complex inputs not supported.")
    if log_target:
        loss = target.exp() * (target - input)
    else:
        loss = mt.where(target > 0, target * (target.clamp(min=1e-45).log() - input),
                        _constant(0.0, input))
        loss = mt.where(target >= 0, loss, _constant(math.nan, input))
    if reduction == "batchmean":
        return loss.sum() / input.shape[0] if input.ndim else loss.sum()
    return _reduce(loss, reduction)


def _class_dim_last(t):
    """(N, C, d1, …) → (N*d1*…, C) so class scores are rows."""
    if t.ndim <= 2:
        return t
    return t.movedim(1, -1).reshape(-1, t.shape[1])


@autocast_op(FP32)
def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    """-input[i, target[i]] (weighted), skipping ignore_index; 'mean' divides by the total
    weight of the targets counted, as torch does."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    _check_nll(input, target, weight)
    _refuse_complex("nll_loss_out_frame", input)
    scores = _class_dim_last(input) if input.ndim > 1 else input.unsqueeze(0)
    rows, classes = target._data.reshape((-1,)), scores.shape[-1]
    loss = None
    if weight is None and not 0 <= ignore_index < classes:
        # The common case, every row counted with weight 1, unless the gather's own index
        # check (made before anything is read; on a GPU, on the host) finds a target outside
        # [0, C): then ignore_index rows or a bad target, sorted out by the checked path.
        try:
            loss = nll_rows(scores, rows, None, reduction, target)
        except IndexError:
            pass
    if loss is None:
        target_rows, w = _nll_rows_and_weights(rows, weight, ignore_index, classes, scores.dtype)
        loss = nll_rows(scores, target_rows, w, reduction, target)
    if reduction == "none" and loss.shape != target.shape:
        loss = loss.reshape(target.shape)
    return loss


def _cross_entropy_rows(input, target, weight, ignore_index, reduction):
    """(N, C) scores with class targets: log_softmax and nll_loss as one fused node
    (functions/loss.py's CrossEntropyRows), the same values as the composed path. The common
    case (no weight, ignore_index outside [0, C)) lets the kernel's own target check decide, as
    nll_loss's gather does."""
    _check_nll(input, target, weight)
    rows, classes = target._data.reshape((-1,)), input.shape[1]
    if weight is None and not 0 <= ignore_index < classes:
        try:
            return cross_entropy_rows(input, rows, None, reduction, target)
        except IndexError:
            pass
    target_rows, w = _nll_rows_and_weights(rows, weight, ignore_index, classes, input.dtype)
    return cross_entropy_rows(input, target_rows, w, reduction, target)


def _nll_rows_and_weights(target, weight, ignore_index, classes, dtype):
    """(class of each row, weight of each row or None for all ones) as NDArrays; ignore_index
    rows get class 0 and weight 0. Targets are checked on the host before any kernel reads
    them, with torch's message."""
    low, high = _value_range(target)
    mask = None
    if target.size and (low < 0 or high >= classes or 0 <= ignore_index < classes):
        valid = target.binary(BinaryOp.NE, _scalar(ignore_index, target))
        target = valid.where(target, _scalar(0, target))
        low, high = _value_range(target)
        mask = valid.astype(dtype)
    if low < 0 or high >= classes:
        # torch names the first bad target in row order (read on the host: an error path)
        values = target.to_device(mt.device("cpu")).numpy()
        bad = values[(values < 0) | (values >= classes)][0]
        raise IndexError(f"Target {bad} is out of bounds.")
    w = None if weight is None else weight._data.index_select(0, target)
    if mask is not None:
        w = mask if w is None else w.binary(BinaryOp.MUL, mask)
    return target, w


def _value_range(nd):
    """(min, max) of an integer NDArray as Python ints, (0, 0) when empty."""
    if nd.size == 0:
        return 0, 0
    return tuple(int(nd.reduce(op).numpy()) for op in (ReduceOp.MIN, ReduceOp.MAX))


def _check_nll(input, target, weight):
    """ATen's nll_loss_nd / nll_loss / nll_loss2d shape checks, then the target dtype."""
    for other in (target, weight):
        if other is not None and other.device != input.device:
            raise RuntimeError(_device_mismatch(input.device, other.device))
    if input.ndim < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.ndim})")
    target_batch = target.shape[0] if target.ndim else 0
    if input.ndim != 1 and input.shape[0] != target_batch:
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target "
                         f"batch_size ({target_batch}).")
    classes = input.shape[1] if input.ndim > 1 else input.shape[0]
    if input.ndim <= 2:
        _check_nll_flat(input, target, weight, classes)
    else:
        expected = (input.shape[0],) + tuple(input.shape[2:])
        if input.ndim == 4 and target.ndim != 3:
            raise RuntimeError(f"only batches of spatial targets supported (3D tensors) but got "
                               f"targets of dimension: {target.ndim}")
        if weight is not None and weight.numel() != classes:
            raise RuntimeError("weight tensor should be defined either for all or no classes")
        if tuple(target.shape) != expected:
            if input.ndim == 4:
                raise RuntimeError(f"size mismatch (got input: {shape_str(input.shape)} , "
                                   f"target: {shape_str(target.shape)}")
            raise RuntimeError(f"Expected target size {shape_str(expected)}, got "
                               f"{shape_str(target.shape)}")
    if target.dtype is not dtypes.int64:
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got "
                           f"{TORCH_NAMES[target.dtype.name]}")


def _check_nll_flat(input, target, weight, classes):
    if target.ndim > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if input.ndim == 1 and target.ndim == 1 and target.shape[0] != 1:
        raise ValueError(f"For 1D input, 1D target must have size 1, but got target size: "
                         f"{target.shape[0]}")
    if weight is not None and (weight.ndim != 1 or weight.numel() != classes):
        raise RuntimeError(f"weight tensor should be defined either for all {classes} classes or "
                           f"no classes but got weight tensor of shape: {shape_str(weight.shape)}")


@autocast_op(FP32)
def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    """log_softmax over the class axis (1) followed by nll_loss. A target of the input's shape
    holds class probabilities (torch's rule), anything else class indices. A label_smoothing
    at or below 0 is ignored, as in torch."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    class_dim = 1 if input.ndim > 1 else 0
    if input.shape == target.shape:
        if not target.dtype.is_floating_point:
            raise RuntimeError(f"Expected floating point type for target with class "
                               f"probabilities, got {TORCH_NAMES[target.dtype.name]}")
        if ignore_index >= 0:
            raise RuntimeError("ignore_index is not supported for floating point target")
    if label_smoothing > 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    smoothing = max(label_smoothing, 0.0)
    if input.shape == target.shape:
        return _soft_target_cross_entropy(_log_softmax(input, class_dim), target, weight,
                                          reduction, smoothing, class_dim)
    if smoothing == 0.0 and input.ndim == 2 and input.dtype.is_floating_point:
        return _cross_entropy_rows(input, target, weight, ignore_index, reduction)
    log_probs = _log_softmax(input, class_dim)
    loss = nll_loss(log_probs, target, weight, ignore_index=ignore_index, reduction=reduction)
    if smoothing == 0.0:
        return loss
    return (1 - smoothing) * loss + smoothing * _smoothing_term(
        log_probs, target, weight, ignore_index, reduction, input.shape[class_dim])


def _smoothing_term(log_probs, target, weight, ignore_index, reduction, classes):
    """torch's label-smoothing part: the (weighted) mean over classes of -log p, averaged like
    the main loss."""
    scores = _class_dim_last(log_probs)
    flat_target = target.reshape(-1)
    valid = (flat_target != ignore_index).to(scores.dtype)
    per_class = -scores if weight is None else -scores * weight
    smooth = per_class.sum(-1) * valid / classes
    if reduction == "none":
        return smooth.reshape(target.shape)
    if reduction == "sum":
        return smooth.sum()
    if weight is None:
        return _mean_or_nan(smooth.sum(), valid.sum())
    safe_target = mt.where(flat_target != ignore_index, flat_target, _constant(0, flat_target))
    return _mean_or_nan(smooth.sum(), (weight.index_select(0, safe_target) * valid).sum())


def _mean_or_nan(total, count):
    """total / count, NaN when count is 0 (torch's loss of an all-ignored batch) without a NaN
    gradient: the where sends the gradient to the finite branch, which is 0 there."""
    empty = count == 0
    return mt.where(empty, _constant(math.nan, total), total / mt.where(empty, 1.0, count))


def _soft_target_cross_entropy(log_probs, target, weight, reduction, label_smoothing, class_dim):
    classes = log_probs.shape[class_dim]
    if label_smoothing > 0:
        target = target * (1 - label_smoothing) + label_smoothing / classes
    terms = log_probs * target
    if weight is not None:
        shape = [1] * log_probs.ndim
        shape[class_dim] = classes
        terms = terms * weight.reshape(shape)
    loss = -terms.sum(class_dim)
    if reduction == "mean":
        return loss.sum() / (loss.numel() if loss.ndim else 1)
    return _reduce(loss, reduction)


_CTC_CHECKS = " (while checking arguments for ctc_loss_allocate_outputs)"


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",
             zero_infinity=False):
    """Connectionist temporal classification: -log of the total probability of every
    alignment of each target to its input (log_probs (T, N, C), or (T, C) unbatched).
    targets: padded (N, S) or all concatenated (ΣS,); 'mean' divides each loss by its target
    length before averaging, as torch."""
    _check_reduction(reduction)
    input_lengths = _ctc_lengths(input_lengths, "input_lengths")
    target_lengths = _ctc_lengths(target_lengths, "target_lengths")
    if log_probs.numel() == 0:
        raise RuntimeError("log_probs tensor must not be empty")
    batched = log_probs.ndim == 3
    lp = log_probs if batched else log_probs.unsqueeze(1)
    targets = targets.to(device=lp.device, dtype=dtypes.int64)
    padded = _ctc_padded_targets(lp, targets, blank, input_lengths, target_lengths)
    labels, skip = _ctc_extended_labels(padded, blank, lp.dtype)
    lengths = mt.tensor([input_lengths, target_lengths], dtype=dtypes.int64, device=lp.device)
    losses = ctc_nll(lp, labels, skip, lengths[0], lengths[1], zero_infinity)
    if reduction == "mean":
        return (losses / lengths[1].clamp(min=1).to(losses.dtype)).mean()
    if reduction == "sum":
        return losses.sum()
    return losses if batched else losses.squeeze(0)


def _ctc_lengths(lengths, name):
    """Lengths as a list of ints (torch reads them on the host): an int, a sequence or an
    integer Tensor."""
    if isinstance(lengths, numbers.Integral):
        return [int(lengths)]
    if isinstance(lengths, mt.Tensor):
        if lengths.dtype.is_floating_point or lengths.dtype is dtypes.bool_:
            raise RuntimeError(f"{name} must be integral")
        return [int(v) for v in lengths.reshape(-1).tolist()]
    return [operator.index(v) for v in lengths]


def _ctc_padded_targets(log_probs, targets, blank, input_lengths, target_lengths):
    """torch's ctc_loss_allocate_outputs checks; the targets as (N, max S), padded with 0s."""
    if log_probs.ndim != 3:
        raise RuntimeError(f"Expected 3-dimensional tensor, but got {log_probs.ndim}-dimensional "
                           f"tensor for argument #1 'log_probs'{_CTC_CHECKS}")
    batch, classes = log_probs.shape[1:]
    if targets.ndim not in (1, 2):
        raise RuntimeError(f"Expected 1 to 2 dimensions, but got {targets.ndim}-dimensional "
                           f"tensor for argument #2 'targets'{_CTC_CHECKS}")
    if not 0 <= blank < classes:
        raise RuntimeError("blank must be in label range")
    for name, lengths in (("input_lengths", input_lengths), ("target_lengths", target_lengths)):
        if len(lengths) != batch:
            raise RuntimeError(f"{name} must be of size batch_size")
    for length in target_lengths:
        if length < 0:
            raise RuntimeError(f"Expected target_lengths to have value at least 0, but got value "
                               f"{length}{_CTC_CHECKS}")
    longest = max(target_lengths, default=0)
    expected = sum(target_lengths) if targets.ndim == 1 else batch
    if targets.shape[0] != expected:
        raise RuntimeError(f"Expected tensor to have size {expected} at dimension 0, but got size "
                           f"{targets.shape[0]} for argument #2 'targets'{_CTC_CHECKS}")
    if targets.ndim == 2 and targets.shape[1] < longest:
        raise RuntimeError(f"Expected tensor to have size at least {longest} at dimension 1, but "
                           f"got size {targets.shape[1]} for argument #2 'targets'{_CTC_CHECKS}")
    for length in input_lengths:
        for bound, word, ok in ((0, "least", length >= 0),
                                (log_probs.shape[0], "most", length <= log_probs.shape[0])):
            if not ok:
                raise RuntimeError(f"Expected input_lengths to have value at {word} {bound}, but "
                                   f"got value {length}{_CTC_CHECKS}")
    if targets.ndim == 2:
        return targets[:, :longest]
    if longest == 0:
        return targets.new_full((batch, 0), 0)
    # Concatenated targets: gather each sample's run, repeating its last label past its end
    # (any valid class does: states beyond 2·S_n never reach the loss).
    starts = [sum(target_lengths[:i]) for i in range(batch)]
    positions = [[start + min(s, max(length - 1, 0)) for s in range(longest)]
                 for start, length in zip(starts, target_lengths)]
    return targets[mt.tensor(positions, device=targets.device)]


def _ctc_extended_labels(targets, blank, dtype):
    """(N, 2S + 1) states blank, l1, blank, …, lS, blank, and the additive mask (0 or -inf) of
    the states that may also be reached from two back: a label unlike the previous label."""
    batch, longest = targets.shape
    blanks = targets.new_full((batch, longest), blank)
    labels = mt.cat([mt.stack([blanks, targets], 2).reshape(batch, 2 * longest),
                     targets.new_full((batch, 1), blank)], 1)
    skip = mt.full((batch, 2 * longest + 1), -math.inf, dtype=dtype, device=targets.device)
    if longest > 1:
        # states 3, 5, …, 2S - 1 (labels 2 … S): allowed where the label differs from the last
        differs = targets[:, 1:] != targets[:, :-1]
        allowed = mt.stack([differs, mt.zeros_like(differs)], 2).reshape(batch, -1)
        skip[:, 3:] = skip[:, 3:].masked_fill(allowed, 0.0)
    return labels, skip


@autocast_op(FP32)
def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                        reduction="mean"):
    """max(0, -target·(input1 - input2) + margin)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if input1.ndim != input2.ndim or input1.ndim != target.ndim:
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension "
                           f"but got sizes: input1: {input1.shape}, input2: {input2.shape}, "
                           f"target: {target.shape} ")
    _refuse_complex(None, input1, input2, target)
    return _reduce((-target * (input1 - input2) + margin).clamp(min=0), reduction)


@autocast_op(FP32)
def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,
                         reduction="mean"):
    """input where target is 1, max(0, margin - input) where it is -1 (ATen's formulation: a
    target that is neither contributes both terms)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _refuse_complex(None, input, target)
    zero = _constant(0.0, input)
    margin_term = mt.where(target != 1, (margin - input).clamp(min=0), zero)
    self_term = mt.where(target != -1, input, zero)
    return _reduce(margin_term + self_term, reduction)


@autocast_op(FP32)
def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """log(1 + exp(-target·input)), as torch computes it."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _reduce((-input * target).exp().log1p(), reduction)


@autocast_op(FP32)
def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                          reduction="mean"):
    """1 - cos(x1, x2) where target is 1, max(0, cos - margin) where it is -1; ATen's cosine
    adds 1e-12 to each squared magnitude."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if target.ndim > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if target.ndim == 1 and (input1.ndim != 2 or input2.ndim != 2):
        raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs with "
                           f"sizes {shape_str(input1.shape)} and {shape_str(input2.shape)}.")
    if target.ndim == 0 and (input1.ndim != 1 or input2.ndim != 1):
        raise RuntimeError(f"0D target tensor expects 1D input tensors, but found inputs with "
                           f"sizes {shape_str(input1.shape)} and {shape_str(input2.shape)}.")
    _refuse_complex(None, input1, input2, target)
    dim = input1.ndim - 1
    dot = (input1 * input2).sum(dim)
    squares = [(x * x).sum(dim) + 1e-12 for x in (input1, input2)]
    cos = dot / (squares[0] * squares[1]).sqrt()
    zero = _constant(0.0, cos)
    loss = (mt.where(target == 1, 1 - cos, zero) +
            mt.where(target == -1, (cos - margin).clamp(min=0), zero))
    return _reduce(loss, reduction)


@autocast_op(FP32)
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    """max(0, margin + d(a, p) - d(a, n)) with pairwise_distance; swap uses the smaller of
    d(a, n) and d(p, n)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_triplet_ranks(anchor, positive, negative)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    return _reduce(_triplet_hinge(anchor, positive, negative,
                                  lambda a, b: pairwise_distance(a, b, p, eps), margin, swap),
                   reduction)


def _check_triplet_ranks(anchor, positive, negative):
    if not anchor.ndim == positive.ndim == negative.ndim:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the "
                           f"same number of dimensions, but got: anchor {anchor.ndim}D, positive "
                           f"{positive.ndim}D, and negative {negative.ndim}D inputs")


def _triplet_hinge(anchor, positive, negative, distance, margin, swap):
    """max(0, margin + d(a, p) - d(a, n)) per triplet; swap uses the smaller of d(a, n) and
    d(p, n)."""
    positive_distance = distance(anchor, positive)
    negative_distance = distance(anchor, negative)
    if swap:
        negative_distance = mt.minimum(negative_distance, distance(positive, negative))
    return (positive_distance - negative_distance + margin).clamp(min=0)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None,
                                      margin=1.0, swap=False, reduction="mean"):
    """triplet_margin_loss with any distance (pairwise_distance by default), checks in torch's
    order."""
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    _check_triplet_ranks(anchor, positive, negative)
    distance = pairwise_distance if distance_function is None else distance_function
    return _reduce(_triplet_hinge(anchor, positive, negative, distance, margin, swap), reduction)


@autocast_op(FP32)
def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,
                     reduce=None, reduction="mean"):
    """exp(input) - target·input (log_input) or input - target·log(input + eps); full adds
    Stirling's approximation of log(target!) where target > 1."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        safe = mt.where(target > 1, target, _constant(1.0, target))
        stirling = safe * safe.log() - safe + (safe * (2 * math.pi)).log() * 0.5
        loss = loss + mt.where(target > 1, stirling, _constant(0.0, stirling))
    return _reduce(loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """0.5·(log var + (input - target)²/var), var clamped at eps without the clamp entering
    the gradient; var may be one dimension short of input or broadcast along one axis."""
    if isinstance(var, float):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = mt.full(tuple(input.shape), var, dtype=input.dtype, device=input.device)
    elif (var < 0).any().item():
        raise ValueError("var has negative entry/entries")
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif not (input.ndim == var.ndim and sum(
                v for i, v in zip(input.shape, var.shape) if i != v) == 1):
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    var = var.clone()
    with mt.no_grad():
        var.clamp_(min=eps)
    loss = ((input - target) ** 2 / var + var.log()) * 0.5
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


@autocast_op(FP32)
def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """Per sample, Σ max(0, 1 - (x[j] - x[i])) / C over its target classes j (the entries
    before its first -1) and its non-target classes i: torch's multi-label hinge loss."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if input.ndim > 2 or (input.ndim and input.shape[-1] == 0):
        raise RuntimeError("Expected non-empty vector or matrix with optional 0-dim batch size, "
                           f"but got: {shape_str(input.shape)}")
    if target.shape != input.shape:
        raise RuntimeError(f"inconsistent target size: {shape_str(target.shape)} for input of "
                           f"size: {shape_str(input.shape)}")
    if target.dtype is not dtypes.int64:
        raise RuntimeError(f"expected scalar type Long but found {TORCH_NAMES[target.dtype.name]}")
    classes = input.shape[-1] if input.ndim else 1
    if target.numel() and (target.min().item() < -1 or target.max().item() >= classes):
        raise RuntimeError("argument #2 'target' is out of range")
    _refuse_complex("multilabel_margin_loss_forward_out_frame", input)
    x, t = input.reshape(-1, classes), target.reshape(-1, classes)
    valid = (t >= 0).to(dtypes.int64).cumprod(1) > 0                  # (N, T): before the first -1
    hits = (t.unsqueeze(-1) == mt.arange(classes, device=t.device)).logical_and(valid.unsqueeze(-1))
    others = hits.any(1).logical_not()                                 # (N, C): non-target classes
    picked = x.gather(1, t.clamp(min=0))                               # (N, T)
    hinge = relu(1 - picked.unsqueeze(-1) + x.unsqueeze(1))            # (N, T, C)
    mask = valid.unsqueeze(-1).logical_and(others.unsqueeze(1))
    loss = mt.where(mask, hinge, _constant(0.0, hinge)).sum((1, 2)) / classes
    return _reduce(loss.reshape(input.shape[:-1]), reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction="mean"):
    """The mean over classes (the last axis) of the binary logistic loss of each label."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _refuse_complex("log_sigmoid_{device}", input, target)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.ndim - 1
    loss = loss.sum(class_dim) / input.shape[class_dim]
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    return _reduce(loss, reduction)


@autocast_op(FP32)
def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None,
                      reduce=None, reduction="mean"):
    """Σ_{j≠y} max(0, margin - x[y] + x[j])^p / C per sample (times weight[y])."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.ndim != 1:
        raise ValueError("weight must be one-dimensional")
    rows = _check_multi_margin(input, target, weight)
    if target.dtype is not dtypes.int64:
        raise RuntimeError(f"expected scalar type Long but found {TORCH_NAMES[target.dtype.name]}")
    classes = rows.shape[1]
    picked = target.reshape(-1, 1)
    if picked.numel() and (int(picked.min().item()) < 0 or
                           int(picked.max().item()) >= classes):
        raise RuntimeError("target out of range")
    _refuse_complex("multi_margin_loss_cpu_kernel", input)
    terms = (rows - rows.gather(1, picked) + margin).clamp(min=0)
    if p == 2:
        terms = terms * terms
    if weight is not None:
        terms = terms * weight.index_select(0, picked.reshape(-1)).unsqueeze(1)
    own_class = mt.arange(classes, device=input.device) == picked
    loss = mt.where(own_class, _constant(0.0, terms), terms).sum(1) / classes
    return _reduce(loss.reshape(target.shape) if input.ndim < 2 else loss, reduction)


def _check_multi_margin(input, target, weight):
    """ATen's multi_margin_loss_shape_check; returns input as (N, C) rows."""
    if not (input.ndim <= 1 and input.numel() > 0 or input.ndim == 2 and input.shape[1] > 0):
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch size, "
                           f"but got: {shape_str(input.shape)}")
    rows = input.reshape(1, -1) if input.ndim < 2 else input
    if target.ndim > 1 or target.numel() != rows.shape[0]:
        raise RuntimeError(f"multi_margin_loss: target tensor should be 1-D with size equal to "
                           f"the number of input samples (batch size). Expected target size "
                           f"[{rows.shape[0]}], but got {shape_str(target.shape)}. Input has "
                           f"shape {shape_str(input.shape)}.")
    if weight is not None and weight.numel() != rows.shape[1]:
        raise RuntimeError(f"inconsistent weight size, expected {rows.shape[1]} but got "
                           f"{shape_str(weight.shape)}")
    return rows
