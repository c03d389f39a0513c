"""Sparse COO tensors (torch.sparse_coo): int64 indices (sparse_dim, nnz) and values (nnz,
*dense dims), what graph-network scripts use: sparse_coo_tensor, to_sparse, to_dense, coalesce,
indices / values, the arithmetic (sparse + sparse, dense + sparse, sparse * scalar / dense /
sparse, sparse / scalar, -sparse), the products (sparse @ dense, dense @ sparse, sparse @ sparse,
torch.sparse.addmm), torch.sparse.sum and sparse softmax / log_softmax.

Everything is dense Tensor ops on the indices and values, so it runs on every device and
autograd reaches the values and the dense operands: sparse @ dense gathers the dense rows at the
column indices (index_select), scales them by the values and adds them into the result's rows
(index_add); to_dense, dense + sparse and coalesce add values into their (flat) positions with
index_add; sparse * sparse looks the entries of one operand up in the other, coalesced one
(searchsorted on the flat positions).

Which results are coalesced follows torch: sparse + sparse of two coalesced tensors is their
coalesced union, otherwise the entries of both side by side (torch interleaves them in a merge
order minitorch does not copy; the dense value and coalesce() agree); sparse * sparse keeps
the entries of one operand (torch's choice of which), only the common ones when both are
coalesced; sums and softmax are coalesced; a transpose is not.

A SparseCooTensor is not a Tensor: the dense ops it lacks are not silently densified, they are
missing (AttributeError). `dense + sparse`, `dense @ sparse`, `dense * sparse` reach it through
Tensor's operators returning NotImplemented (Python then calls the reflected ones here).
"""
import math
import numbers

import numpy as np

from .. import dtypes
from ..autograd import _grad_mode
from ..ndarray import normalize_dim, normalize_dims
from ..tensor import Tensor, arange, sparse_coo, tensor as _tensor, zeros
from .elementwise import TORCH_NAMES, where
from .index import index_select
from .joining import broadcast_shapes, cat, stack
from .stats import bincount, searchsorted

_SCALARS = (numbers.Number, np.number, np.bool_)

__all__ = ["SparseCooTensor", "sparse_coo_tensor", "to_sparse", "sparse_mm", "sparse_addmm",
           "sparse_sum", "sparse_softmax", "sparse_log_softmax", "dense_to_dense",
           "add_sparse_into_", "sparse_mask_values"]


