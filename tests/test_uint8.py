"""mt.uint8: torch.uint8's names, promotion rules and modulo-256 arithmetic.

uint8 shares bool's byte storage and kernels, so these tests pin down what must differ: the cast
kernel's `to_bool` flag, arithmetic run in int64 and wrapped back, and scalars stored modulo 256.
Values are checked against numpy references (int64 arithmetic, then % 256); where torch is
installed, results, dtypes and error messages are also compared with it.
"""
import io
import json
import math
import pickle
import struct
import warnings

import numpy as np
import pytest

import minitorch as mt
from minitorch._cpu.strided import cast as cpu_cast
from minitorch.functions.elementwise import result_type

BYTES = np.array([0, 1, 2, 3, 7, 100, 127, 128, 129, 200, 250, 254, 255], np.uint8)
DIVISORS = np.array([1, 255, 3, 250, 2, 7, 128, 2, 9, 200, 6, 1, 13], np.uint8)    # no zero


def u8(values, device="cpu"):
    return mt.tensor(np.asarray(values, np.uint8), device=device)


def wrapped(int64_values):
    """numpy's reference for torch's uint8 arithmetic: exact in int64, then modulo 256."""
    return (np.asarray(int64_values, np.int64) % 256).astype(np.uint8)


def assert_tensor(t, dtype, expected):
    assert t.dtype == dtype
    np.testing.assert_array_equal(t.cpu().numpy(), expected)


def assert_like_torch(ours, theirs):
    """Same dtype name and values (float results within float32 rounding)."""
    assert ours.dtype.name == str(theirs.dtype).split(".")[-1], (ours.dtype, theirs.dtype)
    got, want = ours.cpu().numpy(), theirs.numpy()
    if want.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-6)
    else:
        np.testing.assert_array_equal(got, want)


# ---- the dtype --------------------------------------------------------------------------------
def test_dtype_object():
    assert repr(mt.uint8) == "minitorch.uint8" and mt.uint8.name == "uint8"
    assert mt.uint8.itemsize == 1 and not mt.uint8.is_floating_point
    assert mt.uint8 is not mt.bool and mt.dtypes.from_name("uint8") is mt.uint8
    assert mt.dtypes.from_numpy(np.uint8) is mt.uint8
    assert mt.dtypes.from_numpy(np.int8) is mt.int8


DTYPE_NAMES = ["bool", "uint8", "int64", "float32", "float64"]


@pytest.mark.parametrize("a", DTYPE_NAMES)
@pytest.mark.parametrize("b", DTYPE_NAMES)
def test_promote_types_like_torch(a, b):
    torch = pytest.importorskip("torch")
    ours = mt.promote_types(getattr(mt, a), getattr(mt, b))
    assert ours.name == str(torch.promote_types(getattr(torch, a), getattr(torch, b)))[6:]


# (operand for minitorch, for torch) builders: dimensioned tensors, 0-d tensors, Python scalars
OPERANDS = {
    "bool[]": lambda m: m.tensor([True, False, True]),
    "int64[]": lambda m: m.tensor([1, 2, 3]),
    "float32[]": lambda m: m.tensor([1.5, 2.0, 3.0]),
    "float64[]": lambda m: m.tensor([1.5, 2.0, 3.0], dtype=m.float64),
    "uint8[]": lambda m: m.tensor([1, 2, 3], dtype=m.uint8),
    "int64()": lambda m: m.tensor(1000),
    "float64()": lambda m: m.tensor(1.5, dtype=m.float64),
    "bool()": lambda m: m.tensor(True),
    "int": lambda m: 300,
    "float": lambda m: 1.5,
    "bool": lambda m: True,
}


@pytest.mark.parametrize("other", list(OPERANDS))
@pytest.mark.parametrize("shape", [(3,), ()], ids=["uint8[]", "uint8()"])
def test_result_type_like_torch(other, shape):
    torch = pytest.importorskip("torch")
    ours = result_type(mt.zeros(shape, dtype=mt.uint8), OPERANDS[other](mt))
    theirs = torch.result_type(torch.zeros(shape, dtype=torch.uint8), OPERANDS[other](torch))
    assert ours.name == str(theirs)[6:]


