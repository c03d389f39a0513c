"""torch.vmap / torch.func.vmap, batched with a per-index fallback.

The batched path runs the function once, on BatchedTensors (minitorch/_vmap): each op with a
batching rule runs one kernel over the whole batch. When the function reaches an op without a
rule (or raises, or draws random numbers under randomness='same' / 'different'), the call is
rerun by mapping: the function runs once per index of the mapped dimension on views of the
inputs (`select`) and the results are stacked along out_dims. Mapping gives torch's results
and argument rules for any function (in-place writes on the inputs' views included), so the
batched path only has to be right where it has rules. A function's Python side effects (a
print, appending to a list) happen twice when a call falls back.

The randomness flag keeps torch's meaning: 'error' refuses functions that draw from the global
generator, 'same' replays the same draws for every index, 'different' draws afresh.
"""
import numbers

from . import random as _random
from ._pytree import leaves as _leaves, rebuild as _rebuild, structure as _structure
from ._vmap import rules as _rules
from ._vmap.batched import Unbatchable, close_level, open_level, wrap as _wrap_batched
from .autograd import engine as _engine
from .functions.autocast_policy import BATCHING as _BATCHING
from .functions.joining import cat, stack
from .tensor import Tensor

__all__ = ["vmap"]


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """func mapped over dimension in_dims of its inputs; outputs stacked at out_dims. With
    chunk_size, the examples run in slices of at most that many (less memory at once), joined
    afterwards."""
    check_randomness(randomness)
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got "
                         f"{chunk_size})")
    _check_dims_spec(in_dims, "in_dims")
    _check_dims_spec(out_dims, "out_dims")

    def mapped(*args, **kwargs):
        fname = getattr(func, "__name__", repr(func))
        name = f"vmap({fname}, in_dims={in_dims}, ...)"
        if not args:
            raise ValueError(f"{name}(<inputs>): got no inputs. Maybe you forgot to add inputs, "
                             "or you are trying to vmap over a function with no inputs. The "
                             "latter is unsupported.")
        dims = _input_dims(in_dims, args, name)
        size = _batch_size(args, dims, name)
        if size == 0:
            return _empty_outputs(func, args, kwargs, dims, out_dims, fname)
        if chunk_size is not None and chunk_size < size:
            return _in_chunks(vmap(func, in_dims, out_dims, randomness), args, kwargs, dims,
                              size, chunk_size, out_dims, fname, randomness == "same")
        if BATCHED[0]:
            try:
                return run_batched(func, args, kwargs, dims, size, out_dims, randomness, fname)
            except Unbatchable:
                pass
        CALLS["mapped"] += 1
        results = _run(func, args, kwargs, dims, size, randomness)
        return _stack_outputs(results, out_dims, fname)
    return mapped


