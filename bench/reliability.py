"""Reliability figures: saves SIGKILLed at random times (temp files left, then after one good
save), the peak memory of save / load / randn against torch (each in a fresh process: peak RSS
growth over the tensor bytes), and the DataLoader kill trials of bench/reliability_loader.py.

Run: python bench/reliability.py [kill_trials] [megabytes]     (defaults: 50 kills, 256 MB)
Targets: 0 temp files after the kills and one good save; load and randn peaks <= 1.2x.
"""
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import textwrap
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))   # a checkout

import minitorch as mt  # noqa: E402
from minitorch.serialization import load, save  # noqa: E402
from minitorch.serialization._atomic import temp_files  # noqa: E402


# ---- killed saves -------------------------------------------------------------------------------
def save_kill_trials(trials=50, megabytes=40):
    """Fork a child that saves a `megabytes` checkpoint in a loop, SIGKILL it at a random time
    within about one save, `trials` times; count the temp files each kill leaves (before the
    next child's first save cleans them), then one good save and what remains."""
    state = {"w": mt.ones(megabytes * 2 ** 20 // 4), "step": 1}
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "ckpt.safetensors")
        started = time.perf_counter()
        save(state, path)
        save_seconds = time.perf_counter() - started
        rng, left_by_kill = random.Random(0), 0
        for _ in range(trials):
            _kill_one_saver(path, state, rng.uniform(0, 1.5 * save_seconds))
            left_by_kill += len(temp_files(directory, os.path.basename(path)))
        left_after_kills = len(temp_files(directory, os.path.basename(path)))
        save({"w": mt.zeros(4), "step": 2}, path)
        left = temp_files(directory, os.path.basename(path))
        good = load(path)["step"] == 2
    return {"kills": trials, "checkpoint_mb": megabytes,
            "save_seconds": round(save_seconds, 3),
            "kills_that_left_a_temp_file": left_by_kill,
            "temp_files_after_kills": left_after_kills,
            "temp_files_after_one_good_save": len(left), "good_checkpoint_loads": good}


def _kill_one_saver(path, state, delay):
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_end)
            while True:
                os.write(write_end, b"s")
                save(state, path)
        finally:
            os._exit(0)
    os.close(write_end)
    os.read(read_end, 1)          # the child is saving
    time.sleep(delay)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    os.close(read_end)


# ---- peak memory --------------------------------------------------------------------------------
_MEASURE = textwrap.dedent("""
    import json, os, resource, sys
    library, operation, n, path = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    if library == "torch":
        import torch as lib
        dump, read = lib.save, lambda p: lib.load(p, weights_only=True)
    else:
        import minitorch as lib
        dump, read = lib.save, lib.load
    def rss():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * resource.getpagesize()
    def peak():
        with open("/proc/self/status") as f:
            line = next(l for l in f if l.startswith("VmHWM:"))
        return int(line.split()[1]) * 1024
    x = lib.ones(n) if operation != "randn" else None
    if operation == "load":
        dump({"x": x}, path)
        del x
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")                       # peak RSS starts again from the current RSS
    before = rss()
    if operation == "save":
        dump({"x": x}, path)
    elif operation == "load":
        out = read(path)
    elif operation == "normal_":
        x.normal_()                        # an in-place fill (nn.init's too) of an existing tensor
    else:
        out = lib.randn(n)
    print(json.dumps((peak() - before) / (4 * n)))
""")


def peak_ratio(library, operation, n, directory):
    path = os.path.join(directory, f"{library}-{operation}.ckpt")
    done = subprocess.run([sys.executable, "-c", _MEASURE, library, operation, str(n), path],
                          capture_output=True, text=True, timeout=600)
    if done.returncode:
        return f"failed: {done.stderr.strip().splitlines()[-1]}"
    return round(json.loads(done.stdout), 3)


def memory_figures(megabytes=256):
    n = megabytes * 2 ** 20 // 4
    libraries = ["minitorch"] + (["torch"] if _has_torch() else [])
    with tempfile.TemporaryDirectory() as directory:
        return {operation: {library: peak_ratio(library, operation, n, directory)
                            for library in libraries}
                for operation in ("save", "load", "randn", "normal_")}


def _has_torch():
    try:
        import torch  # noqa: F401
        return True
    except ImportError:
        return False


# ---- the DataLoader's kill trials ---------------------------------------------------------------
def loader_figures():
    try:
        from reliability_loader import loader_kill_trials
    except ImportError as error:
        return f"missing (bench/reliability_loader.py: {error})"
    return loader_kill_trials(trials=50, batch_bytes=(200_000, 2_000_000, 8_000_000))


def main(trials=50, megabytes=256):
    print(f"save kill trials: {json.dumps(save_kill_trials(trials))}", flush=True)
    print(f"peak memory growth / tensor bytes ({megabytes} MB float32, fresh process each):")
    for operation, figures in memory_figures(megabytes).items():
        print(f"  {operation:<6}" + "  ".join(f"{library} {value}"
                                              for library, value in figures.items()), flush=True)
    print(f"DataLoader kill trials: {loader_figures()}", flush=True)


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
