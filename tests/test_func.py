"""mt.func (grad, grad_and_value, vjp, jacrev, hessian, functional_call) against torch.func."""
import numpy as np
import pytest

import minitorch as mt
import minitorch.func as mf

torch = pytest.importorskip("torch")
tf = pytest.importorskip("torch.func")

X, Y = np.array([0.5, -1.2, 2.0]), np.array([1.0, 2.0, 0.5])


def f(a, b):
    return (a.sin() * b).sum() + (a * a * b).sum()


def pair(device):
    return (mt.tensor(X, device=device), mt.tensor(Y, device=device)), (torch.tensor(X),
                                                                        torch.tensor(Y))


def close(ours, theirs):
    if isinstance(theirs, tuple):
        for a, b in zip(ours, theirs, strict=True):
            close(a, b)
        return
    assert not ours.requires_grad
    np.testing.assert_allclose(ours.detach().cpu().numpy(), theirs.detach().numpy(), rtol=1e-12)


def test_grad_of_every_argnums_form(device):
    ours, theirs = pair(device)
    for argnums in (0, 1, (0, 1), -1):
        close(mf.grad(f, argnums)(*ours), tf.grad(f, argnums)(*theirs))
    gradient, value = mf.grad_and_value(f)(*ours)
    close((gradient, value), tf.grad_and_value(f)(*theirs))
    aux = mf.grad(lambda a, b: (f(a, b), a * 2), has_aux=True)(*ours)
    close(aux, tf.grad(lambda a, b: (f(a, b), a * 2), has_aux=True)(*theirs))
    with pytest.raises(RuntimeError, match="Expected f\\(\\*args\\) to return a scalar"):
        mf.grad(lambda a: a * 2)(ours[0])


def test_nested_transforms_differentiate_again(device):
    ours, theirs = pair(device)
    close(mf.grad(lambda a, b: mf.grad(f)(a, b).sum())(*ours),
          tf.grad(lambda a, b: tf.grad(f)(a, b).sum())(*theirs))
    close(mf.hessian(f)(*ours), tf.hessian(f)(*theirs))
    close(mf.hessian(f, argnums=1)(*ours), tf.hessian(f, argnums=1)(*theirs))


def test_vjp_and_jacrev(device):
    ours, theirs = pair(device)
    close(mf.jacrev(lambda a: a.sin() * a)(ours[0]), tf.jacrev(lambda a: a.sin() * a)(theirs[0]))
    close(mf.jacrev(lambda a, b: a * b, (0, 1))(*ours),
          tf.jacrev(lambda a, b: a * b, (0, 1))(*theirs))
    out, fn = mf.vjp(lambda a, b: a.sin() * b, *ours)
    expected_out, expected_fn = tf.vjp(lambda a, b: a.sin() * b, *theirs)
    close(out, expected_out)
    close(fn(ours[1]), expected_fn(theirs[1]))


def test_functional_call_swaps_parameters_for_one_call(device):
    layer = mt.nn.Linear(3, 2).double().to(device)
    doubled = {name: p.detach() * 2 for name, p in layer.named_parameters()}
    x = mt.tensor(X, device=device)
    expected = x @ doubled["weight"].T + doubled["bias"]
    np.testing.assert_allclose(mf.functional_call(layer, doubled, (x,)).detach().cpu().numpy(),
                               expected.cpu().numpy())
    assert not mt.equal(layer.weight, doubled["weight"])
    assert mt.autograd.functional.jacobian is not None


def test_a_level_differentiates_only_its_own_variable(device):
    """torch.func's levels: a closure over the same tensor is a constant for the inner
    transform (the usual way of writing mixed second derivatives)."""
    x = mt.tensor(X, device=device, requires_grad=True)
    close(mf.grad(lambda y: (y * x).sum())(x).detach(), torch.tensor(X))
    z = mt.tensor(X, device=device)
    nested = mf.grad(lambda a: mf.grad(lambda b: (a * b).sum())(a).sum())(z)
    close(nested, torch.ones(3, dtype=torch.float64))


