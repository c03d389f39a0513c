"""Spectral linear algebra on the spectral kernels (minitorch/_cpu/spectral.pyx, kernels/
spectral.cu): torch.linalg's eigh, eigvalsh, svd, svdvals, qr, pinv, matrix_rank, lstsq and cond,
the older torch.svd / torch.qr / torch.pinverse, and the spectral matrix norms ('nuc', 2, -2).

Eigenvectors and singular vectors are unique only up to sign (and within repeated values), so
they may differ from torch's by such a change of basis; eigenvalues, singular values, Q and R
(LAPACK's Householder convention) match. eigh, svd and qr are autograd Functions with torch's
backward formulas (FunctionsManual.cpp) written in Tensor ops, so they differentiate twice; the
rest is composed of them.
"""
import functools
import math

import numpy as np

from .. import dtypes
from ..autograd import KernelFunction, is_grad_enabled
from ..ndarray import NDArray
from ..opcodes import BinaryOp as B, ReduceOp, UnaryOp as U
from ..tensor import Tensor, eye, tensor, wrap, write_out
from .elementwise import TORCH_NAMES, maximum, where
from .factor import LinAlgError, refuse_low_precision, solve_triangular
from .linalg import diag_embed, triu
from .joining import cat
from .reduce import _return_type


__all__ = ['geqrf', 'orgqr', 'pinverse', 'qr', 'svd']


def _result_type(name, fields):
    """torch.return_types.<name> (found by pickle in this module)."""
    cls = _return_type(name, fields)
    cls.__module__ = __name__
    return cls


_Linalg_eighResult = _result_type("linalg_eigh", ("eigenvalues", "eigenvectors"))
_Linalg_svdResult = _result_type("linalg_svd", ("U", "S", "Vh"))
_SvdResult = _result_type("svd", ("U", "S", "V"))
_Linalg_qrResult = _result_type("linalg_qr", ("Q", "R"))
_QrResult = _result_type("qr", ("Q", "R"))
_Linalg_lstsqResult = _result_type("linalg_lstsq",
                                   ("solution", "residuals", "rank", "singular_values"))

_EPS = {"float32": float(np.finfo(np.float32).eps), "float64": float(np.finfo(np.float64).eps)}


# ---- argument checks --------------------------------------------------------------------------
def _check_matrix(name, A, label="A"):
    if A.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor {label} must have at least 2 dimensions.")


def refuse_complex(name, A):
    """These decompositions' kernels (Jacobi, Householder) are real: a complex matrix is
    refused as not implemented, not as a wrong type (torch takes it)."""
    if A.dtype.is_complex:
        raise NotImplementedError(
            f"{name}: complex matrices are not implemented in minitorch (its eigh, SVD and QR "
            "kernels are real; eig, eigvals, det, slogdet, solve, inv, the LU and Cholesky "
            f"functions take them), got {TORCH_NAMES[A.dtype.name]}")


def _check_float(name, A):
    refuse_complex(name, A)
    if not A.dtype.is_floating_point:
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got "
                           f"{TORCH_NAMES[A.dtype.name]}")


def _check_square(name, A):
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")


def _check_uplo(UPLO):
    if not isinstance(UPLO, str) or UPLO.upper() not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return UPLO.upper()


def _check_eigh_input(A):
    _check_matrix("linalg.eigh", A)
    _check_square("linalg.eigh", A)
    refuse_complex("linalg.eigh", A)
    if not A.dtype.is_floating_point:
        raise NotImplementedError(f'"linalg_eigh_{A.device.type}" not implemented for '
                                  f"'{TORCH_NAMES[A.dtype.name]}'")


def _check_svd_input(A):
    _check_matrix("linalg.svd", A)
    _check_float("linalg.svd", A)


def _qr_mode(mode):
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of "
                           "'reduced' (default), 'r', or 'complete'")
    return mode


# ---- kernel calls on NDArrays (no autograd) ---------------------------------------------------
def _batch(nd):
    """(batch shape, number of matrices) of a (..., m, n) array."""
    shape = nd.shape[:-2]
    return shape, math.prod(shape)


def _raise_on_info(info, name, message):
    """torch's error for the first matrix whose kernel reported failure (one host copy);
    `message` is one text, or {code: text}."""
    codes = info.numpy().reshape(-1)
    failed = np.flatnonzero(codes)
    if failed.size:
        batch = f"(Batch element {failed[0]}): " if info.ndim else ""
        text = message[int(codes[failed[0]])] if isinstance(message, dict) else message
        raise LinAlgError(f"{name}: {batch}{text}")


