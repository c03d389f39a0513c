"""Top-level torch spellings (in-place functions, rsub, fill, result_type, complex views of real
tensors), angle / isposinf / isneginf / isreal, window functions, torch.compile and the
float32-precision switch, constants, and mt.testing (assert_close, make_tensor)."""
import math

import numpy as np
import pytest

import minitorch as mt

WINDOWS = ("hann_window", "hamming_window", "blackman_window", "bartlett_window",
           "kaiser_window")


# ---- method spellings -------------------------------------------------------------------------
def test_inplace_top_level_spellings_write_into_the_tensor(device):
    x = mt.tensor([0.25, 1.0, 4.0], device=device)
    assert mt.sqrt_(x) is x
    np.testing.assert_allclose(x.cpu().numpy(), [0.5, 1.0, 2.0])
    mt.clamp_(x, max=1.5)
    mt.mul(x, 1)  # an out-of-place op in between leaves x alone
    np.testing.assert_allclose(x.cpu().numpy(), [0.5, 1.0, 1.5])
    assert mt.zero_(x).tolist() == [0.0, 0.0, 0.0]
    with pytest.raises(TypeError, match=r"exp_\(\): argument 'input' \(position 1\) must be "
                                        "Tensor, not list"):
        mt.exp_([1.0])


def test_inplace_spelling_keeps_autograd_rules():
    leaf = mt.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        mt.exp_(leaf)
    y = leaf * 2
    mt.sigmoid_(y)
    y.sum().backward()
    s = 1 / (1 + math.exp(-2))
    np.testing.assert_allclose(leaf.grad.numpy(), [2 * s * (1 - s)] * 2, rtol=1e-6)


def test_detach_conj_real_and_ravel_spellings():
    x = mt.arange(6.0).reshape(2, 3).requires_grad_()
    assert not mt.detach(x).requires_grad
    assert mt.conj(x) is x or mt.conj(x).tolist() == x.tolist()
    assert mt.resolve_conj(x).tolist() == x.tolist() and not mt.is_conj(x) and not mt.is_neg(x)
    assert mt.real(x).tolist() == x.tolist()
    with pytest.raises(RuntimeError, match="imag is not implemented"):
        mt.imag(x)
    assert mt.ravel(x.T).tolist() == [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
    assert mt.adjoint(x).shape == (3, 2)


def test_rsub_fill_row_stack_and_result_type_match_torch():
    torch = pytest.importorskip("torch")
    for lib in (mt, torch):
        t = lib.tensor([1, 2])
        assert lib.rsub(t, 5, alpha=2).tolist() == [3, 1]
        assert lib.rsub(t, 2.5).tolist() == [1.5, 0.5]
        assert lib.rsub(t, lib.tensor([1.0, 1.0])).tolist() == [0.0, -1.0]
        z = lib.zeros(2)
        assert lib.fill(z, 3.0).tolist() == [3.0, 3.0] and z.tolist() == [0.0, 0.0]
        assert lib.row_stack([lib.ones(2), lib.zeros(2)]).shape == (2, 2)
    pairs = [(mt.tensor([1]), 1.0), (2, 3.0), (2, 3), (mt.tensor([1]), mt.tensor(1.0)),
             (mt.tensor([True]), 2), (mt.tensor([1.0]), mt.tensor([1.0], dtype=mt.float64))]
    for a, b in pairs:
        ta = torch.tensor(a.tolist(), dtype=getattr(torch, str(a.dtype).split(".")[1])) \
            if isinstance(a, mt.Tensor) else a
        tb = torch.tensor(b.tolist(), dtype=getattr(torch, str(b.dtype).split(".")[1])) \
            if isinstance(b, mt.Tensor) else b
        assert str(mt.result_type(a, b)).split(".")[1] == str(torch.result_type(ta, tb)).split(
            ".")[1]


# ---- angle and the infinity tests -------------------------------------------------------------
SPECIAL = [-1.0, 0.0, 2.0, math.nan, math.inf, -math.inf, -0.0]


def test_unsafe_splits_narrow_copy_nonzero_static_and_layout_queries(device):
    t = mt.arange(6.0, device=device)
    assert [c.tolist() for c in mt.unsafe_chunk(t, 4)] == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]
    assert [c.tolist() for c in t.unsafe_split(4)] == [[0.0, 1.0, 2.0, 3.0], [4.0, 5.0]]
    assert [c.tolist() for c in mt.unsafe_split_with_sizes(t, [1, 5])] == \
        [[0.0], [1.0, 2.0, 3.0, 4.0, 5.0]]
    copy = mt.narrow_copy(t.view(2, 3), 1, 1, 2)
    assert copy.tolist() == [[1.0, 2.0], [4.0, 5.0]] and copy.is_contiguous()
    copy[0, 0] = 9.0
    assert t[1].item() == 1.0                       # a copy, not a view
    values = mt.tensor([0, 3, 0, 5], device=device)
    assert mt.nonzero_static(values, size=3).tolist() == [[1], [3], [-1]]
    assert values.nonzero_static(size=1, fill_value=9).tolist() == [[1]]
    assert mt.nonzero_static(values.view(2, 2), size=3, fill_value=7).tolist() == \
        [[0, 1], [1, 1], [7, 7]]
    with pytest.raises(RuntimeError, match="'size' must be an non-negative integer"):
        mt.nonzero_static(values, size=-1)
    cube = mt.ones(2, 3, 4, device=device)
    assert cube.permute(2, 0, 1).dim_order() == (1, 2, 0) and cube.dim_order() == (0, 1, 2)
    assert cube.is_set_to(cube) and cube.is_set_to(cube[:, :])
    assert not cube.is_set_to(cube.view(6, 4)) and not cube.is_set_to(cube.clone())


