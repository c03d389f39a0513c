"""Sorting: the sort_last kernel on both backends (the emulated GPU against the CPU), and sort,
argsort, msort, topk, kthvalue, median and unique against torch, with their gradients."""
import numpy as np
import pytest

import minitorch as mt
from minitorch import _cpu
from minitorch.autograd import gradcheck, gradgradcheck
from minitorch.functions.sort import argsort, kthvalue, median, msort, sort, topk, unique

import cuda_emulator

torch = pytest.importorskip("torch")
NAN = float("nan")
DTYPES = [np.float32, np.float64, np.int64, np.uint8]


def rows_with_ties(rows, n, dtype, seed=0):
    """Few distinct values (many ties) and, for floats, NaNs: what stability is about."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 2 if dtype == np.uint8 else 6, rows * n).astype(dtype)
    if dtype in (np.float32, np.float64):
        a[rng.random(a.size) < 0.15] = np.nan
        a[rng.random(a.size) < 0.1] *= -0.0      # -0.0 ties with 0.0
    return a


def torch_stable_sort(a, n, descending):
    rows = torch.from_numpy(a.reshape(-1, n).astype(bool) if a.dtype == np.uint8 else
                            a.reshape(-1, n))
    values, indices = torch.sort(rows, dim=-1, descending=descending, stable=True)
    return values.numpy().astype(a.dtype).reshape(-1), indices.numpy().reshape(-1)


def cpu_sort(a, n, descending):
    values, indices = np.empty_like(a), np.empty(a.size, np.int64)
    _cpu.sort_last(a, values, indices, n, descending)
    return values, indices


# ---- the kernel ---------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_cpu_kernel_is_torchs_stable_sort(dtype):
    # n around the insertion-run length (16) and odd merge-pass counts; rows x n = 40000 sorts
    # rows on several threads
    for rows, n in ((3, 1), (4, 7), (2, 16), (3, 17), (2, 33), (5, 100), (40, 1000)):
        a = rows_with_ties(rows, n, dtype)
        for descending in (False, True):
            values, indices = cpu_sort(a, n, descending)
            want_values, want_indices = torch_stable_sort(a, n, descending)
            np.testing.assert_array_equal(indices, want_indices)
            np.testing.assert_array_equal(values, want_values)


def test_cpu_kernel_puts_nan_last_ascending_and_first_descending():
    a = np.array([3.0, NAN, -np.inf, NAN, 1.0, np.inf], np.float32)
    values, indices = cpu_sort(a, 6, False)
    assert indices.tolist() == [2, 4, 0, 5, 1, 3]
    values, indices = cpu_sort(a, 6, True)
    assert indices.tolist() == [1, 3, 5, 0, 4, 2]
    assert np.isnan(values[:2]).all() and values[2] == np.inf


def kernel_errors():
    """(args, exception type) that sort_last refuses on every backend, with one message."""
    f32, f64, i64 = (np.zeros(6, t) for t in (np.float32, np.float64, np.int64))
    return [((f32, f64, i64, 3), TypeError),                    # values of another dtype
            ((f32, f32.copy(), f64, 3), TypeError),             # indices not int64
            ((f32, f32.copy(), i64, 4), ValueError),            # 6 is not rows of 4
            ((f32, f32.copy(), i64, -1), ValueError),
            ((f32, f32.copy(), i64, 0), ValueError),
            ((f32, np.zeros(5, np.float32), i64, 3), ValueError)]


@pytest.mark.parametrize("case", range(len(kernel_errors())))
def test_cpu_kernel_rejects_bad_arguments(case):
    args, error = kernel_errors()[case]
    with pytest.raises(error, match="sort_last"):
        _cpu.sort_last(*args)


def test_emulated_gpu_kernel_matches_cpu():
    """The CUDA kernels, run by the emulator: shared-memory rows (padded to a power of two)
    and, past SORT_TILE, the global-memory network; results and errors equal the CPU's."""
    from minitorch._gpu import launch
    from minitorch._gpu.backend import GpuBackend
    emulated = cuda_emulator.cupy_module()
    gpu = GpuBackend(emulated, 0)
    run = cuda_emulator.can_execute()
    for dtype in DTYPES:
        shapes = [(3, 1), (4, 5), (2, 300), (1, launch.SORT_TILE)]
        if dtype in (np.float64, np.uint8):     # the global network (slow to emulate)
            shapes.append((2, launch.SORT_TILE + 452))
        for rows, n in shapes:
            a = rows_with_ties(rows, n, dtype, seed=n)
            for descending in (False, True):
                values, indices = gpu.empty(a.size, a.dtype), gpu.empty(a.size, np.int64)
                gpu.sort_last(gpu.from_host(a), values, indices, n, descending)
                if run:
                    want_values, want_indices = cpu_sort(a, n, descending)
                    np.testing.assert_array_equal(gpu.to_host(indices), want_indices)
                    np.testing.assert_array_equal(gpu.to_host(values), want_values)
    gpu.sort_last(gpu.from_host(np.zeros(0)), gpu.empty(0, np.float64),
                  gpu.empty(0, np.int64), 0)
    assert emulated.launches
    for args, error in kernel_errors():
        with pytest.raises(error) as cpu_error:
            _cpu.sort_last(*args)
        with pytest.raises(error) as gpu_error:
            gpu.sort_last(*(gpu.from_host(a) if isinstance(a, np.ndarray) else a for a in args))
        assert str(gpu_error.value) == str(cpu_error.value)


