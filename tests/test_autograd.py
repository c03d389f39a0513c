"""Autograd semantics: accumulation, graphs, retain_graph, errors, hooks, grad modes, higher order."""
import numpy as np
import pytest

import minitorch as mt
from minitorch.autograd import gradcheck, gradgradcheck


def leaf(values, device="cpu", dtype=mt.float64):
    return mt.tensor(values, dtype=dtype, device=device, requires_grad=True)


def test_accumulates_into_leaf_grad(device):
    x = leaf([1.0, 2.0, 3.0], device)
    (x * x).sum().backward()
    (x * 3).sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), [5.0, 7.0, 9.0])


def test_diamond_graph(device):
    x = leaf([0.5, -1.0], device)
    a, b = x.exp(), x * 2
    (a * b).sum().backward()
    v = np.array([0.5, -1.0])
    np.testing.assert_allclose(x.grad.cpu().numpy(), np.exp(v) * 2 * v + np.exp(v) * 2)


def test_same_tensor_twice_and_leaf_grads_do_not_alias(device):
    x, y = leaf([1.0, 2.0], device), leaf([3.0, 4.0], device)
    (x + y).sum().backward()
    x.grad.mul_(5)                      # must not change y.grad
    np.testing.assert_allclose(y.grad.cpu().numpy(), [1.0, 1.0])
    z = leaf([2.0], device)
    (z + z).sum().backward()
    np.testing.assert_allclose(z.grad.cpu().numpy(), [2.0])


def test_long_chain_is_iterative():
    x = leaf([1.0])
    y = x
    for _ in range(100_000):
        y = y + 0.0
    y.sum().backward()
    assert x.grad.item() == 1.0


def test_backward_twice_raises_unless_retained():
    x = leaf([1.0, 2.0])
    y = (x.exp() * 2).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 4 * np.exp([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()


def test_non_scalar_backward_needs_gradient():
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar "
                                           "outputs"):
        (x * 2).backward()
    (x * 2).backward(mt.tensor([1.0, 10.0], dtype=mt.float64))
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 20.0])


def test_backward_of_tensor_without_grad_raises():
    with pytest.raises(RuntimeError, match="does not require grad"):
        mt.tensor([1.0]).sum().backward()


def test_no_grad_enable_grad_set_grad_enabled():
    x = leaf([1.0])
    with mt.no_grad():
        assert not (x * 2).requires_grad
        with mt.enable_grad():
            assert (x * 2).requires_grad
    with mt.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert mt.is_grad_enabled()

    @mt.no_grad()
    def f(t):
        return t * 2
    assert not f(x).requires_grad


def test_detach_and_leaf_flags():
    x = leaf([1.0])
    y = x * 2
    assert x.is_leaf and not y.is_leaf and y.grad_fn is not None
    d = y.detach()
    assert d.is_leaf and not d.requires_grad
    assert "MulBackward0" in repr(y)


def test_retain_grad_and_tensor_hooks():
    x = leaf([1.0, 2.0])
    y = x * 3
    y.retain_grad()
    seen = []
    handle = y.register_hook(lambda g: seen.append(g.numpy().copy()))
    x_handle = x.register_hook(lambda g: g * 10)
    (y * y).sum().backward()
    np.testing.assert_allclose(y.grad.numpy(), [6.0, 12.0])
    np.testing.assert_allclose(seen[0], [6.0, 12.0])
    np.testing.assert_allclose(x.grad.numpy(), [180.0, 360.0])
    handle.remove()
    x_handle.remove()
    x.grad = None
    (x * 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])
    assert len(seen) == 1


