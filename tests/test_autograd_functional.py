"""autograd.functional (jacobian, hessian, vjp, jvp, vhp, hvp) against torch: values and the
tensor-or-tuple packing of results, create_graph (results differentiable again), strict mode
and argument errors with torch's messages."""
import numpy as np
import pytest

import minitorch as mt
from minitorch.autograd import functional as autograd_functional
from minitorch.autograd import gradcheck
from torch_parity import flatten, same_error, seq, value


def functional(lib):
    return autograd_functional if lib is mt else lib.autograd.functional


def _inputs(lib, arrays, device, stepped=False):
    """float64 tensors of the arrays (stepped: non-contiguous views of wider ones)."""
    out = []
    for a in arrays:
        data = np.repeat(a, 2, axis=-1) if stepped and a.ndim else a
        t = mt.tensor(data, device=device) if lib is mt else lib.tensor(data)
        out.append(t[..., ::2] if stepped and a.ndim else t)
    return out[0] if len(out) == 1 else tuple(out)


def both(call, arrays, device, stepped=False):
    """call(lib, inputs) in minitorch and torch: same nesting, shapes and values."""
    torch = pytest.importorskip("torch")
    ours = call(mt, _inputs(mt, arrays, device, stepped))
    theirs = call(torch, _inputs(torch, arrays, None, stepped))
    assert _structure(ours) == _structure(theirs)
    for mine, expected in zip(flatten(ours), flatten(theirs), strict=True):
        assert mine.shape == tuple(expected.shape)
        np.testing.assert_allclose(value(mine), expected.detach().numpy(), rtol=1e-10,
                                   atol=1e-12)


def _structure(result):
    if isinstance(result, (tuple, list)):
        return tuple(_structure(r) for r in result)
    return "tensor"


def square_sum(lib, x):
    return (x * x * x).sum()


def two_outputs(lib, x, y):
    return x.sin() * y, (x * y).sum()


@pytest.mark.parametrize("stepped", [False, True])
def test_jacobian_single_and_tuple(device, stepped):
    both(lambda lib, x: functional(lib).jacobian(lambda a: a.exp() * a.sum(), x),
         [seq(2, 3)], device, stepped)
    both(lambda lib, xy: functional(lib).jacobian(lambda a, b: two_outputs(lib, a, b), xy),
         [seq(3), seq(3, seed=1)], device, stepped)
    both(lambda lib, xy: functional(lib).jacobian(lambda a, b: a * b, xy, vectorize=True),
         [seq(3), seq(3, seed=1)], device)


def test_jacobian_zero_dim_empty_and_unused(device):
    both(lambda lib, x: functional(lib).jacobian(lambda a: a * a, x), [np.array(1.5)], device)
    both(lambda lib, x: functional(lib).jacobian(lambda a: a.sum() * 2, x), [np.zeros((0, 2))],
         device)
    both(lambda lib, xy: functional(lib).jacobian(lambda a, b: a * 2, xy),
         [seq(2), seq(3, seed=1)], device)


def test_hessian(device):
    both(lambda lib, x: functional(lib).hessian(lambda a: square_sum(lib, a), x),
         [seq(2, 2)], device, stepped=True)
    both(lambda lib, xy: functional(lib).hessian(lambda a, b: (a * a * b).sum(), xy),
         [seq(2), seq(2, seed=1)], device)


@pytest.mark.parametrize("name", ["vjp", "jvp"])
def test_vjp_jvp(device, name):
    def call(lib, xy):
        x, y = xy
        v = (x * 0 + 1.5, y.sum() * 0 + 2.0) if name == "vjp" else (x * 0 + 0.5, y * 0 - 1.0)
        return getattr(functional(lib), name)(lambda a, b: two_outputs(lib, a, b), xy, v)
    both(call, [seq(3), seq(3, seed=1)], device, stepped=True)
    both(lambda lib, x: getattr(functional(lib), name)(lambda a: (a * a).sum() * 3, x),
         [np.array(2.0)], device)


