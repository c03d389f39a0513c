"""mt.save / mt.load: checkpoints in the safetensors layout, never pickle. mt.load also reads
torch.save's zip checkpoints (_torch_zip: their pickle through an unpickler that resolves
only allow-listed names, so nothing in the file is imported or run).

File: 8-byte little-endian header length, a JSON header (space-padded to a multiple of 8) with
one {"dtype", "shape", "data_offsets"} entry per stored tensor and a "__metadata__" of strings,
then the raw little-endian tensor bytes back to back. So `safetensors.numpy.load_file` reads the
tensors, and mt.load reads plain safetensors files from any producer. The metadata holds the
format tag, the JSON encoding of everything around the tensors (nested dicts with hashable
keys, lists, tuples, sets, frozensets, bytes, numbers, strings, bools, None, dtypes, devices;
tensors that share a storage as views of one entry; numpy arrays as entries in their own
dtype and numpy scalars inline, both loading back as numpy objects of that dtype) and a
sha256 over that structure, the tensor table and the bytes, checked before anything is built.
Whole objects (mt.save(model), an argparse.Namespace in a checkpoint) go through pickle's
reduce protocol without pickle: classes and functions are stored by name ({"module",
"qualname"}), an object as its class, constructor arguments, items and state, and an object
reached twice (tied weights, a shared submodule, a cycle) as a reference back to the first, so
it loads as one object. Loading resolves those names from the allow-list (torch's default-safe
types plus add_safe_globals / safe_globals) unless weights_only=False trusts the file and
imports them; either way it builds objects with cls.__new__ and __setstate__, never __init__,
and runs no code the file carries. Every way a file can be malformed raises CheckpointError.
Module map: _format (the container and its checks), _save, _load, _objects (whole objects, both
ways), _safe_globals (the allow-list and the weights_only rules), _atomic (replacing a file
safely), _foreign (other producers' safetensors files), _torch_zip (torch.save's format).
"""
from ._format import FORMAT, CheckpointError, _digest  # noqa: F401  (tests reseal files)
from ._load import load
from ._safe_globals import (add_safe_globals, clear_safe_globals, get_safe_globals,
                            safe_globals)
from ._save import save

__all__ = ["save", "load", "CheckpointError", "add_safe_globals", "clear_safe_globals",
           "get_safe_globals", "safe_globals"]
