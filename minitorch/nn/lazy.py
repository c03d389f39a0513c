"""Lazy modules (torch.nn.LazyLinear, LazyConv*, LazyBatchNorm*, LazyInstanceNorm*): their
parameters are UninitializedParameters until the first forward, whose input gives the missing
size. Materialising fills the *same* parameter objects in place, so an optimizer made before
that first call sees the real parameters; the module then becomes its ordinary class (a
LazyLinear becomes a Linear), as in torch.
"""
import itertools

import minitorch as mt
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .linear import Linear
from .parameter import UninitializedBuffer, UninitializedParameter, UninitializedTensorMixin
from .normalization import (BatchNorm1d, BatchNorm2d, BatchNorm3d, InstanceNorm1d,
                            InstanceNorm2d, InstanceNorm3d, _BatchNorm, _InstanceNorm)


class LazyModuleMixin:
    """torch's LazyModuleMixin: a forward pre-hook calls initialize_parameters(*inputs) once,
    then the module turns into cls_to_become."""
    cls_to_become = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters,
                                                               with_kwargs=True)

    def has_uninitialized_params(self):
        members = itertools.chain(self._parameters.values(), self._buffers.values())
        return any(isinstance(t, UninitializedTensorMixin) for t in members)

    def initialize_parameters(self, *args, **kwargs):
        raise NotImplementedError("initialize_parameters is not implemented for "
                                  f"{type(self).__name__}")

    @staticmethod
    def _infer_parameters(module, args, kwargs=None):
        module.initialize_parameters(*args, **(kwargs or {}))
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {module._get_name()} has not been fully initialized")
        module._initialize_hook.remove()
        del module._initialize_hook
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        """torch's lazy load hook: a placeholder takes its shape from the checkpoint's tensor
        first, so a lazy model loads a checkpoint before it has seen any input."""
        members = itertools.chain(self._parameters.items(), self._buffers.items())
        with mt.no_grad():
            for name, member in members:
                value = state_dict.get(prefix + name)
                if isinstance(member, UninitializedTensorMixin) and isinstance(value, mt.Tensor) \
                        and not isinstance(value, UninitializedTensorMixin):
                    member.materialize(value.shape)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)

    def _materialize(self, shapes):
        """Give each named placeholder its shape, then torch's initialisation."""
        with mt.no_grad():
            for name, shape in shapes.items():
                member = getattr(self, name)
                if isinstance(member, UninitializedTensorMixin):
                    member.materialize(shape)
            self.reset_parameters()


class LazyLinear(LazyModuleMixin, Linear):
    """Linear whose in_features is inferred from the first input, then becomes a Linear
    (torch.nn.LazyLinear)."""
    cls_to_become = Linear

    def __init__(self, out_features, bias=True, device=None, dtype=None):
        super().__init__(0, 0, False)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input):
        if self.has_uninitialized_params():
            self.in_features = input.shape[-1]
            self._materialize({"weight": (self.out_features, self.in_features),
                               "bias": (self.out_features,)})


