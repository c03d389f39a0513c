"""Matrix products: matmul with torch's rank rules, mm, bmm, mv, dot, outer, inner, tensordot,
einsum, addmm and baddbmm.

Every float product runs on the batched GEMM kernel (`NDArray.matmul`); einsum and tensordot
are built from views (permute, reshape, a diagonal view), sums and that same product, so their
gradients come from the ops they are made of.
"""
import functools
import math
import operator
import warnings

from .. import dtypes
from ..autograd import KernelFunction
from ..ndarray import NDArray, normalize_dim
from ..opcodes import BinaryOp as B
from ..tensor import Tensor, arange, empty, wrap, write_out, zeros
from .elementwise import C_NAMES, TORCH_NAMES, promote, scalar_array, where
from .autocast_policy import LOWER, autocast_op, batching_point, cast_in_region, lower_dtype
from .reduce import _norm_backward, sum_to
from .movement import view_of
from .joining import broadcast_shapes, cat


__all__ = [
    'addbmm', 'addmm', 'addmv', 'addr', 'baddbmm', 'block_diag', 'bmm', 'cdist', 'chain_matmul',
    'cross', 'diag', 'diag_embed', 'diagflat', 'diagonal', 'dist', 'dot', 'einsum', 'ger',
    'inner', 'kron', 'matmul', 'mm', 'multi_dot', 'mv', 'outer', 'tensordot', 'trace',
    'tril', 'triu', 'vander', 'vdot',
]


# ---- products as Functions ----------------------------------------------------------------------
class Matmul(KernelFunction):
    """(…, m, k) @ (…, k, n) with broadcast batch axes (both inputs at least 2-D)."""
    node_name = "MmBackward0"
    batched_name = "UnsafeViewBackward0"    # torch's batched matmul is reshaped back

    @staticmethod
    def forward(ctx, a, b):
        # Each input's gradient needs only the other input.
        ctx.save_for_backward(a if b.requires_grad else None, b if a.requires_grad else None)
        ctx.shapes = (a._data.shape, b._data.shape)
        if len(ctx.shapes[0]) + len(ctx.shapes[1]) > 4:
            ctx.node_name = ctx.batched_name
        return wrap(a._data.matmul(b._data))

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        a_shape, b_shape = ctx.shapes
        # conj: complex gradients take the adjoint (the identity on real tensors)
        grad_a = sum_to(matmul(g, b.mT.conj()), a_shape) if b is not None else None
        grad_b = sum_to(matmul(a.mT.conj(), g), b_shape) if a is not None else None
        return grad_a, grad_b


class Mm(Matmul):
    """torch.mm: (n, k) @ (k, m)."""


class Bmm(Matmul):
    """torch.bmm: (b, n, k) @ (b, k, m)."""
    node_name = batched_name = "BmmBackward0"


class Mv(KernelFunction):
    """(n, k) @ (k,) -> (n,)."""

    @staticmethod
    def forward(ctx, mat, vec):
        ctx.save_for_backward(mat if vec.requires_grad else None,
                              vec if mat.requires_grad else None)
        k = vec._data.shape[0]
        return wrap(mat._data.matmul(vec._data.reshape((k, 1))).reshape((mat._data.shape[0],)))

    @staticmethod
    def backward(ctx, g):
        mat, vec = ctx.saved_tensors
        grad_mat = outer(g, vec) if vec is not None else None
        grad_vec = mv(mat.mT, g) if mat is not None else None
        return grad_mat, grad_vec


class Dot(KernelFunction):
    """(k,) · (k,) -> 0-d."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a if b.requires_grad else None, b if a.requires_grad else None)
        k = a._data.shape[0]
        return wrap(a._data.reshape((1, k)).matmul(b._data.reshape((k, 1))).reshape(()))

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return (g * b if b is not None else None), (g * a if a is not None else None)


class Addmm(KernelFunction):
    """beta * input + alpha * (mat1 @ mat2), input broadcast to the product's shape."""

    @staticmethod
    def forward(ctx, input, mat1, mat2, beta, alpha):
        ctx.save_for_backward(mat1 if mat2.requires_grad else None,
                              mat2 if mat1.requires_grad else None)
        ctx.input_shape, ctx.beta, ctx.alpha = input._data.shape, beta, alpha
        out = mat1._data.matmul(mat2._data)
        dtype, device = out.dtype, out.device
        if alpha != 1:
            out = out.binary(B.MUL, scalar_array(alpha, dtype, device))
        if beta != 0:       # beta == 0 ignores input entirely (its NaN/inf don't propagate)
            term = input._data
            if beta != 1:
                term = term.binary(B.MUL, scalar_array(beta, dtype, device))
            out = out.binary(B.ADD, term)
        return wrap(out)

    @staticmethod
    def backward(ctx, g):
        mat1, mat2 = ctx.saved_tensors
        beta, alpha = ctx.beta, ctx.alpha
        grad_input = sum_to(g if beta == 1 else g * beta, ctx.input_shape) \
            if ctx.needs_input_grad[0] else None
        scaled = g if alpha == 1 else g * alpha
        grad_mat1 = matmul(scaled, mat2.mT) if mat2 is not None else None
        grad_mat2 = matmul(mat1.mT, scaled) if mat1 is not None else None
        return grad_input, grad_mat1, grad_mat2, None, None


class Baddbmm(Addmm):
    """The batched addmm: input + (b, n, k) @ (b, k, m)."""


