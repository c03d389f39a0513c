"""The "meta" device (minitorch/_meta: shapes, strides and dtypes without storage), `with
mt.device(...)`, init-on-meta (to_empty, load_state_dict(assign=True)) and
mt.func.stack_module_state with the model-ensembling recipe, against torch."""
import copy
import pickle

import numpy as np
import pytest

import minitorch as mt
import minitorch.func as mf
import minitorch.nn as nn
import minitorch.nn.functional as F
from minitorch._meta import MetaBuffer

torch = pytest.importorskip("torch")
tfunc = pytest.importorskip("torch.func")

COPY_OUT = "Cannot copy out of meta tensor; no data!"


def meta_of(t):
    """(shape, dtype name, strides, device type) of a tensor of either library."""
    return tuple(t.shape), str(t.dtype).split(".")[-1], tuple(t.stride()), t.device.type


def assert_same_meta(ours, theirs):
    if isinstance(theirs, (tuple, list)):
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            assert_same_meta(a, b)
        return
    assert isinstance(ours._data.buffer, MetaBuffer)
    assert meta_of(ours) == meta_of(theirs)


def raises_like(ours, theirs):
    """Both calls raise the same exception type with the same message."""
    with pytest.raises(Exception) as expected:
        theirs()
    with pytest.raises(type(expected.value)) as got:
        ours()
    assert str(got.value) == str(expected.value)


# ---- devices ------------------------------------------------------------------------------------
def test_meta_device_parses_like_torch():
    for args in [("meta",), ("meta:0",), ("meta", 0), ("meta:3",)]:
        ours, theirs = mt.device(*args), torch.device(*args)
        assert (ours.type, ours.index) == (theirs.type, theirs.index)
        assert str(ours) == str(theirs) and repr(ours) == repr(theirs)
    assert mt.device("meta") == "meta" and mt.device("meta") is mt.device("meta")
    assert pickle.loads(pickle.dumps(mt.device("meta"))) is mt.device("meta")
    assert mt.ones(2, device="meta").get_device() == torch.ones(2, device="meta").get_device()


def test_device_is_a_context_manager_for_factories():
    assert mt.get_default_device() == mt.device("cpu")
    with mt.device("meta") as dev:
        assert dev == mt.device("meta") and mt.get_default_device() == mt.device("meta")
        assert mt.zeros(2, 3).device.type == "meta" and mt.tensor([1.0]).device.type == "meta"
        assert mt.zeros(2, device="cpu").device.type == "cpu"
        with mt.device("cpu"):          # nested: the inner device wins, then the outer again
            assert mt.ones(2).device.type == "cpu"
        assert mt.ones(2).device.type == "meta"
    assert mt.ones(2).device.type == "cpu"
    with pytest.raises(ValueError):
        with mt.device("meta"):
            raise ValueError
    assert mt.get_default_device() == mt.device("cpu")     # restored after an exception too


# ---- factories ------------------------------------------------------------------------------------
FACTORIES = {
    "empty": lambda L: L.empty(2, 3, device="meta"),
    "zeros": lambda L: L.zeros(2, 3, dtype=L.int64, device="meta"),
    "ones": lambda L: L.ones((4,), dtype=L.float16, device="meta"),
    "full": lambda L: L.full((2, 2), 7, device="meta"),
    "randn": lambda L: L.randn(3, 5, device="meta"),
    "rand": lambda L: L.rand(3, device="meta", dtype=L.float64),
    "randint": lambda L: L.randint(0, 5, (2, 3), device="meta"),
    "arange": lambda L: L.arange(6, device="meta"),
    "tensor": lambda L: L.tensor([[1.0, 2.0]], device="meta"),
    "eye": lambda L: L.eye(3, device="meta"),
    "empty_strided": lambda L: L.empty_strided((2, 3), (1, 2), device="meta"),
    "scalar": lambda L: L.ones((), dtype=L.bool, device="meta"),
}


@pytest.mark.parametrize("name", FACTORIES)
def test_factories_on_meta(name):
    ours = FACTORIES[name](mt)
    assert_same_meta(ours, FACTORIES[name](torch))
    assert ours.data_ptr() == 0


def test_meta_draws_nothing_and_leaves_the_generator_alone():
    mt.manual_seed(0)
    expected = mt.rand(3).tolist()
    mt.manual_seed(0)
    with mt.device("meta"):
        nn.Linear(4000, 4000)           # kaiming_uniform_ on meta: no host draws
        mt.randn(1000)
        mt.randint(0, 5, (3,))
        mt.empty(5).uniform_()
        mt.empty(4).normal_()
        mt.empty(3, dtype=mt.int64).random_(0, 10)
        F.dropout(mt.ones(8), 0.5)
    assert mt.rand(3).tolist() == expected
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        mt.ones(2, device="meta", requires_grad=True).uniform_()


