"""The Tensor method surface: aliases and in-place forms of existing ops, addmv / addr / addbmm,
in-place view ops; and the index ops index_fill, index_copy, masked_scatter, fill_diagonal_,
select/slice/diagonal_scatter and scatter_reduce (with the scatter_reduce kernel on both
backends), against torch, with gradients."""
import numpy as np
import pytest

import minitorch as mt
from minitorch import _cpu
from minitorch.autograd import gradcheck, gradgradcheck
from minitorch.opcodes import ReduceOp

import cuda_emulator
from torch_parity import same_error, value

torch = pytest.importorskip("torch")
REDUCES = ["sum", "prod", "mean", "amax", "amin"]


def pair(array, device, requires_grad=False):
    """The same array as a minitorch tensor on `device` and as a torch tensor."""
    return (mt.tensor(array, device=device, requires_grad=requires_grad),
            torch.tensor(array, requires_grad=requires_grad))


def assert_same(ours, theirs):
    assert ours.dtype.name == str(theirs.dtype).replace("torch.", "")
    np.testing.assert_allclose(value(ours), theirs.detach().numpy(), rtol=1e-6)


# ---- aliases and in-place forms ---------------------------------------------------------------
@pytest.mark.parametrize("name,other", [
    ("absolute_", None), ("negative_", None), ("divide_", 2.0), ("multiply_", 3.0),
    ("subtract_", 1.5), ("true_divide_", 4.0), ("floor_divide_", 0.7), ("fmod_", 0.7),
    ("remainder_", 0.7), ("atan2_", "t"), ("arctan2_", "t"), ("eq_", "t"), ("ne_", 0.5),
    ("lt_", "t"), ("le_", 0.0), ("gt_", "t"), ("ge_", 0.0), ("greater_equal_", "t"),
    ("less_equal_", "t"), ("not_equal_", "t"), ("greater_", 0.1), ("less_", 0.1),
    ("logical_and_", "t"), ("logical_or_", "t"), ("logical_xor_", "t"), ("logical_not_", None),
    ("erf_", None), ("float_power_", 2.0), ("clamp_min_", 0.0), ("clamp_max_", 0.0),
    ("square_", None), ("cumsum_", 1), ("cumprod_", 0)])
def test_inplace_forms_match_torch(device, name, other):
    x = np.array([[0.5, -1.25, 0.0], [2.0, 0.5, -3.0]])
    y = np.array([[0.5, 1.0, 0.0], [-2.0, 0.25, 3.0]])
    ours, theirs = pair(x, device)
    args = () if other is None else (other,)
    our_args = tuple(mt.tensor(y, device=device) if a == "t" else a for a in args)
    their_args = tuple(torch.tensor(y) if a == "t" else a for a in args)
    assert getattr(ours, name)(*our_args) is ours
    getattr(theirs, name)(*their_args)
    assert_same(ours, theirs)


@pytest.mark.parametrize("name", ["bitwise_and_", "bitwise_or_", "bitwise_xor_",
                                  "bitwise_left_shift_", "bitwise_right_shift_", "eq_",
                                  "logical_and_", "remainder_"])
def test_integer_inplace_forms_match_torch(device, name):
    ours, theirs = pair(np.array([5, 12, -7, 3]), device)
    getattr(ours, name)(mt.tensor([3, 1, 2, 3], device=device))
    getattr(theirs, name)(torch.tensor([3, 1, 2, 3]))
    assert_same(ours, theirs)


def test_function_aliases_are_torch_names():
    assert mt.arctan2 is mt.atan2 and mt.greater_equal is mt.ge
    assert mt.less_equal is mt.le and mt.not_equal is mt.ne


def test_inplace_errors_match_torch():
    same_error(lambda lib: lib.arange(3).divide_(2))
    same_error(lambda lib: lib.ones(3).float_power_(2))
    same_error(lambda lib: lib.ones(3, requires_grad=True).negative_())
    same_error(lambda lib: lib.ones(2, 3, requires_grad=True).t_())


def test_inplace_form_records_the_op():
    x = mt.tensor([0.5, 1.5], dtype=mt.float64, requires_grad=True)
    y = x * 1
    y.subtract_(x * x)
    y.sum().backward()
    np.testing.assert_allclose(value(x.grad), [0.0, -2.0])