def test_pytrees_of_arguments_and_outputs(device):
    layer = mt.nn.Linear(3, 2).double().to(device)
    theirs = torch.nn.Linear(3, 2).double()
    theirs.load_state_dict({k: torch.tensor(v.detach().cpu().numpy())
                            for k, v in layer.state_dict().items()})
    ones = mt.ones(1, 3, dtype=mt.float64, device=device)
    ours = mf.grad(lambda p: mf.functional_call(layer, p, (ones,)).sum())(
        dict(layer.named_parameters()))
    torch_ones = torch.ones(1, 3, dtype=torch.float64)
    expected = tf.grad(lambda p: tf.functional_call(theirs, p, (torch_ones,)).sum())(
        dict(theirs.named_parameters()))
    for name in expected:
        close(ours[name], expected[name])
    close(mf.jacrev(lambda x: (x ** 2, x.sum()))(mt.tensor(X, device=device)),
          tf.jacrev(lambda x: (x ** 2, x.sum()))(torch.tensor(X)))
    jac = mf.jacrev(lambda x: {"a": x ** 2})(mt.tensor(X, device=device))
    close(jac["a"], tf.jacrev(lambda x: {"a": x ** 2})(torch.tensor(X))["a"])
    _, fn = mf.vjp(lambda x: (x ** 2, x.sum()), mt.tensor(X, device=device))
    _, expected_fn = tf.vjp(lambda x: (x ** 2, x.sum()), torch.tensor(X))
    close(fn((mt.tensor(Y, device=device), mt.tensor(2., dtype=mt.float64, device=device))),
          expected_fn((torch.tensor(Y), torch.tensor(2., dtype=torch.float64))))
    a, b = mt.tensor(X, device=device), mt.tensor(Y, device=device)
    close(mf.grad(lambda u, v: (v ** 2).sum())(a, b), torch.zeros(3, dtype=torch.float64))


@pytest.mark.parametrize("call", [
    lambda lib, f: f.grad(lambda x: (x ** 3).sum(0, keepdim=True))(lib.ones(3)),
    lambda lib, f: f.grad(lambda x: x.sum(), argnums=[0])(lib.ones(3)),
    lambda lib, f: f.grad(lambda x, y: (x * y).sum(), argnums=(0, 0))(lib.ones(3), lib.ones(3)),
    lambda lib, f: f.grad(lambda x: x.sum(), has_aux=True)(lib.ones(3)),
    lambda lib, f: f.grad(lambda x: 1.0)(lib.ones(3)),
    lambda lib, f: f.grad(lambda x: x ** 2)(3.0),
    lambda lib, f: f.grad(lambda x, y: x.sum(), argnums=2)(lib.ones(3), lib.ones(3))])
def test_transform_errors_match_torch(call):
    with pytest.raises(Exception) as theirs:
        call(torch, tf)
    with pytest.raises(Exception) as ours:
        call(mt, mf)
    assert type(ours.value) is type(theirs.value) and str(ours.value) == str(theirs.value)


def test_functionalize_batch_norm_replacement_and_debug_unwrap(device):
    """functionalize runs the function as it is (eager execution: same values, same input
    mutations); replace_all_batch_norm_modules_ drops running statistics, so vmap over the
    module normalizes per example; debug_unwrap shows a batched tensor's whole batch."""
    def scale_in_place(x):
        x.mul_(2)
        return x + 1
    x = mt.ones(3, device=device)
    assert mt.func.functionalize(scale_in_place)(x).tolist() == [3.0, 3.0, 3.0]
    assert x.tolist() == [2.0, 2.0, 2.0]
    with pytest.raises(RuntimeError, match="received invalid argument for remove=views"):
        mt.func.functionalize(scale_in_place, remove="views")
    model = mt.nn.Sequential(mt.nn.BatchNorm1d(3), mt.nn.Linear(3, 2)).to(device)
    assert mt.func.replace_all_batch_norm_modules_(model) is model
    norm = model[0]
    assert norm.running_mean is None and norm.running_var is None
    assert norm.num_batches_tracked is None and not norm.track_running_stats
    assert list(norm.state_dict()) == ["weight", "bias"]
    batch = mt.randn(4, 5, 3, device=device)
    per_example = mt.func.vmap(model)(batch)
    expected = mt.stack([model(batch[i]) for i in range(4)])
    assert mt.allclose(per_example, expected, atol=1e-5)
    seen = []
    mt.func.vmap(lambda t: seen.append(mt.func.debug_unwrap(t).shape) or t.sum())(
        mt.randn(5, 2, device=device))
    assert seen == [(5, 2)]
