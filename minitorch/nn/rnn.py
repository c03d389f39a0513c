"""Recurrent layers: RNN (tanh / relu), LSTM (with proj_size), GRU and their single-step cells,
with torch's parameter names, shapes, gate order (LSTM i, f, g, o; GRU r, z, n) and init.

A layer projects the whole input sequence with one F.linear (one GEMM for every time step); the
recurrence of each (layer, direction) is then one node, functions/recurrent.py's RecurrentLayer
(per step one GEMM and one fused gate kernel), or its composed reference for an LSTM with
proj_size. A cell's step is one node too, RecurrentCell (input projection, hidden GEMM and the
fused gate kernel), but for mixed dtypes or devices and in autocast regions, which take the
Linear and a one-step RecurrentLayer (or the composed reference).

A PackedSequence input (sequences sorted by decreasing length, step t holding the first
batch_sizes[t] of them) runs step t on the first batch_sizes[t] rows of the state only, so
padding never enters the recurrence.

In an autocast region a recurrence takes torch's route and so its dtypes (`_autocast_route`).
"""
import math
import numbers
import warnings

import minitorch as mt
from ..functions.autocast_policy import cast_in_region, lower_dtype
from ..functions.recurrent import (GATES, MODES, RecurrentCell, RecurrentLayer,
                                   composed_layer)
from . import functional as F, init
from .module import Module
from .parameter import Parameter
from .utils.rnn import PackedSequence

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]


def _check_type(value, kind, name):
    if not isinstance(value, kind):
        raise TypeError(f"{name} should be of type {kind.__name__}, got: "
                        f"{type(value).__name__}")


def _autocast_route(x, whole_lstm=False):
    """How an enabled autocast region runs a recurrence on x's device, as torch does: (dtype,
    True) casts input, weights and states to the lower dtype (cuDNN's RNN and cuda's cells, on
    autocast's list; on the CPU oneDNN's LSTM layer, which serves an unpacked LSTM without a
    projection); (dtype, False) runs the composed steps, whose linear maps autocast and whose
    float32 states then promote (CPU cells, GRU, RNN, packed or projected LSTM); None outside a
    region."""
    dtype = lower_dtype(x.device.type)
    if dtype is None or not x.dtype.is_floating_point or x.dtype is mt.float64:
        return None
    return dtype, x.device.type == "cuda" or whole_lstm


def _reject_extra_arguments(cls, kwargs):
    """RNN and GRU take **kwargs only to answer proj_size with torch's ValueError."""
    if "proj_size" in kwargs:
        raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
    if kwargs:
        raise TypeError(f"{cls.__name__}.__init__() got an unexpected keyword argument "
                        f"'{next(iter(kwargs))}'")