def _product(a, b, function=Matmul):
    """a @ b for two tensors of one dtype, both at least 2-D. Floats use the GEMM kernel;
    integers (there is no integer GEMM kernel) an exact broadcast multiply and sum."""
    if a._data.dtype.is_floating_point or a._data.dtype.is_complex:   # complex: 4 real GEMMs
        return function.apply(a, b)
    if a._data.dtype is dtypes.bool_:
        raise NotImplementedError(f'"addmm_impl_{a.device.type}_" not implemented for \'Bool\'')
    return (a.unsqueeze(-1) * b.unsqueeze(-3)).sum(-2, dtype=a.dtype)   # int32 @ int32: int32


# ---- matmul and the fixed-rank products ---------------------------------------------------------
@autocast_op(LOWER)
def matmul(input, other):
    """torch.matmul: 1-D operands are promoted to matrices and the added axis removed after (a
    sparse COO first operand: sparse @ dense, functions/sparse_coo.py)."""
    if getattr(input, "is_sparse", False) or getattr(other, "is_sparse", False):
        return input @ other
    _check_same_dtype(input, other)
    if isinstance(input, Tensor) and isinstance(other, Tensor):   # one dtype, checked above
        a, b = input, other
    else:
        a, b = promote(input, other)
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are "
                           f"{a.ndim}D and {b.ndim}D")
    if a.ndim == 1 and b.ndim == 1:
        if a.shape[0] != b.shape[0]:
            raise RuntimeError(f"inconsistent tensor size, expected tensor [{a.shape[0]}] and src "
                               f"[{b.shape[0]}] to have the same number of elements, but got "
                               f"{a.shape[0]} and {b.shape[0]} elements respectively")
        return _product(a.reshape(1, -1), b.reshape(-1, 1)).reshape(())
    if a.ndim == 1:
        return _product(a.unsqueeze(0), b).squeeze(-2)
    if b.ndim == 1:
        return _product(a, b.unsqueeze(-1)).squeeze(-1)
    return _product(a, b)


def _check_same_dtype(a, b):
    """torch multiplies only tensors of one dtype (each path words it its own way)."""
    if not isinstance(a, Tensor) or not isinstance(b, Tensor) or a.dtype is b.dtype:
        return
    if a.ndim == 1 and b.ndim == 1:
        raise RuntimeError("dot : expected both vectors to have same dtype, but found "
                           f"{TORCH_NAMES[a.dtype.name]} and {TORCH_NAMES[b.dtype.name]}")
    if b.ndim == 1 and a.ndim >= 2:
        raise RuntimeError("addmv input tensors must have the same dtype, but got "
                           f"{TORCH_NAMES[b.dtype.name]}, {TORCH_NAMES[a.dtype.name]}, and "
                           f"{TORCH_NAMES[b.dtype.name]}")
    raise RuntimeError("expected m1 and m2 to have the same dtype, but got: "
                       f"{C_NAMES[a.dtype.name]} != {C_NAMES[b.dtype.name]}")


def _check_shapes_multiply(m1, m2):
    (n, k), (k2, m) = m1.shape[-2:], m2.shape[-2:]
    if k != k2:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({n}x{k} and {k2}x{m})")


@autocast_op(LOWER)
def mm(input, mat2):
    """torch.mm: matrix @ matrix, no broadcasting, both of one dtype (a sparse COO first
    operand: sparse @ dense)."""
    if getattr(input, "is_sparse", False):
        return input.mm(mat2)
    if input.ndim != 2:
        raise RuntimeError("self must be a matrix")
    if mat2.ndim != 2:
        raise RuntimeError("mat2 must be a matrix")
    if getattr(mat2, "is_sparse", False):
        return mat2.__rmatmul__(input)
    if input.dtype is not mat2.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{C_NAMES[input.dtype.name]} != {C_NAMES[mat2.dtype.name]}")
    _check_shapes_multiply(input, mat2)
    return _product(input, mat2, Mm)


def _check_batches(batch1, batch2):
    if batch1.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if batch2.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    expected = [batch1.shape[0], batch1.shape[2]]
    got = [batch2.shape[0], batch2.shape[1]]
    if expected != got:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"{expected} but got: {got}.")


@autocast_op(LOWER)
def bmm(input, mat2):
    """torch.bmm: a batch of matrix products, (b, n, k) @ (b, k, m) -> (b, n, m)."""
    _check_batches(input, mat2)
    if input.dtype is not mat2.dtype:
        raise RuntimeError(f"expected scalar type {TORCH_NAMES[input.dtype.name]} but found "
                           f"{TORCH_NAMES[mat2.dtype.name]}")
    return _product(input, mat2, Bmm)


@autocast_op(LOWER, devices=("cuda",))      # torch lowers mv on cuda only
def mv(input, vec):
    """torch.mv: matrix (n, k) @ vector (k,) -> (n,)."""
    if input.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {input.ndim}, {vec.ndim}")
    n, k = input.shape
    if vec.shape[0] != k:
        raise RuntimeError(f"size mismatch, got input ({n}), mat ({n}x{k}), vec ({vec.shape[0]})")
    if input.dtype is not vec.dtype:
        result = dtypes.promote_types(input.dtype, vec.dtype)
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got "
                           f"{TORCH_NAMES[result.name]}, {TORCH_NAMES[input.dtype.name]}, and "
                           f"{TORCH_NAMES[vec.dtype.name]}")
    if input.dtype.is_floating_point:
        return Mv.apply(input, vec)
    return matmul(input, vec)


@batching_point
def dot(input, other):
    """torch.dot: the inner product of two 1-D tensors of one length and dtype."""
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {other.ndim}D "
                           "tensors")
    if input.shape[0] != other.shape[0]:
        n, m = input.shape[0], other.shape[0]
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{n}] and src [{m}] to "
                           f"have the same number of elements, but got {n} and {m} elements "
                           "respectively")
    if input.dtype is not other.dtype:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found "
                           f"{TORCH_NAMES[input.dtype.name]} and {TORCH_NAMES[other.dtype.name]}")
    if input.dtype.is_floating_point:
        return Dot.apply(input, other)
    return matmul(input, other)


