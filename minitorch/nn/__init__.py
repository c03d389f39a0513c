"""minitorch.nn: Module and Parameter, containers, layers, functional, init and utils (torch.nn's
layout). Each layer module's classes are re-exported here, one import line per module.
"""
from . import functional, init, utils  # noqa: F401
from .activation import (ELU, GELU, Hardtanh, LeakyReLU, LogSigmoid,  # noqa: F401
                         LogSoftmax, MultiheadAttention, ReLU, ReLU6, Sigmoid, SiLU, Softmax,
                         Softplus, Tanh)
from .containers import (ModuleDict, ModuleList, ParameterDict,  # noqa: F401
                         ParameterList, Sequential)
from .conv import Conv1d, Conv2d, ConvTranspose2d  # noqa: F401
from .dropout import Dropout  # noqa: F401
from .linear import Flatten, Identity, Linear, Unflatten  # noqa: F401
from .loss import (BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, HuberLoss,  # noqa: F401
                   KLDivLoss, L1Loss, MSELoss, NLLLoss, SmoothL1Loss)
from .module import Buffer, Module, Parameter  # noqa: F401
from .normalization import BatchNorm1d, BatchNorm2d, GroupNorm, LayerNorm  # noqa: F401
from .pooling import AdaptiveAvgPool2d, AvgPool2d, MaxPool2d  # noqa: F401
from .sparse import Embedding  # noqa: F401
