"""minitorch.distributions' transforms, constraint registry and the distributions built on
transforms, against torch.distributions: transform values, inverses, log|det J| and shapes;
biject_to / transform_to; the new constraints; log_prob / cdf / icdf / entropy / moments of
HalfNormal, HalfCauchy, Gumbel, Weibull, Pareto, Kumaraswamy, LogisticNormal, InverseGamma, the
relaxed Bernoulli / categorical pair, Wishart and LKJCholesky; seeded samples equal to torch's;
gradients; expand; and torch's errors."""
import math
import warnings

import numpy as np
import pytest

import minitorch as mt
from minitorch.autograd import gradcheck
from minitorch.distributions import constraints as C
from minitorch.distributions import transforms as T
from minitorch.distributions.constraint_registry import biject_to, transform_to
from minitorch.distributions.continuous import Normal
from minitorch.distributions.gumbel import Gumbel
from minitorch.distributions.half_cauchy import HalfCauchy
from minitorch.distributions.half_normal import HalfNormal
from minitorch.distributions.inverse_gamma import InverseGamma
from minitorch.distributions.kumaraswamy import Kumaraswamy
from minitorch.distributions.lkj_cholesky import LKJCholesky
from minitorch.distributions.logistic_normal import LogisticNormal
from minitorch.distributions.pareto import Pareto
from minitorch.distributions.relaxed_bernoulli import LogitRelaxedBernoulli, RelaxedBernoulli
from minitorch.distributions.relaxed_categorical import (ExpRelaxedCategorical,
                                                         RelaxedOneHotCategorical)
from minitorch.distributions.transformed import TransformedDistribution
from minitorch.distributions.weibull import Weibull
from minitorch.distributions.wishart import Wishart
from torch_parity import query_distribution


def torch_or_skip():
    return pytest.importorskip("torch")


def to_numpy(t):
    return t.detach().cpu().numpy() if hasattr(t, "detach") else np.asarray(t)


def ours_and_torch(x, device="cpu", dtype="float64"):
    torch = torch_or_skip()
    x = np.asarray(x)
    return (mt.tensor(x, dtype=getattr(mt, dtype), device=device),
            torch.tensor(x, dtype=getattr(torch, dtype)))


class Lib:
    """What a case builder needs from one side: the transforms, constraints and distributions
    modules and a float64 tensor maker."""

    def __init__(self, lib, device="cpu"):
        self.lib, self.device = lib, device
        if lib is mt:
            self.T, self.C = T, C
            self.D = _OURS
        else:
            import torch.distributions as TD
            self.T, self.C, self.D = TD.transforms, TD.constraints, TD

    def t(self, x):
        return self.lib.tensor(np.asarray(x, dtype=np.float64), dtype=self.lib.float64,
                               device=self.device)


class _Ours:
    """Our distributions under torch's names (torch.distributions' namespace)."""
    Normal = Normal
    HalfNormal, HalfCauchy = HalfNormal, HalfCauchy
    Gumbel, Weibull, Pareto, InverseGamma = Gumbel, Weibull, Pareto, InverseGamma
    Kumaraswamy, LogisticNormal = Kumaraswamy, LogisticNormal
    RelaxedBernoulli, RelaxedOneHotCategorical = RelaxedBernoulli, RelaxedOneHotCategorical
    Wishart, LKJCholesky = Wishart, LKJCholesky
    TransformedDistribution = TransformedDistribution

    class relaxed_bernoulli:
        LogitRelaxedBernoulli = LogitRelaxedBernoulli

    class relaxed_categorical:
        ExpRelaxedCategorical = ExpRelaxedCategorical


_OURS = _Ours()


# ---- transforms ---------------------------------------------------------------------------

X23 = [[0.3, -1.2, 2.0], [0.5, 0.1, -0.7]]
POS23 = [[0.3, 1.2, 2.0], [0.5, 0.1, 0.7]]
SQUARE = [[[0.3, -1.2], [0.4, 0.6]], [[-0.5, 0.2], [1.1, -0.3]]]
# name: (builder(lib), input x, whether log_abs_det_jacobian exists)
TRANSFORMS = {
    "Exp": (lambda L: L.T.ExpTransform(), X23, True),
    "ExpInv": (lambda L: L.T.ExpTransform().inv, POS23, True),
    "AffineNumbers": (lambda L: L.T.AffineTransform(1.5, -2.0), X23, True),
    "AffineTensors": (lambda L: L.T.AffineTransform(L.t([0.5, 1.0, -1.0]), L.t([2.0, -0.5, 3.0]),
                                                    event_dim=1), X23, True),
    "Sigmoid": (lambda L: L.T.SigmoidTransform(), X23, True),
    "Power": (lambda L: L.T.PowerTransform(L.t([0.5, 2.0, -1.5])), POS23, True),
    "PowerNumber": (lambda L: L.T.PowerTransform(3.0), POS23, True),
    "Abs": (lambda L: L.T.AbsTransform(), X23, False),
    "Tanh": (lambda L: L.T.TanhTransform(), X23, True),
    "Softplus": (lambda L: L.T.SoftplusTransform(), X23, True),
    "Softmax": (lambda L: L.T.SoftmaxTransform(), X23, False),
    "StickBreaking": (lambda L: L.T.StickBreakingTransform(), X23, True),
    "Independent": (lambda L: L.T.IndependentTransform(L.T.SigmoidTransform(), 1), X23, True),
    "Reshape": (lambda L: L.T.ReshapeTransform((2, 3), (3, 2)), [X23, POS23], True),
    "LowerCholesky": (lambda L: L.T.LowerCholeskyTransform(), SQUARE, False),
    "PositiveDefinite": (lambda L: L.T.PositiveDefiniteTransform(), SQUARE, False),
    "CorrCholesky": (lambda L: L.T.CorrCholeskyTransform(), X23, True),
    "CDF": (lambda L: L.T.CumulativeDistributionTransform(L.D.Normal(L.t(0.5), L.t(2.0))),
            X23, True),
    "Compose": (lambda L: L.T.ComposeTransform([L.T.AffineTransform(0.5, 2.0),
                                                L.T.StickBreakingTransform(),
                                                L.T.PowerTransform(L.t(2.0))]), X23, True),
    "Identity": (lambda L: L.T.identity_transform, X23, True),
    "CatBatch": (lambda L: L.T.CatTransform([L.T.ExpTransform(), L.T.identity_transform,
                                             L.T.SoftplusTransform()], dim=-1,
                                            lengths=[1, 1, 1]), X23, True),
    "CatEvent": (lambda L: L.T.CatTransform([L.T.ExpTransform(),
                                             L.T.IndependentTransform(L.T.TanhTransform(), 1)],
                                            dim=0, lengths=[1, 1]), X23, True),
    "Stack": (lambda L: L.T.StackTransform([L.T.ExpTransform(), L.T.TanhTransform(),
                                            L.T.AffineTransform(1.0, 3.0)], dim=1), X23, True),
}