# ---- argument checks ------------------------------------------------------------------------
def check_randomness(randomness):
    """torch.func's randomness flag (vmap's, and jacfwd's, which vmaps in torch)."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or "
                           f"'same'. Got {randomness}")


def _is_dim(value):
    return value is None or (isinstance(value, numbers.Integral) and not isinstance(value, bool))


def _check_dims_spec(spec, what):
    """in_dims / out_dims: an int, None, or (nested) tuples, lists and dicts of those."""
    if _is_dim(spec):
        return
    if isinstance(spec, (tuple, list)):
        for item in spec:
            _check_dims_spec(item, what)
    elif isinstance(spec, dict):
        for item in spec.values():
            _check_dims_spec(item, what)
    else:
        raise ValueError(f"vmap(<function>, {what}={spec}, ...): expected {what} to be int or a "
                         f"(potentially nested) tuple matching the structure of inputs, got: "
                         f"{type(spec)}.")


def _broadcast_spec(spec, tree, name):
    """The spec expanded over `tree` (an int or None applies to every leaf below it), as a flat
    list of (leaf, dim)."""
    if _is_dim(spec):
        return [(leaf, spec) for leaf in _leaves(tree)]
    if isinstance(spec, (tuple, list)) and isinstance(tree, (tuple, list)) \
            and len(spec) == len(tree):
        return [pair for s, t in zip(spec, tree) for pair in _broadcast_spec(s, t, name)]
    if isinstance(spec, dict) and isinstance(tree, dict) and spec.keys() == tree.keys():
        return [pair for key in tree for pair in _broadcast_spec(spec[key], tree[key], name)]
    raise ValueError(f"{name}(<inputs>): in_dims is not compatible with the structure of "
                     f"`inputs`. in_dims has structure {spec} but inputs has structure "
                     f"{_structure(tree)}.")


def _input_dims(in_dims, args, name):
    """The mapped dim (normalised, or None) of every leaf of args, checked as torch does."""
    if not _is_dim(in_dims) and not isinstance(in_dims, tuple):
        raise ValueError(f"{name}(<inputs>): expected `in_dims` to be int or a (potentially "
                         f"nested) tuple matching the structure of inputs, got: "
                         f"{type(in_dims)}.")
    pairs = _broadcast_spec(in_dims, tuple(args), name)
    dims = []
    for leaf, dim in pairs:
        if dim is not None and not isinstance(leaf, Tensor):
            raise ValueError(f"{name}(<inputs>): Got in_dim={dim} for an input but the input is "
                             f"of type {type(leaf)}. We cannot vmap over non-Tensor arguments, "
                             "please use None as the respective in_dim")
        if dim is not None and (leaf.ndim == 0 or not -leaf.ndim <= dim < leaf.ndim):
            raise ValueError(f"{name}(<inputs>): Got in_dim={dim} for some input, but that "
                             f"input is a Tensor of dimensionality {leaf.ndim} so expected "
                             f"in_dim to satisfy -{leaf.ndim} <= in_dim < {leaf.ndim}.")
        dims.append(None if dim is None else dim % leaf.ndim)
    if all(dim is None for dim in dims):
        raise ValueError(f"{name}(<inputs>): All in_dims are None: at least one of the inputs "
                         "must be batched (the corresponding in_dim must be non-None).")
    return dims


def _batch_size(args, dims, name):
    sizes = [leaf.shape[dim] for leaf, dim in zip(_leaves(tuple(args)), dims) if dim is not None]
    if len(set(sizes)) != 1:
        raise ValueError(f"{name}(<inputs>): Expected all tensors to have the same size in the "
                         f"mapped dimension, got sizes {sizes} for the mapped dimension")
    return sizes[0]


# ---- the batched path ------------------------------------------------------------------------
BATCHED = [True]    # False: every call maps index by index (tests compare the two paths)
CALLS = {"batched": 0, "mapped": 0}     # which path vmap calls took (tests read it)
STRICT = [False]    # True: an error on the batched path propagates (to debug a rule)


def run_batched(func, args, kwargs, dims, size, out_dims, randomness, fname):
    """func run once on BatchedTensors; raises Unbatchable where it must be mapped instead."""
    leaves = _leaves(tuple(args))
    start_state = _random.capture_state()
    level = open_level(size)
    outer_handler = _BATCHING.handler
    _BATCHING.handler = _rules.handle
    try:
        wrapped = [leaf if dim is None else _wrap_batched(leaf.movedim(dim, 0), level.id)
                   for leaf, dim in zip(leaves, dims)]
        output = _call(func, args, wrapped, kwargs)
    except Exception:
        if STRICT[0]:
            raise
        # The mapped rerun raises the same error with one example's shapes, as torch words it.
        _random.restore_state(start_state)
        raise Unbatchable("the batched call raised") from None
    except Unbatchable:
        _random.restore_state(start_state)
        raise
    finally:
        _BATCHING.handler = outer_handler
        close_level(level)
    if not _random.same_state(_random.capture_state(), start_state):
        if randomness == "error":
            raise RuntimeError("vmap: called random operation while in randomness error mode. "
                               "Please either use the 'same' or 'different' randomness flags on "
                               "vmap or perform the randomness operation out of vmap")
        _random.restore_state(start_state)     # draws made once are not 'different' draws
        raise Unbatchable("random draws")
    CALLS["batched"] += 1
    return _unbatch_outputs(output, out_dims, level.id, size, fname)


def _unbatch_outputs(output, out_dims, level, size, fname):
    """Each output leaf with the batch of `level` moved to its out_dim (a leaf that does not
    depend on the batch is expanded, as torch returns it)."""
    results = []
    for leaf, dim in _out_pairs(out_dims, output, fname):
        _check_output(leaf, fname)
        batched = getattr(leaf, "_level", None) == level
        if dim is None:
            if batched:
                raise ValueError(f"vmap({fname}, ...): `{fname}` can not return a "
                                 "BatchedTensor when out_dim is None")
            results.append(leaf)
            continue
        value = leaf._value if batched else \
            leaf.unsqueeze(0).expand((size,) + tuple(leaf.shape))
        results.append(value.movedim(0, _out_dim(dim, value.ndim)))
    return _rebuild(output, iter(results))


# ---- running and stacking ---------------------------------------------------------------------
def _run(func, args, kwargs, dims, size, randomness):
    """func's outputs for every index of the mapped dimension."""
    leaves = _leaves(tuple(args))
    results = []
    start_state = _random.capture_state()      # both streams: randperm draws from the twister
    for index in range(size):
        if randomness == "same":
            _random.restore_state(start_state)
        sliced = [leaf if dim is None else leaf.select(dim, index)
                  for leaf, dim in zip(leaves, dims)]
        results.append(_call(func, args, sliced, kwargs))
        if randomness == "error" and not _random.same_state(_random.capture_state(),
                                                            start_state):
            raise RuntimeError("vmap: called random operation while in randomness error mode. "
                               "Please either use the 'same' or 'different' randomness flags on "
                               "vmap or perform the randomness operation out of vmap")
    return results


