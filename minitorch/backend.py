"""Devices and the kernel interface that every backend implements.

A backend is a module exposing the functions of `KernelBackend` plus buffer helpers. Buffers are
1-D, C-contiguous arrays of the storage dtype (numpy on the CPU, CuPy on the GPU): float32,
float64, int64, or uint8 for both bool and uint8 (only `cast` needs telling which). Shapes,
strides and offsets are Python ints counted in elements; strides may be zero (broadcast) or
negative (flipped views). Kernels write into a preallocated `out` and return None. "Compact"
means C-contiguous and starting at element 0 of the buffer passed (callers slice a buffer when
a compact view starts at an offset).
"""
from typing import Protocol, runtime_checkable


@runtime_checkable
class KernelBackend(Protocol):
    """The kernel interface, identical on every device (see docs/ARCHITECTURE.md)."""

    def compact(self, a, out, shape, strides, offset):
        """out[i] = a[offset + Σ idx_d·strides_d] for the i-th index of `shape` in C order."""

    def strided_add(self, src, out, shape, strides, offset):
        """out[offset + Σ idx_d·strides_d] += src[i]: the adjoint of compact. Correct when the
        view overlaps itself (stride 0, as_strided windows): that is col2im."""

    def strided_set(self, src, out, shape, strides, offset):
        """out[offset + Σ idx_d·strides_d] = src[i] (src may hold one element: a fill)."""

    def join(self, sources, out, shapes, strides, offsets, out_strides, out_offsets):
        """For each source i: out[out_offsets[i] + Σ idx_d·out_strides_d] =
        sources[i][offsets[i] + Σ idx_d·strides[i]_d] over the indices of shapes[i]: stack, cat
        and collate put every input into its slot of the output in one kernel call."""

    def cast(self, a, out, to_bool=True):
        """out[i] = a[i] converted to out's dtype. A uint8 buffer stores bool and uint8 alike,
        so `to_bool` says which a uint8 `out` is: bool (a[i] != 0) or uint8 (C's conversion
        through int64, keeping the low byte: torch's modulo-256 wrap)."""

    def unary(self, op, a, out):
        """out[i] = op(a[i]) over compact a; `op` is a UnaryOp. Predicates write bool."""

    def binary(self, op, a, b, out, shape, a_strides, a_offset, b_strides, b_offset):
        """out (compact, `shape`) = op(a, b), each input read through its own strides, so a
        broadcast operand (stride 0) is never materialised. a and b share a dtype; out has it
        too, or bool for comparisons and logical ops."""

    def where(self, cond, a, b, out, shape, c_strides, c_offset, a_strides, a_offset,
              b_strides, b_offset):
        """out = a if cond else b, all three read through their strides (cond is bool)."""

    def reduce_last(self, op, a, out, n, inner=1):
        """Reduce the middle axis of compact a viewed as (m, n, inner) into out (m, inner).
        inner=1 is the last axis. ARGMAX/ARGMIN write int64 (first index of the extreme;
        NaN counts as the extreme, as in torch)."""

    def scan_last(self, op, a, out, n, inner=1):
        """Inclusive scan (SUM: cumsum, PROD: cumprod) along the middle axis of (m, n, inner)."""

    def scan_index_last(self, op, a, values, indices, n, inner=1):
        """Running MAX (cummax) or MIN (cummin) along the middle axis of (m, n, inner) into
        values, with indices (int64) = the position along n where it was found: ties go to the
        later position, and NaN propagates (a later NaN taking over), as in torch."""

    def softmax_last(self, a, out, n, log=False):
        """out = softmax (log_softmax when `log`) of each length-n row of compact float a."""

    def softmax_backward_last(self, g, y, out, n, log=False):
        """out = the input gradient of softmax (log_softmax) rows of length n, from the
        output y and its gradient g: y * (g - sum(g * y)) (g - exp(y) * sum(g))."""

    def cross_entropy_rows(self, a, target, picked, stats, n):
        """picked[r] = log_softmax(row r of compact float a)[target[r]] for length-n rows (the
        int64 targets checked in [0, n) first: IndexError, nothing written); stats[2r] and
        stats[2r + 1] get the row's max and log Σ exp(x − max)."""

    def cross_entropy_rows_backward(self, coef, a, target, stats, out, n, targets_checked=False):
        """out[r, j] = coef[r]·[j = target[r]] − softmax(row r of a)[j]·coef[r]: the input
        gradient of cross_entropy_rows for a gradient coef[r] at each picked value, the
        softmax from the forward's stats. targets_checked: the forward checked these very
        targets and the caller guards them against writes since (a saved tensor's version),
        so the GPU skips its range check, a device-to-host copy; the CPU checks anyway."""

    def norm_rows(self, x, weight, bias, y, mean, rstd, n, inner=1, groups=1, eps=1e-5,
                  rms=False, segments=1):
        """y = (x - mean)·rstd·weight + bias over each length-n row of compact float x, mean
        and rstd = 1/sqrt(var + eps) (biased) saved per row; row r, element j uses parameter
        (r % groups)·(n // inner) + j // inner (weight, bias optional); rms: mean 0.
        segments > 1 (with inner = n): x, y are compact (segments, rows, n // segments), row r
        the pieces [i, r, :] (batch norm's channels of an NCHW input, read in place)."""

    def norm_rows_backward(self, g, x, mean, rstd, weight, grad_input, grad_weight, grad_bias,
                           n, inner=1, groups=1, rms=False, segments=1):
        """The gradients of norm_rows: grad_input per row (None: skipped), grad_weight = Σ g·x̂
        and grad_bias = Σ g per parameter (both None, or both given)."""

    def sort_last(self, a, values, indices, n, descending=False):
        """values = each length-n row of compact a sorted (ascending, or descending when
        `descending`), indices (int64) = where each value was in its row. Always stable: ties
        keep their input order, descending too. NaN is the largest value (last ascending,
        first descending), as in torch. Any storage dtype; values has a's."""

    def top_last(self, a, values, indices, n, k, descending=False):
        """values, indices (rows of k, 0 < k <= n) = the first k of sort_last's order of each
        length-n row of compact a, and where they were in their row: topk without sorting the
        rest of the row."""

    def searchsorted(self, boundaries, values, out, n, m, right=False, sorter=None):
        """out (int64) = for each compact value, viewed as rows of m, its insertion point in the
        sorted row of n boundaries of its row, or in the one row when boundaries has only one:
        the left end of equal values, the right end when `right` (torch's comparisons, NaN
        included). `sorter` (int64 positions in [0, n) per boundary) orders unsorted rows."""

    # ---- fused attention: planes (batch·head) of rows with unit column stride, each plane at
    # its own element offset; a view is (offsets, row stride[, column stride]) ----------------
    def attention_forward(self, q, k, v, out, lse, sizes, q_view, k_view, v_view, scale,
                          causal=False, mask=None, mask_view=None, keep=None, keep_scale=1.0):
        """out (compact planes × L × Ev) = softmax(scale · q kᵀ + mask) v per plane and lse
        (planes × L) = each row's logsumexp, sizes = (planes, L, S, E, Ev), q/k/v of one float
        dtype read through their views, without forming the L × S weights (online softmax).
        `mask`: bool (attend where True) or q's dtype (added), read through mask_view (any
        column stride, 0 broadcasts); `causal`: key j > row i masked; a row with every key
        masked gives 0 and lse -inf. `keep` (bool, compact planes × L × S): dropout's kept
        weights, multiplied by keep_scale after normalising."""

    def attention_backward(self, g, q, k, v, out, lse, dq, dk, dv, sizes, g_view, q_view,
                           k_view, v_view, scale, causal=False, mask=None, mask_view=None,
                           keep=None, keep_scale=1.0):
        """dq (planes × L × E), dk (planes × S × E), dv (planes × S × Ev), compact, overwritten
        = the gradients of attention_forward given the output gradient g (read through g_view)
        and the forward's out and lse, weights recomputed from lse (one per q plane: the
        caller sums planes that share a k / v plane)."""

    # ---- max pooling: compact (planes, *size) arrays, 1 to 3 spatial axes -------------------
    def max_pool_forward(self, x, values, indices, planes, size, out_size, kernel, stride,
                         padding, dilation, bias=None):
        """values (x's dtype) and indices (int64), both (planes, *out_size) = the maximum of
        every window of x (planes, *size) and its flat position in the plane (torch's
        return_indices). size, out_size (computed by the caller, ceil_mode included), kernel,
        stride, padding and dilation are equally long tuples. Window o along an axis covers
        o·stride - padding + j·dilation for j < kernel; only positions inside the input take
        part, the first of them being the initial index, and the maximum starts from the
        dtype's lowest value (-inf) with torch's rule `val > max || isnan(val)`: NaN wins (the
        last of several), ties keep the first position. With `bias` (float32/float64, x's
        dtype, one value per channel, its length dividing planes), every value is read as
        relu(x + bias[plane % channels]) with ADD_RELU's ops: a convolution's bias add and
        ReLU pooled without their pass."""

    def max_pool_backward(self, grad_out, indices, grad_in, planes, in_plane, out_plane):
        """grad_in (planes, in_plane; float, overwritten) = the sum of grad_out (planes,
        out_plane) at its flat positions `indices` within each plane: max_pool_forward's
        adjoint (overlapping windows add up; positions outside the plane are skipped)."""

    # ---- factorisations: in place on compact batches of row-major float matrices; errors the
    # arithmetic finds come back per matrix in an int64 info, as LAPACK's ----------------------
    def lu_factor(self, a, pivots, info, m, n):
        """LAPACK getrf on each compact m x n matrix of a (one per element of info), in place:
        U and the unit-diagonal L of P A = L U with partial pivoting (the first row of largest
        magnitude). pivots: min(m, n) 1-based row swaps per matrix (int64, where torch and
        LAPACK use int32); info: the order of the first exactly-zero pivot, or 0."""

    def lu_permutation(self, pivots, perm, m, k):
        """perm (int64, m per matrix) = for each row, the original row that LAPACK's swaps
        `pivots` (k <= m per matrix, 1-based) bring there: P A = A[perm]. Swaps out of [1, m]
        are skipped; callers reject them first."""

    def triangular_solve(self, a, b, n, k, upper=False, unitriangular=False):
        """b = A^-1 b in place, for compact n x k matrices b and compact triangular n x n
        matrices a of one batch size (lower, or upper when `upper`; only that triangle is read,
        and not its diagonal when `unitriangular`). Transposed solves are compacted views."""

    def cholesky_factor(self, a, info, n):
        """Cholesky in place on each compact n x n matrix (one per element of info): L with
        L L^T = A from A's lower triangle, the strict upper triangle zeroed; info (int64) = the
        order of the first leading minor that is not positive definite (the factorisation
        stops there, as potrf's), or 0."""

    # ---- spectral: compact batches of row-major float32/float64 matrices, `batch` of them;
    # no convergence within the sweep limit sets the matrix's int64 info to 1 ------------------
    def eigh_jacobi(self, a, values, vectors, info, batch, n):
        """values (ascending) and vectors (eigenvectors in columns) of each symmetric n x n
        matrix of a, read from its lower triangle (a is overwritten): cyclic Jacobi in the
        round-robin pair order, the same rotations on every backend."""

    def svd_jacobi(self, a, s, v, info, batch, m, n):
        """One-sided Jacobi SVD of each m x n matrix (m >= n) of a, in place: a becomes U
        (orthonormal columns, completed where s is 0), s the singular values (descending), v
        (n x n) V, so that A = U diag(s) V^T."""

    def eig_general(self, a, values, vectors, info, batch, n):
        """Eigenvalues (values, batch x n) and unit eigenvectors (the columns of vectors, batch
        x n x n; None: values only) of each general n x n complex128 matrix of a (overwritten):
        Hessenberg reduction and shifted QR to the Schur form; info (int64) 0, or the order of
        an eigenvalue that did not converge. The GPU backend runs the CPU kernel on a host
        copy."""

    def qr_householder(self, a, tau, batch, m, n):
        """LAPACK geqrf, in place: R on and above the diagonal, the reflectors below it, tau
        (min(m, n) per matrix) their factors (dlarfg's signs, so Q and R equal LAPACK's)."""

    def qr_form_q(self, a, tau, q, batch, m, n, cols):
        """q (batch x m x cols, cols <= m) = the first cols columns of Q from qr_householder's
        a and tau (LAPACK orgqr): cols = min(m, n) is the reduced Q, m the complete one."""

    def adam_step(self, param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, beta1, beta2, eps,
                  step_size, bias_correction2_sqrt, grad_decay=0.0, param_scale=1.0,
                  maximize=False):
        """One Adam update of compact float buffers of one size, in place (torch's rule
        operation for operation); max_exp_avg_sq is None unless amsgrad. grad_decay is L2
        weight decay, param_scale the decoupled (AdamW) factor 1 - lr * weight_decay."""

    def foreach_sgd(self, params, grads, momentum_buffers, lr, momentum=0.0, dampening=0.0,
                    weight_decay=0.0, nesterov=False, maximize=False, init_buffers=False):
        """torch's SGD rule over lists of compact buffers of one float dtype (one kernel call
        for all; momentum_buffers None without momentum, init_buffers: set them to the grad)."""

    def foreach_adam(self, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, lr,
                     beta1, beta2, eps, weight_decay=0.0, decoupled=False, maximize=False):
        """adam_step over lists of buffers in one call; steps are host one-element counters,
        each += 1 and used for its parameter's bias corrections (max_exp_avg_sqs None or list)."""

    def foreach_adadelta(self, params, grads, square_avgs, acc_deltas, steps, lr, rho, eps,
                         weight_decay=0.0, maximize=False):
        """torch's Adadelta rule over lists of buffers in one call (host steps += 1, or None)."""

    def foreach_rmsprop(self, params, grads, square_avgs, momentum_buffers, grad_avgs, steps, lr,
                        alpha, eps, weight_decay=0.0, momentum=0.0, maximize=False):
        """torch's RMSprop rule over lists of buffers in one call (momentum_buffers / grad_avgs
        None unless momentum / centered; host steps += 1, or None)."""

    def matmul(self, a, b, out, batch, m, n, k, a_strides=None, a_offset=0,
               b_strides=None, b_offset=0, bias=None, bias_offset=0, bias_strides=(0, 1),
               relu=False):
        """out (compact batch×m×n) = a (batch×m×k) @ b (batch×k×n). Strides are 3-tuples
        (batch, row, col); None means compact. Stride-0 batch broadcasts; transposes are free.
        `batch` may be a pair (outer, inner) of batch axes, the strides then 4-tuples (outer,
        inner, row, col): attention's (batch, head) views of one array, read in place.
        Epilogue, as each block of out is stored: out[·, i, j] += bias[bias_offset +
        i·bias_strides[0] + j·bias_strides[1]] when bias is given, then relu when asked."""

    def grid_gather(self, x, index, out, planes, in_size, out_size):
        """out[p, a, b, c] = x[p, index_d[a], index_h[b], index_w[c]] for a compact (planes,
        *in_size) x, in_size / out_size 3-tuples and `index` the three int64 source tables
        one after another (reflect / replicate / circular padding, nearest upsampling)."""

    def grid_scatter_add(self, grad, index, grad_in, planes, in_size, out_size):
        """grad_in = 0, then grad_in[p, index_d[a], index_h[b], index_w[c]] += grad[p, a, b, c]
        (grid_gather's adjoint, float)."""

    def lerp_resample(self, x, index, weights, out, planes, in_size, out_size, taps):
        """out[p] = separable linear interpolation of a compact (planes, *in_size) float x:
        per axis and output position two source indices (`index`, int64) and two weights
        (`weights`, x's dtype), the three axes' tables one after another; an axis with taps 1
        passes its first source through. Linear, bilinear and trilinear interpolate."""

    def lerp_resample_backward(self, grad, index, weights, grad_in, planes, in_size, out_size,
                               taps):
        """grad_in = 0, then lerp_resample's adjoint applied to grad."""

    def grid_sample_forward(self, x, grid, out, batch, channels, in_size, out_size, mode,
                            padding, align_corners):
        """out (batch, channels, *out_size) = compact float x (batch, channels, *in_size)
        sampled at grid (batch, *out_size, len(in_size)) of (x, y[, z]) points in [-1, 1]:
        torch's grid_sampler_2d / 3d with its mode (0 bilinear, 1 nearest, 2 bicubic) and
        padding (0 zeros, 1 border, 2 reflection) codes (layout: _cpu/grid_sample.pyx)."""

    def grid_sample_backward(self, grad, x, grid, grad_input, grad_grid, batch, channels,
                             in_size, out_size, mode, padding, align_corners):
        """grad_input (zeroed first) and grad_grid of grid_sample_forward from the output
        gradient grad; either may be None when not wanted."""

    def recurrent_forward(self, mode, gi, gh, bias, h, c, act, hprev, cprev, out, row0, rows,
                          hidden):
        """One time step of an RNN (mode 0 tanh, 1 relu), LSTM (2) or GRU (3) on rows [row0,
        row0 + rows) of the per-step buffers: gates from gi + gh (+ bias), h (and c) updated in
        place, out written, and act / hprev / cprev (None: not kept) saved for backward
        (layout: _cpu/recurrent.pyx)."""

    def recurrent_backward(self, mode, dout, dh, carry, act, hprev, cprev, dgi, dgh, row0,
                           rows, hidden):
        """The backward of one recurrent_forward step: gate gradients dgi (and the GRU's
        hidden-side dgh) from dh + dout and the running carry (LSTM: dc), carry updated."""

    def gather(self, a, index, out, outer, a_dim, index_dim, inner):
        """out[o, j, i] = a[o, index[o, j, i], i]; a is (outer, a_dim, inner)."""

    def scatter(self, src, index, out, outer, out_dim, index_dim, inner):
        """out[o, index[o, j, i], i] = src[o, j, i]."""

    def scatter_add(self, src, index, out, outer, out_dim, index_dim, inner):
        """out[o, index[o, j, i], i] += src[o, j, i]: the adjoint of gather."""

    def scatter_reduce(self, op, src, index, out, outer, out_dim, index_dim, inner):
        """out[o, index[o, j, i], i] = op(that element, src[o, j, i]) for the ReduceOp PROD,
        MAX or MIN (MAX / MIN propagate NaN; uint8 products wrap). Floating-point products may
        be combined in any order on the GPU."""

    def index_select(self, a, index, out, outer, a_dim, n_index, inner):
        """out[o, j, i] = a[o, index[j], i]."""

    def index_add(self, src, index, out, outer, out_dim, n_index, inner):
        """out[o, index[j], i] += src[o, j, i]: the adjoint of index_select."""

    def take(self, a, offsets, out):
        """out[i] = a[offsets[i]] (flat element offsets into the buffer a)."""

    def put(self, src, offsets, out, accumulate):
        """out[offsets[i]] = src[i], or += when `accumulate` (duplicates then all count)."""

    # complex numbers: buffers of (re, im) float pairs (data movement takes complex buffers as
    # they are, see _cpu/complex_pairs.py); ops: _cpu/complex.pyx's COMPLEX_BINARY / _UNARY
    def complex_binary(self, op, a, b, out):
        """out = a op b (MUL, DIV) over compact pair buffers of one length."""

    def complex_unary(self, op, a, out):
        """out = op(a) over a compact pair buffer: ABS and ANGLE write one real per pair, EXP,
        SGN and RECIPROCAL a pair."""

    def complex_polar(self, r, theta, out):
        """out[i] = r[i] (cos theta[i] + j sin theta[i]) from compact real buffers."""

    def fft_rows(self, a, out, rows, n, inverse=False):
        """The unnormalised DFT (inverse: the conjugate transform) of each length-n row of a
        compact pair buffer (CPU only: the GPU backend has no FFT)."""