def both(name, device="cpu"):
    torch = torch_or_skip()
    builder, x, has_ladj = TRANSFORMS[name]
    ours, theirs = builder(Lib(mt, device)), builder(Lib(torch))
    return ours, theirs, ours_and_torch(x, device), has_ladj


def close(got, want, rtol=1e-9, atol=1e-12, what=""):
    assert tuple(got.shape) == tuple(want.shape), what
    np.testing.assert_allclose(to_numpy(got), to_numpy(want), rtol=rtol, atol=atol,
                               err_msg=what)


def same_outcome(call_ours, call_theirs):
    """Both return the same value, or both raise the same exception type."""
    try:
        want = call_theirs()
    except Exception as error:   # noqa: BLE001 - any error of torch's must be ours too
        with pytest.raises(type(error)):
            call_ours()
        return None
    return call_ours(), want


@pytest.mark.parametrize("name", TRANSFORMS)
def test_transform_matches_torch(name, device):
    ours, theirs, (x, tx), has_ladj = both(name, device)
    y, ty = ours(x), theirs(tx)
    close(y, ty, what="forward")
    close(ours.inv(y), theirs.inv(ty), rtol=1e-7, atol=1e-10, what="inverse")
    if has_ladj:
        close(ours.log_abs_det_jacobian(x, y), theirs.log_abs_det_jacobian(tx, ty),
              rtol=1e-8, atol=1e-10, what="log_abs_det_jacobian")
        close(ours.inv.log_abs_det_jacobian(y, x), theirs.inv.log_abs_det_jacobian(ty, tx),
              rtol=1e-8, atol=1e-10, what="inverse log_abs_det_jacobian")
    else:
        with pytest.raises(NotImplementedError):
            ours.log_abs_det_jacobian(x, y)
    assert tuple(ours.forward_shape(tuple(x.shape))) == tuple(theirs.forward_shape(tx.shape))
    assert tuple(ours.inverse_shape(tuple(y.shape))) == tuple(theirs.inverse_shape(ty.shape))
    assert ours.bijective == theirs.bijective
    assert repr(ours) == repr(theirs) and repr(ours.inv) == repr(theirs.inv)
    for side in ("domain", "codomain"):
        mine, want = getattr(ours, side), getattr(theirs, side)
        assert mine.event_dim == want.event_dim and type(mine).__name__ == type(want).__name__
        assert mine.is_discrete == want.is_discrete
    got_sign = same_outcome(lambda: ours.sign, lambda: theirs.sign)
    if got_sign is not None:
        np.testing.assert_array_equal(to_numpy(got_sign[0]), to_numpy(got_sign[1]))
    got_dim = same_outcome(lambda: ours.event_dim, lambda: theirs.event_dim)
    assert got_dim is None or got_dim[0] == got_dim[1]
    checks = same_outcome(lambda: ours.codomain.check(y), lambda: theirs.codomain.check(ty))
    if checks is not None:
        np.testing.assert_array_equal(to_numpy(checks[0]), checks[1].numpy())


def test_transforms_float32_and_clipping():
    """float32 clamps (sigmoid into [tiny, 1 - eps], CorrCholesky's tanh into ±(1 - eps))."""
    torch = torch_or_skip()
    x, tx = ours_and_torch([-200.0, -20.0, 0.0, 20.0, 200.0], dtype="float32")
    for name in ("Sigmoid", "Tanh", "Softplus", "StickBreaking", "CorrCholesky"):
        builder = TRANSFORMS[name][0]
        ours, theirs = builder(Lib(mt)), builder(Lib(torch))
        xs, txs = (x[:3], tx[:3]) if name == "CorrCholesky" else (x, tx)
        y, ty = ours(xs), theirs(txs)
        close(y, ty, rtol=1e-6, atol=1e-7, what=name)
        close(ours.log_abs_det_jacobian(xs, y), theirs.log_abs_det_jacobian(txs, ty),
              rtol=1e-5, atol=1e-5, what=name)


@pytest.mark.parametrize("name", ["Tanh", "StickBreaking", "CorrCholesky", "Power", "Softplus",
                                  "AffineTensors", "Compose", "CatEvent", "Stack", "CDF"])
def test_transform_gradients(name, device):
    builder, x, _ = TRANSFORMS[name]

    def forward(x):
        t = builder(Lib(mt, device))
        y = t(x)
        return y, t.log_abs_det_jacobian(x, y), t.inv(y)
    x = mt.tensor(np.asarray(x), dtype=mt.float64, device=device, requires_grad=True)
    assert gradcheck(forward, (x,))


