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
from ..tensor import tensor as make_tensor, wrap


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


def gradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, **_ignored):
    """Compare autograd's Jacobian with central finite differences (inputs should be float64)."""
    inputs = _as_tuple(inputs)
    numerical = [j for j in _numerical_jacobian(fn, inputs, eps) if j is not None]
    analytical = _analytical_jacobian(fn, inputs)
    for i, (a, n) in enumerate(zip(analytical, numerical)):
        if a.shape != n.shape or not np.allclose(a, n, atol=atol, rtol=rtol):
            if raise_exception:
                raise GradcheckError(f"Jacobian mismatch for output 0 with respect to input {i},\n"
                                     f"numerical:{n}\nanalytical:{a}\n")
            return False
    return True


def gradgradcheck(fn, inputs, grad_outputs=None, eps=1e-6, atol=1e-5, rtol=1e-3,
                  raise_exception=True, **_ignored):
    """gradcheck of the first derivative: checks the backward of backward (create_graph)."""
    inputs = _as_tuple(inputs)
    outputs = _as_tuple(fn(*inputs))
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        grad_outputs = tuple(make_tensor(rng.standard_normal(o.shape), dtype=o.dtype,
                                         device=o.device, requires_grad=True) for o in outputs)
    grad_outputs = _as_tuple(grad_outputs)

    def first_derivative(*args):
        ins, gos = args[:len(inputs)], args[len(inputs):]
        outs = _as_tuple(fn(*ins))
        diff = [t for t in ins if _is_tensor(t) and t.requires_grad]
        grads = grad(outs, diff, gos, create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(first_derivative, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)


class GradcheckError(RuntimeError):
    """Raised by gradcheck when the analytical and numerical Jacobians differ."""
