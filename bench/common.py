"""Timing helpers shared by the benchmarks: best-of-N wall time, interleaved between contenders
so that a noisy machine slows every contender alike."""
import time


def best_times(contenders, repeat=7, min_seconds=0.05, sync=None):
    """{name: best seconds per call} for callables timed in alternation; each timing runs the
    callable enough times to last at least `min_seconds`. `sync` (a GPU's synchronize) runs at
    the end of each timing, inside it: work queued on a device counts when it is done."""
    sync = sync or (lambda: None)
    loops = {}
    for name, fn in contenders.items():
        fn()  # warm-up (first-call allocations, lazy imports)
        sync()
        count, start = 0, time.perf_counter()
        while time.perf_counter() - start < min_seconds / 4:
            fn()
            count += 1
        loops[name] = 4 * count  # so that one timing lasts about min_seconds
    best = {name: float("inf") for name in contenders}
    for _ in range(repeat):
        for name, fn in contenders.items():
            start = time.perf_counter()
            for _ in range(loops[name]):
                fn()
            sync()
            best[name] = min(best[name], (time.perf_counter() - start) / loops[name])
    return best


def try_import_torch():
    try:
        import torch
        return torch
    except ImportError:
        return None


def print_row(label, figures, unit, baseline="numpy"):
    """One line: each contender's figure and its ratio to the baseline (higher = faster)."""
    parts = [f"{name} {value:9.2f} {unit}" for name, value in figures.items()]
    ratios = [f"{name}/{baseline} {figures[name] / figures[baseline]:.2f}x"
              for name in figures if name != baseline]
    print(f"{label:<34}" + "  ".join(parts) + "   " + "  ".join(ratios), flush=True)
