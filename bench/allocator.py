"""Page faults and step time of the MNIST CNN's training step on one fixed batch: minitorch with
its CPU buffer pool on and off (MINITORCH_CPU_CACHE), and torch, each in a fresh process (the
faults depend on what the process allocated and freed before: here nothing large).

Run: python bench/allocator.py [--threads 1 2] [--steps 20]
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np


def child(lib_name, threads, steps):
    lib = __import__(lib_name)
    lib.set_num_threads(threads)
    nn = lib.nn
    lib.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(1568, 10))
    opt = lib.optim.Adam(model.parameters(), lr=1e-3)
    rng = np.random.default_rng(0)
    x = lib.tensor(rng.random((128, 1, 28, 28), dtype=np.float32))
    y = lib.tensor(rng.integers(0, 10, 128))

    def step():
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    for _ in range(5):
        step()
    times = []
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(steps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
    print(json.dumps({"ms": float(np.median(times)) * 1e3, "faults": faults / steps}))


def measure(lib_name, threads, steps, pool):
    env = dict(os.environ, MINITORCH_CPU_CACHE=pool)
    done = subprocess.run([sys.executable, __file__, "--child", lib_name, str(threads),
                           str(steps)], env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]), int(args.child[2]))
        return
    try:
        import torch  # noqa: F401
        runs = [("minitorch", "1"), ("minitorch", "0"), ("torch", "1")]
    except ImportError:
        runs = [("minitorch", "1"), ("minitorch", "0")]
    print(f"MNIST CNN step, batch 128, Adam; median of {args.steps} steps after 5 warm-up")
    print(f"{'run':<26}{'threads':>8}{'ms/step':>10}{'faults/step':>13}{'ratio to torch':>16}")
    for threads in args.threads:
        results = {run: measure(run[0], threads, args.steps, run[1]) for run in runs}
        torch_ms = results.get(("torch", "1"), {}).get("ms")
        for (lib_name, pool), r in results.items():
            name = (lib_name if lib_name == "torch" else
                    f"minitorch, pool {'on' if pool == '1' else 'off'}")
            ratio = f"{r['ms'] / torch_ms:15.2f}x" if torch_ms else ""
            print(f"{name:<26}{threads:>8}{r['ms']:>10.2f}{r['faults']:>13.0f}{ratio}")


if __name__ == "__main__":
    main()
