"""List minitorch's public callables without a docstring (issue 16, item 7). Run from a checkout."""
import collections
import inspect
import os
import sys

# This checkout, not an installed minitorch: run as a script, sys.path[0] is bench/.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import minitorch as mt  # noqa: E402

NAMESPACES = [(mt, "mt."), (mt.nn, "nn."), (mt.nn.functional, "F."), (mt.optim, "optim."),
              (mt.linalg, "linalg."), (mt.special, "special."), (mt.utils.data, "data."),
              (mt.distributions, "distributions."), (mt.nn.init, "init."), (mt.func, "func."),
              (mt.autograd, "autograd."), (mt.cuda, "cuda."), (mt.testing, "testing."),
              (mt.distributed, "dist.")]


def undocumented():
    missing, total = collections.defaultdict(list), 0
    for ns, prefix in NAMESPACES:
        names = getattr(ns, "__all__", None) or [n for n in dir(ns) if not n.startswith("_")]
        for name in names:
            obj = getattr(ns, name, None)
            if obj is None or inspect.ismodule(obj) or not callable(obj):
                continue
            total += 1
            doc = obj.__doc__
            if inspect.isclass(obj) and doc and any(doc == getattr(b, "__doc__", None)
                                                    for b in obj.__mro__[1:]):
                doc = None      # inherited, not its own
            if not doc or not doc.strip():
                missing[getattr(obj, "__module__", None) or "?"].append(prefix + name)
    return missing, total


if __name__ == "__main__":
    missing, total = undocumented()
    n = sum(map(len, missing.values()))
    print(f"{n} of {total} public callables have no docstring of their own")
    for module, names in sorted(missing.items(), key=lambda kv: -len(kv[1])):
        print(f"{len(names):4d} {module}: {' '.join(names)}")
