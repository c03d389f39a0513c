"""nn.utils.rnn's PackedSequence, pack_padded_sequence, pad_packed_sequence, pack_sequence,
unpack_sequence and invert_permutation against torch (fields, dtypes, devices, round trips,
float64 gradcheck of packing and padding), and RNN / LSTM / GRU on packed input: outputs, final
states, input and parameter gradients against torch with copied weights (stacked,
bidirectional, unsorted lengths, given and zero initial states); torch's errors."""
import numpy as np
import pytest

import minitorch as mt
from minitorch.autograd import gradcheck
from minitorch.nn import rnn
from minitorch.nn.utils.rnn import (PackedSequence, invert_permutation, pack_padded_sequence,
                                    pack_sequence, pad_packed_sequence, unpack_sequence)
from torch_parity import check_against_torch, same_error, same_errors, seq, value


def library_of(tensor):
    """minitorch or torch: whichever made `tensor`."""
    if isinstance(tensor, mt.Tensor):
        return mt
    return pytest.importorskip("torch")


def assert_same_packed(ours, theirs, device):
    np.testing.assert_allclose(value(ours.data), theirs.data.detach().numpy(), rtol=1e-12)
    assert ours.data.device.type == device
    assert ours.batch_sizes.dtype is mt.int64 and ours.batch_sizes.device.type == "cpu"
    assert ours.batch_sizes.tolist() == theirs.batch_sizes.tolist()
    for mine, expected in ((ours.sorted_indices, theirs.sorted_indices),
                           (ours.unsorted_indices, theirs.unsorted_indices)):
        if expected is None:
            assert mine is None
        else:
            assert mine.dtype is mt.int64 and mine.device.type == device
            assert mine.tolist() == expected.tolist()


# ---- packing and padding -----------------------------------------------------------------------
PACK_CASES = [
    # (lengths, batch_first, enforce_sorted); padded inputs have 5 steps and trailing (2,)
    ([5, 3, 3, 1], False, True),
    ([2, 5, 1, 4], True, False),
    ([4, 2, 4], False, False),          # tied lengths keep their order
    ([3], True, True),
]


@pytest.mark.parametrize("lengths,batch_first,enforce_sorted", PACK_CASES)
def test_pack_and_pad_match_torch(device, lengths, batch_first, enforce_sorted):
    torch = pytest.importorskip("torch")
    shape = (len(lengths), 5, 2) if batch_first else (5, len(lengths), 2)
    array = seq(*shape)
    ours = pack_padded_sequence(mt.tensor(array, device=device), mt.tensor(lengths),
                                batch_first, enforce_sorted)
    theirs = torch.nn.utils.rnn.pack_padded_sequence(torch.tensor(array), lengths,
                                                     batch_first, enforce_sorted)
    assert_same_packed(ours, theirs, device)
    for total_length in (None, 7):
        padded, got_lengths = pad_packed_sequence(ours, batch_first, -1.5, total_length)
        expected, expected_lengths = torch.nn.utils.rnn.pad_packed_sequence(
            theirs, batch_first, -1.5, total_length)
        np.testing.assert_array_equal(value(padded), expected.numpy())
        assert got_lengths.dtype is mt.int64 and got_lengths.device.type == "cpu"
        assert got_lengths.tolist() == expected_lengths.tolist() == lengths


def test_pack_sequence_and_unpack_sequence_match_torch(device):
    torch = pytest.importorskip("torch")
    arrays = [seq(2, 3), seq(4, 3, seed=1), seq(1, 3, seed=2)]
    ours = pack_sequence([mt.tensor(a, device=device) for a in arrays], enforce_sorted=False)
    theirs = torch.nn.utils.rnn.pack_sequence([torch.tensor(a) for a in arrays],
                                              enforce_sorted=False)
    assert_same_packed(ours, theirs, device)
    for mine, array in zip(unpack_sequence(ours), arrays, strict=True):
        np.testing.assert_array_equal(value(mine), array)
    # 1-D sequences (no trailing dims), integer data, already sorted
    ints = pack_sequence([mt.tensor([1, 2, 3], device=device), mt.tensor([4, 5], device=device)])
    assert ints.data.tolist() == [1, 4, 2, 5, 3] and ints.batch_sizes.tolist() == [2, 2, 1]
    assert ints.sorted_indices is None and ints.unsorted_indices is None


def test_invert_permutation(device):
    permutation = mt.tensor([2, 0, 3, 1], device=device)
    inverse = invert_permutation(permutation)
    assert inverse.tolist() == [1, 3, 0, 2] and inverse.device.type == device
    assert invert_permutation(None) is None


