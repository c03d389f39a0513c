"""The set-up surface training scripts touch before any math: mt.accelerator, mt.backends'
flags, deterministic mode, mt.onnx, serialization's safe_globals, Tensor.is_xpu & co., the
legacy typed constructors, `size=` on creation functions, randint's two forms and Python
sequences (range) as indices; compared with torch where it is installed."""
import numpy as np
import pytest

import minitorch as mt

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")


def _outcome(fn):
    """('ok', value) or (exception type name, None): what a call does, comparable across libs."""
    try:
        return "ok", fn()
    except Exception as error:      # noqa: BLE001 - the type is what is compared
        return type(error).__name__, None


# ---- mt.accelerator -------------------------------------------------------------------------
def test_accelerator_answers_for_the_cuda_backend():
    assert mt.accelerator.is_available() == mt.cuda.is_available()
    assert mt.accelerator.device_count() == mt.cuda.device_count()
    if mt.cuda.is_available():
        assert mt.accelerator.current_accelerator() == mt.device("cuda")
        assert mt.accelerator.current_device_index() == mt.cuda.current_device()
        mt.accelerator.synchronize()
        with mt.accelerator.device_index(0):
            assert mt.accelerator.current_device_index() == 0
    else:
        assert mt.accelerator.current_accelerator() is None
        assert mt.accelerator.current_accelerator(check_available=True) is None
        for call in (mt.accelerator.current_device_index, mt.accelerator.synchronize,
                     lambda: mt.accelerator.set_device_index(0)):
            with pytest.raises(RuntimeError, match="Cannot access accelerator device when none "
                                                   "is available"):
                call()
        with mt.accelerator.device_index(None):     # None changes nothing, needs no device
            pass


def test_accelerator_device_selection_idiom_picks_a_usable_device():
    device = (mt.accelerator.current_accelerator().type if mt.accelerator.is_available()
              else "cpu")
    assert mt.ones(2, device=device).device.type == device


# ---- mt.backends ----------------------------------------------------------------------------
def test_cudnn_flags_are_stored_and_validated():
    import minitorch.backends.cudnn as cudnn
    saved = cudnn.benchmark, cudnn.deterministic
    try:
        cudnn.benchmark = True
        cudnn.deterministic = True
        assert mt.backends.cudnn.benchmark is True and cudnn.deterministic is True
        with pytest.raises(RuntimeError, match="set_benchmark_cudnn expects a bool, but got int"):
            cudnn.benchmark = 1
        assert cudnn.benchmark is True          # a refused value changes nothing
        with cudnn.flags(enabled=False, benchmark=False):
            assert cudnn.enabled is False and cudnn.benchmark is False
        assert cudnn.enabled is True and cudnn.benchmark is True
    finally:
        cudnn.benchmark, cudnn.deterministic = saved
    assert cudnn.is_available() is False and cudnn.version() is None


def test_matmul_allow_tf32_is_tied_to_float32_matmul_precision():
    matmul = mt.backends.cuda.matmul
    try:
        matmul.allow_tf32 = True
        assert mt.get_float32_matmul_precision() == "high"
        mt.set_float32_matmul_precision("highest")
        assert matmul.allow_tf32 is False
        with pytest.raises(RuntimeError, match="expects a bool"):
            matmul.allow_tf32 = 1
        with pytest.raises(AttributeError, match="Unknown attribute foo"):
            matmul.foo = True
    finally:
        mt.set_float32_matmul_precision("highest")


def test_tf32_changes_no_result():
    a, b = mt.randn(33, 17, dtype=mt.float32), mt.randn(17, 9, dtype=mt.float32)
    before = (a @ b).numpy()
    mt.backends.cuda.matmul.allow_tf32 = True
    try:
        np.testing.assert_array_equal((a @ b).numpy(), before)
    finally:
        mt.backends.cuda.matmul.allow_tf32 = False


@needs_torch
def test_backends_answers_match_a_cpu_torch():
    assert mt.backends.mps.is_available() is torch.backends.mps.is_available() is False
    assert mt.backends.mkldnn.enabled is True and mt.backends.openmp.is_available() is True
    assert isinstance(mt.backends.cpu.get_cpu_capability(), str)
    for name in ("benchmark", "deterministic", "enabled", "allow_tf32"):
        assert getattr(mt.backends.cudnn, name) == getattr(torch.backends.cudnn, name), name
    assert mt.backends.cuda.matmul.allow_tf32 == torch.backends.cuda.matmul.allow_tf32


def test_sdp_switches_are_stored_and_validated():
    cuda = mt.backends.cuda
    assert cuda.flash_sdp_enabled() and cuda.math_sdp_enabled()
    try:
        cuda.enable_flash_sdp(False)
        assert cuda.flash_sdp_enabled() is False and cuda.mem_efficient_sdp_enabled() is True
        with pytest.raises(RuntimeError, match="expects a bool, but got int"):
            cuda.enable_math_sdp(1)
    finally:
        cuda.enable_flash_sdp(True)
    if torch is not None:
        assert cuda.cudnn_sdp_enabled() == torch.backends.cuda.cudnn_sdp_enabled()


