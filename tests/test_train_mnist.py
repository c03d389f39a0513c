"""End to end: the MLP learns real MNIST, and examples/train_mnist.py runs and saves its outputs."""
import importlib.util
import os
import pathlib

import pytest

import minitorch as mt
import minitorch.nn as nn
import minitorch.nn.functional as F
from minitorch.utils.data import DataLoader, Subset

ROOT = pathlib.Path(__file__).resolve().parents[1]
needs_mnist = pytest.mark.skipif(
    not os.environ.get("MINITORCH_DATA") or not pathlib.Path(os.environ["MINITORCH_DATA"]).is_dir(),
    reason="real MNIST not found (tests/conftest.py points MINITORCH_DATA at ../shared/data/mnist)")


@pytest.fixture(scope="module")
def mnist():
    return mt.datasets.MNIST(train=True), mt.datasets.MNIST(train=False)


@needs_mnist
def test_mlp_learns_real_mnist(mnist, device):
    train, test = mnist
    mt.manual_seed(0)
    # 12000 images: with 6000 this MLP plateaus at 0.90 +- 0.005 over seeds, right at the bar;
    # with 12000 it reaches 0.92 for every seed tried (0-7)
    loader = DataLoader(Subset(train, range(12000)), batch_size=64, shuffle=True,
                        generator=mt.Generator().manual_seed(0))
    model = nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(),
                          nn.Linear(128, 10)).to(device)
    optimizer = mt.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for _ in range(3):
        for images, labels in loader:
            loss = F.cross_entropy(model(images.to(device)), labels.to(device))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    held_out = DataLoader(Subset(test, range(3000)), batch_size=1000)
    correct = 0
    with mt.no_grad():
        for images, labels in held_out:
            predictions = model(images.to(device)).argmax(1).cpu()
            correct += int((predictions == labels).sum().item())
    assert correct / 3000 > 0.90


def _load_example():
    spec = importlib.util.spec_from_file_location("train_mnist", ROOT / "examples" /
                                                  "train_mnist.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@needs_mnist
def test_example_script_trains_and_saves(tmp_path):
    example = _load_example()
    history = example.main(["--model", "cnn", "--device", "cpu", "--epochs", "1", "--limit",
                            "512", "--batch-size", "64", "--out-dir", str(tmp_path)])
    assert len(history["test_acc"]) == 1 and 0.0 <= history["test_acc"][0] <= 1.0
    checkpoint = tmp_path / "mnist_cnn.safetensors"
    state = mt.load(checkpoint)
    model = example.build_model("cnn")
    model.load_state_dict(state)
