"""torch.func, the transforms that need no vmap: functional_call, grad, grad_and_value, vjp,
jacrev and hessian, built on the tape autograd.

A transform differentiates with respect to fresh leaves made from the selected arguments, so
the caller's tensors need not require grad and the results carry no history. When an argument
already requires grad (the transform runs inside another one, as in grad(grad(f))), that
argument is used as it is and the graph is kept, so the outer transform can differentiate the
inner result again.
"""
import numbers

from .autograd import enable_grad, grad as _autograd_grad
from .autograd_functional import jacobian as _jacobian
from .nn.utils.stateless import func_functional_call as functional_call

__all__ = ["functional_call", "grad", "grad_and_value", "hessian", "jacrev", "vjp"]


def _argnums(argnums, count):
    single = isinstance(argnums, numbers.Integral)
    positions = (argnums,) if single else tuple(argnums)
    for p in positions:
        if not -count <= p < count:
            raise RuntimeError(f"Got argnums={argnums} but only {count} positional inputs")
    return single, tuple(p % count for p in positions)


def _differentiable(args, positions):
    """args with the selected ones made differentiable leaves (or kept, when they already
    take part in an outer transform's graph); and whether any did."""
    args = list(args)
    nested = any(args[p].requires_grad for p in positions)
    for p in positions:
        if not args[p].requires_grad:
            args[p] = args[p].detach().requires_grad_()
    return args, nested


def _finish(tensors, nested):
    return tensors if nested else tuple(t.detach() for t in tensors)


def _detached(tree):
    """Tensors anywhere in nested tuples / lists / dicts without their history (aux outputs)."""
    if isinstance(tree, (tuple, list)):
        return type(tree)(_detached(t) for t in tree)
    if isinstance(tree, dict):
        return {k: _detached(v) for k, v in tree.items()}
    return tree.detach() if hasattr(tree, "detach") else tree


def grad_and_value(func, argnums=0, has_aux=False):
    """A function returning (d func / d args[argnums], func(*args)) for a scalar func."""
    def transformed(*args, **kwargs):
        single, positions = _argnums(argnums, len(args))
        with enable_grad():
            args, nested = _differentiable(args, positions)
            output = func(*args, **kwargs)
            value, aux = output if has_aux else (output, None)
            if value.numel() != 1:
                raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a "
                                   f"scalar Tensor, got tensor with {value.ndim} dims. Maybe "
                                   "you wanted to use the vjp or jacrev APIs instead?")
            grads = _autograd_grad(value, [args[p] for p in positions], create_graph=True,
                                   allow_unused=True, materialize_grads=True)
        grads = _finish(grads, nested)
        result = grads[0] if single else grads
        if not nested:
            value, aux = value.detach(), _detached(aux)
        return (result, (value, aux)) if has_aux else (result, value)
    return transformed


def grad(func, argnums=0, has_aux=False):
    """A function returning the gradient of the scalar func with respect to args[argnums]
    (with has_aux, (gradient, aux))."""
    both = grad_and_value(func, argnums, has_aux)

    def transformed(*args, **kwargs):
        gradient, value = both(*args, **kwargs)
        return (gradient, value[1]) if has_aux else gradient
    return transformed


def vjp(func, *primals, has_aux=False):
    """(func(*primals), vjp_fn) where vjp_fn(cotangents) gives the vector-Jacobian products
    with respect to every primal (a tuple)."""
    with enable_grad():
        args, nested = _differentiable(primals, range(len(primals)))
        output = func(*args)
        recorded, aux = output if has_aux else (output, None)

    def vjp_fn(cotangents):
        with enable_grad():
            grads = _autograd_grad(recorded, args, cotangents, retain_graph=True,
                                   create_graph=True, allow_unused=True, materialize_grads=True)
        return _finish(grads, nested)
    value = recorded if nested else recorded.detach()
    aux = aux if nested else _detached(aux)
    return (value, vjp_fn, aux) if has_aux else (value, vjp_fn)


def jacrev(func, argnums=0):
    """A function returning the Jacobian of func with respect to args[argnums], row by row
    (reverse mode)."""
    def transformed(*args):
        single, positions = _argnums(argnums, len(args))
        nested = any(args[p].requires_grad for p in positions)

        def of_selected(*selected):
            full = list(args)
            for p, t in zip(positions, selected):
                full[p] = t
            return func(*full)
        jacobians = _jacobian(of_selected, tuple(args[p] for p in positions),
                              create_graph=nested)
        return jacobians[0] if single else jacobians
    return transformed


def hessian(func, argnums=0):
    """The Jacobian of the gradient: jacrev(jacrev(func))."""
    return jacrev(jacrev(func, argnums), argnums)
