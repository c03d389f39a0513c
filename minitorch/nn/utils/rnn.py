"""pad_sequence and unpad_sequence (torch.nn.utils.rnn's padded-batch helpers)."""
from collections.abc import Iterable

from ...functions.movement import stack
from ..functional import pad

__all__ = ["pad_sequence", "unpad_sequence"]


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
