"""The import graph goes one way: dtypes/opcodes -> backend -> ndarray -> autograd -> tensor ->
functions -> tensor_methods -> everything else (nn, optim, data, the namespaces).

Every import in minitorch/ is parsed, including those inside functions (a lazy import is still
a dependency); only `if TYPE_CHECKING:` blocks are skipped, since they never run. The circles
kept on purpose inside functions/ (families whose backwards call each other) are named below.
"""
import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1] / "minitorch"

# (layer name, module prefixes); a module belongs to the first layer one of whose prefixes it
# starts with (a prefix matches a package's modules too; one ending in "$" matches only itself).
# Unlisted modules are the top: autograd's functional, gradcheck and variable sit above Tensor.
LAYERS = [
    ("dtypes and opcodes", ["minitorch.dtypes", "minitorch.opcodes", "minitorch.settings",
                            "minitorch._user_frames",
                            "minitorch.strides"]),
    ("backend and kernels", ["minitorch.backend", "minitorch._cpu", "minitorch._gpu",
                             "minitorch._meta"]),
    ("ndarray", ["minitorch.ndarray", "minitorch.printing"]),
    ("autograd engine", ["minitorch.autograd$", "minitorch.autograd.engine",
                         "minitorch.autograd.function", "minitorch.autograd.graph",
                         "minitorch.autograd.grad_mode", "minitorch.autograd.anomaly_mode"]),
    ("tensor", ["minitorch.tensor"]),
    ("functions", ["minitorch.functions", "minitorch.random"]),
    ("method binding", ["minitorch.tensor_methods"]),
]
TOP = len(LAYERS)

# The core (everything up to tensor, and the core op families) never imports breadth.
CORE_FUNCTIONS = ["minitorch.functions.elementwise", "minitorch.functions.reduce",
                  "minitorch.functions.movement", "minitorch.functions.index",
                  "minitorch.functions.indexing", "minitorch.functions.linalg",
                  "minitorch.functions.compare", "minitorch.functions.joining",
                  "minitorch.functions.inplace", "minitorch.functions.operators"]
BREADTH = ["minitorch.functions.factor", "minitorch.functions.spectral",
           "minitorch.functions.special_functions", "minitorch.functions.float_math",
           "minitorch.functions.sort", "minitorch.functions.stats", "minitorch.distributions",
           "minitorch.special", "minitorch.linalg", "minitorch.nn", "minitorch.optim",
           "minitorch.utils", "minitorch.datasets"]

# Circles kept on purpose: the backward of each op family is written with the others' ops
# (a broadcast add's backward sums, a sum's backward expands, an expand's backward sums, an
# index's backward scatters with zeros and adds), so these modules import each other.
ALLOWED_CIRCLES = [
    {"minitorch.functions.elementwise", "minitorch.functions.reduce",
     "minitorch.functions.movement", "minitorch.functions.index",
     "minitorch.functions.indexing", "minitorch.functions.joining",
     "minitorch.functions.linalg"},
]


def _module_name(path):
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _is_module(name):
    base = ROOT.parent / name.replace(".", "/")
    return base.with_suffix(".py").exists() or (base / "__init__.py").exists() or any(
        base.parent.glob(base.name + ".*.so")) or base.with_suffix(".pyx").exists()


def _type_checking_nodes(tree):
    skipped = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                skipped.update(id(n) for n in ast.walk(child))
    return skipped


def _imports(path):
    """(imported module, line) for every minitorch import in the file at `path`."""
    name, is_package = _module_name(path), path.name == "__init__.py"
    tree = ast.parse(path.read_text())
    skipped = _type_checking_nodes(tree)
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("minitorch"):
                    yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("minitorch"):
                continue
            for alias in node.names:
                submodule = f"{target}.{alias.name}"
                yield (submodule if _is_module(submodule) else target), node.lineno


def _graph():
    edges = {}
    for path in sorted(ROOT.rglob("*.py")):
        if path.name == "__init__.py" and path.parent == ROOT:
            continue        # the package's front door imports everything, on purpose
        source = _module_name(path)
        for target, line in _imports(path):
            if target != "minitorch" and target != source:
                edges.setdefault(source, {}).setdefault(target, line)
    return edges


def _matches(module, prefixes):
    return any(module == p.rstrip("$") or (not p.endswith("$") and module.startswith(p + "."))
               for p in prefixes)


def _layer(module):
    for rank, (_, prefixes) in enumerate(LAYERS):
        if _matches(module, prefixes):
            return rank
    return TOP


def _layer_name(rank):
    return LAYERS[rank][0] if rank < TOP else "top"


GRAPH = _graph()


def test_the_graph_was_read():
    assert "minitorch.tensor" in GRAPH and "minitorch.functions.elementwise" in GRAPH
    assert GRAPH["minitorch.tensor"].keys() >= {"minitorch.autograd", "minitorch.ndarray"}


def test_no_upward_import():
    upward = [f"{source} ({_layer_name(_layer(source))}) imports {target} "
              f"({_layer_name(_layer(target))}) at line {line}"
              for source, targets in GRAPH.items() for target, line in targets.items()
              if _layer(target) > _layer(source)]
    assert upward == []


def test_the_core_never_imports_breadth():
    core = [m for m in GRAPH if _layer(m) < _layer("minitorch.functions") or
            _matches(m, CORE_FUNCTIONS)]
    found = [f"{m} imports {t} at line {line}" for m in core
             for t, line in GRAPH[m].items() if _matches(t, BREADTH)]
    assert found == []


def _circles(nodes):
    """Strongly connected components of more than one module (Tarjan, iterative enough for
    a graph this small)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in GRAPH.get(v, {}):
            if w not in nodes:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(component)

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return found


@pytest.mark.parametrize("rank", range(TOP))
def test_no_circle_inside_a_layer_except_the_named_ones(rank):
    nodes = {m for m in set(GRAPH) | {t for ts in GRAPH.values() for t in ts}
             if _layer(m) == rank}
    for circle in _circles(nodes):
        assert circle in ALLOWED_CIRCLES, f"import circle in the {_layer_name(rank)} layer: " \
                                          f"{sorted(circle)}"


def test_the_named_circles_still_exist():
    """An allowed circle that disappeared should leave this list too."""
    modules = {m for m in GRAPH if _layer(m) == _layer("minitorch.functions")}
    found = _circles(modules)
    for circle in ALLOWED_CIRCLES:
        assert circle in found, f"no longer a circle: {sorted(circle)}"


def _subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def test_library_ops_are_kernel_functions_and_live_in_functions():
    """Every Function minitorch defines in functions/ says it is a library op by its base class
    (KernelFunction: forward on NDArrays, called without switching grad mode), and only those
    do; the Functions elsewhere (hooks, checkpointing) are in the user's position on purpose."""
    import minitorch  # noqa: F401  (imports every module that defines a Function)
    from minitorch.autograd import Function, KernelFunction
    ours = [c for c in _subclasses(Function) if c.__module__.startswith("minitorch.")]
    assert ours, "no Function found"
    misplaced = [f"{c.__module__}.{c.__qualname__}" for c in ours
                 if c.__module__.startswith("minitorch.functions.") !=
                 issubclass(c, KernelFunction) and c is not KernelFunction]
    assert misplaced == []
