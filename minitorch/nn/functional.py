"""torch.nn.functional: layers as functions, composed from differentiable minitorch ops.

Convolution and pooling share one mechanism (DESIGN's "convolution-like operations"): the
im2col view of the (padded) input, (N, C, kh, kw, OH, OW), made by `as_strided`; convolution
compacts it and multiplies by the weight matrix, average pooling reduces over the window axes.
Their backward is the fold (col2im, an overlap-correct `strided_add`) that autograd derives. Max
pooling has kernels of its own (functions/window.py's MaxPool).

Argument checks follow torch's order and wording (ATen's shape checks for convolution, pooling,
normalization and the losses), so that a bad call fails here as it would there, before any
state (running statistics, embedding rows) is touched.
"""
import itertools
import math
import numbers
import operator
import struct
import warnings

import numpy as np

import minitorch as mt
from .. import dtypes
from ..autograd import Function
from ..functions.elementwise import C_NAMES, TORCH_NAMES, scalar_array
from ..functions.indexing import _first_outside
from ..functions.loss import ctc_nll, nll_rows
from ..functions.reduce import log_softmax as _log_softmax, softmax as _softmax
from ..functions.window import (ConvProduct, PoolGeometry, fold, fold_columns, max_pool,
                                unfold, window_geometry, window_view)
from ..ndarray import _device_mismatch, broadcast_shapes, normalize_dim, shape_str
from ..opcodes import BinaryOp, ReduceOp, UnaryOp
from ..tensor import wrap

__all__ = [
    "celu_", "elu_", "hardtanh_", "leaky_relu_", "native_channel_shuffle", "pdist", "relu_",
    "rrelu_", "selu_", "threshold_",
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d",
    "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d",
    "adaptive_max_pool2d_with_indices", "adaptive_max_pool3d",
    "adaptive_max_pool3d_with_indices", "alpha_dropout", "avg_pool1d", "avg_pool2d",
    "avg_pool3d", "batch_norm", "bilinear", "binary_cross_entropy",
    "binary_cross_entropy_with_logits", "celu", "channel_shuffle", "conv1d", "conv2d",
    "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "cosine_embedding_loss", "cosine_similarity", "cross_entropy", "ctc_loss", "dropout",
    "dropout1d", "dropout2d", "dropout3d", "elu", "embedding", "embedding_bag",
    "feature_alpha_dropout", "fold", "gaussian_nll_loss", "gelu", "glu", "group_norm",
    "gumbel_softmax", "hardshrink", "hardsigmoid", "hardswish", "hardtanh",
    "hinge_embedding_loss", "huber_loss", "instance_norm", "interpolate", "kl_div", "l1_loss",
    "layer_norm", "leaky_relu", "linear", "local_response_norm", "log_softmax", "logsigmoid",
    "lp_pool1d", "lp_pool2d", "lp_pool3d", "margin_ranking_loss", "max_pool1d",
    "max_pool1d_with_indices", "max_pool2d", "max_pool2d_with_indices", "max_pool3d",
    "max_pool3d_with_indices", "max_unpool1d", "max_unpool2d", "max_unpool3d", "mish",
    "mse_loss", "multi_margin_loss", "multilabel_margin_loss", "multilabel_soft_margin_loss",
    "nll_loss", "normalize",
    "one_hot", "pad", "pairwise_distance", "pixel_shuffle", "pixel_unshuffle",
    "poisson_nll_loss", "prelu", "relu", "relu6", "rms_norm", "rrelu",
    "scaled_dot_product_attention", "selu", "sigmoid", "silu", "smooth_l1_loss",
    "soft_margin_loss", "softmax", "softmin", "softplus", "softshrink", "softsign", "tanh",
    "tanhshrink", "threshold", "triplet_margin_loss", "triplet_margin_with_distance_loss",
    "unfold", "upsample", "upsample_bilinear", "upsample_nearest",
]


def _pair(value, name="kernel_size"):
    if isinstance(value, numbers.Integral):
        return (int(value), int(value))
    value = tuple(int(v) for v in value)
    if len(value) != 2:
        raise ValueError(f"{name} must be an int or a pair of ints, got {value}")
    return value


def _constant(value, like):
    return wrap(scalar_array(value, like.dtype, like.device))


def _scalar(value, nd):
    """A 0-d NDArray of nd's dtype and device (a kernel operand)."""
    return scalar_array(value, nd.dtype, nd.device)


# ---- linear and activations -------------------------------------------------------------------
def _row_shape(shape):
    """(rows, last): a (..., n) shape as a matrix, spelt out so that an empty batch or an
    empty last axis stays unambiguous (reshape(-1, 0) is not)."""
    return (math.prod(shape[:-1]), shape[-1])


class Linear(Function):
    """input @ weight.T + bias as one node. Forward reads the transposed weight as a strided
    view (the GEMM packs it for free); backward computes the weight's gradient directly in the
    weight's own layout (gᵀ · input) rather than as the transpose of x.T @ g."""

    @staticmethod
    def forward(ctx, input, weight, bias):
        rows = input._data.reshape(_row_shape(input.shape))
        out = rows.matmul(weight._data.transpose(0, 1))
        if bias is not None:
            out = out.binary(BinaryOp.ADD, bias._data)
        ctx.save_for_backward(input if weight.requires_grad else None,
                              weight if input.requires_grad else None)
        ctx.input_shape = input._data.shape
        return wrap(out.reshape(input._data.shape[:-1] + (weight._data.shape[0],)))

    @staticmethod
    def backward(ctx, g):
        input, weight = ctx.saved_tensors
        return LinearBackward.apply(g, input, weight, tuple(ctx.needs_input_grad),
                                    ctx.input_shape)


class LinearBackward(Function):
    """Linear's three gradients as one node computed on NDArrays (a training step runs it once
    per layer; as Tensor ops it was eight nodes): g·W, gᵀ·x and Σg over rows. Its backward,
    in Tensor ops, keeps double backward."""
    materialize_grads = False

    @staticmethod
    def forward(ctx, g, input, weight, needs, input_shape):
        ctx.save_for_backward(g, input, weight)
        ctx.input_shape = input_shape
        rows = g._data.reshape(_row_shape(g.shape))
        grad_input = grad_weight = grad_bias = None
        if needs[0]:
            grad_input = wrap(rows.matmul(weight._data).reshape(input_shape))
        if needs[1]:
            x = input._data.reshape(_row_shape(input.shape))
            grad_weight = wrap(rows.transpose(0, 1).matmul(x))
        if needs[2]:
            grad_bias = wrap(rows.reduce(ReduceOp.SUM, (0,)))
        return grad_input, grad_weight, grad_bias

    @staticmethod
    def backward(ctx, gg_input, gg_weight, gg_bias):
        """The backward is linear in g; x and W enter one product each."""
        g, input, weight = ctx.saved_tensors
        rows = g.reshape(_row_shape(g.shape))
        grad_g = grad_input = grad_weight = None
        terms = []
        if gg_input is not None:
            gg_rows = gg_input.reshape(_row_shape(gg_input.shape))
            terms.append(gg_rows @ weight.mT)
            if ctx.needs_input_grad[2]:
                grad_weight = rows.mT @ gg_rows
        if gg_weight is not None:
            x = input.reshape(_row_shape(input.shape))
            terms.append(x @ gg_weight.mT)
            if ctx.needs_input_grad[1]:
                grad_input = (rows @ gg_weight).reshape(ctx.input_shape)
        if gg_bias is not None:
            terms.append(gg_bias.expand(rows.shape))
        if terms and ctx.needs_input_grad[0]:
            grad_g = sum(terms[1:], terms[0]).reshape(g.shape)
        return grad_g, grad_input, grad_weight, None, None


def linear(input, weight, bias=None):
    """torch.nn.functional.linear: input @ weight.T + bias."""
    if input.shape[-1] != weight.shape[-1]:
        rows = math.prod(input.shape[:-1]) if input.ndim > 1 else 1
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x{input.shape[-1]} "
                           f"and {weight.shape[1]}x{weight.shape[0]})")
    if input.ndim == 0 or weight.ndim != 2 or input.dtype is not weight.dtype or (
            bias is not None and bias.dtype is not weight.dtype):
        out = input @ weight.mT        # the general path raises torch's errors for odd cases
        return out + bias if bias is not None else out
    return Linear.apply(input, weight, bias)


def bilinear(input1, input2, weight, bias=None):
    """y[..., o] = input1[..., i] · weight[o, i, j] · input2[..., j] + bias[o]: one GEMM of
    input1 with the weight laid out (i, o·j), then a product with input2 summed over j."""
    if input1.ndim != input2.ndim:
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.ndim} and "
                           f"{input2.ndim}")
    for dim in range(input1.ndim - 1):
        if input1.shape[dim] != input2.shape[dim]:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {dim}: "
                               f"got {input1.shape[dim]} and {input2.shape[dim]}")
    for name, x, dim in (("input1", input1, 1), ("input2", input2, 2)):
        if x.shape[-1] != weight.size(dim):
            raise RuntimeError(f"bilinear(): {name} size does not match weight size: got "
                               f"{x.shape[-1]} but expected {weight.size(dim)}")
    out, in1, in2 = weight.shape
    if bias is not None and bias.shape[0] != out:
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got "
                           f"{bias.shape[0]} but expected {out}")
    left = input1.matmul(weight.permute(1, 0, 2).reshape(in1, out * in2))
    result = (left.unflatten(-1, (out, in2)) * input2.unsqueeze(-2)).sum(-1)
    return result if bias is None else result + bias


def relu(input, inplace=False):
    return input.relu_() if inplace else input.relu()


class Hardtanh(Function):
    """clamp(x, min_val, max_val) whose gradient passes strictly inside the range only (torch's
    rule: 0 at the bounds). The mask is read from the output, so the in-place form, which
    overwrites the input, still differentiates."""

    @staticmethod
    def forward(ctx, input, min_val, max_val):
        nd = input._data
        out = wrap(nd.binary(BinaryOp.MAXIMUM, _scalar(min_val, nd))
                   .binary(BinaryOp.MINIMUM, _scalar(max_val, nd)))
        ctx.save_for_backward(out)
        ctx.bounds = (min_val, max_val)
        return out

    @staticmethod
    def backward(ctx, g):
        out, = ctx.saved_tensors
        low, high = ctx.bounds
        inside = (out > low).logical_and(out < high)
        return g * inside.to(g.dtype), None, None


def _floating_only(input, kernel):
    """torch's activation kernels exist for floating dtypes only (its dispatch error)."""
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{TORCH_NAMES[input.dtype.name]}'")


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    if input.dtype is dtypes.bool_:
        raise RuntimeError("Bool inputs not supported for hardtanh")
    if not input.dtype.is_floating_point:
        # torch clamps integer tensors to the bounds truncated to integers: the dtype stays.
        result = input.clamp(int(min_val), int(max_val))
    else:
        result = Hardtanh.apply(input, min_val, max_val)
    return input.copy_(result) if inplace else result


def relu6(input, inplace=False):
    return hardtanh(input, 0.0, 6.0, inplace)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    _floating_only(input, "leaky_relu_cpu")
    result = mt.where(input > 0, input, input * negative_slope)
    return input.copy_(result) if inplace else result


def elu(input, alpha=1.0, inplace=False):
    _floating_only(input, "elu_cpu")
    # expm1 reads min(x, 0): the unselected branch must not overflow to inf for large x, or its
    # zeroed gradient (0 · inf) would turn into NaN.
    return _maybe_inplace(input, inplace, lambda x: mt.where(
        x > 0, x, x.clamp(max=0.0).expm1() * alpha))


