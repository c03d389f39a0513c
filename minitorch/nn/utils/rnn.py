"""torch.nn.utils.rnn: padded batches (pad_sequence, unpad_sequence) and packed ones
(PackedSequence, pack_padded_sequence, pad_packed_sequence, pack_sequence, unpack_sequence,
invert_permutation).

A packed batch stores the steps of sequences sorted by decreasing length time-major without
padding: step t holds the first batch_sizes[t] sequences. Packing reads the padded input
through a (T, B) boolean mask "sequence b has a step t" (advanced indexing, so its backward
scatters gradients back into the padded input); padding writes data through the same mask with
index_put. The mask and batch_sizes come from comparison and sum kernels on the lengths.
"""
from collections import namedtuple
from collections.abc import Iterable

import minitorch as mt
from ... import dtypes
from ...functions.elementwise import TORCH_NAMES
from ...functions.joining import stack
from ..functional import pad

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence",
           "pad_packed_sequence", "pad_sequence", "unpad_sequence", "pack_sequence",
           "unpack_sequence"]


def _bind(optional, fn):
    return None if optional is None else fn(optional)


class PackedSequence(namedtuple("PackedSequence_",
                                ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])):
    """torch's PackedSequence: data (sum(batch_sizes), *), batch_sizes (int64, always on the
    CPU), and the permutation that sorted the batch by length (sorted_indices) with its
    inverse (unsorted_indices), both None when the batch came sorted. Made by
    pack_padded_sequence / pack_sequence and by the RNN layers."""

    __slots__ = ()

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:
            if not (isinstance(data, (list, tuple)) and len(data) == 2):
                raise AssertionError("Expected data to be a list or tuple of length 2")
            data, batch_sizes = data
        elif batch_sizes.device.type != "cpu":
            raise ValueError(
                "batch_sizes should always be on CPU. Instances of PackedSequence should never "
                "be created manually. They should be instantiated by functions like "
                "pack_sequence and pack_padded_sequences in nn.utils.rnn. "
                "https://pytorch.org/docs/stable/nn.html#torch.nn.utils.rnn.pack_sequence")
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def _with_data(self, data):
        """self with `data` converted: the indices follow data to its device, batch_sizes
        stays on the CPU; self itself when nothing changed (torch's rule)."""
        if data is self.data:
            return self

        def follow(indices):
            return indices.to(data.device)
        return type(self)(data, self.batch_sizes, _bind(self.sorted_indices, follow),
                          _bind(self.unsorted_indices, follow))

    def to(self, *args, **kwargs):
        """Tensor.to on data (dtype and / or device)."""
        return self._with_data(self.data.to(*args, **kwargs))

    def cuda(self, *args, **kwargs):
        return self._with_data(self.data.cuda(*args, **kwargs))

    def cpu(self, *args, **kwargs):
        return self._with_data(self.data.cpu(*args, **kwargs))

    def double(self):
        return self.to(dtype=dtypes.float64)

    def float(self):
        return self.to(dtype=dtypes.float32)

    def long(self):
        return self.to(dtype=dtypes.int64)

    def byte(self):
        return self.to(dtype=dtypes.uint8)

    @property
    def is_cuda(self):
        """Whether data is on a GPU."""
        return self.data.is_cuda


def invert_permutation(permutation):
    """The inverse of a 1-D permutation tensor (None for None)."""
    if permutation is None:
        return None
    positions = mt.arange(permutation.numel(), device=permutation.device)
    return mt.scatter(mt.empty_like(permutation), 0, permutation, positions)


# ---- packing -----------------------------------------------------------------------------------
def _check_lengths(lengths):
    """ATen's checkLongTensor."""
    if lengths.ndim != 1 or lengths.device.type != "cpu" or lengths.dtype is not dtypes.int64:
        raise RuntimeError("'lengths' argument should be a 1D CPU int64 tensor, but got "
                           f"{lengths.ndim}D {lengths.device} {TORCH_NAMES[lengths.dtype.name]} "
                           "tensor")


def _check_sorted_lengths(values, batch, steps):
    """ATen's checks of a length list (in its order) and, beyond torch, that no length
    exceeds the padded input's steps (torch then packs a batch_sizes that its data does not
    match)."""
    if len(values) != batch:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got "
                           f"{len(values)} (batch_size={batch})")
    if values[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an "
                           "element in 'lengths' that is <= 0")
    if any(shorter > longer for longer, shorter in zip(values, values[1:])):
        raise RuntimeError(
            "`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
            "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence "
            "to sidestep this requirement if you do not need ONNX exportability.")
    if values[0] > steps:
        raise RuntimeError(f"Expected all lengths to be at most the padded sequence length "
                           f"{steps}, but got a length of {values[0]}")


def _steps_present(steps, lengths):
    """(steps, B) bool on the CPU: sequence b has a step t (lengths[b] > t)."""
    return mt.arange(steps)[:, None] < lengths[None, :]


