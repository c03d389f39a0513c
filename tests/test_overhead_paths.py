"""The per-op fast paths for small tensors (docs/benchmarks.md, "Per-op overhead"): unrecorded
views built without their Function, one-element reads in place, the unparsed Ellipsis key,
gather's shape checks, one-axis reductions, remembered broadcasts, kernel-only float
arithmetic, the single saved output, needs_input_grad from the edges, and a leaf's gradient
summed into .grad by one kernel. Each is checked against numpy, against the recorded path's
gradients (gradcheck in float64), over non-contiguous / broadcast / 0-d / empty inputs, and for
torch's errors."""
import numpy as np
import pytest

import minitorch as mt
from minitorch.autograd import gradcheck, gradgradcheck


def _values(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def _strided(values, device):
    """A non-contiguous tensor holding `values`: a transposed view of a compact leaf."""
    return mt.tensor(np.ascontiguousarray(values.T), device=device).T


# ---- unrecorded views ---------------------------------------------------------------------------
_VIEW_OPS = {
    "reshape": (lambda t: t.reshape(-1, 2), lambda a: a.reshape(-1, 2)),
    "view": (lambda t: t.view(3, 4), lambda a: a.reshape(3, 4)),
    "expand": (lambda t: t[:1].expand(5, 4), lambda a: np.broadcast_to(a[:1], (5, 4))),
    "squeeze": (lambda t: t[:, :1].squeeze(-1), lambda a: a[:, :1].squeeze(-1)),
    "squeeze_all": (lambda t: t[:1].squeeze(), lambda a: a[:1].squeeze()),
    "unsqueeze": (lambda t: t.unsqueeze(1), lambda a: a[:, None]),
    "transpose": (lambda t: t.transpose(0, 1), lambda a: a.T),
    "t": (lambda t: t.t(), lambda a: a.T),
}


# the ops above applied to the leaf itself (the others view a slice of it, or overlap)
_OF_THE_LEAF = ("reshape", "view", "unsqueeze", "transpose", "t")


@pytest.mark.parametrize("name", sorted(_VIEW_OPS))
@pytest.mark.parametrize("grad", [False, True])
def test_views_match_numpy_and_share_storage(name, grad, device):
    op, reference = _VIEW_OPS[name]
    leaf = mt.tensor(_values(3, 4), device=device, requires_grad=grad)
    with mt.no_grad():      # unrecorded: the fast path, also for a leaf requiring grad
        out = op(leaf)
    np.testing.assert_array_equal(out.cpu().numpy(), reference(leaf.detach().cpu().numpy()))
    assert out.grad_fn is None and not out.requires_grad
    assert out._data.buffer is leaf._data.buffer        # a view of the same memory
    if name in _OF_THE_LEAF and grad:
        # torch refuses an in-place write through a no_grad view of a leaf requiring grad
        with pytest.raises(RuntimeError, match="A view was created in no_grad mode"):
            out.mul_(2)
    elif name in _OF_THE_LEAF:
        out.mul_(2)     # a view: the write is seen through the base, version counter shared
        assert leaf._version_counter == out._version_counter == 1


@pytest.mark.parametrize("name", sorted(_VIEW_OPS))
def test_views_of_non_contiguous_inputs(name, device):
    op, reference = _VIEW_OPS[name]
    values = _values(3, 4)
    np.testing.assert_array_equal(op(_strided(values, device)).cpu().numpy()
                                  if name not in ("view",) else
                                  op(_strided(values, device).contiguous()).cpu().numpy(),
                                  reference(values))


@pytest.mark.parametrize("name", sorted(_VIEW_OPS))
def test_views_recorded_gradients(name):
    op, _ = _VIEW_OPS[name]
    leaf = mt.tensor(_values(3, 4), requires_grad=True)
    assert op(leaf).grad_fn is not None
    assert gradcheck(lambda x: op(x) * 1.5, (leaf,))
    assert gradgradcheck(lambda x: op(x) ** 2, (leaf,))


def test_views_of_0d_and_empty():
    scalar, empty = mt.tensor(2.5), mt.zeros(0, 3)
    assert scalar.reshape(1).tolist() == [2.5] and scalar.view(1, 1).shape == (1, 1)
    assert scalar.unsqueeze(0).shape == (1,) and scalar.t().shape == ()
    assert scalar.expand(3).tolist() == [2.5] * 3 and scalar.squeeze().shape == ()
    assert empty.reshape(3, 0).shape == (3, 0) and empty.t().shape == (3, 0)
    assert empty.transpose(0, 1).shape == (3, 0) and empty.unsqueeze(-1).shape == (0, 3, 1)
    assert empty.expand(2, 0, 3).shape == (2, 0, 3)


def test_view_errors_match_torch():
    x = mt.arange(12.).reshape(4, 3)
    with pytest.raises(RuntimeError, match=r"shape '\[5, -1\]' is invalid for input of size 12"):
        x.reshape(5, -1)
    with pytest.raises(RuntimeError, match="view size is not compatible with input tensor's"):
        x.t().view(12)
    with pytest.raises(RuntimeError, match=r"The expanded size of the tensor \(4\) must match "
                                           r"the existing size \(3\) at non-singleton dimension 2"):
        x.expand(2, 4, 4)
    with pytest.raises(TypeError, match="must be tuple of ints, but found element of type bool"):
        x.view(True, 12)
    for call in (lambda: x.squeeze(2), lambda: x.transpose(0, 2)):
        with pytest.raises(IndexError, match=r"expected to be in range of \[-2, 1\], but got 2"):
            call()
    with pytest.raises(IndexError, match=r"expected to be in range of \[-3, 2\], but got 3"):
        x.unsqueeze(3)
    with pytest.raises(RuntimeError, match="t\\(\\) expects a tensor with <= 2 dimensions"):
        mt.zeros(2, 2, 2).t()


def test_views_record_for_the_profiler():
    x = mt.randn(3, 4)
    with mt.autograd.profiler.profile() as prof:
        x.reshape(4, 3).t().unsqueeze(0).squeeze(0).transpose(0, 1).expand(2, 4, 3)
    names = {event.name for event in prof.function_events}
    assert {"aten::view", "aten::t", "aten::unsqueeze", "aten::transpose", "aten::expand"} <= names
    assert any(name.startswith("aten::squeeze") for name in names)


# ---- one element read in place ------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64", "int32",
                                   "int8", "uint8", "bool", "complex64"])
