"""float16, bfloat16, int32, int16 and int8: storage, conversions, arithmetic in the compute
dtype rounded once (torch's CPU rule), gradients, numpy / pickle / checkpoint round trips,
promotion, and torch's errors. Results are compared with numpy (bfloat16 with torch when it is
installed: numpy has no bfloat16)."""
import pickle
import re
import warnings

import numpy as np
import pytest

import minitorch as mt
import minitorch.nn.functional as F
from minitorch import dtypes

try:
    import torch
except ImportError:     # the torch comparisons skip
    torch = None

NARROW_FLOATS = [mt.float16, mt.bfloat16]
NARROW_INTS = [mt.int32, mt.int16, mt.int8]
ALL = [mt.bool, mt.uint8, mt.int8, mt.int16, mt.int32, mt.int64, mt.float16, mt.bfloat16,
       mt.float32, mt.float64]
needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")


def _bf16_words(values):
    """numpy float32 values rounded to bfloat16 words (ties to even), the reference for ours."""
    bits = np.asarray(values, np.float32).view(np.uint32).astype(np.uint64)
    words = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(values), np.uint16(0x7FC0), words)


def _rounded(values, dtype):
    """float32 values rounded to `dtype` and read back as float32 (the reference rounding)."""
    values = np.asarray(values, np.float32)
    if dtype is mt.float16:
        return values.astype(np.float16).astype(np.float32)
    return (_bf16_words(values).astype(np.uint32) << 16).view(np.float32)


EDGES = np.array([0.0, -0.0, 1.0, -1.5, 3.14159, 65504.0, 65519.0, 65520.0, 1e6, np.inf, -np.inf,
                  np.nan, 6e-8, 2.98e-8, 3e-8, 1e-5, 1.00390625, 1.01171875, 1e-40, 3.4e38],
                 np.float32)


@pytest.mark.parametrize("dtype", NARROW_FLOATS, ids=str)
def test_float_conversion_rounds_to_nearest_even(device, dtype):
    rng = np.random.default_rng(0)
    values = np.concatenate([EDGES, (rng.standard_normal(5000) *
                                     10.0 ** rng.integers(-9, 6, 5000)).astype(np.float32)])
    t = mt.tensor(values, device=device).to(dtype)
    assert t.dtype is dtype
    np.testing.assert_array_equal(t.float().cpu().numpy(), _rounded(values, dtype))
    # and back: every float16 pattern converts exactly
    if dtype is mt.float16:
        every = np.arange(65536, dtype=np.uint16).view(np.float16)
        back = mt.from_numpy(every).to(device).float().cpu().numpy()
        np.testing.assert_array_equal(back, every.astype(np.float32))


@needs_torch
def test_bfloat16_words_match_torch():
    values = np.concatenate([EDGES, np.random.default_rng(1).standard_normal(1000, np.float32)])
    ours = mt.tensor(values).bfloat16()
    theirs = torch.tensor(values).bfloat16().view(torch.int16).numpy().view(np.uint16)
    # NaN: any quiet NaN (torch's own scalar and vector conversions give 0x7fc0 and 0xffff)
    number = ~np.isnan(values)
    np.testing.assert_array_equal(ours._data.numpy()[number], theirs[number])
    assert np.isnan(ours[~mt.from_numpy(number)].float().numpy()).all()


@pytest.mark.parametrize("dtype", NARROW_FLOATS, ids=str)
def test_elementwise_computes_in_float32_and_rounds_once(device, dtype):
    rng = np.random.default_rng(2)
    a = _rounded(rng.standard_normal((4, 5)), dtype)
    b = _rounded(rng.standard_normal(5), dtype)
    ta, tb = (mt.tensor(x, device=device).to(dtype) for x in (a, b))
    for ours, ref in [(ta + tb, a + b), (ta * tb, a * b), (ta / tb, a / b), (ta.exp(), np.exp(a)),
                      (ta * 3.3, a * np.float32(3.3)), (ta.t() - tb[:4], a.T - b[:4])]:
        assert ours.dtype is dtype
        np.testing.assert_allclose(ours.float().cpu().numpy(), _rounded(ref, dtype), rtol=1e-6)


