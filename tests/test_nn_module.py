"""nn.Module, Parameter, containers, hooks, state_dict and nn.utils: torch's behaviour pinned."""
import copy
import pickle
import warnings
from collections import OrderedDict

import numpy as np
import pytest

import minitorch as mt
import minitorch.nn as nn
from minitorch.nn.utils import (clip_grad_norm_, clip_grad_value_, parameters_to_vector,
                                vector_to_parameters)


def make_classes(backend, make):
    """The same small model classes over minitorch.nn or torch.nn (`make(shape)` gives random
    float64 data), so reprs and hook results can be compared one to one."""

    class Lin(backend.Module):
        def __init__(self, i, o):
            super().__init__()
            self.weight = backend.Parameter(make((o, i)))
            self.bias = backend.Parameter(make((o,)))
            self.register_buffer("count", make((1,)) * 0)
            self.register_buffer("scratch", make((1,)) * 0, persistent=False)
            self.i, self.o = i, o

        def extra_repr(self):
            return f"in_features={self.i}, out_features={self.o}"

        def forward(self, x):
            return x.matmul(self.weight.t()) + self.bias

    class Act(backend.Module):
        def forward(self, x):
            return x.relu()

    class Net(backend.Module):
        def __init__(self):
            super().__init__()
            self.body = backend.Sequential(Lin(3, 4), Act(), Lin(4, 2))
            self.heads = backend.ModuleList([Act(), Act(), Lin(2, 2)])
            self.table = backend.ModuleDict({"b": Act(), "a": Lin(2, 1)})

        def forward(self, x):
            return self.table["a"](self.heads[2](self.body(x)))

    return Lin, Act, Net


def mt_make(shape, device="cpu"):
    return mt.randn(*shape, dtype=mt.float64, device=device)


Lin, Act, Net = make_classes(nn, mt_make)


# ---- Parameter -----------------------------------------------------------------------------------
def test_parameter_is_a_tensor_sharing_storage(device):
    data = mt.zeros(2, 3, device=device)
    p = nn.Parameter(data)
    assert isinstance(p, mt.Tensor) and isinstance(p, nn.Parameter)
    assert p.requires_grad and p.is_leaf and p.grad is None and p.shape == (2, 3)
    data.add_(1)
    assert p.sum().item() == 6.0                        # same storage as data
    assert type(p * 2) is mt.Tensor                     # ops return plain tensors
    assert not nn.Parameter(data, requires_grad=False).requires_grad
    assert nn.Parameter().shape == (0,)


def test_parameter_repr_and_errors():
    p = nn.Parameter(mt.tensor([1.0, 2.0]))
    assert repr(p) == "Parameter containing:\ntensor([1., 2.], requires_grad=True)"
    with pytest.raises(RuntimeError, match="Only Tensors of floating point and complex dtype "
                                           "can require gradients"):
        nn.Parameter(mt.tensor([1, 2]))
    assert nn.Parameter(mt.tensor([1, 2]), requires_grad=False).dtype is mt.int64


def test_parameter_deepcopy_and_pickle():
    p = nn.Parameter(mt.tensor([1.0, 2.0]))
    q = copy.deepcopy(p)
    assert isinstance(q, nn.Parameter) and q.requires_grad and q is not p
    with mt.no_grad():
        p.add_(1)
    assert q.tolist() == [1.0, 2.0]
    r = pickle.loads(pickle.dumps(p))
    assert isinstance(r, nn.Parameter) and r.tolist() == [2.0, 3.0]


# ---- registration and traversal ------------------------------------------------------------------
def test_named_members_follow_registration_order():
    net = Net()
    assert [n for n, _ in net.named_parameters()] == [
        "body.0.weight", "body.0.bias", "body.2.weight", "body.2.bias", "heads.2.weight",
        "heads.2.bias", "table.a.weight", "table.a.bias"]
    assert [n for n, _ in net.named_buffers()] == [
        "body.0.count", "body.0.scratch", "body.2.count", "body.2.scratch", "heads.2.count",
        "heads.2.scratch", "table.a.count", "table.a.scratch"]
    assert [n for n, _ in net.named_children()] == ["body", "heads", "table"]
    assert [n for n, _ in net.named_modules()] == [
        "", "body", "body.0", "body.1", "body.2", "heads", "heads.0", "heads.1", "heads.2",
        "table", "table.b", "table.a"]
    assert list(net.parameters(recurse=False)) == []
    assert len(list(net.body[0].parameters(recurse=False))) == 2
    assert [n for n, _ in net.named_parameters(prefix="model")][0] == "model.body.0.weight"


