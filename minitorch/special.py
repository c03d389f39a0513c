"""torch.special: special functions under their torch.special names.

The ops live in minitorch.functions (elementwise: the kernels ERFINV..BESSEL_J1, ZETA, IGAMMA,
IGAMMAC, XLOG1PY and the composites; reduce: softmax, log_softmax, logsumexp); this module only
names them as torch.special does.
"""
from .functions import elementwise as _E, reduce as _R
from .functions import float_math as _float_math
from .functions import special_functions as _special_functions

__all__ = [
    'bessel_j0', 'bessel_j1', 'digamma', 'entr', 'erf', 'erfc', 'erfcx', 'erfinv', 'exp2',
    'expit', 'expm1', 'gammainc', 'gammaincc', 'gammaln', 'i0', 'i0e', 'i1', 'i1e', 'log1p',
    'log_ndtr', 'log_softmax', 'logit', 'logsumexp', 'multigammaln', 'ndtr', 'ndtri',
    'polygamma', 'psi', 'round', 'sinc', 'softmax', 'spherical_bessel_j0', 'xlog1py', 'xlogy',
    'zeta',
]

bessel_j0 = _special_functions.special_bessel_j0
bessel_j1 = _special_functions.special_bessel_j1
spherical_bessel_j0 = _special_functions.special_spherical_bessel_j0
entr = _special_functions.special_entr
erfcx = _special_functions.special_erfcx
i0e = _special_functions.special_i0e
i1 = _special_functions.special_i1
i1e = _special_functions.special_i1e
log_ndtr = _special_functions.special_log_ndtr
ndtr = _special_functions.special_ndtr
ndtri = _special_functions.special_ndtri
xlog1py = _special_functions.special_xlog1py
zeta = _special_functions.special_zeta

digamma = psi = _special_functions.digamma
erf = _E.erf
erfc = _float_math.erfc
erfinv = _special_functions.erfinv
exp2 = _float_math.exp2
expit = _E.sigmoid
expm1 = _E.expm1
gammaln = _special_functions.lgamma
i0 = _special_functions.i0
log1p = _E.log1p
logit = _special_functions.logit
polygamma = _special_functions.polygamma
sinc = _special_functions.sinc
xlogy = _float_math.xlogy
logsumexp = _R.logsumexp


def _check_tensors(name, input, other):
    """torch.special's binary functions without number overloads name themselves in errors."""
    _E._check_tensor(input, name)
    _E._check_tensor(other, name, 2, "other")


def gammainc(input, other):
    """The regularized lower incomplete gamma function P(input, other) (torch.igamma)."""
    _check_tensors("special_gammainc", input, other)
    return _special_functions.igamma(input, other)


def gammaincc(input, other):
    """The regularized upper incomplete gamma function Q(input, other) (torch.igammac)."""
    _check_tensors("special_gammaincc", input, other)
    return _special_functions.igammac(input, other)


def multigammaln(input, p):
    """Multivariate log-gamma function of dimension p, elementwise
    (torch.special.multigammaln)."""
    return _special_functions.mvlgamma(input, p)


def round(input, *, decimals=0):
    """Elementwise round half to even, to decimals digits (torch.special.round)."""
    return _E.round(input, decimals)


def softmax(input, dim, *, dtype=None):
    """Softmax along dim, optionally in dtype (torch.special.softmax)."""
    return _R.softmax(input, dim, dtype)


def log_softmax(input, dim, *, dtype=None):
    """Log-softmax along dim, optionally in dtype (torch.special.log_softmax)."""
    return _R.log_softmax(input, dim, dtype)
