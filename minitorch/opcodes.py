"""Op codes shared by every backend: the one table where an elementwise or reduction op is
declared: its number, the storage dtypes its kernels accept, and whether it writes bool.

The CPU build turns this table into a Cython `.pxd` (setup.py: the op constants and the support
masks the kernels check) and the GPU backend into `#define`s and its host-side checks, so a new
op is one line here plus one `case` per backend (docs/adding_an_op.md).
"""
from enum import IntEnum

# Storage dtype classes a kernel can accept. UINT8 is the one-byte storage that bool and uint8
# tensors share (uint8 arithmetic runs in int64, see minitorch/ndarray.py).
FLOAT = "float"         # float32 and float64
INT64 = "int64"
UINT8 = "uint8"
ALL = (FLOAT, INT64, UINT8)
NUMERIC = (FLOAT, INT64)
DTYPE_CLASSES = ALL
# Bits of the generated support masks (setup.py writes them into minitorch/_cpu/opcodes.pxd).
CLASS_BITS = {FLOAT: 1, INT64: 2, UINT8: 4}
WRITES_BOOL_BIT = 8


class OpEnum(IntEnum):
    """An IntEnum whose members are declared as `NAME = number, dtype classes[, writes bool]`."""

    def __new__(cls, value, dtypes, writes_bool=False):
        member = int.__new__(cls, value)
        member._value_ = value
        member.dtypes = frozenset((dtypes,) if isinstance(dtypes, str) else dtypes)
        member.writes_bool = writes_bool
        return member

    def supports(self, dtype_class):
        return dtype_class in self.dtypes

    @property
    def mask(self):
        """The support bits setup.py writes for this op (CLASS_BITS | WRITES_BOOL_BIT)."""
        bits = sum(CLASS_BITS[c] for c in self.dtypes)
        return bits | (WRITES_BOOL_BIT if self.writes_bool else 0)


BOOL_OUT = True         # readable third field: `ISNAN = 23, ALL, BOOL_OUT`


class UnaryOp(OpEnum):
    """out[i] = f(a[i]). Each member: number (never renumbered: append new ops), the dtype
    classes its kernels accept, and BOOL_OUT for predicates that write bool."""
    IDENTITY = 0, ALL
    NEG = 1, NUMERIC
    ABS = 2, NUMERIC
    SIGN = 3, NUMERIC
    EXP = 4, FLOAT
    LOG = 5, FLOAT
    LOG1P = 6, FLOAT
    EXPM1 = 7, FLOAT
    SQRT = 8, FLOAT
    RSQRT = 9, FLOAT
    SIN = 10, FLOAT
    COS = 11, FLOAT
    TANH = 12, FLOAT
    SIGMOID = 13, FLOAT
    RELU = 14, NUMERIC
    RECIPROCAL = 15, FLOAT
    SQUARE = 16, NUMERIC
    FLOOR = 17, FLOAT
    CEIL = 18, FLOAT
    ROUND = 19, FLOAT
    TRUNC = 20, FLOAT
    ERF = 21, FLOAT
    LOGICAL_NOT = 22, ALL, BOOL_OUT
    ISNAN = 23, ALL, BOOL_OUT
    ISINF = 24, ALL, BOOL_OUT
    ISFINITE = 25, ALL, BOOL_OUT
    BITWISE_NOT = 26, INT64             # integers only
    # Float-only math, appended so existing numbers never move.
    SINH = 27, FLOAT
    COSH = 28, FLOAT
    TAN = 29, FLOAT
    ASIN = 30, FLOAT
    ACOS = 31, FLOAT
    ATAN = 32, FLOAT
    ASINH = 33, FLOAT
    ACOSH = 34, FLOAT
    ATANH = 35, FLOAT
    LOG2 = 36, FLOAT
    LOG10 = 37, FLOAT
    EXP2 = 38, FLOAT
    ERFC = 39, FLOAT
    LGAMMA = 40, FLOAT
    DIGAMMA = 41, FLOAT                 # lgamma's derivative
    TRIGAMMA = 42, FLOAT                # digamma's derivative (polygamma(1, x))
    FRAC = 43, FLOAT                    # x - trunc(x)
    # Special functions (float only): Cephes-style approximations, written once for both
    # backends in minitorch/_kernels/special_math.h.
    ERFINV = 44, FLOAT
    I0 = 45, FLOAT                      # modified Bessel functions of the first kind, order 0
    I0E = 46, FLOAT                     # and 1, and their exponentially scaled forms e^-|x| I(x)
    I1 = 47, FLOAT
    I1E = 48, FLOAT
    NDTRI = 49, FLOAT                   # inverse of the standard normal CDF
    LOG_NDTR = 50, FLOAT                # log of the standard normal CDF
    ERFCX = 51, FLOAT                   # e^(x^2) erfc(x)
    BESSEL_J0 = 52, FLOAT
    BESSEL_J1 = 53, FLOAT
    SPHERICAL_BESSEL_J0 = 54, FLOAT     # sin(x) / x
    GELU = 55, FLOAT                    # x Φ(x) = x (1 + erf(x / √2)) / 2 (exact GELU)
    SILU = 56, FLOAT                    # x / (1 + e^-x), torch's formula (a.k.a. swish)


