"""Tensor creation, dtypes and promotion, conversions, repr: torch's behaviour pinned."""
import numpy as np
import pytest

import minitorch as mt


def test_tensor_infers_dtypes(device):
    assert mt.tensor([1.0, 2.0], device=device).dtype is mt.float32
    assert mt.tensor([1, 2], device=device).dtype is mt.int64
    assert mt.tensor([True, False], device=device).dtype is mt.bool
    assert mt.tensor(np.zeros(2, np.float64), device=device).dtype is mt.float64
    assert mt.tensor(3.5, device=device).shape == ()
    assert mt.tensor([[1, 2], [3, 4]], dtype=mt.float64, device=device).dtype is mt.float64


def test_tensor_copies_from_numpy_shares():
    a = np.arange(3.0)
    t, s = mt.tensor(a), mt.from_numpy(a)
    a[0] = 9.0
    assert t[0].item() == 0.0 and s[0].item() == 9.0


@pytest.mark.parametrize("fn,expected", [
    (lambda: mt.zeros(2, 3), np.zeros((2, 3))),
    (lambda: mt.ones((2,)), np.ones(2)),
    (lambda: mt.full((2, 2), 7), np.full((2, 2), 7)),
    (lambda: mt.arange(5), np.arange(5)),
    (lambda: mt.arange(1, 2, 0.25), np.arange(1, 2, 0.25)),
    (lambda: mt.linspace(0, 1, 5), np.linspace(0, 1, 5)),
    (lambda: mt.eye(3, 2), np.eye(3, 2)),
])
def test_factories(fn, expected):
    np.testing.assert_allclose(fn().numpy(), expected, rtol=1e-6)


def test_factory_dtypes():
    assert mt.full((1,), 7).dtype is mt.int64
    assert mt.full((1,), 7.0).dtype is mt.float32
    assert mt.arange(5).dtype is mt.int64 and mt.arange(0.0, 1.0, 0.5).dtype is mt.float32
    assert mt.zeros_like(mt.tensor([1, 2])).dtype is mt.int64


def test_random_is_seeded_and_shaped():
    mt.manual_seed(3)
    a = mt.randn(4, 5)
    mt.manual_seed(3)
    b = mt.randn(4, 5)
    assert a.shape == (4, 5) and np.array_equal(a.numpy(), b.numpy())
    r = mt.randint(0, 10, (1000,))
    assert r.dtype is mt.int64 and 0 <= r.min().item() and r.max().item() < 10
    p = mt.randperm(10)
    assert sorted(p.tolist()) == list(range(10))
    u = mt.rand(1000)
    assert 0.0 <= u.min().item() and u.max().item() < 1.0


@pytest.mark.parametrize("a,b,expected", [
    (mt.tensor([1, 2]), 2.5, mt.float32),                        # int tensor, float scalar
    (mt.tensor([1, 2]), mt.tensor(2.5, dtype=mt.float64), mt.float64),   # 0-d of higher category
    (mt.tensor([1.0]), mt.tensor([1.0], dtype=mt.float64), mt.float64),
    (mt.tensor([1.0]), mt.tensor(1.0, dtype=mt.float64), mt.float32),   # same category 0-d
    (mt.tensor([True]), 3, mt.int64),
    (mt.tensor([True]), mt.tensor([False]), mt.bool),
    (mt.tensor([1, 2]), mt.tensor([1.0]), mt.float32),
])
def test_promotion(a, b, expected):
    assert (a + b).dtype is expected
    assert (b + a).dtype is expected


