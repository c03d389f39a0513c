"""nn.utils.prune against torch.nn.utils.prune: the masks each method chooses (L1 / Ln,
structured and unstructured, importance scores, global pruning over several modules,
iterative pruning through a PruningContainer), the reparametrization (weight_orig Parameter,
weight_mask buffer, the plain weight recomputed by the forward pre-hook, state_dict keys),
forward outputs and the gradient reaching weight_orig, remove(), is_pruned, the random methods
(minitorch's generator draws torch's CPU stream for a seed, so their masks are torch's too) and
the validation errors, word for word."""
import numpy as np
import pytest
from torch_parity import same_error, value

import minitorch as mt
import minitorch.nn.utils.prune as mprune

torch = pytest.importorskip("torch")
tprune = pytest.importorskip("torch.nn.utils.prune")

INF = float("inf")


def _prune(lib):
    return mprune if lib is mt else tprune


def _pair(make, device, seed=0):
    """The same float64 module in torch (seeded) and minitorch (torch's values copied in)."""
    torch.manual_seed(seed)
    theirs = make(torch).double()
    ours = make(mt).double().to(device)
    ours.load_state_dict({k: mt.tensor(v.detach().numpy(), device=device)
                          for k, v in theirs.state_dict().items()})
    return ours, theirs


def _linear(lib):
    return lib.nn.Linear(12, 7)


def _conv(lib):
    return lib.nn.Conv2d(3, 6, 3)


MODULES = {"linear": (_linear, (5, 12)), "conv": (_conv, (2, 3, 6, 6))}


def _same_masks(ours, theirs, *names):
    for name in names:
        mine, expected = getattr(ours, name + "_mask"), getattr(theirs, name + "_mask")
        assert mine.dtype == getattr(mt, str(expected.dtype).split(".")[1])
        np.testing.assert_array_equal(value(mine), expected.numpy(), err_msg=name)


def _same_reparametrization(ours, theirs, name="weight"):
    """Same state_dict keys and values; orig a Parameter, mask a buffer, name a plain tensor."""
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert [n for n, _ in ours.named_buffers()] == [n for n, _ in theirs.named_buffers()]
    assert isinstance(getattr(ours, name + "_orig"), mt.nn.Parameter)
    assert name + "_mask" in ours._buffers and name not in ours._parameters
    assert not isinstance(getattr(ours, name), mt.nn.Parameter)
    np.testing.assert_array_equal(value(getattr(ours, name)),
                                  getattr(theirs, name).detach().numpy())


def _same_forward_backward(ours, theirs, shape, device, *names):
    """Equal outputs; the gradient of each pruned tensor's orig is (dense gradient) * mask."""
    x = np.random.default_rng(3).standard_normal(shape)
    out, expected = ours(mt.tensor(x, device=device)), theirs(torch.tensor(x))
    np.testing.assert_allclose(value(out), expected.detach().numpy(), rtol=1e-10, atol=1e-12)
    (out * out).sum().backward()
    (expected * expected).sum().backward()
    for name in names:
        grad = getattr(ours, name + "_orig").grad
        np.testing.assert_allclose(value(grad), getattr(theirs, name + "_orig").grad.numpy(),
                                   rtol=1e-10, atol=1e-12, err_msg=name)
        assert (value(grad)[value(getattr(ours, name + "_mask")) == 0] == 0).all()


@pytest.mark.parametrize("kind", MODULES)
@pytest.mark.parametrize("amount", [0, 5, 0.3, 1.0])
def test_l1_unstructured(kind, amount, device):
    make, shape = MODULES[kind]
    ours, theirs = _pair(make, device)
    assert mprune.l1_unstructured(ours, "weight", amount=amount) is ours
    tprune.l1_unstructured(theirs, "weight", amount=amount)
    _same_masks(ours, theirs, "weight")
    assert list(ours.state_dict()) == ["bias", "weight_orig", "weight_mask"]
    _same_reparametrization(ours, theirs)
    _same_forward_backward(ours, theirs, shape, device, "weight")
    hooks = list(ours._forward_pre_hooks.values())
    assert len(hooks) == 1 and isinstance(hooks[0], mprune.L1Unstructured)
    assert hooks[0]._tensor_name == "weight" and hooks[0].amount == amount


