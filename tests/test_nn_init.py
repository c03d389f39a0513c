"""nn.init: gains, fan computation, distributions' bounds and moments, reproducibility."""
import math

import numpy as np
import pytest

import minitorch as mt
import minitorch.nn as nn
from minitorch.nn import init
from minitorch.nn.init import _calculate_correct_fan, _calculate_fan_in_and_fan_out


@pytest.mark.parametrize("nonlinearity,param,expected", [
    ("linear", None, 1), ("conv2d", None, 1), ("sigmoid", None, 1), ("tanh", None, 5.0 / 3),
    ("relu", None, math.sqrt(2.0)), ("leaky_relu", None, math.sqrt(2.0 / (1 + 0.01 ** 2))),
    ("leaky_relu", 0, math.sqrt(2.0)), ("leaky_relu", 0.2, math.sqrt(2.0 / 1.04)),
    ("selu", None, 0.75),
])
def test_calculate_gain(nonlinearity, param, expected):
    assert init.calculate_gain(nonlinearity, param) == pytest.approx(expected, rel=1e-15)


def test_calculate_gain_matches_torch_and_errors():
    torch = pytest.importorskip("torch")
    for name in ("linear", "conv_transpose3d", "sigmoid", "tanh", "relu", "leaky_relu", "selu"):
        assert init.calculate_gain(name) == torch.nn.init.calculate_gain(name)
    with pytest.raises(ValueError, match="Unsupported nonlinearity gelu"):
        init.calculate_gain("gelu")
    with pytest.raises(ValueError, match="negative_slope True not a valid number"):
        init.calculate_gain("leaky_relu", True)


def test_fan_in_and_fan_out():
    assert _calculate_fan_in_and_fan_out(mt.empty(5, 3)) == (3, 5)
    assert _calculate_fan_in_and_fan_out(mt.empty(8, 4, 3, 2)) == (24, 48)
    assert _calculate_correct_fan(mt.empty(8, 4, 3, 2), "FAN_OUT") == 48
    with pytest.raises(ValueError, match="Fan in and fan out can not be computed for tensor "
                                         "with fewer than 2 dimensions"):
        _calculate_fan_in_and_fan_out(mt.empty(5))
    with pytest.raises(ValueError, match=r"Mode fan_avg not supported, please use one of "
                                         r"\['fan_in', 'fan_out'\]"):
        init.kaiming_uniform_(mt.empty(3, 3), mode="fan_avg")


def _values(t):
    return t.detach().cpu().numpy().astype(np.float64).ravel()


def test_uniform_and_normal_moments(device):
    mt.manual_seed(0)
    u = init.uniform_(mt.empty(200, 100, device=device), -2.0, 3.0)
    v = _values(u)
    assert v.min() >= -2.0 and v.max() < 3.0
    assert v.mean() == pytest.approx(0.5, abs=0.05) and v.std() == pytest.approx(
        5 / math.sqrt(12), rel=0.02)
    n = _values(init.normal_(mt.empty(200, 100, dtype=mt.float64, device=device), 1.5, 0.5))
    assert n.mean() == pytest.approx(1.5, abs=0.02) and n.std() == pytest.approx(0.5, rel=0.02)


def test_kaiming_and_xavier(device):
    mt.manual_seed(1)
    w = mt.empty(400, 50, device=device)
    bound = math.sqrt(6 / 50)                   # relu gain sqrt(2), fan_in 50
    v = _values(init.kaiming_uniform_(w, nonlinearity="relu"))
    assert np.abs(v).max() <= bound and np.abs(v).max() > 0.99 * bound
    assert v.std() == pytest.approx(bound / math.sqrt(3), rel=0.02)
    v = _values(init.kaiming_uniform_(w, a=math.sqrt(5)))    # nn.Linear's default
    assert np.abs(v).max() <= 1 / math.sqrt(50)
    v = _values(init.kaiming_normal_(w, mode="fan_out", nonlinearity="relu"))
    assert v.std() == pytest.approx(math.sqrt(2 / 400), rel=0.02)
    v = _values(init.xavier_uniform_(w, gain=2.0))
    limit = 2.0 * math.sqrt(6 / 450)
    assert np.abs(v).max() <= limit and np.abs(v).max() > 0.99 * limit
    v = _values(init.xavier_normal_(w))
    assert v.std() == pytest.approx(math.sqrt(2 / 450), rel=0.02)


def test_zero_element_kaiming_is_a_noop():
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        assert init.kaiming_uniform_(mt.empty(0, 3)).shape == (0, 3)


def _truncated_moments(mean, std, a, b):
    """Mean and standard deviation of N(mean, std²) restricted to [a, b]."""
    def pdf(x):
        return math.exp(-x * x / 2) / math.sqrt(2 * math.pi)

    def cdf(x):
        return (1 + math.erf(x / math.sqrt(2))) / 2

    alpha, beta = (a - mean) / std, (b - mean) / std
    z = cdf(beta) - cdf(alpha)
    m = mean + std * (pdf(alpha) - pdf(beta)) / z
    var = std ** 2 * (1 + (alpha * pdf(alpha) - beta * pdf(beta)) / z -
                      ((pdf(alpha) - pdf(beta)) / z) ** 2)
    return m, math.sqrt(var)


