"""mt.distributed without launching MPI: errors before init, backend names, the launcher's
command line, and DistributedSampler's partition against torch's."""
import importlib.util
import os
import subprocess
import sys

import pytest

import minitorch as mt
import minitorch.distributed as dist
from minitorch.distributed import run
from minitorch.utils.data import DistributedSampler

NOT_INIT = ("Default process group has not been initialized, please make sure to call "
            "init_process_group.")


@pytest.mark.parametrize("call", [
    lambda: dist.all_reduce(mt.ones(2)), lambda: dist.get_rank(), lambda: dist.get_world_size(),
    lambda: dist.barrier(), lambda: dist.broadcast(mt.ones(2), src=0), lambda: dist.new_group(),
    lambda: dist.all_gather_object([None], 1), lambda: dist.get_backend(),
    lambda: dist.all_to_all([mt.ones(1)], [mt.ones(1)]),
    lambda: dist.reduce_scatter(mt.ones(1), [mt.ones(1)]), lambda: dist.monitored_barrier(),
    lambda: dist.P2POp(dist.isend, mt.ones(1), 1), lambda: dist.send_object_list([1], dst=1),
    lambda: dist.scatter_object_list([None], [1], src=0), lambda: dist.new_subgroups(1)])
def test_using_a_collective_before_init_is_torchs_value_error(call):
    with pytest.raises(ValueError, match="^" + NOT_INIT.replace(".", r"\.") + "$"):
        call()
    assert not dist.is_initialized()


def test_unknown_backend_and_destroy_before_init():
    with pytest.raises(AssertionError, match="Unknown backend type foo"):
        dist.init_process_group("foo")
    with pytest.raises(AssertionError, match="Process group cannot be None"):
        dist.destroy_process_group()
    assert dist.Backend("MPI") == "mpi" and dist.Backend.NCCL == "nccl"


def test_gloo_is_not_built_in():
    with pytest.raises(RuntimeError, match="doesn't have Gloo built in: use backend='mpi'"):
        dist.init_process_group("gloo")
    assert not dist.is_initialized()


def test_nccl_without_cupy_nccl_says_so():
    if dist.is_nccl_available():
        pytest.skip("NCCL is available here")
    with pytest.raises(RuntimeError, match="doesn't have NCCL built in"):
        dist.init_process_group("nccl")
    assert not dist.is_initialized()


def test_launch_environment_backend_queries_and_error_types(monkeypatch):
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    with pytest.raises(RuntimeError, match="^LOCAL_RANK is not in the environment. Consider"):
        dist.get_node_local_rank()
    assert dist.get_node_local_rank(fallback_rank=2) == 2
    monkeypatch.setenv("LOCAL_RANK", "1")
    assert dist.get_node_local_rank(fallback_rank=2) == 1
    monkeypatch.delenv("TORCHELASTIC_RUN_ID", raising=False)
    assert not dist.is_torchelastic_launched()
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "none")
    assert dist.is_torchelastic_launched()
    assert dist.is_backend_available("mpi") == dist.is_mpi_available()
    assert dist.is_backend_available("NCCL") == dist.is_nccl_available()
    assert not (dist.is_gloo_available() or dist.is_backend_available("gloo")
                or dist.is_ucc_available() or dist.is_xccl_available())
    assert dist.get_default_backend_for_device("cpu") == "mpi"
    assert dist.get_default_backend_for_device(mt.device("cuda", 1)) == "nccl"
    with pytest.raises(ValueError, match="^Default backend not registered for device : xpu$"):
        dist.get_default_backend_for_device("xpu")
    assert issubclass(dist.QueueEmptyError, dist.DistStoreError)
    for kind in (dist.DistBackendError, dist.DistNetworkError, dist.DistStoreError):
        assert issubclass(kind, dist.DistError) and issubclass(kind, RuntimeError)
    assert [op.name for op in dist.ReduceOp if dist.supports_complex(op)] == ["SUM", "AVG"]


