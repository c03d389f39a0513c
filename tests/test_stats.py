"""Statistics (functions/stats.py) against torch: nansum, nanmean, aminmax, logcumsumexp,
cummax/cummin, bincount, histc, mode, quantile/nanquantile, searchsorted/bucketize, with their
gradients; and the scan_index_last / searchsorted kernels, emulated GPU against CPU."""
import numpy as np
import pytest

import minitorch as mt
from minitorch import _cpu
from minitorch.autograd import gradcheck, gradgradcheck
from minitorch.opcodes import ReduceOp

import cuda_emulator
from torch_parity import same_error

torch = pytest.importorskip("torch")
NAN = float("nan")
DTYPES = [np.float32, np.float64, np.int64, np.uint8]


def assert_same(got, want, exact=True):
    """Tensors (or tuples of them) of one shape, dtype and value."""
    if isinstance(want, torch.Tensor):
        assert tuple(got.shape) == tuple(want.shape)
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
        if exact:
            np.testing.assert_array_equal(got.cpu().numpy(), want.numpy())
        else:
            np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), rtol=1e-6, atol=1e-6)
        return
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert_same(g, w, exact)


def layouts(x, device):
    """(minitorch tensor, torch tensor) pairs: contiguous, transposed and stepped views."""
    m, t = mt.tensor(x, device=device), torch.tensor(x)
    yield m, t
    yield m.transpose(0, 1), t.transpose(0, 1)
    yield m[:, ::2], t[:, ::2]


def with_nans(shape, seed=0):
    x = np.random.default_rng(seed).standard_normal(shape)
    x[np.random.default_rng(seed + 1).random(shape) < 0.2] = NAN
    return x


def leaf(x, device):
    return mt.tensor(x, device=device, requires_grad=True)


# ---- nansum, nanmean, aminmax -----------------------------------------------------------------
def test_nansum_nanmean_match_torch(device):
    for m, t in layouts(with_nans((4, 6)), device):
        for dim in (None, 0, (0, 1), -1):
            for keepdim in (False, True):
                assert_same(mt.nansum(m, dim, keepdim), torch.nansum(t, dim, keepdim), False)
                assert_same(mt.nanmean(m, dim, keepdim), torch.nanmean(t, dim, keepdim), False)
    ints = np.arange(6).reshape(2, 3)
    assert_same(mt.nansum(mt.tensor(ints, device=device), 1), torch.nansum(torch.tensor(ints), 1))
    assert_same(mt.nansum(mt.tensor([True, True], device=device)),
                torch.nansum(torch.tensor([True, True])))
    assert_same(mt.nanmean(mt.tensor([NAN, NAN], device=device)), torch.nanmean(
        torch.tensor([NAN, NAN])))
    assert_same(mt.nansum(mt.tensor(np.zeros((0, 2)), device=device), 0),
                torch.nansum(torch.zeros(0, 2, dtype=torch.float64), 0))
    same_error(lambda lib: lib.nanmean(lib.tensor([1, 2])))


def test_nansum_nanmean_gradients(device):
    x = with_nans((3, 4))
    t = torch.tensor(x, requires_grad=True)
    torch.nanmean(t, 1).sum().backward()
    m = leaf(x, device)
    mt.nanmean(m, 1).sum().backward()
    np.testing.assert_allclose(m.grad.cpu().numpy(), t.grad.numpy())     # 0 at the NaNs
    finite = np.random.default_rng(2).standard_normal((3, 4))
    assert gradcheck(lambda a: mt.nansum(a.t(), 0), (leaf(finite, device),))
    assert gradcheck(lambda a: mt.nanmean(a, -1, keepdim=True), (leaf(finite, device),))