def test_cache_and_equality():
    torch = torch_or_skip()
    # torch's module name, and the classes transformed.py always exported
    assert mt.distributions.transforms.TanhTransform is T.TanhTransform
    assert mt.distributions.ExpTransform is T.ExpTransform
    x = mt.tensor([0.5, 2.0], dtype=mt.float64)
    t = T.TanhTransform(cache_size=1)
    y = t(x)
    assert t.inv(y) is x and t(x) is y
    exp = T.ExpTransform().with_cache()
    assert exp.inv(exp(x)) is x and exp._cache_size == 1
    assert T.ExpTransform().inv.with_cache(1).inv._cache_size == 1
    with pytest.raises(ValueError, match="cache_size must be 0 or 1"):
        T.ExpTransform(cache_size=2)

    class Custom(T.Transform):
        def __init__(self, cache_size=0):
            super().__init__(cache_size=cache_size)
    with pytest.raises(NotImplementedError, match="Custom'>.with_cache is not implemented"):
        Custom().with_cache()
    compose = T.ComposeTransform([T.ExpTransform(), T.AffineTransform(1.0, 2.0)], cache_size=1)
    assert all(p._cache_size == 1 for p in compose.parts)
    assert compose.inv.inv is compose
    # equality: by parameters where torch compares them, else identity
    assert T.AffineTransform(1.0, 2.0) == T.AffineTransform(1.0, 2.0)
    assert T.AffineTransform(mt.tensor([1.0]), 2.0) != T.AffineTransform(mt.tensor([1.5]), 2.0)
    assert T.PowerTransform(2.0) == T.PowerTransform(mt.tensor(2.0))
    assert T.ExpTransform() == T.ExpTransform() and T.ExpTransform().inv == T.ExpTransform().inv
    assert T.ComposeTransform([T.ExpTransform()]) == T.ComposeTransform([T.ExpTransform()])
    custom = T.IndependentTransform(T.ExpTransform(), 1)
    assert custom == custom and custom != T.IndependentTransform(T.ExpTransform(), 1)
    assert T.identity_transform(x) is x
    assert repr(T.identity_transform) == repr(torch.distributions.transforms.identity_transform)
    with pytest.raises(ValueError, match="Please use either .domain.event_dim"):
        T.CorrCholeskyTransform().event_dim


# ---- constraints and the registry ---------------------------------------------------------

def test_new_constraints_match_torch():
    torch = torch_or_skip()
    TC = torch.distributions.constraints
    corr = [[[1.0, 0.0], [0.6, 0.8]], [[1.0, 0.0], [0.6, 0.7]], [[1.0, 0.1], [0.6, 0.8]]]
    psd = [[[1.0, 1.0], [1.0, 1.0]], [[1.0, 2.0], [2.0, 1.0]], [[2.0, 0.5], [0.5, 1.0]]]
    vec = [[0.5, -1.0, 2.0], [1.5, 0.0, -0.1]]
    pairs = [(C.corr_cholesky, TC.corr_cholesky, corr),
             (C.positive_semidefinite, TC.positive_semidefinite, psd),
             (C.positive_definite, TC.positive_definite, psd),
             (C.cat([C.positive, C.real], -1, [1, 2]),
              TC.cat([TC.positive, TC.real], -1, [1, 2]), vec),
             (C.cat([C.real_vector, C.positive], 0, [1, 1]),
              TC.cat([TC.real_vector, TC.positive], 0, [1, 1]), vec),
             (C.stack([C.positive, C.real, C.unit_interval], 1),
              TC.stack([TC.positive, TC.real, TC.unit_interval], 1), vec),
             (C.MixtureSameFamilyConstraint(C.positive),
              TC.MixtureSameFamilyConstraint(TC.positive), vec)]
    for ours, theirs, value in pairs:
        x, tx = ours_and_torch(value)
        checks = same_outcome(lambda: ours.check(x), lambda: theirs.check(tx))
        if checks is not None:
            np.testing.assert_array_equal(to_numpy(checks[0]), checks[1].numpy())
        assert ours.event_dim == theirs.event_dim and ours.is_discrete == theirs.is_discrete
    assert repr(C.MixtureSameFamilyConstraint(C.positive)) == \
        repr(TC.MixtureSameFamilyConstraint(TC.positive))
    assert repr(C.corr_cholesky) == repr(TC.corr_cholesky)
    with pytest.raises(AssertionError, match="base_constraint must be a Constraint, got int"):
        C.independent(3, 1)
    with pytest.raises(AssertionError, match="reinterpreted_batch_ndims must be >= 0, got -1"):
        C.independent(C.real, -1)
    with pytest.raises(AssertionError, match="lengths"):
        C.cat([C.real], 0, [1, 2])


def registry_constraints(L):
    C = L.C
    return [C.real, C.positive, C.nonnegative, C.greater_than(L.t(1.5)),
            C.greater_than_eq(-2.0), C.less_than(L.t([3.0, 4.0, 5.0])), C.unit_interval,
            C.interval(L.t(-1.0), L.t(3.0)), C.half_open_interval(0.0, 2.0), C.simplex,
            C.real_vector, C.independent(C.positive, 1), C.corr_cholesky, C.lower_cholesky,
            C.positive_definite, C.positive_semidefinite,
            C.cat([C.positive, C.real, C.unit_interval], -1, [1, 1, 1]),
            C.stack([C.positive, C.real, C.unit_interval], -1)]


