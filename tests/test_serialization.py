"""mt.save / mt.load: exact round trips, the safetensors layout, atomic writes, and hostile or
damaged files (which must raise CheckpointError and nothing else)."""
import collections
import io
import json
import math
import os
import struct

import numpy as np
import pytest

import minitorch as mt
from minitorch.serialization import CheckpointError, load, save


def _roundtrip(obj, **load_kwargs):
    buffer = io.BytesIO()
    save(obj, buffer)
    buffer.seek(0)
    return load(buffer, **load_kwargs)


def _same_tensor(a, b):
    assert isinstance(b, mt.Tensor)
    assert a.dtype == b.dtype and a.shape == b.shape and a.device == b.device
    assert a.requires_grad == b.requires_grad
    x, y = a.detach().cpu().numpy(), b.detach().cpu().numpy()
    assert x.tobytes() == np.ascontiguousarray(y).tobytes()  # bit-exact, NaN payloads included


def _sample_state():
    rng = np.random.default_rng(0)
    return {
        "model": collections.OrderedDict([
            ("fc.weight", mt.tensor(rng.standard_normal((4, 3)), dtype=mt.float32)),
            ("fc.bias", mt.tensor(rng.standard_normal(4))),
        ]),
        "optim": {"state": {0: {"step": mt.tensor(3.0), "exp_avg": mt.zeros(4, 3)},
                            1: {"step": mt.tensor(3.0), "exp_avg": mt.ones(4)}},
                  "param_groups": [{"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8,
                                    "weight_decay": 0, "amsgrad": False, "params": [0, 1],
                                    "name": None}]},
        "epoch": 7,
        "best": float("inf"),
        "tags": ["a", "b"],
        (1, "x"): "tuple key",
        2.5: "float key",
    }


# ---- round trips --------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [mt.float32, mt.float64, mt.int64, mt.bool, mt.complex64,
                                   mt.complex128])
def test_roundtrip_every_dtype_bit_exact(dtype, device):
    values = np.array([[0.0, -0.0, 1.5, np.nan], [np.inf, -np.inf, 1e-45, 3.4e38]])
    if dtype.is_complex:
        values = values + 1j * values[::-1, ::-1]
    if dtype is mt.int64:
        values = np.array([[0, -1, 2 ** 62, -2 ** 63], [5, 6, 7, 2 ** 63 - 1]])
    elif dtype is mt.bool:
        values = np.array([[True, False, True, True], [False, False, True, False]])
    t = mt.tensor(values, dtype=dtype, device=device)
    _same_tensor(t, _roundtrip(t))


def test_roundtrip_special_shapes(device):
    cases = [mt.tensor(2.5, device=device), mt.zeros(0, device=device),
             mt.zeros(3, 0, 2, dtype=mt.int64, device=device),
             mt.tensor(True, device=device)]
    for t in cases:
        _same_tensor(t, _roundtrip(t))


def test_roundtrip_non_contiguous(device):
    base = mt.tensor(np.arange(24.0).reshape(2, 3, 4), device=device)
    for view in (base.permute(2, 0, 1), base[:, ::2, 1:], base.transpose(0, 2),
                 base.expand(2, 2, 3, 4)):
        assert not view.is_contiguous()
        loaded = _roundtrip(view)
        _same_tensor(view, loaded)
        assert loaded.is_contiguous()


def test_roundtrip_nested_state():
    state = _sample_state()
    loaded = _roundtrip(state)
    assert type(loaded["model"]) is collections.OrderedDict
    assert list(loaded["model"]) == ["fc.weight", "fc.bias"]
    for key in ("fc.weight", "fc.bias"):
        _same_tensor(state["model"][key], loaded["model"][key])
    assert set(loaded["optim"]["state"]) == {0, 1}  # int keys stay ints
    _same_tensor(state["optim"]["state"][1]["exp_avg"], loaded["optim"]["state"][1]["exp_avg"])
    assert loaded["optim"]["param_groups"] == state["optim"]["param_groups"]
    assert loaded["optim"]["param_groups"][0]["betas"] == (0.9, 0.999)
    assert loaded["epoch"] == 7 and isinstance(loaded["epoch"], int)
    assert loaded["best"] == math.inf and loaded["tags"] == ["a", "b"]
    assert loaded[(1, "x")] == "tuple key" and loaded[2.5] == "float key"


