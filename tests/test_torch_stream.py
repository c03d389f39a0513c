"""rand, randn, randint, uniform_, normal_, random_ and randperm give torch's CPU values for a
seed and go on through one stream as torch's calls do (minitorch/random.py and the kernels in
_cpu/draws.pyx). The pinned values are torch's (its CPU generator has kept them across
releases); the comparisons with an installed torch cover more sizes."""
import numpy as np
import pytest

import minitorch as mt
from minitorch import random as R
from minitorch._cpu.draws import integers, normal_blocks, normal_pairs, uniform_floats


def _torch():
    return pytest.importorskip("torch")


def test_pinned_values_of_torch_seed_0(device):
    def seeded(make):
        mt.manual_seed(0)
        return make().cpu().tolist()
    assert seeded(lambda: mt.rand(3, device=device)) == [
        0.49625658988952637, 0.7682217955589294, 0.08847743272781372]
    assert seeded(lambda: mt.rand(2, dtype=mt.float64, device=device)) == [
        0.9700530018065531, 0.707819864399788]
    assert seeded(lambda: mt.randn(5, dtype=mt.float64, device=device)) == [
        1.5409961082440433, -0.2934289057609464, -2.1787893820745574, 0.5684312772806678,
        -1.084522342424021]
    assert [seeded(lambda: mt.randn(20, dtype=mt.float64, device=device))[i]
            for i in (0, 7, 15, 19)] == [-2.310411800234176, -0.830510051008449,
                                         -0.8910030351707375, -0.7498915228391941]
    # float32 normals by torch's AVX2 kernel (its Cephes log and sin/cos), to the bit
    assert [seeded(lambda: mt.randn(20, device=device))[i] for i in (0, 7, 8, 15, 19)] == [
        -1.1258398294448853, 1.85300612449646, 0.46809640526771545, -0.843676745891571,
        0.05373690277338028]
    assert seeded(lambda: mt.randint(0, 10, (5,), device=device)) == [4, 9, 3, 0, 3]
    assert seeded(lambda: mt.empty(2, dtype=mt.int64, device=device).random_()) == [
        900450186894289455, 3969543146641149120]
    assert seeded(lambda: mt.empty(3, device=device).uniform_(-2.3, 3.7)) == [
        0.677539587020874, 2.309330940246582, -1.7691353559494019]
    assert seeded(lambda: mt.empty(3, dtype=mt.float64, device=device).normal_(1.5, 2.0)) == [
        4.581992216488087, 0.9131421884781072, -2.857578764149115]


def test_the_stream_goes_on_across_calls():
    mt.manual_seed(0)
    mt.randint(0, 10, (5,))
    assert mt.randint(-5, 2 ** 34, (2,)).tolist() == [10619096840, 10155837255]  # 64-bit draws
    mt.manual_seed(5)
    mt.randperm(4)
    assert mt.randperm(4).tolist() == [1, 3, 2, 0]
    assert mt.rand(1, dtype=mt.float64).tolist() == [0.31513260814905053]
    # the pairwise sampler keeps its second normal for the next call, as torch's does
    mt.manual_seed(0)
    mt.randn(3, dtype=mt.float64)
    assert mt.randn(1, dtype=mt.float64).tolist() == [0.5684312772806678]
    g = mt.Generator().manual_seed(7)
    assert mt.rand(2, generator=g, dtype=mt.float64).tolist() == [0.279380429906404,
                                                                  0.27369371365176565]


def test_initialisation_and_shuffling_follow_torch():
    mt.manual_seed(0)
    layer = mt.nn.Linear(3, 2)
    assert layer.weight.tolist() == [
        [-0.004322517663240433, 0.3097158372402191, -0.4751853346824646],
        [-0.4248946011066437, -0.2223689705133438, 0.15482072532176971]]
    assert layer.bias.tolist() == [-0.011439144611358643, 0.45777493715286255]
    mt.manual_seed(1)
    data = mt.utils.data.TensorDataset(mt.arange(10))
    batches = [b[0].tolist() for b in mt.utils.data.DataLoader(data, batch_size=4, shuffle=True)]
    assert batches == [[4, 2, 0, 6], [8, 7, 9, 1], [5, 3]]


