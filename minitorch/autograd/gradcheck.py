"""gradcheck / gradgradcheck: analytical gradients (the engine's) against central finite
differences, in float64 (torch.autograd.gradcheck). Exposed as `mt.autograd.gradcheck`.

Complex inputs and outputs count as their real coordinates, as torch's gradcheck treats them:
a complex input's real and imaginary parts are perturbed separately (two Jacobian columns per
element), a complex output gives two rows per element (its real and imaginary parts), and the
analytical row of an imaginary part backpropagates the seed 1j. Under torch's convention (the
gradient of a real L w.r.t. z = x + yj is dL/dx + j dL/dy) the two sides then match.
"""
from builtins import sum as builtins_sum

import numpy as np

from .engine import _is_tensor, grad
from ..tensor import ones_like, tensor as make_tensor, wrap, zeros_like


def _as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


def _real_coordinates(t):
    """A tensor's values as float64 coordinates: a complex element gives (re, im)."""
    values = t.detach().cpu().numpy()
    if np.iscomplexobj(values):
        return np.stack([values.real, values.imag], axis=-1).astype(np.float64).ravel()
    return values.astype(np.float64).ravel()


def _flat_values(outputs):
    return [_real_coordinates(o) for o in _as_tuple(outputs)]


def _coordinate_count(t):
    return t.numel() * (2 if t.dtype.is_complex else 1)


def _element_writer(tensor):
    """(current values on the host, write(index, value)) for perturbing tensor in place: through
    shared memory on the CPU, through an in-place index write on other devices."""
    if tensor.device.type == "cpu":
        data = tensor.detach()._data
        # shares memory with the tensor; a complex one as its (re, im) floats
        values = (data.as_real() if data.dtype.is_complex else data).numpy()

        def write(index, value):
            values[index] = value
        return values, write
    target = tensor.detach()                   # shares storage with the tensor
    if target._data.dtype.is_complex:          # written as its (re, im) floats
        target = wrap(target._data.as_real())

    def write(index, value):
        target[index] = float(value)
    return target.cpu().numpy(), write


def _numerical_jacobian(fn, inputs, eps):
    """d(flattened outputs)/d(each float input that requires grad), by central differences."""
    outputs = _flat_values(fn(*inputs))
    jacobians = []
    for tensor in inputs:
        if not (_is_tensor(tensor) and tensor.requires_grad):
            jacobians.append(None)
            continue
        values, write = _element_writer(tensor)
        cols = []
        for index in np.ndindex(values.shape):
            original = values[index].item()
            write(index, original + eps)
            plus = _flat_values(fn(*inputs))
            write(index, original - eps)
            minus = _flat_values(fn(*inputs))
            write(index, original)
            cols.append(np.concatenate([(p - m) / (2 * eps) for p, m in zip(plus, minus)])
                        if plus else np.zeros(0))
        rows = builtins_sum(o.size for o in outputs)
        jacobians.append(np.stack(cols, axis=1) if cols else np.zeros((rows, 0)))
    return jacobians


