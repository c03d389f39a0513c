"""torch.utils._pytree: nested containers (tuple, list, dict, namedtuple, OrderedDict,
defaultdict, deque, and registered classes) flattened into their leaves and a TreeSpec that
rebuilds them. None is a leaf, as in torch 2.13. (minitorch's own transforms use the smaller
minitorch/_pytree.py.)"""
import collections
from collections import OrderedDict, defaultdict, deque, namedtuple

__all__ = ["TreeSpec", "LeafSpec", "register_pytree_node", "tree_flatten", "tree_unflatten",
           "tree_leaves", "tree_structure", "tree_iter", "tree_map", "tree_map_",
           "tree_map_only", "tree_map_only_", "tree_all", "tree_any", "tree_all_only",
           "tree_any_only", "tree_is_leaf", "is_namedtuple", "is_namedtuple_instance",
           "treespec_pprint", "SUPPORTED_NODES"]

NodeDef = collections.namedtuple("NodeDef", "type flatten_fn unflatten_fn")
SUPPORTED_NODES = {}


def register_pytree_node(cls, flatten_fn, unflatten_fn, *, serialized_type_name=None,
                         to_dumpable_context=None, from_dumpable_context=None,
                         flatten_with_keys_fn=None):
    """cls becomes a node: flatten_fn(obj) -> (children, context), unflatten_fn(children,
    context) -> obj. The serialization arguments are accepted (minitorch does not serialize
    specs)."""
    if cls in SUPPORTED_NODES:
        raise ValueError(f"{cls} is already registered as pytree node.")
    SUPPORTED_NODES[cls] = NodeDef(cls, flatten_fn, unflatten_fn)


def is_namedtuple_class(cls):
    return isinstance(cls, type) and issubclass(cls, tuple) and isinstance(
        getattr(cls, "_fields", None), tuple)


def is_namedtuple(obj):
    """An instance or class of collections.namedtuple / typing.NamedTuple."""
    return is_namedtuple_class(obj if isinstance(obj, type) else type(obj))


def is_namedtuple_instance(obj):
    return is_namedtuple_class(type(obj))


register_pytree_node(tuple, lambda t: (list(t), None), lambda values, _: tuple(values))
register_pytree_node(list, lambda t: (list(t), None), lambda values, _: list(values))
register_pytree_node(dict, lambda d: (list(d.values()), list(d.keys())),
                     lambda values, keys: dict(zip(keys, values)))
register_pytree_node(OrderedDict, lambda d: (list(d.values()), list(d.keys())),
                     lambda values, keys: OrderedDict(zip(keys, values)))
register_pytree_node(defaultdict,
                     lambda d: (list(d.values()), [d.default_factory, list(d.keys())]),
                     lambda values, ctx: defaultdict(ctx[0], zip(ctx[1], values)))
register_pytree_node(deque, lambda d: (list(d), d.maxlen),
                     lambda values, maxlen: deque(values, maxlen=maxlen))
register_pytree_node(namedtuple, lambda t: (list(t), type(t)),
                     lambda values, cls: cls(*values))


def _node_type(tree):
    """The registered node type of tree, or None for a leaf."""
    kind = type(tree)
    if kind in SUPPORTED_NODES and kind is not namedtuple:
        return kind
    if is_namedtuple_class(kind):
        return namedtuple
    return None


def tree_is_leaf(tree, is_leaf=None):
    return (is_leaf is not None and is_leaf(tree)) or _node_type(tree) is None


class TreeSpec:
    """A pytree's structure: the node's type, its context (dict keys, a namedtuple's class,
    ...) and one spec per child; a leaf is LeafSpec."""

    def __init__(self, type, context, children_specs):
        self.type = type
        self.context = context
        self.children_specs = list(children_specs)
        self.num_leaves = sum(child.num_leaves for child in self.children_specs)
        self.num_nodes = 1 + sum(child.num_nodes for child in self.children_specs)

    @property
    def num_children(self):
        return len(self.children_specs)

    def is_leaf(self):
        return False

    def children(self):
        return list(self.children_specs)

    def child(self, index):
        return self.children_specs[index]

    def unflatten(self, leaves):
        leaves = list(leaves)
        if len(leaves) != self.num_leaves:
            raise ValueError(f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} "
                             f"but the spec refers to a pytree that holds {self.num_leaves} "
                             f"items ({self}).")
        return self._build(iter(leaves))

    def _build(self, leaves):
        children = [child._build(leaves) for child in self.children_specs]
        return SUPPORTED_NODES[self.type].unflatten_fn(children, self.context)

    def __eq__(self, other):
        return isinstance(other, TreeSpec) and not other.is_leaf() and (
            self.type, self.context, self.children_specs) == (
            other.type, other.context, other.children_specs)

    def __hash__(self):
        return hash((self.type, repr(self.context), tuple(self.children_specs)))

    def __repr__(self, indent=0):
        """torch's layout: children after the first each on a line, indented by depth."""
        name = self.type.__name__
        text = ""
        if self.children_specs:
            indent += 2
            text = self.children_specs[0].__repr__(indent)
            text += "," if len(self.children_specs) > 1 else ""
            text += ",".join("\n" + " " * indent + child.__repr__(indent)
                             for child in self.children_specs[1:])
        return f"TreeSpec({name}, {self.context}, [{text}])"