NON_FINITE = 2          # an info code of our own: the matrix held NaN or infinity


def _scaled(nd):
    """(nd / s, s, finite): every matrix divided by its largest magnitude s (1 for a zero or a
    non-finite matrix), so that the kernels' squares neither overflow nor underflow (LAPACK
    scales the same way); s and `finite` (whether s is) have nd's batch shape and two
    trailing 1s."""
    dims = (nd.ndim - 2, nd.ndim - 1)
    one = NDArray.full((), 1, nd.dtype, nd.device)
    if not nd.size:
        return nd.copy(), one.expand(nd.shape[:-2] + (1, 1)), one.binary(B.EQ, one)
    largest = nd.unary(U.ABS).reduce(ReduceOp.MAX, dims, True)
    finite = largest.unary(U.ISFINITE)
    usable = finite.binary(B.LOGICAL_AND, largest.binary(B.NE, one.binary(B.SUB, one)))
    scale = usable.where(largest, one)
    return nd.binary(B.DIV, scale), scale, finite


def _eigh_arrays(nd):
    """(eigenvalues ascending, eigenvectors in columns) of the symmetric matrices whose lower
    triangles nd holds."""
    refuse_low_precision(nd, "linalg_eigh")
    batch_shape, batch = _batch(nd)
    n = nd.shape[-1]
    work, scale, _ = _scaled(nd)
    values, vectors = work._new(batch_shape + (n,)), work._new(nd.shape)
    info = work._new(batch_shape, dtypes.int64)
    if work.size:
        nd.backend.eigh_jacobi(work.flat(), values.buffer, vectors.buffer, info.buffer, batch, n)
        _raise_on_info(info, "linalg.eigh", "The algorithm failed to converge because the "
                       "input matrix is ill-conditioned or has too many repeated eigenvalues "
                       "(error code: 1).")
    return values.binary(B.MUL, scale.squeeze((nd.ndim - 1,))), vectors


def _svd_arrays(nd):
    """(U (..., m, k), S (..., k) descending, Vh (..., k, n)), k = min(m, n). The kernel wants
    m >= n: a wide matrix is decomposed transposed, A^T = U' S V'^T, so U = V', Vh = U'^T."""
    refuse_low_precision(nd, "linalg_svd")
    m, n = nd.shape[-2:]
    if m < n:
        u, s, vh = _svd_arrays(nd.transpose(-2, -1))
        return vh.transpose(-2, -1), s, u.transpose(-2, -1)
    batch_shape, batch = _batch(nd)
    u, scale, finite = _scaled(nd)
    s, v = u._new(batch_shape + (n,)), u._new(batch_shape + (n, n))
    info = u._new(batch_shape, dtypes.int64)
    if batch and n:
        nd.backend.svd_jacobi(u.flat(), s.buffer, v.buffer, info.buffer, batch, m, n)
        info = finite.squeeze((nd.ndim - 2, nd.ndim - 1)).where(
            info, NDArray.full((), NON_FINITE, dtypes.int64, nd.device))
        _raise_on_info(info, "linalg.svd", {
            1: "The algorithm failed to converge because the input matrix is ill-conditioned "
               "or has too many repeated singular values (error code: 1).",
            NON_FINITE: "The algorithm failed to converge because the input matrix contained "
                        "non-finite values."})
    return u, s.binary(B.MUL, scale.squeeze((nd.ndim - 1,))), v.transpose(-2, -1)


def _householder(nd):
    """(a with R / s on and above the diagonal and the reflectors below, tau, s) of nd's
    matrices, decomposed scaled by their largest magnitudes s (see _scaled): the reflectors
    and Q do not depend on the scale."""
    refuse_low_precision(nd, "geqrf")
    batch_shape, batch = _batch(nd)
    m, n = nd.shape[-2:]
    work, scale, _ = _scaled(nd)
    tau = work._new(batch_shape + (min(m, n),))
    if work.size:
        nd.backend.qr_householder(work.flat(), tau.buffer, batch, m, n)
    return work, tau, scale


def _form_q(work, tau, cols):
    """The first cols columns of Q from _householder's output."""
    batch_shape, batch = _batch(work)
    m, n = work.shape[-2:]
    q = work._new(batch_shape + (m, cols))
    if q.size:
        work.backend.qr_form_q(work.flat(), tau.buffer, q.buffer, batch, m, n, cols)
    return q


