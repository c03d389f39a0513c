"""Whole objects in a checkpoint (a model saved with mt.save(model), an argparse.Namespace in a
dict, ...), through Python's reduce protocol, the one pickle uses, but written as JSON and
never pickled:

- a class or function is a name, {"$global": {"module": m, "qualname": q}}, checked at save time
  to import back as the very same object (no lambdas, local functions or bound methods);
- any other object is {"$object": n, "class": name, "args": [...], "kwargs": {...}} (built
  with cls.__new__(cls, *args, **kwargs), never __init__) or {"$object": n, "call": name,
  "args": [...]} (a reduce callable, e.g. Counter(dict) or an enum member), then "items"
  (appended), "dictitems" (set) and "state" (given to __setstate__, or the __dict__ and slots),
  in that order, as pickle does;
- an object reached again is {"$ref": n}: it loads as one object however often it is
  referenced, and cycles through its state work because it exists before its state is set.

Which names a load may resolve is _safe_globals' business (the weights_only rules).
"""
import copyreg
import importlib
import sys
import types

from ._format import carried, fail, is_int

_MODULE_STORES = frozenset(("_parameters", "_buffers", "_modules"))
_MISSING = object()


# ---- save ---------------------------------------------------------------------------------------
class ObjectEncoder:
    """The part of the encoder for objects that are not plain data."""

    def __init__(self, encoder):
        self.encoder = encoder
        self.memo = {}           # id(obj) → (its number, obj: kept alive so no id is reused)
        self.building = set()    # ids of objects whose constructor arguments are being encoded

    def encode(self, obj, path, depth):
        known = self.memo.get(id(obj))
        if known is not None:
            return {"$ref": known[0]}
        if _is_bound_method(obj):
            raise _refused(path, "a bound method")
        if isinstance(obj, (type, types.FunctionType, types.BuiltinFunctionType)):
            return {"$global": global_reference(obj, path)}
        if type(obj) is object:      # a sentinel: loading would make another, equal to nothing
            raise TypeError(f"save: cannot store an object of type object at {_where(path)} "
                            "(a bare object() holds no data; it is a sentinel whose identity "
                            "could not survive loading)")
        return self._reduced(obj, path, depth)

    def _reduced(self, obj, path, depth):
        if id(obj) in self.building:
            raise _refused(path, f"an object of type {type(obj).__name__} whose __reduce__ "
                                 "arguments refer back to the object itself")
        reduced = _reduce(obj, path)
        if isinstance(reduced, str):             # pickle's "a global of this name"
            return {"$global": global_reference(obj, path, reduced)}
        if not isinstance(reduced, tuple) or not 2 <= len(reduced) <= 6:
            raise _refused(path, f"an object of type {type(obj).__name__} whose __reduce__ "
                                 "returns neither a string nor a tuple of 2 to 6 items")
        function, args, state, items, dict_items, setter = reduced + (None,) * (6 - len(reduced))
        if setter is not None:
            raise _refused(path, f"an object of type {type(obj).__name__} reduced with a "
                                 "state setter")
        node = self._constructor(obj, function, args, path, depth)
        number = len(self.memo)
        self.memo[id(obj)] = (number, obj)
        node = {"$object": number, **node}
        encode, deeper = self.encoder.encode, depth + 1
        if items is not None:
            node["items"] = [encode(x, join_path(path, i), deeper) for i, x in enumerate(items)]
        if dict_items is not None:
            node["dictitems"] = [[encode(k, path, deeper), encode(v, join_path(path, k), deeper)]
                                 for k, v in dict_items]
        if state is not None:
            node["state"] = self._state(obj, state, path, depth)
        return node

    def _constructor(self, obj, function, args, path, depth):
        """{"class": ..., "args": ...[, "kwargs": ...]} or {"call": ..., "args": ...}."""
        if not isinstance(args, tuple):
            raise _refused(path, f"an object of type {type(obj).__name__} whose __reduce__ "
                                 "arguments are not a tuple")
        name, kwargs = getattr(function, "__name__", ""), None
        if name == "__newobj__" and args and args[0] is obj.__class__:
            node, args = {"class": global_reference(args[0], path, instance_of=True)}, args[1:]
        elif name == "__newobj_ex__" and len(args) == 3 and args[0] is obj.__class__:
            node = {"class": global_reference(args[0], path, instance_of=True)}
            args, kwargs = args[1], args[2]
        elif name in ("__newobj__", "__newobj_ex__"):
            raise _refused(path, f"an object of type {type(obj).__name__} whose __reduce__ "
                                 f"names another class in {name} arguments")
        else:
            node = {"call": global_reference(function, path, instance_of=function is type(obj))}
        self.building.add(id(obj))
        try:
            node["args"] = [self.encoder.encode(x, join_path(path, i), depth + 1)
                            for i, x in enumerate(args)]
            if kwargs:
                node["kwargs"] = self.encoder.dict_node(kwargs, path, depth + 1)
        finally:
            self.building.discard(id(obj))
        return node

    def _state(self, obj, state, path, depth):
        """The state, its attributes named by path (a module's parameters, buffers and
        submodules as in its state_dict)."""
        from ..nn.module import Module
        encode_dict = self.encoder.dict_node
        if type(state) is dict:
            stores = _MODULE_STORES if isinstance(obj, Module) else ()
            return encode_dict(state, path, depth + 1, stores)
        if type(state) is tuple and len(state) == 2 and \
                all(part is None or type(part) is dict for part in state):   # (dict, slots)
            return {"$tuple": [None if part is None else encode_dict(part, path, depth + 2)
                               for part in state]}
        return self.encoder.encode(state, path, depth + 1)


