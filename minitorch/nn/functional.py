"""torch.nn.functional: layers as functions, composed from differentiable minitorch ops.

Convolution and pooling share one mechanism (DESIGN's "convolution-like operations"): the
im2col view of the (padded) input, (N, C, kh, kw, OH, OW), made by `as_strided`; convolution
compacts it and multiplies by the weight matrix, pooling reduces over the window axes. Their
backward is the fold (col2im, an overlap-correct `strided_add`) that autograd derives.
"""
import math
import numbers

import minitorch as mt
from .. import dtypes
from ..autograd import Function
from ..functions.elementwise import scalar_array
from ..functions.reduce import log_softmax, softmax
from ..functions.window import fold, im2col_view, unfold
from ..opcodes import BinaryOp
from ..tensor import wrap

__all__ = [
    "adaptive_avg_pool2d", "avg_pool2d", "batch_norm", "binary_cross_entropy",
    "binary_cross_entropy_with_logits", "conv1d", "conv2d", "conv_transpose2d", "cosine_similarity",
    "cross_entropy", "dropout", "elu", "embedding", "fold", "gelu", "group_norm", "hardtanh",
    "huber_loss", "kl_div", "l1_loss", "layer_norm", "leaky_relu", "linear", "log_softmax",
    "logsigmoid", "max_pool2d", "mse_loss", "nll_loss", "normalize", "one_hot", "pad", "relu",
    "relu6", "scaled_dot_product_attention", "sigmoid", "silu", "smooth_l1_loss", "softmax",
    "softplus", "tanh", "unfold",
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


# ---- linear and activations -------------------------------------------------------------------
class Linear(Function):
    """input @ weight.T + bias as one node. Forward reads the transposed weight as a strided
    view (the GEMM packs it for free); backward computes the weight's gradient directly in the
    weight's own layout (gᵀ · input) rather than as the transpose of x.T @ g."""

    @staticmethod
    def forward(ctx, input, weight, bias):
        rows = input._data.reshape((-1, input._data.shape[-1]))
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
        rows = g.reshape(-1, g.shape[-1])
        grad_input = grad_weight = grad_bias = None
        if ctx.needs_input_grad[0]:
            grad_input = (rows @ weight).reshape(ctx.input_shape)
        if ctx.needs_input_grad[1]:
            grad_weight = rows.mT @ input.reshape(-1, input.shape[-1])
        if ctx.needs_input_grad[2]:
            grad_bias = rows.sum(0)
        return grad_input, grad_weight, grad_bias


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


def relu(input, inplace=False):
    return input.relu_() if inplace else input.relu()


def relu6(input, inplace=False):
    return hardtanh(input, 0.0, 6.0, inplace)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    return input.clamp_(min_val, max_val) if inplace else input.clamp(min_val, max_val)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    result = mt.where(input > 0, input, input * negative_slope)
    return input.copy_(result) if inplace else result


def elu(input, alpha=1.0, inplace=False):
    result = mt.where(input > 0, input, (input.expm1()) * alpha)
    return input.copy_(result) if inplace else result


def gelu(input, approximate="none"):
    if approximate == "tanh":
        inner = (input + input * input * input * 0.044715) * math.sqrt(2.0 / math.pi)
        return input * 0.5 * (inner.tanh() + 1.0)
    if approximate != "none":
        raise RuntimeError(f"approximate argument must be either none or tanh.")
    return input * 0.5 * ((input * (1.0 / math.sqrt(2.0))).erf() + 1.0)


def silu(input, inplace=False):
    result = input * input.sigmoid()
    return input.copy_(result) if inplace else result


def sigmoid(input):
    return input.sigmoid()


def tanh(input):
    return input.tanh()


def softplus(input, beta=1.0, threshold=20.0):
    scaled = input * beta
    soft = (scaled.clamp(max=threshold).exp() + 1.0).log() / beta
    return mt.where(scaled > threshold, input, soft)


def logsigmoid(input):
    # log σ(x) = min(x, 0) - log1p(exp(-|x|)): never overflows.
    return input.clamp(max=0.0) - (-input.abs()).exp().log1p()


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    norm = input.norm(p, dim, keepdim=True).clamp(min=eps)
    return input / norm


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    dot = (x1 * x2).sum(dim)
    norms = (x1 * x1).sum(dim).sqrt().clamp(min=eps) * (x2 * x2).sum(dim).sqrt().clamp(min=eps)
    return dot / norms


# ---- dropout ----------------------------------------------------------------------------------
def dropout(input, p=0.5, training=True, inplace=False):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input * 0.0
    keep = mt.rand(*input.shape, dtype=input.dtype, device=input.device) >= p
    result = input * keep.to(input.dtype) * (1.0 / (1.0 - p))
    return input.copy_(result) if inplace else result


# ---- convolution ------------------------------------------------------------------------------
def _conv_padding(padding, kernel, dilation, stride, ndim=2):
    """Symmetric padding per spatial axis, plus any extra right/bottom padding 'same' needs."""
    if isinstance(padding, str):
        if padding == "valid":
            return (0,) * ndim, None
        if padding != "same":
            raise ValueError(f"Invalid padding string '{padding}', should be one of "
                             "{'valid', 'same'}")
        if any(s != 1 for s in stride):
            raise ValueError("padding='same' is not supported for strided convolutions")
        total = [d * (k - 1) for d, k in zip(dilation, kernel)]
        left = tuple(t // 2 for t in total)
        extra = tuple(t - 2 * l for t, l in zip(total, left))
        return left, (extra if any(extra) else None)
    return _pair(padding, "padding"), None


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """(N, C, H, W) * (OC, C/groups, kh, kw) → (N, OC, OH, OW): im2col view, one compact, and a
    batched GEMM per group; the layout stays batch-major so no result permute is needed."""
    stride, dilation = _pair(stride, "stride"), _pair(dilation, "dilation")
    _check_conv_input(input, weight, groups)
    unbatched = input.ndim == 3
    if unbatched:
        input = input.unsqueeze(0)
    kernel = tuple(weight.shape[2:])
    pads, extra = _conv_padding(padding, kernel, dilation, stride)
    if extra is not None:
        input = pad(input, (0, extra[1], 0, extra[0]))
    n, c = input.shape[:2]
    out_channels = weight.shape[0]
    cols = im2col_view(input, kernel, dilation, pads, stride)      # (N, C, kh, kw, OH, OW)
    oh, ow = cols.shape[4:]
    cols = cols.reshape(n, groups, (c // groups) * kernel[0] * kernel[1], oh * ow)
    w = weight.reshape(groups, out_channels // groups, -1)
    # One batched GEMM per group, the group's weight broadcast over the batch (stride 0).
    per_group = [w[g] @ cols[:, g] for g in range(groups)]         # each (N, OC/G, L)
    out = per_group[0] if groups == 1 else mt.cat(per_group, dim=1)
    out = out.reshape(n, out_channels, oh, ow)
    if bias is not None:
        out = out + bias.reshape(1, out_channels, 1, 1)
    return out.squeeze(0) if unbatched else out


def _check_conv_input(input, weight, groups):
    if input.ndim not in (3, 4):
        raise RuntimeError(f"Expected 3D (unbatched) or 4D (batched) input to conv2d, but got "
                           f"input of size: {list(input.shape)}")
    channels = input.shape[-3]
    if weight.ndim != 4:
        raise RuntimeError(f"weight should have 4 dimensions, got {weight.ndim}")
    if channels % groups or weight.shape[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} "
                           f"at dimension 0, but got weight of size {list(weight.shape)} instead")
    if weight.shape[1] * groups != channels:
        raise RuntimeError(f"Given groups={groups}, weight of size {list(weight.shape)}, "
                           f"expected input{list(input.shape)} to have "
                           f"{weight.shape[1] * groups} channels, but got {channels} channels "
                           "instead")


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """A 1-D convolution is a 2-D one over a height-1 image."""
    unbatched = input.ndim == 2
    x = input.unsqueeze(0) if unbatched else input
    pad_arg = padding if isinstance(padding, str) else (0, _single(padding))
    out = conv2d(x.unsqueeze(2), weight.unsqueeze(2), bias, (1, _single(stride)), pad_arg,
                 (1, _single(dilation)), groups).squeeze(2)
    return out.squeeze(0) if unbatched else out


def _single(value):
    return int(value if isinstance(value, numbers.Integral) else value[0])


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """The adjoint of conv2d: a GEMM to columns, then fold (col2im) onto the output grid."""
    stride, padding = _pair(stride, "stride"), _pair(padding, "padding")
    dilation, output_padding = _pair(dilation, "dilation"), _pair(output_padding,
                                                                  "output_padding")
    unbatched = input.ndim == 3
    if unbatched:
        input = input.unsqueeze(0)
    n, c, h, w_in = input.shape
    in_per_group, out_per_group = c // groups, weight.shape[1]
    kh, kw = weight.shape[2:]
    out_h = (h - 1) * stride[0] - 2 * padding[0] + dilation[0] * (kh - 1) + output_padding[0] + 1
    out_w = (w_in - 1) * stride[1] - 2 * padding[1] + dilation[1] * (kw - 1) + \
        output_padding[1] + 1
    x = input.reshape(n, groups, in_per_group, h * w_in)
    wt = weight.reshape(groups, in_per_group, out_per_group * kh * kw).mT   # (G, OCg*k, Cg)
    cols = (wt @ x).reshape(n, groups * out_per_group * kh * kw, h * w_in)
    out = fold(cols, (out_h, out_w), (kh, kw), dilation, padding, stride)
    if bias is not None:
        out = out + bias.reshape(1, -1, 1, 1)
    return out.squeeze(0) if unbatched else out


# ---- pooling ----------------------------------------------------------------------------------
def _pool_geometry(input, kernel_size, stride, padding, dilation, ceil_mode):
    kernel = _pair(kernel_size)
    stride = kernel if stride is None or stride == [] else _pair(stride, "stride")
    padding, dilation = _pair(padding, "padding"), _pair(dilation, "dilation")
    if any(p * 2 > k for p, k in zip(padding, kernel)):
        raise RuntimeError(f"pad should be at most half of effective kernel size, but got "
                           f"pad={padding[0]}, kernel_size={kernel[0]} and dilation={dilation[0]}")
    extra = (0, 0)
    if ceil_mode:
        extra = tuple(_ceil_extra(size, k, s, p, d) for size, k, s, p, d in zip(
            input.shape[-2:], kernel, stride, padding, dilation))
    return kernel, stride, padding, dilation, extra


def _ceil_extra(size, kernel, stride, pad, dilation):
    """Extra bottom/right padding so that ceil_mode's last (partial) window exists; torch drops
    a last window that would start inside the right padding only."""
    span = size + 2 * pad - dilation * (kernel - 1) - 1
    out_floor = span // stride + 1
    out_ceil = -(-span // stride) + 1
    if (out_ceil - 1) * stride >= size + pad:
        out_ceil -= 1
    return (out_ceil - out_floor) * stride


def _pool_windows(input, kernel, stride, padding, dilation, extra, pad_value):
    """(N, C, kh*kw, OH, OW) windows of a (N, C, H, W) input: one compact copy of the im2col
    view. Pooling reduces axis 2, the middle axis of a compact array, which the reduction
    kernel walks vectorized along the OH*OW positions (no permute copy)."""
    if any(extra):
        input = pad(input, (0, extra[1], 0, extra[0]), value=pad_value)
    cols = im2col_view(input, kernel, dilation, padding, stride, pad_value=pad_value)
    n, c, kh, kw, oh, ow = cols.shape
    return cols.reshape(n, c, kh * kw, oh, ow)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    unbatched = input.ndim == 3
    x = input.unsqueeze(0) if unbatched else input
    kernel, stride, padding, dilation, extra = _pool_geometry(x, kernel_size, stride, padding,
                                                              dilation, ceil_mode)
    windows = _pool_windows(x, kernel, stride, padding, dilation, extra, -math.inf)
    values, arg = windows.max(dim=2)
    if unbatched:
        values = values.squeeze(0)
    if not return_indices:
        return values
    indices = _window_flat_index(arg, x.shape[-1], kernel, stride, padding, dilation)
    return values, indices.squeeze(0) if unbatched else indices


def _window_flat_index(arg, width, kernel, stride, padding, dilation):
    """torch's max-pool indices: the position of each window's maximum in the H*W plane."""
    oh, ow = arg.shape[-2:]
    rows = mt.arange(oh, device=arg.device).reshape(oh, 1) * stride[0] - padding[0] + \
        (arg // kernel[1]) * dilation[0]
    cols = mt.arange(ow, device=arg.device) * stride[1] - padding[1] + \
        (arg % kernel[1]) * dilation[1]
    return rows * width + cols


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    unbatched = input.ndim == 3
    x = input.unsqueeze(0) if unbatched else input
    kernel, stride, padding, dilation, extra = _pool_geometry(x, kernel_size, stride, padding, 1,
                                                              ceil_mode)
    windows = _pool_windows(x, kernel, stride, padding, dilation, extra, 0.0)
    total = windows.sum(dim=2)
    if divisor_override is not None:
        out = total / divisor_override
    elif count_include_pad and not any(extra):
        out = total / (kernel[0] * kernel[1])
    else:
        out = total / _window_counts(x, kernel, stride, padding, extra, count_include_pad)
    return out.squeeze(0) if unbatched else out


def _window_counts(x, kernel, stride, padding, extra, count_include_pad):
    """How many elements each window averages: real pixels (plus the symmetric padding when
    count_include_pad), never the extra ceil_mode padding — torch's divisor."""
    h, w = x.shape[-2:]
    ones = mt.ones(1, 1, h + (2 * padding[0] if count_include_pad else 0),
                   w + (2 * padding[1] if count_include_pad else 0), dtype=x.dtype,
                   device=x.device)
    inner_pad = (0, 0) if count_include_pad else padding
    return _pool_windows(ones, kernel, stride, inner_pad, (1, 1), extra, 0.0).sum(dim=2)


def adaptive_avg_pool2d(input, output_size):
    """Average over torch's adaptive windows: [floor(i*H/OH), ceil((i+1)*H/OH))."""
    out_h, out_w = _pair(output_size, "output_size") if output_size is not None else (None, None)
    h, w = input.shape[-2:]
    out_h, out_w = out_h or h, out_w or w
    if h % out_h == 0 and w % out_w == 0:
        return avg_pool2d(input, (h // out_h, w // out_w))
    rows = [input[..., (i * h) // out_h:-(-(i + 1) * h // out_h), :].mean(-2, keepdim=True)
            for i in range(out_h)]
    pooled_rows = mt.cat(rows, dim=-2)
    cols = [pooled_rows[..., (j * w) // out_w:-(-(j + 1) * w // out_w)].mean(-1, keepdim=True)
            for j in range(out_w)]
    return mt.cat(cols, dim=-1)


# ---- normalization ----------------------------------------------------------------------------
def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    """Normalise over every axis but the channel axis (1); in training, update the running
    statistics (unbiased variance) in place, as torch does."""
    if input.ndim < 2:
        raise ValueError(f"expected 2D or higher input (got {input.ndim}D input)")
    dims = (0,) + tuple(range(2, input.ndim))
    shape = (1, input.shape[1]) + (1,) * (input.ndim - 2)
    if training:
        count = input.numel() // input.shape[1]
        if count <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input "
                             f"size {list(input.shape)}")
        mean = input.mean(dims)
        var = input.var(dims, correction=0)
        if running_mean is not None:
            with mt.no_grad():
                running_mean.mul_(1 - momentum).add_(mean.detach() * momentum)
                running_var.mul_(1 - momentum).add_(var.detach() * (momentum * count /
                                                                      (count - 1)))
    else:
        mean, var = running_mean, running_var
    out = (input - mean.reshape(shape)) * (var.reshape(shape) + eps).rsqrt()
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    normalized_shape = (normalized_shape,) if isinstance(normalized_shape, numbers.Integral) \
        else tuple(normalized_shape)
    if tuple(input.shape[input.ndim - len(normalized_shape):]) != normalized_shape:
        raise RuntimeError(f"Given normalized_shape={list(normalized_shape)}, expected input with "
                           f"shape [*, {', '.join(str(s) for s in normalized_shape)}], but got "
                           f"input of size{list(input.shape)}")
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
    n, c = input.shape[:2]
    if c % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, "
                           f"but got input of shape {list(input.shape)} and num_groups="
                           f"{num_groups}")
    grouped = input.reshape(n, num_groups, -1)
    mean = grouped.mean(-1, keepdim=True)
    var = grouped.var(-1, keepdim=True, correction=0)
    out = ((grouped - mean) * (var + eps).rsqrt()).reshape(input.shape)
    shape = (1, c) + (1,) * (input.ndim - 2)
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


# ---- embedding, padding, one-hot --------------------------------------------------------------
def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    if input.dtype is not dtypes.int64:
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the "
                           f"following scalar types: Long, Int; but got {input.type()} instead "
                           "(while checking arguments for embedding)")
    flat = input.reshape(-1)
    rows = weight.index_select(0, flat)
    if padding_idx is not None:
        # The padding row gets no gradient: its lookups read a detached copy.
        padding_idx = padding_idx + weight.shape[0] if padding_idx < 0 else padding_idx
        is_padding = (flat == padding_idx).unsqueeze(1)
        rows = mt.where(is_padding, weight.detach().index_select(0, flat), rows)
    return rows.reshape(*input.shape, weight.shape[1])


def pad(input, pad, mode="constant", value=None):
    """torch.nn.functional.pad: (left, right, top, bottom, …) pairs from the last axis back."""
    if len(pad) % 2 or len(pad) // 2 > input.ndim:
        raise RuntimeError("Padding length must be divisible by 2" if len(pad) % 2 else
                           "Padding length should be less than or equal to two times the input "
                           "dimension")
    if mode != "constant":
        return _pad_by_index(input, pad, mode)
    result = input
    for axis_from_end in range(len(pad) // 2):
        dim = input.ndim - 1 - axis_from_end
        before, after = pad[2 * axis_from_end], pad[2 * axis_from_end + 1]
        result = _pad_axis(result, dim, before, after, 0.0 if value is None else value)
    return result


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
    """reflect / replicate / circular padding: an index_select along each padded axis."""
    for axis_from_end in range(len(pad) // 2):
        dim = x.ndim - 1 - axis_from_end
        before, after = pad[2 * axis_from_end], pad[2 * axis_from_end + 1]
        size = x.shape[dim]
        positions = range(-before, size + after)
        if mode == "reflect":
            if before >= size or after >= size:
                raise RuntimeError(f"Argument #4: Padding size should be less than the "
                                   f"corresponding input dimension, but got: padding ({before}, "
                                   f"{after}) at dimension {dim} of input {list(x.shape)}")
            index = [abs(i) if i < 0 else (2 * (size - 1) - i if i >= size else i)
                     for i in positions]
        elif mode == "replicate":
            index = [min(max(i, 0), size - 1) for i in positions]
        elif mode == "circular":
            index = [i % size for i in positions]
        else:
            raise NotImplementedError(f"Unsupported padding mode: {mode}")
        x = x.index_select(dim, mt.tensor(index, device=x.device))
    return x


def one_hot(tensor, num_classes=-1):
    if tensor.dtype is not dtypes.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes == -1:
        num_classes = int(tensor.max().item()) + 1 if tensor.numel() else 0
    if tensor.numel() and (int(tensor.min().item()) < 0 or
                           int(tensor.max().item()) >= num_classes):
        raise RuntimeError("Class values must be smaller than num_classes." if
                           int(tensor.min().item()) >= 0 else "Class values must be non-negative.")
    classes = mt.arange(num_classes, device=tensor.device)
    return (tensor.unsqueeze(-1) == classes).long()


# ---- losses -----------------------------------------------------------------------------------
def _reduce(loss, reduction):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _check_same_size(input, target, name):
    if input.shape != target.shape:
        raise ValueError(f"Using a target size ({mt.Size(target.shape)}) that is different to the "
                         f"input size ({mt.Size(input.shape)}) is deprecated. Please ensure they "
                         "have the same size." if name == "bce" else
                         f"Target size ({list(target.shape)}) must be the same as input size "
                         f"({list(input.shape)})")


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    diff = input - target
    return _reduce(diff * diff, reduction)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    return _reduce((input - target).abs(), reduction)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    diff = (input - target).abs()
    if beta == 0:
        return _reduce(diff, reduction)
    loss = mt.where(diff < beta, diff * diff * (0.5 / beta), diff - 0.5 * beta)
    return _reduce(loss, reduction)


def huber_loss(input, target, reduction="mean", delta=1.0):
    diff = (input - target).abs()
    loss = mt.where(diff < delta, diff * diff * 0.5, (diff - 0.5 * delta) * delta)
    return _reduce(loss, reduction)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    _check_same_size(input, target, "bce")
    # torch clamps each log term at -100 so a 0 or 1 probability gives a finite loss.
    loss = -(target * input.log().clamp(min=-100.0) +
             (1 - target) * (1 - input).log().clamp(min=-100.0))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    _check_same_size(input, target, "bce_logits")
    # log(1 + exp(-|x|)) + max(-x, 0) is -log σ(x) without overflow.
    log_sigmoid_neg = (-input.abs()).exp().log1p() + (-input).clamp(min=0.0)
    if pos_weight is not None:
        log_weight = (pos_weight - 1) * target + 1
        loss = (1 - target) * input + log_weight * log_sigmoid_neg
    else:
        loss = (1 - target) * input + log_sigmoid_neg
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    if log_target:
        loss = target.exp() * (target - input)
    else:
        loss = mt.where(target > 0, target * (target.clamp(min=1e-45).log() - input),
                        _constant(0.0, input))
    if reduction == "batchmean":
        return loss.sum() / input.shape[0]
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
    _check_nll_shapes(input, target)
    scores = _class_dim_last(input)
    flat_target = target.reshape(-1)
    classes = scores.shape[-1]
    valid = flat_target != ignore_index
    safe_target = mt.where(valid, flat_target, _constant(0, flat_target))
    _check_targets(safe_target, classes)
    picked = scores.gather(-1, safe_target.unsqueeze(-1)).squeeze(-1) if scores.ndim > 1 else \
        scores.gather(0, safe_target)
    weights = valid.to(scores.dtype)
    if weight is not None:
        weights = weights * weight.index_select(0, safe_target)
    losses = -picked * weights
    if reduction == "none":
        return losses.reshape(target.shape)
    if reduction == "sum":
        return losses.sum()
    if reduction == "mean":
        return losses.sum() / weights.sum()
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _check_nll_shapes(input, target):
    if input.ndim < 1 or (input.ndim >= 2 and input.shape[0] != target.shape[0]):
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target "
                         f"batch_size ({target.shape[0]}).")
    if target.dtype is not dtypes.int64:
        raise RuntimeError(f"expected scalar type Long but found {target.dtype.name.capitalize()}")


def _check_targets(target, classes):
    """Class indices are validated on the host before any kernel reads them."""
    if target.numel() == 0:
        return
    low, high = int(target.min().item()), int(target.max().item())
    if low < 0 or high >= classes:
        raise IndexError(f"Target {high if high >= classes else low} is out of bounds.")


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    """log_softmax over the class axis (1) followed by nll_loss; `target` holds class indices,
    or class probabilities when it has the input's floating dtype and shape."""
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    class_dim = 1 if input.ndim > 1 else 0
    log_probs = log_softmax(input, class_dim)
    classes = input.shape[class_dim]
    if target.dtype.is_floating_point:
        return _soft_target_cross_entropy(log_probs, target, weight, reduction, label_smoothing,
                                          class_dim, classes)
    loss = nll_loss(log_probs, target, weight, ignore_index=ignore_index, reduction=reduction)
    if label_smoothing == 0.0:
        return loss
    return (1 - label_smoothing) * loss + label_smoothing * _smoothing_term(
        log_probs, target, weight, ignore_index, reduction, classes)


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
        return smooth.sum() / valid.sum()
    safe_target = mt.where(flat_target != ignore_index, flat_target, _constant(0, flat_target))
    return smooth.sum() / (weight.index_select(0, safe_target) * valid).sum()


def _soft_target_cross_entropy(log_probs, target, weight, reduction, label_smoothing, class_dim,
                               classes):
    if target.shape != log_probs.shape:
        raise RuntimeError(f"Expected target size {list(log_probs.shape)}, got "
                           f"{list(target.shape)}")
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


# ---- attention --------------------------------------------------------------------------------
def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    """softmax(q kᵀ · scale + mask) v, as torch.nn.functional.scaled_dot_product_attention."""
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    scores = (query @ key.mT) * scale
    length, source = query.shape[-2], key.shape[-2]
    if is_causal:
        # Position i attends to j <= i (torch's lower-triangular causal mask).
        rows = mt.arange(length, device=query.device).unsqueeze(1)
        scores = scores.masked_fill(mt.arange(source, device=query.device) > rows, -math.inf)
    if attn_mask is not None:
        if attn_mask.dtype is dtypes.bool_:
            scores = scores.masked_fill(attn_mask.logical_not(), -math.inf)
        else:
            scores = scores + attn_mask
    weights = softmax(scores, -1)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p)
    return weights @ value

