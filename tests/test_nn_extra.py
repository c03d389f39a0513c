"""The torch.nn layers composed from existing ops: activations (SELU … RReLU, PReLU), padding
layers, interpolate / Upsample, pixel (un)shuffle, instance and RMS normalization, 1-D and
adaptive pooling, channel dropout, Fold/Unfold, distances and the margin / likelihood losses.
Forward values and input gradients are compared with torch on contiguous and stepped inputs,
gradients are checked by finite differences in float64, and errors and reprs match torch's."""
import warnings

import numpy as np
import pytest

import minitorch as mt
import minitorch.nn as nn
import minitorch.nn.functional as F
from minitorch.autograd import gradcheck
from torch_parity import same_error, value

RNG = np.random.default_rng(0)


def randn(*shape, scale=1.0):
    return RNG.standard_normal(shape) * scale


def stepped(a):
    """An array twice as wide in its last axis whose even columns are `a`: the leaf whose
    [..., ::2] view is a non-contiguous copy of a."""
    wide = np.full(a.shape[:-1] + (2 * a.shape[-1],), 99.0)
    wide[..., ::2] = a
    return wide


def _inputs(lib, arrays, layout, device, grad_args):
    """Leaves (the first grad_args floating ones requiring grad) and the inputs made from
    them, in lib."""
    leaves, inputs = [], []
    for i, a in enumerate(arrays):
        floating = a.dtype.kind == "f" and i < grad_args
        strided = layout == "stepped" and floating and a.ndim > 0
        data = stepped(a) if strided else a
        if lib is mt:
            leaf = mt.tensor(data, device=device, requires_grad=floating)
        else:
            leaf = lib.tensor(data, requires_grad=floating)
        leaves.append(leaf)
        inputs.append(leaf[..., ::2] if strided else leaf)
    return leaves, inputs