def test_state_round_trip_keeps_the_cached_normal():
    mt.manual_seed(3)
    mt.randn(1, dtype=mt.float64)                   # leaves a normal cached
    state = mt.get_rng_state()
    a = mt.randn(7, dtype=mt.float64)
    mt.set_rng_state(state)
    assert mt.equal(a, mt.randn(7, dtype=mt.float64))
    captured = R.capture_state()
    b = mt.rand(3)
    R.restore_state(captured)
    assert R.same_state(captured, R.capture_state())
    assert mt.equal(b, mt.rand(3))
    assert not R.same_state(captured, R.capture_state())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fills_in_chunks_equal_one_pass(dtype, monkeypatch):
    """Large fills draw a chunk at a time (a bounded peak); the values are those one kernel
    call over all the draws gives."""
    n = 3 * 16 + 5
    per = 2 if dtype == "float64" else 1
    monkeypatch.setattr(R, "_CHUNK", 16)
    chunked = np.empty(n, dtype)
    R.normal_into(chunked, mt.Generator().manual_seed(11), 0.5, 2.0)
    twister = R.torch_twister(11)
    whole = np.empty(n, dtype)
    normal_blocks(R.twister_draws(twister, per * 48), whole[:48], 0.5, 2.0)
    R.twister_draws(twister, per * 5)
    normal_blocks(R.twister_draws(twister, per * 16), whole[n - 16:], 0.5, 2.0)
    assert np.array_equal(chunked, whole)
    R.uniform_into(chunked, mt.Generator().manual_seed(11), -1.0, 3.0)
    uniform_floats(R.twister_draws(R.torch_twister(11), per * n), whole, -1.0, 3.0)
    assert np.array_equal(chunked, whole)


def test_kernels_refuse_bad_buffers():
    draws = np.zeros(64, np.uint32)
    with pytest.raises(TypeError, match="uniform_floats: out must be a C-contiguous buffer"):
        uniform_floats(draws, np.zeros(4, np.int32), 0.0, 1.0)
    with pytest.raises(ValueError, match="uniform_floats: 64 draws, 80 needed"):
        uniform_floats(draws, np.zeros(40, np.float64), 0.0, 1.0)
    with pytest.raises(TypeError, match="draws must be a C-contiguous uint32 buffer"):
        normal_blocks(draws.astype(np.int64), np.zeros(16, np.float32), 0.0, 1.0)
    with pytest.raises(ValueError, match="not whole blocks of 16"):
        normal_blocks(draws, np.zeros(20, np.float32), 0.0, 1.0)
    with pytest.raises(ValueError, match="normal_pairs: 64 draws, 68 needed"):
        normal_pairs(draws, np.zeros(34, np.float64), 0.0, 1.0, None)
    with pytest.raises(ValueError, match="span must be positive"):
        integers(draws, np.zeros(4, np.int64), 0, 0, False)
    out = np.zeros(3, np.int64)
    integers(np.array([7, 8, 9], np.uint32), out, -2, 5, False)
    assert out.tolist() == [0, 1, 2]
    integers(np.array([1, 2, 0, 3], np.uint32), out[:2], 10, 2 ** 40, True)
    assert out[:2].tolist() == [10 + ((1 << 32) | 2) % 2 ** 40, 13]


def test_random_bounds_per_dtype():
    mt.manual_seed(0)
    assert mt.empty(4, dtype=mt.bool).random_().dtype is mt.bool
    for dtype, top in ((mt.uint8, 255), (mt.int8, 127), (mt.int32, 2 ** 31 - 1)):
        values = mt.empty(1000, dtype=dtype).random_()
        assert 0 <= values.min().item() and values.max().item() <= top
    with pytest.raises(RuntimeError, match="random_ expects 'from' to be less than 'to'"):
        mt.empty(2).random_(5, 5)


@pytest.mark.parametrize("n", [1, 7, 15, 16, 17, 33, 1000, 70001])
def test_against_torch(n):
    torch = _torch()
    for name in ("float32", "float64"):
        ours, theirs = getattr(mt, name), getattr(torch, name)
        torch.manual_seed(n)
        mt.manual_seed(n)
        assert np.array_equal(mt.rand(n, dtype=ours).numpy(), torch.rand(n, dtype=theirs).numpy())
        a, b = mt.randn(n, dtype=ours).numpy(), torch.randn(n, dtype=theirs).numpy()
        if name == "float32" and n >= 16 and not np.array_equal(a, b):
            # a torch without its AVX2 kernel fills float32 with libm's log/sin/cos instead
            np.testing.assert_allclose(a, b, rtol=2e-6, atol=2e-6)
        else:
            assert np.array_equal(a, b)
        assert np.array_equal(mt.randint(-3, 1000, (n,)).numpy(),
                              torch.randint(-3, 1000, (n,)).numpy())
        assert np.array_equal(mt.empty(n, dtype=ours).uniform_(-0.5, 2.0).numpy(),
                              torch.empty(n, dtype=theirs).uniform_(-0.5, 2.0).numpy())
        assert np.array_equal(mt.randperm(n).numpy(), torch.randperm(n).numpy())


