"""Random tensors. numpy's Generator (CPU) / CuPy's (GPU) draw the bits, seeded by manual_seed;
the values land in our buffers like any other data coming in at the edge."""
import math
import numbers

import numpy as np

from . import dtypes
from ._cpu.shuffle import swap_shuffle
from .backend import CPU, device as Device, get_backend
from .autograd import is_grad_enabled, no_grad
from .ndarray import NDArray, check_shape, contiguous_strides
from .functions.elementwise import TORCH_NAMES
from .tensor import Size, Tensor, _keyword_size, _shape_args, wrap

# The global stream: numpy's PCG64 Generator for the draws (rand, randn, ...), and torch's
# Mersenne Twister for randperm (made from the seed when randperm first needs it).
_state = {"seed": 0, "generator": np.random.default_rng(0), "twister": None}


def torch_twister(seed):
    """torch's CPU generator for `seed`: an MT19937 seeded with the seed's low 32 bits by the
    reference init_genrand, which is numpy's legacy RandomState for an int seed (a stream
    numpy keeps frozen). Read its raw 32-bit outputs with twister_draws."""
    return np.random.RandomState(int(seed) & 0xFFFFFFFF)


def twister_draws(twister, count):
    """The next `count` raw 32-bit outputs of the twister, as uint32 (RandomState's randint over
    the whole uint32 range returns the raw outputs: its rejection mask accepts every one)."""
    return twister.randint(0, 2 ** 32, size=count, dtype=np.uint32)


def _seed_value(seed):
    """torch's seed rule: an int in [-2**63, 2**64), a negative one taken modulo 2**64."""
    seed = int(seed)
    if not -2 ** 63 <= seed < 2 ** 64:
        raise ValueError("Overflow when unpacking long long")
    return seed % 2 ** 64


class Generator:
    """torch.Generator: an independent stream (DataLoader shuffling, random_split). Its draws
    are made on the host whatever its device (a CUDA generator gives the values a CPU one
    does); `device` is recorded for the caller."""

    def __init__(self, device="cpu"):
        self.device = Device(device)
        self.manual_seed(int(np.random.SeedSequence().entropy % (2 ** 63)))

    def manual_seed(self, seed):
        self._seed = _seed_value(seed)
        self.rng = np.random.default_rng(self._seed)
        self._twister = None
        return self

    def initial_seed(self):
        return self._seed

    def seed(self):
        return self.manual_seed(int(np.random.SeedSequence().entropy % (2 ** 63))).initial_seed()

    @property
    def twister(self):
        """The Mersenne Twister randperm draws from, seeded as torch's for this seed."""
        if self._twister is None:
            self._twister = torch_twister(self._seed)
        return self._twister

    def get_state(self):
        """Both streams (numpy's and randperm's twister) and the seed, as a tensor: torch's
        state holds its seed too, so set_state also restores initial_seed()."""
        from .tensor import tensor
        numpy_state, twister, seed = self.capture()
        if twister is not None:
            name, key, position, has_gauss, gauss = twister
            twister = (name, key.tolist(), position, has_gauss, gauss)
        state = {"numpy": numpy_state, "twister": twister, "seed": seed}
        return tensor(np.frombuffer(repr(state).encode(), dtype=np.uint8).astype(np.int64))

    def set_state(self, state):
        import ast
        text = bytes(np.asarray(state.tolist(), dtype=np.uint8)).decode()
        state = ast.literal_eval(text)
        if "bit_generator" in state:        # a state saved before randperm had a twister
            state = {"numpy": state, "twister": None}
        self.restore((state["numpy"], state["twister"], state.get("seed", self._seed)))

    def capture(self):
        """The whole state as Python objects, for restore(): numpy's stream, the twister's
        (None while randperm has not made it) and the seed (which a missing twister is made
        from). Cheaper than get_state: checkpoint and vmap save it around every call."""
        twister = self._twister
        return (self.rng.bit_generator.state, None if twister is None else twister.get_state(),
                self._seed)

    def restore(self, state):
        numpy_state, twister, seed = state
        self.rng.bit_generator.state = numpy_state
        self._set_seed(seed)
        if twister is None:
            self._twister = None
            return
        name, key, position, has_gauss, gauss = twister
        restored = np.random.RandomState()
        restored.set_state((name, np.asarray(key, dtype=np.uint32), position, has_gauss, gauss))
        self._twister = restored

    def _set_seed(self, seed):
        self._seed = seed


