"""nn.AdaptiveLogSoftmaxWithLoss, fractional max pooling (FractionalMaxPool2d/3d and the
functional forms) and nn.CrossMapLRN2d: values against numpy references and torch (same
weights, same random samples), gradients by gradcheck in float64 (CrossMapLRN2d: against torch's
hand-written backward, which is not the forward's exact gradient), shapes (unbatched, empty
batch, non-contiguous) and the errors of bad calls, on both devices."""
import math

import numpy as np
import pytest

import minitorch as mt
import minitorch.nn.functional as F
from minitorch.autograd import gradcheck

try:
    import torch
except ImportError:
    torch = None


def _torch():
    if torch is None:
        pytest.skip("torch is not installed: nothing to compare with")
    return torch


def _np(t):
    return t.detach().cpu().numpy()


def _leaf(values, device, dtype=mt.float64):
    return mt.tensor(values, dtype=dtype, device=device, requires_grad=True)


def _same_error(ours, theirs):
    """Both calls raise the same exception type with the same message."""
    with pytest.raises(Exception) as expected:
        theirs()
    with pytest.raises(type(expected.value)) as got:
        ours()
    assert str(got.value) == str(expected.value)


# ---- fractional max pooling: a numpy reference of ATen's loops (float64) ----------------------
def _ref_starts(u, size, count, pool):
    """ATen's generate_intervals in double precision."""
    if count <= 1:
        return [size - pool] * count
    alpha = (size - pool) / (count - 1)
    return [int((i + u) * alpha) - int(u * alpha) for i in range(count - 1)] + [size - pool]


def _ref_fractional(x, kernel, out, samples):
    """(values, indices) of a batched (N, C, *size) float64 array, windows as ATen makes them."""
    spatial = len(kernel)
    order = (1, 0) if spatial == 2 else (0, 1, 2)   # 2-d: sample 0 is the width's
    n, c, size = x.shape[0], x.shape[1], x.shape[2:]
    values, indices = np.empty((n, c) + tuple(out)), np.empty((n, c) + tuple(out), np.int64)
    for b in range(n):
        for p in range(c):
            starts = [_ref_starts(samples[b, p, order[d]], size[d], out[d], kernel[d])
                      for d in range(spatial)]
            for pos in np.ndindex(*out):
                box = tuple(slice(s[i], s[i] + k) for s, i, k in zip(starts, pos, kernel))
                window = x[b, p][box]
                local = np.unravel_index(np.argmax(window), window.shape)
                flat = np.ravel_multi_index(tuple(bx.start + li for bx, li in zip(box, local)),
                                            size)
                values[(b, p) + pos], indices[(b, p) + pos] = window[local], flat
    return values, indices


FRACTIONAL = [   # (input shape, kernel, output size)
    ((2, 3, 9, 11), 2, (4, 6)),
    ((3, 8, 7), (3, 2), (5, 5)),                 # unbatched
    ((2, 2, 6, 7, 8), (2, 3, 2), (3, 4, 5)),
    ((2, 5, 6, 7), 2, (1, 2, 3)),                # unbatched 3-d
]


def _case(shape, out, rng):
    """Input values and per-(batch, plane) samples (one spare batch row, which torch ignores)."""
    spatial = len(out)
    batched = len(shape) == spatial + 2
    n, c = (shape[0], shape[1]) if batched else (1, shape[0])
    return rng.standard_normal(shape), rng.random((n + 1, c, spatial)), batched


def _pool(spatial):
    return F.fractional_max_pool2d if spatial == 2 else F.fractional_max_pool3d