class SparseCooTensor:
    """torch's sparse COO tensor: `indices` (sparse_dim, nnz) int64, `values` (nnz, *dense
    dims), `size` the dense shape. Gradients reach `values` (a leaf made with
    requires_grad=True gets a sparse .grad with the same indices)."""
    is_sparse = True
    is_sparse_csr = False
    layout = sparse_coo
    __array_ufunc__ = None      # `ndarray op sparse` / `np.float64 * sparse`: ours, not numpy's

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

    @property
    def grad_fn(self):
        """The node that made the values (None for a gradient or a leaf)."""
        return self._values_.grad_fn

    @property
    def is_leaf(self):
        return self._values_.grad_fn is None

    def detach_(self):
        """torch.Tensor.detach_: the values leave the graph (Optimizer.zero_grad)."""
        self._values_ = self._values_.detach()
        return self

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
        unique, inverse = self._keys().unique(sorted=True, return_inverse=True)
        values = zeros((unique.shape[0],) + tuple(self._values_.shape[1:]),
                       dtype=self.dtype, device=self.device)
        values = values.index_add(0, inverse, self._values_)
        return SparseCooTensor(_unflatten(unique, self._size[:self.sparse_dim()]), values,
                               self._size, coalesced=True)

    def to_dense(self, dtype=None, *, masked_grad=None):
        """torch.Tensor.to_dense: duplicates summed; differentiable in the values."""
        if dtype is not None:
            raise RuntimeError("dtype argument is not supported by sparse_to_dense")
        flat = zeros((self._sparse_numel(),) + tuple(self._values_.shape[1:]),
                     dtype=self.dtype, device=self.device)
        return flat.index_add(0, self._keys(), self._values_).reshape(self._size)

    def _sparse_numel(self):
        return math.prod(self._size[:self.sparse_dim()])

    def _keys(self):
        """The row-major flat positions of the entries within the sparse dims (int64, nnz)."""
        keys = _flat_keys(self._indices_, self._size[:self.sparse_dim()])
        if keys is None:        # no sparse dims: every entry is at the one position
            keys = zeros(self._nnz(), dtype=dtypes.int64, device=self.device)
        return keys

    def to_sparse(self, sparse_dim=None):
        """torch.Tensor.to_sparse of a sparse tensor: itself."""
        return self

    def clone(self):
        """torch.Tensor.clone: the indices and values copied (differentiable in the values)."""
        return SparseCooTensor(self._indices_.clone(), self._values_.clone(), self._size,
                               self._coalesced)

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

    def _with_values(self, values, coalesced=None):
        """The same indices with other values (of the same nnz)."""
        return SparseCooTensor(self._indices_, values, self._size,
                               self._coalesced if coalesced is None else coalesced)

    # ---- views --------------------------------------------------------------------------------
    def t(self):
        """torch.Tensor.t of a sparse tensor of <= 2 sparse and no dense dims: rows and columns
        swapped (the result is not coalesced, as torch marks it)."""
        if self.sparse_dim() > 2 or self.dense_dim() != 0:
            raise RuntimeError(f"t() expects a tensor with <= 2 sparse and 0 dense dimensions, "
                               f"but got {self.sparse_dim()} sparse and {self.dense_dim()} "
                               "dense dimensions")
        return self.transpose(0, 1) if self.dim() == 2 else self._with_values(self._values_)

    def transpose(self, dim0, dim1):
        """torch.Tensor.transpose: two sparse dims swap their index rows (not coalesced
        after), two dense dims transpose the values."""
        ndim, sparse_dim = self.dim(), self.sparse_dim()
        dim0, dim1 = normalize_dim(dim0, ndim), normalize_dim(dim1, ndim)
        size = list(self._size)
        size[dim0], size[dim1] = size[dim1], size[dim0]
        if dim0 == dim1:
            return self._with_values(self._values_)
        if dim0 < sparse_dim and dim1 < sparse_dim:
            order = list(range(sparse_dim))
            order[dim0], order[dim1] = dim1, dim0
            indices = index_select(self._indices_, 0, _tensor(order, device=self.device))
            return SparseCooTensor(indices, self._values_, size)
        if dim0 >= sparse_dim and dim1 >= sparse_dim:
            values = self._values_.transpose(dim0 - sparse_dim + 1, dim1 - sparse_dim + 1)
            return SparseCooTensor(self._indices_, values, size, self._coalesced)
        raise RuntimeError("transpose(): can't transpose a sparse dimension with a dense "
                           "dimension")

    # ---- arithmetic ---------------------------------------------------------------------------
    def add(self, other, *, alpha=1):
        """torch.Tensor.add of a sparse tensor: sparse + alpha * sparse (a dense or scalar
        other is torch's error)."""
        if isinstance(other, SparseCooTensor):
            return _add_sparse(self, other, alpha)
        raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) "
                           "instead.")

    def sub(self, other, *, alpha=1):
        """torch.Tensor.sub: sparse - alpha * sparse."""
        if isinstance(other, SparseCooTensor):
            _check_alpha(self, other, alpha)
            return _add_sparse(self, other, -alpha)
        return self.add(other)

    def __add__(self, other):
        return self.add(other)

    def __sub__(self, other):
        return self.sub(other)

    def __radd__(self, other, *, alpha=1):
        """dense + alpha * sparse (torch.add(dense, sparse)): a dense result; a number + sparse
        is torch's error."""
        if isinstance(other, Tensor):
            return _add_to_dense(other, self, alpha)
        return self.add(other)

    def __rsub__(self, other, *, alpha=1):
        """dense - alpha * sparse."""
        if isinstance(other, Tensor):
            _check_alpha(other, self, alpha)
            return _add_to_dense(other, self, -alpha)
        return self.add(other)

    def mul(self, other):
        """torch.Tensor.mul: by a scalar (or 0-d tensor), by a dense tensor of its shape (the
        values times the dense entries at the indices), or by a sparse tensor (the entries
        both have)."""
        return _or_type_error(self.__mul__(other), "mul", other)

    def __mul__(self, other):
        if isinstance(other, SparseCooTensor):
            return _mul_sparse(self, other)
        if isinstance(other, Tensor) and other.ndim:
            return _mul_dense(self, other)
        if isinstance(other, (Tensor,) + _SCALARS):
            return self._with_values(self._values_ * other)
        return NotImplemented

    __rmul__ = __mul__      # every product here commutes
    multiply = mul

    def div(self, other, *, rounding_mode=None):
        """torch.Tensor.div: by a scalar or a 0-d dense tensor only (torch's error else)."""
        if isinstance(other, SparseCooTensor) or isinstance(other, Tensor) and other.ndim:
            raise RuntimeError(f"Sparse division requires a scalar or zero-dim dense tensor "
                               f"divisor (got shape {list(other.shape)} for divisor)")
        if not isinstance(other, (Tensor,) + _SCALARS):
            raise TypeError(f"div(): unsupported divisor type {type(other).__name__}")
        return self._with_values(self._values_.div(other, rounding_mode=rounding_mode))

    def __truediv__(self, other):
        if not isinstance(other, (Tensor, SparseCooTensor) + _SCALARS):
            return NotImplemented
        return self.div(other)

    divide = div

    def neg(self):
        """torch.Tensor.neg: the values negated."""
        return self._with_values(-self._values_)

    __neg__ = negative = neg

    # ---- in place (what optimizers and gradient accumulation do to a sparse .grad) ----------
    # They rebind the indices and values rather than write into their memory: a sparse .grad
    # may share its values with the backward pass that made them.
    def zero_(self):
        """torch.Tensor.zero_ of a sparse tensor: no entries left (nnz 0), size kept."""
        self._indices_ = zeros(self.sparse_dim(), 0, dtype=dtypes.int64, device=self.device)
        self._values_ = zeros((0,) + tuple(self._values_.shape[1:]), dtype=self.dtype,
                              device=self.device)
        self._coalesced = True
        return self

    def mul_(self, other):
        """torch.Tensor.mul_ by a scalar or 0-d tensor: the values scaled."""
        if isinstance(other, SparseCooTensor) or isinstance(other, Tensor) and other.ndim:
            raise RuntimeError("mul_(sparse): minitorch scales a sparse tensor in place by a "
                               "scalar or a 0-d tensor only")
        self._values_ = (self._values_ * other).to(self.dtype)
        return self

    def add_(self, other, *, alpha=1):
        """torch.Tensor.add_ of two sparse tensors: self's entries and alpha times other's,
        concatenated (coalesced when both were, as torch); a dense other is torch's error."""
        if isinstance(other, Tensor):
            raise RuntimeError("add_(sparse, dense) is not supported. Use add_(dense, sparse) "
                               "instead.")
        if not isinstance(other, SparseCooTensor):
            raise TypeError(f"add_(): unsupported operand type {type(other).__name__}")
        total = _add_sparse(self, other, alpha)
        if total.dtype is not self.dtype:
            raise RuntimeError(f"result type {TORCH_NAMES[total.dtype.name]} can't be cast to "
                               f"the desired output type {TORCH_NAMES[self.dtype.name]}")
        self._indices_, self._values_ = total._indices_, total._values_
        self._coalesced = total._coalesced
        return self

    def sub_(self, other, *, alpha=1):
        """torch.Tensor.sub_: add_ with -alpha."""
        return self.add_(other, alpha=-alpha)

    # ---- products and reductions --------------------------------------------------------------
    def __matmul__(self, other):
        """sparse @ dense (a 1-D dense operand is a column), sparse @ sparse."""
        if isinstance(other, Tensor) and other.ndim == 1:
            return sparse_mm(self, other.unsqueeze(1)).squeeze(1)
        return sparse_mm(self, other)

    matmul = __matmul__

    def mm(self, mat2):
        """torch.Tensor.mm / torch.mm(sparse, mat2)."""
        return sparse_mm(self, mat2)

    def __rmatmul__(self, other):
        """dense @ sparse (torch.mm / torch.matmul(dense, sparse)); a 1-D dense is a row."""
        if isinstance(other, Tensor) and other.ndim == 1:
            return _dense_sparse_mm(other.unsqueeze(0), self).squeeze(0)
        if not isinstance(other, Tensor):
            return NotImplemented
        return _dense_sparse_mm(other, self)

    def _addmm(self, input, mat2, beta=1, alpha=1):
        """torch.addmm(input, sparse, dense): beta * input + alpha * (sparse @ dense)."""
        return sparse_addmm(input, self, mat2, beta=beta, alpha=alpha)

    def sum(self, dim=None, keepdim=False, dtype=None):
        """torch.Tensor.sum of a sparse tensor: a dense 0-d tensor over everything (or over
        every sparse dim: a dense tensor), else a coalesced sparse tensor."""
        return sparse_sum(self, dim, dtype=dtype, keepdim=keepdim)

    def softmax(self, dim, dtype=None):
        """torch.Tensor.softmax of a sparse tensor: torch.sparse.softmax."""
        return sparse_softmax(self, dim, dtype=dtype)

    def log_softmax(self, dim, dtype=None):
        """torch.Tensor.log_softmax of a sparse tensor: torch.sparse.log_softmax."""
        return sparse_log_softmax(self, dim, dtype=dtype)


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
    result rows. Gradients reach the dense matrix and the sparse values. A sparse second
    operand gives the coalesced sparse product; a dense first one, dense @ sparse."""
    if isinstance(dense, SparseCooTensor) and isinstance(sparse, Tensor):
        return _dense_sparse_mm(sparse, dense)
    if not isinstance(sparse, SparseCooTensor):
        raise TypeError(f"sparse.mm: expected a sparse COO tensor as the first argument, got "
                        f"{type(sparse).__name__}")
    if sparse.sparse_dim() != 2 or sparse.dense_dim() != 0:
        raise RuntimeError(f"addmm: matrices expected, got {sparse.sparse_dim()}D tensor")
    if isinstance(dense, SparseCooTensor):
        return _sparse_sparse_mm(sparse, dense)
    if not isinstance(dense, Tensor) or dense.ndim != 2:
        raise RuntimeError(f"addmm: matrices expected, got "
                           f"{dense.ndim if isinstance(dense, Tensor) else 0}D tensor")
    (n, k), (k2, m) = sparse.shape, dense.shape
    if k != k2:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({n}x{k} and {k2}x{m})")
    if sparse.dtype is not dense.dtype:
        raise RuntimeError(f"expected mat1 and mat2 to have the same dtype, but got: "
                           f"{sparse.dtype} != {dense.dtype}")
    _check_device(sparse, dense)
    rows, cols = sparse._indices_[0], sparse._indices_[1]
    gathered = index_select(dense, 0, cols) * sparse._values_.unsqueeze(1)
    out = zeros(n, m, dtype=dense.dtype, device=dense.device)
    return out.index_add(0, rows, gathered)


def _check_device(a, b):
    if a.device != b.device:
        raise RuntimeError(f"Expected all tensors to be on the same device, but found at least "
                           f"two devices, {a.device} and {b.device}!")


def _dense_sparse_mm(dense, sparse):
    """dense (n, k) @ sparse (k, m): the dense columns at the row indices, scaled by the
    values, added into the result's columns at the column indices (torch computes it as
    (sparse.t() @ dense.t()).t(), hence its messages)."""
    if sparse.sparse_dim() != 2 or sparse.dense_dim() != 0:
        raise RuntimeError(f"addmm: matrices expected, got {sparse.sparse_dim()}D tensor")
    if dense.ndim != 2:
        raise RuntimeError(f"addmm: matrices expected, got {dense.ndim}D tensor")
    (n, k), (k2, m) = dense.shape, sparse.shape
    if k != k2:
        raise RuntimeError(f"addmm: Argument #3 (dense): Expected dim 0 size {k2}, got {k}")
    if sparse.dtype is not dense.dtype:
        raise RuntimeError(f"expected scalar type {TORCH_NAMES[sparse.dtype.name]} but found "
                           f"{TORCH_NAMES[dense.dtype.name]}")
    _check_device(sparse, dense)
    rows, cols = sparse._indices_[0], sparse._indices_[1]
    gathered = index_select(dense, 1, rows) * sparse._values_
    out = zeros(n, m, dtype=dense.dtype, device=dense.device)
    return out.index_add(1, cols, gathered)


def _sparse_sparse_mm(a, b):
    """sparse (n, k) @ sparse (k, m), coalesced: every pair of an entry (i, j) of a and an
    entry (j, l) of b (b's entries grouped by row: a count and a start per row, each entry of
    a repeated for the entries in its column's row of b) gives a product at (i, l)."""
    if b.sparse_dim() != 2 or b.dense_dim() != 0:
        raise RuntimeError(f"addmm: matrices expected, got {b.sparse_dim()}D tensor")
    (n, k), (k2, m) = a.shape, b.shape
    if k != k2:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({n}x{k} and {k2}x{m})")
    if a.dtype is not b.dtype:
        raise RuntimeError(f"expected mat1 and mat2 to have the same dtype, but got: "
                           f"{a.dtype} != {b.dtype}")
    _check_device(a, b)
    device = a.device
    order = b._indices_[0].argsort(stable=True)
    b_rows = index_select(b._indices_[0], 0, order)
    b_cols = index_select(b._indices_[1], 0, order)
    b_values = index_select(b._values_, 0, order)
    counts = bincount(b_rows, minlength=k)
    starts = counts.cumsum(0) - counts
    a_cols = a._indices_[1]
    per_entry = index_select(counts, 0, a_cols)
    total = int(per_entry.sum().item()) if a._nnz() else 0
    if total == 0:
        return SparseCooTensor(zeros(2, 0, dtype=dtypes.int64, device=device),
                               zeros(0, dtype=a.dtype, device=device), (n, m), coalesced=True)
    which = arange(a._nnz(), device=device).repeat_interleave(per_entry, output_size=total)
    first = (per_entry.cumsum(0) - per_entry)
    offset = arange(total, device=device) - index_select(first, 0, which)
    position = index_select(index_select(starts, 0, a_cols), 0, which) + offset
    indices = stack([index_select(a._indices_[0], 0, which),
                     index_select(b_cols, 0, position)])
    values = index_select(a._values_, 0, which) * index_select(b_values, 0, position)
    return SparseCooTensor(indices, values, (n, m)).coalesce()


def sparse_addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """torch.sparse.addmm: beta * input + alpha * (mat1 @ mat2) for a sparse mat1 and a dense
    mat2; input broadcasts to the product's shape (beta=0 ignores it, as torch does)."""
    if not isinstance(mat1, SparseCooTensor):
        raise TypeError(f"sparse.addmm: expected a sparse COO tensor as mat1, got "
                        f"{type(mat1).__name__}")
    if mat1.sparse_dim() != 2 or mat1.dense_dim() != 0:
        raise RuntimeError(f"addmm: matrices expected, got {mat1.sparse_dim()}D tensor")
    if not isinstance(mat2, Tensor) or mat2.ndim != 2:
        raise RuntimeError(f"addmm: matrices expected, got "
                           f"{mat2.ndim if isinstance(mat2, Tensor) else 0}D tensor")
    if mat1.shape[1] != mat2.shape[0]:
        raise RuntimeError(f"addmm: Argument #3 (dense): Expected dim 0 size {mat1.shape[1]}, "
                           f"got {mat2.shape[0]}")
    if mat1.dtype is not mat2.dtype or input.dtype is not mat2.dtype:
        other = mat1.dtype if mat1.dtype is not mat2.dtype else input.dtype
        raise RuntimeError(f"expected scalar type {TORCH_NAMES[mat2.dtype.name]} but found "
                           f"{TORCH_NAMES[other.name]}")
    shape = (mat1.shape[0], mat2.shape[1])
    input = input.expand(shape)
    product = sparse_mm(mat1, mat2)
    if alpha != 1:
        product = product * alpha
    if beta == 0:
        return product
    return product + (input if beta == 1 else input * beta)


# ---- arithmetic ---------------------------------------------------------------------------------
def _or_type_error(result, name, other):
    if result is NotImplemented:
        raise TypeError(f"{name}(): unsupported operand type {type(other).__name__} for a sparse "
                        "tensor")
    return result


def _check_alpha(a, b, alpha):
    if isinstance(alpha, float) and not (a.dtype.is_floating_point or b.dtype.is_floating_point):
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating "
                           "point number.")


