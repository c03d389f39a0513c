"""Sliding windows over (N, C, *spatial) images: torch.nn.functional.unfold (im2col) and fold
(col2im), and the windowed view that convolution and pooling build on.

This is DESIGN's "convolution-like operations" mechanism. im2col pads the input into a fresh
buffer (only when there is padding), describes every window as one `as_strided`-style view of
shape (N, C, kh, kw, OH, OW) with strides (sN, sC, dil·sH, dil·sW, stride·sH, stride·sW), and
compacts it with one kernel. The same holds for any number of spatial axes (1-D and 3-D
convolution and pooling: (N, C, kd, kh, kw, OD, OH, OW)); unfold and fold are 2-D only, as in
torch. col2im is the adjoint: one overlap-correct `strided_add` of the
columns through the same view of a zeroed padded buffer, then the padding is cropped. Each is the
other's backward, so gradients of any order work.

Max pooling's nodes (MaxPool, on the max_pool kernels) are here too; convolution's own nodes,
which build GEMM rows from these windows, are functions/conv.py.
"""
import math
import numbers
import operator
from collections import namedtuple

from .. import dtypes
from ..autograd import KernelFunction
from ..ndarray import NDArray, contiguous_strides, normalize_dim, shape_str
from ..opcodes import BinaryOp, UnaryOp
from ..tensor import wrap
from .elementwise import ReluBackward
from .index import Gather
from .movement import _copy_into, _view_of
from .reduce import sum_to


__all__ = []   # torch has these only in torch.nn.functional, which imports them from here

_Geometry = namedtuple("_Geometry", "kernel dilation padding stride size blocks")
# max pooling's windows: per spatial axis, torch's output size (ceil_mode applied by the caller)
PoolGeometry = namedtuple("PoolGeometry", "out kernel stride padding dilation")


# ---- argument checks (torch's order and wording) ----------------------------------------------
def _pair(value, name):
    if isinstance(value, numbers.Integral):
        return (operator.index(value),) * 2
    value = tuple(operator.index(v) for v in value)
    if len(value) != 2:
        raise RuntimeError(f"It is expected {name} equals to 2, but got size {len(value)}")
    return value


def _check_positive(name, value, first, second):
    if value[0] <= 0 or value[1] <= 0:
        raise RuntimeError(f"{name} should be greater than zero, but got {first}: {value[0]} "
                           f"{second}: {value[1]}")


def _check_kernel(kernel):
    _check_positive("kernel size", kernel, "kernel_height", "kernel_width")


def _check_dilation(dilation):
    _check_positive("dilation", dilation, "dilation_height", "dilation_width")


def _check_stride(stride):
    _check_positive("stride", stride, "stride_height", "stride_width")


def _check_padding(padding):
    if padding[0] < 0 or padding[1] < 0:
        raise RuntimeError(f"padding should be non-negative, but got pad_height: {padding[0]} "
                           f"pad_width: {padding[1]}")


def _blocks(size, kernel, dilation, padding, stride):
    """Window positions along one axis (floor division, as torch's div_rtn)."""
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


def window_geometry(size, kernel, dilation, padding, stride):
    """The geometry of windows over spatial `size` (any number of axes), its arguments already
    checked by the caller (convolution and pooling check them with their own messages)."""
    blocks = tuple(_blocks(*axis) for axis in zip(size, kernel, dilation, padding, stride))
    return _Geometry(tuple(kernel), tuple(dilation), tuple(padding), tuple(stride), tuple(size),
                     blocks)


def _im2col_geometry(input, kernel_size, dilation, padding, stride):
    """Validate F.unfold's arguments for a (C, H, W) or (N, C, H, W) input; the geometry."""
    kernel, dilation = _pair(kernel_size, "kernel_size"), _pair(dilation, "dilation")
    padding, stride = _pair(padding, "padding"), _pair(stride, "stride")
    _check_kernel(kernel)
    _check_dilation(dilation)
    _check_padding(padding)
    _check_stride(stride)
    shape, ndim = input._data.shape, input.ndim
    # torch reads size(1) and size(2) before looking at ndim, so low-rank inputs get its
    # IndexError (size(2) only when size(1) is nonzero).
    valid = shape[normalize_dim(1, ndim)] != 0 and shape[normalize_dim(2, ndim)] != 0
    if not ((ndim == 3 and shape[0] and valid) or (ndim == 4 and valid and shape[3])):
        raise RuntimeError("Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and "
                           f"other non-zero dimensions for input, but got: {shape_str(shape)}")
    size = shape[-2:]
    blocks = tuple(_blocks(size[i], kernel[i], dilation[i], padding[i], stride[i])
                   for i in range(2))
    if blocks[0] < 1 or blocks[1] < 1:
        raise RuntimeError(f"Given input with spatial size {size}, kernel_size={kernel}, "
                           f"dilation={dilation}, padding={padding}, calculated shape of the "
                           f"array of sliding blocks as {blocks}, but its components must be at "
                           "least one.")
    return _Geometry(kernel, dilation, padding, stride, size, blocks)


