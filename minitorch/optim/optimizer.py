"""Optimizer: parameter groups, per-parameter state, zero_grad, state_dict and step hooks, laid
out exactly like torch.optim.Optimizer (so checkpoints have torch's structure).

The update rules live in one module per algorithm; each follows torch's single-tensor
implementation operation by operation, with our in-place Tensor ops under no_grad.
"""
import functools
import warnings
from collections import OrderedDict, defaultdict
from collections.abc import Iterable
from copy import deepcopy
from itertools import chain

from .. import dtypes
from ..autograd import RemovableHandle, enable_grad, no_grad
from ..tensor import Tensor, tensor, zeros_like

__all__ = ["Optimizer", "required"]


class _RequiredParameter:
    """Marks a default that every parameter group must supply."""

    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


def _typename(obj):
    if isinstance(obj, Tensor):
        return obj.type()
    module = type(obj).__module__
    name = type(obj).__qualname__
    return name if module in ("", "builtins") else f"{module}.{name}"


# ---- the fused Tensor ops torch's update rules use -----------------------------------------------
def _scalar_dtype():
    """The dtype torch keeps `state["step"]` in."""
    return dtypes.float64 if dtypes.get_default_dtype() is dtypes.float64 else dtypes.float32


def _step_counter():
    return tensor(0.0, dtype=_scalar_dtype())


def _gradient(param, group, lr=None):
    """param's gradient as torch's rules use it: negated for maximize, plus L2 weight decay
    (grad + weight_decay * param), or, with decoupled weight decay (AdamW and friends), param
    shrunk in place by 1 - lr * weight_decay instead."""
    grad = param.grad if not group["maximize"] else -param.grad
    weight_decay = group.get("weight_decay", 0)
    if weight_decay != 0:
        if group.get("decoupled_weight_decay", False):
            param.mul_(1 - lr * weight_decay)
        else:
            grad = grad.add(param, alpha=weight_decay)
    return grad


def _fusable(tensors):
    """Whether one fused update kernel can take these tensors: contiguous, and all of one
    device, floating dtype and size (otherwise the rule runs op by op)."""
    first = tensors[0]._data
    if not first.dtype.is_floating_point:
        return False
    for t in tensors:
        nd = t._data
        if nd.dtype is not first.dtype or nd.device != first.device or \
                nd.size != first.size or not nd.is_compact():
            return False
    return True


def _foreach_buckets(params, tensors_of):
    """Multi-tensor (torch's foreach) batches: {(device, dtype): [tensors_of(param), ...]} for
    the params whose tuple (param, grad, state buffers...; None for an absent one) one kernel
    can take (see _batchable), and the list of the rest (tensors_of gave None, or a tuple no
    kernel takes), left to the per-parameter rule."""
    buckets, rest = {}, []
    for param in params:
        tensors = tensors_of(param)
        if tensors is not None and _batchable(tensors):
            nd = param._data
            buckets.setdefault((nd.device, nd.dtype), []).append(tensors)
        else:
            rest.append(param)
    return buckets, rest


def _batchable(tensors):
    """Whether a kernel can take a parameter's tensors (None: absent): all compact, of one
    floating dtype, device and shape (_fusable's test, on the fast path: devices and dtypes are
    interned, so `is` compares them)."""
    first = tensors[0]._data
    shape, dtype, device = first.shape, first.dtype, first.device
    if not dtype.is_floating_point:
        return False
    for t in tensors:
        if t is not None:
            nd = t._data
            if nd.shape != shape or nd.dtype is not dtype or nd.device is not device or \
                    not nd.is_compact():
                return False
    return True


def _foreach_buffers(batch):
    """A batch's tensors as the kernels take them: one list of flat buffers per slot (None
    where the slot is absent for every parameter)."""
    slots = []
    for column in zip(*batch):
        if any(t is not None for t in column):
            slots.append([None if t is None else t._data.flat() for t in column])
        else:
            slots.append(None)
    return slots


