"""minitorch: PyTorch's API over our own Cython (CPU) and CuPy (GPU) kernels.

    import minitorch as mt
"""
# tensor first: it binds the op modules (minitorch.functions) once Tensor exists.
from .tensor import (Size, Tensor, arange, as_tensor, empty, empty_like, eye, from_numpy, full,
                     full_like, is_tensor, linspace, logspace, numel, ones, ones_like, tensor,
                     zeros, zeros_like)
from . import autograd, cuda, datasets, dtypes as _dtypes, nn, optim, utils
from ._cpu.threads import get_num_threads, set_num_threads
from .autograd import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from .backend import device
from .dtypes import get_default_dtype, promote_types, set_default_dtype
from .functions.elementwise import *  # noqa: F401,F403  (each module's __all__)
from .functions.index import *  # noqa: F401,F403
from .functions.linalg import *  # noqa: F401,F403
from .functions.movement import *  # noqa: F401,F403
from .functions.reduce import *  # noqa: F401,F403
from .functions.sort import *  # noqa: F401,F403
from .functions.stats import *  # noqa: F401,F403
from .printing import get_printoptions, set_printoptions
from .serialization import load, save
from .random import (Generator, bernoulli, default_generator, initial_seed, manual_seed,
                     multinomial, normal, rand, rand_like, randint, randint_like, randn,
                     randn_like, randperm, seed)

float32 = float = _dtypes.float32
float64 = double = _dtypes.float64
int64 = long = _dtypes.int64
uint8 = _dtypes.uint8
bool = _dtypes.bool_
dtype = _dtypes.dtype

__version__ = "0.1.0"