def _col2im_geometry(input, output_size, kernel_size, dilation, padding, stride):
    """Validate F.fold's arguments for a (C·kh·kw, L) or (N, C·kh·kw, L) input; the geometry."""
    size, kernel = _pair(output_size, "output_size"), _pair(kernel_size, "kernel_size")
    dilation, padding = _pair(dilation, "dilation"), _pair(padding, "padding")
    stride = _pair(stride, "stride")
    _check_kernel(kernel)
    _check_stride(stride)
    _check_dilation(dilation)
    _check_padding(padding)
    shape, ndim = input._data.shape, input.ndim
    if not ((ndim == 2 and shape[0] and shape[1]) or (ndim == 3 and shape[1] and shape[2])):
        raise RuntimeError("Expected 2D or 3D (batch mode) tensor for input with possibly 0 "
                           "batch size and non-zero dimensions for input, but got: "
                           f"{shape_str(shape)}")
    planes, length = shape[-2:]
    if planes % (kernel[0] * kernel[1]):
        raise RuntimeError("Expected size of input's dimension 1 to be divisible by the product "
                           f"of kernel_size, but got input.size(1)={planes} and "
                           f"kernel_size={kernel}.")
    blocks = tuple(_blocks(size[i], kernel[i], dilation[i], padding[i], stride[i])
                   for i in range(2))
    given = (f"Given output_size={size}, kernel_size={kernel}, dilation={dilation}, "
             f"padding={padding}, stride={stride}, ")
    if length != blocks[0] * blocks[1]:
        raise RuntimeError(given + "expected size of input's dimension 2 to match the calculated "
                           f"number of sliding blocks {blocks[0]} * {blocks[1]} = "
                           f"{blocks[0] * blocks[1]}, but got input.size(2)={length}.")
    if blocks[0] < 1 or blocks[1] < 1:
        raise RuntimeError(given + f"calculated shape of the array of sliding blocks as {blocks}, "
                           "which is too small (non-positive)")
    if size[0] < 1 or size[1] < 1:
        raise RuntimeError("Expected output spatial size to be positive, but got: "
                           f"output_size={size}.")
    return _Geometry(kernel, dilation, padding, stride, size, blocks)


def _check_floating(input, op):
    """torch implements im2col/col2im for floating dtypes only."""
    dtype = input.dtype
    if not dtype.is_floating_point:
        device = "cuda" if input.is_cuda else "cpu"
        raise NotImplementedError(f'"{op}_out_{device}" not implemented for '
                                  f"'{dtype.torch_name}'")


# ---- NDArray-level im2col / col2im ------------------------------------------------------------
def _channels_last(ndim):
    """The axis order (0, 2, …, ndim - 1, 1): channels innermost (NHWC for a 4-D array)."""
    return (0,) + tuple(range(2, ndim)) + (1,)


def _spatial_slice(padding, size):
    """The index that crops `padding` off every spatial axis of a (N, C, *padded) array."""
    return (slice(None), slice(None)) + tuple(slice(p, p + s) for p, s in zip(padding, size))


def _memory_order(nd):
    """nd's axes from the outermost in memory to the innermost: (0, 1, 2, 3) for a contiguous
    (N, C, H, W) array, (0, 2, 3, 1) for a channels-last one."""
    return tuple(sorted(range(nd.ndim), key=lambda d: -nd.strides[d]))


def _new_in_order(shape, order, fill, dtype, device):
    """A fresh array of `shape` laid out in memory in axis order `order` (torch's
    preserve_format), filled with `fill` unless it is None."""
    stored = tuple(shape[d] for d in order)
    buffer = NDArray.empty(stored, dtype, device) if fill is None else \
        NDArray.full(stored, fill, dtype, device)
    return buffer.permute(tuple(order.index(d) for d in range(len(order))))