def compare(fn, arrays, device, layout="contiguous", grad_args=None):
    """fn(lib, *inputs) in minitorch and torch on float64 copies of `arrays`: outputs (all of
    them when a tuple) and, through the first output, the gradients of the first grad_args
    (default all) floating leaves agree."""
    torch = pytest.importorskip("torch")
    grad_args = len(arrays) if grad_args is None else grad_args
    ours_leaves, ours_in = _inputs(mt, arrays, layout, device, grad_args)
    theirs_leaves, theirs_in = _inputs(torch, arrays, layout, None, grad_args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours, theirs = fn(mt, *ours_in), fn(torch, *theirs_in)
    ours, theirs = (x if isinstance(x, tuple) else (x,) for x in (ours, theirs))
    for a, b in zip(ours, theirs):
        assert a.shape == tuple(b.shape)
        assert a.dtype.name == str(b.dtype).replace("torch.", "")
        np.testing.assert_allclose(value(a), b.detach().numpy(), rtol=1e-9, atol=1e-10)
    if not theirs[0].requires_grad:
        return
    g = RNG.standard_normal(tuple(theirs[0].shape))
    ours[0].backward(mt.tensor(g, device=device))
    theirs[0].backward(torch.tensor(g))
    for a, b in zip(ours_leaves, theirs_leaves):
        if b.requires_grad:
            # rtol 1e-7: some of torch's float64 backward rules use float32 constants
            # (hardsigmoid's 1/6, celu's 1/alpha).
            np.testing.assert_allclose(value(a.grad), b.grad.numpy(), rtol=1e-7, atol=1e-9)


def check_grad(fn, *arrays, device):
    inputs = tuple(mt.tensor(a, device=device, requires_grad=True) for a in arrays)
    assert gradcheck(fn, inputs)


# ---- activations ------------------------------------------------------------------------------
ACTIVATIONS = {
    "selu": lambda lib, x: lib.nn.functional.selu(x),
    "celu": lambda lib, x: lib.nn.functional.celu(x, 0.5),  # 1/alpha exact in float32
    "hardswish": lambda lib, x: lib.nn.functional.hardswish(x),
    "hardsigmoid": lambda lib, x: lib.nn.functional.hardsigmoid(x),
    "mish": lambda lib, x: lib.nn.functional.mish(x),
    "softsign": lambda lib, x: lib.nn.functional.softsign(x),
    "tanhshrink": lambda lib, x: lib.nn.functional.tanhshrink(x),
    "softshrink": lambda lib, x: lib.nn.functional.softshrink(x, 0.4),
    "hardshrink": lambda lib, x: lib.nn.functional.hardshrink(x, 0.4),
    "threshold": lambda lib, x: lib.nn.functional.threshold(x, 0.1, -2.0),
    "glu": lambda lib, x: lib.nn.functional.glu(x),
    "glu0": lambda lib, x: lib.nn.functional.glu(x, 0),
    "softmin": lambda lib, x: lib.nn.functional.softmin(x, -1),
    "rrelu_eval": lambda lib, x: lib.nn.functional.rrelu(x, 0.1, 0.3),
    "prelu": lambda lib, x, w: lib.nn.functional.prelu(x, w),
    "prelu_shared": lambda lib, x, w: lib.nn.functional.prelu(x, w[:1]),
}


@pytest.mark.parametrize("layout", ["contiguous", "stepped"])
@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_matches_torch(name, layout, device):
    x = randn(4, 6, scale=3.0)
    x[0, :4] = [-3.0, 3.0, 0.4, -0.4]         # the kinks, where torch's gradient rules show
    if "prelu" in name:
        x = x if layout == "contiguous" else randn(2, 6, 4, scale=3.0)
    arrays = [x, randn(6)] if "prelu" in name else [x]     # one slope per channel (axis 1)
    compare(ACTIVATIONS[name], arrays, device, layout)


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_gradcheck(name, device):
    arrays = [randn(2, 4, scale=2.0)]
    if "prelu" in name:
        arrays.append(randn(4))
    check_grad(lambda *t: ACTIVATIONS[name](mt, *t), *arrays, device=device)


@pytest.mark.parametrize("name", ["selu", "celu", "hardswish", "hardsigmoid", "mish",
                                  "softsign", "softshrink", "threshold", "softmin"])
@pytest.mark.parametrize("shape", [(), (0, 3)])
def test_activation_scalar_and_empty(name, shape, device):
    compare(ACTIVATIONS[name], [np.asarray(randn(*shape))], device)


@pytest.mark.parametrize("name", ["selu", "celu", "hardswish", "hardsigmoid", "mish",
                                  "threshold"])
def test_activation_inplace(name, device):
    """inplace=True writes the result into the input and still differentiates."""
    fn = {"celu": lambda x, **k: F.celu(x, 0.7, **k),
          "threshold": lambda x, **k: F.threshold(x, 0.1, -2.0, **k)}.get(name,
                                                                          getattr(F, name))
    leaf = mt.tensor(randn(3, 4, scale=3.0), device=device, requires_grad=True)
    expected = fn(leaf)
    x = leaf * 1.0
    out = fn(x, inplace=True)
    assert out is x
    np.testing.assert_allclose(value(x), value(expected), rtol=1e-12)
    out.sum().backward()
    manual = mt.autograd.grad(expected.sum(), leaf)[0]
    np.testing.assert_allclose(value(leaf.grad), value(manual), rtol=1e-12)


def test_rrelu_training_draws_slopes_in_range(device):
    x = mt.tensor(-np.ones(2000), device=device)
    out = value(F.rrelu(x, 0.1, 0.3, training=True))
    assert ((out <= -0.1) & (out >= -0.3)).all() and out.std() > 0.03
    positive = mt.tensor(np.arange(1.0, 5.0), device=device)
    np.testing.assert_array_equal(value(F.rrelu(positive, training=True)), np.arange(1.0, 5.0))
    module = nn.RReLU(0.1, 0.3)
    assert value(module(x)).std() > 0.03
    module.eval()
    np.testing.assert_allclose(value(module(x)), -0.2)


def test_threshold_keeps_integer_dtype(device):
    compare(lambda lib, x: lib.nn.functional.threshold(x, 1, 0.5), [np.arange(4)], device)


def test_activation_modules_match_torch(device):
    torch = pytest.importorskip("torch")
    x = randn(2, 3, 4, scale=3.0)
    specs = [("SELU", ()), ("CELU", (0.5,)), ("Hardswish", ()), ("Hardsigmoid", ()),
             ("Mish", ()), ("Softsign", ()), ("Tanhshrink", ()), ("Softshrink", (0.3,)),
             ("Hardshrink", (0.3,)), ("Threshold", (0.2, 5.0)), ("GLU", (2,)),
             ("Softmin", (2,)), ("PReLU", (3, 0.1)), ("PReLU", ())]
    for name, args in specs:
        ours, theirs = getattr(nn, name)(*args), getattr(torch.nn, name)(*args)
        assert repr(ours) == repr(theirs)
        if name == "PReLU":
            ours = ours.to(device).double()
            np.testing.assert_allclose(value(ours.weight), theirs.weight.detach().numpy())
            theirs = theirs.double()
        compare(lambda lib, t: ours(t) if lib is mt else theirs(t), [x], device)


def test_prelu_learns_its_slope(device):
    torch = pytest.importorskip("torch")
    x = randn(2, 3, 4)
    ours, theirs = nn.PReLU(3).to(device).double(), torch.nn.PReLU(3).double()
    ours(mt.tensor(x, device=device)).sum().backward()
    theirs(torch.tensor(x)).sum().backward()
    np.testing.assert_allclose(value(ours.weight.grad), theirs.weight.grad.numpy())


@pytest.mark.parametrize("inplace", [False, True])
def test_activation_reprs(inplace):
    torch = pytest.importorskip("torch")
    for name in ("SELU", "Mish", "Hardswish", "Hardsigmoid", "RReLU", "CELU"):
        assert repr(getattr(nn, name)(inplace=inplace)) == \
            repr(getattr(torch.nn, name)(inplace=inplace))
    assert repr(nn.Threshold(0.1, 20, inplace)) == repr(torch.nn.Threshold(0.1, 20, inplace))


ACTIVATION_ERRORS = [
    lambda lib: lib.nn.functional.celu(lib.ones(2), 0.0),
    lambda lib: lib.nn.functional.softshrink(lib.ones(2), -1.0),
    lambda lib: lib.nn.functional.softshrink(lib.ones(2, dtype=lib.float64), -0.5),
    lambda lib: lib.nn.functional.glu(lib.ones(2, 3)),
    lambda lib: lib.nn.functional.glu(lib.ones(())),
    lambda lib: lib.nn.functional.prelu(lib.ones(2, 3, 4), lib.ones(2)),
    lambda lib: lib.nn.functional.prelu(lib.ones(3), lib.ones(3)),
    lambda lib: lib.nn.functional.prelu(lib.ones(2, 3), lib.ones(1, 3)),
    lambda lib: lib.nn.functional.rrelu(lib.ones(2), 0.5, 0.1),
]


@pytest.mark.parametrize("call", ACTIVATION_ERRORS)
def test_activation_errors(call):
    same_error(call)


# ---- padding ----------------------------------------------------------------------------------
PADS = [("ZeroPad1d", 2, 3), ("ZeroPad2d", (1, 2, 0, 1), 4), ("ConstantPad1d", ((1, 0), 3.5), 3),
        ("ConstantPad2d", (1, -1.0), 4), ("ReflectionPad1d", (2, 1), 3),
        ("ReflectionPad2d", (1, 2, 2, 0), 4), ("ReplicationPad1d", 3, 2),
        ("ReplicationPad2d", (2, 1, 0, 3), 3), ("CircularPad1d", (1, 2), 3),
        ("CircularPad2d", 1, 4)]


@pytest.mark.parametrize("layout", ["contiguous", "stepped"])
@pytest.mark.parametrize("name, args, ndim", PADS)
def test_padding_layers_match_torch(name, args, ndim, layout, device):
    torch = pytest.importorskip("torch")
    args = args if isinstance(args, tuple) and name.startswith("Constant") else (args,)
    ours, theirs = getattr(nn, name)(*args), getattr(torch.nn, name)(*args)
    assert repr(ours) == repr(theirs)
    x = randn(*(2, 3, 4, 5)[4 - ndim:])
    compare(lambda lib, t: ours(t) if lib is mt else theirs(t), [x], device, layout)


def test_padding_gradcheck(device):
    for layer, shape in ((nn.ReflectionPad2d((1, 2, 0, 1)), (1, 2, 3, 3)),
                         (nn.ReplicationPad1d(2), (2, 3)), (nn.CircularPad2d(1), (2, 2, 3)),
                         (nn.ConstantPad1d((1, -1), 2.0), (1, 2, 3))):
        check_grad(layer, randn(*shape), device=device)


def test_circular_pad_rank_error():
    same_error(lambda lib: lib.nn.CircularPad1d(1)(lib.ones(1, 2, 3, 4)))
    same_error(lambda lib: lib.nn.ReflectionPad1d(1)(lib.ones(1, 2, 3, 4)))


# ---- interpolate, Upsample, pixel shuffle ------------------------------------------------------
INTERPOLATIONS = [
    ((2, 3, 5), {"size": 8}), ((2, 3, 5), {"scale_factor": 2}), ((2, 3, 7), {"size": 3}),
    ((2, 3, 5), {"scale_factor": 1.7}), ((1, 2, 4, 5), {"size": (7, 3)}),
    ((1, 2, 4, 5), {"scale_factor": (1.5, 2.0)}), ((1, 2, 4, 5), {"size": (4, 5)}),
    ((1, 2, 5, 4), {"size": (3, 7), "mode": "nearest-exact"}),
    ((1, 2, 5), {"scale_factor": 2.5, "mode": "nearest-exact"}),
    ((2, 3, 5), {"size": 8, "mode": "linear"}),
    ((2, 3, 5), {"size": 8, "mode": "linear", "align_corners": True}),
    ((2, 3, 6), {"scale_factor": 0.5, "mode": "linear"}),
    ((2, 3, 6), {"size": 1, "mode": "linear", "align_corners": True}),
    ((1, 2, 4, 5), {"size": (7, 3), "mode": "bilinear"}),
    ((1, 2, 4, 5), {"scale_factor": 1.5, "mode": "bilinear", "align_corners": True}),
    ((1, 2, 4, 5), {"scale_factor": 1.5, "mode": "bilinear", "recompute_scale_factor": True}),
    ((1, 1, 3, 4, 2), {"size": (5, 2, 3), "mode": "trilinear"}),
    ((1, 1, 3, 4, 2), {"scale_factor": 2, "mode": "nearest"}),
    ((2, 3, 7), {"size": 3, "mode": "area"}), ((1, 2, 6, 5), {"size": (4, 2), "mode": "area"}),
]


@pytest.mark.parametrize("layout", ["contiguous", "stepped"])
@pytest.mark.parametrize("shape, kwargs", INTERPOLATIONS)
def test_interpolate_matches_torch(shape, kwargs, layout, device):
    compare(lambda lib, x: lib.nn.functional.interpolate(x, **kwargs), [randn(*shape)],
            device, layout)


@pytest.mark.parametrize("kwargs", [{"size": 5, "mode": "linear"},
                                    {"scale_factor": 1.5, "mode": "nearest"},
                                    {"size": 2, "mode": "linear", "align_corners": True}])
def test_interpolate_gradcheck(kwargs, device):
    check_grad(lambda x: F.interpolate(x, **kwargs), randn(1, 2, 3), device=device)


def test_bilinear_gradcheck(device):
    check_grad(lambda x: F.interpolate(x, size=(3, 4), mode="bilinear"), randn(1, 1, 2, 3),
               device=device)


def test_upsample_module(device):
    torch = pytest.importorskip("torch")
    for kwargs in ({"scale_factor": 2}, {"size": (3, 4), "mode": "bilinear",
                                         "align_corners": True}, {"scale_factor": (2, 1.5)}):
        ours, theirs = nn.Upsample(**kwargs), torch.nn.Upsample(**kwargs)
        assert repr(ours) == repr(theirs)
        compare(lambda lib, t: ours(t) if lib is mt else theirs(t), [randn(1, 2, 3, 2)], device)


INTERPOLATE_ERRORS = [
    lambda lib: lib.nn.functional.interpolate(lib.ones(1, 2, 3)),
    lambda lib: lib.nn.functional.interpolate(lib.ones(1, 2, 3), size=2, scale_factor=2),
    lambda lib: lib.nn.functional.interpolate(lib.ones(1, 2, 3), size=(2, 3)),
    lambda lib: lib.nn.functional.interpolate(lib.ones(1, 2, 3), scale_factor=(2, 3)),
    lambda lib: lib.nn.functional.interpolate(lib.ones(1, 2, 3), size=3, mode="bilinear"),
    lambda lib: lib.nn.functional.interpolate(lib.ones(1, 2, 3, 3), size=3, mode="linear"),
    lambda lib: lib.nn.functional.interpolate(lib.ones(1, 2, 3), size=3, mode="foo"),
    lambda lib: lib.nn.functional.interpolate(lib.ones(2, 3), size=3),
    lambda lib: lib.nn.functional.interpolate(lib.ones(1, 2, 3), size=3, align_corners=True),
    lambda lib: lib.nn.functional.interpolate(lib.ones(1, 2, 3), size=0),
    lambda lib: lib.nn.functional.interpolate(lib.ones(1, 2, 3, 3), size=(2, 0)),
    lambda lib: lib.nn.functional.interpolate(lib.ones(1, 2, 3), size=3,
                                              recompute_scale_factor=True),
    lambda lib: lib.nn.functional.pixel_shuffle(lib.ones(1, 3, 2, 2), 2),
    lambda lib: lib.nn.functional.pixel_shuffle(lib.ones(3, 2), 2),
    lambda lib: lib.nn.functional.pixel_shuffle(lib.ones(1, 4, 2, 2), 0),
    lambda lib: lib.nn.functional.pixel_unshuffle(lib.ones(1, 3, 3, 2), 2),
    lambda lib: lib.nn.functional.pixel_unshuffle(lib.ones(1, 3, 4, 3), 2),
]


@pytest.mark.torch_exact
@pytest.mark.parametrize("call", INTERPOLATE_ERRORS)
def test_interpolate_errors(call):
    same_error(call)


@pytest.mark.parametrize("layout", ["contiguous", "stepped"])
def test_pixel_shuffle_matches_torch(layout, device):
    torch = pytest.importorskip("torch")
    compare(lambda lib, x: lib.nn.functional.pixel_shuffle(x, 2), [randn(2, 8, 3, 2)], device,
            layout)
    compare(lambda lib, x: lib.nn.functional.pixel_unshuffle(x, 2), [randn(2, 2, 4, 6)],
            device, layout)
    compare(lambda lib, x: lib.nn.PixelShuffle(3)(x), [randn(9, 1, 2)], device, layout)
    assert repr(nn.PixelShuffle(2)) == repr(torch.nn.PixelShuffle(2))
    assert repr(nn.PixelUnshuffle(3)) == repr(torch.nn.PixelUnshuffle(3))
    x = mt.tensor(randn(1, 3, 4, 6), device=device)
    np.testing.assert_array_equal(value(F.pixel_shuffle(F.pixel_unshuffle(x, 2), 2)), value(x))


# ---- normalization ----------------------------------------------------------------------------
@pytest.mark.parametrize("layout", ["contiguous", "stepped"])
def test_instance_norm_functional(layout, device):
    compare(lambda lib, x, w, b: lib.nn.functional.instance_norm(x, weight=w, bias=b),
            [randn(2, 3, 5), randn(3), randn(3)], device, layout)
    compare(lambda lib, x: lib.nn.functional.instance_norm(x, eps=1e-3), [randn(2, 3, 4, 2)],
            device, layout)


def test_instance_norm_gradcheck(device):
    check_grad(lambda x, w, b: F.instance_norm(x, weight=w, bias=b), randn(2, 2, 3), randn(2),
               randn(2), device=device)


@pytest.mark.parametrize("name, shape", [("InstanceNorm1d", (2, 3, 5)),
                                         ("InstanceNorm1d", (3, 5)),
                                         ("InstanceNorm2d", (2, 3, 4, 2))])
@pytest.mark.torch_exact
def test_instance_norm_module_running_stats(name, shape, device):
    """Training updates the running statistics as torch does; evaluation then uses them."""
    torch = pytest.importorskip("torch")
    kwargs = {"affine": True, "track_running_stats": True, "momentum": 0.3}
    theirs = getattr(torch.nn, name)(3, **kwargs).double()
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor(randn(3)))
        theirs.bias.copy_(torch.tensor(randn(3)))
    ours = getattr(nn, name)(3, **kwargs).to(device).double()
    ours.load_state_dict({k: mt.tensor(v.numpy(), device=device)
                          for k, v in theirs.state_dict().items()})
    assert repr(ours) == repr(theirs)
    x = randn(*shape)
    compare(lambda lib, t: ours(t) if lib is mt else theirs(t), [x], device)
    for buffer in ("running_mean", "running_var", "num_batches_tracked"):
        np.testing.assert_allclose(value(getattr(ours, buffer)),
                                   getattr(theirs, buffer).numpy(), rtol=1e-12)
    ours.eval()
    theirs.eval()
    compare(lambda lib, t: ours(t) if lib is mt else theirs(t), [x], device)


