"""Tiny-op programs, minitorch vs PyTorch (when installed) in one run: the per-op overhead that
docs/benchmarks.md's "Tiny-op programs" measures on pytorch/examples, as two self-contained loops.

- actor-critic: one 50-step episode of a 4 -> 128 -> (2 actions, 1 value) policy (Categorical
  sample / log_prob per step), then the returns, the summed policy and smooth-L1 value losses,
  backward and an Adam step (reinforcement_learning/actor_critic.py's shape);
- mass-spring: 50 steps of a 10-mass spring chain (slices, a norm, zeros_like and slice writes
  per step, as differentiable_physics/mass_spring.py's force update), then backward.

Process CPU time per iteration, best of 5 repeats (a busy machine disturbs it far less than wall
time). Run: python bench/tiny_programs.py
"""
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import try_import_torch  # noqa: E402

import minitorch as mt  # noqa: E402

torch = try_import_torch()


def actor_critic(lib):
    """A closure running one episode and its update."""
    nn, F = lib.nn, lib.nn.functional
    lib.manual_seed(0)

    class Policy(nn.Module):
        def __init__(self):
            super().__init__()
            self.affine1 = nn.Linear(4, 128)
            self.action_head = nn.Linear(128, 2)
            self.value_head = nn.Linear(128, 1)

        def forward(self, x):
            x = F.relu(self.affine1(x))
            return F.softmax(self.action_head(x), dim=-1), self.value_head(x)

    model = Policy()
    optimizer = lib.optim.Adam(model.parameters(), lr=3e-2)
    states = np.random.RandomState(0).randn(50, 4).astype(np.float32)

    def episode():
        log_probs, values = [], []
        for s in states:
            probs, value = model(lib.from_numpy(s).unsqueeze(0))
            m = lib.distributions.Categorical(probs)
            log_probs.append(m.log_prob(m.sample()))
            values.append(value)
        R, returns = 0.0, []
        for _ in states:
            R = 1.0 + 0.99 * R
            returns.insert(0, R)
        returns = lib.tensor(returns)
        returns = (returns - returns.mean()) / (returns.std() + 1e-8)
        losses = []
        for log_prob, value, R in zip(log_probs, values, returns):
            losses.append((-log_prob * (R - value.item())).sum())
            losses.append(F.smooth_l1_loss(value.squeeze(), R))
        optimizer.zero_grad()
        lib.stack(losses).sum().backward()
        optimizer.step()
    return episode


def mass_spring(lib):
    def steps():
        pos = lib.randn(10, 2, requires_grad=True)
        vel = lib.zeros(10, 2)
        for _ in range(50):
            d = pos[1:] - pos[:-1]
            dist = (d * d).sum(-1, keepdim=True).sqrt()
            force = (dist - 1.0) * d / dist
            f = lib.zeros_like(pos)
            f[1:] = f[1:] - force
            f[:-1] = f[:-1] + force
            vel = vel + 0.01 * f
            pos = pos + 0.01 * vel
        pos.sum().backward()
    return steps


def cpu_time(fn, number=10):
    fn()
    best = float("inf")
    for _ in range(5):
        start = time.process_time()
        for _ in range(number):
            fn()
        best = min(best, (time.process_time() - start) / number)
    return best


def main():
    libs = {"minitorch": mt}
    if torch is not None:
        torch.set_num_threads(1)
        libs["torch"] = torch
    cases = {"actor-critic episode (50 steps)": actor_critic,
             "mass-spring 50 steps fwd+bwd": mass_spring}
    results = {name: {case: cpu_time(make(lib)) for case, make in cases.items()}
               for name, lib in libs.items()}
    print(f"{'program':<34}" + "".join(f"{name:>14}" for name in libs) +
          ("   minitorch/torch" if torch else ""))
    for case in cases:
        row = f"{case:<34}" + "".join(f"{results[n][case] * 1e3:>12.2f}ms" for n in libs)
        if torch:
            row += f"   {results['minitorch'][case] / results['torch'][case]:>10.2f}x"
        print(row)


if __name__ == "__main__":
    main()
