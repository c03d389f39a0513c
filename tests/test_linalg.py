"""Matrix products: matmul's rank rules, mm, bmm, mv, dot, outer/ger, inner, tensordot, einsum,
addmm, baddbmm — forward against numpy, gradients by finite differences, torch's errors."""
import numpy as np
import pytest

import minitorch as mt
from minitorch.autograd import gradcheck, gradgradcheck


def _arrays(rng, *shapes):
    return [rng.standard_normal(shape) for shape in shapes]


def _tensors(arrays, device="cpu", dtype=mt.float64, requires_grad=False):
    return [mt.tensor(a, dtype=dtype, device=device, requires_grad=requires_grad)
            for a in arrays]


def _close(result, expected, dtype=mt.float64):
    expected = np.asarray(expected)
    assert tuple(result.shape) == expected.shape
    tol = dict(rtol=1e-4, atol=1e-5) if dtype is mt.float32 else dict(rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(result.detach().cpu().numpy(), expected, **tol)


def _graph_names(t):
    """Class names of every node in t's graph (to check which kernels an op is built from; a
    node's name() is torch's, which may be another op's)."""
    names, stack, seen = set(), [t.grad_fn], set()
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        names.add(type(node).__name__)
        stack += [f for f, _ in node.next_functions if f is not None]
    return names


# ---- matmul and the fixed-rank products -------------------------------------------------------
PRODUCTS = [
    pytest.param(mt.matmul, np.matmul, [(3,), (3,)], id="matmul_1d_1d"),
    pytest.param(mt.matmul, np.matmul, [(3,), (3, 4)], id="matmul_1d_2d"),
    pytest.param(mt.matmul, np.matmul, [(2, 3), (3,)], id="matmul_2d_1d"),
    pytest.param(mt.matmul, np.matmul, [(2, 3), (3, 4)], id="matmul_2d_2d"),
    pytest.param(mt.matmul, np.matmul, [(5, 2, 3), (3, 4)], id="matmul_batch_2d"),
    pytest.param(mt.matmul, np.matmul, [(3,), (5, 3, 4)], id="matmul_1d_batch"),
    pytest.param(mt.matmul, np.matmul, [(2, 1, 2, 3), (4, 3, 2)], id="matmul_broadcast"),
    pytest.param(mt.matmul, np.matmul, [(2, 0), (0, 3)], id="matmul_empty_inner"),
    pytest.param(mt.matmul, np.matmul, [(0, 2), (2, 3)], id="matmul_empty_rows"),
    pytest.param(lambda a, b: a @ b.mT, lambda a, b: a @ np.swapaxes(b, -1, -2),
                 [(2, 3), (4, 3)], id="matmul_transposed"),
    pytest.param(lambda a, b: a[:, ::2] @ b, lambda a, b: a[:, ::2] @ b, [(2, 6), (3, 2)],
                 id="matmul_stepped"),
    # batch axes read through two strides (attention's head-split views of one array), a
    # broadcast leading axis, and three batch axes that need a copy
    pytest.param(lambda a, b: a.view(2, 5, 3, 4).transpose(1, 2) @ b.view(2, 5, 3, 4).permute(
        0, 2, 3, 1), lambda a, b: a.reshape(2, 5, 3, 4).transpose(0, 2, 1, 3) @ b.reshape(
        2, 5, 3, 4).transpose(0, 2, 3, 1), [(2, 5, 12), (2, 5, 12)], id="matmul_head_views"),
    pytest.param(mt.matmul, np.matmul, [(2, 3, 4, 5), (3, 5, 2)], id="matmul_broadcast_outer"),
    pytest.param(lambda a, b: a.permute(2, 0, 1, 3, 4)[:, :, ::2] @ b,
                 lambda a, b: a.transpose(2, 0, 1, 3, 4)[:, :, ::2] @ b,
                 [(2, 3, 4, 2, 3), (4, 1, 2, 3, 2)], id="matmul_three_batch_axes"),
    pytest.param(mt.mm, np.matmul, [(2, 3), (3, 4)], id="mm"),
    pytest.param(lambda a, b: mt.mm(a.t(), b), lambda a, b: a.T @ b, [(3, 2), (3, 4)],
                 id="mm_transposed"),
    pytest.param(mt.bmm, np.matmul, [(2, 3, 4), (2, 4, 5)], id="bmm"),
    pytest.param(lambda a, b: mt.bmm(a.transpose(1, 2), b), lambda a, b: a.transpose(0, 2, 1) @ b,
                 [(2, 4, 3), (2, 4, 5)], id="bmm_transposed"),
    pytest.param(mt.mv, np.matmul, [(2, 3), (3,)], id="mv"),
    pytest.param(lambda a, b: mt.mv(a.t(), b[::2]), lambda a, b: a.T @ b[::2], [(3, 2), (6,)],
                 id="mv_strided"),
    pytest.param(mt.dot, np.dot, [(4,), (4,)], id="dot"),
    pytest.param(mt.dot, np.dot, [(0,), (0,)], id="dot_empty"),
    pytest.param(mt.outer, np.outer, [(3,), (4,)], id="outer"),
    pytest.param(mt.ger, np.outer, [(3,), (2,)], id="ger"),
    pytest.param(mt.inner, np.inner, [(2, 3), (4, 3)], id="inner"),
    pytest.param(mt.inner, np.inner, [(3,), (3,)], id="inner_1d"),
    pytest.param(mt.inner, np.inner, [(), (2, 3)], id="inner_0d"),
    pytest.param(lambda a, b: mt.tensordot(a, b), lambda a, b: np.tensordot(a, b),
                 [(2, 3, 4), (3, 4, 5)], id="tensordot_default"),
    pytest.param(lambda a, b: mt.tensordot(a, b, dims=1), lambda a, b: np.tensordot(a, b, 1),
                 [(2, 3), (3, 4)], id="tensordot_int"),
    pytest.param(lambda a, b: mt.tensordot(a, b, dims=0), lambda a, b: np.tensordot(a, b, 0),
                 [(2,), (3,)], id="tensordot_outer"),
    pytest.param(lambda a, b: mt.tensordot(a, b, dims=([0, 2], [2, 0])),
                 lambda a, b: np.tensordot(a, b, ([0, 2], [2, 0])), [(2, 3, 4), (4, 5, 2)],
                 id="tensordot_lists"),
    pytest.param(lambda a, b: mt.tensordot(a, b, dims=([-1], [1])),
                 lambda a, b: np.tensordot(a, b, ([-1], [1])), [(2, 3), (4, 3)],
                 id="tensordot_negative_dim"),
    pytest.param(lambda a, b: mt.tensordot(a, b, dims=mt.tensor(1)),
                 lambda a, b: np.tensordot(a, b, 1), [(2, 3), (3, 4)], id="tensordot_tensor_dims"),
]


@pytest.mark.parametrize("op,reference,shapes", PRODUCTS)
def test_products_forward(op, reference, shapes, device, rng):
    arrays = _arrays(rng, *shapes)
    for dtype in (mt.float32, mt.float64):
        _close(op(*_tensors(arrays, device, dtype)), reference(*arrays), dtype)


@pytest.mark.parametrize("op,reference,shapes", PRODUCTS)
def test_products_gradient(op, reference, shapes, rng):
    assert gradcheck(op, tuple(_tensors(_arrays(rng, *shapes), requires_grad=True)))


@pytest.mark.parametrize("op,shapes", [
    pytest.param(mt.mm, [(2, 3), (3, 2)], id="mm"),
    pytest.param(mt.bmm, [(2, 2, 3), (2, 3, 2)], id="bmm"),
    pytest.param(mt.mv, [(2, 3), (3,)], id="mv"),
    pytest.param(mt.dot, [(3,), (3,)], id="dot"),
    pytest.param(lambda a, b: mt.matmul(a, b), [(2, 2, 3), (3, 2)], id="matmul"),
    pytest.param(lambda a, b: mt.addmm(b[0], a, b, beta=0.5, alpha=-2.0), [(2, 3), (3, 2)],
                 id="addmm"),
    pytest.param(lambda a, b: mt.einsum("bij,jk->bik", a, b), [(2, 2, 3), (3, 2)], id="einsum"),
    pytest.param(lambda a, b: mt.einsum("ii,ij->j", a, b), [(3, 3), (3, 2)],
                 id="einsum_diagonal"),
])
def test_products_second_derivative(op, shapes, rng):
    assert gradgradcheck(op, tuple(_tensors(_arrays(rng, *shapes), requires_grad=True)))


def test_grad_fn_names():
    a, b, v = _tensors([np.ones((2, 3)), np.ones((3, 3)), np.ones(3)], requires_grad=True)
    assert mt.mm(a, b).grad_fn.name() == "MmBackward0"
    assert mt.bmm(a[None], b[None]).grad_fn.name() == "BmmBackward0"
    assert mt.mv(a, v).grad_fn.name() == "MvBackward0"
    assert mt.dot(v, v).grad_fn.name() == "DotBackward0"
    assert mt.outer(v, v).grad_fn.name() == "MulBackward0"
    assert mt.addmm(v, a, b).grad_fn.name() == "AddmmBackward0"
    assert mt.baddbmm(v, a[None], b[None]).grad_fn.name() == "BaddbmmBackward0"


@pytest.mark.parametrize("fn,expected,dtype", [
    (lambda: mt.matmul(mt.tensor([[1, 2]]), mt.tensor([[3], [4]])), [[11]], mt.int64),
    (lambda: mt.mm(mt.tensor([[1, 2], [3, 4]]), mt.tensor([[1, 0], [0, 1]])), [[1, 2], [3, 4]],
     mt.int64),
    (lambda: mt.dot(mt.tensor([1, 2]), mt.tensor([3, 4])), 11, mt.int64),
    (lambda: mt.mv(mt.tensor([[1, 2]]), mt.tensor([3, 4])), [11], mt.int64),
    (lambda: mt.bmm(mt.tensor([[[2]]]), mt.tensor([[[3]]])), [[[6]]], mt.int64),
    (lambda: mt.outer(mt.tensor([1, 2]), mt.tensor([1.5])), [[1.5], [3.0]], mt.float32),
    (lambda: mt.einsum("ij,jk->ik", mt.tensor([[1, 2]]), mt.tensor([[3], [4]])), [[11]],
     mt.int64),
    (lambda: mt.tensordot(mt.tensor([[1, 2]]), mt.tensor([[3, 4]]), dims=([1], [1])), [[11]],
     mt.int64),
    (lambda: mt.addmm(mt.tensor([1]), mt.tensor([[1, 2]]), mt.tensor([[3], [4]]), beta=2,
                      alpha=3), [[35]], mt.int64),
])
def test_integer_and_promoted_products(fn, expected, dtype):
    result = fn()
    assert result.dtype is dtype
    np.testing.assert_array_equal(result.numpy(), np.array(expected, dtype=dtype.numpy_dtype))


def test_product_results_are_compact_and_fresh():
    a = mt.tensor(np.arange(6.0).reshape(2, 3))
    c = mt.mm(a, a.t())
    assert c.is_contiguous()
    c.add_(1.0)
    assert a.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]


