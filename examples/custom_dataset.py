"""A custom Dataset (PyTorch's protocol: __len__ and __getitem__), loaded by worker processes and
used to train a small model. The task: is a noisy 1-D signal a sine or a square wave?

    python examples/custom_dataset.py
"""
import math

import numpy as np

import minitorch as mt
import minitorch.nn as nn
import minitorch.nn.functional as F
from minitorch.utils.data import DataLoader, Dataset, random_split


def sorted_amplitudes(signal):
    """A shift-invariant view of a wave: its values in order (a square wave sits near ±1, a
    sine spreads between them), whatever the phase."""
    return np.sort(signal)


class WaveDataset(Dataset):
    """Noisy sine (label 0) or square (label 1) waves of random frequency and phase; each item
    is generated from its index, so every worker produces the same data."""

    def __init__(self, size=2000, length=64, noise=0.3, seed=0, transform=sorted_amplitudes):
        self.size, self.length, self.noise, self.seed = size, length, noise, seed
        self.transform = transform

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        if not 0 <= index < self.size:
            raise IndexError(f"index {index} is out of range for a dataset of {self.size}")
        rng = np.random.default_rng(self.seed * 1_000_003 + index)
        label = index % 2
        t = np.linspace(0, 1, self.length)
        wave = np.sin(2 * math.pi * rng.uniform(1, 4) * t + rng.uniform(0, 2 * math.pi))
        if label:
            wave = np.sign(wave)
        signal = wave + self.noise * rng.standard_normal(self.length)
        if self.transform is not None:
            signal = self.transform(signal)
        return mt.tensor(signal, dtype=mt.float32), label


def main(epochs=3, num_workers=2):
    mt.manual_seed(0)
    train_set, test_set = random_split(WaveDataset(), [0.8, 0.2],
                                       generator=mt.Generator().manual_seed(0))
    train_loader = DataLoader(train_set, batch_size=64, shuffle=True, num_workers=num_workers)
    test_loader = DataLoader(test_set, batch_size=200)
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 2))
    optimizer = mt.optim.Adam(model.parameters(), lr=1e-2)
    for epoch in range(1, epochs + 1):
        model.train()
        for signals, labels in train_loader:
            loss = F.cross_entropy(model(signals), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        model.eval()
        with mt.no_grad():
            correct = sum(int((model(x).argmax(1) == y).sum()) for x, y in test_loader)
        accuracy = correct / len(test_set)
        print(f"epoch {epoch}: last batch loss {loss.item():.4f}, test accuracy {accuracy:.3f}")
    return accuracy


if __name__ == "__main__":
    main()
