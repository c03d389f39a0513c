"""Tensor: an NDArray plus autograd metadata, with torch's methods, operators and indexing.

Every method is a one-liner into `minitorch.functions`, where each differentiable op is defined
once with its forward and backward side by side.
"""
import math
import numbers
import warnings
from typing import TYPE_CHECKING

import numpy as np

from . import dtypes
from ._user_frames import called_from_user
from .autograd import RemovableHandle, TensorBase, _grad_mode, no_grad
from .autograd import backward as _autograd_backward
from .backend import CPU, device as Device, get_backend, target_device
from .ndarray import NDArray, contiguous_strides, dense_order, real_dim, shape_numel
from .printing import tensor_repr

if TYPE_CHECKING:     # static tools see the op methods that install() puts on Tensor at import
    from .tensor_methods import TensorMethods as _OpMethods
else:
    _OpMethods = object


class Size(tuple):
    """torch.Size: a tuple of ints that prints like torch's; slicing, concatenation and
    repetition give a Size again, as torch's do."""

    def __repr__(self):
        return f"torch.Size({list(self)})"

    def __getitem__(self, index):
        item = tuple.__getitem__(self, index)
        return Size(item) if isinstance(index, slice) else item

    def __add__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple(self) + tuple(other))

    def __radd__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple(other) + tuple(self))

    def __mul__(self, count):
        return Size(tuple(self) * count)

    __rmul__ = __mul__

    def numel(self):
        """torch.Size.numel: the product of the sizes."""
        return shape_numel(tuple(self))


class memory_format:
    """torch.memory_format: how a new tensor's elements are laid out in memory. minitorch has
    torch's four: preserve_format (the source's layout), contiguous_format (row-major),
    channels_last (4-D NHWC order) and channels_last_3d (5-D NDHWC order)."""
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"minitorch.{self.name}"


class layout:
    """torch.layout: `strided` (every dense tensor) or `sparse_coo` (functions/sparse_coo.py)."""
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"torch.{self.name}"


strided = layout("strided")
sparse_coo = layout("sparse_coo")
preserve_format = memory_format("preserve_format")
contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
MEMORY_FORMATS = ("memory_format", "preserve_format", "contiguous_format", "channels_last",
                  "channels_last_3d")
# rank and axis order (outermost first) of the channels-last formats
_CHANNELS_LAST = {"channels_last": (4, (0, 2, 3, 1)), "channels_last_3d": (5, (0, 2, 3, 4, 1))}


def check_memory_format(fmt, function):
    """fmt itself (None meaning the function's default), or torch's error for anything else."""
    if fmt is not None and not isinstance(fmt, memory_format):
        raise TypeError(f"{function}(): argument 'memory_format' must be torch.memory_format, "
                        f"not {type(fmt).__name__}")
    return fmt


def is_contiguous_as(nd, fmt):
    """torch's is_contiguous(memory_format): row-major for contiguous/preserve, else the
    channels-last order (strides of size-1 axes don't matter; other ranks are never)."""
    if fmt is None or fmt.name not in _CHANNELS_LAST:
        return nd.is_compact()
    rank, order = _CHANNELS_LAST[fmt.name]
    if nd.ndim != rank:
        return False
    expected = 1
    for d in reversed(order):
        if nd.shape[d] != 1:
            if nd.strides[d] != expected:
                return False
            expected *= nd.shape[d]
    return True


def layout_for(nd, fmt):
    """(axis order from outermost to innermost, strides) of a new tensor shaped like `nd` in
    memory format `fmt` (None: preserve_format), as torch lays it out: preserve keeps a
    non-overlapping dense source's strides exactly and otherwise orders the axes as the source
    (torch's infer_dense_strides); channels_last(_3d) need rank 4 (5)."""
    shape, strides = nd.shape, nd.strides
    if (fmt is None or fmt is preserve_format) and strides == contiguous_strides(shape):
        return tuple(range(len(shape))), strides       # the common case, without sorting
    if fmt is None or fmt is preserve_format:
        dense = dense_order(shape, strides)
        if dense is not None:
            return dense, strides
        return _with_strides(shape, _inferred_order(shape, strides), floor=1)
    if fmt is contiguous_format:
        return tuple(range(len(shape))), contiguous_strides(shape)
    rank, order = _CHANNELS_LAST[fmt.name]
    if len(shape) != rank:
        raise RuntimeError(f"required rank {rank} tensor to use {fmt.name} format")
    return _with_strides(shape, order, floor=0)     # torch's channels-last strides: raw sizes


def _with_strides(shape, order, floor):
    """(order, the strides of a compact array laid out in axis order `order`); a size below
    `floor` counts as `floor` (torch: 1 for contiguous and inferred layouts, 0 for
    channels-last)."""
    strides, step = [0] * len(shape), 1
    for d in reversed(order):
        strides[d] = step
        step *= max(shape[d], floor)
    return order, tuple(strides)


def _inferred_order(shape, strides):
    """torch's infer_dense_strides axis order for an overlapping or gapped layout: a stable
    insertion sort by stride (ties: the smaller size inner), leaving stride-0 axes in place."""
    perm = list(reversed(range(len(shape))))       # innermost first
    for i in range(1, len(perm)):
        dim1 = i
        for dim0 in range(i - 1, -1, -1):
            a, b = perm[dim0], perm[dim1]
            if strides[a] == 0 or strides[b] == 0:
                continue
            if strides[a] > strides[b] or (strides[a] == strides[b] and shape[a] > shape[b]):
                perm[dim0], perm[dim1] = perm[dim1], perm[dim0]
                dim1 = dim0
            elif strides[a] < strides[b]:
                break
    return tuple(reversed(perm))


def copy_in_layout(nd, order, strides):
    """A copy of `nd` with `strides` (a compact layout in axis order `order`): one compaction of
    the permuted view."""
    if order == tuple(range(nd.ndim)) and strides == nd.strides and nd.is_compact():
        return nd.copy()
    buffer = nd.permute(order).copy().buffer
    return NDArray(buffer, nd.shape, strides, 0, nd.dtype, nd.device, nd.backend)


def full_in_layout(shape, order, strides, fill, dtype, device):
    """A new array of `shape` with `strides` (compact in axis order `order`), filled."""
    if strides == contiguous_strides(shape):
        return NDArray.full(shape, fill, dtype, device)
    stored = NDArray.full(tuple(shape[d] for d in order), fill, dtype, device)
    return NDArray(stored.buffer, shape, strides, 0, dtype, device, stored.backend)