_GeqrfResult = _result_type("geqrf", ("a", "tau"))


def geqrf(input):
    """LAPACK's geqrf: (a, tau) with R on and above a's diagonal and the Householder vectors
    below it (their leading 1 implied), H_i = I - tau_i v_i v_iᵀ. Not differentiable (torch's
    is not either)."""
    _check_matrix("geqrf", input)
    _check_float("geqrf", input)
    work, tau, scale = _householder(input.detach()._data)
    a = wrap(work)
    return _GeqrfResult(triu(a) * wrap(scale) + a.tril(-1), wrap(tau))


def _qr_arrays(nd, mode):
    """(Q, R) of torch.linalg.qr for `mode` (Q is an empty (0,) array when mode='r')."""
    m, n = nd.shape[-2:]
    k = min(m, n)
    work, tau, scale = _householder(nd)
    rows = m if mode == "complete" else k
    r = triu(wrap(work[(slice(None),) * (work.ndim - 2) + (slice(0, rows),)]))._data
    r = r.binary(B.MUL, scale)
    if mode == "r":
        return work._new((0,)), r
    return _form_q(work, tau, m if mode == "complete" else k), r


def _complement(nd):
    """An orthonormal basis (..., m, m - k) of the complement of the orthonormal columns of nd
    (..., m, k): the last columns of the complete Q of nd's QR."""
    m, k = nd.shape[-2:]
    work, tau, _ = _householder(nd)
    return _form_q(work, tau, m)[..., :, k:]


# ---- autograd Functions -----------------------------------------------------------------------
def _skew(X):
    return X - X.mT


def _off_diagonal_ratio(numerator, differences):
    """numerator / differences off the diagonal, 0 on it (differences has a zero diagonal)."""
    n = differences.shape[-1]
    return numerator / (differences + eye(n, dtype=differences.dtype, device=differences.device))


class LinalgEigh(KernelFunction):
    """(eigenvalues, eigenvectors) of symmetric matrices; torch's linalg_eig_backward for the
    Hermitian case."""
    materialize_grads = False

    @classmethod
    def name(cls):
        return "LinalgEighBackward0"

    @staticmethod
    def forward(ctx, A, uplo):
        nd = A._data
        # the kernel reads the lower triangle; the upper one of A is the lower one of A^T
        values, vectors = _eigh_arrays(nd if uplo == "L" else nd.transpose(-2, -1))
        values, vectors = wrap(values), wrap(vectors)
        ctx.save_for_backward(values, vectors)
        return values, vectors

    @staticmethod
    def backward(ctx, gL, gV):
        L, V = ctx.saved_tensors
        if gV is None:
            if gL is None:
                return None, None
            return (V * gL.unsqueeze(-2)) @ V.mT, None
        # gA = V (skew(V^T gV) / 2 / E + diag(gL)) V^T, E_ij = L_j - L_i
        inner = _off_diagonal_ratio(0.5 * _skew(V.mT @ gV), L.unsqueeze(-2) - L.unsqueeze(-1))
        if gL is not None:
            inner = inner + diag_embed(gL)
        return V @ (inner @ V.mT), None


class LinalgSvd(KernelFunction):
    """The reduced (U, S, Vh); torch's svd_backward (the columns a full U or Vh adds carry no
    gradient, as in torch)."""
    materialize_grads = False

    @classmethod
    def name(cls):
        return "LinalgSvdBackward0"

    @staticmethod
    def forward(ctx, A):
        U, S, Vh = (wrap(x) for x in _svd_arrays(A._data))
        ctx.save_for_backward(U, S, Vh)
        return U, S, Vh

    @staticmethod
    def backward(ctx, gU, gS, gVh):
        U, S, Vh = ctx.saved_tensors
        m, n = U.shape[-2], Vh.shape[-1]
        if gU is None and gVh is None:
            if gS is None:
                return None
            return U @ (gS.unsqueeze(-1) * Vh) if m >= n else (U * gS.unsqueeze(-2)) @ Vh
        return _svd_backward(gU, gS, gVh, U, S, Vh)