def test_a_seeded_training_run_follows_torch():
    """The same script under both libraries, from the same seed and nothing copied across:
    the same initial weights, batches, shuffling and dropout masks, so the same losses (to
    float32 rounding of the two libraries' kernels)."""
    torch = _torch()

    def run(lib):
        lib.manual_seed(0)
        model = lib.nn.Sequential(lib.nn.Linear(20, 32), lib.nn.ReLU(), lib.nn.Dropout(0.3),
                                  lib.nn.Linear(32, 4))
        optimizer = lib.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        data = lib.utils.data.TensorDataset(lib.randn(64, 20), lib.randint(0, 4, (64,)))
        losses = []
        for x, y in lib.utils.data.DataLoader(data, batch_size=16, shuffle=True):
            optimizer.zero_grad()
            loss = lib.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        return losses
    np.testing.assert_allclose(run(mt), run(torch), rtol=1e-5)


@pytest.mark.parametrize("init", ["kaiming_uniform_", "kaiming_normal_", "xavier_uniform_",
                                  "xavier_normal_", "uniform_", "normal_", "orthogonal_",
                                  "sparse_"])
def test_initialisers_follow_torch(init):
    torch = _torch()
    shape = (6, 10) if init == "sparse_" else (6, 4, 3)
    args = (0.5,) if init == "sparse_" else ()

    def draw(lib):
        lib.manual_seed(4)
        return getattr(lib.nn.init, init)(lib.empty(*shape), *args).numpy()
    ours, theirs = draw(mt), draw(torch)
    if init == "orthogonal_":       # the same matrix, factored by another QR: rounding apart
        np.testing.assert_allclose(ours, theirs, atol=1e-6)
    else:
        assert np.array_equal(ours, theirs)


def test_normal_function_follows_torch():
    torch = _torch()
    for args in ((0.3, 2.5, (20,)), (0.3, 2.5, (3, 5)), ("mean", 2.0), ("both",)):
        def draw(lib):
            lib.manual_seed(1)
            means = lib.arange(20.0).reshape(4, 5)
            if args[0] == "mean":
                return lib.normal(means, args[1]).numpy()
            if args[0] == "both":
                return lib.normal(means, means * 0.1 + 1).numpy()
            return lib.normal(*args).numpy()
        assert np.array_equal(draw(mt), draw(torch)), args


def test_multinomial_with_replacement_follows_torch(device):
    weights = mt.tensor([[0.1, 0.9, 0.5, 0.2, 0.3], [1.0, 0.0, 2.0, 0.5, 0.5]], device=device)
    mt.manual_seed(0)
    drawn = mt.multinomial(weights, 8, replacement=True)
    assert drawn.device == weights.device and drawn.dtype is mt.int64
    # torch's CPU indices for seed 0 (the first row's draws, then the second's)
    assert drawn.cpu().tolist() == [[4, 2, 1, 4, 2, 3, 1, 1], [2, 2, 2, 0, 2, 2, 2, 2]]
    assert (drawn[1] != 1).all().item()             # a zero weight is never drawn
    g = mt.Generator().manual_seed(0)
    assert list(mt.utils.data.WeightedRandomSampler([0.1, 0.9, 0.5], 5, generator=g)) == [
        2, 2, 1, 2, 1]


def test_bernoulli_of_a_probability_tensor_follows_torch(device):
    probs = mt.tensor([[0.1, 0.9, 0.5, 0.2, 0.7, 0.3]] * 2, device=device)
    mt.manual_seed(0)
    drawn = mt.bernoulli(probs)
    assert drawn.dtype is mt.float32 and drawn.device == probs.device
    # torch's CPU values for seed 0: a float uniform below each probability
    assert drawn.cpu().tolist() == [[0.0, 1.0, 1.0, 1.0, 1.0, 0.0], [0.0, 1.0, 1.0, 0.0, 1.0, 0.0]]
    mt.manual_seed(0)
    again = mt.zeros(2, 6, device=device).bernoulli_(probs[0])    # broadcast over the rows
    assert mt.equal(again, drawn)
    with pytest.raises(RuntimeError, match="bernoulli_ expects p to be in"):
        mt.zeros(3).bernoulli_(1.5)


