"""mt.distributed against raw mpi4py, and DistributedDataParallel's cost per training step.

  1. all-reduce (SUM, in place, float32) of 1 KB .. 64 MB: mt.distributed.all_reduce on a tensor
     against mpi4py's comm.Allreduce(MPI.IN_PLACE, array) on a numpy array; bus bandwidth
     (GB/s) of each and their ratio.
  2. one training step (forward, backward, SGD) of bench/mnist.py's MLP and CNN at a per-rank
     batch of 128 on synthetic images: DDP against the same model without DDP, both measured in
     the same job with every rank computing (one thread per rank), so the ratio is the cost of
     the gradient averaging that backward does not hide. Two measures: the best of alternating
     rounds of steps, and the median over single steps taken in turns (a barrier before each,
     the slower rank's time), which this machine's drifting clock moves the least. With
     --torch, the same for torch's own DistributedDataParallel on its gloo backend (CPU), in the
     same job, as a reference. With --host-only, a third contender takes DDP steps with the
     engine's all-reduce skipped (the buckets, hooks and scaling still run): its ratio to the
     plain step is DDP's host work alone. With --floor, a contender takes the plain step plus
     what a data-parallel step must add when nothing overlaps its communication: every
     gradient divided by the world size (our kernel) and all-reduced in place by raw mpi4py,
     one blocking call per parameter, with none of DDP's buckets, hooks or copies.

Run: python bench/distributed.py [--ranks 2] [--steps 20]   (starts itself under mpiexec)
The figures are the best of several alternating rounds, the slowest rank counted.
"""
import argparse
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
if not os.environ.get("PYTHONPATH"):
    sys.path.insert(0, os.path.dirname(HERE))   # this checkout, unless PYTHONPATH names one

SIZES = [1 << k for k in range(10, 27, 2)]          # 1 KB, 4 KB, ..., 64 MB


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--parts", nargs="+", default=["allreduce", "ddp"],
                        choices=["allreduce", "ddp"])
    parser.add_argument("--models", nargs="+", default=["mlp", "cnn"], choices=["mlp", "cnn"])
    parser.add_argument("--torch", action="store_true",
                        help="also time torch's DDP (gloo) on the same models")
    parser.add_argument("--host-only", action="store_true",
                        help="also time DDP steps with the all-reduce skipped (in turns)")
    parser.add_argument("--floor", action="store_true",
                        help="also time the plain step plus a bare all-reduce of the gradients")
    args = parser.parse_args()
    if "OMPI_COMM_WORLD_SIZE" not in os.environ and "PMIX_RANK" not in os.environ:
        from minitorch.distributed.run import find_mpiexec
        command = [find_mpiexec(), "-n", str(args.ranks)]
        if os.geteuid() == 0:
            command.append("--allow-run-as-root")
        command += [sys.executable, os.path.abspath(__file__), *sys.argv[1:]]
        sys.exit(subprocess.run(command, env=dict(os.environ, OMP_NUM_THREADS="1")).returncode)
    bench(args)


def bench(args):
    import minitorch as mt
    import minitorch.distributed as dist
    mt.set_num_threads(1)
    dist.init_process_group("mpi")
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    rank, world = comm.Get_rank(), comm.Get_size()
    say = print if rank == 0 else (lambda *a, **k: None)
    say(f"{world} ranks, Open MPI via mpi4py {__import__('mpi4py').__version__}")
    if "allreduce" in args.parts:
        bench_allreduce(args, mt, dist, comm, MPI, world, say)
    if "ddp" in args.parts:
        bench_ddp(args, mt, comm, say)
        if args.torch:
            bench_torch_ddp(args, comm, say)
    dist.destroy_process_group()


