"""torch.serialization's allow-list for weights_only loading (safe_globals, add_safe_globals,
get_safe_globals, clear_safe_globals), and how mt.load resolves the class and function
references a checkpoint holds.

A checkpoint names classes and functions, never code: {"module": ..., "qualname": ...}.
Resolving such a name is what lets a load run code (importing a module, a class's __new__ and
__setstate__, a reduce callable), so it follows torch's weights_only rules:
- weights_only=True (the default): a name resolves only to an object on the allow-list (torch's
  default-safe set for what this format can hold, plus add_safe_globals / safe_globals), matched
  by f"{obj.__module__}.{obj.__qualname__}" or a (obj, "module.qualname") pair's name; anything
  else raises torch's pickle.UnpicklingError. Nothing is imported.
- weights_only=False: the file is trusted: the module is imported and the qualname walked, as
  pickle's find_class does (and with its errors).
"""
import collections
import os
import re
import sys
import warnings

from ._format import WeightsOnlyError

_allowed = []
_BLOCKED_MODULES = ("sys", "os", "posix", "nt")     # never, even when allow-listed (torch's)


def _checked(safe_globals):
    if not isinstance(safe_globals, (list, tuple)):
        raise TypeError(f"'{type(safe_globals).__name__}' object is not iterable")
    return list(safe_globals)


def add_safe_globals(safe_globals):
    """Add to the allow-list (a list of classes/functions or (object, "module.name") pairs)."""
    _allowed.extend(_checked(safe_globals))


def get_safe_globals():
    return list(_allowed)


def clear_safe_globals():
    _allowed.clear()


class safe_globals:
    """Context manager: the given globals are on the allow-list inside the block only."""

    def __init__(self, safe_globals):
        self.safe_globals = _checked(safe_globals)

    def __enter__(self):
        self.saved = list(_allowed)
        _allowed.extend(self.safe_globals)

    def __exit__(self, *exc):
        _allowed[:] = self.saved


# ---- weights_only: which one, and torch's errors ------------------------------------------------
_TRUE = ("1", "y", "yes", "true")
_UNSAFE_MESSAGE = (
    "In PyTorch 2.6, we changed the default value of the `weights_only` argument in `torch.load` "
    "from `False` to `True`. Re-running `torch.load` with `weights_only` set to `False` will "
    "likely succeed, but it can result in arbitrary code execution. Do it only if you got the "
    "file from a trusted source.")
_DOCS_MESSAGE = ("\n\nCheck the documentation of torch.load to learn more about types accepted "
                 "by default with weights_only https://pytorch.org/docs/stable/generated/"
                 "torch.load.html.")


def resolve_weights_only(weights_only, pickle_module, pickle_load_args):
    """torch.load's choice: the argument, else True unless a pickle_module is given; the
    TORCH_FORCE_(NO_)WEIGHTS_ONLY_LOAD environment variables override it."""
    not_set = weights_only is None
    if not_set:
        weights_only = pickle_module is None
    force = os.getenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "0").lower() in _TRUE
    force_no = os.getenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "0").lower() in _TRUE
    if force and force_no:
        raise RuntimeError("Only one of `TORCH_FORCE_WEIGHTS_ONLY_LOAD` or "
                           "`TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD` should be set, but both were set.")
    if force:
        weights_only = True
    elif force_no and not_set:   # it overrides only a weights_only the caller left unset
        warnings.warn("Environment variable TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD detected, since "
                      "the`weights_only` argument was not explicitly passed to `torch.load`, "
                      "forcing weights_only=False.", UserWarning, stacklevel=3)
        weights_only = False
    if weights_only and pickle_module is not None:
        raise RuntimeError("Can not safely load weights when explicit pickle_module is "
                           "specified")
    if weights_only and pickle_load_args:
        warnings.warn("pickle_load_args only works if `weights_only=False`.", stacklevel=3)
    return bool(weights_only)