def _svd_backward(gU, gS, gVh, U, S, Vh):
    """torch's svd_backward (real case) when gU or gVh is given."""
    m, n = U.shape[-2], Vh.shape[-1]
    S2 = S * S
    E = S2.unsqueeze(-2) - S2.unsqueeze(-1)
    if gU is not None and gVh is not None:
        inner = _off_diagonal_ratio(_skew(U.mT @ gU) * S.unsqueeze(-2)
                                    + S.unsqueeze(-1) * _skew(Vh @ gVh.mT), E)
    elif gU is not None:
        inner = _skew(U.mT @ gU) * _off_diagonal_ratio(S.unsqueeze(-2), E)
    else:
        inner = S.unsqueeze(-1) * _off_diagonal_ratio(_skew(Vh @ gVh.mT), E)
    if gS is not None:
        inner = inner + diag_embed(gS)
    if m > n and gU is not None:
        # + (I - U U^T) gU S^-1, then times V^T
        gU_Sinv = gU / S.unsqueeze(-2)
        return (U @ inner + gU_Sinv - U @ (U.mT @ gU_Sinv)) @ Vh
    if m < n and gVh is not None:
        Sinv_gVh = gVh / S.unsqueeze(-1)
        return U @ (inner @ Vh + Sinv_gVh - (Sinv_gVh @ Vh.mT) @ Vh)
    return U @ (inner @ Vh)


class LinalgQr(KernelFunction):
    """(Q, R) of torch.linalg.qr; torch's linalg_qr_backward for m >= n (qr() composes the
    m < n case from a square QR, which is how torch's formula reads too)."""
    materialize_grads = False

    @classmethod
    def name(cls):
        return "LinalgQrBackward0"

    @staticmethod
    def forward(ctx, A, mode):
        Q, R = (wrap(x) for x in _qr_arrays(A._data, mode))
        ctx.mode, ctx.m, ctx.n = mode, A.shape[-2], A.shape[-1]
        ctx.save_for_backward(Q, R)
        return Q, R

    @staticmethod
    def backward(ctx, gQ, gR):
        if ctx.mode == "r":
            raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed "
                               "when mode='r'. Please use linalg.qr(A, mode='reduced') if you "
                               "are going to differentiate through linalg.qr.")
        if ctx.mode == "complete" and ctx.m > ctx.n:
            raise RuntimeError("The QR decomposition is not differentiable when "
                               "mode='complete' and nrows > ncols.")
        if gQ is None and gR is None:
            return None, None
        Q, R = ctx.saved_tensors
        # gA = (gQ + Q copyltu(M)) R^-T, M = R gR^T - gQ^T Q, copyltu(M) the symmetric matrix
        # with M's lower triangle (Walter & Lehmann; what torch's formula amounts to)
        if gR is None:
            M = -(gQ.mT @ Q)
        else:
            M = R @ gR.mT if gQ is None else R @ gR.mT - gQ.mT @ Q
        gA = Q @ (M.tril() + M.tril(-1).mT)
        if gQ is not None:
            gA = gA + gQ
        return _times_inverse_transpose(gA, R), None


def _times_inverse_transpose(B, R):
    """B R^-T for upper triangular R: X R^T = B, one triangular-solve kernel (differentiable
    again through solve_triangular's backward)."""
    return solve_triangular(R.mT, B, upper=False, left=False)


# ---- eigh, eigvalsh ---------------------------------------------------------------------------
def _writes_out(name):
    """torch's out= for a function computed without it: the result (a tensor, or a named tuple
    of tensors written one by one into a tuple `out`) written into `out` with write_out's
    rules, and out returned (as the same named tuple)."""
    def decorate(function):
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            out = kwargs.pop("out", None)
            result = function(*args, **kwargs)
            if out is None:
                return result
            if isinstance(result, tuple):
                if not isinstance(out, (tuple, list)) or len(out) != len(result):
                    raise TypeError(f"{name}(): argument 'out' must be tuple of "
                                    f"{len(result)} Tensors, not {type(out).__name__}")
                return type(result)(*(write_out(o, r, name) for o, r in zip(out, result)))
            return write_out(out, result, name)
        return wrapper
    return decorate


@_writes_out("linalg_eigh")
def eigh(A, UPLO="L", *, out=None):
    """(eigenvalues ascending, eigenvectors in columns) of symmetric matrices, read from the
    lower triangle (UPLO='L') or the upper one ('U')."""
    _check_eigh_input(A)
    uplo = _check_uplo(UPLO)
    return _Linalg_eighResult(*LinalgEigh.apply(A, uplo))


