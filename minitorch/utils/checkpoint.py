"""torch.utils.checkpoint: activation checkpointing. A checkpointed function keeps none of its
intermediate results for backward; backward runs it again (with the random state of the first
run) and backpropagates through that recomputation.

Both of torch's variants:
- use_reentrant=True (torch's default, with a warning when not passed): forward runs without
  recording; the output requires grad only if a tensor argument does.
- use_reentrant=False: forward runs recording and its graph is dropped as soon as it returns,
  so the output requires grad exactly when it would without checkpointing (also through
  parameters the function reaches by closure or as a module).
In both, the recomputation's backward accumulates into every leaf it reaches, as torch's
reentrant variant does: `autograd.grad` with respect to tensors used inside the function that
are not its arguments, and create_graph=True through a checkpoint, are not supported.
"""
import contextlib
import warnings

from .. import random as _random
from ..autograd import Function, backward, enable_grad, is_grad_enabled, no_grad
from ..tensor import Tensor, empty

__all__ = ["checkpoint", "checkpoint_sequential"]


def checkpoint(function, *args, use_reentrant=None, context_fn=None, determinism_check="default",
               debug=False, preserve_rng_state=True, **kwargs):
    """function(*args, **kwargs), recomputed during backward instead of stored."""
    if use_reentrant is None:
        warnings.warn("torch.utils.checkpoint: the use_reentrant parameter should be passed "
                      "explicitly. use_reentrant=False is recommended, but if you need to "
                      "preserve the current default behavior, you can pass use_reentrant=True.",
                      stacklevel=2)
        use_reentrant = True
    if use_reentrant and (context_fn is not None or kwargs):
        raise ValueError("Passing `context_fn` or `debug` is only supported when "
                         "use_reentrant=False." if context_fn is not None else
                         "Unexpected keyword arguments: " + ",".join(kwargs))
    if not is_grad_enabled():
        return function(*args, **kwargs)
    rng_state = _random.capture_state() if preserve_rng_state else None
    run = _Run(function, args, kwargs, rng_state)
    if use_reentrant:
        if not any(isinstance(a, Tensor) and a.requires_grad for a in args):
            warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                          stacklevel=2)
        with no_grad():
            outputs = function(*args, **kwargs)
        return _Checkpoint.apply(run, outputs, *run.tensors)
    forward_context, run.recompute_context = context_fn() if context_fn else (None, None)
    with enable_grad(), forward_context or contextlib.nullcontext():
        outputs = function(*args, **kwargs)
    if not any(o.requires_grad for o in _tensors_of(outputs)):
        return outputs
    anchor = empty(0, requires_grad=True)   # records the node even if no argument needs grad
    return _Checkpoint.apply(run, _detached(outputs), anchor, *run.tensors)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Run a Sequential (or list of modules) in `segments` checkpointed chunks; the last chunk
    runs normally, as in torch."""
    if use_reentrant is None:
        warnings.warn("torch.utils.checkpoint.checkpoint_sequential: the use_reentrant "
                      "parameter should be passed explicitly.", stacklevel=2)
        use_reentrant = True
    functions = list(functions.children()) if hasattr(functions, "children") else \
        list(functions)
    size = len(functions) // segments
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(_run_chunk(functions, start, end), input,
                           use_reentrant=use_reentrant, **kwargs)
    return _run_chunk(functions, end + 1, len(functions) - 1)(input)


def _run_chunk(functions, start, end):
    def forward(input):
        for function in functions[start:end + 1]:
            input = function(input)
        return input
    return forward


class _Run:
    """The checkpointed call: the function, its arguments (tensors kept as node inputs), and
    the random state to replay."""

    def __init__(self, function, args, kwargs, rng_state):
        self.function, self.args, self.kwargs, self.rng_state = function, args, kwargs, rng_state
        self.recompute_context = None
        self.tensors = [a for a in args if isinstance(a, Tensor)]

    def again(self, tensors):
        """The function's outputs, recomputed with recording on from `tensors` (fresh leaves
        standing for the tensor arguments)."""
        fresh = iter(tensors)
        args = [next(fresh) if isinstance(a, Tensor) else a for a in self.args]
        # the whole generator (numpy's stream and randperm's twister): both replay
        state = _random.capture_state()
        if self.rng_state is not None:
            _random.restore_state(self.rng_state)
        try:
            with enable_grad(), self.recompute_context or contextlib.nullcontext():
                return self.function(*args, **self.kwargs)
        finally:
            _random.restore_state(state)


def _tensors_of(outputs):
    return [outputs] if isinstance(outputs, Tensor) else \
        [o for o in outputs if isinstance(o, Tensor)]


def _detached(outputs):
    if isinstance(outputs, Tensor):
        return outputs.detach()
    return type(outputs)(o.detach() if isinstance(o, Tensor) else o for o in outputs)


class _Checkpoint(Function):
    """Node whose backward recomputes the run; its inputs are the run's tensor arguments (and,
    non-reentrant, an anchor leaf)."""

    @staticmethod
    def forward(ctx, run, outputs, *inputs):
        ctx.run = run
        return outputs

    @staticmethod
    def backward(ctx, *grads):
        if is_grad_enabled():
            # The recomputation's gradients would reach stand-ins of the arguments, not the
            # arguments' own graph: refuse rather than return a wrong higher-order gradient.
            raise RuntimeError("checkpoint: differentiating twice through a checkpointed "
                               "function (create_graph=True) is not supported")
        run = ctx.run
        fresh = [t.detach().requires_grad_(t.requires_grad) for t in run.tensors]
        outputs = _tensors_of(run.again(fresh))
        pairs = [(o, g) for o, g in zip(outputs, grads) if o.requires_grad and g is not None]
        if pairs:
            backward([o for o, _ in pairs], [g for _, g in pairs])
        anchors = (None,) * (len(ctx.next_edges) - 2 - len(fresh))
        return (None, None) + anchors + tuple(t.grad for t in fresh)
