"""mt.save / mt.load: checkpoints in the safetensors layout, never pickle.

File: 8-byte little-endian header length, a JSON header (space-padded to a multiple of 8) with
one {"dtype", "shape", "data_offsets"} entry per tensor and a "__metadata__" of strings, then the
raw little-endian tensor bytes back to back. So `safetensors.numpy.load_file` reads the tensors.
The metadata holds the format tag, the JSON encoding of everything around the tensors (nested
dicts with any hashable scalar/tuple keys, lists, tuples, numbers, strings, bools, None, dtypes,
devices) and a sha256 over that structure, the tensor table and the bytes, checked before
anything is built. Every way a file can be malformed raises CheckpointError.
"""
import collections
import hashlib
import itertools
import json
import math
import os
import struct
import tempfile

import numpy as np

from . import dtypes
from .backend import device as Device
from .tensor import Size, Tensor, tensor

__all__ = ["save", "load", "CheckpointError"]

FORMAT = "minitorch-checkpoint/1"
MAX_HEADER_BYTES = 100_000_000   # safetensors' own limit
MAX_DEPTH = 100                  # nesting of containers in a checkpoint
MAX_NDIM = 64
_CODE = {dtypes.float32: "F32", dtypes.float64: "F64", dtypes.int64: "I64", dtypes.uint8: "U8",
         dtypes.bool_: "BOOL"}
_DTYPE = {code: d for d, code in _CODE.items()}
_LITTLE = {"F32": np.dtype("<f4"), "F64": np.dtype("<f8"), "I64": np.dtype("<i8"),
           "U8": np.dtype("u1"), "BOOL": np.dtype("u1")}
_HEADER_KEYS = {"dtype", "shape", "data_offsets"}
_TAGS = {"$tensor", "$tuple", "$dict", "$float", "$dtype", "$device", "$size"}


class CheckpointError(RuntimeError):
    """The file is not a valid minitorch checkpoint (truncated, corrupted or hostile)."""


# ---- save ---------------------------------------------------------------------------------------
def save(obj, f):
    """Write `obj` to `f` (a path, written atomically, or a binary file object)."""
    blob = _serialize(obj)
    if hasattr(f, "write"):
        f.write(blob)
        return
    _write_atomic(os.fspath(f), blob)


def _serialize(obj):
    encoder = _Encoder()
    structure = json.dumps(encoder.encode(obj, "", 0), separators=(",", ":"),
                           allow_nan=False)
    table, chunks, offset = {}, [], 0
    for name, t in encoder.tensors:
        data = _tensor_bytes(t)
        table[name] = {"dtype": _CODE[t.dtype], "shape": list(t.shape),
                       "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    payload = b"".join(chunks)
    header = {"__metadata__": {"format": FORMAT, "structure": structure,
                               "sha256": _digest(structure, table, payload)}}
    header.update(table)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)   # safetensors aligns the data start to 8 bytes
    return struct.pack("<Q", len(text)) + text + payload


def _tensor_bytes(t):
    array = t.detach().cpu().contiguous().numpy()
    return np.ascontiguousarray(array, dtype=_LITTLE[_CODE[t.dtype]]).tobytes()


def _digest(structure, table, payload):
    """sha256 over everything load() uses: the structure, the tensor table and the bytes."""
    canonical = json.dumps([[name, e["dtype"], e["shape"], e["data_offsets"]]
                            for name, e in sorted(table.items())], separators=(",", ":"))
    h = hashlib.sha256(structure.encode())
    h.update(b"\n" + canonical.encode() + b"\n")
    h.update(payload)
    return h.hexdigest()


class _Encoder:
    """Python object → JSON-able structure; tensors become {"$tensor": name} and are collected
    (a tensor reachable twice is stored once and loads as one object)."""

    def __init__(self):
        self.tensors = []
        self.names = {}        # id(tensor) → name
        self.taken = {"__metadata__"}

    def encode(self, obj, path, depth):
        if depth > MAX_DEPTH:
            raise ValueError(f"save: objects nested deeper than {MAX_DEPTH} levels are not "
                             "supported")
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, (int, float, np.number, np.bool_)):
            return self._number(obj)
        if isinstance(obj, Tensor):
            return self._tensor(obj, path)
        if isinstance(obj, dtypes.dtype):
            return {"$dtype": obj.name}
        if isinstance(obj, Device):
            return {"$device": str(obj)}
        if isinstance(obj, Size):
            return {"$size": list(obj)}
        if type(obj) in (tuple, list):
            items = [self.encode(x, _join(path, i), depth + 1) for i, x in enumerate(obj)]
            return {"$tuple": items} if type(obj) is tuple else items
        if type(obj) in (dict, collections.OrderedDict):
            return self._dict(obj, path, depth)
        raise TypeError(f"save: cannot store an object of type {type(obj).__name__} (supported: "
                        "tensors, numbers, strings, bools, None, dtypes, devices and "
                        "dicts/lists/tuples of them)")

    @staticmethod
    def _number(obj):
        if isinstance(obj, (bool, np.bool_)):
            return bool(obj)
        if isinstance(obj, (int, np.integer)):
            return int(obj)
        value = float(obj)
        return value if math.isfinite(value) else {"$float": repr(value)}

    def _tensor(self, t, path):
        name = self.names.get(id(t))
        if name is None:
            name = path or "tensor"
            if name in self.taken:
                name = next(f"{name}#{i}" for i in itertools.count(1)
                            if f"{name}#{i}" not in self.taken)
            self.taken.add(name)
            self.names[id(t)] = name
            self.tensors.append((name, t))
        node = {"$tensor": name, "device": str(t.device), "requires_grad": t.requires_grad}
        from .nn.module import Parameter     # nn builds on this module
        if isinstance(t, Parameter):
            node["parameter"] = True         # loads as a Parameter again, as in torch
        return node

    def _dict(self, obj, path, depth):
        items = []
        for key, value in obj.items():
            if isinstance(key, (Tensor, list, dict)):
                raise TypeError(f"save: dict keys must be numbers, strings, bools, None or "
                                f"tuples of them, not {type(key).__name__}")
            items.append([self.encode(key, path, depth + 1),
                          self.encode(value, _join(path, key), depth + 1)])
        node = {"$dict": items}
        if type(obj) is collections.OrderedDict:
            node["ordered"] = True
        return node