def write_out(out, result, function, warn_resize=True):
    """torch's out= contract: `result` written into `out` (resized to result's shape, with
    torch's deprecation warning when out had elements; cast to out's dtype when torch allows
    that cast) and `out` returned. Refused, as torch refuses, while recording a graph through
    it."""
    if not isinstance(out, Tensor):
        raise TypeError(f"{function}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if _grad_mode.enabled and (out.requires_grad or result.requires_grad):
        raise RuntimeError(f"{function}(): functions with out=... arguments don't support "
                           "automatic differentiation, but one of the arguments requires grad.")
    if not dtypes.can_cast(result.dtype, out.dtype):
        raise RuntimeError(f"result type {result.dtype.torch_name} can't be cast "
                           f"to the desired output type {out.dtype.torch_name}")
    if out.device != result.device:
        raise RuntimeError(f"Expected out tensor to have device {result.device}, but got "
                           f"{out.device} instead")
    if out.shape != result.shape:
        if warn_resize and out.numel():
            warnings.warn(f"An output with one or more elements was resized since it had shape "
                          f"{list(out.shape)}, which does not match the required output shape "
                          f"{list(result.shape)}. This behavior is deprecated, and in a future "
                          "PyTorch release outputs will not be resized unless they have zero "
                          "elements. You can explicitly reuse an out tensor t by resizing it, "
                          "inplace, to zero elements with t.resize_(0).", UserWarning,
                          stacklevel=3)
        out.resize_(*result.shape)
    with no_grad():
        out.copy_(result)
    return out


_new_object = object.__new__


# The C++ type names torch's `t.grad = ...` message gives the gradient's dtype (caffe2's TypeMeta)
_CPP_TYPE_NAMES = {
    dtypes.bool_: "bool", dtypes.uint8: "unsigned char", dtypes.int8: "signed char",
    dtypes.int16: "short int", dtypes.int32: "int", dtypes.int64: "long int",
    dtypes.float16: "c10::Half", dtypes.bfloat16: "c10::BFloat16", dtypes.float32: "float",
    dtypes.float64: "double", dtypes.complex64: "c10::complex<float>",
    dtypes.complex128: "c10::complex<double>"}


def _check_assigned_grad(t, grad):
    """torch's checks on `t.grad = grad`: a tensor (dense, or sparse COO: duck-typed, the sparse
    class lives above this file) of t's size, dtype and device."""
    if not isinstance(grad, Tensor) and not getattr(grad, "is_sparse", False):
        raise TypeError("assigned grad expected to be a Tensor or None but got grad of type "
                        f"{type(grad).__name__}")
    if grad.shape != t.shape:
        raise RuntimeError(f"attempting to assign a gradient of size '{list(grad.shape)}' to a "
                           f"tensor of size '{list(t.shape)}'. Please ensure that the gradient "
                           "and the tensor are the same size")
    if grad.dtype is not t.dtype:
        raise RuntimeError(f"attempting to assign a gradient with dtype "
                           f"'{_CPP_TYPE_NAMES[grad.dtype]}' to a tensor with grad_dtype "
                           f"'{t.dtype.torch_name}'. The gradient must match the tensor's "
                           "grad_dtype (defaults to the tensor's dtype). You can set the "
                           "tensor's grad_dtype attribute with a specific dtype, or None to "
                           "allow any dtype. Set grad_dtype with caution. Diverging the dtypes "
                           "of a tensor and its gradient may break downstream systems that "
                           "assume they match.")
    if grad.device != t.device:
        raise RuntimeError(f"attempting to assign a gradient with device type "
                           f"'{grad.device.type}' to a tensor with device type "
                           f"'{t.device.type}'. Please ensure that the gradient and the tensor "
                           "are on the same device")


_TYPE_NAMES = {d.name: d.torch_name + "Tensor" for d in dtypes.ALL + dtypes.COMPLEX}
# dtypes whose CPU buffer holds numpy's own dtype (not bool's bytes or bfloat16's words): item()
# reads their element straight from the buffer
_STORED_AS_ITSELF = frozenset(d for d in dtypes.ALL + dtypes.COMPLEX
                              if d.numpy_dtype is not None and d.storage == d.numpy_dtype)


def _matrix_transpose(t, name, scalar_warning):
    """mT / mH / adjoint for real tensors: the last two dims swapped; a 0-d tensor is itself
    (with torch's deprecation warning), a 1-d one torch's error."""
    if t.ndim == 0:
        warnings.warn(scalar_warning, UserWarning, stacklevel=3)
        return t
    if t.ndim == 1:
        raise RuntimeError(f"{name} is only supported on matrices or batches of matrices. Got "
                           "1-D tensor.")
    return t.transpose(-2, -1)


def wrap(data, requires_grad=False, version=None):
    """A Tensor around an NDArray (the fast internal constructor: no checks, no copies)."""
    t = _new_object(Tensor)
    t._data = data
    t._version = [0] if version is None else version
    if requires_grad:
        t.requires_grad = True
    return t


class Tensor(TensorBase, _OpMethods):
    """A multi-dimensional array with autograd; mirrors torch.Tensor.

    This class holds the tensor's core: its data and metadata, conversions, the autograd entry
    points and creation-like methods. The ops (`x.relu()`, `x + y`, `x.sum()`) are put on it by
    `tensor_methods.install()`, one line each in tensor_methods.py, because they live in
    minitorch/functions, which sits above this file."""
    __slots__ = ("_data", "_version", "__weakref__", "__dict__")
    __array_priority__ = 1000   # numpy defers `ndarray op Tensor` to our reflected operators

    @property
    def grad(self):
        """torch.Tensor.grad: the gradient accumulated by backward (None until then); assigning
        checks size, dtype and device as torch does."""
        return self._grad

    @grad.setter
    def grad(self, value):
        if value is not None:
            _check_assigned_grad(self, value)
        self._grad = value

    def __init__(self, *args, dtype=None, device=None, requires_grad=False):
        """torch.Tensor's legacy constructor: Tensor(data) or Tensor(*sizes) (uninitialised)."""
        if len(args) == 1 and not isinstance(args[0], numbers.Integral):
            source = tensor(args[0], dtype=dtype or dtypes.get_default_dtype(), device=device)
        else:
            shape = args[0] if len(args) == 1 and isinstance(args[0], (tuple, list)) else args
            source = empty(*shape, dtype=dtype, device=device)
        wrap_into(self, source._data, requires_grad)

    # ---- metadata -----------------------------------------------------------------------------
    @property
    def data(self):
        """The same memory without autograd, and (as in torch) with its own version counter, so
        `p.data.add_(...)` does not invalidate what a graph saved of p."""
        return wrap(self._data)

    @data.setter
    def data(self, value):
        self._data = value._data

    @property
    def shape(self):
        """torch.Tensor.shape: the sizes, as a Size."""
        return Size(self._data.shape)

    def size(self, dim=None):
        """torch.Tensor.size: the sizes as a Size, or one dim's size (negative dims count from the
        end)."""
        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[real_dim(dim, self.ndim)]

    @property
    def dtype(self):
        """torch.Tensor.dtype: the element type (a minitorch dtype: float32, float64, float16,
        bfloat16, int64, int32, int16, int8, uint8 or bool)."""
        return self._data.dtype

    @property
    def device(self):
        """torch.Tensor.device: where the data lives (cpu or cuda:N)."""
        return self._data.device

    @property
    def is_cuda(self):
        """torch.Tensor.is_cuda: True on a CUDA device."""
        return self._data.device.type == "cuda"

    @property
    def is_cpu(self):
        """torch.Tensor.is_cpu: True on the CPU."""
        return self._data.device.type == "cpu"

    @property
    def is_meta(self):
        """torch.Tensor.is_meta: True on the meta device (shape and dtype, no storage)."""
        return self._data.device.type == "meta"

    # Devices, layouts and kinds of tensor minitorch doesn't have: always False (scripts read
    # them to branch, e.g. a GAN's forward checking `x.is_mps`).
    is_xpu = is_mps = is_ipu = is_maia = is_mtia = is_xla = is_vulkan = property(
        lambda self: False)
    is_sparse = is_sparse_csr = is_quantized = is_mkldnn = is_nested = property(
        lambda self: False)
    layout = strided        # torch.Tensor.layout: dense (sparse tensors are SparseCooTensor)

    @property
    def ndim(self):
        """torch.Tensor.ndim: the number of dims."""
        return len(self._data.shape)

    def dim(self):
        """torch.Tensor.dim: the number of dims."""
        return len(self._data.shape)

    ndimension = dim

    def numel(self):
        return self._data.size

    nelement = numel

    def element_size(self):
        """torch.Tensor.element_size: bytes per element."""
        return self._data.dtype.itemsize

    def stride(self, dim=None):
        """torch.Tensor.stride: the strides in elements (a tuple), or one dim's stride."""
        if dim is None:
            return self._data.strides
        return self._data.strides[real_dim(dim, self.ndim)]

    def storage_offset(self):
        """torch.Tensor.storage_offset: the first element's offset in its storage, in elements."""
        return self._data.offset

    def data_ptr(self):
        """torch.Tensor.data_ptr: the address of the first element (a host address on the CPU, a
        device address on CUDA)."""
        return self._data.backend.data_ptr(self._data.buffer) + \
            self._data.offset * self._data.dtype.itemsize

    def is_contiguous(self, memory_format=None):
        """torch.Tensor.is_contiguous: whether the elements are laid out in row-major order, or
        in memory_format's order (channels_last: NHWC, channels_last_3d: NDHWC)."""
        return is_contiguous_as(self._data, check_memory_format(memory_format, "is_contiguous"))

    def is_floating_point(self):
        """torch.Tensor.is_floating_point: True for float32 and float64."""
        return self._data.dtype.is_floating_point

    def is_complex(self):
        """torch.Tensor.is_complex: True for complex64 and complex128."""
        return self._data.dtype.is_complex

    def is_signed(self):
        """torch.Tensor.is_signed: False for uint8 and bool, True otherwise."""
        return self._data.dtype not in (dtypes.uint8, dtypes.bool_)

    def is_same_size(self, other):
        """torch.Tensor.is_same_size: whether other has the same sizes."""
        return self._data.shape == other._data.shape

    def is_conj(self):
        """torch.Tensor.is_conj: always False: conj() materialises (no lazy conjugate bit)."""
        return False

    def is_neg(self):
        """torch.Tensor.is_neg: always False (no lazy negation bit)."""
        return False

    def is_inference(self):
        """torch.Tensor.is_inference: always False (inference_mode makes ordinary tensors here)."""
        return False

    def resolve_neg(self):
        """torch.Tensor.resolve_neg: self (no lazy negation bit). conj, resolve_conj,
        conj_physical, real and imag are functions/complex.py's (tensor_methods.py)."""
        return self

    # memory placement: pinning is a no-op (sharing: tensor_methods.py, _cpu/shared.py)
    def pin_memory(self, device=None):
        """torch.Tensor.pin_memory: a no-op stand-in that returns self (torch copies into page-
        locked memory; our host buffers are plain memory, so copies to the GPU are not
        asynchronous)."""
        return self

    def is_pinned(self, device=None):
        """torch.Tensor.is_pinned: always False (nothing is pinned here, see pin_memory)."""
        return False

    def is_nonzero(self):
        """torch.Tensor.is_nonzero: the truth of a one-element tensor, with torch's errors
        otherwise."""
        return self.__bool__()

    def get_device(self):
        """The CUDA device index, -1 on the CPU."""
        index = self._data.device.index
        return -1 if index is None else index

    def type_as(self, other):
        """torch.Tensor.type_as: self in other's dtype (a copy unless it already is)."""
        return self.to(other.dtype)

    @property
    def is_leaf(self):
        """torch.Tensor.is_leaf: True when no recorded op made this tensor (grad_fn is None)."""
        return self.grad_fn is None

    @property
    def T(self):
        """torch.Tensor.T: a view with the dims reversed."""
        return self.permute(*reversed(range(self.ndim)))

    @property
    def mT(self):
        """torch.Tensor.mT: a view with the last two dims swapped (torch's warning for 0-d, error
        for 1-d)."""
        return _matrix_transpose(self, "tensor.mT", "Tensor.mT is deprecated on 0-D tensors. This "
                                 "function is the identity in these cases.")

    @property
    def H(self):
        """torch.Tensor.H: the conjugate transpose, which for real tensors is T."""
        return self.T.conj()        # conj: the identity on real tensors

    @property
    def mH(self):
        """torch.Tensor.mH: the conjugate transpose of the last two dims, which for real tensors is
        mT."""
        return _matrix_transpose(self, "tensor.mH", "Tensor.mH is deprecated on 0-D tensors. "
                                 "Consider using x.conj().").conj()

    @property
    def itemsize(self):
        """torch.Tensor.itemsize: bytes per element."""
        return self._data.dtype.itemsize

    @property
    def nbytes(self):
        """torch.Tensor.nbytes: numel() * itemsize."""
        return self._data.size * self._data.dtype.itemsize

    @property
    def output_nr(self):
        """torch.Tensor.output_nr: which output of its grad_fn this tensor is."""
        return self._output_nr

    @property
    def _version_counter(self):
        return self._version[0]

    def type(self, dtype=None, non_blocking=False):
        """torch's: the type name ("torch.FloatTensor") without an argument, else a copy in the
        given dtype or legacy type name ("torch.cuda.DoubleTensor" also moves to the GPU)."""
        if dtype is None:
            prefix = "torch.cuda." if self.is_cuda else "torch."
            return prefix + _TYPE_NAMES[self.dtype.name]
        if isinstance(dtype, _LegacyTensorType):      # t.type(mt.DoubleTensor)
            return self.to(device="cpu", dtype=dtype.dtype)
        if not isinstance(dtype, str):
            return self.to(dtype)
        if dtype in dtypes.ALL_NAMES:
            return self.to(dtypes.from_name(dtype))
        by_type = {f"torch.{name}": d for d, name in _TYPE_NAMES.items()}
        device = "cpu"
        if dtype.startswith("torch.cuda."):
            dtype, device = "torch." + dtype[len("torch.cuda."):], "cuda"
        if dtype not in by_type:
            raise ValueError(f"invalid type: '{dtype}'")
        return self.to(device=device, dtype=dtypes.from_name(by_type[dtype]))

    # ---- conversion ---------------------------------------------------------------------------
    def numpy(self, force=False):
        """torch.Tensor.numpy: a numpy array sharing a CPU tensor's memory; torch's errors for a
        tensor that requires grad or lives on CUDA unless force=True (which then copies)."""
        if self.requires_grad and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        if self.is_cuda and not force:
            raise TypeError("can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() "
                            "to copy the tensor to host memory first.")
        if self._data.device.type == "meta" and not force:
            raise TypeError("can't convert meta device type tensor to numpy. Use Tensor.cpu() "
                            "to copy the tensor to host memory first.")
        if self.dtype is dtypes.bfloat16:
            raise TypeError("Got unsupported ScalarType BFloat16")
        return self._data.to_device(CPU).numpy() if force else self._data.numpy()

    def __array__(self, dtype=None, copy=None):
        """np.asarray(t): a view of a CPU tensor's memory, with torch's refusals (a tensor that
        requires grad, a CUDA tensor) so that numpy never silently drops a graph."""
        array = self.numpy()
        if dtype is not None:
            array = array.astype(dtype, copy=False)
        return array.copy() if copy else array

    def __array_wrap__(self, array, context=None, return_scalar=False):
        """A numpy ufunc's result on tensors comes back as a tensor sharing its memory (torch's
        rule, bool results included: torch turns them into uint8)."""
        if array.dtype == np.bool_:
            array = array.astype(np.uint8)
        return from_numpy(array)

    def tolist(self):
        """torch.Tensor.tolist: the values as (nested) Python numbers."""
        data = self._data
        if data.device.type == "cpu":       # read in place: no detached copy, no move
            return data.values().tolist()
        return self.detach().cpu()._data.values().tolist()

    def item(self):
        """torch.Tensor.item: the value of a one-element tensor as a Python number."""
        data = self._data
        if data.size != 1:
            raise RuntimeError(f"a Tensor with {data.size} elements cannot be converted to "
                               "Scalar")
        if data.device is CPU:      # the one element, read in place
            if data.dtype in _STORED_AS_ITSELF:
                return data.buffer[data.offset].item()
            if data.dtype is dtypes.bool_:
                return bool(data.buffer[data.offset])   # (a byte holding 0 or 1)
        if data.device.type != "cpu":
            if data.device.type == "meta":
                raise RuntimeError("Tensor.item() cannot be called on meta tensors")
            data = self.detach().cpu()._data
        return data.values().reshape(()).item()

    def __bool__(self):
        n = self._data.size
        if n != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous"
                               if n else "Boolean value of Tensor with no values is ambiguous")
        return bool(self.item())

    def __float__(self):
        return float(self._single_value())

    def __int__(self):
        return int(self._single_value())

    def __index__(self):
        if self.dtype.is_floating_point or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an "
                            "index")
        return int(self.item())

    def _single_value(self):
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return self.item()

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __repr__(self):
        return tensor_repr(self)

    def __format__(self, spec):
        """torch's: a 0-d tensor formats as its number (f"{loss}" prints 0.25); others as repr
        and only with an empty spec."""
        if self.ndim == 0 and self._data.device.type != "meta":
            return format(self.item(), spec)
        return object.__format__(self, spec) if spec else repr(self)

    __hash__ = object.__hash__      # identity (as torch's), in C: optimizer state is keyed by it

    def __reduce_ex__(self, protocol):
        if self._data.device.type == "meta":    # no values: shape, strides and dtype (deepcopy)
            return (_rebuild_meta, (tuple(self.shape), self.stride(), self.dtype.name,
                                    self.requires_grad))
        return (_rebuild, (self.detach().cpu()._data.compact().numpy(), self.dtype.name,
                           str(self.device), self.requires_grad))

    # ---- device / dtype moves -----------------------------------------------------------------
    def cuda(self, device=None, non_blocking=False):
        """torch.Tensor.cuda: a copy on the CUDA device (self if already there); non_blocking is
        accepted and the copy is synchronous."""
        return self.to(Device("cuda" if device is None else device))

    def cpu(self):
        """torch.Tensor.cpu: a copy on the CPU (self if already there)."""
        return self.to(CPU)

    def float(self):
        """torch.Tensor.float: self as float32."""
        return self.to(dtypes.float32)

    def double(self):
        """torch.Tensor.double: self as float64."""
        return self.to(dtypes.float64)

    def long(self):
        """torch.Tensor.long: self as int64."""
        return self.to(dtypes.int64)

    def int(self):
        """torch.Tensor.int: self as int32."""
        return self.to(dtypes.int32)

    def short(self):
        """torch.Tensor.short: self as int16."""
        return self.to(dtypes.int16)

    def char(self):
        """torch.Tensor.char: self as int8."""
        return self.to(dtypes.int8)

    def bool(self):
        """torch.Tensor.bool: self as bool."""
        return self.to(dtypes.bool_)

    def byte(self):
        """torch.Tensor.byte: self as uint8."""
        return self.to(dtypes.uint8)

    def half(self):
        """torch.Tensor.half: self as float16."""
        return self.to(dtypes.float16)

    def bfloat16(self):
        """torch.Tensor.bfloat16: self as bfloat16."""
        return self.to(dtypes.bfloat16)

    # ---- autograd -----------------------------------------------------------------------------
    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """torch.Tensor.backward: accumulate d(self)/d(leaf) into every leaf's .grad (gradient is
        required for a non-scalar self)."""
        _autograd_backward(self, gradient, retain_graph, create_graph, inputs)

    def detach(self):
        """torch.Tensor.detach: the same memory (and version counter) without autograd history."""
        return wrap(self._data, version=self._version)

    def detach_(self):
        """torch.Tensor.detach_: drop self's autograd history in place."""
        self.grad_fn = None
        self.requires_grad = False
        return self

    def requires_grad_(self, requires_grad=True):
        """torch.Tensor.requires_grad_: set requires_grad in place (leaf tensors, floating point
        only) and return self."""
        if not self.is_leaf and not requires_grad:
            raise RuntimeError("you can only change requires_grad flags of leaf variables. If you "
                               "want to use a computed variable in a subgraph that doesn't require "
                               "differentiation use var_no_grad = var.detach().")
        if requires_grad and not (self.dtype.is_floating_point or self.dtype.is_complex):
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        self.requires_grad = requires_grad
        return self

    def retain_grad(self):
        """torch.Tensor.retain_grad: have backward fill .grad of this non-leaf tensor too."""
        if not self.requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self.is_leaf or self._retains_grad:
            return
        self._retains_grad = True
        import weakref
        ref = weakref.ref(self)

        def store_grad(grad):
            owner = ref()
            if owner is not None:
                owner.grad = grad.detach().clone() if owner.grad is None else owner.grad + grad
        store_grad.retains_grad = True      # runs after every other hook (autograd/engine.py)
        self._add_node_hook(store_grad)

    @property
    def retains_grad(self):
        """torch.Tensor.retains_grad: whether retain_grad() was called on this non-leaf tensor."""
        return self._retains_grad

    def register_hook(self, hook):
        """hook(grad) -> Tensor or None, called when this tensor's gradient is computed."""
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is None:
            if self._hooks is None:
                self._hooks = {}
            handle = RemovableHandle(self._hooks)
            self._hooks[handle.id] = hook
            return handle
        return self._add_node_hook(hook)

    def register_post_accumulate_grad_hook(self, hook):
        """torch.Tensor.register_post_accumulate_grad_hook: hook(tensor) runs after backward has
        accumulated this leaf's .grad; returns a removable handle."""
        if not self.is_leaf:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf "
                               "tensors")
        if not hasattr(self, "_post_accumulate_hooks"):
            self._post_accumulate_hooks = {}
        handle = RemovableHandle(self._post_accumulate_hooks)
        self._post_accumulate_hooks[handle.id] = hook
        return handle

    def _add_node_hook(self, hook):
        node = self.grad_fn
        hooks = node.__dict__.setdefault("_tensor_hooks", {})
        per_output = hooks.setdefault(self._output_nr, {})
        handle = RemovableHandle(per_output)
        per_output[handle.id] = hook
        return handle

    def _check_inplace(self):
        """torch's rule: a leaf that requires grad (or a view of one) can't be modified in place
        while recording."""
        if not _grad_mode.enabled:
            return
        if getattr(self, "_no_grad_view", False):
            raise RuntimeError(
                "A view was created in no_grad mode and is being modified inplace with grad mode "
                "enabled. Given that this use case is ambiguous and error-prone, it is forbidden. "
                "You can clarify your code by moving both the view and the inplace either both "
                "inside the no_grad block (if you don't want the inplace to be tracked) or both "
                "outside (if you want the inplace to be tracked).")
        if self.requires_grad and self.grad_fn is None:
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                               "operation.")
        base = self._base
        if base is not None and base.requires_grad and base.grad_fn is None:
            raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                               "in-place operation.")

    def _bump_version(self):
        self._version[0] += 1

    # ---- creation from a tensor (its dtype and device by default) -----------------------------
    def new_tensor(self, data, dtype=None, device=None, requires_grad=False):
        """torch.Tensor.new_tensor: a copy of data as a tensor in self's dtype and device (unless
        given)."""
        if isinstance(data, Tensor) and called_from_user():
            _warn_copy_construct("tensor.new_tensor(sourceTensor)")
        return tensor(data, dtype=dtype or self.dtype, device=device or self.device,
                      requires_grad=requires_grad)

    def new_zeros(self, *size, dtype=None, device=None, requires_grad=False, **kwargs):
        """torch.Tensor.new_zeros: zeros of the given size in self's dtype and device (unless
        given)."""
        return zeros(*_keyword_size(size, kwargs, "new_zeros"), dtype=dtype or self.dtype,
                     device=device or self.device, requires_grad=requires_grad)

    def new_empty(self, *size, dtype=None, device=None, requires_grad=False, **kwargs):
        """Zeroed here (torch leaves the memory uninitialised)."""
        return zeros(*_keyword_size(size, kwargs, "new_empty"), dtype=dtype or self.dtype,
                     device=device or self.device, requires_grad=requires_grad)

    def new_empty_strided(self, size, stride, dtype=None, device=None, requires_grad=False):
        """torch.Tensor.new_empty_strided: empty_strided in self's dtype and device (unless
        given); zeroed here."""
        return empty_strided(size, stride, dtype=dtype or self.dtype, device=device or self.device,
                             requires_grad=requires_grad)

    def new_ones(self, *size, dtype=None, device=None, requires_grad=False, **kwargs):
        """torch.Tensor.new_ones: ones of the given size, in self's dtype and device unless
        given."""
        return ones(*_keyword_size(size, kwargs, "new_ones"), dtype=dtype or self.dtype,
                    device=device or self.device, requires_grad=requires_grad)

    def new_full(self, size, fill_value, dtype=None, device=None, requires_grad=False):
        """torch.Tensor.new_full: size filled with fill_value, in self's dtype and device unless
        given."""
        return full(size, fill_value, dtype=dtype or self.dtype, device=device or self.device,
                    requires_grad=requires_grad)

    def new(self, *args, dtype=None, device=None):
        """torch's legacy Tensor.new: sizes give an (here zeroed) tensor, data a copy of it, in
        self's dtype and device."""
        dtype, device = dtype or self.dtype, device or self.device
        if len(args) == 1 and not isinstance(args[0], numbers.Integral):
            return tensor(args[0], dtype=dtype, device=device)
        return zeros(*(args or (0,)), dtype=dtype, device=device)

    # ---- storage-level rewrites ---------------------------------------------------------------
    def resize_(self, *sizes, memory_format=None):
        """torch's resize_: the same elements in row-major order under the new shape, truncated,
        or extended with zeros (torch leaves those uninitialised); a new buffer when it grows.
        memory_format channels_last(_3d) lays the storage out in that order instead (torch's
        restride: the values keep their places in memory)."""
        if self.requires_grad:
            raise RuntimeError("cannot resize variables that require grad")
        shape = tuple(_shape_args(sizes))
        fmt = check_memory_format(memory_format, "resize_")
        if fmt is preserve_format:
            raise RuntimeError("Unsupported memory formatPreserve")
        order = None
        if fmt is not None and fmt is not contiguous_format:
            template = NDArray(None, shape, contiguous_strides(shape), 0, None, None, None)
            order, strides = layout_for(template, fmt)
        flat = self._data.compact().reshape((self.numel(),))
        n = shape_numel(shape)
        if n <= flat.size:
            data = flat[:n].compact() if n < flat.size else flat
        else:
            data = NDArray.full((n,), 0, self.dtype, self.device)
            if flat.size:
                data[:flat.size] = flat
        if order is None:
            self._data = data.reshape(shape)
        else:
            self._data = NDArray(data.buffer, shape, strides, data.offset, data.dtype,
                                 data.device, data.backend)
        self._bump_version()
        return self

    def resize_as_(self, other, memory_format=None):
        """torch.Tensor.resize_as_: resize_ to other's sizes in memory_format (default
        contiguous, whatever other's layout, as torch)."""
        return self.resize_(*other.shape, memory_format=memory_format)

    def apply_(self, callable):
        """Every element replaced by callable(element), a Python function (CPU only, as torch)."""
        if self.device.type != "cpu":
            raise TypeError("apply_ is only implemented on CPU tensors")
        return self._write_python_values([callable(v) for v in self._python_values()])

    def map_(self, tensor, callable):
        """self[i] = callable(self[i], tensor[i]) with tensor broadcast to self (CPU only)."""
        if self.device.type != "cpu" or tensor.device.type != "cpu":
            raise TypeError("map_ is only implemented on CPU tensors")
        pairs = zip(self._python_values(), tensor.expand(*self.shape)._python_values())
        return self._write_python_values([callable(a, b) for a, b in pairs])

    def _python_values(self):
        return self._data.values().reshape(-1).tolist()

    def _write_python_values(self, values):
        """apply_ / map_'s results (a flat list in row-major order) written into self."""
        self._data.assign(NDArray.from_numpy(np.asarray(values).reshape(self.shape), self.dtype))
        self._bump_version()
        return self

    def ravel(self):
        """torch.Tensor.ravel: a 1-D view when possible, else a copy (reshape(-1))."""
        return self.reshape(-1)

    def adjoint(self):
        """torch.Tensor.adjoint: the conjugate transpose of the last two dims (real tensors: the
        transpose)."""
        return _matrix_transpose(self, "tensor.adjoint()", "adjoint() is deprecated on 0-D "
                                 "tensors. Consider using x.conj().").conj()


