# cython: cdivision=True
"""One time step of a recurrent layer (RNN tanh / relu, LSTM, GRU), forward and backward, as one
pass over the step's rows: the gate nonlinearities and the state update that were a dozen
elementwise kernels per step (the CUDA twins are minitorch/_gpu/kernels/recurrent.cu).
functions/recurrent.py runs the loop over time around them: forward, per step, one GEMM
(h @ W_hhᵀ) and `recurrent_forward`; backward `recurrent_backward` and one GEMM (dgates @ W_hh).

Layout. Per-step arrays are compact (total_rows, width) buffers in which the step occupies rows
[row0, row0 + rows): gi (G·H, the input projection with b_ih), act (A·H, what backward needs),
hprev / cprev (H, the state the step started from), out (H), dgi / dgh (G·H). The running state
h, c and the running gradients dh, carry are (N, H) buffers of which the step uses the first
`rows` rows (packed sequences shrink or grow the active rows, the rest keep their values).
gh (rows, G·H) is h @ W_hhᵀ without bias; bias is b_hh (G·H) or None.

Modes and what a row of act holds:
  0 RNN tanh, 1 RNN relu: h' (A = 1)
  2 LSTM, gates i f g o:  i f g o after their nonlinearities (A = 4)
  3 GRU, gates r z n:     r, z, n and hn = W_hn h + b_hn (A = 4)
carry: LSTM the running dc; GRU the part of dh that reaches h_prev directly (dh ⊙ z), so that
the GEMM dgh @ W_hh can overwrite dh; RNN: none.
"""
cimport numpy as cnp
from cython.parallel cimport prange
from libc.string cimport memcpy

from minitorch._cpu.common cimport DT_F32, DT_F64, dtype_code, threads_for
from minitorch._cpu.vector_math cimport r_sigmoid, r_tanh, real

cnp.import_array()

MODES = ("RNN_TANH", "RNN_RELU", "LSTM", "GRU")
cdef Py_ssize_t[4] _GATES_C = [1, 1, 4, 3]      # G: gate blocks of gi / gh / dgi / dgh
cdef Py_ssize_t[4] _SAVED_C = [1, 1, 4, 4]      # A: blocks of act


cdef struct Step:
    # one step's buffers (NULL where the mode or the caller has none) and its geometry
    void* gi
    void* gh
    void* bias
    void* h
    void* c
    void* act
    void* hprev
    void* cprev
    void* out
    Py_ssize_t row0, hidden


# Each mode's row function runs simple loops over a row's elements (no mode test inside them) so
# that gcc vectorizes them; r_sigmoid / r_tanh are branch-free.

cdef inline void lstm_forward_row(const real* gi, const real* gh, const real* bias, real* h,
                                  real* c, real* act, real* hprev, real* cprev, real* out,
                                  Py_ssize_t H) noexcept nogil:
    cdef Py_ssize_t j
    if bias != NULL:                            # gi + (h W_hhᵀ + b_hh), as F.linear adds it
        for j in range(4 * H):
            act[j] = gi[j] + (gh[j] + bias[j])
    else:
        for j in range(4 * H):
            act[j] = gi[j] + gh[j]
    for j in range(2 * H):                      # input and forget gates
        act[j] = r_sigmoid(act[j])
    for j in range(2 * H, 3 * H):               # cell gate
        act[j] = r_tanh(act[j])
    for j in range(3 * H, 4 * H):               # output gate
        act[j] = r_sigmoid(act[j])
    # separate loops with few pointers each: gcc vectorizes a loop only while it can check
    # every pair of its pointers for overlap at run time (at most 10 pairs)
    memcpy(cprev, c, H * sizeof(real))
    memcpy(hprev, h, H * sizeof(real))
    for j in range(H):
        c[j] = act[H + j] * cprev[j] + act[j] * act[2 * H + j]
    for j in range(H):
        h[j] = act[3 * H + j] * r_tanh(c[j])
    memcpy(out, h, H * sizeof(real))


