"""The GPU backend (minitorch/_gpu) against the CPU backend.

Three layers, so that most of it runs on machines without a GPU:
- host planning (launch.py): magic-number division, axis collapsing, geometry packing, kernel
  catalogue; plain Python, always run;
- every backend method driven through the CUDA emulator (tests/cuda_emulator): each launch's
  arguments are checked against the kernel's declared CUDA parameter list (a wrong type or order
  would silently misread on a GPU), then the kernel runs on the CPU (with g++) and every output
  is compared with the CPU backend's; plus the clear errors without CuPy / without a driver;
- the same scenarios on a real GPU; and Tensor-level round trips. These skip when
  mt.cuda.is_available() is False.
"""
import sys

import numpy as np
import pytest

import minitorch as mt
from minitorch import _cpu, _gpu
from minitorch._gpu import launch
from minitorch.opcodes import BinaryOp, ReduceOp, UnaryOp

import cuda_emulator
from cuda_emulator.declarations import kernel_signatures

CUDA = mt.cuda.is_available()
needs_gpu = pytest.mark.skipif(not CUDA, reason="no CUDA device (CuPy and a GPU are needed)")
DTYPES = [np.float32, np.float64, np.int64, np.uint8]


# ---------------------------------------------------------------------------------------------
# host planning

def test_magic_division_matches_integer_division():
    rng = np.random.default_rng(0)
    divisors = [1, 2, 3, 5, 7, 10, 12, 255, 256, 641, 2 ** 31 - 1, 2 ** 31, 2 ** 32 + 1,
                2 ** 62 + 12345, 2 ** 63 - 1] + [int(d) for d in rng.integers(1, 2 ** 40, 50)]
    for d in divisors:
        magic, shift = launch.magic_divider(d)
        samples = [0, 1, d - 1, d, d + 1, 2 * d - 1, 2 * d, 2 ** 63 - 1, 2 ** 63 - d]
        samples += [int(x) for x in rng.integers(0, 2 ** 63 - 1, 40, dtype=np.int64)]
        for n in samples:
            if 0 <= n < 2 ** 63:
                assert launch.magic_quotient(n, magic, shift) == n // d, (n, d)
    with pytest.raises(ValueError):
        launch.magic_divider(0)


def test_collapse_merges_contiguous_axes_like_the_cpu():
    shape = (2, 3, 4)
    assert launch.collapse(shape, [launch.contiguous(shape)]) == ((24,), [(1,)])
    # a permuted operand keeps its axes apart; size-1 axes vanish
    assert launch.collapse((2, 1, 3), [(3, 99, 1), (1, 7, 2)]) == ((2, 3), [(3, 1), (1, 2)])
    assert launch.collapse((1, 1), [(5, 6)]) == ((1,), [(0,)])
    # broadcast (stride 0) rows merge with each other but not with the moving axis
    assert launch.collapse((4, 5, 6), [(30, 6, 1), (0, 0, 1)]) == ((20, 6), [(6, 1), (0, 1)])


def test_geometry_packing_layout():
    packed = launch.pack_geometry((3, 5), [(5, 1), (0, 2)], 8)
    assert packed.shape == (1,) and packed.dtype.itemsize == (1 + 5 * 8) * 8
    words = packed.view(np.uint64)
    signed = words.view(np.int64)
    assert words[0] == 2
    assert list(words[1:3]) == [5, 3]                       # innermost first
    assert tuple(words[17:19]) == (launch.magic_divider(5)[1], launch.magic_divider(3)[1])
    assert list(signed[25:27]) == [1, 5] and list(signed[33:35]) == [2, 0]
    negative = launch.pack_geometry((4,), [(-3,)], 8).view(np.int64)
    assert negative[25] == -3
    with pytest.raises(ValueError):
        launch.pack_geometry(tuple([2] * 9), [tuple([1] * 9)], 8)
    assert launch.geometry_dims(8) == 8 and launch.geometry_dims(9) == 64


def test_injectivity_and_extent():
    assert launch.is_injective((3, 4), (4, 1))
    assert launch.is_injective((3, 4), (1, 3))
    assert not launch.is_injective((3, 4), (0, 1))          # broadcast
    assert not launch.is_injective((5, 4), (1, 1))          # overlapping windows
    assert launch.is_injective((3, 4), (-4, -1))
    assert launch.view_extent((3, 4), (-4, 2), 10) == (2, 16)


def test_opcode_prelude_is_generated_from_opcodes():
    prelude = launch.opcode_prelude()
    assert f"#define UNARY_EXP {int(UnaryOp.EXP)}\n" in prelude
    assert f"#define BINARY_SIGMOID_BACKWARD {int(BinaryOp.SIGMOID_BACKWARD)}\n" in prelude
    assert f"#define REDUCE_ARGMIN {int(ReduceOp.ARGMIN)}\n" in prelude
    for module in launch.MODULES:
        source = launch.module_source(module)
        assert source.startswith(prelude) and "#include" not in source


def test_catalogue_names_declared_kernels():
    """Every name expression the backend may request is a __global__ template in its module."""
    for module in launch.MODULES:
        declared = set(kernel_signatures(module))
        for key in launch.module_keys(module):
            for name in launch.name_expressions(module, key):
                assert name.partition("<")[0] in declared, (module, name)


def test_launch_shapes():
    assert launch.flat_grid(1) == 1 and launch.flat_grid(1025) == 2
    assert launch.row_threads(1) == 32 and launch.row_threads(100) == 128
    assert launch.row_threads(10 ** 6) == 256
    assert launch.column_block(3) == (4, 64) and launch.column_block(1000) == (32, 8)
    parts, chunk = launch.reduce_plan(1, 10 ** 6, 1, 132)
    assert parts > 1 and parts * chunk >= 10 ** 6 and (parts - 1) * chunk < 10 ** 6
    assert launch.reduce_plan(10 ** 4, 100, 1, 132) == (1, 100)
    assert launch.matmul_tiles(1, 4096, 4096, 132) == "large"
    assert launch.matmul_tiles(1, 64, 64, 132) == "small"


# ---------------------------------------------------------------------------------------------
# scenarios: each runs kernels on the CPU backend and on a GPU backend (real or fake)

class Harness:
    """Runs one kernel on both backends with the same inputs; compares outputs when real."""

    def __init__(self, gpu, compare):
        self.gpu, self.compare = gpu, compare

    def _both(self, args):
        cpu = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        dev = [self.gpu.from_host(a) if isinstance(a, np.ndarray) else a for a in args]
        return cpu, dev

    def run(self, kernel, *args, check=(), rtol=1e-6, atol=0.0):
        cpu, dev = self._both(args)
        getattr(_cpu, kernel)(*cpu)
        getattr(self.gpu, kernel)(*dev)
        if not self.compare:
            return
        for i in check:
            got, want = self.gpu.to_host(dev[i]), cpu[i]
            if want.dtype.kind == "f":
                np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True,
                                           err_msg=f"{kernel} output {i}")
            else:
                np.testing.assert_array_equal(got, want, err_msg=f"{kernel} output {i}")

    def raises(self, kernel, *args, same_message=True, computed=False):
        """Both backends refuse the call with the same exception (and message). `computed`:
        the GPU can only tell after running the kernel (not checkable with the fake)."""
        if computed and not self.compare:
            return
        cpu, dev = self._both(args)
        with pytest.raises(Exception) as cpu_error:
            getattr(_cpu, kernel)(*cpu)
        with pytest.raises(type(cpu_error.value)) as gpu_error:
            getattr(self.gpu, kernel)(*dev)
        if same_message:
            assert str(gpu_error.value) == str(cpu_error.value)


