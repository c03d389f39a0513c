"""gradcheck / gradgradcheck: analytical gradients (the engine's) against central finite
differences, in float64 (torch.autograd.gradcheck). Exposed as `mt.autograd.gradcheck`."""
import numpy as np

from .engine import _is_tensor, grad
from ..tensor import tensor as make_tensor


def _as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


def _flat_values(outputs):
    return [o.detach().cpu().numpy().astype(np.float64).ravel() for o in _as_tuple(outputs)]


def _element_writer(tensor):
    """(current values on the host, write(index, value)) for perturbing tensor in place: through
    shared memory on the CPU, through an in-place index write on other devices."""
    if tensor.device.type == "cpu":
        values = tensor.detach().numpy()       # shares memory with the tensor

        def write(index, value):
            values[index] = value
        return values, write
    target = tensor.detach()                   # shares storage with the tensor

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
        rows = sum(o.size for o in outputs)
        jacobians.append(np.stack(cols, axis=1) if cols else np.zeros((rows, 0)))
    return jacobians


def _analytical_jacobian(fn, inputs):
    """Row by row: backprop a one-hot gradient through each output element."""
    outputs = _as_tuple(fn(*inputs))
    diff_inputs = [t for t in inputs if _is_tensor(t) and t.requires_grad]
    sizes = [o.numel() for o in outputs]
    rows = sum(sizes)
    jacobians = [np.zeros((rows, t.numel())) for t in diff_inputs]
    row = 0
    for out_i, out in enumerate(outputs):
        for flat in range(sizes[out_i]):
            grads_out = []
            for j, o in enumerate(outputs):
                seed = np.zeros(o.numel())
                if j == out_i:
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
