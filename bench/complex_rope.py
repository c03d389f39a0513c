"""Complex numbers and llama's rotary embedding: minitorch vs PyTorch (when installed).

Times llama's apply_rotary_emb (view_as_complex, a broadcast complex product, view_as_real)
forward and forward + backward at a small llama shape, a complex64 product of 1M elements, and
fft / rfft of 4096-point rows (radix-2) and fft of 1000-point rows (Bluestein). Process CPU
time, best of several repeats, at the thread count both libraries are given (default 1).
Run: python bench/complex_rope.py [--threads N]
"""
import argparse
import os
import sys
import time
import timeit

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import try_import_torch  # noqa: E402

import minitorch as mt  # noqa: E402

torch = try_import_torch()


def per_call(fn, number):
    return min(timeit.repeat(fn, number=number, repeat=5, timer=time.process_time)) / number


def rope(lib):
    def apply_rotary_emb(xq, xk, freqs_cis):
        xq_ = lib.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
        xk_ = lib.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
        shape = [d if i == 1 or i == xq_.ndim - 1 else 1 for i, d in enumerate(xq_.shape)]
        freqs_cis = freqs_cis.view(*shape)
        xq_out = lib.view_as_real(xq_ * freqs_cis).flatten(3)
        xk_out = lib.view_as_real(xk_ * freqs_cis).flatten(3)
        return xq_out.type_as(xq), xk_out.type_as(xk)
    return apply_rotary_emb


def measure(lib, rng):
    batch, seq, heads, dim = 4, 256, 8, 64
    q = rng.standard_normal((batch, seq, heads, dim)).astype(np.float32)
    angles = rng.standard_normal((seq, dim // 2)).astype(np.float32)
    freqs = lib.polar(lib.ones(seq, dim // 2), lib.tensor(angles))
    apply = rope(lib)
    xq = lib.tensor(q, requires_grad=True)
    xk = lib.tensor(q, requires_grad=True)

    def forward():
        with lib.no_grad():
            apply(xq, xk, freqs)

    def forward_backward():
        a, b = apply(xq, xk, freqs)
        (a.sum() + b.sum()).backward()

    z = lib.tensor((rng.standard_normal(1 << 20) + 1j * rng.standard_normal(1 << 20))
                   .astype(np.complex64))
    pow2 = lib.tensor(rng.standard_normal((64, 4096)).astype(np.float32))
    other = lib.tensor(rng.standard_normal((16, 1000)).astype(np.float32))
    return {"rope forward (4x256x8x64, q and k)": per_call(forward, 20),
            "rope forward + backward": per_call(forward_backward, 10),
            "complex64 mul, 1M elements": per_call(lambda: z * z, 20),
            "fft 64 x 4096 (complex64)": per_call(lambda: lib.fft.fft(pow2), 10),
            "rfft 64 x 4096": per_call(lambda: lib.fft.rfft(pow2), 10),
            "fft 16 x 1000 (Bluestein)": per_call(lambda: lib.fft.fft(other), 5)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    mt.set_num_threads(args.threads)
    results = {"minitorch": measure(mt, np.random.default_rng(0))}
    if torch is not None:
        torch.set_num_threads(args.threads)
        results["torch"] = measure(torch, np.random.default_rng(0))
    names = list(results["minitorch"])
    print(f"{'':40s}" + "".join(f"{lib:>14s}" for lib in results))
    for name in names:
        print(f"{name:40s}" + "".join(f"{results[lib][name] * 1e3:11.3f} ms" for lib in results))


if __name__ == "__main__":
    main()
