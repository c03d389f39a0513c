"""LU, Cholesky and triangular solves: the kernels on both backends (the emulated GPU against the
CPU), and det, slogdet, logdet, inverse, solve, the LU family, solve_triangular,
triangular_solve, the Cholesky family, matrix_power and matrix_exp against torch, with their
gradients (gradcheck and gradgradcheck in float64), errors and infos."""
import types
import warnings

import numpy as np
import pytest

import minitorch as mt
from minitorch import _cpu
from minitorch.autograd import gradcheck, gradgradcheck
from minitorch.functions import factor as F
from minitorch.functions.linalg import matmul

import cuda_emulator

torch = pytest.importorskip("torch")
L = F.LINALG
LINALG = types.SimpleNamespace(**L)     # mt.linalg, until the lead publishes it


def value(t):
    return t.detach().cpu().numpy()


def matrices(*shape, seed=0, dominant=True):
    """Random matrices, made comfortably invertible (a diagonal shift) when square."""
    a = np.random.default_rng(seed).standard_normal(shape)
    if dominant and shape[-1] == shape[-2]:
        a = a + 3 * np.eye(shape[-1])
    return a


def spd(*shape, seed=0):
    a = np.random.default_rng(seed).standard_normal(shape)
    return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])


def make_spd(x):
    """A symmetric positive-definite function of any square x (what Cholesky gradients need:
    its input moves along symmetric directions only)."""
    return matmul(x, x.mT) + 3 * mt.eye(x.shape[-1], dtype=x.dtype, device=x.device)


# ---- the kernels --------------------------------------------------------------------------------
def cpu_lu(a, m, n, batch):
    a = a.copy()
    pivots, info = np.empty(batch * min(m, n), np.int64), np.empty(batch, np.int64)
    _cpu.lu_factor(a, pivots, info, m, n)
    return a, pivots, info


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_cpu_kernels_match_lapack_through_torch(dtype):
    for m, n in ((4, 4), (6, 3), (3, 6), (1, 1)):
        a = matrices(5, m, n, dominant=False).astype(dtype)
        lu, pivots, info = cpu_lu(a.reshape(-1), m, n, 5)
        want_lu, want_pivots = torch.linalg.lu_factor(torch.from_numpy(a))
        np.testing.assert_allclose(lu.reshape(a.shape), want_lu.numpy(), rtol=1e-4, atol=1e-5)
        np.testing.assert_array_equal(pivots.reshape(5, -1), want_pivots.numpy())
        assert not info.any()
    s = spd(3, 5, 5).astype(dtype)
    factor, info = s.reshape(-1).copy(), np.empty(3, np.int64)
    _cpu.cholesky_factor(factor, info, 5)
    np.testing.assert_allclose(factor.reshape(s.shape), np.linalg.cholesky(s), rtol=1e-5)
    assert not info.any()


def test_cpu_lu_info_and_zero_pivot_like_lapack():
    singular = np.array([[1.0, 2, 3], [2, 4, 6], [1, 1, 1]])
    lu, pivots, info = cpu_lu(singular.reshape(-1), 3, 3, 1)
    want = torch.linalg.lu_factor_ex(torch.tensor(singular))
    np.testing.assert_allclose(lu.reshape(3, 3), want.LU.numpy(), atol=1e-15)
    assert pivots.tolist() == want.pivots.tolist() and info.tolist() == [want.info.item()]
    factor, info = np.array([1.0, 2, 2, 1]), np.empty(1, np.int64)
    _cpu.cholesky_factor(factor, info, 2)
    want = torch.linalg.cholesky_ex(torch.tensor([[1.0, 2], [2, 1]]))
    assert info.tolist() == [2] and factor.tolist() == want.L.flatten().tolist()


