"""The ten real dtypes, the two complex ones, and torch's type-promotion rules.

Each dtype has a *storage* (the numpy dtype of its buffers, what the kernels see) and a
*compute* dtype. The arithmetic kernels exist for float32, float64, int64 and bool; the narrow
dtypes are storage formats whose arithmetic runs in their compute dtype and is rounded back
(see NDArray._widened), which is what torch does on the CPU: float16 and bfloat16 compute in
float32 and round each result once; int8/int16/int32 (and uint8) compute in int64 and wrap
modulo 2**bits, as C's integer conversion does.

complex64 / complex128 are stored as numpy complex buffers (one element is one (re, im) pair,
so shapes, strides and offsets count complex elements as everywhere else); the kernels see
such a buffer as its interleaved float32 / float64 pairs (`real_dtype`), see docs/ARCHITECTURE.md
"Complex numbers".

bool is stored as uint8 so that kernels see a plain byte buffer; `numpy()` views it back as bool.
uint8 shares that storage, so a kernel cannot tell the two apart: the cast kernel takes a
`to_bool` flag. bfloat16 has no numpy dtype: its buffers are uint16 words (the top half of a
float32), converted by our own cast kernel.
"""
import math

import numpy as np


class dtype:
    """A minitorch dtype: `mt.float32`, `mt.float64`, `mt.float16`, `mt.bfloat16`, `mt.int64`,
    `mt.int32`, `mt.int16`, `mt.int8`, `mt.uint8`, `mt.bool`."""
    __slots__ = ("name", "storage", "numpy_dtype", "itemsize", "is_floating_point", "rank",
                 "compute", "is_signed", "bits", "c_name", "torch_name", "is_complex",
                 "real_dtype", "complex_dtype")

    def __init__(self, name, storage, numpy_dtype, is_floating_point, rank, c_name, torch_name):
        self.name = name
        self.storage = np.dtype(storage)          # what the kernels see
        # what users see from .numpy(); None for bfloat16, which numpy lacks
        self.numpy_dtype = None if numpy_dtype is None else np.dtype(numpy_dtype)
        self.itemsize = self.storage.itemsize
        self.bits = 8 * self.itemsize
        self.is_floating_point = is_floating_point
        self.is_signed = is_floating_point or name.startswith("int")
        self.rank = rank                          # width order inside a category
        self.compute = self                       # set below for the narrow dtypes
        self.c_name = c_name                      # torch's overflow messages name the C type
        self.torch_name = torch_name              # torch's "not implemented for 'Half'"
        self.is_complex = False
        self.real_dtype = None        # complex64 -> float32, complex128 -> float64 (set below)
        self.complex_dtype = None     # float32 -> complex64, float64 -> complex128, ...

    def __repr__(self):
        return f"minitorch.{self.name}"

    def __reduce__(self):
        return (from_name, (self.name,))


bool_ = dtype("bool", np.uint8, np.bool_, False, 0, "bool", "Bool")
uint8 = dtype("uint8", np.uint8, np.uint8, False, 1, "uint8_t", "Byte")
int8 = dtype("int8", np.int8, np.int8, False, 1, "int8_t", "Char")
int16 = dtype("int16", np.int16, np.int16, False, 2, "int16_t", "Short")
int32 = dtype("int32", np.int32, np.int32, False, 3, "int", "Int")
int64 = dtype("int64", np.int64, np.int64, False, 4, "int64_t", "Long")
float16 = dtype("float16", np.float16, np.float16, True, 1, "at::Half", "Half")
bfloat16 = dtype("bfloat16", np.uint16, None, True, 1, "c10::BFloat16", "BFloat16")
float32 = dtype("float32", np.float32, np.float32, True, 2, "float", "Float")
float64 = dtype("float64", np.float64, np.float64, True, 3, "double", "Double")
complex64 = dtype("complex64", np.complex64, np.complex64, False, 2, "c10::complex<float>",
                  "ComplexFloat")
complex128 = dtype("complex128", np.complex128, np.complex128, False, 3,
                   "c10::complex<double>", "ComplexDouble")
for _complex, _real in ((complex64, float32), (complex128, float64)):
    _complex.is_complex = _complex.is_signed = True
    _complex.real_dtype, _real.complex_dtype = _real, _complex
# torch has complex32 for the 16-bit floats; minitorch has not: they meet complex in complex64
float16.complex_dtype = bfloat16.complex_dtype = complex64
for _narrow in (uint8, int8, int16, int32):
    _narrow.compute = int64
float16.compute = bfloat16.compute = float32

