"""The fused recurrence (functions/recurrent.py's RecurrentLayer: one GEMM and one fused step kernel
per time step) against its composed reference (the same recurrence as Tensor ops): outputs,
final states and every gradient in float64 to 1e-10, for each mode, both directions, packed
sequences and empty batches; gradcheck and gradgradcheck of the fused node; the layers and cells
that use it against torch."""
import numpy as np
import pytest

import minitorch as mt
from minitorch.functions.recurrent import GATES, RecurrentCell, RecurrentLayer, composed_layer

MODES = ["RNN_TANH", "RNN_RELU", "LSTM", "GRU"]


def _inputs(mode, device, steps=5, batch=3, hidden=4, bias=True, batch_sizes=None, seed=0):
    """gi, h0, c0 (LSTM), W_hh, b_hh as float64 leaves on `device`."""
    rng = np.random.default_rng(seed)
    rows = sum(batch_sizes) if batch_sizes else steps * batch
    shape = (rows,) if batch_sizes else (steps, batch)
    width = GATES[mode] * hidden

    def leaf(*size):
        return mt.tensor(rng.normal(size=size), dtype=mt.float64, device=device,
                         requires_grad=True)
    gi = leaf(*shape, width)
    h0 = leaf(batch, hidden)
    c0 = leaf(batch, hidden) if mode == "LSTM" else None
    w_hh = leaf(width, hidden)
    b_hh = leaf(width) if bias else None
    return gi, h0, c0, w_hh, b_hh


def _run_both(mode, inputs, batch_sizes, reverse):
    gi, h0, c0, w_hh, b_hh = inputs
    fused = RecurrentLayer.apply(mode, gi, h0, c0, w_hh, b_hh, batch_sizes, reverse)
    state = (h0,) if c0 is None else (h0, c0)
    out, final = composed_layer(mode, gi, state, w_hh, b_hh, batch_sizes, reverse)
    return list(fused), [out, *final]


def _grads(outputs, inputs, seeds):
    present = [t for t in inputs if t is not None]
    return mt.autograd.grad(outputs, present, seeds, allow_unused=True)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("packed", [None, [3, 3, 2, 1]])
@pytest.mark.parametrize("bias", [True, False])
def test_fused_matches_composed(device, mode, reverse, packed, bias):
    inputs = _inputs(mode, device, steps=4, batch=3, bias=bias, batch_sizes=packed)
    fused, composed = _run_both(mode, inputs, packed, reverse)
    for f, c in zip(fused, composed):
        assert f.shape == c.shape and f.dtype == c.dtype
        np.testing.assert_allclose(f.detach().cpu().numpy(), c.detach().cpu().numpy(),
                                   rtol=0, atol=1e-10)
    rng = np.random.default_rng(1)
    seeds = [mt.tensor(rng.normal(size=f.shape), dtype=mt.float64, device=device)
             for f in fused]
    for gf, gc in zip(_grads(fused, inputs, seeds), _grads(composed, inputs, seeds)):
        np.testing.assert_allclose(gf.cpu().numpy(), gc.cpu().numpy(), rtol=0, atol=1e-10)


@pytest.mark.parametrize("mode", MODES)
def test_fused_gradcheck_and_gradgradcheck(device, mode):
    gi, h0, c0, w_hh, b_hh = _inputs(mode, device, steps=3, batch=2, hidden=3)
    tensors = tuple(t for t in (gi, h0, c0, w_hh, b_hh) if t is not None)

    def run(*args):
        it = iter(args)
        gi, h0 = next(it), next(it)
        c0 = next(it) if mode == "LSTM" else None
        w, b = next(it), next(it)
        return RecurrentLayer.apply(mode, gi, h0, c0, w, b, None, False)
    assert mt.autograd.gradcheck(run, tensors)
    assert mt.autograd.gradgradcheck(run, tensors)


@pytest.mark.parametrize("mode", MODES)
def test_empty_batch_and_partial_gradients(device, mode):
    gi, h0, c0, w_hh, b_hh = _inputs(mode, device, steps=3, batch=0)
    fused = RecurrentLayer.apply(mode, gi, h0, c0, w_hh, b_hh, None, False)
    assert fused[0].shape == (3, 0, 4)
    fused[0].sum().backward()
    assert w_hh.grad.shape == w_hh.shape and float(w_hh.grad.abs().sum()) == 0
    # only the weight requires grad: the other inputs get nothing, values as composed
    gi, h0, c0, w_hh, b_hh = _inputs(mode, device)
    for t in (gi, h0, c0, b_hh):
        if t is not None:
            t.requires_grad_(False)
    fused, composed = _run_both(mode, (gi, h0, c0, w_hh, b_hh), None, False)
    (gf,) = mt.autograd.grad(fused[0].sum(), [w_hh])
    (gc,) = mt.autograd.grad(composed[0].sum(), [w_hh])
    np.testing.assert_allclose(gf.cpu().numpy(), gc.cpu().numpy(), atol=1e-10)


def test_no_grad_forward_keeps_nothing(device):
    gi, h0, c0, w_hh, b_hh = _inputs("LSTM", device)
    with mt.no_grad():
        out, h, c = RecurrentLayer.apply("LSTM", gi, h0, c0, w_hh, b_hh, None, False)
    assert out.grad_fn is None and not out.requires_grad
    state = (h0, c0)
    ref, (rh, rc) = composed_layer("LSTM", gi, state, w_hh, b_hh)
    np.testing.assert_allclose(c.cpu().numpy(), rc.detach().cpu().numpy(), atol=1e-12)