def test_leaf_used_twice_gets_one_summed_gradient(device):
    """torch sums every path's gradient before a leaf's hooks and its accumulation: each hook
    runs once per backward, on the sum."""
    x = leaf([1.0, 2.0], device)
    hooked, posted = [], []
    x.register_hook(lambda g: hooked.append(g.cpu().numpy().copy()))
    x.register_post_accumulate_grad_hook(lambda p: posted.append(p.grad.cpu().numpy().copy()))
    (x * 2 + x * x.exp()).sum().backward()
    v = np.array([1.0, 2.0])
    expected = 2 + np.exp(v) * (1 + v)
    assert len(hooked) == 1 and len(posted) == 1
    np.testing.assert_allclose(hooked[0], expected)
    np.testing.assert_allclose(posted[0], expected)
    (x * 3 + x).sum().backward()          # into an existing .grad: once more, summed
    assert len(hooked) == 2 and len(posted) == 2
    np.testing.assert_allclose(hooked[1], [4.0, 4.0])
    np.testing.assert_allclose(x.grad.cpu().numpy(), expected + 4)


def test_leaf_hook_replacing_the_summed_gradient(device):
    x = leaf([1.0, 2.0], device)
    x.register_hook(lambda g: g * 10)
    (x * 2 + x * 3).sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), [50.0, 50.0])


def test_leaf_as_root_and_inside_the_graph(device):
    x = leaf([1.0, 2.0], device)
    calls = []
    x.register_post_accumulate_grad_hook(lambda p: calls.append(1))
    y = x * 3
    mt.autograd.backward([x, y], [mt.ones_like(x), mt.ones_like(y)])
    assert calls == [1]
    np.testing.assert_allclose(x.grad.cpu().numpy(), [4.0, 4.0])


def test_leaf_paths_that_carry_no_gradient(device):
    """A path whose backward gives None still counts as arrived; the others' sum is stored."""
    x = leaf([1.0, -2.0], device)
    calls = []
    x.register_post_accumulate_grad_hook(lambda p: calls.append(1))
    ((x > 0).to(x.dtype) * x.detach() + x * 4 + x.sign()).sum().backward()
    assert calls == [1]
    np.testing.assert_allclose(x.grad.cpu().numpy(), [4.0, 4.0])


def test_leaf_used_twice_under_create_graph_and_autograd_grad(device):
    x = leaf([1.0, 2.0], device)
    gx, = mt.autograd.grad((x * x * x).sum() + x.sum(), x, create_graph=True)
    np.testing.assert_allclose(gx.detach().cpu().numpy(), [4.0, 13.0])
    gx.sum().backward()             # d/dx of 3x^2 + 1, through the summed gradient's graph
    np.testing.assert_allclose(x.grad.cpu().numpy(), [6.0, 12.0])
    assert gradcheck(lambda t: t * t.exp() + t.sin() * t, (leaf([0.3, -0.7], device),))
    assert gradgradcheck(lambda t: t * t.exp() + t.sin() * t, (leaf([0.3, -0.7], device),))


@pytest.mark.parametrize("create_graph", [False, True])
def test_grad_follows_the_leaf_layout(device, create_graph):
    """torch's gradient layout contract: .grad has the leaf's strides when the leaf is dense
    (contiguous for the usual parameter), whatever layout backward produced."""
    w = leaf(np.arange(6.0).reshape(2, 3), device)
    (w.t() * mt.tensor(np.ones((3, 2)), device=device)).sum().backward(create_graph=create_graph)
    assert w.grad.is_contiguous() and w.grad.stride() == (3, 1)
    np.testing.assert_allclose(w.grad.view(-1).detach().cpu().numpy(), np.ones(6))
    assert w.grad.requires_grad is False       # a gradient of ones is constant either way
    cl = mt.tensor(np.random.default_rng(0).standard_normal((2, 3, 2, 2)), device=device)
    cl = cl.contiguous(memory_format=mt.channels_last).requires_grad_()
    (cl * 2).sum().backward()
    assert cl.grad.stride() == cl.stride() == (12, 1, 6, 3)
    np.testing.assert_allclose(cl.grad.cpu().numpy(), np.full((2, 3, 2, 2), 2.0))
    transposed = leaf(np.arange(6.0).reshape(3, 2), device).detach().t().requires_grad_()
    (transposed.t().contiguous() * 3).sum().backward()
    assert transposed.grad.stride() == transposed.stride() == (1, 2)
    np.testing.assert_allclose(transposed.grad.cpu().numpy(), np.full((2, 3), 3.0))


