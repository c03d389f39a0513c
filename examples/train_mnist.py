"""Train a CNN (or an MLP) on MNIST with minitorch — the same script runs on "cpu" and "cuda".

    python examples/train_mnist.py                      # CNN, 3 epochs, GPU if available
    python examples/train_mnist.py --model mlp --device cpu --epochs 1
    python examples/train_mnist.py --model mlp --cuda-graph   # each step one CUDA graph replay

MNIST is read from --data-dir, else $MINITORCH_DATA, else ~/.cache/minitorch (downloaded there
when missing). A checkpoint (safetensors layout) and a PNG of the loss/accuracy curves are
written to --out-dir.

--cuda-graph (MLP on a GPU): after three eager warm-up steps the whole training step (forward,
loss, backward, SGD step, zero_grad) is captured once into a CUDA graph on static batch tensors;
every later batch is copied into them and the graph replayed. The last, partial batch of an
epoch has another shape: it runs eagerly (on the same parameters and optimizer state).
"""
import argparse
import os
import sys
import time

import minitorch as mt
import minitorch.nn as nn
import minitorch.nn.functional as F
from minitorch.utils.data import DataLoader


def build_model(kind):
    if kind == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Dropout(0.25), nn.Linear(64 * 7 * 7, 128), nn.ReLU(),
        nn.Dropout(0.25), nn.Linear(128, 10))


class ProgressBar:
    """A one-line progress bar with running metrics (tqdm-like, no dependency)."""

    def __init__(self, total, label, width=30):
        self.total, self.label, self.width = total, label, width
        self.start = time.perf_counter()
        self.interactive = sys.stderr.isatty()

    def update(self, done, **metrics):
        if not self.interactive and done != self.total:
            return
        filled = int(self.width * done / max(self.total, 1))
        elapsed = time.perf_counter() - self.start
        rate = done / elapsed if elapsed > 0 else 0.0
        shown = "  ".join(f"{k} {v:.4f}" for k, v in metrics.items())
        bar = "█" * filled + "·" * (self.width - filled)
        sys.stderr.write(f"\r{self.label} |{bar}| {done}/{self.total} [{elapsed:5.1f}s, "
                         f"{rate:5.1f} it/s] {shown}")
        if done == self.total:
            sys.stderr.write("\n")
        sys.stderr.flush()


def training_step(model, optimizer, images, labels):
    """Forward, loss, backward and update; gradients zeroed in place (set_to_none=False), so a
    captured step keeps writing the same gradient tensors. Returns (logits, loss)."""
    logits = model(images)
    loss = F.cross_entropy(logits, labels)
    optimizer.zero_grad(set_to_none=False)
    loss.backward()
    optimizer.step()
    return logits, loss


class GraphedStep:
    """training_step as one CUDA graph on static batch tensors: `warmup` eager steps (kernels
    compiled, gradients and optimizer state made), then one capture; afterwards each batch is
    copied into the static tensors and the graph replayed. A batch of another shape (the last,
    partial one) runs eagerly."""

    def __init__(self, model, optimizer, warmup=3):
        self.model, self.optimizer, self.warmup = model, optimizer, warmup
        self.images = self.labels = self.graph = None
        self.outputs = None

    def __call__(self, images, labels):
        if self.images is None:
            self.images, self.labels = images.clone(), labels.clone()
        if images.shape != self.images.shape:
            return training_step(self.model, self.optimizer, images, labels)
        self.images.copy_(images)
        self.labels.copy_(labels)
        if self.graph is None:
            if self.warmup > 0:
                self.warmup -= 1
                return training_step(self.model, self.optimizer, self.images, self.labels)
            self.graph = mt.cuda.CUDAGraph()
            with mt.cuda.graph(self.graph):     # records the step; nothing runs yet
                self.outputs = training_step(self.model, self.optimizer, self.images,
                                             self.labels)
        self.graph.replay()
        return self.outputs


def train_epoch(model, loader, optimizer, scheduler, device, label, step_fn=None):
    model.train()
    bar = ProgressBar(len(loader), label)
    total_loss, correct, seen = 0.0, 0, 0
    step_fn = step_fn or (lambda x, y: training_step(model, optimizer, x, y))
    for step, (images, labels) in enumerate(loader, 1):
        images, labels = images.to(device), labels.to(device)
        logits, loss = step_fn(images, labels)
        if scheduler is not None:
            scheduler.step()
        total_loss += loss.item() * labels.shape[0]
        correct += int((logits.argmax(1) == labels).sum().item())
        seen += labels.shape[0]
        bar.update(step, loss=total_loss / seen, acc=correct / seen)
    return total_loss / seen, correct / seen


