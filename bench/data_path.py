"""The data path of a DataLoader batch: stack / cat of many small tensors, default_collate of
(image, label) pairs, slice assignment, each timed against torch in alternation (best of N).
Prints µs per call and the ratio minitorch/torch (lower is better; 1.00x = torch's speed).

Run: python bench/data_path.py [--threads 1] [--repeat 7]
(to compare with another checkout: PYTHONPATH=<checkout> python bench/data_path.py)
"""
import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
if not os.environ.get("PYTHONPATH"):
    sys.path.insert(0, os.path.dirname(HERE))   # this checkout, unless PYTHONPATH names one
from common import best_times, try_import_torch  # noqa: E402

import minitorch as mt  # noqa: E402


def cases(torch):
    """(label, minitorch callable, torch callable) on the same data."""
    from minitorch.utils.data import default_collate as mt_collate
    from torch.utils.data import default_collate as torch_collate
    rng = np.random.default_rng(0)
    ints = [rng.integers(0, 100, 16) for _ in range(32)]
    images = [rng.standard_normal((3, 32, 32), dtype=np.float32) for _ in range(32)]
    small = [rng.standard_normal((4, 8), dtype=np.float32) for _ in range(32)]
    m_ints, t_ints = [mt.tensor(a) for a in ints], [torch.tensor(a) for a in ints]
    m_img, t_img = [mt.tensor(a) for a in images], [torch.tensor(a) for a in images]
    m_small, t_small = [mt.tensor(a) for a in small], [torch.tensor(a) for a in small]
    m_pairs, t_pairs = list(zip(m_img, range(32))), list(zip(t_img, range(32)))
    m_ipairs, t_ipairs = list(zip(m_ints, range(32))), list(zip(t_ints, range(32)))
    m_x, t_x = mt.zeros(10, 16), torch.zeros(10, 16)
    m_ix, t_ix = mt.ones(5, 16), torch.ones(5, 16)
    m_rows, t_rows = mt.zeros(64, 16), torch.zeros(64, 16)

    def m_set():
        m_x[1:6] = m_ix

    def t_set():
        t_x[1:6] = t_ix

    def m_set_scalar():
        m_x[2] = 1.5

    def t_set_scalar():
        t_x[2] = 1.5

    return [
        ("stack 32 x int64[16]", lambda: mt.stack(m_ints), lambda: torch.stack(t_ints)),
        ("stack 32 x float32[3,32,32]", lambda: mt.stack(m_img), lambda: torch.stack(t_img)),
        ("stack 32 x float32[4,8] dim=1", lambda: mt.stack(m_small, 1),
         lambda: torch.stack(t_small, 1)),
        ("cat 32 x float32[4,8]", lambda: mt.cat(m_small), lambda: torch.cat(t_small)),
        ("cat 32 x float32[4,8] dim=1", lambda: mt.cat(m_small, 1),
         lambda: torch.cat(t_small, 1)),
        ("cat 32 x int64[16] views", lambda: mt.cat([r[2:10] for r in m_rows[:32]]),
         lambda: torch.cat([r[2:10] for r in t_rows[:32]])),
        ("collate 32 x (int64[16], int)", lambda: mt_collate(m_ipairs),
         lambda: torch_collate(t_ipairs)),
        ("collate 32 x (float32[3,32,32], int)", lambda: mt_collate(m_pairs),
         lambda: torch_collate(t_pairs)),
        ("x[1:6] = ix  (float32[10,16])", m_set, t_set),
        ("x[2] = 1.5", m_set_scalar, t_set_scalar),
    ]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    torch = try_import_torch()
    if torch is None:
        sys.exit("bench/data_path.py compares with torch, which is not installed")
    mt.set_num_threads(args.threads)
    torch.set_num_threads(args.threads)
    print(f"minitorch {mt.__file__}\nthreads {args.threads}, best of {args.repeat}, µs per call")
    print(f"{'':<38}{'minitorch':>10}{'torch':>10}{'ratio':>9}")
    for label, ours, theirs in cases(torch):
        best = best_times({"minitorch": ours, "torch": theirs}, repeat=args.repeat,
                          min_seconds=0.02)
        m, t = best["minitorch"] * 1e6, best["torch"] * 1e6
        print(f"{label:<38}{m:10.1f}{t:10.1f}{m / t:8.2f}x", flush=True)


if __name__ == "__main__":
    main()
