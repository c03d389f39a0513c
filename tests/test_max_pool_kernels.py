"""Max pooling: the max_pool_forward / max_pool_backward kernels on both backends (the emulated
GPU against the CPU), and F.max_pool1d/2d/3d built on them against torch: values, indices and
gradients (strides, padding, dilation, ceil_mode, overlapping windows, NaN and -inf windows,
non-contiguous and empty inputs), gradients of second order, and torch's errors."""
import numpy as np
import pytest

import minitorch as mt
import minitorch.nn.functional as F
from minitorch import _cpu
from minitorch.autograd import gradcheck, gradgradcheck

import cuda_emulator

torch = pytest.importorskip("torch")
TF = torch.nn.functional
NAN, INF = float("nan"), float("inf")

# (pool, input shape, kernel_size, stride, padding, dilation, ceil_mode)
CASES = [
    ("max_pool1d", (2, 3, 9), 3, 2, 1, 1, False),
    ("max_pool1d", (2, 2, 10), 2, 1, 1, 3, True),             # overlapping, dilated, ceil
    ("max_pool1d", (1, 2, 300), 3, 1, 1, 1, False),           # rows longer than ROW_TILE
    ("max_pool2d", (2, 3, 6, 7), 2, None, 0, 1, False),       # tiling windows (the CNN's)
    ("max_pool2d", (1, 2, 7, 8), (3, 2), (2, 1), (1, 1), (1, 2), True),
    ("max_pool2d", (2, 1, 5, 5), 3, 1, 1, 1, False),          # inputs in several windows
    ("max_pool2d", (1, 2, 40, 21), (2, 3), 1, 1, 1, False),   # tiles of many short rows
    ("max_pool2d", (3, 6, 5), 3, 2, 1, 2, True),              # unbatched
    ("max_pool3d", (1, 2, 4, 5, 6), 2, (1, 2, 2), (1, 0, 1), 1, True),
    ("max_pool3d", (2, 5, 4, 5), (2, 3, 2), 2, (1, 1, 0), (2, 1, 1), False),   # unbatched
]


def host(t):
    return t.detach().cpu().numpy()


def sample(shape, seed=0):
    """Few distinct values (ties), NaNs and -infs: what torch's rule is about."""
    rng = np.random.default_rng(seed)
    x = rng.integers(-2, 3, shape).astype(np.float64)
    x[rng.random(shape) < 0.1] = NAN
    x[rng.random(shape) < 0.2] = -INF
    return x


def both(name, x, args, device, dtype=np.float64, grad=True):
    """minitorch's and torch's (values, indices) and, for a float input, gradients."""
    ours = mt.tensor(x.astype(dtype), device=device, requires_grad=grad)
    theirs = torch.tensor(x.astype(dtype), requires_grad=grad)
    results = [getattr(F, name)(ours, *args, return_indices=True),
               getattr(TF, name)(theirs, *args, return_indices=True)]
    if grad:
        g = np.random.default_rng(1).random(tuple(results[1][0].shape)).astype(dtype)
        results[0][0].backward(mt.tensor(g, device=device))
        results[1][0].backward(torch.tensor(g))
        return results, (host(ours.grad), theirs.grad.numpy())
    return results, None


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}{c[1]}")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_values_indices_and_gradients_are_torchs(case, dtype, device):
    name, shape, *args = case
    ((values, indices), (want_values, want_indices)), grads = both(name, sample(shape), args,
                                                                   device, dtype)
    assert values.dtype == mt.float32 if dtype == np.float32 else mt.float64
    np.testing.assert_array_equal(host(values), want_values.detach().numpy())
    np.testing.assert_array_equal(host(indices), want_indices.numpy())
    np.testing.assert_allclose(*grads, rtol=1e-6)


def test_windows_of_minus_inf_point_at_real_elements(device):
    """Padding never competes: an all -inf window returns its first real element (the old
    padded argmax returned a padding position, and its gradient was lost)."""
    x = mt.full((1, 1, 2, 2), -INF, device=device, requires_grad=True)
    values, indices = F.max_pool2d(x, 2, padding=1, return_indices=True)
    assert indices.tolist() == [[[[0, 1], [2, 3]]]]
    assert values.tolist() == [[[[-INF, -INF], [-INF, -INF]]]]
    values.sum().backward()
    assert x.grad.tolist() == [[[[1.0, 1.0], [1.0, 1.0]]]]


