"""Pytrees as torch.func and vmap take them: leaves (tensors, numbers, anything) inside nested
tuples (named ones too), lists and dicts."""


def leaves(tree):
    """The leaves of tree, in order (depth first, dicts in key order)."""
    if isinstance(tree, (tuple, list)):
        return [leaf for item in tree for leaf in leaves(item)]
    if isinstance(tree, dict):
        return [leaf for value in tree.values() for leaf in leaves(value)]
    return [tree]


def rebuild(tree, new_leaves):
    """tree's structure with its leaves replaced, in order, from the iterator `new_leaves`."""
    if isinstance(tree, (tuple, list)):
        items = [rebuild(item, new_leaves) for item in tree]
        if hasattr(tree, "_fields"):        # a namedtuple (torch.return_types.max, ...)
            return type(tree)(*items)
        return type(tree)(items)
    if isinstance(tree, dict):
        return {key: rebuild(value, new_leaves) for key, value in tree.items()}
    return next(new_leaves)


def tree_map(fn, tree):
    return rebuild(tree, iter([fn(leaf) for leaf in leaves(tree)]))


def structure(tree):
    """tree with every leaf shown as "*" (for messages, and to compare two trees' shapes)."""
    return tree_map(lambda leaf: "*", tree)
