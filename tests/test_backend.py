"""The kernel interface: both backends implement backend.KernelBackend with the same names and
parameter names; device strings parse like torch's."""
import inspect

import pytest

import minitorch as mt
from minitorch import _cpu
from minitorch.backend import KERNEL_NAMES, KernelBackend


def _parameters(fn):
    return [p for p in inspect.signature(fn).parameters if p != "self"]


def test_cpu_backend_satisfies_the_protocol():
    assert isinstance(_cpu, KernelBackend)
    for name in KERNEL_NAMES:
        assert _parameters(getattr(_cpu, name)) == _parameters(getattr(KernelBackend, name)), name


def test_gpu_backend_class_has_the_same_interface():
    from minitorch._gpu.backend import GpuBackend
    for name in KERNEL_NAMES:
        ours, protocol = getattr(GpuBackend, name), getattr(KernelBackend, name)
        assert _parameters(ours) == _parameters(protocol), name


@pytest.mark.parametrize("spec,text,index", [("cpu", "cpu", None), ("cuda", "cuda:0", 0),
                                             ("cuda:1", "cuda:1", 1)])
def test_device_parsing(spec, text, index):
    d = mt.device(spec)
    assert str(d) == text and d.index == index and d == mt.device(text)


def test_bad_device_strings():
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda device type"):
        mt.device("tpu")
    with pytest.raises(RuntimeError, match="Invalid device string"):
        mt.device("cuda:x")

