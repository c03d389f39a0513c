"""Forward + backward of single layers at training sizes, minitorch against torch in one run:
the ratio finds layers whose step costs far more than torch's (as the dense embedding
backward did before it was fixed: an out-of-place copy of the whole table). One step of each
library in turn, so that a noisy machine slows both alike; median of --steps after 3 warm-up.
Needs torch. Run: python bench/layer_scan.py [--threads 2] [--steps 15] [--only NAME]"""
import argparse
import time

import numpy as np


def cases(lib):
    nn, F = lib.nn, lib.nn.functional
    r = np.random.RandomState(0)
    T = lambda *s: lib.tensor(r.randn(*s).astype(np.float32), requires_grad=True)  # noqa
    x4 = lambda c=32, hw=32: T(32, c, hw, hw)                                       # noqa
    seq = lib.tensor(r.randint(0, 1000, (32, 64)))
    return {
        "Linear 512->512 (b 256)": (nn.Linear(512, 512), lambda: (T(256, 512),)),
        "Conv2d 32->64 3x3 (32x32)": (nn.Conv2d(32, 64, 3, padding=1), lambda: (x4(),)),
        "Conv2d 3->32 5x5 s2": (nn.Conv2d(3, 32, 5, stride=2, padding=2), lambda: (x4(3),)),
        "ConvTranspose2d 32->16 4x4 s2": (nn.ConvTranspose2d(32, 16, 4, 2, 1),
                                          lambda: (x4(32, 16),)),
        "BatchNorm2d 32 (train)": (nn.BatchNorm2d(32), lambda: (x4(),)),
        "GroupNorm 8x32": (nn.GroupNorm(8, 32), lambda: (x4(),)),
        "InstanceNorm2d 32": (nn.InstanceNorm2d(32, affine=True), lambda: (x4(),)),
        "LayerNorm 512 (256 rows)": (nn.LayerNorm(512), lambda: (T(256, 512),)),
        "MaxPool2d 2": (nn.MaxPool2d(2), lambda: (x4(),)),
        "AvgPool2d 2": (nn.AvgPool2d(2), lambda: (x4(),)),
        "AdaptiveAvgPool2d 1": (nn.AdaptiveAvgPool2d(1), lambda: (x4(),)),
        "Upsample nearest x2": (nn.Upsample(scale_factor=2), lambda: (x4(32, 16),)),
        "Upsample bilinear x2": (nn.Upsample(scale_factor=2, mode="bilinear"),
                                 lambda: (x4(32, 16),)),
        "Dropout 0.5": (nn.Dropout(0.5), lambda: (T(256, 1024),)),
        "GELU": (nn.GELU(), lambda: (T(256, 1024),)),
        "Softmax -1": (nn.Softmax(-1), lambda: (T(256, 1024),)),
        "Embedding 1000x128 (32x64)": (nn.Embedding(1000, 128), lambda: (seq,)),
        "LSTM 128->256 (32x64)": (nn.LSTM(128, 256, batch_first=True),
                                  lambda: (T(32, 64, 128),)),
        "GRU 128->256 (32x64)": (nn.GRU(128, 256, batch_first=True), lambda: (T(32, 64, 128),)),
        "MultiheadAttention 256/8 (32x64)": (nn.MultiheadAttention(256, 8, batch_first=True),
                                             lambda: (T(32, 64, 256),) * 3),
        "TransformerEncoderLayer 256/8": (nn.TransformerEncoderLayer(256, 8, 1024,
                                                                     batch_first=True),
                                          lambda: (T(32, 64, 256),)),
        "cross_entropy 1000 classes (256)": (
            lambda x, t: F.cross_entropy(x, t),
            lambda: (T(256, 1000), lib.tensor(r.randint(0, 1000, 256)))),
        "PixelShuffle 2": (nn.PixelShuffle(2), lambda: (x4(64, 16),)),
        "ReflectionPad2d 2": (nn.ReflectionPad2d(2), lambda: (x4(),)),
        "cat + chunk": (lambda x: lib.cat([x, x * 2], 1).chunk(4, 1)[1],
                        lambda: (x4(),)),
        "index (fancy) + sum": (lambda x: x[:, lib.tensor([0, 3, 5, 7])],
                                lambda: (T(4096, 64),)),
    }


def first_tensor(out):
    while isinstance(out, (tuple, list)):
        out = out[0]
    return out


def step_seconds(layer, inputs):
    start = time.perf_counter()
    first_tensor(layer(*inputs)).sum().backward()
    return time.perf_counter() - start


def time_pair(ours, theirs, steps):
    """Median ms of one forward + backward of each case, the libraries alternating."""
    inputs = ours[1](), theirs[1]()
    times = [], []
    for step in range(steps + 3):
        for side, (layer, _) in enumerate((ours, theirs)):
            times[side].append(step_seconds(layer, inputs[side]))
    return [float(np.median(t[3:])) * 1e3 for t in times]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=15)
    parser.add_argument("--only", default=None)
    args = parser.parse_args()
    import minitorch
    import torch
    minitorch.set_num_threads(args.threads)
    torch.set_num_threads(args.threads)
    ours, theirs = cases(minitorch), cases(torch)
    print(f"{'layer (fwd+bwd)':36s} {'minitorch':>10s} {'torch':>10s} {'ratio':>7s}")
    for name in ours:
        if args.only and args.only not in name:
            continue
        a, b = time_pair(ours[name], theirs[name], args.steps)
        print(f"{name:36s} {a:9.3f}ms {b:9.3f}ms {a / b:6.2f}x", flush=True)


if __name__ == "__main__":
    main()
