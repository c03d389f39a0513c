"""GradBucket: what a DDP communication hook receives, one bucket of gradients as a flat
buffer (torch.distributed.GradBucket)."""


class GradBucket:
    """Bucket `index` of a DDP reduction: buffer() holds the gradients of parameters() one
    after another (already in place: the hook reduces it, or sets another buffer)."""

    def __init__(self, index, buffer, parameters, is_last):
        self._index, self._buffer, self._parameters, self._is_last = \
            index, buffer, list(parameters), is_last

    def index(self):
        return self._index

    def buffer(self):
        """The flattened gradients (1-d)."""
        return self._buffer

    def set_buffer(self, buffer):
        self._buffer = buffer

    def gradients(self):
        """Each parameter's gradient as a view of the buffer, shaped as the parameter."""
        views, start = [], 0
        for p in self._parameters:
            views.append(self._buffer[start:start + p.numel()].view(p.shape))
            start += p.numel()
        return views

    def parameters(self):
        return list(self._parameters)

    def is_last(self):
        """Whether this is the last bucket of the backward."""
        return self._is_last

    def __repr__(self):
        return f"<GradBucket {self._index}: {len(self._parameters)} parameters>"
