"""minitorch.nn.functional: forward values against loop-by-loop numpy references, gradients by
finite differences (float64 gradcheck), torch's errors pinned by message, and (where torch is
installed) values, gradients and errors compared with torch.nn.functional."""
import itertools
import math
import warnings

import numpy as np
import pytest

import minitorch as mt
import minitorch.nn.functional as F
from minitorch.autograd import gradcheck, gradgradcheck
from torch_parity import same_error, value


def tensor(x, device, grad=False, dtype=None):
    return mt.tensor(np.asarray(x), device=device, requires_grad=grad, dtype=dtype)


def _pairs(*values):
    return [(v, v) if isinstance(v, int) else tuple(v) for v in values]


def torch_compare(mt_fn, torch_fn, arrays, device, grad_args=None, atol=1e-10):
    """Run the same function in both libraries on float64 copies of `arrays`; compare the output
    and the gradients of the first `grad_args` float inputs for a random output gradient."""
    torch = pytest.importorskip("torch")
    grad_args = len(arrays) if grad_args is None else grad_args
    ours = [mt.tensor(a, device=device, requires_grad=i < grad_args and a.dtype.kind == "f")
            for i, a in enumerate(arrays)]
    theirs = [torch.tensor(a, requires_grad=i < grad_args and a.dtype.kind == "f")
              for i, a in enumerate(arrays)]
    out, expected = mt_fn(*ours), torch_fn(*theirs)
    assert out.shape == tuple(expected.shape)
    assert out.dtype.name == str(expected.dtype).replace("torch.", "")
    np.testing.assert_allclose(value(out), expected.detach().numpy(), rtol=1e-9, atol=atol)
    if not expected.requires_grad:
        return
    g = np.random.default_rng(1).standard_normal(tuple(expected.shape))
    out.backward(mt.tensor(g, device=device))
    expected.backward(torch.tensor(g))
    for a, b in zip(ours, theirs):
        if b.requires_grad:
            np.testing.assert_allclose(value(a.grad), b.grad.numpy(), rtol=1e-8, atol=1e-9)


# ---- linear -----------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(4,), (3, 4), (2, 3, 4)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear_forward_and_gradients(shape, bias, device, rng):
    x, w, b = rng.standard_normal(shape), rng.standard_normal((5, 4)), rng.standard_normal(5)
    out = F.linear(tensor(x, device), tensor(w, device), tensor(b, device) if bias else None)
    np.testing.assert_allclose(value(out), x @ w.T + (b if bias else 0), rtol=1e-12)
    args = (tensor(x, device, True), tensor(w, device, True)) + (
        (tensor(b, device, True),) if bias else ())
    assert gradcheck(lambda *a: F.linear(*a), args)
    assert gradgradcheck(lambda *a: F.linear(*a) ** 2, args)
    assert type(F.linear(*args).grad_fn).__name__ == "Linear"


@pytest.mark.parametrize("needs", [(True, False, False), (False, True, True),
                                   (True, True, False), (False, False, True)])
def test_linear_double_backward_partial_requires_grad(needs, device, rng):
    """LinearBackward computes only the gradients asked for, and its own backward handles any
    subset of incoming second-order gradients."""
    x, w, b = rng.standard_normal((2, 3, 4)), rng.standard_normal((5, 4)), rng.standard_normal(5)
    args = [tensor(v, device, need) for v, need in zip((x, w, b), needs)]
    wanted = [a for a in args if a.requires_grad]

    def fn(*inputs):
        it = iter(inputs)
        return F.linear(*[next(it) if a.requires_grad else a for a in args]).tanh()
    assert gradgradcheck(fn, tuple(wanted))


def test_linear_non_contiguous_and_empty(device, rng):
    x = rng.standard_normal((4, 3))
    w = rng.standard_normal((4, 5))
    out = F.linear(tensor(x, device).t(), tensor(w, device).t())      # both transposed views
    np.testing.assert_allclose(value(out), x.T @ w, rtol=1e-12)
    empty = F.linear(mt.zeros(0, 3, device=device), mt.ones(2, 3, device=device))
    assert empty.shape == (0, 2)


def test_linear_errors(device):
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied "
                                           r"\(2x3 and 5x4\)"):
        F.linear(mt.zeros(2, 3, device=device), mt.zeros(4, 5, device=device))


def test_linear_matches_torch(device, rng):
    torch_compare(F.linear, pytest.importorskip("torch").nn.functional.linear,
                  [rng.standard_normal((2, 3, 4)), rng.standard_normal((5, 4)),
                   rng.standard_normal(5)], device)


# ---- convolution ------------------------------------------------------------------------------
def conv2d_ref(x, w, b, stride, pads, dilation, groups):
    """Cross-correlation one kernel tap at a time; pads is ((top, bottom), (left, right))."""
    (sh, sw), (dh, dw) = _pairs(stride, dilation)
    n, _, h, wd = x.shape
    oc, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0)) + tuple(pads))
    oh = (xp.shape[2] - dh * (kh - 1) - 1) // sh + 1
    ow = (xp.shape[3] - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, oc, oh, ow))
    og = oc // groups
    for g, i, j in itertools.product(range(groups), range(kh), range(kw)):
        patch = xp[:, g * cg:(g + 1) * cg, i * dh:i * dh + sh * (oh - 1) + 1:sh,
                   j * dw:j * dw + sw * (ow - 1) + 1:sw]
        out[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", patch,
                                                 w[g * og:(g + 1) * og, :, i, j])
    return out + (0 if b is None else b.reshape(1, -1, 1, 1))


