"""Train the MNIST CNN (or MLP) data-parallel on N processes with DistributedDataParallel.

    python -m minitorch.distributed.run --nproc-per-node 2 examples/train_mnist_ddp.py
    mpiexec -n 2 python examples/train_mnist_ddp.py --model mlp --epochs 1   # the same, by hand

Each rank trains a replica on its DistributedSampler share of every epoch; DDP averages the
gradients, so the replicas stay identical and the run equals one process training on the global
batch (--batch-size per rank, times the number of ranks). Rank 0 prints progress, evaluates and
saves the checkpoint (the plain model's state_dict, loadable without DDP). --backend nccl with
--device cuda uses one GPU per rank (LOCAL_RANK).
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import minitorch as mt  # noqa: E402
import minitorch.distributed as dist  # noqa: E402
import minitorch.nn.functional as F  # noqa: E402
from minitorch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402
from minitorch.utils.data import DataLoader, Subset  # noqa: E402
from minitorch.utils.data.distributed import DistributedSampler  # noqa: E402
from train_mnist import build_model, evaluate  # noqa: E402


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=("mlp", "cnn"), default="cnn")
    parser.add_argument("--backend", choices=("mpi", "nccl"), default="mpi")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=64, help="per rank")
    parser.add_argument("--lr", type=float, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--out-dir", default="runs")
    parser.add_argument("--limit", type=int, default=None, help="first N training images only")
    return parser.parse_args(argv)


def train_epoch(model, loader, optimizer, device, rank, label):
    model.train()
    total, correct, seen, start = 0.0, 0, 0, time.perf_counter()
    for step, (images, labels) in enumerate(loader, 1):
        images, labels = images.to(device), labels.to(device)
        logits = model(images)
        loss = F.cross_entropy(logits, labels)
        optimizer.zero_grad()
        loss.backward()          # DDP averages the gradients across ranks during backward
        optimizer.step()
        total += loss.item() * labels.shape[0]
        correct += int((logits.argmax(1) == labels).sum().item())
        seen += labels.shape[0]
        if rank == 0 and (step % 50 == 0 or step == len(loader)):
            print(f"{label} step {step}/{len(loader)}  loss {total / seen:.4f}  "
                  f"acc {correct / seen:.4f}  {time.perf_counter() - start:.1f}s", flush=True)
    # every rank's running metrics, averaged: the epoch's figures over the global batch
    metrics = mt.tensor([total, float(correct), float(seen)], dtype=mt.float64)
    dist.all_reduce(metrics)
    total, correct, seen = metrics.tolist()
    return total / seen, correct / seen


def main(argv=None):
    args = parse_args(argv)
    dist.init_process_group(args.backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    device = mt.device(args.device)
    if device.type == "cuda":
        mt.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)) % mt.cuda.device_count())
        device = mt.device("cuda", mt.cuda.current_device())
    mt.manual_seed(args.seed)
    train_set = mt.datasets.MNIST(args.data_dir, train=True)
    if args.limit:
        train_set = Subset(train_set, range(args.limit))
    sampler = DistributedSampler(train_set, seed=args.seed)    # this rank's share
    loader = DataLoader(train_set, batch_size=args.batch_size, sampler=sampler)
    model = build_model(args.model).to(device)
    ddp = DDP(model)                 # rank 0's initial weights everywhere
    if args.model == "mlp":
        optimizer = mt.optim.SGD(ddp.parameters(), lr=args.lr or 0.1, momentum=0.9)
    else:
        optimizer = mt.optim.Adam(ddp.parameters(), lr=args.lr or 1e-3)
    if rank == 0:
        print(f"minitorch {mt.__version__}: {args.model} on {world} ranks ({args.backend}, "
              f"{device}), global batch {args.batch_size * world}, {len(train_set):,} images")
    for epoch in range(1, args.epochs + 1):
        sampler.set_epoch(epoch)     # a new shuffle each epoch, the same on every rank
        loss, acc = train_epoch(ddp, loader, optimizer, device, rank, f"epoch {epoch}")
        if rank == 0:
            test_loss, test_acc = evaluate(model, DataLoader(
                mt.datasets.MNIST(args.data_dir, train=False), batch_size=1000), device)
            print(f"epoch {epoch}: train loss {loss:.4f} acc {acc:.4f} | test loss "
                  f"{test_loss:.4f} acc {test_acc:.4f}", flush=True)
    if rank == 0:
        os.makedirs(args.out_dir, exist_ok=True)
        path = os.path.join(args.out_dir, f"mnist_{args.model}_ddp.safetensors")
        mt.save(model.state_dict(), path)
        print(f"checkpoint saved to {path}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