@pytest.mark.torch_exact
def test_instance_norm_defaults_and_repr():
    torch = pytest.importorskip("torch")
    ours, theirs = nn.InstanceNorm2d(4), torch.nn.InstanceNorm2d(4)
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict()) == []


@pytest.mark.parametrize("layout", ["contiguous", "stepped"])
def test_rms_norm(layout, device):
    torch = pytest.importorskip("torch")
    compare(lambda lib, x, w: lib.nn.functional.rms_norm(x, (4,), w),
            [randn(2, 3, 4), randn(4)], device, layout)
    compare(lambda lib, x: lib.nn.functional.rms_norm(x, (3, 4), eps=1e-3), [randn(2, 3, 4)],
            device, layout)
    for args, kwargs in (((4,), {}), (((2, 3),), {"eps": 1e-3, "elementwise_affine": False})):
        ours, theirs = nn.RMSNorm(*args, **kwargs), torch.nn.RMSNorm(*args, **kwargs)
        assert repr(ours) == repr(theirs)
        assert list(ours.state_dict()) == list(theirs.state_dict())
    check_grad(lambda x, w: F.rms_norm(x, (3,), w), randn(2, 3), randn(3), device=device)


def test_rms_norm_float32_default_eps(device):
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((2, 4)).astype(np.float32) * 1e-4
    ours = F.rms_norm(mt.tensor(x, device=device), (4,))
    np.testing.assert_allclose(value(ours), torch.nn.functional.rms_norm(
        torch.tensor(x), (4,)).numpy(), rtol=1e-5)


