"""Spectral linear algebra: the eigh/svd/qr kernels on both backends (the emulated GPU against
the CPU), and eigh, eigvalsh, svd, svdvals, qr, pinv, matrix_rank, lstsq, cond and the spectral
matrix norms against torch, with their gradients. Eigen- and singular vectors are compared
through quantities that do not depend on their signs."""
import math
import types

import numpy as np
import pytest

import minitorch as mt
from minitorch import _cpu
from minitorch.autograd import gradcheck, gradgradcheck
from minitorch.functions import spectral as F

import cuda_emulator
from torch_parity import same_error

torch = pytest.importorskip("torch")

# torch's namespace shape for the functions (mt.linalg is registered by the lead)
OURS = types.SimpleNamespace(linalg=types.SimpleNamespace(**F.LINALG), svd=F.svd, qr=F.qr,
                             pinverse=F.pinverse, tensor=mt.tensor, float64=mt.float64,
                             int64=mt.int64)


def host(t):
    return t.detach().cpu().numpy()


def ours(a, device, requires_grad=False):
    return mt.tensor(np.asarray(a), device=device, requires_grad=requires_grad)


def theirs(a):
    return torch.from_numpy(np.array(a))


def random(*shape, seed=0, dtype=np.float64):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def symmetric(*shape, seed=0):
    a = random(*shape, seed=seed)
    return a + np.swapaxes(a, -1, -2)


def tolerance(dtype):
    return 2e-4 if dtype == np.float32 else 1e-10


def assert_orthonormal_columns(q, atol):
    k = q.shape[-1]
    identity = np.broadcast_to(np.eye(k), q.shape[:-2] + (k, k))
    np.testing.assert_allclose(np.swapaxes(q, -1, -2) @ q, identity, atol=atol)


def assert_same_columns_up_to_sign(ours_, theirs_, atol):
    """|theirs^T ours| is the identity: each column equal up to sign (distinct values)."""
    overlap = np.abs(np.swapaxes(theirs_, -1, -2) @ ours_)
    np.testing.assert_allclose(overlap, np.broadcast_to(np.eye(overlap.shape[-1]),
                                                        overlap.shape), atol=atol)


# ---- the kernels --------------------------------------------------------------------------------
def run_kernel(backend, kernel, arrays, sizes):
    """Run `kernel` on copies of the host arrays; the arrays it left, back on the host."""
    buffers = [backend.from_host(a.copy()) for a in arrays]
    getattr(backend, kernel)(*buffers, *sizes)
    return [backend.to_host(b) for b in buffers]


def kernel_cases(dtype):
    """(kernel, host arrays, sizes) covering odd and even n, a batch, tall, wide and square."""
    rng = np.random.default_rng(5)
    cases = []
    for batch, n in ((2, 5), (1, 6), (3, 1)):
        a = rng.standard_normal(batch * n * n).astype(dtype)
        cases.append(("eigh_jacobi", [a, np.empty(batch * n, dtype), np.empty(a.size, dtype),
                                      np.empty(batch, np.int64)], (batch, n)))
    for batch, m, n in ((2, 5, 3), (1, 4, 4), (2, 3, 1)):
        a = rng.standard_normal(batch * m * n).astype(dtype)
        outputs = [np.empty(batch * n, dtype), np.empty(batch * n * n, dtype)]
        cases.append(("svd_jacobi", [a] + outputs + [np.empty(batch, np.int64)], (batch, m, n)))
    for batch, m, n in ((2, 5, 3), (1, 3, 5)):
        a = rng.standard_normal(batch * m * n).astype(dtype)
        cases.append(("qr_householder", [a, np.empty(batch * min(m, n), dtype)], (batch, m, n)))
    return cases


