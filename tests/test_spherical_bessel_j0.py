"""torch.special.spherical_bessel_j0 (the worked example of docs/adding_an_op.md): values against
sin(x) / x and torch, edge values, dtypes, no gradient (as torch) and torch's argument error, on
every device; the emulated CUDA kernel against the CPU's."""
import math

import numpy as np
import pytest

import minitorch as mt
from minitorch import _cpu, special
from minitorch.opcodes import UnaryOp

import cuda_emulator

try:
    import torch
except ImportError:
    torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")

EDGES = [0.0, -0.0, math.inf, -math.inf, math.nan, 1e-300, -1e-30, 0.4999999, 0.5, -0.5, 1.0,
         math.pi, -math.pi, 10.0, 1e5, -1e10, 1e300]


def sweep(dtype):
    rng = np.random.default_rng(3)
    x = np.concatenate([EDGES, rng.uniform(-1, 1, 200), rng.standard_normal(200) * 30])
    with np.errstate(over="ignore"):        # 1e300 becomes inf in float32
        return x.astype(dtype)


def reference(x):
    """sin(x) / x in Python floats (1 at 0, 0 at ±inf, NaN stays NaN)."""
    if x == 0:
        return 1.0
    if math.isinf(x):
        return 0.0
    return math.sin(x) / x if not math.isnan(x) else math.nan


def test_matches_the_formula(device):
    x = sweep(np.float64)
    got = special.spherical_bessel_j0(mt.tensor(x, device=device)).cpu().numpy()
    want = np.array([reference(v) for v in x])
    np.testing.assert_allclose(got, want, rtol=4e-16, atol=1e-300)


@needs_torch
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_matches_torch(dtype, device):
    x = sweep(dtype)
    got = special.spherical_bessel_j0(mt.tensor(x, device=device))
    want = torch.special.spherical_bessel_j0(torch.from_numpy(x)).numpy()
    assert got.dtype is getattr(mt, np.dtype(dtype).name)
    # float32: torch computes in float, we in double rounded once (at most 1 ulp apart)
    rtol = 1e-15 if dtype == np.float64 else 2.5e-7
    np.testing.assert_allclose(got.cpu().numpy(), want, rtol=rtol, atol=1e-30)


@needs_torch
def test_integer_and_bool_inputs_give_the_default_float(device):
    for values in ([0, 3, -7], [True, False]):
        got = special.spherical_bessel_j0(mt.tensor(values, device=device))
        want = torch.special.spherical_bessel_j0(torch.tensor(values))
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
        np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), rtol=2.5e-7)


def test_records_no_gradient_like_torch(device):
    x = mt.tensor([0.5, 2.0], dtype=mt.float64, device=device, requires_grad=True)
    assert not special.spherical_bessel_j0(x).requires_grad
    assert special.spherical_bessel_j0(mt.tensor([], device=device)).shape == (0,)


def test_rejects_a_non_tensor_like_torch():
    with pytest.raises(TypeError, match=r"special_spherical_bessel_j0\(\): argument 'input' "
                                        r"\(position 1\) must be Tensor, not float"):
        special.spherical_bessel_j0(1.0)


def test_kernel_refuses_integers_on_both_backends():
    from minitorch._gpu.backend import GpuBackend
    gpu = GpuBackend(cuda_emulator.cupy_module(), 0)
    ints = np.arange(3, dtype=np.int64)
    for unary, buffer, out in ((_cpu.unary, ints, np.empty(3, np.int64)),
                               (gpu.unary, gpu.from_host(ints), gpu.empty(3, np.int64))):
        with pytest.raises(TypeError, match="SPHERICAL_BESSEL_J0 is not supported for dtype "
                                            "int64"):
            unary(int(UnaryOp.SPHERICAL_BESSEL_J0), buffer, out)


@pytest.mark.skipif(not cuda_emulator.can_execute(), reason="no g++ for the CUDA emulator")
def test_emulated_cuda_kernel_matches_cpu():
    from minitorch._gpu.backend import GpuBackend
    gpu = GpuBackend(cuda_emulator.cupy_module(), 0)
    for dtype in (np.float32, np.float64):
        x = sweep(dtype)
        want = np.empty_like(x)
        _cpu.unary(int(UnaryOp.SPHERICAL_BESSEL_J0), x, want)
        out = gpu.empty(x.size, dtype)
        gpu.unary(int(UnaryOp.SPHERICAL_BESSEL_J0), gpu.from_host(x), out)
        np.testing.assert_array_equal(gpu.to_host(out), want)
