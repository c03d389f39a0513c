"""nn.utils parametrizations and friends against torch: parametrize (register / remove /
cached / stacked and multi-tensor parametrizations, state_dict keys), parametrizations.
weight_norm / spectral_norm / orthogonal, the legacy weight_norm / spectral_norm hooks (a few
SGD steps compared with torch to 1e-10 in float64), conv/linear + batch-norm fusion, skip_init
and stateless.functional_call."""
import copy
import pickle
import warnings

import numpy as np
import pytest

import minitorch as mt
import minitorch.nn as nn
from minitorch.autograd import gradcheck
from minitorch.nn.utils import parametrizations, parametrize, stateless
from torch_parity import same_error, seq, value


def _to_mt(t, device):
    return mt.tensor(t.detach().numpy(), device=device)


def _pair(make, device, seed=0):
    """The same float64 layer in torch (seeded) and minitorch (torch's values copied in)."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(seed)
    theirs = make(torch).double()
    ours = make(mt).double().to(device)
    ours.load_state_dict({k: _to_mt(v, device) for k, v in theirs.state_dict().items()})
    return ours, theirs


def _copy_state(ours, theirs, device):
    """After parametrizing both: torch's originals and buffers (u, v, base) into ours."""
    state = {k: _to_mt(v, device) for k, v in theirs.state_dict().items()}
    ours.load_state_dict(state)


def _close(ours, theirs, tol=1e-10):
    np.testing.assert_allclose(value(ours), theirs.detach().numpy(), rtol=tol, atol=tol)


def _train_and_compare(ours, theirs, device, steps=3, train=True):
    """A few SGD steps on the same batch: equal outputs and parameters after every step."""
    torch = pytest.importorskip("torch")
    ours.train(train)
    theirs.train(train)
    x = seq(5, *_input_shape(theirs), seed=3)
    our_opt = mt.optim.SGD(ours.parameters(), lr=0.1)
    their_opt = torch.optim.SGD(theirs.parameters(), lr=0.1)
    for _ in range(steps):
        out, expected = ours(mt.tensor(x, device=device)), theirs(torch.tensor(x))
        _close(out, expected)
        for opt, y in ((our_opt, out), (their_opt, expected)):
            opt.zero_grad()
            (y * y).sum().backward()
            opt.step()
    their_state = theirs.state_dict()
    assert list(ours.state_dict()) == list(their_state)
    for key, tensor in ours.state_dict().items():
        _close(tensor, their_state[key])


def _input_shape(module):
    return (module.in_features,) if hasattr(module, "in_features") else (2, 6, 6)


def _linear(lib):
    return lib.nn.Linear(4, 3)


class Symmetric(nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).mT

    def right_inverse(self, A):
        return A.triu()


class Scale(nn.Module):
    def forward(self, X):
        return 2.0 * X

    def right_inverse(self, A):
        return A / 2.0


class RankOne(nn.Module):
    """Two tensors parametrize one matrix: original0 and original1."""

    def forward(self, x, y):
        return x.unsqueeze(-1) @ y.unsqueeze(-2)

    def right_inverse(self, Z):
        return Z[:, 0].clone(), Z[0, :].clone()


# ---- parametrize ---------------------------------------------------------------------------------
def test_register_parametrization_reads_writes_and_state_dict(device):
    m = nn.Linear(3, 3, dtype=mt.float64).to(device)
    weight = m.weight
    parametrize.register_parametrization(m, "weight", Symmetric())
    assert type(m).__name__ == "ParametrizedLinear"
    assert parametrize.type_before_parametrizations(m) is nn.Linear
    assert parametrize.is_parametrized(m) and parametrize.is_parametrized(m, "weight")
    assert not parametrize.is_parametrized(m, "bias")
    assert m.parametrizations.weight.original is weight        # same Parameter object kept
    np.testing.assert_allclose(value(m.weight), value(m.weight).T)
    assert list(m.state_dict()) == ["bias", "parametrizations.weight.original"]
    assert [n for n, _ in m.named_parameters()] == ["bias", "parametrizations.weight.original"]
    a = seq(3, 3)
    m.weight = mt.tensor(a + a.T, device=device)                # assignment runs right_inverse
    np.testing.assert_allclose(value(m.weight), a + a.T, rtol=1e-12)
    np.testing.assert_allclose(value(m.parametrizations.weight.original), np.triu(a + a.T))