def test_deterministic_algorithms_switch():
    assert mt.are_deterministic_algorithms_enabled() is False
    try:
        mt.use_deterministic_algorithms(True, warn_only=True)
        assert mt.are_deterministic_algorithms_enabled() is True
        assert mt.is_deterministic_algorithms_warn_only_enabled() is True
        with pytest.raises(TypeError, match="must be bool, not int"):
            mt.use_deterministic_algorithms(1)
        assert mt.are_deterministic_algorithms_enabled() is True
    finally:
        mt.use_deterministic_algorithms(False)
    assert not mt.is_deterministic_algorithms_warn_only_enabled()


# ---- onnx, serialization's allow-list -------------------------------------------------------
def test_onnx_export_says_it_is_not_supported():
    import minitorch.onnx
    with pytest.raises(NotImplementedError, match="ONNX export is not supported"):
        minitorch.onnx.export(mt.nn.Linear(2, 2), (mt.ones(1, 2),), "model.onnx")


def test_safe_globals_are_accepted_and_kept():
    ser = mt.serialization
    ser.clear_safe_globals()
    with ser.safe_globals([dict, (list, "builtins.list")]):
        assert ser.get_safe_globals() == [dict, (list, "builtins.list")]
    assert ser.get_safe_globals() == []
    ser.add_safe_globals([dict])
    assert ser.get_safe_globals() == [dict]
    ser.clear_safe_globals()
    with pytest.raises(TypeError, match="not iterable"):
        ser.add_safe_globals(dict)


# ---- Tensor properties ----------------------------------------------------------------------
PROPERTIES = ["is_xpu", "is_mps", "is_meta", "is_sparse", "is_sparse_csr", "is_quantized",
              "is_mkldnn", "is_vulkan", "is_ipu", "is_maia", "is_mtia", "is_nested", "is_xla"]


@pytest.mark.parametrize("name", PROPERTIES)
def test_absent_device_and_layout_properties_are_false(name, device):
    assert getattr(mt.zeros(1, device=device), name) is False
    if torch is not None and hasattr(torch.zeros(1), name):
        assert getattr(torch.zeros(1), name) is False


# ---- legacy typed constructors --------------------------------------------------------------
LEGACY = [
    ("FloatTensor", lambda L: L(np.ones((2, 2), np.int32))),
    ("FloatTensor", lambda L: L(2, 3).shape),
    ("FloatTensor", lambda L: L((2, 3))),
    ("FloatTensor", lambda L: L([2, 3])),
    ("FloatTensor", lambda L: L()),
    ("LongTensor", lambda L: L(np.array([1, 2]))),
    ("LongTensor", lambda L: L(np.array([1.7, -2.2]))),
    ("DoubleTensor", lambda L: L([[1, 2], [3, 4]])),
    ("BoolTensor", lambda L: L([1, 0, 2])),
    ("ByteTensor", lambda L: L([1, 255])),
    ("ByteTensor", lambda L: L([1, 300])),
    ("FloatTensor", lambda L: L(2, 3.0)),
    ("FloatTensor", lambda L: L(-1)),
]


@needs_torch
@pytest.mark.parametrize("name,make", LEGACY)
def test_legacy_constructors_match_torch(name, make):
    status, ours = _outcome(lambda: make(getattr(mt, name)))
    expected_status, theirs = _outcome(lambda: make(getattr(torch, name)))
    assert status == expected_status
    if status != "ok":
        return
    if isinstance(theirs, torch.Size):
        assert tuple(ours) == tuple(theirs)
        return
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_legacy_constructors_types_and_aliases():
    t = mt.FloatTensor(mt.Size([2, 3]))
    assert type(t) is mt.Tensor and t.shape == (2, 3) and t.dtype is mt.float32
    assert isinstance(t, mt.FloatTensor) and not isinstance(t, mt.DoubleTensor)
    assert isinstance(mt.zeros(2, dtype=mt.int64), mt.LongTensor)
    assert not issubclass(mt.FloatTensor, mt.Tensor)
    assert mt.FloatTensor.dtype is mt.float32 and mt.FloatTensor.is_cuda is False
    source = mt.ones(3)
    alias = mt.FloatTensor(source)
    alias[0] = 5.0
    assert source[0].item() == 5.0                # same memory, as torch's alias
    with pytest.raises(TypeError, match="dtype"):
        mt.FloatTensor(mt.tensor([1, 2]))
    assert mt.zeros(2).type() == "torch.FloatTensor"
    assert mt.zeros(2).type(mt.DoubleTensor).dtype is mt.float64


@pytest.mark.parametrize("name,dtype", [("IntTensor", "int32"), ("HalfTensor", "float16"),
                                        ("ShortTensor", "int16"), ("CharTensor", "int8"),
                                        ("BFloat16Tensor", "bfloat16")])
