"""The `join` kernel (stack / cat / collate: many sources into their slots of one output in one
call): the CPU backend against numpy, its checks before any write, and the GPU backend's
fallback (a loop over compact + strided_set) through the CUDA emulator."""
import numpy as np
import pytest

from minitorch import _cpu

import cuda_emulator


def _pieces(dtype):
    """Three strided views (a transpose, a step-2 slice, a flipped row) of shape (2, 3) and the
    expected output: the three stacked along a new middle axis (out strides (9, 1) per piece)."""
    base = np.arange(40).astype(dtype)
    views = [((2, 3), (1, 2), 0), ((2, 3), (6, 2), 1), ((2, 3), (3, -1), 20)]
    expected = np.zeros((2, 3, 3), dtype)
    for i, (_, (s0, s1), offset) in enumerate(views):
        for r in range(2):
            for c in range(3):
                expected[r, i, c] = base[offset + r * s0 + c * s1]
    return base, views, expected


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.uint8])
def test_join_matches_numpy(dtype):
    base, views, expected = _pieces(dtype)
    out = np.zeros(18, dtype)
    _cpu.join([base] * 3, out, [v[0] for v in views], [v[1] for v in views],
              [v[2] for v in views], (9, 1), [0, 3, 6])
    np.testing.assert_array_equal(out.reshape(2, 3, 3), expected)


def test_join_concatenates_contiguous_pieces():
    sources = [np.arange(n, dtype=np.float32) + 10 * n for n in (3, 0, 5, 1)]
    out = np.zeros(9, np.float32)
    _cpu.join(sources, out, [(n,) for n in (3, 0, 5, 1)], [(1,)] * 4, [0] * 4, (1,),
              [0, 3, 3, 8])
    np.testing.assert_array_equal(out, np.concatenate(sources))


def test_join_checks_every_piece_before_writing():
    out = np.zeros(8, np.float32)
    good, short = np.ones(4, np.float32), np.ones(2, np.float32)
    with pytest.raises(IndexError, match="reaches elements 0..3 of source"):
        _cpu.join([good, short], out, [(4,), (4,)], [(1,), (1,)], [0, 0], (1,), [0, 4])
    assert not out.any()
    with pytest.raises(IndexError, match="of out"):
        _cpu.join([good, good], out, [(4,), (4,)], [(1,), (1,)], [0, 0], (1,), [0, 5])
    assert not out.any()
    with pytest.raises(TypeError, match="dtype"):
        _cpu.join([good, np.ones(4)], out, [(4,), (4,)], [(1,), (1,)], [0, 0], (1,), [0, 4])
    with pytest.raises(ValueError, match="2 sources but 1 shapes"):
        _cpu.join([good, good], out, [(4,)], [(1,), (1,)], [0, 0], (1,), [0, 4])
    assert not out.any()


def test_gpu_fallback_matches_cpu_in_the_emulator():
    from minitorch._gpu.backend import GpuBackend
    gpu = GpuBackend(cuda_emulator.cupy_module(), 0)
    base, views, expected = _pieces(np.float32)
    out = gpu.from_host(np.zeros(18, np.float32))
    gpu.join([gpu.from_host(base.copy())] * 3, out, [v[0] for v in views],
             [v[1] for v in views], [v[2] for v in views], (9, 1), [0, 3, 6])
    if cuda_emulator.can_execute():
        np.testing.assert_array_equal(gpu.to_host(out).reshape(2, 3, 3), expected)
