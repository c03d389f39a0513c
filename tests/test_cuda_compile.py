"""minitorch/_gpu/compile.py: kernel modules are compiled with IEEE float32 subnormals (CuPy's
RawModule forces -ftz=true), cached on disk, and their template instances found by lowered
name. A fake NVRTC binding checks the options, the cache and the name lookup; where CuPy's real
NVRTC binding is installed (no GPU needed to compile), the PTX is checked for flushed ops."""
import types

import pytest

from minitorch._gpu import compile as K
from minitorch._gpu import launch


class FakeNVRTC:
    class NVRTCError(Exception):
        pass

    def __init__(self):
        self.compiles, self.options = 0, None

    def getVersion(self):
        return (13, 0)

    def createProgram(self, source, name, headers, include_names):
        return {"names": []}

    def addNameExpression(self, program, name):
        program["names"].append(name)

    def compileProgram(self, program, options):
        self.compiles += 1
        self.options = options

    def getLoweredName(self, program, name):
        return "_Z_" + name.replace("<", "_").replace(">", "")

    def getCUBIN(self, program):
        return b"cubin"

    def destroyProgram(self, program):
        pass


class FakeModule:
    def __init__(self, path):
        self.path = path

    def get_function(self, name):
        return name


def fake_cupy(nvrtc):
    return types.SimpleNamespace(cuda=types.SimpleNamespace(nvrtc=nvrtc),
                                 RawModule=lambda path: FakeModule(path))


def test_compiles_without_flush_caches_and_finds_lowered_names(tmp_path, monkeypatch):
    monkeypatch.setenv("MINITORCH_CUDA_CACHE", str(tmp_path))
    nvrtc = FakeNVRTC()
    device = types.SimpleNamespace(compute_capability="90")
    names = ["k<float>", "k<double>"]
    module = K.load_module(fake_cupy(nvrtc), "source", names, device)
    assert "--ftz=false" in nvrtc.options and "-ftz=true" not in nvrtc.options
    assert "--gpu-architecture=sm_90" in nvrtc.options
    assert module.get_function("k<float>") == "_Z_k_float"
    again = K.load_module(fake_cupy(nvrtc), "source", names, device)
    assert nvrtc.compiles == 1 and again.get_function("k<double>") == "_Z_k_double"
    K.load_module(fake_cupy(nvrtc), "other source", names, device)
    assert nvrtc.compiles == 2


def test_a_cupy_without_the_binding_uses_raw_module():
    calls = []
    cupy = types.SimpleNamespace(cuda=types.SimpleNamespace(),
                                 RawModule=lambda **kw: calls.append(kw) or "raw")
    assert K.load_module(cupy, "src", ["k<float>"], None) == "raw"
    assert calls[0]["name_expressions"] == ["k<float>"]


def test_real_nvrtc_emits_no_flushing_arithmetic():
    nvrtc = pytest.importorskip("cupy_backends.cuda.libs.nvrtc",
                                reason="CuPy's NVRTC binding is not installed")
    source = launch.module_source("strided")
    names = launch.name_expressions("strided", "float32")
    program = nvrtc.createProgram(source, "strided.cu", (), ())
    for name in names:
        nvrtc.addNameExpression(program, name)
    nvrtc.compileProgram(program, K.OPTIONS + ("--gpu-architecture=compute_90",))
    ptx = nvrtc.getPTX(program)
    ptx = ptx.decode() if isinstance(ptx, bytes) else ptx
    nvrtc.destroyProgram(program)
    assert ".ftz" not in ptx


def test_a_failing_binding_falls_back_to_raw_module_with_a_warning(tmp_path, monkeypatch):
    """An NVRTC binding that differs from the one compile.py was written for (here: a lowered
    name the module does not have) must not take every kernel down: RawModule compiles it."""
    monkeypatch.setenv("MINITORCH_CUDA_CACHE", str(tmp_path))

    class Missing(FakeModule):
        def get_function(self, name):
            raise KeyError(name)

    calls = []

    def raw_module(path=None, **kwargs):
        if path is not None:
            return Missing(path)
        calls.append(kwargs)
        return "raw"
    cupy = types.SimpleNamespace(cuda=types.SimpleNamespace(nvrtc=FakeNVRTC()),
                                 RawModule=raw_module)
    device = types.SimpleNamespace(compute_capability="90")
    with pytest.warns(RuntimeWarning, match="flushes float32 subnormals"):
        assert K.load_module(cupy, "src", ["k<float>"], device) == "raw"
    assert calls[0]["name_expressions"] == ["k<float>"]