def outer(input, vec2):
    """torch.outer: input[i] * vec2[j] (a broadcast multiply: the product is the output)."""
    if input.ndim != 1:
        raise RuntimeError(f"outer: Expected 1-D argument self, but got {input.ndim}-D")
    if vec2.ndim != 1:
        raise RuntimeError(f"outer: Expected 1-D argument vec2, but got {vec2.ndim}-D")
    return input.unsqueeze(1) * vec2


ger = outer


def inner(input, other):
    """torch.inner: contract the last axis of both (a plain product when either is 0-d)."""
    if input.ndim == 0 or other.ndim == 0:
        return input * other
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got "
                           f"shapes {list(input.shape)} and {list(other.shape)}")
    return tensordot(input, other, ([-1], [-1]))


@autocast_op(LOWER)        # torch's is one mm, which autocasts
def tensordot(a, b, dims=2, out=None):
    """torch.tensordot: contract dims_a of `a` with dims_b of `b` (an int n means a's last n
    with b's first n), as one matrix product of the two reshaped operands."""
    dims_a, dims_b = _tensordot_dims(a, b, dims)
    if a.dtype is not b.dtype:
        raise RuntimeError("both inputs should have same dtype")
    axes_a = [normalize_dim(d, a.ndim) for d in dims_a]
    axes_b = [normalize_dim(d, b.ndim) for d in dims_b]
    for axes, ndim in ((axes_a, a.ndim), (axes_b, b.ndim)):
        repeated = [d for d in axes if axes.count(d) > 1]
        if repeated:
            raise RuntimeError(f"dim {repeated[0]} appears multiple times in the list of dims")
    for da, db, xa, xb in zip(dims_a, dims_b, axes_a, axes_b):
        if a.shape[xa] != b.shape[xb]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size "
                               f"{a.shape[xa]} in dim {da} and second has size {b.shape[xb]} in "
                               f"dim {db}")
    free_a = [d for d in range(a.ndim) if d not in axes_a]
    free_b = [d for d in range(b.ndim) if d not in axes_b]
    shape_a, shape_b = [a.shape[d] for d in free_a], [b.shape[d] for d in free_b]
    k = math.prod(a.shape[d] for d in axes_a)
    left = _permute(a, free_a + axes_a).reshape(math.prod(shape_a), k)
    right = _permute(b, axes_b + free_b).reshape(k, math.prod(shape_b))
    result = _product(left, right).reshape(shape_a + shape_b)
    return result if out is None else write_out(out, result, "tensordot")


def _tensordot_dims(a, b, dims):
    """(dims_a, dims_b) from tensordot's `dims` argument, as the user wrote them."""
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > a.ndim or dims > b.ndim:
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        return list(range(-dims, 0)), list(range(dims))
    dims_a, dims_b = dims
    dims_a = [dims_a] if isinstance(dims_a, int) else [operator.index(d) for d in dims_a]
    dims_b = [dims_b] if isinstance(dims_b, int) else [operator.index(d) for d in dims_b]
    if len(dims_a) != len(dims_b):
        raise RuntimeError("both dimension lists should have same length")
    return dims_a, dims_b


def _permute(t, order):
    """t.permute(order), skipping the op when the order is the identity."""
    return t if list(order) == list(range(t.ndim)) else t.permute(*order)


@autocast_op(LOWER)
def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """torch.addmm: beta * input + alpha * (mat1 @ mat2); input broadcasts to (n, m)."""
    if getattr(mat1, "is_sparse", False):
        return mat1._addmm(input, mat2, beta, alpha)
    if mat1.ndim != 2:
        raise RuntimeError(f"mat1 must be a matrix, got {mat1.ndim}-D tensor")
    if mat2.ndim != 2:
        raise RuntimeError(f"mat2 must be a matrix, got {mat2.ndim}-D tensor")
    _check_shapes_multiply(mat1, mat2)
    if input.dtype is not mat2.dtype:
        raise RuntimeError(f"self and mat2 must have the same dtype, but got "
                           f"{TORCH_NAMES[input.dtype.name]} and {TORCH_NAMES[mat2.dtype.name]}")
    if mat1.dtype is not mat2.dtype:
        raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got "
                           f"{TORCH_NAMES[mat1.dtype.name]} and {TORCH_NAMES[mat2.dtype.name]}")
    return _add_product(Addmm, input, mat1, mat2, beta, alpha)


@autocast_op(LOWER)
def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """torch.baddbmm: beta * input + alpha * bmm(batch1, batch2); input broadcasts to (b, n, m)."""
    _check_batches(batch1, batch2)
    if batch1.dtype is not batch2.dtype:
        raise RuntimeError(f"expected scalar type {TORCH_NAMES[batch1.dtype.name]} but found "
                           f"{TORCH_NAMES[batch2.dtype.name]}")
    if input.dtype is not batch1.dtype:
        raise RuntimeError(f"Input dtypes must be the same, got: input "
                           f"{C_NAMES[input.dtype.name]}, batch1: {C_NAMES[batch1.dtype.name]}, "
                           f"batch2: {C_NAMES[batch2.dtype.name]}")
    return _add_product(Baddbmm, input, batch1, batch2, beta, alpha)


