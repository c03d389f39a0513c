"""The losses that are autograd nodes of their own: the negative log-likelihood (torch's
NllLossBackward0), CTC's per-sample likelihoods and binary cross-entropy.

cross_entropy runs in every training step; composed from generic ops (gather, where, mul,
sum, div…) its tail took a dozen nodes and ~150 µs per step on a 128 x 10 batch, more than the
classifier's own matmul. Here forward is one gather and two sums on NDArrays and backward one
scatter; the backward is itself a Function, so double backward still works. On (N, C) scores
cross_entropy does not even write the log_softmax: CrossEntropyRows runs log_softmax and the
pick in one kernel each way.

Rows are (M, C) class scores. Each row i has a class target[i] and a weight w[i] (its class
weight, 0 for ignore_index rows); `w = None` means every weight is 1, the common case, which
saves the multiplications.

ctc_loss's per-sample negative log-likelihoods are one node too (CtcLoss, below), and so is
binary_cross_entropy's per-element loss (BinaryCrossEntropy, whose clamped logs need torch's own
gradient).
"""
import math

from ..autograd import KernelFunction, _grad_mode, enable_grad, grad as autograd_grad
from ..ndarray import NDArray
from ..opcodes import BinaryOp as B, ReduceOp, UnaryOp as U
from ..tensor import arange, wrap
from .elementwise import scalar_array, where
from .joining import cat, stack
from .reduce import log_softmax

__all__ = ["ctc_nll", "cross_entropy_rows", "nll_rows"]


def nll_rows(scores, target, w, reduction, source=None):
    """-scores[i, target[i]] · w[i], reduced by `reduction` ('mean' divides by Σw, torch's
    weighted mean). scores: (M, C) Tensor; target: (M,) int64 NDArray of in-range classes;
    w: (M,) NDArray of scores' dtype, or None for all ones; source: the target Tensor the
    classes came from, saved so that backward refuses it once written in place (torch's
    error), as torch saves its target."""
    return NllLoss.apply(scores, target, w, reduction, source)


def cross_entropy_rows(scores, target, w, reduction, source=None):
    """nll_rows(log_softmax(scores, 1), target, w, reduction) as one node over (M, C) float
    scores: the kernel reads each row's log_softmax at its target without writing the (M, C)
    log_softmax, and the backward is one kernel too. Same values as the composed path, bit for
    bit. target: (M,) int64 NDArray (out-of-range classes raise IndexError before any write);
    source: as nll_rows'."""
    return CrossEntropyRows.apply(scores, target, w, reduction, source)


def _reduced_loss(picked, w, reduction, denominator_like):
    """NllLoss's tail: -picked · w, summed or averaged by Σw (torch's weighted mean)."""
    if w is not None:
        picked = picked.binary(B.MUL, w)
    if reduction == "none":
        return picked.unary(U.NEG)
    total = picked.reduce(ReduceOp.SUM)
    if reduction == "mean" and w is None:       # -(Σ) / M is Σ / (-M), bit for bit: one op
        return total.binary(B.DIV, _negative_count(picked.shape[0], denominator_like))
    total = total.unary(U.NEG)
    if reduction == "mean":
        total = total.binary(B.DIV, w.reduce(ReduceOp.SUM))
    return total


def _row_coefficients(g, target, w, reduction):
    """d loss / d scores[i, target[i]] for incoming gradient g: -g·w[i] (/Σw for 'mean')."""
    rows = target.shape[0]
    if reduction == "mean" and w is None:       # -g / M as g / (-M): one kernel
        return g.reshape((1,)).expand((rows,)).binary(B.DIV, _negative_count(rows, g))
    if reduction == "none":
        coef = g.unary(U.NEG)
    else:
        coef = g.unary(U.NEG).reshape((1,)).expand((rows,))
    if w is not None:
        coef = coef.binary(B.MUL, w)
    if reduction == "mean":                     # weighted: by Σw
        coef = coef.binary(B.DIV, w.reduce(ReduceOp.SUM))
        # a row of weight 0 (ignore_index) gets 0, even when Σw = 0
        zero = NDArray.full((), 0, coef.dtype, coef.device)
        coef = w.binary(B.EQ, zero).where(zero, coef)
    return coef