@pytest.mark.parametrize("kind", MODULES)
@pytest.mark.parametrize("n,dim,amount", [(1, 0, 2), (2, 1, 0.5), (INF, -1, 1),
                                          (-INF, 0, 0.4), (3, 0, 3), (2, 0, 0)])
def test_ln_structured(kind, n, dim, amount, device):
    make, shape = MODULES[kind]
    ours, theirs = _pair(make, device)
    mprune.ln_structured(ours, "weight", amount=amount, n=n, dim=dim)
    tprune.ln_structured(theirs, "weight", amount=amount, n=n, dim=dim)
    _same_masks(ours, theirs, "weight")
    _same_reparametrization(ours, theirs)
    _same_forward_backward(ours, theirs, shape, device, "weight")


@pytest.mark.torch_exact
def test_ln_structured_fro():
    """'fro' is the 2-norm over one remaining dim (Linear); over three (Conv2d) torch.norm
    refuses it, and so does the pruning."""
    ours, theirs = _pair(_linear, "cpu")
    mprune.ln_structured(ours, "weight", amount=3, n="fro", dim=0)
    tprune.ln_structured(theirs, "weight", amount=3, n="fro", dim=0)
    _same_masks(ours, theirs, "weight")
    same_error(lambda lib: _prune(lib).ln_structured(lib.nn.Conv2d(3, 6, 3), "weight", amount=1,
                                                     n="fro", dim=0))


def test_importance_scores(device):
    ours, theirs = _pair(_conv, device)
    scores = np.random.default_rng(5).standard_normal((6, 3, 3, 3))
    mprune.l1_unstructured(ours, "weight", 20, importance_scores=mt.tensor(scores, device=device))
    tprune.l1_unstructured(theirs, "weight", 20, importance_scores=torch.tensor(scores))
    mprune.ln_structured(ours, "weight", 2, n=1, dim=0,
                         importance_scores=mt.tensor(scores, device=device))
    tprune.ln_structured(theirs, "weight", 2, n=1, dim=0, importance_scores=torch.tensor(scores))
    _same_masks(ours, theirs, "weight")
    # the scores, not the weights, chose: pruning by the weights gives another mask
    plain, _ = _pair(_conv, device)
    mprune.l1_unstructured(plain, "weight", 20)
    mprune.ln_structured(plain, "weight", 2, n=1, dim=0)
    assert not np.array_equal(value(plain.weight_mask), value(ours.weight_mask))


def test_pruning_container_iterative(device):
    """l1 then ln_structured then l1 again on the same weight: each acts on the units left."""
    ours, theirs = _pair(_conv, device)
    steps = [("l1_unstructured", {"amount": 0.3}),
             ("ln_structured", {"amount": 2, "n": 2, "dim": 0}),
             ("l1_unstructured", {"amount": 10}),
             ("ln_structured", {"amount": 0.5, "n": 1, "dim": 1})]
    for fn, kwargs in steps:
        getattr(mprune, fn)(ours, "weight", **kwargs)
        getattr(tprune, fn)(theirs, "weight", **kwargs)
        _same_masks(ours, theirs, "weight")
    _same_reparametrization(ours, theirs)
    _same_forward_backward(ours, theirs, (2, 3, 6, 6), device, "weight")
    hooks = list(ours._forward_pre_hooks.values())
    assert len(hooks) == 1 and isinstance(hooks[0], mprune.PruningContainer)
    container = hooks[0]
    assert len(container) == 4 and container._tensor_name == "weight"
    assert [type(m).__name__ for m in container] == \
        ["L1Unstructured", "LnStructured", "L1Unstructured", "LnStructured"]
    assert isinstance(container[1], mprune.LnStructured)
    assert int(value(ours.weight_mask).sum()) == int(theirs.weight_mask.sum())