def test_relu_nan_passes_through(device):
    gi, h0, _, w_hh, b_hh = _inputs("RNN_RELU", device, steps=2, batch=1, hidden=2)
    gi = gi.detach().clone()
    gi[0, 0, 0] = float("nan")
    out, _ = RecurrentLayer.apply("RNN_RELU", gi, h0, None, w_hh, b_hh, None, False)
    assert np.isnan(out[0, 0, 0].item())


torch = pytest.importorskip("torch", reason="torch comparisons need torch installed")


def _copy_into(ours, theirs):
    with mt.no_grad():
        for name, p in theirs.named_parameters():
            getattr(ours, name).copy_(mt.tensor(p.detach().numpy()))


@pytest.mark.parametrize("cls,kwargs", [("LSTM", {}), ("GRU", {}), ("RNN", {}),
                                        ("RNN", {"nonlinearity": "relu"}),
                                        ("LSTM", {"num_layers": 2, "bidirectional": True}),
                                        ("GRU", {"num_layers": 2, "batch_first": True})])
def test_layers_match_torch_float32(cls, kwargs):
    torch.manual_seed(0)
    theirs = getattr(torch.nn, cls)(6, 8, **kwargs)
    ours = getattr(mt.nn, cls)(6, 8, **kwargs)
    _copy_into(ours, theirs)
    x = np.random.default_rng(0).normal(size=(7, 5, 6)).astype(np.float32)
    xt = torch.tensor(x, requires_grad=True)
    xm = mt.tensor(x, requires_grad=True)
    out_t, _ = theirs(xt)
    out_m, _ = ours(xm)
    np.testing.assert_allclose(out_m.detach().numpy(), out_t.detach().numpy(), atol=2e-6)
    (out_t ** 2).sum().backward()
    (out_m ** 2).sum().backward()
    np.testing.assert_allclose(xm.grad.numpy(), xt.grad.numpy(), atol=2e-5)
    for name, p in theirs.named_parameters():
        np.testing.assert_allclose(getattr(ours, name).grad.numpy(), p.grad.numpy(),
                                   atol=5e-5, err_msg=name)


# ---- one cell step as one node (RecurrentCell) -------------------------------------------------
CELLS = {"RNN_TANH": ("RNNCell", {}), "RNN_RELU": ("RNNCell", {"nonlinearity": "relu"}),
         "LSTM": ("LSTMCell", {}), "GRU": ("GRUCell", {})}


def _cell_inputs(mode, device, batch=3, size=2, hidden=4, bias=True, seed=0):
    """x, h0, c0 (LSTM), W_ih, W_hh, b_ih, b_hh as float64 leaves."""
    rng = np.random.default_rng(seed)
    width = GATES[mode] * hidden

    def leaf(*shape):
        return mt.tensor(rng.normal(size=shape), dtype=mt.float64, device=device,
                         requires_grad=True)
    return (leaf(batch, size), leaf(batch, hidden), leaf(batch, hidden) if mode == "LSTM" else None,
            leaf(width, size), leaf(width, hidden), leaf(width) if bias else None,
            leaf(width) if bias else None)


def _cell_composed(mode, x, h0, c0, w_ih, w_hh, b_ih, b_hh):
    state = (h0,) if c0 is None else (h0, c0)
    gi = mt.nn.functional.linear(x, w_ih, b_ih).unsqueeze(0)
    return list(composed_layer(mode, gi, state, w_hh, b_hh)[1])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("batch", [3, 0])
def test_cell_matches_composed(device, mode, bias, batch):
    inputs = _cell_inputs(mode, device, batch=batch, bias=bias)
    fused = list(RecurrentCell.apply(mode, *inputs))
    composed = _cell_composed(mode, *inputs)
    rng = np.random.default_rng(1)
    seeds = [mt.tensor(rng.normal(size=f.shape), dtype=mt.float64, device=device)
             for f in fused]
    for f, c in zip(fused, composed):
        np.testing.assert_allclose(f.detach().cpu().numpy(), c.detach().cpu().numpy(), atol=1e-12)
    for gf, gc in zip(_grads(fused, inputs, seeds), _grads(composed, inputs, seeds)):
        np.testing.assert_allclose(gf.cpu().numpy(), gc.cpu().numpy(), rtol=0, atol=1e-10)


@pytest.mark.parametrize("mode", MODES)
def test_cell_gradcheck_and_gradgradcheck(device, mode):
    inputs = _cell_inputs(mode, device, batch=2, size=2, hidden=2)
    x = inputs[0].detach().t().contiguous().t().requires_grad_()     # a transposed input
    tensors = tuple(t for t in (x,) + inputs[1:] if t is not None)

    def run(*args):
        it = iter(args)
        x, h0 = next(it), next(it)
        c0 = next(it) if mode == "LSTM" else None
        return RecurrentCell.apply(mode, x, h0, c0, *it)
    assert mt.autograd.gradcheck(run, tensors)
    assert mt.autograd.gradgradcheck(run, tensors)


@pytest.mark.parametrize("mode", MODES)
def test_cells_step_as_one_node(device, mode):
    """nn's cells take the fused node (only the weights need a gradient here; mixed dtypes keep
    the composed path and its error)."""
    name, kwargs = CELLS[mode]
    cell = getattr(mt.nn, name)(2, 3, **kwargs).double().to(device)
    x = mt.randn(4, 2, dtype=mt.float64, device=device)
    out = cell(x)
    h = out[0] if isinstance(out, tuple) else out
    assert type(h.grad_fn) is RecurrentCell
    h.sum().backward()
    assert all(p.grad is not None and p.grad.shape == p.shape for p in cell.parameters())
    with pytest.raises(RuntimeError):
        cell(x.float())
