"""mt.randperm(n) time against torch.randperm(n) (CPU, 1 thread, same seed and permutation):
median of 5 runs each. Run from a checkout: python bench/randperm.py [n ...]"""
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import minitorch as mt  # noqa: E402
import torch  # noqa: E402


def _median_ms(manual_seed, randperm, n, runs=5):
    times = []
    for _ in range(runs):
        manual_seed(1)
        start = time.perf_counter()
        randperm(n)
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


def main(sizes):
    mt.set_num_threads(1)
    torch.set_num_threads(1)
    for n in sizes:
        mt.manual_seed(1)
        torch.manual_seed(1)
        same = mt.randperm(n).tolist() == torch.randperm(n).tolist()
        ours = _median_ms(mt.manual_seed, mt.randperm, n)
        theirs = _median_ms(torch.manual_seed, torch.randperm, n)
        print(f"n={n:>9}: mt {ours:8.2f} ms  torch {theirs:8.2f} ms  ratio {ours / theirs:5.1f}x  "
              f"same permutation: {same}")


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [1000, 10 ** 5, 10 ** 6])
