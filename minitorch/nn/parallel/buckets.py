"""Gradient buckets of DistributedDataParallel: parameters grouped (in reverse registration
order, as gradients tend to arrive) into flat buffers that are all-reduced as one message; a
large parameter is a bucket of its own, all-reduced in place in its .grad."""
from ...ndarray import NDArray, contiguous_strides, scalar_array
from ...opcodes import BinaryOp
from ...tensor import wrap, zeros_like

# torch's sizes: a small first bucket so communication starts early, then bucket_cap_mb.
FIRST_BUCKET_BYTES = 1024 * 1024
# From this size a parameter's gradient is all-reduced where it lies: copying it into a flat
# buffer and back costs two passes over its bytes, more than the message it would share saves.
SOLO_BYTES = 256 * 1024


class Bucket:
    """Parameters sharing one flat gradient buffer (a 1-d tensor of their dtype and device).
    Each backward: take() every parameter's gradient (multiplied by `factor` on the way in),
    then all-reduce `tensor`; results() gives the averages to write back into .grad. With
    `as_views` (torch's gradient_as_bucket_view), take() makes each .grad a view of its slot,
    which then holds the average itself: nothing to write back."""

    def __init__(self, params, factor=1.0, as_views=False):
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
        self.slots = [flat[start:start + p.numel()] for start, p in zip(self.offsets, params)]
        self.factor = _scalar(factor, sample)
        self.views = [self.tensor[start:start + p.numel()].view(p.shape)
                      for start, p in zip(self.offsets, params)] if as_views else None
        self.waiting = 0          # parameters whose gradient has not arrived this backward
        self.work = None          # the all-reduce in flight

    def take(self, index, grad):
        """params[index]'s complete gradient joins the bucket, times the factor."""
        _multiply_into(self.slots[index], grad._data, self.factor)
        if self.views is not None and not grad.requires_grad:
            param, view = self.params[index], self.views[index]
            if param.grad is not view:
                param.grad = view

    def take_zeros(self, index):
        """params[index] got no gradient on this rank: it contributes zeros (a .grad that is
        the slot's view keeps its values in a copy of its own: unused on every rank, it must
        stay as it was)."""
        if self.views is not None and self.params[index].grad is self.views[index]:
            self.params[index].grad = self.views[index].clone()
        self.slots[index][...] = 0

    def results(self):
        """(index, flat array of the average) for each parameter whose .grad is not a view of
        its slot, after the all-reduce."""
        if self.views is None:
            return enumerate(self.slots)
        return ((i, slot) for i, (slot, param, view) in
                enumerate(zip(self.slots, self.params, self.views)) if param.grad is not view)

    def release(self):
        """End of the backward (the flat buffer is kept for the next)."""


class SoloBucket:
    """One large parameter, all-reduced in its own .grad (scaled there in place), so its
    gradient is never copied. A stand-in tensor takes its place when it has no usable .grad
    (unused on this rank, or a gradient that is part of a graph), and is written back."""

    def __init__(self, param, factor=1.0):
        self.params = [param]
        self.factor = _scalar(factor, param._data)
        self.tensor = None
        self.stand_in = False
        self.waiting = 0
        self.work = None

    def take(self, index, grad):
        data = grad._data
        if grad.requires_grad or not data.is_compact():
            # create_graph (the graph's tensor is not ours to scale), or a layout the engine
            # cannot reduce in place: a compact stand-in holds the scaled gradient
            self.tensor, self.stand_in = zeros_like(self.params[0]).detach(), True
        else:
            self.tensor, self.stand_in = grad, False
            if self.factor is None:
                return          # world size 1: nothing to scale
        _multiply_into(self.tensor._data.flat(), data, self.factor)

    def take_zeros(self, index):
        self.tensor, self.stand_in = zeros_like(self.params[0]).detach(), True

    def results(self):
        """Nothing to write back when the all-reduce ran in .grad itself."""
        if not self.stand_in:
            return ()
        data = self.tensor._data
        return ((0, data.flat() if data.is_compact() else data.copy().flat()),)

    def release(self):
        """No reference to a .grad past this backward."""
        self.tensor = None


def set_factor(buckets, factor):
    """Every gradient entering these buckets is multiplied by factor from now on (1 once a
    communication hook, which averages itself, takes over)."""
    for bucket in buckets:
        bucket.factor = _scalar(factor, bucket.params[0]._data)


def _scalar(value, like):
    """A 0-d array of `like`'s dtype and device holding value (a kernel's broadcast operand);
    None for 1, which needs no multiplication."""
    return None if value == 1 else scalar_array(value, like.dtype, like.device)


def _multiply_into(out, data, factor):
    """out (a flat compact array of data's size) = data * factor (a 0-d array, or None for a
    plain copy), data read through its strides: the copy into the bucket and torch's division
    by the world size in one pass."""
    if not data.size:
        return
    if factor is None:
        out[...] = data.flat() if data.is_compact() else data.copy().flat()
        return
    if data.dtype.compute is not data.dtype:       # a 16-bit float: the kernel runs widened
        out[...] = data.binary(BinaryOp.MUL, factor).flat()
        return
    data.backend.binary(BinaryOp.MUL, data.buffer, factor.buffer, out, data.shape,
                        data.strides, data.offset, (0,) * len(data.shape), 0)


def assign_buckets(params, cap_bytes, first_cap_bytes=FIRST_BUCKET_BYTES,
                   solo_bytes=SOLO_BYTES, factor=1.0, as_views=False):
    """Buckets in reverse parameter order; a bucket holds one dtype on one device and closes
    once it reaches its byte cap. A parameter of at least solo_bytes (or of the cap, if smaller)
    closes the open bucket of its kind and is a bucket of its own. Every gradient is multiplied
    by factor as it enters its bucket; `as_views` is Bucket's."""
    buckets, open_by_kind = [], {}
    for p in reversed(params):
        kind = (p.dtype, str(p.device))
        nbytes = p.numel() * p.element_size()
        cap = first_cap_bytes if not buckets else cap_bytes
        if nbytes and nbytes >= min(solo_bytes, cap):
            current = open_by_kind.pop(kind, None)
            if current is not None:
                buckets.append(Bucket(current[0], factor, as_views))
            buckets.append(SoloBucket(p, factor))
            continue
        current = open_by_kind.get(kind)
        if current is None:
            current = open_by_kind[kind] = ([], [0])
        members, size = current
        members.append(p)
        size[0] += nbytes
        if size[0] >= cap:
            buckets.append(Bucket(members, factor, as_views))
            del open_by_kind[kind]
    buckets.extend(Bucket(members, factor, as_views) for members, _ in open_by_kind.values())
    return buckets