Tensor._from_data = staticmethod(wrap)


def wrap_into(target, data, requires_grad=False):
    """Initialise an already-allocated Tensor (or subclass) around `data`."""
    target._data = data
    target._version = [0]
    target.requires_grad = requires_grad


def _rebuild(array, dtype_name, device_name, requires_grad):
    """Unpickling: `array` holds the values in the dtype's storage (bfloat16's words)."""
    dtype = dtypes.from_name(dtype_name)
    if dtype is dtypes.bfloat16:
        data = NDArray.from_storage(array, dtype, Device(device_name))
        return wrap(data).requires_grad_(requires_grad)
    return tensor(array, dtype=dtype, device=device_name, requires_grad=requires_grad)


def _rebuild_meta(shape, strides, dtype_name, requires_grad):
    """Unpickling (deepcopy) a meta tensor: torch's _rebuild_meta_tensor_no_storage."""
    return empty_strided(shape, strides, dtype=dtypes.from_name(dtype_name), device="meta",
                         requires_grad=requires_grad)


# ---- creation ---------------------------------------------------------------------------------
def _infer_dtype(data):
    """The dtype torch.tensor infers for nested Python data."""
    array = np.asarray(data)
    if isinstance(data, (np.ndarray, np.generic)) and array.dtype.kind == "f":
        return dtypes.from_numpy(array.dtype)
    if array.dtype.kind in "fuO" and not isinstance(data, (np.ndarray, np.generic)):
        _check_int64_range(data, array)
    if array.dtype == object:
        odd = next(v for v in _python_leaves(data)
                   if not isinstance(v, (numbers.Number, np.generic)))
        raise RuntimeError(f"Could not infer dtype of {type(odd).__name__}")
    if array.dtype.kind == "f":
        return dtypes.get_default_dtype()
    if array.dtype.kind == "c":     # Python complex numbers: the default float's complex dtype
        if isinstance(data, (np.ndarray, np.generic)):
            return dtypes.from_numpy(array.dtype)
        return dtypes.get_default_dtype().complex_dtype
    if array.dtype.kind in "iu":     # numpy uint8 (arrays, scalars, uint8 tensors) stays uint8
        return dtypes.uint8 if array.dtype == np.uint8 else dtypes.int64
    if array.dtype.kind == "b":
        return dtypes.bool_
    raise TypeError(f"Could not infer dtype of {array.dtype}")


