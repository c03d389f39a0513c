"""Every op on Tensor as a method or operator, one line each: `relu = E.relu` makes `x.relu()`
call minitorch.functions.elementwise.relu(x). `install()` copies them onto Tensor once, called
from minitorch/__init__.py.

Why a separate class: tensor.py sits below minitorch/functions in the layers (the ops are
built on Tensor), so it cannot name the ops itself; this file sits above both. Static tools see
these methods on Tensor through its TYPE_CHECKING base. Attribute lookups cost the same as for
methods written in the class: install() puts the very same function objects on it.
"""
from .functions import elementwise as E
from .functions import factor as FA
from .functions import inplace, operators
from .functions import norms as NO
from .functions import sort as S
from .functions import spectral as SP
from .functions import stats as ST
from .functions import index as I  # noqa: E741
from .functions import linalg as L
from .functions import movement as M
from .functions import reduce as R
from .opcodes import BinaryOp
from .tensor import Tensor


class TensorMethods:
    """The ops of torch.Tensor, grouped by the functions/ module that defines each."""

    # ---- Python operators (functions/operators.py) ---------------------------------------------
    __add__ = operators.fast_operator(E.Add, E.add)
    __sub__ = operators.fast_operator(E.Sub, E.sub)
    __mul__ = operators.fast_operator(E.Mul, E.mul)
    __truediv__ = operators.binary_operator(E.div)
    __floordiv__ = operators.binary_operator(E.floor_divide)
    __mod__ = operators.binary_operator(E.remainder)
    __pow__ = operators.binary_operator(E.pow)
    __matmul__ = operators.binary_operator(L.matmul)
    __and__ = operators.binary_operator(E.bitwise_and)
    __or__ = operators.binary_operator(E.bitwise_or)
    __xor__ = operators.binary_operator(E.bitwise_xor)
    __lshift__ = operators.binary_operator(E.bitwise_left_shift)
    __rshift__ = operators.binary_operator(E.bitwise_right_shift)
    __radd__ = operators.binary_operator(E.add, reflected=True)
    __rsub__ = operators.binary_operator(E.sub, reflected=True)
    __rmul__ = operators.binary_operator(E.mul, reflected=True)
    __rtruediv__ = operators.binary_operator(E.div, reflected=True)
    __rfloordiv__ = operators.binary_operator(E.floor_divide, reflected=True)
    __rmod__ = operators.binary_operator(E.remainder, reflected=True)
    __rpow__ = operators.binary_operator(E.pow, reflected=True)
    __rmatmul__ = operators.binary_operator(L.matmul, reflected=True)
    __rand__ = operators.binary_operator(E.bitwise_and, reflected=True)
    __ror__ = operators.binary_operator(E.bitwise_or, reflected=True)
    __rxor__ = operators.binary_operator(E.bitwise_xor, reflected=True)
    __rlshift__ = operators.binary_operator(E.bitwise_left_shift, reflected=True)
    __rrshift__ = operators.binary_operator(E.bitwise_right_shift, reflected=True)
    __eq__ = operators.binary_operator(E.eq)
    __ne__ = operators.binary_operator(E.ne)
    __lt__ = operators.binary_operator(E.lt)
    __le__ = operators.binary_operator(E.le)
    __gt__ = operators.binary_operator(E.gt)
    __ge__ = operators.binary_operator(E.ge)
    __neg__ = E.neg
    __abs__ = E.abs
    __invert__ = operators.invert
    __getitem__ = I.getitem
    __setitem__ = I.setitem

    def __pos__(self):
        return self

    # ---- in-place operators and in-place bitwise ops (functions/inplace.py) ---------------------
    __iadd__ = inplace.inplace(E.add)
    __isub__ = inplace.inplace(E.sub)
    __imul__ = inplace.inplace(E.mul)
    __itruediv__ = inplace.inplace(E.div)
    __ipow__ = inplace.inplace(E.pow)
    __ifloordiv__ = inplace.inplace(E.floor_divide)
    __imod__ = inplace.inplace(E.remainder)
    __iand__ = bitwise_and_ = inplace.inplace(inplace.castable_first(E.bitwise_and))
    __ior__ = bitwise_or_ = inplace.inplace(inplace.castable_first(E.bitwise_or))
    __ixor__ = bitwise_xor_ = inplace.inplace(inplace.castable_first(E.bitwise_xor))
    __ilshift__ = bitwise_left_shift_ = inplace.inplace(
        inplace.castable_first(E.bitwise_left_shift))
    __irshift__ = bitwise_right_shift_ = inplace.inplace(
        inplace.castable_first(E.bitwise_right_shift))


    # ---- elementwise (functions/elementwise.py) -------------------------------------------
    add = E.add
    sub = E.sub
    mul = E.mul
    div = E.div
    true_divide = E.true_divide
    floor_divide = E.floor_divide
    remainder = E.remainder
    fmod = E.fmod
    pow = E.pow
    float_power = E.float_power
    neg = E.neg
    abs = E.abs
    sign = E.sign
    addcmul = E.addcmul
    addcdiv = E.addcdiv
    clip = E.clip
    multiply = E.multiply
    subtract = E.subtract
    divide = E.divide
    negative = E.negative
    absolute = E.absolute
    greater = E.greater
    less = E.less
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
    fmax = E.fmax
    fmin = E.fmin
    atan2 = E.atan2
    eq = E.eq
    ne = E.ne
    lt = E.lt
    le = E.le
    gt = E.gt
    ge = E.ge
    logical_and = E.logical_and
    logical_or = E.logical_or
    logical_xor = E.logical_xor
    logical_not = E.logical_not
    isnan = E.isnan
    isinf = E.isinf
    isfinite = E.isfinite
    lerp = E.lerp
    equal = E.equal
    allclose = E.allclose
    isclose = E.isclose
    bitwise_and = E.bitwise_and
    bitwise_or = E.bitwise_or
    bitwise_xor = E.bitwise_xor
    bitwise_not = E.bitwise_not
    bitwise_left_shift = E.bitwise_left_shift
    bitwise_right_shift = E.bitwise_right_shift
    sinh = E.sinh
    cosh = E.cosh
    tan = E.tan
    asin = E.asin
    acos = E.acos
    atan = E.atan
    asinh = E.asinh
    acosh = E.acosh
    atanh = E.atanh
    arcsin = E.arcsin
    arccos = E.arccos
    arctan = E.arctan
    arcsinh = E.arcsinh
    arccosh = E.arccosh
    arctanh = E.arctanh
    log2 = E.log2
    log10 = E.log10
    exp2 = E.exp2
    erfc = E.erfc
    lgamma = E.lgamma
    digamma = E.digamma
    frac = E.frac
    hypot = E.hypot
    logaddexp = E.logaddexp
    logaddexp2 = E.logaddexp2
    copysign = E.copysign
    heaviside = E.heaviside
    xlogy = E.xlogy
    sgn = E.sgn
    signbit = E.signbit
    deg2rad = E.deg2rad
    rad2deg = E.rad2deg
    nan_to_num = E.nan_to_num
    clamp_min = E.clamp_min
    clamp_max = E.clamp_max
    fix = E.fix
    positive = E.positive
    greater_equal = E.greater_equal
    less_equal = E.less_equal
    not_equal = E.not_equal
    arctan2 = E.arctan2
    erfinv = E.erfinv
    i0 = E.i0
    gcd = E.gcd
    lcm = E.lcm
    nextafter = E.nextafter
    igamma = E.igamma
    igammac = E.igammac
    logit = E.logit
    sinc = E.sinc
    ldexp = E.ldexp
    mvlgamma = E.mvlgamma
    angle = E.angle
    isposinf = E.isposinf
    isneginf = E.isneginf
    isreal = E.isreal
    add_ = inplace.fast_inplace(BinaryOp.ADD, inplace.inplace(E.add), scaled=True)
    sub_ = inplace.fast_inplace(BinaryOp.SUB, inplace.inplace(E.sub), scaled=True)
    mul_ = inplace.fast_inplace(BinaryOp.MUL, inplace.inplace(E.mul), scaled=False)
    div_ = inplace.fast_inplace(BinaryOp.DIV, inplace.inplace(E.div), scaled=False)
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
    lerp_ = inplace.inplace(E.lerp)
    sinh_ = inplace.inplace(E.sinh)
    cosh_ = inplace.inplace(E.cosh)
    tan_ = inplace.inplace(E.tan)
    asin_ = inplace.inplace(E.asin)
    acos_ = inplace.inplace(E.acos)
    atan_ = inplace.inplace(E.atan)
    asinh_ = inplace.inplace(E.asinh)
    acosh_ = inplace.inplace(E.acosh)
    atanh_ = inplace.inplace(E.atanh)
    arcsin_ = inplace.inplace(E.arcsin)
    arccos_ = inplace.inplace(E.arccos)
    arctan_ = inplace.inplace(E.arctan)
    arcsinh_ = inplace.inplace(E.arcsinh)
    arccosh_ = inplace.inplace(E.arccosh)
    arctanh_ = inplace.inplace(E.arctanh)
    log2_ = inplace.inplace(E.log2)
    log10_ = inplace.inplace(E.log10)
    exp2_ = inplace.inplace(E.exp2)
    erfc_ = inplace.inplace(E.erfc)
    lgamma_ = inplace.inplace(E.lgamma)
    digamma_ = inplace.inplace(E.digamma)
    frac_ = inplace.inplace(E.frac)
    hypot_ = inplace.inplace(E.hypot)
    copysign_ = inplace.inplace(E.copysign)
    heaviside_ = inplace.inplace(E.heaviside)
    xlogy_ = inplace.inplace(E.xlogy)
    sgn_ = inplace.inplace(E.sgn)
    deg2rad_ = inplace.inplace(E.deg2rad)
    rad2deg_ = inplace.inplace(E.rad2deg)
    nan_to_num_ = inplace.inplace(E.nan_to_num)
    clamp_min_ = inplace.inplace(E.clamp_min)
    clamp_max_ = inplace.inplace(E.clamp_max)
    fix_ = inplace.inplace(E.fix)
    absolute_ = inplace.inplace(E.absolute)
    negative_ = inplace.inplace(E.negative)
    divide_ = inplace.inplace(E.divide)
    multiply_ = inplace.inplace(E.multiply)
    subtract_ = inplace.inplace(E.subtract)
    true_divide_ = inplace.inplace(E.true_divide)
    floor_divide_ = inplace.inplace(E.floor_divide)
    fmod_ = inplace.inplace(E.fmod)
    remainder_ = inplace.inplace(E.remainder)
    atan2_ = inplace.inplace(E.atan2)
    arctan2_ = inplace.inplace(E.arctan2)
    erf_ = inplace.inplace(E.erf)
    bitwise_not_ = inplace.inplace(E.bitwise_not)
    erfinv_ = inplace.inplace(E.erfinv)
    i0_ = inplace.inplace(E.i0)
    gcd_ = inplace.inplace(E.gcd)
    lcm_ = inplace.inplace(E.lcm)
    nextafter_ = inplace.inplace(E.nextafter)
    igamma_ = inplace.inplace(E.igamma)
    igammac_ = inplace.inplace(E.igammac)
    logit_ = inplace.inplace(E.logit)
    sinc_ = inplace.inplace(E.sinc)
    ldexp_ = inplace.inplace(E.ldexp)
    mvlgamma_ = inplace.inplace(E.mvlgamma)

    # ---- reductions (functions/reduce.py) -------------------------------------------------
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
    norm = NO.norm
    cumsum = R.cumsum
    cumprod = R.cumprod
    all = R.all
    any = R.any
    count_nonzero = R.count_nonzero
    renorm = R.renorm
    cumsum_ = inplace.inplace(R.cumsum)
    cumprod_ = inplace.inplace(R.cumprod)
    renorm_ = inplace.inplace(R.renorm)

    # ---- statistics (functions/stats.py) --------------------------------------------------
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

    # ---- shape and movement (functions/movement.py) ---------------------------------------
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
    unbind = M.unbind
    split = M.split
    chunk = M.chunk
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
    diff = M.diff
    repeat_interleave = M.repeat_interleave
    select = M.select
    tensor_split = M.tensor_split
    hsplit = M.hsplit
    vsplit = M.vsplit
    dsplit = M.dsplit
    rot90 = M.rot90

    # ---- linear algebra (functions/linalg.py) ---------------------------------------------
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

    # ---- sorting (functions/sort.py) ------------------------------------------------------
    sort = S.sort
    argsort = S.argsort
    msort = S.msort
    topk = S.topk
    kthvalue = S.kthvalue
    median = S.median
    nanmedian = S.nanmedian
    unique = S.unique
    unique_consecutive = S.unique_consecutive

    # ---- factorizations (functions/factor.py) ---------------------------------------------
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

    # ---- spectral decompositions (functions/spectral.py) ----------------------------------
    svd = SP.svd
    qr = SP.qr
    pinverse = SP.pinverse

    # ---- indexing (functions/index.py) ----------------------------------------------------
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
    index_put = I.index_put
    argwhere = I.argwhere
    index_fill = I.index_fill
    index_copy = I.index_copy
    masked_scatter = I.masked_scatter
    scatter_reduce = I.scatter_reduce
    select_scatter = I.select_scatter
    slice_scatter = I.slice_scatter
    diagonal_scatter = I.diagonal_scatter
    fill_diagonal_ = I.fill_diagonal_
    put = I.put
    index_reduce = I.index_reduce
    index_fill_ = inplace.inplace(I.index_fill)
    index_copy_ = inplace.inplace(I.index_copy)
    masked_scatter_ = inplace.inplace(I.masked_scatter)
    scatter_reduce_ = inplace.inplace(I.scatter_reduce)
    index_reduce_ = inplace.inplace(I.index_reduce)
    put_ = inplace.inplace(I.put)

    # ---- in-place forms with their own rules (functions/inplace.py) -----------------------------
    masked_fill_ = inplace.inplace(I.masked_fill)
    index_add_ = inplace.inplace(I.index_add)
    scatter_ = inplace.inplace(I.scatter)
    scatter_add_ = inplace.inplace(I.scatter_add)
    index_put_ = inplace.inplace(I.index_put)
    fill_ = inplace.fill_
    zero_ = inplace.zero_
    copy_ = inplace.copy_
    float_power_ = inplace.float_power_
    _assign_result = inplace.assign_result
    # comparisons and logical ops in place keep self's dtype (torch's `x.eq_(y)`)
    eq_ = inplace.inplace(inplace.keeping_dtype(E.eq))
    ne_ = inplace.inplace(inplace.keeping_dtype(E.ne))
    lt_ = inplace.inplace(inplace.keeping_dtype(E.lt))
    le_ = inplace.inplace(inplace.keeping_dtype(E.le))
    gt_ = inplace.inplace(inplace.keeping_dtype(E.gt))
    ge_ = inplace.inplace(inplace.keeping_dtype(E.ge))
    greater_equal_ = inplace.inplace(inplace.keeping_dtype(E.greater_equal))
    less_equal_ = inplace.inplace(inplace.keeping_dtype(E.less_equal))
    not_equal_ = inplace.inplace(inplace.keeping_dtype(E.not_equal))
    greater_ = inplace.inplace(inplace.keeping_dtype(E.greater))
    less_ = inplace.inplace(inplace.keeping_dtype(E.less))
    logical_and_ = inplace.inplace(inplace.keeping_dtype(E.logical_and))
    logical_or_ = inplace.inplace(inplace.keeping_dtype(E.logical_or))
    logical_xor_ = inplace.inplace(inplace.keeping_dtype(E.logical_xor))
    logical_not_ = inplace.inplace(inplace.keeping_dtype(E.logical_not))
    # in-place views: self takes the view's shape and strides
    t_ = inplace.inplace_view(M.t)
    squeeze_ = inplace.inplace_view(M.squeeze)
    unsqueeze_ = inplace.inplace_view(M.unsqueeze)
    transpose_ = inplace.inplace_view(M.transpose)
    swapaxes_ = inplace.inplace_view(M.swapaxes)
    swapdims_ = inplace.inplace_view(M.swapdims)
    as_strided_ = inplace.inplace_view(M.as_strided)

    # ---- methods whose arguments differ from the function's -------------------------------------
    to = E.to
    sum_to_size = R.sum_to_size

    def polygamma(self, n):
        return E.polygamma(n, self)     # torch's method puts n first

    polygamma_ = inplace.inplace(polygamma)

    def where(self, condition, y):
        return E.where(condition, self, y)     # x.where(c, y) keeps x where c holds

    def addcmul_(self, tensor1, tensor2, *, value=1):
        return self.add_((tensor1 * value if value != 1 else tensor1) * tensor2)

    def addcdiv_(self, tensor1, tensor2, *, value=1):
        return self.add_((tensor1 * value if value != 1 else tensor1) / tensor2)

    def split_with_sizes(self, split_sizes, dim=0):
        return M.split(self, list(split_sizes), dim)


# what Python puts in every class body (and __hash__ = None, implied by defining __eq__ here)
_CLASS_ENTRIES = {"__module__", "__qualname__", "__doc__", "__dict__", "__weakref__", "__hash__"}


def install(cls=Tensor):
    """Put every method above on `cls` (Tensor); called once, from minitorch/__init__.py."""
    for name, member in vars(TensorMethods).items():
        if name not in _CLASS_ENTRIES:
            setattr(cls, name, member)
