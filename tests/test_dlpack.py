"""DLPack both ways: our tensors into numpy, torch (and CuPy on a GPU) and back, without copies
(a write through one side shows through the other), with torch's refusals.

The CUDA side needs real CuPy: the test emulator (MINITORCH_TEST_CUDA=emulator) has no
cupy.ndarray or cupy.from_dlpack, so those tests skip there and are owed on a GPU machine.
"""
import numpy as np
import pytest

import minitorch as mt

import cuda_emulator

VIEWS = {"contiguous": lambda t: t, "transposed": lambda t: t.T, "sliced": lambda t: t[1:, ::2],
         "expanded": lambda t: t[:1].expand(3, 4), "scalar": lambda t: t[1, 2]}


def _base():
    return mt.arange(12.0).reshape(3, 4)


@pytest.mark.parametrize("view", list(VIEWS))
def test_numpy_reads_our_memory(view):
    base = _base()
    t = VIEWS[view](base)
    array = np.from_dlpack(t)
    assert array.shape == tuple(t.shape) and array.tolist() == t.tolist()
    base.add_(100)                       # written through us, seen by numpy
    assert array.tolist() == t.tolist()


def test_numpy_writes_show_in_the_tensor():
    t = _base()
    np.from_dlpack(t)[0, 0] = -5.0
    assert t[0, 0].item() == -5.0


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "uint8", "bool"])
def test_dtypes_cross_as_themselves(dtype):
    t = mt.tensor([1, 0, 1], dtype=getattr(mt, dtype))
    array = np.from_dlpack(t)
    assert array.dtype == np.dtype(dtype)
    back = mt.from_dlpack(array)
    assert back.dtype is t.dtype and back.tolist() == t.tolist()


def test_from_dlpack_shares_numpy_memory():
    array = np.arange(12.0).reshape(3, 4)[:, 1:]
    t = mt.from_dlpack(array)
    t[0, 0] = 99.0
    assert array[0, 0] == 99.0 and t.stride() == (4, 1)


def test_from_dlpack_copy_keyword():
    array = np.zeros(3)
    mt.from_dlpack(array, copy=True)[0] = 1.0
    assert array[0] == 0.0


def test_from_dlpack_of_a_tensor_is_the_same_memory():
    t = _base()
    assert mt.from_dlpack(t).data_ptr() == t.data_ptr()


def test_dlpack_device():
    assert mt.ones(2).__dlpack_device__() == (1, 0)


def test_a_tensor_that_requires_grad_is_refused():
    with pytest.raises(BufferError, match=r"^Can't export tensors that require gradient, use "
                                          r"tensor.detach\(\)$"):
        mt.ones(2, requires_grad=True).__dlpack__()
    np.from_dlpack(mt.ones(2, requires_grad=True).detach())


# ---- capsules (torch.utils.dlpack) -------------------------------------------------------------
@pytest.mark.parametrize("view", list(VIEWS))
def test_capsules_share_memory_and_are_consumed_once(view):
    from minitorch.utils.dlpack import DLDeviceType, from_dlpack, to_dlpack
    base = _base()
    t = VIEWS[view](base)
    capsule = to_dlpack(t)
    shared = from_dlpack(capsule)
    assert shared.tolist() == t.tolist() and shared.stride() == t.stride()
    assert shared.data_ptr() == t.data_ptr()
    if t.ndim and view != "expanded":          # numpy marks it read-only; torch does not
        shared[(0,) * t.ndim] = -1.0
        assert t[(0,) * t.ndim].item() == -1.0
    with pytest.raises(RuntimeError, match="DLTensor capsules can be consumed only once"):
        from_dlpack(capsule)
    assert mt.from_dlpack(to_dlpack(mt.tensor([True, False]))).tolist() == [True, False]
    assert DLDeviceType.kDLCUDA == 2


# ---- torch ------------------------------------------------------------------------------------
@pytest.fixture
def torch():
    return pytest.importorskip("torch", reason="exchanges with torch")


@pytest.mark.parametrize("view", list(VIEWS))
def test_torch_shares_our_memory(torch, view):
    base = _base()
    t = VIEWS[view](base)
    theirs = torch.from_dlpack(t)
    assert theirs.tolist() == t.tolist() and theirs.stride() == t.stride()
    assert theirs.data_ptr() == t.data_ptr()


