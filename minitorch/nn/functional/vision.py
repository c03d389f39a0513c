"""torch.nn.functional's resampling and rearranging of images: interpolate (nearest, linear,
cubic, area), the deprecated upsample spellings, pixel_shuffle/pixel_unshuffle,
channel_shuffle, and grid_sample / affine_grid (functions/grid_sample.py, published here).
"""
import math
import struct
import warnings

import minitorch as mt
from ...functions.grid import grid_gather
from ...functions.grid_sample import affine_grid, grid_sample  # noqa: F401  (published here)
from ...functions.resample import lerp_resample
from .pooling import adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d


_LINEAR_MODES = {"linear": 3, "bilinear": 4, "bicubic": 4,        # mode → the input rank it needs
                 "trilinear": 5}


def _float32(value):
    """value rounded to float32: torch's nearest modes compute source indices in float."""
    return struct.unpack("f", struct.pack("f", value))[0]


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """torch.nn.functional.interpolate for the modes nearest, nearest-exact, (bi/tri)linear and
    area. The nearest modes are one separable gather (functions/grid.py), the (bi/tri)linear
    ones one separable interpolation (functions/resample.py); bicubic runs one axis at a time,
    each a gather of source rows (index_select) and a weighted sum."""
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
    if mode in ("nearest", "nearest-exact"):
        return grid_gather(input, [_nearest_index(in_size, out_size, scale,
                                                  mode == "nearest-exact")
                                   for in_size, out_size, scale in zip(in_sizes, out_sizes,
                                                                       scales)])
    if mode != "bicubic":
        return lerp_resample(input, out_sizes, scales, align_corners)
    for axis, (in_size, out_size, scale) in enumerate(zip(in_sizes, out_sizes, scales)):
        input = _cubic_axis(input, axis + 2, in_size, out_size, scale, align_corners)
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


def _nearest_index(in_size, out_size, scale, exact):
    """Source positions of one axis: ATen's nearest_idx /
    nearest_neighbor_exact_compute_source_index, in float32."""
    if out_size == in_size and not exact:
        return range(out_size)
    ratio = _float32(1.0 / scale if scale is not None and scale > 0 else in_size / out_size)
    if exact:
        return [min(math.floor(_float32((i + 0.5) * ratio)), in_size - 1)
                for i in range(out_size)]
    if out_size == 2 * in_size:
        return [i // 2 for i in range(out_size)]
    return [min(math.floor(_float32(i * ratio)), in_size - 1) for i in range(out_size)]


def _source_ratio(in_size, out_size, scale, align_corners):
    """ATen's step between source positions of consecutive outputs along one axis."""
    if align_corners:
        return (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
    return 1.0 / scale if scale is not None and scale > 0 else in_size / out_size


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
    """Same as channel_shuffle (torch.native_channel_shuffle)."""
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