def test_stacked_parametrizations_and_gradients(device):
    m = nn.Linear(3, 3, dtype=mt.float64).to(device)
    w0 = value(m.weight)
    parametrize.register_parametrization(m, "weight", Symmetric())
    parametrize.register_parametrization(m, "weight", Scale())
    assert len(m.parametrizations.weight) == 2
    np.testing.assert_allclose(value(m.weight), 2 * (np.triu(w0) + np.triu(w0, 1).T))
    m.weight.sum().backward()
    expected = 2 * (np.triu(np.ones((3, 3))) + np.triu(np.ones((3, 3)), 1))   # lower: unused
    np.testing.assert_allclose(value(m.parametrizations.weight.original.grad), expected)

    def through(original):
        return Scale()(Symmetric()(original))
    assert gradcheck(through, (mt.tensor(seq(3, 3), device=device, requires_grad=True),))
    assert gradcheck(through, (mt.tensor(seq(3, 6), device=device, requires_grad=True)[:, ::2],))


def test_multi_tensor_parametrization_and_removal(device):
    m = nn.Linear(3, 3, dtype=mt.float64).to(device)
    parametrize.register_parametrization(m, "weight", RankOne())
    keys = list(m.state_dict())
    assert keys == ["bias", "parametrizations.weight.original0",
                    "parametrizations.weight.original1"]
    assert isinstance(m.parametrizations.weight.original0, nn.Parameter)
    rank_one = value(m.weight)
    with pytest.raises(ValueError, match="Cannot leave unparametrized"):
        parametrize.remove_parametrizations(m, "weight", leave_parametrized=False)
    parametrize.remove_parametrizations(m, "weight")
    assert type(m) is nn.Linear and not hasattr(m, "parametrizations")
    assert isinstance(m.weight, nn.Parameter) and m.weight.is_leaf
    np.testing.assert_allclose(value(m.weight), rank_one)


def test_remove_parametrizations_keeps_original_or_value(device):
    for leave in (True, False):
        m = nn.Linear(3, 3, dtype=mt.float64).to(device)
        w0 = value(m.weight)
        parametrize.register_parametrization(m, "weight", Scale())
        original = m.parametrizations.weight.original
        parametrize.remove_parametrizations(m, "weight", leave_parametrized=leave)
        assert m.weight is original and list(m.state_dict()) == ["bias", "weight"]
        np.testing.assert_allclose(value(m.weight), w0 if leave else w0 / 2)


def test_parametrized_buffer_and_cached(device):
    m = nn.Module()
    m.register_buffer("b", mt.ones(3, dtype=mt.float64, device=device))
    calls = []

    class Counting(nn.Module):
        def forward(self, X):
            calls.append(1)
            return X * 3

    parametrize.register_parametrization(m, "b", Counting())
    assert list(m.state_dict()) == ["parametrizations.b.original"]
    calls.clear()
    with parametrize.cached():
        first, second = m.b, m.b
    assert first is second and len(calls) == 1
    m.b, m.b
    assert len(calls) == 3
    np.testing.assert_allclose(value(m.b), 3.0)


def test_parametrized_module_copies_but_does_not_pickle(device):
    m = nn.Linear(3, 3, dtype=mt.float64).to(device)
    parametrize.register_parametrization(m, "weight", Scale())
    clone = copy.deepcopy(m)
    np.testing.assert_allclose(value(clone.weight), value(m.weight))
    assert clone.parametrizations.weight.original is not m.parametrizations.weight.original
    with pytest.raises(RuntimeError, match="Serialization of parametrized modules"):
        pickle.dumps(m)