def values(n, dtype, seed=0, ties=False):
    rng = np.random.default_rng(seed)
    if dtype == np.uint8:
        return rng.integers(0, 2, n).astype(np.uint8)
    if dtype == np.int64:
        return rng.integers(-50 if not ties else 0, 50 if not ties else 4, n).astype(np.int64)
    x = rng.standard_normal(n)
    return (np.round(x, 1) if ties else x).astype(dtype)


def view_of(v, base):
    """(shape, strides, offset) in elements of the numpy view v into the 1-D buffer base."""
    item = v.itemsize
    offset = (v.__array_interface__["data"][0] - base.__array_interface__["data"][0]) // item
    return tuple(v.shape), tuple(s // item for s in v.strides), offset


def sample_views(base):
    """Views of a 2048-element buffer: permuted, stepped/flipped, broadcast, 0-d, empty,
    10 axes that do not collapse (the 64-axis kernels), overlapping windows."""
    s = np.lib.stride_tricks
    return [
        base[:720].reshape(6, 10, 12).transpose(2, 0, 1),
        base[:720].reshape(6, 10, 12)[1:5:2, ::-3, 2:],
        np.broadcast_to(base[3:15].reshape(1, 12), (7, 12)),
        base[5:6].reshape(()),
        base[:0],
        base[:1024].reshape((2,) * 10).transpose(tuple(range(9, -1, -1))),
        s.as_strided(base[2:], shape=(40, 6), strides=(base.itemsize, base.itemsize)),
        base[:1000],
    ]


def scenario_buffers(h):
    for n, value, dtype in ((5, 2.5, np.float32), (7, -3, np.int64), (4, True, np.uint8),
                            (3, 1.5, np.int64), (0, 1.0, np.float64)):
        got = h.gpu.full(n, value, np.dtype(dtype))
        if h.compare:
            np.testing.assert_array_equal(h.gpu.to_host(got), np.full(n, value, dtype))
    host = values(9, np.float64)
    if h.compare:
        np.testing.assert_array_equal(h.gpu.to_host(h.gpu.from_host(host)), host)
        assert h.gpu.empty(4, np.dtype(np.int64)).size == 4


def scenario_compact(h):
    for dtype in DTYPES:
        base = values(2048, dtype)
        for view in sample_views(base):
            shape, strides, offset = view_of(view, base)
            h.run("compact", base, np.zeros(view.size, dtype), shape, strides, offset, check=[1])
    h.raises("compact", np.zeros(4, np.float32), np.zeros(3, np.float32), (3,), (2,), 0,
             same_message=False)


def scenario_strided_set(h):
    for dtype in DTYPES:
        base = values(2048, dtype, seed=1)
        for view in sample_views(base):
            shape, strides, offset = view_of(view, base)
            src = values(view.size, dtype, seed=2)
            h.run("strided_set", src, base, shape, strides, offset, check=[1])
            h.run("strided_set", values(1, dtype, seed=3), base, shape, strides, offset,
                  check=[1])


def scenario_strided_add(h):
    for dtype in DTYPES:
        base = values(2048, dtype, seed=4)
        for view in sample_views(base):
            shape, strides, offset = view_of(view, base)
            src = values(view.size, dtype, seed=5)
            h.run("strided_add", src, base, shape, strides, offset, check=[1], rtol=1e-5,
                  atol=1e-5)


def scenario_cast(h):
    sources = {np.float32: np.array([-2.7, -0.5, -0.0, 0.0, 0.5, 3.9, 1e6], np.float32),
               np.float64: np.array([-2.7, -0.5, -0.0, 0.0, 0.5, 3.9, 1e15]),
               np.int64: np.array([-5, 0, 1, 2 ** 40, -(2 ** 53)], np.int64),
               np.uint8: np.array([0, 1, 1, 0], np.uint8)}
    for src_type, src in sources.items():
        for dst in DTYPES:
            h.run("cast", src, np.zeros(src.size, dst), check=[1])
    for src_type in (np.float32, np.float64):   # NaN and inf are truthy
        special = np.array([np.nan, np.inf, -np.inf, 0.0], src_type)
        h.run("cast", special, np.zeros(4, np.uint8), check=[1])
        h.run("cast", special, np.zeros(4, np.float64 if src_type == np.float32 else np.float32),
              check=[1])


SWEEP = np.array([-np.inf, -1e30, -20.0, -3.5, -2.5, -1.0, -0.5, -1e-8, -0.0, 0.0, 1e-8, 0.3,
                  0.5, 1.0, 1.5, 2.5, 3.0, 20.0, 88.0, 1e30, np.inf, np.nan])


def scenario_unary(h):
    for dtype in DTYPES:
        if dtype in (np.float32, np.float64):
            a = np.concatenate([SWEEP, values(200, np.float64, seed=6) * 4]).astype(dtype)
        else:
            a = values(64, dtype, seed=6)
        tol = dict(rtol=2e-6, atol=1e-7) if dtype == np.float32 else dict(rtol=1e-13,
                                                                          atol=1e-300)
        for op in UnaryOp:
            predicate = op in (UnaryOp.LOGICAL_NOT, UnaryOp.ISNAN, UnaryOp.ISINF,
                               UnaryOp.ISFINITE)
            out = np.zeros(a.size, np.uint8 if predicate else dtype)
            if _gpu.backend.unary_supported(op, _name(dtype)):
                h.run("unary", int(op), a, out, check=[2], **_unary_tolerance(op, dtype, tol))
            else:
                h.raises("unary", int(op), a, out)


def _unary_tolerance(op, dtype, tol):
    """GELU is x (1 + erf(x / √2)) / 2 on both backends, as torch computes it: for x < -2 the
    sum cancels, so the two erf implementations' last-bit differences near -1 come out as an
    absolute difference of up to |x| ulp(1) / 2 (1.3e-7 measured on the H200 at x ≈ -4)."""
    if op == UnaryOp.GELU and dtype == np.float32:
        return dict(tol, atol=1e-6)
    return tol


def _name(dtype):
    return _gpu.backend.DTYPE_NAMES[np.dtype(dtype)]


def scenario_binary(h):
    shape = (4, 3, 5)
    for dtype in DTYPES:
        if dtype in (np.float32, np.float64):
            a = np.concatenate([SWEEP[:15], values(45, np.float64, seed=7) * 3]).astype(dtype)
            b = np.concatenate([SWEEP[5:], values(10, np.float64, seed=8) * 3]).astype(dtype)
        else:
            a, b = values(60, dtype, seed=7), values(15, dtype, seed=8)
            if dtype == np.int64:
                b = np.where(b == 0, 3, b)
        tol = dict(rtol=2e-6, atol=1e-7) if dtype == np.float32 else dict(rtol=1e-13,
                                                                          atol=1e-300)
        # a is a (4, 3, 5) view permuted from (3, 5, 4) storage, b is (3, 5) broadcast over rows
        a_view = (1, 20, 4)
        for op in BinaryOp:
            if dtype == np.int64 and op == BinaryOp.POW:
                bb = np.abs(b) % 5
            else:
                bb = b
            predicate = BinaryOp.EQ <= op <= BinaryOp.LOGICAL_XOR
            out = np.zeros(60, np.uint8 if predicate else dtype)
            args = (int(op), a, bb, out, shape, a_view, 0, (0, 5, 1), 0)
            if _gpu.backend.binary_supported(op, _name(dtype)):
                h.run("binary", *args, check=[3], **tol)
            else:
                h.raises("binary", *args)
    ints = np.arange(-3, 3, dtype=np.int64)
    for op, divisor in ((BinaryOp.FLOOR_DIVIDE, 0), (BinaryOp.REMAINDER, 0), (BinaryOp.POW, -1)):
        h.raises("binary", int(op), ints, np.full(6, divisor, np.int64), np.zeros(6, np.int64),
                 (6,), (1,), 0, (1,), 0, computed=True)
    h.raises("binary", int(BinaryOp.ADD), np.zeros(3, np.float32), np.zeros(3, np.float64),
             np.zeros(3, np.float32), (3,), (1,), 0, (1,), 0)
    wide = tuple(range(9, -1, -1))                         # 10 axes: the 64-axis instances
    big = values(1024, np.float64, seed=9)
    strides = tuple(2 ** d for d in range(10))
    h.run("binary", int(BinaryOp.SUB), big, big, np.zeros(1024), (2,) * 10, strides, 0,
          tuple(2 ** d for d in wide), 0, check=[3], rtol=1e-15)
    h.run("binary", int(BinaryOp.MUL), np.array([2.0]), np.array([3.0]), np.zeros(1), (), (), 0,
          (), 0, check=[3])


def scenario_where(h):
    for dtype in DTYPES:
        cond = values(15, np.uint8, seed=10)
        a, b = values(60, dtype, seed=11), values(4, dtype, seed=12)
        h.run("where", cond, a, b, np.zeros(60, dtype), (4, 3, 5), (0, 5, 1), 0, (15, 5, 1), 0,
              (1, 0, 0), 0, check=[3])
    h.raises("where", np.zeros(3, np.float32), np.zeros(3, np.float32), np.zeros(3, np.float32),
             np.zeros(3, np.float32), (3,), (1,), 0, (1,), 0, (1,), 0)


REDUCE_SHAPES = [(3, 7, 1), (5, 300, 1), (1, 100000, 1), (2, 33, 5), (1, 50000, 3), (4, 1, 1),
                 (3, 7, 40), (2, 5000, 70)]


def scenario_reduce(h):
    for dtype in DTYPES:
        for m, n, inner in REDUCE_SHAPES:
            size = m * n * inner
            for op in ReduceOp:
                a = values(size, dtype, seed=13, ties=op in (ReduceOp.ARGMAX, ReduceOp.ARGMIN))
                if op == ReduceOp.PROD and dtype in (np.float32, np.float64):
                    a = (1 + 1e-3 * values(size, np.float64, seed=14)).astype(dtype)
                if dtype in (np.float32, np.float64) and size > 40 and op != ReduceOp.PROD:
                    a[[7, 29, size // 2]] = np.nan                  # NaN propagation / extreme
                arg = op in (ReduceOp.ARGMAX, ReduceOp.ARGMIN)
                out = np.zeros(m * inner, np.int64 if arg else dtype)
                if not _gpu.backend.reduce_supported(op, _name(dtype)):
                    h.raises("reduce_last", int(op), a, out, n, inner)
                    continue
                tol = 1e-4 if dtype == np.float32 else 1e-11
                if op == ReduceOp.PROD:
                    tol *= 10
                h.run("reduce_last", int(op), a, out, n, inner, check=[2], rtol=tol,
                      atol=tol * np.sqrt(n))
    h.run("reduce_last", int(ReduceOp.SUM), np.zeros(0, np.float32), np.ones(6, np.float32), 0,
          3, check=[2])
    h.run("reduce_last", int(ReduceOp.PROD), np.zeros(0, np.int64), np.zeros(4, np.int64), 0,
          1, check=[2])
    h.raises("reduce_last", int(ReduceOp.MAX), np.zeros(0, np.float32), np.ones(2, np.float32),
             0, 1)


def scenario_scan(h):
    for dtype in (np.float32, np.float64, np.int64):
        for m, n, inner in [(3, 7, 1), (2, 1000, 1), (2, 50, 6), (1, 1, 1), (40, 3, 1)]:
            for op in (ReduceOp.SUM, ReduceOp.PROD):
                a = values(m * n * inner, dtype, seed=15)
                if op == ReduceOp.PROD and dtype != np.int64:
                    a = (1 + 1e-3 * a).astype(dtype)
                tol = 1e-5 if dtype == np.float32 else 1e-12
                h.run("scan_last", int(op), a, np.zeros(a.size, dtype), n, inner, check=[2],
                      rtol=tol, atol=tol * np.sqrt(n))
    h.raises("scan_last", int(ReduceOp.SUM), np.zeros(3, np.uint8), np.zeros(3, np.uint8), 3, 1)


def scenario_softmax(h):
    for dtype in (np.float32, np.float64):
        tol = 1e-5 if dtype == np.float32 else 1e-12
        for m, n in [(3, 7), (2, 1000), (40, 1), (1, 33), (300, 10)]:
            a, g = values(m * n, dtype, seed=25), values(m * n, dtype, seed=26)
            for log in (False, True):
                h.run("softmax_last", a, np.zeros(m * n, dtype), n, log, check=[1], rtol=tol,
                      atol=tol)
                y = np.zeros(m * n, dtype)
                h.run("softmax_backward_last", g, a, y, n, log, check=[2], rtol=tol, atol=tol)
        h.run("softmax_last", np.zeros(0, dtype), np.zeros(0, dtype), 4, check=[1])
    h.raises("softmax_last", np.zeros(6, np.int64), np.zeros(6, np.int64), 3)
    h.raises("softmax_last", np.zeros(6, np.float32), np.zeros(6, np.float32), 4)


def scenario_norm(h):
    layouts = [(6, 10, 1, 1), (3, 300, 1, 1), (40, 33, 1, 2), (6, 10, 5, 3), (8, 7, 7, 4),
               (4, 3, 1, 2)]
    for dtype in (np.float32, np.float64):
        tol = 1e-5 if dtype == np.float32 else 1e-12
        for rows, n, inner, groups in layouts:
            count = groups * (n // inner)
            x, g = values(rows * n, dtype, seed=40), values(rows * n, dtype, seed=41)
            w, b = values(count, dtype, seed=42), values(count, dtype, seed=43)
            for weight, bias, rms in ((w, b, False), (None, None, False), (w, None, True)):
                mean, rstd = np.zeros(rows, dtype), np.zeros(rows, dtype)
                _cpu.norm_rows(x, weight, bias, np.zeros(rows * n, dtype), mean, rstd, n, inner,
                               groups, 1e-5, rms)
                h.run("norm_rows", x, weight, bias, np.zeros(rows * n, dtype),
                      np.zeros(rows, dtype), np.zeros(rows, dtype), n, inner, groups, 1e-5, rms,
                      check=[3, 4, 5], rtol=tol, atol=tol)
                h.run("norm_rows_backward", g, x, mean, rstd, weight, np.zeros(rows * n, dtype),
                      np.zeros(count, dtype), np.zeros(count, dtype), n, inner, groups, rms,
                      check=[5, 6, 7], rtol=tol, atol=tol)
        h.run("norm_rows", np.zeros(0, dtype), None, None, np.zeros(0, dtype), np.zeros(0, dtype),
              np.zeros(0, dtype), 4, check=[3])
    h.raises("norm_rows", np.zeros(6, np.int64), None, None, np.zeros(6, np.int64),
             np.zeros(2, np.int64), np.zeros(2, np.int64), 3)
    h.raises("norm_rows", np.zeros(6), None, None, np.zeros(6), np.zeros(2), np.zeros(2), 4)
    h.raises("norm_rows", np.zeros(6), np.zeros(2), None, np.zeros(6), np.zeros(2), np.zeros(2),
             3)
    h.raises("norm_rows_backward", np.zeros(6), np.zeros(6), np.zeros(2), np.zeros(2), None,
             np.zeros(6), np.zeros(3), None, 3)


def scenario_adam(h):
    for dtype in (np.float32, np.float64):
        tol = 1e-6 if dtype == np.float32 else 1e-14
        for n, amsgrad in ((1, False), (1000, True), (4099, False)):
            p, g = values(n, dtype, seed=27), values(n, dtype, seed=28)
            m, v = values(n, dtype, seed=29), np.abs(values(n, dtype, seed=30))
            top = np.abs(values(n, dtype, seed=31)) if amsgrad else None
            for decay, scale, maximize in ((0.0, 1.0, False), (0.1, 1.0, True),
                                           (0.0, 0.99, False)):
                h.run("adam_step", p, g, m, v, top, 0.9, 0.999, 1e-8, 0.01, 0.3, decay, scale,
                      maximize, check=[0, 2, 3] + ([4] if amsgrad else []), rtol=tol, atol=tol)
    h.raises("adam_step", np.zeros(3, np.int64), np.zeros(3, np.int64), np.zeros(3, np.int64),
             np.zeros(3, np.int64), None, 0.9, 0.999, 1e-8, 0.01, 0.3)
    h.raises("adam_step", np.zeros(3), np.zeros(4), np.zeros(3), np.zeros(3), None, 0.9, 0.999,
             1e-8, 0.01, 0.3, same_message=False)


def scenario_foreach(h):
    """Multi-tensor optimizer steps: the CPU's bits exactly (both round every operation on its
    own), over tensors of mixed sizes (one empty, one crossing blocks), uniform and per-tensor
    Adam step counts; bad lists fail alike before anything changes."""
    sizes = [1, 300, 0, 1100, 37]
    for dtype in (np.float32, np.float64):
        def bufs(seed, positive=False):
            return [np.abs(values(n, dtype, seed=seed + i)) if positive else
                    values(n, dtype, seed=seed + i) for i, n in enumerate(sizes)]

        def counters(start):
            return [np.array([float(start + i * (start > 1))], np.float32)
                    for i in range(len(sizes))]
        p, g, m = bufs(40), bufs(50), bufs(60)
        v, top = bufs(70, positive=True), bufs(80, positive=True)
        _foreach_both(h, "foreach_sgd", [p, g, m], [0], (0.05, 0.9, 0.3, 0.1, True, True, False))
        _foreach_both(h, "foreach_sgd", [p, g, m], [0], (0.05, 0.9, 0.0, 0.0, False, False, True))
        _foreach_both(h, "foreach_sgd", [p, g, None], [0], (0.05,))
        for steps in (counters(0), counters(3)):        # uniform, then per-tensor counts
            _foreach_both(h, "foreach_adam", [p, g, m, v, top, steps], [0, 2, 3, 4, 5],
                          (0.01, 0.9, 0.999, 1e-8, 0.1, False, True))
            _foreach_both(h, "foreach_adam", [p, g, m, v, None, steps], [0, 2, 3, 5],
                          (0.01, 0.3, 0.99, 1e-6, 0.1, True, False))
        _foreach_both(h, "foreach_adadelta", [p, g, v, top, counters(0)], [0, 2, 3, 4],
                      (1.0, 0.9, 1e-6, 0.1, True))
        _foreach_both(h, "foreach_rmsprop", [p, g, v, m, None, counters(0)], [0, 2, 3, 5],
                      (0.01, 0.99, 1e-8, 0.1, 0.9, False))
        _foreach_both(h, "foreach_rmsprop", [p, g, top, None, m, None], [0, 2, 4],
                      (0.01, 0.3, 1e-8, 0.0, 0.0, True))
        _foreach_both(h, "foreach_rmsprop", [p, g, top, v, m, None], [0, 2, 3, 4],
                      (0.01, 0.9, 1e-8, 0.0, 0.5, False))
    one = [np.zeros(3)]
    for args in ([[np.zeros(3, np.int64)], [np.zeros(3, np.int64)], None, 0.1],
                 [one, [np.zeros(4)], None, 0.1],
                 [one, [np.zeros(3, np.float32)], None, 0.1],
                 [one, [], None, 0.1],
                 [one, [None], None, 0.1]):
        _foreach_raises(h, "foreach_sgd", args)
    _foreach_raises(h, "foreach_adam", [one, one, one, one, None, [], 0.1, 0.9, 0.99, 1e-8])
    _foreach_raises(h, "foreach_adam", [one, one, one, one, None, [np.zeros(2, np.float32)],
                                        0.1, 0.9, 0.99, 1e-8])


def _foreach_both(h, kernel, slots, written, scalars):
    """Run a foreach kernel on copies of the host lists on both backends (None stays None; step
    counters, the float32 one-element slot after the buffers, stay on the host) and compare the
    written slots bit for bit."""
    def copies(device):
        return [None if slot is None else
                [h.gpu.from_host(a) if device and not _is_counter(kernel, i, slot) else a.copy()
                 for a in slot] for i, slot in enumerate(slots)]
    cpu, dev = copies(False), copies(True)
    getattr(_cpu, kernel)(*cpu, *scalars)
    getattr(h.gpu, kernel)(*dev, *scalars)
    if not h.compare:
        return
    for i in written:
        for k, (want, got) in enumerate(zip(cpu[i], dev[i])):
            got = got if isinstance(got, np.ndarray) else h.gpu.to_host(got)
            np.testing.assert_array_equal(got, want, err_msg=f"{kernel} slot {i} tensor {k}")


def _is_counter(kernel, index, slot):
    return kernel != "foreach_sgd" and index == {"foreach_adam": 5, "foreach_adadelta": 4,
                                                 "foreach_rmsprop": 5}[kernel]


def _foreach_raises(h, kernel, args):
    """Both backends refuse the lists with the same exception and message."""
    dev = [[h.gpu.from_host(a) if isinstance(a, np.ndarray) else a for a in arg]
           if isinstance(arg, list) else arg for arg in args]
    with pytest.raises(Exception) as cpu_error:
        getattr(_cpu, kernel)(*args)
    with pytest.raises(type(cpu_error.value)) as gpu_error:
        getattr(h.gpu, kernel)(*dev)
    assert str(gpu_error.value) == str(cpu_error.value)


MATMUL_SHAPES = [(1, 1, 1, 1), (1, 7, 5, 3), (2, 64, 64, 64), (1, 127, 129, 65),
                 (1, 130, 257, 9), (3, 33, 1, 200), (3, 520, 1290, 33)]


def scenario_matmul(h):
    for dtype in (np.float32, np.float64):
        tol = 1e-4 if dtype == np.float32 else 1e-12
        for batch, m, n, k in MATMUL_SHAPES:
            a, b = values(batch * m * k, dtype, seed=16), values(batch * k * n, dtype, seed=17)
            out = np.zeros(batch * m * n, dtype)
            h.run("matmul", a, b, out, batch, m, n, k, check=[2], rtol=tol,
                  atol=tol * np.sqrt(k))
            # a transposed (stored k x m), b's batch broadcast (stride 0) and offset by 3
            bt = values(3 + k * n, dtype, seed=18)
            h.run("matmul", a, bt, out, batch, m, n, k, (m * k, 1, m), 0, (0, n, 1), 3,
                  check=[2], rtol=tol, atol=tol * np.sqrt(k))
        h.run("matmul", np.zeros(0, dtype), np.zeros(0, dtype), np.ones(6, dtype), 2, 1, 3, 0,
              check=[2])
        # the epilogue: a column bias (Linear) with relu, a row bias (conv) alone, relu alone,
        # through both kernels (float4 sgemm for the aligned float32 shapes) and k = 0
        for batch, m, n, k in MATMUL_SHAPES[1:5] + [(2, 3, 5, 0)]:
            a, b = values(batch * m * k, dtype, seed=19), values(batch * k * n, dtype, seed=20)
            out = np.zeros(batch * m * n, dtype)
            bias = values(max(m, n) + 2, dtype, seed=21)
            for epilogue in ((bias, 1, (0, 1), True), (bias, 2, (1, 0), False),
                             (None, 0, (0, 1), True)):
                h.run("matmul", a, b, out, batch, m, n, k, None, 0, None, 0, *epilogue,
                      check=[2], rtol=tol, atol=tol * np.sqrt(k))
    h.raises("matmul", np.zeros(4, np.int64), np.zeros(4, np.int64), np.zeros(4, np.int64), 1,
             2, 2, 2)


def scenario_attention(h):
    rng = np.random.default_rng(32)
    planes, heads = 4, 2                        # planes = batch 2 × heads 2
    for dtype in (np.float32, np.float64):
        tol = 2e-5 if dtype == np.float32 else 1e-12
        for length, source, dim, dim_v, case in (
                (5, 7, 3, 4, "plain"), (70, 37, 8, 5, "causal"), (9, 11, 4, 2, "bool"),
                (9, 11, 4, 2, "float"), (6, 8, 3, 3, "keep"), (6, 8, 3, 3, "views")):
            q = values(planes * length * dim, dtype, 33)
            k = values(planes * source * dim, dtype, 34)
            v = values(planes * source * dim_v, dtype, 35)
            g = values(planes * length * dim_v, dtype, 36)
            q_view = ([p * length * dim for p in range(planes)], dim)
            k_view = ([p * source * dim for p in range(planes)], dim)
            v_view = ([p * source * dim_v for p in range(planes)], dim_v)
            g_view = ([p * length * dim_v for p in range(planes)], dim_v)
            mask = mask_view = keep = None
            if case == "bool":                  # one (L, S) mask for every plane, a dead row
                mask = (rng.random(length * source) > 0.4).astype(np.uint8)
                mask[source:2 * source] = 0
                mask_view = ([0] * planes, source, 1)
            if case == "float":                 # a per-batch column mask broadcast over rows
                mask = values(2 * source, dtype, 37)
                mask[3] = -np.inf
                mask_view = ([(p // heads) * source for p in range(planes)], 0, 1)
            if case == "keep":
                keep = (rng.random(planes * length * source) > 0.3).astype(np.uint8)
            options = (case == "causal", mask, mask_view, keep, 1 / 0.7)
            if case == "views":                 # q read with a wider row stride, k/v heads shared
                q = values(planes * length * 2 * dim, dtype, 38)
                q_view = ([p * dim for p in range(planes)], planes * 2 * dim)
                k_view = ([(p // heads) * source * dim for p in range(planes)], dim)
                v_view = ([(p // heads) * source * dim_v for p in range(planes)], dim_v)
            sizes = (planes, length, source, dim, dim_v)
            out, lse = np.zeros(planes * length * dim_v, dtype), np.zeros(planes * length, dtype)
            h.run("attention_forward", q, k, v, out, lse, sizes, q_view, k_view, v_view, 0.4,
                  *options, check=[3, 4], rtol=tol, atol=tol)
            _cpu.attention_forward(q, k, v, out, lse, sizes, q_view, k_view, v_view, 0.4,
                                   *options)
            grads = [np.zeros(planes * n, dtype) for n in (length * dim, source * dim,
                                                            source * dim_v)]
            h.run("attention_backward", g, q, k, v, out, lse, *grads, sizes, g_view, q_view,
                  k_view, v_view, 0.4, *options, check=[6, 7, 8], rtol=tol, atol=tol)
    views = (([0], 2), ([0], 2), ([0], 2))
    h.raises("attention_forward", np.zeros(4, np.int64), np.zeros(4, np.int64),
             np.zeros(4, np.int64), np.zeros(4, np.int64), np.zeros(2, np.int64),
             (1, 2, 2, 2, 2), *views, 1.0)
    h.raises("attention_forward", np.zeros(4), np.zeros(4), np.zeros(4), np.zeros(4),
             np.zeros(2), (1, 2, 2, 2, 2), ([1], 2), ([0], 2), ([0], 2), 1.0)


def scenario_index(h):
    rng = np.random.default_rng(19)
    outer, dim, index_dim, inner = 3, 5, 4, 2
    for dtype in DTYPES:
        a = values(outer * dim * inner, dtype, seed=20)
        index = rng.integers(0, dim, outer * index_dim * inner).astype(np.int64)   # duplicates
        src = values(outer * index_dim * inner, dtype, seed=21)
        h.run("gather", a, index, np.zeros(index.size, dtype), outer, dim, index_dim, inner,
              check=[2])
        h.run("scatter", src, index, a, outer, dim, index_dim, inner, check=[2])
        h.run("scatter_add", src, index, a, outer, dim, index_dim, inner, check=[2], rtol=1e-6)
        rows = np.array([4, 0, 4, 2], np.int64)
        h.run("index_select", a, rows, np.zeros(outer * 4 * inner, dtype), outer, dim, 4, inner,
              check=[2])
        src_rows = values(outer * 4 * inner, dtype, seed=22)
        h.run("index_add", src_rows, rows, a, outer, dim, 4, inner, check=[2], rtol=1e-6)
        offsets = rng.integers(0, a.size, 17).astype(np.int64)
        h.run("take", a, offsets, np.zeros(17, dtype), check=[2])
        for accumulate in (False, True):
            h.run("put", values(17, dtype, seed=23), offsets, a, accumulate, check=[2],
                  rtol=1e-6)
            h.run("put", values(1, dtype, seed=24), offsets, a, accumulate, check=[2], rtol=1e-6)
    a = np.zeros(10, np.float32)
    for bad in (np.array([1, 10, 3], np.int64), np.array([0, -1, 12], np.int64)):
        h.raises("gather", a, bad, np.zeros(3, np.float32), 1, 10, 3, 1)
        h.raises("scatter_add", np.ones(3, np.float32), bad, a, 1, 10, 3, 1)
        h.raises("index_select", a, bad, np.zeros(3, np.float32), 1, 10, 3, 1)
        h.raises("take", a, bad, np.zeros(3, np.float32))
        h.raises("put", np.ones(3, np.float32), bad, a, True)
    h.raises("gather", a, np.zeros(3, np.int32), np.zeros(3, np.float32), 1, 10, 3, 1,
             same_message=False)


def scenario_grid(h):
    """Separable gathers over (planes, D, H, W) and their adjoint (repeated sources add)."""
    planes, in_size, out_size = 3, (2, 3, 4), (3, 2, 5)
    index = np.array([1, 0, 1, 2, 0, 3, 0, 0, 2, 1], np.int64)
    for dtype in DTYPES:
        x = values(planes * 24, dtype, seed=51)
        h.run("grid_gather", x, index, np.zeros(planes * 30, dtype), planes, in_size, out_size,
              check=[2])
    for dtype in (np.float32, np.float64):
        g = values(planes * 30, dtype, seed=52)
        tol = 1e-6 if dtype == np.float32 else 1e-14
        h.run("grid_scatter_add", g, index, np.full(planes * 24, 7, dtype), planes, in_size,
              out_size, check=[2], rtol=tol, atol=tol)
    h.run("grid_gather", np.zeros(0, np.float32), index, np.zeros(0, np.float32), 0, in_size,
          out_size, check=[2])
    bad = index.copy()
    bad[4] = 3                          # height has 3 rows
    h.raises("grid_gather", values(planes * 24, np.float32), bad,
             np.zeros(planes * 30, np.float32), planes, in_size, out_size, same_message=False)
    h.raises("grid_scatter_add", np.zeros(planes * 30, np.int64), index,
             np.zeros(planes * 24, np.int64), planes, in_size, out_size, same_message=False)


def scenario_resample(h):
    """Separable linear interpolation over (planes, D, H, W) — depth passed through (1 tap),
    height and width interpolated — and its adjoint (atomic adds on the GPU)."""
    planes, in_size, out_size, taps = 3, (2, 3, 4), (2, 5, 6), (1, 2, 2)
    index = np.array([1, 1, 0, 0] + [0, 1, 0, 1, 1, 2, 2, 2, 2, 2]
                     + [0, 1, 1, 2, 2, 3, 3, 3, 0, 0, 3, 3], np.int64)
    for dtype in (np.float32, np.float64):
        tol = 1e-6 if dtype == np.float32 else 1e-14
        weights = values(index.size, dtype, seed=53)
        x = values(planes * 24, dtype, seed=54)
        h.run("lerp_resample", x, index, weights, np.zeros(planes * 60, dtype), planes, in_size,
              out_size, taps, check=[3], rtol=tol, atol=tol)
        g = values(planes * 60, dtype, seed=55)
        h.run("lerp_resample_backward", g, index, weights, np.full(planes * 24, 7, dtype),
              planes, in_size, out_size, taps, check=[3], rtol=tol, atol=tol)
    bad = index.copy()
    bad[5] = 3                          # height has 3 rows
    h.raises("lerp_resample", values(planes * 24, np.float32), bad,
             values(index.size, np.float32), np.zeros(planes * 60, np.float32), planes, in_size,
             out_size, taps, same_message=False)
    h.raises("lerp_resample", np.zeros(planes * 24, np.int64), index,
             np.zeros(index.size, np.int64), np.zeros(planes * 60, np.int64), planes, in_size,
             out_size, taps)


def scenario_recurrent(h):
    """One forward and one backward time step of every mode, on rows [row0, row0 + rows) of a
    packed layout (total rows 7), with and without bias."""
    total, batch, rows, row0, hidden = 7, 3, 2, 4, 5
    for dtype in (np.float32, np.float64):
        tol = 1e-5 if dtype == np.float32 else 1e-13
        for mode, (gates, saved) in ((0, (1, 1)), (1, (1, 1)), (2, (4, 4)), (3, (3, 4))):
            lstm = mode == 2
            for with_bias in (True, False):
                gi = values(total * gates * hidden, dtype, seed=40)
                gh = values(batch * gates * hidden, dtype, seed=41)
                bias = values(gates * hidden, dtype, seed=42) if with_bias else None
                state = values(batch * hidden, dtype, seed=43)
                c = values(batch * hidden, dtype, seed=44) if lstm else None
                act = np.zeros(total * saved * hidden, dtype)
                hprev, out = np.zeros(total * hidden, dtype), np.zeros(total * hidden, dtype)
                cprev = np.zeros(total * hidden, dtype) if lstm else None
                h.run("recurrent_forward", mode, gi, gh, bias, state, c, act, hprev, cprev, out,
                      row0, rows, hidden, check=[4, 6, 7, 9] + ([5, 8] if lstm else []),
                      rtol=tol, atol=tol)
            act = values(total * saved * hidden, dtype, seed=45) * 0.9
            cprev = values(total * hidden, dtype, seed=46) if lstm else None
            carry = values(batch * hidden, dtype, seed=47) if mode >= 2 else None
            dgh = np.zeros(total * gates * hidden, dtype) if mode == 3 else None
            h.run("recurrent_backward", mode, values(total * hidden, dtype, seed=48),
                  values(batch * hidden, dtype, seed=49), carry, act,
                  values(total * hidden, dtype, seed=50), cprev,
                  np.zeros(total * gates * hidden, dtype), dgh, row0, rows, hidden,
                  check=[7] + ([3] if mode >= 2 else []) + ([8] if mode == 3 else []),
                  rtol=tol, atol=tol)
    small = np.zeros(4, np.float32)
    h.raises("recurrent_forward", 0, np.zeros(20, np.int64), small, None, small, None, small,
             small, None, small, 0, 1, 2)
    h.raises("recurrent_forward", 0, np.zeros(20, np.float32), np.zeros(1, np.float32), None,
             small, None, small, small, None, small, 0, 1, 2)
    h.raises("recurrent_backward", 2, small, small, None, np.zeros(8, np.float32), small,
             small, np.zeros(8, np.float32), None, 0, 1, 2, same_message=False)


SCENARIOS = [scenario_buffers, scenario_compact, scenario_strided_set, scenario_strided_add,
             scenario_cast, scenario_unary, scenario_binary, scenario_where, scenario_reduce,
             scenario_scan, scenario_softmax, scenario_norm, scenario_adam, scenario_foreach,
             scenario_matmul, scenario_attention, scenario_index, scenario_recurrent, scenario_grid,
             scenario_resample]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.__name__[9:])
def test_emulated_kernels_match_cpu(scenario):
    """Without a GPU: every backend method runs its host logic, each launch passes exactly the
    argument types, count and block shape its CUDA declaration expects, and (with g++) the
    kernels run in the emulator and give the CPU backend's results."""
    from minitorch._gpu.backend import GpuBackend
    emulated = cuda_emulator.cupy_module()
    scenario(Harness(GpuBackend(emulated, 0), compare=cuda_emulator.can_execute()))
    assert emulated.launches or scenario is scenario_buffers


def test_emulator_reports_kernel_misuse():
    """The emulator itself: a read past a buffer's end, and shuffles in a warp with exited
    lanes, come back as errors instead of wrong numbers."""
    if not cuda_emulator.can_execute():
        pytest.skip("g++ is needed to run kernels in the emulator")
    from minitorch._gpu.backend import GpuBackend
    emulated = cuda_emulator.cupy_module()
    gpu = GpuBackend(emulated, 0)
    a = gpu.from_host(np.arange(4, dtype=np.float32))
    out = gpu.empty(5, np.dtype(np.float32))
    fn = gpu._function("strided", "float32", "compact_kernel<float, 8>")
    geometry = launch.pack_geometry((5,), [(1,)], 8)
    with pytest.raises(cuda_emulator.KernelError, match="memory fault"):
        fn((1,), (256,), (a, np.int64(0), out, np.int64(5), geometry))
    umax = gpu._function("index", "check", "index_umax_kernel")
    with pytest.raises(cuda_emulator.KernelError, match="exited"):
        umax.run((1,), (48,), (gpu.from_host(np.arange(3)), np.int64(3),
                               emulated.zeros(1, np.uint64)))


# ---------------------------------------------------------------------------------------------
# the lean launch path: launch plans, device switching, the buffer cache

def _emulated_backend(device_count=1):
    from minitorch._gpu.backend import GpuBackend
    return GpuBackend(cuda_emulator.cupy_module(device_count=device_count, execute=False), 0,
                      device_count=device_count)


def test_launch_plans_keep_every_per_call_check():
    """A cached plan skips only what its key decides: lengths and offsets are checked on every
    call, with the CPU's messages, and unhashable shapes are planned afresh."""
    gpu, f32 = _emulated_backend(), np.float32
    a, b = np.arange(12, dtype=f32), np.ones(12, f32)
    first = [("binary", (int(BinaryOp.ADD), a, b, np.empty(12, f32), (3, 4), (4, 1), 0,
                         (4, 1), 0), None),
             ("unary", (int(UnaryOp.NEG), a, np.empty(12, f32)), None),
             ("compact", (a, np.empty(6, f32), (2, 3), (4, 1), 0), None),
             ("matmul", (a, b, np.empty(9, f32), 1, 3, 3, 4), None)]
    for kernel, args, _ in first:                        # plans made and cached
        getattr(gpu, kernel)(*cuda_emulator.on_device(gpu, args))
    assert len(gpu._plans) >= 4
    cuda_emulator.assert_same_kernel_errors(_cpu, gpu, [
        ("binary", (int(BinaryOp.ADD), a, b, np.empty(11, f32), (3, 4), (4, 1), 0, (4, 1), 0),
         ValueError),
        ("unary", (int(UnaryOp.NEG), a, np.empty(11, f32)), ValueError),
        ("compact", (a, np.empty(6, f32), (2, 3), (4, 1), 7), IndexError),
        ("matmul", (a, b, np.empty(8, f32), 1, 3, 3, 4), ValueError),
        ("matmul", (a[:11], b, np.empty(9, f32), 1, 3, 3, 4), ValueError)])
    for offset, b_length, reach in ((1, 12, "elements 1..12 of binary: a"),
                                    (0, 11, "elements 0..11 of binary: b")):
        args = (int(BinaryOp.ADD), a, b[:b_length], np.empty(12, f32), (3, 4), (4, 1), offset,
                (4, 1), 0)
        with pytest.raises(IndexError, match=reach):
            gpu.binary(*cuda_emulator.on_device(gpu, args))
    args = (int(BinaryOp.MUL), a, b, np.empty(12, f32), [3, 4], [4, 1], 0, [4, 1], 0)
    gpu.binary(*cuda_emulator.on_device(gpu, args))      # lists: no cache entry, same checks


def test_fill_values_are_cached_per_exact_value():
    """The numpy scalars fills write are reused, but -0.0 is not 0.0 and 2.7 into int64 is 2,
    as numpy converts them (the CPU's fill)."""
    if not cuda_emulator.can_execute():
        pytest.skip("g++ is needed to run kernels in the emulator")
    from minitorch._gpu.backend import GpuBackend
    gpu = GpuBackend(cuda_emulator.cupy_module(), 0)
    for value, dtype in ((0.0, np.float32), (-0.0, np.float32), (np.float64(-0.0), np.float64),
                         (0.0, np.float32), (2.7, np.int64), (True, np.uint8)):
        got = gpu.to_host(gpu.full(3, value, np.dtype(dtype)))
        expected = np.full(3, value, dtype)
        assert got.tobytes() == expected.tobytes(), (value, dtype)
    with pytest.raises(OverflowError):
        gpu.full(2, 300, np.dtype(np.uint8))


def test_one_gpu_is_never_switched_to():
    """With one GPU the backend calls its methods directly (it is every thread's current
    device); with several each call makes its own GPU current."""
    single, several = _emulated_backend(1), _emulated_backend(2)
    assert "binary" in vars(single) and "empty" in vars(single)
    assert "binary" not in vars(several)
    for gpu in (single, several):
        x = gpu.full(4, 2.5, np.dtype(np.float32))
        assert x.size == 4


class _Memory:
    """CuPy's memory object, held by every MemoryPointer into it."""


class _Pointer:
    def __init__(self, mem, ptr=0):
        self.mem, self.ptr = mem, ptr

    def __add__(self, offset):
        return _Pointer(self.mem, self.ptr + offset)


class _CupyLikeArray:
    """What the buffer cache relies on in CuPy: a slice holds its base array, and every view or
    export made from `data + offset` holds the memory."""

    def __init__(self, n, dtype, data=None, base=None):
        self.size, self.dtype, self.nbytes = n, np.dtype(dtype), n * np.dtype(dtype).itemsize
        self.data = _Pointer(_Memory()) if data is None else data
        self.base = base

    def __getitem__(self, key):
        start, stop, _ = key.indices(self.size)
        return _CupyLikeArray(stop - start, self.dtype, self.data + start, self)


def test_buffer_cache_hands_back_only_unreferenced_buffers():
    import gc
    from minitorch._gpu.buffers import MAX_PER_SIZE, BufferCache
    made = []
    cache = BufferCache(lambda n, dtype: made.append(n) or _CupyLikeArray(n, dtype))
    f32 = np.dtype(np.float32)
    a = cache.empty(8, f32)
    a_id = id(a)
    b = cache.empty(8, f32)
    assert b is not a                                    # a is alive
    del a
    gc.collect()
    c = cache.empty(8, f32)
    assert id(c) == a_id and cache.hits == 1             # freed: handed back
    assert cache.empty(9, f32) is not c and cache.empty(8, np.dtype(np.float64)) is not c
    view = c[2:5]                                        # a slice keeps its base busy
    c_id = id(c)
    del c
    fresh = [cache.empty(8, f32) for _ in range(3)]
    assert c_id not in map(id, fresh)
    del view, fresh
    exported = cache.empty(8, f32)                       # an export keeps the memory busy
    pointer = exported.data + 4
    del exported
    assert all(cache.empty(8, f32).data.mem is not pointer.mem for _ in range(3))
    del pointer, b
    before = len(made)
    for _ in range(3 * MAX_PER_SIZE):                    # at most MAX_PER_SIZE kept per size
        kept = [cache.empty(4, f32) for _ in range(MAX_PER_SIZE + 1)]
    assert len(cache._buckets[4, f32]) == MAX_PER_SIZE and len(made) - before > MAX_PER_SIZE
    del kept
    cache.clear()
    assert cache.bytes == 0 and not cache._buckets


def test_buffer_cache_skips_buffers_it_cannot_watch_and_retries_after_running_out():
    from minitorch._gpu.buffers import BufferCache
    plain = BufferCache(lambda n, dtype: np.empty(n, dtype))        # no data.mem: not cached
    plain.empty(4, np.dtype(np.float32))
    assert not plain._buckets
    calls = []

    def allocate(n, dtype):
        calls.append(n)
        if len(calls) == 2:
            raise MemoryError("out of memory")
        return _CupyLikeArray(n, dtype)
    cache = BufferCache(allocate)
    kept = cache.empty(4, np.dtype(np.float32))
    assert cache.empty(5, np.dtype(np.float32)).size == 5 and calls == [4, 5, 5]
    assert cache._buckets.get((4, np.dtype(np.float32))) is None and kept.size == 4


def test_empty_cache_without_a_memory_pool(monkeypatch, fresh_backends):
    monkeypatch.setitem(sys.modules, "cupy", cuda_emulator.cupy_module(execute=False))
    mt.cuda.empty_cache()                                # nothing made yet
    mt.zeros(3, device="cuda")
    mt.cuda.empty_cache()


# ---------------------------------------------------------------------------------------------
# device selection and the errors without CuPy / without a GPU

@pytest.fixture
def fresh_backends(monkeypatch):
    """Forget cached device backends (and device constants) for the duration of a test."""
    cuda_emulator.forget_backends(monkeypatch)


def test_without_cupy_cuda_raises_what_to_install(monkeypatch, fresh_backends):
    monkeypatch.setitem(sys.modules, "cupy", None)          # makes `import cupy` fail
    assert mt.cuda.is_available() is False
    assert mt.cuda.device_count() == 0
    mt.cuda.synchronize()                                    # a no-op without a GPU
    with pytest.raises(RuntimeError, match=r'pip install "minitorch\[cuda\]"'):
        mt.zeros(2, device="cuda")
    with pytest.raises(RuntimeError, match="CuPy"):
        mt.tensor([1.0, 2.0]).to("cuda")
    with pytest.raises(RuntimeError, match="cupy"):
        mt.cuda.get_device_name()
    assert mt.zeros(2).device == mt.device("cpu")            # the CPU is untouched


def test_without_driver_cuda_raises(monkeypatch, fresh_backends):
    monkeypatch.setitem(sys.modules, "cupy", cuda_emulator.cupy_module(device_count=None))
    assert mt.cuda.is_available() is False
    with pytest.raises(RuntimeError, match="Found no NVIDIA driver"):
        mt.ones(3, device="cuda")


def test_device_ordinal_and_names_with_fake_gpu(monkeypatch, fresh_backends):
    monkeypatch.setitem(sys.modules, "cupy", cuda_emulator.cupy_module(device_count=1))
    assert mt.cuda.is_available() and mt.cuda.device_count() == 1
    assert mt.cuda.current_device() == 0
    assert mt.cuda.get_device_name(0) == "minitorch CUDA emulator"
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        mt.zeros(2, device="cuda:3")
    x = mt.zeros(2, 3, device="cuda")                        # allocation and fill run
    assert x.device == mt.device("cuda:0") and x.is_cuda and x.shape == (2, 3)


# ---------------------------------------------------------------------------------------------
# the real GPU

@needs_gpu
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.__name__[9:])
def test_gpu_kernels_match_cpu(scenario):
    scenario(Harness(_gpu.backend_for(0), compare=True))


@needs_gpu
def test_gpu_index_validation_leaves_output_untouched():
    gpu = _gpu.backend_for(0)
    out = gpu.from_host(np.arange(6, dtype=np.float32))
    with pytest.raises(IndexError, match="index 6 is out of bounds for dimension with size 6"):
        gpu.put(gpu.from_host(np.ones(2, np.float32)), gpu.from_host(np.array([0, 6])), out,
                False)
    np.testing.assert_array_equal(gpu.to_host(out), np.arange(6, dtype=np.float32))
    # the context is still healthy: a later kernel runs
    gpu.put(gpu.from_host(np.ones(2, np.float32)), gpu.from_host(np.array([0, 5])), out, False)
    assert gpu.to_host(out)[5] == 1


@needs_gpu
@pytest.mark.parametrize("dtype", [mt.float32, mt.float64, mt.int64, mt.bool])
def test_tensor_round_trips(dtype):
    host = np.arange(-6, 6).reshape(3, 4).astype(dtype.numpy_dtype)
    x = mt.tensor(host, device="cuda")
    assert x.device == mt.device("cuda:0") and x.is_cuda and x.dtype is dtype
    np.testing.assert_array_equal(x.cpu().numpy(), host)
    y = mt.tensor(host).to("cuda")
    np.testing.assert_array_equal(y.cpu().numpy(), host)
    np.testing.assert_array_equal(y.t().cpu().numpy(), host.T)      # a strided view comes back
    assert mt.zeros(2, device="cuda").cuda().device == mt.device("cuda")


@needs_gpu
def test_mixing_devices_raises_torch_message():
    with pytest.raises(RuntimeError) as error:
        mt.ones(2, device="cuda") + mt.ones(2)
    assert str(error.value) == ("Expected all tensors to be on the same device, but found at "
                                "least two devices, cuda:0 and cpu!")


@needs_gpu
def test_training_step_matches_cpu():
    """A small MLP step (matmul, bias broadcast, relu, log_softmax-style reductions) gives the
    CPU's loss and gradients on the GPU, and gradients flow back across .to()."""
    rng = np.random.default_rng(25)
    x, w = rng.standard_normal((16, 9)), rng.standard_normal((9, 4))
    results = []
    for device in ("cpu", "cuda"):
        wt = mt.tensor(w, requires_grad=True)
        h = (mt.tensor(x).to(device) @ wt.to(device)).relu()
        loss = (h - h.max(dim=1, keepdim=True)[0]).exp().sum(dim=1).log().mean()
        loss.backward()
        results.append((loss.item(), wt.grad.numpy()))
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-12)
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-10, atol=1e-12)


@needs_gpu
def test_cuda_module():
    assert mt.cuda.device_count() >= 1
    assert isinstance(mt.cuda.get_device_name(), str)
    assert mt.cuda.current_device() == 0
    mt.cuda.synchronize()
    mt.cuda.manual_seed(3)
    a = mt.randn(5, device="cuda").cpu().numpy()
    mt.cuda.manual_seed_all(3)
    np.testing.assert_array_equal(mt.randn(5, device="cuda").cpu().numpy(), a)


# ---------------------------------------------------------------------------------------------
# the whole GPU path on the emulator (every run; MINITORCH_TEST_CUDA=emulator runs every
# `device` test this way)

@pytest.fixture
def emulated_cuda(monkeypatch, fresh_backends):
    if not cuda_emulator.can_execute():
        pytest.skip("g++ is needed to run kernels in the emulator")
    monkeypatch.setitem(sys.modules, "cupy", cuda_emulator.cupy_module())


def _train_small_cnn(device, steps=3):
    """Losses and final parameters of a few Adam steps of conv → norm → relu → pool → linear
    (no conv bias: batch norm would leave it a gradient of rounding noise, which Adam scales up
    to full steps)."""
    mt.manual_seed(0)
    model = mt.nn.Sequential(
        mt.nn.Conv2d(1, 4, 3, padding=1, bias=False), mt.nn.BatchNorm2d(4), mt.nn.ReLU(),
        mt.nn.MaxPool2d(2), mt.nn.Flatten(), mt.nn.Linear(4 * 4 * 4, 10)).double().to(device)
    optimizer = mt.optim.Adam(model.parameters(), lr=1e-2)
    rng = np.random.default_rng(0)
    x = mt.tensor(rng.standard_normal((8, 1, 8, 8)), device=device)
    y = mt.tensor(rng.integers(0, 10, 8), device=device)
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = mt.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses, [p.detach().cpu().numpy() for p in model.parameters()]


def test_emulated_cnn_training_matches_cpu(emulated_cuda):
    cpu_losses, cpu_params = _train_small_cnn("cpu")
    gpu_losses, gpu_params = _train_small_cnn("cuda")
    np.testing.assert_allclose(gpu_losses, cpu_losses, rtol=1e-12)
    for got, want in zip(gpu_params, cpu_params):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