def test_emulated_gpu_kernels_match_cpu():
    """The CUDA kernels, run by the emulator, against the CPU kernels: same values (vectors
    up to rounding, in the same order and signs), same Q; the same errors."""
    from minitorch._gpu.backend import GpuBackend
    emulated = cuda_emulator.cupy_module()
    gpu = GpuBackend(emulated, 0)
    for dtype in (np.float32, np.float64):
        atol = 1e-4 if dtype == np.float32 else 1e-12
        for kernel, arrays, sizes in kernel_cases(dtype):
            cpu_out = run_kernel(_cpu, kernel, arrays, sizes)
            gpu_out = run_kernel(gpu, kernel, arrays, sizes)
            if cuda_emulator.can_execute():
                for c, g in zip(cpu_out, gpu_out):
                    np.testing.assert_allclose(g, c, atol=atol, err_msg=kernel)
            if kernel == "qr_householder" and cuda_emulator.can_execute():
                batch, m, n = sizes
                for cols in (min(m, n), m):
                    q = np.empty(batch * m * cols, dtype)
                    cpu_q = run_kernel(_cpu, "qr_form_q", cpu_out + [q], sizes + (cols,))
                    gpu_q = run_kernel(gpu, "qr_form_q", cpu_out + [q], sizes + (cols,))
                    np.testing.assert_allclose(gpu_q[2], cpu_q[2], atol=atol)
    assert {"eigh_jacobi_kernel<float>", "svd_jacobi_kernel<double>",
            "qr_form_q_kernel<double>"} <= set(emulated.launches)
    cuda_emulator.assert_same_kernel_errors(_cpu, gpu, kernel_errors())


def kernel_errors():
    """(kernel, args, exception type) refused with one message on every backend."""
    f32, f64, i64 = (np.zeros(8, t) for t in (np.float32, np.float64, np.int64))
    info = np.zeros(2, np.int64)
    return [("eigh_jacobi", (i64, i64, i64, info, 2, 2), TypeError),
            ("eigh_jacobi", (f64, f32, f64, info, 2, 2), TypeError),
            ("eigh_jacobi", (f64, f64[:4], f64, info.astype(np.float64), 2, 2), TypeError),
            ("eigh_jacobi", (f64, f64[:3], f64, info, 2, 2), ValueError),
            ("eigh_jacobi", (f64, f64[:4], f64, info, 2, -1), ValueError),
            ("svd_jacobi", (f64, f64[:2], f64[:2], info[:1], 1, 2, 4), ValueError),
            ("svd_jacobi", (f64, f64[:4], f64, info[:1], 1, 4, 2), ValueError),
            ("qr_householder", (f32, f64[:4], 2, 2, 2), TypeError),
            ("qr_form_q", (f64, f64[:4], f64, 2, 2, 2, 3), ValueError)]


def test_cpu_kernels_reconstruct(rng):
    """eigh and svd kernels give A back with orthonormal vectors, in sorted order; QR equals
    LAPACK's (torch's) Householder factors."""
    a = symmetric(3, 7, 7)
    w, v, info = np.empty(21), np.empty(147), np.zeros(3, np.int64)
    work = np.tril(a).copy()            # the kernel reads the lower triangle only
    _cpu.eigh_jacobi(work.reshape(-1), w, v, info, 3, 7)
    w, v = w.reshape(3, 7), v.reshape(3, 7, 7)
    assert not info.any() and (np.diff(w, axis=-1) >= 0).all()
    np.testing.assert_allclose(v @ (w[..., None] * np.swapaxes(v, -1, -2)), a, atol=1e-12)
    u = random(2, 6, 4)
    u[..., 3] = u[..., 1]               # rank deficient: U still gets orthonormal columns
    original = u.copy()
    s, vv = np.empty(8), np.empty(32)
    _cpu.svd_jacobi(u.reshape(-1), s, vv, info[:2], 2, 6, 4)
    s, vv = s.reshape(2, 4), vv.reshape(2, 4, 4)
    assert (np.diff(s, axis=-1) <= 0).all() and s[:, -1].max() < 1e-12
    assert_orthonormal_columns(u, 1e-12)
    np.testing.assert_allclose((u * s[:, None]) @ np.swapaxes(vv, -1, -2), original,
                               atol=1e-12)


# ---- eigh, eigvalsh -----------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh_matches_torch(device, dtype, uplo):
    a = random(2, 3, 6, 6, dtype=dtype)            # not symmetric: only one triangle counts
    values, vectors = F.eigh(ours(a, device), UPLO=uplo)
    want_values, want_vectors = torch.linalg.eigh(theirs(a), UPLO=uplo)
    atol = tolerance(dtype) * 10
    assert values.dtype is vectors.dtype and host(values).dtype == dtype
    np.testing.assert_allclose(host(values), want_values.numpy(), atol=atol)
    assert_same_columns_up_to_sign(host(vectors), want_vectors.numpy(), atol)
    np.testing.assert_allclose(host(F.eigvalsh(ours(a, device), uplo)), want_values.numpy(),
                               atol=atol)


