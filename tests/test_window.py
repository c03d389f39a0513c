"""F.unfold / F.fold (im2col / col2im) and the im2col_view conv and pooling build on: values vs
a loop-by-loop numpy reference and vs torch, gradients of first and second order, torch's
errors."""
import itertools

import numpy as np
import pytest

import minitorch as mt
from minitorch.autograd import gradcheck, gradgradcheck
from minitorch.functions.window import fold, im2col_view, unfold


def _pairs(*values):
    return [(v, v) if isinstance(v, int) else tuple(v) for v in values]


def reference_windows(x, kernel, dilation, padding, stride, pad_value=0.0):
    """(N, C, kh, kw, OH, OW) windows of a (N, C, H, W) array, one element at a time."""
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = _pairs(kernel, dilation, padding, stride)
    n, c, h, w = x.shape
    padded = np.full((n, c, h + 2 * ph, w + 2 * pw), pad_value)
    padded[:, :, ph:ph + h, pw:pw + w] = x
    oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, c, kh, kw, oh, ow))
    for i, j, a, b in itertools.product(range(kh), range(kw), range(oh), range(ow)):
        out[:, :, i, j, a, b] = padded[:, :, a * sh + i * dh, b * sw + j * dw]
    return out


def reference_unfold(x, kernel, dilation, padding, stride):
    windows = reference_windows(x, kernel, dilation, padding, stride)
    n, c, kh, kw, oh, ow = windows.shape
    return windows.reshape(n, c * kh * kw, oh * ow)


def reference_fold(cols, size, kernel, dilation, padding, stride):
    """Each column entry added to the image pixel it was read from (padding discarded)."""
    pairs = _pairs(size, kernel, dilation, padding, stride)
    (h, w), (kh, kw), (dh, dw), (ph, pw), (sh, sw) = pairs
    n = cols.shape[0]
    c = cols.shape[1] // (kh * kw)
    oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    blocks = cols.reshape(n, c, kh, kw, oh, ow)
    padded = np.zeros((n, c, h + 2 * ph, w + 2 * pw))
    for i, j, a, b in itertools.product(range(kh), range(kw), range(oh), range(ow)):
        padded[:, :, a * sh + i * dh, b * sw + j * dw] += blocks[:, :, i, j, a, b]
    return padded[:, :, ph:ph + h, pw:pw + w]


# (input shape, kernel_size, dilation, padding, stride)
CASES = [
    ((2, 3, 5, 6), 2, 1, 0, 1),
    ((1, 2, 5, 5), 3, 1, 1, 1),
    ((2, 1, 7, 6), (2, 3), (1, 2), (1, 0), (2, 1)),
    ((1, 2, 6, 7), (3, 1), 2, (2, 1), (1, 3)),
    ((2, 2, 4, 4), 1, 1, 2, 3),
    ((1, 1, 6, 6), 3, 2, 2, 2),
    ((1, 3, 4, 5), (4, 5), 1, 0, 1),          # one window covering the whole image
    ((2, 3, 4, 6), 2, 1, 0, 2),               # windows tile the image: fold is a plain copy
    ((1, 2, 4, 4), 2, 1, 1, 2),               # ... tile the padded image
    ((1, 2, 5, 6), 2, 1, 0, 2),               # ... all but the last row (zeros there)
]
IDS = [f"{s}-k{k}-d{d}-p{p}-s{st}" for s, k, d, p, st in CASES]


@pytest.mark.parametrize("shape,kernel,dilation,padding,stride", CASES, ids=IDS)
def test_unfold_matches_reference(shape, kernel, dilation, padding, stride, device, rng):
    x = rng.standard_normal(shape)
    cols = unfold(mt.tensor(x, device=device), kernel, dilation, padding, stride)
    expected = reference_unfold(x, kernel, dilation, padding, stride)
    assert cols.dtype is mt.float64 and cols.is_contiguous()
    np.testing.assert_array_equal(cols.cpu().numpy(), expected)
    # Unbatched (C, H, W) input gives (C·kh·kw, L).
    single = unfold(mt.tensor(x[0], device=device), kernel, dilation, padding, stride)
    np.testing.assert_array_equal(single.cpu().numpy(), expected[0])