def _check_int64_range(data, array):
    """torch's error for Python ints beyond int64 in integer data (numpy made them uint64, a
    float or an object array). A float anywhere makes the data float, which is fine."""
    if array.dtype.kind == "f" and not np.abs(array).max(initial=0) >= 2.0 ** 63 or \
            array.dtype.kind == "u" and array.dtype.itemsize == 1:
        return
    leaves = _python_leaves(data)
    if not any(isinstance(v, float) for v in leaves) and any(
            isinstance(v, int) and not -2 ** 63 <= v < 2 ** 63 for v in leaves):
        raise ValueError("Overflow when unpacking long long")


def _python_leaves(data):
    if isinstance(data, (list, tuple)):
        return [leaf for item in data for leaf in _python_leaves(item)]
    return [data]


def tensor(data, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """torch.tensor: always copies `data` (nested lists, scalars, numpy arrays, Tensors).
    pin_memory is accepted and changes nothing (see Tensor.pin_memory)."""
    dtypes.check_dtype_arg("tensor", dtype)
    if isinstance(data, Tensor):
        if called_from_user():
            _warn_copy_construct("torch.tensor(sourceTensor)")
        dtype = dtype or data.dtype     # (bfloat16's values come as float32)
        data = data.detach().cpu()._data.values()
    elif isinstance(data, (list, tuple)) and data and _contains_tensor(data):
        data = [np.asarray(x.detach().cpu()._data.values()) if isinstance(x, Tensor) else x
                for x in data]
    if dtype is None:
        dtype = _infer_dtype(data)
    array = np.asarray(data)
    if dtype is dtypes.uint8:
        if not isinstance(data, (np.ndarray, np.generic)):
            _check_python_values(array, dtype)
    elif array.dtype.kind == "f" and dtype is dtypes.int64 and np.isnan(array).any():
        raise RuntimeError("value cannot be converted to type int64 without overflow")
    nd = NDArray.from_numpy(array, dtype, target_device(device))
    if requires_grad and not (dtype.is_floating_point or dtype.is_complex):
        raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                           "gradients")
    return wrap(nd, requires_grad)


