"""torch.nn.functional.grid_sample and affine_grid: the spatial transformer pair.

grid_sample is one node each way (`GridSampler2D` / `GridSampler3D`, torch's node names): the
kernels `grid_sample_forward` / `grid_sample_backward` (minitorch/_cpu/grid_sample.pyx and
_gpu/kernels/grid_sample.cu) sample the input at the grid's points with ATen's arithmetic
(bilinear / trilinear, nearest, bicubic; zeros, border or reflection padding) and give the
gradients for the input and the grid. affine_grid is composed: torch's base grid (its
linspace, a constant) times theta transposed, so theta's gradient is matmul's.
"""
import fractions
import functools
import warnings

import numpy as np

from .. import dtypes
from ..autograd import KernelFunction
from ..tensor import tensor, wrap

__all__ = ["affine_grid", "grid_sample"]

_MODES = {"bilinear": 0, "nearest": 1, "bicubic": 2}
_PADDINGS = {"zeros": 0, "border": 1, "reflection": 2}
_ALIGN_WARNING = ("Default grid_sample and affine_grid behavior has changed to "
                  "align_corners=False since 1.3.0. Please specify align_corners=True if the "
                  "old behavior is desired. See the documentation of grid_sample for details.")


def _run_forward(input, grid, mode, padding, align_corners):
    """The sampled output as an NDArray (N, C, *grid's spatial sizes)."""
    x, points = input._data.compact(), grid._data.compact()
    in_size, out_size = tuple(x.shape[2:]), tuple(points.shape[1:-1])
    out = x._new(x.shape[:2] + out_size)
    if out.size:
        x.backend.grid_sample_forward(x.flat(), points.flat(), out.buffer, x.shape[0],
                                      x.shape[1], in_size, out_size, mode, padding,
                                      align_corners)
    return out


class GridSampler2DBackward(KernelFunction):
    """The gradients for the input and the grid, one kernel call (None where not wanted).
    Differentiating them again (torch's GridSampler2DBackwardBackward0) is not supported."""
    _torch_op = "grid_sampler_2d_backward"

    @classmethod
    def name(cls):
        return cls.__name__ + "Backward0"

    @staticmethod
    def forward(ctx, g, input, grid, mode, padding, align_corners, want_input, want_grid):
        grad = g._data.compact()
        x, points = input._data.compact(), grid._data.compact()
        grad_input = x._new(x.shape) if want_input else None
        grad_grid = points._new(points.shape) if want_grid else None
        if (grad_input is not None and grad_input.size) or \
                (grad_grid is not None and grad_grid.size):
            x.backend.grid_sample_backward(
                grad.flat(), x.flat(), points.flat(),
                None if grad_input is None else grad_input.buffer,
                None if grad_grid is None else grad_grid.buffer, x.shape[0], x.shape[1],
                tuple(x.shape[2:]), tuple(points.shape[1:-1]), mode, padding, align_corners)
        return (None if grad_input is None else wrap(grad_input),
                None if grad_grid is None else wrap(grad_grid))

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError(f"derivative for aten::{type(ctx)._torch_op} is not implemented")


class GridSampler3DBackward(GridSampler2DBackward):
    _torch_op = "grid_sampler_3d_backward"


class GridSampler2D(KernelFunction):
    """torch.grid_sampler_2d: input (N, C, H, W) sampled at grid (N, OH, OW, 2)."""
    backward_node = GridSampler2DBackward

    @staticmethod
    def forward(ctx, input, grid, mode, padding, align_corners):
        out = _run_forward(input, grid, mode, padding, align_corners)
        ctx.save_for_backward(input, grid)
        ctx.options = (mode, padding, align_corners)
        return wrap(out)

    @staticmethod
    def backward(ctx, g):
        input, grid = ctx.saved_tensors
        grad_input, grad_grid = type(ctx).backward_node.apply(
            g, input, grid, *ctx.options, ctx.needs_input_grad[0], ctx.needs_input_grad[1])
        return grad_input, grad_grid, None, None, None


class GridSampler3D(GridSampler2D):
    """torch.grid_sampler_3d: input (N, C, D, H, W) sampled at grid (N, OD, OH, OW, 3)."""
    backward_node = GridSampler3DBackward


def _sizes(t):
    return str(list(t.shape))


