"""A tutorial-style PyTorch training script, written for torch and run unchanged on minitorch
by tests/test_script_alias.py (through a `torch` -> minitorch alias): argparse, device
selection through torch.accelerator, cudnn.benchmark, a DataLoader, a few epochs of SGD with a
step schedule (with --amp: under autocast with a GradScaler), a state_dict checkpoint, reloading
it into a fresh model, evaluation."""
import argparse
import os

import numpy as np
import torch
import torch.backends.cudnn as cudnn
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self, features, classes):
        super().__init__()
        self.fc1 = nn.Linear(features, 32)
        self.dropout = nn.Dropout(0.1)
        self.fc2 = nn.Linear(32, classes)

    def forward(self, x):
        if x.is_mps or x.is_xpu:            # device checks that real scripts make
            x = x.contiguous()
        x = self.dropout(F.relu(self.fc1(x)))
        return F.log_softmax(self.fc2(x), dim=1)


def blobs(n, features, classes, seed):
    """Gaussian clusters, one per class, as legacy typed tensors."""
    rng = np.random.default_rng(seed)
    centers = rng.normal(0, 3, (classes, features))
    labels = rng.integers(0, classes, n)
    points = centers[labels] + rng.normal(0, 1, (n, features))
    return torch.FloatTensor(points), torch.LongTensor(labels)


def train(model, device, loader, optimizer, epoch, log_interval, scaler=None):
    model.train()
    low = torch.bfloat16 if device.type == "cpu" else torch.float16
    for batch_idx, (data, target) in enumerate(loader):
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        with torch.autocast(device_type=device.type, dtype=low, enabled=scaler is not None):
            output = model(data)
            loss = F.nll_loss(output, target)
        if scaler is None:
            loss.backward()
            optimizer.step()
        else:
            assert output.dtype == low and loss.dtype == torch.float32
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            scaler.step(optimizer)
            scaler.update()
        if batch_idx % log_interval == 0:
            print(f"Train Epoch: {epoch} [{batch_idx * len(data)}/{len(loader.dataset)}]"
                  f"\tLoss: {loss.item():.6f}")


def evaluate(model, device, loader):
    model.eval()
    test_loss, correct = 0.0, 0
    with torch.no_grad():
        for data, target in loader:
            data, target = data.to(device), target.to(device)
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction="sum").item()
            pred = output.argmax(dim=1, keepdim=True)
            correct += pred.eq(target.view_as(pred)).sum().item()
    test_loss /= len(loader.dataset)
    return test_loss, correct / len(loader.dataset)


def main():
    parser = argparse.ArgumentParser(description="blob classifier")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--gamma", type=float, default=0.7)
    parser.add_argument("--no-accel", action="store_true")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--log-interval", type=int, default=5)
    parser.add_argument("--amp", action="store_true", help="autocast + GradScaler")
    parser.add_argument("--save-dir", required=True)
    args = parser.parse_args()

    use_accel = not args.no_accel and torch.accelerator.is_available()
    torch.manual_seed(args.seed)
    device = torch.accelerator.current_accelerator() if use_accel else torch.device("cpu")
    cudnn.benchmark = True
    print(f"device: {device}, torch module: {torch.__name__}, nn: {nn.__name__}")

    x, y = blobs(512, 8, 4, args.seed)
    train_loader = DataLoader(TensorDataset(x[:384], y[:384]), batch_size=args.batch_size,
                              shuffle=True)
    test_loader = DataLoader(TensorDataset(x[384:], y[384:]), batch_size=64)

    model = Net(8, 4).to(device)
    optimizer = optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    scheduler = StepLR(optimizer, step_size=1, gamma=args.gamma)
    scaler = torch.amp.GradScaler(device.type, init_scale=2.0 ** 10) if args.amp else None
    for epoch in range(1, args.epochs + 1):
        train(model, device, train_loader, optimizer, epoch, args.log_interval, scaler)
        loss, accuracy = evaluate(model, device, test_loader)
        print(f"Test set: Average loss: {loss:.4f}, Accuracy: {accuracy:.3f}")
        scheduler.step()

    path = os.path.join(args.save_dir, "blobs_model.pt")
    torch.save({"epoch": args.epochs, "model": model.state_dict(),
                "optimizer": optimizer.state_dict()}, path)
    stats_path = os.path.join(args.save_dir, "label_counts.pt")
    torch.save(np.bincount(y.numpy()), stats_path)          # a bare numpy array
    with torch.serialization.safe_globals([]):
        checkpoint = torch.load(path, map_location=device, weights_only=True)
    counts = torch.load(stats_path, weights_only=False)      # our own file: trusted
    restored = Net(8, 4).to(device)
    restored.load_state_dict(checkpoint["model"])
    _, reloaded_accuracy = evaluate(restored, device, test_loader)
    print(f"final accuracy {accuracy:.3f} reloaded {reloaded_accuracy:.3f} "
          f"counts {type(counts).__name__} {counts.tolist()}")

if __name__ == "__main__":
    main()