def _warn_copy_construct(what):
    """torch's warning for a tensor copy-constructed from a Tensor (torch.tensor(t),
    t.new_tensor(t)), pointing at the user's line."""
    warnings.warn("To copy construct from a tensor, it is recommended to use "
                  "sourceTensor.detach().clone() or sourceTensor.detach().clone()"
                  f".requires_grad_(True), rather than {what}.", UserWarning, stacklevel=3)


def _check_python_values(array, dtype):
    """torch.tensor range-checks Python numbers (not numpy arrays) against a uint8 dtype: ints
    in [-255, 255], floats in [0, 255] (see dtypes.check_scalar_fits)."""
    if array.size == 0 or array.dtype.kind == "b" or dtype.is_floating_point:
        return      # torch.tensor([1e6], dtype=float16) rounds to inf: no check for floats
    low, high = array.min(), array.max()
    for value in (low, high):           # NaN propagates through min/max and fails the check
        dtypes.check_scalar_fits(value.item(), dtype, type_name=dtype.name)


def _contains_tensor(seq):
    return any(isinstance(x, Tensor) or (isinstance(x, (list, tuple)) and _contains_tensor(x))
               for x in seq)


def as_tensor(data, dtype=None, device=None):
    """torch.as_tensor: a tensor or a numpy array of our dtype on the CPU is shared, not
    copied."""
    if isinstance(data, Tensor):
        return data.to(device=device, dtype=dtype)
    if isinstance(data, np.ndarray) and target_device(device) == CPU and \
            data.dtype in _SHAREABLE and (dtype is None or dtype.numpy_dtype == data.dtype):
        return from_numpy(data)
    return tensor(data, dtype=dtype, device=device)


