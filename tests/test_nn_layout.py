"""torch.nn's class layout: which layers are subclasses of which (code tells layers apart with
isinstance), torch.nn.modules' importable submodules and their private bases, the helpers of
torch.nn.modules.utils, DataParallel on at most one device, and the deprecated NLLLoss2d and
Container."""
import importlib
import warnings

import numpy as np
import pytest

import minitorch as mt
import minitorch.nn as nn

TORCH_SUBMODULES = ["activation", "adaptive", "batchnorm", "channelshuffle", "container", "conv", "distance",
                    "dropout", "flatten", "fold", "instancenorm", "lazy", "linear", "loss",
                    "module", "normalization", "padding", "pixelshuffle", "pooling", "rnn",
                    "sparse", "transformer", "upsampling", "utils"]


def _layer_classes(namespace, module_base):
    return {name: obj for name, obj in vars(namespace).items()
            if isinstance(obj, type) and issubclass(obj, module_base)}


def test_subclass_relations_match_torch():
    torch = pytest.importorskip("torch")
    theirs = _layer_classes(torch.nn, torch.nn.Module)
    ours = _layer_classes(nn, nn.Module)
    common = sorted(set(theirs) & set(ours))
    assert len(common) > 150
    differ = [(a, b) for a in common for b in common
              if issubclass(theirs[a], theirs[b]) != issubclass(ours[a], ours[b])]
    assert differ == []


@pytest.mark.parametrize("layer, not_a", [
    (nn.Dropout2d(), nn.Dropout), (nn.AlphaDropout(), nn.Dropout),
    (nn.MaxPool1d(2), nn.MaxPool2d), (nn.MaxPool3d(2), nn.MaxPool2d),
    (nn.AvgPool3d(2), nn.AvgPool2d), (nn.AdaptiveAvgPool1d(2), nn.AdaptiveAvgPool2d),
    (nn.AdaptiveMaxPool3d(2), nn.AdaptiveMaxPool2d), (nn.LogSoftmax(1), nn.Softmax),
    (nn.Softmin(1), nn.Softmax), (nn.Hardshrink(), nn.Softshrink),
    (nn.InstanceNorm2d(3), nn.modules.batchnorm._BatchNorm),
    (nn.LazyBatchNorm1d(), nn.BatchNorm1d)])
def test_siblings_are_not_subclasses(layer, not_a):
    """A freezing loop over `isinstance(m, _BatchNorm)` must not catch instance norms, and one
    over `isinstance(m, nn.Dropout)` not the channel dropouts (torch's classes are siblings)."""
    assert not isinstance(layer, not_a)


def test_shared_bases():
    assert isinstance(nn.Dropout2d(), nn.modules.dropout._DropoutNd)
    assert isinstance(nn.InstanceNorm1d(2), nn.modules.batchnorm._NormBase)
    assert isinstance(nn.BatchNorm2d(2), nn.modules.batchnorm._BatchNorm)
    assert isinstance(nn.MaxPool1d(2), nn.modules.pooling._MaxPoolNd)
    assert isinstance(nn.AvgPool1d(2), nn.modules.pooling._AvgPoolNd)
    assert isinstance(nn.LPPool2d(2, 2), nn.modules.pooling._LPPoolNd)
    assert isinstance(nn.AdaptiveMaxPool1d(2), nn.modules.pooling._AdaptiveMaxPoolNd)


def test_layers_keep_torch_reprs_and_attributes():
    assert repr(nn.MaxPool1d(3, 2)) == ("MaxPool1d(kernel_size=3, stride=2, padding=0, "
                                        "dilation=1, ceil_mode=False)")
    assert repr(nn.AvgPool3d(2)) == "AvgPool3d(kernel_size=2, stride=2, padding=0)"
    assert repr(nn.AvgPool1d(2)) == "AvgPool1d(kernel_size=(2,), stride=(2,), padding=(0,))"
    assert not hasattr(nn.AvgPool1d(2), "divisor_override")
    assert nn.AvgPool3d(2, divisor_override=3).divisor_override == 3
    assert repr(nn.Dropout2d(0.3)) == "Dropout2d(p=0.3, inplace=False)"
    assert repr(nn.LogSoftmax(1)) == "LogSoftmax(dim=1)"
    assert repr(nn.Hardshrink(0.2)) == "Hardshrink(0.2)"
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
        nn.Dropout3d(1.5)


@pytest.mark.parametrize("name", TORCH_SUBMODULES)
def test_torch_submodules_import(name):
    module = importlib.import_module(f"minitorch.nn.modules.{name}")
    assert getattr(nn.modules, name) is module


def test_submodules_hold_torchs_names():
    """Every layer class torch keeps in a torch.nn.modules submodule is there in ours too
    (modules torch 2.13 added after 2.11, and the layers minitorch lacks, aside)."""
    torch = pytest.importorskip("torch")
    lacking = {"LinearCrossEntropyLoss",     # new in torch 2.13
               "_ConvTransposeMixin"}        # a deprecated internal class torch keeps
    for name in TORCH_SUBMODULES:
        theirs = importlib.import_module(f"torch.nn.modules.{name}")
        ours = importlib.import_module(f"minitorch.nn.modules.{name}")
        for cls_name, cls in vars(theirs).items():
            if isinstance(cls, type) and issubclass(cls, torch.nn.Module) \
                    and cls.__module__ == theirs.__name__ and cls_name not in lacking:
                assert hasattr(ours, cls_name), f"torch.nn.modules.{name}.{cls_name}"