NORM_ERRORS = [
    lambda lib: lib.nn.functional.instance_norm(lib.ones(2, 3)),
    lambda lib: lib.nn.functional.instance_norm(lib.ones(2, 3, 4), lib.zeros(2), lib.ones(3)),
    lambda lib: lib.nn.functional.instance_norm(lib.ones(2, 3, 4), weight=lib.ones(2)),
    lambda lib: lib.nn.functional.instance_norm(lib.ones(2, 3, 4), use_input_stats=False),
    lambda lib: lib.nn.InstanceNorm1d(3)(lib.ones(1, 2, 3, 4)),
    lambda lib: lib.nn.InstanceNorm2d(3, affine=True)(lib.ones(1, 2, 3, 4)),
    lambda lib: lib.nn.functional.rms_norm(lib.ones(2, 3, 4), (3,)),
    lambda lib: lib.nn.functional.rms_norm(lib.ones(2, 3, 4), (2, 4)),
    lambda lib: lib.nn.functional.rms_norm(lib.ones(2, 3, 4), (3,), lib.ones(2)),
]


@pytest.mark.parametrize("call", NORM_ERRORS)
def test_norm_errors(call):
    same_error(call)


# ---- pooling ----------------------------------------------------------------------------------
POOLS = [
    lambda lib, x: lib.nn.functional.max_pool1d(x, 3, 2, 1),
    lambda lib, x: lib.nn.functional.max_pool1d(x, 2, dilation=2, ceil_mode=True,
                                                return_indices=True),
    lambda lib, x: lib.nn.functional.avg_pool1d(x, 3, 2, 1, ceil_mode=True,
                                                count_include_pad=False),
    lambda lib, x: lib.nn.functional.avg_pool1d(x, 2),
    lambda lib, x: lib.nn.functional.adaptive_avg_pool1d(x, 3),
    lambda lib, x: lib.nn.functional.adaptive_avg_pool1d(x[0], (4,)),
    lambda lib, x: lib.nn.MaxPool1d(3, 1, 1, return_indices=True)(x),
    lambda lib, x: lib.nn.AvgPool1d(3, 2)(x),
    lambda lib, x: lib.nn.AdaptiveAvgPool1d(2)(x),
]


