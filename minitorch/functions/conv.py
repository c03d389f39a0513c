"""Convolution: torch.nn.functional.conv1d/2d/3d and conv_transpose1d/2d/3d, their argument
checks (ATen's order and wording) and the nodes that compute them.

conv with groups = 1 is one node, ConvProduct. On the CPU a 2-D convolution (1-D runs as 2-D)
with stride 1 whose images give a 32-column tile is the "direct" product: a GEMM that reads the
padded NCHW image in place as its operand rows (the conv_matmul / conv_weight_matmul kernels;
forward, input and weight gradients; see _direct_ok). Otherwise one without horizontal
dilation or stride is one GEMM over "shifted rows": a copy of the image stacked kh deep, whose
overlapping rows the GEMM reads in place as the windows (no im2col: see _shifted_rows); with
few output channels, the GEMM comes first (_columns_first_product). Other shapes (3-D,
horizontal dilation or stride, tiny windows) compact the windows of a channels-last padded
copy into im2col rows (N·OH·OW, kh·kw·C), a chunk of images at a time, multiplied by the
weight (permuted to the same (kh, kw, C) order). Its backward is ConvProductBackward: the weight
gradient from the same rows, the input gradient either as a stride-1 convolution of g over
shifted rows or as g·w folded (col2im, one strided_add per chunk), each route picked by shape;
being linear in each operand, the pair gives every higher derivative. A transposed convolution
(groups = 1) is ConvProductBackward's input gradient with x as g. Grouped convolution takes the
window view of functions/window.py (Im2Col) and one batched GEMM per group, its backward the
fold (Col2Im) that autograd derives; grouped transposed convolution is a GEMM to columns folded
onto the output grid (fold_columns). 1-D convolutions run as 2-D ones over a height-1 image.
"""
import math
import numbers
import operator
from collections import namedtuple

from ..autograd import KernelFunction, is_grad_enabled
from ..ndarray import NDArray, contiguous_strides, scalar_array, shape_str
from ..opcodes import BinaryOp, ReduceOp
from ..tensor import wrap, zeros
from . import complex as _complex
from .autocast_policy import LOWER, autocast_op
from .complex_refusals import refuse_complex
from .elementwise import AddRelu, C_NAMES, TORCH_NAMES
from .joining import cat
from .movement import Squeeze, _copy_into
from .window import (_channels_last, _memory_order, _new_in_order, _pad,
                     _windows, fold_columns, relu_max_pool, window_geometry, window_view)

__all__ = []   # torch has these in torch.nn.functional (conv1d/2d/3d at its top level too)


# ---- argument checks (torch's order and wording) ----------------------------------------------
def _conv_param(value, name, dims, parsed):
    """torch's expand_param_if_needed: an int (which torch's binding turns into `parsed` copies)
    or a one-element list repeats to `dims` values; any other length is an error."""
    values = ([operator.index(value)] * parsed if isinstance(value, numbers.Integral) else
              [operator.index(v) for v in value])
    if len(values) == 1:
        values = values * dims
    if len(values) != dims:
        raise RuntimeError(f"expected {name} to be a single integer value or a list of {dims} "
                           "values to match the convolution dimensions, but got "
                           f"{name}={values}")
    return tuple(values)


def _same_padding(padding, stride, dilation, weight):
    """Per-axis (left, right) padding for a padding string; 'same' puts any odd extra on the
    right, as torch does."""
    if padding == "valid":
        return [(0, 0)] * len(stride)
    if padding != "same":
        raise RuntimeError(f"Invalid padding string: '{padding}'")
    if any(s != 1 for s in stride):
        raise RuntimeError("padding='same' is not supported for strided convolutions")
    totals = [d * (k - 1) for d, k in zip(dilation, weight.shape[2:])]
    return [(t // 2, t - t // 2) for t in totals]


def _conv_setup(name, spatial, input, weight, bias, stride, padding, dilation, groups,
                transposed=False, output_padding=0):
    """Validate a convolution call in torch's order and wording. Returns the batched input,
    whether it was unbatched, and the expanded stride, (left, right) padding per axis,
    dilation and output_padding."""
    if input.ndim not in (spatial + 1, spatial + 2):
        raise RuntimeError(f"Expected {spatial + 1}D (unbatched) or {spatial + 2}D (batched) "
                           f"input to {name}, but got input of size: {shape_str(input.shape)}")
    unbatched = input.ndim == spatial + 1
    x = input.unsqueeze(0) if unbatched else input
    if weight.ndim < 3:
        raise RuntimeError("weight should have at least three dimensions")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    dims = weight.ndim - 2
    stride = _conv_param(stride, "stride", dims, spatial)
    dilation = _conv_param(dilation, "dilation", dims, spatial)
    if isinstance(padding, str):
        pads = _same_padding(padding, stride, dilation, weight)
    else:
        pads = [(p, p) for p in _conv_param(padding, "padding", dims, spatial)]
    output_padding = _conv_param(output_padding, "output_padding", dims, spatial)
    if any(p < 0 for pair in pads for p in pair):
        raise RuntimeError("negative padding is not supported")
    if any(p < 0 for p in output_padding):
        raise RuntimeError("negative output_padding is not supported")
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(f"dilation should be greater than zero, but got {list(dilation)}")
    _check_conv_shapes(x, weight, bias, groups, pads, dilation, transposed)
    _check_conv_dtypes(x, weight, bias)
    return x, unbatched, stride, pads, dilation, output_padding


def _check_conv_shapes(x, weight, bias, groups, pads, dilation, transposed):
    """ATen's check_shape_forward (messages built only on failure: this runs per call)."""
    if weight.ndim != x.ndim:
        raise RuntimeError(f"Expected {weight.ndim}-dimensional input for {weight.ndim}-"
                           f"dimensional weight {shape_str(weight.shape)}, but got {x.ndim}-"
                           f"dimensional input of size {shape_str(x.shape)} instead")
    if weight.shape[0] < groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be at least {groups} at "
                           f"dimension 0, but got weight of size {shape_str(weight.shape)} "
                           "instead")
    if weight.shape[0] % groups:
        # torch's message wraps the size in a second pair of brackets.
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} "
                           f"at dimension 0, but got weight of size [{shape_str(weight.shape)}] "
                           "instead")
    channels = weight.shape[0] if transposed else weight.shape[1] * groups
    out_channels = weight.shape[1] * groups if transposed else weight.shape[0]
    if x.shape[1] != channels:
        raise RuntimeError(f"{_given(weight, groups, transposed)}, expected "
                           f"input{shape_str(x.shape)} to have {channels} channels, but got "
                           f"{x.shape[1]} channels instead")
    if bias is not None and (bias.ndim != 1 or bias.shape[0] != out_channels):
        given = _given(weight, groups, transposed) if transposed else \
            f"Given weight of size {shape_str(weight.shape)}"
        raise RuntimeError(f"{given}, expected bias to be 1-dimensional with {out_channels} "
                           f"elements, but got bias of size {shape_str(bias.shape)} instead")
    _check_kernel_size(weight.shape[2:])
    if transposed:
        return
    padded = [size + left + right for size, (left, right) in zip(x.shape[2:], pads)]
    kernel = [d * (k - 1) + 1 for d, k in zip(dilation, weight.shape[2:])]
    if any(p < k for p, k in zip(padded, kernel)):
        raise RuntimeError(f"Calculated padded input size per channel: "
                           f"({' x '.join(map(str, padded))}). Kernel size: "
                           f"({' x '.join(map(str, kernel))}). Kernel size can't be greater than "
                           "actual input size")


def _given(weight, groups, transposed):
    w_shape = shape_str(weight.shape)
    return (f"Given transposed=1, weight of size {w_shape}" if transposed else
            f"Given groups={groups}, weight of size {w_shape}")


