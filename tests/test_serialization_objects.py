"""mt.save / mt.load of whole objects (torch.save(model) / torch.load), still without pickle:
models and other objects round-trip by class name and state, keep their identity (tied weights,
shared submodules, cycles), and load under torch's weights_only rules (allow-list by default,
import with weights_only=False) with torch's errors."""
import argparse
import collections
import enum
import io
import json
import os
import pickle
import re
import struct
import sys
import warnings

import numpy as np
import pytest

import minitorch as mt
import minitorch.nn.functional as F
from minitorch import nn
from minitorch.serialization import (
    CheckpointError,
    _digest,
    add_safe_globals,
    clear_safe_globals,
    get_safe_globals,
    load,
    safe_globals,
    save,
)

try:
    import torch
except ImportError:
    torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")


# ---- module-level classes (a checkpoint names them, so they must be importable) -----------------
class RNNModel(nn.Module):
    """pytorch/examples' word_language_model RNNModel, small: tied encoder/decoder weights."""

    def __init__(self, rnn_type="LSTM", ntoken=11, ninp=6, nhid=6, nlayers=2, dropout=0.2):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        self.decoder.weight = self.encoder.weight
        self.rnn_type, self.nhid, self.nlayers = rnn_type, nhid, nlayers

    def forward(self, tokens):
        output, _ = self.rnn(self.drop(self.encoder(tokens)))
        return F.log_softmax(self.decoder(self.drop(output)), dim=-1)


RNN_GLOBALS = [RNNModel, nn.modules.dropout.Dropout, nn.modules.sparse.Embedding,
               nn.modules.rnn.LSTM, nn.modules.rnn.GRU, nn.modules.linear.Linear]


class TransformerModel(nn.Module):
    def __init__(self, ntoken=13, d_model=8):
        super().__init__()
        self.embed = nn.Embedding(ntoken, d_model)
        layer = nn.TransformerEncoderLayer(d_model, 2, 16, dropout=0.0)
        self.encoder = nn.TransformerEncoder(layer, 2)
        self.head = nn.Linear(d_model, ntoken)

    def forward(self, tokens):
        return self.head(self.encoder(self.embed(tokens)))


TRANSFORMER_GLOBALS = [  # word_language_model's list for its Transformer, in minitorch's names
    TransformerModel, F.relu, nn.modules.activation.MultiheadAttention,
    nn.modules.container.ModuleList, nn.modules.dropout.Dropout, nn.modules.linear.Linear,
    nn.modules.linear.NonDynamicallyQuantizableLinear, nn.modules.normalization.LayerNorm,
    nn.modules.sparse.Embedding, nn.modules.transformer.TransformerEncoder,
    nn.modules.transformer.TransformerEncoderLayer]


class Node:
    pass


class Point:
    __slots__ = ("x", "y")


class TaggedPoint(Point):    # slots and a __dict__
    pass


class Vocab:
    """State through __getstate__/__setstate__ (a tuple, not a dict); counts __init__ calls."""
    inits = 0

    def __init__(self, words):
        Vocab.inits += 1
        self.__setstate__(tuple(words))

    def __getstate__(self):
        return tuple(self.words)

    def __setstate__(self, words):
        self.words = list(words)
        self.index = {w: i for i, w in enumerate(self.words)}


class Color(enum.Enum):
    RED = 1
    BLUE = 2


class Scale:
    """Reduced to a call of a module-level factory (pickle's REDUCE)."""

    def __init__(self, factor):
        self.factor = factor

    def __reduce__(self):
        return (make_scale, (self.factor,))


def make_scale(factor):
    return Scale(factor)


if torch is not None:
    class TorchNet(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(2, 2)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 2)


# ---- helpers ------------------------------------------------------------------------------------
def _roundtrip(obj, **load_kwargs):
    buffer = io.BytesIO()
    save(obj, buffer)
    buffer.seek(0)
    return load(buffer, **load_kwargs)


def _structure(obj):
    buffer = io.BytesIO()
    save(obj, buffer)
    data = buffer.getvalue()
    (n,) = struct.unpack("<Q", data[:8])
    return data, n, json.loads(data[8:8 + n])