def test_metadata_methods(device):
    x = mt.zeros(2, 3, device=device)
    assert x.get_device() == (-1 if device == "cpu" else 0)
    assert x.type_as(mt.tensor([1])).dtype is mt.int64
    assert x.is_signed() and not mt.tensor([True]).is_signed() and not x.is_complex()
    assert x.is_same_size(mt.ones(2, 3)) and not x.is_same_size(mt.ones(3, 2))
    assert x.nelement() == 6 and x.ndimension() == 2 and x.element_size() == 4
    assert mt.tensor([2.0]).is_nonzero() and not mt.tensor(0).is_nonzero()
    same_error(lambda lib: lib.ones(2).is_nonzero())
    assert x.ravel().shape == (6,)


def test_inplace_view_ops(device):
    for name, args in (("t_", ()), ("transpose_", (0, 1)), ("swapaxes_", (1, 0)),
                       ("swapdims_", (0, 1)), ("unsqueeze_", (1,)), ("squeeze_", ()),
                       ("as_strided_", ((2, 2), (1, 2)))):
        ours, theirs = pair(np.arange(6.0).reshape(2, 3), device)
        version = ours._version_counter
        assert getattr(ours, name)(*args) is ours
        getattr(theirs, name)(*args)
        assert ours.shape == theirs.shape and ours.stride() == theirs.stride()
        assert_same(ours, theirs)
        assert ours._version_counter == version + 1


def test_inplace_view_op_keeps_the_graph():
    x = mt.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    y = x * 1
    y.t_()
    (y * mt.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])).sum().backward()
    np.testing.assert_allclose(value(x.grad), [[1, 3, 5], [2, 4, 6]])


@pytest.mark.parametrize("name,shapes", [("addmv", [(3,), (3, 4), (4,)]),
                                         ("addr", [(3, 4), (3,), (4,)]),
                                         ("addbmm", [(1, 4), (2, 3, 5), (2, 5, 4)]),
                                         ("addmm", [(3, 4), (3, 2), (2, 4)]),
                                         ("baddbmm", [(2, 3, 4), (2, 3, 2), (2, 2, 4)])])
def test_added_products_match_torch(device, name, shapes, rng):
    arrays = [rng.standard_normal(s) for s in shapes]
    ours = [mt.tensor(a, device=device) for a in arrays]
    theirs = [torch.tensor(a) for a in arrays]
    assert_same(getattr(ours[0], name)(*ours[1:], beta=0.5, alpha=2),
                getattr(theirs[0], name)(*theirs[1:], beta=0.5, alpha=2))
    if name in ("addmv", "addr", "addbmm"):
        assert gradcheck(lambda *t: getattr(t[0], name)(*t[1:], beta=0.5, alpha=2),
                         tuple(mt.tensor(a, device=device, requires_grad=True) for a in arrays))
    if shapes[0] == (3, 4) and name != "addmm":
        target, target_t = ours[0].clone(), theirs[0].clone()
        getattr(target, name + "_")(*ours[1:])
        getattr(target_t, name + "_")(*theirs[1:])
        assert_same(target, target_t)


def test_added_product_with_beta_zero_ignores_input():
    out = mt.full((2,), float("nan")).addmv(mt.ones(2, 2), mt.ones(2), beta=0)
    np.testing.assert_array_equal(value(out), [2.0, 2.0])
    same_error(lambda lib: lib.zeros(2, 2).addr(lib.ones(2, 2), lib.ones(2)))
    same_error(lambda lib: lib.zeros(2, 2).addbmm(lib.ones(2, 2), lib.ones(2, 2, 2)))
    same_error(lambda lib: lib.zeros(3).addr(lib.ones(2), lib.ones(2)))