def cpu_top(a, n, k, descending):
    rows = a.size // n
    values, indices = np.empty(rows * k, a.dtype), np.empty(rows * k, np.int64)
    _cpu.top_last(a, values, indices, n, k, descending)
    return values, indices


def sorted_prefix(a, n, k, descending):
    values, indices = cpu_sort(a, n, descending)
    return values.reshape(-1, n)[:, :k].ravel(), indices.reshape(-1, n)[:, :k].ravel()


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_cpu_top_last_is_the_stable_sorts_prefix(dtype):
    """topk's selection kernel: ties in input order and NaN the largest, as sort_last's; rows
    of 40 x 1000 run on several threads."""
    for rows, n, k in ((3, 1, 1), (4, 7, 2), (2, 33, 8), (5, 100, 1), (40, 1000, 64)):
        a = rows_with_ties(rows, n, dtype, seed=n)
        for descending in (False, True):
            got, want = cpu_top(a, n, k, descending), sorted_prefix(a, n, k, descending)
            np.testing.assert_array_equal(got[1], want[1])
            np.testing.assert_array_equal(got[0], want[0])


def test_top_last_rejects_bad_arguments_on_both_backends():
    from minitorch._gpu.backend import GpuBackend
    gpu = GpuBackend(cuda_emulator.cupy_module(), 0)
    f32, i64 = np.zeros(6, np.float32), np.zeros(2, np.int64)
    cases = [((f32, np.zeros(2, np.float64), i64, 3, 1), TypeError),
             ((f32, np.zeros(2, np.float32), i64, 4, 1), ValueError),     # not rows of 4
             ((f32, np.zeros(2, np.float32), i64, 3, 4), ValueError),     # k > n
             ((f32, np.zeros(2, np.float32), i64, 3, 0), ValueError),
             ((f32, np.zeros(4, np.float32), i64, 3, 1), ValueError)]     # 2 rows of 1
    for args, error in cases:
        with pytest.raises(error, match="top_last"):
            _cpu.top_last(*args)
        if error is ValueError:
            with pytest.raises(error, match="top_last"):
                gpu.top_last(*(gpu.from_host(a) if isinstance(a, np.ndarray) else a
                               for a in args))
    a = rows_with_ties(3, 50, np.float64)
    values, indices = gpu.empty(9, np.float64), gpu.empty(9, np.int64)
    gpu.top_last(gpu.from_host(a), values, indices, 50, 3, True)
    if cuda_emulator.can_execute():
        want_values, want_indices = sorted_prefix(a, 50, 3, True)
        np.testing.assert_array_equal(gpu.to_host(indices), want_indices)
        np.testing.assert_array_equal(gpu.to_host(values), want_values)


def test_topk_by_selection_matches_torch(device):
    """Small k of long rows takes the selection kernel: values and indices as torch's for
    distinct values, along any dim, both directions; float16 through the widening wrapper."""
    x = np.random.default_rng(4).permutation(6 * 300).astype(np.float32).reshape(6, 300)
    m, t = mt.tensor(x, device=device), torch.tensor(x)
    for k in (1, 5, 64):
        for largest in (True, False):
            assert_same(topk(m, k, -1, largest), torch.topk(t, k, -1, largest))
            assert_same(topk(m.t(), k, 0, largest), torch.topk(t.t(), k, 0, largest))
    half = mt.tensor(x[:, :40] / 8, dtype=mt.float16, device=device)
    assert_same(topk(half, 3), torch.topk(torch.tensor(x[:, :40] / 8, dtype=torch.float16), 3))


def test_bitonic_plan():
    from minitorch._gpu import launch
    assert [launch.bitonic_length(n) for n in (1, 2, 3, 2048, 2049)] == [1, 2, 4, 2048, 4096]
    assert launch.bitonic_stages(1) == []
    assert launch.bitonic_stages(8) == [(2, 1), (4, 2), (4, 1), (8, 4), (8, 2), (8, 1)]


