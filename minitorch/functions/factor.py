"""LU, Cholesky and triangular solves, and what torch builds on them: det, slogdet, logdet,
inverse, solve, lu_factor / lu / lu_unpack / lu_solve, solve_triangular, triangular_solve,
cholesky / cholesky_solve / cholesky_inverse, matrix_power and matrix_exp.

Three kernels do the arithmetic (`lu_factor`, `triangular_solve`, `cholesky_factor`, plus
`lu_permutation` turning pivots into a row order); everything else is views and existing ops.
A solve with an LU is the row permutation (gather), a unit-lower then an upper triangular solve.
Errors a factorisation finds come back as an int64 `info` per matrix (torch and LAPACK use
int32; so do their pivots, which are int64 here); the non-`_ex` functions read it back once and
raise torch's error.

Gradients follow torch's formulas (FunctionsManual.cpp) written with these same functions, so
they can be differentiated again. det at an exactly singular matrix gets torch's first-order
gradient (zero: the zero pivot is replaced by eps and the solve scaled by det = 0); its double
backward there would need an SVD, which torch uses and this module does not: it raises the
singular-matrix error instead. The outputs of lu_factor / lu (and the LU argument of lu_solve)
carry no gradient.
"""
import math
import numbers

import numpy as np

from .. import dtypes
from ..autograd import KernelFunction, is_grad_enabled
from ..tensor import arange, eye, wrap, zeros_like
from . import complex as _complex
from .elementwise import TORCH_NAMES, _no_kernel, where
from .linalg import diag_embed, matmul, tril, triu
from .joining import broadcast_shapes, cat
from .reduce import _return_type, sum_to


__all__ = ['cholesky', 'cholesky_inverse', 'cholesky_solve', 'det', 'inverse', 'logdet', 'lu',
           'lu_solve', 'lu_unpack', 'matrix_exp', 'matrix_power', 'slogdet', 'triangular_solve']


class LinAlgError(RuntimeError):
    """torch.linalg.LinAlgError: the matrix is singular or not positive-definite."""


def _result_type(variable, name, fields):
    """torch.return_types.<name>, picklable as this module's `variable`."""
    cls = _return_type(name, fields)
    cls.__qualname__ = variable
    cls.__module__ = __name__
    return cls


_SlogdetResult = _result_type("_SlogdetResult", "slogdet", ("sign", "logabsdet"))
_LinalgSlogdetResult = _result_type("_LinalgSlogdetResult", "linalg_slogdet",
                                    ("sign", "logabsdet"))
_InvExResult = _result_type("_InvExResult", "linalg_inv_ex", ("inverse", "info"))
_SolveExResult = _result_type("_SolveExResult", "linalg_solve_ex", ("result", "info"))
_LuFactorResult = _result_type("_LuFactorResult", "linalg_lu_factor", ("LU", "pivots"))
_LuFactorExResult = _result_type("_LuFactorExResult", "linalg_lu_factor_ex",
                                 ("LU", "pivots", "info"))
_LuWithInfoResult = _result_type("_LuWithInfoResult", "_lu_with_info", ("LU", "pivots", "info"))
_LinalgLuResult = _result_type("_LinalgLuResult", "linalg_lu", ("P", "L", "U"))
_LuUnpackResult = _result_type("_LuUnpackResult", "lu_unpack", ("P", "L", "U"))
_CholeskyExResult = _result_type("_CholeskyExResult", "linalg_cholesky_ex", ("L", "info"))
_TriangularSolveResult = _result_type("_TriangularSolveResult", "triangular_solve",
                                      ("solution", "cloned_coefficient"))


# ---- argument checks (torch's wording, which differs from function to function) ---------------
def _check_ndim(t, name, label="A"):
    if t.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor {label} must have at least 2 dimensions.")


def _check_square(A, name):
    _check_ndim(A, name)
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")


def _check_floating(A, name):
    if not (A.dtype.is_floating_point or A.dtype.is_complex):
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got "
                           f"{TORCH_NAMES[A.dtype.name]}")


def _check_square_floating(A, name):
    _check_square(A, name)
    _check_floating(A, name)


def _check_kernel_dtype(t, kernel):
    """The ops torch sends straight to a typed kernel refuse integers with its dispatch error."""
    if not (t.dtype.is_floating_point or t.dtype.is_complex):
        raise NotImplementedError(f'"{kernel}_{t.device.type}" not implemented for '
                                  f"'{TORCH_NAMES[t.dtype.name]}'")


def _check_same_dtype(name, A, B, a_label="A", b_label="B"):
    if A.dtype is not B.dtype:
        raise RuntimeError(f"{name}: Expected {a_label} and {b_label} to have the same dtype, but "
                           f"found {a_label} of type {TORCH_NAMES[A.dtype.name]} and {b_label} of "
                           f"type {TORCH_NAMES[B.dtype.name]} instead")


def _check_rhs(name, A, B, left):
    """B's rows (left) or columns (right) must match the n x n matrices A."""
    n = A.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        equation = "AX = B" if left else "XA = B"
        raise RuntimeError(f"{name}: Incompatible shapes of A and B for the equation {equation} "
                           f"({n}x{n} and {B.shape[-2]}x{B.shape[-1]})")


