"""The distributions added after the first set (StudentT, FisherSnedecor, VonMises,
NegativeBinomial, MixtureSameFamily, LowRankMultivariateNormal, ContinuousBernoulli,
OneHotCategoricalStraightThrough, GeneralizedPareto) against torch.distributions: values,
moments, shapes, reprs, gradients, seeded samples (torch's CPU stream, except the Gamma-based
ones, whose sample moments are checked instead), expand, KL divergences and errors."""
import contextlib
import re
import types
import warnings

import numpy as np
import pytest

import minitorch as mt
import minitorch.distributions as D
from minitorch.autograd import gradcheck
from minitorch.distributions import kl_more  # noqa: F401  (registers the KL divergences)
from minitorch.distributions.continuous_bernoulli import ContinuousBernoulli
from minitorch.distributions.fishersnedecor import FisherSnedecor
from minitorch.distributions.generalized_pareto import GeneralizedPareto
from minitorch.distributions.lowrank_multivariate_normal import LowRankMultivariateNormal
from minitorch.distributions.mixture_same_family import MixtureSameFamily
from minitorch.distributions.negative_binomial import NegativeBinomial
from minitorch.distributions.one_hot_categorical import OneHotCategoricalStraightThrough
from minitorch.distributions.studentT import StudentT
from minitorch.distributions.von_mises import VonMises
from torch_parity import assert_same_queries, query_distribution

# the names the case builders use, as attributes of a module-like namespace (torch's: TD)
OURS = types.SimpleNamespace(
    StudentT=StudentT, FisherSnedecor=FisherSnedecor, VonMises=VonMises,
    NegativeBinomial=NegativeBinomial, MixtureSameFamily=MixtureSameFamily,
    LowRankMultivariateNormal=LowRankMultivariateNormal,
    ContinuousBernoulli=ContinuousBernoulli,
    OneHotCategoricalStraightThrough=OneHotCategoricalStraightThrough,
    GeneralizedPareto=GeneralizedPareto, Categorical=D.Categorical, Normal=D.Normal,
    Independent=D.Independent, MultivariateNormal=D.MultivariateNormal, Beta=D.Beta,
    Uniform=D.Uniform, Exponential=D.Exponential, Gamma=D.Gamma, Laplace=D.Laplace,
    kl_divergence=D.kl_divergence)


def torch_and_td():
    torch = pytest.importorskip("torch")
    return torch, torch.distributions


@contextlib.contextmanager
def torch_float64_default(torch):
    """torch's GeneralizedPareto compares its parameters with torch.tensor(0.0), which fails for
    float64 parameters unless the default dtype is float64 (ours compares in the parameters'
    dtype): the float64 reference values are computed under that default."""
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        yield
    finally:
        torch.set_default_dtype(previous)


P3 = [[0.2, 0.5, 0.3], [0.6, 0.1, 0.3]]