@pytest.mark.parametrize("which", ["biject_to", "transform_to"])
def test_biject_to_and_transform_to_match_torch(which, device):
    torch = torch_or_skip()
    from torch.distributions import constraint_registry as TR
    ours_registry, theirs_registry = {"biject_to": (biject_to, TR.biject_to),
                                      "transform_to": (transform_to, TR.transform_to)}[which]
    ours_cs = registry_constraints(Lib(mt, device))
    theirs_cs = registry_constraints(Lib(torch))
    for ours_c, theirs_c in zip(ours_cs, theirs_cs):
        got = same_outcome(lambda: ours_registry(ours_c), lambda: theirs_registry(theirs_c))
        if got is None:
            continue
        ours, theirs = got
        assert repr(ours) == repr(theirs), repr(theirs_c)
        size = 3 if theirs.domain.event_dim < 2 or ours_c is C.corr_cholesky else None
        raw = np.linspace(-1.5, 1.3, 6).reshape(2, 3) if size else \
            np.array([[[0.3, -1.2], [0.4, 0.6]]] * 2)
        x, tx = ours_and_torch(raw, device)
        y, ty = ours(x), theirs(tx)
        close(y, ty, what=repr(theirs_c))
        assert bool(ours_c.check(y).all()) and bool(theirs_c.check(ty).all())
        if which == "biject_to":
            close(ours.log_abs_det_jacobian(x, y), theirs.log_abs_det_jacobian(tx, ty),
                  rtol=1e-8, atol=1e-10, what=repr(theirs_c))
            close(ours.inv(y), tx, rtol=1e-7, atol=1e-9, what=repr(theirs_c))


def test_registry_errors_and_registration():
    torch = torch_or_skip()
    from torch.distributions import constraint_registry as TR
    TC = torch.distributions.constraints
    for ours, theirs in ((lambda: biject_to(C.lower_cholesky),
                          lambda: TR.biject_to(TC.lower_cholesky)),
                         (lambda: transform_to(C.boolean), lambda: TR.transform_to(TC.boolean)),
                         (lambda: biject_to.register(3, lambda c: None),
                          lambda: TR.biject_to.register(3, lambda c: None))):
        with pytest.raises(Exception) as want:
            theirs()
        with pytest.raises(type(want.value), match="^" + repr(str(want.value))[1:-1]):
            ours()

    class _Custom(C.Constraint):
        pass

    registry = type(biject_to)()
    registry.register(_Custom, lambda c: T.ExpTransform())
    assert isinstance(registry(_Custom()), T.ExpTransform)

    @registry.register(C.positive)
    def _softplus(constraint):
        return T.SoftplusTransform()
    assert isinstance(registry(C.greater_than(3.0)), T.SoftplusTransform)


# ---- distributions ------------------------------------------------------------------------

COV = [[2.0, 0.3, 0.1], [0.3, 1.0, 0.2], [0.1, 0.2, 1.5]]
WISHART_VALUE = [[[1.0, 0.2, 0.0], [0.2, 2.0, 0.1], [0.0, 0.1, 1.0]],
                 [[3.0, -0.5, 0.4], [-0.5, 1.0, 0.0], [0.4, 0.0, 2.0]]]
CORR_L = [[[1.0, 0.0, 0.0], [0.6, 0.8, 0.0], [0.0, 0.6, 0.8]],
          [[1.0, 0.0, 0.0], [-0.28, 0.96, 0.0], [0.48, 0.6, 0.64]]]


def spd(L, a):
    """A positive-definite matrix from any square one, differentiably."""
    lower = a.tril(-1) + a.diagonal(dim1=-2, dim2=-1).exp().diag_embed()
    return lower @ lower.mT


