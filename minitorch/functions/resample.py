"""Linear, bilinear and trilinear interpolation as one node: out = the separable linear
interpolation of input's last one to three axes (kernels `lerp_resample` /
`lerp_resample_backward`, minitorch/_cpu/resample.pyx), one pass each way where one gather
pair and three arithmetic ops per axis were. Source positions and weights are ATen's
(`compute_indices_weights_linear`), computed in the input's opmath precision (float32 for
float32 and the 16-bit floats, float64 for float64), so the values are torch's.
"""
import fractions
import functools
import math

import numpy as np

from .. import dtypes
from ..autograd import KernelFunction
from ..ndarray import NDArray
from ..tensor import wrap

__all__ = []


@functools.lru_cache(maxsize=256)
def linear_tables(in_size, out_size, scale, align_corners, opmath):
    """(index pairs, weight pairs) of one axis, 2·out_size entries each, as ATen's
    compute_source_index_and_lambda gives them: an axis of unchanged size copies (i, i) with
    weights (1, 0); otherwise the source position in `opmath` (np.float32 or np.float64)
    arithmetic, its floor and the next position (clamped), λ1 = the fraction, λ0 = 1 - λ1.
    Cached (read-only arrays): a layer resamples the same sizes every step, and float64's
    exact source positions cost about 5 µs per entry."""
    index, weights = _tables(in_size, out_size, scale, align_corners, opmath)
    index.flags.writeable = weights.flags.writeable = False
    return index, weights


def _tables(in_size, out_size, scale, align_corners, opmath):
    out = np.arange(out_size)
    if out_size == in_size:
        index = np.repeat(out, 2)
        weights = np.tile(np.array([1, 0], opmath), out_size)
        return index, weights
    if align_corners:
        ratio = opmath(in_size - 1) / opmath(out_size - 1) if out_size > 1 else opmath(0)
        source = ratio * out.astype(opmath)
    else:
        ratio = opmath(1.0 / scale) if scale is not None and scale > 0 else \
            opmath(in_size) / opmath(out_size)
        source = _fused_source(ratio, out, opmath)
        source = np.where(source < 0, opmath(0), source)
    low = np.minimum(np.floor(source).astype(np.int64), in_size - 1)
    lam1 = np.clip(source - low.astype(opmath), opmath(0), opmath(1)).astype(opmath)
    high = low + (low < in_size - 1)
    index = np.stack([low, high], axis=1).reshape(-1)
    weights = np.stack([opmath(1) - lam1, lam1], axis=1).reshape(-1)
    return index, weights


def _fused_source(ratio, positions, opmath):
    """ratio · (i + 0.5) - 0.5 rounded once, as ATen's compiled area_pixel_compute_source_index
    computes it (a fused multiply-add; its plain two roundings differ in the last place):
    exact in float64 for float32 operands, exact in rationals for float64 ones."""
    if opmath is np.float32:
        return (np.float64(ratio) * (positions + 0.5) - 0.5).astype(np.float32)
    exact = fractions.Fraction(float(ratio))
    return np.array([float(exact * (int(i) * 2 + 1) / 2 - fractions.Fraction(1, 2))
                     for i in positions], np.float64)


def _layout(shape, spatial):
    """(planes, in_size) of the kernel's (planes, D, H, W) view, missing leading axes as 1."""
    planes = math.prod(shape[:len(shape) - spatial])
    return planes, (1,) * (3 - spatial) + tuple(shape[len(shape) - spatial:])


class LerpResample(KernelFunction):
    """input's last len(sizes) axes linearly interpolated to `sizes` (1 to 3 axes): `scales`
    are the user's scale factors per axis (or None), as torch passes them to its kernel."""

    @staticmethod
    def forward(ctx, input, sizes, scales, align_corners):
        x = input._data.compact()
        spatial = len(sizes)
        planes, in_size = _layout(x.shape, spatial)
        out_size = (1,) * (3 - spatial) + tuple(sizes)
        ctx.plan = _Plan(x, in_size, out_size, scales, align_corners, spatial)
        out = x._new(x.shape[:x.ndim - spatial] + tuple(sizes))
        x.backend.lerp_resample(x.flat(), *ctx.plan.tables(), out.buffer, planes, in_size,
                                out_size, ctx.plan.taps)
        ctx.input_shape = x.shape
        return wrap(out)

    @staticmethod
    def backward(ctx, g):
        return LerpResampleBackward.apply(g, ctx.plan, ctx.input_shape), None, None, None


class LerpResampleBackward(KernelFunction):
    """LerpResample's adjoint (linear in g, so its own backward is LerpResample's forward)."""

    @staticmethod
    def forward(ctx, g, plan, input_shape):
        grad = g._data.compact()
        planes, _ = _layout(input_shape, plan.spatial)
        out = grad._new(tuple(input_shape))
        grad.backend.lerp_resample_backward(grad.flat(), *plan.tables(), out.buffer, planes,
                                            plan.in_size, plan.out_size, plan.taps)
        ctx.plan = plan
        return wrap(out)

    @staticmethod
    def backward(ctx, gg):
        plan = ctx.plan
        return (LerpResample.apply(gg, plan.out_size[3 - plan.spatial:], plan.scales,
                                   plan.align_corners), None, None)


class _Plan:
    """The tables of one interpolation, made once on the host and uploaded once (the backward,
    and a double backward, reuse them)."""

    def __init__(self, x, in_size, out_size, scales, align_corners, spatial):
        self.in_size, self.out_size, self.spatial = in_size, out_size, spatial
        self.scales, self.align_corners = scales, align_corners
        self.taps = (1,) * (3 - spatial) + (2,) * spatial
        # 16-bit floats compute in float32 (the kernel runs widened); weights in that dtype
        compute = x.dtype.compute
        opmath = np.float64 if compute is dtypes.float64 else np.float32
        indices, weights = [], []
        for axis in range(3):
            if axis < 3 - spatial:
                indices.append(np.zeros(2, np.int64))
                weights.append(np.array([1, 0], opmath))
                continue
            scale = scales[axis - (3 - spatial)]
            index, weight = linear_tables(in_size[axis], out_size[axis], scale, align_corners,
                                          opmath)
            indices.append(index)
            weights.append(weight)
        self._host = (np.concatenate(indices), np.concatenate(weights))
        self._device, self._uploaded = x.device, None

    def tables(self):
        """(index buffer, weights buffer) on the device."""
        if self._uploaded is None:
            self._uploaded = tuple(NDArray.from_numpy(t, device=self._device).buffer
                                   for t in self._host)
        return self._uploaded


def lerp_resample(input, sizes, scales, align_corners):
    """input's last len(sizes) axes linearly interpolated (see LerpResample)."""
    return LerpResample.apply(input, tuple(sizes), tuple(scales), bool(align_corners))
