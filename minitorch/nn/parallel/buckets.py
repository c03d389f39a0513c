"""Gradient buckets of DistributedDataParallel: parameters grouped (in reverse registration
order, as gradients tend to arrive) into flat buffers that are all-reduced as one message; a
large parameter is a bucket of its own, all-reduced in place in its .grad."""
from ...autograd import no_grad
from ...tensor import wrap, zeros_like
from ...ndarray import NDArray, contiguous_strides

# torch's sizes: a small first bucket so communication starts early, then bucket_cap_mb.
FIRST_BUCKET_BYTES = 1024 * 1024
# From this size a parameter's gradient is all-reduced where it lies: copying it into a flat
# buffer and back costs two passes over its bytes, more than the message it would share saves.
SOLO_BYTES = 256 * 1024


class Bucket:
    """Parameters sharing one flat gradient buffer (a 1-d tensor of their dtype and device).
    Each backward: take() every parameter's gradient, scale(), then all-reduce `tensor`;
    results() gives the averages to write back into .grad."""

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

    def take(self, index, grad):
        """params[index]'s complete gradient joins the bucket (copied as bytes)."""
        data = grad._data
        self.slots[index][...] = data.flat() if data.is_compact() else data.copy().flat()

    def take_zeros(self, index):
        """params[index] got no gradient on this rank: it contributes zeros."""
        self.slots[index][...] = 0

    def scale(self, factor):
        """Multiply the gathered gradients by factor before the sum (torch divides by the world
        size there, on the way into the bucket)."""
        with no_grad():
            self.tensor.mul_(factor)

    def results(self):
        """(index, flat array of the average) for each parameter, after the all-reduce."""
        return enumerate(self.slots)

    def release(self):
        """End of the backward (the flat buffer is kept for the next)."""


class SoloBucket:
    """One large parameter, all-reduced in its own .grad (scaled there in place), so its
    gradient is never copied. A stand-in tensor takes its place when it has no usable .grad
    (unused on this rank, or a gradient that is part of a graph), and is written back."""

    def __init__(self, param):
        self.params = [param]
        self.tensor = None
        self.stand_in = False
        self.waiting = 0
        self.work = None

    def take(self, index, grad):
        if grad.requires_grad:      # create_graph: the graph's tensor is not ours to scale
            self.tensor, self.stand_in = grad.detach().clone(), True
        else:
            self.tensor, self.stand_in = grad, False

    def take_zeros(self, index):
        self.tensor, self.stand_in = zeros_like(self.params[0]).detach(), True

    scale = Bucket.scale

    def results(self):
        """Nothing to write back when the all-reduce ran in .grad itself."""
        if not self.stand_in:
            return ()
        data = self.tensor._data
        return ((0, data.flat() if data.is_compact() else data.copy().flat()),)

    def release(self):
        """No reference to a .grad past this backward."""
        self.tensor = None


def assign_buckets(params, cap_bytes, first_cap_bytes=FIRST_BUCKET_BYTES,
                   solo_bytes=SOLO_BYTES):
    """Buckets in reverse parameter order; a bucket holds one dtype on one device and closes
    once it reaches its byte cap. A parameter of at least solo_bytes (or of the cap, if smaller)
    closes the open bucket of its kind and is a bucket of its own."""
    buckets, open_by_kind = [], {}
    for p in reversed(params):
        kind = (p.dtype, str(p.device))
        nbytes = p.numel() * p.element_size()
        cap = first_cap_bytes if not buckets else cap_bytes
        if nbytes and nbytes >= min(solo_bytes, cap):
            current = open_by_kind.pop(kind, None)
            if current is not None:
                buckets.append(Bucket(current[0]))
            buckets.append(SoloBucket(p))
            continue
        current = open_by_kind.get(kind)
        if current is None:
            current = open_by_kind[kind] = ([], [0])
        members, size = current
        members.append(p)
        size[0] += nbytes
        if size[0] >= cap:
            buckets.append(Bucket(members))
            del open_by_kind[kind]
    buckets.extend(Bucket(members) for members, _ in open_by_kind.values())
    return buckets