def test_promotion_rules_named_in_the_spec(device):
    """uint8 + int scalar -> uint8; + int64 tensor -> int64; + float scalar -> default float;
    + bool -> uint8; true division -> float32; comparisons -> bool."""
    x = u8([250, 3], device)
    assert_tensor(x + 10, mt.uint8, [4, 13])
    assert_tensor(x + mt.tensor([10, 10], device=device), mt.int64, [260, 13])
    assert_tensor(x + 0.5, mt.float32, [250.5, 3.5])
    assert_tensor(x + True, mt.uint8, [251, 4])
    assert_tensor(x + mt.tensor([True, False], device=device), mt.uint8, [251, 3])
    assert_tensor(x / 2, mt.float32, [125.0, 1.5])
    assert_tensor(x / u8([2, 2], device), mt.float32, [125.0, 1.5])
    assert_tensor(x > 100, mt.bool, [True, False])
    assert_tensor(x == mt.tensor([250.0, 3.0], device=device), mt.bool, [True, True])
    mt.set_default_dtype(mt.float64)
    try:
        assert (x + 0.5).dtype == mt.float64
    finally:
        mt.set_default_dtype(mt.float32)


# ---- creation and conversion ------------------------------------------------------------------
def test_creation(device):
    assert_tensor(mt.tensor([1, 255, -1, -255], dtype=mt.uint8, device=device), mt.uint8,
                  [1, 255, 255, 1])
    assert_tensor(mt.tensor([2.9, 0.0], dtype=mt.uint8, device=device), mt.uint8, [2, 0])
    assert_tensor(mt.zeros(2, 3, dtype=mt.uint8, device=device), mt.uint8, np.zeros((2, 3)))
    assert_tensor(mt.ones(4, dtype=mt.uint8, device=device), mt.uint8, np.ones(4))
    assert_tensor(mt.full((2,), 255, dtype=mt.uint8, device=device), mt.uint8, [255, 255])
    assert_tensor(mt.full((2,), -1, dtype=mt.uint8, device=device), mt.uint8, [255, 255])
    assert_tensor(mt.full((1,), 2.5, dtype=mt.uint8, device=device), mt.uint8, [2])
    assert mt.empty(3, dtype=mt.uint8, device=device).dtype == mt.uint8
    assert_tensor(mt.arange(250, 260, dtype=mt.uint8, device=device), mt.uint8,
                  wrapped(np.arange(250, 260)))
    assert_tensor(mt.zeros_like(u8([5], device)), mt.uint8, [0])
    assert_tensor(mt.full_like(u8([5], device), 7), mt.uint8, [7])


def test_numpy_round_trip():
    array = BYTES.reshape(13, 1)
    shared = mt.from_numpy(array)
    assert shared.dtype == mt.uint8
    array[0, 0] = 42                                # from_numpy shares memory, as in torch
    assert shared[0, 0].item() == 42
    assert shared.numpy().dtype == np.uint8
    assert mt.tensor(np.uint8(7)).dtype == mt.uint8
    assert mt.tensor(BYTES).dtype == mt.uint8 and mt.as_tensor(BYTES).dtype == mt.uint8
    assert mt.tensor([1, 2]).dtype == mt.int64      # Python ints stay int64
    assert mt.tensor([u8([1])[0], u8([2])[0]]).dtype == mt.uint8
    restored = pickle.loads(pickle.dumps(u8(BYTES)))     # how DataLoader workers send tensors
    assert_tensor(restored, mt.uint8, BYTES)
    item = u8([200]).item()
    assert item == 200 and type(item) is int
    assert u8([3, 250]).tolist() == [3, 250]
    # numpy arrays convert unchecked, wrapping through int64 like torch
    converted = mt.tensor(np.array([300, -1, 300.7, -1.5]), dtype=mt.uint8)
    assert_tensor(converted, mt.uint8, [44, 255, 44, 255])


@pytest.mark.parametrize("source", ["int64", "float32", "float64", "bool"])
def test_casts(device, source):
    values = {"int64": np.array([0, 5, 255, 256, 300, -1, -256, 2 ** 40 + 3, -(2 ** 40) - 1]),
              "float32": np.array([0.0, 2.9, 255.9, 256.0, 300.5, -0.5, -1.5, -300.7, 1e9]),
              "float64": np.array([0.0, 2.9, 255.9, 256.0, 300.5, -0.5, -1.5, -300.7, 1e15]),
              "bool": np.array([True, False, True])}[source]
    x = mt.tensor(values, dtype=getattr(mt, source), device=device)
    expected = wrapped(np.trunc(values.astype(np.float64)).astype(np.int64))
    assert_tensor(x.byte(), mt.uint8, expected)
    assert_tensor(x.to(mt.uint8), mt.uint8, expected)
    assert_tensor(x.type(mt.uint8), mt.uint8, expected)