@pytest.mark.parametrize("name", ["vhp", "hvp"])
def test_vhp_hvp(device, name):
    def call(lib, xy):
        x, y = xy
        return getattr(functional(lib), name)(lambda a, b: (a * a * b.exp()).sum(), xy,
                                              (x * 0 + 1.0, y * 0 + 2.0))
    both(call, [seq(3), seq(3, seed=1)], device)
    both(lambda lib, x: getattr(functional(lib), name)(lambda a: square_sum(lib, a), x, x * 0 + 1),
         [seq(2, 2)], device, stepped=True)


def test_create_graph_results_are_differentiable(device):
    x = mt.tensor(seq(3), device=device, requires_grad=True)
    plain = autograd_functional.jacobian(lambda a: a * a, x)
    assert not plain.requires_grad
    jac = autograd_functional.jacobian(lambda a: a * a * a, x, create_graph=True)
    assert jac.requires_grad
    jac.sum().backward()
    np.testing.assert_allclose(value(x.grad), 6 * seq(3))

    def hvp_of(a):
        return autograd_functional.hvp(lambda b: (b.sin() * b).sum(), a, a.cos(),
                                       create_graph=True)[1]
    assert gradcheck(hvp_of, (mt.tensor(seq(3), device=device, requires_grad=True),))

    def jvp_of(a):
        return autograd_functional.jvp(lambda b: b.exp() * b, a, a * 2, create_graph=True)[1]
    assert gradcheck(jvp_of, (mt.tensor(seq(2, 4), device=device, requires_grad=True)[:, ::2],))


def test_strict_mode_errors_match_torch():
    def jac_independent(lib):
        functional(lib).jacobian(lambda a, b: a * 2, (lib.ones(2), lib.ones(2)), strict=True)

    def vjp_constant(lib):
        functional(lib).vjp(lambda a: lib.ones(2), lib.ones(2), lib.ones(2), strict=True)

    def hessian_linear(lib):
        functional(lib).hessian(lambda a: a.sum(), lib.ones(2), strict=True)

    def hvp_linear(lib):
        functional(lib).hvp(lambda a: a.sum(), lib.ones(2), lib.ones(2), strict=True)

    def jvp_constant(lib):
        functional(lib).jvp(lambda a: lib.ones(2), lib.ones(2), lib.ones(2), strict=True)

    def vectorized_strict(lib):
        functional(lib).jacobian(lambda a: a, lib.ones(2), strict=True, vectorize=True)

    for call in (jac_independent, vjp_constant, hessian_linear, hvp_linear, jvp_constant,
                 vectorized_strict):
        same_error(call)


def test_argument_errors_match_torch():
    errors = [
        lambda lib: functional(lib).jacobian(lambda a: a, [lib.ones(2)]),
        lambda lib: functional(lib).jacobian(lambda a, b: a, (lib.ones(2), 3)),
        lambda lib: functional(lib).jacobian(lambda a: 3, lib.ones(2)),
        lambda lib: functional(lib).vjp(lambda a: a, lib.ones(2)),
        lambda lib: functional(lib).vjp(lambda a: a, lib.ones(2), lib.ones(3)),
        lambda lib: functional(lib).vjp(lambda a: (a, a), lib.ones(2), (lib.ones(2),)),
        lambda lib: functional(lib).jvp(lambda a, b: a, (lib.ones(2), lib.ones(2)),
                                        (lib.ones(2), lib.ones(1))),
        lambda lib: functional(lib).hvp(lambda a: a, lib.ones(2), lib.ones(2)),
        lambda lib: functional(lib).vhp(lambda a: (a.sum(), a.sum()), lib.ones(2), lib.ones(2)),
        lambda lib: functional(lib).hessian(lambda a: a * a, lib.ones(2)),
        lambda lib: functional(lib).jacobian(lambda a: a, lib.ones(2), strategy="sideways"),
        lambda lib: functional(lib).jacobian(lambda a: a, lib.ones(2), strategy="forward-mode"),
        lambda lib: functional(lib).jacobian(lambda a: a, lib.ones(2), create_graph=True,
                                             strategy="forward-mode"),
    ]
    for call in errors:
        same_error(call)
