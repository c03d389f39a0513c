"""torch.func workloads, minitorch against torch.func: per-sample gradients of a small MLP over
64 samples, vmap(jacrev(f)) and hessian of a small function, an ensemble of 8 MLPs
(stack_module_state + vmap over functional_call). Each minitorch row is timed on vmap's
batched path and on the per-index mapping it falls back to (--mapped-only: that one alone).

    python bench/vmap.py [--threads 1]
"""
import argparse
import copy
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import best_times, try_import_torch  # noqa: E402

import minitorch as mt  # noqa: E402

VMAP = sys.modules["minitorch.vmap"]


def mlp(lib):
    return lib.nn.Sequential(lib.nn.Linear(32, 64), lib.nn.ReLU(), lib.nn.Linear(64, 10))


def per_sample_grads(lib, func, model, data, targets):
    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss(params, sample, target):
        out = func.functional_call(model, params, (sample.unsqueeze(0),))
        return lib.nn.functional.cross_entropy(out, target.unsqueeze(0))
    return lambda: func.vmap(func.grad(loss), in_dims=(None, 0, 0))(params, data, targets)


def small(lib):
    return lambda x: (x.sin() * x.exp()).sum() * x.tanh() + x * x


def scalar(lib):
    return lambda x: (x.sin() * x.exp() + x * x * x).sum()


def ensemble(lib, func, models, x):
    params, buffers = func.stack_module_state(models)
    base = copy.deepcopy(models[0]).to("meta")

    def one(p, b, x):
        return func.functional_call(base, (p, b), (x,))
    return lambda: func.vmap(one, in_dims=(0, 0, None))(params, buffers, x)


def workloads(lib, func, arrays):
    lib.manual_seed(0)
    model = mlp(lib)
    data, targets = lib.tensor(arrays["data"]), lib.tensor(arrays["targets"])
    models = [mlp(lib) for _ in range(8)]
    xs = lib.tensor(arrays["xs"])
    x = lib.tensor(arrays["x"])
    return {
        "per-sample grads, MLP 32-64-10, 64 samples": per_sample_grads(lib, func, model, data,
                                                                       targets),
        "vmap(jacrev(f)), 16 x (8,)": lambda: func.vmap(func.jacrev(small(lib)))(xs),
        "hessian(f), (8,)": lambda: func.hessian(scalar(lib))(x),
        "vmap(hessian(f)), 16 x (8,)": lambda: func.vmap(func.hessian(scalar(lib)))(xs),
        "ensemble of 8 MLPs, batch 64": ensemble(lib, func, models, data),
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    import numpy as np
    rng = np.random.default_rng(0)
    arrays = {"data": rng.standard_normal((64, 32)).astype(np.float32),
              "targets": rng.integers(0, 10, 64),
              "xs": rng.standard_normal((16, 8)).astype(np.float32),
              "x": rng.standard_normal(8).astype(np.float32)}
    mt.set_num_threads(args.threads)
    torch = try_import_torch()
    ours = workloads(mt, mt.func, arrays)
    theirs = workloads(torch, torch.func, arrays) if torch else {}
    if torch:
        torch.set_num_threads(args.threads)
    print(f"{'workload':45s} {'batched ms':>11s} {'mapped ms':>10s} {'torch ms':>9s} "
          f"{'batched/torch':>14s} {'mapped/torch':>13s}")
    for name, fn in ours.items():
        VMAP.BATCHED[0] = True
        batched = best_times({"b": fn}, repeat=3, min_seconds=0.2)["b"]
        VMAP.BATCHED[0] = False
        mapped = best_times({"m": fn}, repeat=1, min_seconds=0.2)["m"]
        VMAP.BATCHED[0] = True
        ref = best_times({"t": theirs[name]}, repeat=3, min_seconds=0.2)["t"] if torch \
            else float("nan")
        print(f"{name:45s} {batched * 1e3:11.2f} {mapped * 1e3:10.2f} {ref * 1e3:9.2f} "
              f"{batched / ref:14.1f} {mapped / ref:13.1f}")
    print(f"vmap calls: {VMAP.CALLS}")


if __name__ == "__main__":
    main()
