"""The batched tensor of vmap's batched path (functorch's design, in Python).

A `BatchedTensor` stands for one example of a batch inside a vmapped function: its logical
shape is one example's, while it holds the whole batch as `_value`, an ordinary tensor whose
dim 0 is the batch dim of vmap level `_level`. Each vmap call that runs batched opens a level;
nested vmaps nest wrappers, the innermost vmap's (highest) level outside, so `_value` may itself
be a BatchedTensor of a lower level, never of a higher one.

Ops reach batching rules (rules.py) through the wrapper's methods and through the functions
layer's dispatch point (functions/autocast_policy.BATCHING). Everything else eventually reads
`_data`, which a BatchedTensor does not have: its `_data` answers the example's dtype, device
and shape (argument checks read them) and raises `Unbatchable` for anything else, and vmap
then reruns the whole call index by index (vmap.py). So an op without a rule is never
computed on the batched storage as if it were one example.

Autograd needs nothing of its own: rules compute with ordinary tensor ops on the `_value`s, so
the tape records the batched computation and the transforms in func.py differentiate the
physical tensors (`physical`, `batched`).
"""
from ..tensor import Size, Tensor

_new_object = object.__new__


class Unbatchable(BaseException):
    """A batched tensor reached an op without a batching rule. A BaseException, so that the
    ops' own `except Exception` clauses let it through to vmap, which then maps index by
    index."""


class Level:
    """One running batched vmap: its id (levels nest in increasing order) and batch size."""
    __slots__ = ("id", "size")

    def __init__(self, id, size):
        self.id, self.size = id, size


ACTIVE = []             # the Levels of the batched vmaps running now, outermost first
_counter = [0]


def open_level(size):
    _counter[0] += 1
    level = Level(_counter[0], size)
    ACTIVE.append(level)
    return level


def close_level(level):
    ACTIVE.remove(level)


def _unbatchable(self):
    raise Unbatchable("no batching rule")


class _Metadata:
    """A BatchedTensor's `_data`: one example's dtype, device, shape, rank and size, which
    argument checks read (`x._data.dtype is bool`); any other attribute (the storage, a
    kernel, a view) raises Unbatchable, so no op ever computes on the batch's storage as if it
    were one example."""
    __slots__ = ("_tensor",)

    def __init__(self, tensor):
        self._tensor = tensor

    dtype = property(lambda self: self._tensor.dtype)
    device = property(lambda self: self._tensor.device)
    shape = property(lambda self: tuple(self._tensor.shape))
    ndim = property(lambda self: self._tensor.ndim)
    size = property(lambda self: self._tensor.numel())

    def __getattr__(self, name):
        raise Unbatchable(f"no batching rule (reads {name})")


class BatchedTensor(Tensor):
    """One example's view of a batch: `_value` holds the batch at dim 0 for level `_level`."""

    # No storage of its own: code without a batching rule stops at anything but the example's
    # metadata (see the module doc and _Metadata).
    _data = property(_Metadata)
    _version = property(_unbatchable)

    @property
    def shape(self):
        return Size(self._value.shape[1:])

    def size(self, dim=None):
        shape = self.shape
        return shape if dim is None else shape[logical_dim(dim, len(shape))]

    @property
    def ndim(self):
        return self._value.ndim - 1

    def dim(self):
        return self._value.ndim - 1

    ndimension = dim

    def numel(self):
        count = 1
        for size in self.shape:
            count *= size
        return count

    nelement = numel

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    dtype = property(lambda self: self._value.dtype)
    device = property(lambda self: self._value.device)
    is_cuda = property(lambda self: self._value.is_cuda)
    is_cpu = property(lambda self: self._value.is_cpu)
    is_meta = property(lambda self: self._value.is_meta)
    requires_grad = property(lambda self: self._value.requires_grad)
    grad_fn = property(lambda self: self._value.grad_fn)
    is_leaf = property(lambda self: self._value.is_leaf)

    def __repr__(self):
        return f"BatchedTensor(lvl={self._level}, bdim=0, value=\n{self._value!r}\n)"

    __hash__ = Tensor.__hash__


def wrap(value, level):
    """value (batch at dim 0) as a BatchedTensor of `level` (a Level's id)."""
    t = _new_object(BatchedTensor)
    t._value = value
    t._level = level
    return t


def level_of(x):
    return x._level if type(x) is BatchedTensor else 0


def logical_dim(dim, ndim):
    """dim normalised against a logical rank, with torch's error (a 0-d tensor takes 0, -1)."""
    rank = max(ndim, 1)
    if not -rank <= dim < rank:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-rank}, "
                         f"{rank - 1}], but got {dim})")
    return dim % rank


def batch_size(level):
    for active in ACTIVE:
        if active.id == level:
            return active.size
    raise Unbatchable("a batched tensor escaped its vmap")


def materialize(x, level):
    """x's batch at `level` as a tensor with the batch at dim 0: the value of a tensor batched
    there, else x expanded along a new dim 0 (a view)."""
    if type(x) is BatchedTensor and x._level == level:
        return x._value
    size = batch_size(level)
    return x.unsqueeze(0).expand((size,) + tuple(x.shape))


def physical(x, levels):
    """x as a plain tensor holding every example of the `levels` (Level ids, outermost first):
    dims (B_1, ..., B_k, *x.shape), expanded along the levels x is not batched at."""
    for level in reversed(levels):
        x = materialize(x, level)
    return x


def batched(p, levels):
    """The inverse of `physical`: a plain tensor of dims (B_1, ..., B_k, ...) as the nested
    BatchedTensor one example sees."""
    for level in levels:
        p = wrap(p, level)
    return p


def unwrap_level(x, level):
    """(the value, True) when x is batched at `level`, else (x, False)."""
    if type(x) is BatchedTensor and x._level == level:
        return x._value, True
    return x, False