@pytest.mark.parametrize("shape, kernel, out", FRACTIONAL)
def test_fractional_matches_reference(device, rng, shape, kernel, out):
    x, samples, batched = _case(shape, out, rng)
    spatial = len(out)
    kernels = (kernel,) * spatial if isinstance(kernel, int) else kernel
    values, indices = _pool(spatial)(mt.tensor(x, device=device), kernel, out,
                                     return_indices=True,
                                     _random_samples=mt.tensor(samples, device=device))
    batch = x if batched else x[None]
    ref_values, ref_indices = _ref_fractional(batch, kernels, out, samples)
    if not batched:
        ref_values, ref_indices = ref_values[0], ref_indices[0]
    assert values.dtype is mt.float64 and indices.dtype is mt.int64
    np.testing.assert_array_equal(_np(values), ref_values)
    np.testing.assert_array_equal(_np(indices), ref_indices)


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16"])
@pytest.mark.parametrize("shape, kernel, out", FRACTIONAL)
def test_fractional_matches_torch(rng, shape, kernel, out, dtype):
    """Same samples, same windows: the interval arithmetic is rounded in the input's dtype."""
    th = _torch()
    x, samples, _ = _case(shape, out, rng)
    spatial = len(out)
    theirs = getattr(th.nn.functional, f"fractional_max_pool{spatial}d")(
        th.tensor(x).to(getattr(th, dtype)), kernel, out, None, True,
        th.tensor(samples).to(getattr(th, dtype)))
    ours = _pool(spatial)(mt.tensor(x).to(getattr(mt, dtype)), kernel, out, None, True,
                          mt.tensor(samples).to(getattr(mt, dtype)))
    np.testing.assert_array_equal(_np(ours[0].double()), theirs[0].double().numpy())
    np.testing.assert_array_equal(_np(ours[1]), theirs[1].numpy())


def _starts_in(dtype, u, size, count, pool):
    """generate_intervals with every step rounded in a numpy dtype (float16: ATen's Half)."""
    u, alpha = dtype(u), dtype(size - pool) / dtype(count - 1)
    return [int((dtype(i) + u) * alpha) - int(u * alpha) for i in range(count - 1)] + \
        [size - pool]


def test_fractional_half_rounds_windows_in_half():
    """A float16 input rounds the window arithmetic in float16, as ATen's CPU kernel does: here
    that moves the 18th window one column left of where double precision puts it."""
    x = mt.arange(2 * 64, dtype=mt.float16).reshape(1, 1, 2, 64)     # maxima at window ends
    samples = mt.full((1, 1, 2), 0.3, dtype=mt.float16)
    indices = F.fractional_max_pool2d(x, 2, (1, 30), return_indices=True,
                                      _random_samples=samples)[1]
    half = _starts_in(np.float16, 0.3, 64, 30, 2)
    assert half != _starts_in(np.float64, float(np.float16(0.3)), 64, 30, 2)
    assert _np(indices).ravel().tolist() == [64 + s + 1 for s in half]


def test_fractional_default_samples_follow_the_seed(rng):
    """Without _random_samples, rand(N, C, 2) in the input's dtype: torch's windows for a seed."""
    th = _torch()
    x = rng.standard_normal((2, 3, 10, 9)).astype(np.float32)
    th.manual_seed(7)
    theirs = th.nn.functional.fractional_max_pool2d(th.tensor(x), 3, output_ratio=(0.5, 0.6),
                                                    return_indices=True)
    mt.manual_seed(7)
    ours = F.fractional_max_pool2d(mt.tensor(x), 3, output_ratio=(0.5, 0.6),
                                   return_indices=True)
    np.testing.assert_array_equal(_np(ours[1]), theirs[1].numpy())
    th.manual_seed(8)
    theirs = th.nn.FractionalMaxPool3d(2, output_ratio=0.5)(th.tensor(x))
    mt.manual_seed(8)
    ours = mt.nn.FractionalMaxPool3d(2, output_ratio=0.5)(mt.tensor(x))
    np.testing.assert_array_equal(_np(ours), theirs.numpy())


def test_fractional_nan_and_ties_pick_as_aten(device):
    """ATen keeps the first maximum of a window, but the last NaN; all -inf keeps the start."""
    nan, inf = math.nan, math.inf
    x = mt.tensor([[[[1., nan, 2.], [nan, 0., 5.], [5., 1., 5.]]]], device=device)
    samples = mt.full((1, 1, 2), 0.5, device=device, dtype=mt.float32)
    values, indices = F.fractional_max_pool2d(x, 2, (2, 2), return_indices=True,
                                              _random_samples=samples)
    assert _np(indices).tolist() == [[[[3, 1], [3, 5]]]]
    assert np.isnan(_np(values)[0, 0, 0]).all() and _np(values)[0, 0, 1, 1] == 5
    ties = F.fractional_max_pool2d(mt.full((1, 1, 3, 3), -inf, device=device), 2, (2, 2),
                                   return_indices=True, _random_samples=samples)[1]
    assert _np(ties).tolist() == [[[[0, 1], [3, 4]]]]