def test_angle_isposinf_isneginf_isreal(device):
    x = mt.tensor(SPECIAL, dtype=mt.float64, device=device)
    angle = mt.angle(x).cpu().numpy()
    # torch (unlike numpy) gives angle(-0.0) == 0
    np.testing.assert_array_equal(angle, [math.pi, 0, 0, math.nan, 0, math.pi, 0])
    assert x.isposinf().tolist() == [False, False, False, False, True, False, False]
    assert mt.isneginf(x).tolist() == [False, False, False, False, False, True, False]
    assert mt.isreal(x).all()
    ints = mt.tensor([-3, 0, 3], device=device)
    assert mt.angle(ints).dtype == mt.float32
    np.testing.assert_allclose(mt.angle(ints).cpu().numpy(), [math.pi, 0, 0])
    assert not mt.isposinf(ints).any() and mt.isposinf(ints).dtype == mt.bool
    assert not mt.isneginf(mt.tensor([True], device=device)).any()


def test_angle_has_a_zero_gradient():
    x = mt.tensor([-1.0, 2.0], dtype=mt.float64, requires_grad=True)
    y = mt.angle(x)
    assert y.requires_grad
    y.sum().backward()
    assert x.grad.tolist() == [0.0, 0.0]


# ---- windows ----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", WINDOWS)
def test_windows_match_torch(device, name):
    torch = pytest.importorskip("torch")
    for length in (0, 1, 2, 5, 16):
        for periodic in (True, False):
            for dtype in ("float32", "float64"):
                ours = getattr(mt, name)(length, periodic, dtype=getattr(mt, dtype),
                                         device=device)
                theirs = getattr(torch, name)(length, periodic, dtype=getattr(torch, dtype))
                assert ours.dtype == getattr(mt, dtype) and ours.device.type == device
                np.testing.assert_allclose(ours.cpu().numpy(), theirs.numpy(),
                                           rtol=1e-5 if dtype == "float32" else 1e-12,
                                           atol=1e-6 if dtype == "float32" else 1e-13)


