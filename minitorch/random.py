"""Random tensors on torch's CPU stream: each generator is torch's Mersenne Twister (MT19937
seeded as torch seeds it, which is numpy's RandomState for an int seed) and our kernels
(_cpu/draws.pyx) turn its raw 32-bit outputs into torch's values: rand, randn, randint,
randperm, uniform_, normal_, random_, bernoulli, exponential_, cauchy_, log_normal_,
geometric_ and multinomial give torch's CPU numbers for the same seed (checked against torch
2.13), and go on through the stream as torch's calls do; an in-place fill visits a permuted
tensor's elements in memory order, as torch's TensorIterator does. Draws are made on the host
for every device, so a seed gives the same values on CPU and GPU."""
import contextlib
import math
import numbers

import numpy as np

from . import dtypes
from ._cpu.draws import (Sampler, bernoulli_numbers, draws_for_normal_pairs, from_uniforms,
                         binomial_draws, gamma_draws, integers, normal_blocks, normal_pairs,
                         poisson_draws, swap_shuffle, uniform_floats)
from .backend import device as Device, get_backend, target_device
from .autograd import is_grad_enabled, no_grad
from .ndarray import NDArray, check_shape, contiguous_strides
from .functions.elementwise import C_NAMES, TORCH_NAMES
from .tensor import Size, Tensor, _keyword_size, _shape_args, empty_like, wrap


def torch_twister(seed):
    """torch's CPU generator for `seed`: an MT19937 seeded with the seed's low 32 bits by the
    reference init_genrand, which is numpy's legacy RandomState for an int seed (a stream
    numpy keeps frozen). Read its raw 32-bit outputs with twister_draws."""
    return np.random.RandomState(int(seed) & 0xFFFFFFFF)


def twister_draws(twister, count):
    """The next `count` raw 32-bit outputs of the twister, as uint32: its MT19937's raw draws
    (the values randint over the whole uint32 range returns, without its ~4 us of argument
    handling, which a one-element draw paid every call)."""
    return twister._bit_generator.random_raw(count).astype(np.uint32)


def _seed_value(seed):
    """torch's seed rule: an int in [-2**63, 2**64), a negative one taken modulo 2**64."""
    seed = int(seed)
    if not -2 ** 63 <= seed < 2 ** 64:
        raise ValueError("Overflow when unpacking long long")
    return seed % 2 ** 64


DEFAULT_SEED = 67280421310721      # torch's for a new Generator (default_rng_seed_val)


def _entropy_seed():
    return int(np.random.SeedSequence().entropy % (2 ** 63))


class Generator:
    """torch.Generator: an independent stream (DataLoader shuffling, random_split). Its state is
    the twister, the normal it has cached (torch's normal sampler makes two at a time and keeps
    the second) and its seed. Its draws are made on the host whatever its device (a CUDA
    generator gives the values a CPU one does); `device` is recorded for the caller."""

    def __init__(self, device="cpu"):
        self.device = Device(device)
        self.manual_seed(DEFAULT_SEED)

    def manual_seed(self, seed):
        self._seed = _seed_value(seed)
        self.twister = torch_twister(self._seed)
        self.normal_cache = None
        return self

    def initial_seed(self):
        return self._seed

    def seed(self):
        return self.manual_seed(_entropy_seed()).initial_seed()

    def get_state(self):
        """The twister's state, the cached normal and the seed, as a tensor (torch's state
        holds its seed too, so set_state also restores initial_seed())."""
        from .tensor import tensor
        (name, key, position, has_gauss, gauss), cache, seed = self.capture()
        state = {"twister": (name, key.tolist(), position, has_gauss, gauss), "normal": cache,
                 "seed": seed}
        return tensor(np.frombuffer(repr(state).encode(), dtype=np.uint8).astype(np.int64))

    def set_state(self, state):
        import ast
        text = bytes(np.asarray(state.tolist(), dtype=np.uint8)).decode()
        state = ast.literal_eval(text)
        seed = state.get("seed", self._seed)
        twister = state.get("twister")
        if twister is None or "numpy" in state:
            # a state saved before every draw came from the twister: its twister, if randperm
            # had made one, else the seed's
            twister = twister or torch_twister(seed).get_state()
        self.restore((twister, state.get("normal"), seed))

    def capture(self):
        """The whole state as Python objects, for restore(): the twister's state, the cached
        normal and the seed. Cheaper than get_state: checkpoint and vmap save it around every
        call."""
        return self.twister.get_state(), self.normal_cache, self._seed

    def restore(self, state):
        (name, key, position, has_gauss, gauss), cache, seed = state
        twister = np.random.RandomState()
        twister.set_state((name, np.asarray(key, dtype=np.uint32), position, has_gauss, gauss))
        self.twister, self.normal_cache, self._seed = twister, cache, seed


