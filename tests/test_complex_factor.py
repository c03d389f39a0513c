"""Complex matrices through the LU, Cholesky and triangular kernels: det, slogdet, logdet, LU
(factor, unpack, solve, plain and adjoint, left and right), Cholesky (and its solve and
inverse), solve_triangular, matrix_exp; values against numpy, gradients by finite differences
in complex128 (through real losses), torch's values and gradients when installed; and the
spectral decompositions' plain refusal of complex input."""
import numpy as np
import pytest

import minitorch as mt

try:
    import torch
except ImportError:
    torch = None


def _complex(rng, *shape):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def _hermitian(rng, *shape):
    a = _complex(rng, *shape)
    return a @ a.conj().swapaxes(-1, -2) + shape[-1] * np.eye(shape[-1])


@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_values_against_numpy(layout, device):
    rng = np.random.default_rng(0)
    a, b, h = _complex(rng, 2, 4, 4), _complex(rng, 2, 4, 3), _hermitian(rng, 4, 4)
    A, B, H = (mt.tensor(x, device=device) for x in (a, b, h))
    if layout == "transposed":
        A, a = A.mT.contiguous().mT, a          # a strided view holding the same matrix
    np.testing.assert_allclose(mt.linalg.det(A).cpu().numpy(), np.linalg.det(a), rtol=1e-12)
    sign, logabsdet = mt.linalg.slogdet(A)
    want_sign, want_log = np.linalg.slogdet(a)
    np.testing.assert_allclose(sign.cpu().numpy(), want_sign, rtol=1e-12)
    np.testing.assert_allclose(logabsdet.cpu().numpy(), want_log, rtol=1e-12)
    assert logabsdet.dtype is mt.float64
    np.testing.assert_allclose(mt.logdet(A).cpu().numpy(), np.log(np.linalg.det(a)), rtol=1e-12)
    P, L, U = mt.linalg.lu(A)
    np.testing.assert_allclose((P @ L @ U).cpu().numpy(), a, atol=1e-12)
    LU, pivots = mt.linalg.lu_factor(A)
    for adjoint in (False, True):
        matrix = a.conj().swapaxes(-1, -2) if adjoint else a
        x = mt.linalg.lu_solve(LU, pivots, B, adjoint=adjoint).cpu().numpy()
        np.testing.assert_allclose(matrix @ x, b, atol=1e-12)
        x = mt.linalg.lu_solve(LU, pivots, B.mT, left=False, adjoint=adjoint).cpu().numpy()
        np.testing.assert_allclose(x @ matrix, b.swapaxes(-1, -2), atol=1e-12)
    for upper in (False, True):
        factor = mt.linalg.cholesky(H, upper=upper)
        lower = factor.mH if upper else factor
        np.testing.assert_allclose(lower.cpu().numpy(), np.linalg.cholesky(h), atol=1e-12)
        x = mt.cholesky_solve(B[0], factor, upper=upper).cpu().numpy()
        np.testing.assert_allclose(h @ x, b[0], atol=1e-12)
    np.testing.assert_allclose(mt.cholesky_inverse(mt.linalg.cholesky(H)).cpu().numpy(),
                               np.linalg.inv(h), atol=1e-12)
    t = np.tril(a[0]) + 3 * np.eye(4)
    x = mt.linalg.solve_triangular(mt.tensor(t, device=device), B[0], upper=False)
    np.testing.assert_allclose(t @ x.cpu().numpy(), b[0], atol=1e-12)
    single = mt.tensor(a.astype(np.complex64), device=device)
    assert mt.linalg.det(single).dtype is mt.complex64


def _real_view(t):
    return mt.view_as_real(t) if t.dtype.is_complex else t


@pytest.mark.parametrize("name, function, inputs", [
    ("det", lambda A: mt.linalg.det(A), "a"),
    ("slogdet", lambda A: tuple(_real_view(x) for x in mt.linalg.slogdet(A)), "a"),
    ("logdet", lambda A: mt.logdet(A), "a"),
    ("lu", lambda A: tuple(_real_view(x) for x in mt.linalg.lu(A)[1:]), "a"),
    ("lu_solve", lambda A, B: mt.linalg.lu_solve(*mt.linalg.lu_factor(A), B, adjoint=True),
     "ab"),
    ("cholesky", lambda H: mt.linalg.cholesky(H @ H.mH + 3 * mt.eye(3, dtype=H.dtype),
                                              upper=True), "a"),
    ("cholesky_solve", lambda L, B: mt.cholesky_solve(B, mt.tril(L) + 3 * mt.eye(
        3, dtype=L.dtype)), "ab"),
    ("solve_triangular", lambda T, B: mt.linalg.solve_triangular(
        T + 3 * mt.eye(3, dtype=T.dtype), B.mT, upper=True, left=False), "ab"),
])
def test_gradients_by_finite_differences(name, function, inputs):
    rng = np.random.default_rng(1)
    arrays = {"a": _complex(rng, 3, 3), "b": _complex(rng, 3, 2)}
    tensors = tuple(mt.tensor(arrays[k], requires_grad=True) for k in inputs)

    def real_outputs(*x):
        out = function(*x)
        return tuple(_real_view(y) for y in (out if isinstance(out, tuple) else (out,)))
    assert mt.autograd.gradcheck(real_outputs, tensors), name


@pytest.mark.skipif(torch is None, reason="torch is not installed")
def test_gradients_equal_torchs():
    rng = np.random.default_rng(2)
    a, b, h = _complex(rng, 4, 4), _complex(rng, 4, 2), _hermitian(rng, 4, 4)
    cases = [lambda L, A, B, H: L.linalg.det(A),
             lambda L, A, B, H: L.linalg.slogdet(A),
             lambda L, A, B, H: L.linalg.lu_solve(*L.linalg.lu_factor(A), B),
             lambda L, A, B, H: L.cholesky_solve(B, L.linalg.cholesky(H)),
             lambda L, A, B, H: L.linalg.matrix_exp(A * 0.3)]
    for case in cases:
        grads = []
        for lib in (torch, mt):
            xs = [lib.tensor(x, requires_grad=True) for x in (a, b, h)]
            out = case(lib, *xs)
            out = out if isinstance(out, tuple) else (out,)
            sum((o.real * 1.3 + o.imag * 0.7).sum() if o.is_complex() else o.sum()
                for o in out).backward()
            grads.append([x.grad.numpy() if x.grad is not None else None for x in xs])
        for ours, theirs in zip(grads[1], grads[0]):
            if theirs is not None:
                np.testing.assert_allclose(ours, theirs, atol=1e-10)


@pytest.mark.parametrize("call", [
    lambda A: mt.linalg.svd(A), lambda A: mt.linalg.qr(A), lambda A: mt.linalg.eigh(A),
    lambda A: mt.linalg.pinv(A), lambda A: mt.linalg.matrix_rank(A),
    lambda A: mt.linalg.lstsq(A, A), lambda A: mt.linalg.matrix_norm(A, "nuc")])
def test_spectral_decompositions_say_complex_is_not_implemented(call):
    A = mt.ones(3, 3, dtype=mt.complex64)
    with pytest.raises(NotImplementedError, match="complex matrices are not implemented in "
                                                  "minitorch .* got ComplexFloat"):
        call(A)