class BinaryOp(OpEnum):
    """out[i] = f(a[i], b[i]); declared like UnaryOp (comparisons and logical ops write bool)."""
    ADD = 0, ALL
    SUB = 1, NUMERIC
    MUL = 2, ALL
    DIV = 3, FLOAT
    POW = 4, NUMERIC
    MAXIMUM = 5, ALL
    MINIMUM = 6, ALL
    FLOOR_DIVIDE = 7, NUMERIC
    REMAINDER = 8, NUMERIC
    ATAN2 = 9, FLOAT
    EQ = 10, ALL, BOOL_OUT
    NE = 11, ALL, BOOL_OUT
    LT = 12, ALL, BOOL_OUT
    LE = 13, ALL, BOOL_OUT
    GT = 14, ALL, BOOL_OUT
    GE = 15, ALL, BOOL_OUT
    LOGICAL_AND = 16, ALL, BOOL_OUT
    LOGICAL_OR = 17, ALL, BOOL_OUT
    LOGICAL_XOR = 18, ALL, BOOL_OUT
    # Fused backward helpers: one pass instead of a compare, a cast and a multiply.
    RELU_BACKWARD = 19, FLOAT           # a if b > 0 else 0   (a = grad, b = input)
    TANH_BACKWARD = 20, FLOAT           # a * (1 - b*b)        (b = tanh output)
    SIGMOID_BACKWARD = 21, FLOAT        # a * b * (1 - b)      (b = sigmoid output)
    # Integers only (bool's &, |, ^ are the logical ops). Shifts by a negative amount or by the
    # width or more give torch's results: 0 for <<, the sign fill for >>.
    BITWISE_AND = 22, INT64
    BITWISE_OR = 23, INT64
    BITWISE_XOR = 24, INT64
    LEFT_SHIFT = 25, INT64
    RIGHT_SHIFT = 26, INT64
    # Float math; HEAVISIDE is also an int64 and bool op.
    HYPOT = 27, FLOAT
    LOGADDEXP = 28, FLOAT               # log(e^a + e^b)
    LOGADDEXP2 = 29, FLOAT              # log2(2^a + 2^b)
    COPYSIGN = 30, FLOAT
    HEAVISIDE = 31, ALL                 # b where a == 0, else a > 0
    XLOGY = 32, FLOAT                   # a * log(b), 0 where a == 0 (NaN where b is NaN)
    # Integers only (int64; uint8 runs in int64): gcd and lcm of |a| and |b|, wrapping like torch.
    GCD = 33, INT64
    LCM = 34, INT64
    # Float only.
    NEXTAFTER = 35, FLOAT               # the next representable value after a towards b
    ZETA = 36, FLOAT                    # Hurwitz zeta(a, b) = sum over k >= 0 of (k + b)^-a
    IGAMMA = 37, FLOAT                  # regularized lower incomplete gamma P(a, b)
    IGAMMAC = 38, FLOAT                 # regularized upper incomplete gamma Q(a, b) = 1 - P
    XLOG1PY = 39, FLOAT                 # a * log1p(b), 0 where a == 0 (NaN where b is NaN)
    GELU_BACKWARD = 40, FLOAT           # a * (Φ(b) + b φ(b))   (b = GELU's input)
    SILU_BACKWARD = 41, FLOAT           # a * s * (1 + b * (1 - s)), s = σ(b) (b = SiLU's input)
    ADD_RELU = 42, FLOAT                # relu(a + b): a layer's bias add and its ReLU in one pass
    LEAKY_RELU = 43, FLOAT              # a if a > 0 else a * b   (b = the negative slope)
    LEAKY_RELU_SLOPE = 44, FLOAT        # 1 if a > 0 else b: LEAKY_RELU's derivative in a


class ReduceOp(IntEnum):
    """Reductions (and scans) over one axis; ARGMAX/ARGMIN write int64."""
    SUM = 0
    PROD = 1
    MAX = 2
    MIN = 3
    ARGMAX = 4
    ARGMIN = 5


BOOL_RESULT_UNARY = frozenset(op for op in UnaryOp if op.writes_bool)
BOOL_RESULT_BINARY = frozenset(op for op in BinaryOp if op.writes_bool)
INDEX_RESULT_REDUCE = frozenset({ReduceOp.ARGMAX, ReduceOp.ARGMIN})

ENUMS = (UnaryOp, BinaryOp, ReduceOp)


def c_constants():
    """(name, value) pairs as the backends spell them: UNARY_EXP, BINARY_ADD, REDUCE_SUM, …"""
    prefixes = {UnaryOp: "UNARY", BinaryOp: "BINARY", ReduceOp: "REDUCE"}
    return [(f"{prefixes[enum]}_{member.name}", int(member)) for enum in ENUMS for member in enum]


def c_support_tables():
    """(array name, masks) per elementwise enum: entry i holds op i's CLASS_BITS, plus
    WRITES_BOOL_BIT for predicates (0 for a number no op has), as the kernels check them."""
    tables = []
    for enum, name in ((UnaryOp, "UNARY_SUPPORT"), (BinaryOp, "BINARY_SUPPORT")):
        masks = [0] * (max(enum) + 1)
        for member in enum:
            masks[member] = member.mask
        tables.append((name, masks))
    return tables
