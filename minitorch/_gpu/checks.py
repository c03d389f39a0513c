"""Host-side argument checks of the GPU backend, worded as the CPU kernels word them (the same
exception types and messages), so that a bad call fails the same way on either device before any
kernel runs.
"""
import numpy as np

from . import launch as L

DTYPE_NAMES = {np.dtype(np.float32): "float32", np.dtype(np.float64): "float64",
               np.dtype(np.int64): "int64", np.dtype(np.uint8): "uint8",
               np.dtype(np.bool_): "uint8", np.dtype(np.int32): "int32",
               np.dtype(np.int16): "int16", np.dtype(np.int8): "int8",
               np.dtype(np.float16): "float16", np.dtype(np.uint16): "bfloat16"}
SHOWN = {"float32": "float32", "float64": "float64", "int64": "int64", "uint8": "bool",
         "int32": "int32", "int16": "int16", "int8": "int8", "float16": "float16",
         "bfloat16": "bfloat16"}


# ---------------------------------------------------------------------------------------------
# argument checks (the CPU backend's exception types and wording)

def dtype_name(buffer, label):
    name = DTYPE_NAMES.get(buffer.dtype)
    if name is None:
        raise TypeError(f"{label}: unsupported storage dtype {buffer.dtype}")
    if buffer.ndim != 1 or not buffer.flags.c_contiguous:
        raise ValueError(f"{label} must be a 1-D contiguous buffer, got shape {buffer.shape} and "
                         f"strides {buffer.strides}")
    return name


def same_dtype(a, b, a_name, b_name):
    name, other = dtype_name(a, a_name), dtype_name(b, b_name)
    if name != other:
        raise TypeError(f"{a_name} has dtype {a.dtype} but {b_name} has dtype {b.dtype}")
    return name


def dims(shape, strides):
    shape, strides = tuple(int(s) for s in shape), tuple(int(s) for s in strides)
    if len(shape) > 64:
        raise ValueError(f"minitorch supports at most 64 dimensions, got {len(shape)}")
    if len(strides) != len(shape):
        raise ValueError(f"shape {shape} and strides {strides} differ in length")
    if any(s < 0 for s in shape):
        raise ValueError(f"negative dimension in shape {shape}")
    return shape, strides


def strides(strides, nd):
    strides = tuple(int(s) for s in strides)
    if len(strides) != nd:
        raise ValueError(f"strides {strides} do not have {nd} entries")
    return strides


def numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def check_view(shape, strides, offset, length, name):
    """Every element of a non-empty view lies in [0, length) (IndexError, as on the CPU)."""
    if numel(shape) == 0:
        return
    lo, hi = L.view_extent(shape, strides, offset)
    if lo < 0 or hi >= length:
        raise IndexError(f"view (shape {shape}, strides {strides}, offset {offset}) reaches "
                         f"elements {lo}..{hi} of {name}, which has {length} elements")


def check_matmul_view(buf, name, offset, dims, strides):
    if 0 in dims:
        return
    lo, hi = L.view_extent(dims, strides, offset)
    if len(dims) == 4 and dims[0] == 1:     # one batch axis: the 3-D view the caller passed
        dims, strides = dims[1:], strides[1:]
    if lo < 0 or hi >= buf.size:
        raise ValueError(f"matmul: {name} view (shape {dims}, strides {strides}, offset "
                         f"{offset}) reaches outside its buffer of {buf.size} elements")


def check_length(buf, need, name):
    if buf.size < need:
        raise ValueError(f"{name} has {buf.size} elements but {need} are needed")


def check_sizes(*sizes):
    if any(s < 0 for s in sizes):
        raise ValueError("sizes must be non-negative, got " + ", ".join(str(s) for s in sizes))


# ---------------------------------------------------------------------------------------------
# factorisation checks (the CPU's minitorch/_cpu/factor.pyx wording)