# ---- addmm / baddbmm --------------------------------------------------------------------------
@pytest.mark.parametrize("input_shape", [(2, 4), (4,), (1, 4), (2, 1), ()])
@pytest.mark.parametrize("beta,alpha", [(1, 1), (0.5, -2.0), (0, 3.0)])
def test_addmm(input_shape, beta, alpha, device, rng):
    x, m1, m2 = _arrays(rng, input_shape, (2, 3), (3, 4))
    result = mt.addmm(*_tensors([x, m1, m2], device), beta=beta, alpha=alpha)
    expected = alpha * (m1 @ m2) + (beta * x if beta else 0)
    _close(result, expected)
    inputs = tuple(_tensors([x, m1, m2], requires_grad=True))
    assert gradcheck(lambda p, q, r: mt.addmm(p, q, r, beta=beta, alpha=alpha), inputs)


@pytest.mark.parametrize("input_shape", [(2, 3, 5), (5,), (3, 1), ()])
@pytest.mark.parametrize("beta,alpha", [(1, 1), (0.5, -2.0), (0, 3.0)])
def test_baddbmm(input_shape, beta, alpha, device, rng):
    x, b1, b2 = _arrays(rng, input_shape, (2, 3, 4), (2, 4, 5))
    result = mt.baddbmm(*_tensors([x, b1, b2], device), beta=beta, alpha=alpha)
    _close(result, beta * x + alpha * (b1 @ b2))
    inputs = tuple(_tensors([x, b1, b2], requires_grad=True))
    assert gradcheck(lambda p, q, r: mt.baddbmm(p, q, r, beta=beta, alpha=alpha), inputs)