@pytest.mark.torch_exact
@pytest.mark.parametrize("kernel", [0, -1, (1, 0)])
def test_fractional_empty_windows_as_torch(kernel):
    """torch 2.13 pools empty windows: -inf at each window's start (even outside the input)."""
    th = _torch()
    ours = F.fractional_max_pool2d(mt.zeros(1, 1, 5, 5), kernel, (2, 2), return_indices=True,
                                   _random_samples=mt.full((1, 1, 2), 0.5))
    theirs = th.nn.functional.fractional_max_pool2d(
        th.zeros(1, 1, 5, 5), kernel, (2, 2), return_indices=True,
        _random_samples=th.full((1, 1, 2), 0.5))
    np.testing.assert_array_equal(_np(ours[0]), theirs[0].numpy())
    np.testing.assert_array_equal(_np(ours[1]), theirs[1].numpy())


def test_fractional_gradcheck(device, rng):
    """The gradient goes to each window's maximum, accumulated where windows share it."""
    x, samples, _ = _case((2, 2, 7, 6), (4, 4), rng)
    s = mt.tensor(samples, device=device)
    assert gradcheck(lambda a: F.fractional_max_pool2d(a, 2, (4, 4), _random_samples=s),
                     (_leaf(x, device),))
    x3, samples3, _ = _case((2, 5, 6, 5), (3, 4, 3), rng)
    s3 = mt.tensor(samples3, device=device)
    assert gradcheck(lambda a: F.fractional_max_pool3d(a, (2, 2, 2), (3, 4, 3),
                                                       _random_samples=s3),
                     (_leaf(x3, device),))


def test_fractional_gradient_matches_torch(rng):
    th = _torch()
    x, samples, _ = _case((2, 3, 8, 8), (6, 6), rng)    # overlapping windows
    ours_x, theirs_x = mt.tensor(x, requires_grad=True), th.tensor(x, requires_grad=True)
    weights = rng.standard_normal((2, 3, 6, 6))
    (F.fractional_max_pool2d(ours_x, 3, 6, _random_samples=mt.tensor(samples))
     * mt.tensor(weights)).sum().backward()
    (th.nn.functional.fractional_max_pool2d(theirs_x, 3, 6, _random_samples=th.tensor(samples))
     * th.tensor(weights)).sum().backward()
    np.testing.assert_allclose(_np(ours_x.grad), theirs_x.grad.numpy(), atol=1e-12)


def test_fractional_non_contiguous_and_empty(device, rng):
    x, samples, _ = _case((2, 3, 9, 8), (4, 4), rng)
    xt = mt.tensor(np.ascontiguousarray(x.transpose(0, 1, 3, 2)), device=device).transpose(2, 3)
    st = mt.tensor(np.ascontiguousarray(samples.transpose(1, 0, 2)), device=device)
    st = st.transpose(0, 1)
    assert not xt.is_contiguous() and not st.is_contiguous()
    got = F.fractional_max_pool2d(xt, 2, 4, return_indices=True, _random_samples=st)
    want = _ref_fractional(x, (2, 2), (4, 4), samples)
    np.testing.assert_array_equal(_np(got[0]), want[0])
    np.testing.assert_array_equal(_np(got[1]), want[1])
    empty = F.fractional_max_pool2d(mt.zeros(0, 3, 9, 8, device=device), 2, 4,
                                    return_indices=True)
    assert tuple(empty[0].shape) == tuple(empty[1].shape) == (0, 3, 4, 4)
    assert empty[1].dtype is mt.int64
    zero_out = F.fractional_max_pool3d(mt.zeros(1, 2, 5, 5, 5, device=device), 2, (0, 2, 2))
    assert tuple(zero_out.shape) == (1, 2, 0, 2, 2)


def test_fractional_modules(device, rng):
    x, samples, _ = _case((2, 3, 9, 8), (4, 3), rng)
    pool = mt.nn.FractionalMaxPool2d(2, output_size=(4, 3), return_indices=True,
                                     _random_samples=mt.tensor(samples, device=device))
    assert repr(pool) == "FractionalMaxPool2d()" and pool.kernel_size == (2, 2)
    assert list(pool.state_dict()) == ["_random_samples"]
    indices = pool(mt.tensor(x, device=device))[1]
    np.testing.assert_array_equal(_np(indices), _ref_fractional(x, (2, 2), (4, 3), samples)[1])
    pool3 = mt.nn.FractionalMaxPool3d((1, 2, 2), output_ratio=(0.5, 0.5, 0.5))
    assert pool3.output_ratio == (0.5, 0.5, 0.5) and pool3._random_samples is None
    assert tuple(pool3(mt.zeros(3, 4, 8, 6, device=device)).shape) == (3, 2, 4, 3)
    assert F.fractional_max_pool2d_with_indices(mt.tensor(x), 2, 3)[1].dtype is mt.int64


