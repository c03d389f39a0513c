"""mt.func's forward-mode transforms (jvp, linearize, jacfwd) and vmap, against torch.func."""
import numpy as np
import pytest

import minitorch as mt
import minitorch.func as mf

torch = pytest.importorskip("torch")
tf = pytest.importorskip("torch.func")


def both(array, device="cpu"):
    return mt.tensor(array, device=device), torch.tensor(array)


def close(ours, theirs, tol=1e-12):
    np.testing.assert_allclose(ours.detach().cpu().numpy(), theirs.detach().numpy(), rtol=tol,
                               atol=tol)


def flat(tree):
    if isinstance(tree, (tuple, list)):
        return [leaf for item in tree for leaf in flat(item)]
    if isinstance(tree, dict):
        return [leaf for value in tree.values() for leaf in flat(value)]
    return [tree]


def two_outputs(lib):
    return lambda x, y: ((x.sin() * y).sum(0), lib.exp(x) * 2)


@pytest.fixture
def arrays(rng):
    return rng.standard_normal((3, 4)), rng.standard_normal(4), rng.standard_normal((3, 4))


# ---- jvp / linearize --------------------------------------------------------------------------
def test_jvp_matches_torch_on_several_outputs(device, arrays):
    a, b, v = arrays
    (ma, ta), (mb, tb), (mv, tv) = both(a, device), both(b, device), both(v, device)
    ours = mf.jvp(two_outputs(mt), (ma, mb), (mv, mb))
    theirs = tf.jvp(two_outputs(torch), (ta, tb), (tv, tb))
    for o, t in zip(flat(ours), flat(theirs)):
        close(o, t)
        assert not o.requires_grad


def test_jvp_of_a_nonlinear_chain_equals_finite_differences(rng):
    x, v = rng.standard_normal(5), rng.standard_normal(5)

    def f(t):
        return (t.tanh() * t.exp()).cumsum(0) / (1 + t * t)
    _, product = mf.jvp(f, (mt.tensor(x),), (mt.tensor(v),))
    eps = 1e-6
    numeric = (f(mt.tensor(x + eps * v)) - f(mt.tensor(x - eps * v))) / (2 * eps)
    np.testing.assert_allclose(product.numpy(), numeric.numpy(), rtol=1e-7, atol=1e-8)


def test_jvp_has_aux_and_constant_outputs(arrays):
    a, _, v = arrays
    out, product, aux = mf.jvp(lambda x: (x * 0 + 3, {"mean": x.mean()}),
                               (mt.tensor(a),), (mt.tensor(v),), has_aux=True)
    assert float(product.abs().sum()) == 0 and out.shape == (3, 4)
    assert float(aux["mean"]) == pytest.approx(a.mean())
    _, product = mf.jvp(lambda x: mt.ones(2), (mt.tensor(a),), (mt.tensor(v),))
    assert product.tolist() == [0.0, 0.0]


def test_jvp_argument_errors():
    x = mt.ones(3)
    with pytest.raises(RuntimeError, match="Expected primals to be a tuple"):
        mf.jvp(mt.sin, x, (x,))
    with pytest.raises(RuntimeError, match="same python structure"):
        mf.jvp(mt.sin, (x,), (x, x))
    with pytest.raises(RuntimeError, match="same shape"):
        mf.jvp(mt.sin, (x,), (mt.ones(4),))


def test_linearize_reuses_one_graph(arrays):
    a, _, v = arrays
    out, jvp_fn = mf.linearize(lambda x: x.sin() * x, mt.tensor(a))
    np.testing.assert_allclose(out.numpy(), np.sin(a) * a)
    for tangent in (v, 2 * v, np.ones_like(v)):
        expected = (np.cos(a) * a + np.sin(a)) * tangent
        np.testing.assert_allclose(jvp_fn(mt.tensor(tangent)).numpy(), expected, rtol=1e-12)


