"""torch.nn.functional's activations: relu and its relatives, softmax/log_softmax/softmin,
gumbel_softmax, the shrink and threshold functions, glu, prelu, rrelu, and the in-place
spellings (relu_, elu_, …). Each checks its input as torch does and composes minitorch ops;
hardtanh and logsigmoid are nodes of their own (functions/activation.py).
"""
import math
import warnings

import numpy as np

import minitorch as mt
from ... import dtypes
from ...functions.autocast_policy import FP32, LOWER, autocast_op, batching_point
from ...functions.activation import Gelu, Hardtanh, LeakyRelu, LogSigmoid, Silu
from ...functions.elementwise import TORCH_NAMES
from ...functions.reduce import log_softmax as _log_softmax, softmax as _softmax
from ...ndarray import normalize_dim
from ._scalars import _constant


def relu(input, inplace=False):
    """Elementwise max(input, 0), in place when inplace=True (torch.nn.functional.relu)."""
    return input.relu_() if inplace else input.relu()


def _floating_only(input, kernel):
    """torch's activation kernels exist for floating dtypes only (its dispatch error)."""
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{TORCH_NAMES[input.dtype.name]}'")


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """Elementwise clamp of input to [min_val, max_val], in place when inplace=True
    (torch.nn.functional.hardtanh)."""
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
    """Elementwise min(max(input, 0), 6) (torch.nn.functional.relu6)."""
    return hardtanh(input, 0.0, 6.0, inplace)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """Elementwise input where positive, else negative_slope * input
    (torch.nn.functional.leaky_relu)."""
    _floating_only(input, "leaky_relu_cpu")
    if input.dtype in (dtypes.float32, dtypes.float64) and isinstance(negative_slope, float):
        result = LeakyRelu.apply(input, negative_slope)     # one node (functions/activation.py)
    else:
        result = mt.where(input > 0, input, input * negative_slope)
    return input.copy_(result) if inplace else result


def elu(input, alpha=1.0, inplace=False):
    """Elementwise input where positive, else alpha * (exp(input) - 1)
    (torch.nn.functional.elu)."""
    _floating_only(input, "elu_cpu")
    # expm1 reads min(x, 0): the unselected branch must not overflow to inf for large x, or its
    # zeroed gradient (0 · inf) would turn into NaN.
    return _maybe_inplace(input, inplace, lambda x: mt.where(
        x > 0, x, x.clamp(max=0.0).expm1() * alpha))


@batching_point
def gelu(input, approximate="none"):
    """Elementwise Gaussian error linear unit x * Phi(x), exact or with approximate='tanh'
    (torch.nn.functional.gelu)."""
    _floating_only(input, "GeluKernelImpl")
    if approximate == "tanh":
        inner = (input + input * input * input * 0.044715) * math.sqrt(2.0 / math.pi)
        return input * 0.5 * (inner.tanh() + 1.0)
    if approximate != "none":
        raise RuntimeError("approximate argument must be either none or tanh.")
    return Gelu.apply(input)


def silu(input, inplace=False):
    """Elementwise x / (1 + e^-x) = x * sigmoid(x), a.k.a. swish, one kernel each way
    (torch.nn.functional.silu); complex input composes x * sigmoid(x), without autograd as
    torch's."""
    if input.dtype.is_complex and not inplace:
        if input.requires_grad and mt.is_grad_enabled():
            raise RuntimeError("silu does not support automatic differentiation for outputs with "
                               "complex dtype.")
        return input * input.sigmoid()
    _floating_only(input, "silu_cpu")
    # In place, the node must not save the input it is about to overwrite: it saves a copy.
    result = Silu.apply(input.clone() if inplace else input)
    return input.copy_(result) if inplace else result


def sigmoid(input):
    """Elementwise logistic sigmoid (torch.nn.functional.sigmoid)."""
    return input.sigmoid()


def tanh(input):
    """Elementwise hyperbolic tangent (torch.nn.functional.tanh)."""
    return input.tanh()