def test_nan_wins_the_last_one():
    x = [[[1.0, NAN, 3.0, NAN, 2.0]]]
    values, indices = F.max_pool1d(mt.tensor(x), 5, return_indices=True)
    want = TF.max_pool1d(torch.tensor(x), 5, return_indices=True)
    assert np.isnan(values.item()) and indices.item() == want[1].item() == 3


def test_window_with_no_real_element_is_torchs():
    """Dilation can step a window over the whole input: torch's -inf and its index past the
    plane; the gradient of such an output goes nowhere."""
    x = mt.tensor([[[5.0]]], requires_grad=True)
    values, indices = F.max_pool1d(x, 2, 1, 1, 2, return_indices=True)
    want = TF.max_pool1d(torch.tensor([[[5.0]]]), 2, 1, 1, 2, return_indices=True)
    assert values.tolist() == want[0].tolist() == [[[-INF]]]
    assert indices.tolist() == want[1].tolist()
    values.sum().backward()
    assert x.grad.tolist() == [[[0.0]]]


@pytest.mark.parametrize("dtype", [np.int64, np.uint8])
def test_integer_inputs_are_torchs(dtype, device):
    x = np.random.default_rng(2).integers(0 if dtype == np.uint8 else -5, 6, (2, 3, 7, 6))
    (ours, theirs), _ = both("max_pool2d", x, (3, 2, 1, 1, True), device, dtype, grad=False)
    assert ours[0].dtype == (mt.int64 if dtype == np.int64 else mt.uint8)
    np.testing.assert_array_equal(host(ours[0]), theirs[0].numpy())
    np.testing.assert_array_equal(host(ours[1]), theirs[1].numpy())


def test_non_contiguous_and_empty_inputs(device):
    base = sample((2, 7, 3, 8), seed=3)
    ours = mt.tensor(base, device=device)
    views = [(ours.permute(0, 2, 1, 3), base.transpose(0, 2, 1, 3)),     # transposed
             (ours[:, ::2, :, 1::3], base[:, ::2, :, 1::3])]             # stepped
    for view, x in views:
        values, indices = F.max_pool2d(view, 2, 1, 1, return_indices=True)
        want = TF.max_pool2d(torch.tensor(np.ascontiguousarray(x)), 2, 1, 1,
                             return_indices=True)
        np.testing.assert_array_equal(host(values), want[0].numpy())
        np.testing.assert_array_equal(host(indices), want[1].numpy())
    empty = mt.zeros((0, 2, 5, 5), device=device, requires_grad=True)
    values, indices = F.max_pool2d(empty, 2, return_indices=True)
    assert values.shape == indices.shape == (0, 2, 2, 2)
    values.sum().backward()
    assert empty.grad.shape == (0, 2, 5, 5)


@pytest.mark.parametrize("case", [CASES[1], CASES[5], CASES[9]], ids=["1d", "2d", "3d"])
def test_gradcheck_and_gradgradcheck(case, device):
    name, shape, *args = case
    # distinct values: a tie would move the maximum under gradcheck's perturbation
    x = np.random.default_rng(4).permutation(np.prod(shape)).reshape(shape) / 7.0
    t = mt.tensor(x, device=device, requires_grad=True)
    pool = lambda v: getattr(F, name)(v, *args)   # noqa: E731
    assert gradcheck(pool, (t,))
    assert gradgradcheck(pool, (t,))
    transposed = mt.tensor(x.swapaxes(-1, -2).copy(), device=device).transpose(-1, -2)
    assert gradcheck(pool, (transposed.detach().requires_grad_(),))


