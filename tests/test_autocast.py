"""mt.autocast / mt.amp.autocast: which ops run in the low dtype and which in float32 (compared
with torch's CPU autocast where torch is installed), nesting, the decorator form, the cast
cache, gradients, torch's warnings and errors, and the cuda lists (through the emulator)."""
import warnings

import numpy as np
import pytest

import minitorch as mt
import minitorch.nn.functional as F
from minitorch.functions import autocast_policy

try:
    import torch
except ImportError:
    torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")


def _ops(lib):
    """(name, thunk) pairs over a small model's worth of ops, written once for both libraries."""
    nnf = lib.nn.functional
    g = np.random.default_rng(0)
    x = lib.tensor(g.standard_normal((4, 6)), dtype=lib.float32)
    w = lib.tensor(g.standard_normal((3, 6)), dtype=lib.float32).requires_grad_()
    img = lib.tensor(g.standard_normal((2, 3, 6, 6)), dtype=lib.float32)
    k = lib.tensor(g.standard_normal((4, 3, 3, 3)), dtype=lib.float32)
    target = lib.tensor([0, 1, 2, 0])
    q = lib.tensor(g.standard_normal((1, 2, 4, 8)), dtype=lib.float32)
    return {
        "linear": lambda: nnf.linear(x, w),
        "matmul": lambda: x @ x.t(),
        "mm": lambda: lib.mm(x, x.t()),
        "bmm": lambda: lib.bmm(img[:, 0], img[:, 1]),
        "addmm": lambda: lib.addmm(x[:, :4], x, x.t()[:, :4]),
        "conv2d": lambda: nnf.conv2d(img, k, padding=1),
        "conv_transpose2d": lambda: nnf.conv_transpose2d(img, k.transpose(0, 1)),
        "sdpa": lambda: nnf.scaled_dot_product_attention(q, q, q),
        "mse_of_linear": lambda: nnf.mse_loss(nnf.linear(x, w), x[:, :3]),
        "cross_entropy": lambda: nnf.cross_entropy(nnf.linear(x, w), target[:4] % 3),
        "softmax": lambda: nnf.softmax(nnf.linear(x, w), -1),
        "layer_norm": lambda: nnf.layer_norm(nnf.linear(x, w), (3,)),
        "relu": lambda: nnf.relu(nnf.linear(x, w)),
        "add_mixed": lambda: nnf.linear(x, w) + x[:, :3],
        "float64_mm": lambda: lib.mm(x.double(), x.t().double()),
        "sum": lambda: nnf.linear(x, w).sum(),
    }


def _dtype_names(lib, **kwargs):
    with lib.autocast("cpu", **kwargs):
        return {name: str(op().dtype).split(".")[-1] for name, op in _ops(lib).items()}


def test_cpu_lists():
    got = _dtype_names(mt)
    for name in ("linear", "matmul", "mm", "bmm", "addmm", "conv2d", "conv_transpose2d", "sdpa",
                 "softmax", "layer_norm", "relu", "sum"):
        assert got[name] == "bfloat16", name
    for name in ("mse_of_linear", "cross_entropy", "add_mixed"):
        assert got[name] == "float32", name
    assert got["float64_mm"] == "float64"
    assert _dtype_names(mt, dtype=mt.float16)["linear"] == "float16"


@needs_torch
@pytest.mark.parametrize("low", ["bfloat16", "float16"])
def test_cpu_lists_match_torch(low):
    assert _dtype_names(mt, dtype=getattr(mt, low)) == \
        _dtype_names(torch, dtype=getattr(torch, low))


def test_nesting_decorator_and_state():
    x, w = mt.ones(2, 3), mt.ones(4, 3)
    assert not mt.is_autocast_enabled("cpu")
    with mt.autocast("cpu"):
        assert mt.is_autocast_enabled("cpu") and mt.get_autocast_dtype("cpu") is mt.bfloat16
        with mt.autocast("cpu", enabled=False):
            assert F.linear(x, w).dtype is mt.float32
        with mt.autocast("cpu", dtype=mt.float16):
            assert F.linear(x, w).dtype is mt.float16
        assert F.linear(x, w).dtype is mt.bfloat16
    assert not mt.is_autocast_enabled("cpu") and F.linear(x, w).dtype is mt.float32

    @mt.amp.autocast("cpu")
    def forward(a):
        return F.linear(a, w)
    assert forward(x).dtype is mt.bfloat16 and F.linear(x, w).dtype is mt.float32


def test_parameters_are_cast_once_per_region_and_get_float32_gradients():
    layer = mt.nn.Linear(6, 3)
    x = mt.randn(4, 6)
    with mt.autocast("cpu"):
        a, b = layer(x), layer(x * 2)
        assert len(autocast_policy.STATE.cache) == 2        # weight and bias, cast once each
        loss = F.mse_loss(a + b, mt.zeros(4, 3))
    assert not autocast_policy.STATE.cache
    loss.backward()
    assert layer.weight.grad.dtype is mt.float32 and layer.bias.grad.dtype is mt.float32
    reference = mt.nn.Linear(6, 3)
    reference.load_state_dict(layer.state_dict())
    F.mse_loss(reference(x) + reference(x * 2), mt.zeros(4, 3)).backward()
    np.testing.assert_allclose(layer.weight.grad.numpy(), reference.weight.grad.numpy(),
                               rtol=5e-2, atol=5e-2)


