"""mt.load reads torch.save's zip checkpoints: tensors of every dtype over shared storages
(views stay views), parameters, nested containers, dtypes, devices and sizes, mmap and
map_location; a global outside the allow-list is refused with torch's weights-only error and
nothing is imported. The archives are written by torch when it is installed, and by hand
(the pickle assembled opcode by opcode) when it is not."""
import io
import pickle
import zipfile

import numpy as np
import pytest

import minitorch as mt

try:
    import torch
except ImportError:
    torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")


# ---- a torch checkpoint written without torch ---------------------------------------------------
class _Pickle:
    """Pickle protocol 2 opcodes, enough for torch's state dicts."""

    def __init__(self):
        self.out = bytearray(b"\x80\x02")

    def global_(self, module, name):
        self.out += b"c" + module.encode() + b"\n" + name.encode() + b"\n"

    def text(self, value):
        data = value.encode()
        self.out += b"X" + len(data).to_bytes(4, "little") + data

    def integer(self, value):
        self.out += b"J" + value.to_bytes(4, "little", signed=True)

    def ints(self, values):
        self.out += b"("
        for v in values:
            self.integer(v)
        self.out += b"t"

    def ordered_dict(self):
        self.global_("collections", "OrderedDict")
        self.out += b")R"

    def tensor(self, key, storage_type, numel, offset, size, stride):
        self.global_("torch._utils", "_rebuild_tensor_v2")
        self.out += b"(("
        self.text("storage")
        self.global_("torch", storage_type)
        self.text(key)
        self.text("cpu")
        self.integer(numel)
        self.out += b"tQ"                       # TUPLE, BINPERSID
        self.integer(offset)
        self.ints(size)
        self.ints(stride)
        self.out += b"\x89"                     # requires_grad False
        self.ordered_dict()
        self.out += b"tR"


def _archive(pickled, storages):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("archive/data.pkl", bytes(pickled))
        archive.writestr("archive/byteorder", "little")
        for key, array in storages.items():
            archive.writestr(f"archive/data/{key}", array.astype(array.dtype.newbyteorder("<"))
                             .tobytes())
        archive.writestr("archive/version", "3\n")
    return buffer.getvalue()


def _hand_made_checkpoint(extra_global=None):
    """{'weight': 2 x 3 float32, 'row': weight[1] (a view of the same storage), 'steps':
    int64 scalar, 'flags': bool}, pickled as torch pickles a state dict."""
    p = _Pickle()
    p.ordered_dict()
    p.out += b"("
    p.text("weight")
    p.tensor("0", "FloatStorage", 6, 0, (2, 3), (3, 1))
    p.text("row")
    p.tensor("0", "FloatStorage", 6, 3, (3,), (1,))
    p.text("steps")
    p.tensor("1", "LongStorage", 1, 0, (), ())
    p.text("flags")
    p.tensor("2", "BoolStorage", 2, 0, (2,), (1,))
    if extra_global is not None:
        p.text("extra")
        p.global_(*extra_global)
        p.out += b")R"
    p.out += b"u."                              # SETITEMS, STOP
    storages = {"0": np.arange(6, dtype=np.float32), "1": np.array([7], np.int64),
                "2": np.array([1, 0], np.uint8)}
    return _archive(p.out, storages)


def test_a_hand_made_torch_checkpoint_loads(tmp_path):
    path = tmp_path / "model.pt"
    path.write_bytes(_hand_made_checkpoint())
    for kwargs in ({}, {"mmap": True}, {"map_location": "cpu"}):
        state = mt.load(path, **kwargs)
        assert list(state) == ["weight", "row", "steps", "flags"]
        assert state["weight"].tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
        assert state["steps"].item() == 7 and state["steps"].dtype is mt.int64
        assert state["flags"].tolist() == [True, False]
        state["weight"][1, 0] = 42.0            # one storage: the view sees the write
        assert state["row"].tolist() == [42.0, 4.0, 5.0]
    assert mt.load(io.BytesIO(path.read_bytes()))["row"].tolist() == [3.0, 4.0, 5.0]