ALL = (bool_, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64)
COMPLEX = (complex64, complex128)
NARROW = frozenset(d for d in ALL if d.compute is not d)     # stored narrower than computed
_BY_NAME = {d.name: d for d in ALL + COMPLEX}
ALL_NAMES = frozenset(_BY_NAME)
_BY_NUMPY = {d.numpy_dtype: d for d in ALL + COMPLEX if d.numpy_dtype is not None}
_default_float = float32
_OVERFLOW_NAMES = {"float16": "c10::Half"}     # the overflow message's name (others: c_name)
# the largest finite value of each narrower float dtype (bfloat16: float32's exponent, 8 bits of
# mantissa)
_FLOAT_MAX = {"float16": 65504.0, "bfloat16": 3.3895313892515355e38,
              "float32": float(np.finfo(np.float32).max)}


def from_name(name):
    return _BY_NAME[name]


def from_numpy(np_dtype):
    """The minitorch dtype a numpy array of `np_dtype` becomes (torch.from_numpy's mapping)."""
    try:
        return _BY_NUMPY[np.dtype(np_dtype)]
    except KeyError:
        raise TypeError(f"can't convert np.ndarray of type {np.dtype(np_dtype)}. The only "
                        "supported types are: float64, float32, float16, complex64, complex128, "
                        "int64, int32, int16, int8, uint8, and bool.") from None


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
    """Sets the default floating dtype (torch.set_default_dtype): float32, float64, float16 or
    bfloat16, as torch accepts."""
    global _default_float
    if not isinstance(d, dtype) or not d.is_floating_point:
        raise TypeError(f"only floating-point types are supported as the default type, got {d}")
    _default_float = d


def scalar_dtype(value):
    """The dtype torch gives a Python scalar: bool → bool, int → int64, float → default float,
    complex → the default float's complex dtype (complex64 for float32)."""
    if isinstance(value, (bool, np.bool_)):
        return bool_
    if isinstance(value, (int, np.integer)):
        return int64
    if isinstance(value, (float, np.floating)):
        return _default_float
    if isinstance(value, (complex, np.complexfloating)):
        return _default_float.complex_dtype
    raise TypeError(f"unsupported scalar type {type(value).__name__}")


def storage_scalar(value, d):
    """A Python scalar as the kernels store it in dtype `d`. bool is its truth value; the
    narrow integers take C's conversion through int64, modulo 2**bits (so `x + 300` and
    `x == -6` see the byte torch sees); NaN, infinities and floats beyond int64 give 0, as the
    cast kernel does. bfloat16 is the rounded word (`bfloat16_bits`)."""
    if d is bool_:
        return bool(value)      # 0.5 is True (a plain byte store would truncate it to 0)
    if d.is_complex:
        return complex(value)
    if d is bfloat16:
        return bfloat16_bits(float(value))
    if d is float16 and abs(value) >= 65520.0:      # rounds to ±inf (numpy's fill would warn)
        return math.copysign(math.inf, value)
    if d.compute is not int64 or d is int64:
        return value
    if isinstance(value, (float, np.floating)):
        value = int(value) if math.isfinite(value) and abs(value) < 2.0 ** 63 else 0
    value = int(value) % (1 << d.bits)
    return value - (1 << d.bits) if d.is_signed and value >= 1 << (d.bits - 1) else value


def bfloat16_bits(value):
    """The bfloat16 word nearest to float `value` (through float32, ties to even; NaN is
    0x7fc0): the conversion the cast kernels do, for scalars."""
    if math.isnan(value):
        return 0x7FC0
    with np.errstate(over="ignore"):
        word = int(np.array(value, np.float32).view(np.uint32))
    return ((word + 0x7FFF + ((word >> 16) & 1)) >> 16) & 0xFFFF