def test_window_parameters_and_errors():
    torch = pytest.importorskip("torch")
    np.testing.assert_allclose(mt.hamming_window(7, False, 0.5, 0.5).numpy(),
                               torch.hamming_window(7, False, 0.5, 0.5).numpy(), atol=1e-6)
    np.testing.assert_allclose(mt.kaiser_window(9, beta=3.0).numpy(),
                               torch.kaiser_window(9, True, 3.0).numpy(), rtol=1e-5)
    assert mt.hann_window(4).dtype == mt.get_default_dtype()
    assert mt.hann_window(4, requires_grad=True).requires_grad
    with pytest.raises(RuntimeError, match="hann_window expects floating point dtypes"):
        mt.hann_window(3, dtype=mt.int64)
    with pytest.raises(RuntimeError, match="requires non-negative window_length, got "
                                           "window_length=-1"):
        mt.bartlett_window(-1)


# ---- compile, precision, constants ------------------------------------------------------------
def test_compile_returns_the_model_and_works_as_a_decorator():
    model = mt.nn.Linear(2, 2)
    assert mt.compile(model) is model
    assert mt.compile(model, mode="max-autotune", fullgraph=True) is model

    @mt.compile(dynamic=True)
    def double(t):
        return t * 2
    assert double(mt.ones(2)).tolist() == [2.0, 2.0]
    with pytest.raises(RuntimeError, match="Either mode or options"):
        mt.compile(model, mode="default", options={})


def test_float32_matmul_precision_and_constants():
    assert mt.get_float32_matmul_precision() == "highest"
    mt.set_float32_matmul_precision("high")
    assert mt.get_float32_matmul_precision() == "high"
    with pytest.warns(UserWarning, match="low is not one of"):
        mt.set_float32_matmul_precision("low")
    mt.set_float32_matmul_precision("highest")
    assert (mt.pi, mt.e, mt.inf) == (math.pi, math.e, math.inf) and math.isnan(mt.nan)
    assert mt.ones(3)[mt.newaxis].shape == (1, 3)


# ---- mt.testing -------------------------------------------------------------------------------
def failure(*args, **kwargs):
    with pytest.raises(AssertionError) as info:
        mt.testing.assert_close(*args, **kwargs)
    return str(info.value)


def test_assert_close_reports_like_torch():
    T = mt.tensor
    assert failure(T([1.0, 2.0, 3.0]), T([1.0, 2.5, 3.0])) == (
        "Tensor-likes are not close!\n\nMismatched elements: 1 / 3 (33.3%)\nGreatest absolute "
        "difference: 0.5 at index (1,) (up to 1e-05 allowed)\nGreatest relative difference: "
        "0.20000000298023224 at index (1,) (up to 1.3e-06 allowed)")
    assert failure(T([1, 2, 3]), T([1, 3, 3])) == (
        "Tensor-likes are not equal!\n\nMismatched elements: 1 / 3 (33.3%)\nGreatest absolute "
        "difference: 1 at index (1,)\nGreatest relative difference: 0.3333333432674408 at index "
        "(1,)")
    assert failure(1.0, 1.5) == (
        "Scalars are not close!\n\nExpected 1.5 but got 1.0.\nAbsolute difference: 0.5 (up to "
        "1e-07 allowed)\nRelative difference: 0.3333333333333333 (up to 1e-07 allowed)")
    assert failure([T([1.0]), {"x": [T(1), T(2)]}], [T([1.0]), {"x": [T(1), T(3)]}]) == (
        "Scalars are not equal!\n\nExpected 3 but got 2.\nAbsolute difference: 1\nRelative "
        "difference: 0.3333333333333333\n\nThe failure occurred for item [1]['x'][1]")
    assert "at index (1, 1)" in failure(T([[1.0, 2.0], [3.0, 4.0]]), T([[1.0, 2.0], [3.0, 5.0]]))
    assert "attribute 'shape' do not match" in failure(T([1.0, 2.0]), T([1.0, 2.0, 3.0]))
    assert "attribute 'dtype' do not match" in failure(T([1.0]), T([1.0], dtype=mt.float64))
    assert "(d)types do not match" in failure(1, 1.0)
    assert failure(T([1.0]), T([2.0]), msg="custom") == "custom"
    assert failure(T([1.0]), T([2.0]), msg=lambda m: "w:" + m[:6]) == "w:Tensor"
    assert "length of the sequences mismatch: 2 != 3" in failure([1, 2], [1, 2, 3])
    assert "nan at index (0,)" in failure(T([math.nan]), T([math.nan]))


