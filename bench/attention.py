"""scaled_dot_product_attention forward + backward at 1 thread, float32: minitorch's fused node,
minitorch's composed path (matmul, softmax, matmul: what F.scaled_dot_product_attention ran
before the fused kernels) and torch's F.scaled_dot_product_attention, timed in alternation
(best of 7). Prints milliseconds per forward+backward and each ratio to torch (lower = faster).

  python bench/attention.py
  python bench/attention.py --forward-only
"""
import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
if not os.environ.get("PYTHONPATH"):
    sys.path.insert(0, os.path.dirname(HERE))   # this checkout, unless PYTHONPATH names one

import minitorch as mt  # noqa: E402
from common import best_times, try_import_torch  # noqa: E402
from minitorch.nn.functional.attention import composed_attention  # noqa: E402

SHAPES = [(8, 4, 64, 16), (16, 6, 128, 64)]      # (batch, heads, length, head dim)


def contenders(shape, causal, forward_only, torch):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(shape).astype(np.float32) for _ in range(4)]
    ours = [mt.tensor(a, requires_grad=True) for a in arrays[:3]]
    grad = mt.tensor(arrays[3])

    def step(attention, q, k, v, g):
        def run():
            out = attention(q, k, v, is_causal=causal)
            if not forward_only:
                out.backward(g)
        return run
    runs = {"fused": step(mt.nn.functional.scaled_dot_product_attention, *ours, grad),
            "composed": step(composed_attention, *ours, grad)}
    if torch is not None:
        theirs = [torch.tensor(a, requires_grad=True) for a in arrays[:3]]
        runs["torch"] = step(torch.nn.functional.scaled_dot_product_attention, *theirs,
                             torch.tensor(arrays[3]))
    return runs


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--forward-only", action="store_true")
    args = parser.parse_args()
    torch = try_import_torch()
    mt.set_num_threads(1)
    if torch is not None:
        torch.set_num_threads(1)
    what = "forward" if args.forward_only else "forward+backward"
    print(f"scaled_dot_product_attention {what}, float32, 1 thread, ms (best of 7)")
    for shape in SHAPES:
        for causal in (False, True):
            times = best_times(contenders(shape, causal, args.forward_only, torch))
            label = f"B,H,L,E={shape} causal={causal}"
            parts = "  ".join(f"{name} {t * 1e3:7.3f}" for name, t in times.items())
            ratios = ""
            if "torch" in times:
                ratios = "  ".join(f"{name}/torch {times[name] / times['torch']:.2f}x"
                                   for name in times if name != "torch")
            print(f"{label:<38}{parts}   {ratios}", flush=True)


if __name__ == "__main__":
    main()