def manual_seed(seed):
    """torch.manual_seed: seed the generator every random op draws from (for every device)."""
    return default_generator.manual_seed(seed)


def seed():
    """torch.seed: seed the global generator from OS entropy and return that seed."""
    return default_generator.seed()


def initial_seed():
    """torch.initial_seed: the seed the global generator was last seeded with (random at
    start-up, as torch's)."""
    return default_generator.initial_seed()


def _generator(generator):
    return default_generator if generator is None else generator


def host_rng(generator=None):
    """The RandomState to draw from: the caller's generator's twister, or the global one."""
    return _generator(generator).twister


# ---- torch's transformations of the twister's draws (the kernels are in _cpu/draws.pyx) ----
# Elements per kernel call: the raw draws (4 or 8 bytes an element) stay a small buffer beside
# the output instead of doubling the peak of a large fill.
_CHUNK = 1 << 16


def _in_chunks(out, twister, draws_per_element, kernel, *args):
    """kernel(draws, out[i:j], *args) over consecutive slices of `out` (flat), each with its
    own draws taken from the twister in order, as one call over all of out would take them."""
    for start in range(0, out.size, _CHUNK):
        piece = out[start:start + _CHUNK]
        kernel(twister_draws(twister, draws_per_element * piece.size), piece, *args)


def uniform_into(out, generator, low, high):
    """out (a compact float32/float64 numpy buffer) := torch's uniform_(low, high) draws."""
    per = 2 if out.dtype == np.float64 else 1
    _in_chunks(out, host_rng(generator), per, uniform_floats, low, high)


def normal_into(out, generator, mean, std, contiguous=True):
    """out (a compact float32/float64 numpy buffer) := torch's normal_(mean, std) draws: for 16
    or more contiguous elements torch's normal_fill (blocks of 16; when n is not a multiple of
    16, the last partial block's uniforms are drawn, then the last 16 elements redrawn), else
    the pairwise sampler, which keeps its second normal in the generator for the next call."""
    gen = _generator(generator)
    n = out.size
    per = 2 if out.dtype == np.float64 else 1
    if n >= 16 and contiguous:
        whole = n - n % 16
        _in_chunks(out[:whole], gen.twister, per, normal_blocks, mean, std)
        if n % 16:
            twister_draws(gen.twister, per * (n % 16))      # drawn, then overwritten
            normal_blocks(twister_draws(gen.twister, per * 16), out[n - 16:], mean, std)
    else:
        pairs_into(out, gen, mean, std)


def pairs_into(out, gen, mean, std, log_normal=False):
    """out := torch's normal_distribution<double> draws (exp of each with log_normal: its
    lognormal_distribution), the generator's cached normal used first and the one left over
    kept, in chunks as one call would draw them."""
    for start in range(0, out.size, _CHUNK):
        piece = out[start:start + _CHUNK]
        count = draws_for_normal_pairs(piece.size, gen.normal_cache is not None)
        gen.normal_cache = normal_pairs(twister_draws(gen.twister, count), piece, mean, std,
                                        gen.normal_cache, log_normal)


def gamma_into(alphas, out, generator=None):
    """out := torch's _standard_gamma draws, Gamma(alpha, 1) for each of alphas (compact numpy
    arrays of one dtype, float32 or float64: torch's float or double kernel); the rejection
    loop takes its uniforms and normals from the generator as torch's does, cached normal
    included."""
    gen = _generator(generator)
    gen.normal_cache = gamma_draws(_bit_generator(gen), alphas, out, gen.normal_cache)


