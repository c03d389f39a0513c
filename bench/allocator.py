"""Page faults and step time of the MNIST CNN's (and MLP's) training step on one fixed batch:
minitorch with its CPU buffer pool on and off (MINITORCH_CPU_CACHE), and torch, each in a fresh
process (the faults depend on what the process allocated and freed before: here nothing large,
so glibc's mmap threshold is still its default 128 KB).

Run: python bench/allocator.py [--models cnn mlp] [--threads 1 2] [--steps 20]
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np


def child(lib_name, threads, steps, kind):
    lib = __import__(lib_name)
    lib.set_num_threads(threads)
    nn = lib.nn
    lib.manual_seed(0)
    if kind == "cnn":
        model = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Flatten(), nn.Linear(1568, 10))
        opt = lib.optim.Adam(model.parameters(), lr=1e-3)
    else:       # bench/mnist.py's MLP: its (128, 256) float32 activations are 128 KB each
        model = nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
        opt = lib.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    if kind == "cnn":
        rng = np.random.default_rng(0)
        x = lib.tensor(rng.random((128, 1, 28, 28), dtype=np.float32))
        y = lib.tensor(rng.integers(0, 10, 128))
    else:       # drawn by the library, as bench/distributed.py does: no large numpy temporary
        x, y = lib.randn(128, 1, 28, 28), lib.randint(0, 10, (128,))

    def step():
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    for _ in range(5 if kind == "cnn" else 30):
        step()
    times = []
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(steps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
    print(json.dumps({"ms": float(np.median(times)) * 1e3, "faults": faults / steps}))


def measure(lib_name, threads, steps, pool, kind):
    # OMP_NUM_THREADS as a launcher sets it (torchrun, minitorch.distributed.run): it decides
    # what the OpenMP runtime maps and frees at start-up, hence glibc's thresholds
    env = dict(os.environ, MINITORCH_CPU_CACHE=pool, OMP_NUM_THREADS=str(threads))
    done = subprocess.run([sys.executable, __file__, "--child", lib_name, str(threads),
                           str(steps), kind], env=env, capture_output=True, text=True,
                          check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--models", nargs="+", default=["cnn"], choices=["cnn", "mlp"])
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]), int(args.child[2]), args.child[3])
        return
    try:
        import torch  # noqa: F401
        runs = [("minitorch", "1"), ("minitorch", "0"), ("torch", "1")]
    except ImportError:
        runs = [("minitorch", "1"), ("minitorch", "0")]
    for kind in args.models:
        print(f"MNIST {kind.upper()} step, batch 128; median of {args.steps} steps after warm-up")
        print(f"{'run':<26}{'threads':>8}{'ms/step':>10}{'faults/step':>13}"
              f"{'ratio to torch':>16}")
        for threads in args.threads:
            results = {run: measure(run[0], threads, args.steps, run[1], kind) for run in runs}
            torch_ms = results.get(("torch", "1"), {}).get("ms")
            for (lib_name, pool), r in results.items():
                name = (lib_name if lib_name == "torch" else
                        f"minitorch, pool {'on' if pool == '1' else 'off'}")
                ratio = f"{r['ms'] / torch_ms:15.2f}x" if torch_ms else ""
                print(f"{name:<26}{threads:>8}{r['ms']:>10.2f}{r['faults']:>13.0f}{ratio}")


if __name__ == "__main__":
    main()
