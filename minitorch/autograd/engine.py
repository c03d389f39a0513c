"""Tape-based reverse-mode autograd.

Every differentiable op is a `Function` subclass. `Function.apply` runs `forward` and, when any
input requires grad, the instance itself becomes the graph node (torch's `ctx` is the node): it
keeps the edges to its inputs' nodes and what `forward` saved. `backward()` walks the nodes in
reverse topological order with an explicit work list (no recursion, so 100 000-op chains work).
Backward rules are written with Tensor ops, so with `create_graph=True` the gradient computation
is itself recorded and can be differentiated again.
"""
import contextlib
import sys
import threading
import traceback
import warnings

from ..ndarray import NDArray, contiguous_strides, dense_order, scalar_array


class _GradMode(threading.local):
    enabled = True
    inference = False       # inside inference_mode() (torch.is_inference_mode_enabled)


_grad_mode = _GradMode()


def is_grad_enabled():
    """True unless gradient recording is off (no_grad / set_grad_enabled(False))
    (torch.is_grad_enabled)."""
    return _grad_mode.enabled


class set_grad_enabled(contextlib.ContextDecorator):
    """Context manager / decorator / function: `mt.set_grad_enabled(False)` switches recording."""

    def __init__(self, mode):
        self.previous = _grad_mode.enabled
        self.mode = bool(mode)
        _grad_mode.enabled = self.mode

    def __enter__(self):
        _grad_mode.enabled = self.mode
        return self

    def __exit__(self, *exc):
        _grad_mode.enabled = self.previous
        return False


class no_grad(contextlib.ContextDecorator):
    """Ops inside record nothing (`with mt.no_grad():` or `@mt.no_grad()`)."""

    def __enter__(self):
        self.previous = _grad_mode.enabled
        _grad_mode.enabled = False
        return self

    def __exit__(self, *exc):
        _grad_mode.enabled = self.previous
        return False


class enable_grad(no_grad):
    """Recording on inside, e.g. within a `no_grad` block."""

    def __enter__(self):
        self.previous = _grad_mode.enabled
        _grad_mode.enabled = True
        return self


class inference_mode(no_grad):
    """torch.inference_mode: recording off inside (on inside `inference_mode(False)`, as torch's
    guard sets grad mode to `not mode`), and is_inference_mode_enabled() answers `mode`.
    Tensors made inside are ordinary tensors: minitorch has no inference tensors, so
    Tensor.is_inference() is False and nothing refuses them later in autograd."""

    def __init__(self, mode=True):
        self.mode = bool(mode)

    def __enter__(self):
        self.previous = (_grad_mode.enabled, _grad_mode.inference)
        _grad_mode.enabled, _grad_mode.inference = not self.mode, self.mode
        return self

    def __exit__(self, *exc):
        _grad_mode.enabled, _grad_mode.inference = self.previous
        return False


def is_inference_mode_enabled():
    """Whether an inference_mode() block is active (torch.is_inference_mode_enabled)."""
    return _grad_mode.inference


_anomaly = {"enabled": False, "check_nan": True}

# The profiler's hook (autograd/profiler.py sets both while a profile records, from any thread):
# the op paths test `_profiling` once and, only when it is set, hand the op to `_profiler.op`
# (which runs `_apply` inside an event); backward hands nodes and leaves to `_profiler.node`.
_profiling = False
_profiler = None


def recorded(tensor):
    """Whether a one-input op on `tensor` goes through its Function: to be recorded, or for the
    profiler's event; otherwise an op may compute its result without a node (the unrecorded
    fast paths of views, reductions, gather and unary ops)."""
    return tensor.requires_grad and _grad_mode.enabled or _profiling


class set_detect_anomaly(contextlib.ContextDecorator):
    """Anomaly mode on or off (torch.autograd.set_detect_anomaly): while on, a backward that
    returns NaN raises, and a failing backward warns with the stack of its forward call."""

    def __init__(self, mode, check_nan=True):
        self.previous = dict(_anomaly)
        _anomaly.update(enabled=bool(mode), check_nan=check_nan)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _anomaly.update(self.previous)
        return False


class detect_anomaly(contextlib.ContextDecorator):
    """Anomaly mode inside a `with` block or a decorated function."""

    def __init__(self, check_nan=True):
        self.check_nan = check_nan
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime "
                      "and should only be enabled for debugging.", stacklevel=2)

    def __enter__(self):
        self.previous = dict(_anomaly)
        _anomaly.update(enabled=True, check_nan=self.check_nan)
        return self

    def __exit__(self, *exc):
        _anomaly.update(self.previous)
        return False


def is_anomaly_enabled():
    """True while anomaly detection is on (torch.is_anomaly_enabled)."""
    return _anomaly["enabled"]


def is_anomaly_check_nan_enabled():
    """The check_nan setting of anomaly detection: True unless the last detect_anomaly /
    set_detect_anomaly turned it off (torch.is_anomaly_check_nan_enabled)."""
    return _anomaly["check_nan"]