def test_eigh_empty_and_one(device):
    values, vectors = F.eigh(ours(np.zeros((2, 0, 0)), device))
    assert values.shape == (2, 0) and vectors.shape == (2, 0, 0)
    values, vectors = F.eigh(ours([[3.0]], device))
    assert host(values).tolist() == [3.0] and host(vectors).tolist() == [[1.0]]


LAYOUTS = {
    "contiguous": lambda x: x,
    "transposed": lambda x: x.mT,
    "stepped": lambda x: x[..., ::2, :],
}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_eigh_gradients(device, layout):
    shape = (8, 4) if layout == "stepped" else (2, 3, 3)
    a = ours(random(*shape, seed=1), device, requires_grad=True)

    def eigen_parts(x):
        x = LAYOUTS[layout](x)
        values, vectors = F.eigh(x + x.mT)
        return values, vectors * vectors           # the square does not see the sign
    assert gradcheck(eigen_parts, (a,))
    assert gradcheck(lambda x: F.eigvalsh(LAYOUTS[layout](x) + LAYOUTS[layout](x).mT, "U"),
                     (a,))


def test_eigh_second_derivatives(device):
    a = ours(random(3, 3, seed=2), device, requires_grad=True)
    assert gradgradcheck(lambda x: F.eigh(x + x.mT).eigenvectors.square(), (a,))


# ---- svd, svdvals -------------------------------------------------------------------------------
SVD_SHAPES = [(5, 3), (3, 5), (2, 4, 4), (1, 3, 1)]


@pytest.mark.parametrize("shape", SVD_SHAPES, ids=str)
@pytest.mark.parametrize("full_matrices", [True, False])
def test_svd_matches_torch(device, shape, full_matrices):
    a = random(*shape, seed=3)
    U, S, Vh = F.linalg_svd(ours(a, device), full_matrices=full_matrices)
    tU, tS, tVh = torch.linalg.svd(theirs(a), full_matrices=full_matrices)
    assert (U.shape, S.shape, Vh.shape) == (tuple(tU.shape), tuple(tS.shape), tuple(tVh.shape))
    np.testing.assert_allclose(host(S), tS.numpy(), atol=1e-12)
    k = S.shape[-1]
    u, vh = host(U), host(Vh)
    np.testing.assert_allclose((u[..., :k] * host(S)[..., None, :]) @ vh[..., :k, :], a,
                               atol=1e-12)
    assert_orthonormal_columns(u, 1e-12)
    assert_orthonormal_columns(np.swapaxes(vh, -1, -2), 1e-12)
    assert_same_columns_up_to_sign(u[..., :k], tU.numpy()[..., :k], 1e-10)
    np.testing.assert_allclose(host(F.svdvals(ours(a, device))), tS.numpy(), atol=1e-12)


def test_old_svd_api(device):
    a = random(4, 3, seed=4)
    for some in (True, False):
        U, S, V = F.svd(ours(a, device), some=some)
        tU, tS, tV = torch.svd(theirs(a), some=some)
        assert (U.shape, V.shape) == (tuple(tU.shape), tuple(tV.shape))
        np.testing.assert_allclose((host(U)[:, :3] * host(S)) @ host(V)[:, :3].T, a,
                                   atol=1e-12)
    U, S, V = F.svd(ours(a, device), compute_uv=False)
    assert U.shape == (4, 4) and V.shape == (3, 3) and not host(U).any() and not host(V).any()
    np.testing.assert_allclose(host(S), torch.svd(theirs(a)).S.numpy(), atol=1e-12)


def test_svd_empty(device):
    for shape in ((0, 3), (3, 0), (2, 0, 0)):
        U, S, Vh = F.linalg_svd(ours(np.zeros(shape), device))
        tU, tS, tVh = torch.linalg.svd(torch.zeros(shape, dtype=torch.float64))
        for mine, want in ((U, tU), (S, tS), (Vh, tVh)):
            assert mine.shape == tuple(want.shape)
            np.testing.assert_array_equal(host(mine), want.numpy())