def test_meta_holds_no_memory():
    huge = mt.empty(1 << 20, 1 << 20, device="meta")        # 4 TiB of float32
    assert huge.shape == (1 << 20, 1 << 20) and huge.nbytes == 4 << 40
    out = (huge @ huge).sum(0)
    assert out.shape == (1 << 20,) and isinstance(out._data.buffer, MetaBuffer)


LIKE = ["empty_like", "zeros_like", "ones_like", "rand_like", "randn_like"]


@pytest.mark.parametrize("name", LIKE)
def test_like_factories_on_meta(name):
    ours = getattr(mt, name)(mt.ones(2, 3, device="meta").t())
    theirs = getattr(torch, name)(torch.ones(2, 3, device="meta").t())
    assert_same_meta(ours, theirs)
    on_cpu = getattr(mt, name)(mt.ones(2, 3, device="meta"), device="cpu")
    assert on_cpu.device.type == "cpu" and on_cpu.shape == (2, 3)
    assert_same_meta(mt.full_like(mt.ones(2, device="meta"), 3),
                     torch.full_like(torch.ones(2, device="meta"), 3))


def test_to_meta_keeps_shape_and_dtype():
    x = mt.arange(6).reshape(2, 3)
    assert_same_meta(x.to("meta"), torch.arange(6).reshape(2, 3).to("meta"))
    assert x.to("meta").to("meta") is not None


# ---- ops propagate shapes and dtypes --------------------------------------------------------------
def _m(L, *shape, dtype=None):
    return L.ones(shape, device="meta", dtype=dtype or L.float32)


OPS = {
    "broadcast_add": lambda L: _m(L, 2, 1, 3) + _m(L, 4, 1),
    "promotion": lambda L: _m(L, 3, dtype=L.int64) * 2.5,
    "int_plus_float": lambda L: _m(L, 3, dtype=L.int64) + _m(L, 3),
    "compare": lambda L: _m(L, 2, 3) > _m(L, 3),
    "unary": lambda L: _m(L, 2, 3).exp().tanh(),
    "matmul": lambda L: _m(L, 5, 1, 2, 3) @ _m(L, 4, 3, 6),
    "matvec": lambda L: _m(L, 2, 3) @ _m(L, 3),
    "linear": lambda L: L.nn.functional.linear(_m(L, 7, 3), _m(L, 4, 3), _m(L, 4)),
    "conv2d": lambda L: L.nn.functional.conv2d(_m(L, 2, 3, 9, 9), _m(L, 4, 3, 3, 3), _m(L, 4),
                                               stride=2, padding=1),
    "conv1d_dilated": lambda L: L.nn.functional.conv1d(_m(L, 1, 2, 10), _m(L, 3, 2, 3),
                                                       dilation=2),
    "max_pool2d": lambda L: L.nn.functional.max_pool2d(_m(L, 1, 2, 7, 7), 2),
    "sum": lambda L: _m(L, 2, 3, 4).sum((0, 2)),
    "mean_keepdim": lambda L: _m(L, 2, 3, 4).mean(1, keepdim=True),
    "sum_int": lambda L: _m(L, 2, 3, dtype=L.int32).sum(),
    "amax": lambda L: _m(L, 2, 3).amax(-1),
    "argmax": lambda L: _m(L, 2, 3).argmax(1),
    "max_dim": lambda L: tuple(_m(L, 2, 3).max(0)),
    "softmax": lambda L: _m(L, 2, 3).softmax(-1),
    "view": lambda L: _m(L, 2, 3, 4).view(6, 4),
    "reshape_copy": lambda L: _m(L, 2, 3, 4).transpose(0, 2).reshape(-1, 2),
    "permute": lambda L: _m(L, 2, 3, 4).permute(2, 0, 1),
    "contiguous": lambda L: _m(L, 2, 3, 4).permute(2, 0, 1).contiguous(),
    "expand": lambda L: _m(L, 3, 1).expand(3, 5),
    "slice": lambda L: _m(L, 4, 6)[1:, ::2],
    "unsqueeze_squeeze": lambda L: _m(L, 2, 1, 3).squeeze(1).unsqueeze(0),
    "cat": lambda L: L.cat([_m(L, 2, 3), _m(L, 4, 3)], 0),
    "stack": lambda L: L.stack([_m(L, 2, 3)] * 3, 1),
    "where": lambda L: L.where(_m(L, 2, 3) > 0, _m(L, 3), 0.0),
    "layer_norm": lambda L: L.nn.functional.layer_norm(_m(L, 2, 5), (5,)),
    "embedding": lambda L: L.nn.functional.embedding(_m(L, 2, 3, dtype=L.int64), _m(L, 10, 4)),
    "cross_entropy": lambda L: L.nn.functional.cross_entropy(_m(L, 4, 5),
                                                             _m(L, 4, dtype=L.int64)),
    "cumsum": lambda L: _m(L, 3, 4).cumsum(1),
    "half": lambda L: _m(L, 2, 3).half() * 2,
}