def _bit_generator(generator):
    """The twister's numpy bit generator, for the kernels that take a varying number of draws
    per element (rejection loops) and pull them one at a time."""
    return _generator(generator).twister._bit_generator


def integers_into(out, generator, low, span, wide=None):
    """out (a compact int64 numpy buffer) := low + draw % span, one 32-bit draw per element
    below a span of 2**32 and one 64-bit draw from there on (or as `wide` says), as torch's
    random_ and randint do."""
    wide = span >= 2 ** 32 if wide is None else wide
    _in_chunks(out, host_rng(generator), 2 if wide else 1, integers, low, span, wide)


def fill_drawn(tensor, generator, sample):
    """Fill `tensor` in place with `sample(rng, shape)`, numpy values drawn on the host in the
    order torch visits the tensor's elements (_in_memory_order)."""
    if tensor._data.device.type == "meta":
        return _write_drawn(tensor, _no_draws(tensor._data.shape, tensor.dtype, tensor.device))

    def draw(shape):
        values = np.asarray(sample(host_rng(generator), shape)).reshape(shape)
        return wrap(NDArray.from_numpy(values, tensor.dtype, tensor.device))
    return _write_drawn(tensor, _in_memory_order(tensor, draw))


def _no_draws(shape, dtype, device, requires_grad=False):
    """The draws for a meta tensor: none (as in torch, the generator is not advanced, and a
    model built on meta costs no host memory)."""
    return wrap(NDArray.empty(shape, dtype, device), requires_grad)


def _in_memory_order(tensor, draw):
    """A tensor of tensor's shape from draw(shape) (values drawn in row-major order), the
    values placed in the order torch's TensorIterator visits tensor's elements: dimensions
    by decreasing stride, so storage order for a transposed or permuted tensor (torch's
    in-place samplers fill an output in the order it lies in memory)."""
    shape, strides = tuple(tensor.shape), tensor._data.strides
    spread = [d for d in range(len(shape)) if shape[d] > 1]    # size-1 dims order nothing
    order = sorted(spread, key=lambda d: -strides[d])          # stable: ties stay row-major
    if order == spread:
        return draw(shape)
    order = [d for d in range(len(shape)) if shape[d] <= 1] + order
    drawn = draw(tuple(shape[d] for d in order))
    return drawn.permute([order.index(d) for d in range(len(shape))])


def _write_drawn(tensor, drawn):
    """Write fresh draws into `tensor`. Inside a recorded graph they are written as an op
    result, so the old history gets no gradient from here on (see Tensor._assign_result): the
    values no longer depend on it."""
    if is_grad_enabled() and tensor.requires_grad:
        tensor._check_inplace()
        return tensor._assign_result(drawn)
    with no_grad():
        return tensor.copy_(drawn)


def fill_floats(tensor, generator, kind, a, b):
    """`tensor` := torch's draws of `kind` ("uniform": uniform_(a, b); "normal", "log_normal":
    normal_ / log_normal_(mean a, std b); "exponential": lambda a; "cauchy": median a, sigma
    b; "geometric", "bernoulli": p a), in the tensor's own dtype: straight into its buffer
    when it is a compact CPU tensor of the dtype the draws are computed in (_host_dtype)
    outside a recorded graph (so the peak is the tensor itself), else into a new buffer that
    is then written in as fill_drawn's draws are."""
    nd = tensor._data
    if nd.device.type == "meta":
        return _write_drawn(tensor, _no_draws(nd.shape, nd.dtype, nd.device))
    in_place = nd.device.type == "cpu" and nd.is_compact() \
        and _host_dtype(kind, nd.dtype) is nd.dtype \
        and not (is_grad_enabled() and tensor.requires_grad)
    if in_place:
        tensor._check_inplace()
        _fill(nd.buffer[nd.offset:nd.offset + nd.size], generator, kind, a, b,
              contiguous=True)
        tensor._bump_version()
        return tensor
    drawn = _in_memory_order(tensor, lambda shape: _draw_floats(
        shape, tensor.dtype, tensor.device, False, generator, kind, a, b,
        contiguous=nd.is_compact()))
    return _write_drawn(tensor, drawn)


