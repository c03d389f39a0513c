"""minitorch.nn: Module and Parameter, containers, init and utils (torch.nn's layout).

Layers are re-exported here one line each (e.g. `from .linear import Linear`), next to the
containers below.
"""
from . import init, utils  # noqa: F401
from .containers import (ModuleDict, ModuleList, ParameterDict,  # noqa: F401
                         ParameterList, Sequential)
from .module import Buffer, Module, Parameter  # noqa: F401
