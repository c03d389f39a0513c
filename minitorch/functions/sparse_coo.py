"""Sparse COO tensors (torch.sparse_coo): int64 indices (sparse_dim, nnz) and values (nnz,
*dense dims), the basics graph-network scripts use: sparse_coo_tensor, to_sparse, to_dense,
coalesce, indices / values, and sparse @ dense (torch.sparse.mm, spmm, mm, matmul).

Everything is dense Tensor ops on the indices and values, so it runs on every device and
autograd reaches the values and the dense operand: sparse @ dense gathers the dense rows at the
column indices (index_select), scales them by the values and adds them into the result's rows
(index_add); to_dense and coalesce add values into their (flat) positions with index_add.

A SparseCooTensor is not a Tensor: the dense ops it lacks are not silently densified, they are
missing (AttributeError), and `mt.mm` / `mt.matmul` take one only as their first operand.
"""
import math

from .. import dtypes
from ..tensor import Tensor, sparse_coo, tensor as _tensor, zeros
from .index import index_select
from .joining import stack

__all__ = ["SparseCooTensor", "sparse_coo_tensor", "to_sparse", "sparse_mm"]


class SparseCooTensor:
    """torch's sparse COO tensor: `indices` (sparse_dim, nnz) int64, `values` (nnz, *dense
    dims), `size` the dense shape. Gradients reach `values` (a leaf made with
    requires_grad=True gets a sparse .grad with the same indices)."""
    is_sparse = True
    is_sparse_csr = False
    layout = sparse_coo

    def __init__(self, indices, values, size, coalesced=False):
        self._indices_, self._values_ = indices, values
        self._size = tuple(size)
        self._coalesced = coalesced

    # ---- what it is ---------------------------------------------------------------------------
    @property
    def shape(self):
        return _size(self._size)

    def size(self, dim=None):
        """torch.Tensor.size: the dense shape (or one of its sizes)."""
        return self.shape if dim is None else self._size[dim]

    def dim(self):
        """torch.Tensor.dim: sparse_dim + dense_dim."""
        return len(self._size)

    ndim = property(dim)

    def sparse_dim(self):
        """torch.Tensor.sparse_dim: the number of indexed (sparse) dims."""
        return self._indices_.shape[0]

    def dense_dim(self):
        """torch.Tensor.dense_dim: the dims each value carries."""
        return self._values_.ndim - 1

    def _nnz(self):
        """torch.Tensor._nnz: the number of stored entries (duplicates counted)."""
        return self._values_.shape[0]

    @property
    def dtype(self):
        return self._values_.dtype

    @property
    def device(self):
        return self._values_.device

    @property
    def is_cuda(self):
        return self._values_.is_cuda

    @property
    def requires_grad(self):
        return self._values_.requires_grad

    def requires_grad_(self, requires_grad=True):
        """torch.Tensor.requires_grad_: on the values."""
        self._values_.requires_grad_(requires_grad)
        return self

    @property
    def grad(self):
        """The sparse gradient: the values' gradient at these indices (None before one)."""
        g = self._values_.grad
        return None if g is None else SparseCooTensor(self._indices_, g, self._size,
                                                      self._coalesced)

    def is_coalesced(self):
        """torch.Tensor.is_coalesced: True once coalesce() sorted and summed the indices."""
        return self._coalesced

    def indices(self):
        """torch.Tensor.indices (coalesced tensors only, as torch)."""
        self._require_coalesced("indices")
        return self._indices_

    def values(self):
        """torch.Tensor.values (coalesced tensors only, as torch)."""
        self._require_coalesced("values")
        return self._values_

    def _indices(self):
        """torch.Tensor._indices: the stored indices, coalesced or not."""
        return self._indices_

    def _values(self):
        """torch.Tensor._values: the stored values, coalesced or not."""
        return self._values_

    def _require_coalesced(self, what):
        if not self._coalesced:
            raise RuntimeError(f"Cannot get {what} on an uncoalesced tensor, please call "
                               ".coalesce() first")

    def __repr__(self):
        pad = " " * len("tensor(indices=")
        indices = repr(self._indices_).replace("\n", "\n" + pad)
        pad = " " * len("       values=")
        values = repr(self._values_).replace("\n", "\n" + pad)
        extras = ""
        if self._values_.dtype.name != "float32" and self._values_.dtype.is_floating_point:
            extras = f", dtype={self._values_.dtype}"
        if self._values_.device.type != "cpu":
            extras += f", device='{self._values_.device}'"
        if self._values_.grad_fn is not None:
            extras += f", grad_fn=<{self._values_.grad_fn.name()}>"
        elif self._values_.requires_grad:
            extras += ", requires_grad=True"
        return (f"tensor(indices={indices},\n       values={values},\n       size="
                f"{self._size}, nnz={self._nnz()}{extras}, layout=torch.sparse_coo)")

    # ---- conversions --------------------------------------------------------------------------
    def coalesce(self):
        """torch.Tensor.coalesce: indices sorted (row-major) and unique, duplicates summed."""
        if self._coalesced:
            return self
        keys = _flat_keys(self._indices_, self._size[:self.sparse_dim()])
        unique, inverse = keys.unique(sorted=True, return_inverse=True)
        values = zeros((unique.shape[0],) + tuple(self._values_.shape[1:]),
                       dtype=self.dtype, device=self.device)
        values = values.index_add(0, inverse, self._values_)
        return SparseCooTensor(_unflatten(unique, self._size[:self.sparse_dim()]), values,
                               self._size, coalesced=True)

    def to_dense(self):
        """torch.Tensor.to_dense: duplicates summed; differentiable in the values."""
        sparse = self._size[:self.sparse_dim()]
        flat = zeros((math.prod(sparse),) + tuple(self._values_.shape[1:]), dtype=self.dtype,
                     device=self.device)
        keys = _flat_keys(self._indices_, sparse)
        return flat.index_add(0, keys, self._values_).reshape(self._size)

    def to(self, *args, **kwargs):
        """torch.Tensor.to: the indices and values moved / cast alike (dtype applies to values)."""
        values = self._values_.to(*args, **kwargs)
        return SparseCooTensor(self._indices_.to(values.device), values, self._size,
                               self._coalesced)

    def cuda(self, device=None):
        """torch.Tensor.cuda."""
        return self.to("cuda" if device is None else device)

    def cpu(self):
        """torch.Tensor.cpu."""
        return self.to("cpu")

    def double(self):
        """torch.Tensor.double (the values)."""
        return self.to(self._values_.double().dtype)

    def float(self):
        """torch.Tensor.float (the values)."""
        return self.to(self._values_.float().dtype)

    def detach(self):
        """torch.Tensor.detach: the same indices, detached values."""
        return SparseCooTensor(self._indices_, self._values_.detach(), self._size,
                               self._coalesced)

    def t(self):
        """torch.Tensor.t of a 2-D sparse tensor: rows and columns swapped."""
        if self.sparse_dim() != 2 or self.dense_dim() != 0:
            raise RuntimeError(f"t() expects a tensor with <= 2 sparse and 0 dense dimensions, "
                               f"but got {self.sparse_dim()} sparse and {self.dense_dim()} "
                               "dense dimensions")
        return SparseCooTensor(self._indices_.flip(0), self._values_, self._size[::-1])

    def __matmul__(self, other):
        return sparse_mm(self, other)

    mm = matmul = __matmul__