def gelu(input, approximate="none"):
    _floating_only(input, "GeluKernelImpl")
    if approximate == "tanh":
        inner = (input + input * input * input * 0.044715) * math.sqrt(2.0 / math.pi)
        return input * 0.5 * (inner.tanh() + 1.0)
    if approximate != "none":
        raise RuntimeError("approximate argument must be either none or tanh.")
    return input * 0.5 * ((input * (1.0 / math.sqrt(2.0))).erf() + 1.0)


def silu(input, inplace=False):
    _floating_only(input, "silu_cpu")
    # In place, the product must not save the input it is about to overwrite: use a copy.
    source = input.clone() if inplace else input
    result = source * input.sigmoid()
    return input.copy_(result) if inplace else result


def sigmoid(input):
    return input.sigmoid()


def tanh(input):
    return input.tanh()


def softplus(input, beta=1.0, threshold=20.0):
    _floating_only(input, "softplus_cpu")
    scaled = input * beta
    soft = scaled.clamp(max=threshold).exp().log1p() / beta
    return mt.where(scaled > threshold, input, soft)


class LogSigmoid(Function):
    """log σ(x) = min(x, 0) − log1p(exp(−|x|)), which never overflows; the gradient σ(−x) is
    exact everywhere (the composed form would take a subgradient of |x| at 0)."""

    @staticmethod
    def forward(ctx, input):
        nd = input._data
        tail = nd.unary(UnaryOp.ABS).unary(UnaryOp.NEG).unary(UnaryOp.EXP).unary(UnaryOp.LOG1P)
        ctx.save_for_backward(input)
        return wrap(nd.binary(BinaryOp.MINIMUM, _scalar(0.0, nd)).binary(BinaryOp.SUB, tail))

    @staticmethod
    def backward(ctx, g):
        input, = ctx.saved_tensors
        return g * (-input).sigmoid()


def logsigmoid(input):
    _floating_only(input, "log_sigmoid_cpu")
    return LogSigmoid.apply(input)


def _softmax_dim(name, ndim, stacklevel):
    """torch's legacy implicit dim (and its deprecation warning) for softmax without dim."""
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to "
                  "include dim=X as an argument.", stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """torch.nn.functional.softmax; dim=None picks torch's legacy dim, with its warning."""
    if dim is None:
        dim = _softmax_dim("softmax", input.ndim, _stacklevel)
    return _softmax(input, dim, dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """torch.nn.functional.log_softmax; dim=None picks torch's legacy dim, with its warning."""
    if dim is None:
        dim = _softmax_dim("log_softmax", input.ndim, _stacklevel)
    return _log_softmax(input, dim, dtype)


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    norm = input.norm(p, dim, keepdim=True).clamp(min=eps)
    return input / norm


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """torch's formulation: the inputs are broadcast, each is divided by its norm (clamped at
    eps, the clamp not entering the gradient), and the quotients' products are summed."""
    shape = tuple(broadcast_shapes(tuple(x1.shape), tuple(x2.shape)))
    x1, x2 = (x if tuple(x.shape) == shape else x.expand(*shape) for x in (x1, x2))
    norms = []
    for x in (x1, x2):
        norm = x.norm(2, dim, keepdim=True).clone()
        with mt.no_grad():
            norm.clamp_(min=eps)
        norms.append(norm)
    return ((x1 / norms[0]) * (x2 / norms[1])).sum(dim)


def _maybe_inplace(input, inplace, compute):
    """compute(input), written back into input when inplace. The computation reads a copy
    then, so that what it saves for backward is not the tensor being overwritten."""
    if not inplace:
        return compute(input)
    return input.copy_(compute(input.clone()))


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input, inplace=False):
    _floating_only(input, "elu_cpu")
    return _maybe_inplace(input, inplace, lambda x: elu(x, _SELU_ALPHA) * _SELU_SCALE)


def celu(input, alpha=1.0, inplace=False):
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    _floating_only(input, "elu_cpu")
    # As in elu, expm1 reads min(x, 0) so the unselected branch never overflows.
    return _maybe_inplace(input, inplace, lambda x: mt.where(
        x > 0, x, (x.clamp(max=0.0) / alpha).expm1() * alpha))


def hardswish(input, inplace=False):
    """x·relu6(x + 3)/6; at the kinks the gradient is that of the outer pieces (0 at -3, 1 at
    3), as torch's."""
    _floating_only(input, "hardswish_cpu")

    def compute(x):
        middle = x * (x + 3.0) / 6.0
        return mt.where(x <= -3.0, _constant(0.0, x), mt.where(x < 3.0, middle, x))
    return _maybe_inplace(input, inplace, compute)


def hardsigmoid(input, inplace=False):
    _floating_only(input, "hardsigmoid_cpu")
    return _maybe_inplace(input, inplace, lambda x: hardtanh(x + 3.0, 0.0, 6.0) / 6.0)


def mish(input, inplace=False):
    _floating_only(input, "mish_cpu")
    return _maybe_inplace(input, inplace, lambda x: x * softplus(x).tanh())


def softsign(input):
    return input / (input.abs() + 1)


def tanhshrink(input):
    return input - input.tanh()


def _check_lambd(lambd, input):
    if lambd < 0:
        limit = float(np.finfo(input.dtype.numpy_dtype).max)
        raise RuntimeError(f"lambda must be in range [0, {limit:g}] for input dtype "
                           f"{TORCH_NAMES[input.dtype.name]}, but found {lambd:g}")


def softshrink(input, lambd=0.5):
    _floating_only(input, "softshrink_check")
    _check_lambd(lambd, input)
    zero = _constant(0.0, input)
    return mt.where(input > lambd, input - lambd,
                    mt.where(input < -lambd, input + lambd, zero))


def hardshrink(input, lambd=0.5):
    _floating_only(input, "hardshrink_cpu")
    return mt.where(input.abs() > lambd, input, _constant(0.0, input))


def threshold(input, threshold, value, inplace=False):
    """input where input > threshold, else value (cast to input's dtype, as torch)."""
    return _maybe_inplace(input, inplace, lambda x: mt.where(x > threshold, x,
                                                             _constant(value, x)))


def glu(input, dim=-1):
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    dim = normalize_dim(dim, input.ndim)
    if input.shape[dim] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {dim} is size "
                           f"{input.shape[dim]}")
    _floating_only(input, "glu_cpu")
    first, second = input.chunk(2, dim)
    return first * second.sigmoid()


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _softmax_dim("softmin", input.ndim, _stacklevel)
    return _softmax(-input, dim, dtype)


def gumbel_softmax(logits, tau=1, hard=False, eps=1e-10, dim=-1):
    """Softmax of (logits + Gumbel noise) / tau; hard=True gives the one-hot arg-max in the
    forward pass and the soft sample's gradient (straight-through), as torch does."""
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    # Gumbel(0, 1) = -log(Exponential(1)), and Exponential(1) = -log(1 - U(0, 1))
    uniform = mt.rand(*logits.shape, dtype=logits.dtype, device=logits.device)
    gumbels = -(-(1 - uniform).log()).log()
    y_soft = ((logits + gumbels) / tau).softmax(dim)
    if not hard:
        return y_soft
    index = y_soft.max(dim, keepdim=True)[1]
    y_hard = mt.zeros_like(logits).scatter_(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


def prelu(input, weight):
    """max(0, x) + weight·min(0, x), one weight per channel (axis 1) or one for all."""
    if weight.ndim > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: "
                           f"ndim = {weight.ndim}")
    channels = input.shape[1] if input.ndim >= 2 else 1
    if weight.numel() != 1 and weight.numel() != channels:
        raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found "
                           f"parameter numbers = {weight.numel()} and channel size = "
                           f"{channels}.")
    shape = [1] * input.ndim
    if input.ndim >= 2:
        shape[1] = weight.numel()
    return mt.where(input > 0, input, input * weight.reshape(shape))


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Randomized leaky ReLU: in training each negative element's slope is drawn from
    U(lower, upper) (the default generator); in evaluation the slope is their mean."""
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    if not training:
        return leaky_relu(input, (lower + upper) / 2, inplace)

    def compute(x):
        slopes = mt.rand(*x.shape, dtype=x.dtype, device=x.device) * (upper - lower) + lower
        return mt.where(x > 0, x, x * slopes)
    return _maybe_inplace(input, inplace, compute)


# ---- the in-place spellings (torch.nn.functional.relu_ and friends) ---------------------------
def relu_(input):
    return relu(input, inplace=True)


def elu_(input, alpha=1.0):
    return elu(input, alpha, inplace=True)


def leaky_relu_(input, negative_slope=0.01):
    return leaky_relu(input, negative_slope, inplace=True)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return hardtanh(input, min_val, max_val, inplace=True)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    return rrelu(input, lower, upper, training, inplace=True)


def threshold_(input, threshold_value, value):
    return threshold(input, threshold_value, value, inplace=True)


def selu_(input):
    return selu(input, inplace=True)


def celu_(input, alpha=1.0):
    return celu(input, alpha, inplace=True)


# ---- dropout ----------------------------------------------------------------------------------
def _check_dropout_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _masked_dropout(input, p, training, inplace, mask_shape):
    """Zero input where a Bernoulli(1 - p) mask of mask_shape (broadcast over input) is 0 and
    scale the rest by 1/(1 - p)."""
    if not training or p == 0.0:
        return input
    if p == 1.0:
        result = input * 0.0
    else:
        keep = mt.rand(*mask_shape, dtype=input.dtype, device=input.device) >= p
        result = input * keep.to(input.dtype) * (1.0 / (1.0 - p))
    return input.copy_(result) if inplace else result


def dropout(input, p=0.5, training=True, inplace=False):
    _check_dropout_p(p)
    return _masked_dropout(input, p, training, inplace, input.shape)


def _feature_dropout(input, p, training, inplace):
    """Channel-wise dropout of an (N, C, …) input: one mask value per (sample, channel)."""
    mask_shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2)
    return _masked_dropout(input, p, training, inplace, mask_shape)


def dropout1d(input, p=0.5, training=True, inplace=False):
    _check_dropout_p(p)
    if input.ndim not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D "
                           "input. Note that dropout1d exists to provide channel-wise dropout on "
                           "inputs with 1 spatial dimension, a channel dimension, and an optional "
                           "batch dimension (i.e. 2D or 3D inputs).")
    if input.ndim == 3:
        return _feature_dropout(input, p, training, inplace)
    # Unbatched (C, L): a batch of one; in place, the view writes through to the input.
    result = _feature_dropout(input.unsqueeze(0), p, training, inplace).squeeze(0)
    return input if inplace else result


def dropout2d(input, p=0.5, training=True, inplace=False):
    """torch's dropout2d, its warnings included: a 3-D input is taken as (N, C, L)."""
    _check_dropout_p(p)
    if input.ndim not in (3, 4):
        warnings.warn(f"dropout2d: Received a {input.ndim}-D input to dropout2d, which is "
                      "deprecated and will result in an error in a future release. To retain "
                      "the behavior and silence this warning, please use dropout instead. Note "
                      "that dropout2d exists to provide channel-wise dropout on inputs with 2 "
                      "spatial dimensions, a channel dimension, and an optional batch dimension "
                      "(i.e. 3D or 4D inputs).", stacklevel=2)
    if input.ndim == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise "
                      "1D dropout behavior is desired - input is interpreted as shape (N, C, L), "
                      "where C is the channel dim. This behavior will change in a future release "
                      "to interpret the input as one without a batch dimension, i.e. shape "
                      "(C, H, W). To maintain the 1D channel-wise dropout behavior, please switch "
                      "to using dropout1d instead.", stacklevel=2)
    return _feature_dropout(input, p, training, inplace)


