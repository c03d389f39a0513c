"""mt.save: encode an object as a checkpoint and stream its tensors' bytes to the file.

Tensors are written straight from their buffers (a non-contiguous or GPU tensor in blocks of
at most CHUNK_BYTES), so saving needs no copy of the whole state. Tensors that share one
storage (views of one another, as `{"w": t, "v": t[0]}`) are written once, as the span of the
storage they cover, and each one records its view of it (shape, strides, offset), so they load
as views of one storage again, as in torch. Entries are laid out by decreasing itemsize, so
every tensor starts at a multiple of its itemsize (memory-mappable as it is).
"""
import base64
import collections
import io
import itertools
import json
import math
import struct

import numpy as np

from .. import dtypes
from ..backend import device as Device
from ..tensor import Size, Tensor
from ._atomic import write_atomic
from ._format import (CHECKPOINT_LITTLE as LITTLE, CODE, FORMAT, FORMAT_OBJECTS, MAX_DEPTH,
                      NUMPY_CODE, start_digest)
from ._objects import ObjectEncoder, join_path

CHUNK_BYTES = 16 * 1024 * 1024
_SHA_PLACEHOLDER = "0" * 64
_HEADER_START = '{"__metadata__":{"sha256":"'   # the checksum's place is fixed: patched last


def save(obj, f):
    """Write `obj` to `f` (a path, written atomically, or a binary file object). `obj`: data
    (tensors, numpy arrays, numbers, strings, containers) and whole objects such as a model,
    stored by class name and state (see _objects); anything that cannot be stored raises
    TypeError before a byte is written."""
    plan = _Plan(obj)
    if hasattr(f, "write"):
        _write(f, plan)
    else:
        write_atomic(f, lambda out: _write(out, plan))


# ---- what goes into the file --------------------------------------------------------------------
class _Plan:
    """The structure JSON, the tensor table and, per entry, where its bytes come from."""

    def __init__(self, obj):
        encoder = _Encoder()
        tree = encoder.encode(obj, "", 0)
        self.entries = _entries(encoder)             # [(name, code, shape, source)]
        self.structure = json.dumps(tree, separators=(",", ":"), allow_nan=False)
        self.format = FORMAT_OBJECTS if encoder.extended else FORMAT
        self.table, offset = {}, 0
        for name, code, shape, source in self.entries:
            size = math.prod(shape) * LITTLE[code].itemsize
            self.table[name] = {"dtype": code, "shape": list(shape),
                                "data_offsets": [offset, offset + size]}
            offset += size

    def header(self, sha256):
        header = {"__metadata__": {"sha256": sha256, "format": self.format,
                                   "structure": self.structure}}
        header.update(self.table)
        text = json.dumps(header, separators=(",", ":")).encode()
        text += b" " * (-len(text) % 8)   # safetensors aligns the data start to 8 bytes
        return struct.pack("<Q", len(text)) + text

    def chunks(self):
        for name, code, shape, source in self.entries:
            for chunk in source():
                yield _little_endian(chunk, LITTLE[code])


def _entries(encoder):
    """Group the saved tensors by storage: a tensor alone on its storage is written compactly
    under its own name; tensors sharing one are written as one entry they all view."""
    groups = collections.defaultdict(list)
    for node, t in encoder.tensors:
        if t.numel() == 0:
            groups[("empty", id(t))].append((node, t))
        else:
            groups[(id(t._data.buffer), t.dtype)].append((node, t))
    entries = []
    for members in groups.values():
        if len(members) == 1:
            node, t = members[0]
            entries.append((node["$tensor"], CODE[t.dtype], tuple(t.shape), _tensor_chunks(t)))
        else:
            entries.append(_shared_entry(members, encoder))
    entries.extend(encoder.arrays)
    entries.sort(key=lambda e: -LITTLE[e[1]].itemsize)   # stable: save order within a size
    return entries


def _shared_entry(members, encoder):
    spans = [_span(t._data) for _, t in members]
    low, high = min(s[0] for s in spans), max(s[1] for s in spans)
    name, shape = None, (high - low,)
    for node, t in members:      # a tensor that is the whole span names the entry (and shapes it)
        nd = t._data
        if nd.offset == low and nd.size == high - low and nd.is_compact():
            name, shape = node["$tensor"], tuple(nd.shape)
            break
    if name is None:
        name = encoder.unique_name(members[0][0]["$tensor"] + ".storage")
    for node, t in members:
        nd = t._data
        node["storage"] = name
        node["view"] = [list(nd.shape), list(nd.strides), nd.offset - low]
    t = members[0][1]
    return name, CODE[t.dtype], shape, _span_chunks(t._data, low, high)


