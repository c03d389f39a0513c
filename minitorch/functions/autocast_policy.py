"""Autocast's state and its per-op casting rule (torch.autocast's op lists).

`mt.autocast` (minitorch/amp/autocast_mode.py) switches a region on per device type; the ops
themselves carry one line each, `@autocast_op(LOWER)` or `@autocast_op(FP32, devices)`, so the
policy is greppable beside the op. Inside an enabled region an op's floating-point tensor
arguments (float64 excepted, as torch excepts it) are cast before the op runs: to the region's
dtype for LOWER ops (matmul, linear, convolutions, attention: the ones that gain from 16 bits),
to float32 for FP32 ops (losses, and on cuda softmax / norms: the ones that lose accuracy).
Outside a region the decorator costs one attribute test.

Casts of leaf tensors that require grad (the parameters) are cached for the outermost region's
lifetime, as torch caches them, so a weight used by several ops is cast once per step; the
cache empties when the outermost region exits.
"""
import functools
import threading

from .. import dtypes
from ..tensor import Tensor

LOWER, FP32 = "lower", "fp32"
DEFAULT_DTYPES = {"cpu": dtypes.bfloat16, "cuda": dtypes.float16}


class _State(threading.local):
    """Per thread, as torch's: which device types autocast, in which dtype, the nesting depth
    and the cast cache."""

    def __init__(self):
        self.enabled = {"cpu": False, "cuda": False}
        self.dtype = dict(DEFAULT_DTYPES)
        self.cache_enabled = True
        self.active = False         # any device type enabled: the decorators' one test
        self.depth = 0
        self.cache = {}


STATE = _State()


class _BatchingHook(threading.local):
    """vmap's dispatch point (minitorch/_vmap): while a batched vmap runs, `handler(fn, args,
    kwargs)` sees these ops' calls first and applies their batching rules (NotImplemented: no
    batched argument, the op runs as usual); None otherwise, which costs one test."""
    handler = None


BATCHING = _BatchingHook()


def refresh():
    """Recompute the fast flag after a change of `STATE.enabled`."""
    STATE.active = any(STATE.enabled.values())


def _eligible(t, target):
    return (isinstance(t, Tensor) and t.dtype.is_floating_point and t.dtype is not target
            and t.dtype is not dtypes.float64)


def _cast(t, target):
    cacheable = STATE.cache_enabled and t.requires_grad and t.grad_fn is None
    if not cacheable:
        return t.to(target)
    key = (id(t), target)
    hit = STATE.cache.get(key)
    if hit is None or hit[0] is not t:
        hit = STATE.cache[key] = (t, t.to(target))      # t kept alive: its id stays its own
    return hit[1]


def lower_dtype(device_type):
    """The lower dtype of an enabled region on `device_type`, or None outside one."""
    return STATE.dtype[device_type] if STATE.active and STATE.enabled.get(device_type) else None


def cast_in_region(t, target):
    """t as an autocast op's argument sees it in a region casting to `target`: a floating
    tensor (float64 excepted) cast, through the cache; anything else as is."""
    return _cast(t, target) if _eligible(t, target) else t


def _device_type(args, kwargs):
    for value in list(args) + list(kwargs.values()):
        if isinstance(value, Tensor):
            return value.device.type
    return None


BANNED_MESSAGE = (
    "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
    "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
    "In this case, combine the two layers using torch.nn.functional.binary_cross_entropy_with_logits\n"
    "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
    "safe to autocast.")


def batching_point(fn):
    """vmap's dispatch point alone, for an op on none of autocast's lists (see BATCHING)."""
    @functools.wraps(fn)
    def call(*args, **kwargs):
        if BATCHING.handler is None:        # outside vmap
            return fn(*args, **kwargs)
        result = batched_result(fn, args, kwargs)
        return fn(*args, **kwargs) if result is NotImplemented else result
    return call


def batched_result(fn, args, kwargs):
    """vmap's handler's result for fn, or NotImplemented when no vmap is running or it has
    no rule for this call."""
    handler = BATCHING.handler
    return NotImplemented if handler is None else handler(fn, args, kwargs)


def autocast_op(policy, devices=("cpu", "cuda"), banned=()):
    """Marks a function as on autocast's `policy` list (LOWER or FP32) for `devices`; on the
    `banned` devices an enabled region refuses it (torch's binary_cross_entropy on cuda)."""
    def decorate(fn):
        @functools.wraps(fn)
        def call(*args, **kwargs):
            if BATCHING.handler is None and not STATE.active:   # neither vmap nor autocast
                return fn(*args, **kwargs)
            result = batched_result(fn, args, kwargs)
            if result is not NotImplemented:
                return result
            if not STATE.active:
                return fn(*args, **kwargs)
            device = _device_type(args, kwargs)
            if device in banned and STATE.enabled.get(device):
                raise RuntimeError(BANNED_MESSAGE)
            if device not in devices or not STATE.enabled.get(device):
                return fn(*args, **kwargs)
            target = STATE.dtype[device] if policy == LOWER else dtypes.float32
            args = [cast_in_region(a, target) for a in args]
            kwargs = {k: cast_in_region(v, target) for k, v in kwargs.items()}
            return fn(*args, **kwargs)
        call.autocast_policy = (policy, devices)
        return call
    return decorate