def test_new_empty_strided(device):
    base = mt.ones(2, dtype=mt.float64, device=device)
    made = base.new_empty_strided((2, 3), (1, 2))
    assert made.shape == (2, 3) and made.stride() == (1, 2)
    assert made.dtype is mt.float64 and made.device == base.device
    assert base.new_empty_strided((2,), (1,), dtype=mt.int32).dtype is mt.int32


def test_autograd_grad_and_unused():
    x, y = leaf([1.0, 2.0]), leaf([3.0])
    out = (x * x).sum()
    gx, = mt.autograd.grad(out, x, retain_graph=True)
    np.testing.assert_allclose(gx.numpy(), [2.0, 4.0])
    assert x.grad is None
    with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
        mt.autograd.grad(out, [x, y], retain_graph=True)
    gx, gy = mt.autograd.grad(out, [x, y], allow_unused=True)
    assert gy is None


def test_autograd_grad_is_grads_batched(device):
    """is_grads_batched: the first dim of each grad_output holds cotangents, one
    vector-Jacobian product each; torch's shape error; without retain_graph the graph is
    freed afterwards; only_inputs=False warns as torch does."""
    x = mt.tensor([0.3, -1.2, 2.0], dtype=mt.float64, device=device, requires_grad=True)
    a, b = x.sin() * x, x.exp()
    cotangents = mt.tensor(np.arange(12.0).reshape(4, 3) - 5, dtype=mt.float64, device=device)
    batched, = mt.autograd.grad((a, b), x, (cotangents, cotangents.flip(0)),
                                is_grads_batched=True, retain_graph=True)
    loop = [mt.autograd.grad((a, b), x, (cotangents[i], cotangents[3 - i]),
                             retain_graph=True)[0] for i in range(4)]
    np.testing.assert_allclose(batched.cpu().numpy(), mt.stack(loop).cpu().numpy(),
                               rtol=1e-12)
    with pytest.raises(RuntimeError, match=r"grad_output\[0\] has a shape of "
                                           r"torch.Size\(\[\]\) and output\[0\] has a shape "
                                           r"of torch.Size\(\[3\]\)"):
        mt.autograd.grad(a, x, cotangents[0], is_grads_batched=True)
    mt.autograd.grad(a, x, cotangents, is_grads_batched=True)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        a.sum().backward()
    with pytest.warns(UserWarning, match="only_inputs argument is deprecated"):
        mt.autograd.grad(b.sum(), x, only_inputs=False)


@pytest.mark.parametrize("fn,second", [
    (lambda x: x.tanh(), lambda v: -2 * np.tanh(v) * (1 - np.tanh(v) ** 2)),
    (lambda x: x.sigmoid(), lambda v: (s := 1 / (1 + np.exp(-v))) * (1 - s) * (1 - 2 * s)),
    (lambda x: x.exp(), np.exp),
    (lambda x: x * x * x, lambda v: 6 * v),
])
def test_create_graph_second_derivative(fn, second):
    v = np.array([-0.7, 0.1, 1.3])
    x = leaf(v)
    g, = mt.autograd.grad(fn(x).sum(), x, create_graph=True)
    g.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), second(v), rtol=1e-10)


def test_create_graph_matmul_second_derivative():
    rng = np.random.default_rng(0)
    a = leaf(rng.standard_normal((3, 4)))
    b = leaf(rng.standard_normal((4, 2)))
    assert gradgradcheck(lambda p, q: (p @ q).tanh(), (a, b))