def manual_seed(seed):
    """torch.manual_seed: seed the generator every random op draws from (for every device)."""
    seed = _seed_value(seed)
    _state["seed"] = seed
    _state["generator"] = np.random.default_rng(seed)
    _state["twister"] = None
    return default_generator


def seed():
    """torch.seed: seed the global generator from OS entropy and return that seed."""
    return manual_seed(int(np.random.SeedSequence().entropy % (2 ** 63)))


def initial_seed():
    """torch.initial_seed: the seed the global generator was last seeded with (0 until manual_seed
    or seed is called; torch's is random at start-up)."""
    return _state["seed"]


def host_rng(generator=None):
    """The numpy Generator to draw from: the caller's, or the global one."""
    return generator.rng if generator is not None else _state["generator"]


def fill_drawn(tensor, generator, sample):
    """Fill `tensor` in place with `sample(rng, shape)` drawn on the host."""
    values = np.asarray(sample(host_rng(generator), tuple(tensor.shape)))
    drawn = wrap(NDArray.from_numpy(values.reshape(tuple(tensor.shape)), tensor.dtype,
                                    tensor.device))
    return _write_drawn(tensor, drawn)


def _write_drawn(tensor, drawn):
    """Write fresh draws into `tensor`. Inside a recorded graph they are written as an op
    result, so the old history gets no gradient from here on (see Tensor._assign_result): the
    values no longer depend on it."""
    if is_grad_enabled() and tensor.requires_grad:
        tensor._check_inplace()
        return tensor._assign_result(drawn)
    with no_grad():
        return tensor.copy_(drawn)


def fill_floats(tensor, generator, method, scale=1.0, shift=0.0):
    """`tensor` := shift + scale * draws of numpy's `method` ("random" or "standard_normal"),
    drawn in the tensor's own dtype: straight into its buffer when it is a compact CPU tensor
    outside a recorded graph (so the peak is the tensor itself), else into one buffer of its
    dtype that is then written in as fill_drawn's draws are. Our kernels scale and shift."""
    nd = tensor._data
    in_place = nd.device.type == "cpu" and nd.is_compact() and not (
        is_grad_enabled() and tensor.requires_grad)
    if in_place:
        tensor._check_inplace()
        flat = nd.buffer[nd.offset:nd.offset + nd.size]
        getattr(host_rng(generator), method)(dtype=flat.dtype, out=flat)
        drawn = tensor
    else:
        drawn = _draw_floats(tuple(tensor.shape), tensor.dtype, tensor.device, False, generator,
                             method)
    with no_grad():
        if scale != 1:
            drawn.mul_(scale)
        if shift != 0:
            drawn.add_(shift)
    if in_place:
        tensor._bump_version()
        return tensor
    return _write_drawn(tensor, drawn)


class _DefaultGenerator(Generator):
    """mt.default_generator: a view onto the global state that manual_seed resets."""

    def __init__(self):
        self.device = CPU

    @property
    def rng(self):
        return _state["generator"]

    def manual_seed(self, seed):
        manual_seed(seed)
        return self

    def initial_seed(self):
        return _state["seed"]

    @property
    def _twister(self):
        return _state["twister"]

    @_twister.setter
    def _twister(self, twister):
        _state["twister"] = twister

    @property
    def _seed(self):
        return _state["seed"]

    def _set_seed(self, seed):
        _state["seed"] = seed


default_generator = _DefaultGenerator()