MODULE_ERRORS = [
    ("FractionalMaxPool2d", (2,), {}),
    ("FractionalMaxPool2d", (2, 3, 0.5), {}),
    ("FractionalMaxPool2d", (2,), {"output_ratio": 1}),
    ("FractionalMaxPool2d", (2,), {"output_ratio": (0.5, 1.0)}),
    ("FractionalMaxPool3d", (0, 2), {}),
    ("FractionalMaxPool3d", ((1, 0, 1), 2), {}),
    ("FractionalMaxPool3d", (2,), {"output_ratio": (0.5, 0.5, 1)}),
]


@pytest.mark.parametrize("name, args, kwargs", MODULE_ERRORS)
def test_fractional_module_errors(name, args, kwargs):
    with pytest.raises(ValueError):
        getattr(mt.nn, name)(*args, **kwargs)
    if torch is not None:
        _same_error(lambda: getattr(mt.nn, name)(*args, **kwargs),
                    lambda: getattr(torch.nn, name)(*args, **kwargs))


def _bad_calls(lib):
    """Bad fractional pooling calls, each written once for both libraries."""
    f2, f3 = lib.nn.functional.fractional_max_pool2d, lib.nn.functional.fractional_max_pool3d
    x, x3 = lib.zeros(2, 3, 7, 8), lib.zeros(2, 3, 6, 7, 8)

    def rand(*shape, dtype=lib.float32):
        return lib.full(shape, 0.5, dtype=dtype)
    return [
        lambda: f2(x, 2),
        lambda: f2(x, 2, output_size=7),
        lambda: f2(x, 2, output_size=(3, 8)),
        lambda: f2(x, (2, 2, 2), output_size=3),
        lambda: f2(x, [2], output_size=3),
        lambda: f2(x, 2, output_size=(3, 3, 3)),
        lambda: f2(x, 2.0, output_size=3),
        lambda: f2(x, 2, output_size=3.0),
        lambda: f2(x, 2, output_size=(3, None)),
        lambda: f2(x, 2, output_ratio=(0.5, 0.5, 0.5)),
        lambda: f2(x, 2, output_ratio=0.5),
        lambda: f2(x[0, 0], 2, output_size=3),
        lambda: f2(lib.zeros(2, 3, 4, 5, 6), 2, output_size=2),
        lambda: f2(lib.zeros(2, 0, 7, 8), 2, output_size=3),
        lambda: f2(x, 2, output_size=-1),
        lambda: f2(x, 2, output_size=3, _random_samples=rand(2, 3, 2, dtype=lib.float64)),
        lambda: f2(x, 2, output_size=3, _random_samples=rand(2, 3)),
        lambda: f2(x, 2, output_size=3, _random_samples=rand(1, 3, 2)),
        lambda: f2(x, 2, output_size=3, _random_samples=rand(2, 4, 2)),
        lambda: f2(x, 2, output_size=3, _random_samples=rand(2, 3, 3)),
        lambda: f2(x.long(), 2, output_size=3, _random_samples=rand(2, 3, 2).long()),
        lambda: f2(x.long(), 2, output_size=3),
        lambda: f3(x3, 2),
        lambda: f3(x3, 2, output_size=5),
        lambda: f3(x3, 2, output_size=(4, 6, 6)),
        lambda: f3(x3, 2, output_size=(4, 5, 7)),
        lambda: f3(x3, 7, output_size=(1, 1, 1)),
        lambda: f3(x3, (2, 2), output_size=2),
        lambda: f3(x3, 2, output_size=(2, 2)),
        lambda: f3(x3, 2, output_ratio=(0.5, 0.5)),
        lambda: f3(x3[0, 0], 2, output_ratio=0.5),
        lambda: f3(x3[0, 0, 0], 2, output_ratio=0.5),
        lambda: f3(x3[:, :0], 2, output_ratio=0.5),
        lambda: f3(x3, 2, output_size=2, _random_samples=rand(2, 3, 2)),
        lambda: f3(x3.double(), 2, output_size=2, _random_samples=rand(2, 3, 3)),
    ]


