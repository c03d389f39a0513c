"""Tensors with numpy operands, numpy ufuncs on tensors, and memory shared with numpy arrays,
case by case against torch (skipped where torch is missing).

torch reaches numpy through `__array__`/`__array_wrap__` and `__array_priority__`, and we
give its results: `t + ndarray` has the dtype numpy's ufunc gives (`int64 tensor + float32
array` is float64; bool results become uint8), `np.sin(t)` is a tensor, and a tensor that
requires grad is refused ("Can't call numpy() on Tensor that requires grad") instead of
silently leaving the graph. Choices where torch 2.13 is odd:

- `ndarray + t` (and the other reflected operators, `ndarray < t`, `t < ndarray`): TypeErrors
  in torch (its reflected dunders refuse an ndarray; `+` reports numpy's "Concatenation
  operation is not implemented"). We raise the same TypeErrors: that is stable torch behaviour,
  and an error is not a wrong result. `ndarray / t` works in torch (its __rtruediv__ is
  `t.reciprocal() * ndarray`) and here.
- `t != ndarray`: torch 2.13 returns the Python bool True (both sides decline and Python falls
  back to identity), which is silently wrong while `t == ndarray` is elementwise. We return the
  elementwise tensor, like `==`; the test says so.
- `t += ndarray` rebinds t to `t + ndarray` (a new tensor), as in torch.
"""
import operator

import numpy as np
import pytest

import minitorch as mt

torch = pytest.importorskip("torch", reason="these cases compare with torch")
# torch's own __array__/__array_wrap__ predate numpy 2's signatures (ours take them), and torch
# warns on sharing numpy's read-only broadcast views
pytestmark = [pytest.mark.filterwarnings("ignore:__array:DeprecationWarning"),
              pytest.mark.filterwarnings("ignore:The given NumPy array is not writable")]

F64 = np.array([1.0, 0.0])
F32 = np.array([1.0, 0.0], np.float32)
I64 = np.array([1, 3])     # no integer zero: numpy's `// 0` is 0, torch's own op raises
I32 = np.array([1, 3], np.int32)
U8 = np.array([1, 3], np.uint8)
B = np.array([True, True])
F64_0D = np.array(2.0)

TENSORS = {"f32": [1.0, 2.0], "i64": [1, 2], "b": [True, False], "u8": [1, 2]}
DTYPES = {"f32": "float32", "i64": "int64", "b": "bool", "u8": "uint8"}


def _pair(name):
    data, dtype = TENSORS[name], DTYPES[name]
    return mt.tensor(data, dtype=getattr(mt, dtype)), torch.tensor(data, dtype=getattr(torch,
                                                                                         dtype))


def _outcome(fn, *args):
    """('ok', type name, dtype name, values) or ('error', exception type, message start)."""
    try:
        result = fn(*args)
    except (TypeError, RuntimeError, ValueError) as error:
        return "error", type(error).__name__, str(error)[:40]
    if isinstance(result, (mt.Tensor, torch.Tensor)):
        return ("ok", "Tensor", str(result.dtype).split(".")[-1],
                np.asarray(result.detach()).astype(np.float64).tolist())
    if isinstance(result, np.ndarray):
        return "ok", "ndarray", result.dtype.name, result.astype(np.float64).tolist()
    return "ok", type(result).__name__, None, result


BINARY = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
          "//": operator.floordiv, "%": operator.mod, "**": operator.pow,
          "&": operator.and_, "|": operator.or_, "^": operator.xor, "==": operator.eq,
          "<": operator.lt, ">=": operator.ge}
ARRAYS = {"f64": F64, "f32": F32, "i64": I64, "i32": I32, "u8": U8, "b": B, "f64_0d": F64_0D}


@pytest.mark.parametrize("tensor", list(TENSORS))
@pytest.mark.parametrize("array", list(ARRAYS))
@pytest.mark.parametrize("op", list(BINARY))
def test_tensor_op_ndarray_as_torch(tensor, array, op):
    ours, theirs = _pair(tensor)
    fn, a = BINARY[op], ARRAYS[array]
    with np.errstate(all="ignore"):
        expected = _outcome(fn, theirs, a)
        got = _outcome(fn, ours, a)
    if expected[0] == "error":
        assert got[:2] == expected[:2]
    else:
        assert got[:3] == expected[:3]
        np.testing.assert_allclose(got[3], expected[3], rtol=1e-6)


@pytest.mark.parametrize("op", list(BINARY))
def test_ndarray_op_tensor_as_torch(op):
    """The reflected side: TypeErrors in torch except == and /."""
    for tensor in TENSORS:
        ours, theirs = _pair(tensor)
        with np.errstate(all="ignore"):
            expected, got = _outcome(BINARY[op], F64, theirs), _outcome(BINARY[op], F64, ours)
        assert got[:3] == expected[:3]
        if expected[0] == "ok":
            np.testing.assert_allclose(got[3], expected[3])


def test_not_equal_is_elementwise_where_torch_returns_a_bool():
    assert (mt.tensor([1.0, 2.0]) != F64).tolist() == [False, True]
    assert (F64 != mt.tensor([1.0, 2.0])).tolist() == [False, True]
    assert (mt.tensor([1.0, 2.0]) != F64).dtype is mt.bool