def kernel_errors():
    """(kernel, args, exception type) refused alike by every backend."""
    f32, f64, i64 = np.zeros(8, np.float32), np.zeros(8, np.float64), np.zeros(2, np.int64)
    return [("lu_factor", (np.zeros(8, np.int64), np.zeros(4, np.int64), i64, 2, 2), TypeError),
            ("lu_factor", (f64, np.zeros(4), i64, 2, 2), TypeError),
            ("lu_factor", (f64, np.zeros(3, np.int64), i64, 2, 2), ValueError),
            ("lu_factor", (f64, np.zeros(4, np.int64), i64, 3, 2), ValueError),
            ("lu_factor", (f64, np.zeros(4, np.int64), i64, -2, 2), ValueError),
            ("lu_permutation", (np.zeros(4, np.int64), np.zeros(4, np.int64), 2, 3), ValueError),
            ("lu_permutation", (np.zeros(4, np.int64), np.zeros(5, np.int64), 2, 2), ValueError),
            ("triangular_solve", (f32, f64, 2, 2), TypeError),
            ("triangular_solve", (f64, np.zeros(6), 2, 2), ValueError),
            ("triangular_solve", (f64, f64.copy(), 3, 1), ValueError),
            ("cholesky_factor", (f64, np.zeros(2, np.float64), 2), TypeError),
            ("cholesky_factor", (f64, np.zeros(3, np.int64), 2), ValueError)]


@pytest.mark.parametrize("case", range(len(kernel_errors())))
def test_cpu_kernels_reject_bad_arguments(case):
    kernel, args, error = kernel_errors()[case]
    with pytest.raises(error, match=kernel):
        getattr(_cpu, kernel)(*args)


def test_emulated_gpu_kernels_match_cpu():
    """The CUDA kernels run by the emulator (block-wide pivot search, sweeps and updates) give
    the CPU's pivots and infos and its values up to rounding; errors are the CPU's."""
    from minitorch._gpu.backend import GpuBackend
    emulated = cuda_emulator.cupy_module()
    gpu = GpuBackend(emulated, 0)
    run = cuda_emulator.can_execute()
    close = {np.float32: 1e-4, np.float64: 1e-12}

    def both(kernel, *args):
        host = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        device = cuda_emulator.on_device(gpu, args)
        getattr(_cpu, kernel)(*host)
        getattr(gpu, kernel)(*device)
        for h, d in zip(host, device):
            if run and isinstance(h, np.ndarray):
                np.testing.assert_allclose(gpu.to_host(d), h, rtol=close.get(h.dtype.type, 0),
                                           atol=close.get(h.dtype.type, 0))

    for dtype in (np.float32, np.float64):
        for m, n, batch in ((5, 5, 3), (7, 3, 2), (3, 6, 2), (40, 40, 1), (0, 0, 2)):
            a = matrices(batch, m, n, seed=m, dominant=False).astype(dtype).reshape(-1)
            a[:n] = 0 if m == 5 else a[:n]          # a zero first row: pivoting still works
            both("lu_factor", a, np.zeros(batch * min(m, n), np.int64),
                 np.zeros(batch, np.int64), m, n)
        singular = np.array([[1, 2, 3], [2, 4, 6], [1, 1, 1]], dtype).reshape(-1)
        both("lu_factor", singular, np.zeros(3, np.int64), np.zeros(1, np.int64), 3, 3)
        both("lu_permutation", np.array([3, 3, 3, 2, 2, 3], np.int64), np.zeros(6, np.int64),
             3, 3)
        for upper in (False, True):
            for unit in (False, True):
                both("triangular_solve", matrices(2, 9, 9).astype(dtype).reshape(-1),
                     matrices(2, 9, 4, seed=1).astype(dtype).reshape(-1), 9, 4, upper, unit)
        both("triangular_solve", matrices(1, 300, 300).astype(dtype).reshape(-1),
             matrices(300, 1, seed=2).astype(dtype).reshape(-1), 300, 1, True, False)
        not_pd = np.stack([spd(6, 6), -spd(6, 6)]).astype(dtype).reshape(-1)
        both("cholesky_factor", not_pd, np.zeros(2, np.int64), 6)
        both("cholesky_factor", spd(1, 33, 33).astype(dtype).reshape(-1), np.zeros(1, np.int64),
             33)
    assert emulated.launches
    cuda_emulator.assert_same_kernel_errors(_cpu, gpu, kernel_errors())


# ---- forward values against torch ---------------------------------------------------------------
LAYOUTS = {"contiguous": lambda a: a, "transposed": lambda a: a.mT}


def run_both(fn, arrays, device, layout):
    ours = fn(mt, *(LAYOUTS[layout](mt.tensor(a, device=device)) for a in arrays))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # torch.cholesky / triangular_solve deprecations
        theirs = fn(torch, *(LAYOUTS[layout](torch.tensor(a)) for a in arrays))
    return ours, theirs