def test_launcher_marks_its_ranks_as_torchrun_does(monkeypatch):
    """torchrun's TORCHELASTIC_RUN_ID (its --rdzv-id, "none" by default) reaches the ranks
    through mpiexec's environment: is_torchelastic_launched() is True in them."""
    seen = []
    monkeypatch.setattr(run, "find_mpiexec", lambda: "mpiexec")
    monkeypatch.setattr(run.subprocess, "run", lambda command, env: seen.append(env) or
                        subprocess.CompletedProcess(command, 0))
    assert run.main(["--nproc-per-node", "2", "train.py"]) == 0
    assert run.main(["--nproc-per-node", "2", "--rdzv-id", "job7", "train.py"]) == 0
    assert [env["TORCHELASTIC_RUN_ID"] for env in seen] == ["none", "job7"]


def test_join_needs_joinables_and_a_joinable_names_its_hooks():
    from minitorch.distributed.algorithms import Join, Joinable, JoinHook
    with pytest.raises(ValueError, match="requires at least one joinable"):
        Join([])
    with pytest.raises(TypeError):
        Joinable()                  # join_hook, join_device and join_process_group are abstract
    hook = JoinHook()
    assert hook.main_hook() is None and hook.post_hook(True) is None


def test_reduce_op_names_and_timeout_type():
    assert [op.name for op in dist.ReduceOp] == ["SUM", "PRODUCT", "MIN", "MAX", "AVG"]
    assert str(dist.ReduceOp.SUM) == "RedOpType.SUM"
    with pytest.raises(TypeError, match="datetime.timedelta"):
        dist.init_process_group("mpi", timeout=5)


def test_importing_minitorch_does_not_start_mpi():
    code = "import sys, minitorch; print('mpi4py.MPI' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60).stdout
    assert out.strip() == "False"


# ---- launcher -------------------------------------------------------------------------------
def test_launcher_builds_torchrun_like_mpiexec_command(monkeypatch):
    monkeypatch.setattr(run, "find_mpiexec", lambda: "/bin/mpiexec")
    args = run.parse_args(["--nproc_per_node=3", "--master-port", "1234", "train.py", "--lr",
                           "0.1"])
    command = run.mpiexec_command(args)
    assert command[:3] == ["/bin/mpiexec", "-n", "3"]
    assert command[-7:] == ["3", "127.0.0.1", "1234", "script", "train.py", "--lr", "0.1"]
    module = run.mpiexec_command(run.parse_args(["--nproc-per-node", "2", "-m", "pkg.mod"]))
    assert module[-2:] == ["module", "pkg.mod"]