def _add_sparse(a, b, alpha):
    """sparse + alpha * sparse of one size: the coalesced union when both are coalesced (torch
    merges their sorted entries), else both sets of entries side by side, uncoalesced."""
    if a._size != b._size:
        raise RuntimeError(f"add: expected sizes of 'self' and 'other' to match, but "
                           f"{list(a._size)} != {list(b._size)}")
    if a.sparse_dim() != b.sparse_dim():
        raise RuntimeError(f"add: expected 'self' and 'other' to have same density, but 'self' "
                           f"has {a.sparse_dim()} sparse dimensions while 'other' has "
                           f"{b.sparse_dim()} sparse dimensions")
    _check_device(a, b)
    dtype = dtypes.promote_types(a.dtype, b.dtype)
    if dtype is dtypes.bool_:
        raise NotImplementedError('"cadd_sparse" not implemented for \'Bool\'')
    _check_alpha(a, b, alpha)
    a_values = a._values_.to(dtype)
    b_values = b._values_.to(dtype) if alpha == 1 else b._values_.to(dtype) * alpha
    if b._nnz() == 0:
        return a._with_values(a_values.clone() if a_values is a._values_ else a_values)
    if a._nnz() == 0:
        return b._with_values(b_values.clone() if b_values is b._values_ else b_values)
    coalesced = a._coalesced and b._coalesced
    both = SparseCooTensor(cat([a._indices_, b._indices_], 1), cat([a_values, b_values]),
                           a._size)
    return both.coalesce() if coalesced else both


