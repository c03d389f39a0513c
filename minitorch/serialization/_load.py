"""mt.load: read a checkpoint, or any safetensors file, streaming each tensor's bytes from the
file straight into the buffer that becomes the tensor (peak: the tensors themselves), or
memory-mapping them copy-on-write with mmap=True.

A minitorch checkpoint's checksum is verified before any object is built from it; a plain
safetensors file (no minitorch metadata) loads as {name: tensor}, like safetensors' load_file.
"""
import base64
import collections
import io
import json
import math
import os
import pickle            # torch's exception type, and torch's zip checkpoints (_torch_zip)
import struct

import numpy as np

from .. import dtypes
from ..backend import CPU, device as Device, get_backend
from ..ndarray import NDArray, contiguous_strides
from ..tensor import Size, Tensor, wrap
from ._foreign import refuse_pickles, widen
from ._format import (CHECKPOINT_LITTLE, DTYPE, FOREIGN_DTYPE, FOREIGN_LITTLE, FORMAT_PREFIX,
                      LITTLE, MAX_DEPTH, MAX_HEADER_BYTES, MAX_NDIM, NUMPY_CODE,
                      READABLE_FORMATS, CallerError, CheckpointError, WeightsOnlyError,
                      carried, check_table, fail, is_int, start_digest)
from ._objects import ObjectDecoding
from ._safe_globals import AllowList, Importer, resolve_weights_only, weights_only_message
from ._torch_zip import ZIP_MAGIC, load_torch_zip

_TAGS = {"$tensor", "$tuple", "$dict", "$float", "$dtype", "$device", "$size", "$ndarray",
         "$npscalar", "$set", "$frozenset", "$bytes", "$bytearray", "$global", "$object",
         "$ref"}
_FOREIGN_CODES = {**LITTLE, **FOREIGN_LITTLE}
_PARSE_ERRORS = (ValueError, TypeError, KeyError, IndexError, OverflowError, RecursionError,
                 UnicodeDecodeError, struct.error)


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None,
         **pickle_load_args):
    """Read a checkpoint written by save(), a plain safetensors file, or torch.save's zip
    checkpoint (torch.load's signature; its pickle resolves only allow-listed names).
    `map_location`: None (each tensor's saved device), "cpu"/"cuda"/a device (everything there),
    a dict {saved device: target device}, or a function (storage, location) -> None or a
    storage, called once per stored storage with it on the CPU (a 1-D tensor) and its saved
    device string, as in torch. `mmap=True` maps the tensors' bytes from the file (a path)
    copy-on-write instead of reading them.
    `weights_only` (None: True, unless a `pickle_module` is given; the environment variables
    TORCH_FORCE_WEIGHTS_ONLY_LOAD / TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD override it, as in torch)
    governs the classes and functions a checkpoint names (a whole model, an argparse.Namespace):
    True resolves them only from the allow-list (torch's default-safe types, plus
    add_safe_globals / safe_globals), else raises torch's pickle.UnpicklingError; False trusts
    the file and imports them. Objects are built as pickle builds them, cls.__new__ then
    __setstate__ (or the __dict__), never __init__. Data alone (tensors, numbers, strings,
    dicts, lists, ...) needs no allow-list. `pickle_module` and `pickle_load_args` are accepted
    for torch compatibility and otherwise unused."""
    weights_only = resolve_weights_only(weights_only, pickle_module, pickle_load_args)
    policy = AllowList() if weights_only else Importer()
    place = _placement(map_location)
    if mmap and hasattr(f, "read"):
        raise ValueError("f must be a file path in order to use the mmap argument")
    with _Reader(f) as reader:
        try:
            return _load(reader, place, bool(mmap), policy)
        except CallerError as error:
            raise error.args[0] from None
        except WeightsOnlyError as error:
            raise pickle.UnpicklingError(weights_only_message(str(error))) from None
        except CheckpointError:
            raise
        except _PARSE_ERRORS as error:
            raise CheckpointError(f"invalid checkpoint: {type(error).__name__}: {error}") \
                from None