def test_addmm_beta_zero_ignores_nan_input():
    x = mt.tensor([float("nan"), float("inf")])
    result = mt.addmm(x, mt.ones(1, 3), mt.ones(3, 2), beta=0)
    assert result.tolist() == [[3.0, 3.0]]


def test_addmm_beta_zero_gives_input_a_zero_gradient():
    x, m1, m2 = _tensors([np.ones(2), np.ones((1, 3)), np.ones((3, 2))], requires_grad=True)
    mt.addmm(x, m1, m2, beta=0).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0] and m1.grad.tolist() == [[2.0, 2.0, 2.0]]


# ---- errors ---------------------------------------------------------------------------------
def _t(*shape, dtype=mt.float32):
    return mt.zeros(*shape, dtype=dtype)


@pytest.mark.parametrize("fn,message", [
    (lambda: mt.matmul(_t(), _t(3)),
     "both arguments to matmul need to be at least 1D, but they are 0D and 1D"),
    (lambda: mt.matmul(_t(3), _t(4)), "inconsistent tensor size, expected tensor [3] and src [4]"),
    (lambda: mt.matmul(_t(2, 3), _t(4, 2)), "mat1 and mat2 shapes cannot be multiplied (2x3 and "
                                            "4x2)"),
    (lambda: mt.mm(_t(3), _t(3, 2)), "self must be a matrix"),
    (lambda: mt.mm(_t(3, 2), _t(3)), "mat2 must be a matrix"),
    (lambda: mt.mm(_t(3, 2), _t(3, 2)), "mat1 and mat2 shapes cannot be multiplied (3x2 and 3x2)"),
    (lambda: mt.mm(_t(3, 2), _t(2, 2, dtype=mt.float64)),
     "expected m1 and m2 to have the same dtype, but got: float != double"),
    (lambda: mt.mm(_t(1, 2, dtype=mt.int64), _t(2, 1)),
     "expected m1 and m2 to have the same dtype, but got: long int != float"),
    (lambda: mt.bmm(_t(2, 3), _t(2, 3, 4)), "batch1 must be a 3D tensor"),
    (lambda: mt.bmm(_t(2, 3, 4), _t(2, 3)), "batch2 must be a 3D tensor"),
    (lambda: mt.bmm(_t(2, 3, 3), _t(2, 4, 4)),
     "Expected size for first two dimensions of batch2 tensor to be: [2, 3] but got: [2, 4]."),
    (lambda: mt.bmm(_t(2, 3, 3), _t(3, 3, 4)),
     "Expected size for first two dimensions of batch2 tensor to be: [2, 3] but got: [3, 3]."),
    (lambda: mt.bmm(_t(2, 3, 3), _t(2, 3, 4, dtype=mt.float64)),
     "expected scalar type Float but found Double"),
    (lambda: mt.mv(_t(3), _t(3)), "vector + matrix @ vector expected, got 1, 1, 1"),
    (lambda: mt.mv(_t(3, 2), _t(3, 2)), "vector + matrix @ vector expected, got 1, 2, 2"),
    (lambda: mt.mv(_t(3, 2), _t(3)), "size mismatch, got input (3), mat (3x2), vec (3)"),
    (lambda: mt.mv(_t(3, 2), _t(2, dtype=mt.float64)),
     "addmv input tensors must have the same dtype, but got Double, Float, and Double"),
    (lambda: mt.dot(_t(3, 1), _t(3)), "1D tensors expected, but got 2D and 1D tensors"),
    (lambda: mt.dot(_t(3), _t(4)),
     "inconsistent tensor size, expected tensor [3] and src [4] to have the same number of "
     "elements, but got 3 and 4 elements respectively"),
    (lambda: mt.dot(_t(3), _t(3, dtype=mt.float64)),
     "dot : expected both vectors to have same dtype, but found Float and Double"),
    (lambda: mt.outer(_t(3, 1), _t(3)), "outer: Expected 1-D argument self, but got 2-D"),
    (lambda: mt.outer(_t(3), _t(3, 1)), "outer: Expected 1-D argument vec2, but got 2-D"),
    (lambda: mt.inner(_t(2, 3), _t(4)),
     "inner() the last dimension must match on both input tensors but got shapes [2, 3] and [4]"),
    (lambda: mt.tensordot(_t(2, 3), _t(3, 4), dims=-1),
     "tensordot expects dims >= 0, but got dims=-1"),
    (lambda: mt.tensordot(_t(2, 3), _t(3, 4), dims=3),
     "tensordot expects dims < ndim_a or ndim_b, but got dims=3"),
    (lambda: mt.tensordot(_t(2, 3), _t(4, 4), dims=1),
     "contracted dimensions need to match, but first has size 3 in dim -1 and second has size 4 "
     "in dim 0"),
    (lambda: mt.tensordot(_t(2, 3), _t(3, 2), dims=([0, 1], [1])),
     "both dimension lists should have same length"),
    (lambda: mt.tensordot(_t(2, 3), _t(3, 2), dims=([0, 0], [1, 1])),
     "dim 0 appears multiple times in the list of dims"),
    (lambda: mt.tensordot(_t(2, 3), _t(3, 4, dtype=mt.float64), 1),
     "both inputs should have same dtype"),
    (lambda: mt.addmm(_t(3), _t(3), _t(3, 3)), "mat1 must be a matrix, got 1-D tensor"),
    (lambda: mt.addmm(_t(3), _t(2, 3), _t(3)), "mat2 must be a matrix, got 1-D tensor"),
    (lambda: mt.addmm(_t(3), _t(2, 3), _t(4, 3)),
     "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x3)"),
    (lambda: mt.addmm(_t(2, 4), _t(2, 3), _t(3, 3)),
     "The expanded size of the tensor (3) must match the existing size (4) at non-singleton "
     "dimension 1.  Target sizes: [2, 3].  Tensor sizes: [2, 4]"),
    (lambda: mt.addmm(_t(2, 2, dtype=mt.float64), _t(2, 2), _t(2, 2)),
     "self and mat2 must have the same dtype, but got Double and Float"),
    (lambda: mt.addmm(_t(2, 2), _t(2, 2, dtype=mt.float64), _t(2, 2)),
     "mat1 and mat2 must have the same dtype, but got Double and Float"),
    (lambda: mt.baddbmm(_t(3), _t(2, 3), _t(2, 3, 3)), "batch1 must be a 3D tensor"),
    (lambda: mt.baddbmm(_t(3), _t(2, 2, 3), _t(2, 4, 3)),
     "Expected size for first two dimensions of batch2 tensor to be: [2, 3] but got: [2, 4]."),
    (lambda: mt.baddbmm(_t(3, 2, 3), _t(2, 2, 3), _t(2, 3, 3)),
     "The expanded size of the tensor (2) must match the existing size (3) at non-singleton "
     "dimension 0."),
    (lambda: mt.baddbmm(_t(2, 2, 2, dtype=mt.float64), _t(2, 2, 2), _t(2, 2, 2)),
     "Input dtypes must be the same, got: input double, batch1: float, batch2: float"),
])
def test_product_errors(fn, message):
    with pytest.raises(RuntimeError) as info:
        fn()
    assert str(info.value).startswith(message)


