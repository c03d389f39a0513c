"""One (layer, direction) of a recurrent network over a whole sequence: RNN (tanh / relu), LSTM
and GRU, given the input projection of every time step (gi = x W_ihᵀ + b_ih, one GEMM that
nn/rnn.py runs before the recurrence).

`RecurrentLayer` is one node for the whole recurrence: per time step one GEMM (h W_hhᵀ) and one
fused step kernel forward (`recurrent_forward`: gates, state update, what backward needs), one
fused kernel and one GEMM (dgates W_hh) backward, and the weight gradient of W_hh as a single
GEMM over all steps at the end. Its backward is itself a node, `RecurrentBackward`, whose own
backward (second derivatives) differentiates the composed reference.

`composed_layer` is that reference: the same recurrence as Tensor ops, step by step (the cell
of each mode is written out below); it also runs what the fused kernels do not cover (an LSTM
with a projection, proj_size > 0). Packed sequences (step t holding the first batch_sizes[t]
sequences) use the first rows of the state only, in both.

`RecurrentCell` is one step of nn's cells, the input projection included, with its gradients
as one node, `RecurrentCellBackward`.
"""
from .. import dtypes
from ..autograd import KernelFunction, enable_grad, grad
from ..ndarray import NDArray
from ..opcodes import BinaryOp, ReduceOp
from ..tensor import wrap
from .joining import cat, stack
from .linear import Linear

__all__ = []   # nn.RNN / nn.LSTM / nn.GRU run these

MODES = {"RNN_TANH": 0, "RNN_RELU": 1, "LSTM": 2, "GRU": 3}
GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}
_SAVED = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 4}   # blocks of `act` per row


# ---- the composed reference: one time step as Tensor ops -------------------------------------
# (input projection of a step, hidden projection, state) → new state; a state is (h,) or (h, c).
def _tanh_step(gi, gh, state):
    return ((gi + gh).tanh(),)


def _relu_step(gi, gh, state):
    return ((gi + gh).relu(),)


def _lstm_step(gi, gh, state):
    in_gate, forget_gate, cell_gate, out_gate = (gi + gh).chunk(4, -1)
    c = forget_gate.sigmoid() * state[1] + in_gate.sigmoid() * cell_gate.tanh()
    return out_gate.sigmoid() * c.tanh(), c


def _gru_step(gi, gh, state):
    i_r, i_z, i_n = gi.chunk(3, -1)
    h_r, h_z, h_n = gh.chunk(3, -1)
    reset, update = (i_r + h_r).sigmoid(), (i_z + h_z).sigmoid()
    new = (i_n + reset * h_n).tanh()
    return (new + update * (state[0] - new),)      # (1 - z)·n + z·h with one op fewer


STEPS = {"RNN_TANH": _tanh_step, "RNN_RELU": _relu_step, "LSTM": _lstm_step, "GRU": _gru_step}


def _linear(x, weight, bias=None):
    return Linear.apply(x, weight, bias, False)


def composed_layer(mode, gi, state, w_hh, b_hh, batch_sizes=None, reverse=False, w_hr=None,
                   linear=_linear):
    """The recurrence as Tensor ops. gi: (L, N, G·H) or packed (rows, G·H); state: (h0,) or
    (h0, c0), each (N, ·). Returns the outputs ((L, N, H) or packed) and the final state.
    `linear` maps the state (F.linear in an autocast region, whose casts decide the dtypes)."""
    step = STEPS[mode]

    def cell(gi_t, state):
        state = step(gi_t, linear(state[0], w_hh, b_hh), state)
        if w_hr is not None:
            state = (linear(state[0], w_hr),) + state[1:]
        return state

    if batch_sizes is not None:
        run = _packed_backward if reverse else _packed_forward
        return run(cell, gi.split(batch_sizes), state)
    outputs = [None] * gi.shape[0]
    order = range(len(outputs) - 1, -1, -1) if reverse else range(len(outputs))
    for t in order:
        state = cell(gi[t], state)
        outputs[t] = state[0]
    return stack(outputs), state


