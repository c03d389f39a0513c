"""Gives einops our backend whenever einops is loaded, before or after minitorch, without
importing einops ourselves.

einops finds a framework's backend as a subclass of its `AbstractBackend` (minitorch/_einops.py
defines ours); defining that class needs einops. If einops is already loaded, `install` imports
_einops at once; otherwise it puts a finder on sys.meta_path that waits for the first
`import einops`, lets the normal finders load it, and imports _einops right after einops'
package has run. The finder answers for the name "einops" only, once, and then removes itself.
"""
import importlib.abc
import importlib.util
import sys


class _EinopsWatcher(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name != "einops":
            return None
        _remove_watcher()
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        load = spec.loader.exec_module

        def exec_module(module):
            load(module)
            from . import _einops  # noqa: F401  (einops is in sys.modules now)
        spec.loader.exec_module = exec_module
        return spec


_WATCHER = _EinopsWatcher()


def _remove_watcher():
    if _WATCHER in sys.meta_path:
        sys.meta_path.remove(_WATCHER)


def install():
    """Register our einops backend now (einops loaded) or on einops' first import."""
    if "einops" in sys.modules:
        from . import _einops  # noqa: F401
    elif _WATCHER not in sys.meta_path:
        sys.meta_path.insert(0, _WATCHER)
