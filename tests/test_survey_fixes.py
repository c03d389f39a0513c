"""Fixes from the survey of public PyTorch programs run under minitorch (/tmp/survey): torch.dist
as one DistBackward0 node, torch's copy-construct warning for torch.tensor(t) / t.new_tensor(t),
and the full-backward-hook warning naming the user's `.backward()` line. Compared with torch
where it is installed."""
import math
import warnings

import numpy as np
import pytest

import minitorch as mt
import minitorch.nn as nn


def _torch():
    return pytest.importorskip("torch", reason="torch is needed for the comparison")


def _caught(function):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        function()
    return caught


# ---- torch.dist ---------------------------------------------------------------------------------
@pytest.mark.parametrize("p", [1, 2, 3, 0.5, math.inf, -math.inf])
def test_dist_values_and_gradients_match_torch(device, p):
    torch = _torch()
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 3)).astype(np.float32), rng.standard_normal(3).astype(np.float32)
    b[1] = a[0, 1]                                  # a zero difference: the p < 1 special case
    ours_a = mt.tensor(a, device=device, requires_grad=True)
    ours_b = mt.tensor(b, device=device, requires_grad=True)
    theirs_a, theirs_b = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    ours, theirs = mt.dist(ours_a, ours_b, p), torch.dist(theirs_a, theirs_b, p)
    assert ours.grad_fn.name() == theirs.grad_fn.name() == "DistBackward0"
    np.testing.assert_allclose(ours.item(), theirs.item(), rtol=1e-5)
    ours.backward()
    theirs.backward()
    for mine, reference in ((ours_a, theirs_a), (ours_b, theirs_b)):
        assert mine.grad.shape == tuple(reference.grad.shape)
        np.testing.assert_allclose(mine.grad.cpu().numpy(), reference.grad.numpy(),
                                   rtol=1e-5, atol=1e-6)


def test_dist_p0_counts_and_gives_no_gradient(device):
    torch = _torch()
    a = mt.tensor([1.0, 2.0, 3.0], device=device, requires_grad=True)
    b = mt.tensor([1.0, 0.0, 5.0], device=device)
    theirs_a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    ours, theirs = mt.dist(a, b, 0), torch.dist(theirs_a, torch.tensor([1.0, 0.0, 5.0]), 0)
    assert ours.item() == theirs.item() == 2.0
    ours.backward()
    theirs.backward()
    assert a.grad is None and theirs_a.grad is None


def test_dist_graph_edges_reach_both_operands_directly():
    a = mt.randn(3, requires_grad=True)
    b = mt.randn(3, requires_grad=True)
    edges = [node for node, _ in mt.dist(a, b).grad_fn.next_functions if node is not None]
    assert [type(node).__name__ for node in edges] == ["AccumulateGrad", "AccumulateGrad"]
    assert mt.dist(a, b).grad_fn.name() == a.dist(b).grad_fn.name() == "DistBackward0"


def test_dist_dtypes_and_integer_error():
    torch = _torch()
    f32, f64 = mt.tensor([1.0, 2.0]), mt.tensor([1.0, 3.0], dtype=mt.float64)
    assert mt.dist(f32, f64).dtype is mt.float64
    assert mt.dist(f32, mt.tensor([1, 3])).dtype is mt.float32
    with pytest.raises(RuntimeError) as ours:
        mt.dist(mt.tensor([1, 2]), mt.tensor([1, 3]))
    with pytest.raises(RuntimeError) as theirs:
        torch.dist(torch.tensor([1, 2]), torch.tensor([1, 3]))
    assert str(ours.value) == str(theirs.value)


def test_dist_double_backward_matches_gradgradcheck():
    a = mt.randn(2, 3, dtype=mt.float64, requires_grad=True)
    b = mt.randn(3, dtype=mt.float64, requires_grad=True)
    for p in (1.5, 2, 3):
        assert mt.autograd.gradcheck(lambda x, y: mt.dist(x, y, p), (a, b))
        assert mt.autograd.gradgradcheck(lambda x, y: mt.dist(x, y, p), (a, b))


# ---- torch.tensor(t): the copy-construct warning ------------------------------------------------
def test_tensor_from_tensor_warns_at_the_callers_line():
    torch = _torch()
    source = mt.ones(2)
    caught = _caught(lambda: mt.tensor(source))
    reference = _caught(lambda: torch.tensor(torch.ones(2)))
    assert [str(w.message) for w in caught] == [str(w.message) for w in reference]
    assert [w.category for w in caught] == [UserWarning]
    assert caught[0].filename == __file__
    caught = _caught(lambda: source.new_tensor(source))
    reference = _caught(lambda: torch.ones(2).new_tensor(torch.ones(2)))
    assert [str(w.message) for w in caught] == [str(w.message) for w in reference]
    assert caught[0].filename == __file__


