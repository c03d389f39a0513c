"""Joining and composing: cat / stack and their spellings (hstack, vstack, column_stack, …),
atleast_nd, broadcast_tensors, meshgrid, cartesian_prod, combinations, tensor_split and
h/v/dsplit, rot90, diff and repeat_interleave: ops built from the views and copies of
movement.py, which keeps the single-tensor view ops."""
import itertools
import numbers
import operator
import warnings

from .. import dtypes
from ..autograd import KernelFunction, _grad_mode
from ..ndarray import NDArray, broadcast_shapes as _broadcast_pair
from ..ndarray import normalize_dim, real_dim, shape_str
from ..tensor import Size, Tensor, arange, tensor as make_tensor, wrap
from .autocast_policy import batching_point
from .movement import (Slice, _axis_key, _check_tensor_list, _common, _view_of, clone, flip,
                       narrow, reshape, view_of)

__all__ = [
    'atleast_1d', 'atleast_2d', 'atleast_3d', 'broadcast_shapes', 'broadcast_tensors',
    'cartesian_prod', 'cat', 'chunk', 'column_stack', 'combinations', 'concat', 'concatenate',
    'diff', 'dsplit', 'dstack', 'hsplit', 'hstack', 'meshgrid', 'repeat_interleave', 'rot90',
    'split', 'stack', 'tensor_split', 'unbind', 'vsplit', 'vstack',
]



def _legacy_empty(nd):
    """torch.cat skips 1-D empty tensors of any other shape (legacy behaviour)."""
    return nd.shape == (0,)


def _join(out, arrays, starts, dim, new_dim):
    """Every array into its slot of `out` along `dim` (array i from index starts[i]) with one
    `join` kernel call. With `new_dim` (stack) the arrays lack dim; else (cat) they have it."""
    strides = out.strides
    step = strides[dim]
    piece_strides = strides[:dim] + strides[dim + 1:] if new_dim else strides
    buffers, shapes, source_strides, offsets = \
        zip(*[(nd.buffer, nd.shape, nd.strides, nd.offset) for nd in arrays])
    out.backend.join(buffers, out.buffer, shapes, source_strides, offsets, piece_strides,
                     [start * step for start in starts])


class Cat(KernelFunction):
    @staticmethod
    def forward(ctx, *args):
        *tensors, dim = args
        arrays = [t._data for t in tensors]
        shapes = [nd.shape for nd in arrays]
        kept = arrays
        if (0,) in shapes:
            kept = [nd for nd in arrays if nd.shape != (0,)] or arrays
        sizes = [nd.shape[dim] for nd in kept]
        starts = list(itertools.accumulate(sizes, initial=0))
        start = starts.pop()                    # the total
        ranges = list(zip(starts, sizes))
        if len(kept) != len(arrays):            # skipped (0,)-shaped tensors get no range
            spans = iter(ranges)
            ranges = [None if shape == (0,) else next(spans) for shape in shapes]
        ref = kept[0]
        out = ref._new(ref.shape[:dim] + (start,) + ref.shape[dim + 1:])
        _join(out, kept, starts, dim, False)
        ctx.dim, ctx.ranges = dim, ranges
        return wrap(out)

    @staticmethod
    def backward(ctx, g):
        from ..tensor import zeros
        grads = []
        for needs, span in zip(ctx.needs_input_grad, ctx.ranges):
            if not needs:
                grads.append(None)
            elif span is None:
                grads.append(zeros(0, dtype=g.dtype, device=g.device))
            else:
                grads.append(Slice.apply(g, ctx.dim, *span))
        return tuple(grads)


# ---- the fast paths: no graph to record, inputs alike (a DataLoader batch) ---------------------
# Each scan of the inputs is a list comprehension (one Python frame, C-speed appends): the paths
# below make as few as they can, and fall back to the checked path (torch's errors, promotion,
# the autograd node) by returning None whenever an input is not the common case.

def _uniform_strides(tensors):
    """The inputs' strides when `tensors` is a non-empty list or tuple of plain Tensors, none
    recording a graph, all of the first one's shape, dtype and device; else None."""
    kind = type(tensors)
    if (kind is not list and kind is not tuple) or not tensors or type(tensors[0]) is not Tensor:
        return None
    first = tensors[0]._data
    shape, dtype, device = first.shape, first.dtype, first.device
    grad = _grad_mode.enabled
    if grad and tensors[0].requires_grad:   # the usual recorded call: no scan to find out
        return None
    strides = [d.strides for t in tensors
               if type(t) is Tensor and not (grad and t.requires_grad) and
               (d := t._data).shape == shape and d.dtype is dtype and d.device is device]
    return strides if len(strides) == len(tensors) else None


