"""Files from other producers: refuse torch's pickle-based checkpoints with a message that says
how to convert them (they are never unpickled: unpickling runs code), and widen the safetensors
dtypes minitorch lacks into ones that hold every value exactly."""
import numpy as np

from ._format import CheckpointError

_ZIP_MAGIC = b"PK\x03\x04"
_CONVERT = ("minitorch never unpickles (unpickling can run arbitrary code). Convert it where "
            "torch is installed: `from safetensors.torch import save_file; "
            "save_file(torch.load(path, weights_only=True), 'model.safetensors')`, or load the "
            "state dict into a minitorch module with `module.load_state_dict(torch.load(path, "
            "weights_only=True))` and write it with `mt.save(module.state_dict(), path)`.")


def refuse_pickles(first_bytes, header_length_ok):
    """Raise CheckpointError naming torch's formats when the file starts like one of them.
    A safetensors header length is below 100 MB, so its high bytes are zero: a zip signature
    can never be one, and a pickle's opening is one only when the length reads as valid."""
    if first_bytes.startswith(_ZIP_MAGIC):
        raise CheckpointError("this is a PyTorch checkpoint (a zip archive of pickles, "
                              "torch.save's format), not a safetensors file; " + _CONVERT)
    if not header_length_ok and len(first_bytes) >= 2 and first_bytes[0] == 0x80 and \
            2 <= first_bytes[1] <= 5:
        raise CheckpointError("this is a pickle (torch.save's legacy format, or plain pickle), "
                              "not a safetensors file; " + _CONVERT)


def widen(code, array):
    """A foreign dtype's values in the minitorch dtype that FOREIGN_DTYPE names for it (the
    unsigned integers, exact in int64)."""
    return array.astype(np.int64)
