"""Bad input refused as torch refuses it: exception type and message (issue 12, items 5-6)."""
import numpy as np
import pytest

import minitorch as mt
from minitorch.autograd import gradcheck


def test_device_index_checks():
    with pytest.raises(RuntimeError, match="^Device index must not be negative$"):
        mt.device(-1)
    with pytest.raises(RuntimeError, match="^Device index must not be negative$"):
        mt.device("cuda", -2)
    with pytest.raises(RuntimeError, match="^Could not parse device index '99999999999999999999' "
                                           "in device string 'cuda:99999999999999999999'$"):
        mt.device("cuda:99999999999999999999")
    assert mt.device("cuda:3").index == 3


def test_index_select_out_of_range_is_index_error(device):
    x = mt.ones(3, 4, device=device)
    for dim, bad in ((0, 3), (0, -1)):
        with pytest.raises(IndexError, match="^index out of range in self$"):
            x.index_select(dim, mt.tensor([bad], device=device))
    with pytest.raises(IndexError, match="^index out of range in self$"):
        mt.index_select(mt.ones(3, device=device), 0, mt.tensor([5], device=device))
    # torch's dim-1 fast path keeps its own RuntimeError wording
    with pytest.raises(RuntimeError, match="^INDICES element is out of DATA bounds, id=4 "):
        x.index_select(1, mt.tensor([4], device=device))


@pytest.mark.parametrize("data, name", [([object()], "object"), ([1, None], "NoneType"),
                                        (None, "NoneType"), ({1: 2}, "dict")])
def test_tensor_of_uninferable_data(data, name):
    with pytest.raises(RuntimeError, match=f"^Could not infer dtype of {name}$"):
        mt.tensor(data)


@pytest.mark.parametrize("make, name", [
    (lambda: mt.ones(2, dtype="float32"), "ones"), (lambda: mt.zeros(2, dtype="float32"), "zeros"),
    (lambda: mt.empty(2, dtype="float32"), "empty"),
    (lambda: mt.full((2,), 1.0, dtype="float32"), "full"),
    (lambda: mt.tensor([1.0], dtype="float32"), "tensor"),
    (lambda: mt.zeros_like(mt.ones(2), dtype="float32"), "zeros_like"),
    (lambda: mt.ones_like(mt.ones(2), dtype="float32"), "ones_like"),
    (lambda: mt.full_like(mt.ones(2), 3, dtype="float32"), "full_like"),
    (lambda: mt.arange(3, dtype="float32"), "arange")])
def test_dtype_argument_must_be_a_dtype(make, name):
    with pytest.raises(TypeError, match=rf"^{name}\(\): argument 'dtype' must be torch.dtype, "
                                        "not str$"):
        make()


def test_to_with_a_string_dtype():
    with pytest.raises(TypeError, match=r"^to\(\) received an invalid combination of arguments "
                                        r"- got \(dtype=str, \), but expected one of:"):
        mt.ones(2).to(dtype="float32")


@pytest.mark.parametrize("size, dtype", [((2 ** 62, 4), mt.float32), ((2 ** 62,), mt.float32),
                                         ((2 ** 61, 4), mt.float64)])
def test_storage_size_overflow(size, dtype):
    message = rf"^Storage size calculation overflowed with sizes=\[{', '.join(map(str, size))}\]$"
    for make in (mt.ones, mt.zeros, mt.empty):
        with pytest.raises(RuntimeError, match=message):
            make(*size, dtype=dtype)


def test_atan2_gradient_at_the_origin_is_zero(device):
    y = mt.tensor([0.0, 0.0, -0.0, 1e-200, 1.0], dtype=mt.float64, device=device,
                  requires_grad=True)
    x = mt.tensor([0.0, -0.0, 0.0, 0.0, 2.0], dtype=mt.float64, device=device,
                  requires_grad=True)
    mt.atan2(y, x).backward(mt.full((5,), 2.0, dtype=mt.float64, device=device))
    gy, gx = y.grad.cpu().numpy(), x.grad.cpu().numpy()
    np.testing.assert_array_equal(gy, [0.0, -0.0, 0.0, 0.0, 0.8])
    np.testing.assert_array_equal(gx, [-0.0, -0.0, 0.0, -0.0, -0.4])
    assert list(np.signbit(gy)) == [False, True, False, False, False]
    assert list(np.signbit(gx)) == [True, True, False, True, True]
    a = mt.tensor([[0.3, -1.2], [2.0, 0.5]], dtype=mt.float64, device=device, requires_grad=True)
    b = mt.tensor([0.7, -0.4], dtype=mt.float64, device=device, requires_grad=True)
    assert gradcheck(mt.atan2, (a, b))


@pytest.mark.parametrize("call, message", [
    (lambda d: mt.nn.Conv2d(3, 8, kernel_size=0)(mt.ones(1, 3, 5, 5, device=d)),
     "kernel_height: 0 kernel_width: 0"),
    (lambda d: mt.nn.functional.conv1d(mt.ones(1, 3, 5, device=d), mt.ones(8, 3, 0, device=d)),
     "kernel_height: 1 kernel_width: 0"),
    (lambda d: mt.nn.functional.conv2d(mt.ones(3, 5, 5, device=d), mt.ones(8, 3, 2, 0, device=d)),
     "kernel_height: 2 kernel_width: 0"),
    (lambda d: mt.nn.functional.conv3d(mt.ones(1, 3, 5, 5, 5, device=d),
                                       mt.ones(8, 3, 0, 1, 2, device=d)), r": 0 x 1 x 2 \(TxHxW\)"),
    (lambda d: mt.nn.functional.conv_transpose2d(mt.ones(1, 3, 5, 5, device=d),
                                                 mt.ones(3, 8, 0, 0, device=d)),
     "kernel_height: 0 kernel_width: 0")])
def test_convolution_with_an_empty_kernel(call, message, device):
    with pytest.raises(RuntimeError, match="^kernel size should be greater than zero, but got"
                                           f".*{message}$"):
        call(device)
