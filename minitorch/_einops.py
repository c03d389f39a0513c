"""einops on minitorch tensors: the backend einops looks for, and its layers as our nn.Modules.

einops 0.8 has no registration call for third-party frameworks: `einops._backends.get_backend`
finds backends as the subclasses of `AbstractBackend` whose `framework_name` is a loaded
module. Defining the subclass needs einops, which minitorch never imports on its own: this
module is imported when both are loaded, whichever comes first (minitorch/_einops_hook.py).

The layers (`Rearrange`, `Reduce`) are einops' own mixins on our nn.Module, as
einops.layers.torch does on torch's; they sit in an nn.Sequential like any module.
"""
from einops._backends import AbstractBackend
from einops.layers import RearrangeMixin, ReduceMixin

import minitorch
from minitorch import nn
from minitorch.tensor import Tensor


class MinitorchBackend(AbstractBackend):
    """einops' backend interface, on our tensor ops (so gradients flow through every call)."""
    framework_name = "minitorch"

    def is_appropriate_type(self, tensor):
        return isinstance(tensor, Tensor)

    def from_numpy(self, x):
        variable = minitorch.from_numpy(x)
        return variable.requires_grad_() if variable.is_floating_point() else variable

    def to_numpy(self, x):
        return x.detach().cpu().numpy()

    def arange(self, start, stop):
        return minitorch.arange(start, stop, dtype=minitorch.int64)

    def reduce(self, x, operation, reduced_axes):
        if operation in ("min", "max"):
            return getattr(x, "a" + operation)(dim=tuple(reduced_axes))
        if operation in ("sum", "mean"):
            return getattr(x, operation)(dim=tuple(reduced_axes))
        if operation in ("any", "all", "prod"):     # one dim at a time, last first, as torch
            for axis in sorted(reduced_axes, reverse=True):
                x = getattr(x, operation)(dim=axis)
            return x
        raise NotImplementedError("Unknown reduction ", operation)

    def transpose(self, x, axes):
        return x.permute(*axes)

    def stack_on_zeroth_dimension(self, tensors: list):
        return minitorch.stack(tensors)

    def add_axis(self, x, new_position):
        return x.unsqueeze(new_position)

    def add_axes(self, x, n_axes, pos2len):
        repeats = [-1] * n_axes
        for axis_position, axis_length in pos2len.items():
            x = self.add_axis(x, axis_position)
            repeats[axis_position] = axis_length
        return x.expand(*repeats)

    def tile(self, x, repeats):
        return x.repeat(*repeats)

    def concat(self, tensors, axis: int):
        return minitorch.cat(tensors, dim=axis)

    def is_float_type(self, x):
        return x.is_floating_point()

    def layers(self):
        import sys
        return sys.modules[__name__]

    def einsum(self, pattern, *x):
        return minitorch.einsum(pattern, *x)


class Rearrange(RearrangeMixin, nn.Module):
    """einops.layers.torch.Rearrange for minitorch: `Rearrange("b c h w -> b (c h w)")`."""

    def forward(self, input):
        return self._apply_recipe(input)


class Reduce(ReduceMixin, nn.Module):
    """einops.layers.torch.Reduce for minitorch: `Reduce("b c h w -> b c", "mean")`."""

    def forward(self, input):
        return self._apply_recipe(input)