def _pad(nd, padding, value, order=None):
    """nd (N, C, *spatial) surrounded by `padding` rows/columns of `value`, laid out in axis
    order `order` (default: nd's own, so a channels-last input stays channels-last and its
    windows keep the channels innermost); nd itself when that needs no copy. The copy walks nd
    in its own memory order: one strided write, whatever the two layouts."""
    source_order = _memory_order(nd)
    order = source_order if order is None else order
    if not any(padding) and order == source_order:
        return nd
    size = nd.shape[2:]
    padded_shape = nd.shape[:2] + tuple(s + 2 * p for s, p in zip(size, padding))
    out = _new_in_order(padded_shape, order, value, nd.dtype, nd.device)
    _copy_into(out[_spatial_slice(padding, size)].permute(source_order),
               nd.permute(source_order))
    return out


def _windows(padded, geometry):
    """Every window of a padded (N, C, *padded size) array as a (N, C, *kernel, *blocks) view:
    (N, C, kh, kw, OH, OW) in 2-D."""
    spatial = padded.strides[2:]
    within = tuple(d * s for d, s in zip(geometry.dilation, spatial))     # along a window
    between = tuple(st * s for st, s in zip(geometry.stride, spatial))    # window to window
    return padded._view(padded.shape[:2] + geometry.kernel + geometry.blocks,
                        padded.strides[:2] + within + between, padded.offset)


def _batched(nd, batched):
    """A view with a leading batch axis of 1 added when the input is unbatched."""
    return nd if batched else nd._view((1,) + nd.shape, (0,) + nd.strides, nd.offset)


def _unbatched(nd, batched):
    return nd if batched else nd._view(nd.shape[1:], nd.strides[1:], nd.offset)


class Im2Col(KernelFunction):
    """Windows of an image: compact (N, C·kh·kw, L) columns (`flat`) or the (N, C, kh, kw, OH,
    OW) view itself (of the input when unpadded, else of a padded copy in the input's memory
    order); any number of spatial axes alike."""

    @staticmethod
    def forward(ctx, x, geometry, pad_value, flat):
        batched = x._data.ndim == len(geometry.kernel) + 2
        nd = _batched(x._data, batched)
        ctx.geometry, ctx.batched, ctx.order = geometry, batched, _memory_order(nd)
        windows = _windows(_pad(nd, geometry.padding, pad_value), geometry)
        if not flat:
            return _view_of(x, _unbatched(windows, batched))
        n, c = windows.shape[:2]
        shape = ((n,) if batched else ()) + (c * math.prod(geometry.kernel),
                                             math.prod(geometry.blocks))
        return wrap(windows.copy()._view(shape, contiguous_strides(shape), 0))

    @staticmethod
    def backward(ctx, g):
        return Col2Im.apply(g, ctx.geometry, ctx.batched, ctx.order), None, None, None


def _matching_layout(src, target):
    """(compact source, target view) walked in the same element order. A source that is a
    permutation of a compact array (conv's channel-major columns) is read as it lies, with
    the target view permuted alike, instead of being copied into the target's order first."""
    order = sorted(range(src.ndim), key=lambda d: -src.strides[d])
    permuted = src.permute(order)
    if permuted.is_compact():
        return permuted, target.permute(order)
    return src.compact(), target


def _tiles_exactly(geometry, padded_size):
    """Do the windows cover every padded pixel exactly once (pooling with stride = kernel)?
    Then col2im is a plain strided copy: no zero fill, no read-modify-write."""
    return all(d == 1 and s == k and blocks * k == size for k, d, s, blocks, size in
               zip(geometry.kernel, geometry.dilation, geometry.stride, geometry.blocks,
                   padded_size))