@pytest.mark.parametrize("layout", ["contiguous", "stepped"])
@pytest.mark.parametrize("index", range(len(POOLS)))
def test_pool1d_matches_torch(index, layout, device):
    compare(POOLS[index], [randn(2, 3, 7)], device, layout)


ADAPTIVE_MAX = [(3, 2), (2, 2), 1, (None, 3), (4, 5)]


@pytest.mark.parametrize("layout", ["contiguous", "stepped"])
@pytest.mark.parametrize("size", ADAPTIVE_MAX)
def test_adaptive_max_pool2d_matches_torch(size, layout, device):
    compare(lambda lib, x: lib.nn.functional.adaptive_max_pool2d(x, size, return_indices=True),
            [randn(2, 3, 4, 6)], device, layout)
    compare(lambda lib, x: lib.nn.AdaptiveMaxPool2d(size)(x), [randn(3, 5, 4)], device, layout)


def test_pooling_gradcheck(device):
    x = randn(1, 2, 5)
    check_grad(lambda t: F.max_pool1d(t, 2, 1), x, device=device)
    check_grad(lambda t: F.avg_pool1d(t, 3, 2, 1), x, device=device)
    check_grad(lambda t: F.adaptive_avg_pool1d(t, 3), x, device=device)
    check_grad(lambda t: F.adaptive_max_pool2d(t, (2, 3)), randn(1, 3, 4), device=device)