KERNEL_NAMES = tuple(name for name in KernelBackend.__dict__
                     if not name.startswith("_") and callable(KernelBackend.__dict__[name]))


class device:
    """`mt.device("cpu")`, `mt.device("cuda")`, `mt.device("cuda:1")`, `mt.device("cuda", 1)`,
    `mt.device("meta")` (shapes and dtypes only, no storage: minitorch/_meta). As in torch, a
    device is also a context manager: `with mt.device("meta"): ...` makes it the default device
    of the factories inside."""
    __slots__ = ("type", "index")

    def __new__(cls, spec, index=None):
        if isinstance(spec, device):
            return spec
        if isinstance(spec, int):
            spec, index = "cuda", spec
        if index is not None and index < 0:
            raise RuntimeError("Device index must not be negative")
        if not isinstance(spec, str):
            raise TypeError(f"device() received an invalid combination of arguments: {spec!r}")
        kind, _, number = spec.partition(":")
        if kind not in ("cpu", "cuda", "meta"):
            raise RuntimeError("Expected one of cpu, cuda device type at start of device string: "
                               f"{spec}")
        if number:
            if index is not None or not number.isdigit():
                raise RuntimeError(f"Invalid device string: '{spec}'")
            if len(number) > 18:     # torch parses the index as a C int64 (then int8)
                raise RuntimeError(f"Could not parse device index '{number}' in device string "
                                   f"'{spec}'")
            index = int(number)
        if kind == "cpu":
            index = None
        elif index is None and kind == "cuda":
            index = 0
        key = (kind, index)
        cached = _DEVICES.get(key)
        if cached is None:
            cached = object.__new__(cls)
            object.__setattr__(cached, "type", kind)
            object.__setattr__(cached, "index", index)
            _DEVICES[key] = cached
        return cached

    def __setattr__(self, name, value):
        raise AttributeError("device objects are immutable")

    def __eq__(self, other):
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    # Devices are interned (one object per (type, index), made by __new__ above), so equal
    # devices are the same object and identity's C hash serves: every allocation's backend
    # lookup hashes one, where a Python __hash__ cost ~0.1 us.
    __hash__ = object.__hash__

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self):
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __reduce__(self):
        return (device, (str(self),))

    def __enter__(self):
        """torch.device as a context manager: the default device of factories until exit."""
        _device_contexts.append(_default_device[0])
        _default_device[0] = self
        return self

    def __exit__(self, *exc):
        _default_device[0] = _device_contexts.pop()
        return False


_DEVICES = {}
CPU = device("cpu")
_default_device = [CPU]
_device_contexts = []       # the default devices that `with device(...)` blocks replaced


def set_default_device(spec):
    """torch.set_default_device: where factories (tensor, zeros, randn, a layer's parameters,
    …) put a tensor given no device; None restores the CPU."""
    _default_device[0] = CPU if spec is None else device(spec)


def get_default_device():
    """torch.get_default_device."""
    return _default_device[0]


def target_device(spec):
    """The device a factory given `spec` makes its tensor on (None: the default device)."""
    return _default_device[0] if spec is None else device(spec)


_BACKENDS = {}


def get_backend(dev):
    """The kernel module for a device (memoised: this sits on every op's path). Importing the GPU
    one needs CuPy and a GPU; the meta one (minitorch/_meta) allocates nothing and runs nothing."""
    backend = _BACKENDS.get(dev)
    if backend is None:
        if dev.type == "cpu":
            from . import _cpu as backend
        elif dev.type == "meta":
            from . import _meta
            backend = _meta.MetaBackend(KERNEL_NAMES)
        else:
            from . import _gpu
            backend = _gpu.backend_for(dev.index)
        _BACKENDS[dev] = backend
    return backend