def check_scalar_fits(value, d, type_name=None, narrow_floats=True):
    """torch's checked conversion (fill, full, where, clamp, masked_fill, setitem and tensor() of
    Python data): uint8 takes ints in [-255, 255] (negatives wrap, so `a - b` can be read as
    `a + 255 * b`) and floats in [0, 255]; a signed integer dtype takes what fits in it (no NaN
    or inf); a float dtype takes any non-finite value and finite ones within its range. Paths
    where torch first wraps the scalar in a wider type (where, setitem), and fills of one element
    (torch's scalar_fill converts without the check), pass `narrow_floats=False`: float16 /
    bfloat16 then take any value (rounding to inf)."""
    if d.is_complex or d is bool_ or isinstance(value, (bool, np.bool_)):
        return
    if d.is_floating_point:
        if narrow_floats or d.compute is d:
            _check_float_fits(value, d, type_name or _OVERFLOW_NAMES.get(d.name, d.c_name))
        return
    if isinstance(value, (complex, np.complexfloating)):
        raise RuntimeError(f"value cannot be converted to type {type_name or d.c_name} "
                           "without overflow")
    if d is uint8:
        if isinstance(value, (float, np.floating)):
            fits = 0 <= value <= 255            # False for NaN
        else:
            fits = -255 <= value <= 255
    else:
        fits = -2.0 ** (d.bits - 1) <= value < 2.0 ** (d.bits - 1)      # False for NaN
    if not fits:
        raise RuntimeError(f"value cannot be converted to type {type_name or d.c_name} "
                           "without overflow")


def _check_float_fits(value, d, type_name):
    """c10's overflows() for a float target: a finite value beyond the type's largest one."""
    if d is float64 or isinstance(value, (complex, np.complexfloating)):
        return
    value = float(value)
    if math.isfinite(value) and abs(value) > _FLOAT_MAX[d.name]:
        raise RuntimeError(f"value cannot be converted to type {type_name} without overflow")


def _category(d):
    """bool < integer < floating < complex: a lower-priority operand only wins with a higher
    category."""
    if d is bool_:
        return 0
    if d.is_complex:
        return 3
    return 2 if d.is_floating_point else 1


def _with_complex(a, b):
    """torch's promotion when one side is complex: the complex dtype wide enough for both
    (float64 with complex64 is complex128; integers and bool take the complex side)."""
    c, other = (a, b) if a.is_complex else (b, a)
    if other.is_complex or not other.is_floating_point:
        return c if not other.is_complex or c.rank >= other.rank else other
    return c if c.real_dtype.rank >= other.rank else other.complex_dtype


def promote_types(a, b):
    """torch.promote_types: bool yields to anything; integers widen (uint8 with int8 meets in
    int16); any float beats any integer; float16 with bfloat16 meets in float32."""
    if a is b:
        return a
    if a.is_complex or b.is_complex:
        return _with_complex(a, b)
    ca, cb = _category(a), _category(b)
    if ca != cb:
        return a if ca > cb else b
    if ca == 1 and uint8 in (a, b):
        other = b if a is uint8 else a
        return int16 if other is int8 else other
    if a.rank == b.rank:            # float16 and bfloat16
        return float32
    return a if a.rank > b.rank else b


def result_type(a_dtype, b_dtype, a_priority=2, b_priority=2):
    """torch's promotion. Priority: 2 for a tensor with dimensions, 1 for a 0-d tensor, 0 for a
    Python scalar (whose dtype is `scalar_dtype`). The higher-priority operand decides unless the
    other is of a higher category (bool < integer < float), as in torch."""
    if a_priority == b_priority:
        return promote_types(a_dtype, b_dtype)
    high, low = (a_dtype, b_dtype) if a_priority > b_priority else (b_dtype, a_dtype)
    if _category(low) <= _category(high):
        return high
    if low.is_complex and high.is_floating_point:
        return high.complex_dtype       # torch keeps the float's width: f64 * 1j is complex128
    return low


class finfo:
    """torch.finfo: the limits of a floating dtype (numpy knows IEEE's numbers)."""

    def __init__(self, type=None):
        type = type or _default_float
        if type.is_complex:             # torch: a complex dtype's limits are its parts'
            type = type.real_dtype
        if not type.is_floating_point:
            raise TypeError("torch.finfo() requires a floating point input type. Use "
                            "torch.iinfo to handle 'torch.finfo'")
        self.dtype, self.bits = type.name, type.bits
        if type is bfloat16:        # numpy has no bfloat16: float32's range, 8 mantissa bits
            self.eps, self.max = 2.0 ** -7, float(np.float32(3.3895313892515355e38))
            self.tiny = self.smallest_normal = 2.0 ** -126
            self.min, self.resolution = -self.max, 0.01
            return
        info = np.finfo(type.numpy_dtype)
        self.eps, self.max, self.min = float(info.eps), float(info.max), float(info.min)
        self.tiny = self.smallest_normal = float(info.smallest_normal)
        self.resolution = 10.0 ** -info.precision   # numpy gives float16's as a float16

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


def to_complex(d):
    """The complex dtype holding d's values (torch's toComplexType; int and bool use the default
    float's)."""
    if d.is_complex:
        return d
    return (d if d.is_floating_point else _default_float).complex_dtype