def test_legacy_constructors_of_the_narrow_dtypes(name, dtype):
    t = getattr(mt, name)([1, 2])
    assert t.dtype is getattr(mt, dtype) and t.tolist() == [1, 2]
    assert isinstance(t, getattr(mt, name)) and not isinstance(mt.zeros(1), getattr(mt, name))


# ---- size= and randint's forms --------------------------------------------------------------
SIZE_CALLS = [
    lambda L: L.empty(size=(2, 3)).shape,
    lambda L: L.zeros(size=[2, 3]).shape,
    lambda L: L.ones(size=(2,)).shape,
    lambda L: L.rand(size=(2, 3)).shape,
    lambda L: L.randn(size=(4,)).shape,
    lambda L: L.full(size=(2, 3), fill_value=1.5).shape,
    lambda L: L.zeros(1).new_zeros(size=(2, 3)).shape,
    lambda L: L.zeros(1).new_ones(size=(2, 3)).shape,
    lambda L: L.zeros(1).new_empty(size=(2, 3)).shape,
    lambda L: L.zeros(1).new_full(size=(2, 3), fill_value=2).shape,
    lambda L: L.empty((2, 3), size=(2, 3)),
    lambda L: L.zeros(1).new_zeros(2, size=(3,)),
    lambda L: L.empty(sizes=(2, 3)),
    lambda L: L.zeros(size=3),
    lambda L: L.randint(10, (3,)).shape,
    lambda L: L.randint(10, size=(3,)).shape,
    lambda L: L.randint(2, 10, (3,)).shape,
    lambda L: L.randint(low=2, high=10, size=(3,)).shape,
    lambda L: L.randint(high=10, size=(3,)).shape,
    lambda L: L.randint(2, high=10, size=(3,)).shape,
    lambda L: L.randint(10),
    lambda L: L.randint(2, 10),
    lambda L: L.randint(10, 3),
    lambda L: L.randint(2, 10, 3),
    lambda L: L.randint(1.5, (3,)),
    lambda L: L.randint(low=2, size=(3,)),
    lambda L: L.randint(10, 1, (3,)),
    lambda L: L.randint(10, (3,), foo=1),
    lambda L: str(L.randint(10, (3,)).dtype).split(".")[-1],
    lambda L: str(L.randint(10, (3,), dtype=L.float64).dtype).split(".")[-1],
]


@needs_torch
@pytest.mark.parametrize("call", range(len(SIZE_CALLS)))
def test_size_keyword_and_randint_forms_match_torch(call):
    status, ours = _outcome(lambda: SIZE_CALLS[call](mt))
    expected_status, theirs = _outcome(lambda: SIZE_CALLS[call](torch))
    assert status == expected_status
    if status == "ok" and not isinstance(theirs, torch.Tensor):
        assert (tuple(ours) if isinstance(theirs, torch.Size) else ours) == \
            (tuple(theirs) if isinstance(theirs, torch.Size) else theirs)


def test_randint_values_lie_in_range_and_follow_the_seed():
    mt.manual_seed(3)
    a = mt.randint(5, 9, (1000,))
    assert a.min().item() >= 5 and a.max().item() <= 8
    mt.manual_seed(3)
    assert mt.equal(mt.randint(5, 9, size=(1000,)), a)
    b = mt.randint_like(a, 3)
    assert b.max().item() <= 2 and b.dtype is mt.int64


# ---- Python sequences as indices ------------------------------------------------------------
KEYS = [
    lambda L: range(2),
    lambda L: (range(2), L.tensor([0, 1])),
    lambda L: (slice(None), range(1, 3)),
    lambda L: (0, range(2)),
    lambda L: range(0),
    lambda L: range(2, -1, -2),
    lambda L: (range(2), range(1, 3)),
    lambda L: (Ellipsis, range(3)),
]


@needs_torch
@pytest.mark.parametrize("key", range(len(KEYS)))
def test_range_indices_get_and_set_as_torch(key, device):
    base = np.arange(12.0).reshape(3, 4)
    ours, theirs = mt.tensor(base, device=device), torch.tensor(base)
    np.testing.assert_array_equal(ours[KEYS[key](mt)].cpu().numpy(),
                                  theirs[KEYS[key](torch)].numpy())
    ours[KEYS[key](mt)] = -1.0
    theirs[KEYS[key](torch)] = -1.0
    np.testing.assert_array_equal(ours.cpu().numpy(), theirs.numpy())


def test_range_index_gradient(device):
    x = mt.tensor(np.arange(12.0).reshape(3, 4), device=device, requires_grad=True)
    x[range(2), mt.tensor([0, 3], device=device)].sum().backward()
    expected = np.zeros((3, 4))
    expected[[0, 1], [0, 3]] = 1
    np.testing.assert_array_equal(x.grad.cpu().numpy(), expected)
