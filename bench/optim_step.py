"""Optimizer step time over many small parameters: minitorch's multi-tensor (foreach) step and
its per-parameter step (foreach=False) against torch's default step and torch's foreach=True,
at 1 thread, float32. Two parameter lists shaped like small models: an LSTM language model
(8 layers of hidden size 128: 35 tensors, 1.1M elements) and a GPT (4 blocks of width 128:
54 tensors, 0.8M elements). Prints each step time and the ratio minitorch / torch default
(lower is better).

  python bench/optim_step.py
  python bench/optim_step.py --only Adam SGD
"""
import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
if not os.environ.get("PYTHONPATH"):
    sys.path.insert(0, os.path.dirname(HERE))   # this checkout, unless PYTHONPATH names one
sys.path.insert(0, HERE)

import minitorch as mt  # noqa: E402
from common import best_times, try_import_torch  # noqa: E402

VOCAB, SEQ = 65, 32


def lstm_lm_shapes(layers=8, hidden=128):
    shapes = [(VOCAB, hidden)]
    for _ in range(layers):
        shapes += [(4 * hidden, hidden), (4 * hidden, hidden), (4 * hidden,), (4 * hidden,)]
    return shapes + [(VOCAB, hidden), (VOCAB,)]


def gpt_shapes(blocks=4, d=128):
    shapes = [(VOCAB, d), (SEQ, d)]
    for _ in range(blocks):
        shapes += [(d,), (d,), (3 * d, d), (3 * d,), (d, d), (d,),
                   (d,), (d,), (4 * d, d), (4 * d,), (d, 4 * d), (d,)]
    return shapes + [(d,), (d,), (VOCAB, d), (VOCAB,)]


CONFIGS = [
    ("SGD", {"lr": 0.01, "momentum": 0.9}),
    ("SGD", {"lr": 0.01, "momentum": 0.9, "nesterov": True, "weight_decay": 1e-4}),
    ("Adam", {"lr": 1e-3}),
    ("Adam", {"lr": 1e-3, "amsgrad": True}),
    ("AdamW", {"lr": 1e-3}),
    ("Adadelta", {}),
    ("RMSprop", {"lr": 1e-3}),
    ("RMSprop", {"lr": 1e-3, "centered": True, "momentum": 0.9}),
]


def make_step(lib, shapes, name, kwargs, **extra):
    """A zero-argument callable running one optimizer step (gradients set once)."""
    rng = np.random.default_rng(0)
    parameter = lib.nn.Parameter
    params = []
    for shape in shapes:
        p = parameter(lib.tensor(rng.standard_normal(shape).astype(np.float32) * 0.1))
        p.grad = lib.tensor(rng.standard_normal(shape).astype(np.float32) * 0.01)
        params.append(p)
    opt = getattr(lib.optim, name)(params, **kwargs, **extra)
    opt.step()      # state made outside the timings
    return opt.step


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", help="these optimizers (SGD, Adam, ...)")
    args = parser.parse_args()
    torch = try_import_torch()
    mt.set_num_threads(1)
    if torch is not None:
        torch.set_num_threads(1)
    print(f"minitorch {mt.__file__}" + (f", torch {torch.__version__}" if torch else "") +
          "; best step time, 1 thread, float32")
    print(f"{'params':<8} {'optimizer':<44} {'mt foreach':>11} {'mt per-param':>13} "
          f"{'torch':>9} {'torch foreach':>14}  {'ratio':>6} {'speedup':>8}")
    for label, shapes in (("lstm_lm", lstm_lm_shapes()), ("gpt", gpt_shapes())):
        for name, kwargs in CONFIGS:
            if args.only and name not in args.only:
                continue
            contenders = {"mt": make_step(mt, shapes, name, kwargs),
                          "mt_loop": make_step(mt, shapes, name, kwargs, foreach=False)}
            if torch is not None:
                contenders["torch"] = make_step(torch, shapes, name, kwargs)
                contenders["torch_foreach"] = make_step(torch, shapes, name, kwargs,
                                                        foreach=True)
            ms = {k: v * 1e3 for k, v in best_times(contenders, repeat=5).items()}
            ratio = f"{ms['mt'] / ms['torch']:5.2f}x" if torch is not None else "   -  "
            options = ", ".join(f"{k}={v}" for k, v in kwargs.items())
            print(f"{label:<8} {name + ' ' + options:<44} {ms['mt']:8.3f} ms "
                  f"{ms['mt_loop']:9.3f} ms {ms.get('torch', float('nan')):6.3f} ms "
                  f"{ms.get('torch_foreach', float('nan')):10.3f} ms  {ratio} "
                  f"{ms['mt_loop'] / ms['mt']:7.1f}x", flush=True)
    print("ratio: minitorch foreach / torch default (lower is better); speedup: minitorch "
          "per-parameter / foreach")


if __name__ == "__main__":
    main()
