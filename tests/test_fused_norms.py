"""The fused layer_norm / group_norm / instance_norm / rms_norm / training batch_norm nodes (functions/normalization.py,
the norm_rows kernels) against the compositions of Tensor ops they replace (kept in
nn/functional/normalization.py as `_composed_*`), against torch, and through gradcheck and
gradgradcheck."""
import numpy as np
import pytest

import minitorch as mt
import minitorch.nn.functional as F
from minitorch.tensor import wrap
from minitorch.nn.functional import normalization as N

F64_EPS = float(np.finfo(np.float64).eps)

# (name, fused, composed, input shape, parameter shape or None)
CASES = [
    ("layer_norm", lambda x, w, b: F.layer_norm(x, (3, 4), w, b),
     lambda x, w, b: N._composed_layer_norm(x, (3, 4), w, b, 1e-5), (2, 5, 3, 4), (3, 4)),
    ("layer_norm_1d", lambda x, w, b: F.layer_norm(x, (11,), w, b, eps=1e-3),
     lambda x, w, b: N._composed_layer_norm(x, (11,), w, b, 1e-3), (7, 11), (11,)),
    ("group_norm", lambda x, w, b: F.group_norm(x, 2, w, b),
     lambda x, w, b: N._composed_group_norm(x, 2, w, b, 1e-5), (3, 4, 2, 3), (4,)),
    ("group_norm_2d", lambda x, w, b: F.group_norm(x, 3, w, b),
     lambda x, w, b: N._composed_group_norm(x, 3, w, b, 1e-5), (4, 6), (6,)),
    ("instance_norm", lambda x, w, b: F.instance_norm(x, weight=w, bias=b),
     lambda x, w, b: N._composed_instance_norm(x, None, None, w, b, True, 0.1, 1e-5),
     (3, 4, 2, 3), (4,)),
    ("instance_norm_1d", lambda x, w, b: F.instance_norm(x, weight=w, bias=b),
     lambda x, w, b: N._composed_instance_norm(x, None, None, w, b, True, 0.1, 1e-5),
     (2, 3, 9), (3,)),
    ("batch_norm", lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
     lambda x, w, b: N._composed_batch_norm(x, None, None, w, b, True, 0.1, 1e-5),
     (3, 4, 2, 3), (4,)),
    ("batch_norm_1d", lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
     lambda x, w, b: N._composed_batch_norm(x, None, None, w, b, True, 0.1, 1e-5),
     (5, 3), (3,)),
    ("rms_norm", lambda x, w, b: F.rms_norm(x, (4,), w),
     lambda x, w, b: N._composed_rms_norm(x, (4,), w, F64_EPS), (3, 5, 4), (4,)),
]
IDS = [case[0] for case in CASES]


def _inputs(shape, pshape, affine, device, seed=0):
    rng = np.random.default_rng(seed)

    def make(s):
        return mt.tensor(rng.standard_normal(s) + 0.5, dtype=mt.float64, device=device,
                         requires_grad=True)
    x = make(shape)
    w, b = (make(pshape), make(pshape)) if affine else (None, None)
    return x, w, b


def _node_names(t, depth=4):
    """The class names of the nodes within `depth` steps of t's grad_fn (name() is torch's)."""
    names, frontier = [], [t.grad_fn]
    for _ in range(depth):
        frontier = [n for n in frontier if n is not None and hasattr(n, "name")]
        names += [type(n).__name__ for n in frontier]
        frontier = [edge[0] for n in frontier for edge in n.next_functions]
    return " ".join(names)


def _present(*ts):
    return [t for t in ts if t is not None]