def _check_old_api_pair(name, b, A):
    """triangular_solve / cholesky_solve: b and A as their (older) checks word it."""
    if b.dtype is not A.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type "
                           f"{TORCH_NAMES[b.dtype.name]} and A of type "
                           f"{TORCH_NAMES[A.dtype.name]} instead.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"A must be batches of square matrices, but they are {A.shape[-2]} by "
                           f"{A.shape[-1]} matrices")
    if A.shape[-1] != b.shape[-2]:
        raise RuntimeError(f"Incompatible matrix sizes for {name}: each A matrix is {A.shape[-1]} "
                           f"by {A.shape[-1]} but each b matrix is {b.shape[-2]} by "
                           f"{b.shape[-1]}")


def _check_lu_ndim(A, name):
    if A.ndim < 2:
        raise RuntimeError(f"{name}: Expected tensor with 2 or more dimensions. Got size: "
                           f"{list(A.shape)} instead")


def _check_pivots_dtype(pivots, message):
    if pivots.dtype is not dtypes.int64:
        raise RuntimeError(message)


def _check_pivot_range(pivots, n, low_message, high_message):
    """Every pivot in [1, n] (one device-to-host number per bound)."""
    if pivots.numel() == 0:
        return
    if bool((pivots < 1).any()):
        raise RuntimeError(low_message)
    if bool((pivots > n).any()):
        raise RuntimeError(high_message)


def _raise_for_info(info, name, describe, error=LinAlgError):
    """One device-to-host copy of info; torch's error for the first failing matrix (with its
    flat batch position when there is a batch)."""
    host = info._data.numpy().reshape(-1)
    failed = np.flatnonzero(host)
    if failed.size:
        first = int(failed[0])
        where_ = f"(Batch element {first}): " if info.ndim else ""
        raise error(f"{name}: {where_}{describe(int(host[first]))}")


def _singular_inverse(order):
    return (f"The diagonal element {order} is zero, the inversion could not be completed because "
            "the input matrix is singular.")


def _not_positive_definite(order):
    return ("The factorization could not be completed because the input is not "
            f"positive-definite (the leading minor of order {order} is not positive-definite).")


# ---- the kernels on NDArrays --------------------------------------------------------------------
LOW_PRECISION = (dtypes.float16, dtypes.bfloat16)


def refuse_low_precision(nd, kernel):
    """The factorizations have no 16-bit float kernel, in torch as here: its dispatch error
    ("lu_cpu" not implemented for 'Half'), not a silent float32 computation."""
    if nd.dtype in LOW_PRECISION:
        raise _no_kernel(kernel, nd.dtype, nd.device)


def _lu_data(nd):
    """(LU, pivots, info) NDArrays: getrf of every m x n matrix of a float NDArray."""
    refuse_low_precision(nd, "lu")
    *batch, m, n = nd.shape
    lu = nd.copy()                      # a fresh compact copy: the kernel works in place
    pivots = lu._new(tuple(batch) + (min(m, n),), dtypes.int64)
    info = lu._new(tuple(batch), dtypes.int64)
    if info.size:
        nd.backend.lu_factor(lu.buffer, pivots.buffer, info.buffer, m, n)
    return lu, pivots, info


def _permutation(pivots, m):
    """perm (int64 Tensor, m per matrix): A[perm] = L U for LAPACK's 1-based row swaps."""
    nd = pivots._data.compact()
    perm = nd._new(nd.shape[:-1] + (m,))
    if perm.size:
        nd.backend.lu_permutation(nd.flat(), perm.buffer, m, nd.shape[-1])
    return wrap(perm)


def _cholesky_data(nd):
    """(L, info) NDArrays: Cholesky of the lower triangle of every n x n matrix."""
    refuse_low_precision(nd, "cholesky")
    factor = nd.copy()
    info = factor._new(nd.shape[:-2], dtypes.int64)
    if info.size:
        nd.backend.cholesky_factor(factor.buffer, info.buffer, nd.shape[-1])
    return factor, info


def _triangular(A, B, upper, unit=False):
    """A^-1 B (Tensors with one batch shape; A triangular), by the kernel on a copy of B."""
    n, k = B.shape[-2:]
    refuse_low_precision(A._data, "triangular_solve")
    x = B._data.copy()
    if x.size:
        a = A._data.compact()
        A._data.backend.triangular_solve(a.flat(), x.buffer, n, k, upper, unit)
    return wrap(x)


def _broadcast_batch(*tensors):
    """The matrices expanded (views) to their common batch shape."""
    batch = tuple(broadcast_shapes(*(t.shape[:-2] for t in tensors)))
    return [t.expand(*batch, *t.shape[-2:]) for t in tensors]