@pytest.mark.parametrize("name", OPS)
def test_ops_on_meta_give_torchs_shapes_dtypes_strides(name):
    assert_same_meta(OPS[name](mt), OPS[name](torch))


def test_integer_tensor_indexing_on_meta():
    def index(L):
        return _m(L, 5, 3)[L.zeros(4, dtype=L.int64, device="meta")]
    assert_same_meta(index(mt), index(torch))


def test_mlp_forward_backward_on_meta():
    def run(L):
        L.manual_seed(0)
        model = L.nn.Sequential(L.nn.Linear(6, 8, device="meta"), L.nn.ReLU(),
                                L.nn.Linear(8, 3, device="meta"))
        x = L.randn(5, 6, device="meta")
        loss = L.nn.functional.cross_entropy(model(x), L.zeros(5, dtype=L.int64, device="meta"))
        loss.backward()
        return loss, [p.grad for p in model.parameters()]
    (loss, grads), (t_loss, t_grads) = run(mt), run(torch)
    assert_same_meta(loss, t_loss)
    assert loss.grad_fn is not None
    assert_same_meta(grads, t_grads)


def test_conv_net_forward_backward_on_meta():
    with mt.device("meta"):
        net = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                            nn.Flatten(), nn.Linear(4 * 6 * 6, 10))
    out = net(mt.randn(2, 3, 6, 6, device="meta"))
    out.sum().backward()
    assert out.shape == (2, 10) and out.device.type == "meta"
    for p in net.parameters():
        assert p.grad.shape == p.shape and p.grad.device.type == "meta"


# ---- what needs values fails as in torch ----------------------------------------------------------
def test_copy_out_of_meta_raises_torchs_error():
    for ours, theirs in [
            (lambda: mt.ones(2, device="meta").cpu(), lambda: torch.ones(2, device="meta").cpu()),
            (lambda: mt.ones(2, device="meta").to("cpu"),
             lambda: torch.ones(2, device="meta").to("cpu")),
            (lambda: mt.ones(2, device="meta").tolist(),
             lambda: torch.ones(2, device="meta").tolist()),
            (lambda: mt.ones(2).copy_(mt.ones(2, device="meta")),
             lambda: torch.ones(2).copy_(torch.ones(2, device="meta")))]:
        raises_like(ours, theirs)
    with pytest.raises(NotImplementedError, match=COPY_OUT):
        nn.Linear(2, 2, device="meta").cpu()


def test_writing_into_meta_is_a_no_op():
    m = mt.ones(2, 3, device="meta")
    m.copy_(mt.ones(2, 3))              # a CPU source is accepted, as in torch
    m[0] = 5.0
    m.add_(1).mul_(mt.ones(3, device="meta"))
    assert m.shape == (2, 3) and m.device.type == "meta"


@pytest.mark.parametrize("op", ["nonzero", "masked_select", "unique", "bool_index"])
def test_data_dependent_shapes_raise_not_implemented(op):
    calls = {"nonzero": lambda L: _m(L, 3).nonzero(),
             "masked_select": lambda L: _m(L, 3).masked_select(_m(L, 3) > 0),
             "unique": lambda L: L.unique(_m(L, 3)),
             "bool_index": lambda L: _m(L, 3)[_m(L, 3) > 0]}
    with pytest.raises(NotImplementedError):
        calls[op](torch)
    with pytest.raises(NotImplementedError):
        calls[op](mt)


def test_device_mismatch_messages_match_torch():
    for build in [lambda L: _m(L, 2, 2) + L.ones(2, 2), lambda L: L.ones(2, 2) + _m(L, 2, 2),
                  lambda L: L.cat([_m(L, 2), L.ones(2)])]:
        raises_like(lambda: build(mt), lambda: build(torch))
    assert (_m(mt, 2) + mt.tensor(1.0)).device.type == "meta"     # a 0-d CPU operand joins


