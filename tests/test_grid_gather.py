"""functions/grid.py's separable gather (reflect / replicate / circular padding, nearest
upsampling in one kernel pass) against the composition it replaced, one index_select per axis:
values for float, int64 and bool inputs, gradients in float64 (gradcheck, gradgradcheck),
non-contiguous and empty inputs."""
import numpy as np
import pytest

import minitorch as mt
import minitorch.nn.functional as F
from minitorch.functions.grid import grid_gather


def _by_index_select(x, tables):
    for axis, table in enumerate(tables):
        dim = x.ndim - len(tables) + axis
        x = x.index_select(dim, mt.tensor(list(table), dtype=mt.int64, device=x.device))
    return x


TABLES = [([2, 0, 1, 1],), ([1, 0, 3], [2, 2, 0]), ([0, 0], [2, 1, 0, 1], [1, 2])]


@pytest.mark.parametrize("tables", TABLES, ids=["1d", "2d", "3d"])
@pytest.mark.parametrize("dtype", [mt.float32, mt.float64, mt.int64, mt.bool])
def test_values_match_index_select(device, tables, dtype):
    rng = np.random.default_rng(0)
    shape = (2, 3, 3, 4, 3)[5 - len(tables) - 2:]
    x = mt.tensor(rng.normal(size=shape) * 5, device=device).to(dtype)
    want = _by_index_select(x, tables)
    got = grid_gather(x, tables)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got.cpu().numpy(), want.cpu().numpy())
    # a non-contiguous input
    xt = x.transpose(0, 1)
    np.testing.assert_array_equal(grid_gather(xt, tables).cpu().numpy(),
                                  _by_index_select(xt, tables).cpu().numpy())


@pytest.mark.parametrize("tables", TABLES, ids=["1d", "2d", "3d"])
def test_gradients(device, tables):
    rng = np.random.default_rng(1)
    shape = (2, 3, 3, 4, 3)[5 - len(tables) - 2:]
    x = mt.tensor(rng.normal(size=shape), dtype=mt.float64, device=device, requires_grad=True)
    assert mt.autograd.gradcheck(lambda t: grid_gather(t, tables), (x,))
    assert mt.autograd.gradgradcheck(lambda t: grid_gather(t, tables), (x,))
    g = mt.tensor(rng.normal(size=grid_gather(x, tables).shape), dtype=mt.float64,
                  device=device)
    (want,) = mt.autograd.grad(_by_index_select(x, tables), [x], g)
    (got,) = mt.autograd.grad(grid_gather(x, tables), [x], g)
    np.testing.assert_allclose(got.cpu().numpy(), want.cpu().numpy(), atol=1e-12)


def test_empty_batch_and_0d_planes(device):
    x = mt.zeros(0, 3, 4, 5, device=device, requires_grad=True)
    y = F.pad(x, (1, 1, 2, 0), mode="replicate")
    assert y.shape == (0, 3, 6, 7)
    y.sum().backward()
    assert x.grad.shape == x.shape


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_padding_modes_gradcheck(device, mode):
    x = mt.randn(2, 2, 4, 5, dtype=mt.float64, device=device, requires_grad=True)
    assert mt.autograd.gradcheck(lambda t: F.pad(t, (2, 1, 1, 3), mode=mode), (x,))


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
def test_nearest_gradcheck(device, mode):
    x = mt.randn(1, 2, 3, 4, dtype=mt.float64, device=device, requires_grad=True)
    assert mt.autograd.gradcheck(
        lambda t: F.interpolate(t, scale_factor=(2, 1.5), mode=mode), (x,))


def test_same_size_nearest_is_a_copy(device):
    x = mt.ones(1, 1, 2, 2, device=device)
    y = F.interpolate(x, size=(2, 2), mode="nearest")
    y.add_(1)
    assert float(x.sum()) == 4.0
