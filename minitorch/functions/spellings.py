"""torch's top-level spellings of Tensor methods (`torch.exp_(t)`, `torch.detach(t)`,
`torch.conj(t)`, …) and a few top-level functions that are another op under a different
argument order (`torch.rsub`, `torch.fill`) or another name (`torch.row_stack`, `torch.ravel`).
Each is the Tensor method itself: no op is defined twice."""
from .. import dtypes
from ..tensor import Tensor, full
from .elementwise import result_type as _operands_result_type, sub
from .joining import cat, vstack

_METHODS = (
    # in-place math
    "abs_ acos_ acosh_ arccos_ arccosh_ arcsin_ arcsinh_ arctan_ arctanh_ asin_ asinh_ atan_ "
    "atanh_ ceil_ clamp_ clamp_max_ clamp_min_ clip_ cos_ cosh_ deg2rad_ erf_ erfc_ exp2_ exp_ "
    "expm1_ fill_ fix_ floor_ frac_ gcd_ i0_ lcm_ ldexp_ log10_ log1p_ log2_ log_ logit_ "
    "nan_to_num_ neg_ negative_ rad2deg_ reciprocal_ round_ rsqrt_ sigmoid_ sin_ sinc_ sinh_ "
    "sqrt_ square_ tan_ tanh_ trunc_ xlogy_ zero_ "
    # history and views
    "detach detach_ adjoint ravel split_with_sizes "
    # complex-number views and queries (identities / answers for real tensors)
    "conj conj_physical conj_physical_ resolve_conj resolve_neg is_conj is_neg real imag "
    # queries
    "is_inference get_device")


def _method_spelling(name):
    # torch.real(t) is t.real (properties are in the class body; some methods are bound later)
    is_property = isinstance(getattr(Tensor, name, None), property)

    def call(input, *args, **kwargs):
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                            f"{type(input).__name__}")
        attribute = getattr(input, name)
        return attribute if is_property else attribute(*args, **kwargs)
    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"torch.{name}(input, …): the same as input.{name}(…)."
    return call


globals().update({name: _method_spelling(name) for name in _METHODS.split()})


def rsub(input, other, alpha=1):
    """other - alpha * input (torch.sub with the operands swapped)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"rsub(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    return sub(other, input, alpha=alpha)


def fill(input, value):
    """A new tensor shaped like input, every element `value` (torch.fill, out of place)."""
    return input.clone().fill_(value)


def row_stack(tensors):
    """Stacks tensors row-wise, same as vstack (torch.row_stack)."""
    return vstack(tensors)


def result_type(tensor1, tensor2):
    """The dtype torch's arithmetic gives these two operands (tensors or Python numbers)."""
    if not isinstance(tensor1, Tensor) and not isinstance(tensor2, Tensor):
        return dtypes.result_type(dtypes.scalar_dtype(tensor1), dtypes.scalar_dtype(tensor2),
                                  0, 0)
    return _operands_result_type(tensor1, tensor2)


def unsafe_chunk(input, chunks, dim=0):
    """torch.unsafe_chunk: chunk without torch's view checks on in-place writes to the parts;
    the same parts (views) here."""
    return input.chunk(chunks, dim)


def unsafe_split(tensor, split_size_or_sections, dim=0):
    """torch.unsafe_split: split without torch's view checks; the same parts here."""
    return tensor.split(split_size_or_sections, dim)


def unsafe_split_with_sizes(input, split_sizes, dim=0):
    """torch.unsafe_split_with_sizes: split_with_sizes without torch's view checks."""
    return input.split_with_sizes(split_sizes, dim)


def narrow_copy(input, dim, start, length):
    """A contiguous copy of input.narrow(dim, start, length) (torch.narrow_copy)."""
    return input.narrow(dim, start, length).contiguous().clone()


def nonzero_static(input, *, size, fill_value=-1):
    """nonzero's (count, ndim) indices cut or padded with fill_value to exactly `size` rows,
    a shape known before the values are (torch.nonzero_static)."""
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise RuntimeError("nonzero_static: 'size' must be an non-negative integer")
    found = input.nonzero()
    if found.shape[0] >= size:
        return found[:size]
    padding = full((size - found.shape[0], found.shape[1]), fill_value, dtype=dtypes.int64,
                   device=input.device)
    return cat([found, padding])


__all__ = _METHODS.split() + ["fill", "narrow_copy", "nonzero_static", "result_type",
                              "row_stack", "rsub", "unsafe_chunk", "unsafe_split",
                              "unsafe_split_with_sizes"]