VALUE_READS = {"item": lambda L: _m(L).item(), "bool": lambda L: bool(_m(L) > 0),
               "float": lambda L: float(_m(L)), "int": lambda L: int(_m(L)),
               "numpy": lambda L: _m(L, 2).numpy(), "asarray": lambda L: np.asarray(_m(L, 2))}


@pytest.mark.parametrize("call", VALUE_READS)
def test_value_reads_raise_torchs_errors(call):
    raises_like(lambda: VALUE_READS[call](mt), lambda: VALUE_READS[call](torch))


def test_element_count_errors_come_first():
    for call in [lambda L: _m(L, 2).item(), lambda L: bool(_m(L, 2)), lambda L: bool(_m(L, 0))]:
        raises_like(lambda: call(mt), lambda: call(torch))


def test_is_meta_and_deepcopy():
    m = mt.ones(2, 3, device="meta").t()
    assert m.is_meta and not mt.ones(2).is_meta
    c = copy.deepcopy(m)
    assert c is not m and meta_of(c) == meta_of(torch.ones(2, 3, device="meta").t())
    bn = copy.deepcopy(nn.BatchNorm1d(3, device="meta"))
    assert bn.running_mean.is_meta and bn.weight.is_meta
    assert f"{_m(mt)}" == f"{_m(torch)}"


# ---- repr ---------------------------------------------------------------------------------------
REPRS = {
    "plain": lambda L: _m(L, 2),
    "scalar": lambda L: _m(L),
    "empty": lambda L: _m(L, 0, 3),
    "int64": lambda L: _m(L, 2, 3, dtype=L.int64),
    "bool": lambda L: _m(L, 2, dtype=L.bool),
    "float64": lambda L: _m(L, 2, dtype=L.float64),
    "requires_grad": lambda L: L.ones(2, 3, device="meta", requires_grad=True),
    "grad_fn": lambda L: L.ones(2, 3, device="meta", requires_grad=True).sum(),
    "parameter": lambda L: L.nn.Linear(3, 2, device="meta").weight,
}


@pytest.mark.parametrize("name", REPRS)
def test_meta_repr_matches_torch(name):
    ours, theirs = REPRS[name](mt), REPRS[name](torch)
    assert repr(ours) == repr(theirs).replace("torch.", "minitorch.")
    assert str(ours) == str(theirs).replace("torch.", "minitorch.")


# ---- init on meta ---------------------------------------------------------------------------------
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.norm = nn.BatchNorm1d(8)
        self.fc2 = nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(mt.relu(self.norm(self.fc1(x))))


def test_layers_built_on_meta():
    layer = nn.Linear(3, 2, device="meta")
    assert layer.weight.device.type == "meta" and layer.bias.shape == (2,)
    assert isinstance(layer.weight, nn.Parameter) and layer.weight.requires_grad
    with mt.device("meta"):
        net = Net()
    for t in net.state_dict().values():
        assert t.device.type == "meta"
    assert net(mt.ones(5, 4, device="meta")).shape == (5, 3)


def test_to_empty_gives_uninitialized_storage():
    with mt.device("meta"):
        net = Net()
    assert net.to_empty(device="cpu") is net
    for name, t in net.state_dict().items():
        assert t.device.type == "cpu" and not isinstance(t._data.buffer, MetaBuffer), name
    assert isinstance(net.fc1.weight, nn.Parameter) and net.fc1.weight.requires_grad
    assert net.norm.num_batches_tracked.dtype == mt.int64
    net.load_state_dict(Net().state_dict())
    assert net(mt.ones(2, 4)).shape == (2, 3)
    layer = nn.Linear(3, 2, device="meta").to_empty(device="cpu", recurse=False)
    assert layer.weight.device.type == "cpu"


def test_load_state_dict_assign_onto_a_meta_model():
    real = Net().eval()
    with mt.device("meta"):
        lazy = Net()
    result = lazy.load_state_dict(real.state_dict(), assign=True)
    assert not result.missing_keys and not result.unexpected_keys
    lazy.eval()
    assert isinstance(lazy.fc1.weight, nn.Parameter) and lazy.fc1.weight.requires_grad
    assert all(t.device.type == "cpu" for t in lazy.state_dict().values())
    x = mt.randn(6, 4)
    np.testing.assert_allclose(lazy(x).detach().numpy(), real(x).detach().numpy(), rtol=0,
                               atol=1e-6)