def _add_to_dense(dense, sparse, alpha=1):
    """dense + alpha * sparse, dense: the values added into the dense tensor's (flat) sparse
    positions. No broadcasting (torch's message)."""
    if tuple(dense.shape) != sparse._size:
        raise RuntimeError(f"add: expected 'self' and 'other' to have same size, but self has "
                           f"size {list(dense.shape)} while other has size {list(sparse._size)} "
                           "(FYI: dense-sparse addition does not currently support broadcasting)")
    _check_device(dense, sparse)
    dtype = dtypes.promote_types(dense.dtype, sparse.dtype)
    flat = dense.to(dtype).reshape((sparse._sparse_numel(),) + tuple(sparse._values_.shape[1:]))
    values = sparse._values_.to(dtype)
    if alpha != 1:
        values = values * alpha
    return flat.index_add(0, sparse._keys(), values).reshape(sparse._size)


def _mul_dense(sparse, dense):
    """sparse * dense (a dense that broadcasts to the sparse shape): the values times the
    dense entries at the indices; sparse, same indices."""
    shape = tuple(broadcast_shapes(tuple(dense.shape), sparse._size))
    if shape != sparse._size:
        raise RuntimeError(f"mul(sparse, dense): minitorch does not broadcast the sparse operand "
                           f"{list(sparse._size)} up to {list(shape)}")
    _check_device(dense, sparse)
    sparse_dim = sparse.sparse_dim()
    full = dense.expand(sparse._size)
    if sparse_dim:
        at = full[tuple(sparse._indices_[d] for d in range(sparse_dim))]
    else:
        at = full.unsqueeze(0).expand((sparse._nnz(),) + sparse._size)
    return sparse._with_values(sparse._values_ * at)


