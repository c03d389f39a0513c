"""torch's top-level functions scripts reach for at set-up: process switches (interop threads,
flush-denormal, warn_always), function forms of Tensor queries, frombuffer, empty_permuted,
split_with_sizes, the `*_copy` view copies, gradient, frexp and the int-reduction loss forms."""
import array

import numpy as np
import pytest

import minitorch as mt
from minitorch import _process_settings

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")


def _close(result, expected, **kw):
    np.testing.assert_allclose(result.detach().cpu().double().numpy(),
                               expected.detach().double().numpy(), **kw)


# ---- process switches ---------------------------------------------------------------------
def test_interop_threads_set_once(monkeypatch):
    monkeypatch.setitem(_process_settings._state, "interop_threads", None)
    assert mt.get_num_interop_threads() >= 1
    for bad in (0, -1):
        with pytest.raises(RuntimeError, match="set_num_interop_threads expects a positive "
                                               "integer"):
            mt.set_num_interop_threads(bad)
    mt.set_num_interop_threads(3)
    assert mt.get_num_interop_threads() == 3
    with pytest.raises(RuntimeError, match="cannot set number of interop threads after parallel "
                                           "work has started or set_num_interop_threads called"):
        mt.set_num_interop_threads(3)


def test_flush_denormal_is_reported_unsupported_and_changes_nothing():
    assert mt.set_flush_denormal(True) is False
    tiny = mt.tensor([1e-39], dtype=mt.float32)
    assert (tiny * 1.0).item() != 0.0
    assert mt.set_flush_denormal(False) is False


def test_warn_always_flag(monkeypatch):
    monkeypatch.setitem(_process_settings._state, "warn_always", False)
    assert mt.is_warn_always_enabled() is False
    mt.set_warn_always(True)
    assert mt.is_warn_always_enabled() is True


def test_query_function_forms(device):
    t = mt.ones(2, device=device)
    assert mt.is_inference(t) is False
    assert mt.get_device(t) == t.get_device()
    with pytest.raises(TypeError, match=r"get_device\(\): argument 'input' \(position 1\) must "
                                        r"be Tensor, not int"):
        mt.get_device(1)


# ---- frombuffer ---------------------------------------------------------------------------
def test_frombuffer_shares_the_buffer():
    data = bytearray(np.arange(4, dtype=np.int32).tobytes())
    t = mt.frombuffer(data, dtype=mt.int32)
    assert t.tolist() == [0, 1, 2, 3] and t.dtype == mt.int32
    t[1] = 7
    assert np.frombuffer(data, np.int32)[1] == 7
    part = mt.frombuffer(data, dtype=mt.int32, count=2, offset=4)
    assert part.tolist() == [7, 2]
    data[8:12] = np.int32(-5).tobytes()
    assert part.tolist() == [7, -5]


@pytest.mark.parametrize("dtype, np_dtype", [(mt.float64, np.float64), (mt.bool, np.bool_),
                                             (mt.float16, np.float16), (mt.complex64,
                                                                        np.complex64)])
def test_frombuffer_dtypes(dtype, np_dtype):
    values = np.array([1, 0, 1, 1], dtype=np_dtype)
    t = mt.frombuffer(bytearray(values.tobytes()), dtype=dtype)
    assert t.dtype == dtype
    np.testing.assert_array_equal(t.numpy(), values)


def test_frombuffer_bfloat16_and_requires_grad():
    bits = np.array([0x3F80, 0x4000], dtype=np.uint16)      # 1.0 and 2.0 in bfloat16
    t = mt.frombuffer(array.array("H", bits.tolist()), dtype=mt.bfloat16, requires_grad=True)
    assert t.tolist() == [1.0, 2.0] and t.requires_grad and t.is_leaf


