"""nn.RNN / LSTM / GRU and their cells: torch's parameter names, shapes, reprs and init; outputs,
final states and input/parameter gradients against torch with torch's weights copied in
(stacked, bidirectional, batch_first, projected, unbatched, non-contiguous inputs); float64
gradcheck of each cell; torch's errors."""
import math

import numpy as np
import pytest

import minitorch as mt
from minitorch.autograd import gradcheck
from minitorch.nn import rnn
from torch_parity import check_against_torch, flatten, same_errors, seq, value


# ---- layers against torch ----------------------------------------------------------------------
LAYER_CASES = [
    # (class, kwargs, input shape, initial state shapes or None)
    ("RNN", {}, (3, 2, 3), [(1, 2, 4)]),
    ("RNN", {"nonlinearity": "relu", "num_layers": 2, "bidirectional": True,
             "batch_first": True}, (2, 3, 3), None),
    ("LSTM", {"num_layers": 2, "bidirectional": True}, (3, 2, 3), [(4, 2, 4), (4, 2, 4)]),
    ("LSTM", {"proj_size": 2, "bias": False, "batch_first": True}, (2, 3, 3),
     [(1, 2, 2), (1, 2, 4)]),
    ("GRU", {"num_layers": 2, "bidirectional": True}, (3, 2, 3), [(4, 2, 4)]),
    ("GRU", {}, (3, 3), [(1, 4)]),                                      # unbatched
    ("LSTM", {"batch_first": True}, (3, 3), None),                      # unbatched
]


def call_layer(states):
    """A call that passes the initial state the layer's way (h, or (h, c))."""
    def call(module, x, *hx):
        if not hx:
            return module(x)
        return module(x, hx if len(hx) == 2 else hx[0])
    return call


@pytest.mark.parametrize("name,kwargs,shape,states", LAYER_CASES,
                         ids=[f"{c[0]}{c[1]}{c[2]}" for c in LAYER_CASES])
def test_layer_matches_torch(device, name, kwargs, shape, states):
    torch = pytest.importorskip("torch")
    arrays = [seq(*shape)] + [seq(*s, seed=i + 1) for i, s in enumerate(states or ())]
    check_against_torch(getattr(rnn, name)(3, 4, **kwargs),
                        getattr(torch.nn, name)(3, 4, **kwargs), arrays, device,
                        call_layer(states))


def test_non_contiguous_input_and_state(device):
    torch = pytest.importorskip("torch")

    def call(module, x, h, c):       # x read transposed and stepped, h transposed
        return module(x.transpose(0, 1)[::2], (h.transpose(0, 1), c))
    check_against_torch(rnn.LSTM(3, 4, batch_first=False), torch.nn.LSTM(3, 4),
                        [seq(2, 5, 3), seq(2, 1, 4), seq(1, 2, 4)], device, call)


def test_empty_batch(device):
    gru = rnn.GRU(3, 4, bidirectional=True).to(device)
    out, h_n = gru(mt.zeros(5, 0, 3, device=device))
    assert out.shape == (5, 0, 8) and h_n.shape == (2, 0, 4)


def test_dropout_between_layers_in_training():
    # p = 1 zeroes the first layer's output, so the second layer sees only zeros.
    mt.manual_seed(0)
    two = rnn.RNN(2, 3, num_layers=2, dropout=1.0)
    one = rnn.RNN(3, 3)
    one.load_state_dict({k.replace("l1", "l0"): v for k, v in two.state_dict().items()
                         if k.endswith("l1")})
    x = mt.randn(4, 2, 2)
    expected, _ = one(mt.zeros(4, 2, 3))
    np.testing.assert_allclose(value(two(x)[0]), value(expected), rtol=1e-6)
    two.eval()
    assert not np.allclose(value(two(x)[0]), value(expected))


# ---- cells -------------------------------------------------------------------------------------
CELL_CASES = [("RNNCell", {}), ("RNNCell", {"nonlinearity": "relu", "bias": False}),
              ("LSTMCell", {}), ("GRUCell", {}), ("GRUCell", {"bias": False})]