@pytest.mark.parametrize("name, message", [
    (("os", "getcwd"), "unsupported GLOBAL os.getcwd whose module os is blocked"),
    (("collections", "namedtuple"), "Unsupported global: GLOBAL collections.namedtuple was "
                                    "not an allowed global by default")])
def test_globals_outside_the_allow_list_are_refused_without_importing(tmp_path, monkeypatch,
                                                                        name, message):
    path = tmp_path / "evil.pt"
    path.write_bytes(_hand_made_checkpoint(extra_global=name))
    imported = []
    monkeypatch.setattr(mt.serialization._safe_globals.Importer, "resolve",
                        lambda self, module, name: imported.append(module))
    with pytest.raises(pickle.UnpicklingError, match=message):
        mt.load(path)
    assert imported == []


def test_damaged_archives_are_checkpoint_errors(tmp_path):
    data = _hand_made_checkpoint()
    path = tmp_path / "cut.pt"
    path.write_bytes(data[:len(data) // 2])
    with pytest.raises(mt.serialization.CheckpointError):
        mt.load(path)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("archive/data.pkl", b"\x80\x02}.")
        archive.writestr("archive/byteorder", "big")
    path.write_bytes(buffer.getvalue())
    with pytest.raises(mt.serialization.CheckpointError, match="big-endian"):
        mt.load(path)


# ---- written by torch ----------------------------------------------------------------------------
@needs_torch
def test_state_dicts_and_checkpoints_torch_wrote(tmp_path):
    source = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.BatchNorm1d(2))
    state = source.state_dict()
    state["transposed"] = torch.arange(6).view(2, 3).t()
    for dtype in (torch.float16, torch.bfloat16, torch.float64, torch.int8, torch.uint8,
                  torch.complex64, torch.bool):
        state[str(dtype)] = torch.ones(3, dtype=dtype)
    optimizer = torch.optim.SGD(source.parameters(), lr=0.1, momentum=0.9)
    source(torch.randn(4, 3)).sum().backward()
    optimizer.step()
    path = tmp_path / "checkpoint.pt"
    torch.save({"model": state, "optimizer": optimizer.state_dict(), "epoch": 3,
                "dtype": torch.float64, "device": torch.device("cpu"),
                "size": torch.Size([2, 3]), "parameter": torch.nn.Parameter(torch.ones(2))},
               path)
    loaded = mt.load(path)
    for name, tensor in state.items():
        ours = loaded["model"][name]
        assert ours.shape == tuple(tensor.shape) and ours.stride() == tensor.stride(), name
        assert str(ours.dtype).split(".")[1] == str(tensor.dtype).split(".")[1], name
        np.testing.assert_array_equal(ours.float().numpy() if ours.dtype is mt.bfloat16
                                      else ours.numpy(), tensor.float().numpy()
                                      if tensor.dtype is torch.bfloat16 else tensor.numpy())
    assert loaded["epoch"] == 3 and loaded["dtype"] is mt.float64
    assert loaded["device"] == mt.device("cpu") and loaded["size"] == (2, 3)
    assert isinstance(loaded["parameter"], mt.nn.Parameter) and loaded["parameter"].requires_grad
    momentum = loaded["optimizer"]["state"][0]["momentum_buffer"]
    np.testing.assert_allclose(momentum.numpy(),
                               optimizer.state_dict()["state"][0]["momentum_buffer"].numpy())
    target = mt.nn.Sequential(mt.nn.Linear(3, 2), mt.nn.BatchNorm1d(2))
    target.load_state_dict({k: v for k, v in loaded["model"].items() if k[0] in "01"})
    np.testing.assert_array_equal(target[0].weight.detach().numpy(),
                                  source[0].weight.detach().numpy())


@needs_torch
def test_a_whole_pickled_module_is_refused_as_torch_refuses_it(tmp_path):
    path = tmp_path / "module.pt"
    torch.save(torch.nn.Linear(2, 2), path)
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        mt.load(path)