def linalg(lib):
    return LINALG if lib is mt else lib.linalg


def top(lib):
    return F if lib is mt else lib


def lu_solve_case(lib, a, b, **kwargs):
    LU, pivots = linalg(lib).lu_factor(a)
    return linalg(lib).lu_solve(LU, pivots, b, **kwargs)


FORWARD = [
    ("det", lambda lib, a: linalg(lib).det(a), [(2, 4, 4)]),
    ("slogdet", lambda lib, a: top(lib).slogdet(a), [(3, 4, 4)]),
    ("logdet", lambda lib, a: top(lib).logdet(a), [(3, 4, 4)]),
    ("inv", lambda lib, a: linalg(lib).inv(a), [(2, 5, 5)]),
    ("inverse", lambda lib, a: top(lib).inverse(a), [(5, 5)]),
    ("solve", lambda lib, a, b: linalg(lib).solve(a, b), [(2, 4, 4), (2, 4, 4)]),
    ("solve_broadcast", lambda lib, a, b: linalg(lib).solve(a, b), [(4, 4), (3, 4, 4)]),
    ("solve_vector", lambda lib, a, b: linalg(lib).solve(a, b[..., 0]), [(2, 4, 4), (2, 4, 4)]),
    ("solve_right", lambda lib, a, b: linalg(lib).solve(a, b, left=False), [(4, 4), (2, 4, 4)]),
    ("lu_factor", lambda lib, a: linalg(lib).lu_factor(a)[0], [(2, 5, 5)]),
    ("lu", lambda lib, a: linalg(lib).lu(a), [(2, 5, 5)]),
    ("lu_wide", lambda lib, a: linalg(lib).lu(a[..., :3, :]), [(2, 5, 5)]),
    ("lu_tall", lambda lib, a: linalg(lib).lu(a[..., :2]), [(2, 5, 5)]),
    ("lu_unpack", lambda lib, a: top(lib).lu_unpack(*linalg(lib).lu_factor(a)), [(5, 5)]),
    ("lu_solve", lambda lib, a, b: lu_solve_case(lib, a, b), [(2, 4, 4), (2, 4, 4)]),
    ("lu_solve_adjoint", lambda lib, a, b: lu_solve_case(lib, a, b, adjoint=True),
     [(2, 4, 4), (4, 4)]),
    ("lu_solve_right", lambda lib, a, b: lu_solve_case(lib, a, b, left=False),
     [(4, 4), (2, 4, 4)]),
    ("lu_solve_right_adjoint", lambda lib, a, b: lu_solve_case(lib, a, b, left=False,
                                                               adjoint=True), [(4, 4), (4, 4)]),
    ("lu_solve_old", lambda lib, a, b: top(lib).lu_solve(b, *linalg(lib).lu_factor(a)),
     [(4, 4), (4, 4)]),
    ("solve_triangular", lambda lib, a, b: linalg(lib).solve_triangular(a, b, upper=True),
     [(2, 4, 4), (4, 4)]),
    ("solve_triangular_lower_right_unit", lambda lib, a, b: linalg(lib).solve_triangular(
        a, b, upper=False, left=False, unitriangular=True), [(3, 1, 4, 4), (2, 4, 4)]),
    ("triangular_solve", lambda lib, a, b: top(lib).triangular_solve(b, a), [(4, 4), (4, 4)]),
    ("triangular_solve_transposed", lambda lib, a, b: top(lib).triangular_solve(
        b, a, upper=False, transpose=True, unitriangular=True), [(2, 4, 4), (4, 4)]),
    ("matrix_power", lambda lib, a: [linalg(lib).matrix_power(a, n) for n in (-3, 0, 1, 6)],
     [(2, 4, 4)]),
    ("matrix_exp", lambda lib, a: [linalg(lib).matrix_exp(a * s) for s in (0.01, 1, 12)],
     [(2, 4, 4)]),
]


def flat(result):
    if isinstance(result, (tuple, list)):
        return [t for part in result for t in flat(part)]
    return [result]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name,fn,shapes", FORWARD, ids=[c[0] for c in FORWARD])