@mt.no_grad()
def evaluate(model, loader, device):
    model.eval()
    total_loss, correct, seen = 0.0, 0, 0
    for images, labels in loader:
        images, labels = images.to(device), labels.to(device)
        logits = model(images)
        total_loss += F.cross_entropy(logits, labels, reduction="sum").item()
        correct += int((logits.argmax(1) == labels).sum().item())
        seen += labels.shape[0]
    return total_loss / seen, correct / seen


def save_plot(history, path):
    """Loss and accuracy per epoch as a PNG; returns False when matplotlib is missing."""
    try:
        import matplotlib
        import matplotlib.ticker
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    epochs = range(1, len(history["train_loss"]) + 1)
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    left.plot(epochs, history["train_loss"], "o-", label="train")
    left.plot(epochs, history["test_loss"], "o-", label="test")
    left.set(xlabel="epoch", ylabel="cross-entropy", title="loss")
    right.plot(epochs, history["train_acc"], "o-", label="train")
    right.plot(epochs, history["test_acc"], "o-", label="test")
    right.set(xlabel="epoch", ylabel="accuracy", title="accuracy")
    for axis in (left, right):
        axis.legend()
        axis.grid(alpha=0.3)
        axis.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=("mlp", "cnn"), default="cnn")
    parser.add_argument("--device", default="cuda" if mt.cuda.is_available() else "cpu")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--lr", type=float, default=None,
                        help="peak learning rate (default: 3e-3 Adam for cnn, 0.1 SGD for mlp)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--out-dir", default="runs")
    parser.add_argument("--limit", type=int, default=None,
                        help="train on the first N images only (quick runs)")
    parser.add_argument("--cuda-graph", action="store_true",
                        help="replay each training step as one CUDA graph (MLP on a GPU)")
    args = parser.parse_args(argv)
    if args.cuda_graph and (args.model != "mlp" or mt.device(args.device).type != "cuda"):
        parser.error("--cuda-graph needs --model mlp on a cuda device: the CNN's dropout draws "
                     "its random numbers on the host and OneCycleLR changes the learning rate "
                     "every step, which a captured graph would freeze")
    return args


def main(argv=None):
    args = parse_args(argv)
    mt.manual_seed(args.seed)
    device = mt.device(args.device)
    train_set = mt.datasets.MNIST(args.data_dir, train=True)
    test_set = mt.datasets.MNIST(args.data_dir, train=False)
    if args.limit:
        train_set = mt.utils.data.Subset(train_set, range(args.limit))
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True,
                              generator=mt.Generator().manual_seed(args.seed))
    test_loader = DataLoader(test_set, batch_size=1000)
    model = build_model(args.model).to(device)
    if args.model == "mlp":
        optimizer = mt.optim.SGD(model.parameters(), lr=args.lr or 0.1, momentum=0.9)
        scheduler = None
    else:
        optimizer = mt.optim.Adam(model.parameters(), lr=args.lr or 3e-3)
        scheduler = mt.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=args.lr or 3e-3,
                                                     epochs=args.epochs,
                                                     steps_per_epoch=len(train_loader))
    print(f"minitorch {mt.__version__}: {args.model} on {device}, "
          f"{sum(p.numel() for p in model.parameters()):,} parameters, "
          f"{len(train_set):,} training / {len(test_set):,} test images")
    history = {key: [] for key in ("train_loss", "train_acc", "test_loss", "test_acc")}
    step_fn = GraphedStep(model, optimizer) if args.cuda_graph else None
    for epoch in range(1, args.epochs + 1):
        start = time.perf_counter()
        train_loss, train_acc = train_epoch(model, train_loader, optimizer, scheduler, device,
                                            f"epoch {epoch}/{args.epochs}", step_fn)
        test_loss, test_acc = evaluate(model, test_loader, device)
        for key, value in zip(history, (train_loss, train_acc, test_loss, test_acc)):
            history[key].append(value)
        print(f"epoch {epoch}: train loss {train_loss:.4f} acc {train_acc:.4f} | test loss "
              f"{test_loss:.4f} acc {test_acc:.4f} | {time.perf_counter() - start:.1f}s")
    os.makedirs(args.out_dir, exist_ok=True)
    checkpoint = os.path.join(args.out_dir, f"mnist_{args.model}.safetensors")
    mt.save(model.state_dict(), checkpoint)
    print(f"checkpoint saved to {checkpoint}")
    plot = os.path.join(args.out_dir, f"mnist_{args.model}.png")
    if save_plot(history, plot):
        print(f"training curves saved to {plot}")
    else:
        print("matplotlib is not installed (pip install 'minitorch[plot]'): no plot written")
    return history


if __name__ == "__main__":
    main()