def test_shared_members_are_listed_once():
    net = nn.Module()
    act = Act()
    net.a, net.b = act, act
    shared = nn.Parameter(mt.ones(1))
    net.p, net.q = shared, shared
    assert [n for n, _ in net.named_modules()] == ["", "a"]
    assert [n for n, _ in net.named_parameters()] == ["p"]
    assert [n for n, _ in net.named_parameters(remove_duplicate=False)] == ["p", "q"]
    assert len(list(net.named_modules(remove_duplicate=False))) == 3


def test_setattr_routes_parameters_buffers_and_modules():
    m = nn.Module()
    m.w = nn.Parameter(mt.ones(2))
    m.act = Act()
    m.register_buffer("stat", mt.zeros(2))
    m.plain = 3
    assert list(m._parameters) == ["w"] and list(m._modules) == ["act"]
    assert list(m._buffers) == ["stat"] and m.plain == 3
    m.stat = mt.ones(2)                         # re-assigning a buffer name keeps it a buffer
    assert m._buffers["stat"].tolist() == [1.0, 1.0]
    m.w = None
    assert m._parameters["w"] is None and m.w is None
    m.marked = nn.Buffer(mt.ones(1), persistent=False)
    assert "marked" in m._buffers and "marked" not in m.state_dict()
    del m.act
    assert "act" not in m._modules
    assert {"w", "stat", "marked", "plain"} <= set(dir(m))


def test_setattr_and_register_errors():
    m = Lin(2, 2)
    with pytest.raises(TypeError, match=r"cannot assign 'torch.FloatTensor' as parameter 'weight' "
                                        r"\(torch.nn.Parameter or None expected\)"):
        m.weight = mt.ones(2)
    m.child = Act()
    with pytest.raises(TypeError, match="cannot assign 'int' as child module 'child'"):
        m.child = 3
    with pytest.raises(KeyError) as info:
        m.register_parameter("a.b", None)
    assert info.value.args == ('parameter name can\'t contain "."',)
    with pytest.raises(KeyError) as info:
        m.register_parameter("i", None)
    assert info.value.args == ("attribute 'i' already exists",)
    with pytest.raises(TypeError, match=r"cannot assign 'torch.FloatTensor' object to parameter "
                                        r"'x' \(torch.nn.Parameter or None required\)"):
        m.register_parameter("x", mt.ones(1))
    with pytest.raises(ValueError, match="Cannot assign non-leaf Tensor to parameter 'y'"):
        m.register_parameter("y", _nonleaf_parameter())
    with pytest.raises(KeyError) as info:
        m.register_buffer("", mt.ones(1))
    assert info.value.args == ('buffer name can\'t be empty string ""',)
    with pytest.raises(TypeError, match="cannot assign 'int' object to buffer 'z'"):
        m.register_buffer("z", 3)
    with pytest.raises(TypeError, match="int is not a Module subclass"):
        m.add_module("k", 3)
    with pytest.raises(KeyError) as info:
        m.add_module("a.b", Act())
    assert info.value.args == ('module name can\'t contain ".", got: a.b',)


def _nonleaf_parameter():
    """A Parameter object that is the output of an op (torch refuses to register it)."""
    p = nn.Parameter(mt.ones(1))
    p.grad_fn = (p * 2).grad_fn
    return p


class _Early(nn.Module):
    def __init__(self):
        self.w = nn.Parameter(mt.ones(1))