def _load(reader, place, mmap, policy):
    if reader.size >= 4 and reader.read(4) == ZIP_MAGIC:      # torch.save's zip format
        return load_torch_zip(reader, place, mmap, policy, _Storage)
    reader.file.seek(reader.start)
    if reader.size < 8:
        refuse_pickles(reader.read(reader.size), False)
        fail(f"file is {reader.size} bytes, too short for a header")
    first = reader.read(8)
    (n,) = struct.unpack("<Q", first)
    length_ok = 2 <= n <= MAX_HEADER_BYTES and n <= reader.size - 8
    refuse_pickles(first, length_ok)
    if not length_ok:
        fail(f"header length {n} is out of range for a file of {reader.size} bytes")
    header = json.loads(reader.read(n).decode("utf-8"))
    if not isinstance(header, dict):
        fail("header is not a JSON object")
    meta = header.pop("__metadata__", None)
    ours = _is_ours(meta)
    table = check_table(header, reader.size - 8 - n, CHECKPOINT_LITTLE if ours else
                        _FOREIGN_CODES)
    digest = start_digest(meta["structure"], table) if ours else None
    arrays = _read_arrays(reader, table, 8 + n, digest, mmap, widen_foreign=not ours)
    if ours:
        if digest.hexdigest() != meta["sha256"]:
            fail("sha256 checksum mismatch (the file is corrupted)")
        return _Decoder(arrays, table, place, policy).decode(json.loads(meta["structure"]), 0)
    return _plain_tensors(arrays, table, place)


def _is_ours(meta):
    """A minitorch checkpoint (its metadata fully checked), or a plain safetensors file."""
    if meta is not None and not (isinstance(meta, dict) and
                                 all(isinstance(v, str) for v in meta.values())):
        fail("__metadata__ must map strings to strings")
    if meta is None or not ({"structure", "sha256"} & meta.keys() or
                            meta.get("format", "").startswith(FORMAT_PREFIX)):
        return False
    if meta.get("format") not in READABLE_FORMATS or not {"structure", "sha256"} <= meta.keys():
        fail(f"not a readable minitorch checkpoint (format {meta.get('format')!r}; this version "
             f"reads {', '.join(READABLE_FORMATS)})")
    return True


# ---- bytes → arrays -----------------------------------------------------------------------------
class _Reader:
    """Exact reads from a path or a binary file object, its size known before anything is
    allocated (a header can then only claim tensors the file really holds)."""

    def __init__(self, f):
        if hasattr(f, "read"):
            self.path, self.owned = None, False
            self.file = f if _seekable(f) else io.BytesIO(f.read())
        else:
            self.path, self.owned = os.fspath(f), True
            self.file = open(self.path, "rb")
        self.start = self.file.tell()
        self.file.seek(0, io.SEEK_END)
        self.size = self.file.tell() - self.start
        self.file.seek(self.start)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.owned:
            self.file.close()

    def read(self, n):
        data = self.file.read(n)
        if len(data) != n:
            fail("file ended early")
        return data

    def read_into(self, position, view):
        self.file.seek(self.start + position)
        readinto = getattr(self.file, "readinto", None)
        done = 0
        while done < len(view):
            if readinto is None:
                chunk = self.file.read(len(view) - done)
                got = len(chunk)
                view[done:done + got] = chunk
            else:
                got = readinto(view[done:])
            if not got:
                fail("file ended early")
            done += got


def _seekable(f):
    try:
        return f.seekable()
    except (AttributeError, OSError, ValueError):
        return False