def _edited(obj, edit):
    """obj's checkpoint with its structure text changed by `edit` and the checksum redone."""
    data, n, header = _structure(obj)
    meta = header["__metadata__"]
    meta["structure"] = edit(meta["structure"])
    payload = data[8 + n:]
    table = {k: v for k, v in header.items() if k != "__metadata__"}
    meta["sha256"] = _digest(meta["structure"], table, payload)
    text = json.dumps(header).encode()
    return io.BytesIO(struct.pack("<Q", len(text)) + text + payload)


def _values(module):
    return {k: v.detach().numpy().copy() for k, v in module.state_dict().items()}


def _stable_parts(message):
    """What torch 2.11-2.13 agree on: the first sentence and the WeightsUnpickler error."""
    found = re.search(r"Unsupported global: GLOBAL .*?if you trust this class/function\.|"
                      r"Can only .*?but got <class '[^']+'>|Trying to load .*? is blocked\.",
                      message)
    return message.split(".")[0], found.group(0) if found else None


def _torch_error(obj, **load_kwargs):
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    buffer.seek(0)
    with pytest.raises(pickle.UnpicklingError) as caught:
        torch.load(buffer, **load_kwargs)
    return str(caught.value)


def _our_error(obj, **load_kwargs):
    with pytest.raises(pickle.UnpicklingError) as caught:
        _roundtrip(obj, **load_kwargs)
    return str(caught.value)


@pytest.fixture(autouse=True)
def _empty_allow_list():
    """Each test starts from an empty allow-list; whatever was on it comes back afterwards."""
    saved = get_safe_globals()
    clear_safe_globals()
    yield
    clear_safe_globals()
    add_safe_globals(saved)


# ---- whole models -------------------------------------------------------------------------------
@pytest.mark.parametrize("rnn_type", ["LSTM", "GRU"])
def test_word_language_model_round_trips_with_safe_globals(tmp_path, rnn_type):
    mt.manual_seed(0)
    model = RNNModel(rnn_type)
    model.rnn.train(False)           # a submodule's own training flag is kept too
    path = tmp_path / "model.pt"
    save(model, path)
    with safe_globals(RNN_GLOBALS):
        loaded = load(path)
    assert type(loaded) is RNNModel and type(loaded.rnn) is type(model.rnn)
    assert loaded.decoder.weight is loaded.encoder.weight           # tied, as saved
    assert isinstance(loaded.decoder.weight, nn.Parameter) and loaded.decoder.weight.requires_grad
    assert loaded.training and loaded.drop.training and not loaded.rnn.training
    assert (loaded.rnn_type, loaded.nhid) == (rnn_type, 6)
    assert list(loaded.state_dict()) == list(model.state_dict())
    tokens = mt.tensor([[1, 2, 3], [4, 5, 10]])
    model.eval()
    loaded.eval()
    np.testing.assert_array_equal(loaded(tokens).detach().numpy(), model(tokens).detach().numpy())


def test_tensor_names_follow_the_state_dict():
    _, _, header = _structure(RNNModel())
    names = {k for k in header if k != "__metadata__"}
    assert names == set(RNNModel().state_dict()) - {"decoder.weight"}   # tied: stored once
    assert header["__metadata__"]["format"] == "minitorch-checkpoint/3"
    _, _, plain = _structure(RNNModel().state_dict())
    assert plain["__metadata__"]["format"] == "minitorch-checkpoint/2"  # data stays /2


def test_transformer_round_trips_with_its_activation_function():
    mt.manual_seed(0)
    model = TransformerModel().eval()
    with safe_globals(TRANSFORMER_GLOBALS):
        loaded = _roundtrip(model)
    layer = loaded.encoder.layers[1]
    assert layer.activation is F.relu and not loaded.training
    tokens = mt.tensor([[1, 2], [3, 4], [5, 6]])
    np.testing.assert_array_equal(loaded(tokens).detach().numpy(), model(tokens).detach().numpy())


def test_the_function_reference_needs_allow_listing():
    without_relu = [g for g in TRANSFORMER_GLOBALS if g is not F.relu]
    with safe_globals(without_relu):
        message = _our_error(TransformerModel())
    assert f"GLOBAL {F.relu.__module__}.relu was not an allowed global" in message