def _varied_shapes(tensors):
    """The inputs' shapes when `tensors` is as _uniform_strides asks except that the shapes
    may differ; else None."""
    kind = type(tensors)
    if (kind is not list and kind is not tuple) or not tensors or type(tensors[0]) is not Tensor:
        return None
    first = tensors[0]._data
    dtype, device = first.dtype, first.device
    grad = _grad_mode.enabled
    if grad and tensors[0].requires_grad:
        return None
    shapes = [d.shape for t in tensors
              if type(t) is Tensor and not (grad and t.requires_grad) and
              (d := t._data).dtype is dtype and d.device is device]
    return shapes if len(shapes) == len(tensors) else None


_EVEN_STARTS = {}


def _even_starts(n, stride):
    """[0, stride, 2·stride, …] of length n, kept: a batch loop asks for the same list each
    step. A list, not a range: the kernel indexes a list without making int objects; it only
    reads it."""
    starts = _EVEN_STARTS.get((n, stride))
    if starts is None:
        if len(_EVEN_STARTS) > 256:
            _EVEN_STARTS.clear()
        starts = _EVEN_STARTS[n, stride] = [i * stride for i in range(n)]
    return starts


def _join_fast(tensors, out, shapes, strides, dim, new_dim, sizes):
    """Every input into its slot of `out` along dim with one kernel call; slots start every
    `sizes` elements along dim (an int: all pieces alike) or at the running sum of `sizes`."""
    out_strides = out.strides
    step = out_strides[dim]
    n = len(tensors)
    if type(sizes) is int:
        starts = _even_starts(n, sizes * step)
    else:
        starts = [start * step for start in itertools.accumulate(sizes, initial=0)]
        starts.pop()
    out.backend.join([t._data.buffer for t in tensors], out.buffer, shapes, strides,
                     [t._data.offset for t in tensors],
                     out_strides[:dim] + out_strides[dim + 1:] if new_dim else out_strides,
                     starts)
    return wrap(out)


def _cat_fast(tensors, dim):
    """cat on the fast path: the inputs agree outside dim, none is 0-d or of the legacy (0,)
    shape (unless all are). None when the checked path must handle it."""
    strides = _uniform_strides(tensors)
    if strides is not None:
        first = tensors[0]._data
        ref = first.shape
        ndim = len(ref)
        if type(dim) is not int or not -ndim <= dim < ndim:
            return None
        if dim < 0:
            dim += ndim
        sizes = ref[dim]
        out = first._new(ref[:dim] + (sizes * len(tensors),) + ref[dim + 1:])
        return _join_fast(tensors, out, [ref] * len(tensors), strides, dim, False, sizes)
    shapes = _varied_shapes(tensors)
    if shapes is None or () in shapes or (0,) in shapes:
        return None
    ref = shapes[0]
    ndim = len(ref)
    if type(dim) is not int or not -ndim <= dim < ndim:
        return None
    if dim < 0:
        dim += ndim
    outside = ref[:dim] + ref[dim + 1:]
    if [s[:dim] + s[dim + 1:] for s in shapes].count(outside) != len(shapes):
        return None
    sizes = [s[dim] for s in shapes]
    out = tensors[0]._data._new(ref[:dim] + (sum(sizes),) + ref[dim + 1:])
    return _join_fast(tensors, out, shapes, [t._data.strides for t in tensors], dim, False,
                      sizes)


def _stack_fast(tensors, dim):
    """stack on the fast path; None when the checked path must handle it."""
    strides = _uniform_strides(tensors)
    if strides is None:
        return None
    first = tensors[0]._data
    shape = first.shape
    ndim = len(shape) + 1
    if type(dim) is not int or not -ndim <= dim < ndim:
        return None
    if dim < 0:
        dim += ndim
    n = len(tensors)
    out = first._new(shape[:dim] + (n,) + shape[dim:])
    return _join_fast(tensors, out, [shape] * n, strides, dim, True, 1)