class _size(tuple):
    """The dense shape, printed as torch.Size like a Tensor's."""
    def __repr__(self):
        return f"torch.Size({list(self)})"


def _flat_keys(indices, sparse_size):
    """Row-major flat positions of the index columns within the sparse dims."""
    keys = None
    for d, extent in enumerate(sparse_size):
        keys = indices[d] if keys is None else keys * extent + indices[d]
    return keys


def _unflatten(keys, sparse_size):
    rows = []
    for extent in reversed(sparse_size):
        rows.append(keys % extent)
        keys = keys.div(extent, rounding_mode="floor")
    return stack(rows[::-1]) if rows else keys.reshape(0, keys.shape[0])


def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None,
                      requires_grad=False, check_invariants=None, is_coalesced=None):
    """torch.sparse_coo_tensor: entries `values` at `indices` (sparse_dim × nnz) of a tensor of
    `size` (by default each sparse size is its largest index + 1, each dense one the values').
    Indices are checked against size, as check_invariants=True does in torch."""
    indices = indices if isinstance(indices, Tensor) else _tensor(indices)
    values = values if isinstance(values, Tensor) else _tensor(values)
    if dtype is not None or device is not None:
        values = values.to(device=device, dtype=dtype)
    if indices.dtype.name != "int64":
        raise RuntimeError("indices must be an int64 tensor")
    if indices.ndim != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(indices.shape)}")
    if values.ndim == 0 or indices.shape[1] != values.shape[0]:
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from indices: "
                           f"{indices.shape[1]}, nnz from values: "
                           f"{values.shape[0] if values.ndim else 1}")
    indices = indices.to(values.device)
    sparse_dim = indices.shape[0]
    if size is None:
        top = indices.amax(1).tolist() if indices.shape[1] else [-1] * sparse_dim
        size = tuple(int(i) + 1 for i in top) + tuple(values.shape[1:])
    size = tuple(int(s) for s in size)
    if len(size) != sparse_dim + values.ndim - 1:
        raise RuntimeError(f"number of dimensions must be sparse_dim ({sparse_dim}) + dense_dim "
                           f"({values.ndim - 1}), but got {len(size)}")
    if tuple(values.shape[1:]) != size[sparse_dim:]:
        expected = [values.shape[0]] + list(size[sparse_dim:])
        raise RuntimeError(f"values has incorrect size, expected {expected}, got "
                           f"{list(values.shape)}")
    _check_indices(indices, size[:sparse_dim])
    if requires_grad:
        values = values.detach().requires_grad_()
    return SparseCooTensor(indices, values, size, coalesced=bool(is_coalesced) or
                           indices.shape[1] <= 1)