def test_pooling_reprs():
    torch = pytest.importorskip("torch")
    for name, args in (("MaxPool1d", (2,)), ("MaxPool1d", (3, 2, 1, 2, True, True)),
                       ("AvgPool1d", (2,)), ("AvgPool1d", (3, 2, 1, True, False)),
                       ("AdaptiveAvgPool1d", (3,)), ("AdaptiveMaxPool2d", ((2, None),)),
                       ("AdaptiveMaxPool2d", (2, True))):
        assert repr(getattr(nn, name)(*args)) == repr(getattr(torch.nn, name)(*args))


POOL_ERRORS = [
    lambda lib: lib.nn.functional.max_pool1d(lib.ones(4), 2),
    lambda lib: lib.nn.functional.max_pool1d(lib.ones(2, 3, 4), 5),
    lambda lib: lib.nn.functional.max_pool1d(lib.ones(2, 3, 4), 2, padding=2),
    lambda lib: lib.nn.functional.max_pool1d(lib.ones(2, 3, 4), 2, stride=0),
    lambda lib: lib.nn.functional.max_pool1d(lib.ones(2, 3, 4), 0),
    lambda lib: lib.nn.functional.max_pool1d(lib.ones(2, 3, 4), (2, 2)),
    lambda lib: lib.nn.functional.avg_pool1d(lib.ones(2, 3, 4), 5),
    lambda lib: lib.nn.functional.avg_pool1d(lib.ones(4), 2),
    lambda lib: lib.nn.functional.avg_pool1d(lib.ones(2, 3, 4), 2, padding=2),
    lambda lib: lib.nn.functional.adaptive_avg_pool1d(lib.ones(2, 3, 4), (2, 2)),
    lambda lib: lib.nn.functional.adaptive_avg_pool1d(lib.ones(4), 2),
    lambda lib: lib.nn.functional.adaptive_max_pool2d(lib.ones(3, 4), 2),
    lambda lib: lib.nn.functional.adaptive_max_pool2d(lib.ones(3, 0, 4), 2),
]


@pytest.mark.parametrize("call", POOL_ERRORS)
def test_pool_errors(call):
    same_error(call)


# ---- channel dropout, Fold/Unfold, distances --------------------------------------------------
@pytest.mark.parametrize("fn, shape", [(F.dropout1d, (4, 8, 5)), (F.dropout1d, (8, 5)),
                                       (F.dropout2d, (4, 8, 3, 2))])
def test_channel_dropout(fn, shape, device):
    """Each channel is zeroed whole or scaled by 1/(1 - p); evaluation is the identity."""
    x = mt.tensor(RNG.uniform(1.0, 2.0, shape), device=device, requires_grad=True)
    out = fn(x, 0.5)
    channels = value(out / x).reshape(-1, shape[-1] * (shape[-2] if len(shape) == 4 else 1))
    ratios = channels[:, 0]
    assert np.allclose(channels, ratios[:, None]) and set(np.round(ratios, 12)) == {0.0, 2.0}
    out.sum().backward()
    np.testing.assert_allclose(value(x.grad), value(out / x))
    assert fn(x, 0.5, training=False) is x or np.array_equal(value(fn(x, 0.5, False)), value(x))
    np.testing.assert_array_equal(value(fn(x, 1.0)), 0.0)


def test_channel_dropout_modules_and_inplace(device):
    torch = pytest.importorskip("torch")
    assert repr(nn.Dropout1d()) == repr(torch.nn.Dropout1d())
    assert repr(nn.Dropout2d(0.3, True)) == repr(torch.nn.Dropout2d(0.3, True))
    x = mt.tensor(np.ones((2, 6, 3)), device=device)
    out = nn.Dropout1d(0.5, inplace=True)(x)
    assert out is x and set(np.unique(value(x))) <= {0.0, 2.0}
    unbatched = mt.tensor(np.ones((6, 3)), device=device)
    assert F.dropout1d(unbatched, 0.5, inplace=True) is unbatched
    images = mt.tensor(np.ones((2, 6, 3, 2)), device=device)
    module = nn.Dropout2d(0.5).eval()
    np.testing.assert_array_equal(value(module(images)), value(images))


DROPOUT_ERRORS = [
    lambda lib: lib.nn.functional.dropout1d(lib.ones(3), 0.5),
    lambda lib: lib.nn.functional.dropout1d(lib.ones(1, 2, 3, 4), 0.5),
    lambda lib: lib.nn.functional.dropout2d(lib.ones(1, 2, 3, 4), 1.5),
    lambda lib: lib.nn.Dropout2d(-0.1),
]


@pytest.mark.parametrize("call", DROPOUT_ERRORS)
def test_dropout_errors(call):
    same_error(call)


def test_dropout2d_warns_for_3d_input():
    with pytest.warns(UserWarning, match="Received a 3D input to dropout2d"):
        F.dropout2d(mt.ones(2, 3, 4), 0.5)


def test_fold_unfold_modules(device):
    torch = pytest.importorskip("torch")
    pairs = [(nn.Unfold((2, 3), 1, 1, 2), torch.nn.Unfold((2, 3), 1, 1, 2)),
             (nn.Fold((4, 5), 2), torch.nn.Fold((4, 5), 2))]
    arrays = [randn(2, 3, 4, 5), randn(2, 12, 12)]
    for (ours, theirs), x in zip(pairs, arrays):
        assert repr(ours) == repr(theirs)
        compare(lambda lib, t: ours(t) if lib is mt else theirs(t), [x], device)


