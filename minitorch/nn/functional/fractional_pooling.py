"""torch.nn.functional's fractional max pooling (Graham, "Fractional Max-Pooling"):
fractional_max_pool2d/3d and their *_with_indices forms.

Each (sample, plane) pools kernel-sized windows whose starts are spread pseudo-randomly over the
input by one uniform sample per spatial axis, as ATen's generate_intervals spreads them (same
arithmetic, same dtype, so the same samples give torch's windows). The windows are gathered by
flat index and reduced with max; the output is gathered once more at the winning indices, so its
gradient goes to each window's maximum (accumulated where windows share it), as in torch.
"""
import math
import numbers
from collections.abc import Iterable

import minitorch as mt

from ... import dtypes
from ...functions.elementwise import TORCH_NAMES
from ...ndarray import shape_str

_AXES = {2: "HW", 3: "THW"}
# the sample each spatial axis (in _AXES order) reads: ATen's 2-d kernel gives sample 0 to the
# width and 1 to the height; its 3-d kernel gives them in axis order
_SAMPLE_OF_AXIS = {2: (1, 0), 3: (0, 1, 2)}
_AXIS_WORDS = {"T": "time", "H": "height", "W": "width"}


def _int_sizes(value, name, position, spatial, fn):
    """An int or a sequence of ints, as torch's argument parser takes `int[spatial]`: an int
    repeats; a sequence is taken as given, its length checked by ATen."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return (int(value),) * spatial
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"{fn}(): argument '{name}' (position {position}) must be tuple of ints, "
                        f"not {type(value).__name__}")
    for i, v in enumerate(value):
        if not isinstance(v, numbers.Integral) or isinstance(v, bool):
            raise TypeError(f"{fn}(): argument '{name}' failed to unpack the object at pos "
                            f"{i + 1} with error \"type must be tuple of ints,but got "
                            f"{type(v).__name__}\"")
    if len(value) != spatial:
        ints = "Ints" if spatial == 2 else "three Ints"
        raise RuntimeError(f"{fn}: {name} must either be a single Int or tuple of {ints}")
    return tuple(int(v) for v in value)


def _check_input(input, kernel, out, spatial):
    """ATen's fractional_max_pool meta checks: rank, non-empty planes, windows that fit, and a
    non-negative output shape."""
    fn = "fractional_max_pool2d()" if spatial == 2 else "fractional_max_pool3d_out()"
    ranks = f"{spatial + 1}D or {spatial + 2}D"
    if input.ndim not in (spatial + 1, spatial + 2):
        raise RuntimeError(f"{fn}: Expected {ranks} tensor, but got: {shape_str(input.shape)}")
    for dim in range(1, input.ndim):
        if input.shape[dim] == 0:
            raise RuntimeError(f"{fn}: Expected input to have non-zero size for non-batch "
                               f"dimensions, but got{shape_str(input.shape)} with dimension "
                               f"{dim} being empty.")
    sizes = dict(zip(_AXES[spatial], input.shape[-spatial:]))
    pools, outs = dict(zip(_AXES[spatial], kernel)), dict(zip(_AXES[spatial], out))
    # the 3-d check is stricter (one row must be left over) and runs time, width, height
    for axis in ("HW" if spatial == 2 else "TWH"):
        size, pool, count = sizes[axis], pools[axis], outs[axis]
        fits = (count + pool - 1 <= size if spatial == 2 else
                pool <= size and count + pool - 1 < size)
        if not fits:
            word = _AXIS_WORDS[axis]
            raise RuntimeError(f"{fn}: pool {word} {pool} too large relative to input {word} "
                               f"{size}")
    shape = tuple(input.shape[:-spatial]) + tuple(out)
    if any(s < 0 for s in shape):
        raise RuntimeError(f"Trying to create tensor with negative dimension "
                           f"{next(s for s in shape if s < 0)}: {list(shape)}")


def _check_samples(input, samples, spatial):
    """ATen's fractional_max_pool_check_shape: one sample per axis for each (batch, plane)."""
    if samples.dtype is not input.dtype:
        raise RuntimeError("Expect _random_samples to have the same dtype as input")
    if samples.ndim != 3:
        raise RuntimeError(f"Expect _random_samples to have 3 dimensions, got {samples.ndim}")
    batched = input.ndim == spatial + 2
    batch, planes = (input.shape[0], input.shape[1]) if batched else (1, input.shape[0])
    if samples.shape[0] < batch:
        raise RuntimeError("Expect _random_samples.size(0) no less then input batch size.")
    if samples.shape[1] != planes:
        raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
    if samples.shape[2] != spatial:
        raise RuntimeError(f"Expect _random_samples.size(2) equals to {spatial}; got "
                           f"{samples.shape[2]}.")