class _SavedTensorHooks(threading.local):
    """torch.autograd.graph's per-thread stack of (pack, unpack) pairs (autograd/graph.py pushes
    them), and the message that refuses them inside disable_saved_tensors_hooks."""

    def __init__(self):
        self.stack = []
        self.disabled = None


_saved_hooks = _SavedTensorHooks()


class RemovableHandle:
    """Returned by register_hook: `.remove()` unregisters the hook."""
    _next_id = 0

    def __init__(self, hooks_dict):
        self.hooks_dict = hooks_dict
        self.id = RemovableHandle._next_id
        RemovableHandle._next_id += 1

    def remove(self):
        self.hooks_dict.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


class TensorBase:
    """What the engine reads and writes on a tensor; `Tensor` (tensor.py) extends it.

    The engine sits below Tensor in the layers, so it knows tensors only through this base:
    their `_data` (an NDArray), `_version`, the autograd metadata below (class-level defaults,
    so creating an op result sets two attributes instead of eight), and `_from_data`, the
    constructor Tensor provides for the few tensors the engine makes itself (gradient seeds,
    zeros for missing gradients)."""
    __slots__ = ()
    requires_grad = False
    _grad = None
    grad_fn = None
    _output_nr = 0
    _hooks = None
    _retains_grad = False
    _base = None        # for views: the tensor owning the storage (set by functions.movement)
    _view_version = 0   # for views: the version their grad_fn describes (see Function._connect)

    @staticmethod
    def _from_data(data, requires_grad=False, version=None):
        raise NotImplementedError("Tensor provides _from_data")


class _NeedsInputGrad:
    """Function.needs_input_grad, torch's: per forward argument, whether it is a tensor requiring
    grad. Read from the node's edges the first time a backward asks, then kept in the node's
    __dict__ (which shadows this non-data descriptor), rather than built for every recorded op;
    () until the node is recorded."""

    def __get__(self, node, owner=None):
        if node is None:
            return self
        needs = tuple([edge is not None for edge in node.next_edges])
        if needs:
            node.__dict__["needs_input_grad"] = needs
        return needs


