"""Op codes shared by every backend: the one place where an elementwise or reduction op is named.

The CPU build turns these enums into a Cython `.pxd` (setup.py) and the GPU backend into
`#define`s, so a new op is one member here plus one `case` per backend.
"""
from enum import IntEnum


class UnaryOp(IntEnum):
    """out[i] = f(a[i]); predicates (ISNAN, ISINF, LOGICAL_NOT) write bool."""
    IDENTITY = 0
    NEG = 1
    ABS = 2
    SIGN = 3
    EXP = 4
    LOG = 5
    LOG1P = 6
    EXPM1 = 7
    SQRT = 8
    RSQRT = 9
    SIN = 10
    COS = 11
    TANH = 12
    SIGMOID = 13
    RELU = 14
    RECIPROCAL = 15
    SQUARE = 16
    FLOOR = 17
    CEIL = 18
    ROUND = 19
    TRUNC = 20
    ERF = 21
    LOGICAL_NOT = 22
    ISNAN = 23
    ISINF = 24
    ISFINITE = 25
    BITWISE_NOT = 26        # integers only
    # Float-only math, appended so existing numbers never move: the support tables accept
    # IDENTITY..ERF and SINH..BESSEL_J1 for floats.
    SINH = 27
    COSH = 28
    TAN = 29
    ASIN = 30
    ACOS = 31
    ATAN = 32
    ASINH = 33
    ACOSH = 34
    ATANH = 35
    LOG2 = 36
    LOG10 = 37
    EXP2 = 38
    ERFC = 39
    LGAMMA = 40
    DIGAMMA = 41            # lgamma's derivative
    TRIGAMMA = 42           # digamma's derivative (polygamma(1, x))
    FRAC = 43               # x - trunc(x)
    # Special functions (float only): Cephes-style approximations written out in both backends.
    ERFINV = 44
    I0 = 45                 # modified Bessel functions of the first kind, order 0 and 1,
    I0E = 46                # and their exponentially scaled forms e^-|x| I(x)
    I1 = 47
    I1E = 48
    NDTRI = 49              # inverse of the standard normal CDF
    LOG_NDTR = 50           # log of the standard normal CDF
    ERFCX = 51              # e^(x^2) erfc(x)
    BESSEL_J0 = 52
    BESSEL_J1 = 53


class BinaryOp(IntEnum):
    """out[i] = f(a[i], b[i]); comparisons and logical ops write bool."""
    ADD = 0
    SUB = 1
    MUL = 2
    DIV = 3
    POW = 4
    MAXIMUM = 5
    MINIMUM = 6
    FLOOR_DIVIDE = 7
    REMAINDER = 8
    ATAN2 = 9
    EQ = 10
    NE = 11
    LT = 12
    LE = 13
    GT = 14
    GE = 15
    LOGICAL_AND = 16
    LOGICAL_OR = 17
    LOGICAL_XOR = 18
    # Fused backward helpers: one pass instead of a compare, a cast and a multiply.
    RELU_BACKWARD = 19      # a if b > 0 else 0   (a = grad, b = input)
    TANH_BACKWARD = 20      # a * (1 - b*b)        (b = tanh output)
    SIGMOID_BACKWARD = 21   # a * b * (1 - b)      (b = sigmoid output)
    # Integers only (bool's &, |, ^ are the logical ops). Shifts by a negative amount or by the
    # width or more give torch's results: 0 for <<, the sign fill for >>.
    BITWISE_AND = 22
    BITWISE_OR = 23
    BITWISE_XOR = 24
    LEFT_SHIFT = 25
    RIGHT_SHIFT = 26
    # Float math (HYPOT..XLOGY for floats); HEAVISIDE is also an int64 and bool op.
    HYPOT = 27
    LOGADDEXP = 28          # log(e^a + e^b)
    LOGADDEXP2 = 29         # log2(2^a + 2^b)
    COPYSIGN = 30
    HEAVISIDE = 31          # b where a == 0, else a > 0
    XLOGY = 32              # a * log(b), 0 where a == 0 (NaN where b is NaN)
    # Integers only (int64; uint8 runs in int64): gcd and lcm of |a| and |b|, wrapping like torch.
    GCD = 33
    LCM = 34
    # Float only (the tables accept NEXTAFTER..XLOG1PY).
    NEXTAFTER = 35          # the next representable value after a towards b
    ZETA = 36               # Hurwitz zeta(a, b) = sum over k >= 0 of (k + b)^-a
    IGAMMA = 37             # regularized lower incomplete gamma P(a, b)
    IGAMMAC = 38            # regularized upper incomplete gamma Q(a, b) = 1 - P(a, b)
    XLOG1PY = 39            # a * log1p(b), 0 where a == 0 (NaN where b is NaN)


class ReduceOp(IntEnum):
    """Reductions (and scans) over one axis; ARGMAX/ARGMIN write int64."""
    SUM = 0
    PROD = 1
    MAX = 2
    MIN = 3
    ARGMAX = 4
    ARGMIN = 5


BOOL_RESULT_UNARY = frozenset({UnaryOp.LOGICAL_NOT, UnaryOp.ISNAN, UnaryOp.ISINF,
                               UnaryOp.ISFINITE})
BOOL_RESULT_BINARY = frozenset({BinaryOp.EQ, BinaryOp.NE, BinaryOp.LT, BinaryOp.LE,
                                BinaryOp.GT, BinaryOp.GE, BinaryOp.LOGICAL_AND,
                                BinaryOp.LOGICAL_OR, BinaryOp.LOGICAL_XOR})
INDEX_RESULT_REDUCE = frozenset({ReduceOp.ARGMAX, ReduceOp.ARGMIN})

ENUMS = (UnaryOp, BinaryOp, ReduceOp)


def c_constants():
    """(name, value) pairs as the backends spell them: UNARY_EXP, BINARY_ADD, REDUCE_SUM, …"""
    prefixes = {UnaryOp: "UNARY", BinaryOp: "BINARY", ReduceOp: "REDUCE"}
    return [(f"{prefixes[enum]}_{member.name}", int(member)) for enum in ENUMS for member in enum]