def test_bool_matmul_is_not_implemented():
    with pytest.raises(NotImplementedError, match="\"addmm_impl_cpu_\" not implemented for "
                                                  "'Bool'"):
        mt.matmul(mt.tensor([[True]]), mt.tensor([[True]]))


# ---- einsum -----------------------------------------------------------------------------------
EINSUM = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
    ("bij,bjk->bik", [(3, 2, 3), (3, 3, 4)]),
    ("bij,jk->bik", [(3, 2, 3), (3, 4)]),
    ("...ij,...jk", [(3, 2, 3), (3, 4)]),
    ("...ij,...jk->...ik", [(2, 1, 2, 3), (3, 3, 2)]),
    ("i...->...", [(3, 2)]),
    ("...->", [(3, 2)]),
    ("...", [(3, 2)]),
    ("ij->j...", [(3, 2)]),
    ("ii->i", [(3, 3)]),
    ("ii->", [(3, 3)]),
    ("ii", [(3, 3)]),
    ("iij->ji", [(3, 3, 2)]),
    ("iji->j", [(3, 2, 3)]),
    ("aab,bcc->ac", [(2, 2, 3), (3, 4, 4)]),
    ("ij->ji", [(2, 3)]),
    ("ij->", [(2, 3)]),
    ("ij", [(2, 3)]),
    ("ji", [(2, 3)]),
    ("i,j", [(3,), (2,)]),
    ("i,i->", [(3,), (3,)]),
    ("i,i->i", [(3,), (3,)]),
    ("ij,ij->ij", [(2, 3), (2, 3)]),
    ("ij,ij->", [(2, 3), (2, 3)]),
    ("ij,ij->ij", [(2, 3), (1, 3)]),
    ("Bi,bj", [(4, 2), (4, 3)]),
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
    ("abc,cd,dbe->ae", [(2, 3, 4), (4, 5), (5, 3, 2)]),
    ("ab,ab,ab->a", [(2, 3), (2, 3), (2, 3)]),
    ("ab,cd->", [(2, 3), (4, 2)]),
    ("ab,cd->dcba", [(2, 3), (4, 2)]),
    ("i,j,k->kji", [(2,), (3,), (2,)]),
    ("...j,j...->...", [(2, 3), (3, 2)]),
    ("ij...,jk...->ik...", [(2, 3, 4), (3, 2, 1)]),
    ("i j , j k -> i k", [(2, 3), (3, 4)]),
    ("->", [()]),
    ("", [()]),
    ("ij,jk", [(2, 0), (0, 4)]),
    ("ij,jk->ik", [(0, 3), (3, 2)]),
]