def _add_product(function, input, m1, m2, beta, alpha):
    shape = m1.shape[:-1] + m2.shape[-1:]
    input._data.expand(shape)       # torch's error when input doesn't broadcast to the product
    if m1.dtype.is_floating_point:
        return function.apply(input, m1, m2, beta, alpha)
    product = _product(m1, m2) * alpha
    return product if beta == 0 else product + input * beta


# ---- einsum ----------------------------------------------------------------------------------
_ELLIPSIS = "..."


def _scaled_sum(input, product, beta, alpha):
    """beta·input + alpha·product, input broadcast to product's shape; beta = 0 ignores input
    (its NaNs too), as in torch."""
    input._data.expand(product._data.shape)     # torch's error when input doesn't broadcast
    product = product if alpha == 1 else product * alpha
    if beta == 0:
        return product
    return product + (input if beta == 1 else input * beta)


def addmv(input, mat, vec, *, beta=1, alpha=1):
    """torch.addmv: beta·self + alpha·(mat @ vec)."""
    return _scaled_sum(input, mv(mat, vec), beta, alpha)


def addr(input, vec1, vec2, *, beta=1, alpha=1):
    """torch.addr: beta·self + alpha·outer(vec1, vec2)."""
    if vec1.ndim != 1 or vec2.ndim != 1:
        name, t = ("vec1", vec1) if vec1.ndim != 1 else ("vec2", vec2)
        raise RuntimeError(f"addr: Expected 1-D argument {name}, but got {t.ndim}-D")
    return _scaled_sum(input, outer(vec1, vec2), beta, alpha)


@autocast_op(LOWER)
def addbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """torch.addbmm: beta·self + alpha·Σ_b batch1[b] @ batch2[b]."""
    for name, t in (("batch1", batch1), ("batch2", batch2)):
        if t.ndim != 3:
            raise RuntimeError(f"{name} must be a 3D tensor")
    return _scaled_sum(input, bmm(batch1, batch2).sum(0), beta, alpha)


def einsum(equation, *operands):
    """torch.einsum. Repeated subscripts in one operand take a diagonal view; subscripts needed
    by no later operand and not by the output are summed as early as possible; operands are then
    contracted left to right, each pair by one batched matrix product (shared kept subscripts
    are the batch, shared dropped ones the contraction) — a broadcast multiply only when the pair
    shares nothing to contract, where the product is the result itself."""
    if isinstance(equation, Tensor):        # einsum(op1, sublist1, op2, sublist2, ..., [out])
        equation, operands = _sublist_equation((equation,) + operands)
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands:
        raise RuntimeError("einsum(): must provide at least one operand")
    terms, output = _parse_equation(equation, len(operands))
    for t in operands[1:]:
        if t.dtype is not operands[0].dtype:
            raise RuntimeError(f"expected scalar type {TORCH_NAMES[operands[0].dtype.name]} but "
                               f"found {TORCH_NAMES[t.dtype.name]}")
    labelled = _label_operands(terms, operands)
    output = _output_labels(terms, output, labelled)
    _check_label_sizes(labelled)
    labelled = _autocast_contraction(labelled, output)
    operands = [_take_diagonals(t, labels) for t, labels in labelled]
    return _contract_all(operands, output)


def _autocast_contraction(labelled, output):
    """In an autocast region, operands that are contracted (two or more, a subscript summed
    away) run in the lower dtype: torch's einsum contracts them with bmm, which autocasts; a
    single operand's sum or a pure broadcast product stays as it is, as in torch."""
    target = lower_dtype(labelled[0][0].device.type)
    if target is None or len(labelled) < 2:
        return labelled
    summed = {label for _, labels in labelled for label in labels} - set(output)
    if not summed:
        return labelled
    return [(cast_in_region(t, target), labels) for t, labels in labelled]


_SUBSCRIPT_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _sublist_equation(args):
    """torch's sublist format as (equation, operands): subscripts are ints in [0, 52) (letters
    a-z then A-Z) or Ellipsis; an odd count of arguments ends with the output's sublist."""
    output = args[-1] if len(args) % 2 else None
    pairs = args[:-1] if output is not None else args
    operands, sublists = pairs[0::2], pairs[1::2]

    def letters(sublist):
        text = ""
        for item in sublist:
            if item is Ellipsis:
                text += "..."
            elif not 0 <= operator.index(item) < len(_SUBSCRIPT_LETTERS):
                raise ValueError("einsum(): subscript in subscript list is not within the valid "
                                 "range [0, 52)")
            else:
                text += _SUBSCRIPT_LETTERS[item]
        return text
    equation = ",".join(letters(s) for s in sublists)
    if output is not None:
        equation += "->" + letters(output)
    return equation, tuple(operands)


def _parse_equation(equation, n_operands):
    """Subscript lists per input term (letters and "..."), and the output's (None if implicit),
    with torch's errors (positions count in the whole equation string)."""
    terms, current, output = [], [], None
    i = 0
    while i < len(equation):
        c = equation[i]
        target = output if output is not None else current
        where = "output" if output is not None else f"operand {len(terms)}"
        if c == " ":
            pass
        elif c == ".":
            if _ELLIPSIS in target:
                raise RuntimeError(f"einsum(): found '.' for {where} for which an ellipsis was "
                                   "already found")
            if equation[i:i + 3] != _ELLIPSIS:
                raise RuntimeError(f"einsum(): found '.' for {where} that is not part of any "
                                   "ellipsis")
            target.append(_ELLIPSIS)
            i += 2
        elif c == "," and output is None:
            terms.append(current)
            current = []
            if len(terms) >= n_operands:
                raise RuntimeError("einsum(): fewer operands were provided than specified in the "
                                   "equation")
        elif c == "-" and output is None and equation[i + 1:i + 2] == ">":
            terms.append(current)
            output = []
            i += 1
        elif c.isascii() and c.isalpha():
            target.append(c)
        else:
            raise RuntimeError(f"einsum(): invalid subscript given at index {i} in the equation "
                               "string, subscripts must be in [a-zA-Z]")
        i += 1
    if output is None:
        terms.append(current)
    if len(terms) < n_operands:
        raise RuntimeError("einsum(): more operands were provided than specified in the "
                           "equation")
    return terms, output