cdef inline void gru_forward_row(const real* gi, const real* gh, const real* bias, real* h,
                                 real* act, real* hprev, real* out, Py_ssize_t H) noexcept nogil:
    """act = r, z, n, hn (hn = W_hn h + b_hn, which backward needs for dr)."""
    cdef Py_ssize_t j
    cdef real hp, n
    if bias != NULL:
        for j in range(2 * H):
            act[j] = gi[j] + (gh[j] + bias[j])
        for j in range(H):
            act[3 * H + j] = gh[2 * H + j] + bias[2 * H + j]
    else:
        for j in range(2 * H):
            act[j] = gi[j] + gh[j]
        for j in range(H):
            act[3 * H + j] = gh[2 * H + j]
    for j in range(2 * H):
        act[j] = r_sigmoid(act[j])
    for j in range(H):
        act[2 * H + j] = r_tanh(gi[2 * H + j] + act[j] * act[3 * H + j])
    for j in range(H):
        hp = h[j]
        n = act[2 * H + j]
        hprev[j] = hp
        h[j] = n + act[H + j] * (hp - n)
        out[j] = h[j]


cdef inline void simple_forward_row(bint relu, const real* gi, const real* gh, const real* bias,
                                    real* h, real* act, real* hprev, real* out,
                                    Py_ssize_t H) noexcept nogil:
    cdef Py_ssize_t j
    cdef real x, zero = 0
    if bias != NULL:
        for j in range(H):
            act[j] = gi[j] + (gh[j] + bias[j])
    else:
        for j in range(H):
            act[j] = gi[j] + gh[j]
    if relu:
        for j in range(H):
            x = act[j]
            act[j] = zero if x < zero else x    # NaN passes through, as torch's
    else:
        for j in range(H):
            act[j] = r_tanh(act[j])
    for j in range(H):
        hprev[j] = h[j]
        h[j] = act[j]
        out[j] = act[j]


cdef void forward_rows(int mode, Step s, Py_ssize_t r0, Py_ssize_t r1, real dummy) noexcept nogil:
    """Rows [r0, r1) of one forward step; `dummy` only selects the element type."""
    cdef Py_ssize_t H = s.hidden, G = _GATES_C[mode], A = _SAVED_C[mode], r, row
    cdef const real* gi = <const real*>s.gi
    cdef const real* gh = <const real*>s.gh
    cdef real* act = <real*>s.act
    cdef real* hprev = <real*>s.hprev
    cdef real* cprev = <real*>s.cprev
    cdef real* out = <real*>s.out
    for r in range(r0, r1):
        row = s.row0 + r
        if mode == 2:
            lstm_forward_row(gi + row * G * H, gh + r * G * H, <const real*>s.bias,
                             <real*>s.h + r * H, <real*>s.c + r * H, act + row * A * H,
                             hprev + row * H, cprev + row * H, out + row * H, H)
        elif mode == 3:
            gru_forward_row(gi + row * G * H, gh + r * G * H, <const real*>s.bias,
                            <real*>s.h + r * H, act + row * A * H, hprev + row * H,
                            out + row * H, H)
        else:
            simple_forward_row(mode == 1, gi + row * G * H, gh + r * G * H,
                               <const real*>s.bias, <real*>s.h + r * H, act + row * A * H,
                               hprev + row * H, out + row * H, H)


cdef struct BackStep:
    void* dout
    void* dh
    void* carry
    void* act
    void* hprev
    void* cprev
    void* dgi
    void* dgh
    Py_ssize_t row0, hidden


cdef inline void lstm_backward_row(const real* dout, const real* dh, real* carry,
                                   const real* act, const real* cprev, real* dgi,
                                   Py_ssize_t H) noexcept nogil:
    """dgi's four blocks hold intermediate values until their final ones are written (short
    loops with few pointers each vectorize; see lstm_forward_row)."""
    cdef Py_ssize_t j
    cdef real one = 1
    cdef const real* i = act
    cdef const real* f = act + H
    cdef const real* cg = act + 2 * H
    cdef const real* o = act + 3 * H
    cdef real* di = dgi
    cdef real* df = dgi + H
    cdef real* dg = dgi + 2 * H
    cdef real* do = dgi + 3 * H
    for j in range(H):
        do[j] = dh[j] + dout[j]                                 # dh: the gradient of h_t
    for j in range(H):
        dg[j] = r_tanh(f[j] * cprev[j] + i[j] * cg[j])          # tanh(c_t)
    for j in range(H):
        df[j] = carry[j] + do[j] * o[j] * (one - dg[j] * dg[j])     # dc
    for j in range(H):
        carry[j] = df[j] * f[j]
    for j in range(H):
        do[j] = do[j] * dg[j] * o[j] * (one - o[j])
    for j in range(H):
        di[j] = df[j] * cg[j] * i[j] * (one - i[j])
    for j in range(H):
        dg[j] = df[j] * i[j] * (one - cg[j] * cg[j])
    for j in range(H):
        df[j] = df[j] * cprev[j] * f[j] * (one - f[j])


