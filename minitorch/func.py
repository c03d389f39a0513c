"""torch.func on the tape autograd: functional_call, grad, grad_and_value, vjp, jacrev, jvp,
jacfwd, linearize, hessian, vmap (minitorch/vmap.py) and stack_module_state (model ensembling:
stacked parameters for vmap over functional_call of a base copy, which may live on "meta").

Inside a batched vmap (minitorch/_vmap) the transforms differentiate the physical batch (see
_batched_gradients); jacrev, jacfwd and hessian vmap over basis vectors as torch's do.

Forward mode (jvp, jacfwd, linearize) uses the double-vjp identity: with u a dummy cotangent,
g(u) = J^T u is linear in u, so the gradient of <g(u), v> with respect to u is J v. Every
backward rule is written with differentiable tensor ops, so this needs no forward rules.

Each transform differentiates with respect to fresh variables standing for the selected
arguments: a detached leaf, or (when the argument already takes part in an outer transform's
graph) a view of it, so that other uses of the same tensor inside the function (a closure, the
outer variable) are not differentiated by this level, and the outer level can still
differentiate the result. Arguments and outputs may be pytrees: tensors in nested tuples,
lists and dicts. Results carry no history unless an outer transform is recording.
"""
import numbers

from . import random as _random
from ._pytree import leaves as _leaves, rebuild as _rebuild, structure as _structure_of
from ._pytree import tree_map as _map
from ._vmap import batched as _batched
from .autograd import enable_grad, grad as _autograd_grad
from .functions.joining import cat, stack
from .nn.utils.stateless import func_functional_call as functional_call
from .tensor import Tensor, eye, zeros_like
from .vmap import BATCHED as _BATCHED, check_randomness, run_batched as _run_batched, vmap

__all__ = ["debug_unwrap", "functional_call", "functionalize", "grad", "grad_and_value",
           "hessian", "jacfwd", "jacrev", "jvp", "linearize", "replace_all_batch_norm_modules_",
           "stack_module_state", "vjp", "vmap"]


def _check_tensors(tree, what):
    for leaf in _leaves(tree):
        if not isinstance(leaf, Tensor):
            raise ValueError(f"Thing passed to transform API must be Tensor, got {type(leaf)}"
                             if what == "input" else f"Expected f(*args) to return a Tensor, got "
                             f"{type(leaf)}")


# ---- argument handling ------------------------------------------------------------------------
def _argnums(argnums, count):
    """(single, positions) after torch's checks."""
    if isinstance(argnums, numbers.Integral) and not isinstance(argnums, bool):
        positions, single = (argnums,), True
    elif isinstance(argnums, tuple) and all(isinstance(p, numbers.Integral) for p in argnums):
        positions, single = argnums, False
        if not positions:
            raise RuntimeError("argnums must be non-empty")
        if len(set(p % count if count else p for p in positions)) != len(positions):
            raise RuntimeError(f"argnums elements must be unique, got {argnums}")
    else:
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    for p in positions:
        if not -count <= p < count:
            raise RuntimeError(f"Got argnum={p}, but only {count} positional inputs")
    return single, tuple(p % count for p in positions)


def _fresh(t):
    """This level's variable for tensor t: a view when t is recorded by an outer level (the
    gradient then flows on to it), else a detached leaf."""
    return t.view_as(t) if t.requires_grad else t.detach().requires_grad_()


def _variables(args, positions):
    """(args with the selected ones replaced by fresh variables, those variables as pytrees,
    whether an outer transform is recording)."""
    args = list(args)
    for p in positions:
        _check_tensors(args[p], "input")
    nested = any(leaf.requires_grad for p in positions for leaf in _leaves(args[p]))
    fresh = _batched_fresh(_levels()) if _batched.ACTIVE else _fresh
    for p in positions:
        args[p] = _map(fresh, args[p])
    return args, [args[p] for p in positions], nested


# Inside a batched vmap (minitorch/_vmap) a transform differentiates the physical tensors: each
# variable is a physical tensor holding every example of every running vmap level (expanded
# where the argument is not batched there), so that the gradient of the examples' outputs,
# which never mix examples, is each example's own gradient.
def _levels():
    return [level.id for level in _batched.ACTIVE]


def _batched_fresh(levels):
    def fresh(t):
        return _batched.batched(_fresh(_batched.physical(t, levels)), levels)
    return fresh