def dropout3d(input, p=0.5, training=True, inplace=False):
    """torch's dropout3d, its warning included: a 4-D input is one unbatched (C, D, H, W)."""
    _check_dropout_p(p)
    if input.ndim not in (4, 5):
        warnings.warn(f"dropout3d: Received a {input.ndim}-D input to dropout3d, which is "
                      "deprecated and will result in an error in a future release. To retain "
                      "the behavior and silence this warning, please use dropout instead. Note "
                      "that dropout3d exists to provide channel-wise dropout on inputs with 3 "
                      "spatial dimensions, a channel dimension, and an optional batch dimension "
                      "(i.e. 4D or 5D inputs).", stacklevel=2)
    if input.ndim == 5:
        return _feature_dropout(input, p, training, inplace)
    # Unbatched: a batch of one; in place, the view writes through to the input.
    result = _feature_dropout(input.unsqueeze(0), p, training, inplace).squeeze(0)
    return input if inplace else result


# SELU's negative saturation value -scale·alpha: where alpha dropout sends dropped units
_SELU_SATURATION = 1.7580993408473766


def _alpha_dropout(input, p, training, inplace, mask_shape):
    """ATen's alpha dropout: dropped units become the saturation value and the result is
    rescaled (a·x + b) so that zero mean and unit variance are kept."""
    _check_dropout_p(p)
    if not training or p == 0.0 or input.numel() == 0:
        return input
    if p == 1.0:
        result = input * 0.0
    else:
        keep = (mt.rand(*mask_shape, dtype=input.dtype, device=input.device) >= p).to(
            input.dtype)
        a = 1.0 / math.sqrt((_SELU_SATURATION ** 2 * p + 1) * (1 - p))
        shift = (keep - 1) * (_SELU_SATURATION * a) + _SELU_SATURATION * a * p
        result = input * (keep * a) + shift
    return input.copy_(result) if inplace else result


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    return _alpha_dropout(input, p, training, inplace, input.shape)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Alpha dropout of whole channels: one mask value per (sample, channel)."""
    _check_dropout_p(p)
    if training and 0.0 < p and input.numel() and input.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    mask_shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2)
    return _alpha_dropout(input, p, training, inplace, mask_shape)


# ---- convolution ------------------------------------------------------------------------------
def _conv_param(value, name, dims, parsed):
    """torch's expand_param_if_needed: an int (which torch's binding turns into `parsed` copies)
    or a one-element list repeats to `dims` values; any other length is an error."""
    values = ([operator.index(value)] * parsed if isinstance(value, numbers.Integral) else
              [operator.index(v) for v in value])
    if len(values) == 1:
        values = values * dims
    if len(values) != dims:
        raise RuntimeError(f"expected {name} to be a single integer value or a list of {dims} "
                           "values to match the convolution dimensions, but got "
                           f"{name}={values}")
    return tuple(values)


def _same_padding(padding, stride, dilation, weight):
    """Per-axis (left, right) padding for a padding string; 'same' puts any odd extra on the
    right, as torch does."""
    if padding == "valid":
        return [(0, 0)] * len(stride)
    if padding != "same":
        raise RuntimeError(f"Invalid padding string: '{padding}'")
    if any(s != 1 for s in stride):
        raise RuntimeError("padding='same' is not supported for strided convolutions")
    totals = [d * (k - 1) for d, k in zip(dilation, weight.shape[2:])]
    return [(t // 2, t - t // 2) for t in totals]


def _conv_setup(name, spatial, input, weight, bias, stride, padding, dilation, groups,
                transposed=False, output_padding=0):
    """Validate a convolution call in torch's order and wording. Returns the batched input,
    whether it was unbatched, and the expanded stride, (left, right) padding per axis,
    dilation and output_padding."""
    if input.ndim not in (spatial + 1, spatial + 2):
        raise RuntimeError(f"Expected {spatial + 1}D (unbatched) or {spatial + 2}D (batched) "
                           f"input to {name}, but got input of size: {shape_str(input.shape)}")
    unbatched = input.ndim == spatial + 1
    x = input.unsqueeze(0) if unbatched else input
    if weight.ndim < 3:
        raise RuntimeError("weight should have at least three dimensions")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    dims = weight.ndim - 2
    stride = _conv_param(stride, "stride", dims, spatial)
    dilation = _conv_param(dilation, "dilation", dims, spatial)
    if isinstance(padding, str):
        pads = _same_padding(padding, stride, dilation, weight)
    else:
        pads = [(p, p) for p in _conv_param(padding, "padding", dims, spatial)]
    output_padding = _conv_param(output_padding, "output_padding", dims, spatial)
    if any(p < 0 for pair in pads for p in pair):
        raise RuntimeError("negative padding is not supported")
    if any(p < 0 for p in output_padding):
        raise RuntimeError("negative output_padding is not supported")
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(f"dilation should be greater than zero, but got {list(dilation)}")
    _check_conv_shapes(x, weight, bias, groups, pads, dilation, transposed)
    _check_conv_dtypes(x, weight, bias)
    return x, unbatched, stride, pads, dilation, output_padding


def _check_conv_shapes(x, weight, bias, groups, pads, dilation, transposed):
    """ATen's check_shape_forward."""
    w_shape = shape_str(weight.shape)
    if weight.ndim != x.ndim:
        raise RuntimeError(f"Expected {weight.ndim}-dimensional input for {weight.ndim}-"
                           f"dimensional weight {w_shape}, but got {x.ndim}-dimensional input "
                           f"of size {shape_str(x.shape)} instead")
    if weight.shape[0] < groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be at least {groups} at "
                           f"dimension 0, but got weight of size {w_shape} instead")
    if weight.shape[0] % groups:
        # torch's message wraps the size in a second pair of brackets.
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} "
                           f"at dimension 0, but got weight of size [{w_shape}] instead")
    channels = weight.shape[0] if transposed else weight.shape[1] * groups
    out_channels = weight.shape[1] * groups if transposed else weight.shape[0]
    given = f"Given transposed=1, weight of size {w_shape}" if transposed else \
        f"Given groups={groups}, weight of size {w_shape}"
    if x.shape[1] != channels:
        raise RuntimeError(f"{given}, expected input{shape_str(x.shape)} to have {channels} "
                           f"channels, but got {x.shape[1]} channels instead")
    if bias is not None and (bias.ndim != 1 or bias.shape[0] != out_channels):
        given = given if transposed else f"Given weight of size {w_shape}"
        raise RuntimeError(f"{given}, expected bias to be 1-dimensional with {out_channels} "
                           f"elements, but got bias of size {shape_str(bias.shape)} instead")
    if transposed:
        return
    padded = [size + left + right for size, (left, right) in zip(x.shape[2:], pads)]
    kernel = [d * (k - 1) + 1 for d, k in zip(dilation, weight.shape[2:])]
    if any(p < k for p, k in zip(padded, kernel)):
        raise RuntimeError(f"Calculated padded input size per channel: "
                           f"({' x '.join(map(str, padded))}). Kernel size: "
                           f"({' x '.join(map(str, kernel))}). Kernel size can't be greater than "
                           "actual input size")


def _check_conv_dtypes(x, weight, bias):
    if weight.dtype is not x.dtype:
        raise RuntimeError(f"expected scalar type {TORCH_NAMES[x.dtype.name]} but found "
                           f"{TORCH_NAMES[weight.dtype.name]}")
    if bias is not None and bias.dtype is not x.dtype:
        raise RuntimeError(f"Input type ({C_NAMES[x.dtype.name]}) and bias type "
                           f"({C_NAMES[bias.dtype.name]}) should be the same")


