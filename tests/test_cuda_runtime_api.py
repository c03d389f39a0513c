"""mt.cuda's runtime API scripts use at set-up and for logging: memory statistics over CuPy's
pool (and the peaks minitorch keeps), device properties, initialisation, the generator's
state, events, the device context managers and OutOfMemoryError. The GPU cases run on a real
GPU or the emulator (MINITORCH_TEST_CUDA=emulator); the no-GPU cases where there is none."""
import warnings

import pytest

import minitorch as mt

needs_cuda = pytest.mark.skipif(not mt.cuda.is_available(), reason="no CUDA device")
without_cuda = pytest.mark.skipif(mt.cuda.is_available(), reason="a CUDA device is available")


def _emulated():
    import sys
    return getattr(sys.modules.get("cupy"), "emulated", False)


# ---- without a GPU: torch's answers before CUDA starts ------------------------------------
@without_cuda
def test_memory_figures_are_zero_without_a_gpu():
    for name in ("memory_allocated", "max_memory_allocated", "memory_reserved",
                 "max_memory_reserved"):
        assert getattr(mt.cuda, name)() == 0
    assert mt.cuda.memory_stats() == {} and not mt.cuda.is_initialized()
    assert mt.cuda.reset_peak_memory_stats() is None
    assert "Allocated memory" in mt.cuda.memory_summary()
    assert mt.cuda.get_rng_state_all() == [] and mt.cuda.set_rng_state_all([]) is None


@without_cuda
@pytest.mark.parametrize("call", [lambda: mt.cuda.mem_get_info(),
                                  lambda: mt.cuda.get_device_properties(0),
                                  lambda: mt.cuda.get_device_capability(), lambda: mt.cuda.init(),
                                  lambda: mt.cuda.get_rng_state(), lambda: mt.cuda.initial_seed(),
                                  lambda: mt.cuda.Event(enable_timing=True),
                                  lambda: mt.cuda.device(0).__enter__()])
def test_gpu_calls_raise_without_a_gpu(call):
    with pytest.raises(RuntimeError):
        call()


@without_cuda
def test_rng_setters_do_nothing_without_a_gpu():
    mt.manual_seed(5)
    state = mt.get_rng_state()
    mt.cuda.seed()
    mt.cuda.seed_all()
    mt.cuda.set_rng_state(mt.zeros(3, dtype=mt.uint8))
    assert mt.equal(mt.get_rng_state(), state)


def test_out_of_memory_error_is_torchs_type():
    assert mt.OutOfMemoryError is mt.cuda.OutOfMemoryError
    assert issubclass(mt.cuda.OutOfMemoryError, RuntimeError)
    assert issubclass(mt.cuda.OutOfMemoryError, MemoryError)    # as CuPy's, for its callers


def test_device_of_a_cpu_tensor_and_negative_devices_change_nothing():
    with mt.cuda.device_of(mt.ones(1)):
        pass
    with mt.cuda.device(-1):
        pass
    with mt.cuda.device(None):
        pass
    assert isinstance(mt.cuda.stream(None), mt.cuda.StreamContext)
    with mt.cuda.stream(None):
        pass


def test_deprecated_memory_names_warn():
    with pytest.warns(FutureWarning, match="`torch.cuda.memory_cached` has been renamed to "
                                           "`torch.cuda.memory_reserved`"):
        assert mt.cuda.memory_cached() == mt.cuda.memory_reserved()
    with pytest.warns(FutureWarning, match="renamed to `torch.cuda.max_memory_reserved`"):
        mt.cuda.max_memory_cached()
    with pytest.warns(FutureWarning, match="reset_max_memory_allocated now calls "
                                           "torch.cuda.reset_peak_memory_stats"):
        mt.cuda.reset_max_memory_allocated()


# ---- with a GPU ---------------------------------------------------------------------------
@needs_cuda
def test_memory_allocated_follows_tensors():
    mt.cuda.init()
    assert mt.cuda.is_initialized()
    before = mt.cuda.memory_allocated()
    t = mt.empty(1 << 20, device="cuda")        # 4 MiB
    assert mt.cuda.memory_allocated() - before >= 4 << 20
    assert mt.cuda.memory_reserved() >= mt.cuda.memory_allocated()
    del t
    assert mt.cuda.memory_allocated() == before or not _emulated()


@needs_cuda
def test_peaks_and_reset():
    mt.cuda.init()
    mt.cuda.reset_peak_memory_stats()
    base = mt.cuda.memory_allocated()
    assert mt.cuda.max_memory_allocated() == base
    t = mt.ones(1 << 18, device="cuda")         # 1 MiB
    u = t * 2
    del t, u
    peak = mt.cuda.max_memory_allocated()
    assert peak >= base + (2 << 20)
    assert mt.cuda.max_memory_reserved() >= peak
    stats = mt.cuda.memory_stats()
    assert stats["allocated_bytes.all.peak"] == peak
    assert stats["allocated_bytes.all.current"] == mt.cuda.memory_allocated()
    assert stats["reserved_bytes.all.current"] == mt.cuda.memory_reserved()
    assert list(stats) == sorted(stats)
    mt.cuda.reset_peak_memory_stats("cuda:0")
    assert mt.cuda.max_memory_allocated(0) == mt.cuda.memory_allocated(0)
    assert "Allocated memory" in mt.cuda.memory_summary()