def _lu_solve_with(lu, perm, B, adjoint):
    """X with A X = B (A^H X = B when `adjoint`) from A's LU and row order, one batch shape."""
    if B.numel() == 0:
        return B.clone()
    rows = perm.unsqueeze(-1).expand(*B.shape)
    if not adjoint:     # L U X = B[perm]
        return _triangular(lu, _triangular(lu, B.gather(-2, rows), False, True), True)
    lu_t = lu.mH        # U^H L^H (P^T X) = B, so X = P Z: row perm[i] of X is row i of Z
    z = _triangular(lu_t, _triangular(lu_t, B, False), True, True)
    return zeros_like(z).scatter(-2, rows, z)


def _identity_like(A):
    """Identity matrices with A's batch shape, dtype and device (a broadcast view)."""
    n = A.shape[-1]
    return eye(n, dtype=A.dtype, device=A.device).expand(*A.shape)


def _diagonal_matrices(values, n):
    """diag_embed of values (...) repeated along a new last axis of n."""
    return diag_embed(values.unsqueeze(-1).expand(*values.shape, n))


# ---- det, slogdet, logdet -----------------------------------------------------------------------
def _lu_parts(A):
    """(LU, perm, diagonal of U, sign of the permutation) of A as Tensors."""
    lu, pivots, _ = (wrap(x) for x in _lu_data(A._data))
    n = A.shape[-1]
    swaps = (pivots != arange(1, n + 1, device=A.device)).sum(-1)
    sign = (1 - 2 * (swaps % 2)).to(A.dtype)
    return lu, _permutation(pivots, n), lu.diagonal(0, -2, -1), sign


def _grad_through_inverse(ctx, A, scale):
    """scale * A^-H (scale: one value per matrix), torch's det / slogdet gradient: recomputed
    through solve when a further derivative is wanted, else from the forward's LU, whose exact
    zero pivots become eps so a singular A gives finite values."""
    d = _diagonal_matrices(scale, A.shape[-1])
    if is_grad_enabled():
        return solve(A.mH, d)
    diagonal = ctx.lu.diagonal(0, -2, -1)
    eps = float(np.finfo((A.dtype.real_dtype or A.dtype).numpy_dtype).eps)
    lu = ctx.lu + diag_embed(where(diagonal == 0, eps, 0.0).to(A.dtype))
    return _lu_solve_with(lu, ctx.perm, d, adjoint=True)


class LinalgDet(KernelFunction):
    """det(A) = sign(P) * prod(diag(U))."""

    @staticmethod
    def forward(ctx, A):
        lu, perm, diagonal, sign = _lu_parts(A)
        result = sign * diagonal.prod(-1)
        ctx.lu, ctx.perm = lu, perm
        ctx.save_for_backward(A, result)
        return result

    @staticmethod
    def backward(ctx, g):
        A, result = ctx.saved_tensors
        return _grad_through_inverse(ctx, A, g * result.conj())


class LinalgSlogdet(KernelFunction):
    """(sign, log|det|) from the LU's diagonal. A real matrix's sign has no gradient; a
    complex one's (a phase) does: gA = (g_logabsdet - i Im(conj(g_sign) sign)) A^-H."""

    @staticmethod
    def forward(ctx, A):
        lu, perm, diagonal, sign = _lu_parts(A)
        ctx.lu, ctx.perm = lu, perm
        phases = diagonal.sgn() if A.dtype.is_complex else diagonal.sign()
        result = sign * phases.prod(-1)
        ctx.save_for_backward(A, result)
        return result, diagonal.abs().log().sum(-1)

    @staticmethod
    def backward(ctx, g_sign, g_logabsdet):
        A, sign = ctx.saved_tensors
        scale = g_logabsdet if g_logabsdet is not None else zeros_like(sign.abs())
        if A.dtype.is_complex:
            scale = scale.to(A.dtype)
            if g_sign is not None:
                scale = scale - 1j * (g_sign.conj() * sign).imag
        return _grad_through_inverse(ctx, A, scale)


def det(A):
    """The determinant of each square matrix (1 for 0 x 0)."""
    _check_square_floating(A, "linalg.det")
    return LinalgDet.apply(A)


def _slogdet(A, result):
    _check_square_floating(A, "linalg.slogdet")
    return result(*LinalgSlogdet.apply(A))


def slogdet(A):
    """torch.slogdet: (sign, logabsdet) of each square matrix (sign 0 when singular)."""
    return _slogdet(A, _SlogdetResult)


def linalg_slogdet(A):
    """torch.linalg.slogdet (its own result type)."""
    return _slogdet(A, _LinalgSlogdetResult)


def logdet(A):
    """log det A: for real A NaN where det < 0, -inf where it is 0 (torch's rule); for
    complex A the complex logarithm log|det| + i arg(det)."""
    _check_square_floating(A, "logdet")
    sign, logabsdet = LinalgSlogdet.apply(A)
    if A.dtype.is_complex:
        return _complex.complex(logabsdet, sign.angle())
    return where(sign == -1, math.nan, logabsdet)


# ---- inverse and solve ------------------------------------------------------------------------
class LinalgInvEx(KernelFunction):
    """(A^-1, info) by the LU: the gradient is -A^-T g A^-T."""

    @staticmethod
    def forward(ctx, A):
        lu, pivots, info = (wrap(x) for x in _lu_data(A._data))
        result = _lu_solve_with(lu, _permutation(pivots, A.shape[-1]), _identity_like(A), False)
        ctx.save_for_backward(result)
        return result, info

    @staticmethod
    def backward(ctx, g, g_info=None):
        result, = ctx.saved_tensors
        return -matmul(result.mT, matmul(g, result.mT))