@pytest.mark.torch_exact
@pytest.mark.parametrize("case", range(len(_bad_calls(mt))))
def test_fractional_errors_match_torch(case):
    ours = _bad_calls(mt)[case]
    with pytest.raises((ValueError, RuntimeError, TypeError, IndexError, NotImplementedError)):
        ours()
    if torch is not None:
        _same_error(ours, _bad_calls(torch)[case])


# ---- AdaptiveLogSoftmaxWithLoss ---------------------------------------------------------------
def _adaptive(device=None, head_bias=True, **kwargs):
    mt.manual_seed(0)
    return mt.nn.AdaptiveLogSoftmaxWithLoss(6, 10, [3, 6], div_value=2.0, head_bias=head_bias,
                                            device=device, dtype=mt.float64, **kwargs)


def test_adaptive_structure():
    asm = _adaptive()
    assert asm.cutoffs == [3, 6, 10] and asm.shortlist_size == 3 and asm.n_clusters == 2
    assert asm.head_size == 5 and asm.head.bias is not None
    assert [(a.in_features, a.out_features, b.out_features) for a, b in asm.tail] == \
        [(6, 3, 3), (6, 1, 4)]
    assert [name for name, _ in asm.named_parameters()] == [
        "head.weight", "head.bias", "tail.0.0.weight", "tail.0.1.weight", "tail.1.0.weight",
        "tail.1.1.weight"]
    before = asm.tail[0][0].weight.detach().clone()
    asm.reset_parameters()
    assert not mt.equal(before, asm.tail[0][0].weight)
    if torch is not None:
        theirs = torch.nn.AdaptiveLogSoftmaxWithLoss(6, 10, (3, 6), div_value=2.0,
                                                     head_bias=True)
        assert repr(asm) == repr(theirs)


@pytest.mark.parametrize("cutoffs", [[], [3, 2], [0, 2], [2, 10], [2, 2], [2, 2.5]])
def test_adaptive_bad_cutoffs(cutoffs):
    with pytest.raises(ValueError):
        mt.nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs)
    if torch is not None:
        _same_error(lambda: mt.nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs),
                    lambda: torch.nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs))


def test_adaptive_forward_is_log_prob_at_target(device, rng):
    """Without torch: output is log_prob gathered at the targets, log_prob a distribution,
    predict its argmax, loss the mean negated output."""
    asm = _adaptive(device)
    x = mt.tensor(rng.standard_normal((7, 6)), device=device)
    target = mt.tensor([0, 3, 9, 2, 5, 6, 1], device=device)
    full = _np(asm.log_prob(x))
    np.testing.assert_allclose(np.exp(full).sum(1), 1.0, rtol=1e-12)
    output, loss = asm(x, target)
    np.testing.assert_allclose(_np(output), full[np.arange(7), _np(target)], rtol=1e-12)
    np.testing.assert_allclose(_np(loss), -full[np.arange(7), _np(target)].mean(), rtol=1e-12)
    np.testing.assert_array_equal(_np(asm(x, target.int()).output), _np(output))
    np.testing.assert_array_equal(_np(asm.predict(x)), full.argmax(1))
    single = asm(x[2], target[2])
    assert single.output.shape == () and math.isclose(single.output.item(), full[2, 9])


def test_adaptive_predict_branches(device):
    """Head argmax all in the shortlist, all in clusters, or mixed: log_prob's argmax."""
    asm = _adaptive(device, head_bias=True)
    with mt.no_grad():
        asm.head.weight.zero_()
        for scores, rows in (([5., 0, 0, 0, 0], 3), ([0., 0, 0, 9, 9], 3),
                             ([0., 0, 0, 0, 0], 0)):
            asm.head.bias.copy_(mt.tensor(scores, device=device))
            x = mt.tensor(np.random.default_rng(rows).standard_normal((4, 6)), device=device)
            if rows == 0:   # mixed: only rows with a large first feature pick the shortlist
                asm.head.weight[0, 0] = 50.0
                x[:2, 0] = 1.0
                x[2:, 0] = -1.0
            want = _np(asm.log_prob(x)).argmax(1)
            np.testing.assert_array_equal(_np(asm.predict(x)), want)