def test_inplace_on_saved_tensor_raises():
    x = leaf([1.0, 2.0])
    y = x * 1
    z = y.exp()            # saves its output
    z.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


def test_inplace_on_leaf_requiring_grad_raises():
    x = leaf([1.0])
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in "
                                           "an in-place operation"):
        x.add_(1)
    with mt.no_grad():
        x.add_(1)
    assert x.item() == 2.0


def test_inplace_rebases_graph():
    x = leaf([1.0, 2.0])
    y = x * 2
    y.mul_(3)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [6.0, 6.0])


def test_gradcheck_detects_wrong_gradient():
    class Wrong(mt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 3

    x = leaf([1.0, 2.0])
    with pytest.raises(mt.autograd.GradcheckError):
        gradcheck(Wrong.apply, (x,))
    assert gradcheck(lambda t: t * 2, (x,))


def test_gradcheck_options_are_checks_not_ignored(device):
    """torch's gradcheck options: check_forward_ad compares func.jvp's Jacobian, check_batched_
    grad a vmap of the vector-Jacobian product, check_grad_dtypes the gradients' dtypes;
    gradgradcheck's check_fwd_over_rev / check_rev_over_rev and non-contiguous output
    gradients; masked=True is refused rather than ignored."""
    class Wrong(mt.autograd.Function):         # backward off by a factor of 2
        @staticmethod
        def forward(ctx, t):
            ctx.save_for_backward(t)
            return t * t

        @staticmethod
        def backward(ctx, g):
            t, = ctx.saved_tensors
            return g * t

    x = mt.tensor(np.linspace(-1, 1, 6).reshape(2, 3), dtype=mt.float64, device=device,
                  requires_grad=True)
    w = mt.tensor(np.linspace(0.5, 2, 6).reshape(3, 2), dtype=mt.float64, device=device,
                  requires_grad=True)
    f = lambda a, b: (a @ b).tanh() * a.sum()       # noqa: E731
    assert gradcheck(f, (x, w), check_forward_ad=True, check_batched_grad=True,
                     check_grad_dtypes=True, fast_mode=True)
    assert gradgradcheck(f, (x, w), check_fwd_over_rev=True, check_batched_grad=True,
                         gen_non_contig_grad_outputs=True)
    with pytest.raises(mt.autograd.GradcheckError, match="forward AD Jacobian mismatch"):
        gradcheck(Wrong.apply, (x,), check_backward_ad=False, check_forward_ad=True)
    assert not gradcheck(Wrong.apply, (x,), raise_exception=False)
    z = mt.tensor([0.5 + 1j, -0.25 + 0.5j], dtype=mt.complex128, device=device,
                  requires_grad=True)
    assert gradcheck(lambda a: (a * a.conj()).real * a, (z,), check_forward_ad=True,
                     check_batched_grad=True)
    with pytest.raises(NotImplementedError, match="masked=True"):
        gradcheck(f, (x, w), masked=True)


def test_custom_function_with_saved_tensors():
    class Cube(mt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * 3 * x * x

    x = leaf([2.0])
    Cube.apply(x).sum().backward()
    assert x.grad.item() == 12.0
    assert gradcheck(Cube.apply, (leaf([0.3, -1.2]),))


def test_inplace_through_view_updates_base_graph():
    x = leaf([1.0, 2.0, 3.0])
    b = x * 1
    b[1:].mul_(10)                          # in place through a view of b
    (b * b).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2 * 20 * 10, 2 * 30 * 10])


def test_inplace_constant_through_view_blocks_gradient():
    x = leaf([1.0, 2.0, 3.0])
    b = x * 2
    b[0].zero_()
    b.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.0, 2.0, 2.0])


def test_inplace_on_view_of_leaf_requiring_grad_raises():
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        x[0].add_(1)


def test_copy_into_view_of_buffer_records_graph():
    x = leaf([1.0, 2.0])
    buffer = mt.zeros(4, dtype=mt.float64)
    buffer[1:3].copy_(x * 3)
    (buffer * buffer).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [18.0, 36.0])