def _batched_gradients(output, variables, grad_outputs, levels):
    flat = [_batched.physical(v, levels) for v in _leaves(variables)]
    outputs = [_batched.physical(o, levels) for o in _leaves(output)]
    seeds = [None] * len(outputs) if grad_outputs is None else \
        [_batched.physical(g, levels) for g in grad_outputs]
    recorded = [(o, o.new_ones(o.shape) if g is None else g) for o, g in zip(outputs, seeds)
                if o.requires_grad]
    if recorded:
        grads = _autograd_grad([o for o, _ in recorded], flat, [g for _, g in recorded],
                               retain_graph=True, create_graph=True, allow_unused=True,
                               materialize_grads=True)
    else:
        grads = [v.new_zeros(v.shape) for v in flat]
    return _rebuild(variables, iter(_batched.batched(g, levels) for g in grads))


def _gradients(output, variables, grad_outputs=None):
    """d output / d variables (pytrees of the variables' structure), zeros where output does
    not depend on a variable; the graph is kept for an outer level. Inside a batched vmap, a
    graph recorded there is differentiated through its physical tensors; one recorded outside
    it (vmap(vjp_fn) of a vjp made before the vmap) takes the batched cotangents straight into
    the engine, whose nodes then run their ops through the batching rules (or, without one,
    the vmap maps)."""
    if _batched.ACTIVE and any(type(t) is _batched.BatchedTensor
                               for t in _leaves(variables) + _leaves(output)):
        return _batched_gradients(output, variables, grad_outputs, _levels())
    flat = _leaves(variables)
    outputs = _leaves(output)
    recorded = [(o, g) for o, g in zip(outputs, grad_outputs or [None] * len(outputs))
                if o.requires_grad]
    if recorded:
        grads = _autograd_grad([o for o, _ in recorded], flat,
                               None if grad_outputs is None else [g for _, g in recorded],
                               retain_graph=True, create_graph=True, allow_unused=True,
                               materialize_grads=True)
    else:
        grads = [zeros_like(v) for v in flat]
    return _rebuild(variables, iter(grads))


def _plain(tree, nested):
    """Results without history at the top level (torch.func returns plain tensors)."""
    return tree if nested else _map(lambda t: t.detach() if isinstance(t, Tensor) else t, tree)


def _split_aux(output, has_aux, name):
    if not has_aux:
        return output, None
    if not isinstance(output, tuple) or len(output) != 2:
        raise RuntimeError(f"{name}(f)(*args): output of function f should be a tuple: (output, "
                           "aux) if has_aux is True")
    return output