def _conv_nd(x, weight, bias, stride, pads, dilation, groups):
    """The (N, C, *spatial) convolution (1, 2 or 3 spatial axes): im2col view, one compact,
    GEMM(s); grouped convolutions use one batched GEMM per group with the group's weight
    broadcast over the batch."""
    spatial = x.ndim - 2
    extra = [right - left for left, right in pads]
    if any(extra):
        x = pad(x, [amount for e in reversed(extra) for amount in (0, e)])
    n, c = x.shape[:2]
    kernel = tuple(weight.shape[2:])
    out_channels = weight.shape[0]
    padding = tuple(left for left, _ in pads)
    geometry = window_geometry(tuple(x.shape[2:]), kernel, dilation, padding, stride)
    bias_shape = (1, out_channels) + (1,) * spatial
    if groups == 1:
        # GEMMs over the windows taken channels-innermost, a chunk of images at a time (see
        # functions/window.py ConvProduct); the weight is put in the same (kh, kw, C) order.
        w = weight.permute(0, *range(2, spatial + 2), 1).reshape(out_channels, -1)
        out = ConvProduct.apply(x, w, geometry)
        return out + bias.reshape(bias_shape) if bias is not None else out.contiguous()
    cols = window_view(x, geometry)                                # (N, C, *kernel, *blocks)
    cols = cols.reshape(n, groups, (c // groups) * math.prod(kernel), math.prod(geometry.blocks))
    w = weight.reshape(groups, out_channels // groups, -1)
    # One batched GEMM per group, the group's weight broadcast over the batch (stride 0).
    per_group = [w[g] @ cols[:, g] for g in range(groups)]         # each (N, OC/G, L)
    out = mt.cat(per_group, dim=1).reshape((n, out_channels) + geometry.blocks)
    if bias is not None:
        out = out + bias.reshape(bias_shape)
    return out


def _conv(name, spatial, input, weight, bias, stride, padding, dilation, groups):
    """conv1d/2d/3d: checks, then the convolution of the batched input. A 1-D convolution is
    a 2-D one over a height-1 image."""
    x, unbatched, stride, pads, dilation, _ = _conv_setup(
        name, spatial, input, weight, bias, stride, padding, dilation, groups)
    if spatial == 1:
        out = _conv_nd(x.unsqueeze(2), weight.unsqueeze(2), bias, (1,) + stride,
                       [(0, 0)] + pads, (1,) + dilation, groups).squeeze(2)
    else:
        out = _conv_nd(x, weight, bias, stride, pads, dilation, groups)
    return out.squeeze(0) if unbatched else out


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """(N, C, L) * (OC, C/groups, k) → (N, OC, OL); (C, L) input is unbatched."""
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """(N, C, H, W) * (OC, C/groups, kh, kw) → (N, OC, OH, OW); (C, H, W) input is unbatched."""
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """(N, C, D, H, W) * (OC, C/groups, kd, kh, kw) → (N, OC, OD, OH, OW); (C, D, H, W) input
    is unbatched."""
    return _conv("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)


_AXIS_NAMES = ("depth", "height", "width")


def _conv_transpose_nd(x, weight, stride, padding, output_padding, groups, dilation):
    """The adjoint of the (N, C, *spatial) convolution: a GEMM to columns, then fold (col2im)
    onto the output grid."""
    spatial = x.ndim - 2
    names = _AXIS_NAMES[-spatial:]
    if any(op >= s and op >= d for op, s, d in zip(output_padding, stride, dilation)):
        raise RuntimeError(
            "output padding must be smaller than either stride or dilation, but got " +
            " ".join(f"{label}_{axis}: {v}" for label, values in
                     (("output_padding", output_padding), ("stride", stride),
                      ("dilation", dilation)) for axis, v in zip(names, values)))
    n, c = x.shape[:2]
    size, kernel = tuple(x.shape[2:]), tuple(weight.shape[2:])
    out_size = tuple((i - 1) * s - 2 * p + d * (k - 1) + op + 1 for i, s, p, d, k, op in
                     zip(size, stride, padding, dilation, kernel, output_padding))
    if any(o < 1 for o in out_size):
        raise RuntimeError(f"Given input size per channel: ({' x '.join(map(str, size))}). "
                           "Calculated output size per channel: "
                           f"({' x '.join(map(str, out_size))}). Output size is too small")
    in_per_group, out_per_group = c // groups, weight.shape[1]
    cols_in = x.reshape(n, groups, in_per_group, math.prod(size))
    wt = weight.reshape(groups, in_per_group, -1).mT                # (G, OCg·prod(k), Cg)
    cols = (wt @ cols_in).reshape(n, groups * out_per_group * math.prod(kernel), -1)
    # One window per input position: with output_padding >= stride (allowed when it is below
    # the dilation) the output grid would hold more windows than the input has positions.
    geometry = window_geometry(out_size, kernel, dilation, padding, stride)._replace(blocks=size)
    return fold_columns(cols, geometry)


def _conv_transpose(name, spatial, input, weight, bias, stride, padding, output_padding, groups,
                    dilation):
    """conv_transpose1d/2d/3d: checks, the transposed convolution, the bias. A 1-D one is a
    2-D one over a height-1 image (torch's messages speak of its height, too)."""
    x, unbatched, stride, pads, dilation, output_padding = _conv_setup(
        name, spatial, input, weight, bias, stride, padding, dilation, groups, True,
        output_padding)
    padding = tuple(left for left, _ in pads)
    if spatial == 1:
        out = _conv_transpose_nd(x.unsqueeze(2), weight.unsqueeze(2), (1,) + stride,
                                 (0,) + padding, (0,) + output_padding, groups,
                                 (1,) + dilation).squeeze(2)
    else:
        out = _conv_transpose_nd(x, weight, stride, padding, output_padding, groups, dilation)
    if bias is not None:
        out = out + bias.reshape((1, -1) + (1,) * spatial)
    return out.squeeze(0) if unbatched else out


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """(N, C, L) → (N, OC, OL), the adjoint of conv1d."""
    return _conv_transpose("conv_transpose1d", 1, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """(N, C, H, W) → (N, OC, OH, OW), the adjoint of conv2d."""
    return _conv_transpose("conv_transpose2d", 2, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """(N, C, D, H, W) → (N, OC, OD, OH, OW), the adjoint of conv3d."""
    return _conv_transpose("conv_transpose3d", 3, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


# ---- pooling ----------------------------------------------------------------------------------
def _pool_tuple(value, message, spatial, default=None):
    """An int or a 1- or `spatial`-element sequence → `spatial` values; None or [] → default
    (stride = kernel)."""
    if default is not None and (value is None or (not isinstance(value, numbers.Integral) and
                                                  len(value) == 0)):
        return default
    if isinstance(value, numbers.Integral):
        return (int(value),) * spatial
    value = tuple(int(v) for v in value)
    if len(value) not in (1, spatial):
        raise RuntimeError(message)
    return value * spatial if len(value) == 1 else value


def _pool_output_size(size, kernel, pad, stride, dilation, ceil_mode):
    """ATen's pooling_output_shape, with its checks: floor (or ceil) window count, where a last
    window that would start inside the right padding is dropped."""
    if stride == 0:
        raise RuntimeError("stride should not be zero")
    if pad < 0:
        raise RuntimeError(f"pad must be non-negative, but got pad: {pad}")
    if pad > int(((kernel - 1) * dilation + 1) / 2):
        raise RuntimeError(f"pad should be at most half of effective kernel size, but got "
                           f"pad={pad}, kernel_size={kernel} and dilation={dilation}")
    out = (size + 2 * pad - dilation * (kernel - 1) - 1 + (stride - 1 if ceil_mode else 0)) \
        // stride + 1
    if ceil_mode and (out - 1) * stride >= size + pad:
        out -= 1
    return out


_COUNT_WORDS = {2: "two", 3: "three"}


def _pool_setup(name, input, kernel_size, stride, padding, dilation, ceil_mode):
    """Validate a 2-D or 3-D pooling call (`name` ends in its rank) as torch does; returns the
    geometry and output size."""
    spatial = int(name[-2])
    count, either = _COUNT_WORDS[spatial], "" if name == "avg_pool3d" else "either "
    kernel = _pool_tuple(kernel_size, f"{name}: kernel_size must {either}be a single int, or a "
                                      f"tuple of {count} ints", spatial)
    stride = _pool_tuple(stride, f"{name}: stride must {either}be omitted, a single int, or a "
                                 f"tuple of {count} ints", spatial, default=kernel)
    padding = _pool_tuple(padding, f"{name}: padding must {either}be a single int, or a tuple "
                                   f"of {count} ints", spatial)
    dilation = _pool_tuple(dilation, f"{name}: dilation must be either a single int, or a tuple "
                                     f"of {count} ints", spatial)
    if (name == "max_pool2d" or spatial == 3) and input.ndim not in (spatial + 1, spatial + 2):
        raise RuntimeError(f"non-empty {spatial + 1}D or {spatial + 2}D (batch mode) tensor "
                           "expected for input")
    planes = input.shape[normalize_dim(-spatial - 1, input.ndim)]
    size = input.shape[-spatial:]
    out = tuple(_pool_output_size(*axis, ceil_mode)
                for axis in zip(size, kernel, padding, stride, dilation))
    check = _pool_shape_check if spatial == 2 else _pool3d_shape_check
    check(name, input, kernel, stride, padding, dilation, planes, out)
    return kernel, stride, padding, dilation, out


def _pool_shape_check(name, input, kernel, stride, padding, dilation, planes, out):
    """ATen's pool2d_shape_check."""
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = kernel, stride, padding, dilation
    if kh <= 0 or kw <= 0:
        raise RuntimeError(f"kernel size should be greater than zero, but got kH: {kh} kW: {kw}")
    if sh <= 0 or sw <= 0:
        raise RuntimeError(f"stride should be greater than zero, but got dH: {sh} dW: {sw}")
    if dh <= 0 or dw <= 0:
        raise RuntimeError(f"dilation should be greater than zero, but got dilationH: {dh} "
                           f"dilationW: {dw}")
    shape, ndim = input.shape, input.ndim
    valid = shape[1] != 0 and shape[2] != 0
    if not ((ndim == 3 and shape[0] != 0 and valid) or (ndim == 4 and valid and shape[3] != 0)):
        raise RuntimeError("Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size "
                           f"for input, but got:{shape_str(shape)}")
    if kw // 2 < pw or kh // 2 < ph:
        raise RuntimeError(f"pad should be smaller than or equal to half of kernel size, but got "
                           f"padW = {pw}, padH = {ph}, kW = {kw}, kH = {kh}")
    if out[0] < 1 or out[1] < 1:
        h, w = shape[-2:]
        raise RuntimeError(f"Given input size: ({planes}x{h}x{w}). Calculated output size: "
                           f"({planes}x{out[0]}x{out[1]}). Output size is too small")


def _pool3d_shape_check(name, input, kernel, stride, padding, dilation, planes, out):
    """ATen's pool3d_shape_check (avg_pool3d also checks that the kernel fits the input)."""
    for what, letter, values in (("kernel size", "k", kernel), ("stride", "d", stride),
                                 ("dilation", "dilation", dilation)):
        if any(v <= 0 for v in values):
            raise RuntimeError(f"{what} should be greater than zero, but got " +
                               " ".join(f"{letter}{axis}: {v}" for axis, v in zip("THW", values)))
    shape = input.shape
    for dim in range(input.ndim == 5, input.ndim):
        if shape[dim] <= 0:
            where = "max_pool3d_with_indices_out_cpu_template()" if name == "max_pool3d" else name
            # torch prints the axis's length (zero) where it means its index.
            raise RuntimeError(f"{where}: Expected input's non-batch dimensions to have positive "
                               f"length, but input has a shape of {shape_str(shape)} and "
                               f"non-batch dimension 0 has length zero!")
    size = shape[-3:]
    if name == "avg_pool3d" and any(s < k for s, k in zip(size, kernel)):
        raise RuntimeError(f"input image (T: {size[0]} H: {size[1]} W: {size[2]}) smaller than "
                           f"kernel size (kT: {kernel[0]} kH: {kernel[1]} kW: {kernel[2]})")
    if any(k // 2 < p for k, p in zip(kernel, padding)):
        (kt, kh, kw), (pt, ph, pw) = kernel, padding
        raise RuntimeError(f"pad should be smaller than or equal to half of kernel size, but got "
                           f"kT: {kt} kW: {kw} kH: {kh} padT: {pt} padW: {pw} padH: {ph}")
    if any(o < 1 for o in out):
        raise RuntimeError(f"Given input size: ({'x'.join(map(str, (planes,) + size))}). "
                           f"Calculated output size: ({'x'.join(map(str, (planes,) + out))}). "
                           "Output size is too small")


def _pool_windows(x, kernel, stride, padding, dilation, out, pad_value):
    """(N, C, prod(kernel), *out) windows of a (N, C, *spatial) input: one compact copy of the
    im2col view. Pooling reduces axis 2, the middle axis of a compact array, which the
    reduction kernel walks vectorized along the output positions (no permute copy).
    ceil_mode's partial last windows read `pad_value` from extra trailing padding."""
    extra = _ceil_extra(x, kernel, stride, padding, dilation, out)
    if any(extra):
        x = pad(x, _trailing_pad(extra), value=pad_value)
    geometry = window_geometry(tuple(x.shape[2:]), kernel, dilation, padding, stride)
    cols = window_view(x, geometry, pad_value)
    return cols.reshape(tuple(cols.shape[:2]) + (math.prod(kernel),) + geometry.blocks)


def _trailing_pad(extra):
    """F.pad amounts (last axis first) that add `extra` after each spatial axis."""
    return [amount for e in reversed(extra) for amount in (0, e)]


def _ceil_extra(x, kernel, stride, padding, dilation, out):
    """Rows/columns beyond the symmetric padding that the last (ceil_mode) window reaches."""
    return tuple(max(0, (o - 1) * s + d * (k - 1) + 1 - (size + 2 * p)) for o, s, d, k, size, p
                 in zip(out, stride, dilation, kernel, x.shape[2:], padding))


def _check_max_pool_dtype(input, name):
    """torch has no max pooling of bool tensors (checked after the shapes, as there)."""
    if input.dtype is dtypes.bool_:
        raise NotImplementedError(f'"{name}" not implemented for \'Bool\'')


def _max_pool(name, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    """max_pool2d/3d: the maximum of each window (its real elements only: padding never wins),
    and optionally its flat position; the max-pool kernels of functions/window.py."""
    kernel, stride, padding, dilation, out = _pool_setup(name, input, kernel_size, stride,
                                                         padding, dilation, ceil_mode)
    _check_max_pool_dtype(input, name)
    values, indices = max_pool(input, PoolGeometry(out, kernel, stride, padding, dilation))
    return (values, indices) if return_indices else values


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    return _max_pool("max_pool2d", input, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    return _max_pool("max_pool3d", input, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices)


def _with_indices(pool):
    """torch's *_with_indices form of a max pool: (values, indices) whatever return_indices."""
    def with_indices(input, *args, **kwargs):
        kwargs["return_indices"] = True
        return pool(input, *args, **kwargs)
    with_indices.__name__ = with_indices.__qualname__ = f"{pool.__name__}_with_indices"
    return with_indices


def _avg_pool(name, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
              divisor_override):
    """avg_pool2d/3d: window sums over torch's divisor."""
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    kernel, stride, padding, dilation, out = _pool_setup(name, input, kernel_size, stride,
                                                         padding, 1, ceil_mode)
    unbatched = input.ndim == len(kernel) + 1
    x = input.unsqueeze(0) if unbatched else input
    windows = _pool_windows(x, kernel, stride, padding, dilation, out, 0.0)
    total = windows.sum(dim=2)
    if divisor_override is not None:
        divisor = divisor_override
    elif count_include_pad and not any(_ceil_extra(x, kernel, stride, padding, dilation, out)):
        divisor = math.prod(kernel)
    else:
        divisor = _window_counts(x, kernel, stride, padding, out, count_include_pad)
    # integer inputs keep their dtype, the average truncated toward zero (torch's C division)
    result = total / divisor if input.dtype.is_floating_point else mt.div(
        total, divisor, rounding_mode="trunc").to(input.dtype)
    return result.squeeze(0) if unbatched else result


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    return _avg_pool("avg_pool2d", input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    return _avg_pool("avg_pool3d", input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


def _window_counts(x, kernel, stride, padding, out, count_include_pad):
    """How many elements each window averages: real pixels (plus the symmetric padding when
    count_include_pad), never the extra ceil_mode padding — torch's divisor."""
    size = tuple(s + (2 * p if count_include_pad else 0) for s, p in zip(x.shape[2:], padding))
    ones = mt.ones((1, 1) + size, dtype=x.dtype, device=x.device)
    inner_pad = (0,) * len(size) if count_include_pad else padding
    return _pool_windows(ones, kernel, stride, inner_pad, (1,) * len(size), out, 0.0).sum(dim=2)


def _list_with_default(out_size, defaults, spatial=2):
    """torch's output_size handling: None entries take the input's size."""
    if isinstance(out_size, numbers.Integral):
        return (int(out_size),) * spatial
    if len(defaults) <= len(out_size):
        raise ValueError(f"Input dimension should be at least {len(out_size) + 1}")
    return tuple(d if v is None else int(v) for v, d in zip(out_size, defaults[-len(out_size):]))


def _adaptive_avg_pool(input, output_size, spatial):
    """Average over torch's adaptive windows, [floor(i·size/out), ceil((i+1)·size/out)) along
    each axis, one axis at a time (a mean of means is the mean: windows are boxes)."""
    name = f"adaptive_avg_pool{spatial}d"
    output_size = _list_with_default(output_size, input.shape, spatial)
    if len(output_size) != spatial:
        raise RuntimeError(f"{name}: output_size must be {spatial}")
    _check_adaptive_input(input, name, spatial)
    size = tuple(input.shape[-spatial:])
    if all(output_size) and all(s % o == 0 for s, o in zip(size, output_size)):
        return _avg_pool(f"avg_pool{spatial}d", input,
                         tuple(s // o for s, o in zip(size, output_size)), None, 0, False, True,
                         None)
    out = input
    for axis, (length, count) in enumerate(zip(size, output_size)):
        dim = input.ndim - spatial + axis
        parts = [out.narrow(dim, low, high - low).mean(dim, keepdim=True)
                 for low, high in (_adaptive_bounds(i, length, count) for i in range(count))]
        out = mt.cat(parts, dim=dim)
    return out


def adaptive_avg_pool2d(input, output_size):
    return _adaptive_avg_pool(input, output_size, 2)


def adaptive_avg_pool3d(input, output_size):
    return _adaptive_avg_pool(input, output_size, 3)


def _single(value, name):
    """A 1-D pooling argument: an int or a 1-element sequence (torch's max_pool1d check)."""
    if isinstance(value, numbers.Integral):
        return int(value)
    if len(value) != 1:
        raise RuntimeError(f"max_pool1d() {name} must be an int, list of ints or tuple of ints "
                           f"of size 1 but got size {len(value)}")
    return int(value[0])


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """torch's max_pool1d checks, then the max-pool kernels over one spatial axis."""
    non_batch = input.shape[1:] if input.ndim == 3 else input.shape
    if input.ndim not in (2, 3) or 0 in tuple(non_batch):
        raise RuntimeError("max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim "
                           f"batch size for input, but got:{shape_str(input.shape)}")
    kernel = _single(kernel_size, "kernel_size")
    stride = kernel if stride is None or (not isinstance(stride, numbers.Integral) and
                                          len(stride) == 0) else _single(stride, "stride")
    padding, dilation = _single(padding, "padding"), _single(dilation, "dilation")
    for name, v in (("kernel_size", kernel), ("stride", stride), ("dilation", dilation)):
        if v <= 0:
            raise RuntimeError(f"max_pool1d() {name} must be greater than zero, but got {v}")
    if padding < 0:
        raise RuntimeError(f"max_pool1d() padding must be non-negative, but got {padding}")
    if padding > kernel // 2:
        raise RuntimeError(f"max_pool1d() padding should be at most half of kernel size, but got "
                           f"padding={padding} and kernel_size={kernel}")
    out = _pool_output_size(input.shape[-1], kernel, padding, stride, dilation, ceil_mode)
    if out <= 0:
        raise RuntimeError(f"max_pool1d() Invalid computed output size: {out}")
    _check_max_pool1d_dtype(input, return_indices)
    values, indices = max_pool(input, PoolGeometry((out,), (kernel,), (stride,), (padding,),
                                                   (dilation,)))
    return (values, indices) if return_indices else values


def _check_max_pool1d_dtype(input, return_indices):
    """torch's max_pool1d runs its own float-only CPU kernel (max_pool1d_impl) unless it needs
    indices (returned, or for a gradient) or runs on a GPU; else it is max_pool2d's."""
    if return_indices or input.is_cuda or (input.requires_grad and mt.is_grad_enabled()):
        _check_max_pool_dtype(input, "max_pool2d")
    elif not input.dtype.is_floating_point:
        raise NotImplementedError('"max_pool1d_impl" not implemented for '
                                  f"'{TORCH_NAMES[input.dtype.name]}'")


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    _check_1d_input(input, "avg_pool1d")
    kernel = _single(kernel_size, "kernel_size")
    stride = kernel if stride is None else _single(stride, "stride")
    return avg_pool2d(input.unsqueeze(-2), (1, kernel), (1, stride), (0, _single(padding,
                      "padding")), ceil_mode, count_include_pad).squeeze(-2)


def _single_output_size(output_size, name):
    """A 1-d pool's output_size as an int (torch accepts one int or a one-int sequence)."""
    if isinstance(output_size, numbers.Integral):
        return output_size
    if len(output_size) != 1:
        raise RuntimeError(f"{name}() argument 'output_size' should contain one int (got "
                           f"{len(output_size)})")
    return output_size[0]


def _check_1d_input(input, name):
    if input.ndim not in (2, 3):
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.ndim}-dimensional tensor "
                           f"for argument #1 'self' (while checking arguments for {name})")


def adaptive_avg_pool1d(input, output_size):
    output_size = _single_output_size(output_size, "adaptive_avg_pool1d")
    _check_1d_input(input, "adaptive_avg_pool1d")
    return adaptive_avg_pool2d(input.unsqueeze(-2), (1, output_size)).squeeze(-2)


def _check_adaptive_input(input, name, spatial=2, but_got="but got"):
    """ATen's adaptive pooling input checks (`but_got`: the wording differs by a colon)."""
    if input.ndim not in (spatial + 1, spatial + 2):
        raise RuntimeError(f"{name}(): Expected {spatial + 1}D or {spatial + 2}D tensor, "
                           f"{but_got} {shape_str(input.shape)}")
    for dim in range(1, input.ndim):
        if input.shape[dim] == 0:
            raise RuntimeError(f"{name}(): Expected input to have non-zero size for non-batch "
                               f"dimensions, but input has sizes {shape_str(input.shape)} with "
                               f"dimension {dim} being empty")


def _adaptive_bounds(i, size, out):
    """torch's adaptive window i of `out` over `size`:
    [floor(i·size/out), ceil((i+1)·size/out))."""
    return (i * size) // out, -(-(i + 1) * size // out)


def _adaptive_max_pool(input, output_size, return_indices, spatial):
    """Max over torch's adaptive windows. Windows that tile the input are one max pool;
    otherwise each window is reduced on its own (output sizes are small: 1×1 … 7×7)."""
    name = f"adaptive_max_pool{spatial}d"
    output_size = _list_with_default(output_size, input.shape, spatial)
    _check_adaptive_input(input, name, spatial, "but got:")
    if len(output_size) != spatial:
        raise RuntimeError(f"{name}(): internal error: output_size.size() must be {spatial}")
    lead, size = tuple(input.shape[:-spatial]), tuple(input.shape[-spatial:])
    if any(o < 0 for o in output_size):
        raise RuntimeError(f"Trying to create tensor with negative dimension "
                           f"{min(output_size)}: {list(lead + output_size)}")
    _check_max_pool_dtype(input, name)
    if all(output_size) and all(s % o == 0 for s, o in zip(size, output_size)):
        return _max_pool(f"max_pool{spatial}d", input,
                         tuple(s // o for s, o in zip(size, output_size)), None, 0, 1, False,
                         return_indices)
    values, indices = [], []
    for position in itertools.product(*(range(o) for o in output_size)):
        bounds = [_adaptive_bounds(i, s, o) for i, s, o in zip(position, size, output_size)]
        window = input[(Ellipsis,) + tuple(slice(*b) for b in bounds)].reshape(*lead, -1)
        value, arg = window.max(-1)
        values.append(value)
        indices.append(_window_position(arg, bounds, size))
    result = mt.stack(values, -1).reshape(lead + output_size)
    if not return_indices:
        return result
    return result, mt.stack(indices, -1).reshape(lead + output_size)


def _window_position(arg, bounds, size):
    """The flat position in `size` of index `arg` within the box `bounds` ((low, high) per
    axis): torch's adaptive max-pool indices."""
    flat, inner_window, inner_size = None, 1, 1
    for (low, high), length in reversed(list(zip(bounds, size))):
        term = ((arg // inner_window) % (high - low) + low) * inner_size
        flat = term if flat is None else flat + term
        inner_window, inner_size = inner_window * (high - low), inner_size * length
    return flat


def adaptive_max_pool2d(input, output_size, return_indices=False):
    return _adaptive_max_pool(input, output_size, return_indices, 2)


def adaptive_max_pool3d(input, output_size, return_indices=False):
    return _adaptive_max_pool(input, output_size, return_indices, 3)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """adaptive_max_pool2d over a height-1 image, after torch's 1-D checks."""
    output_size = _single_output_size(output_size, "adaptive_max_pool1d")
    _check_1d_input(input, "adaptive_max_pool1d")
    for dim in range(1, input.ndim):
        if input.shape[dim] == 0:
            raise RuntimeError(f"adaptive_max_pool1d(): Expected input to have non-zero size for "
                               f"non-batch dimensions, but input has sizes "
                               f"{shape_str(input.shape)} with dimension {dim} being empty")
    if output_size < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {output_size}: "
                           f"{list(input.shape[:-1]) + [1, output_size]}")
    result = adaptive_max_pool2d(input.unsqueeze(-2), (1, output_size), return_indices)
    if return_indices:
        return result[0].squeeze(-2), result[1].squeeze(-2)
    return result.squeeze(-2)


max_pool1d_with_indices = _with_indices(max_pool1d)
max_pool2d_with_indices = _with_indices(max_pool2d)
max_pool3d_with_indices = _with_indices(max_pool3d)
adaptive_max_pool1d_with_indices = _with_indices(adaptive_max_pool1d)
adaptive_max_pool2d_with_indices = _with_indices(adaptive_max_pool2d)
adaptive_max_pool3d_with_indices = _with_indices(adaptive_max_pool3d)


def _lp_pool(input, norm_type, max_pool, avg_pool, window_size, kernel_size, stride,
             ceil_mode):
    """torch's lp_pool: (window_size · mean(x^p))^(1/p) over each window; ±inf norms are
    (negated) max pools of |x|."""
    if norm_type == math.inf:
        return max_pool(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if norm_type == -math.inf:
        return -max_pool(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    out = avg_pool(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return (out.sign() * relu(out.abs())).mul(window_size).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return _lp_pool(input, norm_type, max_pool1d, avg_pool1d, kernel_size, kernel_size, stride,
                    ceil_mode)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    kh, kw = _pair(kernel_size)
    return _lp_pool(input, norm_type, max_pool2d, avg_pool2d, kh * kw, kernel_size, stride,
                    ceil_mode)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    kd, kh, kw = (kernel_size,) * 3 if isinstance(kernel_size, numbers.Integral) else kernel_size
    return _lp_pool(input, norm_type, max_pool3d, avg_pool3d, kd * kh * kw, kernel_size, stride,
                    ceil_mode)


def _ntuple(value, spatial):
    """torch's _single/_pair/_triple: an int repeats, a sequence is taken as given."""
    return (value,) * spatial if isinstance(value, numbers.Integral) else tuple(value)


def _unpool_output_size(input, kernel, stride, padding, output_size):
    """torch's _unpool_output_size: the size that undoes the pooling, or output_size checked
    against the stride - 1 sizes either side of it."""
    spatial = len(kernel)
    default = [(input.shape[input.ndim - spatial + d] - 1) * stride[d] + kernel[d] -
               2 * padding[d] for d in range(spatial)]
    if output_size is None:
        return default
    if len(output_size) == spatial + 2:
        output_size = output_size[2:]
    if len(output_size) != spatial:
        raise ValueError(f"output_size should be a sequence containing {spatial} or "
                         f"{spatial + 2} elements, but it has a length of '{len(output_size)}'")
    for d in range(spatial):
        low, high = default[d] - stride[d], default[d] + stride[d]
        if not low < output_size[d] < high:
            raise ValueError(f'invalid output_size "{output_size}" (dim {d} must be between '
                             f"{low} and {high})")
    return list(output_size)


def _unpool(input, indices, size):
    """ATen's max_unpooling2d/3d: each input value written at its flat `indices` position in
    a zeroed (N, C, *size) output (its gradient gathers from there: Scatter's backward)."""
    spatial = len(size)
    name = f"max_unpooling{spatial}d"
    if indices.dtype is not dtypes.int64:
        raise RuntimeError("elements in indices should be type int64 but got: "
                           f"{TORCH_NAMES[indices.dtype.name]}")
    if input.ndim not in (spatial + 1, spatial + 2):
        raise RuntimeError(f"Input to {name} should be a {spatial + 1}d or {spatial + 2}d "
                           f"Tensor, but got a tensor with {input.ndim} dimensions.")
    if tuple(input.shape) != tuple(indices.shape):
        raise RuntimeError("Expected shape of indices to be same as that of the input tensor "
                           f"({shape_str(input.shape)}) but got indices tensor with shape: "
                           f"{shape_str(indices.shape)}")
    for dim in range(1, input.ndim):
        if input.shape[dim] == 0:
            raise RuntimeError(f"{name}_forward_out_cpu(): Expected input to have non-zero size "
                               f"for non-batch dimensions, but got {shape_str(input.shape)} with "
                               f"dimension {dim} being empty.")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f'"max_unpool{spatial}d" not implemented for '
                                  f"'{TORCH_NAMES[input.dtype.name]}'")
    planes = math.prod(size)
    rows = math.prod(input.shape[:input.ndim - spatial])
    flat_indices = indices.reshape(rows, -1)
    if indices.numel() and ((flat_indices < 0) | (flat_indices >= planes)).any().item():
        bad = _first_outside(flat_indices._data, 0, planes)
        raise RuntimeError(f"Found an invalid max index: {bad} (output volumes are of size "
                           f"{'x'.join(map(str, size))})")
    out = mt.zeros(rows, planes, dtype=input.dtype, device=input.device)
    out = out.scatter(1, flat_indices, input.reshape(rows, -1))
    return out.reshape(tuple(input.shape[:input.ndim - spatial]) + tuple(size))


def _max_unpool(input, indices, kernel_size, stride, padding, output_size, spatial):
    kernel = _ntuple(kernel_size, spatial)
    stride = kernel if stride is None else _ntuple(stride, spatial)
    size = _unpool_output_size(input, kernel, stride, _ntuple(padding, spatial), output_size)
    if spatial == 1:    # torch unpools (N, C, L, 1) in 2-D
        return _unpool(input.unsqueeze(-1), indices.unsqueeze(-1), size + [1]).squeeze(-1)
    return _unpool(input, indices, size)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The inverse of max_pool1d: each value put back at its max index, zeros elsewhere."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 1)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The inverse of max_pool2d: each value put back at its max index, zeros elsewhere."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 2)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The inverse of max_pool3d: each value put back at its max index, zeros elsewhere."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 3)


# ---- normalization ----------------------------------------------------------------------------
def _verify_batch_size(size):
    """torch's _verify_batch_size: training statistics need more than one value per channel."""
    values = size[0] * math.prod(size[2:])
    if values == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                         f"{size}")


def _check_batch_norm(input, running_mean, running_var, weight, bias, training):
    channels = input.shape[normalize_dim(1, input.ndim)]
    if input.numel() == 0:
        return
    for name, t in (("running_mean", running_mean), ("running_var", running_var)):
        if t is None and not training:
            raise RuntimeError(f"{name} must be defined in evaluation mode")
    for name, t in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):
        if t is not None and t.numel() != channels:
            raise RuntimeError(f"{name} should contain {channels} elements not {t.numel()}")


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    """Normalise over every axis but the channel axis (1); in training, update the running
    statistics (unbiased variance) in place, as torch does."""
    if training:
        _verify_batch_size(input.shape)
    _check_batch_norm(input, running_mean, running_var, weight, bias, training)
    dims = (0,) + tuple(range(2, input.ndim))
    shape = (1, input.shape[1]) + (1,) * (input.ndim - 2)
    if training:
        count = input.numel() // input.shape[1]
        mean = input.mean(dims)
        var = input.var(dims, correction=0)
        if running_mean is not None or running_var is not None:
            _update_running_stats(running_mean, running_var, mean, var, momentum, count)
    else:
        mean, var = running_mean, running_var
    return _affine(input, mean.reshape(shape), var.reshape(shape), eps, weight, bias, shape)


def _update_running_stats(running_mean, running_var, mean, var, momentum, count):
    """running ← (1 - momentum)·running + momentum·batch, with the unbiased batch variance."""
    with mt.no_grad():
        if running_mean is not None:
            running_mean.mul_(1 - momentum).add_(mean.detach() * momentum)
        if running_var is not None:
            unbiased = momentum * count / max(count - 1, 1)
            running_var.mul_(1 - momentum).add_(var.detach() * unbiased)


def _normalized_shape(input, normalized_shape, params, star):
    """normalized_shape as a tuple, checked against the named parameters' shapes and the input's
    trailing dims with torch's messages (layer_norm writes the shape as [*, 4], rms_norm as
    [*4])."""
    normalized_shape = (normalized_shape,) if isinstance(normalized_shape, numbers.Integral) \
        else tuple(normalized_shape)
    for name, t in params:
        if t is not None and tuple(t.shape) != normalized_shape:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got "
                               f"{name} of shape {shape_str(t.shape)} and normalized_shape = "
                               f"{shape_str(normalized_shape)}")
    if tuple(input.shape[input.ndim - len(normalized_shape):]) != normalized_shape:
        raise RuntimeError(f"Given normalized_shape={list(normalized_shape)}, expected input with "
                           f"shape [{star}{', '.join(str(s) for s in normalized_shape)}], but got "
                           f"input of size{list(input.shape)}")
    return normalized_shape


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    normalized_shape = _normalized_shape(input, normalized_shape,
                                         (("weight", weight), ("bias", bias)), "*, ")
    dims = tuple(range(input.ndim - len(normalized_shape), input.ndim))
    mean = input.mean(dims, keepdim=True)
    var = input.var(dims, keepdim=True, correction=0)
    out = (input - mean) * (var + eps).rsqrt()
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    if input.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received "
                           f"{input.ndim}")
    n, c = input.shape[:2]
    _verify_batch_size([n * c // num_groups, num_groups] + list(input.shape[2:]))
    if c % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, "
                           f"but got input of shape {list(input.shape)} and num_groups="
                           f"{num_groups}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.ndim != 1 or t.numel() != c):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of "
                               f"channels in input, but got {name} of shape "
                               f"{shape_str(t.shape)} and input of shape "
                               f"{shape_str(input.shape)}")
    grouped = input.reshape(n, num_groups, math.prod(input.shape[1:]) // num_groups)
    mean = grouped.mean(-1, keepdim=True)
    var = grouped.var(-1, keepdim=True, correction=0)
    out = ((grouped - mean) * (var + eps).rsqrt()).reshape(input.shape)
    shape = (1, c) + (1,) * (input.ndim - 2)
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


def _verify_spatial_size(size):
    """torch's _verify_spatial_size: instance statistics need more than one value each."""
    if math.prod(size[2:]) == 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size "
                         f"{size}")


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    """Normalise each (sample, channel) plane over its spatial axes. torch runs batch_norm on
    the input seen as (1, N·C, …) with the running statistics repeated N times, so their
    update is the batch average of the per-instance updates, and sizes are checked as N·C."""
    if use_input_stats:
        _verify_spatial_size(input.shape)
    n, c = input.shape[:2]
    if not use_input_stats and (running_mean is None or running_var is None):
        raise RuntimeError("Expected running_mean and running_var to be defined when "
                           "use_input_stats is false")
    for name, t in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):
        if t is not None and t.numel() != c:
            raise RuntimeError(f"{name} should contain {n * c} elements not {t.numel() * n}")
    dims = tuple(range(2, input.ndim))
    shape = (1, c) + (1,) * (input.ndim - 2)
    if use_input_stats:
        mean = input.mean(dims, keepdim=True)
        var = input.var(dims, keepdim=True, correction=0)
        if running_mean is not None or running_var is not None:
            _update_running_stats(running_mean, running_var, mean.mean(0).reshape(c),
                                  var.mean(0).reshape(c), momentum, math.prod(input.shape[2:]))
    else:
        mean, var = running_mean.reshape(shape), running_var.reshape(shape)
    return _affine(input, mean, var, eps, weight, bias, shape)


def _affine(input, mean, var, eps, weight, bias, shape):
    """(input - mean) / sqrt(var + eps), then scaled and shifted by the per-channel weight and
    bias (each optional) reshaped to `shape`."""
    out = (input - mean) * (var + eps).rsqrt()
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """x / sqrt(mean(x²) + eps) over the trailing normalized_shape axes, times weight; eps
    defaults to the dtype's machine epsilon, as torch."""
    normalized_shape = _normalized_shape(input, normalized_shape, (("weight", weight),), "*")
    if eps is None:
        eps = float(np.finfo(input.dtype.numpy_dtype).eps)
    dims = tuple(range(input.ndim - len(normalized_shape), input.ndim))
    out = input * ((input * input).mean(dims, keepdim=True) + eps).rsqrt()
    return out * weight if weight is not None else out


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """x / (k + alpha · mean of x² over `size` neighbouring channels)^beta. torch pools the
    (N, 1, C, H, W) squares with a (size, 1, 1) window; a (size, 1) window over the spatial
    axes flattened is the same average."""
    if input.ndim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality                          input "
                         f"(got {input.ndim} dimensions)")
    if input.numel() == 0:
        return input
    squares = input.mul(input).reshape(input.shape[0], 1, input.shape[1], -1)
    squares = pad(squares, (0, 0, size // 2, (size - 1) // 2))
    div = avg_pool2d(squares, (size, 1), stride=1).reshape(input.shape)
    return input / div.mul(alpha).add(k).pow(beta)


# ---- embedding, padding, one-hot --------------------------------------------------------------
class Embedding(Function):
    """Rows of the weight picked by integer indices (one index_select). Backward adds each
    gradient row into its weight row (one index_add), skipping padding_idx and dividing by
    each index's count for scale_grad_by_freq."""

    @staticmethod
    def forward(ctx, weight, indices, padding_idx, scale_grad_by_freq):
        flat = indices._data.reshape((-1,))
        try:
            rows = weight._data.index_select(0, flat)
        except IndexError:
            raise IndexError("index out of range in self") from None
        ctx.save_for_backward(indices)
        ctx.weight_shape, ctx.padding_idx = weight._data.shape, padding_idx
        ctx.scale_grad_by_freq = scale_grad_by_freq
        return wrap(rows.reshape(indices._data.shape + (weight._data.shape[1],)))

    @staticmethod
    def backward(ctx, g):
        indices, = ctx.saved_tensors
        flat = indices.reshape(-1)
        rows = g.reshape(-1, ctx.weight_shape[1])
        if ctx.padding_idx is not None:
            rows = rows.masked_fill((flat == ctx.padding_idx).unsqueeze(1), 0.0)
        if ctx.scale_grad_by_freq:
            ones = mt.ones(flat.shape[0], dtype=g.dtype, device=g.device)
            counts = mt.zeros(ctx.weight_shape[0], dtype=g.dtype, device=g.device).index_add(
                0, flat, ones)
            rows = rows / counts.index_select(0, flat).unsqueeze(1)
        grad = mt.zeros(*ctx.weight_shape, dtype=g.dtype, device=g.device)
        return grad.index_add(0, flat, rows), None, None, None


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """torch.nn.functional.embedding: weight[input]; with max_norm, the looked-up rows are first
    renormalised in place (torch's embedding_renorm_)."""
    if input.dtype is not dtypes.int64:
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the "
                           f"following scalar types: Long, Int; but got {input.type()} instead "
                           "(while checking arguments for embedding)")
    if weight.ndim != 2:
        raise RuntimeError("'weight' must be 2-D")
    if sparse:
        raise NotImplementedError("sparse=True needs sparse gradient tensors, which minitorch "
                                  "does not have")
    if padding_idx is not None:
        if padding_idx > 0 and padding_idx >= weight.shape[0]:
            raise AssertionError("Padding_idx must be within num_embeddings")
        if padding_idx < 0:
            if padding_idx < -weight.shape[0]:
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx += weight.shape[0]
    if max_norm is not None:
        _embedding_renorm_(weight, input, max_norm, norm_type)
    return Embedding.apply(weight, input, padding_idx, scale_grad_by_freq)


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
    if sparse:
        raise NotImplementedError("sparse=True needs sparse gradient tensors, which minitorch "
                                  "does not have")
    return _bags(input, weight, offsets, mode, per_sample_weights, include_last_offset,
                 padding_idx, scale_grad_by_freq)


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
          scale_grad_by_freq):
    """The bags' reductions. Each index's bag number is the count of bag starts at or before
    it (torch's CPU kernel lets the last bag run to the input's end whatever the final offset
    of include_last_offset says)."""
    n, dim, device = input.shape[0], weight.shape[1], input.device
    bags = offsets.shape[0] - (1 if include_last_offset else 0)
    if bags <= 0:
        return mt.zeros(0, dim, dtype=weight.dtype, device=device)
    starts = offsets[1:bags]
    bag_of = mt.zeros(n + 1, dtype=dtypes.int64, device=device).index_add(
        0, starts, mt.ones_like(starts)).cumsum(0)[:n]
    rows = embedding(input, weight, scale_grad_by_freq=scale_grad_by_freq)
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


_NON_CONSTANT_PADS = ("\nSupported combinations for non-constant padding:\n"
                      "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
                      "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
                      "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")


def pad(input, pad, mode="constant", value=None):
    """torch.nn.functional.pad: (left, right, top, bottom, …) pairs from the last axis back;
    negative amounts crop."""
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > input.ndim:
        raise RuntimeError(f"Padding length should be less than or equal to two times the input "
                           f"dimension but got padding length {len(pad)} and input of dimension "
                           f"{input.ndim}")
    if mode == "constant":
        result = input
        for axis_from_end in range(len(pad) // 2):
            dim = input.ndim - 1 - axis_from_end
            before, after = pad[2 * axis_from_end], pad[2 * axis_from_end + 1]
            result = _pad_axis(result, dim, before, after, 0.0 if value is None else value)
        return result
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    axes = len(pad) // 2
    if axes > 3 or input.ndim not in (axes + 1, axes + 2):
        raise NotImplementedError(f"Padding size {len(pad)} is not supported for {input.ndim}D "
                                  f"input tensor.{_NON_CONSTANT_PADS}")
    return _pad_by_index(input, pad, mode)


def _pad_axis(x, dim, before, after, value):
    if before < 0:
        x = x.narrow(dim, -before, x.shape[dim] + before)
        before = 0
    if after < 0:
        x = x.narrow(dim, 0, x.shape[dim] + after)
        after = 0
    if before == 0 and after == 0:
        return x
    parts = []
    for width in (before, after):
        shape = list(x.shape)
        shape[dim] = width
        parts.append(mt.full(shape, value, dtype=x.dtype, device=x.device))
    return mt.cat([parts[0], x, parts[1]], dim=dim)


def _pad_by_index(x, pad, mode):
    """reflect / replicate / circular padding: one index_select along each padded axis."""
    axes = len(pad) // 2
    # Only a batch axis may be empty (ATen's check_valid_input).
    non_batch = x.shape[1:] if x.ndim == axes + 2 else x.shape
    if mode != "circular" and any(s == 0 for s in non_batch):
        raise RuntimeError(f"Expected {axes + 1}D or {axes + 2}D (batch mode) tensor with "
                           "possibly 0 batch size and other non-zero dimensions for input, but "
                           f"got: {shape_str(x.shape)}")
    for axis_from_end in range(axes):
        dim = x.ndim - 1 - axis_from_end
        before, after = pad[2 * axis_from_end], pad[2 * axis_from_end + 1]
        index = _pad_index(mode, x.shape[dim], before, after, dim, x.shape)
        x = x.index_select(dim, mt.tensor(index, device=x.device))
    return x


def _pad_index(mode, size, before, after, dim, shape):
    """Source positions along one axis. reflect/replicate mirror about the input's edges (a
    negative amount crops the result); circular wraps within the cropped input, as torch."""
    if mode == "reflect":
        if before >= size or after >= size:
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding "
                               f"input dimension, but got: padding ({before}, {after}) at "
                               f"dimension {dim} of input {list(shape)}")
        return [abs(i) if i < 0 else (2 * (size - 1) - i if i >= size else i)
                for i in range(-before, size + after)]
    if mode == "replicate":
        return [min(max(i, 0), size - 1) for i in range(-before, size + after)]
    if before > size or after > size:
        raise RuntimeError("Padding value causes wrapping around more than once.")
    start, stop = max(-before, 0), size - max(-after, 0)
    kept = stop - start
    if kept <= 0:
        return []
    return [start + i % kept for i in range(-max(before, 0), kept + max(after, 0))]


def one_hot(tensor, num_classes=-1):
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


# ---- resampling -------------------------------------------------------------------------------
_LINEAR_MODES = {"linear": 3, "bilinear": 4, "bicubic": 4,        # mode → the input rank it needs
                 "trilinear": 5}


def _float32(value):
    """value rounded to float32: torch's nearest modes compute source indices in float."""
    return struct.unpack("f", struct.pack("f", value))[0]


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """torch.nn.functional.interpolate for the modes nearest, nearest-exact, (bi/tri)linear and
    area. Every mode but area is separable: one axis at a time, each a gather of source rows
    (index_select, whose backward is index_add) and for the linear modes a weighted sum."""
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    spatial = input.ndim - 2
    out_sizes, scales = _interpolate_sizes(input, size, scale_factor, recompute_scale_factor,
                                           mode == "area")
    if antialias:
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos "
                         "modes and requires a 4-D tensor as input")
    _check_interpolate_mode(input, mode)
    in_sizes = tuple(input.shape[2:])
    if any(s <= 0 for s in in_sizes + tuple(out_sizes)):
        labels = "DHW"[3 - spatial:]
        raise RuntimeError(
            "Input and output sizes should be greater than 0, but got input ("
            + ", ".join(f"{a}: {s}" for a, s in zip(labels, in_sizes))
            # torch's 1-D message alone says "and output"
            + (") and output (" if spatial == 1 else ") output (")
            + ", ".join(f"{a}: {s}" for a, s in zip(labels, out_sizes)) + ")")
    if mode == "area":
        pool = (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d)[spatial - 1]
        return pool(input, out_sizes[0] if spatial == 1 else tuple(out_sizes))
    for axis, (in_size, out_size, scale) in enumerate(zip(in_sizes, out_sizes, scales)):
        if mode == "bicubic":
            input = _cubic_axis(input, axis + 2, in_size, out_size, scale, align_corners)
        elif mode in _LINEAR_MODES:
            input = _linear_axis(input, axis + 2, in_size, out_size, scale, align_corners)
        else:
            input = _nearest_axis(input, axis + 2, in_size, out_size, scale,
                                  mode == "nearest-exact")
    return input


def _interpolate_sizes(input, size, scale_factor, recompute_scale_factor, area):
    """(output sizes, scale factors or Nones) as torch derives them, with its errors."""
    spatial = input.ndim - 2
    shape_text = list(input.shape[2:])
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        if recompute_scale_factor:
            raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
        if not isinstance(size, (list, tuple)):
            return [size] * spatial, [None] * spatial
        if len(size) != spatial:
            raise ValueError(f"Input and output must have the same number of spatial "
                             f"dimensions, but got input with spatial dimensions of {shape_text} "
                             f"and output size of {size}. Please provide input tensor in (N, C, "
                             "d1, d2, ...,dK) format and output size in (o1, o2, ...,oK) format.")
        return list(size), [None] * spatial
    if scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    if isinstance(scale_factor, (list, tuple)):
        if len(scale_factor) != spatial:
            raise ValueError(f"Input and scale_factor must have the same number of spatial "
                             f"dimensions, but got input with spatial dimensions of {shape_text} "
                             f"and scale_factor of shape {scale_factor}. Please provide input "
                             "tensor in (N, C, d1, d2, ...,dK) format and scale_factor in (s1, "
                             "s2, ...,sK) format.")
        scales = list(scale_factor)
    else:
        scales = [scale_factor] * spatial
    out_sizes = [math.floor(s * f) for s, f in zip(input.shape[2:], scales)]
    # Area mode (and recompute_scale_factor) maps positions by the integer sizes alone.
    if recompute_scale_factor or area:
        scales = [None] * spatial
    return out_sizes, scales


def _check_interpolate_mode(input, mode):
    needed = _LINEAR_MODES.get(mode)
    if needed is not None and input.ndim in (3, 4, 5) and input.ndim != needed and \
            mode != "bicubic":            # bicubic gets the generic message below, as in torch
        raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs {needed}D "
                                  "input")
    supported = mode in ("nearest", "nearest-exact", "area")
    if mode == "bicubic":
        needed = 4 if input.ndim == 4 else None
    if input.ndim not in (3, 4, 5) or not (supported or needed is not None):
        raise NotImplementedError(
            f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.ndim}D) for "
            "the modes: nearest | linear | bilinear | bicubic | trilinear | lanczos | area | "
            f"nearest-exact (got {mode})")


def _nearest_axis(x, dim, in_size, out_size, scale, exact):
    """ATen's nearest_idx / nearest_neighbor_exact_compute_source_index, in float32."""
    if out_size == in_size and not exact:
        return x
    ratio = _float32(1.0 / scale if scale is not None and scale > 0 else in_size / out_size)
    if exact:
        index = [min(math.floor(_float32((i + 0.5) * ratio)), in_size - 1)
                 for i in range(out_size)]
    elif out_size == 2 * in_size:
        index = [i // 2 for i in range(out_size)]
    else:
        index = [min(math.floor(_float32(i * ratio)), in_size - 1) for i in range(out_size)]
    return x.index_select(dim, mt.tensor(index, device=x.device))


def _source_ratio(in_size, out_size, scale, align_corners):
    """ATen's step between source positions of consecutive outputs along one axis."""
    if align_corners:
        return (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
    return 1.0 / scale if scale is not None and scale > 0 else in_size / out_size


def _linear_axis(x, dim, in_size, out_size, scale, align_corners):
    """Linear interpolation along one axis: ATen's source index and weights per output
    position, then x[i0]·(1 - λ) + x[i1]·λ with the weights broadcast along the axis."""
    if out_size == in_size:
        return x
    ratio = _source_ratio(in_size, out_size, scale, align_corners)
    low, high, weights = [], [], []
    for i in range(out_size):
        source = ratio * i if align_corners else max(ratio * (i + 0.5) - 0.5, 0.0)
        index = min(math.floor(source), in_size - 1)
        low.append(index)
        high.append(index + 1 if index < in_size - 1 else index)
        weights.append(min(max(source - index, 0.0), 1.0))
    shape = [1] * x.ndim
    shape[dim] = out_size
    lam = mt.tensor(weights, dtype=x.dtype, device=x.device).reshape(shape)
    gather = (x.index_select(dim, mt.tensor(rows, device=x.device)) for rows in (low, high))
    return next(gather) * (1 - lam) + next(gather) * lam


def _cubic_axis(x, dim, in_size, out_size, scale, align_corners):
    """Bicubic interpolation along one axis (ATen's upsample_bicubic2d is separable): four
    clamped source rows per output position, weighted by the cubic convolution (A = -0.75)."""
    if out_size == in_size:
        return x
    ratio = _source_ratio(in_size, out_size, scale, align_corners)
    a = -0.75

    def near(t):        # the kernel for |t| <= 1
        return ((a + 2) * t - (a + 3)) * t * t + 1

    def far(t):         # the kernel for 1 < |t| < 2
        return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a
    rows, weights = [[] for _ in range(4)], [[] for _ in range(4)]
    for i in range(out_size):
        source = ratio * i if align_corners else ratio * (i + 0.5) - 0.5
        index = math.floor(source)
        t = source - index
        for tap, w in enumerate((far(t + 1), near(t), near(1 - t), far(2 - t))):
            rows[tap].append(min(max(index - 1 + tap, 0), in_size - 1))
            weights[tap].append(w)
    shape = [1] * x.ndim
    shape[dim] = out_size
    out = None
    for index, w in zip(rows, weights):
        term = x.index_select(dim, mt.tensor(index, device=x.device)) * \
            mt.tensor(w, dtype=x.dtype, device=x.device).reshape(shape)
        out = term if out is None else out + term
    return out


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """The deprecated alias of interpolate (torch warns)."""
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` "
                  "instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """The deprecated nearest-mode alias of interpolate (torch warns)."""
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """The deprecated bilinear (align_corners=True) alias of interpolate (torch warns)."""
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def pixel_shuffle(input, upscale_factor):
    """(*, C·r², H, W) → (*, C, H·r, W·r)."""
    r = upscale_factor
    _check_pixel_shuffle(input, r, "pixel_shuffle", "upscale_factor")
    channels = input.shape[-3]
    if channels % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be "
                           f"divisible by the square of upscale_factor, but input.size(-3)="
                           f"{channels} is not divisible by {r * r}")
    *lead, _, h, w = input.shape
    blocks = input.reshape(*lead, channels // (r * r), r, r, h, w)
    k = len(lead)
    order = tuple(range(k)) + (k, k + 3, k + 1, k + 4, k + 2)       # C, H, r, W, r
    return blocks.permute(*order).reshape(*lead, channels // (r * r), h * r, w * r)


def pixel_unshuffle(input, downscale_factor):
    """(*, C, H·r, W·r) → (*, C·r², H, W), the inverse of pixel_shuffle."""
    r = downscale_factor
    _check_pixel_shuffle(input, r, "pixel_unshuffle", "downscale_factor")
    *lead, channels, h, w = input.shape
    for name, axis, value in (("height", -2, h), ("width", -1, w)):
        if value % r:
            raise RuntimeError(f"pixel_unshuffle expects {name} to be divisible by "
                               f"downscale_factor, but input.size({axis})={value} is not "
                               f"divisible by {r}")
    blocks = input.reshape(*lead, channels, h // r, r, w // r, r)
    k = len(lead)
    order = tuple(range(k)) + (k, k + 2, k + 4, k + 1, k + 3)       # C, r, r, H, W
    return blocks.permute(*order).reshape(*lead, channels * r * r, h // r, w // r)


def _check_pixel_shuffle(input, factor, name, factor_name):
    if input.ndim < 3:
        raise RuntimeError(f"{name} expects input to have at least 3 dimensions, but got input "
                           f"with {input.ndim} dimension(s)")
    if factor <= 0:
        raise RuntimeError(f"{name} expects a positive {factor_name}, but got {factor}")


def native_channel_shuffle(input, groups):
    return channel_shuffle(input, groups)


def channel_shuffle(input, groups):
    """(N, g·c, *) → (N, c·g, *): the channels of each group interleaved."""
    if input.ndim <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with "
                           f"sizes {list(input.shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of "
                           f"groups:{groups}")
    channels = input.shape[1]
    if channels % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {channels} "
                           f"channels and {groups} groups.")
    n, rest = input.shape[0], input.shape[2:]
    grouped = input.reshape(n, groups, channels // groups, *rest)
    return grouped.transpose(1, 2).reshape(input.shape)


# ---- losses -----------------------------------------------------------------------------------
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


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    _warn_size(input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    diff = input - target
    if weight is not None:
        return _weighted(diff * diff, weight, input, reduction, True)
    return _reduce(diff * diff, reduction)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    _warn_size(input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if weight is not None:
        return _weighted((input - target).abs(), weight, input, reduction, True)
    return _reduce((input - target).abs(), reduction)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    _warn_size(input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    diff = (input - target).abs()
    if beta == 0:
        return _reduce(diff, reduction)
    loss = mt.where(diff < beta, diff * diff * (0.5 / beta), diff - 0.5 * beta)
    return _reduce(loss, reduction)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    _warn_size(input, target)
    diff = (input - target).abs()
    loss = mt.where(diff < delta, diff * diff * 0.5, (diff - 0.5 * delta) * delta)
    if weight is not None:
        return _weighted(loss, weight, input, reduction, False)
    return _reduce(loss, reduction)


class BinaryCrossEntropy(Function):
    """-(t·log p + (1-t)·log(1-p)) per element, each log clamped at -100 (torch's rule, so p = 0
    or 1 gives a finite loss). The input gradient is torch's (p - t) / max(p(1-p), 1e-12),
    finite at p = 0 and 1 where differentiating the clamped logs would give NaN."""

    @staticmethod
    def forward(ctx, input, target):
        p, t = input._data, target._data
        floor = _scalar(-100.0, p)
        log_p = p.unary(UnaryOp.LOG).binary(BinaryOp.MAXIMUM, floor)
        log_q = _scalar(1.0, p).binary(BinaryOp.SUB, p).unary(UnaryOp.LOG).binary(
            BinaryOp.MAXIMUM, floor)
        ctx.save_for_backward(input, target)
        # -(t·log p + (1-t)·log q) = t·(log q - log p) - log q
        return wrap(log_q.binary(BinaryOp.SUB, log_p).binary(BinaryOp.MUL, t)
                    .binary(BinaryOp.SUB, log_q))

    @staticmethod
    def backward(ctx, g):
        p, t = ctx.saved_tensors
        grad_input = grad_target = None
        if ctx.needs_input_grad[0]:
            grad_input = g * (p - t) / ((1 - p) * p).clamp(min=1e-12)
        if ctx.needs_input_grad[1]:
            grad_target = g * ((-p).log1p() - p.log())
        return grad_input, grad_target


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if target.shape != input.shape:
        raise ValueError(f"Using a target size ({target.shape}) that is different to the input "
                         f"size ({input.shape}) is deprecated. Please ensure they have the same "
                         "size.")
    for name, t in (("input", input), ("target", target)):
        if t.numel() and not (t >= 0).logical_and(t <= 1).all().item():
            raise RuntimeError(f"all elements of {name} should be between 0 and 1")
    loss = BinaryCrossEntropy.apply(input, target)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if target.shape != input.shape:
        raise ValueError(f"Target size ({target.shape}) must be the same as input size "
                         f"({input.shape})")
    # -log σ(x) without overflow, and with the exact gradient σ(x) - 1 at x = 0 (the composed
    # log1p(exp(-|x|)) + max(-x, 0) would take subgradients of |x| and max there).
    log_sigmoid_neg = -LogSigmoid.apply(input)
    if pos_weight is not None:
        log_weight = (pos_weight - 1) * target + 1
        loss = (1 - target) * input + log_weight * log_sigmoid_neg
    else:
        loss = (1 - target) * input + log_sigmoid_neg
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


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


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    """-input[i, target[i]] (weighted), skipping ignore_index; 'mean' divides by the total
    weight of the targets counted, as torch does."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    _check_nll(input, target, weight)
    scores = _class_dim_last(input) if input.ndim > 1 else input.unsqueeze(0)
    rows, classes = target._data.reshape((-1,)), scores.shape[-1]
    loss = None
    if weight is None and not 0 <= ignore_index < classes:
        # The common case, every row counted with weight 1, unless the gather's own index
        # check (made before anything is read; on a GPU, on the host) finds a target outside
        # [0, C): then ignore_index rows or a bad target, sorted out by the checked path.
        try:
            loss = nll_rows(scores, rows, None, reduction)
        except IndexError:
            pass
    if loss is None:
        target_rows, w = _nll_rows_and_weights(rows, weight, ignore_index, classes, scores.dtype)
        loss = nll_rows(scores, target_rows, w, reduction)
    if reduction == "none" and loss.shape != target.shape:
        loss = loss.reshape(target.shape)
    return loss


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
        raise IndexError(f"Target {high if high >= classes else low} is out of bounds.")
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


# ---- distances --------------------------------------------------------------------------------
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


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """‖x1 - x2 + eps‖_p over the last axis (torch adds eps to the difference)."""
    dim = max(x1.ndim, x2.ndim) - 1
    return (x1 - x2 + eps).norm(p, max(dim, 0), keepdim=keepdim)


def pdist(input, p=2):
    """The p-norm distances between every pair of rows i < j of an (N, M) input, in row-major
    order of the pairs (N·(N-1)/2 values)."""
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if not input.dtype.is_floating_point:
        raise RuntimeError("pdist only supports floating-point dtypes")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    first, second = mt.triu_indices(input.shape[0], input.shape[0], 1, device=input.device)
    return (input[first] - input[second]).norm(p, 1)


# ---- margin and likelihood losses ---------------------------------------------------------------
def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                        reduction="mean"):
    """max(0, -target·(input1 - input2) + margin)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if input1.ndim != input2.ndim or input1.ndim != target.ndim:
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension "
                           f"but got sizes: input1: {input1.shape}, input2: {input2.shape}, "
                           f"target: {target.shape} ")
    return _reduce((-target * (input1 - input2) + margin).clamp(min=0), reduction)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,
                         reduction="mean"):
    """input where target is 1, max(0, margin - input) where it is -1 (ATen's formulation: a
    target that is neither contributes both terms)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    zero = _constant(0.0, input)
    margin_term = mt.where(target != 1, (margin - input).clamp(min=0), zero)
    self_term = mt.where(target != -1, input, zero)
    return _reduce(margin_term + self_term, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """log(1 + exp(-target·input)), as torch computes it."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _reduce((-input * target).exp().log1p(), reduction)


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
    dim = input1.ndim - 1
    dot = (input1 * input2).sum(dim)
    squares = [(x * x).sum(dim) + 1e-12 for x in (input1, input2)]
    cos = dot / (squares[0] * squares[1]).sqrt()
    zero = _constant(0.0, cos)
    loss = (mt.where(target == 1, 1 - cos, zero) +
            mt.where(target == -1, (cos - margin).clamp(min=0), zero))
    return _reduce(loss, reduction)


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
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.ndim - 1
    loss = loss.sum(class_dim) / input.shape[class_dim]
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    return _reduce(loss, reduction)


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


# ---- attention --------------------------------------------------------------------------------
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