def test_roundtrip_scalars_and_misc():
    obj = [None, True, False, 0, -3, 2 ** 70, 1.25, float("nan"), -math.inf, "ü", (),
           mt.float64, mt.device("cpu"), mt.Size([2, 3]), np.float32(0.5), np.int64(4)]
    loaded = _roundtrip(obj)
    assert loaded[:7] == [None, True, False, 0, -3, 2 ** 70, 1.25]
    assert math.isnan(loaded[7]) and loaded[8] == -math.inf and loaded[9] == "ü"
    assert loaded[10] == () and loaded[11] is mt.float64 and loaded[12] == mt.device("cpu")
    assert isinstance(loaded[13], mt.Size) and loaded[13] == (2, 3)
    assert loaded[14] == 0.5 and loaded[15] == 4


def test_complex_state_dict_views_and_grad(device):
    """Complex tensors are C64 / C128 entries (safetensors' names): a module's complex
    parameter, views sharing one storage and requires_grad come back as saved."""
    model = mt.nn.Linear(2, 3, device=device)
    model.weight = mt.nn.Parameter(mt.tensor([[1j, 2], [3, -4j], [0.5, 1 + 1j]], device=device))
    loaded = _roundtrip(model.state_dict())
    for key, value in model.state_dict().items():
        _same_tensor(value, loaded[key])
    z = mt.tensor([[1 + 2j, -3j], [0.5, 4 - 1j]], dtype=mt.complex128, device=device)
    loaded = _roundtrip({"z": z, "row": z[1], "col": z[:, 1], "w": z.clone().requires_grad_()})
    _same_tensor(z[:, 1], loaded["col"])
    assert loaded["w"].requires_grad and loaded["w"].dtype is mt.complex128
    loaded["z"][1, 0] = 9j                      # the views share the loaded storage
    assert loaded["row"][0].item() == 9j
    buffer = io.BytesIO()
    save({"z": z, "f": mt.view_as_real(z)}, buffer)
    header = json.loads(buffer.getvalue()[8:8 + struct.unpack("<Q", buffer.getvalue()[:8])[0]])
    assert header["z"]["dtype"] == "C128" and header["f"]["dtype"] == "F64"
    assert header["z"]["shape"] == [2, 2] and header["f"]["shape"] == [2, 2, 2]


def test_shared_tensor_loads_as_one_object():
    t = mt.ones(3)
    loaded = _roundtrip({"a": t, "b": [t]})
    assert loaded["a"] is loaded["b"][0]


def test_requires_grad_is_kept():
    w = mt.ones(2, requires_grad=True)
    loaded = _roundtrip({"w": w, "d": w.detach()})
    assert loaded["w"].requires_grad and loaded["w"].is_leaf
    assert not loaded["d"].requires_grad


def test_save_rejects_unsupported_objects():
    with pytest.raises(TypeError, match="cannot store an object of type object"):
        save({"x": object()}, io.BytesIO())
    with pytest.raises(TypeError, match="dict keys must be"):
        save({mt.ones(1): 1}, io.BytesIO())
    deep = []
    for _ in range(200):
        deep = [deep]
    with pytest.raises(ValueError, match="nested deeper"):
        save(deep, io.BytesIO())


# ---- files --------------------------------------------------------------------------------------
def test_save_to_path_is_atomic(tmp_path):
    path = tmp_path / "ckpt.safetensors"
    save({"w": mt.ones(2)}, path)
    save({"w": mt.zeros(2)}, str(path))  # replaces the old file
    assert os.listdir(tmp_path) == ["ckpt.safetensors"]  # no temp file left behind
    assert load(path)["w"].tolist() == [0.0, 0.0]

    class Unsavable:
        pass

    with pytest.raises(TypeError):
        save({"w": mt.ones(2), "bad": Unsavable()}, path)
    assert load(path)["w"].tolist() == [0.0, 0.0]  # a failed save leaves the old checkpoint
    assert os.listdir(tmp_path) == ["ckpt.safetensors"]


def test_save_failure_while_writing_cleans_up(tmp_path, monkeypatch):
    path = tmp_path / "ckpt"
    save({"v": 1}, path)

    def broken_fsync(fd):
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(OSError, match="disk full"):
        save({"v": 2}, path)
    monkeypatch.undo()
    assert load(path) == {"v": 1} and os.listdir(tmp_path) == ["ckpt"]