# ---- multi-layer recurrent networks ------------------------------------------------------------
class RNNBase(Module):
    """torch.nn.RNNBase: the parameters of every (layer, direction) as weight_ih_l{k}[_reverse],
    weight_hh_l{k}, bias_ih_l{k}, bias_hh_l{k} (and weight_hr_l{k} for an LSTM with proj_size),
    all drawn from U(-1/√hidden_size, 1/√hidden_size). Inputs are (L, N, H_in) tensors
    ((N, L, H_in) with batch_first), unbatched (L, H_in) or a PackedSequence (batch_first does
    not apply; the output is packed like the input)."""

    # torch's wording differs per class; {} is the input's rank
    _input_dim_message = "RNNBase: Expected input to be 2D or 3D, got {}D instead"

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, proj_size=0, device=None,
                 dtype=None):
        super().__init__()
        self._check_arguments(mode, input_size, hidden_size, num_layers, bias, batch_first,
                              dropout, proj_size)
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.num_layers, self.bias, self.batch_first = num_layers, bias, batch_first
        self.dropout, self.bidirectional, self.proj_size = float(dropout), bidirectional, proj_size
        self._flat_weights_names, self._all_weights = [], []
        for layer in range(num_layers):
            for direction in range(self._directions()):
                names = self._register_weights(layer, direction, {"device": device,
                                                                  "dtype": dtype})
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    @staticmethod
    def _check_arguments(mode, input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         proj_size):
        """torch's constructor checks, in torch's order."""
        if not isinstance(dropout, numbers.Number) or isinstance(dropout, bool) or \
                not 0 <= dropout <= 1:
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so "
                          "non-zero dropout expects num_layers greater than 1, but got "
                          f"dropout={dropout} and num_layers={num_layers}", stacklevel=4)
        _check_type(bias, bool, "bias")
        _check_type(batch_first, bool, "batch_first")
        _check_type(input_size, int, "input_size")
        if input_size <= 0:
            raise ValueError("input_size must be greater than zero")
        _check_type(hidden_size, int, "hidden_size")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable "
                             "projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if mode not in MODES:
            raise ValueError("Unrecognized RNN mode: " + mode)

    def _directions(self):
        return 2 if self.bidirectional else 1

    def _output_size(self):
        """The size of h: proj_size when the LSTM projects its output, else hidden_size."""
        return self.proj_size if self.proj_size > 0 else self.hidden_size

    def _register_weights(self, layer, direction, factory):
        """One (layer, direction)'s parameters, registered in torch's order; returns names."""
        gate_size = GATES[self.mode] * self.hidden_size
        layer_input = self.input_size if layer == 0 else \
            self._output_size() * self._directions()
        shapes = [("weight_ih", (gate_size, layer_input)),
                  ("weight_hh", (gate_size, self._output_size()))]
        if self.bias:
            shapes += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
        if self.proj_size > 0:
            shapes.append(("weight_hr", (self.proj_size, self.hidden_size)))
        suffix = "_reverse" if direction == 1 else ""
        names = []
        for kind, shape in shapes:
            names.append(f"{kind}_l{layer}{suffix}")
            setattr(self, names[-1], Parameter(mt.empty(*shape, **factory)))
        return names

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def flatten_parameters(self):
        """No-op: there is no cuDNN weight buffer to compact (kept for torch's API)."""

    @property
    def all_weights(self):
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def extra_repr(self):
        text = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            text += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            text += f", num_layers={self.num_layers}"
        if self.bias is not True:
            text += f", bias={self.bias}"
        if self.batch_first is not False:
            text += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            text += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            text += f", bidirectional={self.bidirectional}"
        return text

    # -- forward --------------------------------------------------------------------------------
    def _run(self, input, hx):
        """torch's RNN forward; hx is a tuple of states (or None). Returns the output and the
        tuple of final states (h_n[, c_n])."""
        if isinstance(input, PackedSequence):
            return self._run_packed(input, hx)
        if input.ndim not in (2, 3):
            raise ValueError(self._input_dim_message.format(input.ndim))
        batched = input.ndim == 3
        if hx is not None:
            self._check_hidden_dims(hx, batched)
        if not batched:
            input = input.unsqueeze(0 if self.batch_first else 1)
            hx = None if hx is None else tuple(h.unsqueeze(1) for h in hx)
        batch = input.shape[0 if self.batch_first else 1]
        if hx is None:
            hx = self._zero_state(batch, input)
        self._check_forward_args(input, hx, batch, 3)
        sequence = input.transpose(0, 1) if self.batch_first else input
        if sequence.shape[0] == 0:
            raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
        output, final = self._layers(sequence, hx)
        if self.batch_first:
            output = output.transpose(0, 1)
        if not batched:
            output = output.squeeze(0 if self.batch_first else 1)
            final = tuple(h.squeeze(1) for h in final)
        return output, final

    def _run_packed(self, packed, hx):
        """The forward on a PackedSequence: states are given and returned in the caller's batch
        order, and run in the packed (length-sorted) one."""
        data, batch_sizes, sorted_indices, unsorted_indices = packed
        batch = int(batch_sizes[0])
        if hx is None:
            hx = self._zero_state(batch, data)
        else:
            hx = _permute_states(hx, sorted_indices)
        self._check_forward_args(data, hx, batch, 2)
        output, final = self._layers(data, hx, batch_sizes.tolist())
        return (PackedSequence(output, batch_sizes, sorted_indices, unsorted_indices),
                _permute_states(final, unsorted_indices))

    def _check_hidden_dims(self, hx, batched):
        expected = 3 if batched else 2
        if any(h.ndim != expected for h in hx):
            kind = "batched 3-D" if batched else "unbatched 2-D"
            raise RuntimeError(f"For {kind} input, hx should also be {expected}-D but got "
                               f"{hx[0].ndim}-D tensor")

    def _state_sizes(self):
        """The last dimension of each state tensor: (h,) or, for an LSTM, (h, c)."""
        return (self._output_size(),)

    def _zero_state(self, batch, input):
        return tuple(mt.zeros(self.num_layers * self._directions(), batch, size,
                              dtype=input.dtype, device=input.device)
                     for size in self._state_sizes())

    def _check_forward_args(self, input, hx, batch, input_dims):
        """torch's check_forward_args: input_dims is 2 for packed data, else 3."""
        weight_dtype = self.weight_ih_l0.dtype
        if input.dtype is not weight_dtype:
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype "
                             f"({weight_dtype}). Convert input: input.to({weight_dtype}), or "
                             f"convert model: model.to({input.dtype})")
        if input.ndim != input_dims:
            raise RuntimeError(f"input must have {input_dims} dimensions, got {input.ndim}")
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {input.shape[-1]}")
        for index, (h, size) in enumerate(zip(hx, self._state_sizes())):
            expected = (self.num_layers * self._directions(), batch, size)
            if tuple(h.shape) != expected:
                raise RuntimeError(self._hidden_size_message(index).format(expected,
                                                                           list(h.shape)))

    def _hidden_size_message(self, index):
        return "Expected hidden size {}, got {}"

    def _layers(self, sequence, hx, batch_sizes=None):
        """Every layer over a (L, N, H_in) sequence, or packed (sum(batch_sizes), H_in) data
        given its batch_sizes (a list); torch's dropout on all but the last layer's output.
        Returns the last layer's output and the stacked final states."""
        finals = []
        for layer in range(self.num_layers):
            if layer > 0 and self.dropout > 0:
                sequence = F.dropout(sequence, self.dropout, self.training)
            outputs = []
            for direction in range(self._directions()):
                index = layer * self._directions() + direction
                output, final = self._direction(sequence, tuple(h[index] for h in hx),
                                                self._all_weights[index], direction == 1,
                                                batch_sizes)
                outputs.append(output)
                finals.append(final)
            sequence = outputs[0] if len(outputs) == 1 else mt.cat(outputs, -1)
        return sequence, tuple(mt.stack(states) for states in zip(*finals))

    def _direction(self, sequence, state, names, reverse, batch_sizes=None):
        """One (layer, direction): the input projection of all steps is one GEMM; the
        recurrence is one fused node (functions/recurrent.py), or its composed reference for an
        LSTM with a projection."""
        weights = {name.split("_l")[0]: getattr(self, name) for name in names}
        gi = F.linear(sequence, weights["weight_ih"], weights.get("bias_ih"))
        w_hh, b_hh, w_hr = weights["weight_hh"], weights.get("bias_hh"), weights.get("weight_hr")
        autocast = _autocast_route(sequence, self.mode == "LSTM" and w_hr is None
                                   and batch_sizes is None)
        if autocast and autocast[1]:
            state = tuple(cast_in_region(h, autocast[0]) for h in state)
            w_hh, b_hh, w_hr = (cast_in_region(t, autocast[0]) for t in (w_hh, b_hh, w_hr))
        elif autocast:
            return composed_layer(self.mode, gi, state, w_hh, b_hh, batch_sizes, reverse, w_hr,
                                  F.linear)
        if w_hr is not None:
            return composed_layer(self.mode, gi, state, w_hh, b_hh, batch_sizes, reverse, w_hr)
        c0 = state[1] if len(state) > 1 else None
        output, *final = RecurrentLayer.apply(self.mode, gi, state[0], c0, w_hh, b_hh,
                                              batch_sizes, reverse)
        return output, tuple(final)