@needs_cuda
def test_mem_get_info_and_properties():
    free, total = mt.cuda.mem_get_info()
    assert 0 < free <= total
    props = mt.cuda.get_device_properties(0)
    assert props.total_memory == total and props.multi_processor_count > 0
    assert isinstance(props.name, str) and props.name == mt.cuda.get_device_name()
    assert mt.cuda.get_device_capability() == (props.major, props.minor)
    assert mt.cuda.get_device_capability("cuda:0") == (props.major, props.minor)
    assert f"multi_processor_count={props.multi_processor_count}" in repr(props)
    with pytest.raises(AssertionError, match="Invalid device id"):
        mt.cuda.get_device_properties(mt.cuda.device_count())
    with pytest.raises(ValueError, match="Expected a cuda device, but got: cpu"):
        mt.cuda.get_device_properties("cpu")


@needs_cuda
def test_rng_state_is_the_shared_generator():
    mt.manual_seed(7)
    state = mt.cuda.get_rng_state()
    first = mt.rand(4, device="cuda").cpu()
    mt.cuda.set_rng_state(state)
    assert mt.equal(mt.rand(4, device="cuda").cpu(), first)
    states = mt.cuda.get_rng_state_all()
    assert len(states) == mt.cuda.device_count()
    mt.cuda.set_rng_state_all(states)
    mt.cuda.manual_seed_all(11)
    assert mt.cuda.initial_seed() == 11
    mt.cuda.seed()
    assert mt.cuda.initial_seed() == mt.initial_seed()


@needs_cuda
def test_events_time_and_order_work():
    start, end = mt.cuda.Event(enable_timing=True), mt.cuda.Event(enable_timing=True)
    assert start.query()        # never recorded: nothing to wait for
    start.record()
    x = mt.ones(256, 256, device="cuda")
    (x @ x).sum()
    end.record()
    end.synchronize()
    assert end.query() and start.elapsed_time(end) >= 0.0
    s = mt.cuda.Stream()
    event = s.record_event()
    mt.cuda.current_stream().wait_event(event)
    event.wait(s)


@needs_cuda
def test_event_elapsed_time_errors():
    plain, timed = mt.cuda.Event(), mt.cuda.Event(enable_timing=True)
    with pytest.raises(ValueError, match="Both events must be created with argument "
                                         "'enable_timing=True'."):
        plain.elapsed_time(timed)
    with pytest.raises(ValueError, match="Both events must be recorded before calculating "
                                         "elapsed time."):
        timed.elapsed_time(mt.cuda.Event(enable_timing=True))


@needs_cuda
def test_device_context_managers():
    before = mt.cuda.current_device()
    with mt.cuda.device(0):
        assert mt.cuda.current_device() == 0
    t = mt.ones(2, device="cuda")
    with mt.cuda.device_of(t):
        assert mt.cuda.current_device() == t.get_device()
    assert mt.cuda.current_device() == before
    s = mt.cuda.Stream()
    with mt.cuda.StreamContext(s):
        assert mt.cuda.current_stream() == s


@needs_cuda
@pytest.mark.skipif(not _emulated(), reason="sets a limit on the emulator's memory pool")
def test_allocation_failure_raises_out_of_memory_error():
    import cupy
    mt.cuda.init()
    pool = cupy.get_default_memory_pool()
    pool.set_limit(size=pool.used_bytes() + (1 << 20))
    try:
        ooms = mt.cuda.memory_stats()["num_ooms"]
        with pytest.raises(mt.cuda.OutOfMemoryError, match="CUDA out of memory. Tried to "
                                                           "allocate 4.00 MiB"):
            mt.empty(1 << 20, device="cuda")
        assert mt.cuda.memory_stats()["num_ooms"] == ooms + 1
        mt.cuda.reset_accumulated_memory_stats()
        assert mt.cuda.memory_stats()["num_ooms"] == 0
    finally:
        pool.set_limit(size=0)
    assert mt.empty(1 << 20, device="cuda").shape == (1 << 20,)


@needs_cuda
@pytest.mark.skipif(not _emulated(), reason="limits the emulator's memory pool")
def test_per_process_memory_fraction():
    mt.cuda.init()
    assert mt.cuda.get_per_process_memory_fraction() == 1.0
    with pytest.raises(TypeError, match="Invalid type for fraction argument, must be `float`"):
        mt.cuda.set_per_process_memory_fraction(1)
    with pytest.raises(ValueError, match=r"Invalid fraction value: 1.5. Allowed range: 0~1"):
        mt.cuda.set_per_process_memory_fraction(1.5)
    try:
        mt.cuda.set_per_process_memory_fraction(0.25)
        assert abs(mt.cuda.get_per_process_memory_fraction() - 0.25) < 1e-9
        with pytest.raises(mt.cuda.OutOfMemoryError):
            mt.empty(mt.cuda.mem_get_info()[1] // 8, device="cuda")     # half the memory
        mt.cuda.set_per_process_memory_fraction(0.0)
        assert mt.cuda.get_per_process_memory_fraction() == 0.0
        with pytest.raises(mt.cuda.OutOfMemoryError):
            mt.empty(1, device="cuda")
    finally:
        import cupy
        cupy.get_default_memory_pool().set_limit(size=0)