def test_true_division_of_ints_is_float():
    assert (mt.tensor([3]) / 2).dtype is mt.float32
    assert (mt.tensor([7]) // 2).item() == 3
    assert (mt.tensor([-7]) % 3).item() == 2


def test_comparisons_give_bool():
    x = mt.tensor([1.0, 2.0, 3.0])
    assert (x > 1.5).dtype is mt.bool
    assert (x == 2).tolist() == [False, True, False]


def test_scalar_conversions():
    assert float(mt.tensor([2.5])) == 2.5
    assert int(mt.tensor(3)) == 3
    assert bool(mt.tensor([1]))
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(mt.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="cannot be converted to Scalar"):
        mt.tensor([1, 2]).item()
    assert mt.tensor([[1, 2], [3, 4]]).tolist() == [[1, 2], [3, 4]]
    assert np.asarray(mt.tensor([1.0, 2.0])).dtype == np.float32
    assert len(mt.zeros(4, 2)) == 4


def test_numpy_of_requires_grad_raises():
    with pytest.raises(RuntimeError, match="Use tensor.detach"):
        mt.tensor([1.0], requires_grad=True).numpy()


def test_metadata():
    x = mt.zeros(2, 3, 4)
    assert x.shape == mt.Size([2, 3, 4]) and x.size(1) == 3 and x.size(-1) == 4
    assert x.ndim == 3 and x.dim() == 3 and x.numel() == 24
    assert x.stride() == (12, 4, 1) and x.is_contiguous()
    assert not x.transpose(0, 2).is_contiguous()
    assert x.device == mt.device("cpu") and str(x.device) == "cpu"
    assert repr(mt.Size([2, 3])) == "torch.Size([2, 3])"


def test_to_and_casts():
    x = mt.tensor([1.7, -2.2])
    assert x.long().tolist() == [1, -2]
    assert x.double().dtype is mt.float64
    assert x.to(mt.int64).dtype is mt.int64
    assert x.bool().tolist() == [True, True]
    assert x.type() == "torch.FloatTensor"


def test_repr_like_torch():
    assert repr(mt.tensor([1.0, 2.0, 3.0])) == "tensor([1., 2., 3.])"
    assert repr(mt.tensor([1, 2])) == "tensor([1, 2])"
    assert repr(mt.tensor([True, False])) == "tensor([ True, False])"
    assert repr(mt.tensor(3.0)) == "tensor(3.)"
    assert repr(mt.tensor([0.5, 1.25])) == "tensor([0.5000, 1.2500])"
    assert repr(mt.tensor([[1.0, -2.5], [3.0, 4.0]])) == \
        "tensor([[ 1.0000, -2.5000],\n        [ 3.0000,  4.0000]])"
    assert repr(mt.tensor([1.0], dtype=mt.float64)) == "tensor([1.], dtype=minitorch.float64)"
    assert repr(mt.tensor([1.0], requires_grad=True)) == "tensor([1.], requires_grad=True)"
    assert repr(mt.zeros(0)) == "tensor([])"
    assert repr(mt.zeros(0, 3)) == "tensor([], size=(0, 3))"
    assert repr(mt.tensor([1e-5, 1.0])) == "tensor([1.0000e-05, 1.0000e+00])"
    big = repr(mt.arange(2000))
    assert "..." in big and big.startswith("tensor([   0,    1,    2,  ..., 1997, 1998, 1999])")
    # torch sizes a float column by its nonzero finite values: inf and nan go unpadded
    inf, nan = float("inf"), float("nan")
    assert repr(mt.tensor([inf, -inf])) == "tensor([inf, -inf])"
    assert repr(mt.tensor([1.0, -inf, nan])) == "tensor([1., -inf, nan])"
    assert repr(mt.tensor([0.0, 100.0])) == "tensor([  0., 100.])"
    assert repr(mt.tensor([1.5, inf])) == "tensor([1.5000,    inf])"


def test_size_slices_and_sums_stay_sizes():
    size = mt.Size([2, 3, 4])
    for made in (size[1:], size + (5,), (5,) + size, size * 2, size[::-1]):
        assert type(made) is mt.Size
    assert repr(size[1:]) == "torch.Size([3, 4])" and size[0] == 2 and type(size[0]) is int


def test_set_printoptions():
    mt.set_printoptions(precision=2)
    try:
        assert repr(mt.tensor([0.5, 1.25])) == "tensor([0.50, 1.25])"
    finally:
        mt.set_printoptions(profile="default")


def test_requires_grad_only_for_floats():
    with pytest.raises(RuntimeError, match="floating point"):
        mt.tensor([1, 2], requires_grad=True)


def test_mixed_device_error_message():
    from minitorch.ndarray import _device_mismatch
    assert _device_mismatch(mt.device("cpu"), mt.device("cuda")) == (
        "Expected all tensors to be on the same device, but found at least two devices, cuda:0 "
        "and cpu!")


def test_addcmul_addcdiv_and_random_fills():
    t, a, b = mt.tensor([1.0, 2.0]), mt.tensor([3.0, 4.0]), mt.tensor([2.0, 8.0])
    assert mt.addcmul(t, a, b, value=0.5).tolist() == [4.0, 18.0]
    assert t.addcdiv(a, b, value=2).tolist() == [4.0, 3.0]
    t.addcmul_(a, b)
    assert t.tolist() == [7.0, 34.0]
    mt.manual_seed(1)
    u = mt.empty(1000).uniform_(-2, 3)
    assert -2 <= u.min().item() and u.max().item() < 3
    n = mt.zeros(2000, dtype=mt.float64).normal_(5.0, 0.1)
    assert abs(n.mean().item() - 5.0) < 0.02 and abs(n.std().item() - 0.1) < 0.02