def _check_grid_sampler(input, grid, mode):
    """ATen's checks (check_grid_sampler_common, then the 2-D or 3-D ones, then the dtype
    dispatch), in its order and words."""
    for t in (input, grid):
        if t.ndim == 0:
            raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    if input.device != grid.device:
        raise RuntimeError(f"grid_sampler(): expected input and grid to be on same device, but "
                           f"input is on {input.device} and grid is on {grid.device}")
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, "
                           f"but got input with sizes {_sizes(input)} and grid with sizes "
                           f"{_sizes(grid)}")
    if grid.shape[-1] != input.ndim - 2:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {input.ndim - 2} in last "
                           f"dimension, but got grid with sizes {_sizes(grid)}")
    for i in range(2, input.ndim):
        if input.shape[i] <= 0:
            raise RuntimeError(f"grid_sampler(): expected input to have non-empty spatial "
                               f"dimensions, but input has sizes {_sizes(input)} with dimension "
                               f"{i} being empty")
    two_d = input.ndim == 4
    rank = 4 if two_d else 5
    if input.ndim != rank or grid.ndim != rank:
        raise RuntimeError(f"grid_sampler(): expected {rank}D input and grid with same number of "
                           f"dimensions, but got input with sizes {_sizes(input)} and grid with "
                           f"sizes {_sizes(grid)}")
    if not two_d and mode == _MODES["bicubic"]:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    dtype = input.dtype
    if not dtype.is_floating_point:
        if input.device.type == "cpu":
            kernel = "grid_sampler_2d_cpu_kernel_impl" if two_d else "grid_sampler3d_cpu"
        else:
            kernel = f"grid_sampler_{2 if two_d else 3}d_cuda"
        raise NotImplementedError(f'"{kernel}" not implemented for \'{dtype.torch_name}\'')
    if grid.dtype is not dtype:
        raise RuntimeError(f"expected scalar type {dtype.torch_name} but found "
                           f"{grid.dtype.torch_name}")
    return two_d


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """torch.nn.functional.grid_sample: input (N, C, H, W) or (N, C, D, H, W) sampled at the
    normalized points of grid (N, OH, OW, 2) or (N, OD, OH, OW, 3), x first; mode bilinear,
    nearest or bicubic (4-D only), padding_mode zeros, border or reflection."""
    if mode != "bilinear" and mode != "nearest" and mode != "bicubic":
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', "
                         f"'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode != "zeros" and padding_mode != "border" and padding_mode != "reflection":
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    mode_code, padding_code = _MODES[mode], _PADDINGS[padding_mode]
    two_d = _check_grid_sampler(input, grid, mode_code)
    node = GridSampler2D if two_d else GridSampler3D
    return node.apply(input, grid, mode_code, padding_code, bool(align_corners))


@functools.lru_cache(maxsize=64)
def _linspace_from_neg_one(steps, align_corners, float64):
    """ATen's linspace_from_neg_one in float64 or float32: linspace(-1, 1, steps) as torch's
    CPU kernel computes it (the same bits) (-1 + step·i below halfway, 1 - step·(steps - 1 - i) from there,
    each a fused multiply-add: one rounding), then · (steps - 1) / steps unless align_corners
    (two tensor ops, two roundings); [0] for one step. A constant: cached, read-only."""
    dtype = np.float64 if float64 else np.float32
    if steps <= 1:
        values = np.zeros(1, dtype)
    else:
        step = dtype(2) / dtype(steps - 1)
        half = steps // 2
        if float64:     # the exact sum rounded once
            exact = fractions.Fraction(float(step))
            values = np.array([float(-1 + exact * i) if i < half else
                               float(1 - exact * (steps - 1 - i)) for i in range(steps)])
        else:           # float32 products and sums are exact in float64: one rounding
            i = np.arange(steps, dtype=np.float64)
            values = np.where(i < half, -1 + np.float64(step) * i,
                              1 - np.float64(step) * (steps - 1 - i)).astype(np.float32)
        if not align_corners:
            values = (values * dtype(steps - 1)).astype(dtype) / dtype(steps)
    values = values.astype(dtype)
    values.flags.writeable = False
    return values


def _base_grid(spatial, align_corners, dtype):
    """The (prod(spatial), k + 1) base grid: x (fastest), y[, z] coordinates and ones."""
    float64 = dtype is dtypes.float64
    compute = np.float64 if float64 else np.float32
    axes = [_linspace_from_neg_one(s, bool(align_corners), float64) for s in reversed(spatial)]
    mesh = np.meshgrid(*reversed(axes), indexing="ij")      # z/y/x order, each full-sized
    columns = [m.reshape(-1) for m in reversed(mesh)] + [np.ones(int(np.prod(spatial)), compute)]
    return np.stack(columns, axis=1)


def affine_grid(theta, size, align_corners=None):
    """torch.nn.functional.affine_grid: the (N, H, W, 2) or (N, D, H, W, 3) sampling grid of
    the affine matrices theta (N, 2, 3) or (N, 3, 4) for an output of size (N, C, H, W) or
    (N, C, D, H, W); differentiable in theta."""
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    if not theta.dtype.is_floating_point:
        raise ValueError(f"Expected theta to have floating point type, but got "
                         f"torch.{theta.dtype.name}")
    if len(size) == 4:
        if theta.ndim != 3 or theta.shape[-2] != 2 or theta.shape[-1] != 3:
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size "
                             f"{size}. Got {theta.shape}.")
        spatial = tuple(size[-2:])
    elif len(size) == 5:
        if theta.ndim != 3 or theta.shape[-2] != 3 or theta.shape[-1] != 4:
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size "
                             f"{size}. Got {theta.shape}.")
        spatial = tuple(size[-3:])
    else:
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D "
                                  f"affine transforms, respectively. Got size {size}.")
    if align_corners and min(spatial) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size grids "
                      "when align_corners=True. This is not an intended use case of affine_grid. "
                      "See the documentation of affine_grid for details.", stacklevel=2)
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    batch, k = int(size[0]), len(spatial)
    if theta.shape[0] != batch:     # torch's bmm of the (N, ·, k + 1) base grid and theta
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{batch}, {k + 1}] but got: [{theta.shape[0]}, {k + 1}].")
    base = tensor(_base_grid(spatial, align_corners, theta.dtype), dtype=theta.dtype,
                          device=theta.device)
    grid = base @ theta.transpose(1, 2)
    return grid.reshape((batch,) + spatial + (k,))
