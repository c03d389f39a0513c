"""torch.types: the type aliases annotations in scripts import."""
import builtins
import os
from typing import IO, Sequence, Union

from .backend import device as _device
from .dtypes import dtype as _dtype
from .tensor import Tensor, layout as _layout

__all__ = ["Device", "Number", "FileLike", "Storage", "Tensor"]

_bool, _int, _float, _complex, _str, _bytes = (builtins.bool, builtins.int, builtins.float,
                                               builtins.complex, builtins.str, builtins.bytes)
_size = Sequence[_int]
_TensorOrTensors = Union[Tensor, Sequence[Tensor]]
Number = Union[_int, _float, _bool]
_Number = (_int, _float, _bool)
Device = Union[_device, _str, _int, None]
FileLike = Union[_str, os.PathLike, IO[_bytes]]
Storage = Tensor        # minitorch has no separate storage type