def _analytical_jacobian(fn, inputs):
    """Row by row: backprop a one-hot gradient through each output element."""
    outputs = _as_tuple(fn(*inputs))
    diff_inputs = [t for t in inputs if _is_tensor(t) and t.requires_grad]
    sizes = [_coordinate_count(o) for o in outputs]
    rows = builtins_sum(sizes)
    jacobians = [np.zeros((rows, _coordinate_count(t))) for t in diff_inputs]
    row = 0
    for out_i, out in enumerate(outputs):
        for flat in range(sizes[out_i]):
            grads_out = []
            for j, o in enumerate(outputs):
                seed = np.zeros(o.numel(), np.complex128 if o.dtype.is_complex else np.float64)
                if j == out_i and o.dtype.is_complex:     # (re, im) of element flat // 2
                    seed[flat // 2] = 1j if flat % 2 else 1.0
                elif j == out_i:
                    seed[flat] = 1.0
                grads_out.append(make_tensor(seed.reshape(o.shape), dtype=o.dtype,
                                             device=o.device))
            diff_outputs = [(o, g) for o, g in zip(outputs, grads_out) if o.requires_grad]
            if diff_outputs:
                grads = grad([o for o, _ in diff_outputs], diff_inputs,
                             [g for _, g in diff_outputs], retain_graph=True, allow_unused=True)
                for k, g in enumerate(grads):
                    if g is not None:
                        jacobians[k][row] = _flat_values(g)[0]
            row += 1
    return jacobians


def gradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, *,
              nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
              check_batched_grad=False, check_batched_forward_grad=False,
              check_forward_ad=False, check_backward_ad=True, fast_mode=False, masked=None):
    """Compare autograd's Jacobian with central finite differences (inputs should be float64).
    As torch's options: check_backward_ad, the engine's Jacobian row by row;
    check_forward_ad, func.jvp's column by column; check_batched_grad, a vmap of the
    vector-Jacobian product over several cotangents against one product each;
    check_grad_dtypes, every gradient in its input's dtype. Taken but changing nothing:
    fast_mode (the whole Jacobians are always compared, which is stricter), nondet_tol (every
    evaluation here is deterministic), check_batched_forward_grad (the forward products are
    checked one at a time) and check_undefined_grad (torch feeds undefined output gradients,
    which minitorch's engine does not have: not checked). masked=True is refused."""
    if masked:
        raise NotImplementedError("gradcheck(masked=True) is not supported by minitorch")
    inputs = _as_tuple(inputs)
    numerical = [j for j in _numerical_jacobian(fn, inputs, eps) if j is not None]
    checks = []
    if check_backward_ad:
        checks.append(("", _analytical_jacobian(fn, inputs)))
    if check_forward_ad:
        checks.append(("forward AD ", _forward_jacobian(fn, inputs)))
    for kind, jacobians in checks:
        for i, (a, n) in enumerate(zip(jacobians, numerical)):
            if a.shape != n.shape or not np.allclose(a, n, atol=atol, rtol=rtol):
                return _failed(raise_exception, f"{kind}Jacobian mismatch for output 0 with "
                               f"respect to input {i},\nnumerical:{n}\nanalytical:{a}\n")
    problems = []
    if check_backward_ad and check_grad_dtypes:
        problems += _gradient_dtype_problems(fn, inputs)
    if check_backward_ad and check_batched_grad:
        problems += _batched_grad_problems(fn, inputs, atol, rtol)
    if problems:
        return _failed(raise_exception, problems[0])
    return True


def _failed(raise_exception, message):
    if raise_exception:
        raise GradcheckError(message)
    return False


def _differentiable(inputs):
    return [i for i, t in enumerate(inputs) if _is_tensor(t) and t.requires_grad]


def _of_differentiable(fn, inputs, positions):
    """fn as a function of the inputs at `positions` alone, the other inputs held fixed."""
    def call(*values):
        args = list(inputs)
        for p, v in zip(positions, values):
            args[p] = v
        return fn(*args)
    return call


