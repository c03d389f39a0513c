"""torch.testing: assert_close (with torch's default tolerances and failure reports) and
make_tensor. Values are compared with our own ops (isclose, abs, max); containers (sequences
and mappings) are compared item by item, and a failure names the item."""
import collections.abc
import numbers

import numpy as np

from . import dtypes
from .autograd import no_grad
from .random import rand, randint
from .tensor import Tensor, tensor as _tensor

__all__ = ["assert_close", "assert_allclose", "make_tensor"]

# (rtol, atol) by dtype; every other dtype compares exactly
_TOLERANCES = {"float32": (1.3e-6, 1e-5), "float64": (1e-7, 1e-7)}


class _Mismatch(AssertionError):
    """A failed comparison; `path` is where inside the containers it happened."""

    def __init__(self, message, path=()):
        super().__init__(message)
        self.message, self.path = message, path


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None,
                 equal_nan=False, check_device=True, check_dtype=True, check_layout=True,
                 check_stride=False, msg=None):
    """Raise AssertionError unless actual and expected are close: same shape, dtype and device
    (unless told otherwise) and |actual - expected| <= atol + rtol * |expected| elementwise."""
    if (rtol is None) != (atol is None):
        missing = "atol" if atol is None else "rtol"
        raise ValueError(f"Both 'rtol' and 'atol' must be either specified or omitted, but got "
                         f"no {missing}.")
    options = dict(rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=check_device,
                   check_dtype=check_dtype, check_stride=check_stride)
    try:
        _compare(actual, expected, (), options)
    except _Mismatch as failure:
        raise AssertionError(_final_message(failure, msg)) from None


def assert_allclose(actual, expected, rtol=None, atol=None, equal_nan=True, msg=""):
    """The deprecated torch.testing.assert_allclose: assert_close without dtype checks."""
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan, check_dtype=False,
                 check_device=False, msg=msg or None)


def _final_message(failure, msg):
    if callable(msg):
        return msg(failure.message)
    if msg is not None:
        return msg
    where = "".join(f"[{key!r}]" for key in failure.path)
    return failure.message + (f"\n\nThe failure occurred for item {where}" if where else "")


# ---- containers -------------------------------------------------------------------------------
def _is_sequence(x):
    return isinstance(x, collections.abc.Sequence) and not isinstance(x, str)


def _compare(actual, expected, path, options):
    if _is_sequence(actual) and _is_sequence(expected):
        if len(actual) != len(expected):
            raise _Mismatch(f"The length of the sequences mismatch: {len(actual)} != "
                            f"{len(expected)}", path)
        for index, (a, e) in enumerate(zip(actual, expected)):
            _compare(a, e, path + (index,), options)
    elif isinstance(actual, collections.abc.Mapping) and \
            isinstance(expected, collections.abc.Mapping):
        if set(actual) != set(expected):
            raise _Mismatch(f"The keys of the mappings do not match:\nMissing keys in the actual "
                            f"mapping: {sorted(map(str, set(expected) - set(actual)))}\n"
                            f"Additional keys in the actual mapping: "
                            f"{sorted(map(str, set(actual) - set(expected)))}", path)
        for key in expected:
            _compare(actual[key], expected[key], path + (key,), options)
    else:
        try:
            _compare_leaf(actual, expected, options)
        except _Mismatch as failure:
            raise _Mismatch(failure.message, path) from None


def _compare_leaf(actual, expected, options):
    if isinstance(actual, Tensor) and isinstance(expected, Tensor):
        _compare_tensors(actual, expected, options)
    elif isinstance(actual, np.ndarray) and isinstance(expected, np.ndarray):
        _check_attribute("dtype", actual.dtype, expected.dtype, options["check_dtype"])
        _compare_tensors(_from_numpy(actual), _from_numpy(expected),
                         dict(options, check_dtype=False))
    elif _is_number(actual) and _is_number(expected):
        if type(actual) is not type(expected) and options["check_dtype"]:
            raise _Mismatch(f"The (d)types do not match: {type(actual)} != {type(expected)}.")
        _compare_scalars(actual, expected, options)
    elif actual is None and expected is None:
        return
    else:
        raise TypeError(f"No comparison pair was able to handle inputs of type {type(actual)} "
                        f"and {type(expected)}.")


def _is_number(x):
    return isinstance(x, numbers.Number) and not isinstance(x, np.ndarray)


def _from_numpy(array):
    kind = array.dtype.kind
    target = {"b": np.bool_, "f": np.float32 if array.dtype == np.float32 else np.float64}
    return _tensor(array.astype(target.get(kind, np.int64)))


def _check_attribute(name, actual, expected, enabled=True):
    if enabled and actual != expected:
        raise _Mismatch(f"The values for attribute '{name}' do not match: {actual} != "
                        f"{expected}.")


