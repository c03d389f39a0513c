"""MNIST file readers: IDX (raw or gzip) and the classic mnist.pkl.gz, each checked against a
pinned sha256 before a byte of it is parsed. The pickle is read by an unpickler that can build
numpy arrays and nothing else."""
import gzip
import hashlib
import io
import pickle
import struct

import numpy as np

# sha256 of every file we accept. The .gz IDX and pkl digests are the published ones; the raw
# (decompressed) IDX digests are those of the files the .gz archives expand to.
SHA256 = {
    "train-images-idx3-ubyte.gz": "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609",
    "train-labels-idx1-ubyte.gz": "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c",
    "t10k-images-idx3-ubyte.gz": "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6",
    "t10k-labels-idx1-ubyte.gz": "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6",
    "train-images-idx3-ubyte": "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db",
    "train-labels-idx1-ubyte": "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5",
    "t10k-images-idx3-ubyte": "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7",
    "t10k-labels-idx1-ubyte": "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2",
    "mnist.pkl.gz": "f11bb9e41d6c1b6c124aa38fd605497bdcfe2ee08cf7c2bb5a41ab5d759e1416",
}
PICKLE_NAME = "mnist.pkl.gz"
IDX_MAGIC_UINT8 = 0x08


class ChecksumError(RuntimeError):
    """A file's sha256 is not the pinned one: it is never parsed."""


def sha256_bytes(data):
    return hashlib.sha256(data).hexdigest()


def read_verified(path, name):
    """The bytes of `path`, after checking them against the pinned sha256 of `name`."""
    with open(path, "rb") as f:
        data = f.read()
    digest = sha256_bytes(data)
    if digest != SHA256[name]:
        raise ChecksumError(f"{path}: sha256 {digest} does not match the expected "
                            f"{SHA256[name]}; delete the file so it can be downloaded again")
    return data


def parse_idx(data):
    """An IDX file's uint8 array: big-endian header (0, 0, type 0x08, ndim, dims...)."""
    if len(data) < 4 or data[0:2] != b"\0\0" or data[2] != IDX_MAGIC_UINT8:
        raise ValueError("not an IDX file of unsigned bytes")
    ndim = data[3]
    header = 4 + 4 * ndim
    if len(data) < header:
        raise ValueError("IDX header is truncated")
    dims = struct.unpack(">" + "I" * ndim, data[4:header])
    if len(data) - header != int(np.prod(dims, dtype=np.int64)):
        raise ValueError(f"IDX payload size does not match its dims {dims}")
    return np.frombuffer(data, dtype=np.uint8, offset=header).reshape(dims)


def read_idx(path, name):
    """Verified IDX file `name` (raw or .gz) at `path` → uint8 array."""
    data = read_verified(path, name)
    if name.endswith(".gz"):
        data = gzip.decompress(data)
    return parse_idx(data)


# The function an ndarray pickles itself with, reached through public API: it lives in
# numpy.core before numpy 2 and numpy._core since, and neither path is public.
_RECONSTRUCT = np.empty(0).__reduce__()[0]


class NumpyOnlyUnpickler(pickle.Unpickler):
    """Builds numpy arrays and plain containers; any other global is refused, so a pickle can't
    call anything (the numpy.core name is how Python 2 era pickles spell _reconstruct)."""
    _ALLOWED = {
        ("numpy.core.multiarray", "_reconstruct"): _RECONSTRUCT,
        ("numpy._core.multiarray", "_reconstruct"): _RECONSTRUCT,
        ("numpy", "ndarray"): np.ndarray,
        ("numpy", "dtype"): np.dtype,
    }

    def find_class(self, module, name):
        allowed = self._ALLOWED.get((module, name))
        if allowed is None:
            raise pickle.UnpicklingError(f"global '{module}.{name}' is forbidden: only numpy "
                                         "arrays may be loaded from this file")
        return allowed


def load_pickle_splits(path):
    """Verified mnist.pkl.gz → ((x_train, y_train), (x_valid, y_valid), (x_test, y_test)) with
    pixels as uint8 N×28×28 and labels int64 (50 000 / 10 000 / 10 000 images)."""
    verified = io.BytesIO(read_verified(path, PICKLE_NAME))
    with gzip.GzipFile(fileobj=verified) as stream:  # inflated as the unpickler reads
        splits = NumpyOnlyUnpickler(stream, encoding="latin-1").load()
    if not isinstance(splits, tuple) or len(splits) != 3:
        raise ValueError(f"{path}: expected a (train, valid, test) tuple")
    return tuple((_pixels(x), np.asarray(y, dtype=np.int64)) for x, y in splits)


def _pixels(x):
    # Stored as float32 pixel/256, which is exact: x * 256 is the byte again, no rounding.
    x = np.asarray(x, dtype=np.float32)
    if x.size and (x.min() < 0 or x.max() >= 1):
        raise ValueError("pickled pixels are outside [0, 1)")
    np.multiply(x, 256, out=x)
    return x.astype(np.uint8).reshape(-1, 28, 28)