def _packed_forward(cell, steps, state):
    """Steps in time order; rows batch_sizes[t]: of the state belong to sequences that ended
    before step t, so they are set aside as those sequences' final states."""
    ended, outputs = [], []
    for gi in steps:
        rows = gi.shape[0]
        if rows < state[0].shape[0]:
            ended.append(tuple(s[rows:] for s in state))
            state = tuple(s[:rows] for s in state)
        state = cell(gi, state)
        outputs.append(state[0])
    # the longest sequences come first: the state still running, then the later-ended ones
    return cat(outputs), tuple(cat(parts) for parts in zip(state, *reversed(ended)))


def _packed_backward(cell, steps, initial):
    """Steps in reverse time order: a sequence joins at its last step with its initial
    state."""
    state, outputs = tuple(s[:0] for s in initial), [None] * len(steps)
    for t in range(len(steps) - 1, -1, -1):
        rows, running = steps[t].shape[0], state[0].shape[0]
        if rows > running:
            state = tuple(cat([s, s0[running:rows]]) for s, s0 in zip(state, initial))
        state = cell(steps[t], state)
        outputs[t] = state[0]
    return cat(outputs), state


# ---- the fused node ------------------------------------------------------------------------
def _steps(total_rows, batch, batch_sizes, reverse):
    """(row0, rows) of each time step in the order the forward runs them."""
    if batch_sizes is None:
        steps = [(row0, batch) for row0 in range(0, total_rows, batch)] if batch else []
    else:
        steps, row0 = [], 0
        for rows in batch_sizes:
            steps.append((row0, rows))
            row0 += rows
    return steps[::-1] if reverse else steps


def _state_copy(t):
    """A fresh compact (N, H) buffer holding t's values: the running state, updated in place."""
    return t._data.copy()


def _buffer(nd):
    """The compact buffer a step kernel reads (None stays None)."""
    return None if nd is None else nd.compact().flat()


class _HiddenProduct:
    """The per-step GEMM out[:rows] = a[a_row0 : a_row0 + rows] @ w of a recurrence (w = W_hhᵀ
    forward, W_hh backward; a a compact (·, k) buffer), its right operand prepared once for
    all `steps`: packed into the CPU GEMM's panels (read in place, W_hhᵀ's rows a power of two
    apart collide in L1: 1.3-1.6x the time per step), elsewhere compacted (the GEMM packs a
    compact operand about twice as fast). One step (a cell's call) reads w in place."""

    def __init__(self, w, steps):
        self.backend, (self.k, self.n) = w.backend, w.shape
        self.panels = steps > 1 and w.device.type == "cpu" and w.dtype in (
            dtypes.float32, dtypes.float64)
        if self.panels:
            self.b = self.backend.pack_panels(w.buffer, self.k, self.n, w.strides, w.offset)
            return
        if steps > 1:
            w = w.copy()
        self.b, self.b_view = w.buffer, ((0,) + w.strides, w.offset)

    def __call__(self, a, a_row0, out, rows):
        k = self.k
        if self.panels:
            self.backend.panel_matmul(a, self.b, out, 1, rows, self.n, k, (0, k, 1),
                                      a_row0 * k)
        else:
            self.backend.matmul(a, self.b, out, 1, rows, self.n, k, (0, k, 1), a_row0 * k,
                                *self.b_view)


