"""Tensors meeting other array libraries: Python operators with a numpy array operand, and
DLPack both ways (numpy on the CPU, CuPy on the GPU make and read the capsules).

torch reaches numpy through `__array__`/`__array_wrap__`: `t + ndarray` is numpy's ufunc on
`t.numpy()`, wrapped back into a tensor. We give the same results (result dtype from numpy's
own dtype resolution, bool results as uint8, torch's refusal of a tensor that requires grad),
but our kernels do the math.
"""
import ctypes

import numpy as np

from .. import dtypes
from ..backend import device as Device, get_backend
from ..ndarray import NDArray
from ..tensor import Tensor, from_numpy, wrap

_DL_CPU, _DL_CUDA = 1, 2          # DLDeviceType codes (dlpack.h)
_OUR_STORAGE = frozenset(d.storage for d in dtypes.ALL)


# ---- operators with an ndarray operand --------------------------------------------------------
def with_ndarray(op, ufunc, tensor, array):
    """`tensor <op> array` as torch computes it: numpy's `ufunc(tensor.numpy(), array)` (so
    numpy's result dtype and numpy's TypeError for unsupported types), here on our kernels."""
    tensor.numpy()        # torch's errors: a tensor that requires grad, a CUDA tensor
    loop = ufunc.resolve_dtypes((tensor.dtype.numpy_dtype, array.dtype, None))
    left, right = (dtypes.from_numpy(d) for d in loop[:2])
    result = op(tensor.to(left), from_numpy(array).to(right))
    out = dtypes.uint8 if loop[2] == np.bool_ else dtypes.from_numpy(loop[2])
    return result.to(out)


def reflected_divide(tensor, array):
    """`array / tensor`: torch's __rtruediv__ is `tensor.reciprocal() * array`."""
    return with_ndarray(Tensor.__mul__, np.multiply, tensor.reciprocal(), array)


def compare_with_ndarray(op, tensor, array):
    """`tensor == array` (and !=): torch takes the array as a tensor here, not through numpy."""
    return op(tensor, from_numpy(array))


# ---- DLPack -----------------------------------------------------------------------------------
def dlpack(self, *, stream=None, max_version=None, dl_device=None, copy=None):
    """Tensor.__dlpack__: the capsule numpy (CPU) or CuPy (GPU) makes for a view of our memory,
    so the consumer shares it. bfloat16 is refused: numpy and CuPy, which make the capsules,
    have no bfloat16, and exporting its uint16 words would hand the consumer wrong numbers."""
    if self.requires_grad:
        raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
    if self.dtype is dtypes.bfloat16:
        raise BufferError("minitorch cannot export bfloat16 tensors through DLPack (numpy and "
                          "CuPy, which make its capsules, have no bfloat16); convert first, "
                          "e.g. t.float()")
    options = {name: value for name, value in (("stream", stream), ("max_version", max_version),
               ("dl_device", dl_device), ("copy", copy)) if value is not None}
    return _exchange_view(self._data).__dlpack__(**options)


def dlpack_device(self):
    """Tensor.__dlpack_device__: (kDLCPU, 0) or (kDLCUDA, index)."""
    device = self._data.device
    return (_DL_CPU, 0) if device.type == "cpu" else (_DL_CUDA, device.index or 0)


def _exchange_view(data):
    """A numpy or CuPy array viewing exactly `data`'s elements (bool seen as bool)."""
    if data.device.type == "cpu":
        return data.numpy()
    cupy = data.backend.cupy
    itemsize = data.dtype.storage.itemsize
    with cupy.cuda.Device(data.device.index or 0):
        view = cupy.ndarray(data.shape, data.dtype.storage,
                            memptr=data.buffer.data + data.offset * itemsize,
                            strides=tuple(s * itemsize for s in data.strides))
    return view.view(cupy.bool_) if data.dtype is dtypes.bool_ else view