def _negative_count(rows, like):
    """-rows as a 0-d array of like's dtype and device: the unweighted mean's divisor."""
    return scalar_array(-rows, like.dtype, like.device)


class NllLoss(KernelFunction):
    @staticmethod
    def forward(ctx, scores, target, w, reduction, source=None):
        nd = scores._data
        ctx.save_for_backward(source)
        ctx.target, ctx.w, ctx.reduction, ctx.classes = target, w, reduction, nd.shape[1]
        picked = nd.gather(1, target.reshape((-1, 1))).reshape((-1,))
        return wrap(_reduced_loss(picked, w, reduction, nd))

    @staticmethod
    def backward(ctx, g):
        ctx.saved_tensors               # the target unchanged since forward (a version check)
        return NllLossBackward.apply(g, ctx.target, ctx.w, ctx.reduction, ctx.classes), \
            None, None, None, None


class CrossEntropyRows(KernelFunction):
    node_name = "NllLossBackward0"      # torch's cross_entropy ends in nll_loss
    """log_softmax over the classes and nll_loss as one node (torch records two). With
    create_graph, the backward recomputes the composed path and differentiates it, so double
    backward works."""

    @staticmethod
    def forward(ctx, scores, target, w, reduction, source=None):
        nd = scores._data.compact()
        picked = nd._new((nd.shape[0],))
        # each row's max and log-sum-exp, in the compute dtype (16-bit scores keep them exact)
        stats = nd._new((nd.shape[0], 2), nd.dtype.compute)
        if picked.size:
            nd.backend.cross_entropy_rows(nd.flat(), target.compact().flat(), picked.buffer,
                                          stats.buffer, nd.shape[1])
        ctx.save_for_backward(scores, source)      # source: see nll_rows
        ctx.guarded = source is not None           # backward's targets: checked, unchanged
        ctx.target, ctx.w, ctx.reduction, ctx.stats = target, w, reduction, stats
        return wrap(_reduced_loss(picked, w, reduction, nd))

    @staticmethod
    def backward(ctx, g):
        scores, _ = ctx.saved_tensors
        if _grad_mode.enabled:          # create_graph: the composed path, differentiable
            return _composed_cross_entropy_grad(scores, ctx, g), None, None, None, None
        nd = scores._data.compact()
        coef = _row_coefficients(g._data, ctx.target, ctx.w, ctx.reduction)
        grad = nd._new(nd.shape)
        if grad.size:
            nd.backend.cross_entropy_rows_backward(coef.compact().flat(), nd.flat(),
                                                   ctx.target.compact().flat(),
                                                   ctx.stats.buffer, grad.buffer, nd.shape[1],
                                                   targets_checked=ctx.guarded)
        return wrap(grad), None, None, None, None


def _composed_cross_entropy_grad(scores, ctx, g):
    """The scores' gradient through log_softmax + NllLoss, recorded (for double backward)."""
    with enable_grad():
        loss = NllLoss.apply(log_softmax(scores, 1), ctx.target, ctx.w, ctx.reduction)
        (grad,) = autograd_grad(loss, scores, g, create_graph=True)
    return grad


class NllLossBackward(KernelFunction):
    """Zeros with the row coefficients scattered to the target classes: linear in g, so its
    own gradient (with respect to g) is the forward loss of the incoming gradient."""

    @staticmethod
    def forward(ctx, g, target, w, reduction, classes):
        ctx.target, ctx.w, ctx.reduction = target, w, reduction
        gd = g._data
        grad = NDArray.full((target.shape[0], classes), 0, gd.dtype, gd.device)
        coef = _row_coefficients(gd, target, w, reduction)
        grad.scatter_into(1, target.reshape((-1, 1)), coef.reshape((-1, 1)), False)
        return wrap(grad)

    @staticmethod
    def backward(ctx, gg):
        return NllLoss.apply(gg, ctx.target, ctx.w, ctx.reduction), None, None, None, None