def test_graphs_are_freed_without_the_cycle_collector():
    import gc
    import weakref
    gc.disable()
    try:
        x = leaf([0.5, -1.0, 2.0])
        y = (x.exp().tanh() * 2).sigmoid()          # ops that save their own outputs
        node = weakref.ref(y.grad_fn)
        del y
        assert node() is None                       # forward-only graph: no reference cycle
        loss = x.exp().sum()
        node = weakref.ref(loss.grad_fn)
        loss.backward()
        del loss
        assert node() is None
    finally:
        gc.enable()


def test_operators_record_only_when_a_gradient_is_needed():
    """`a + b`, `a - b`, `a * b` skip the autograd node when nothing needs recording (no
    operand requires grad, or grad mode is off) and record it otherwise; bool `-` still
    raises torch's error either way."""
    x, y = mt.tensor([1.0, 2.0]), mt.tensor([[3.0], [4.0]])
    for out in (x + y, x - y, x * y):
        assert not out.requires_grad and out.grad_fn is None
    np.testing.assert_array_equal((x * y).numpy(), [[3.0, 6.0], [4.0, 8.0]])
    w = mt.tensor([1.0, 2.0], requires_grad=True)
    with mt.no_grad():
        assert (w * x).grad_fn is None and not (w + x).requires_grad
    assert (w * x).grad_fn.name() == "MulBackward0" and (x - w).grad_fn.name() == "SubBackward0"
    flags = mt.tensor([True, False])
    with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with two bool"):
        flags - flags


def test_view_made_under_no_grad_refuses_inplace_while_recording(device):
    a = mt.randn(3, requires_grad=True, device=device).clone()
    with mt.no_grad():
        v = a[:2]
    for write in (lambda: v.mul_(2), lambda: v.add_(mt.ones(2, device=device)),
                  lambda: v.__iadd__(1), lambda: v.sin_()):
        with pytest.raises(RuntimeError, match="A view was created in no_grad mode and is "
                                               "being modified inplace with grad mode enabled"):
            write()
    with mt.no_grad():
        v.mul_(2)                   # both inside no_grad: allowed
    plain = mt.randn(3, device=device)
    with mt.no_grad():
        w = plain[:2]
    w.mul_(2)                       # the base needs no grad: allowed


@pytest.mark.parametrize("op", ["sin_", "log_", "mul_"])
def test_inplace_op_that_saves_its_input_gets_the_right_gradient(op, device):
    """sin_ and log_ need the input they overwrite; mul_ by a weight needs self for the
    weight's gradient (torch keeps a copy of the original)."""
    x = mt.tensor([0.5, 1.5, 2.0], requires_grad=True, device=device)
    w = mt.tensor([3.0, -1.0, 2.0], requires_grad=True, device=device)
    y = x * 1
    args = (w,) if op == "mul_" else ()
    getattr(y, op)(*args).sum().backward()
    expected = {"sin_": x.detach().cos(), "log_": 1 / x.detach(), "mul_": w.detach()}[op]
    np.testing.assert_allclose(x.grad.cpu().numpy(), expected.cpu().numpy(), rtol=1e-6)
    if op == "mul_":
        np.testing.assert_allclose(w.grad.cpu().numpy(), x.detach().cpu().numpy(), rtol=1e-6)


def test_tensor_where_method_keeps_self_where_the_condition_holds(device):
    x = mt.tensor([1.0, 2.0, 3.0], device=device)
    cond = mt.tensor([True, False, True], device=device)
    np.testing.assert_array_equal(x.where(cond, mt.tensor(0.0, device=device)).cpu().numpy(),
                                  [1.0, 0.0, 3.0])