def test_container_compute_mask_direct():
    """PruningContainer.compute_mask on plain tensors, each PRUNING_TYPE."""
    t = np.random.default_rng(2).standard_normal((4, 5))
    prior = (np.random.default_rng(4).random((4, 5)) > 0.3).astype(np.float64)
    prior[:, 1] = 0
    results = []
    for lib in (mt, torch):
        P = _prune(lib)
        out = []
        for method in (P.L1Unstructured(amount=3), P.LnStructured(amount=1, n=2, dim=1),
                       P.LnStructured(amount=1, n=1, dim=-2),
                       P.CustomFromMask(lib.tensor(np.eye(4, 5)))):
            method._tensor_name = "w"
            container = P.PruningContainer(method)
            out.append(np.asarray(value(container.compute_mask(lib.tensor(t),
                                                               lib.tensor(prior)))))
        results.append(out)
    for mine, theirs in zip(*results):
        np.testing.assert_array_equal(mine, theirs)


def test_global_unstructured(device):
    def make(lib):
        return lib.nn.Sequential(lib.nn.Conv2d(2, 4, 3), lib.nn.Flatten(), lib.nn.Linear(64, 5))
    for amount in (25, 0.4):
        ours, theirs = _pair(make, device)
        ours_params = [(ours[0], "weight"), (ours[2], "weight"), (ours[2], "bias")]
        theirs_params = [(theirs[0], "weight"), (theirs[2], "weight"), (theirs[2], "bias")]
        assert mprune.global_unstructured(ours_params, mprune.L1Unstructured, amount=amount) \
            is None
        tprune.global_unstructured(theirs_params, tprune.L1Unstructured, amount=amount)
        for a, b in ((ours[0], theirs[0]), (ours[2], theirs[2])):
            _same_masks(a, b, "weight")
            _same_reparametrization(a, b)
            assert isinstance(next(iter(a._forward_pre_hooks.values())), mprune.CustomFromMask)
        _same_masks(ours[2], theirs[2], "bias")
        assert list(ours.state_dict()) == list(theirs.state_dict())
        total = sum(int((value(m) == 0).sum()) for m in ours.buffers())
        assert total == (amount if isinstance(amount, int) else round(amount * (72 + 320 + 5)))
        _same_forward_backward(ours, theirs, (2, 2, 6, 6), device)
        for a, b in ((ours[0], theirs[0]), (ours[2], theirs[2])):
            np.testing.assert_allclose(value(a.weight_orig.grad), b.weight_orig.grad.numpy(),
                                       rtol=1e-10, atol=1e-12)


def test_global_unstructured_scores_and_prior_masks(device):
    """Importance scores for some parameters; a parameter pruned before keeps its mask and
    gets a PruningContainer."""
    ours, theirs = _pair(lambda lib: lib.nn.Sequential(lib.nn.Linear(6, 8), lib.nn.Linear(8, 3)),
                         device)
    mprune.l1_unstructured(ours[0], "weight", amount=10)
    tprune.l1_unstructured(theirs[0], "weight", amount=10)
    scores = np.random.default_rng(7).standard_normal((3, 8))
    mprune.global_unstructured([(ours[0], "weight"), (ours[1], "weight")],
                               pruning_method=mprune.L1Unstructured, amount=15,
                               importance_scores={(ours[1], "weight"):
                                                  mt.tensor(scores, device=device)})
    tprune.global_unstructured([(theirs[0], "weight"), (theirs[1], "weight")],
                               pruning_method=tprune.L1Unstructured, amount=15,
                               importance_scores={(theirs[1], "weight"): torch.tensor(scores)})
    _same_masks(ours[0], theirs[0], "weight")
    _same_masks(ours[1], theirs[1], "weight")
    assert isinstance(next(iter(ours[0]._forward_pre_hooks.values())), mprune.PruningContainer)
    _same_forward_backward(ours, theirs, (4, 6), device)
    for a, b in ((ours[0], theirs[0]), (ours[1], theirs[1])):
        np.testing.assert_allclose(value(a.weight_orig.grad), b.weight_orig.grad.numpy(),
                                   rtol=1e-10, atol=1e-12)