cdef inline void gru_backward_row(const real* dout, const real* dh, real* carry,
                                  const real* act, const real* hprev, real* dgi, real* dgh,
                                  Py_ssize_t H) noexcept nogil:
    """dgi's n block holds dh until dn replaces it (see lstm_backward_row)."""
    cdef Py_ssize_t j
    cdef real one = 1
    cdef const real* r = act
    cdef const real* z = act + H
    cdef const real* n = act + 2 * H
    cdef const real* hn = act + 3 * H
    cdef real* dr = dgi
    cdef real* dz = dgi + H
    cdef real* dn = dgi + 2 * H
    for j in range(H):
        dn[j] = dh[j] + dout[j] + carry[j]                      # the gradient of h_t
    for j in range(H):
        carry[j] = dn[j] * z[j]
    for j in range(H):
        dz[j] = dn[j] * (hprev[j] - n[j]) * z[j] * (one - z[j])
    for j in range(H):
        dn[j] = dn[j] * (one - z[j]) * (one - n[j] * n[j])
    for j in range(H):
        dr[j] = dn[j] * hn[j] * r[j] * (one - r[j])
    memcpy(dgh, dgi, 2 * H * sizeof(real))
    for j in range(H):
        dgh[2 * H + j] = dn[j] * r[j]


cdef inline void simple_backward_row(bint relu, const real* dout, const real* dh,
                                     const real* act, real* dgi, Py_ssize_t H) noexcept nogil:
    cdef Py_ssize_t j
    cdef real g, y, one = 1, zero = 0
    for j in range(H):
        g = dh[j] + dout[j]
        y = act[j]
        if relu:
            dgi[j] = g if y > zero else zero
        else:
            dgi[j] = g * (one - y * y)


cdef void backward_rows(int mode, BackStep s, Py_ssize_t r0, Py_ssize_t r1,
                        real dummy) noexcept nogil:
    """Rows [r0, r1) of one backward step: dgi (and for the GRU dgh) from dh + dout (+ carry),
    and the new carry; dh itself is left to the GEMM that follows."""
    cdef Py_ssize_t H = s.hidden, G = _GATES_C[mode], A = _SAVED_C[mode], r, row
    cdef const real* dout = <const real*>s.dout
    cdef const real* act = <const real*>s.act
    for r in range(r0, r1):
        row = s.row0 + r
        if mode == 2:
            lstm_backward_row(dout + row * H, <const real*>s.dh + r * H,
                              <real*>s.carry + r * H, act + row * A * H,
                              <const real*>s.cprev + row * H, <real*>s.dgi + row * G * H, H)
        elif mode == 3:
            gru_backward_row(dout + row * H, <const real*>s.dh + r * H, <real*>s.carry + r * H,
                             act + row * A * H, <const real*>s.hprev + row * H,
                             <real*>s.dgi + row * G * H, <real*>s.dgh + row * G * H, H)
        else:
            simple_backward_row(mode == 1, dout + row * H, <const real*>s.dh + r * H,
                                act + row * A * H, <real*>s.dgi + row * G * H, H)


cdef void* data_of(cnp.ndarray a, int dt, Py_ssize_t needed, str name) except? NULL:
    """The buffer's data after checking its type and size; None gives NULL."""
    if a is None:
        return NULL
    if dtype_code(a) != dt or not cnp.PyArray_IS_C_CONTIGUOUS(a):
        raise TypeError(f"recurrent step: {name} must be a C-contiguous buffer of the step's "
                        f"dtype, got {a.dtype}")
    if cnp.PyArray_SIZE(a) < needed:
        raise ValueError(f"recurrent step: {name} has {cnp.PyArray_SIZE(a)} elements, needs "
                         f"{needed}")
    return cnp.PyArray_DATA(a)


cdef int check_mode(int mode, cnp.ndarray first) except -1:
    if not 0 <= mode <= 3:
        raise ValueError(f"recurrent step: unknown mode {mode}")
    dt = dtype_code(first)
    if dt != DT_F32 and dt != DT_F64:
        raise TypeError(f"recurrent step: unsupported dtype {first.dtype}")
    return dt