def _ref_pads(padding, kernel, dilation):
    if padding == "valid":
        return ((0, 0), (0, 0))
    if padding == "same":
        totals = [d * (k - 1) for d, k in zip(_pairs(dilation)[0], kernel)]
        return tuple((t // 2, t - t // 2) for t in totals)
    return tuple((p, p) for p in _pairs(padding)[0])


# (input shape, weight shape, stride, padding, dilation, groups)
CONV2D_CASES = [
    ((2, 3, 6, 5), (4, 3, 3, 2), 1, 0, 1, 1),
    ((1, 2, 7, 6), (3, 2, 3, 3), 2, 1, 1, 1),
    ((2, 2, 6, 7), (2, 2, 2, 3), (2, 1), (1, 2), (2, 1), 1),
    ((1, 3, 5, 6), (2, 3, 3, 3), 1, "same", 1, 1),
    ((1, 2, 6, 5), (2, 2, 4, 2), 1, "same", (1, 2), 1),       # even kernel: odd extra on the right
    ((1, 2, 5, 5), (3, 2, 3, 3), 1, "valid", 2, 1),
    ((2, 4, 5, 5), (6, 2, 3, 3), 1, 1, 1, 2),
    ((1, 4, 4, 5), (8, 1, 3, 2), (1, 2), 1, 1, 4),             # depthwise
]
CONV2D_IDS = [f"{c[0]}-w{c[1]}-s{c[2]}-p{c[3]}-d{c[4]}-g{c[5]}" for c in CONV2D_CASES]


@pytest.mark.parametrize("xs,ws,stride,padding,dilation,groups", CONV2D_CASES, ids=CONV2D_IDS)
def test_conv2d_matches_reference(xs, ws, stride, padding, dilation, groups, device, rng):
    x, w, b = rng.standard_normal(xs), rng.standard_normal(ws), rng.standard_normal(ws[0])
    pads = _ref_pads(padding, ws[2:], dilation)
    expected = conv2d_ref(x, w, b, stride, pads, dilation, groups)
    out = F.conv2d(tensor(x, device), tensor(w, device), tensor(b, device), stride, padding,
                   dilation, groups)
    np.testing.assert_allclose(value(out), expected, rtol=1e-10, atol=1e-12)
    # Unbatched (C, H, W) input gives (OC, OH, OW); no bias.
    single = F.conv2d(tensor(x[0], device), tensor(w, device), None, stride, padding, dilation,
                      groups)
    np.testing.assert_allclose(value(single), expected[0] - b.reshape(-1, 1, 1), rtol=1e-10,
                               atol=1e-12)


@pytest.mark.parametrize("xs,ws,stride,padding,dilation,groups",
                         [CONV2D_CASES[i] for i in (1, 2, 4, 6)],
                         ids=[CONV2D_IDS[i] for i in (1, 2, 4, 6)])
def test_conv2d_gradients(xs, ws, stride, padding, dilation, groups, device, rng):
    xs = (1, xs[1], min(xs[2], 5), min(xs[3], 5))
    x = tensor(rng.standard_normal(xs), device, True)
    w = tensor(rng.standard_normal(ws), device, True)
    b = tensor(rng.standard_normal(ws[0]), device, True)
    assert gradcheck(lambda *a: F.conv2d(*a, stride, padding, dilation, groups), (x, w, b))


@pytest.mark.parametrize("channels", [1, 3])
def test_conv2d_weight_gradient_when_input_needs_none(channels, device, rng):
    """A first layer (input without grad): the weight gradient is computed per image from the
    output gradient as it arrives; first and second order match finite differences, also for
    a non-contiguous output gradient."""
    x = tensor(rng.standard_normal((2, channels, 5, 4)), device)
    w = tensor(rng.standard_normal((3, channels, 3, 2)), device, True)
    b = tensor(rng.standard_normal(3), device, True)
    assert gradcheck(lambda w, b: F.conv2d(x, w, b, padding=1), (w, b))
    assert gradgradcheck(lambda w: F.conv2d(x, w, padding=(1, 0)) ** 2, (w,))
    g = rng.standard_normal((2, 3, 5, 5))
    F.conv2d(x, w, b, padding=1).backward(tensor(g, device))
    expected = w.grad.cpu().numpy()
    w.grad = None
    channels_last = tensor(np.ascontiguousarray(g.transpose(0, 2, 3, 1)), device)
    F.conv2d(x, w, b, padding=1).backward(channels_last.permute(0, 3, 1, 2))
    np.testing.assert_allclose(w.grad.cpu().numpy(), expected, rtol=1e-12)


@pytest.mark.parametrize("channels", [1, 4])       # K <= 16 (NCHW per image) and K > 16
def test_conv2d_in_image_chunks_matches_whole_batch(channels, device, rng, monkeypatch):
    """The GEMM rows are built a chunk of images at a time: chunks of one image give the same
    output and gradients as one chunk for the batch, and finite differences agree."""
    from minitorch.functions import conv
    x = rng.standard_normal((3, channels, 6, 5))
    w = rng.standard_normal((5, channels, 3, 2))
    b = rng.standard_normal(5)
    g = rng.standard_normal((3, 5, 3, 7))

    def run():
        xt, wt, bt = (tensor(v, device, True) for v in (x, w, b))
        out = F.conv2d(xt, wt, bt, stride=(2, 1), padding=(1, 2), dilation=(1, 2))
        out.backward(tensor(g, device))
        return [t.detach().cpu().numpy() for t in (out, xt.grad, wt.grad, bt.grad)]
    whole = run()
    monkeypatch.setattr(conv, "CHUNK_BYTES", 1)
    for ours, expected in zip(run(), whole):
        np.testing.assert_allclose(ours, expected, rtol=1e-12, atol=1e-12)
    args = (tensor(x[:2], device, True), tensor(w, device, True))
    assert gradcheck(lambda a, c: F.conv2d(a, c, padding=1), args)
    assert gradgradcheck(lambda a, c: F.conv2d(a, c, padding=1) ** 2, args)
    fixed_w = tensor(w, device)         # input gradient only: no padded copy is kept
    assert gradgradcheck(lambda a: F.conv2d(a, fixed_w, padding=1) ** 2, args[:1])


def test_conv2d_double_backward_and_views(device, rng):
    x = tensor(rng.standard_normal((1, 2, 4, 4)), device, True)
    w = tensor(rng.standard_normal((2, 2, 2, 2)), device, True)
    assert gradgradcheck(lambda a, b: F.conv2d(a, b, padding=1) ** 2, (x, w))
    # Permuted (channels-last storage) and stepped inputs give the same result as contiguous.
    base = rng.standard_normal((2, 5, 6, 3))
    nhwc = tensor(base, device).permute(0, 3, 1, 2)
    wt = rng.standard_normal((4, 3, 2, 2))
    expected = conv2d_ref(base.transpose(0, 3, 1, 2), wt, None, 1, ((0, 0), (0, 0)), 1, 1)
    np.testing.assert_allclose(value(F.conv2d(nhwc, tensor(wt, device))), expected, rtol=1e-10)
    stepped = tensor(base.transpose(0, 3, 1, 2), device)[:, :, ::2, ::2]
    expected = conv2d_ref(base.transpose(0, 3, 1, 2)[:, :, ::2, ::2], wt, None, 1,
                          ((0, 0), (0, 0)), 1, 1)
    np.testing.assert_allclose(value(F.conv2d(stepped, tensor(wt, device))), expected, rtol=1e-10)
    empty = F.conv2d(mt.zeros(0, 3, 5, 5, device=device), mt.zeros(2, 3, 3, 3, device=device))
    assert empty.shape == (0, 2, 3, 3)


@pytest.mark.parametrize("stride,padding,dilation,groups",
                         [(1, 0, 1, 1), (2, 2, 1, 1), (1, "same", 2, 1), (1, "same", 1, 1),
                          (3, "valid", 1, 3), ((2,), (1,), (2,), 1)])
def test_conv1d_matches_reference(stride, padding, dilation, groups, device, rng):
    x, b = rng.standard_normal((2, 3, 9)), rng.standard_normal(6)
    w = rng.standard_normal((6, 3 // groups, 4 if padding == "same" else 3))
    s, d = _pairs(stride, dilation)
    if isinstance(padding, str):
        pads = _ref_pads(padding, (1, w.shape[2]), (1, d[0]))
    else:
        pads = ((0, 0), (_pairs(padding)[0][0],) * 2)
    expected = conv2d_ref(x[:, :, None], w[:, :, None], b, (1, s[0]), pads, (1, d[0]),
                          groups)[:, :, 0]
    out = F.conv1d(tensor(x, device), tensor(w, device), tensor(b, device), stride, padding,
                   dilation, groups)
    np.testing.assert_allclose(value(out), expected, rtol=1e-10, atol=1e-12)
    single = F.conv1d(tensor(x[1], device), tensor(w, device), tensor(b, device), stride,
                      padding, dilation, groups)
    np.testing.assert_allclose(value(single), expected[1], rtol=1e-10, atol=1e-12)


def test_conv1d_gradients(device, rng):
    x = tensor(rng.standard_normal((2, 2, 6)), device, True)
    w = tensor(rng.standard_normal((2, 1, 3)), device, True)
    b = tensor(rng.standard_normal(2), device, True)
    assert gradcheck(lambda *a: F.conv1d(*a, stride=2, padding=1, dilation=1, groups=2),
                     (x, w, b))


def conv_transpose2d_ref(x, w, b, stride, padding, output_padding, groups, dilation):
    """Each input pixel scatters weight * value onto the (cropped) output grid."""
    (sh, sw), (ph, pw), (oph, opw), (dh, dw) = _pairs(stride, padding, output_padding, dilation)
    n, c, h, wd = x.shape
    cg, og, kh, kw = c // groups, w.shape[1], w.shape[2], w.shape[3]
    full = np.zeros((n, og * groups, (h - 1) * sh + dh * (kh - 1) + 1 + oph,
                     (wd - 1) * sw + dw * (kw - 1) + 1 + opw))
    for g, i, j in itertools.product(range(groups), range(kh), range(kw)):
        full[:, g * og:(g + 1) * og, i * dh:i * dh + sh * (h - 1) + 1:sh,
             j * dw:j * dw + sw * (wd - 1) + 1:sw] += np.einsum(
                 "nchw,co->nohw", x[:, g * cg:(g + 1) * cg], w[g * cg:(g + 1) * cg, :, i, j])
    out = full[:, :, ph:full.shape[2] - ph, pw:full.shape[3] - pw]
    return out + (0 if b is None else b.reshape(1, -1, 1, 1))


# (stride, padding, output_padding, groups, dilation)
CONVT_CASES = [(1, 0, 0, 1, 1), (2, 0, 0, 1, 1), (2, 1, 1, 1, 1), ((2, 3), (1, 0), (1, 2), 1, 1),
               (1, 1, 0, 1, 2), (2, 1, 1, 2, 2), (3, 2, 2, 2, (1, 2))]


@pytest.mark.parametrize("stride,padding,output_padding,groups,dilation", CONVT_CASES)
def test_conv_transpose2d_matches_reference(stride, padding, output_padding, groups, dilation,
                                            device, rng):
    x, w = rng.standard_normal((2, 4, 3, 4)), rng.standard_normal((4, 3, 3, 2))
    b = rng.standard_normal(3 * groups)
    expected = conv_transpose2d_ref(x, w, b, stride, padding, output_padding, groups, dilation)
    out = F.conv_transpose2d(tensor(x, device), tensor(w, device), tensor(b, device), stride,
                             padding, output_padding, groups, dilation)
    np.testing.assert_allclose(value(out), expected, rtol=1e-10, atol=1e-12)
    single = F.conv_transpose2d(tensor(x[0], device), tensor(w, device), None, stride, padding,
                                output_padding, groups, dilation)
    np.testing.assert_allclose(value(single), expected[0] - b.reshape(-1, 1, 1), rtol=1e-10,
                               atol=1e-12)


def test_conv_transpose2d_gradients(device, rng):
    x = tensor(rng.standard_normal((1, 2, 3, 2)), device, True)
    w = tensor(rng.standard_normal((2, 1, 2, 3)), device, True)
    b = tensor(rng.standard_normal(2), device, True)
    assert gradcheck(lambda *a: F.conv_transpose2d(*a, stride=2, padding=1, output_padding=1,
                                                   groups=2, dilation=1), (x, w, b))


@pytest.mark.parametrize("case", range(len(CONV2D_CASES)))
def test_conv2d_matches_torch(case, device, rng):
    xs, ws, stride, padding, dilation, groups = CONV2D_CASES[case]
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")      # torch warns about 'same' with even kernels
        torch_compare(lambda *a: F.conv2d(*a, stride, padding, dilation, groups),
                      lambda *a: torch.nn.functional.conv2d(*a, stride, padding, dilation,
                                                            groups),
                      [rng.standard_normal(xs), rng.standard_normal(ws),
                       rng.standard_normal(ws[0])], device)


@pytest.mark.parametrize("case", range(len(CONVT_CASES)))
def test_conv_transpose2d_matches_torch(case, device, rng):
    stride, padding, output_padding, groups, dilation = CONVT_CASES[case]
    torch = pytest.importorskip("torch")
    torch_compare(lambda *a: F.conv_transpose2d(*a, stride, padding, output_padding, groups,
                                                dilation),
                  lambda *a: torch.nn.functional.conv_transpose2d(
                      *a, stride, padding, output_padding, groups, dilation),
                  [rng.standard_normal((2, 4, 3, 4)), rng.standard_normal((4, 3, 3, 2)),
                   rng.standard_normal(3 * groups)], device)


def test_conv1d_matches_torch(device, rng):
    torch = pytest.importorskip("torch")
    torch_compare(lambda *a: F.conv1d(*a, stride=2, padding=1, dilation=2, groups=3),
                  lambda *a: torch.nn.functional.conv1d(*a, stride=2, padding=1, dilation=2,
                                                        groups=3),
                  [rng.standard_normal((2, 3, 9)), rng.standard_normal((6, 1, 3)),
                   rng.standard_normal(6)], device)


def _z(lib, *shape, dtype=None):
    return lib.zeros(*shape, dtype=dtype or lib.float32)


CONV_ERRORS = {
    "3-D weight for conv2d": (
        lambda L: L.nn.functional.conv2d(_z(L, 1, 3, 5, 5), _z(L, 2, 3, 3)), RuntimeError,
        "expected stride to be a single integer value or a list of 1 values to match the "
        "convolution dimensions, but got stride=[1, 1]"),
    "2-D input": (
        lambda L: L.nn.functional.conv2d(_z(L, 3, 4), _z(L, 2, 3, 2, 2)), RuntimeError,
        "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [3, 4]"),
    "channels": (
        lambda L: L.nn.functional.conv2d(_z(L, 4, 5, 5), _z(L, 2, 3, 2, 2)), RuntimeError,
        "Given groups=1, weight of size [2, 3, 2, 2], expected input[1, 4, 5, 5] to have 3 "
        "channels, but got 4 channels instead"),
    "groups": (
        lambda L: L.nn.functional.conv2d(_z(L, 1, 4, 5, 5), _z(L, 3, 2, 2, 2), groups=2),
        RuntimeError, "Given groups=2, expected weight to be divisible by 2 at dimension 0, but "
                      "got weight of size [[3, 2, 2, 2]] instead"),
    "kernel too big": (
        lambda L: L.nn.functional.conv2d(_z(L, 1, 3, 2, 2), _z(L, 2, 3, 2, 2), dilation=2),
        RuntimeError, "Calculated padded input size per channel: (2 x 2). Kernel size: (3 x 3). "
                      "Kernel size can't be greater than actual input size"),
    "bias size": (
        lambda L: L.nn.functional.conv2d(_z(L, 1, 3, 5, 5), _z(L, 2, 3, 3, 3), _z(L, 3)),
        RuntimeError, "Given weight of size [2, 3, 3, 3], expected bias to be 1-dimensional "
                      "with 2 elements, but got bias of size [3] instead"),
    "dtype": (
        lambda L: L.nn.functional.conv2d(_z(L, 1, 3, 5, 5, dtype=L.float64),
                                         _z(L, 2, 3, 3, 3)),
        RuntimeError, "expected scalar type Double but found Float"),
    "bias dtype": (
        lambda L: L.nn.functional.conv2d(_z(L, 1, 3, 5, 5), _z(L, 2, 3, 3, 3),
                                         _z(L, 2, dtype=L.float64)),
        RuntimeError, "Input type (float) and bias type (double) should be the same"),
    "negative padding": (
        lambda L: L.nn.functional.conv2d(_z(L, 1, 3, 5, 5), _z(L, 2, 3, 3, 3), padding=-1),
        RuntimeError, "negative padding is not supported"),
    "zero stride": (
        lambda L: L.nn.functional.conv2d(_z(L, 1, 3, 5, 5), _z(L, 2, 3, 3, 3), stride=0),
        RuntimeError, "non-positive stride is not supported"),
    "same with stride": (
        lambda L: L.nn.functional.conv2d(_z(L, 1, 3, 5, 5), _z(L, 2, 3, 3, 3), stride=2,
                                         padding="same"),
        RuntimeError, "padding='same' is not supported for strided convolutions"),
    "bad padding string": (
        lambda L: L.nn.functional.conv2d(_z(L, 1, 3, 5, 5), _z(L, 2, 3, 3, 3), padding="full"),
        RuntimeError, "Invalid padding string: 'full'"),
    "conv1d rank": (
        lambda L: L.nn.functional.conv1d(_z(L, 5), _z(L, 2, 3, 3)), RuntimeError,
        "Expected 2D (unbatched) or 3D (batched) input to conv1d, but got input of size: [5]"),
    "conv1d channels": (
        lambda L: L.nn.functional.conv1d(_z(L, 1, 4, 5), _z(L, 2, 3, 3)), RuntimeError,
        "Given groups=1, weight of size [2, 3, 3], expected input[1, 4, 5] to have 3 channels, "
        "but got 4 channels instead"),
    "conv1d with 4-D weight": (
        lambda L: L.nn.functional.conv1d(_z(L, 1, 4, 2), _z(L, 4, 2, 2, 2)), RuntimeError,
        "Expected 4-dimensional input for 4-dimensional weight [4, 2, 2, 2], but got "
        "3-dimensional input of size [1, 4, 2] instead"),
    "transposed channels": (
        lambda L: L.nn.functional.conv_transpose2d(_z(L, 1, 4, 5, 5), _z(L, 3, 2, 3, 3)),
        RuntimeError, "Given transposed=1, weight of size [3, 2, 3, 3], expected input[1, 4, 5, "
                      "5] to have 3 channels, but got 4 channels instead"),
    "transposed bias": (
        lambda L: L.nn.functional.conv_transpose2d(_z(L, 1, 3, 2, 2), _z(L, 3, 2, 2, 2),
                                                   _z(L, 3)),
        RuntimeError, "Given transposed=1, weight of size [3, 2, 2, 2], expected bias to be "
                      "1-dimensional with 2 elements, but got bias of size [3] instead"),
    "output padding": (
        lambda L: L.nn.functional.conv_transpose2d(_z(L, 1, 3, 5, 5), _z(L, 3, 2, 3, 3),
                                                   stride=2, output_padding=2),
        RuntimeError, "output padding must be smaller than either stride or dilation, but got "
                      "output_padding_height: 2 output_padding_width: 2 stride_height: 2 "
                      "stride_width: 2 dilation_height: 1 dilation_width: 1"),
    "transposed output too small": (
        lambda L: L.nn.functional.conv_transpose2d(_z(L, 1, 3, 2, 2), _z(L, 3, 2, 2, 2),
                                                   padding=3),
        RuntimeError, "Given input size per channel: (2 x 2). Calculated output size per "
                      "channel: (-3 x -3). Output size is too small"),
    "transposed rank": (
        lambda L: L.nn.functional.conv_transpose2d(_z(L, 5, 5), _z(L, 3, 2, 3, 3)), RuntimeError,
        "Expected 3D (unbatched) or 4D (batched) input to conv_transpose2d, but got input of "
        "size: [5, 5]"),
}


@pytest.mark.parametrize("name", list(CONV_ERRORS))
def test_conv_errors(name):
    call, kind, message = CONV_ERRORS[name]
    with pytest.raises(kind) as info:
        call(mt)
    assert str(info.value) == message


@pytest.mark.parametrize("name", list(CONV_ERRORS))
def test_conv_errors_match_torch(name):
    same_error(CONV_ERRORS[name][0])


# ---- pooling ----------------------------------------------------------------------------------
def _pool_out(size, k, s, p, d, ceil):
    out = (size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil else 0)) // s + 1
    return out - 1 if ceil and (out - 1) * s >= size + p else out


def max_pool2d_ref(x, kernel, stride, padding, dilation, ceil_mode):
    """Values and flat H*W indices of each window's first maximum."""
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = _pairs(kernel, stride, padding, dilation)
    n, c, h, w = x.shape
    oh, ow = _pool_out(h, kh, sh, ph, dh, ceil_mode), _pool_out(w, kw, sw, pw, dw, ceil_mode)
    values, indices = np.zeros((n, c, oh, ow)), np.zeros((n, c, oh, ow), np.int64)
    for i, j in itertools.product(range(oh), range(ow)):
        best, where = np.full((n, c), -np.inf), np.full((n, c), -1)
        for a, b in itertools.product(range(kh), range(kw)):
            r, q = i * sh - ph + a * dh, j * sw - pw + b * dw
            if 0 <= r < h and 0 <= q < w:
                better = x[:, :, r, q] > best
                best = np.where(better, x[:, :, r, q], best)
                where = np.where(better, r * w + q, where)
        values[:, :, i, j], indices[:, :, i, j] = best, where
    return values, indices


def avg_pool2d_ref(x, kernel, stride, padding, ceil_mode, count_include_pad, divisor):
    (kh, kw), (sh, sw), (ph, pw) = _pairs(kernel, stride, padding)
    n, c, h, w = x.shape
    oh, ow = _pool_out(h, kh, sh, ph, 1, ceil_mode), _pool_out(w, kw, sw, pw, 1, ceil_mode)
    out = np.zeros((n, c, oh, ow))
    for i, j in itertools.product(range(oh), range(ow)):
        h0, w0 = i * sh - ph, j * sw - pw
        h1, w1 = min(h0 + kh, h + ph), min(w0 + kw, w + pw)
        pool = (h1 - h0) * (w1 - w0)
        h0, w0, h1, w1 = max(h0, 0), max(w0, 0), min(h1, h), min(w1, w)
        total = x[:, :, h0:h1, w0:w1].sum(axis=(2, 3))
        out[:, :, i, j] = total / (divisor or (pool if count_include_pad else
                                               (h1 - h0) * (w1 - w0)))
    return out


# (kernel, stride, padding, dilation, ceil_mode)
POOL_CASES = [(2, None, 0, 1, False), (3, 2, 1, 1, False), ((2, 3), (1, 2), (1, 1), 1, False),
              (3, 1, 1, 2, False), (3, 2, 0, 1, True), (2, 3, 0, 1, True), (3, 2, 1, 1, True),
              (2, 2, 1, 2, True), (3, (2, 3), (1, 0), (2, 1), True)]


@pytest.mark.parametrize("kernel,stride,padding,dilation,ceil_mode", POOL_CASES)
def test_max_pool2d_matches_reference(kernel, stride, padding, dilation, ceil_mode, device,
                                      rng):
    x = rng.standard_normal((2, 3, 7, 8))
    values, indices = max_pool2d_ref(x, kernel, stride or kernel, padding, dilation, ceil_mode)
    out, idx = F.max_pool2d(tensor(x, device), kernel, stride, padding, dilation, ceil_mode,
                            return_indices=True)
    np.testing.assert_array_equal(value(out), values)
    assert idx.dtype is mt.int64
    np.testing.assert_array_equal(value(idx), indices)
    single = F.max_pool2d(tensor(x[1], device), kernel, stride, padding, dilation, ceil_mode)
    np.testing.assert_array_equal(value(single), values[1])


def test_max_pool2d_ties_and_gradients(device, rng):
    # Ties: the first maximum in scan order is picked and receives the whole gradient.
    x = np.array([[[[1., 1, 2, 2], [1, 1, 2, 2], [3, 3, 0, 0], [3, 3, 0, 0]]]])
    t = tensor(x, device, True)
    out, idx = F.max_pool2d(t, 2, return_indices=True)
    np.testing.assert_array_equal(value(idx), [[[[0, 2], [8, 10]]]])
    out.sum().backward()
    np.testing.assert_array_equal(value(t.grad), [[[[1, 0, 1, 0], [0, 0, 0, 0], [1, 0, 1, 0],
                                                    [0, 0, 0, 0]]]])
    # Overlapping windows accumulate into a shared maximum.
    t = tensor(x, device, True)
    F.max_pool2d(t, 3, 1, 1).sum().backward()
    assert value(t.grad).sum() == 16
    # Distinct values (no ties) for finite differences.
    y = tensor(rng.permutation(50)[:2 * 20].reshape(1, 2, 4, 5) / 7.0, device, True)
    assert gradcheck(lambda a: F.max_pool2d(a, 3, 2, 1, ceil_mode=True), (y,))
    assert gradcheck(lambda a: F.max_pool2d(a, 2, 1, 0, dilation=2), (y,))


@pytest.mark.parametrize("kernel,stride,padding,dilation,ceil_mode",
                         [c for c in POOL_CASES if c[3] == 1])
@pytest.mark.parametrize("count_include_pad,divisor", [(True, None), (False, None), (True, 5)])
def test_avg_pool2d_matches_reference(kernel, stride, padding, dilation, ceil_mode,
                                      count_include_pad, divisor, device, rng):
    x = rng.standard_normal((2, 3, 7, 8))
    expected = avg_pool2d_ref(x, kernel, stride or kernel, padding, ceil_mode, count_include_pad,
                              divisor)
    out = F.avg_pool2d(tensor(x, device), kernel, stride, padding, ceil_mode, count_include_pad,
                       divisor)
    np.testing.assert_allclose(value(out), expected, rtol=1e-12)
    single = F.avg_pool2d(tensor(x[0], device), kernel, stride, padding, ceil_mode,
                          count_include_pad, divisor)
    np.testing.assert_allclose(value(single), expected[0], rtol=1e-12)


def test_avg_pool2d_gradients(device, rng):
    x = tensor(rng.standard_normal((1, 2, 5, 4)), device, True)
    assert gradcheck(lambda a: F.avg_pool2d(a, 3, 2, 1, ceil_mode=True,
                                            count_include_pad=False), (x,))
    assert gradcheck(lambda a: F.avg_pool2d(a, 2, divisor_override=3), (x,))


def adaptive_ref(x, out_h, out_w):
    h, w = x.shape[-2:]
    out = np.zeros(x.shape[:-2] + (out_h, out_w))
    for i, j in itertools.product(range(out_h), range(out_w)):
        rows = slice(i * h // out_h, -(-(i + 1) * h // out_h))
        cols = slice(j * w // out_w, -(-(j + 1) * w // out_w))
        out[..., i, j] = x[..., rows, cols].mean(axis=(-2, -1))
    return out


@pytest.mark.parametrize("output_size,expected", [(1, (1, 1)), ((7, 4), (7, 4)), ((3, 5), (3, 5)),
                                                  ((2, None), (2, 8)), (10, (10, 10))])
def test_adaptive_avg_pool2d(output_size, expected, device, rng):
    x = rng.standard_normal((2, 3, 7, 8))
    out = F.adaptive_avg_pool2d(tensor(x, device), output_size)
    np.testing.assert_allclose(value(out), adaptive_ref(x, *expected), rtol=1e-12)
    single = F.adaptive_avg_pool2d(tensor(x[0], device), output_size)
    np.testing.assert_allclose(value(single), adaptive_ref(x[0], *expected), rtol=1e-12)


def test_adaptive_avg_pool2d_gradients(device, rng):
    x = tensor(rng.standard_normal((1, 2, 5, 4)), device, True)
    assert gradcheck(lambda a: F.adaptive_avg_pool2d(a, (3, 2)), (x,))     # non-divisible
    assert gradcheck(lambda a: F.adaptive_avg_pool2d(a, (5, 2)), (x,))     # divisible


@pytest.mark.parametrize("case", range(len(POOL_CASES)))
def test_pooling_matches_torch(case, device, rng):
    kernel, stride, padding, dilation, ceil_mode = POOL_CASES[case]
    torch = pytest.importorskip("torch")
    x = rng.permutation(2 * 3 * 7 * 8).reshape(2, 3, 7, 8) / 10.0     # distinct values
    torch_compare(lambda a: F.max_pool2d(a, kernel, stride, padding, dilation, ceil_mode),
                  lambda a: torch.nn.functional.max_pool2d(a, kernel, stride, padding, dilation,
                                                           ceil_mode), [x], device)
    if dilation == 1:
        torch_compare(lambda a: F.avg_pool2d(a, kernel, stride, padding, ceil_mode, False),
                      lambda a: torch.nn.functional.avg_pool2d(a, kernel, stride, padding,
                                                               ceil_mode, False), [x], device)
    torch_compare(lambda a: F.adaptive_avg_pool2d(a, (3 + case % 3, 5)),
                  lambda a: torch.nn.functional.adaptive_avg_pool2d(a, (3 + case % 3, 5)), [x],
                  device)


POOL_ERRORS = {
    "max rank": (lambda L: L.nn.functional.max_pool2d(_z(L, 5, 5), 2), RuntimeError,
                 "non-empty 3D or 4D (batch mode) tensor expected for input"),
    "avg rank": (lambda L: L.nn.functional.avg_pool2d(_z(L, 5, 5), 2), IndexError,
                 "Dimension out of range (expected to be in range of [-2, 1], but got -3)"),
    "avg 5-D": (lambda L: L.nn.functional.avg_pool2d(_z(L, 1, 1, 1, 5, 5), 2), RuntimeError,
                "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, "
                "but got:[1, 1, 1, 5, 5]"),
    "pad over half": (lambda L: L.nn.functional.max_pool2d(_z(L, 1, 1, 5, 5), 2, padding=2),
                      RuntimeError, "pad should be at most half of effective kernel size, but "
                                    "got pad=2, kernel_size=2 and dilation=1"),
    "pad with dilation": (
        lambda L: L.nn.functional.max_pool2d(_z(L, 1, 1, 5, 5), 3, 1, 2, dilation=2),
        RuntimeError, "pad should be smaller than or equal to half of kernel size, but got padW "
                      "= 2, padH = 2, kW = 3, kH = 3"),
    "too small": (lambda L: L.nn.functional.avg_pool2d(_z(L, 1, 1, 2, 2), 3), RuntimeError,
                  "Given input size: (1x2x2). Calculated output size: (1x0x0). Output size is "
                  "too small"),
    "zero kernel": (lambda L: L.nn.functional.max_pool2d(_z(L, 1, 1, 5, 5), 0, 1), RuntimeError,
                    "kernel size should be greater than zero, but got kH: 0 kW: 0"),
    "zero stride": (lambda L: L.nn.functional.max_pool2d(_z(L, 1, 1, 5, 5), 2, 0), RuntimeError,
                    "stride should not be zero"),
    "negative stride": (lambda L: L.nn.functional.avg_pool2d(_z(L, 1, 1, 5, 5), 2, -1),
                        RuntimeError, "stride should be greater than zero, but got dH: -1 dW: -1"),
    "zero dilation": (lambda L: L.nn.functional.max_pool2d(_z(L, 1, 1, 5, 5), 2, dilation=0),
                      RuntimeError, "dilation should be greater than zero, but got dilationH: 0 "
                                    "dilationW: 0"),
    "empty plane": (lambda L: L.nn.functional.max_pool2d(_z(L, 1, 1, 0, 5), 3, 1), RuntimeError,
                    "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for "
                    "input, but got:[1, 1, 0, 5]"),
    "kernel tuple": (lambda L: L.nn.functional.max_pool2d(_z(L, 1, 1, 5, 5), (3, 3, 3)),
                     RuntimeError, "max_pool2d: kernel_size must either be a single int, or a "
                                   "tuple of two ints"),
    "divisor": (lambda L: L.nn.functional.avg_pool2d(_z(L, 1, 1, 5, 5), 2, divisor_override=0),
                RuntimeError, "divisor must be not zero"),
    "adaptive rank": (lambda L: L.nn.functional.adaptive_avg_pool2d(_z(L, 5, 5), 2),
                      RuntimeError, "adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got "
                                    "[5, 5]"),
    "adaptive size": (lambda L: L.nn.functional.adaptive_avg_pool2d(_z(L, 1, 5, 5), (2, 2, 2)),
                      ValueError, "Input dimension should be at least 4"),
}


@pytest.mark.parametrize("name", list(POOL_ERRORS))
def test_pooling_errors(name):
    call, kind, message = POOL_ERRORS[name]
    with pytest.raises(kind) as info:
        call(mt)
    assert str(info.value) == message


@pytest.mark.torch_exact
@pytest.mark.parametrize("name", list(POOL_ERRORS))
def test_pooling_errors_match_torch(name):
    same_error(POOL_ERRORS[name][0])


def test_pooling_non_contiguous_input(device, rng):
    base = rng.standard_normal((2, 6, 7, 3))                 # channels-last storage
    x = tensor(base, device).permute(0, 3, 1, 2)
    expected = max_pool2d_ref(base.transpose(0, 3, 1, 2), 2, 2, 1, 1, False)[0]
    np.testing.assert_array_equal(value(F.max_pool2d(x, 2, 2, 1)), expected)
    stepped = tensor(base.transpose(0, 3, 1, 2), device)[:, :, ::2, 1::2]
    expected = avg_pool2d_ref(base.transpose(0, 3, 1, 2)[:, :, ::2, 1::2], 2, 1, 0, False, True,
                              None)
    np.testing.assert_allclose(value(F.avg_pool2d(stepped, 2, 1)), expected, rtol=1e-12)


def test_pooling_empty_batch(device):
    assert F.max_pool2d(mt.zeros(0, 2, 5, 5, device=device), 3, 1).shape == (0, 2, 3, 3)
    assert F.avg_pool2d(mt.zeros(0, 2, 5, 5, device=device), 2).shape == (0, 2, 2, 2)


# ---- normalization ----------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5), (2, 3, 4, 2)])
def test_batch_norm_training_updates_running_stats(shape, device, rng):
    x = rng.standard_normal(shape) * 2 + 1
    axes = (0,) + tuple(range(2, len(shape)))
    mean, var = x.mean(axis=axes), x.var(axis=axes)
    count = x.size // 3
    running_mean = tensor(np.full(3, 0.5), device)
    running_var = tensor(np.full(3, 2.0), device)
    w, b = rng.standard_normal(3), rng.standard_normal(3)
    out = F.batch_norm(tensor(x, device), running_mean, running_var, tensor(w, device),
                       tensor(b, device), True, 0.2, 1e-5)
    view = (1, 3) + (1,) * (len(shape) - 2)
    expected = (x - mean.reshape(view)) / np.sqrt(var.reshape(view) + 1e-5) * w.reshape(view) + \
        b.reshape(view)
    np.testing.assert_allclose(value(out), expected, rtol=1e-10, atol=1e-12)
    # Running statistics use momentum and the unbiased variance.
    np.testing.assert_allclose(value(running_mean), 0.8 * 0.5 + 0.2 * mean, rtol=1e-12)
    np.testing.assert_allclose(value(running_var), 0.8 * 2.0 + 0.2 * var * count / (count - 1),
                               rtol=1e-12)
    # Evaluation normalises with the given statistics and leaves them alone.
    before = value(running_mean).copy()
    out = F.batch_norm(tensor(x, device), running_mean, running_var, training=False)
    expected = (x - before.reshape(view)) / np.sqrt(value(running_var).reshape(view) + 1e-5)
    np.testing.assert_allclose(value(out), expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(value(running_mean), before)


def test_batch_norm_gradients(device, rng):
    x = tensor(rng.standard_normal((3, 2, 2)), device, True)
    w = tensor(rng.standard_normal(2), device, True)
    b = tensor(rng.standard_normal(2), device, True)
    assert gradcheck(lambda *a: F.batch_norm(a[0], None, None, a[1], a[2], True), (x, w, b))
    stats = (tensor([0.1, -0.2], device), tensor([1.5, 0.5], device))
    assert gradcheck(lambda *a: F.batch_norm(a[0], *stats, a[1], a[2], False), (x, w, b))


@pytest.mark.parametrize("shape,normalized", [((2, 3, 4), (4,)), ((2, 3, 4), (3, 4)),
                                              ((5,), 5)])
def test_layer_norm(shape, normalized, device, rng):
    x = rng.standard_normal(shape)
    norm = (normalized,) if isinstance(normalized, int) else normalized
    w, b = rng.standard_normal(norm), rng.standard_normal(norm)
    axes = tuple(range(len(shape) - len(norm), len(shape)))
    expected = (x - x.mean(axis=axes, keepdims=True)) / np.sqrt(
        x.var(axis=axes, keepdims=True) + 1e-5) * w + b
    out = F.layer_norm(tensor(x, device), normalized, tensor(w, device), tensor(b, device))
    np.testing.assert_allclose(value(out), expected, rtol=1e-10, atol=1e-12)
    args = (tensor(x, device, True), tensor(w, device, True), tensor(b, device, True))
    assert gradcheck(lambda *a: F.layer_norm(a[0], normalized, a[1], a[2]), args)


@pytest.mark.parametrize("shape,groups", [((2, 4, 3), 2), ((2, 6, 2, 2), 3), ((3, 4), 4)])
def test_group_norm(shape, groups, device, rng):
    x = rng.standard_normal(shape)
    w, b = rng.standard_normal(shape[1]), rng.standard_normal(shape[1])
    grouped = x.reshape(shape[0], groups, -1)
    normed = (grouped - grouped.mean(-1, keepdims=True)) / np.sqrt(
        grouped.var(-1, keepdims=True) + 1e-5)
    view = (1, shape[1]) + (1,) * (len(shape) - 2)
    expected = normed.reshape(shape) * w.reshape(view) + b.reshape(view)
    out = F.group_norm(tensor(x, device), groups, tensor(w, device), tensor(b, device))
    np.testing.assert_allclose(value(out), expected, rtol=1e-10, atol=1e-12)
    args = (tensor(x, device, True), tensor(w, device, True), tensor(b, device, True))
    assert gradcheck(lambda *a: F.group_norm(a[0], groups, a[1], a[2]), args)


def test_normalization_non_contiguous_input(device, rng):
    base = rng.standard_normal((3, 4, 2))
    x = tensor(base, device).permute(0, 2, 1)                # (3, 2, 4), non-contiguous
    y = base.transpose(0, 2, 1)
    expected = (y - y.mean(-1, keepdims=True)) / np.sqrt(y.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(value(F.layer_norm(x, 4)), expected, rtol=1e-10, atol=1e-12)
    expected = (y - y.mean((0, 2), keepdims=True)) / np.sqrt(y.var((0, 2), keepdims=True) + 1e-5)
    np.testing.assert_allclose(value(F.batch_norm(x, None, None, training=True)), expected,
                               rtol=1e-10, atol=1e-12)


def test_normalization_matches_torch(device, rng):
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    x, w, b = rng.standard_normal((4, 6, 3)), rng.standard_normal(6), rng.standard_normal(6)
    torch_compare(lambda *a: F.batch_norm(a[0], None, None, a[1], a[2], True),
                  lambda *a: tf.batch_norm(a[0], None, None, a[1], a[2], True), [x, w, b], device)
    torch_compare(lambda *a: F.group_norm(a[0], 3, a[1], a[2]),
                  lambda *a: tf.group_norm(a[0], 3, a[1], a[2]), [x, w, b], device)
    torch_compare(lambda a, w, b: F.layer_norm(a, (6, 3), w, b),
                  lambda a, w, b: tf.layer_norm(a, (6, 3), w, b),
                  [x, rng.standard_normal((6, 3)), rng.standard_normal((6, 3))], device)


NORM_ERRORS = {
    "one value per channel": (
        lambda L: L.nn.functional.batch_norm(_z(L, 1, 3), None, None, training=True), ValueError,
        "Expected more than 1 value per channel when training, got input size torch.Size([1, "
        "3])"),
    "running stats size": (
        lambda L: L.nn.functional.batch_norm(_z(L, 4, 3), _z(L, 2), _z(L, 2)), RuntimeError,
        "running_mean should contain 3 elements not 2"),
    "weight size": (
        lambda L: L.nn.functional.batch_norm(_z(L, 2, 3), _z(L, 3), _z(L, 3), _z(L, 2)),
        RuntimeError, "weight should contain 3 elements not 2"),
    "eval without stats": (
        lambda L: L.nn.functional.batch_norm(_z(L, 2, 3), None, None), RuntimeError,
        "running_mean must be defined in evaluation mode"),
    "batch norm rank": (
        lambda L: L.nn.functional.batch_norm(_z(L, 5), None, None, training=True), IndexError,
        "Dimension out of range (expected to be in range of [-1, 0], but got 1)"),
    "layer norm shape": (
        lambda L: L.nn.functional.layer_norm(_z(L, 2, 3, 4), (3,)), RuntimeError,
        "Given normalized_shape=[3], expected input with shape [*, 3], but got input of size[2, "
        "3, 4]"),
    "layer norm weight": (
        lambda L: L.nn.functional.layer_norm(_z(L, 2, 3), (3,), _z(L, 2)), RuntimeError,
        "Expected weight to be of same shape as normalized_shape, but got weight of shape [2] "
        "and normalized_shape = [3]"),
    "group count": (
        lambda L: L.nn.functional.group_norm(_z(L, 2, 6, 4), 4), RuntimeError,
        "Expected number of channels in input to be divisible by num_groups, but got input of "
        "shape [2, 6, 4] and num_groups=4"),
    "group weight": (
        lambda L: L.nn.functional.group_norm(_z(L, 2, 4, 5), 2, _z(L, 6)), RuntimeError,
        "Expected weight to be a vector of size equal to the number of channels in input, but "
        "got weight of shape [6] and input of shape [2, 4, 5]"),
    "group rank": (
        lambda L: L.nn.functional.group_norm(_z(L, 2), 2), RuntimeError,
        "Expected at least 2 dimensions for input tensor but received 1"),
    "group single value": (
        lambda L: L.nn.functional.group_norm(_z(L, 1, 2), 2), ValueError,
        "Expected more than 1 value per channel when training, got input size [1, 2]"),
}


@pytest.mark.parametrize("name", list(NORM_ERRORS))
def test_normalization_errors(name):
    call, kind, message = NORM_ERRORS[name]
    with pytest.raises(kind) as info:
        call(mt)
    assert str(info.value) == message


@pytest.mark.parametrize("name", list(NORM_ERRORS))
def test_normalization_errors_match_torch(name):
    same_error(NORM_ERRORS[name][0])


def test_normalize_and_cosine_similarity(device, rng):
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    a[0] = 0.0                                  # a zero vector: eps keeps it finite
    for p, dim in ((2.0, 1), (1.0, 0), (3.0, -1)):
        norm = np.maximum((np.abs(a) ** p).sum(dim, keepdims=True) ** (1 / p), 1e-12)
        np.testing.assert_allclose(value(F.normalize(tensor(a, device), p, dim)), a / norm,
                                   rtol=1e-12)
    unit = [x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-8) for x in (a, b)]
    np.testing.assert_allclose(value(F.cosine_similarity(tensor(a, device), tensor(b, device))),
                               (unit[0] * unit[1]).sum(1), rtol=1e-12)
    c = rng.standard_normal((2, 3, 4))          # broadcast before reducing dim 1
    expected = (c * b).sum(1) / np.linalg.norm(c, axis=1) / np.linalg.norm(
        np.broadcast_to(b, c.shape), axis=1)
    np.testing.assert_allclose(value(F.cosine_similarity(tensor(c, device), tensor(b, device))),
                               expected, rtol=1e-12)
    x, y = tensor(b + 0.5, device, True), tensor(c, device, True)
    assert gradcheck(lambda u, v: F.cosine_similarity(u, v, dim=-1), (x, y))
    assert gradcheck(lambda u: F.normalize(u, 3.0, 0), (x,))


def test_normalize_and_cosine_similarity_match_torch(device, rng):
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    a[0] = 0.0
    torch_compare(F.normalize, tf.normalize, [a], device)
    for eps in (1e-8, 0.5):        # the clamp of the norms does not enter the gradient
        torch_compare(lambda x, y: F.cosine_similarity(x, y, eps=eps),
                      lambda x, y: tf.cosine_similarity(x, y, eps=eps), [a, b], device)


# ---- dropout ----------------------------------------------------------------------------------
def test_dropout(device):
    x = mt.ones(200, 50, dtype=mt.float64, device=device, requires_grad=True)
    mt.manual_seed(3)
    out = F.dropout(x, 0.3)
    kept = value(out) != 0
    # Survivors are scaled by 1/(1-p); about p of the elements are dropped.
    np.testing.assert_allclose(value(out)[kept], 1 / 0.7)
    assert abs(kept.mean() - 0.7) < 0.02
    out.sum().backward()
    np.testing.assert_allclose(value(x.grad), kept / 0.7)
    mt.manual_seed(3)
    np.testing.assert_array_equal(value(F.dropout(x, 0.3)), value(out))     # reproducible
    assert F.dropout(x, 0.3, training=False) is x
    assert F.dropout(x, 0.0) is x
    np.testing.assert_array_equal(value(F.dropout(x, 1.0)), 0)
    for p in (-0.1, 1.5):
        with pytest.raises(ValueError, match=f"dropout probability has to be between 0 and 1, "
                                             f"but got {p}"):
            F.dropout(x, p)


def test_dropout_inplace(device):
    x = mt.ones(4, 5, dtype=mt.float64, device=device, requires_grad=True)
    y = x * 1.0
    mt.manual_seed(0)
    out = F.dropout(y, 0.5, inplace=True)
    assert out is y
    out.sum().backward()
    np.testing.assert_allclose(value(x.grad), value(y.detach()))     # grad = mask / (1 - p)


# ---- embedding, pad, one_hot ------------------------------------------------------------------
def test_embedding(device, rng):
    w = rng.standard_normal((6, 3))
    idx = np.array([[0, 2, 2], [5, 2, 1]])
    out = F.embedding(tensor(idx, device), tensor(w, device))
    np.testing.assert_array_equal(value(out), w[idx])
    assert F.embedding(tensor(4, device), tensor(w, device)).shape == (3,)
    weight = tensor(w, device, True)
    out = F.embedding(tensor(idx, device), weight, padding_idx=2)
    assert out.grad_fn.name() == "EmbeddingBackward0"
    out.backward(mt.ones(2, 3, 3, dtype=mt.float64, device=device))
    # Each row's gradient counts its lookups; the padding row gets none.
    np.testing.assert_array_equal(value(weight.grad)[:, 0], [1, 1, 0, 0, 0, 1])
    assert gradcheck(lambda a: F.embedding(tensor(idx, device), a), (tensor(w, device, True),))
    assert gradgradcheck(lambda a: F.embedding(tensor(idx, device), a) ** 2,
                         (tensor(w, device, True),))


def test_embedding_max_norm_and_frequency_scaling(device, rng):
    w = rng.standard_normal((6, 3)) * 2
    idx = np.array([[0, 2, 2], [5, 2, 1]])
    weight = tensor(w, device, True)
    out = F.embedding(tensor(idx, device), weight, max_norm=1.0)
    norms = np.linalg.norm(w, axis=1, keepdims=True)
    renormed = np.where(norms > 1.0, w / (norms + 1e-7), w)
    used = np.isin(np.arange(6), idx)[:, None]
    np.testing.assert_allclose(value(weight), np.where(used, renormed, w), rtol=1e-12)
    np.testing.assert_allclose(value(out), renormed[idx], rtol=1e-12)
    weight = tensor(w, device, True)
    F.embedding(tensor(idx, device), weight, scale_grad_by_freq=True).sum().backward()
    np.testing.assert_allclose(value(weight.grad)[:, 0], [1, 1, 1, 0, 0, 1])


def test_embedding_errors(device):
    w = mt.zeros(5, 2, device=device)
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(mt.tensor([0, 7], device=device), w)
    floats = mt.zeros(3, device=device)
    with pytest.raises(RuntimeError, match="Expected tensor for argument #1 'indices' to have "
                                           "one of the following scalar types: Long, Int; but "
                                           f"got {floats.type()} instead"):
        F.embedding(floats, w)
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        F.embedding(mt.tensor([0], device=device), w, padding_idx=5)
    # With max_norm, a bad index is found before any row is renormalised.
    w = mt.full((5, 2), 3.0, device=device)
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(mt.tensor([0, 7], device=device), w, max_norm=1.0)
    np.testing.assert_array_equal(value(w), 3.0)


def test_embedding_matches_torch(device, rng):
    torch = pytest.importorskip("torch")
    idx = np.array([[0, 2, 2], [5, 2, 1]])
    for kwargs in ({"padding_idx": 2}, {"max_norm": 1.5, "norm_type": 1.0},
                   {"scale_grad_by_freq": True, "padding_idx": 0}):
        torch_compare(lambda w, i: F.embedding(i, w, **kwargs),
                      lambda w, i: torch.nn.functional.embedding(i, w, **kwargs),
                      [rng.standard_normal((6, 3)) * 2, idx], device)


PAD_CASES = [((1, 2), "constant"), ((1, 2, 0, 1), "constant"), ((-1, 2, 1, -2), "constant"),
             ((1, 1, 1, 1, 1, 1), "constant"), ((1, 1, 2, 0), "reflect"), ((2, 1), "reflect"),
             ((-1, 2), "reflect"), ((1, 2, 2, 1), "replicate"), ((2, -1), "replicate"),
             ((1, 2, 3, 1), "circular"), ((2, 3), "circular"), ((-1, 2), "circular")]


def _crop(x, axis, before, after):
    index = [slice(None)] * x.ndim
    index[axis] = slice(max(-before, 0), x.shape[axis] - max(-after, 0))
    return x[tuple(index)]


def pad_ref(x, pads, mode):
    """np.pad per axis (last first); negative amounts crop: reflect/replicate mirror about the
    uncropped edges, circular wraps the cropped axis, as torch does."""
    kind = {"constant": "constant", "reflect": "reflect", "replicate": "edge",
            "circular": "wrap"}[mode]
    for i in range(len(pads) // 2):
        axis = x.ndim - 1 - i
        before, after = pads[2 * i], pads[2 * i + 1]
        if mode in ("constant", "circular"):
            x = _crop(x, axis, before, after)
        width = [(0, 0)] * x.ndim
        width[axis] = (max(before, 0), max(after, 0))
        x = np.pad(x, width, kind)
        if mode in ("reflect", "replicate"):
            x = _crop(x, axis, before, after)
    return x


@pytest.mark.parametrize("pads,mode", PAD_CASES)
def test_pad(pads, mode, device, rng):
    x = rng.standard_normal((2, 3, 4, 5)[4 - max(len(pads) // 2 + 1, 3):])
    out = F.pad(tensor(x, device), pads, mode)
    np.testing.assert_array_equal(value(out), pad_ref(x, pads, mode))
    assert gradcheck(lambda a: F.pad(a, pads, mode), (tensor(x[..., :3, :4], device, True),))


def test_pad_value_and_views(device, rng):
    x = rng.standard_normal((3, 4))
    np.testing.assert_array_equal(value(F.pad(tensor(x, device), (1, 1), value=2.5)),
                                  np.pad(x, ((0, 0), (1, 1)), constant_values=2.5))
    view = tensor(x, device).t()
    np.testing.assert_array_equal(value(F.pad(view, (1, 0), "reflect")),
                                  np.pad(x.T, ((0, 0), (1, 0)), "reflect"))


@pytest.mark.parametrize("pads,mode", PAD_CASES)
def test_pad_matches_torch(pads, mode, device, rng):
    torch = pytest.importorskip("torch")
    x = rng.standard_normal((2, 3, 4, 5)[4 - max(len(pads) // 2 + 1, 3):])
    torch_compare(lambda a: F.pad(a, pads, mode),
                  lambda a: torch.nn.functional.pad(a, pads, mode), [x], device)


PAD_ERRORS = {
    "odd": (lambda L: L.nn.functional.pad(_z(L, 2, 3), (1,)), RuntimeError,
            "Padding length must be divisible by 2"),
    "too long": (lambda L: L.nn.functional.pad(_z(L, 2, 3), (1,) * 6), RuntimeError,
                 "Padding length should be less than or equal to two times the input dimension "
                 "but got padding length 6 and input of dimension 2"),
    "reflect too far": (lambda L: L.nn.functional.pad(_z(L, 1, 2, 3), (3, 0), "reflect"),
                        RuntimeError, "Argument #4: Padding size should be less than the "
                                      "corresponding input dimension, but got: padding (3, 0) at "
                                      "dimension 2 of input [1, 2, 3]"),
    "wrap twice": (lambda L: L.nn.functional.pad(_z(L, 1, 2, 3), (4, 0), "circular"),
                   RuntimeError, "Padding value causes wrapping around more than once."),
    "rank": (lambda L: L.nn.functional.pad(_z(L, 3), (1, 1), "reflect"), NotImplementedError,
             "Padding size 2 is not supported for 1D input tensor.\nSupported combinations for "
             "non-constant padding:\n  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
             "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n  - 4D or 5D input: "
             "padding size = 6 (pads last 3 dimensions)"),
    "mode": (lambda L: L.nn.functional.pad(_z(L, 1, 2, 3), (1, 1), "wrap"), NotImplementedError,
             "Unrecognised padding mode wrap"),
    "value": (lambda L: L.nn.functional.pad(_z(L, 1, 2, 3), (1, 1), "replicate", 1.0),
              RuntimeError, 'Padding mode "replicate" doesn\'t take in value argument'),
    "empty": (lambda L: L.nn.functional.pad(_z(L, 1, 3, 0), (1, 1), "reflect"), RuntimeError,
              "Expected 2D or 3D (batch mode) tensor with possibly 0 batch size and other "
              "non-zero dimensions for input, but got: [1, 3, 0]"),
}


@pytest.mark.parametrize("name", list(PAD_ERRORS))
def test_pad_errors(name):
    call, kind, message = PAD_ERRORS[name]
    with pytest.raises(kind) as info:
        call(mt)
    assert str(info.value) == message


@pytest.mark.parametrize("name", list(PAD_ERRORS))
def test_pad_errors_match_torch(name):
    same_error(PAD_ERRORS[name][0])


def test_one_hot(device):
    out = F.one_hot(mt.tensor([0, 2, 1], device=device))
    assert out.dtype is mt.int64
    np.testing.assert_array_equal(value(out), np.eye(3, dtype=np.int64)[[0, 2, 1]])
    out = F.one_hot(mt.tensor([[0, 2], [1, 1]], device=device), 4)
    np.testing.assert_array_equal(value(out), np.eye(4, dtype=np.int64)[[[0, 2], [1, 1]]])
    assert F.one_hot(mt.tensor([], dtype=mt.int64, device=device), 3).shape == (0, 3)
    for call, message in [
            (lambda: F.one_hot(mt.zeros(3, device=device)),
             "one_hot is only applicable to index tensor of type LongTensor."),
            (lambda: F.one_hot(mt.tensor([-1, 2], device=device)),
             "Class values must be non-negative."),
            (lambda: F.one_hot(mt.tensor([1, 4], device=device), 3),
             "Class values must be smaller than num_classes."),
            (lambda: F.one_hot(mt.tensor([], dtype=mt.int64, device=device)),
             "Can not infer total number of classes from empty tensor.")]:
        with pytest.raises(RuntimeError) as info:
            call()
        assert str(info.value) == message


# ---- activations ------------------------------------------------------------------------------
def _erf(x):
    return np.vectorize(math.erf)(x)


ACTIVATIONS = {
    "relu": (F.relu, lambda x: np.maximum(x, 0)),
    "relu6": (F.relu6, lambda x: np.clip(x, 0, 6)),
    "leaky_relu": (F.leaky_relu, lambda x: np.where(x > 0, x, 0.01 * x)),
    "leaky_relu_0.2": (lambda x: F.leaky_relu(x, 0.2), lambda x: np.where(x > 0, x, 0.2 * x)),
    "elu": (F.elu, lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0)))),
    "elu_0.5": (lambda x: F.elu(x, 0.5), lambda x: np.where(x > 0, x,
                                                            0.5 * np.expm1(np.minimum(x, 0)))),
    "gelu": (F.gelu, lambda x: 0.5 * x * (1 + _erf(x / math.sqrt(2)))),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"),
                  lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) *
                                                   (x + 0.044715 * x ** 3)))),
    "silu": (F.silu, lambda x: x / (1 + np.exp(-x))),
    "softplus": (F.softplus, lambda x: np.where(x > 20, x, np.log1p(np.exp(np.minimum(x, 20))))),
    "softplus_beta": (lambda x: F.softplus(x, 2.0, 3.0),
                      lambda x: np.where(2 * x > 3, x, np.log1p(np.exp(2 * np.minimum(x, 1.5))) /
                                         2)),
    "logsigmoid": (F.logsigmoid, lambda x: np.minimum(x, 0) - np.log1p(np.exp(-np.abs(x)))),
    "hardtanh": (F.hardtanh, lambda x: np.clip(x, -1, 1)),
    "hardtanh_range": (lambda x: F.hardtanh(x, -2.0, 0.5), lambda x: np.clip(x, -2, 0.5)),
    "sigmoid": (F.sigmoid, lambda x: 1 / (1 + np.exp(-x))),
    "tanh": (F.tanh, np.tanh),
    "softmax": (lambda x: F.softmax(x, 0), lambda x: np.exp(x) / np.exp(x).sum(0)),
    "log_softmax": (lambda x: F.log_softmax(x, 1),
                    lambda x: x - np.log(np.exp(x).sum(1, keepdims=True))),
}


@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_activation_values_and_gradients(name, device, rng):
    fn, ref = ACTIVATIONS[name]
    x = rng.standard_normal((3, 4)) * 3
    np.testing.assert_allclose(value(fn(tensor(x, device))), ref(x), rtol=1e-10, atol=1e-14)
    # Stay off the kinks for finite differences.
    smooth = np.where(np.abs(x) < 0.1, 0.3, x)
    smooth = np.where(np.abs(smooth - 6) < 0.1, 5.5, smooth)
    assert gradcheck(fn, (tensor(smooth, device, True),))


@pytest.mark.parametrize("name", [n for n in ACTIVATIONS if "softmax" not in n])
def test_activation_shapes(name, device, rng):
    fn, ref = ACTIVATIONS[name]
    # 0-d, empty and transposed (non-contiguous) inputs.
    scalar = rng.standard_normal(())
    np.testing.assert_allclose(value(fn(tensor(scalar, device))), ref(scalar), rtol=1e-10)
    assert fn(mt.zeros(0, 3, dtype=mt.float64, device=device)).shape == (0, 3)
    x = rng.standard_normal((4, 3)) * 3
    np.testing.assert_allclose(value(fn(tensor(x, device).t())), ref(x.T), rtol=1e-10,
                               atol=1e-14)


def test_activation_gradients_at_kinks(device):
    # torch's conventions at the breakpoints: hardtanh/relu6 pass no gradient at a bound,
    # relu none at 0, leaky_relu the slope at 0, elu alpha at 0, logsigmoid exactly 1/2 at 0.
    x = tensor([-1.0, 0.0, 1.0, 6.0], device, True)
    cases = [(F.hardtanh, [0, 1, 0, 0]), (F.relu6, [0, 0, 1, 0]), (F.relu, [0, 0, 1, 1]),
             (lambda t: F.leaky_relu(t, 0.2), [0.2, 0.2, 1, 1]),
             (lambda t: F.elu(t, 0.5), [0.5 * math.exp(-1), 0.5, 1, 1]),
             (F.logsigmoid, 1 / (1 + np.exp([-1.0, 0.0, 1.0, 6.0])))]
    for fn, expected in cases:
        x.grad = None
        fn(x).sum().backward()
        np.testing.assert_allclose(value(x.grad), expected, rtol=1e-12)


def test_activations_stay_finite_for_large_inputs(device):
    big = [-1000.0, -50.0, 0.0, 50.0, 1000.0]
    for fn in (F.logsigmoid, F.softplus, F.silu, F.elu, F.gelu, F.sigmoid,
               lambda t: F.gelu(t, approximate="tanh")):
        x = tensor(big, device, True)
        out = fn(x)
        out.sum().backward()
        assert np.isfinite(value(out)).all() and np.isfinite(value(x.grad)).all()
    np.testing.assert_allclose(value(F.logsigmoid(tensor(big, device))),
                               [-1000, -50, -math.log(2), -math.exp(-50), 0], rtol=1e-12)


@pytest.mark.parametrize("name", ["relu", "relu6", "hardtanh", "leaky_relu", "elu", "silu"])
def test_inplace_activations(name, device, rng):
    fn, ref = ACTIVATIONS[name]
    x0 = np.array([-2.0, -0.5, 0.5, 3.0, 7.0])
    leaf = tensor(x0, device, True)
    expected_leaf = tensor(x0, device, True)
    y = leaf * 1.0
    out = getattr(F, name)(y, inplace=True)
    assert out is y
    np.testing.assert_allclose(value(y), ref(x0), rtol=1e-12)
    (out * out).sum().backward()
    (fn(expected_leaf * 1.0) ** 2).sum().backward()
    np.testing.assert_allclose(value(leaf.grad), value(expected_leaf.grad), rtol=1e-12)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        getattr(F, name)(tensor(x0, device, True), inplace=True)


def test_activation_errors_and_legacy_softmax_dim(device):
    with pytest.raises(RuntimeError, match="approximate argument must be either none or tanh."):
        F.gelu(mt.zeros(3, device=device), approximate="fast")
    with pytest.raises(ValueError, match="min_val cannot be greater than max_val"):
        F.hardtanh(mt.zeros(3, device=device), 2, 1)
    x = mt.arange(24, dtype=mt.float64, device=device).reshape(2, 3, 4)
    # Without dim, torch's legacy rule picks dim 0 for 0-, 1- and 3-d inputs, else 1.
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        np.testing.assert_allclose(value(F.softmax(x)), value(F.softmax(x, 0)))
    with pytest.warns(UserWarning, match="Implicit dimension choice for log_softmax"):
        np.testing.assert_allclose(value(F.log_softmax(x[0])), value(F.log_softmax(x[0], 1)))


@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_activations_match_torch(name, device, rng):
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    theirs = {"leaky_relu_0.2": lambda x: tf.leaky_relu(x, 0.2),
              "elu_0.5": lambda x: tf.elu(x, 0.5),
              "gelu_tanh": lambda x: tf.gelu(x, approximate="tanh"),
              "softplus_beta": lambda x: tf.softplus(x, 2.0, 3.0),
              "hardtanh_range": lambda x: tf.hardtanh(x, -2.0, 0.5),
              "softmax": lambda x: tf.softmax(x, 0),
              "log_softmax": lambda x: tf.log_softmax(x, 1)}
    x = rng.standard_normal((3, 5)) * 4
    x[0, :4] = [0.0, -1.0, 1.0, 6.0]          # the kinks
    torch_fn = theirs[name] if name in theirs else getattr(tf, name)
    torch_compare(ACTIVATIONS[name][0], torch_fn, [x], device)


# ---- losses -----------------------------------------------------------------------------------
def _reduce_ref(loss, reduction):
    return {"mean": loss.mean(), "sum": loss.sum(), "none": loss}[reduction]


def log_softmax_ref(x, axis):
    shifted = x - x.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


def cross_entropy_ref(x, target, weight, ignore_index, reduction, smoothing):
    """Class-index cross entropy with (N, C, d…) scores, following torch's definition."""
    logp = np.moveaxis(log_softmax_ref(x, 1), 1, -1).reshape(-1, x.shape[1])
    t = target.reshape(-1)
    w = np.ones(x.shape[1]) if weight is None else weight
    valid = t != ignore_index
    safe = np.where(valid, t, 0)
    picked = -logp[np.arange(len(t)), safe] * w[safe] * valid
    smooth = -(logp * w).sum(1) / x.shape[1] * valid
    if reduction == "none":
        return ((1 - smoothing) * picked + smoothing * smooth).reshape(target.shape)
    if reduction == "sum":
        return (1 - smoothing) * picked.sum() + smoothing * smooth.sum()
    denominator = (w[safe] * valid).sum()
    return ((1 - smoothing) * picked.sum() + smoothing * smooth.sum()) / denominator


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
@pytest.mark.parametrize("shape", [(5, 4), (2, 4, 3, 2)])
def test_cross_entropy_class_indices(reduction, weighted, smoothing, shape, device, rng):
    x = rng.standard_normal(shape)
    target = rng.integers(0, 4, (shape[0],) + shape[2:])
    target.reshape(-1)[[0, 3]] = -100
    weight = rng.random(4) + 0.5 if weighted else None
    expected = cross_entropy_ref(x, target, weight, -100, reduction, smoothing)
    w = tensor(weight, device) if weighted else None
    out = F.cross_entropy(tensor(x, device), tensor(target, device), w, reduction=reduction,
                          label_smoothing=smoothing)
    np.testing.assert_allclose(value(out), expected, rtol=1e-10)
    if shape == (5, 4):
        assert gradcheck(lambda a: F.cross_entropy(a, tensor(target, device), w,
                                                   reduction=reduction,
                                                   label_smoothing=smoothing),
                         (tensor(x, device, True),))


def test_cross_entropy_ignore_index_and_unbatched(device, rng):
    x = rng.standard_normal((4, 3))
    target = np.array([0, 2, 1, 2])
    out = F.cross_entropy(tensor(x, device), tensor(target, device), ignore_index=2)
    logp = log_softmax_ref(x, 1)
    np.testing.assert_allclose(value(out), -(logp[0, 0] + logp[2, 1]) / 2, rtol=1e-12)
    out = F.cross_entropy(tensor(x[1], device), tensor(target[1], device))     # (C,) and ()
    np.testing.assert_allclose(value(out), -logp[1, 2], rtol=1e-12)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("smoothing", [0.0, 0.3])
def test_cross_entropy_probabilities(reduction, smoothing, device, rng):
    x = rng.standard_normal((2, 4, 3))
    p = rng.random((2, 4, 3))
    p /= p.sum(1, keepdims=True)
    weight = rng.random(4) + 0.5
    q = p * (1 - smoothing) + smoothing / 4
    loss = -(log_softmax_ref(x, 1) * q * weight.reshape(1, 4, 1)).sum(1)
    out = F.cross_entropy(tensor(x, device), tensor(p, device), tensor(weight, device),
                          reduction=reduction, label_smoothing=smoothing)
    np.testing.assert_allclose(value(out), _reduce_ref(loss, reduction), rtol=1e-10)
    assert gradcheck(lambda a, b: F.cross_entropy(a, b, reduction=reduction,
                                                  label_smoothing=smoothing),
                     (tensor(x, device, True), tensor(p, device, True)))


def test_nll_loss(device, rng):
    logp = log_softmax_ref(rng.standard_normal((5, 3)), 1)
    target = np.array([0, 2, 1, 2, 2])
    weight = np.array([0.5, 2.0, 1.0])
    out = F.nll_loss(tensor(logp, device), tensor(target, device), tensor(weight, device))
    picked = logp[np.arange(5), target] * weight[target]
    np.testing.assert_allclose(value(out), -picked.sum() / weight[target].sum(), rtol=1e-12)
    out = F.nll_loss(tensor(logp, device), tensor(target, device), reduction="none",
                     ignore_index=1)
    np.testing.assert_allclose(value(out), np.where(target == 1, 0, -logp[np.arange(5), target]))
    assert gradcheck(lambda a: F.nll_loss(a, tensor(target, device), tensor(weight, device)),
                     (tensor(logp, device, True),))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ignored", [False, True])
def test_nll_loss_one_node_double_backward(reduction, weighted, ignored, device, rng):
    """nll_loss is one node (NllLossBackward0, as in torch) whose backward is differentiable
    again; the all-rows-count fast path (no ignored rows, no weight) and the masked path agree
    with the numpy reference, also for a non-contiguous input."""
    logp = log_softmax_ref(rng.standard_normal((3, 6)), 1)
    target = np.array([0, 2, 1, 2, 2, 0])
    if ignored:
        target[1] = -100
    weight = tensor(rng.random(3) + 0.5, device) if weighted else None
    w = value(weight) if weighted else np.ones(3)
    x = tensor(logp, device, True).mT           # (6, 3), strides (1, 6)
    out = F.nll_loss(x, tensor(target, device), weight, reduction=reduction)
    assert out.grad_fn.name() == "NllLossBackward0"
    valid = target != -100
    picked = -logp.T[np.arange(6), np.where(valid, target, 0)] * w[np.where(valid, target, 0)]
    picked = picked * valid
    expected = {"none": picked, "sum": picked.sum(),
                "mean": picked.sum() / (w[np.where(valid, target, 0)] * valid).sum()}[reduction]
    np.testing.assert_allclose(value(out), expected, rtol=1e-12)
    fn = lambda a: F.nll_loss(a.mT, tensor(target, device), weight, reduction=reduction)  # noqa
    assert gradcheck(fn, (tensor(logp, device, True),))
    assert gradgradcheck(lambda a: F.cross_entropy(a.mT, tensor(target, device), weight,
                                                   reduction=reduction),
                         (tensor(logp, device, True),))


def test_nll_loss_empty_batch_and_bad_targets(device):
    empty = F.nll_loss(mt.zeros(0, 3, device=device, requires_grad=True),
                       mt.zeros(0, dtype=mt.int64, device=device))
    assert math.isnan(empty.item())
    assert F.nll_loss(mt.zeros(0, 3, device=device), mt.zeros(0, dtype=mt.int64, device=device),
                      reduction="sum").item() == 0
    x = mt.zeros(2, 3, device=device)
    for bad, shown in (([0, 3], 3), ([-1, 0], -1), ([-100, 5], 5)):
        with pytest.raises(IndexError, match=f"Target {shown} is out of bounds."):
            F.nll_loss(x, mt.tensor(bad, device=device))


LOSS_CASES = {
    "mse": (F.mse_loss, lambda a, b: (a - b) ** 2),
    "l1": (F.l1_loss, lambda a, b: np.abs(a - b)),
    "smooth_l1": (F.smooth_l1_loss,
                  lambda a, b: np.where(np.abs(a - b) < 1, 0.5 * (a - b) ** 2,
                                        np.abs(a - b) - 0.5)),
    "smooth_l1_beta": (lambda a, b, **k: F.smooth_l1_loss(a, b, beta=0.5, **k),
                       lambda a, b: np.where(np.abs(a - b) < 0.5, (a - b) ** 2,
                                             np.abs(a - b) - 0.25)),
    "smooth_l1_beta0": (lambda a, b, **k: F.smooth_l1_loss(a, b, beta=0.0, **k),
                        lambda a, b: np.abs(a - b)),
    "huber": (lambda a, b, **k: F.huber_loss(a, b, delta=0.5, **k),
              lambda a, b: np.where(np.abs(a - b) < 0.5, 0.5 * (a - b) ** 2,
                                    0.5 * (np.abs(a - b) - 0.25))),
}


@pytest.mark.parametrize("name", list(LOSS_CASES))
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_regression_losses(name, reduction, device, rng):
    fn, ref = LOSS_CASES[name]
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    out = fn(tensor(a, device), tensor(b, device), reduction=reduction)
    np.testing.assert_allclose(value(out), _reduce_ref(ref(a, b), reduction), rtol=1e-12)
    assert gradcheck(lambda x, y: fn(x, y, reduction=reduction),
                     (tensor(a, device, True), tensor(b, device, True)))


def test_regression_losses_on_scalars_and_broadcast_targets(device, rng):
    a, b = rng.standard_normal(()), rng.standard_normal(())
    np.testing.assert_allclose(value(F.l1_loss(tensor(a, device), tensor(b, device))),
                               abs(a - b), rtol=1e-12)
    x, row = rng.standard_normal((3, 4)), rng.standard_normal(4)
    with pytest.warns(UserWarning):
        out = F.mse_loss(tensor(x, device), tensor(row, device), reduction="none")
    np.testing.assert_allclose(value(out), (x - row) ** 2, rtol=1e-12)
    y = rng.standard_normal((3, 4))
    assert gradcheck(lambda u, v: F.huber_loss(u, v), (tensor(x, device, True),
                                                       tensor(y, device, True)))


def test_regression_loss_weights_and_legacy_arguments(device, rng):
    a, b, w = rng.standard_normal((3, 4)), rng.standard_normal((3, 4)), rng.random((3, 4))
    out = F.mse_loss(tensor(a, device), tensor(b, device), weight=tensor(w, device))
    np.testing.assert_allclose(value(out), ((a - b) ** 2 * w).sum() / w.sum(), rtol=1e-12)
    out = F.l1_loss(tensor(a, device), tensor(b, device), weight=tensor(w, device),
                    reduction="sum")
    np.testing.assert_allclose(value(out), (np.abs(a - b) * w).sum(), rtol=1e-12)
    with pytest.raises(ValueError, match="Weights and input must have the same size."):
        F.huber_loss(tensor(a, device), tensor(b, device), weight=tensor(w[0], device))
    with pytest.warns(UserWarning, match="please use reduction='sum' instead"):
        out = F.mse_loss(tensor(a, device), tensor(b, device), size_average=False)
    np.testing.assert_allclose(value(out), ((a - b) ** 2).sum(), rtol=1e-12)
    with pytest.warns(UserWarning, match=r"Using a target size \(torch.Size\(\[4\]\)\) that is "
                                         r"different to the input size"):
        F.mse_loss(tensor(a, device), tensor(b[0], device))
    with pytest.raises(ValueError, match="avg is not a valid value for reduction"):
        F.l1_loss(tensor(a, device), tensor(b, device), reduction="avg")


def bce_ref(p, t):
    return -(t * np.maximum(np.log(p), -100) + (1 - t) * np.maximum(np.log1p(-p), -100))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_binary_cross_entropy(reduction, device, rng):
    p = 1 / (1 + np.exp(-rng.standard_normal((3, 4))))
    p[0, :2] = [0.0, 1.0]                   # log clamped at -100: finite loss and gradient
    t = rng.random((3, 4))
    w = rng.random(4)
    with np.errstate(divide="ignore"):
        expected = _reduce_ref(bce_ref(p, t) * w, reduction)
    pt = tensor(p, device, True)
    out = F.binary_cross_entropy(pt, tensor(t, device), tensor(w, device), reduction=reduction)
    np.testing.assert_allclose(value(out), expected, rtol=1e-12)
    out.sum().backward()
    grad = (p - t) / np.maximum(p * (1 - p), 1e-12) * w
    if reduction == "mean":
        grad /= p.size
    np.testing.assert_allclose(value(pt.grad), grad, rtol=1e-10)
    inner = np.clip(p, 0.05, 0.95)
    assert gradcheck(lambda a, b: F.binary_cross_entropy(a, b, reduction=reduction),
                     (tensor(inner, device, True), tensor(t, device, True)))
    with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
        F.binary_cross_entropy(tensor(p + 1, device), tensor(t, device))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_binary_cross_entropy_with_logits(reduction, device, rng):
    x = rng.standard_normal((3, 4)) * 3
    x[0, :2] = [500.0, -500.0]              # no overflow for large logits
    t = rng.random((3, 4))
    pos_weight, w = rng.random(4) + 0.5, rng.random((3, 1))
    log_sig = np.minimum(x, 0) - np.log1p(np.exp(-np.abs(x)))
    log_sig_neg = np.minimum(-x, 0) - np.log1p(np.exp(-np.abs(x)))
    loss = -(pos_weight * t * log_sig + (1 - t) * log_sig_neg) * w
    out = F.binary_cross_entropy_with_logits(tensor(x, device), tensor(t, device),
                                             tensor(w, device), reduction=reduction,
                                             pos_weight=tensor(pos_weight, device))
    np.testing.assert_allclose(value(out), _reduce_ref(loss, reduction), rtol=1e-12)
    assert gradcheck(lambda a, b: F.binary_cross_entropy_with_logits(
        a, b, reduction=reduction, pos_weight=tensor(pos_weight, device)),
        (tensor(x, device, True), tensor(t, device, True)))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none", "batchmean"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div(reduction, log_target, device, rng):
    logp = log_softmax_ref(rng.standard_normal((3, 4)), 1)
    target = rng.random((3, 4))
    target[0, 0] = 0.0                     # contributes 0 (not NaN)
    given = np.log(target + 0.1) if log_target else target
    loss = np.exp(given) * (given - logp) if log_target else np.where(
        target > 0, target * (np.log(np.where(target > 0, target, 1)) - logp), 0)
    expected = loss.sum() / 3 if reduction == "batchmean" else _reduce_ref(loss, reduction)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")    # torch's 'mean' deprecation warning
        out = F.kl_div(tensor(logp, device), tensor(given, device), reduction=reduction,
                       log_target=log_target)
        np.testing.assert_allclose(value(out), expected, rtol=1e-12)
        safe = np.abs(given) + 0.1 if not log_target else given
        assert gradcheck(lambda a, b: F.kl_div(a, b, reduction=reduction, log_target=log_target),
                         (tensor(logp, device, True), tensor(safe, device, True)))


LOSS_TORCH_CASES = {
    "ce": (lambda L, x, t: L.nn.functional.cross_entropy(x, t.long(), reduction="sum"), 1),
    "ce_weight_ignore_smooth": (
        lambda L, x, t: L.nn.functional.cross_entropy(
            x, t.long(), L.tensor([0.5, 1.0, 2.0, 1.5], dtype=L.float64, device=x.device),
            ignore_index=1, label_smoothing=0.1), 1),
    "ce_probs": (lambda L, x, t: L.nn.functional.cross_entropy(
        x, L.softmax(t, 1), label_smoothing=0.2), 2),
    "nll": (lambda L, x, t: L.nn.functional.nll_loss(x, t.long(), ignore_index=0), 1),
    "mse": (lambda L, x, t: L.nn.functional.mse_loss(x, t), 2),
    "l1": (lambda L, x, t: L.nn.functional.l1_loss(x, t, reduction="none"), 2),
    "smooth_l1": (lambda L, x, t: L.nn.functional.smooth_l1_loss(x, t, beta=0.7), 2),
    "huber": (lambda L, x, t: L.nn.functional.huber_loss(x, t, delta=0.3, weight=t.abs()), 2),
    "bce": (lambda L, x, t: L.nn.functional.binary_cross_entropy(x.sigmoid(), t.sigmoid()), 2),
    "bce_logits": (lambda L, x, t: L.nn.functional.binary_cross_entropy_with_logits(
        x * 100, t.sigmoid(),
        pos_weight=L.tensor([1.0, 2.0, 3.0, 0.5], dtype=L.float64, device=x.device)), 2),
    "kl": (lambda L, x, t: L.nn.functional.kl_div(x.log_softmax(1), t.softmax(1),
                                                  reduction="batchmean"), 2),
    "kl_log_target": (lambda L, x, t: L.nn.functional.kl_div(
        x.log_softmax(1), t.log_softmax(1), reduction="sum", log_target=True), 2),
}


@pytest.mark.parametrize("name", list(LOSS_TORCH_CASES))
def test_losses_match_torch(name, device, rng):
    torch = pytest.importorskip("torch")
    fn, grads = LOSS_TORCH_CASES[name]
    x = rng.standard_normal((5, 4))
    t = rng.integers(0, 4, 5).astype(np.float64) if grads == 1 else rng.standard_normal((5, 4))
    torch_compare(lambda a, b: fn(mt, a, b), lambda a, b: fn(torch, a, b), [x, t], device,
                  grad_args=grads)


def test_cross_entropy_spatial_matches_torch(device, rng):
    torch = pytest.importorskip("torch")
    target = rng.integers(0, 4, (2, 3, 2))
    target[0, 0, 0] = -100
    weight = torch.tensor([0.5, 1.0, 2.0, 1.5], dtype=torch.float64)
    for reduction in ("mean", "sum", "none"):
        torch_compare(lambda x, t: F.cross_entropy(x, t, mt.tensor(weight.numpy(), device=device),
                                                   reduction=reduction, label_smoothing=0.1),
                      lambda x, t: torch.nn.functional.cross_entropy(
                          x, t, weight, reduction=reduction, label_smoothing=0.1),
                      [rng.standard_normal((2, 4, 3, 2)), target], device, grad_args=1)


LOSS_ERRORS = {
    "batch size": (lambda L: L.nn.functional.cross_entropy(_z(L, 3, 4), L.tensor([0, 1])),
                   ValueError, "Expected input batch_size (3) to match target batch_size (2)."),
    "target bounds": (lambda L: L.nn.functional.cross_entropy(_z(L, 2, 4), L.tensor([0, 4])),
                      IndexError, "Target 4 is out of bounds."),
    "negative target": (lambda L: L.nn.functional.nll_loss(_z(L, 2, 4), L.tensor([0, -2])),
                        IndexError, "Target -2 is out of bounds."),
    "multi-target": (lambda L: L.nn.functional.cross_entropy(_z(L, 2, 4), _z(L, 2, 3)),
                     RuntimeError, "0D or 1D target tensor expected, multi-target not supported"),
    "float indices": (lambda L: L.nn.functional.cross_entropy(_z(L, 2, 4), _z(L, 2)),
                      RuntimeError, "expected target dtype to be Long or Byte, but got Float"),
    "integer probabilities": (
        lambda L: L.nn.functional.cross_entropy(_z(L, 2, 3), _z(L, 2, 3, dtype=L.int64)),
        RuntimeError, "Expected floating point type for target with class probabilities, got "
                      "Long"),
    "probabilities with ignore_index": (
        lambda L: L.nn.functional.cross_entropy(_z(L, 2, 3), _z(L, 2, 3), ignore_index=1),
        RuntimeError, "ignore_index is not supported for floating point target"),
    "smoothing": (lambda L: L.nn.functional.cross_entropy(_z(L, 2, 4), L.tensor([0, 1]),
                                                          label_smoothing=1.5),
                  RuntimeError, "label_smoothing must be between 0.0 and 1.0. Got: 1.5"),
    "reduction": (lambda L: L.nn.functional.cross_entropy(_z(L, 2, 4), L.tensor([0, 1]),
                                                          reduction="avg"),
                  ValueError, "avg is not a valid value for reduction"),
    "spatial target rank": (
        lambda L: L.nn.functional.cross_entropy(_z(L, 2, 4, 3, 3), L.tensor([[0, 1]] * 2)),
        RuntimeError, "only batches of spatial targets supported (3D tensors) but got targets "
                      "of dimension: 2"),
    "spatial target size": (
        lambda L: L.nn.functional.nll_loss(_z(L, 2, 3, 4), _z(L, 2, 5, dtype=L.int64)),
        RuntimeError, "Expected target size [2, 4], got [2, 5]"),
    "weight size": (lambda L: L.nn.functional.nll_loss(_z(L, 2, 4), L.tensor([0, 1]),
                                                       weight=_z(L, 3)),
                    RuntimeError, "weight tensor should be defined either for all 4 classes or "
                                  "no classes but got weight tensor of shape: [3]"),
    "1-D input": (lambda L: L.nn.functional.nll_loss(_z(L, 3), _z(L, 2, dtype=L.int64)),
                  ValueError, "For 1D input, 1D target must have size 1, but got target size: 2"),
    "bce size": (lambda L: L.nn.functional.binary_cross_entropy(_z(L, 2, 4), _z(L, 3, 4)),
                 ValueError, "Using a target size (torch.Size([3, 4])) that is different to the "
                             "input size (torch.Size([2, 4])) is deprecated. Please ensure they "
                             "have the same size."),
    "bce range": (lambda L: L.nn.functional.binary_cross_entropy(_z(L, 2) + 2, _z(L, 2)),
                  RuntimeError, "all elements of input should be between 0 and 1"),
    "bce logits size": (
        lambda L: L.nn.functional.binary_cross_entropy_with_logits(_z(L, 2, 4), _z(L, 3, 4)),
        ValueError, "Target size (torch.Size([3, 4])) must be the same as input size "
                    "(torch.Size([2, 4]))"),
}


@pytest.mark.parametrize("name", list(LOSS_ERRORS))
def test_loss_errors(name):
    call, kind, message = LOSS_ERRORS[name]
    with pytest.raises(kind) as info:
        call(mt)
    assert str(info.value) == message


@pytest.mark.torch_exact
@pytest.mark.parametrize("name", list(LOSS_ERRORS))
def test_loss_errors_match_torch(name):
    same_error(LOSS_ERRORS[name][0])


# ---- attention --------------------------------------------------------------------------------
def attention_ref(q, k, v, mask=None, scale=None):
    """softmax(q kᵀ · scale + mask) v, a fully masked row giving zeros."""
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = q @ np.swapaxes(k, -1, -2) * scale
    if mask is not None:
        scores = np.where(mask, scores, -np.inf) if mask.dtype == bool else scores + mask
    top = scores.max(-1, keepdims=True)
    dead = np.isneginf(top)
    e = np.exp(scores - np.where(dead, 0, top))
    weights = np.where(dead, 0, e / np.where(dead, 1, e.sum(-1, keepdims=True)))
    return weights @ v


def test_scaled_dot_product_attention(device, rng):
    q, k, v = (rng.standard_normal(s) for s in ((2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 7)))
    t = [tensor(a, device) for a in (q, k, v)]
    np.testing.assert_allclose(value(F.scaled_dot_product_attention(*t)), attention_ref(q, k, v),
                               rtol=1e-10)
    np.testing.assert_allclose(value(F.scaled_dot_product_attention(*t, scale=0.3)),
                               attention_ref(q, k, v, scale=0.3), rtol=1e-10)
    bool_mask = rng.random((4, 6)) > 0.4
    bool_mask[1] = False                        # a fully masked row gives zeros, not NaN
    np.testing.assert_allclose(
        value(F.scaled_dot_product_attention(*t, tensor(bool_mask, device))),
        attention_ref(q, k, v, bool_mask), rtol=1e-10)
    float_mask = rng.standard_normal((2, 1, 4, 6))
    np.testing.assert_allclose(
        value(F.scaled_dot_product_attention(*t, tensor(float_mask, device))),
        attention_ref(q, k, v, float_mask), rtol=1e-10)
    causal = np.tril(np.ones((4, 6), bool))
    np.testing.assert_allclose(value(F.scaled_dot_product_attention(*t, is_causal=True)),
                               attention_ref(q, k, v, causal), rtol=1e-10)
    with pytest.raises(RuntimeError, match="Explicit attn_mask should not be set when "
                                           "is_causal=True"):
        F.scaled_dot_product_attention(*t, tensor(causal, device), is_causal=True)


def test_scaled_dot_product_attention_gradients(device, rng):
    q, k, v = (tensor(rng.standard_normal(s), device, True)
               for s in ((1, 2, 3, 2), (1, 2, 4, 2), (1, 2, 4, 3)))
    mask = rng.random((3, 4)) > 0.3
    mask[0] = False
    assert gradcheck(lambda *a: F.scaled_dot_product_attention(*a, tensor(mask, device)),
                     (q, k, v))
    assert gradcheck(lambda *a: F.scaled_dot_product_attention(*a, is_causal=True), (q, k, v))
    # Grouped-query attention: 2 query heads share 1 key/value head.
    k1, v1 = (tensor(rng.standard_normal((1, 1, 4, s)), device, True) for s in (2, 3))
    out = F.scaled_dot_product_attention(q, k1, v1, enable_gqa=True)
    expected = attention_ref(value(q), np.repeat(value(k1), 2, 1), np.repeat(value(v1), 2, 1))
    np.testing.assert_allclose(value(out), expected, rtol=1e-10)


def test_scaled_dot_product_attention_matches_torch(device, rng):
    torch = pytest.importorskip("torch")
    sdpa = torch.nn.functional.scaled_dot_product_attention
    arrays = [rng.standard_normal(s) for s in ((2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 7))]
    mask = rng.random((4, 6)) > 0.4
    mask[2] = False
    torch_compare(lambda *a: F.scaled_dot_product_attention(*a, mt.tensor(mask, device=device)),
                  lambda *a: sdpa(*a, torch.tensor(mask)), arrays, device)
    torch_compare(lambda *a: F.scaled_dot_product_attention(*a[:3], a[3]),
                  lambda *a: sdpa(*a[:3], a[3]), arrays + [rng.standard_normal((4, 6))], device)
    torch_compare(lambda *a: F.scaled_dot_product_attention(*a, is_causal=True, scale=0.7),
                  lambda *a: sdpa(*a, is_causal=True, scale=0.7), arrays, device)


@pytest.mark.parametrize("loss, options", [
    ("cross_entropy", {}), ("cross_entropy", {"weight": [1.0, 2.0, 0.5]}),
    ("cross_entropy", {"ignore_index": 1}), ("nll_loss", {}),
    ("nll_loss", {"ignore_index": 2})])
def test_class_losses_refuse_a_target_written_in_place_before_backward(device, loss, options):
    """torch saves the target for backward: writing it in place between forward and backward
    is its version-counter error, not a gradient of the new targets."""
    scores = mt.randn(4, 3, device=device, requires_grad=True)
    target = mt.tensor([0, 1, 2, 0], device=device)
    kwargs = {k: mt.tensor(v, device=device) if isinstance(v, list) else v
              for k, v in options.items()}
    inputs = scores.log_softmax(1) if loss == "nll_loss" else scores
    result = getattr(F, loss)(inputs, target, **kwargs)
    target[0] = 2
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        result.backward()
    result = getattr(F, loss)(inputs, target, **kwargs)       # untouched: the usual gradient
    result.backward()
    assert scores.grad is not None and scores.grad.shape == (4, 3)