def bench_allreduce(args, mt, dist, comm, MPI, world, say):
    say(f"{'all-reduce size':>16} {'mpi4py GB/s':>12} {'mt GB/s':>10} {'mt/mpi4py':>10}")
    for nbytes in SIZES:
        raw = np.ones(nbytes // 4, np.float32)
        tensor = mt.ones(nbytes // 4)
        loops = max(2, min(2000, int(4e8 / nbytes)))
        contenders = {"mpi4py": lambda: comm.Allreduce(MPI.IN_PLACE, raw),
                      "mt": lambda: dist.all_reduce(tensor)}
        best = alternate(comm, contenders, loops, args.rounds)
        bandwidth = {k: bus_bytes(nbytes, world) / v / 1e9 for k, v in best.items()}
        say(f"{human(nbytes):>16} {bandwidth['mpi4py']:12.2f} {bandwidth['mt']:10.2f} "
            f"{bandwidth['mt'] / bandwidth['mpi4py']:9.2f}x")


def bench_ddp(args, lib, comm, say, title="model (per-rank batch 128)"):
    """The DDP and plain steps of each model on `lib` (minitorch, or torch itself)."""
    say(f"\n{title:<28} {'no DDP ms':>10} {'DDP ms':>8} {'DDP/no DDP':>11} "
        f"{'in turns: no DDP / DDP ms':>26} {'ratio':>6}")
    for kind in args.models:
        steps = {name: training_step(lib, kind, ddp=name == "DDP") for name in ("no DDP", "DDP")}
        loops = args.steps if kind == "mlp" else max(3, args.steps // 4)
        best = alternate(comm, steps, loops, args.rounds)
        if getattr(args, "host_only", False) and lib.__name__ == "minitorch":
            steps["host only"] = without_all_reduce(training_step(lib, kind, ddp=True))
        if getattr(args, "floor", False) and lib.__name__ == "minitorch":
            steps["floor"] = training_step(lib, kind, ddp=False, comm=comm)
        turns = in_turns(comm, steps, loops * args.rounds)
        say(f"{kind:<28} {best['no DDP'] * 1e3:10.2f} {best['DDP'] * 1e3:8.2f} "
            f"{best['DDP'] / best['no DDP']:10.2f}x "
            f"{turns['no DDP'] * 1e3:15.2f} / {turns['DDP'] * 1e3:6.2f} "
            f"{turns['DDP'] / turns['no DDP']:5.2f}x")
        if "host only" in turns:
            say(f"{'  DDP, all-reduce skipped':<28} in turns {turns['host only'] * 1e3:.2f} ms, "
                f"{turns['host only'] / turns['no DDP']:.2f}x the step without DDP")
        if "floor" in turns:
            say(f"{'  no DDP + bare all-reduce':<28} in turns {turns['floor'] * 1e3:.2f} ms, "
                f"{turns['floor'] / turns['no DDP']:.2f}x the step without DDP")


def without_all_reduce(step):
    """`step` (a DDP training step) with mt.distributed.all_reduce replaced by a no-op whose
    work handle is already complete: what DDP costs besides the communication."""
    import minitorch.distributed as dist

    class Done:
        def wait(self, timeout=None):
            return True

        def is_completed(self):
            return True

    def skipped(tensor, op=None, group=None, async_op=False):
        return Done() if async_op else None

    def run():
        real, dist.all_reduce = dist.all_reduce, skipped
        try:
            step()
        finally:
            dist.all_reduce = real
    return run


def bench_torch_ddp(args, comm, say):
    """torch.nn.parallel.DistributedDataParallel over gloo on the same models and batch."""
    import socket
    import torch
    import torch.distributed as tdist
    torch.set_num_threads(1)
    port = None
    if comm.Get_rank() == 0:
        with socket.socket() as probe:     # a free port for gloo's TCP rendezvous
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(comm.bcast(port)))
    tdist.init_process_group("gloo", rank=comm.Get_rank(), world_size=comm.Get_size())
    bench_ddp(args, torch, comm, say, title=f"torch {torch.__version__}, gloo")
    tdist.destroy_process_group()


def alternate(comm, contenders, loops, rounds):
    """{name: best seconds per call}, every rank running the same loop counts; a round's time
    is its slowest rank's."""
    from mpi4py import MPI
    for fn in contenders.values():
        fn()
    best = {name: float("inf") for name in contenders}
    for _ in range(rounds):
        for name, fn in contenders.items():
            comm.Barrier()
            start = time.perf_counter()
            for _ in range(loops):
                fn()
            elapsed = comm.allreduce((time.perf_counter() - start) / loops, op=MPI.MAX)
            best[name] = min(best[name], elapsed)
    return best


def in_turns(comm, contenders, steps):
    """{name: median seconds of one call}: the contenders take single steps in turns, each
    after a barrier, a step's time being its slowest rank's."""
    from mpi4py import MPI
    times = np.zeros((steps, len(contenders)))
    for i in range(steps):
        for j, fn in enumerate(contenders.values()):
            comm.Barrier()
            start = time.perf_counter()
            fn()
            times[i, j] = time.perf_counter() - start
    slowest = np.empty_like(times)
    comm.Allreduce(times, slowest, op=MPI.MAX)
    return {name: float(np.median(slowest[:, j])) for j, name in enumerate(contenders)}


def training_step(mt, kind, ddp, comm=None):
    """One step of the model on `mt`: minitorch, or torch itself (the same names). With an MPI
    communicator `comm` (and no DDP), the step ends with the gradients averaged over the ranks
    by bare mpi4py calls: DDP's communication without DDP."""
    nn, F = mt.nn, mt.nn.functional
    mt.manual_seed(0)
    if kind == "mlp":
        model = nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
        optimizer = mt.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    else:
        model = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Flatten(), nn.Linear(32 * 7 * 7, 10))
        optimizer = mt.optim.Adam(model.parameters(), lr=1e-3)
    net = nn.parallel.DistributedDataParallel(model) if ddp else model
    images, labels = mt.randn(128, 1, 28, 28), mt.randint(0, 10, (128,))

    finish = (lambda: None) if comm is None else bare_all_reduce(mt, model, comm)

    def step():
        optimizer.zero_grad()
        F.cross_entropy(net(images), labels).backward()
        finish()
        optimizer.step()
    return step


def bare_all_reduce(mt, model, comm):
    """After backward: each .grad divided by the world size and all-reduced in place, one
    blocking mpi4py call per parameter on its numpy buffer (no buckets, hooks or copies)."""
    from mpi4py import MPI
    params = list(model.parameters())
    scale = 1.0 / comm.Get_size()

    def finish():
        with mt.no_grad():
            for p in params:
                p.grad.mul_(scale)
                comm.Allreduce(MPI.IN_PLACE, p.grad._data.flat())
    return finish


def bus_bytes(nbytes, world):
    """Bytes each rank moves in a ring all-reduce (nccl-tests' bus bandwidth convention)."""
    return nbytes * 2 * (world - 1) / world


def human(nbytes):
    for unit in ("B", "KB", "MB"):
        if nbytes < 1024:
            return f"{nbytes} {unit}"
        nbytes //= 1024
    return f"{nbytes} GB"


if __name__ == "__main__":
    main()
