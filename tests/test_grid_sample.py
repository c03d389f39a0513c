"""F.grid_sample and F.affine_grid (functions/grid_sample.py, kernels _cpu/grid_sample.pyx and
_gpu/kernels/grid_sample.cu): values and gradients against torch over every mode, padding and
align_corners in 2-D and 3-D, finite differences (gradcheck), layouts and empty sizes, and
torch's errors and warnings for bad input."""
import itertools
import warnings

import numpy as np
import pytest

import minitorch as mt
import minitorch.nn.functional as F

MODES = ("bilinear", "nearest", "bicubic")
PADDINGS = ("zeros", "border", "reflection")
# (input shape, grid shape): 2-D upsampling-ish and 3-D, grids reaching outside [-1, 1]
SHAPES = {4: ((2, 3, 5, 7), (2, 4, 6, 2)), 5: ((2, 2, 3, 4, 5), (2, 2, 3, 4, 3))}
CASES = [(ndim, mode, padding, align)
         for ndim, mode, padding, align in itertools.product((4, 5), MODES, PADDINGS,
                                                             (False, True))
         if not (ndim == 5 and mode == "bicubic")]


def _torch():
    return pytest.importorskip("torch", reason="torch is needed for the comparison")


def _grid(rng, shape, reach=1.4, special=True):
    """Points in [-reach, reach]; with `special` the corners and the centre among them (kinks
    of the sampled function: random points only for finite differences)."""
    g = rng.uniform(-reach, reach, shape)
    if special:
        flat = g.reshape(-1, shape[-1])
        flat[0], flat[1], flat[2] = -1.0, 1.0, 0.0
    return g


def _sample_both(torch, x, g, device, **kwargs):
    ours = F.grid_sample(mt.tensor(x, device=device), mt.tensor(g, device=device), **kwargs)
    theirs = torch.nn.functional.grid_sample(torch.tensor(x), torch.tensor(g), **kwargs)
    return ours.cpu().numpy(), theirs.numpy()


@pytest.mark.parametrize("ndim, mode, padding, align", CASES)
def test_forward_matches_torch(device, rng, ndim, mode, padding, align):
    torch = _torch()
    x_shape, g_shape = SHAPES[ndim]
    x, g = rng.standard_normal(x_shape), _grid(rng, g_shape)
    kwargs = {"mode": mode, "padding_mode": padding, "align_corners": align}
    for dtype, tol in ((np.float64, 1e-12), (np.float32, 2e-5)):
        ours, theirs = _sample_both(torch, x.astype(dtype), g.astype(dtype), device, **kwargs)
        assert ours.dtype == dtype and ours.shape == theirs.shape
        np.testing.assert_allclose(ours, theirs, rtol=tol, atol=tol)


@pytest.mark.parametrize("ndim, mode, padding, align", CASES)
def test_gradients_match_torch(device, rng, ndim, mode, padding, align):
    torch = _torch()
    x_shape, g_shape = SHAPES[ndim]
    x, g = rng.standard_normal(x_shape), _grid(rng, g_shape)
    kwargs = {"mode": mode, "padding_mode": padding, "align_corners": align}
    xt, gt = torch.tensor(x, requires_grad=True), torch.tensor(g, requires_grad=True)
    yt = torch.nn.functional.grid_sample(xt, gt, **kwargs)
    seed = rng.standard_normal(tuple(yt.shape))
    yt.backward(torch.tensor(seed))
    xm = mt.tensor(x, device=device, requires_grad=True)
    gm = mt.tensor(g, device=device, requires_grad=True)
    ym = F.grid_sample(xm, gm, **kwargs)
    assert ym.grad_fn.name() == f"GridSampler{ndim - 2}DBackward0"
    ym.backward(mt.tensor(seed, device=device))
    np.testing.assert_allclose(xm.grad.cpu().numpy(), xt.grad.numpy(), rtol=1e-10, atol=1e-11)
    np.testing.assert_allclose(gm.grad.cpu().numpy(), gt.grad.numpy(), rtol=1e-10, atol=1e-10)
    if mode == "nearest":
        assert not gm.grad.cpu().numpy().any()