@pytest.mark.parametrize("bounds", [(0.0, 0.02, -2.0, 2.0), (0.0, 1.0, -0.5, 0.5),
                                    (1.0, 2.0, 0.0, 0.3), (0.0, 1.0, 1.5, 3.0)])
def test_trunc_normal_follows_torch_2_13(bounds):
    """Both of torch 2.13's strategies: redrawing the normals outside [a, b], and uniform
    proposals accepted by their density (older torch used an inverse-CDF method)."""
    torch = _torch()
    if tuple(int(v) for v in torch.__version__.split(".")[:2]) < (2, 13):
        pytest.skip(f"torch {torch.__version__} samples trunc_normal_ another way")

    def draw(lib):
        lib.manual_seed(5)
        return lib.nn.init.trunc_normal_(lib.empty(7, 30), *bounds).numpy()
    ours = draw(mt)
    assert np.array_equal(ours, draw(torch))
    assert bounds[2] <= ours.min() and ours.max() <= bounds[3]


def test_fork_rng_restores_the_global_stream():
    mt.manual_seed(0)
    with mt.random.fork_rng():
        inside = mt.randn(3, dtype=mt.float64)        # leaves a normal cached, too
    assert mt.equal(inside, mt.randn(3, dtype=mt.float64))
    with mt.random.fork_rng(enabled=False):
        mt.rand(1)
    mt.manual_seed(0)
    mt.randn(3, dtype=mt.float64)
    mt.rand(1)
    first = mt.rand(2)
    mt.manual_seed(0)
    with mt.random.fork_rng(devices=[]):
        mt.rand(5)
    mt.randn(3, dtype=mt.float64)
    mt.rand(1)
    assert mt.equal(first, mt.rand(2))


def test_pinned_values_of_the_other_samplers(device):
    """torch's CPU values for seed 0 (exponential, Cauchy and geometric from one 53-bit uniform
    each through libm; log-normal from the pairwise normal sampler)."""
    def seeded(make):
        mt.manual_seed(0)
        return make().cpu().tolist()
    f64 = dict(dtype=mt.float64, device=device)
    assert seeded(lambda: mt.empty(3, **f64).exponential_(1.5)) == [
        2.338884124471761, 0.8202565094531178, 0.41002939592934096]
    assert seeded(lambda: mt.empty(3, **f64).cauchy_(0.5, 2.5)) == [
        26.994323316705742, 2.41191814901475, 0.17925164479206485]
    assert seeded(lambda: mt.empty(3, **f64).log_normal_(0.2, 0.7)) == [
        3.59195734644176, 0.9946143210191263, 0.2657624093020413]
    assert seeded(lambda: mt.empty(5, device=device).geometric_(0.4)) == [1, 1, 2, 1, 1]
    assert seeded(lambda: mt.multinomial(mt.tensor([0.1, 0.2, 0.3, 0.4], device=device),
                                         3)) == [2, 1, 3]
    if device == "cpu":         # on the CPU dropout draws torch's noise (bernoulli_(1 - p))
        assert seeded(lambda: mt.nn.functional.dropout(mt.ones(8), 0.5)) == [
            0.0, 0.0, 2.0, 0.0, 0.0, 0.0, 2.0, 2.0]


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_the_other_samplers_follow_torch(dtype):
    torch = _torch()
    for name, args in [("exponential_", (1.7,)), ("cauchy_", (0.7, 1.3)),
                       ("log_normal_", (0.3, 1.7)), ("geometric_", (0.3,))]:
        for n in (5, 100, 70000):       # the pairwise sampler's cache; several chunks
            def draw(lib):
                lib.manual_seed(4)
                values = getattr(lib.empty(n, dtype=getattr(lib, dtype)), name)(*args)
                return values.float().numpy(), lib.rand(1).item()
            (ours, next_ours), (theirs, next_theirs) = draw(mt), draw(torch)
            assert np.array_equal(ours, theirs), (name, n)
            assert next_ours == next_theirs, (name, n)       # the stream goes on alike
    mt.manual_seed(1)
    torch.manual_seed(1)
    assert np.array_equal(mt.empty(300, dtype=mt.int64).geometric_(0.2).numpy(),
                          torch.empty(300, dtype=torch.int64).geometric_(0.2).numpy())