def test_file_objects(tmp_path):
    with open(tmp_path / "f.bin", "wb") as f:
        save([mt.arange(3)], f)
    with open(tmp_path / "f.bin", "rb") as f:
        assert load(f)[0].tolist() == [0, 1, 2]


def test_layout_is_safetensors(tmp_path):
    path = tmp_path / "model.safetensors"
    state = _sample_state()
    save(state, path)
    data = path.read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    assert n % 8 == 0 and data[8:9] == b"{"
    header = json.loads(data[8:8 + n])
    assert set(header["model.fc.weight"]) == {"dtype", "shape", "data_offsets"}
    assert header["model.fc.weight"]["dtype"] == "F32"
    assert header["model.fc.weight"]["shape"] == [4, 3]
    assert header["model.fc.bias"]["dtype"] == "F64"
    assert all(isinstance(v, str) for v in header["__metadata__"].values())


def test_safetensors_reads_our_files(tmp_path):
    safetensors_numpy = pytest.importorskip("safetensors.numpy")
    path = tmp_path / "model.safetensors"
    state = _sample_state()
    save(state, path)
    tensors = safetensors_numpy.load_file(str(path))
    np.testing.assert_array_equal(tensors["model.fc.weight"], state["model"]["fc.weight"].numpy())
    assert tensors["optim.state.1.exp_avg"].dtype == np.float32
    assert tensors["optim.state.0.step"].shape == ()
    flags = mt.tensor([True, False])
    save({"flags": flags, "empty": mt.zeros(0, 2, dtype=mt.int64)}, path)
    tensors = safetensors_numpy.load_file(str(path))
    assert tensors["flags"].dtype == np.bool_ and tensors["flags"].tolist() == [True, False]
    assert tensors["empty"].shape == (0, 2) and tensors["empty"].dtype == np.int64


# ---- map_location --------------------------------------------------------------------------------
def test_map_location_forms(device):
    t = mt.ones(2, device=device)
    for location in (None, "cpu", mt.device("cpu"), {device: "cpu"}):
        if location is None and device == "cuda":
            continue
        loaded = _roundtrip({"t": t}, map_location=location)["t"]
        assert loaded.device == (mt.device(device) if location is None else mt.device("cpu"))
    if device == "cuda":
        assert _roundtrip(mt.ones(1), map_location="cuda").device == mt.device("cuda")
    with pytest.raises(TypeError, match="map_location should be"):
        _roundtrip(t, map_location=3)


def test_cuda_checkpoint_without_cuda():
    if mt.cuda.is_available():
        pytest.skip("CUDA is available here")
    buffer = io.BytesIO()
    save({"t": mt.ones(1)}, buffer)
    data = buffer.getvalue()
    header = _header_of(data)
    meta = header["__metadata__"]
    meta["structure"] = meta["structure"].replace('"device":"cpu"', '"device":"cuda"')
    data = _reseal(data, header)
    with pytest.raises(RuntimeError, match="Attempting to deserialize object on a CUDA device"):
        load(io.BytesIO(data))
    assert load(io.BytesIO(data), map_location="cpu")["t"].device == mt.device("cpu")


# ---- damaged and hostile files -------------------------------------------------------------------
def _valid_file():
    buffer = io.BytesIO()
    save(_sample_state(), buffer)
    return buffer.getvalue()


def _reseal(data, header=None):
    """Rebuild a file around an edited header, with a correct checksum, so only the edit is
    wrong (tests the structural checks, not the checksum)."""
    from minitorch.serialization import _digest
    (n,) = struct.unpack("<Q", data[:8])
    header = header if header is not None else json.loads(data[8:8 + n])
    payload = data[8 + n:]
    meta = header["__metadata__"]
    table = {k: v for k, v in header.items() if k != "__metadata__"}
    try:
        meta["sha256"] = _digest(meta["structure"], table, payload)
    except (KeyError, TypeError, AttributeError):
        pass
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + payload


def _header_of(data):
    (n,) = struct.unpack("<Q", data[:8])
    return json.loads(data[8:8 + n])


def _expect_error(data):
    with pytest.raises(CheckpointError):
        load(io.BytesIO(data))


