"""The container both sides agree on: format tags, dtype codes, limits, the checksum, and the
checks of a safetensors tensor table (every malformed table raises CheckpointError)."""
import hashlib
import json
import math

import numpy as np

from .. import dtypes

FORMAT = "minitorch-checkpoint/2"           # /2: tensors may view a shared storage entry
# /3: also objects, class/function names, sets, bytes; written only by checkpoints that hold
# them, so a data-only checkpoint stays readable by versions that read /2
FORMAT_OBJECTS = "minitorch-checkpoint/3"
READABLE_FORMATS = ("minitorch-checkpoint/1", FORMAT, FORMAT_OBJECTS)
FORMAT_PREFIX = "minitorch-checkpoint/"
MAX_HEADER_BYTES = 100_000_000              # safetensors' own limit
MAX_DEPTH = 100                             # nesting of containers in a checkpoint
MAX_NDIM = 64
CODE = {dtypes.float32: "F32", dtypes.float64: "F64", dtypes.int64: "I64", dtypes.uint8: "U8",
        dtypes.bool_: "BOOL", dtypes.float16: "F16", dtypes.bfloat16: "BF16",
        dtypes.int32: "I32", dtypes.int16: "I16", dtypes.int8: "I8",
        dtypes.complex64: "C64", dtypes.complex128: "C128"}
DTYPE = {code: d for d, code in CODE.items()}
# How each code's bytes lie in the file (little-endian, as safetensors prescribes); bfloat16's
# are its storage words. A complex element is its (re, im) floats: safetensors' C64 for
# complex64, and C128 (a code safetensors lacks) for complex128, so that a reader that cannot
# hold complex numbers refuses the entry instead of misreading it as floats.
LITTLE = {"F32": np.dtype("<f4"), "F64": np.dtype("<f8"), "I64": np.dtype("<i8"),
          "U8": np.dtype("u1"), "BOOL": np.dtype("u1"), "F16": np.dtype("<f2"),
          "BF16": np.dtype("<u2"), "I32": np.dtype("<i4"), "I16": np.dtype("<i2"),
          "I8": np.dtype("i1"), "C64": np.dtype("<c8"), "C128": np.dtype("<c16")}
# Dtypes other producers write that minitorch lacks, read into the nearest dtype it has that
# holds every value exactly (as mt.tensor does with such numpy arrays).
FOREIGN_LITTLE = {"U16": np.dtype("<u2"), "U32": np.dtype("<u4")}
FOREIGN_DTYPE = {"U16": dtypes.int64, "U32": dtypes.int64}
# numpy arrays stored in a checkpoint keep their own dtype: each numpy dtype with a safetensors
# code is stored under it (complex as its float pairs in a trailing dimension of 2), and the
# structure records the numpy dtype so mt.load gives back the same array.
NUMPY_CODE = {"float16": "F16", "float32": "F32", "float64": "F64", "int8": "I8",
              "int16": "I16", "int32": "I32", "int64": "I64", "uint8": "U8", "uint16": "U16",
              "uint32": "U32", "uint64": "U64", "bool": "BOOL", "complex64": "F32",
              "complex128": "F64"}
CHECKPOINT_LITTLE = {**LITTLE, "F16": np.dtype("<f2"), "I8": np.dtype("i1"),
                     "I16": np.dtype("<i2"), "I32": np.dtype("<i4"), "U16": np.dtype("<u2"),
                     "U32": np.dtype("<u4"), "U64": np.dtype("<u8")}
_ENTRY_KEYS = {"dtype", "shape", "data_offsets"}


class CheckpointError(RuntimeError):
    """The file is not a valid checkpoint (truncated, corrupted, hostile or of another kind)."""


def fail(message):
    raise CheckpointError(f"invalid checkpoint: {message}")


class WeightsOnlyError(Exception):
    """A reference or build step weights_only loading refuses; load() raises it as torch's
    pickle.UnpicklingError (with _safe_globals.weights_only_message)."""


class CallerError(Exception):
    """An exception from code that is not the file's parsing (the caller's map_location, a
    stored class's own __new__ / __setstate__, an import), carried out of load() unchanged
    instead of being reported as a malformed file."""


def carried(call, *args, **kwargs):
    """call(*args, **kwargs), its exceptions wrapped in CallerError (but for a weights_only
    refusal, which load() reports as torch does)."""
    try:
        return call(*args, **kwargs)
    except WeightsOnlyError:
        raise
    except Exception as error:  # noqa: BLE001  (re-raised unchanged by load())
        raise CallerError(error) from None


def _digest(structure, table, payload):
    """sha256 over everything load() uses: the structure, the tensor table and the bytes."""
    h = start_digest(structure, table)
    h.update(payload)
    return h.hexdigest()


def start_digest(structure, table):
    """_digest's hasher before the tensor bytes, which save and load feed it as they stream."""
    canonical = json.dumps([[name, e["dtype"], e["shape"], e["data_offsets"]]
                            for name, e in sorted(table.items())], separators=(",", ":"))
    h = hashlib.sha256(structure.encode())
    h.update(b"\n" + canonical.encode() + b"\n")
    return h


def is_int(x):
    return isinstance(x, int) and not isinstance(x, bool)


def check_table(header, size, codes):
    """{name: entry} for a header's tensor entries, each well formed (a dtype among `codes`),
    tiling the `size` data bytes exactly: in range, no overlaps, no gaps."""
    table = {name: _check_entry(name, entry, codes) for name, entry in header.items()}
    position = 0
    for entry in sorted(table.values(), key=lambda e: e["data_offsets"]):
        begin, end = entry["data_offsets"]
        if begin != position:
            fail("tensor data overlaps or leaves gaps")
        position = end
    if position != size:
        fail(f"tensor data covers {position} bytes but the file holds {size}")
    return table


def _check_entry(name, entry, codes):
    if not isinstance(entry, dict) or set(entry) != _ENTRY_KEYS:
        fail(f"tensor entry {name!r} must have exactly dtype, shape and data_offsets")
    if not isinstance(entry["dtype"], str) or entry["dtype"] not in codes:
        fail(f"tensor {name!r} has unsupported dtype {entry['dtype']!r}")
    shape, offsets = entry["shape"], entry["data_offsets"]
    if not isinstance(shape, list) or len(shape) > MAX_NDIM or \
            not all(is_int(s) and s >= 0 for s in shape):
        fail(f"tensor {name!r} has an invalid shape")
    if not isinstance(offsets, list) or len(offsets) != 2 or \
            not all(is_int(o) and o >= 0 for o in offsets):
        fail(f"tensor {name!r} has invalid data_offsets")
    begin, end = offsets
    if end - begin != math.prod(shape) * codes[entry["dtype"]].itemsize:
        fail(f"tensor {name!r}: data_offsets {offsets} don't match shape {shape}")
    return entry