def test_random_methods_match_torch():
    """minitorch's rand / randperm are torch's CPU draws for a seed: so are the random masks."""
    torch.manual_seed(11)
    mt.manual_seed(11)
    np.testing.assert_array_equal(value(mt.rand(40)), torch.rand(40).numpy())
    ours, theirs = _pair(_conv, "cpu")
    for seed, fn, kwargs in [(1, "random_unstructured", {"amount": 0.3}),
                             (2, "random_structured", {"amount": 2, "dim": 0}),
                             (3, "random_unstructured", {"amount": 12}),
                             (4, "random_structured", {"amount": 0.5, "dim": 1}),
                             (5, "random_structured", {"amount": 0, "dim": 1})]:
        mt.manual_seed(seed)
        torch.manual_seed(seed)
        getattr(mprune, fn)(ours, "weight", **kwargs)
        getattr(tprune, fn)(theirs, "weight", **kwargs)
        _same_masks(ours, theirs, "weight")
    mt.manual_seed(6)
    torch.manual_seed(6)
    mprune.random_unstructured(ours, "bias", amount=2)
    tprune.random_unstructured(theirs, "bias", amount=2)
    _same_masks(ours, theirs, "bias")
    _same_forward_backward(ours, theirs, (2, 3, 6, 6), "cpu", "weight", "bias")


def test_random_methods_counts(device):
    ours, _ = _pair(_conv, device)
    mprune.random_unstructured(ours, "weight", amount=0.25)
    assert int((value(ours.weight_mask) == 0).sum()) == round(0.25 * 162)
    mprune.random_structured(ours, "weight", amount=3, dim=0)
    mask = value(ours.weight_mask)
    assert int((mask.reshape(6, -1).sum(1) == 0).sum()) >= 3
    assert int((mask == 0).sum()) >= round(0.25 * 162)


def test_identity_and_custom_from_mask(device):
    ours, theirs = _pair(_linear, device)
    mprune.identity(ours, "bias")
    tprune.identity(theirs, "bias")
    _same_masks(ours, theirs, "bias")
    assert (value(ours.bias_mask) == 1).all()
    mask = np.random.default_rng(1).random((7, 12)) > 0.5
    mprune.custom_from_mask(ours, "weight", mask=mt.tensor(mask, device=device))
    tprune.custom_from_mask(theirs, "weight", mask=torch.tensor(mask))
    _same_masks(ours, theirs, "weight", "bias")
    _same_reparametrization(ours, theirs)
    _same_forward_backward(ours, theirs, (5, 12), device, "weight", "bias")
    # an int mask on the bias too (torch's docstring example), on top of identity
    mprune.custom_from_mask(ours, "bias", mask=mt.tensor([0, 1, 0, 1, 1, 1, 0], device=device))
    tprune.custom_from_mask(theirs, "bias", mask=torch.tensor([0, 1, 0, 1, 1, 1, 0]))
    _same_masks(ours, theirs, "bias")