def test_tensor_from_other_data_does_not_warn():
    source = mt.ones(2)
    assert _caught(lambda: mt.tensor([source[0], source[1]])) == []
    assert _caught(lambda: mt.as_tensor(source)) == []
    assert _caught(lambda: mt.tensor(np.ones(2))) == []
    assert _caught(lambda: source.new_tensor([1.0, 2.0])) == []


# ---- full backward hooks: the warning names the user's line -------------------------------------
def test_full_backward_hook_warning_points_at_the_backward_call():
    layer = nn.Linear(2, 2)
    layer.register_full_backward_hook(lambda module, grad_input, grad_output: None)
    caught = _caught(lambda: layer(mt.ones(1, 2)).sum().backward())
    assert len(caught) == 1 and caught[0].category is UserWarning
    assert str(caught[0].message).startswith("Full backward hook is firing")
    assert caught[0].filename == __file__


# ---- torch.backends.cuda.sdp_kernel (deprecated) ------------------------------------------------
def test_sdp_kernel_switches_backends_and_warns_as_torch():
    torch = _torch()
    flags = ("flash_sdp_enabled", "math_sdp_enabled", "mem_efficient_sdp_enabled",
             "cudnn_sdp_enabled")
    for lib in (mt, torch):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with lib.backends.cuda.sdp_kernel(enable_flash=False, enable_cudnn=False) as context:
                inside = [getattr(lib.backends.cuda, flag)() for flag in flags]
        assert context == {}
        assert inside == [False, True, True, False]
        assert all(getattr(lib.backends.cuda, flag)() for flag in flags)
        assert [w.category for w in caught] == [FutureWarning]
        assert str(caught[0].message).startswith("`torch.backends.cuda.sdp_kernel()` is "
                                                 "deprecated.")
        if lib is mt:
            ours = caught[0]
    assert (ours.filename, ours.lineno) == (caught[0].filename, caught[0].lineno)  # contextlib's


# ---- to(memory_format=...) ----------------------------------------------------------------------
def test_tensor_to_memory_format(device):
    x = mt.randn(2, 3, 4, 5, device=device, requires_grad=True)
    y = x.to(memory_format=mt.channels_last)
    assert y.stride() == (60, 1, 15, 3) and y.grad_fn.name() == "ToCopyBackward0"
    y.backward(mt.ones_like(y))
    np.testing.assert_array_equal(x.grad.cpu().numpy(), np.ones((2, 3, 4, 5)))
    np.testing.assert_array_equal(y.detach().cpu().numpy(), x.detach().cpu().numpy())
    z = y.detach()
    assert z.to(memory_format=mt.channels_last) is z
    assert z.to(memory_format=mt.preserve_format) is z
    assert z.to(memory_format=mt.channels_last, copy=True) is not z
    assert z.to(memory_format=mt.contiguous_format).stride() == (60, 20, 5, 1)
    assert z.to(mt.float64, memory_format=mt.channels_last).stride() == (60, 1, 15, 3)
    v = mt.randn(2, 3, 4, 5, 6, device=device)
    assert v.to(memory_format=mt.channels_last_3d).stride() == (360, 1, 90, 18, 3)


def test_tensor_to_memory_format_errors_match_torch():
    torch = _torch()
    for lib in (mt, torch):
        with pytest.raises(RuntimeError, match="^required rank 4 tensor to use channels_last "
                                               "format$"):
            lib.randn(3).to(memory_format=lib.channels_last)
    with pytest.raises(TypeError) as ours:
        mt.randn(3).to(memory_format=3)
    with pytest.raises(TypeError) as theirs:
        torch.randn(3).to(memory_format=3)
    assert str(ours.value) == str(theirs.value)


def test_module_to_memory_format_only_touches_4d_and_5d_tensors(device):
    conv = nn.Conv2d(3, 4, 3).to(device, memory_format=mt.channels_last)
    assert conv.weight.stride() == (27, 1, 9, 3) and conv.bias.stride() == (1,)
    assert isinstance(conv.weight, nn.Parameter)
    out = conv(mt.randn(1, 3, 8, 8, device=device).to(memory_format=mt.channels_last))
    assert out.shape == (1, 4, 6, 6)
    conv64 = nn.Conv2d(3, 3, 3).to(mt.float64, memory_format=mt.channels_last)
    assert conv64.weight.dtype is mt.float64 and conv64.weight.stride() == (27, 1, 9, 3)
    assert nn.Conv3d(2, 2, 2).to(memory_format=mt.channels_last_3d).weight.stride() == \
        (16, 1, 8, 4, 2)
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
        nn.Conv3d(2, 2, 2).to(memory_format=mt.channels_last)


# ---- nn.Module.compile() ------------------------------------------------------------------------
def test_module_compile_returns_none_and_keeps_calls():
    layer = nn.Linear(2, 2)
    expected = layer(mt.ones(2))
    assert layer.compile() is None
    np.testing.assert_array_equal(layer(mt.ones(2)).detach().numpy(), expected.detach().numpy())
    with pytest.raises(RuntimeError, match="Either mode or options can be specified"):
        layer.compile(mode="max-autotune", options={})