@batching_point
def cat(tensors, dim=0):
    """Join tensors along an existing dim, promoting dtypes; (0,)-shaped tensors are skipped."""
    fast = _cat_fast(tensors, dim)
    if fast is not None:
        return fast
    _check_tensor_list(tensors, "cat")
    if not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    shapes = [t._data.shape for t in tensors]
    if () in shapes:
        raise RuntimeError(f"zero-dimensional tensor (at position {shapes.index(())}) cannot be "
                           "concatenated")
    kept = [(i, shape) for i, shape in enumerate(shapes) if shape != (0,)] \
        if (0,) in shapes else None
    kept = kept or list(enumerate(shapes))
    ref = kept[0][1]
    ndim = len(ref)
    dim = normalize_dim(dim, ndim)
    outside = ref[:dim] + ref[dim + 1:]     # the sizes every kept tensor must share
    # (equal sizes outside dim imply an equal number of dims: no shape here is 0-d)
    if [shape[:dim] + shape[dim + 1:] for _, shape in kept].count(outside) != len(kept):
        _cat_mismatch(kept, ref, dim)
    return Cat.apply(*_alike(tensors), dim)


def _cat_mismatch(kept, ref, dim):
    """torch's error for the first kept tensor that doesn't agree with the first outside dim."""
    ndim = len(ref)
    for i, shape in kept[1:]:
        if len(shape) != ndim:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {ndim} and "
                               f"{len(shape)}")
        if shape[:dim] + shape[dim + 1:] != ref[:dim] + ref[dim + 1:]:
            d = next(d for d in range(ndim) if d != dim and shape[d] != ref[d])
            raise RuntimeError(f"Sizes of tensors must match except in dimension {dim}. "
                               f"Expected size {ref[d]} but got size {shape[d]} for "
                               f"tensor number {i} in the list.")


def concat(tensors, dim=0):
    """torch.concat: an alias of cat."""
    return cat(tensors, dim)


def concatenate(tensors, axis=0):
    """torch.concatenate: an alias of cat, with numpy's `axis` for dim."""
    return cat(tensors, axis)


class Stack(KernelFunction):
    @staticmethod
    def forward(ctx, *args):
        *tensors, dim = args
        ref = tensors[0]._data
        out = ref._new(ref.shape[:dim] + (len(tensors),) + ref.shape[dim:])
        _join(out, [t._data for t in tensors], range(len(tensors)), dim, True)
        ctx.dim = dim
        return wrap(out)

    @staticmethod
    def backward(ctx, g):
        pieces = Unbind.apply(g, ctx.dim)
        return tuple(p if needs else None for p, needs in zip(pieces, ctx.needs_input_grad))


@batching_point
def stack(tensors, dim=0):
    """Join equally-shaped tensors along a new dim, promoting dtypes."""
    fast = _stack_fast(tensors, dim)
    if fast is not None:
        return fast
    _check_tensor_list(tensors, "stack")
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    shape = tensors[0]._data.shape
    if [t._data.shape for t in tensors].count(shape) != len(tensors):
        i = next(i for i, t in enumerate(tensors) if t._data.shape != shape)
        raise RuntimeError(f"stack expects each tensor to be equal size, but got "
                           f"{shape_str(shape)} at entry 0 and {shape_str(tensors[i].shape)} at "
                           f"entry {i}")
    return Stack.apply(*_alike(tensors), normalize_dim(dim, len(shape) + 1))


def _alike(tensors):
    """The tensors on one device in one dtype: as they are when they already agree (the
    common case, without a cast call per tensor), else through _common's promotion."""
    first = tensors[0]._data
    dtype, device = first.dtype, first.device
    for t in tensors:
        nd = t._data
        if nd.dtype is not dtype or nd.device is not device:
            return _common(list(tensors))
    return tensors


def _atleast(args, ndim, place):
    """atleast_Nd: each tensor viewed with size-1 dims added (`place(shape)` gives the shape);
    one tensor in gives one back, several (or a sequence) give a tuple."""
    if len(args) == 1 and isinstance(args[0], Tensor):
        t = args[0]
        return t if t.ndim >= ndim else reshape(t, place(tuple(t.shape)))
    items = args[0] if len(args) == 1 and isinstance(args[0], (list, tuple)) else args
    return tuple(_atleast((t,), ndim, place) for t in items)


def atleast_1d(*tensors):
    """torch.atleast_1d: each tensor viewed as at least 1-D (a 0-d tensor becomes shape (1,)); one
    tensor in gives one back, several or a sequence give a tuple."""
    return _atleast(tensors, 1, lambda shape: (1,))


def atleast_2d(*tensors):
    """torch.atleast_2d: each tensor viewed as at least 2-D, size-1 dims added in front; one tensor
    in gives one back, several or a sequence give a tuple."""
    return _atleast(tensors, 2, lambda shape: (1,) + (shape or (1,)))