def test_modules_unpool_and_node_names(device):
    x = mt.tensor(sample((2, 3, 6, 6), seed=5), device=device, requires_grad=True)
    values, indices = mt.nn.MaxPool2d(2, return_indices=True)(x)
    assert values.grad_fn.name() == "MaxPool2DWithIndicesBackward0"
    restored = F.max_unpool2d(values, indices, 2)
    want = TF.max_unpool2d(*TF.max_pool2d(torch.tensor(host(x)), 2,
                                          return_indices=True), 2)
    np.testing.assert_array_equal(host(restored), want.numpy())
    volume = mt.zeros((1, 1, 2, 2, 2), device=device, requires_grad=True)
    assert mt.nn.MaxPool3d(2)(volume).grad_fn.name() == "MaxPool3DWithIndicesBackward0"
    assert F.max_pool1d_with_indices(x[0], 2)[1].dtype == mt.int64


def test_torchs_dtype_errors():
    boolean = mt.zeros((1, 2, 4, 4), dtype=mt.bool)
    calls = [("max_pool2d", (boolean, 2), {}), ("max_pool3d", (boolean.unsqueeze(0), 2), {}),
             ("max_pool1d", (boolean[0], 2), {}),
             ("max_pool1d", (boolean[0], 2), {"return_indices": True}),
             ("max_pool1d", (boolean[0].long(), 2), {}),
             ("adaptive_max_pool2d", (boolean, 3), {})]
    for name, args, kwargs in calls:
        with pytest.raises(NotImplementedError) as ours:
            getattr(F, name)(*args, **kwargs)
        theirs_args = tuple(torch.from_numpy(a.numpy()) if isinstance(a, mt.Tensor) else a
                            for a in args)
        with pytest.raises(NotImplementedError) as theirs:
            getattr(TF, name)(*theirs_args, **kwargs)
        assert str(ours.value) == str(theirs.value)
    # shapes are checked first, as in torch
    with pytest.raises(RuntimeError, match="Output size is too small"):
        F.max_pool2d(mt.zeros((1, 2, 1, 1), dtype=mt.bool), 2)


# ---- the kernels ------------------------------------------------------------------------------
def kernel_errors():
    """(args, exception type) that max_pool_forward / max_pool_backward refuse on every
    backend, with one message."""
    f32, f64, i64 = (np.zeros(8, t) for t in (np.float32, np.float64, np.int64))
    geometry = ((2, 4), (1, 2), (2, 2), (2, 2), (0, 0), (1, 1))
    forward = [((f32, f64, i64, 1) + geometry, TypeError),            # values of another dtype
               ((f32, f32.copy(), f64, 1) + geometry, TypeError),     # indices not int64
               ((f32, f32.copy(), i64, -1) + geometry, ValueError),
               ((f32, f32.copy(), i64, 1, (2, 4), (1, 2), (2,), (2, 2), (0, 0), (1, 1)),
                ValueError),                                          # entries of unequal length
               ((f32, f32.copy(), i64, 1, (2, 4), (1, 2), (2, 0), (2, 2), (0, 0), (1, 1)),
                ValueError),                                          # an empty window
               ((f32, f32.copy(), i64, 1, (2, 4), (1, 2), (2, 2), (2, 2), (-1, 0), (1, 1)),
                ValueError),
               ((f32, np.zeros(2, np.float32), i64) + (1,) + geometry, ValueError),
               ((f32, f32.copy(), i64, 2) + geometry, ValueError),   # x holds one plane
               ((i64, i64.copy(), i64.copy(), 1) + geometry + (i64[:1],), TypeError),  # bias:
               ((f32, f32.copy(), i64, 1) + geometry + (f64[:1],), TypeError),  # not float,
               ((f32, f32.copy(), i64, 1) + geometry + (f32[:2],), ValueError)]  # 2 ∤ 1 plane
    backward = [((i64, i64, i64.copy(), 2, 4, 4), TypeError),         # integer gradients
                ((f32, i64, f64, 2, 4, 4), TypeError),
                ((f32, f32.copy(), f32.copy(), 2, 4, 4), TypeError),
                ((f32, i64, f32.copy(), 2, -4, 4), ValueError),
                ((f32, i64, f32.copy(), 2, 4, 2), ValueError)]
    return [("max_pool_forward", args, error) for args, error in forward] + \
        [("max_pool_backward", args, error) for args, error in backward]


@pytest.mark.parametrize("case", range(len(kernel_errors())))
def test_cpu_kernels_reject_bad_arguments(case):
    kernel, args, error = kernel_errors()[case]
    with pytest.raises(error, match=kernel):
        getattr(_cpu, kernel)(*args)