def test_item_of_every_dtype(dtype):
    values = np.array([0, 1, 3, 2]) if dtype != "complex64" else np.array([0, 1j, 3 - 2j, 2])
    t = mt.tensor(values).to(getattr(mt, dtype))
    element = t[2:].t()[0]      # an offset into the buffer
    expected = {"bool": True, "complex64": 3 - 2j}.get(dtype, 3)
    assert element.item() == expected and type(element.item()) is type(
        mt.tensor(values).to(getattr(mt, dtype)).tolist()[2])
    assert bool(t[1]) is True and bool(t[0]) is False


def test_item_and_bool_errors_match_torch():
    with pytest.raises(RuntimeError, match="a Tensor with 12 elements cannot be converted to "
                                           "Scalar"):
        mt.zeros(4, 3).item()
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with more than one value is "
                                           "ambiguous"):
        bool(mt.zeros(2))
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with no values is ambiguous"):
        bool(mt.zeros(0))
    with pytest.raises(ValueError, match="only one element tensors can be converted"):
        float(mt.zeros(2))


# ---- getitem with a leading Ellipsis ------------------------------------------------------------
_ELLIPSIS_KEYS = [(Ellipsis,), (Ellipsis, 0), (Ellipsis, slice(None, 1)), (Ellipsis, 1, 2),
                  (Ellipsis, 0, 1, 2), (Ellipsis, -1, slice(1, None, 2)), Ellipsis]


@pytest.mark.parametrize("key", _ELLIPSIS_KEYS, ids=str)
def test_leading_ellipsis_keys(key, device):
    values = np.arange(24.).reshape(2, 3, 4)
    strided = mt.tensor(values.transpose(2, 1, 0).copy(), device=device).permute(2, 1, 0)
    for t in (mt.tensor(values, device=device), strided):
        np.testing.assert_array_equal(t[key].cpu().numpy(), values[key])
    leaf = mt.tensor(values, requires_grad=True)
    assert gradcheck(lambda x: x[key] * 2, (leaf,))


def test_leading_ellipsis_of_0d_and_errors():
    scalar = mt.tensor(4.0)
    assert scalar[...].shape == () and scalar[...].item() == 4.0
    x = mt.zeros(4, 3)
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 2"):
        x[..., 0, 1, 2]
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 1 with size 3"):
        x[..., 5]


# ---- gather and the index kernels' errors -------------------------------------------------------
def test_gather_matches_numpy(device):
    values, index = _values(4, 3), np.array([[2, 0], [1, 1], [0, 2], [2, 2]])
    for m in (mt.tensor(values, device=device), _strided(values, device)):
        for dim, idx in ((1, index), (0, index.T[:, :3] % 4)):
            out = m.gather(dim, mt.tensor(idx, device=device))
            np.testing.assert_array_equal(out.cpu().numpy(), np.take_along_axis(values, idx, dim))
    out = mt.tensor(values, device=device).gather(-1, mt.tensor(index, device=device).int())
    np.testing.assert_array_equal(out.cpu().numpy(), np.take_along_axis(values, index, 1))
    assert mt.tensor(5.0).gather(0, mt.tensor(0)).item() == 5.0     # 0-d
    assert mt.zeros(4, 3).gather(1, mt.zeros(4, 0, dtype=mt.int64)).shape == (4, 0)