@pytest.mark.parametrize("shape,kernel,dilation,padding,stride", CASES, ids=IDS)
def test_fold_matches_reference(shape, kernel, dilation, padding, stride, device, rng):
    cols = rng.standard_normal(reference_unfold(np.zeros(shape), kernel, dilation, padding,
                                                stride).shape)
    size = shape[-2:]
    image = fold(mt.tensor(cols, device=device), size, kernel, dilation, padding, stride)
    expected = reference_fold(cols, size, kernel, dilation, padding, stride)
    assert image.shape == shape and image.is_contiguous()
    np.testing.assert_allclose(image.cpu().numpy(), expected, rtol=1e-12, atol=1e-12)
    single = fold(mt.tensor(cols[0], device=device), size, kernel, dilation, padding, stride)
    np.testing.assert_allclose(single.cpu().numpy(), expected[0], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("shape,kernel,dilation,padding,stride", CASES, ids=IDS)
def test_fold_of_unfold_counts_overlaps(shape, kernel, dilation, padding, stride, device, rng):
    x = rng.standard_normal(shape)
    counts = reference_fold(reference_unfold(np.ones(shape), kernel, dilation, padding, stride),
                            shape[-2:], kernel, dilation, padding, stride)
    t = mt.tensor(x, device=device)
    round_trip = fold(unfold(t, kernel, dilation, padding, stride), shape[-2:], kernel,
                      dilation, padding, stride)
    np.testing.assert_allclose(round_trip.cpu().numpy(), x * counts, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("shape,kernel,dilation,padding,stride", CASES, ids=IDS)
def test_matches_torch(shape, kernel, dilation, padding, stride, device, rng):
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    x = rng.standard_normal(shape)
    t = mt.tensor(x, device=device, requires_grad=True)
    tx = torch.tensor(x, requires_grad=True)
    cols, t_cols = unfold(t, kernel, dilation, padding, stride), F.unfold(tx, kernel, dilation,
                                                                          padding, stride)
    np.testing.assert_array_equal(cols.detach().cpu().numpy(), t_cols.detach().numpy())
    image = fold(cols * 2, shape[-2:], kernel, dilation, padding, stride)
    t_image = F.fold(t_cols * 2, shape[-2:], kernel, dilation, padding, stride)
    np.testing.assert_allclose(image.detach().cpu().numpy(), t_image.detach().numpy(),
                               rtol=1e-12)
    seed = rng.standard_normal(shape)
    image.backward(mt.tensor(seed, device=device))
    t_image.backward(torch.tensor(seed))
    np.testing.assert_allclose(t.grad.cpu().numpy(), tx.grad.numpy(), rtol=1e-12, atol=1e-12)
    assert cols.grad_fn.name() == type(t_cols.grad_fn).__name__ == "Im2ColBackward0"
    assert image.grad_fn.name() == "Col2ImBackward0"


GRAD_CASES = [((1, 2, 4, 5), (2, 3), (1, 2), (1, 0), (2, 1)), ((2, 1, 4, 4), 2, 1, 1, 1),
              ((1, 1, 5, 5), 3, 2, 1, 2)]


@pytest.mark.parametrize("shape,kernel,dilation,padding,stride", GRAD_CASES)
def test_gradients(shape, kernel, dilation, padding, stride, device, rng):
    x = mt.tensor(rng.standard_normal(shape), device=device, requires_grad=True)
    assert gradcheck(lambda t: unfold(t, kernel, dilation, padding, stride), (x,))
    assert gradgradcheck(lambda t: unfold(t, kernel, dilation, padding, stride) ** 2, (x,))
    n_cols = reference_unfold(np.zeros(shape), kernel, dilation, padding, stride).shape
    cols = mt.tensor(rng.standard_normal(n_cols), device=device, requires_grad=True)
    size = shape[-2:]
    assert gradcheck(lambda c: fold(c, size, kernel, dilation, padding, stride), (cols,))
    assert gradgradcheck(lambda c: fold(c, size, kernel, dilation, padding, stride) ** 2,
                         (cols,))


def test_non_contiguous_input(device, rng):
    x = rng.standard_normal((2, 3, 5, 6))
    permuted = mt.tensor(x.transpose(0, 2, 3, 1).copy(), device=device).permute(0, 3, 1, 2)
    stepped = mt.tensor(np.repeat(x, 2, axis=-1), device=device)[..., ::2]
    for t in (permuted, stepped):
        assert not t.is_contiguous()
        np.testing.assert_array_equal(unfold(t, 2, 1, 1, 1).cpu().numpy(),
                                      reference_unfold(x, 2, 1, 1, 1))
    leaf = mt.tensor(x[:1, :2, :4, :4].transpose(0, 2, 3, 1).copy(), device=device,
                     requires_grad=True)
    assert gradcheck(lambda t: unfold(t.permute(0, 3, 1, 2), 2, 1, 1, 2), (leaf,))
    cols = mt.tensor(rng.standard_normal((1, 8, 20)), device=device).transpose(1, 2)
    assert not cols.is_contiguous()
    np.testing.assert_allclose(fold(cols, (3, 5), 2).cpu().numpy(),
                               reference_fold(cols.cpu().numpy(), (3, 5), 2, 1, 0, 1))


def test_empty_batch(device):
    x = mt.zeros(0, 3, 5, 6, device=device, requires_grad=True)
    cols = unfold(x, 2, padding=1)
    assert cols.shape == (0, 12, 42)
    image = fold(cols, (5, 6), 2, padding=1)
    assert image.shape == (0, 3, 5, 6)
    image.sum().backward()
    assert x.grad.shape == (0, 3, 5, 6)


# ---- im2col_view ------------------------------------------------------------------------------
def test_im2col_view_values_and_layout(device, rng):
    x = rng.standard_normal((2, 3, 5, 6))
    view = im2col_view(mt.tensor(x, device=device), (2, 3), (2, 1), 1, (1, 2))
    expected = reference_windows(x, (2, 3), (2, 1), 1, (1, 2))
    assert view.shape == expected.shape
    np.testing.assert_array_equal(view.cpu().numpy(), expected)
    single = im2col_view(mt.tensor(x[1], device=device), (2, 3), (2, 1), 1, (1, 2))
    np.testing.assert_array_equal(single.cpu().numpy(), expected[1])


def test_im2col_view_pad_value(device, rng):
    x = rng.standard_normal((1, 2, 4, 4))
    view = im2col_view(mt.tensor(x, device=device), 2, 1, 1, 2, pad_value=-np.inf)
    expected = reference_windows(x, 2, 1, 1, 2, pad_value=-np.inf)
    np.testing.assert_array_equal(view.cpu().numpy(), expected)
    assert np.isinf(view.cpu().numpy()).sum() == np.isinf(expected).sum() > 0


def test_im2col_view_shares_unpadded_input(device):
    x = mt.zeros(1, 1, 4, 4, device=device)
    view = im2col_view(x, 2, 1, 0, 1)
    assert view._version is x._version and not view.is_contiguous()
    x.add_(2.0)
    assert np.all(view.cpu().numpy() == 2.0)
    padded = im2col_view(x, 2, 1, 1, 1)
    x.add_(1.0)
    assert padded.cpu().numpy().max() == 2.0       # a copy: the padded buffer is its own


def test_im2col_view_gradients(device, rng):
    x = mt.tensor(rng.standard_normal((1, 2, 4, 5)), device=device, requires_grad=True)
    assert gradcheck(lambda t: im2col_view(t, 2, 1, 1, (2, 1), pad_value=3.0), (x,))
    assert gradgradcheck(lambda t: im2col_view(t, (3, 2), (1, 2), 0, 1) ** 2, (x,))
    # A max-pool-like reduction over a permuted window view backpropagates through it.
    pooled = im2col_view(x, 2, 1, 1, 2, pad_value=-np.inf).permute(0, 1, 4, 5, 2, 3)
    assert pooled.shape == (1, 2, 3, 3, 2, 2)
    ones = mt.ones(1, 1, 4, 4, device=device, requires_grad=True)
    im2col_view(ones, 3, 1, 0, 1).sum().backward()
    counts = reference_fold(reference_unfold(np.ones((1, 1, 4, 4)), 3, 1, 0, 1), (4, 4), 3, 1,
                            0, 1)
    np.testing.assert_array_equal(ones.grad.cpu().numpy(), counts)


# ---- errors (torch's types and wording) -------------------------------------------------------
X = mt.zeros(2, 3, 5, 6)
COLS = mt.zeros(2, 12, 20)


@pytest.mark.parametrize("fn,error,message", [
    (lambda: unfold(X[0, 0], 2), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    (lambda: unfold(X[None], 2), RuntimeError, "Expected 3D or 4D (batch mode) tensor with "
     "possibly 0 batch size and other non-zero dimensions for input, but got: [1, 2, 3, 5, 6]"),
    (lambda: unfold(mt.zeros(2, 0, 5, 6), 2), RuntimeError, "but got: [2, 0, 5, 6]"),
    (lambda: unfold(X, 7), RuntimeError, "Given input with spatial size (5, 6), "
     "kernel_size=(7, 7), dilation=(1, 1), padding=(0, 0), calculated shape of the array of "
     "sliding blocks as (-1, 0), but its components must be at least one."),
    (lambda: unfold(X, (6, 1), stride=2), RuntimeError,
     "calculated shape of the array of sliding blocks as (0, 3)"),
    (lambda: unfold(X, 0), RuntimeError,
     "kernel size should be greater than zero, but got kernel_height: 0 kernel_width: 0"),
    (lambda: unfold(X, 2, stride=0), RuntimeError,
     "stride should be greater than zero, but got stride_height: 0 stride_width: 0"),
    (lambda: unfold(X, 2, dilation=(1, 0)), RuntimeError,
     "dilation should be greater than zero, but got dilation_height: 1 dilation_width: 0"),
    (lambda: unfold(X, 2, padding=-1), RuntimeError,
     "padding should be non-negative, but got pad_height: -1 pad_width: -1"),
    (lambda: unfold(X, (2, 2, 2)), RuntimeError,
     "It is expected kernel_size equals to 2, but got size 3"),
    (lambda: unfold(X.long(), 2), NotImplementedError,
     "\"im2col_out_cpu\" not implemented for 'Long'"),
    (lambda: fold(COLS[None], (5, 6), 2),
     RuntimeError, "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size "
     "and non-zero dimensions for input, but got: [1, 2, 12, 20]"),
    (lambda: fold(mt.zeros(2, 13, 20), (5, 6), 2), RuntimeError, "Expected size of input's "
     "dimension 1 to be divisible by the product of kernel_size, but got input.size(1)=13 and "
     "kernel_size=(2, 2)."),
    (lambda: fold(mt.zeros(2, 12, 19), (5, 6), 2), RuntimeError, "Given output_size=(5, 6), "
     "kernel_size=(2, 2), dilation=(1, 1), padding=(0, 0), stride=(1, 1), expected size of "
     "input's dimension 2 to match the calculated number of sliding blocks 4 * 5 = 20, but got "
     "input.size(2)=19."),
    (lambda: fold(COLS, (1, 1), 2), RuntimeError,
     "the calculated number of sliding blocks 0 * 0 = 0, but got input.size(2)=20."),
    (lambda: fold(COLS, (5, 6), 2, stride=0), RuntimeError,
     "stride should be greater than zero, but got stride_height: 0 stride_width: 0"),
    (lambda: fold(COLS, (5, 6, 7), 2), RuntimeError,
     "It is expected output_size equals to 2, but got size 3"),
    (lambda: fold(COLS.long(), (5, 6), 2), NotImplementedError,
     "\"col2im_out_cpu\" not implemented for 'Long'"),
    (lambda: fold(mt.zeros(2, 0, 20), (5, 6), 2), RuntimeError, "but got: [2, 0, 20]"),
])
def test_errors(fn, error, message):
    with pytest.raises(error) as info:
        fn()
    assert message in str(info.value)


def test_fold_int_output_size(device):
    assert fold(mt.zeros(2, 12, 16, device=device), 5, 2).shape == (2, 3, 5, 5)