@pytest.mark.parametrize("kwargs, message", [
    (dict(offset=3), r"buffer length \(13 bytes\) after offset \(3 bytes\) must be a multiple "
                     r"of element size \(4\)"),
    (dict(count=5), r"requested buffer length \(5 \* 4 bytes\) after offset \(0 bytes\) must not "
                    r"be greater than actual buffer length \(16 bytes\)"),
    (dict(offset=16), r"offset \(16 bytes\) must be non-negative and no greater than buffer "
                      r"length \(16 bytes\) minus 1"),
    (dict(offset=-1), r"offset \(-1 bytes\) must be non-negative"),
    (dict(count=0), r"both buffer length \(16\) and count \(0\) must not be 0"),
])
def test_frombuffer_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        mt.frombuffer(bytearray(16), dtype=mt.int32, **kwargs)


def test_frombuffer_refuses_non_buffers_and_warns_on_read_only(monkeypatch):
    with pytest.raises(ValueError, match="object does not implement Python buffer protocol."):
        mt.frombuffer(3, dtype=mt.int32)
    from minitorch.functions import factories
    monkeypatch.setitem(factories._warned, "read_only", False)
    with pytest.warns(UserWarning, match="The given buffer is not writable"):
        t = mt.frombuffer(bytes(8), dtype=mt.float32)
    assert t.tolist() == [0.0, 0.0]


@needs_torch
def test_frombuffer_matches_torch():
    data = np.arange(12, dtype=np.float32).tobytes()
    for kwargs in (dict(), dict(count=3, offset=8)):
        ours = mt.frombuffer(bytearray(data), dtype=mt.float32, **kwargs)
        theirs = torch.frombuffer(bytearray(data), dtype=torch.float32, **kwargs)
        assert ours.tolist() == theirs.tolist()


# ---- empty_permuted, split_with_sizes -----------------------------------------------------
def test_empty_permuted_layout(device):
    t = mt.empty_permuted((2, 3, 4), (0, 2, 1), device=device, dtype=mt.float64)
    assert t.shape == (2, 3, 4) and t.stride() == (12, 1, 3) and t.dtype == mt.float64
    assert t.device.type == device
    assert mt.empty_permuted((2, 3), (1, 0), requires_grad=True).requires_grad


@pytest.mark.parametrize("layout, message", [
    ((0,), r"len\(size\) = 2 is not equal to len\(physical_layout\) = 1"),
    ((0, 0), "Duplicate dim not allowed"),
    ((0, 2), r"Dimension out of range \(expected to be between 0 and 1, but got 2 at index 1\)"),
])
def test_empty_permuted_errors(layout, message):
    with pytest.raises(RuntimeError, match=message):
        mt.empty_permuted((2, 3), layout)


@needs_torch
def test_empty_permuted_strides_match_torch():
    for size, layout in (((2, 3, 4, 5), (0, 2, 3, 1)), ((3, 4), (1, 0)), ((2, 1, 3), (2, 1, 0))):
        assert mt.empty_permuted(size, layout).stride() == \
            torch.empty_permuted(size, layout).stride()


def test_split_with_sizes(device):
    x = mt.arange(12.0, device=device).reshape(3, 4)
    first, second = mt.split_with_sizes(x, [1, 3], dim=1)
    assert first.tolist() == [[0.0], [4.0], [8.0]] and second.shape == (3, 3)
    with pytest.raises(RuntimeError, match="split_with_sizes expects split_sizes to sum exactly "
                                           "to 3"):
        mt.split_with_sizes(x, [1, 1])


# ---- the *_copy functions -----------------------------------------------------------------
COPY_CASES = [
    ("expand_copy", (4, 1, 3), ((4, 2, 3),), {}), ("permute_copy", (2, 3, 4), ((2, 0, 1),), {}),
    ("squeeze_copy", (1, 3, 1), (), {}), ("squeeze_copy", (1, 3, 1), (0,), {}),
    ("unsqueeze_copy", (2, 3), (1,), {}), ("t_copy", (2, 3), (), {}),
    ("transpose_copy", (2, 3, 4), (0, 2), {}), ("view_copy", (2, 6), ((3, 4),), {}),
    ("select_copy", (2, 3, 4), (1, -1), {}), ("slice_copy", (4, 6), (1, 1, 5, 2), {}),
    ("slice_copy", (4, 6), (), {"start": 1}), ("diagonal_copy", (3, 4), (), {"offset": 1}),
    ("detach_copy", (2, 3), (), {}), ("alias_copy", (2, 3), (), {}),
    ("narrow_copy", (4, 5), (1, 1, 3), {}), ("as_strided_copy", (4, 5), ((2, 2), (1, 5)), {}),
    ("unfold_copy", (2, 7), (1, 3, 2), {}), ("unbind_copy", (3, 2), (1,), {}),
    ("split_copy", (5, 2), (2,), {}), ("split_with_sizes_copy", (5, 2), ([2, 3],), {}),
]