@_writes_out("linalg_eigvalsh")
def eigvalsh(A, UPLO="L", *, out=None):
    """The eigenvalues (ascending) of symmetric matrices."""
    _check_eigh_input(A)
    uplo = _check_uplo(UPLO)
    if is_grad_enabled() and A.requires_grad:
        return LinalgEigh.apply(A, uplo)[0]
    return wrap(_eigh_arrays(A._data if uplo == "L" else A._data.transpose(-2, -1))[0])


# ---- svd, svdvals -----------------------------------------------------------------------------
def _check_driver(A, driver):
    if driver is None:
        return
    if A.device.type != "cuda":
        raise RuntimeError("torch.linalg.svd: keyword argument `driver=` is only supported on "
                           "CUDA inputs with cuSOLVER backend.")
    if driver not in ("gesvd", "gesvdj", "gesvda"):
        raise RuntimeError("torch.linalg.svd: driver must be one of gesvd, gesvdj, gesvda, but "
                           f"got {driver}")


def _full_basis(factor, rows_first):
    """U (..., m, k) or Vh (..., k, n) extended to a square orthogonal matrix by the complement
    of its columns (rows for Vh); the added part carries no gradient, as in torch."""
    cols = factor if rows_first else factor.mT
    if cols.shape[-2] == cols.shape[-1]:
        return factor
    extra = wrap(_complement(cols._data))
    return cat([factor, extra], -1) if rows_first else cat([factor, extra.mT], -2)


@_writes_out("linalg_svd")
def linalg_svd(A, full_matrices=True, *, driver=None, out=None):
    """torch.linalg.svd: (U, S descending, Vh) with A = U diag(S) Vh; U and Vh square when
    full_matrices."""
    _check_svd_input(A)
    _check_driver(A, driver)
    U, S, Vh = LinalgSvd.apply(A)
    if full_matrices:
        U, Vh = _full_basis(U, True), _full_basis(Vh, False)
    return _Linalg_svdResult(U, S, Vh)


@_writes_out("linalg_svdvals")
def svdvals(A, *, driver=None, out=None):
    """The singular values of A, descending."""
    _check_svd_input(A)
    _check_driver(A, driver)
    if is_grad_enabled() and A.requires_grad:
        return LinalgSvd.apply(A)[1]
    return wrap(_svd_arrays(A._data)[1])


@_writes_out("svd")
def svd(input, some=True, compute_uv=True, *, out=None):
    """torch.svd: (U, S, V) with input = U diag(S) V^T (V, not Vh); U and V square unless
    `some`; zero-filled square U and V when not compute_uv."""
    if input.ndim < 2:
        raise RuntimeError(f"linalg.svd: input should have at least 2 dimensions, but has "
                           f"{input.ndim} dimensions instead")
    _check_float("linalg.svd", input)
    m, n = input.shape[-2:]
    if not compute_uv:
        batch = tuple(input.shape[:-2])
        zeros = [wrap(NDArray.full(batch + (k, k), 0, input.dtype, input.device)) for k in (m, n)]
        return _SvdResult(zeros[0], svdvals(input), zeros[1])
    U, S, Vh = linalg_svd(input, full_matrices=not some)
    return _SvdResult(U, S, Vh.mT)


# ---- qr ---------------------------------------------------------------------------------------
@_writes_out("linalg_qr")
def linalg_qr(A, mode="reduced", *, out=None):
    """torch.linalg.qr: (Q, R) with A = Q R, Householder's (R's diagonal may be negative, as in
    LAPACK); mode 'reduced', 'complete' or 'r' (Q then empty)."""
    _check_matrix("linalg.qr", A)
    _check_float("linalg.qr", A)
    _qr_mode(mode)
    m, n = A.shape[-2:]
    if m < n and mode != "r" and is_grad_enabled() and A.requires_grad:
        # A = Q [R1 | Q^T A2] with Q R1 the QR of the square left block: differentiable
        Q, R1 = LinalgQr.apply(A[..., :, :m], mode)
        return _Linalg_qrResult(Q, cat([R1, Q.mT @ A[..., :, m:]], -1))
    return _Linalg_qrResult(*LinalgQr.apply(A, mode))


@_writes_out("qr")
def qr(input, some=True, *, out=None):
    """torch.qr: linalg.qr with mode 'reduced' (some) or 'complete'."""
    return _QrResult(*linalg_qr(input, "reduced" if some else "complete"))


# ---- tolerances: pinv, matrix_rank ------------------------------------------------------------
def _as_tensor(value, like):
    """value (a number or a tensor) as a tensor on like's device: like torch's 0-d CPU
    tensors, CPU tolerances serve CUDA inputs."""
    if isinstance(value, Tensor):
        return value if value.device == like.device else value.to(like.device)
    return wrap(NDArray.full((), value, like.dtype, like.device))


