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


# ---- tests that pin torch's exact wording or behaviour ------------------------------------------
# `@pytest.mark.torch_exact` marks a test that compares reprs, messages or corner-case behaviour
# with the installed torch word for word. Ours follow torch 2.13 (this machine's); a GPU machine
# may have an older torch that words or does some of these differently. There, a failure of such
# a test is reported as a skip naming the version, instead of a failure; torch 2.13 checks all.
PINNED_TORCH = (2, 13)


def _torch_version():
    try:
        import torch
    except ImportError:
        return None
    return tuple(int(part) for part in torch.__version__.split(".")[:2])


def pytest_configure(config):
    config.addinivalue_line("markers", "torch_exact: compares with torch 2.13's exact wording or "
                                       "behaviour (a skip, not a failure, on another torch)")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when != "call" or not report.failed or item.get_closest_marker("torch_exact") is None:
        return
    version = _torch_version()
    if version is None or version == PINNED_TORCH:
        return
    import torch
    lines = str(call.excinfo.value).splitlines() if call.excinfo else []
    message = (lines[0] if lines else type(call.excinfo.value).__name__)[:200] \
        if call.excinfo else ""
    report.outcome = "skipped"
    report.longrepr = (str(item.path), item.location[1] or 0,
                       f"Skipped: pins torch {PINNED_TORCH[0]}.{PINNED_TORCH[1]}'s exact wording "
                       f"or behaviour; torch {torch.__version__} differs here ({message})")
