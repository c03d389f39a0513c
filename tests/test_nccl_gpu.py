"""backend="nccl" on a real GPU, world size 1 (tests/distributed_scripts/nccl_gpu.py, in a
process of its own, bounded by a timeout). Without a GPU, CuPy or NCCL this skips, saying which;
tests/test_distributed.py checks the same calls through the CUDA emulator."""
import os
import pathlib
import subprocess
import sys

import pytest

import cuda_emulator

SCRIPTS = pathlib.Path(__file__).resolve().with_name("distributed_scripts")


def _real_gpu_with_nccl():
    if not cuda_emulator.real_gpu():
        pytest.skip("needs CuPy and a real GPU (the CUDA emulator has no NCCL)")
    try:
        from cupy.cuda import nccl
        nccl.get_version()
    except Exception as error:
        pytest.skip(f"CuPy cannot load NCCL here: {error}")


def test_nccl_world_size_one_on_a_real_gpu():
    _real_gpu_with_nccl()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        filter(None, [str(SCRIPTS.parents[1]), str(SCRIPTS), os.environ.get("PYTHONPATH")])))
    for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(name, None)
    done = subprocess.run([sys.executable, "nccl_gpu.py"], cwd=SCRIPTS, env=env, text=True,
                          capture_output=True, timeout=240)
    assert done.returncode == 0 and "ok" in done.stdout, f"{done.stdout}\n{done.stderr}"