def test_loaded_model_trains_like_the_original():
    mt.manual_seed(0)
    model = RNNModel(dropout=0.0)
    with safe_globals(RNN_GLOBALS):
        loaded = _roundtrip(model)
    before = _values(model)
    tokens, targets = mt.tensor([[1, 2, 3], [4, 5, 6]]), mt.tensor([[2, 3, 4], [5, 6, 7]])
    for net in (model, loaded):
        optimizer = mt.optim.SGD(net.parameters(), lr=0.5)
        optimizer.zero_grad()
        F.nll_loss(net(tokens).reshape(-1, 11), targets.reshape(-1)).backward()
        optimizer.step()
    after, stepped = _values(model), _values(loaded)
    assert not np.array_equal(after["encoder.weight"], before["encoder.weight"])
    for name in after:
        np.testing.assert_allclose(stepped[name], after[name], rtol=1e-6, atol=1e-7)
    assert loaded.decoder.weight is loaded.encoder.weight


def test_optimizer_state_dict_still_round_trips():
    mt.manual_seed(0)
    model = Net()
    optimizer = mt.optim.Adam(model.parameters(), lr=0.1)
    model.fc(mt.ones(3, 2)).sum().backward()
    optimizer.step()
    state = _roundtrip({"optimizer": optimizer.state_dict(), "model": model.state_dict()})
    fresh = mt.optim.Adam(Net().parameters(), lr=0.1)
    fresh.load_state_dict(state["optimizer"])
    saved = optimizer.state_dict()
    assert fresh.state_dict()["param_groups"] == saved["param_groups"]
    for index, entry in saved["state"].items():
        for key, value in entry.items():
            np.testing.assert_array_equal(fresh.state_dict()["state"][index][key].numpy(),
                                          value.numpy())


# ---- identity -----------------------------------------------------------------------------------
def test_shared_objects_load_as_one_object():
    model = Net()
    model.alias = model.fc                  # one submodule under two names
    loaded = _roundtrip({"model": model, "head": model.fc, "again": model},
                        weights_only=False)
    assert loaded["model"].alias is loaded["model"].fc is loaded["head"]
    assert loaded["again"] is loaded["model"]


def test_cycles_through_state_load():
    a, b = Node(), Node()
    a.other, b.other, a.me = b, a, a
    a.weights = b.weights = mt.ones(2)
    with safe_globals([Node]):
        loaded = _roundtrip([a, b])
    la, lb = loaded
    assert la.other is lb and lb.other is la and la.me is la
    assert la.weights is lb.weights


# ---- weights_only -------------------------------------------------------------------------------
def test_default_load_refuses_an_unlisted_class():
    with pytest.raises(pickle.UnpicklingError) as caught:
        _roundtrip(RNNModel())
    message = str(caught.value)
    assert message.startswith("Weights only load failed.")
    name = f"{RNNModel.__module__}.RNNModel"
    assert (f"Unsupported global: GLOBAL {name} was not an allowed global by default. Please use "
            f"`torch.serialization.add_safe_globals([{name}])` or the "
            f"`torch.serialization.safe_globals([{name}])` context manager to allowlist this "
            "global if you trust this class/function.") in message
    with safe_globals([RNNModel]):         # the next class it meets is named then
        assert "GLOBAL minitorch.nn.dropout.Dropout was not" in _our_error(RNNModel())


@needs_torch
def test_refusal_matches_torch():
    ours = _stable_parts(_our_error(Net()))
    theirs = _stable_parts(_torch_error(TorchNet()))
    assert ours[0] == theirs[0] == "Weights only load failed"
    assert ours[1].replace(f"{Net.__module__}.Net", "X") == \
        theirs[1].replace(f"{TorchNet.__module__}.TorchNet", "X")


class Items(dict):
    pass


@needs_torch
@pytest.mark.parametrize("make, allowed", [
    (lambda: {"args": argparse.Namespace(lr=0.1)}, []),
    (lambda: [frozenset({1})], []),
    (lambda: int, []),
    (lambda: Items(a=1, b=2), [Items]),
    (lambda: Items(a=1), [Items]),
    (lambda: os.getcwd, [os.getcwd]),          # its module, posix, is blocked even when listed
])
def test_weights_only_errors_match_torch(make, allowed):
    if sys.platform == "win32" and make() is os.getcwd:
        pytest.skip("os.getcwd lives in nt there")
    with safe_globals(allowed):
        ours = _our_error(make())
    import torch.serialization as ts
    with ts.safe_globals(allowed):
        theirs = _torch_error(make())
    assert _stable_parts(ours) == _stable_parts(theirs)
    assert _stable_parts(ours)[1] is not None