def random_geometry(rng, spatial):
    """A geometry torch accepts (pad at most half the kernel), ceil_mode output sizes."""
    kernel = tuple(int(k) for k in rng.integers(1, 4, spatial))
    stride = tuple(int(s) for s in rng.integers(1, 4, spatial))
    padding = tuple(int(rng.integers(0, k // 2 + 1)) for k in kernel)
    dilation = tuple(int(d) for d in rng.integers(1, 3, spatial))
    size = tuple(int(s) for s in rng.integers(1, 7, spatial))
    out = tuple(max(1, (s + 2 * p - d * (k - 1) - 1 + st - 1) // st + 1)
                for s, k, st, p, d in zip(size, kernel, stride, padding, dilation))
    return size, out, kernel, stride, padding, dilation


def test_emulated_gpu_kernels_match_cpu():
    """The CUDA kernels, run by the emulator, against the CPU ones on random geometries (empty
    windows included) and every storage dtype; errors equal the CPU's."""
    from minitorch._gpu.backend import GpuBackend
    emulated = cuda_emulator.cupy_module()
    gpu = GpuBackend(emulated, 0)
    run = cuda_emulator.can_execute()
    rng = np.random.default_rng(6)
    for trial, dtype in enumerate([np.float32, np.float64, np.int64, np.uint8] * 3):
        geometry = random_geometry(rng, trial % 3 + 1)
        planes = 3
        x = sample((planes,) + geometry[0], seed=trial).reshape(-1)
        if dtype in (np.int64, np.uint8):
            x = np.nan_to_num(x, nan=7, neginf=0)
        x = x.astype(dtype)
        total, in_plane = planes * int(np.prod(geometry[1])), x.size // planes
        values, indices = np.empty(total, dtype), np.empty(total, np.int64)
        _cpu.max_pool_forward(x, values, indices, planes, *geometry)
        gpu_values, gpu_indices = gpu.empty(total, dtype), gpu.empty(total, np.int64)
        gpu.max_pool_forward(gpu.from_host(x), gpu_values, gpu_indices, planes, *geometry)
        if run:
            np.testing.assert_array_equal(gpu.to_host(gpu_values), values)
            np.testing.assert_array_equal(gpu.to_host(gpu_indices), indices)
        if dtype in (np.float32, np.float64):
            # relu(x + bias) read by the kernel: the pool of the ADD_RELU pass's values
            bias = np.array([-0.5, 1.0, np.nan], dtype)[:3 if trial % 2 else 1]
            fused = np.empty(total, dtype), np.empty(total, np.int64)
            _cpu.max_pool_forward(x, *fused, planes, *geometry, bias=bias)
            with np.errstate(invalid="ignore"):
                shifted = x.reshape(planes, -1) + bias[np.arange(planes) % bias.size, None]
            relu = np.where(shifted < 0, 0, shifted).astype(dtype).reshape(-1)
            separate = np.empty(total, dtype), np.empty(total, np.int64)
            _cpu.max_pool_forward(relu, *separate, planes, *geometry)
            for got, want in zip(fused, separate):
                np.testing.assert_array_equal(got, want)
            gpu_fused = gpu.empty(total, dtype), gpu.empty(total, np.int64)
            gpu.max_pool_forward(gpu.from_host(x), *gpu_fused, planes, *geometry,
                                 bias=gpu.from_host(bias))
            if run:
                for got, want in zip(gpu_fused, fused):
                    np.testing.assert_array_equal(gpu.to_host(got), want)
            g = rng.random(total).astype(dtype)
            grad = np.empty(x.size, dtype)
            _cpu.max_pool_backward(g, indices, grad, planes, in_plane, total // planes)
            gpu_grad = gpu.empty(x.size, dtype)
            gpu.max_pool_backward(gpu.from_host(g), gpu.from_host(indices), gpu_grad, planes,
                                  in_plane, total // planes)
            if run:
                np.testing.assert_allclose(gpu.to_host(gpu_grad), grad, rtol=1e-6)
    assert emulated.launches
    cuda_emulator.assert_same_kernel_errors(_cpu, gpu, kernel_errors())
