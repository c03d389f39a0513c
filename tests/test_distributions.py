"""minitorch.distributions against torch.distributions: shapes, log_prob / cdf / icdf / entropy
and moments, gradients (log_prob by finite differences, rsample's reparameterisation), sample
moments with a fixed seed, expand, enumerate_support, KL divergences and the errors."""
import math
import warnings

import numpy as np
import pytest

import minitorch as mt
import minitorch.distributions as D
from minitorch.autograd import gradcheck
from minitorch.distributions.gamma import standard_gamma_grad
from torch_parity import assert_same_queries, query_distribution

torch = pytest.importorskip("torch")
TD = torch.distributions

P3 = [[0.2, 0.5, 0.3], [0.6, 0.1, 0.3]]


def lower(a):
    """A well-conditioned lower Cholesky factor from any square matrix (differentiably)."""
    return a.tril(-1) + (a.diagonal(dim1=-2, dim2=-1).exp()).diag_embed()


def spd(a):
    return lower(a) @ lower(a).mT


# name: (builder(D, *params), float params (differentiated), value to score)
CASES = {
    "Normal": (lambda D, loc, scale: D.Normal(loc, scale),
               [[[0.3, -1.2, 2.0]], [[0.5], [1.5]]], [[0.1, -1.0, 2.5], [1.0, 0.0, -3.0]]),
    "LogNormal": (lambda D, loc, scale: D.LogNormal(loc, scale),
                  [[0.3, -0.2], [0.5, 1.1]], [[0.7, 2.5]]),
    "Uniform": (lambda D, low, high: D.Uniform(low, high),
                [[-1.0, 0.5], [2.0, 0.75]], [0.3, 0.6]),
    "Exponential": (lambda D, rate: D.Exponential(rate), [[0.5, 2.0, 3.0]], [0.1, 1.0, 4.0]),
    "Laplace": (lambda D, loc, scale: D.Laplace(loc, scale),
                [[0.0, 1.0], [2.0, 0.5]], [[-1.0, 1.7], [3.0, 0.2]]),
    "Cauchy": (lambda D, loc, scale: D.Cauchy(loc, scale),
               [[0.0, 1.0], [2.0, 0.5]], [[-1.0, 1.7], [3.0, 0.2]]),
    "Gamma": (lambda D, c, r: D.Gamma(c, r), [[0.7, 2.5, 9.0], [1.5, 0.5, 2.0]],
              [0.4, 3.0, 5.0]),
    "Chi2": (lambda D, df: D.Chi2(df), [[1.5, 4.0]], [0.7, 3.0]),
    "Beta": (lambda D, a, b: D.Beta(a, b), [[0.8, 2.0, 5.0], [1.5, 3.0, 0.9]],
             [0.3, 0.5, 0.95]),
    "Dirichlet": (lambda D, c: D.Dirichlet(c), [[[0.8, 2.0, 3.0], [1.5, 1.0, 0.7]]],
                  [[0.2, 0.5, 0.3], [0.1, 0.1, 0.8]]),
    "Bernoulli": (lambda D, p: D.Bernoulli(probs=p), [[0.2, 0.7, 0.5]], [1.0, 0.0, 1.0]),
    "BernoulliLogits": (lambda D, logits: D.Bernoulli(logits=logits), [[-1.0, 0.5]],
                        [[1.0], [0.0]]),
    "Categorical": (lambda D, p: D.Categorical(probs=p), [P3], np.array([2, 0])),
    "CategoricalLogits": (lambda D, logits: D.Categorical(logits=logits),
                          [[[0.5, -1.0, 2.0, 0.0]]], np.array([[3], [1]])),
    "OneHotCategorical": (lambda D, p: D.OneHotCategorical(probs=p), [P3],
                          [[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]),
    "Binomial": (lambda D, p: D.Binomial(10, probs=p), [[0.3, 0.9]], [3.0, 10.0]),
    "BinomialLogits": (lambda D, logits: D.Binomial(6, logits=logits), [[-0.5, 1.2]], [0.0, 4.0]),
    "Poisson": (lambda D, rate: D.Poisson(rate), [[0.5, 3.0, 10.0]], [0.0, 2.0, 12.0]),
    "Geometric": (lambda D, p: D.Geometric(probs=p), [[0.3, 0.8]], [0.0, 3.0]),
    "Multinomial": (lambda D, p: D.Multinomial(6, probs=p), [P3],
                    [[1.0, 2.0, 3.0], [6.0, 0.0, 0.0]]),
    "MVNScaleTril": (lambda D, loc, a: D.MultivariateNormal(loc, scale_tril=lower(a)),
                     [[[0.0, 1.0, -1.0]], [[0.3, 0.5, -0.2], [0.4, 0.1, 0.2], [-0.5, 0.3, 0.2]]],
                     [[0.5, 0.5, 0.5], [-1.0, 2.0, 0.0]]),
    "MVNCovariance": (lambda D, loc, a: D.MultivariateNormal(loc, covariance_matrix=spd(a)),
                      [[0.0, 1.0], [[[0.3, 0.5], [0.4, 0.1]], [[1.0, 0.2], [-0.3, 0.5]]]],
                      [[0.5, 0.2], [-1.0, 2.0]]),
    "MVNPrecision": (lambda D, loc, a: D.MultivariateNormal(loc, precision_matrix=spd(a)),
                     [[0.0, 1.0], [[0.3, 0.5], [0.4, 0.1]]], [[0.5, 0.2], [-1.0, 2.0]]),
    "Independent": (lambda D, loc, scale: D.Independent(D.Normal(loc, scale), 1),
                    [[[0.3, -1.2, 2.0]], [[0.5], [1.5]]], [[0.1, -1.0, 2.5], [1.0, 0.0, -3.0]]),
}
CDF_POINTS = {"icdf": [[0.1, 0.5, 0.9]]}


def tensors(lib, arrays, device="cpu"):
    def convert(a):
        a = np.asarray(a)
        dtype = lib.int64 if a.dtype.kind == "i" else lib.float64
        return lib.tensor(a, dtype=dtype, device=device)
    return [convert(a) for a in arrays]


def build(lib, name, device="cpu", params=None):
    builder, arrays, value = CASES[name]
    params = tensors(lib, arrays, device) if params is None else params
    module = TD if lib is torch else D
    return builder(module, *params), tensors(lib, [value], device)[0]


def to_numpy(t):
    return t.detach().cpu().numpy() if hasattr(t, "detach") else t


@pytest.mark.parametrize("name", CASES)
def test_matches_torch(name, device):
    ours, value = build(mt, name, device)
    theirs, tvalue = build(torch, name)
    assert ours.batch_shape == theirs.batch_shape and ours.event_shape == theirs.event_shape
    assert ours.has_rsample == theirs.has_rsample
    assert_same_queries(name, ours, value, theirs, tvalue)
    assert repr(ours) == repr(theirs)


def differentiable(name):
    return [a for a in CASES[name][1] if np.asarray(a).dtype.kind == "f"]


@pytest.mark.parametrize("name", CASES)
def test_log_prob_and_entropy_gradients(name, device):
    _, arrays, _ = CASES[name]
    params = [p.requires_grad_() for p in tensors(mt, arrays, device)]

    def scores(*params):
        dist, value = build(mt, name, device, list(params))
        entropy = query_distribution(dist, "entropy", None)
        total = dist.log_prob(value).sum()
        return total if isinstance(entropy, type) else total + entropy.sum()
    assert gradcheck(scores, tuple(params))


@pytest.mark.parametrize("name", ["Normal", "Uniform", "Exponential", "Laplace", "Cauchy",
                                  "LogNormal", "MVNScaleTril", "MVNCovariance", "Independent"])
def test_rsample_is_reparameterised(name, device):
    """With the draws fixed (same seed), rsample is a smooth function of the parameters."""
    params = [p.requires_grad_() for p in tensors(mt, CASES[name][1], device)]

    def draw(*params):
        mt.manual_seed(3)
        return build(mt, name, device, list(params))[0].rsample((2,))
    assert gradcheck(draw, tuple(params))


def test_gamma_rsample_gradient_is_torchs(device):
    alpha = mt.tensor([0.05, 0.3, 1.0, 2.5, 7.0, 9.0, 30.0, 200.0], dtype=mt.float64,
                      device=device, requires_grad=True)
    mt.manual_seed(0)
    x = D.Gamma(alpha, 1.0).rsample((50,))
    x.sum().backward()
    talpha = torch.tensor(to_numpy(alpha)).expand(50, 8)
    want = torch._standard_gamma_grad(talpha, torch.tensor(to_numpy(x))).numpy()
    np.testing.assert_allclose(to_numpy(alpha.grad), want.sum(0), rtol=1e-8)
    for dtype in (mt.float32, mt.float64):     # the formula alone, both branches of each test
        a = mt.tensor([0.5, 0.5, 3.0, 20.0, 20.0, 20.0], dtype=dtype, device=device)
        s = mt.tensor([0.1, 2.0, 3.0, 5.0, 20.0, 40.0], dtype=dtype, device=device)
        want = torch._standard_gamma_grad(torch.tensor(to_numpy(a)), torch.tensor(to_numpy(s)))
        got = standard_gamma_grad(a, s)
        assert got.dtype == dtype
        np.testing.assert_allclose(to_numpy(got), want.numpy(), rtol=1e-5)


def test_gamma_double_backward_raises(device):
    alpha = mt.tensor([2.0], dtype=mt.float64, device=device, requires_grad=True)
    x = D.Gamma(alpha, 1.0).rsample()
    (grad,) = mt.autograd.grad(x.sum(), alpha, create_graph=True)
    with pytest.raises(RuntimeError, match="derivative for '_standard_gamma_grad'"):
        grad.sum().backward()


@pytest.mark.parametrize("name, mean_grad", [
    ("Beta", lambda a, b: (b / (a + b) ** 2, -a / (a + b) ** 2)),
    ("Gamma", lambda a, r: (1 / r, -a / r ** 2)),
])
def test_implicit_gradients_are_unbiased(name, mean_grad, device):
    """The average gradient of samples is the gradient of the mean."""
    a = mt.tensor([1.5], dtype=mt.float64, device=device, requires_grad=True)
    b = mt.tensor([2.5], dtype=mt.float64, device=device, requires_grad=True)
    mt.manual_seed(1)
    dist = D.Beta(a, b) if name == "Beta" else D.Gamma(a, b)
    dist.rsample((2000,)).mean().backward()
    want = mean_grad(1.5, 2.5)
    np.testing.assert_allclose([a.grad.item(), b.grad.item()], want, rtol=0.08, atol=0.01)


def test_dirichlet_rsample_gradient_flows(device):
    c = mt.tensor([1.0, 2.0, 3.0], dtype=mt.float64, device=device, requires_grad=True)
    mt.manual_seed(2)
    sample = D.Dirichlet(c).rsample((2000,))
    sample[..., 0].mean().backward()
    # E[x0] = c0 / sum(c): its gradient is (sum - c0, -c0, -c0) / sum^2
    np.testing.assert_allclose(to_numpy(c.grad), [5 / 36, -1 / 36, -1 / 36], atol=0.01)
    assert np.allclose(to_numpy(sample.sum(-1)), 1.0)


MOMENT_CASES = ["Normal", "LogNormal", "Uniform", "Exponential", "Laplace", "Gamma", "Chi2",
                "Beta", "Dirichlet", "Bernoulli", "Categorical", "OneHotCategorical",
                "Binomial", "Poisson", "Geometric", "Multinomial", "MVNCovariance",
                "Independent"]


@pytest.mark.parametrize("name", MOMENT_CASES)
def test_sample_moments(name, device):
    dist, _ = build(mt, name, device)
    mt.manual_seed(0)
    samples = dist.sample((2000,))
    assert tuple(samples.shape) == (2000,) + tuple(dist.batch_shape) + tuple(dist.event_shape)
    assert not samples.requires_grad
    values = to_numpy(samples).astype(np.float64)
    if name == "Categorical":   # compare frequencies with the probabilities instead
        freq = np.stack([(values == k).mean(0) for k in range(3)], -1)
        np.testing.assert_allclose(freq, P3, atol=0.03)
        return
    mean, var = to_numpy(dist.mean), to_numpy(dist.variance)
    np.testing.assert_allclose(values.mean(0), mean, rtol=0.1, atol=0.05 * np.sqrt(var).max())
    np.testing.assert_allclose(values.var(0), var, rtol=0.25, atol=0.02)
    assert bool(dist.support.check(samples).all())


@pytest.mark.parametrize("name", ["Normal", "Gamma", "Categorical", "Bernoulli", "Binomial",
                                  "Dirichlet", "MVNScaleTril", "MVNCovariance", "Independent",
                                  "LogNormal", "Beta", "OneHotCategorical", "Multinomial"])
def test_expand(name, device):
    ours, value = build(mt, name, device)
    theirs, tvalue = build(torch, name)
    shape = (4,) + tuple(ours.batch_shape)
    big, tbig = ours.expand(shape), theirs.expand(shape)
    assert big.batch_shape == tbig.batch_shape == shape
    assert big.event_shape == tbig.event_shape
    assert type(big) is type(ours)
    np.testing.assert_allclose(to_numpy(big.log_prob(value)), tbig.log_prob(tvalue).numpy(),
                               rtol=1e-9)
    assert tuple(big.sample((2,)).shape) == (2,) + shape + tuple(ours.event_shape)


def test_scalar_parameters_and_sample_shapes(device):
    dist = D.Normal(0.0, 1.0)
    assert dist.batch_shape == () and dist.loc.dtype == mt.float32
    assert tuple(dist.sample().shape) == () and tuple(dist.rsample((3, 2)).shape) == (3, 2)
    assert D.Exponential(mt.tensor(2.0, device=device)).batch_shape == ()
    empty = D.Normal(mt.zeros(0, 3, device=device), 1.0)
    assert tuple(empty.sample((2,)).shape) == (2, 0, 3)
    assert tuple(empty.log_prob(mt.zeros(0, 3, device=device)).shape) == (0, 3)
    cat = D.Categorical(logits=mt.zeros(2, 5, device=device))
    assert tuple(cat.sample((3, 4)).shape) == (3, 4, 2) and cat.sample().dtype == mt.int64


def test_log_prob_on_views(device):
    """Transposed and stepped values score like their contiguous copies."""
    loc = mt.tensor([[0.0, 1.0, 2.0]] * 3, dtype=mt.float64, device=device).t()
    dist = D.Normal(loc, 2.0)
    value = mt.arange(18.0, dtype=mt.float64, device=device).reshape(3, 6)[:, ::2].t()
    tdist = TD.Normal(torch.tensor(to_numpy(loc)), 2.0)
    np.testing.assert_allclose(to_numpy(dist.log_prob(value)),
                               tdist.log_prob(torch.tensor(to_numpy(value))).numpy())


KL_PAIRS = [("Normal", "Normal"), ("Bernoulli", "Bernoulli"), ("Categorical", "Categorical"),
            ("MVNCovariance", "MVNCovariance"), ("MVNScaleTril", "MVNScaleTril"),
            ("Uniform", "Uniform"), ("Exponential", "Exponential"), ("Gamma", "Gamma"),
            ("Beta", "Beta"), ("Dirichlet", "Dirichlet"), ("Poisson", "Poisson"),
            ("Independent", "Independent"), ("Laplace", "Laplace"), ("Geometric", "Geometric"),
            ("Cauchy", "Cauchy"), ("OneHotCategorical", "OneHotCategorical"),
            ("Binomial", "Binomial"), ("LogNormal", "LogNormal"), ("Chi2", "Chi2")]
# pairs of different families, over two points in each batch
TWO = {"Normal": lambda D, t: D.Normal(t([0.3, -1.0]), t([0.5, 2.0])),
       "Laplace": lambda D, t: D.Laplace(t([0.0, 1.0]), t([1.5, 0.7])),
       "Gamma": lambda D, t: D.Gamma(t([0.7, 2.5]), t([1.5, 0.5])),
       "Exponential": lambda D, t: D.Exponential(t([0.5, 2.0])),
       "Uniform": lambda D, t: D.Uniform(t([0.2, -1.0]), t([0.7, 3.0])),
       "Beta": lambda D, t: D.Beta(t([0.8, 2.0]), t([1.5, 3.0])),
       "Bernoulli": lambda D, t: D.Bernoulli(t([0.2, 0.9])),
       "Poisson": lambda D, t: D.Poisson(t([0.5, 3.0]))}
CROSS_KL = [("Normal", "Laplace"), ("Normal", "Gamma"), ("Normal", "Uniform"),
            ("Exponential", "Gamma"), ("Exponential", "Normal"), ("Exponential", "Uniform"),
            ("Gamma", "Normal"), ("Gamma", "Exponential"), ("Gamma", "Beta"),
            ("Uniform", "Normal"), ("Uniform", "Gamma"), ("Uniform", "Exponential"),
            ("Uniform", "Beta"), ("Beta", "Uniform"), ("Beta", "Normal"), ("Beta", "Gamma"),
            ("Beta", "Exponential"), ("Bernoulli", "Poisson"), ("Laplace", "Normal"),
            ("Laplace", "Uniform"), ("Poisson", "Bernoulli")]


@pytest.mark.parametrize("p_name, q_name", CROSS_KL)
def test_kl_divergence_across_families(p_name, q_name, device):
    def make(lib, dev):
        module = TD if lib is torch else D
        t = lambda x: lib.tensor(x, dtype=lib.float64, device=dev)     # noqa: E731
        return TWO[p_name](module, t), TWO[q_name](module, t)
    got = D.kl_divergence(*make(mt, device))
    want = TD.kl_divergence(*make(torch, "cpu"))
    np.testing.assert_allclose(to_numpy(got), want.numpy(), rtol=1e-9)


def shifted(lib, name, device, shift):
    """The case's distribution with its float parameters moved (still valid)."""
    _, arrays, _ = CASES[name]
    params = tensors(lib, [np.asarray(a) * shift for a in arrays], device)
    if name in ("Uniform",):
        params = tensors(lib, [np.asarray(arrays[0]) - shift, np.asarray(arrays[1]) + shift],
                         device)
    return build(lib, name, device, params)[0]


@pytest.mark.parametrize("p_name, q_name", KL_PAIRS)
def test_kl_divergence(p_name, q_name, device):
    for p_shift, q_shift in ((1.0, 0.9), (0.8, 1.0)):
        want = TD.kl_divergence(shifted(torch, p_name, "cpu", p_shift),
                                shifted(torch, q_name, "cpu", q_shift))
        got = D.kl_divergence(shifted(mt, p_name, device, p_shift),
                              shifted(mt, q_name, device, q_shift))
        assert tuple(got.shape) == tuple(want.shape)
        np.testing.assert_allclose(to_numpy(got), want.numpy(), rtol=1e-9, atol=1e-12)


def test_kl_gradient_and_infinities(device):
    def kl(loc, scale):
        q = D.Normal(*tensors(mt, [0.5, 2.0], device))
        return D.kl_divergence(D.Normal(loc, scale), q)
    params = tensors(mt, [[0.1, -1.0], [0.7, 1.5]], device)
    assert gradcheck(kl, tuple(p.requires_grad_() for p in params))
    probs = mt.tensor([0.0, 0.5, 1.0], dtype=mt.float64, device=device)
    got = D.kl_divergence(D.Bernoulli(probs), D.Bernoulli(probs.flip(0)))
    want = TD.kl_divergence(TD.Bernoulli(torch.tensor(to_numpy(probs))),
                            TD.Bernoulli(torch.tensor(to_numpy(probs)).flip(0)))
    np.testing.assert_array_equal(to_numpy(got), want.numpy())


def test_register_kl_and_dispatch():
    class MyNormal(D.Normal):
        pass

    assert float(D.kl_divergence(MyNormal(0.0, 1.0), D.Normal(1.0, 1.0))) == 0.5

    @D.register_kl(MyNormal, MyNormal)
    def _kl(p, q):
        return p.loc * 0 - 1

    try:
        assert float(D.kl_divergence(MyNormal(0.0, 1.0), MyNormal(1.0, 1.0))) == -1
    finally:
        del D.kl._KL_REGISTRY[MyNormal, MyNormal]
        D.kl._KL_MEMOIZE.clear()
    with pytest.raises(TypeError, match="Expected type_p to be a Distribution subclass"):
        D.register_kl(int, D.Normal)


def both_raise(call):
    """call(distributions module, tensor library) raises the same type and message in both."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(Exception) as theirs:
            call(TD, torch)
        with pytest.raises(Exception) as ours:
            call(D, mt)
    assert type(ours.value) is type(theirs.value)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("call", [
    lambda D, t: D.Normal(0.0, -1.0),
    lambda D, t: D.Normal(t.zeros(2), t.tensor([1.0, -1.0])),
    lambda D, t: D.Uniform(2.0, 1.0),
    lambda D, t: D.Bernoulli(probs=t.tensor([0.5, 1.5])),
    lambda D, t: D.Bernoulli(),
    lambda D, t: D.Bernoulli(probs=0.5, logits=0.0),
    lambda D, t: D.Categorical(probs=t.tensor(0.5)),
    lambda D, t: D.Categorical(logits=t.tensor(0.5)),
    lambda D, t: D.Dirichlet(t.tensor(1.0)),
    lambda D, t: D.Dirichlet(t.tensor([1.0, -1.0])),
    lambda D, t: D.Geometric(probs=t.tensor([0.0, 0.5])),
    lambda D, t: D.Binomial(t.tensor([2.5]), probs=t.tensor([0.5])),
    lambda D, t: D.Multinomial(t.tensor(3), probs=t.tensor([0.5, 0.5])),
    lambda D, t: D.MultivariateNormal(t.zeros(2)),
    lambda D, t: D.MultivariateNormal(t.zeros(2), t.eye(2), scale_tril=t.eye(2)),
    lambda D, t: D.MultivariateNormal(t.tensor(0.0), t.eye(2)),
    lambda D, t: D.MultivariateNormal(t.zeros(2), t.ones(2)),
    lambda D, t: D.MultivariateNormal(t.zeros(2), scale_tril=t.ones(2)),
    lambda D, t: D.MultivariateNormal(t.zeros(2), t.tensor([[1.0, 2.0], [2.0, 1.0]])),
    lambda D, t: D.MultivariateNormal(t.zeros(2), scale_tril=t.ones(2, 2)),
    lambda D, t: D.Independent(D.Normal(t.zeros(2), 1.0), 2),
    lambda D, t: D.Exponential(1.0).log_prob(t.tensor([-1.0])),
    lambda D, t: D.Exponential(1.0).log_prob([1.0]),
    lambda D, t: D.Normal(t.zeros(3), 1.0).log_prob(t.zeros(2)),
    lambda D, t: D.Dirichlet(t.ones(3)).log_prob(t.ones(2)),
    lambda D, t: D.Categorical(logits=t.zeros(3)).log_prob(t.tensor(3)),
    lambda D, t: D.Binomial(t.tensor([2.0, 3.0]), probs=t.tensor(0.5)).entropy(),
    lambda D, t: D.Binomial(t.tensor([2.0, 3.0]), probs=t.tensor(0.5)).enumerate_support(),
    lambda D, t: D.Independent(D.Normal(t.zeros(2), 1.0), 1).enumerate_support(),
    lambda D, t: D.kl_divergence(D.Normal(0.0, 1.0), D.Categorical(logits=t.zeros(2))),
    lambda D, t: D.kl_divergence(D.Binomial(2, probs=t.tensor(0.5)),
                                 D.Binomial(3, probs=t.tensor(0.5))),
    lambda D, t: D.Poisson(t.tensor(1.0)).entropy(),
    lambda D, t: D.Categorical(logits=t.zeros(2)).rsample(),
])
def test_errors_match_torch(call):
    both_raise(call)


def test_validate_args_off_and_constraints():
    dist = D.Normal(0.0, -1.0, validate_args=False)
    assert math.isnan(dist.log_prob(mt.tensor(0.0)).item())
    assert repr(D.constraints.interval(0.0, 1.0)) == repr(TD.constraints.interval(0.0, 1.0))
    assert repr(D.constraints.independent(D.constraints.positive, 1)) == \
        repr(TD.constraints.independent(TD.constraints.positive, 1))
    x = np.array([[0.5, 0.5], [0.7, 0.2], [-0.1, 1.1]])
    for name in ("simplex", "real_vector", "one_hot"):
        got = getattr(D.constraints, name).check(mt.tensor(x))
        want = getattr(TD.constraints, name).check(torch.tensor(x))
        np.testing.assert_array_equal(to_numpy(got), want.numpy())
    assert D.Uniform(0.0, 2.0).support.upper_bound.item() == 2.0
    assert D.constraints.is_dependent(D.Categorical.support)


def test_enumerate_support_not_expanded():
    dist = D.Bernoulli(mt.tensor([[0.2, 0.4, 0.5]]))
    assert tuple(dist.enumerate_support(expand=False).shape) == (2, 1, 1)
    assert tuple(dist.enumerate_support().shape) == (2, 1, 3)


def test_sigmoid_transform_clips_and_inverses_are_transforms():
    torch = pytest.importorskip("torch")
    import torch.distributions as TD
    ours = D.TransformedDistribution(D.Normal(mt.tensor([0.]), mt.tensor([1.])),
                                     [D.SigmoidTransform()], validate_args=False)
    theirs = TD.TransformedDistribution(TD.Normal(torch.tensor([0.]), torch.tensor([1.])),
                                        [TD.SigmoidTransform()], validate_args=False)
    np.testing.assert_allclose(ours.log_prob(mt.tensor([0., 1.])).numpy(),
                               theirs.log_prob(torch.tensor([0., 1.])).numpy(), rtol=1e-6)
    exp = D.ExpTransform()
    assert repr(exp.inv) == "_InverseTransform(ExpTransform())" and exp.inv.inv == exp
    back = D.TransformedDistribution(D.LogNormal(mt.tensor([0.]), mt.tensor([1.])), [exp.inv])
    expected = TD.TransformedDistribution(TD.LogNormal(torch.tensor([0.]), torch.tensor([1.])),
                                          [TD.ExpTransform().inv])
    np.testing.assert_allclose(back.log_prob(mt.tensor([0.5])).numpy(),
                               expected.log_prob(torch.tensor([0.5])).numpy(), rtol=1e-6)


def test_torch_distributions_names_all_exist():
    """Every public name of torch.distributions, its per-class module names included
    (`from torch.distributions.normal import Normal`)."""
    from minitorch.distributions.categorical import Categorical
    from minitorch.distributions.normal import Normal
    assert Normal is mt.distributions.Normal and Categorical is mt.distributions.Categorical
    torch = pytest.importorskip("torch")
    ours = {n for n in dir(mt.distributions) if not n.startswith("_")}
    theirs = {n for n in dir(torch.distributions) if not n.startswith("_")}
    assert theirs <= ours, sorted(theirs - ours)
    assert set(mt.distributions.__all__) == set(torch.distributions.__all__)