def _call(func, args, leaves, kwargs):
    return func(*_rebuild(tuple(args), iter(leaves)), **kwargs)


def _empty_outputs(func, args, kwargs, dims, out_dims, fname):
    """A mapped dimension of size 0: func runs once on zeros shaped like one slice, only to
    learn the outputs' shapes; each output is then empty along its out_dim."""
    state = _random.capture_state()
    probes = [leaf if dim is None else leaf.new_zeros(leaf.shape[:dim] + leaf.shape[dim + 1:])
              for leaf, dim in zip(_leaves(tuple(args)), dims)]
    probe = _call(func, args, probes, kwargs)
    _random.restore_state(state)
    pairs = _out_pairs(out_dims, probe, fname)
    empties = []
    for leaf, dim in pairs:
        _check_output(leaf, fname)
        if dim is None:
            empties.append(leaf)
            continue
        shape = list(leaf.shape)
        shape.insert(_out_dim(dim, leaf.ndim + 1), 0)
        empties.append(leaf.new_empty(tuple(shape)))
    return _rebuild(probe, iter(empties))


def _stack_outputs(results, out_dims, fname):
    return _join_outputs(results, out_dims, fname,
                         lambda column, dim: _stack_column(column, dim, fname))


def _join_outputs(results, out_dims, fname, join):
    """results[0]'s structure, each output leaf being join(its values over results, out_dim)."""
    first = results[0]
    columns = zip(*[_leaves(result) for result in results])     # one per output leaf
    joined = []
    for column, (leaf, dim) in zip(columns, _out_pairs(out_dims, first, fname)):
        _check_output(leaf, fname)
        joined.append(join(list(column), dim))
    return _rebuild(first, iter(joined))


