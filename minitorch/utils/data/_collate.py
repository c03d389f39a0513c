"""default_collate / default_convert: torch's rules for turning samples into batches.

A batch of tensors is stacked with `mt.stack`; Python numbers become int64 / float64 tensors,
numpy arrays and scalars become tensors, strings pass through, and containers (dicts,
namedtuples, tuples, lists) are collated field by field, exactly as torch.utils.data does.
"""
import collections.abc
import copy
import re

import numpy as np

from ... import dtypes
from ...backend import CPU, get_backend
from ...functions.joining import stack
from ...ndarray import NDArray
from ...tensor import Tensor, as_tensor, tensor, wrap

# numpy dtypes that can't become tensors: strings ('S', 'a', 'U') and objects ('O').
_np_str_obj_array_pattern = re.compile(r"[SaUO]")

default_collate_err_msg_format = (
    "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
    "found {}")


def _collate_tensor(batch):
    return stack(batch, 0)      # a list or tuple of tensors: one stack, one kernel call


def _collate_numpy_array(batch):
    if _np_str_obj_array_pattern.search(batch[0].dtype.str) is not None:
        raise TypeError(default_collate_err_msg_format.format(batch[0].dtype))
    return _collate_tensor([as_tensor(b) for b in batch])


def _collate_numpy_scalar(batch):
    # One array of the scalars keeps their dtype (np.float64 stays float64, as in torch).
    return as_tensor(np.asarray(batch))


def _plain_numbers(batch, kind, dtype):
    """The batch as a 1-D CPU tensor of `dtype` when every item is exactly of type `kind` (one
    numpy call; its fresh array is the CPU buffer itself), else None (tensor()'s rules apply:
    bools, mixed numbers, numpy scalars, and ints beyond int64 with torch's error)."""
    if len([x for x in batch if type(x) is kind]) != len(batch):
        return None
    try:
        values = np.array(batch, dtype=dtype.storage)
    except OverflowError:
        return None
    backend = get_backend(CPU)
    return wrap(NDArray(backend.from_host(values), values.shape, (1,), 0, dtype, CPU, backend))


def _collate_int(batch):
    plain = _plain_numbers(batch, int, dtypes.int64)
    return tensor(list(batch)) if plain is None else plain


def _collate_float(batch):
    plain = _plain_numbers(batch, float, dtypes.float64)
    return tensor(list(batch), dtype=dtypes.float64) if plain is None else plain


def _collate_str(batch):
    return batch


# Exact type first, then the first isinstance match, as torch's collate_fn_map is searched.
_COLLATE_FN_MAP = {
    Tensor: _collate_tensor,
    np.ndarray: _collate_numpy_array,
    (np.bool_, np.number, np.object_): _collate_numpy_scalar,
    float: _collate_float,
    int: _collate_int,
    str: _collate_str,
    bytes: _collate_str,
}


def _collate_fn_for(elem):
    fn = _COLLATE_FN_MAP.get(type(elem))
    if fn is not None:
        return fn
    for kind, fn in _COLLATE_FN_MAP.items():
        if isinstance(elem, kind):
            return fn
    return None


def default_collate(batch):
    """Merge a list of samples into a batch (torch.utils.data.default_collate)."""
    elem = batch[0]
    if type(elem) is tuple:     # (input, label) samples: straight to the per-field collation
        return _collate_sequence(elem, batch)
    fn = _collate_fn_for(elem)
    if fn is not None:
        return fn(batch)
    if isinstance(elem, collections.abc.Mapping):
        return _collate_mapping(elem, batch)
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return type(elem)(*(default_collate(samples) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        return _collate_sequence(elem, batch)
    raise TypeError(default_collate_err_msg_format.format(type(elem)))


def _collate_mapping(elem, batch):
    try:
        if isinstance(elem, collections.abc.MutableMapping):
            # A copy keeps the mapping's type and any extra attributes it carries.
            clone = copy.copy(elem)
            clone.update({key: default_collate([d[key] for d in batch]) for key in elem})
            return clone
        return type(elem)({key: default_collate([d[key] for d in batch]) for key in elem})
    except TypeError:
        return {key: default_collate([d[key] for d in batch]) for key in elem}


def _collate_sequence(elem, batch):
    elem_size = len(elem)
    if list(map(len, batch)).count(elem_size) != len(batch):
        raise RuntimeError("each element in list of batch should be of equal size")
    transposed = list(zip(*batch))
    if isinstance(elem, tuple):
        return [default_collate(samples) for samples in transposed]  # torch returns a list
    try:
        if isinstance(elem, collections.abc.MutableSequence):
            clone = copy.copy(elem)
            for i, samples in enumerate(transposed):
                clone[i] = default_collate(samples)
            return clone
        return type(elem)([default_collate(samples) for samples in transposed])
    except TypeError:
        return [default_collate(samples) for samples in transposed]


def default_convert(data):
    """Convert numpy arrays/scalars inside `data` to tensors, keeping everything else
    (the collate_fn of a DataLoader with batch_size=None)."""
    elem_type = type(data)
    if isinstance(data, Tensor):
        return data
    if elem_type.__module__ == "numpy" and elem_type.__name__ not in ("str_", "string_"):
        if elem_type.__name__ == "ndarray" and \
                _np_str_obj_array_pattern.search(data.dtype.str) is not None:
            return data
        return as_tensor(np.asarray(data))  # np.float64(1.0) stays float64, as in torch
    if isinstance(data, collections.abc.Mapping):
        return _convert_mapping(data)
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return elem_type(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return _convert_sequence(data)
    return data


def _convert_mapping(data):
    try:
        if isinstance(data, collections.abc.MutableMapping):
            clone = copy.copy(data)
            clone.update({key: default_convert(data[key]) for key in data})
            return clone
        return type(data)({key: default_convert(data[key]) for key in data})
    except TypeError:
        return {key: default_convert(data[key]) for key in data}


def _convert_sequence(data):
    try:
        if isinstance(data, collections.abc.MutableSequence):
            clone = copy.copy(data)
            for i, d in enumerate(data):
                clone[i] = default_convert(d)
            return clone
        return type(data)([default_convert(d) for d in data])
    except TypeError:
        return [default_convert(d) for d in data]