def test_assignment_before_init_and_unknown_attribute():
    with pytest.raises(AttributeError, match=r"cannot assign parameters before "
                                             r"Module.__init__\(\) call"):
        _Early()
    with pytest.raises(AttributeError, match="'Net' object has no attribute 'foo'"):
        Net().foo
    with pytest.raises(TypeError, match=r"Lin.__init__\(\) takes 3 positional arguments"):
        Lin(1, 2, 3)


def test_get_submodule_parameter_buffer():
    net = Net()
    assert net.get_submodule("body.0") is net.body[0]
    assert net.get_submodule("") is net
    assert net.get_parameter("table.a.bias") is net.table["a"].bias
    assert net.get_buffer("heads.2.count") is net.heads[2].count
    with pytest.raises(AttributeError, match="Sequential has no attribute `7`"):
        net.get_submodule("body.7")
    with pytest.raises(AttributeError, match="`weight` is not an nn.Module"):
        net.get_submodule("body.0.weight")
    with pytest.raises(AttributeError, match="`count` is not an nn.Parameter"):
        net.get_parameter("body.0.count")
    with pytest.raises(AttributeError, match="`weight` is not a buffer"):
        net.get_buffer("body.0.weight")


def test_train_eval_apply_and_requires_grad():
    net = Net()
    assert net.training and all(m.training for m in net.modules())
    assert net.eval() is net and not any(m.training for m in net.modules())
    net.train()
    assert all(m.training for m in net.modules())
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        net.train("yes")
    visited = []
    net.apply(lambda m: visited.append(type(m).__name__))
    assert visited[:4] == ["Lin", "Act", "Lin", "Sequential"] and visited[-1] == "Net"
    net.requires_grad_(False)
    assert not any(p.requires_grad for p in net.parameters())


def test_zero_grad(device):
    lin = Lin(3, 2).to(device)
    lin(mt.ones(1, 3, dtype=mt.float64, device=device)).sum().backward()
    lin.zero_grad(set_to_none=False)
    assert lin.weight.grad is not None and lin.weight.grad.abs().sum().item() == 0
    lin.zero_grad()
    assert lin.weight.grad is None and lin.bias.grad is None


# ---- device / dtype moves ------------------------------------------------------------------------
def test_to_dtype_keeps_parameter_identity():
    lin = Lin(3, 2)
    lin.register_buffer("steps", mt.zeros(1, dtype=mt.int64))
    lin(mt.ones(1, 3, dtype=mt.float64)).sum().backward()
    weight = lin.weight
    assert lin.float() is lin
    assert lin.weight is weight and weight.dtype is mt.float32 and weight.grad.dtype is mt.float32
    assert lin.count.dtype is mt.float32 and lin.steps.dtype is mt.int64
    lin.to(mt.float64)
    assert lin.weight is weight and weight.dtype is mt.float64 and weight.requires_grad
    lin.to(mt.zeros(1, dtype=mt.float32))
    assert weight.dtype is mt.float32
    with pytest.raises(TypeError, match="nn.Module.to only accepts floating point or complex "
                                        "dtypes, but got desired dtype="):
        lin.to(mt.int64)


def test_to_device(device):
    lin = Lin(3, 2)
    weight = lin.weight
    lin.to(device)
    assert lin.weight is weight and weight.device == mt.device(device)
    assert lin.count.device == mt.device(device)
    lin.cpu()
    assert weight.device == mt.device("cpu")


# ---- state_dict ----------------------------------------------------------------------------------
def test_state_dict_layout_and_values():
    net = Net()
    sd = net.state_dict()
    assert type(sd).__name__ == "OrderedDict"
    assert list(sd) == [
        "body.0.weight", "body.0.bias", "body.0.count", "body.2.weight", "body.2.bias",
        "body.2.count", "heads.2.weight", "heads.2.bias", "heads.2.count", "table.a.weight",
        "table.a.bias", "table.a.count"]
    value = sd["body.0.weight"]
    assert not value.requires_grad and not isinstance(value, nn.Parameter)
    assert value.data_ptr() == net.body[0].weight.data_ptr()
    assert net.state_dict(keep_vars=True)["body.0.weight"] is net.body[0].weight
    assert sd._metadata["body.0"] == {"version": 1}
    assert list(net.body[0].state_dict(prefix="x.")) == ["x.weight", "x.bias", "x.count"]