def _step_counters(states):
    """The states' step counters as the kernels take them (one-element host buffers), or None
    when one is not a float counter on the CPU (then the per-parameter path runs)."""
    counters = []
    for state in states:
        step = state["step"]._data
        if step.device.type != "cpu" or not step.dtype.is_floating_point or step.size != 1:
            return None
        counters.append(step.flat())
    return counters


def _foreach_step(batch, states, name, *scalars):
    """One foreach_<name> kernel call over a batch of _foreach_buckets whose states carry step
    counters (each += 1 by the kernel): backend.foreach_<name>(*slot buffers, counters,
    *scalars). False, with nothing changed, when a counter is not one the kernel takes."""
    steps = _step_counters(states)
    if steps is None:
        return False
    kernel = getattr(batch[0][0]._data.backend, "foreach_" + name)
    kernel(*_foreach_buffers(batch), steps, *scalars)
    _bump_versions(batch)
    for state in states:
        state["step"]._bump_version()
    return True


def _bump_versions(batch, skip=1):
    """Mark every tensor a kernel wrote in place (all but slot `skip`, the gradient)."""
    for tensors in batch:
        for i, t in enumerate(tensors):
            if t is not None and i != skip:
                t._bump_version()


# ---- Optimizer -----------------------------------------------------------------------------------
class Optimizer:
    """Base class of all optimizers (torch.optim.Optimizer)."""

    def __init__(self, params, defaults):
        self.defaults = defaults
        self._optimizer_step_pre_hooks = OrderedDict()
        self._optimizer_step_post_hooks = OrderedDict()
        self._patch_step_function()
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            "Tensors or dicts, but got " + _typename(params))
        self.state = defaultdict(dict)
        self.param_groups = []
        param_groups = list(params)
        if not param_groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for param_group in param_groups:
            self.add_param_group(param_group)

    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state,
                "param_groups": self.param_groups}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.__dict__.setdefault("_optimizer_step_pre_hooks", OrderedDict())
        self.__dict__.setdefault("_optimizer_step_post_hooks", OrderedDict())
        self._patch_step_function()

    def __repr__(self):
        text = type(self).__name__ + " ("
        for i, group in enumerate(self.param_groups):
            text += f"\nParameter Group {i}\n"
            for key in sorted(group):
                if key != "params":
                    text += f"    {key}: {group[key]}\n"
        return text + ")"

    # -- step hooks -----------------------------------------------------------------------------
    def _patch_step_function(self):
        """Wrap the class's step once so that step hooks run around it (as torch does)."""
        cls = type(self)
        if not getattr(cls.step, "hooked", False):
            cls.step = _hook_step(cls.step)

    def register_step_pre_hook(self, hook):
        """hook(optimizer, args, kwargs) -> None or (new_args, new_kwargs), before step()."""
        handle = RemovableHandle(self._optimizer_step_pre_hooks)
        self._optimizer_step_pre_hooks[handle.id] = hook
        return handle

    def register_step_post_hook(self, hook):
        """hook(optimizer, args, kwargs) -> None, after step()."""
        handle = RemovableHandle(self._optimizer_step_post_hooks)
        self._optimizer_step_post_hooks[handle.id] = hook
        return handle

    # -- parameter groups -----------------------------------------------------------------------
    def add_param_group(self, param_group):
        """Add a group (a dict with "params" and optional per-group options)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, "
                            "but the ordering of tensors in sets will change between runs. "
                            "Please use a list instead.")
        else:
            params = list(params)
        names = [p[0] for p in params if isinstance(p, tuple)]
        params = [p[1] if isinstance(p, tuple) else p for p in params]
        param_group["params"] = params
        if names:
            if len(names) != len(params):
                raise ValueError("all optimizer params should be with/without names. Some param "
                                 "names are missing")
            param_group["param_names"] = names
        for param in params:
            if not isinstance(param, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is " +
                                _typename(param))
            if not (param.is_leaf or param.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        if len({id(p) for p in params}) != len(params):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in "
                          "future, this will cause an error; see "
                          "github.com/pytorch/pytorch/issues/40967 for more information",
                          stacklevel=3)
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError("parameter group didn't specify a value of required "
                                 f"optimization parameter {name}")
            param_group.setdefault(name, default)
        existing = set()
        for group in self.param_groups:
            existing.update(group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {'with' if names else 'without'} "
                                 "names to the optimizer")
        if not existing.isdisjoint(params):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none=True):
        """Drop (or zero) every parameter's .grad."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                    continue
                if p.grad.grad_fn is not None:
                    p.grad.detach_()
                else:
                    p.grad.requires_grad_(False)
                p.grad.zero_()

    def step(self, closure=None):
        """One update of every parameter that has a .grad; returns the closure's loss.
        Subclasses give `_state_of` (the parameter's state, created on first use) and
        `_update` (torch's single-tensor rule), or a `_step_group` of their own."""
        loss = self._evaluate(closure)
        with no_grad():
            for group in self.param_groups:
                self._step_group([p for p in group["params"] if p.grad is not None], group)
        return loss

    def _step_group(self, params, group):
        """One group's update of `params` (those with a .grad): the foreach kernel where the
        optimizer has one, else the single-tensor rule parameter by parameter."""
        self._check_sparse_grads(params)
        if group.get("foreach") is not False:
            params = self._foreach_update(params, group)
        for param in params:
            self._update(param, self._state_of(param, group), group)

    # torch's refusal of sparse gradients (nn.Embedding(sparse=True)): "<Name> does not
    # support sparse gradients", checked for a group before any of its parameters changes.
    # Optimizers with a sparse rule (SGD, Adagrad, SparseAdam) set it to None.
    _sparse_grad_error = "{name} does not support sparse gradients"

    def _check_sparse_grads(self, params):
        if self._sparse_grad_error is None:
            return
        for p in params:
            if p.grad.is_sparse:
                raise RuntimeError(self._sparse_grad_error.format(name=type(self).__name__))

    # The multi-tensor step (torch's foreach=None/True) of an optimizer with a counted kernel:
    # the kernel's name, and which tensors and scalars it takes (see Adam, Adadelta, RMSprop).
    _foreach_rule = None

    def _foreach_tensors(self, param, group):
        """(param, grad, state buffers...; None for an absent one) as foreach_<rule> takes them."""
        raise NotImplementedError

    def _foreach_scalars(self, group):
        """The hyper-parameters foreach_<rule> takes after the step counters."""
        raise NotImplementedError

    def _foreach_update(self, params, group):
        """Every compact parameter of one dtype and device in one foreach_<rule> call, with the
        op-by-op rule's bits; returns the rest (everything with capturable=True, or all of them
        for an optimizer without a rule) for the per-parameter path."""
        if self._foreach_rule is None or group.get("capturable"):
            return params
        buckets, rest = _foreach_buckets(params, lambda p: self._foreach_tensors(p, group))
        scalars = self._foreach_scalars(group)
        for batch in buckets.values():
            if not _foreach_step(batch, [self.state[t[0]] for t in batch], self._foreach_rule,
                                 *scalars):
                rest.extend(t[0] for t in batch)
        return rest

    def _state_of(self, param, group):
        return self.state[param]

    def _new_state(self, param, *buffers):
        """self.state[param], created on first use (torch's lazy init) with a step counter and
        a zero tensor of param's shape for each named buffer."""
        state = self.state[param]
        if not state:
            state["step"] = _step_counter()
            for name in buffers:
                state[name] = zeros_like(param)
        return state

    @staticmethod
    def _update(param, state, group):
        raise NotImplementedError

    @staticmethod
    def _evaluate(closure):
        """The closure's loss, computed with gradients on (step itself runs under no_grad)."""
        if closure is None:
            return None
        with enable_grad():
            return closure()

    # -- state_dict -----------------------------------------------------------------------------
    def state_dict(self):
        """{'state': {index: {...}}, 'param_groups': [{..., 'params': [indices]}]}; parameters
        are numbered in group order. State tensors are referenced, not copied (as in torch)."""
        mapping, start = {}, 0
        packed_groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            mapping.update({id(p): i for i, p in enumerate(group["params"], start)
                            if id(p) not in mapping})
            packed["params"] = [mapping[id(p)] for p in group["params"]]
            start += len(packed["params"])
            packed_groups.append(packed)
        packed_state = {(mapping[id(k)] if isinstance(k, Tensor) else k): v
                        for k, v in self.state.items()}
        return {"state": packed_state, "param_groups": packed_groups}

    def load_state_dict(self, state_dict):
        """Restore state and group options saved by state_dict() (parameters matched by
        position); floating state is cast to each parameter's dtype and device."""
        state_dict = dict(state_dict)
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match "
                             "the size of optimizer's group")
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))
        state = defaultdict(dict)
        for key, value in state_dict["state"].items():
            if key in id_map:
                param = id_map[key]
                state[param] = _cast_state(param, value)
            else:
                state[key] = value
        new_groups = []
        for group, saved in zip(groups, saved_groups):
            saved["params"] = group["params"]
            if "param_names" in group and "param_names" not in saved:
                saved["param_names"] = group["param_names"]
            new_groups.append(saved)
        self.__setstate__({"state": state, "param_groups": new_groups})


