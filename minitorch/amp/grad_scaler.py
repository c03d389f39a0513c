"""GradScaler (torch.amp.GradScaler): dynamic loss scaling for mixed-precision training.

The loss is multiplied by a scale before backward so that small float16 gradients do not
underflow; before the optimizer step the gradients are divided by it again ("unscaled") and
checked for inf/NaN. A step with a non-finite gradient is skipped and the scale backs off; after
`growth_interval` clean steps in a row it grows. The rules are torch's, state for state and
message for message (torch/amp/grad_scaler.py is the spec).

Everything stays on the device of the scale: the inf check, the unscale and the scale update are
Tensor ops (our kernels), and the only host read is the one found_inf read per step() that
decides whether optimizer.step() runs, as in torch.
"""
import inspect
import warnings
from collections import abc, defaultdict
from enum import Enum

from .. import dtypes
from ..autograd import no_grad
from ..functions.joining import stack
from ..tensor import Tensor, full

__all__ = ["OptState", "GradScaler"]

# torch keeps its growth tracker in int32; any integer dtype counts the same (it is private and
# read back as a Python int), and int64 runs every op on every backend
_TRACKER_DTYPE = dtypes.int64


class OptState(Enum):
    """Where an optimizer is in the scaler's iteration (torch.amp.grad_scaler.OptState)."""
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _refresh_per_optimizer_state():
    # a module-level factory (not a lambda) so that a scaler's defaultdict pickles
    return {"stage": OptState.READY, "found_inf_per_device": {}}


class _PerDevice:
    """Copies of one tensor served per device, made once each (torch's _MultiDeviceReplicator;
    a copy even on the master's own device, so the master is never written through it)."""

    def __init__(self, master):
        self.master = master
        self.copies = {}

    def get(self, device):
        if device not in self.copies:
            self.copies[device] = self.master.to(device=device, copy=True)
        return self.copies[device]


def _is_float16(dtype):
    half = getattr(dtypes, "float16", None)
    return half is not None and dtype == half


@no_grad()
def _non_finite_check_and_unscale_(grads, found_inf, inv_scale):
    """torch._amp_foreach_non_finite_check_and_unscale_ for grads of one device and dtype:
    found_inf (0-d float32) is set to 1.0 if any element of any grad is inf or NaN *before*
    unscaling, and every grad is multiplied in place by inv_scale (0-d float32)."""
    finite = [g.isfinite().all() for g in grads]
    all_finite = finite[0] if len(finite) == 1 else stack(finite).all()
    found_inf.masked_fill_(all_finite.logical_not(), 1.0)
    for g in grads:
        g.mul_(inv_scale)


@no_grad()
def _update_scale_(scale, growth_tracker, found_inf, growth_factor, backoff_factor,
                   growth_interval):
    """torch._amp_update_scale_ on the device, in place: a nonzero found_inf multiplies the
    scale by backoff_factor and zeroes the tracker; otherwise the tracker counts the clean step
    and, on reaching growth_interval exactly, resets to 0 and the scale grows by growth_factor
    unless that would overflow float32. Products are taken in double and rounded to float, as
    torch's kernel multiplies a float scale by a double factor."""
    found = found_inf != 0
    successful = growth_tracker + 1
    at_interval = successful == growth_interval
    grown = (scale.double() * growth_factor).float()
    backed_off = (scale.double() * backoff_factor).float()
    kept_or_grown = grown.where(at_interval & grown.isfinite(), scale)
    new_scale = backed_off.where(found, kept_or_grown)
    new_tracker = successful.masked_fill(found | at_interval, 0)
    scale.copy_(new_scale)
    growth_tracker.copy_(new_tracker)


