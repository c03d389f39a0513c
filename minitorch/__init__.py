"""minitorch: PyTorch's API over our own Cython (CPU) and CuPy (GPU) kernels.

    import minitorch as mt
"""
# tensor first: it binds the op modules (minitorch.functions) once Tensor exists.
from .tensor import (Size, Tensor, arange, as_tensor, empty, empty_like, eye, from_numpy, full,
                     full_like, is_tensor, linspace, logspace, numel, ones, ones_like, tensor,
                     zeros, zeros_like)
from . import autograd, cuda, dtypes as _dtypes
from ._cpu.threads import get_num_threads, set_num_threads
from .autograd import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from .backend import device
from .dtypes import get_default_dtype, promote_types, result_type as _result_type, \
    set_default_dtype
from .functions.elementwise import (abs, add, allclose, atan2, bitwise_and, bitwise_not,
                                    bitwise_or, bitwise_xor, ceil, clamp, cos, div, eq, equal,
                                    erf, exp, expm1, float_power, floor, floor_divide, fmax, fmin,
                                    fmod, ge, gt, isclose, isfinite, isinf, isnan, le, lerp, log,
                                    log1p, logical_and, logical_not, logical_or, logical_xor, lt,
                                    maximum, minimum, mul, ne, neg, pow, reciprocal, relu,
                                    remainder, round, rsqrt, sigmoid, sign, sin, sqrt, square, sub,
                                    tanh, true_divide, trunc, where)
from .functions.linalg import matmul
from .functions.movement import (broadcast_to, clone, contiguous, expand, flatten, permute,
                                 reshape, squeeze, t, transpose, unsqueeze, view)
from .functions.reduce import sum
from .printing import get_printoptions, set_printoptions
from .random import (Generator, bernoulli, default_generator, initial_seed, manual_seed,
                     multinomial, normal, rand, rand_like, randint, randint_like, randn,
                     randn_like, randperm, seed)

float32 = float = _dtypes.float32
float64 = double = _dtypes.float64
int64 = long = _dtypes.int64
bool = _dtypes.bool_
dtype = _dtypes.dtype
clip = clamp
multiply = mul
subtract = sub
divide = div
negative = neg
absolute = abs

__version__ = "0.1.0"