def _mul_sparse(a, b):
    """sparse * sparse, torch's intersection: the entries of one operand (`source`) times the
    other's (coalesced, `lookup`) value at the same index, 0 where it has none. torch looks up
    in the coalesced operand, else in the one with more entries (the first on a tie); with
    both coalesced only the common entries are kept, and the result is coalesced."""
    if a._size != b._size or a.sparse_dim() != b.sparse_dim():
        raise RuntimeError(f"sparse_binary_op_intersection_{a.device.type}(): expects sparse "
                           "inputs with equal dimensionality, number of sparse dimensions, and "
                           "shape of sparse dimensions")
    _check_device(a, b)
    if a._nnz() == 0 or b._nnz() == 0:
        dtype = dtypes.promote_types(a.dtype, b.dtype)
        empty = a if a._nnz() == 0 else b
        return SparseCooTensor(empty._indices_, empty._values_.to(dtype), a._size,
                               coalesced=True)
    if a._coalesced or (not b._coalesced and a._nnz() >= b._nnz()):
        lookup, source = a, b
    else:
        lookup, source = b, a
    lookup = lookup.coalesce()
    keys, wanted = lookup._keys(), source._keys()
    position = searchsorted(keys, wanted).clamp(max=lookup._nnz() - 1)
    found = index_select(keys, 0, position) == wanted
    values = source._values_ * index_select(lookup._values_, 0, position)
    mask = found.reshape((-1,) + (1,) * (values.ndim - 1))
    values = where(mask, values, zeros((), dtype=values.dtype, device=values.device))
    if not (a._coalesced and b._coalesced):
        return source._with_values(values, coalesced=False)
    keep = found.nonzero().reshape(-1)
    return SparseCooTensor(index_select(source._indices_, 1, keep),
                           index_select(values, 0, keep), a._size, coalesced=True)


