"""torch.linalg.eig / eigvals: A V = V diag(L) and unit eigenvectors (largest component real)
over real, complex, batched, non-contiguous, repeated-eigenvalue and empty inputs; the
eigenvalues against numpy's; gradients by finite differences for losses that do not depend on
the eigenvectors' phases (torch's rule, and its error for those that do); torch's errors."""
import numpy as np
import pytest

import minitorch as mt

try:
    import torch
except ImportError:
    torch = None


def matched_distance(ours, theirs):
    """Largest distance between two sets of eigenvalues, matched greedily nearest first
    (the order of the eigenvalues is the algorithm's, not a mathematical one)."""
    left = list(np.asarray(theirs).reshape(-1))
    worst = 0.0
    for value in np.asarray(ours).reshape(-1):
        distances = [abs(value - other) for other in left]
        best = int(np.argmin(distances))
        worst = max(worst, distances[best])
        left.pop(best)
    return worst


def check_decomposition(A, L, V, tolerance):
    A, L, V = np.asarray(A), L.cpu().numpy(), V.cpu().numpy()
    np.testing.assert_allclose(A @ V, V * L[..., None, :], atol=tolerance)
    np.testing.assert_allclose(np.linalg.norm(V, axis=-2), 1, atol=tolerance)
    largest = np.take_along_axis(V, np.abs(V).argmax(-2)[..., None, :], -2)
    assert np.all(largest.imag == 0) and np.all(largest.real > 0)


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "batched"])
def test_real_and_complex_matrices(layout, device):
    rng = np.random.default_rng(0)
    shape = (3, 7, 7) if layout == "batched" else (7, 7)
    for array in (rng.standard_normal(shape),
                  rng.standard_normal(shape) + 1j * rng.standard_normal(shape)):
        A = mt.tensor(array, device=device)
        if layout == "transposed":
            A, array = A.mT, array.swapaxes(-1, -2)
        L, V = mt.linalg.eig(A)
        assert L.dtype is mt.complex128 and V.shape == A.shape and L.device.type == device
        check_decomposition(array, L, V, 1e-12)
        assert matched_distance(L.cpu().numpy(), np.linalg.eigvals(array)) < 1e-12
        np.testing.assert_allclose(mt.linalg.eigvals(A).cpu().numpy(), L.cpu().numpy())


def test_single_precision_and_special_matrices():
    rng = np.random.default_rng(1)
    A = rng.standard_normal((5, 5)).astype(np.float32)
    L, V = mt.linalg.eig(mt.tensor(A))
    assert L.dtype is mt.complex64 and V.dtype is mt.complex64
    check_decomposition(A.astype(np.float64), L, V, 1e-5)
    rotation = np.array([[0.0, -1.0], [1.0, 0.0]])
    assert matched_distance(mt.linalg.eigvals(mt.tensor(rotation)).numpy(), [1j, -1j]) < 1e-15
    for A in (np.eye(4), np.zeros((3, 3)), np.diag([3.0, 3.0, 1.0]), [[2.0, 1.0], [0.0, 2.0]]):
        L, V = mt.linalg.eig(mt.tensor(A))         # repeated: finite, unit vectors
        assert np.isfinite(V.numpy()).all()
        np.testing.assert_allclose(np.asarray(A) @ V.numpy(), V.numpy() * L.numpy(),
                                   atol=1e-12)
    roots = np.arange(1.0, 9.0)                     # a companion matrix: its polynomial's roots
    companion = np.diag(np.ones(7), -1)
    companion[0] = -np.poly(roots)[1:]
    found = np.sort(mt.linalg.eigvals(mt.tensor(companion)).numpy().real)
    np.testing.assert_allclose(found, roots, rtol=1e-8)
    empty = mt.linalg.eig(mt.zeros(2, 0, 0))
    assert empty.eigenvalues.shape == (2, 0) and empty.eigenvectors.dtype is mt.complex64


def _invariant(A):
    """A loss of L and V that the eigenvectors' phases do not change."""
    L, V = mt.linalg.eig(A)
    return (mt.view_as_real(L), (V * V.conj()).real,
            mt.view_as_real(V[..., 0, :] * V[..., 1, :].conj()))


def test_gradients_by_finite_differences():
    rng = np.random.default_rng(2)
    real = mt.tensor(rng.standard_normal((4, 4)), requires_grad=True)
    complex_ = mt.tensor(rng.standard_normal((2, 3, 3)) + 1j * rng.standard_normal((2, 3, 3)),
                         requires_grad=True)
    for A in (real, complex_):
        assert mt.autograd.gradcheck(_invariant, (A,))
        assert mt.autograd.gradcheck(lambda A: mt.view_as_real(mt.linalg.eigvals(A)), (A,))
    assert mt.autograd.gradgradcheck(lambda A: mt.view_as_real(mt.linalg.eigvals(A)), (real,))
    with pytest.raises(RuntimeError, match="specified up to multiplication by e\\^\\{i phi\\}"):
        mt.linalg.eig(real)[1].sum().abs().backward()


@pytest.mark.parametrize("call, kind, message", [
    (lambda: mt.linalg.eig(mt.ones(2, 3)), RuntimeError,
     "linalg.eig: A must be batches of square matrices, but they are 2 by 3 matrices"),
    (lambda: mt.linalg.eig(mt.ones(3)), RuntimeError,
     "linalg.eig: The input tensor A must have at least 2 dimensions."),
    (lambda: mt.linalg.eig(mt.ones(2, 2, dtype=mt.int64)), RuntimeError,
     "Unknown Complex ScalarType for Long"),
    (lambda: mt.linalg.eig(mt.ones(2, 2, dtype=mt.float16)), NotImplementedError,
     "\"linalg_eig_out_cpu\" not implemented for 'Half'"),
    (lambda: mt.linalg.eig(mt.tensor([[1.0, float("nan")], [0.0, 1.0]])), RuntimeError,
     "torch.linalg.eig: input tensor should not contain infs or NaNs."),
])
def test_errors_are_torchs(call, kind, message):
    with pytest.raises(kind, match=message.replace("(", r"\(").replace(")", r"\)")
                       .replace(".", r"\.")):
        call()


@pytest.mark.skipif(torch is None, reason="torch is not installed")
def test_gradient_equals_torchs():
    A = np.random.default_rng(3).standard_normal((4, 4))
    grads = []
    for lib in (torch, mt):
        x = lib.tensor(A, requires_grad=True)
        L, V = lib.linalg.eig(x)
        ((L.real * 2 + L.imag).sum() + ((V * V.conj()).real * lib.arange(4.0)).sum()).backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[1], grads[0], atol=1e-10)