class Function:
    """Base of every differentiable op. Subclasses define static `forward(ctx, *args)` and
    `backward(ctx, *grad_outputs)`; call them through `Cls.apply(*args)`.

    A user's Function runs its forward with grad mode off (as torch does). minitorch's own ops
    derive from `KernelFunction` instead."""

    # Class-level defaults keep node creation to the attributes an op actually sets.
    _saved = ()
    _saved_versions = ()
    _released = False
    _hooks = None
    _tensor_hooks = None
    _saved_outputs = ()     # (position in _saved, output number) of saved outputs
    _unpack = None          # the unpack hook of tensors packed when this node was recorded
    next_edges = ()         # (node, output_nr) or (leaf, -1) per forward argument, once recorded
    needs_input_grad = _NeedsInputGrad()
    materialize_grads = True
    output_count = 1
    output_meta = ()
    _internal = False

    _dirty = ()
    _non_differentiable = ()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # torch's newer style: forward(*args) without ctx, then setup_context(ctx, inputs, out)
        cls._separate_setup = cls.setup_context is not Function.setup_context

    @classmethod
    def apply(cls, *args):
        if _profiling:
            return _profiler.op(cls, args)
        return _apply(cls, args)

    @staticmethod
    def setup_context(ctx, inputs, output):
        """Overridden by Functions whose forward takes no ctx (torch's setup_context style)."""
        raise NotImplementedError("setup_context is not implemented.")

    def _connect(self, args, result):
        """Record this node: edges to the inputs' nodes, and the outputs' grad_fn."""
        # One entry per forward argument, None for non-tensors (needs_input_grad reads them).
        edges = []
        for arg in args:
            if isinstance(arg, TensorBase) and arg.requires_grad:
                if arg._base is not None and arg._view_version != arg._version[0]:
                    _refresh_view(arg)
                node = arg.grad_fn
                edges.append((node, arg._output_nr) if node is not None else (arg, -1))
            else:
                edges.append(None)
        self.next_edges = edges
        # The class defaults are empty tuples: only a forward that marked something pays.
        if self._dirty:
            self._check_dirty()
        if isinstance(result, TensorBase):
            dtype = result._data.dtype
            if (dtype.is_floating_point or dtype.is_complex) and (
                    not self._non_differentiable or self._differentiable(result)):
                result.requires_grad = True
                result.grad_fn = self
            saved = self._saved
            if saved:
                if len(saved) == 1:
                    if saved[0] is result:      # exp, tanh, sigmoid: the output alone
                        self._saved = (result._from_data(result._data, version=result._version),)
                        self._saved_outputs = ((0, 0),)
                else:
                    for t in saved:
                        if t is result:
                            self._detach_saved_outputs((result,))
                            break
                if _saved_hooks.stack:
                    self._pack_saved()
            return
        self.output_count = len(result)
        # Multi-output nodes may get no gradient for some outputs: keep what zeros need.
        meta = []
        for nr, out in enumerate(result):
            if not isinstance(out, TensorBase):
                meta.append(None)
                continue
            data = out._data
            meta.append((data.shape, data.dtype, data.device))
            if (data.dtype.is_floating_point or data.dtype.is_complex) and (
                    not self._non_differentiable or self._differentiable(out)):
                out.requires_grad = True
                out.grad_fn = self
                out._output_nr = nr
        self.output_meta = meta
        if self._saved:
            self._detach_saved_outputs(result)
            if _saved_hooks.stack:
                self._pack_saved()

    def _detach_saved_outputs(self, outputs):
        """A saved output would point back at this node (output -> node -> output): keep an
        alias without grad_fn instead, re-attached in `saved_tensors`, so a graph that is never
        backpropagated is freed by reference counting alone (torch's SavedVariable does this)."""
        saved = list(self._saved)
        for i, tensor in enumerate(saved):
            for nr, out in enumerate(outputs):
                if tensor is out and out is not None:     # (None: an output left out)
                    saved[i] = out._from_data(out._data, version=out._version)
                    self._saved_outputs = self._saved_outputs + ((i, nr),)
        self._saved = tuple(saved)

    def _pack_saved(self):
        """The innermost saved_tensors_hooks' pack hook replaces each tensor saved by
        save_for_backward, as the node is recorded (torch packs its SavedVariables then);
        saved_tensors unpacks them. What an op keeps in other ctx attributes is not packed."""
        stack = _saved_hooks.stack
        pack, self._unpack = stack[-1]
        _saved_hooks.stack = []         # the hook's own ops save nothing through it
        try:
            self._saved = tuple(None if t is None else pack(t) for t in self._saved)
        finally:
            _saved_hooks.stack = stack
        self._saved_outputs = ()

    # -- saved tensors --------------------------------------------------------------------------
    def save_for_backward(self, *tensors):
        self._saved = tensors
        if len(tensors) == 1:       # the common counts without a comprehension's call
            t, = tensors
            self._saved_versions = (0 if t is None else t._version[0],)
        elif len(tensors) == 2:
            a, b = tensors
            self._saved_versions = (0 if a is None else a._version[0],
                                    0 if b is None else b._version[0])
        else:
            self._saved_versions = [t._version[0] if t is not None else 0 for t in tensors]

    @property
    def saved_tensors(self):
        if self._released:
            raise RuntimeError(
                "Trying to backward through the graph a second time (or directly access saved "
                "tensors after they have already been freed). Saved intermediate values of the "
                "graph are freed when you call .backward() or autograd.grad(). Specify "
                "retain_graph=True if you need to backward through the graph a second time or if "
                "you need to access saved tensors after calling backward.")
        if self._unpack is not None:
            return tuple(None if t is None else self._unpack(t) for t in self._saved)
        for position, nr in self._saved_outputs:
            alias = self._saved[position]
            if alias.grad_fn is None:   # re-attached only while backward needs it
                alias.requires_grad, alias.grad_fn, alias._output_nr = True, self, nr
        for tensor, version in zip(self._saved, self._saved_versions):
            if tensor is not None and tensor._version[0] != version:
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been modified by "
                    f"an inplace operation: [{tensor.type()} {list(tensor.shape)}], which is "
                    f"output 0 of {self.name()}, is at version {tensor._version[0]}; expected "
                    f"version {version} instead. Hint: the backtrace further above can point to "
                    "the operation that failed to compute its gradient.")
        return self._saved

    def mark_non_differentiable(self, *tensors):
        """These outputs get no history (their gradient arrives as zeros, or None without
        materialization); integer outputs never require grad anyway."""
        self._non_differentiable = self._non_differentiable + tuple(tensors)

    def _differentiable(self, output):
        return not any(output is t for t in self._non_differentiable)

    def mark_dirty(self, *tensors):
        """forward modified these inputs in place (and returns them): they become its outputs
        in the graph, which a leaf that requires grad cannot be."""
        self._dirty = self._dirty + tuple(tensors)

    def _check_dirty(self):
        for t in self._dirty:
            if t.requires_grad and t.grad_fn is None:
                raise RuntimeError("a leaf Variable that requires grad has been used in an "
                                   "in-place operation.")

    def set_materialize_grads(self, value):
        self.materialize_grads = value

    # -- node API -------------------------------------------------------------------------------
    node_name = None    # torch's name for this node where the class's is not it (fused nodes)

    def name(self):
        """torch's node names: MulBackward0 for built-in ops, MyFnBackward for user Functions."""
        if self.node_name is not None:
            return self.node_name
        cls = type(self)
        if not cls.__module__.startswith("minitorch."):
            return cls.__name__ + "Backward"
        return cls.__name__ if cls.__name__.endswith("Backward") else cls.__name__ + "Backward0"

    @property
    def next_functions(self):
        return tuple((_node_view(edge), edge[1] if edge and edge[1] > 0 else 0)
                      for edge in self.next_edges)

    def register_hook(self, hook):
        """hook(grad_inputs, grad_outputs) after this node's backward (torch's Node hook)."""
        if self._hooks is None:
            self._hooks = {}
        handle = RemovableHandle(self._hooks)
        self._hooks[handle.id] = hook
        return handle

    def __repr__(self):
        return f"<{self.name()} object at {hex(id(self))}>"

    @staticmethod
    def forward(ctx, *args):
        raise NotImplementedError("Function subclasses must implement forward")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("Function subclasses must implement backward")