def test_parametrize_errors_match_torch():
    def missing(lib):
        lib.nn.utils.parametrize.register_parametrization(lib.nn.Linear(2, 2), "w",
                                                          lib.nn.Identity())

    def not_parametrized(lib):
        lib.nn.utils.parametrize.remove_parametrizations(lib.nn.Linear(2, 2), "weight")

    def changes_shape(lib):
        class Rows(lib.nn.Module):
            def forward(self, X):
                return X[:1]
        lib.nn.utils.parametrize.register_parametrization(lib.nn.Linear(2, 2), "weight",
                                                          Rows())

    def stacked_changes_shape(lib):
        class Rows(lib.nn.Module):
            def forward(self, X):
                return X[:1]
        m = lib.nn.Linear(2, 2)
        lib.nn.utils.parametrize.register_parametrization(m, "weight", lib.nn.Identity())
        lib.nn.utils.parametrize.register_parametrization(m, "weight", Rows())

    def no_inverse(lib):
        class Double(lib.nn.Module):
            def forward(self, X):
                return 2 * X
        m = lib.nn.Linear(2, 2)
        lib.nn.utils.parametrize.register_parametrization(m, "weight", Double())
        m.weight = lib.ones(2, 2)

    for call in (missing, not_parametrized, changes_shape, stacked_changes_shape, no_inverse):
        same_error(call)


def test_unsafe_allows_shape_change(device):
    class Rows(nn.Module):
        def forward(self, X):
            return X[:1]
    m = nn.Linear(2, 2).to(device)
    parametrize.register_parametrization(m, "weight", Rows(), unsafe=True)
    assert m.weight.shape == (1, 2)


def test_transfer_parametrizations_and_params(device):
    source = nn.Linear(3, 3, dtype=mt.float64).to(device)
    parametrize.register_parametrization(source, "weight", Scale())
    target = nn.Linear(3, 3, dtype=mt.float64).to(device)
    parametrize.transfer_parametrizations_and_params(source, target)
    assert target.parametrizations.weight.original is source.parametrizations.weight.original
    np.testing.assert_allclose(value(target.weight), value(source.weight))


# ---- parametrizations ----------------------------------------------------------------------------
@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_parametrization_trains_like_torch(device, dim):
    torch = pytest.importorskip("torch")
    ours, theirs = _pair(_linear, device)
    parametrizations.weight_norm(ours, dim=dim)
    torch.nn.utils.parametrizations.weight_norm(theirs, dim=dim)
    _copy_state(ours, theirs, device)
    _close(ours.parametrizations.weight.original0, theirs.parametrizations.weight.original0)
    _train_and_compare(ours, theirs, device)


