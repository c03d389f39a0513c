"""Checkpoints under stress and across producers: saves killed mid-write leave nothing behind,
file modes follow the umask, save/load/randn stream with a bounded peak, views of one storage
load sharing it, map_location functions, plain safetensors files, torch .pt files refused,
and load_state_dict from numpy / torch state dicts."""
import io
import json
import os
import pickle
import random
import select
import signal
import struct
import time
import tracemalloc
import zipfile

import numpy as np
import pytest

import minitorch as mt
from minitorch.serialization import CheckpointError, _digest, load, save
from minitorch.serialization._atomic import temp_files

KILL_TIMEOUT_S = 10


# ---- killed saves -------------------------------------------------------------------------------
def _fork_saver(path, state, stall_in_fsync=False):
    """(pid, pipe) of a child that saves `state` to `path` over and over, writing one byte to
    the pipe as each save starts. With stall_in_fsync it stops in its first save's fsync (temp
    file complete and locked) and writes b"x" there."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:                                     # the child: never returns to pytest
        try:
            os.close(read_end)
            if stall_in_fsync:
                os.fsync = lambda fd: (os.write(write_end, b"x"), time.sleep(KILL_TIMEOUT_S))
            while True:
                os.write(write_end, b"s")
                save(state, path)
        finally:
            os._exit(0)
    os.close(write_end)
    return pid, read_end


def _read_byte(fd):
    ready, _, _ = select.select([fd], [], [], KILL_TIMEOUT_S)
    assert ready, "the saving child did not start in time"
    return os.read(fd, 1)


def _kill(pid, fd):
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + KILL_TIMEOUT_S
    while os.waitpid(pid, os.WNOHANG) == (0, 0):
        assert time.monotonic() < deadline, "the killed child did not exit"
        time.sleep(0.005)
    os.close(fd)


def test_saves_killed_at_random_times_leave_no_temp_file_after_the_next_save(tmp_path):
    path = tmp_path / "ckpt.safetensors"
    state = {"w": mt.ones(2_000_000), "step": 3}
    rng = random.Random(0)
    for _ in range(4):
        pid, fd = _fork_saver(path, state)
        _read_byte(fd)
        time.sleep(rng.uniform(0, 0.03))
        _kill(pid, fd)
    save({"w": mt.zeros(3), "step": 4}, path)
    assert temp_files(str(tmp_path), path.name) == []
    assert os.listdir(tmp_path) == [path.name]
    loaded = load(path)
    assert loaded["step"] == 4 and loaded["w"].tolist() == [0.0, 0.0, 0.0]


def test_a_live_writers_temp_file_is_kept_and_removed_once_it_is_killed(tmp_path):
    path = tmp_path / "ckpt"
    pid, fd = _fork_saver(path, {"w": mt.ones(1000)}, stall_in_fsync=True)
    try:
        while _read_byte(fd) != b"x":
            pass
        (live,) = temp_files(str(tmp_path), "ckpt")
        save({"v": 1}, path)                  # another writer meanwhile: the live temp stays
        assert temp_files(str(tmp_path), "ckpt") == [live]
    finally:
        _kill(pid, fd)
    save({"v": 2}, path)                      # its writer is dead now: removed
    assert os.listdir(tmp_path) == ["ckpt"] and load(path) == {"v": 2}


def test_only_temp_files_of_the_same_target_are_removed(tmp_path):
    (tmp_path / ".other.abcd1234.tmp").write_bytes(b"x")
    (tmp_path / ".ckpt.notatemp").write_bytes(b"x")
    (tmp_path / ".ckpt.0123abcd.tmp").write_bytes(b"stale")
    save({"v": 1}, tmp_path / "ckpt")
    assert sorted(os.listdir(tmp_path)) == [".ckpt.notatemp", ".other.abcd1234.tmp", "ckpt"]


# ---- file modes and paths -----------------------------------------------------------------------
@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_new_files_follow_the_umask(tmp_path, umask):
    old = os.umask(umask)
    try:
        save({"v": 1}, tmp_path / "ckpt")
        with open(tmp_path / "plain", "wb"):
            pass
    finally:
        os.umask(old)
    mode = os.stat(tmp_path / "ckpt").st_mode & 0o777
    assert mode == 0o666 & ~umask == os.stat(tmp_path / "plain").st_mode & 0o777


def test_new_file_mode_matches_torch(tmp_path):
    torch = pytest.importorskip("torch", reason="torch is not installed")
    old = os.umask(0o022)
    try:
        save({"v": 1}, tmp_path / "ours")
        torch.save({"v": 1}, tmp_path / "theirs")
    finally:
        os.umask(old)
    assert os.stat(tmp_path / "ours").st_mode == os.stat(tmp_path / "theirs").st_mode


def test_overwriting_keeps_the_files_mode(tmp_path):
    path = tmp_path / "ckpt"
    save({"v": 1}, path)
    os.chmod(path, 0o640)
    save({"v": 2}, path)
    assert os.stat(path).st_mode & 0o777 == 0o640 and load(path) == {"v": 2}


def test_missing_parent_directory_raises_torchs_error(tmp_path):
    with pytest.raises(RuntimeError, match=r"^Parent directory .*nowhere does not exist\.$"):
        save({"v": 1}, tmp_path / "nowhere" / "ckpt")
    relative = os.path.join("no_such_dir_for_minitorch", "ckpt")
    with pytest.raises(RuntimeError) as ours:
        save({"v": 1}, relative)
    assert str(ours.value) == "Parent directory no_such_dir_for_minitorch does not exist."
    assert not os.path.exists(tmp_path / "nowhere")


def test_missing_parent_directory_message_matches_torch(tmp_path):
    torch = pytest.importorskip("torch", reason="torch is not installed")
    path = str(tmp_path / "nowhere" / "ckpt")
    with pytest.raises(RuntimeError) as theirs:
        torch.save(1, path)
    with pytest.raises(RuntimeError) as ours:
        save(1, path)
    assert str(ours.value) == str(theirs.value)


# ---- peak memory --------------------------------------------------------------------------------
N = 2_000_000     # 8 MB of float32


def _peak_ratio(action, nbytes):
    """Peak of traced allocations (numpy's buffers included) during `action` / nbytes, and its
    result (kept alive: a loaded tensor is part of the peak it causes)."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        result = action()
        return (tracemalloc.get_traced_memory()[1] - before) / nbytes, result
    finally:
        tracemalloc.stop()


def test_save_streams_without_copying_the_tensors(tmp_path):
    state = {"a": mt.ones(N), "b": mt.ones(N // 2, 2).t()}     # contiguous and transposed
    ratio, _ = _peak_ratio(lambda: save(state, tmp_path / "ckpt"), 2 * N * 4)
    assert ratio < 0.6     # the transposed one goes in blocks (the old code: 2x)
    ratio, _ = _peak_ratio(lambda: save({"a": state["a"]}, tmp_path / "ckpt"), N * 4)
    assert ratio < 0.05


def test_load_peaks_at_the_tensor_bytes(tmp_path):
    save({"a": mt.ones(N)}, tmp_path / "ckpt")
    ratio, loaded = _peak_ratio(lambda: load(tmp_path / "ckpt"), N * 4)
    assert ratio <= 1.2 and loaded["a"].sum().item() == N       # the old code: 3x
    ratio, mapped = _peak_ratio(lambda: load(tmp_path / "ckpt", mmap=True), N * 4)
    assert ratio < 0.05 and mapped["a"].sum().item() == N


@pytest.mark.parametrize("dtype", [mt.float32, mt.float64])
def test_random_fills_peak_at_their_output(dtype):
    for fill in (mt.randn, mt.rand):
        ratio, out = _peak_ratio(lambda: fill(N, dtype=dtype), N * dtype.itemsize)
        assert ratio <= 1.2 and out.dtype is dtype   # the old code: 3x for float32


# ---- random streams -----------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [mt.float32, mt.float64])
def test_random_fills_are_reproducible_and_well_distributed(dtype, device):
    mt.manual_seed(123)
    a = mt.randn(200, 300, dtype=dtype, device=device)
    u = mt.rand(200, 300, dtype=dtype, device=device)
    mt.manual_seed(123)
    assert mt.equal(a, mt.randn(200, 300, dtype=dtype, device=device))
    assert mt.equal(u, mt.rand(200, 300, dtype=dtype, device=device))
    g = mt.Generator().manual_seed(5)
    b = mt.randn(7, generator=g, dtype=dtype, device=device)
    assert mt.equal(b, mt.randn(7, generator=mt.Generator().manual_seed(5), dtype=dtype,
                                device=device))
    x, y = a.cpu().numpy(), u.cpu().numpy()
    assert abs(x.mean()) < 0.02 and abs(x.std() - 1) < 0.02
    assert 0 <= y.min() and y.max() < 1 and abs(y.mean() - 0.5) < 0.01
    assert a.device == mt.device(device) and a.dtype is dtype


def test_random_values_match_across_devices(device):
    mt.manual_seed(9)
    here = mt.randn(5, 4, device=device)
    mt.manual_seed(9)
    assert mt.equal(here.cpu(), mt.randn(5, 4))


# ---- views of one storage -----------------------------------------------------------------------
def _roundtrip(obj, **kwargs):
    buffer = io.BytesIO()
    save(obj, buffer)
    buffer.seek(0)
    return load(buffer, **kwargs)


def test_views_of_one_storage_load_as_views_of_one_storage(device):
    t = mt.arange(12.0, device=device).reshape(3, 4)
    loaded = _roundtrip({"w": t, "v": t[1], "u": t.t(), "s": t[:, 1:3], "d": t.detach()})
    w = loaded["w"]
    for key, view in (("v", t[1]), ("u", t.t()), ("s", t[:, 1:3]), ("d", t)):
        assert loaded[key].tolist() == view.tolist()
        assert loaded[key].stride() == view.stride()
    assert loaded["v"].data_ptr() == w.data_ptr() + 4 * w.element_size()
    w[1, 0] = -1.0
    assert loaded["v"][0].item() == -1.0 and loaded["u"][0, 1].item() == -1.0
    assert loaded["d"] is not w and loaded["d"][1, 0].item() == -1.0


def test_sharing_matches_torch():
    torch = pytest.importorskip("torch", reason="torch is not installed")
    buffer = io.BytesIO()
    t = torch.arange(6.0).reshape(2, 3)
    torch.save({"w": t, "v": t[1]}, buffer)
    buffer.seek(0)
    theirs = torch.load(buffer)
    w = mt.arange(6.0).reshape(2, 3)
    ours = _roundtrip({"w": w, "v": w[1]})
    for loaded in (theirs, ours):
        loaded["w"][1, 1] = 100.0
    assert ours["v"].tolist() == theirs["v"].tolist() == [3.0, 100.0, 5.0]
    assert ours["v"].stride() == theirs["v"].stride()


def test_views_without_their_base_share_the_span_they_cover():
    t = mt.arange(10.0)
    loaded = _roundtrip([t[2:5], t[4:8]])
    loaded[0][2] = -4.0
    assert loaded[1].tolist() == [-4.0, 5.0, 6.0, 7.0]


def test_parameters_and_grads_survive_sharing():
    w = mt.nn.Parameter(mt.ones(2, 3))
    loaded = _roundtrip({"w": w, "row": w[0], "frozen": w.detach()})
    assert isinstance(loaded["w"], mt.nn.Parameter) and loaded["w"].requires_grad
    assert loaded["row"].requires_grad and loaded["row"].is_leaf
    assert not loaded["frozen"].requires_grad
    (loaded["w"] * 2).sum().backward()
    assert loaded["w"].grad.tolist() == [[2.0] * 3] * 2


def test_a_lone_view_is_still_written_compactly(tmp_path):
    base = mt.arange(1000.0)
    save({"x": base[10:20]}, tmp_path / "ckpt")
    assert os.path.getsize(tmp_path / "ckpt") < 1000    # not the 8000-byte storage
    assert load(tmp_path / "ckpt")["x"].tolist() == list(range(10, 20))


def test_format_1_files_still_load():
    buffer = io.BytesIO()
    save({"a": mt.arange(3), "n": 2}, buffer)
    data = buffer.getvalue()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    header["__metadata__"]["format"] = "minitorch-checkpoint/1"
    text = json.dumps(header).encode()
    loaded = load(io.BytesIO(struct.pack("<Q", len(text)) + text + data[8 + n:]))
    assert loaded["a"].tolist() == [0, 1, 2] and loaded["n"] == 2


@pytest.mark.parametrize("view", [[[4], [1], 5], [[2], [-3], 0], [[2, 2], [1], 0],
                                  [[2], [1], -1], "x", [[-1], [1], 0]])
def test_hostile_views_are_refused(view):
    t = mt.arange(6.0)
    buffer = io.BytesIO()
    save({"w": t, "v": t[1:]}, buffer)
    data = buffer.getvalue()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    meta = header["__metadata__"]
    structure = json.loads(meta["structure"])
    structure["$dict"][1][1]["view"] = view
    meta["structure"] = json.dumps(structure)
    table = {k: v for k, v in header.items() if k != "__metadata__"}
    meta["sha256"] = _digest(meta["structure"], table, data[8 + n:])
    text = json.dumps(header).encode()
    with pytest.raises(CheckpointError):
        load(io.BytesIO(struct.pack("<Q", len(text)) + text + data[8 + n:]))


# ---- loading without aliasing, and mmap ---------------------------------------------------------
def test_loaded_tensors_do_not_alias_the_file(tmp_path):
    path = tmp_path / "ckpt"
    save({"a": mt.ones(4)}, path)
    plain, mapped = load(path), load(path, mmap=True)
    save({"a": mt.zeros(4)}, path)             # replaces the file
    assert plain["a"].tolist() == mapped["a"].tolist() == [1.0] * 4
    mapped["a"].add_(1)                        # copy-on-write: the file is not touched
    assert load(path)["a"].tolist() == [0.0] * 4


def test_mmap_needs_a_path():
    with pytest.raises(ValueError, match="f must be a file path in order to use the mmap"):
        load(io.BytesIO(b""), mmap=True)


# ---- map_location functions ---------------------------------------------------------------------
def test_map_location_function_gets_each_storage_and_its_location():
    t = mt.arange(6.0).reshape(2, 3)
    calls = []

    def keep(storage, location):
        calls.append((storage.shape, storage.dtype, location))

    loaded = _roundtrip({"w": t, "v": t[0], "i": mt.arange(2)}, map_location=keep)
    assert sorted(calls, key=str) == sorted([((6,), mt.float32, "cpu"),
                                            ((2,), mt.int64, "cpu")], key=str)
    assert loaded["v"].tolist() == [0.0, 1.0, 2.0]
    replaced = _roundtrip({"w": t, "v": t[0]},
                          map_location=lambda storage, location: storage * 10)
    assert replaced["v"].tolist() == [0.0, 10.0, 20.0]
    replaced["w"][0, 0] = 7.0
    assert replaced["v"][0].item() == 7.0      # the returned storage is shared too


def test_map_location_function_errors():
    with pytest.raises(TypeError, match="must return None or a storage"):
        _roundtrip({"w": mt.ones(3)}, map_location=lambda s, loc: "cpu")
    with pytest.raises(TypeError, match="must return None or a storage"):
        _roundtrip({"w": mt.ones(3)}, map_location=lambda s, loc: mt.ones(2))

    def broken(storage, location):
        raise KeyError("mine")

    with pytest.raises(KeyError, match="mine"):
        _roundtrip({"w": mt.ones(3)}, map_location=broken)


def test_map_location_function_calls_match_torch(tmp_path):
    torch = pytest.importorskip("torch", reason="torch is not installed")
    seen = []
    t = torch.arange(6.0).reshape(2, 3)
    torch.save({"w": t, "v": t[0]}, tmp_path / "t.pt")
    torch.load(tmp_path / "t.pt", map_location=lambda s, loc: seen.append(loc))
    ours = []
    w = mt.arange(6.0).reshape(2, 3)
    _roundtrip({"w": w, "v": w[0]}, map_location=lambda s, loc: ours.append(loc))
    assert ours == seen == ["cpu"]


# ---- other producers' files ---------------------------------------------------------------------
def _safetensors_file(entries, metadata=None):
    """A safetensors file written by hand from the spec: {name: (code, shape, bytes)}."""
    header, data = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, (code, shape, raw) in entries.items():
        header[name] = {"dtype": code, "shape": shape, "data_offsets": [len(data),
                                                                        len(data) + len(raw)]}
        data += raw
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + data


def test_plain_safetensors_files_load_as_a_dict_of_tensors():
    halves = np.array([1.5, -2.0, 65504.0], dtype=np.float16)
    bf16 = (np.array([1.5, -3.0], dtype=np.float32).view(np.uint32) >> 16).astype("<u2")
    data = _safetensors_file({
        "f32": ("F32", [2, 2], np.arange(4, dtype="<f4").tobytes()),
        "f16": ("F16", [3], halves.astype("<f2").tobytes()),
        "bf16": ("BF16", [2], bf16.tobytes()),
        "i32": ("I32", [2], np.array([-5, 7], dtype="<i4").tobytes()),
        "flags": ("BOOL", [2], b"\x01\x00"),
        "bytes": ("U8", [1], b"\xff"),
        "empty": ("F64", [0, 3], b""),
    }, metadata={"format": "pt"})
    loaded = load(io.BytesIO(data))
    assert list(loaded) == ["f32", "f16", "bf16", "i32", "flags", "bytes", "empty"]
    assert loaded["f32"].tolist() == [[0.0, 1.0], [2.0, 3.0]] and loaded["f32"].dtype is mt.float32
    assert loaded["f16"].tolist() == [1.5, -2.0, 65504.0] and loaded["f16"].dtype is mt.float16
    assert loaded["bf16"].tolist() == [1.5, -3.0] and loaded["bf16"].dtype is mt.bfloat16
    assert loaded["i32"].tolist() == [-5, 7] and loaded["i32"].dtype is mt.int32
    assert loaded["flags"].tolist() == [True, False] and loaded["bytes"].tolist() == [255]
    assert loaded["empty"].shape == (0, 3) and loaded["empty"].dtype is mt.float64


@pytest.mark.parametrize("entries, metadata", [
    ({"x": ("F8_E4M3", [1], b"\0")}, None),                      # a dtype we can't hold
    ({"x": ("F32", [2], b"\0" * 4)}, None),                      # offsets don't match shape
    ({"x": ("F32", [1], b"\0" * 4)}, {"format": 1}),             # metadata must be strings
    ({"x": ("BOOL", [1], b"\x02")}, None),
])
def test_malformed_plain_safetensors_files_are_refused(entries, metadata):
    with pytest.raises(CheckpointError):
        load(io.BytesIO(_safetensors_file(entries, metadata)))


def test_files_from_the_safetensors_package(tmp_path):
    st = pytest.importorskip("safetensors.numpy", reason="safetensors is not installed")
    tensors = {"weight": np.arange(6, dtype=np.float32).reshape(2, 3),
               "ids": np.array([1, 2], dtype=np.int32), "half": np.ones(2, np.float16)}
    st.save_file(tensors, str(tmp_path / "m.safetensors"), metadata={"source": "test"})
    loaded = load(tmp_path / "m.safetensors")
    for name, array in tensors.items():
        np.testing.assert_array_equal(loaded[name].numpy(), array)


def test_torch_zip_checkpoints_load_and_legacy_ones_are_refused_with_a_hint(tmp_path):
    """torch.save's zip format is read (tests/test_torch_checkpoints.py has the details); its
    pre-1.6 format, a bare pickle stream, is refused with a way to convert it."""
    torch = pytest.importorskip("torch", reason="torch is not installed")
    torch.save({"w": torch.ones(2)}, tmp_path / "new.pt")
    torch.save({"w": torch.ones(2)}, tmp_path / "old.pt", _use_new_zipfile_serialization=False)
    assert load(tmp_path / "new.pt")["w"].tolist() == [1.0, 1.0]
    with pytest.raises(CheckpointError, match=r"legacy format.*reads torch.save's zip format"):
        load(tmp_path / "old.pt")


class _Payload:
    def __reduce__(self):
        return (open, (os.environ["MINITORCH_PICKLE_SENTINEL"], "w"))


def test_pickles_are_never_unpickled(tmp_path, monkeypatch):
    sentinel = tmp_path / "unpickled"
    monkeypatch.setenv("MINITORCH_PICKLE_SENTINEL", str(sentinel))
    for protocol in (2, 4, 5):
        with pytest.raises(CheckpointError, match="pickle"):
            load(io.BytesIO(pickle.dumps(_Payload(), protocol=protocol)))
        archive = io.BytesIO()         # the same pickle as a torch zip checkpoint's data.pkl
        with zipfile.ZipFile(archive, "w") as z:
            z.writestr("archive/data.pkl", pickle.dumps(_Payload(), protocol=protocol))
        with pytest.raises(pickle.UnpicklingError, match="GLOBAL io.open"):
            load(io.BytesIO(archive.getvalue()))
        with pytest.raises(pickle.UnpicklingError, match="GLOBAL io.open"):
            load(io.BytesIO(archive.getvalue()), weights_only=True)
    assert not sentinel.exists()


# ---- load_state_dict from other libraries -------------------------------------------------------
def test_load_state_dict_accepts_numpy_arrays():
    layer = mt.nn.Linear(3, 2)
    weight = np.arange(6, dtype=np.float32).reshape(2, 3)
    layer.load_state_dict({"weight": weight, "bias": np.array([1.0, -1.0])})
    assert layer.weight.tolist() == weight.tolist() and layer.bias.tolist() == [1.0, -1.0]
    assert layer.weight.dtype is mt.float32 and isinstance(layer.weight, mt.nn.Parameter)
    with pytest.raises(RuntimeError, match="size mismatch"):
        layer.load_state_dict({"weight": np.zeros((3, 3)), "bias": np.zeros(2)})


def test_load_state_dict_accepts_torch_tensors():
    torch = pytest.importorskip("torch", reason="torch is not installed")
    theirs = torch.nn.Linear(3, 2)
    ours = mt.nn.Linear(3, 2)
    ours.load_state_dict(theirs.state_dict())
    np.testing.assert_array_equal(ours.weight.detach().numpy(), theirs.weight.detach().numpy())
    np.testing.assert_array_equal(ours.bias.detach().numpy(), theirs.bias.detach().numpy())
    ours.load_state_dict({k: v.to(torch.bfloat16) for k, v in theirs.state_dict().items()})
    assert ours.weight.dtype is mt.float32


# ---- file objects -------------------------------------------------------------------------------
class _WriteOnly:
    def __init__(self):
        self.buffer = io.BytesIO()

    def write(self, data):
        return self.buffer.write(data)


class _ReadOnly:
    def __init__(self, data):
        self.buffer = io.BytesIO(data)

    def read(self, n=-1):
        return self.buffer.read(n)


def test_streams_that_cannot_seek(tmp_path):
    out = _WriteOnly()
    save({"a": mt.arange(3), "b": mt.ones(2, 2).t()}, out)
    loaded = load(_ReadOnly(out.buffer.getvalue()))
    assert loaded["a"].tolist() == [0, 1, 2] and loaded["b"].tolist() == [[1.0, 1.0]] * 2
    with open(tmp_path / "log", "wb") as f:
        f.write(b"")
    with open(tmp_path / "log", "ab") as f:      # append mode: no seeking back to patch
        save({"a": mt.arange(3)}, f)
    assert load(tmp_path / "log")["a"].tolist() == [0, 1, 2]