def _apply(cls, args):
    """Function.apply's work (and, for a KernelFunction, what its own apply does): the
    profiler (autograd/profiler.py) runs it inside an op's event."""
    ctx = cls()
    requires_grad = False
    if _grad_mode.enabled:
        for arg in args:
            if isinstance(arg, TensorBase) and arg.requires_grad:
                requires_grad = True
                break
    if cls._internal:
        result = cls.forward(ctx, *args)
    elif cls._separate_setup:
        with no_grad():
            result = cls.forward(*args)
            cls.setup_context(ctx, args, result)
    else:
        with no_grad():
            result = cls.forward(ctx, *args)
    if requires_grad:
        ctx._connect(args, result)
        if _anomaly["enabled"]:
            ctx._forward_stack = traceback.format_stack()[:-1]
    return result


class KernelFunction(Function):
    """Base of minitorch's own ops (minitorch/functions/): their forward computes on NDArrays
    with our kernels and records nothing, so `apply` calls it directly instead of switching
    grad mode off around it as it does for a user's Function."""
    _internal = True

    @classmethod
    def apply(cls, *args):
        # Function.apply without the branches a KernelFunction never takes: the path of every
        # built-in op, so it is kept to the checks that must run (and one profiler test).
        if _profiling:
            return _profiler.op(cls, args)
        ctx = cls()
        if _grad_mode.enabled:
            for arg in args:
                if isinstance(arg, TensorBase) and arg.requires_grad:
                    result = cls.forward(ctx, *args)
                    ctx._connect(args, result)
                    if _anomaly["enabled"]:
                        ctx._forward_stack = traceback.format_stack()[:-1]
                    return result
        return cls.forward(ctx, *args)

    @classmethod
    def apply_recording(cls, *args):
        """apply for a caller that has already seen grad mode on and an input requiring grad
        (the fast `a + b` operators): the same node, without testing that again."""
        if _profiling:
            return _profiler.op(cls, args)
        ctx = cls()
        result = cls.forward(ctx, *args)
        ctx._connect(args, result)
        if _anomaly["enabled"]:
            ctx._forward_stack = traceback.format_stack()[:-1]
        return result


class AccumulateGrad:
    """The node a leaf's gradient flows into (shown by next_functions, as in torch)."""
    __slots__ = ("variable",)

    def __init__(self, variable):
        self.variable = variable

    def name(self):
        return "AccumulateGrad"

    def __repr__(self):
        return f"<AccumulateGrad object at {hex(id(self))}>"

    next_functions = ()


def _refresh_view(view):
    """A view whose storage was written in place since its grad_fn was recorded (through its
    base or another view) gets a fresh grad_fn reading the base's current history, as torch
    regenerates it: an as_strided view of the base."""
    view._view_version = view._version[0]
    base = view._base
    if base.requires_grad:
        fresh = base.as_strided(view.shape, view.stride(), view.storage_offset())
        view.grad_fn, view._output_nr = fresh.grad_fn, fresh._output_nr


def _edge_of(tensor):
    """Where a gradient for `tensor` goes: (node, output_nr) for results of ops, (tensor, -1)
    for leaves (accumulated into .grad)."""
    if tensor.grad_fn is not None:
        return (tensor.grad_fn, tensor._output_nr)
    return (tensor, -1)


def _node_view(edge):
    if edge is None:
        return None
    target, nr = edge
    return AccumulateGrad(target) if nr == -1 else target