def test_gather_gradients():
    index = mt.tensor([[2, 0], [1, 1], [0, 2], [2, 2]])
    leaf = mt.tensor(_values(4, 3), requires_grad=True)
    assert gradcheck(lambda x: x.gather(1, index), (leaf,))
    assert gradgradcheck(lambda x: x.gather(1, index) ** 2, (leaf,))


def _scatter_add_reference(base, dim, index, src):
    out = base.copy()
    for position in np.ndindex(*index.shape):
        target = list(position)
        target[dim] = index[position]
        out[tuple(target)] += src[position]
    return out


@pytest.mark.parametrize("index, src_shape", [(np.array([[2, 0], [1, 1], [0, 2], [2, 2]]), (4, 2)),
                                              (np.array([[2, 0], [1, 1]]), (3, 3))],
                         ids=["every-other-axis-whole", "a leading block, larger src"])
def test_scatter_add_blocks(index, src_shape, device):
    base, src = _values(4, 3), _values(*src_shape, seed=5)
    out = mt.tensor(base, device=device).scatter_add(1, mt.tensor(index, device=device),
                                                     mt.tensor(src, device=device))
    np.testing.assert_allclose(out.cpu().numpy(), _scatter_add_reference(base, 1, index, src))


def test_gather_and_index_kernel_errors_match_torch():
    x = mt.arange(12.).reshape(4, 3)
    with pytest.raises(RuntimeError, match="index 3 is out of bounds for dimension 1 with size 3"):
        x.gather(1, mt.tensor([[3], [0], [0], [0]]))
    with pytest.raises(RuntimeError, match="gather\\(\\): Expected dtype int32/int64 for index"):
        x.gather(1, mt.tensor([[0.]]))
    with pytest.raises(RuntimeError, match="Index tensor must have the same number of dimensions"):
        x.gather(1, mt.tensor([0]))
    with pytest.raises(RuntimeError, match="Size does not match at dimension 0 expected index"):
        x.gather(1, mt.zeros(5, 1, dtype=mt.int64))
    with pytest.raises(IndexError, match=r"\(dimension 1 of a tensor of shape \[4, 3\]\)"):
        x._data.gather(1, mt.tensor([[3], [0], [0], [0]])._data)
    with pytest.raises(IndexError, match=r"\(dimension 0 of a tensor of shape \[4, 3\]\)"):
        x._data.index_select(0, mt.tensor([7])._data)


# ---- reductions over one axis -------------------------------------------------------------------
@pytest.mark.parametrize("dim", [0, 1, -1, 2])
@pytest.mark.parametrize("keepdim", [False, True])
def test_one_axis_reductions(dim, keepdim, device):
    values = _values(2, 3, 4)
    t = mt.tensor(values, device=device)
    np.testing.assert_allclose(t.sum(dim, keepdim=keepdim).cpu().numpy(),
                               values.sum(dim, keepdims=keepdim), rtol=1e-12)
    mask = t > 0
    np.testing.assert_array_equal(mask.all(dim, keepdim=keepdim).cpu().numpy(),
                                  (values > 0).all(dim, keepdims=keepdim))
    np.testing.assert_array_equal(t.argmax(dim, keepdim=keepdim).cpu().numpy(),
                                  np.expand_dims(values.argmax(dim), dim) if keepdim else
                                  values.argmax(dim))
    leaf = mt.tensor(values, requires_grad=True)
    assert gradcheck(lambda x: x.sum(dim, keepdim=keepdim), (leaf,))


@pytest.mark.parametrize("dim", [None, 0, (0, 2), (), [-1]])
def test_sum_unrecorded_equals_recorded(dim, device):
    # sum without a node (nothing records) and Sum's node give the same values and dtype; the
    # broadcast gradient's sum_to takes the same kernel-only path in a plain backward
    values = _values(2, 3, 4)
    t = _strided(values.transpose(2, 1, 0), device).permute(2, 1, 0)    # non-contiguous
    leaf = mt.tensor(values, device=device, requires_grad=True)
    plain, recorded = t.sum(dim), leaf.sum(dim)
    assert plain.grad_fn is None and recorded.grad_fn is not None
    np.testing.assert_allclose(plain.cpu().numpy(), recorded.detach().cpu().numpy(), rtol=1e-12)
    np.testing.assert_allclose(plain.cpu().numpy(),
                               values.sum(None if dim is None or dim == () else tuple(dim)
                                          if isinstance(dim, (tuple, list)) else dim),
                               rtol=1e-12)
    bias = mt.tensor(_values(4), device=device, requires_grad=True)
    (leaf * 2 + bias).sum().backward()
    np.testing.assert_array_equal(bias.grad.cpu().numpy(), np.full(4, 6.0))
    assert gradgradcheck(lambda x, b: (x * b).sum(), (leaf.detach().requires_grad_(),
                                                       bias.detach().requires_grad_()))
    assert mt.tensor([True, False, True], device=device).sum().item() == 2