def test_adaptive_matches_torch(rng):
    th = _torch()
    asm = _adaptive()
    theirs = th.nn.AdaptiveLogSoftmaxWithLoss(6, 10, [3, 6], div_value=2.0, head_bias=True,
                                              dtype=th.float64)
    theirs.load_state_dict({k: th.tensor(_np(v)) for k, v in asm.state_dict().items()})
    x = rng.standard_normal((5, 6))
    target = np.array([9, 0, 4, 2, 7])
    ours_x, theirs_x = mt.tensor(x, requires_grad=True), th.tensor(x, requires_grad=True)
    ours, want = asm(ours_x, mt.tensor(target)), theirs(theirs_x, th.tensor(target))
    np.testing.assert_allclose(_np(ours.output), want.output.detach().numpy(), rtol=1e-12)
    ours.loss.backward()
    want.loss.backward()
    np.testing.assert_allclose(_np(ours_x.grad), theirs_x.grad.numpy(), rtol=1e-10)
    for (name, p), (_, q) in zip(asm.named_parameters(), theirs.named_parameters()):
        np.testing.assert_allclose(_np(p.grad), q.grad.numpy(), rtol=1e-10, err_msg=name)
    np.testing.assert_allclose(_np(asm.log_prob(mt.tensor(x))),
                               theirs.log_prob(th.tensor(x)).detach().numpy(), rtol=1e-12)
    np.testing.assert_array_equal(_np(asm.predict(mt.tensor(x))),
                                  theirs.predict(th.tensor(x)).numpy())


def test_adaptive_gradcheck_and_batches(device, rng):
    asm = _adaptive(device)
    target = mt.tensor([8, 1, 4], device=device)
    assert gradcheck(lambda a: asm(a, target).output, (_leaf(rng.standard_normal((3, 6)),
                                                             device),))
    one = asm(mt.tensor(rng.standard_normal((1, 6)), device=device), target[:1])
    assert tuple(one.output.shape) == (1,)
    empty = asm(mt.zeros(0, 6, device=device, dtype=mt.float64),
                mt.zeros(0, dtype=mt.int64, device=device))
    assert tuple(empty.output.shape) == (0,) and math.isnan(empty.loss.item())
    assert tuple(asm.predict(mt.zeros(0, 6, device=device, dtype=mt.float64)).shape) == (0,)


def _adaptive_bad_calls(lib):
    asm = lib.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [2, 5])
    x, t = lib.zeros(4, 8), lib.tensor([0, 3, 9, 1])
    return [
        lambda: asm(x, t[:3]),
        lambda: asm(x[0], t),
        lambda: asm(x[0][None, None], t[:1]),
        lambda: asm(x, t.view(2, 2)),
        lambda: asm(x[:1], t[0]),
        lambda: asm(x, lib.tensor([0, 3, 10, 1])),
        lambda: asm(x, lib.tensor([0, -3, 10, 1])),
        lambda: asm(x, t.float()),
        lambda: asm.log_prob(x[0]),
    ]


@pytest.mark.parametrize("case", range(len(_adaptive_bad_calls(mt))))
def test_adaptive_errors(case):
    ours = _adaptive_bad_calls(mt)[case]
    with pytest.raises((RuntimeError, IndexError)):
        ours()
    if torch is not None:
        _same_error(ours, _adaptive_bad_calls(torch)[case])


# ---- CrossMapLRN2d: a numpy port of torch's (Lua) loops --------------------------------------
def _ref_lrn_forward(x, size, alpha, beta, k):
    c = x.shape[1]
    square = x * x
    pre_pad = int((size - 1) / 2 + 1)
    scale = np.empty_like(x)
    scale[:, 0] = square[:, :min(pre_pad, c)].sum(1)
    for ch in range(1, c):
        scale[:, ch] = scale[:, ch - 1]
        if ch < c - pre_pad + 1:
            scale[:, ch] += square[:, ch + pre_pad - 1]
        if ch > pre_pad:
            scale[:, ch] -= square[:, ch - pre_pad]
    scale = scale * (alpha / size) + k
    return scale ** -beta * x, scale