def float_buffer(buffer, kernel, label):
    name = dtype_name(buffer, kernel)
    if name not in L.FLOAT_TYPES:
        raise TypeError(f"{kernel}: {label} must be float32 or float64, got {SHOWN[name]}")
    return name


def int64_buffer(buffer, kernel, label):
    if dtype_name(buffer, kernel) != "int64":
        raise TypeError(f"{kernel}: {label} must have dtype int64")


def factor_sizes(kernel, m, n):
    if m < 0 or n < 0:
        raise ValueError(f"{kernel}: sizes must be non-negative, got {m} and {n}")


def factor_count(kernel, label, have, need):
    if have != need:
        raise ValueError(f"{kernel}: {label} has {have} elements, {need} are needed")


def matrix_count(kernel, size, n):
    """How many n x n matrices `size` elements hold (0 when n is 0)."""
    if n == 0:
        factor_count(kernel, "a", size, 0)
        return 0
    if size % (n * n):
        raise ValueError(f"{kernel}: {size} elements are not {n}x{n} matrices")
    return size // (n * n)


# ---------------------------------------------------------------------------------------------
# spectral kernel checks (the CPU's minitorch/_cpu/spectral.pyx wording and order)

def spectral_buffers(kernel, a, outputs, labels, counts, info=None, batch=0):
    """The float dtype name of a after checking that the outputs share it, that every buffer
    has its count of elements and that info (when given) is int64 with one entry a matrix."""
    name = dtype_name(a, kernel)
    if name not in L.FLOAT_TYPES:
        raise TypeError(f"{kernel}: unsupported dtype {SHOWN[name]} (expected float32 or "
                        "float64)")
    for out in outputs:
        if dtype_name(out, kernel) != name:
            raise TypeError(f"{kernel}: every output must have the dtype of a ({name})")
    for label, buffer, count in zip(labels, (a,) + outputs, counts):
        spectral_count(kernel, label, buffer, count)
    if info is not None:
        if dtype_name(info, kernel) != "int64":
            raise TypeError(f"{kernel}: info must have dtype int64")
        spectral_count(kernel, "info", info, batch)
    return name


def spectral_count(kernel, label, buffer, count):
    if buffer.size != count:
        raise ValueError(f"{kernel}: {label} has {buffer.size} elements, expected {count}")


# ---------------------------------------------------------------------------------------------
# max-pooling checks (the CPU's minitorch/_cpu/pool.pyx wording and order)

POOL_FIELDS = ("size", "out_size", "kernel", "stride", "padding", "dilation")
POOL_LOWEST = (0, 0, 1, 1, 0, 1)       # smallest value each geometry entry may take


def pool_geometry(geometry):
    """The six geometry entries as tuples of ints, after checking that they hold one to three
    values each, all as many, each at least its POOL_LOWEST."""
    geometry = tuple(tuple(int(v) for v in entry) for entry in geometry)
    nd = len(geometry[0])
    if not 1 <= nd <= 3 or any(len(entry) != nd for entry in geometry):
        raise ValueError("max_pool_forward: size, out_size, kernel, stride, padding and dilation "
                         f"need one to three entries each, all as many, got {geometry}")
    for field, lowest, entry in zip(POOL_FIELDS, POOL_LOWEST, geometry):
        if any(v < lowest for v in entry):
            raise ValueError(f"max_pool_forward: {field} entries must be at least {lowest}, got "
                             f"{entry}")
    return geometry


def pool_3d(geometry):
    """The checked geometry as the kernel's 3-D one (D, H, W per entry): leading axes of size 1
    with a window of 1 (no padding)."""
    lead = 3 - len(geometry[0])
    return tuple((0 if field == "padding" else 1,) * lead + entry
                 for field, entry in zip(POOL_FIELDS, geometry))


def pool_counts(kernel, buffers, names, counts):
    for buffer, name, count in zip(buffers, names, counts):
        if buffer.size != count:
            raise ValueError(f"{kernel}: {name} has {buffer.size} elements, {count} are needed")
