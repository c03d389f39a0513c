"""torch.save's zip checkpoints, read: `<name>/data.pkl` is a pickle whose tensors point (by
persistent ids) at raw storages `<name>/data/<key>`. The pickle goes through a restricted
Unpickler: every global it names is looked up in a table of what checkpoints of tensors are
made of (torch's tensor and parameter rebuild functions, storage types, dtypes, devices, Size,
OrderedDict, and the names the allow-list resolves: see _safe_globals), never imported, so a
file cannot run code (pickle's "restricting globals"); a name outside the table raises torch's
weights-only UnpicklingError. Storages are read (or memory-mapped: torch stores them
uncompressed) once each, so tensors that share one stay views of one buffer."""
import collections
import pickle
import zipfile

import numpy as np

from .. import dtypes
from ..backend import device as Device
from ..tensor import Size
from ._format import WeightsOnlyError, fail

ZIP_MAGIC = b"PK\x03\x04"

# torch's storage type names (torch.FloatStorage, …) and their element dtypes
_STORAGE_DTYPES = {
    "FloatStorage": dtypes.float32, "DoubleStorage": dtypes.float64,
    "HalfStorage": dtypes.float16, "BFloat16Storage": dtypes.bfloat16,
    "LongStorage": dtypes.int64, "IntStorage": dtypes.int32, "ShortStorage": dtypes.int16,
    "CharStorage": dtypes.int8, "ByteStorage": dtypes.uint8, "BoolStorage": dtypes.bool_,
    "ComplexFloatStorage": dtypes.complex64, "ComplexDoubleStorage": dtypes.complex128}
_TORCH_DTYPES = {d.name: d for d in dtypes.ALL + dtypes.COMPLEX}
_TORCH_DTYPES.update(float=dtypes.float32, double=dtypes.float64, half=dtypes.float16,
                     long=dtypes.int64, int=dtypes.int32, short=dtypes.int16,
                     bool=dtypes.bool_, cfloat=dtypes.complex64, cdouble=dtypes.complex128)


class _StorageType:
    """What `torch.FloatStorage` (or another storage class) stands for in a persistent id."""

    def __init__(self, dtype):
        self.dtype = dtype


def load_torch_zip(reader, place, mmap, policy, storage_class):
    """The object torch.save wrote into the zip archive `reader` holds; each storage becomes
    one storage_class(host array, dtype, saved location, place) (_load._Storage)."""
    reader.file.seek(reader.start)
    try:
        archive = zipfile.ZipFile(reader.file)
    except zipfile.BadZipFile as error:
        fail(f"not a readable zip archive: {error}")
    with archive:
        pickles = [n for n in archive.namelist() if n.endswith("/data.pkl") or n == "data.pkl"]
        if len(pickles) != 1:
            fail("a torch checkpoint holds one data.pkl; this archive has "
                 f"{len(pickles)}")
        prefix = pickles[0][:-len("data.pkl")]
        order = prefix + "byteorder"
        if order in archive.namelist() and archive.read(order).strip() != b"little":
            fail("a big-endian torch checkpoint: minitorch reads little-endian storages")
        unpickler = _CheckpointUnpickler(archive, prefix, reader, place, mmap, policy,
                                         storage_class)
        with archive.open(pickles[0]) as data:
            unpickler.set_stream(data)
            return unpickler.load()