# ---- reductions ---------------------------------------------------------------------------------
def sparse_sum(input, dim=None, dtype=None, keepdim=False):
    """torch.sparse.sum (and sparse.sum(dim, keepdim)): over everything a dense 0-d tensor;
    over every sparse dim a dense tensor of the dense dims left; else a coalesced sparse
    tensor of the dims left. Differentiable in the values."""
    if not isinstance(input, SparseCooTensor):
        raise TypeError(f"sparse.sum: expected a sparse COO tensor, got {type(input).__name__}")
    values = input._values_ if dtype is None else input._values_.to(dtype)
    if dim is None:
        if keepdim:
            raise TypeError("sum() received an invalid combination of arguments - got (Tensor, "
                            "keepdim=bool), but expected one of: (Tensor input, *, torch.dtype "
                            "dtype = None) or (Tensor input, tuple of ints dim, bool keepdim = "
                            "False, *, torch.dtype dtype = None, Tensor out = None)")
        return values.sum()
    dims = normalize_dims(dim, input.dim())
    sparse_dim = input.sparse_dim()
    if not dims:
        return SparseCooTensor(input._indices_, values, input._size).coalesce()
    sparse_dims = [d for d in dims if d < sparse_dim]
    dense_dims = [d - sparse_dim + 1 for d in dims if d >= sparse_dim]
    if dense_dims:
        values = values.sum(dense_dims, keepdim=keepdim)
    size = [1 if d in dims else s for d, s in enumerate(input._size)] if keepdim else \
        [s for d, s in enumerate(input._size) if d not in dims]
    if len(sparse_dims) == sparse_dim:
        return values.sum(0).reshape(size)
    kept = [d for d in range(sparse_dim) if d not in sparse_dims]
    indices = index_select(input._indices_, 0, _tensor(kept, device=input.device))
    if keepdim:
        rows = [indices[kept.index(d)] if d in kept else zeros(input._nnz(), dtype=dtypes.int64,
                device=input.device) for d in range(sparse_dim)]
        indices = stack(rows)
    return SparseCooTensor(indices, values, size).coalesce()