# ---- index_fill / index_copy / masked_scatter -------------------------------------------------
def test_index_fill_and_copy_match_torch(device, rng):
    x = rng.standard_normal((4, 3))
    index = np.array([2, -1, 0])
    for dim in (0, 1, -1):
        ours, theirs = pair(x, device)
        i, ti = mt.tensor(index, device=device), torch.tensor(index)
        assert_same(ours.index_fill(dim, i, 7.0), theirs.index_fill(dim, ti, 7.0))
        source = rng.standard_normal((3, 3) if dim == 0 else (4, 3))
        copy_index = np.array([3, 0, 1]) if dim == 0 else np.array([2, 0, 1])
        assert_same(ours.index_copy(dim, mt.tensor(copy_index, device=device),
                                    mt.tensor(source, device=device)),
                    theirs.index_copy(dim, torch.tensor(copy_index), torch.tensor(source)))
    ours, theirs = pair(x, device)
    ours.index_fill_(1, mt.tensor(1, device=device), mt.tensor(-2.0))
    theirs.index_fill_(1, torch.tensor(1), torch.tensor(-2.0))
    assert_same(ours, theirs)
    ours, theirs = pair(np.arange(4), device)
    assert_same(ours.index_fill(0, mt.tensor([1, 3], device=device), 2.5),
                theirs.index_fill(0, torch.tensor([1, 3]), 2.5))


def test_index_fill_and_copy_gradients(device, rng):
    x = mt.tensor(rng.standard_normal((3, 4)), device=device, requires_grad=True)
    t = x.t()          # non-contiguous input
    fill = mt.tensor(1.5, device=device, dtype=mt.float64, requires_grad=True)
    index = mt.tensor([0, 2], device=device)
    assert gradcheck(lambda a, v: a.index_fill(0, index, v), (t, fill))
    source = mt.tensor(rng.standard_normal((3, 2)), device=device, requires_grad=True)
    assert gradcheck(lambda a, s: a.index_copy(1, mt.tensor([2, 0], device=device), s),
                     (x.t().t(), source[:, :].t().t()))
    assert gradgradcheck(lambda a, s: a.index_copy(1, mt.tensor([2, 0], device=device), s) ** 2,
                         (x, source))
    scalar = mt.tensor(2.0, dtype=mt.float64, device=device, requires_grad=True)
    assert gradcheck(lambda a: a.index_fill(0, mt.tensor([0], device=device), 3.0), (scalar,))
    empty = mt.zeros(0, 3, dtype=mt.float64, device=device, requires_grad=True)
    assert gradcheck(lambda a: a.index_fill(1, mt.tensor([1], device=device), 3.0), (empty,))


def test_index_fill_and_copy_errors_match_torch():
    x = lambda lib: lib.zeros(3, 4)   # noqa: E731
    same_error(lambda lib: x(lib).index_fill(0, lib.tensor([0.0]), 1))
    same_error(lambda lib: x(lib).index_fill(0, lib.tensor([[0]]), 1))
    same_error(lambda lib: x(lib).index_fill(0, lib.tensor([5]), 1))
    same_error(lambda lib: x(lib).index_fill(0, lib.tensor([-4]), 1))
    same_error(lambda lib: x(lib).index_fill(2, lib.tensor([0]), 1))
    same_error(lambda lib: x(lib).index_fill(0, lib.tensor([0]), lib.tensor([1.0, 2.0])))
    same_error(lambda lib: x(lib).index_copy(0, lib.tensor([0.0]), lib.ones(1, 4)))
    same_error(lambda lib: x(lib).index_copy(0, lib.tensor([0]), lib.ones(1, 4).double()))
    same_error(lambda lib: x(lib).index_copy(0, lib.tensor([0]), lib.ones(1, 3)))
    same_error(lambda lib: x(lib).index_copy(0, lib.tensor([0, 1]), lib.ones(1, 4)))
    same_error(lambda lib: x(lib).index_copy(0, lib.tensor([[0]]), lib.ones(1, 4)))
    same_error(lambda lib: x(lib).index_copy(0, lib.tensor([7]), lib.ones(1, 4)))
    same_error(lambda lib: x(lib).index_copy(0, lib.tensor([0]), lib.ones(4)))