def test_load_state_dict_round_trip(device):
    source, target = Net().to(device), Net().to(device)
    result = target.load_state_dict(source.state_dict())
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert repr(result) == "<All keys matched successfully>"
    for (name, a), (_, b) in zip(source.state_dict().items(), target.state_dict().items()):
        np.testing.assert_array_equal(a.cpu().numpy(), b.cpu().numpy(), err_msg=name)
    assert isinstance(target.body[0].weight, nn.Parameter) and target.body[0].weight.requires_grad
    assert target.body[0].weight.grad_fn is None


def test_load_state_dict_strict_errors_change_nothing():
    net = Net()
    before = {k: v.numpy().copy() for k, v in net.state_dict().items()}
    sd = Net().state_dict()
    del sd["body.0.bias"], sd["table.a.count"]
    sd["body.9.weight"] = mt.zeros(1)
    sd["extra"] = mt.zeros(1)
    with pytest.raises(RuntimeError) as info:
        net.load_state_dict(sd)
    assert str(info.value) == (
        'Error(s) in loading state_dict for Net:\n\tMissing key(s) in state_dict: '
        '"body.0.bias", "table.a.count". \n\tUnexpected key(s) in state_dict: "extra", '
        '"body.9.weight". ')
    sd = Net().state_dict()
    sd["heads.2.weight"] = mt.zeros(3, 2, dtype=mt.float64)
    with pytest.raises(RuntimeError) as info:
        net.load_state_dict(sd)
    assert str(info.value) == (
        "Error(s) in loading state_dict for Net:\n\tsize mismatch for heads.2.weight: copying a "
        "param with shape torch.Size([3, 2]) from checkpoint, the shape in current model is "
        "torch.Size([2, 2]).")
    for key, value in net.state_dict().items():        # nothing was copied
        np.testing.assert_array_equal(value.numpy(), before[key])
    with pytest.raises(TypeError, match="Expected state_dict to be dict-like"):
        net.load_state_dict([1, 2])


def test_load_state_dict_non_strict_and_assign():
    net = Net()
    sd = Net().state_dict()
    del sd["body.0.bias"]
    sd["extra"] = mt.zeros(1)
    result = net.load_state_dict(sd, strict=False)
    assert result == (["body.0.bias"], ["extra"])
    assert result.missing_keys == ["body.0.bias"] and result.unexpected_keys == ["extra"]
    np.testing.assert_array_equal(net.body[0].weight.detach().numpy(),
                                  sd["body.0.weight"].numpy())
    old = net.body[0].weight
    fresh = Net().state_dict()
    net.load_state_dict(fresh, assign=True)
    assert net.body[0].weight is not old and isinstance(net.body[0].weight, nn.Parameter)
    assert net.body[0].weight.data_ptr() == fresh["body.0.weight"].data_ptr()


def test_load_state_dict_accepts_one_element_for_scalars_and_extra_state():
    class Scalar(nn.Module):
        def __init__(self):
            super().__init__()
            self.s = nn.Parameter(mt.tensor(1.0))
            self.note = "a"

        def get_extra_state(self):
            return self.note

        def set_extra_state(self, state):
            self.note = state

    m = Scalar()
    m.load_state_dict({"s": mt.tensor([5.0]), "_extra_state": "b"})
    assert m.s.item() == 5.0 and m.note == "b"
    assert m.state_dict()["_extra_state"] == "b"
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: "_extra_state"'):
        m.load_state_dict({"s": mt.tensor(1.0)})


# ---- repr ----------------------------------------------------------------------------------------
def test_repr_matches_torch():
    torch = pytest.importorskip("torch")
    _, _, TorchNet = make_classes(torch.nn, lambda shape: torch.randn(*shape,
                                                                      dtype=torch.float64))
    assert repr(Net()) == repr(TorchNet())
    assert repr(nn.ModuleList()) == repr(torch.nn.ModuleList()) == "ModuleList()"
    assert repr(nn.Sequential()) == repr(torch.nn.Sequential())