@pytest.mark.torch_exact
def test_aminmax_matches_torch(device):
    x = np.random.default_rng(3).integers(0, 4, (3, 5)).astype(np.float64)
    for m, t in layouts(x, device):
        assert_same(mt.aminmax(m), torch.aminmax(t))
        assert_same(mt.aminmax(m, keepdim=True), torch.aminmax(t, keepdim=True))
        assert_same(mt.aminmax(m, dim=1), torch.aminmax(t, dim=1))
        assert_same(mt.aminmax(m, dim=0, keepdim=True), torch.aminmax(t, dim=0, keepdim=True))
    assert_same(mt.aminmax(mt.tensor(2.0, device=device), dim=0),
                torch.aminmax(torch.tensor(2.0), dim=0))
    flags = mt.tensor([True, False], device=device)
    assert_same(mt.aminmax(flags), torch.aminmax(torch.tensor([True, False])))
    assert "minitorch.return_types.aminmax(\nmin=" in repr(mt.aminmax(flags))
    same_error(lambda lib: lib.aminmax(lib.tensor([])))
    same_error(lambda lib: lib.aminmax(lib.zeros(2, 0), dim=1))
    # ties share the gradient, as in torch
    t = torch.tensor(x, requires_grad=True)
    lo, hi = torch.aminmax(t, dim=1)
    (lo + 2 * hi).sum().backward()
    m = leaf(x, device)
    lo, hi = mt.aminmax(m, dim=1)
    (lo + 2 * hi).sum().backward()
    np.testing.assert_allclose(m.grad.cpu().numpy(), t.grad.numpy())


# ---- logcumsumexp -----------------------------------------------------------------------------
def test_logcumsumexp_matches_torch_and_is_stable(device):
    x = np.random.default_rng(4).standard_normal((5, 7)) * 3
    for m, t in layouts(x, device):
        for dim in (0, 1, -1):
            assert_same(mt.logcumsumexp(m, dim), torch.logcumsumexp(t, dim), False)
    edge = np.array([-1000.0, 0.0, -np.inf, 800.0, np.inf, 3.0, NAN, 1.0])
    for values in (edge, np.full(3, -np.inf), np.float32([1e-3, 90.0, -90.0])):
        assert_same(mt.logcumsumexp(mt.tensor(values, device=device), 0),
                    torch.logcumsumexp(torch.tensor(values), 0), False)
    for x in (np.array(1.5), np.zeros((0, 3))):
        assert_same(mt.logcumsumexp(mt.tensor(x, device=device), 0),
                    torch.logcumsumexp(torch.tensor(x), 0))
    same_error(lambda lib: lib.logcumsumexp(lib.tensor([1, 2]), 0))


def test_logcumsumexp_gradients(device):
    x = np.random.default_rng(5).standard_normal((3, 6))
    assert gradcheck(lambda a: mt.logcumsumexp(a, 1), (leaf(x, device),))
    assert gradcheck(lambda a: mt.logcumsumexp(a.t()[::2], 0), (leaf(x, device),))
    assert gradgradcheck(lambda a: mt.logcumsumexp(a, 0), (leaf(x, device),))


# ---- cummax / cummin --------------------------------------------------------------------------
@pytest.mark.torch_exact
@pytest.mark.parametrize("fn", ["cummax", "cummin"])
def test_cummax_cummin_match_torch(device, fn):
    ties = np.random.default_rng(6).integers(0, 3, (6, 5)).astype(np.float64)
    ties[1, 2] = ties[4, 0] = ties[4, 3] = NAN
    for x in (ties, ties.astype(np.float32)):
        for m, t in layouts(x, device):
            for dim in (0, 1, -1):
                assert_same(getattr(mt, fn)(m, dim), getattr(torch, fn)(t, dim))
    ints = np.nan_to_num(ties[:, :3]).astype(np.int64)
    for x in (ints, ties[:, :3] > 1, np.uint8([[7, 1, 7, 0, 9]]), np.array(2.5), np.zeros((0, 3))):
        assert_same(getattr(mt, fn)(mt.tensor(x, device=device), -1),
                    getattr(torch, fn)(torch.tensor(x), -1))
    same_error(lambda lib: getattr(lib, fn)(lib.ones(2, 2), 2))
    same_error(lambda lib: getattr(lib, fn)(lib.ones(2, 2), 0.5))


