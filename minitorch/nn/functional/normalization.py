"""torch.nn.functional's normalizations: batch_norm (running statistics updated only after
every check passed), layer_norm, group_norm, instance_norm, rms_norm, local_response_norm and
normalize. layer_norm, group_norm, instance_norm (on input statistics) and rms_norm run as one
fused node (functions/normalization.py) when the input is a non-empty float tensor and the
parameters share its dtype and device; otherwise (and in the tests, as the reference) as the
composition of Tensor ops kept here (`_composed_*`).
"""
import functools
import math
import numbers

import numpy as np

import minitorch as mt
from ...functions.autocast_policy import FP32, autocast_op
from ...functions.normalization import RowNorm, batch_norm_train
from ...ndarray import normalize_dim, shape_str
from .padding import pad
from .pooling import avg_pool2d


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """torch.nn.functional.normalize: input divided by its p-norm along dim, the norm clamped
    below at eps. With out=, the quotient is written into out (torch.div's out= rules: resized,
    cast, refused while recording a graph) and out is returned."""
    norm = input.norm(p, dim, keepdim=True).clamp(min=eps)
    if out is None:
        return input / norm
    from ...tensor import write_out     # here, so this function's change stays in it
    return write_out(out, input / norm, "div")


def _mixed_types(norm):
    """torch's norms take a float16 / bfloat16 input with float32 parameters or statistics
    (autocast's conv output into a float32 BatchNorm): computed in float32, returned in the
    input's dtype."""
    @functools.wraps(norm)
    def call(input, *args, **kwargs):
        if input.dtype in (mt.float16, mt.bfloat16) and any(
                isinstance(a, mt.Tensor) and a.dtype is mt.float32
                for a in args + tuple(kwargs.values())):
            return norm(input.float(), *args, **kwargs).to(input.dtype)
        return norm(input, *args, **kwargs)
    return call


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


@_mixed_types
def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    """Normalise over every axis but the channel axis (1); in training, update the running
    statistics (unbiased variance) in place, as torch does."""
    if training:
        _verify_batch_size(input.shape)
    _check_batch_norm(input, running_mean, running_var, weight, bias, training)
    if training and _fusable(input, weight, bias):
        return _fused_batch_norm(input, running_mean, running_var, weight, bias, momentum, eps)
    return _composed_batch_norm(input, running_mean, running_var, weight, bias, training,
                                momentum, eps)


def _composed_batch_norm(input, running_mean, running_var, weight, bias, training, momentum,
                         eps):
    """batch_norm as reductions and elementwise ops: evaluation, and the fused path's
    reference."""
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


def _fused_batch_norm(input, running_mean, running_var, weight, bias, momentum, eps):
    """Training-mode batch norm as the fused row kernel, each channel gathered into a row
    inside one node (functions/normalization.py's batch_norm_train), instead of eight
    composed nodes each way."""
    return batch_norm_train(input, running_mean, running_var, weight, bias, momentum, eps)


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


def _fusable(input, *params):
    """Whether the fused kernels take these arguments: a non-empty float input, parameters of
    its dtype and device (anything else keeps the composition, and its errors)."""
    if not input.dtype.is_floating_point or input.numel() == 0:
        return False
    return all(p is None or (p.dtype is input.dtype and p.device == input.device)
               for p in params)


@autocast_op(FP32, ("cuda",))
@_mixed_types
def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Layer normalization over the trailing normalized_shape dims, with optional elementwise
    weight and bias (torch.nn.functional.layer_norm)."""
    normalized_shape = _normalized_shape(input, normalized_shape,
                                         (("weight", weight), ("bias", bias)), "*, ")
    if _fusable(input, weight, bias):
        return RowNorm.apply(input, weight, bias, (math.prod(normalized_shape), 1, 1), eps,
                             False)
    return _composed_layer_norm(input, normalized_shape, weight, bias, eps)


def _composed_layer_norm(input, normalized_shape, weight, bias, eps):
    dims = tuple(range(input.ndim - len(normalized_shape), input.ndim))
    mean = input.mean(dims, keepdim=True)
    var = input.var(dims, keepdim=True, correction=0)
    out = (input - mean) * (var + eps).rsqrt()
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out


@autocast_op(FP32, ("cuda",))
@_mixed_types
def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Group normalization of (N, C, *) input over num_groups channel groups, with optional
    per-channel weight and bias (torch.nn.functional.group_norm)."""
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
    if _fusable(input, weight, bias):
        inner = math.prod(input.shape[2:])
        return RowNorm.apply(input, weight, bias, (c // num_groups * inner, inner, num_groups),
                             eps, False)
    return _composed_group_norm(input, num_groups, weight, bias, eps)


def _composed_group_norm(input, num_groups, weight, bias, eps):
    n, c = input.shape[:2]
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


@_mixed_types
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
    if use_input_stats and _fusable(input, weight, bias):
        if running_mean is not None or running_var is not None:
            with mt.no_grad():
                dims = tuple(range(2, input.ndim))
                _update_running_stats(running_mean, running_var, input.mean(dims).mean(0),
                                      input.var(dims, correction=0).mean(0), momentum,
                                      math.prod(input.shape[2:]))
        inner = math.prod(input.shape[2:])
        return RowNorm.apply(input, weight, bias, (inner, inner, c), eps, False)
    return _composed_instance_norm(input, running_mean, running_var, weight, bias,
                                   use_input_stats, momentum, eps)


def _composed_instance_norm(input, running_mean, running_var, weight, bias, use_input_stats,
                            momentum, eps):
    c = input.shape[1]
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


@_mixed_types
def rms_norm(input, normalized_shape, weight=None, eps=None):
    """x / sqrt(mean(x²) + eps) over the trailing normalized_shape axes, times weight; eps
    defaults to the dtype's machine epsilon, as torch."""
    normalized_shape = _normalized_shape(input, normalized_shape, (("weight", weight),), "*")
    if eps is None:
        eps = float(np.finfo(input.dtype.numpy_dtype).eps)
    if _fusable(input, weight):
        return RowNorm.apply(input, weight, None, (math.prod(normalized_shape), 1, 1), eps, True)
    return _composed_rms_norm(input, normalized_shape, weight, eps)


def _composed_rms_norm(input, normalized_shape, weight, eps):
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