# ---- values -----------------------------------------------------------------------------------
def _compare_tensors(actual, expected, options):
    _check_attribute("shape", actual.shape, expected.shape)
    _check_attribute("device", actual.device, expected.device, options["check_device"])
    _check_attribute("dtype", actual.dtype, expected.dtype, options["check_dtype"])
    if options["check_stride"]:
        _check_attribute("stride()", actual.stride(), expected.stride())
    with no_grad():
        actual, expected = actual.detach(), expected.detach().to(actual.device)
        rtol, atol = _tolerances(actual.dtype, expected.dtype, options)
        common = dtypes.promote_types(actual.dtype, expected.dtype)
        if common is dtypes.bool_:
            common = dtypes.int64
        actual, expected = actual.to(common), expected.to(common)
        matches = actual.isclose(expected, rtol=rtol, atol=atol, equal_nan=options["equal_nan"])
        if bool(matches.all()):
            return
        raise _Mismatch(_mismatch_report(actual, expected, matches, rtol, atol))


def _tolerances(actual_dtype, expected_dtype, options):
    if options["rtol"] is not None:
        return options["rtol"], options["atol"]
    pairs = [_TOLERANCES.get(d.name, (0.0, 0.0)) for d in (actual_dtype, expected_dtype)]
    return max(p[0] for p in pairs), max(p[1] for p in pairs)


def _mismatch_report(actual, expected, matches, rtol, atol):
    floating = actual.dtype.is_floating_point
    kind = "close" if floating or rtol or atol else "equal"
    abs_diff = (actual - expected).abs()
    rel_diff = abs_diff / expected.abs()
    allowed = (f" (up to {atol} allowed)", f" (up to {rtol} allowed)") if kind == "close" \
        else ("", "")
    if actual.ndim == 0:
        return _scalar_report(actual.item(), expected.item(), kind, allowed)
    total = actual.numel()
    wrong = total - int(matches.sum())
    lines = [f"Tensor-likes are not {kind}!", "",
             f"Mismatched elements: {wrong} / {total} ({100 * wrong / total:.1f}%)"]
    for label, diff, bound in (("absolute", abs_diff, allowed[0]),
                               ("relative", rel_diff, allowed[1])):
        value, flat_index = diff.reshape(-1).max(0)
        index = tuple(int(i) for i in np.unravel_index(int(flat_index), tuple(actual.shape)))
        lines.append(f"Greatest {label} difference: {value.item()} at index {index}{bound}")
    return "\n".join(lines)


def _scalar_report(actual, expected, kind, allowed):
    """Differences of two Python numbers, reported in Python precision as torch does."""
    difference = abs(actual - expected)
    relative = difference / abs(expected) if expected else \
        (float("inf") if difference else float("nan"))
    return (f"Scalars are not {kind}!\n\nExpected {expected} but got {actual}.\nAbsolute "
            f"difference: {difference}{allowed[0]}\nRelative difference: {relative}{allowed[1]}")


def _compare_scalars(actual, expected, options):
    kind = "equal" if isinstance(actual, (bool, numbers.Integral)) and \
        isinstance(expected, (bool, numbers.Integral)) and options["rtol"] is None else "close"
    dtype = dtypes.float64 if kind == "close" else dtypes.int64
    _compare_tensors(_tensor(actual, dtype=dtype), _tensor(expected, dtype=dtype),
                     dict(options, check_dtype=False, check_device=False))


# ---- make_tensor ------------------------------------------------------------------------------
def make_tensor(*shape, dtype, device, low=None, high=None, requires_grad=False,
                noncontiguous=False, exclude_zero=False, memory_format=None):
    """A random tensor: floats uniform in [low, high) (default [-9, 9)), integers in
    [low, high) (default [-9, 10)), bools either value."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    if low is not None and high is not None and low > high:
        raise ValueError(f"`low` must be less than or equal to `high`, but got {low} > {high}")
    if dtype is dtypes.bool_:
        result = randint(0, 2, shape, device=device).to(dtypes.bool_)
    elif dtype.is_floating_point:
        low, high = (-9.0 if low is None else low), (9.0 if high is None else high)
        result = rand(*shape, dtype=dtype, device=device) * (high - low) + low
    else:
        low, high = (-9 if low is None else int(low)), (10 if high is None else int(high))
        result = randint(low, max(high, low + 1), shape, device=device, dtype=dtype)
    if exclude_zero:
        replacement = 1 if dtype is dtypes.bool_ or not dtype.is_floating_point else \
            dtypes.finfo(dtype).tiny
        result = result.masked_fill(result == 0, replacement)
    if noncontiguous and result.numel() > 1:
        doubled = result.repeat_interleave(2, dim=-1)
        result = doubled[..., ::2]
    return result.requires_grad_(requires_grad) if requires_grad else result