def _in_chunks(run, args, kwargs, dims, size, chunk_size, out_dims, fname, same_draws):
    """vmap's chunk_size: `run` (the same vmap without it) on consecutive slices of at most
    chunk_size examples, the outputs joined along their out_dims; an output with out_dim None
    is the first chunk's (it must not depend on the examples). With same_draws (randomness=
    'same') every chunk starts from the same generator state, as every example does."""
    leaves = _leaves(tuple(args))
    results = []
    state = _random.capture_state()
    for start in range(0, size, chunk_size):
        if same_draws:
            _random.restore_state(state)
        length = min(chunk_size, size - start)
        sliced = [leaf if dim is None else leaf.narrow(dim, start, length)
                  for leaf, dim in zip(leaves, dims)]
        results.append(run(*_rebuild(tuple(args), iter(sliced)), **kwargs))
    return _join_outputs(results, out_dims, fname, lambda column, dim: column[0] if dim is None
                         else cat(column, _out_dim(dim, column[0].ndim)))


def _check_output(leaf, fname):
    if not isinstance(leaf, Tensor):
        raise ValueError(f"vmap({fname}, ...): `{fname}` must only return Tensors, got type "
                         f"{type(leaf)}. Did you mean to set out_dims= to None for output?")


def _out_pairs(out_dims, first, fname):
    """(output leaf, out_dim) pairs; a single tensor output may have out_dims=(d,)."""
    if isinstance(first, Tensor) and isinstance(out_dims, (tuple, list)) and len(out_dims) == 1:
        out_dims = out_dims[0]
    try:
        return _broadcast_spec(out_dims, first, "")
    except ValueError:
        raise ValueError(f"vmap({fname}, ..., out_dims={out_dims})(<inputs>): out_dims is not "
                         f"compatible with the structure of `outputs`. out_dims has structure "
                         f"{out_dims} but outputs has structure {_structure(first)}.") from None


def _out_dim(dim, rank):
    if not -rank <= dim < rank:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-rank}, "
                         f"{rank - 1}], but got {dim})")
    return dim % rank


def _stack_column(column, dim, fname):
    """One output's values over the batch, stacked at dim (None: they must not depend on the
    mapped inputs, which here means every call returned the same value)."""
    if dim is None:
        if not all(_same_value(value, column[0]) for value in column[1:]):
            raise ValueError(f"vmap({fname}, ...): `{fname}` can not return a BatchedTensor "
                             "when out_dim is None")
        return column[0]
    return stack(column, _out_dim(dim, column[0].ndim + 1))


def _same_value(a, b):
    return a is b or (a.shape == b.shape and a.dtype == b.dtype and bool((a == b).all()))


# ---- autograd.grad(..., is_grads_batched=True) ----------------------------------------------
def _batched_grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused,
                  materialize_grads):
    """torch's shape check, then a vmap of grad over the cotangents' first dim (the graph kept
    while it runs: a vmap that falls back to mapping walks it once per cotangent, then freed
    unless retain_graph)."""
    outputs = (outputs,) if isinstance(outputs, Tensor) else tuple(outputs)
    grad_outputs = (grad_outputs,) if isinstance(grad_outputs, Tensor) else \
        tuple(grad_outputs or ())
    for i, (g, out) in enumerate(zip(grad_outputs, outputs)):
        if g is not None and tuple(g.shape[1:]) != tuple(out.shape):
            raise RuntimeError(
                "If `is_grads_batched=True`, we interpret the first dimension of each "
                "grad_output as the batch dimension. The sizes of the remaining dimensions are "
                "expected to match the shape of corresponding output, but a mismatch was "
                f"detected: grad_output[{i}] has a shape of torch.Size({list(g.shape[1:])}) and "
                f"output[{i}] has a shape of torch.Size({list(out.shape)}). If you only want "
                "some tensors in `grad_output` to be considered batched, consider using vmap.")

    def one(*cotangents):
        return _engine.grad(outputs, inputs, cotangents, retain_graph=True,
                            create_graph=create_graph, allow_unused=allow_unused,
                            materialize_grads=materialize_grads)
    results = vmap(one, in_dims=tuple(None if g is None else 0 for g in grad_outputs))(
        *grad_outputs)
    if not (create_graph if retain_graph is None else retain_graph):
        _engine.release(outputs)
    return results


_engine.BATCHED_GRAD[0] = _batched_grad
