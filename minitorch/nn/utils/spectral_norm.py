"""Spectral normalization, w / sigma(w) with sigma estimated by power iteration: the shared
helpers and the legacy hook form nn.utils.spectral_norm (parameter `<name>_orig`, buffers
`<name>_u` and `<name>_v`, `<name>` recomputed by a forward pre-hook before every call)."""
from ...autograd import no_grad
from ...functions.linalg import mv
from .. import functional as F
from ..conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ..parameter import Parameter
from .weight_norm import remove_legacy_hook

__all__ = ["SpectralNorm", "spectral_norm", "remove_spectral_norm"]


def default_dim(module):
    """torch's default: the output-channel axis, which is 1 for transposed convolutions."""
    return 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0


def weight_to_matrix(weight, dim):
    """`dim` first, everything else flattened: the matrix whose top singular value is used."""
    if dim != 0:
        weight = weight.permute(dim, *(d for d in range(weight.ndim) if d != dim))
    return weight.reshape(weight.shape[0], -1)


def normalize_into(buffer, vector, eps):
    """buffer <- vector / ||vector|| in place (torch's F.normalize(..., out=buffer)), so the
    module keeps the same buffer object."""
    buffer.copy_(F.normalize(vector, dim=0, eps=eps))
    return buffer


def check_power_iterations(n_power_iterations):
    if n_power_iterations <= 0:
        raise ValueError("Expected n_power_iterations to be positive, but got "
                         f"n_power_iterations={n_power_iterations}")


class SpectralNorm:
    """The forward pre-hook of the legacy spectral_norm (torch.nn.utils.spectral_norm)."""
    _version = 1

    def __init__(self, name="weight", n_power_iterations=1, dim=0, eps=1e-12):
        check_power_iterations(n_power_iterations)
        self.name = name
        self.dim = dim
        self.n_power_iterations = n_power_iterations
        self.eps = eps

    def reshape_weight_to_matrix(self, weight):
        return weight_to_matrix(weight, self.dim)

    def compute_weight(self, module, do_power_iteration):
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        weight_mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with no_grad():
                for _ in range(self.n_power_iterations):
                    normalize_into(v, mv(weight_mat.t(), u), self.eps)
                    normalize_into(u, mv(weight_mat, v), self.eps)
                # copies: the buffers change in place at the next call, after sigma saved them
                u, v = u.clone(), v.clone()
        sigma = u.dot(mv(weight_mat, v))
        return weight / sigma

    def remove(self, module):
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        for suffix in ("", "_u", "_v", "_orig"):
            delattr(module, self.name + suffix)
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module, module.training))

    @staticmethod
    def apply(module, name, n_power_iterations, dim, eps):
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError("Cannot register two spectral_norm hooks on the same "
                                   f"parameter {name}")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        if weight is None:
            raise ValueError(f"`SpectralNorm` cannot be applied as parameter `{name}` is None")
        with no_grad():
            height, width = fn.reshape_weight_to_matrix(weight).shape
            u = F.normalize(weight.new_empty(height).normal_(0, 1), dim=0, eps=fn.eps)
            v = F.normalize(weight.new_empty(width).normal_(0, 1), dim=0, eps=fn.eps)
        delattr(module, fn.name)
        module.register_parameter(fn.name + "_orig", weight)
        setattr(module, fn.name, weight.data)
        module.register_buffer(fn.name + "_u", u)
        module.register_buffer(fn.name + "_v", v)
        module.register_forward_pre_hook(fn)
        return fn


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Legacy spectral normalization of `module.<name>`."""
    SpectralNorm.apply(module, name, n_power_iterations,
                       default_dim(module) if dim is None else dim, eps)
    return module


def remove_spectral_norm(module, name="weight"):
    """Undo spectral_norm: `<name>` becomes one Parameter holding w / sigma."""
    return remove_legacy_hook(module, SpectralNorm, name, "spectral_norm")
