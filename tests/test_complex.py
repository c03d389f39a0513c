"""complex64 / complex128: dtypes and promotion, creation, the views between complex and real,
arithmetic in our kernels, autograd with torch's conjugate convention, and the llama rotary
embedding (RoPE) run side by side with torch, forward and backward, in a tiny training step.

The device tests run on cuda too (a GPU, or MINITORCH_TEST_CUDA=emulator)."""
import warnings

import numpy as np
import pytest

import minitorch as mt

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")


def _complex(rng, shape, dtype=np.complex128):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def _host(t):
    return t.detach().cpu().numpy()


# ---- dtypes and promotion ---------------------------------------------------------------------
def test_dtype_attributes():
    assert mt.cfloat is mt.complex64 and mt.cdouble is mt.complex128
    for d, real in ((mt.complex64, mt.float32), (mt.complex128, mt.float64)):
        assert d.is_complex and not d.is_floating_point and d.is_signed
        assert d.real_dtype is real and real.complex_dtype is d
        assert d.itemsize == 2 * real.itemsize
    assert not mt.float32.is_complex and not mt.int64.is_complex
    assert mt.finfo(mt.complex64).eps == mt.finfo(mt.float32).eps


@needs_torch
def test_promote_types_match_torch():
    names = ["bool", "uint8", "int8", "int16", "int32", "int64", "float32", "float64",
             "complex64", "complex128"]
    for a in names:
        for b in names:
            if "complex" not in a + b:
                continue
            ours = mt.promote_types(getattr(mt, a), getattr(mt, b))
            assert ours.name == str(torch.promote_types(getattr(torch, a),
                                                        getattr(torch, b))).split(".")[1]


@needs_torch
def test_result_type_with_scalars_and_0d_match_torch():
    cases = [("float32", (4,), 1j), ("float64", (4,), 1j), ("int64", (4,), 2 + 1j),
             ("bool", (4,), 1j), ("complex128", (4,), 1.5), ("complex64", (4,), 2),
             ("float32", (4,), ("complex128", ())), ("int32", (4,), ("complex128", ())),
             ("float64", (4,), ("complex64", ())), ("complex64", (4,), ("float64", (4,)))]
    for dtype, shape, other in cases:
        a_t, a_m = torch.ones(shape, dtype=getattr(torch, dtype)), mt.ones(
            shape, dtype=getattr(mt, dtype))
        if isinstance(other, tuple):
            b_t = torch.ones(other[1], dtype=getattr(torch, other[0]))
            b_m = mt.ones(other[1], dtype=getattr(mt, other[0]))
        else:
            b_t = b_m = other
        assert (a_m + b_m).dtype.name == str((a_t + b_t).dtype).split(".")[1], (dtype, other)
        assert (b_m * a_m).dtype.name == str((b_t * a_t).dtype).split(".")[1], (dtype, other)


def test_python_complex_follows_default_dtype():
    assert mt.tensor([1 + 2j]).dtype is mt.complex64
    assert (mt.ones(2, dtype=mt.int64) * 1j).dtype is mt.complex64
    previous = mt.get_default_dtype()
    mt.set_default_dtype(mt.float64)
    try:
        assert mt.tensor([1 + 2j]).dtype is mt.complex128
        assert (mt.ones(2, dtype=mt.int64) * 1j).dtype is mt.complex128
    finally:
        mt.set_default_dtype(previous)


# ---- creation and conversions -----------------------------------------------------------------
def test_creation_and_conversions(device):
    t = mt.tensor([1 + 2j, 3.5 - 1j], device=device)
    assert t.dtype is mt.complex64 and t.is_complex() and mt.is_complex(t)
    assert not t.is_floating_point() and not mt.ones(2).is_complex()
    assert t.tolist() == [1 + 2j, 3.5 - 1j]
    assert t[1].item() == 3.5 - 1j and isinstance(t[0].item(), complex)
    np.testing.assert_array_equal(_host(t), np.array([1 + 2j, 3.5 - 1j], np.complex64))
    for factory, value in ((mt.zeros, 0), (mt.ones, 1), (mt.empty, 0)):
        z = factory(2, 3, dtype=mt.complex128, device=device)
        assert z.dtype is mt.complex128 and z.shape == (2, 3) and z.device.type == device
        np.testing.assert_array_equal(_host(z), np.full((2, 3), value, np.complex128))
    f = mt.full((2,), 1 - 2j, device=device)
    assert f.dtype is mt.complex64 and f.tolist() == [1 - 2j, 1 - 2j]
    assert mt.full((2,), 3.0, dtype=mt.complex128, device=device).tolist() == [3 + 0j, 3 + 0j]
    assert mt.zeros_like(f).dtype is mt.complex64 and mt.zeros_like(f).device.type == device
    assert mt.tensor([[1, 2]], dtype=mt.complex128, device=device).tolist() == [[1 + 0j,
                                                                                 2 + 0j]]
    assert mt.tensor(0.5j, device=device).item() == 0.5j
    assert _host(mt.tensor([], dtype=mt.complex64, device=device)).dtype == np.complex64
    assert t.cpu().to(device).tolist() == t.tolist()


def test_from_numpy_shares_memory():
    array = np.array([[1 + 1j, 2 - 2j], [3j, -4]], np.complex128)
    t = mt.from_numpy(array)
    assert t.dtype is mt.complex128
    array[0, 0] = 7 + 7j
    assert t[0, 0].item() == 7 + 7j
    strided = mt.from_numpy(array[:, 1])        # a non-contiguous view is shared too
    assert strided.stride() == (2,) and strided.tolist() == [2 - 2j, -4 + 0j]
    assert mt.from_numpy(array.astype(np.complex64)).dtype is mt.complex64


@needs_torch
@pytest.mark.torch_exact
def test_repr_matches_torch():
    rng = np.random.default_rng(0)
    for values in ([1 + 2j, 3 - 1j], [0.5 + 1.25j, -1e-3j, 2], [[1 + 1j, 2], [3j, -4.5]], 2 + 3j,
                   _complex(rng, (40,), np.complex64)):
        for name in ("complex64", "complex128"):
            ours = repr(mt.tensor(values, dtype=getattr(mt, name)))
            theirs = repr(torch.tensor(values, dtype=getattr(torch, name)))
            assert ours == theirs.replace("torch.", "minitorch.")


