"""mt.datasets.MNIST: torchvision's MNIST (60 000 train / 10 000 test handwritten digits).

`.data` holds the pixels as uint8 N×28×28 and `.targets` the labels as int64, as in
torchvision. One deviation, because minitorch has no PIL: without a transform, an image is a
1×28×28 float32 tensor in [0, 1] (what `transforms.ToTensor()` would give); a transform
receives that tensor, not a PIL image.

Files are looked up in `root` and `root/MNIST/raw` (IDX, raw or .gz, preferred; else
mnist.pkl.gz); root defaults to $MINITORCH_DATA, then ~/.cache/minitorch. Missing files are
downloaded into `root/MNIST/raw` when download=True.
"""
import os

import numpy as np

from .. import dtypes
from ..tensor import tensor, wrap
from ..utils.data._collate import default_collate
from ..utils.data.dataset import Dataset, batch_index, keeps_batched_path, split_rows, take_rows
from . import _download, _readers

__all__ = ["MNIST", "read_pickle_splits"]

_SPLIT_FILES = {
    True: ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    False: ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}
# Parsed, verified arrays by (path, size, mtime): a second MNIST(...) doesn't re-read files.
_cache = {}


def default_root():
    """$MINITORCH_DATA, else ~/.cache/minitorch."""
    home_cache = os.path.join(os.path.expanduser("~"), ".cache", "minitorch")
    return os.environ.get("MINITORCH_DATA") or home_cache


class MNIST(Dataset):
    """MNIST(root=None, train=True, transform=None, target_transform=None, download=True)."""
    mirrors = _download.MIRRORS
    resources = [(name, _readers.SHA256[name]) for name in _download.IDX_FILES]
    classes = ["0 - zero", "1 - one", "2 - two", "3 - three", "4 - four", "5 - five", "6 - six",
               "7 - seven", "8 - eight", "9 - nine"]

    def __init__(self, root=None, train=True, transform=None, target_transform=None,
                 download=True):
        self.root = os.path.expanduser(os.fspath(root)) if root is not None else default_root()
        self.train = train
        self.transform = transform
        self.target_transform = target_transform
        images, labels = self._load(download)
        self.data = tensor(images, dtype=dtypes.uint8)     # the readers return exact bytes
        self.targets = tensor(labels, dtype=dtypes.int64)

    @property
    def raw_folder(self):
        return os.path.join(self.root, self.__class__.__name__, "raw")

    @property
    def class_to_idx(self):
        return {name: i for i, name in enumerate(self.classes)}

    def __len__(self):
        return len(self.data)

    def __getitem__(self, index):
        """(image, target): a 1×28×28 float32 tensor in [0, 1] (or the transform of it), and
        the label as a Python int (or its target_transform)."""
        img = (self.data[index].float() / 255).unsqueeze(0)
        return self._transformed(img, int(self.targets[index]))

    def __getitems__(self, indices):
        """The samples at `indices`, gathered with one index kernel per tensor."""
        batch = self._gather(indices)
        if batch is None:
            return [self[i] for i in indices]
        images, targets = batch
        return [self._transformed(img, target)
                for img, target in zip(split_rows(images), targets.tolist())]

    def _getitems_collated(self, indices):
        """default_collate(self.__getitems__(indices)) without building each sample; only
        without transforms, whose results can only be had per sample."""
        if self.transform is not None or self.target_transform is not None:
            return default_collate(self.__getitems__(indices))
        batch = self._gather(indices)
        if batch is None:
            return default_collate(self.__getitems__(indices))
        return list(batch)

    def _gather(self, indices):
        """(images B×1×28×28 float32, targets B int64) at `indices`, or None when the batch
        must take the per-sample path."""
        if len(indices) == 0 or not keeps_batched_path(self, MNIST):
            return None
        index = batch_index(indices, self.data.device)
        if index is None:
            return None
        return take_rows(self._float_images(), index), take_rows(self.targets, index)

    def _float_images(self):
        """All images as N×1×28×28 float32 in [0, 1], computed once (a batch is then one
        float32 gather instead of gather + cast + divide) and recomputed whenever `.data` is
        replaced or modified in place. Batches are copies, so users never see this buffer."""
        data = self.data
        cached = self.__dict__.get("_float_cache")
        if cached is None or cached[0] is not data._data or cached[1] != data._version[0]:
            images = (wrap(data._data).float() / 255).unsqueeze(1)
            cached = self._float_cache = (data._data, data._version[0], images)
        return cached[2]

    def _transformed(self, img, target):
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target

    # ---- files --------------------------------------------------------------------------------
    def _load(self, download):
        arrays = _find_and_read(self.root, self.train)
        if arrays is None and download:
            _download.download_mnist(self.raw_folder)
            arrays = _find_and_read(self.root, self.train)
        if arrays is None:
            raise RuntimeError("Dataset not found. You can use download=True to download it")
        return arrays

    # ---- printing -----------------------------------------------------------------------------
    def extra_repr(self):
        return f"Split: {'Train' if self.train is True else 'Test'}"

    def __repr__(self):
        body = [f"Number of datapoints: {self.__len__()}", f"Root location: {self.root}"]
        body += self.extra_repr().splitlines()
        if self.transform is not None or self.target_transform is not None:
            body.append(_standard_transform_repr(self.transform, self.target_transform))
        return "\n".join([f"Dataset {self.__class__.__name__}"] + ["    " + line for line in body])


