"""Files from other producers: refuse torch's legacy checkpoints (a bare pickle stream) with a
message that says how to convert them, and widen the safetensors dtypes minitorch lacks into
ones that hold every value exactly. (torch's zip checkpoints are read: _torch_zip.)"""
import numpy as np

from ._format import CheckpointError

_CONVERT = ("minitorch reads torch.save's zip format (its default since torch 1.6), not this "
            "one. Convert it where torch is installed: `torch.save(torch.load(path, "
            "weights_only=True), new_path)`, or `from safetensors.torch import save_file; "
            "save_file(torch.load(path, weights_only=True), 'model.safetensors')`, or load the "
            "state dict into a minitorch module with `module.load_state_dict(torch.load(path, "
            "weights_only=True))` and write it with `mt.save(module.state_dict(), path)`.")


def refuse_pickles(first_bytes, header_length_ok):
    """Raise CheckpointError naming torch's legacy format (a bare pickle stream) when the file
    starts like one: a pickle's opening reads as a safetensors header length only when that
    length is invalid. (torch's zip format is read: _torch_zip.)"""
    if not header_length_ok and len(first_bytes) >= 2 and first_bytes[0] == 0x80 and \
            2 <= first_bytes[1] <= 5:
        raise CheckpointError("this is a pickle (torch.save's legacy format, or plain pickle), "
                              "not a safetensors file; " + _CONVERT)


def widen(code, array):
    """A foreign dtype's values in the minitorch dtype that FOREIGN_DTYPE names for it (the
    unsigned integers, exact in int64)."""
    return array.astype(np.int64)
