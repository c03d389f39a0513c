"""torch.special: special functions under their torch.special names.

The ops live in minitorch.functions (elementwise: the kernels ERFINV..BESSEL_J1, ZETA, IGAMMA,
IGAMMAC, XLOG1PY and the composites; reduce: softmax, log_softmax, logsumexp); this module only
names them as torch.special does.
"""
from .functions import elementwise as _E, reduce as _R
from .functions._new_op_example import special_spherical_bessel_j0 as spherical_bessel_j0

__all__ = [
    'bessel_j0', 'bessel_j1', 'digamma', 'entr', 'erf', 'erfc', 'erfcx', 'erfinv', 'exp2',
    'expit', 'expm1', 'gammainc', 'gammaincc', 'gammaln', 'i0', 'i0e', 'i1', 'i1e', 'log1p',
    'log_ndtr', 'log_softmax', 'logit', 'logsumexp', 'multigammaln', 'ndtr', 'ndtri',
    'polygamma', 'psi', 'round', 'sinc', 'softmax', 'spherical_bessel_j0', 'xlog1py', 'xlogy',
    'zeta',
]

bessel_j0 = _E.special_bessel_j0
bessel_j1 = _E.special_bessel_j1
entr = _E.special_entr
erfcx = _E.special_erfcx
i0e = _E.special_i0e
i1 = _E.special_i1
i1e = _E.special_i1e
log_ndtr = _E.special_log_ndtr
ndtr = _E.special_ndtr
ndtri = _E.special_ndtri
xlog1py = _E.special_xlog1py
zeta = _E.special_zeta

digamma = psi = _E.digamma
erf = _E.erf
erfc = _E.erfc
erfinv = _E.erfinv
exp2 = _E.exp2
expit = _E.sigmoid
expm1 = _E.expm1
gammaln = _E.lgamma
i0 = _E.i0
log1p = _E.log1p
logit = _E.logit
polygamma = _E.polygamma
sinc = _E.sinc
xlogy = _E.xlogy
logsumexp = _R.logsumexp


def _check_tensors(name, input, other):
    """torch.special's binary functions without number overloads name themselves in errors."""
    _E._check_tensor(input, name)
    _E._check_tensor(other, name, 2, "other")


def gammainc(input, other):
    """The regularized lower incomplete gamma function P(input, other) (torch.igamma)."""
    _check_tensors("special_gammainc", input, other)
    return _E.igamma(input, other)


def gammaincc(input, other):
    """The regularized upper incomplete gamma function Q(input, other) (torch.igammac)."""
    _check_tensors("special_gammaincc", input, other)
    return _E.igammac(input, other)


def multigammaln(input, p):
    return _E.mvlgamma(input, p)


def round(input, *, decimals=0):
    return _E.round(input, decimals)


def softmax(input, dim, *, dtype=None):
    return _R.softmax(input, dim, dtype)


def log_softmax(input, dim, *, dtype=None):
    return _R.log_softmax(input, dim, dtype)