def _cutoff(A, largest, atol, rtol):
    """max(atol, rtol * largest) with torch's defaults: atol 0, rtol eps * max(m, n), or 0 when
    a positive atol is given. Tensor tolerances hold one value per matrix."""
    default_rtol = _EPS[A.dtype.name] * max(A.shape[-2:])
    if rtol is None:
        if atol is None:
            rtol = default_rtol
        elif isinstance(atol, Tensor):
            rtol = where(atol > 0, _as_tensor(0.0, atol), _as_tensor(default_rtol, atol))
        else:
            rtol = 0.0 if atol > 0 else default_rtol
    atol = _as_tensor(0.0 if atol is None else atol, largest)
    rtol = _as_tensor(rtol, largest)
    return maximum(atol.unsqueeze(-1), rtol.unsqueeze(-1) * largest)


def _spectrum(A, hermitian):
    """(values whose size decides rank, the largest of them (..., 1)): singular values, or the
    absolute eigenvalues of a symmetric A."""
    if hermitian:
        values = eigvalsh(A).abs()
        return values, values.amax(-1, keepdim=True)
    values = svdvals(A)
    return values, values[..., :1]


def _check_pinv_input(A):
    refuse_complex("linalg.pinv", A)
    if not A.dtype.is_floating_point or A.ndim < 2:
        shape = "[" + ", ".join(str(s) for s in A.shape) + "]"
        raise RuntimeError(f"linalg.pinv({TORCH_NAMES[A.dtype.name]}{{{shape}}}): expected a "
                           "tensor with 2 or more dimensions of float, double, cfloat or cdouble "
                           "types")


@_writes_out("linalg_pinv")
def pinv(A, rcond=None, hermitian=False, *, atol=None, rtol=None, out=None):
    """The pseudo-inverse: V diag(1/S) U^T over the singular values above max(atol, rtol *
    S_max) (an eigendecomposition when hermitian). A positional rcond is rtol with atol 0."""
    _check_pinv_input(A)
    if rcond is not None:
        atol, rtol = 0.0, rcond
    if hermitian:
        _check_eigh_input(A)
        values, vectors = eigh(A)
        magnitude = values.abs()
        keep = magnitude > _cutoff(A, magnitude.amax(-1, keepdim=True), atol, rtol)
        inverse = where(keep, values.reciprocal(), _as_tensor(0.0, values))
        return (vectors * inverse.unsqueeze(-2)) @ vectors.mT
    U, S, Vh = linalg_svd(A, full_matrices=False)
    if S.shape[-1] == 0:
        return Vh.mT @ U.mT
    keep = S > _cutoff(A, S[..., :1], atol, rtol)
    inverse = where(keep, S.reciprocal(), _as_tensor(0.0, S))
    return (Vh.mT * inverse.unsqueeze(-2)) @ U.mT


def pinverse(input, rcond=1e-15):
    """torch.pinverse: linalg.pinv with rtol=rcond."""
    return pinv(input, rtol=rcond, atol=0.0)


@_writes_out("linalg_matrix_rank")
def matrix_rank(A, tol=None, hermitian=False, *, atol=None, rtol=None, out=None):
    """The number of singular values (absolute eigenvalues when hermitian) above max(atol,
    rtol * the largest), int64. A positional tol is atol with rtol 0."""
    if A.ndim < 2:
        raise RuntimeError("torch.linalg.matrix_rank: The input tensor input must have at least "
                           "2 dimensions.")
    refuse_complex("linalg.matrix_rank", A)
    if not A.dtype.is_floating_point:
        raise RuntimeError("This function doesn't handle types other than float and double")
    if tol is not None:
        atol, rtol = tol, 0.0
    if hermitian:
        _check_eigh_input(A)
    if A.numel() == 0:
        return wrap(NDArray.full(tuple(A.shape[:-2]), 0, dtypes.int64, A.device))
    values, largest = _spectrum(A.detach(), hermitian)
    return (values > _cutoff(A, largest, atol, rtol)).sum(-1)