def test_add_and_clear_safe_globals():
    buffer = io.BytesIO()
    save({"args": argparse.Namespace(lr=0.1), "epoch": 3}, buffer)
    add_safe_globals([argparse.Namespace])
    buffer.seek(0)
    assert load(buffer)["args"] == argparse.Namespace(lr=0.1)
    clear_safe_globals()
    buffer.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="GLOBAL argparse.Namespace was not"):
        load(buffer)
    add_safe_globals([(Node, "argparse.Namespace")])   # a pair: the name maps to the object
    buffer.seek(0)
    assert type(load(buffer)["args"]) is Node


def test_weights_only_false_imports_the_class(monkeypatch):
    loaded = _roundtrip(Net(), weights_only=False)
    assert type(loaded) is Net and isinstance(loaded.fc, nn.Linear)
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    with pytest.warns(UserWarning, match="forcing weights_only=False"):
        loaded = _roundtrip(Net())
    assert type(loaded) is Net
    with pytest.raises(pickle.UnpicklingError):      # it overrides only an unset weights_only
        _roundtrip(Net(), weights_only=True)


def test_unresolvable_names_raise_what_pickle_raises():
    missing = _edited(Net(), lambda s: s.replace('"qualname":"Net"', '"qualname":"Nope"'))
    module = sys.modules[Net.__module__]
    with pytest.raises(AttributeError) as caught:
        load(missing, weights_only=False)
    assert str(caught.value) == f"Can't get attribute 'Nope' on {module!r}"
    gone = _edited(Net(), lambda s: s.replace(f'"module":"{Net.__module__}"',
                                              '"module":"no_such_module_xyz"'))
    with pytest.raises(ModuleNotFoundError, match="No module named 'no_such_module_xyz'"):
        load(gone, weights_only=False)


def test_load_signature_and_switches_match_torch(monkeypatch):
    import inspect
    params = inspect.signature(load).parameters
    assert list(params) == ["f", "map_location", "pickle_module", "weights_only", "mmap",
                            "pickle_load_args"]
    assert params["weights_only"].default is None and \
        params["weights_only"].kind is inspect.Parameter.KEYWORD_ONLY
    if torch is not None:
        assert list(params) == list(inspect.signature(torch.load).parameters)
    buffer = io.BytesIO()
    save(Net(), buffer)
    buffer.seek(0)
    with pytest.raises(RuntimeError, match="Can not safely load weights when explicit "
                                           "pickle_module is specified"):
        load(buffer, pickle_module=pickle, weights_only=True)
    buffer.seek(0)
    assert type(load(buffer, pickle_module=pickle)) is Net    # torch: then weights_only=False
    buffer.seek(0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with safe_globals([Net, nn.Linear]):
            load(buffer, encoding="utf-8")
    assert "pickle_load_args only works if `weights_only=False`." in str(caught[0].message)
    monkeypatch.setenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "1")
    buffer.seek(0)
    with pytest.raises(pickle.UnpicklingError):
        load(buffer, weights_only=False)
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    buffer.seek(0)
    with pytest.raises(RuntimeError, match="Only one of `TORCH_FORCE_WEIGHTS_ONLY_LOAD`"):
        load(buffer)


# ---- plain Python objects -----------------------------------------------------------------------
def test_checkpoint_with_argparse_namespace_round_trips():
    sd = Net().state_dict()
    checkpoint = {"args": argparse.Namespace(lr=0.1, tied=True, layers=(2, 3)), "epoch": 3,
                  "state": sd}
    with safe_globals([argparse.Namespace]):
        loaded = _roundtrip(checkpoint)
    assert loaded["args"] == checkpoint["args"] and loaded["epoch"] == 3
    assert list(loaded["state"]) == list(sd)
    np.testing.assert_array_equal(loaded["state"]["fc.weight"].numpy(), sd["fc.weight"].numpy())