def _reduce(obj, path):
    """What pickle would write for obj: copyreg's reducer for its type, else __reduce_ex__(2)."""
    reducer = copyreg.dispatch_table.get(type(obj))
    try:
        return reducer(obj) if reducer is not None else obj.__reduce_ex__(2)
    except TypeError as error:         # "cannot pickle 'X' object": files, locks, generators
        raise _refused(path, f"an object of type {type(obj).__name__}: {error}") from error


def global_reference(obj, path, qualname=None, instance_of=False):
    """{"module", "qualname"} of a class or function that loading can import back (checked
    now, so a save never writes a name that cannot load). `instance_of`: obj is the class of
    the object at `path` (which the error then describes)."""
    kind = "class" if isinstance(obj, type) else "function" if callable(obj) else "object"
    qualname = qualname or getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    module = getattr(obj, "__module__", None) or _which_module(obj, qualname)
    if not isinstance(qualname, str) or not isinstance(module, str):
        why = f"a {kind} without a module and name to import it by"
    elif qualname.rpartition(".")[2] == "<lambda>":
        why = "a lambda function, which has no name to import it by"
    elif "<locals>" in qualname:
        why = f"a {kind} defined in a local scope"
    elif _lookup(module, qualname) is not obj:
        why = f"a {kind} not found as {module}.{qualname}"
    else:
        return {"module": module, "qualname": qualname}
    if instance_of:
        why = f"an object of type {obj.__qualname__}, {why}"
    raise _refused(path, why)


def _which_module(obj, qualname):
    """The module that holds obj under qualname, for objects without __module__ (pickle's
    whichmodule: Ellipsis, NotImplemented, some C functions)."""
    if not isinstance(qualname, str):
        return None
    for name, module in list(sys.modules.items()):
        if module is not None and name != "__main__" and _lookup(name, qualname) is obj:
            return name
    return "__main__"


def _lookup(module, qualname):
    try:
        found = sys.modules.get(module) or importlib.import_module(module)
    except ImportError:
        return _MISSING
    for part in qualname.split("."):
        found = getattr(found, part, _MISSING)
    return found


def _is_bound_method(obj):
    if isinstance(obj, (types.MethodType, types.MethodWrapperType)):
        return True
    owner = getattr(obj, "__self__", None)    # builtin functions' __self__ is their module
    return isinstance(obj, types.BuiltinMethodType) and owner is not None and \
        not isinstance(owner, types.ModuleType)


def _refused(path, what):
    return TypeError(f"save: cannot store {_where(path)} ({what})")