def _permute_states(states, permutation):
    """torch's permute_hidden: the batch dim (1) of each state reordered (None: as is)."""
    if permutation is None:
        return tuple(states)
    return tuple(h.index_select(1, permutation) for h in states)


class RNN(RNNBase):
    """torch.nn.RNN: h_t = tanh(x_t W_ihᵀ + b_ih + h_{t-1} W_hhᵀ + b_hh) (or relu).
    Returns (output, h_n)."""

    _input_dim_message = "RNN: Expected input to be 2D or 3D, got {}D tensor instead"

    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, device=None, dtype=None,
                 **kwargs):
        _reject_extra_arguments(RNN, kwargs)
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or "
                             "'relu'.")
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size,
                         hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        output, (h_n,) = self._run(input, None if hx is None else (hx,))
        return output, h_n


class GRU(RNNBase):
    """torch.nn.GRU (gates r, z, n; n = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn))).
    Returns (output, h_n)."""

    _input_dim_message = "GRU: Expected input to be 2D or 3D, got {}D instead"

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, device=None, dtype=None, **kwargs):
        _reject_extra_arguments(GRU, kwargs)
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        output, (h_n,) = self._run(input, None if hx is None else (hx,))
        return output, h_n


class LSTM(RNNBase):
    """torch.nn.LSTM (gates i, f, g, o; with proj_size, h_t = W_hr (o ⊙ tanh(c_t))).
    Returns (output, (h_n, c_n))."""

    _input_dim_message = "LSTM: Expected input to be 2D or 3D, got {}D instead"

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, proj_size, device=device, dtype=dtype)

    def _check_hidden_dims(self, hx, batched):
        expected = 3 if batched else 2
        if any(h.ndim != expected for h in hx):
            kind = "batched 3-D" if batched else "unbatched 2-D"
            raise RuntimeError(f"For {kind} input, hx and cx should also be {expected}-D but "
                               f"got ({hx[0].ndim}-D, {hx[1].ndim}-D) tensors")

    def _state_sizes(self):
        return self._output_size(), self.hidden_size

    def _hidden_size_message(self, index):
        return f"Expected hidden[{index}] size {{}}, got {{}}"

    def forward(self, input, hx=None):
        if hx is not None:
            hx = tuple(hx)
            if len(hx) != 2:
                raise IndexError("tuple index out of range")
        return self._run(input, hx)