def test_svd_float32_rank_deficient(device):
    a = random(6, 4, seed=6, dtype=np.float32)
    a[:, 3] = a[:, 0] - a[:, 1]
    U, S, Vh = F.linalg_svd(ours(a, device), full_matrices=False)
    assert_orthonormal_columns(host(U), 1e-5)
    np.testing.assert_allclose((host(U) * host(S)) @ host(Vh), a, atol=1e-5)
    assert host(S)[-1] < 1e-5


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (3, 3)], ids=str)
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_svd_gradients(device, shape, layout):
    a = ours(random(*shape, seed=7), device, requires_grad=True)

    def invariant(x):
        U, S, Vh = F.linalg_svd(LAYOUTS[layout](x), full_matrices=False)
        return S, U * U, Vh * Vh, U @ Vh          # U and Vh change sign together
    assert gradcheck(invariant, (a,))
    assert gradcheck(lambda x: F.svdvals(LAYOUTS[layout](x)), (a,))
    # the full U's added columns carry no gradient, as in torch
    assert gradcheck(lambda x: F.linalg_svd(x).S, (a,))


def test_svd_second_derivatives(device):
    a = ours(random(3, 2, seed=8), device, requires_grad=True)
    assert gradgradcheck(lambda x: F.linalg_svd(x, False).U @ F.linalg_svd(x, False).Vh, (a,))


# ---- qr -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4), (0, 3)], ids=str)
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_qr_matches_torch(device, shape, mode):
    a = random(*shape, seed=9)
    Q, R = F.linalg_qr(ours(a, device), mode)
    tQ, tR = torch.linalg.qr(theirs(a), mode)
    for mine, want in ((Q, tQ), (R, tR)):    # LAPACK's convention: no sign freedom
        assert mine.shape == tuple(want.shape)
        np.testing.assert_allclose(host(mine), want.numpy(), atol=1e-12)
    Q, R = F.qr(ours(a, device), some=mode != "complete")
    if mode != "r":
        np.testing.assert_allclose(host(Q), tQ.numpy(), atol=1e-12)


@pytest.mark.parametrize("shape", [(4, 3), (3, 3), (2, 4)], ids=str)
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_qr_gradients(device, shape, layout):
    a = ours(random(*shape, seed=10), device, requires_grad=True)
    assert gradcheck(lambda x: tuple(F.linalg_qr(LAYOUTS[layout](x))), (a,))
    assert gradcheck(lambda x: F.linalg_qr(LAYOUTS[layout](x)).R, (a,))


def test_qr_second_derivatives_and_refusals(device):
    a = ours(random(3, 3, seed=11), device, requires_grad=True)
    assert gradgradcheck(lambda x: tuple(F.linalg_qr(x)), (a,))
    for mode, shape in (("r", (3, 3)), ("complete", (4, 3))):
        x = random(*shape, seed=12)
        mine = ours(x, device, requires_grad=True)
        want = theirs(x).requires_grad_()
        with pytest.raises(RuntimeError) as ours_error:
            F.linalg_qr(mine, mode)[1 if mode == "r" else 0].sum().backward()
        with pytest.raises(RuntimeError) as torch_error:
            torch.linalg.qr(want, mode)[1 if mode == "r" else 0].sum().backward()
        assert str(ours_error.value) == str(torch_error.value)


# ---- pinv, matrix_rank, lstsq, cond, norms ------------------------------------------------------
def deficient(seed=13):
    """Two 5 x 4 matrices of rank 3 and 4, and the symmetric 4 x 4 products."""
    a = random(2, 5, 4, seed=seed)
    a[0, :, 3] = a[0, :, 0] + a[0, :, 1]
    return a


@pytest.mark.parametrize("kwargs", [{}, {"rtol": 0.3}, {"atol": 0.5}, {"hermitian": True},
                                    {"atol": 0.1, "rtol": 0.2, "hermitian": True}], ids=str)