# name: (builder(namespace, *params), float64 params (differentiated), value to score)
CASES = {
    "StudentT": (lambda N, df, loc, scale: N.StudentT(df, loc, scale),
                 [[0.8, 1.5, 5.0], [[0.0], [1.0]], [2.0, 0.5, 1.0]],
                 [[0.3, -2.0, 4.0], [1.0, 1.5, -0.5]]),
    "StudentTScalar": (lambda N, df, loc, scale: N.StudentT(df, loc, scale),
                       [3.5, 0.3, 1.5], 0.7),
    "FisherSnedecor": (lambda N, df1, df2: N.FisherSnedecor(df1, df2),
                       [[1.5, 3.0, 6.0], [[1.5], [4.5], [9.0]]], [0.2, 1.0, 2.5]),
    "VonMises": (lambda N, loc, k: N.VonMises(loc, k),
                 [[0.3, -2.0, 3.0], [[0.5], [6.0]]], [0.1, 2.0, -3.0]),
    "NegativeBinomial": (lambda N, n, p: N.NegativeBinomial(n, probs=p),
                         [[0.5, 2.5, 10.0], [0.3, 0.5, 0.9]], [0.0, 3.0, 7.0]),
    "NegativeBinomialLogits": (lambda N, n, logits: N.NegativeBinomial(n, logits=logits),
                               [3.0, [[-1.0], [0.5]]], [[2.0, 0.0]]),
    "Mixture": (lambda N, p, loc, scale: N.MixtureSameFamily(N.Categorical(probs=p),
                                                              N.Normal(loc, scale)),
                [P3, [[0.0, 2.0, -1.0], [1.0, 3.0, -2.0]], [[1.0, 0.5, 2.0], [0.3, 1.0, 1.5]]],
                [0.5, -0.5]),
    "MixtureEvent": (lambda N, logits, loc, scale: N.MixtureSameFamily(
        N.Categorical(logits=logits), N.Independent(N.Normal(loc, scale), 1)),
        [[[0.5, -1.0, 0.2], [0.0, 1.0, -2.0]], [[[0.0, 1.0], [2.0, 3.0], [-1.0, -2.0]]] * 2,
         [[[1.0, 2.0], [0.5, 0.3], [1.0, 1.0]]] * 2], [[0.3, 0.2], [-1.0, 2.0]]),
    "LowRankMVN": (lambda N, loc, W, d: N.LowRankMultivariateNormal(loc, W, d),
                   [[[0.0, 1.0, -1.0], [0.5, 0.2, 0.3]], [[0.3, 0.5], [0.4, -0.1], [-0.5, 0.3]],
                    [[[1.0, 0.5, 2.0]], [[0.3, 1.2, 0.8]]]],
                   [[0.5, 0.5, 0.5], [-1.0, 2.0, 0.0]]),
    "ContinuousBernoulli": (lambda N, p: N.ContinuousBernoulli(probs=p),
                            [[0.1, 0.4995, 0.5, 0.7, 0.99]], [0.0, 0.3, 0.5, 0.9, 1.0]),
    "ContinuousBernoulliLogits": (lambda N, logits: N.ContinuousBernoulli(logits=logits),
                                  [[[-2.0], [0.001], [1.5]]], [0.2, 0.8]),
    "OneHotStraightThrough": (lambda N, p: N.OneHotCategoricalStraightThrough(probs=p), [P3],
                              [[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]),
    "GeneralizedPareto": (lambda N, loc, scale, c: N.GeneralizedPareto(loc, scale, c),
                          [[0.0, 1.0, -1.0, 0.5], [1.0, 2.0, 0.5, 1.5], [0.0, 0.3, -0.4, 1.2]],
                          [0.5, 1.5, -0.5, 3.0]),
}
def tensors(lib, arrays, device="cpu"):
    return [lib.tensor(np.asarray(a, dtype=np.float64), device=device) for a in arrays]


def build(lib, name, device="cpu", params=None):
    builder, arrays, value = CASES[name]
    params = tensors(lib, arrays, device) if params is None else params
    namespace = OURS if lib is mt else lib.distributions
    return builder(namespace, *params), tensors(lib, [value], device)[0]


def to_numpy(t):
    return t.detach().cpu().numpy() if hasattr(t, "detach") else np.asarray(t)


@pytest.mark.parametrize("name", CASES)
def test_matches_torch(name, device):
    torch, _ = torch_and_td()
    ours, value = build(mt, name, device)
    theirs, tvalue = build(torch, name)
    assert ours.batch_shape == theirs.batch_shape and ours.event_shape == theirs.event_shape
    assert ours.has_rsample == theirs.has_rsample
    assert ours.has_enumerate_support == theirs.has_enumerate_support
    # tensors in a repr name their dtype minitorch.float64 where torch's say torch.float64
    # (and theirs, on the CPU, have no device: without it the line breaks differ, so spaces and
    # line breaks are not compared)
    support = re.sub(r"\s|device='cuda:0',", "", repr(ours.support).replace("minitorch.", "torch."))
    assert support == re.sub(r"\s", "", repr(theirs.support))
    assert list(ours.arg_constraints) == list(theirs.arg_constraints)
    with torch_float64_default(torch):
        assert_same_queries(name, ours, value, theirs, tvalue)
    assert repr(ours) == repr(theirs)


def test_float32_and_number_parameters():
    """Numbers give float32 parameters and the batch shape torch gives them."""
    torch, TD = torch_and_td()
    pairs = [(StudentT(3.0), TD.StudentT(3.0)), (FisherSnedecor(3.0, 5.0),
                                                 TD.FisherSnedecor(3.0, 5.0)),
             (VonMises(0.5, 2.0), TD.VonMises(0.5, 2.0)),
             (NegativeBinomial(3.0, logits=0.5), TD.NegativeBinomial(3.0, logits=0.5)),
             (ContinuousBernoulli(0.3), TD.ContinuousBernoulli(0.3)),
             (GeneralizedPareto(0.0, 1.0, 0.2), TD.GeneralizedPareto(0.0, 1.0, 0.2))]
    for ours, theirs in pairs:
        assert ours.batch_shape == theirs.batch_shape == ()
        value = 0.6 if not isinstance(ours, NegativeBinomial) else 2.0
        got, want = ours.log_prob(mt.tensor(value)), theirs.log_prob(torch.tensor(value))
        assert got.dtype == mt.float32
        np.testing.assert_allclose(to_numpy(got), want.numpy(), rtol=2e-6)
        np.testing.assert_allclose(to_numpy(ours.variance), theirs.variance.numpy(), rtol=2e-6)
        assert repr(ours) == repr(theirs)


def test_generalized_pareto_float64_cdf():
    """torch's GeneralizedPareto.cdf compares float64 parameters with a float32 zero and raises;
    ours works in float64 and agrees with torch's float32 values and the closed form."""
    torch, TD = torch_and_td()
    c = np.array([0.0, 0.3, -0.4])
    ours = GeneralizedPareto(mt.zeros(3, dtype=mt.float64), mt.ones(3, dtype=mt.float64),
                             mt.tensor(c))
    x = np.array([0.5, 1.5, 1.0])
    want = np.where(c == 0, 1 - np.exp(-x), 1 - (1 + c * x) ** (-1 / np.where(c == 0, 1, c)))
    np.testing.assert_allclose(to_numpy(ours.cdf(mt.tensor(x))), want, rtol=1e-12)
    theirs = TD.GeneralizedPareto(torch.zeros(3), torch.ones(3), torch.tensor(c).float())
    np.testing.assert_allclose(want, theirs.cdf(torch.tensor(x).float()).numpy(), rtol=1e-6)


def test_negative_binomial_zero_count():
    torch, TD = torch_and_td()
    n, v = [0.0, 0.0, 2.0], [0.0, 2.0, 0.0]
    got = NegativeBinomial(mt.tensor(n), probs=mt.tensor(0.4)).log_prob(mt.tensor(v))
    want = TD.NegativeBinomial(torch.tensor(n), probs=torch.tensor(0.4)).log_prob(torch.tensor(v))
    np.testing.assert_allclose(to_numpy(got), want.numpy(), rtol=1e-6)
    mt.manual_seed(0)
    assert to_numpy(NegativeBinomial(0.0, probs=0.5).sample((5,))).tolist() == [0.0] * 5


def test_low_rank_matrices_match_torch(device):
    torch, _ = torch_and_td()
    ours, _ = build(mt, "LowRankMVN", device)
    theirs, _ = build(torch, "LowRankMVN")
    for what in ("scale_tril", "covariance_matrix", "precision_matrix"):
        np.testing.assert_allclose(to_numpy(getattr(ours, what)),
                                   getattr(theirs, what).numpy(), rtol=1e-9, atol=1e-12)


def test_continuous_bernoulli_natural_parameters(device):
    torch, _ = torch_and_td()
    ours, _ = build(mt, "ContinuousBernoulli", device)
    theirs, _ = build(torch, "ContinuousBernoulli")
    x = [-1.0, -0.0005, 0.0, 0.3, 2.0]
    np.testing.assert_allclose(to_numpy(ours._log_normalizer(tensors(mt, [x], device)[0])),
                               theirs._log_normalizer(torch.tensor(x, dtype=torch.float64)),
                               rtol=1e-12)
    assert len(ours._natural_params) == 1


# concentration 0 switches formulas (torch's isclose test): no finite difference across it
GRAD_PARAMS = {"GeneralizedPareto": [[0.0, 1.0, -1.0, 0.5], [1.0, 2.0, 0.5, 1.5],
                                     [0.05, 0.3, -0.4, 1.2]]}


@pytest.mark.parametrize("name", CASES)
def test_log_prob_and_entropy_gradients(name, device):
    arrays = GRAD_PARAMS.get(name, CASES[name][1])
    params = [p.requires_grad_() for p in tensors(mt, arrays, device)]

    def scores(*params):
        dist, value = build(mt, name, device, list(params))
        entropy = query_distribution(dist, "entropy", None)
        total = dist.log_prob(value).sum()
        return total if isinstance(entropy, type) else total + entropy.sum()
    assert gradcheck(scores, tuple(params))


# rsample's pathwise gradient, with the draws fixed by the seed; StudentT's df and
# FisherSnedecor's dfs go through Gamma's implicit gradient (not a finite-difference limit)
RSAMPLE_CASES = {"StudentT": [1, 2], "StudentTScalar": [1, 2], "LowRankMVN": [0, 1, 2],
                 "ContinuousBernoulli": [0], "ContinuousBernoulliLogits": [0],
                 "GeneralizedPareto": [0, 1, 2]}


@pytest.mark.parametrize("name", RSAMPLE_CASES)
def test_rsample_is_reparameterised(name, device):
    arrays = tensors(mt, GRAD_PARAMS.get(name, CASES[name][1]), device)
    wrt = RSAMPLE_CASES[name]

    def draw(*free):
        params = list(arrays)
        for i, p in zip(wrt, free):
            params[i] = p
        mt.manual_seed(3)
        return build(mt, name, device, params)[0].rsample((2,))
    assert gradcheck(draw, tuple(arrays[i].clone().requires_grad_() for i in wrt))


def test_implicit_gradients_flow_through_gamma(device):
    """StudentT's and FisherSnedecor's rsample reach df through Gamma's implicit gradient:
    E[F] = df2 / (df2 - 2), so d E[F] / d df2 = -2 / (df2 - 2)^2 and d E[F] / d df1 = 0."""
    df1 = mt.tensor([4.0], dtype=mt.float64, device=device, requires_grad=True)
    df2 = mt.tensor([12.0], dtype=mt.float64, device=device, requires_grad=True)
    mt.manual_seed(1)
    FisherSnedecor(df1, df2).rsample((4000,)).mean().backward()
    np.testing.assert_allclose([df1.grad.item(), df2.grad.item()], [0.0, -0.02], atol=0.01)
    df = mt.tensor([5.0], dtype=mt.float64, device=device, requires_grad=True)
    StudentT(df).rsample((100,)).pow(2).mean().backward()
    assert np.isfinite(df.grad.item()) and df.grad.item() != 0


def test_straight_through_gradient_is_torchs():
    torch, TD = torch_and_td()
    probs = mt.tensor(P3, requires_grad=True)
    tprobs = torch.tensor(P3, requires_grad=True)
    torch.manual_seed(0)
    mt.manual_seed(0)
    ours = OneHotCategoricalStraightThrough(probs).rsample((6,))
    theirs = TD.OneHotCategoricalStraightThrough(tprobs).rsample((6,))
    np.testing.assert_array_equal(to_numpy(ours), theirs.detach().numpy())
    weights = np.arange(36.0).reshape(6, 2, 3)
    (ours * mt.tensor(weights, dtype=mt.float32)).sum().backward()
    (theirs * torch.tensor(weights, dtype=torch.float32)).sum().backward()
    np.testing.assert_allclose(to_numpy(probs.grad), tprobs.grad.numpy(), rtol=1e-6)


# sampled with torch's primitives in torch's order: the seeded draws are torch's
SAME_STREAM = ["VonMises", "Mixture", "MixtureEvent", "LowRankMVN", "ContinuousBernoulli",
               "ContinuousBernoulliLogits", "OneHotStraightThrough", "GeneralizedPareto"]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", SAME_STREAM)
def test_samples_are_torchs(name, dtype):
    torch, _ = torch_and_td()
    ours = build(mt, name, params=[p.to(getattr(mt, dtype))
                                   for p in tensors(mt, CASES[name][1])])[0]
    theirs = build(torch, name, params=[p.to(getattr(torch, dtype))
                                        for p in tensors(torch, CASES[name][1])])[0]
    for shape in ((), (5,), (3, 2)):
        torch.manual_seed(0)
        mt.manual_seed(0)
        got, want = ours.sample(shape), theirs.sample(shape)
        assert got.dtype == getattr(mt, str(want.dtype).split(".")[-1])
        rtol = 1e-6 if dtype == "float32" else 1e-12
        np.testing.assert_allclose(to_numpy(got), want.numpy(), rtol=rtol, atol=rtol)
        if theirs.has_rsample:
            torch.manual_seed(1)
            mt.manual_seed(1)
            np.testing.assert_allclose(to_numpy(ours.rsample(shape)),
                                       theirs.rsample(shape).detach().numpy(),
                                       rtol=rtol, atol=rtol)


def test_von_mises_small_concentration_and_rounds():
    """Concentrations down to 1e-8 (the Taylor proposal) sample without hanging, each call
    drawing whole rounds of three uniforms until every sample is accepted, as torch's does."""
    torch, TD = torch_and_td()
    k = [1e-8, 1e-4, 0.1, 50.0]
    torch.manual_seed(5)
    mt.manual_seed(5)
    got = VonMises(mt.zeros(4), mt.tensor(k)).sample((200,))
    want = TD.VonMises(torch.zeros(4), torch.tensor(k)).sample((200,))
    np.testing.assert_array_equal(to_numpy(got), want.numpy())
    # the streams stay aligned afterwards
    np.testing.assert_array_equal(to_numpy(mt.rand(3)), torch.rand(3).numpy())
    values = to_numpy(got)
    assert (np.abs(values) <= np.pi).all()
    assert abs(np.cos(values[:, 3]).mean() - 0.98994) < 0.01     # I1(50) / I0(50)


MOMENT_CASES = {
    "StudentT": lambda t: StudentT(t([5.0, 8.0]), t([0.0, 1.0]), t([1.0, 2.0])),
    "FisherSnedecor": lambda t: FisherSnedecor(t([5.0, 10.0]), t([12.0, 20.0])),
    "NegativeBinomial": lambda t: NegativeBinomial(t([2.5, 10.0]), probs=t([0.3, 0.6])),
    "Mixture": lambda t: MixtureSameFamily(D.Categorical(t(P3)),
                                           D.Normal(t([[0.0, 2.0, -1.0]] * 2),
                                                    t([1.0, 0.5, 2.0]))),
    "ContinuousBernoulli": lambda t: ContinuousBernoulli(t([0.1, 0.4995, 0.7, 0.99])),
    "GeneralizedPareto": lambda t: GeneralizedPareto(t(0.0), t(1.0), t([0.0, 0.1, -0.5])),
}


@pytest.mark.parametrize("name", MOMENT_CASES)
def test_sample_moments(name, device):
    dist = MOMENT_CASES[name](lambda x: mt.tensor(x, device=device))
    mt.manual_seed(0)
    samples = dist.sample((4000,))
    assert tuple(samples.shape) == (4000,) + tuple(dist.batch_shape) + tuple(dist.event_shape)
    assert not samples.requires_grad
    values = to_numpy(samples).astype(np.float64)
    mean, var = to_numpy(dist.mean), to_numpy(dist.variance)
    np.testing.assert_allclose(values.mean(0), mean, rtol=0.1, atol=0.06 * np.sqrt(var).max())
    np.testing.assert_allclose(values.var(0), var, rtol=0.25, atol=0.01)
    assert bool(dist.support.check(samples).all())


@pytest.mark.parametrize("name", CASES)
def test_expand(name, device):
    torch, _ = torch_and_td()
    ours, value = build(mt, name, device)
    theirs, tvalue = build(torch, name)
    shape = (4,) + tuple(ours.batch_shape)
    big, tbig = ours.expand(shape), theirs.expand(shape)
    assert big.batch_shape == tbig.batch_shape == shape
    assert big.event_shape == tbig.event_shape
    assert type(big) is type(ours)
    with torch_float64_default(torch):
        want = tbig.log_prob(tvalue).numpy()
    np.testing.assert_allclose(to_numpy(big.log_prob(value)), want, rtol=1e-9)
    np.testing.assert_allclose(to_numpy(big.variance), tbig.variance.numpy(), rtol=1e-9)
    assert tuple(big.sample((2,)).shape) == (2,) + shape + tuple(ours.event_shape)


def test_enumerate_support():
    torch, TD = torch_and_td()
    ours = OneHotCategoricalStraightThrough(mt.tensor(P3))
    theirs = TD.OneHotCategoricalStraightThrough(torch.tensor(P3))
    for expand in (True, False):
        np.testing.assert_array_equal(to_numpy(ours.enumerate_support(expand)),
                                      theirs.enumerate_support(expand).numpy())


def test_mixture_support_and_scalar_mixing():
    """A mixture over a batch of components with one set of weights for the whole batch, and
    MixtureSameFamilyConstraint checking values of a discrete component family."""
    torch, TD = torch_and_td()
    for lib, N in ((mt, OURS), (torch, TD)):
        mix = N.MixtureSameFamily(N.Categorical(lib.tensor([0.2, 0.5, 0.3])),
                                  N.Normal(lib.tensor([[0.0, 1.0, 2.0]] * 4),
                                           lib.tensor([1.0, 0.5, 2.0])))
        counts = N.MixtureSameFamily(N.Categorical(lib.tensor([0.5, 0.5])),
                                     N.NegativeBinomial(lib.tensor([2.0, 5.0]),
                                                        probs=lib.tensor([0.3, 0.6])))
        x = lib.tensor([[-1.0], [0.5], [3.0]])
        results = [mix.mean, mix.variance, mix.log_prob(x), mix.cdf(x),
                   counts.support.check(lib.tensor([0.0, 2.0, 1.5, -1.0])),
                   counts.log_prob(lib.tensor([0.0, 4.0]))]
        if lib is mt:
            ours = results
            assert repr(counts.support) == "MixtureSameFamilyConstraint(IntegerGreaterThan(" \
                                          "lower_bound=0))"
        else:
            for got, want in zip(ours, results):
                np.testing.assert_allclose(to_numpy(got), want.numpy(), rtol=1e-6)


# pairs whose KL torch registers (OneHotCategoricalStraightThrough's is OneHotCategorical's)
def kl_pair_builders(N, lib):
    def t(x):
        return lib.tensor(x, dtype=lib.float64)

    def cb(s):
        return N.ContinuousBernoulli(t([0.2 * s, 0.4995, 0.8]))

    def lowrank(s):
        return N.LowRankMultivariateNormal(t([[0.0, 1.0, -1.0], [0.5, 0.2, 0.3]]),
                                           t([[[0.3, 0.5], [0.4, -0.1], [-0.5, 0.3]]] * 2) * s,
                                           t([[1.0, 0.5, 2.0], [0.3, 1.2, 0.8]]) * s)

    def mvn(s):
        a = np.array([[1.0, 0.2, -0.3], [0.2, 1.5, 0.1], [-0.3, 0.1, 0.8]]) * s
        return N.MultivariateNormal(t([0.1, -0.2, 0.3]), t(a))
    return {
        "CB-CB": (cb(1.0), cb(1.5)),
        "Beta-CB": (N.Beta(t([0.8, 2.0, 5.0]), t([1.5, 3.0, 0.9])), cb(1.0)),
        "Uniform-CB": (N.Uniform(t([0.1, -0.5, 0.2]), t([0.9, 0.5, 1.0])), cb(1.0)),
        "CB-Exponential": (cb(1.0), N.Exponential(t([0.5, 2.0, 3.0]))),
        "CB-Normal": (cb(1.0), N.Normal(t([0.3, -1.0, 0.5]), t([0.5, 2.0, 1.0]))),
        "CB-Uniform": (cb(1.0), N.Uniform(t([-0.1, 0.0, -1.0]), t([1.0, 1.5, 2.0]))),
        "Exponential-CB": (N.Exponential(t([0.5, 2.0, 3.0])), cb(1.0)),
        "Gamma-CB": (N.Gamma(t([0.5, 2.0, 3.0]), t([1.0, 2.0, 3.0])), cb(1.0)),
        "Laplace-CB": (N.Laplace(t([0.5, 2.0, 3.0]), t([1.0, 2.0, 3.0])), cb(1.0)),
        "Normal-CB": (N.Normal(t([0.5, 2.0, 3.0]), t([1.0, 2.0, 3.0])), cb(1.0)),
        "LR-LR": (lowrank(1.0), lowrank(1.3)),
        "MVN-LR": (mvn(1.0), lowrank(1.2)),
        "LR-MVN": (lowrank(1.0), mvn(1.4)),
        "OneHotST": (N.OneHotCategoricalStraightThrough(t(P3)),
                     N.OneHotCategoricalStraightThrough(t(P3[::-1]))),
    }


@pytest.mark.parametrize("pair", list(kl_pair_builders(OURS, mt)))
def test_kl_divergence(pair):
    torch, TD = torch_and_td()
    got = D.kl_divergence(*kl_pair_builders(OURS, mt)[pair])
    want = TD.kl_divergence(*kl_pair_builders(TD, torch)[pair])
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(to_numpy(got), want.numpy(), rtol=1e-9, atol=1e-12)


def test_kl_gradient(device):
    def kl(loc, W, d):
        p = LowRankMultivariateNormal(loc, W, d)
        q = LowRankMultivariateNormal(*tensors(mt, [[0.2, 0.1, 0.0], [[0.5], [0.1], [0.3]],
                                                    [1.0, 2.0, 0.5]], device))
        return D.kl_divergence(p, q)
    params = tensors(mt, [[0.0, 1.0, -1.0], [[0.3, 0.5], [0.4, -0.1], [-0.5, 0.3]],
                          [1.0, 0.5, 2.0]], device)
    assert gradcheck(kl, tuple(p.requires_grad_() for p in params))


def both_raise(call):
    """call(namespace, tensor library) raises the same type and message in both."""
    torch, TD = torch_and_td()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(Exception) as theirs:
            call(TD, torch)
        with pytest.raises(Exception) as ours:
            call(OURS, mt)
    assert type(ours.value) is type(theirs.value)
    # a message naming a class names our module where torch's names torch.distributions
    assert str(ours.value).replace("minitorch.", "torch.") == str(theirs.value)


@pytest.mark.parametrize("call", [
    lambda N, t: N.StudentT(t.tensor([-1.0, 2.0])),
    lambda N, t: N.StudentT(2.0, 0.0, t.tensor(-1.0)),
    lambda N, t: N.StudentT(2.0).log_prob(0.5),
    lambda N, t: N.FisherSnedecor(1.0, t.tensor([-2.0])),
    lambda N, t: N.FisherSnedecor(1.0, 2.0).log_prob(t.tensor(-1.0)),
    lambda N, t: N.FisherSnedecor(1.0, 2.0).entropy(),
    lambda N, t: N.VonMises(0.0, -1.0),
    lambda N, t: N.VonMises(t.zeros(2), 1.0).rsample(),
    lambda N, t: N.VonMises(t.zeros(2), 1.0).entropy(),
    lambda N, t: N.VonMises(t.zeros(2), 1.0).cdf(t.zeros(2)),
    lambda N, t: N.VonMises(t.zeros(2), 1.0).log_prob(t.tensor(float("nan"))),
    lambda N, t: N.NegativeBinomial(t.tensor([-1.0]), probs=t.tensor(0.5)),
    lambda N, t: N.NegativeBinomial(3.0, probs=t.tensor([0.5, 1.0])),
    lambda N, t: N.NegativeBinomial(3.0),
    lambda N, t: N.NegativeBinomial(3.0, probs=t.tensor(0.5), logits=t.tensor(0.0)),
    lambda N, t: N.NegativeBinomial(3.0, logits=t.tensor(0.5)).log_prob(t.tensor(1.5)),
    lambda N, t: N.NegativeBinomial(3.0, logits=t.tensor(0.5)).rsample(),
    lambda N, t: N.MixtureSameFamily(N.Normal(0.0, 1.0), N.Normal(t.zeros(2), 1.0)),
    lambda N, t: N.MixtureSameFamily(N.Categorical(t.ones(2)), "normal"),
    lambda N, t: N.MixtureSameFamily(N.Categorical(t.ones(3, 2)), N.Normal(t.zeros(4, 2), 1.0)),
    lambda N, t: N.MixtureSameFamily(N.Categorical(t.ones(3)), N.Normal(t.zeros(2), 1.0)),
    lambda N, t: N.MixtureSameFamily(N.Categorical(t.ones(2)), N.Normal(t.zeros(3, 2), 1.0))
    .sample(),
    lambda N, t: N.MixtureSameFamily(N.Categorical(t.ones(2)), N.Normal(t.zeros(2), 1.0))
    .entropy(),
    lambda N, t: N.MixtureSameFamily(N.Categorical(t.ones(2)), N.Normal(t.zeros(2), 1.0))
    .rsample(),
    lambda N, t: N.MixtureSameFamily(N.Categorical(t.ones(2)), N.Normal(t.zeros(2), 1.0)).mode,
    lambda N, t: N.LowRankMultivariateNormal(t.tensor(0.0), t.ones(1, 1), t.ones(1)),
    lambda N, t: N.LowRankMultivariateNormal(t.zeros(2), t.ones(2), t.ones(2)),
    lambda N, t: N.LowRankMultivariateNormal(t.zeros(2), t.ones(3, 1), t.ones(2)),
    lambda N, t: N.LowRankMultivariateNormal(t.zeros(2), t.ones(2, 1), t.ones(3)),
    lambda N, t: N.LowRankMultivariateNormal(t.zeros(3, 2), t.ones(4, 2, 1), t.ones(2)),
    lambda N, t: N.LowRankMultivariateNormal(t.zeros(2), t.ones(2, 1), t.tensor([1.0, -1.0])),
    lambda N, t: N.LowRankMultivariateNormal(t.zeros(2), t.ones(2, 1), t.ones(2))
    .log_prob(t.zeros(3)),
    lambda N, t: N.ContinuousBernoulli(probs=t.tensor([1.5]), validate_args=False),
    lambda N, t: N.ContinuousBernoulli(probs=t.tensor([-0.5]), validate_args=True),
    lambda N, t: N.ContinuousBernoulli(),
    lambda N, t: N.ContinuousBernoulli(logits=t.tensor([0.5])).log_prob(t.tensor([1.5])),
    lambda N, t: N.ContinuousBernoulli(logits=t.tensor([0.5])).mode,
    lambda N, t: N.OneHotCategoricalStraightThrough(),
    lambda N, t: N.OneHotCategoricalStraightThrough(t.ones(3)).log_prob(t.ones(3)),
    lambda N, t: N.GeneralizedPareto(0.0, -1.0, 0.0),
    lambda N, t: N.GeneralizedPareto(0.0, 1.0, -0.5).log_prob(t.tensor(3.0)),
    lambda N, t: N.GeneralizedPareto(t.zeros(2), 1.0, 0.5).log_prob(t.tensor([-1.0, 1.0])),
    lambda N, t: N.kl_divergence(N.LowRankMultivariateNormal(t.zeros(2), t.ones(2, 1),
                                                             t.ones(2)),
                                 N.LowRankMultivariateNormal(t.zeros(3), t.ones(3, 1),
                                                             t.ones(3))),
    lambda N, t: N.kl_divergence(N.MultivariateNormal(t.zeros(3), t.eye(3)),
                                 N.LowRankMultivariateNormal(t.zeros(2), t.ones(2, 1),
                                                             t.ones(2))),
    lambda N, t: N.kl_divergence(N.StudentT(1.0), N.StudentT(2.0)),
])
def test_errors_match_torch(call):
    both_raise(call)
