"""Training-step time of small, realistic models: minitorch vs torch on the CPU, same weights and
data, at 1 and 2 threads. Prints the median step time of each library, their ratio
(minitorch/torch: lower is better, 1.00x = torch's speed) and the largest relative difference
between the two libraries' losses over the timed steps (float32; the runs stay in step because
both train on the same batches from the same weights).

Every model is written once against the shared API (`lib.nn`, `lib.optim`): built in torch,
its state_dict copied into ours (as tests/torch_parity.py does), then both train in alternation,
one step each, so that a noisy machine slows both alike; the median of the timed steps (after
warm-up) is compared. Each step starts after a pause (--pause, 15 ms): an OpenMP runtime's
workers spin for 8-10 ms after its last parallel region before they sleep (measured here: a
library's 2-thread step, then an idle 30 ms that still used 7-9 ms of CPU; none after a 10 ms
pause), and in alternation the other library's spinning worker would take the second core from
this step: an artifact of two libraries in one process that a training run never meets.

  python bench/workloads.py                 # every workload, 1 and 2 threads (a few minutes)
  python bench/workloads.py --quick         # fewer steps, 1 thread
  python bench/workloads.py --only gpt lstm_lm --threads 1
  python bench/workloads.py --profile lstm_lm   # cProfile of our steps: where the time goes
"""
import argparse
import cProfile
import os
import pstats
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
if not os.environ.get("PYTHONPATH"):
    sys.path.insert(0, os.path.dirname(HERE))   # this checkout, unless PYTHONPATH names one

import minitorch as mt  # noqa: E402

VOCAB, SEQ, BATCH = 65, 32, 16     # a tiny-shakespeare-sized character vocabulary


# ---- models: each `build(lib)` returns (model, make_optimizer, step) -------------------------
# `step(lib, model, opt, batch)` runs one training step and returns the loss as a float.

def _lm_step(lib, model, opt, batch):
    x, y = batch
    opt.zero_grad()
    logits = model(x)
    loss = lib.nn.functional.cross_entropy(logits.reshape(-1, VOCAB), y.reshape(-1))
    loss.backward()
    opt.step()
    return loss.item()


