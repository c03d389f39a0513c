"""One training step of a 50 000 x 128 embedding table looked up by 2048 random indices:
sparse gradients (Embedding(sparse=True)) with SparseAdam and SGD against dense gradients with
Adam and SGD, minitorch and torch (when installed). The sparse steps touch the looked-up rows
only, so their time follows the batch, not the table. Median of the steps after 5 warm-up ones.

Run: python bench/sparse_embedding_step.py [--steps 30] [--threads 2]
"""
import argparse
import time

import numpy as np

CASES = [(True, "SparseAdam"), (False, "Adam"), (True, "SGD"), (False, "SGD")]


def step_ms(lib, sparse, optimizer, steps, vocab=50000, dim=128, batch=2048):
    lib.manual_seed(0)
    emb = lib.nn.Embedding(vocab, dim, sparse=sparse)
    opt = getattr(lib.optim, optimizer)(emb.parameters(), lr=0.01)
    rng = np.random.RandomState(0)
    batches = [lib.tensor(rng.randint(0, vocab, batch)) for _ in range(steps)]
    times = []
    for indices in batches:
        start = time.perf_counter()
        opt.zero_grad()
        emb(indices).pow(2).sum().backward()
        opt.step()
        times.append(time.perf_counter() - start)
    return float(np.median(times[5:])) * 1e3


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    import minitorch
    libraries = [minitorch]
    minitorch.set_num_threads(args.threads)
    try:
        import torch
        torch.set_num_threads(args.threads)
        libraries.append(torch)
    except ImportError:
        pass
    for lib in libraries:
        for sparse, optimizer in CASES:
            kind = "sparse" if sparse else "dense"
            print(f"{lib.__name__:10s} {kind:6s} {optimizer:10s} "
                  f"{step_ms(lib, sparse, optimizer, args.steps):8.2f} ms/step")


if __name__ == "__main__":
    main()