def test_cummax_cummin_gradients(device):
    x = np.random.default_rng(7).permutation(20).reshape(4, 5).astype(np.float64)
    assert gradcheck(lambda a: mt.cummax(a, 1).values, (leaf(x, device),))
    assert gradcheck(lambda a: mt.cummin(a.t(), 1).values, (leaf(x, device),))
    assert gradgradcheck(lambda a: mt.cummax(a, 0).values, (leaf(x, device),))
    scalar = leaf(2.0, device)
    mt.cummin(scalar, 0).values.backward()
    assert scalar.grad.item() == 1.0


# ---- bincount, histc --------------------------------------------------------------------------
def test_bincount_matches_torch(device):
    ints = np.array([1, 3, 3, 0, 7])
    weights = np.array([0.5, 1.0, 2.0, -1.0, 4.0])
    m, t = mt.tensor(ints, device=device), torch.tensor(ints)
    assert_same(mt.bincount(m), torch.bincount(t))
    assert_same(mt.bincount(m, minlength=10), torch.bincount(t, minlength=10))
    for w in (weights, weights.astype(np.float32), ints):
        assert_same(mt.bincount(m, mt.tensor(w, device=device)),
                    torch.bincount(t, torch.tensor(w)))
    assert_same(mt.bincount(mt.tensor(np.uint8([2, 2]), device=device)),
                torch.bincount(torch.tensor(np.uint8([2, 2]))))
    assert_same(mt.bincount(mt.tensor([], dtype=mt.int64, device=device), minlength=3),
                torch.bincount(torch.tensor([], dtype=torch.int64), minlength=3))
    for bad in (lambda lib: lib.bincount(lib.tensor([-1])),
                lambda lib: lib.bincount(lib.tensor([[1]])),
                lambda lib: lib.bincount(lib.tensor([1.0])),
                lambda lib: lib.bincount(lib.tensor([True])),
                lambda lib: lib.bincount(lib.tensor([1]), minlength=-1),
                lambda lib: lib.bincount(lib.tensor([1, 2]), weights=lib.tensor([1.0]))):
        same_error(bad)


def test_histc_matches_torch(device):
    x = np.random.default_rng(8).standard_normal(200)
    x[:3] = [NAN, 0.5, 1.0]
    for dtype in (np.float32, np.float64):
        m, t = mt.tensor(x.astype(dtype), device=device), torch.tensor(x.astype(dtype))
        for kwargs in ({}, {"bins": 7}, {"bins": 4, "min": -1, "max": 1},
                       {"bins": 3, "min": 0.5, "max": 0.5}):
            if not kwargs.get("min", 0) < kwargs.get("max", 0):     # the data's range
                m, t = m[3:], t[3:]
            assert_same(mt.histc(m, **kwargs), torch.histc(t, **kwargs))
    assert_same(mt.histc(mt.tensor([2.0, 2.0], device=device), bins=4),
                torch.histc(torch.tensor([2.0, 2.0]), bins=4))
    assert_same(mt.histc(mt.tensor(np.ones((2, 0)), device=device), bins=3),
                torch.histc(torch.ones(2, 0, dtype=torch.float64), bins=3))
    for bad in (lambda lib: lib.histc(lib.tensor([1, 2]), bins=3),
                lambda lib: lib.histc(lib.tensor([1.0, 2]), bins=0),
                lambda lib: lib.histc(lib.tensor([1.0, 2]), bins=3, min=2, max=1),
                lambda lib: lib.histc(lib.tensor([1.0, float("inf")]), bins=3)):
        same_error(bad)


