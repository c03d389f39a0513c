"""Gradient clipping: clip_grad_norm_ (and its parts get_total_norm / clip_grads_with_norm_) and
clip_grad_value_, as in torch.nn.utils. Everything stays on the device: no host sync unless
error_if_nonfinite asks for one. Sparse gradients are refused with torch's NotImplementedError."""
import types
import warnings

from ...autograd import no_grad
from ...functions.elementwise import clamp
from ...functions.joining import stack
from ...functions.norms import norm
from ...tensor import Tensor, tensor

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_",
           "get_total_norm"]


def _as_list(tensors):
    return [tensors] if isinstance(tensors, Tensor) else list(tensors)


def _refuse_sparse(grads, op):
    """torch has no sparse kernel for the norm or the clamp, so clipping a sparse gradient
    (nn.Embedding(sparse=True)) is its NotImplementedError; refused before any gradient
    changes."""
    for g in grads:
        if g.is_sparse:
            backend = "SparseCUDA" if g.device.type == "cuda" else "SparseCPU"
            raise NotImplementedError(f"Could not run 'aten::{op}' with arguments from the "
                                      f"'{backend}' backend: clipping a sparse gradient is not "
                                      "supported (torch has no sparse kernel for it either)")


@no_grad()
def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The norm of the per-tensor norms (= the norm of all elements together)."""
    tensors = _as_list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return tensor(0.0)
    _refuse_sparse(tensors, "linalg_vector_norm")
    first_device = tensors[0].device
    # norm over all elements is vector_norm, with its dtype and empty-input errors
    norms = [norm(t, norm_type).to(first_device) for t in tensors]
    total_norm = norm(stack(norms), norm_type)
    if error_if_nonfinite and bool(total_norm.isnan() | total_norm.isinf()):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from "
                           "`parameters` is non-finite, so it cannot be clipped. To disable this "
                           "error and scale the gradients by the non-finite norm anyway, set "
                           "`error_if_nonfinite=False`")
    return total_norm


@no_grad()
def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scale every .grad by min(1, max_norm / (total_norm + 1e-6)) in place."""
    grads = [p.grad for p in _as_list(parameters) if p.grad is not None]
    if not grads:
        return
    coefficient = clamp(float(max_norm) / (total_norm + 1e-6), max=1.0)
    for grad in grads:
        grad.mul_(coefficient.to(grad.device))


@no_grad()
def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False,
                    foreach=None):
    """Rescale the gradients so that their total norm is at most max_norm; returns the total
    norm before clipping (a 0-d tensor)."""
    is_generator = isinstance(parameters, types.GeneratorType)
    parameters = _as_list(parameters)
    if is_generator and not parameters:
        warnings.warn("`parameters` is an empty generator, no gradient clipping will occur.",
                      stacklevel=3)
    grads = [p.grad for p in parameters if p.grad is not None]
    total_norm = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total_norm, foreach)
    return total_norm


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Deprecated spelling of clip_grad_norm_."""
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


@no_grad()
def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every .grad into [-clip_value, clip_value] in place."""
    clip_value = float(clip_value)
    parameters = _as_list(parameters)
    _refuse_sparse([p.grad for p in parameters if p.grad is not None], "clamp_")
    for p in parameters:
        if p.grad is not None:
            p.grad.clamp_(min=-clip_value, max=clip_value)