class RecurrentLayer(KernelFunction):
    """A whole recurrence as one node (see the module docstring). Returns (output, h_n) or,
    for the LSTM, (output, h_n, c_n)."""

    @staticmethod
    def forward(ctx, mode, gi, h0, c0, w_hh, b_hh, batch_sizes, reverse):
        nd, code = gi._data.compact(), MODES[mode]
        hidden, batch = h0.shape[-1], h0.shape[0]
        total = nd.size // (GATES[mode] * hidden) if hidden else 0
        steps = _steps(total, batch, batch_sizes, reverse)
        backend, product = nd.backend, _HiddenProduct(w_hh._data.transpose(0, 1), len(steps))
        h = _state_copy(h0)
        c = _state_copy(c0) if c0 is not None else None
        out = nd._new((total, hidden))
        act = nd._new((total, _SAVED[mode] * hidden))
        hprev = nd._new((total, hidden))
        cprev = nd._new((total, hidden)) if c0 is not None else None
        gh = nd._new((batch, GATES[mode] * hidden))
        bias = _buffer(None if b_hh is None else b_hh._data)
        buffers = (nd.flat(), gh.buffer, bias, h.buffer, None if c is None else c.buffer,
                   act.buffer, hprev.buffer, None if cprev is None else cprev.buffer, out.buffer)
        for row0, rows in steps:
            if hidden:
                product(h.buffer, 0, gh.buffer, rows)
            backend.recurrent_forward(code, *buffers, row0, rows, hidden)
        if gi.requires_grad or h0.requires_grad or w_hh.requires_grad or (
                c0 is not None and c0.requires_grad) or (b_hh is not None and b_hh.requires_grad):
            ctx.save_for_backward(gi, h0, c0, w_hh, b_hh)
            ctx.kept = (act, hprev, cprev)
            ctx.layout = (mode, batch_sizes, reverse)
        out = wrap(out.reshape(gi.shape[:-1] + (hidden,)))
        return (out, wrap(h), wrap(c)) if c is not None else (out, wrap(h))

    @staticmethod
    def backward(ctx, dout, dh_n, dc_n=None):
        gi, h0, c0, w_hh, b_hh = ctx.saved_tensors
        grads = RecurrentBackward.apply(dout, dh_n, dc_n, gi, h0, c0, w_hh, b_hh, ctx.kept,
                                        ctx.layout, tuple(ctx.needs_input_grad[1:6]))
        return (None,) + grads + (None, None)


class RecurrentBackward(KernelFunction):
    """RecurrentLayer's gradients (gi, h0, c0, W_hh, b_hh) as one node: the fused step kernels
    backward through time, then dW_hh = Σ_t dgates_tᵀ h_{t-1} as one GEMM and db_hh as one sum.
    Its backward differentiates the composed reference (second derivatives are rare; they cost
    a replay of the recurrence as Tensor ops)."""

    @staticmethod
    def forward(ctx, dout, dh_n, dc_n, gi, h0, c0, w_hh, b_hh, kept, layout, needs):
        ctx.save_for_backward(dout, dh_n, dc_n, gi, h0, c0, w_hh, b_hh)
        ctx.layout = layout
        mode, batch_sizes, reverse = layout
        act, hprev, cprev = kept
        code, hidden, batch = MODES[mode], h0.shape[-1], h0.shape[0]
        width = GATES[mode] * hidden
        total = act.shape[0]
        steps = _steps(total, batch, batch_sizes, reverse)
        backend, product = act.backend, _HiddenProduct(w_hh._data, len(steps))
        dh = _state_copy(dh_n)
        carry = _state_copy(dc_n) if mode == "LSTM" else (
            NDArray.full(dh.shape, 0, dh.dtype, dh.device) if mode == "GRU" else None)
        dgi = act._new((total, width))
        dgh = act._new((total, width)) if mode == "GRU" else dgi
        buffers = (dout._data.compact().flat(), dh.buffer,
                   None if carry is None else carry.buffer, act.buffer, hprev.buffer,
                   None if cprev is None else cprev.buffer, dgi.buffer,
                   dgh.buffer if mode == "GRU" else None)
        for row0, rows in reversed(steps):
            backend.recurrent_backward(code, *buffers, row0, rows, hidden)
            if hidden:
                product(dgh.buffer, row0, dh.buffer, rows)
        if mode == "GRU":
            dh = dh.binary(BinaryOp.ADD, carry)     # the direct path h_{t-1} → h_t
        grad_gi = wrap(dgi.reshape(gi.shape)) if needs[0] else None
        grad_h0 = wrap(dh) if needs[1] else None
        grad_c0 = wrap(carry) if mode == "LSTM" and needs[2] else None
        grad_w = grad_b = None
        if needs[3]:
            grad_w = act._new((width, hidden))
            if width and hidden:
                backend.matmul(dgh.buffer, hprev.buffer, grad_w.buffer, 1, width, hidden, total,
                               (0, 1, width), 0, (0, hidden, 1), 0)
            grad_w = wrap(grad_w)
        if b_hh is not None and needs[4]:
            grad_b = wrap(dgh.reduce(ReduceOp.SUM, (0,)))
        return grad_gi, grad_h0, grad_c0, grad_w, grad_b

    @staticmethod
    def backward(ctx, gg_gi, gg_h0, gg_c0, gg_w, gg_b):
        """Second derivatives: the first derivatives recomputed as Tensor ops from the composed
        reference (on detached copies), their product with the incoming gradients
        differentiated once more. Not differentiable again."""
        mode, batch_sizes, reverse = ctx.layout

        def replay(gi, h0, c0, w_hh, b_hh):
            state = (h0,) if c0 is None else (h0, c0)
            out, final = composed_layer(mode, gi, state, w_hh, b_hh, batch_sizes, reverse)
            return (out,) + final
        return _second_derivatives(ctx.saved_tensors, (gg_gi, gg_h0, gg_c0, gg_w, gg_b),
                                   replay) + (None, None, None)