# name: (builder(lib, *params), float params (gradchecked), value scored)
CASES = {
    "HalfNormal": (lambda L, s: L.D.HalfNormal(s), [[0.5, 2.0, 1.0]], [0.3, 1.5, 0.0]),
    "HalfNormalScalar": (lambda L: L.D.HalfNormal(1.5), [], [[0.3], [2.5]]),
    "HalfCauchy": (lambda L, s: L.D.HalfCauchy(s), [[[0.5], [2.0]]], [0.3, 1.5, 4.0]),
    "Gumbel": (lambda L, loc, s: L.D.Gumbel(loc, s), [[0.5, -2.0], [1.0, 3.0]], [0.3, 1.5]),
    "GumbelScalar": (lambda L: L.D.Gumbel(0.5, 2.0), [], [-1.0, 0.3, 4.0]),
    "Weibull": (lambda L, s, k: L.D.Weibull(s, k), [[0.5, 2.0, 1.0], [1.5, 0.7, 3.0]],
                [0.3, 1.5, 0.9]),
    "Pareto": (lambda L, s, a: L.D.Pareto(s, a), [[0.5, 1.0, 0.2], [1.5, 3.0, 0.8]],
               [0.6, 1.5, 2.0]),
    "Kumaraswamy": (lambda L, a, b: L.D.Kumaraswamy(a, b), [[0.5, 2.0, 3.0], [1.5, 3.0, 0.7]],
                    [0.3, 0.8, 0.5]),
    "InverseGamma": (lambda L, c, r: L.D.InverseGamma(c, r),
                     [[0.5, 2.0, 3.5], [1.5, 3.0, 1.0]], [0.3, 0.8, 2.0]),
    "LogisticNormal": (lambda L, loc, s: L.D.LogisticNormal(loc, s),
                       [[[0.5, 2.0], [-1.0, 0.0]], [1.5, 3.0]], [[0.3, 0.5, 0.2]]),
    "LogisticNormalScalar": (lambda L: L.D.LogisticNormal(0.5, 2.0), [], [0.3, 0.7]),
    "RelaxedBernoulli": (lambda L, temp, p: L.D.RelaxedBernoulli(temp, probs=p),
                         [0.7, [0.2, 0.9, 0.5]], [0.3, 0.8, 0.99]),
    "RelaxedBernoulliLogits": (lambda L, temp, lg: L.D.RelaxedBernoulli(temp, logits=lg),
                               [[1.5, 0.4], [[0.2], [-1.3]]], [0.3, 0.8]),
    "LogitRelaxedBernoulli": (lambda L, temp, lg:
                              L.D.relaxed_bernoulli.LogitRelaxedBernoulli(temp, logits=lg),
                              [0.7, [0.2, -0.9]], [0.3, -2.0]),
    "RelaxedOneHotCategorical": (lambda L, temp, p: L.D.RelaxedOneHotCategorical(temp, probs=p),
                                 [0.7, [[0.2, 0.5, 0.3], [0.6, 0.1, 0.3]]],
                                 [0.3, 0.5, 0.2]),
    "ExpRelaxedCategorical": (lambda L, temp, lg:
                              L.D.relaxed_categorical.ExpRelaxedCategorical(temp, logits=lg),
                              [0.7, [0.2, 0.5, -0.3]], np.log([[0.3, 0.5, 0.2], [0.1, 0.1, 0.8]])),
    "WishartCovariance": (lambda L, df, a: L.D.Wishart(df, covariance_matrix=spd(L, a)),
                          [[4.0, 3.5], np.linalg.cholesky(COV) * 0.7], WISHART_VALUE),
    "WishartPrecision": (lambda L, a: L.D.Wishart(5.0, precision_matrix=spd(L, a)),
                         [np.linalg.cholesky(COV) * 0.5], WISHART_VALUE),
    "WishartScaleTril": (lambda L, df, s: L.D.Wishart(df, scale_tril=s.tril()),
                         [[2.5, 6.0], [np.linalg.cholesky(COV)] * 2], WISHART_VALUE),
    "LKJCholesky": (lambda L, c: L.D.LKJCholesky(3, c), [[0.5, 2.0]], CORR_L),
    "LKJCholeskyScalar": (lambda L: L.D.LKJCholesky(2), [], [[1.0, 0.0], [0.6, 0.8]]),
}
QUERIES = ["mean", "mode", "variance", "stddev", "entropy", "log_prob", "cdf", "icdf"]


def build(lib, name, device="cpu", params=None):
    builder, arrays, value = CASES[name]
    L = Lib(lib, device)
    params = [L.t(a) for a in arrays] if params is None else params
    if not arrays:      # number parameters: the distribution lives on the CPU
        L = Lib(lib)
    return builder(L, *params), L.t(value)


@pytest.mark.parametrize("name", CASES)
def test_distribution_matches_torch(name, device):
    torch = torch_or_skip()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # Wishart's low-df warning, in both
        ours, value = build(mt, name, device)
        theirs, tvalue = build(torch, name)
    assert ours.batch_shape == theirs.batch_shape and ours.event_shape == theirs.event_shape
    assert ours.has_rsample == theirs.has_rsample
    assert repr(ours) == repr(theirs)
    # (a tensor bound prints its dtype as minitorch.float64)
    mine = repr(ours.support).replace("minitorch.", "torch.").replace(", device='cuda:0'", "")
    assert mine == repr(theirs.support)
    for what in QUERIES:
        want, got = query_distribution(theirs, what, tvalue), query_distribution(ours, what, value)
        if isinstance(want, type):
            assert got is want, (what, got)
            continue
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1], what
        close(got, want, rtol=1e-9, atol=1e-12, what=f"{name}.{what}")


def test_float32_and_boundaries():
    torch = torch_or_skip()
    TD = torch.distributions
    x, tx = ours_and_torch([-1.0, 0.0, 0.5, 3.0], dtype="float32")
    for ours, theirs in ((HalfNormal(mt.tensor(1.5)), TD.HalfNormal(torch.tensor(1.5))),
                         (HalfCauchy(mt.tensor(0.5)), TD.HalfCauchy(torch.tensor(0.5))),
                         (Gumbel(mt.tensor(0.5), mt.tensor(2.0)),
                          TD.Gumbel(torch.tensor(0.5), torch.tensor(2.0)))):
        ours._validate_args = theirs._validate_args = False
        for what in ("log_prob", "cdf"):
            close(getattr(ours, what)(x), getattr(theirs, what)(tx), rtol=1e-6, atol=1e-7)
    u, tu = ours_and_torch([0.0, 0.1, 0.9, 1.0], dtype="float32")
    ours, theirs = Gumbel(0.5, 2.0), TD.Gumbel(0.5, 2.0)
    close(ours.icdf(u), theirs.icdf(tu), rtol=1e-6)
    close(ours.cdf(x), theirs.cdf(tx), rtol=1e-6, atol=1e-7)


# seeded draws equal torch's
SAMPLE_CASES = ["HalfNormal", "HalfNormalScalar", "HalfCauchy", "Gumbel", "GumbelScalar",
                "Weibull", "Pareto", "Kumaraswamy", "LogisticNormal", "LogisticNormalScalar",
                "RelaxedBernoulli", "RelaxedBernoulliLogits", "LogitRelaxedBernoulli",
                "RelaxedOneHotCategorical", "ExpRelaxedCategorical"]