# ---- cells -------------------------------------------------------------------------------------
class RNNCellBase(Module):
    """torch.nn.RNNCellBase: weight_ih (chunks·hidden, input), weight_hh (chunks·hidden, hidden)
    and, with bias, bias_ih / bias_hh; U(-1/√hidden_size, 1/√hidden_size) init."""

    _states = 1         # state tensors: h, or (h, c) for the LSTM cell
    _name = "RNNCellBase"   # in torch's messages

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        self.weight_ih = Parameter(mt.empty(num_chunks * hidden_size, input_size, **factory))
        self.weight_hh = Parameter(mt.empty(num_chunks * hidden_size, hidden_size, **factory))
        if bias:
            self.bias_ih = Parameter(mt.empty(num_chunks * hidden_size, **factory))
            self.bias_hh = Parameter(mt.empty(num_chunks * hidden_size, **factory))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self):
        text = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            text += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            text += f", nonlinearity={self.nonlinearity}"
        return text

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _check_dims(self, input, hx, hidden_name):
        name = self._name
        if input.ndim not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.ndim}D instead")
        for index, h in enumerate(hx or ()):
            if h.ndim not in (1, 2):
                label = hidden_name.format(index)
                raise ValueError(f"{name}: Expected {label} to be 1D or 2D, got {h.ndim}D "
                                 "instead")

    def _cell(self, input, hx, mode, hidden_name):
        """torch's cell forward: checks, (un)batching and zero states around one step; hx is a
        tuple of states or None, and so is the result."""
        self._check_dims(input, hx, hidden_name)
        batched = input.ndim == 2
        if not batched:
            input = input.unsqueeze(0)
            hx = None if hx is None else tuple(h.unsqueeze(0) for h in hx)
        if hx is None:
            zeros = mt.zeros(input.shape[0], self.hidden_size, dtype=input.dtype,
                             device=input.device)
            hx = (zeros,) * self._states
        self._check_cell_sizes(input, hx)
        autocast = _autocast_route(input)
        if autocast is None and self._fusable(input, hx):
            state = RecurrentCell.apply(mode, input, hx[0], hx[1] if len(hx) > 1 else None,
                                        self.weight_ih, self.weight_hh, self.bias_ih,
                                        self.bias_hh)
            return state if batched else tuple(h.squeeze(0) for h in state)
        gi = F.linear(input, self.weight_ih, self.bias_ih).unsqueeze(0)     # one time step
        w_hh, b_hh = self.weight_hh, self.bias_hh
        if autocast and autocast[1]:
            hx = tuple(cast_in_region(h, autocast[0]) for h in hx)
            w_hh, b_hh = (cast_in_region(t, autocast[0]) for t in (w_hh, b_hh))
        elif autocast:
            _, state = composed_layer(mode, gi, hx, w_hh, b_hh, linear=F.linear)
            return state if batched else tuple(h.squeeze(0) for h in state)
        _, *state = RecurrentLayer.apply(mode, gi, hx[0], hx[1] if len(hx) > 1 else None,
                                         w_hh, b_hh, None, False)
        return tuple(state) if batched else tuple(h.squeeze(0) for h in state)

    def _fusable(self, input, hx):
        """Can the step run as one RecurrentCell node: one dtype and device throughout (else
        F.linear and the step raise torch's errors)."""
        dtype, device = input.dtype, input.device
        return all(t.dtype is dtype and t.device == device
                   for t in (*hx, *self._parameters.values()) if t is not None)

    def _check_cell_sizes(self, input, hx):
        """ATen's check_rnn_cell_forward_input / _hidden messages."""
        if input.shape[1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.shape[1]} "
                               f"expected {self.input_size}")
        for index, h in enumerate(hx):
            if h.shape[0] != input.shape[0]:
                raise RuntimeError(f"Input batch size {input.shape[0]} doesn't match "
                                   f"hidden{index} batch size {h.shape[0]}")
            if h.shape[1] != self.hidden_size:
                raise RuntimeError(f"hidden{index} has inconsistent hidden_size: got "
                                   f"{h.shape[1]}, expected {self.hidden_size}")


class RNNCell(RNNCellBase):
    """torch.nn.RNNCell: h' = tanh(x W_ihᵀ + b_ih + h W_hhᵀ + b_hh) (or relu)."""

    _name = "RNNCell"

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None,
                 dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device,
                         dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        hx = None if hx is None else (hx,)
        modes = {"tanh": "RNN_TANH", "relu": "RNN_RELU"}
        if self.nonlinearity not in modes:      # torch checks the ranks first
            self._check_dims(input, hx, "hidden")
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        return self._cell(input, hx, modes[self.nonlinearity], "hidden")[0]


class LSTMCell(RNNCellBase):
    """torch.nn.LSTMCell (gates i, f, g, o); returns (h', c')."""

    _name, _states = "LSTMCell", 2

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device,
                         dtype=dtype)

    def forward(self, input, hx=None):
        return self._cell(input, None if hx is None else tuple(hx), "LSTM", "hx[{}]")


class GRUCell(RNNCellBase):
    """torch.nn.GRUCell (gates r, z, n)."""

    _name = "GRUCell"

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device,
                         dtype=dtype)

    def forward(self, input, hx=None):
        return self._cell(input, None if hx is None else (hx,), "GRU", "hidden")[0]