def test_assigned_grad_is_checked_like_torch(device):
    w = mt.zeros(3, 2, requires_grad=True, device=device)
    with pytest.raises(TypeError, match="assigned grad expected to be a Tensor or None but got "
                                        "grad of type int"):
        w.grad = 1
    with pytest.raises(RuntimeError, match=r"assign a gradient of size '\[4, 2\]' to a tensor of "
                                           r"size '\[3, 2\]'"):
        w.grad = mt.zeros(4, 2, device=device)
    with pytest.raises(RuntimeError, match="assign a gradient with dtype 'double' to a tensor "
                                           "with grad_dtype 'Float'"):
        w.grad = mt.zeros(3, 2, dtype=mt.float64, device=device)
    assert w.grad is None                   # nothing was assigned by a refused value


def test_assigned_grad_may_be_sparse():
    # torch accepts a sparse COO gradient of the parameter's size, and SGD applies it
    w = mt.zeros(3, 2, requires_grad=True)
    w.grad = mt.sparse_coo_tensor([[0, 2]], mt.ones(2, 2), (3, 2))
    assert w.grad.is_sparse
    mt.optim.SGD([w], lr=0.5).step()
    np.testing.assert_array_equal(w.detach().numpy(), [[-0.5, -0.5], [0, 0], [-0.5, -0.5]])
    with pytest.raises(RuntimeError, match=r"gradient of size '\[4, 2\]'"):
        w.grad = mt.sparse_coo_tensor([[0, 2]], mt.ones(2, 2), (4, 2))


def test_inference_mode_flags_as_torch():
    assert not mt.is_inference_mode_enabled()
    with mt.inference_mode():
        assert mt.is_inference_mode_enabled() and not mt.is_grad_enabled()
        with mt.inference_mode(False):     # torch's guard turns recording back on
            assert not mt.is_inference_mode_enabled() and mt.is_grad_enabled()
        assert mt.is_inference_mode_enabled() and not mt.is_grad_enabled()
    with mt.no_grad(), mt.inference_mode(False):
        assert mt.is_grad_enabled()
    assert mt.is_grad_enabled() and not mt.is_inference_mode_enabled()

    @mt.inference_mode()
    def decorated():
        return mt.is_inference_mode_enabled()
    assert decorated() and not mt.is_inference_mode_enabled()
    x = mt.ones(2, requires_grad=True)
    with mt.inference_mode():
        assert (x * 2).grad_fn is None


@pytest.mark.parametrize("make", [lambda w: w[0:1].squeeze(0), lambda w: w[0:2][1].t(),
                                  lambda w: w.view(6)[2:].unsqueeze(0)])
def test_view_of_a_no_grad_view_refuses_in_place_writes(device, make):
    # torch keeps a view's no_grad creation along a chain of views
    w = mt.ones(3, 2, requires_grad=True, device=device)
    with mt.no_grad():
        v = make(w)
    with pytest.raises(RuntimeError, match="A view was created in no_grad mode and is being "
                                           "modified inplace with grad mode enabled"):
        v.add_(1)


@pytest.mark.parametrize("make", [lambda v: v[:1], lambda v: v[0], lambda v: v.t(),
                                  lambda v: v.view(6), lambda v: v.unsqueeze(0).permute(1, 0, 2),
                                  lambda v: v.diagonal()])
def test_view_made_later_of_a_no_grad_view_refuses_in_place_writes(device, make):
    """torch keeps the no_grad creation for views made afterwards with grad mode on too (its
    message then says "Output 0 of <view op> is a view of a view which was created in no_grad
    mode"); writing through one would change w's values behind autograd's back. A detached
    copy and no_grad writes stay allowed."""
    w = mt.ones(3, 2, requires_grad=True, device=device)
    with mt.no_grad():
        v = w.view(3, 2)
    view = make(v)
    with pytest.raises(RuntimeError, match="created in no_grad mode and is being modified "
                                           "inplace with grad mode enabled"):
        view.mul_(2)
    v.detach().mul_(2)
    with mt.no_grad():
        view.mul_(2)