def test_jvp_nests_inside_grad(rng):
    """grad of a jvp: the directional derivative's gradient is the Hessian-vector product."""
    x, v = rng.standard_normal(4), rng.standard_normal(4)

    def directional(lib, fn):
        return lambda t: fn(lambda s: (s ** 3).sum() + (s[0] * s[1]).sin(), (t,),
                            (lib.tensor(v),))[1]
    ours = mf.grad(directional(mt, mf.jvp))(mt.tensor(x))
    theirs = tf.grad(directional(torch, tf.jvp))(torch.tensor(x))
    close(ours, theirs)


# ---- jacfwd -----------------------------------------------------------------------------------
@pytest.mark.parametrize("argnums", [0, 1, (0, 1)])
def test_jacfwd_matches_torch_and_jacrev(device, arrays, argnums):
    a, b, _ = arrays
    ma, mb = mt.tensor(a, device=device), mt.tensor(b, device=device)
    ours = mf.jacfwd(two_outputs(mt), argnums=argnums)(ma, mb)
    theirs = tf.jacfwd(two_outputs(torch), argnums=argnums)(torch.tensor(a), torch.tensor(b))
    reverse = mf.jacrev(two_outputs(mt), argnums=argnums)(ma, mb)
    for o, t, r in zip(flat(ours), flat(theirs), flat(reverse)):
        assert o.shape == tuple(t.shape)
        close(o, t)
        close(o, torch.tensor(r.cpu().numpy()))


def test_jacfwd_has_aux_and_zero_size_inputs():
    jac, aux = mf.jacfwd(lambda x: (x * 2, x.sum()), has_aux=True)(mt.ones(3))
    assert jac.tolist() == [[2.0, 0, 0], [0, 2.0, 0], [0, 0, 2.0]] and float(aux) == 3
    assert mf.jacfwd(lambda x: x.sum() * mt.ones(2))(mt.ones(0)).shape == (2, 0)
    with pytest.raises(RuntimeError, match="randomness"):
        mf.jacfwd(mt.sin, randomness="sometimes")


# ---- vmap -------------------------------------------------------------------------------------
def check_vmap(fn_of_lib, arrays, **kwargs):
    ours = mf.vmap(fn_of_lib(mt), **kwargs)(*[mt.tensor(a) if isinstance(a, np.ndarray) else a
                                              for a in arrays])
    theirs = tf.vmap(fn_of_lib(torch), **kwargs)(*[torch.tensor(a) if isinstance(a, np.ndarray)
                                                   else a for a in arrays])
    for o, t in zip(flat(ours), flat(theirs), strict=True):
        assert o.shape == tuple(t.shape)
        close(o, t)
    return ours


def test_vmap_dot_and_in_dims(rng):
    a, b = rng.standard_normal((5, 3)), rng.standard_normal((3, 5))
    check_vmap(lambda lib: lib.dot, (a, b), in_dims=(0, 1))
    check_vmap(lambda lib: lambda x, y: x * y, (a, b[:, 0]), in_dims=(0, None))
    check_vmap(lambda lib: lambda x: x.sum(), (a,), in_dims=-1)
    check_vmap(lambda lib: lambda x, s: x * s, (a, 2.5), in_dims=(0, None))


def test_vmap_out_dims_and_pytrees(rng):
    a = rng.standard_normal((4, 2, 3))
    check_vmap(lambda lib: lambda x: (x.sum(0), {"t": x.T}), (a,), out_dims=(1, {"t": 2}))
    check_vmap(lambda lib: lambda x: x * 2, (a,), in_dims=2, out_dims=(1,))
    d = {"w": rng.standard_normal((4, 3)), "b": rng.standard_normal(3)}
    ours = mf.vmap(lambda p: p["w"] + p["b"], in_dims=({"w": 0, "b": None},))(
        {k: mt.tensor(v) for k, v in d.items()})
    np.testing.assert_allclose(ours.numpy(), d["w"] + d["b"])