def test_casts_from_uint8(device):
    x = u8(BYTES, device)
    assert_tensor(x.float(), mt.float32, BYTES.astype(np.float32))
    assert_tensor(x.double(), mt.float64, BYTES.astype(np.float64))
    assert_tensor(x.long(), mt.int64, BYTES.astype(np.int64))
    assert_tensor(x.bool(), mt.bool, BYTES != 0)
    assert x.byte() is x and x.to(mt.uint8) is x
    assert x.type() == ("torch.cuda.ByteTensor" if device == "cuda" else "torch.ByteTensor")


def test_cast_kernel_tells_bool_from_uint8():
    """The same uint8 output buffer means bool (default, a != 0) or uint8 (low byte)."""
    ints = np.array([0, 1, 2, 255, 256, 257, -1, -255, 2 ** 40 + 7], np.int64)
    floats = np.array([0.0, 0.5, 2.9, 255.9, 256.0, -0.5, -1.5, 1e10], np.float64)
    for source in (ints, floats, floats.astype(np.float32)):
        as_bool, as_byte = np.empty(source.size, np.uint8), np.empty(source.size, np.uint8)
        cpu_cast(source, as_bool)
        cpu_cast(source, as_byte, to_bool=False)
        np.testing.assert_array_equal(as_bool, source != 0)
        np.testing.assert_array_equal(as_byte, wrapped(np.trunc(source).astype(np.int64)))
    big = np.arange(-300000, 300000, dtype=np.int64)        # the parallel path
    out = np.empty(big.size, np.uint8)
    cpu_cast(big.astype(np.float64), out, to_bool=False)
    np.testing.assert_array_equal(out, wrapped(big))


def test_conversions_like_torch():
    torch = pytest.importorskip("torch")
    floats = [300.0, -1.0, 255.9, -0.5, 1e10, 2.5]
    ints = [300, -1, 256, 2 ** 40 + 3]
    assert_like_torch(mt.tensor(floats).to(mt.uint8), torch.tensor(floats).to(torch.uint8))
    assert_like_torch(mt.tensor(ints).byte(), torch.tensor(ints).byte())
    assert_like_torch(mt.arange(-2, 3, dtype=mt.uint8), torch.arange(-2, 3, dtype=torch.uint8))
    array = np.array([300.5, -1.5, 7.0])
    assert_like_torch(mt.tensor(array, dtype=mt.uint8), torch.tensor(array, dtype=torch.uint8))


@pytest.mark.parametrize("values", [[3], [[1, 2], [3, 200]], [], 7, [i % 256 for i in range(2000)]])
def test_repr_like_torch(values):
    torch = pytest.importorskip("torch")
    ours = repr(mt.tensor(values, dtype=mt.uint8))
    assert ours == repr(torch.tensor(values, dtype=torch.uint8)).replace("torch.", "minitorch.")


def test_save_load_round_trip(tmp_path):
    state = {"pixels": u8(BYTES.reshape(13, 1)), "mask": mt.tensor([True, False]),
             "dtype": mt.uint8}
    path = tmp_path / "ckpt.safetensors"
    mt.save(state, path)
    loaded = mt.load(path)
    assert loaded["dtype"] is mt.uint8
    assert_tensor(loaded["pixels"], mt.uint8, BYTES.reshape(13, 1))
    assert_tensor(loaded["mask"], mt.bool, [True, False])
    raw = path.read_bytes()
    header = json.loads(raw[8:8 + struct.unpack("<Q", raw[:8])[0]])
    assert {header[k]["dtype"] for k in header if k != "__metadata__"} == {"U8", "BOOL"}
    buffer = io.BytesIO()
    mt.save(u8([1, 2]), buffer)
    assert_tensor(mt.load(io.BytesIO(buffer.getvalue())), mt.uint8, [1, 2])


def test_safetensors_reads_uint8(tmp_path):
    safetensors_numpy = pytest.importorskip("safetensors.numpy")
    mt.save({"x": u8(BYTES)}, tmp_path / "x.safetensors")
    arrays = safetensors_numpy.load_file(str(tmp_path / "x.safetensors"))
    assert arrays["x"].dtype == np.uint8
    np.testing.assert_array_equal(arrays["x"], BYTES)


