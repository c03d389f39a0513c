"""Per-op overhead: minitorch vs PyTorch (when installed) on tiny tensors, in one run.

Times a 10-element add with and without requires_grad, and forward+backward of a 3-op graph
((a * b).exp().sum()). Uses process CPU time (best of several repeats), which other processes
on a busy machine disturb far less than wall time. Run: python bench/overhead.py
"""
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

    return {"add (10 elements)": cpu_time_per_call(lambda: a + b, 20000),
            "add, requires_grad": cpu_time_per_call(lambda: ag + bg, 20000),
            "3-op graph fwd+bwd": cpu_time_per_call(graph, 2000)}


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