def _softmax(input, dim, dtype, log):
    if not isinstance(input, SparseCooTensor):
        raise TypeError(f"sparse.softmax: expected a sparse COO tensor, got "
                        f"{type(input).__name__}")
    dim = normalize_dim(dim, input.dim())
    if dtype is not None:
        input = input.to(dtype)
    input = input.coalesce()
    values, sparse_dim = input._values_, input.sparse_dim()
    if dim >= sparse_dim:           # a dense dim: within each value
        dense = dim - sparse_dim + 1
        return input._with_values(values.log_softmax(dense) if log else values.softmax(dense))
    if input._nnz() == 0:
        return input._with_values(values.clone())
    # The entries that share every sparse index but dim's form one softmax group.
    others = [d for d in range(sparse_dim) if d != dim]
    rest = tuple(input._size[d] for d in others)
    keys = _flat_keys(index_select(input._indices_, 0, _tensor(others, device=input.device)),
                      rest) if others else zeros(input._nnz(), dtype=dtypes.int64,
                                                 device=input.device)
    groups, inverse = keys.unique(sorted=True, return_inverse=True)
    shape = (groups.shape[0],) + tuple(values.shape[1:])
    spread = inverse.reshape((-1,) + (1,) * (values.ndim - 1)).expand(values.shape)
    top = zeros(shape, dtype=values.dtype, device=values.device).scatter_reduce(
        0, spread, values.detach(), "amax", include_self=False)
    shifted = values - index_select(top, 0, inverse)
    exps = shifted.exp()
    totals = zeros(shape, dtype=values.dtype, device=values.device).index_add(0, inverse, exps)
    if log:
        return input._with_values(shifted - index_select(totals, 0, inverse).log())
    return input._with_values(exps / index_select(totals, 0, inverse))