def _check_kernel_size(kernel):
    """torch refuses an empty kernel (a conv1d is its 2-D kernel of height 1)."""
    if all(k > 0 for k in kernel):
        return
    if len(kernel) == 3:
        raise RuntimeError("kernel size should be greater than zero, but got: "
                           f"{' x '.join(map(str, kernel))} (TxHxW)")
    height, width = (1, kernel[0]) if len(kernel) == 1 else kernel
    raise RuntimeError(f"kernel size should be greater than zero, but got kernel_height: {height} "
                       f"kernel_width: {width}")


def _check_conv_dtypes(x, weight, bias):
    if weight.dtype is not x.dtype:
        raise RuntimeError(f"expected scalar type {TORCH_NAMES[x.dtype.name]} but found "
                           f"{TORCH_NAMES[weight.dtype.name]}")
    if bias is not None and bias.dtype is not x.dtype:
        raise RuntimeError(f"Input type ({C_NAMES[x.dtype.name]}) and bias type "
                           f"({C_NAMES[bias.dtype.name]}) should be the same")


# ---- the convolution product --------------------------------------------------------------------
# Window sizes (K = kh·kw·C) up to which the product is formed per image straight into NCHW,
# w @ rows[n]ᵀ, instead of the tall NHWC product and a transposing bias add: 0.57 vs 1.04 ms for
# conv(1→16, 3x3) on a 128-image MNIST batch, but 1.57 vs 1.32 ms at K = 27 (measured).
DIRECT_NCHW_MAX_K = 16
# GEMM rows are built and used a chunk of images at a time, about this many bytes per thread,
# so that they are read back from cache rather than memory (conv(16→32) forward + backward on
# a 128-image batch: 6.2 ms in chunks of 16 images vs 7.0 ms whole; measured). A quarter of a
# 1 MiB L2: a backward then rebuilds each chunk's rows from the padded input into cache
# instead of reading the forward's whole rows back from memory (bench/workloads.py dcgan step,
# same process, alternating: 19.2 vs 17.8 ms at 2 MiB; style_net 12.6 vs 12.3 ms; conv(1→16)
# on a 128-image MNIST batch, forward + backward: 9.0 vs 7.0 ms; measured). Per thread because
# a chunk's GEMM is shared out among the threads: at 2 threads dcgan's 128-row products barely
# scaled (its 2-thread step, same process, alternating: 11.84 / 12.30 ms at 256 KiB per chunk,
# 10.94 / 11.32 ms at 256 KiB per thread; 1 thread unchanged).
CHUNK_BYTES = 256 << 10
# Output positions per image from which a first layer's weight gradient is one product per image,
# g (OC, OH·OW) read as it is, summed over images, rather than one GEMM over the chunk with g
# transposed into rows: per-image products as shallow as dcgan's (1 or 16 positions) ran at
# 5-30 GFLOP/s (measured).
PER_IMAGE_MIN_POSITIONS = 64


# what a direct forward keeps for the weight gradient: x padded, NCHW (see _direct_padded)
_Direct = namedtuple("_Direct", "padded")
# what an im2col forward of one chunk keeps: its compact rows (N, OH, OW, kh, kw, C)
_Im2colRows = namedtuple("_Im2colRows", "rows")
# the weight gradient itself, made along with the product (_im2col_product_and_weight_grad)
_WeightGrad = namedtuple("_WeightGrad", "grad")


def _row_windows(padded, geometry):
    """The windows of a padded image as GEMM rows: (N, OH, OW, kh, kw, C) in 2-D."""
    d = len(geometry.kernel)
    return _windows(padded, geometry).permute(
        (0,) + tuple(range(d + 2, 2 * d + 2)) + tuple(range(2, d + 2)) + (1,))


def _images(nd, i0, i1):
    """nd[i0:i1], images i0 to i1 - 1 of a batch, as a view made directly (the chunk loops run
    per chunk: indexing's general key parsing is not needed for this one slice)."""
    return nd._view((i1 - i0,) + nd.shape[1:], nd.strides, nd.offset + i0 * nd.strides[0])


def _scratch(chunks, per_image, like):
    """A flat buffer for the largest chunk's per_image values per image (the first chunk is the
    largest), which every chunk reuses: one allocation per call rather than one per chunk."""
    i0, i1 = chunks[0] if chunks else (0, 0)
    return NDArray.empty(((i1 - i0) * per_image,), like.dtype, like.device)


def _chunk_rows(windows, i0, i1, scratch):
    """Images i0 to i1 - 1 of a window view compacted into `scratch`: (B, ...), compact."""
    chunk = _images(windows, i0, i1)
    size = chunk.size
    if size:
        windows.backend.compact(windows.buffer, scratch.buffer[:size], chunk.shape,
                                chunk.strides, chunk.offset)
    return scratch._view(chunk.shape, contiguous_strides(chunk.shape), 0)