def test_sampler_arguments_and_dtypes_are_checked_as_torch_does():
    with pytest.raises(RuntimeError, match="Exponential distribution is a continuous "
                       "probability distribution. dtype must be a floating point but you "
                       "specified Long"):
        mt.empty(3, dtype=mt.int64).exponential_()
    with pytest.raises(RuntimeError, match="but you specified long int"):
        mt.empty(3, dtype=mt.int64).cauchy_()
    with pytest.raises(NotImplementedError, match="\"log_normal_cpu\" not implemented for 'Int'"):
        mt.empty(3, dtype=mt.int32).log_normal_()
    with pytest.raises(NotImplementedError, match="\"geometric_cpu\" not implemented for 'Bool'"):
        mt.empty(3, dtype=mt.bool).geometric_(0.5)
    for call, message in [(lambda t: t.exponential_(-1), "expects lambda > 0.0, but found "
                           "lambda=-1"),
                          (lambda t: t.cauchy_(0, -1), "expects sigma > 0.0, but found sigma=-1"),
                          (lambda t: t.log_normal_(1, 0), "expects std > 0.0, but found std=0"),
                          (lambda t: t.geometric_(1.5), r"expects p to be in \(0, 1\), but got "
                           "p=1.5")]:
        t = mt.zeros(3)
        with pytest.raises(RuntimeError, match=message):
            call(t)
        assert t.tolist() == [0.0, 0.0, 0.0]            # nothing drawn into it


def test_a_permuted_tensor_is_filled_in_memory_order():
    """torch's in-place samplers walk their output as it lies in memory (TensorIterator): a
    transposed tensor gets the draws a contiguous one of its storage shape would (normal_
    aside: torch's blocked sampler serves contiguous tensors only)."""
    for fill in (lambda t: t.uniform_(), lambda t: t.exponential_(),
                 lambda t: t.bernoulli_(0.3), lambda t: t.random_(0, 10)):
        mt.manual_seed(3)
        transposed = fill(mt.empty(6, 5).t())
        mt.manual_seed(3)
        assert mt.equal(transposed, fill(mt.empty(6, 5)).t())
    torch = pytest.importorskip("torch")
    for make in (lambda lib: lib.empty(2, 3, 4).permute(2, 0, 1),
                 lambda lib: lib.empty(6, 8)[:, ::2], lambda lib: lib.empty(6, 5).t()[:, None]):
        for name, args in [("uniform_", ()), ("normal_", ()), ("log_normal_", ()),
                           ("geometric_", (0.2,)), ("bernoulli_", (0.4,))]:
            def draw(lib):
                lib.manual_seed(0)
                return getattr(make(lib), name)(*args).numpy()
            assert np.array_equal(draw(mt), draw(torch)), name


def test_multinomial_without_replacement_follows_torch():
    torch = _torch()
    rng = np.random.default_rng(0)
    for shape, n, replacement in [((10,), 1, False), ((10,), 4, False), ((5, 12), 3, False),
                                  ((5, 12), 1, True), ((6,), 6, False)]:
        weights = rng.random(shape).astype(np.float32)

        def draw(lib):
            lib.manual_seed(1)
            return lib.multinomial(lib.tensor(weights), n, replacement=replacement).numpy()
        assert np.array_equal(draw(mt), draw(torch)), (shape, n)


def test_dropout_and_its_kin_drop_what_torch_drops():
    torch = _torch()
    x = np.random.default_rng(0).standard_normal((8, 6, 5, 5)).astype(np.float32)
    calls = [("dropout", x, dict(p=0.3)), ("dropout2d", x, dict(p=0.4)),
             ("dropout1d", x.reshape(8, 6, 25), dict(p=0.5)),
             ("alpha_dropout", x, dict(p=0.2, training=True)),
             ("feature_alpha_dropout", x, dict(p=0.25, training=True)),
             ("rrelu", x, dict(lower=0.1, upper=0.3, training=True)),
             ("gumbel_softmax", x[0, 0], dict(tau=0.7, hard=True))]
    for name, data, kwargs in calls:
        def run(lib):
            lib.manual_seed(3)
            return getattr(lib.nn.functional, name)(lib.tensor(data), **kwargs).numpy()
        assert np.array_equal(run(mt), run(torch)), name
    q, k, v = (np.random.default_rng(i).standard_normal((2, 3, 7, 8)).astype(np.float32)
               for i in range(3))

    def attend(lib):
        lib.manual_seed(5)
        return lib.nn.functional.scaled_dot_product_attention(
            *(lib.tensor(t) for t in (q, k, v)), dropout_p=0.3).numpy()
    np.testing.assert_allclose(attend(mt), attend(torch), rtol=1e-5, atol=1e-6)