@pytest.mark.parametrize("name,kwargs", CELL_CASES, ids=[f"{n}{k}" for n, k in CELL_CASES])
@pytest.mark.parametrize("batched", [True, False])
def test_cell_matches_torch(device, name, kwargs, batched):
    torch = pytest.importorskip("torch")
    lead = (2,) if batched else ()
    states = 2 if name == "LSTMCell" else 1
    arrays = [seq(*lead, 3)] + [seq(*lead, 4, seed=i + 1) for i in range(states)]

    def call(module, x, *hx):
        return module(x, hx if states == 2 else hx[0])
    check_against_torch(getattr(rnn, name)(3, 4, **kwargs),
                        getattr(torch.nn, name)(3, 4, **kwargs), arrays, device, call)


def test_cell_without_state_starts_from_zeros(device):
    cell = rnn.LSTMCell(3, 4).to(device)
    x = mt.randn(2, 3, device=device)
    zeros = mt.zeros(2, 4, device=device)
    for got, expected in zip(cell(x), cell(x, (zeros, zeros))):
        np.testing.assert_array_equal(value(got), value(expected))


@pytest.mark.parametrize("name,kwargs", CELL_CASES, ids=[f"{n}{k}" for n, k in CELL_CASES])
def test_cell_gradcheck(device, name, kwargs):
    mt.manual_seed(0)
    cell = getattr(rnn, name)(2, 2, **kwargs).double().to(device)
    x = mt.randn(2, 2, dtype=mt.float64, device=device).transpose(0, 1).requires_grad_()
    hx = [mt.randn(2, 2, dtype=mt.float64, device=device, requires_grad=True)
          for _ in range(2 if name == "LSTMCell" else 1)]

    def fn(x, *rest):
        return cell(x, tuple(rest[:2]) if name == "LSTMCell" else rest[0])
    assert gradcheck(fn, (x, *hx, *cell.parameters()))


def test_layer_gradcheck(device):
    mt.manual_seed(0)
    lstm = rnn.LSTM(2, 2, bidirectional=True, proj_size=1).double().to(device)
    x = mt.randn(2, 1, 2, dtype=mt.float64, device=device, requires_grad=True)
    # Every parameter's gradient is compared with torch above; here a few, to keep it quick.
    params = (lstm.weight_hh_l0_reverse, lstm.weight_hr_l0)
    assert gradcheck(lambda x, *params: tuple(flatten(lstm(x))), (x, *params))


# ---- structure ---------------------------------------------------------------------------------
STRUCTURE_CASES = [
    ("RNN", (3, 4, 2, "relu", False, True, 0.5, True), {}),
    ("LSTM", (3, 4), {"proj_size": 2, "num_layers": 2, "bidirectional": True}),
    ("GRU", (3, 4), {"bias": False}), ("RNNCell", (3, 4), {"nonlinearity": "relu"}),
    ("LSTMCell", (3, 4), {"bias": False}), ("GRUCell", (3, 4), {}),
]


@pytest.mark.parametrize("name,args,kwargs", STRUCTURE_CASES,
                         ids=[f"{n}{a}{k}" for n, a, k in STRUCTURE_CASES])
def test_structure_and_repr_match_torch(name, args, kwargs):
    torch = pytest.importorskip("torch")
    theirs = getattr(torch.nn, name)(*args, **kwargs)
    ours = getattr(rnn, name)(*args, **kwargs)
    assert repr(ours) == repr(theirs)
    assert [(k, tuple(p.shape)) for k, p in ours.named_parameters()] == \
        [(k, tuple(p.shape)) for k, p in theirs.named_parameters()]
    if hasattr(theirs, "all_weights"):
        assert [[tuple(w.shape) for w in ws] for ws in ours.all_weights] == \
            [[tuple(w.shape) for w in ws] for ws in theirs.all_weights]


@pytest.mark.parametrize("make", [lambda: rnn.LSTM(10, 400, num_layers=2),
                                  lambda: rnn.GRUCell(10, 400)])
def test_init_is_uniform_over_inverse_sqrt_hidden(make):
    mt.manual_seed(0)
    bound = 1 / math.sqrt(400)
    for param in make().parameters():
        values = value(param)
        assert values.dtype == np.float32
        assert np.abs(values).max() <= bound and np.abs(values).max() > 0.9 * bound