def atleast_3d(*tensors):
    """torch.atleast_3d: each tensor viewed as at least 3-D (a 1-D (n,) becomes (1, n, 1), a 2-D
    (m, n) becomes (m, n, 1)); one tensor in gives one back, several or a sequence give a tuple."""
    def place(shape):
        return {0: (1, 1, 1), 1: (1,) + shape + (1,), 2: shape + (1,)}[len(shape)]
    return _atleast(tensors, 3, place)


def _stack_family(tensors, name):
    _check_tensor_list(tensors, name)
    if not tensors:
        raise RuntimeError(f"{name} expects a non-empty TensorList")
    return list(tensors)


def hstack(tensors):
    """torch.hstack: cat along dim 1 (dim 0 for 1-D tensors), after atleast_1d."""
    tensors = [atleast_1d(t) for t in _stack_family(tensors, "hstack")]
    return cat(tensors, 0 if tensors[0].ndim == 1 else 1)


def vstack(tensors):
    """torch.vstack: cat along dim 0 after atleast_2d (1-D tensors become rows)."""
    return cat([atleast_2d(t) for t in _stack_family(tensors, "vstack")], 0)


def dstack(tensors):
    """torch.dstack: cat along dim 2 after atleast_3d."""
    return cat([atleast_3d(t) for t in _stack_family(tensors, "dstack")], 2)


def column_stack(tensors):
    """torch.column_stack: 0-d and 1-D tensors become columns (n, 1), then cat along dim 1."""
    tensors = _stack_family(tensors, "column_stack")
    return cat([reshape(t, t.numel(), 1) if t.ndim <= 1 else t for t in tensors], 1)


def broadcast_shapes(*shapes):
    """The shape every argument broadcasts to (ints count as 1-D shapes)."""
    result = ()
    for shape in shapes:
        shape = (operator.index(shape),) if isinstance(shape, numbers.Integral) else tuple(shape)
        result = _broadcast_pair(result, shape)
    return Size(result)


def broadcast_tensors(*tensors):
    """Views of the tensors expanded to their common shape (a tensor already of that shape is
    returned itself, as torch does)."""
    shape = broadcast_shapes(*(t.shape for t in tensors))
    return tuple(t if t.shape == shape else t.expand(shape) for t in tensors)


def meshgrid(*tensors, indexing=None):
    """Coordinate grids: with 'ij' output k varies along dim k; 'xy' swaps the roles of the
    first two dims. Each output is an expanded view of its 1-D (or 0-d) input."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the "
                      "indexing argument.", UserWarning)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise ValueError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but "
                         f"received: {indexing}")
    for t in tensors:
        if t.ndim > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but "
                               f"got: {t.ndim}D")
    flat = [t.reshape(-1) for t in tensors]
    swap = indexing == "xy" and len(flat) >= 2
    if swap:
        flat[0], flat[1] = flat[1], flat[0]
    shape = tuple(t.shape[0] for t in flat)
    grids = [t.reshape([-1 if d == k else 1 for d in range(len(flat))]).expand(shape)
             for k, t in enumerate(flat)]
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def cartesian_prod(*tensors):
    """Every combination of one element from each 1-D tensor, as rows (one tensor: itself)."""
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([g.reshape(-1) for g in grids], 1)


def combinations(input, r=2, with_replacement=False):
    """The r-element combinations of a 1-D tensor's elements as rows, in lexicographic order of
    positions (itertools.combinations, or combinations_with_replacement)."""
    if input.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return input.new_zeros((0,))
    positions = arange(input.shape[0], device=input.device)
    grid = cartesian_prod(*[positions] * r).reshape(-1, r)
    if r > 1:
        earlier, later = grid[:, :-1], grid[:, 1:]
        ordered = (earlier <= later) if with_replacement else (earlier < later)
        grid = grid[ordered.all(1)]
    return input[grid.reshape(-1)].reshape(-1, r)


def tensor_split(input, indices_or_sections, dim=0):
    """Views: `sections` nearly equal pieces (the first size % sections one longer), or pieces
    cut at the listed indices."""
    if input.ndim == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a "
                           "tensor with 0 dims")
    d = normalize_dim(dim, input.ndim)
    size = input._data.shape[d]
    if isinstance(indices_or_sections, Tensor):
        indices_or_sections = indices_or_sections.tolist()
    if isinstance(indices_or_sections, numbers.Integral):
        sections = operator.index(indices_or_sections)
        if sections <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {sections}")
        bounds = [k * (size // sections) + min(k, size % sections) for k in range(sections + 1)]
    else:
        bounds = [0] + [min(max(operator.index(i) if i >= 0 else size + i, 0), size)
                        for i in indices_or_sections] + [size]
    return tuple(narrow(input, d, start, max(end, start) - start)
                 for start, end in zip(bounds, bounds[1:]))


def _split_along(input, indices_or_sections, dim, name, min_dims):
    if input.ndim < min_dims:
        raise RuntimeError(f"torch.{name} requires a tensor with at least {min_dims} dimension"
                           f"{'s' if min_dims > 1 else ''}, but got a tensor with {input.ndim} "
                           f"dimensions!")
    if isinstance(indices_or_sections, numbers.Integral) and \
            input.shape[dim] % indices_or_sections:
        raise RuntimeError(f"torch.{name} attempted to split along dimension {dim}, but the "
                           f"size of the dimension {input.shape[dim]} is not divisible by the "
                           f"split_size {indices_or_sections}!")
    return tensor_split(input, indices_or_sections, dim)


def _varargs_indices(first, rest):
    """x.hsplit(1, 2) is x.hsplit((1, 2)), as torch's method accepts."""
    return (first,) + rest if rest else first