def test_meta_module_to_cpu_is_refused():
    with pytest.raises(NotImplementedError, match=COPY_OUT):
        nn.Linear(3, 2, device="meta").to("cpu")


# ---- stack_module_state and ensembling ------------------------------------------------------------
def test_stack_module_state_matches_torch():
    mt.manual_seed(0)
    models = [nn.BatchNorm1d(3) for _ in range(3)]
    params, buffers = mf.stack_module_state(models)
    t_params, t_buffers = tfunc.stack_module_state([torch.nn.BatchNorm1d(3) for _ in range(3)])
    assert list(params) == list(t_params) and list(buffers) == list(t_buffers)
    for ours, theirs in [(params, t_params), (buffers, t_buffers)]:
        for k in ours:
            assert meta_of(ours[k])[:3] == meta_of(theirs[k])[:3]
            assert ours[k].requires_grad == theirs[k].requires_grad and ours[k].is_leaf
    np.testing.assert_array_equal(params["weight"].detach().numpy(),
                                  np.stack([m.weight.detach().numpy() for m in models]))
    params["weight"].sum().backward()           # new leaves: the models' own are untouched
    assert params["weight"].grad.shape == (3, 3) and models[0].weight.grad is None


def test_stack_module_state_follows_requires_grad():
    models = [nn.Linear(3, 2) for _ in range(2)]
    for m in models:
        m.weight.requires_grad_(False)
    params, _ = mf.stack_module_state(models)
    assert not params["weight"].requires_grad and params["bias"].requires_grad
    keys, _ = mf.stack_module_state(nn.ModuleList([nn.Linear(3, 2), nn.Linear(3, 2)]))
    assert list(keys) == ["weight", "bias"]


def test_stack_module_state_errors_match_torch():
    cases = [lambda n: [],
             lambda n: [n.Linear(3, 2), n.Conv1d(3, 2, 1)],
             lambda n: [n.Linear(3, 2), n.Linear(3, 2).eval()],
             lambda n: [n.Linear(3, 2), n.Linear(3, 4)],
             lambda n: [n.Linear(3, 2), n.Linear(3, 2).requires_grad_(False)]]
    for make in cases:
        raises_like(lambda: mf.stack_module_state(make(nn)),
                    lambda: tfunc.stack_module_state(make(torch.nn)))


class TwoLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(3, 4)
        self.l2 = nn.Linear(4, 2)

    def forward(self, x):
        return self.l2(mt.tanh(self.l1(x)))


@pytest.mark.parametrize("cls", [lambda: nn.Linear(3, 2), TwoLayer], ids=["linear", "two_layer"])
def test_ensembling_with_a_meta_base_equals_the_loop(device, cls):
    mt.manual_seed(1)
    models = [cls().to(device) for _ in range(4)]
    params, buffers = mf.stack_module_state(models)
    for t in list(params.values()) + list(buffers.values()):
        assert t.device == mt.device(device)
    base = copy.deepcopy(models[0]).to("meta")
    assert all(p.device.type == "meta" for p in base.parameters())
    x = mt.randn(5, 3, device=device)

    def call(p, b, x):
        return mf.functional_call(base, (p, b), (x,))
    out = mf.vmap(call, in_dims=(0, 0, None))(params, buffers, x)
    assert out.shape == (4, 5, 2) and out.device == mt.device(device)
    expected = np.stack([m(x).detach().cpu().numpy() for m in models])
    np.testing.assert_allclose(out.detach().cpu().numpy(), expected, rtol=0, atol=1e-6)
    out.sum().backward()                         # the stacked leaves train the ensemble
    for m in models:
        m(x).sum().backward()
    for name, p in params.items():
        grads = np.stack([dict(m.named_parameters())[name].grad.cpu().numpy() for m in models])
        np.testing.assert_allclose(p.grad.cpu().numpy(), grads, rtol=0, atol=1e-5)
    assert all(p.device.type == "meta" for p in base.parameters())   # base untouched


def test_ensembling_snippet_matches_torch_shape():
    models = [nn.Linear(3, 2) for _ in range(4)]
    params, buffers = mf.stack_module_state(models)
    base = copy.deepcopy(models[0]).to("meta")
    out = mf.vmap(lambda p, b, x: mf.functional_call(base, (p, b), (x,)),
                  in_dims=(0, 0, None))(params, buffers, mt.randn(5, 3))
    assert out.shape == mt.Size([4, 5, 2])
