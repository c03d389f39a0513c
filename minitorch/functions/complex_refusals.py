"""torch's errors for the ops that have no meaning (or no kernel) for complex numbers: ordering
(max / min, sort, topk, median, clamp ...) and a few predicates. Each op calls `refuse_complex`
where torch raises, after its argument checks; the wording is torch 2.13's, word for word
(some messages really start with a space, some name the device, some don't)."""
from ..tensor import Tensor

# op: (exception type, message); {device} is the device type, {DEVICE} in capitals, {dtype}
# torch's dtype name
_NO_KERNEL = '"{kernel}" not implemented for \'{dtype}\''
REFUSALS = {
    "max": (NotImplementedError, _NO_KERNEL.replace("{kernel}", "max_all")),
    "min": (NotImplementedError, _NO_KERNEL.replace("{kernel}", "min_all")),
    "max_dim": (RuntimeError, "max(): does not support complex input"),
    "min_dim": (RuntimeError, "min(): does not support complex input"),
    "argmax": (RuntimeError, "argmax(): does not support complex input"),
    "argmin": (RuntimeError, "argmin(): does not support complex input"),
    "amax": (NotImplementedError, _NO_KERNEL.replace("{kernel}", "max_values_{device}")),
    "amin": (NotImplementedError, _NO_KERNEL.replace("{kernel}", "min_values_{device}")),
    "aminmax": (NotImplementedError, _NO_KERNEL.replace("{kernel}", "aminmax_{device}")),
    "maximum": (RuntimeError, "maximum not implemented for complex tensors."),
    "minimum": (RuntimeError, "minimum not implemented for complex tensors."),
    "fmax": (RuntimeError, "fmax not implemented for complex tensors."),
    "fmin": (RuntimeError, "fmin not implemented for complex tensors."),
    "clamp": (NotImplementedError, "clamp is not supported for complex types"),
    "sort": (RuntimeError, " Sort does not support complex dtypes on {DEVICE}"),
    "topk": (RuntimeError, " topk does not support complex dtypes on {DEVICE}"),
    "kthvalue": (NotImplementedError, _NO_KERNEL.replace("{kernel}", "kthvalue_{device}")),
    "median": (NotImplementedError, _NO_KERNEL.replace("{kernel}", "median_{device}")),
    "median_dim": (NotImplementedError, _NO_KERNEL.replace("{kernel}", "median_out")),
    "mode": (NotImplementedError, _NO_KERNEL.replace("{kernel}", "mode_{device}")),
    "unique": (NotImplementedError, _NO_KERNEL.replace("{kernel}", "unique")),
    "nansum": (RuntimeError, "nansum on CPU does not support complex inputs"),
    "quantile": (RuntimeError, "quantile() input tensor must be either float or double dtype"),
    "cummax": (NotImplementedError, _NO_KERNEL.replace("{kernel}", "cummax_{device}")),
    "cummin": (NotImplementedError, _NO_KERNEL.replace("{kernel}", "cummin_{device}")),
    "searchsorted": (NotImplementedError,
                     _NO_KERNEL.replace("{kernel}", "searchsorted_out_{device}")),
    "heaviside": (RuntimeError, "heaviside is not yet implemented for complex tensors."),
    "isneginf": (RuntimeError, "isneginf does not support complex inputs."),
    "isposinf": (RuntimeError, "isposinf does not support complex inputs."),
    "signbit": (NotImplementedError, "signbit is not implemented for complex tensors."),
    "sign": (NotImplementedError, "Unlike NumPy, torch.sign is not intended to support complex "
                                  "numbers. Please use torch.sgn instead."),
}


def refuse_complex(op, *tensors):
    """Raise torch's error for `op` (a key of REFUSALS) when one of `tensors` is complex."""
    for t in tensors:
        if isinstance(t, Tensor) and t._data.dtype.is_complex:
            error, message = REFUSALS[op]
            device = t._data.device.type
            raise error(message.format(device=device, DEVICE=device.upper(),
                                       dtype=t._data.dtype.torch_name))