def test_packing_gradcheck(device):
    mt.manual_seed(0)
    # a transposed (non-contiguous) batch-first input, packed unsorted
    x = mt.randn(3, 4, 2, dtype=mt.float64, device=device).transpose(0, 1).requires_grad_()

    def pack(x):
        return pack_padded_sequence(x, [2, 3, 1, 3], batch_first=True, enforce_sorted=False).data
    assert gradcheck(pack, (x,))
    lengths_first = mt.tensor([3, 3, 2, 1])
    data = pack_padded_sequence(mt.randn(3, 4, dtype=mt.float64, device=device),
                                lengths_first).data.requires_grad_()
    batch_sizes = mt.tensor([4, 3, 2])

    def pad(data):
        return pad_packed_sequence(PackedSequence(data, batch_sizes), True, 0.5, 4)[0]
    assert gradcheck(pad, (data,))


def test_packed_sequence_object(device):
    packed = pack_padded_sequence(mt.randn(2, 3, device=device), [1, 3], True, False)
    assert packed._fields == ("data", "batch_sizes", "sorted_indices", "unsorted_indices")
    assert packed.is_cuda == (device == "cuda")
    assert packed.to(mt.float32) is packed and packed.to(device) is packed
    doubled = packed.double()
    assert doubled.data.dtype is mt.float64 and doubled.batch_sizes is packed.batch_sizes
    assert doubled.sorted_indices is packed.sorted_indices
    on_cpu = packed.cpu()
    assert not on_cpu.is_cuda and on_cpu.sorted_indices.device.type == "cpu"
    assert on_cpu.unsorted_indices.tolist() == packed.unsorted_indices.tolist()
    assert on_cpu.batch_sizes.device.type == "cpu"
    if device == "cuda":
        back = on_cpu.cuda()
        assert back.is_cuda and back.unsorted_indices.device.type == "cuda"
        with pytest.raises(ValueError, match="batch_sizes should always be on CPU"):
            PackedSequence(packed.data, packed.batch_sizes.cuda())
    # torch's two-field form: PackedSequence((data, batch_sizes))
    pair = PackedSequence((packed.data, packed.batch_sizes))
    assert pair.data is packed.data and pair.sorted_indices is None
    assert repr(pair).startswith("PackedSequence(data=tensor(")


# ---- RNN layers on packed input against torch --------------------------------------------------
LAYER_CASES = [
    # (class, kwargs, lengths, enforce_sorted, initial state given)
    ("RNN", {}, [4, 3, 1], True, False),
    ("RNN", {"nonlinearity": "relu", "num_layers": 2, "bidirectional": True}, [2, 4, 1],
     False, True),
    ("LSTM", {"num_layers": 2, "bidirectional": True}, [1, 3, 4], False, True),
    ("LSTM", {"proj_size": 2, "batch_first": True}, [3, 4, 3], False, False),
    ("GRU", {"num_layers": 2, "bidirectional": True}, [3, 1, 4], False, False),
    ("GRU", {"batch_first": True}, [4, 4, 2], True, True),
]


def packed_call(lengths, enforce_sorted):
    """Pack the padded (4, 3, 3) input, run the layer and pad its packed output again."""
    def call(module, x, *hx):
        utils = library_of(x).nn.utils.rnn
        packed = utils.pack_padded_sequence(x, lengths, enforce_sorted=enforce_sorted)
        if hx:
            output, final = module(packed, hx if len(hx) == 2 else hx[0])
        else:
            output, final = module(packed)
        assert isinstance(output, utils.PackedSequence)
        assert output.batch_sizes is packed.batch_sizes
        return utils.pad_packed_sequence(output)[0], output.data, final
    return call


@pytest.mark.parametrize("name,kwargs,lengths,enforce_sorted,given", LAYER_CASES,
                         ids=[f"{c[0]}{c[1]}{c[2]}" for c in LAYER_CASES])
def test_layer_on_packed_input_matches_torch(device, name, kwargs, lengths, enforce_sorted,
                                             given):
    torch = pytest.importorskip("torch")
    layer = getattr(torch.nn, name)(3, 4, **kwargs)
    states = []
    if given:
        rows = kwargs.get("num_layers", 1) * (2 if kwargs.get("bidirectional") else 1)
        sizes = [kwargs.get("proj_size") or 4] + ([4] if name == "LSTM" else [])
        states = [seq(rows, 3, size, seed=i + 1) for i, size in enumerate(sizes)]
    check_against_torch(getattr(rnn, name)(3, 4, **kwargs), layer, [seq(4, 3, 3)] + states,
                        device, packed_call(lengths, enforce_sorted))