def test_launcher_tunes_open_mpi_before_the_program_runs(monkeypatch, tmp_path):
    """A program that imports mpi4py before init_process_group initializes MPI itself: the
    launcher's rank bootstrap sets minitorch's Open MPI defaults before running it."""
    from minitorch.distributed import mpi_backend
    for name in (*mpi_backend._TUNED_PARAMETERS, "OMPI_MCA_mpi_yield_when_idle"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OMPI_COMM_WORLD_RANK", "0")
    seen = tmp_path / "seen.txt"
    script = tmp_path / "program.py"
    script.write_text("import os, sys\n"
                      "open(sys.argv[1], 'w').write(os.environ.get("
                      "'OMPI_MCA_coll_tuned_dynamic_rules_filename', '') + '|' + "
                      "os.environ.get('OMPI_MCA_mpi_yield_when_idle', ''))\n")
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    monkeypatch.setattr(sys, "path", list(sys.path))
    run.main([run.WORKER_FLAG, "1", "127.0.0.1", "29500", "script", str(script), str(seen)])
    assert seen.read_text() == f"{mpi_backend.RULES_FILE}|1"


@pytest.mark.skipif(importlib.util.find_spec("mpi4py") is None, reason="mpi4py is not installed")
def test_mpi_initialized_before_the_tuning_warns(tmp_path):
    """mpi4py imported first: Open MPI's fixed all-reduce choice applies, and we say so."""
    code = ("import warnings\n"
            "from mpi4py import MPI\n"
            "import minitorch.distributed as dist\n"
            "with warnings.catch_warnings(record=True) as caught:\n"
            "    warnings.simplefilter('always')\n"
            "    dist.init_process_group('mpi')\n"
            "print(sum('before minitorch.distributed could choose' in str(w.message) "
            "for w in caught), MPI.Get_library_version().startswith('Open MPI'))\n"
            "dist.destroy_process_group()\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMPI_MCA_coll_tuned")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    count, open_mpi = done.stdout.split()
    assert count == ("1" if open_mpi == "True" else "0")


@pytest.mark.parametrize("argv", [["--nnodes", "2", "x.py"], ["--nproc-per-node", "0", "x.py"],
                                  ["--nproc-per-node", "two", "x.py"],
                                  ["--max-restarts", "1", "x.py"]])
def test_launcher_rejects_what_it_cannot_do(argv, capsys):
    with pytest.raises(SystemExit):
        run.parse_args(argv)
    assert "error" in capsys.readouterr().err


# ---- DistributedSampler ---------------------------------------------------------------------
@pytest.mark.parametrize("size,replicas,drop_last", [(10, 3, False), (10, 3, True),
                                                     (9, 3, False), (2, 5, False),
                                                     (11, 4, True)])
def test_sampler_partition_equals_torchs_without_shuffle(size, replicas, drop_last):
    torch_data = pytest.importorskip("torch.utils.data.distributed")
    for rank in range(replicas):
        ours = DistributedSampler(range(size), replicas, rank, shuffle=False, drop_last=drop_last)
        theirs = torch_data.DistributedSampler(range(size), replicas, rank, shuffle=False,
                                               drop_last=drop_last)
        assert list(ours) == list(theirs) and len(ours) == len(theirs)


def test_sampler_partition_of_a_shuffled_order_equals_torchs():
    """mt.randperm is torch's permutation for a seed, so every rank's shuffled share is torch's
    (tests/test_randperm.py checks more sizes)."""
    torch = pytest.importorskip("torch")
    from torch.utils.data.distributed import DistributedSampler as TorchSampler
    for epoch in (0, 1):
        for rank in range(4):
            ours = DistributedSampler(range(10), 4, rank, seed=7)
            theirs = TorchSampler(range(10), 4, rank, seed=7)
            ours.set_epoch(epoch)
            theirs.set_epoch(epoch)
            assert list(ours) == list(theirs)


def test_sampler_shuffles_the_same_on_every_rank_and_per_epoch():
    shares = [list(DistributedSampler(range(12), 3, r, seed=1)) for r in range(3)]
    assert sorted(sum(shares, [])) == list(range(12))
    again = DistributedSampler(range(12), 3, 0, seed=1)
    assert list(again) == shares[0]
    again.set_epoch(1)
    assert list(again) != shares[0]


def test_sampler_checks_rank_and_needs_a_group():
    with pytest.raises(ValueError,
                       match=r"Invalid rank 3, rank should be in the interval \[0, 2\]"):
        DistributedSampler(range(4), 3, 3)
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        DistributedSampler(range(4))


def test_open_mpi_all_reduce_rules_apply_unless_the_user_tuned_it(monkeypatch):
    from minitorch.distributed import mpi_backend
    for name in mpi_backend._TUNED_PARAMETERS:
        monkeypatch.delenv(name, raising=False)
    mpi_backend._prefer_ring_allreduce()
    assert os.environ["OMPI_MCA_coll_tuned_use_dynamic_rules"] == "1"
    rules = os.environ["OMPI_MCA_coll_tuned_dynamic_rules_filename"]
    # Open MPI's format: collectives, allreduce's id (2), communicator sizes, from 2 ranks,
    # message sizes, then "bytes algorithm fan-in/out segment-size" rows
    with open(rules) as f:
        numbers = [[int(word) for word in line.split()] for line in f if line.strip()]
    assert numbers == [[1], [2], [1], [2], [2], [0, 3, 0, 0], [131072, 4, 0, 0]]
    for name in mpi_backend._TUNED_PARAMETERS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OMPI_MCA_coll_tuned_allreduce_algorithm", "6")    # the user's choice
    mpi_backend._prefer_ring_allreduce()
    assert "OMPI_MCA_coll_tuned_dynamic_rules_filename" not in os.environ