# ---- the engine ---------------------------------------------------------------------------------
def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate d(tensors)/d(leaves) into the leaves' .grad (torch.autograd.backward)."""
    roots = _roots(tensors, grad_tensors)
    if retain_graph is None:
        retain_graph = create_graph
    capture = None
    if inputs is not None:
        inputs = (inputs,) if _is_tensor(inputs) else tuple(inputs)
        if not inputs:
            raise RuntimeError("'inputs' argument to backward() cannot be empty.")
        capture = {_capture_key(t): i for i, t in enumerate(inputs)}
    results = _run(roots, retain_graph, create_graph, capture, accumulate=True, inputs=inputs)
    for t, g in zip(inputs or (), results or ()):
        if g is not None and t.grad_fn is not None:     # a non-leaf input keeps its gradient
            _deliver_to_leaf(t, g, None, None, True, create_graph)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """Gradients of `outputs` w.r.t. `inputs`, returned rather than accumulated. With
    is_grads_batched, the first dim of every grad_output is a batch of cotangents: one
    vector-Jacobian product each, stacked (a vmap over this call)."""
    if not only_inputs:
        warnings.warn("only_inputs argument is deprecated and is ignored now (defaults to "
                      "True). To accumulate gradient for other parts of the graph, please use "
                      "torch.autograd.backward.", stacklevel=2)
    if is_grads_batched:
        return BATCHED_GRAD[0](outputs, inputs, grad_outputs, retain_graph, create_graph,
                               allow_unused, materialize_grads)
    single = _is_tensor(inputs)
    inputs = (inputs,) if single else tuple(inputs)
    for t in inputs:
        if not t.requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    roots = _roots(outputs, grad_outputs)
    if retain_graph is None:
        retain_graph = create_graph
    capture = {_capture_key(t): i for i, t in enumerate(inputs)}
    results = _run(roots, retain_graph, create_graph, capture, accumulate=False, inputs=inputs)
    if allow_unused is None:
        allow_unused = materialize_grads
    for i, g in enumerate(results):
        if g is None:
            if not allow_unused:
                raise RuntimeError("One of the differentiated Tensors appears to not have been "
                                   "used in the graph. Set allow_unused=True if this is the "
                                   "desired behavior.")
            if materialize_grads:
                results[i] = _zeros_like(inputs[i])
    return tuple(results)


# grad(..., is_grads_batched=True) is a vmap of grad over the cotangents, and vmap is a
# transform above this layer: minitorch.vmap puts its implementation here when it is imported
# (always, by `import minitorch`), as torch's autograd calls its _vmap_internals.
BATCHED_GRAD = [None]


def release(outputs):
    """Free what every node behind `outputs` saved, as a backward without retain_graph does."""
    stack = [t.grad_fn for t in outputs if _is_tensor(t) and t.grad_fn is not None]
    seen = set()
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        node._saved = ()
        node._released = True
        stack.extend(edge[0] for edge in node.next_edges if edge is not None and edge[1] != -1)


def _zeros_like(t):
    return t._from_data(NDArray.full(t._data.shape, 0, t.dtype, t.device))


def _is_tensor(x):
    return isinstance(x, TensorBase)


def _capture_key(tensor):
    edge = _edge_of(tensor)
    return (id(edge[0]), edge[1])


def _roots(tensors, grads):
    """[(edge, grad)] for each output, checking torch's rules for implicit gradients."""
    if grads is None and isinstance(tensors, TensorBase) and tensors.requires_grad \
            and tensors._data.size == 1:
        # loss.backward(): the commonest call, which none of the checks below can refuse
        return [(_edge_of(tensors), _ones_like_scalar(tensors))]
    tensors = (tensors,) if isinstance(tensors, TensorBase) else tuple(tensors)
    if grads is None:
        grads = (None,) * len(tensors)
    elif isinstance(grads, TensorBase):
        grads = (grads,)
    else:
        grads = tuple(grads)
    if len(grads) != len(tensors):
        raise RuntimeError("grad can be implicitly created only for scalar outputs"
                           if not grads else "Mismatch in number of gradients: got "
                           f"{len(grads)} but expected {len(tensors)}")
    roots = []
    for t, g in zip(tensors, grads):
        if not t.requires_grad:
            raise RuntimeError("element 0 of tensors does not require grad and does not have a "
                               "grad_fn")
        if g is None:
            if t.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            g = _ones_like_scalar(t)
        elif g.shape != t.shape:
            raise RuntimeError(f"Mismatch in shape: grad_output[0] has a shape of "
                               f"torch.Size({list(g.shape)}) and output[0] has a shape of "
                               f"torch.Size({list(t.shape)}).")
        elif g.dtype is not t.dtype:
            g = g.to(t.dtype)       # a gradient always has its tensor's dtype
        roots.append((_edge_of(t), g))
    return roots


def _ones_like_scalar(t):
    """The implicit seed 1 for a one-element output: a cached constant viewed to its shape
    (leaves copy before storing a gradient, so nothing can write into it)."""
    data = t._data
    shape = data.shape
    one = scalar_array(1, data.dtype, data.device)
    # one element: any strides describe it, so a view of it needs no reshape's checks
    return t._from_data(one._view(shape, contiguous_strides(shape)))