def softplus(input, beta=1.0, threshold=20.0):
    """Elementwise log(1 + exp(beta * x)) / beta, linear where beta * x > threshold
    (torch.nn.functional.softplus)."""
    _floating_only(input, "softplus_cpu")
    scaled = input * beta
    soft = scaled.clamp(max=threshold).exp().log1p() / beta
    return mt.where(scaled > threshold, input, soft)


def logsigmoid(input):
    """Elementwise log(sigmoid(x)) computed stably (torch.nn.functional.logsigmoid)."""
    _floating_only(input, "log_sigmoid_cpu")
    return LogSigmoid.apply(input)


def _softmax_dim(name, ndim, stacklevel):
    """torch's legacy implicit dim (and its deprecation warning) for softmax without dim."""
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to "
                  "include dim=X as an argument.", stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


@autocast_op(FP32, ("cuda",))
def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """torch.nn.functional.softmax; dim=None picks torch's legacy dim, with its warning."""
    if dim is None:
        dim = _softmax_dim("softmax", input.ndim, _stacklevel)
    return _softmax(input, dim, dtype)


@autocast_op(FP32, ("cuda",))
def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """torch.nn.functional.log_softmax; dim=None picks torch's legacy dim, with its warning."""
    if dim is None:
        dim = _softmax_dim("log_softmax", input.ndim, _stacklevel)
    return _log_softmax(input, dim, dtype)


def _maybe_inplace(input, inplace, compute):
    """compute(input), written back into input when inplace. The computation reads a copy
    then, so that what it saves for backward is not the tensor being overwritten."""
    if not inplace:
        return compute(input)
    return input.copy_(compute(input.clone()))


_SELU_ALPHA = 1.6732632423543772848170429916717


_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input, inplace=False):
    """Elementwise scaled ELU scale * elu(x, alpha) with the SELU constants
    (torch.nn.functional.selu)."""
    _floating_only(input, "elu_cpu")
    return _maybe_inplace(input, inplace, lambda x: elu(x, _SELU_ALPHA) * _SELU_SCALE)


def celu(input, alpha=1.0, inplace=False):
    """Elementwise max(0, x) + min(0, alpha * (exp(x / alpha) - 1)) (torch.nn.functional.celu)."""
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
    """Elementwise piecewise-linear sigmoid relu6(x + 3) / 6 (torch.nn.functional.hardsigmoid)."""
    _floating_only(input, "hardsigmoid_cpu")
    return _maybe_inplace(input, inplace, lambda x: hardtanh(x + 3.0, 0.0, 6.0) / 6.0)


def mish(input, inplace=False):
    """Elementwise x * tanh(softplus(x)) (torch.nn.functional.mish)."""
    _floating_only(input, "mish_cpu")
    return _maybe_inplace(input, inplace, lambda x: x * softplus(x).tanh())


def softsign(input):
    """Elementwise x / (1 + |x|) (torch.nn.functional.softsign)."""
    return input / (input.abs() + 1)


def tanhshrink(input):
    """Elementwise x - tanh(x) (torch.nn.functional.tanhshrink)."""
    return input - input.tanh()


def _check_lambd(lambd, input):
    if lambd < 0:
        limit = float(np.finfo(input.dtype.numpy_dtype).max)
        raise RuntimeError(f"lambda must be in range [0, {limit:g}] for input dtype "
                           f"{TORCH_NAMES[input.dtype.name]}, but found {lambd:g}")


def softshrink(input, lambd=0.5):
    """Elementwise soft thresholding: x - lambd above lambd, x + lambd below -lambd, else 0
    (torch.nn.functional.softshrink)."""
    _floating_only(input, "softshrink_check")
    _check_lambd(lambd, input)
    zero = _constant(0.0, input)
    return mt.where(input > lambd, input - lambd,
                    mt.where(input < -lambd, input + lambd, zero))