def _ref_lrn_backward(x, grad, size, alpha, beta, k):
    out, scale = _ref_lrn_forward(x, size, alpha, beta, k)
    c = x.shape[1]
    before = int(size - (size - 1) / 2)
    padded = np.zeros((x.shape[0], c + size - 1) + x.shape[2:])
    padded[:, before:before + c] = grad * out / scale
    grad_input = scale ** -beta * grad
    for ch in range(c):
        accum = padded[:, ch:ch + size].sum(1)
        grad_input[:, ch] -= 2 * alpha * beta / size * x[:, ch] * accum
    return grad_input


@pytest.mark.parametrize("size, channels", [(5, 8), (3, 4), (4, 6), (2, 3), (7, 3), (5, 1)])
def test_cross_map_lrn_matches_reference(device, rng, size, channels):
    x, grad = rng.standard_normal((2, channels, 3, 4)), rng.standard_normal((2, channels, 3, 4))
    lrn = mt.nn.CrossMapLRN2d(size, alpha=0.3, beta=0.6, k=1.5)
    leaf = _leaf(x, device)
    out = lrn(leaf)
    out.backward(mt.tensor(grad, device=device))
    np.testing.assert_allclose(_np(out), _ref_lrn_forward(x, size, 0.3, 0.6, 1.5)[0],
                               rtol=1e-12)
    np.testing.assert_allclose(_np(leaf.grad), _ref_lrn_backward(x, grad, size, 0.3, 0.6, 1.5),
                               rtol=1e-10, atol=1e-12)
    assert out.grad_fn.name() == "CrossMapLRN2dBackward"


@pytest.mark.parametrize("size", [5, 4, 2])
def test_cross_map_lrn_matches_torch(rng, size):
    th = _torch()
    x = rng.standard_normal((3, 7, 2, 5)).astype(np.float32)
    grad = rng.standard_normal(x.shape).astype(np.float32)
    ours_x, theirs_x = mt.tensor(x, requires_grad=True), th.tensor(x, requires_grad=True)
    ours = mt.nn.CrossMapLRN2d(size, alpha=0.5)(ours_x)
    theirs = th.nn.CrossMapLRN2d(size, alpha=0.5)(theirs_x)
    ours.backward(mt.tensor(grad))
    theirs.backward(th.tensor(grad))
    np.testing.assert_allclose(_np(ours), theirs.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(_np(ours_x.grad), theirs_x.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_cross_map_lrn_single_channel_gradcheck_and_shapes(device, rng):
    """With one channel the legacy backward is the exact gradient; empty batches pass."""
    lrn = mt.nn.CrossMapLRN2d(3, alpha=0.4, beta=0.7, k=2)
    assert gradcheck(lrn, (_leaf(rng.standard_normal((2, 1, 3, 3)), device),))
    assert repr(lrn) == "CrossMapLRN2d(3, alpha=0.4, beta=0.7, k=2)"
    assert tuple(lrn(mt.zeros(0, 4, 3, 3, device=device)).shape) == (0, 4, 3, 3)
    x = mt.tensor(rng.standard_normal((2, 6, 5, 4)), device=device)
    np.testing.assert_allclose(_np(lrn(x.transpose(2, 3))),
                               _ref_lrn_forward(_np(x).transpose(0, 1, 3, 2), 3, 0.4, 0.7, 2)[0],
                               rtol=1e-12)


def _lrn_bad_calls(lib):
    lrn = lib.nn.CrossMapLRN2d
    return [
        lambda: lrn(3)(lib.zeros(2, 3, 4)),
        lambda: lrn(3)(lib.zeros(2, 0, 3, 3)),
        lambda: lrn(3)(lib.zeros(2, 3, 3, 3, dtype=lib.int64)),
        lambda: lrn(3)(lib.zeros(2, 3, 3, 3, dtype=lib.bool)),
        lambda: lrn(0)(lib.zeros(2, 3, 3, 3)),
        lambda: lrn(1)(lib.zeros(2, 3, 3, 3, requires_grad=True)).sum().backward(),
    ]


@pytest.mark.parametrize("case", range(len(_lrn_bad_calls(mt))))
def test_cross_map_lrn_errors(case):
    ours = _lrn_bad_calls(mt)[case]
    with pytest.raises((ValueError, IndexError, RuntimeError, ZeroDivisionError)):
        ours()
    if torch is not None:
        _same_error(ours, _lrn_bad_calls(torch)[case])