def _second_derivatives(saved, incoming, replay):
    """A fused backward node's own backward, from the composed reference: `saved` are the
    node's tensor inputs, the seeds of the first derivatives (one per output of `replay`, None
    where absent) and then replay's arguments; `incoming` the gradients of the node's outputs,
    the first derivatives with respect to replay's arguments. Those are recomputed as Tensor
    ops on detached copies and their product with `incoming` differentiated once more."""
    leaves = [None if t is None else t.detach().requires_grad_() for t in saved]
    args = leaves[len(saved) - len(incoming):]
    with enable_grad():
        outputs = replay(*args)
        seeds = leaves[:len(outputs)]
        pairs = [(o, g) for o, g in zip(outputs, seeds) if o is not None and g is not None]
        wrt = [t for t in args if t is not None]
        first = grad([o for o, _ in pairs], wrt, [g for _, g in pairs], create_graph=True,
                     allow_unused=True)
        gathered = [gg for gg, t in zip(incoming, args) if t is not None]
        total = sum((f * gg).sum() for f, gg in zip(first, gathered)
                    if f is not None and gg is not None)
    if not isinstance(total, type(args[0])):       # no incoming gradient met a first derivative
        return (None,) * len(saved)
    inputs = [t for t in leaves if t is not None]
    found = iter(grad(total, inputs, allow_unused=True))
    return tuple(None if t is None else next(found) for t in leaves)


# ---- one time step of a cell ------------------------------------------------------------------
class RecurrentCell(KernelFunction):
    """nn's RNNCell / LSTMCell / GRUCell step as one node: the input projection x W_ihᵀ + b_ih
    (b_ih in the GEMM's epilogue), h W_hhᵀ and the fused step kernel; its backward is one node
    too, RecurrentCellBackward. Cells are stepped from Python once per time step
    (time_sequence_prediction), where the Python per node is most of the cost: a Linear node
    and a one-step RecurrentLayer were twice the calls. Returns (h',) or, for the LSTM,
    (h', c')."""

    @staticmethod
    def forward(ctx, mode, x, h0, c0, w_ih, w_hh, b_ih, b_hh):
        hd = h0._data
        (rows, hidden), saved = hd.shape, _SAVED[mode]
        gi = x._data.matmul(w_ih._data.transpose(0, 1),
                            bias=None if b_ih is None else b_ih._data)
        gh = hd.matmul(w_hh._data.transpose(0, 1))
        h = hd.copy()
        c = None if c0 is None else c0._data.copy()
        act = gi._new((rows, saved * hidden))
        # the kernel's copies of h0, c0 and h', which the cell has already
        spare, n = gi._new((3 * rows * hidden,)).buffer, rows * hidden
        gi.backend.recurrent_forward(MODES[mode], gi.buffer, gh.buffer, _buffer(
            None if b_hh is None else b_hh._data), h.buffer, None if c is None else c.buffer,
            act.buffer, spare[:n], None if c is None else spare[n:2 * n], spare[2 * n:], 0, rows,
            hidden)
        ctx.save_for_backward(x, h0, c0, w_ih, w_hh, b_ih, b_hh)
        ctx.act, ctx.mode = act, mode
        return (wrap(h),) if c is None else (wrap(h), wrap(c))

    @staticmethod
    def backward(ctx, dh, dc=None):
        grads = RecurrentCellBackward.apply(dh, dc, *ctx.saved_tensors, ctx.act, ctx.mode,
                                            tuple(ctx.needs_input_grad[1:8]))
        return (None,) + grads