class LeafSpec(TreeSpec):
    """The spec of one leaf (shown as *)."""

    def __init__(self):
        super().__init__(None, None, [])
        self.num_leaves, self.num_nodes = 1, 1

    def is_leaf(self):
        return True

    def _build(self, leaves):
        return next(leaves)

    def __eq__(self, other):
        return isinstance(other, LeafSpec)

    def __hash__(self):
        return hash(LeafSpec)

    def __repr__(self, indent=0):
        return "*"


def _flatten(tree, leaves, is_leaf):
    if tree_is_leaf(tree, is_leaf):
        leaves.append(tree)
        return LeafSpec()
    kind = _node_type(tree)
    children, context = SUPPORTED_NODES[kind].flatten_fn(tree)
    return TreeSpec(kind, context, [_flatten(child, leaves, is_leaf) for child in children])


def tree_flatten(tree, is_leaf=None):
    """(leaves, spec): the leaves depth first (dicts in insertion order)."""
    leaves = []
    spec = _flatten(tree, leaves, is_leaf)
    return leaves, spec


def tree_unflatten(leaves, treespec):
    if not isinstance(treespec, TreeSpec):
        raise TypeError(f"tree_unflatten(leaves, treespec): Expected `treespec` to be instance "
                        f"of TreeSpec but got item of type {type(treespec)}.")
    return treespec.unflatten(leaves)


def tree_leaves(tree, is_leaf=None):
    return tree_flatten(tree, is_leaf)[0]


def tree_iter(tree, is_leaf=None):
    yield from tree_leaves(tree, is_leaf)


def tree_structure(tree, is_leaf=None):
    return tree_flatten(tree, is_leaf)[1]


def _flatten_up_to(spec, tree):
    """tree's subtrees at spec's leaves (the other trees of a tree_map), with torch's arity and
    type errors."""
    if spec.is_leaf():
        return [tree]
    kind = _node_type(tree)
    if kind is not spec.type:
        raise ValueError(f"Node type mismatch; expected {spec.type}, but got {type(tree)}.")
    children, context = SUPPORTED_NODES[kind].flatten_fn(tree)
    if len(children) != spec.num_children:
        raise ValueError(f"Node arity mismatch; expected {spec.num_children}, but got "
                         f"{len(children)}.")
    if context != spec.context:
        raise ValueError(f"Node context mismatch for custom node type {kind}.")
    return [leaf for child, child_spec in zip(children, spec.children_specs)
            for leaf in _flatten_up_to(child_spec, child)]


def tree_map(func, tree, *rests, is_leaf=None):
    """func applied leafwise over tree (and the matching leaves of rests), in tree's
    structure."""
    leaves, spec = tree_flatten(tree, is_leaf)
    others = [_flatten_up_to(spec, rest) for rest in rests]
    return spec.unflatten(func(*values) for values in zip(leaves, *others))


def tree_map_(func, tree, *rests, is_leaf=None):
    """func called leafwise for its effect; returns tree."""
    leaves, spec = tree_flatten(tree, is_leaf)
    others = [_flatten_up_to(spec, rest) for rest in rests]
    for values in zip(leaves, *others):
        func(*values)
    return tree


def _only(types, func):
    return lambda leaf: func(leaf) if isinstance(leaf, types) else leaf


def tree_map_only(type_or_types, func, tree, is_leaf=None):
    """func applied to the leaves of the given type(s); other leaves kept."""
    return tree_map(_only(type_or_types, func), tree, is_leaf=is_leaf)


def tree_map_only_(type_or_types, func, tree, is_leaf=None):
    return tree_map_(_only(type_or_types, func), tree, is_leaf=is_leaf)


def tree_all(pred, tree, is_leaf=None):
    return all(pred(leaf) for leaf in tree_leaves(tree, is_leaf))


def tree_any(pred, tree, is_leaf=None):
    return any(pred(leaf) for leaf in tree_leaves(tree, is_leaf))


def tree_all_only(type_or_types, pred, tree, is_leaf=None):
    return all(pred(leaf) for leaf in tree_leaves(tree, is_leaf)
               if isinstance(leaf, type_or_types))


def tree_any_only(type_or_types, pred, tree, is_leaf=None):
    return any(pred(leaf) for leaf in tree_leaves(tree, is_leaf)
               if isinstance(leaf, type_or_types))


def treespec_pprint(treespec):
    """The structure with leaves as * (torch's tree_map of "*" over a dummy tree)."""
    return repr(treespec.unflatten(_Star() for _ in range(treespec.num_leaves)))


class _Star:
    def __repr__(self):
        return "*"