def inv_ex(A, *, check_errors=False):
    """(inverse, info): info is the order of U's first zero diagonal (the inverse is then inf /
    NaN), 0 for an invertible matrix."""
    if A.dtype.is_complex:
        _check_square_floating(A.real, "linalg.inv")
        result, info = _complex_solve("linalg.inv", A, _identity_like(A), True)
        if check_errors:
            _raise_for_info(info, "linalg.inv_ex", _singular_inverse)
        return _InvExResult(result, info)
    _check_square_floating(A, "linalg.inv")
    if A.dtype in LOW_PRECISION:
        raise RuntimeError(f"linalg.inv: Low precision dtypes not supported. Got "
                           f"{TORCH_NAMES[A.dtype.name]}")
    result, info = LinalgInvEx.apply(A)
    if check_errors:
        _raise_for_info(info, "linalg.inv_ex", _singular_inverse)
    return _InvExResult(result, info)


def inv(A):
    """The inverse of each square matrix; a singular one raises LinAlgError."""
    result, info = inv_ex(A)
    _raise_for_info(info, "linalg.inv", _singular_inverse)
    return result


def inverse(input):
    """torch.inverse (= linalg.inv)."""
    return inv(input)


class LinalgSolveEx(KernelFunction):
    """(X, info) with A X = B (batch dims broadcast): gB = A^-T g, gA = -gB X^T."""

    @staticmethod
    def forward(ctx, A, B):
        A_, B_ = _broadcast_batch(A, B)
        lu, pivots, info = (wrap(x) for x in _lu_data(A_._data))
        result = _lu_solve_with(lu, _permutation(pivots, A.shape[-1]), B_, False)
        ctx.shapes = A.shape, B.shape
        ctx.save_for_backward(A, result)
        return result, info

    @staticmethod
    def backward(ctx, g, g_info=None):
        A, result = ctx.saved_tensors
        a_shape, b_shape = ctx.shapes
        grad_b = solve(A.mT, g)
        grad_a = -matmul(grad_b, result.mT) if ctx.needs_input_grad[0] else None
        return (sum_to(grad_a, a_shape) if grad_a is not None else None,
                sum_to(grad_b, b_shape) if ctx.needs_input_grad[1] else None)


def _is_vector_rhs(A, B):
    """torch's rule: B is a (batch of) vector(s) when 1-D or when it is A's shape less one."""
    return B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))


def solve_ex(A, B, *, left=True, check_errors=False):
    """(result, info) of A X = B (X A = B when not `left`); B may be a vector (batch)."""
    name = "linalg.solve"
    if A.dtype.is_complex or B.dtype.is_complex:
        _check_square_floating(A.real, name)
        _check_same_dtype(name, A, B)
        result, info = _complex_solve(name, A, B, left)
        if check_errors:
            _raise_for_info(info, "torch.linalg.solve", _singular_solve)
        return _SolveExResult(result, info)
    _check_square_floating(A, name)
    if B.ndim < 1:
        _check_ndim(B, name, "B")
    _check_same_dtype(name, A, B)
    vector = _is_vector_rhs(A, B)
    matrix = B.unsqueeze(-1) if vector else B
    _check_rhs(name, A, matrix, left)
    broadcast_shapes(matrix.shape[:-2], A.shape[:-2])      # torch's error names B's batch first
    if left:
        result, info = LinalgSolveEx.apply(A, matrix)
    else:       # X A = B is A^T X^T = B^T
        result, info = LinalgSolveEx.apply(A.mT, matrix.mT)
        result = result.mT
    if check_errors:
        _raise_for_info(info, "torch.linalg.solve", _singular_solve)
    return _SolveExResult(result.squeeze(-1) if vector else result, info)


def _complex_solve(name, A, B, left):
    """(X, info) of the complex A X = B (X A = B when not `left`) as the real system of twice
    the size [[Re A, -Im A], [Im A, Re A]] [Re X; Im X] = [Re B; Im B], singular exactly when A
    is (its determinant is |det A|²); the gradients are the real solve's through the parts (an
    info counts the real matrix's diagonal)."""
    vector = _is_vector_rhs(A, B)
    matrix = B.unsqueeze(-1) if vector else B
    _check_rhs(name, A, matrix, left)
    if not left:        # X A = B is A^T X^T = B^T
        A, matrix = A.mT, matrix.mT
    n = A.shape[-1]
    block = cat([cat([A.real, -A.imag], -1), cat([A.imag, A.real], -1)], -2)
    parts, info = solve_ex(block, cat([matrix.real, matrix.imag], -2))
    result = _complex.complex(parts[..., :n, :], parts[..., n:, :])
    if vector:
        return result.squeeze(-1), info
    return (result if left else result.mT), info


def _singular_solve(order):
    return "The solver failed because the input matrix is singular."