UFUNCS = {"sin": lambda t: np.sin(t), "exp": lambda t: np.exp(t), "negative": np.negative,
          "add 1": lambda t: np.add(t, 1), "add t t": lambda t: np.add(t, t),
          "maximum": lambda t: np.maximum(t, F64), "equal": lambda t: np.equal(t, F64),
          "sqrt": np.sqrt, "asarray": np.asarray, "asarray f64": lambda t: np.asarray(t, "f8"),
          "concatenate": lambda t: np.concatenate([t, t]),
          "add out": lambda t: np.add(t, F64, out=np.empty(2)),
          "float64 * t": lambda t: np.float64(2) * t, "t * float64": lambda t: t * np.float64(2),
          "int64 * t": lambda t: np.int64(2) * t, "float32 + t": lambda t: np.float32(2) + t,
          "t @ ndarray": lambda t: t @ np.ones((2, 2)), "ndarray @ t": lambda t: np.ones(2) @ t}


@pytest.mark.parametrize("tensor", ["f32", "i64", "b"])
@pytest.mark.parametrize("case", list(UFUNCS))
def test_numpy_functions_on_tensors_as_torch(tensor, case):
    ours, theirs = _pair(tensor)
    with np.errstate(all="ignore"):
        expected, got = _outcome(UFUNCS[case], theirs), _outcome(UFUNCS[case], ours)
    assert got[:3] == expected[:3]
    if expected[0] == "ok":
        np.testing.assert_allclose(got[3], expected[3], rtol=1e-6)


REQUIRES_GRAD = {"t + ndarray": lambda g: g + np.ones(2, np.float32),
                 "t * ndarray": lambda g: g * F64, "np.sin": np.sin,
                 "np.add": lambda g: np.add(g, 1), "np.asarray": np.asarray,
                 "np.array": np.array, "numpy()": lambda g: g.numpy()}


@pytest.mark.parametrize("case", list(REQUIRES_GRAD))
def test_a_tensor_that_requires_grad_is_refused_as_torch(case):
    message = "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() " \
              "instead."
    with pytest.raises(RuntimeError) as theirs:
        REQUIRES_GRAD[case](torch.ones(2, requires_grad=True))
    with pytest.raises(RuntimeError) as ours:
        REQUIRES_GRAD[case](mt.ones(2, requires_grad=True))
    assert str(ours.value) == str(theirs.value) == message


def test_in_place_with_ndarray_rebinds_as_torch():
    ours, theirs = mt.tensor([1, 2]), torch.tensor([1, 2])
    ours_before, theirs_before = ours, theirs
    ours += F32
    theirs += F32
    assert (ours is ours_before) == (theirs is theirs_before) is False
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    assert ours.tolist() == theirs.tolist()


# ---- memory sharing ---------------------------------------------------------------------------
VIEWS = {"contiguous": lambda a: a, "column slice": lambda a: a[:, 1:],
         "step": lambda a: a[:, ::2], "transposed": lambda a: a.T,
         "offset rows": lambda a: a[1:], "broadcast": lambda a: np.broadcast_to(a[0], (2, 4))}


@pytest.mark.parametrize("view", list(VIEWS))
@pytest.mark.parametrize("make", [mt.from_numpy, mt.as_tensor, mt.asarray])
def test_from_numpy_shares_strided_views_as_torch(view, make):
    base = np.arange(12.0).reshape(3, 4)
    array = VIEWS[view](base)
    t = make(array)
    expected = torch.from_numpy(array)
    assert t.stride() == expected.stride() and t.storage_offset() == expected.storage_offset()
    assert t.tolist() == array.tolist()
    base[0, 3] = -1.0                       # a write through numpy shows in the tensor
    assert t.tolist() == array.tolist()
    if view != "broadcast":                 # (numpy's broadcast view is read-only)
        t.mul_(2)                           # and a write through the tensor in numpy
        assert t.tolist() == array.tolist()


def test_bool_arrays_are_shared_as_bool():
    array = np.array([True, False, True])
    t = mt.from_numpy(array)
    t[1] = True
    assert t.dtype is mt.bool and array.tolist() == [True, True, True]
    assert np.asarray(t).dtype == np.bool_


@pytest.mark.parametrize("np_dtype", [np.int32, np.int16, np.int8, np.float16])
def test_narrow_dtypes_share_memory_as_torch(np_dtype):
    array = np.arange(3).astype(np_dtype)
    t = mt.from_numpy(array)
    t[0] = 9
    assert t.dtype.name == np.dtype(np_dtype).name and array[0] == 9


def test_as_tensor_copies_for_another_dtype_as_torch():
    array = np.arange(3.0)
    mt.as_tensor(array, dtype=mt.float32)[0] = 9
    assert array[0] == 0


@pytest.mark.parametrize("array", [np.arange(4.0)[::-1],
                                   np.ndarray((2,), np.float64, np.zeros(3), strides=(4,))])
def test_strides_torch_refuses(array):
    with pytest.raises(ValueError) as theirs:
        torch.from_numpy(array)
    with pytest.raises(ValueError) as ours:
        mt.from_numpy(array)
    assert str(ours.value) == str(theirs.value)


def test_empty_arrays():
    assert mt.from_numpy(np.zeros((2, 0))).shape == (2, 0)
