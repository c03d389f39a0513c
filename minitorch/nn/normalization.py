"""BatchNorm1d/2d/3d (running statistics, momentum, eval mode), InstanceNorm1d/2d/3d, LayerNorm,
GroupNorm, RMSNorm, LocalResponseNorm."""
import numbers
import warnings

import minitorch as mt
from . import functional as F, init
from .module import Module
from .parameter import Parameter


def _affine_parameters(module, shape, affine, bias, device, dtype):
    """weight (ones) and, unless bias=False, bias (zeros) of `shape`; None when not affine."""
    if affine:
        module.weight = Parameter(mt.ones(*shape, device=device, dtype=dtype))
        if bias:
            module.bias = Parameter(mt.zeros(*shape, device=device, dtype=dtype))
        else:
            module.register_parameter("bias", None)
    else:
        module.register_parameter("weight", None)
        module.register_parameter("bias", None)


class _NormBase(Module):
    """The parameters, running statistics, state-dict versioning and repr that batch and
    instance normalization share (torch's _NormBase; _BatchNorm and _InstanceNorm are siblings
    under it, so `isinstance(m, _BatchNorm)` is False for an InstanceNorm2d, as in torch)."""
    _version = 2    # version 2 added num_batches_tracked

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        """A state dict from before version 2 (or without metadata, as any plain dict) may lack
        num_batches_tracked: torch keeps the current counter rather than report it missing."""
        version = local_metadata.get("version", None)
        key = prefix + "num_batches_tracked"
        if (version is None or version < 2) and self.track_running_stats and \
                key not in state_dict:
            counter = self.num_batches_tracked
            state_dict[key] = counter if counter is not None else mt.tensor(0)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, device=None, dtype=None, *, bias=True):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        _affine_parameters(self, (num_features,), affine, bias, device, dtype)
        if track_running_stats:
            self.register_buffer("running_mean", mt.zeros(num_features, device=device,
                                                          dtype=dtype))
            self.register_buffer("running_var", mt.ones(num_features, device=device, dtype=dtype))
            self.register_buffer("num_batches_tracked", mt.tensor(0, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def reset_running_stats(self):
        if self.track_running_stats:
            with mt.no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1)
                self.num_batches_tracked.zero_()

    def reset_parameters(self):
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")


class _BatchNorm(_NormBase):
    """Batch statistics in training, running ones in eval (torch's _BatchNorm)."""
    _expected_dims = ()

    def _check_input(self, input):
        """The module's rank check, then F.batch_norm's own checks, before any statistic
        changes (torch counts the batch first)."""
        if input.ndim not in self._expected_dims:
            raise ValueError(f"expected {' or '.join(f'{d}D' for d in self._expected_dims)} "
                             f"input (got {input.ndim}D input)")
        if self.training:
            F._verify_batch_size(input.shape)
        channels = input.shape[1]
        for name in ("running_mean", "running_var", "weight", "bias"):
            t = getattr(self, name)
            if t is not None and t.numel() != channels:
                raise RuntimeError(f"{name} should contain {channels} elements not {t.numel()}")

    def forward(self, input):
        """torch's _BatchNorm.forward: batch statistics in training (or when no running
        statistics exist), the running ones otherwise; momentum=None is a cumulative average."""
        self._check_input(input)
        momentum = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            with mt.no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:
                momentum = 1.0 / float(self.num_batches_tracked.item())
        use_batch_stats = self.training or (self.running_mean is None and
                                            self.running_var is None)
        # Buffers are passed only when they are to be updated (training with tracking) or used.
        pass_buffers = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if pass_buffers else None,
                            self.running_var if pass_buffers else None, self.weight, self.bias,
                            use_batch_stats, momentum, self.eps)