@needs_torch
@pytest.mark.parametrize("name", ["float16", "bfloat16"])
def test_elementwise_bits_match_torch(name):
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((2, 64)).astype(np.float32)
    ours = [mt.tensor(x).to(getattr(mt, name)) for x in (a, b)]
    theirs = [torch.tensor(x).to(getattr(torch, name)) for x in (a, b)]
    for op in (lambda x, y: x + y, lambda x, y: x * y, lambda x, y: x / y,
               lambda x, y: x.exp(), lambda x, y: x.tanh(), lambda x, y: (x * 0.1).sigmoid()):
        got = op(*ours).float().numpy()
        want = op(*theirs).float().numpy()
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", NARROW_FLOATS, ids=str)
def test_reductions_and_matmul(device, dtype):
    rng = np.random.default_rng(4)
    a = _rounded(rng.standard_normal((6, 7)), dtype)
    w = _rounded(rng.standard_normal((7, 3)), dtype)
    ta, tw = (mt.tensor(x, device=device).to(dtype) for x in (a, w))
    s = ta.sum(1)
    assert s.dtype is dtype
    np.testing.assert_allclose(s.float().cpu().numpy(), _rounded(a.sum(1), dtype), rtol=1e-6)
    m = ta @ tw
    assert m.dtype is dtype
    np.testing.assert_allclose(m.float().cpu().numpy(), _rounded(a @ w, dtype), rtol=1e-2,
                               atol=1e-2)
    values, indices = ta.max(1)
    np.testing.assert_array_equal(values.float().cpu().numpy(), a.max(1))
    np.testing.assert_array_equal(indices.cpu().numpy(), a.argmax(1))
    np.testing.assert_array_equal(ta.sort(1)[0].float().cpu().numpy(), np.sort(a, 1))