def test_repr_nested_format():
    assert repr(Net()) == """Net(
  (body): Sequential(
    (0): Lin(in_features=3, out_features=4)
    (1): Act()
    (2): Lin(in_features=4, out_features=2)
  )
  (heads): ModuleList(
    (0-1): 2 x Act()
    (2): Lin(in_features=2, out_features=2)
  )
  (table): ModuleDict(
    (b): Act()
    (a): Lin(in_features=2, out_features=1)
  )
)"""


def test_parameter_containers_repr():
    plist = nn.ParameterList([mt.zeros(2, 3), nn.Parameter(mt.zeros(4))])
    assert repr(plist) == ("ParameterList(\n    (0): Parameter containing: [minitorch.float32 of "
                           "size 2x3]\n    (1): Parameter containing: [minitorch.float32 of size "
                           "4]\n)")
    pdict = nn.ParameterDict({"w": mt.zeros(2)})
    assert repr(pdict) == ("ParameterDict(  (w): Parameter containing: [torch.FloatTensor of "
                           "size 2])")


# ---- hooks ---------------------------------------------------------------------------------------
def test_forward_pre_hook_and_forward_hook():
    lin = Lin(2, 2)
    calls = []

    def pre(module, args):
        calls.append(("pre", module, len(args)))
        return args[0] * 0                      # a single value replaces the args tuple

    def post(module, args, output):
        calls.append(("post", float(args[0].sum()), output.shape))
        return output + 1

    h1 = lin.register_forward_pre_hook(pre)
    h2 = lin.register_forward_hook(post)
    out = lin(mt.ones(3, 2, dtype=mt.float64))
    assert calls == [("pre", lin, 1), ("post", 0.0, (3, 2))]
    np.testing.assert_allclose(out.detach().numpy(), np.broadcast_to(
        lin.bias.detach().numpy() + 1, (3, 2)))
    h1.remove()
    h2.remove()
    calls.clear()
    lin(mt.ones(3, 2, dtype=mt.float64))
    assert calls == []


def test_hook_kwargs_prepend_and_always_call():
    class Scale(nn.Module):
        def forward(self, x, factor=1.0):
            if factor < 0:
                raise ValueError("negative")
            return x * factor

    m = Scale()
    order = []
    m.register_forward_pre_hook(lambda mod, args, kwargs: (args, {"factor": 3.0}),
                                with_kwargs=True)
    m.register_forward_hook(lambda mod, args, kwargs, out: order.append(("kw", kwargs)),
                            with_kwargs=True)
    m.register_forward_hook(lambda mod, args, out: order.append("first"), prepend=True)
    assert m(mt.ones(1)).item() == 3.0
    assert order == ["first", ("kw", {"factor": 3.0})]
    m2 = Scale()
    always = []
    m2.register_forward_hook(lambda mod, args, out: always.append(out), always_call=True)
    with pytest.raises(ValueError, match="negative"):
        m2(mt.ones(1), factor=-1.0)
    assert always == [None]
    m3 = Scale()
    m3.register_forward_pre_hook(lambda mod, args, kwargs: 5, with_kwargs=True)
    with pytest.raises(RuntimeError, match="forward pre-hook must return None or a tuple of "
                                           r"\(new_args, new_kwargs\), but got 5."):
        m3(mt.ones(1))


class Mix(nn.Module):
    """Two tensor inputs (one without grad), a non-tensor argument, two outputs."""

    def __init__(self, w):
        super().__init__()
        self.w = nn.Parameter(w)

    def forward(self, x, c, k):
        return (x * self.w * k).tanh(), x.exp() + c


def _run_backward_hooks(tensor, mix_cls, x_data, c_data, w_data, scale_input):
    x = tensor(x_data, requires_grad=True)
    c = tensor(c_data)
    m = mix_cls(tensor(w_data))
    record = {}

    def hook(module, grad_input, grad_output):
        record["grad_input"] = [None if g is None else g.detach().cpu().numpy().copy()
                                for g in grad_input]
        record["grad_output"] = [g.detach().cpu().numpy().copy() for g in grad_output]
        if scale_input:
            return tuple(None if g is None else g * 2 for g in grad_input)

    def pre_hook(module, grad_output):
        record["pre"] = len(grad_output)
        return (grad_output[0] * 3, grad_output[1])

    m.register_full_backward_hook(hook)
    m.register_full_backward_pre_hook(pre_hook)
    a, b = m(x, c, 2.0)
    (a.sum() + (b * b).sum()).backward()
    return record, x.grad.detach().cpu().numpy(), m.w.grad.detach().cpu().numpy()


