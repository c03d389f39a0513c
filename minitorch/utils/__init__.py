"""mt.utils, as in torch.utils: data loading (mt.utils.data), activation checkpointing
(mt.utils.checkpoint), the hook handles (mt.utils.hooks) and swap_tensors."""
import copyreg
import weakref

from . import checkpoint, data, hooks

__all__ = ["checkpoint", "data", "hooks", "swap_tensors"]


def swap_tensors(t1, t2):
    """torch.utils.swap_tensors: t1 takes t2's contents (class, attributes, data, version
    counter, gradient state) and t2 takes t1's, each keeping its identity. A tensor's data
    lives in its slots and __dict__ here, so swapping those swaps everything. Unlike torch,
    a graph already recorded through one of them is not poisoned: don't backpropagate through
    a graph built before the swap."""
    for name, t in (("t1", t1), ("t2", t2)):
        if weakref.getweakrefs(t):
            raise RuntimeError(f"Cannot swap {name} because it has weakref associated with it")
    slots = set(copyreg._slotnames(t1.__class__))
    if slots != set(copyreg._slotnames(t2.__class__)):
        raise RuntimeError("Cannot swap t1 and t2 if they have different slots")
    for name in ("__class__", "__dict__"):
        _swap_attribute(t1, t2, name)
    for slot in slots:
        _swap_attribute(t1, t2, slot)


def _swap_attribute(t1, t2, name):
    """Exchange one attribute, an unset slot included (it becomes unset on the other side)."""
    missing = object()
    first, second = getattr(t1, name, missing), getattr(t2, name, missing)
    if first is missing and second is missing:
        return
    for target, value in ((t1, second), (t2, first)):
        if value is missing:
            delattr(target, name)
        else:
            setattr(target, name, value)
