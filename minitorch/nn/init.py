"""nn.init: fill tensors in place (without recording autograd history) with torch's schemes.

Random values come from the global generator (seeded by `mt.manual_seed`) or the caller's
`generator`, drawn as torch draws them (torch's values for a seed); fan computations follow
torch exactly.
"""
import math
import warnings

from ..autograd import no_grad
from .. import random as _random
from ..random import _check_float, fill_floats
from ..random import randperm as _randperm
from ..tensor import empty_like as _empty_like, eye as _eye, zeros as _zeros

__all__ = [
    "calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_",
    "eye_", "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_",
    "kaiming_normal_", "orthogonal_", "sparse_", "uniform", "normal", "constant", "eye", "dirac",
    "xavier_uniform", "xavier_normal", "kaiming_uniform", "kaiming_normal", "orthogonal",
    "sparse",
]

_LINEAR_FNS = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
               "conv_transpose3d")


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for a nonlinearity (torch's table)."""
    if nonlinearity in _LINEAR_FNS or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            negative_slope = 0.01
        elif (not isinstance(param, bool) and isinstance(param, int)) or isinstance(param, float):
            negative_slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + negative_slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    """Values drawn from U(a, b) (each part of a complex tensor, as Tensor.uniform_)."""
    with no_grad():
        return _random.uniform_(tensor, a, b, generator=generator)


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    """Values drawn from N(mean, std²) (complex: as Tensor.normal_)."""
    with no_grad():
        return _random.normal_(tensor, mean, std, generator=generator)


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """N(mean, std²) restricted to [a, b], by torch 2.13's rejection sampling (so a seed gives
    its values): with most of the mass inside, whole fresh normals replace the draws outside
    [a, b] until none is; else uniform proposals on [a, b], each accepted when log(u) is not
    above its log density relative to the peak."""
    _check_float(tensor.dtype, "normal_kernel_cpu")
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The "
                      "distribution of values may be incorrect.", stacklevel=2)
    with no_grad():
        if _normal_cdf((b - mean) / std) - _normal_cdf((a - mean) / std) > 0.3:
            return _redraw_outside(tensor, mean, std, a, b, generator)
        return _accept_uniform_proposals(tensor, mean, std, a, b, generator)


def _normal_cdf(x):
    return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0


def _redraw_outside(tensor, mean, std, a, b, generator):
    # the bounds as the tensor's dtype holds them, so the test agrees with its values
    low, high = tensor.new_tensor(a).item(), tensor.new_tensor(b).item()
    result = tensor.normal_(mean, std, generator=generator)
    while True:
        outside = (result < low) | (result > high)
        if not outside.any().item():
            break
        result = _empty_like(result).normal_(mean, std, generator=generator).where(outside,
                                                                                   result)
    if result is not tensor:
        tensor.copy_(result)
    return tensor


def _accept_uniform_proposals(tensor, mean, std, a, b, generator):
    mode = max(a, min(mean, b))
    log_peak = -0.5 * ((mode - mean) / std) ** 2
    candidates, accept = _empty_like(tensor), _empty_like(tensor)

    def log_density(x):         # relative to the peak, in place as torch computes it
        return x.sub_(mean).div_(std).pow_(2).mul_(-0.5).sub_(log_peak)
    tensor.uniform_(a, b, generator=generator)
    candidates.copy_(tensor)
    pending = accept.uniform_(generator=generator).log_().gt(log_density(candidates))
    result = tensor
    while pending.any().item():
        candidates.uniform_(a, b, generator=generator)
        result = candidates.where(pending, result)
        rejected = accept.uniform_(generator=generator).log_().gt(log_density(candidates))
        pending = rejected.where(pending, pending)
    if result is not tensor:
        tensor.copy_(result)
    return tensor


def constant_(tensor, val):
    """Fills tensor with val in place, without recording autograd history
    (torch.nn.init.constant_)."""
    with no_grad():
        return tensor.fill_(val)


def ones_(tensor):
    """Fills tensor with 1 in place, without recording autograd history (torch.nn.init.ones_)."""
    return constant_(tensor, 1.0)


def zeros_(tensor):
    """Fills tensor with 0 in place, without recording autograd history (torch.nn.init.zeros_)."""
    with no_grad():
        return tensor.zero_()


