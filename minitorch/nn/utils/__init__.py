"""nn.utils: gradient clipping, flattening parameters into one vector and back, padded
sequence batches (nn.utils.rnn), parametrizations (parametrize, parametrizations and the legacy
weight_norm / spectral_norm hooks), conv/linear + batch-norm fusion, skip_init and
stateless.functional_call."""
from ...functions.joining import cat
from ...tensor import Tensor
from . import parametrizations, parametrize, rnn, stateless  # noqa: F401
from .clip_grad import (clip_grad_norm, clip_grad_norm_, clip_grad_value_,  # noqa: F401
                        clip_grads_with_norm_, get_total_norm)
from .fusion import (fuse_conv_bn_eval, fuse_conv_bn_weights,  # noqa: F401
                     fuse_linear_bn_eval, fuse_linear_bn_weights)
from .init import skip_init  # noqa: F401
from .spectral_norm import remove_spectral_norm, spectral_norm  # noqa: F401
from .weight_norm import remove_weight_norm, weight_norm  # noqa: F401

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_",
           "fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval",
           "fuse_linear_bn_weights", "get_total_norm", "parameters_to_vector",
           "remove_spectral_norm", "remove_weight_norm", "skip_init", "spectral_norm",
           "vector_to_parameters", "weight_norm"]


def _check_param_device(param, device):
    """The common device of the parameters seen so far (torch refuses mixed devices)."""
    if device is not None and param.device != device:
        raise TypeError("Found two parameters on different devices, this is currently not "
                        "supported.")
    return param.device


def parameters_to_vector(parameters):
    """All parameters flattened and concatenated into one 1-D tensor (differentiable)."""
    device, pieces = None, []
    for param in parameters:
        device = _check_param_device(param, device)
        pieces.append(param.view(-1))
    return cat(pieces)


def vector_to_parameters(vec, parameters):
    """Point each parameter's data at its slice of `vec` (the inverse of the above)."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    device, pointer = None, 0
    for param in parameters:
        device = _check_param_device(param, device)
        count = param.numel()
        param.data = vec[pointer:pointer + count].view_as(param).data
        pointer += count
