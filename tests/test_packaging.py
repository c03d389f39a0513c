"""The sdist and the wheel built from it are complete: every kernel source ships, and an install
from the sdist into a fresh venv (with the oldest numpy pyproject allows) imports and trains.

The fast test (always on, ~3 s) builds only the sdist and lists its files. The slow one installs
that sdist in a fresh venv: pip downloads setuptools/Cython/numpy and compiles every Cython
kernel, several minutes on CI's 2 cores and it needs the network, so it runs only with
MINITORCH_TEST_PACKAGING=1 (MINITORCH_TEST_NUMPY=x.y.z picks the runtime numpy; the default is
the floor in pyproject.toml, so the floor stays a version that was really tested).
"""
import os
import pathlib
import re
import subprocess
import sys
import tarfile
import zipfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
KERNEL_SOURCES = ("*.pyx", "*.pxd", "*.cu", "*.cuh", "*.h")
GENERATED = {"minitorch/_cpu/opcodes.pxd"}    # setup.py writes it from minitorch/opcodes.py

TRAIN_STEP = """
import minitorch as mt, numpy as np
mt.manual_seed(0)
model = mt.nn.Sequential(mt.nn.Conv2d(1, 4, 3), mt.nn.ReLU(), mt.nn.Flatten(),
                         mt.nn.Linear(4 * 6 * 6, 3))
opt = mt.optim.Adam(model.parameters(), lr=0.01)
x, y = mt.randn(8, 1, 8, 8), mt.randint(0, 3, (8,))
losses = []
for _ in range(5):
    opt.zero_grad()
    loss = mt.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    losses.append(loss.item())
assert losses[-1] < losses[0], losses
print(mt.__file__, np.__version__, losses[0], losses[-1])
"""


def tracked_kernel_sources():
    """Every kernel source of the tree, as sdist-relative paths (generated ones left out)."""
    found = {str(p.relative_to(ROOT)) for pattern in KERNEL_SOURCES
             for p in (ROOT / "minitorch").rglob(pattern)}
    return found - GENERATED


def build_sdist(out_dir):
    pytest.importorskip("build", reason="`pip install build` to build the sdist")
    subprocess.run([sys.executable, "-m", "build", "--sdist", "--no-isolation", "-o",
                    str(out_dir), str(ROOT)], check=True, capture_output=True, timeout=300)
    (sdist,) = pathlib.Path(out_dir).glob("minitorch-*.tar.gz")
    return sdist


def test_sdist_carries_every_kernel_source(tmp_path):
    sdist = build_sdist(tmp_path)
    with tarfile.open(sdist) as tar:
        names = {name.split("/", 1)[1] for name in tar.getnames() if "/" in name}
    missing = tracked_kernel_sources() - names
    assert not missing, f"sdist lacks {sorted(missing)}"
    for needed in ("setup.py", "pyproject.toml", "minitorch/opcodes.py", "minitorch/py.typed",
                   "minitorch/distributed/openmpi_allreduce.rules"):
        assert needed in names
    stale = [n for n in names if n.endswith((".so", ".c")) or n in GENERATED]
    assert not stale, f"sdist ships build outputs {stale}"


def numpy_floor():
    text = (ROOT / "pyproject.toml").read_text()
    deps = re.search(r'^dependencies = \[(.*)\]', text, re.M).group(1)
    return re.search(r'"numpy>=([\d.]+)"', deps).group(1)


@pytest.mark.skipif(os.environ.get("MINITORCH_TEST_PACKAGING") != "1",
                    reason="slow (a full Cython build): set MINITORCH_TEST_PACKAGING=1")
@pytest.mark.timeout(1800)
def test_sdist_installs_and_trains_in_a_fresh_venv(tmp_path):
    sdist = build_sdist(tmp_path / "sdist")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip, python = str(venv / "bin" / "pip"), str(venv / "bin" / "python")
    numpy = os.environ.get("MINITORCH_TEST_NUMPY", numpy_floor())
    subprocess.run([pip, "install", "-q", f"numpy=={numpy}"], check=True)
    wheels = tmp_path / "wheels"
    log = subprocess.run([pip, "wheel", "-v", "--no-deps", "-w", str(wheels), str(sdist)],
                         check=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True).stdout
    assert "minitorch: portable kernels" in log and "-march=native" not in log, log[-3000:]     # a wheel may run on another machine
    (wheel,) = wheels.glob("minitorch-*.whl")
    assert not wheel.name.endswith("-none-any.whl"), wheel.name
    with zipfile.ZipFile(wheel) as whl:
        names = whl.namelist()
    built = {n.split("/")[-1].split(".")[0] for n in names if n.startswith("minitorch/_cpu/")
             and n.endswith(".so")}
    pyx = {p.stem for p in (ROOT / "minitorch" / "_cpu").glob("*.pyx")}
    assert built == pyx, f"wheel lacks {sorted(pyx - built)}"
    assert "minitorch/py.typed" in names and "minitorch/_kernels/special_math.h" in names
    assert "minitorch/distributed/openmpi_allreduce.rules" in names     # read by Open MPI
    subprocess.run([pip, "install", "-q", "--no-deps", str(wheel)], check=True)
    # Run outside the repository so `import minitorch` cannot find the source tree.
    out = subprocess.run([python, "-c", TRAIN_STEP], cwd=tmp_path, check=True,
                         capture_output=True, text=True).stdout
    assert str(venv) in out and re.search(rf" {re.escape(numpy)}(\.0)* ", out), out


def test_setup_fails_loudly_without_kernel_sources(tmp_path):
    """An sdist that lost its .pyx files must not build an empty, importable-looking package."""
    (tmp_path / "minitorch").mkdir()
    for name in ("setup.py", "pyproject.toml", "minitorch/opcodes.py"):
        (tmp_path / name).write_text((ROOT / name).read_text())
    done = subprocess.run([sys.executable, "setup.py", "-q", "egg_info"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "no kernel sources" in done.stderr