def test_prune_method_and_call():
    """BasePruningMethod.prune on a plain tensor; the hook's __call__ recomputes the weight."""
    t = np.random.default_rng(8).standard_normal((5, 4))
    for lib in (mt, torch):
        P = _prune(lib)
        got = P.L1Unstructured(amount=6).prune(lib.tensor(t))
        scored = P.LnStructured(amount=1, n=2, dim=0).prune(
            lib.tensor(t), importance_scores=lib.tensor(t[::-1].copy()),
            default_mask=lib.ones(5, 4, dtype=lib.float64))
        if lib is mt:
            mine = (value(got), value(scored))
        else:
            np.testing.assert_array_equal(mine[0], got.numpy())
            np.testing.assert_array_equal(mine[1], scored.numpy())
    ours, _theirs = _pair(_linear, "cpu")
    method = mprune.L1Unstructured.apply(ours, "weight", amount=20)
    assert isinstance(method, mprune.L1Unstructured)
    with mt.no_grad():
        ours.weight_orig.fill_(2.0)
    method(ours, None)
    np.testing.assert_array_equal(value(ours.weight), 2.0 * value(ours.weight_mask))
    # the pre-hook runs before every forward: a changed orig shows in the output
    with mt.no_grad():
        ours.weight_orig.fill_(3.0)
    out = ours(mt.ones(1, 12, dtype=mt.float64))
    np.testing.assert_allclose(value(out), (3.0 * value(ours.weight_mask)).sum(1)[None]
                               + value(ours.bias))


def test_training_step_keeps_pruned_entries():
    ours, theirs = _pair(_linear, "cpu")
    mprune.l1_unstructured(ours, "weight", amount=0.5)
    tprune.l1_unstructured(theirs, "weight", amount=0.5)
    opt_m = mt.optim.SGD(ours.parameters(), lr=0.1)
    opt_t = torch.optim.SGD(theirs.parameters(), lr=0.1)
    x = np.random.default_rng(9).standard_normal((4, 12))
    for _ in range(2):
        opt_m.zero_grad()
        opt_t.zero_grad()
        (ours(mt.tensor(x)) ** 2).sum().backward()
        (theirs(torch.tensor(x)) ** 2).sum().backward()
        opt_m.step()
        opt_t.step()
    ours(mt.tensor(x))
    theirs(torch.tensor(x))
    np.testing.assert_allclose(value(ours.weight), theirs.weight.detach().numpy(), rtol=1e-10)
    np.testing.assert_allclose(value(ours.weight_orig), theirs.weight_orig.detach().numpy(),
                               rtol=1e-10)
    assert (value(ours.weight)[value(ours.weight_mask) == 0] == 0).all()


def test_state_dict_roundtrip():
    ours, theirs = _pair(_conv, "cpu")
    mprune.ln_structured(ours, "weight", amount=2, n=2, dim=0)
    tprune.ln_structured(theirs, "weight", amount=2, n=2, dim=0)
    other = mt.nn.Conv2d(3, 6, 3).double()
    mprune.identity(other, "weight")
    other.load_state_dict(ours.state_dict())
    other(mt.zeros(1, 3, 6, 6, dtype=mt.float64))
    np.testing.assert_array_equal(value(other.weight), theirs.weight.detach().numpy())
    np.testing.assert_array_equal(value(other.weight_mask), theirs.weight_mask.numpy())


def test_remove(device):
    ours, theirs = _pair(_conv, device)
    for lib, module in ((mt, ours), (torch, theirs)):
        P = _prune(lib)
        P.l1_unstructured(module, "weight", amount=0.5)
        P.ln_structured(module, "weight", amount=1, n=1, dim=0)
        P.l1_unstructured(module, "bias", amount=1)
        assert P.is_pruned(module)
        assert P.remove(module, "weight") is module
    assert isinstance(ours.weight, mt.nn.Parameter) and "weight" in ours._parameters
    assert "weight" not in ours.__dict__
    np.testing.assert_array_equal(value(ours.weight), theirs.weight.detach().numpy())
    assert list(ours.state_dict()) == list(theirs.state_dict()) == \
        ["bias_orig", "weight", "bias_mask"]
    assert mprune.is_pruned(ours)
    mprune.remove(ours, "bias")
    tprune.remove(theirs, "bias")
    assert not mprune.is_pruned(ours) and not ours._forward_pre_hooks
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["weight", "bias"]
    np.testing.assert_array_equal(value(ours.bias), theirs.bias.detach().numpy())
    assert ours.weight.requires_grad and ours.weight.grad_fn is None
    # BasePruningMethod.remove itself (without dropping the hook)
    lin, _ = _pair(_linear, device)
    method = mprune.L1Unstructured.apply(lin, "weight", amount=3)
    method.remove(lin)
    assert int((value(lin.weight) == 0).sum()) == 3 and "weight_orig" not in lin._parameters


