"""Collectives of picklable Python objects: broadcast_object_list, all_gather_object,
gather_object, scatter_object_list, and send_object_list / recv_object_list. Pickle runs code
when loading, so only use them between ranks of one job."""
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


def scatter_object_list(scatter_object_output_list, scatter_object_input_list=None, src=None,
                        group=None, group_src=None):
    """Rank i's scatter_object_output_list[0] becomes item i of src's
    scatter_object_input_list (torch.distributed.scatter_object_list)."""
    from .collectives import _root
    pg = resolve(group)
    if pg is None:
        return
    if not isinstance(scatter_object_output_list, list) or len(scatter_object_output_list) < 1:
        raise ValueError("Expected argument scatter_object_output_list to be a list of size at "
                         "least 1.")
    root = _root(pg, 0 if src is None and group_src is None else src, group_src, "scatter",
                 "src")
    objects = None
    if pg.rank() == root:
        if scatter_object_input_list is None:
            raise ValueError("source rank must provide non-None scatter_object_input_list")
        objects = list(scatter_object_input_list)
        if len(objects) != pg.size():
            raise ValueError(f"scatter_object_input_list has {len(objects)} objects, one per "
                             f"rank of the group ({pg.size()}) is needed")
    scatter_object_output_list[0] = pg.engine.scatter_object(objects, root)


def send_object_list(object_list, dst=None, group=None, device=None, group_dst=None,
                     use_batch=False):
    """Sends the picklable objects of object_list to rank dst, blocking; the receiver passes
    a list of the same length to recv_object_list (torch.distributed.send_object_list)."""
    from .collectives import peer_rank
    pg = resolve(group)
    if pg is not None:
        pg.engine.send_object(list(object_list), peer_rank(pg, dst, group_dst, "destination"))


def recv_object_list(object_list, src=None, group=None, device=None, group_src=None,
                     use_batch=False):
    """Fills object_list with the objects rank src sent (any rank when src is None); returns
    the sender's global rank (torch.distributed.recv_object_list)."""
    from .collectives import peer_rank
    pg = resolve(group)
    if pg is None:
        return -1
    objects, sender = pg.engine.recv_object(peer_rank(pg, src, group_src, "source"))
    if len(objects) != len(object_list):
        raise RuntimeError(f"recv_object_list: rank {pg.ranks[sender]} sent {len(objects)} "
                           f"objects into a list of {len(object_list)}")
    object_list[:] = objects
    return pg.ranks[sender]
