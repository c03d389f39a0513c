"""nn.utils.stateless / torch.func.functional_call: call a module with some of its parameters
and buffers replaced by given tensors for that one call (e.g. to differentiate the output with
respect to tensors that are not the module's own)."""
import contextlib
import warnings
from collections.abc import Sequence

from ...tensor import Tensor
from ..module import Module

__all__ = ["functional_call", "func_functional_call"]

_MISSING = object()


def _tied_names(module):
    """name -> every name of the same tensor, for the tensors registered under several names."""
    names_by_tensor = {}
    members = list(module.named_parameters(remove_duplicate=False)) + \
        list(module.named_buffers(remove_duplicate=False))
    for name, tensor in members:
        names_by_tensor.setdefault(id(tensor), set()).add(name)
    return {name: names for names in names_by_tensor.values() if len(names) > 1
            for name in names}


def _untie_named_tensors_map(module, parameters_and_buffers):
    """A value given for one name of a tied tensor goes to all its names."""
    tied = _tied_names(module)
    given_tied = [name for name in parameters_and_buffers if name in tied]
    for name in given_tied:
        given_values = {id(parameters_and_buffers[other]) for other in tied[name]
                        if other in parameters_and_buffers}
        if len(given_values) > 1:
            raise ValueError(f"functional_call got multiple values for keys {sorted(tied[name])}"
                             ", which are tied. Consider using tie_weights=False")
    untied = dict(parameters_and_buffers)
    for name in given_tied:
        for other in tied[name]:
            untied[other] = parameters_and_buffers[name]
    return untied


def _owner(module, path):
    """(submodule, attribute) for a dotted tensor path."""
    prefix, _, attr = path.rpartition(".")
    for part in prefix.split(".") if prefix else ():
        try:
            child = getattr(module, part)
        except AttributeError as error:
            raise AttributeError(f"{module._get_name()} has no attribute `{part}`") from error
        if not isinstance(child, Module):
            raise TypeError(f"submodule `{prefix}`: {child} is not an instance of "
                            "torch.nn.Module")
        module = child
    return module, attr


def _swap_tensor(module, name, tensor):
    """Put `tensor` (or nothing, for _MISSING) at `name`; returns what was there. Parameters
    and buffers are swapped in their dicts, so any Tensor (not only a Parameter) fits."""
    if tensor is not _MISSING and tensor is not None and not isinstance(tensor, Tensor):
        raise TypeError(f"{tensor} is not an instance of torch.Tensor")
    for store in (module._parameters, module._buffers):
        if name in store:
            original = store[name]
            if tensor is _MISSING:
                del store[name]
            else:
                store[name] = tensor
            return original
    original = getattr(module, name) if hasattr(module, name) else _MISSING
    if original is not _MISSING and original is not None and not isinstance(original, Tensor):
        raise TypeError(f"attribute `{name}`: {original} is not an instance of torch.Tensor")
    if tensor is not _MISSING:
        setattr(module, name, tensor)
    elif hasattr(module, name):
        delattr(module, name)
    return original


def _swap_all(module, named_tensors):
    """Swap every entry in; on an error, what was swapped is put back. Returns the originals."""
    originals = {}
    try:
        for path, tensor in named_tensors.items():
            owner, attr = _owner(module, path)
            originals[path] = _swap_tensor(owner, attr, tensor)
    except Exception:
        _swap_all(module, originals)
        raise
    return originals


def _check_keys(module, keys):
    valid = {name for name, _ in module.named_parameters(remove_duplicate=False)} | \
        {name for name, _ in module.named_buffers(remove_duplicate=False)}
    messages = []
    unexpected, missing = sorted(set(keys) - valid), sorted(valid - set(keys))
    if unexpected:
        messages.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
    if missing:
        messages.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
    if messages:
        raise RuntimeError("Error(s) in reparametrizing for {}:\n\t{}".format(
            module._get_name(), "\n\t".join(messages)))


@contextlib.contextmanager
def _reparametrize_module(module, parameters_and_buffers, tie_weights=False, strict=False):
    named = _untie_named_tensors_map(module, parameters_and_buffers) if tie_weights \
        else parameters_and_buffers
    if strict:
        _check_keys(module, named)
    originals = {}
    try:
        originals = _swap_all(module, named)
        yield
    finally:
        _swap_all(module, originals)


def _functional_call(module, parameters_and_buffers, args=None, kwargs=None, *,
                     tie_weights=True, strict=False):
    if kwargs is None:
        kwargs = {}
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _reparametrize_module(module, parameters_and_buffers, tie_weights, strict):
        return module(*args, **kwargs)


def functional_call(module, parameters_and_buffers, args=None, kwargs=None, *, tie_weights=True,
                    strict=False):
    """module(*args, **kwargs) with `parameters_and_buffers` ({dotted name: tensor}) in place of
    the module's own for this call (torch.nn.utils.stateless.functional_call, deprecated in
    torch for torch.func.functional_call)."""
    warnings.warn("`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 "
                  "and will be removed in a future version of PyTorch. Please use `torch.func."
                  "functional_call` instead which is a drop-in replacement.", FutureWarning,
                  stacklevel=2)
    return _functional_call(module, parameters_and_buffers, args, kwargs,
                            tie_weights=tie_weights, strict=strict)


def func_functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *,
                         tie_weights=True, strict=False):
    """torch.func.functional_call: as above, the replacements given as one dict or a sequence
    of dicts with distinct keys."""
    if isinstance(parameter_and_buffer_dicts, dict):
        merged = parameter_and_buffer_dicts
    elif isinstance(parameter_and_buffer_dicts, Sequence):
        merged = _merge_dicts(parameter_and_buffer_dicts)
    else:
        raise ValueError("Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of "
                         f"dicts, but got {type(parameter_and_buffer_dicts)}")
    return _functional_call(module, merged, args, kwargs, tie_weights=tie_weights, strict=strict)


def _merge_dicts(dicts):
    if not all(isinstance(d, dict) for d in dicts):
        raise ValueError("Expected all elements of parameter_and_buffer_dicts to be dictionaries")
    counts = {}
    for d in dicts:
        for key in d:
            counts[key] = counts.get(key, 0) + 1
    repeated = [key for key, n in counts.items() if n > 1]
    if repeated:
        raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of functional "
                         "call is ambiguous")
    return {k: v for d in dicts for k, v in d.items()}
