"""Shared fixtures: the `device` fixture runs a test on the CPU and, when a GPU is usable, CUDA.

MINITORCH_TEST_CUDA=emulator makes "cuda" usable without a GPU: our CUDA kernels then run on the
CPU in tests/cuda_emulator (g++ needed), so every `device` test also runs the GPU backend.
"""
import os
import pathlib
import sys

import numpy as np
import pytest

if os.environ.get("MINITORCH_TEST_CUDA") == "emulator":
    import cuda_emulator
    sys.modules["cupy"] = cuda_emulator.cupy_module()

SHARED_MNIST = pathlib.Path(__file__).resolve().parents[1].parent / "shared" / "data" / "mnist"
if SHARED_MNIST.is_dir():
    os.environ.setdefault("MINITORCH_DATA", str(SHARED_MNIST))


def _cuda_available():
    try:
        import minitorch
        return minitorch.cuda.is_available()
    except (ImportError, AttributeError):
        return False


@pytest.fixture(params=["cpu", "cuda"])
def device(request):
    if request.param == "cuda" and not _cuda_available():
        pytest.skip("no CUDA device (CuPy and a GPU are needed)")
    return request.param


@pytest.fixture
def rng():
    return np.random.default_rng(0)