def _span(nd):
    """[first, last + 1) buffer elements a non-empty view touches (strides may be negative)."""
    low = nd.offset + sum((n - 1) * s for n, s in zip(nd.shape, nd.strides) if s < 0)
    high = nd.offset + sum((n - 1) * s for n, s in zip(nd.shape, nd.strides) if s > 0) + 1
    return low, high


def _span_chunks(nd, low, high):
    def chunks():
        step = max(1, CHUNK_BYTES // nd.dtype.itemsize)
        for start in range(low, high, step):
            yield nd.backend.to_host(nd.buffer[start:min(start + step, high)])
    return chunks


def _tensor_chunks(t):
    """The tensor's values in C order: its own buffer when that is compact on the CPU, else
    blocks of rows copied one at a time (from the GPU too)."""
    def chunks():
        data = t.detach()
        if data.numel() == 0:
            return
        if data.device.type == "cpu" and data._data.is_compact():
            yield data._data.numpy()
            return
        if data.ndim == 0:
            yield data.cpu()._data.numpy()
            return
        row_bytes = max(1, data[0].numel() * data.dtype.itemsize)
        step = max(1, CHUNK_BYTES // row_bytes)
        for start in range(0, data.shape[0], step):
            yield np.ascontiguousarray(data[start:start + step].cpu()._data.numpy())
    return chunks


def _little_endian(chunk, little):
    chunk = np.ascontiguousarray(chunk)
    if chunk.dtype.itemsize > 1 and chunk.dtype != little:   # only on big-endian machines
        chunk = chunk.astype(little)
    return memoryview(chunk.reshape(-1)).cast("B")


# ---- writing ------------------------------------------------------------------------------------
def _write(out, plan):
    """Header, then the bytes; the checksum is patched into the header at the end when `out`
    can seek back, else computed in a first pass over the tensors."""
    start = _position(out)
    if start is None:
        out.write(plan.header(_hash(plan, plan.chunks()).hexdigest()))
        for chunk in plan.chunks():
            out.write(chunk)
        return
    out.write(plan.header(_SHA_PLACEHOLDER))
    h = _hash(plan, _written(out, plan.chunks()))
    end = out.tell()
    out.seek(start + 8 + len(_HEADER_START))
    out.write(h.hexdigest().encode())
    out.seek(end)


def _written(out, chunks):
    for chunk in chunks:
        out.write(chunk)
        yield chunk


def _hash(plan, chunks):
    h = start_digest(plan.structure, plan.table)
    for chunk in chunks:
        h.update(chunk)
    return h


def _position(out):
    """Where the file starts, when the checksum can be patched in place afterwards (not in
    append mode, where every write goes to the end)."""
    if "a" in str(getattr(out, "mode", "")):
        return None
    try:
        if out.seekable():
            return out.tell()
    except (AttributeError, OSError, io.UnsupportedOperation):
        pass
    return None


# ---- the structure around the tensors -----------------------------------------------------------
class _Encoder:
    """Python object → JSON-able structure; tensors become {"$tensor": name, ...} nodes and are
    collected (a tensor reachable twice is stored once and loads as one object)."""

    def __init__(self):
        self.tensors = []      # [(node, tensor)]
        self.nodes = {}        # id(tensor) → its node (one dict, completed once grouped)
        self.arrays = []       # numpy arrays' entries: [(name, code, shape, source)]
        self.array_nodes = {}  # id(array) → (its node, the array, kept alive while saving)
        self.taken = {"__metadata__"}
        self.objects = ObjectEncoder(self)
        self.extended = False  # anything beyond format /2 stored (objects, sets, bytes)

    def unique_name(self, name):
        if name in self.taken:
            name = next(f"{name}#{i}" for i in itertools.count(1)
                        if f"{name}#{i}" not in self.taken)
        self.taken.add(name)
        return name

    def encode(self, obj, path, depth):
        if depth > MAX_DEPTH:
            raise ValueError(f"save: objects nested deeper than {MAX_DEPTH} levels are not "
                             "supported")
        kind = type(obj)
        if obj is None or kind in (bool, str):
            return obj
        if kind in (np.ndarray, np.memmap):
            return self._ndarray(obj, path)
        if isinstance(obj, (np.number, np.bool_)) and obj.dtype.name in NUMPY_CODE:
            return _numpy_scalar(obj)
        if kind in (int, float) or isinstance(obj, (np.number, np.bool_)):
            return _number(obj)
        if isinstance(obj, Tensor):
            return self._tensor(obj, path)
        if isinstance(obj, dtypes.dtype):
            return {"$dtype": obj.name}
        if isinstance(obj, Device):
            return {"$device": str(obj)}
        if isinstance(obj, Size):
            return {"$size": list(obj)}
        if kind in (tuple, list):
            items = [self.encode(x, join_path(path, i), depth + 1) for i, x in enumerate(obj)]
            return {"$tuple": items} if kind is tuple else items
        if kind in (dict, collections.OrderedDict):
            return self.dict_node(obj, path, depth)
        if kind in (set, frozenset):
            self.extended = True
            items = [self.encode(x, path, depth + 1) for x in obj]
            return {"$set" if kind is set else "$frozenset": items}
        if kind in (bytes, bytearray):
            self.extended = True
            return {"$bytes" if kind is bytes else "$bytearray":
                    base64.b64encode(obj).decode("ascii")}
        self.extended = True
        return self.objects.encode(obj, path, depth)

    def _tensor(self, t, path):
        node = self.nodes.get(id(t))
        if node is None:
            node = {"$tensor": self.unique_name(path or "tensor"), "device": str(t.device),
                    "requires_grad": t.requires_grad}
            from ..nn.parameter import Parameter
            if isinstance(t, Parameter):
                node["parameter"] = True         # loads as a Parameter again, as in torch
            self.nodes[id(t)] = node
            self.tensors.append((node, t))
        return node

    def _ndarray(self, array, path):
        """A numpy array: an entry of its own bytes (never shared with another, as a pickled
        array isn't), referenced by a node that names its numpy dtype."""
        known = self.array_nodes.get(id(array))
        if known is not None:
            return known[0]
        dtype = array.dtype
        if dtype.name not in NUMPY_CODE or dtype.fields is not None:
            raise TypeError(f"save: cannot store a numpy array of dtype {dtype} (supported: "
                            f"{', '.join(NUMPY_CODE)})")
        name = self.unique_name(path or "array")
        node = {"$ndarray": name, "dtype": dtype.name}
        shape = array.shape + ((2,) if dtype.kind == "c" else ())
        self.arrays.append((name, NUMPY_CODE[dtype.name], shape, _array_chunks(array)))
        self.array_nodes[id(array)] = (node, array)
        return node

    def dict_node(self, obj, path, depth, transparent=()):
        """{"$dict": [[key, value], ...]}; the values under `transparent` keys keep `path`
        (a module's _parameters, _buffers and _modules: its tensors are named as in its
        state_dict)."""
        items = []
        for key, value in obj.items():
            if isinstance(key, (Tensor, list, dict)):
                raise TypeError(f"save: dict keys must be numbers, strings, bools, None or "
                                f"tuples of them, not {type(key).__name__}")
            value_path = path if key in transparent else join_path(path, key)
            items.append([self.encode(key, path, depth + 1),
                          self.encode(value, value_path, depth + 1)])
        node = {"$dict": items}
        if type(obj) is collections.OrderedDict:
            node["ordered"] = True
        return node


def _array_chunks(array):
    """The array's bytes in C order (complex as float pairs, bool as bytes)."""
    def chunks():
        flat = np.ascontiguousarray(array).reshape(-1)
        if flat.dtype.kind == "c":
            flat = flat.view(flat.real.dtype)
        elif flat.dtype.kind == "b":
            flat = flat.view(np.uint8)
        if flat.size:
            yield flat
    return chunks


def _numpy_scalar(obj):
    """A numpy scalar, kept in the structure with its dtype (it loads as the same scalar)."""
    if obj.dtype.kind == "c":
        value = [_number(obj.real), _number(obj.imag)]
    else:
        value = _number(obj.item() if obj.dtype.kind in "iub" else obj)
    return {"$npscalar": value, "dtype": obj.dtype.name}


def _number(obj):
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    value = float(obj)
    return value if math.isfinite(value) else {"$float": repr(value)}