def test_masked_scatter_matches_torch(device, rng):
    x = rng.standard_normal((3, 4))
    source = rng.standard_normal(20)
    for mask in (rng.random((3, 4)) < 0.5, np.array([True, False, True, True]),
                 rng.random((2, 3, 4)) < 0.5):
        ours, theirs = pair(x, device)
        assert_same(ours.masked_scatter(mt.tensor(mask, device=device),
                                        mt.tensor(source, device=device)),
                    theirs.masked_scatter(torch.tensor(mask), torch.tensor(source)))
    ours, theirs = pair(x, device)
    ours.masked_scatter_(mt.tensor(x > 0, device=device), mt.tensor(source, device=device))
    theirs.masked_scatter_(torch.tensor(x > 0), torch.tensor(source))
    assert_same(ours, theirs)
    mask = mt.tensor(x > 0, device=device)
    a = mt.tensor(x, device=device, requires_grad=True)
    s = mt.tensor(source.reshape(4, 5), device=device, requires_grad=True)
    assert gradcheck(lambda a, s: a.t().masked_scatter(mask.t(), s), (a, s))
    same_error(lambda lib: lib.zeros(3, 4).masked_scatter(lib.ones(3, 4), lib.ones(12)))
    same_error(lambda lib: lib.zeros(2).masked_scatter(lib.ones(2).bool(), lib.ones(2).double()))
    same_error(lambda lib: lib.zeros(3, 4).masked_scatter(lib.ones(3, 4).bool(), lib.ones(11)))
    same_error(lambda lib: lib.zeros(3, 4).masked_scatter(lib.ones(5).bool(), lib.ones(30)))


# ---- fill_diagonal_ / select_scatter / slice_scatter / diagonal_scatter -----------------------
@pytest.mark.parametrize("shape,wrap", [((3, 3), False), ((7, 3), True), ((7, 3), False),
                                        ((3, 5), True), ((2, 2, 2), False), ((0, 2), False)])
def test_fill_diagonal_matches_torch(device, shape, wrap):
    ours, theirs = pair(np.zeros(shape), device)
    assert ours.fill_diagonal_(2.5, wrap=wrap) is ours
    theirs.fill_diagonal_(2.5, wrap=wrap)
    assert_same(ours, theirs)


def test_fill_diagonal_gradient_and_errors(device):
    x = mt.tensor(np.ones((3, 3)), device=device, requires_grad=True)
    y = x * 2
    y.fill_diagonal_(0.0)
    y.sum().backward()
    np.testing.assert_allclose(value(x.grad), 2 * (1 - np.eye(3)))
    same_error(lambda lib: lib.zeros(3).fill_diagonal_(1))
    same_error(lambda lib: lib.zeros(3, 3, 4).fill_diagonal_(1))


@pytest.mark.parametrize("name,src_shape,args", [
    ("select_scatter", (4,), (0, 1)), ("select_scatter", (3,), (1, -1)),
    ("slice_scatter", (3, 2), (1, 0, 4, 2)), ("slice_scatter", (1, 4), (0, -1)),
    ("slice_scatter", (3, 0), (1, 10, 20)), ("diagonal_scatter", (3,), ()),
    ("diagonal_scatter", (3,), (1,)), ("diagonal_scatter", (3,), (-1, 1, 0))])
def test_view_scatters_match_torch(device, name, src_shape, args, rng):
    x, src = rng.standard_normal((3, 4)), rng.standard_normal(src_shape)
    (ours, theirs), (s, ts) = pair(x, device), pair(src, device)
    assert_same(getattr(mt, name)(ours, s, *args), getattr(torch, name)(theirs, ts, *args))
    assert_same(getattr(ours, name)(s.float(), *args), getattr(torch, name)(theirs, ts, *args))
    a = mt.tensor(x.T, device=device, requires_grad=True).t()      # non-contiguous
    b = mt.tensor(src, device=device, requires_grad=True)
    assert gradcheck(lambda a, b: getattr(mt, name)(a, b, *args), (a, b))
    assert gradgradcheck(lambda a, b: getattr(mt, name)(a, b, *args) ** 2, (a, b))


def test_view_scatter_errors_match_torch():
    x = lambda lib: lib.zeros(3, 4)   # noqa: E731
    same_error(lambda lib: lib.select_scatter(x(lib), lib.ones(4), 0, 3))
    same_error(lambda lib: lib.select_scatter(x(lib), lib.ones(5), 0, 0))
    same_error(lambda lib: lib.select_scatter(x(lib), lib.ones(4), 2, 0))
    same_error(lambda lib: lib.slice_scatter(x(lib), lib.ones(3, 3), 1, 0, 4, 2))
    same_error(lambda lib: lib.slice_scatter(x(lib), lib.ones(3, 2), 1, step=0))
    same_error(lambda lib: lib.diagonal_scatter(x(lib), lib.ones(4)))
    same_error(lambda lib: lib.diagonal_scatter(x(lib), lib.ones(3), 0, 0, 0))


