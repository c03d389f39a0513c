"""Layer, group, instance and RMS normalisation as one node each: RowNorm runs the fused
`norm_rows` kernel (mean, rstd and the affine output in one pass per row) and its backward
node RowNormBackward the fused `norm_rows_backward` (input, weight and bias gradients at
once). RowNormBackward's own backward is written with Tensor ops, recomputing the statistics
from the saved input, so double backward works.

A normalisation is described by its row layout (n, inner, groups): the input is (rows, n)
rows; row r uses parameter block r % groups of the (groups, n // inner) weight and bias, and
element j the parameter j // inner of its block. nn/functional/normalization.py checks the
arguments (torch's errors) and picks the layout.

Training-mode batch norm is ChannelRowNorm / ChannelRowNormBackward: the same kernels over
each channel's N·S values, read in place from NCHW as segmented rows (row c is the N pieces
x[i, c, :]; no gathering copy either way), with the running statistics updated from the
kernel's mean and rstd (batch_norm_train).
"""
from ..autograd import KernelFunction, no_grad
from ..ndarray import scalar_array
from ..opcodes import BinaryOp, UnaryOp
from ..tensor import wrap
from .inplace import _direct_inplace

__all__ = []   # nn/functional/normalization.py runs these


def _flat(t):
    """A tensor's values as a compact buffer (None stays None)."""
    return None if t is None else t._data.compact().flat()


class RowNorm(KernelFunction):
    """y = (x - mean)·rstd·weight + bias per row; saves x, weight, mean and rstd, as torch's
    native_layer_norm does."""

    @staticmethod
    def forward(ctx, input, weight, bias, layout, eps, rms):
        n, inner, groups = layout
        if not rms:         # (torch's rms_norm is composed: its last node is a Mul)
            ctx.node_name = "NativeLayerNormBackward0" if inner == groups == 1 else \
                "NativeGroupNormBackward0"
        x = input._data.compact()
        rows = x.size // n
        y, mean, rstd = x._new(x.shape), x._new((rows,)), x._new((rows,))
        x.backend.norm_rows(x.flat(), _flat(weight), _flat(bias), y.buffer, mean.buffer,
                            rstd.buffer, n, inner, groups, eps, rms)
        ctx.layout, ctx.eps, ctx.rms = layout, eps, rms
        param = weight if weight is not None else bias
        ctx.param_shape = None if param is None else param._data.shape
        ctx.save_for_backward(input, weight, wrap(mean), wrap(rstd))
        return wrap(y)

    @staticmethod
    def backward(ctx, g):
        input, weight, mean, rstd = ctx.saved_tensors
        return RowNormBackward.apply(g, input, weight, mean, rstd, ctx.layout, ctx.eps, ctx.rms,
                                     tuple(ctx.needs_input_grad[:3]), ctx.param_shape) \
            + (None, None, None)


