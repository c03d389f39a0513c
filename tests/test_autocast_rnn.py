"""Recurrent layers in an autocast region take torch's route: on the CPU an unpacked LSTM
without a projection runs wholly in the lower dtype (oneDNN's layer), every other recurrence
runs its steps with autocast linear maps and float32 states, so promotion decides the dtypes;
on cuda every recurrence runs in the lower dtype (cuDNN's RNN, the cells on autocast's list).
Values are compared with float32 runs at the lower dtype's tolerance; gradients reach the
float32 parameters."""
import warnings

import numpy as np
import pytest

import minitorch as mt

try:
    import torch
except ImportError:
    torch = None

CASES = [  # (class, constructor kwargs, packed input, expected CPU dtypes of output and states)
    ("LSTM", {}, False, ("bfloat16", "bfloat16", "bfloat16")),
    ("LSTM", {"proj_size": 2}, False, ("bfloat16", "bfloat16", "float32")),
    ("LSTM", {"bidirectional": True, "num_layers": 2}, False, ("bfloat16",) * 3),
    ("LSTM", {}, True, ("float32",) * 3),
    ("GRU", {}, False, ("float32", "float32")),
    ("GRU", {}, True, ("float32", "float32")),
    ("RNN", {"nonlinearity": "relu"}, False, ("bfloat16", "bfloat16")),
    ("LSTMCell", {}, None, ("float32", "float32")),
    ("GRUCell", {}, None, ("float32",)),
    ("RNNCell", {}, None, ("bfloat16",)),
]


def _run(lib, name, kwargs, packed, device="cpu", dtype=None, enabled=True):
    lib.manual_seed(0)
    module = getattr(lib.nn, name)(8, 4, **kwargs).to(device)
    x = lib.tensor(np.random.default_rng(1).standard_normal((5, 2, 8)), dtype=lib.float32,
                   device=device)
    if packed is None:
        x = x[0]
    elif packed:
        x = lib.nn.utils.rnn.pack_padded_sequence(x, [5, 3])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")    # torch: "LSTM with projections is not supported..."
        with lib.autocast(device, dtype=dtype, enabled=enabled):
            out = module(x)
    if packed is None:
        tensors = out if isinstance(out, tuple) else (out,)
    else:
        output, states = out
        tensors = (output.data if packed else output,) + (
            states if isinstance(states, tuple) else (states,))
    return module, tensors


def _name(dtype):
    return str(dtype).split(".")[-1]


@pytest.mark.parametrize("name, kwargs, packed, expected", CASES)
def test_cpu_dtypes_and_values(name, kwargs, packed, expected):
    _, low = _run(mt, name, kwargs, packed)
    assert tuple(_name(t.dtype) for t in low) == expected
    _, full = _run(mt, name, kwargs, packed, enabled=False)
    for a, b in zip(low, full):
        np.testing.assert_allclose(a.detach().float().numpy(), b.detach().numpy(), rtol=0.05,
                                   atol=0.03)


@pytest.mark.skipif(torch is None, reason="torch is not installed")
@pytest.mark.parametrize("name, kwargs, packed, expected", CASES)
def test_cpu_dtypes_match_torch(name, kwargs, packed, expected):
    _, ours = _run(mt, name, kwargs, packed)
    _, theirs = _run(torch, name, kwargs, packed)
    assert [_name(t.dtype) for t in ours] == [_name(t.dtype) for t in theirs]


@pytest.mark.parametrize("name, kwargs, packed, expected", CASES[:1] + CASES[4:5] + CASES[7:])
def test_gradients_reach_float32_parameters(device, name, kwargs, packed, expected):
    dtype = mt.bfloat16 if device == "cpu" else mt.float16
    module, low = _run(mt, name, kwargs, packed, device, dtype)
    sum(t.float().sum() for t in low).backward()
    ref_module, full = _run(mt, name, kwargs, packed, device, dtype, enabled=False)
    sum(t.sum() for t in full).backward()
    for (pname, p), q in zip(module.named_parameters(), ref_module.parameters()):
        assert p.dtype is mt.float32 and p.grad.dtype is mt.float32, pname
        np.testing.assert_allclose(p.grad.cpu().numpy(), q.grad.cpu().numpy(), rtol=0.1,
                                   atol=0.1, err_msg=pname)


@pytest.mark.parametrize("name, kwargs, packed, expected", CASES)
def test_cuda_runs_in_the_lower_dtype(device, name, kwargs, packed, expected):
    if device != "cuda":
        pytest.skip("the cuda route; the CPU's is test_cpu_dtypes_and_values")
    _, low = _run(mt, name, kwargs, packed, device, mt.float16)
    assert {_name(t.dtype) for t in low} == {"float16"}


def test_float64_and_disabled_regions_are_untouched():
    _, full = _run(mt, "LSTM", {}, False, enabled=False)
    assert {_name(t.dtype) for t in full} == {"float32"}
    mt.manual_seed(0)
    module = mt.nn.GRU(8, 4).double()
    with mt.autocast("cpu"):
        out, h = module(mt.randn(5, 2, 8, dtype=mt.float64))
    assert out.dtype is mt.float64 and h.dtype is mt.float64
