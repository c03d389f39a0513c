"""torch's factories beside the usual ones: frombuffer (a tensor over a Python buffer's memory)
and empty_permuted (an empty tensor laid out in memory in a given dim order)."""
import warnings

import numpy as np

from .. import dtypes
from ..backend import CPU, get_backend
from ..ndarray import NDArray
from ..tensor import Tensor, empty, from_numpy, strided, wrap

__all__ = ["empty_permuted", "frombuffer"]

_READ_ONLY = ("The given buffer is not writable, and PyTorch does not support non-writable "
              "tensors. This means you can write to the underlying (supposedly non-writable) "
              "buffer using the tensor. You may want to copy the buffer to protect its data or "
              "make it writable before converting it to a tensor. This type of warning will be "
              "suppressed for the rest of this program.")
_warned = {"read_only": False}


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """torch.frombuffer: a 1-D CPU tensor sharing the memory of an object that implements the
    buffer protocol (bytes, bytearray, array.array, mmap, ...): `count` elements of `dtype`
    from byte `offset` (-1: all that remain). Writes through the tensor change the buffer."""
    try:
        view = memoryview(buffer)
    except TypeError:
        raise ValueError("object does not implement Python buffer protocol.") from None
    dtypes.check_dtype_arg("frombuffer", dtype)
    length, size = view.nbytes, dtype.itemsize
    count = _checked_count(length, count, offset, size)
    if view.readonly and not _warned["read_only"]:
        _warned["read_only"] = True
        warnings.warn(_READ_ONLY, UserWarning, stacklevel=2)
    if dtype.is_complex:
        result = from_numpy(np.frombuffer(buffer, dtype.numpy_dtype, count, offset))
    else:   # the storage dtype is the buffer's (bool and bfloat16 have no numpy dtype of theirs)
        flat = np.frombuffer(buffer, dtype.storage, count, offset)
        result = wrap(NDArray(flat, (count,), (1,), 0, dtype, CPU, get_backend(CPU)))
    return result.requires_grad_(requires_grad) if requires_grad else result


def _checked_count(length, count, offset, size):
    """The element count frombuffer reads, after torch's checks (in torch's order)."""
    if length <= 0 or count == 0:
        raise ValueError(f"both buffer length ({length}) and count ({count}) must not be 0")
    if not 0 <= offset < length:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than "
                         f"buffer length ({length} bytes) minus 1")
    if count < 0 and (length - offset) % size:
        raise ValueError(f"buffer length ({length - offset} bytes) after offset ({offset} bytes) "
                         f"must be a multiple of element size ({size})")
    count = (length - offset) // size if count < 0 else count
    if offset + count * size > length:
        raise ValueError(f"requested buffer length ({count} * {size} bytes) after offset "
                         f"({offset} bytes) must not be greater than actual buffer length "
                         f"({length} bytes)")
    return count


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None,
                   requires_grad=False, pin_memory=False):
    """torch.empty_permuted: a tensor of `size` whose dims lie in memory in the order
    `physical_layout` (outermost first): empty(physical sizes).permute(back). Its values are
    zeros here (torch leaves the memory uninitialised)."""
    size, order = list(size), list(physical_layout)
    if len(size) != len(order):
        raise RuntimeError(f"Number of dimensions in size does not match the length of the "
                           f"physical_layout; i.e. len(size) = {len(size)} is not equal to "
                           f"len(physical_layout) = {len(order)}")
    for i, d in enumerate(order):
        if not 0 <= d < len(size):
            raise RuntimeError(f"Dimension out of range (expected to be between 0 and "
                               f"{len(size) - 1}, but got {d} at index {i}).  NB: negative dims "
                               f"not currently supported; file an issue if you want it.")
    if len(set(order)) != len(order):
        raise RuntimeError("Duplicate dim not allowed")
    if layout not in (None, strided):
        raise RuntimeError(f"empty_permuted: only the strided layout is supported, got {layout}")
    physical = empty(*[size[d] for d in order], dtype=dtype, device=device)
    result = physical.permute(*sorted(range(len(order)), key=order.__getitem__))
    if pin_memory:
        result = result.pin_memory()
    return result.requires_grad_(requires_grad) if requires_grad else result