_SHAREABLE = frozenset(d.numpy_dtype for d in dtypes.ALL + dtypes.COMPLEX)    # native byte order only


def from_numpy(array):
    """torch.from_numpy: shares memory with `array` (any view with non-negative strides, as
    torch) when its dtype is one of ours; other dtypes become ours in a copy."""
    array = np.asarray(array)
    dtype = dtypes.from_numpy(array.dtype)
    if array.flags.c_contiguous and array.size and array.dtype in _SHAREABLE and \
            dtype is not dtypes.bool_:      # the common case: the flat view is the buffer
        return wrap(NDArray(array.reshape(-1), array.shape, contiguous_strides(array.shape), 0,
                            dtype, CPU, get_backend(CPU)))
    strides = _element_strides(array)
    if array.dtype not in _SHAREABLE or array.size == 0:
        return tensor(array, dtype=dtype)
    if dtype is dtypes.bool_:
        array = array.view(np.uint8)            # bool's storage is bytes (dtypes.py)
    return wrap(NDArray(_base_buffer(array, strides), tuple(array.shape), strides, 0, dtype, CPU,
                        get_backend(CPU)))


def _element_strides(array):
    """array's strides in elements, refused as torch.from_numpy refuses them."""
    itemsize = array.dtype.itemsize
    if any(s < 0 for s in array.strides):
        raise ValueError("At least one stride in the given numpy array is negative, and tensors "
                         "with negative strides are not currently supported. (You can probably "
                         "work around this by making a copy of your array  with array.copy().) ")
    if any(s % itemsize for s in array.strides):
        raise ValueError("given numpy array strides not a multiple of the element byte size. "
                         "Copy the numpy array to reallocate the memory.")
    return tuple(s // itemsize for s in array.strides)


def _base_buffer(array, strides):
    """The flat 1-D run of memory a (non-empty) strided view spans, starting at its first
    element: a numpy view that keeps `array`'s memory alive, so the tensor shares it."""
    extent = 1 + sum((n - 1) * s for n, s in zip(array.shape, strides))
    return np.lib.stride_tricks.as_strided(array, (extent,), (array.dtype.itemsize,))


def _shape_args(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list, Size)):
        return tuple(size[0])
    return tuple(size)


def _keyword_size(size, kwargs, function):
    """The sizes of `zeros(2, 3)`, `zeros((2, 3))` or `zeros(size=(2, 3))`, with torch's
    errors for an unknown keyword, a size given twice, or a keyword size that is no tuple."""
    if kwargs:
        unknown = next((k for k in kwargs if k != "size"), None)
        if unknown is not None:
            raise TypeError(f"{function}() got an unexpected keyword argument '{unknown}'")
        if size:
            raise TypeError(f"{function}() got multiple values for argument 'size'")
        if not isinstance(kwargs["size"], (tuple, list, Size)):
            raise TypeError(f"{function}(): argument 'size' must be tuple of ints, not "
                            f"{type(kwargs['size']).__name__}")
        return (tuple(kwargs["size"]),)
    return size