def from_dlpack(ext_tensor, *, device=None, copy=None):
    """torch.from_dlpack: a tensor sharing the memory of any object with `__dlpack__` (a numpy
    or CuPy array, a torch tensor, one of ours); moved to `device` or copied when asked."""
    result = _shared(ext_tensor)
    if device is not None:
        result = result.to(device)
    return result.clone() if copy else result


def _shared(ext_tensor):
    if isinstance(ext_tensor, Tensor):
        return ext_tensor.detach()
    capsule = type(ext_tensor).__name__ == "PyCapsule"     # from an older to_dlpack
    if capsule:
        ext_tensor = _CapsuleProducer(ext_tensor)
    device_type, index = ext_tensor.__dlpack_device__()
    if device_type == _DL_CPU:
        array = np.from_dlpack(ext_tensor)
        return from_numpy(_writable(array) if capsule else array)
    if device_type == _DL_CUDA:
        return _from_cupy(ext_tensor, Device("cuda", index))
    raise BufferError(f"from_dlpack: unsupported DLPack device type {int(device_type)}")


class _CapsuleProducer:
    """A DLPack capsule ("dltensor", as torch.utils.dlpack.to_dlpack makes) as the producer
    object numpy and CuPy consume: its device read from the DLTensor the capsule holds."""

    def __init__(self, capsule):
        get_name = ctypes.pythonapi.PyCapsule_GetName
        get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
        name = get_name(capsule)
        if name != b"dltensor":
            raise RuntimeError("from_dlpack received an invalid capsule. Note that DLTensor "
                               "capsules can be consumed only once, so you might have already "
                               "constructed a tensor from it once.")
        get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
        get_pointer.restype, get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object,
                                                                        ctypes.c_char_p]
        # DLTensor: void* data, then DLDevice {int32 device_type, int32 device_id}
        address = get_pointer(capsule, name) + ctypes.sizeof(ctypes.c_void_p)
        self._device = tuple(ctypes.cast(address, ctypes.POINTER(ctypes.c_int32))[i]
                             for i in range(2))
        self._capsule = capsule

    def __dlpack_device__(self):
        return self._device

    def __dlpack__(self, stream=None):      # no max_version: consumers see a legacy producer
        return self._capsule


def _writable(array):
    """np.from_dlpack marks an array from an unversioned capsule read-only (such a capsule
    cannot say whether its producer allows writes); torch shares that memory writable, so it is
    viewed again writable, the view keeping numpy's import (and so the capsule) alive."""
    if array.flags.writeable or array.size == 0:
        return array
    low = sum((n - 1) * s for n, s in zip(array.shape, array.strides) if s < 0)
    high = sum((n - 1) * s for n, s in zip(array.shape, array.strides) if s > 0)
    memory = (ctypes.c_char * (high - low + array.itemsize)).from_address(
        array.ctypes.data + low)
    memory.keep_alive = array
    return np.ndarray(array.shape, array.dtype, buffer=memory, offset=-low,
                      strides=array.strides)


def _from_cupy(ext_tensor, device):
    """A CUDA tensor over the memory a DLPack producer on `device` exports (through CuPy)."""
    backend = get_backend(device)
    cupy = backend.cupy
    with cupy.cuda.Device(device.index):
        array = cupy.from_dlpack(ext_tensor)
        dtype = dtypes.from_numpy(array.dtype)
        if array.dtype == np.bool_:
            array = array.view(cupy.uint8)
        elif array.dtype not in _OUR_STORAGE:
            array = array.astype(dtype.storage)        # a copy, as from_numpy makes on the CPU
        if array.size == 0:
            return wrap(NDArray.empty(array.shape, dtype, device))
        itemsize = array.dtype.itemsize
        if any(s < 0 or s % itemsize for s in array.strides):
            array = cupy.ascontiguousarray(array)
        strides = tuple(s // itemsize for s in array.strides)
        extent = 1 + sum((n - 1) * s for n, s in zip(array.shape, strides))
        flat = cupy.ndarray((extent,), array.dtype, memptr=array.data)
    return wrap(NDArray(flat, tuple(array.shape), strides, 0, dtype, device, backend))