def _join(path, key):
    return f"{path}.{key}" if path else str(key)


def _write_atomic(path, blob):
    """Temp file in the same directory + flush + fsync + os.replace: a crash leaves either the
    old file or the new one, never a partial checkpoint."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix="." + os.path.basename(path) + ".",
                               suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(blob)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    _fsync_directory(directory)


def _fsync_directory(directory):
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return  # not possible on every platform; the file itself is already synced
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# ---- load ---------------------------------------------------------------------------------------
def load(f, map_location=None, weights_only=True):
    """Read a checkpoint written by save(). `map_location`: None (each tensor's saved device),
    "cpu"/"cuda"/a device (everything there) or a dict {saved device: target device}.
    `weights_only` is accepted for torch compatibility: this format can hold nothing but data."""
    device_for = _device_map(map_location)
    if hasattr(f, "read"):
        data = f.read()
    else:
        with open(os.fspath(f), "rb") as fh:
            data = fh.read()
    try:
        structure, arrays = _parse(bytes(data))
        return _Decoder(arrays, device_for).decode(structure, 0)
    except CheckpointError:
        raise
    except (ValueError, TypeError, KeyError, IndexError, OverflowError, RecursionError,
            UnicodeDecodeError, struct.error) as error:
        raise CheckpointError(f"invalid checkpoint: {type(error).__name__}: {error}") from None


def _fail(message):
    raise CheckpointError(f"invalid checkpoint: {message}")


def _parse(data):
    """Validate the container and return (structure, {name: (numpy array, dtype)})."""
    if len(data) < 8:
        _fail(f"file is {len(data)} bytes, too short for a header")
    (n,) = struct.unpack("<Q", data[:8])
    if n < 2 or n > MAX_HEADER_BYTES or n > len(data) - 8:
        _fail(f"header length {n} is out of range for a file of {len(data)} bytes")
    header = json.loads(data[8:8 + n].decode("utf-8"))
    if not isinstance(header, dict):
        _fail("header is not a JSON object")
    meta = header.pop("__metadata__", None)
    if not isinstance(meta, dict) or meta.get("format") != FORMAT or \
            not all(isinstance(v, str) for v in meta.values()) or \
            not {"structure", "sha256"} <= meta.keys():
        _fail("not a minitorch checkpoint (missing or foreign __metadata__)")
    payload = data[8 + n:]
    table = {name: _check_entry(name, entry) for name, entry in header.items()}
    _check_layout(table, len(payload))
    if _digest(meta["structure"], table, payload) != meta["sha256"]:
        _fail("sha256 checksum mismatch (the file is corrupted)")
    arrays = {name: _array(entry, payload) for name, entry in table.items()}
    return json.loads(meta["structure"]), arrays


def _is_int(x):
    return isinstance(x, int) and not isinstance(x, bool)


def _check_entry(name, entry):
    if not isinstance(entry, dict) or set(entry) != _HEADER_KEYS:
        _fail(f"tensor entry {name!r} must have exactly dtype, shape and data_offsets")
    if entry["dtype"] not in _DTYPE:
        _fail(f"tensor {name!r} has unsupported dtype {entry['dtype']!r}")
    shape, offsets = entry["shape"], entry["data_offsets"]
    if not isinstance(shape, list) or len(shape) > MAX_NDIM or \
            not all(_is_int(s) and s >= 0 for s in shape):
        _fail(f"tensor {name!r} has an invalid shape")
    if not isinstance(offsets, list) or len(offsets) != 2 or \
            not all(_is_int(o) and o >= 0 for o in offsets):
        _fail(f"tensor {name!r} has invalid data_offsets")
    begin, end = offsets
    if end - begin != math.prod(shape) * _LITTLE[entry["dtype"]].itemsize:
        _fail(f"tensor {name!r}: data_offsets {offsets} don't match shape {shape}")
    return entry


def _check_layout(table, size):
    """Tensors must tile the data section exactly: in range, no overlaps, no gaps."""
    position = 0
    for entry in sorted(table.values(), key=lambda e: e["data_offsets"]):
        begin, end = entry["data_offsets"]
        if begin != position:
            _fail("tensor data overlaps or leaves gaps")
        position = end
    if position != size:
        _fail(f"tensor data covers {position} bytes but the file holds {size}")


def _array(entry, payload):
    begin, end = entry["data_offsets"]
    code = entry["dtype"]
    array = np.frombuffer(payload, dtype=_LITTLE[code], count=(end - begin) //
                          _LITTLE[code].itemsize, offset=begin)
    if code == "BOOL":
        if array.size and array.max() > 1:
            _fail("bool tensor holds bytes other than 0 and 1")
        array = array.view(np.bool_)
    return array.reshape(entry["shape"]), _DTYPE[code]


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
    raise TypeError(f"map_location should be None, a str, a device or a dict, got "
                    f"{type(map_location).__name__}")


class _Decoder:
    """JSON structure → Python objects, building each named tensor once."""

    def __init__(self, arrays, device_for):
        self.arrays = arrays
        self.device_for = device_for
        self.built = {}

    def decode(self, node, depth):
        if depth > MAX_DEPTH:
            _fail(f"nesting deeper than {MAX_DEPTH} levels")
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if isinstance(node, list):
            return [self.decode(x, depth + 1) for x in node]
        if not isinstance(node, dict):
            _fail(f"unexpected JSON value of type {type(node).__name__}")
        tag = next((k for k in node if k in _TAGS), None)
        if tag is None:
            _fail(f"structure node without a type tag: keys {sorted(node)[:5]}")
        return getattr(self, "_" + tag[1:])(node, depth)

    def _tensor(self, node, depth):
        name = node["$tensor"]
        if not isinstance(name, str) or name not in self.arrays:
            _fail(f"structure refers to a tensor {name!r} the file doesn't hold")
        if name not in self.built:
            array, dtype = self.arrays[name]
            saved = node.get("device", "cpu")
            _check_device(saved)
            requires_grad = node.get("requires_grad", False) is True
            if requires_grad and not dtype.is_floating_point:
                _fail(f"tensor {name!r} of dtype {dtype.name} can't require grad")
            built = _make_tensor(array, dtype, self.device_for(saved), requires_grad)
            if node.get("parameter") is True:
                from .nn.module import Parameter
                built = Parameter(built, requires_grad)
            self.built[name] = built
        return self.built[name]

    def _tuple(self, node, depth):
        return tuple(self._list(node["$tuple"], depth))

    def _size(self, node, depth):
        dims = self._list(node["$size"], depth)
        if not all(_is_int(d) for d in dims):
            _fail("a Size must hold ints")
        return Size(dims)

    def _list(self, items, depth):
        if not isinstance(items, list):
            _fail("expected a JSON list")
        return [self.decode(x, depth + 1) for x in items]

    def _dict(self, node, depth):
        result = collections.OrderedDict() if node.get("ordered") is True else {}
        for pair in self._pairs(node["$dict"]):
            key = self.decode(pair[0], depth + 1)
            if isinstance(key, (list, dict, Tensor)):
                _fail("dict key of an unhashable type")
            result[key] = self.decode(pair[1], depth + 1)
        return result

    @staticmethod
    def _pairs(items):
        if not isinstance(items, list) or \
                not all(isinstance(p, list) and len(p) == 2 for p in items):
            _fail("a dict must be a list of [key, value] pairs")
        return items

    def _float(self, node, depth):
        text = node["$float"]
        if text not in ("inf", "-inf", "nan"):
            _fail(f"unexpected special float {text!r}")
        return float(text)

    def _dtype(self, node, depth):
        name = node["$dtype"]
        if name not in ("float32", "float64", "int64", "uint8", "bool"):
            _fail(f"unknown dtype {name!r}")
        return dtypes.from_name(name)

    def _device(self, node, depth):
        return _check_device(node["$device"])


def _check_device(text):
    if not isinstance(text, str):
        _fail("a device must be a string")
    try:
        return Device(text)
    except (RuntimeError, TypeError):
        _fail(f"invalid device {text!r}")


def _make_tensor(array, dtype, device, requires_grad):
    if device.type == "cuda":
        from . import cuda
        if not cuda.is_available():
            raise RuntimeError("Attempting to deserialize object on a CUDA device but "
                               "torch.cuda.is_available() is False. If you are running on a "
                               "CPU-only machine, please use torch.load with "
                               "map_location=torch.device('cpu') to map your storages to the "
                               "CPU.")
    return tensor(array, dtype=dtype, device=device, requires_grad=requires_grad)