def _interval_dtype(input):
    """The dtype generate_intervals computes in: the input's on the CPU; on a GPU torch's
    kernel uses the accumulate type (float32 for half and bfloat16)."""
    if input.is_cuda and input.dtype in (dtypes.float16, dtypes.bfloat16):
        return dtypes.float32
    return input.dtype


def _interval_starts(sample, size, count, pool, dtype):
    """(N, C, count) window starts along one axis from its (N, C) samples u (ATen's
    generate_intervals): int((i + u)·α) - int(u·α) with α = (size - pool) / (count - 1), each
    step rounded in `dtype` as C++ rounds it, and the last window flush with the end."""
    last = mt.full(tuple(sample.shape) + (1,), size - pool, dtype=mt.int64, device=sample.device)
    if count <= 1:
        return last[..., :count]
    device = sample.device
    alpha = (mt.tensor(size - pool, dtype=dtype, device=device) /
             mt.tensor(count - 1, dtype=dtype, device=device))
    u = sample.to(dtype).unsqueeze(-1)
    steps = mt.arange(count - 1, dtype=dtype, device=device)
    # .to(int64) truncates toward zero, as static_cast<int> does
    starts = ((steps + u) * alpha).to(mt.int64) - (u * alpha).to(mt.int64)
    return mt.cat([starts, last], dim=-1)


def _flat_positions(starts, offsets, size):
    """Flat input positions (N, C, *out, *window) of every window element: axis d's start
    plus offset d, times the stride of axis d in the flattened (row-major) plane."""
    spatial = len(size)
    total = None
    for d, (start, offset) in enumerate(zip(starts, offsets)):
        stride = math.prod(size[d + 1:])
        start = start.reshape(tuple(start.shape[:2]) + tuple(
            -1 if a == d else 1 for a in range(spatial)) + (1,) * spatial)
        offset = offset.reshape(tuple(-1 if a == d else 1 for a in range(spatial)))
        term = (start + offset) * stride
        total = term if total is None else total + term
    return total


def _window_argmax(windows):
    """Each window's winner along its last axis, as ATen's loop picks it: the first maximum,
    or the last NaN when there is one (`val > max || isnan(val)`)."""
    arg = windows.max(dim=-1).indices
    places = mt.arange(1, windows.shape[-1] + 1, device=windows.device)
    last_nan = (windows.isnan() * places).amax(dim=-1)     # 0: no NaN in the window
    return mt.where(last_nan > 0, last_nan - 1, arg)


def _empty_windows(x, starts, out):
    """torch 2.13 accepts a kernel size of 0 or less: its windows are empty, their value -inf
    and their index the window's start (which may lie outside the input)."""
    zero = [mt.zeros(1, dtype=mt.int64, device=x.device)] * len(out)
    indices = _flat_positions(starts, zero, tuple(x.shape[2:])).reshape(*x.shape[:2], *out)
    return mt.full(tuple(indices.shape), -math.inf, dtype=x.dtype, device=x.device), indices


def _pool(x, samples, kernel, out):
    """Values and indices of fractional max pooling over a batched (N, C, *size) input."""
    spatial = len(kernel)
    size = tuple(x.shape[2:])
    batch, planes = x.shape[0], x.shape[1]
    dtype = _interval_dtype(x)
    order = _SAMPLE_OF_AXIS[spatial]
    starts = [_interval_starts(samples[..., order[d]], size[d], out[d], kernel[d], dtype)
              for d in range(spatial)]
    if any(k <= 0 for k in kernel):
        return _empty_windows(x, starts, out)
    offsets = [mt.arange(k, device=x.device) for k in kernel]
    positions = _flat_positions(starts, offsets, size).reshape(batch, planes, -1)
    plane = x.reshape(batch, planes, -1)
    with mt.no_grad():
        windows = plane.gather(2, positions).reshape(batch, planes, -1, math.prod(kernel))
        winner = _window_argmax(windows).unsqueeze(-1)
        indices = positions.reshape(batch, planes, -1, math.prod(kernel)).gather(3, winner)
    indices = indices.reshape(batch, planes, -1)
    values = plane.gather(2, indices)     # recorded: the gradient flows to the winners only
    return values.reshape(batch, planes, *out), indices.reshape(batch, planes, *out)