# torch's samplers that run one double uniform per element through a formula (draws.pyx)
_FROM_UNIFORMS = {"exponential": Sampler.EXPONENTIAL, "cauchy": Sampler.CAUCHY,
                  "geometric": Sampler.GEOMETRIC}


def _fill(out, generator, kind, a, b, contiguous):
    if kind == "uniform":
        uniform_into(out, generator, a, b)
    elif kind == "normal":
        normal_into(out, generator, a, b, contiguous)
    elif kind == "log_normal":
        pairs_into(out, _generator(generator), a, b, log_normal=True)
    elif kind == "bernoulli":
        _in_chunks(out, host_rng(generator), 2, bernoulli_numbers, a)
    else:
        _in_chunks(out, host_rng(generator), 2, from_uniforms, _FROM_UNIFORMS[kind], a, b)


def _host_dtype(kind, dtype):
    """The dtype a fill draws in: uniform and normal draw 16-bit floats in float32 (as torch's
    kernels do); the other samplers compute in double and round once to the dtype, so only
    float32 is drawn as itself."""
    if kind in ("uniform", "normal"):
        return dtype.compute
    return dtype if dtype is dtypes.float32 else dtypes.float64


default_generator = Generator().manual_seed(_entropy_seed())   # as torch's: random per process


def _draw(size, dtype, device, requires_grad, generator, draw):
    """Fill a new tensor of `size` with values from `draw(rng, shape)`, on the right device."""
    shape = check_shape(_shape_args(size))
    dtype = dtype or dtypes.get_default_dtype()
    device = target_device(device)
    if device.type == "meta":
        return _no_draws(shape, dtype, device, requires_grad)
    # Drawn on the host for every device: the same seed gives the same values on CPU and GPU.
    values = draw(host_rng(generator), shape)
    nd = NDArray.from_numpy(np.asarray(values), dtype, device)
    return wrap(nd, requires_grad)


def _draw_floats(size, dtype, device, requires_grad, generator, kind, a, b, contiguous=True):
    """rand/randn and their in-place forms: the draws fill a new host buffer of the output's
    dtype (float16 / bfloat16 draw in float32, as torch's values are, and are rounded by our
    cast), uploaded for a GPU."""
    shape = check_shape(_shape_args(size))
    dtype = dtype or dtypes.get_default_dtype()
    device = target_device(device)
    if device.type == "meta":
        return _no_draws(shape, dtype, device, requires_grad)
    wide = _host_dtype(kind, dtype)
    host = np.empty(math.prod(shape), wide.storage)
    _fill(host, generator, kind, a, b, contiguous)
    backend = get_backend(device)
    buffer = host if device.type == "cpu" else backend.from_host(host)
    drawn = NDArray(buffer, shape, contiguous_strides(shape), 0, wide, device, backend)
    return wrap(drawn.astype(dtype), requires_grad)


def _check_float(dtype, kernel):
    if dtype is not None and not dtype.is_floating_point:
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{TORCH_NAMES[dtype.name]}'")


def rand(*size, generator=None, dtype=None, device=None, requires_grad=False, **kwargs):
    """torch.rand: uniform draws in [0, 1) in the default float dtype (or dtype): torch's CPU
    values for the same seed (on a GPU too: drawn on the host)."""
    size = _keyword_size(size, kwargs, "rand")
    if dtype is not None and dtype.is_complex:      # both parts uniform in [0, 1)
        return _drawn_complex(size, dtype, device, requires_grad, generator, uniform_)
    _check_float(dtype, "check_uniform_bounds")
    return _draw_floats(size, dtype, device, requires_grad, generator, "uniform", 0.0, 1.0)