# ---- CTC ----------------------------------------------------------------------------------------
def ctc_nll(log_probs, labels, skip, input_lengths, target_lengths, zero_infinity):
    """Per-sample CTC negative log-likelihoods (N,) of log_probs (T, N, C) over the extended
    label sequences `labels` (N, L = 2S + 1: blank, l1, blank, l2, …, blank; int64 Tensor).
    skip (N, L): 0 where state s may be reached from s - 2 (a label unlike the one before it),
    -inf elsewhere. input_lengths, target_lengths: (N,) int64 Tensors on log_probs' device.
    Infinite losses (impossible alignments) become 0 when zero_infinity, as in torch."""
    return CtcLoss.apply(log_probs, labels, skip, input_lengths, target_lengths, zero_infinity)


def _logsumexp3(a, b, c):
    """log(e^a + e^b + e^c) elementwise; -inf where all three are (no NaN)."""
    top = a.maximum(b).maximum(c)
    top = top.masked_fill(top == -math.inf, 0.0)
    return top + ((a - top).exp() + (b - top).exp() + (c - top).exp()).log()


def _shifted(states, by, fill):
    """states (N, L) moved `by` places along L (right for by > 0), `fill`'s values coming in."""
    edge = fill[:, :abs(by)]
    if by > 0:
        return cat([edge, states[:, :-by]], 1)
    return cat([states[:, -by:], edge], 1)


class CtcLoss(KernelFunction):
    """torch's _ctc_loss (its CPU algorithm) with tensor ops over time, all samples at once: one
    step is a dozen small kernels on (N, L) states, forward (alpha) and backward (beta) alike.
    alphas[t + 1] is the log-probability of the label prefixes that end in state s at time t;
    a virtual time -1 (state 0 only, log 1) makes an input of length 0 give 0 for an empty
    target and inf otherwise, as torch. Sample n's loss is read at time input_lengths[n] - 1
    from its final states 2·S_n and 2·S_n - 1. The backward is not differentiable (torch's
    has no double backward either)."""

    @staticmethod
    def forward(ctx, log_probs, labels, skip, input_lengths, target_lengths, zero_infinity):
        n, states = labels.shape
        emitted = log_probs.gather(2, labels.unsqueeze(0).expand(log_probs.shape[0], n, states))
        never = log_probs.new_full((n, states), -math.inf)
        alpha = cat([log_probs.new_full((n, 1), 0.0), never[:, 1:]], 1)     # time -1
        alphas = [alpha]
        for step in emitted:
            alpha = step + _logsumexp3(alpha, _shifted(alpha, 1, never),
                                       _shifted(alpha, 2, never) + skip)
            alphas.append(alpha)
        alphas = stack(alphas)                                     # (T + 1, N, L)
        last = alphas.gather(0, input_lengths.reshape(1, n, 1).expand(1, n, states))[0]
        ends = (target_lengths * 2).reshape(-1, 1)
        label_end = last.gather(1, (ends - 1).clamp(min=0))[:, 0]
        nll = -_logsumexp3(last.gather(1, ends)[:, 0],
                           label_end.masked_fill(target_lengths == 0, -math.inf), never[:, 0])
        ctx.save_for_backward(log_probs, labels, skip, input_lengths, target_lengths)
        ctx.emitted, ctx.alphas, ctx.nll = emitted, alphas[1:], nll
        ctx.zero_infinity = zero_infinity
        return nll.masked_fill(nll == math.inf, 0.0) if zero_infinity else nll

    @staticmethod
    def backward(ctx, g):
        log_probs, labels, skip, input_lengths, target_lengths = ctx.saved_tensors
        betas = _betas(ctx.emitted, skip, input_lengths, target_lengths)
        log_gamma = _per_class(ctx.alphas + betas, labels, log_probs.shape[2])
        nll = ctx.nll.reshape(1, -1, 1)
        # torch's formula, which is the gradient with respect to the logits of a log_softmax
        # that made log_probs (the two agree once through log_softmax's backward).
        grad = (log_probs.exp() - (log_gamma + nll - log_probs).exp()) * g.reshape(1, -1, 1)
        times = arange(log_probs.shape[0], device=log_probs.device).reshape(-1, 1, 1)
        keep = times < input_lengths.reshape(1, -1, 1)
        if ctx.zero_infinity:
            keep = keep & (nll != math.inf)
        return grad.masked_fill(~keep, 0.0), None, None, None, None, None