@pytest.mark.parametrize("name", SAMPLE_CASES)
def test_seeded_samples_are_torchs(name):
    torch = torch_or_skip()
    ours, _ = build(mt, name)
    theirs, _ = build(torch, name)
    # float64 draws agree to rounding; float32 ones (scalar parameters) to the last place
    tol = dict(rtol=1e-12, atol=1e-14) if ours.sample().dtype == mt.float64 else \
        dict(rtol=1e-6, atol=1e-7)
    for shape in ((), (4, 2)):
        torch.manual_seed(5)
        mt.manual_seed(5)
        close(ours.rsample(shape), theirs.rsample(shape), **tol)
        close(ours.sample(shape), theirs.sample(shape), **tol)
    # float32 too (elementwise kernels may round differently in the last place)
    torch.manual_seed(1)
    mt.manual_seed(1)
    close(Gumbel(0.0, 1.0).sample((50,)), torch.distributions.Gumbel(0.0, 1.0).sample((50,)),
          rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", ["InverseGamma", "WishartCovariance", "WishartPrecision",
                                  "WishartScaleTril", "LKJCholesky", "LKJCholeskyScalar"])
def test_gamma_based_seeded_samples_are_torchs(name):
    """Draws through Gamma / Chi2 / Beta: equal since the gamma sampler runs torch's
    algorithm on its stream (Wishart's with torch's redraw loop, see below)."""
    torch = torch_or_skip()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours, _ = build(mt, name)
        theirs, _ = build(torch, name)
        for shape in ((), (3,)):
            torch.manual_seed(7)
            mt.manual_seed(7)
            close(ours.sample(shape), theirs.sample(shape), rtol=1e-9, atol=1e-12)


GRAD_CASES = [name for name in CASES if CASES[name][1]]


@pytest.mark.parametrize("name", GRAD_CASES)
def test_log_prob_and_entropy_gradients(name, device):
    _, arrays, _ = CASES[name]
    params = [mt.tensor(np.asarray(a, dtype=np.float64), dtype=mt.float64, device=device,
                        requires_grad=True) for a in arrays]

    def scores(*params):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            dist, value = build(mt, name, device, list(params))
        entropy = query_distribution(dist, "entropy", None)
        total = dist.log_prob(value).sum()
        return total if isinstance(entropy, type) else total + entropy.sum()
    assert gradcheck(scores, tuple(params))


RSAMPLE_GRAD_CASES = ["HalfNormal", "HalfCauchy", "Gumbel", "Weibull", "Pareto", "Kumaraswamy",
                      "LogisticNormal", "RelaxedBernoulli", "RelaxedBernoulliLogits",
                      "RelaxedOneHotCategorical", "ExpRelaxedCategorical"]


@pytest.mark.parametrize("name", RSAMPLE_GRAD_CASES)
def test_rsample_is_reparameterised(name, device):
    """With the draws fixed (same seed), rsample is a smooth function of the parameters."""
    params = [mt.tensor(np.asarray(a, dtype=np.float64), dtype=mt.float64, device=device,
                        requires_grad=True) for a in CASES[name][1]]

    def draw(*params):
        mt.manual_seed(3)
        return build(mt, name, device, list(params))[0].rsample((2,))
    assert gradcheck(draw, tuple(params))


@pytest.mark.parametrize("name", ["InverseGamma", "WishartCovariance", "LKJCholesky",
                                  "HalfNormal", "Pareto", "RelaxedOneHotCategorical"])
def test_sample_shapes_moments_and_support(name, device):
    n = 300 if name.startswith("Wishart") else 1000     # (slow linear algebra on emulators)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dist, _ = build(mt, name, device)
        mt.manual_seed(0)
        samples = dist.sample((n,))
    assert tuple(samples.shape) == (n,) + tuple(dist.batch_shape) + tuple(dist.event_shape)
    assert not samples.requires_grad
    assert bool(dist.support.check(samples).all())
    if name == "LKJCholesky":   # correlation matrices: E[L L^T] is the identity
        corr = to_numpy(samples @ samples.mT).mean(0)
        np.testing.assert_allclose(corr, np.broadcast_to(np.eye(3), corr.shape), atol=0.1)
        return
    if name == "RelaxedOneHotCategorical":   # no closed-form moments (as torch)
        return
    # the sample mean within 5 standard errors, where the variance is finite
    values = to_numpy(samples)
    mean, var = to_numpy(dist.mean), to_numpy(dist.variance)
    finite = np.isfinite(var)
    error = np.abs(values.mean(0) - mean)[finite]
    assert (error <= 5 * np.sqrt(var[finite] / n)).all()


@pytest.mark.parametrize("name", ["HalfNormal", "HalfCauchy", "Gumbel", "Weibull", "Pareto",
                                  "Kumaraswamy", "InverseGamma", "LogisticNormal",
                                  "RelaxedBernoulli", "LogitRelaxedBernoulli",
                                  "RelaxedOneHotCategorical", "ExpRelaxedCategorical",
                                  "WishartScaleTril", "WishartCovariance", "LKJCholesky"])
def test_expand(name, device):
    torch = torch_or_skip()
    ours, value = build(mt, name, device)
    theirs, tvalue = build(torch, name)
    shape = (2,) + tuple(ours.batch_shape)
    big, tbig = ours.expand(shape), theirs.expand(shape)
    assert big.batch_shape == tbig.batch_shape == shape
    assert big.event_shape == tbig.event_shape and type(big) is type(ours)
    close(big.log_prob(value), tbig.log_prob(tvalue), rtol=1e-9)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert tuple(big.sample((2,)).shape) == (2,) + shape + tuple(ours.event_shape)


