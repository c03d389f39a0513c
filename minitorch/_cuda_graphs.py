"""torch.cuda's graph API (CUDAGraph, graph, graph_pool_handle, make_graphed_callables,
is_current_stream_capturing) over the capture machinery of minitorch/_gpu/graphs.py.

As in torch, a graph works on static tensors: capture records the kernels with the addresses of
the tensors they read and write; the caller copies new inputs into the captured input tensors,
replay() runs the recorded kernels again, and the captured output tensors then hold the new
results. Capture needs a warm-up run first (kernels compiled, optimizer state and pointer tables
made), on any stream. mt.cuda re-exports these names.
"""
import sys
import warnings

from . import _pytree
from ._gpu import graphs

_EMPTY = ("The CUDA Graph is empty. This usually means that the graph was attempted to be "
          "captured on wrong device or stream.")


def is_current_stream_capturing():
    """True while a graph capture is under way on the current CUDA stream (never starts CUDA)."""
    capture = graphs.active()
    if capture is None:
        return False
    return capture.stream.ptr == capture.backend.cupy.cuda.get_current_stream().ptr


def graph_pool_handle():
    """An opaque token for a graph memory pool: graphs captured with it share their memory
    (torch.cuda.graph_pool_handle)."""
    return graphs.GraphPool()


def _backend():
    from . import _gpu, cuda
    return _gpu.backend_for(cuda.current_device())


def _cached_scalars():
    """The device constants of ndarray's scalar cache, which captured kernels may read: the
    graph holds them, so that the cache dropping them cannot free their memory."""
    from .ndarray import _scalar_cache
    return [nd for nd in _scalar_cache.values() if nd.device.type == "cuda"]


class CUDAGraph:
    """A captured CUDA graph (torch.cuda.CUDAGraph). keep_graph is accepted for torch's
    signature: CuPy instantiates the graph when the capture ends, so instantiate() has nothing
    left to do."""

    def __init__(self, keep_graph=False):
        self.keep_graph = keep_graph
        self._graph = None          # the cupy Graph of a successful capture
        self._capture = None        # the graphs.Capture under way
        self._failed = False        # the last capture was abandoned
        self._pool = None
        self._backend = None
        self._index_checks = {}
        self._tables = self._scalars = ()

    def __del__(self):
        capture = getattr(self, "_capture", None)
        if capture is not None:         # a capture never ended: the backend goes back to eager
            capture.abandon()

    def capture_begin(self, pool=None, capture_error_mode="global"):
        """Begin capturing the CUDA work queued on the current stream (which must not be the
        default stream). pool: a graph_pool_handle() or another graph's pool() to share."""
        if self._graph is not None:
            raise RuntimeError("This CUDAGraph instance already owns a captured graph. To "
                               "capture a new graph, create a new instance.")
        if capture_error_mode not in graphs.MODES:
            raise RuntimeError("Unknown capture error mode. Expected `global`, `thread_local`, "
                               f"or `relaxed`, got {capture_error_mode}")
        if pool is not None and not isinstance(pool, graphs.GraphPool):
            raise TypeError("capture_begin(): pool must come from mt.cuda.graph_pool_handle() "
                            f"or CUDAGraph.pool(), got {type(pool).__name__}")
        backend = _backend()
        stream = backend.cupy.cuda.get_current_stream()
        if stream.ptr == 0:
            raise RuntimeError("CUDA graphs must be captured on a non-default stream. (However, "
                               "after capture, it's ok to replay them on the default stream.)")
        pool = graphs.GraphPool() if pool is None else pool
        self._capture = graphs.begin(backend, stream, pool, capture_error_mode)
        self._scalars = _cached_scalars()
        self._pool, self._backend, self._failed = pool, backend, False

    def capture_end(self):
        """End the capture begun on this (current) stream; replay() may follow."""
        capture, self._capture = self._capture, None
        if capture is None or graphs.active() is not capture:
            if capture is not None or self._failed:
                self._failed = False
                raise RuntimeError(graphs.INVALIDATED)
            raise RuntimeError(graphs.ILLEGAL_STATE)
        if capture.backend.cupy.cuda.get_current_stream().ptr != capture.stream.ptr:
            self._capture = capture
            raise RuntimeError("Capture must end on the same stream it began on.")
        self._graph = capture.end()
        self._index_checks, self._tables = capture.index_checks, capture.tables()
        if getattr(self._graph, "node_count", None) == 0:
            warnings.warn(_EMPTY, stacklevel=2)

    def _abandon(self):
        """Drop a capture under way (an error escaped it)."""
        capture, self._capture = self._capture, None
        if capture is not None:
            capture.abandon()
        self._failed = False

    def instantiate(self):
        """Nothing to do: the graph is instantiated when its capture ends."""
        if self._graph is None:
            raise RuntimeError("capture_end() must have been called before calling instantiate")

    def replay(self):
        """Run the captured work again, on the current stream. The integer indices the
        captured kernels read are checked first (IndexError, before anything runs)."""
        if self._graph is None:
            raise RuntimeError("Called CUDAGraph::replay without a preceding successful "
                               "capture.")
        for (_, n, dim), index in self._index_checks.items():
            self._backend._check_index(index, n, dim)
        self._graph.launch()

    def reset(self):
        """Delete the captured graph (and, unless shared, its memory pool)."""
        self._abandon()
        self._graph, self._pool, self._backend = None, None, None
        self._index_checks, self._tables, self._scalars = {}, (), ()

    def pool(self):
        """The token of this graph's memory pool, to share it with another capture."""
        if self._pool is None:
            raise RuntimeError("Called CUDAGraph::pool() without a preceding successful "
                               "capture.")
        return self._pool

    def enable_debug_mode(self):
        """Accepted for torch's API; there is no debug dump here."""

    def debug_dump(self, debug_path):
        """A no-op stand-in: CuPy offers no graph dump."""
        warnings.warn("CUDA Graphs debug not enabled, set with [graph].enable_debug_mode()",
                      stacklevel=2)