def test_spectral_norm_parametrization_trains_like_torch(device):
    torch = pytest.importorskip("torch")
    ours, theirs = _pair(_linear, device)
    parametrizations.spectral_norm(ours)
    torch.nn.utils.parametrizations.spectral_norm(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    _copy_state(ours, theirs, device)
    _train_and_compare(ours, theirs, device)
    u = value(ours.parametrizations.weight[0]._u)
    _train_and_compare(ours, theirs, device, steps=2, train=False)     # eval: u, v frozen
    np.testing.assert_array_equal(value(ours.parametrizations.weight[0]._u), u)


def test_spectral_norm_parametrization_conv_transpose_dim(device):
    torch = pytest.importorskip("torch")
    ours, theirs = _pair(lambda lib: lib.nn.ConvTranspose2d(2, 3, 3), device)
    parametrizations.spectral_norm(ours, n_power_iterations=2)
    torch.nn.utils.parametrizations.spectral_norm(theirs, n_power_iterations=2)
    assert ours.parametrizations.weight[0].dim == 1
    assert ours.parametrizations.weight[0]._v.shape == (2 * 9,)
    _copy_state(ours, theirs, device)
    _train_and_compare(ours, theirs, device, steps=2)


def test_spectral_norm_errors_match_torch():
    for kwargs in ({"n_power_iterations": 0}, {"dim": 2}, {"name": "nothing"}):
        same_error(lambda lib: lib.nn.utils.parametrizations.spectral_norm(
            lib.nn.Linear(2, 2), **kwargs))


@pytest.mark.parametrize("shape,kind", [((4, 4), None), ((5, 3), None), ((3, 5), None),
                                        ((4, 4), "cayley"), ((5, 3), "matrix_exp"),
                                        ((4, 4), "householder")])
def test_orthogonal_matches_torch(device, shape, kind):
    torch = pytest.importorskip("torch")
    ours, theirs = _pair(lambda lib: lib.nn.Linear(shape[1], shape[0]), device)
    torch.nn.utils.parametrizations.orthogonal(theirs, orthogonal_map=kind)
    parametrizations.orthogonal(ours, orthogonal_map=kind)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    _close(ours.weight, theirs.weight, 1e-9)      # the orthogonalized initial weight
    w = value(ours.weight)
    small = w.T if shape[0] > shape[1] else w
    np.testing.assert_allclose(small @ small.T, np.eye(min(shape)), atol=1e-12)
    with torch.no_grad():     # move away from the identity map to test the maps themselves
        theirs.parametrizations.weight.original.add_(
            0.1 * torch.tensor(seq(*theirs.parametrizations.weight.original.shape)))
    _copy_state(ours, theirs, device)
    _train_and_compare(ours, theirs, device, steps=2)


def test_orthogonal_errors_match_torch():
    same_error(lambda lib: lib.nn.utils.parametrizations.orthogonal(lib.nn.Linear(2, 2),
                                                                    orthogonal_map="qr"))
    same_error(lambda lib: lib.nn.utils.parametrizations.orthogonal(lib.nn.Linear(2, 2),
                                                                    name="bias"))

    def wrong_shape(lib):
        m = lib.nn.utils.parametrizations.orthogonal(lib.nn.Linear(2, 3))
        m.weight = lib.ones(3, 3)
    same_error(wrong_shape)


# ---- legacy hooks --------------------------------------------------------------------------------
def test_legacy_weight_norm_trains_like_torch_and_removes(device):
    torch = pytest.importorskip("torch")
    ours, theirs = _pair(_linear, device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.nn.utils.weight_norm(theirs)
        with pytest.warns(FutureWarning):
            nn.utils.weight_norm(ours)
    assert list(ours.state_dict()) == ["bias", "weight_g", "weight_v"]
    _train_and_compare(ours, theirs, device)
    nn.utils.remove_weight_norm(ours)
    torch.nn.utils.remove_weight_norm(theirs)
    assert isinstance(ours.weight, nn.Parameter) and list(ours.state_dict()) == ["bias", "weight"]
    _close(ours.weight, theirs.weight)
    same_error(lambda lib: lib.nn.utils.remove_weight_norm(lib.nn.Linear(2, 2)))


def test_legacy_spectral_norm_trains_like_torch_and_removes(device):
    torch = pytest.importorskip("torch")
    ours, theirs = _pair(_linear, device)
    torch.nn.utils.spectral_norm(theirs)
    nn.utils.spectral_norm(ours)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    _copy_state(ours, theirs, device)
    _train_and_compare(ours, theirs, device)
    nn.utils.remove_spectral_norm(ours)
    torch.nn.utils.remove_spectral_norm(theirs)
    assert list(ours.state_dict()) == ["bias", "weight"]
    _close(ours.weight, theirs.weight)
    same_error(lambda lib: lib.nn.utils.remove_spectral_norm(lib.nn.Linear(2, 2)))
    same_error(lambda lib: lib.nn.utils.spectral_norm(lib.nn.Linear(2, 2),
                                                      n_power_iterations=-1))


def test_legacy_double_registration_refused():
    def twice(lib, apply):
        m = lib.nn.Linear(2, 2)
        apply(lib)(m)
        apply(lib)(m)
    same_error(lambda lib: twice(lib, lambda lib: lib.nn.utils.weight_norm))
    same_error(lambda lib: twice(lib, lambda lib: lib.nn.utils.spectral_norm))


# ---- fusion, skip_init ---------------------------------------------------------------------------
def _trained_bn(make_bn, device):
    torch = pytest.importorskip("torch")
    ours, theirs = _pair(make_bn, device, seed=1)
    for bn in (ours, theirs):
        bn.running_mean.copy_(bn.running_mean + 0.3)
    for key in ("weight", "bias", "running_mean", "running_var"):
        data = seq(*getattr(theirs, key).shape, seed=len(key))
        if key == "running_var":
            data = np.abs(data) + 0.5
        getattr(ours, key).data = mt.tensor(data, device=device)
        getattr(theirs, key).data = torch.tensor(data)
    return ours.eval(), theirs.eval()


@pytest.mark.parametrize("transpose", [False, True])
def test_fuse_conv_bn_eval_matches_torch(device, transpose):
    torch = pytest.importorskip("torch")
    conv = (lambda lib: lib.nn.ConvTranspose2d(2, 3, 3)) if transpose else \
        (lambda lib: lib.nn.Conv2d(2, 3, 3))
    our_conv, their_conv = _pair(conv, device)
    our_bn, their_bn = _trained_bn(lambda lib: lib.nn.BatchNorm2d(3), device)
    fused = nn.utils.fuse_conv_bn_eval(our_conv.eval(), our_bn, transpose=transpose)
    expected = torch.nn.utils.fuse_conv_bn_eval(their_conv.eval(), their_bn,
                                                transpose=transpose)
    assert isinstance(fused.weight, nn.Parameter) and fused is not our_conv
    _close(fused.weight, expected.weight)
    _close(fused.bias, expected.bias)
    x = seq(2, 2, 5, 5)
    np.testing.assert_allclose(value(fused(mt.tensor(x, device=device))),
                               value(our_bn(our_conv(mt.tensor(x, device=device)))), atol=1e-12)


def test_fuse_linear_bn_eval_matches_torch(device):
    torch = pytest.importorskip("torch")
    our_lin, their_lin = _pair(lambda lib: lib.nn.Linear(4, 3, bias=False), device)
    our_bn, their_bn = _trained_bn(lambda lib: lib.nn.BatchNorm1d(3), device)
    fused = nn.utils.fuse_linear_bn_eval(our_lin.eval(), our_bn)
    expected = torch.nn.utils.fuse_linear_bn_eval(their_lin.eval(), their_bn)
    _close(fused.weight, expected.weight)
    _close(fused.bias, expected.bias)
    same_error(lambda lib: lib.nn.utils.fuse_linear_bn_eval(lib.nn.Linear(2, 2),
                                                            lib.nn.BatchNorm1d(2)))
    same_error(lambda lib: lib.nn.utils.fuse_linear_bn_eval(
        lib.nn.Linear(2, 2).eval(), lib.nn.BatchNorm1d(3).eval()))


def test_skip_init(device):
    m = nn.utils.skip_init(nn.Linear, 3, 4, device=device)
    assert type(m) is nn.Linear and m.weight.shape == (4, 3) and m.weight.device.type == device
    same_error(lambda lib: lib.nn.utils.skip_init(lib.nn.ReLU))
    same_error(lambda lib: lib.nn.utils.skip_init(int))


# ---- functional_call -----------------------------------------------------------------------------
def test_functional_call_substitutes_for_one_call(device):
    m = nn.Linear(3, 2, dtype=mt.float64).to(device)
    weight = mt.tensor(seq(2, 3), device=device, requires_grad=True)
    x = mt.tensor(seq(4, 3, seed=1), device=device)
    out = stateless.func_functional_call(m, {"weight": weight}, (x,))
    np.testing.assert_allclose(value(out), seq(4, 3, seed=1) @ seq(2, 3).T + value(m.bias))
    assert isinstance(m.weight, nn.Parameter) and m.weight is not weight   # restored
    out.sum().backward()
    np.testing.assert_allclose(value(weight.grad), np.tile(seq(4, 3, seed=1).sum(0), (2, 1)))
    with pytest.warns(FutureWarning):
        again = stateless.functional_call(m, {"weight": weight}, x)
    np.testing.assert_allclose(value(again), value(out))


def test_functional_call_tied_weights_buffers_and_strict(device):
    torch = pytest.importorskip("torch")

    def model(lib):
        net = lib.nn.Sequential(lib.nn.Linear(2, 2, bias=False), lib.nn.BatchNorm1d(2),
                                lib.nn.Linear(2, 2, bias=False))
        net[2].weight = net[0].weight
        return net

    ours, theirs = model(mt).double().to(device).eval(), model(torch).double().eval()
    weight, mean, x = seq(2, 2), seq(2, seed=1), seq(3, 2, seed=2)
    out = stateless.func_functional_call(
        ours, ({"0.weight": mt.tensor(weight, device=device)},
               {"1.running_mean": mt.tensor(mean, device=device)}), mt.tensor(x, device=device))
    expected = torch.func.functional_call(
        theirs, ({"0.weight": torch.tensor(weight)}, {"1.running_mean": torch.tensor(mean)}),
        torch.tensor(x))
    _close(out, expected)
    untied = stateless.func_functional_call(ours, {"0.weight": mt.tensor(weight, device=device)},
                                            mt.tensor(x, device=device), tie_weights=False)
    assert not np.allclose(value(untied), value(out))

    def strict(lib):
        lib.func.functional_call(model(lib), {"0.weight": lib.ones(2, 2), "extra": lib.ones(1)},
                                 lib.ones(3, 2), strict=True)

    def duplicated(lib):
        lib.func.functional_call(model(lib), ({"0.weight": lib.ones(2, 2)},
                                              {"0.weight": lib.ones(2, 2)}), lib.ones(3, 2))

    def conflicting(lib):
        lib.func.functional_call(model(lib), {"0.weight": lib.ones(2, 2),
                                              "2.weight": lib.zeros(2, 2)}, lib.ones(3, 2))

    for call in (strict, duplicated, conflicting):
        same_error(_with_func(call))


def _with_func(call):
    """call(lib) with minitorch's func.functional_call where mt.func does not exist yet."""
    class _Func:
        functional_call = staticmethod(stateless.func_functional_call)

    def run(lib):
        if lib is mt and not hasattr(mt, "func"):
            mt.func = _Func
            try:
                return call(lib)
            finally:
                del mt.func
        return call(lib)
    return run


def test_householder_orthogonal_without_trivialization_keeps_the_weight_orthogonal():
    torch_ = pytest.importorskip("torch")
    a = np.random.default_rng(0).standard_normal((5, 3))
    A, tau = mt.geqrf(mt.tensor(a))
    At, taut = torch_.geqrf(torch_.tensor(a))
    np.testing.assert_allclose(A.numpy(), At.numpy(), atol=1e-12)
    np.testing.assert_allclose(tau.numpy(), taut.numpy(), atol=1e-12)
    ours, theirs = mt.nn.Linear(3, 5).double(), torch_.nn.Linear(3, 5).double()
    theirs.weight.data = torch_.tensor(ours.weight.detach().numpy())
    mt.nn.utils.parametrizations.orthogonal(ours, use_trivialization=False)
    torch_.nn.utils.parametrizations.orthogonal(theirs, use_trivialization=False)
    np.testing.assert_allclose(ours.weight.detach().numpy(), theirs.weight.detach().numpy(),
                               atol=1e-10)
    ours.weight = mt.eye(5, 3, dtype=mt.float64)
    np.testing.assert_allclose(ours.weight.detach().numpy(), np.eye(5, 3), atol=1e-12)
