"""Collectives of picklable Python objects: broadcast_object_list, all_gather_object and
gather_object. Pickle runs code when loading, so only use them between ranks of one job."""
from .group import resolve


def broadcast_object_list(object_list, src=None, group=None, device=None, group_src=None):
    """Replaces object_list's items on every rank with src's items (in place, as torch)."""
    from .collectives import _root
    pg = resolve(group)
    if pg is None:
        return
    root = _root(pg, 0 if src is None and group_src is None else src, group_src, "broadcast",
                 "src")
    received = pg.engine.broadcast_object(list(object_list) if pg.rank() == root else None, root)
    object_list[:len(received)] = received


def all_gather_object(object_list, obj, group=None):
    """object_list[i] becomes rank i's obj."""
    pg = resolve(group)
    if pg is None:
        return
    for i, item in enumerate(pg.engine.allgather_object(obj)):
        object_list[i] = item


def gather_object(obj, object_gather_list=None, dst=None, group=None, group_dst=None):
    """Collects every rank's picklable obj into object_gather_list on rank dst
    (torch.distributed.gather_object)."""
    from .collectives import _root
    pg = resolve(group)
    if pg is None:
        return
    root = _root(pg, dst, group_dst, "gather", "dst")
    if pg.rank() == root and object_gather_list is None:
        raise ValueError("Argument ``object_gather_list`` must be specified on destination rank.")
    if pg.rank() != root and object_gather_list:
        raise ValueError("Argument ``object_gather_list`` must NOT be specified on "
                         "non-destination ranks.")
    gathered = pg.engine.gather_object(obj, root)
    if pg.rank() == root:
        for i, item in enumerate(gathered):
            object_gather_list[i] = item