class graph:
    """`with mt.cuda.graph(g):` captures the CUDA work of the block into g (torch.cuda.graph):
    on `stream` (default: one side stream shared by all captures), into `pool`.

    When an exception escapes the block the capture is abandoned (g stays without a graph, the
    backend works eagerly again) and the exception propagates; a host synchronisation inside
    the block raises torch's RuntimeError "CUDA error: operation not permitted when stream is
    capturing"."""

    default_capture_stream = None

    def __init__(self, cuda_graph, pool=None, stream=None, capture_error_mode="global"):
        from . import cuda
        if stream is None and graph.default_capture_stream is None:
            graph.default_capture_stream = cuda.Stream()
        self.pool = () if pool is None else (pool,)
        self.capture_stream = stream if stream is not None else graph.default_capture_stream
        self.stream_ctx = cuda.stream(self.capture_stream)
        self.cuda_graph = cuda_graph
        self.capture_error_mode = capture_error_mode

    def __enter__(self):
        from . import cuda
        cuda.synchronize()
        cuda.empty_cache()
        self.stream_ctx.__enter__()
        try:
            self.cuda_graph.capture_begin(*self.pool,
                                          capture_error_mode=self.capture_error_mode)
        except BaseException:
            self.stream_ctx.__exit__(*sys.exc_info())
            raise

    def __exit__(self, kind, error, traceback):
        try:
            if error is None:
                self.cuda_graph.capture_end()
                return False
            self.cuda_graph._abandon()
            converted = graphs.abandon_after(error)
            if converted is not error:
                raise converted from error
            return False
        finally:
            self.stream_ctx.__exit__(kind, error, traceback)


# ---- make_graphed_callables --------------------------------------------------------------------
def make_graphed_callables(callables, sample_args, num_warmup_iters=3,
                           allow_unused_input=False, pool=None):
    """Graphed versions of callables (functions or Modules), torch.cuda.make_graphed_callables:
    each call copies its tensor arguments into the captured inputs and replays a forward graph
    inside one autograd node, whose backward replays a backward graph. A tuple of callables
    shares one memory pool and must run in the order given."""
    from .nn import Module
    from .tensor import Tensor
    just_one = not isinstance(callables, tuple)
    if just_one:
        callables, sample_args = (callables,), (sample_args,)
    flat_args = []
    for fn, args in zip(callables, sample_args):
        if isinstance(fn, Module):
            if fn._backward_hooks or fn._forward_hooks or fn._forward_pre_hooks:
                raise AssertionError(
                    "Modules must not have hooks registered at the time they are passed. "
                    "However, registering hooks on modules after passing them through "
                    "make_graphed_callables is allowed.")
            if not all(b.requires_grad is False for b in fn.buffers()):
                raise AssertionError(
                    "In any :class:`~torch.nn.Module` passed to :func:`~make_graphed_callables`"
                    ", only parameters may be trainable. All buffers must have "
                    "``requires_grad=False``.")
        leaves = tuple(_pytree.leaves(tuple(args)))
        if not all(isinstance(a, Tensor) for a in leaves):
            raise AssertionError("In the beta API, sample_args for each callable must contain "
                                 "only Tensors. Other types are not allowed.")
        flat_args.append(leaves)
    params = [tuple(fn.parameters()) if isinstance(fn, Module) else () for fn in callables]
    surfaces = [args + p for args, p in zip(flat_args, params)]
    mempool = graph_pool_handle() if pool is None else pool
    _warm_up(callables, sample_args, surfaces, num_warmup_iters, allow_unused_input)
    forwards, outputs, specs = _capture_forwards(callables, sample_args, mempool)
    backwards, grad_outputs, grad_inputs = _capture_backwards(surfaces, outputs, mempool,
                                                              allow_unused_input)
    graphed = []
    for i, fn in enumerate(callables):
        run = _graphed_function(forwards[i], backwards[i], params[i], len(flat_args[i]),
                                specs[i], surfaces[i], outputs[i], grad_outputs[i],
                                grad_inputs[i])
        if isinstance(fn, Module):
            fn.forward = _graphed_forward(fn, fn.training, run, fn.forward)
            graphed.append(fn)
        else:
            graphed.append(run)
    return graphed[0] if just_one else tuple(graphed)