def test_is_pruned_nested():
    for lib in (mt, torch):
        P = _prune(lib)
        net = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.Sequential(lib.nn.Linear(4, 2)))
        assert P.is_pruned(net) is False
        P.identity(net[1][0], "weight")
        assert P.is_pruned(net) is True and P.is_pruned(net[0]) is False
        net[0].register_forward_pre_hook(lambda m, i: None)
        P.remove(net[1][0], "weight")
        assert P.is_pruned(net) is False


def test_public_surface():
    names = [n for n in dir(tprune) if not n.startswith("__") and callable(getattr(tprune, n))
             and getattr(getattr(tprune, n), "__module__", None) == tprune.__name__]
    assert len(names) > 20
    for name in names:
        assert hasattr(mprune, name), name
    assert mt.nn.utils.prune is mprune
    for cls in ("Identity", "RandomUnstructured", "L1Unstructured", "CustomFromMask"):
        assert getattr(mprune, cls).PRUNING_TYPE == getattr(tprune, cls).PRUNING_TYPE
    assert mprune.LnStructured.PRUNING_TYPE == "structured"
    assert issubclass(mprune.PruningContainer, mprune.BasePruningMethod)
    with pytest.raises(TypeError):
        mprune.BasePruningMethod()


# ---- validation: torch's exception types and messages ------------------------------------------
@pytest.mark.torch_exact
@pytest.mark.parametrize("call", [
    lambda P, m: P.l1_unstructured(m, "weight", amount=-1),
    lambda P, m: P.l1_unstructured(m, "weight", amount=1.5),
    lambda P, m: P.l1_unstructured(m, "weight", amount=-0.1),
    lambda P, m: P.random_unstructured(m, "weight", amount="half"),
    lambda P, m: P.l1_unstructured(m, "weight", amount=85),
    lambda P, m: P.random_unstructured(m, "bias", amount=8),
    lambda P, m: P.ln_structured(m, "weight", amount=8, n=2, dim=0),
    lambda P, m: P.ln_structured(m, "weight", amount=1, n=2, dim=2),
    lambda P, m: P.random_structured(m, "weight", amount=1, dim=5),
    lambda P, m: P.random_structured(m, "weight", amount=1, dim=-3),
    lambda P, m: P.ln_structured(m, "bias", amount=1, n=2, dim=0),
    lambda P, m: P.ln_structured(m, "weight", amount=1, n="nuc", dim=0),
    lambda P, m: P.l1_unstructured(m, "foo", amount=1),
    lambda P, m: P.l1_unstructured(m, "weight", 1, importance_scores=m.bias),
    lambda P, m: P.remove(m, "weight"),
    lambda P, m: P.global_unstructured(3, P.L1Unstructured, amount=1),
    lambda P, m: P.global_unstructured([(m, "weight")], P.L1Unstructured, importance_scores=[1],
                                       amount=1),
    lambda P, m: P.PruningContainer(P.Identity(), 3),
    lambda P, m: P.L1Unstructured(2).prune(m.weight, importance_scores=m.bias),
    lambda P, m: P.CustomFromMask(m.bias).compute_mask(m.weight, m.weight),
], ids=["negative", "float>1", "float<0", "str", "int>numel", "int>numel-bias",
        "channels>size", "dim-out-of-range", "dim-out-of-range-random", "negative-dim",
        "structured-1d", "nuc-norm", "unknown-name", "scores-shape", "remove-unpruned",
        "global-not-iterable", "global-scores-not-dict",
        "container-not-method", "prune-scores-shape", "custom-shape"])