def test_gamma_family_samples_follow_torch(device):
    """torch's Marsaglia-Tsang sampler (its boost below alpha 1, float arithmetic for float32
    alphas), taking uniforms and cached normals from the stream as torch's does."""
    mt.manual_seed(0)
    alphas = mt.tensor([0.5, 2.0, 7.5], dtype=mt.float64, device=device)
    assert mt.distributions.Gamma(alphas, 1.5).sample().cpu().tolist() == [
        0.0005262388042317155, 0.4210270699253886, 5.069765685733238]
    scalar = mt.distributions.Gamma(mt.tensor(2.0, device=device), 1.0)
    assert scalar.sample().shape == () and scalar.sample((3,)).shape == (3,)
    mt.manual_seed(0)
    assert mt.distributions.Dirichlet(alphas.float()).sample().cpu().tolist() == [
        9.583104110788554e-05, 0.07667139172554016, 0.9232327938079834]
    torch = pytest.importorskip("torch")
    for make in (lambda d, lib: d.Gamma(lib.tensor([0.3, 1.0, 2.5, 9.0] * 20), 2.0),
                 lambda d, lib: d.Gamma(lib.tensor([0.05, 4.0], dtype=lib.float64), 0.5),
                 lambda d, lib: d.Chi2(lib.tensor([1.0, 3.0])),
                 lambda d, lib: d.Beta(lib.tensor([0.5, 2.0]), lib.tensor([3.0, 0.7])),
                 lambda d, lib: d.Dirichlet(lib.tensor([[0.2, 1.0, 3.0], [5.0, 0.5, 0.9]]))):
        def draw(lib):
            lib.manual_seed(2)
            values = make(lib.distributions, lib).sample((7,)).numpy()
            return values, lib.rand(1).item()
        (ours, after), (theirs, their_after) = draw(mt), draw(torch)
        assert np.array_equal(ours, theirs) and after == their_after


def test_poisson_and_binomial_follow_torch(device):
    """torch's samplers: Poisson by Hoermann's transformed rejection (rate >= 10) or products
    of uniforms; Binomial by BTRS (mean >= 10) or inversion, in the counts' float arithmetic."""
    mt.manual_seed(0)
    assert mt.poisson(mt.tensor([0.5, 4.0, 25.0], dtype=mt.float64, device=device)).cpu(
        ).tolist() == [2.0, 5.0, 22.0]
    mt.manual_seed(0)
    drawn = mt.binomial(mt.tensor([10.0, 100.0, 7.0], device=device),
                        mt.tensor([0.3, 0.6, 0.9], device=device))
    assert drawn.device.type == device and drawn.cpu().tolist() == [6.0, 62.0, 7.0]
    nan = float("nan")
    edges = mt.binomial(mt.tensor([5.0, 5.0, -1.0, 5.0, nan, float("inf")]),
                        mt.tensor([0.0, 1.0, 0.5, nan, 0.5, 0.5]))
    assert edges.tolist()[:3] == [0.0, 5.0, 0.0] and mt.isnan(edges[3:]).all().item()
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    rates = np.concatenate([rng.random(200) * 30, [0.0, 9.99, 10.0, 100.0]])
    for dtype in ("float32", "float64"):
        counts = rng.integers(0, 200, 300).astype(dtype)
        probs = rng.random(300).astype(dtype)

        def draw(lib):
            lib.manual_seed(0)
            return (lib.poisson(lib.tensor(rates.astype(dtype))).numpy(),
                    lib.binomial(lib.tensor(counts), lib.tensor(probs)).numpy(),
                    lib.rand(1).item())
        for ours, theirs in zip(draw(mt), draw(torch)):
            assert np.array_equal(ours, theirs), dtype


def test_like_draws_keep_the_layout_and_torchs_values(device):
    """rand_like / randn_like / randint_like are empty_like (preserve_format) then a fill, as
    in torch: a transposed input gives transposed strides and torch's values in memory order."""
    torch = pytest.importorskip("torch")
    results = []
    for lib, dev in ((mt, device), (torch, "cpu")):
        lib.manual_seed(0)
        x = lib.ones(2, 3, device=dev).t()
        drawn = [lib.rand_like(x), lib.randn_like(x), lib.randint_like(x, 3, 10)]
        results.append([(t.stride(), t.cpu().numpy()) for t in drawn])
    for (ours_stride, ours), (their_stride, theirs) in zip(*results):
        assert ours_stride == their_stride == (1, 3)
        np.testing.assert_allclose(ours, theirs, rtol=1e-6)