def test_pinv_and_rank_match_torch(device, kwargs):
    a = deficient()
    if kwargs.get("hermitian"):
        a = a @ np.swapaxes(a, -1, -2) - 2 * np.eye(5)
    np.testing.assert_allclose(host(F.pinv(ours(a, device), **kwargs)),
                               torch.linalg.pinv(theirs(a), **kwargs).numpy(), atol=1e-10)
    rank = F.matrix_rank(ours(a, device), **kwargs)
    assert rank.dtype is mt.int64
    assert host(rank).tolist() == torch.linalg.matrix_rank(theirs(a), **kwargs).tolist()


def test_tolerance_forms(device):
    a = np.diag([1.0, 1e-3, 1e-8])
    for call in (lambda L, x: L.linalg.pinv(x, 1e-4),
                 lambda L, x: L.pinverse(x, rcond=1e-4),
                 lambda L, x: L.linalg.pinv(x, atol=L.tensor(1e-4, dtype=L.float64)),
                 lambda L, x: L.linalg.matrix_rank(x, 1e-4),
                 lambda L, x: L.linalg.matrix_rank(x, atol=1e-9, rtol=0.01)):
        want = call(torch, theirs(a)).numpy()
        np.testing.assert_allclose(host(call(OURS, ours(a, device))), want, atol=1e-9)
    batch = random(2, 3, 3)
    tol = np.array([0.1, 100.0])
    assert host(F.matrix_rank(ours(batch, device), atol=ours(tol, device))).tolist() == \
        torch.linalg.matrix_rank(theirs(batch), atol=theirs(tol)).tolist()
    assert host(F.matrix_rank(ours(np.zeros((2, 0, 3)), device))).tolist() == [0, 0]
    assert F.pinv(ours(np.zeros((0, 3)), device)).shape == (3, 0)


def test_pinv_gradients(device):
    a = ours(random(3, 2, seed=14), device, requires_grad=True)
    assert gradcheck(F.pinv, (a,))
    assert gradgradcheck(F.pinv, (a,))
    s = ours(random(3, 3, seed=15), device, requires_grad=True)
    assert gradcheck(lambda x: F.pinv(x @ x.mT + mt.eye(3, dtype=mt.float64, device=device),
                                      hermitian=True), (s,))


@pytest.mark.parametrize("driver", [None, "gels", "gelsy", "gelsd", "gelss"])
def test_lstsq_matches_torch(driver):
    for a, b in ((random(5, 3), random(5, 2, seed=1)), (random(3, 5), random(3, 2, seed=1)),
                 (random(2, 5, 3), random(2, 5, seed=1)), (random(2, 4, 3), random(1, 4, 2))):
        mine = F.lstsq(ours(a, "cpu"), ours(b, "cpu"), driver=driver)
        want = torch.linalg.lstsq(theirs(a), theirs(b), driver=driver)
        for field, got, expected in zip(mine._fields, mine, want):
            assert got.shape == tuple(expected.shape), field
            assert got.dtype is (mt.int64 if field == "rank" else mt.float64)
            np.testing.assert_allclose(host(got), expected.numpy(), atol=1e-10, err_msg=field)


def test_lstsq_on_device_and_gradients(device):
    a, b = ours(random(5, 3), device, True), ours(random(5, 2, seed=1), device, True)
    result = F.lstsq(a, b)
    want = torch.linalg.lstsq(theirs(host(a)), theirs(host(b)), driver="gels")
    np.testing.assert_allclose(host(result.solution), want.solution.numpy(), atol=1e-10)
    assert gradcheck(lambda x, y: F.lstsq(x, y).solution, (a, b))


@pytest.mark.parametrize("p", [None, 2, -2, "fro", "nuc", math.inf, -math.inf, 1, -1])
def test_cond_matches_torch(device, p):
    a = random(2, 4, 4, seed=16)
    np.testing.assert_allclose(host(F.cond(ours(a, device), p)),
                               torch.linalg.cond(theirs(a), p).numpy(), rtol=1e-9)
    singular = np.array([[1.0, 0.0], [0.0, 0.0]])
    assert host(F.cond(ours(singular, device), p)).tolist() == \
        torch.linalg.cond(theirs(singular), p).item()
    wide = random(3, 5, seed=17)
    if p in (None, 2, -2):
        np.testing.assert_allclose(host(F.cond(ours(wide, device), p)),
                                   torch.linalg.cond(theirs(wide), p).numpy(), rtol=1e-9)
    assert host(F.cond(ours(np.zeros((2, 0, 0)), device), p)).tolist() == [0.0, 0.0]