def _dependencies(roots):
    """How many edges point at each node reachable from the roots (iterative DFS), and the
    leaves reached by more than one edge: {id(leaf): [edge count, None]}, the entries
    _gather_at_leaf sums a leaf's gradients in (as torch's InputBuffer in front of
    AccumulateGrad). Nodes are dict keys themselves: Function objects hash by identity."""
    deps, seen_leaves, shared = {}, set(), {}
    # A root may also be reachable from another root: visit every node once. A node other
    # than a root is pushed when it is first counted (when it enters deps).
    stack = [edge[0] for edge, _ in roots if edge[1] != -1]
    if len(stack) != len(roots):        # a leaf among the roots
        for (target, nr), _ in roots:
            if nr == -1:
                _count_leaf_edge(id(target), seen_leaves, shared)
    root_nodes = set(stack)
    if len(root_nodes) != len(stack):
        stack = list(dict.fromkeys(stack))
    while stack:
        node = stack.pop()
        for edge in node.next_edges:
            if edge is None:
                continue
            child = edge[0]
            if edge[1] == -1:
                key = id(child)
                if key in seen_leaves:      # the second edge to this leaf, or later
                    _count_leaf_edge(key, seen_leaves, shared)
                else:
                    seen_leaves.add(key)
                continue
            count = deps.get(child)
            if count is None:
                deps[child] = 1
                if child not in root_nodes:
                    stack.append(child)
            else:
                deps[child] = count + 1
    return deps, shared


def _count_leaf_edge(key, seen_leaves, shared):
    """One more edge reaches the leaf with id `key`."""
    if key not in seen_leaves:
        seen_leaves.add(key)
    elif key in shared:
        shared[key][0] += 1
    else:
        shared[key] = [2, None]


def _run(roots, retain_graph, create_graph, capture, accumulate, inputs):
    """Propagate gradients from the roots. With `capture` ({key: position}), the gradients
    reaching those tensors are returned; with `accumulate`, leaves' .grad is updated."""
    results = [None] * len(inputs) if inputs is not None else None
    pending = {}              # node -> [grad per output], until all its consumers are done
    # shared: the leaves reached by several edges, id -> [edges still due, sum so far]
    deps, shared = _dependencies(roots)
    for (target, nr), g in roots:
        if nr == -1:
            if shared and id(target) in shared:
                g = _gather_at_leaf(shared, target, g)
            if g is not None:
                _deliver_to_leaf(target, g, capture, results, accumulate, create_graph)
            continue
        _add_grad(pending, target, nr, g)
    ready = [node for node in pending if node not in deps]
    previous = _grad_mode.enabled
    _grad_mode.enabled = create_graph
    try:
        while ready:
            node = ready.pop()
            grads = pending.pop(node, None)
            if grads is None:
                # Only "no gradient" (None) reached this node: nothing to compute, but its
                # inputs must still be released so gradient arriving by other paths flows.
                input_grads = (None,) * len(node.next_edges)
            elif (node.output_count == 1 and capture is None and not node._tensor_hooks
                  and not node._hooks and not _anomaly["enabled"] and not _profiling):
                # The common node: _backward_node and _call_backward without their branches.
                input_grads = node.backward(node, grads[0])
                if not retain_graph:
                    node._saved = ()
                    node._released = True
                if type(input_grads) is not tuple:
                    input_grads = (input_grads,)
                if len(input_grads) != len(node.next_edges):
                    _check_gradient_count(node, input_grads)
            else:
                input_grads = _backward_node(node, grads, capture, results, retain_graph)
            grads = None    # drop the incoming gradients so leaves can own what they get
            for edge, g in zip(node.next_edges, input_grads):
                if edge is None:
                    continue
                target, nr = edge
                if nr == -1:
                    if shared and id(target) in shared:
                        g = _gather_at_leaf(shared, target, g)
                    if g is not None:
                        _deliver_to_leaf(target, g, capture, results, accumulate, create_graph)
                    continue
                if g is not None:
                    held = pending.get(target)      # _add_grad, inlined
                    if held is None:
                        held = pending[target] = [None] * target.output_count
                    held[nr] = g if held[nr] is None else held[nr] + g
                remaining = deps[target] - 1
                deps[target] = remaining
                if remaining == 0:
                    ready.append(target)
    finally:
        _grad_mode.enabled = previous
    return results


def _backward_node(node, grads, capture, results, retain_graph, profiled=False):
    """Tensor hooks, gradient capture (autograd.grad), then the node's backward."""
    if _profiling and not profiled:
        return _profiler.node(node.name(), grads, _backward_node,
                              (node, grads, capture, results, retain_graph, True))
    if node._tensor_hooks:
        grads = _apply_tensor_hooks(node, grads)
    if capture is not None:
        for nr, g in enumerate(grads):
            position = capture.get((id(node), nr))
            if position is not None:
                results[position] = g
    return _call_backward(node, grads, retain_graph)


def _add_grad(pending, node, nr, g):
    """Sum gradient `g` into output `nr` of `node`'s pending gradients."""
    grads = pending.get(node)
    if grads is None:
        grads = pending[node] = [None] * node.output_count
    grads[nr] = g if grads[nr] is None else grads[nr] + g