# ---- scatter_reduce ---------------------------------------------------------------------------
def reduce_case(rng, dtype=np.float64):
    """self (3, 4) with ties and zeros, src (5, 4) and an index onto 3 rows (some unused)."""
    x = rng.integers(-3, 4, (3, 4)).astype(dtype)
    src = rng.integers(-3, 4, (5, 4)).astype(dtype)
    index = rng.integers(0, 2, (5, 4))
    return x, src, index


@pytest.mark.parametrize("reduce", REDUCES)
@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.uint8, np.float32])
def test_scatter_reduce_matches_torch(device, reduce, dtype, rng):
    x, src, index = reduce_case(rng, dtype)
    if dtype == np.float32:
        src[1, 2], x[0, 3] = np.nan, np.nan
    for include_self in (True, False):
        (ours, theirs), (s, ts) = pair(x, device), pair(src, device)
        i, ti = mt.tensor(index, device=device), torch.tensor(index)
        assert_same(ours.scatter_reduce(0, i, s, reduce, include_self=include_self),
                    theirs.scatter_reduce(0, ti, ts, reduce, include_self=include_self))
        assert_same(ours.t().scatter_reduce(1, i[:3].t(), s.t(), reduce,
                                            include_self=include_self),
                    theirs.t().scatter_reduce(1, ti[:3].t(), ts.t(), reduce,
                                              include_self=include_self))
    ours.scatter_reduce_(0, i, s, reduce)
    theirs.scatter_reduce_(0, ti, ts, reduce)
    assert_same(ours, theirs)


@pytest.mark.parametrize("reduce", REDUCES)
def test_scatter_reduce_gradients_match_torch(device, reduce, rng):
    x, src, index = reduce_case(rng)
    x[0, 0], src[0, 1] = 0.0, 0.0
    for include_self in (True, False):
        (a, ta), (s, ts) = pair(x, device, True), pair(src, device, True)
        weight = rng.standard_normal((3, 4))
        out = a.scatter_reduce(0, mt.tensor(index, device=device), s, reduce,
                               include_self=include_self)
        expected = ta.scatter_reduce(0, torch.tensor(index), ts, reduce,
                                     include_self=include_self)
        (out * mt.tensor(weight, device=device)).sum().backward()
        (expected * torch.tensor(weight)).sum().backward()
        np.testing.assert_allclose(value(a.grad), ta.grad.numpy(), atol=1e-12)
        np.testing.assert_allclose(value(s.grad), ts.grad.numpy(), atol=1e-12)


@pytest.mark.parametrize("reduce", REDUCES)
def test_scatter_reduce_gradcheck(device, reduce, rng):
    """Distinct values (no ties, no zeros) where finite differences are defined."""
    x = rng.permutation(12).reshape(3, 4) / 4.0 + 0.5
    src = rng.permutation(20).reshape(4, 5) / 5.0 + 0.3
    index = mt.tensor(rng.integers(0, 3, (5, 4)), device=device)
    a = mt.tensor(x.T, device=device, requires_grad=True).t()       # non-contiguous
    s = mt.tensor(src, device=device, requires_grad=True).t()
    for include_self in (True, False):
        fn = lambda a, s: a.scatter_reduce(0, index, s, reduce,   # noqa: E731
                                           include_self=include_self)
        assert gradcheck(fn, (a, s))
    assert gradgradcheck(lambda a, s: a.scatter_reduce(0, index, s, reduce), (a, s))
    zero_d = mt.tensor(1.5, dtype=mt.float64, device=device, requires_grad=True)
    assert gradcheck(lambda a: a.scatter_reduce(0, mt.tensor(0, device=device), a * 2, reduce),
                     (zero_d,))
    empty = mt.zeros(3, 0, dtype=mt.float64, device=device, requires_grad=True)
    assert gradcheck(lambda a: a.scatter_reduce(1, mt.zeros(3, 0, dtype=mt.int64,
                                                            device=device), a, reduce), (empty,))


