"""torch's `*_copy` functions (torch.expand_copy, torch.transpose_copy, ...): the view op's
result copied into fresh contiguous memory, so the output never aliases the input (what
functionalized programs need). Each is the view followed by clone(contiguous_format), so
gradients flow as through the view. Defined for the views minitorch has."""
from ..tensor import Tensor, contiguous_format
from .complex import view_as_complex, view_as_real

__all__ = ["alias_copy", "as_strided_copy", "detach_copy", "diagonal_copy", "expand_copy",
           "narrow_copy", "permute_copy", "select_copy", "slice_copy", "split_copy",
           "split_with_sizes_copy", "squeeze_copy", "t_copy", "transpose_copy", "unbind_copy",
           "unfold_copy", "unsqueeze_copy", "view_as_complex_copy", "view_as_real_copy",
           "view_copy"]


def _fresh(result):
    """The view's result (or each of a list of them) in new contiguous memory."""
    if isinstance(result, (tuple, list)):
        return tuple(_fresh(r) for r in result)
    return result.clone(memory_format=contiguous_format)


def _copying(name, view):
    def copy(input, *args, **kwargs):
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                            f"{type(input).__name__}")
        return _fresh(view(input, *args, **kwargs))
    copy.__name__ = copy.__qualname__ = name
    copy.__doc__ = (f"torch.{name}: {name[:-5]} of input in new contiguous memory (a copy, "
                    f"never a view).")
    return copy


def _method(name):
    return lambda input, *args, **kwargs: getattr(input, name)(*args, **kwargs)


def _slice(input, dim=0, start=None, end=None, step=1):
    """input[start:end:step] along dim (torch's slice op, which Python spells with indexing)."""
    return input[(slice(None),) * (dim % max(input.ndim, 1)) + (slice(start, end, step),)]


_VIEWS = {name + "_copy": _method(name) for name in (
    "as_strided", "detach", "diagonal", "expand", "narrow", "permute", "select", "split",
    "split_with_sizes", "squeeze", "t", "transpose", "unbind", "unfold", "unsqueeze", "view")}
_VIEWS.update(alias_copy=lambda input: input, slice_copy=_slice,
              view_as_real_copy=view_as_real, view_as_complex_copy=view_as_complex)
globals().update({name: _copying(name, view) for name, view in _VIEWS.items()})
