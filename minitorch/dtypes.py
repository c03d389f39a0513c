"""The five dtypes and torch's type-promotion rules.

bool is stored as uint8 so that kernels see a plain byte buffer; `numpy()` views it back as bool.
uint8 shares that storage, so a kernel cannot tell the two apart: the cast kernel takes a
`to_bool` flag, and uint8 arithmetic runs in int64 and wraps back (see NDArray).
"""
import math

import numpy as np


class dtype:
    """A minitorch dtype: `mt.float32`, `mt.float64`, `mt.int64`, `mt.uint8`, `mt.bool`."""
    __slots__ = ("name", "storage", "numpy_dtype", "itemsize", "is_floating_point", "rank")

    def __init__(self, name, storage, numpy_dtype, is_floating_point, rank):
        self.name = name
        self.storage = np.dtype(storage)          # what the kernels see
        self.numpy_dtype = np.dtype(numpy_dtype)  # what users see from .numpy()
        self.itemsize = self.storage.itemsize
        self.is_floating_point = is_floating_point
        self.rank = rank                          # bool < uint8 < int64 < float32 < float64

    def __repr__(self):
        return f"minitorch.{self.name}"

    def __reduce__(self):
        return (from_name, (self.name,))


bool_ = dtype("bool", np.uint8, np.bool_, False, 0)
uint8 = dtype("uint8", np.uint8, np.uint8, False, 1)
int64 = dtype("int64", np.int64, np.int64, False, 2)
float32 = dtype("float32", np.float32, np.float32, True, 3)
float64 = dtype("float64", np.float64, np.float64, True, 4)

ALL = (bool_, uint8, int64, float32, float64)
_BY_NAME = {d.name: d for d in ALL}
ALL_NAMES = frozenset(_BY_NAME)
_BY_NUMPY = {np.dtype(np.bool_): bool_, np.dtype(np.uint8): uint8, np.dtype(np.int8): int64,
             np.dtype(np.int16): int64, np.dtype(np.int32): int64, np.dtype(np.int64): int64,
             np.dtype(np.uint16): int64, np.dtype(np.uint32): int64,
             np.dtype(np.float16): float32, np.dtype(np.float32): float32,
             np.dtype(np.float64): float64}
_default_float = float32


def from_name(name):
    return _BY_NAME[name]


def from_numpy(np_dtype):
    """The minitorch dtype a numpy array of `np_dtype` becomes (torch.from_numpy's mapping,
    narrowed to our five dtypes: other integer widths become int64, float16 float32)."""
    try:
        return _BY_NUMPY[np.dtype(np_dtype)]
    except KeyError:
        raise TypeError(f"can't convert np.ndarray of type {np.dtype(np_dtype)}. The only "
                        "supported types are: float64, float32, int64, int32, int16, int8, "
                        "uint8, and bool.") from None


def check_dtype_arg(function, d):
    """torch's argument parser's refusal of a `dtype=` that is not a dtype (a string, say)."""
    if d is not None and not isinstance(d, dtype):
        raise TypeError(f"{function}(): argument 'dtype' must be torch.dtype, not "
                        f"{type(d).__name__}")
    return d


def get_default_dtype():
    """The default floating dtype, float32 unless changed (torch.get_default_dtype)."""
    return _default_float


def set_default_dtype(d):
    """Sets the default floating dtype (torch.set_default_dtype). Only float32 and float64 are
    accepted (minitorch has no float16/bfloat16)."""
    global _default_float
    if d not in (float32, float64):
        raise TypeError(f"only floating-point types are supported as the default type, got {d}")
    _default_float = d


def scalar_dtype(value):
    """The dtype torch gives a Python scalar: bool → bool, int → int64, float → default float."""
    if isinstance(value, (bool, np.bool_)):
        return bool_
    if isinstance(value, (int, np.integer)):
        return int64
    if isinstance(value, (float, np.floating)):
        return _default_float
    raise TypeError(f"unsupported scalar type {type(value).__name__}")


def storage_scalar(value, d):
    """A Python scalar as the kernels store it in dtype `d`. bool is its truth value; uint8
    takes C's conversion through int64, modulo 256 (so `x + 300` and `x == -6` see the byte
    torch sees); NaN, infinities and floats beyond int64 give 0, as the cast kernel does."""
    if d is bool_:
        return bool(value)      # 0.5 is True (a plain byte store would truncate it to 0)
    if d is not uint8:
        return value
    if isinstance(value, (float, np.floating)):
        value = int(value) if math.isfinite(value) and abs(value) < 2.0 ** 63 else 0
    return int(value) % 256


def check_scalar_fits(value, d, type_name=None):
    """torch's checked conversion (fill, full, where, clamp and tensor() of Python data): uint8
    takes ints in [-255, 255] (negatives wrap, so `a - b` can be read as `a + 255 * b`) and
    floats in [0, 255]; int64 takes what fits in 64 bits (no NaN or inf); anything else is an
    overflow. Float and bool dtypes are not range-checked."""
    if d not in (uint8, int64) or isinstance(value, (bool, np.bool_)):
        return
    if d is int64:
        fits = -2.0 ** 63 <= value < 2.0 ** 63      # False for NaN
    elif isinstance(value, (float, np.floating)):
        fits = 0 <= value <= 255            # False for NaN
    else:
        fits = -255 <= value <= 255
    if not fits:
        raise RuntimeError(f"value cannot be converted to type {type_name or d.name + '_t'} "
                           "without overflow")


def _category(d):
    """bool < integer < floating: a lower-priority operand only wins with a higher category."""
    if d is bool_:
        return 0
    return 2 if d.is_floating_point else 1


def promote_types(a, b):
    """torch.promote_types for our dtypes: the higher of the two."""
    return a if a.rank >= b.rank else b


def result_type(a_dtype, b_dtype, a_priority=2, b_priority=2):
    """torch's promotion. Priority: 2 for a tensor with dimensions, 1 for a 0-d tensor, 0 for a
    Python scalar (whose dtype is `scalar_dtype`). The higher-priority operand decides unless the
    other is of a higher category (bool < integer < float), as in torch."""
    if a_priority == b_priority:
        return promote_types(a_dtype, b_dtype)
    high, low = (a_dtype, b_dtype) if a_priority > b_priority else (b_dtype, a_dtype)
    return low if _category(low) > _category(high) else high


class finfo:
    """torch.finfo: the limits of a floating dtype (numpy knows IEEE's numbers)."""

    def __init__(self, type=None):
        type = type or _default_float
        if not type.is_floating_point:
            raise TypeError("torch.finfo() requires a floating point input type. Use "
                            "torch.iinfo to handle 'torch.finfo'")
        info = np.finfo(type.numpy_dtype)
        self.dtype = type.name
        self.bits = info.bits
        self.eps, self.max, self.min = float(info.eps), float(info.max), float(info.min)
        self.tiny = self.smallest_normal = float(info.smallest_normal)
        self.resolution = float(info.resolution)

    def __repr__(self):
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.smallest_normal:g}, "
                f"tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:
    """torch.iinfo: the range of an integer dtype."""

    def __init__(self, type):
        if type is bool_:
            raise TypeError(f"{type} is not supported by torch.iinfo")
        if type.is_floating_point:
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo to "
                            "handle 'torch.iinfo'")
        info = np.iinfo(type.numpy_dtype)
        self.dtype, self.bits, self.min, self.max = type.name, info.bits, int(info.min), \
            int(info.max)

    def __repr__(self):
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"


def can_cast(from_, to):
    """torch.can_cast: whether a same-kind cast is allowed (never float to integer, never a
    number to bool)."""
    return _category(from_) <= _category(to)