def _fractional_max_pool(input, kernel_size, output_size, samples, spatial):
    """ATen's fractional_max_pool2d/3d: checks in its order, then the pooling."""
    fn = f"fractional_max_pool{spatial}d"
    kernel = _int_sizes(kernel_size, "kernel_size", 2, spatial, fn)
    out = _int_sizes(output_size, "output_size", 3, spatial, fn)
    _check_input(input, kernel, out, spatial)
    _check_samples(input, samples, spatial)
    batched = input.ndim == spatial + 2
    x = input if batched else input.unsqueeze(0)
    shape = tuple(input.shape[:-spatial]) + out
    if x.shape[0] == 0 or 0 in out:
        return (mt.empty(shape, dtype=input.dtype, device=input.device),
                mt.empty(shape, dtype=mt.int64, device=input.device))
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f'"{fn}_out_frame" not implemented for '
                                  f"'{TORCH_NAMES[input.dtype.name]}'")
    values, indices = _pool(x, samples.detach()[:x.shape[0]], kernel, out)
    return (values, indices) if batched else (values.squeeze(0), indices.squeeze(0))


def _ratio_tuple(value, spatial):
    """torch's _pair/_triple for output_ratio: an iterable is taken as given, else repeated."""
    return tuple(value) if isinstance(value, Iterable) else (value,) * spatial


def _draw_samples(input, spatial):
    """torch's default samples: rand(N, C, spatial) in the input's dtype and device (one batch
    row for an unbatched input), from the global generator."""
    batch = 1 if input.dim() == spatial + 1 else input.size(0)
    return mt.rand(batch, input.size(-spatial - 1), spatial, dtype=input.dtype,
                   device=input.device)


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    """2-D fractional max pooling of (N, C, H, W) or (C, H, W) to output_size (or
    output_ratio × the input size): (values, indices), indices flat in each H×W plane
    (torch.nn.functional.fractional_max_pool2d_with_indices)."""
    if output_size is None and output_ratio is None:
        raise ValueError("fractional_max_pool2d requires specifying either an output_size or an "
                         "output_ratio")
    if output_size is None:
        if len(output_ratio) > 2:
            raise ValueError("fractional_max_pool2d requires output_ratio to either be a single "
                             "Int or tuple of Ints.")
        ratio = _ratio_tuple(output_ratio, 2)
        output_size = [int(input.size(-2) * ratio[0]), int(input.size(-1) * ratio[1])]
    if _random_samples is None:
        _random_samples = _draw_samples(input, 2)
    return _fractional_max_pool(input, kernel_size, output_size, _random_samples, 2)


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    """3-D fractional max pooling of (N, C, T, H, W) or (C, T, H, W) to output_size (or
    output_ratio × the input size): (values, indices), indices flat in each T×H×W volume
    (torch.nn.functional.fractional_max_pool3d_with_indices)."""
    if output_size is None and output_ratio is None:
        raise ValueError("fractional_max_pool3d requires specifying either an output_size or an "
                         "output_ratio")
    if output_size is None:
        ratio = _ratio_tuple(output_ratio, 3)
        output_size = [int(input.size(-3) * ratio[0]), int(input.size(-2) * ratio[1]),
                       int(input.size(-1) * ratio[2])]
    if _random_samples is None:
        _random_samples = _draw_samples(input, 3)
    return _fractional_max_pool(input, kernel_size, output_size, _random_samples, 3)


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    """2-D fractional max pooling; (values, indices) when return_indices
    (torch.nn.functional.fractional_max_pool2d)."""
    result = fractional_max_pool2d_with_indices(input, kernel_size, output_size, output_ratio,
                                                return_indices, _random_samples)
    return result if return_indices else result[0]


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    """3-D fractional max pooling; (values, indices) when return_indices
    (torch.nn.functional.fractional_max_pool3d)."""
    result = fractional_max_pool3d_with_indices(input, kernel_size, output_size, output_ratio,
                                                return_indices, _random_samples)
    return result if return_indices else result[0]