# ---- mode -------------------------------------------------------------------------------------
def test_mode_matches_torch(device):
    # rows of at most 16: torch's CPU sort is then stable, so its index is the last occurrence
    x = np.random.default_rng(9).integers(0, 4, (5, 12)).astype(np.float64)
    for m, t in layouts(x, device):
        for dim in (0, 1, -1):
            for keepdim in (False, True):
                assert_same(mt.mode(m, dim, keepdim), torch.mode(t, dim, keepdim))
    for y in (x[:, :6].astype(np.int64), x[:2] > 1, np.array(3.0)):
        assert_same(mt.mode(mt.tensor(y, device=device)), torch.mode(torch.tensor(y)))
    same_error(lambda lib: lib.mode(lib.zeros(2, 0), 1))
    # the gradient goes to the returned index (gradcheck is meaningless with ties)
    m, t = leaf(x, device), torch.tensor(x, requires_grad=True)
    values = mt.mode(m.t(), 0).values
    assert values.grad_fn.name() == "ModeBackward0"
    (values * mt.arange(5.0, device=device)).sum().backward()
    (torch.mode(t.t(), 0).values * torch.arange(5.0)).sum().backward()
    np.testing.assert_array_equal(m.grad.cpu().numpy(), t.grad.numpy())


# ---- quantile / nanquantile -------------------------------------------------------------------
INTERPOLATIONS = ["linear", "lower", "higher", "midpoint", "nearest"]


@pytest.mark.parametrize("interpolation", INTERPOLATIONS)
def test_quantile_matches_torch(device, interpolation):
    x = np.random.default_rng(10).standard_normal((4, 7))
    q = np.array([0.0, 0.25, 0.5, 0.9, 1.0])
    for m, t in layouts(x, device):
        for dim, keepdim in ((None, False), (None, True), (0, False), (1, True), (-1, False)):
            for qs in (0.3, q):
                ours = mt.quantile(m, mt.tensor(qs, device=device) if isinstance(qs, np.ndarray)
                                   else qs, dim, keepdim, interpolation=interpolation)
                want = torch.quantile(t, torch.tensor(qs) if isinstance(qs, np.ndarray) else qs,
                                      dim, keepdim, interpolation=interpolation)
                assert_same(ours, want, False)
    nans = with_nans((4, 5), 11)
    nans[2] = NAN
    for fn in ("quantile", "nanquantile"):
        assert_same(getattr(mt, fn)(mt.tensor(nans, device=device), 0.4, 1,
                                    interpolation=interpolation),
                    getattr(torch, fn)(torch.tensor(nans), 0.4, 1, interpolation=interpolation),
                    False)


def test_quantile_scalars_errors_and_gradients(device):
    assert_same(mt.quantile(mt.tensor(3.0, device=device), 0.3, dim=0),
                torch.quantile(torch.tensor(3.0), 0.3, dim=0))
    assert_same(mt.quantile(mt.tensor([1.0, 2], device=device), mt.tensor(0.5, device=device),
                            keepdim=True),
                torch.quantile(torch.tensor([1.0, 2]), torch.tensor(0.5), keepdim=True))
    x = [[1.0, 2, 3, 4], [5, 6, 7, 8]]
    for bad in (lambda lib: lib.quantile(lib.tensor(x), 1.5),
                lambda lib: lib.quantile(lib.tensor(x), lib.tensor([1.5])),
                lambda lib: lib.quantile(lib.tensor(x), lib.tensor([[0.5]])),
                lambda lib: lib.quantile(lib.tensor(x), lib.tensor([0.5], dtype=lib.float64)),
                lambda lib: lib.quantile(lib.tensor([1, 2]), 0.5),
                lambda lib: lib.nanquantile(lib.tensor([]), 0.5),
                lambda lib: lib.quantile(lib.tensor(x), 0.5, interpolation="foo")):
        same_error(bad)
    data = np.random.default_rng(12).standard_normal((3, 5))
    q = mt.tensor([0.2, 0.5, 0.75], dtype=mt.float64, device=device)
    assert gradcheck(lambda a: mt.quantile(a, q, 1), (leaf(data, device),))
    assert gradcheck(lambda a: mt.nanquantile(a.t(), 0.3, 0, interpolation="midpoint"),
                     (leaf(data, device),))