def sparse_softmax(input, dim, dtype=None):
    """torch.sparse.softmax: softmax along dim over the specified entries only (the
    unspecified ones count as -inf); coalesced, differentiable in the values."""
    return _softmax(input, dim, dtype, log=False)


def sparse_log_softmax(input, dim, dtype=None):
    """torch.sparse.log_softmax: log of sparse_softmax, computed stably."""
    return _softmax(input, dim, dtype, log=True)


def dense_to_dense(self, dtype=None, *, masked_grad=None):
    """torch.Tensor.to_dense of a dense (strided) tensor: itself (cast when a dtype is given)."""
    return self if dtype is None or dtype is self.dtype else self.to(dtype)


# ---- dense tensors meeting sparse ones in place (optimizers, gradient accumulation) -----------
def add_sparse_into_(dense, sparse, alpha=1):
    """dense += alpha * sparse, in place (torch's dense.add_(sparse, alpha=alpha)): one
    index_add_ of the values at their flat positions into a flat view of dense; duplicates are
    added one after another, as torch's CPU kernel does."""
    if tuple(dense.shape) != sparse._size:
        raise RuntimeError(f"add_: expected 'self' and 'other' to have same size, but self has "
                           f"size {list(dense.shape)} while other has size {list(sparse._size)} "
                           "(FYI: dense-sparse addition does not currently support broadcasting)")
    _check_device(dense, sparse)
    if sparse._nnz() == 0:
        return dense
    rows = (sparse._sparse_numel(),) + tuple(sparse._values_.shape[1:])
    values = sparse._values_.to(dense.dtype)
    recording = _grad_mode.enabled and (dense.requires_grad or values.requires_grad)
    if dense.is_contiguous() and not recording and dense.dtype.is_floating_point:
        # the optimizers' case: straight into dense's memory, O(nnz) (Tensor.index_add_ would
        # compute out of place and copy the whole table back)
        if alpha != 1:
            values = values * alpha
        dense._data.reshape(rows).index_add_into(0, sparse._keys()._data, values._data)
        dense._bump_version()
    elif dense.is_contiguous():
        dense.view(rows).index_add_(0, sparse._keys(), values, alpha=alpha)
    else:       # no flat view of it: the sum is made apart and written back
        dense.copy_(dense.reshape(rows).index_add(0, sparse._keys(), values,
                                                  alpha=alpha).reshape(dense.shape))
    return dense


def sparse_mask_values(dense, sparse):
    """The values of torch's dense.sparse_mask(sparse)._values(): dense's entries at sparse's
    indices (one index_select of a flat view), in sparse's entry order."""
    rows = (sparse._sparse_numel(),) + tuple(sparse._values_.shape[1:])
    return index_select(dense.reshape(rows), 0, sparse._keys())

