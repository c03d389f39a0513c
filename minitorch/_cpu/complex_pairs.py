"""Data movement of complex buffers through the real kernels.

A complex64 / complex128 buffer is a run of (re, im) pairs of float32 / float64, so every
kernel that only moves elements (compact, strided set/add, join, where, gather/scatter,
index_select/add, take/put, the complex <-> complex cast) can run over the pairs: the buffer is
viewed as its floats, shapes gain a last axis of 2 with stride 1, strides and offsets double,
and an index along a dim selects a pair (inner sizes double, per-element indices are repeated
for both halves). The kernels of strided.pyx and binary.pyx test for a complex buffer in C and
call the functions below; the index kernels are replaced by wrappers (`wrap_kernels`) whose
real path is one dtype test.
"""
import math

import numpy as np

PAIR_DTYPE = {np.dtype(np.complex64): np.dtype(np.float32),
              np.dtype(np.complex128): np.dtype(np.float64)}


def is_complex_buffer(buffer):
    return getattr(buffer, "dtype", None) in PAIR_DTYPE


def pairs(buffer):
    """The complex buffer viewed as its interleaved floats (shares memory)."""
    return buffer.view(PAIR_DTYPE[buffer.dtype])


def pair_geometry(shape, strides, offset):
    """A complex view's (shape, strides, offset) as a view of its floats."""
    return (tuple(shape) + (2,), tuple(2 * s for s in strides) + (1,), 2 * offset)


def _both_halves(index, kernels):
    """Each index value twice in a row, [i0, i0, i1, i1, ...] (a broadcast copy by `compact`),
    so a per-element index addresses both floats of a pair."""
    n = len(index)
    out = kernels.get("empty", np.empty)(2 * n, index.dtype)
    if n:
        kernels["compact"](index, out, (n, 2), (1, 0), 0)
    return out


# ---- the kernels of strided.pyx and binary.pyx call these themselves for complex buffers (a C
# test of the dtype there: no wrapper on their real path); `kernel` is the calling kernel.
def compact(kernel, a, out, shape, strides, offset):
    return kernel(pairs(a), pairs(out), *pair_geometry(shape, strides, offset))


def strided_write(kernel, src, out, shape, strides, offset):
    """strided_set / strided_add of complex buffers (a one-element src is a fill)."""
    src_pairs, out_pairs = pairs(src), pairs(out)
    if len(src) == 1 and math.prod(shape) != 1:
        # a fill: the real part into every even float, the imaginary into every odd one
        doubled = tuple(2 * s for s in strides)
        kernel(src_pairs[0:1], out_pairs, tuple(shape), doubled, 2 * offset)
        return kernel(src_pairs[1:2], out_pairs, tuple(shape), doubled, 2 * offset + 1)
    return kernel(src_pairs, out_pairs, *pair_geometry(shape, strides, offset))


def join(kernel, sources, out, shapes, strides, offsets, out_strides, out_offsets):
    return kernel([pairs(s) for s in sources], pairs(out), [tuple(s) + (2,) for s in shapes],
                  [tuple(2 * x for x in s) + (1,) for s in strides], [2 * o for o in offsets],
                  tuple(2 * x for x in out_strides) + (1,), [2 * o for o in out_offsets])


def where(kernel, cond, a, b, out, shape, c_strides, c_offset, a_strides, a_offset, b_strides,
          b_offset):
    return kernel(cond, pairs(a), pairs(b), pairs(out), tuple(shape) + (2,),
                  tuple(c_strides) + (0,), c_offset,
                  tuple(2 * s for s in a_strides) + (1,), 2 * a_offset,
                  tuple(2 * s for s in b_strides) + (1,), 2 * b_offset)


def cast(kernel, a, out):
    if not (is_complex_buffer(a) and is_complex_buffer(out)):
        raise TypeError(f"cast between {a.dtype} and {out.dtype}: NDArray.astype converts "
                        "between complex and real dtypes")
    return kernel(pairs(a), pairs(out), False)