def eye_(tensor):
    """The identity matrix (2-D tensors only)."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    with no_grad():
        return tensor.copy_(_eye(*tensor.shape, dtype=tensor.dtype, device=tensor.device))


def dirac_(tensor, groups=1):
    """Identity convolution weights: the centre tap of each (out, in) channel pair is 1."""
    dimensions = tensor.ndim
    if dimensions not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tensor.shape
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    out_per_group = sizes[0] // groups
    centre = tuple(s // 2 for s in sizes[2:])
    with no_grad():
        tensor.zero_()
        for g in range(groups):
            for d in range(min(out_per_group, sizes[1])):
                tensor[(g * out_per_group + d, d) + centre] = 1
    return tensor


def _calculate_fan_in_and_fan_out(tensor):
    dimensions = tensor.dim()
    if dimensions < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 "
                         "dimensions")
    receptive_field_size = math.prod(tensor.shape[2:])
    return tensor.size(1) * receptive_field_size, tensor.size(0) * receptive_field_size


def _calculate_correct_fan(tensor, mode):
    mode = mode.lower()
    valid_modes = ["fan_in", "fan_out"]
    if mode not in valid_modes:
        raise ValueError(f"Mode {mode} not supported, please use one of {valid_modes}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def xavier_uniform_(tensor, gain=1.0, generator=None):
    """U(-a, a) with a = gain·sqrt(6 / (fan_in + fan_out)) (Glorot)."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    """N(0, std²) with std = gain·sqrt(2 / (fan_in + fan_out)) (Glorot)."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)), generator)


def _kaiming_std(tensor, a, mode, nonlinearity):
    fan = _calculate_correct_fan(tensor, mode)
    return calculate_gain(nonlinearity, a) / math.sqrt(fan)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """U(-bound, bound) with bound = gain·sqrt(3 / fan) (He)."""
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    bound = math.sqrt(3.0) * _kaiming_std(tensor, a, mode, nonlinearity)
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """N(0, std²) with std = gain / sqrt(fan) (He)."""
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    return normal_(tensor, 0.0, _kaiming_std(tensor, a, mode, nonlinearity), generator)


def orthogonal_(tensor, gain=1, generator=None):
    """A (semi-)orthogonal matrix: the Q factor of a Gaussian matrix, made unique by a positive
    diagonal of R as torch does, computed by Gram-Schmidt with our ops, times `gain`."""
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    _check_float(tensor.dtype, "normal_kernel_cpu")
    rows = tensor.size(0)
    cols = tensor.numel() // rows
    with no_grad():
        # torch's draw: (rows, cols) normals, transposed when wide, so the same seed gives
        # torch's matrix (its Q up to rounding: QR with diag(R) > 0 is unique)
        gaussian = tensor.new_empty((rows, cols)).normal_(0, 1, generator=generator)
        if rows < cols:
            gaussian = gaussian.t()
        q = _orthonormal_columns(gaussian)
        if rows < cols:
            q = q.t()
        tensor.copy_((q * gain).reshape(tuple(tensor.shape)))
    return tensor


def _orthonormal_columns(a):
    """Q of a = QR (a tall, full column rank) with diag(R) > 0: classical Gram-Schmidt applied
    twice per column, which keeps Q orthogonal to working precision."""
    n, k = a.shape
    q = _zeros(n, k, dtype=a.dtype, device=a.device)
    for j in range(k):
        v = a[:, j]
        if j:
            basis = q[:, :j]
            for _ in range(2):
                v = v - basis.matmul(basis.t().matmul(v))
        q[:, j] = v / (v * v).sum().sqrt()
    return q


def sparse_(tensor, sparsity, std=0.01, generator=None):
    """N(0, std²) with ceil(sparsity·rows) zeros in every column."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    num_zeros = math.ceil(sparsity * rows)
    with no_grad():
        # as torch draws them: the normals from `generator`, each column's zeros from a
        # permutation drawn by the global generator
        tensor.normal_(0, std, generator=generator)
        for col in range(cols):
            tensor[_randperm(rows)[:num_zeros], col] = 0
    return tensor


def _make_deprecate(method):
    """torch's deprecated spelling of an in-place initializer (`normal` for `normal_`): warns
    with torch's FutureWarning, then calls it."""
    new_name = method.__name__
    old_name = new_name[:-1]

    def deprecated_init(*args, **kwargs):
        warnings.warn(f"`nn.init.{old_name}` is now deprecated in favor of "
                      f"`nn.init.{new_name}`.", FutureWarning, stacklevel=2)
        return method(*args, **kwargs)

    deprecated_init.__name__ = deprecated_init.__qualname__ = old_name
    deprecated_init.__doc__ = f"{old_name}(...): deprecated; calls nn.init.{new_name}."
    return deprecated_init


uniform = _make_deprecate(uniform_)
normal = _make_deprecate(normal_)
constant = _make_deprecate(constant_)
eye = _make_deprecate(eye_)
dirac = _make_deprecate(dirac_)
xavier_uniform = _make_deprecate(xavier_uniform_)
xavier_normal = _make_deprecate(xavier_normal_)
kaiming_uniform = _make_deprecate(kaiming_uniform_)
kaiming_normal = _make_deprecate(kaiming_normal_)
orthogonal = _make_deprecate(orthogonal_)
sparse = _make_deprecate(sparse_)