def test_full_backward_hooks_against_numpy(device):
    rng = np.random.default_rng(1)
    x_data, c_data, w_data = rng.standard_normal((3, 2)), rng.standard_normal(2), \
        rng.standard_normal(2)

    def make(data, requires_grad=False):
        return mt.tensor(data, dtype=mt.float64, device=device, requires_grad=requires_grad)

    record, x_grad, w_grad = _run_backward_hooks(make, Mix, x_data, c_data, w_data, True)
    t = np.tanh(x_data * w_data * 2)
    grad_a = np.ones_like(t) * 3                          # the pre hook tripled grad_output[0]
    grad_b = 2 * (np.exp(x_data) + c_data)
    expected_x = grad_a * (1 - t * t) * w_data * 2 + grad_b * np.exp(x_data)
    assert record["pre"] == 2
    np.testing.assert_allclose(record["grad_output"][0], grad_a)
    np.testing.assert_allclose(record["grad_output"][1], grad_b)
    assert record["grad_input"][2] is None                 # not a tensor
    np.testing.assert_array_equal(record["grad_input"][1], np.zeros(2))   # no grad: zeros
    np.testing.assert_allclose(record["grad_input"][0], expected_x)
    np.testing.assert_allclose(x_grad, 2 * expected_x)   # the hook doubled grad_input
    np.testing.assert_allclose(w_grad, (grad_a * (1 - t * t) * x_data * 2).sum(0))


def test_full_backward_hooks_match_torch():
    torch = pytest.importorskip("torch")

    class TorchMix(torch.nn.Module):
        def __init__(self, w):
            super().__init__()
            self.w = torch.nn.Parameter(w)

        def forward(self, x, c, k):
            return (x * self.w * k).tanh(), x.exp() + c

    def torch_make(data, requires_grad=False):
        return torch.tensor(data, dtype=torch.float64, requires_grad=requires_grad)

    def mt_make_(data, requires_grad=False):
        return mt.tensor(data, dtype=mt.float64, requires_grad=requires_grad)

    rng = np.random.default_rng(2)
    args = (rng.standard_normal((2, 3)), rng.standard_normal(3), rng.standard_normal(3))
    ours = _run_backward_hooks(mt_make_, Mix, *args, True)
    theirs = _run_backward_hooks(torch_make, TorchMix, *args, True)
    for key in ("grad_input", "grad_output"):
        for a, b in zip(ours[0][key], theirs[0][key]):
            assert (a is None) == (b is None)
            if a is not None:
                np.testing.assert_allclose(a, b)
    np.testing.assert_allclose(ours[1], theirs[1])
    np.testing.assert_allclose(ours[2], theirs[2])


def test_backward_hook_reports_none_for_outputs_without_grad():
    class Split(nn.Module):
        def forward(self, x):
            return x * 2, x.detach() + 1

    m = Split()
    record = {}
    m.register_full_backward_hook(lambda mod, gi, go: record.update(gi=gi, go=go))
    x = mt.tensor([1.0, 2.0], requires_grad=True)
    a, b = m(x)
    assert not b.requires_grad
    a.sum().backward()
    assert record["go"][1] is None and record["go"][0].tolist() == [1.0, 1.0]
    assert record["gi"][0].tolist() == [2.0, 2.0] and x.grad.tolist() == [2.0, 2.0]