def _call_backward(node, grads, retain_graph):
    """Run one node's backward; returns one gradient (or None) per input edge."""
    if node.output_count > 1 and node.materialize_grads and any(g is None for g in grads):
        present = next(g for g in grads if g is not None)
        grads = [present._from_data(NDArray.full(meta[0], 0, meta[1], meta[2]))
                 if g is None and meta else g for g, meta in zip(grads, node.output_meta)]
    if _anomaly["enabled"]:
        result = _backward_with_anomaly_checks(node, grads)
    else:
        result = node.backward(node, *grads)
    if not retain_graph:
        node._saved = ()
        node._released = True
    if type(result) is not tuple:
        result = (result,)
    if len(result) != len(node.next_edges):
        _check_gradient_count(node, result)
    if node._hooks:
        for hook in list(node._hooks.values()):
            replaced = hook(result, tuple(grads))
            if replaced is not None:
                result = tuple(replaced)
    return result


def _backward_with_anomaly_checks(node, grads):
    """node.backward, warning with the forward call's stack if it fails, and refusing NaN
    gradients (when check_nan is on)."""
    try:
        result = node.backward(node, *grads)
        if _anomaly["check_nan"]:
            for i, g in enumerate(result if type(result) is tuple else (result,)):
                if _is_tensor(g) and g.dtype.is_floating_point and bool(g.isnan().any()):
                    raise RuntimeError(f"Function '{node.name()}' returned nan values in its "
                                       f"{i}th output.")
        return result
    except Exception:
        stack = getattr(node, "_forward_stack", None)
        if stack:
            warnings.warn(f"Error detected in {node.name()}. Traceback of forward call that "
                          f"caused the error:\n{''.join(stack)}", stacklevel=2)
        raise


def _check_gradient_count(node, result):
    """A backward may return extra Nones, or leave out trailing non-differentiable arguments
    (dims, flags); any other count mismatch is torch's error."""
    edges = node.next_edges
    if any(g is not None for g in result[len(edges):]) or any(
            edge is not None for edge in edges[len(result):]):
        raise RuntimeError(f"function {node.name()} returned an incorrect number of gradients "
                           f"(expected {len(edges)}, got {len(result)})")


def _apply_tensor_hooks(node, grads):
    """Run hooks registered on the non-leaf tensors this node produced (tensor.register_hook);
    retain_grad's store runs after the others whenever it was registered, as torch's does."""
    grads = list(grads)
    for nr, hook_dict in node._tensor_hooks.items():
        if grads[nr] is None:
            continue
        store = None
        for hook in list(hook_dict.values()):
            if getattr(hook, "retains_grad", False):
                store = hook
                continue
            replaced = hook(grads[nr])
            if replaced is not None:
                grads[nr] = replaced
        if store is not None:
            store(grads[nr])
    return grads


def _can_steal(g, leaf):
    """True when g can become leaf's .grad without a copy (torch "steals" such gradients too):
    nothing but the engine's own locals can reach g or its memory, and g is compact where the
    gradient layout contract wants it so (see _compact_grad_fits). Backward rules may hand one
    tensor, or views of one buffer, to several inputs (a + b): those are shared and must be
    copied, since two leaves must never share a .grad buffer. The counts are CPython reference
    counts: the engine's locals and getrefcount's own argument."""
    data = g._data
    # the leaf's own compactness first: the usual parameter needs no further call
    return (not g.requires_grad and sys.getrefcount(g) <= _ENGINE_REFS_TO_GRAD
            and sys.getrefcount(data) == 3 and sys.getrefcount(data.buffer) == 2
            and data.offset == 0 and len(data.buffer) == data.size and data.is_compact()
            and (leaf._data.is_compact() or _compact_grad_fits(leaf)))


# References to a gradient while _run hands it to _deliver_to_leaf: _run's loop variable and
# input_grads tuple, the arguments of _deliver_to_leaf and of this function, a reference the
# interpreter holds for the call, and getrefcount's own argument. (Its NDArray: g's slot, the
# local `data`, getrefcount's argument; its buffer: the NDArray's slot and the argument.)
_ENGINE_REFS_TO_GRAD = 6


def _compact_grad_fits(leaf):
    """Whether a compact gradient obeys torch's gradient layout contract for `leaf`: .grad has
    the leaf's strides when the leaf is non-overlapping and dense, else is contiguous."""
    data = leaf._data
    return data.is_compact() or dense_order(data.shape, data.strides) is None


def _grad_layout_copy(g, leaf):
    """A copy of g laid out by the gradient layout contract (torch's clone_obey_contract): a
    weight used transposed gets a contiguous .grad, as its own layout is, not g's."""
    if _compact_grad_fits(leaf):
        return g.clone() if g._data.is_compact() else g.contiguous()
    data = leaf._data
    if g._data.strides == data.strides:
        return g.clone()
    return g.new_empty_strided(data.shape, data.strides).copy_(g)


