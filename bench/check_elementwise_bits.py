"""Bit-for-bit regression check of the CPU elementwise kernels across a refactor.

`python bench/check_elementwise_bits.py save /tmp/bits.json` evaluates every unary and binary
op the CPU backend accepts, for every storage dtype, on a fixed set of inputs (±0, ±inf, NaN,
subnormals, huge and tiny values, negative integers, domain ends, a log-spaced sweep and seeded
random values), plus softmax and the fused Adam step, and stores a SHA-256 of each output's bytes
and which (op, dtype) pairs the kernels refuse. `... compare /tmp/bits.json` recomputes and lists
every op whose bytes (or support) changed. Not a test: the hashes are specific to one machine
and compiler (libm, -march=native), so they are only compared within one build environment.
"""
import hashlib
import json
import pathlib
import sys

import numpy as np

# the checkout this script lives in, not whichever minitorch is installed
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from minitorch import _cpu  # noqa: E402
from minitorch.opcodes import BOOL_RESULT_BINARY, BOOL_RESULT_UNARY, BinaryOp, UnaryOp  # noqa: E402

DTYPES = ("float32", "float64", "int64", "uint8")


def float_values(dtype):
    """Edge values, a signed log sweep and seeded random values of one float dtype."""
    info = np.finfo(dtype)
    edges = [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, info.tiny, -info.tiny,
             info.tiny / 2, info.smallest_subnormal, -info.smallest_subnormal, info.max,
             -info.max, info.eps, 1 - info.eps, 1 + info.eps, 0.5, -0.5, 1.0, -1.0, 2.0, -2.0]
    edges += [float(k) for k in range(-30, 31)]                 # integers: gamma poles
    edges += [k + d for k in range(-10, 11) for d in (-1e-7, 1e-7, 0.25, 0.5)]
    edges += [5.0, 8.0, 9.0, 10.0, 26.0, 26.7, -26.7, 200.0, 0.7, -0.7, 1.1, 0.99999, -0.99999,
              0.135335283236612691, 1 - 0.135335283236612691, 1e17, 1e-5, 88.7, 89.0, 709.0,
              710.0, -745.0, -104.0]
    sweep = np.logspace(-45 if dtype == "float32" else -320, 38 if dtype == "float32" else 308,
                        4000)
    rng = np.random.default_rng(1234)
    randoms = np.concatenate([rng.standard_normal(3000) * 10, rng.uniform(-1, 1, 2000),
                              rng.uniform(0, 1, 2000), rng.standard_cauchy(1000)])
    values = np.concatenate([np.array(edges), sweep, -sweep, randoms])
    with np.errstate(over="ignore"):
        return values.astype(dtype)


def int_values():
    big = np.iinfo(np.int64)
    edges = [0, 1, -1, 2, -2, 63, 64, 65, -63, -64, big.max, big.min, big.max - 1, big.min + 1]
    rng = np.random.default_rng(99)
    return np.concatenate([np.array(edges, np.int64), np.arange(-40, 41, dtype=np.int64),
                           rng.integers(-1000, 1000, 300), rng.integers(big.min, big.max, 200)])


def inputs(dtype):
    if dtype == "int64":
        return int_values()
    if dtype == "uint8":
        return np.array([0, 1, 1, 0, 1], np.uint8)
    return float_values(dtype)


def pair_inputs(dtype):
    """All pairs of a smaller value set (operands a and b of equal length)."""
    values = inputs(dtype)
    small = values if dtype == "uint8" else values[:: max(1, len(values) // 300)]
    a, b = np.meshgrid(small, small, indexing="ij")
    return np.ascontiguousarray(a.ravel()), np.ascontiguousarray(b.ravel())


def digest(array):
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()


def run_unary(op, dtype):
    a = inputs(dtype)
    out = np.empty(a.size, np.uint8 if op in BOOL_RESULT_UNARY else a.dtype)
    try:
        _cpu.unary(int(op), a, out)
    except TypeError:
        return "unsupported"
    return digest(out)


def run_binary(op, dtype):
    a, b = pair_inputs(dtype)
    if op == BinaryOp.ZETA and dtype.startswith("float"):
        # zeta(integer x, q) with q a large negative non-integer loops about |q| times (Cephes'
        # `a <= 9` walk up from q, as in torch): keep q within reach
        b = np.where(b < -1000, b * 0 - 999.5, b)
    if op == BinaryOp.LCM and dtype == "int64":
        # lcm(INT64_MIN, INT64_MAX) divides INT64_MIN by a gcd of -1: SIGFPE (a known bug)
        a = np.where(a == np.iinfo(np.int64).min, a + 1, a)
    out = np.empty(a.size, np.uint8 if op in BOOL_RESULT_BINARY else a.dtype)
    try:
        with np.errstate(all="ignore"):
            _cpu.binary(int(op), a, b, out, (a.size,), (1,), 0, (1,), 0)
    except TypeError:
        return "unsupported"
    except RuntimeError as error:           # integer division by zero, negative powers
        return f"error: {error}"
    return digest(out)


def run_fused(dtype):
    """softmax / log_softmax forward and backward, and one Adam step with amsgrad."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal(64 * 33).astype(dtype)
    g = rng.standard_normal(64 * 33).astype(dtype)
    results = {}
    for log in (False, True):
        y = np.empty_like(x)
        _cpu.softmax_last(x, y, 33, log)
        o = np.empty_like(x)
        _cpu.softmax_backward_last(g, y, o, 33, log)
        results[f"softmax log={log}"] = digest(y) + digest(o)
    p, m, v, vmax = x.copy(), g * 0.1, np.abs(g), np.abs(x)
    _cpu.adam_step(p, g, m, v, vmax, 0.9, 0.999, 1e-8, 1e-3, 0.7, 0.01, 0.99, False)
    results["adam_step"] = digest(np.concatenate([p, m, v, vmax]))
    return results


def evaluate():
    results = {}
    for dtype in DTYPES:
        for op in UnaryOp:
            results[f"unary {op.name} {dtype}"] = run_unary(op, dtype)
        for op in BinaryOp:
            results[f"binary {op.name} {dtype}"] = run_binary(op, dtype)
        if dtype.startswith("float"):
            results.update({f"{k} {dtype}": v for k, v in run_fused(dtype).items()})
    return results


def main():
    mode, path = sys.argv[1], sys.argv[2]
    results = evaluate()
    print(f"minitorch from {_cpu.__file__}")
    if mode == "save":
        with open(path, "w") as f:
            json.dump(results, f, indent=0, sort_keys=True)
        print(f"saved {len(results)} results to {path}")
        return
    with open(path) as f:
        before = json.load(f)
    changed = sorted(k for k in set(before) | set(results) if before.get(k) != results.get(k))
    same = len(set(before) & set(results)) - len([k for k in changed if k in before])
    print(f"{same} results bit-identical, {len(changed)} changed or new")
    for key in changed:
        print(f"  {key}: {before.get(key)} -> {results.get(key)}")
    sys.exit(1 if any(k in before for k in changed) else 0)


if __name__ == "__main__":
    main()