# ---- the functions against torch --------------------------------------------------------------
def sample(seed=0, shape=(3, 4, 5)):
    """Distinct values with one NaN in each of two rows, so that every index torch returns is
    determined (torch's topk, kthvalue and median break ties and NaN ties as they like)."""
    x = np.random.default_rng(seed).permutation(np.prod(shape)).astype(np.float64)
    x = x.reshape(shape)
    x[0, 1, 2] = x[2, 3, 0] = NAN
    return x


def assert_same(got, want):
    if isinstance(want, torch.Tensor):
        assert tuple(got.shape) == tuple(want.shape)
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
        np.testing.assert_array_equal(got.cpu().numpy(), want.numpy())
        return
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert_same(g, w)


def views(x):
    """(name, numpy array, matching minitorch view) for contiguous, transposed and stepped."""
    yield x, lambda t: t
    yield x.transpose(2, 0, 1), lambda t: t.permute(2, 0, 1)
    yield x[:, ::2, ::-1].copy(), None      # negative steps: only numpy has them
    yield x[::2, 1:, ::2], lambda t: t[::2, 1:, ::2]


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_sort_and_argsort_match_torch(device, dim):
    for x, view in views(sample()):
        m = view(mt.tensor(sample(), device=device)) if view else mt.tensor(x, device=device)
        t = torch.tensor(x)
        for descending in (False, True):
            assert_same(sort(m, dim, descending), torch.sort(t, dim, descending))
            assert_same(argsort(m, dim, descending, stable=True),
                        torch.argsort(t, dim=dim, descending=descending, stable=True))
    assert_same(msort(m), torch.msort(t))
    ints = np.random.default_rng(1).integers(0, 3, (4, 9))   # ties: only stable is defined
    for descending in (False, True):
        assert_same(sort(mt.tensor(ints, device=device), dim % 2, descending, stable=True),
                    torch.sort(torch.tensor(ints), dim=dim % 2, descending=descending,
                               stable=True))
    flags = mt.tensor([True, False, True, False], device=device)
    assert_same(sort(flags, stable=True),
                torch.sort(torch.tensor([True, False, True, False]), stable=True))


def test_sort_of_scalars_and_empty_tensors(device):
    for shape, dim in (((), 0), ((), -1), ((0, 3), 0), ((0, 3), 1), ((2, 0), 1)):
        x = np.ones(shape)
        assert_same(sort(mt.tensor(x, device=device), dim), torch.sort(torch.tensor(x), dim))
        assert_same(topk(mt.tensor(x, device=device), 0, dim),
                    torch.topk(torch.tensor(x), 0, dim))
    assert_same(msort(mt.tensor(1.0, device=device)), torch.msort(torch.tensor(1.0)))


@pytest.mark.parametrize("dim", [0, 2, -2])
def test_topk_kthvalue_median_match_torch(device, dim):
    x = sample(2)
    m, t = mt.tensor(x, device=device), torch.tensor(x)
    for k in (0, 1, 3):
        for largest in (True, False):
            assert_same(topk(m, k, dim, largest), torch.topk(t, k, dim, largest))
    for keepdim in (False, True):
        for k in (1, 2, x.shape[dim]):
            assert_same(kthvalue(m, k, dim, keepdim), torch.kthvalue(t, k, dim, keepdim))
        assert_same(median(m, dim, keepdim), torch.median(t, dim, keepdim))
    assert_same(median(m), torch.median(t))                             # NaN
    assert_same(median(m[1]), torch.median(t[1]))                       # even count: lower
    ints = np.random.default_rng(3).permutation(24).reshape(4, 6)
    assert_same(median(mt.tensor(ints, device=device), 1), torch.median(torch.tensor(ints), 1))
    scalar, t_scalar = mt.tensor(2.5, device=device), torch.tensor(2.5)
    assert_same(kthvalue(scalar, 1), torch.kthvalue(t_scalar, 1))
    assert_same(median(scalar, 0, True), torch.median(t_scalar, 0, True))
    assert_same(median(scalar), torch.median(t_scalar))
    assert_same(median(mt.tensor([], device=device)), torch.median(torch.tensor([])))


def test_unique_matches_torch(device):
    ints = np.random.default_rng(4).integers(-3, 4, (5, 6))
    for x in (ints, ints.astype(np.float32), ints > 0, np.zeros(0), np.array(7.0),
              np.array([2.0, NAN, 1.0, 2.0])):
        m, t = mt.tensor(x, device=device), torch.tensor(x)
        assert_same(unique(m), torch.unique(t))
        assert_same(unique(m, return_inverse=True, return_counts=True),
                    torch.unique(t, return_inverse=True, return_counts=True))
        assert_same(unique(m, return_counts=True), torch.unique(t, return_counts=True))


ERROR_CASES = [
    ("sort", (2,), {}), ("sort", (-3,), {}), ("argsort", (3,), {}),
    ("topk", (5,), {}), ("topk", (-1,), {}), ("topk", (1, 5), {}), ("topk", (1.5,), {}),
    ("kthvalue", (0,), {}), ("kthvalue", (5, -2), {}), ("kthvalue", (1, 5), {}),
    ("median", (-3,), {}),
]


