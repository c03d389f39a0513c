"""minitorch: PyTorch's API over our own Cython (CPU) and CuPy (GPU) kernels.

    import minitorch as mt
"""
import sys as _sys
from math import e, inf, nan, pi  # torch.pi, torch.e, torch.inf, torch.nan

from .tensor import (BFloat16Tensor, BoolTensor, ByteTensor, CharTensor, DoubleTensor,
                     FloatTensor, HalfTensor, IntTensor, LongTensor, ShortTensor, Size, Tensor,
                     arange, as_tensor, asarray, empty, empty_like, empty_strided, eye,
                     from_numpy, full, full_like, inclusive_range as range, is_complex,
                     is_floating_point, is_nonzero, is_same_size, is_signed, is_tensor, linspace,
                     logspace, numel, ones, ones_like, scalar_tensor, tensor, zeros, zeros_like)
from . import tensor_methods as _tensor_methods

_tensor_methods.install()    # every op as a Tensor method, before any module below uses them

from . import autograd, cuda, datasets, dtypes as _dtypes, linalg, nn, optim, special, utils
from . import fft
from . import distributions, func, testing
from .autograd import functional as _autograd_functional, gradcheck as _autograd_gradcheck
from .autograd import variable as _autograd_variable
from . import distributed  # mt.distributed: loads no engine until init_process_group
from . import multiprocessing  # torch.multiprocessing; registers the tensor reducers
from . import accelerator, backends, jit, onnx, profiler, serialization, sparse, types, xpu
from . import amp
from . import compiler, cpu, futures, hub, signal
from .cuda import OutOfMemoryError
from .amp.autocast_mode import (autocast, clear_autocast_cache, get_autocast_dtype,
                                is_autocast_available, is_autocast_enabled,
                                set_autocast_dtype, set_autocast_enabled)
from .backends._deterministic import (are_deterministic_algorithms_enabled,
                                      is_deterministic_algorithms_warn_only_enabled,
                                      use_deterministic_algorithms)
from ._cpu.threads import get_num_threads, set_num_threads
from .autograd import (enable_grad, inference_mode, is_anomaly_check_nan_enabled,
                       is_anomaly_enabled, is_grad_enabled, is_inference_mode_enabled, no_grad,
                       set_grad_enabled)
from .autograd import set_detect_anomaly as set_anomaly_enabled
from .backend import device, get_default_device, set_default_device
from .dtypes import can_cast, finfo, get_default_dtype, iinfo, promote_types, set_default_dtype
from .functions.elementwise import *  # noqa: F401,F403  (each module's __all__)
from .functions.compare import *  # noqa: F401,F403
from .functions.float_math import *  # noqa: F401,F403
from .functions.special_functions import *  # noqa: F401,F403
from .functions.factor import *  # noqa: F401,F403
from .functions.index import *  # noqa: F401,F403
from .functions.indexing import *  # noqa: F401,F403
from .functions.linalg import *  # noqa: F401,F403
from .functions.movement import *  # noqa: F401,F403
from .functions.joining import *  # noqa: F401,F403
from .functions.norms import *  # noqa: F401,F403
from .functions.reduce import *  # noqa: F401,F403
from .functions.sort import *  # noqa: F401,F403
from .functions.spectral import *  # noqa: F401,F403
from .functions.signal import *  # noqa: F401,F403
from .functions.stft import *  # noqa: F401,F403
from .functions.spellings import *  # noqa: F401,F403
from .functions.stats import *  # noqa: F401,F403
from .functions.complex import *  # noqa: F401,F403  (after float_math: angle, sgn, isreal)
from .functions.interop import from_dlpack
from .functions.factories import *  # noqa: F401,F403  (frombuffer, empty_permuted)
from .functions.frexp import frexp
from .functions.numerical_gradient import gradient
from .functions.view_copies import *  # noqa: F401,F403  (expand_copy, t_copy, …)
from ._process_settings import *  # noqa: F401,F403  (interop threads, warn_always, …)
from .functions.sparse_coo import sparse_coo_tensor, sparse_mm as spmm
from .nn.toplevel import NAMES as _NN_NAMES
from .printing import get_printoptions, set_printoptions
from .serialization import load, save
from .settings import compile, get_float32_matmul_precision, set_float32_matmul_precision
from .vmap import vmap
from .random import (Generator, bernoulli, binomial, default_generator, get_rng_state,
                     initial_seed, manual_seed, multinomial, normal, poisson, rand, rand_like,
                     randint, randint_like, randn, randn_like, randperm, seed, set_rng_state)

float32 = float = _dtypes.float32
float64 = double = _dtypes.float64
float16 = half = _dtypes.float16
bfloat16 = _dtypes.bfloat16
int64 = long = _dtypes.int64
int32 = int = _dtypes.int32
int16 = short = _dtypes.int16
int8 = _dtypes.int8
uint8 = _dtypes.uint8
bool = _dtypes.bool_
complex64 = cfloat = _dtypes.complex64
complex128 = cdouble = _dtypes.complex128
dtype = _dtypes.dtype
newaxis = None
from .tensor import layout, sparse_coo, strided  # noqa: E402

globals().update(_NN_NAMES)       # torch.conv2d, torch.dropout, … (nn/toplevel.py)
# torch.autograd's namespace: the engine (autograd/engine.py) sits below Tensor, these above it
autograd.gradcheck = _autograd_gradcheck.gradcheck
autograd.gradgradcheck = _autograd_gradcheck.gradgradcheck
autograd.GradcheckError = _autograd_gradcheck.GradcheckError
autograd.Variable = _autograd_variable.Variable
__version__ = "0.1.0"

from . import _einops_hook    # einops, whenever it is loaded, finds our backend (_einops.py)
_einops_hook.install()
