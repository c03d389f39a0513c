"""Mixed precision on the CPU: the MNIST CNN of examples/train_mnist.py trained for one epoch in
float32 and under `mt.autocast("cpu")` (bfloat16 convolutions and linears) from the same
weights and batches, printing both test accuracies (the target: within 0.5 points) and the
epoch times.

    python bench/amp_mnist.py [--data-dir ../shared/data/mnist] [--epochs 1] [--threads N]
"""
import argparse
import os
import pathlib
import sys
import time

import minitorch as mt
import minitorch.nn.functional as F
from minitorch.utils.data import DataLoader

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "examples"))
from train_mnist import build_model, evaluate  # noqa: E402


def train(model, loader, autocast, epochs):
    optimizer = mt.optim.Adam(model.parameters(), lr=3e-3)
    start = time.perf_counter()
    for _ in range(epochs):
        model.train()
        for images, labels in loader:
            with mt.autocast("cpu", enabled=autocast):
                loss = F.cross_entropy(model(images), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=os.environ.get("MINITORCH_DATA"))
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    if args.threads:
        mt.set_num_threads(args.threads)
    train_set = mt.datasets.MNIST(args.data_dir, train=True)
    test_loader = DataLoader(mt.datasets.MNIST(args.data_dir, train=False), batch_size=1000)
    results = {}
    for name, autocast in (("float32", False), ("bfloat16 autocast", True)):
        mt.manual_seed(0)
        model = build_model("cnn")
        loader = DataLoader(train_set, batch_size=128, shuffle=True,
                            generator=mt.Generator().manual_seed(0))
        seconds = train(model, loader, autocast, args.epochs)
        _, accuracy = evaluate(model, test_loader, "cpu")
        results[name] = accuracy
        print(f"{name:18s} test accuracy {accuracy:.4f}  train {seconds:.1f} s", flush=True)
    gap = abs(results["float32"] - results["bfloat16 autocast"]) * 100
    print(f"accuracy gap {gap:.2f} points (target <= 0.5)")


if __name__ == "__main__":
    main()