def test_we_share_torch_memory(torch):
    source = torch.arange(12.0).reshape(3, 4)[:, 1:]
    t = mt.from_dlpack(source)
    t[0, 0] = 42.0
    assert source[0, 0].item() == 42.0 and t.stride() == source.stride()
    flags = mt.from_dlpack(torch.tensor([True, False]))
    assert flags.dtype is mt.bool and flags.tolist() == [True, False]


def test_capsules_cross_with_torch(torch):
    from minitorch.utils.dlpack import from_dlpack, to_dlpack
    source = torch.arange(12.0).reshape(3, 4).t()
    ours = from_dlpack(torch.utils.dlpack.to_dlpack(source))
    ours[1, 2] = 42.0
    assert source[1, 2].item() == 42.0 and ours.stride() == source.stride()
    base = _base()
    theirs = torch.utils.dlpack.from_dlpack(to_dlpack(base))
    theirs[0, 0] = 7.0
    assert base[0, 0].item() == 7.0


def test_torch_refuses_ours_like_its_own(torch):
    with pytest.raises(BufferError) as theirs:
        torch.from_dlpack(torch.ones(2, requires_grad=True))
    with pytest.raises(BufferError) as ours:
        torch.from_dlpack(mt.ones(2, requires_grad=True))
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("data", [[[1.0, 2.0], [3.0, 4.0]], 3.0, [True, False], [7, 8]])
@pytest.mark.parametrize("convert", ["tensor", "as_tensor"])
def test_torch_constructors_take_our_tensors(torch, data, convert):
    """torch.tensor(t) used to fail with `len() of a 0-d tensor` (it fell back to the sequence
    protocol); it now reads t through DLPack."""
    t = mt.tensor(data)
    theirs = getattr(torch, convert)(t)
    assert theirs.tolist() == t.tolist() and str(theirs.dtype) == str(t.dtype).replace(
        "minitorch", "torch")


# ---- CUDA (CuPy) ------------------------------------------------------------------------------
def _cupy():
    if not cuda_emulator.real_gpu():
        pytest.skip("needs CuPy and a real GPU (the CUDA emulator has no DLPack)")
    import cupy
    return cupy


def test_cupy_and_cuda_tensors_share_memory():
    cupy = _cupy()
    base = mt.arange(12.0, device="cuda").reshape(3, 4)
    assert base.__dlpack_device__() == (2, 0)
    theirs = cupy.from_dlpack(base.T[1:])
    assert theirs.get().tolist() == base.T[1:].cpu().tolist()
    theirs[0, 0] = -1.0
    assert base[0, 1].item() == -1.0
    source = cupy.arange(6, dtype=cupy.float64).reshape(2, 3)[:, 1:]
    t = mt.from_dlpack(source)
    t[0, 0] = 42.0
    assert t.device.type == "cuda" and source[0, 0].item() == 42.0
    flags = mt.from_dlpack(cupy.asarray([True, False]))
    assert flags.dtype is mt.bool and flags.tolist() == [True, False]
    assert cupy.from_dlpack(mt.tensor([True, False], device="cuda")).dtype == cupy.bool_


def test_torch_and_our_cuda_tensors_share_memory(torch):
    _cupy()
    if not torch.cuda.is_available():
        pytest.skip("the installed torch has no CUDA")
    base = mt.arange(12.0, device="cuda").reshape(3, 4)
    theirs = torch.from_dlpack(base.T)
    assert theirs.device.type == "cuda" and theirs.stride() == base.T.stride()
    assert theirs.data_ptr() == base.T.data_ptr() and theirs.tolist() == base.T.tolist()
    theirs[0, 1] = -1.0
    assert base[1, 0].item() == -1.0
    source = torch.arange(6.0, dtype=torch.float64, device="cuda").reshape(2, 3)[:, 1:]
    t = mt.from_dlpack(source)
    assert t.device.type == "cuda" and t.dtype is mt.float64 and t.stride() == source.stride()
    t[0, 0] = 42.0
    assert source[0, 0].item() == 42.0
    assert mt.from_dlpack(torch.tensor([True, False], device="cuda")).tolist() == [True, False]