def _einsum_reference(equation, arrays):
    """numpy's einsum, after broadcasting size-1 axes (which numpy refuses outside '...'); an
    output without '...' sums the ellipsis axes (numpy refuses that too)."""
    equation = equation.replace(" ", "")
    lhs, arrow, rhs = equation.partition("->")
    if arrow and "..." in lhs and "..." not in rhs:
        summed = _einsum_reference(f"{lhs}->...{rhs}", arrays)
        return summed.sum(axis=tuple(range(summed.ndim - len(rhs))))
    terms = lhs.split(",")
    sizes = {}
    for term, a in zip(terms, arrays):
        if "." not in term:
            for label, size in zip(term, a.shape):
                sizes[label] = size if size != 1 else sizes.get(label, 1)
    arrays = [a if "." in term else np.broadcast_to(a, [sizes[label] for label in term])
              for term, a in zip(terms, arrays)]
    return np.einsum(equation, *arrays)


@pytest.mark.parametrize("equation,shapes", EINSUM + [
    ("ij,jk->ik", [(2, 1), (3, 4)]),
    ("ij,jk->ik", [(2, 3), (1, 4)]),
])
def test_einsum_forward(equation, shapes, device, rng):
    arrays = _arrays(rng, *shapes)
    for dtype in (mt.float32, mt.float64):
        _close(mt.einsum(equation, *_tensors(arrays, device, dtype)),
               _einsum_reference(equation, arrays), dtype)