# ---- errors ------------------------------------------------------------------------------------
ERROR_CASES = [
    # (class, constructor args, input shape, state shapes, dtype)
    ("RNN", (3, 4), (5, 2, 6), None, "float32"),                 # wrong input size
    ("RNN", (3, 4), (5, 2, 3), [(1, 3, 4)], "float32"),          # wrong hidden batch
    ("RNN", (3, 4), (5, 2, 3), [(2, 4)], "float32"),             # hidden rank
    ("RNN", (3, 4), (5, 3), [(1, 1, 4)], "float32"),             # unbatched, hidden rank
    ("RNN", (3, 4), (5, 2, 3), None, "float64"),                 # dtype
    ("RNN", (3, 4), (2, 5, 2, 3), None, "float32"),              # input rank
    ("RNN", (3, 4), (0, 2, 3), None, "float32"),                 # empty sequence
    ("GRU", (3, 4), (3,), None, "float32"),
    ("GRU", (3, 4, 2), (5, 2, 3), [(1, 2, 4)], "float32"),       # too few layers in h
    ("LSTM", (3, 4), (3,), None, "float32"),
    ("LSTM", (3, 4), (5, 2, 3), [(1, 2, 4), (1, 3, 4)], "float32"),
    ("LSTM", (3, 4, 1, True, False, 0.0, False, 2), (5, 2, 3), [(1, 2, 4), (1, 2, 4)],
     "float32"),                                                  # projected h size
    ("LSTM", (3, 4), (5, 2, 3), [(1, 2, 4), (2, 4)], "float32"),
    ("RNNCell", (3, 4), (2, 5), None, "float32"),
    ("RNNCell", (3, 4), (2, 3), [(3, 4)], "float32"),
    ("RNNCell", (3, 4), (2, 3), [(2, 5)], "float32"),
    ("RNNCell", (3, 4), (2, 3, 3), None, "float32"),
    ("RNNCell", (3, 4), (2, 3), [(2, 2, 4)], "float32"),
    ("LSTMCell", (3, 4), (2, 3), [(2, 4), (3, 4)], "float32"),
    ("LSTMCell", (3, 4), (2, 3), [(2, 4), (1, 2, 4)], "float32"),
    ("GRUCell", (3, 4), (2, 5), None, "float32"),
    ("GRUCell", (3, 4), (1, 2, 3, 3), None, "float32"),
]


@pytest.mark.parametrize("name,args,shape,states,dtype", ERROR_CASES,
                         ids=[f"{c[0]}{c[2]}{c[3]}{c[4]}" for c in ERROR_CASES])
def test_forward_errors_match_torch(name, args, shape, states, dtype):
    torch = pytest.importorskip("torch")

    def run(lib, module):
        x = lib.zeros(*shape, dtype=getattr(lib, dtype))
        hx = [lib.zeros(*s) for s in states or ()]
        if not hx:
            return module(x)
        return module(x, tuple(hx) if "LSTM" in name else hx[0])
    ours, theirs = getattr(rnn, name)(*args), getattr(torch.nn, name)(*args)
    same_errors(lambda: run(mt, ours), lambda: run(torch, theirs))


@pytest.mark.parametrize("name,args,kwargs", [
    ("RNN", (3, 4), {"nonlinearity": "sigmoid"}), ("GRU", (3, 4), {"proj_size": 2}),
    ("RNN", (3, 4), {"proj_size": 2}), ("LSTM", (3, 4), {"proj_size": 4}),
    ("LSTM", (3, 4), {"proj_size": -1}), ("LSTM", (3, 4), {"dropout": 1.5}),
    ("LSTM", (3, 4), {"dropout": True}), ("GRU", (3, 0), {}), ("GRU", (0, 4), {}),
    ("GRU", (3, 4, 0), {}), ("GRU", (3.0, 4), {}), ("RNN", (3, 4), {"bias": 1}),
    ("RNN", (3, 4), {"batch_first": None}),
])
def test_constructor_errors_match_torch(name, args, kwargs):
    torch = pytest.importorskip("torch")
    same_errors(lambda: getattr(rnn, name)(*args, **kwargs),
                lambda: getattr(torch.nn, name)(*args, **kwargs))


def test_unknown_cell_nonlinearity_is_reported_at_forward():
    torch = pytest.importorskip("torch")
    ours = rnn.RNNCell(3, 4, nonlinearity="foo")
    theirs = torch.nn.RNNCell(3, 4, nonlinearity="foo")
    same_errors(lambda: ours(mt.zeros(2, 5)), lambda: theirs(torch.zeros(2, 5)))


def test_dropout_with_one_layer_warns():
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        rnn.LSTM(3, 4, dropout=0.5)