@pytest.mark.parametrize("mode, padding, align", [("bilinear", "zeros", False),
                                                  ("bilinear", "border", True),
                                                  ("bilinear", "reflection", False),
                                                  ("bicubic", "zeros", True),
                                                  ("bicubic", "border", False),
                                                  ("bicubic", "reflection", True)])
def test_gradcheck_input_and_grid_2d(device, rng, mode, padding, align):
    x = mt.tensor(rng.standard_normal((1, 2, 3, 4)), device=device, requires_grad=True)
    g = mt.tensor(_grid(rng, (1, 2, 3, 2), 1.2, special=False), device=device, requires_grad=True)
    assert mt.autograd.gradcheck(
        lambda a, b: F.grid_sample(a, b, mode=mode, padding_mode=padding, align_corners=align),
        (x, g))


@pytest.mark.parametrize("padding", PADDINGS)
def test_gradcheck_input_and_grid_3d(device, rng, padding):
    x = mt.tensor(rng.standard_normal((1, 2, 2, 3, 3)), device=device, requires_grad=True)
    g = mt.tensor(_grid(rng, (1, 2, 2, 2, 3), 1.2, special=False), device=device, requires_grad=True)
    assert mt.autograd.gradcheck(
        lambda a, b: F.grid_sample(a, b, padding_mode=padding, align_corners=False), (x, g))


@pytest.mark.parametrize("ndim", (4, 5))
def test_gradcheck_nearest_input(device, rng, ndim):
    x_shape = (1, 2, 3, 4) if ndim == 4 else (1, 2, 2, 3, 3)
    g_shape = (1, 3, 2, 2) if ndim == 4 else (1, 2, 2, 2, 3)
    x = mt.tensor(rng.standard_normal(x_shape), device=device, requires_grad=True)
    g = mt.tensor(_grid(rng, g_shape, 1.2, special=False), device=device)
    assert mt.autograd.gradcheck(
        lambda a: F.grid_sample(a, g, mode="nearest", padding_mode="reflection",
                                align_corners=True), (x,))


def test_only_the_wanted_gradient(device, rng):
    x = mt.tensor(rng.standard_normal((1, 2, 3, 4)), device=device)
    g = mt.tensor(_grid(rng, (1, 2, 2, 2)), device=device, requires_grad=True)
    F.grid_sample(x, g, align_corners=False).sum().backward()
    assert g.grad.shape == g.shape and x.grad is None
    x.requires_grad_(True)
    g2 = mt.tensor(g.detach().cpu().numpy(), device=device)
    F.grid_sample(x, g2, align_corners=False).sum().backward()
    assert x.grad.shape == x.shape and g2.grad is None


def test_non_contiguous_input_and_grid(device, rng):
    torch = _torch()
    x = rng.standard_normal((3, 6, 2, 7))                  # permuted and strided below
    g = _grid(rng, (2, 5, 4, 3))
    xm = mt.tensor(x, device=device).permute(2, 0, 1, 3)[:, :, ::2]
    gm = mt.tensor(g, device=device).transpose(1, 2)[..., 1:]
    xt = torch.tensor(x).permute(2, 0, 1, 3)[:, :, ::2]
    gt = torch.tensor(g).transpose(1, 2)[..., 1:]
    assert not xm.is_contiguous() and not gm.is_contiguous()
    for mode in MODES:
        ours = F.grid_sample(xm, gm, mode=mode, padding_mode="border", align_corners=False)
        theirs = torch.nn.functional.grid_sample(xt, gt, mode=mode, padding_mode="border",
                                                 align_corners=False)
        np.testing.assert_allclose(ours.cpu().numpy(), theirs.numpy(), rtol=1e-12, atol=1e-12)


