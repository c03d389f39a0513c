"""conv2d's product routes (functions/conv.py: shifted rows, im2col rows, their input and weight
gradients, chosen by shape) against torch for the shapes that pick each route, and gradcheck /
gradgradcheck in float64 through the shifted-rows route."""
import numpy as np
import pytest

import minitorch as mt
from minitorch.autograd import gradcheck, gradgradcheck

torch = pytest.importorskip("torch")

# (input shape, weight shape, stride, padding, dilation, which inputs need a gradient)
CASES = [
    ((2, 6, 12, 12), (2, 6, 5, 5), 1, 2, 1, "xw"),     # few output channels: shifted input grad
    ((2, 8, 12, 11), (2, 8, 5, 5), 1, 2, 1, "xw"),     # 4·OC ≤ C: columns-first forward
    ((2, 1, 12, 11), (8, 1, 5, 5), 1, 0, 1, "w"),      # one channel, more outputs than K
    ((2, 4, 10, 10), (6, 4, 3, 3), 1, 1, 1, "xw"),     # shifted forward, im2col input grad
    ((2, 4, 11, 11), (5, 4, 3, 3), 2, 1, 1, "xw"),     # stride 2: im2col rows
    ((2, 4, 11, 11), (5, 4, 3, 3), (2, 1), 1, 1, "xw"),  # vertical stride: shifted rows
    ((2, 3, 9, 13), (4, 3, 3, 4), (1, 3), (2, 0), 1, "xw"),
    ((2, 3, 12, 10), (4, 3, 3, 3), 1, 1, (2, 1), "xw"),  # vertical dilation: shifted rows
    ((2, 3, 12, 10), (4, 3, 3, 3), 1, 1, (1, 2), "xw"),  # horizontal dilation: im2col
    ((2, 8, 4, 4), (1, 8, 4, 4), 1, 0, 1, "xw"),      # one output position per row: im2col
    ((2, 3, 8, 8), (4, 3, 3, 3), 1, "same", 1, "x"),
    ((1, 2, 6, 6), (3, 2, 3, 3), 1, 4, 1, "xw"),      # padding beyond the kernel
]


@pytest.mark.parametrize("x_shape, w_shape, stride, padding, dilation, needs", CASES)
def test_conv2d_routes_match_torch(device, x_shape, w_shape, stride, padding, dilation, needs):
    rng = np.random.default_rng(0)
    x, w, b = (rng.standard_normal(s) for s in (x_shape, w_shape, w_shape[:1]))
    results = []
    for lib, where in ((mt, device), (torch, "cpu")):
        xt = lib.tensor(x, requires_grad="x" in needs, device=where)
        wt = lib.tensor(w, requires_grad="w" in needs, device=where)
        y = lib.nn.functional.conv2d(xt, wt, lib.tensor(b, device=where), stride=stride,
                                     padding=padding, dilation=dilation)
        g = np.random.default_rng(1).standard_normal(tuple(y.shape))
        leaves = [t for t in (xt, wt) if t.requires_grad]
        grads = lib.autograd.grad(y, leaves, lib.tensor(g, device=where))
        results.append([t.detach().cpu().numpy() for t in (y, *grads)])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-10)


def test_conv1d_through_shifted_rows_matches_torch():
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal((3, 4, 30)), rng.standard_normal((2, 4, 7))
    results = []
    for lib in (mt, torch):
        xt, wt = lib.tensor(x, requires_grad=True), lib.tensor(w, requires_grad=True)
        y = lib.nn.functional.conv1d(xt, wt, padding=3)
        y.sum().backward()
        results.append([y.detach().numpy(), xt.grad.numpy(), wt.grad.numpy()])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("w_shape, stride", [((2, 5, 3, 3), 1), ((6, 5, 3, 3), 1),
                                              ((3, 5, 3, 2), 2), ((1, 5, 3, 3), 1)])
def test_shifted_rows_gradcheck_and_double_backward(w_shape, stride):
    x = mt.randn(2, 5, 6, 7, dtype=mt.float64, requires_grad=True)
    w = mt.randn(*w_shape, dtype=mt.float64, requires_grad=True)

    def fn(x, w):
        return mt.nn.functional.conv2d(x, w, stride=stride, padding=1)
    assert gradcheck(fn, (x, w))
    assert gradgradcheck(fn, (x, w))


@pytest.mark.parametrize("w_shape, stride, output_padding",
                         [((5, 2, 3, 3), 1, 0), ((3, 4, 3, 2), 2, 1)])
def test_conv_transpose2d_gradcheck_and_double_backward(w_shape, stride, output_padding):
    """conv_transpose2d (groups = 1) is ConvProductBackward's input gradient with x as g."""
    x = mt.randn(2, w_shape[0], 4, 5, dtype=mt.float64, requires_grad=True)
    w = mt.randn(*w_shape, dtype=mt.float64, requires_grad=True)

    def fn(x, w):
        return mt.nn.functional.conv_transpose2d(x, w, stride=stride, padding=1,
                                                 output_padding=output_padding)
    assert gradcheck(fn, (x, w))
    assert gradgradcheck(fn, (x, w))