class Col2Im(KernelFunction):
    """Sum columns back into the image they were taken from: one strided_add through the
    window view of a zeroed padded buffer (a strided_set when the windows tile it exactly),
    then the padding is cropped. The padded buffer is laid out in axis order `order` (that of
    the image the columns came from), so that columns taken channels-innermost are summed in
    contiguous runs; the result is contiguous."""

    @staticmethod
    def forward(ctx, cols, geometry, batched, order=None):
        nd = cols._data
        flat = nd.ndim == (3 if batched else 2)
        ctx.geometry, ctx.flat = geometry, flat
        nd = _batched(nd, batched)
        n = nd.shape[0]
        c = nd.shape[1] // math.prod(geometry.kernel) if flat else nd.shape[1]
        padded_size = tuple(s + 2 * p for s, p in zip(geometry.size, geometry.padding))
        order = tuple(range(len(padded_size) + 2)) if order is None else order
        exact = _tiles_exactly(geometry, padded_size)
        padded = _new_in_order((n, c) + padded_size, order, None if exact else 0, nd.dtype,
                               nd.device)
        windows = _windows(padded, geometry)
        if windows.size:
            src, target = _matching_layout(nd.reshape(windows.shape), windows)
            kernel = nd.backend.strided_set if exact else nd.backend.strided_add
            kernel(src.flat(), padded.buffer, target.shape, target.strides, target.offset)
        image = padded[_spatial_slice(geometry.padding, geometry.size)].compact()
        return wrap(_unbatched(image, batched))

    @staticmethod
    def backward(ctx, g):
        return Im2Col.apply(g, ctx.geometry, 0.0, ctx.flat), None, None, None


# ---- public -----------------------------------------------------------------------------------
def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """torch.nn.functional.unfold: (N, C, H, W) → (N, C·kh·kw, L) sliding-block columns."""
    geometry = _im2col_geometry(input, kernel_size, dilation, padding, stride)
    _check_floating(input, "im2col")
    return Im2Col.apply(input, geometry, 0.0, True)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """torch.nn.functional.fold: (N, C·kh·kw, L) columns summed into (N, C, H, W)."""
    geometry = _col2im_geometry(input, output_size, kernel_size, dilation, padding, stride)
    _check_floating(input, "col2im")
    return Col2Im.apply(input, geometry, input.ndim == 3)


def im2col_view(x, kernel_size, dilation=1, padding=0, stride=1, pad_value=0.0):
    """The differentiable (N, C, kh, kw, OH, OW) window view conv and pooling build on ((C, kh,
    kw, OH, OW) for an unbatched input); pad_value fills the border (-inf for max-pooling).
    Not compacted: callers permute/reshape it into the layout their kernel wants."""
    geometry = _im2col_geometry(x, kernel_size, dilation, padding, stride)
    return Im2Col.apply(x, geometry, pad_value, False)


def window_view(x, geometry, pad_value=0.0):
    """im2col_view for any number of spatial axes, given a window_geometry the caller checked:
    (N, C, *kernel, *blocks)."""
    return Im2Col.apply(x, geometry, pad_value, False)


def fold_columns(cols, geometry):
    """fold for any number of spatial axes: (N, C·prod(kernel), prod(blocks)) columns summed
    into (N, C, *geometry.size), a window_geometry the caller checked."""
    return Col2Im.apply(cols, geometry, True, None)


# ---- max pooling --------------------------------------------------------------------------------
def _planes(shape, spatial):
    """How many planes a (..., *spatial axes) shape holds, and the size of one."""
    return math.prod(shape[:-spatial]), math.prod(shape[-spatial:])


class MaxPool(KernelFunction):
    """(values, indices) = the maximum of every window of x (..., *size), each leading index a
    plane, and its flat position in the plane (torch's return_indices): one max_pool_forward
    kernel over the compact input, which reads only the windows' real elements. The values'
    gradient is MaxPoolBackward's; the indices have none."""
    materialize_grads = False

    @staticmethod
    def forward(ctx, x, geometry):
        nd = x._data.compact()
        values, indices = _max_pool_arrays(nd, geometry)
        ctx.input_shape, ctx.spatial = nd.shape, len(geometry.kernel)
        indices = wrap(indices)
        ctx.save_for_backward(indices)
        return wrap(values), indices

    @staticmethod
    def backward(ctx, g, _indices_grad):
        if g is None:
            return None, None
        indices, = ctx.saved_tensors
        return MaxPoolBackward.apply(g, indices, ctx.input_shape, ctx.spatial), None


def _max_pool_arrays(nd, geometry, bias=None):
    """(values, indices) NDArrays of every window of the compact nd (..., *size); with `bias`
    (a compact per-channel NDArray), of relu(nd + bias) read on the fly."""
    spatial = len(geometry.kernel)
    lead, size = nd.shape[:-spatial], nd.shape[-spatial:]
    values = NDArray.empty(lead + geometry.out, nd.dtype, nd.device)
    indices = NDArray.empty(values.shape, dtypes.int64, nd.device)
    nd.backend.max_pool_forward(nd.flat(), values.buffer, indices.buffer,
                                _planes(nd.shape, spatial)[0], size, *geometry,
                                bias=None if bias is None else bias.flat())
    return values, indices