def _grad(outputs, surface, grad_outputs, allow_unused):
    from .autograd import grad
    return grad(outputs=outputs, inputs=tuple(i for i in surface if i.requires_grad),
                grad_outputs=grad_outputs, allow_unused=allow_unused)


def _warm_up(callables, sample_args, surfaces, iterations, allow_unused):
    """Run each callable forward and backward a few times (on a side stream, as torch does),
    so that nothing lazily made on first use ends up in a capture."""
    from . import cuda
    from .tensor import empty_like
    cuda.synchronize()
    with cuda.stream(cuda.Stream()):
        for fn, args, surface in zip(callables, sample_args, surfaces):
            for _ in range(iterations):
                outputs = _pytree.leaves(fn(*args))
                needed = tuple(o for o in outputs if o.requires_grad)
                if needed:
                    _grad(needed, surface, tuple(empty_like(o) for o in needed), allow_unused)
    cuda.synchronize()


def _capture_forwards(callables, sample_args, mempool):
    forwards, outputs, specs = [], [], []
    for fn, args in zip(callables, sample_args):
        fwd = CUDAGraph()
        with graph(fwd, pool=mempool):
            result = fn(*args)
        forwards.append(fwd)
        outputs.append(tuple(_pytree.leaves(result)))
        specs.append(result)
    return forwards, outputs, specs


def _capture_backwards(surfaces, outputs, mempool, allow_unused):
    """Backward graphs in reverse order (the order they run in), with their static incoming
    gradients and the static gradients of each input surface (None where none flows)."""
    from .tensor import empty_like
    backwards, grad_outputs, grad_inputs = [], [], []
    for surface, static_outputs in zip(reversed(surfaces), reversed(outputs)):
        incoming = tuple(empty_like(o) if o.requires_grad else None for o in static_outputs)
        needed = tuple(o for o in static_outputs if o.requires_grad)
        bwd, grads = CUDAGraph(), None
        if needed:
            with graph(bwd, pool=mempool):
                grads = _grad(needed, surface, tuple(g for g in incoming if g is not None),
                              allow_unused)
        padded, k = [], 0
        for arg in surface:
            if arg.requires_grad and grads is not None:
                padded.append(grads[k])
                k += 1
            else:
                padded.append(None)
        backwards.append(bwd)
        grad_outputs.append(incoming)
        grad_inputs.append(tuple(padded))
    return backwards[::-1], grad_outputs[::-1], grad_inputs[::-1]


def _graphed_function(fwd, bwd, module_params, n_user_args, spec, surface, static_outputs,
                      static_grad_outputs, static_grad_inputs):
    from .autograd import Function

    class Graphed(Function):
        @staticmethod
        def forward(ctx, *inputs):
            for i in range(n_user_args):
                if surface[i].data_ptr() != inputs[i].data_ptr():
                    surface[i].copy_(inputs[i])
            fwd.replay()
            return tuple(o.detach() for o in static_outputs)

        @staticmethod
        def backward(ctx, *grads):
            for static, grad in zip(static_grad_outputs, grads):
                if static is not None and grad is not None and \
                        static.data_ptr() != grad.data_ptr():
                    static.copy_(grad)
            bwd.replay()
            return tuple(None if g is None else g.detach() for g in static_grad_inputs)

    def functionalized(*user_args):
        flat = tuple(_pytree.leaves(tuple(user_args)))
        out = Graphed.apply(*(flat + module_params))
        if not isinstance(out, tuple):
            out = (out,)
        return _pytree.rebuild(spec, iter(out))

    return functionalized


def _graphed_forward(module, training, graphed, original):
    """The module's forward: the graph while its training mode is the captured one."""
    def forward(*args, **kwargs):
        if module.training == training:
            return graphed(*args, **kwargs)
        return original(*args, **kwargs)
    return forward