@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("name, fused, composed, shape, pshape", CASES, ids=IDS)
def test_fused_matches_the_composition_in_float64(name, fused, composed, shape, pshape, affine,
                                                  device):
    x, w, b = _inputs(shape, pshape, affine, device)
    y, want = fused(x, w, b), composed(x, w, b)
    assert "RowNorm" in _node_names(y)
    np.testing.assert_allclose(y.detach().cpu().numpy(), want.detach().cpu().numpy(), rtol=1e-10,
                               atol=1e-10)
    g = mt.tensor(np.random.default_rng(1).standard_normal(shape), dtype=mt.float64,
                  device=device)
    inputs = _present(x, w, None if name == "rms_norm" else b)
    got = mt.autograd.grad(y, inputs, g)
    expected = mt.autograd.grad(want, inputs, g)
    for a, e in zip(got, expected):
        np.testing.assert_allclose(a.cpu().numpy(), e.cpu().numpy(), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("name, fused, composed, shape, pshape", CASES, ids=IDS)
def test_gradcheck_and_gradgradcheck(name, fused, composed, shape, pshape):
    x, w, b = _inputs(shape, pshape, True, "cpu", seed=2)
    if name == "rms_norm":
        b = None
    args = tuple(_present(x, w, b))

    def fn(*a):
        return fused(a[0], a[1], a[2] if len(a) > 2 else None)
    assert mt.autograd.gradcheck(fn, args)
    assert mt.autograd.gradgradcheck(fn, args)
    assert mt.autograd.gradgradcheck(lambda t: fused(t, None, None), (x,))


@pytest.mark.parametrize("shape", [(6, 5, 40), (2, 3, 1), (1, 4, 7)])
def test_segmented_rows_equal_gathered_rows(device, shape):
    """norm_rows / norm_rows_backward reading batch norm's channel rows of an (N, C, S) array
    in place (segments = N) give the kernels' results on the gathered (C, N·S) rows, to the
    last bit but for the order the pieces' sums are added in."""
    n, c, s = shape
    rng = np.random.default_rng(7)
    x = mt.tensor(rng.standard_normal(shape) * 3 + 1, device=device)._data
    g = mt.tensor(rng.standard_normal(shape), device=device)._data
    w, b = (mt.tensor(rng.standard_normal(c), device=device)._data for _ in range(2))
    backend = x.backend

    def run(xs, gs, segments):
        y, mean, rstd = xs._new(xs.shape), xs._new((c,)), xs._new((c,))
        backend.norm_rows(xs.flat(), w.flat(), b.flat(), y.buffer, mean.buffer, rstd.buffer,
                          n * s, n * s, c, 1e-5, False, segments)
        dx, dw, db = xs._new(xs.shape), xs._new((c,)), xs._new((c,))
        backend.norm_rows_backward(gs.flat(), xs.flat(), mean.buffer, rstd.buffer, w.flat(),
                                   dx.buffer, dw.buffer, db.buffer, n * s, n * s, c, False,
                                   segments)
        return y, mean, rstd, dx, dw, db

    def rows(nd):
        return nd.permute((1, 0, 2)).compact()
    seg = run(x, g, n)
    gathered = run(rows(x), rows(g), 1)
    for got, want in zip(seg, gathered):
        got = rows(got) if got.ndim == 3 else got
        np.testing.assert_allclose(wrap(got).cpu().numpy(), wrap(want).cpu().numpy(),
                                   rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match="segments"):
        backend.norm_rows(x.flat(), None, None, x._new(x.shape).buffer, x._new((c,)).buffer,
                          x._new((c,)).buffer, n * s, 1, c, 1e-5, False, max(n, 2))


def test_only_some_inputs_need_gradients():
    x, w, b = _inputs((4, 6), (6,), True, "cpu", seed=3)
    g = mt.randn(4, 6, dtype=mt.float64)
    for needs in [(True, False, False), (False, True, False), (False, False, True),
                  (False, True, True)]:
        xs = [t.detach().requires_grad_(need) for t, need in zip((x, w, b), needs)]
        y = F.layer_norm(*xs[:1], (6,), *xs[1:])
        want = N._composed_layer_norm(xs[0], (6,), xs[1], xs[2], 1e-5)
        wanted = [t for t in xs if t.requires_grad]
        for a, e in zip(mt.autograd.grad(y, wanted, g), mt.autograd.grad(want, wanted, g)):
            np.testing.assert_allclose(a.cpu().numpy(), e.cpu().numpy(), rtol=1e-10, atol=1e-10)
    y = F.group_norm(x.detach().reshape(4, 6, 1), 2, None, b)     # a bias without a weight
    np.testing.assert_allclose(mt.autograd.grad(y.sum(), [b])[0].numpy(), np.full(6, 4.0))


def test_non_contiguous_input_and_threads(device):
    rng = np.random.default_rng(4)
    base = mt.tensor(rng.standard_normal((64, 300)), dtype=mt.float32, device=device)
    x = base.t().requires_grad_()      # (300, 64), strided
    w = mt.tensor(rng.standard_normal(64), dtype=mt.float32, device=device, requires_grad=True)
    results = []
    for threads in (1, 2):
        mt.set_num_threads(threads)
        try:
            y = F.layer_norm(x, (64,), w)
            results.append((y.detach().cpu().numpy().copy(), *(t.cpu().numpy() for t in mt.autograd.grad(
                (y * y).sum(), [x, w]))))
        finally:
            mt.set_num_threads(2)
    want = N._composed_layer_norm(x.double(), (64,), w.double(), None, 1e-5)
    np.testing.assert_allclose(results[0][0], want.detach().cpu().numpy(), rtol=1e-5, atol=1e-5)
    for one, two in zip(*results):
        np.testing.assert_allclose(one, two, rtol=1e-5, atol=1e-4)


def test_float32_statistics_are_two_pass():
    """A large common offset: a one-pass E[x²] - E[x]² in float32 would lose every digit."""
    rng = np.random.default_rng(5)
    values = 1000.0 + rng.standard_normal((8, 4096))
    y = F.layer_norm(mt.tensor(values, dtype=mt.float32), (4096,))
    exact = (values - values.mean(1, keepdims=True)) / np.sqrt(values.var(1, keepdims=True)
                                                              + 1e-5)
    np.testing.assert_allclose(y.numpy(), exact, rtol=0, atol=2e-4)


def test_mixed_dtypes_and_empty_inputs_keep_the_composition():
    x = mt.randn(3, 4)
    y = F.layer_norm(x, (4,), mt.ones(4, dtype=mt.float64))
    assert y.grad_fn is None and y.dtype is mt.float64
    assert F.layer_norm(mt.randn(0, 4), (4,)).shape == (0, 4)


def test_instance_norm_running_statistics():
    x = mt.randn(3, 4, 5, 5, dtype=mt.float64)
    stats = [(mt.zeros(4, dtype=mt.float64), mt.ones(4, dtype=mt.float64)) for _ in range(2)]
    y = F.instance_norm(x, *stats[0], momentum=0.3)
    want = N._composed_instance_norm(x, *stats[1], None, None, True, 0.3, 1e-5)
    np.testing.assert_allclose(y.numpy(), want.numpy(), rtol=1e-12, atol=1e-12)
    for a, e in zip(stats[0], stats[1]):
        np.testing.assert_allclose(a.cpu().numpy(), e.cpu().numpy(), rtol=1e-12, atol=1e-12)


TORCH_CASES = [("layer_norm", (16, 3, 40), (3, 40)), ("group_norm", (4, 8, 5, 6), (8,)),
               ("instance_norm", (4, 8, 5, 6), (8,)), ("rms_norm", (6, 33), (33,))]


@pytest.mark.parametrize("name, shape, pshape", TORCH_CASES, ids=[c[0] for c in TORCH_CASES])
def test_float32_matches_torch(name, shape, pshape):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(6)
    xv, gv = rng.standard_normal(shape) * 3 + 1, rng.standard_normal(shape)
    wv, bv = rng.standard_normal(pshape), rng.standard_normal(pshape)
    calls = {"layer_norm": lambda f, x, w, b: f.layer_norm(x, pshape, w, b),
             "group_norm": lambda f, x, w, b: f.group_norm(x, 4, w, b),
             "instance_norm": lambda f, x, w, b: f.instance_norm(x, weight=w, bias=b),
             "rms_norm": lambda f, x, w, b: f.rms_norm(x, pshape, w)}
    results = []
    for lib, f in ((mt, F), (torch, torch.nn.functional)):
        x, w, b = (lib.tensor(v.astype(np.float32), requires_grad=True) for v in (xv, wv, bv))
        y = calls[name](f, x, w, b)
        y.backward(lib.tensor(gv.astype(np.float32)))
        grads = [x.grad, w.grad] + ([b.grad] if name != "rms_norm" else [])
        results.append([np.asarray(t.detach().cpu().numpy()) for t in [y] + grads])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)


def test_fused_batch_norm_updates_running_stats_as_composed(device):
    rng = np.random.default_rng(3)
    x = mt.tensor(rng.standard_normal((6, 3, 2, 2)), dtype=mt.float64, device=device)
    stats = [[mt.zeros(3, dtype=mt.float64, device=device),
              mt.ones(3, dtype=mt.float64, device=device)] for _ in range(2)]
    fused = F.batch_norm(x, *stats[0], training=True, momentum=0.3)
    composed = N._composed_batch_norm(x, *stats[1], None, None, True, 0.3, 1e-5)
    np.testing.assert_allclose(fused.cpu().numpy(), composed.cpu().numpy(), atol=1e-12)
    assert fused.is_contiguous()
    for ours, reference in zip(stats[0], stats[1]):
        np.testing.assert_allclose(ours.cpu().numpy(), reference.cpu().numpy(), atol=1e-14)
