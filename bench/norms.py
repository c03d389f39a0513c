"""Fused normalisation benchmark: layer_norm, group_norm and instance_norm at the workloads'
shapes, forward and forward + backward (input, weight and bias gradients), float32, 1 thread:
minitorch's fused node, the composition of Tensor ops it replaced (`_composed_*`, kept as the
reference) and torch. Prints milliseconds per call and the ratio torch / minitorch (higher =
minitorch faster). Run: python bench/norms.py
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import best_times, try_import_torch  # noqa: E402

import minitorch as mt  # noqa: E402
import minitorch.nn.functional as F  # noqa: E402
from minitorch.nn.functional import normalization as N  # noqa: E402

torch = try_import_torch()

# (label, input shape, parameter shape, fused, composed, torch's)
CASES = [
    ("LayerNorm(128) on (64*32, 128)", (64 * 32, 128), (128,),
     lambda x, w, b: F.layer_norm(x, (128,), w, b),
     lambda x, w, b: N._composed_layer_norm(x, (128,), w, b, 1e-5),
     lambda x, w, b: torch.nn.functional.layer_norm(x, (128,), w, b)),
    ("LayerNorm(256) on (8*64, 256)", (8 * 64, 256), (256,),
     lambda x, w, b: F.layer_norm(x, (256,), w, b),
     lambda x, w, b: N._composed_layer_norm(x, (256,), w, b, 1e-5),
     lambda x, w, b: torch.nn.functional.layer_norm(x, (256,), w, b)),
    ("GroupNorm(8, 64) on (16, 64, 32, 32)", (16, 64, 32, 32), (64,),
     lambda x, w, b: F.group_norm(x, 8, w, b),
     lambda x, w, b: N._composed_group_norm(x, 8, w, b, 1e-5),
     lambda x, w, b: torch.nn.functional.group_norm(x, 8, w, b)),
    ("InstanceNorm2d(64) on (4, 64, 64, 64)", (4, 64, 64, 64), (64,),
     lambda x, w, b: F.instance_norm(x, weight=w, bias=b),
     lambda x, w, b: N._composed_instance_norm(x, None, None, w, b, True, 0.1, 1e-5),
     lambda x, w, b: torch.nn.functional.instance_norm(x, weight=w, bias=b)),
]


def _tensors(lib, arrays):
    return [lib.tensor(a, requires_grad=True) for a in arrays]


def _contenders(shape, pshape, fused, composed, torch_fn, backward):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in (shape, pshape, pshape)]
    g = rng.standard_normal(shape).astype(np.float32)
    ours, theirs = _tensors(mt, arrays), _tensors(torch, arrays) if torch else None

    def run(lib, fn, tensors, grad):
        if not backward:
            return lambda: fn(*tensors)
        return lambda: lib.autograd.grad(fn(*tensors), tensors, grad)
    fns = {"fused": run(mt, fused, ours, mt.tensor(g)),
           "composed": run(mt, composed, ours, mt.tensor(g))}
    if torch is not None:
        fns["torch"] = run(torch, torch_fn, theirs, torch.tensor(g))
    return fns


def main():
    mt.set_num_threads(1)
    if torch is not None:
        torch.set_num_threads(1)
    print("float32, 1 thread; ms per call; ratio = other / fused (higher: fused faster)")
    for label, shape, pshape, fused, composed, torch_fn in CASES:
        for backward in (False, True):
            times = best_times(_contenders(shape, pshape, fused, composed, torch_fn, backward),
                               repeat=5, min_seconds=0.1)
            parts = "  ".join(f"{name} {t * 1e3:8.3f}" for name, t in times.items())
            ratios = "  ".join(f"{name}/fused {t / times['fused']:.2f}x"
                               for name, t in times.items() if name != "fused")
            kind = "fwd+bwd" if backward else "fwd"
            print(f"{label:<38}{kind:<8}{parts}   {ratios}", flush=True)


if __name__ == "__main__":
    main()
