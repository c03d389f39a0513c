"""GradScaler's cost per training step: scaler.step(opt) + scaler.update() (the inf check, the
unscale, the host read of found_inf, the scale update) minus opt.step() alone, minitorch
against torch, Adam over optim_step.py's GPT parameter list (54 float32 tensors, 0.8M
elements), 1 thread. Prints each time and the ratio minitorch / torch of the scaler's cost.

  python bench/grad_scaler.py
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if not os.environ.get("PYTHONPATH"):
    sys.path.insert(0, os.path.dirname(HERE))   # this checkout, unless PYTHONPATH names one
sys.path.insert(0, HERE)

import minitorch as mt  # noqa: E402
from common import best_times, try_import_torch  # noqa: E402
from optim_step import gpt_shapes, make_step  # noqa: E402


def make_scaled_step(lib, shapes):
    """One scaler.step + update over make_step's parameters (their gradients stay finite:
    each unscale divides them by 2**16 again, which changes no timing)."""
    opt_step = make_step(lib, shapes, "Adam", {"lr": 1e-3})
    opt = opt_step.__self__
    scaler = lib.amp.GradScaler("cpu")
    scaler.scale(lib.ones(()))

    def step():
        scaler.step(opt)
        scaler.update()
    return step


def main():
    torch = try_import_torch()
    mt.set_num_threads(1)
    libs = [("mt", mt)] + ([("torch", torch)] if torch is not None else [])
    if torch is not None:
        torch.set_num_threads(1)
    contenders = {}
    for name, lib in libs:
        contenders[name] = make_step(lib, gpt_shapes(), "Adam", {"lr": 1e-3})
        contenders[name + "_scaled"] = make_scaled_step(lib, gpt_shapes())
    ms = {k: v * 1e3 for k, v in best_times(contenders, repeat=5).items()}
    cost = {}
    for name, _ in libs:
        cost[name] = ms[name + "_scaled"] - ms[name]
        print(f"{name:<6} Adam step {ms[name]:7.3f} ms, scaler.step + update "
              f"{ms[name + '_scaled']:7.3f} ms: the scaler costs {cost[name]:6.3f} ms")
    if torch is not None:
        print(f"ratio of the scaler's cost, minitorch / torch: {cost['mt'] / cost['torch']:.2f}x")


if __name__ == "__main__":
    main()