def test_sum_records_for_the_profiler():
    x = mt.randn(3, 4)
    with mt.autograd.profiler.profile() as prof:
        x.sum(0)
    assert "aten::sum" in {event.name for event in prof.function_events}


def test_one_axis_reductions_of_empty_and_integer_inputs():
    assert mt.zeros(0, 3).sum(0).tolist() == [0.0] * 3
    assert mt.zeros(3, 0).sum(-1).tolist() == [0.0] * 3
    assert mt.zeros(3, 0).sum(0).shape == (0,)
    assert mt.tensor([[1, 2], [3, 4]]).sum(-1).tolist() == [3, 7]
    with pytest.raises(IndexError, match="max\\(\\): Expected reduction dim 0 to have non-zero"):
        mt.zeros(0, 3).max(0)


# ---- broadcasting binary ops and where ----------------------------------------------------------
_PAIRS = [((4, 3), (1, 3)), ((4, 3), (4, 1)), ((1, 3), (4, 1)), ((3,), (4, 3)), ((4, 3), ()),
          ((2, 1, 3), (4, 1)), ((0, 3), (1, 3)), ((4, 3), (4, 3))]


@pytest.mark.parametrize("shapes", _PAIRS, ids=str)
def test_broadcast_binary_matches_numpy(shapes, device):
    a, b = _values(*shapes[0], seed=1), _values(*shapes[1], seed=2)
    ta, tb = mt.tensor(a, device=device), mt.tensor(b, device=device)
    for _ in range(2):      # the second time, the remembered broadcast
        np.testing.assert_allclose((ta * tb).cpu().numpy(), a * b, rtol=1e-12)
        np.testing.assert_allclose((ta / tb).cpu().numpy(), a / b, rtol=1e-12)
        np.testing.assert_array_equal((ta >= tb).cpu().numpy(), a >= b)
        np.testing.assert_array_equal(mt.where(ta > 0, ta, tb).cpu().numpy(),
                                      np.where(a > 0, a, b))
    if len(shapes[0]) == 2 and shapes[0][0]:        # a non-contiguous left operand
        np.testing.assert_allclose((_strided(a, device) - tb).cpu().numpy(), a - b)


def test_broadcast_gradients():
    a = mt.tensor(_values(4, 3), requires_grad=True)
    b = mt.tensor(_values(4, 1, seed=3), requires_grad=True)
    assert gradcheck(lambda x, y: x * y / (y * y + 1) - x, (a, b))
    assert gradcheck(lambda x, y: mt.where(x > 0, x, y), (a, b))


def test_broadcast_errors_match_torch():
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(4\) must match the size of "
                                           r"tensor b \(2\) at non-singleton dimension 0"):
        mt.ones(4, 3) * mt.ones(2, 3)
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(4\) must match the size of "
                                           r"tensor b \(2\) at non-singleton dimension 0"):
        mt.where(mt.ones(4, 3) > 0, mt.ones(4, 3), mt.ones(2, 3))
    with pytest.raises(RuntimeError, match="where expected condition to be a boolean tensor"):
        mt.where(mt.ones(2), mt.ones(2), mt.ones(2))


def test_where_mixed_operands():
    c = mt.tensor([True, False])
    assert mt.where(c, mt.tensor([1, 2]), mt.tensor([0.5, 0.5])).tolist() == [1.0, 0.5]
    assert mt.where(c, mt.tensor([1., 2.]), 0.0).tolist() == [1.0, 0.0]
    assert mt.where(c, mt.ones(2, dtype=mt.float64), mt.zeros(2)).dtype is mt.float64


# ---- float arithmetic with Python numbers, promotion --------------------------------------------
def test_scalar_arithmetic(device):
    values = _values(5)
    x = mt.tensor(values, dtype=mt.float32, device=device)
    expected = values.astype(np.float32)
    for got, want in ((x * 2.0, expected * 2), (x - 1, expected - 1), (2.0 / x, 2 / expected),
                      (x / 4, expected / 4), (3 + x, expected + 3), (x.div(2), expected / 2)):
        assert got.dtype is mt.float32
        np.testing.assert_allclose(got.cpu().numpy(), want, rtol=1e-6)
    h = x.half()
    assert (h * 3.3).dtype is mt.float16 and (h - 1).dtype is mt.float16
    assert (mt.tensor([1, 2]) * 2.5).dtype is mt.float32     # promoted, not the fast path
    assert mt.tensor([1, 2]).div(2).tolist() == [0.5, 1.0]


def test_scalar_arithmetic_records_and_differentiates():
    leaf = mt.tensor(_values(5), requires_grad=True)
    assert (leaf * 2.0).grad_fn.name() == "MulBackward0"
    assert gradcheck(lambda x: (x * 2.0 - 1) / 3 + 1 / (x * x + 1), (leaf,))
    with mt.autograd.profiler.profile() as prof:
        mt.ones(3) * 2.0
    assert "aten::mul" in {event.name for event in prof.function_events}