def _make(size, dtype, device, requires_grad, fill, function):
    dtype = dtypes.check_dtype_arg(function, dtype) or dtypes.get_default_dtype()
    nd = NDArray.full(_shape_args(size), fill, dtype, target_device(device))
    return wrap(nd, requires_grad)


def zeros(*size, dtype=None, device=None, requires_grad=False, out=None, **kwargs):
    """torch.zeros: a tensor of zeros (default float dtype unless dtype is given); with out=,
    out resized and zeroed in its own dtype, and returned."""
    size = _keyword_size(size, kwargs, "zeros")
    if out is not None:
        return _fill_out(out, size, dtype, device, requires_grad, 0, "zeros")
    return _make(size, dtype, device, requires_grad, 0, "zeros")


def ones(*size, dtype=None, device=None, requires_grad=False, out=None, **kwargs):
    """torch.ones: a tensor of ones (default float dtype unless dtype is given); with out=, out
    resized and filled with ones in its own dtype, and returned."""
    size = _keyword_size(size, kwargs, "ones")
    if out is not None:
        return _fill_out(out, size, dtype, device, requires_grad, 1, "ones")
    return _make(size, dtype, device, requires_grad, 1, "ones")


def _fill_out(out, size, dtype, device, requires_grad, fill, function):
    """zeros/ones(..., out=out): out is resized (without torch's warning for ops: factories
    resize silently) and filled; a dtype other than out's is refused as torch refuses it."""
    dtype = dtypes.check_dtype_arg(function, dtype)
    if isinstance(out, Tensor) and dtype is not None and dtype is not out.dtype:
        raise RuntimeError(f"dtype {dtype.torch_name} does not match dtype of out "
                           f"parameter ({out.dtype.torch_name})")
    result = _make(size, getattr(out, "dtype", None), device or getattr(out, "device", None),
                   False, fill, function)
    write_out(out, result, f"aten::{function}", warn_resize=False)
    return out.requires_grad_() if requires_grad else out


def empty(*size, dtype=None, device=None, requires_grad=False, memory_format=None,
          **kwargs):
    """torch.empty: a new tensor of the given size, zeroed here (torch leaves the memory
    uninitialised); memory_format contiguous_format (default) or channels_last(_3d)."""
    size = _keyword_size(size, kwargs, "empty")
    fmt = check_memory_format(memory_format, "empty")
    if fmt is None or fmt is contiguous_format:
        return _make(size, dtype, device, requires_grad, 0, "empty")
    if fmt is preserve_format:
        raise RuntimeError("unsupported memory format Preserve")
    shape = _shape_args(size)
    template = NDArray(None, shape, contiguous_strides(shape), 0, None, None, None)
    return _make_in_layout(template, fmt, dtype or dtypes.get_default_dtype(), device,
                           requires_grad, 0, "empty")


def _make_in_layout(template, fmt, dtype, device, requires_grad, fill, function):
    """A tensor shaped like the NDArray `template`, laid out as memory format `fmt` makes a new
    tensor from it (None: preserve_format), filled with `fill`."""
    dtype = dtypes.check_dtype_arg(function, dtype)
    order, strides = layout_for(template, check_memory_format(fmt, function))
    nd = full_in_layout(template.shape, order, strides, fill, dtype,
                        Device(device) if device else CPU)
    return wrap(nd, requires_grad)


def _like(input, dtype, device, requires_grad, fmt, fill, function):
    """zeros_like / ones_like / empty_like: `fill` in input's shape, dtype, device and layout
    unless told otherwise."""
    template = input._data
    if dtype is None and device is None and fmt is None and \
            template.strides == contiguous_strides(template.shape):
        # the common call (a physics step's zeros_like(pos)): a compact input's own layout
        return wrap(NDArray.full(template.shape, fill, template.dtype, template.device),
                    requires_grad)
    return _make_in_layout(template, fmt, dtype or input.dtype, device or input.device,
                           requires_grad, fill, function)


def full(size, fill_value, dtype=None, device=None, requires_grad=False):
    """torch.full: fill_value everywhere; without dtype, the dtype follows fill_value as in torch
    (bool, int64, or the default float dtype)."""
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    if dtypes.check_dtype_arg("full", dtype) is None:
        dtype = dtypes.scalar_dtype(fill_value)
    size = tuple(size)
    dtypes.check_scalar_fits(fill_value, dtype, narrow_floats=shape_numel(size) != 1)
    return _make((size,), dtype, device, requires_grad, fill_value, "full")


def zeros_like(input, dtype=None, device=None, requires_grad=False, memory_format=None):
    """torch.zeros_like: zeros with input's size, and its dtype and device unless given, laid
    out as memory_format says (default preserve_format: input's strides when it is dense)."""
    return _like(input, dtype, device, requires_grad, memory_format, 0, "zeros_like")


def ones_like(input, dtype=None, device=None, requires_grad=False, memory_format=None):
    """torch.ones_like: ones with input's size, and its dtype and device unless given, laid
    out as memory_format says (default preserve_format: input's strides when it is dense)."""
    return _like(input, dtype, device, requires_grad, memory_format, 1, "ones_like")


def empty_like(input, dtype=None, device=None, requires_grad=False, memory_format=None):
    """torch.empty_like: a new tensor with input's size, dtype and device (unless given), laid
    out as memory_format says (default preserve_format); zeroed here (torch leaves it
    uninitialised)."""
    return _like(input, dtype, device, requires_grad, memory_format, 0, "empty_like")


def full_like(input, fill_value, dtype=None, device=None, requires_grad=False,
              memory_format=None):
    """torch.full_like: fill_value everywhere, with input's size, and its dtype and device unless
    given, laid out as memory_format says (default preserve_format)."""
    dtypes.check_dtype_arg("full_like", dtype)
    dtype = dtype or input.dtype
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    dtypes.check_scalar_fits(fill_value, dtype)
    return _make_in_layout(input._data, memory_format, dtype, device or input.device,
                           requires_grad, fill_value, "full_like")


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad=False):
    """torch.arange: start, start + step, ... up to end (excluded); int64 when every bound is an
    integer, else the default float dtype. Float values are computed in float64 and rounded, so
    float32 results may differ from torch's in the last bit."""
    dtypes.check_dtype_arg("arange", dtype)
    if end is None:
        start, end = 0, start
    values = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    if dtype is None:
        dtype = dtypes.int64 if all(isinstance(v, numbers.Integral) for v in values) else \
            dtypes.get_default_dtype()
    if values[2] == 0:
        raise RuntimeError("step must be nonzero")
    if not dtype.is_floating_point:
        values = [int(v) for v in values]      # torch casts the bounds to the dtype first
        if values[2] == 0:
            raise ValueError("step must be nonzero")
    if (values[1] - values[0]) * values[2] < 0:
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    array = np.arange(*values, dtype=np.float64 if dtype.is_floating_point else np.int64)
    return tensor(array, dtype=dtype, device=device, requires_grad=requires_grad)