def weights_only_message(message):
    """torch.load's wrapping of a weights_only failure (its _get_wo_message)."""
    if re.search(r"GLOBAL (\S+) was not an allowed global by default.", message):
        return ("Weights only load failed. This file can still be loaded, to do so you have two "
                "options, \033[1mdo those steps only if you trust the source of the checkpoint"
                f"\033[0m. \n\t(1) {_UNSAFE_MESSAGE}\n\t(2) Alternatively, to load with "
                "`weights_only=True` please check the recommended steps in the following error "
                "message.\n\tWeightsUnpickler error: " + message + _DOCS_MESSAGE)
    text = f"Weights only load failed. {_UNSAFE_MESSAGE}\n"
    if not re.search(r"whose module (\S+) is blocked", message):
        text += ("Please file an issue with the following so that we can make "
                 "`weights_only=True` compatible with your use case: WeightsUnpickler error: ")
    return text + "\n\n" + message + _DOCS_MESSAGE


# ---- resolving references -----------------------------------------------------------------------
def _default_safe_globals():
    """torch's default-safe globals that can occur in this format (tensors, Parameters,
    dtypes, devices, Sizes, dicts, OrderedDicts, sets, bytes and bytearrays are stored
    natively, so their classes only appear when a class itself is stored)."""
    from ..backend import device
    from ..nn.parameter import Parameter
    from ..tensor import Size, Tensor
    return {_name(g): g for g in (collections.OrderedDict, collections.Counter, set, complex,
                                  bytearray, Size, Tensor, device, Parameter)}


def _name(obj):
    return f"{obj.__module__}.{obj.__qualname__}"


def _user_safe_globals():
    """{"module.qualname": object} for the allow-list (torch's _get_user_allowed_globals)."""
    named = {}
    for entry in _allowed:
        if isinstance(entry, tuple):
            if len(entry) != 2:
                raise ValueError("Expected tuple of length 2 (global, str of callable full "
                                 f"path), but got tuple of length: {len(entry)}")
            if type(entry[1]) is not str:
                raise TypeError("Expected second item in tuple to be str of callable full "
                                f"path, but got: {type(entry[1])}")
            named[entry[1]] = entry[0]
        else:
            named[_name(entry)] = entry
    return named


class AllowList:
    """weights_only=True: references resolve to allow-listed objects only, and objects are
    built as torch's weights-only unpickler builds them."""
    weights_only = True

    def __init__(self):
        self.default = _default_safe_globals()
        self._user = None

    @property
    def user(self):
        if self._user is None:                # read once per load, when first needed
            self._user = _user_safe_globals()
        return self._user

    def resolve(self, module, qualname):
        full_path = f"{module}.{qualname}"
        if module in _BLOCKED_MODULES:
            raise WeightsOnlyError(f"Trying to load unsupported GLOBAL {full_path} whose module "
                                   f"{module} is blocked.")
        if full_path in self.default:
            return self.default[full_path]
        if full_path in self.user:
            return self.user[full_path]
        shown = qualname if module == "builtins" else full_path
        raise WeightsOnlyError(
            f"Unsupported global: GLOBAL {shown} was not an allowed global by default. Please "
            f"use `torch.serialization.add_safe_globals([{shown}])` or the "
            f"`torch.serialization.safe_globals([{shown}])` context manager to allowlist this "
            "global if you trust this class/function.")

    def check_state(self, obj):
        kind = type(obj)
        if kind is not collections.OrderedDict and kind not in self.default.values() and \
                kind not in self.user.values():
            raise WeightsOnlyError("Can only build Tensor, Parameter, OrderedDict or types "
                                   f"allowlisted via `add_safe_globals`, but got {kind}")

    def check_items(self, obj, count):
        if type(obj) is not list:
            verb = "append to" if count == 1 else "extend"
            raise WeightsOnlyError(f"Can only {verb} lists, but got {type(obj)}")

    def check_dict_items(self, obj, count):
        if type(obj) not in (dict, collections.OrderedDict, collections.Counter):
            opcode = "SETITEM" if count == 1 else "SETITEMS"
            raise WeightsOnlyError(f"Can only {opcode} for dict, collections.OrderedDict, "
                                   f"collections.Counter, but got {type(obj)}")


class Importer:
    """weights_only=False: the file is trusted; a reference is imported as pickle would."""
    weights_only = False

    def resolve(self, module, qualname):
        __import__(module, level=0)
        found = owner = sys.modules[module]
        for part in qualname.split("."):
            try:
                found = getattr(found, part)
            except AttributeError:
                raise AttributeError(f"Can't get attribute {qualname!r} on {owner!r}") from None
        return found

    def check_state(self, obj):
        pass

    def check_items(self, obj, count):
        pass

    def check_dict_items(self, obj, count):
        pass
