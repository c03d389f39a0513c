"""Convolution shapes benchmark: every conv2d / conv_transpose2d shape of bench/workloads.py's
style_net and dcgan, plus three shapes from issue 15, forward and forward + backward, float32,
1 thread, minitorch against torch. Prints milliseconds per call and the ratio minitorch / torch
(lower = minitorch faster; 1.00x = parity), and the median ratio.
Run: python bench/conv_shapes.py [--filter TEXT]
"""
import argparse
import os
import statistics
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import best_times, try_import_torch  # noqa: E402

import minitorch as mt  # noqa: E402

torch = try_import_torch()

# (label, transposed, input shape, weight shape, stride, padding, bias, input needs grad).
# style_net pads with ReflectionPad2d before each conv (padding 0 here, the padded size in);
# a first layer's input needs no gradient.
CASES = [
    ("issue Conv2d(32,3,9,p4) 4x32x32", False, (4, 32, 32, 32), (3, 32, 9, 9), 1, 4, True, True),
    ("issue Conv2d(1,64,5) 32x28x28", False, (32, 1, 28, 28), (64, 1, 5, 5), 1, 0, True, False),
    ("issue Conv2d(64,64,3,p1) 8x32x32", False, (8, 64, 32, 32), (64, 64, 3, 3), 1, 1, True,
     True),
    ("style Conv2d(3,16,5) 4x36x36", False, (4, 3, 36, 36), (16, 3, 5, 5), 1, 0, True, False),
    ("style Conv2d(16,32,3,s2) 4x34x34", False, (4, 16, 34, 34), (32, 16, 3, 3), 2, 0, True,
     True),
    ("style Conv2d(32,32,3) 4x18x18", False, (4, 32, 18, 18), (32, 32, 3, 3), 1, 0, True, True),
    ("style Conv2d(32,16,3) 4x34x34", False, (4, 32, 34, 34), (16, 32, 3, 3), 1, 0, True, True),
    ("style Conv2d(16,12,3) 4x34x34", False, (4, 16, 34, 34), (12, 16, 3, 3), 1, 0, True, True),
    ("dcgan ConvT(32,64,4) 32x1x1", True, (32, 32, 1, 1), (32, 64, 4, 4), 1, 0, False, False),
    ("dcgan ConvT(64,32,4,s2,p1) 32x4x4", True, (32, 64, 4, 4), (64, 32, 4, 4), 2, 1, False,
     True),
    ("dcgan ConvT(32,1,4,s2,p1) 32x8x8", True, (32, 32, 8, 8), (32, 1, 4, 4), 2, 1, False, True),
    ("dcgan Conv2d(1,32,4,s2,p1) 32x16x16", False, (32, 1, 16, 16), (32, 1, 4, 4), 2, 1, False,
     True),
    ("dcgan Conv2d(32,64,4,s2,p1) 32x8x8", False, (32, 32, 8, 8), (64, 32, 4, 4), 2, 1, False,
     True),
    ("dcgan Conv2d(64,1,4) 32x4x4", False, (32, 64, 4, 4), (1, 64, 4, 4), 1, 0, False, True),
]


def _fns(lib, transposed, x_shape, w_shape, stride, padding, has_bias, x_grad):
    """(forward, forward + backward) callables of one case in one library."""
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in (x_shape, w_shape)]
    out_channels = w_shape[1] if transposed else w_shape[0]
    x = lib.tensor(arrays[0], requires_grad=x_grad)
    w = lib.tensor(arrays[1], requires_grad=True)
    b = lib.zeros(out_channels, requires_grad=True) if has_bias else None
    op = lib.nn.functional.conv_transpose2d if transposed else lib.nn.functional.conv2d
    leaves = [t for t in (x, w, b) if t is not None and t.requires_grad]

    def forward():
        return op(x, w, b, stride=stride, padding=padding)
    g = lib.tensor(np.random.default_rng(1).standard_normal(tuple(forward().shape))
                   .astype(np.float32))
    return forward, lambda: lib.autograd.grad(forward(), leaves, g)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--filter", default="", help="only cases whose label contains this")
    args = parser.parse_args()
    if torch is None:
        sys.exit("bench/conv_shapes.py compares with torch, which is not installed")
    mt.set_num_threads(1)
    torch.set_num_threads(1)
    print(f"minitorch {mt.__file__}, torch {torch.__version__}; 1 thread, best of 7, ms per call")
    print(f"{'case':<38}{'fwd mt':>9}{'torch':>8}{'ratio':>7}{'fwd+bwd mt':>12}{'torch':>8}"
          f"{'ratio':>7}")
    ratios = {"fwd": [], "fwd+bwd": []}
    for label, *case in CASES:
        if args.filter not in label:
            continue
        ours, theirs = _fns(mt, *case), _fns(torch, *case)
        row = f"{label:<38}"
        for i, kind in enumerate(ratios):
            best = best_times({"mt": ours[i], "torch": theirs[i]}, min_seconds=0.03)
            ratio = best["mt"] / best["torch"]
            ratios[kind].append(ratio)
            row += (f"{best['mt'] * 1e3:{9 if i == 0 else 12}.3f}{best['torch'] * 1e3:8.3f}"
                    f"{ratio:6.2f}x")
        print(row, flush=True)
    print("median ratio: " + ", ".join(f"{kind} {statistics.median(r):.2f}x"
                                       for kind, r in ratios.items() if r))


if __name__ == "__main__":
    main()
