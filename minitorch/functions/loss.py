"""The negative log-likelihood loss as one autograd node (torch's NllLossBackward0).

cross_entropy runs in every training step; composed from generic ops (gather, where, mul,
sum, div…) its tail took a dozen nodes and ~150 µs per step on a 128 x 10 batch, more than the
classifier's own matmul. Here forward is one gather and two sums on NDArrays and backward one
scatter; the backward is itself a Function, so double backward still works.

Rows are (M, C) class scores. Each row i has a class target[i] and a weight w[i] (its class
weight, 0 for ignore_index rows); `w = None` means every weight is 1, the common case, which
saves the multiplications.
"""
from ..autograd import Function
from ..ndarray import NDArray
from ..opcodes import BinaryOp as B, ReduceOp, UnaryOp as U
from ..tensor import wrap

__all__ = ["nll_rows"]


def nll_rows(scores, target, w, reduction):
    """-scores[i, target[i]] · w[i], reduced by `reduction` ('mean' divides by Σw, torch's
    weighted mean). scores: (M, C) Tensor; target: (M,) int64 NDArray of in-range classes;
    w: (M,) NDArray of scores' dtype, or None for all ones."""
    return NllLoss.apply(scores, target, w, reduction)


def _row_coefficients(g, target, w, reduction):
    """d loss / d scores[i, target[i]] for incoming gradient g: -g·w[i] (/Σw for 'mean')."""
    rows = target.shape[0]
    if reduction == "none":
        coef = g.unary(U.NEG)
    else:
        coef = g.unary(U.NEG).reshape((1,)).expand((rows,))
    if w is not None:
        coef = coef.binary(B.MUL, w)
    if reduction == "mean":
        coef = coef.binary(B.DIV, _denominator(w, rows, g))
    return coef


def _denominator(w, rows, like):
    if w is None:
        return NDArray.full((), rows, like.dtype, like.device)
    return w.reduce(ReduceOp.SUM)


class NllLoss(Function):
    @staticmethod
    def forward(ctx, scores, target, w, reduction):
        nd = scores._data
        ctx.target, ctx.w, ctx.reduction, ctx.classes = target, w, reduction, nd.shape[1]
        picked = nd.gather(1, target.reshape((-1, 1))).reshape((-1,))
        if w is not None:
            picked = picked.binary(B.MUL, w)
        if reduction == "none":
            return wrap(picked.unary(U.NEG))
        total = picked.reduce(ReduceOp.SUM).unary(U.NEG)
        if reduction == "mean":
            total = total.binary(B.DIV, _denominator(w, target.shape[0], nd))
        return wrap(total)

    @staticmethod
    def backward(ctx, g):
        return NllLossBackward.apply(g, ctx.target, ctx.w, ctx.reduction, ctx.classes), \
            None, None, None


class NllLossBackward(Function):
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
