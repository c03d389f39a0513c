"""Every CUDA module compiles: nvcc builds exactly the text the GPU backend hands to NVRTC (opcode
prelude + common.cuh + module) with every template instance the backend may request, for sm_90.
So a syntax or type error in a kernel fails here, on machines without a GPU (skips without nvcc).
Where a GPU is present, CuPy's NVRTC compiles every instance too.
"""
import concurrent.futures
import os
import shutil
import subprocess

import pytest

from minitorch._gpu import launch

NVCC = shutil.which("nvcc")
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc is not on PATH")


def instantiating_source(module):
    """The module's NVRTC text plus a table taking the address of every requested instance,
    which makes nvcc instantiate and compile each (as NVRTC's name expressions do)."""
    names = [name for key in launch.module_keys(module)
             for name in launch.name_expressions(module, key)]
    table = ",\n".join(f"    (void*)&{name}" for name in names)
    return launch.module_source(module) + f"\nvoid* minitorch_instances[] = {{\n{table}\n}};\n"


def compile_module(module, directory):
    path = os.path.join(directory, f"{module}.cu")
    with open(path, "w") as f:
        f.write(instantiating_source(module))
    result = subprocess.run([NVCC, "-std=c++17", "-arch=sm_90", "-c", path, "-o",
                             os.path.join(directory, f"{module}.o")],
                            capture_output=True, text=True, timeout=600)
    return module, result.returncode, result.stdout + result.stderr


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """Compile all modules once, in parallel (the slowest takes a few CPU seconds)."""
    directory = str(tmp_path_factory.mktemp("cuda"))
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        results = pool.map(lambda m: compile_module(m, directory), launch.MODULES)
        return {module: (code, log) for module, code, log in results}


@needs_nvcc
@pytest.mark.parametrize("module", launch.MODULES)
def test_module_compiles_for_sm90(compiled, module):
    code, log = compiled[module]
    assert code == 0, f"nvcc failed on {module}.cu:\n{log}"
    warnings = [line for line in log.splitlines() if "warning" in line]
    assert not warnings, f"nvcc warned on {module}.cu:\n{log}"


LAYOUT_MAIN = r"""
#include <cstdio>
#include <cstddef>
template <int N, int D> void show() {
    typedef Geometry<N, D> G;
    std::printf("%d %d %zu %zu %zu %zu %zu\n", N, D, sizeof(G), offsetof(G, size),
                offsetof(G, magic), offsetof(G, shift), offsetof(G, stride));
}
int main() {
    show<1, 8>(); show<2, 8>(); show<3, 8>(); show<1, 64>(); show<2, 64>(); show<3, 64>();
    return 0;
}
"""


@needs_nvcc
def test_geometry_layout_matches_host_packing(tmp_path):
    """The by-value Geometry struct, as nvcc lays it out, has the byte layout that
    launch.pack_geometry writes (a host program: runs without a GPU)."""
    source = tmp_path / "layout.cu"
    source.write_text(launch.opcode_prelude() + (launch.KERNEL_DIR / "common.cuh").read_text()
                      + LAYOUT_MAIN)
    binary = tmp_path / "layout"
    subprocess.run([NVCC, "-std=c++17", str(source), "-o", str(binary)], check=True,
                   capture_output=True, timeout=300)
    lines = subprocess.run([str(binary)], check=True, capture_output=True, text=True).stdout
    for line in lines.split("\n")[:-1]:
        nargs, dims, size, at_size, at_magic, at_shift, at_stride = map(int, line.split())
        packed = launch.pack_geometry((2,), [(1,)] * nargs, dims)
        assert size == packed.dtype.itemsize
        assert (at_size, at_magic, at_shift, at_stride) == (8, 8 + 8 * dims, 8 + 16 * dims,
                                                            8 + 24 * dims)


def test_every_module_has_a_source_file():
    for module in launch.MODULES:
        assert (launch.KERNEL_DIR / f"{module}.cu").is_file()
    assert (launch.KERNEL_DIR / "common.cuh").is_file()


def _cuda_available():
    import minitorch
    return minitorch.cuda.is_available()


@pytest.mark.skipif(not _cuda_available(), reason="no CUDA device (CuPy and a GPU are needed)")
@pytest.mark.parametrize("module", launch.MODULES)
def test_nvrtc_compiles_every_instance(module):
    """The runtime path: CuPy's NVRTC compiles each (module, key) group and finds every name."""
    import cupy
    for key in launch.module_keys(module):
        names = launch.name_expressions(module, key)
        compiled = cupy.RawModule(code=launch.module_source(module), options=("-std=c++17",),
                                  name_expressions=names)
        for name in names:
            assert compiled.get_function(name) is not None