def _draw(size, dtype, device, requires_grad, generator, draw):
    """Fill a new tensor of `size` with values from `draw(rng, shape)`, on the right device."""
    shape = check_shape(_shape_args(size))
    dtype = dtype or dtypes.get_default_dtype()
    device = Device(device) if device is not None else CPU
    # Drawn on the host for every device: the same seed gives the same values on CPU and GPU.
    values = draw(host_rng(generator), shape)
    nd = NDArray.from_numpy(np.asarray(values), dtype, device)
    return wrap(nd, requires_grad)


def _draw_floats(size, dtype, device, requires_grad, generator, method):
    """rand/randn: numpy's Generator fills the output's own buffer in its dtype (float32 or
    float64), so the peak is the output itself, not a float64 draw and its converted copies."""
    shape = check_shape(_shape_args(size))
    dtype = dtype or dtypes.get_default_dtype()
    device = Device(device) if device is not None else CPU
    wide = dtype.compute        # float16 / bfloat16 draw in float32 and are rounded by our cast
    host = np.empty(math.prod(shape), wide.storage)
    getattr(host_rng(generator), method)(dtype=wide.storage, out=host)
    backend = get_backend(device)
    buffer = host if device.type == "cpu" else backend.from_host(host)
    drawn = NDArray(buffer, shape, contiguous_strides(shape), 0, wide, device, backend)
    return wrap(drawn.astype(dtype), requires_grad)


def _check_float(dtype, kernel):
    if dtype is not None and not dtype.is_floating_point:
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{TORCH_NAMES[dtype.name]}'")


def rand(*size, generator=None, dtype=None, device=None, requires_grad=False, **kwargs):
    """torch.rand: uniform draws in [0, 1) in the default float dtype (or dtype). Drawn by numpy's
    PCG64 Generator, not torch's Mersenne Twister: the values differ from torch's for the same
    seed; the same seed gives the same values on CPU and GPU."""
    size = _keyword_size(size, kwargs, "rand")
    _check_float(dtype, "check_uniform_bounds")
    return _draw_floats(size, dtype, device, requires_grad, generator, "random")


def randn(*size, generator=None, dtype=None, device=None, requires_grad=False, **kwargs):
    """torch.randn: standard normal draws in the default float dtype (or dtype). Drawn by numpy's
    PCG64 Generator, not torch's Mersenne Twister: the values differ from torch's for the same
    seed; the same seed gives the same values on CPU and GPU."""
    size = _keyword_size(size, kwargs, "randn")
    _check_float(dtype, "normal_kernel_cpu")
    return _draw_floats(size, dtype, device, requires_grad, generator, "standard_normal")


def randint(*args, generator=None, dtype=None, device=None, requires_grad=False, **kwargs):
    """torch.randint's two forms: randint(high, size) and randint(low, high, size), positional
    or by keyword (low=, high=, size=)."""
    low, high, size = _randint_args(args, kwargs)
    if high <= low:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= "
                           f"to={high}")
    return _draw((size,), dtype or dtypes.int64, device, requires_grad, generator,
                 lambda rng, shape: rng.integers(low, high, shape))


_RANDINT_FORMS = ("randint() received an invalid combination of arguments - got ({}), but "
                  "expected one of:\n * (int high, tuple of ints size, *, torch.Generator "
                  "generator, ...)\n * (int low, int high, tuple of ints size, *, "
                  "torch.Generator generator, ...)")


