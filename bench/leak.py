"""Memory stays flat while training: RSS and live autograd nodes over N MLP steps (default 2000).

Run: python bench/leak.py [steps]
"""
import gc
import resource
import sys

import numpy as np

import minitorch as mt
import minitorch.nn as nn
import minitorch.nn.functional as F
from minitorch.autograd import Function


def live_nodes():
    return sum(1 for obj in gc.get_objects() if isinstance(obj, Function))


def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


def main(steps=2000):
    mt.manual_seed(0)
    rng = np.random.default_rng(0)
    x = mt.tensor(rng.random((4096, 784), dtype=np.float32))
    y = mt.tensor(rng.integers(0, 10, 4096))
    model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
    optimizer = mt.optim.Adam(model.parameters(), lr=1e-3)
    checkpoints = []
    for step in range(1, steps + 1):
        index = mt.tensor(rng.integers(0, 4096, 128))
        loss = F.cross_entropy(model(x[index]), y[index])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % (steps // 5) == 0:
            checkpoints.append((step, rss_mb(), live_nodes()))
    print(f"{'step':>6} {'RSS MB':>8} {'live nodes':>11}")
    for step, rss, nodes in checkpoints:
        print(f"{step:>6} {rss:>8.1f} {nodes:>11}")
    return checkpoints


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000)