def test_backward_hook_removed_and_no_input_grad_case():
    lin = Lin(2, 2)
    fired = []
    handle = lin.register_full_backward_hook(lambda m, gi, go: fired.append(gi))
    with pytest.warns(UserWarning, match="Full backward hook is firing when gradients are "
                                         "computed with respect to module outputs"):
        lin(mt.ones(1, 2, dtype=mt.float64)).sum().backward()
    assert fired == [(None,)]
    handle.remove()
    lin(mt.ones(1, 2, dtype=mt.float64, requires_grad=True)).sum().backward()
    assert len(fired) == 1
    out = lin(mt.ones(1, 2, dtype=mt.float64, requires_grad=True))
    assert out.grad_fn.name() != "BackwardHookFunctionBackward0"


# ---- containers ----------------------------------------------------------------------------------
def test_sequential_operations():
    a, b, c = Act(), Lin(2, 2), Act()
    seq = nn.Sequential(a, b)
    assert len(seq) == 2 and seq[0] is a and seq[-1] is b and list(seq) == [a, b]
    assert isinstance(seq[0:1], nn.Sequential) and list(seq[0:1]) == [a]
    seq.append(c)
    assert list(seq._modules) == ["0", "1", "2"]
    seq.insert(0, Act())
    assert seq[1] is a and seq[3] is c
    del seq[0]
    assert list(seq._modules) == ["0", "1", "2"] and seq[0] is a
    assert seq.pop(1) is b and list(seq) == [a, c]
    seq.extend([b])
    assert list(seq + nn.Sequential(a)) == [a, c, b, a]
    named = nn.Sequential(OrderedDict([("first", a), ("second", b)]))
    assert named.first is a and named[1] is b
    with pytest.raises(IndexError, match="index 5 is out of range"):
        seq[5]
    with pytest.raises(ValueError, match="add operator supports only objects of Sequential "
                                         "class"):
        seq + [a]
    x = mt.ones(1, 2, dtype=mt.float64)
    np.testing.assert_allclose(nn.Sequential(b, Act())(x).detach().numpy(),
                               b(x).relu().detach().numpy())
    assert len(nn.Sequential(a, b) * 2) == 4


def test_module_list_and_dict():
    a, b = Act(), Lin(2, 2)
    ml = nn.ModuleList([a])
    ml.append(b)
    ml += [Act()]
    assert len(ml) == 3 and ml[1] is b and ml[-1] is not a
    assert isinstance(ml[:2], nn.ModuleList) and len(ml[:2]) == 2
    ml.insert(0, b)
    assert ml[0] is b and ml[1] is a
    del ml[0]
    assert list(ml._modules) == ["0", "1", "2"] and ml[0] is a
    assert len(list(ml.parameters())) == 2
    with pytest.raises(TypeError, match="ModuleList.extend should be called with an iterable, "
                                        "but got Act"):
        ml.extend(Act())
    md = nn.ModuleDict({"x": a})
    md["y"] = b
    md.update([("z", Act())])
    assert list(md) == ["x", "y", "z"] and "y" in md and md["y"] is b and len(md) == 3
    assert list(md.keys()) == ["x", "y", "z"] and md.pop("x") is a and "x" not in md
    assert [n for n, _ in md.named_parameters()] == ["y.weight", "y.bias"]


def test_parameter_list_and_dict_register_parameters():
    plist = nn.ParameterList([mt.ones(2), nn.Parameter(mt.zeros(3))])
    plist.append(mt.ones(1))
    assert len(plist) == 3 and all(isinstance(p, nn.Parameter) for p in plist)
    assert [n for n, _ in plist.named_parameters()] == ["0", "1", "2"]
    assert isinstance(plist[0:2], nn.ParameterList) and len(plist[0:2]) == 2
    pdict = nn.ParameterDict({"b": mt.ones(1), "a": mt.ones(2)})
    pdict["c"] = mt.zeros(1)
    assert list(pdict) == ["a", "b", "c"] and isinstance(pdict["c"], nn.Parameter)
    assert pdict.get("zz") is None and "a" in pdict and len(pdict) == 3
    pdict.pop("a")
    assert [n for n, _ in pdict.named_parameters()] == ["b", "c"]
    holder = nn.Module()
    holder.plist = plist
    assert len(list(holder.parameters())) == 3
    with pytest.raises(RuntimeError, match="ParameterList should not be called."):
        plist(1)


