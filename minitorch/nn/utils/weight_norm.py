"""Weight normalization, w = g * v / ||v||: the norm helpers torch exposes as torch.
norm_except_dim / torch._weight_norm, and the legacy hook form nn.utils.weight_norm (parameters
`<name>_g` and `<name>_v`, `<name>` recomputed by a forward pre-hook before every call)."""
import warnings

from ...ndarray import normalize_dim
from ..parameter import Parameter

__all__ = ["WeightNorm", "weight_norm", "remove_weight_norm", "norm_except_dim",
           "weight_norm_from"]


def norm_except_dim(v, pow=2, dim=0):
    """The `pow`-norm of v over every axis but `dim`, kept as size-1 axes (torch.
    norm_except_dim); dim=-1 means the norm of the whole tensor (0-d), as in torch."""
    if dim == -1:
        return v.norm(pow)
    dim = normalize_dim(dim, v.ndim)
    others = tuple(axis for axis in range(v.ndim) if axis != dim)
    return v.norm(pow, others, keepdim=True) if others else v.abs()


def weight_norm_from(v, g, dim=0):
    """torch._weight_norm(v, g, dim): v rescaled to norm g along `dim`."""
    return v * (g / norm_except_dim(v, 2, dim))


class WeightNorm:
    """The forward pre-hook of the legacy weight_norm (torch.nn.utils.weight_norm.WeightNorm)."""

    def __init__(self, name, dim):
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module):
        return weight_norm_from(getattr(module, self.name + "_v"),
                                getattr(module, self.name + "_g"), self.dim)

    @staticmethod
    def apply(module, name, dim):
        warnings.warn("`torch.nn.utils.weight_norm` is deprecated in favor of `torch.nn.utils."
                      "parametrizations.weight_norm`.", FutureWarning, stacklevel=3)
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError("Cannot register two weight_norm hooks on the same "
                                   f"parameter {name}")
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        g = norm_except_dim(weight, 2, fn.dim).detach()   # checked (dim range) before changes
        del module._parameters[name]
        module.register_parameter(name + "_g", Parameter(g))
        module.register_parameter(name + "_v", Parameter(weight.detach()))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module):
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module, name="weight", dim=0):
    """Legacy weight normalization of `module.<name>` (deprecated in torch in favour of
    nn.utils.parametrizations.weight_norm)."""
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module, name="weight"):
    """Undo weight_norm: `<name>` becomes one Parameter again holding g * v / ||v||."""
    return remove_legacy_hook(module, WeightNorm, name, "weight_norm")


def remove_legacy_hook(module, hook_class, name, label):
    """Undo a legacy reparametrization (weight_norm / spectral_norm): its forward pre-hook
    restores `<name>` as one Parameter and is unregistered."""
    for key, hook in module._forward_pre_hooks.items():
        if isinstance(hook, hook_class) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return module
    raise ValueError(f"{label} of '{name}' not found in {module}")