# ---- arithmetic -------------------------------------------------------------------------------
def test_wrapping_arithmetic(device):
    x, y = u8(BYTES, device), u8(DIVISORS, device)
    a, b = BYTES.astype(np.int64), DIVISORS.astype(np.int64)
    assert_tensor(u8([250], device) + 10, mt.uint8, [4])
    assert_tensor(x + y, mt.uint8, wrapped(a + b))
    assert_tensor(x - y, mt.uint8, wrapped(a - b))
    assert_tensor(x * y, mt.uint8, wrapped(a * b))
    assert_tensor(x // y, mt.uint8, a // b)
    assert_tensor(x % y, mt.uint8, a % b)
    assert_tensor(-x, mt.uint8, wrapped(-a))
    assert_tensor(mt.neg(x), mt.uint8, wrapped(-a))
    assert_tensor(mt.abs(x), mt.uint8, BYTES)
    assert_tensor(mt.maximum(x, y), mt.uint8, np.maximum(a, b))
    assert_tensor(mt.minimum(x, y), mt.uint8, np.minimum(a, b))
    assert_tensor(x.square(), mt.uint8, wrapped(a * a))
    assert_tensor(x ** 3, mt.uint8, wrapped(a ** 3))
    assert_tensor(x.sign(), mt.uint8, np.sign(a))
    assert_tensor(x.div(y, rounding_mode="trunc"), mt.uint8, a // b)
    assert_tensor(x.div(y, rounding_mode="floor"), mt.uint8, a // b)
    assert_tensor(x.fmod(y), mt.uint8, np.fmod(a, b))


def test_scalars_are_stored_modulo_256(device):
    """A Python int meets a uint8 tensor as the byte it wraps to (torch: -7 is 249)."""
    x, a = u8(BYTES, device), BYTES.astype(np.int64)
    for scalar in (300, -1, -7, 5, 1000):
        byte = scalar % 256
        assert_tensor(x + scalar, mt.uint8, wrapped(a + byte))
        assert_tensor(scalar - x, mt.uint8, wrapped(byte - a))
        assert_tensor(x * scalar, mt.uint8, wrapped(a * byte))
        if byte:
            assert_tensor(x // scalar, mt.uint8, a // byte)
            assert_tensor(x % scalar, mt.uint8, a % byte)
        assert_tensor(x < scalar, mt.bool, a < byte)
        assert_tensor(x == scalar, mt.bool, a == byte)
        assert_tensor(x + mt.tensor(scalar, device=device), mt.uint8, wrapped(a + byte))


def test_comparisons(device):
    x, y = u8(BYTES, device), u8(DIVISORS, device)
    a, b = BYTES, DIVISORS
    for name, reference in (("eq", np.equal), ("ne", np.not_equal), ("lt", np.less),
                            ("le", np.less_equal), ("gt", np.greater),
                            ("ge", np.greater_equal)):
        assert_tensor(getattr(mt, name)(x, y), mt.bool, reference(a, b))
        assert_tensor(getattr(x, name)(100), mt.bool, reference(a, 100))
    assert_tensor(mt.logical_and(x, y), mt.bool, (a != 0) & (b != 0))
    assert_tensor(x.logical_not(), mt.bool, a == 0)
    assert mt.equal(x, u8(BYTES, device)) and not mt.equal(x, y)


def test_where_and_clamp(device):
    x, y = u8(BYTES, device), u8(DIVISORS, device)
    keep = x > 128
    assert_tensor(mt.where(keep, x, y), mt.uint8, np.where(BYTES > 128, BYTES, DIVISORS))
    assert_tensor(mt.where(keep, x, 7), mt.uint8, np.where(BYTES > 128, BYTES, 7))
    assert_tensor(mt.where(keep, x, -1), mt.uint8, np.where(BYTES > 128, BYTES, 255))
    assert_tensor(mt.where(keep, x, 2.5), mt.float32, np.where(BYTES > 128, BYTES, 2.5))
    assert_tensor(x.clamp(2, 100), mt.uint8, np.clip(BYTES, 2, 100))
    assert_tensor(x.clamp(min=-1), mt.uint8, np.full(13, 255))     # -1 is the byte 255
    assert_tensor(x.clamp(max=y), mt.uint8, np.minimum(BYTES, DIVISORS))
    assert_tensor(x.clamp(max=1.5), mt.float32, np.minimum(BYTES, 1.5))
    with pytest.warns(UserWarning, match="where received a uint8 condition tensor"):
        chosen = mt.where(u8([1, 0, 2], device), 1, 2)
    assert_tensor(chosen, mt.int64, [1, 2, 1])


def test_broadcast_and_strided_operands(device):
    grid = u8(np.arange(240).reshape(12, 20) + 16, device)
    column = grid[:, 3:4]                     # a (12, 1) view with stride 20
    flipped = grid.t()[::2]                   # a transposed, stepped view
    reference = (np.arange(240).reshape(12, 20) + 16).astype(np.int64)
    assert_tensor(grid + column, mt.uint8, wrapped(reference + reference[:, 3:4]))
    assert_tensor(flipped * 3, mt.uint8, wrapped(reference.T[::2] * 3))
    assert_tensor(mt.maximum(flipped, 200), mt.uint8, np.maximum(reference.T[::2], 200))
    assert_tensor(-flipped, mt.uint8, wrapped(-reference.T[::2]))


def test_in_place_ops(device):
    x = u8([250, 3], device)
    x += 10
    assert_tensor(x, mt.uint8, [4, 13])
    x.mul_(64)
    assert_tensor(x, mt.uint8, [0, 64])
    x.add_(mt.tensor([300, 1], device=device))      # int64 operand, written back wrapped
    assert_tensor(x, mt.uint8, [44, 65])
    x.neg_()
    assert_tensor(x, mt.uint8, [212, 191])
    x.fill_(-1)
    assert_tensor(x, mt.uint8, [255, 255])
    x.copy_(mt.tensor([300.0, 2.5], device=device))
    assert_tensor(x, mt.uint8, [44, 2])
    x[1] = -2
    assert_tensor(x, mt.uint8, [44, 254])
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Byte"):
        x.add_(1.5)


# ---- reductions -------------------------------------------------------------------------------
def test_reductions(device):
    grid = np.array([[250, 3, 200], [0, 255, 7]], np.uint8)
    x, wide = u8(grid, device), grid.astype(np.int64)
    assert_tensor(x.sum(), mt.int64, wide.sum())
    assert_tensor(x.sum(1), mt.int64, wide.sum(1))
    assert_tensor(x.prod(1), mt.int64, wide.prod(1))
    assert_tensor(x.sum(dtype=mt.uint8), mt.uint8, wrapped(wide.sum()))
    assert_tensor(x.cumsum(1), mt.int64, wide.cumsum(1))
    assert_tensor(x.max(), mt.uint8, 255)
    assert_tensor(x.min(), mt.uint8, 0)
    assert_tensor(x.amax(0), mt.uint8, grid.max(0))
    assert_tensor(x.amin(1), mt.uint8, grid.min(1))
    assert_tensor(x.argmax(), mt.int64, grid.argmax())
    assert_tensor(x.argmin(1), mt.int64, grid.argmin(1))
    values, indices = x.max(1)
    assert_tensor(values, mt.uint8, grid.max(1))
    assert_tensor(indices, mt.int64, grid.argmax(1))
    values, indices = x.min(0, keepdim=True)
    assert_tensor(values, mt.uint8, grid.min(0, keepdims=True))
    assert_tensor(indices, mt.int64, grid.argmin(0)[None])
    assert_tensor(x.count_nonzero(), mt.int64, 5)
    assert_tensor(x.float().mean(), mt.float32, np.float32(wide.mean()))


def test_float_functions_promote(device):
    """exp, sqrt, sigmoid, ... of an integer tensor are computed in the default float dtype."""
    x = u8([0, 4, 255], device)
    assert_tensor(x.sqrt(), mt.float32, np.sqrt(np.float32([0, 4, 255])))
    exp = x.exp()
    assert exp.dtype == mt.float32 and exp[2].item() == float("inf")    # e**255 > float32 max
    np.testing.assert_allclose(exp[:2].cpu().numpy(), np.exp(np.float32([0, 4])), rtol=1e-6)
    assert x.sigmoid().dtype == mt.float32 and x.log().dtype == mt.float32


UNARY = {
    "neg": lambda m, x: -x, "abs": lambda m, x: m.abs(x), "sign": lambda m, x: x.sign(),
    "square": lambda m, x: x.square(), "floor": lambda m, x: x.floor(),
    "round": lambda m, x: x.round(), "relu": lambda m, x: m.relu(x),
    "exp": lambda m, x: x.exp(), "sqrt": lambda m, x: x.sqrt(),
    "logical_not": lambda m, x: x.logical_not(), "sum": lambda m, x: x.sum(0),
    "prod": lambda m, x: x.prod(), "amax": lambda m, x: x.amax(), "argmin": lambda m, x: x.argmin(),
    "cumsum": lambda m, x: x.cumsum(0), "pow2": lambda m, x: x ** 2,
    "clamp": lambda m, x: x.clamp(3, 200), "clamp_wrap": lambda m, x: x.clamp(min=-2),
}


@pytest.mark.parametrize("name", list(UNARY))
def test_unary_like_torch(device, name):
    torch = pytest.importorskip("torch")
    ours = UNARY[name](mt, mt.tensor(BYTES, device=device))
    assert_like_torch(ours, UNARY[name](torch, torch.tensor(BYTES)))


BINARY = {
    "add": lambda m, x, y: x + y, "sub": lambda m, x, y: x - y, "rsub": lambda m, x, y: y - x,
    "mul": lambda m, x, y: x * y, "truediv": lambda m, x, y: x / y,
    "floordiv": lambda m, x, y: x // y, "remainder": lambda m, x, y: x % y,
    "maximum": lambda m, x, y: m.maximum(x, y) if isinstance(y, m.Tensor) else x.clamp(min=y),
    "lt": lambda m, x, y: x < y, "ge": lambda m, x, y: x >= y, "eq": lambda m, x, y: x == y,
    "where": lambda m, x, y: m.where(x > 100, x, y),
}
_DIVIDING = {"truediv", "floordiv", "remainder"}
_SUBTRACTING = {"sub", "rsub"}


def _binary_operands():
    """Operand kinds for a uint8 tensor: uint8, int64 and float tensors (1-d and 0-d), Python
    ints that wrap (300, -7), floats and bools."""
    return {
        "uint8[]": lambda m: m.tensor(DIVISORS, dtype=m.uint8),
        "uint8[1]": lambda m: m.tensor([7], dtype=m.uint8),
        "int64[]": lambda m: m.tensor(DIVISORS.astype(np.int64) - 100),
        "int64()": lambda m: m.tensor(-1),
        "float32[]": lambda m: m.tensor(DIVISORS.astype(np.float32) / 4),
        "float64()": lambda m: m.tensor(2.5, dtype=m.float64),
        "bool[]": lambda m: m.tensor(DIVISORS % 2 == 1),
        "int300": lambda m: 300, "int-7": lambda m: -7, "float": lambda m: 1.5,
        "bool": lambda m: True,
    }


@pytest.mark.parametrize("other", list(_binary_operands()))
@pytest.mark.parametrize("name", list(BINARY))
def test_binary_like_torch(device, name, other):
    torch = pytest.importorskip("torch")
    make = _binary_operands()[other]
    if name in _DIVIDING and other.startswith("bool"):
        pytest.skip("False divides by zero")
    if name in _DIVIDING and other == "int64[]":
        pytest.skip("contains 0 after -100")
    if name in _SUBTRACTING and other.startswith("bool"):
        pytest.skip("covered by test_errors_like_torch")
    if name in ("where", "maximum") and other == "int300":
        pytest.skip("covered by test_errors_like_torch")
    ours_y, theirs_y = make(mt), make(torch)
    if isinstance(ours_y, mt.Tensor):
        ours_y = ours_y.to(device)
    ours = BINARY[name](mt, mt.tensor(BYTES, device=device), ours_y)
    assert_like_torch(ours, BINARY[name](torch, torch.tensor(BYTES), theirs_y))


# ---- errors -----------------------------------------------------------------------------------
ERRORS = {
    "mean": lambda m, x: x.mean(),
    "var": lambda m, x: x.var(),
    "std": lambda m, x: x.std(),
    "norm": lambda m, x: x.norm(),
    "lerp": lambda m, x: x.lerp(x, 0.5),
    "negative_power": lambda m, x: x ** -1,
    "sub_bool": lambda m, x: x - True,
    "rsub_bool_tensor": lambda m, x: m.tensor([True]) - x,
    "floordiv_zero": lambda m, x: x // 0,
    "remainder_zero": lambda m, x: x % m.zeros(1, dtype=m.uint8),
    "where_overflow": lambda m, x: m.where(x > 1, x, 700),
    "where_overflow_negative": lambda m, x: m.where(x > 1, -256, x),
    "clamp_overflow": lambda m, x: x.clamp(min=300),
    "full_overflow": lambda m, x: m.full((2,), 300, dtype=m.uint8),
    "full_float_overflow": lambda m, x: m.full((2,), -0.5, dtype=m.uint8),
    "full_nan": lambda m, x: m.full((2,), float("nan"), dtype=m.uint8),
    "tensor_overflow": lambda m, x: m.tensor([256], dtype=m.uint8),
    "tensor_negative_overflow": lambda m, x: m.tensor([1, -256], dtype=m.uint8),
    "tensor_float_overflow": lambda m, x: m.tensor([255.5], dtype=m.uint8),
    "fill_overflow": lambda m, x: x.clone().fill_(300),
    "alpha_float": lambda m, x: x.add(1, alpha=0.5),
    "inplace_float": lambda m, x: x.clone().div_(2),
    "requires_grad": lambda m, x: x.requires_grad_(),
    "tensor_requires_grad": lambda m, x: m.tensor([1], dtype=m.uint8, requires_grad=True),
    "mean_dtype": lambda m, x: x.mean(dtype=m.uint8),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_errors_like_torch(name):
    torch = pytest.importorskip("torch")
    with pytest.raises(Exception) as theirs:
        ERRORS[name](torch, torch.tensor(BYTES))
    with pytest.raises(Exception) as ours:
        ERRORS[name](mt, mt.tensor(BYTES))
    assert type(ours.value) is type(theirs.value)
    assert str(ours.value) == str(theirs.value).split("\n")[0]


def test_errors_without_torch(device):
    x = u8(BYTES, device)
    with pytest.raises(RuntimeError, match="mean\\(\\): could not infer output dtype. Input "
                                           "dtype must be either a floating point or complex "
                                           "dtype. Got: Byte"):
        x.mean()
    with pytest.raises(RuntimeError, match="value cannot be converted to type uint8_t without "
                                           "overflow"):
        mt.where(x > 1, x, 256)
    with pytest.raises(RuntimeError, match="value cannot be converted to type uint8 without "
                                           "overflow"):
        mt.tensor([float("nan")], dtype=mt.uint8)
    with pytest.raises(RuntimeError, match="Integers to negative integer powers"):
        x ** -2
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        x // 0


# ---- movement and indexing (byte-moving kernels shared with bool) ----------------------------
def test_views_and_copies(device):
    reference = (np.arange(60) * 5 % 256).astype(np.uint8).reshape(3, 4, 5)
    x = u8(reference, device)
    assert_tensor(x.view(12, 5), mt.uint8, reference.reshape(12, 5))
    assert_tensor(x.reshape(-1), mt.uint8, reference.reshape(-1))
    assert_tensor(x.permute(2, 0, 1), mt.uint8, reference.transpose(2, 0, 1))
    assert_tensor(x.permute(2, 0, 1).contiguous(), mt.uint8, reference.transpose(2, 0, 1))
    assert_tensor(x.transpose(0, 2).reshape(20, 3), mt.uint8,
                  reference.transpose(2, 1, 0).reshape(20, 3))
    assert_tensor(x[1], mt.uint8, reference[1])
    assert_tensor(x[:, 1:3, ::2], mt.uint8, reference[:, 1:3, ::2])
    assert_tensor(x[..., -1], mt.uint8, reference[..., -1])
    assert_tensor(x[x > 200], mt.uint8, reference[reference > 200])
    assert_tensor(x[mt.tensor([2, 0], device=device)], mt.uint8, reference[[2, 0]])
    assert_tensor(x.expand(2, 3, 4, 5), mt.uint8, np.broadcast_to(reference, (2, 3, 4, 5)))
    assert_tensor(x.flip(1), mt.uint8, reference[:, ::-1])
    assert_tensor(x.clone(), mt.uint8, reference)


def test_setitem(device):
    reference = np.zeros((3, 4), np.uint8)
    x = u8(reference, device)
    x[0] = 255
    x[1, 1:3] = u8([7, 8], device)
    x[2] = mt.tensor([256, -1, 300, 5], device=device)       # int64 source, wrapped
    x[:, 3] = -2
    reference[0] = 255
    reference[1, 1:3] = [7, 8]
    reference[2] = [0, 255, 44, 5]
    reference[:, 3] = 254
    assert_tensor(x, mt.uint8, reference)
    x[x == 255] = 9
    reference[reference == 255] = 9
    assert_tensor(x, mt.uint8, reference)


def test_cat_stack_and_index_kernels(device):
    a, b = u8([[1, 2], [3, 250]], device), u8([[255, 0], [7, 8]], device)
    na, nb = a.cpu().numpy(), b.cpu().numpy()
    assert_tensor(mt.cat([a, b]), mt.uint8, np.concatenate([na, nb]))
    assert_tensor(mt.cat([a, b], 1), mt.uint8, np.concatenate([na, nb], 1))
    assert_tensor(mt.stack([a, b], 2), mt.uint8, np.stack([na, nb], 2))
    assert_tensor(mt.cat([a, mt.tensor([[True, False]], device=device)]), mt.uint8,
                  np.concatenate([na, [[1, 0]]]))
    assert_tensor(mt.cat([a, mt.tensor([[1, 2]], device=device)]), mt.int64,
                  np.concatenate([na, [[1, 2]]]))
    index = mt.tensor([1, 0, 1], device=device)
    assert_tensor(a.index_select(0, index), mt.uint8, na[[1, 0, 1]])
    assert_tensor(a.index_select(1, index), mt.uint8, na[:, [1, 0, 1]])
    gather_index = mt.tensor([[1, 1], [0, 1]], device=device)
    assert_tensor(a.gather(1, gather_index), mt.uint8,
                  np.take_along_axis(na, gather_index.cpu().numpy(), 1))
    assert_tensor(a.scatter(1, gather_index, b), mt.uint8, [[1, 0], [7, 8]])


def test_accumulating_index_ops_wrap(device):
    """scatter_add / index_add add bytes modulo 256 (the shared byte kernels would or them)."""
    x = u8([250, 3, 0], device)
    sources = u8([10, 10], device)
    index = mt.tensor([0, 0], device=device)
    assert_tensor(x.scatter_add(0, index, sources), mt.uint8, [14, 3, 0])
    assert_tensor(x.index_add(0, index, sources), mt.uint8, [14, 3, 0])
    grid = mt.zeros(3, 4, dtype=mt.uint8, device=device)
    grid[:, 1].index_add_(0, mt.tensor([0, 2, 0], device=device), u8([200, 7, 100], device))
    expected = np.zeros((3, 4), np.uint8)
    expected[:, 1] = [44, 0, 7]
    assert_tensor(grid, mt.uint8, expected)


def test_no_warnings_on_plain_use(device):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x = u8(BYTES, device)
        (x + 1, x * x, x.sum(), x.max(), x.float() / 255, repr(x))


def test_index_put_accumulate_wraps_and_fills_check_overflow(device):
    """uint8 accumulation adds (modulo 256), never ors; fill-like writes of out-of-range
    scalars raise torch's overflow error instead of wrapping."""
    x = mt.tensor([250, 3, 7], dtype=mt.uint8, device=device)
    x.index_put_((mt.tensor([0, 0, 1], device=device),),
                 mt.tensor([5, 6, 1], dtype=mt.uint8, device=device), accumulate=True)
    assert x.cpu().tolist() == [5, 4, 7]
    x[1:] += mt.tensor([255, 1], dtype=mt.uint8, device=device)
    assert x.cpu().tolist() == [5, 3, 8]
    message = "value cannot be converted to type uint8_t without overflow"
    for write in (lambda t: t.__setitem__(0, 256), lambda t: t.fill_(256),
                  lambda t: t.masked_fill(mt.tensor([True, False, False], device=device), 300)):
        with pytest.raises(RuntimeError, match=message):
            write(x)
    assert x.cpu().tolist() == [5, 3, 8]


def test_bool_from_fractional_values_is_truth(device):
    assert mt.tensor([0.5, 0.0, -2.0, math.nan], dtype=mt.bool, device=device).cpu().tolist() == \
        [True, False, True, True]
    assert mt.full((2,), 0.5, dtype=mt.bool, device=device).cpu().tolist() == [True, True]


def test_all_any_of_uint8_are_uint8(device):
    """torch keeps uint8 for all/any of uint8 input (0 or 1); bool input stays bool."""
    x = mt.tensor([[0, 3], [2, 5]], dtype=mt.uint8, device=device)
    assert x.all().dtype is mt.uint8 and x.all().item() == 0
    assert x.any(1).cpu().tolist() == [1, 1] and x.any(1).dtype is mt.uint8
    assert x.all(dim=()).cpu().tolist() == [[0, 1], [1, 1]]
    assert mt.zeros(0, dtype=mt.uint8, device=device).all().item() == 1
    assert (x > 1).all().dtype is mt.bool