def test_transformed_distribution_event_dims(device):
    """Transforms that couple dimensions (StickBreaking, CorrCholesky, Reshape) move the
    event shape, as in torch's TransformedDistribution."""
    torch = torch_or_skip()

    def make(L):
        base = L.D.Normal(L.t(np.zeros((2, 3))), L.t(np.ones((2, 3))))
        return [L.D.TransformedDistribution(base, [L.T.StickBreakingTransform()]),
                L.D.TransformedDistribution(base, [L.T.CorrCholeskyTransform()]),
                L.D.TransformedDistribution(base, [L.T.ReshapeTransform((2, 3), (6,))]),
                L.D.TransformedDistribution(base, [L.T.IndependentTransform(
                    L.T.ExpTransform(), 1), L.T.AffineTransform(L.t([1.0, 2.0, 3.0]), 2.0)])]
    for ours, theirs in zip(make(Lib(mt, device)), make(Lib(torch))):
        assert ours.batch_shape == theirs.batch_shape
        assert ours.event_shape == theirs.event_shape
        torch.manual_seed(2)
        mt.manual_seed(2)
        sample, tsample = ours.sample((2,)), theirs.sample((2,))
        close(sample, tsample, rtol=1e-12, atol=1e-14)
        close(ours.log_prob(sample), theirs.log_prob(tsample), rtol=1e-8, atol=1e-10)
        assert repr(ours.support) == repr(theirs.support)
    with pytest.raises(ValueError, match="base_distribution needs to have shape with size at "
                                         "least 1, but got torch.Size"):
        TransformedDistribution(Normal(0.0, 1.0), [T.StickBreakingTransform()])


def test_cumulative_distribution_transform_copula():
    torch = torch_or_skip()
    TD = torch.distributions
    ours = TransformedDistribution(Normal(mt.zeros(2, dtype=mt.float64), 1.0),
                                   [T.CumulativeDistributionTransform(Normal(0.0, 1.0))])
    theirs = TD.TransformedDistribution(TD.Normal(torch.zeros(2, dtype=torch.float64), 1.0),
                                        [TD.CumulativeDistributionTransform(TD.Normal(0., 1.))])
    u, tu = ours_and_torch([0.2, 0.7])
    close(ours.log_prob(u), theirs.log_prob(tu), rtol=1e-12, atol=1e-12)
    assert repr(ours.support) == repr(theirs.support)


def both_raise(call):
    """call(distributions-like namespace, tensor library) raises the same type and message
    in torch and here."""
    torch = torch_or_skip()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(Exception) as theirs:
            call(Lib(torch), torch)
        with pytest.raises(Exception) as ours:
            call(Lib(mt), mt)
    assert type(ours.value) is type(theirs.value)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("call", [
    lambda L, t: L.D.HalfNormal(-1.0),
    lambda L, t: L.D.HalfCauchy(t.tensor([1.0, 0.0])),
    lambda L, t: L.D.HalfNormal(1.0).log_prob(t.tensor([-1.0])),
    lambda L, t: L.D.Gumbel(0.0, t.tensor([1.0, -1.0])),
    lambda L, t: L.D.Weibull(t.tensor([1.0]), t.tensor([-2.0])),
    lambda L, t: L.D.Weibull(1.0, 2.0).log_prob(t.tensor(0.0)),
    lambda L, t: L.D.Pareto(t.tensor([1.0]), t.tensor([0.0])),
    lambda L, t: L.D.Pareto(t.tensor(2.0), t.tensor(1.0)).log_prob(t.tensor([1.0])),
    lambda L, t: L.D.Kumaraswamy(t.tensor(1.0), t.tensor(-1.0)),
    lambda L, t: L.D.Kumaraswamy(1.0, 2.0).log_prob(t.tensor(1.5)),
    lambda L, t: L.D.InverseGamma(t.tensor(-1.0), t.tensor(1.0)),
    lambda L, t: L.D.LogisticNormal(t.zeros(2), t.tensor([1.0, -1.0])),
    lambda L, t: L.D.LogisticNormal(t.zeros(2), 1.0).log_prob(t.tensor([0.5, 0.5, 0.5])),
    lambda L, t: L.D.RelaxedBernoulli(t.tensor(0.5)),
    lambda L, t: L.D.RelaxedBernoulli(t.tensor(0.5), probs=0.5, logits=0.0),
    lambda L, t: L.D.RelaxedBernoulli(t.tensor(0.5), probs=t.tensor([1.5])),
    lambda L, t: L.D.RelaxedOneHotCategorical(t.tensor(0.5), probs=t.tensor(0.5)),
    lambda L, t: L.D.RelaxedOneHotCategorical(t.tensor(0.5), t.tensor([0.5, -0.25, 0.75])),
    lambda L, t: L.D.Wishart(3.0),
    lambda L, t: L.D.Wishart(3.0, t.eye(2), scale_tril=t.eye(2)),
    lambda L, t: L.D.Wishart(3.0, t.ones(2)),
    lambda L, t: L.D.Wishart(0.5, t.eye(2)),
    lambda L, t: L.D.Wishart(t.tensor([3.0, 1.0]), t.eye(2)),
    lambda L, t: L.D.Wishart(3.0, t.tensor([[1.0, 2.0], [2.0, 1.0]])),
    lambda L, t: L.D.Wishart(3.0, t.eye(2)).log_prob(t.ones(2, 2)),
    lambda L, t: L.D.LKJCholesky(1),
    lambda L, t: L.D.LKJCholesky(3, t.tensor([1.0, -1.0])),
    lambda L, t: L.D.LKJCholesky(2).log_prob(t.tensor([[1.0, 0.0], [0.5, 0.5]])),
    lambda L, t: L.D.LKJCholesky(2).rsample(),
    lambda L, t: L.D.LKJCholesky(2).mean,
    lambda L, t: L.T.ReshapeTransform((2, 3), (5,)),
    lambda L, t: L.T.ReshapeTransform((2, 3), (6,)).forward_shape((3, 2)),
    lambda L, t: L.T.ReshapeTransform((2, 3), (6,)).inverse_shape(()),
    lambda L, t: L.T.CorrCholeskyTransform().forward_shape((4,)),
    lambda L, t: L.T.CorrCholeskyTransform().inverse_shape((3, 4)),
    lambda L, t: L.T.StickBreakingTransform().forward_shape(()),
    lambda L, t: L.T.IndependentTransform(L.T.ExpTransform(), 2)(t.zeros(3)),
    lambda L, t: L.T.CatTransform([L.T.ExpTransform()], dim=0, lengths=[2])(t.zeros(3)),
    lambda L, t: L.T.CatTransform([L.T.ExpTransform()], dim=2)(t.zeros(3)),
    lambda L, t: L.T.StackTransform([L.T.ExpTransform()], dim=0)(t.zeros(3)),
    lambda L, t: L.T.CatTransform([L.T.ExpTransform()], lengths=[1, 2]),
    lambda L, t: L.T.AbsTransform().sign,
    lambda L, t: L.T.AbsTransform().log_abs_det_jacobian(t.zeros(1), t.zeros(1)),
    lambda L, t: L.D.TransformedDistribution(L.D.Normal(0.0, 1.0), [L.T.ExpTransform, 1]),
])
def test_errors_match_torch(call):
    both_raise(call)


