"""DataParallel and data_parallel (torch.nn.parallel.data_parallel) on at most one GPU.

Without a GPU, DataParallel only wraps the module (forward calls it as it is, and the state
dict gains torch's "module." prefix); with one device, the module lives there and each
forward moves its inputs there first, exactly what torch does in both cases. Splitting a batch
over several GPUs (torch's replicate / parallel_apply / gather) is not built: device_ids with
more than one device raise NotImplementedError; DistributedDataParallel is the way to use
several devices (torch recommends it over DataParallel too)."""
import itertools

from ... import cuda
from ...backend import device as Device
from ..._pytree import tree_map
from ...tensor import Tensor
from ..module import Module

_SEVERAL = ("DataParallel over {n} devices is not implemented in minitorch (it runs on one "
            "device); use torch.nn.parallel.DistributedDataParallel with one process per "
            "device, or pass device_ids=[one device]")


class DataParallel(Module):
    """torch.nn.DataParallel(module, device_ids=None, output_device=None, dim=0) on at most one
    GPU (see the module docstring)."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        if not cuda.is_available():         # torch: no device type, a plain wrapper
            self.module, self.device_ids = module, []
            return
        if device_ids is None:
            device_ids = list(range(cuda.device_count()))
        if output_device is None:
            output_device = device_ids[0]
        self.dim, self.module = dim, module
        self.device_ids = [_device_index(d) for d in device_ids]
        self.output_device = _device_index(output_device)
        self.src_device_obj = Device(f"cuda:{self.device_ids[0]}")
        if len(self.device_ids) > 1:
            raise NotImplementedError(_SEVERAL.format(n=len(self.device_ids)))
        self.module.to(self.src_device_obj)

    def forward(self, *inputs, **kwargs):
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        _check_on(self.module, self.src_device_obj)
        inputs, kwargs = move_to((inputs, kwargs), self.src_device_obj)
        return self.module(*inputs, **kwargs)


def data_parallel(module, inputs, device_ids=None, output_device=None, dim=0,
                  module_kwargs=None):
    """module(*inputs, **module_kwargs) on device_ids[0], the inputs moved there first
    (torch.nn.parallel.data_parallel, for one device)."""
    if not isinstance(inputs, tuple):
        inputs = (inputs,) if inputs is not None else ()
    if not cuda.is_available():
        raise RuntimeError("device type could not be determined")
    if device_ids is None:
        device_ids = list(range(cuda.device_count()))
    if len(device_ids) > 1:
        raise NotImplementedError(_SEVERAL.format(n=len(device_ids)))
    source = Device(f"cuda:{_device_index(device_ids[0])}")
    _check_on(module, source)
    inputs, module_kwargs = move_to((inputs, module_kwargs or {}), source)
    return module(*inputs, **module_kwargs)


def move_to(tree, device):
    """`tree` (nested tuples, lists and dicts) with each tensor moved to `device` (the one-device
    case of torch's scatter: other objects are passed as they are)."""
    return tree_map(lambda x: x.to(device) if isinstance(x, Tensor) else x, tree)


def _device_index(device):
    """torch's _get_device_index(device, optional=True): an int, or a device's index."""
    if isinstance(device, int):
        return device
    index = Device(device).index
    return 0 if index is None else index


def _check_on(module, device):
    for t in itertools.chain(module.parameters(), module.buffers()):
        if t.device != device:
            raise RuntimeError(f"module must have its parameters and buffers on device "
                               f"{device} (device_ids[0]) but found one of them on device: "
                               f"{t.device}")
