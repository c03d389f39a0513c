"""torch.nn.functional.pad: constant padding (negative amounts crop) and reflect, replicate and
circular padding (one separable gather of the padded axes, functions/grid.py). Here in the
functions layer, below nn, because stft pads its signal too; nn.functional publishes it.
"""
from ..ndarray import shape_str
from ..tensor import full
from .complex import complex as _complex
from .grid import grid_gather
from .joining import cat


_NON_CONSTANT_PADS = ("\nSupported combinations for non-constant padding:\n"
                      "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
                      "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
                      "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")


def pad(input, pad, mode="constant", value=None):
    """torch.nn.functional.pad: (left, right, top, bottom, …) pairs from the last axis back;
    negative amounts crop."""
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > input.ndim:
        raise RuntimeError(f"Padding length should be less than or equal to two times the input "
                           f"dimension but got padding length {len(pad)} and input of dimension "
                           f"{input.ndim}")
    if mode == "constant":
        result = input
        for axis_from_end in range(len(pad) // 2):
            dim = input.ndim - 1 - axis_from_end
            before, after = pad[2 * axis_from_end], pad[2 * axis_from_end + 1]
            result = _pad_axis(result, dim, before, after, 0.0 if value is None else value)
        return result
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    axes = len(pad) // 2
    if axes > 3 or input.ndim not in (axes + 1, axes + 2):
        raise NotImplementedError(f"Padding size {len(pad)} is not supported for {input.ndim}D "
                                  f"input tensor.{_NON_CONSTANT_PADS}")
    return _pad_by_index(input, pad, mode)


def _pad_axis(x, dim, before, after, value):
    if before < 0:
        x = x.narrow(dim, -before, x.shape[dim] + before)
        before = 0
    if after < 0:
        x = x.narrow(dim, 0, x.shape[dim] + after)
        after = 0
    if before == 0 and after == 0:
        return x
    parts = []
    for width in (before, after):
        shape = list(x.shape)
        shape[dim] = width
        parts.append(full(shape, value, dtype=x.dtype, device=x.device))
    return cat([parts[0], x, parts[1]], dim=dim)


def _pad_by_index(x, pad, mode):
    """reflect / replicate / circular padding: one separable gather of the padded axes."""
    axes = len(pad) // 2
    # Only a batch axis may be empty (ATen's check_valid_input).
    non_batch = x.shape[1:] if x.ndim == axes + 2 else x.shape
    if mode != "circular" and any(s == 0 for s in non_batch):
        raise RuntimeError(f"Expected {axes + 1}D or {axes + 2}D (batch mode) tensor with "
                           "possibly 0 batch size and other non-zero dimensions for input, but "
                           f"got: {shape_str(x.shape)}")
    tables = []
    for axis_from_end in range(axes):
        dim = x.ndim - 1 - axis_from_end
        before, after = pad[2 * axis_from_end], pad[2 * axis_from_end + 1]
        tables.insert(0, _pad_index(mode, x.shape[dim], before, after, dim, x.shape))
    if x.dtype.is_complex:      # the gather kernel moves real elements: each part gathered
        return _complex(grid_gather(x.real, tables), grid_gather(x.imag, tables))
    return grid_gather(x, tables)


def _pad_index(mode, size, before, after, dim, shape):
    """Source positions along one axis. reflect/replicate mirror about the input's edges (a
    negative amount crops the result); circular wraps within the cropped input, as torch."""
    if mode == "reflect":
        if before >= size or after >= size:
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding "
                               f"input dimension, but got: padding ({before}, {after}) at "
                               f"dimension {dim} of input {list(shape)}")
        return [abs(i) if i < 0 else (2 * (size - 1) - i if i >= size else i)
                for i in range(-before, size + after)]
    if mode == "replicate":
        return [min(max(i, 0), size - 1) for i in range(-before, size + after)]
    if before > size or after > size:
        raise RuntimeError("Padding value causes wrapping around more than once.")
    start, stop = max(-before, 0), size - max(-after, 0)
    kept = stop - start
    if kept <= 0:
        return []
    return [start + i % kept for i in range(-max(before, 0), kept + max(after, 0))]