def test_wishart_sampling_follows_torchs_loop():
    """torch's Wishart.rsample warns "Singular sample detected." and redraws every valid
    sample once; ours makes the same draws (shapes and warning checked here; values are
    gamma-based)."""
    torch = torch_or_skip()
    ours, _ = build(mt, "WishartScaleTril")
    with pytest.warns(UserWarning, match="Singular sample detected"):
        sample = ours.rsample((3,))
    assert tuple(sample.shape) == (3, 2, 3, 3)
    with pytest.warns(UserWarning, match="Low df values detected"):
        Wishart(mt.tensor(1.5), mt.eye(2))
    with pytest.warns(UserWarning, match="Low df values detected"):
        torch.distributions.Wishart(torch.tensor(1.5), torch.eye(2))
    scale = mt.tensor(np.linalg.cholesky(COV), dtype=mt.float64, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        Wishart(mt.tensor(5.0, dtype=mt.float64), scale_tril=scale).rsample().sum().backward()
    assert scale.grad is not None and np.isfinite(to_numpy(scale.grad)).all()
    assert math.isfinite(float(Wishart(5.0, mt.eye(3)).entropy()))


# ---- KL divergences (kl_transformed registers torch's pairs) ------------------------------

def two_point(L):
    """Two-point batches of every family the KL table pairs with, built in one library (the
    families other than ours from the library's own distributions package)."""
    get = L.lib.distributions.__dict__.__getitem__
    t = L.t
    return {"Gumbel": L.D.Gumbel(t([0.3, -1.0]), t([0.5, 2.0])),
            "HalfNormal": L.D.HalfNormal(t([0.5, 2.0])),
            "Pareto": L.D.Pareto(t([0.5, 1.5]), t([2.5, 0.8])),
            "Normal": get("Normal")(t([0.3, -1.0]), t([0.5, 2.0])),
            "Laplace": get("Laplace")(t([0.0, 1.0]), t([1.5, 0.7])),
            "Exponential": get("Exponential")(t([0.5, 2.0])),
            "Gamma": get("Gamma")(t([0.7, 2.5]), t([1.5, 0.5])),
            "Uniform": get("Uniform")(t([0.6, 1.0]), t([0.7, 3.0])),
            "Beta": get("Beta")(t([0.8, 2.0]), t([1.5, 3.0])),
            "ContinuousBernoulli": get("ContinuousBernoulli")(t([0.3, 0.8]))}


KL_PAIRS = [("Gumbel", "Gumbel"), ("HalfNormal", "HalfNormal"), ("Pareto", "Pareto"),
            ("Exponential", "Gumbel"), ("Gamma", "Gumbel"), ("Gumbel", "Normal"),
            ("Normal", "Gumbel"), ("Uniform", "Gumbel"), ("Pareto", "Exponential"),
            ("Pareto", "Gamma"), ("Pareto", "Normal"), ("Uniform", "Pareto")] + \
    [("Gumbel", q) for q in ("Beta", "ContinuousBernoulli", "Exponential", "Gamma", "Pareto",
                             "Uniform")] + \
    [("Pareto", q) for q in ("Beta", "ContinuousBernoulli", "Uniform")] + \
    [(p, "Pareto") for p in ("Beta", "ContinuousBernoulli", "Exponential", "Gamma", "Laplace",
                             "Normal")]


def test_kl_divergences_match_torch():
    torch = torch_or_skip()
    from minitorch.distributions import kl_transformed  # noqa: F401  (registers the pairs)
    from minitorch.distributions.kl import kl_divergence
    ours, theirs = two_point(Lib(mt)), two_point(Lib(torch))
    for p, q in KL_PAIRS:
        got = kl_divergence(ours[p], ours[q])
        want = torch.distributions.kl_divergence(theirs[p], theirs[q])
        close(got, want, rtol=1e-9, atol=1e-12, what=f"KL({p} || {q})")
    # the pairs with a finite value, and infinite entries where q misses p's support
    swapped = {"Pareto": Pareto(mt.tensor([1.0, 0.5], dtype=mt.float64),
                                mt.tensor([2.0, 3.0], dtype=mt.float64))}
    assert to_numpy(kl_divergence(ours["Pareto"], swapped["Pareto"])).tolist()[0] == math.inf

    def kl(scale):
        return kl_divergence(Gumbel(scale, scale * 2), ours["Normal"]) + \
            kl_divergence(ours["Exponential"], Gumbel(scale, scale))
    scale = mt.tensor([0.7, 1.3], dtype=mt.float64, requires_grad=True)
    assert gradcheck(kl, (scale,))