def test_errors_like_torch(call):
    def run(lib):
        module = lib.nn.Linear(12, 7)
        call(_prune(lib), module)
    same_error(run)


def test_error_messages_pinned():
    """The wording, written out (it is python code in torch, unchanged for several versions)."""
    lin = mt.nn.Linear(12, 7)
    with pytest.raises(ValueError, match=r"^amount=-1 should either be a float in the range "
                                         r"\[0, 1\] or a non-negative integer$"):
        mprune.l1_unstructured(lin, "weight", amount=-1)
    with pytest.raises(ValueError, match=r"^amount=1.5 should either be a float"):
        mprune.L1Unstructured(1.5)
    with pytest.raises(TypeError, match=r"^Invalid type for amount: x. Must be int or float.$"):
        mprune.RandomStructured("x")
    with pytest.raises(ValueError, match=r"^amount=85 should be smaller than the number of "
                                         r"parameters to prune=84$"):
        mprune.l1_unstructured(lin, "weight", amount=85)
    with pytest.raises(IndexError, match=r"^Invalid index 2 for tensor of size "
                                         r"torch.Size\(\[7, 12\]\)$"):
        mprune.ln_structured(lin, "weight", amount=1, n=2, dim=2)
    with pytest.raises(ValueError, match=r"^Structured pruning can only be applied to "
                                         r"multidimensional tensors. Found tensor of shape "
                                         r"torch.Size\(\[7\]\) with 1 dims$"):
        mprune.random_structured(lin, "bias", amount=1, dim=0)
    with pytest.raises(ValueError, match=r"^Parameter 'weight' of module Linear\(in_features=12, "
                                         r"out_features=7, bias=True\) has to be pruned before "
                                         r"pruning can be removed$"):
        mprune.remove(lin, "weight")
    with pytest.raises(AttributeError, match=r"^'Linear' object has no attribute 'foo'$"):
        mprune.l1_unstructured(lin, "foo", amount=1)
    # a failed pruning rolled back: weight is the Parameter again, nothing left behind
    assert list(lin.state_dict()) == ["weight", "bias"] and not lin._forward_pre_hooks
    assert isinstance(lin.weight, mt.nn.Parameter)


def test_global_unstructured_refuses_structured():
    lin = mt.nn.Linear(3, 2)
    with pytest.raises(TypeError) as ours:
        mprune.global_unstructured([(lin, "weight")], mprune.RandomStructured, amount=1)
    with pytest.raises(TypeError) as theirs:
        tprune.global_unstructured([(torch.nn.Linear(3, 2), "weight")], tprune.RandomStructured,
                                   amount=1)
    # the same words, with the class's own module path
    assert str(ours.value) == str(theirs.value).replace("torch.nn.utils.prune",
                                                        "minitorch.nn.utils.prune")
    assert str(ours.value).startswith('Only "unstructured" PRUNING_TYPE supported for the '
                                      "`pruning_method`. Found method <class")
    assert not mprune.is_pruned(lin)


def test_failed_repruning_keeps_container_state():
    """An error while pruning an already pruned tensor leaves the earlier reparametrization."""
    ours, theirs = _pair(_linear, "cpu")
    for lib, module in ((mt, ours), (torch, theirs)):
        P = _prune(lib)
        P.l1_unstructured(module, "weight", amount=4)
        with pytest.raises(ValueError):
            P.l1_unstructured(module, "weight", amount=200)
        assert list(module.state_dict()) == ["bias", "weight_orig", "weight_mask"]
    _same_masks(ours, theirs, "weight")