# ---- searchsorted / bucketize -----------------------------------------------------------------
def test_searchsorted_and_bucketize_match_torch(device):
    rows = np.sort(np.random.default_rng(13).integers(0, 6, (3, 8)), axis=1).astype(np.float64)
    rows[2, -2:] = NAN
    values = np.random.default_rng(14).integers(-1, 7, (3, 5)).astype(np.float64)
    values[0, 0] = NAN
    for right in (False, True):
        columns = np.ascontiguousarray(values[1:, ::2].T)
        for b, v in ((rows, values), (rows[1], values), (rows[0], columns),
                     (rows[0], np.array(2.0))):
            assert_same(mt.searchsorted(mt.tensor(b, device=device), mt.tensor(v, device=device),
                                        right=right),
                        torch.searchsorted(torch.tensor(b), torch.tensor(v), right=right))
        side = "right" if right else "left"
        assert_same(mt.searchsorted(mt.tensor(rows[0], device=device), 2.0, side=side),
                    torch.searchsorted(torch.tensor(rows[0]), 2.0, side=side))
        assert_same(mt.bucketize(mt.tensor(values, device=device),
                                 mt.tensor(rows[0], device=device), right=right),
                    torch.bucketize(torch.tensor(values), torch.tensor(rows[0]), right=right))
    shuffled = np.random.default_rng(15).permutation(9).astype(np.float64)
    sorter = np.argsort(shuffled)
    assert_same(mt.searchsorted(mt.tensor(shuffled, device=device),
                                mt.tensor([[2.5, 0.0, 9.0]], device=device),
                                sorter=mt.tensor(sorter, device=device)),
                torch.searchsorted(torch.tensor(shuffled), torch.tensor([[2.5, 0.0, 9.0]]),
                                   sorter=torch.tensor(sorter)))
    ints = mt.tensor([1, 3, 5], device=device)      # mixed dtypes promote
    assert_same(mt.searchsorted(ints, mt.tensor([2.5, True], device=device)),
                torch.searchsorted(torch.tensor([1, 3, 5]), torch.tensor([2.5, True])))
    assert_same(mt.searchsorted(mt.tensor(np.zeros((2, 0)), device=device),
                                mt.tensor(np.ones((2, 1)), device=device)),
                torch.searchsorted(torch.zeros(2, 0), torch.ones(2, 1)))


SEARCH_ERRORS = [
    lambda lib: lib.searchsorted(lib.tensor([[1.0, 2, 3], [1, 2, 3]]), lib.ones(3, 4)),
    lambda lib: lib.searchsorted(lib.tensor([1.0, 2]), lib.ones(1), side="left", right=True),
    lambda lib: lib.searchsorted(lib.tensor([1.0, 2]), lib.ones(1), side="lft"),
    lambda lib: lib.searchsorted(lib.tensor([1.0, 2, 3]), lib.ones(1),
                                 sorter=lib.tensor([0, 1, 3])),
    lambda lib: lib.searchsorted(lib.tensor([1.0, 2, 3]), lib.ones(1), sorter=lib.tensor([0, 1])),
    lambda lib: lib.searchsorted(lib.tensor([1.0, 2, 3]), lib.ones(1),
                                 sorter=lib.tensor([0.0, 1, 2])),
    lambda lib: lib.searchsorted(lib.tensor(1.0), lib.ones(1)),
    lambda lib: lib.searchsorted(lib.tensor([[1.0, 2]]), lib.tensor(1.5)),
    lambda lib: lib.bucketize(lib.ones(1), lib.tensor([[1.0]])),
]


@pytest.mark.parametrize("case", range(len(SEARCH_ERRORS)))
def test_searchsorted_errors_match_torch(case):
    same_error(SEARCH_ERRORS[case])


def test_searchsorted_without_int32():
    with pytest.raises(NotImplementedError, match="int32"):
        mt.searchsorted(mt.tensor([1.0]), mt.tensor([1.0]), out_int32=True)


# ---- the kernels: CPU against torch, emulated GPU against CPU ---------------------------------
def running_extremes(backend, op, a, n, inner):
    values, indices = backend.empty(a.size, a.dtype), backend.empty(a.size, np.int64)
    backend.scan_index_last(op, backend.from_host(a) if backend is not _cpu else a, values,
                            indices, n, inner)
    return backend.to_host(values), backend.to_host(indices)


