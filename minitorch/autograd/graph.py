"""torch.autograd.graph: the graph's node type and the hooks on saved tensors.

saved_tensors_hooks(pack, unpack) applies to the tensors a node saves through
ctx.save_for_backward (user Functions and the built-in ops that save tensors so): pack runs as
the node is recorded, unpack when backward reads ctx.saved_tensors. Built-in kernels that keep
NDArrays in other ctx attributes (workspaces such as an RNN's gate activations) are not packed,
so a pack hook may see fewer tensors than torch's does.
"""
import abc
import contextlib

from .engine import AccumulateGrad, Function, RemovableHandle, _saved_hooks

__all__ = ["Node", "saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks",
           "increment_version"]


class Node(abc.ABC):
    """torch.autograd.graph.Node: every grad_fn (a Function instance; ctx is the node) and
    AccumulateGrad are Nodes for isinstance."""

    @abc.abstractmethod
    def name(self):
        """The node's name, e.g. MulBackward0."""

    @property
    @abc.abstractmethod
    def next_functions(self):
        """(node, output_nr) of each input edge."""

    @classmethod
    def __subclasshook__(cls, candidate):
        if cls is Node and issubclass(candidate, (Function, AccumulateGrad)):
            return True
        return NotImplemented


class saved_tensors_hooks:
    """Context manager: pack_hook(tensor) -> anything, unpack_hook(that) -> tensor, for the
    tensors saved for backward while it is active (see the module docstring for the scope)."""

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        if _saved_hooks.disabled is not None:
            raise RuntimeError(_saved_hooks.disabled)
        _saved_hooks.stack.append((self.pack_hook, self.unpack_hook))
        return self

    def __exit__(self, *exc):
        _saved_hooks.stack.pop()
        return False


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors wait on the CPU and return to their device for backward (torch's memory
    offload). pin_memory is accepted; minitorch's host buffers are ordinary memory."""

    def __init__(self, pin_memory=False, device_type="cuda"):
        def pack(tensor):
            return tensor.device, tensor.cpu()

        def unpack(packed):
            device, tensor = packed
            return tensor.to(device, non_blocking=pin_memory)

        super().__init__(pack, unpack)


@contextlib.contextmanager
def disable_saved_tensors_hooks(error_message):
    """Inside, entering saved_tensors_hooks raises RuntimeError(error_message)."""
    previous = _saved_hooks.disabled
    _saved_hooks.disabled = error_message
    try:
        yield
    finally:
        _saved_hooks.disabled = previous


def increment_version(tensor):
    """Bumps the version counter(s) as an in-place write would (torch's escape hatch for writes
    autograd cannot see)."""
    for t in (tensor if isinstance(tensor, (list, tuple)) else (tensor,)):
        t._version[0] += 1


RemovableHandle = RemovableHandle