def _where(path):
    return path if path else "the saved object"


def join_path(path, key):
    return f"{path}.{key}" if path else str(key)


# ---- load ---------------------------------------------------------------------------------------
class ObjectDecoding:
    """The decoder's object nodes (a mixin of _load._Decoder: self.decode, self._list,
    self.policy, an AllowList or an Importer, and self.objects, number → built object)."""

    def _global(self, node, depth):
        return self._resolve(node["$global"])

    def _ref(self, node, depth):
        number = node["$ref"]
        if not is_int(number) or number not in self.objects:
            fail(f"reference to an object {number!r} not built before it")
        return self.objects[number]

    def _object(self, node, depth):
        number = node["$object"]
        if not is_int(number) or number in self.objects:
            fail(f"object number {number!r} is not a new integer")
        if ("class" in node) == ("call" in node):
            fail("an object node needs exactly one of class and call")
        obj = self._construct(node, depth)
        self.objects[number] = obj        # before its contents, which may refer back to it
        if "items" in node:
            self._append(obj, self._list(node["items"], depth))
        if "dictitems" in node:
            self._set_items(obj, self._pairs(node["dictitems"]), depth)
        if "state" in node:
            state = self.decode(node["state"], depth + 1)
            self.policy.check_state(obj)
            self._set_state(obj, state)
        return obj

    def _construct(self, node, depth):
        """pickle's NEWOBJ (cls.__new__, never __init__) or REDUCE (the named callable)."""
        target = self._resolve(node.get("class") or node.get("call"))
        args = self._list(node.get("args", []), depth)
        if "call" in node:
            if "kwargs" in node:
                fail("a call node takes no kwargs")
            return carried(target, *args)
        kwargs = self.decode(node.get("kwargs", {"$dict": []}), depth + 1)
        if not isinstance(target, type):
            fail(f"{node['class']} is not a class")
        if not isinstance(kwargs, dict) or not all(isinstance(k, str) for k in kwargs):
            fail("an object's kwargs must be a dict with string keys")
        return carried(target.__new__, target, *args, **kwargs)

    def _resolve(self, reference):
        if not (isinstance(reference, dict) and set(reference) == {"module", "qualname"} and
                all(isinstance(v, str) and v for v in reference.values())):
            fail("a class or function reference must be {module, qualname} strings")
        return carried(self.policy.resolve, reference["module"], reference["qualname"])

    def _append(self, obj, items):
        """pickle's APPEND / APPENDS."""
        if not items:
            return
        self.policy.check_items(obj, len(items))
        if len(items) == 1:
            carried(lambda: obj.append(items[0]))
            return
        extend = carried(getattr, obj, "extend", None)
        if extend is not None:
            carried(extend, items)
        else:
            carried(lambda: [obj.append(item) for item in items])

    def _set_items(self, obj, pairs, depth):
        """pickle's SETITEM / SETITEMS."""
        items = [(self.decode(k, depth + 1), self.decode(v, depth + 1)) for k, v in pairs]
        if items:
            self.policy.check_dict_items(obj, len(items))
        for key, value in items:
            carried(obj.__setitem__, key, value)

    @staticmethod
    def _set_state(obj, state):
        """pickle's BUILD: __setstate__ when the class has one, else the state updates the
        __dict__ and, from a (dict, slots) pair, sets the slots."""
        setstate = carried(getattr, obj, "__setstate__", None)
        if setstate is not None:
            carried(setstate, state)
            return
        slots = None
        if isinstance(state, tuple) and len(state) == 2:
            state, slots = state
        if not (state is None or isinstance(state, dict)) or \
                not (slots is None or isinstance(slots, dict)):
            fail(f"invalid state for an object of type {type(obj).__name__}")
        if state:
            carried(lambda: obj.__dict__.update(state))
        for name, value in (slots or {}).items():
            carried(setattr, obj, name, value)

    def _set(self, node, depth):
        return set(self._list(node["$set"], depth))

    def _frozenset(self, node, depth):
        self._resolve({"module": "builtins", "qualname": "frozenset"})   # torch's rule for it
        return frozenset(self._list(node["$frozenset"], depth))