def randn(*size, generator=None, dtype=None, device=None, requires_grad=False, **kwargs):
    """torch.randn: standard normal draws in the default float dtype (or dtype): torch's CPU
    values for the same seed (float32 as torch's AVX2 kernel makes them; a torch built without
    it differs in the last bits; float16/bfloat16 are float32 normals rounded, which torch's
    are not)."""
    size = _keyword_size(size, kwargs, "randn")
    if dtype is not None and dtype.is_complex:      # unit variance: each part's is 1/2
        return _drawn_complex(size, dtype, device, requires_grad, generator, normal_)
    _check_float(dtype, "normal_kernel_cpu")
    return _draw_floats(size, dtype, device, requires_grad, generator, "normal", 0.0, 1.0)


def _drawn_complex(size, dtype, device, requires_grad, generator, fill):
    """A complex rand / randn: torch's draws for the (re, im) floats in memory order, so the
    same seed gives torch's values."""
    shape = check_shape(_shape_args(size))
    out = wrap(NDArray.empty(shape, dtype, target_device(device)))
    if out.device.type != "meta":
        fill(out, generator=generator)
    return out.requires_grad_(requires_grad)


def randint(*args, generator=None, dtype=None, device=None, requires_grad=False, **kwargs):
    """torch.randint's two forms: randint(high, size) and randint(low, high, size), positional
    or by keyword (low=, high=, size=)."""
    low, high, size = _randint_args(args, kwargs)
    if high <= low:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= "
                           f"to={high}")
    return _draw((size,), dtype or dtypes.int64, device, requires_grad, None,
                 lambda rng, shape: _integers(generator, shape, low, high - low))