def _randint_args(args, kwargs):
    """(low, high, size) from randint's arguments, refused as torch's parser refuses them."""
    unknown = next((k for k in kwargs if k not in ("low", "high", "size")), None)
    if unknown is not None:
        raise TypeError(f"randint() got an unexpected keyword argument '{unknown}'")
    names = ("low", "high", "size") if len(args) == 3 or (
        len(args) == 2 and "size" in kwargs) or (len(args) == 1 and "high" in kwargs) \
        else ("high", "size")
    if len(args) > len(names):
        raise TypeError(_RANDINT_FORMS.format(", ".join(type(a).__name__ for a in args)))
    given = dict(zip(names, args))
    for name in given.keys() & kwargs.keys():
        raise TypeError(f"randint() got multiple values for argument '{name}'")
    given.update(kwargs)
    missing = [n for n in ("high", "size") if n not in given]
    if missing:
        raise TypeError(f"randint() missing {len(missing)} required positional argument"
                        f"{'s' if len(missing) > 1 else ''}: "
                        f"{', '.join(repr(n) for n in missing)}")
    position = {name: i + 1 for i, name in enumerate(names)}
    bounds = [_randint_bound(given.get("low", 0), "low", position.get("low")),
              _randint_bound(given["high"], "high", position.get("high"))]
    size = given["size"]
    if not isinstance(size, (tuple, list, Size)) or \
            not all(isinstance(n, numbers.Integral) for n in size):
        where = f" (position {position['size']})" if "size" in position else ""
        raise TypeError(f"randint(): argument 'size'{where} must be tuple of ints, not "
                        f"{type(size).__name__}")
    return bounds[0], bounds[1], tuple(size)


def _randint_bound(value, name, position):
    if isinstance(value, Tensor) and value.numel() == 1 and not value.dtype.is_floating_point:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        where = f" (position {position})" if position else ""
        raise TypeError(f"randint(): argument '{name}'{where} must be int, not "
                        f"{type(value).__name__}")
    return int(value)


# torch's CPU randperm shuffles with one 32-bit draw per swap below this n, and with another
# algorithm (64-bit draws) from it on (aten/src/ATen/native/TensorFactories.cpp, randperm_cpu).
_TORCH_RANDPERM_SWAP_LIMIT = (2 ** 32 - 1) // 20


def randperm(n, generator=None, dtype=None, device=None, requires_grad=False):
    """torch.randperm: a random permutation of 0 .. n - 1 (int64 unless dtype is given). For
    n < 214748364 it is torch's CPU permutation for the same seed (mt.manual_seed(s) or
    Generator().manual_seed(s)), and successive randperm calls go on through torch's stream as
    torch's do; from that n on, torch switches algorithm and the permutations differ. On a
    CUDA device the permutation is the CPU one (torch's CUDA randperm draws differently). The
    stream is torch's Mersenne Twister, kept beside the numpy stream the other draws use, so
    rand/randn/randint neither advance it nor follow it as torch's would."""
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    twister = (generator if generator is not None else default_generator).twister
    draws = twister_draws(twister, max(n - 1, 0))
    return _draw(((n,),), dtype or dtypes.int64, device, requires_grad, None,
                 lambda rng, shape: _swapped_range(draws, n))


def _swapped_range(draws, n):
    """r = arange(n); for i in range(n - 1): swap r[i] and r[i + draws[i] % (n - i)]."""
    out = np.empty(n, dtype=np.int64)
    swap_shuffle(draws, out)
    return out


def _like(input, dtype, device):
    return input.shape, dtype or input.dtype, device or input.device


def rand_like(input, dtype=None, device=None, requires_grad=False):
    """torch.rand_like: rand with input's size, and its dtype and device unless given (drawn from
    the global generator; torch 2.13's generator= and memory_format= are not accepted)."""
    shape, dtype, device = _like(input, dtype, device)
    return rand(*shape, dtype=dtype, device=device, requires_grad=requires_grad)


def randn_like(input, dtype=None, device=None, requires_grad=False):
    """torch.randn_like: randn with input's size, and its dtype and device unless given (drawn from
    the global generator; torch 2.13's generator= and memory_format= are not accepted)."""
    shape, dtype, device = _like(input, dtype, device)
    return randn(*shape, dtype=dtype, device=device, requires_grad=requires_grad)