@pytest.mark.parametrize("equation,shapes", EINSUM)
def test_einsum_gradient(equation, shapes, rng):
    inputs = tuple(_tensors(_arrays(rng, *shapes), requires_grad=True))
    assert gradcheck(lambda *ops: mt.einsum(equation, *ops), inputs)


def test_einsum_operand_forms(rng):
    a, b = _tensors(_arrays(rng, (2, 3), (3, 4)), requires_grad=True)
    expected = a.detach().numpy() @ b.detach().numpy()
    _close(mt.einsum("ij,jk->ik", [a, b]), expected)
    _close(mt.einsum("ij,jk->ik", (a, b)), expected)
    # the same tensor as several operands: gradients from every use accumulate
    x = mt.tensor(rng.standard_normal((3, 3)), dtype=mt.float64, requires_grad=True)
    assert gradcheck(lambda t: mt.einsum("ij,jk,kl->il", t, t, t), (x,))
    mt.einsum("ij,ij->", x, x).backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * x.detach().numpy())


def test_einsum_views_and_non_contiguous_operands(rng):
    x = rng.standard_normal((4, 6))
    t = mt.tensor(x)
    diagonal = mt.einsum("ii->i", t[:, :4])
    np.testing.assert_allclose(diagonal.numpy(), np.diag(x[:, :4]), rtol=1e-6)
    assert diagonal.stride() == (7,)            # a view, as in torch
    _close(mt.einsum("ji,jk->ik", t[:, ::2], t.t()[::2].t()),
           np.einsum("ji,jk->ik", x[:, ::2], x.T[::2].T))


def test_einsum_contracts_with_matmul_not_an_outer_product(rng):
    a, b, c = _tensors(_arrays(rng, (2, 3), (3, 4), (4, 5)), requires_grad=True)
    names = _graph_names(mt.einsum("ij,jk,kl->il", a, b, c))
    assert "Matmul" in names and "Mul" not in names
    names = _graph_names(mt.einsum("bij,bjk->bik", a[None], b[None]))
    assert "Matmul" in names and "Mul" not in names
    # only an outer product (nothing to contract) is a broadcast multiply
    assert "Mul" in _graph_names(mt.einsum("i,j->ij", a[0], b[0]))