@pytest.mark.parametrize("layout", ["contiguous", "stepped"])
def test_distances_match_torch(layout, device):
    torch = pytest.importorskip("torch")
    a, b = randn(3, 4), randn(3, 4)
    compare(lambda lib, x, y: lib.nn.functional.pairwise_distance(x, y), [a, b], device, layout)
    compare(lambda lib, x, y: lib.nn.functional.pairwise_distance(x, y, 1.0, 1e-3, True),
            [a, b[0]], device, layout)
    compare(lambda lib, x, y: lib.nn.PairwiseDistance(3.0)(x, y), [a, b], device, layout)
    compare(lambda lib, x, y: lib.nn.CosineSimilarity(0)(x, y), [a, b], device, layout)
    compare(lambda lib, x, y: lib.nn.functional.pairwise_distance(x, y), [a[0], b[0]], device)
    assert repr(nn.PairwiseDistance()) == repr(torch.nn.PairwiseDistance())
    assert repr(nn.CosineSimilarity()) == repr(torch.nn.CosineSimilarity())
    check_grad(lambda x, y: F.pairwise_distance(x, y), randn(2, 3), randn(2, 3), device=device)


# ---- losses -----------------------------------------------------------------------------------
def _signs(*shape):
    return np.where(RNG.standard_normal(shape) > 0, 1.0, -1.0)


LOSSES = {
    "margin_ranking": (lambda lib, a, b, y, **k: lib.nn.functional.margin_ranking_loss(
        a, b, y, margin=0.3, **k), lambda: [randn(5), randn(5), _signs(5)], 2),
    "hinge_embedding": (lambda lib, x, y, **k: lib.nn.functional.hinge_embedding_loss(
        x, y, margin=0.8, **k), lambda: [randn(3, 4), _signs(3, 4)], 1),
    "soft_margin": (lambda lib, x, y, **k: lib.nn.functional.soft_margin_loss(x, y, **k),
                    lambda: [randn(3, 4), _signs(3, 4)], 1),
    "cosine_embedding": (lambda lib, a, b, y, **k: lib.nn.functional.cosine_embedding_loss(
        a, b, y, margin=0.2, **k), lambda: [randn(4, 3), randn(4, 3), _signs(4)], 2),
    "cosine_embedding_1d": (lambda lib, a, b, y, **k: lib.nn.functional.cosine_embedding_loss(
        a, b, y, **k), lambda: [randn(3), randn(3), np.asarray(-1.0)], 2),
    "triplet_margin": (lambda lib, a, p, n, **k: lib.nn.functional.triplet_margin_loss(
        a, p, n, margin=2.0, **k), lambda: [randn(4, 3), randn(4, 3), randn(4, 3)], 3),
    "triplet_margin_swap": (lambda lib, a, p, n, **k: lib.nn.functional.triplet_margin_loss(
        a, p, n, p=1, swap=True, **k), lambda: [randn(4, 3), randn(4, 3), randn(4, 3)], 3),
    "poisson_nll": (lambda lib, x, y, **k: lib.nn.functional.poisson_nll_loss(x, y, **k),
                    lambda: [randn(3, 4), RNG.poisson(2.0, (3, 4)).astype(float)], 2),
    "poisson_nll_full": (lambda lib, x, y, **k: lib.nn.functional.poisson_nll_loss(
        x, y, log_input=False, full=True, **k),
        # torch's target gradient is NaN where target = 0 (0·log 0 in its masked branch)
        lambda: [RNG.uniform(0.5, 3, (3, 4)), RNG.poisson(2.0, (3, 4)).astype(float)], 1),
    "gaussian_nll": (lambda lib, x, y, v, **k: lib.nn.functional.gaussian_nll_loss(
        x, y, v, **k), lambda: [randn(3, 4), randn(3, 4), RNG.uniform(0.1, 2, (3, 4))], 3),
    "gaussian_nll_short_var": (lambda lib, x, y, v, **k: lib.nn.functional.gaussian_nll_loss(
        x, y, v, full=True, **k), lambda: [randn(3, 4), randn(3, 4), RNG.uniform(0.1, 2, 3)], 3),
    "multilabel_soft_margin": (lambda lib, x, y, w, **k:
                               lib.nn.functional.multilabel_soft_margin_loss(x, y, w, **k),
                               lambda: [randn(3, 4), (RNG.random((3, 4)) > 0.5) * 1.0,
                                        RNG.random(4)], 1),
    "multi_margin": (lambda lib, x, y, **k: lib.nn.functional.multi_margin_loss(x, y, **k),
                     lambda: [randn(4, 3), np.array([0, 2, 1, 2])], 1),
    "multi_margin_p2_weight": (lambda lib, x, y, w, **k: lib.nn.functional.multi_margin_loss(
        x, y, p=2, margin=0.7, weight=w, **k),
        lambda: [randn(4, 3), np.array([0, 2, 1, 2]), RNG.random(3)], 1),
    "multi_margin_1d": (lambda lib, x, y, **k: lib.nn.functional.multi_margin_loss(x, y, **k),
                        lambda: [randn(3), np.asarray(1)], 1),
}


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("name", sorted(LOSSES))
def test_loss_matches_torch(name, reduction, device):
    fn, make, differentiable = LOSSES[name]
    arrays = make()
    compare(lambda lib, *t: fn(lib, *t, reduction=reduction), arrays, device,
            grad_args=differentiable)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_loss_stepped_and_gradcheck(name, device):
    fn, make, differentiable = LOSSES[name]
    arrays = make()
    compare(lambda lib, *t: fn(lib, *t, reduction="sum"), arrays, device, "stepped",
            differentiable)
    inputs = [mt.tensor(a, device=device, requires_grad=i < differentiable)
              for i, a in enumerate(arrays)]
    assert gradcheck(lambda *t: fn(mt, *t, *inputs[differentiable:]),
                     tuple(inputs[:differentiable]))