def hsplit(input, indices_or_sections, *indices):
    """torch.hsplit: tensor_split along dim 1 (dim 0 for a 1-D tensor); an int must divide that
    dim's size. Views of input."""
    indices_or_sections = _varargs_indices(indices_or_sections, indices)
    return _split_along(input, indices_or_sections, 1 if input.ndim > 1 else 0, "hsplit", 1)


def vsplit(input, indices_or_sections, *indices):
    """torch.vsplit: tensor_split along dim 0 of a tensor with at least 2 dims; an int must divide
    that dim's size. Views of input."""
    indices_or_sections = _varargs_indices(indices_or_sections, indices)
    return _split_along(input, indices_or_sections, 0, "vsplit", 2)


def dsplit(input, indices_or_sections, *indices):
    """torch.dsplit: tensor_split along dim 2 of a tensor with at least 3 dims; an int must divide
    that dim's size. Views of input."""
    indices_or_sections = _varargs_indices(indices_or_sections, indices)
    return _split_along(input, indices_or_sections, 2, "dsplit", 3)


def rot90(input, k=1, dims=(0, 1)):
    """Rotation by 90° k times in the plane of dims, from the first towards the second."""
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.ndim}")
    d0, d1 = (normalize_dim(d, input.ndim) for d in dims)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and "
                           f"dim1 = {d1}")
    k = operator.index(k) % 4
    if k == 1:
        return flip(input, d1).transpose(d0, d1)
    if k == 2:
        return flip(input, (d0, d1))
    if k == 3:
        return flip(input, d0).transpose(d0, d1)
    return clone(input)


def diff(input, n=1, dim=-1, prepend=None, append=None):
    """The n-th forward difference along dim (bool: exclusive or), after prepending/appending."""
    if input.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    d = normalize_dim(dim, input.ndim)
    pieces = [p for p in (prepend, input, append) if p is not None]
    if len(pieces) > 1:
        input = cat([p if p.ndim else p.expand(input.shape[:d] + (1,) + input.shape[d + 1:])
                     for p in pieces], d)
    for _ in range(operator.index(n)):
        length = input.shape[d] - 1
        if length <= 0:
            return narrow(input, d, 0, 0)
        later, earlier = narrow(input, d, 1, length), narrow(input, d, 0, length)
        input = later != earlier if input.dtype is dtypes.bool_ else later - earlier
    return input


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """torch.repeat_interleave: each element (or slice along dim) repeated `repeats` times in
    place; with a tensor of repeats, element i repeats[i] times. The single-argument form gives
    the index itself. output_size, when given, must be the result's length (torch's errors)."""
    if repeats is None:
        repeats, input = input, None
    counts = repeats.tolist() if isinstance(repeats, Tensor) else repeats
    if input is None:
        return repeat_interleave(arange(len(counts), device=repeats.device), repeats, 0,
                                 output_size=output_size)
    if dim is None:
        input, dim = input.reshape(-1), 0
    d = normalize_dim(dim, input.ndim)
    size = input.shape[d]
    if isinstance(counts, numbers.Integral):
        counts = [operator.index(counts)] * size
    elif isinstance(counts, list) and len(counts) == 1 and size != 1:
        counts = counts * size
    if len(counts) != size:
        raise RuntimeError(f"repeats must have the same size as input along dim, but got "
                           f"repeats.size(0) = {len(counts)} and input.size({d}) = {size}")
    if any(c < 0 for c in counts):
        raise RuntimeError("repeats can not be negative")
    if output_size is not None and output_size != sum(counts):
        if isinstance(repeats, numbers.Integral):
            raise RuntimeError(f"repeat_interleave: Invalid output_size, expected "
                               f"{sum(counts)} but got {output_size}")
        raise RuntimeError("allocated size does not match required size")
    # the gather index (which source row each output row copies) is bookkeeping on the host;
    # the data moves in the index_select kernel
    index = [i for i, c in enumerate(counts) for _ in range(c)]
    return input.index_select(d, make_tensor(index, dtype=dtypes.int64, device=input.device))