def test_result_type_and_clamp():
    f, i = mt.ones(2), mt.ones(2, dtype=mt.int64)
    assert mt.result_type(f, 2.5) is mt.float32 and mt.result_type(i, 2.5) is mt.float32
    assert mt.result_type(i, np.float64(2.5)) is mt.float32
    assert mt.result_type(mt.tensor(1.0, dtype=mt.float64), f) is mt.float32
    assert mt.result_type(i, 2) is mt.int64 and mt.result_type(f, True) is mt.float32
    x = mt.tensor([-1.0, 0.5, 2.0])
    assert x.clamp(min=0.0, max=1.0).tolist() == [0.0, 0.5, 1.0]
    assert mt.tensor([-1, 5]).clamp(min=0.5).tolist() == [0.5, 5.0]
    with pytest.raises(TypeError, match="unsupported operand type: 'str'"):
        mt.result_type(x, "a")
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max' must not be None"):
        x.clamp()
    leaf = mt.tensor(_values(5), requires_grad=True)
    assert gradcheck(lambda t: t.clamp(min=-0.5, max=0.5), (leaf,))


def test_like_constructors():
    x = mt.tensor(_values(3, 4), dtype=mt.float32)
    for make, fill in ((mt.zeros_like, 0), (mt.ones_like, 1), (mt.empty_like, None)):
        out = make(x)
        assert out.shape == (3, 4) and out.dtype is mt.float32 and out.stride() == (4, 1)
        if fill is not None:
            assert (out == fill).all()
        assert make(x.t()).stride() == (1, 4)       # preserve_format keeps a dense layout
        assert make(x, dtype=mt.int64).dtype is mt.int64
        assert make(x, requires_grad=True).requires_grad
        assert make(x[:, :1]).stride() == (1, 1)
        assert make(mt.tensor(2.0)).shape == ()


# ---- recording: the saved output, needs_input_grad, leaf accumulation ---------------------------
def test_saved_output_alias():
    leaf = mt.tensor(_values(4), requires_grad=True)
    out = leaf.exp()
    out.sum().backward(retain_graph=True)
    out.sum().backward()
    np.testing.assert_allclose(leaf.grad.numpy(), 2 * np.exp(leaf.detach().numpy()))
    assert gradgradcheck(lambda x: x.exp().tanh(), (leaf,))
    y = leaf.exp()
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_needs_input_grad_is_read_from_the_edges():
    seen = []

    class Scale(mt.autograd.Function):
        @staticmethod
        def forward(ctx, x, y, factor):
            seen.append(ctx.needs_input_grad)       # () while forward runs
            return x * y * factor

        @staticmethod
        def backward(ctx, g):
            seen.append(ctx.needs_input_grad)
            return g, None, None

    x, y = mt.ones(2, requires_grad=True), mt.ones(2)
    Scale.apply(x, y, 3.0).sum().backward()
    assert seen == [(), (True, False, False)]


def test_leaf_gradients_accumulate_into_grad(device):
    leaf = mt.tensor(_values(3, 4), device=device, requires_grad=True)
    leaf.sum().backward()
    grad = leaf.grad
    version = grad._version_counter
    (leaf * 2).sum().backward()     # summed into the same memory, its version bumped
    assert leaf.grad is grad and grad._version_counter == version + 1
    np.testing.assert_array_equal(leaf.grad.cpu().numpy(), np.full((3, 4), 3.0))
    leaf.grad = mt.zeros(4, 3, dtype=mt.float64, device=device).t()     # non-contiguous: add_
    leaf.sum().backward()
    np.testing.assert_array_equal(leaf.grad.cpu().numpy(), np.ones((3, 4)))
    with mt.autograd.set_grad_enabled(True):
        leaf.grad = None
        leaf.sum().backward(create_graph=True)
        first = leaf.grad
        leaf.sum().backward(create_graph=True)      # with a graph being built: out of place
        assert leaf.grad is not first


def test_half_leaf_gradients_accumulate():
    leaf = mt.ones(3, dtype=mt.float16, requires_grad=True)
    for _ in range(3):
        (leaf * 0.5).sum().backward()
    assert leaf.grad.dtype is mt.float16 and leaf.grad.tolist() == [1.5] * 3


# ---- recorded setitem over a basic region, and skipped gradients of binary ops ----------------
def _parsed(key):
    """The same key with numpy int bounds, which the unparsed region paths leave to the checked
    (parsing) path: the reference for the fast one."""
    def bound(b):
        return b if b is None else np.int64(b)
    items = key if isinstance(key, tuple) else (key,)
    items = tuple(slice(bound(k.start), bound(k.stop), bound(k.step)) if isinstance(k, slice)
                  else np.int64(k) for k in items)
    return items if isinstance(key, tuple) else items[0]


_SETITEM_KEYS = [slice(1, None), slice(2, 2), 1, -1, (slice(None), 1),
                 (slice(0, 4, 2), slice(1, 3)), (2, slice(None, 2))]