def _label_operands(terms, operands):
    """[(tensor, labels)]: one label per axis; the axes an ellipsis covers get integer labels,
    right-aligned across operands (the broadcasting rule), letters keep their letter."""
    covered = []
    for k, (term, t) in enumerate(zip(terms, operands)):
        letters = len(term) - term.count(_ELLIPSIS)
        if _ELLIPSIS not in term and letters != t.ndim:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({letters}) "
                               f"does not match the number of dimensions ({t.ndim}) for operand "
                               f"{k} and no ellipsis was given")
        if letters > t.ndim:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({letters}) "
                               f"is more than the number of dimensions ({t.ndim}) for operand {k}")
        covered.append(t.ndim - letters)
    width = max(covered)
    labelled = []
    for term, t, n in zip(terms, operands, covered):
        labels = []
        for s in term:
            labels += list(range(width - n, width)) if s == _ELLIPSIS else [s]
        labelled.append((t, labels))
    return labelled


def _output_labels(terms, output, labelled):
    """The output's labels: as written (ellipsis expanded), or torch's implicit order: the
    ellipsis axes, then every letter used exactly once, uppercase before lowercase."""
    width = max((label + 1 for _, labels in labelled for label in labels
                 if isinstance(label, int)), default=0)
    letters = [s for term in terms for s in term if s != _ELLIPSIS]
    if output is None:
        return list(range(width)) + sorted(s for s in set(letters) if letters.count(s) == 1)
    result = []
    for s in output:
        if s == _ELLIPSIS:
            result += list(range(width))
            continue
        if s not in letters:
            raise RuntimeError(f"einsum(): output subscript {s} does not appear in the equation "
                               "for any input operand")
        if s in result:
            raise RuntimeError(f"einsum(): output subscript {s} appears more than once in the "
                               "output")
        result.append(s)
    return result


def _check_label_sizes(labelled):
    """A label's sizes must agree within an operand, and broadcast (equal or 1) across them."""
    seen = {}
    for k, (t, labels) in enumerate(labelled):
        first = {}
        for axis, (label, size) in enumerate(zip(labels, t.shape)):
            if label in first and first[label] != size:
                raise RuntimeError(f"einsum(): subscript {label} is repeated for operand {k} but "
                                   f"the sizes don't match, {size} != {first[label]}")
            first.setdefault(label, size)
        for axis, (label, size) in enumerate(zip(labels, t.shape)):
            previous = seen.get(label, size)
            if previous != size and 1 not in (previous, size):
                if isinstance(label, int):
                    raise RuntimeError(
                        f"einsum(): dimension {axis} covered by ellipsis in operand {k}has size "
                        f"{size} which does not broadcast with previously seen ellipsis with size "
                        f"{previous} for the respective dimension")
                raise RuntimeError(f"einsum(): subscript {label} has size {size} for operand {k} "
                                   f"which does not broadcast with previously seen size {previous}")
            seen[label] = size if previous == 1 else previous


def _take_diagonals(t, labels):
    """(tensor, unique labels): repeated labels of one operand become one diagonal axis."""
    unique = list(dict.fromkeys(labels))
    if len(unique) == len(labels):
        return t, labels
    groups = tuple(tuple(axis for axis, label in enumerate(labels) if label == u) for u in unique)
    return Diagonal.apply(t, functools.partial(_diagonal_view, groups=groups)), unique


def _contract_all(operands, output):
    """Fold the operands left to right into the result, then order its axes as `output`."""
    wanted = set(output)
    later = [set() for _ in operands]           # labels used by the operands after each one
    for k in range(len(operands) - 2, -1, -1):
        later[k] = later[k + 1] | set(operands[k + 1][1])
    t, labels = _sum_labels(*operands[0], keep=wanted | later[0])
    for k in range(1, len(operands)):
        keep = wanted | later[k]
        other, other_labels = operands[k]
        shared = set(labels) & set(other_labels)
        t, labels = _sum_labels(t, labels, keep | shared)
        other, other_labels = _sum_labels(other, other_labels, keep | shared)
        t, labels = _contract_pair(t, labels, other, other_labels, keep)
    return _permute(t, [labels.index(label) for label in output])


def _sum_labels(t, labels, keep):
    """Sum out the axes whose label is not in `keep`."""
    dropped = [axis for axis, label in enumerate(labels) if label not in keep]
    if not dropped:
        return t, labels
    return t.sum(dropped), [label for label in labels if label in keep]


def _contract_pair(a, a_labels, b, b_labels, keep):
    """One pairwise step: labels in both and still needed are batch axes, labels in both and no
    longer needed are contracted; the rest stay as rows (from a) and columns (from b)."""
    batch = [label for label in a_labels if label in b_labels and label in keep]
    summed = [label for label in a_labels if label in b_labels and label not in keep]
    rows = [label for label in a_labels if label not in b_labels]
    cols = [label for label in b_labels if label not in a_labels]
    a, b = _match_summed(a, a_labels, b, b_labels, summed)
    a_size = dict(zip(a_labels, a.shape))
    b_size = dict(zip(b_labels, b.shape))
    k = math.prod(a_size[label] for label in summed)
    left = _permute(a, [a_labels.index(label) for label in batch + rows + summed]).reshape(
        [a_size[label] for label in batch] + [math.prod(a_size[label] for label in rows), k])
    right = _permute(b, [b_labels.index(label) for label in batch + summed + cols]).reshape(
        [b_size[label] for label in batch] + [k, math.prod(b_size[label] for label in cols)])
    product = _product(left, right) if summed else left * right
    shape = list(product.shape[:len(batch)]) + [a_size[label] for label in rows] + \
        [b_size[label] for label in cols]
    return product.reshape(shape), batch + rows + cols


