"""torch.linalg.eig and eigvals: eigenvalues and eigenvectors of general square matrices, real
or complex, always complex (the kernel `eig_general`, _cpu/eig.pyx: Hessenberg reduction and
shifted QR to the Schur form, in complex128; a cuda tensor goes through it on a host copy, as
torch's cuda eig runs on the host in MAGMA).

The eigenvalues come in the order the QR sweeps deflate them, which need not be LAPACK's (so
torch's); each eigenvector has unit norm and its largest component real and positive, geev's
convention, so vectors agree with torch's up to that order and, for real matrices, a sign.
The gradient is torch's (FunctionsManual.cpp, linalg_eig_backward), written in Tensor ops so
it differentiates again; like torch's it refuses a loss that depends on the eigenvectors'
arbitrary phases."""
from .. import dtypes
from ..autograd import KernelFunction
from ..tensor import eye, wrap
from .complex import real as _real
from .compare import isfinite
from .elementwise import TORCH_NAMES
from .factor import LinAlgError, refuse_low_precision, solve, _check_ndim, _result_type
from .linalg import diag_embed, matmul
from .spectral import _batch, _writes_out


_LinalgEigResult = _result_type("_LinalgEigResult", "linalg_eig", ("eigenvalues", "eigenvectors"))
_NOT_CONVERGED = ("The algorithm failed to converge because the input matrix is ill-conditioned "
                  "or has too many repeated eigenvalues (error code: {}).")
_PHASE_DEPENDENT = (
    "linalg_eig_backward: The eigenvectors in the complex case are specified up to "
    "multiplication by e^{i phi}. The specified loss function depends on this quantity, so it "
    "is ill-defined.")


def _complex_of(dtype):
    """The complex dtype of the results: complex64 for float32 / complex64, else complex128."""
    return dtype if dtype.is_complex else dtype.complex_dtype


def _eig_arrays(nd, vectors=True):
    """(eigenvalues, eigenvectors or None) NDArrays of nd's complex dtype."""
    refuse_low_precision(nd, "linalg_eig_out")
    batch_shape, batch = _batch(nd)
    n = nd.shape[-1]
    work = nd.astype(dtypes.complex128).copy()          # the kernel overwrites it
    values = work._new(batch_shape + (n,))
    basis = work._new(nd.shape) if vectors else None
    info = work._new(batch_shape, dtypes.int64)
    if batch and n:
        nd.backend.eig_general(work.flat(), values.buffer,
                               None if basis is None else basis.buffer, info.buffer, batch, n)
        _raise_for_info(info)
    result = _complex_of(nd.dtype)
    return values.astype(result), None if basis is None else basis.astype(result)


def _raise_for_info(info):
    codes = info.numpy().reshape(-1)
    failed = [i for i, code in enumerate(codes) if code]
    if failed:
        where = f"(Batch element {failed[0]}): " if info.ndim else ""
        raise LinAlgError(f"linalg.eig: {where}{_NOT_CONVERGED.format(int(codes[failed[0]]))}")


class LinalgEig(KernelFunction):
    """(L, V) with A V = V diag(L); the gradient V^-H (diag(gL) + (V^H gV - V^H V diag(Re
    diag(V^H gV))) / conj(L_j - L_i)) V^H, its real part for a real A."""

    @staticmethod
    def forward(ctx, A):
        values, vectors = (wrap(x) for x in _eig_arrays(A._data))
        ctx.real_input = not A.dtype.is_complex
        ctx.save_for_backward(values, vectors)
        return values, vectors

    @staticmethod
    def backward(ctx, g_values, g_vectors):
        L, V = ctx.saved_tensors
        Vh = V.mH
        n = L.shape[-1]
        identity = eye(n, dtype=L.dtype, device=L.device)
        if g_vectors is None:
            inner = diag_embed(g_values)
        else:
            VhgV = matmul(Vh, g_vectors)
            phases = VhgV.diagonal(0, -2, -1).imag
            if bool((phases.abs() > 1e-2).any()):
                raise RuntimeError(_PHASE_DEPENDENT)
            projected = VhgV - matmul(Vh, V * _real(VhgV.diagonal(0, -2, -1)).unsqueeze(-2))
            gaps = L.conj().unsqueeze(-2) - L.conj().unsqueeze(-1) + identity
            inner = projected / gaps * (1 - identity)
            if g_values is not None:
                inner = inner + diag_embed(g_values)
        grad = solve(Vh, matmul(inner, Vh))
        return _real(grad) if ctx.real_input else grad


def _check_input(A, name):
    _check_ndim(A, name)
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")
    if not (A.dtype.is_floating_point or A.dtype.is_complex):
        raise RuntimeError(f"Unknown Complex ScalarType for {TORCH_NAMES[A.dtype.name]}")
    if A.numel() and not bool(isfinite(A).all()):
        raise RuntimeError("torch.linalg.eig: input tensor should not contain infs or NaNs.")


@_writes_out("linalg_eig")
def eig(A, *, out=None):
    """(eigenvalues, eigenvectors) of each square matrix, complex: A V = V diag(L), columns of
    V of unit norm (torch.linalg.eig)."""
    _check_input(A, "linalg.eig")
    return _LinalgEigResult(*LinalgEig.apply(A))


@_writes_out("linalg_eigvals")
def eigvals(A, *, out=None):
    """The eigenvalues of each square matrix, complex (torch.linalg.eigvals)."""
    _check_input(A, "linalg.eigvals")
    if A.requires_grad:
        return LinalgEig.apply(A)[0]
    return wrap(_eig_arrays(A._data, vectors=False)[0])


LINALG = {"eig": eig, "eigvals": eigvals}