def _recurrent_lm(cell):
    def build(lib):
        nn = lib.nn

        class RecurrentLM(nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = nn.Embedding(VOCAB, 64)
                self.rnn = getattr(nn, cell)(64, 128, num_layers=1, batch_first=True)
                self.head = nn.Linear(128, VOCAB)

            def forward(self, x):
                out, _ = self.rnn(self.embed(x))
                return self.head(out)
        return RecurrentLM(), lambda p: lib.optim.Adam(p, lr=2e-3), _lm_step
    return build


def _bigram(lib):
    nn = lib.nn

    class Bigram(nn.Module):
        def __init__(self):
            super().__init__()
            self.table = nn.Embedding(VOCAB, VOCAB)

        def forward(self, x):
            return self.table(x)
    return Bigram(), lambda p: lib.optim.AdamW(p, lr=1e-2), _lm_step


def _rnn_classifier(lib):
    nn = lib.nn

    class Classifier(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(VOCAB, 32)
            self.rnn = nn.RNN(32, 96, num_layers=2, batch_first=True)
            self.head = nn.Linear(96, 10)

        def forward(self, x):
            _, h = self.rnn(self.embed(x))
            return self.head(h[-1])

    def step(lib, model, opt, batch):
        x, y = batch
        opt.zero_grad()
        loss = lib.nn.functional.cross_entropy(model(x), y[:, 0] % 10)
        loss.backward()
        lib.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss.item()
    return Classifier(), lambda p: lib.optim.SGD(p, lr=0.05, momentum=0.9), step


def _gpt(lib):
    """Two pre-norm blocks of a char-level GPT (nanoGPT's layout) with hand-written causal
    attention: split heads, masked_fill through a tril mask, softmax, merge."""
    nn, F = lib.nn, lib.nn.functional
    d, heads = 64, 4

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = nn.Linear(d, 3 * d)
            self.proj = nn.Linear(d, d)
            self.register_buffer("mask", lib.tril(lib.ones(SEQ, SEQ)).view(1, 1, SEQ, SEQ))

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = self.qkv(x).split(d, dim=2)
            q, k, v = (t.view(B, T, heads, C // heads).transpose(1, 2) for t in (q, k, v))
            att = (q @ k.transpose(-2, -1)) * (1.0 / (C // heads) ** 0.5)
            att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf"))
            y = F.softmax(att, dim=-1) @ v
            return self.proj(y.transpose(1, 2).contiguous().view(B, T, C))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.attn = Attention()
            self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

        def forward(self, x):
            x = x + self.attn(self.ln1(x))
            return x + self.mlp(self.ln2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok, self.pos = nn.Embedding(VOCAB, d), nn.Embedding(SEQ, d)
            self.blocks = nn.Sequential(Block(), Block())
            self.ln = nn.LayerNorm(d)
            self.head = nn.Linear(d, VOCAB)

        def forward(self, x):
            positions = lib.arange(x.shape[1])
            return self.head(self.ln(self.blocks(self.tok(x) + self.pos(positions))))
    return GPT(), lambda p: lib.optim.AdamW(p, lr=1e-3), _lm_step


def _transformer_lm(lib):
    nn = lib.nn

    class TransformerLM(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(VOCAB, 64)
            layer = nn.TransformerEncoderLayer(64, 4, dim_feedforward=128, dropout=0.0,
                                               batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
            self.head = nn.Linear(64, VOCAB)
            self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(SEQ))

        def forward(self, x):
            return self.head(self.encoder(self.embed(x), mask=self.mask, is_causal=True))
    return TransformerLM(), lambda p: lib.optim.Adam(p, lr=1e-3), _lm_step


def _vae(lib):
    nn, F = lib.nn, lib.nn.functional

    class VAE(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = nn.Linear(784, 256)
            self.mu, self.logvar = nn.Linear(256, 16), nn.Linear(256, 16)
            self.dec = nn.Sequential(nn.Linear(16, 256), nn.ReLU(), nn.Linear(256, 784))

        def forward(self, x, eps):
            h = F.relu(self.enc(x))
            mu, logvar = self.mu(h), self.logvar(h)
            z = mu + eps * lib.exp(0.5 * logvar)     # eps is data: both libraries see the same
            return self.dec(z), mu, logvar

    def step(lib, model, opt, batch):
        x, eps = batch
        opt.zero_grad()
        logits, mu, logvar = model(x, eps)
        recon = F.binary_cross_entropy_with_logits(logits, x, reduction="sum")
        kl = -0.5 * lib.sum(1 + logvar - mu.pow(2) - logvar.exp())
        loss = (recon + kl) / x.shape[0]
        loss.backward()
        opt.step()
        return loss.item()
    return VAE(), lambda p: lib.optim.Adam(p, lr=1e-3), step


def _dcgan(lib):
    """A DCGAN-like pair on 16x16 images: ConvTranspose + BatchNorm generator, strided-conv +
    BatchNorm + LeakyReLU discriminator; one discriminator and one generator step."""
    nn, F = lib.nn, lib.nn.functional
    nz = 32

    class GAN(nn.Module):
        def __init__(self):
            super().__init__()
            self.G = nn.Sequential(
                nn.ConvTranspose2d(nz, 64, 4, 1, 0, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
                nn.ConvTranspose2d(64, 32, 4, 2, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU(),
                nn.ConvTranspose2d(32, 1, 4, 2, 1, bias=False), nn.Tanh())
            self.D = nn.Sequential(
                nn.Conv2d(1, 32, 4, 2, 1, bias=False), nn.LeakyReLU(0.2),
                nn.Conv2d(32, 64, 4, 2, 1, bias=False), nn.BatchNorm2d(64), nn.LeakyReLU(0.2),
                nn.Conv2d(64, 1, 4, 1, 0, bias=False))

    def make_opt(params):
        # one optimizer over both nets keeps the harness simple; zero_grad between the steps
        return lib.optim.Adam(params, lr=2e-4, betas=(0.5, 0.999))

    def step(lib, model, opt, batch):
        real, noise = batch
        ones = lib.ones(real.shape[0])
        zeros = lib.zeros(real.shape[0])
        opt.zero_grad()
        fake = model.G(noise)
        d_loss = F.binary_cross_entropy_with_logits(model.D(real).view(-1), ones) + \
            F.binary_cross_entropy_with_logits(model.D(fake.detach()).view(-1), zeros)
        d_loss.backward()
        opt.step()
        opt.zero_grad()
        g_loss = F.binary_cross_entropy_with_logits(model.D(fake).view(-1), ones)
        g_loss.backward()
        opt.step()
        return d_loss.item() + g_loss.item()
    return GAN(), make_opt, step


def _style_net(lib):
    """A fast-style-transfer-like residual net on 3x32x32: ReflectionPad + Conv + InstanceNorm,
    a strided conv down, two residual blocks, nearest upsampling and a PixelShuffle up."""
    nn, F = lib.nn, lib.nn.functional

    def conv(cin, cout, k, stride=1):
        return nn.Sequential(nn.ReflectionPad2d(k // 2), nn.Conv2d(cin, cout, k, stride))

    class Residual(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.body = nn.Sequential(conv(c, c, 3), nn.InstanceNorm2d(c, affine=True), nn.ReLU(),
                                      conv(c, c, 3), nn.InstanceNorm2d(c, affine=True))

        def forward(self, x):
            return x + self.body(x)

    class StyleNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(
                conv(3, 16, 5), nn.InstanceNorm2d(16, affine=True), nn.ReLU(),
                conv(16, 32, 3, 2), nn.InstanceNorm2d(32, affine=True), nn.ReLU(),
                Residual(32), Residual(32),
                nn.Upsample(scale_factor=2, mode="nearest"), conv(32, 16, 3),
                nn.InstanceNorm2d(16, affine=True), nn.ReLU(),
                conv(16, 12, 3), nn.PixelShuffle(2), nn.AvgPool2d(2))   # 12ch -> 3ch at 2x

        def forward(self, x):
            return self.net(x)

    def step(lib, model, opt, batch):
        x, target = batch
        opt.zero_grad()
        loss = F.mse_loss(model(x), target)
        loss.backward()
        opt.step()
        return loss.item()
    return StyleNet(), lambda p: lib.optim.Adam(p, lr=1e-3), step


def _lstm_cells(lib):
    """time_sequence_prediction's model (pytorch/examples): two LSTMCells and a Linear stepped
    over a sine wave one time step at a time in Python, an MSE loss on the next value."""
    nn = lib.nn

    class Sequence(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm1, self.lstm2 = nn.LSTMCell(1, 51), nn.LSTMCell(51, 51)
            self.linear = nn.Linear(51, 1)

        def forward(self, input):
            h1 = c1 = h2 = c2 = lib.zeros(input.size(0), 51)
            outputs = []
            for input_t in input.split(1, dim=1):
                h1, c1 = self.lstm1(input_t, (h1, c1))
                h2, c2 = self.lstm2(h1, (h2, c2))
                outputs.append(self.linear(h2))
            return lib.cat(outputs, dim=1)

    def step(lib, model, opt, batch):
        x, y = batch
        opt.zero_grad()
        loss = lib.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()
    return Sequence(), lambda p: lib.optim.Adam(p, lr=1e-2), step


# ---- data: a few fixed batches per workload (numpy, converted once per library) ---------------
def _tokens(rng):
    x = rng.integers(0, VOCAB, (BATCH, SEQ + 1))
    return x[:, :-1], x[:, 1:]


def _data(name, rng):
    if name in ("lstm_lm", "gru_lm", "bigram", "rnn_classifier", "gpt", "transformer_lm"):
        return _tokens(rng)
    if name == "vae":
        return (rng.random((64, 784), dtype=np.float32),
                rng.standard_normal((64, 16), dtype=np.float32))
    if name == "dcgan":
        return (rng.uniform(-1, 1, (32, 1, 16, 16)).astype(np.float32),
                rng.standard_normal((32, 32, 1, 1), dtype=np.float32))
    if name == "lstm_cells":
        waves = np.sin((np.arange(SEQ * 2 + 1) + rng.integers(-80, 80, (BATCH, 1))) / 20.0)
        return waves[:, :-1].astype(np.float32), waves[:, 1:].astype(np.float32)
    if name == "style_net":
        return (rng.random((4, 3, 32, 32), dtype=np.float32),
                rng.random((4, 3, 32, 32), dtype=np.float32))
    raise KeyError(name)


WORKLOADS = {
    "lstm_lm": _recurrent_lm("LSTM"),
    "gru_lm": _recurrent_lm("GRU"),
    "bigram": _bigram,
    "rnn_classifier": _rnn_classifier,
    "gpt": _gpt,
    "transformer_lm": _transformer_lm,
    "vae": _vae,
    "dcgan": _dcgan,
    "style_net": _style_net,
    "lstm_cells": _lstm_cells,
}


# ---- harness -----------------------------------------------------------------------------------
class Run:
    """One library's model, optimizer and batches for a workload."""

    def __init__(self, lib, name, torch_model, batches):
        model, make_opt, self.step_fn = WORKLOADS[name](lib)
        if lib is not mt:
            model = torch_model
        else:
            model.load_state_dict({k: mt.tensor(v.detach().numpy().copy())
                                   for k, v in torch_model.state_dict().items()})
        model.train()
        self.lib, self.model, self.opt = lib, model, make_opt(model.parameters())
        self.batches = [tuple(lib.tensor(a) for a in batch) for batch in batches]
        self.count = 0

    def step(self):
        batch = self.batches[self.count % len(self.batches)]
        self.count += 1
        start = time.perf_counter()
        loss = self.step_fn(self.lib, self.model, self.opt, batch)
        return time.perf_counter() - start, loss


def make_pair(torch, name, seed=0):
    torch.manual_seed(seed)
    torch_model, _, _ = WORKLOADS[name](torch)
    rng = np.random.default_rng(seed)
    batches = [_data(name, rng) for _ in range(4)]
    return Run(mt, name, torch_model, batches), Run(torch, name, torch_model, batches)


def measure(torch, name, threads, steps, warmup, pause=0.015):
    """Median step time of each library (alternating steps, each after `pause` seconds: see the
    module docstring) and the max relative loss diff."""
    mt.set_num_threads(threads)
    torch.set_num_threads(threads)
    ours, theirs = make_pair(torch, name)
    times = {"minitorch": [], "torch": []}
    worst = 0.0
    for i in range(warmup + steps):
        time.sleep(pause)
        t_ours, loss_ours = ours.step()
        time.sleep(pause)
        t_theirs, loss_theirs = theirs.step()
        worst = max(worst, abs(loss_ours - loss_theirs) / max(abs(loss_theirs), 1e-12))
        if i >= warmup:
            times["minitorch"].append(t_ours)
            times["torch"].append(t_theirs)
    return {k: statistics.median(v) for k, v in times.items()}, worst


def profile(torch, name, steps):
    """cProfile of our training steps: top functions by own time, and every kernel's calls per
    step (the backend functions in minitorch._cpu)."""
    mt.set_num_threads(1)
    torch.set_num_threads(1)
    ours, _ = make_pair(torch, name)
    for _ in range(2):
        ours.step()
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(steps):
        ours.step()
    profiler.disable()
    stats = pstats.Stats(profiler)
    total = stats.total_tt
    print(f"{name}: {steps} steps profiled, {total / steps * 1e3:.1f} ms per step under cProfile")
    rows = sorted(stats.stats.items(), key=lambda kv: kv[1][2], reverse=True)
    print(f"{'own ms/step':>12} {'cum ms/step':>12} {'calls/step':>11}  function")
    for (path, line, func), (cc, nc, tt, ct, _) in rows[:30]:
        where = f"{os.path.relpath(path, os.path.dirname(HERE))}:{line}" if path != "~" else ""
        print(f"{tt / steps * 1e3:12.2f} {ct / steps * 1e3:12.2f} {nc / steps:11.0f}  "
              f"{func} {where}")
    print("\n(the Cython kernels do not appear in cProfile: their time is the own time of the "
          "NDArray method calling them)\n")
    kernel_counts(ours, steps)


def kernel_counts(run, steps):
    """Each backend kernel's calls and wall time per step, counted by wrapping the CPU
    backend's functions for `steps` steps (no cProfile: its overhead would swamp them)."""
    from minitorch import _cpu
    from minitorch.backend import KERNEL_NAMES
    tally, originals = {}, {}

    def counting(name, fn):
        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                calls, seconds = tally.get(name, (0, 0.0))
                tally[name] = (calls + 1, seconds + time.perf_counter() - start)
        return wrapper
    # the backend contract's kernels and the CPU backend's own convolution GEMMs
    for name in (*KERNEL_NAMES, "conv_matmul", "conv_weight_matmul"):
        originals[name] = getattr(_cpu, name)
        setattr(_cpu, name, counting(name, originals[name]))
    try:
        total = sum(run.step()[0] for _ in range(steps))
    finally:
        for name, fn in originals.items():
            setattr(_cpu, name, fn)
    calls = sum(c for c, _ in tally.values())
    seconds = sum(s for _, s in tally.values())
    print(f"kernel calls per step: {calls / steps:.0f}, {seconds / steps * 1e3:.2f} ms in kernels "
          f"of a {total / steps * 1e3:.2f} ms step ({seconds / total:.0%})")
    for name, (c, s) in sorted(tally.items(), key=lambda kv: -kv[1][1]):
        print(f"{s / steps * 1e3:10.2f} ms {c / steps:8.0f} calls  {name}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", choices=sorted(WORKLOADS), help="these workloads")
    parser.add_argument("--threads", nargs="+", type=int, help="thread counts (default 1 2)")
    parser.add_argument("--steps", type=int, help="timed steps (default 15, --quick 5)")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--pause", type=float, default=15.0,
                        help="ms of idle before each step (default 15: see above)")
    parser.add_argument("--quick", action="store_true", help="5 steps, 1 thread")
    parser.add_argument("--profile", choices=sorted(WORKLOADS), help="cProfile one workload")
    args = parser.parse_args()
    try:
        import torch
    except ImportError:
        sys.exit("bench/workloads.py compares with torch, which is not installed")
    if args.profile:
        profile(torch, args.profile, args.steps or 5)
        return
    steps = args.steps or (5 if args.quick else 15)
    threads = args.threads or ([1] if args.quick else [1, 2])
    print(f"minitorch {mt.__file__}, torch {torch.__version__}; median of {steps} steps after "
          f"{args.warmup} warm-up, alternating libraries")
    print(f"{'workload':<16}{'threads':>8}{'minitorch ms':>14}{'torch ms':>10}{'ratio':>8}"
          f"{'max rel loss diff':>19}")
    ratios = {t: [] for t in threads}
    for name in args.only or WORKLOADS:
        for t in threads:
            medians, worst = measure(torch, name, t, steps, args.warmup, args.pause / 1e3)
            ratio = medians["minitorch"] / medians["torch"]
            ratios[t].append(ratio)
            print(f"{name:<16}{t:>8}{medians['minitorch'] * 1e3:14.2f}"
                  f"{medians['torch'] * 1e3:10.2f}{ratio:7.2f}x{worst:19.1e}", flush=True)
    for t in threads:
        print(f"median ratio at {t} thread{'s' if t > 1 else ''}: "
              f"{statistics.median(ratios[t]):.2f}x")


if __name__ == "__main__":
    main()