def test_points_far_outside(device, rng):
    """Points far outside the input (|x| up to 1e30, where a plain float-to-int conversion
    would be undefined) sample the padding: zeros or the border values; reflection folds
    points thousands of spans out exactly (beyond ~1e15 torch's own answer is an artefact of
    its arithmetic, not compared)."""
    torch = _torch()
    x = rng.standard_normal((1, 2, 3, 4))
    far = np.array([[[[1e30, 0.2], [-1e30, 0.3], [0.1, 1e30], [-7.5, 3.25], [2.5, -1e20],
                      [1e6, -1e6]]]])
    folded = np.array([[[[12345.678, 0.2], [-9876.54, 0.3], [0.1, 4321.987], [-7.5, 3.25],
                         [2.5, -1e5 - 0.37], [37.3, -41.9]]]])
    for mode, padding in itertools.product(MODES, PADDINGS):
        g = folded if padding == "reflection" else far
        for align in (False, True):
            ours, theirs = _sample_both(torch, x, g, device, mode=mode, padding_mode=padding,
                                        align_corners=align)
            np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-9,
                                       err_msg=f"{mode} {padding} {align}")


@pytest.mark.parametrize("ndim", (4, 5))
def test_empty_sizes(device, ndim):
    spatial = (3, 4) if ndim == 4 else (2, 3, 4)
    cases = [((0, 2) + spatial, (0,) + (2,) * (ndim - 2) + (ndim - 2,)),      # empty batch
             ((2, 0) + spatial, (2,) + (2,) * (ndim - 2) + (ndim - 2,)),      # no channels
             ((2, 3) + spatial, (2, 0) + (2,) * (ndim - 3) + (ndim - 2,))]    # no points
    for x_shape, g_shape in cases:
        x = mt.randn(*x_shape, dtype=mt.float64, device=device, requires_grad=True)
        g = mt.rand(*g_shape, dtype=mt.float64, device=device, requires_grad=True)
        y = F.grid_sample(x, g, align_corners=True)
        assert y.shape == x_shape[:2] + g_shape[1:-1]
        y.sum().backward()
        assert x.grad.shape == x.shape and not x.grad.cpu().numpy().any()
        assert g.grad.shape == g.shape and not g.grad.cpu().numpy().any()


def test_half_precision_matches_torch(device, rng):
    torch = _torch()
    x = rng.standard_normal((1, 2, 4, 5)).astype(np.float32)
    g = _grid(rng, (1, 3, 3, 2)).astype(np.float32)
    for ours_dtype, torch_dtype in ((mt.float16, torch.float16), (mt.bfloat16, torch.bfloat16)):
        ours = F.grid_sample(mt.tensor(x, device=device).to(ours_dtype),
                             mt.tensor(g, device=device).to(ours_dtype), align_corners=False)
        theirs = torch.nn.functional.grid_sample(torch.tensor(x).to(torch_dtype),
                                                 torch.tensor(g).to(torch_dtype),
                                                 align_corners=False)
        assert ours.dtype is ours_dtype
        np.testing.assert_allclose(ours.float().cpu().numpy(), theirs.float().numpy(),
                                   rtol=2e-2, atol=2e-2)


def test_double_backward_is_refused_not_wrong(rng):
    """Differentiating the gradients again is not supported (torch has a double backward):
    it raises instead of silently returning a wrong result."""
    x = mt.tensor(rng.standard_normal((1, 1, 3, 3)), requires_grad=True)
    g = mt.tensor(_grid(rng, (1, 2, 2, 2)), requires_grad=True)
    y = F.grid_sample(x, g, align_corners=False)
    _, gg = mt.autograd.grad(y.sum(), (x, g), create_graph=True)
    assert gg.grad_fn.name() == "GridSampler2DBackwardBackward0"
    with pytest.raises(RuntimeError, match="grid_sampler_2d_backward is not implemented"):
        gg.sum().backward()


# ---- affine_grid ----------------------------------------------------------------------------
AFFINE = [((2, 3, 4, 5), (2, 2, 3)), ((2, 3, 1, 4), (2, 2, 3)), ((1, 2, 3, 4, 5), (1, 3, 4)),
          ((2, 1, 2, 1, 3), (2, 3, 4))]