def _check_indices(indices, sparse_size):
    """torch's check_invariants: every index within [0, size) of its dim (one host read)."""
    if not indices.shape[1]:
        return
    low, high = indices.amin(1).tolist(), indices.amax(1).tolist()
    for d, (lo, hi, extent) in enumerate(zip(low, high, sparse_size)):
        if lo < 0:
            raise RuntimeError(f"found negative index {lo} for dim {d}")
        if hi >= extent:
            raise RuntimeError(f"size is inconsistent with indices: for dim {d}, size is "
                               f"{extent} but found index {hi}")


def to_sparse(input, sparse_dim=None):
    """torch.Tensor.to_sparse: the nonzero entries (rows of the first sparse_dim dims with any
    nonzero) as a coalesced COO tensor; differentiable in the input."""
    if isinstance(input, SparseCooTensor):
        return input
    sparse_dim = input.ndim if sparse_dim is None else sparse_dim
    if not 0 <= sparse_dim <= input.ndim:
        raise RuntimeError(f"sparse_dim argument must be in [0,{input.ndim}] range, but "
                           f"{sparse_dim} is given")
    nonzero = input != 0
    if sparse_dim < input.ndim:
        nonzero = nonzero.reshape(tuple(input.shape[:sparse_dim]) + (-1,)).any(-1)
    positions = nonzero.nonzero().t() if sparse_dim else \
        zeros(0, 1, dtype=dtypes.int64, device=input.device)
    values = input[tuple(positions)] if sparse_dim else input.unsqueeze(0)
    return SparseCooTensor(positions, values, input.shape, coalesced=True)


def sparse_mm(sparse, dense):
    """torch.sparse.mm / torch.spmm / sparse @ dense for a 2-D sparse (no dense dims) and a
    dense matrix: the dense rows at the column indices, scaled by the values, added into the
    result rows. Gradients reach the dense matrix and the sparse values."""
    if not isinstance(sparse, SparseCooTensor):
        raise TypeError(f"sparse.mm: expected a sparse COO tensor as the first argument, got "
                        f"{type(sparse).__name__}")
    if sparse.sparse_dim() != 2 or sparse.dense_dim() != 0:
        raise RuntimeError(f"addmm: matrices expected, got {sparse.sparse_dim()}D tensor")
    if not isinstance(dense, Tensor) or dense.ndim != 2:
        raise RuntimeError(f"addmm: matrices expected, got "
                           f"{dense.ndim if isinstance(dense, Tensor) else 0}D tensor")
    (n, k), (k2, m) = sparse.shape, dense.shape
    if k != k2:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({n}x{k} and {k2}x{m})")
    if sparse.dtype is not dense.dtype:
        raise RuntimeError(f"expected mat1 and mat2 to have the same dtype, but got: "
                           f"{sparse.dtype} != {dense.dtype}")
    if sparse.device != dense.device:
        raise RuntimeError(f"Expected all tensors to be on the same device, but found at least "
                           f"two devices, {sparse.device} and {dense.device}!")
    rows, cols = sparse._indices_[0], sparse._indices_[1]
    gathered = index_select(dense, 0, cols) * sparse._values_.unsqueeze(1)
    out = zeros(n, m, dtype=dense.dtype, device=dense.device)
    return out.index_add(0, rows, gathered)