def recurrent_forward(int mode, cnp.ndarray gi, cnp.ndarray gh, cnp.ndarray bias, cnp.ndarray h,
                      cnp.ndarray c, cnp.ndarray act, cnp.ndarray hprev, cnp.ndarray cprev,
                      cnp.ndarray out, Py_ssize_t row0, Py_ssize_t rows, Py_ssize_t hidden):
    """One forward step (see the module docstring): updates h (and c) in place, writes the
    step's rows of out, act, hprev (and cprev)."""
    cdef int dt = check_mode(mode, gi)
    cdef Py_ssize_t G = _GATES_C[mode], A = _SAVED_C[mode], end = row0 + rows, H = hidden, t
    if row0 < 0 or rows < 0 or hidden < 0:
        raise ValueError("recurrent step: negative row0, rows or hidden")
    cdef Step s
    s.gi = data_of(gi, dt, end * G * H, "gi")
    s.gh = data_of(gh, dt, rows * G * H, "gh")
    s.bias = data_of(bias, dt, G * H, "bias")
    s.h = data_of(h, dt, rows * H, "h")
    s.c = data_of(c, dt, rows * H, "c")
    s.act = data_of(act, dt, end * A * H, "act")
    s.hprev = data_of(hprev, dt, end * H, "hprev")
    s.cprev = data_of(cprev, dt, end * H, "cprev")
    s.out = data_of(out, dt, end * H, "out")
    if s.act == NULL or s.hprev == NULL or (mode == 2 and (s.c == NULL or s.cprev == NULL)):
        raise ValueError("recurrent step: a forward step needs act and hprev, an LSTM step c "
                         "and cprev")
    s.row0, s.hidden = row0, hidden
    cdef int nt = min(threads_for(rows * G * H), rows) if rows else 1
    with nogil:
        if nt <= 1:
            run_forward(mode, dt, s, 0, rows)
        else:
            for t in prange(nt, num_threads=nt, schedule="static"):
                run_forward(mode, dt, s, rows * t // nt, rows * (t + 1) // nt)


cdef void run_forward(int mode, int dt, Step s, Py_ssize_t r0, Py_ssize_t r1) noexcept nogil:
    if dt == DT_F32:
        forward_rows(mode, s, r0, r1, <float>0)
    else:
        forward_rows(mode, s, r0, r1, <double>0)


def recurrent_backward(int mode, cnp.ndarray dout, cnp.ndarray dh, cnp.ndarray carry,
                       cnp.ndarray act, cnp.ndarray hprev, cnp.ndarray cprev, cnp.ndarray dgi,
                       cnp.ndarray dgh, Py_ssize_t row0, Py_ssize_t rows, Py_ssize_t hidden):
    """One backward step (see the module docstring): writes the step's rows of dgi (and of dgh
    for the GRU) and updates carry; dh is read, not written."""
    cdef int dt = check_mode(mode, dout)
    cdef Py_ssize_t G = _GATES_C[mode], A = _SAVED_C[mode], end = row0 + rows, H = hidden, t
    if row0 < 0 or rows < 0 or hidden < 0:
        raise ValueError("recurrent step: negative row0, rows or hidden")
    cdef BackStep s
    s.dout = data_of(dout, dt, end * H, "dout")
    s.dh = data_of(dh, dt, rows * H, "dh")
    s.carry = data_of(carry, dt, rows * H, "carry")
    s.act = data_of(act, dt, end * A * H, "act")
    s.hprev = data_of(hprev, dt, end * H, "hprev")
    s.cprev = data_of(cprev, dt, end * H, "cprev")
    s.dgi = data_of(dgi, dt, end * G * H, "dgi")
    s.dgh = data_of(dgh, dt, end * G * H, "dgh")
    if s.act == NULL or s.dgi == NULL:
        raise ValueError("recurrent step: backward needs act and dgi")
    if (mode >= 2 and s.carry == NULL) or (mode == 2 and s.cprev == NULL) or \
            (mode == 3 and (s.hprev == NULL or s.dgh == NULL)):
        raise ValueError(f"recurrent step: a {MODES[mode]} backward step needs carry, cprev "
                         "(LSTM), hprev and dgh (GRU)")
    s.row0, s.hidden = row0, hidden
    cdef int nt = min(threads_for(rows * G * H), rows) if rows else 1
    with nogil:
        if nt <= 1:
            run_backward(mode, dt, s, 0, rows)
        else:
            for t in prange(nt, num_threads=nt, schedule="static"):
                run_backward(mode, dt, s, rows * t // nt, rows * (t + 1) // nt)


cdef void run_backward(int mode, int dt, BackStep s, Py_ssize_t r0,
                       Py_ssize_t r1) noexcept nogil:
    if dt == DT_F32:
        backward_rows(mode, s, r0, r1, <float>0)
    else:
        backward_rows(mode, s, r0, r1, <double>0)
