"""mt.randperm gives torch's CPU permutation for a seed (issue 18): torch's Mersenne Twister,
seeded as torch seeds it, and torch's swap shuffle (the swap_shuffle kernel)."""
import numpy as np
import pytest

import minitorch as mt
from minitorch.random import _swapped_range, torch_twister, twister_draws


def _torch():
    return pytest.importorskip("torch")


def _swap_loop(draws, n):
    """The shuffle as torch's randperm_cpu writes it."""
    r = list(range(n))
    for i in range(n - 1):
        z = int(draws[i]) % (n - i)
        r[i], r[i + z] = r[i + z], r[i]
    return r


def test_the_shuffle_kernel_is_the_swap_loop():
    rng = np.random.default_rng(0)
    for n in list(range(0, 40)) + [1000, 10000]:
        draws = rng.integers(0, 2 ** 32, max(n - 1, 0)).astype(np.uint32)
        assert _swapped_range(draws, n).tolist() == _swap_loop(draws, n), n
    # the largest draws, and small moduli that make long chains of steps sharing a target
    draws = np.full(5000, 2 ** 32 - 1, dtype=np.uint32)
    assert _swapped_range(draws, 5001).tolist() == _swap_loop(draws, 5001)
    draws = np.zeros(5000, dtype=np.uint32)
    assert _swapped_range(draws, 5001).tolist() == _swap_loop(draws, 5001)
    with pytest.raises(TypeError, match="uint32"):
        _swapped_range(np.zeros(3, np.int64), 4)
    with pytest.raises(ValueError, match="draws"):
        _swapped_range(np.zeros(2, np.uint32), 4)


def test_the_twister_is_torchs_mersenne_twister():
    # the first outputs of the reference MT19937 (init_genrand(5489)) and its seed's low bits
    assert twister_draws(torch_twister(5489), 2).tolist() == [3499211612, 581869302]
    assert twister_draws(torch_twister(2 ** 32 + 5489), 1).tolist() == [3499211612]


def test_randperm_is_torchs_for_every_n_up_to_2000():
    """Every n from one seeding (so each n is also drawn mid-stream), and a few freshly seeded."""
    torch = _torch()
    for seed, step in ((0, 1), (2 ** 40 + 1, 7)):
        torch.manual_seed(seed)
        mt.manual_seed(seed)
        for n in range(0, 2001, step):
            ours, theirs = mt.randperm(n), torch.randperm(n)
            assert ours.dtype is mt.int64 and ours.tolist() == theirs.tolist(), (seed, n)
    for n in (1, 2, 3, 64, 1999, 2000):
        torch.manual_seed(n)
        mt.manual_seed(n)
        assert mt.randperm(n).tolist() == torch.randperm(n).tolist(), n


@pytest.mark.parametrize("seed", [1, 7, 2 ** 32 + 3, 2 ** 63 + 11, -5])
def test_successive_randperms_follow_torchs_stream(seed):
    torch = _torch()
    torch.manual_seed(seed)
    mt.manual_seed(seed)
    assert mt.initial_seed() == torch.initial_seed()
    for n in (10, 1, 0, 257, 3, 100000):
        assert mt.randperm(n).tolist() == torch.randperm(n).tolist(), n


def test_randperm_with_a_generator_is_torchs():
    torch = _torch()
    ours, theirs = mt.Generator().manual_seed(42), torch.Generator().manual_seed(42)
    mt.manual_seed(0)
    torch.manual_seed(0)
    for n in (5, 50, 500):
        assert mt.randperm(n, generator=ours).tolist() == \
            torch.randperm(n, generator=theirs).tolist()
    # the global stream was not advanced by the generator's draws
    assert mt.randperm(7).tolist() == torch.randperm(7).tolist()


def test_randperm_dtype_device_and_errors(device):
    mt.manual_seed(3)
    expected = mt.randperm(20).tolist()
    mt.manual_seed(3)
    on_device = mt.randperm(20, device=device, dtype=mt.float64)
    assert on_device.device.type == device and on_device.dtype is mt.float64
    assert on_device.cpu().tolist() == [float(v) for v in expected]
    with pytest.raises(RuntimeError, match=r"Trying to create tensor with negative dimension "
                                           r"-1: \[-1\]"):
        mt.randperm(-1)
    with pytest.raises(ValueError, match="Overflow when unpacking long long"):
        mt.manual_seed(2 ** 64)


def test_rng_state_saves_and_restores_the_randperm_stream():
    mt.manual_seed(9)
    mt.randperm(5)
    state = mt.get_rng_state()
    first = (mt.randperm(30).tolist(), mt.rand(3).tolist())
    mt.set_rng_state(state)
    assert (mt.randperm(30).tolist(), mt.rand(3).tolist()) == first
    generator = mt.Generator().manual_seed(4)
    saved = generator.get_state()       # before randperm made its twister
    drawn = mt.randperm(12, generator=generator).tolist()
    generator.set_state(saved)
    assert mt.randperm(12, generator=generator).tolist() == drawn


def test_distributed_sampler_and_random_split_partition_as_torch():
    torch = _torch()
    from torch.utils.data import DistributedSampler as TorchSampler
    from torch.utils.data import random_split as torch_random_split
    from minitorch.utils.data import DistributedSampler, random_split
    for epoch in (0, 1, 5):
        for rank in range(3):
            ours, theirs = DistributedSampler(range(23), 3, rank, seed=5), \
                TorchSampler(range(23), 3, rank, seed=5)
            ours.set_epoch(epoch)
            theirs.set_epoch(epoch)
            assert list(ours) == list(theirs), (epoch, rank)
    ours = random_split(range(20), [0.3, 0.7], generator=mt.Generator().manual_seed(4))
    theirs = torch_random_split(range(20), [0.3, 0.7],
                                generator=torch.Generator().manual_seed(4))
    assert [list(s) for s in ours] == [list(s) for s in theirs]