def randint_like(input, low=0, high=None, dtype=None, device=None, requires_grad=False):
    """torch.randint_like: randint(low, high) with input's size, and its dtype and device unless
    given; a single bound is high (low 0). torch 2.13's generator= and memory_format= are not
    accepted."""
    shape, dtype, device = _like(input, dtype, device)
    if high is None:
        low, high = 0, low
    return randint(low, high, shape, dtype=dtype, device=device, requires_grad=requires_grad)


def bernoulli(input, p=None, generator=None):
    """Draws 1 with probability input (or p) elementwise."""
    probs = input.detach().cpu().numpy() if p is None else np.full(input.shape, p)
    draws = host_rng(generator).random(probs.shape) < probs
    return wrap(NDArray.from_numpy(draws.astype(np.float64), input.dtype, input.device))


def multinomial(input, num_samples, replacement=False, generator=None):
    """torch.multinomial: num_samples category indices per row of input (1-D or 2-D non-negative
    weights), with or without replacement, as int64; torch's checks and messages. Drawn by numpy's
    Generator, so the indices differ from torch's for the same seed."""
    if input.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if not input.dtype.is_floating_point:
        raise RuntimeError("multinomial only supports floating-point dtypes for input, got: "
                           f"{TORCH_NAMES[input.dtype.name]}")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    if not replacement and num_samples > input.shape[-1]:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                           "replacement")
    probs = np.atleast_2d(input.detach().cpu().numpy().astype(np.float64))
    _check_distribution(probs, replacement and num_samples > 1)
    rng = host_rng(generator)
    rows = []
    for row in probs:
        rows.append(_sample_row(rng, row / row.sum(), num_samples, replacement))
    out = np.array(rows).reshape(input.shape[:-1] + (num_samples,))
    return wrap(NDArray.from_numpy(out, dtypes.int64, input.device))


def _sample_row(rng, p, num_samples, replacement):
    """Category indices drawn from p. Without replacement, once every category of positive
    probability is drawn, torch goes on with the zero-probability ones (in random order)."""
    if replacement:
        return rng.choice(len(p), size=num_samples, replace=True, p=p)
    positive = int(np.count_nonzero(p))
    drawn = rng.choice(len(p), size=min(num_samples, positive), replace=False, p=p)
    rest = rng.permutation(np.flatnonzero(p == 0))[:num_samples - len(drawn)]
    return np.concatenate([drawn, rest])


def _check_distribution(probs, with_replacement):
    """torch's checks of multinomial's rows of weights (NaN fails the `>= 0` test first). Its
    sampler without replacement (and for one sample) words the first two checks as one."""
    if not with_replacement and not ((probs >= 0) & np.isfinite(probs)).all():
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if not (probs >= 0).all():
        raise RuntimeError("invalid multinomial distribution (encountering probability entry < 0)")
    if not np.isfinite(probs).all():
        raise RuntimeError("invalid multinomial distribution (encountering probability entry = "
                           "infinity or NaN)")
    if (probs.sum(axis=-1) <= 0).any():
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")


def normal(mean, std=1.0, size=None, generator=None):
    """N(mean, std²) draws: tensor means and/or stds (broadcast), or numbers and a size."""
    if not isinstance(std, Tensor) and std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        like = mean if isinstance(mean, Tensor) else std
        return randn(*like.shape, generator=generator, dtype=like.dtype,
                     device=like.device) * std + mean
    return randn(*size, generator=generator) * std + mean


def poisson(input, generator=None):
    """Poisson draws with the rates in input (float, input's dtype)."""
    rates = np.asarray(input.detach().cpu().numpy(), dtype=np.float64)
    if (rates < 0).any():
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    draws = np.asarray(host_rng(generator).poisson(rates), dtype=np.float64)
    return wrap(NDArray.from_numpy(draws, input.dtype, input.device))