class ReluMaxPool(KernelFunction):
    """max_pool(relu(x + bias)) as one node (nn.Sequential's convolution → ReLU → max pool).
    For a compact float32/float64 x and a bias, the max-pool kernel reads relu(x + bias) on the
    fly (ADD_RELU's ops); otherwise the bias add and relu are one pass (AddRelu's kernel, or relu
    alone) before the kernel. Either way no full-size relu output is kept. Each pooled value is
    the relu output at its window's argmax, so masking g by the pooled values (ReluBackward on
    the pooled size) before scattering it back gives the ReLU's mask at every position a
    gradient reaches: the separate ops' bits, without their passes over the full size. (A
    narrow dtype rounds relu(x + bias) before the pool compares, so it takes the pass.)"""

    @staticmethod
    def forward(ctx, x, bias, geometry):
        nd = x._data
        if bias is not None and nd.is_compact() and nd.dtype.compute is nd.dtype and \
                nd.dtype.is_floating_point:
            values, indices = _max_pool_arrays(nd, geometry, bias._data.compact())
        else:
            nd = (nd.binary(BinaryOp.ADD_RELU, bias._data) if bias is not None else
                  nd.unary(UnaryOp.RELU)).compact()
            values, indices = _max_pool_arrays(nd, geometry)
        ctx.input_shape, ctx.spatial = nd.shape, len(geometry.kernel)
        ctx.node_name = f"MaxPool{ctx.spatial}DWithIndicesBackward0"     # torch's last node
        ctx.bias_shape = None if bias is None else bias._data.shape
        values = wrap(values)
        ctx.save_for_backward(values, wrap(indices))
        return values

    @staticmethod
    def backward(ctx, g):
        values, indices = ctx.saved_tensors
        grad = MaxPoolBackward.apply(ReluBackward.apply(g, values), indices, ctx.input_shape,
                                     ctx.spatial)
        grad_bias = sum_to(grad, ctx.bias_shape) if ctx.needs_input_grad[1] else None
        return grad, grad_bias, None


def relu_max_pool(x, bias, geometry):
    """max_pool(relu(x + bias)) (bias None: max_pool(relu(x))) of a (N, C, *size) x, bias
    broadcastable to it, geometry a PoolGeometry the caller checked: the values only."""
    return ReluMaxPool.apply(x, bias, geometry)


class MaxPoolBackward(KernelFunction):
    """MaxPool's input gradient: g summed at the indices into zeros of the input's shape (the
    max_pool_backward kernel; overlapping windows add up). Linear in g, so its own backward is
    the adjoint: gg gathered at the indices, plane by plane."""

    @staticmethod
    def forward(ctx, g, indices, input_shape, spatial):
        gd = g._data.compact()
        planes, in_plane = _planes(input_shape, spatial)
        grad = NDArray.empty(input_shape, gd.dtype, gd.device)
        gd.backend.max_pool_backward(gd.flat(), indices._data.compact().flat(), grad.buffer,
                                     planes, in_plane, _planes(gd.shape, spatial)[1])
        ctx.spatial = spatial
        ctx.save_for_backward(indices)
        return wrap(grad)

    @staticmethod
    def backward(ctx, gg):
        indices, = ctx.saved_tensors
        planes, in_plane = _planes(gg.shape, ctx.spatial)
        out_plane = _planes(indices.shape, ctx.spatial)[1]
        picked = Gather.apply(gg.reshape(planes, in_plane), indices.reshape(planes, out_plane), 1)
        return picked.reshape(indices.shape), None, None, None


class MaxPool2DWithIndices(MaxPool):
    """MaxPool under torch's node name for 1-D and 2-D pooling (torch pools 1-D as 2-D)."""


class MaxPool3DWithIndices(MaxPool):
    """MaxPool under torch's node name for 3-D pooling."""


def max_pool(x, geometry):
    """(values, indices) of every window of x (..., *size) (PoolGeometry, checked by the
    caller): torch's max_pool1d/2d/3d with return_indices, its gradient included."""
    node = MaxPool3DWithIndices if len(geometry.kernel) == 3 else MaxPool2DWithIndices
    return node.apply(x, geometry)