def hardshrink(input, lambd=0.5):
    """Elementwise hard thresholding: x where |x| > lambd, else 0
    (torch.nn.functional.hardshrink)."""
    _floating_only(input, "hardshrink_cpu")
    return mt.where(input.abs() > lambd, input, _constant(0.0, input))


def threshold(input, threshold, value, inplace=False):
    """input where input > threshold, else value (cast to input's dtype, as torch)."""
    return _maybe_inplace(input, inplace, lambda x: mt.where(x > threshold, x,
                                                             _constant(value, x)))


def glu(input, dim=-1):
    """Gated linear unit a * sigmoid(b), where a and b are the two halves of input along dim
    (torch.nn.functional.glu)."""
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
    """Softmax of -input along dim (torch.nn.functional.softmin)."""
    if dim is None:
        dim = _softmax_dim("softmin", input.ndim, _stacklevel)
    return _softmax(-input, dim, dtype)


def gumbel_softmax(logits, tau=1, hard=False, eps=1e-10, dim=-1):
    """Softmax of (logits + Gumbel noise) / tau; hard=True gives the one-hot arg-max in the
    forward pass and the soft sample's gradient (straight-through), as torch does."""
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    # Gumbel(0, 1) = -log(Exponential(1)): torch's draws, so a seeded call samples as torch's
    gumbels = -mt.empty(logits.shape, dtype=logits.dtype, device=logits.device).exponential_().log()
    y_soft = ((logits + gumbels) / tau).softmax(dim)
    if not hard:
        return y_soft
    index = y_soft.max(dim, keepdim=True)[1]
    y_hard = mt.zeros_like(logits).scatter_(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


@autocast_op(LOWER)
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
    """Randomized leaky ReLU: in training each element <= 0 gets a slope drawn from
    U(lower, upper); in evaluation the slope is their mean. The slopes are torch's CPU draws
    for the same seed: one double uniform per element <= 0, in order, scaled to the range
    with a separate multiply and add (torch's rrelu is built without fused multiply-adds,
    unlike its uniform_ kernel) between bounds rounded to the dtype's compute precision
    (float32 below float64); the product is taken at that precision and rounded once."""
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    if not training:
        return leaky_relu(input, (lower + upper) / 2, inplace)

    def compute(x):
        wide = mt.float64 if x.dtype == mt.float64 else mt.float32     # torch's opmath
        low, high = (lower, upper) if wide == mt.float64 else \
            (float(np.float32(lower)), float(np.float32(upper)))
        nonpositive = x <= 0
        drawn = mt.empty(int(nonpositive.sum()), dtype=mt.float64).uniform_()
        drawn = drawn * (high - low) + low
        slopes = mt.ones(x.shape, dtype=wide, device=x.device).masked_scatter(
            nonpositive, drawn.to(device=x.device, dtype=wide))
        return mt.where(nonpositive, (x.to(wide) * slopes).to(x.dtype), x)
    return _maybe_inplace(input, inplace, compute)


def relu_(input):
    """In-place relu (torch.nn.functional.relu_)."""
    return relu(input, inplace=True)


def elu_(input, alpha=1.0):
    """In-place elu (torch.nn.functional.elu_)."""
    return elu(input, alpha, inplace=True)


def leaky_relu_(input, negative_slope=0.01):
    """In-place leaky_relu (torch.nn.functional.leaky_relu_)."""
    return leaky_relu(input, negative_slope, inplace=True)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    """In-place hardtanh (torch.nn.functional.hardtanh_)."""
    return hardtanh(input, min_val, max_val, inplace=True)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    """In-place rrelu (torch.nn.functional.rrelu_)."""
    return rrelu(input, lower, upper, training, inplace=True)


def threshold_(input, threshold_value, value):
    """In-place threshold (torch.nn.functional.threshold_)."""
    return threshold(input, threshold_value, value, inplace=True)


def selu_(input):
    """In-place selu (torch.nn.functional.selu_)."""
    return selu(input, inplace=True)


def celu_(input, alpha=1.0):
    """In-place celu (torch.nn.functional.celu_)."""
    return celu(input, alpha, inplace=True)
