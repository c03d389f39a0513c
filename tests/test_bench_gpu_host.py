"""bench/gpu_host.py runs minitorch's cuda path against a stand-in CuPy; the stand-in must keep
up with what minitorch._gpu asks of CuPy, or the benchmark stops at the first cuda tensor (as
it did once the memory statistics' allocator hook came). One short run of two cases."""
import pathlib
import subprocess
import sys

BENCH = pathlib.Path(__file__).resolve().parents[1] / "bench" / "gpu_host.py"


def test_gpu_host_benchmark_runs_on_its_stand_in():
    run = subprocess.run([sys.executable, str(BENCH), "--cases", "add", "mlp"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    rows = [line for line in run.stdout.splitlines() if line.startswith(("add ", "MNIST MLP"))]
    assert len(rows) == 2, run.stdout
    launches = int(rows[1].split()[-5])         # columns from the end: uploads, readbacks, …
    assert launches > 0, rows[1]