@pytest.mark.parametrize("name, args, kwargs", ERROR_CASES)
def test_errors_match_torch(name, args, kwargs):
    x = np.arange(12.0).reshape(3, 4)
    fn = {"sort": sort, "argsort": argsort, "topk": topk, "kthvalue": kthvalue,
          "median": median}[name]
    with pytest.raises(Exception) as want:
        getattr(torch, name)(torch.tensor(x), *args, **kwargs)
    with pytest.raises(type(want.value)) as got:
        fn(mt.tensor(x), *args, **kwargs)
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("name, args, x", [
    ("kthvalue", (1,), np.array([True])), ("median", (), np.array([True])),
    ("topk", (1,), np.array([True])), ("kthvalue", (1, 0), np.zeros((0, 3))),
    ("median", (0,), np.zeros((0, 3))), ("kthvalue", (5, 1), np.zeros((0, 3))),
    ("topk", (1, 0), np.zeros((0, 3))),
])
def test_dtype_and_empty_errors_match_torch(name, args, x):
    fn = {"topk": topk, "kthvalue": kthvalue, "median": median}[name]
    with pytest.raises(Exception) as want:
        getattr(torch, name)(torch.tensor(x), *args)
    with pytest.raises(type(want.value)) as got:
        fn(mt.tensor(x), *args)
    assert str(got.value) == str(want.value)


# ---- gradients --------------------------------------------------------------------------------
PICKS = {
    "sort": lambda a: sort(a, 0).values,
    "sort_desc_last": lambda a: sort(a, -1, True).values,
    "topk": lambda a: topk(a, 2).values,
    "topk_smallest": lambda a: topk(a, 2, 0, largest=False).values,
    "kthvalue": lambda a: kthvalue(a, 2, 0).values,
    "kthvalue_keepdim": lambda a: kthvalue(a, 3, 1, keepdim=True).values,
    "median_dim": lambda a: median(a, 1).values,
    "median_all": lambda a: median(a),
    "msort": msort,
}


@pytest.mark.parametrize("pick", PICKS, ids=str)
def test_gradients(device, pick):
    fn = PICKS[pick]
    base = np.random.default_rng(5).permutation(20).reshape(4, 5) / 7.0
    contiguous = mt.tensor(base, dtype=mt.float64, device=device, requires_grad=True)
    transposed = mt.tensor(base, dtype=mt.float64, device=device).t().detach()
    stepped = mt.tensor(np.random.default_rng(6).permutation(48).reshape(8, 6) / 9.0,
                        dtype=mt.float64, device=device)[::2, 1:].detach()
    for a in (contiguous, transposed.requires_grad_(), stepped.requires_grad_()):
        assert gradcheck(fn, (a,))
    assert gradgradcheck(fn, (contiguous,))


def test_gradients_of_scalars_and_ties(device):
    scalar = mt.tensor(1.5, dtype=mt.float64, device=device, requires_grad=True)
    for fn in (lambda a: sort(a).values, lambda a: median(a, 0).values,
               lambda a: kthvalue(a, 1, 0, True).values, median):
        assert gradcheck(fn, (scalar,))
    # median() shares the gradient among elements equal to the median, as torch does
    x = mt.tensor([1.0, 2.0, 2.0, 2.0, 5.0], device=device, requires_grad=True)
    median(x).backward()
    tx = torch.tensor([1.0, 2.0, 2.0, 2.0, 5.0], requires_grad=True)
    torch.median(tx).backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), tx.grad.numpy())


def test_graph_nodes_are_named_like_torchs():
    a = mt.tensor([[3.0, 1.0], [2.0, 4.0]], requires_grad=True)
    assert sort(a).values.grad_fn.name() == "SortBackward0"
    assert topk(a, 1).values.grad_fn.name() == "TopkBackward0"
    assert kthvalue(a, 1).values.grad_fn.name() == "KthvalueBackward0"
    assert median(a, 0).values.grad_fn.name() == "MedianBackward1"
    assert median(a).grad_fn.name() == "MedianBackward0"
    assert sort(a).indices.grad_fn is None
    with mt.no_grad():
        assert sort(a).values.grad_fn is None


def test_results_are_named_tuples_like_torchs():
    values, indices = sort(mt.tensor([2.0, 1.0]))
    result = topk(mt.tensor([2.0, 1.0]), 1)
    assert result.values.tolist() == [2.0] and result.indices.tolist() == [0]
    assert repr(sort(mt.tensor([1.0]))).startswith("minitorch.return_types.sort(")
    assert indices.dtype == mt.int64 and values.tolist() == [1.0, 2.0]