def test_truncations_and_bad_lengths():
    data = _valid_file()
    for cut in (0, 3, 8, 20, len(data) // 2, len(data) - 1):
        _expect_error(data[:cut])
    _expect_error(struct.pack("<Q", 2 ** 63) + data[8:])
    _expect_error(struct.pack("<Q", 1) + data[8:])
    _expect_error(struct.pack("<Q", 200_000_000) + b" " * 64)
    _expect_error(data + b"extra")


def test_checksum_mismatch():
    data = bytearray(_valid_file())
    data[-3] ^= 0x10
    with pytest.raises(CheckpointError, match="checksum"):
        load(io.BytesIO(bytes(data)))


def _edit(mutate):
    data = _valid_file()
    header = _header_of(data)
    mutate(header)
    return _reseal(data, header)


@pytest.mark.parametrize("mutate", [
    lambda h: h["model.fc.bias"].update(dtype="F16"),
    lambda h: h["model.fc.bias"].update(dtype=7),
    lambda h: h["model.fc.bias"].update(shape=[-4]),
    lambda h: h["model.fc.bias"].update(shape=[True] * 4),
    lambda h: h["model.fc.bias"].update(shape=[5]),
    lambda h: h["model.fc.bias"].update(data_offsets=[0, 10 ** 12]),
    lambda h: h["model.fc.bias"].update(data_offsets=[0]),
    lambda h: h["model.fc.bias"].update(extra=1),
    lambda h: h["model.fc.weight"].update(data_offsets=h["model.fc.bias"]["data_offsets"]),
    lambda h: h.__setitem__("ghost", {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}),
    lambda h: h.__setitem__("__metadata__", {"format": "minitorch-checkpoint/99"}),
    lambda h: h["__metadata__"].update(format=1),
    lambda h: h["__metadata__"].update(structure="{not json"),
    lambda h: h["__metadata__"].update(structure='{"$tensor": "missing"}'),
    lambda h: h["__metadata__"].update(structure='{"$eval": "os.system"}'),
    lambda h: h["__metadata__"].update(structure='{"$dict": [[[1], 2]]}'),
    lambda h: h["__metadata__"].update(structure='{"$dict": [[1]]}'),
    lambda h: h["__metadata__"].update(structure='{"$float": "1e999"}'),
    lambda h: h["__metadata__"].update(structure='{"$dtype": "complex32"}'),
    lambda h: h["__metadata__"].update(structure='{"$device": "tpu"}'),
    lambda h: h["__metadata__"].update(structure='{"$size": [1.5]}'),
    lambda h: h["__metadata__"].update(structure='{"$tensor": "model.fc.bias", "device": 3}'),
    lambda h: h["__metadata__"].update(structure='{"$tensor": "model.fc.bias", "device": "x"}'),
    lambda h: h["__metadata__"].update(structure='{"$tuple": 5}'),
    lambda h: h["__metadata__"].update(structure="[" * 5000 + "]" * 5000),
    lambda h: h["__metadata__"].update(structure='{"$tuple": ' * 150 + "[]" + "}" * 150),
])
def test_structural_corruption(mutate):
    _expect_error(_edit(mutate))


def test_bool_bytes_must_be_zero_or_one():
    buffer = io.BytesIO()
    save({"b": mt.tensor([True, False])}, buffer)
    data = bytearray(buffer.getvalue())
    data[-1] = 7
    _expect_error(_reseal(bytes(data)))


def test_non_json_and_non_object_headers():
    for header in (b"\xff\xfe", b"[1, 2]", b"nope", b'"text"'):
        _expect_error(struct.pack("<Q", len(header)) + header)
    foreign = json.dumps({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}).encode()
    _expect_error(struct.pack("<Q", len(foreign)) + foreign + b"\0" * 3)  # plain, truncated


def test_fuzzed_files_raise_only_checkpoint_error():
    """Random byte flips and truncations of a valid file: each either still loads to the same
    object (a flip in the header's padding whitespace can be harmless) or raises
    CheckpointError; nothing else escapes, nothing crashes."""
    data = _valid_file()
    reference = _roundtrip(_sample_state())
    rng = np.random.default_rng(1234)
    for case in range(400):
        mutated = bytearray(data)
        if case % 4 == 3:
            mutated = mutated[:rng.integers(0, len(data))]
        else:
            for _ in range(rng.integers(1, 4)):
                mutated[rng.integers(0, len(data))] ^= 1 << int(rng.integers(0, 8))
        try:
            loaded = load(io.BytesIO(bytes(mutated)))
        except CheckpointError:
            continue
        assert loaded.keys() == reference.keys()
        assert loaded["epoch"] == reference["epoch"]
