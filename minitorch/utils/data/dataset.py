"""Datasets: the map-style and iterable-style bases, torch's generic wrappers and random_split.

Besides torch's `__getitems__(indices)` (a list of samples, fetched once per batch), datasets
here may offer `_getitems_collated(indices)`: the batch exactly as `default_collate` would build
it from those samples, gathered with one index kernel per field. The DataLoader uses it only with
`default_collate`, so a custom `collate_fn` still receives a list of samples.
"""
import bisect
import itertools
import math
import warnings

import numpy as np

from ... import dtypes
from ...ndarray import NDArray
from ...random import default_generator, randperm
from ...tensor import wrap
from ._collate import default_collate

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "Subset", "ConcatDataset",
           "ChainDataset", "StackDataset", "random_split"]


class Dataset:
    """A map-style dataset: `__getitem__(index)` and usually `__len__`."""

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """An iterable-style dataset: `__iter__` yields samples (each DataLoader worker iterates
    its own copy; shard with `get_worker_info()`)."""

    def __iter__(self):
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")

    def __add__(self, other):
        return ChainDataset([self, other])


def keeps_batched_path(obj, base):
    """True when obj's class kept base's __getitem__ and __getitems__: only then does a batched
    fast path written for `base` return what per-sample indexing would."""
    cls = type(obj)
    return cls.__getitem__ is base.__getitem__ and cls.__getitems__ is base.__getitems__


def batch_index(indices, device):
    """A batch's indices as an int64 NDArray on `device`, or None when one is negative (those
    take the per-sample path, which wraps them like `t[i]`)."""
    array = np.asarray(indices, dtype=np.int64)  # Python ints in, at the edge
    if array.ndim != 1 or (array.size and array.min() < 0):
        return None
    return NDArray.from_numpy(array, dtypes.int64, device)


def take_rows(t, index):
    """t[index] along dim 0 for an int64 NDArray index: one index_select kernel call."""
    return wrap(t._data.index_select(0, index))


def split_rows(t):
    """The rows of a batch as views of its buffer (what `t[i]` returns, without the per-call
    cost of the autograd-aware indexing path)."""
    nd = t._data
    shape, strides, step = nd.shape[1:], nd.strides[1:], nd.strides[0]
    return [wrap(nd._view(shape, strides, nd.offset + i * step)) for i in range(nd.shape[0])]


class TensorDataset(Dataset):
    """Samples are the i-th rows of each tensor: `(t0[i], t1[i], ...)`."""

    def __init__(self, *tensors):
        assert all(tensors[0].size(0) == t.size(0) for t in tensors), \
            "Size mismatch between tensors"
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].size(0)

    def __getitems__(self, indices):
        """The samples at `indices`: one gather per tensor, then row views."""
        columns = self._gather(indices)
        if columns is None:
            return [self[i] for i in indices]
        return list(zip(*(split_rows(c) for c in columns)))

    def _getitems_collated(self, indices):
        """default_collate(self.__getitems__(indices)), without building the samples."""
        columns = self._gather(indices)
        if columns is None:
            return default_collate(self.__getitems__(indices))
        return list(columns)

    def _gather(self, indices):
        # Tensors that require grad take the autograd-aware per-sample path.
        if len(indices) == 0 or not keeps_batched_path(self, TensorDataset) or \
                any(t.requires_grad for t in self.tensors):
            return None
        index_by_device = {}
        for t in self.tensors:
            if t.device not in index_by_device:
                index_by_device[t.device] = batch_index(indices, t.device)
            if index_by_device[t.device] is None:
                return None
        return [take_rows(t, index_by_device[t.device]) for t in self.tensors]


class Subset(Dataset):
    """The samples of `dataset` at `indices`, in that order."""

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices):
        # Forward to the wrapped dataset's batched fetch when it has one (as torch does).
        mapped = [self.indices[i] for i in indices]
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.dataset.__getitems__(mapped)
        return [self.dataset[i] for i in mapped]

    def _getitems_collated(self, indices):
        inner = getattr(self.dataset, "_getitems_collated", None)
        if inner is None or not keeps_batched_path(self, Subset):
            return default_collate(self.__getitems__(indices))
        return inner([self.indices[i] for i in indices])

    def __len__(self):
        return len(self.indices)


class ConcatDataset(Dataset):
    """The datasets one after another."""

    @staticmethod
    def cumsum(sequence):
        return list(itertools.accumulate(len(d) for d in sequence))

    def __init__(self, datasets):
        self.datasets = list(datasets)
        assert len(self.datasets) > 0, "datasets should not be an empty iterable"
        for d in self.datasets:
            assert not isinstance(d, IterableDataset), \
                "ConcatDataset does not support IterableDataset"
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        dataset_idx = bisect.bisect_right(self.cumulative_sizes, idx)
        sample_idx = idx if dataset_idx == 0 else idx - self.cumulative_sizes[dataset_idx - 1]
        return self.datasets[dataset_idx][sample_idx]


class StackDataset(Dataset):
    """Several datasets of one length side by side: item i is the tuple (positional datasets)
    or the dict (keyword datasets) of their items i."""

    def __init__(self, *args, **kwargs):
        if args and kwargs:
            raise ValueError("Supported either ``tuple``- (via ``args``) or``dict``- (via "
                             "``kwargs``) like input/output, but both types are given.")
        if not args and not kwargs:
            raise ValueError("At least one dataset should be passed")
        parts = list(args or kwargs.values())
        self._length = len(parts[0])
        if any(self._length != len(dataset) for dataset in parts):
            raise ValueError("Size mismatch between datasets")
        self.datasets = args or kwargs

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: dataset[index] for k, dataset in self.datasets.items()}
        return tuple(dataset[index] for dataset in self.datasets)

    def __len__(self):
        return self._length


class ChainDataset(IterableDataset):
    """Iterable datasets one after another (what `iterable_a + iterable_b` gives)."""

    def __init__(self, datasets):
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            assert isinstance(d, IterableDataset), "ChainDataset only supports IterableDataset"
            yield from d

    def __len__(self):
        total = 0
        for d in self.datasets:
            assert isinstance(d, IterableDataset), "ChainDataset only supports IterableDataset"
            total += len(d)
        return total


def random_split(dataset, lengths, generator=default_generator):
    """Split `dataset` into non-overlapping random Subsets of the given lengths (counts, or
    fractions summing to 1 whose remainder is dealt round-robin, as torch does)."""
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        lengths = _lengths_from_fractions(len(dataset), lengths)
    if sum(lengths) != len(dataset):
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    indices = randperm(sum(lengths), generator=generator).tolist()
    ends = itertools.accumulate(lengths)
    return [Subset(dataset, indices[end - length:end]) for end, length in zip(ends, lengths)]


def _lengths_from_fractions(n, fractions):
    lengths = []
    for i, frac in enumerate(fractions):
        if frac < 0 or frac > 1:
            raise ValueError(f"Fraction at index {i} is not between 0 and 1")
        lengths.append(int(math.floor(n * frac)))
    for i in range(n - sum(lengths)):
        lengths[i % len(lengths)] += 1
    for i, length in enumerate(lengths):
        if length == 0:
            warnings.warn(f"Length of split at index {i} is 0. This might result in an empty "
                          "dataset.")
    return lengths