def test_packed_output_equals_per_sequence_runs(device):
    # Each sequence alone (unpadded) gives the same output and final state as in the batch.
    mt.manual_seed(0)
    gru = rnn.GRU(2, 3, bidirectional=True).to(device)
    sequences = [mt.randn(length, 2, device=device) for length in (2, 4, 1)]
    output, h_n = gru(pack_sequence(sequences, enforce_sorted=False))
    for index, (alone, sequence) in enumerate(zip(unpack_sequence(output), sequences)):
        expected, expected_h = gru(sequence)
        np.testing.assert_allclose(value(alone), value(expected), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(value(h_n[:, index]), value(expected_h), rtol=1e-5,
                                   atol=1e-6)


# ---- errors ------------------------------------------------------------------------------------
def padded(lib, *shape):
    return lib.zeros(*shape)


PACK_ERRORS = {
    "unsorted": lambda lib: lib.nn.utils.rnn.pack_padded_sequence(padded(lib, 3, 2, 1), [2, 3]),
    "zero length": lambda lib: lib.nn.utils.rnn.pack_padded_sequence(padded(lib, 3, 2, 1),
                                                                     [3, 0]),
    "zero unsorted": lambda lib: lib.nn.utils.rnn.pack_padded_sequence(
        padded(lib, 3, 2, 1), [0, 2], enforce_sorted=False),
    "batch mismatch": lambda lib: lib.nn.utils.rnn.pack_padded_sequence(padded(lib, 3, 2),
                                                                        [3, 2, 1]),
    "2-D lengths": lambda lib: lib.nn.utils.rnn.pack_padded_sequence(
        padded(lib, 3, 2), lib.tensor([[3, 2]])),
    "empty": lambda lib: lib.nn.utils.rnn.pack_padded_sequence(padded(lib, 0, 2), [0, 0]),
    "1-D input": lambda lib: lib.nn.utils.rnn.pack_padded_sequence(padded(lib, 3), [3]),
    "no sequences": lambda lib: lib.nn.utils.rnn.pack_sequence([]),
    "unsorted list": lambda lib: lib.nn.utils.rnn.pack_sequence([padded(lib, 1),
                                                                 padded(lib, 2)]),
    "total_length": lambda lib: lib.nn.utils.rnn.pad_packed_sequence(
        lib.nn.utils.rnn.pack_sequence([padded(lib, 3)]), total_length=2),
    "not a pair": lambda lib: lib.nn.utils.rnn.PackedSequence(padded(lib, 3)),
}


@pytest.mark.parametrize("case", PACK_ERRORS)
def test_packing_errors_match_torch(case):
    same_error(PACK_ERRORS[case])


def test_length_beyond_padded_steps_is_rejected():
    # torch packs a batch_sizes its data does not match here; we refuse.
    with pytest.raises(RuntimeError, match="at most the padded sequence length 3"):
        pack_padded_sequence(mt.zeros(3, 2), [4, 2], enforce_sorted=False)


def packed_layer(lib, name, data_shape, lengths, hidden_shape=None):
    layer = getattr(lib.nn, name)(3, 4)
    packed = lib.nn.utils.rnn.pack_padded_sequence(lib.zeros(*data_shape), lengths)
    if hidden_shape is None:
        return layer(packed)
    return layer(packed, lib.zeros(*hidden_shape))


LAYER_ERRORS = {
    "input size": lambda lib: packed_layer(lib, "RNN", (3, 2, 5), [3, 2]),
    "data rank": lambda lib: packed_layer(lib, "GRU", (3, 2, 2, 3), [3, 2]),
    "hidden batch": lambda lib: packed_layer(lib, "GRU", (3, 2, 3), [3, 2], (1, 3, 4)),
    "dtype": lambda lib: lib.nn.GRU(3, 4)(
        lib.nn.utils.rnn.pack_sequence([lib.zeros(2, 3, dtype=lib.float64)])),
}


@pytest.mark.parametrize("case", LAYER_ERRORS)
def test_layer_errors_on_packed_input_match_torch(case):
    torch = pytest.importorskip("torch")
    same_errors(lambda: LAYER_ERRORS[case](mt), lambda: LAYER_ERRORS[case](torch))
