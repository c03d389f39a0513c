"""Flat views of tensors' memory for the communication engines: no copy for contiguous tensors,
a compact copy written back afterwards for the others."""
from ..tensor import Tensor


class FlatBuffer:
    """A tensor's elements as one 1-d numpy (CPU) or cupy (cuda) array in C order.

    `array` aliases the tensor's storage when the tensor is contiguous; otherwise it is a compact
    copy and `write_back()` copies the received values into the tensor's strided view. With
    `widen`, the copy holds the values in the dtype's compute dtype (an engine that moves
    bfloat16's bits cannot add them) and write_back rounds them back."""
    __slots__ = ("tensor", "array", "_copied", "_wide")

    def __init__(self, tensor, widen=False):
        data = tensor._data
        self.tensor = tensor
        self._wide = data.astype(data.dtype.compute) if widen else None
        self._copied = widen or not data.is_compact()
        self.array = (self._wide if widen else data.copy() if self._copied else data).flat()

    def write_back(self):
        """Make the tensor hold the array's values (and tell autograd its data changed)."""
        tensor = self.tensor
        if self._copied:
            data = tensor._data
            source = self.array if self._wide is None else \
                self._wide.astype(data.dtype).flat()
            data.backend.strided_set(source, data.buffer, data.shape, data.strides,
                                     data.offset)
        tensor._bump_version()


def check_tensor(tensor, name="tensor"):
    """torch's TypeError for a non-tensor argument."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type "
                        f"torch.Tensor\n             but got {type(tensor)} instead.")


def check_tensor_list(tensors, name):
    if not isinstance(tensors, (list, tuple)) or not all(isinstance(t, Tensor) for t in tensors):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type "
                        f"List[torch.Tensor]\n             but got {type(tensors)} instead.")


def storage_dtype(tensor):
    """The numpy dtype of the tensor's buffer (bool is stored as uint8)."""
    return tensor._data.dtype.storage


def describe(tensor):
    """Shape and dtype as error messages show them: (3, 4) float32."""
    return f"({', '.join(str(s) for s in tensor.shape)}) {tensor.dtype}"