class _CheckpointUnpickler(pickle.Unpickler):
    """pickle's Unpickler with find_class answering from a table (nothing is imported) and
    persistent_load reading storages from the archive."""

    def __init__(self, archive, prefix, reader, place, mmap, policy, storage_class):
        self.archive, self.prefix, self.reader = archive, prefix, reader
        self.place, self.mmap, self.policy = place, mmap, policy
        self.storage_class = storage_class
        self.storages = {}

    def set_stream(self, stream):
        super().__init__(stream)

    def find_class(self, module, name):
        if module == "torch._utils":
            rebuild = _REBUILDERS.get(name)
            if rebuild is not None:
                return rebuild
        if module == "torch" and name in _STORAGE_DTYPES:
            return _StorageType(_STORAGE_DTYPES[name])
        if module == "torch" and name in _TORCH_DTYPES:
            return _TORCH_DTYPES[name]
        known = _NAMES.get((module, name))
        if known is not None:
            return known
        try:
            return self.policy.resolve(module, name)
        except WeightsOnlyError:
            raise
        except Exception as error:
            raise WeightsOnlyError(f"Unsupported global: GLOBAL {module}.{name}") from error

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            fail(f"unexpected persistent id {pid!r}")
        _, kind, key, location, numel = pid
        if not isinstance(kind, _StorageType) or not isinstance(key, str) or \
                not isinstance(numel, int) or numel < 0:
            fail(f"invalid storage reference {pid!r}")
        storage = self.storages.get(key)
        if storage is None:
            host = self._storage_bytes(key, kind.dtype, numel)
            storage = self.storages[key] = self.storage_class(host, kind.dtype, str(location),
                                                              self.place)
        return storage

    def _storage_bytes(self, key, dtype, numel):
        """The storage's numel elements, read (or mapped, for an uncompressed member of a file)
        from <prefix>data/<key>."""
        name = f"{self.prefix}data/{key}"
        try:
            info = self.archive.getinfo(name)
        except KeyError:
            fail(f"the archive lacks the storage {name!r}")
        little = np.dtype(dtype.storage).newbyteorder("<")
        if info.file_size != numel * little.itemsize:
            fail(f"storage {name!r} holds {info.file_size} bytes, {numel} elements of "
                 f"{dtype} need {numel * little.itemsize}")
        offset = _data_offset(self.reader, info)
        if self.mmap and numel and info.compress_type == zipfile.ZIP_STORED and \
                self.reader.path is not None and offset is not None:
            array = np.memmap(self.reader.path, dtype=little, mode="c", shape=(numel,),
                              offset=self.reader.start + offset).view(np.ndarray)
        else:
            array = np.frombuffer(self.archive.read(name), dtype=little).copy()
        if dtype is dtypes.bool_ and array.size and array.max() > 1:
            fail("bool storage holds bytes other than 0 and 1")
        return array if array.dtype.isnative else array.astype(array.dtype.newbyteorder("="))


def _data_offset(reader, info):
    """Where a zip member's bytes start in the file: after its local header (30 bytes, its
    name and its extra field, whose lengths the local header gives)."""
    if info.compress_type != zipfile.ZIP_STORED:
        return None
    reader.file.seek(reader.start + info.header_offset + 26)
    lengths = reader.file.read(4)
    if len(lengths) != 4:
        return None
    name_length = int.from_bytes(lengths[:2], "little")
    extra_length = int.from_bytes(lengths[2:], "little")
    return info.header_offset + 30 + name_length + extra_length


def _rebuild_tensor(storage, storage_offset, size, stride, requires_grad=False,
                    backward_hooks=None, metadata=None):
    if not hasattr(storage, "tensor"):
        fail("a tensor must be rebuilt from a storage")
    if not all(isinstance(x, int) for x in (storage_offset, *size, *stride)) or \
            len(size) != len(stride):
        fail("invalid tensor geometry")
    return storage.tensor(list(size), [list(size), list(stride), storage_offset],
                          bool(requires_grad))


def _rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, backward_hooks,
                       dtype, metadata=None):
    tensor = _rebuild_tensor(storage, storage_offset, size, stride, requires_grad)
    if tensor.dtype is not dtype:
        fail(f"a {dtype} tensor over a {tensor.dtype} storage")
    return tensor


def _rebuild_parameter(data, requires_grad, backward_hooks, state=None):
    from ..nn.parameter import Parameter
    parameter = Parameter(data, requires_grad)
    if state:
        for name, value in state.items():
            setattr(parameter, name, value)
    return parameter


_REBUILDERS = {"_rebuild_tensor": _rebuild_tensor, "_rebuild_tensor_v2": _rebuild_tensor,
               "_rebuild_tensor_v3": _rebuild_tensor_v3,
               "_rebuild_parameter": _rebuild_parameter,
               "_rebuild_parameter_with_state": _rebuild_parameter}
_NAMES = {("collections", "OrderedDict"): collections.OrderedDict,
          ("collections", "Counter"): collections.Counter,
          ("torch", "device"): Device, ("torch", "Size"): Size,
          ("builtins", "set"): set, ("builtins", "frozenset"): frozenset,
          ("builtins", "slice"): slice, ("builtins", "range"): range,
          ("builtins", "complex"): complex}
