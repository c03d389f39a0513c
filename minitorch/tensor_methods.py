"""Every op on Tensor as a method or operator, one line each: `relu = E.relu` makes `x.relu()`
call minitorch.functions.elementwise.relu(x). `install()` copies them onto Tensor once, called
from minitorch/__init__.py.

Why a separate class: tensor.py sits below minitorch/functions in the layers (the ops are
built on Tensor), so it cannot name the ops itself; this file sits above both. Static tools see
these methods on Tensor through its TYPE_CHECKING base. Attribute lookups cost the same as for
methods written in the class: install() puts the very same function objects on it.
"""
import numpy as np

from ._cpu import shared
from .functions import (compare, float_math, indexing, inplace, interop, operators,
                        sparse_coo, special_functions)
from .functions import complex as C
from .functions import elementwise as E
from .functions import factor as FA
from .functions import frexp as frexp_function
from .functions import index as I  # noqa: E741
from .functions import joining as J
from .functions import linalg as L
from .functions import movement as M
from .functions import norms as NO
from .functions import reduce as R
from .functions import sort as S
from .functions import spectral as SP
from .functions import stats as ST
from .functions import spellings as SPELL
from .functions import stft as STFT
from . import random
from .opcodes import BinaryOp
from .tensor import Tensor


class TensorMethods:
    """The ops of torch.Tensor, grouped by the functions/ module that defines each."""

    # ---- Python operators (functions/operators.py) ---------------------------------------------
    __add__ = operators.fast_operator(E.Add, E.add, np.add)
    __sub__ = operators.fast_operator(E.Sub, E.sub, np.subtract)
    __mul__ = operators.fast_operator(E.Mul, E.mul, np.multiply)
    __truediv__ = operators.fast_operator(E.Div, E.div, np.true_divide, floating=True)
    __floordiv__ = operators.binary_operator(E.floor_divide, ufunc=np.floor_divide)
    __mod__ = operators.binary_operator(float_math.remainder, ufunc=np.remainder)
    __pow__ = operators.binary_operator(E.pow, ufunc=np.power)
    __matmul__ = operators.binary_operator(L.matmul, ufunc=np.matmul)
    __and__ = operators.binary_operator(compare.bitwise_and, ufunc=np.bitwise_and)
    __or__ = operators.binary_operator(compare.bitwise_or, ufunc=np.bitwise_or)
    __xor__ = operators.binary_operator(compare.bitwise_xor, ufunc=np.bitwise_xor)
    __lshift__ = operators.binary_operator(compare.bitwise_left_shift,
                                           ufunc=np.left_shift)
    __rshift__ = operators.binary_operator(compare.bitwise_right_shift,
                                           ufunc=np.right_shift)
    # `2 * t` is t * 2, as in torch: the same values, and the graph's edges in torch's order
    __radd__ = operators.number_operator(E.Add, operators.binary_operator(E.add))
    __rsub__ = operators.number_operator(
        E.Sub, operators.binary_operator(E.sub, reflected=True), reflected=True)
    __rmul__ = operators.number_operator(E.Mul, operators.binary_operator(E.mul))
    __rtruediv__ = operators.number_operator(
        E.Div, operators.binary_operator(E.div, reflected=True, ndarray=interop.reflected_divide),
        reflected=True)
    __rfloordiv__ = operators.binary_operator(E.floor_divide, reflected=True)
    __rmod__ = operators.binary_operator(float_math.remainder, reflected=True)
    __rpow__ = operators.binary_operator(E.pow, reflected=True)
    __rmatmul__ = operators.binary_operator(L.matmul, reflected=True)
    __rand__ = operators.binary_operator(compare.bitwise_and, reflected=True)
    __ror__ = operators.binary_operator(compare.bitwise_or, reflected=True)
    __rxor__ = operators.binary_operator(compare.bitwise_xor, reflected=True)
    __rlshift__ = operators.binary_operator(compare.bitwise_left_shift, reflected=True)
    __rrshift__ = operators.binary_operator(compare.bitwise_right_shift, reflected=True)
    __eq__ = operators.comparison_operator(compare.eq)
    __ne__ = operators.comparison_operator(compare.ne)
    __lt__ = operators.binary_operator(compare.lt)
    __le__ = operators.binary_operator(compare.le)
    __gt__ = operators.binary_operator(compare.gt)
    __ge__ = operators.binary_operator(compare.ge)
    __dlpack__ = interop.dlpack          # DLPack exchange (functions/interop.py)
    __dlpack_device__ = interop.dlpack_device
    to_sparse = sparse_coo.to_sparse     # a sparse COO tensor (functions/sparse_coo.py)
    to_sparse_coo = sparse_coo.to_sparse
    to_dense = sparse_coo.dense_to_dense   # a dense tensor's to_dense: itself
    __neg__ = E.neg
    __abs__ = E.abs
    __invert__ = operators.invert
    __getitem__ = indexing.getitem
    __setitem__ = indexing.setitem

    def __pos__(self):
        return self

    # ---- in-place operators and in-place bitwise ops (functions/inplace.py) ---------------------
    # (`t += ndarray` falls back to `t = t + ndarray`, as in torch: operators.inplace_operator)
    __ipow__ = operators.inplace_operator(inplace.inplace(E.pow))
    __ifloordiv__ = operators.inplace_operator(inplace.inplace(E.floor_divide))
    __imod__ = operators.inplace_operator(inplace.inplace(float_math.remainder))
    bitwise_and_ = inplace.inplace(inplace.castable_first(compare.bitwise_and))
    bitwise_or_ = inplace.inplace(inplace.castable_first(compare.bitwise_or))
    bitwise_xor_ = inplace.inplace(inplace.castable_first(compare.bitwise_xor))
    bitwise_left_shift_ = inplace.inplace(inplace.castable_first(compare.bitwise_left_shift))
    bitwise_right_shift_ = inplace.inplace(inplace.castable_first(compare.bitwise_right_shift))
    __iand__ = operators.inplace_operator(bitwise_and_)
    __ior__ = operators.inplace_operator(bitwise_or_)
    __ixor__ = operators.inplace_operator(bitwise_xor_)
    __ilshift__ = operators.inplace_operator(bitwise_left_shift_)
    __irshift__ = operators.inplace_operator(bitwise_right_shift_)


    # ---- elementwise arithmetic and basic math (functions/elementwise.py) -----------------------
    add = E.add
    sub = E.sub
    mul = E.mul
    div = E.div
    true_divide = E.true_divide
    floor_divide = E.floor_divide
    pow = E.pow
    float_power = E.float_power
    neg = E.neg
    abs = E.abs
    sign = E.sign
    clip = E.clip
    multiply = E.multiply
    subtract = E.subtract
    divide = E.divide
    negative = E.negative
    absolute = E.absolute
    exp = E.exp
    log = E.log
    log1p = E.log1p
    expm1 = E.expm1
    sqrt = E.sqrt
    rsqrt = E.rsqrt
    sin = E.sin
    cos = E.cos
    tanh = E.tanh
    sigmoid = E.sigmoid
    relu = E.relu
    reciprocal = E.reciprocal
    square = E.square
    erf = E.erf
    floor = E.floor
    ceil = E.ceil
    round = E.round
    trunc = E.trunc
    clamp = E.clamp
    minimum = E.minimum
    maximum = E.maximum
    clamp_min = E.clamp_min
    clamp_max = E.clamp_max
    add_ = inplace.fast_inplace(BinaryOp.ADD, inplace.inplace(E.add, saves_input=False),
                                scaled=True)
    sub_ = inplace.fast_inplace(BinaryOp.SUB, inplace.inplace(E.sub, saves_input=False),
                                scaled=True)
    mul_ = inplace.fast_inplace(BinaryOp.MUL, inplace.inplace(E.mul), scaled=False)
    div_ = inplace.fast_inplace(BinaryOp.DIV, inplace.inplace(E.div), scaled=False)
    __iadd__ = operators.inplace_operator(add_)      # `t += x` is t.add_(x), as in torch
    __isub__ = operators.inplace_operator(sub_)
    __imul__ = operators.inplace_operator(mul_)
    __itruediv__ = operators.inplace_operator(div_)
    pow_ = inplace.inplace(E.pow)
    neg_ = inplace.inplace(E.neg)
    abs_ = inplace.inplace(E.abs)
    sign_ = inplace.inplace(E.sign)
    exp_ = inplace.inplace(E.exp)
    log_ = inplace.inplace(E.log)
    log1p_ = inplace.inplace(E.log1p)
    expm1_ = inplace.inplace(E.expm1)
    sqrt_ = inplace.inplace(E.sqrt)
    rsqrt_ = inplace.inplace(E.rsqrt)
    sin_ = inplace.inplace(E.sin)
    cos_ = inplace.inplace(E.cos)
    tanh_ = inplace.inplace(E.tanh)
    sigmoid_ = inplace.inplace(E.sigmoid)
    relu_ = inplace.inplace(E.relu)
    reciprocal_ = inplace.inplace(E.reciprocal)
    square_ = inplace.inplace(E.square)
    floor_ = inplace.inplace(E.floor)
    ceil_ = inplace.inplace(E.ceil)
    round_ = inplace.inplace(E.round)
    trunc_ = inplace.inplace(E.trunc)
    clamp_ = clip_ = inplace.inplace(E.clamp)
    clamp_min_ = inplace.inplace(E.clamp_min)
    clamp_max_ = inplace.inplace(E.clamp_max)
    absolute_ = inplace.inplace(E.absolute)
    negative_ = inplace.inplace(E.negative)
    divide_ = inplace.inplace(E.divide)
    multiply_ = inplace.inplace(E.multiply)
    subtract_ = inplace.inplace(E.subtract)
    true_divide_ = inplace.inplace(E.true_divide)
    floor_divide_ = inplace.inplace(E.floor_divide)
    erf_ = inplace.inplace(E.erf)

    # ---- comparisons and logic (functions/compare.py) -------------------------------------------
    greater = compare.greater
    less = compare.less
    eq = compare.eq
    ne = compare.ne
    lt = compare.lt
    le = compare.le
    gt = compare.gt
    ge = compare.ge
    logical_and = compare.logical_and
    logical_or = compare.logical_or
    logical_xor = compare.logical_xor
    logical_not = compare.logical_not
    isnan = compare.isnan
    isinf = compare.isinf
    isfinite = compare.isfinite
    equal = compare.equal
    allclose = compare.allclose
    isclose = compare.isclose
    bitwise_and = compare.bitwise_and
    bitwise_or = compare.bitwise_or
    bitwise_xor = compare.bitwise_xor
    bitwise_not = compare.bitwise_not
    bitwise_left_shift = compare.bitwise_left_shift
    bitwise_right_shift = compare.bitwise_right_shift
    signbit = compare.signbit
    greater_equal = compare.greater_equal
    less_equal = compare.less_equal
    not_equal = compare.not_equal
    isposinf = compare.isposinf
    isneginf = compare.isneginf
    bitwise_not_ = inplace.inplace(compare.bitwise_not)

    # ---- further math (functions/float_math.py) -------------------------------------------------
    remainder = float_math.remainder
    fmod = float_math.fmod
    fmax = float_math.fmax
    fmin = float_math.fmin
    fmod_ = inplace.inplace(float_math.fmod)
    remainder_ = inplace.inplace(float_math.remainder)
    addcmul = float_math.addcmul
    addcdiv = float_math.addcdiv
    atan2 = float_math.atan2
    lerp = float_math.lerp
    sinh = float_math.sinh
    cosh = float_math.cosh
    tan = float_math.tan
    asin = float_math.asin
    acos = float_math.acos
    atan = float_math.atan
    asinh = float_math.asinh
    acosh = float_math.acosh
    atanh = float_math.atanh
    arcsin = float_math.arcsin
    arccos = float_math.arccos
    arctan = float_math.arctan
    arcsinh = float_math.arcsinh
    arccosh = float_math.arccosh
    arctanh = float_math.arctanh
    log2 = float_math.log2
    log10 = float_math.log10
    exp2 = float_math.exp2
    erfc = float_math.erfc
    frac = float_math.frac
    hypot = float_math.hypot
    logaddexp = float_math.logaddexp
    logaddexp2 = float_math.logaddexp2
    copysign = float_math.copysign
    heaviside = float_math.heaviside
    xlogy = float_math.xlogy
    deg2rad = float_math.deg2rad
    rad2deg = float_math.rad2deg
    nan_to_num = float_math.nan_to_num
    fix = float_math.fix
    positive = float_math.positive
    arctan2 = float_math.arctan2
    lerp_ = inplace.inplace(float_math.lerp)
    sinh_ = inplace.inplace(float_math.sinh)
    cosh_ = inplace.inplace(float_math.cosh)
    tan_ = inplace.inplace(float_math.tan)
    asin_ = inplace.inplace(float_math.asin)
    acos_ = inplace.inplace(float_math.acos)
    atan_ = inplace.inplace(float_math.atan)
    asinh_ = inplace.inplace(float_math.asinh)
    acosh_ = inplace.inplace(float_math.acosh)
    atanh_ = inplace.inplace(float_math.atanh)
    arcsin_ = inplace.inplace(float_math.arcsin)
    arccos_ = inplace.inplace(float_math.arccos)
    arctan_ = inplace.inplace(float_math.arctan)
    arcsinh_ = inplace.inplace(float_math.arcsinh)
    arccosh_ = inplace.inplace(float_math.arccosh)
    arctanh_ = inplace.inplace(float_math.arctanh)
    log2_ = inplace.inplace(float_math.log2)
    log10_ = inplace.inplace(float_math.log10)
    exp2_ = inplace.inplace(float_math.exp2)
    erfc_ = inplace.inplace(float_math.erfc)
    frac_ = inplace.inplace(float_math.frac)
    hypot_ = inplace.inplace(float_math.hypot)
    copysign_ = inplace.inplace(float_math.copysign)
    heaviside_ = inplace.inplace(float_math.heaviside)
    xlogy_ = inplace.inplace(float_math.xlogy)
    sgn_ = inplace.inplace(C.sgn)
    deg2rad_ = inplace.inplace(float_math.deg2rad)
    rad2deg_ = inplace.inplace(float_math.rad2deg)
    nan_to_num_ = inplace.inplace(float_math.nan_to_num)
    fix_ = inplace.inplace(float_math.fix)
    atan2_ = inplace.inplace(float_math.atan2)
    arctan2_ = inplace.inplace(float_math.arctan2)

    # ---- special functions (functions/special_functions.py) -------------------------------------
    lgamma = special_functions.lgamma
    digamma = special_functions.digamma
    erfinv = special_functions.erfinv
    i0 = special_functions.i0
    gcd = special_functions.gcd
    lcm = special_functions.lcm
    nextafter = special_functions.nextafter
    igamma = special_functions.igamma
    igammac = special_functions.igammac
    logit = special_functions.logit
    sinc = special_functions.sinc
    ldexp = special_functions.ldexp
    frexp = frexp_function.frexp
    mvlgamma = special_functions.mvlgamma
    lgamma_ = inplace.inplace(special_functions.lgamma)
    digamma_ = inplace.inplace(special_functions.digamma)
    erfinv_ = inplace.inplace(special_functions.erfinv)
    i0_ = inplace.inplace(special_functions.i0)
    gcd_ = inplace.inplace(special_functions.gcd)
    lcm_ = inplace.inplace(special_functions.lcm)
    nextafter_ = inplace.inplace(special_functions.nextafter)
    igamma_ = inplace.inplace(special_functions.igamma)
    igammac_ = inplace.inplace(special_functions.igammac)
    logit_ = inplace.inplace(special_functions.logit)
    sinc_ = inplace.inplace(special_functions.sinc)
    ldexp_ = inplace.inplace(special_functions.ldexp)
    mvlgamma_ = inplace.inplace(special_functions.mvlgamma)

    # ---- reductions (functions/reduce.py) -------------------------------------------------------
    sum = R.sum
    mean = R.mean
    prod = R.prod
    max = R.max
    min = R.min
    amax = R.amax
    amin = R.amin
    argmax = R.argmax
    argmin = R.argmin
    var = R.var
    std = R.std
    logsumexp = R.logsumexp
    softmax = R.softmax
    log_softmax = R.log_softmax
    cumsum = R.cumsum
    cumprod = R.cumprod
    all = R.all
    any = R.any
    count_nonzero = R.count_nonzero
    renorm = R.renorm
    cumsum_ = inplace.inplace(R.cumsum)
    cumprod_ = inplace.inplace(R.cumprod)
    renorm_ = inplace.inplace(R.renorm)

    # ---- norms (functions/norms.py) -------------------------------------------------------------
    norm = NO.norm

    # ---- statistics (functions/stats.py) --------------------------------------------------------
    nansum = ST.nansum
    nanmean = ST.nanmean
    aminmax = ST.aminmax
    logcumsumexp = ST.logcumsumexp
    cummax = ST.cummax
    cummin = ST.cummin
    bincount = ST.bincount
    histc = ST.histc
    mode = ST.mode
    quantile = ST.quantile
    nanquantile = ST.nanquantile
    cov = ST.cov
    corrcoef = ST.corrcoef
    histogram = ST.histogram

    # ---- views and copies (functions/movement.py) -----------------------------------------------
    reshape = M.reshape
    view = M.view
    flatten = M.flatten
    unflatten = M.unflatten
    squeeze = M.squeeze
    unsqueeze = M.unsqueeze
    permute = M.permute
    transpose = M.transpose
    t = M.t
    expand = M.expand
    expand_as = M.expand_as
    broadcast_to = M.broadcast_to
    movedim = M.movedim
    as_strided = M.as_strided
    narrow = M.narrow
    flip = M.flip
    roll = M.roll
    repeat = M.repeat
    tile = M.tile
    contiguous = M.contiguous
    clone = M.clone
    unfold = M.unfold
    view_as = M.view_as
    reshape_as = M.reshape_as
    swapaxes = M.swapaxes
    swapdims = M.swapdims
    moveaxis = M.moveaxis
    fliplr = M.fliplr
    flipud = M.flipud
    select = M.select

    # ---- joining and splitting (functions/joining.py) -------------------------------------------
    unbind = J.unbind
    split = J.split
    chunk = J.chunk
    diff = J.diff
    repeat_interleave = J.repeat_interleave
    tensor_split = J.tensor_split
    hsplit = J.hsplit
    vsplit = J.vsplit
    dsplit = J.dsplit
    rot90 = J.rot90

    # ---- linear algebra (functions/linalg.py) ---------------------------------------------------
    matmul = L.matmul
    mm = L.mm
    bmm = L.bmm
    outer = L.outer
    dot = L.dot
    mv = L.mv
    addmm = L.addmm
    baddbmm = L.baddbmm
    addmv = L.addmv
    addr = L.addr
    addbmm = L.addbmm
    inner = L.inner
    ger = L.ger
    diagonal = L.diagonal
    diag = L.diag
    diag_embed = L.diag_embed
    trace = L.trace
    tril = L.tril
    triu = L.triu
    cross = L.cross
    dist = L.dist
    kron = L.kron
    vdot = L.vdot
    diagflat = L.diagflat
    tril_ = inplace.inplace(L.tril)
    triu_ = inplace.inplace(L.triu)
    addmv_ = inplace.inplace(L.addmv)
    addr_ = inplace.inplace(L.addr)
    addbmm_ = inplace.inplace(L.addbmm)
    addmm_ = inplace.inplace(L.addmm)
    baddbmm_ = inplace.inplace(L.baddbmm)

    # ---- sorting (functions/sort.py) ------------------------------------------------------------
    sort = S.sort
    argsort = S.argsort
    msort = S.msort
    topk = S.topk
    kthvalue = S.kthvalue
    median = S.median
    nanmedian = S.nanmedian
    unique = S.unique
    unique_consecutive = S.unique_consecutive

    # ---- factorizations (functions/factor.py) ---------------------------------------------------
    det = FA.det
    slogdet = FA.slogdet
    logdet = FA.logdet
    inverse = FA.inverse
    cholesky = FA.cholesky
    cholesky_solve = FA.cholesky_solve
    cholesky_inverse = FA.cholesky_inverse
    lu = FA.lu
    lu_solve = FA.lu_solve
    triangular_solve = FA.triangular_solve
    matrix_power = FA.matrix_power
    matrix_exp = FA.matrix_exp

    # ---- spectral decompositions (functions/spectral.py) ----------------------------------------
    svd = SP.svd
    qr = SP.qr
    pinverse = SP.pinverse
    geqrf = SP.geqrf
    orgqr = SP.orgqr

    # ---- short-time Fourier transforms (functions/stft.py) -------------------------------------
    stft = STFT.stft
    istft = STFT.istft

    # ---- index ops (functions/index.py) ---------------------------------------------------------
    gather = I.gather
    scatter = I.scatter
    scatter_add = I.scatter_add
    index_select = I.index_select
    masked_fill = I.masked_fill
    take_along_dim = I.take_along_dim
    nonzero = I.nonzero
    masked_select = I.masked_select
    take = I.take
    index_add = I.index_add
    argwhere = I.argwhere
    index_fill = I.index_fill
    index_copy = I.index_copy
    masked_scatter = I.masked_scatter
    scatter_reduce = I.scatter_reduce
    select_scatter = I.select_scatter
    slice_scatter = I.slice_scatter
    diagonal_scatter = I.diagonal_scatter
    fill_diagonal_ = I.fill_diagonal_
    index_reduce = I.index_reduce
    index_fill_ = inplace.inplace(I.index_fill)
    index_copy_ = inplace.inplace(I.index_copy)
    masked_scatter_ = inplace.inplace(I.masked_scatter)
    scatter_reduce_ = inplace.inplace(I.scatter_reduce)
    index_reduce_ = inplace.inplace(I.index_reduce)

    # ---- indexing (functions/indexing.py) -------------------------------------------------------
    index_put = indexing.index_put
    put = indexing.put
    put_ = inplace.inplace(indexing.put)

    # ---- in-place forms with their own rules (functions/inplace.py) -----------------------------
    masked_fill_ = inplace.inplace(I.masked_fill)
    index_add_ = inplace.inplace(I.index_add)
    scatter_ = inplace.inplace(I.scatter)
    scatter_add_ = inplace.inplace(I.scatter_add)
    index_put_ = inplace.inplace(indexing.index_put)
    fill_ = inplace.fill_
    zero_ = inplace.zero_
    copy_ = inplace.copy_
    float_power_ = inplace.float_power_
    _assign_result = inplace.assign_result
    # comparisons and logical ops in place keep self's dtype (torch's `x.eq_(y)`)
    eq_ = inplace.inplace(inplace.keeping_dtype(compare.eq))
    ne_ = inplace.inplace(inplace.keeping_dtype(compare.ne))
    lt_ = inplace.inplace(inplace.keeping_dtype(compare.lt))
    le_ = inplace.inplace(inplace.keeping_dtype(compare.le))
    gt_ = inplace.inplace(inplace.keeping_dtype(compare.gt))
    ge_ = inplace.inplace(inplace.keeping_dtype(compare.ge))
    greater_equal_ = inplace.inplace(inplace.keeping_dtype(compare.greater_equal))
    less_equal_ = inplace.inplace(inplace.keeping_dtype(compare.less_equal))
    not_equal_ = inplace.inplace(inplace.keeping_dtype(compare.not_equal))
    greater_ = inplace.inplace(inplace.keeping_dtype(compare.greater))
    less_ = inplace.inplace(inplace.keeping_dtype(compare.less))
    logical_and_ = inplace.inplace(inplace.keeping_dtype(compare.logical_and))
    logical_or_ = inplace.inplace(inplace.keeping_dtype(compare.logical_or))
    logical_xor_ = inplace.inplace(inplace.keeping_dtype(compare.logical_xor))
    logical_not_ = inplace.inplace(inplace.keeping_dtype(compare.logical_not))
    # in-place views: self takes the view's shape and strides
    t_ = inplace.inplace_view(M.t)
    squeeze_ = inplace.inplace_view(M.squeeze)
    unsqueeze_ = inplace.inplace_view(M.unsqueeze)
    transpose_ = inplace.inplace_view(M.transpose)
    swapaxes_ = inplace.inplace_view(M.swapaxes)
    swapdims_ = inplace.inplace_view(M.swapdims)
    as_strided_ = inplace.inplace_view(M.as_strided)

    # ---- random fills and draws (random.py) ----------------------------------------------------
    uniform_ = random.uniform_
    normal_ = random.normal_
    random_ = random.random_
    exponential_ = random.exponential_
    geometric_ = random.geometric_
    log_normal_ = random.log_normal_
    cauchy_ = random.cauchy_
    bernoulli_ = random.bernoulli_

    def bernoulli(self, p=None, *, generator=None):
        return random.bernoulli(self, p, generator)

    def multinomial(self, num_samples, replacement=False, *, generator=None):
        return random.multinomial(self, num_samples, replacement, generator)

    # ---- methods whose arguments differ from the function's -------------------------------------
    to = E.to
    sum_to_size = R.sum_to_size

    def polygamma(self, n):
        return special_functions.polygamma(n, self)     # torch's method puts n first

    polygamma_ = inplace.inplace(polygamma)

    def where(self, condition, y):
        return E.where(condition, self, y)     # x.where(c, y) keeps x where c holds

    def addcmul_(self, tensor1, tensor2, *, value=1):
        return self.add_((tensor1 * value if value != 1 else tensor1) * tensor2)

    def addcdiv_(self, tensor1, tensor2, *, value=1):
        return self.add_((tensor1 * value if value != 1 else tensor1) / tensor2)

    def split_with_sizes(self, split_sizes, dim=0):
        return J.split(self, list(split_sizes), dim)

    unsafe_chunk = SPELL.unsafe_chunk
    unsafe_split = SPELL.unsafe_split
    unsafe_split_with_sizes = SPELL.unsafe_split_with_sizes
    narrow_copy = SPELL.narrow_copy

    def nonzero_static(self, *, size, fill_value=-1):
        return SPELL.nonzero_static(self, size=size, fill_value=fill_value)

    def dim_order(self):
        """The dims from outermost to innermost in memory: by decreasing stride, ties in dim
        order (torch.Tensor.dim_order)."""
        strides = self.stride()
        return tuple(sorted(range(self.ndim), key=lambda d: -strides[d]))

    def is_set_to(self, tensor):
        """Whether both tensors view the same memory with one offset, size and stride."""
        return (self.data_ptr() == tensor.data_ptr() and self.shape == tensor.shape and
                self.stride() == tensor.stride() and self.device == tensor.device)

    # ---- shared memory for multiprocessing (_cpu/shared.py) -----------------------------------
    def share_memory_(self):
        """torch.Tensor.share_memory_: move a CPU tensor's storage into shared memory in place
        (its views follow; nothing when it is there already), so processes it is sent to or
        forked into write the same memory. A no-op on cuda: minitorch cannot share device
        memory between processes (torch uses CUDA IPC; see minitorch.multiprocessing)."""
        if self._data.device.type == "cpu":
            shared.share(self._data)
        return self

    def is_shared(self):
        """torch.Tensor.is_shared: whether the storage is in shared memory (False on cuda,
        where torch says True: its CUDA IPC has no counterpart here)."""
        return self._data.device.type == "cpu" and shared.is_shared(self._data.buffer)

    # ---- complex numbers (functions/complex.py) ----------------------------------------------
    conj = C.conj
    conj_physical = C.conj_physical
    resolve_conj = C.resolve_conj
    sgn = C.sgn
    angle = C.angle
    isreal = C.isreal
    real = property(C.real)
    imag = property(C.imag)


# what Python puts in every class body (and __hash__ = None, implied by defining __eq__ here)
_CLASS_ENTRIES = {"__module__", "__qualname__", "__doc__", "__dict__", "__weakref__", "__hash__"}


def install(cls=Tensor):
    """Put every method above on `cls` (Tensor); called once, from minitorch/__init__.py."""
    for name, member in vars(TensorMethods).items():
        if name not in _CLASS_ENTRIES:
            setattr(cls, name, member)
