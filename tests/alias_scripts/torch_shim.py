"""`import torch` -> minitorch, for running PyTorch scripts unchanged (copied by
tests/test_script_alias.py into a temporary directory as torch.py).

Every loaded minitorch submodule is registered under its torch name, and a finder maps later
`import torch.X` to minitorch.X, so each module exists once (torch.nn is minitorch.nn)."""
import importlib
import importlib.abc
import importlib.util
import sys

import minitorch


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """torch.X -> the module minitorch.X (imported on demand), with its own spec kept."""

    def find_spec(self, name, path, target=None):
        if name.startswith("torch.") and importlib.util.find_spec("minitorch" + name[5:]):
            return importlib.util.spec_from_loader(name, self)
        return None

    def create_module(self, spec):
        module = importlib.import_module("minitorch" + spec.name[5:])
        self.spec = module.__spec__
        return module

    def exec_module(self, module):
        module.__spec__ = self.spec     # the import machinery set the alias's spec on it


for _name, _module in list(sys.modules.items()):
    if _name.startswith("minitorch."):
        sys.modules["torch" + _name[len("minitorch"):]] = _module
sys.meta_path.insert(0, _Alias())
sys.modules[__name__] = minitorch