LOSS_MODULES = [
    ("MarginRankingLoss", {"margin": 0.5}, "margin_ranking"),
    ("HingeEmbeddingLoss", {}, "hinge_embedding"), ("SoftMarginLoss", {}, "soft_margin"),
    ("CosineEmbeddingLoss", {"margin": 0.1}, "cosine_embedding"),
    ("TripletMarginLoss", {"swap": True, "reduction": "sum"}, "triplet_margin"),
    ("PoissonNLLLoss", {"log_input": False, "eps": 1e-3}, "poisson_nll_full"),
    ("GaussianNLLLoss", {"full": True}, "gaussian_nll"),
    ("MultiLabelSoftMarginLoss", {"reduction": "none"}, "soft_margin"),
    ("MultiMarginLoss", {"p": 2}, "multi_margin"),
]


@pytest.mark.parametrize("name, kwargs, data", LOSS_MODULES)
def test_loss_modules_match_torch(name, kwargs, data, device):
    torch = pytest.importorskip("torch")
    ours, theirs = getattr(nn, name)(**kwargs), getattr(torch.nn, name)(**kwargs)
    assert repr(ours) == repr(theirs)
    arrays = LOSSES[data][1]()
    if data == "poisson_nll_full":
        arrays[0] = np.abs(arrays[0])
    compare(lambda lib, *t: ours(*t) if lib is mt else theirs(*t), arrays, device,
            grad_args=LOSSES[data][2])


def test_weighted_loss_modules_keep_weight_buffer(device):
    torch = pytest.importorskip("torch")
    w = RNG.random(3)
    ours = nn.MultiMarginLoss(weight=mt.tensor(w)).to(device)
    theirs = torch.nn.MultiMarginLoss(weight=torch.tensor(w))
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["weight"]
    compare(lambda lib, x, y: ours(x, y) if lib is mt else theirs(x, y),
            [randn(4, 3), np.array([0, 2, 1, 2])], device)


LOSS_ERRORS = [
    lambda lib: lib.nn.functional.margin_ranking_loss(lib.ones(3), lib.ones(3),
                                                      lib.ones(3, 1)),
    lambda lib: lib.nn.functional.cosine_embedding_loss(lib.ones(3, 2), lib.ones(3, 2),
                                                        lib.ones(3, 1)),
    lambda lib: lib.nn.functional.cosine_embedding_loss(lib.ones(3, 2), lib.ones(3, 2),
                                                        lib.tensor(1.0)),
    lambda lib: lib.nn.functional.cosine_embedding_loss(lib.ones(3), lib.ones(3), lib.ones(3)),
    lambda lib: lib.nn.functional.triplet_margin_loss(lib.ones(3, 2), lib.ones(2),
                                                      lib.ones(3, 2)),
    lambda lib: lib.nn.functional.triplet_margin_loss(lib.ones(3, 2), lib.ones(3, 2),
                                                      lib.ones(3, 2), margin=-1),
    lambda lib: lib.nn.TripletMarginLoss(margin=0),
    lambda lib: lib.nn.functional.multi_margin_loss(lib.ones(3, 2), lib.tensor([0, 1, 1]), p=3),
    lambda lib: lib.nn.MultiMarginLoss(p=3),
    lambda lib: lib.nn.functional.multi_margin_loss(lib.ones(3, 2), lib.tensor([0, 1, 2])),
    lambda lib: lib.nn.functional.multi_margin_loss(lib.ones(3, 2), lib.tensor([0, 1])),
    lambda lib: lib.nn.functional.multi_margin_loss(lib.ones(3, 2, 2), lib.tensor([0, 1, 1])),
    lambda lib: lib.nn.functional.multi_margin_loss(lib.ones(3, 2), lib.tensor([0, 1, 1]),
                                                    weight=lib.ones(3)),
    lambda lib: lib.nn.functional.multi_margin_loss(lib.ones(3, 2), lib.tensor([0.0, 1, 1])),
    lambda lib: lib.nn.functional.gaussian_nll_loss(lib.ones(3, 2), lib.ones(3, 2),
                                                    lib.ones(3, 3)),
    lambda lib: lib.nn.functional.gaussian_nll_loss(lib.ones(3, 2), lib.ones(3, 2),
                                                    -lib.ones(3, 2)),
    lambda lib: lib.nn.functional.gaussian_nll_loss(lib.ones(3, 2), lib.ones(3, 2), -1.0),
    lambda lib: lib.nn.functional.gaussian_nll_loss(lib.ones(2), lib.ones(2), lib.ones(2),
                                                    reduction="x"),
    lambda lib: lib.nn.functional.poisson_nll_loss(lib.ones(2), lib.ones(2), reduction="x"),
    lambda lib: lib.nn.functional.multilabel_soft_margin_loss(lib.ones(2, 3), lib.ones(2, 3),
                                                              reduction="x"),
    lambda lib: lib.nn.functional.soft_margin_loss(lib.ones(2), lib.ones(2), reduction="x"),
]


@pytest.mark.torch_exact
@pytest.mark.parametrize("call", LOSS_ERRORS)
def test_loss_errors(call):
    same_error(call)