def _betas(emitted, skip, input_lengths, target_lengths):
    """betas[t] (N, L): the log-probability of the label suffixes from state s at time t to
    the end of sample n's input, the emission at t included (torch's beta); -inf after it."""
    steps, n, states = emitted.shape
    never = emitted.new_full((n, states), -math.inf)
    ids = arange(states, device=emitted.device).reshape(1, -1)
    ends = (target_lengths * 2).reshape(-1, 1)
    final = (ids == ends) | (ids == ends - 1)
    skip_ahead = _shifted(skip, -2, never)        # may s go on to s + 2?
    last_step = (input_lengths - 1).reshape(-1, 1)
    beta, betas = never, []
    for t in reversed(range(steps)):
        step = emitted[t]
        going_on = step + _logsumexp3(beta, _shifted(beta, -1, never),
                                      _shifted(beta, -2, never) + skip_ahead)
        beta = where(last_step == t, step.masked_fill(~final, -math.inf), going_on)
        betas.append(beta)
    return stack(betas[::-1])


def _per_class(log_states, labels, classes):
    """(T, N, C): log Σ exp(log_states[t, n, s]) over the states s whose label is c."""
    top = log_states.max(2, keepdim=True)[0]
    top = top.masked_fill(top == -math.inf, 0.0)
    index = labels.unsqueeze(0).expand(log_states.shape)
    sums = log_states.new_full(tuple(log_states.shape[:2]) + (classes,), 0.0)
    return sums.scatter_add(2, index, (log_states - top).exp()).log() + top


class BinaryCrossEntropy(KernelFunction):
    """-(t·log p + (1-t)·log(1-p)) per element, each log clamped at -100 (torch's rule, so p = 0
    or 1 gives a finite loss). The input gradient is torch's (p - t) / max(p(1-p), 1e-12),
    finite at p = 0 and 1 where differentiating the clamped logs would give NaN."""

    @staticmethod
    def forward(ctx, input, target):
        p, t = input._data, target._data
        floor = scalar_array(-100.0, p.dtype, p.device)
        log_p = p.unary(U.LOG).binary(B.MAXIMUM, floor)
        log_q = scalar_array(1.0, p.dtype, p.device).binary(B.SUB, p).unary(U.LOG).binary(
            B.MAXIMUM, floor)
        ctx.save_for_backward(input, target)
        # -(t·log p + (1-t)·log q) = t·(log q - log p) - log q
        return wrap(log_q.binary(B.SUB, log_p).binary(B.MUL, t).binary(B.SUB, log_q))

    @staticmethod
    def backward(ctx, g):
        p, t = ctx.saved_tensors
        grad_input = grad_target = None
        if ctx.needs_input_grad[0]:
            grad_input = g * (p - t) / ((1 - p) * p).clamp(min=1e-12)
        if ctx.needs_input_grad[1]:
            grad_target = g * ((-p).log1p() - p.log())
        return grad_input, grad_target
