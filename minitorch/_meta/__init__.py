"""The meta backend: torch's "meta" device, tensors with a shape, strides, dtype and device but
no storage.

It implements the kernel interface of minitorch.backend.KernelBackend like _cpu and _gpu, so
everything above the backends runs unchanged: NDArray and the ops compute output shapes,
strides and dtypes in Python as they always do, allocate their outputs here (a `MetaBuffer`:
an element count and a storage dtype, no memory) and call kernels that do nothing. A model
built on meta (`with mt.device("meta")`, `nn.Linear(..., device="meta")`) costs no memory and
no arithmetic; `Module.to_empty` or `load_state_dict(..., assign=True)` then gives it real
tensors.

Anything that needs the values cannot work: reading a buffer back to the host (`to_host`:
`.cpu()`, `.tolist()`, `copy_` into a CPU tensor, pickling) raises torch's
NotImplementedError "Cannot copy out of meta tensor; no data!". Data-dependent shapes
(nonzero, masked_select, unique, boolean indexing) read their operand's values on the host
and so end in the same error.
"""
import numpy as np

COPY_OUT_MESSAGE = "Cannot copy out of meta tensor; no data!"


class MetaBuffer:
    """A 1-D buffer of `size` elements of the numpy storage dtype `dtype` that holds no memory:
    what NDArray.buffer is on the meta device. It answers what callers ask of a buffer's
    metadata (len, size, dtype, slices, dtype views); reading it as values is refused."""
    __slots__ = ("size", "dtype")

    def __init__(self, size, dtype):
        self.size = int(size)
        self.dtype = np.dtype(dtype)

    ndim = 1

    @property
    def shape(self):
        return (self.size,)

    @property
    def itemsize(self):
        return self.dtype.itemsize

    @property
    def nbytes(self):
        return self.size * self.dtype.itemsize

    def __len__(self):
        return self.size

    def __getitem__(self, key):
        if isinstance(key, slice):
            return MetaBuffer(len(range(*key.indices(self.size))), self.dtype)
        raise NotImplementedError(COPY_OUT_MESSAGE)

    def __setitem__(self, key, value):
        pass        # writes into no storage

    def view(self, dtype):
        """The same (absent) bytes seen as another storage dtype (Tensor.view(dtype))."""
        dtype = np.dtype(dtype)
        return MetaBuffer(self.nbytes // dtype.itemsize, dtype)

    def reshape(self, *shape):
        return self

    def __array__(self, dtype=None, copy=None):
        raise NotImplementedError(COPY_OUT_MESSAGE)

    def __repr__(self):
        return f"MetaBuffer(size={self.size}, dtype={self.dtype})"


class MetaBackend:
    """The kernel backend of the meta device: minitorch.backend.get_backend builds one, giving
    it the names of the KernelBackend interface, each of which becomes a kernel that does
    nothing (its output's shape and dtype were settled by the caller; there are no values).
    The buffer helpers make MetaBuffers and refuse to read one back."""

    def __init__(self, kernel_names):
        for name in kernel_names:
            setattr(self, name, _no_kernel)

    def __repr__(self):
        return "MetaBackend()"

    @staticmethod
    def empty(n, dtype):
        return MetaBuffer(n, dtype)

    @staticmethod
    def full(n, value, dtype):
        return MetaBuffer(n, dtype)

    @staticmethod
    def from_host(array):
        """A host array moved to meta keeps only its length and dtype (torch's .to("meta"))."""
        array = np.asarray(array)
        return MetaBuffer(array.size, array.dtype)

    @staticmethod
    def to_host(buffer):
        raise NotImplementedError(COPY_OUT_MESSAGE)

    @staticmethod
    def data_ptr(buffer):
        return 0        # torch: a meta tensor's data_ptr() is 0

    @staticmethod
    def synchronize():
        pass

    @staticmethod
    def empty_cache():
        pass

    @staticmethod
    def get_num_threads():
        return 1


def _no_kernel(*args, **kwargs):
    """A meta kernel: writes nothing, reads nothing."""
    return None