@pytest.mark.parametrize("key", _SETITEM_KEYS, ids=str)
@pytest.mark.parametrize("target", ["fresh", "result"])
def test_recorded_setitem_matches_the_checked_path(key, target, device):
    weights = mt.tensor(_values(4, 3, seed=1), device=device)
    runs = []
    for k in (key, _parsed(key)):
        leaf = mt.tensor(_values(4, 3), device=device, requires_grad=True)
        source = mt.tensor(_values(4, 3, seed=2), device=device, requires_grad=True)
        f = mt.zeros(4, 3, device=device) if target == "fresh" else leaf * 3
        value = (source * 2)[k]
        f[k] = value
        assert f.grad_fn.name() == "CopySlices" and f.requires_grad
        assert f._version_counter == 1
        (f * weights).sum().backward()
        runs.append((f.detach().cpu().numpy(), source.grad.cpu().numpy(),
                     None if leaf.grad is None else leaf.grad.cpu().numpy()))
    for fast, checked in zip(*runs):
        np.testing.assert_array_equal(fast, checked)


def test_recorded_setitem_gradients_and_refusals():
    leaf = mt.tensor(_values(4, 3), requires_grad=True)
    value = mt.tensor(_values(3, 3, seed=1), requires_grad=True)

    def write(x, v):
        y = x * 1
        y[1:] = v
        return y
    assert gradcheck(write, (leaf, value)) and gradgradcheck(write, (leaf, value))
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used"):
        leaf[1:] = value
    # a gradient arriving as a view into a larger buffer (stack's backward hands out slices)
    pieces = []
    for _ in range(2):
        f = mt.zeros(4, 3)
        f[1:] = value
        pieces.append(f)
    (mt.stack(pieces) * mt.arange(24.).reshape(2, 4, 3)).sum().backward()
    expected = np.arange(24.).reshape(2, 4, 3)[:, 1:].sum(0)
    np.testing.assert_array_equal(value.grad.numpy(), expected)


def test_in_place_through_a_view_is_torch_copyslices():
    x = mt.tensor(_values(4), requires_grad=True) * 1
    x[1:].mul_(2)
    assert x.grad_fn.name() == "CopySlices"


@pytest.mark.parametrize("op", ["add", "sub"])
def test_binary_backward_skips_operands_without_grad(op, device):
    fn = {"add": mt.add, "sub": mt.sub}[op]
    x = mt.tensor(_values(3, 1), device=device, requires_grad=True)
    other = mt.tensor(_values(3, 4, seed=1), device=device)
    for a, b in ((x, other), (other, x), (x, 1.5), (x, mt.tensor(2.0, device=device))):
        x.grad = None
        out = fn(a, b)
        out.sum().backward()
        sign = -1.0 if op == "sub" and b is x else 1.0
        np.testing.assert_array_equal(x.grad.cpu().numpy(),
                                      np.full((3, 1), sign * out.shape[-1]))
    assert gradcheck(lambda a, b: fn(a, b), (mt.tensor(_values(3, 1), requires_grad=True),
                                             mt.tensor(_values(3, 4, seed=1))))


# ---- a Python number with a floating tensor, straight from the operator ---------------------
_NUMBER_OPERATORS = {
    "x + n": (lambda x, n: x + n, lambda x, n: mt.add(x, n)),
    "n + x": (lambda x, n: n + x, lambda x, n: mt.add(x, n)),
    "x - n": (lambda x, n: x - n, lambda x, n: mt.sub(x, n)),
    "n - x": (lambda x, n: n - x, lambda x, n: mt.sub(n, x)),
    "x * n": (lambda x, n: x * n, lambda x, n: mt.mul(x, n)),
    "n * x": (lambda x, n: n * x, lambda x, n: mt.mul(x, n)),
    "x / n": (lambda x, n: x / n, lambda x, n: mt.div(x, n)),
    "n / x": (lambda x, n: n / x, lambda x, n: mt.div(n, x)),
}


@pytest.mark.parametrize("name", sorted(_NUMBER_OPERATORS))
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64"])
@pytest.mark.parametrize("number", [3.3, 2, -0.5])
def test_number_operators_match_the_functions(name, dtype, number, device):
    fast, reference = _NUMBER_OPERATORS[name]
    x = mt.tensor(_values(3, 4) + 2, device=device).to(getattr(mt, dtype))
    out, expected = fast(x, number), reference(x, number)
    assert out.dtype is expected.dtype and out.shape == expected.shape
    np.testing.assert_array_equal(out.float().cpu().numpy(), expected.float().cpu().numpy())
    if dtype in ("float32", "float64"):
        leaf = x.detach().requires_grad_()
        out = fast(leaf, number)
        assert out.requires_grad and out.grad_fn.name() == reference(leaf, number).grad_fn.name()
        assert gradcheck(lambda t: fast(t, number), (leaf.double().detach().requires_grad_(),))