def test_einsum_diagonal_double_backward(rng):
    x = mt.tensor(rng.standard_normal((3, 3)), dtype=mt.float64, requires_grad=True)
    assert gradgradcheck(lambda t: mt.einsum("ii->i", t) ** 2, (x,))
    assert mt.einsum("ii->i", x).grad_fn.name() == "DiagonalBackward0"


def test_einsum_integer_operands():
    a, b = mt.tensor([[1, 2], [3, 4]]), mt.tensor([[5], [6]])
    result = mt.einsum("ij,jk->ik", a, b)
    assert result.dtype is mt.int64 and result.tolist() == [[17], [39]]
    assert mt.einsum("ii", a).tolist() == 5


@pytest.mark.parametrize("equation,shapes,message", [
    ("ij,jk->ik", [(2, 3)], "einsum(): fewer operands were provided than specified in the "
                            "equation"),
    ("ij", [(2, 3), (3,)], "einsum(): more operands were provided than specified in the "
                           "equation"),
    ("i1", [(2, 3)], "einsum(): invalid subscript given at index 1 in the equation string, "
                     "subscripts must be in [a-zA-Z]"),
    ("ij-", [(2, 3)], "einsum(): invalid subscript given at index 2"),
    ("ij->j->i", [(2, 3)], "einsum(): invalid subscript given at index 5"),
    ("ij>j", [(2, 3)], "einsum(): invalid subscript given at index 2"),
    ("i.j", [(2, 3)], "einsum(): found '.' for operand 0 that is not part of any ellipsis"),
    ("...i...", [(2, 3)], "einsum(): found '.' for operand 0 for which an ellipsis was already "
                          "found"),
    ("ijk", [(2, 3)], "einsum(): the number of subscripts in the equation (3) does not match the "
                      "number of dimensions (2) for operand 0 and no ellipsis was given"),
    ("...ijk", [(2, 3)], "einsum(): the number of subscripts in the equation (3) is more than the "
                         "number of dimensions (2) for operand 0"),
    ("ij->k", [(2, 3)], "einsum(): output subscript k does not appear in the equation for any "
                        "input operand"),
    ("ij->ii", [(2, 3)], "einsum(): output subscript i appears more than once in the output"),
    ("ii->i", [(2, 3)], "einsum(): subscript i is repeated for operand 0 but the sizes don't "
                        "match, 3 != 2"),
    ("ij,ij->ij", [(2, 3), (4, 3)], "einsum(): subscript i has size 4 for operand 1 which does "
                                    "not broadcast with previously seen size 2"),
    ("...ij,...jk", [(5, 2, 3), (2, 3, 4)], "einsum(): dimension 0 covered by ellipsis in "
                                            "operand 1has size 2 which does not broadcast with "
                                            "previously seen ellipsis with size 5 for the "
                                            "respective dimension"),
])
def test_einsum_errors(equation, shapes, message):
    with pytest.raises(RuntimeError) as info:
        mt.einsum(equation, *[mt.zeros(*shape) for shape in shapes])
    assert str(info.value).startswith(message)


def test_einsum_dtype_mismatch():
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        mt.einsum("ij,jk", mt.zeros(2, 3), mt.zeros(3, 4, dtype=mt.float64))


@pytest.mark.parametrize("equation,shapes", [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("bij,bjk->bik", [(2, 2, 3), (2, 3, 4)]),
    ("ii->i", [(3, 3)]), ("...ij,...jk", [(2, 1, 2, 3), (3, 3, 2)]), ("Bi,bj", [(4, 2), (4, 3)]),
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]), ("ij,jk->ik", [(2, 1), (3, 4)]),
])
def test_einsum_matches_torch(equation, shapes, rng):
    torch = pytest.importorskip("torch")
    arrays = _arrays(rng, *shapes)
    ours = _tensors(arrays, requires_grad=True)
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, expected = mt.einsum(equation, *ours), torch.einsum(equation, *theirs)
    np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), rtol=1e-12)
    out.sum().backward()
    expected.sum().backward()
    for t, r in zip(ours, theirs):
        np.testing.assert_allclose(t.grad.numpy(), r.grad.numpy(), rtol=1e-12)