def inclusive_range(start=0, end=None, step=1, dtype=None, device=None,
                    requires_grad=False):
    """torch.range (deprecated): like arange but the end is included, and float by default."""
    warnings.warn("torch.range is deprecated and will be removed in a future release because "
                  "its behavior is inconsistent with Python's range builtin. Instead, use "
                  "torch.arange, which produces values in [start, end).", UserWarning)
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("step must be nonzero")
    count = int(math.floor((end - start) / step)) + 1
    array = start + step * np.arange(max(count, 0), dtype=np.float64)
    return tensor(array, dtype=dtype or dtypes.get_default_dtype(), device=device,
                  requires_grad=requires_grad)


def scalar_tensor(s, dtype=None, device=None, requires_grad=False):
    """A 0-d tensor of the default float dtype (whatever the Python type of s)."""
    return full((), s, dtype=dtype or dtypes.get_default_dtype(), device=device,
                requires_grad=requires_grad)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    """obj as a tensor, sharing memory when it already is one of the right dtype and device
    (and copy is not True)."""
    if isinstance(obj, Tensor):
        same = (dtype is None or obj.dtype is dtype) and (
            device is None or obj.device == Device(device))
        if same and not copy:
            return obj
        result = obj.to(device=device or obj.device, dtype=dtype or obj.dtype, copy=bool(copy))
        return result.requires_grad_() if requires_grad else result
    if copy is False and not isinstance(obj, np.ndarray):
        raise ValueError("can't alias Python data without copying")
    if isinstance(obj, np.ndarray) and copy is not True and dtype is None and device is None:
        return from_numpy(obj).requires_grad_(requires_grad)
    return tensor(obj, dtype=dtype, device=device, requires_grad=requires_grad)


def empty_strided(size, stride, *, dtype=None, device=None, requires_grad=False):
    """An uninitialised (here: zeroed) tensor viewing its storage with the given strides."""
    size, stride = tuple(size), tuple(stride)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    extent = 1 + sum((n - 1) * st for n, st in zip(size, stride)) if all(size) else 0
    storage = zeros(extent, dtype=dtype, device=device)
    return storage.as_strided(size, stride).requires_grad_(requires_grad)


def linspace(start, end, steps, dtype=None, device=None, requires_grad=False):
    """torch.linspace: steps evenly spaced values from start to end (both included). Computed in
    float64 and rounded to the dtype, so float32 values may differ from torch's in the last bit."""
    if steps < 0:
        raise RuntimeError("linspace(): number of steps must be non-negative")
    array = np.linspace(float(start), float(end), steps)
    return tensor(array, dtype=dtype or dtypes.get_default_dtype(), device=device,
                  requires_grad=requires_grad)


def logspace(start, end, steps, base=10.0, dtype=None, device=None, requires_grad=False):
    """torch.logspace: base ** linspace(start, end, steps). Computed in float64 and rounded to the
    dtype, so float32 values may differ from torch's in the last bit."""
    array = np.logspace(float(start), float(end), steps, base=base)
    return tensor(array, dtype=dtype or dtypes.get_default_dtype(), device=device,
                  requires_grad=requires_grad)


def eye(n, m=None, dtype=None, device=None, requires_grad=False):
    """torch.eye: an n x m (m defaults to n) matrix with ones on the diagonal, in the default float
    dtype unless dtype is given."""
    array = np.eye(n, n if m is None else m)
    return tensor(array, dtype=dtype or dtypes.get_default_dtype(), device=device,
                  requires_grad=requires_grad)


def is_tensor(obj):
    """torch.is_tensor: whether obj is a Tensor (subclasses such as Parameter included)."""
    return isinstance(obj, Tensor)


def numel(input):
    """torch.numel: the number of elements of input."""
    return input.numel()


def is_floating_point(input):
    """torch.is_floating_point: whether input's dtype is float32 or float64."""
    return input.is_floating_point()


def is_complex(input):
    """torch.is_complex: whether input's dtype is complex64 or complex128."""
    return input.is_complex()


def is_nonzero(input):
    """The truth of a one-element tensor (torch's errors otherwise)."""
    if input.numel() == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if input.numel() > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(input.item())


def is_same_size(input, other):
    """torch.is_same_size: whether input and other have the same sizes."""
    return input.is_same_size(other)


def is_signed(input):
    """torch.is_signed: False for uint8 and bool, True otherwise."""
    return input.is_signed()


# ---- legacy typed constructors (torch.FloatTensor, ...) ---------------------------------------
class _LegacyTensorType(type):
    """The metaclass of mt.FloatTensor & co., as torch's: calling one builds a Tensor of its
    dtype (on the CPU), and `isinstance(t, mt.FloatTensor)` asks whether t is a float32 CPU
    tensor. They are not subclasses of Tensor and `type(mt.FloatTensor(2))` is Tensor."""

    def __call__(cls, *args, device=None):
        if device is not None and Device(device) != CPU:
            raise RuntimeError(f"legacy constructor expects device type: cpu but device type: "
                               f"{Device(device).type} was passed")
        return _legacy_new(cls.dtype, args)

    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor) and obj.dtype is cls.dtype and obj.device.type == "cpu"

    @property
    def is_cuda(cls):
        return False

    @property
    def is_sparse(cls):
        return False


def _legacy_new(dtype, args):
    """T(), T(*sizes) / T(mt.Size) (uninitialised in torch; zeroed here), T(tensor of dtype)
    (an alias), T(data: sequence or ndarray) (converted, as torch converts an ndarray)."""
    if not args:
        return zeros(0, dtype=dtype)
    if len(args) == 1 and isinstance(args[0], Tensor):
        source = args[0]
        if source.dtype is not dtype or source.device.type != "cpu":
            raise TypeError(f"expected a cpu tensor of dtype {dtype} (got one of dtype "
                            f"{source.dtype} on {source.device})")
        return wrap(source._data)
    if len(args) == 1 and isinstance(args[0], Size):
        return zeros(tuple(args[0]), dtype=dtype)
    if len(args) == 1 and not isinstance(args[0], numbers.Integral):
        return tensor(args[0], dtype=dtype)
    for position, size in enumerate(args):
        if not isinstance(size, numbers.Integral) or isinstance(size, bool):
            raise TypeError(f"new(): argument 'size' failed to unpack the object at pos "
                            f"{position + 1} with error \"type must be tuple of ints,but got "
                            f"{type(size).__name__}\"")
        if size < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {size}: "
                               f"{list(args)}")
    return zeros(*args, dtype=dtype)


def _legacy_type(name, dtype):
    return _LegacyTensorType(name, (), {"dtype": dtype,
                                        "__module__": "minitorch", "__doc__":
                                        f"torch.{name}: the legacy {dtype.name} "
                                        "constructor (see _legacy_new)."})


FloatTensor = _legacy_type("FloatTensor", dtypes.float32)
DoubleTensor = _legacy_type("DoubleTensor", dtypes.float64)
LongTensor = _legacy_type("LongTensor", dtypes.int64)
ByteTensor = _legacy_type("ByteTensor", dtypes.uint8)
BoolTensor = _legacy_type("BoolTensor", dtypes.bool_)
IntTensor = _legacy_type("IntTensor", dtypes.int32)
ShortTensor = _legacy_type("ShortTensor", dtypes.int16)
CharTensor = _legacy_type("CharTensor", dtypes.int8)
HalfTensor = _legacy_type("HalfTensor", dtypes.float16)
BFloat16Tensor = _legacy_type("BFloat16Tensor", dtypes.bfloat16)
LEGACY_TYPES = ("FloatTensor", "DoubleTensor", "LongTensor", "ByteTensor", "BoolTensor",
                "IntTensor", "ShortTensor", "CharTensor", "HalfTensor", "BFloat16Tensor")