# ---- the index kernels (index.pyx) are wrapped instead ------------------------------------------
def _per_element_index(kernel, kernels):
    """gather / scatter / scatter_add(values, index, out, outer, dim_size, index_dim, inner)."""
    def call(a, index, out, outer, a_dim, index_dim, inner):
        if out.dtype not in PAIR_DTYPE:     # the real path: one dict test
            return kernel(a, index, out, outer, a_dim, index_dim, inner)
        return kernel(pairs(a), _both_halves(index, kernels), pairs(out), outer, a_dim,
                      index_dim, 2 * inner)
    return call


def _per_slice_index(kernel, kernels):
    """index_select / index_add(values, index, out, outer, dim_size, n_index, inner)."""
    def call(a, index, out, outer, a_dim, n_index, inner):
        if out.dtype not in PAIR_DTYPE:     # the real path: one dict test
            return kernel(a, index, out, outer, a_dim, n_index, inner)
        return kernel(pairs(a), index, pairs(out), outer, a_dim, n_index, 2 * inner)
    return call


def _take(kernel, kernels):
    def take(a, offsets, out):
        if out.dtype not in PAIR_DTYPE:     # the real path: one dict test
            return kernel(a, offsets, out)
        # a flat take of pairs is an index_select of rows of 2 floats
        return kernels["index_select"](pairs(a), offsets, pairs(out), 1, len(a), len(offsets), 2)
    return take


def _put(kernel, kernels):
    def put(src, offsets, out, accumulate):
        if out.dtype not in PAIR_DTYPE:     # the real path: one dict test
            return kernel(src, offsets, out, accumulate)
        if accumulate:
            return kernels["index_add"](pairs(src), offsets, pairs(out), 1, len(out),
                                        len(offsets), 2)
        return kernels["scatter"](pairs(src), _both_halves(offsets, kernels), pairs(out), 1,
                                  len(out), len(offsets), 2)
    return put


WRAPPERS = {"gather": _per_element_index, "scatter": _per_element_index,
            "scatter_add": _per_element_index, "index_select": _per_slice_index,
            "index_add": _per_slice_index, "take": _take, "put": _put}


def wrap_kernels(namespace):
    """Replace each data-movement kernel in `namespace` (a module's globals) by its complex-aware
    version. The wrappers look kernels up in `originals` (the real kernels), never in the
    wrapped namespace, so each complex call is translated exactly once."""
    originals = {name: namespace[name] for name in set(WRAPPERS) | {"compact"}}
    for name, make in WRAPPERS.items():
        wrapper = make(originals[name], originals)
        wrapper.__name__ = name
        wrapper.__doc__ = originals[name].__doc__
        wrapper.__wrapped__ = originals[name]
        namespace[name] = wrapper


# ---- the GPU backend: the same translation around its methods -----------------------------------
def _around(kernel, direct, deciding):
    """kernel(*args), or direct(kernel, *args) when args[deciding] is a complex buffer."""
    def call(*args, **kwargs):
        if args[deciding].dtype not in PAIR_DTYPE:
            return kernel(*args, **kwargs)
        return direct(kernel, *args[:_ARITY.get(direct, len(args))])
    return call


def _full(backend, kernel):
    """full() of a complex dtype: a fill through strided_set (the pairs' two halves)."""
    def full(n, value, dtype):
        if np.dtype(dtype) not in PAIR_DTYPE:
            return kernel(n, value, dtype)
        buffer = backend.empty(n, dtype)
        if n:
            backend.strided_set(backend.from_host(np.array([value], dtype)), buffer, (n,), (1,),
                                0)
        return buffer
    return full


_ARITY = {cast: 2}      # cast(a, out): the to_bool flag means nothing between pairs
_DIRECT = {"compact": (compact, 0), "strided_set": (strided_write, 1),
           "strided_add": (strided_write, 1), "join": (join, 1), "where": (where, 3),
           "cast": (cast, 1)}


def wrap_backend(backend):
    """Give a backend object (the GPU's) complex buffers on its movement methods, as the CPU
    kernels have them, and full() of complex values."""
    originals = {name: getattr(backend, name) for name in
                 set(WRAPPERS) | set(_DIRECT) | {"compact"}}
    originals["empty"] = backend.empty
    for name, (direct, deciding) in _DIRECT.items():
        setattr(backend, name, _around(originals[name], direct, deciding))
    for name, make in WRAPPERS.items():
        setattr(backend, name, make(originals[name], originals))
    backend.full = _full(backend, backend.full)