class _LazyConvMixin(LazyModuleMixin):
    """Lazy in_channels: read from the input (its axis 0 when unbatched)."""

    def _lazy_init(self, out_channels, bias, device, dtype):
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def _get_in_channels(self, input):
        unbatched = self._dims + 1
        if input.ndim not in (unbatched, unbatched + 1):
            raise RuntimeError(f"Expected {unbatched}D (unbatched) or {unbatched + 1}D (batched) "
                               f"input to {type(self).__name__}, but got input of size: "
                               f"{input.shape}")
        return input.shape[1] if input.ndim == unbatched + 1 else input.shape[0]

    def initialize_parameters(self, input, *args, **kwargs):
        if self.has_uninitialized_params():
            self.in_channels = self._get_in_channels(input)
            if self.in_channels % self.groups:
                raise ValueError("in_channels must be divisible by groups")
            channels = ((self.in_channels, self.out_channels // self.groups) if self.transposed
                        else (self.out_channels, self.in_channels // self.groups))
            self._materialize({"weight": channels + self.kernel_size,
                               "bias": (self.out_channels,)})


class _LazyConvNd(_LazyConvMixin):
    def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False,
                         padding_mode, device, dtype)
        self._lazy_init(out_channels, bias, device, dtype)


class _LazyConvTransposeNd(_LazyConvMixin):
    def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0,
                 groups=1, bias=True, dilation=1, padding_mode="zeros", device=None,
                 dtype=None):
        super().__init__(0, 0, kernel_size, stride, padding, output_padding, groups, False,
                         dilation, padding_mode, device, dtype)
        self._lazy_init(out_channels, bias, device, dtype)


class LazyConv1d(_LazyConvNd, Conv1d):
    """Conv1d whose in_channels is inferred from the first input, then becomes a Conv1d
    (torch.nn.LazyConv1d)."""
    cls_to_become = Conv1d


class LazyConv2d(_LazyConvNd, Conv2d):
    """Conv2d whose in_channels is inferred from the first input, then becomes a Conv2d
    (torch.nn.LazyConv2d)."""
    cls_to_become = Conv2d


class LazyConv3d(_LazyConvNd, Conv3d):
    """Conv3d whose in_channels is inferred from the first input, then becomes a Conv3d
    (torch.nn.LazyConv3d)."""
    cls_to_become = Conv3d


class LazyConvTranspose1d(_LazyConvTransposeNd, ConvTranspose1d):
    """ConvTranspose1d whose in_channels is inferred from the first input, then becomes a
    ConvTranspose1d (torch.nn.LazyConvTranspose1d)."""
    cls_to_become = ConvTranspose1d


class LazyConvTranspose2d(_LazyConvTransposeNd, ConvTranspose2d):
    """ConvTranspose2d whose in_channels is inferred from the first input, then becomes a
    ConvTranspose2d (torch.nn.LazyConvTranspose2d)."""
    cls_to_become = ConvTranspose2d


class LazyConvTranspose3d(_LazyConvTransposeNd, ConvTranspose3d):
    """ConvTranspose3d whose in_channels is inferred from the first input, then becomes a
    ConvTranspose3d (torch.nn.LazyConvTranspose3d)."""
    cls_to_become = ConvTranspose3d


class _LazyNormBase(LazyModuleMixin):
    """Lazy num_features (the input's axis 1, as torch reads it, batched or not)."""

    def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 device=None, dtype=None, *, bias=True):
        # affine and running statistics off first: no tensors made only to be replaced
        super().__init__(0, eps, momentum, False, False, device, dtype, bias=False)
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            if bias:
                self.bias = UninitializedParameter(device=device, dtype=dtype)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = mt.tensor(0, device=device)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input):
        if self.has_uninitialized_params():
            self.num_features = input.shape[1]
            shape = (self.num_features,)
            self._materialize({name: shape for name in
                               ("weight", "bias", "running_mean", "running_var")})


class LazyBatchNorm1d(_LazyNormBase, _BatchNorm):
    """BatchNorm1d whose num_features is inferred from the first input, then becomes a
    BatchNorm1d (torch.nn.LazyBatchNorm1d)."""
    cls_to_become = BatchNorm1d
    _expected_dims = BatchNorm1d._expected_dims


class LazyBatchNorm2d(_LazyNormBase, _BatchNorm):
    """BatchNorm2d whose num_features is inferred from the first input, then becomes a
    BatchNorm2d (torch.nn.LazyBatchNorm2d)."""
    cls_to_become = BatchNorm2d
    _expected_dims = BatchNorm2d._expected_dims


class LazyBatchNorm3d(_LazyNormBase, _BatchNorm):
    """BatchNorm3d whose num_features is inferred from the first input, then becomes a
    BatchNorm3d (torch.nn.LazyBatchNorm3d)."""
    cls_to_become = BatchNorm3d
    _expected_dims = BatchNorm3d._expected_dims


# torch's lazy instance norms keep the batch norms' defaults (affine and running statistics
# on), unlike InstanceNorm1d itself
class LazyInstanceNorm1d(_LazyNormBase, _InstanceNorm):
    """InstanceNorm1d whose num_features is inferred from the first input, then becomes an
    InstanceNorm1d (torch.nn.LazyInstanceNorm1d)."""
    cls_to_become = InstanceNorm1d
    _no_batch_dims = InstanceNorm1d._no_batch_dims


class LazyInstanceNorm2d(_LazyNormBase, _InstanceNorm):
    """InstanceNorm2d whose num_features is inferred from the first input, then becomes an
    InstanceNorm2d (torch.nn.LazyInstanceNorm2d)."""
    cls_to_become = InstanceNorm2d
    _no_batch_dims = InstanceNorm2d._no_batch_dims


class LazyInstanceNorm3d(_LazyNormBase, _InstanceNorm):
    """InstanceNorm3d whose num_features is inferred from the first input, then becomes an
    InstanceNorm3d (torch.nn.LazyInstanceNorm3d)."""
    cls_to_become = InstanceNorm3d
    _no_batch_dims = InstanceNorm3d._no_batch_dims