def solve(A, B, *, left=True):
    """X with A X = B (X A = B when not `left`), batch dims broadcast; a singular A raises."""
    result, info = solve_ex(A, B, left=left)
    _raise_for_info(info, "torch.linalg.solve", _singular_solve)
    return result


# ---- LU ---------------------------------------------------------------------------------------
def _lu_factor_checked(A, name, pivot):
    """(LU, pivots, info) Tensors after torch's checks (`name` for the rank); LU carries A's
    gradient (LinalgLuFactorExBackward0)."""
    _check_lu_ndim(A, name)
    _check_kernel_dtype(A, "lu")
    if not pivot:
        raise RuntimeError(f"linalg.lu_factor: LU without pivoting is not implemented on the "
                           f"{'CPU' if A.device.type == 'cpu' else 'GPU in minitorch'}")
    return LinalgLuFactorEx.apply(A)


class LinalgLuFactorEx(KernelFunction):
    """getrf with torch's gradient (linalg_lu_backward): the packed LU's strict lower part is
    L's gradient, its upper part U's."""

    @staticmethod
    def forward(ctx, A):
        lu, pivots, info = (wrap(x) for x in _lu_data(A._data))
        ctx.save_for_backward(lu, pivots)
        ctx.mark_non_differentiable(pivots, info)
        return lu, pivots, info

    @staticmethod
    def backward(ctx, g, _pivots, _info):
        lu, pivots = ctx.saved_tensors
        k = min(lu.shape[-2:])
        P, L, U = lu_unpack(lu, pivots)
        return _lu_backward(P, L, U, tril(g[..., :, :k], -1), triu(g[..., :k, :]))

    @classmethod
    def name(cls):
        return "LinalgLuFactorExBackward0"


def _lu_backward(P, L, U, gL, gU):
    """gA for A = P L U (torch's linalg_lu_backward; conjugate transposes, which are the
    transposes of real matrices): square, wide (m < n) and tall (m > n) matrices."""
    m, n = L.shape[-2], U.shape[-1]
    k = min(m, n)
    if m == n:
        phi = tril(L.mH @ gL, -1) + triu(gU @ U.mH)
        inner = solve_triangular(U.mH, phi, upper=False, left=False)
        return P @ solve_triangular(L.mH, inner, upper=True, unitriangular=True)
    if m < n:       # wide: U = [U1 U2] with U1 square
        phi = tril(L.mH @ gL - triu(gU) @ U.mH, -1)
        first = solve_triangular(U[..., :k].mH, phi, upper=False, left=False)
        grad = cat([first + triu(gU[..., :k]), gU[..., k:]], -1)
        return P @ solve_triangular(L.mH, grad, upper=True, unitriangular=True)
    phi = triu(gU @ U.mH - L.mH @ tril(gL, -1))     # tall: L = [L1; L2] with L1 square
    first = solve_triangular(L[..., :k, :].mH, phi, upper=True, unitriangular=True)
    grad = cat([first + tril(gL[..., :k, :], -1), gL[..., k:, :]], -2)
    return P @ solve_triangular(U.mH, grad, upper=False, left=False)


def lu_factor_ex(A, *, pivot=True, check_errors=False):
    """(LU, pivots, info): P A = L U with L unit-lower (below the diagonal of LU) and U upper;
    pivots are LAPACK's 1-based row swaps (int64), info the order of a zero pivot or 0."""
    lu, pivots, info = _lu_factor_checked(A, "torch.lu_factor", pivot)
    if check_errors:
        _raise_for_info(info, "torch.linalg.lu_factor_ex", _zero_pivot, RuntimeError)
    return _LuFactorExResult(lu, pivots, info)


def _zero_pivot(order):
    return (f"U[{order},{order}] is zero and using it on lu_solve would result in a division by "
            "zero. If you still want to perform the factorization, consider calling "
            "linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")


def lu_factor(A, *, pivot=True):
    """(LU, pivots) of linalg.lu_factor_ex; a zero pivot raises RuntimeError."""
    lu, pivots, info = _lu_factor_checked(A, "torch.lu_factor", pivot)
    _raise_for_info(info, "torch.linalg.lu_factor", _zero_pivot, RuntimeError)
    return _LuFactorResult(lu, pivots)


def lu(A, pivot=True, get_infos=False):
    """torch.lu: (LU, pivots), plus info when `get_infos` (no error for singular A)."""
    lu_, pivots, info = _lu_factor_checked(A, "torch.lu_factor", pivot)
    return _LuWithInfoResult(lu_, pivots, info) if get_infos else (lu_, pivots)