def test_number_operators_record_for_the_profiler():
    x = mt.randn(3)
    with mt.autograd.profiler.profile() as prof:
        (((x * 2.0) / 3.0 + 1.0) - 0.5, 2.0 / x, 1.0 - x)
    assert [event.name for event in prof.function_events] == [
        "aten::mul", "aten::div", "aten::add", "aten::sub", "aten::div", "aten::sub"]


# ---- mean, where and clamp without their nodes when nothing records -------------------------
_UNRECORDED_OPS = {
    "mean": lambda t: t.mean(),
    "mean(0)": lambda t: t.mean(0),
    "mean((0, 1), keepdim)": lambda t: t.mean((0, 1), keepdim=True),
    "where": lambda t: mt.where(t > 0, t, t * 2),
    "clamp": lambda t: t.clamp(-0.5, 0.5),
    "clamp(min)": lambda t: t.clamp(min=0),
    "clamp(max)": lambda t: mt.clamp(t, max=0.25),
}


@pytest.mark.parametrize("name", sorted(_UNRECORDED_OPS))
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_unrecorded_ops_equal_recorded(name, dtype, device):
    op = _UNRECORDED_OPS[name]
    values = mt.tensor(_values(3, 4), device=device).to(getattr(mt, dtype))
    plain = op(values.t().contiguous().t())        # non-contiguous, nothing requires grad
    recorded = op(values.detach().requires_grad_())
    assert plain.grad_fn is None and recorded.grad_fn is not None
    assert plain.dtype is recorded.dtype and plain.shape == recorded.shape
    np.testing.assert_array_equal(plain.float().cpu().numpy(),
                                  recorded.detach().float().cpu().numpy())
    with mt.no_grad():
        assert op(values.detach().requires_grad_()).grad_fn is None
    if dtype == "float64":
        assert gradcheck(op, (values.detach().requires_grad_(),))


def test_unrecorded_ops_keep_their_errors_and_profiler_events():
    x = mt.randn(3, 4)
    with pytest.raises(RuntimeError, match="mean\\(\\): could not infer output dtype"):
        mt.ones(3, dtype=mt.int64).mean()
    with pytest.raises(RuntimeError, match="value cannot be converted to type c10::Half"):
        x.half().clamp(max=1e6)
    assert mt.empty(0).mean().isnan().item()
    with mt.autograd.profiler.profile() as prof:
        x.mean()
        mt.where(x > 0, x, x)
        x.clamp(0, 1)
    names = {event.name for event in prof.function_events}
    assert {"aten::mean", "aten::where"} <= names
    assert any(name.startswith("aten::clamp") for name in names)


@pytest.mark.parametrize("key", [slice(1, None), 1, (slice(None), 1), (None, 1), (1, None),
                                 (slice(0, 4, 2), slice(1, 3)), (Ellipsis, 0)], ids=str)
@pytest.mark.parametrize("layout", ["compact", "transposed"])
def test_basic_view_gradients_written_into_zeros(key, layout, device):
    # a recorded view's backward writes g into zeros through the region the forward saw (a
    # compact input) or parsed again (any other layout): numpy's scatter of the weights
    leaf = mt.tensor(_values(4, 3), device=device, requires_grad=True)
    base = leaf * 1 if layout == "compact" else (leaf.t() * 1).t()
    view = base[key]
    weights = mt.arange(float(view.numel()), device=device).reshape(view.shape)
    (view * weights).sum().backward()
    expected = np.zeros((4, 3))
    expected[key] = weights.cpu().numpy()
    np.testing.assert_array_equal(leaf.grad.cpu().numpy(), expected)
    assert gradgradcheck(lambda t: t[key] ** 2, (leaf.detach().double().requires_grad_(),))


# ---- smooth_l1_loss as one node ------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("beta", [1.0, 0.7, 2.5])
def test_smooth_l1_node_is_torchs_formula(dtype, beta, device):
    F = mt.nn.functional
    np_dtype = np.dtype(dtype).type
    x = (_values(6, 5) * 2).astype(np_dtype)
    t = _values(6, 5, seed=1).astype(np_dtype)
    g = _values(6, 5, seed=2).astype(np_dtype)
    a = mt.tensor(x, device=device, requires_grad=True)
    b = mt.tensor(t, device=device, requires_grad=True)
    loss = F.smooth_l1_loss(a, b, beta=beta, reduction="none")
    assert loss.grad_fn.name() == "SmoothL1LossBackward0"
    d = x - t
    z, beta_ = np.abs(d), np_dtype(beta)
    expected = np.where(z < beta_, np_dtype(0.5) * z * z / beta_, z - np_dtype(0.5 * beta))
    np.testing.assert_array_equal(loss.detach().cpu().numpy(), expected)
    loss.backward(mt.tensor(g, device=device))
    grad = np.where(d <= -beta_, -g, np.where(d >= beta_, g, d * g / beta_))
    np.testing.assert_array_equal(a.grad.cpu().numpy(), grad)
    np.testing.assert_array_equal(b.grad.cpu().numpy(), -grad)
    for reduction in ("mean", "sum"):
        reduced = F.smooth_l1_loss(a, b, beta=beta, reduction=reduction)
        whole = getattr(F.smooth_l1_loss(a, b, beta=beta, reduction="none"), reduction)()
        np.testing.assert_array_equal(reduced.detach().cpu().numpy(), whole.detach().cpu().numpy())


