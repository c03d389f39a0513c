"""DistributedSampler: each rank's share of a dataset's indices, torch's partition (padding or
dropping to equal shares, then every num_replicas-th index from the rank on)."""
import math

from ...random import Generator, randperm
from .sampler import Sampler

__all__ = ["DistributedSampler"]


class DistributedSampler(Sampler):
    """torch.utils.data.distributed.DistributedSampler. The shuffled order comes from
    mt.randperm with a Generator seeded seed + epoch (call set_epoch each epoch); every rank
    draws the same permutation, so the shares never overlap. mt.randperm is torch's CPU
    permutation for a seed (below 214748364 samples), so each rank's share is torch's."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0,
                 drop_last=False):
        if num_replicas is None or rank is None:
            from ... import distributed as dist
            if not dist.is_available():
                raise RuntimeError("Requires distributed package to be available")
            num_replicas = dist.get_world_size() if num_replicas is None else num_replicas
            rank = dist.get_rank() if rank is None else rank
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval "
                             f"[0, {num_replicas - 1}]")
        self.dataset, self.num_replicas, self.rank = dataset, num_replicas, rank
        self.epoch, self.drop_last, self.shuffle, self.seed = 0, drop_last, shuffle, seed
        size = len(dataset)
        if drop_last and size % num_replicas != 0:
            # equal shares: drop the tail rather than repeat indices
            self.num_samples = math.ceil((size - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(size / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def __iter__(self):
        size = len(self.dataset)
        if self.shuffle:
            generator = Generator()
            generator.manual_seed(self.seed + self.epoch)
            indices = randperm(size, generator=generator).tolist()
        else:
            indices = list(range(size))
        if not self.drop_last:
            padding = self.total_size - len(indices)
            if padding <= len(indices):
                indices += indices[:padding]
            else:
                indices += (indices * math.ceil(padding / len(indices)))[:padding]
        else:
            indices = indices[:self.total_size]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        """Shuffle differently each epoch (the same way on every rank)."""
        self.epoch = epoch
