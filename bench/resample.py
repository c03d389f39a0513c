"""Linear interpolation (F.interpolate, bilinear / trilinear) forward + backward: minitorch's
one-kernel path against torch and against the composed path it replaced (a gather pair and a
weighted sum per axis), same shapes, one thread each.

Run: python bench/resample.py [--threads 1]
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import minitorch as mt                                  # noqa: E402
import minitorch.nn.functional as F                     # noqa: E402
from minitorch.functions.resample import linear_tables  # noqa: E402

CASES = [("bilinear x2 (8, 32, 32, 32)", (8, 32, 32, 32), {"scale_factor": 2.0,
                                                          "mode": "bilinear"}),
         ("bilinear to (50, 70) (4, 16, 40, 30)", (4, 16, 40, 30), {"size": (50, 70),
                                                                    "mode": "bilinear",
                                                                    "align_corners": True}),
         ("trilinear x2 (2, 8, 8, 16, 16)", (2, 8, 8, 16, 16), {"scale_factor": 2.0,
                                                               "mode": "trilinear"})]


def composed(x, kwargs):
    """The replaced path: per axis x[i0]·λ0 + x[i1]·λ1 as Tensor ops (index_select, mul, add)."""
    spatial = x.ndim - 2
    factor = kwargs.get("scale_factor")
    sizes = kwargs.get("size") or [int(s * factor) for s in x.shape[2:]]
    for axis in range(spatial):
        index, weights = linear_tables(x.shape[2 + axis], sizes[axis], factor,
                                       kwargs.get("align_corners", False), np.float32)
        shape = [1] * x.ndim
        shape[2 + axis] = -1
        low = x.index_select(2 + axis, mt.tensor(index[0::2]))
        high = x.index_select(2 + axis, mt.tensor(index[1::2]))
        x = low * mt.tensor(weights[0::2]).reshape(shape) + \
            high * mt.tensor(weights[1::2]).reshape(shape)
    return x


def best_of(fn, repeats=7, loops=10):
    fn()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(loops):
            fn()
        best = min(best, (time.perf_counter() - start) / loops)
    return best


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    mt.set_num_threads(args.threads)
    try:
        import torch
        torch.set_num_threads(args.threads)
    except ImportError:
        torch = None
    print(f"forward + backward, ms, {args.threads} thread(s)")
    print(f"{'case':<40} {'minitorch':>10} {'composed':>9} {'torch':>8} {'mt/torch':>9}")
    rng = np.random.default_rng(0)
    for name, shape, kwargs in CASES:
        data = rng.standard_normal(shape).astype(np.float32)
        x = mt.tensor(data, requires_grad=True)
        times = {"minitorch": best_of(lambda: F.interpolate(x, **kwargs).sum().backward()),
                 "composed": best_of(lambda: composed(x, kwargs).sum().backward())}
        if torch is not None:
            tx = torch.tensor(data, requires_grad=True)
            times["torch"] = best_of(
                lambda: torch.nn.functional.interpolate(tx, **kwargs).sum().backward())
        ratio = f"{times['minitorch'] / times['torch']:8.2f}x" if "torch" in times else "-"
        print(f"{name:<40} {times['minitorch'] * 1e3:10.3f} {times['composed'] * 1e3:9.3f} "
              f"{times.get('torch', float('nan')) * 1e3:8.3f} {ratio:>9}")


if __name__ == "__main__":
    main()