def _gather_at_leaf(shared, leaf, g):
    """One of the several edges to `leaf` delivers g (or None): the sum of them all once the
    last has arrived (None if none carried a gradient), else None. So the leaf's hooks and its
    accumulation run once, on the sum (torch's InputBuffer in front of AccumulateGrad)."""
    entry = shared[id(leaf)]
    if g is not None:
        g = _as_leaf_gradient(leaf, g)
        entry[1] = g if entry[1] is None else _sum_gradients(entry[1], g)
    entry[0] -= 1
    if entry[0]:
        return None
    del shared[id(leaf)]
    return entry[1]


def _as_leaf_gradient(leaf, g):
    """g on the leaf's device and in its dtype: a CPU scalar used with GPU tensors gets a GPU
    gradient, and a backward that computed wider (a custom Function under autocast) is cast,
    as torch does."""
    if g.is_sparse:
        return _as_sparse_leaf_gradient(leaf, g)
    if g._data.device is not leaf._data.device:
        g = g.to(leaf.device)
    if g._data.dtype is not leaf._data.dtype:
        g = g.to(leaf.dtype)
    return g


def _as_sparse_leaf_gradient(leaf, g):
    """A sparse COO gradient (nn.Embedding(sparse=True)) on the leaf's device and in its
    dtype, through its own to()."""
    if g.device != leaf.device or g.dtype is not leaf.dtype:
        g = g.to(device=leaf.device, dtype=leaf.dtype)
    return g


def _sum_gradients(a, b):
    """a + b for gradients of which one or both may be sparse COO tensors (torch's
    InputBuffer): sparse + sparse stays sparse (the entries of both, concatenated), a dense
    operand on either side gives a dense sum (dense + sparse is the sparse type's operator;
    sparse + dense would be torch's add(sparse, dense) error, so it is turned round)."""
    if a.is_sparse and not b.is_sparse:
        return b + a
    return a + b


def _accumulate_sparse(leaf, g, create_graph):
    """AccumulateGrad when the stored .grad or the new gradient is sparse (torch's rules): the
    first sparse gradient is stored as it is; without a graph being built, sparse + sparse
    concatenates in place, a dense .grad takes a sparse gradient in place (index_add), and a
    sparse .grad meeting a dense gradient becomes their dense sum; with create_graph the sum
    is made out of place."""
    stored = leaf._grad
    if stored is None:
        leaf._grad = g if create_graph or not _grad_mode.enabled else g.detach()
    elif not create_graph and not _grad_mode.enabled and stored.is_sparse == g.is_sparse:
        stored.add_(g)
    elif not create_graph and not _grad_mode.enabled and not stored.is_sparse and \
            not stored.requires_grad:
        stored.add_(g)      # dense .grad += sparse: the sparse type's index_add, in place
    else:
        leaf._grad = _sum_gradients(stored, g if create_graph or not _grad_mode.enabled
                                    else g.detach())


def _deliver_to_leaf(leaf, g, capture, results, accumulate, create_graph, profiled=False):
    if _profiling and not profiled:     # (its gradient is then copied: the hook holds it)
        return _profiler.node("torch::autograd::AccumulateGrad", (g,), _deliver_to_leaf,
                              (leaf, g, capture, results, accumulate, create_graph, True))
    g = _as_leaf_gradient(leaf, g)
    if leaf._hooks:
        for hook in list(leaf._hooks.values()):
            replaced = hook(g)
            if replaced is not None:
                g = replaced
    if capture is not None:
        position = capture.get((id(leaf), -1))
        if position is None:
            return          # backward(inputs=...) fills only the listed tensors' .grad
        results[position] = g if results[position] is None else \
            _sum_gradients(results[position], g)
    if not accumulate:
        return
    if g.is_sparse or (leaf._grad is not None and leaf._grad.is_sparse):
        _accumulate_sparse(leaf, g, create_graph)
        _run_post_accumulate_hooks(leaf)
        return
    # the engine's gradient already has the leaf's shape, dtype and device: stored without
    # the public setter's checks
    if leaf._grad is None:
        if not create_graph and _can_steal(g, leaf):
            leaf._grad = g
        else:
            # with grad mode off (as inside _run) a copy records nothing: no detached alias
            leaf._grad = _grad_layout_copy(g if create_graph or not _grad_mode.enabled else
                                           g.detach(), leaf)
    elif not create_graph and not _grad_mode.enabled and not leaf._grad.requires_grad:
        # torch's AccumulateGrad: in place when no graph is built, so .grad keeps its memory
        # (a captured CUDA graph's optimizer kernels hold its address): straight into its
        # buffer when the layouts allow, else through add_
        stored = leaf._grad
        if stored._data.add_into(g._data):
            stored._version[0] += 1
        else:
            stored.add_(g)
    elif create_graph or not _grad_mode.enabled:
        leaf._grad = leaf._grad + g
    else:
        leaf._grad = leaf._grad + g.detach()
    _run_post_accumulate_hooks(leaf)


def _run_post_accumulate_hooks(leaf):
    hooks = getattr(leaf, "_post_accumulate_hooks", None)
    if hooks:
        for hook in hooks.values():
            hook(leaf)
