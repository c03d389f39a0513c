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


# ---- the direct route (conv_matmul: the GEMM reads the padded image in place) ------------------
# Shapes with at least 32 output columns per image and ≤ 1.5 wide columns per output column take
# it on the CPU; these cover dilation, zero padding, a window deeper than one k block (288 and
# 300 > 256), output channels not a multiple of the 8-row tile, an edge panel, a gradient
# padding that would be negative (falls back), and two threads over one image.
DIRECT_CASES = [
    ((2, 4, 10, 10), (6, 4, 3, 3), 1, 1, 1, "xw"),
    ((2, 3, 12, 12), (5, 3, 3, 3), 1, 2, 2, "xw"),          # dilation 2, padding 2
    ((1, 32, 9, 9), (3, 32, 3, 3), 1, 1, 1, "xw"),          # k = 288: two k blocks
    ((2, 12, 7, 14), (9, 12, 5, 5), 1, (2, 1), 1, "xw"),    # k = 300, 9 rows: a partial tile
    ((2, 2, 11, 11), (4, 2, 3, 3), 1, 3, 1, "xw"),          # padding 3 > 2: im2col input grad
    ((1, 5, 15, 15), (7, 5, 3, 3), 1, "same", (2, 1), "xw"),
]


@pytest.mark.parametrize("x_shape, w_shape, stride, padding, dilation, needs", DIRECT_CASES)
@pytest.mark.parametrize("threads", [1, 2])
def test_conv2d_direct_route_matches_torch(monkeypatch, threads, x_shape, w_shape, stride,
                                           padding, dilation, needs):
    from minitorch import _cpu
    calls = []
    real = _cpu.conv_matmul
    monkeypatch.setattr(_cpu, "conv_matmul", lambda *args: calls.append(args) or real(*args))
    before = mt.get_num_threads()
    mt.set_num_threads(threads)
    try:
        test_conv2d_routes_match_torch("cpu", x_shape, w_shape, stride, padding, dilation, needs)
    finally:
        mt.set_num_threads(before)
    assert calls, "the direct route was not taken"


@pytest.mark.parametrize("w_shape, padding, dilation", [((4, 3, 3, 3), 1, 1),
                                                        ((2, 3, 3, 2), (0, 2), (2, 1))])
def test_direct_route_gradcheck_and_double_backward(w_shape, padding, dilation):
    x = mt.randn(2, 3, 11, 10, dtype=mt.float64, requires_grad=True)
    w = mt.randn(*w_shape, dtype=mt.float64, requires_grad=True)

    def fn(x, w):
        return mt.nn.functional.conv2d(x, w, padding=padding, dilation=dilation)
    assert gradcheck(fn, (x, w))
    assert gradgradcheck(fn, (x, w))


def test_conv_matmul_checks_its_views():
    from minitorch import _cpu
    a, b = np.ones(12), np.ones(5 * 5)
    out = np.zeros(2 * 9)
    _cpu.conv_matmul(a, b, out, 1, 2, 6, (0, 6, 1), 0, 0, 0, (1, 2, 3), (0, 5, 1), 3, 5, 3)
    np.testing.assert_array_equal(out, 6.0)
    with pytest.raises(ValueError, match="outside"):
        _cpu.conv_matmul(a, b, out, 1, 2, 6, (0, 6, 1), 0, 0, 6, (1, 2, 3), (0, 5, 1), 3, 5, 3)
    with pytest.raises(ValueError, match="bad sizes"):
        _cpu.conv_matmul(a, b, out, 1, 2, 6, (0, 6, 1), 0, 0, 0, (1, 2, 2), (0, 5, 1), 3, 5, 3)
    with pytest.raises(TypeError, match="dtypes differ"):
        _cpu.conv_matmul(a, b.astype(np.float32), out, 1, 2, 6, (0, 6, 1), 0, 0, 0, (1, 2, 3),
                         (0, 5, 1), 3, 5, 3)


def test_conv_weight_matmul_checks_its_views():
    from minitorch import _cpu
    x, g = np.ones(5 * 5), np.ones(2 * 9)
    out = np.zeros(2 * 6)
    _cpu.conv_weight_matmul(x, g, out, 1, 2, 6, 0, 0, (1, 2, 3), (0, 5, 1), 9, 0, 3, 5, 3)
    np.testing.assert_array_equal(out, 9.0)
    with pytest.raises(ValueError, match="outside"):
        _cpu.conv_weight_matmul(x, g, out, 1, 2, 6, 0, 6, (1, 2, 3), (0, 5, 1), 9, 0, 3, 5, 3)
    with pytest.raises(ValueError, match="outside"):
        _cpu.conv_weight_matmul(x, g, out, 1, 2, 6, 0, 0, (1, 2, 3), (0, 5, 1), 9, 1, 3, 5, 3)
    with pytest.raises(ValueError, match="bad sizes"):
        _cpu.conv_weight_matmul(x, g, out, 1, 2, 6, 0, 0, (1, 2, 3), (0, 5, 1), 9, 0, 3, 2, 3)