def _chunks(nd, rows_per_image, k):
    """Image ranges [i0, i1) whose GEMM rows take about CHUNK_BYTES (the whole batch on a GPU,
    where the kernels have no such cache to fit)."""
    n = nd.shape[0]
    if nd.device.type != "cpu":
        return [(0, n)]
    chunk = CHUNK_BYTES * nd.backend.get_num_threads()
    step = max(1, chunk // max(1, rows_per_image * k * nd.dtype.itemsize))
    return [(i, min(n, i + step)) for i in range(0, n, step)]


def _matmul_into(a, b, out, offset, batch, m, n, k, a_strides, a_offset, b_strides, b_offset):
    """The matmul kernel writing straight into out.buffer at `offset` (a chunk's slice of the
    result), which NDArray.matmul, returning a fresh array, cannot."""
    out.backend.matmul(a.buffer, b.buffer, out.buffer[offset:offset + batch * m * n], batch, m, n,
                       k, a_strides, a_offset, b_strides, b_offset)


# ---- direct: the GEMM reads the image itself (conv_matmul) -----------------------------------
DIRECT_MIN_COLUMNS = 32     # the kernel's tile width
# A 2-D convolution with stride 1 is out[n, oc, (oh, ow)] = Σ over the window (i, j, c) of
# w[oc, (i, j, c)] · x_padded[n, c, oh + i·dh, ow + j·dw]: a GEMM whose right operand's row for
# window element (i, j, c) is the NCHW padded image itself read from offset i·dh·Wp + j·dw +
# c·Hp·Wp, column oh·Wp + ow. The CPU kernel conv_matmul reads those rows in place (no im2col
# rows, no shifted copy, no packing of the image) and writes NCHW, dropping the wide columns
# ow ≥ OW. The stride-1 input gradient is the same product over g padded by d·(k - 1) - p with
# the weight flipped in space and its channel axes swapped.

def _direct_ok(xd, geometry):
    """Does the direct product apply: the CPU backend (its conv_matmul), float32 or float64,
    2-D, stride 1, windows wider than DIRECT_NCHW_MAX_K (narrower ones cost little either
    way), at least one 32-column tile of positions per image, and at most 1.5 wide columns
    per output column (dcgan's conv(64→1, 4x4) on 4x4, one position per image, ran 25x slower
    through it: measured)."""
    if xd.device.type != "cpu" or len(geometry.kernel) != 2 or geometry.stride != (1, 1) or \
            xd.dtype.name not in ("float32", "float64"):      # the kernels' two dtypes
        return False
    (oh, ow), wide = geometry.blocks, geometry.size[1] + 2 * geometry.padding[1]
    return (xd.shape[1] * math.prod(geometry.kernel) > DIRECT_NCHW_MAX_K
            and (oh - 1) * wide + ow >= DIRECT_MIN_COLUMNS and 2 * wide <= 3 * ow)


def _direct_padded(xd, geometry):
    """x padded with zeros as the direct kernels read it: NCHW, unit column stride, each
    channel's rows one after another (a compact x with no padding is used as it is)."""
    padded = _pad_zeros(xd, geometry.padding, (0, 1, 2, 3))
    if padded.strides[3] != 1 or padded.strides[1] < padded.shape[2] * padded.strides[2]:
        padded = padded.copy()
    return padded


def _direct_product(xd, wd, geometry, padded=None):
    """(N, OC, OH, OW), compact, = the stride-1 convolution of x (N, C, H, W) padded by
    geometry.padding with zeros (`padded`, when given) and w (OC, K) in (kh, kw, C) order,
    compact."""
    n, c = xd.shape[:2]
    out_channels = wd.shape[0]
    (kh, kw), (dh, dw) = geometry.kernel, geometry.dilation
    (oh, ow) = geometry.blocks
    padded = _direct_padded(xd, geometry) if padded is None else padded
    s_n, s_c, s_h, _ = padded.strides
    out = NDArray.empty((n, out_channels, oh, ow), xd.dtype, xd.device)
    xd.backend.conv_matmul(wd.buffer, padded.buffer, out.buffer, n, out_channels, wd.shape[1],
                           (0, wd.shape[1], 1), wd.offset, s_n, padded.offset, (kh, kw, c),
                           (dh * s_h, dw, s_c), oh, s_h, ow)
    return out


def _direct_weight_grad(padded, gd, geometry):
    """(OC, K) in (kh, kw, C) order: Σ over images and positions of g ⊗ window, the windows
    read from the NCHW padded image `padded` in place (conv_weight_matmul)."""
    n, out_channels, oh, ow = gd.shape
    (kh, kw), (dh, dw) = geometry.kernel, geometry.dilation
    c = padded.shape[1]
    s_n, s_c, s_h, _ = padded.strides
    gd = gd.compact()
    grad = NDArray.empty((out_channels, kh * kw * c), gd.dtype, gd.device)
    gd.backend.conv_weight_matmul(padded.buffer, gd.buffer, grad.buffer, n, out_channels,
                                  kh * kw * c, s_n, padded.offset, (kh, kw, c),
                                  (dh * s_h, dw, s_c), out_channels * oh * ow, gd.offset, oh,
                                  s_h, ow)
    return grad


def _direct_input_grad_ok(gd, geometry):
    """The input gradient as a direct product (above): stride 1 and padding at most the
    dilated kernel's reach (the gradient's padding d·(k - 1) - p is not negative)."""
    return (_direct_ok(gd, geometry) and
            all(p <= d * (k - 1) for p, d, k in
                zip(geometry.padding, geometry.dilation, geometry.kernel)))


def _direct_input_grad(gd, wd, geometry):
    """(N, C, H, W), compact: g (N, OC, OH, OW) padded by d·(k - 1) - p, convolved with
    w2[c, (i', j', oc)] = w[oc, (kh-1-i', kw-1-j', c)] (a "full" correlation)."""
    (kh, kw), c = geometry.kernel, wd.shape[1] // math.prod(geometry.kernel)
    out_channels = wd.shape[0]
    w2 = wd._view((c, kh, kw, out_channels), (1, -kw * c, -c, kh * kw * c),
                  wd.offset + (kh - 1) * kw * c + (kw - 1) * c).copy() \
        .reshape((c, kh * kw * out_channels))
    full = window_geometry(geometry.blocks, geometry.kernel, geometry.dilation,
                           tuple(d * (k - 1) - p for d, k, p in
                                 zip(geometry.dilation, geometry.kernel, geometry.padding)),
                           (1, 1))
    return _direct_product(gd, w2, full)


# ---- shifted rows: the GEMM reads overlapping rows of a kh-deep copy -----------------------------
# A 2-D convolution without horizontal dilation needs no im2col: copy the padded image once per
# kernel row i, stacked innermost, tmp[n, oh, x, i, c] = padded[n, c, oh·sh + i, x]. Then the
# window of output (oh, ow), over (j, i, c), is the contiguous run of kw·kh·C values starting at
# row (n, oh, ow·sw) of tmp: GEMM rows that overlap, read in place through a row stride of
# sw·kh·C (the GEMM reads any strides). The copy is kh/sh times the image where im2col's rows are
# kh·kw/(sh·sw) times it (81 for a 9x9 kernel). Rows run over every x of a padded row, the width
# rounded up to a multiple of sw, so a product row (n, oh, q) for q ≥ OW is a discarded "wide"
# output (at most (kw - sw)/sw extra per output row); a slack of zeros after tmp keeps the last
# rows' reads inside the buffer.
_ShiftedRows = namedtuple("_ShiftedRows", "buffer per_image row_stride k image_stride wide")


def _shifted_ok(geometry, channels):
    """Does the shifted-rows product apply: 2-D (1-D runs as 2-D), no horizontal dilation or
    stride (a strided conv's im2col rows are kh·kw/4 of the image or less: conv(16→32, 3x3,
    stride 2) on 34x34 ran 1.3x slower through shifted rows, measured),
    windows wider than DIRECT_NCHW_MAX_K (tiny ones cost little either way: im2col's per-image
    product into NCHW, with fewer steps, wins there; measured), and at most 1.5 wide rows per
    output position (each costs a K-wide row packed; im2col's rows cost 2: built, then packed)?"""
    if len(geometry.kernel) != 2 or geometry.dilation[1] != 1 or geometry.stride[1] != 1:
        return False
    # the wide rows per output row, against the output width: 4 for a 4x4 kernel over 4x4
    wide = -(-(geometry.size[1] + 2 * geometry.padding[1]) // geometry.stride[1])
    return (channels * math.prod(geometry.kernel) > DIRECT_NCHW_MAX_K
            and 2 * wide <= 3 * geometry.blocks[1])


def _shifted_rows(xd, geometry):
    """x (N, C, H, W) as shifted rows for `geometry` (see above): one copy of the padded image
    per kernel row, or per output row's kh input rows; padding is written as zeros."""
    n, c, h, w = xd.shape
    (kh, kw), (sh, sw) = geometry.kernel, geometry.stride
    (ph, pw), dh = geometry.padding, geometry.dilation[0]
    oh = geometry.blocks[0]
    wp = -(-(w + 2 * pw) // sw) * sw
    # The padded image channels-last (one transposing copy), so that tmp's copy below moves
    # runs of C values: 3 gathers across channel planes for a 3x3 kernel cost more (measured).
    # One channel has no order to change.
    order = _memory_order(xd) if c == 1 else _channels_last(4)
    if ph or pw or wp != w or order != _memory_order(xd):
        padded = _new_in_order((n, c, h + 2 * ph, wp), order, 0, xd.dtype, xd.device)
        source = _memory_order(xd)
        _copy_into(padded[:, :, ph:ph + h, pw:pw + w].permute(source), xd.permute(source))
    else:
        padded = xd
    s_n, s_c, s_h, s_w = padded.strides
    shape = (n, oh, wp, kh, c)
    total = math.prod(shape)
    slack = max(0, kw - sw) * kh * c
    tmp = NDArray.empty((total + slack,), xd.dtype, xd.device)
    if total:
        xd.backend.compact(padded.buffer, tmp.buffer, shape,
                           (s_n, sh * s_h, s_w, dh * s_h, s_c), padded.offset)
    if slack:
        tmp._view((slack,), (1,), total).assign(0)
    q = wp // sw
    return _ShiftedRows(tmp, oh * q, sw * kh * c, kw * kh * c, oh * wp * kh * c, q)


def _to_shifted_order(wd, kernel):
    """A (OC, kh·kw·C) weight in (kh, kw, C) order as (OC, kw·kh·C) in shifted rows' (kw, kh, C)
    order, compact."""
    out_channels, k = wd.shape
    kh, kw = kernel
    return wd.reshape((out_channels, kh, kw, k // (kh * kw))).permute((0, 2, 1, 3)).copy() \
        .reshape((out_channels, k))


def _from_shifted_order(wd, kernel):
    """The inverse of _to_shifted_order."""
    out_channels, k = wd.shape
    kh, kw = kernel
    return wd.reshape((out_channels, kw, kh, k // (kh * kw))).permute((0, 2, 1, 3)).copy() \
        .reshape((out_channels, k))


def _shifted_product(rows, w_shifted, n, blocks):
    """(N, OC, OH, OW) = windows · wᵀ, w (OC, K) in (kw, kh, C) order, as a view dropping the
    wide columns. Narrow windows (K ≤ OC: a first layer) are multiplied per image straight into
    NCHW, w @ rows[n]ᵀ; wider ones as one tall GEMM over every wide row of the batch, rows as
    the left operand (packed as they lie, in runs of K), giving NHWC (the bias add makes it
    contiguous). Read as the right operand, wide rows would be gathered across rows into each
    packed panel, and transposing NHWC costs more than the GEMM for narrow ones (measured)."""
    out_channels = w_shifted.shape[0]
    oh, ow = blocks
    backend = w_shifted.backend
    if rows.k <= out_channels:
        out = NDArray.empty((n, out_channels, oh, rows.wide), w_shifted.dtype, w_shifted.device)
        backend.matmul(w_shifted.buffer, rows.buffer.buffer, out.buffer, n, out_channels,
                       rows.per_image, rows.k, (0, rows.k, 1), w_shifted.offset,
                       (rows.image_stride, 1, rows.row_stride), 0)
        return out if ow == rows.wide else out[:, :, :, :ow]
    out = NDArray.empty((n, oh, rows.wide, out_channels), w_shifted.dtype, w_shifted.device)
    backend.matmul(rows.buffer.buffer, w_shifted.buffer, out.buffer, 1, n * rows.per_image,
                   out_channels, rows.k, (0, rows.row_stride, 1), 0, (0, 1, rows.k),
                   w_shifted.offset)
    return (out if ow == rows.wide else out[:, :, :ow]).permute((0, 3, 1, 2))


def _columns_first_ok(geometry, channels, out_channels):
    """The forward as columns first (below) pays for few output channels against many input
    ones (conv(32→3, 9x9): its columns are OC·kh·kw = 243 values per pixel where the windows
    are 2,592 wide), stride 1, no dilation, 2-D, and columns over at most twice as many padded
    pixels as there are outputs (a 4x4 kernel over 4x4 has 16 times)."""
    padded = math.prod(s + 2 * p for s, p in zip(geometry.size, geometry.padding))
    return (len(geometry.kernel) == 2 and geometry.stride == (1, 1)
            and geometry.dilation == (1, 1) and 4 * out_channels <= channels
            and padded <= 2 * math.prod(geometry.blocks))


def _columns_first_product(xd, wd, geometry):
    """(N, OC, OH, OW) for few output channels: the GEMM first, columns (N, OC·kh·kw, Hp·Wp) =
    w (OC·kh·kw, C) @ x padded (C, Hp·Wp) per image, then each output sums its kh·kw shifted
    columns: the window view of the columns compacted (runs of OW) and reduced over the
    kernel axes. Nothing kh·kw·C wide is built or packed. w is (OC, K) in (kh, kw, C) order."""
    n, c = xd.shape[:2]
    out_channels = wd.shape[0]
    (kh, kw), (oh, ow) = geometry.kernel, geometry.blocks
    padded = _pad_zeros(xd.compact(), geometry.padding, None)
    hp, wp = padded.shape[2:]
    plane = hp * wp
    cols = NDArray.empty((n, out_channels * kh * kw, plane), xd.dtype, xd.device)
    xd.backend.matmul(wd.buffer, padded.buffer, cols.buffer, n, out_channels * kh * kw, plane, c,
                      (0, c, 1), wd.offset, (c * plane, plane, 1), padded.offset)
    windows = cols._view((n, out_channels, kh, kw, oh, ow),
                         (out_channels * kh * kw * plane, kh * kw * plane, kw * plane + wp,
                          plane + 1, wp, 1), 0)
    return windows.compact().reduce(ReduceOp.SUM, (2, 3))


def _shifted_weight_grad(rows, gd, kernel):
    """Σ over images and positions of g ⊗ window: (OC, kh·kw·C) in (kh, kw, C) order. g is copied
    into zeros of the wide layout, so that the discarded rows contribute nothing; as
    (OC, N, OH, wide) for one GEMM over all rows when g is the smaller of g and the per-image
    products, else in g's own order (no transposing copy) for one product per image, summed."""
    n, out_channels, oh, ow = gd.shape
    k, per_image = rows.k, rows.per_image
    one_product = oh * rows.wide < k
    if one_product or ow != rows.wide:
        order = (1, 0, 2, 3) if one_product else (0, 1, 2, 3)
        g_wide = _new_in_order((n, out_channels, oh, rows.wide), order, 0, gd.dtype, gd.device)
        g_wide[:, :, :, :ow].assign(gd)
    else:
        g_wide = gd
    backend = gd.backend
    if one_product:
        count = n * per_image
        grad = NDArray.empty((out_channels, k), gd.dtype, gd.device)
        backend.matmul(g_wide.buffer, rows.buffer.buffer, grad.buffer, 1, out_channels, k, count,
                       (0, count, 1), g_wide.offset, (0, rows.row_stride, 1), 0)
    else:
        parts = NDArray.empty((n, out_channels, k), gd.dtype, gd.device)
        backend.matmul(g_wide.buffer, rows.buffer.buffer, parts.buffer, n, out_channels, k,
                       per_image, (out_channels * per_image, per_image, 1), g_wide.offset,
                       (rows.image_stride, rows.row_stride, 1), 0)
        grad = parts.reduce(ReduceOp.SUM, (0,))
    return _from_shifted_order(grad, kernel)


def _shifted_input_grad_ok(geometry, out_channels, k):
    """The input gradient as a stride-1 convolution of g (below) needs stride 1, no dilation and
    padding below the kernel; it packs rows kh·kw·OC wide where im2col's col2im writes and adds
    kh·kw·C-wide ones, so it pays with no more output than input channels (conv(32→3, 9x9):
    1.3 vs 42 ms; conv(1→64, 5x5): 62 vs 3 ms)."""
    return (len(geometry.kernel) == 2 and out_channels * math.prod(geometry.kernel) <= k
            and geometry.stride == (1, 1) and geometry.dilation == (1, 1)
            and all(p < size for p, size in zip(geometry.padding, geometry.kernel))
            # at most 1.5 wide rows per position, as for the forward (_shifted_ok)
            and 2 * (geometry.blocks[1] + 2 * (geometry.kernel[1] - 1 - geometry.padding[1]))
            <= 3 * geometry.size[1])


def _shifted_input_grad(gd, wd, geometry):
    """The input gradient of a stride-1 convolution: g padded by k - 1 - p, convolved with the
    weight flipped in space and with its channel axes swapped (a "full" correlation), through
    shifted rows: (N, C, H, W), compact."""
    (kh, kw), c = geometry.kernel, wd.shape[1] // math.prod(geometry.kernel)
    out_channels = wd.shape[0]
    flip = window_geometry(geometry.blocks, geometry.kernel, (1, 1),
                           tuple(k - 1 - p for k, p in zip(geometry.kernel, geometry.padding)),
                           (1, 1))
    # w2[c, j', i', oc] = w[oc, kh-1-i', kw-1-j', c]: shifted order (kw, kh, OC) for C outputs
    w2 = wd._view((c, kw, kh, out_channels), (1, -c, -kw * c, kh * kw * c),
                  wd.offset + (kh - 1) * kw * c + (kw - 1) * c).copy() \
        .reshape((c, kw * kh * out_channels))
    rows = _shifted_rows(gd, flip)
    return _shifted_product(rows, w2, gd.shape[0], flip.blocks).compact()


def _im2col_backward(gd, wd, x_shape, geometry, padded, needs):
    """ConvProductBackward's gradients through im2col rows, chunk by chunk like the forward: the
    weight gradient sums gᵀ·rows over chunks (per image, reading g as it is, when the input
    needs no gradient: a first layer), from `padded` (x padded channels-last); the input
    gradient is g·w, folded (col2im, strided_add) into a channels-last padded buffer in runs
    of kw·C values. NDArrays (None where not needed)."""
    out_channels, k = wd.shape
    positions = math.prod(geometry.blocks)
    windows = (None if not needs[1] else padded.rows if isinstance(padded, _Im2colRows) else
               _row_windows(padded, geometry))
    grad_padded = grad_windows = None
    if needs[0]:
        padded_size = tuple(s + 2 * p for s, p in zip(geometry.size, geometry.padding))
        grad_padded = _new_in_order(x_shape[:2] + padded_size, _channels_last(len(x_shape)), 0,
                                    gd.dtype, gd.device)
        grad_windows = _row_windows(grad_padded, geometry)
    grad_w = None
    chunks = _chunks(gd, positions, k)
    n = gd.shape[0]
    if needs[0] or positions < PER_IMAGE_MIN_POSITIONS:
        # g as rows (N·OH·OW, OC), one transposing copy for the whole batch, for g·w; the
        # weight gradient reads it transposed, gᵀ·rows, (OC, K) as it is wanted (rowsᵀ·g read
        # the rows' columns 2 KiB apart in place and was 5-10% slower, then needed a
        # transposing copy: measured)
        g_rows = gd.reshape((n, out_channels, positions)).permute((0, 2, 1)).compact()
    else:
        g_rows = None           # the weight gradient alone, each image's product deep enough
    # buffers every chunk reuses: its rebuilt rows and its g·w columns
    rows_scratch = (_scratch(chunks, positions * k, gd)
                    if needs[1] and not isinstance(padded, _Im2colRows) else None)
    cols_scratch = _scratch(chunks, positions * k, gd) if needs[0] else None
    for i0, i1 in chunks:
        count = i1 - i0
        if needs[1]:
            rows = (_images(windows, i0, i1) if rows_scratch is None else
                    _chunk_rows(windows, i0, i1, rows_scratch)).reshape((count * positions, k))
            grad_w = (_add_weight_grad_by_image(gd, rows, i0, i1, k, grad_w) if g_rows is None
                      else _add_weight_grad_part(g_rows, (0, 1, out_channels),
                                                 i0 * positions * out_channels, out_channels,
                                                 rows, count * positions, k, grad_w))
        if needs[0]:
            target = _images(grad_windows, i0, i1)
            size = count * positions * k
            gd.backend.matmul(g_rows.buffer, wd.buffer, cols_scratch.buffer[:size], 1,
                              count * positions, k, out_channels, (0, out_channels, 1),
                              i0 * positions * out_channels, (0, k, 1), wd.offset)
            gd.backend.strided_add(cols_scratch.buffer[:size], grad_padded.buffer, target.shape,
                                   target.strides, target.offset)
    grad_x = None
    if needs[0]:
        grad_x = _interior(grad_padded, geometry.padding, x_shape).compact()
    return grad_x, grad_w


def _padded_channels_last(xd, geometry):
    """x padded for im2col rows, channels-last (a one-channel image is already: no copy without
    padding)."""
    return _pad_zeros(xd, geometry.padding,
                      _channels_last(xd.ndim) if xd.shape[1] > 1 else None)


FILL_BELOW_WIDTH = 16     # see _pad_zeros


def _pad_zeros(xd, padding, order):
    """_pad(xd, padding, 0, order) with one zero fill and one strided write for a compact xd
    (the per-call cost of every conv: _pad's general view handling cost more than its kernels
    on dcgan's small images; measured) or a broadcast scalar (the gradient of a sum, written
    as a fill: _pad compacted it, into a buffer it had zero-filled, 0.33 → 0.10 ms for
    ConvTranspose2d(32→16, 4, 2, 1)'s 32 32x32 outputs; measured), else _pad itself."""
    scalar = xd.size > 0 and not any(xd.strides)
    if not (xd.is_compact() or scalar):
        return _pad(xd, padding, 0, order)
    ident = tuple(range(xd.ndim))
    order = ident if order is None else order
    if not any(padding) and order == ident:
        return xd
    shape = xd.shape[:2] + tuple(s + 2 * p for s, p in zip(xd.shape[2:], padding))
    memory_shape = tuple(shape[d] for d in order)
    # With the last spatial axis innermost (NCHW), its border is runs of p values, one pair per
    # row: on rows shorter than FILL_BELOW_WIDTH the slabs cost more than zeroing the whole
    # buffer in one streaming fill (the 14x14 maps of conv(16→32, 3, padding 1) on a 128-image
    # batch: 0.40 vs 0.29 ms; 28x28 maps: 34 vs 38 µs the other way; measured). Channels-last
    # borders are runs of p·C values: slabs are cheaper there.
    fill = order[-1] == xd.ndim - 1 and 0 < padding[-1] and xd.shape[-1] < FILL_BELOW_WIDTH
    buffer = (NDArray.full(memory_shape, 0, xd.dtype, xd.device) if fill else
              NDArray.empty(memory_shape, xd.dtype, xd.device))
    out = buffer.permute(tuple(order.index(d) for d in range(len(order))))
    if xd.size:
        interior = _interior(out, padding, xd.shape)
        source = xd.buffer[xd.offset:xd.offset + 1] if scalar else xd.flat()
        xd.backend.strided_set(source, out.buffer, xd.shape, interior.strides,
                               interior.offset)
    if not fill:
        _zero_border(out, padding)
    return out


def _interior(padded, padding, shape):
    """The (N, C, *shape) interior of a padded (N, C, *padded) array, the padding cropped off,
    as a view made directly (no indexing per call)."""
    offset = padded.offset + sum(p * stride for p, stride in zip(padding, padded.strides[2:]))
    return padded._view(shape, padded.strides, offset)


def _zero_border(out, padding):
    """Zeros in the padding of `out` (N, C, *padded) only, the two slabs of a padded axis as
    one view (the interior is written by the caller): a fill of the whole buffer wrote it
    twice (dcgan's padded copies: 14 fills of 0.4 MB a step; measured)."""
    zero = scalar_array(0, out.dtype, out.device)
    for axis, p in enumerate(padding, start=2):
        if p == 0 or out.size == 0:
            continue
        # (…, which slab, p, …): the second slab starts size - p along the axis
        stride = out.strides[axis]
        slabs = out.shape[:axis] + (2, p) + out.shape[axis + 1:]
        strides = out.strides[:axis] + ((out.shape[axis] - p) * stride, stride) + \
            out.strides[axis + 1:]
        out.backend.strided_set(zero.buffer, out.buffer, slabs, strides, out.offset)


def _weight_grad_source(xd, geometry, out_channels):
    """What ConvProductBackward builds the weight gradient from: shifted rows, or the
    channels-last padded input for im2col rows. Shifted rows pay for a copy of g into their
    wide layout and for packing K-wide rows, im2col for building them: with more output
    channels than K (a first layer: conv(1→64, 5x5) on 28x28, 2.6 vs 1.7 ms) im2col is cheaper."""
    if _shifted_ok(geometry, xd.shape[1]) and xd.shape[1] * math.prod(geometry.kernel) > \
            out_channels:
        return _shifted_rows(xd, geometry)
    return _padded_channels_last(xd, geometry)


def _conv_product(xd, wd, geometry, compact, keep, gd=None):
    """ConvProduct's result (an NDArray) and, when `keep`, the source its weight gradient is
    built from (see ConvProduct; None otherwise): the forward and a backward that convolves an
    incoming gradient and then needs the weight gradient from the same input share it. Given
    the output gradient `gd` as well, the im2col route returns that weight gradient itself
    (_WeightGrad), both products made from each chunk's rows at once."""
    if _columns_first_ok(geometry, xd.shape[1], wd.shape[0]):
        source = _weight_grad_source(xd, geometry, wd.shape[0]) if keep else None
        return _columns_first_product(xd, wd, geometry), source
    if _direct_ok(xd, geometry):
        padded = _direct_padded(xd, geometry)
        # the weight gradient reads the same padded image
        return _direct_product(xd, wd, geometry, padded), _Direct(padded) if keep else None
    if _shifted_ok(geometry, xd.shape[1]):
        rows = _shifted_rows(xd, geometry)
        # what the weight gradient is built from (see _weight_grad_source)
        source = (None if not keep else rows if wd.shape[1] > wd.shape[0] else
                  _padded_channels_last(xd, geometry))
        out = _shifted_product(rows, _to_shifted_order(wd, geometry.kernel), xd.shape[0],
                               geometry.blocks)
        return out.compact() if compact else out, source
    if keep and gd is not None:
        return _im2col_product_and_weight_grad(xd, wd, gd, geometry, compact)
    padded = _padded_channels_last(xd, geometry)
    # the rows are rebuilt from it for the weight gradient only
    source = padded if keep else None
    windows = _row_windows(padded, geometry)
    positions, k = math.prod(geometry.blocks), wd.shape[1]
    chunks = _chunks(xd, positions, k)
    scratch = _scratch(chunks, positions * k, xd)
    out = _rows_product_out(xd, wd, geometry)
    for i0, i1 in chunks:
        rows = _chunk_rows(windows, i0, i1, scratch)  # (B, OH, OW, kh, kw, C), compact
        if len(chunks) == 1 and keep:
            # the whole batch's rows fit one chunk: the weight gradient reuses them
            source = _Im2colRows(rows)
        _rows_product(rows, wd, out, i0, i1, positions)
    return _rows_product_result(out, k, compact), source


def _rows_product_out(xd, wd, geometry):
    """The buffer im2col's products write: NCHW for narrow windows (K ≤ DIRECT_NCHW_MAX_K,
    formed per image), else NHWC (one tall product per chunk)."""
    n, out_channels = xd.shape[0], wd.shape[0]
    return NDArray.empty((n, out_channels) + geometry.blocks if wd.shape[1] <= DIRECT_NCHW_MAX_K
                         else (n,) + geometry.blocks + (out_channels,), xd.dtype, xd.device)


def _rows_product(rows, wd, out, i0, i1, positions):
    """Images i0 to i1 - 1 of the product, from their compact rows (B, OH, OW, kh, kw, C)."""
    out_channels, k = wd.shape
    offset = i0 * positions * out_channels
    if k <= DIRECT_NCHW_MAX_K:      # per image: (OC, K) @ (K, OH·OW)
        _matmul_into(wd, rows, out, offset, i1 - i0, out_channels, positions, k,
                     (0, k, 1), wd.offset, (positions * k, 1, k), 0)
    else:                           # one tall product: ((i1 - i0)·OH·OW, K) @ (K, OC)
        _matmul_into(rows, wd, out, offset, 1, (i1 - i0) * positions, out_channels, k,
                     (0, k, 1), 0, (0, 1, k), wd.offset)


def _rows_product_result(out, k, compact):
    """(N, OC, *blocks) from _rows_product_out's buffer for windows k wide: NCHW as it is, or
    the NCHW view of NHWC (compacted when `compact`)."""
    if k <= DIRECT_NCHW_MAX_K:
        return out
    channels_first = (0, out.ndim - 1) + tuple(range(1, out.ndim - 1))
    return out.permute(channels_first).compact() if compact else out.permute(channels_first)


def _im2col_product_and_weight_grad(xd, wd, gd, geometry, compact):
    """The im2col product (as _conv_product's) and, as the source, the finished weight
    gradient Σ gᵀ·rows for the output gradient g (N, OC, *blocks), compact: a transposed
    convolution's backward wants both. Each chunk's rows, built once, serve the two products
    while they are in cache (built once per product, in two passes, they were the largest cost
    after the GEMMs: ConvTranspose2d(32→16, 4, 2, 1) on 32 16x16 images, backward 3.7 → 2.8 ms
    at one thread; measured)."""
    out_channels, k = wd.shape
    positions = math.prod(geometry.blocks)
    windows = _row_windows(_padded_channels_last(xd, geometry), geometry)
    chunks = _chunks(xd, positions, k)
    scratch = _scratch(chunks, positions * k, xd)
    out = _rows_product_out(xd, wd, geometry)
    grad_w = NDArray.full((out_channels, k), 0, xd.dtype, xd.device) if not chunks else None
    for i0, i1 in chunks:
        rows = _chunk_rows(windows, i0, i1, scratch)
        _rows_product(rows, wd, out, i0, i1, positions)
        grad_w = _add_weight_grad_by_image(gd, rows, i0, i1, k, grad_w)
    return _rows_product_result(out, k, compact), _WeightGrad(grad_w)


def _add_weight_grad_by_image(gd, rows, i0, i1, k, total):
    """total + Σ over images i0 to i1 - 1 of g[n] (OC, OH·OW) · rows[n] (OH·OW, K), g (N, OC,
    *blocks) compact and read as it is: for one image one GEMM, the running sum its bias (see
    _add_weight_grad_part); for more a batched GEMM, summed over the images, then added (a
    copy of the chunk's g by channel, for one deep GEMM, cost more than it saved: conv(1→32,
    4x4, stride 2) on 128 MNIST images, backward 1.02 → 1.10 ms; measured)."""
    count, out_channels = i1 - i0, gd.shape[1]
    positions = math.prod(gd.shape[2:])
    if count == 1:
        return _add_weight_grad_part(gd, (0, positions, 1), gd.offset + i0 * out_channels *
                                     positions, out_channels, rows, positions, k, total)
    g_chunk = _images(gd, i0, i1).reshape((count, out_channels, positions))
    part = g_chunk.matmul(rows.reshape((count, positions, k))).reduce(ReduceOp.SUM, (0,))
    if total is not None:
        gd.backend.binary(BinaryOp.ADD, part.buffer, total.buffer, part.buffer, part.shape,
                          part.strides, part.offset, total.strides, total.offset)
    return part


def _add_weight_grad_part(a, a_strides, a_offset, out_channels, rows, depth, k, total):
    """total + a·rows, (OC, K), for a chunk's compact rows (depth, K) and a (OC, depth) read
    through a_strides: the running sum is the GEMM's bias, added as each block is stored,
    rather than by a pass of its own (total None: the first chunk)."""
    part = NDArray.empty((out_channels, k), rows.dtype, rows.device)
    bias = {} if total is None else {"bias": total.buffer, "bias_offset": total.offset,
                                     "bias_strides": (k, 1)}
    rows.backend.matmul(a.buffer, rows.buffer, part.buffer, 1, out_channels, k, depth,
                        a_strides, a_offset, (0, k, 1), rows.offset, **bias)
    return part


class ConvProduct(KernelFunction):
    node_name = "ConvolutionBackward0"
    """conv2d without bias for groups = 1: x (N, C, H, W) and w (OC, kh·kw·C) (the weight in
    (kh, kw, C) order) give (N, OC, OH, OW) (any number of spatial axes alike: conv3d's weight
    in (kd, kh, kw, C) order). Through shifted rows where _shifted_ok, else a chunk of images
    at a time: the windows of a channels-last padded copy of x are compacted into GEMM rows
    (N·OH·OW, kh·kw·C), contiguous runs of kw·C values, and multiplied by wᵀ. The result is
    the NCHW view of an NHWC product (a bias add makes it contiguous), compacted when
    `compact` (no bias add follows; and in the backward, where the next node's elementwise
    kernels, a ReLU's backward, read the view 10x slower than a transposing copy), or NCHW
    itself for narrow windows. ctx.padded keeps what the weight gradient is built from."""

    @staticmethod
    def forward(ctx, x, w, geometry, compact):
        ctx.geometry = geometry
        ctx.save_for_backward(x, w)
        out, ctx.padded = _conv_product(x._data, w._data.compact(), geometry, compact,
                                        w.requires_grad)
        return wrap(out)

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return (*ConvProductBackward.apply(g, x, w, ctx.geometry, ctx.padded,
                                           tuple(ctx.needs_input_grad[:2])), None, None)


class ConvProductBackward(KernelFunction):
    node_name = "ConvolutionBackward0"      # what torch's conv_transpose records
    """ConvProduct's input and weight gradients from the output gradient g (N, OC, OH, OW) (and
    conv_transpose's result, as the input gradient). The weight gradient is built from
    `padded` (needed for it only): shifted rows of x (_shifted_weight_grad) or x padded
    channels-last (im2col rows, _im2col_backward). The input gradient is a stride-1
    convolution of g over shifted rows where _shifted_input_grad_ok, else g·w folded by
    col2im. Both are linear in g, and the input gradient in w and the weight gradient in x:
    the backward of this node is made of ConvProduct and this node again."""
    materialize_grads = False

    @staticmethod
    def forward(ctx, g, x, w, geometry, padded, needs):
        ctx.save_for_backward(g, x, w)
        ctx.geometry = geometry
        gd, wd = g._data.compact(), w._data.compact()
        grad_x = grad_w = None
        # the weight gradient from the rows the forward kept (shifted rows or a padded copy),
        # or already made along with a product of the same input
        shifted_w = needs[1] and isinstance(padded, (_ShiftedRows, _Direct, _WeightGrad))
        if shifted_w:
            grad_w = (padded.grad if isinstance(padded, _WeightGrad) else
                      _direct_weight_grad(padded.padded, gd, geometry)
                      if isinstance(padded, _Direct) else
                      _shifted_weight_grad(padded, gd, geometry.kernel))
        shifted_x = needs[0] and (_direct_input_grad_ok(gd, geometry) or
                                  _shifted_input_grad_ok(geometry, *wd.shape))
        if shifted_x:
            grad_x = (_direct_input_grad(gd, wd, geometry) if _direct_input_grad_ok(gd, geometry)
                      else _shifted_input_grad(gd, wd, geometry))
        rest = (needs[0] and not shifted_x, needs[1] and not shifted_w)
        if any(rest):
            im2col_x, im2col_w = _im2col_backward(gd, wd, x._data.shape, geometry, padded, rest)
            grad_x = im2col_x if rest[0] else grad_x
            grad_w = im2col_w if rest[1] else grad_w
        return (wrap(grad_x) if grad_x is not None else None,
                wrap(grad_w.compact()) if grad_w is not None else None)

    @staticmethod
    def backward(ctx, gg_x, gg_w):
        g, x, w = ctx.saved_tensors
        geometry = ctx.geometry
        grad_g = source = None
        if ctx.needs_input_grad[0] and gg_x is not None:
            if ctx.needs_input_grad[2] and not is_grad_enabled():
                # the weight gradient below is built from gg_x too: one padded copy (or one
                # set of im2col rows) of it serves both (a transposed convolution's backward;
                # without a graph to record, the product needs no node of its own)
                out, source = _conv_product(gg_x._data, w._data.compact(), geometry, True,
                                            True, g._data.compact())
                grad_g = wrap(out)
            else:
                grad_g = ConvProduct.apply(gg_x, w, geometry, True)
        if ctx.needs_input_grad[0] and gg_w is not None:
            term = ConvProduct.apply(x, gg_w, geometry, True)
            grad_g = term if grad_g is None else grad_g + term
        # The input gradient uses w, the weight gradient x: swapping in the incoming gradients
        # gives their derivatives (each is linear in the one it uses).
        needs = (ctx.needs_input_grad[1] and gg_w is not None,
                 ctx.needs_input_grad[2] and gg_x is not None)
        grad_x = grad_w = None
        if any(needs):
            gx = gg_x if gg_x is not None else x
            gw = gg_w if gg_w is not None else w
            padded = (source if source is not None else
                      _weight_grad_source(gx._data, geometry, gw.shape[0]) if needs[1] else None)
            grad_x, grad_w = ConvProductBackward.apply(g, gx, gw, geometry, padded, needs)
        return grad_g, grad_x, grad_w, None, None, None


# ---- convolution ------------------------------------------------------------------------------
class WindowOrder(KernelFunction):
    """A weight (A, B, *k) as the products take it: (A, kh·kw·B) in (*k, B) order, compact (one
    copy). Its gradient comes back compact in the weight's own layout (FromWindowOrder), as
    torch's does, so that an optimizer's fused update takes it (a permuted view of the (A, K)
    gradient sent Adam to its op-by-op rule)."""

    @staticmethod
    def forward(ctx, weight):
        wd = weight._data
        ctx.shape = wd.shape
        order = (0,) + tuple(range(2, wd.ndim)) + (1,)
        return wrap(wd.permute(order).compact().reshape((wd.shape[0], -1)))

    @staticmethod
    def backward(ctx, g):
        return FromWindowOrder.apply(g, ctx.shape)


class FromWindowOrder(KernelFunction):
    """The inverse of WindowOrder: g (A, K) in (*k, B) order as a compact (A, B, *k)."""

    @staticmethod
    def forward(ctx, g, shape):
        d = len(shape)
        windowed = g._data.compact().reshape((shape[0],) + tuple(shape[2:]) + (shape[1],))
        return wrap(windowed.permute((0, d - 1) + tuple(range(1, d - 1))).compact())

    @staticmethod
    def backward(ctx, gg):
        return WindowOrder.apply(gg), None


def _pad_after(x, extra):
    """x with extra[i] zeros appended after spatial axis i: the odd remainder of
    padding='same', which torch puts on the right (the windows pad both sides alike)."""
    for axis, amount in enumerate(extra, start=2):
        if amount:
            shape = list(x.shape)
            shape[axis] = amount
            x = cat([x, zeros(*shape, dtype=x.dtype, device=x.device)], dim=axis)
    return x


def _conv_nd(x, weight, bias, stride, pads, dilation, groups, relu=False, pool=None):
    """The (N, C, *spatial) convolution (1, 2 or 3 spatial axes): im2col view, one compact,
    GEMM(s); grouped convolutions use one batched GEMM per group with the group's weight
    broadcast over the batch. With relu, the bias add and the relu are one pass (AddRelu);
    with pool as well, a max pool follows in the same node (see _add_bias)."""
    spatial = x.ndim - 2
    x = _pad_after(x, [right - left for left, right in pads])
    n, c = x.shape[:2]
    kernel = tuple(weight.shape[2:])
    out_channels = weight.shape[0]
    padding = tuple(left for left, _ in pads)
    geometry = window_geometry(tuple(x.shape[2:]), kernel, dilation, padding, stride)
    bias_shape = (1, out_channels) + (1,) * spatial
    if groups == 1:
        # GEMMs over the windows taken channels-innermost, a chunk of images at a time (see
        # ConvProduct); the weight is put in the same (kh, kw, C) order.
        w = WindowOrder.apply(weight)
        # compact NCHW unless a bias add follows (the add then reads the NHWC view in place)
        out = ConvProduct.apply(x, w, geometry, bias is None)
        return _add_bias(out, bias, bias_shape, relu, pool)
    cols = window_view(x, geometry)                                # (N, C, *kernel, *blocks)
    cols = cols.reshape(n, groups, (c // groups) * math.prod(kernel), math.prod(geometry.blocks))
    w = weight.reshape(groups, out_channels // groups, -1)
    # One batched GEMM per group, the group's weight broadcast over the batch (stride 0).
    per_group = [w[g] @ cols[:, g] for g in range(groups)]         # each (N, OC/G, L)
    return _add_bias(cat(per_group, dim=1).reshape((n, out_channels) + geometry.blocks), bias,
                     bias_shape, relu, pool)


def _add_bias(out, bias, bias_shape, relu, pool=None):
    """out + bias, then relu when asked, as one pass (a compact NCHW result either way: the add
    reads an NHWC product in place). With `pool` (a callable giving the PoolGeometry of a max
    pool over its argument, checking it as max_pool2d does), the max pool of that, as one node
    that keeps no full-size relu output (ReluMaxPool)."""
    if pool is not None:
        return relu_max_pool(out, None if bias is None else bias.reshape(bias_shape), pool(out))
    if bias is None:
        return out.relu() if relu else out.contiguous()
    return AddRelu.apply(out, bias.reshape(bias_shape)) if relu else out + bias.reshape(bias_shape)


def _conv(name, spatial, input, weight, bias, stride, padding, dilation, groups, relu=False,
          pool=None):
    """conv1d/2d/3d (then relu, and a max pool, when asked): checks, then the convolution of
    the batched input. A 1-D convolution is a 2-D one over a height-1 image (never pooled
    here)."""
    if input.dtype.is_complex:
        _conv_setup(name, spatial, input, weight, bias, stride, padding, dilation, groups)
        if relu or pool is not None:        # (the fused relu has no complex meaning)
            refuse_complex("clamp", input)
        return _complex_conv(lambda x, w: _conv(name, spatial, x, w, None, stride, padding,
                                                dilation, groups), input, weight, bias, spatial)
    x, unbatched, stride, pads, dilation, _ = _conv_setup(
        name, spatial, input, weight, bias, stride, padding, dilation, groups)
    if spatial == 1:
        if pool is not None:
            raise ValueError("conv_relu: a max pool follows 2-D and 3-D convolutions only")
        planar = _conv_nd(x.unsqueeze(2), weight.unsqueeze(2), bias, (1,) + stride,
                          [(0, 0)] + pads, (1,) + dilation, groups, relu)
        out = (_Conv1dReluOutput if relu else _Conv1dOutput).apply(planar, (2,))
    else:
        out = _conv_nd(x, weight, bias, stride, pads, dilation, groups, relu, pool)
    return out.squeeze(0) if unbatched else out


def _complex_conv(conv, input, weight, bias, spatial):
    """A complex convolution from four real ones of the parts (torch builds it from three):
    (a + bj) * (c + dj) = (a * c - b * d) + (a * d + b * c) j, then the bias; the gradients
    are the compositions'."""
    a, b, c, d = input.real, input.imag, weight.real, weight.imag
    out = _complex.complex(conv(a, c) - conv(b, d), conv(a, d) + conv(b, c))
    return out if bias is None else out + bias.reshape((-1,) + (1,) * spatial)


class _Conv1dOutput(Squeeze):
    """A 1-D convolution's output: the 2-D one's with its size-1 height dropped, the node named
    as torch's convolution (its graph ends in the convolution itself)."""
    node_name = "ConvolutionBackward0"


class _Conv1dReluOutput(Squeeze):
    """The same after a fused ReLU: torch's graph ends in the ReLU."""
    node_name = "ReluBackward0"


@autocast_op(LOWER)
def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """(N, C, L) * (OC, C/groups, k) → (N, OC, OL); (C, L) input is unbatched."""
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


@autocast_op(LOWER)
def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """(N, C, H, W) * (OC, C/groups, kh, kw) → (N, OC, OH, OW); (C, H, W) input is unbatched."""
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


@autocast_op(LOWER)
def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """(N, C, D, H, W) * (OC, C/groups, kd, kh, kw) → (N, OC, OD, OH, OW); (C, D, H, W) input
    is unbatched."""
    return _conv("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)


@autocast_op(LOWER)
def conv_relu(spatial, input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1,
              pool=None):
    """relu(conv{spatial}d(...)) with the bias add and the relu in one pass, then (2-D and
    3-D, with `pool`: a callable giving the PoolGeometry of a max pool over the relu's output,
    checked as max_pool2d checks it) that max pool in the same node. Not a torch function:
    nn.Sequential runs a convolution followed by a ReLU (and a MaxPool2d) through it."""
    return _conv(f"conv{spatial}d", spatial, input, weight, bias, stride, padding, dilation,
                 groups, relu=True, pool=pool)


_AXIS_NAMES = ("depth", "height", "width")


def _conv_transpose_nd(x, weight, stride, padding, output_padding, groups, dilation):
    """The adjoint of the (N, C, *spatial) convolution: a GEMM to columns, then fold (col2im)
    onto the output grid."""
    spatial = x.ndim - 2
    names = _AXIS_NAMES[-spatial:]
    if any(op >= s and op >= d for op, s, d in zip(output_padding, stride, dilation)):
        raise RuntimeError(
            "output padding must be smaller than either stride or dilation, but got " +
            " ".join(f"{label}_{axis}: {v}" for label, values in
                     (("output_padding", output_padding), ("stride", stride),
                      ("dilation", dilation)) for axis, v in zip(names, values)))
    n, c = x.shape[:2]
    size, kernel = tuple(x.shape[2:]), tuple(weight.shape[2:])
    out_size = tuple((i - 1) * s - 2 * p + d * (k - 1) + op + 1 for i, s, p, d, k, op in
                     zip(size, stride, padding, dilation, kernel, output_padding))
    if any(o < 1 for o in out_size):
        raise RuntimeError(f"Given input size per channel: ({' x '.join(map(str, size))}). "
                           "Calculated output size per channel: "
                           f"({' x '.join(map(str, out_size))}). Output size is too small")
    # One window per input position: with output_padding >= stride (allowed when it is below
    # the dilation) the output grid would hold more windows than the input has positions.
    geometry = window_geometry(out_size, kernel, dilation, padding, stride)._replace(blocks=size)
    if groups == 1:
        # the input gradient of the convolution out_size -> size with this weight: its node,
        # with x as the output gradient (its backward is then conv2d and the weight gradient)
        w = WindowOrder.apply(weight)
        # a zero broadcast to the output's shape, made as an NDArray (no Tensor ops per call)
        shape_of_out = wrap(scalar_array(0, x.dtype, x.device).expand(
            (n, weight.shape[1]) + out_size))
        return ConvProductBackward.apply(x, shape_of_out, w, geometry, None, (True, False))[0]
    in_per_group, out_per_group = c // groups, weight.shape[1]
    cols_in = x.reshape(n, groups, in_per_group, math.prod(size))
    wt = weight.reshape(groups, in_per_group, -1).mT                # (G, OCg·prod(k), Cg)
    cols = (wt @ cols_in).reshape(n, groups * out_per_group * math.prod(kernel), -1)
    return fold_columns(cols, geometry)


def _conv_transpose(name, spatial, input, weight, bias, stride, padding, output_padding, groups,
                    dilation):
    """conv_transpose1d/2d/3d: checks, the transposed convolution, the bias. A 1-D one is a
    2-D one over a height-1 image (torch's messages speak of its height, too)."""
    x, unbatched, stride, pads, dilation, output_padding = _conv_setup(
        name, spatial, input, weight, bias, stride, padding, dilation, groups, True,
        output_padding)
    padding = tuple(left for left, _ in pads)
    if spatial == 1:
        out = _conv_transpose_nd(x.unsqueeze(2), weight.unsqueeze(2), (1,) + stride,
                                 (0,) + padding, (0,) + output_padding, groups,
                                 (1,) + dilation).squeeze(2)
    else:
        out = _conv_transpose_nd(x, weight, stride, padding, output_padding, groups, dilation)
    if bias is not None:
        out = out + bias.reshape((1, -1) + (1,) * spatial)
    return out.squeeze(0) if unbatched else out


@autocast_op(LOWER)
def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """(N, C, L) → (N, OC, OL), the adjoint of conv1d."""
    return _conv_transpose("conv_transpose1d", 1, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


@autocast_op(LOWER)
def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """(N, C, H, W) → (N, OC, OH, OW), the adjoint of conv2d."""
    return _conv_transpose("conv_transpose2d", 2, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


@autocast_op(LOWER)
def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """(N, C, D, H, W) → (N, OC, OD, OH, OW), the adjoint of conv3d."""
    return _conv_transpose("conv_transpose3d", 3, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)
