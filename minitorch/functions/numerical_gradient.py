"""torch.gradient: a function's derivative estimated from its samples along each dim (central
differences inside, one-sided ones of first or second order at the ends), with uniform
spacing (a scalar per dim) or sample coordinates (a 1-D tensor per dim), in torch's formulas.
Composed of our slicing, arithmetic and cat, so it works on any device and under autograd."""
import numbers

from ..ndarray import normalize_dim
from ..tensor import Tensor
from .joining import cat

__all__ = ["gradient"]


def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """torch.gradient: a tuple with the estimated derivative of `input` along each of `dim`
    (every dim by default). spacing: a number (the step of every dim), a list of numbers (one
    step per dim) or a list of 1-D tensors (each dim's sample coordinates)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"gradient(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    dims = _dims(input, dim)
    steps = _steps(input, spacing, dim, len(dims))
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    if any(input.shape[d] < edge_order + 1 for d in dims):
        raise RuntimeError("torch.gradient expected each dimension size to be at least "
                           "edge_order+1")
    if input.ndim == 0:
        return ()
    return tuple(_along(input, d, step, edge_order) for d, step in zip(dims, steps))


def _dims(input, dim):
    if dim is None:
        return list(range(input.ndim))
    dims = [normalize_dim(d, input.ndim) for d in ([dim] if isinstance(dim, int) else dim)]
    for d in dims:
        if dims.count(d) > 1:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    return dims


def _steps(input, spacing, dim, count):
    """One spacing per dim: a number or a 1-D coordinate tensor."""
    if isinstance(spacing, numbers.Number):
        return [spacing] * count
    spacing = list(spacing)
    if len(spacing) != count:
        if dim is None:
            raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar, or "
                               f"a list of length equal to 'self.dim() = {input.ndim}', since dim "
                               f"argument was not given, but got a list of length "
                               f"{len(spacing)}")
        raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or it's "
                           f"spacing and dim arguments to have the same length, but got a "
                           f"spacing argument of length {len(spacing)} and a dim argument of "
                           f"length {count}.")
    for step in spacing:
        if isinstance(step, Tensor) and step.ndim != 1:
            raise RuntimeError(f"torch.gradient expected each element of spacing to have one "
                               f"dimension, but got an element with {step.ndim} dimensions!")
    return spacing


def _along(f, dim, step, edge_order):
    """The derivative along one dim: the interior's central differences between the ends'
    one-sided ones."""
    def part(start, stop=None):
        return f[(slice(None),) * dim + (slice(start, stop),)]
    if isinstance(step, Tensor):
        first, interior, last = _with_coordinates(part, step, dim, f.ndim, edge_order)
    else:
        interior = (part(2) - part(0, -2)) / step / 2
        if edge_order == 1:
            first, last = (part(1, 2) - part(0, 1)) / step, (part(-1) - part(-2, -1)) / step
        else:
            first = (-1.5 * part(0, 1) + 2 * part(1, 2) - 0.5 * part(2, 3)) / step
            last = (0.5 * part(-3, -2) - 2 * part(-2, -1) + 1.5 * part(-1)) / step
    return cat([first, interior, last], dim)


def _with_coordinates(part, x, dim, ndim, edge_order):
    """Nonuniform samples at coordinates x: numpy's (and torch's) second-order formulas."""
    shape = [1] * ndim
    shape[dim] = -1
    dx = x[1:] - x[:-1]
    dx1, dx2 = dx[:-1], dx[1:]
    interior = ((-dx2 / (dx1 * (dx1 + dx2))).reshape(shape) * part(0, -2)
                + ((dx2 - dx1) / (dx1 * dx2)).reshape(shape) * part(1, -1)
                + (dx1 / (dx2 * (dx1 + dx2))).reshape(shape) * part(2))
    if edge_order == 1:
        return (part(1, 2) - part(0, 1)) / dx[0], interior, (part(-1) - part(-2, -1)) / dx[-1]
    h1, h2 = dx[0], dx[1]
    first = (-(2 * h1 + h2) / (h1 * (h1 + h2)) * part(0, 1) + (h1 + h2) / (h1 * h2) * part(1, 2)
             - h1 / (h2 * (h1 + h2)) * part(2, 3))
    h1, h2 = dx[-2], dx[-1]
    last = (h2 / (h1 * (h1 + h2)) * part(-3, -2) - (h2 + h1) / (h1 * h2) * part(-2, -1)
            + (2 * h2 + h1) / (h2 * (h1 + h2)) * part(-1))
    return first, interior, last