def _integers(generator, shape, low, span, wide=None):
    """An int64 array of `shape`: low + draw % span (integers_into)."""
    out = np.empty(shape, np.int64)
    integers_into(out.reshape(-1), generator, low, span, wide)
    return out


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
    Generator().manual_seed(s)), going on through torch's stream as torch's calls do; from that
    n on, torch switches algorithm and the permutations differ. On a CUDA device the
    permutation is the CPU one (torch's CUDA randperm draws differently)."""
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    draws = twister_draws(host_rng(generator), max(n - 1, 0))
    return _draw(((n,),), dtype or dtypes.int64, device, requires_grad, None,
                 lambda rng, shape: _swapped_range(draws, n))


def _swapped_range(draws, n):
    """r = arange(n); for i in range(n - 1): swap r[i] and r[i + draws[i] % (n - i)]."""
    out = np.empty(n, dtype=np.int64)
    swap_shuffle(draws, out)
    return out


def _drawn_like(input, dtype, device, requires_grad, fill):
    """A *_like draw as torch makes it: empty_like (input's layout kept, preserve_format) then
    filled in place, so the values land in the memory order torch's fill visits."""
    out = empty_like(input, dtype=dtype, device=device)
    fill(out)
    return out.requires_grad_() if requires_grad else out


def rand_like(input, dtype=None, device=None, requires_grad=False):
    """torch.rand_like: rand with input's size and layout, and its dtype and device unless
    given (drawn from the global generator; torch 2.13's generator= and memory_format= are not
    accepted)."""
    return _drawn_like(input, dtype, device, requires_grad, lambda t: t.uniform_())


def randn_like(input, dtype=None, device=None, requires_grad=False):
    """torch.randn_like: randn with input's size and layout, and its dtype and device unless
    given (drawn from the global generator; torch 2.13's generator= and memory_format= are not
    accepted)."""
    return _drawn_like(input, dtype, device, requires_grad, lambda t: t.normal_())


def randint_like(input, low=0, high=None, dtype=None, device=None, requires_grad=False):
    """torch.randint_like: randint(low, high) with input's size and layout, and its dtype and
    device unless given; a single bound is high (low 0). torch 2.13's generator= and
    memory_format= are not accepted."""
    if high is None:
        low, high = 0, low
    return _drawn_like(input, dtype, device, requires_grad, lambda t: t.random_(low, high))


def bernoulli(input, p=None, generator=None):
    """torch.bernoulli: 1 with probability input (or p) elementwise, in input's dtype. With a
    tensor of probabilities, torch's CPU values for the same seed: a uniform in the
    probabilities' dtype below each one (float16/bfloat16 draw in float32). With a number p,
    a 53-bit uniform below p, as torch 2.13's CPU kernel draws it (on an Intel CPU too)."""
    if p is None:
        return _bernoulli_draws(input.detach(), tuple(input.shape), input.device,
                                generator).to(input.dtype)
    return _draw_floats(tuple(input.shape), input.dtype, input.device, False, generator,
                        "bernoulli", p, 0.0)


def _bernoulli_draws(probs, shape, device, generator):
    """A bool tensor of `shape`: uniform draws in the dtype of probs (a tensor broadcast to
    shape) below probs, compared by our kernel."""
    dtype = probs.dtype.compute
    uniforms = np.empty(math.prod(shape), dtype.storage)
    uniform_into(uniforms, generator, 0.0, 1.0)
    drawn = wrap(NDArray.from_numpy(uniforms.reshape(shape), dtype, device))
    return drawn < probs.to(device=device, dtype=dtype)


def multinomial(input, num_samples, replacement=False, generator=None):
    """torch.multinomial: num_samples category indices per row of input (1-D or 2-D non-negative
    weights), with or without replacement, as int64; torch's checks and messages, and torch's
    CPU indices for the same seed."""
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
    if replacement and num_samples > 1:
        return _with_replacement(input, num_samples, generator)
    return _exponential_race(input.detach(), num_samples, generator)


def _exponential_race(weights, num_samples, generator):
    """torch's CPU sampler without replacement (and for a single sample): one Exp(1) draw q
    per weight, in the weights' dtype; the samples are the categories with the largest
    weight / q (the Gumbel-max trick, exponentiated): argmax for one, topk for more. Once the
    categories of positive weight are used up, the zero-weight ones follow (all tied at 0)."""
    race = weights / exponential_(empty_like(weights), 1.0, generator=generator)
    if num_samples == 1:
        return race.argmax(-1, keepdim=True)
    return race.topk(num_samples).indices


def _with_replacement(weights, num_samples, generator):
    """torch's CPU sampler with replacement: per row, the running sums of the weights in their
    dtype divided by the total, the last set to 1; each sample is the first slot whose sum is
    not below a 53-bit uniform draw (our searchsorted), the rows' draws one row after another."""
    from .functions.joining import stack
    from .functions.stats import searchsorted
    rows = weights.detach().cpu()
    rows = rows.to(rows.dtype.compute).reshape(-1, rows.shape[-1])
    samples = []
    for row in rows:
        cumulative = row.cumsum(0)
        cumulative = cumulative / cumulative[-1]
        cumulative[-1] = 1
        uniforms = np.empty(num_samples, np.float64)
        uniform_into(uniforms, generator, 0.0, 1.0)
        samples.append(searchsorted(cumulative.double(), wrap(NDArray.from_numpy(uniforms))))
    return (samples[0] if weights.ndim == 1 else stack(samples)).to(weights.device)


def _check_distribution(probs, with_replacement):
    """torch's checks of multinomial's rows of weights (NaN fails the `>= 0` test first). Its
    sampler without replacement (and for one sample) words the first two checks as one."""
    totals = probs.sum(axis=-1)
    # the common case in two reductions: no weight below 0 or NaN (the minimum), none infinite
    # (every total finite); a total that overflowed only leads to the full checks, which pass
    if not ((probs.min() >= 0 if probs.size else True) and np.isfinite(totals).all()):
        if not with_replacement and not ((probs >= 0) & np.isfinite(probs)).all():
            raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
        if not (probs >= 0).all():
            raise RuntimeError("invalid multinomial distribution (encountering probability "
                               "entry < 0)")
        if not np.isfinite(probs).all():
            raise RuntimeError("invalid multinomial distribution (encountering probability "
                               "entry = infinity or NaN)")
    if (totals <= 0).any():
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")


def normal(mean, std=1.0, size=None, generator=None):
    """N(mean, std²) draws: tensor means and/or stds (broadcast), or numbers and a size."""
    if not isinstance(std, Tensor) and std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        like = mean if isinstance(mean, Tensor) else std
        return randn(*like.shape, generator=generator, dtype=like.dtype,
                     device=like.device) * std + mean
    # torch: empty(size).normal_(mean, std), one rounding of normal·std + mean
    return _draw_floats((tuple(size),), None, None, False, generator, "normal", mean, std)


def poisson(input, generator=None):
    """torch.poisson: a Poisson draw for each rate in input, in input's dtype: torch's CPU
    values for the same seed (Hoermann's transformed rejection from a rate of 10, products of
    uniforms below, each rate taken as a double)."""
    rates = np.array(input.detach().cpu().numpy(), np.float64, order="C")   # 0-d kept
    if (rates < 0).any():
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    draws = np.empty_like(rates)
    poisson_draws(_bit_generator(generator), rates, draws)
    return wrap(NDArray.from_numpy(draws, input.dtype, input.device))


def binomial(count, prob, generator=None):
    """torch.binomial: Binomial(count, prob) draws elementwise (broadcast), in count's dtype:
    torch's CPU values for the same seed (BTRS from a mean of 10, inversion below, in count's
    float or double arithmetic). A count or prob <= 0 draws 0, prob >= 1 draws count, a NaN
    prob (or a NaN or infinite count, where torch would loop forever) gives NaN."""
    wide = count.dtype.compute
    counts, probs = np.broadcast_arrays(*(np.asarray(t.detach().cpu().numpy(), wide.storage)
                                          for t in (count, prob)))
    counts, probs = (np.array(a, order="C") for a in (counts, probs))   # 0-d kept
    draws = np.empty_like(counts)
    binomial_draws(_bit_generator(generator), counts, probs, draws)
    return wrap(NDArray.from_numpy(draws, wide, count.device)).to(count.dtype)


def get_rng_state():
    """torch.get_rng_state: the global generator's state as a tensor, for set_rng_state. It is an
    int64 tensor encoding the twister's state, the cached normal and the seed (torch's is a
    uint8 tensor of its own layout): only minitorch's set_rng_state reads it."""
    return default_generator.get_state()


def set_rng_state(new_state):
    """torch.set_rng_state: restore the global generator's state from get_rng_state's tensor."""
    default_generator.set_state(new_state)


def capture_state():
    """The global generator's whole state as Python objects (the twister's state, the cached
    normal, the seed), for restore_state: what checkpoint replays and vmap compares."""
    return default_generator.capture()


def restore_state(state):
    default_generator.restore(state)


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices",
             device_type="cuda"):
    """torch.random.fork_rng: the global generator's state is restored when the block ends
    (unless enabled is False). Draws for every device come from that one generator here, so
    `devices` and `device_type` need no state of their own."""
    if not enabled:
        yield
        return
    state = capture_state()
    try:
        yield
    finally:
        restore_state(state)


