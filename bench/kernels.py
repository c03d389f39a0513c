"""CPU kernel benchmark: minitorch vs numpy (and PyTorch when installed), float32, one run.

Prints throughput (higher is better) and the ratio minitorch/numpy for matmul (square, a
64-channel conv's few-row products, attention's products of head-split views), compact of a
permuted 4-D array, broadcast add, sums, softmax rows, topk, random draws and samplers (torch's
stream: the same values as torch; numpy's PCG64 Generator for reference).
Run: python bench/kernels.py
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import best_times, print_row, try_import_torch  # noqa: E402

from minitorch.ndarray import NDArray  # noqa: E402
from minitorch.opcodes import BinaryOp, ReduceOp  # noqa: E402

torch = try_import_torch()
rng = np.random.default_rng(0)


def contenders(ours, theirs, torch_fn=None):
    fns = {"minitorch": ours, "numpy": theirs}
    if torch is not None and torch_fn is not None:
        fns["torch"] = torch_fn
    return fns


def bench_matmul(m, k, n, transpose_a=False):
    a = rng.standard_normal((k, m) if transpose_a else (m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    x, y = NDArray.from_numpy(a), NDArray.from_numpy(b)
    if transpose_a:
        a, x = a.T, x.transpose(0, 1)
    out = np.empty((m, n), np.float32)
    fns = contenders(lambda: x.matmul(y), lambda: np.matmul(a, b, out=out),
                     (lambda ta=torch.from_numpy(np.ascontiguousarray(a)) if torch else None,
                      tb=torch.from_numpy(b) if torch else None: ta @ tb))
    times = best_times(fns, repeat=5 if m * n * k > 1e9 else 7)
    label = f"matmul {m}x{k} @ {k}x{n}" + (" (a.T)" if transpose_a else "")
    print_row(label, {name: 2 * m * n * k / t / 1e9 for name, t in times.items()}, "GFLOP/s")


def bench_head_views(batch, seq, heads, dim):
    """q @ k.T on the (batch, heads) views of one (batch, seq, 3·heads·dim) projection: two
    batch strides, read in place (numpy and torch get the same views)."""
    qkv = rng.standard_normal((batch, seq, 3, heads, dim), dtype=np.float32)
    q, k = qkv[:, :, 0].transpose(0, 2, 1, 3), qkv[:, :, 1].transpose(0, 2, 3, 1)
    x = NDArray.from_numpy(qkv.reshape(batch, seq, 3 * heads * dim))
    xq = x[:, :, :heads * dim].reshape((batch, seq, heads, dim)).permute((0, 2, 1, 3))
    xk = x[:, :, heads * dim:2 * heads * dim].reshape((batch, seq, heads, dim)).permute(
        (0, 2, 3, 1))
    tq, tk = (torch.from_numpy(q), torch.from_numpy(k)) if torch else (None, None)
    fns = contenders(lambda: xq.matmul(xk), lambda: np.matmul(q, k), lambda: tq @ tk)
    times = best_times(fns)
    flops = 2 * batch * heads * seq * seq * dim
    print_row(f"q @ k.T heads ({batch},{heads},{seq},{dim})",
              {name: flops / t / 1e9 for name, t in times.items()}, "GFLOP/s")


def bench_softmax(shape):
    a = rng.standard_normal(shape, dtype=np.float32)
    x = NDArray.from_numpy(a)
    ta = torch.from_numpy(a) if torch else None

    def composed():      # numpy's reference: max, exp, sum, divide
        e = np.exp(a - a.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)
    fns = contenders(lambda: x.softmax_last(False), composed, lambda: torch.softmax(ta, -1))
    times = best_times(fns)
    print_row(f"softmax rows {shape}", {k: a.nbytes / t / 1e9 for k, t in times.items()}, "GB/s")


def bench_compact(shape, order):
    a = rng.standard_normal(shape, dtype=np.float32)
    x = NDArray.from_numpy(a).permute(order)
    view = a.transpose(order)
    out = np.empty(view.shape, np.float32)
    ta = torch.from_numpy(a).permute(order) if torch else None
    fns = contenders(lambda: x.compact(), lambda: np.copyto(out, view),
                     lambda: ta.contiguous())
    times = best_times(fns)
    moved = 2 * a.nbytes
    print_row(f"compact {shape} permute{order}", {k: moved / t / 1e9 for k, t in times.items()},
              "GB/s")


def bench_broadcast_add(a_shape, b_shape):
    a = rng.standard_normal(a_shape, dtype=np.float32)
    b = rng.standard_normal(b_shape, dtype=np.float32)
    x, y = NDArray.from_numpy(a), NDArray.from_numpy(b)
    out = np.empty(np.broadcast_shapes(a_shape, b_shape), np.float32)
    ta, tb = (torch.from_numpy(a), torch.from_numpy(b)) if torch else (None, None)
    fns = contenders(lambda: x.binary(BinaryOp.ADD, y), lambda: np.add(a, b, out=out),
                     lambda: ta + tb)
    times = best_times(fns)
    moved = a.nbytes + b.nbytes + out.nbytes
    print_row(f"add {a_shape} + {b_shape}", {k: moved / t / 1e9 for k, t in times.items()}, "GB/s")


def bench_sum(shape, axis):
    a = rng.standard_normal(shape, dtype=np.float32)
    x = NDArray.from_numpy(a)
    ta = torch.from_numpy(a) if torch else None
    fns = contenders(lambda: x.reduce(ReduceOp.SUM, axis), lambda: a.sum(axis=axis),
                     lambda: ta.sum(dim=axis))
    times = best_times(fns)
    print_row(f"sum {shape} axis={axis}", {k: a.nbytes / t / 1e9 for k, t in times.items()},
              "GB/s")


def bench_draws(kind, n, dtype):
    """rand / randn of n values: torch's CPU stream rebuilt (minitorch) against numpy's own
    generator and torch itself, each drawing into a new array."""
    import minitorch as mt
    ours = {"rand": mt.rand, "randn": mt.randn}[kind]
    theirs = {"rand": rng.random, "randn": rng.standard_normal}[kind]
    fns = contenders(lambda: ours(n, dtype=getattr(mt, dtype)),
                     lambda: theirs(n, dtype=getattr(np, dtype)),
                     lambda: getattr(torch, kind)(n, dtype=getattr(torch, dtype)))
    times = best_times(fns)
    print_row(f"{kind} {n} {dtype}", {k: n / t / 1e6 for k, t in times.items()}, "M/s")


def bench_topk(shape, k):
    """topk of the last dim (an LM's top-k sampling: small k of a long row) against numpy's
    argpartition + sort of the k and torch.topk."""
    import minitorch as mt
    a = rng.standard_normal(shape, dtype=np.float32)
    ours, theirs = mt.tensor(a), torch.from_numpy(a) if torch else None

    def numpy_topk():
        part = np.argpartition(-a, k - 1, axis=-1)[..., :k]
        return np.take_along_axis(a, part, -1).sort(-1)
    fns = contenders(lambda: ours.topk(k), numpy_topk, lambda: theirs.topk(k))
    times = best_times(fns)
    print_row(f"topk {k} of {shape}", {k_: a.size / t / 1e6 for k_, t in times.items()},
              "M elements/s")


def bench_sampler(name, args, n, numpy_draw):
    """An in-place sampler of torch's (bernoulli_, exponential_, ...) filling n float32 values,
    against numpy's generator drawing the same distribution and torch's own sampler."""
    import minitorch as mt
    ours, theirs = mt.empty(n), torch.empty(n) if torch else None
    fns = contenders(lambda: getattr(ours, name)(*args), lambda: numpy_draw(n),
                     lambda: getattr(theirs, name)(*args))
    times = best_times(fns)
    print_row(f"{name} {n} float32", {k: n / t / 1e6 for k, t in times.items()}, "M/s")


def main():
    print(f"float32, {os.cpu_count()} CPU cores; higher is better; ratios are vs numpy"
          + ("" if torch else " (PyTorch not installed)"))
    for size in (256, 512, 1024, 2048):
        bench_matmul(size, size, size)
    bench_matmul(128, 784, 256)
    bench_matmul(784, 128, 256, transpose_a=True)
    bench_matmul(64, 512, 128)       # a 64-channel conv's products: B's panels read in place
    bench_matmul(64, 128, 512)
    bench_head_views(16, 32, 4, 16)
    bench_compact((64, 64, 64, 64), (0, 2, 3, 1))
    bench_compact((64, 64, 64, 64), (3, 2, 1, 0))
    bench_broadcast_add((64, 256, 256), (256,))
    bench_broadcast_add((256, 256, 64), (256, 1, 64))
    bench_sum((64, 512, 64), 1)
    bench_sum((4096, 1024), -1)
    bench_sum((10_000_000,), 0)
    bench_softmax((512, 256))
    bench_softmax((2048, 32))
    bench_topk((8, 50000), 50)
    bench_topk((1000, 100), 10)
    bench_draws("rand", 1 << 20, "float32")
    bench_draws("randn", 1 << 20, "float32")
    bench_draws("randn", 1 << 20, "float64")
    bench_sampler("bernoulli_", (0.7,), 1 << 20, lambda n: rng.random(n, np.float32) < 0.7)
    bench_sampler("exponential_", (1.0,), 1 << 20, lambda n: rng.standard_exponential(
        n, np.float32))


if __name__ == "__main__":
    main()