def test_container_types_are_kept():
    value = [collections.OrderedDict(b=1, a=2), {1, 2, (3, 4)}, frozenset({"x"}), (1, [2]),
             b"\x00\xff", bytearray(b"ab"), 1 + 2j, collections.Counter("aab"), Color.BLUE,
             {frozenset({1}): "frozen key"}]
    with safe_globals([frozenset, Color]):
        loaded = _roundtrip(value)
    assert loaded == value
    assert [type(x) for x in loaded] == [type(x) for x in value]
    assert loaded[8] is Color.BLUE
    with pytest.raises(pickle.UnpicklingError, match="GLOBAL frozenset was not"):
        _roundtrip(frozenset())                # as in torch: not allowed by default
    assert _roundtrip({1, 2}) == {1, 2}         # set is


def test_slots_are_kept():
    point, tagged = Point(), TaggedPoint()
    point.x = 1.5                              # y left unset
    tagged.x, tagged.y, tagged.label = 1, 2, "t"
    with safe_globals([Point, TaggedPoint]):
        lp, lt = _roundtrip([point, tagged])
    assert lp.x == 1.5 and not hasattr(lp, "y")
    assert (lt.x, lt.y, lt.label) == (1, 2, "t")


def test_getstate_and_setstate_are_used_and_init_is_not():
    vocab = Vocab(["a", "b"])
    inits = Vocab.inits
    loaded = _roundtrip(vocab, weights_only=False)
    assert loaded.index == {"a": 0, "b": 1} and Vocab.inits == inits


def test_reduce_to_a_factory_call():
    with pytest.raises(pickle.UnpicklingError, match="make_scale was not an allowed global"):
        _roundtrip(Scale(3))
    with safe_globals([make_scale]):
        loaded = _roundtrip(Scale(3))
    assert type(loaded) is Scale and loaded.factor == 3


# ---- what cannot be stored ----------------------------------------------------------------------
class _Holder:
    def method(self):
        pass


def _local_function():
    def inner():
        pass
    return inner


@pytest.mark.parametrize("make, why", [
    (lambda f: lambda x: x, "a lambda function"),
    (lambda f: _local_function(), "a function defined in a local scope"),
    (lambda f: _Holder().method, "a bound method"),
    (lambda f: f, "an object of type BufferedReader"),
])
def test_unsupported_attributes_are_refused_before_writing(tmp_path, make, why):
    model = RNNModel()
    with open(__file__, "rb") as f:
        model.rnn._some_attr = make(f)
        target = tmp_path / "new.pt"
        with pytest.raises(TypeError, match=re.escape(f"save: cannot store model.rnn._some_attr "
                                                      f"({why}")):
            save({"model": model}, target)
        assert not target.exists()
        existing = tmp_path / "old.pt"
        save({"v": 1}, existing)
        before = existing.read_bytes()
        with pytest.raises(TypeError, match=r"cannot store rnn\._some_attr"):
            save(model, existing)
        assert existing.read_bytes() == before
        assert sorted(os.listdir(tmp_path)) == ["old.pt"]    # no temp file left


def test_a_local_class_is_refused():
    class Local:
        pass

    with pytest.raises(TypeError, match=r"cannot store x \(an object of type .*Local, a class "
                                        r"defined in a local scope\)"):
        save({"x": Local()}, io.BytesIO())


# ---- malformed object nodes ---------------------------------------------------------------------
@pytest.mark.parametrize("edit", [
    lambda s: s.replace('"$object":1,', '"$object":0,', 1),               # a number reused
    lambda s: s.replace('{"$ref":', '{"$ref":"x","_":', 1),               # a bad back-reference
    lambda s: s.replace('"qualname":"Node"', '"qualname":7', 1),          # a bad name
    lambda s: s.replace('"class":', '"call":{"module":"x","qualname":"y"},"class":', 1),
    lambda s: s.replace('"$bytes":"AAE="', '"$bytes":"not base64!"'),
])
def test_malformed_object_nodes_raise_checkpoint_error(edit):
    a, b = Node(), Node()
    a.other, b.other, a.raw = b, a, b"\x00\x01"
    damaged = _edited([a, b], edit)
    with safe_globals([Node]), pytest.raises(CheckpointError):
        load(damaged)


def test_a_function_named_as_a_class_is_malformed():
    node = Node()
    damaged = _edited(node, lambda s: s.replace(
        f'"module":"{Node.__module__}","qualname":"Node"',
        f'"module":"{make_scale.__module__}","qualname":"make_scale"'))
    with pytest.raises(CheckpointError, match="is not a class"):
        load(damaged, weights_only=False)