# ---- nn.utils ------------------------------------------------------------------------------------
def _params_with_grads(device, rng):
    params = []
    for shape in ((3, 4), (4,), (2, 2)):
        p = nn.Parameter(mt.tensor(rng.standard_normal(shape), dtype=mt.float64, device=device))
        p.grad = mt.tensor(rng.standard_normal(shape), dtype=mt.float64, device=device)
        params.append(p)
    return params


@pytest.mark.parametrize("norm_type", [2.0, 1, 3.0, float("inf")])
def test_clip_grad_norm(device, norm_type):
    rng = np.random.default_rng(0)
    params = _params_with_grads(device, rng)
    grads = [p.grad.cpu().numpy().copy() for p in params]
    flat = np.concatenate([g.ravel() for g in grads])
    expected = np.abs(flat).max() if norm_type == float("inf") else \
        (np.abs(flat) ** norm_type).sum() ** (1 / norm_type)
    total = clip_grad_norm_(params, max_norm=0.5, norm_type=norm_type)
    assert total.ndim == 0
    np.testing.assert_allclose(total.item(), expected, rtol=1e-12)
    coefficient = min(0.5 / (expected + 1e-6), 1.0)
    for p, g in zip(params, grads):
        np.testing.assert_allclose(p.grad.cpu().numpy(), g * coefficient, rtol=1e-12)
    unchanged = [p.grad.cpu().numpy().copy() for p in params]
    clip_grad_norm_(params, max_norm=1e9, norm_type=norm_type)
    for p, g in zip(params, unchanged):
        np.testing.assert_allclose(p.grad.cpu().numpy(), g, rtol=1e-12)


def test_clip_grad_norm_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    params = _params_with_grads("cpu", rng)
    t_params = [torch.nn.Parameter(torch.tensor(p.detach().numpy())) for p in params]
    for tp, p in zip(t_params, params):
        tp.grad = torch.tensor(p.grad.numpy())
    ours = clip_grad_norm_(params, 1.0)
    theirs = torch.nn.utils.clip_grad_norm_(t_params, 1.0)
    np.testing.assert_allclose(ours.item(), theirs.item(), rtol=1e-12)
    for p, tp in zip(params, t_params):
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-12)


def test_clip_grad_edge_cases(device):
    p = nn.Parameter(mt.ones(2, device=device))
    assert clip_grad_norm_([p], 1.0).item() == 0.0            # no grads at all
    with pytest.warns(UserWarning, match="`parameters` is an empty generator"):
        clip_grad_norm_((q for q in []), 1.0)
    p.grad = mt.tensor([float("inf"), 1.0], device=device)
    with pytest.raises(RuntimeError, match="The total norm of order 2.0 for gradients from "
                                           "`parameters` is non-finite"):
        clip_grad_norm_(p, 1.0, error_if_nonfinite=True)
    p.grad = mt.tensor([3.0, -0.5], device=device)
    clip_grad_value_(p, 1.0)
    assert p.grad.tolist() == [1.0, -0.5]
    assert p.grad_fn is None and p.is_leaf


def test_parameters_to_vector_round_trip(device):
    lin = Lin(3, 2).to(device)
    vec = parameters_to_vector(lin.parameters())
    assert vec.shape == (8,)
    np.testing.assert_array_equal(vec.detach().cpu().numpy()[:6],
                                  lin.weight.detach().cpu().numpy().ravel())
    vec.sum().backward()
    assert lin.weight.grad.cpu().numpy().tolist() == [[1.0] * 3] * 2
    weight = lin.weight
    vector_to_parameters(mt.arange(8, dtype=mt.float64, device=device), lin.parameters())
    assert lin.weight is weight and lin.weight.tolist() == [[0, 1, 2], [3, 4, 5]]
    assert lin.bias.tolist() == [6, 7]
    with pytest.raises(TypeError, match="expected torch.Tensor, but got: list"):
        vector_to_parameters([1.0], lin.parameters())


def test_module_warns_nothing_on_plain_call():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Net()(mt.ones(2, 3, dtype=mt.float64)).sum().backward()