def test_vmap_nested_and_composed_with_grad(device, rng):
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((5, 4))
    outer = mf.vmap(mf.vmap(mt.dot, in_dims=(None, 0)), in_dims=(0, None))
    np.testing.assert_allclose(outer(mt.tensor(a, device=device),
                                     mt.tensor(b, device=device)).cpu().numpy(), a @ b.T)
    check_vmap(lambda lib: (mf if lib is mt else tf).grad(lambda x: (x.sin() * x).sum()), (a,))
    per_sample = mf.vmap(mf.grad(lambda w, x: (w * x).sum() ** 2), in_dims=(None, 0))
    grads = per_sample(mt.tensor(b[0]), mt.tensor(a))
    np.testing.assert_allclose(grads.numpy(), 2 * (a @ b[0])[:, None] * a, rtol=1e-12)


def test_vmap_gradients_flow_to_the_inputs(rng):
    a = mt.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    mt.vmap(lambda x: (x * x).sum())(a).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), 2 * a.detach().numpy())


def test_vmap_unbatched_outputs_and_zero_size_batches(rng):
    b = rng.standard_normal(3)
    out = mt.vmap(lambda x, y: (x * 2, y + 1), in_dims=(0, None), out_dims=(0, None))(
        mt.ones(2, 3), mt.tensor(b))
    assert out[1].shape == (3,)
    with pytest.raises(ValueError, match="can not return a BatchedTensor when out_dim is None"):
        mt.vmap(lambda x: x * 2, out_dims=None)(mt.tensor(rng.standard_normal((2, 3))))
    assert mt.vmap(lambda x: x * 2)(mt.ones(0, 3)).shape == (0, 3)
    assert mt.vmap(lambda x: x.sum(), out_dims=0)(mt.ones(0, 3)).shape == (0,)
    assert mt.vmap(lambda x: x[:, None], in_dims=1, out_dims=2)(mt.ones(2, 0)).shape == (2, 1, 0)


def test_vmap_randomness_modes():
    x = mt.ones(3, 2)
    with pytest.raises(RuntimeError, match="randomness error mode"):
        mt.vmap(lambda t: mt.rand(2) + t)(x)
    same = mt.vmap(lambda t: mt.rand(2) + t, randomness="same")(x)
    assert np.allclose(same.numpy(), same.numpy()[0])
    different = mt.vmap(lambda t: mt.rand(2) + t, randomness="different")(x)
    assert not np.allclose(different.numpy(), different.numpy()[0])
    with pytest.raises(RuntimeError, match="Only allowed values for randomness"):
        mt.vmap(mt.sin, randomness="often")


def test_vmap_argument_errors_follow_torch():
    x = mt.ones(2, 3)
    with pytest.raises(ValueError, match=r"Got in_dim=2 for some input.*-2 <= in_dim < 2"):
        mt.vmap(lambda t: t, in_dims=2)(x)
    with pytest.raises(ValueError, match="dimensionality 0"):
        mt.vmap(lambda t: t)(mt.tensor(1.0))
    with pytest.raises(ValueError, match="same size in the mapped dimension"):
        mt.vmap(mt.add)(x, mt.ones(3, 3))
    with pytest.raises(ValueError, match="All in_dims are None"):
        mt.vmap(mt.sin, in_dims=(None,))(x)
    with pytest.raises(ValueError, match="cannot vmap over non-Tensor arguments"):
        mt.vmap(lambda t, s: t * s, in_dims=(0, 0))(x, 2.0)
    with pytest.raises(ValueError, match="must only return Tensors"):
        mt.vmap(lambda t: 3)(x)
    with pytest.raises(ValueError, match="expected `in_dims` to be int or a"):
        mt.vmap(lambda t: t, in_dims=[0])(x)
    with pytest.raises(ValueError, match="in_dims is not compatible with the structure"):
        mt.vmap(lambda t: t, in_dims=(0, 0))(x)
    with pytest.raises(ValueError, match="out_dims is not compatible with the structure"):
        mt.vmap(lambda t: t, out_dims=(0, 1))(x)
    with pytest.raises(IndexError, match="Dimension out of range"):
        mt.vmap(lambda t: t.sum(), out_dims=1)(x)
    with pytest.raises(ValueError, match="chunk_size should be None or greater than 0"):
        mt.vmap(mt.sin, chunk_size=0)