def linalg_lu(A, *, pivot=True):
    """torch.linalg.lu: (P, L, U) with A = P L U (also for m x n: L m x k, U k x n)."""
    lu_, pivots, _ = _lu_factor_checked(A, "linalg.lu", pivot)
    return _LinalgLuResult(*lu_unpack(lu_, pivots))


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):
    """(P, L, U) from lu_factor's output; the parts not asked for are empty tensors. L and U
    are triangles of LU_data, so they carry its gradient."""
    _check_lu_ndim(LU_data, "torch.lu_unpack")
    _check_pivots_dtype(LU_pivots, "torch.lu_unpack: LU_pivots is expected to be a contiguous "
                                   "tensor of torch.int64 dtype.\nNote: this function is intended "
                                   "to be used with the output produced by torch.linalg.lu_factor")
    m, n = LU_data.shape[-2:]
    k = min(m, n)
    empty = LU_data.new_zeros(0)
    L = U = P = empty
    if unpack_data:
        L = tril(LU_data[..., :, :k], -1) + eye(m, k, dtype=LU_data.dtype, device=LU_data.device)
        U = triu(LU_data[..., :k, :])
    if unpack_pivots:
        wrong = ("pivots passed to lu_unpack must be between 1 and LU.size(-2) inclusive.Did you "
                 "properly pass the result of lu_factor?")
        if LU_pivots.shape[-1:] != (k,):
            raise RuntimeError(wrong)
        _check_pivot_range(LU_pivots, m, wrong, wrong)
        perm = _permutation(LU_pivots, m)
        rows = arange(m, device=LU_data.device).unsqueeze(-1)
        P = (rows == perm.unsqueeze(-2)).to(LU_data.dtype)      # P[perm[c], c] = 1
    return _LuUnpackResult(P, L, U)


class LinalgLuSolve(KernelFunction):
    """X from an LU: A X = B, A^H X = B (adjoint), X A = B or X A^H = B (not left), for an LU
    that needs no gradient (see _lu_solve_through_a): gB solves the adjoint system with g."""

    @staticmethod
    def forward(ctx, LU, pivots, B, left, adjoint):
        lu, pivots_, B_ = _broadcast_batch(LU, pivots.unsqueeze(-1), B)
        perm = _permutation(pivots_.squeeze(-1), LU.shape[-1])
        if left:
            result = _lu_solve_with(lu, perm, B_, adjoint)
        else:       # X A = B is A^H X^H = B^H
            result = _lu_solve_with(lu, perm, B_.mH, not adjoint).mH
        ctx.args = LU, pivots, left, adjoint
        ctx.b_shape = B.shape
        return result

    @staticmethod
    def backward(ctx, g):
        LU, pivots, left, adjoint = ctx.args
        grad_b = linalg_lu_solve(LU, pivots, g, left=left, adjoint=not adjoint)
        return None, None, sum_to(grad_b, ctx.b_shape), None, None


def linalg_lu_solve(LU, pivots, B, *, left=True, adjoint=False):
    """torch.linalg.lu_solve: X with A X = B (A^T when `adjoint`; X A when not `left`) for the
    A that lu_factor factored (batch dims broadcast)."""
    name = "torch.linalg.lu_solve"
    _check_square_floating(LU, name)
    _check_ndim(B, "linalg.lu_solve", "B")
    _check_same_dtype("linalg.lu_solve", LU, B, "LU", "B")
    _check_pivots_dtype(pivots, "linalg.lu_solve: pivots should be a Tensor of scalar type "
                                "torch.int64")
    n = LU.shape[-1]
    if pivots.ndim < 1 or pivots.shape[-1] != n:
        raise RuntimeError("linalg.lu_solve: Number of pivots per batch should be same as the "
                           "dimension of the matrix")
    _check_rhs("linalg.lu_solve", LU, B, left)
    _check_pivot_range(pivots, n, "Pivots given to lu_solve must all be greater or equal to 1. "
                                  "Did you properly pass the result of lu_factor?",
                       "Pivots given to lu_solve must all be smaller or equal to LU.size(-2). "
                       "Did you properly pass the result of lu_factor?")
    if LU.requires_grad and is_grad_enabled():
        return _lu_solve_through_a(LU, pivots, B, left, adjoint)
    return LinalgLuSolve.apply(LU, pivots, B, bool(left), bool(adjoint))


def _lu_solve_through_a(LU, pivots, B, left, adjoint):
    """lu_solve differentiable in LU too: the same system solved with A = P L U rebuilt from
    LU's triangles, so the gradient reaches LU through that product (pivots are constants)."""
    P, L, U = lu_unpack(LU, pivots)
    A = P @ L @ U
    return solve(A.mH if adjoint else A, B, left=left)


def lu_solve(b, LU_data, LU_pivots):
    """torch.lu_solve (older argument order): X with A X = b."""
    return linalg_lu_solve(LU_data, LU_pivots, b)