def _pack(input, lengths, batch_first):
    """ATen's _pack_padded_sequence on length-sorted input: (data, batch_sizes)."""
    time_major = input.transpose(0, 1) if batch_first else input
    _check_lengths(lengths)
    batch = time_major.size(1)
    if time_major.numel() == 0:
        raise RuntimeError("Cannot pack empty tensors.")
    values = lengths.tolist()
    _check_sorted_lengths(values, batch, time_major.shape[0])
    present = _steps_present(values[0], lengths)
    # Boolean indexing reads present steps in C order (t, then b): the packed layout.
    data = time_major[:values[0]][present.to(input.device)]
    return data, present.sum(1)


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Pack a padded (T, B, *) batch ((B, T, *) with batch_first) of sequences of the given
    lengths; unsorted lengths need enforce_sorted=False (the batch is then sorted and the
    permutation kept). Gradients flow from the packed data back to input."""
    if isinstance(lengths, mt.Tensor):
        lengths = lengths.to(dtype=dtypes.int64)
    else:
        lengths = mt.as_tensor(lengths, dtype=dtypes.int64, device="cpu")
    sorted_indices = None
    if not enforce_sorted:
        lengths, sorted_indices = mt.sort(lengths, descending=True)
        sorted_indices = sorted_indices.to(input.device)
        input = input.index_select(0 if batch_first else 1, sorted_indices)
    data, batch_sizes = _pack(input, lengths, batch_first)
    return PackedSequence(data, batch_sizes, sorted_indices, None)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """The inverse of pack_padded_sequence: (padded, lengths), padded (T, B, *) ((B, T, *) with
    batch_first) in the original batch order, T = total_length or the longest length, lengths
    int64 on the CPU. Differentiable in sequence.data."""
    steps = sequence.batch_sizes.shape[0]
    if total_length is not None:
        if total_length < steps:
            raise ValueError("Expected total_length to be at least the length of the longest "
                             f"sequence in input, but got total_length={total_length} and max "
                             f"sequence length being {steps}")
        steps = total_length
    padded, lengths = _pad(sequence.data, sequence.batch_sizes, steps, padding_value)
    batch_dim = 0 if batch_first else 1
    if batch_first:
        padded = padded.transpose(0, 1)
    unsorted_indices = sequence.unsorted_indices
    if unsorted_indices is not None:
        return (padded.index_select(batch_dim, unsorted_indices),
                lengths[unsorted_indices.cpu()])
    return padded, lengths


def _pad(data, batch_sizes, steps, padding_value):
    """ATen's _pad_packed_sequence, time-major: ((steps, B, *) padded, lengths)."""
    batch = int(batch_sizes[0])
    # sequence b has batch_sizes[t] > b for each of its steps t
    lengths = (batch_sizes[:, None] > mt.arange(batch)[None, :]).sum(0)
    padded = mt.full((steps, batch, *data.shape[1:]), padding_value, dtype=data.dtype,
                     device=data.device)
    present = _steps_present(steps, lengths).to(data.device)
    return mt.index_put(padded, (present,), data), lengths


def pack_sequence(sequences, enforce_sorted=True):
    """pad_sequence then pack_padded_sequence of sequences of shapes (L_i, *)."""
    lengths = mt.as_tensor([seq.size(0) for seq in sequences], dtype=dtypes.int64,
                           device="cpu")
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """The list of sequences of a PackedSequence, in their original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)


# ---- padding -----------------------------------------------------------------------------------
def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Sequences of shapes (L_i, *) padded to the longest L and stacked: (L, B, *), or
    (B, L, *) with batch_first; the result is differentiable in every sequence."""
    if not isinstance(sequences, Iterable):
        raise RuntimeError("pad_sequence: Expected iterable for input sequences, but got arg of "
                           f"type: {type(sequences)}")
    sequences = tuple(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    if padding_side not in ("left", "right"):
        raise RuntimeError("Expected padding_side to be one of left or right, but got "
                           f"{padding_side}.")
    first = sequences[0]
    longest = max(s.shape[0] for s in sequences)
    trailing = [0, 0] * (first.ndim - 1)
    padded = []
    for seq in sequences:
        missing = longest - seq.shape[0]
        sides = [0, missing] if padding_side == "right" else [missing, 0]
        padded.append(pad(seq.to(first.dtype), trailing + sides, value=padding_value))
    return stack(padded, 0 if batch_first else 1)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """The inverse of pad_sequence: the first lengths[i] steps of each batch entry. (torch
    transposes a time-major input in place first; it is left untouched here.)"""
    batch = padded_sequences if batch_first else padded_sequences.transpose(0, 1)
    return [seq[:int(length)] for seq, length in zip(batch, lengths.tolist(), strict=True)]