def _read_arrays(reader, table, data_start, digest, mmap, widen_foreign):
    """{name: flat numpy array in the entry's dtype}, read in file order; a foreign file's
    dtypes that minitorch lacks are widened (a checkpoint's are numpy arrays' own)."""
    arrays = {}
    for name, entry in sorted(table.items(), key=lambda item: item[1]["data_offsets"]):
        code = entry["dtype"]
        little = CHECKPOINT_LITTLE.get(code) or _FOREIGN_CODES[code]
        count = math.prod(entry["shape"])
        position = data_start + entry["data_offsets"][0]
        if mmap and count and reader.path is not None and position % little.itemsize == 0:
            array = np.memmap(reader.path, dtype=little, mode="c", shape=(count,),
                              offset=reader.start + position).view(np.ndarray)
        else:
            array = np.empty(count, little)
            if count:
                reader.read_into(position, memoryview(array).cast("B"))
        if digest is not None:
            digest.update(memoryview(array).cast("B"))
        arrays[name] = _native(code, array, widen_foreign)
    return arrays


def _native(code, array, widen_foreign):
    if code == "BOOL" and array.size and array.max() > 1:
        fail("bool tensor holds bytes other than 0 and 1")
    if widen_foreign and code in FOREIGN_LITTLE:
        return widen(code, array)
    if not array.dtype.isnative:     # big-endian machines only
        array = array.astype(array.dtype.newbyteorder("="))
    return array


# ---- arrays → tensors ---------------------------------------------------------------------------
def _plain_tensors(arrays, table, place):
    """A safetensors file from another producer: {name: tensor} in file order."""
    result = {}
    for name in arrays:
        storage = _Storage(arrays[name], _dtype_of(table[name]["dtype"]), "cpu", place)
        result[name] = storage.tensor(table[name]["shape"], None, False)
    return result


def _dtype_of(code):
    return DTYPE.get(code) or FOREIGN_DTYPE[code]


class _Storage:
    """One stored entry placed on its target device: the buffer every tensor viewing it
    shares (with one version counter, as views of one storage have in torch)."""

    def __init__(self, host, dtype, saved, place):
        self.dtype, self.saved, self.length = dtype, saved, host.size
        self.buffer, self.base, self.device = place(host, dtype, saved)
        self.backend = get_backend(self.device)
        self.version = [0]

    def tensor(self, shape, view, requires_grad):
        """The whole entry in `shape`, or the [shape, strides, offset] `view` of it."""
        if view is None:
            strides, offset = contiguous_strides(tuple(shape)), 0
        else:
            shape, strides, offset = _checked_view(view, self.length)
        nd = NDArray(self.buffer, tuple(shape), tuple(strides), self.base + offset, self.dtype,
                     self.device, self.backend)
        return wrap(nd, requires_grad, self.version)


def _checked_view(view, length):
    if not isinstance(view, list) or len(view) != 3:
        fail("a tensor view must be [shape, strides, offset]")
    shape, strides, offset = view
    if not (isinstance(shape, list) and isinstance(strides, list) and
            len(shape) == len(strides) <= MAX_NDIM and all(is_int(s) and s >= 0 for s in shape)
            and all(is_int(s) for s in strides) and is_int(offset) and offset >= 0):
        fail("invalid tensor view")
    if math.prod(shape):
        low = offset + sum((n - 1) * s for n, s in zip(shape, strides) if s < 0)
        high = offset + sum((n - 1) * s for n, s in zip(shape, strides) if s > 0)
        if low < 0 or high >= length:
            fail("a tensor view reaches outside its storage")
    return shape, strides, offset


def _placement(map_location):
    """place(host array, dtype, saved device) -> (buffer, element offset, device)."""
    if callable(map_location) and not isinstance(map_location, (str, Device, dict)):
        return lambda host, dtype, saved: _call_map_location(map_location, host, dtype, saved)
    device_for = _device_map(map_location)
    return lambda host, dtype, saved: _to_device(host, device_for(saved))


def _device_map(map_location):
    """saved device string → target device."""
    if map_location is None:
        return lambda saved: Device(saved)
    if isinstance(map_location, (str, Device)):
        target = Device(map_location)
        return lambda saved: target
    if isinstance(map_location, dict):
        mapping = {str(Device(k)): Device(v) for k, v in map_location.items()}
        return lambda saved: mapping.get(saved, Device(saved))
    raise TypeError(f"map_location should be None, a str, a device, a dict or a function, got "
                    f"{type(map_location).__name__}")