def test_assert_close_passes_within_tolerance_and_validates_arguments(device):
    x = mt.tensor([1.0, math.nan], device=device)
    mt.testing.assert_close(x, x.clone(), equal_nan=True)
    mt.testing.assert_close(mt.tensor([1.0]), mt.tensor([1.0], dtype=mt.float64),
                            check_dtype=False)
    mt.testing.assert_close(mt.tensor([1.0]), mt.tensor([1.05]), rtol=0.1, atol=0.0)
    mt.testing.assert_close(np.array([1.0]), np.array([1.0 + 1e-9]))
    mt.testing.assert_close({"a": (1, 2.0)}, {"a": (1, 2.0)})
    with pytest.raises(ValueError, match="Both 'rtol' and 'atol' must be either specified or "
                                         "omitted, but got no atol"):
        mt.testing.assert_close(x, x, rtol=0)
    with pytest.raises(TypeError, match="No comparison pair"):
        mt.testing.assert_close(mt.tensor([1.0]), np.array([1.0]))
    with pytest.raises(AssertionError, match=r"'stride\(\)' do not match"):
        mt.testing.assert_close(mt.ones(2, 2), mt.ones(2, 2).t(), check_stride=True)


def test_make_tensor_ranges_and_layouts(device):
    mt.manual_seed(0)
    f = mt.testing.make_tensor(200, dtype=mt.float64, device=device, low=-2, high=3)
    assert f.dtype == mt.float64 and f.device.type == device
    assert -2 <= float(f.min()) and float(f.max()) < 3
    i = mt.testing.make_tensor((4, 50), dtype=mt.int64, device=device, exclude_zero=True)
    assert i.shape == (4, 50) and not (i == 0).any() and -9 <= int(i.min()) and int(i.max()) < 10
    b = mt.testing.make_tensor(3, 4, dtype=mt.bool, device=device, noncontiguous=True)
    assert b.dtype == mt.bool and not b.is_contiguous()
    g = mt.testing.make_tensor(3, dtype=mt.float32, device=device, requires_grad=True)
    assert g.requires_grad and g.is_leaf
    with pytest.raises(ValueError, match="`low` must be less than or equal to `high`"):
        mt.testing.make_tensor(3, dtype=mt.float32, device=device, low=2, high=1)


def test_bernoulli_and_multinomial_methods(device):
    mt.manual_seed(0)
    probs = mt.tensor([[0.0, 1.0, 0.0], [1.0, 0.0, 1.0]], device=device)
    assert probs.bernoulli().tolist() == probs.tolist()
    assert set(probs.bernoulli(0.5).unique().tolist()) <= {0.0, 1.0}
    assert probs.multinomial(1).reshape(-1).tolist()[0] == 1
    drawn = probs.multinomial(2, replacement=False)
    assert drawn[1].sort().values.tolist() == [0, 2]
    # torch goes on with zero-probability categories once the positive ones are used up
    assert drawn[0, 0].item() == 1 and drawn[0, 1].item() in (0, 2)


@pytest.mark.parametrize("values", [[-1.0, 1.0, 1.0], [math.nan, 1.0, 1.0], [math.inf, 1.0, 1.0]])
def test_multinomial_messages_follow_torchs_two_samplers(values):
    """torch words bad weights one way without replacement (or for one sample), another with."""
    with pytest.raises(RuntimeError, match="probability tensor contains either `inf`, `nan` or "
                                           "element < 0"):
        mt.tensor(values).multinomial(2)
    with pytest.raises(RuntimeError, match="invalid multinomial distribution"):
        mt.tensor(values).multinomial(2, replacement=True)