def same_state(a, b):
    """Whether two captured states are equal (the twister's key is an array)."""
    (name, key, position, has_gauss, gauss), other = a[0], b[0]
    return a[1:] == b[1:] and (name, position, has_gauss, gauss) == \
        (other[0], other[2], other[3], other[4]) and np.array_equal(key, other[1])


# ---- in-place samplers (Tensor methods) -------------------------------------------------------
# random_() without bounds: draw % span, span (and whether the draw is 64-bit) per dtype, as
# torch's uniform_int: every integer the dtype holds from 0 (floats: those it holds exactly)
_RANDOM_SPAN = {"int64": (2 ** 63, True), "float64": (2 ** 53 + 1, True),
                "float32": (2 ** 24 + 1, False), "float16": (2 ** 11 + 1, False),
                "bfloat16": (2 ** 8 + 1, False), "int32": (2 ** 31, False),
                "int16": (2 ** 15, False), "int8": (2 ** 7, False), "uint8": (2 ** 8, False),
                "bool": (2, False)}


def uniform_(self, a=0.0, b=1.0, *, generator=None):
    if self.dtype.is_complex:
        return _fill_pairs(self, generator, "uniform", a, b)
    _check_float(self.dtype, "check_uniform_bounds")
    return fill_floats(self, generator, "uniform", a, b)