def _cast_state(param, value, key=None):
    """A saved state value matched to `param`: floating tensors take its dtype and device,
    others its device; the step counter is left as saved (torch's policy)."""
    if isinstance(value, Tensor):
        if key == "step":
            return value
        if param.is_floating_point():
            return value.to(dtype=param.dtype, device=param.device)
        return value.to(device=param.device)
    if isinstance(value, dict):
        return {k: _cast_state(param, v, k) for k, v in value.items()}
    if isinstance(value, Iterable) and not isinstance(value, (str, bytes)):
        return type(value)(_cast_state(param, v) for v in value)
    return value


def _graph_capture_health_check(optimizer):
    """torch's check: a step captured into a CUDA graph needs capturable=True (host-side step
    counts would be frozen into the graph); capturable=True outside a capture warns once."""
    from .._cuda_graphs import is_current_stream_capturing
    capturing = is_current_stream_capturing()
    capturable = all(group["capturable"] for group in optimizer.param_groups)
    if capturing and not capturable:
        raise RuntimeError("Attempting CUDA graph capture of step() for an instance of "
                           f"{type(optimizer).__name__} but param_groups' capturable is False.")
    if capturable and not capturing and \
            not getattr(optimizer, "_warned_capturable_if_run_uncaptured", False):
        from .. import cuda
        if cuda.is_available():
            warnings.warn(
                "This instance was constructed with capturable=True or some of all the "
                "param_groups came with capturable=True, but step() is running without CUDA "
                "graph capture. If you never intend to graph-capture this instance, "
                "capturable=True can impair performance, and you should set capturable=False.",
                stacklevel=3)
            optimizer._warned_capturable_if_run_uncaptured = True


def _hook_step(step):
    """step with the optimizer's pre/post hooks around it."""
    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        for pre_hook in list(self._optimizer_step_pre_hooks.values()):
            result = pre_hook(self, args, kwargs)
            if result is not None:
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise RuntimeError(f"{step} must return None or a tuple of (new_args, "
                                       f"new_kwargs), but got {result}.")
                args, kwargs = result
        if "capturable" in self.defaults:
            _graph_capture_health_check(self)
        out = step(self, *args, **kwargs)
        for post_hook in list(self._optimizer_step_post_hooks.values()):
            post_hook(self, args, kwargs)
        return out
    wrapper.hooked = True
    return wrapper
