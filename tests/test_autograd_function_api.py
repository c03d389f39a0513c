"""autograd.Function's fuller API (setup_context style, mark_dirty, mark_non_differentiable,
node names) and anomaly mode, against torch's behaviour."""
import math
import warnings

import numpy as np
import pytest

import minitorch as mt


class ScaleWithMask(mt.autograd.Function):
    """New-style Function: forward without ctx, setup_context saves what backward needs."""

    @staticmethod
    def forward(x, factor):
        return x * factor, (x > 0).float()

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, factor = inputs
        ctx.factor = factor
        ctx.mark_non_differentiable(output[1])
        ctx.save_for_backward(x)

    @staticmethod
    def backward(ctx, grad, mask_grad):
        ctx.seen_mask_grad = mask_grad
        x, = ctx.saved_tensors
        return grad * ctx.factor, None


def test_setup_context_style_and_non_differentiable_outputs(device):
    x = mt.tensor([-1.0, 2.0, 3.0], device=device, requires_grad=True)
    scaled, mask = ScaleWithMask.apply(x, 3.0)
    assert scaled.requires_grad and scaled.grad_fn.name() == "ScaleWithMaskBackward"
    assert not mask.requires_grad and mask.grad_fn is None
    (scaled.sum() + mask.sum()).backward()
    assert x.grad.tolist() == [3.0, 3.0, 3.0]
    assert scaled.grad_fn.seen_mask_grad.tolist() == [0.0, 0.0, 0.0]   # torch: zeros


class DoubleInPlace(mt.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x.mul_(2)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


def test_mark_dirty_makes_the_input_the_output():
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad has been used in "
                                           "an in-place operation"):
        DoubleInPlace.apply(mt.ones(2, requires_grad=True))
    leaf = mt.ones(2, requires_grad=True)
    y = leaf * 1
    version = y._version[0]
    z = DoubleInPlace.apply(y)
    assert z is y and z.grad_fn.name() == "DoubleInPlaceBackward"
    assert y._version[0] > version and y.tolist() == [2.0, 2.0]
    (z * 3).sum().backward()
    assert leaf.grad.tolist() == [6.0, 6.0]


class NanBackward(mt.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        return grad * math.nan


def test_detect_anomaly_refuses_nan_gradients_and_shows_the_forward_stack():
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
        mode = mt.autograd.detect_anomaly()
    with mode:
        assert mt.is_anomaly_enabled() and mt.is_anomaly_check_nan_enabled()
        y = NanBackward.apply(mt.ones(2, requires_grad=True))
        with pytest.warns(UserWarning, match="Error detected in NanBackwardBackward"):
            with pytest.raises(RuntimeError, match="Function 'NanBackwardBackward' returned nan "
                                                   r"values in its 0th output\."):
                y.sum().backward()
    assert not mt.is_anomaly_enabled()
    NanBackward.apply(mt.ones(2, requires_grad=True)).sum().backward()   # off: no check


def test_set_detect_anomaly_switch_and_check_nan_flag():
    with mt.autograd.set_detect_anomaly(True, check_nan=False):
        assert mt.is_anomaly_enabled() and not mt.is_anomaly_check_nan_enabled()
        x = mt.ones(2, requires_grad=True)
        NanBackward.apply(x).sum().backward()
        assert np.isnan(x.grad.numpy()).all()
    assert not mt.is_anomaly_enabled() and mt.is_anomaly_check_nan_enabled()
    mt.set_anomaly_enabled(True)
    try:
        assert mt.is_anomaly_enabled()
    finally:
        mt.set_anomaly_enabled(False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x = mt.ones(2, requires_grad=True)
        with mt.autograd.set_detect_anomaly(True):
            (x * 2).sum().backward()        # healthy graphs pass without warnings
    assert x.grad.tolist() == [2.0, 2.0]


def test_builtin_node_names_keep_torchs_zero_suffix():
    x = mt.ones(2, requires_grad=True)
    assert (x * 2).grad_fn.name() == "MulBackward0"
    assert mt.nn.functional.conv1d(x.reshape(1, 1, 2), mt.ones(1, 1, 1)).grad_fn.name() \
        .endswith("Backward0")


def test_variable_is_a_detached_alias(device):
    """torch.autograd.Variable (old scripts): a new tensor sharing the storage, detached, with
    requires_grad as asked; every tensor is an instance of Variable."""
    from minitorch.autograd import Variable
    t = mt.arange(3.0, device=device)
    v = Variable(t)
    assert v is not t and v.data_ptr() == t.data_ptr() and not v.requires_grad
    w = Variable(t, requires_grad=True)
    assert w.requires_grad and w.is_leaf and not t.requires_grad
    (w * w).sum().backward()
    assert w.grad.cpu().tolist() == [0.0, 2.0, 4.0]
    y = Variable(mt.ones(2, device=device, requires_grad=True) * 2)
    assert y.grad_fn is None and not y.requires_grad
    assert isinstance(t, Variable) and not issubclass(mt.Tensor, Variable)
    assert Variable().shape == (0,)
    with pytest.warns(UserWarning, match="volatile was removed and now has no effect"):
        Variable(t, volatile=True)
    with pytest.raises(TypeError, match="Variable data has to be a tensor, but got int"):
        Variable(3)
