"""PyTorch scripts run unchanged on minitorch: a tutorial-style training script
(tests/alias_scripts/tutorial_train.py) runs end to end in a subprocess where `import torch`
is minitorch (tests/alias_scripts/torch_shim.py copied in as torch.py), and, where torch is
installed, under torch itself, so the script is known to be real PyTorch code."""
import os
import pathlib
import re
import runpy
import shutil
import subprocess
import sys

import pytest

SCRIPTS = pathlib.Path(__file__).resolve().parent / "alias_scripts"
ROOT = SCRIPTS.parents[1]
TIMEOUT_S = 120


def _alias_dir(tmp_path):
    """A directory holding torch.py, the torch -> minitorch shim."""
    shim = tmp_path / "shim"
    shim.mkdir()
    shutil.copy(SCRIPTS / "torch_shim.py", shim / "torch.py")
    return shim


def _run(args, tmp_path, python_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(p) for p in python_path)}
    return subprocess.run([sys.executable, *args], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=TIMEOUT_S)


def _final_line(result):
    assert result.returncode == 0, result.stderr[-3000:]
    match = re.search(r"final accuracy ([\d.]+) reloaded ([\d.]+) counts ndarray \[([\d, ]+)\]",
                      result.stdout)
    assert match, result.stdout[-2000:]
    return float(match[1]), float(match[2]), [int(c) for c in match[3].split(",")]


def test_shim_gives_one_module_per_name(tmp_path):
    code = "\n".join([
        "import torch, minitorch",
        "import torch.nn as nn, torch.nn.functional as F, torch.optim as optim",
        "import torch.backends.cudnn as cudnn, torch.onnx, torch.nn.parallel",
        "import torch.utils.checkpoint",
        "from torch.utils.data import DataLoader",
        "assert torch is minitorch and nn is minitorch.nn and F is minitorch.nn.functional",
        "assert cudnn is minitorch.backends.cudnn and DataLoader is "
        "minitorch.utils.data.DataLoader",
        "assert torch.utils.checkpoint is minitorch.utils.checkpoint",
        "assert minitorch.utils.checkpoint.__spec__.name == 'minitorch.utils.checkpoint'",
        "cudnn.benchmark = True",
        "print('ok', torch.randint(10, (3,)).shape)",
    ])
    result = _run(["-c", code], tmp_path, [_alias_dir(tmp_path), ROOT])
    assert result.returncode == 0, result.stderr[-3000:]
    assert "ok torch.Size([3])" in result.stdout


def test_tutorial_script_trains_under_the_alias(tmp_path):
    result = _run([SCRIPTS / "tutorial_train.py", "--save-dir", tmp_path, "--epochs", "2"],
                  tmp_path, [_alias_dir(tmp_path), ROOT])
    accuracy, reloaded, counts = _final_line(result)
    assert "torch module: minitorch" in result.stdout
    assert accuracy >= 0.9 and reloaded == accuracy and sum(counts) == 512
    assert (tmp_path / "blobs_model.pt").exists()


def test_tutorial_script_trains_with_autocast_and_grad_scaler(tmp_path):
    result = _run([SCRIPTS / "tutorial_train.py", "--save-dir", tmp_path, "--epochs", "2",
                   "--amp"], tmp_path, [_alias_dir(tmp_path), ROOT])
    accuracy, reloaded, counts = _final_line(result)
    assert accuracy >= 0.9 and reloaded == accuracy and sum(counts) == 512


@pytest.mark.parametrize("extra", [[], ["--amp"]], ids=["fp32", "amp"])
def test_tutorial_script_is_real_pytorch(tmp_path, capsys, monkeypatch, extra):
    """Run in this process (torch is imported once for the whole suite, not per subprocess)."""
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(sys, "argv", ["tutorial_train.py", "--save-dir", str(tmp_path),
                                      "--epochs", "1", "--no-accel", *extra])
    monkeypatch.setattr(torch.backends.cudnn, "benchmark", torch.backends.cudnn.benchmark)
    threads = torch.get_num_threads()
    try:
        runpy.run_path(str(SCRIPTS / "tutorial_train.py"), run_name="__main__")
    finally:
        torch.set_num_threads(threads)
    out = capsys.readouterr().out
    accuracy, reloaded, counts = _final_line(subprocess.CompletedProcess([], 0, out, ""))
    assert "torch module: torch" in out and reloaded == accuracy and sum(counts) == 512
