"""Names PyTorch training scripts reach for at set-up: mt.cpu, mt.compiler, nn.init's
deprecated spellings, mt.utils.swap_tensors (the cuda memory/device API is in
test_cuda_runtime_api.py, the top-level functions in test_toplevel_setup_functions.py)."""
import weakref

import numpy as np
import pytest

import minitorch as mt

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")


# ---- mt.cpu -------------------------------------------------------------------------------
def test_cpu_device_answers():
    assert mt.cpu.is_available() and mt.cpu.is_initialized()
    assert mt.cpu.device_count() == 1
    assert mt.cpu.current_device() == "cpu"
    assert mt.cpu.synchronize() is None and mt.cpu.synchronize("cpu") is None
    assert mt.cpu.set_device("cpu") is None


def test_cpu_streams_are_no_op_contexts():
    default = mt.cpu.current_stream()
    s = mt.cpu.Stream()
    with mt.cpu.stream(s):
        assert mt.cpu.current_stream() is s
        with mt.cpu.stream(None):
            assert mt.cpu.current_stream() is s
    assert mt.cpu.current_stream() is default
    event = mt.cpu.Event()
    assert event.record() is None and event.query() is True and event.wait() is None
    assert s.wait_stream(default) is None and s.wait_event(event) is None
    assert isinstance(mt.cpu.stream(s), mt.cpu.StreamContext)


def test_cpu_amp_aliases_warn_and_autocast_on_the_cpu():
    with pytest.warns(FutureWarning, match=r"`torch.cpu.amp.autocast\(args...\)` is deprecated"):
        region = mt.cpu.amp.autocast()
    assert region.device == "cpu" and region.fast_dtype == mt.bfloat16
    a = mt.randn(4, 4)
    with region:
        assert (a @ a).dtype == mt.bfloat16
    with pytest.warns(FutureWarning, match=r"torch.amp.GradScaler\('cpu', args...\)"):
        scaler = mt.cpu.amp.GradScaler(init_scale=8.0)
    assert isinstance(scaler, mt.amp.GradScaler) and scaler.get_scale() == 8.0
    assert mt.cpu.amp.autocast.__name__ == "autocast"


def test_cpu_module_is_importable_by_name():
    import importlib
    assert importlib.import_module("minitorch.cpu.amp") is mt.cpu.amp


# ---- mt.compiler --------------------------------------------------------------------------
def test_compiler_answers_and_decorators():
    assert mt.compiler.is_compiling() is False
    assert mt.compiler.is_dynamo_compiling() is False
    assert mt.compiler.is_exporting() is False
    assert mt.compiler.reset() is None and mt.compiler.cudagraph_mark_step_begin() is None
    assert mt.compiler.compile is mt.compile

    def f(x):
        return x + 1
    assert mt.compiler.disable(f) is f
    assert mt.compiler.disable(recursive=False)(f) is f
    assert mt.compiler.allow_in_graph(f) is f
    assert mt.compiler.allow_in_graph([f, len]) == [f, len]
    assert mt.compiler.assume_constant_result(f) is f


def test_compiler_rejects_what_torch_rejects():
    with pytest.raises(AssertionError, match="fn must be callable"):
        mt.compiler.disable(3)
    with pytest.raises(AssertionError, match="allow_in_graph expects a callable"):
        mt.compiler.allow_in_graph(3)


# ---- nn.init's deprecated spellings ------------------------------------------------------
@pytest.mark.parametrize("name, args", [
    ("uniform", (-1.0, 1.0)), ("normal", (0.0, 2.0)), ("xavier_uniform", ()),
    ("xavier_normal", ()), ("kaiming_uniform", ()), ("kaiming_normal", ()), ("orthogonal", ()),
    ("sparse", (0.5,))])
def test_init_deprecated_aliases_warn_and_draw_as_the_in_place_form(name, args):
    mt.manual_seed(3)
    expected = getattr(mt.nn.init, name + "_")(mt.empty(6, 5), *args)
    mt.manual_seed(3)
    tensor = mt.empty(6, 5)
    with pytest.warns(FutureWarning, match=rf"`nn.init.{name}` is now deprecated in favor of "
                                           rf"`nn.init.{name}_`."):
        result = getattr(mt.nn.init, name)(tensor, *args)
    assert result is tensor
    np.testing.assert_array_equal(tensor.numpy(), expected.numpy())


@pytest.mark.parametrize("name, shape, args", [
    ("constant", (2, 3), (0.5,)), ("eye", (3, 4), ()), ("dirac", (4, 2, 3), ())])
def test_init_deprecated_deterministic_aliases(name, shape, args):
    with pytest.warns(FutureWarning):
        result = getattr(mt.nn.init, name)(mt.empty(*shape), *args)
    expected = getattr(mt.nn.init, name + "_")(mt.empty(*shape), *args)
    np.testing.assert_array_equal(result.numpy(), expected.numpy())


@needs_torch
def test_init_all_matches_torch():
    assert set(mt.nn.init.__all__) == set(torch.nn.init.__all__)


# ---- mt.utils.swap_tensors ----------------------------------------------------------------
def test_swap_tensors_exchanges_contents_and_class():
    a = mt.ones(2)
    b = mt.nn.Parameter(mt.zeros(3))
    a.note = "a's"
    ia, ib = id(a), id(b)
    mt.utils.swap_tensors(a, b)
    assert (id(a), id(b)) == (ia, ib)
    assert type(a) is mt.nn.Parameter and type(b) is mt.Tensor
    assert a.shape == (3,) and a.requires_grad and not b.requires_grad
    np.testing.assert_array_equal(b.numpy(), [1.0, 1.0])
    assert b.note == "a's" and not hasattr(a, "note")
    (a * 2).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [2.0, 2.0, 2.0])


def test_swap_tensors_refuses_weakly_referenced_tensors():
    a, b = mt.ones(1), mt.ones(1)
    keep = weakref.ref(b)
    with pytest.raises(RuntimeError, match="Cannot swap t2 because it has weakref associated"):
        mt.utils.swap_tensors(a, b)
    assert keep() is b


@needs_torch
def test_swap_tensors_matches_torch():
    for lib in (mt, torch):
        a, b = lib.arange(3.0), lib.zeros(2, 2)
        lib.utils.swap_tensors(a, b)
        assert tuple(a.shape) == (2, 2) and b.tolist() == [0.0, 1.0, 2.0]