def test_modules_package_exports_every_layer():
    from minitorch.nn.modules import BatchNorm2d, Conv2d, Linear, Sequential
    assert (Linear, Conv2d, BatchNorm2d, Sequential) == (nn.Linear, nn.Conv2d, nn.BatchNorm2d,
                                                         nn.Sequential)


def test_utils_tuples():
    from minitorch.nn.modules.utils import (_ntuple, _pair, _quadruple, _reverse_repeat_tuple,
                                            _single, _triple)
    assert _single(3) == (3,) and _pair(3) == (3, 3) and _triple(1) == (1, 1, 1)
    assert _quadruple(0) == (0, 0, 0, 0) and _pair([1, 2]) == (1, 2) and _pair((4, 5)) == (4, 5)
    assert _ntuple(5, "five").__name__ == "five" and _ntuple(5)(2) == (2,) * 5
    assert _reverse_repeat_tuple((1, 2, 3), 2) == (3, 3, 2, 2, 1, 1)


def test_utils_list_with_default():
    from minitorch.nn.modules.utils import _list_with_default
    assert _list_with_default(7, [1, 2, 3]) == 7
    assert _list_with_default([None, 4], [8, 5, 6]) == [5, 4]
    with pytest.raises(ValueError, match="Input dimension should be at least 3"):
        _list_with_default([1, 2], [3, 4])


def test_consume_prefix_loads_a_wrapped_models_state_dict():
    from minitorch.nn.modules.utils import consume_prefix_in_state_dict_if_present
    model = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    state = nn.DataParallel(model).state_dict()
    assert list(state)[0] == "module.0.weight"
    consume_prefix_in_state_dict_if_present(state, "module.")
    assert list(state) == list(model.state_dict())
    assert "" in state._metadata and "0" in state._metadata and "module" not in state._metadata
    fresh = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    fresh.load_state_dict(state)
    # (DataParallel moved the model to the GPU where one is, the emulated one included)
    np.testing.assert_array_equal(fresh[0].weight.detach().cpu().numpy(),
                                  model[0].weight.detach().cpu().numpy())


def test_data_parallel_without_a_gpu_wraps_the_module():
    if mt.cuda.is_available():
        pytest.skip("checks the no-GPU behaviour")
    model = nn.Linear(4, 3)
    wrapped = nn.DataParallel(model, device_ids=[0, 1])
    assert wrapped.module is model and wrapped.device_ids == []
    assert not hasattr(wrapped, "output_device")       # torch stops there too
    x = mt.randn(5, 4)
    np.testing.assert_array_equal(wrapped(x).detach().numpy(), model(x).detach().numpy())
    assert list(wrapped.state_dict()) == ["module.weight", "module.bias"]
    assert repr(wrapped) == "DataParallel(\n  (module): Linear(in_features=4, out_features=3, " \
                           "bias=True)\n)"
    with pytest.raises(RuntimeError, match="device type could not be determined"):
        nn.parallel.data_parallel(model, x)


def test_data_parallel_on_one_gpu(device):
    if device != "cuda":
        pytest.skip("DataParallel places the module only where a GPU exists")
    model = nn.Linear(4, 3)
    wrapped = nn.DataParallel(model, device_ids=[0])
    assert wrapped.device_ids == [0] and wrapped.output_device == 0
    assert model.weight.device.type == "cuda"
    x = mt.randn(5, 4)                          # on the CPU: moved to the module's device
    out = wrapped(x)
    assert out.device.type == "cuda"
    expected = x.numpy() @ model.weight.detach().cpu().numpy().T + \
        model.bias.detach().cpu().numpy()
    np.testing.assert_allclose(out.detach().cpu().numpy(), expected, rtol=1e-5, atol=1e-6)
    out.sum().backward()
    assert model.weight.grad is not None and model.weight.grad.device.type == "cuda"
    np.testing.assert_allclose(nn.parallel.data_parallel(model, x).detach().cpu().numpy(),
                               expected, rtol=1e-5, atol=1e-6)
    with pytest.raises(NotImplementedError, match="DataParallel over 2 devices"):
        nn.DataParallel(nn.Linear(2, 2), device_ids=[0, 1])
    model.cpu()
    with pytest.raises(RuntimeError, match="module must have its parameters and buffers on "
                                           "device cuda:0"):
        wrapped(x)


def test_nll_loss_2d_is_a_deprecated_nll_loss(rng):
    with pytest.warns(FutureWarning, match="`NLLLoss2d` has been deprecated"):
        loss = nn.NLLLoss2d(ignore_index=1)
    assert isinstance(loss, nn.NLLLoss)
    logits = mt.tensor(rng.standard_normal((2, 3, 4, 5))).log_softmax(1)
    target = mt.tensor(rng.integers(0, 3, (2, 4, 5)))
    expected = nn.NLLLoss(ignore_index=1)(logits, target)
    assert loss(logits, target).item() == expected.item()


def test_container_is_deprecated_and_registers_children():
    with pytest.warns(FutureWarning, match="`nn.Container` is deprecated"):
        box = nn.Container(fc=nn.Linear(2, 2), act=nn.ReLU())
    assert list(dict(box.named_children())) == ["fc", "act"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nn.Sequential(nn.ReLU())            # the others do not warn