class GradScaler:
    """torch.amp.GradScaler: scales the loss, unscales and checks the gradients, skips steps
    with inf/NaN gradients and adapts the scale.

        scaler = mt.amp.GradScaler("cuda")
        for input, target in data:
            optimizer.zero_grad()
            loss = loss_fn(model(input), target)
            scaler.scale(loss).backward()    # scaled gradients
            scaler.step(optimizer)           # unscales; skips optimizer.step() on inf/NaN
            scaler.update()                  # backs off after a skip, grows after clean runs

    device: "cuda" or "cpu" (a device type). With device="cuda" and no usable GPU the scaler
    warns and disables itself, as torch does. init_scale: the first scale. growth_factor (> 1)
    and backoff_factor (< 1) multiply the scale after growth_interval clean steps in a row /
    after a step with inf/NaN gradients. enabled=False makes step() call optimizer.step() and
    every other method a no-op (and, as in torch, leaves the factor getters without values).
    """

    def __init__(self, device="cuda", init_scale=2.0 ** 16, growth_factor=2.0,
                 backoff_factor=0.5, growth_interval=2000, enabled=True):
        self._device = device
        self._enabled = enabled
        if self._device == "cuda" and enabled and not _cuda_available():
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  "
                          "Disabling.", stacklevel=2)
            self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
            self._init_scale = init_scale
            self._scale = None               # made on the first scale() call, on its device
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker = None      # made with _scale
            self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    # ---- the scale ----------------------------------------------------------------------------
    def _check_scale_growth_tracker(self, funcname):
        fix = ("This may indicate your script did not use scaler.scale(loss or outputs) "
               "earlier in the iteration.")
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  " + fix)
        if self._growth_tracker is None:
            raise AssertionError(f"Attempted {funcname} but _growth_tracker is None.  " + fix)
        return self._scale, self._growth_tracker

    def _lazy_init_scale_growth_tracker(self, dev):
        if self._growth_tracker is not None:
            raise AssertionError("_growth_tracker initialized before _scale")
        self._scale = full((), self._init_scale, dtype=dtypes.float32, device=dev)
        self._growth_tracker = full((), self._init_growth_tracker, dtype=_TRACKER_DTYPE,
                                    device=dev)

    def scale(self, outputs):
        """Multiplies a tensor, or the tensors of (nested) lists, tuples and iterables, by the
        scale; lists and tuples come back as such, other iterables as a lazy map (torch's).
        The scale tensor is made on the first tensor's device at the first call.
        Disabled: returns outputs unchanged."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            if self._scale is None:
                self._lazy_init_scale_growth_tracker(outputs.device)
            return outputs * self._scale.to(device=outputs.device)
        per_device = []     # one _PerDevice of the scale, made at the first tensor met

        def apply_scale(value):
            if isinstance(value, Tensor):
                if not per_device:
                    if self._scale is None:
                        self._lazy_init_scale_growth_tracker(value.device)
                    per_device.append(_PerDevice(self._scale))
                return value * per_device[0].get(value.device)
            if isinstance(value, abc.Iterable):
                scaled = map(apply_scale, value)
                return type(value)(scaled) if isinstance(value, (list, tuple)) else scaled
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")

        return apply_scale(outputs)

    # ---- unscaling and the inf check ----------------------------------------------------------
    def _unscale_grads_(self, optimizer, inv_scale, found_inf, allow_fp16):
        """Unscale the optimizer's gradients grouped by device and dtype; returns the found_inf
        of each device (a 0-d float32 per device, 1.0 where a gradient had inf/NaN)."""
        per_device_inv_scale = _PerDevice(inv_scale)
        per_device_found_inf = _PerDevice(found_inf)
        groups = defaultdict(lambda: defaultdict(list))     # device -> dtype -> grads
        with no_grad():
            for group in optimizer.param_groups:
                for param in group["params"]:
                    if not isinstance(param, Tensor):
                        raise AssertionError(f"expected param to be torch.Tensor, got "
                                             f"{type(param).__name__}")
                    if param.grad is None:
                        continue
                    if not allow_fp16 and _is_float16(param.grad.dtype):
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    to_unscale = param.grad
                    if getattr(param.grad, "is_sparse", False):
                        # (torch's branch; a minitorch .grad is dense today.) Duplicate indices
                        # of scaled float16 values may overflow once summed: torch checks the
                        # coalesced values
                        if _is_float16(param.grad.dtype):
                            param.grad = param.grad.coalesce()
                        to_unscale = param.grad._values()
                    groups[to_unscale.device][to_unscale.dtype].append(to_unscale)
            for device, per_dtype in groups.items():
                for grads in per_dtype.values():
                    _non_finite_check_and_unscale_(grads, per_device_found_inf.get(device),
                                                   per_device_inv_scale.get(device))
        return per_device_found_inf.copies

    def unscale_(self, optimizer):
        """Divides the optimizer's gradients by the scale in place and records, per device,
        whether any was inf/NaN (no host sync). Optional: step() does it when not done. Call it
        once per optimizer per step, after all gradients are accumulated, e.g. to clip:

            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            mt.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
            scaler.step(optimizer)
            scaler.update()

        A second call before update() raises RuntimeError, as does a call after step().
        Disabled: a no-op."""
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        optimizer_state = self._per_optimizer_states[id(optimizer)]
        if optimizer_state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the "
                               "last update().")
        if optimizer_state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        # the reciprocal in double: float32 division may be imprecise (torch's reason)
        inv_scale = self._scale.double().reciprocal().float()
        found_inf = full((), 0.0, dtype=dtypes.float32, device=self._scale.device)
        optimizer_state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale,
                                                                       found_inf, False)
        optimizer_state["stage"] = OptState.UNSCALED

    def _check_inf_per_device(self, optimizer):
        """The inf check alone (inv_scale 1), for optimizers that unscale inside their step."""
        scale, _ = self._check_scale_growth_tracker("_check_inf_per_device")
        dummy_inv_scale = full((), 1.0, dtype=dtypes.float32, device=scale.device)
        found_inf = full((), 0.0, dtype=dtypes.float32, device=scale.device)
        state = self._per_optimizer_states[id(optimizer)]
        state["found_inf_per_device"] = self._unscale_grads_(optimizer, dummy_inv_scale,
                                                             found_inf, True)
        return state["found_inf_per_device"]

    def _found_inf_per_device(self, optimizer):
        return self._per_optimizer_states[id(optimizer)]["found_inf_per_device"]

    # ---- the step -----------------------------------------------------------------------------
    def _maybe_opt_step(self, optimizer, optimizer_state, *args, **kwargs):
        # the one host read per step: whether any device saw inf/NaN
        if not sum(v.item() for v in optimizer_state["found_inf_per_device"].values()):
            return optimizer.step(*args, **kwargs)
        return None

    def step(self, optimizer, *args, **kwargs):
        """Unscales the optimizer's gradients (unless unscale_ already did this iteration) and
        calls optimizer.step(*args, **kwargs) if none was inf/NaN, else skips it (parameters
        and optimizer state untouched). Returns optimizer.step's return value, or None when
        skipped. A `closure` keyword is refused (RuntimeError), as in torch. Optimizers with
        `_step_supports_amp_scaling` get the scale and found_inf to use themselves (torch's
        protocol). Disabled: just optimizer.step(*args, **kwargs)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is "
                               "enabled.")
        self._check_scale_growth_tracker("step")
        optimizer_state = self._per_optimizer_states[id(optimizer)]
        if optimizer_state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if getattr(optimizer, "_step_supports_amp_scaling", False):
            return self._step_amp_aware(optimizer, optimizer_state, args, kwargs)
        if optimizer_state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if len(optimizer_state["found_inf_per_device"]) == 0:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        retval = self._maybe_opt_step(optimizer, optimizer_state, *args, **kwargs)
        optimizer_state["stage"] = OptState.STEPPED
        return retval

    def _step_amp_aware(self, optimizer, optimizer_state, args, kwargs):
        """torch's contract with optimizers that handle scaling in their own step: either a
        `grad_scaler` keyword (deprecated, warned) or `grad_scale` / `found_inf` attributes set
        for the duration of the step."""
        has_grad_scaler_kwarg = "grad_scaler" in inspect.signature(optimizer.step).parameters
        if has_grad_scaler_kwarg:
            warnings.warn("GradScaler is going to stop passing itself as a keyword argument to "
                          "the passed optimizer. In the near future GradScaler registers "
                          "`grad_scale: Tensor` and `found_inf: Tensor` to the passed optimizer "
                          "and let the optimizer use them directly.", FutureWarning, stacklevel=3)
            kwargs["grad_scaler"] = self
        else:
            if optimizer_state["stage"] is OptState.READY:
                self._check_inf_per_device(optimizer)
            scale = self._scale
            found_inf = sum(t.to(scale.device)
                            for t in optimizer_state["found_inf_per_device"].values())
            # the product of the scales, if the user has already set optimizer.grad_scale
            optimizer.grad_scale = (getattr(optimizer, "grad_scale", None)
                                    if optimizer_state["stage"] is OptState.UNSCALED
                                    else scale * getattr(optimizer, "grad_scale", 1))
            optimizer.found_inf = found_inf
        retval = optimizer.step(*args, **kwargs)
        optimizer_state["stage"] = OptState.STEPPED
        if not has_grad_scaler_kwarg:
            del optimizer.grad_scale
            del optimizer.found_inf
        return retval

    # ---- the update ---------------------------------------------------------------------------
    def update(self, new_scale=None):
        """Updates the scale at the end of the iteration, after step() for every optimizer:
        times backoff_factor if any step was skipped; times growth_factor after growth_interval
        clean steps in a row (never past float32's range). new_scale (a float, or a one-element
        float32 tensor on the scaler's device without requires_grad) sets the scale instead; its
        value is copied. Runs on the device (no host sync). Disabled: a no-op."""
        if not self._enabled:
            return
        scale, growth_tracker = self._check_scale_growth_tracker("update")
        if new_scale is not None:
            self._set_scale(new_scale)
        else:
            found_infs = [found_inf.to(device=scale.device)
                          for state in self._per_optimizer_states.values()
                          for found_inf in state["found_inf_per_device"].values()]
            if len(found_infs) == 0:
                raise AssertionError("No inf checks were recorded prior to update.")
            found_inf_combined = found_infs[0]
            for found_inf in found_infs[1:]:
                found_inf_combined = found_inf_combined + found_inf
            _update_scale_(scale, growth_tracker, found_inf_combined, self._growth_factor,
                           self._backoff_factor, self._growth_interval)
        self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def _set_scale(self, new_scale):
        if isinstance(new_scale, float):
            self._scale.fill_(new_scale)
            return
        reason = ("new_scale should be a float or a 1-element torch.cuda.FloatTensor or "
                  "torch.FloatTensor with requires_grad=False.")
        if (new_scale.device.type != self._device or new_scale.numel() != 1
                or new_scale.requires_grad is True):
            raise AssertionError(reason)
        self._scale.copy_(new_scale)

    # ---- getters, setters, state --------------------------------------------------------------
    def _get_scale_async(self):
        return self._scale

    def get_scale(self):
        """The current scale as a Python float (a host sync); init_scale before the first
        scale() call, 1.0 when disabled."""
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else self._scale.item()

    def get_growth_factor(self):
        """The scale growth factor (a Python float)."""
        return self._growth_factor

    def set_growth_factor(self, new_factor):
        """Sets the scale growth factor (not checked, as in torch)."""
        self._growth_factor = new_factor

    def get_backoff_factor(self):
        """The scale backoff factor (a Python float)."""
        return self._backoff_factor

    def set_backoff_factor(self, new_factor):
        """Sets the scale backoff factor (not checked, as in torch)."""
        self._backoff_factor = new_factor

    def get_growth_interval(self):
        """The growth interval (a Python int)."""
        return self._growth_interval

    def set_growth_interval(self, new_interval):
        """Sets the growth interval."""
        self._growth_interval = new_interval

    def _get_growth_tracker(self):
        if not self._enabled:
            return 0
        if self._growth_tracker is None:
            return self._init_growth_tracker
        return self._growth_tracker.item()

    def is_enabled(self):
        """Whether this scaler scales (False when built disabled or without CUDA)."""
        return self._enabled

    def state_dict(self):
        """torch's five entries: "scale", "growth_factor", "backoff_factor", "growth_interval"
        and "_growth_tracker" (Python numbers); {} when disabled. Take it after update()."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker()}

    def load_state_dict(self, state_dict):
        """Loads a state_dict() (a no-op when disabled; an empty one, from a disabled scaler,
        raises RuntimeError)."""
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale.fill_(state_dict["scale"])
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._init_growth_tracker = state_dict["_growth_tracker"]
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(state_dict["_growth_tracker"])

    def __getstate__(self):
        """For pickling, between iterations only: the scale and tracker travel as numbers and
        the unpickled scaler makes its tensors again at its first scale()."""
        state = self.__dict__.copy()
        if self._enabled:
            if len(self._per_optimizer_states) != 0:
                raise AssertionError("A GradScaler instance may only be pickled at the beginning "
                                     "of an iteration, or at the end after scaler.update().")
            state["_init_scale"] = self.get_scale()
            state["_init_growth_tracker"] = self._get_growth_tracker()
            state["_scale"] = None
            state["_growth_tracker"] = None
        return state

    def __setstate__(self, state):
        """Restores a __getstate__ dict."""
        self.__dict__.update(state)


def _cuda_available():
    from .. import cuda
    return cuda.is_available()