class RowNormBackward(KernelFunction):
    """RowNorm's three gradients as one node: grad_input = rstd·(g·w - mean(g·w) -
    x̂·mean(g·w·x̂)) per row (no mean(g·w) term for rms), grad_weight = Σ g·x̂, grad_bias = Σ g.
    Its backward, in Tensor ops, keeps double backward."""
    materialize_grads = False

    @staticmethod
    def forward(ctx, g, input, weight, mean, rstd, layout, eps, rms, needs, param_shape):
        n, inner, groups = layout
        ctx.layout, ctx.eps, ctx.rms = layout, eps, rms
        ctx.save_for_backward(g, input, weight)
        x = input._data.compact()
        gd = g._data.compact()
        grad_input = x._new(x.shape) if needs[0] else None
        params = needs[1] or needs[2]
        count = groups * (n // inner)
        grad_weight = x._new((count,)) if params else None
        grad_bias = x._new((count,)) if params else None
        x.backend.norm_rows_backward(
            gd.flat(), x.flat(), _flat(mean), _flat(rstd), _flat(weight),
            None if grad_input is None else grad_input.buffer,
            None if grad_weight is None else grad_weight.buffer,
            None if grad_bias is None else grad_bias.buffer, n, inner, groups, rms)
        return (None if grad_input is None else wrap(grad_input),
                wrap(grad_weight.reshape(param_shape)) if needs[1] else None,
                wrap(grad_bias.reshape(param_shape)) if needs[2] else None)

    @staticmethod
    def backward(ctx, gg_input, gg_weight, gg_bias):
        g, input, weight = ctx.saved_tensors
        return _row_norm_double_backward(g, input, weight, ctx.layout, ctx.eps, ctx.rms,
                                         ctx.needs_input_grad, gg_input, gg_weight, gg_bias) \
            + (None,) * 7


def _row_norm_double_backward(g, input, weight, layout, eps, rms, needs, gg_input, gg_weight,
                              gg_bias):
    """Differentiates (grad_input, grad_weight, grad_bias) = F(g, x, w) with the statistics
    recomputed from x (a derivation is in the module's tests): (grad_g, grad_x, grad_w). The
    rows are seen as (rows // groups, groups, n // inner, inner), so the parameters broadcast
    as (1, groups, n // inner, 1) and their gradients are sums over axes 0 and 3."""
    n, inner, groups = layout
    shape4 = (input.numel() // (n * groups), groups, n // inner, inner)
    pshape = (1, groups, n // inner, 1)
    axes = (2, 3)
    x, g4 = input.reshape(shape4), g.reshape(shape4)
    w = None if weight is None else weight.reshape(pshape)
    xc = x if rms else x - x.mean(axes, keepdim=True)
    r = ((xc * xc).mean(axes, keepdim=True) + eps).rsqrt()
    xhat = xc * r
    gw = g4 if w is None else g4 * w
    ggx = None if gg_input is None else gg_input.reshape(shape4)
    ggw = None if gg_weight is None else gg_weight.reshape(pshape)
    ggb = None if gg_bias is None else gg_bias.reshape(pshape)

    def project(v):
        """rstd·(v - mean(v) - x̂·mean(v·x̂)): grad_input's map from g·w, self-adjoint."""
        centred = v if rms else v - v.mean(axes, keepdim=True)
        return r * (centred - xhat * (v * xhat).mean(axes, keepdim=True))

    q = None if ggx is None else project(ggx)
    grad_g = grad_x = grad_w = None
    if needs[0]:
        terms = ([q if w is None else q * w] if q is not None else []) + \
            ([ggw * xhat] if ggw is not None else []) + ([ggb] if ggb is not None else [])
        if terms:
            grad_g = sum(terms[1:], terms[0]).expand(shape4).reshape(g.shape)
    if needs[2] and q is not None:
        grad_w = (g4 * q).sum((0, 3), keepdim=True).reshape(weight.shape)
    if needs[1] and (ggx is not None or ggw is not None):
        grad_x = _input_grad_of_grads(xc, r, n, gw, ggx, None if ggw is None else ggw * g4,
                                      rms, axes)
        grad_x = grad_x.expand(shape4).reshape(input.shape)
    return grad_g, grad_x, grad_w


def _input_grad_of_grads(xc, r, n, gw, ggx, ggw_g, rms, axes):
    """∂L/∂x for L = Σ ggx·grad_input + Σ gg_weight·g·x̂ per row. With a = Σ gw·xc,
    b = Σ ggx·xc, c = Σ gg_weight·g·xc and u = Σ ggx·(gw - mean(gw)):
    L = r·u - r³·a·b/n + r·c, and r = (Σ xc²/n + eps)^-½ gives ∂r/∂xc = -r³·xc/n; the
    gradient in xc is then centred (xc = x - mean(x)) unless rms."""
    def total(v):
        return v.sum(axes, keepdim=True)

    r3n = r * r * r / n
    dl_dr = 0
    v = 0
    if ggx is not None:
        a, b = total(gw * xc), total(ggx * xc)
        u = total(ggx * (gw if rms else gw - gw.mean(axes, keepdim=True)))
        v = -r3n * (gw * b + a * ggx)
        dl_dr = u - 3 * r * r * a * b / n
    if ggw_g is not None:
        v = v + r * ggw_g
        dl_dr = dl_dr + total(ggw_g * xc)
    v = v - dl_dr * r3n * xc
    return v if rms else v - v.mean(axes, keepdim=True)


# ---- training-mode batch norm: each channel's pieces as one segmented row --------------------
def _to_rows(t):
    """(N, C, *S) → (C, N·S), each channel's values as a row, in Tensor ops (the double
    backward's, differentiable)."""
    return t.transpose(0, 1).reshape(t.shape[1], -1)


def _from_rows(t, shape):
    return t.reshape((shape[1], shape[0]) + tuple(shape[2:])).transpose(0, 1).reshape(shape)


def _update_running(running, batch, factor, momentum):
    """running ← (1 - momentum)·running + factor·batch in place, as running.mul_(1 - momentum)
    .add_(batch · factor) computes it (the same kernels and roundings), without the Tensor
    ops' dispatch when running is a compact buffer of batch's dtype."""
    if running is None:
        return
    product = wrap(batch.binary(BinaryOp.MUL, scalar_array(factor, batch.dtype, batch.device)))
    if running._data.dtype is not batch.dtype or not _direct_inplace(running, 1 - momentum,
                                                                      BinaryOp.MUL):
        with no_grad():
            running.mul_(1 - momentum).add_(product)
        return
    if not _direct_inplace(running, product, BinaryOp.ADD):
        with no_grad():
            running.add_(product)


def batch_norm_train(input, running_mean, running_var, weight, bias, momentum, eps):
    """Training-mode batch norm of a checked, non-empty float input (N, C, *S), its parameters
    of its dtype and device: one node (ChannelRowNorm) running norm_rows over each channel's
    values as a segmented row of the NCHW input, and the running statistics (unbiased
    variance) updated in place from its mean and rstd."""
    stats = []
    out = ChannelRowNorm.apply(input, weight, bias, eps, stats if (
        running_mean is not None or running_var is not None) else None)
    if stats:
        var, mean, count = stats
        _update_running(running_mean, mean, momentum, momentum)
        _update_running(running_var, var, momentum * count / max(count - 1, 1), momentum)
    return out


class ChannelRowNorm(KernelFunction):
    node_name = "NativeBatchNormBackward0"
    """RowNorm over the channels of an (N, C, *S) input: row c holds channel c's N·S values,
    the N pieces x[i, c, :] read in place (norm_rows' segments; gathering them into rows and
    the result back cost a copy each way, ~0.5 ms of a dcgan step). When `stats` is a list,
    the rows' biased variance (from norm_rows' rstd: within 3e-7 of torch's running_var in
    float32), mean (norm_rows': torch's running_mean to the bit in tests) and count are
    appended to it, for the running statistics."""

    @staticmethod
    def forward(ctx, input, weight, bias, eps, stats):
        xd = input._data.compact()
        n, c = xd.shape[:2]
        count = xd.size // c
        y, mean, rstd = xd._new(xd.shape), xd._new((c,)), xd._new((c,))
        # channel c's row is the N pieces x[i, c, :], read in place (segments)
        xd.backend.norm_rows(xd.flat(), _flat(weight), _flat(bias), y.buffer, mean.buffer,
                             rstd.buffer, count, count, c, eps, False, n)
        if stats is not None:
            # the biased variance back from rstd = (var + eps)^-½ (norm_rows sums in double):
            # three kernels on C values instead of var_mean's six passes over the rows
            var = rstd.unary(UnaryOp.SQUARE).unary(UnaryOp.RECIPROCAL).binary(
                BinaryOp.SUB, scalar_array(eps, xd.dtype, xd.device))
            stats.extend((var, mean, count))
        ctx.eps, ctx.x = eps, xd
        param = weight if weight is not None else bias
        ctx.param_shape = None if param is None else param._data.shape
        ctx.save_for_backward(input, weight, wrap(mean), wrap(rstd))
        return wrap(y)

    @staticmethod
    def backward(ctx, g):
        input, weight, mean, rstd = ctx.saved_tensors
        return ChannelRowNormBackward.apply(g, input, weight, mean, rstd, ctx.eps, ctx.x,
                                         tuple(ctx.needs_input_grad[:3]), ctx.param_shape) \
            + (None, None)


class ChannelRowNormBackward(KernelFunction):
    """ChannelRowNorm's three gradients as one node (RowNormBackward's kernel on the channel rows
    of g and of the input, the compact input kept from the forward as `xd`, both read in place
    as segmented rows); its backward is RowNormBackward's, on rows taken with Tensor ops."""
    materialize_grads = False

    @staticmethod
    def forward(ctx, g, input, weight, mean, rstd, eps, xd, needs, param_shape):
        ctx.eps = eps
        ctx.save_for_backward(g, input, weight)
        n, c = xd.shape[:2]
        count = xd.size // c
        gd = g._data.compact()
        grad_input = xd._new(xd.shape) if needs[0] else None
        params = needs[1] or needs[2]
        grad_weight = xd._new((c,)) if params else None
        grad_bias = xd._new((c,)) if params else None
        xd.backend.norm_rows_backward(
            gd.flat(), xd.flat(), _flat(mean), _flat(rstd), _flat(weight),
            None if grad_input is None else grad_input.buffer,
            None if grad_weight is None else grad_weight.buffer,
            None if grad_bias is None else grad_bias.buffer, count, count, c, False, n)
        return (None if grad_input is None else wrap(grad_input),
                wrap(grad_weight.reshape(param_shape)) if needs[1] else None,
                wrap(grad_bias.reshape(param_shape)) if needs[2] else None)

    @staticmethod
    def backward(ctx, gg_input, gg_weight, gg_bias):
        g, input, weight = ctx.saved_tensors
        shape, count = tuple(input.shape), input.numel() // input.shape[1]
        grad_g, grad_x, grad_w = _row_norm_double_backward(
            _to_rows(g), _to_rows(input), weight, (count, count, input.shape[1]), ctx.eps, False,
            ctx.needs_input_grad, None if gg_input is None else _to_rows(gg_input), gg_weight,
            gg_bias)
        return (None if grad_g is None else _from_rows(grad_g, shape),
                None if grad_x is None else _from_rows(grad_x, shape), grad_w) + (None,) * 6