# ---- lstsq ------------------------------------------------------------------------------------
_LSTSQ_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def _check_lstsq(A, B, driver):
    if A.ndim < 2:
        raise RuntimeError("torch.linalg.lstsq: input must have at least 2 dimensions.")
    if B.ndim < 1:
        raise RuntimeError("torch.linalg.lstsq: other must have at least 1 dimension.")
    if A.dtype is not B.dtype:
        raise RuntimeError("torch.linalg.lstsq: Expected input and other to have the same "
                           f"dtype, but got input's dtype {TORCH_NAMES[A.dtype.name]} and "
                           f"other's dtype {TORCH_NAMES[B.dtype.name]}")
    refuse_complex("linalg.lstsq", A)
    if not A.dtype.is_floating_point:
        raise RuntimeError("This function doesn't handle types other than float and double")
    if A.ndim - B.ndim not in (0, 1):
        raise RuntimeError("torch.linalg.lstsq: input.dim() must be greater or equal to "
                           "other.dim() and (input.dim() - other.dim()) <= 1")
    vector = A.ndim - B.ndim == 1
    if A.shape[-2] != B.shape[-1 if vector else -2]:
        which = "other.size(-1)" if vector else "other.size(-2)"
        raise RuntimeError(f"torch.linalg.lstsq: input.size(-2) should match {which}")
    if A.device.type == "cuda":
        if driver not in (None, "gels"):
            raise RuntimeError("torch.linalg.lstsq: `driver` other than `gels` is not supported "
                               "on CUDA")
        return "gels", vector
    if driver is None:
        return "gelsy", vector
    if driver not in _LSTSQ_DRIVERS:
        raise RuntimeError("torch.linalg.lstsq: parameter `driver` should be one of (gels, "
                           "gelsy, gelsd, gelss)")
    return driver, vector


def lstsq(A, B, rcond=None, *, driver=None):
    """(solution, residuals, rank, singular_values) of min |A X - B|, torch's fields per
    driver (default gelsy on the CPU, gels on CUDA). Every driver solves through the SVD with
    singular values below rcond * S_max (default eps * max(m, n)) dropped: the minimum-norm
    solution, where gelsy's would be a basic one for a rank-deficient A (a deviation)."""
    driver, vector = _check_lstsq(A, B, driver)
    if vector:
        B = B.unsqueeze(-1)
    m, n = A.shape[-2:]
    rcond = _EPS[A.dtype.name] * max(m, n) if rcond is None else rcond
    U, S, Vh = linalg_svd(A, full_matrices=False)
    if S.shape[-1]:
        keep = S > rcond * S[..., :1]
        inverse = where(keep, S.reciprocal(), _as_tensor(0.0, S))
        X = (Vh.mT * inverse.unsqueeze(-2)) @ (U.mT @ B)
        rank = keep.sum(-1)
    else:
        X = (Vh.mT @ (U.mT @ B))
        rank = wrap(NDArray.full(tuple(S.shape[:-1]), 0, dtypes.int64, A.device))
    nothing = wrap(NDArray.empty((0,), A.dtype, A.device))
    residuals = nothing
    full_rank = driver == "gels" or bool((rank == n).all().item())
    if m > n and driver != "gelsy" and full_rank:
        residuals = ((A @ X - B) ** 2).sum(-2)
    return _Linalg_lstsqResult(
        X.squeeze(-1) if vector else X, residuals,
        wrap(NDArray.empty((0,), dtypes.int64, A.device)) if driver == "gels" else rank,
        S if driver in ("gelsd", "gelss") else nothing)


# ---- cond and the spectral matrix norms -------------------------------------------------------
_COND_NORMS = (None, 2, -2, "fro", "nuc", math.inf, -math.inf, 1, -1)


@_writes_out("linalg_cond")
def cond(A, p=None, *, out=None):
    """The condition number |A|_p |A^-1|_p: S_max / S_min for p None or 2 (S_min / S_max for
    -2), from the singular values for 'fro' and 'nuc', through the SVD inverse for 1, -1, inf,
    -inf (square A; inf for a singular one, as in torch)."""
    if A.ndim < 2:
        raise RuntimeError("linalg.cond: The input tensor must have at least 2 dimensions.")
    if not _is_cond_norm(p):
        raise RuntimeError(f"linalg.cond got an invalid norm type: {p}")
    if p not in (None, 2, -2):
        _check_square(f"linalg.cond(ord={_norm_name(p)})", A)
    _check_svd_input(A)
    if A.numel() == 0:
        return wrap(NDArray.full(tuple(A.shape[:-2]), 0, A.dtype, A.device))
    if p in (None, 2, -2):
        S = svdvals(A)
        ratio = S[..., 0] / S[..., -1]
        return ratio.reciprocal() if p == -2 else ratio
    U, S, Vh = linalg_svd(A, full_matrices=False)
    if p in ("fro", "nuc"):
        power = 2 if p == "fro" else 1
        norms = [(S ** power).sum(-1), (S ** -power).sum(-1)]
        norms = [x.sqrt() for x in norms] if p == "fro" else norms
        return norms[0] * norms[1]
    inverse = (Vh.mT * S.reciprocal().unsqueeze(-2)) @ U.mT
    result = _entrywise_norm(A, p) * _entrywise_norm(inverse, p)
    return where(S[..., -1] == 0, _as_tensor(math.inf, result), result)