@pytest.mark.filterwarnings("ignore:The reduce argument of torch.scatter")
def test_scatter_multiply_and_reduce_errors_match_torch(device):
    ours, theirs = pair(np.ones((3, 4)), device)
    index = [[1, 0], [1, 2]]
    assert_same(ours.scatter(0, mt.tensor(index, device=device), 2.0, reduce="multiply"),
                theirs.scatter(0, torch.tensor(index), 2.0, reduce="multiply"))
    ours.scatter_(0, mt.tensor(index, device=device),
                  mt.full((2, 2), 3.0, dtype=mt.float64, device=device), reduce="multiply")
    theirs.scatter_(0, torch.tensor(index), torch.full((2, 2), 3.0, dtype=torch.float64),
                    reduce="multiply")
    assert_same(ours, theirs)
    x = lambda lib: lib.zeros(3, 4)   # noqa: E731
    same_error(lambda lib: x(lib).scatter_reduce(0, lib.tensor([[0]]), lib.ones(1, 1), "foo"))
    same_error(lambda lib: x(lib).scatter_reduce(0, lib.tensor([[5]]), lib.ones(1, 1), "amax"))
    same_error(lambda lib: x(lib).scatter_reduce(0, lib.tensor([[-1]]), lib.ones(1, 1), "prod"))
    same_error(lambda lib: x(lib).scatter_reduce(0, lib.tensor([[0]]), lib.ones(1, 1).double(),
                                                 "amin"))
    same_error(lambda lib: lib.ones(2).bool().scatter_reduce(
        0, lib.tensor([0]), lib.ones(1).bool(), "mean"))


# ---- the scatter_reduce kernel on both backends -----------------------------------------------
def kernel_case(dtype, seed):
    rng = np.random.default_rng(seed)
    src = (rng.standard_normal(2 * 6 * 5) * 3).astype(dtype)
    out = (rng.standard_normal(2 * 4 * 5) * 3).astype(dtype)
    if dtype in (np.float32, np.float64):
        src[7], out[3] = np.nan, np.nan
    return src, rng.integers(0, 4, 2 * 6 * 5), out      # (outer 2, dim 4 / 6, inner 5)


def test_cpu_kernel_reduces_in_order():
    out = np.array([np.nan, 1.0, 5.0])
    _cpu.scatter_reduce(ReduceOp.MAX, np.array([1.0, 2.0, 3.0, 7.0]), np.array([0, 0, 1, 1]),
                        out, 1, 3, 4, 1)
    np.testing.assert_array_equal(out, [np.nan, 7.0, 5.0])
    out = np.array([1, 2], np.uint8)
    _cpu.scatter_reduce(ReduceOp.PROD, np.array([200, 100], np.uint8), np.array([0, 0]), out,
                        1, 2, 2, 1)
    np.testing.assert_array_equal(out, [32, 2])       # 20000 mod 256, as torch's uint8
    with pytest.raises(ValueError, match="PROD, MAX and MIN"):
        _cpu.scatter_reduce(ReduceOp.SUM, out, np.array([0]), out, 1, 2, 1, 1)
    with pytest.raises(IndexError, match="index 2 is out of bounds"):
        _cpu.scatter_reduce(ReduceOp.MAX, out, np.array([2, 0]), out, 1, 2, 2, 1)


def test_emulated_gpu_kernel_matches_cpu():
    from minitorch._gpu.backend import GpuBackend
    emulated = cuda_emulator.cupy_module()
    gpu = GpuBackend(emulated, 0)
    run = cuda_emulator.can_execute()
    for dtype in (np.float32, np.float64, np.int64, np.uint8):
        for op in (ReduceOp.PROD, ReduceOp.MAX, ReduceOp.MIN):
            src, index, out = kernel_case(dtype, int(op))
            want = out.copy()
            _cpu.scatter_reduce(op, src, index, want, 2, 4, 6, 5)
            got = gpu.from_host(out)
            gpu.scatter_reduce(op, gpu.from_host(src), gpu.from_host(index), got, 2, 4, 6, 5)
            if run:     # products may be formed in another order on a GPU
                np.testing.assert_allclose(gpu.to_host(got), want, rtol=1e-6)
    assert emulated.launches
    for op, index in ((ReduceOp.SUM, np.array([0])), (ReduceOp.MAX, np.array([2, 0]))):
        buffer = np.zeros(2)
        with pytest.raises((ValueError, IndexError)) as cpu_error:
            _cpu.scatter_reduce(op, buffer, index, buffer.copy(), 1, 2, index.size, 1)
        with pytest.raises(type(cpu_error.value)) as gpu_error:
            gpu.scatter_reduce(op, gpu.from_host(buffer), gpu.from_host(index),
                               gpu.from_host(buffer), 1, 2, index.size, 1)
        assert str(gpu_error.value) == str(cpu_error.value)