@pytest.mark.parametrize("ord", ["nuc", 2, -2])
def test_spectral_matrix_norms(device, ord):
    a = random(3, 4, 5, seed=18)
    for dim, keepdim in (((-2, -1), False), ((0, 2), True)):
        np.testing.assert_allclose(host(F.matrix_norm_spectral(ours(a, device), ord, dim,
                                                               keepdim)),
                                   torch.linalg.matrix_norm(theirs(a), ord, dim,
                                                            keepdim).numpy(), rtol=1e-10)
    x = ours(random(3, 4, seed=19), device, requires_grad=True)
    assert gradcheck(lambda t: F.matrix_norm_spectral(t, ord), (x,))


# ---- errors -------------------------------------------------------------------------------------
def float_matrix(L, *shape):
    return L.tensor(np.ones(shape), dtype=L.float64)


def long_matrix(L, *shape):
    return L.tensor(np.ones(shape, np.int64), dtype=L.int64)


ERRORS = [
    lambda L: L.linalg.eigh(float_matrix(L, 3)),
    lambda L: L.linalg.eigh(float_matrix(L, 2, 3)),
    lambda L: L.linalg.eigh(long_matrix(L, 3, 3)),
    lambda L: L.linalg.eigh(float_matrix(L, 2, 2), UPLO="x"),
    lambda L: L.linalg.eigvalsh(float_matrix(L, 3)),
    lambda L: L.linalg.svd(float_matrix(L, 3)),
    lambda L: L.linalg.svd(long_matrix(L, 3, 3)),
    lambda L: L.linalg.svd(float_matrix(L, 2, 3), driver="gesvd"),
    lambda L: L.linalg.svdvals(long_matrix(L, 3, 3)),
    lambda L: L.svd(float_matrix(L, 3)),
    lambda L: L.linalg.qr(float_matrix(L, 3)),
    lambda L: L.linalg.qr(long_matrix(L, 3, 3)),
    lambda L: L.linalg.qr(float_matrix(L, 2, 3), mode="x"),
    lambda L: L.linalg.pinv(float_matrix(L, 3)),
    lambda L: L.linalg.pinv(long_matrix(L, 3, 3)),
    lambda L: L.pinverse(float_matrix(L, 3)),
    lambda L: L.linalg.pinv(float_matrix(L, 2, 3), hermitian=True),
    lambda L: L.linalg.matrix_rank(float_matrix(L, 3)),
    lambda L: L.linalg.matrix_rank(long_matrix(L, 3, 3)),
    lambda L: L.linalg.matrix_rank(float_matrix(L, 2, 3), hermitian=True),
    lambda L: L.linalg.lstsq(float_matrix(L, 3), float_matrix(L, 3)),
    lambda L: L.linalg.lstsq(long_matrix(L, 3, 3), long_matrix(L, 3, 3)),
    lambda L: L.linalg.lstsq(float_matrix(L, 2, 3), float_matrix(L, 3, 2)),
    lambda L: L.linalg.lstsq(float_matrix(L, 2, 3), float_matrix(L, 2, 1), driver="foo"),
    lambda L: L.linalg.lstsq(float_matrix(L, 2, 3), float_matrix(L, 2, 2, 1, 1)),
    lambda L: L.linalg.cond(float_matrix(L, 3)),
    lambda L: L.linalg.cond(long_matrix(L, 3, 3)),
    lambda L: L.linalg.cond(float_matrix(L, 2, 3), "fro"),
    lambda L: L.linalg.cond(float_matrix(L, 2, 2), 3),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_errors_match_torch(case):
    call = ERRORS[case]
    same_error(lambda L: call(OURS if L is mt else L))


@pytest.mark.parametrize("scale,dtype", [(1e19, "float32"), (1e-20, "float32"),
                                         (1e200, "float64"), (1e-200, "float64")])
def test_huge_and_tiny_matrices_are_scaled_like_lapack(device, scale, dtype):
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(3).standard_normal((4, 3)) * scale
    ours = mt.tensor(a, dtype=getattr(mt, dtype), device=device)
    theirs = torch.tensor(a, dtype=getattr(torch, dtype))
    rtol = 1e-4 if dtype == "float32" else 1e-10
    np.testing.assert_allclose(mt.linalg.svdvals(ours).cpu().numpy(),
                               torch.linalg.svdvals(theirs).numpy(), rtol=rtol)
    np.testing.assert_allclose(mt.linalg.qr(ours).R.cpu().numpy(),
                               torch.linalg.qr(theirs).R.numpy(), rtol=rtol, atol=0)
    sym = ours[:3] + ours[:3].mT
    np.testing.assert_allclose(mt.linalg.eigvalsh(sym).cpu().numpy(),
                               torch.linalg.eigvalsh(theirs[:3] + theirs[:3].mT).numpy(),
                               rtol=rtol)
    assert mt.linalg.matrix_rank(ours).item() == 3


def test_non_finite_input_to_the_svd_is_refused_like_torch(device):
    bad = [[1., float("nan")], [0., 1.]]
    for call in (mt.linalg.svdvals, mt.linalg.pinv, mt.linalg.matrix_rank):
        with pytest.raises(mt.linalg.LinAlgError, match="contained non-finite values"):
            call(mt.tensor(bad, dtype=mt.float64, device=device))


@pytest.mark.parametrize("shape,k,dtype", [((4, 3), 2, "float64"), ((5, 3), 3, "float64"),
                                           ((2, 4, 4), 3, "float64"), ((4, 3), 3, "complex128"),
                                           ((3, 3), 0, "float64"), ((4, 2), 2, "float32")])
def test_householder_product_matches_torch(device, shape, k, dtype):
    """linalg.householder_product (torch.orgqr, Tensor.orgqr): the first n columns of the
    reflectors' product, equal to torch's; geqrf's reflectors give back an orthonormal Q with
    Q R = A; gradients by finite differences (a vmap of the vjp too)."""
    rng = np.random.default_rng(3)
    complex_ = dtype.startswith("complex")
    a = rng.standard_normal(shape) + (1j * rng.standard_normal(shape) if complex_ else 0)
    t = rng.random(shape[:-2] + (k,)) + (1j * rng.random(shape[:-2] + (k,)) if complex_ else 0)
    expected = torch.linalg.householder_product(torch.tensor(a, dtype=getattr(torch, dtype)),
                                                torch.tensor(t, dtype=getattr(torch, dtype)))
    A = mt.tensor(a, dtype=getattr(mt, dtype), device=device)
    tau = mt.tensor(t, dtype=getattr(mt, dtype), device=device)
    tol = 1e-5 if dtype == "float32" else 1e-12
    for got in (mt.linalg.householder_product(A, tau), mt.orgqr(A, tau), A.orgqr(tau)):
        np.testing.assert_allclose(got.cpu().numpy(), expected.numpy(), rtol=tol, atol=tol)
    if dtype == "float64" and len(shape) == 2 and k:
        assert gradcheck(mt.linalg.householder_product,
                         (A.clone().requires_grad_(), tau.clone().requires_grad_()),
                         check_batched_grad=True)


def test_householder_product_of_geqrf_is_q_and_torch_errors():
    A = mt.tensor(np.random.default_rng(4).standard_normal((5, 3)))
    reflectors, tau = A.geqrf()
    Q = mt.linalg.householder_product(reflectors, tau)
    np.testing.assert_allclose((Q.mT @ Q).numpy(), np.eye(3), atol=1e-12)
    np.testing.assert_allclose((Q @ reflectors.triu()[:3]).numpy(), A.numpy(), atol=1e-12)
    for a, t in ((mt.randn(3, 4), mt.rand(2)), (mt.randn(4, 3), mt.rand(4)),
                 (mt.randn(4, 3), mt.rand(2, dtype=mt.float64)), (mt.randn(2, 4, 3), mt.rand(3, 2)),
                 (mt.randn(4), mt.rand(1))):
        same_error(lambda lib, a=a, t=t: lib.linalg.householder_product(
            a if lib is mt else torch.tensor(a.numpy()), t if lib is mt else
            torch.tensor(t.numpy())))