def _to_device(host, device):
    if device.type == "cuda":
        from .. import cuda
        if not cuda.is_available():
            raise RuntimeError("Attempting to deserialize object on a CUDA device but "
                               "torch.cuda.is_available() is False. If you are running on a "
                               "CPU-only machine, please use torch.load with "
                               "map_location=torch.device('cpu') to map your storages to the "
                               "CPU.")
    buffer = host if device.type == "cpu" else get_backend(device).from_host(host)
    return buffer, 0, device


def _call_map_location(function, host, dtype, saved):
    """torch's contract: function(storage on the CPU, saved location) returns None (then the
    storage goes where it was saved) or the storage to use, already where it should be."""
    storage = wrap(NDArray(host, (host.size,), (1,), 0, dtype, CPU, get_backend(CPU)))
    result = carried(function, storage, saved)
    if result is None:
        return _to_device(host, Device(saved))
    if not isinstance(result, Tensor) or result.dtype is not dtype or \
            result.numel() != host.size:
        what = (f"a {result.dtype} tensor of {result.numel()} elements"
                if isinstance(result, Tensor) else type(result).__name__)
        raise CallerError(TypeError(
            f"map_location function must return None or a storage like the one it was given "
            f"({dtype} tensor of {host.size} elements), got {what}"))
    nd = result.detach()._data.compact()
    return nd.buffer, nd.offset, nd.device