class RecurrentCellBackward(KernelFunction):
    """RecurrentCell's gradients (x, h0, c0, W_ih, W_hh, b_ih, b_hh) as one node: the step
    kernel's gate gradients, then one GEMM or sum per gradient asked for. Its backward
    differentiates the composed reference, like RecurrentBackward's."""

    @staticmethod
    def forward(ctx, dh, dc, x, h0, c0, w_ih, w_hh, b_ih, b_hh, act, mode, needs):
        ctx.save_for_backward(dh, dc, x, h0, c0, w_ih, w_hh, b_ih, b_hh)
        ctx.mode = mode
        hd = h0._data
        (rows, hidden), gru = hd.shape, mode == "GRU"
        zeros = NDArray.full(hd.shape, 0, hd.dtype, hd.device)     # no later steps' dh
        carry = dc._data.copy() if mode == "LSTM" else (
            NDArray.full(hd.shape, 0, hd.dtype, hd.device) if gru else None)
        dgi = act._new((rows, GATES[mode] * hidden))
        dgh = act._new(dgi.shape) if gru else dgi
        act.backend.recurrent_backward(
            MODES[mode], _buffer(dh._data), zeros.buffer, None if carry is None else carry.buffer,
            act.buffer, _buffer(hd), _buffer(None if c0 is None else c0._data), dgi.buffer,
            dgh.buffer if gru else None, 0, rows, hidden)
        grad_x = wrap(dgi.matmul(w_ih._data)) if needs[0] else None
        grad_h0 = grad_c0 = grad_w_ih = grad_w_hh = grad_b_ih = grad_b_hh = None
        if needs[1]:
            grad_h0 = dgh.matmul(w_hh._data)
            grad_h0 = wrap(grad_h0.binary(BinaryOp.ADD, carry) if gru else grad_h0)
        if needs[2] and carry is not None:
            grad_c0 = wrap(carry)
        if needs[3]:
            grad_w_ih = wrap(dgi.transpose(0, 1).matmul(x._data))
        if needs[4]:
            grad_w_hh = wrap(dgh.transpose(0, 1).matmul(hd))
        db_ih = dgi.reduce(ReduceOp.SUM, (0,)) if b_ih is not None and needs[5] else None
        if b_hh is not None and needs[6]:
            db_hh = db_ih.copy() if db_ih is not None and not gru else \
                dgh.reduce(ReduceOp.SUM, (0,))
            grad_b_hh = wrap(db_hh)
        grad_b_ih = None if db_ih is None else wrap(db_ih)
        return grad_x, grad_h0, grad_c0, grad_w_ih, grad_w_hh, grad_b_ih, grad_b_hh

    @staticmethod
    def backward(ctx, *incoming):
        mode = ctx.mode

        def replay(x, h0, c0, w_ih, w_hh, b_ih, b_hh):
            state = (h0,) if c0 is None else (h0, c0)
            _, final = composed_layer(mode, _linear(x, w_ih, b_ih).unsqueeze(0), state, w_hh,
                                      b_hh)
            return final
        return _second_derivatives(ctx.saved_tensors, incoming, replay) + (None, None, None)
