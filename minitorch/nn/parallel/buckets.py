"""Gradient buckets of DistributedDataParallel: parameters grouped (in reverse registration
order, as gradients tend to arrive) into flat buffers that are all-reduced as one message."""
from ...tensor import wrap
from ...ndarray import NDArray, contiguous_strides

# torch's sizes: a small first bucket so communication starts early, then bucket_cap_mb.
FIRST_BUCKET_BYTES = 1024 * 1024


class Bucket:
    """Parameters sharing one flat gradient buffer (a 1-d tensor of their dtype and device)."""

    def __init__(self, params):
        self.params = params
        self.offsets, total = [], 0
        for p in params:
            self.offsets.append(total)
            total += p.numel()
        sample = params[0]._data
        backend = sample.backend
        flat = backend.full(total, 0, sample.dtype.storage) if total else \
            backend.empty(0, sample.dtype.storage)
        self.tensor = wrap(NDArray(flat, (total,), contiguous_strides((total,)), 0,
                                   sample.dtype, sample.device, backend))
        self.array = flat
        self.slots = [flat[start:start + p.numel()] for start, p in zip(self.offsets, params)]
        self.waiting = 0          # parameters whose gradient has not arrived this backward
        self.work = None          # the all-reduce in flight

    def slot(self, index):
        """The part of the flat buffer holding params[index]'s gradient."""
        return self.slots[index]


def assign_buckets(params, cap_bytes, first_cap_bytes=FIRST_BUCKET_BYTES):
    """Buckets in reverse parameter order; a bucket holds one dtype on one device and closes
    once it reaches its byte cap."""
    buckets, open_by_kind = [], {}
    for p in reversed(params):
        kind = (p.dtype, str(p.device))
        current = open_by_kind.get(kind)
        if current is None:
            current = open_by_kind[kind] = ([], [0])
        members, size = current
        members.append(p)
        size[0] += p.numel() * p.element_size()
        cap = first_cap_bytes if not buckets else cap_bytes
        if size[0] >= cap:
            buckets.append(Bucket(members))
            del open_by_kind[kind]
    buckets.extend(Bucket(members) for members, _ in open_by_kind.values())
    return buckets