def test_smooth_l1_node_gradients_and_other_cases():
    F = mt.nn.functional
    a = mt.tensor(_values(4, 3), requires_grad=True)
    b = mt.tensor(_values(4, 3, seed=1), requires_grad=True)
    for beta in (0.7, 1.0):
        assert gradcheck(lambda x, y: F.smooth_l1_loss(x, y, beta=beta), (a, b))
        assert gradgradcheck(lambda x, y: F.smooth_l1_loss(x, y, beta=beta), (a, b))
    # the composed path still takes beta = 0, narrow floats and broadcast operands
    assert F.smooth_l1_loss(a, b, beta=0.0).item() == pytest.approx(float((a - b).abs().mean()))
    half = F.smooth_l1_loss(a.half(), b.half(), reduction="none")
    assert half.dtype is mt.float16 and half.grad_fn.name() != "SmoothL1LossBackward0"
    with pytest.warns(UserWarning, match="target size"):
        assert F.smooth_l1_loss(a, b[:1]).shape == ()


# ---- Categorical: checks without nodes, log_prob without a broadcast it does not need ---------
@pytest.mark.parametrize("value_shape", [(3,), (), (2, 1), (2, 3)], ids=str)
def test_categorical_log_prob_with_and_without_broadcasting(value_shape, device):
    probs = mt.tensor(np.abs(_values(3, 4)) + 0.1, device=device, requires_grad=True)
    dist = mt.distributions.Categorical(probs)
    value = mt.tensor(np.random.default_rng(1).integers(0, 4, value_shape), device=device)
    out = dist.log_prob(value)
    normalized = (probs / probs.sum(-1, keepdim=True)).detach().cpu().numpy()
    logits = np.log(np.clip(normalized, np.finfo(np.float64).eps, 1 - np.finfo(np.float64).eps))
    index = np.broadcast_to(value.cpu().numpy(), np.broadcast_shapes(value_shape, (3,)))
    expected = np.take_along_axis(np.broadcast_to(logits, index.shape + (4,)),
                                  index[..., None], -1)[..., 0]
    np.testing.assert_allclose(out.detach().cpu().numpy(), expected, rtol=1e-12)
    assert out.grad_fn.name() == "SqueezeBackward1"
    out.sum().backward()
    assert probs.grad is not None and probs.grad.shape == (3, 4)
    with pytest.raises(ValueError, match="to be within the support"):
        dist.log_prob(mt.tensor([4, 0, 1], device=device))
    with pytest.raises(ValueError, match="to satisfy the constraint"):
        mt.distributions.Categorical(probs=mt.tensor([1.0, -1.0, 0.5, 0.5], device=device))


@pytest.mark.parametrize("shapes", [((9, 2), (9, 1)), ((9, 2), (9, 2)), ((3,), (2, 3)), ((4,), ())],
                         ids=str)
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_div_gradients_on_the_arrays_equal_the_tensor_ops(shapes, dtype, device):
    # a plain backward computes Div's gradients on the NDArrays; create_graph takes the Tensor
    # ops: the same kernels, so the same bits
    a_shape, b_shape = shapes
    kind = getattr(mt, dtype)
    a = mt.tensor(_values(*a_shape), device=device).to(kind).requires_grad_()
    b = (mt.tensor(_values(*b_shape, seed=1), device=device) + 3).to(kind).requires_grad_()
    g = mt.tensor(_values(*np.broadcast_shapes(a_shape, b_shape), seed=2), device=device).to(kind)
    plain = mt.autograd.grad(a / b, (a, b), g)
    graphed = mt.autograd.grad(a / b, (a, b), g, create_graph=True)
    for p, q in zip(plain, graphed):
        assert p.dtype is q.dtype and p.shape == q.shape
        np.testing.assert_array_equal(p.float().cpu().numpy(), q.detach().float().cpu().numpy())


@pytest.mark.parametrize("dtype", ["float32", "float16", "int64", "bool"])
def test_tensor_division_operator_matches_div(dtype, device):
    kind = getattr(mt, dtype)
    a = mt.tensor(_values(3, 4) * 4 + 1, device=device).to(kind)
    b = mt.tensor(np.abs(_values(3, 4, seed=1)) + 1, device=device).to(kind)
    out, expected = a / b, mt.div(a, b)
    assert out.dtype is expected.dtype
    np.testing.assert_array_equal(out.float().cpu().numpy(), expected.float().cpu().numpy())
    if dtype == "float32":
        leaf = a.detach().requires_grad_()
        assert (leaf / b).grad_fn.name() == "DivBackward0"
