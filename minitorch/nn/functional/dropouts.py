"""torch.nn.functional's dropout family: dropout, dropout1d/2d/3d (whole channels), alpha_dropout
and feature_alpha_dropout, each a random mask multiplied in (in place when asked).
"""
import math
import warnings

import minitorch as mt


def _check_dropout_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def keep_noise(input, p, mask_shape):
    """1 for each kept unit (probability 1 - p), else 0, in input's dtype. On the CPU this is
    torch's own noise, `bernoulli_(1 - p)` (a 53-bit uniform below 1 - p per element), so a
    seeded script drops the units torch drops. On cuda torch draws with Philox, which is not
    reproduced here: a float32 uniform at or above p, drawn on the host, half the bytes to
    upload."""
    if input.device.type == "cpu":
        return mt.empty(mask_shape, dtype=input.dtype).bernoulli_(1 - p)
    return (mt.rand(*mask_shape, dtype=input.dtype, device=input.device) >= p).to(input.dtype)


def _masked_dropout(input, p, training, inplace, mask_shape):
    """Zero input where a Bernoulli(1 - p) mask of mask_shape (broadcast over input) is 0 and
    scale the rest by 1/(1 - p) (torch's order: the noise divided, then multiplied in)."""
    if not training or p == 0.0:
        return input
    if p == 1.0:
        result = input * 0.0
    else:
        result = input * keep_noise(input, p, mask_shape).div_(1.0 - p)
    return input.copy_(result) if inplace else result


def dropout(input, p=0.5, training=True, inplace=False):
    """Zeroes each element with probability p and scales the rest by 1 / (1 - p) when training
    (torch.nn.functional.dropout)."""
    _check_dropout_p(p)
    return _masked_dropout(input, p, training, inplace, input.shape)


def _feature_dropout(input, p, training, inplace):
    """Channel-wise dropout of an (N, C, …) input: one mask value per (sample, channel)."""
    mask_shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2)
    return _masked_dropout(input, p, training, inplace, mask_shape)


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zeroes whole channels of (N, C, L) or (C, L) input with probability p when training
    (torch.nn.functional.dropout1d)."""
    _check_dropout_p(p)
    if input.ndim not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D "
                           "input. Note that dropout1d exists to provide channel-wise dropout on "
                           "inputs with 1 spatial dimension, a channel dimension, and an optional "
                           "batch dimension (i.e. 2D or 3D inputs).")
    if input.ndim == 3:
        return _feature_dropout(input, p, training, inplace)
    # Unbatched (C, L): a batch of one; in place, the view writes through to the input.
    result = _feature_dropout(input.unsqueeze(0), p, training, inplace).squeeze(0)
    return input if inplace else result


def dropout2d(input, p=0.5, training=True, inplace=False):
    """torch's dropout2d, its warnings included: a 3-D input is taken as (N, C, L)."""
    _check_dropout_p(p)
    if input.ndim not in (3, 4):
        warnings.warn(f"dropout2d: Received a {input.ndim}-D input to dropout2d, which is "
                      "deprecated and will result in an error in a future release. To retain "
                      "the behavior and silence this warning, please use dropout instead. Note "
                      "that dropout2d exists to provide channel-wise dropout on inputs with 2 "
                      "spatial dimensions, a channel dimension, and an optional batch dimension "
                      "(i.e. 3D or 4D inputs).", stacklevel=2)
    if input.ndim == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise "
                      "1D dropout behavior is desired - input is interpreted as shape (N, C, L), "
                      "where C is the channel dim. This behavior will change in a future release "
                      "to interpret the input as one without a batch dimension, i.e. shape "
                      "(C, H, W). To maintain the 1D channel-wise dropout behavior, please switch "
                      "to using dropout1d instead.", stacklevel=2)
    return _feature_dropout(input, p, training, inplace)


def dropout3d(input, p=0.5, training=True, inplace=False):
    """torch's dropout3d, its warning included: a 4-D input is one unbatched (C, D, H, W)."""
    _check_dropout_p(p)
    if input.ndim not in (4, 5):
        warnings.warn(f"dropout3d: Received a {input.ndim}-D input to dropout3d, which is "
                      "deprecated and will result in an error in a future release. To retain "
                      "the behavior and silence this warning, please use dropout instead. Note "
                      "that dropout3d exists to provide channel-wise dropout on inputs with 3 "
                      "spatial dimensions, a channel dimension, and an optional batch dimension "
                      "(i.e. 4D or 5D inputs).", stacklevel=2)
    if input.ndim == 5:
        return _feature_dropout(input, p, training, inplace)
    # Unbatched: a batch of one; in place, the view writes through to the input.
    result = _feature_dropout(input.unsqueeze(0), p, training, inplace).squeeze(0)
    return input if inplace else result


# SELU's negative saturation value -scale·alpha: where alpha dropout sends dropped units
_SELU_SATURATION = 1.7580993408473766


def _alpha_dropout(input, p, training, inplace, mask_shape):
    """ATen's alpha dropout: dropped units become the saturation value and the result is
    rescaled (a·x + b) so that zero mean and unit variance are kept."""
    _check_dropout_p(p)
    if not training or p == 0.0 or input.numel() == 0:
        return input
    if p == 1.0:
        result = input * 0.0
    else:
        keep = keep_noise(input, p, mask_shape)
        a = 1.0 / math.sqrt((_SELU_SATURATION ** 2 * p + 1) * (1 - p))
        shift = (keep - 1) * (_SELU_SATURATION * a) + _SELU_SATURATION * a * p
        result = input * (keep * a) + shift
    return input.copy_(result) if inplace else result


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Alpha dropout: drops to SELU's negative saturation value and rescales to keep mean and
    variance, when training (torch.nn.functional.alpha_dropout)."""
    return _alpha_dropout(input, p, training, inplace, input.shape)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Alpha dropout of whole channels: one mask value per (sample, channel)."""
    _check_dropout_p(p)
    if training and 0.0 < p and input.numel() and input.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    mask_shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2)
    return _alpha_dropout(input, p, training, inplace, mask_shape)