@pytest.mark.parametrize("transposed, x_shape, w_shape, needs", [
    (False, (5, 6, 9, 9), (7, 6, 4, 4), "xw"),     # stride-2 im2col rows, five uneven chunks
    (False, (5, 1, 20, 20), (4, 1, 4, 4), "w"),    # a first layer: per-image weight gradient
    (True, (5, 6, 4, 4), (6, 3, 4, 4), "xw"),      # conv_transpose: col2im, then its backward
])
def test_im2col_rows_in_several_chunks_match_torch(monkeypatch, transposed, x_shape, w_shape,
                                                   needs):
    """The im2col route a chunk of images at a time (its scratch buffers reused by every chunk,
    the last chunk shorter) gives torch's values, gradients and double-backward."""
    import minitorch.functions.conv as conv
    monkeypatch.setattr(conv, "CHUNK_BYTES", 2 * 16 * 6 * 16 * 8)   # two images of rows
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal(x_shape), rng.standard_normal(w_shape)
    results = []
    for lib in (mt, torch):
        op = lib.nn.functional.conv_transpose2d if transposed else lib.nn.functional.conv2d
        xt = lib.tensor(x, requires_grad="x" in needs)
        wt = lib.tensor(w, requires_grad=True)
        y = op(xt, wt, stride=2, padding=1)
        g = lib.tensor(np.random.default_rng(4).standard_normal(tuple(y.shape)))
        leaves = [t for t in (xt, wt) if t.requires_grad]
        grads = lib.autograd.grad(y, leaves, g, create_graph=True)
        # (with x fixed, the weight gradient does not depend on w: no second order)
        second = lib.autograd.grad(sum((t * t).sum() for t in grads), leaves) \
            if "x" in needs else ()
        results.append([t.detach().numpy() for t in (y, *grads, *second)])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("transposed, needs", [(True, "xw"), (True, "w"), (False, "w")])
@pytest.mark.parametrize("chunk_images", [1, 2])
def test_im2col_weight_grad_builds_rows_once(device, monkeypatch, transposed, needs,
                                             chunk_images):
    """A transposed convolution's backward (no graph) makes the product of its output gradient
    and the weight gradient from one pass over im2col rows, the weight gradient per image with
    g read as it is: one GEMM accumulating into the running sum (one-image chunks) or a batched
    one summed (uneven chunks of two), as a first layer's weight gradient is. torch's values,
    and no second pass over the rows for the weight gradient."""
    import minitorch.functions.conv as conv
    # rows of one image: 16 positions x 48 (K = 4·4·3) float64 values for the convolution of
    # conv_transpose's output (5, 3, 8, 8), 64 (PER_IMAGE_MIN_POSITIONS) for a first layer's
    # input (5, 3, 16, 16)
    positions = 16 if transposed else 64
    monkeypatch.setattr(conv, "CHUNK_BYTES",
                        chunk_images * positions * 48 * 8 // mt.get_num_threads())
    if transposed and "x" in needs:
        backward = conv._im2col_backward

        def input_grad_only(gd, wd, x_shape, geometry, padded, needs):
            assert not needs[1], "the weight gradient took a second pass over the rows"
            return backward(gd, wd, x_shape, geometry, padded, needs)
        monkeypatch.setattr(conv, "_im2col_backward", input_grad_only)
    rng = np.random.default_rng(5)
    x = rng.standard_normal((5, 6, 4, 4) if transposed else (5, 3, 16, 16))
    w = rng.standard_normal((6, 3, 4, 4))
    results = []
    for lib, where in ((mt, device), (torch, "cpu")):
        op = lib.nn.functional.conv_transpose2d if transposed else lib.nn.functional.conv2d
        xt = lib.tensor(x, requires_grad="x" in needs, device=where)
        wt = lib.tensor(w, requires_grad=True, device=where)
        y = op(xt, wt, stride=2, padding=1)
        g = lib.tensor(np.random.default_rng(6).standard_normal(tuple(y.shape)), device=where)
        grads = lib.autograd.grad(y, [t for t in (xt, wt) if t.requires_grad], g)
        results.append([t.detach().cpu().numpy() for t in (y, *grads)])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("stride, padding", [(2, 1), (3, 0)])
def test_conv_transpose2d_backward_of_a_sum(device, stride, padding):
    """The gradient of .sum() reaching a transposed convolution is a broadcast scalar: its
    backward pads it for the im2col rows as one fill (_pad_zeros). torch's gradients."""
    rng = np.random.default_rng(7)
    x, w = rng.standard_normal((3, 4, 5, 5)), rng.standard_normal((4, 2, 4, 4))
    results = []
    for lib, where in ((mt, device), (torch, "cpu")):
        xt = lib.tensor(x, requires_grad=True, device=where)
        wt = lib.tensor(w, requires_grad=True, device=where)
        lib.nn.functional.conv_transpose2d(xt, wt, stride=stride, padding=padding).sum() \
            .backward()
        results.append([t.grad.cpu().numpy() for t in (xt, wt)])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-10)