def _forward_jacobian(fn, inputs):
    """Column by column, func.jvp along each real coordinate of each differentiable input (a
    complex element's imaginary coordinate along 1j), rows laid out as the numerical ones."""
    from ..func import jvp      # a transform above this layer (torch's gradcheck calls fwAD)
    positions = _differentiable(inputs)
    of_differentiable = _of_differentiable(fn, inputs, positions)
    primals = tuple(inputs[p].detach() for p in positions)
    jacobians = []
    for k, primal in enumerate(primals):
        columns = []
        for coordinate in range(_coordinate_count(primal)):
            tangents = [zeros_like(p) for p in primals]
            flat = tangents[k].view(-1)
            if primal.dtype.is_complex:
                flat[coordinate // 2] = 1j if coordinate % 2 else 1.0
            else:
                flat[coordinate] = 1.0
            _, product = jvp(of_differentiable, primals, tuple(tangents))
            columns.append(np.concatenate(_flat_values(product)))
        jacobians.append(np.stack(columns, axis=1) if columns else
                         np.zeros((builtins_sum(_coordinate_count(o) for o in
                                                _as_tuple(fn(*inputs))), 0)))
    return jacobians


def _gradient_dtype_problems(fn, inputs):
    outputs = [o for o in _as_tuple(fn(*inputs)) if o.requires_grad]
    diff = [inputs[i] for i in _differentiable(inputs)]
    if not outputs:
        return []
    grads = grad(outputs, diff, [ones_like(o) for o in outputs], allow_unused=True)
    return [f"Gradient has dtype mismatch: input {k} is {t.dtype}, its gradient {g.dtype}"
            for k, (t, g) in enumerate(zip(diff, grads)) if g is not None and g.dtype != t.dtype]


def _batched_grad_problems(fn, inputs, atol, rtol, batch=3):
    """vmap of the vector-Jacobian product over `batch` random cotangents (through the graph
    recorded before the vmap) against one product each."""
    from ..func import vjp, vmap    # transforms above this layer
    positions = _differentiable(inputs)
    of_differentiable = _of_differentiable(fn, inputs, positions)
    outputs, vjp_fn = vjp(lambda *values: _as_tuple(of_differentiable(*values)),
                          *(inputs[p] for p in positions))
    rng = np.random.default_rng(0)
    cotangents = tuple(make_tensor(rng.standard_normal((batch,) + tuple(o.shape)), dtype=o.dtype,
                                   device=o.device) for o in outputs)
    batched = vmap(vjp_fn)(cotangents)
    problems = []
    for index in range(batch):
        single = vjp_fn(tuple(c[index] for c in cotangents))
        for k, (b, s) in enumerate(zip(batched, single)):
            if not np.allclose(_real_coordinates(b[index]), _real_coordinates(s), atol=atol,
                               rtol=rtol):
                problems.append(f"Batched grad mismatch for input {k}, cotangent {index}: "
                                f"batched {_real_coordinates(b[index])}, one at a time "
                                f"{_real_coordinates(s)}")
    return problems


def gradgradcheck(fn, inputs, grad_outputs=None, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, *, nondet_tol=0.0,
                  check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
                  check_fwd_over_rev=False, check_rev_over_rev=True, fast_mode=False,
                  masked=False):
    """gradcheck of the first derivative: checks the backward of backward (create_graph),
    with random output gradients (non-contiguous ones with gen_non_contig_grad_outputs) unless
    given. check_rev_over_rev / check_fwd_over_rev are gradcheck's check_backward_ad /
    check_forward_ad on the first derivative; the other options are gradcheck's."""
    inputs = _as_tuple(inputs)
    outputs = _as_tuple(fn(*inputs))
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        grad_outputs = tuple(_random_like(o, rng, gen_non_contig_grad_outputs)
                             for o in outputs)
    grad_outputs = _as_tuple(grad_outputs)

    def first_derivative(*args):
        ins, gos = args[:len(inputs)], args[len(inputs):]
        outs = _as_tuple(fn(*ins))
        diff = [t for t in ins if _is_tensor(t) and t.requires_grad]
        grads = grad(outs, diff, gos, create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(first_derivative, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, nondet_tol=nondet_tol,
                     check_undefined_grad=check_undefined_grad,
                     check_grad_dtypes=check_grad_dtypes, check_batched_grad=check_batched_grad,
                     check_forward_ad=check_fwd_over_rev, check_backward_ad=check_rev_over_rev,
                     fast_mode=fast_mode, masked=masked)


def _random_like(t, rng, non_contiguous):
    """A standard normal tensor shaped like t that requires grad; with non_contiguous, every
    other element of a buffer twice as long (a strided view)."""
    if not non_contiguous:
        return make_tensor(rng.standard_normal(t.shape), dtype=t.dtype, device=t.device,
                           requires_grad=True)
    wide = make_tensor(rng.standard_normal(tuple(t.shape) + (2,)), dtype=t.dtype,
                       device=t.device)
    return wide[..., 0].detach().requires_grad_()


class GradcheckError(RuntimeError):
    """Raised by gradcheck when the analytical and numerical Jacobians differ."""