def _match_summed(a, a_labels, b, b_labels, summed):
    """A contracted label of size 1 on one side and n on the other broadcasts: sum the other
    side over it first (Σ_k x·y_k = x·Σ_k y_k), so both sides have size 1 there."""
    a_axes = [a_labels.index(label) for label in summed
              if a.shape[a_labels.index(label)] != 1 and b.shape[b_labels.index(label)] == 1]
    b_axes = [b_labels.index(label) for label in summed
              if b.shape[b_labels.index(label)] != 1 and a.shape[a_labels.index(label)] == 1]
    if a_axes:
        a = a.sum(a_axes, keepdim=True)
    if b_axes:
        b = b.sum(b_axes, keepdim=True)
    return a, b


class Diagonal(KernelFunction):
    """A diagonal view, `view(data)` giving its geometry from the viewed array's (the einsum
    diagonals over groups of axes, torch.diagonal's offset diagonal of two axes)."""

    @staticmethod
    def forward(ctx, a, view):
        ctx.input_shape, ctx.view = a._data.shape, view
        return view_of(a, view(a._data))

    @staticmethod
    def backward(ctx, g):
        return DiagonalBackward.apply(g, ctx.input_shape, ctx.view), None


class DiagonalBackward(KernelFunction):
    """Zeros of the input's shape with the gradient written onto the diagonal (its own backward
    is the diagonal again, so double backward works)."""

    @staticmethod
    def forward(ctx, g, input_shape, view):
        ctx.view = view
        out = NDArray.full(input_shape, 0, g._data.dtype, g._data.device)
        view(out).assign(g._data)
        return wrap(out)

    @staticmethod
    def backward(ctx, gg):
        return Diagonal.apply(gg, ctx.view), None, None


def _diagonal_view(data, groups):
    """Output axis i walks all axes in groups[i] (of equal size) together."""
    shape = tuple(data.shape[group[0]] for group in groups)
    strides = tuple(sum(data.strides[axis] for axis in group) for group in groups)
    return data.as_strided(shape, strides, data.offset)


def _offset_diagonal_view(data, offset, dim1, dim2):
    """torch.diagonal's geometry: dim1 and dim2 removed, their diagonal (shifted right by
    offset > 0, down by offset < 0) appended as the last axis."""
    size1, size2 = data.shape[dim1], data.shape[dim2]
    length = max(0, min(size1, size2 - offset) if offset >= 0 else min(size1 + offset, size2))
    start = data.offset
    if length:
        start += offset * data.strides[dim2] if offset >= 0 else -offset * data.strides[dim1]
    rest = [d for d in range(data.ndim) if d not in (dim1, dim2)]
    return data.as_strided(tuple(data.shape[d] for d in rest) + (length,),
                           tuple(data.strides[d] for d in rest) +
                           (data.strides[dim1] + data.strides[dim2],), start)


# ---- diagonals and triangles --------------------------------------------------------------------
def _offset_diagonal(offset, dim1, dim2, ndim):
    """(view function, dim1, dim2) of torch.diagonal's geometry for an ndim-array, the dims
    checked and made non-negative."""
    d1, d2 = normalize_dim(dim1, ndim), normalize_dim(dim2, ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    view = functools.partial(_offset_diagonal_view, offset=operator.index(offset), dim1=d1,
                             dim2=d2)
    return view, d1, d2


def diagonal(input, offset=0, dim1=0, dim2=1):
    """A view of the diagonal of dims dim1 and dim2, appended as the last dim."""
    return Diagonal.apply(input, _offset_diagonal(offset, dim1, dim2, input.ndim)[0])


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """Each last-dim vector of input placed on the diagonal of a new matrix (zeros elsewhere)."""
    n = input.shape[-1] + abs(operator.index(offset)) if input.ndim else None
    if n is None:
        raise RuntimeError("diag_embed(): input must be at least 1-dimensional")
    view, d1, d2 = _offset_diagonal(offset, dim1, dim2, input.ndim + 1)
    shape = list(input.shape[:-1])
    for d in sorted((d1, d2)):
        shape.insert(d, n)
    return DiagonalBackward.apply(input, tuple(shape), view)


def diag(input, diagonal=0):
    """A 1-D input becomes a square matrix with it on the given diagonal; a 2-D input gives a
    copy of that diagonal."""
    if input.ndim == 1:
        return diag_embed(input, diagonal, 0, 1)
    if input.ndim == 2:
        return Diagonal.apply(input, _offset_diagonal(diagonal, 0, 1, 2)[0]).clone()
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.ndim}D")


def trace(input):
    """Sum of the main diagonal of a 2-D tensor (torch.trace)."""
    if input.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.ndim}")
    if input.dtype is dtypes.bool_:
        raise NotImplementedError('"trace" not implemented for \'Bool\'')
    return diagonal(input).sum()


def _triangle(input, keep, name):
    """input with the elements where keep(column - row) is False set to zero."""
    if input.ndim < 2:
        raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
    rows, cols = input.shape[-2:]
    offsets = arange(cols, device=input.device) - arange(rows, device=input.device).unsqueeze(1)
    return where(keep(offsets), input, wrap(scalar_array(0, input.dtype, input.device)))


