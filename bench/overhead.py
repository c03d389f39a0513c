"""Per-op overhead: minitorch vs PyTorch (when installed) on tiny tensors, in one run.

Times a 10-element add with and without requires_grad, forward+backward of a 3-op graph
((a * b).exp().sum()), a slice write and smooth_l1_loss recorded, and the small ops tiny-op programs are made of (comparisons, reductions
over an axis, gather, logsumexp, indexing, from_numpy, a Categorical's checks and log_prob:
docs/benchmarks.md, "Tiny-op programs"). Uses process CPU time (best of several repeats),
which other processes on a busy machine disturb far less than wall time.
Run: python bench/overhead.py
"""
import numpy as np
import os
import sys
import time
import timeit

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import try_import_torch  # noqa: E402

import minitorch as mt  # noqa: E402

torch = try_import_torch()


def cpu_time_per_call(fn, number):
    return min(timeit.repeat(fn, number=number, repeat=9, timer=time.process_time)) / number


def measure(lib):
    a, b = lib.randn(10), lib.randn(10)
    ag, bg = lib.randn(10, requires_grad=True), lib.randn(10, requires_grad=True)

    def graph():
        (ag * bg).exp().sum().backward()

    def slice_write():
        f = lib.zeros(10)
        f[1:] = rows

    rows = ag[1:] * 2.0
    cases = {"add (10 elements)": (lambda: a + b, 20000),
             "add, requires_grad": (lambda: ag + bg, 20000),
             "3-op graph fwd+bwd": (graph, 2000),
             "zeros; f[1:] = v (grad)": (slice_write, 20000),
             "smooth_l1_loss (grad)": (lambda: lib.nn.functional.smooth_l1_loss(ag, b), 10000)}
    cases.update(small_ops(lib))
    return {name: cpu_time_per_call(fn, number) for name, (fn, number) in cases.items()}


def small_ops(lib):
    """(callable, calls) per case: the ops of torch.distributions' checks, RL and physics loops
    on 3-12 element tensors, nothing recorded (the scalar, broadcast and where rows are what
    backward rules run: sqrt's g / (out * 2), a broadcast operand's sum_to, clamp's masks)."""
    p = lib.tensor([0.2, 0.3, 0.5])
    m = lib.tensor(np.arange(12, dtype=np.float32).reshape(4, 3) / 12)
    mask, idx, host = p >= 0, lib.zeros(4, 1, dtype=lib.int64), np.ones(4, np.float32)
    column, upper = m[:, :1], m > 0.5
    categorical = lib.distributions.Categorical(p)
    action = lib.tensor(1)
    return {"p >= 0": (lambda: p >= 0, 20000),
            "p.sum(-1)": (lambda: p.sum(-1), 20000),
            "mask.all(-1)": (lambda: mask.all(-1), 20000),
            "mask & mask": (lambda: mask & mask, 20000),
            "m.gather(-1, idx)": (lambda: m.gather(-1, idx), 20000),
            "m.logsumexp(-1)": (lambda: m.logsumexp(-1, keepdim=True), 10000),
            "m.reshape(-1, 3)": (lambda: m.reshape(-1, 3), 20000),
            "m.t()": (lambda: m.t(), 20000),
            "m * 2.0": (lambda: m * 2.0, 20000),
            "m * column (bcast)": (lambda: m * column, 20000),
            "where(upper, m, column)": (lambda: lib.where(upper, m, column), 20000),
            "p[0].item()": (lambda: p[0].item(), 20000),
            "from_numpy": (lambda: lib.from_numpy(host), 20000),
            "Categorical(p)": (lambda: lib.distributions.Categorical(p), 5000),
            "Categorical.log_prob": (lambda: categorical.log_prob(action), 5000)}


def main():
    libs = {"minitorch": mt}
    if torch is not None:
        torch.set_num_threads(1)
        libs["torch"] = torch
    else:
        print("(PyTorch not installed: minitorch figures only)")
    results = {name: measure(lib) for name, lib in libs.items()}
    print(f"{'case':<24}" + "".join(f"{name:>14}" for name in libs) +
          ("   minitorch/torch" if torch else ""))
    for case in results["minitorch"]:
        row = f"{case:<24}" + "".join(f"{results[n][case] * 1e6:>12.2f}us" for n in libs)
        if torch:
            row += f"   {results['minitorch'][case] / results['torch'][case]:>10.2f}x"
        print(row)


if __name__ == "__main__":
    main()