@needs_torch
@pytest.mark.parametrize("name, shape, args, kwargs", COPY_CASES)
def test_view_copies_match_torch_and_never_alias(device, name, shape, args, kwargs):
    base = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    ours = getattr(mt, name)(mt.tensor(base, device=device), *args, **kwargs)
    theirs = getattr(torch, name)(torch.tensor(base), *args, **kwargs)
    pieces = ours if isinstance(ours, tuple) else (ours,)
    expected = theirs if isinstance(theirs, (tuple, list)) else (theirs,)
    assert len(pieces) == len(expected)
    for piece, want in zip(pieces, expected):
        assert piece.shape == tuple(want.shape) and piece.is_contiguous()
        np.testing.assert_array_equal(piece.cpu().numpy(), want.numpy())


def test_view_copy_is_a_copy_with_the_view_gradient(device):
    x = mt.arange(6.0, device=device).reshape(2, 3).requires_grad_()
    y = mt.transpose_copy(x, 0, 1)
    assert y.stride() == (2, 1)
    y.mul_(1.0)     # a view of a leaf needing grad would refuse this
    (y * mt.arange(6.0, device=device).reshape(3, 2)).sum().backward()
    assert x.grad.tolist() == [[0.0, 2.0, 4.0], [1.0, 3.0, 5.0]]
    with pytest.raises(TypeError, match=r"t_copy\(\): argument 'input' \(position 1\) must be "
                                        r"Tensor"):
        mt.t_copy([1, 2])


def test_view_as_real_copy(device):
    z = mt.tensor([1 + 2j, 3 - 1j], device=device)
    pairs = mt.view_as_real_copy(z)
    pairs[0, 0] = 9.0
    assert z.cpu().tolist() == [1 + 2j, 3 - 1j]
    assert mt.view_as_complex_copy(pairs).cpu().tolist() == [9 + 2j, 3 - 1j]


# ---- gradient -----------------------------------------------------------------------------
GRADIENT_CASES = [dict(), dict(spacing=2.0), dict(edge_order=2), dict(dim=1), dict(dim=-1),
                  dict(dim=[0, 2], spacing=[0.5, 3]), dict(spacing=(2,), dim=1, edge_order=2),
                  dict(spacing="coordinates"), dict(spacing="coordinates", edge_order=2)]


@needs_torch
@pytest.mark.parametrize("kwargs", GRADIENT_CASES)
def test_gradient_matches_torch(device, kwargs):
    rng = np.random.default_rng(0)
    values = rng.standard_normal((4, 5, 6))
    ours, theirs = dict(kwargs), dict(kwargs)
    if kwargs.get("spacing") == "coordinates":
        coordinates = [np.cumsum(rng.random(n) + 0.1) for n in values.shape]
        ours["spacing"] = [mt.tensor(c, device=device) for c in coordinates]
        theirs["spacing"] = [torch.tensor(c) for c in coordinates]
    result = mt.gradient(mt.tensor(values, device=device), **ours)
    expected = torch.gradient(torch.tensor(values), **theirs)
    assert len(result) == len(expected)
    for r, e in zip(result, expected):
        _close(r, e, rtol=1e-12, atol=1e-12)