def test_float_of_complex_warns_and_drops_imag():
    t = mt.tensor([1.5 + 2j, -3 - 1j])
    with pytest.warns(UserWarning, match="Casting complex values to real discards the "
                                         "imaginary part"):
        f = t.float()
    assert f.dtype is mt.float32 and f.tolist() == [1.5, -3.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # real -> complex and complex -> complex: silent
        assert mt.tensor([1.0, 2.0]).to(mt.complex64).tolist() == [1 + 0j, 2 + 0j]
        assert t.to(mt.complex128).dtype is mt.complex128
        assert t.type_as(mt.zeros(1, dtype=mt.complex128)).dtype is mt.complex128
    assert t.bool().tolist() == [True, True] and mt.tensor([0j, 1j]).bool().tolist() == [False,
                                                                                          True]


def test_meta_complex_tensors_have_shapes_and_dtypes():
    z = mt.zeros(2, 3, dtype=mt.complex64, device="meta")
    assert (z * 1j).shape == (2, 3) and z.abs().dtype is mt.float32
    assert mt.view_as_real(z * z).shape == (2, 3, 2) and (z @ z.mT).shape == (2, 2)
    assert mt.polar(mt.ones(2, device="meta"), mt.ones(2, device="meta")).dtype is mt.complex64


def test_requires_grad_allowed_for_complex():
    t = mt.zeros(2, dtype=mt.complex64, requires_grad=True)
    assert t.requires_grad
    assert mt.ones(2, dtype=mt.complex128).requires_grad_().requires_grad


# ---- views ------------------------------------------------------------------------------------
@needs_torch
def test_view_as_real_shares_storage_with_torch_strides(device):
    rng = np.random.default_rng(1)
    values = _complex(rng, (3, 4), np.complex64)
    for key in ((slice(None), slice(None)), (slice(1, None), slice(None, None, 2)), (1,)):
        ours, theirs = mt.tensor(values, device=device)[key], torch.tensor(values)[key]
        r, tr = mt.view_as_real(ours), torch.view_as_real(theirs)
        assert r.shape == tuple(tr.shape) and r.stride() == tr.stride()
        assert r.storage_offset() == tr.storage_offset() and r.dtype is mt.float32
        np.testing.assert_array_equal(_host(r), tr.numpy())
    t = mt.tensor(values, device=device)
    mt.view_as_real(t)[0, 0, 1] = 9.0               # writes through to the complex tensor
    assert t[0, 0].item().imag == 9.0
    with pytest.raises(RuntimeError, match="view_as_real is only supported for complex "
                                           "tensors"):
        mt.view_as_real(mt.ones(2, device=device))


@needs_torch
@pytest.mark.torch_exact
def test_view_as_complex_checks_match_torch():
    cases = [lambda lib: lib.ones(3, 2, dtype=lib.int64),
             lambda lib: lib.ones(3, 3),
             lambda lib: lib.ones(2, 3).t(),
             lambda lib: lib.ones(3, 3, 2)[:, :2].transpose(0, 1)[:, :, :1].expand(2, 3, 2),
             lambda lib: lib.ones(3, 5)[:, :4].reshape(3, 2, 2)[:, :, :].as_strided((3, 2),
                                                                                   (3, 1)),
             lambda lib: lib.ones(7)[1:5].view(2, 2)]
    for make in cases:
        with pytest.raises(RuntimeError) as theirs:
            torch.view_as_complex(make(torch))
        with pytest.raises(RuntimeError) as ours:
            mt.view_as_complex(make(mt))
        assert str(ours.value) == str(theirs.value).split("\n")[0]


def test_view_as_complex_is_a_view():
    x = mt.arange(12, dtype=mt.float64).reshape(3, 2, 2)
    z = mt.view_as_complex(x)
    assert z.dtype is mt.complex128 and z.shape == (3, 2) and z.stride() == (2, 1)
    assert z[1, 0].item() == 4 + 5j
    z[1, 0] = -1j                                   # writes through to the float tensor
    assert x[1, 0].tolist() == [0.0, -1.0]
    odd = mt.arange(7, dtype=mt.float32)[:6].view(3, 2)   # an odd float buffer
    assert mt.view_as_complex(odd).tolist() == [1j, 2 + 3j, 4 + 5j]
    assert mt.view_as_real(mt.view_as_complex(x)).data_ptr() == x.data_ptr()


def test_real_imag_views_and_constructors(device):
    rng = np.random.default_rng(2)
    values = _complex(rng, (2, 3))
    t = mt.tensor(values, device=device)
    np.testing.assert_array_equal(_host(t.real), values.real)
    np.testing.assert_array_equal(_host(t.imag), values.imag)
    t.imag[0, 0] = 5.0
    assert t[0, 0].item().imag == 5.0
    x = mt.ones(2, device=device)
    assert x.real is x
    with pytest.raises(RuntimeError, match="imag is not implemented for tensors with "
                                           "non-complex dtypes"):
        x.imag
    re, im = rng.standard_normal((2, 3)), rng.standard_normal((3,))
    c = mt.complex(mt.tensor(re, device=device), mt.tensor(im, device=device))   # broadcast
    np.testing.assert_array_equal(_host(c), re + 1j * im)
    with pytest.raises(RuntimeError, match="Expected both inputs to be Half, Float or Double "
                                           "tensors but got Long and Long"):
        mt.complex(mt.ones(2, dtype=mt.int64), mt.ones(2, dtype=mt.int64))
    with pytest.raises(RuntimeError, match="Expected object of scalar type Float but got "
                                           "scalar type Double"):
        mt.complex(mt.ones(2), mt.ones(2, dtype=mt.float64))
    r, theta = np.abs(re) + 0.1, rng.standard_normal((2, 3))
    p = mt.polar(mt.tensor(r, device=device), mt.tensor(theta, device=device))
    np.testing.assert_allclose(_host(p), r * np.exp(1j * theta), rtol=1e-14)
    assert mt.polar(mt.ones(2, device=device), mt.zeros(2, device=device)).dtype is \
        mt.complex64


def test_conj_abs_angle_sgn(device):
    rng = np.random.default_rng(3)
    values = _complex(rng, (4, 3))
    values[0, 0] = 0
    t = mt.tensor(values, device=device)
    np.testing.assert_array_equal(_host(t.conj()), np.conj(values))
    np.testing.assert_array_equal(_host(mt.conj_physical(t)), np.conj(values))
    assert not t.conj().is_conj() and mt.resolve_conj(t) is t
    x = mt.ones(2)
    assert x.conj() is x and mt.conj_physical(x) is x
    np.testing.assert_allclose(_host(t.abs()), np.abs(values), rtol=1e-15)
    assert t.abs().dtype is mt.float64 and mt.tensor([1j], dtype=mt.complex64).abs().dtype is \
        mt.float32
    np.testing.assert_allclose(_host(t.angle()), np.angle(values), rtol=1e-15)
    expected = np.where(values == 0, 0, values / np.where(values == 0, 1, np.abs(values)))
    np.testing.assert_allclose(_host(t.sgn()), expected, rtol=1e-15)
    assert mt.angle(mt.tensor([-1.0, 2.0], dtype=mt.float64)).tolist() == [np.pi, 0.0]
    assert mt.isreal(mt.tensor([1 + 0j, 1j])).tolist() == [True, False]


def test_movement_ops_on_complex(device):
    rng = np.random.default_rng(4)
    values = _complex(rng, (2, 3, 4))
    t = mt.tensor(values, device=device)

    def index(values):
        return mt.tensor(values, device=device)

    checks = [
        (t.reshape(6, 4), values.reshape(6, 4)), (t.view(2, 12), values.reshape(2, 12)),
        (t.flatten(1), values.reshape(2, 12)), (t.unsqueeze(1), values[:, None]),
        (t.permute(2, 0, 1), values.transpose(2, 0, 1)),
        (t.permute(2, 0, 1).contiguous(), values.transpose(2, 0, 1)),
        (t.permute(2, 0, 1).reshape(4, 6), values.transpose(2, 0, 1).reshape(4, 6)),
        (t[:, :1].expand(2, 5, 4), np.broadcast_to(values[:, :1], (2, 5, 4))),
        (t[1, ::2, 1:], values[1, ::2, 1:]), (t[..., -1], values[..., -1]),
        (t[index([1, 0, 1])], values[[1, 0, 1]]), (t[t.real > 0], values[values.real > 0]),
        (t[:, index([2, 0])], values[:, [2, 0]]),
        (mt.cat([t, t[:, :1]], 1), np.concatenate([values, values[:, :1]], 1)),
        (mt.stack([t[0], t[1].t().t()]), values), (t.clone(), values),
        (t.flip(0), values[::-1]), (t.transpose(0, 2).clone(), values.transpose(2, 1, 0)),
        (t.gather(2, index([[[3, 0]] * 3] * 2)), np.take_along_axis(
            values, np.array([[[3, 0]] * 3] * 2), 2)),
        (t.index_select(1, index([2, 2])), values[:, [2, 2]]),
        (t[:0], values[:0]), (index(values[0, 0, 0]).reshape(1, 1), values[:1, 0, :1]),
    ]
    for ours, expected in checks:
        assert ours.dtype is mt.complex128 and ours.device.type == device
        np.testing.assert_array_equal(_host(ours), expected)
    u = t.clone()
    u[0, 1] = 1 - 1j                                # a scalar fill through a view
    u[1, :, 0] = index([1j, 2j, 3j])                # a strided copy
    expected = values.copy()
    expected[0, 1], expected[1, :, 0] = 1 - 1j, [1j, 2j, 3j]
    np.testing.assert_array_equal(_host(u), expected)
    w = mt.zeros(3, dtype=mt.complex128, device=device)
    added = mt.tensor([1j, 2.0, 3.0], dtype=mt.complex128, device=device)
    w.index_put_((index([0, 2, 0]),), added, accumulate=True)
    assert w.tolist() == [3 + 1j, 0j, 2 + 0j]
    w[index([0, 2, 0])] += added                    # gather, add, put (last write wins)
    assert w.tolist()[1] == 0 and w.tolist()[2] == 4


# ---- arithmetic -------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_arithmetic_matches_numpy(device, dtype):
    rng = np.random.default_rng(5)
    a, b = _complex(rng, (3, 1, 4), dtype), _complex(rng, (5, 1), dtype)
    ta, tb = mt.tensor(a, device=device), mt.tensor(b, device=device)
    rtol = 1e-6 if dtype is np.complex64 else 1e-14
    for ours, expected in ((ta + tb, a + b), (ta - tb, a - b), (ta * tb, a * b),
                           (ta / tb, a / b), (-ta, -a), (ta * 2, a * 2), (ta + (1 - 2j), a + (1 - 2j)),
                           ((2 + 1j) / ta, (2 + 1j) / a), (ta - 1.5j, a - 1.5j),
                           (ta.sum(), a.sum()), (ta.sum((0, 2)), a.sum((0, 2))),
                           (ta.mean(-1, keepdim=True), a.mean(-1, keepdims=True)),
                           (ta.exp(), np.exp(a)), (ta.reciprocal(), 1 / a),
                           (ta.square(), a * a), (ta.cumsum(2), np.cumsum(a, 2)),
                           (ta.transpose(0, 2) * tb[:1], a.transpose(2, 1, 0) * b[:1]),
                           (mt.tensor(a[0, 0, 0]) * tb, a[0, 0, 0] * b),     # a CPU 0-d
                           (ta[:0] * tb[:1], a[:0] * b[:1]),
                           (ta == ta.conj(), a == np.conj(a)), (ta != 0, a != 0)):
        assert ours.device.type == device
        if ours.dtype is mt.bool:
            np.testing.assert_array_equal(_host(ours), expected)
            continue
        assert _host(ours).dtype == dtype
        np.testing.assert_allclose(_host(ours), expected, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_matmul_matches_numpy(device, dtype):
    """Four real GEMMs reading the parts in place (stride 2), batched and transposed too."""
    rng = np.random.default_rng(11)
    a, b, c = _complex(rng, (2, 3, 4), dtype), _complex(rng, (4, 5), dtype), \
        _complex(rng, (2, 5, 4), dtype)
    ta, tb, tc = (mt.tensor(x, device=device) for x in (a, b, c))
    rtol = 1e-5 if dtype is np.complex64 else 1e-13
    for ours, expected in ((ta @ tb, a @ b), (ta @ tc.mT, a @ c.transpose(0, 2, 1)),
                           (ta[:, 1] @ tb[:, 2], a[:, 1] @ b[:, 2]),
                           (mt.bmm(ta, tc.transpose(1, 2)), a @ c.transpose(0, 2, 1)),
                           (mt.einsum("bij,jk->bik", ta, tb), np.einsum("bij,jk->bik", a, b))):
        assert ours.dtype is ta.dtype
        np.testing.assert_allclose(_host(ours), expected, rtol=rtol, atol=rtol)


def test_mixed_real_complex_arithmetic():
    a = mt.tensor([1.0, 2.0], dtype=mt.float64)
    z = mt.tensor([1j, 1 + 1j], dtype=mt.complex64)
    assert (a * z).dtype is mt.complex128 and (a * z).tolist() == [1j, 2 + 2j]
    assert (mt.tensor([1, 2]) + z).tolist() == [1 + 1j, 3 + 1j]
    np.testing.assert_allclose((mt.ones(2, 3, dtype=mt.complex128) @
                                mt.tensor([[1j], [2], [3 - 1j]], dtype=mt.complex128)).numpy(),
                               np.full((2, 1), 5 + 0j))
    u, v = np.array([1 + 2j, 3j]), np.array([2 - 1j, 1 + 1j])
    assert mt.vdot(mt.tensor(u), mt.tensor(v)).item() == np.vdot(u, v)      # conjugates u
    assert mt.dot(mt.tensor(u), mt.tensor(v)).item() == np.dot(u, v)


_NO = '"{}" not implemented for \'ComplexFloat\''
_ORDERING_REFUSALS = [   # torch 2.13's exception and message for ordering ops on complex input
    ("lt", lambda lib, z, w: z < w, NotImplementedError, _NO.format("lt_cpu")),
    ("ge", lambda lib, z, w: lib.ge(z, 1), NotImplementedError, _NO.format("ge_cpu")),
    ("max", lambda lib, z, w: z.max(), NotImplementedError, _NO.format("max_all")),
    ("min", lambda lib, z, w: lib.min(z), NotImplementedError, _NO.format("min_all")),
    ("max_dim", lambda lib, z, w: z.max(0), RuntimeError, "max(): does not support complex input"),
    ("min_dim", lambda lib, z, w: lib.min(z, 0, keepdim=True), RuntimeError,
     "min(): does not support complex input"),
    ("amax", lambda lib, z, w: z.amax(), NotImplementedError, _NO.format("max_values_cpu")),
    ("amin", lambda lib, z, w: lib.amin(z, 0), NotImplementedError, _NO.format("min_values_cpu")),
    ("aminmax", lambda lib, z, w: lib.aminmax(z), NotImplementedError, _NO.format("aminmax_cpu")),
    ("argmax", lambda lib, z, w: z.argmax(), RuntimeError,
     "argmax(): does not support complex input"),
    ("argmin", lambda lib, z, w: z.argmin(0), RuntimeError,
     "argmin(): does not support complex input"),
    ("sort", lambda lib, z, w: z.sort(), RuntimeError,
     " Sort does not support complex dtypes on CPU"),
    ("argsort", lambda lib, z, w: lib.argsort(z, descending=True), RuntimeError,
     " Sort does not support complex dtypes on CPU"),
    ("msort", lambda lib, z, w: lib.msort(z), RuntimeError,
     " Sort does not support complex dtypes on CPU"),
    ("topk", lambda lib, z, w: z.topk(1), RuntimeError,
     " topk does not support complex dtypes on CPU"),
    ("kthvalue", lambda lib, z, w: z.kthvalue(1), NotImplementedError,
     _NO.format("kthvalue_cpu")),
    ("median", lambda lib, z, w: z.median(), NotImplementedError, _NO.format("median_cpu")),
    ("median_dim", lambda lib, z, w: z.median(0), NotImplementedError, _NO.format("median_out")),
    ("nanmedian", lambda lib, z, w: z.nanmedian(), NotImplementedError, _NO.format("median_cpu")),
    ("mode", lambda lib, z, w: z.mode(), NotImplementedError, _NO.format("mode_cpu")),
    ("unique", lambda lib, z, w: lib.unique(z), NotImplementedError, _NO.format("unique")),
    ("quantile", lambda lib, z, w: lib.quantile(z, 0.5), RuntimeError,
     "quantile() input tensor must be either float or double dtype"),
    ("cummax", lambda lib, z, w: z.cummax(0), NotImplementedError, _NO.format("cummax_cpu")),
    ("cummin", lambda lib, z, w: lib.cummin(z, 0), NotImplementedError, _NO.format("cummin_cpu")),
    ("searchsorted", lambda lib, z, w: lib.searchsorted(z, w), NotImplementedError,
     _NO.format("searchsorted_out_cpu")),
    ("clamp", lambda lib, z, w: z.clamp(0, 1), NotImplementedError,
     "clamp is not supported for complex types"),
    ("clamp_tensor", lambda lib, z, w: lib.clamp(z, max=w), NotImplementedError,
     "clamp is not supported for complex types"),
    ("clip", lambda lib, z, w: z.clip(min=0), NotImplementedError,
     "clamp is not supported for complex types"),
    ("max_other", lambda lib, z, w: lib.max(z, w), RuntimeError,
     "maximum not implemented for complex tensors."),
    ("fmax", lambda lib, z, w: lib.fmax(z, w), RuntimeError,
     "fmax not implemented for complex tensors."),
    ("fmin", lambda lib, z, w: lib.fmin(z, w), RuntimeError,
     "fmin not implemented for complex tensors."),
    ("heaviside", lambda lib, z, w: lib.heaviside(z, w), RuntimeError,
     "heaviside is not yet implemented for complex tensors."),
    ("isneginf", lambda lib, z, w: lib.isneginf(z), RuntimeError,
     "isneginf does not support complex inputs."),
    ("isposinf", lambda lib, z, w: z.isposinf(), RuntimeError,
     "isposinf does not support complex inputs."),
    ("signbit", lambda lib, z, w: lib.signbit(z), NotImplementedError,
     "signbit is not implemented for complex tensors."),
    ("softmax", lambda lib, z, w: lib.softmax(z, 0), NotImplementedError,
     _NO.format("softmax_lastdim_kernel_impl")),
    ("softmax_middle", lambda lib, z, w: z[None].softmax(0), NotImplementedError,
     _NO.format("softmax_kernel_impl")),
    ("log_softmax", lambda lib, z, w: z[None].log_softmax(0), NotImplementedError,
     _NO.format("log_softmax_kernel_impl")),
    ("nansum", lambda lib, z, w: lib.nansum(z), RuntimeError,
     "nansum on CPU does not support complex inputs"),
    ("nanmean", lambda lib, z, w: z.nanmean(), RuntimeError,
     "nansum on CPU does not support complex inputs"),
    ("maximum", lambda lib, z, w: lib.maximum(z, w), RuntimeError,
     "maximum not implemented for complex tensors."),
    ("minimum", lambda lib, z, w: lib.minimum(z, w.real), RuntimeError,
     "minimum not implemented for complex tensors."),
    ("sign", lambda lib, z, w: z.sign(), NotImplementedError,
     "Unlike NumPy, torch.sign is not intended to support complex numbers. Please use torch.sgn "
     "instead."),
    ("relu", lambda lib, z, w: lib.nn.functional.relu(z), NotImplementedError,
     "clamp is not supported for complex types"),
    ("relu_", lambda lib, z, w: z.relu_(), NotImplementedError,
     "clamp is not supported for complex types")]


@pytest.mark.parametrize("name, op, error, message", _ORDERING_REFUSALS,
                         ids=[r[0] for r in _ORDERING_REFUSALS])
def test_ordering_ops_refuse_complex_as_torch(name, op, error, message):
    for lib in [mt] + ([torch] if torch is not None else []):
        z, w = lib.tensor([1 + 1j, 2 - 1j]), lib.tensor([1j, 2 + 0j])
        with pytest.raises(error) as raised:
            op(lib, z, w)
        assert str(raised.value).split("\n")[0] == message, lib.__name__


def test_ops_without_complex_kernels_raise():
    z = mt.tensor([1 + 1j])
    with pytest.raises(NotImplementedError, match="not implemented for 'ComplexFloat'"):
        z.erf()
    with pytest.raises(NotImplementedError, match="floor is not supported for complex inputs"):
        z.floor()
    with pytest.raises(NotImplementedError, match="not implemented for 'ComplexFloat'"):
        mt.logaddexp2(z, z)


# ---- elementwise math -------------------------------------------------------------------------
_UNARY = {   # name: numpy's function (the reference away from special values)
    "log": np.log, "log2": np.log2, "log10": np.log10, "log1p": np.log1p, "sqrt": np.sqrt,
    "rsqrt": lambda z: 1 / np.sqrt(z), "sin": np.sin, "cos": np.cos, "tan": np.tan,
    "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh, "sigmoid": lambda z: 1 / (1 + np.exp(-z)),
    "exp2": np.exp2, "expm1": np.expm1, "exp": np.exp, "square": np.square, "asin": np.arcsin,
    "acos": np.arccos, "atan": np.arctan, "asinh": np.arcsinh, "acosh": np.arccosh,
    "atanh": np.arctanh}
_SPECIAL = [0.0, -0.0, 1.0, -1.0, 2.5, -3.0, 1e-8, -1e-8, 0.5, 30.0, -30.0, 400.0, -400.0,
            np.inf, -np.inf, np.nan]


def _special_values(dtype):
    """Every (re, im) pair of _SPECIAL, signed zeros kept (a complex literal would lose them)."""
    re, im = np.meshgrid(_SPECIAL, _SPECIAL)
    z = np.empty(re.size, dtype)
    z.real, z.imag = re.ravel(), im.ravel()
    return z


def _assert_same_complex(ours, theirs, rtol):
    """Equal within rtol where finite (a zero against a rounding residue within 1e-20);
    NaN, infinities and the signs of zeros exactly."""
    for part in ("real", "imag"):
        x, y = getattr(ours, part), getattr(theirs, part)
        exact = ~np.isfinite(y) | ~np.isfinite(x) | ((x == 0) & (y == 0))
        np.testing.assert_array_equal(np.isnan(x), np.isnan(y), part)
        both = exact & ~np.isnan(y)
        np.testing.assert_array_equal(x[both], y[both], part)
        np.testing.assert_array_equal(np.signbit(x[both]), np.signbit(y[both]), part)
        np.testing.assert_allclose(x[~exact], y[~exact], rtol=rtol, atol=1e-20, err_msg=part)


@needs_torch
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("name", list(_UNARY))
def test_unary_math_matches_torch_on_special_values(name, dtype):
    """libm's C99 functions on the CPU: branch cuts (a negative real part with ±0 imaginary
    part), signed zeros, overflow and infinities as torch gives them."""
    z = _special_values(dtype)
    with np.errstate(all="ignore"):
        ours = getattr(mt, name)(mt.from_numpy(z)).numpy()
    theirs = getattr(torch, name)(torch.from_numpy(z)).numpy()
    _assert_same_complex(ours, theirs, 2e-5 if dtype is np.complex64 else 1e-12)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_unary_math_matches_numpy(device, dtype):
    rng = np.random.default_rng(31)
    values = _complex(rng, (3, 4), dtype) * 2
    cut = np.array([-1.5, -2.0, -0.25], dtype)              # the negative reals, ±0 imaginary
    cut.imag = [0.0, -0.0, -0.0]
    rtol = 2e-5 if dtype is np.complex64 else 1e-12
    for name, reference in _UNARY.items():
        fn = getattr(mt, name)
        for source in (values, values.T, values[1, 2], values[:0], cut):   # non-contiguous, 0-d
            ours = fn(mt.tensor(source, device=device))
            assert ours.dtype is mt.tensor(source).dtype and ours.shape == source.shape
            with np.errstate(all="ignore"):
                _assert_same_complex(_host(ours), np.asarray(reference(source)), rtol)
        method = getattr(mt.tensor(values, device=device), name)()
        np.testing.assert_allclose(_host(method), reference(values), rtol=rtol, atol=rtol)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_pow_matches_numpy(device, dtype):
    rng = np.random.default_rng(32)
    a, b = _complex(rng, (3, 1, 4), dtype), _complex(rng, (5, 1), dtype)
    real = rng.random((5, 1)) + 0.5
    ta, tb = mt.tensor(a, device=device), mt.tensor(b, device=device)
    rtol = 1e-4 if dtype is np.complex64 else 1e-12
    cases = [(ta ** tb, a ** b), (mt.pow(ta, tb[:4].T), a ** b[:4].T), (ta ** 2, a * a),
             (ta ** 3, a * a * a), (ta ** -2, 1 / (a * a)), (ta ** 0.5, np.sqrt(a)),
             (ta ** -0.5, 1 / np.sqrt(a)), (ta ** -1, 1 / a), (ta ** 0, np.ones_like(a)),
             (ta ** 1, a), (ta ** 1.7, a ** 1.7), (ta.pow(-2.25), a ** -2.25),
             (2 ** ta, 2 ** a), (ta ** (1 - 0.5j), a ** (1 - 0.5j)),
             (mt.tensor(real.astype(a.real.dtype), device=device) ** tb, real ** b),
             (ta[:, :, ::2] ** tb[1, 0], a[:, :, ::2] ** b[1, 0]), (ta[:0] ** tb, a[:0] ** b)]
    for ours, expected in cases:
        assert _host(ours).dtype == dtype and ours.device.type == device
        np.testing.assert_allclose(_host(ours), expected, rtol=rtol, atol=rtol)
    zero = mt.zeros(2, dtype=ta.dtype, device=device)
    assert _host(zero ** mt.tensor([2.0, 0.5 + 1j], dtype=ta.dtype, device=device)).tolist() \
        == [0j, 0j]


def test_elementwise_math_gradcheck(device):
    rng = np.random.default_rng(33)
    z = mt.tensor(_complex(rng, (2, 3)) * 0.8, requires_grad=True, device=device)
    w = mt.tensor(_complex(rng, (3,)) * 0.5, requires_grad=True, device=device)
    r = mt.tensor(rng.random(3) + 0.5, requires_grad=True, device=device)
    for name in _UNARY:
        assert mt.autograd.gradcheck(getattr(mt, name), (z,)), name
    cases = [((z, w), lambda a, b: a ** b), ((z,), lambda a: a ** 2.5),
             ((z,), lambda a: a ** -1.5), ((z,), lambda a: a ** 3), ((z,), lambda a: a ** 0.5),
             ((w,), lambda b: 2 ** b), ((r, w), lambda a, b: a ** b),
             ((z,), lambda a: a ** (0.5 + 1j)), ((z,), lambda a: a.log().sin() * a.sqrt())]
    for inputs, fn in cases:
        assert mt.autograd.gradcheck(fn, inputs)
    assert mt.autograd.gradgradcheck(lambda a: a.log() * a.tanh(), (z,))


@needs_torch
def test_elementwise_math_gradients_match_torch():
    """Node names and gradients of a real loss through every op, with torch's zero cases of
    pow (a zero exponent, a zero base to a real power)."""
    values = np.array([1 + 1j, -2 - 0.5j, 0.3j, -1.5 + 0j, 0j])
    exponents = np.array([0.5 - 1j, 2.0, -1j, 0, 1.5])
    results = []
    for lib in (torch, mt):
        z = lib.tensor(values, requires_grad=True)
        e = lib.tensor(exponents, requires_grad=True)
        outs = [getattr(lib, name)(z[:4]) for name in _UNARY if name != "square"]
        outs += [z ** e, z ** 2.5, z ** 0, z[:4] ** -1.5, z ** (1 + 1j), 3 ** z]
        loss = sum((o.real * 1.3 + o.imag * 0.7).sum() for o in outs)
        loss.backward()
        results.append(([o.grad_fn.name() for o in outs], z.grad.numpy(), e.grad.numpy()))
    (their_names, *theirs), (our_names, *ours) = results
    assert our_names[:-2] == their_names[:-2]
    for our, their in zip(ours, theirs):
        np.testing.assert_allclose(our, their, rtol=1e-10, atol=1e-12)


@needs_torch
def test_predicates_and_isclose_match_torch():
    nan, inf = float("nan"), float("inf")
    a = [1 + 1j, 1 + 1e-9j, complex(nan, 1), complex(inf, 0), 2j, complex(0, -inf)]
    b = [1 + 1j, 1 + 0j, complex(nan, 1), complex(inf, 0), 2.001j, complex(0, -inf)]
    for dtype in ("complex64", "complex128"):
        outputs = []
        for lib in (torch, mt):
            x, y = lib.tensor(a, dtype=getattr(lib, dtype)), lib.tensor(b, dtype=getattr(lib, dtype))
            outputs.append([t.tolist() for t in (
                lib.isclose(x, y), lib.isclose(x, y, equal_nan=True), lib.isclose(x, y, 1e-2),
                lib.isclose(x, y, 0, 0), x.isnan(), x.isinf(), x.isfinite(), x == y, x != y,
                lib.eq(x, 1 + 1j))] + [lib.allclose(x[:2], y[:2]), lib.allclose(x, y),
                                       lib.allclose(x, y, equal_nan=True)])
        assert outputs[1] == outputs[0]


@needs_torch
def test_random_fills_and_complex_layers_match_torch():
    """uniform_ / normal_ of a complex tensor draw its (re, im) floats in order (normal_ with
    std / √2 per part), so a seed gives torch's values and a complex nn.Linear is torch's."""
    results = []
    for lib in (torch, mt):
        lib.manual_seed(0)
        drawn = [lib.empty(3, dtype=lib.complex64).uniform_(-1, 2),
                 lib.empty(20, dtype=lib.complex128).normal_(1, 2),
                 lib.rand(2, 3, dtype=lib.complex64), lib.randn(5, dtype=lib.complex128),
                 lib.randn_like(lib.zeros(2, 2, dtype=lib.cfloat)),
                 lib.rand_like(lib.zeros(3, dtype=lib.cdouble)),
                 lib.nn.init.xavier_normal_(lib.empty(3, 4, dtype=lib.complex64))]
        layer = lib.nn.Linear(3, 2, dtype=lib.complex64)
        x = lib.tensor(_complex(np.random.default_rng(40), (4, 3), np.complex64))
        (layer(x).abs() ** 2).sum().backward()
        results.append([t.detach().numpy() for t in drawn + [layer.weight, layer.bias,
                                                            layer.weight.grad]])
    for ours, theirs in zip(results[1], results[0]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)
    leaf = mt.zeros(2, dtype=mt.complex64, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        leaf.uniform_()
    drawn = mt.randn(3, dtype=mt.complex64, requires_grad=True)
    assert drawn.is_leaf and drawn.requires_grad and drawn.dtype is mt.complex64


@needs_torch
def test_convolutions_match_torch():
    """conv1d / conv2d of complex tensors (four real convolutions of the parts) and a complex
    nn.Conv2d: values and gradients as torch's."""
    rng = np.random.default_rng(41)
    x1, w1, b1 = _complex(rng, (2, 3, 8)), _complex(rng, (4, 3, 3)), _complex(rng, (4,))
    x2, w2 = _complex(rng, (2, 4, 5, 6)), _complex(rng, (6, 2, 2, 3))
    results = []
    for lib in (torch, mt):
        lib.manual_seed(0)
        tensors = [lib.tensor(t, requires_grad=True) for t in (x1, w1, b1, x2, w2)]
        x, w, b, image, kernel = tensors
        layer = lib.nn.Conv2d(4, 2, 3, padding=1, dtype=lib.complex128)
        outs = [lib.nn.functional.conv1d(x, w, b, padding=1, stride=2),
                lib.nn.functional.conv1d(x[0], w),
                lib.nn.functional.conv2d(image, kernel, groups=2, dilation=(1, 2)),
                layer(image)]
        sum(((o.abs() ** 2).sum() + o.real.sum()) for o in outs).backward()
        results.append([o.detach().numpy() for o in outs] +
                       [t.grad.numpy() for t in tensors + [layer.weight, layer.bias]])
    for ours, theirs in zip(results[1], results[0]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)
    with pytest.raises(RuntimeError, match="expected scalar type ComplexFloat but found Float"):
        mt.nn.functional.conv1d(mt.ones(1, 1, 4, dtype=mt.complex64), mt.ones(1, 1, 2))


@needs_torch
def test_lerp_logaddexp_and_silu_match_torch():
    inf, nan = float("inf"), float("nan")
    edges = ([complex(inf, 0), complex(-inf, 0), complex(nan, 0), complex(-inf, 1)],
             [complex(inf, 1), 2 + 0j, 1 + 0j, complex(-inf, 3)])
    np.testing.assert_array_equal(mt.logaddexp(*map(mt.tensor, edges)).numpy(),
                                  torch.logaddexp(*map(torch.tensor, edges)).numpy())
    rng = np.random.default_rng(42)
    a, b, w = _complex(rng, (3, 4)), _complex(rng, (3, 4)), _complex(rng, (3, 4)) * 0.5
    results = []
    for lib in (torch, mt):
        x, y, t = (lib.tensor(v, requires_grad=True) for v in (a, b, w))
        outs = [lib.lerp(x, y, 0.3), lib.lerp(x, y, 0.7), x.lerp(y, t),
                lib.lerp(x, y, 0.25 + 0.5j)]
        sum((o.real * 1.3 + o.imag * 0.7).sum() for o in outs).backward()
        outs.append(lib.logaddexp(x, y) + lib.logaddexp(x, lib.ones(4, dtype=lib.float64)))
        silu = lib.nn.functional.silu(lib.tensor(a))
        results.append([o.detach().numpy() for o in outs] + [x.grad.numpy(), y.grad.numpy(),
                                                            t.grad.numpy(), silu.numpy()])
        with pytest.raises(RuntimeError, match="silu does not support automatic "
                                               "differentiation for outputs with complex dtype"):
            lib.nn.functional.silu(lib.tensor(a, requires_grad=True))
    for ours, theirs in zip(results[1], results[0]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-14)


@needs_torch
def test_solve_and_inv_match_torch():
    """linalg.solve / inv of complex matrices (the real system of twice the size): values,
    gradients and torch's errors."""
    rng = np.random.default_rng(43)
    a, b, v, batch = (_complex(rng, s) for s in ((3, 3), (3, 2), (3,), (2, 3, 3)))
    results = []
    for lib in (torch, mt):
        tensors = [lib.tensor(t, requires_grad=True) for t in (a, b, v, batch)]
        x, y, u, xs = tensors
        outs = [lib.linalg.solve(x, y), lib.linalg.solve(x, u), lib.linalg.inv(x),
                lib.linalg.solve(x, y.mT, left=False), lib.linalg.inv(xs),
                lib.linalg.solve(xs, y), lib.inverse(x)]
        sum((o.real * 1.3 + o.imag * 0.7).sum() for o in outs).backward()
        results.append([o.detach().resolve_conj().numpy() for o in outs] +
                       [t.grad.resolve_conj().numpy() for t in tensors])
    for ours, theirs in zip(results[1], results[0]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)
    singular = mt.zeros(2, 2, dtype=mt.complex64)
    with pytest.raises(mt.linalg.LinAlgError, match="The solver failed because the input "
                                                   "matrix is singular"):
        mt.linalg.solve(singular, mt.ones(2, dtype=mt.complex64))
    with pytest.raises(RuntimeError, match="Expected A and B to have the same dtype"):
        mt.linalg.solve(mt.ones(2, 2, dtype=mt.complex64), mt.ones(2))
    with pytest.raises(RuntimeError, match="Incompatible shapes of A and B for the equation XA"):
        mt.linalg.solve(mt.tensor(a), mt.tensor(v), left=False)


# ---- reductions -------------------------------------------------------------------------------
_REDUCTIONS = [   # (name, fn(lib, z)): values, dtypes and gradients compared with torch
    ("var", lambda lib, z: z.var()), ("var_dim", lambda lib, z: z.var(1, keepdim=True)),
    ("var_correction", lambda lib, z: lib.var(z, (0, 2), correction=0)),
    ("std", lambda lib, z: z.std(-1)), ("std_all", lambda lib, z: lib.std(z)),
    ("var_mean", lambda lib, z: lib.var_mean(z, 0)),
    ("std_mean", lambda lib, z: lib.std_mean(z, (1, 2), keepdim=True)),
    ("norm", lambda lib, z: z.norm()), ("norm_p1_dim", lambda lib, z: lib.norm(z, 1, 2)),
    ("vector_norm_3", lambda lib, z: lib.linalg.vector_norm(z, 3, (0, 1))),
    ("vector_norm_inf", lambda lib, z: lib.linalg.vector_norm(z, float("inf"), -1)),
    ("vector_norm_0", lambda lib, z: lib.linalg.vector_norm(z, 0)),
    ("linalg_norm", lambda lib, z: lib.linalg.norm(z[0], dim=1)),
    ("matrix_norm_fro", lambda lib, z: lib.linalg.matrix_norm(z)),
    ("matrix_norm_1", lambda lib, z: lib.linalg.matrix_norm(z, 1)),
    ("vector_norm_dtype", lambda lib, z: lib.linalg.vector_norm(z.to(lib.complex64),
                                                                dtype=lib.complex128)),
    ("prod", lambda lib, z: z.prod()), ("prod_dim", lambda lib, z: z.prod(1)),
    ("prod_keepdim", lambda lib, z: lib.prod(z, -1, keepdim=True)),
    ("prod_zero", lambda lib, z: (z * (lib.arange(4) != 2)).prod(2)),
    ("prod_empty", lambda lib, z: z[:, :0].prod(1)), ("prod_0d", lambda lib, z: z[0, 0, 0].prod()),
    ("mean_dims", lambda lib, z: z.mean((0, 2))), ("sum_dims", lambda lib, z: z.sum(-1, True)),
    ("cumsum", lambda lib, z: z.cumsum(1)), ("cumsum_t", lambda lib, z: z.transpose(0, 2).cumsum(0)),
    ("cumprod", lambda lib, z: z.cumprod(2)), ("cumprod_0", lambda lib, z: z[:, 1:].cumprod(0)),
    ("cumprod_zero", lambda lib, z: (z * (lib.arange(4) != 1)).cumprod(-1)),
    ("logsumexp", lambda lib, z: z.logsumexp(1)),
    ("logsumexp_keepdim", lambda lib, z: lib.logsumexp(z, (0, 2), keepdim=True))]


@needs_torch
@pytest.mark.parametrize("name, fn", _REDUCTIONS, ids=[r[0] for r in _REDUCTIONS])
def test_reductions_match_torch(name, fn):
    """Complex var / std / norms are real; prod, mean, sum and cumsum complex. Gradients are
    compared with torch's through a real loss of the outputs' real and imaginary parts."""
    values = _complex(np.random.default_rng(21), (2, 3, 4))
    results = []
    for lib in (torch, mt):
        z = lib.tensor(values, requires_grad=True)
        out = fn(lib, z)
        outs = out if isinstance(out, tuple) else (out,)
        loss = sum(((o.real if o.is_complex() else o) * 1.5 + (o.imag * 0.5 if o.is_complex()
                                                               else 0)).sum() for o in outs)
        grad = lib.autograd.grad(loss, z, allow_unused=True)[0] if loss.requires_grad else None
        results.append(([(str(o.dtype).split(".")[-1], o.detach().numpy()) for o in outs],
                        None if grad is None else grad.numpy()))
    (theirs, their_grad), (ours, our_grad) = results
    for (their_dtype, their_value), (our_dtype, our_value) in zip(theirs, ours):
        assert our_dtype == their_dtype
        np.testing.assert_allclose(our_value, their_value, rtol=1e-12, atol=1e-12)
    if their_grad is None:
        assert our_grad is None
    else:
        rtol = 1e-6 if name.endswith("dtype") else 1e-10     # a complex64 step on the way
        np.testing.assert_allclose(our_grad, their_grad, rtol=rtol, atol=rtol)


def test_reductions_gradcheck(device):
    rng = np.random.default_rng(22)
    z = mt.tensor(_complex(rng, (3, 4)), requires_grad=True, device=device)
    for fn in (lambda a: a.var(1), lambda a: a.std(), lambda a: mt.std_mean(a, 0)[0],
               lambda a: mt.var_mean(a, 1)[1], lambda a: a.norm(), lambda a: mt.norm(a, 3, 0),
               lambda a: mt.linalg.vector_norm(a, 1), lambda a: a.prod(), lambda a: a.prod(0),
               lambda a: a.cumsum(1), lambda a: a.mean(0), lambda a: a.cumprod(1),
               lambda a: a.logsumexp(0)):
        assert mt.autograd.gradcheck(fn, (z,))


def test_reductions_on_device(device):
    values = _complex(np.random.default_rng(23), (3, 5), np.complex64)
    z = mt.tensor(values, device=device)
    assert z.var().dtype is mt.float32 and z.var().device.type == device
    np.testing.assert_allclose(_host(z.var(0)), np.var(values, 0, ddof=1), rtol=1e-5)
    np.testing.assert_allclose(_host(z.std(1, correction=0)), np.std(values, 1), rtol=1e-5)
    np.testing.assert_allclose(_host(z.norm()), np.linalg.norm(values), rtol=1e-5)
    np.testing.assert_allclose(_host(z.prod(1)), np.prod(values, 1), rtol=1e-5)
    np.testing.assert_allclose(_host(z[:, ::2].prod()), np.prod(values[:, ::2]), rtol=1e-5)
    with pytest.raises(RuntimeError, match="dtype should be complex for complex inputs, but "
                                           "got Float"):
        mt.linalg.vector_norm(z, dtype=mt.float32)


def test_statistics_of_complex_match_numpy(device):
    """cov conjugates ((x - μ)(x - μ)^H), corrcoef clips each part, vander keeps the dtype,
    dist is the norm of the difference."""
    rng = np.random.default_rng(24)
    a, b = _complex(rng, (3, 5)), _complex(rng, (3, 5))
    ta, tb = mt.tensor(a, device=device), mt.tensor(b, device=device)
    np.testing.assert_allclose(_host(mt.cov(ta)), np.cov(a), rtol=1e-12)
    np.testing.assert_allclose(_host(mt.cov(ta, correction=0)), np.cov(a, bias=True), rtol=1e-12)
    corr = np.corrcoef(a)
    np.testing.assert_allclose(_host(mt.corrcoef(ta)), np.clip(corr.real, -1, 1) + 1j * np.clip(
        corr.imag, -1, 1), rtol=1e-12, atol=1e-15)
    assert mt.vander(ta[0]).dtype is mt.complex128
    np.testing.assert_allclose(_host(mt.vander(ta[0], 3)), np.vander(a[0], 3), rtol=1e-12)
    np.testing.assert_allclose(_host(mt.dist(ta, tb, 3)).item(),
                               np.sum(np.abs(a - b) ** 3) ** (1 / 3), rtol=1e-12)
    assert mt.autograd.gradcheck(lambda x, y: mt.dist(x, y) + mt.cov(x).abs().sum(), (
        ta.clone().requires_grad_(), tb.clone().requires_grad_()))


def test_conjugate_transposes(device):
    """H, mH and adjoint conjugate (the gradient through them too); addcdiv / addcmul keep a
    complex value."""
    values = np.array([[1 + 2j, 3 - 1j], [0.5j, -2 + 0j]])
    z = mt.tensor(values, device=device, requires_grad=True)
    for view in (z.H, z.mH, z.adjoint(), mt.adjoint(z)):
        np.testing.assert_array_equal(_host(view), values.conj().T)
    (z.mH.real.sum() + z.H.imag.sum()).backward()
    np.testing.assert_array_equal(_host(z.grad), np.full((2, 2), 1 - 1j))
    np.testing.assert_allclose(_host(mt.addcdiv(z, z, z + 1, value=0.5)),
                               values + 0.5 * values / (values + 1), rtol=1e-14)
    np.testing.assert_allclose(_host(mt.addcmul(z, z, z, value=0.5j)),
                               values + 0.5j * values * values, rtol=1e-14)


_LOSS_REFUSALS = [   # torch 2.13's exception and message for each loss given complex input
    (lambda F, z, r, i: F.mse_loss(z, r), NotImplementedError,
     '"mse_cpu" not implemented for \'ComplexFloat\''),
    (lambda F, z, r, i: F.mse_loss(r.double(), z), NotImplementedError,
     '"mse_cpu" not implemented for \'ComplexDouble\''),
    (lambda F, z, r, i: F.smooth_l1_loss(z, z), NotImplementedError,
     '"smooth_l1_cpu" not implemented for \'ComplexFloat\''),
    (lambda F, z, r, i: F.huber_loss(z, z, weight=r), NotImplementedError,
     '"huber_cpu" not implemented for \'ComplexFloat\''),
    (lambda F, z, r, i: F.binary_cross_entropy(z, z), NotImplementedError,
     '"binary_cross_entropy" not implemented for \'ComplexFloat\''),
    (lambda F, z, r, i: F.binary_cross_entropy_with_logits(z, r), NotImplementedError,
     '"log_sigmoid_cpu" not implemented for \'ComplexFloat\''),
    (lambda F, z, r, i: F.kl_div(z, z, reduction="sum"), RuntimeError,
     "kl_div: Complex inputs not supported."),
    (lambda F, z, r, i: F.nll_loss(z[None], i), NotImplementedError,
     '"nll_loss_out_frame" not implemented for \'ComplexFloat\''),
    (lambda F, z, r, i: F.cross_entropy(z[None], i), NotImplementedError,
     '"log_softmax_lastdim_kernel_impl" not implemented for \'ComplexFloat\''),
    (lambda F, z, r, i: F.hinge_embedding_loss(z, r), NotImplementedError,
     "clamp is not supported for complex types"),
    (lambda F, z, r, i: F.margin_ranking_loss(z, z, r), NotImplementedError,
     "clamp is not supported for complex types"),
    (lambda F, z, r, i: F.cosine_embedding_loss(z[None], z[None], r[:1]), NotImplementedError,
     "clamp is not supported for complex types"),
    (lambda F, z, r, i: F.multi_margin_loss(z[None], i), NotImplementedError,
     '"multi_margin_loss_cpu_kernel" not implemented for \'ComplexFloat\''),
    (lambda F, z, r, i: F.multilabel_margin_loss(z[None], i[None].expand(1, 2).clone()),
     NotImplementedError,
     '"multilabel_margin_loss_forward_out_frame" not implemented for \'ComplexFloat\''),
    (lambda F, z, r, i: F.multilabel_soft_margin_loss(z[None], r[None]), NotImplementedError,
     '"log_sigmoid_cpu" not implemented for \'ComplexFloat\''),
    (lambda F, z, r, i: F.mse_loss(z, z, reduction="bad"), ValueError,
     "bad is not a valid value for reduction")]


@pytest.mark.parametrize("case", range(len(_LOSS_REFUSALS)))
def test_losses_refuse_complex_as_torch(case):
    loss, error, message = _LOSS_REFUSALS[case]
    libs = [mt] + ([torch] if torch is not None else [])
    for lib in libs:
        z, r = lib.tensor([1 + 1j, 2 - 1j]), lib.tensor([1.0, 0.0])
        with pytest.raises(error) as raised:
            loss(lib.nn.functional, z, r, lib.tensor([0]))
        assert str(raised.value) == message, lib.__name__


def test_losses_torch_computes_for_complex():
    """l1 (|d|), a weighted mse (torch weighs in Python) and the likelihood losses are defined."""
    F = mt.nn.functional
    z, y = mt.tensor([1 + 1j, 2 - 1j]), mt.tensor([1 + 0j, 2j])
    assert F.l1_loss(z, y).item() == pytest.approx((1 + 13 ** 0.5) / 2)
    weighted = F.mse_loss(z, y, weight=mt.ones(2))
    assert weighted.dtype is mt.complex64 and weighted.item() == pytest.approx(-3 - 6j)


# ---- autograd ---------------------------------------------------------------------------------
def test_gradcheck_complex_ops(device):
    rng = np.random.default_rng(6)
    z = mt.tensor(_complex(rng, (2, 3)), requires_grad=True, device=device)
    w = mt.tensor(_complex(rng, (3,)), requires_grad=True, device=device)
    r = mt.tensor(rng.random((2, 3)) + 0.5, requires_grad=True, device=device)
    theta = mt.tensor(rng.standard_normal((3,)), requires_grad=True, device=device)
    x = mt.tensor(rng.standard_normal((2, 3, 2)), requires_grad=True, device=device)
    cases = [((z, w), lambda a, b: a * b), ((z, w), lambda a, b: a / b),
             ((z, w), lambda a, b: a + b * (2 - 1j) - 1j), ((z,), lambda a: a.abs()),
             ((z,), lambda a: a.angle()), ((z,), lambda a: a.exp()), ((z,), lambda a: a.sgn()),
             ((z,), lambda a: a.conj() * a.real), ((z,), lambda a: a.imag * 3),
             ((z, w), lambda a, b: (a * b).sum(0)), ((z,), lambda a: a.mean()),
             ((z,), lambda a: a.reciprocal()), ((z,), lambda a: a.square()),
             ((z,), lambda a: mt.view_as_real(a.t())), ((x,), lambda a: mt.view_as_complex(a)),
             ((r, theta), lambda a, b: mt.polar(a, b)), ((r, theta), lambda a, b: mt.complex(a, b)),
             ((z, w), lambda a, b: a @ b.unsqueeze(1)), ((x, w), lambda a, b: (
                 mt.view_as_complex(a) * b).abs().sum())]
    for inputs, fn in cases:
        assert mt.autograd.gradcheck(fn, inputs)


@needs_torch
def test_gradients_match_torch_convention():
    rng = np.random.default_rng(7)
    a_values, b_values = _complex(rng, (4,)), _complex(rng, (4,))
    results = []
    for lib in (torch, mt):
        a = lib.tensor(a_values, requires_grad=True)
        b = lib.tensor(b_values, requires_grad=True)
        loss = ((a * b).abs() + (a / b).angle() + (a.exp() * b.conj()).real).sum()
        loss.backward()
        results.append((loss.item(), a.grad.numpy(), b.grad.numpy()))
    for ours, theirs in zip(results[1], results[0]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12)


# ---- llama's rotary embedding -----------------------------------------------------------------
def _rope(lib):
    """llama's model.py functions, verbatim except for the library name."""
    def precompute_freqs_cis(dim, end, theta=10000.0):
        freqs = 1.0 / (theta ** (lib.arange(0, dim, 2)[: (dim // 2)].float() / dim))
        t = lib.arange(end, device=freqs.device)
        freqs = lib.outer(t, freqs).float()
        return lib.polar(lib.ones_like(freqs), freqs)  # complex64

    def reshape_for_broadcast(freqs_cis, x):
        ndim = x.ndim
        shape = [d if i == 1 or i == ndim - 1 else 1 for i, d in enumerate(x.shape)]
        return freqs_cis.view(*shape)

    def apply_rotary_emb(xq, xk, freqs_cis):
        xq_ = lib.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
        xk_ = lib.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
        freqs_cis = reshape_for_broadcast(freqs_cis, xq_)
        xq_out = lib.view_as_real(xq_ * freqs_cis).flatten(3)
        xk_out = lib.view_as_real(xk_ * freqs_cis).flatten(3)
        return xq_out.type_as(xq), xk_out.type_as(xk)

    return precompute_freqs_cis, apply_rotary_emb


@needs_torch
def test_llama_rope_forward_and_backward_match_torch(device):
    rng = np.random.default_rng(8)
    q = rng.standard_normal((2, 6, 3, 8)).astype(np.float32)
    k = rng.standard_normal((2, 6, 3, 8)).astype(np.float32)
    weight = rng.standard_normal((2, 6, 3, 8)).astype(np.float32)
    results = []
    for lib in (torch, mt):
        on = {"device": device} if lib is mt else {}
        precompute, apply = _rope(lib)
        freqs = precompute(8, 10)[2:8].to(**on)     # positions 2..7, as llama's start_pos
        xq = lib.tensor(q, requires_grad=True, **on)
        xk = lib.tensor(k, requires_grad=True, **on)
        out_q, out_k = apply(xq, xk, freqs)
        loss = (out_q * lib.tensor(weight, **on)).sum() + (out_k * out_k).mean()
        loss.backward()
        results.append([_host(freqs), _host(out_q), _host(out_k), _host(xq.grad),
                        _host(xk.grad)])
        assert out_q.dtype == lib.float32 and freqs.dtype == lib.complex64
    for ours, theirs in zip(results[1], results[0]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-6)


def test_llama_rope_gradcheck_float64(device):
    """The real-in / real-out RoPE path (complex128 intermediates) against finite
    differences."""
    rng = np.random.default_rng(9)
    _, apply = _rope(mt)
    angles = mt.tensor(rng.standard_normal((4, 2)), device=device)
    freqs = mt.polar(mt.ones_like(angles), angles)               # complex128

    def rope(xq, xk):
        xq_ = mt.view_as_complex(xq.reshape(*xq.shape[:-1], -1, 2))
        xk_ = mt.view_as_complex(xk.reshape(*xk.shape[:-1], -1, 2))
        f = freqs.view(1, 4, 1, 2)
        return mt.view_as_real(xq_ * f).flatten(3), mt.view_as_real(xk_ * f).flatten(3)

    xq = mt.tensor(rng.standard_normal((1, 4, 2, 4)), requires_grad=True, device=device)
    xk = mt.tensor(rng.standard_normal((1, 4, 2, 4)), requires_grad=True, device=device)
    assert mt.autograd.gradcheck(rope, (xq, xk))
    # the angles too: gradients through polar
    theta = mt.tensor(rng.standard_normal((4, 2)), requires_grad=True, device=device)
    assert mt.autograd.gradcheck(
        lambda t, q: mt.view_as_real(mt.view_as_complex(q.reshape(1, 4, 2, 2, 2)) *
                                     mt.polar(mt.ones_like(t), t).view(1, 4, 1, 2)).flatten(3),
        (theta, xq))
    assert apply(xq.float(), xk.float(), freqs.to(mt.complex64))[0].dtype is mt.float32


def _attention_step(lib, params, x_values, target_values, freqs, on):
    """One training step of a tiny single-layer attention model with llama's RoPE."""
    _, apply = _rope(lib)
    wq, wk, wv, wo = (lib.tensor(p, requires_grad=True, **on) for p in params)
    x, target = lib.tensor(x_values, **on), lib.tensor(target_values, **on)
    batch, seq, _ = x.shape
    heads, head_dim = 2, 4
    xq = (x @ wq).view(batch, seq, heads, head_dim)
    xk = (x @ wk).view(batch, seq, heads, head_dim)
    xv = (x @ wv).view(batch, seq, heads, head_dim)
    xq, xk = apply(xq, xk, freqs)
    scores = (xq.transpose(1, 2) @ xk.transpose(1, 2).transpose(2, 3)) / head_dim ** 0.5
    mask = lib.full((seq, seq), float("-inf"), **on).triu(1)
    attention = (scores + mask).softmax(-1)
    out = (attention @ xv.transpose(1, 2)).transpose(1, 2).reshape(batch, seq, -1) @ wo
    loss = ((out - target) ** 2).mean()
    loss.backward()
    optimizer = lib.optim.SGD([wq, wk, wv, wo], lr=0.1)
    optimizer.step()
    return loss.item(), [_host(w).copy() for w in (wq, wk, wv, wo)]


@needs_torch
def test_tiny_attention_training_step_with_rope_matches_torch(device):
    rng = np.random.default_rng(10)
    params = [rng.standard_normal((8, 8)).astype(np.float32) * 0.3 for _ in range(4)]
    x = rng.standard_normal((2, 5, 8)).astype(np.float32)
    target = rng.standard_normal((2, 5, 8)).astype(np.float32)
    results = []
    for lib in (torch, mt):
        on = {"device": device} if lib is mt else {}
        precompute, _ = _rope(lib)
        freqs = precompute(4, 5).to(**on)
        loss_before, weights = _attention_step(lib, params, x, target, freqs, on)
        loss_after, _ = _attention_step(lib, weights, x, target, freqs, on)
        assert loss_after < loss_before
        results.append((loss_before, loss_after, weights))
    (t_before, t_after, t_weights), (m_before, m_after, m_weights) = results
    np.testing.assert_allclose([m_before, m_after], [t_before, t_after], rtol=1e-5)
    for ours, theirs in zip(m_weights, t_weights):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)


@needs_torch
def test_index_padding_of_complex_tensors_matches_torch():
    """reflect / replicate / circular padding move complex elements as torch does (each part
    through the gather kernel), with gradients."""
    z = _complex(np.random.default_rng(42), (1, 2, 6))
    for mode in ("reflect", "replicate", "circular"):
        results = []
        for lib in (torch, mt):
            x = lib.tensor(z, requires_grad=True)
            out = lib.nn.functional.pad(x, (2, 3), mode=mode)
            (out.abs() ** 2 * lib.arange(11.0)).sum().backward()
            results.append((out.detach().numpy(), x.grad.numpy()))
        for ours, theirs in zip(results[1], results[0]):
            np.testing.assert_allclose(ours, theirs, rtol=1e-12)