@pytest.mark.parametrize("mean,std,a,b", [(0.0, 1.0, -2.0, 2.0), (0.0, 0.02, -2.0, 2.0),
                                          (0.0, 1.0, 1.0, 3.0), (2.0, 1.0, -1.0, 0.0)])
def test_trunc_normal(device, mean, std, a, b):
    mt.manual_seed(2)
    v = _values(init.trunc_normal_(mt.empty(100, 200, dtype=mt.float64, device=device), mean,
                                   std, a, b))
    assert v.min() >= a and v.max() <= b
    expected_mean, expected_std = _truncated_moments(mean, std, a, b)
    assert v.mean() == pytest.approx(expected_mean, abs=0.02 * expected_std + 1e-6)
    assert v.std() == pytest.approx(expected_std, rel=0.03)


def test_trunc_normal_warns_far_from_interval():
    with pytest.warns(UserWarning, match="mean is more than 2 std from \\[a, b\\]"):
        init.trunc_normal_(mt.empty(10), mean=5.0, std=1.0, a=-1.0, b=1.0)


def test_constant_ones_zeros_eye(device):
    t = mt.empty(2, 3, device=device)
    assert init.constant_(t, 0.5).tolist() == [[0.5] * 3] * 2
    assert init.ones_(t).tolist() == [[1.0] * 3] * 2
    assert init.zeros_(t).tolist() == [[0.0] * 3] * 2
    np.testing.assert_array_equal(init.eye_(t).cpu().numpy(), np.eye(2, 3))
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        init.eye_(mt.empty(2, 2, 2))


def test_dirac_is_an_identity_convolution():
    w = init.dirac_(mt.empty(4, 2, 3, 3), groups=2).numpy()
    expected = np.zeros((4, 2, 3, 3))
    for g in range(2):
        for d in range(2):
            expected[g * 2 + d, d, 1, 1] = 1
    np.testing.assert_array_equal(w, expected)
    assert init.dirac_(mt.empty(3, 3, 5)).numpy()[:, :, 2].tolist() == np.eye(3).tolist()
    with pytest.raises(ValueError, match="Only tensors with 3, 4, or 5 dimensions are "
                                         "supported"):
        init.dirac_(mt.empty(3, 3))
    with pytest.raises(ValueError, match="dim 0 must be divisible by groups"):
        init.dirac_(mt.empty(3, 3, 3), groups=2)


def test_dirac_matches_torch():
    torch = pytest.importorskip("torch")
    ours = init.dirac_(mt.empty(6, 4, 3, 2, 5), groups=3).numpy()
    theirs = torch.nn.init.dirac_(torch.empty(6, 4, 3, 2, 5), groups=3).numpy()
    np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("shape", [(5, 5), (3, 7), (8, 2), (4, 2, 3, 3)])
def test_orthogonal(device, shape):
    w = init.orthogonal_(mt.empty(*shape, dtype=mt.float64, device=device), gain=2.0)
    flat = w.cpu().numpy().reshape(shape[0], -1)
    rows, cols = flat.shape
    gram = flat @ flat.T if rows <= cols else flat.T @ flat
    np.testing.assert_allclose(gram, 4.0 * np.eye(min(rows, cols)), atol=1e-12)
    with pytest.raises(ValueError, match="Only tensors with 2 or more dimensions are supported"):
        init.orthogonal_(mt.empty(3))


def test_sparse_zeros_per_column():
    w = init.sparse_(mt.empty(10, 6), sparsity=0.3, std=1.0).numpy()
    assert ((w == 0).sum(axis=0) == 3).all()


def test_seeding_and_generators():
    mt.manual_seed(7)
    a = _values(init.normal_(mt.empty(5, 5)))
    mt.manual_seed(7)
    b = _values(init.normal_(mt.empty(5, 5)))
    np.testing.assert_array_equal(a, b)
    g1, g2 = mt.Generator().manual_seed(3), mt.Generator().manual_seed(3)
    c = _values(init.kaiming_uniform_(mt.empty(4, 4), generator=g1))
    mt.manual_seed(123)
    d = _values(init.kaiming_uniform_(mt.empty(4, 4), generator=g2))
    np.testing.assert_array_equal(c, d)


def test_init_on_parameters_records_no_history():
    p = nn.Parameter(mt.empty(3, 4))
    version = p._version_counter
    for fill in (init.xavier_uniform_, init.ones_, init.orthogonal_, init.trunc_normal_,
                 init.zeros_, lambda t: init.dirac_(t.view(3, 4, 1))):
        fill(p)
    assert p.is_leaf and p.grad_fn is None and p.requires_grad and isinstance(p, nn.Parameter)
    assert p._version_counter > version
    out = init.uniform_(p)
    assert out is p
