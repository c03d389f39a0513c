"""Compiling a kernel module with IEEE float32 semantics (subnormals kept), as torch's kernels.

CuPy's RawModule appends `-ftz=true` to every NVRTC compile after the caller's options
(cupy/cuda/compiler.py, `_compile_with_cache_cuda`; a later `--ftz=false` cannot undo it), so a
float32 subnormal is flushed to zero wherever it appears: results (`x * 1e-30`), inputs
(`ndtri(1e-40)` read as `ndtri(0)`) and conversions. torch keeps them. So the modules are
compiled here with CuPy's NVRTC binding and our own options, to a cubin cached on disk by the
hash of everything that shapes it, and loaded with `RawModule(path=...)`; kernels are looked up
by the lowered (mangled) names NVRTC gives their template instances.

A CuPy without the binding (the test emulator, which has no flush to model) gets RawModule's
own compile, and so does one whose binding fails us (with a warning).
"""
import hashlib
import json
import os
import pathlib
import tempfile
import warnings

OPTIONS = ("-std=c++17", "--ftz=false", "--prec-div=true", "--prec-sqrt=true",
           "--device-as-default-execution-space")


def cache_dir():
    """Where compiled modules are kept: $MINITORCH_CUDA_CACHE, else ~/.cache/minitorch/cuda."""
    return pathlib.Path(os.environ.get("MINITORCH_CUDA_CACHE") or
                        pathlib.Path.home() / ".cache" / "minitorch" / "cuda")


class CompiledModule:
    """A loaded module whose kernels are asked for by their name expressions."""

    def __init__(self, module, lowered):
        self.module, self.lowered = module, lowered

    def get_function(self, name):
        return self.module.get_function(self.lowered[name])


def load_module(cupy, source, names, device):
    """The module of `source` with the template instances `names`, compiled for `device` (a
    cupy.cuda.Device) without flushing float32 subnormals. CuPy's RawModule when its NVRTC
    binding is missing, or (with a warning) when using the binding fails: a CuPy or NVRTC whose
    binding, options or module loading differ from the ones this was written for should still
    run, flushing subnormals, rather than fail every kernel (a source error fails there too,
    with RawModule's own log)."""
    nvrtc = getattr(getattr(cupy, "cuda", None), "nvrtc", None)
    if nvrtc is None or not hasattr(nvrtc, "getLoweredName"):
        return _raw_module(cupy, source, names)
    try:
        module = _load_compiled(cupy, nvrtc, source, names, device)
        for name in names:          # resolve every instance now, while falling back is possible
            module.get_function(name)
        return module
    except Exception as error:      # noqa: BLE001  (any failure of the binding path)
        warnings.warn(f"minitorch: compiling through CuPy's NVRTC binding failed ({error!r}); "
                      "using CuPy's RawModule, which flushes float32 subnormals to zero",
                      RuntimeWarning, stacklevel=2)
        return _raw_module(cupy, source, names)


def _raw_module(cupy, source, names):
    return cupy.RawModule(code=source, options=("-std=c++17",), name_expressions=names)


def _load_compiled(cupy, nvrtc, source, names, device):
    """The module through the binding: the cubin from the cache, or compiled and stored."""
    arch = f"sm_{device.compute_capability}"
    key = hashlib.sha256(json.dumps([source, OPTIONS, list(names), arch,
                                     list(nvrtc.getVersion())]).encode()).hexdigest()
    directory = cache_dir()
    cubin_path, names_path = directory / f"{key}.cubin", directory / f"{key}.json"
    try:
        lowered = json.loads(names_path.read_text())
        if not cubin_path.exists() or set(lowered) != set(names):
            raise FileNotFoundError(cubin_path)
    except (OSError, ValueError):
        cubin, lowered = compile_cubin(nvrtc, source, names, arch)
        _store(directory, cubin_path, cubin, names_path, json.dumps(lowered))
    return CompiledModule(cupy.RawModule(path=str(cubin_path)), lowered)


def compile_cubin(nvrtc, source, names, arch):
    """(cubin bytes, {name expression: lowered name}) from NVRTC with OPTIONS for `arch`."""
    program = nvrtc.createProgram(source, "minitorch.cu", (), ())
    try:
        for name in names:
            nvrtc.addNameExpression(program, name)
        try:
            nvrtc.compileProgram(program, OPTIONS + (f"--gpu-architecture={arch}",))
        except nvrtc.NVRTCError as error:
            raise RuntimeError(f"NVRTC could not compile a minitorch kernel module:\n"
                               f"{nvrtc.getProgramLog(program)}") from error
        lowered = {name: nvrtc.getLoweredName(program, name) for name in names}
        return nvrtc.getCUBIN(program), lowered
    finally:
        nvrtc.destroyProgram(program)


def _store(directory, cubin_path, cubin, names_path, names_text):
    """Write both files through temporary names and renames, so that a concurrent reader (the
    test workers compile the same modules) sees a whole file or none."""
    directory.mkdir(parents=True, exist_ok=True)
    for path, data in ((cubin_path, cubin), (names_path, names_text.encode())):
        with tempfile.NamedTemporaryFile(dir=directory, delete=False) as handle:
            handle.write(data)
        os.replace(handle.name, path)
