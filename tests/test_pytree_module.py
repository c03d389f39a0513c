"""torch.utils._pytree's API (tree_flatten / tree_unflatten / TreeSpec / tree_map /
register_pytree_node ...) against torch's where it is installed, and on its own."""
import collections

import pytest

from minitorch.utils import _pytree as ours

try:
    import torch.utils._pytree as theirs
except ImportError:
    theirs = None

NT = collections.namedtuple("NT", "x y")
TREES = [
    {"a": (1, [2, 3]), "b": None, "c": collections.OrderedDict(x=4)},
    NT(1, (2,)), (1, [2, (3, 4)], {"k": 5}), collections.deque([1, 2], maxlen=3),
    collections.defaultdict(int, {"k": 1}), [], (), 7, None, {"b": 1, "a": 2},
]


@pytest.mark.parametrize("tree", TREES, ids=repr)
def test_flatten_and_unflatten_round_trip(tree):
    leaves, spec = ours.tree_flatten(tree)
    assert ours.tree_unflatten(leaves, spec) == tree
    assert spec.num_leaves == len(leaves) == len(ours.tree_leaves(tree))
    rebuilt = ours.tree_unflatten([f"<{leaf}>" for leaf in leaves], spec)
    assert type(rebuilt) is (str if spec.is_leaf() else type(tree))
    if theirs is not None:
        their_leaves, their_spec = theirs.tree_flatten(tree)
        assert leaves == their_leaves
        assert repr(spec) == repr(their_spec)


def test_tree_map_and_friends():
    assert ours.tree_map(lambda a, b: a + b, (1, [2]), (10, [20])) == (11, [22])
    assert ours.tree_map_only(int, lambda a: a * 2, (1, "s", 2.5)) == (2, "s", 2.5)
    assert ours.tree_all(lambda x: x > 0, [1, 2]) and ours.tree_any(lambda x: x > 1, [1, 2])
    assert ours.tree_map(lambda x: x, [1, (2, 3)], is_leaf=lambda x: isinstance(x, tuple)) == \
        [1, (2, 3)]
    seen = []
    assert ours.tree_map_(seen.append, {"a": 1, "b": [2]}) == {"a": 1, "b": [2]}
    assert seen == [1, 2]
    assert ours.tree_structure((1, 2)) == ours.tree_structure((3, 4))
    assert ours.tree_structure((1, 2)) != ours.tree_structure([1, 2])
    assert ours.treespec_pprint(ours.tree_structure({"a": (1, 2)})) == "{'a': (*, *)}"


def test_errors():
    with pytest.raises(ValueError, match="Node arity mismatch; expected 2, but got 1."):
        ours.tree_map(lambda a, b: a, (1, 2), (1,))
    with pytest.raises(ValueError, match="`leaves` has length 1 but the spec refers to a "
                                         "pytree that holds 2 items"):
        ours.tree_unflatten([1], ours.tree_structure((1, 2)))


def test_registered_node():
    class Point:
        def __init__(self, a, b):
            self.a, self.b = a, b

    ours.register_pytree_node(Point, lambda p: ([p.a, p.b], None),
                              lambda values, ctx: Point(*values))
    try:
        assert ours.tree_leaves([Point(1, (2, 3))]) == [1, 2, 3]
        doubled = ours.tree_map(lambda v: v * 2, Point(1, 2))
        assert (doubled.a, doubled.b) == (2, 4)
        with pytest.raises(ValueError, match="already registered"):
            ours.register_pytree_node(Point, None, None)
    finally:
        del ours.SUPPORTED_NODES[Point]