def test_forward_matches_torch(name, fn, shapes, layout, device):
    arrays = [matrices(*shape, seed=i) for i, shape in enumerate(shapes)]
    ours, theirs = run_both(fn, arrays, device, layout)
    for o, t in zip(flat(ours), flat(theirs), strict=True):
        assert o.shape == tuple(t.shape) and o.device.type == device
        np.testing.assert_allclose(value(o), t.numpy(), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_cholesky_family_matches_torch(layout, device):
    s = spd(2, 5, 5)
    for upper in (False, True):
        calls = [lambda lib, a: linalg(lib).cholesky(a, upper=upper),
                 lambda lib, a: top(lib).cholesky(a, upper),
                 lambda lib, a: linalg(lib).cholesky_ex(a, upper=upper),
                 lambda lib, a: top(lib).cholesky_inverse(linalg(lib).cholesky(a, upper=upper),
                                                          upper),
                 lambda lib, a: top(lib).cholesky_solve(a[..., :2], linalg(lib).cholesky(
                     a, upper=upper), upper)]
        for fn in calls:
            ours, theirs = run_both(fn, [s], device, layout)
            for o, t in zip(flat(ours), flat(theirs), strict=True):
                np.testing.assert_allclose(value(o), t.numpy(), rtol=1e-10, atol=1e-12)


def test_float32_and_results_types(device):
    a = matrices(3, 6, 6).astype(np.float32)
    ours = L["solve"](mt.tensor(a, device=device), mt.tensor(a[..., :2], device=device))
    assert ours.dtype is mt.float32
    np.testing.assert_allclose(value(ours), np.linalg.solve(a, a[..., :2]), rtol=1e-4,
                               atol=1e-5)
    sign, logabsdet = F.slogdet(mt.tensor(a, device=device))
    np.testing.assert_allclose(value(logabsdet), np.linalg.slogdet(a)[1], rtol=1e-5)
    assert type(L["slogdet"](mt.tensor(a, device=device))).__name__ == "linalg_slogdet"
    assert L["lu_factor"](mt.tensor(a, device=device)).pivots.dtype is mt.int64


def test_empty_matrices_and_batches(device):
    for shape in ((0, 0), (3, 0, 0), (0, 4, 4)):
        a = np.zeros(shape)
        A, tA = mt.tensor(a, device=device), torch.tensor(a)
        for fn in (lambda lib: linalg(lib).det, lambda lib: linalg(lib).inv,
                   lambda lib: linalg(lib).cholesky, lambda lib: linalg(lib).matrix_exp,
                   lambda lib: lambda x: linalg(lib).solve(x, x),
                   lambda lib: lambda x: linalg(lib).slogdet(x)[1],
                   lambda lib: lambda x: linalg(lib).lu_factor(x)[0]):
            ours, theirs = fn(mt)(A), fn(torch)(tA)
            assert ours.shape == tuple(theirs.shape)
            np.testing.assert_array_equal(value(ours), theirs.numpy())
    assert value(F.det(mt.zeros(2, 0, 0, device=device, dtype=mt.float64))).tolist() == [1, 1]


# ---- singular matrices: infos and errors --------------------------------------------------------
SINGULAR = np.array([[1.0, 2, 3], [2, 4, 6], [1, 1, 1]])


def test_infos_match_torch(device):
    batch = np.stack([np.eye(3), SINGULAR])
    A, tA = mt.tensor(batch, device=device), torch.tensor(batch)
    assert value(L["inv_ex"](A).info).tolist() == torch.linalg.inv_ex(tA).info.tolist()
    assert value(L["solve_ex"](A, A).info).tolist() == torch.linalg.solve_ex(tA, tA).info.tolist()
    ours, theirs = L["lu_factor_ex"](A), torch.linalg.lu_factor_ex(tA)
    assert value(ours.info).tolist() == theirs.info.tolist()
    assert value(ours.pivots).tolist() == theirs.pivots.tolist()
    not_pd = np.stack([np.eye(2), [[1.0, 2], [2, 1]]])
    ours = L["cholesky_ex"](mt.tensor(not_pd, device=device))
    theirs = torch.linalg.cholesky_ex(torch.tensor(not_pd))
    assert value(ours.info).tolist() == theirs.info.tolist()
    np.testing.assert_array_equal(value(ours.L), theirs.L.numpy())
    # a singular matrix's determinant is rounding noise (-0.0 here, -3e-16 from some LAPACKs)
    np.testing.assert_allclose(value(F.det(A)), torch.det(tA).numpy(), rtol=0, atol=1e-12)
    sign, logabsdet = F.slogdet(A)
    assert value(sign).tolist() == [1, 0] and value(logabsdet)[1] == -np.inf


def check_same_error(ours_call, theirs_call):
    """Same message; ours is a LinAlgError where torch's is, else the same builtin type."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(Exception) as theirs:
            theirs_call()
        with pytest.raises(Exception) as ours:
            ours_call()
    assert str(ours.value) == str(theirs.value)
    if isinstance(theirs.value, torch.linalg.LinAlgError):
        assert isinstance(ours.value, F.LinAlgError)
    else:
        assert type(ours.value) is type(theirs.value)


LONG = np.ones((3, 3), np.int64)
ERRORS = [
    ("inv_long", lambda lib: linalg(lib).inv(lib.tensor(LONG))),
    ("inv_not_square", lambda lib: linalg(lib).inv(lib.ones(2, 3))),
    ("inv_vector", lambda lib: top(lib).inverse(lib.ones(3))),
    ("inv_singular", lambda lib: linalg(lib).inv(lib.tensor(SINGULAR))),
    ("inv_singular_batch", lambda lib: linalg(lib).inv(lib.tensor(np.stack([np.eye(3),
                                                                            SINGULAR])))),
    ("inv_ex_check", lambda lib: linalg(lib).inv_ex(lib.tensor(SINGULAR), check_errors=True)),
    ("det_long", lambda lib: linalg(lib).det(lib.tensor(LONG))),
    ("slogdet_not_square", lambda lib: top(lib).slogdet(lib.ones(2, 3))),
    ("logdet_vector", lambda lib: top(lib).logdet(lib.ones(3))),
    ("solve_singular", lambda lib: linalg(lib).solve(lib.tensor(SINGULAR),
                                                     lib.ones(3, 1, dtype=lib.float64))),
    ("solve_shapes", lambda lib: linalg(lib).solve(lib.ones(2, 3, 3), lib.ones(2, 4, 1))),
    ("solve_shapes_right", lambda lib: linalg(lib).solve(lib.ones(3, 3), lib.ones(3, 4),
                                                         left=False)),
    ("solve_batch", lambda lib: linalg(lib).solve(lib.ones(2, 3, 3), lib.ones(5, 3, 1))),
    ("solve_dtype", lambda lib: linalg(lib).solve(lib.ones(3, 3),
                                                  lib.ones(3, 1, dtype=lib.float64))),
    ("solve_0d", lambda lib: linalg(lib).solve(lib.ones(3, 3), lib.tensor(1.0))),
    ("lu_factor_singular", lambda lib: linalg(lib).lu_factor(lib.tensor(SINGULAR))),
    ("lu_factor_vector", lambda lib: linalg(lib).lu_factor(lib.ones(3))),
    ("lu_factor_long", lambda lib: linalg(lib).lu_factor(lib.tensor(LONG))),
    ("lu_vector", lambda lib: linalg(lib).lu(lib.ones(3))),
    ("lu_no_pivot", lambda lib: linalg(lib).lu_factor(lib.ones(3, 3), pivot=False)),
    ("lu_unpack_vector", lambda lib: top(lib).lu_unpack(lib.ones(3), lib.ones(3))),
    ("lu_solve_shapes", lambda lib: linalg(lib).lu_solve(*linalg(lib).lu_factor(lib.eye(3)),
                                                         lib.ones(4, 1))),
    ("lu_solve_B_vector", lambda lib: linalg(lib).lu_solve(*linalg(lib).lu_factor(lib.eye(3)),
                                                           lib.ones(3))),
    ("lu_solve_not_square", lambda lib: linalg(lib).lu_solve(
        lib.ones(3, 4), linalg(lib).lu_factor(lib.eye(3)).pivots, lib.ones(3, 1))),
    ("solve_triangular_shapes", lambda lib: linalg(lib).solve_triangular(
        lib.ones(3, 3), lib.ones(3, 4), upper=True, left=False)),
    ("solve_triangular_vector", lambda lib: linalg(lib).solve_triangular(
        lib.ones(3, 3), lib.ones(3), upper=True)),
    ("solve_triangular_long", lambda lib: linalg(lib).solve_triangular(
        lib.tensor(LONG), lib.tensor(LONG), upper=True)),
    ("triangular_solve_shapes", lambda lib: top(lib).triangular_solve(lib.ones(4, 1),
                                                                      lib.ones(3, 3))),
    ("triangular_solve_A_vector", lambda lib: top(lib).triangular_solve(lib.ones(3, 1),
                                                                        lib.ones(3))),
    ("triangular_solve_dtype", lambda lib: top(lib).triangular_solve(
        lib.ones(3, 1, dtype=lib.float64), lib.ones(3, 3))),
    ("cholesky_not_pd", lambda lib: linalg(lib).cholesky(lib.tensor([[1.0, 2], [2, 1]]))),
    ("cholesky_not_pd_batch", lambda lib: top(lib).cholesky(lib.tensor(
        np.stack([np.eye(2), [[1.0, 2], [2, 1]]])))),
    ("cholesky_ex_check", lambda lib: linalg(lib).cholesky_ex(lib.tensor([[-1.0]]),
                                                              check_errors=True)),
    ("cholesky_long", lambda lib: linalg(lib).cholesky(lib.tensor(LONG))),
    ("cholesky_old_long", lambda lib: top(lib).cholesky(lib.tensor(LONG))),
    ("cholesky_solve_shapes", lambda lib: top(lib).cholesky_solve(lib.ones(4, 1),
                                                                  lib.ones(3, 3))),
    ("cholesky_solve_vector", lambda lib: top(lib).cholesky_solve(lib.ones(3), lib.ones(3, 3))),
    ("cholesky_inverse_long", lambda lib: top(lib).cholesky_inverse(lib.tensor(LONG))),
    ("matrix_power_float_n", lambda lib: linalg(lib).matrix_power(lib.ones(3, 3), 2.0)),
    ("matrix_power_singular", lambda lib: linalg(lib).matrix_power(lib.tensor(SINGULAR), -1)),
    ("matrix_exp_not_square", lambda lib: linalg(lib).matrix_exp(lib.ones(2, 3))),
]


@pytest.mark.parametrize("name,call", ERRORS, ids=[c[0] for c in ERRORS])
def test_errors_match_torch(name, call):
    check_same_error(lambda: call(mt), lambda: call(torch))


def test_pivot_errors_name_int64(device):
    """Pivots are int64 here (int32 in torch): the messages name our dtype, the range checks
    are torch's."""
    A = mt.eye(3, dtype=mt.float64, device=device)
    LU, pivots = L["lu_factor"](A)
    with pytest.raises(RuntimeError, match="pivots should be a Tensor of scalar type "
                                           "torch.int64"):
        L["lu_solve"](LU, pivots.double(), A)
    with pytest.raises(RuntimeError, match="must all be greater or equal to 1"):
        L["lu_solve"](LU, pivots * 0, A)
    with pytest.raises(RuntimeError, match="must all be smaller or equal to LU.size"):
        L["lu_solve"](LU, pivots * 4, A)
    with pytest.raises(RuntimeError, match="must be between 1 and LU.size"):
        F.lu_unpack(LU, pivots * 4)


# ---- gradients ----------------------------------------------------------------------------------
def leaf(*shape, device, seed=0):
    return mt.tensor(matrices(*shape, seed=seed), device=device, requires_grad=True)


def _lu_solve_b(a):
    return lambda b: L["lu_solve"](*L["lu_factor"](a.detach()), b, adjoint=True)


GRADIENTS = [
    ("det", lambda a: F.det(a), [(2, 3, 3)]),
    ("det_transposed", lambda a: F.det(a.mT), [(3, 3)]),
    ("slogdet", lambda a: F.slogdet(a)[1], [(2, 3, 3)]),
    ("logdet", lambda a: F.logdet(make_spd(a)), [(3, 3)]),
    ("inv", lambda a: L["inv"](a), [(2, 3, 3)]),
    ("solve", lambda a, b: L["solve"](a, b), [(2, 3, 3), (2, 3, 2)]),
    ("solve_broadcast_vector", lambda a, b: L["solve"](a, b[0, :, 0]), [(2, 3, 3), (2, 3, 2)]),
    ("solve_right", lambda a, b: L["solve"](a, b.mT, left=False), [(3, 3), (2, 3, 2)]),
    ("solve_triangular", lambda a, b: L["solve_triangular"](a, b, upper=True),
     [(3, 3), (2, 3, 2)]),
    ("solve_triangular_right_unit", lambda a, b: L["solve_triangular"](
        a.mT, b.mT, upper=False, left=False, unitriangular=True), [(2, 3, 3), (2, 3, 2)]),
    ("triangular_solve", lambda a, b: F.triangular_solve(b, a, transpose=True)[0],
     [(3, 3), (3, 2)]),
    ("cholesky", lambda a: L["cholesky"](make_spd(a)), [(2, 3, 3)]),
    ("cholesky_upper", lambda a: F.cholesky(make_spd(a), True), [(3, 3)]),
    ("cholesky_solve", lambda b, a: F.cholesky_solve(b, L["cholesky"](make_spd(a))),
     [(2, 3, 2), (3, 3)]),
    ("cholesky_solve_upper", lambda b, a: F.cholesky_solve(b, mt.triu(a), True),
     [(3, 2), (2, 3, 3)]),
    ("cholesky_inverse", lambda a: F.cholesky_inverse(mt.tril(a)), [(3, 3)]),
    ("matrix_power", lambda a: L["matrix_power"](a, -2), [(3, 3)]),
    ("matrix_exp", lambda a: L["matrix_exp"](a), [(2, 3, 3)]),
]


@pytest.mark.parametrize("name,fn,shapes", GRADIENTS, ids=[c[0] for c in GRADIENTS])
def test_gradients(name, fn, shapes, device):
    inputs = tuple(leaf(*shape, device=device, seed=i) for i, shape in enumerate(shapes))
    assert gradcheck(fn, inputs)
    assert gradgradcheck(fn, inputs)


def test_lu_solve_gradient_of_b(device):
    a = leaf(2, 3, 3, device=device)
    b = leaf(3, 2, device=device, seed=1)
    fn = _lu_solve_b(a)
    assert gradcheck(fn, (b,)) and gradgradcheck(fn, (b,))
    assert fn(b).grad_fn.name() == "LinalgLuSolveBackward0"
    assert F.det(a).grad_fn.name() == "LinalgDetBackward0"


def test_lu_factor_and_lu_solve_differentiate_through_the_factors(device):
    """LU carries A's gradient (square, wide and tall), and lu_solve differentiates in LU too,
    as in torch: lu_solve(A, lu_factor(A)) is the identity in A."""
    torch = pytest.importorskip("torch")
    for shape in ((3, 3), (2, 3, 3), (3, 5), (5, 3)):
        a = leaf(*shape, device=device)
        assert gradcheck(lambda t: L["lu_factor"](t).LU, (a,))
        assert gradcheck(lambda t: tuple(L["lu"](t))[1:], (a,))
    a, b = leaf(3, 3, device=device), leaf(3, 2, device=device, seed=1)
    assert gradgradcheck(lambda t: L["lu"](t).U, (a,))
    for kwargs in ({}, {"adjoint": True}):
        assert gradcheck(lambda x, y: L["lu_solve"](*L["lu_factor"](x), y, **kwargs), (a, b))
    theirs = torch.tensor(a.detach().cpu().numpy(), requires_grad=True)
    torch.linalg.lu_solve(*torch.linalg.lu_factor(theirs), theirs).sum().backward()
    L["lu_solve"](*L["lu_factor"](a), a).sum().backward()
    np.testing.assert_allclose(a.grad.cpu().numpy(), theirs.grad.numpy(), atol=1e-10)
    assert L["lu_factor"](a).LU.grad_fn.name() == "LinalgLuFactorExBackward0"


def test_gradients_match_torch_including_singular_det(device):
    a = matrices(2, 4, 4)
    a[1] = np.outer(a[1, 0], [1.0, 2, 3, 4])         # rank one: det is exactly singular there
    ours = mt.tensor(a, device=device, requires_grad=True)
    theirs = torch.tensor(a, requires_grad=True)
    F.det(ours).sum().backward()
    torch.det(theirs).sum().backward()
    np.testing.assert_allclose(value(ours.grad), theirs.grad.numpy(), atol=1e-10)
    s = spd(3, 3)
    ours, theirs = mt.tensor(s, device=device, requires_grad=True), torch.tensor(
        s, requires_grad=True)
    L["cholesky"](ours).sum().backward()
    torch.linalg.cholesky(theirs).sum().backward()
    np.testing.assert_allclose(value(ours.grad), theirs.grad.numpy(), atol=1e-12)
