"""mt.cuda.random (torch.cuda.random): the CUDA generator's state. minitorch draws every random
number on the host from one generator (minitorch/random.py), whatever the tensor's device, so
each GPU's generator *is* that generator: get_rng_state() is mt.get_rng_state(), seeding a GPU
seeds the CPU draws too. Without a GPU the setters do nothing (torch queues them until CUDA
starts, which never happens) and the getters raise, as torch's."""
from .. import random as _random
from . import device_count, is_available, _require_cupy

__all__ = ["get_rng_state", "get_rng_state_all", "initial_seed", "manual_seed",
           "manual_seed_all", "seed", "seed_all", "set_rng_state", "set_rng_state_all"]


def get_rng_state(device="cuda"):
    """The generator's state as a tensor (for set_rng_state); needs a GPU."""
    _require_cupy()
    return _random.get_rng_state()


def get_rng_state_all():
    """One state per visible GPU (all the same state here; [] without a GPU)."""
    return [get_rng_state(i) for i in range(device_count())]


def set_rng_state(new_state, device="cuda"):
    """Restore the generator from get_rng_state's tensor (a no-op without a GPU)."""
    if is_available():
        _random.set_rng_state(new_state)


def set_rng_state_all(new_states):
    """set_rng_state for each GPU in turn (one generator: the last state wins)."""
    for i, state in enumerate(new_states):
        set_rng_state(state, i)


def manual_seed(seed):
    """Random numbers are drawn on the host for every device, so this is mt.manual_seed."""
    _random.manual_seed(seed)


manual_seed_all = manual_seed


def seed():
    """Seed the generator from OS entropy (a no-op without a GPU); this reseeds CPU draws too."""
    if is_available():
        _random.seed()


seed_all = seed


def initial_seed():
    """The seed the generator was last seeded with; needs a GPU."""
    _require_cupy()
    return _random.initial_seed()