# ---- triangular solves --------------------------------------------------------------------------
class LinalgSolveTriangular(KernelFunction):
    """X with A X = B (X A = B when not left), A triangular; torch's gradient, gA projected on
    A's triangle (without the diagonal when unitriangular)."""

    @staticmethod
    def forward(ctx, A, B, upper, left, unitriangular):
        A_, B_ = _broadcast_batch(A, B)
        if left:
            result = _triangular(A_, B_, upper, unitriangular)
        else:       # X A = B is A^T X^T = B^T, A^T of the other triangle
            result = _triangular(A_.mT, B_.mT, not upper, unitriangular).mT
        ctx.flags = upper, left, unitriangular
        ctx.shapes = A.shape, B.shape
        ctx.save_for_backward(A, result)
        return result

    @staticmethod
    def backward(ctx, g):
        A, result = ctx.saved_tensors
        upper, left, unit = ctx.flags
        a_shape, b_shape = ctx.shapes
        grad_b = solve_triangular(A.mH, g, upper=not upper, left=left, unitriangular=unit)
        grad_a = None
        if ctx.needs_input_grad[0]:
            grad_a = -matmul(grad_b, result.mH) if left else -matmul(result.mH, grad_b)
            grad_a = triu(grad_a, int(unit)) if upper else tril(grad_a, -int(unit))
            grad_a = sum_to(grad_a, a_shape)
        return (grad_a, sum_to(grad_b, b_shape) if ctx.needs_input_grad[1] else None,
                None, None, None)


def solve_triangular(A, B, *, upper, left=True, unitriangular=False):
    """torch.linalg.solve_triangular: X with A X = B (X A = B when not `left`) reading only
    A's upper or lower triangle (not its diagonal when `unitriangular`); batch dims broadcast."""
    name = "linalg.solve_triangular"
    _check_square(A, name)
    _check_ndim(B, name, "B")
    _check_kernel_dtype(A, "triangular_solve")
    _check_kernel_dtype(B, "triangular_solve")
    _check_rhs(name, A, B, left)
    if A.dtype is not B.dtype:       # torch computes in the wider float type
        dtype = dtypes.float64
        A, B = A.to(dtype), B.to(dtype)
    return LinalgSolveTriangular.apply(A, B, bool(upper), bool(left), bool(unitriangular))


def triangular_solve(b, A, upper=True, transpose=False, unitriangular=False):
    """torch.triangular_solve (older API): (solution of op(A) X = b, a copy of A), op(A) = A^T
    when `transpose`."""
    for t, label in ((b, "b"), (A, "A")):
        if t.ndim < 2:
            raise RuntimeError(f"torch.triangular_solve: Expected {label} to have at least 2 "
                               f"dimensions, but it has {t.ndim} dimensions instead")
    _check_kernel_dtype(A, "triangular_solve")
    _check_old_api_pair("triangular_solve", b, A)
    coefficient = A.mT if transpose else A
    solution = LinalgSolveTriangular.apply(coefficient, b, bool(upper) != bool(transpose),
                                           True, bool(unitriangular))
    return _TriangularSolveResult(solution, A.clone())


# ---- Cholesky -----------------------------------------------------------------------------------
class LinalgCholeskyEx(KernelFunction):
    """(L, info) with L L^H = A from A's lower triangle (U^H U = A from the upper one when
    `upper`: the lower one of A^T, whose factor is conj(L) for a Hermitian A); torch's
    gradient L^-H Phi(L^H gL) L^-1 (Murray 2016)."""

    @staticmethod
    def forward(ctx, A, upper):
        factor, info = _cholesky_data((A.mT if upper else A)._data)
        factor = wrap(factor)
        ctx.upper = upper
        result = factor.mT if upper else factor
        ctx.save_for_backward(result)
        return result, wrap(info)

    @staticmethod
    def backward(ctx, g, g_info=None):
        result, = ctx.saved_tensors
        L, gL = (result.mH, g.mH) if ctx.upper else (result, g)
        grad = tril(matmul(L.mH, gL))
        grad = 0.5 * (grad + tril(grad, -1).mH)
        grad = solve_triangular(L.mH, grad, upper=True)
        return solve_triangular(L, grad, upper=False, left=False), None


def _cholesky(A, upper, name):
    result, info = LinalgCholeskyEx.apply(A, bool(upper))
    _raise_for_info(info, name, _not_positive_definite)
    return result


def cholesky_ex(A, *, upper=False, check_errors=False):
    """(L, info): info is the order of the first leading minor that is not positive-definite
    (L is then partial), 0 on success."""
    _check_square_floating(A, "linalg.cholesky")
    result, info = LinalgCholeskyEx.apply(A, bool(upper))
    if check_errors:
        _raise_for_info(info, "linalg.cholesky_ex", _not_positive_definite)
    return _CholeskyExResult(result, info)


def linalg_cholesky(A, *, upper=False):
    """torch.linalg.cholesky: L (lower) with L L^T = A, or U = L^T when `upper`."""
    _check_square_floating(A, "linalg.cholesky")
    return _cholesky(A, upper, "linalg.cholesky")


def cholesky(input, upper=False):
    """torch.cholesky (older API, same factor)."""
    _check_square(input, "cholesky")
    _check_kernel_dtype(input, "cholesky")
    return _cholesky(input, upper, "cholesky")


