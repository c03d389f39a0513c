"""`mt.autocast` / `mt.amp.autocast`: regions where ops on autocast's lists run in a lower
precision (bfloat16 on the CPU, float16 on cuda by default), as torch.autocast.

The op lists and the casting rule are in minitorch/functions/autocast_policy.py; this is the
context manager / decorator that switches them on per device type, nests, and empties the cast
cache when the outermost region exits.
"""
import functools
import warnings

from .. import dtypes
from ..backend import device as Device
from ..functions import autocast_policy as policy

_SUPPORTED = {"cpu": (dtypes.bfloat16, dtypes.float16),
              "cuda": (dtypes.float16, dtypes.bfloat16)}


def _cuda_available():
    from .. import cuda
    return cuda.is_available()


class autocast:
    """torch.autocast(device_type, dtype=None, enabled=True, cache_enabled=None): inside the
    region, matmul / linear / convolutions / attention run in `dtype` (default bfloat16 on the
    CPU, float16 on cuda) and losses (and on cuda softmax and the norms) in float32. Usable as a
    context manager or a decorator; nests (an inner `enabled=False` region turns it off)."""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.device = Device(device_type).type       # torch's error for an unknown device type
        self.fast_dtype = dtype if dtype is not None else policy.DEFAULT_DTYPES.get(self.device)
        self._enabled = bool(enabled)
        self._cache_enabled = policy.STATE.cache_enabled if cache_enabled is None else \
            bool(cache_enabled)
        if self.device not in _SUPPORTED:
            warnings.warn(f"User specified an unsupported autocast device_type "
                          f"'{self.device}'", UserWarning, stacklevel=2)
            self._enabled = False
        elif self.device == "cpu" and self.fast_dtype not in _SUPPORTED["cpu"]:
            if self._enabled:
                warnings.warn("In CPU autocast, but the target dtype is not supported. Disabling "
                              "autocast.\nCPU Autocast only supports dtypes of torch.bfloat16, "
                              "torch.float16 currently.", UserWarning, stacklevel=2)
            self._enabled = False
        elif self.device == "cuda":
            if self._enabled and not _cuda_available():
                warnings.warn("CUDA is not available or torch_xla is imported. Disabling "
                              "autocast.", UserWarning, stacklevel=2)
                self._enabled = False
            elif self.fast_dtype not in _SUPPORTED["cuda"]:
                raise RuntimeError("In CUDA autocast, but the target dtype is not supported. "
                                   "Disabling autocast.\nCUDA Autocast only supports dtypes of "
                                   "torch.float16 and torch.bfloat16 currently.")

    def __enter__(self):
        state = policy.STATE
        self._previous = (state.enabled[self.device], state.dtype[self.device],
                          state.cache_enabled)
        state.enabled[self.device] = self._enabled
        state.dtype[self.device] = self.fast_dtype
        state.cache_enabled = self._cache_enabled
        state.depth += 1
        policy.refresh()
        return self

    def __exit__(self, exc_type, exc, tb):
        state = policy.STATE
        state.depth -= 1
        if state.depth == 0:
            state.cache.clear()
        state.enabled[self.device], state.dtype[self.device], state.cache_enabled = \
            self._previous
        policy.refresh()
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def decorated(*args, **kwargs):
            with autocast(self.device, self.fast_dtype, self._enabled, self._cache_enabled):
                return func(*args, **kwargs)
        return decorated


def is_autocast_enabled(device_type=None):
    """torch.is_autocast_enabled: whether autocast is on for `device_type` (cuda when omitted,
    as torch's deprecated no-argument form)."""
    return policy.STATE.enabled.get(Device(device_type or "cuda").type, False)


def get_autocast_dtype(device_type):
    """torch.get_autocast_dtype: the dtype autocast uses on `device_type`."""
    return policy.STATE.dtype[Device(device_type).type]


def set_autocast_enabled(device_type, enabled):
    """torch.set_autocast_enabled(device_type, enabled)."""
    policy.STATE.enabled[Device(device_type).type] = bool(enabled)
    policy.refresh()


def set_autocast_dtype(device_type, dtype):
    """torch.set_autocast_dtype(device_type, dtype)."""
    policy.STATE.dtype[Device(device_type).type] = dtype


def is_autocast_available(device_type):
    """torch.amp.is_autocast_available: cpu and cuda."""
    return device_type in _SUPPORTED


def clear_autocast_cache():
    """torch.clear_autocast_cache: drop the cached casts of parameters."""
    policy.STATE.cache.clear()


def custom_fwd(fwd=None, *, device_type, cast_inputs=None):
    """torch.amp.custom_fwd for a custom Function's forward: with `cast_inputs`, the forward runs
    with autocast off and its floating inputs cast to `cast_inputs` when autocast is on."""
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorated(*args, **kwargs):
        if cast_inputs is None or not is_autocast_enabled(device_type):
            return fwd(*args, **kwargs)
        args = [a.to(cast_inputs) if policy._eligible(a, cast_inputs) else a for a in args]
        with autocast(device_type, enabled=False):
            return fwd(*args, **kwargs)
    return decorated


def custom_bwd(bwd=None, *, device_type):
    """torch.amp.custom_bwd: the backward runs under the forward's autocast state (here: as
    called; minitorch's engine runs backward outside any region)."""
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)
    return bwd