class _Decoder(ObjectDecoding):
    """JSON structure → Python objects, building each named tensor, storage and object once
    (`policy`: which class and function names may resolve, see _safe_globals)."""

    def __init__(self, arrays, table, place, policy):
        self.arrays, self.table, self.place, self.policy = arrays, table, place, policy
        self.built, self.storages, self.objects = {}, {}, {}

    def decode(self, node, depth):
        if depth > MAX_DEPTH:
            fail(f"nesting deeper than {MAX_DEPTH} levels")
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if isinstance(node, list):
            return [self.decode(x, depth + 1) for x in node]
        if not isinstance(node, dict):
            fail(f"unexpected JSON value of type {type(node).__name__}")
        tag = next((k for k in node if k in _TAGS), None)
        if tag is None:
            fail(f"structure node without a type tag: keys {sorted(node)[:5]}")
        return getattr(self, "_" + tag[1:])(node, depth)

    def _tensor(self, node, depth):
        key = node["$tensor"]
        if not isinstance(key, str):
            fail("a tensor reference must be a string")
        if key not in self.built:
            self.built[key] = self._build(node, key)
        return self.built[key]

    def _build(self, node, key):
        name = node.get("storage", key)
        if not isinstance(name, str) or name not in self.table:
            fail(f"structure refers to a tensor {name!r} the file doesn't hold")
        if self.table[name]["dtype"] not in DTYPE:
            fail(f"tensor {name!r} has dtype {self.table[name]['dtype']}, which minitorch lacks")
        saved = node.get("device", "cpu")
        _check_device(saved)
        storage = self._storage(name, saved)
        requires_grad = node.get("requires_grad", False) is True
        if requires_grad and not (storage.dtype.is_floating_point or storage.dtype.is_complex):
            fail(f"tensor {key!r} of dtype {storage.dtype.name} can't require grad")
        view = node["view"] if "storage" in node else None
        built = storage.tensor(self.table[name]["shape"], view, requires_grad)
        if node.get("parameter") is True:
            from ..nn.parameter import Parameter
            built = Parameter(built, requires_grad)
        return built

    def _storage(self, name, saved):
        storage = self.storages.get(name)
        if storage is None:
            dtype = DTYPE[self.table[name]["dtype"]]
            storage = self.storages[name] = _Storage(self.arrays.pop(name), dtype, saved,
                                                     self.place)
        elif storage.saved != saved:
            fail(f"storage {name!r} is referenced from two devices")
        return storage

    def _ndarray(self, node, depth):
        """A numpy array saved by save(): its entry's bytes in its own numpy dtype (one object
        however often it is referenced, as pickle gives back)."""
        name, dtype = node["$ndarray"], node.get("dtype")
        if not isinstance(name, str) or name not in self.table or name not in self.arrays \
                and ("array", name) not in self.built:
            fail(f"structure refers to an array {name!r} the file doesn't hold")
        if ("array", name) not in self.built:
            code, shape = self.table[name]["dtype"], self.table[name]["shape"]
            if dtype not in NUMPY_CODE or NUMPY_CODE[dtype] != code:
                fail(f"array {name!r} of numpy dtype {dtype!r} stored as {code}")
            array = self.arrays.pop(name)
            if dtype == "bool":
                array = array.view(np.bool_)
            elif dtype.startswith("complex"):
                if not shape or shape[-1] != 2:
                    fail(f"complex array {name!r} must end in a dimension of 2")
                array, shape = array.view(np.dtype(dtype)), shape[:-1]
            self.built[("array", name)] = array.reshape(shape)
        return self.built[("array", name)]

    def _npscalar(self, node, depth):
        dtype, value = node.get("dtype"), node["$npscalar"]
        if dtype not in NUMPY_CODE:
            fail(f"unknown numpy scalar dtype {dtype!r}")
        if dtype.startswith("complex"):
            if not isinstance(value, list) or len(value) != 2:
                fail("a complex scalar must be [real, imag]")
            real, imag = (self.decode(v, depth + 1) for v in value)
            value = complex(real, imag)
        else:
            value = self.decode(value, depth + 1)
        kind = np.dtype(dtype).kind
        if isinstance(value, bool) != (kind == "b") or (kind in "iu" and not is_int(value)) or \
                not isinstance(value, (bool, int, float, complex)):
            fail(f"invalid numpy {dtype} scalar")
        try:
            return np.dtype(dtype).type(value)
        except OverflowError:
            fail(f"numpy {dtype} scalar out of range")

    def _tuple(self, node, depth):
        return tuple(self._list(node["$tuple"], depth))

    def _size(self, node, depth):
        dims = self._list(node["$size"], depth)
        if not all(is_int(d) for d in dims):
            fail("a Size must hold ints")
        return Size(dims)

    def _list(self, items, depth):
        if not isinstance(items, list):
            fail("expected a JSON list")
        return [self.decode(x, depth + 1) for x in items]

    def _dict(self, node, depth):
        result = collections.OrderedDict() if node.get("ordered") is True else {}
        for pair in self._pairs(node["$dict"]):
            key = self.decode(pair[0], depth + 1)
            if isinstance(key, (list, dict, Tensor)):
                fail("dict key of an unhashable type")
            result[key] = self.decode(pair[1], depth + 1)
        return result

    @staticmethod
    def _pairs(items):
        if not isinstance(items, list) or \
                not all(isinstance(p, list) and len(p) == 2 for p in items):
            fail("a dict must be a list of [key, value] pairs")
        return items

    def _float(self, node, depth):
        text = node["$float"]
        if text not in ("inf", "-inf", "nan"):
            fail(f"unexpected special float {text!r}")
        return float(text)

    def _dtype(self, node, depth):
        name = node["$dtype"]
        try:
            return dtypes.from_name(name)
        except (KeyError, TypeError):
            fail(f"unknown dtype {name!r}")

    def _bytes(self, node, depth):
        return _base64(node["$bytes"])

    def _bytearray(self, node, depth):
        return bytearray(_base64(node["$bytearray"]))

    def _device(self, node, depth):
        return _check_device(node["$device"])


def _base64(text):
    if not isinstance(text, str):
        fail("bytes must be a base64 string")
    return base64.b64decode(text, validate=True)


def _check_device(text):
    if not isinstance(text, str):
        fail("a device must be a string")
    try:
        return Device(text)
    except (RuntimeError, TypeError):
        fail(f"invalid device {text!r}")