class CholeskySolve(KernelFunction):
    """X with A X = B for A = L L^H (U^H U when upper), batch dims broadcast; torch's gradient."""

    @staticmethod
    def forward(ctx, B, L, upper):
        B_, L_ = _broadcast_batch(B, L)
        first, second = (L_.mH, L_) if upper else (L_, L_.mH)
        result = _triangular(second, _triangular(first, B_, False), True)
        ctx.upper = upper
        ctx.shapes = B.shape, L.shape
        ctx.save_for_backward(L, result)
        return result

    @staticmethod
    def backward(ctx, g):
        L, result = ctx.saved_tensors
        b_shape, l_shape = ctx.shapes
        grad_b = cholesky_solve(g, L, ctx.upper)
        grad_l = None
        if ctx.needs_input_grad[1]:
            common = matmul(grad_b, result.mH)
            common = common + common.mH
            grad_l = sum_to(-(matmul(L, common) if ctx.upper else matmul(common, L)), l_shape)
        return (sum_to(grad_b, b_shape) if ctx.needs_input_grad[0] else None), grad_l, None


def cholesky_solve(B, L, upper=False):
    """X with (L L^T) X = B, or (U^T U) X = B when `upper`, from the Cholesky factor."""
    if B.ndim < 2:
        raise RuntimeError(f"b should have at least 2 dimensions, but has {B.ndim} dimensions "
                           "instead")
    if L.ndim < 2:
        raise RuntimeError(f"u should have at least 2 dimensions, but has {L.ndim} dimensions "
                           "instead")
    _check_kernel_dtype(L, "cholesky_solve")
    _check_old_api_pair("cholesky_solve", B, L)
    return CholeskySolve.apply(B, L, bool(upper))


def cholesky_inverse(L, upper=False):
    """(L L^T)^-1 (or (U^T U)^-1) from the Cholesky factor."""
    _check_square(L, "cholesky_inverse")
    _check_kernel_dtype(L, "cholesky_inverse_out")
    return cholesky_solve(_identity_like(L), L, upper)


# ---- matrix functions ---------------------------------------------------------------------------
def matrix_power(A, n):
    """A^n by repeated squaring (n = 0: identity; n < 0: powers of the inverse)."""
    if not isinstance(n, (numbers.Integral, np.integer)) or isinstance(n, bool):
        raise TypeError(f"linalg_matrix_power(): argument 'n' (position 2) must be int, not "
                        f"{type(n).__name__}")
    _check_square(A, "linalg.matrix_power")
    n = int(n)
    if n == 0:
        return _identity_like(A).clone()
    base, n = (inv(A) if n < 0 else A), abs(n)
    result = None
    while True:
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if not n:
            break
        base = matmul(base, base)
    return result.clone() if result is A else result


_PADE13 = (64764752532480000., 32382376266240000., 7771770303897600., 1187353796428800.,
           129060195264000., 10559470521600., 670442572800., 33522128640., 1323241920.,
           40840800., 960960., 16380., 182., 1.)
_THETA13 = 5.371920351148152        # the 1-norm below which Pade 13 is exact to double rounding


def matrix_exp(A):
    """e^A by scaling and squaring with the [13/13] Pade approximant (Higham 2005): each matrix
    is scaled by 2^-s so its 1-norm is at most theta_13, the approximant is a solve of two
    polynomials, and the result is squared s times (s per matrix). Differentiable through the
    matmuls and the solve it is made of."""
    _check_square_floating(A, "linalg.matrix_exp")
    if A.numel() == 0:
        return A.clone()
    squarings = _squarings(A.detach())
    most = int(squarings.max().item()) if squarings.numel() else 0
    scaled = A / (2.0 ** squarings.to(A.dtype)).unsqueeze(-1).unsqueeze(-1)
    result = _pade13(scaled)
    for step in range(most):
        result = where((squarings > step).unsqueeze(-1).unsqueeze(-1), matmul(result, result),
                       result)
    return result


def _squarings(A):
    """s = max(0, ceil(log2(|A|_1 / theta_13))) per matrix (int64; 0 for non-finite norms,
    which propagate through the approximant anyway)."""
    norm = A.abs().sum(-2).amax(-1)
    s = (norm / _THETA13).log2().ceil().clamp(min=0)
    return where(s.isfinite(), s, 0.0).to(dtypes.int64)


def _pade13(A):
    b = _PADE13
    identity = _identity_like(A)
    A2 = matmul(A, A)
    A4 = matmul(A2, A2)
    A6 = matmul(A4, A2)
    U = matmul(A, matmul(A6, b[13] * A6 + b[11] * A4 + b[9] * A2)
               + b[7] * A6 + b[5] * A4 + b[3] * A2 + b[1] * identity)
    V = (matmul(A6, b[12] * A6 + b[10] * A4 + b[8] * A2)
         + b[6] * A6 + b[4] * A4 + b[2] * A2 + b[0] * identity)
    return solve(V - U, V + U)


LINALG = {
    "LinAlgError": LinAlgError,
    "det": det, "slogdet": linalg_slogdet, "inv": inv, "inv_ex": inv_ex, "solve": solve,
    "solve_ex": solve_ex, "lu_factor": lu_factor, "lu_factor_ex": lu_factor_ex,
    "lu": linalg_lu, "lu_solve": linalg_lu_solve, "solve_triangular": solve_triangular,
    "cholesky": linalg_cholesky, "cholesky_ex": cholesky_ex, "matrix_power": matrix_power,
    "matrix_exp": matrix_exp,
}
