"""mt.save / mt.load of numpy arrays and scalars, alone and nested in containers beside tensors:
they load back as numpy objects of the same dtype, shape and values (as torch.load gives back
what torch.save pickled), the file stays plain safetensors, and a whole Module is refused with
the state_dict line to use instead."""
import io
import json
import struct

import numpy as np
import pytest

import minitorch as mt
from minitorch.serialization import CheckpointError, _digest

DTYPES = ["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16",
          "uint32", "uint64", "bool", "complex64", "complex128"]


def _roundtrip(obj, **load_kwargs):
    buffer = io.BytesIO()
    mt.save(obj, buffer)
    buffer.seek(0)
    return mt.load(buffer, **load_kwargs)


def _same_array(loaded, original):
    assert type(loaded) is np.ndarray
    assert loaded.dtype == original.dtype.newbyteorder("=") and loaded.shape == original.shape
    np.testing.assert_array_equal(loaded, original)


@pytest.mark.parametrize("dtype", DTYPES)
def test_arrays_of_every_dtype_round_trip(dtype):
    values = np.arange(-3, 9).reshape(3, 4) * (1 + 1j if dtype.startswith("complex") else 1)
    array = values.astype(dtype) if dtype != "bool" else values % 2 == 0
    _same_array(_roundtrip(array), array)
    scalar = array.reshape(-1)[5]
    loaded = _roundtrip(scalar)
    assert type(loaded) is type(scalar) and loaded == scalar


@pytest.mark.parametrize("make", [
    lambda: np.zeros(3),
    lambda: np.array(2.5),                                   # 0-d
    lambda: np.ones((0, 4), np.float32),                     # empty
    lambda: np.arange(24.0).reshape(2, 3, 4).transpose(2, 0, 1),  # not contiguous
    lambda: np.arange(10)[::3],
    lambda: np.asfortranarray(np.arange(6.0).reshape(2, 3)),
    lambda: np.arange(5, dtype=">i4"),                       # big-endian: loads native
    lambda: np.array([np.nan, np.inf, -0.0]),
], ids=["zeros", "0d", "empty", "transposed", "stepped", "fortran", "big_endian", "specials"])
def test_array_layouts_round_trip(make):
    array = make()
    _same_array(_roundtrip(array), array)


def test_nested_containers_with_tensors_and_arrays():
    a = np.linspace(0, 1, 5)
    obj = {"epoch": 3, "weights": mt.ones(2, 2), "stats": {"mean": a, "std": np.float32(0.5)},
           "history": [np.arange(3), (np.array([True, False]), "tag")], "again": a}
    loaded = _roundtrip(obj)
    _same_array(loaded["stats"]["mean"], a)
    assert type(loaded["stats"]["std"]) is np.float32 and loaded["stats"]["std"] == 0.5
    _same_array(loaded["history"][0], np.arange(3))
    _same_array(loaded["history"][1][0], np.array([True, False]))
    assert loaded["history"][1][1] == "tag" and loaded["epoch"] == 3
    assert loaded["again"] is loaded["stats"]["mean"]        # one object, as pickle gives back
    assert isinstance(loaded["weights"], mt.Tensor)
    loaded["again"][0] = 9.0                                  # writable, owns its memory
    assert a[0] == 0.0


def test_loaded_like_torch_load(tmp_path):
    torch = pytest.importorskip("torch")
    obj = {"x": np.arange(6, dtype=np.int32).reshape(2, 3), "y": [np.float64(1.5),
                                                                 np.zeros(2, np.float16)]}
    torch.save(obj, tmp_path / "t.pt")
    theirs = torch.load(tmp_path / "t.pt", weights_only=False)
    mt.save(obj, tmp_path / "m.ckpt")
    ours = mt.load(tmp_path / "m.ckpt")
    _same_array(ours["x"], theirs["x"])
    _same_array(ours["y"][1], theirs["y"][1])
    assert type(ours["y"][0]) is type(theirs["y"][0]) and ours["y"][0] == theirs["y"][0]


def test_mmap_load_and_plain_safetensors_readers(tmp_path):
    path = tmp_path / "arrays.safetensors"
    array = np.arange(12, dtype=np.int32).reshape(3, 4)
    mt.save({"a": array, "t": mt.arange(3)}, path)
    _same_array(mt.load(path, mmap=True)["a"], array)
    safetensors_numpy = pytest.importorskip("safetensors.numpy")
    raw = safetensors_numpy.load_file(str(path))
    np.testing.assert_array_equal(raw["a"], array)


def test_unsupported_arrays_are_refused_and_whole_modules_stored():
    for bad in (np.array(["text"]), np.array([object()]), np.zeros(2, dtype="i4,f4")):
        with pytest.raises(TypeError, match="cannot store a numpy array of dtype"):
            mt.save({"x": bad}, io.BytesIO())
    buffer = io.BytesIO()
    mt.save(mt.nn.Linear(2, 2), buffer)          # torch.save(model): stored whole
    buffer.seek(0)
    assert type(mt.load(buffer, weights_only=False)) is mt.nn.Linear


def _resealed(obj, edit):
    """The checkpoint of `obj` with its structure changed by `edit` and its checksum redone."""
    buffer = io.BytesIO()
    mt.save(obj, buffer)
    data = buffer.getvalue()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    meta = header["__metadata__"]
    structure = json.loads(meta["structure"])
    edit(structure)
    meta["structure"] = json.dumps(structure)
    table = {k: v for k, v in header.items() if k != "__metadata__"}
    meta["sha256"] = _digest(meta["structure"], table, data[8 + n:])
    text = json.dumps(header).encode()
    return io.BytesIO(struct.pack("<Q", len(text)) + text + data[8 + n:])


@pytest.mark.parametrize("a_dtype,edit", [
    ("float64", lambda s: s["$dict"][0][1].update(dtype="int32")),   # stored as F64, not I32
    ("float64", lambda s: s["$dict"][0][1].update(dtype="object")),
    ("float64", lambda s: s["$dict"][0][1].update({"$ndarray": "missing"})),
    ("float64", lambda s: s["$dict"][1][1].update({"$npscalar": 1.5})),   # a float as int64
    ("float64", lambda s: s["$dict"][1][1].update({"$npscalar": 2 ** 70})),
    ("int32", lambda s: s["$dict"][2][1].update({"$tensor": "a"})),  # a tensor on an I32 entry
], ids=["dtype_mismatch", "unknown_dtype", "missing_entry", "float_int", "overflow",
        "tensor_on_int32"])
def test_hostile_numpy_nodes_are_refused(a_dtype, edit):
    obj = {"a": np.zeros(3, a_dtype), "n": np.int64(4), "t": mt.ones(2)}
    with pytest.raises(CheckpointError):
        mt.load(_resealed(obj, edit))