def tril(input, diagonal=0):
    """The lower triangle: elements with column - row <= diagonal, zeros above."""
    return _triangle(input, lambda offsets: offsets <= operator.index(diagonal), "tril")


def triu(input, diagonal=0):
    """The upper triangle: elements with column - row >= diagonal, zeros below."""
    return _triangle(input, lambda offsets: offsets >= operator.index(diagonal), "triu")


def block_diag(*tensors):
    """The tensors (0-d, 1-D or 2-D) as blocks along the diagonal of one matrix."""
    blocks = []
    for k, t in enumerate(tensors):
        if t.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer "
                               f"dimensions. Input {k} has {t.ndim} dimensions")
        blocks.append(t.reshape(1, -1) if t.ndim < 2 else t)
    if not blocks:
        return empty(1, 0)
    dtype = blocks[0].dtype
    for b in blocks[1:]:
        dtype = dtypes.promote_types(dtype, b.dtype)
    width = sum(b.shape[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        b = b.to(dtype)
        pieces = [_zeros_like_rows(b, left), b, _zeros_like_rows(b, width - left - b.shape[1])]
        rows.append(cat(pieces, 1))
        left += b.shape[1]
    return cat(rows, 0)


def _zeros_like_rows(block, columns):
    return zeros(block.shape[0], columns, dtype=block.dtype, device=block.device)


# ---- products of vectors ------------------------------------------------------------------------
def cross(input, other, dim=None):
    """The cross product of 3-vectors along dim (torch.cross: without dim, the first dim of
    size 3, with a warning as in torch)."""
    shape = broadcast_shapes(input.shape, other.shape)
    if dim is None:
        warnings.warn("Using torch.cross without specifying the dim arg is deprecated.\nPlease "
                      "either pass the dim explicitly or simply use torch.linalg.cross.\nThe "
                      "default value of dim will change to agree with that of linalg.cross in a "
                      "future release.", UserWarning)
        dim = next((d for d, n in enumerate(shape) if n == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input")
    d = normalize_dim(dim, len(shape))
    if shape[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got "
                           f"{input.shape[d] if input.ndim == len(shape) else shape[d]} and "
                           f"{other.shape[d] if other.ndim == len(shape) else shape[d]}")
    a, b = input.expand(shape), other.expand(shape)
    x = [a.narrow(d, i, 1) for i in range(3)]
    y = [b.narrow(d, i, 1) for i in range(3)]
    return cat([x[1] * y[2] - x[2] * y[1], x[2] * y[0] - x[0] * y[2],
                x[0] * y[1] - x[1] * y[0]], d)


def dist(input, other, p=2):
    """The p-norm of input - other (broadcast), as one DistBackward0 node over both operands
    (complex operands: the norm of the difference, composed, so its gradient is abs's)."""
    if input.dtype.is_complex or other.dtype.is_complex:
        return (input - other).norm(p)
    return Dist.apply(input, other, p)


class Dist(KernelFunction):
    """torch.dist: norm(input - other, p); backward is torch's norm_backward of the difference,
    negated for other (p = 0 gives no gradient)."""

    @staticmethod
    def forward(ctx, a, b, p):
        difference = a.detach() - b.detach()
        if not difference.dtype.is_floating_point:
            raise RuntimeError("norm(): input dtype should be either floating point or complex. "
                               f"Got {TORCH_NAMES[difference.dtype.name]} instead.")
        ctx.p = float(p)
        out = wrap(difference.norm(p)._data)
        ctx.save_for_backward(a, b, out)
        return out

    @staticmethod
    def backward(ctx, g):
        a, b, out = ctx.saved_tensors
        if ctx.p == 0:
            return None, None, None
        difference = a - b
        kept = (1,) * difference.ndim
        grad = _norm_backward(g.reshape(kept), difference, out.reshape(kept), ctx.p,
                              tuple(range(difference.ndim)))
        return sum_to(grad, a.shape), sum_to(-grad, b.shape), None


def cdist(x1, x2, p=2.0, compute_mode=None):
    """Pairwise p-norm distances between the rows of x1 (…, P, M) and x2 (…, R, M)."""
    if x1.ndim < 2 or x2.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.ndim}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: "
                           f"{x1.shape[-1]} X2: {x2.shape[-1]}")
    for name, x in (("X1", x1), ("X2", x2)):
        if not x.dtype.is_floating_point:
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: "
                               f"{TORCH_NAMES[x.dtype.name]}")
    if x1.dtype is not x2.dtype:
        raise RuntimeError(f"expected scalar type {TORCH_NAMES[x1.dtype.name]} but found "
                           f"{TORCH_NAMES[x2.dtype.name]}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    return Cdist.apply(x1, x2, float(p))


class Cdist(KernelFunction):
    """The norms of the pairwise differences; backward is torch's _cdist_backward: no gradient
    where a distance is 0, and every coordinate tying for an inf-norm gets the whole gradient
    (vector_norm shares it out)."""

    @staticmethod
    def forward(ctx, x1, x2, p):
        ctx.p = p
        # our ops' forwards run recording: compute on detached operands
        difference = x1.detach().unsqueeze(-2) - x2.detach().unsqueeze(-3)
        if difference.shape[-1] == 0:       # no columns: every distance is 0, for any p
            dist = zeros(*difference.shape[:-1], dtype=x1.dtype, device=x1.device)
        else:
            dist = wrap(difference.norm(p, dim=-1)._data)
        ctx.save_for_backward(x1, x2, dist)
        return dist

    @staticmethod
    def backward(ctx, g):
        x1, x2, dist = ctx.saved_tensors
        p = ctx.p
        diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)
        if p == 0 or diff.shape[-1] == 0:
            grad = zeros(*diff.shape, dtype=diff.dtype, device=diff.device)
        else:
            dist, g = dist.unsqueeze(-1), g.unsqueeze(-1)
            if p == 1:
                grad = g * diff.sign()
            elif math.isinf(p):
                grad = g * diff.sign() * (diff.abs() == dist)
            else:
                if p < 2:
                    scaled = diff.sign() * diff.abs() ** (p - 1)
                    vanishes = (dist == 0) | (diff == 0) if p < 1 else dist == 0
                elif p == 2:
                    scaled, vanishes = diff, dist == 0
                else:
                    scaled, vanishes = diff * diff.abs() ** (p - 2), dist == 0
                grad = where(vanishes, 0.0, scaled * g / dist ** (p - 1))
        return sum_to(grad.sum(-2), x1.shape), sum_to(-grad.sum(-3), x2.shape), None


# ---- more products ----------------------------------------------------------------------------
def vdot(input, other):
    """The dot product of two 1-D tensors, the first conjugated (for real tensors dot)."""
    return dot(input.conj(), other)


def chain_matmul(*matrices):
    """The product of 2-D matrices (deprecated in torch for linalg.multi_dot)."""
    warnings.warn("torch.chain_matmul is deprecated and will be removed in a future PyTorch "
                  "release. Use torch.linalg.multi_dot instead, which accepts a list of two or "
                  "more tensors rather than multiple parameters.", UserWarning)
    if len(matrices) == 1:
        return matrices[0].clone()
    return multi_dot(matrices)


def multi_dot(tensors):
    """A chain of matrix products; the first tensor may be a row vector and the last a column
    vector (1-D), the rest must be 2-D. Multiplied in the order that costs the fewest
    multiply-adds (the classic chain-order dynamic programme)."""
    tensors = list(tensors)
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    matrices = _as_matrices(tensors)
    result = _chain(matrices, _chain_order([m.shape[0] for m in matrices]
                                           + [matrices[-1].shape[1]]), 0, len(matrices) - 1)
    if tensors[0].ndim == 1:
        result = result.squeeze(0)
    if tensors[-1].ndim == 1:
        result = result.squeeze(-1)
    return result


def _as_matrices(tensors):
    last = len(tensors) - 1
    for i, t in enumerate(tensors):
        if t.ndim != 2 and not (t.ndim == 1 and i in (0, last)):
            where = "first" if i == 0 else "last" if i == last else None
            raise RuntimeError(f"multi_dot(): the {where} tensor must be 1D or 2D but got "
                               f"{t.ndim}D" if where else f"multi_dot(): tensor {i} must be 2D "
                               f"but got {t.ndim}D")
    matrices = list(tensors)
    if matrices[0].ndim == 1:
        matrices[0] = matrices[0].unsqueeze(0)
    if matrices[-1].ndim == 1:
        matrices[-1] = matrices[-1].unsqueeze(-1)
    for i in range(last):
        if matrices[i].shape[1] != matrices[i + 1].shape[0]:
            raise RuntimeError(f"multi_dot(): tensors {i} and {i + 1} with shapes "
                               f"{list(tensors[i].shape)} and {list(tensors[i + 1].shape)} "
                               "cannot be multiplied")
    return matrices


def _chain_order(sizes):
    """split[i][j]: where the cheapest product of matrices i..j splits (matrix i is
    sizes[i] x sizes[i+1])."""
    n = len(sizes) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j], split[i][j] = min(
                (cost[i][k] + cost[k + 1][j] + sizes[i] * sizes[k + 1] * sizes[j + 1], k)
                for k in range(i, j))
    return split