class Split(KernelFunction):
    """Consecutive pieces of one dim (views); backward concatenates the pieces' gradients."""

    @staticmethod
    def forward(ctx, a, dim, sizes):
        ctx.dim = dim
        nd, start, pieces = a._data, 0, []
        for size in sizes:
            pieces.append(_view_of(a, nd[_axis_key(dim, slice(start, start + size))]))
            start += size
        return tuple(pieces)

    @staticmethod
    def backward(ctx, *grads):
        return cat(grads, ctx.dim), None, None


class SplitWithSizes(Split):
    pass


class Unbind(KernelFunction):
    @staticmethod
    def forward(ctx, a, dim):
        ctx.dim = dim
        nd = a._data
        # each slice's geometry computed here rather than by indexing nd once per slice
        shape = nd.shape[:dim] + nd.shape[dim + 1:]
        strides = nd.strides[:dim] + nd.strides[dim + 1:]
        step, offset = nd.strides[dim], nd.offset
        buffer, dtype, device, backend = nd.buffer, nd.dtype, nd.device, nd.backend
        return tuple([view_of(a, NDArray(buffer, shape, strides, offset + i * step, dtype, device,
                                         backend)) for i in range(nd.shape[dim])])

    @staticmethod
    def backward(ctx, *grads):
        return stack(grads, ctx.dim), None


def split(tensor, split_size_or_sections, dim=0):
    """Pieces of `split_size` along dim (the last may be smaller), or of the listed sizes."""
    if tensor.ndim == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    if isinstance(split_size_or_sections, (numbers.Integral, Tensor)):
        return _split_even(tensor, operator.index(split_size_or_sections), dim)
    return _split_sizes(tensor, [operator.index(s) for s in split_size_or_sections], dim)


def _split_even(tensor, split_size, dim):
    if split_size < 0:
        raise RuntimeError(f"split expects split_size be non-negative, but got "
                           f"split_size={split_size}")
    dim = normalize_dim(dim, tensor.ndim)
    size = tensor._data.shape[dim]
    if split_size == 0 and size:
        raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension "
                           f"size of {size}")
    count = max(-(-size // split_size), 1) if split_size else 1
    sizes = [split_size] * (count - 1) + [size - split_size * (count - 1)]
    return Split.apply(tensor, dim, tuple(sizes))


def _split_sizes(tensor, sizes, dim):
    given, dim = dim, normalize_dim(dim, tensor.ndim)
    size = tensor._data.shape[dim]
    if any(s < 0 for s in sizes):
        raise RuntimeError(f"split_with_sizes expects split_sizes have only non-negative "
                           f"entries, but got split_sizes={shape_str(sizes)}")
    if sum(sizes) != size:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {size} "
                           f"(input tensor's size at dimension {given}), but got "
                           f"split_sizes={shape_str(sizes)}")
    return SplitWithSizes.apply(tensor, dim, tuple(sizes))


def chunk(input, chunks, dim=0):
    """`chunks` pieces of equal size (the last may be smaller; there may be fewer pieces)."""
    if input.ndim == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    size = input._data.shape[normalize_dim(dim, input.ndim)]
    split_size = -(-size // chunks)
    if split_size == 0:
        # An empty dim still yields `chunks` (empty) pieces, as in torch.
        return _split_sizes(input, [0] * chunks, dim)
    return _split_even(input, split_size, dim)


def unbind(input, dim=0):
    """torch.unbind: the slices of input along dim, each without that dim, as a tuple of views."""
    if input.ndim == 0:
        normalize_dim(dim, 0)       # torch's message for a dim out of range first
    return Unbind.apply(input, real_dim(dim, input.ndim))