def test_gradient_against_numpy_and_dtypes(device):
    x = np.array([1.0, 4.0, 9.0, 16.0, 25.0])
    (g,) = mt.gradient(mt.tensor(x, device=device), edge_order=2)
    np.testing.assert_allclose(g.cpu().numpy(), np.gradient(x, edge_order=2))
    (g,) = mt.gradient(mt.tensor([1, 4, 9], device=device))
    assert g.dtype == mt.float32 and g.cpu().tolist() == [3.0, 4.0, 5.0]
    (g,) = mt.gradient(mt.tensor(x, device=device).half())
    assert g.dtype == mt.float16
    assert mt.gradient(mt.tensor(3.0, device=device)) == ()


def test_gradient_backward(device):
    x = mt.tensor([1.0, 4.0, 9.0, 16.0], device=device, requires_grad=True)
    mt.gradient(x)[0].sum().backward()
    assert x.grad.cpu().tolist() == [-1.5, 0.5, -0.5, 1.5]


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(edge_order=3), RuntimeError, "only supports edge_order=1 and edge_order=2"),
    (dict(spacing=[2.0]), RuntimeError, r"a list of length equal to 'self.dim\(\) = 2', since "
                                        r"dim argument was not given, but got a list of length 1"),
    (dict(spacing=[2.0, 3.0], dim=0), RuntimeError, "a spacing argument of length 2 and a dim "
                                                    "argument of length 1"),
    (dict(dim=2), IndexError, r"Dimension out of range \(expected to be in range of \[-2, 1\], "
                              r"but got 2\)"),
    (dict(dim=(0, 0)), RuntimeError, "dim 0 appears multiple times in the list of dims"),
    (dict(spacing=[mt.zeros(1, 3), 1.0]), RuntimeError, "expected each element of spacing to "
                                                        "have one dimension"),
])
def test_gradient_errors(kwargs, error, message):
    with pytest.raises(error, match=message):
        mt.gradient(mt.ones(3, 4), **kwargs)
    with pytest.raises(RuntimeError, match="expected each dimension size to be at least "
                                           "edge_order\\+1"):
        mt.gradient(mt.ones(2, 4), edge_order=2)


# ---- frexp --------------------------------------------------------------------------------
FREXP_VALUES = np.array([0.0, -0.0, 1.0, -3.0, 0.75, np.inf, -np.inf, np.nan, 1e-40, 2.0 ** -149,
                         3.4e38, 2.0 ** 127, 0.9999999, 1.0000001, 2.0 ** -126, 1 / 3, 6e-8,
                         65504.0, 1e-5])


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_frexp_recomposes_exactly(device, dtype):
    x = mt.tensor(FREXP_VALUES, device=device).to(getattr(mt, dtype))
    mantissa, exponent = mt.frexp(x)
    assert mantissa.dtype == x.dtype and exponent.dtype == mt.int32
    m, e, v = (t.cpu().double().numpy() for t in (mantissa, exponent, x))
    finite = np.isfinite(v) & (v != 0)
    assert np.all((np.abs(m[finite]) >= 0.5) & (np.abs(m[finite]) < 1))
    np.testing.assert_array_equal(np.ldexp(m, e.astype(int)), v)
    assert np.all(e[~finite] == 0)
    method = x.frexp()                      # Tensor.frexp is the same function
    np.testing.assert_array_equal(method.mantissa.cpu().double().numpy(), m)
    np.testing.assert_array_equal(method.exponent.cpu().numpy(), e)


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_frexp_matches_torch(device, dtype):
    rng = np.random.default_rng(1)
    values = np.concatenate([FREXP_VALUES, rng.standard_normal(500) *
                             10.0 ** rng.integers(-40, 38, 500)])
    ours = mt.frexp(mt.tensor(values, device=device).to(getattr(mt, dtype)))
    theirs = torch.frexp(torch.tensor(values).to(getattr(torch, dtype)))
    np.testing.assert_array_equal(ours.mantissa.cpu().double().numpy(),
                                  theirs.mantissa.double().numpy())
    np.testing.assert_array_equal(ours.exponent.cpu().numpy(), theirs.exponent.numpy())