def _is_cond_norm(p):
    if p is None or isinstance(p, str):
        return p in (None, "fro", "nuc")
    return isinstance(p, (int, float)) and not isinstance(p, bool) and p in _COND_NORMS


def _norm_name(p):
    return {math.inf: "inf", -math.inf: "-inf"}.get(p, p)


def _entrywise_norm(A, p):
    """The 1 / inf matrix norms (and -1 / -inf): extreme absolute column / row sums."""
    sums = A.abs().sum(-2 if abs(p) == 1 else -1)
    return sums.amax(-1) if p > 0 else sums.amin(-1)


def matrix_norm_spectral(A, ord, dim=(-2, -1), keepdim=False):
    """linalg.matrix_norm for ord 'nuc' (sum of the singular values), 2 (the largest) or -2
    (the smallest) over the two dims `dim` (the caller has checked A, ord and dim)."""
    d0, d1 = (d % A.ndim for d in dim)
    order = [d for d in range(A.ndim) if d not in (d0, d1)] + [d0, d1]
    S = svdvals(A.permute(order))
    result = S.sum(-1) if ord == "nuc" else S.amax(-1) if ord == 2 else S.amin(-1)
    if keepdim:
        for d in sorted((d0, d1)):
            result = result.unsqueeze(d)
    return result


def householder_product(A, tau, *, out=None):
    """The first n columns of H_1 ⋯ H_k with H_i = I - τ_i v_i v_iᴴ, v_i being column i of A
    below the diagonal after a 1 (LAPACK's orgqr: geqrf's Q from its reflectors); batched,
    real or complex, differentiable in A and tau through the products."""
    name = "torch.linalg.householder_product"
    if A.ndim < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    if tau.ndim < 1:
        raise RuntimeError(f"{name}: tau must have at least 1 dimension.")
    m, n = A.shape[-2:]
    if m < n:
        raise RuntimeError(f"{name}: input.shape[-2] must be greater than or equal to "
                           "input.shape[-1]")
    k = tau.shape[-1]
    if n < k:
        raise RuntimeError(f"{name}: input.shape[-1] must be greater than or equal to "
                           "tau.shape[-1]")
    if tuple(tau.shape[:-1]) != tuple(A.shape[:-2]):
        raise RuntimeError(f"{name}: Expected batch dimensions of tau to be equal to "
                           f"input.shape[:-2], but got {list(tau.shape[:-1])}")
    if tau.dtype is not A.dtype:
        raise RuntimeError(f"{name}: tau dtype {TORCH_NAMES[tau.dtype.name]} does not match "
                           f"input dtype {TORCH_NAMES[A.dtype.name]}")
    batch = tuple(A.shape[:-2])
    Q = eye(m, n, dtype=A.dtype, device=A.device).expand(batch + (m, n))
    for i in reversed(range(k)):     # Q = H_1 (H_2 (⋯ (H_k I))): the last reflector first
        head = tensor([0.0] * i + [1.0], dtype=A.dtype, device=A.device).expand(
            batch + (i + 1,))
        v = cat([head, A[..., i + 1:, i]], -1).unsqueeze(-1)          # (..., m, 1)
        w = v.mT.conj() @ Q                                                     # (..., 1, n)
        Q = Q - (tau[..., i].unsqueeze(-1).unsqueeze(-1) * v) @ w
    return Q if out is None else write_out(out, Q, "linalg.householder_product")



def orgqr(input, tau):
    """torch.orgqr: linalg.householder_product."""
    return householder_product(input, tau)


LINALG = {"eigh": eigh, "eigvalsh": eigvalsh, "svd": linalg_svd, "svdvals": svdvals,
          "qr": linalg_qr, "pinv": pinv, "matrix_rank": matrix_rank, "lstsq": lstsq,
          "cond": cond, "householder_product": householder_product}