class BatchNorm1d(_BatchNorm):
    """Batch normalization over (N, C) or (N, C, L) input, per channel, with running statistics
    (torch.nn.BatchNorm1d)."""
    _expected_dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalization over (N, C, H, W) input, per channel, with running statistics
    (torch.nn.BatchNorm2d)."""
    _expected_dims = (4,)


class BatchNorm3d(_BatchNorm):
    """Batch normalization over (N, C, D, H, W) input, per channel, with running statistics
    (torch.nn.BatchNorm3d)."""
    _expected_dims = (5,)


class _InstanceNorm(_NormBase):
    """Per-sample, per-channel normalisation: _NormBase's parameters, buffers and repr, with
    other defaults and no num_batches_tracked counting."""
    _no_batch_dims = 0

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False,
                 track_running_stats=False, device=None, dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype,
                         bias=bias)

    def forward(self, input):
        """torch's _InstanceNorm.forward: rank and channel checks, an unbatched input run as a
        batch of one, batch statistics unless evaluating with running statistics."""
        dims = (self._no_batch_dims, self._no_batch_dims + 1)
        if input.ndim not in dims:
            raise ValueError(f"expected {dims[0]}D or {dims[1]}D input (got {input.ndim}D input)")
        feature_dim = input.ndim - self._no_batch_dims
        if input.shape[feature_dim] != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim={feature_dim} to match "
                                 f"num_features ({self.num_features}), but got: "
                                 f"{input.shape[feature_dim]}.")
            warnings.warn(f"input's size at dim={feature_dim} does not match num_features. You "
                          "can silence this warning by not passing in num_features, which is not "
                          "used because affine=False", stacklevel=2)
        unbatched = input.ndim == self._no_batch_dims
        out = F.instance_norm(input.unsqueeze(0) if unbatched else input, self.running_mean,
                              self.running_var, self.weight, self.bias,
                              self.training or not self.track_running_stats,
                              self.momentum if self.momentum is not None else 0.0, self.eps)
        return out.squeeze(0) if unbatched else out


class InstanceNorm1d(_InstanceNorm):
    """Instance normalization of (N, C, L) or (C, L) input: each sample's channels over their
    length (torch.nn.InstanceNorm1d)."""
    _no_batch_dims = 2


class InstanceNorm2d(_InstanceNorm):
    """Instance normalization of (N, C, H, W) or (C, H, W) input: each sample's channels over
    their spatial dims (torch.nn.InstanceNorm2d)."""
    _no_batch_dims = 3


class InstanceNorm3d(_InstanceNorm):
    """Instance normalization of (N, C, D, H, W) or (C, D, H, W) input: each sample's channels
    over their spatial dims (torch.nn.InstanceNorm3d)."""
    _no_batch_dims = 4


class LayerNorm(Module):
    """Layer normalization over the trailing normalized_shape dims, with optional elementwise
    weight and bias (torch.nn.LayerNorm)."""
    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True,
                 device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        _affine_parameters(self, self.normalized_shape, elementwise_affine, bias, device, dtype)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}")


class GroupNorm(Module):
    """Group normalization over num_groups groups of channels, with optional per-channel affine
    (torch.nn.GroupNorm)."""
    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None, dtype=None,
                 *, bias=True):
        super().__init__()
        if num_channels % num_groups:
            raise ValueError(f"num_channels ({num_channels}) must be divisible by num_groups "
                             f"({num_groups})")
        self.num_groups, self.num_channels, self.eps, self.affine = (num_groups, num_channels,
                                                                     eps, affine)
        _affine_parameters(self, (num_channels,), affine, bias, device, dtype)

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class RMSNorm(Module):
    """Root-mean-square normalization over the trailing normalized_shape dims, with optional
    elementwise weight (torch.nn.RMSNorm)."""
    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None,
                 dtype=None):
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(mt.ones(*self.normalized_shape, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)

    def reset_parameters(self):
        if self.elementwise_affine:
            init.ones_(self.weight)

    def forward(self, input):
        return F.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


class LocalResponseNorm(Module):
    """Local response normalization across neighbouring channels (torch.nn.LocalResponseNorm)."""
    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