@pytest.mark.parametrize("size, theta_shape", AFFINE)
@pytest.mark.parametrize("align", (False, True))
def test_affine_grid_matches_torch(device, rng, size, theta_shape, align):
    torch = _torch()
    theta = rng.standard_normal(theta_shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                     # unit-size grids with align
        theirs = torch.nn.functional.affine_grid(torch.tensor(theta), size, align_corners=align)
        ours = F.affine_grid(mt.tensor(theta, device=device), size, align_corners=align)
        ours32 = F.affine_grid(mt.tensor(theta, dtype=mt.float32, device=device), size,
                               align_corners=align)
    assert ours.shape == tuple(theirs.shape) and ours32.dtype is mt.float32
    np.testing.assert_allclose(ours.cpu().numpy(), theirs.numpy(), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(ours32.cpu().numpy(), theirs.numpy(), rtol=1e-5, atol=1e-6)


def test_affine_grid_identity_is_torch_base_grid(device):
    """With the identity the grid is the base grid itself: torch's linspace values (its
    halfway rule, fused multiply-adds), bit for bit in float32 and float64."""
    torch = _torch()
    for size, dtype in itertools.product(((1, 1, 7, 5), (1, 1, 3, 6), (1, 2, 4, 37)),
                                         (torch.float32, torch.float64)):
        for align in (False, True):
            theta = torch.tensor([[[1.0, 0, 0], [0, 1.0, 0]]], dtype=dtype)
            theirs = torch.nn.functional.affine_grid(theta, size, align_corners=align)
            ours = F.affine_grid(mt.tensor(theta.numpy(), device=device), size,
                                 align_corners=align)
            np.testing.assert_array_equal(ours.cpu().numpy(), theirs.numpy())


@pytest.mark.parametrize("size, theta_shape", [((2, 3, 3, 4), (2, 2, 3)),
                                               ((1, 1, 2, 3, 2), (1, 3, 4))])
def test_affine_grid_gradcheck_and_pipeline(device, rng, size, theta_shape):
    theta = mt.tensor(rng.standard_normal(theta_shape) * 0.5, device=device, requires_grad=True)
    assert mt.autograd.gradcheck(lambda t: F.affine_grid(t, size, align_corners=False), (theta,))
    x = mt.tensor(rng.standard_normal(size), device=device)
    assert mt.autograd.gradcheck(
        lambda t: F.grid_sample(x, F.affine_grid(t, size, align_corners=True),
                                align_corners=True), (theta,))


def test_affine_grid_errors():
    theta = mt.randn(2, 2, 3)
    with pytest.raises(ValueError, match="Expected theta to have floating point type, but got "
                                         "torch.int64"):
        F.affine_grid(mt.zeros(2, 2, 3, dtype=mt.int64), (2, 3, 4, 5), align_corners=False)
    with pytest.raises(ValueError, match=r"Expected a batch of 2D affine matrices of shape "
                                         r"Nx2x3 for size \(2, 3, 4, 5\)\. Got torch\.Size"):
        F.affine_grid(mt.randn(2, 3, 4), (2, 3, 4, 5), align_corners=False)
    with pytest.raises(ValueError, match="Expected a batch of 3D affine matrices of shape Nx3x4"):
        F.affine_grid(theta, (2, 3, 4, 5, 6), align_corners=False)
    with pytest.raises(NotImplementedError, match="affine_grid only supports 4D and 5D sizes"):
        F.affine_grid(theta, (2, 3, 4), align_corners=False)
    with pytest.raises(ValueError, match=r"Expected non-zero, positive output size\. Got "
                                         r"\(2, 3, 0, 5\)"):
        F.affine_grid(theta, (2, 3, 0, 5), align_corners=False)
    with pytest.raises(RuntimeError, match="Expected size for first two dimensions of batch2"):
        F.affine_grid(mt.randn(1, 2, 3), (2, 3, 4, 5), align_corners=False)


# ---- warnings and errors --------------------------------------------------------------------
def test_align_corners_none_warns_like_torch():
    x, g = mt.randn(1, 1, 3, 3), mt.zeros(1, 2, 2, 2)
    with pytest.warns(UserWarning, match="Default grid_sample and affine_grid behavior has "
                                         "changed to align_corners=False since 1.3.0"):
        default = F.grid_sample(x, g)
    np.testing.assert_array_equal(default.numpy(),
                                  F.grid_sample(x, g, align_corners=False).numpy())
    with pytest.warns(UserWarning, match="Please specify align_corners=True"):
        F.affine_grid(mt.randn(1, 2, 3), (1, 1, 2, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        F.grid_sample(x, g, align_corners=True)
    try:
        import torch
    except ImportError:
        return
    with warnings.catch_warnings(record=True) as theirs:
        warnings.simplefilter("always")
        torch.nn.functional.grid_sample(torch.randn(1, 1, 3, 3), torch.zeros(1, 2, 2, 2))
    with warnings.catch_warnings(record=True) as ours:
        warnings.simplefilter("always")
        F.grid_sample(x, g)
    assert [str(w.message) for w in ours] == [str(w.message) for w in theirs]


# (input shape, grid shape, kwargs, exception type, a phrase of torch's message)
BAD = [
    ((2, 3, 4, 5), (2, 6, 7, 2), {"mode": "linear"}, ValueError,
     "expected mode to be 'bilinear', 'nearest' or 'bicubic', but got: 'linear'"),
    ((2, 3, 4, 5), (2, 6, 7, 2), {"padding_mode": "circular"}, ValueError,
     "expected padding_mode to be 'zeros', 'border', or 'reflection', but got: 'circular'"),
    ((2, 3, 4, 5), (2, 6, 7, 8, 2), {}, RuntimeError,
     "expected 4D input and grid with same number of dimensions"),
    ((2, 3, 4), (2, 6, 2), {}, RuntimeError, "expected grid to have size 1 in last dimension"),
    ((2, 3, 4, 5, 6, 7), (2, 6, 2, 2, 2, 4), {}, RuntimeError,
     "expected 5D input and grid with same number of dimensions"),
    ((2, 3, 4, 5), (2, 6, 7, 3), {}, RuntimeError,
     "expected grid to have size 2 in last dimension"),
    ((2, 3, 4, 5, 6), (2, 6, 7, 8, 2), {}, RuntimeError,
     "expected grid to have size 3 in last dimension"),
    ((2, 3, 4, 5), (3, 6, 7, 2), {}, RuntimeError,
     "expected grid and input to have same batch size"),
    ((2, 3, 4, 5, 6), (2, 6, 7, 8, 3), {"mode": "bicubic"}, RuntimeError,
     "bicubic interpolation only supports 4D input"),
    ((2, 3, 0, 5), (2, 6, 7, 2), {}, RuntimeError,
     "expected input to have non-empty spatial dimensions"),
]


def _bad_call(x_shape, g_shape, kwargs, make=None):
    make = make or (lambda shape: mt.zeros(*shape))
    return lambda: F.grid_sample(make(x_shape), make(g_shape),
                                 **{"align_corners": False, **kwargs})


@pytest.mark.parametrize("x_shape, g_shape, kwargs, kind, phrase", BAD)
def test_bad_input_raises_torch_errors(device, x_shape, g_shape, kwargs, kind, phrase):
    with pytest.raises(kind, match=phrase.replace("(", r"\(").replace(")", r"\)")):
        _bad_call(x_shape, g_shape, kwargs,
                  lambda shape: mt.zeros(*shape, device=device))()


def test_bad_dtypes():
    x = mt.zeros(1, 1, 2, 2)
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        F.grid_sample(x, mt.zeros(1, 2, 2, 2, dtype=mt.float64), align_corners=False)
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        F.grid_sample(x.long(), mt.zeros(1, 2, 2, 2).long(), align_corners=False)
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        F.grid_sample(mt.zeros(1, 1, 2, 2, 2).long(), mt.zeros(1, 2, 2, 2, 3),
                      align_corners=False)


@pytest.mark.torch_exact
@pytest.mark.parametrize("x_shape, g_shape, kwargs, kind, phrase", BAD)
def test_bad_input_messages_are_torchs(x_shape, g_shape, kwargs, kind, phrase):
    torch = _torch()
    with pytest.raises(kind) as theirs:
        torch.nn.functional.grid_sample(torch.zeros(x_shape), torch.zeros(g_shape),
                                        **{"align_corners": False, **kwargs})
    with pytest.raises(kind) as ours:
        _bad_call(x_shape, g_shape, kwargs)()
    assert str(ours.value) == str(theirs.value).splitlines()[0]