def search(backend, boundaries, values, n, m, right, sorter=None):
    out = backend.empty(values.size, np.int64)
    host = (lambda x: x) if backend is _cpu else backend.from_host
    backend.searchsorted(host(boundaries), host(values), out, n, m, right,
                         None if sorter is None else host(sorter))
    return backend.to_host(out)


def kernel_cases(dtype):
    rng = np.random.default_rng(16)
    for m, n, inner in ((3, 1, 1), (2, 40, 1), (1, 300, 1), (3, 7, 4), (2, 33, 5)):
        a = rng.integers(0, 2 if dtype == np.uint8 else 4, m * n * inner).astype(dtype)
        if dtype in (np.float32, np.float64):
            a[rng.random(a.size) < 0.05] = NAN
        yield a, n, inner


def test_emulated_gpu_kernels_match_cpu():
    from minitorch._gpu.backend import GpuBackend
    emulated = cuda_emulator.cupy_module()
    gpu = GpuBackend(emulated, 0)
    run = cuda_emulator.can_execute()
    for dtype in DTYPES:
        for a, n, inner in kernel_cases(dtype):
            for op in (ReduceOp.MAX, ReduceOp.MIN):
                got = running_extremes(gpu, op, a, n, inner)
                if run:
                    want = running_extremes(_cpu, op, a, n, inner)
                    for g, w in zip(got, want):
                        np.testing.assert_array_equal(g, w)
        rows = np.sort(np.random.default_rng(18).integers(0, 4, (3, 4)).astype(dtype), axis=1)
        values = np.random.default_rng(17).integers(0, 4, 15).astype(dtype)
        sorter = np.tile(np.arange(4), 3)
        for right in (False, True):
            for b, n, m, s in ((rows, 4, 5, None), (rows[0], 4, 15, None), (rows, 4, 5, sorter)):
                got = search(gpu, b.reshape(-1), values, n, m, right, s)
                if run:
                    np.testing.assert_array_equal(got, search(_cpu, b.reshape(-1), values, n, m,
                                                              right, s))
    assert emulated.launches
    f64, i64 = np.zeros(6), np.zeros(6, np.int64)
    bad_calls = [
        lambda b, h: b.scan_index_last(ReduceOp.SUM, h(f64), h(f64), h(i64), 6),
        lambda b, h: b.scan_index_last(ReduceOp.MAX, h(f64), h(f64), h(f64), 6),
        lambda b, h: b.scan_index_last(ReduceOp.MAX, h(f64), h(f64), h(i64), 4),
        lambda b, h: b.scan_index_last(ReduceOp.MAX, h(f64), h(np.zeros(6, np.float32)),
                                       h(i64), 6),
        lambda b, h: b.searchsorted(h(f64), h(np.zeros(6, np.float32)), h(i64), 6, 6),
        lambda b, h: b.searchsorted(h(f64), h(f64), h(i64), 4, 6),
        lambda b, h: b.searchsorted(h(f64), h(f64), h(i64), 3, 4),
        lambda b, h: b.searchsorted(h(f64), h(f64), h(i64), 6, 6, False, h(i64 + 6)),
    ]
    for call in bad_calls:
        with pytest.raises(Exception) as cpu_error:
            call(_cpu, lambda x: x)
        with pytest.raises(Exception) as gpu_error:
            call(gpu, gpu.from_host)
        assert type(gpu_error.value) is type(cpu_error.value)
        assert str(gpu_error.value) == str(cpu_error.value)


def test_cpu_kernels_match_torch():
    for dtype in DTYPES:
        for a, n, inner in kernel_cases(dtype):
            x = torch.tensor(a.astype(bool) if dtype == np.uint8 else a).reshape(-1, n, inner)
            for op, fn in ((ReduceOp.MAX, torch.cummax), (ReduceOp.MIN, torch.cummin)):
                values, indices = running_extremes(_cpu, op, a, n, inner)
                want = fn(x, 1)
                np.testing.assert_array_equal(indices, want.indices.reshape(-1).numpy())
                np.testing.assert_array_equal(values, want.values.reshape(-1).numpy()
                                              .astype(dtype))