@pytest.mark.parametrize("dtype", NARROW_INTS, ids=str)
def test_integer_arithmetic_wraps_like_numpy(device, dtype):
    np_dtype = dtype.numpy_dtype
    info = np.iinfo(np_dtype)
    a = np.array([info.max, info.min, 100, -7, 0], np_dtype)
    b = np.array([1, -1, 100, 3, 5], np_dtype)
    ta, tb = (mt.from_numpy(x.copy()).to(device) for x in (a, b))
    with np.errstate(over="ignore"):
        for ours, ref in [(ta + tb, a + b), (ta - tb, a - b), (ta * tb, a * b), (-ta, -a),
                          (ta + 300, (a.astype(np.int64) + 300).astype(np_dtype))]:
            assert ours.dtype is dtype
            np.testing.assert_array_equal(ours.cpu().numpy(), ref)
    assert ta.sum().dtype is mt.int64 and ta.sum().item() == int(a.astype(np.int64).sum())
    assert (ta // tb).dtype is dtype
    assert (ta / tb).dtype is mt.float32
    assert (ta > tb).dtype is mt.bool
    np.testing.assert_array_equal(ta.cumsum(0).cpu().numpy(), np.cumsum(a, dtype=np.int64))


@pytest.mark.parametrize("dtype", NARROW_FLOATS, ids=str)
def test_gradients_have_the_input_dtype_and_match_float32(device, dtype):
    rng = np.random.default_rng(5)
    x32 = _rounded(rng.standard_normal((2, 3, 6, 6)), dtype)
    w32 = _rounded(rng.standard_normal((4, 3, 3, 3)) * 0.3, dtype)
    lw32 = _rounded(rng.standard_normal((5, 36)) * 0.1, dtype)

    def step(cast):
        x = mt.tensor(x32, device=device).to(cast).requires_grad_()
        w = mt.tensor(w32, device=device).to(cast).requires_grad_()
        lw = mt.tensor(lw32, device=device).to(cast).requires_grad_()
        h = F.relu(F.conv2d(x, w, padding=1))
        h = F.max_pool2d(h, 2).reshape(2, -1)
        h = F.layer_norm(h, (36,))
        loss = F.cross_entropy(F.linear(h, lw).float(), mt.tensor([1, 3], device=device))
        loss.backward()
        return loss, x.grad, w.grad, lw.grad

    low, ref = step(dtype), step(mt.float32)
    for g in low[1:]:
        assert g.dtype is dtype
    tol = 2e-2 if dtype is mt.float16 else 1e-1
    for got, want in zip(low, ref):
        np.testing.assert_allclose(got.detach().float().cpu().numpy(), want.detach().cpu().numpy(), rtol=tol,
                                   atol=tol)


def test_module_half_and_bfloat16_convert_parameters():
    model = mt.nn.Sequential(mt.nn.Linear(3, 4), mt.nn.BatchNorm1d(4))
    model.half()
    assert all(p.dtype is mt.float16 for p in model.parameters())
    assert model[1].running_mean.dtype is mt.float16
    assert model[1].num_batches_tracked.dtype is mt.int64
    model.bfloat16()
    assert model(mt.ones(2, 3).bfloat16()).dtype is mt.bfloat16


def test_conversion_methods_and_legacy_constructors():
    t = mt.tensor([1.7, -2.2, 300.0])
    assert t.half().dtype is mt.float16 and t.bfloat16().dtype is mt.bfloat16
    assert t.int().dtype is mt.int32 and t.short().dtype is mt.int16 and t.char().dtype is mt.int8
    assert t.int().tolist() == [1, -2, 300]
    assert t.char().tolist() == [1, -2, 44]         # 300 wraps modulo 256, as in torch
    assert mt.IntTensor([1, 2]).dtype is mt.int32
    assert mt.HalfTensor(2, 3).shape == (2, 3) and mt.HalfTensor(2, 3).dtype is mt.float16
    assert mt.BFloat16Tensor([1.5]).tolist() == [1.5]
    assert mt.CharTensor(np.array([1, 2], np.int32)).dtype is mt.int8
    assert isinstance(mt.zeros(2, dtype=mt.int16), mt.ShortTensor)
    assert mt.zeros(2).half().type() == "torch.HalfTensor"
    assert mt.half is mt.float16 and mt.int is mt.int32 and mt.short is mt.int16


def test_numpy_round_trips_share_memory():
    for np_dtype, dtype in [(np.float16, mt.float16), (np.int32, mt.int32),
                            (np.int16, mt.int16), (np.int8, mt.int8)]:
        array = np.arange(6, dtype=np_dtype).reshape(2, 3)
        t = mt.from_numpy(array)
        assert t.dtype is dtype
        t[0, 0] = 5
        assert array[0, 0] == 5
        assert t.numpy().dtype == np_dtype and np.shares_memory(t.numpy(), array)
    with pytest.raises(TypeError, match="Got unsupported ScalarType BFloat16"):
        mt.ones(2).bfloat16().numpy()


def test_pickle_tensor_and_checkpoint_round_trips(tmp_path):
    values = [1.5, -2.25, 3e-3, 65504.0]
    for dtype in NARROW_FLOATS + NARROW_INTS:
        t = mt.tensor(values).to(dtype)
        back = pickle.loads(pickle.dumps(t))
        assert back.dtype is dtype and back.tolist() == t.tolist()
        assert mt.tensor(t).dtype is dtype and mt.tensor(t).tolist() == t.tolist()
    state = {d.name: mt.tensor(values).to(d) for d in NARROW_FLOATS + NARROW_INTS}
    mt.save(state, tmp_path / "ck.pt")
    loaded = mt.load(tmp_path / "ck.pt")
    for name, t in state.items():
        assert loaded[name].dtype is t.dtype and loaded[name].tolist() == t.tolist()


@needs_torch
def test_safetensors_codes_read_torch_dtypes(tmp_path):
    st = pytest.importorskip("safetensors.torch")
    tensors = {"h": torch.tensor([1.5, -2.0]).half(), "b": torch.tensor([3.0, 0.1]).bfloat16(),
               "i": torch.tensor([1, -2], dtype=torch.int32),
               "c": torch.tensor([-3], dtype=torch.int8)}
    st.save_file(tensors, str(tmp_path / "x.safetensors"))
    loaded = mt.load(tmp_path / "x.safetensors")
    for name, t in tensors.items():
        assert loaded[name].dtype.name == str(t.dtype).split(".")[1]
        assert loaded[name].tolist() == t.tolist()


def test_promotion():
    P = mt.promote_types
    assert P(mt.uint8, mt.int8) is mt.int16
    assert P(mt.float16, mt.bfloat16) is mt.float32
    assert P(mt.int32, mt.float16) is mt.float16
    assert P(mt.int8, mt.int32) is mt.int32
    assert (mt.ones(2, dtype=mt.float16) + mt.ones(2)).dtype is mt.float32
    assert (mt.ones(2, dtype=mt.float16) + 2.5).dtype is mt.float16
    assert (mt.ones(2, dtype=mt.int32) + 2).dtype is mt.int32
    assert (mt.ones(2, dtype=mt.int16) * 2.5).dtype is mt.float32
    assert (mt.ones(2, dtype=mt.bfloat16) + mt.tensor(1.0, dtype=mt.float64)).dtype is \
        mt.bfloat16


@needs_torch
def test_promotion_table_matches_torch():
    for a in ALL:
        for b in ALL:
            theirs = torch.promote_types(getattr(torch, a.name.rstrip("_")),
                                         getattr(torch, b.name.rstrip("_")))
            assert mt.promote_types(a, b).name == str(theirs).split(".")[1], (a, b)


@pytest.mark.parametrize("dtype,value,c_name", [(mt.int8, 300, "int8_t"),
                                                (mt.int8, -129, "int8_t"),
                                                (mt.int16, 1e6, "int16_t"),
                                                (mt.int32, float("inf"), "int")])
def test_fill_overflow_errors(dtype, value, c_name):
    with pytest.raises(RuntimeError, match=f"value cannot be converted to type {c_name} without "
                                           "overflow"):
        mt.full((2,), value, dtype=dtype)
    assert mt.full((1,), 1e6, dtype=mt.float16).item() == float("inf")


def test_finfo_iinfo_and_printing():
    assert mt.finfo(mt.bfloat16).eps == 2.0 ** -7 and mt.finfo(mt.bfloat16).bits == 16
    assert mt.finfo(mt.float16).max == 65504.0 and mt.finfo(mt.float16).resolution == 0.001
    assert mt.iinfo(mt.int8).min == -128 and mt.iinfo(mt.int32).max == 2 ** 31 - 1
    assert repr(mt.tensor([1.0, 2.0, 3.0]).bfloat16() * 3.3) == \
        "tensor([3.2969, 6.5938, 9.8750], dtype=minitorch.bfloat16)"


def test_random_draws_in_narrow_floats():
    mt.manual_seed(0)
    x = mt.rand(1000, dtype=mt.float16)
    assert x.dtype is mt.float16 and 0 <= x.min().item() and x.max().item() <= 1
    assert mt.randn(3, dtype=mt.bfloat16).dtype is mt.bfloat16
    y = F.dropout(mt.ones(1000, dtype=mt.bfloat16), 0.5)
    assert y.dtype is mt.bfloat16 and set(y.unique().tolist()) <= {0.0, 2.0}


def test_set_default_dtype_accepts_the_16_bit_floats():
    try:
        mt.set_default_dtype(mt.bfloat16)
        assert mt.tensor([1.5]).dtype is mt.bfloat16 and mt.zeros(1).dtype is mt.bfloat16
    finally:
        mt.set_default_dtype(mt.float32)
    with pytest.raises(TypeError):
        mt.set_default_dtype(mt.int32)


FACTORIZATIONS = {"inv": (RuntimeError, "linalg.inv: Low precision dtypes not supported. Got "),
                  "det": (NotImplementedError, '"lu_cpu" not implemented for '),
                  "svd": (NotImplementedError, '"linalg_svd_cpu" not implemented for '),
                  "qr": (NotImplementedError, '"geqrf_cpu" not implemented for '),
                  "eigh": (NotImplementedError, '"linalg_eigh_cpu" not implemented for '),
                  "cholesky": (NotImplementedError, '"cholesky_cpu" not implemented for ')}


@pytest.mark.parametrize("dtype,shown", [(mt.float16, "Half"), (mt.bfloat16, "BFloat16")])
@pytest.mark.parametrize("name", list(FACTORIZATIONS))
def test_factorizations_refuse_16_bit_floats_as_torch(name, dtype, shown):
    error, message = FACTORIZATIONS[name]
    a = (mt.eye(3) * 2).to(dtype)
    with pytest.raises(error) as ours:
        getattr(mt.linalg, name)(a)
    assert str(ours.value) == message + (shown if name == "inv" else f"'{shown}'")
    if torch is not None:
        with pytest.raises(error) as theirs:
            getattr(torch.linalg, name)((torch.eye(3) * 2).to(getattr(torch, dtype.name)))
        assert str(ours.value) == str(theirs.value)


def test_dlpack_shares_the_narrow_dtypes_and_refuses_bfloat16():
    for dtype in (mt.float16, mt.int32, mt.int16, mt.int8):
        t = mt.tensor([1, 2, 3]).to(dtype)
        array = np.from_dlpack(t)
        assert array.dtype == dtype.numpy_dtype and array.tolist() == [1, 2, 3]
        assert mt.from_dlpack(array).dtype is dtype
    with pytest.raises(BufferError, match="bfloat16"):
        np.from_dlpack(mt.ones(2).bfloat16())


@needs_torch
@pytest.mark.parametrize("name", ["float16", "bfloat16"])
def test_python_scalars_join_as_torch_holds_them(name):
    """mul/div/add keep a Python scalar in float32 (torch's opmath); sub, rsub, pow, fmod and
    comparisons round it to the tensor's dtype first, as torch's kernels do."""
    ours = mt.tensor([1.0, 2.0, 0.7, 5.5]).to(getattr(mt, name))
    theirs = torch.tensor([1.0, 2.0, 0.7, 5.5]).to(getattr(torch, name))
    for op in (lambda h: h + 3.3, lambda h: h - 3.3, lambda h: 3.3 - h, lambda h: h * 3.3,
               lambda h: 3.3 * h, lambda h: h / 3.3, lambda h: h ** 1.7, lambda h: 1.7 ** h,
               lambda h: h % 0.3, lambda h: h > 0.7001, lambda h: h == 1.001,
               lambda h: h.clone().sub_(3.3), lambda h: h.clamp(min=1.3)):
        assert op(ours).float().tolist() == op(theirs).float().tolist()


@pytest.mark.parametrize("name", ["int8", "int16", "int32", "int64", "uint8"])
def test_integer_matmul_and_linear_keep_the_dtype_and_wrap_as_torch(device, name):
    """torch 2.13 multiplies integer matrices (and runs integer Linear layers) in their own
    dtype, wrapping on overflow; ours is an exact product summed into that dtype."""
    torch = pytest.importorskip("torch")
    a = ((np.arange(6) * 50).reshape(2, 3)).astype(name)
    b = ((np.arange(12) * 30).reshape(3, 4)).astype(name)
    dtype = getattr(mt, name)
    ours = mt.tensor(a, dtype=dtype, device=device) @ mt.tensor(b, dtype=dtype, device=device)
    theirs = torch.tensor(a) @ torch.tensor(b)
    assert ours.dtype is dtype
    np.testing.assert_array_equal(ours.cpu().numpy(), theirs.numpy())
    ours = F.linear(mt.tensor(a, dtype=dtype, device=device),
                    mt.tensor(b.T.copy(), dtype=dtype, device=device),
                    mt.ones(4, dtype=dtype, device=device))
    theirs = torch.nn.functional.linear(torch.tensor(a), torch.tensor(b.T.copy()),
                                        torch.ones(4, dtype=getattr(torch, name)))
    assert ours.dtype is dtype
    np.testing.assert_array_equal(ours.cpu().numpy(), theirs.numpy())


# torch's checked conversion of a Python scalar into a float dtype: a finite value past the
# dtype's range overflows in fill / full / clamp / masked_fill / index_fill (and, for float32,
# in where and setitem, which wrap the scalar in a wider type first for float16 / bfloat16);
# tensor() and arithmetic round to inf silently
def _scalar_paths(dtype, device, big):
    x = mt.zeros(2, dtype=dtype, device=device)
    index = mt.tensor([0], device=device)
    return {"fill_": lambda: x.clone().fill_(big), "full": lambda: mt.full((2,), big, dtype=dtype,
                                                                          device=device),
            "full_like": lambda: mt.full_like(x, big), "new_full": lambda: x.new_full((2,), big),
            "clamp": lambda: x.clamp(min=big), "masked_fill": lambda: x.masked_fill(x == 0, big),
            "index_fill": lambda: x.index_fill(0, index, big),
            "where": lambda: mt.where(x == 0, x, big),
            "setitem": lambda: x.clone().__setitem__(0, big),
            "tensor": lambda: mt.tensor([big], dtype=dtype, device=device),
            "add": lambda: x + big, "inf fill": lambda: x.clone().fill_(float("inf"))}


@pytest.mark.parametrize("name,big", [("float16", 1e6), ("bfloat16", 1e39), ("float32", 1e39)])
def test_scalar_overflow_into_float_dtypes(device, name, big):
    dtype = getattr(mt, name)
    wider_first = {"where", "setitem"} if name != "float32" else set()
    quiet = {"tensor", "add", "inf fill"} | wider_first
    c_name = {"float16": "c10::Half", "bfloat16": "c10::BFloat16", "float32": "float"}[name]
    for path, call in _scalar_paths(dtype, device, big).items():
        if path in quiet:
            with warnings.catch_warnings():
                warnings.simplefilter("error")          # no numpy cast warning either
                call()
        else:
            with pytest.raises(RuntimeError, match=f"value cannot be converted to type "
                                                   f"{re.escape(c_name)} without overflow"):
                call()
    # the largest finite value itself fits
    largest = {"float16": 65504.0, "bfloat16": 3.3895313892515355e38,
               "float32": 3.4028234663852886e38}[name]
    assert mt.full((2,), largest, dtype=dtype, device=device).float().cpu().numpy()[0] == \
        np.float32(largest)