def test_frexp_gradient_and_errors(device):
    x = mt.tensor([3.0, 0.1, 0.0], device=device, requires_grad=True)
    mt.frexp(x).mantissa.sum().backward()
    assert x.grad.cpu().tolist() == [0.25, 8.0, 1.0]
    with pytest.raises(RuntimeError, match=r"torch.frexp\(\) only supports floating-point "
                                           r"dtypes"):
        mt.frexp(mt.tensor([1, 2], device=device))
    assert "frexp" in repr(mt.frexp(mt.ones(1)))


# ---- the top-level losses -----------------------------------------------------------------
def _loss_inputs(lib, device=None):
    g = np.random.default_rng(2)
    a, b = g.standard_normal((3, 4)), g.random((3, 4))
    sign = np.array([1.0, -1.0, 1.0])
    kw = {} if lib is torch else {"device": device}
    t = lambda v: lib.tensor(v, **kw)   # noqa: E731
    return t(a), t(b), t(sign)


LOSS_CASES = [
    ("kl_div", lambda a, b, s: (a, b)), ("binary_cross_entropy_with_logits", lambda a, b, s: (a, b)),
    ("cosine_embedding_loss", lambda a, b, s: (a, b, s)),
    ("hinge_embedding_loss", lambda a, b, s: (a, b.sign() * 2 - 1)),
    ("margin_ranking_loss", lambda a, b, s: (a[0], b[0], s[:1].expand(4))),
    ("triplet_margin_loss", lambda a, b, s: (a, b, a - 1)),
]


@needs_torch
@pytest.mark.parametrize("name, arguments", LOSS_CASES)
@pytest.mark.parametrize("reduction", [0, 1, 2, 5])
def test_toplevel_losses_take_an_int_reduction(device, name, arguments, reduction):
    ours = getattr(mt, name)(*arguments(*_loss_inputs(mt, device)), reduction=reduction)
    theirs = getattr(torch, name)(*arguments(*_loss_inputs(torch)), reduction=reduction)
    assert ours.shape == tuple(theirs.shape)
    _close(ours, theirs, rtol=1e-10, atol=1e-12)


@needs_torch
@pytest.mark.torch_exact
@pytest.mark.parametrize("name, arguments", LOSS_CASES)
def test_toplevel_losses_do_not_reduce_by_default(name, arguments):
    ours = getattr(mt, name)(*arguments(*_loss_inputs(mt, "cpu")))
    theirs = getattr(torch, name)(*arguments(*_loss_inputs(torch)))
    assert ours.shape == tuple(theirs.shape)


@needs_torch
def test_toplevel_poisson_nll_and_ctc():
    a, b, _ = _loss_inputs(mt, "cpu")
    ta, tb, _ = _loss_inputs(torch)
    _close(mt.poisson_nll_loss(a, b, True, False, 1e-8, 1),
           torch.poisson_nll_loss(ta, tb, True, False, 1e-8, 1), rtol=1e-12)
    with pytest.raises(TypeError):
        mt.poisson_nll_loss(a, b)
    logits = np.random.default_rng(3).standard_normal((5, 2, 4))
    targets = [[1, 2], [1, 1]]
    for reduction in (0, 1, 2):
        ours = mt.ctc_loss(mt.tensor(logits).log_softmax(2), mt.tensor(targets), [5, 5], [2, 2],
                           0, reduction)
        theirs = torch.ctc_loss(torch.tensor(logits).log_softmax(2), torch.tensor(targets),
                                [5, 5], [2, 2], 0, reduction)
        _close(ours, theirs, rtol=1e-10)


def test_toplevel_loss_reduction_must_be_an_int():
    a = mt.randn(2, 3)
    with pytest.raises(TypeError, match=r"kl_div\(\): argument 'reduction' must be int, not str"):
        mt.kl_div(a, a, "sum")
    with pytest.raises(TypeError, match="must be int, not bool"):
        mt.hinge_embedding_loss(a, a, 1.0, True)