def _chain(matrices, split, i, j):
    if i == j:
        return matrices[i]
    k = split[i][j]
    return mm(_chain(matrices, split, i, k), _chain(matrices, split, k + 1, j))


def kron(input, other):
    """The Kronecker product: every element of input times the whole of other, in blocks."""
    ndim = max(input.ndim, other.ndim)
    a = input.reshape((1,) * (ndim - input.ndim) + tuple(input.shape))
    b = other.reshape((1,) * (ndim - other.ndim) + tuple(other.shape))
    # a's dims at even places, b's at odd ones: the product's (i, j) pairs are then adjacent
    spread_a = a.reshape([n for size in a.shape for n in (size, 1)])
    spread_b = b.reshape([n for size in b.shape for n in (1, size)])
    return (spread_a * spread_b).reshape([m * n for m, n in zip(a.shape, b.shape)])


def diagflat(input, offset=0):
    """input flattened onto the offset diagonal of a square matrix."""
    return diag(input.reshape(-1), offset)


def vander(x, N=None, increasing=False):
    """The Vandermonde matrix of 1-D x: columns x^(N-1), ..., x^0 (reversed when increasing)."""
    if x.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else operator.index(N)
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    keeps = x.dtype.is_floating_point or x.dtype.is_complex     # else powers in int64
    if n == 0:
        return x.new_zeros((x.shape[0], 0), dtype=x.dtype if keeps else dtypes.int64)
    powers = powers_along_last(x if keeps else x.to(dtypes.int64), n)
    return powers if increasing else powers.flip(-1)


def powers_along_last(x, n):
    """x[..., None] ** [0, 1, ..., n-1] (n >= 1) as a running product: exact for integers, and
    0^0 = 1."""
    columns = [x.new_ones(x.shape).unsqueeze(-1)]
    for _ in range(1, n):
        columns.append(columns[-1] * x.unsqueeze(-1))
    return cat(columns, -1)