def normal_(self, mean=0.0, std=1.0, *, generator=None):
    if self.dtype.is_complex:       # std / √2 per part: the complex numbers' std is `std`
        return _fill_pairs(self, generator, "normal", mean, std / math.sqrt(2))
    _check_float(self.dtype, "normal_kernel_cpu")
    return fill_floats(self, generator, "normal", mean, std)


def _fill_pairs(tensor, generator, kind, a, b):
    """uniform_ / normal_ of a complex tensor as torch's: the real dtype's draws for its
    (re, im) floats, in memory order (so the same seed gives torch's values)."""
    tensor._check_inplace()
    fill_floats(wrap(tensor._data.as_real()), generator, kind, a, b)
    tensor._bump_version()
    return tensor


def random_(self, from_=0, to=None, *, generator=None):
    """Integers in [from, to - 1] (one argument: [0, to - 1]; none: every integer the dtype
    holds exactly, from 0): torch's CPU values for the same seed."""
    if to is None and from_ != 0:
        from_, to = 0, from_
    if to is None:
        if self.dtype.name not in _RANDOM_SPAN:
            raise NotImplementedError(f'"random_" not implemented for '
                                      f"'{TORCH_NAMES[self.dtype.name]}'")
        span, wide = _RANDOM_SPAN[self.dtype.name]
    else:
        if from_ >= to:
            raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got "
                               f"from={from_} >= to={to}")
        span, wide = to - from_, None
    return fill_drawn(self, None, lambda rng, shape: _integers(generator, shape, from_, span,
                                                               wide))


def random_int64(generator=None):
    """torch.empty((), dtype=torch.int64).random_(generator=generator).item(): the seed torch's
    samplers and DataLoader draw for their own streams."""
    return int(_integers(generator, (), 0, 2 ** 63, True))


def exponential_(self, lambd=1.0, *, generator=None):
    """-log(1 - u) / lambd: torch's CPU values for the same seed."""
    _check_continuous(self, "Exponential", TORCH_NAMES)
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
    return fill_floats(self, generator, "exponential", lambd, 0.0)


def geometric_(self, p, *, generator=None):
    """The number of Bernoulli(p) trials up to the first success: torch's CPU values."""
    if self.dtype == dtypes.bool_:
        raise NotImplementedError("\"geometric_cpu\" not implemented for 'Bool'")
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    return fill_floats(self, generator, "geometric", p, 0.0)


def log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    """exp of normal(mean, std) draws: torch's CPU values for the same seed."""
    if not self.dtype.is_floating_point:
        raise NotImplementedError(f"\"log_normal_cpu\" not implemented for "
                                  f"'{TORCH_NAMES[self.dtype.name]}'")
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
    return fill_floats(self, generator, "log_normal", mean, std)


def cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    """median + sigma · tan(π(u - 1/2)): torch's CPU values for the same seed."""
    _check_continuous(self, "Cauchy", C_NAMES)
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
    return fill_floats(self, generator, "cauchy", median, sigma)


def _check_continuous(tensor, distribution, names):
    """torch's error for a continuous sampler on an integer tensor (its wording names the
    dtype as torch's enum for exponential_, as the C++ type for cauchy_)."""
    if not tensor.dtype.is_floating_point:
        raise RuntimeError(f"{distribution} distribution is a continuous probability "
                           f"distribution. dtype must be a floating point but you specified "
                           f"{names[tensor.dtype.name]}")


def bernoulli_(self, p=0.5, *, generator=None):
    """1 with probability p (a number, or a tensor broadcast to self's shape), else 0 (drawn as
    bernoulli draws them)."""
    if isinstance(p, Tensor):
        p = p.detach()
    elif not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
    if isinstance(p, Tensor):
        return _write_drawn(self, _bernoulli_draws(p, tuple(self.shape), self.device,
                                                   generator).to(self.dtype))
    return fill_floats(self, generator, "bernoulli", p, 0.0)