# ---- the transforms ---------------------------------------------------------------------------
def grad_and_value(func, argnums=0, has_aux=False):
    """A function returning (d func / d args[argnums], func(*args)) for a scalar func."""
    def transformed(*args, **kwargs):
        single, positions = _argnums(argnums, len(args))
        with enable_grad():
            args, variables, nested = _variables(args, positions)
            value, aux = _split_aux(func(*args, **kwargs), has_aux, "grad_and_value")
            if not isinstance(value, Tensor):
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a "
                                   f"Tensor, got {type(value)}")
            if value.ndim != 0:
                raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a "
                                   f"scalar Tensor, got tensor with {value.ndim} dims. Maybe "
                                   "you wanted to use the vjp or jacrev APIs instead?")
            grads = _gradients(value, variables)
        result = _plain(grads[0] if single else tuple(grads), nested)
        value, aux = _plain(value, nested), _plain(aux, nested)
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
    with respect to every primal (a tuple); outputs and cotangents may be pytrees."""
    with enable_grad():
        args, variables, nested = _variables(primals, range(len(primals)))
        output, aux = _split_aux(func(*args), has_aux, "vjp")
        _check_tensors(output, "output")

    def vjp_fn(cotangents):
        with enable_grad():
            grads = _gradients(output, variables, _leaves(cotangents))
        return _plain(tuple(grads), nested)
    value = _plain(output, nested)
    return (value, vjp_fn, _plain(aux, nested)) if has_aux else (value, vjp_fn)


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None):
    """A function returning the Jacobian of func with respect to args[argnums]: for every
    output leaf (pytree outputs keep their structure), a tensor of shape output.shape +
    input.shape, or a tuple over the selected arguments. As torch's, a vmap of the vjp over
    the output's basis vectors (one batched pass); one reverse pass per output element where
    the function has ops without batching rules. chunk_size: at most that many rows per
    batched pass (less memory at once; chunk_size=1 is one pass per row)."""
    if chunk_size is not None and not chunk_size > 0:
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    def transformed(*args):
        single, positions = _argnums(argnums, len(args))
        with enable_grad():
            args, variables, nested = _variables(args, positions)
            output, aux = _split_aux(func(*args), has_aux, "jacrev")
            _check_tensors(output, "output")
            inputs = _leaves(variables)
            jacobians = _batched_jacobians(func, args, positions, has_aux, output, variables,
                                           single, chunk_size)
            if jacobians is None:
                jacobians = [_jacobian_rows(out, inputs, variables, single) for out in
                             _leaves(output)]
        result = _plain(_rebuild(output, iter(jacobians)), nested)
        return (result, _plain(aux, nested)) if has_aux else result
    return transformed


def _batched_jacobians(func, args, positions, has_aux, output, variables, single,
                       chunk_size=None):
    """torch's jacrev: one vmapped vjp over the rows of the identity (every output element's
    basis cotangent; at most chunk_size rows a pass), the function rerun on the batched
    variables; None where that cannot run batched (an op without a batching rule, random
    draws): then one backward per row."""
    outs = _leaves(output)
    sizes = [o.numel() for o in outs]
    total = sum(sizes)
    if total == 0 or not _BATCHED[0]:
        return None
    identity = eye(total, dtype=outs[0].dtype, device=outs[0].device)
    bases, start = [], 0
    for o, n in zip(outs, sizes):
        bases.append(identity[:, start:start + n].reshape((total,) + tuple(o.shape)))
        start += n

    def rows(*cotangents):
        with enable_grad():
            fresh_args, fresh_variables, _ = _variables(args, positions)
            out, _ = _split_aux(func(*fresh_args), has_aux, "jacrev")
            return tuple(_leaves(_gradients(out, fresh_variables, list(cotangents))))
    chunk = total if chunk_size is None else min(chunk_size, total)
    try:
        # 'same': a function that draws is rerun row by row below (its draws restored here).
        parts = [_run_batched(rows, [b[start:start + chunk] for b in bases], {},
                              [0] * len(bases), min(chunk, total - start), 0, "same", "jacrev")
                 for start in range(0, total, chunk)]
    except _batched.Unbatchable:
        return None
    per_input = parts[0] if len(parts) == 1 else [cat(rows_k) for rows_k in zip(*parts)]
    jacobians, start = [], 0
    for o, n in zip(outs, sizes):
        blocks = [rows_k[start:start + n].reshape(tuple(o.shape) + tuple(v.shape))
                  for rows_k, v in zip(per_input, _leaves(variables))]
        grads = _rebuild(variables, iter(blocks))
        jacobians.append(grads[0] if single else tuple(grads))
        start += n
    return jacobians


def _jacobian_rows(out, inputs, variables, single):
    """d out / d variables: one backward pass per element of out, stacked into out.shape +
    input shape."""
    flat = out.reshape(-1)
    rows = [_leaves(_gradients(flat[index], variables)) for index in range(out.numel())]
    per_input = []
    for k, variable in enumerate(inputs):
        stacked = [row[k] for row in rows]
        shape = tuple(out.shape) + tuple(variable.shape)
        per_input.append(_stack(stacked, variable).reshape(shape))
    grads = _rebuild(variables, iter(per_input))
    return grads[0] if single else tuple(grads)


def _stack(rows, like):
    return stack(rows) if rows else like.new_zeros((0,) + tuple(like.shape))


def hessian(func, argnums=0):
    """The Jacobian of the gradient. torch composes jacfwd(jacrev(func)); here forward mode is
    itself a double backward, so jacrev(jacrev(func)) needs one order of differentiation less
    for the same values."""
    return jacrev(jacrev(func, argnums), argnums)


# ---- forward mode -----------------------------------------------------------------------------
class _Linearized:
    """func's output at the primals and the graph of g(u) = J^T u (u: one dummy cotangent per
    output leaf), from which any J v is one backward pass."""

    def __init__(self, func, primals, positions, has_aux, name):
        with enable_grad():
            args, self.variables, self.nested = _variables(primals, positions)
            self.output, self.aux = _split_aux(func(*args), has_aux, name)
            _check_tensors(self.output, "output")
            self.dummies = [zeros_like(o).requires_grad_() for o in _leaves(self.output)]
            self.transposed = _leaves(_gradients(self.output, self.variables, self.dummies))

    def apply(self, tangents):
        """J v for tangents v shaped like the variables (a flat list), as a pytree like the
        output."""
        pairs = [(g, t) for g, t in zip(self.transposed, tangents) if g.requires_grad]
        with enable_grad():
            if pairs:
                products = _autograd_grad([g for g, _ in pairs], self.dummies,
                                          [t for _, t in pairs], retain_graph=True,
                                          create_graph=True, allow_unused=True,
                                          materialize_grads=True)
            else:
                products = [zeros_like(d) for d in self.dummies]
        return _rebuild(self.output, iter(products))


def _check_primals(primals, tangents, name):
    for what, tree in (("primals", primals), ("tangents", tangents)):
        if not isinstance(tree, tuple):
            raise RuntimeError(f"{name}: Expected {what} to be a tuple. E.g. it should be valid "
                               "to call f(*primals).")
    flat_p, flat_t = _leaves(primals), _leaves(tangents)
    if _structure_of(primals) != _structure_of(tangents):
        raise RuntimeError(f"{name}: Expected primals and tangents to have the same python "
                           "structure. For example, if primals is a tuple of 3 tensors, "
                           "tangents also must be.")
    _check_tensors(primals, "input")
    _check_tensors(tangents, "input")
    for p, t in zip(flat_p, flat_t):
        if p.shape != t.shape:
            raise RuntimeError(f"{name}: Expected primal and tangent to have the same shape, "
                               f"got {tuple(p.shape)} and {tuple(t.shape)}")
    return flat_t


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """(func(*primals), J·tangents): the Jacobian-vector product, output-shaped."""
    flat_tangents = _check_primals(primals, tangents, "jvp(f, primals, tangents)")
    lin = _Linearized(func, primals, range(len(primals)), has_aux, "jvp")
    product = _plain(lin.apply(flat_tangents), lin.nested)
    result = (_plain(lin.output, lin.nested), product)
    return result + (_plain(lin.aux, lin.nested),) if has_aux else result


def linearize(func, *primals):
    """(func(*primals), jvp_fn): jvp_fn(*tangents) gives J·tangents at these primals, reusing
    one recorded graph."""
    lin = _Linearized(func, primals, range(len(primals)), False, "linearize")

    def jvp_fn(*tangents):
        flat = _check_primals(primals, tangents, "linearize")
        return _plain(lin.apply(flat), lin.nested)
    return _plain(lin.output, lin.nested), jvp_fn


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """The Jacobian of func with respect to args[argnums], in jacrev's layout (output.shape +
    input.shape): one batched pass where every op has a batching rule (_batched_jacfwd), else
    one forward (J·e_j) product per input element."""
    check_randomness(randomness)

    def transformed(*args):
        single, positions = _argnums(argnums, len(args))
        batched = _batched_jacfwd(func, args, positions, has_aux, single)
        if batched is not None:
            return batched
        lin = _Linearized(func, args, positions, has_aux, "jacfwd")
        inputs = _leaves(lin.variables)
        columns = [_jacobian_columns(lin, inputs, k) for k in range(len(inputs))]
        jacobians = []
        for j, out in enumerate(_leaves(lin.output)):
            per_input = [columns[k][j] for k in range(len(inputs))]
            grads = _rebuild(lin.variables, iter(per_input))
            jacobians.append(grads[0] if single else tuple(grads))
        result = _plain(_rebuild(lin.output, iter(jacobians)), lin.nested)
        return (result, _plain(lin.aux, lin.nested)) if has_aux else result
    return transformed


def _batched_jacfwd(func, args, positions, has_aux, single):
    """The Jacobian from one vmapped pass (jacrev's rows: the double-vjp forward mode would
    give the same matrix at twice the cost), or None where that cannot run batched; the
    random state is then as it was, so the column-by-column path draws what it always did."""
    if not _BATCHED[0]:
        return None
    state = _random.capture_state()
    with enable_grad():
        fresh_args, variables, nested = _variables(args, positions)
        output, aux = _split_aux(func(*fresh_args), has_aux, "jacfwd")
        _check_tensors(output, "output")
        jacobians = _batched_jacobians(func, args, positions, has_aux, output, variables,
                                       single)
    if jacobians is None:
        _random.restore_state(state)
        return None
    result = _plain(_rebuild(output, iter(jacobians)), nested)
    return (result, _plain(aux, nested)) if has_aux else result


def _jacobian_columns(lin, inputs, k):
    """For input k: per output leaf, the Jacobian block shaped output.shape + input.shape."""
    variable = inputs[k]
    columns = []
    for index in range(variable.numel()):
        basis = [zeros_like(v) for v in inputs]
        basis[k].view(-1)[index] = 1
        columns.append(_leaves(lin.apply(basis)))
    blocks = []
    for j, out in enumerate(_leaves(lin.output)):
        column = [c[j] for c in columns]
        stacked = stack(column, -1) if column else out.new_zeros(tuple(out.shape) + (0,))
        blocks.append(stacked.reshape(tuple(out.shape) + tuple(variable.shape)))
    return blocks


# ---- model ensembling ---------------------------------------------------------------------------
def stack_module_state(models):
    """torch.func.stack_module_state(models) -> (params, buffers): each parameter and buffer of
    M models of one class stacked along a new dim 0, by state-dict name. Stacked parameters are
    new leaves (detached, requiring grad when every model's does), ready for an optimizer; the
    usual use is vmap over functional_call of one copy of the model, often moved to "meta":

        params, buffers = stack_module_state(models)
        base = copy.deepcopy(models[0]).to("meta")
        vmap(lambda p, b, x: functional_call(base, (p, b), (x,)), (0, 0, None))(params, buffers, x)
    """
    if len(models) == 0:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same "
                           "training/eval mode.")
    first = type(models[0])
    if not all(type(m) is first for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    all_params = [dict(m.named_parameters()) for m in models]
    params = {k: _stacked_leaf(tuple(p[k] for p in all_params), k) for k in all_params[0]}
    all_buffers = [dict(m.named_buffers()) for m in models]
    buffers = {k: _stacked_leaf(tuple(b[k] for b in all_buffers), k) for k in all_buffers[0]}
    return params, buffers


def _stacked_leaf(tensors, name):
    """torch's construct_stacked_leaf: stack, and a fresh leaf when they all require grad."""
    requires = [t.requires_grad for t in tensors]
    if any(requires) and not all(requires):
        raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
    result = stack(tensors)
    return result.detach().requires_grad_() if all(requires) else result


def functionalize(func, *, remove="mutations"):
    """torch.func.functionalize, which rewrites in-place ops on intermediates as out-of-place
    ones for tracers and compilers that cannot represent mutation. Here it returns a function
    that runs func unchanged: minitorch executes eagerly and has no tracer, and in eager
    execution that rewrite changes no value and no input mutation (torch keeps those too)."""
    if remove not in ("mutations", "mutations_and_views"):
        raise RuntimeError(f"functionalize(f, remove='mutations'): received invalid argument "
                             f"for remove={remove}. Valid options are:\n"
                             "     remove='mutations': all inplace and out= operators will be "
                             "removed from the program, and replaced with their out-of-place "
                             "equivalents.\n"
                             "     remove='mutations_and_views': In addition to the above, all "
                             "aliasing operators {view} will be replaced with their "
                             "non-aliasing counterparts, {view}_copy.\n")

    def functionalized(*args, **kwargs):
        return func(*args, **kwargs)
    functionalized.__wrapped__ = func
    return functionalized


def replace_all_batch_norm_modules_(root):
    """Every BatchNorm module under root stops tracking running statistics (running_mean,
    running_var and num_batches_tracked become None, track_running_stats False), so that
    vmap over it normalizes with each example's batch statistics; root, updated in place."""
    from .nn.normalization import _BatchNorm
    for module in root.modules():
        if isinstance(module, _BatchNorm):
            module.running_mean = None
            module.running_var = None
            module.num_batches_tracked = None
            module.track_running_stats = False
    return root


def debug_unwrap(tensor, *, recurse=True):
    """The tensor a vmap's BatchedTensor stands for (its whole batch; with recurse, through
    every nested level): for looking at values in a debugger, not for use inside the
    transformed function (torch.func.debug_unwrap)."""
    while isinstance(tensor, _batched.BatchedTensor):
        tensor = tensor._value
        if not recurse:
            break
    return tensor