def binomial(count, prob, generator=None):
    """Binomial draws: count trials with success probability prob, elementwise. As in torch,
    the probability is clamped to [0, 1], a negative count draws 0 and a NaN p gives NaN."""
    counts, probs = (np.asarray(t.detach().cpu().numpy(), dtype=np.float64)
                     for t in (count, prob))
    counts, probs = np.broadcast_arrays(counts, probs)
    valid = ~np.isnan(probs)
    trials = np.maximum(counts, 0).astype(np.int64)
    draws = host_rng(generator).binomial(trials, np.where(valid, np.clip(probs, 0, 1), 0))
    draws = np.where(valid, draws, np.nan)
    return wrap(NDArray.from_numpy(np.asarray(draws, dtype=np.float64), count.dtype,
                                   count.device))


def get_rng_state():
    """torch.get_rng_state: the global generator's state as a tensor, for set_rng_state. It is an
    int64 tensor encoding numpy's generator state (torch's is a uint8 tensor of its Mersenne
    Twister state): only minitorch's set_rng_state reads it."""
    return default_generator.get_state()


def set_rng_state(new_state):
    """torch.set_rng_state: restore the global generator's state from get_rng_state's tensor."""
    default_generator.set_state(new_state)


def capture_state():
    """The global generator's whole state as Python objects (both streams and the seed), for
    restore_state: what checkpoint replays and vmap compares."""
    return default_generator.capture()


def restore_state(state):
    default_generator.restore(state)


def same_state(a, b):
    """Whether two captured states are equal (the twister's key is an array)."""
    if a[0] != b[0] or a[2] != b[2] or (a[1] is None) != (b[1] is None):
        return False
    return a[1] is None or _same_twister(a[1], b[1])


def _same_twister(a, b):
    name, key, position, has_gauss, gauss = a
    return (name, position, has_gauss, gauss) == (b[0], b[2], b[3], b[4]) and \
        np.array_equal(key, b[1])


# ---- in-place samplers (Tensor methods) -------------------------------------------------------
_RANDOM_HIGH = {"float32": 2 ** 24 + 1, "float64": 2 ** 53 + 1, "int64": 2 ** 63 - 1,
                "uint8": 256, "bool": 2}


def uniform_(self, a=0.0, b=1.0, *, generator=None):
    _check_float(self.dtype, "check_uniform_bounds")
    return fill_floats(self, generator, "random", b - a, a)


def normal_(self, mean=0.0, std=1.0, *, generator=None):
    _check_float(self.dtype, "normal_kernel_cpu")
    return fill_floats(self, generator, "standard_normal", std, mean)


def random_(self, from_=0, to=None, *, generator=None):
    """Integers in [from, to - 1] (one argument: [0, to - 1]; none: every integer the dtype
    holds exactly, from 0)."""
    if to is None and from_ != 0:
        from_, to = 0, from_
    high = _RANDOM_HIGH[self.dtype.name] if to is None else to
    if from_ >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={from_} "
                           f">= to={high}")
    return fill_drawn(self, generator, lambda rng, shape: rng.integers(from_, high, shape))


def exponential_(self, lambd=1.0, *, generator=None):
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
    return fill_drawn(self, generator, lambda rng, shape: rng.exponential(1.0 / lambd, shape))


def geometric_(self, p, *, generator=None):
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), got p = {p}")
    return fill_drawn(self, generator, lambda rng, shape: rng.geometric(p, shape))


def log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
    return fill_drawn(self, generator, lambda rng, shape: rng.lognormal(mean, std, shape))


def cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    return fill_drawn(self, generator,
                      lambda rng, shape: median + sigma * rng.standard_cauchy(shape))


def bernoulli_(self, p=0.5, *, generator=None):
    """1 with probability p (a number, or a tensor broadcast to self's shape), else 0."""
    if isinstance(p, Tensor):
        probs = np.broadcast_to(p.detach().cpu().numpy(), tuple(self.shape))
    else:
        if not 0 <= p <= 1:
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
        probs = p
    return fill_drawn(self, generator, lambda rng, shape: rng.random(shape) < probs)


