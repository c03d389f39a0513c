"""torch.nn.functional's pooling: max, average, adaptive, power-average (lp) pooling in 1 to 3
spatial dimensions, and max_unpool. Arguments are checked in torch's order and wording.
Average pooling reduces the window view of functions/window.py; max pooling runs its
MaxPool kernels; adaptive pools tile or loop over windows.
"""
import itertools
import math
import numbers

import minitorch as mt
from ... import dtypes
from ...functions.elementwise import TORCH_NAMES
from ...functions.autocast_policy import batching_point
from ...functions.indexing import _first_outside
from ...functions.window import max_pool, PoolGeometry, window_geometry, window_view
from ...ndarray import normalize_dim, shape_str
from .activation import relu
from .padding import pad


def _pair(value, name="kernel_size"):
    if isinstance(value, numbers.Integral):
        return (int(value), int(value))
    value = tuple(int(v) for v in value)
    if len(value) != 2:
        raise ValueError(f"{name} must be an int or a pair of ints, got {value}")
    return value


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


def max_pool_geometry(name, input, kernel_size, stride, padding, dilation, ceil_mode):
    """The PoolGeometry of max_pool2d/3d (`name`) over input, checked as torch checks it."""
    kernel, stride, padding, dilation, out = _pool_setup(name, input, kernel_size, stride,
                                                         padding, dilation, ceil_mode)
    _check_max_pool_dtype(input, name)
    return PoolGeometry(out, kernel, stride, padding, dilation)


def _max_pool(name, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    """max_pool2d/3d: the maximum of each window (its real elements only: padding never wins),
    and optionally its flat position; the max-pool kernels of functions/window.py."""
    values, indices = max_pool(input, max_pool_geometry(name, input, kernel_size, stride,
                                                        padding, dilation, ceil_mode))
    return (values, indices) if return_indices else values


@batching_point
def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """2-D max pooling over (N, C, H, W) or (C, H, W), optionally returning the argmax indices
    (torch.nn.functional.max_pool2d)."""
    return _max_pool("max_pool2d", input, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """3-D max pooling over (N, C, D, H, W) or (C, D, H, W), optionally returning the argmax
    indices (torch.nn.functional.max_pool3d)."""
    return _max_pool("max_pool3d", input, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices)


def _with_indices(pool):
    """torch's *_with_indices form of a max pool: (values, indices) whatever return_indices."""
    def with_indices(input, *args, **kwargs):
        """The max pool named in this function's name with return_indices=True: returns
        (values, indices) (torch.nn.functional's *_with_indices)."""
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


@batching_point
def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """2-D average pooling over (N, C, H, W) or (C, H, W) (torch.nn.functional.avg_pool2d)."""
    return _avg_pool("avg_pool2d", input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """3-D average pooling over (N, C, D, H, W) or (C, D, H, W)
    (torch.nn.functional.avg_pool3d)."""
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
    if all(o == 1 for o in output_size) and input.dtype.is_floating_point:
        # global pooling: one mean over the spatial axes, without a window view to sum
        return input.mean(tuple(range(-spatial, 0)), keepdim=True)
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
    """2-D average pooling to a fixed output size (H_out, W_out), windows chosen as torch does
    (torch.nn.functional.adaptive_avg_pool2d)."""
    return _adaptive_avg_pool(input, output_size, 2)


def adaptive_avg_pool3d(input, output_size):
    """3-D average pooling to a fixed output size (D_out, H_out, W_out), windows chosen as
    torch does (torch.nn.functional.adaptive_avg_pool3d)."""
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
    """1-D average pooling over (N, C, L) or (C, L) (torch.nn.functional.avg_pool1d)."""
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
    """1-D average pooling to a fixed output length (torch.nn.functional.adaptive_avg_pool1d)."""
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
    """2-D max pooling to a fixed output size, optionally returning the argmax indices
    (torch.nn.functional.adaptive_max_pool2d)."""
    return _adaptive_max_pool(input, output_size, return_indices, 2)


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """3-D max pooling to a fixed output size, optionally returning the argmax indices
    (torch.nn.functional.adaptive_max_pool3d)."""
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
    """1-D power-average pooling (sum of x**p over each window)**(1/p)
    (torch.nn.functional.lp_pool1d)."""
    return _lp_pool(input, norm_type, max_pool1d, avg_pool1d, kernel_size, kernel_size, stride,
                    ceil_mode)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """2-D power-average pooling (sum of x**p over each window)**(1/p)
    (torch.nn.functional.lp_pool2d)."""
    kh, kw = _pair(kernel_size)
    return _lp_pool(input, norm_type, max_pool2d, avg_pool2d, kh * kw, kernel_size, stride,
                    ceil_mode)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """3-D power-average pooling (sum of x**p over each window)**(1/p)
    (torch.nn.functional.lp_pool3d)."""
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