def test_cache_disabled_and_non_leaf_tensors_are_not_cached():
    w = mt.ones(3, 3, requires_grad=True)
    with mt.autocast("cpu", cache_enabled=False):
        F.linear(mt.ones(2, 3), w)
        assert not autocast_policy.STATE.cache
    with mt.autocast("cpu"):
        F.linear(mt.ones(2, 3), w * 2)
        assert not autocast_policy.STATE.cache


def test_warnings_and_errors_as_torch():
    with pytest.warns(UserWarning, match="In CPU autocast, but the target dtype is not "
                                         "supported. Disabling autocast."):
        region = mt.autocast("cpu", dtype=mt.float32)
    with region:
        assert not mt.is_autocast_enabled("cpu")
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda"):
        mt.autocast("xyz")
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
        mt.autocast(mt.device("cpu"))
    if not mt.cuda.is_available():
        with pytest.warns(UserWarning, match="CUDA is not available"):
            region = mt.autocast("cuda")
        with region:
            assert not mt.is_autocast_enabled("cuda")


def test_cuda_lists(device):
    if device != "cuda":
        pytest.skip("the cuda lists need a cuda device (the emulator serves)")
    x = mt.randn(4, 6, device="cuda")
    w = mt.randn(3, 6, device="cuda")
    with mt.autocast("cuda"):
        y = F.linear(x, w)
        assert y.dtype is mt.float16
        assert F.softmax(y, -1).dtype is mt.float32          # cuda's fp32 list
        assert F.layer_norm(y, (3,)).dtype is mt.float32
        with pytest.raises(RuntimeError, match="unsafe to autocast"):
            F.binary_cross_entropy(y.sigmoid(), mt.ones(4, 3, device="cuda"))
        cpu_linear = F.linear(x.cpu(), w.cpu())
        assert cpu_linear.dtype is mt.float32                # autocast is per device type
    with pytest.warns(FutureWarning, match="torch.cuda.amp.autocast"):
        region = mt.cuda.amp.autocast()
    with region:
        assert F.linear(x, w).dtype is mt.float16


def test_custom_fwd_casts_inputs():
    class Square(mt.autograd.Function):
        @staticmethod
        @mt.amp.custom_fwd(device_type="cpu", cast_inputs=mt.float32)
        def forward(ctx, a):
            ctx.save_for_backward(a)
            assert not mt.is_autocast_enabled("cpu")
            return a * a

        @staticmethod
        @mt.amp.custom_bwd(device_type="cpu")
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return 2 * a * g

    x = mt.ones(3, dtype=mt.bfloat16, requires_grad=True)
    with mt.autocast("cpu"):
        y = Square.apply(x)
    assert y.dtype is mt.float32
    y.sum().backward()
    assert x.grad.dtype is mt.bfloat16 and x.grad.tolist() == [2.0, 2.0, 2.0]


EINSUMS = [("ij->ji", 1, "float32"), ("ij,ij->ij", 2, "float32"), ("ij,ij->i", 2, "bfloat16"),
           ("ij,kj->ik", 2, "bfloat16"), ("ij->", 1, "float32"), ("i,j->ij", 2, "float32")]


@pytest.mark.parametrize("equation, count, expected", EINSUMS)
def test_einsum_runs_low_where_it_contracts(equation, count, expected):
    """torch's einsum contracts operands with bmm (on autocast's list): a summed subscript
    between two operands gives the low dtype; one operand or a broadcast product does not."""
    a = mt.ones(3, 4)
    operands = [a if len(term) == 2 else a[0] for term in equation.split("->")[0].split(",")]
    with mt.autocast("cpu"):
        out = mt.einsum(equation, *operands[:count])
    assert str(out.dtype).split(".")[-1] == expected
    with mt.autocast("cpu"):
        assert mt.tensordot(a, a, dims=([1], [1])).dtype is mt.bfloat16
        assert mt.linalg.vecdot(a, a).dtype is mt.bfloat16


@pytest.mark.parametrize("name", ["batch_norm", "layer_norm", "group_norm", "instance_norm",
                                  "rms_norm"])
def test_norms_take_low_input_with_float32_parameters(name):
    """torch's mixed-type norms: a bfloat16 input (autocast's conv output) with float32 weights
    and statistics computes in float32 and returns the input's dtype; the float32 parameters
    get float32 gradients."""
    x = mt.tensor(np.random.default_rng(0).standard_normal((2, 3, 4, 4)), dtype=mt.float32)
    layers = {"batch_norm": mt.nn.BatchNorm2d(3), "layer_norm": mt.nn.LayerNorm(4),
              "group_norm": mt.nn.GroupNorm(1, 3), "instance_norm": mt.nn.InstanceNorm2d(
                  3, affine=True), "rms_norm": mt.nn.RMSNorm(4)}
    layer = layers[name]
    out = layer(x.to(mt.bfloat16))
    assert out.dtype is mt.bfloat16
    np.testing.assert_allclose(out.float().detach().numpy(), layer(x).detach().numpy(),
                               atol=0.05, rtol=0.05)
    out.float().sum().backward()
    weight = next(layer.parameters())
    assert weight.dtype is mt.float32 and weight.grad.dtype is mt.float32