def _standard_transform_repr(transform, target_transform):
    """torchvision's StandardTransform repr (its continuation lines are not indented)."""
    lines = ["StandardTransform"]
    for head, fn in (("Transform: ", transform), ("Target transform: ", target_transform)):
        if fn is not None:
            text = repr(fn).splitlines()
            lines += [head + text[0]] + [" " * len(head) + line for line in text[1:]]
    return "\n".join(lines)


def _search_dirs(root):
    return [root, os.path.join(root, "MNIST", "raw")]


def _locate(root, name):
    """(path, pinned name) of IDX file `name`, raw or .gz, in the search dirs; else None."""
    for directory in _search_dirs(root):
        for candidate in (name, name + ".gz"):
            path = os.path.join(directory, candidate)
            if os.path.isfile(path):
                return path, candidate
    return None


def _find_and_read(root, train):
    """(images uint8 N×28×28, labels N) for the split, from IDX files when both are
    present, else from mnist.pkl.gz; None when neither is there."""
    found = [_locate(root, name) for name in _SPLIT_FILES[train]]
    if all(found):
        images, labels = (_cached(path, lambda p=path, n=name: _readers.read_idx(p, n))
                          for path, name in found)
        return _checked(images, labels)
    splits = read_pickle_splits(root)
    if splits is None:
        return None
    (x_train, y_train), (x_valid, y_valid), test = splits
    if not train:
        return _checked(*test)
    return _checked(np.concatenate([x_train, x_valid]), np.concatenate([y_train, y_valid]))


def read_pickle_splits(root=None):
    """The classic mnist.pkl.gz under `root` (or the default root), verified and read with the
    numpy-only unpickler: ((x_train, y_train), (x_valid, y_valid), (x_test, y_test)), pixels
    uint8 N×28×28, labels int64. None when there is no such file."""
    root = default_root() if root is None else os.path.expanduser(os.fspath(root))
    for directory in _search_dirs(root):
        path = os.path.join(directory, _readers.PICKLE_NAME)
        if os.path.isfile(path):
            return _cached(path, lambda: _readers.load_pickle_splits(path))
    return None


def _cached(path, read):
    stat = os.stat(path)
    key = (os.path.realpath(path), stat.st_size, stat.st_mtime_ns)
    if key not in _cache:
        _cache[key] = read()
    return _cache[key]


def _checked(images, labels):
    if images.shape[1:] != (28, 28) or labels.shape != images.shape[:1]:
        raise RuntimeError(f"MNIST files disagree: images {images.shape}, labels {labels.shape}")
    return images, labels
